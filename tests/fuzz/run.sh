#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan),
# replays the regression inputs of tests/fuzz/regressions/<target>/, then
# fuzzes each target for SECONDS seconds on a working copy of its committed
# corpus (tests/fuzz/corpus/<target>/, never grown by a run).
#
#   tests/fuzz/run.sh SECONDS          all targets, one after another
#                                      (below 60, the GStreamer parsers
#                                      caps, flexheader, flexsample and
#                                      datarepo get a third of SECONDS)
#   tests/fuzz/run.sh repro FILE...    rebuild and run the target named by
#                                      each file's prefix (crashes/ini-...)
#
# Prints per target the executions and crashes; crash inputs go to
# tests/fuzz/crashes/ (gitignored), each with a one-line reproduction
# command. Exits 1 if anything crashed, 77 (meson's "skipped") when clang
# cannot build libFuzzer targets.
#
# Environment:
#   CLANG              compiler (default: clang, else clang-14)
#   FUZZ_TARGETS       subset, e.g. "ini plan" (default: all)
#   FUZZ_BUILD_DIR     where objects and binaries go (default: build-fuzz
#                      in the source root; rebuilt only when sources change)
#   FUZZ_WORK_DIR      keep working corpora there between runs (default: a
#                      temporary folder, removed afterwards)
#   FUZZ_ARGS          extra libFuzzer options
#   FUZZ_POOL_LIMIT_MB largest model pool the engine targets allocate (64)
#   FUZZ_LEAKS         1 (default): every input is checked for leaks; 0:
#                      not, for volume runs of the GStreamer targets, whose
#                      leak suppressions need ASan's slow unwinder on every
#                      malloc (about 35 times slower: 1.7 thousand inputs a
#                      second instead of 57 for datarepo); crashes,
#                      sanitizer reports and the harness invariants are
#                      checked either way
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
engine_targets="ini_text ini plan bin idx bundle"
# the GStreamer plugin's parsers (gst/): built when pkg-config finds
# gstreamer-1.0 and json-glib-1.0
gst_targets="caps flexheader flexsample datarepo"
all_targets="$engine_targets $gst_targets"

usage () {
  echo "usage: $0 SECONDS | $0 repro FILE..." >&2
  exit 2
}
[ $# -ge 1 ] || usage

# ---- compiler ----------------------------------------------------------
cc=${CLANG:-}
if [ -z "$cc" ]; then
  if command -v clang >/dev/null 2>&1; then cc=clang
  elif command -v clang-14 >/dev/null 2>&1; then cc=clang-14
  fi
fi
if [ -z "$cc" ]; then
  echo "fuzz: SKIP: clang not found (Debian packages: clang-14 and" \
    "libclang-rt-14-dev)"
  exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void) d; (void) n; return 0; }\n' \
  > "$probe/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/probe.c" \
    -o "$probe/probe" >"$probe/log" 2>&1; then
  echo "fuzz: SKIP: $cc cannot link a libFuzzer target with ASan and UBSan" \
    "(Debian package libclang-rt-14-dev):"
  sed 's/^/  /' "$probe/log" | head -5
  exit 77
fi

# OpenBLAS when it links, else the engine's portable kernels
blas_flags="-DTT_HAVE_CBLAS -DTT_HAVE_OPENBLAS"
blas_lib=-lopenblas
if ! "$cc" "$probe/probe.c" -fsanitize=fuzzer -lopenblas -o "$probe/probe" \
    >/dev/null 2>&1; then
  blas_flags=""
  blas_lib=""
fi

# GStreamer and json-glib for the targets of the plugin's parsers
if gst_cflags=$(pkg-config --cflags gstreamer-1.0 json-glib-1.0 2>/dev/null) &&
    gst_libs=$(pkg-config --libs gstreamer-1.0 json-glib-1.0 2>/dev/null); then
  :
else
  echo "fuzz: gstreamer-1.0 or json-glib-1.0 missing: skipping $gst_targets"
  all_targets=$engine_targets
fi

# ONNX import (ext/onnx/): onnx.proto compiled by protoc-c, libprotobuf-c
onnx_proto=/usr/include/onnx/onnx.proto
if command -v protoc-c >/dev/null 2>&1 && [ -f "$onnx_proto" ] &&
    pkg-config --exists libprotobuf-c 2>/dev/null; then
  engine_targets="$engine_targets onnx"
  all_targets="$engine_targets $gst_targets"
