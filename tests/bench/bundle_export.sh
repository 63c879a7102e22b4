#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Bundle figures (issue 5, docs/bundle.md):
#  1. export + compile time for generated bundles of about 10 MB, 100 MB and
#     1 GB of weights, by the .incbin route (--format asm, the default)
#     and the C array route (--format c); the .incbin route runs 3 times
#     (the median run is shown, all totals below it: a shared machine's
#     page-fault and writeback costs vary). The 1 GB C array is skipped when
#     the 100 MB one says it would take over 10 minutes (or more memory
#     than the machine has); the estimate is printed instead.
#  2. load time of the 100 MB model: read, mmap, in place (checked and
#     trusted), compressed (read, mmap); best and median of 5, with the
#     bundle in the page cache (warm) and evicted from it (cold: only that
#     file's pages, with dd iflag=nocache; other processes are left alone).
# The models are stacks of square fully_connected layers generated here;
# nothing big is committed, and everything is written under one temporary
# folder ($TMPDIR, about 4 GB at the peak) removed at the end.
#
# Usage: tests/bench/bundle_export.sh     (BUILD=dir picks the build folder,
#        CC the compiler, SIZES="10MB 100MB" a subset)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
"$top/scripts/ensure-deps.sh"
"$top/scripts/build.sh" "$build"
cli=$build/tools/tensor-trainer
cc=${CC:-cc}
sizes=${SIZES:-10MB 100MB 1GB}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tt-bundle-bench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

now () { date +%s.%N; }
since () { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

# gen NAME WIDTH LAYERS: LAYERS fully_connected layers of WIDTH x WIDTH
# (sgd: no moments, so the bundle is the weights)
gen () {
  {
    printf '[Model]\ntype = NeuralNetwork\nbatch_size = 1\nloss = mse\n'
    printf '[Optimizer]\ntype = sgd\nlearning_rate = 0.01\n'
    printf '[in]\ntype = input\ninput_shape = 1:1:%d\n' "$2"
    for i in $(seq 1 "$3"); do
      printf '[fc%d]\ntype = fully_connected\nunit = %d\n' "$i" "$2"
    done
  } > "$tmp/$1.ini"
}

# compile SOURCE OBJECT: sets secs and rss (KB, when /usr/bin/time exists)
compile () {
  local t0; t0=$(now)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M' -o "$tmp/rss" $cc -c "$1" -o "$2" -I "$(dirname "$1")"
    rss=$(tail -1 "$tmp/rss")
  else
    $cc -c "$1" -o "$2" -I "$(dirname "$1")"; rss=0
  fi
  secs=$(since "$t0")
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -m), $(nproc) cores, $($cc --version | head -1), $(as --version | head -1)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "## export + compile"
printf '%-6s %14s %-5s %10s %10s %10s %12s %14s\n' model bundle_bytes route \
  export_s compile_s total_s compiler_MB source_bytes
declare -A total_of bytes_of rss_of
mem_kb=$(awk '/MemAvailable/ { print $2 }' /proc/meminfo)
for size in $sizes; do
  case $size in
    10MB) gen "$size" 1600 1 ;;
    100MB) gen "$size" 5000 1 ;;
    1GB) gen "$size" 4096 16 ;;
    *) echo "unknown size $size" >&2; exit 2 ;;
  esac
  t0=$(now)
  "$cli" pack "$tmp/$size.ini" -o "$tmp/$size.ttb" --seed 1 >/dev/null
  pack_s=$(since "$t0")
  bytes=$(stat -c %s "$tmp/$size.ttb")
  bytes_of[$size]=$bytes
  for route in asm c; do
    src=$tmp/out-$route/m$size.S
    [ $route = c ] && src=$tmp/out-$route/m$size.c
    if [ $route = c ] && [ "$size" = 1GB ] && [ -n "${total_of[100MB-c]:-}" ]; then
      est=$(awk -v t="${total_of[100MB-c]}" -v a="$bytes" \
        -v b="${bytes_of[100MB]}" 'BEGIN { printf "%.0f", t * a / b }')
      est_mb=$(( ${rss_of[100MB-c]:-0} * bytes / ${bytes_of[100MB]} / 1024 ))
      if [ "$est" -gt 600 ] || [ $((est_mb * 1024)) -gt "$mem_kb" ]; then
        printf '%-6s %14s %-5s skipped: the 100MB C array says ~%s s and ~%s MB of compiler memory (limits: 600 s, %s MB available)\n' \
          "$size" "$bytes" c "$est" "$est_mb" $((mem_kb / 1024))
        continue
      fi
    fi
    runs=1
    [ $route = asm ] && runs=3
    rows=()
    for run in $(seq 1 $runs); do
      t0=$(now)
      "$cli" export "$tmp/$size.ttb" --c-out "$tmp/out-$route" \
        --format $route --symbol "m$size" >/dev/null
      export_s=$(since "$t0")
      compile "$src" "$tmp/out-$route/m$size.o"
      total=$(awk -v a="$export_s" -v b="$secs" \
        'BEGIN { printf "%.3f", a + b }')
      rows+=("$total $export_s $secs $rss $(stat -c %s "$src")")
      rm -rf "$tmp/out-$route"
    done
    # the median run by total
    read -r total export_s secs rss src_bytes < <(printf '%s\n' "${rows[@]}" |
      sort -g | sed -n "$(( (runs + 1) / 2 ))p")
    total_of[$size-$route]=$total
    rss_of[$size-$route]=$rss
    printf '%-6s %14s %-5s %10s %10s %10s %12s %14s\n' "$size" "$bytes" \
      $route "$export_s" "$secs" "$total" $((rss / 1024)) "$src_bytes"
    [ $runs -gt 1 ] && echo "#   $route totals of the $runs runs:" \
      $(printf '%s\n' "${rows[@]}" | cut -d' ' -f1)
  done
  echo "#   pack of $size (initialized weights): ${pack_s} s"
  [ "$size" = 100MB ] || rm -f "$tmp/$size.ttb"
