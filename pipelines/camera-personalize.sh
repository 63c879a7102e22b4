#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Personalizes a classifier on live video and shows its predictions on the
# same video while it learns, in one pipeline:
#
#   SOURCE ! tee ! queue ! textoverlay ! SINK                  (the video)
#         tee ! 28x28 GRAY8 ! tensor_labeler ! tee
#                   tee ! queue ! tensor_trainer name=trainer ! queue ! fakesink
#                   tee ! queue ! tensor_predictor trainer=trainer
#                           output=text ! textoverlay.text_sink
#
# The trainer learns from the labelled frames and publishes its weights
# every PUBLISH batches; the predictor switches to them between two frames
# (never a half-updated set) and writes the class it sees, with its
# probability, on the video. Watch the text go from guesses to the right
# class as training goes on.
#
# With a camera (/dev/video0) you label what it sees: type a class number
# (0..3) and Enter, -1 to stop labelling, Ctrl-C to finish (the model is
# saved). Without one (or CAMERA=none) videotestsrc plays four patterns as
# the four classes (ball, snow, pinwheel, checkers-4), switched together
# with the label every SWITCH_EVERY frames through tt-launch.
#
# The queue after tensor_trainer matters: its first output (a GAP, so the
# pipeline can preroll) blocks the thread that pushes it until PLAYING, and
# that thread must stay free to answer queries from upstream of the tee.
#
# Display: with $DISPLAY the video shows in a window; without, one frame a
# second is written as camera-personalize-NNN.png (the text burnt in).
#
# Usage: pipelines/camera-personalize.sh [EPOCHS]    (default 5)
# Env:   CAMERA=/dev/videoN | none, TRAIN (960) and VALID (192) frames per
#        epoch, SWITCH_EVERY (8), PUBLISH (5 batches), OUT
#        (camera-personalized.bin), SINK (a gst-launch sink description),
#        QUICK=1 (1 epoch of 240 + 48 frames, unless EPOCHS, TRAIN, VALID
#        say otherwise), STALL (tt-launch --stall-timeout, 30 s),
#        TT_BUILD_DIR (a built build folder to use instead of building build/),
#        BACKBONE (a folder with backbone.ini and .bin from
#        pipelines/pretrain-backbone.sh to start from; default
#        ./personalize-out when it holds one; none: the MLP from scratch)
# Needs: the project's packages (scripts/ensure-deps.sh) and gstreamer1.0-x
#        (textoverlay; ximagesink for the window), installed if missing.
# Ends with "# N frames with predictions: camera-personalize-*.png" (no
#        display) or "# model saved to OUT".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
tt_setup gstreamer1.0-x

quick=${QUICK:-0}
if [ "$quick" = 1 ]; then epochs=${1:-1} train=${TRAIN:-240} valid=${VALID:-48}
else epochs=${1:-5} train=${TRAIN:-960} valid=${VALID:-192}; fi
every=${SWITCH_EVERY:-8}
publish=${PUBLISH:-5}
out=${OUT:-camera-personalized.bin}
model=$top/pipelines/camera-mlp.ini
camera=${CAMERA:-/dev/video0}
live=0; [ "$camera" != none ] && [ -e "$camera" ] && live=1
classes=$(mktemp --suffix=.txt)
trap 'rm -f "$classes"' EXIT
printf '%s\n' ball snow pinwheel checkers-4 > "$classes"

# personalization: start from a pretrained backbone (BACKBONE=DIR holding
# backbone.ini and backbone.bin, as pipelines/pretrain-backbone.sh writes;
# by default ./personalize-out when it holds one; BACKBONE=none: the
# small MLP from scratch). Its input must be the camera path's 28x28 grey
# frame (1:28:28); the camera's 4 classes are its outputs 0 to 3, and
# its other outputs (the backbone's own classes 4 and up) are never
# labelled here. A backbone of another input, or of fewer than 4 outputs,
# is refused with a message.
backbone=${BACKBONE:-}
[ -z "$backbone" ] && [ -s personalize-out/backbone.ini ] &&
  backbone=personalize-out
