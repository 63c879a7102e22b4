#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Smoke test of one script of pipelines/: runs it as a user would, in its
# no-camera, no-microphone mode and its short configuration (QUICK=1), in a
# folder of its own, under a time limit, and checks what it printed last and
# the files it wrote. A script that hangs is killed at the limit and fails.
#
# Usage: smoke.sh SCRIPT BUILD_DIR OUT_DIR [LIMIT_SECONDS]
#   SCRIPT: train-fashion-mnist, train-transformer (train-fashion-mnist.sh
#   with tests/models/zoo_transformer.ini), camera-train, camera-personalize,
#   audio-train, plan-model, remote-train, classify-labels,
#   federated-train, pretrain-backbone, personalize-methods
#   (personalize.sh), pretrain-backbone-torch (.py), personalize-torch
#   (.py, METHODS="lora replay"), or missing-element
#   (camera-personalize given an element that does not exist: it must fail
#   at once, naming it). BUILD_DIR: a built build folder (TT_BUILD_DIR), so
#   the script builds nothing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
name=$1 build=$2 out=$3 limit=${4:-60}

# the user's settings must not change what is tested
unset CAMERA MIC DISPLAY SINK TRAIN VALID EPOCHS SWITCH_EVERY PUBLISH OUT \
  PORT HOST STALL IMAGES ROUNDS METHODS GROW REPLAY_SIZE BACKBONE
export QUICK=1 CAMERA=none MIC=none TT_BUILD_DIR=$build

rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
script=$name expect_fail=0 args=() ext=sh
case "$name" in
  train-transformer)
    script=train-fashion-mnist args=("$top/tests/models/zoo_transformer.ini") ;;
  personalize-methods) script=personalize ;;
  pretrain-backbone-torch) ext=py ;;
  personalize-torch) ext=py; export METHODS="lora replay" ;;
  missing-element)
    script=camera-personalize expect_fail=1
    export SINK="videoconvert ! tt_no_such_sink" ;;
esac

start=$EPOCHREALTIME
timeout -k 5 "$limit" "$top/pipelines/$script.$ext" "${args[@]}" > stdout.txt \
  2> stderr.txt
rc=$?
seconds=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

fail () {
  echo "FAIL $name: $*"
  echo "--- last lines of standard output"; tail -n 15 stdout.txt
  echo "--- last lines of standard error"; tail -n 15 stderr.txt
  exit 1
}
[ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] &&
  fail "hung: killed after $limit s"
last=$(tail -n 1 stdout.txt)

# FILE is a non-empty file (a PNG if its name says so)
has_file () {
  [ -s "$1" ] || fail "no file $1 written"
  case "$1" in
    *.png) [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = \
        89504e470d0a1a0a ] || fail "$1 is not a PNG" ;;
  esac
}
# the last line of standard output matches the extended regex
last_is () {
  [[ $last =~ $1 ]] || fail "last line \"$last\" does not match /$1/"
}
# some line of standard output matches the extended regex
has_line () {
  grep -Eq "$1" stdout.txt || fail "no line of its output matches /$1/"
}

if [ "$expect_fail" = 1 ]; then
  [ "$rc" -ne 0 ] || fail "exit status 0 with a missing element"
  grep -q 'no element "tt_no_such_sink"' stderr.txt ||
    fail "its error does not name the missing element"
  echo "ok $name: failed as it must (exit $rc) in $seconds s:"
  grep 'tt_no_such_sink' stderr.txt
  exit 0
fi
[ "$rc" -eq 0 ] || fail "exit status $rc"

