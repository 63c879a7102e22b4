#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Trains a small 1-D CNN on live sound, labelled while it plays:
#
#   SOURCE ! 8 kHz mono S16LE ! tensor_labeler window=256 hop=128 !
#     tensor_trainer (conv1d model) ! fakesink
#
# With MIC=pulsesrc or MIC=alsasrc the labels come from you: type a class
# number (0..3) and Enter to label what the microphone hears from now on,
# -1 to stop labelling, Ctrl-C to finish (the model is saved). Without
# (the default, MIC=none) audiotestsrc plays four sounds as the four
# classes (a 300 Hz sine, a 1200 Hz sine, a 300 Hz square wave, white
# noise), the sound and the label switching together every SWITCH_EVERY
# buffers of 256 samples, at run time, through tt-launch. A label change
# drops the samples waiting for a window, so no window mixes two sounds.
#
# Usage: pipelines/audio-train.sh [EPOCHS]        (default 5)
# Env:   MIC=none | pulsesrc | alsasrc, TRAIN (960) and VALID (192) windows
#        per epoch, SWITCH_EVERY (8), OUT (audio-conv1d.ttb), QUICK=1 (1
#        epoch of 240 + 48 windows, unless EPOCHS, TRAIN, VALID say
#        otherwise), STALL (tt-launch --stall-timeout, 30 s), TT_BUILD_DIR
#        (a built build folder to use instead of building build/)
# Needs: the project's packages (scripts/ensure-deps.sh); with
#        MIC=alsasrc also gstreamer1.0-alsa (pulsesrc is in
#        gstreamer1.0-plugins-good); installed if missing.
# Ends with "final: val_accuracy=X; model saved to OUT".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
mic=${MIC:-none}
case "$mic" in
  none) tt_setup ;;
  alsasrc) tt_setup gstreamer1.0-alsa ;;
  pulsesrc) tt_setup ;;
  *) echo "error: MIC=$mic: none, pulsesrc or alsasrc" >&2; exit 2 ;;
esac

if [ "${QUICK:-0}" = 1 ]; then epochs=${1:-1} train=${TRAIN:-240} valid=${VALID:-48}
else epochs=${1:-5} train=${TRAIN:-960} valid=${VALID:-192}; fi
every=${SWITCH_EVERY:-8}
out=${OUT:-audio-conv1d.ttb}
model=$top/pipelines/audio-conv1d.ini
tt_need fakesink:libgstreamer1.0-0 tensor_labeler:project \
  tensor_trainer:project
case "$mic" in
  none) tt_need audiotestsrc:gstreamer1.0-plugins-base ;;
  alsasrc) tt_need alsasrc:gstreamer1.0-alsa ;;
  pulsesrc) tt_need pulsesrc:gstreamer1.0-plugins-good ;;
esac
[ "$mic" = none ] || tt_need audioconvert:gstreamer1.0-plugins-base \
  audioresample:gstreamer1.0-plugins-base
sound="audio/x-raw,format=S16LE,channels=1,rate=8000"
sink="tensor_labeler name=labeler num-classes=4 window=256 hop=128 ! \
  tensor_trainer model-config=$model num-training-samples=$train \
    num-validation-samples=$valid epochs=$epochs model-save-path=$out ! \
  fakesink"

if [ "$mic" != none ]; then
  echo "# $mic: type 0..3 + Enter to label what it hears, -1 to pause" \
    "labelling, Ctrl-C to stop and save $out"
  args=(--stall-timeout "${STALL:-30}" --stdin -- "$mic" ! audioconvert ! audioresample ! "$sound" !
    "${sink/num-classes=4/num-classes=4 label=-1}")
else
  echo "# no microphone: audiotestsrc, 4 sounds as classes, sound and label" \
    "switched every $every buffers"
  sounds=("wave=sine freq=300" "wave=sine freq=1200" "wave=square freq=300"
    "wave=white-noise freq=300")
  args=(--stall-timeout "${STALL:-30}" --every "$every")
  for c in 0 1 2 3; do
    step=""
    for kv in ${sounds[$c]}; do step="${step}src.$kv;"; done
    args+=(--step "${step}labeler.label=$c")
  done
  args+=(-- audiotestsrc name=src samplesperbuffer=256 volume=0.5 !
    "$sound" ! "$sink")
fi

# shellcheck disable=SC2086  # the pipeline description is split on purpose
"$build/tools/tt-launch" ${args[@]} |
  awk -v out="$out" -v unit=windows -f "$top/pipelines/live-progress.awk"
exit "${PIPESTATUS[0]}"
