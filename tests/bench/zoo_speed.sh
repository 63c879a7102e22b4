#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Training speed and peak memory of the model zoo (tests/models/zoo_*.ini),
# ours against PyTorch (Debian's python3-torch) at its best setting,
# measured side by side in one run at batch 32, on one thread and on two.
#
# Ours: tests/bench/seq_speed.c (seq-speed), synthetic samples made before
# the clock starts, the last of EPOCHS epochs timed. PyTorch:
# tests/bench/torch_zoo.py, the same network built from the same INI, the
# same kind of data, its best of foreach Adam or not and channels-last or
# not (searched on warm-up batches; with attention also
# nn.MultiheadAttention's computation or a manual one), and, on two threads, its faster of
# one and two threads. Peak RSS: /usr/bin/time's maximum resident set
# size of each process. Each figure is the median of RUNS runs; ours and
# PyTorch's alternate within a run.
#
# The multiply-add rate: samples/s x (forward + backward multiply-adds of
# a sample, `tensor-trainer info`) against THREADS x one core's best fp32
# multiply-add rate measured by tests/bench/fma_peak.c.
#
# Usage: tests/bench/zoo_speed.sh
# Env:   MODELS ("zoo_mobilenet_v2 zoo_ds_cnn zoo_resnet18
#        zoo_transformer"), RUNS (3), THREADS ("1 2"), EPOCHS (2),
#        BUILD_DIR ("$top/build"); samples per epoch: zoo_mobilenet_v2 512,
#        zoo_ds_cnn 2048, zoo_resnet18 128, zoo_transformer 2048, others
#        512 (SAMPLES overrides them all)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$top/build}
"$top/scripts/ensure-deps.sh" python3-torch python3-numpy time
"$top/scripts/build.sh" "$build"

runs=${RUNS:-3}
epochs=${EPOCHS:-2}
batch=32
cli=$build/tools/tensor-trainer
bench=$build/tests/seq-speed
# PyTorch's OpenMP threads spin-wait; on a busy 2-core machine that costs
# it dearly, so let them sleep (fair to it, changes nothing for us)
export OMP_WAIT_POLICY=passive

field () { sed -n "s/.*$1=\([^ ]*\).*/\1/p" | tail -1; }
median () { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
samples_for () {
  if [ -n "${SAMPLES:-}" ]; then echo "$SAMPLES"; return; fi
  case $1 in
    zoo_mobilenet_v2) echo 512 ;;
    zoo_ds_cnn) echo 2048 ;;
    zoo_resnet18) echo 128 ;;
    zoo_transformer) echo 2048 ;;
    *) echo 512 ;;
  esac
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

peak=$("$build/tests/fma-peak")
peak_gmacs=$(echo "$peak" | field fma_peak_gmacs)
echo "# $(date -u +%FT%TZ) $(git -C "$top" rev-parse --short HEAD) $peak" \
  "batch=$batch runs=$runs epochs=$epochs"
printf '%-22s %3s %9s %9s %6s %8s %8s %8s %8s\n' model thr "ours s/s" \
  "torch s/s" ratio "ours MB" "torch MB" "GMAC/s" "of peak"
for threads in ${THREADS:-1 2}; do
  for model in ${MODELS:-zoo_mobilenet_v2 zoo_ds_cnn zoo_resnet18 zoo_transformer}; do
    ini=$top/tests/models/$model.ini
    samples=$(samples_for "$model")
    info=$("$cli" info "$ini" --batch "$batch")
    macs=$(( $(echo "$info" | field forward_multiply_adds) + \
      $(echo "$info" | field backward_multiply_adds) ))
    : > "$tmp/ours"; : > "$tmp/theirs"; : > "$tmp/ours_rss"; : > "$tmp/theirs_rss"
    for _ in $(seq "$runs"); do
      OPENBLAS_NUM_THREADS=1 /usr/bin/time -f '%M' -o "$tmp/rss" \
        "$bench" "$ini" --batch "$batch" --samples "$samples" \
        --epochs "$epochs" --threads "$threads" > "$tmp/out"
      field samples_per_s < "$tmp/out" >> "$tmp/ours"
      cat "$tmp/rss" >> "$tmp/ours_rss"
      best=0; best_rss=0
      for t in $(seq "$threads"); do
        OMP_NUM_THREADS=$t /usr/bin/time -f '%M' -o "$tmp/rss" \
          /usr/bin/python3 "$top/tests/bench/torch_zoo.py" "$ini" \
          --batch "$batch" --threads "$t" --samples "$samples" \
          --epochs "$epochs" > "$tmp/out"
        sps=$(field samples_per_s < "$tmp/out")
        if awk -v a="$sps" -v b="$best" 'BEGIN { exit !(a > b) }'; then
          best=$sps; best_rss=$(cat "$tmp/rss")
        fi
      done
      echo "$best" >> "$tmp/theirs"
      echo "$best_rss" >> "$tmp/theirs_rss"
    done
    ours=$(median < "$tmp/ours"); theirs=$(median < "$tmp/theirs")
    ours_mb=$(median < "$tmp/ours_rss"); theirs_mb=$(median < "$tmp/theirs_rss")
    awk -v m="$model" -v t="$threads" -v a="$ours" -v b="$theirs" \
      -v ra="$ours_mb" -v rb="$theirs_mb" -v macs="$macs" -v pk="$peak_gmacs" \
      'BEGIN { g = a * macs / 1e9;
        printf "%-22s %3d %9.1f %9.1f %5.2fx %8.1f %8.1f %8.2f %7.1f%%\n",
          m, t, a, b, a / b, ra / 1000, rb / 1000, g, 100 * g / (t * pk) }'
  done
done
