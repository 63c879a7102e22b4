#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor-trainer and bad input (issue 14): a --save or --checkpoint
# destination that cannot be written stops the run before it trains;
# --resume without --load and --samples beyond the data are errors; plan
# -o X.ttb writes a bundle, -o X.bin is refused; a stored plan refused for
# another batch names --replan; a BIN with a negative adam second moment
# is refused naming the tensor; a gzip file cut before its trailer, a
# bundle with a damaged magic, binary data, repeated and misspelt keys are
# named as what they are; a byte-order mark is accepted.
#
# usage: test_cli_reliability.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-cli-reliability-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")
model=$src/tests/models/fmnist_mlp.ini

# 48 random 28x28 images and labels 0..9, as IDX files
random_mnist_idx "$tmp" 48
data=(--data "$tmp/images.idx" --labels "$tmp/labels.idx" --batch 8)

# fails_with OUT PATTERN COMMAND...: the command fails, its output matches
fails_with () {
  local out=$1 pattern=$2; shift 2
  if "$@" > "$out" 2>&1; then echo "  (succeeded)"; return 1; fi
  grep -q -- "$pattern" "$out" || { echo "  got: $(cat "$out")"; return 1; }
}
trained () { grep -q '^epoch=' "$1"; }

# item 2: the destination, before training
check "--save into a missing folder" fails_with "$tmp/s1.log" \
  'nonexistent/dir: No such file' "$cli" train "$model" "${data[@]}" \
  --epochs 1 --save "$tmp/nonexistent/dir/m.ttb"
check "... refused before training" sh -c "! grep -q '^epoch=' '$tmp/s1.log'"
check "--save X.ini" fails_with "$tmp/s2.log" 'x.ini: a model saves as' \
  "$cli" train "$model" "${data[@]}" --epochs 1 --save "$tmp/x.ini"
check "... refused before training" sh -c "! grep -q '^epoch=' '$tmp/s2.log'"
check "... and writes nothing" test ! -e "$tmp/x.ini"
check "--save X.ini --compress" fails_with "$tmp/s3.log" 'x.ini' \
  "$cli" train "$model" "${data[@]}" --epochs 1 --save "$tmp/x.ini" --compress
check "--save a folder" fails_with "$tmp/s4.log" 'is a folder' \
  "$cli" train "$model" "${data[@]}" --epochs 1 --save "$tmp"
check "--checkpoint into a missing folder" fails_with "$tmp/s5.log" \
  'cannot save there' "$cli" train "$model" "${data[@]}" --epochs 1 \
  --checkpoint "$tmp/nope/c.ttb"
check "... refused before training" sh -c "! grep -q '^epoch=' '$tmp/s5.log'"
check "a good --save still trains and saves" sh -c "'$cli' train '$model' \
  --data '$tmp/images.idx' --labels '$tmp/labels.idx' --batch 8 --epochs 1 \
  --save '$tmp/m.bin' | grep -q '^# saved' && test -s '$tmp/m.bin'"
check "... leaving no temporary" sh -c "! ls '$tmp' | grep -q 'tmp-'"

# item 8: options that did less than they said
check "--resume without --load" fails_with "$tmp/r.log" 'give --load' \
  "$cli" train "$model" "${data[@]}" --epochs 1 --resume
check "--samples beyond the data" fails_with "$tmp/n.log" \
  '--samples 100: .*images.idx holds only 48 samples' "$cli" train "$model" \
  "${data[@]}" --epochs 1 --samples 100
check "--valid-samples beyond the data" fails_with "$tmp/vn.log" \
  '--valid-samples 49: .* holds only 48' "$cli" train "$model" "${data[@]}" \
  --epochs 1 --valid-data "$tmp/images.idx" --valid-labels "$tmp/labels.idx" \
  --valid-samples 49
check "--samples within the data" sh -c "'$cli' train '$model' --data \
  '$tmp/images.idx' --labels '$tmp/labels.idx' --batch 8 --epochs 1 \
  --samples 16 | grep -q '^# model=.* samples=16 '"
check "plan -o X.ttb" sh -c "'$cli' plan '$model' --batch 8 -o \
  '$tmp/p.ttb' | grep -q 'bundle'"
check "... is a bundle with its plan" sh -c "'$cli' check '$tmp/p.ttb' | \
  grep -q 'plan valid'"
