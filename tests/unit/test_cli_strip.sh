#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor-trainer strip (issue 16 item 8): from an optimized INI or a bundle
# back to the plain INI nntrainer reads. For every model of tests/models
# and the nntrainer interop models, planned at its own batch and at batch
# 3: no [Plan] section or marker is left, the sections and keys are
# exactly the original INI's (values and [Model] batch_size included), and
# the stripped INI loads. The stripped MLP trains exactly as the original
# INI and as the optimized INI; a bundle's strip --weights writes a BIN
# that evaluates as the bundle. strip never writes over its input, and
# refuses --weights for an INI.
#
# usage: test_cli_strip.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-cli-strip-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")

run () {        # run OUT COMMAND...: stdout and stderr to OUT, status kept
  local out=$1; shift
  "$@" > "$out" 2>&1
}

# same_ini A B: the same sections, keys and values (names lower-cased,
# blanks and comments aside, as iniparser reads them)
same_ini () {
  python3 - "$1" "$2" <<'EOF'
import configparser, sys
def read(path):
    cp = configparser.ConfigParser(interpolation=None, strict=False,
                                   allow_no_value=True,
                                   inline_comment_prefixes=("#", ";"),
                                   comment_prefixes=("#", ";"))
    with open(path) as f:
        cp.read_file(f)
    return {s.lower(): {k.lower(): (v or "").strip() for k, v in cp[s].items()}
            for s in cp.sections()}
a, b = read(sys.argv[1]), read(sys.argv[2])
if a != b:
    print("differ:", sys.argv[1], sys.argv[2])
    for s in sorted(set(a) | set(b)):
        if a.get(s) != b.get(s):
            print(" [%s]" % s, a.get(s), "vs", b.get(s))
    sys.exit(1)
EOF
}
no_plan () {    # no [Plan...] section and no marker line
  ! grep -qiE '^[[:space:]]*\[[[:space:]]*plan|memory plan' "$1"
}

