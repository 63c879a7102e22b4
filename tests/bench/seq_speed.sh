#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Training speed of the sequence models, ours vs PyTorch (Debian's
# python3-torch), measured side by side in one run: tests/models/
# sensor_conv1d.ini (3:1:64, two conv1d), sensor_lstm.ini (1:16:6, two
# lstm) and sensor_gru.ini (1:16:6, two gru), same synthetic samples'
# shapes, same model, same batch, same
# thread count, same environment (OPENBLAS_CORETYPE and friends are left
# as the machine sets them). The CLI reads IDX images only, so our side is
# tests/bench/seq_speed.c (seq-speed) and theirs tests/bench/torch_seq.py,
# both on deterministic synthetic data made before the clock starts. Each
# side trains EPOCHS epochs and the last one is timed (the first warms
# caches and allocators); a partial last batch is dropped on both sides.
#
# Batches 16 (sensor_conv1d.ini's own, a small on-device batch), 64 and
# 256 (where per-step overheads, PyTorch's Python and dispatch included,
# are spread over enough samples that the per-sample arithmetic shows).
#
# Usage: tests/bench/seq_speed.sh [THREADS]   (default 1)
# Env:   CONV1D_SAMPLES (32768), LSTM_SAMPLES (32768), GRU_SAMPLES (32768),
#        EPOCHS (2),
#        BATCHES ("16 64 256"), BUILD_DIR ("$top/build")
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$top/build}
"$top/scripts/ensure-deps.sh" python3-torch python3-numpy
"$top/scripts/build.sh" "$build"

threads=${1:-1}
epochs=${EPOCHS:-2}
bench=$build/tests/seq-speed
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
# PyTorch's OpenMP threads spin-wait; on a busy 2-core machine that costs
# it dearly, so let them sleep (fair to it, changes nothing for us)
export OMP_WAIT_POLICY=passive

field () { sed -n "s/.*$1=\([^ ]*\).*/\1/p" | tail -1; }

printf '%-6s %6s %8s %14s %15s %8s\n' model batch samples "ours samples/s" \
  "torch samples/s" ratio
for model in conv1d lstm gru; do
  case $model in
    conv1d) samples=${CONV1D_SAMPLES:-32768} ;;
    lstm) samples=${LSTM_SAMPLES:-32768} ;;
    gru) samples=${GRU_SAMPLES:-32768} ;;
  esac
  for batch in ${BATCHES:-16 64 256}; do
    used=$(( samples / batch * batch ))
    ours=$("$bench" "$top/tests/models/sensor_$model.ini" --batch "$batch" \
      --samples "$samples" --epochs "$epochs" --threads "$threads" |
      field samples_per_s)
    theirs=$(/usr/bin/python3 "$top/tests/bench/torch_seq.py" --model $model \
      --batch "$batch" --threads "$threads" --samples "$samples" \
      --epochs "$epochs" | field samples_per_s)
    ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')
    printf '%-6s %6s %8s %14s %15s %7sx\n' $model "$batch" "$used" "$ours" \
      "$theirs" "$ratio"
  done
done
