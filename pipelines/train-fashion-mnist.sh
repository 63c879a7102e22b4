#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job: trains a model on Debian's Fashion-MNIST
# (dataset-fashion-mnist) through GStreamer,
#
#   gst-launch-1.0 tensor_datasrc ! tensor_trainer ! fakesink
#
# on the 60,000 training images, validating on the 10,000 test images after
# every epoch; shows a live progress line from the trainer's bus messages,
# saves the model, prints the final accuracy and plots loss and accuracy per
# epoch (gnuplot, PNG). It ends with a second pipeline,
#
#   gst-launch-1.0 tensor_datasrc ! tensor_predictor ! fakesink
#
# that runs the saved model over the 10,000 test images and prints the
# accuracy it measured, which must equal the trainer's last validation
# accuracy (the script fails otherwise). On a fresh Debian 12 machine, as root, it installs
# what is missing and builds first.
#
# Usage: pipelines/train-fashion-mnist.sh [cnn|mlp|MODEL.ini] [EPOCHS]
#   default: cnn (tests/models/fmnist_cnn.ini); EPOCHS: the model's [Model]
#   epochs (5 for both)
# Env: QUICK=1 (1 epoch of the first 600 training images, validated on the
#   first 200 test images, unless EPOCHS says otherwise), TT_BUILD_DIR (a
#   built build folder to use instead of building build/)
# Needs: the project's packages (scripts/ensure-deps.sh: GStreamer, the
#   dataset-fashion-mnist images, gnuplot-nox), installed if missing.
# Ends with "plot: fmnist-<model>.png (figures: fmnist-<model>.tsv)".
# Writes here: fmnist-<model>.bin (the weights, atomically at the end),
#   fmnist-<model>.tsv (the figures per epoch), fmnist-<model>.png (the plot)
#
# Validation: tensor_datasrc is given both file pairs; each epoch it pushes
# the training images (shuffled, seeded), then the test images, and
# tensor_trainer trains on the first num-training-samples buffers of the
# epoch and evaluates the next num-validation-samples. The two sets never
# mix.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
tt_setup
tt_need fakesink:libgstreamer1.0-0 tensor_datasrc:project \
  tensor_trainer:project tensor_predictor:project
tt_need_command gst-launch-1.0:gstreamer1.0-tools gnuplot:gnuplot-nox \
  stdbuf:coreutils

case "${1:-cnn}" in
  cnn|mlp) model=$top/tests/models/fmnist_${1:-cnn}.ini ;;
  *) model=$1 ;;
esac
[ -f "$model" ] || { echo "error: no model file $model" >&2; exit 1; }
name=$(basename "$model" .ini)
data=/usr/share/datasets/fashion-mnist
train=60000 valid=10000
quick=${QUICK:-0}
[ "$quick" = 1 ] && train=600 valid=200

