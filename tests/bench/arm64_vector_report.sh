#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What the compiler made of the hot kernels for 64-bit ARM: cross-builds
# the engine (scripts/cross/aarch64-linux-gnu.ini, the portable kernels)
# and prints, per function of the kernel files, its instructions, the
# NEON vector ones (an operand vN.<lanes> or a q register), the fused
# multiply-adds (fmla, fmls, fmadd, fmsub, fnmadd, fnmsub) and the scalar
# float ones (s or d registers). A kernel that loses its vectors or its
# FMAs shows here: the counts are compared with the committed baseline
# (arm64_vector_baseline.txt), and a function whose vector or FMA count
# fell by more than a quarter, or to zero, is a regression (exit 1).
#
# Usage: tests/bench/arm64_vector_report.sh [--update]   (--update writes
#        the baseline from this build)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
scripts/ensure-deps.sh >/dev/null
scripts/ensure-arm64.sh
dir=build-arm64
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" --cross-file scripts/cross/aarch64-linux-gnu.ini \
    -Dblas=disabled >/dev/null
fi
ninja -C "$dir" ext/libttengine.a >/dev/null
baseline=$top/tests/bench/arm64_vector_baseline.txt

# the kernel files: the arithmetic of a training step
kernels="gemm conv2d conv2d_direct conv2d_winograd conv2d_winograd4
  maxpool2x2 pooling activation batchnorm lstm gru optimizer layer_loss"

report () {
  for k in $kernels; do
    aarch64-linux-gnu-objdump -d --no-show-raw-insn \
      "$dir/ext/libttengine.a.p/engine_$k.c.o" |
      awk -v file="$k" '
        /^[0-9a-f]+ <[^>]+>:$/ {
          flush(); fn = $2; gsub(/[<>:]/, "", fn); n = v = f = s = 0; next }
        /^ *[0-9a-f]+:\t/ {
          split($0, p, "\t"); op = p[2]; args = p[3]; n++
          if (args ~ /(^|[ ,{\[])v[0-9]+\.[0-9]*[bhsd]/ || args ~ /(^|[ ,])q[0-9]+/) v++
          if (op ~ /^(fmla|fmls|fmadd|fmsub|fnmadd|fnmsub)$/) f++
          else if (op ~ /^f/ && args ~ /(^|[ ,])[sd][0-9]+/ && args !~ /v[0-9]+\./) s++
        }
        function flush() { if (fn != "" && (v + f + s) > 0)
          printf "%-16s %-44s %6d %6d %5d %6d\n", file, fn, n, v, f, s }
        END { flush() }'
  done
}

now=$(mktemp)
trap 'rm -f "$now"' EXIT
report > "$now"
printf '%-16s %-44s %6s %6s %5s %6s\n' file function insns vector fma scalar
cat "$now"
awk '{ n += $3; v += $4; f += $5; s += $6 } END {
  printf "%-61s %6d %6d %5d %6d\n", "total (kernel files)", n, v, f, s }' "$now"
echo "engine: $(aarch64-linux-gnu-objdump -d --no-show-raw-insn \
  "$dir/ext/libttengine.a" | grep -cE $'\tfmla\t') fmla in all"

if [ "${1:-}" = --update ]; then
  cp "$now" "$baseline"
  echo "baseline written: $baseline"
  exit 0
fi
[ -f "$baseline" ] || { echo "no baseline: run with --update"; exit 0; }
# function-by-function against the baseline
awk 'NR == FNR { v[$1 " " $2] = $4; f[$1 " " $2] = $5; next }
  { k = $1 " " $2; seen[k] = 1 }
  k in v {
    if (v[k] > 0 && ($4 == 0 || $4 < 0.75 * v[k]))
      { printf "REGRESSION %s: vector %d -> %d\n", k, v[k], $4; bad++ }
    if (f[k] > 0 && ($5 == 0 || $5 < 0.75 * f[k]))
      { printf "REGRESSION %s: fma %d -> %d\n", k, f[k], $5; bad++ } }
  END { for (k in v) if (!(k in seen) && (v[k] > 0 || f[k] > 0))
      printf "note: %s is gone (renamed, or inlined elsewhere)\n", k
    if (bad) { printf "%d regression(s) against the baseline\n", bad; exit 1 }
    print "no regression against the baseline" }' "$baseline" "$now"
