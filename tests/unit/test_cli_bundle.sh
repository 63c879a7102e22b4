#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor-trainer with bundles, on a few generated MNIST-shaped samples:
# train --save X.ttb writes a bundle (--compress a compressed one, .bin a
# BIN); train and eval take a bundle as model (read, mmap, in place) and as
# weights; in place refuses to train; unpack then pack gives the same
# bundle back; check validates a bundle's plan; info times a load; plan
# --batch writes an optimized INI that loads at that batch.
#
# usage: test_cli_bundle.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-cli-bundle-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")
model=$src/tests/models/fmnist_mlp.ini

# 48 random 28x28 images and labels 0..9, as IDX files
random_mnist_idx "$tmp" 48
data=(--data "$tmp/images.idx" --labels "$tmp/labels.idx" --batch 8)

run () {        # run OUT COMMAND...: stdout and stderr to OUT, status kept
  local out=$1; shift
  "$@" > "$out" 2>&1
}
loss () { sed -n 's/^eval .*loss=\([0-9.]*\).*/\1/p' "$1"; }

check "train --save .ttb" run "$tmp/train.log" "$cli" train "$model" \
  "${data[@]}" --epochs 1 --seed 3 --save "$tmp/m.ttb"
check "the save is a bundle" run "$tmp/inspect.log" "$cli" inspect \
  "$tmp/m.ttb"
check "with moments and counters" grep -q \
  'moments=yes counters=yes epoch=1 iteration=6' "$tmp/inspect.log"
check "batch 8 recorded" grep -q 'batch_size=8' "$tmp/inspect.log"
check "train --save .bin" run "$tmp/train_bin.log" "$cli" train "$model" \
  "${data[@]}" --epochs 1 --seed 3 --save "$tmp/m.bin"
check "the .bin is a BIN" test "$(stat -c %s "$tmp/m.bin")" -eq \
  $(( (784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10) * 12 + 4 + 8 ))
check "train --save .ttb --compress" run "$tmp/z.log" "$cli" train \
  "$model" "${data[@]}" --epochs 1 --seed 3 --save "$tmp/mz.ttb" --compress
check "compressed" sh -c "'$cli' inspect '$tmp/mz.ttb' | grep -q ' zlib '"

# eval from the bundle, every mode, and the same from INI + weights
for mode in read mmap inplace; do
  check "eval bundle --mode $mode" run "$tmp/eval_$mode.log" "$cli" eval \
    "$tmp/m.ttb" "${data[@]}" --mode $mode
done
check "eval INI --weights bundle" run "$tmp/eval_w.log" "$cli" eval \
  "$model" "${data[@]}" --weights "$tmp/m.ttb"
check "eval INI --weights bin" run "$tmp/eval_b.log" "$cli" eval "$model" \
  "${data[@]}" --weights "$tmp/m.bin"
check "eval compressed" run "$tmp/eval_z.log" "$cli" eval "$tmp/mz.ttb" \
  "${data[@]}"
ref=$(loss "$tmp/eval_read.log")
for f in eval_mmap eval_inplace eval_w eval_b eval_z; do
  check "$f: same loss as read ($ref)" test "$(loss "$tmp/$f.log")" = "$ref"
done
check "a loss was printed" test -n "$ref"

# training from a bundle continues it; in place it refuses
check "train bundle" run "$tmp/train2.log" "$cli" train "$tmp/m.ttb" \
  "${data[@]}" --epochs 1 --save "$tmp/m2.ttb"
check "counters continue" sh -c "'$cli' inspect '$tmp/m2.ttb' | \
  grep -q 'epoch=2 iteration=12'"
check "train in place refused" sh -c "! '$cli' train '$tmp/m.ttb' \
  --data '$tmp/images.idx' --labels '$tmp/labels.idx' --batch 8 \
  --mode inplace > '$tmp/inplace.log' 2>&1"
check "with a clear message" grep -q 'in place.*evaluation only' \
  "$tmp/inplace.log"
check "compress with .bin refused" sh -c "! '$cli' train '$model' \
  --data '$tmp/images.idx' --labels '$tmp/labels.idx' --batch 8 \
  --epochs 1 --save '$tmp/x.bin' --compress 2>/dev/null"

# unpack, pack: the same bundle
check "unpack" run "$tmp/unpack.log" "$cli" unpack "$tmp/m.ttb" -o \
  "$tmp/un"
check "unpacked INI is the optimized INI" grep -q '^\[Plan\]' \
  "$tmp/un/model.ini"
check "unpacked BIN is the BIN" cmp -s "$tmp/un/model.bin" "$tmp/m.bin"
check "pack again" run "$tmp/pack.log" "$cli" pack "$tmp/un/model.ini" \
  "$tmp/un/model.bin" -o "$tmp/re.ttb" --batch 8
check "byte for byte" cmp -s "$tmp/re.ttb" "$tmp/m.ttb"
check "pack without weights" run "$tmp/pack0.log" "$cli" pack "$model" \
  -o "$tmp/init.ttb" --align 4096
