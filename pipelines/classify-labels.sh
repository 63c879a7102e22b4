#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Class names for images: tensor_predictor's text output, and the same
# model's output tensors through nnstreamer's image_labeling decoder.
#
# Trains the Fashion-MNIST MLP (tests/models/fmnist_mlp.ini) for one epoch
# (or loads WEIGHTS.bin), writes the ten class names to fmnist-labels.txt
# and classifies the first test images twice:
#
#   tensor_datasrc ! tensor_predictor output=text labels=fmnist-labels.txt
#     ! multifilesink
#
# ("Ankle boot (97%)": class name and probability, for textoverlay), and,
# when nnstreamer is installed (its tensor_decoder element, found by
# gst-inspect-1.0 or under NNSTREAMER_PREFIX),
#
#   tensor_datasrc ! tensor_predictor ! tensor_decoder mode=image_labeling
#     option1=fmnist-labels.txt ! multifilesink
#
# whose names must be the predictor's, image by image (the script fails
# otherwise). Without nnstreamer the second pipeline is skipped, saying so.
#
# Usage: pipelines/classify-labels.sh [WEIGHTS.bin]
#   WEIGHTS.bin: weights of fmnist_mlp.ini to load instead of training
# Env: QUICK=1 (train on the first 600 images instead of 60,000),
#   IMAGES (how many test images to classify, 20), NNSTREAMER_PREFIX
#   (where nnstreamer is installed, e.g. /usr/local or a build's install
#   folder: its lib/<arch>/gstreamer-1.0 plugin, decoders and
#   etc/nnstreamer.ini are used), TT_BUILD_DIR (a built build folder to
#   use instead of building build/)
# Needs: the project's packages (scripts/ensure-deps.sh: GStreamer, the
#   dataset-fashion-mnist images), installed if missing; nnstreamer
#   optionally (not a Debian 12 package).
# Ends with "classified N test images: X of N correct; nnstreamer
#   image_labeling: ..." (agrees on all N, or skipped and why).
# Writes here: fmnist-labels.txt, classify-mlp.bin (the weights, unless
#   given), classify-predictor.txt and classify-decoder.txt (one line per
#   image: its true class, then the name given).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
tt_setup
tt_need multifilesink:gstreamer1.0-plugins-good tensor_datasrc:project \
  tensor_trainer:project tensor_predictor:project
tt_need_command gst-launch-1.0:gstreamer1.0-tools

model=$top/tests/models/fmnist_mlp.ini
data=/usr/share/datasets/fashion-mnist
images=${IMAGES:-20}
train=60000
[ "${QUICK:-0}" = 1 ] && train=600
names=("T-shirt/top" Trouser Pullover Dress Coat Sandal Shirt Sneaker Bag
  "Ankle boot")
printf '%s\n' "${names[@]}" > fmnist-labels.txt

