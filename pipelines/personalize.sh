#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Personalization, step 2: teaches the backbone of pretrain-backbone.sh
# (the zoo transformer trained on Fashion-MNIST's classes 0 to 4) the
# classes 5 to 9 from SHOTS training images of each, once per method,
# each a pipeline
#
#   gst-launch-1.0 tensor_datasrc classes=5-9 per-class=SHOTS ! \
#     tensor_trainer train=WHAT model-load-path=backbone.bin ! fakesink
#
# and evaluates each result on the 10,000 test images with
# `tensor-trainer eval --per-class`: new_accuracy over classes 5-9,
# old_accuracy over classes 0-4 (what was forgotten). Methods:
#
#   everything   every weight trains (train=everything)
#   last1        the classifier only (train=last:1)
#   biases       the biases and normalization gains only (train=biases)
#   lora         low-rank adapters (tensor-trainer lora --rank LORA_RANK
#                --alpha LORA_ALPHA --layers LORA_LAYERS) on the last
#                encoder block's dense layers; the adapters and the
#                classifier train, the rest is frozen
#                (train=layers:LORA_LAYERS,classifier)
#   replay       REPLAY_TRAIN, with REPLAY_PER_BATCH of each batch's
#                samples drawn from the old classes' samples kept by the
#                pretraining (tensor_trainer replay-size=REPLAY_SIZE,
#                OUT/replay.bin)
#   scratch      no pretraining: the same model freshly initialized,
#                everything trains
#
# A method whose tool is missing prints "skipped: METHOD (...)". For each
# it also measures the trainer's pool (its tensor-trainer-plan message),
# the peak RSS of the training run (/usr/bin/time -f %M) and its seconds,
# and, with TORCH=1, the peak RSS of the same job in PyTorch
# (pipelines/personalize-torch.py, a fresh process a method). The backbone
# itself is evaluated first (its old_accuracy is what replay keeps).
# Runs pretrain-backbone.sh first when OUT/backbone.ini is missing.
#
# Usage: pipelines/personalize.sh [SHOTS]    (default 20)
# Env: OUT (./personalize-out), EPOCHS (15), LR (the Adam learning rate
#   of every method, written into OUT/METHOD.ini; unset: each method's
#   own, chosen on the TUNE=1 split: everything and scratch 0.003, last1
#   and replay 0.03, biases and lora 0.01), LR_METHOD (one method's, e.g.
#   LR_last1=0.1), METHODS (all of the above, space-separated),
#   REPLAY_TRAIN (the replay method's train choice, last:1),
#   REPLAY_PER_BATCH (24 of the batch of 32), REPLAY_SIZE (500: as
#   pretrain-backbone.sh keeps), LORA_RANK (16), LORA_ALPHA (32),
#   LORA_LAYERS (enc2_ff1,enc2_ff2),
#   TORCH (1: the PyTorch comparison, skipped without torch; 0 at
#   QUICK=1), QUICK=1 (SHOTS 4, 1 epoch, the first 500 test images; the
#   backbone's QUICK=1 too), TUNE=1 (evaluates on the last 10,000
#   training images instead of the test images: the split the defaults
#   were chosen on), TT_BUILD_DIR (a built build folder to use
#   instead of building build/)
# Needs: the project's packages (scripts/ensure-deps.sh) and time,
#   installed if missing.
# Prints the backbone's accuracies, a table, then one line per method that
# ran (torch_peak_rss_kb: PyTorch's, or "-" without the comparison):
#   final: method=M shots=K new_accuracy=X old_accuracy=Y pool_bytes=P peak_rss_kb=R seconds=S torch_peak_rss_kb=T
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
tt_setup time
tt_need fakesink:libgstreamer1.0-0 tensor_datasrc:project \
  tensor_trainer:project
tt_need_command gst-launch-1.0:gstreamer1.0-tools /usr/bin/time:time
. "$top/pipelines/personalize-lib.sh"

quick=${QUICK:-0}
out=${OUT:-personalize-out}
data=/usr/share/datasets/fashion-mnist
tt=$build/tools/tensor-trainer
if [ "$quick" = 1 ]; then shots=${1:-4} epochs=${EPOCHS:-1} tests=500
else shots=${1:-20} epochs=${EPOCHS:-15} tests=0; fi
case "$shots" in
  '' | *[!0-9]* | 0) echo "error: SHOTS must be a positive integer, not '$shots'" >&2; exit 1 ;;
esac
methods=${METHODS:-everything last1 biases lora replay scratch}

