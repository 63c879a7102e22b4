#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Mixed precision's accuracy (docs/precision.md): each MODEL trained
# EPOCHS epochs on Fashion-MNIST's 60,000 training images, validated on
# the 10,000 test images, once as written (FP32-FP32) and once with
# [Model] model_tensor_type = FP32-A for each activation type A in TYPES,
# the same seeds; prints the last epoch's validation accuracy of each
# seed, their mean, and the difference from fp32 in points.
#
# Usage: [BUILD=DIR] [EPOCHS=N] [SEEDS="1 2"] [TYPES="BF16 FP16"]
#        tests/bench/precision_accuracy.sh [MODEL.ini...]
#   defaults: tests/models/fmnist_mlp.ini tests/models/fmnist_cnn.ini,
#   5 epochs, seed 1, BF16
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cli=${BUILD:-$top/build}/tools/tensor-trainer
epochs=${EPOCHS:-5}
seeds=${SEEDS:-1}
types=${TYPES:-BF16}
data=/usr/share/datasets/fashion-mnist
[ $# -gt 0 ] || set -- "$top/tests/models/fmnist_mlp.ini" \
  "$top/tests/models/fmnist_cnn.ini"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the model at activation type $2 (FP32: as written) in $tmp; its path
model_at () {
  local ini=$1 type=$2 out
  out=$tmp/$(basename "$ini" .ini)_$type.ini
  if [ "$type" = FP32 ]; then
    cp "$ini" "$out"
  else
    if grep -qi '^model_tensor_type' "$ini"; then
      echo "$ini: sets model_tensor_type already" >&2
      exit 1
    fi
    sed "0,/^\[Model\]/s//[Model]\nmodel_tensor_type = FP32-$type/" \
      "$ini" > "$out"
  fi
  echo "$out"
}

# the last epoch's val_accuracy of one training
accuracy () {
  "$cli" train "$1" --data $data/train-images-idx3-ubyte.gz \
    --labels $data/train-labels-idx1-ubyte.gz \
    --valid-data $data/t10k-images-idx3-ubyte.gz \
    --valid-labels $data/t10k-labels-idx1-ubyte.gz \
    --epochs "$epochs" --seed "$2" 2>&1 |
    sed -n 's/.*val_accuracy=\([0-9.]*\).*/\1/p' | tail -1
}

printf '%-12s %-5s %-24s %8s %8s\n' model type accuracies mean points
for ini in "$@"; do
  base=""
  for type in FP32 $types; do
    m=$(model_at "$ini" "$type")
    accs=""
    for s in $seeds; do
      a=$(accuracy "$m" "$s")
      [ -n "$a" ] || { echo "$ini ($type): no val_accuracy" >&2; exit 1; }
      accs="$accs $a"
    done
    mean=$(printf '%s\n' $accs | awk '{s += $1} END {printf "%.4f", s / NR}')
    [ -n "$base" ] || base=$mean
    printf '%-12s %-5s %-24s %8s %+8.2f\n' "$(basename "$ini" .ini)" "$type" \
      "${accs# }" "$mean" "$(awk -v a="$mean" -v b="$base" \
        'BEGIN {print (a - b) * 100}')"
  done
done
