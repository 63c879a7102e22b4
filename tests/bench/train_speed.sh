#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Training speed, ours vs PyTorch (Debian's python3-torch), measured side
# by side in one run: same Fashion-MNIST samples, same model, same batch,
# same thread count, same environment (OPENBLAS_CORETYPE and friends are
# left as the machine sets them). Each side trains EPOCHS epochs and the
# last one is timed (the first warms caches and allocators).
#
# Usage: tests/bench/train_speed.sh [THREADS]   (default 1)
# Env:   MLP_SAMPLES (60000), CNN_SAMPLES (10000), EPOCHS (2)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
"$top/scripts/ensure-deps.sh" python3-torch python3-numpy
"$top/scripts/build.sh" "$top/build"

threads=${1:-1}
epochs=${EPOCHS:-2}
data=/usr/share/datasets/fashion-mnist
cli=$top/build/tools/tensor-trainer
# ours: THREADS engine threads (--threads), OpenBLAS on one inside them;
# PyTorch: THREADS OpenMP threads
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=$threads
# PyTorch's OpenMP threads spin-wait; on a busy 2-core machine that costs
# it dearly, so let them sleep (fair to it, changes nothing for us)
export OMP_WAIT_POLICY=passive

field () { sed -n "s/.*$1=\([^ ]*\).*/\1/p" | tail -1; }

printf '%-5s %6s %8s %14s %14s %8s\n' model batch samples "ours samples/s" \
  "torch samples/s" ratio
for model in mlp cnn; do
  if [ $model = mlp ]; then samples=${MLP_SAMPLES:-60000}; else samples=${CNN_SAMPLES:-10000}; fi
  for batch in 32 128; do
    ours=$("$cli" train "$top/tests/models/fmnist_$model.ini" \
      --data "$data/train-images-idx3-ubyte.gz" \
      --labels "$data/train-labels-idx1-ubyte.gz" \
      --samples "$samples" --batch "$batch" --epochs "$epochs" \
      --threads "$threads" | field samples_per_s)
    theirs=$(/usr/bin/python3 "$top/tests/bench/torch_fmnist.py" --model $model \
      --batch "$batch" --threads "$threads" --samples "$samples" \
      --epochs "$epochs" | field samples_per_s)
    ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')
    printf '%-5s %6s %8s %14s %14s %7sx\n' $model "$batch" "$samples" "$ours" \
      "$theirs" "$ratio"
  done
done
