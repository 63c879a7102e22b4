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
#   lora         low-rank adapters (tensor-trainer lora), when available
#   replay       everything, with the old classes' samples kept by the
#                pretraining (tensor_trainer replay-*), when available
#   scratch      no pretraining: the same model freshly initialized,
#                everything trains
#
# A method whose tool is missing prints "skipped: METHOD (...)". For each
# it also measures the trainer's pool (its tensor-trainer-plan message),
# the peak RSS of the training run (/usr/bin/time -f %M) and its seconds.
# Runs pretrain-backbone.sh first when OUT/backbone.ini is missing.
#
# Usage: pipelines/personalize.sh [SHOTS]    (default 20)
# Env: OUT (./personalize-out), EPOCHS (15), LR (0.003: the Adam learning
#   rate of the personalization, written into OUT/personal.ini), METHODS (all of the above,
#   space-separated), QUICK=1 (SHOTS 4, 1 epoch, the first 500 test
#   images; the backbone's QUICK=1 too), TT_BUILD_DIR (a built build
#   folder to use instead of building build/)
# Needs: the project's packages (scripts/ensure-deps.sh) and time,
#   installed if missing.
# Prints a table, then one line per method that ran:
#   final: method=M shots=K new_accuracy=X old_accuracy=Y pool_bytes=P peak_rss_kb=R seconds=S
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
# the backbone's INI at the personalization's learning rate (the weights'
# layout is the same: backbone.bin loads into it)
lr=${LR:-0.003}
sed "/^\[Optimizer\]/,/^\[/ s/^learning_rate = .*/learning_rate = $lr/" \
  "$out/backbone.ini" > "$out/personal.ini"
backbone=$out/personal.ini
samples=$((5 * shots))
test_args=()
[ "$tests" -gt 0 ] && test_args=(--samples "$tests")
results=()

# run METHOD MODEL.ini WEIGHTS|"" [tensor_trainer PROPERTY=VALUE...]:
# trains, evaluates, appends the method's final line to results
run () {
  local method=$1 model=$2 weights=$3; shift 3
  local log=$out/$method.log saved=$out/$method.bin load=()
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
  local eval_out new old pool rss
  eval_out=$("$tt" eval "$model" --weights "$saved" \
    --data "$data/t10k-images-idx3-ubyte.gz" \
    --labels "$data/t10k-labels-idx1-ubyte.gz" "${test_args[@]}" --per-class)
  new=$(pz_accuracy "$eval_out" 5 9)
  old=$(pz_accuracy "$eval_out" 0 4)
  pool=$(pz_plan_pool "$log")
  rss=$(tail -1 "$out/$method.rss")
  echo "# $method: $(pz_epochs "$log" | tail -1)"
  results+=("final: method=$method shots=$shots new_accuracy=$new old_accuracy=$old pool_bytes=$pool peak_rss_kb=$rss seconds=$seconds")
}

echo "# $shots shots of each of classes 5-9 ($samples images), $epochs" \
  "epoch(s), from $backbone; evaluated on" \
  "$([ "$tests" -gt 0 ] && echo "the first $tests" || echo "the 10,000") test images"
for method in $methods; do
  case "$method" in
    everything) run everything "$backbone" "$out/backbone.bin" train=everything ;;
    last1) run last1 "$backbone" "$out/backbone.bin" train=last:1 ;;
    biases) run biases "$backbone" "$out/backbone.bin" train=biases ;;
    lora)
      if ! pz_have_command lora; then
        echo "skipped: lora (tensor-trainer lora not available)"; continue
      fi
      "$tt" lora "$backbone" --weights "$out/backbone.bin" --rank 4 \
        -o "$out/lora-model.ini" > "$out/lora-make.log"
      run lora "$out/lora-model.ini" "$out/lora-model.bin" ;;
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
      run replay "$backbone" "$out/backbone.bin" train=everything \
        replay-size=100 replay-per-batch=8 replay-file="$out/replay-run.bin" ;;
    scratch) run scratch "$backbone" "" train=everything ;;
    *) echo "error: unknown method '$method' in METHODS: use everything," \
         "last1, biases, lora, replay or scratch" >&2; exit 1 ;;
  esac
done

echo
printf '%-11s %6s %8s %8s %12s %12s %8s\n' method shots new_acc old_acc \
  pool_bytes peak_rss_kb seconds
for r in "${results[@]}"; do
  awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[i] = kv[2] }
    printf "%-11s %6s %8s %8s %12s %12s %8s\n", v[2], v[3], v[4], v[5], v[6], v[7], v[8] }' <<< "$r"
done
printf '%s\n' "${results[@]}"