check "... that trains" sh -c "'$cli' train '$tmp/p.ttb' --data \
  '$tmp/images.idx' --labels '$tmp/labels.idx' --epochs 1 | \
  grep -q '^epoch=1/1'"
check "plan -o X.bin" fails_with "$tmp/pb.log" 'cannot hold a plan' \
  "$cli" plan "$model" -o "$tmp/p.bin"
check "... writes nothing" test ! -e "$tmp/p.bin"

# item 6: eval --batch on a stored plan names --replan
"$cli" plan "$model" --batch 8 -o "$tmp/p.opt.ini" > /dev/null
check "eval --batch 1 on a stored plan" fails_with "$tmp/e1.log" \
  'pass --replan' "$cli" eval "$tmp/p.opt.ini" --weights "$tmp/m.bin" \
  --data "$tmp/images.idx" --labels "$tmp/labels.idx" --batch 1
check "eval --batch 1 on a bundle's plan" fails_with "$tmp/e2.log" \
  'pass --replan' "$cli" eval "$tmp/p.ttb" --data "$tmp/images.idx" \
  --labels "$tmp/labels.idx" --batch 1
check "... and --replan runs it" sh -c "'$cli' eval '$tmp/p.opt.ini' \
  --weights '$tmp/m.bin' --data '$tmp/images.idx' --labels \
  '$tmp/labels.idx' --batch 1 --replan | grep -q '^eval samples=48'"

# item 3: a negative second moment in a BIN (fmnist_mlp: 235146 weight
# floats, then "adam", then hidden's weight's m (200704 floats), then its v)
v_at=$(( 235146 * 4 + 4 + 200704 * 4 ))
cp "$tmp/m.bin" "$tmp/neg.bin"
printf '\x00\x00\x80\xbf' | dd of="$tmp/neg.bin" bs=1 seek=$((v_at + 8)) \
  conv=notrunc 2>/dev/null
check "--load with a negative adam second moment" fails_with "$tmp/neg.log" \
  'neg.bin: tensor .* holds a negative adam second moment (-1) at element 2' \
  "$cli" train "$model" "${data[@]}" --epochs 1 --load "$tmp/neg.bin" \
  --save "$tmp/after.bin"
check "... and nothing saved" test ! -e "$tmp/after.bin"

# item 6: messages that say what is wrong
gzip -c "$tmp/images.idx" > "$tmp/full.gz"
head -c $(( $(stat -c %s "$tmp/full.gz") - 8 )) "$tmp/full.gz" > "$tmp/cut.gz"
check "a gzip file without its trailer" fails_with "$tmp/gz.log" \
  'cut.gz: truncated gzip file' "$cli" train "$model" --data "$tmp/cut.gz" \
  --labels "$tmp/labels.idx" --epochs 1
check "the whole gzip file trains" sh -c "'$cli' train '$model' --data \
  '$tmp/full.gz' --labels '$tmp/labels.idx' --batch 8 --epochs 1 | \
  grep -q '^epoch=1/1'"
cp "$tmp/p.ttb" "$tmp/hit.ttb"
printf 'X' | dd of="$tmp/hit.ttb" bs=1 seek=0 conv=notrunc 2>/dev/null
check "a bundle with a damaged magic" fails_with "$tmp/hit.log" \
  'hit.ttb: starts like a tensor-trainer bundle but its header is damaged' \
  "$cli" info "$tmp/hit.ttb"
head -c 2000 "$tmp/m.bin" > "$tmp/weights.ini"
check "binary data as a model" fails_with "$tmp/bin.log" \
  'weights.ini: binary data, not INI text: byte 0x.. at offset' \
  "$cli" info "$tmp/weights.ini"
{ printf '\xef\xbb\xbf'; cat "$model"; } > "$tmp/bom.ini"
check "a byte-order mark" sh -c "'$cli' info '$tmp/bom.ini' | grep -q \
  '^output=1:1:10'"
sed 's/^unit = 256$/unit = 256\nunit = 64/' "$model" > "$tmp/twice.ini"
line=$(grep -n '^unit = 256$' "$tmp/twice.ini" | cut -d: -f1)
check "a key set twice" fails_with "$tmp/twice.log" \
  "unit: set twice, at line $line and line $((line + 1))" \
  "$cli" info "$tmp/twice.ini"
