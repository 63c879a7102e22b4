#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor-trainer plan|train --memory-limit (issue 18): a limit below what
# the planner reaches is refused naming the smallest feasible limit; that
# limit plans (the pool within it, what is recomputed printed, the
# decisions stored in [Plan.Memory] and validated by check); K/M/G
# suffixes; training under the limit prints the same losses as without it.
#
# usage: test_cli_memory_limit.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-cli-memory-limit-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")
model=$src/tests/models/resnet_bn.ini
random_mnist_idx "$tmp" 16
data=(--data "$tmp/images.idx" --labels "$tmp/labels.idx" --batch 4)

fails_with () {
  local out=$1 pattern=$2; shift 2
  if "$@" > "$out" 2>&1; then echo "  (succeeded)"; return 1; fi
  grep -q -- "$pattern" "$out" || { echo "  got: $(cat "$out")"; return 1; }
}

check "an infeasible limit" fails_with "$tmp/inf.log" \
  'smallest feasible limit is [0-9]* bytes' "$cli" plan "$model" \
  -o "$tmp/x.opt.ini" --batch 4 --memory-limit 1K
check "... writes nothing" test ! -e "$tmp/x.opt.ini"
smallest=$(sed -n 's/.*smallest feasible limit is \([0-9]*\) bytes.*/\1/p' \
  "$tmp/inf.log")
check "the smallest feasible limit plans" sh -c "'$cli' plan '$model' \
  -o '$tmp/m.opt.ini' --batch 4 --memory-limit $smallest > '$tmp/p.log'"
pool=$(awk '/^planned pool/ { print $3 }' "$tmp/p.log")
check "... within it ($pool <= $smallest)" test "${pool:-0}" -gt 0 -a \
  "${pool:-0}" -le "${smallest:-0}"
check "... prints what it recomputes" sh -c "grep -q '^recomputed=[1-9]' \
  '$tmp/p.log' && grep -q '^  recompute ' '$tmp/p.log'"
check "... stores the decisions" grep -q '^\[Plan.Memory\]' "$tmp/m.opt.ini"
check "check validates them" sh -c "'$cli' check '$tmp/m.opt.ini' | \
  grep -q '^recomputed=[1-9]'"
sed 's/ = recompute/ = swap/' "$tmp/m.opt.ini" > "$tmp/bad.opt.ini"
check "a tampered decision is refused" fails_with "$tmp/bad.log" \
  '\[Plan.Memory\] .*swap needs \[Model\] memory_swap' "$cli" check \
  "$tmp/bad.opt.ini"
check "K suffix" sh -c "'$cli' plan '$model' -o '$tmp/k.opt.ini' --batch 4 \
  --memory-limit 100000K | grep -q '^memory limit  *102400000$'"
for bad in 0 12X -5 1.5M ''; do
  check "--memory-limit '$bad' refused" fails_with "$tmp/b.log" \
    'needs a positive byte count' "$cli" plan "$model" -o "$tmp/y.opt.ini" \
    --memory-limit "$bad"
done
# bit-identical training prints the same losses
"$cli" train "$model" "${data[@]}" --epochs 2 --seed 7 > "$tmp/free.log"
check "train under the limit" sh -c "'$cli' train '$model' ${data[*]} \
  --epochs 2 --seed 7 --memory-limit $smallest > '$tmp/lim.log'"
check "... prints the pool and what is recomputed" sh -c "grep -q '^pool ' \
  '$tmp/lim.log' && grep -q '^recomputed=[1-9]' '$tmp/lim.log'"
grep '^epoch=' "$tmp/free.log" | sed 's/samples_per_s.*//' > "$tmp/free.ep"
grep '^epoch=' "$tmp/lim.log" | sed 's/samples_per_s.*//' > "$tmp/lim.ep"
check "... the same losses as without it" sh -c "test -s '$tmp/free.ep' && \
  cmp -s '$tmp/free.ep' '$tmp/lim.ep'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
