#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# nntrainer's own application INIs (tests/interop/nntrainer/applications,
# the ones our engine reads; APPLICATIONS.md lists them all): each loads
# (info), plans at batch 4 to its lower bound (plan prints 1.0000 x
# bound), and those with up to 4096 input values train one step of 4
# random samples to a finite loss.
#
# usage: test_applications.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-applications-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")

# idx4 FEATURES CLASSES: 4 random uint8 samples of FEATURES values and
# labels 0..3 modulo CLASSES, as tmp/images.idx and tmp/labels.idx
idx4 () {
  { printf '\x00\x00\x08\x02'; be32 4; be32 "$1"
    head -c $((4 * $1)) /dev/urandom; } > "$tmp/images.idx"
  { printf '\x00\x00\x08\x01'; be32 4
    for i in 0 1 2 3; do printf "\\x$(printf %02x $((i % $2)))"; done
  } > "$tmp/labels.idx"
}

count=0
for ini in "$src"/tests/interop/nntrainer/applications/*.ini; do
  name=$(basename "$ini" .ini)
  count=$((count + 1))
  check "$name: info" sh -c "'$cli' info '$ini' --batch 4 > '$tmp/info.txt' 2>&1"
  check "$name: plan at batch 4 reaches the lower bound" sh -c "'$cli' plan \
'$ini' --batch 4 -o '$tmp/$name.opt.ini' 2>&1 | grep -q '1.0000 x bound'"
  in=$(sed -n 's/^input0=//p' "$tmp/info.txt")
  out=$(sed -n 's/^output=//p' "$tmp/info.txt")
  features=$(echo "$in" | awk -F: '{ print $1 * $2 * $3 }')
  classes=$(echo "$out" | awk -F: '{ print $1 * $2 * $3 }')
  if [ -n "$features" ] && [ "$features" -le 4096 ]; then
    idx4 "$features" "$classes"
    check "$name: one training step" sh -c "'$cli' train '$ini' --data \
'$tmp/images.idx' --labels '$tmp/labels.idx' --batch 4 --epochs 1 \
2>&1 | grep -qE '^epoch=1/1 loss=[0-9]'"
  fi
done
check "the applications are there" test "$count" -ge 19
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
