#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The feature cache's speed-up (docs/personalize.md): tensor-trainer train
# for EPOCHS epochs on the first SAMPLES Fashion-MNIST training images,
# one thread, with a frozen prefix, without the cache and with it in
# memory (--feature-cache) and in a file (--feature-cache-file); the
# median wall time of RUNS runs of each, the ratio of the medians, and
# whether the trained weights (the BIN) are the same bytes.
#
# Usage: [BUILD=DIR] [SAMPLES=N] [EPOCHS=N] [RUNS=N] tests/bench/feature_cache.sh
#   defaults: 6000 samples, 5 epochs, 3 runs
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cli=${BUILD:-$top/build}/tools/tensor-trainer
samples=${SAMPLES:-6000}
epochs=${EPOCHS:-5}
runs=${RUNS:-3}
data=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# median of the arguments
median () {
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

# one run: wall seconds on stdout, the weights in $tmp/$2.bin
run () {
  local ini=$1 tag=$2 choice=$3; shift 3
  local t0 t1
  t0=$(date +%s.%N)
  "$cli" train "$ini" --data "$data/train-images-idx3-ubyte.gz" \
    --labels "$data/train-labels-idx1-ubyte.gz" --samples "$samples" \
    --epochs "$epochs" --threads 1 --seed 1 --train "$choice" \
    --save "$tmp/$tag.bin" "$@" > "$tmp/$tag.out"
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

echo "# $samples samples, $epochs epochs, one thread, median of $runs runs;" \
  "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
printf '%-16s %-8s %-10s %9s %9s %8s %s\n' model choice cache plain_s \
  cached_s speedup same_weights
for pair in zoo_transformer:last:1 fmnist_cnn:last:2; do
  name=${pair%%:*} choice=${pair#*:}
  ini=$top/tests/models/$name.ini
  for cache in memory file; do
    plain=() cached=()
    for ((r = 0; r < runs; r++)); do
      plain+=("$(run "$ini" plain "$choice")")
      if [ "$cache" = memory ]; then
        cached+=("$(run "$ini" cached "$choice" --feature-cache 1G)")
      else
        cached+=("$(run "$ini" cached "$choice" \
          --feature-cache-file "$tmp/features.cache")")
      fi
    done
    grep -q "came from the cache" "$tmp/cached.out" ||
      { echo "$name: no cache line" >&2; exit 1; }
    p=$(median "${plain[@]}") c=$(median "${cached[@]}")
    same=no
    cmp -s "$tmp/plain.bin" "$tmp/cached.bin" && same=yes
    printf '%-16s %-8s %-10s %9.2f %9.2f %7.2fx %s\n' "$name" "$choice" \
      "$cache" "$p" "$c" "$(echo "$p / $c" | bc -l)" "$same"
  done
done
