#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor_predictor figures for a model (default: the Fashion-MNIST CNN):
#   - inference at batch 1 on the 10,000 test images: the engine alone
#     (tensor-trainer eval --inference), through a pipeline
#     (tensor_datasrc ! tensor_predictor ! fakesink), and PyTorch (Debian's
#     python3-torch, same threads, forward + softmax under inference_mode)
#     in the same run, frames per second and microseconds per frame (the
#     pipeline's figure is the engine time per frame inside the element,
#     and its wall-clock rate);
#   - the inference pool against the training pool, at batch 1 and 32;
#   - the cost of a live weight hand-off (trainer publishes, predictor
#     takes), median microseconds.
# The weights come from a short training run (their values do not change
# the speed). Not a test: run it by hand; figures vary on a busy machine.
#
# Usage: tests/bench/predictor_speed.sh [MODEL.ini] [THREADS]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
"$top/scripts/ensure-deps.sh" python3-torch python3-numpy
"$top/scripts/build.sh" "$top/build"

model=${1:-$top/tests/models/fmnist_cnn.ini}
threads=${2:-1}
data=/usr/share/datasets/fashion-mnist
cli=$top/build/tools/tensor-trainer
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
export OMP_WAIT_POLICY=passive   # as train_speed.sh: fair to PyTorch here
export GST_PLUGIN_PATH="$top/build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# the value of key=value or gst's key=(type)value in the input
field () { tr ' ,;' '\n\n\n' | sed -n "s/^$1=\(([a-z0-9]*)\)\{0,1\}//p" | tail -1; }

"$cli" train "$model" --data "$data/train-images-idx3-ubyte.gz" \
  --labels "$data/train-labels-idx1-ubyte.gz" --samples 2000 --epochs 1 \
  --threads "$threads" --save "$work/w.bin" > /dev/null

echo "model: $model, threads: $threads"
echo
echo "inference at batch 1 over the 10,000 test images"
printf '%-34s %12s %14s %10s\n' "" "frames/s" "us per frame" accuracy
eval_line=$("$cli" eval "$model" --weights "$work/w.bin" --inference \
  --batch 1 --threads "$threads" --data "$data/t10k-images-idx3-ubyte.gz" \
  --labels "$data/t10k-labels-idx1-ubyte.gz")
rate=$(field samples_per_s <<< "$eval_line")
printf '%-34s %12.0f %14.1f %10s\n' "engine (tensor-trainer eval)" "$rate" \
  "$(awk -v r="$rate" 'BEGIN { print 1e6 / r }')" \
  "$(field accuracy <<< "$eval_line")"
summary=$(gst-launch-1.0 -m tensor_datasrc \
    location="$data/t10k-images-idx3-ubyte.gz" \
    label-location="$data/t10k-labels-idx1-ubyte.gz" ! \
  tensor_predictor model-config="$model" model-load-path="$work/w.bin" ! \
  fakesink 2>&1 | grep tensor-predictor-summary)
printf '%-34s %12.0f %14.1f %10.4f\n' "pipeline (tensor_predictor)" \
  "$(field samples-per-second <<< "$summary")" \
  "$(field mean-latency-us <<< "$summary")" \
  "$(field accuracy <<< "$summary")"
case "$(basename "$model")" in
  fmnist_mlp.ini) torch_model=mlp ;;
  fmnist_cnn.ini) torch_model=cnn ;;
  *) torch_model= ;;
esac
if [ -n "$torch_model" ]; then
  torch_rate=$(/usr/bin/python3 "$top/tests/bench/torch_fmnist.py" --infer \
    --model "$torch_model" --batch 1 --threads "$threads" --samples 10000 |
    field samples_per_s)
  printf '%-34s %12.0f %14.1f %10s\n' "PyTorch (same model, batch 1)" \
    "$torch_rate" "$(awk -v r="$torch_rate" 'BEGIN { print 1e6 / r }')" "-"
  printf '%-34s %12s\n' "engine / PyTorch" \
    "$(awk -v a="$rate" -v b="$torch_rate" 'BEGIN { printf "%.2fx", a / b }')"
fi

echo
echo "memory pool (bytes)"
printf '%-10s %14s %14s %10s %14s\n' batch training inference ratio weights
for batch in 1 32; do
  t=$("$cli" info "$model" --batch "$batch" | field pool_bytes)
  i=$("$cli" info "$model" --batch "$batch" --inference | field pool_bytes)
  w=$("$cli" info "$model" --batch "$batch" --inference | field weight_bytes)
  printf '%-10s %14s %14s %10s %14s\n' "$batch" "$t" "$i" \
    "$(awk -v a="$i" -v b="$t" 'BEGIN { printf "%.3f", a / b }')" "$w"
done

echo
echo "live hand-off (median of 2000)"
"$top/build/tests/handoff-cost" "$model" 2000 | awk '{
  for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  printf "weights %s bytes: trainer publishes in %s us, predictor takes in %s us, %s us in all\n",
    v["weight_bytes"], v["publish_us"], v["take_us"], v["total_us"] }'
