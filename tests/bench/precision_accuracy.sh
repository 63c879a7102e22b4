#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Mixed precision's accuracy (docs/precision.md): each MODEL trained
# EPOCHS epochs on Fashion-MNIST's 60,000 training images, validated on
# the 10,000 test images, once as written (FP32-FP32) and once with
# [Model] model_tensor_type = FP32-A for each activation type A in TYPES,
# the same seeds; prints the last epoch's validation accuracy of each
# seed, their mean, and the difference from fp32 in points. A type
# A/PART (BF16/gemm, BF16/stash) trains at A with TT_HALF_ONLY=PART in
# the environment: only the GEMMs' rounded inputs, or only the stash
# (docs/precision.md, "MobileNetV2 on upscaled Fashion-MNIST").
#
# Usage: [BUILD=DIR] [EPOCHS=N] [SEEDS="1 2"] [TYPES="BF16 FP16"]
#        [SAMPLES=N] [VALID_SAMPLES=N]
#        tests/bench/precision_accuracy.sh [MODEL.ini...]
#   defaults: tests/models/fmnist_mlp.ini tests/models/fmnist_cnn.ini,
#   5 epochs, seed 1, BF16, every sample
#
# A model whose input is 3:96:96 (tests/models/zoo_mobilenet_v2.ini)
# trains on Fashion-MNIST upscaled to 96x96 bilinearly and replicated to
# 3 channels (tests/bench/fmnist_rgb96.py writes them into a temporary
# folder, the first SAMPLES training and VALID_SAMPLES test images:
# default 8000 and 5000, docs/precision.md "Accuracy" says why;
# 360 MB).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cli=${BUILD:-$top/build}/tools/tensor-trainer
epochs=${EPOCHS:-5}
seeds=${SEEDS:-1}
types=${TYPES:-BF16}
data=/usr/share/datasets/fashion-mnist
samples=${SAMPLES:-}
valid_samples=${VALID_SAMPLES:-}
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

# the data set for a model's input shape: sets train_images,
# train_labels, valid_images, valid_labels and the --samples options
data_for () {
  local shape
  shape=$(sed -n 's/^input_shape *= *\([0-9:]*\).*/\1/p' "$1" | head -1)
  limits=()
  case $shape in
  1:28:28)
    train_images=$data/train-images-idx3-ubyte.gz
    train_labels=$data/train-labels-idx1-ubyte.gz
    valid_images=$data/t10k-images-idx3-ubyte.gz
    valid_labels=$data/t10k-labels-idx1-ubyte.gz
    [ -z "$samples" ] || limits+=(--samples "$samples")
    [ -z "$valid_samples" ] || limits+=(--valid-samples "$valid_samples")
    ;;
  3:96:96)
    # 96x96 RGB Fashion-MNIST, converted once per run
    if [ ! -f "$tmp/rgb96-train-images.idx" ]; then
      /usr/bin/python3 "$top/tests/bench/fmnist_rgb96.py" \
        $data/train-images-idx3-ubyte.gz $data/train-labels-idx1-ubyte.gz \
        "${samples:-8000}" "$tmp/rgb96-train"
      /usr/bin/python3 "$top/tests/bench/fmnist_rgb96.py" \
        $data/t10k-images-idx3-ubyte.gz $data/t10k-labels-idx1-ubyte.gz \
        "${valid_samples:-5000}" "$tmp/rgb96-valid"
    fi
    train_images=$tmp/rgb96-train-images.idx
    train_labels=$tmp/rgb96-train-labels.idx
    valid_images=$tmp/rgb96-valid-images.idx
    valid_labels=$tmp/rgb96-valid-labels.idx
    ;;
  *)
    echo "$1: input_shape '$shape': expected 1:28:28 (Fashion-MNIST)" \
      "or 3:96:96 (Fashion-MNIST upscaled)" >&2
    exit 1
    ;;
  esac
}

# one training's output into $tmp/out, its epoch lines into $tmp/epochs;
# $3: TT_HALF_ONLY's value (empty: both parts of a half type)
train () {
  TT_HALF_ONLY=$3 \
  "$cli" train "$1" --data "$train_images" --labels "$train_labels" \
    --valid-data "$valid_images" --valid-labels "$valid_labels" \
    ${limits[@]+"${limits[@]}"} --epochs "$epochs" --seed "$2" \
    > "$tmp/out" 2>&1 || true
  grep '^epoch=' "$tmp/out" > "$tmp/epochs" || true
}

# each epoch's KEY (val_accuracy, loss, val_loss) in the last
# training's epoch lines, the last epoch last
epoch_figures () {
  sed -n "s/.* $1=\([0-9.a-z]*\).*/\1/p" "$tmp/epochs" | tr '\n' ' '
}

# seeds outer, types inner: an interrupted run has whole seeds (each at
# every type) in its progress lines
declare -A accs
printf '%-16s %-10s %-24s %8s %8s\n' model type accuracies mean points
for ini in "$@"; do
  data_for "$ini"
  name=$(basename "$ini" .ini)
  for s in $seeds; do
    for type in FP32 $types; do
      m=$(model_at "$ini" "${type%%/*}")
      part=""
      [ "$type" = "${type%%/*}" ] || part=${type#*/}
      train "$m" "$s" "$part"
      all=$(epoch_figures val_accuracy)
      a=${all% }
      a=${a##* }
      if [ -z "$a" ]; then
        tail -n 3 "$tmp/out" >&2
        echo "$ini ($type): no val_accuracy" >&2
        exit 1
      fi
      loss=$(epoch_figures loss)
      loss=${loss% }
      val_loss=$(epoch_figures val_loss)
      val_loss=${val_loss% }
      # each training as it ends (a long run's partial results), with
      # every epoch's validation accuracy, and the last epoch's training
      # and validation loss: a model that fits the training set less but
      # validates better is regularised, not faster
      echo "# $name $type seed $s: $a (epochs: ${all% }; last epoch:" \
        "loss ${loss##* }, val_loss ${val_loss##* })" >&2
      accs[$type]="${accs[$type]:-} $a"
    done
  done
  base=""
  for type in FP32 $types; do
    mean=$(printf '%s\n' ${accs[$type]} |
      awk '{s += $1} END {printf "%.4f", s / NR}')
    [ -n "$base" ] || base=$mean
    printf '%-16s %-10s %-24s %8s %+8.2f\n' "$name" "$type" \
      "${accs[$type]# }" "$mean" "$(awk -v a="$mean" -v b="$base" \
        'BEGIN {print (a - b) * 100}')"
    accs[$type]=""
  done
done