if [ ! -s "$out/backbone.ini" ] || [ ! -s "$out/backbone.bin" ]; then
  echo "# no backbone in $out: pipelines/pretrain-backbone.sh first"
  OUT=$out "$top/pipelines/pretrain-backbone.sh"
fi
replay_train=${REPLAY_TRAIN:-last:1}
replay_k=${REPLAY_PER_BATCH:-24} replay_size=${REPLAY_SIZE:-500}
lora_rank=${LORA_RANK:-16} lora_alpha=${LORA_ALPHA:-32}
lora_layers=${LORA_LAYERS:-enc2_ff1,enc2_ff2}
if [ "$quick" = 1 ]; then torch=${TORCH:-0}; else torch=${TORCH:-1}; fi
# the backbone's INI (the weights' layout is the same: backbone.bin loads
# into it); each method writes its own at its learning rate
backbone=$out/backbone.ini
samples=$((5 * shots))
test_args=()
[ "$tests" -gt 0 ] && test_args=(--samples "$tests")
eval_images=$data/t10k-images-idx3-ubyte.gz
eval_labels=$data/t10k-labels-idx1-ubyte.gz
if [ "${TUNE:-0}" = 1 ]; then
  # the last 10,000 training images: the shots (the first of each class)
  # are not among them; the old classes' were seen by the pretraining
  eval_images=$out/tune-images-idx3-ubyte eval_labels=$out/tune-labels-idx1-ubyte
  { printf '\x00\x00\x08\x03\x00\x00\x27\x10\x00\x00\x00\x1c\x00\x00\x00\x1c'
    zcat "$data/train-images-idx3-ubyte.gz" | tail -c $((10000 * 784)); } \
    > "$eval_images"
  { printf '\x00\x00\x08\x01\x00\x00\x27\x10'
    zcat "$data/train-labels-idx1-ubyte.gz" | tail -c 10000; } > "$eval_labels"
fi
results=()

# method_lr METHOD: LR_METHOD, else LR, else the method's default (chosen
# on the TUNE=1 split: docs/personalize.md)
method_lr () {
  local var=LR_$1 default=0.003
  case "$1" in
    last1 | replay) default=0.03 ;;
    biases | lora) default=0.01 ;;
  esac
  echo "${!var:-${LR:-$default}}"
}

# evaluate MODEL.ini WEIGHTS: sets new and old (accuracies over 5-9, 0-4)
evaluate () {
  local eval_out
  eval_out=$("$tt" eval "$1" --weights "$2" \
    --data "$eval_images" --labels "$eval_labels" "${test_args[@]}" \
    --per-class)
  new=$(pz_accuracy "$eval_out" 5 9)
  old=$(pz_accuracy "$eval_out" 0 4)
}

# run METHOD MODEL.ini WEIGHTS|"" [tensor_trainer PROPERTY=VALUE...]:
# trains OUT/METHOD.ini (MODEL.ini at the method's learning rate),
# evaluates, appends the method's final line to results
run () {
  local method=$1 source=$2 weights=$3; shift 3
  local model=$out/$method.ini log=$out/$method.log saved=$out/$method.bin
  # (OUT/replay.bin is the pretraining's replay buffer)
  [ "$method" = replay ] && saved=$out/replay-model.bin
  local load=() mlr
  mlr=$(method_lr "$method")
  sed "/^\[Optimizer\]/,/^\[/ s/^learning_rate = .*/learning_rate = $mlr/" \
    "$source" > "$model"
  [ -n "$weights" ] && load=(model-load-path="$weights")
  local start=$EPOCHREALTIME status
  set +e
  /usr/bin/time -f %M -o "$out/$method.rss" gst-launch-1.0 -m \
    tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
      label-location="$data/train-labels-idx1-ubyte.gz" \
      classes=5-9 per-class="$shots" shuffle=true seed=1 epochs="$epochs" ! \
    tensor_trainer model-config="$model" "${load[@]}" "$@" \
      num-training-samples="$samples" epochs="$epochs" \
      model-save-path="$saved" ! \
    fakesink > "$log" 2>&1
  status=$?
  set -e
  local seconds
  seconds=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  if [ "$status" -ne 0 ]; then
    grep -E 'ERROR|error:|Additional debug' "$log" >&2 || tail -5 "$log" >&2
    echo "error: $method: gst-launch-1.0 failed ($status)" >&2
    exit 1
  fi
  local new old pool rss
  evaluate "$model" "$saved"
  pool=$(pz_plan_pool "$log")
  rss=$(tail -1 "$out/$method.rss")
  echo "# $method (lr $mlr): $(pz_epochs "$log" | tail -1)"
  results+=("final: method=$method shots=$shots new_accuracy=$new old_accuracy=$old pool_bytes=$pool peak_rss_kb=$rss seconds=$seconds")
}

