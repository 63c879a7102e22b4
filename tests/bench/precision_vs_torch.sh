#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Mixed precision side by side with PyTorch (docs/benchmarks.md, "bf16
# against PyTorch's autocast"): per model and batch, training samples/s of
# ours in fp32 and in bf16 (tests/bench/precision_speed.c: the activation
# type bf16, as --precision bf16 trains) and of PyTorch in fp32 and with
# its CPU bf16 autocast (tests/bench/torch_zoo.py --precision bf16: the
# same network built from the same INI, fp32 master weights and Adam),
# and our pool's bytes in fp32 and in bf16 with the activations' share of
# it (`tensor-trainer info`: held_activation_bytes, the activations held
# from forward into backward, of_pool its share).
#
# Within a run the four alternate: ours at 1 and 2 threads (each
# precision-speed call times fp32 and bf16 alternately, its median of a
# few runs of a few steps), then PyTorch fp32 and bf16 at 1 and 2
# threads. Each side's figure of a run is its better thread count; the
# table has the median of RUNS runs. Both sides see the same
# OPENBLAS_NUM_THREADS=1 and OMP_WAIT_POLICY=passive (PyTorch's OpenMP
# threads sleep instead of spinning: fair to it on a busy machine);
# OMP_NUM_THREADS is PyTorch's thread count. Pool bytes are at one
# thread's layout.
#
# Usage: tests/bench/precision_vs_torch.sh
# Env:   MODELS ("fmnist_cnn zoo_mobilenet_v2 zoo_transformer"), BATCHES
#        ("32 128"), RUNS (3), THREADS ("1 2"), BUILD_DIR ("$top/build");
#        per model and batch, PyTorch's samples an epoch (2 epochs, the
#        last timed) and warm-up batches timing each of its settings, and
#        ours steps a timed run and timed runs a call (their median):
#        zoo_mobilenet_v2 at 32: 256 samples, 2 batches, 3 steps, 1 run;
#        at 128: 256, 1, 2, 1; the others 1024 (2048 at batch 128), 3,
#        5, 3 (SAMPLES and STEPS override them all)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$top/build}
"$top/scripts/ensure-deps.sh" python3-torch python3-numpy time
"$top/scripts/build.sh" "$build"

runs=${RUNS:-3}
cli=$build/tools/tensor-trainer
bench=$build/tests/precision-speed
export OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive

field () { sed -n "s/.*$1=\([^ ]*\).*/\1/p" | tail -1; }
median () { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
max () { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b) ? a : b }'; }
# PyTorch's samples an epoch and warm-up batches a setting; our steps a
# run and runs a call
sizes_for () {
  local s b t r
  case $1:$2 in
    zoo_mobilenet_v2:32) s=256 b=2 t=3 r=1 ;;
    zoo_mobilenet_v2:*) s=256 b=1 t=2 r=1 ;;
    *:128) s=2048 b=3 t=5 r=3 ;;
    *) s=1024 b=3 t=5 r=3 ;;
  esac
  echo "${SAMPLES:-$s} $b ${STEPS:-$t} $r"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "# $(date -u +%FT%TZ) $(git -C "$top" rev-parse --short HEAD)" \
  "runs=$runs threads=\"${THREADS:-1 2}\" load=\"$(cut -d' ' -f1-3 /proc/loadavg)\"" \
  "avx512_bf16=$(grep -q avx512_bf16 /proc/cpuinfo && echo yes || echo no)"
printf '%-17s %5s %9s %9s %9s %9s %6s %6s %11s %11s %6s %6s\n' model batch \
  "ours fp32" "ours bf16" "torch fp32" "torch bf16" "ours" "vs tch" \
  "pool fp32" "pool bf16" "act32" "act16"
for model in ${MODELS:-fmnist_cnn zoo_mobilenet_v2 zoo_transformer}; do
  ini=$top/tests/models/$model.ini
  for batch in ${BATCHES:-32 128}; do
    read -r samples search steps inner <<< "$(sizes_for "$model" "$batch")"
    # a batch needs its samples: at least two batches an epoch
    [ "$samples" -ge $((2 * batch)) ] || samples=$((2 * batch))
    "$cli" info "$ini" --batch "$batch" --precision fp32 > "$tmp/i32" 2>/dev/null
    "$cli" info "$ini" --batch "$batch" --precision bf16 > "$tmp/i16" 2>/dev/null
    pool32=$(field pool_bytes < "$tmp/i32"); pool16=$(field pool_bytes < "$tmp/i16")
    share32=$(field of_pool < "$tmp/i32"); share16=$(field of_pool < "$tmp/i16")
    for f in of32 ob16 tf32 tb16; do : > "$tmp/$f"; done
    for _ in $(seq "$runs"); do
      o32=0 o16=0
      for t in ${THREADS:-1 2}; do
        "$bench" -r "$inner" -s "$steps" -t "$t" "$top" \
          "$model:$batch" > "$tmp/out"
        o32=$(max "$o32" "$(field fp32 < "$tmp/out")")
        o16=$(max "$o16" "$(field bf16 < "$tmp/out")")
      done
      echo "$o32" >> "$tmp/of32"; echo "$o16" >> "$tmp/ob16"
      for p in fp32 bf16; do
        best=0
        for t in ${THREADS:-1 2}; do
          OMP_NUM_THREADS=$t /usr/bin/python3 "$top/tests/bench/torch_zoo.py" \
            "$ini" --batch "$batch" --threads "$t" --samples "$samples" \
            --epochs 2 --search-batches "$search" --precision "$p" > "$tmp/out"
          best=$(max "$best" "$(field samples_per_s < "$tmp/out")")
        done
        echo "$best" >> "$tmp/t${p:0:1}${p:2}"
      done
    done
    awk -v m="$model" -v b="$batch" -v a="$(median < "$tmp/of32")" \
      -v c="$(median < "$tmp/ob16")" -v d="$(median < "$tmp/tf32")" \
      -v e="$(median < "$tmp/tb16")" -v p32="$pool32" -v p16="$pool16" \
      -v s32="$share32" -v s16="$share16" \
      'BEGIN { printf "%-17s %5d %9.1f %9.1f %9.1f %9.1f %5.2fx %5.2fx %11d %11d %6.3f %6.3f\n",
        m, b, a, c, d, e, c / a, c / e, p32, p16, s32, s16 }'
  done
done
echo "# ours: bf16 / fp32 of ours; vs tch: ours bf16 / PyTorch bf16;" \
  "act32, act16: the activations held from forward into backward, share of the pool"