# [Model] epochs and batch_size (iniparser: case-insensitive, # ; comments)
ini_model_key () {
  awk -F= -v key="$1" '
    /^[ \t]*\[/ { s = tolower($0); gsub(/[][ \t]/, "", s); next }
    s == "model" { k = tolower($1); gsub(/[ \t]/, "", k)
      if (k == key) { v = $2; sub(/[#;].*/, "", v); gsub(/[ \t]/, "", v); print v; exit } }' "$model"
}
if [ $# -ge 2 ]; then epochs=$2
elif [ "$quick" = 1 ]; then epochs=1
else epochs=$(ini_model_key epochs); fi
epochs=${epochs:-1}
batch=$(ini_model_key batch_size); batch=${batch:-32}
# about 40 progress messages per epoch
interval=$(( (train / batch + 39) / 40 ))
tty=0; [ -t 2 ] && tty=1

out=fmnist-$name
echo "# training $name ($model) for $epochs epoch(s) on $train images," \
  "validating on $valid, through gst-launch-1.0"
printf 'epoch\tloss\taccuracy\tval_loss\tval_accuracy\tsamples_per_s\tseconds\n' > "$out.tsv"

# gst-launch prints the bus messages (-m) as it gets them; stdbuf keeps its
# output line-buffered through the pipe so the progress line is live
set +e
stdbuf -oL gst-launch-1.0 -m \
  tensor_datasrc \
    location="$data/train-images-idx3-ubyte.gz" \
    label-location="$data/train-labels-idx1-ubyte.gz" \
    num-samples=$train shuffle=true seed=1 \
    validation-location="$data/t10k-images-idx3-ubyte.gz" \
    validation-label-location="$data/t10k-labels-idx1-ubyte.gz" \
    validation-num-samples=$valid epochs="$epochs" ! \
  tensor_trainer model-config="$model" \
    num-training-samples=$train num-validation-samples=$valid \
    epochs="$epochs" model-save-path="$out.bin" \
    progress-interval=$interval ! \
  fakesink 2>&1 | awk -v tty=$tty -v tsv="$out.tsv" -v bin="$out.bin" '
    function field(name,   re, v) {
      re = "[ ,]" name "=\\([a-z0-9]+\\)[^,;]*"
      if (!match($0, re)) return ""
      v = substr($0, RSTART, RLENGTH); sub(/^[^)]*\)/, "", v); return v
    }
    function clear() { if (tty && live) { printf "\r%80s\r", "" > "/dev/stderr"; live = 0 } }
    /tensor-trainer-plan/ {
      printf "plan: %s in %.2f ms: pool %d bytes (lower bound %d, no reuse %d)\n",
        field("plan-loaded") == "true" ? "stored plan validated" : "planned",
        field("plan-ms"), field("pool-bytes"), field("lower-bound"),
        field("naive-bytes"); fflush(); next
    }
    /tensor-trainer-progress/ {
      total = field("total"); done = field("samples"); phase = field("phase")
      bar = ""; n = int(20 * done / total)
      for (i = 0; i < 20; i++) bar = bar (i < n ? "#" : ".")
      line = sprintf("epoch %s/%s %-10s [%s] %6d/%d loss=%.4f accuracy=%.4f %7.0f samples/s",
        field("epoch"), field("epochs"), phase, bar, done, total,
        field("loss"), field("accuracy"), field("samples-per-second"))
      if (tty) { printf "\r%s", line > "/dev/stderr"; live = 1 }
      else if (++quiet % 10 == 0) print line
      fflush(); next
    }
    /tensor-trainer-epoch/ {
      clear()
      e = field("epoch"); vacc = field("validation-accuracy")
      printf "epoch=%s/%s loss=%.6f accuracy=%.4f val_loss=%.6f val_accuracy=%.4f samples_per_s=%.1f seconds=%.3f\n",
        e, field("epochs"), field("loss"), field("accuracy"),
        field("validation-loss"), vacc, field("samples-per-second"),
        field("seconds")
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e, field("loss"),
        field("accuracy"), field("validation-loss"), vacc,
        field("samples-per-second"), field("seconds") >> tsv
      fflush(); next
    }
    /ERROR|WARNING|error:|warning:|Additional debug/ { clear(); print; fflush(); next }
    /Got EOS from element "pipeline/ { clear(); print "# saved " bin; fflush() }'
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || { echo "error: gst-launch-1.0 failed ($status)" >&2; exit "$status"; }

last=$(tail -1 "$out.tsv")
awk -F'\t' -v n="$(($(wc -l < "$out.tsv") - 1))" -v bin="$out.bin" \
  -v valid=$valid 'END {
  printf "final: val_accuracy=%.4f val_loss=%.4f after %d epoch(s) (%d test images); model %s\n",
    $5, $4, n, valid, bin }' <<< "$last"

# The trained model in use: tensor_predictor (inference only: its own,
# smaller pool) over the 10,000 test images, one buffer at a time; its
# accuracy must be the trainer's last validation accuracy, the same images
# through the same weights, in the same batches: the models' input
# normalization is nntrainer's, over the whole batch (one min and max), so
# the predictor runs at the trainer's batch size (at its default of 1,
# each image is scaled by its own min and max: 0.9019 against 0.9020 here)
echo "# tensor_predictor over the $valid test images with $out.bin"
summary=$(gst-launch-1.0 -m \
  tensor_datasrc location="$data/t10k-images-idx3-ubyte.gz" \
    label-location="$data/t10k-labels-idx1-ubyte.gz" num-samples=$valid ! \
  tensor_predictor model-config="$model" model-load-path="$out.bin" \
    batch-size="$batch" ! \
  fakesink 2>&1 | grep -E 'tensor-predictor-(plan|summary)|ERROR|error:')
predicted=$(awk -v last="$last" '
  function field(name,   re, v) {
    re = "[ ,]" name "=\\([a-z0-9]+\\)[^,;]*"
    if (!match($0, re)) return ""
    v = substr($0, RSTART, RLENGTH); sub(/^[^)]*\)/, "", v); return v
  }
  /tensor-predictor-plan/ { pool = field("pool-bytes") }
  /tensor-predictor-summary/ {
    split(last, f, "\t"); want = sprintf("%.0f", f[5] * field("labelled"))
    printf "predictor: accuracy=%.4f (%d of %d test images), %.0f images/s, %.1f us per image, inference pool %d bytes; trainer: val_accuracy=%.4f -> %s\n",
      field("accuracy"), field("correct"), field("labelled"),
      field("samples-per-second"), field("mean-latency-us"), pool, f[5],
      field("correct") == want ? "equal" : "DIFFERENT"
  }' <<< "$summary")
if [ -z "$predicted" ]; then
  echo "error: tensor_predictor failed: $summary" >&2; exit 1
fi
echo "$predicted"
case "$predicted" in *DIFFERENT) echo "error: the predictor's accuracy differs from the trainer's" >&2; exit 1 ;; esac

gnuplot <<EOF
set terminal pngcairo noenhanced size 1000,420 font "sans,10"
set output "$out.png"
set multiplot layout 1,2 title "$name on Fashion-MNIST (tensor_trainer)"
set key autotitle columnhead
set xlabel "epoch"
set xrange [0.5:$(($(wc -l < "$out.tsv") - 1)).5]
set xtics 1
set grid
set title "loss"
plot "$out.tsv" using 1:2 with linespoints lw 2 title "training", \
     "" using 1:4 with linespoints lw 2 title "validation"
set title "accuracy"
set yrange [*:1]
plot "$out.tsv" using 1:3 with linespoints lw 2 title "training", \
     "" using 1:5 with linespoints lw 2 title "validation"
unset multiplot
EOF
echo "plot: $out.png (figures: $out.tsv)"