sed 's/^unit = 256$/units = 256/' "$model" > "$tmp/typo.ini"
check "a misspelt key" fails_with "$tmp/typo.log" \
  "units: unknown key for this section; did you mean 'unit'?" \
  "$cli" info "$tmp/typo.ini"
{ cat "$model"; printf '[]\n'; } > "$tmp/empty.ini"
check "an empty section name" fails_with "$tmp/empty.log" \
  "empty.ini: line $(( $(wc -l < "$model") + 1 )): empty section name" \
  "$cli" info "$tmp/empty.ini"

# issue 16: [Model] save_best_path, nntrainer's rule. The same seeded run
# cut after 1, 2, 3 and 4 epochs (--save eN.bin) gives each epoch's state;
# the file must be the state of the epoch whose validation accuracy is the
# highest (ties: the lowest loss), and the "saved" lines must follow
# exactly the epochs that were the best so far. The path is relative: it
# lands in the working directory, not beside the INI.
# (the runs below change folder: the program by an absolute path)
case $cli in /*) abs_cli=$cli ;; *) abs_cli=$PWD/$cli ;; esac
mkdir -p "$tmp/bestrun" "$tmp/bestini" "$tmp/bestvalid"
# other random images: validation results that go up and down
random_mnist_idx "$tmp/bestvalid" 24
sed 's/^loss = cross$/loss = cross\nsave_best_path = best.bin/' "$model" \
  > "$tmp/bestini/best.ini"
best_run () { # EPOCHS: trains from the same seed, saves eEPOCHS.bin
  (cd "$tmp/bestrun" && "$abs_cli" train "$tmp/bestini/best.ini" \
    "${data[@]}" \
    --valid-data "$tmp/bestvalid/images.idx" \
    --valid-labels "$tmp/bestvalid/labels.idx" --seed 7 --threads 1 \
    --epochs "$1" --save "$tmp/bestrun/e$1.bin")
}
for n in 1 2 3 4 5; do best_run "$n" > "$tmp/best$n.log" 2>&1; done
best_run 6 > "$tmp/best6.log" 2>&1
check "save_best_path: training with it runs" grep -q '^epoch=6/6' \
  "$tmp/best6.log"
# the epochs nntrainer's rule saves after, from the printed results
awk '/^epoch=/ {
    split($1, e, "[=/]")
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] + 0 }
    if (n++ == 0 || v["val_accuracy"] > acc ||
        (v["val_accuracy"] == acc && v["val_loss"] < loss)) {
      print e[2]; acc = v["val_accuracy"]; loss = v["val_loss"]
    }
  }' "$tmp/best6.log" > "$tmp/best.want"
awk '/^epoch=/ { split($1, e, "[=/]"); at = e[2] }
  /^# best so far: saved best.bin$/ { print at }' "$tmp/best6.log" \
  > "$tmp/best.got"
check "save_best_path: saved after the epochs that were the best so far" \
  cmp -s "$tmp/best.want" "$tmp/best.got"
last=$(tail -n 1 "$tmp/best.want")
check "save_best_path: the file is the best epoch's ($last) weights, moments and counters" \
  cmp -s "$tmp/bestrun/best.bin" "$tmp/bestrun/e$last.bin"
check "save_best_path: relative to the working directory, not the INI" \
  test ! -e "$tmp/bestini/best.bin"
check "save_best_path without --valid-data: not used, and said" sh -c "cd \
  '$tmp/bestrun' && rm -f best.bin && '$abs_cli' train '$tmp/bestini/best.ini' \
  --data '$tmp/images.idx' --labels '$tmp/labels.idx' --batch 8 --epochs 1 \
  2>&1 | grep -q 'save_best_path = best.bin is not used' && test ! -e best.bin"
sed 's|^save_best_path = best.bin$|save_best_path = nope/best.bin|' \
  "$tmp/bestini/best.ini" > "$tmp/bestini/nope.ini"
check "save_best_path into a missing folder: refused before training" \
  fails_with "$tmp/bestnope.log" 'save_best_path: .*nope' "$cli" train \
  "$tmp/bestini/nope.ini" "${data[@]}" --epochs 1 --valid-data \
  "$tmp/images.idx" --valid-labels "$tmp/labels.idx"
check "... before training" sh -c "! grep -q '^epoch=' '$tmp/bestnope.log'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
