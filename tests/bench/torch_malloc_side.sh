#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# PyTorch's training speed with glibc's malloc keeping freed memory
# (--malloc kept, the default of tests/bench/torch_zoo.py and
# tests/bench/torch_fmnist.py) against glibc's defaults (--malloc glibc),
# side by side (docs/benchmarks.md, "PyTorch and glibc's malloc").
# A run is four processes in a row: the INI-built network
# (torch_zoo.py) kept and glibc, then the hand-written copy
# (torch_fmnist.py, Fashion-MNIST's images) kept and glibc, each training
# SAMPLES samples an epoch, 2 epochs, the last timed; per variant the
# median of RUNS runs, its minor page faults (/usr/bin/time) and its speed
# over glibc's. Only ratios within the one run mean something on a busy
# machine.
#
# Usage: tests/bench/torch_malloc_side.sh
# Env:   RUNS (5), BATCH (32), THREADS (1), SAMPLES (2048),
#        PRECISION (fp32; bf16 for the INI-built network under autocast)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
"$top/scripts/ensure-deps.sh" python3-torch python3-numpy time
runs=${RUNS:-5} batch=${BATCH:-32} threads=${THREADS:-1}
samples=${SAMPLES:-2048} precision=${PRECISION:-fp32}
export OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive
export OMP_NUM_THREADS=$threads

field () { sed -n "s/.*$1=\([^ ]*\).*/\1/p" | tail -1; }
median () { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

variants="zoo:kept zoo:glibc fmnist:kept fmnist:glibc"
for run in $(seq "$runs"); do
  for v in $variants; do
    script=${v%%:*} malloc=${v#*:}
    if [ "$script" = zoo ]; then
      set -- "$top/tests/bench/torch_zoo.py" \
        "$top/tests/models/fmnist_cnn.ini" --precision "$precision"
    else
      set -- "$top/tests/bench/torch_fmnist.py" --model cnn
    fi
    /usr/bin/time -f "faults=%R" -o "$tmp/time" /usr/bin/python3 "$@" \
      --batch "$batch" --threads "$threads" --samples "$samples" --epochs 2 \
      --malloc "$malloc" > "$tmp/out"
    grep -q "^# malloc=$malloc\$" "$tmp/out" ||
      { echo "$v: --malloc $malloc did not take effect" >&2; exit 1; }
    field samples_per_s < "$tmp/out" >> "$tmp/$script.$malloc.sps"
    field faults < "$tmp/time" >> "$tmp/$script.$malloc.faults"
    echo "run $run $v: $(field samples_per_s < "$tmp/out") samples/s," \
      "$(field faults < "$tmp/time") faults"
  done
done

printf '%-34s %8s %14s %12s %9s\n' network malloc "samples/s" \
  "page faults" "vs glibc"
for v in $variants; do
  script=${v%%:*} malloc=${v#*:}
  sps=$(median < "$tmp/$script.$malloc.sps")
  base=$(median < "$tmp/$script.glibc.sps")
  name="INI-built (torch_zoo.py, $precision)"
  [ "$script" = fmnist ] && name="hand-written (torch_fmnist.py)"
  printf '%-34s %8s %14.1f %12s %8.2fx\n' "$name" "$malloc" "$sps" \
    "$(median < "$tmp/$script.$malloc.faults")" \
    "$(awk -v a="$sps" -v b="$base" 'BEGIN { print a / b }')"
done
