#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Pool bytes for each choice of what trains (--train, docs/personalize.md)
# on the zoo's MobileNetV2 and transformer, planned and stored with
# tensor-trainer plan (the ratio to the plan's lower bound beside it), and
# PyTorch's peak training memory for the same choice
# (tests/bench/torch_personalize.py: peak RSS minus RSS before the first
# step, requires_grad = False outside the choice; torch's CPU allocator
# keeps no statistics).
#
# Usage: [BUILD=DIR] [BATCH=N] [TORCH=0] tests/bench/personalize_memory.sh
#   BATCH: the batch of every plan and of PyTorch's steps (default 8)
#   TORCH=0: the engine's pools only
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cli=${BUILD:-$top/build}/tools/tensor-trainer
batch=${BATCH:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '%-18s %-12s %12s %8s %14s\n' model choice pool_bytes x_bound \
  torch_peak_kb
for name in zoo_mobilenet_v2 zoo_transformer; do
  ini=$top/tests/models/$name.ini
  for choice in everything biases last:4 last:1; do
    out=$("$cli" plan "$ini" -o "$tmp/$name.opt.ini" --batch "$batch" \
      --threads 1 --train "$choice")
    pool=$(echo "$out" | awk '/^planned pool/ {print $3}')
    ratio=$(echo "$out" | sed -n 's/.*(\([0-9.]*\) x bound).*/\1/p')
    grep -q "^train = $choice\$" "$tmp/$name.opt.ini" ||
      [ "$choice" = everything ] ||
      { echo "$name: [Plan] train = $choice not stored" >&2; exit 1; }
    peak=-
    if [ "${TORCH:-1}" != 0 ]; then
      peak=$(cd "$top/tests/bench" && /usr/bin/python3 torch_personalize.py \
        "$ini" --batch "$batch" --train "$choice" | tail -1 |
        sed -n 's/.*peak_train_kb=\([0-9-]*\).*/\1/p')
    fi
    printf '%-18s %-12s %12s %8s %14s\n' "$name" "$choice" "$pool" \
      "$ratio" "$peak"
  done
done