[ "$backbone" = none ] && backbone=
num_classes=4 load=""
if [ -n "$backbone" ]; then
  for f in backbone.ini backbone.bin; do
    [ -s "$backbone/$f" ] || { echo "error: BACKBONE=$backbone: no $f" \
      "there (pipelines/pretrain-backbone.sh writes it)" >&2; exit 1; }
  done
  info=$("$build/tools/tensor-trainer" info "$backbone/backbone.ini") ||
    { echo "error: BACKBONE=$backbone: its model does not load" >&2; exit 1; }
  shape=$(sed -n 's/^input0=//p' <<< "$info")
  outputs=$(sed -n 's/^output=1:1://p' <<< "$info")
  if [ "$shape" != 1:28:28 ] || ! grep -q ' inputs=1 ' <<< "$info"; then
    echo "error: BACKBONE=$backbone: backbone.ini takes ${shape:-?}, but the" \
      "camera's path gives one 28x28 grey frame (1:28:28): use a backbone" \
      "trained on 28x28 grey images, or BACKBONE=none" >&2
    exit 1
  fi
  case "$outputs" in '' | *[!0-9]*)
    echo "error: BACKBONE=$backbone: backbone.ini's output is not a vector" \
      "of classes ($(sed -n 's/^output=//p' <<< "$info"))" >&2; exit 1 ;;
  esac
  if [ "$outputs" -lt 4 ]; then
    echo "error: BACKBONE=$backbone: backbone.ini has $outputs outputs, the" \
      "camera 4 classes: use a backbone of 4 outputs or more, or BACKBONE=none" >&2
    exit 1
  fi
  model=$backbone/backbone.ini num_classes=$outputs
  load="model-load-path=$backbone/backbone.bin"
  for c in $(seq 4 $((outputs - 1))); do echo "backbone-$c"; done >> "$classes"
  echo "# from the backbone $backbone (outputs 0-3: the camera's classes," \
    "4-$((outputs - 1)): the backbone's, not labelled here)"
fi

tt_need tee:libgstreamer1.0-0 queue:libgstreamer1.0-0 \
  fakesink:libgstreamer1.0-0 textoverlay:gstreamer1.0-x \
  videoconvert:gstreamer1.0-plugins-base videoscale:gstreamer1.0-plugins-base \
  tensor_labeler:project tensor_trainer:project tensor_predictor:project
if [ "$live" = 1 ]; then tt_need v4l2src:gstreamer1.0-plugins-good
else tt_need videotestsrc:gstreamer1.0-plugins-base; fi
if [ -n "${SINK:-}" ]; then
  sink=$SINK
elif [ -n "${DISPLAY:-}" ]; then
  tt_need autovideosink:gstreamer1.0-plugins-good ximagesink:gstreamer1.0-x
  sink="videoconvert ! autovideosink"
else
  tt_need videorate:gstreamer1.0-plugins-base pngenc:gstreamer1.0-plugins-good \
    multifilesink:gstreamer1.0-plugins-good
  # (the frames of an earlier run would be counted as this one's)
  rm -f camera-personalize-[0-9][0-9][0-9].png
  sink="videorate ! video/x-raw,framerate=1/1 ! videoconvert ! pngenc ! \
    multifilesink location=camera-personalize-%03d.png"
fi
# frames for the whole run: every epoch, the frames dropped at pattern
# switches, and a margin of 300 frames that show the trained model's
# predictions (the trainer drops the frames that come after its last
# epoch, so the video goes on to the source's end)
frames=$(( (train + valid) * epochs * (every + 1) / every + 300 ))
graph="tee name=video ! queue ! \
    textoverlay name=overlay WAIT valignment=top halignment=left \
      shaded-background=true \
      font-desc=\"Sans 14\" ! $sink \
  video. ! videoconvert ! videoscale ! video/x-raw,format=GRAY8,width=28,height=28 ! \
    tensor_labeler name=labeler num-classes=$num_classes LABEL ! tee name=samples ! queue ! \
    tensor_trainer name=trainer model-config=$model $load \
      num-training-samples=$train num-validation-samples=$valid \
      epochs=$epochs model-save-path=$out publish-interval=$publish ! \
    queue ! fakesink \
  samples. ! queue PREDICTQ ! \
    tensor_predictor name=predictor trainer=trainer output=text \
      labels=$classes ! overlay.text_sink"

