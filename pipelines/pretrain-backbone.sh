#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Personalization, step 1: the backbone. Trains the zoo's transformer
# (tests/models/zoo_transformer.ini: 28x28 grey images, 10 classes) with
# this engine on Fashion-MNIST's classes 0 to 4 only, through GStreamer,
#
#   gst-launch-1.0 tensor_datasrc classes=0-4 ! tensor_trainer ! fakesink
#
# validating on the test images of the same classes after every epoch,
# and saves it as OUT/backbone.ini + OUT/backbone.bin, the model
# pipelines/personalize.sh teaches classes 5 to 9 with a few shots.
#
# The classifier has its 10 outputs from the start (labels one-hot of 10;
# outputs 5 to 9 are never the answer here). With GROW=1 and the grow tool
# (`tensor-trainer grow`) available, it trains 5 outputs instead and
# grows the classifier to 10 afterwards. With tensor_trainer's replay
# properties (replay-size) available, the trainer keeps REPLAY_SIZE
# samples of the old classes in OUT/replay.bin for personalize.sh's
# replay method. Each prints a "skipped: ... not available" line when its
# tool is missing.
#
# Usage: pipelines/pretrain-backbone.sh [EPOCHS]    (default 5)
# Env: OUT (./personalize-out), QUICK=1 (1 epoch of 40 training images of
#   each class, validated on 40 test images of each), GROW (0; 1: 5
#   outputs, then grow), REPLAY_SIZE (500), TT_BUILD_DIR (a built build
#   folder to use instead of building build/)
# Needs: the project's packages (scripts/ensure-deps.sh), installed if
#   missing.
# Ends with "final: backbone=OUT/backbone.ini weights=OUT/backbone.bin
#   classes=0-4 val_accuracy=A epochs=E".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
tt_setup
tt_need fakesink:libgstreamer1.0-0 tensor_datasrc:project \
  tensor_trainer:project
tt_need_command gst-launch-1.0:gstreamer1.0-tools
. "$top/pipelines/personalize-lib.sh"

quick=${QUICK:-0}
out=${OUT:-personalize-out}
data=/usr/share/datasets/fashion-mnist
if [ "$quick" = 1 ]; then epochs=${1:-1} per=40
else epochs=${1:-5} per=0; fi
replay_size=${REPLAY_SIZE:-500}
mkdir -p "$out"

# the samples the source pushes: the classes 0-4 of each file, or the
# first $per of each
ntrain=$(pz_count "$data/train-labels-idx1-ubyte.gz" 0 4 "$per")
nvalid=$(pz_count "$data/t10k-labels-idx1-ubyte.gz" 0 4 "$per")

# 10 outputs, or 5 grown to 10 afterwards
units=10
grow=${GROW:-0}
if [ "$grow" = 1 ]; then
  if pz_have_command grow; then units=5
  else echo "skipped: grow (tensor-trainer grow not available): 10 outputs from the start"; fi
fi
sed "/^\[classifier\]/,\$ s/^unit = 10\$/unit = $units/" \
  "$top/tests/models/zoo_transformer.ini" > "$out/pretrain.ini"

replay=()
if pz_have_property tensor_trainer replay-size; then
  # kept only: none of them is mixed into the pretraining's batches
  replay=(replay-size="$replay_size" replay-per-batch=0
    replay-file="$out/replay.bin")
else
  echo "skipped: replay (tensor_trainer replay-size not available): no replay file"
fi

echo "# training $out/pretrain.ini on classes 0-4: $ntrain training and" \
  "$nvalid test images, $epochs epoch(s), through gst-launch-1.0"
log=$out/pretrain.log
set +e
gst-launch-1.0 -m \
  tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
    label-location="$data/train-labels-idx1-ubyte.gz" \
    validation-location="$data/t10k-images-idx3-ubyte.gz" \
    validation-label-location="$data/t10k-labels-idx1-ubyte.gz" \
    classes=0-4 per-class="$per" num-classes="$units" shuffle=true seed=1 \
    epochs="$epochs" ! \
  tensor_trainer model-config="$out/pretrain.ini" \
    num-training-samples="$ntrain" num-validation-samples="$nvalid" \
    epochs="$epochs" model-save-path="$out/pretrain.bin" "${replay[@]}" ! \
  fakesink > "$log" 2>&1
status=$?
set -e
pz_epochs "$log"
if [ "$status" -ne 0 ]; then
  grep -E 'ERROR|error:|Additional debug' "$log" >&2 || tail -5 "$log" >&2
  echo "error: gst-launch-1.0 failed ($status)" >&2
  exit "$status"
fi
vacc=$(pz_epochs "$log" | tail -1 | sed -n 's/.* val_accuracy=\([0-9.]*\).*/\1/p')

# The backbone keeps the weights only: the optimizer's moments and the
# counters are the pretraining's, and personalization starts its own. The
# weights come first in a BIN.
pz_weights_only "$out/pretrain.ini" "$out/pretrain.bin" \
  "$out/pretrain-weights.bin"
if [ "$units" = 10 ]; then
  # atomically: a killed run leaves the previous backbone whole
  cp "$out/pretrain.ini" "$out/backbone.ini.tmp"
  mv "$out/pretrain-weights.bin" "$out/backbone.bin"
  mv "$out/backbone.ini.tmp" "$out/backbone.ini"
else
  "$build/tools/tensor-trainer" grow "$out/pretrain.ini" \
    --weights "$out/pretrain-weights.bin" --layer classifier --units 10 \
    -o "$out/backbone.ini"
fi
echo "final: backbone=$out/backbone.ini weights=$out/backbone.bin" \
  "classes=0-4 val_accuracy=$vacc epochs=$epochs"
