#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Plans a model once, then trains from the plan without planning again.
#
# 1. tensor_planner sees the stream's caps (one Fashion-MNIST sample is
#    enough), plans the model's memory for them and the batch size, and
#    dumps the optimized INI (the model's text + its plan) and the initial
#    weights (BIN):
#      tensor_datasrc ! tensor_planner location=X.opt.ini weights-location=X.init.bin ! fakesink
# 2. tensor_trainer loads that INI: the stored plan is validated, not
#    searched again (its tensor-trainer-plan message says plan-loaded=true),
#    and training starts from the dumped weights:
#      tensor_datasrc ! tensor_trainer model-config=X.opt.ini model-load-path=X.init.bin ! fakesink
#
# (The two can also run as one pipeline, tensor_planner ! tensor_trainer:
# the planner writes its file before it forwards the caps, and the trainer
# loads its model when the caps reach it.)
#
# Usage: pipelines/plan-model.sh [cnn|mlp|MODEL.ini] [BATCH]
#   default: cnn, batch 64. Env: TRAIN (10000) and VALID (2000) samples,
#   EPOCHS (1), OUT folder (plan-out), QUICK=1 (1 epoch of 600 + 200
#   samples, unless TRAIN, VALID, EPOCHS say otherwise), TT_BUILD_DIR (a
#   built build folder to use instead of building build/)
# Needs: the project's packages (scripts/ensure-deps.sh: GStreamer, the
#   dataset-fashion-mnist images), installed if missing.
# Ends with "saved OUT/<model>.b<BATCH>.bin".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
tt_setup
tt_need fakesink:libgstreamer1.0-0 tensor_datasrc:project \
  tensor_planner:project tensor_trainer:project
tt_need_command gst-launch-1.0:gstreamer1.0-tools

case "${1:-cnn}" in
  cnn|mlp) model=$top/tests/models/fmnist_${1:-cnn}.ini ;;
  *) model=$1 ;;
esac
batch=${2:-64}
if [ "${QUICK:-0}" = 1 ]; then train=${TRAIN:-600} valid=${VALID:-200}
else train=${TRAIN:-10000} valid=${VALID:-2000}; fi
epochs=${EPOCHS:-1}
out=${OUT:-plan-out}
mkdir -p "$out"
name=$(basename "$model" .ini)
opt=$out/$name.b$batch.opt.ini init=$out/$name.b$batch.init.bin
data=/usr/share/datasets/fashion-mnist

# key=value of a gst-launch -m line: field NAME
msg_awk='
  function field(name,   re, v) {
    re = "[ ,]" name "=\\([a-z0-9]+\\)[^,;]*"
    if (!match($0, re)) return ""
    v = substr($0, RSTART, RLENGTH); sub(/^[^)]*\)/, "", v); gsub(/"/, "", v)
    return v
  }'

echo "# 1. tensor_planner: $name for batch $batch"
gst-launch-1.0 -m \
  tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
    label-location="$data/train-labels-idx1-ubyte.gz" num-samples=1 ! \
  tensor_planner model-config="$model" location="$opt" \
    weights-location="$init" batch-size="$batch" ! \
  fakesink 2>&1 | awk "$msg_awk"'
  /tensor-planner-plan/ {
    printf "planned in %.2f ms for batch %s: pool %s bytes, lower bound %s, depth-first %s, no reuse %s (%s tensors, %s in-place layers, %s order search)\n",
      field("plan-ms"), field("batch-size"), field("pool-bytes"),
      field("lower-bound"), field("depth-first-bytes"), field("naive-bytes"),
      field("tensors"), field("in-place-layers"),
      field("order-exact") == "true" ? "exact" : "greedy"
    printf "wrote %s and %s\n", field("location"), field("weights-location")
  }
  /ERROR|WARNING|Additional debug/ { print }'
[ -s "$opt" ] && [ -s "$init" ] || { echo "error: the planner wrote nothing" >&2; exit 1; }
"$build/tools/tensor-trainer" check "$opt" | sed 's/^/check: /'

echo "# 2. tensor_trainer from $opt ($epochs epoch(s) of $train + $valid samples)"
gst-launch-1.0 -m \
  tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
    label-location="$data/train-labels-idx1-ubyte.gz" num-samples="$train" \
    shuffle=true validation-location="$data/t10k-images-idx3-ubyte.gz" \
    validation-label-location="$data/t10k-labels-idx1-ubyte.gz" \
    validation-num-samples="$valid" epochs="$epochs" ! \
  tensor_trainer model-config="$opt" model-load-path="$init" \
    num-training-samples="$train" num-validation-samples="$valid" \
    epochs="$epochs" model-save-path="$out/$name.b$batch.bin" ! \
  fakesink 2>&1 | awk "$msg_awk"'
  /tensor-trainer-plan/ {
    loaded = field("plan-loaded")
    how = loaded == "true" ? "stored plan validated, not planned" : "planned"
    printf "plan-loaded=%s (%s in %.2f ms), batch %s, pool %s bytes\n",
      loaded, how, field("plan-ms"), field("batch-size"), field("pool-bytes")
  }
  /tensor-trainer-epoch/ {
    printf "epoch=%s/%s loss=%.4f accuracy=%.4f val_loss=%.4f val_accuracy=%.4f samples_per_s=%.1f\n",
      field("epoch"), field("epochs"), field("loss"), field("accuracy"),
      field("validation-loss"), field("validation-accuracy"),
      field("samples-per-second") }
  /ERROR|WARNING|Additional debug/ { print }
  END { if (loaded != "true") { print "error: the trainer did not use the stored plan"; exit 1 } }'
echo "saved $out/$name.b$batch.bin"
