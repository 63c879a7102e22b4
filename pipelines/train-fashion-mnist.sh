#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job: train a model on Fashion-MNIST (Debian's
# dataset-fashion-mnist), validate on the 10,000 test images every epoch,
# and save the weights.
#
# Usage: pipelines/train-fashion-mnist.sh [MODEL.ini] [EPOCHS]
#   MODEL.ini  default tests/models/fmnist_mlp.ini (fmnist_cnn.ini: the CNN)
#   EPOCHS     default: the model's [Model] epochs
# Output: one line per epoch; the weights go to fmnist-<model>.bin here.
#
# The GStreamer elements are not built yet; until they are, the training
# runs through the engine's command-line front end, tensor-trainer.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/ensure-deps.sh"
"$top/scripts/build.sh" "$top/build"

model=${1:-$top/tests/models/fmnist_mlp.ini}
data=/usr/share/datasets/fashion-mnist
name=$(basename "$model" .ini)
epoch_args=()
[ $# -ge 2 ] && epoch_args=(--epochs "$2")

exec "$top/build/tools/tensor-trainer" train "$model" \
  --data "$data/train-images-idx3-ubyte.gz" \
  --labels "$data/train-labels-idx1-ubyte.gz" \
  --valid-data "$data/t10k-images-idx3-ubyte.gz" \
  --valid-labels "$data/t10k-labels-idx1-ubyte.gz" \
  "${epoch_args[@]}" --save "fmnist-$name.bin"
