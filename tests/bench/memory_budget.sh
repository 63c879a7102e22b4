#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Training under a memory limit (issue 18): for resnet_bn and inception at
# batch 64, the pool and the training speed at 100%, 75%, 60% and 50% of
# the pool planned without a limit (where the planner can reach it), and
# each level's ratios against 100%. The levels run side by side, RUNS
# rounds of each in turn, and the median samples/s of the rounds is kept
# (a busy machine slows every level alike). Each run trains two epochs of
# SAMPLES Fashion-MNIST samples; the second is timed (the first touches
# the pool's pages). On a loaded machine wall-clock rates swing with the
# load, so the CPU seconds of each whole run (user + system, both epochs,
# loading included) are compared too: cpu is 100%'s CPU time over the
# level's.
#
# Usage: [BUILD=DIR] [RUNS=3] [BATCH=64] tests/bench/memory_budget.sh
# Env:   RESNET_SAMPLES (640), INCEPTION_SAMPLES (256), LEVELS ("100 75 60 50")
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
if [ -z "${BUILD:-}" ]; then
  "$top/scripts/ensure-deps.sh"
  "$top/scripts/build.sh" "$build" >/dev/null
fi
cli=$build/tools/tensor-trainer
runs=${RUNS:-3}
batch=${BATCH:-64}
levels=${LEVELS:-100 75 60 50}
data=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the first samples of Fashion-MNIST, uncompressed, so that no run spends
# its time decompressing 60,000 of them
n=$(( ${RESNET_SAMPLES:-640} > ${INCEPTION_SAMPLES:-256} ? \
  ${RESNET_SAMPLES:-640} : ${INCEPTION_SAMPLES:-256} ))
/usr/bin/python3 - "$data" "$tmp" "$n" <<'EOF'
import gzip, struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, item in (('train-images-idx3-ubyte', 784), ('train-labels-idx1-ubyte', 1)):
    with gzip.open(f'{src}/{name}.gz') as f:
        head = f.read(16 if item > 1 else 8)
        body = f.read(n * item)
    head = head[:4] + struct.pack('>I', n) + head[8:]
    open(f'{dst}/{name}', 'wb').write(head + body)
EOF

median () { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-10s %5s %12s %12s %6s %10s %8s %8s %10s %8s\n' model level limit \
  pool pool% samples/s speed cpu recomputed swapped
for model in resnet_bn inception; do
  if [ $model = resnet_bn ]; then samples=${RESNET_SAMPLES:-640}; else
    samples=${INCEPTION_SAMPLES:-256}; fi
  ini=$top/tests/models/$model.ini
  full=$("$cli" plan "$ini" -o "$tmp/$model.opt.ini" --batch "$batch" |
    awk '/^planned pool/ { print $3 }')
  # plan each level once: its optimized INI is what every run loads
  declare -A pool=() rec=() swp=() rate=() cpu=()
  active=()
  for level in $levels; do
    limit=$(( full * level / 100 ))
    opt=$tmp/$model.$level.opt.ini
    if out=$("$cli" plan "$ini" -o "$opt" --batch "$batch" \
        --memory-limit "$limit" 2>&1); then
      pool[$level]=$(echo "$out" | awk '/^planned pool/ { print $3 }')
      rec[$level]=$(echo "$out" | sed -n 's/^recomputed=\([0-9]*\).*/\1/p')
      swp[$level]=$(echo "$out" | sed -n 's/.* swapped=\([0-9]*\).*/\1/p')
      active+=("$level")
    else
      printf '%-10s %4s%% %12s  not feasible: %s\n' $model "$level" "$limit" \
        "$(echo "$out" | sed -n 's/.*\(smallest feasible limit is [0-9]* bytes\).*/\1/p')"
    fi
  done
  for level in "${active[@]}"; do
    : > "$tmp/$model.$level.rates"
    : > "$tmp/$model.$level.cpu"
  done
  for r in $(seq "$runs"); do
    for level in "${active[@]}"; do
      /usr/bin/time -f '%U %S' -o "$tmp/time" "$cli" train \
        "$tmp/$model.$level.opt.ini" --data "$tmp/train-images-idx3-ubyte" \
        --labels "$tmp/train-labels-idx1-ubyte" --samples "$samples" \
        --epochs 2 --threads 1 > "$tmp/out"
      sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' "$tmp/out" | tail -1 \
        >> "$tmp/$model.$level.rates"
      awk '{ print $1 + $2 }' "$tmp/time" >> "$tmp/$model.$level.cpu"
    done
  done
  base=
  for level in "${active[@]}"; do
    rate[$level]=$(median < "$tmp/$model.$level.rates")
    cpu[$level]=$(median < "$tmp/$model.$level.cpu")
    [ -z "$base" ] && base=${rate[$level]} && basepool=${pool[$level]} &&
      basecpu=${cpu[$level]}
    printf '%-10s %4s%% %12s %12s %5.1f%% %10s %7.3fx %7.3fx %10s %8s\n' \
      $model "$level" $(( full * level / 100 )) "${pool[$level]}" \
      "$(awk -v a="${pool[$level]}" -v b="$basepool" 'BEGIN { print 100 * a / b }')" \
      "${rate[$level]}" \
      "$(awk -v a="${rate[$level]}" -v b="$base" 'BEGIN { print a / b }')" \
      "$(awk -v a="$basecpu" -v b="${cpu[$level]}" 'BEGIN { print (b > 0 ? a / b : 0) }')" \
      "${rec[$level]:-0}" "${swp[$level]:-0}"
  done
  unset pool rec swp rate cpu
done
echo "(speed: samples/s against the first level's; cpu: the first level's CPU seconds over the level's; medians of $runs rounds run side by side)"
