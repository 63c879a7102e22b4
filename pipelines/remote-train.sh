#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Samples produced by one process and trained in another, through
# GStreamer's own network elements (GDP over TCP), here on loopback:
#
#   trainer (listens):  tcpserversrc host=127.0.0.1 port=P ! gdpdepay !
#                         tensor_trainer ... ! fakesink
#   producer:           tensor_datasrc ... ! gdppay !
#                         tcpclientsink host=127.0.0.1 port=P
#
# The training side is the server: it listens first and the producer
# connects to it. That way every sample arrives, in order: tcpclientsink
# blocks on a slow reader (the training paces the producer), while
# tcpserversink would drop what it sends before a client connects, queue
# without bound for a slow one and close with data still queued at EOS.
# GDP carries the caps and each buffer (its tensors arrive as one memory,
# which tensor_trainer accepts); EOS ends both sides, and the trainer saves
# the model before its EOS.
#
# Usage: pipelines/remote-train.sh [cnn|mlp|MODEL.ini]    (default mlp)
# Env:   TRAIN (10000) and VALID (2000) samples, EPOCHS (2), PORT (a free
#        one), HOST (127.0.0.1), OUT (remote-<model>.bin), QUICK=1 (1 epoch
#        of 600 + 200 samples, unless TRAIN, VALID, EPOCHS say otherwise),
#        TT_BUILD_DIR (a built build folder to use instead of building build/)
# Needs: the project's packages (scripts/ensure-deps.sh: GStreamer with
#        gstreamer1.0-plugins-bad for gdppay, the dataset-fashion-mnist
#        images) and iproute2 (ss, to find a free port), installed if
#        missing.
# Ends with "trainer: saved OUT".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
tt_setup iproute2
tt_need fakesink:libgstreamer1.0-0 tensor_datasrc:project \
  tensor_trainer:project tcpserversrc:gstreamer1.0-plugins-base \
  tcpclientsink:gstreamer1.0-plugins-base gdppay:gstreamer1.0-plugins-bad \
  gdpdepay:gstreamer1.0-plugins-bad
tt_need_command gst-launch-1.0:gstreamer1.0-tools ss:iproute2

case "${1:-mlp}" in
  cnn|mlp) model=$top/tests/models/fmnist_${1:-mlp}.ini ;;
  *) model=$1 ;;
esac
name=$(basename "$model" .ini)
if [ "${QUICK:-0}" = 1 ]; then
  train=${TRAIN:-600} valid=${VALID:-200} epochs=${EPOCHS:-1}
else
  train=${TRAIN:-10000} valid=${VALID:-2000} epochs=${EPOCHS:-2}
fi
host=${HOST:-127.0.0.1} out=${OUT:-remote-$name.bin}
data=/usr/share/datasets/fashion-mnist

listening () { ss -ltnH "sport = :$1" 2>/dev/null | grep -q .; }
port=${PORT:-}
if [ -z "$port" ]; then
  for _ in $(seq 50); do
    port=$(( 49152 + RANDOM % 16000 ))
    listening "$port" || break
  done
fi

log=$(mktemp)
trap 'rm -f "$log"; [ -n "${trainer_pid:-}" ] && kill "$trainer_pid" 2>/dev/null || true' EXIT

echo "# trainer: listening on $host:$port, $name, $epochs epoch(s) of $train + $valid samples"
gst-launch-1.0 -m \
  tcpserversrc host="$host" port="$port" ! gdpdepay ! \
  tensor_trainer model-config="$model" num-training-samples="$train" \
    num-validation-samples="$valid" epochs="$epochs" \
    model-save-path="$out" ! \
  fakesink > "$log" 2>&1 &
trainer_pid=$!
for _ in $(seq 100); do
  listening "$port" && break
  kill -0 "$trainer_pid" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.05
done
listening "$port" || { echo "error: the trainer does not listen on $port" >&2; cat "$log"; exit 1; }

echo "# producer: tensor_datasrc -> gdppay -> tcpclientsink $host:$port"
gst-launch-1.0 -q \
  tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
    label-location="$data/train-labels-idx1-ubyte.gz" num-samples="$train" \
    shuffle=true validation-location="$data/t10k-images-idx3-ubyte.gz" \
    validation-label-location="$data/t10k-labels-idx1-ubyte.gz" \
    validation-num-samples="$valid" epochs="$epochs" ! \
  gdppay ! tcpclientsink host="$host" port="$port"
echo "# producer: done (all samples sent)"

status=0
wait "$trainer_pid" || status=$?
trainer_pid=
awk '
  function field(name,   re, v) {
    re = "[ ,]" name "=\\([a-z0-9]+\\)[^,;]*"
    if (!match($0, re)) return ""
    v = substr($0, RSTART, RLENGTH); sub(/^[^)]*\)/, "", v); return v
  }
  /tensor-trainer-epoch/ {
    printf "trainer: epoch=%s/%s samples=%s+%s loss=%.4f accuracy=%.4f val_loss=%.4f val_accuracy=%.4f samples_per_s=%.1f\n",
      field("epoch"), field("epochs"), field("samples"),
      field("validation-samples"), field("loss"), field("accuracy"),
      field("validation-loss"), field("validation-accuracy"),
      field("samples-per-second") }
  /ERROR|WARNING|Additional debug/ { print "trainer: " $0 }' "$log"
[ "$status" -eq 0 ] || { echo "error: the trainer failed ($status)" >&2; exit "$status"; }
[ -s "$out" ] || { echo "error: no model saved" >&2; exit 1; }
echo "trainer: saved $out"
