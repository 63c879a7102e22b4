#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What GStreamer costs: training through
#
#   gst-launch-1.0 tensor_datasrc ! tensor_trainer ! fakesink
#
# against the engine alone (tensor-trainer train), same data (Fashion-MNIST
# training images in file order), same model, batch and thread count
# (OPENBLAS_NUM_THREADS=1), run alternately RUNS times each; each run trains
# EPOCHS epochs and the last one is timed (the first warms caches), as both
# report it: training samples over the epoch's training time. Prints the
# median samples/s of each and the ratio (target: >= 0.97). On a busy
# machine wall-clock rates swing with the other processes, so it also
# prints the ratio of the processes' own CPU time (user + sys, whole run:
# the same IDX loading and the same epochs on both sides), which the load
# of others disturbs much less. Last, the pipeline's own cost, free of the
# training's noise: a model with almost no compute (784 -> 10) trained 5
# epochs on the 60,000 images both ways; the difference in CPU time per
# sample is what GStreamer adds, and with the engine's best rate per model
# it gives the ratio to expect on a quiet machine.
#
# Then peak memory: the whole gst-launch process training the MLP for one
# epoch on the 60,000 images vs PyTorch's process (Debian's python3-torch)
# training the same model on the same images
# (tests/bench/torch_fmnist.py), both measured by /usr/bin/time -v.
#
# Usage: tests/bench/pipeline_speed.sh
# Env:   RUNS (3), EPOCHS (2), MLP_SAMPLES (60000), CNN_SAMPLES (10000),
#        MODELS ("mlp cnn")
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
"$top/scripts/ensure-deps.sh" python3-torch python3-numpy time
"$top/scripts/build.sh" "$top/build"

runs=${RUNS:-3} epochs=${EPOCHS:-2}
data=/usr/share/datasets/fashion-mnist
images=$data/train-images-idx3-ubyte.gz labels=$data/train-labels-idx1-ubyte.gz
cli=$top/build/tools/tensor-trainer
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
export GST_PLUGIN_PATH="$top/build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"

median () { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -A best

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpu () { awk '{ print $1 + $2 }' "$tmp/cpu"; }

# samples/s of the last epoch, through GStreamer; CPU seconds in $tmp/cpu
run_pipeline () {
  local model=$1 samples=$2
  /usr/bin/time -f "%U %S" -o "$tmp/cpu" gst-launch-1.0 -m tensor_datasrc location="$images" label-location="$labels" \
      num-samples="$samples" epochs="$epochs" ! \
    tensor_trainer model-config="$model" num-training-samples="$samples" \
      epochs="$epochs" ! fakesink 2>&1 |
    sed -n 's/.*tensor-trainer-epoch.*samples-per-second=(double)\([^,]*\),.*/\1/p' |
    tail -1
}

# samples/s of the last epoch, the engine alone; CPU seconds in $tmp/cpu
run_engine () {
  local model=$1 samples=$2
  /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$cli" train "$model" --data "$images" --labels "$labels" \
    --samples "$samples" --epochs "$epochs" --threads 1 |
    sed -n 's/.*samples_per_s=\([^ ]*\).*/\1/p' | tail -1
}

echo "# throughput: last of $epochs epochs, $runs runs each, alternating, 1 thread"
printf '%-5s %8s %6s %20s %20s %7s %13s %13s %7s\n' model samples batch \
  "pipeline samples/s" "engine samples/s" ratio "pipeline cpu" "engine cpu" \
  "cpu ratio"
for name in ${MODELS:-mlp cnn}; do
  model=$top/tests/models/fmnist_$name.ini
  if [ "$name" = mlp ]; then samples=${MLP_SAMPLES:-60000}; else samples=${CNN_SAMPLES:-10000}; fi
  batch=$(sed -n 's/^[ \t]*batch_size[ \t]*=[ \t]*\([0-9]*\).*/\1/p' "$model" | head -1)
  p=() e=() pc=() ec=()
  for i in $(seq "$runs"); do
    p+=("$(run_pipeline "$model" "$samples")"); pc+=("$(cpu)")
    e+=("$(run_engine "$model" "$samples")"); ec+=("$(cpu)")
    echo "#   run $i: pipeline ${p[-1]} samples/s ${pc[-1]} cpu s," \
      "engine ${e[-1]} samples/s ${ec[-1]} cpu s" >&2
  done
  pm=$(printf '%s\n' "${p[@]}" | median)
  em=$(printf '%s\n' "${e[@]}" | median)
  pcm=$(printf '%s\n' "${pc[@]}" | median)
  ecm=$(printf '%s\n' "${ec[@]}" | median)
  ratio=$(awk -v a="$pm" -v b="$em" 'BEGIN { printf "%.3f", a / b }')
  cratio=$(awk -v a="$pcm" -v b="$ecm" 'BEGIN { printf "%.3f", b / a }')
  printf '%-5s %8s %6s %20.1f %20.1f %7s %12.2fs %12.2fs %9s\n' "$name" \
    "$samples" "$batch" "$pm" "$em" "$ratio" "$pcm" "$ecm" "$cratio"
  best[$name]=$(printf '%s\n' "${e[@]}" | sort -g | tail -1)
done

echo "# pipeline cost per sample: 784 -> 10 model, 5 epochs of 60000, CPU time"
printf '%s\n' "[Model]" "batch_size = 32" "loss = cross" "[Optimizer]" \
  "type = sgd" "learning_rate = 0.01" "[input]" "type = input" \
  "input_shape = 1:28:28" "[flat]" "type = flatten" "[out]" \
  "type = fully_connected" "unit = 10" "activation = softmax" > "$tmp/tiny.ini"
pc=() ec=()
for i in $(seq "$runs"); do
  /usr/bin/time -f "%U %S" -o "$tmp/cpu" gst-launch-1.0 -q tensor_datasrc \
      location="$images" label-location="$labels" epochs=5 ! \
    tensor_trainer model-config="$tmp/tiny.ini" num-training-samples=60000 \
      epochs=5 ! fakesink > /dev/null
  pc+=("$(cpu)")
  /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$cli" train "$tmp/tiny.ini" \
    --data "$images" --labels "$labels" --epochs 5 --threads 1 > /dev/null
  ec+=("$(cpu)")
done
pcm=$(printf '%s\n' "${pc[@]}" | median)
ecm=$(printf '%s\n' "${ec[@]}" | median)
over=$(awk -v a="$pcm" -v b="$ecm" 'BEGIN { printf "%.3f", (a - b) / 300000 * 1e6 }')
echo "pipeline ${pcm}s, engine ${ecm}s: ${over} us per sample added by GStreamer"
for name in ${MODELS:-mlp cnn}; do
  awk -v o="$over" -v r="${best[$name]}" -v n="$name" 'BEGIN {
    printf "%-5s expected ratio at the best engine rate (%.1f samples/s): %.3f\n",
      n, r, 1 / (1 + o * 1e-6 * r) }'
done

echo "# peak RSS, training the MLP for 1 epoch on 60000 images, 1 thread"
rss () { sed -n 's/.*Maximum resident set size (kbytes): *//p' "$1"; }
/usr/bin/time -v -o "$tmp/gst" gst-launch-1.0 -q tensor_datasrc \
    location="$images" label-location="$labels" ! \
  tensor_trainer model-config="$top/tests/models/fmnist_mlp.ini" \
    num-training-samples=60000 epochs=1 ! fakesink > /dev/null
/usr/bin/time -v -o "$tmp/torch" /usr/bin/python3 \
  "$top/tests/bench/torch_fmnist.py" --model mlp --batch 32 --threads 1 \
  --samples 60000 --epochs 1 > /dev/null
g=$(rss "$tmp/gst") t=$(rss "$tmp/torch")
printf '%-40s %10s KiB\n' "gst-launch tensor_datasrc ! tensor_trainer" "$g" \
  "python3 torch_fmnist.py --model mlp" "$t"
awk -v a="$g" -v b="$t" 'BEGIN { printf "ratio (pipeline / PyTorch)               %10.3f\n", a / b }'