models=("$src"/tests/models/*.ini "$src"/tests/interop/nntrainer/models/*.ini)
for model in "${models[@]}"; do
  name=$(basename "$model" .ini)
  for batch in own 3; do
    opt=$tmp/$name.$batch.opt.ini plain=$tmp/$name.$batch.ini
    args=()
    [ "$batch" = own ] || args=(--batch "$batch")
    # --quick: the longer offset search is not what this test checks
    if ! run "$tmp/plan.log" "$cli" plan "$model" -o "$opt" --quick \
        "${args[@]}"; then
      # (a model our engine refuses is not this test's business)
      echo "note: $name not planned: $(tail -1 "$tmp/plan.log")"
      continue
    fi
    check "$name/$batch: planned with a [Plan]" grep -q '^\[Plan\]' "$opt"
    check "$name/$batch: strip" run "$tmp/strip.log" "$cli" strip "$opt" \
      -o "$plain"
    check "$name/$batch: no plan left" no_plan "$plain"
    check "$name/$batch: sections and keys of the original" \
      same_ini "$model" "$plain"
    check "$name/$batch: the stripped INI loads" run "$tmp/info.log" \
      "$cli" info "$plain"
    check "$name/$batch: planned afresh" grep -q 'order_search=' \
      "$tmp/info.log"
  done
done

# training: the stripped INI as the original, and as the optimized INI at
# the batch of its plan (same seed, same data: same losses, same BIN)
model=$src/tests/models/fmnist_mlp.ini
random_mnist_idx "$tmp" 24
data=(--data "$tmp/images.idx" --labels "$tmp/labels.idx" --epochs 2
  --seed 5 --batch 8)
# (the lines without their timings)
epochs () { grep '^epoch' "$1" | sed 's/ samples_per_s=.*//'; }
evals () { grep '^eval' "$1" | sed 's/ samples_per_s=.*//'; }
check "train the original" run "$tmp/t_orig.log" "$cli" train "$model" \
  "${data[@]}" --save "$tmp/orig.bin"
check "train the stripped" run "$tmp/t_plain.log" "$cli" train \
  "$tmp/fmnist_mlp.3.ini" "${data[@]}" --save "$tmp/plain.bin"
check "plan at batch 8" run "$tmp/p8.log" "$cli" plan "$model" --batch 8 \
  -o "$tmp/b8.opt.ini"
check "strip it" run "$tmp/s8.log" "$cli" strip "$tmp/b8.opt.ini" -o \
  "$tmp/b8.ini"
check "train the optimized" run "$tmp/t_opt.log" "$cli" train \
  "$tmp/b8.opt.ini" "${data[@]}" --save "$tmp/opt.bin"
check "train its stripped" run "$tmp/t_b8.log" "$cli" train "$tmp/b8.ini" \
  "${data[@]}" --save "$tmp/b8.bin"
check "epoch lines printed" test "$(epochs "$tmp/t_orig.log" | wc -l)" -eq 2
check "stripped: the original's losses" test \
  "$(epochs "$tmp/t_plain.log")" = "$(epochs "$tmp/t_orig.log")"
check "stripped: the original's weights" cmp -s "$tmp/plain.bin" \
  "$tmp/orig.bin"
check "optimized: the same losses" test "$(epochs "$tmp/t_opt.log")" = \
  "$(epochs "$tmp/t_b8.log")"
check "optimized: the same weights" cmp -s "$tmp/opt.bin" "$tmp/b8.bin"
check "and the original's" cmp -s "$tmp/b8.bin" "$tmp/orig.bin"

# a bundle: its INI without the plan, its weights as a BIN
check "train --save a bundle" run "$tmp/tb.log" "$cli" train "$model" \
  "${data[@]}" --save "$tmp/m.ttb"
check "strip the bundle" run "$tmp/sb.log" "$cli" strip "$tmp/m.ttb" -o \
  "$tmp/m.ini" --weights "$tmp/m.bin"
check "no plan in its INI" no_plan "$tmp/m.ini"
check "its INI is the original" same_ini "$model" "$tmp/m.ini"
check "its BIN is the training's" cmp -s "$tmp/m.bin" "$tmp/orig.bin"
check "eval the bundle" run "$tmp/eb.log" "$cli" eval "$tmp/m.ttb" \
  --data "$tmp/images.idx" --labels "$tmp/labels.idx" --batch 8
check "eval INI + BIN" run "$tmp/ei.log" "$cli" eval "$tmp/m.ini" \
  --weights "$tmp/m.bin" --data "$tmp/images.idx" --labels \
  "$tmp/labels.idx" --batch 8
check "the same evaluation" test "$(evals "$tmp/eb.log")" = \
  "$(evals "$tmp/ei.log")"
check "an evaluation was printed" grep -q '^eval' "$tmp/eb.log"
check "strip a bundle without --weights" run "$tmp/sb2.log" "$cli" strip \
  "$tmp/m.ttb" -o "$tmp/m2.ini"
check "the same INI" cmp -s "$tmp/m.ini" "$tmp/m2.ini"

# refusals: nothing written over the input, no BIN from an INI, -o needed
cp "$tmp/b8.opt.ini" "$tmp/keep.opt.ini"
check "-o the input refused" sh -c "! '$cli' strip '$tmp/b8.opt.ini' -o \
  '$tmp/b8.opt.ini' 2> '$tmp/r1.log'"
check "with a message" grep -q 'does not write over its input' "$tmp/r1.log"
check "another spelling of the input refused" sh -c "! '$cli' strip \
  '$tmp/b8.opt.ini' -o '$tmp/./b8.opt.ini' 2> /dev/null"
ln -s "$tmp/b8.opt.ini" "$tmp/link.ini"
check "a link to the input refused" sh -c "! '$cli' strip \
  '$tmp/b8.opt.ini' -o '$tmp/link.ini' 2> /dev/null"
check "the input untouched" cmp -s "$tmp/b8.opt.ini" "$tmp/keep.opt.ini"
cp "$tmp/m.ttb" "$tmp/keep.ttb"
check "--weights over the bundle refused" sh -c "! '$cli' strip \
  '$tmp/m.ttb' -o '$tmp/x.ini' --weights '$tmp/m.ttb' 2> /dev/null"
check "the bundle untouched" cmp -s "$tmp/m.ttb" "$tmp/keep.ttb"
check "--weights from an INI refused" sh -c "! '$cli' strip \
  '$tmp/b8.opt.ini' -o '$tmp/y.ini' --weights '$tmp/y.bin' \
  2> '$tmp/r2.log'"
check "with a message" grep -q 'an INI holds no weights' "$tmp/r2.log"
check "nothing written then" test ! -e "$tmp/y.ini" -a ! -e "$tmp/y.bin"
check "strip without -o refused" sh -c "! '$cli' strip '$tmp/b8.opt.ini' \
  2> /dev/null"
check "not a model refused" sh -c "printf '[Plan]\nversion = 1\n' > \
  '$tmp/bad.ini' && ! '$cli' strip '$tmp/bad.ini' -o '$tmp/z.ini' \
  2> /dev/null && test ! -e '$tmp/z.ini'"
check "no temporary file left" test -z "$(find "$tmp" -name '*.tmp*')"
check "usage names strip" sh -c "'$cli' --help | grep -q 'tensor-trainer \
strip'"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
