#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Soak: does a long training pipeline hold its memory flat?
#
#   gst-launch-1.0 tensor_datasrc (a small IDX subset, shuffled, many
#     epochs) ! tensor_trainer (a tiny model) ! fakesink
#
# pushes SAMPLES (1,000,000) small samples: the first SUBSET (1,000)
# Fashion-MNIST training images with their labels, written to a small IDX
# pair, repeated for SAMPLES / SUBSET epochs (shuffled each epoch), each
# epoch training a tiny CNN (conv2d 4x3x3, relu, 2x2 max pooling, 10
# outputs, adam) in batches of 16 plus a validation
# pass over VALID (100) other images, with per-epoch messages and
# progress messages on the bus, as a long-running pipeline would. Its
# resident memory (VmRSS of /proc/PID/status) is sampled every INTERVAL
# (1) seconds while it runs.
#
# Prints the RSS curve (one line per sample), then the summary: warm-up
# RSS (at the end of the warm-up: the first WARMUP_PCT (20) percent of the
# run's samples, by time), final RSS (the last sample), the maximum, and
# the growth after warm-up (the largest sample after warm-up minus the
# warm-up RSS). PASS when that growth is below LIMIT_KB (1024), else FAIL
# (exit 1). Not part of CI (about 20 s on the development machine).
#
# Usage: tests/bench/soak.sh
# Env:   SAMPLES (1000000), SUBSET (1000), VALID (100), INTERVAL (1),
#        WARMUP_PCT (20), LIMIT_KB (1024), BUILD (build)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$top/${BUILD:-build}
"$top/scripts/build.sh" "$build" >/dev/null

samples=${SAMPLES:-1000000} subset=${SUBSET:-1000} valid=${VALID:-100}
interval=${INTERVAL:-1} warmup_pct=${WARMUP_PCT:-20}
limit_kb=${LIMIT_KB:-1024}
epochs=$(( (samples + subset - 1) / subset ))
data=/usr/share/datasets/fashion-mnist
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export GST_PLUGIN_PATH="$build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"

tmp=$(mktemp -d)
pid=
cleanup () {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# the first SUBSET + VALID samples of the training set as plain IDX files
python3 - "$data" "$tmp" "$subset" "$valid" <<'EOF'
import gzip, struct, sys
src, out, n, v = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
img = gzip.open(src + "/train-images-idx3-ubyte.gz").read()
lab = gzip.open(src + "/train-labels-idx1-ubyte.gz").read()
rows, cols = struct.unpack(">II", img[8:16])
size = rows * cols
def write(name, first, count):
    with open(out + "/" + name + "-images.idx", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, count, rows, cols))
        f.write(img[16 + first * size:16 + (first + count) * size])
    with open(out + "/" + name + "-labels.idx", "wb") as f:
        f.write(struct.pack(">II", 0x801, count))
        f.write(lab[8 + first:8 + first + count])
write("train", 0, n)
write("valid", n, v)
EOF
cat >"$tmp/tiny.ini" <<'EOF'
[Model]
type = NeuralNetwork
batch_size = 16
loss = cross

[Optimizer]
type = adam
learning_rate = 0.001

[input]
type = input
input_shape = 1:28:28
normalization = true

[conv]
type = conv2d
filters = 4
kernel_size = 3,3
padding = same
activation = relu

[pool]
type = pooling2d
pooling = max
pool_size = 2,2
stride = 2,2

[flat]
type = flatten

[output]
type = fully_connected
unit = 10
activation = softmax
EOF

echo "# soak: $epochs epochs x $subset samples (+ $valid validation) =" \
  "$((epochs * subset)) training samples through tensor_datasrc !" \
  "tensor_trainer ! fakesink; VmRSS every $interval s"
start=$(date +%s.%N)
gst-launch-1.0 -q \
  tensor_datasrc location="$tmp/train-images.idx" \
    label-location="$tmp/train-labels.idx" num-samples="$subset" \
    validation-location="$tmp/valid-images.idx" \
    validation-label-location="$tmp/valid-labels.idx" \
    validation-num-samples="$valid" shuffle=true seed=7 epochs="$epochs" ! \
  tensor_trainer model-config="$tmp/tiny.ini" \
    num-training-samples="$subset" num-validation-samples="$valid" \
    epochs="$epochs" progress-interval=20 \
    model-save-path="$tmp/tiny.ttb" ! \
  fakesink >"$tmp/launch.log" 2>&1 &
pid=$!

: >"$tmp/rss"
while kill -0 "$pid" 2>/dev/null; do
  rss=$(sed -n 's/^VmRSS:[ \t]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" \
    2>/dev/null || true)
  [ -n "$rss" ] && echo "$(date +%s.%N) $rss" >>"$tmp/rss"
  sleep "$interval"
done
set +e
wait "$pid"
rc=$?
set -e
pid=
end=$(date +%s.%N)
if [ "$rc" -ne 0 ] || [ ! -s "$tmp/tiny.ttb" ]; then
  echo "soak: the pipeline failed (exit status $rc):"
  tail -20 "$tmp/launch.log"
  exit 1
fi

awk -v start="$start" -v end="$end" -v pct="$warmup_pct" \
    -v limit="$limit_kb" -v samples="$((epochs * subset))" '
  { t[NR] = $1 - start; r[NR] = $2 }
  END {
    n = NR
    if (n < 3) { print "soak: too few RSS samples (" n ")"; exit 1 }
    # warm-up: the first pct% of the run (samples flow at a steady rate)
    w = 1
    while (w < n && t[w] < (end - start) * pct / 100) w++
    max = 0; after = 0
    for (i = 1; i <= n; i++) {
      if (r[i] > max) max = r[i]
      if (i > w && r[i] > after) after = r[i]
      printf "#   t=%7.1f s  VmRSS %8d kB%s\n", t[i], r[i], i == w ? "  <- end of warm-up" : ""
    }
    growth = after - r[w]
    secs = end - start
    printf "samples %d in %.1f s (%.0f samples/s), %d RSS samples\n", samples, secs, samples / secs, n
    printf "warm-up RSS %.1f MB (t=%.0f s), final RSS %.1f MB, max %.1f MB, growth after warm-up %+d kB (final - warm-up %+d kB)\n",
      r[w] / 1024, t[w], r[n] / 1024, max / 1024, growth, r[n] - r[w]
    if (growth < limit) { printf "PASS: growth after warm-up %d kB < %d kB\n", growth, limit; exit 0 }
    printf "FAIL: growth after warm-up %d kB >= %d kB\n", growth, limit; exit 1
  }' "$tmp/rss"
