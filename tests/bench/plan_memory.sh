#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Memory planning figures for every model of tests/models and
# ../shared/models: naive (no reuse), nntrainer's depth-first order, ours,
# the lower bound, planning time, and the time to load the optimized INI
# (validation only) against planning from scratch.
#
# Usage: [BUILD=DIR] [BATCH=N] [CLI=tensor-trainer] tests/bench/plan_memory.sh
#   BATCH: plan every model for that batch instead of its INI's
#   CLI: a tensor-trainer to measure (another build, e.g. an older
#        commit's, for before/after figures); nothing is built then
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${CLI:-}" ]; then
  "$top/scripts/ensure-deps.sh"
  "$top/scripts/build.sh" "${BUILD:-$top/build}"
fi
cli=${CLI:-${BUILD:-$top/build}/tools/tensor-trainer}
batch=()
[ -n "${BATCH:-}" ] && batch=(--batch "$BATCH")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT


printf '%-22s %12s %12s %12s %12s %7s %10s %10s\n' model naive depth-first \
  ours bound ratio plan_ms load_ms
shopt -s nullglob
for ini in "$top"/tests/models/*.ini "$top"/../shared/models/*.ini; do
  name=$(basename "$ini" .ini)
  out=$("$cli" plan "$ini" -o "$tmp/$name.opt.ini" "${batch[@]}")
  naive=$(echo "$out" | awk '/^naive/ {print $4}')
  dfs=$(echo "$out" | awk '/^depth-first/ {print $3}')
  pool=$(echo "$out" | awk '/^planned pool/ {print $3}')
  bound=$(echo "$out" | awk '/^lower bound/ {print $3}')
  plan_ms=$(echo "$out" | sed -n 's/.*planning=\([0-9.]*\) ms.*/\1/p')
  load_ms=$("$cli" check "$tmp/$name.opt.ini" | sed -n 's/.*validation=\([0-9.]*\) ms.*/\1/p')
  ratio=$(awk -v a="$pool" -v b="$bound" 'BEGIN { printf "%.4f", a / b }')
  printf '%-22s %12s %12s %12s %12s %7s %10s %10s\n' "$name" "$naive" "$dfs" \
    "$pool" "$bound" "$ratio" "$plan_ms" "$load_ms"
done