if [ "$live" = 1 ]; then
  echo "# camera $camera: type 0..3 + Enter to label what it sees, -1 to" \
    "pause labelling, Ctrl-C to stop and save $out"
  args=(--stall-timeout "${STALL:-30}" --stdin -- v4l2src device="$camera" ! videoconvert ! videoscale !
    video/x-raw,width=320,height=240 ! "${graph/LABEL/label=-1}")
  # live: show each frame at once, with the latest prediction; the
  # predictor skips frames rather than hold the camera back
  args=("${args[@]/WAIT/wait-text=false}")
  args=("${args[@]/PREDICTQ/leaky=downstream max-size-buffers=4}")
else
  echo "# no camera: videotestsrc, 4 patterns as classes, pattern and label" \
    "switched every $every frames; predictions written on the video"
  patterns=(ball snow pinwheel checkers-4)
  args=(--stall-timeout "${STALL:-30}" --every "$every" --at video)
  for c in 0 1 2 3; do
    args+=(--step "src.pattern=${patterns[$c]};labeler.label=$c")
  done
  args+=(-- videotestsrc name=src num-buffers=$frames !
    video/x-raw,width=320,height=240,framerate=30/1 ! "${graph/LABEL/}")
  # not live (as fast as it goes): each frame waits for its own
  # prediction, so none is dropped on the way; the frame at which the
  # pattern switches (made with the old pattern) is dropped before the
  # video tee (--at video), from the video as well as from the samples,
  # so that no frame goes without its prediction written on it
  args=("${args[@]/WAIT/wait-text=true}")
  args=("${args[@]/PREDICTQ/}")
fi

set +e
# shellcheck disable=SC2086  # the pipeline description is split on purpose
"$build/tools/tt-launch" ${args[@]} | awk '
  function field(name,   re, v) {
    re = " " name "=[^ ]*"
    if (!match($0, re)) return ""
    v = substr($0, RSTART + 1, RLENGTH - 1); sub(/^[^=]*=/, "", v); return v
  }
  /^tensor-trainer-plan/ {
    printf "trainer: pool %s bytes\n", field("pool-bytes"); fflush(); next }
  /^tensor-predictor-plan/ {
    printf "predictor: inference pool %s bytes\n", field("pool-bytes")
    fflush(); next }
  /^tensor-predictor-weights/ { switches++; next }
  /^tensor-trainer-epoch/ {
    printf "epoch=%s/%s loss=%.4f accuracy=%.4f val_loss=%.4f val_accuracy=%.4f predictor_weight_switches=%d\n",
      field("epoch"), field("epochs"), field("loss"), field("accuracy"),
      field("validation-loss"), field("validation-accuracy"), switches
    fflush(); next }
  /^tensor-predictor-summary/ {
    printf "predictor: %s frames, accuracy %.4f against the labels (from the first, untrained frame on), %s weight sets\n",
      field("samples"), field("accuracy"), field("weights-version"); next }
  /^eos/ { print "# model saved to '"$out"'"; next }
  { print; fflush() }'
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || { echo "error: tt-launch failed ($status)" >&2; exit "$status"; }
if [ -z "${SINK:-}" ] && [ -z "${DISPLAY:-}" ]; then
  pngs=$(find . -maxdepth 1 -name 'camera-personalize-[0-9][0-9][0-9].png' | wc -l)
  [ "$pngs" -gt 0 ] || { echo "error: no frame was written" >&2; exit 1; }
  echo "# $pngs frames with predictions: camera-personalize-*.png"
fi