done

[ -f "$tmp/100MB.ttb" ] || exit 0
echo
echo "## load of the 100MB model (tt_bundle_load: header, INI, compile with"
echo "## its pool, weights), seconds: best / median of 5; max RSS of the run"
t0=$(now)
"$cli" pack "$tmp/100MB.ini" -o "$tmp/100MBz.ttb" --seed 1 --compress >/dev/null
echo "# compressed pack: $(since "$t0") s, $(stat -c %s "$tmp/100MBz.ttb") of $(stat -c %s "$tmp/100MB.ttb") bytes"
printf '%-22s %-6s %10s %10s %10s\n' mode cache best_s median_s max_rss_MB
load () {   # load LABEL FILE CACHE ARGS...
  local label=$1 file=$2 cache=$3; shift 3
  local times=() rss=0
  for i in 1 2 3 4 5; do
    if [ "$cache" = cold ]; then
      dd if="$file" iflag=nocache count=0 status=none
    else
      cat "$file" > /dev/null
    fi
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -f '%M' -o "$tmp/rss" "$cli" info "$file" "$@" > "$tmp/out"
      local r; r=$(tail -1 "$tmp/rss"); [ "$r" -gt "$rss" ] && rss=$r
    else
      "$cli" info "$file" "$@" > "$tmp/out"
    fi
    times+=("$(sed -n 's/.*load_seconds=\([0-9.]*\).*/\1/p' "$tmp/out")")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk -v l="$label" -v c="$cache" \
    -v r=$((rss / 1024)) '{ t[NR] = $1 } END {
      printf "%-22s %-6s %10.4f %10.4f %10d\n", l, c, t[1], t[3], r }'
}
for cache in warm cold; do
  load read "$tmp/100MB.ttb" $cache --mode read
  load mmap "$tmp/100MB.ttb" $cache --mode mmap
  load inplace "$tmp/100MB.ttb" $cache --mode inplace
  load "inplace --trust" "$tmp/100MB.ttb" $cache --mode inplace --trust
  load "zlib read" "$tmp/100MBz.ttb" $cache --mode read
  load "zlib mmap" "$tmp/100MBz.ttb" $cache --mode mmap
done
"$cli" info "$tmp/100MB.ttb" | grep -E '^(weight_bytes|planned pool)' |
  sed 's/^/# /'
