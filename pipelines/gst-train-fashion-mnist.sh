#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job through GStreamer: tensor_datasrc reads Debian's
# Fashion-MNIST (dataset-fashion-mnist), tensor_trainer trains the model
# on the 60,000 training images and validates on the 10,000 test images
# every epoch, then saves the weights.
#
# Usage: pipelines/gst-train-fashion-mnist.sh [MODEL.ini] [EPOCHS]
#   MODEL.ini  default tests/models/fmnist_mlp.ini (fmnist_cnn.ini: the CNN)
#   EPOCHS     default: the model's [Model] epochs
# Output: one line per epoch (from the tensor-trainer-epoch bus messages);
# the weights go to fmnist-<model>.bin here.
#
# Validation: tensor_datasrc is given two file pairs; each epoch it pushes
# the training range, then the validation files' range, and tensor_trainer
# trains on the first num-training-samples buffers of the epoch and
# evaluates the next num-validation-samples. (concat would play the
# training source to its end before the validation source, not epoch by
# epoch.)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/ensure-deps.sh"
"$top/scripts/build.sh" "$top/build"

model=${1:-$top/tests/models/fmnist_mlp.ini}
data=/usr/share/datasets/fashion-mnist
name=$(basename "$model" .ini)
if [ $# -ge 2 ]; then
  epochs=$2
else
  # [Model] epochs (iniparser: case-insensitive, # and ; comments)
  epochs=$(awk -F= '
    /^[ \t]*\[/ { s = tolower($0); gsub(/[][ \t]/, "", s); next }
    s == "model" { k = tolower($1); gsub(/[ \t]/, "", k)
      if (k == "epochs") { v = $2; sub(/[#;].*/, "", v); gsub(/[ \t]/, "", v); print v; exit } }' "$model")
  epochs=${epochs:-1}
fi
train=60000 valid=10000

export GST_PLUGIN_PATH="$top/build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
gst-launch-1.0 -m \
  tensor_datasrc \
    location="$data/train-images-idx3-ubyte.gz" \
    label-location="$data/train-labels-idx1-ubyte.gz" \
    num-samples=$train \
    validation-location="$data/t10k-images-idx3-ubyte.gz" \
    validation-label-location="$data/t10k-labels-idx1-ubyte.gz" \
    validation-num-samples=$valid epochs="$epochs" ! \
  tensor_trainer model-config="$model" \
    num-training-samples=$train num-validation-samples=$valid \
    epochs="$epochs" model-save-path="fmnist-$name.bin" ! \
  fakesink 2>&1 | awk '
    function field(name,   re, v) {
      re = name "=\\([a-z0-9]+\\)[^,;]*"
      if (!match($0, re)) return ""
      v = substr($0, RSTART, RLENGTH); sub(/^[^)]*\)/, "", v); return v
    }
    /tensor-trainer-epoch/ {
      printf "epoch=%s/%s loss=%.6f accuracy=%.4f val_loss=%.6f val_accuracy=%.4f samples_per_s=%.1f seconds=%.3f\n",
        field("epoch"), field("epochs"), field("loss"), field("accuracy"),
        field("validation-loss"), field("validation-accuracy"),
        field("samples-per-second"), field("seconds")
      fflush(); next
    }
    /ERROR|WARNING|error:|warning:|Additional debug/ { print; fflush(); next }
    /Got EOS from element "pipeline/ { print "# saved fmnist-'"$name"'.bin"; fflush() }'
