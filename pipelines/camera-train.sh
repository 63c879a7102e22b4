#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Trains a small classifier on live video, labelled while it plays:
#
#   SOURCE ! 28x28 GRAY8 ! tensor_labeler ! tensor_trainer ! fakesink
#
# With a camera (/dev/video0, v4l2src) the labels come from you: type a class
# number (0..3) and Enter to label what the camera sees from now on, -1 to
# stop labelling (frames are dropped), Ctrl-C to finish (the model is saved).
# Without a camera (or with CAMERA=none) videotestsrc plays four patterns as
# the four classes (ball, snow, pinwheel, checkers-4) and the pattern and
# the label switch together every SWITCH_EVERY frames, at run time, through
# tt-launch (tools/tt-launch.c: gst-launch plus property changes on a
# schedule or from standard input).
#
# Usage: pipelines/camera-train.sh [EPOCHS]        (default 5)
# Env:   CAMERA=/dev/videoN | none, TRAIN (960) and VALID (192) frames per
#        epoch, SWITCH_EVERY (8), OUT (camera-mlp.bin), QUICK=1 (1 epoch of
#        240 + 48 frames, unless EPOCHS, TRAIN, VALID say otherwise), STALL
#        (tt-launch --stall-timeout, 30 s), TT_BUILD_DIR (a built build
#        folder to use instead of building build/)
# Needs: the project's packages (scripts/ensure-deps.sh), installed if
#        missing.
# Ends with "final: val_accuracy=X; model saved to OUT".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
tt_setup

if [ "${QUICK:-0}" = 1 ]; then epochs=${1:-1} train=${TRAIN:-240} valid=${VALID:-48}
else epochs=${1:-5} train=${TRAIN:-960} valid=${VALID:-192}; fi
every=${SWITCH_EVERY:-8}
out=${OUT:-camera-mlp.bin}
model=$top/pipelines/camera-mlp.ini
camera=${CAMERA:-/dev/video0}
live=0; [ "$camera" != none ] && [ -e "$camera" ] && live=1
tt_need fakesink:libgstreamer1.0-0 videoconvert:gstreamer1.0-plugins-base \
  videoscale:gstreamer1.0-plugins-base tensor_labeler:project \
  tensor_trainer:project
if [ "$live" = 1 ]; then tt_need v4l2src:gstreamer1.0-plugins-good
else tt_need videotestsrc:gstreamer1.0-plugins-base; fi
frames="video/x-raw,format=GRAY8,width=28,height=28"
sink="tensor_labeler name=labeler num-classes=4 ! \
  tensor_trainer model-config=$model num-training-samples=$train \
    num-validation-samples=$valid epochs=$epochs model-save-path=$out ! \
  fakesink"

if [ "$live" = 1 ]; then
  echo "# camera $camera: type 0..3 + Enter to label what it sees, -1 to" \
    "pause labelling, Ctrl-C to stop and save $out"
  # nothing is labelled until a class is chosen
  args=(--stall-timeout "${STALL:-30}" --stdin -- v4l2src device="$camera" ! videoconvert ! videoscale !
    "$frames" ! "${sink/num-classes=4/num-classes=4 label=-1}")
else
  echo "# no camera: videotestsrc, 4 patterns as classes, pattern and label" \
    "switched every $every frames"
  patterns=(ball snow pinwheel checkers-4)
  args=(--stall-timeout "${STALL:-30}" --every "$every")
  for c in 0 1 2 3; do
    args+=(--step "src.pattern=${patterns[$c]};labeler.label=$c")
  done
  args+=(-- videotestsrc name=src ! "$frames,framerate=30/1" ! "$sink")
fi

# shellcheck disable=SC2086  # the pipeline description is split on purpose
"$build/tools/tt-launch" ${args[@]} |
  awk -v out="$out" -v unit=frames -f "$top/pipelines/live-progress.awk"
exit "${PIPESTATUS[0]}"