check "page-aligned" sh -c "'$cli' inspect '$tmp/init.ttb' | \
  grep -q 'alignment=4096'"

# check, info
check "check a bundle" run "$tmp/check.log" "$cli" check "$tmp/m.ttb"
check "plan valid" grep -q 'plan valid' "$tmp/check.log"
check "info in place, trusted" run "$tmp/info.log" "$cli" info "$tmp/m.ttb" \
  --mode inplace --trust
check "load time printed" grep -q 'mode=inplace trusted load_seconds=' \
  "$tmp/info.log"
check "--mode on an INI refused" sh -c "! '$cli' info '$model' --mode mmap \
  2>/dev/null"
# byte 5000 inverted (a fixed byte such as 'X' may already be there: the
# weights come from random images)
byte=$(od -An -tu1 -j5000 -N1 "$tmp/m.ttb" | tr -d ' ')
flipped=$(printf '\\%03o' $((255 - byte)))
check "a damaged bundle refused" sh -c "cp '$tmp/m.ttb' '$tmp/bad.ttb' && \
  printf '$flipped' | dd of='$tmp/bad.ttb' bs=1 seek=5000 conv=notrunc \
  2>/dev/null && ! '$cli' eval '$tmp/bad.ttb' --data '$tmp/images.idx' \
  --labels '$tmp/labels.idx' > '$tmp/bad.log' 2>&1 && \
  grep -q 'checksum mismatch' '$tmp/bad.log'"
"$cli" inspect "$tmp/bad.ttb" > "$tmp/bad_inspect.log" 2>&1
check "inspect exits 1 on a damaged bundle" test $? -eq 1
check "and says which section" grep -q '^weights .* MISMATCH' \
  "$tmp/bad_inspect.log"
# plan --batch N: the optimized INI says batch N in [Model], so it loads
# (and checks) as it is, at the batch its plan is for
check "plan --batch 2" run "$tmp/plan2.log" "$cli" plan "$model" --batch 2 \
  -o "$tmp/b2.opt.ini"
check "[Model] says batch 2" grep -q '^batch_size = 2   # the batch of the plan below (was: batch_size = 32)' "$tmp/b2.opt.ini"
check "it checks as it is" sh -c "'$cli' check '$tmp/b2.opt.ini' | \
  grep -q 'plan valid'"
check "a [Model] without batch_size gets the key" sh -c "grep -v \
  '^batch_size' '$model' > '$tmp/nobatch.ini' && '$cli' plan \
  '$tmp/nobatch.ini' --batch 3 -o '$tmp/nb.opt.ini' > /dev/null && \
  grep -q '^batch_size = 3   # the batch of the plan below\$' \
  '$tmp/nb.opt.ini' && '$cli' check '$tmp/nb.opt.ini' | grep -q 'plan valid'"
check "and trains at batch 2" sh -c "'$cli' train '$tmp/b2.opt.ini' \
  --data '$tmp/images.idx' --labels '$tmp/labels.idx' --epochs 1 | \
  grep -q '^# model=.* batch=2 '"
# issue 16: pack of an INI with a backbone stores the inlined text; the
# bundle alone, moved away with the INIs deleted, opens and trains
mkdir -p "$tmp/bbsrc" "$tmp/bbdst"
printf '%s\n' '[Model]' 'type = NeuralNetwork' 'batch_size = 2' \
  'loss = cross' '[Optimizer]' 'type = adam' '[input]' 'type = input' \
  'input_shape = 1:28:28' '[bb]' 'backbone = part.ini' 'trainable = false' \
  '[fc2]' 'type = fully_connected' 'unit = 10' 'activation = softmax' \
  > "$tmp/bbsrc/top.ini"
printf '%s\n' '[Model]' 'type = NeuralNetwork' '[a]' \
  'type = fully_connected' 'unit = 8' 'input_layers = input' 'flatten = true' \
  > "$tmp/bbsrc/part.ini"
check "pack an INI with a backbone" sh -c "'$cli' pack '$tmp/bbsrc/top.ini' \
  -o '$tmp/bbsrc/top.ttb' > /dev/null"
mv "$tmp/bbsrc/top.ttb" "$tmp/bbdst/" && rm -f "$tmp/bbsrc/top.ini" \
  "$tmp/bbsrc/part.ini"
check "the bundle alone trains (layer a frozen, inlined)" sh -c "'$cli' \
  train '$tmp/bbdst/top.ttb' --data '$tmp/images.idx' --labels \
  '$tmp/labels.idx' --epochs 1 | grep -q '^epoch=1/1'"
check "its INI names no backbone" sh -c "'$cli' unpack '$tmp/bbdst/top.ttb' \
  -o '$tmp/bbdst/out' > /dev/null && ! grep -q '^backbone' \
  '$tmp/bbdst/out/model.ini' && grep -q '^trainable = false' \
  '$tmp/bbdst/out/model.ini'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