case "$name" in
  train-fashion-mnist)
    last_is '^plot: fmnist-fmnist_cnn\.png \(figures: fmnist-fmnist_cnn\.tsv\)$'
    has_line '^epoch=1/1 loss=[0-9.]+ accuracy=[0-9.]+ val_loss=[0-9.]+ val_accuracy=[0-9.]+ '
    has_line '^predictor: accuracy=[0-9.]+ \([0-9]+ of 200 test images\).* -> equal$'
    has_file fmnist-fmnist_cnn.bin; has_file fmnist-fmnist_cnn.png
    [ "$(wc -l < fmnist-fmnist_cnn.tsv)" -eq 2 ] ||
      fail "fmnist-fmnist_cnn.tsv: not a header and one epoch" ;;
  train-transformer)
    last_is '^plot: fmnist-zoo_transformer\.png \(figures: fmnist-zoo_transformer\.tsv\)$'
    has_line '^epoch=1/1 loss=[0-9.]+ accuracy=[0-9.]+ val_loss=[0-9.]+ val_accuracy=[0-9.]+ '
    has_line '^predictor: accuracy=[0-9.]+ \([0-9]+ of 200 test images\).* -> equal$'
    has_file fmnist-zoo_transformer.bin; has_file fmnist-zoo_transformer.png ;;
  camera-train)
    last_is '^final: val_accuracy=[0-9.]+; model saved to camera-mlp\.bin$'
    has_line '^epoch=1/1 loss=[0-9.]+ accuracy=[0-9.]+ val_loss=[0-9.]+ val_accuracy=[0-9.]+ frames_per_s=[0-9]+$'
    has_file camera-mlp.bin ;;
  camera-personalize)
    last_is '^# [1-9][0-9]* frames with predictions: camera-personalize-\*\.png$'
    has_line '^epoch=1/1 loss=[0-9.]+ accuracy=[0-9.]+ .* predictor_weight_switches=[1-9]'
    has_line '^predictor: [1-9][0-9]* frames, accuracy [0-9.]+ '
    # the predictions go on after the training (288 samples at QUICK=1)
    # to the source's end: the trainer drops what comes after its last
    # epoch instead of stopping the tee (about 550 frames)
    frames=$(sed -n 's/^predictor: \([0-9]*\) frames.*/\1/p' stdout.txt)
    [ "${frames:-0}" -ge 450 ] ||
      fail "the predictor saw ${frames:-no} frames: the video stopped with the training"
    has_line '^# model saved to camera-personalized\.bin$'
    has_file camera-personalized.bin; has_file camera-personalize-000.png ;;
  audio-train)
    last_is '^final: val_accuracy=[0-9.]+; model saved to audio-conv1d\.ttb$'
    has_line '^epoch=1/1 loss=[0-9.]+ accuracy=[0-9.]+ val_loss=[0-9.]+ val_accuracy=[0-9.]+ windows_per_s=[0-9]+$'
    has_file audio-conv1d.ttb ;;
  plan-model)
    last_is '^saved plan-out/fmnist_cnn\.b64\.bin$'
    has_line '^plan-loaded=true '
    has_line '^epoch=1/1 loss=[0-9.]+ accuracy=[0-9.]+ val_loss=[0-9.]+ val_accuracy=[0-9.]+ '
    has_file plan-out/fmnist_cnn.b64.opt.ini; has_file plan-out/fmnist_cnn.b64.bin ;;
  remote-train)
    last_is '^trainer: saved remote-fmnist_mlp\.bin$'
    has_line '^trainer: epoch=1/1 samples=600\+200 loss=[0-9.]+ accuracy=[0-9.]+ val_loss=[0-9.]+ val_accuracy=[0-9.]+ '
    has_file remote-fmnist_mlp.bin ;;
  classify-labels)
    # nnstreamer's decoder runs where it is installed (NNSTREAMER_PREFIX
    # or the system's plugins), and is skipped, saying so, elsewhere
    last_is '^classified 20 test images: [0-9]+ of 20 correct; nnstreamer image_labeling: (agrees on all 20|skipped \(not installed\))$'
    has_line '^# tensor_predictor output=text over the first 20 test images$'
    has_file fmnist-labels.txt; has_file classify-mlp.bin
    [ "$(wc -l < classify-predictor.txt)" -eq 20 ] ||
      fail "classify-predictor.txt: not 20 lines"
    grep -Pvq '^[^\t]+\t[^\t]+ \([0-9]+%\)$' classify-predictor.txt &&
      fail "classify-predictor.txt: a line is not CLASS<tab>NAME (P%)" ;;
  federated-train)
    # QUICK=1: 2 rounds of 3 devices on 1,000 class-skewed images each
    last_is '^final: global val_accuracy=0\.[0-9]+ after 2 rounds \(3 clients\)$'
    has_line '^round 1: global val_accuracy=0\.[0-9]+ '
    has_line '^round 2: global val_accuracy=0\.[0-9]+ ' ;;
  # personalization: the output's form, not its accuracies
  pretrain-backbone)
    last_is '^final: backbone=personalize-out/backbone\.ini weights=personalize-out/backbone\.bin classes=0-4 val_accuracy=(0\.[0-9]+|1\.0+) epochs=1$'
    has_line '^epoch=1/1 loss=[0-9.]+ accuracy=[0-9.]+ val_loss=[0-9.]+ val_accuracy=[0-9.]+ '
    has_file personalize-out/backbone.ini; has_file personalize-out/backbone.bin ;;
  pretrain-backbone-torch)
    # PyTorch is optional: without it the script says so
    last_is '^(final: torch_accuracy=0\.[0-9]+ tensor_trainer_accuracy=0\.[0-9]+ classes=0-4 test_images=[1-9][0-9]*|skipped: torch not available .*)$'
    case "$last" in final:*)
      has_file personalize-out/torch-backbone.onnx
      has_file personalize-out/torch-backbone.bin ;;
    esac ;;
  personalize-methods)
    num='(0\.[0-9]+|1\.0+)'
    has_line "^backbone: new_accuracy=$num old_accuracy=$num$"
    for m in everything last1 biases lora replay scratch; do
      has_line "^final: method=$m shots=4 new_accuracy=$num old_accuracy=$num pool_bytes=[1-9][0-9]* peak_rss_kb=[1-9][0-9]* seconds=[0-9]+\.[0-9]+ torch_peak_rss_kb=-$"
    done
    # the lines are the last ones, one per method that ran
    n=$(grep -c '^final: method=' stdout.txt)
    [ "$(tail -n "$n" stdout.txt | grep -c '^final: method=')" -eq "$n" ] ||
      fail "the final lines are not the last ones"
    grep -q '^# no backbone in personalize-out: pipelines/pretrain-backbone.sh first$' \
      stdout.txt || fail "the backbone was not trained first"
    has_file personalize-out/backbone.bin; has_file personalize-out/everything.bin ;;
  # the PyTorch side of personalize.sh's memory comparison
  personalize-torch)
    last_is '^(torch: method=replay shots=4 peak_rss_kb=[1-9][0-9]* import_rss_kb=[1-9][0-9]* seconds=[0-9.]+|skipped: torch not available .*)$'
    case "$last" in torch:*)
      has_line '^torch: method=lora shots=4 peak_rss_kb=[1-9][0-9]* import_rss_kb=[1-9][0-9]* seconds=[0-9.]+$' ;;
    esac ;;
  *) echo "smoke.sh: no checks for $name" >&2; exit 2 ;;
esac
echo "ok $name in $seconds s: $last"
