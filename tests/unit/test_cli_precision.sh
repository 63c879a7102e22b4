#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Mixed precision on the command line (docs/precision.md): --precision on
# train, eval, info and plan, the note said once on stderr, loss scaling's
# loss_scale=S skipped_steps=N on the epoch lines (overflowed steps
# counted with an initial scale of 2^127), plan storing the precision as
# [Model] model_tensor_type (and an fp32 plan's model text unchanged), a
# bad precision refused naming the allowed values.
#
# usage: test_cli_precision.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-cli-precision-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")
model=$src/tests/models/fmnist_mlp.ini
random_mnist_idx "$tmp" 64
data=(--data "$tmp/images.idx" --labels "$tmp/labels.idx")

"$cli" train "$model" "${data[@]}" --epochs 2 --batch 8 --seed 1 \
  --precision bf16 --save "$tmp/w.bin" > "$tmp/bf16.txt" 2> "$tmp/bf16.err"
check "train --precision bf16 succeeds" test $? -eq 0
check "the note, once" test "$(grep -c '^# precision FP32-BF16: bf16: ' \
  "$tmp/bf16.err")" -eq 1
check "bf16 without loss_scale: two epochs, no loss scaling figures" test \
  "$(grep -Ec '^epoch=[12]/2 .*seconds=[0-9.]*$' "$tmp/bf16.txt")" -eq 2
"$cli" eval "$model" --weights "$tmp/w.bin" "${data[@]}" --precision bf16 \
  > "$tmp/eval.txt" 2> /dev/null
check "eval --precision bf16" grep -q '^eval samples=64 ' "$tmp/eval.txt"

"$cli" train "$model" "${data[@]}" --epochs 1 --batch 8 --seed 1 \
  > "$tmp/fp32.txt" 2> "$tmp/fp32.err"
check "fp32 train succeeds" test $? -eq 0
check "fp32: no loss scaling figures" sh -c "! grep -q skipped_steps \
  '$tmp/fp32.txt'"
check "fp32: no note" sh -c "! grep -q '# precision' '$tmp/fp32.err'"

# an initial scale of 2^127 overflows the first steps (the inputs not
# normalized: 0 to 255)
sed -e 's/^loss = cross$/loss = cross\nloss_scale = 1.7014118346046923e38/' \
  -e 's/^normalization = true$/normalization = false/' \
  "$model" > "$tmp/scaled.ini"
"$cli" train "$tmp/scaled.ini" "${data[@]}" --epochs 2 --batch 8 --seed 1 \
  > "$tmp/scaled.txt" 2> /dev/null
check "train with loss_scale = 2^127 succeeds" test $? -eq 0
skipped=$(sed -n '1,/^epoch=1/s/^epoch=1\/2 .*skipped_steps=\([0-9]*\)$/\1/p' \
  "$tmp/scaled.txt")
check "epoch 1 skipped overflowed steps ($skipped)" test "${skipped:-0}" -ge 1
check "and halved the scale as often" awk -v k="${skipped:-0}" '
  /^epoch=1\/2/ { for (i = 1; i <= NF; i++) if ($i ~ /^loss_scale=/)
    s = substr($i, 12) }
  END { r = s / 2 ^ (127 - k); exit !(r > 0.99999 && r < 1.00001) }' \
  "$tmp/scaled.txt"

"$cli" plan "$model" -o "$tmp/bf16.opt.ini" --precision bf16 > /dev/null 2>&1
check "plan --precision bf16 stores it" grep -q \
  '^model_tensor_type = FP32-BF16   # the precision of the plan below$' \
  "$tmp/bf16.opt.ini"
"$cli" plan "$model" -o "$tmp/fp32.opt.ini" > /dev/null 2>&1
check "an fp32 plan keeps the model text" sh -c "! grep -q model_tensor_type \
  '$tmp/fp32.opt.ini'"
"$cli" info "$model" --precision W16A16 > /dev/null 2> "$tmp/info.err"
check "info --precision W16A16" grep -q '^# precision FP16-FP16: fp16: ' \
  "$tmp/info.err"

check "a bad precision is refused" sh -c "! '$cli' info '$model' \
  --precision fp64 > /dev/null 2> '$tmp/bad.err'"
check "naming the allowed values" grep -q \
  "precision: 'fp64' is not a precision: use fp32, bf16, fp16" "$tmp/bad.err"
check "usage names it" sh -c "'$cli' --help | grep -q -- '--precision P'"
# info's activations held from forward into backward: the stash halves
# them (zoo_resnet8 at batch 32), a share of the pool; none in inference
model=$src/tests/models/zoo_resnet8.ini
"$cli" info "$model" --batch 32 --precision fp32 > "$tmp/h32.txt" 2> /dev/null
"$cli" info "$model" --batch 32 --precision bf16 > "$tmp/h16.txt" 2> /dev/null
h32=$(sed -n 's/^held_activation_bytes=\([0-9]*\) of_pool=0\.[0-9]* .*/\1/p' \
  "$tmp/h32.txt")
h16=$(sed -n 's/^held_activation_bytes=\([0-9]*\) of_pool=0\.[0-9]* .*/\1/p' \
  "$tmp/h16.txt")
check "info: held activations at fp32 ($h32) and bf16 ($h16)" test \
  "${h32:-0}" -gt 0 -a "${h16:-0}" -gt 0
check "bf16 holds about half" test $((${h16:-1} * 10)) -le $((${h32:-0} * 6)) \
  -a $((${h16:-0} * 10)) -ge $((${h32:-1} * 4))
check "of_pool is held / pool" awk '
  /^weight_bytes=/ { split($2, a, "="); pool = a[2] }
  /^held_activation_bytes=/ { split($1, h, "="); split($2, s, "=")
    d = s[2] - h[2] / pool; ok = d < 0.0001 && d > -0.0001 }
  END { exit !ok }' "$tmp/h16.txt"
check "info: the peak's kinds sum to its live bytes, the plan's lower bound" \
  awk '
  /^peak_live_bytes=/ { sum = 0
    for (i = 3; i <= NF; i++) { split($i, kv, "="); sum += kv[2] }
    split($1, p, "="); live = p[2]; ok = live > 0 && sum == live }
  /^lower bound / { bound = $3 }
  END { exit !(ok && bound == live) }' "$tmp/h16.txt"
check "bf16's peak holds stashes, fp32's none" sh -c \
  "grep -q ' stashed=[1-9]' '$tmp/h16.txt' && grep -q ' stashed=0 ' \
  '$tmp/h32.txt'"
"$cli" info "$model" --inference > "$tmp/hinf.txt" 2> /dev/null
check "inference: no held activations" sh -c "! grep -q held_activation \
  '$tmp/hinf.txt'"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