else
  echo "fuzz: protoc-c, libprotobuf-c or $onnx_proto missing: skipping onnx"
fi

# ---- build -------------------------------------------------------------
# a generated ninja file: objects are rebuilt when a source or a header
# they include changed (depfiles), binaries relinked when an object did
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
mkdir -p "$build" || exit 2
san="-fsanitize=address,undefined -fno-sanitize-recover=all"
engine_inc=""
for d in include/tensor-trainer core layers kernels plan optim io; do
  engine_inc="$engine_inc -I$root/ext/engine/$d"
done
{
  echo "cflags = -g -O1 -std=c11 -D_GNU_SOURCE $blas_flags" \
    "-fno-math-errno -fno-omit-frame-pointer $san" \
    "$engine_inc -I$root/ext/data -Wall -Wextra"
  echo "rule cc"
  echo "  command = $cc -MMD -MF \$out.d \$cflags \$extra -c \$in -o \$out"
  echo "  depfile = \$out.d"
  echo "  deps = gcc"
  echo "rule link"
  echo "  command = $cc -fsanitize=fuzzer $san \$in \$libs -o \$out"
  objs=""
  for src in "$root"/ext/engine/*/*.c "$root"/ext/data/tt_idx.c \
      "$root"/ext/data/tt_idx_file.c "$root"/ext/data/tt_idx_format.c; do
    obj="obj/$(basename "$src" .c).o"
    objs="$objs $obj"
    echo "build $obj: cc $src"
    # numeric code (kernels/, optim/, the initializers and the random
    # numbers: no parsing, branches on data values) gets no coverage
    # feedback: it would only slow the targets and steer the fuzzer by
    # float values; ASan and UBSan still watch it
    case $src in
      */engine/kernels/* | */engine/optim/* | */core/init.c | */core/rng.c)
        echo "  extra =" ;;
      *) echo "  extra = -fsanitize=fuzzer-no-link" ;;
    esac
  done
  case " $all_targets " in
    *" onnx "*)
      echo "rule protoc"
      echo "  command = protoc-c --c_out=gen --proto_path=$(dirname "$onnx_proto") \$in"
      echo "build gen/onnx.pb-c.c gen/onnx.pb-c.h: protoc $onnx_proto"
      echo "build obj/onnx.pb-c.o: cc gen/onnx.pb-c.c"
      echo "  extra = -w $(pkg-config --cflags libprotobuf-c)"
      onnx_objs="obj/onnx.pb-c.o"
      for src in "$root"/ext/onnx/*.c; do
        obj="obj/$(basename "$src" .c).o"
        onnx_objs="$onnx_objs $obj"
        echo "build $obj: cc $src || gen/onnx.pb-c.h"
        echo "  extra = -fsanitize=fuzzer-no-link -Igen -I$root/ext/onnx"
      done ;;
  esac
  case " $all_targets " in
    *" caps "*)
      for src in common/gsttensorinfo gsttensordatarepo \
          common/gsttensorflexsample; do
        echo "build obj/$(basename "$src").o: cc $root/gst/$src.c"
        echo "  extra = -fsanitize=fuzzer-no-link $gst_cflags" \
          "-I$root/gst/common"
      done ;;
  esac
  for t in $all_targets; do
    echo "build obj/fuzz_$t.o: cc $here/fuzz_$t.c"
    case " $gst_targets :$t" in
      *" $t "*) echo "  extra = -fsanitize=fuzzer-no-link $gst_cflags" \
                  "-I$root/gst -I$root/gst/common" ;;
      *:onnx) echo "  extra = -fsanitize=fuzzer-no-link -Igen" \
                "-I$root/ext/onnx" ;;
      *) echo "  extra = -fsanitize=fuzzer-no-link" ;;
    esac
    if [ "$t" = onnx ]; then
      echo "build fuzz_$t: link obj/fuzz_$t.o $onnx_objs$objs"
      echo "  libs = -Wl,--wrap=aligned_alloc -liniparser $blas_lib -lz -lm" \
        "$(pkg-config --libs libprotobuf-c)"
    elif [ "$t" = idx ]; then
      echo "build fuzz_$t: link obj/fuzz_$t.o obj/tt_idx.o obj/tt_idx_file.o obj/tt_idx_format.o"
      echo "  libs = -lz"
    elif [ "$t" = datarepo ]; then
      echo "build fuzz_$t: link obj/fuzz_$t.o obj/gsttensordatarepo.o" \
        "obj/gsttensorinfo.o"
      echo "  libs = $gst_libs"
    elif [ "$t" = flexsample ]; then
      echo "build fuzz_$t: link obj/fuzz_$t.o obj/gsttensorflexsample.o" \
        "obj/gsttensorinfo.o"
      echo "  libs = $gst_libs"
    elif [ "$t" = caps ] || [ "$t" = flexheader ]; then
      echo "build fuzz_$t: link obj/fuzz_$t.o obj/gsttensorinfo.o"
      echo "  libs = $gst_libs"
    else
      echo "build fuzz_$t: link obj/fuzz_$t.o$objs"
      # the engine's pool allocation goes through the harness's cap
      echo "  libs = -Wl,--wrap=aligned_alloc -liniparser $blas_lib -lz -lm"
    fi
  done
} >"$probe/build.ninja"
echo "fuzz: building with $cc in $build"
# a lock, so concurrent runs (several meson builds) share the folder
if ! (
    flock 9
    if ! cmp -s "$probe/build.ninja" "$build/build.ninja"; then
      cp "$probe/build.ninja" "$build/build.ninja"
    fi
    ninja -C "$build" -j 2 >"$build/build.log" 2>&1
  ) 9>"$build/.lock"; then
  tail -30 "$build/build.log"
  echo "fuzz: build failed"
  exit 1
fi

export OPENBLAS_NUM_THREADS=1
leaks=${FUZZ_LEAKS:-1}
case $leaks in 0|1) ;; *) echo "fuzz: FUZZ_LEAKS is 0 or 1" >&2; exit 2 ;; esac
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}abort_on_error=0:detect_leaks=$leaks"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}${UBSAN_OPTIONS:+:}print_stacktrace=1:halt_on_error=1"
# GLib's slice allocator would hide leaks and overflows from ASan; leaks
# of the system libraries the GStreamer targets call are suppressed
export G_SLICE=always-malloc G_DEBUG=gc-friendly
export LSAN_OPTIONS="${LSAN_OPTIONS:-}${LSAN_OPTIONS:+:}suppressions=$here/lsan.supp:print_suppressions=0"

# GLib and GStreamer have no frame pointers: the suppressions (lsan.supp)
# need the slow unwinder to see the frames they name
target_env () {
  case "$leaks: $gst_targets " in
    0:*) echo "ASAN_OPTIONS=$ASAN_OPTIONS" ;;
    *" $1 "*) echo "ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0" ;;
    *) echo "ASAN_OPTIONS=$ASAN_OPTIONS" ;;
  esac
}

target_args () {
  case $1 in
    ini|ini_text|plan) echo "-dict=$here/ini.dict" ;;
    caps|datarepo) echo "-dict=$here/caps.dict" ;;
    *) echo "" ;;
  esac
}

# ---- repro -------------------------------------------------------------
if [ "$1" = repro ]; then
  shift
  [ $# -ge 1 ] || usage
  rc=0
  for f in "$@"; do
    dir=$(dirname "$f")
    if [ "$(basename "$(dirname "$dir")")" = regressions ]; then
      t=$(basename "$dir")      # regressions/<target>/FILE
    else
      t=$(basename "$f" | sed -n 's/^\(ini_text\|ini\|plan\|bin\|idx\|bundle\|onnx\|caps\|flexheader\|flexsample\|datarepo\)-.*/\1/p')
    fi
    case " $all_targets " in
      *" $t "*) ;;
      *) echo "fuzz: $f: cannot tell the target (name it <target>-...)"
         rc=1; continue ;;
    esac
    env "$(target_env "$t")" "$build/fuzz_$t" $(target_args "$t") "$f" ||
      rc=1
  done
  exit $rc