echo "# $shots shots of each of classes 5-9 ($samples images), $epochs" \
  "epoch(s), from $backbone; evaluated on" \
  "$([ "$tests" -gt 0 ] && echo "the first $tests" || echo "the 10,000")" \
  "$([ "${TUNE:-0}" = 1 ] && echo "tuning (last training)" || echo test) images"
evaluate "$backbone" "$out/backbone.bin"
backbone_new=$new backbone_old=$old
echo "backbone: new_accuracy=$new old_accuracy=$old"
for method in $methods; do
  case "$method" in
    everything) run everything "$backbone" "$out/backbone.bin" train=everything ;;
    last1) run last1 "$backbone" "$out/backbone.bin" train=last:1 ;;
    biases) run biases "$backbone" "$out/backbone.bin" train=biases ;;
    lora)
      if ! pz_have_command lora; then
        echo "skipped: lora (tensor-trainer lora not available)"; continue
      fi
      "$tt" lora "$backbone" --weights "$out/backbone.bin" \
        --rank "$lora_rank" --alpha "$lora_alpha" --layers "$lora_layers" \
        -o "$out/lora-model.ini" > "$out/lora-make.log"
      run lora "$out/lora-model.ini" "$out/lora-model.bin" \
        train="layers:$lora_layers,classifier" ;;
    replay)
      if ! pz_have_property tensor_trainer replay-size; then
        echo "skipped: replay (tensor_trainer replay-size not available)"; continue
      fi
      if [ ! -s "$out/replay.bin" ]; then
        echo "skipped: replay (no $out/replay.bin: run pretrain-backbone.sh again with the replay element available)"
        continue
      fi
      # a copy: the trainer saves its buffer back at the end
      cp "$out/replay.bin" "$out/replay-run.bin"
      run replay "$backbone" "$out/backbone.bin" train="$replay_train" \
        replay-size="$replay_size" replay-per-batch="$replay_k" \
        replay-file="$out/replay-run.bin" ;;
    scratch) run scratch "$backbone" "" train=everything ;;
    *) echo "error: unknown method '$method' in METHODS: use everything," \
         "last1, biases, lora, replay or scratch" >&2; exit 1 ;;
  esac
done

# the same jobs in PyTorch, for their peak RSS (a fresh process a method)
declare -A torch_rss=()
if [ "$torch" = 1 ] && [ "${#results[@]}" -gt 0 ]; then
  ran=$(printf '%s\n' "${results[@]}" | sed 's/^final: method=\([a-z0-9]*\) .*/\1/' | tr '\n' ' ')
  batch=$(sed -n 's/^batch_size = *\([0-9]*\).*/\1/p' "$backbone")
  torch_out=$(METHODS=$ran EPOCHS=$epochs BATCH=$batch REPLAY_SIZE=$replay_size \
    REPLAY_PER_BATCH=$replay_k REPLAY_TRAIN=$replay_train \
    LORA_RANK=$lora_rank LORA_ALPHA=$lora_alpha LORA_LAYERS=$lora_layers \
    /usr/bin/python3 "$top/pipelines/personalize-torch.py" "$shots")
  printf '%s\n' "$torch_out" > "$out/torch.txt"
  grep -v '^torch: ' "$out/torch.txt" || true
  while read -r m r; do torch_rss[$m]=$r; done < <(
    sed -n 's/^torch: method=\([a-z0-9]*\) .* peak_rss_kb=\([0-9]*\) .*/\1 \2/p' <<< "$torch_out")
fi
for i in "${!results[@]}"; do
  m=${results[$i]#final: method=} m=${m%% *}
  results[i]="${results[$i]} torch_peak_rss_kb=${torch_rss[$m]:--}"
done

echo
printf '%-11s %6s %8s %8s %12s %12s %8s %12s\n' method shots new_acc old_acc \
  pool_bytes peak_rss_kb seconds torch_rss_kb
printf '%-11s %6s %8s %8s %12s %12s %8s %12s\n' backbone - "$backbone_new" \
  "$backbone_old" - - - -
for r in "${results[@]}"; do
  awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[i] = kv[2] }
    printf "%-11s %6s %8s %8s %12s %12s %8s %12s\n", v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9] }' <<< "$r"
done
printf '%s\n' "${results[@]}"
