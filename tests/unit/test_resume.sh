#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Resume after a crash: a run with per-epoch checkpoints is killed with
# SIGKILL as soon as its first checkpoint exists, then resumed from that
# checkpoint (weights, Adam moments, epoch and iteration counters). After
# the same number of epochs it must end where an uninterrupted run ends:
# the same validation accuracy (within 0.5 points; here, the same bytes).
#
# usage: test_resume.sh TENSOR_TRAINER SOURCE_ROOT
set -u
cli=$1 root=$2
data=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")
passed=0 failed=0
check () {
  if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi
}
args=(train "$root/tests/models/fmnist_mlp.ini"
  --data "$data/train-images-idx3-ubyte.gz" --labels "$data/train-labels-idx1-ubyte.gz"
  --valid-data "$data/t10k-images-idx3-ubyte.gz" --valid-labels "$data/t10k-labels-idx1-ubyte.gz"
  --samples 6000 --valid-samples 2000 --epochs 3 --threads 1)

"$cli" "${args[@]}" --save "$tmp/straight.ttb" > "$tmp/straight.log"
check "uninterrupted run" '[ -f "$tmp/straight.ttb" ]'

"$cli" "${args[@]}" --checkpoint "$tmp/ck.ttb" --save "$tmp/never.ttb" > "$tmp/killed.log" &
pid=$!
for _ in $(seq 1 600); do [ -f "$tmp/ck.ttb" ] && break; sleep 0.05; done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
check "a checkpoint was written before the kill" '[ -f "$tmp/ck.ttb" ]'
check "the killed run never finished" '[ ! -f "$tmp/never.ttb" ]'

"$cli" "${args[@]}" --load "$tmp/ck.ttb" --resume --save "$tmp/resumed.ttb" > "$tmp/resumed.log"
check "resumed run" '[ -f "$tmp/resumed.ttb" ]'
check "resume starts after the checkpoint's epoch" 'grep -q "^# resuming after epoch [12]" "$tmp/resumed.log"'
a=$(sed -n 's/^epoch=3\/3 .*val_accuracy=\([0-9.]*\).*/\1/p' "$tmp/straight.log")
b=$(sed -n 's/^epoch=3\/3 .*val_accuracy=\([0-9.]*\).*/\1/p' "$tmp/resumed.log")
echo "validation accuracy: uninterrupted $a, resumed $b"
check "accuracy within 0.5 points" 'awk -v a="$a" -v b="$b" "BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != \"\" && b != \"\" && d <= 0.005) }"'
check "same final model" 'cmp -s "$tmp/straight.ttb" "$tmp/resumed.ttb"'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