fi

# ---- fuzz --------------------------------------------------------------
secs=$1
# the text parser's comparison with iniparser hunts semantic quirks: on for
# long runs, off for CI's short ones (see fuzz_ini_text.c)
if [ "$secs" -ge 60 ]; then export TT_FUZZ_DIFFERENTIAL=1; fi
case $secs in ''|*[!0-9]*) usage ;; esac
targets=${FUZZ_TARGETS:-$all_targets}
crashes_dir="$here/crashes"
mkdir -p "$crashes_dir"
if [ -n "${FUZZ_WORK_DIR:-}" ]; then
  work=$FUZZ_WORK_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$probe" "$work"' EXIT
fi

failed=0
summary=""
for t in $targets; do
  bin="$build/fuzz_$t"
  log="$work/$t.log"
  crashes=0

  # regressions first: each input once
  regs=$(ls "$here/regressions/$t" 2>/dev/null | sed "s|^|$here/regressions/$t/|")
  if [ -n "$regs" ]; then
    # shellcheck disable=SC2086
    if ! env "$(target_env "$t")" "$bin" $(target_args "$t") $regs \
        >"$work/$t.replay.log" 2>&1; then
      echo "fuzz_$t: a regression input crashes again:"
      grep -E "^Running:|ERROR|invariant|SUMMARY" "$work/$t.replay.log" | tail -5
      echo "  reproduce: $here/run.sh repro $regs"
      crashes=$((crashes + 1))
    fi
  fi

  corpus="$work/corpus/$t"
  if [ ! -d "$corpus" ]; then
    mkdir -p "$corpus"
    [ "$t" = plan ] || cp "$here/corpus/$t"/* "$corpus"/ 2>/dev/null
  fi
  # stored plans go stale when the planner changes: fuzz_plan re-plans a
  # fresh copy of its seeds with the engine under test (FUZZ_REPLAN_DIR)
  seeds=""
  replan=""
  if [ "$t" = plan ]; then
    seeds="$work/seeds-$t"
    rm -rf "$seeds"
    mkdir -p "$seeds"
    cp "$here/corpus/$t"/* "$seeds"/ 2>/dev/null
    replan=$seeds
  fi
  artifacts="$work/artifacts-$t"
  rm -rf "$artifacts"
  mkdir -p "$artifacts"
  # shellcheck disable=SC2086
  # CI's short runs (meson's run.sh 10) keep the whole suite near 1.5
  # minutes: the GStreamer parsers, small and saturated within seconds,
  # get a third of the time there
  t_secs=$secs
  case " $gst_targets " in
    *" $t "*) [ "$secs" -ge 60 ] || t_secs=$(( (secs + 2) / 3 )) ;;
  esac
  env "$(target_env "$t")" FUZZ_REPLAN_DIR=$replan "$bin" $(target_args "$t") \
    -max_total_time="$t_secs" \
    -timeout=25 -print_final_stats=1 -reload=0 -detect_leaks="$leaks" \
    -artifact_prefix="$artifacts/" ${FUZZ_ARGS:-} "$corpus" $seeds \
    >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
  found=0
  for a in "$artifacts"/*; do
    [ -f "$a" ] || continue
    kind=$(basename "$a" | sed 's/-.*//')
    case $kind in crash|leak|timeout|oom) ;; *) continue ;; esac
    found=$((found + 1))
    dest="$crashes_dir/$t-$(basename "$a")"
    mv "$a" "$dest"
    crashes=$((crashes + 1))
    echo "fuzz_$t: $kind: $dest"
    grep -E "ERROR: |invariant failed|runtime error|SUMMARY" "$log" | head -3 |
      sed 's/^/  /'
    echo "  reproduce: $here/run.sh repro $dest"
  done
  # a death libFuzzer did not catch (a signal it does not handle, such as
  # GLib's SIGTRAP on a fatal log) leaves no artifact: still a failure
  if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then
    crashes=$((crashes + 1))
    echo "fuzz_$t: the fuzzer exited with status $rc and no crash input:"
    tail -5 "$log" | sed 's/^/  /'
  fi
  line="fuzz_$t: executions ${execs:-0}, crashes $crashes"
  echo "$line"
  summary="$summary$line
"
  [ "$crashes" -eq 0 ] || failed=1
done

leak_note=""
[ "$leaks" = 1 ] || leak_note=", leaks not checked (FUZZ_LEAKS=0)"
echo "---- fuzz summary ($secs s per target$leak_note) ----"
printf "%s" "$summary"
exit $failed
