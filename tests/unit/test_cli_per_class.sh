#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor-trainer eval --per-class (personalization: new and old classes'
# accuracy from one run): one line a class after the eval line; the
# samples and correct ones add up to the eval line's; each class's
# accuracy is what a plain eval of that class's samples alone measures
# (batch 1, so that no sample's batch changes its output); a class
# without samples says nan; train refuses the option.
#
# usage: test_cli_per_class.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-cli-per-class-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")
model=$src/tests/models/fmnist_mlp.ini

# 80 random images, labels 0..9 in turn; a model trained a little on them
random_mnist_idx "$tmp" 80
"$cli" train "$model" --data "$tmp/images.idx" --labels "$tmp/labels.idx" \
  --epochs 3 --batch 8 --seed 1 --save "$tmp/w.bin" > /dev/null ||
  { echo "FAIL: training"; exit 1; }

"$cli" eval "$model" --weights "$tmp/w.bin" --data "$tmp/images.idx" \
  --labels "$tmp/labels.idx" --batch 1 --per-class > "$tmp/all.txt"
check "eval --per-class succeeds" test $? -eq 0
check "the eval line first" grep -Eq '^eval samples=80 loss=[0-9.]+ accuracy=[0-9.]+ ' \
  <(head -1 "$tmp/all.txt")
check "then ten class lines" test "$(grep -Ec \
  '^class=[0-9] samples=8 correct=[0-8] accuracy=[0-9.]+$' "$tmp/all.txt")" -eq 10
check "classes in order" test "$(sed -n 's/^class=\([0-9]*\) .*/\1/p' \
  "$tmp/all.txt" | tr '\n' ,)" = "0,1,2,3,4,5,6,7,8,9,"
check "the correct ones add up to the eval line's accuracy" awk '
  /^eval/ { for (i = 1; i <= NF; i++) if ($i ~ /^accuracy=/) acc = substr($i, 10) }
  /^class=/ { split($3, c, "="); sum += c[2] }
  END { exit !(sprintf("%.4f", sum / 80) == acc) }' "$tmp/all.txt"

# each class alone, through a plain eval
python3 - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
im = open(d + "/images.idx", "rb").read()
lb = open(d + "/labels.idx", "rb").read()
for c in (0, 3, 7):
    idx = [i for i in range(80) if lb[8 + i] == c]
    with open("%s/im%d.idx" % (d, c), "wb") as f:
        f.write(im[:4] + struct.pack(">III", len(idx), 28, 28))
        for i in idx:
            f.write(im[16 + 784 * i:16 + 784 * (i + 1)])
    with open("%s/lb%d.idx" % (d, c), "wb") as f:
        f.write(lb[:4] + struct.pack(">I", len(idx)) + bytes(c for _ in idx))
PY
for c in 0 3 7; do
  alone=$("$cli" eval "$model" --weights "$tmp/w.bin" --data "$tmp/im$c.idx" \
    --labels "$tmp/lb$c.idx" --batch 1 | sed -n 's/.* accuracy=\([0-9.]*\) .*/\1/p')
  listed=$(sed -n "s/^class=$c .* accuracy=\([0-9.]*\)$/\1/p" "$tmp/all.txt")
  check "class $c: $listed listed, $alone alone" test -n "$alone" -a \
    "$alone" = "$listed"
done

# a class without samples: the first 5 samples hold classes 0..4
"$cli" eval "$model" --weights "$tmp/w.bin" --data "$tmp/images.idx" \
  --labels "$tmp/labels.idx" --samples 5 --per-class > "$tmp/five.txt"
check "class 4 has its sample" grep -q '^class=4 samples=1 ' "$tmp/five.txt"
check "class 5 has none: nan" grep -q '^class=5 samples=0 correct=0 accuracy=nan$' \
  "$tmp/five.txt"
check "without --per-class, the eval line only" test "$("$cli" eval "$model" \
  --weights "$tmp/w.bin" --data "$tmp/images.idx" --labels "$tmp/labels.idx" \
  | wc -l)" -eq 1
check "train refuses --per-class" sh -c "! '$cli' train '$model' --data \
  '$tmp/images.idx' --labels '$tmp/labels.idx' --per-class 2> '$tmp/e.log'"
check "saying so" grep -q 'tensor-trainer: --per-class applies to eval' "$tmp/e.log"
check "usage names it" sh -c "'$cli' --help | grep -q 'eval --per-class'"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