if [ $# -ge 1 ]; then
  weights=$1
  [ -f "$weights" ] || { echo "error: no weights file $weights" >&2; exit 1; }
  echo "# loading $weights"
else
  weights=classify-mlp.bin
  echo "# training fmnist_mlp for 1 epoch on $train images"
  gst-launch-1.0 -q \
    tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
      label-location="$data/train-labels-idx1-ubyte.gz" \
      num-samples=$train shuffle=true seed=1 ! \
    tensor_trainer model-config="$model" num-training-samples=$train \
      epochs=1 model-save-path="$weights" ! fakesink
fi

# The true classes of the first test images: IDX labels, one byte each
# after an 8-byte header
truth=$(gzip -dc "$data/t10k-labels-idx1-ubyte.gz" | head -c $((8 + images)) |
  tail -c "$images" | od -An -v -tu1 | tr -s ' \n' '\n' | sed '/^$/d')
[ "$(wc -l <<< "$truth")" -eq "$images" ] ||
  { echo "error: cannot read $images labels from $data" >&2; exit 1; }

# One buffer per image, one file per buffer (multifilesink); NAME then the
# file's text (the decoder's ends with a NUL) on a line after the class.
# Writes OUT (true class <tab> given name) and prints how many agree.
classify () {
  local out=$1 dir
  shift
  dir=$(mktemp -d classify.XXXXXX)
  gst-launch-1.0 -q \
    tensor_datasrc location="$data/t10k-images-idx3-ubyte.gz" \
      label-location="$data/t10k-labels-idx1-ubyte.gz" num-samples="$images" ! \
    tensor_predictor model-config="$model" model-load-path="$weights" \
      "$@" multifilesink location="$dir/%05d.txt"
  : > "$out"
  local i=0 class
  while read -r class; do
    printf '%s\t%s\n' "${names[$class]}" \
      "$(tr -d '\0' < "$(printf '%s/%05d.txt' "$dir" $i)")" >> "$out"
    i=$((i + 1))
  done <<< "$truth"
  rm -rf "$dir"
}

echo "# tensor_predictor output=text over the first $images test images"
classify classify-predictor.txt output=text labels=fmnist-labels.txt !
# "Ankle boot (97%)": the name is what precedes the last " ("
correct=$(awk -F'\t' '{ n = $2; sub(/ \([0-9]+%\)$/, "", n) }
  n == $1 { c++ } END { print c + 0 }' classify-predictor.txt)
head -n 5 classify-predictor.txt | sed 's/^/  /; s/\t/ -> /'
summary="classified $images test images: $correct of $images correct"

# nnstreamer: from NNSTREAMER_PREFIX, else as installed. Its plugin
# registers an element tensor_trainer too: the training above ran before
# it was on the path, and it gets a registry file of its own.
if [ -n "${NNSTREAMER_PREFIX:-}" ]; then
  lib=
  for d in "$NNSTREAMER_PREFIX"/lib/*/gstreamer-1.0 \
    "$NNSTREAMER_PREFIX"/lib/gstreamer-1.0; do
    [ -d "$d" ] && { lib=${d%/gstreamer-1.0}; break; }
  done
  [ -n "$lib" ] || { echo "error: NNSTREAMER_PREFIX=$NNSTREAMER_PREFIX has" \
    "no lib/*/gstreamer-1.0" >&2; exit 1; }
  export GST_PLUGIN_PATH="$GST_PLUGIN_PATH:$lib/gstreamer-1.0"
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [ -f "$NNSTREAMER_PREFIX/etc/nnstreamer.ini" ] &&
    export NNSTREAMER_CONF="$NNSTREAMER_PREFIX/etc/nnstreamer.ini"
  export NNSTREAMER_DECODERS="$lib/nnstreamer/decoders"
  registry=$(mktemp classify-registry.XXXXXX)
  export GST_REGISTRY="$PWD/$registry"
  trap 'rm -f "$GST_REGISTRY"' EXIT
fi
if ! gst-inspect-1.0 tensor_decoder >/dev/null 2>&1; then
  echo "# nnstreamer not found (no tensor_decoder; set NNSTREAMER_PREFIX):" \
    "image_labeling skipped"
  echo "$summary; nnstreamer image_labeling: skipped (not installed)"
  exit 0
fi

echo "# tensor_predictor ! tensor_decoder mode=image_labeling (nnstreamer)"
classify classify-decoder.txt ! tensor_decoder mode=image_labeling \
  option1=fmnist-labels.txt !
head -n 5 classify-decoder.txt | sed 's/^/  /; s/\t/ -> /'
agree=$(paste classify-predictor.txt classify-decoder.txt | awk -F'\t' '
  { n = $2; sub(/ \([0-9]+%\)$/, "", n) } n == $4 { c++ } END { print c + 0 }')
if [ "$agree" -ne "$images" ]; then
  echo "error: image_labeling names $((images - agree)) image(s) otherwise" \
    "than tensor_predictor (classify-predictor.txt, classify-decoder.txt)" >&2
  exit 1
fi
echo "$summary; nnstreamer image_labeling: agrees on all $images"
