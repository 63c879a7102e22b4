#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole test suite, as CI runs it: installs what is missing, then
# builds and tests three configurations:
#   build/           OpenBLAS GEMM (the default)
#   build-portable/  -Dblas=disabled: the portable C kernels (the fuzz
#                    targets, clang's and the same for every build, run
#                    in build/ alone)
#   build-asan/      AddressSanitizer + UndefinedBehaviorSanitizer
#   build-arm64/     64-bit ARM: cross-built (scripts/cross/), portable
#                    kernels, engine and CLI (arm64 GStreamer's -dev
#                    packages cannot sit beside the host's), tests in
#                    qemu-aarch64-static except the 'learning' and
#                    'arch_neutral' suites
# and ends with one line "N passed, M failed, K skipped" over all of them,
# after each configuration's wall time.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# clang and its runtime build the libFuzzer targets (tests/fuzz/run.sh)
# (indent: scripts/check-style.sh)
scripts/ensure-deps.sh clang libclang-rt-14-dev indent || exit 1

passed=0 failed=0 skipped=0 status=0
times=()
test_args=()    # extra `meson test` arguments for the next configuration
run_config () {
  local dir=$1; shift
  local start=$SECONDS
  echo "=== $dir ($*)"
  if ! scripts/build.sh "$dir" "$@"; then
    echo "build of $dir failed"; failed=$((failed + 1)); status=1; return
  fi
  local log
  log=$(mktemp)
  meson test -C "$dir" --print-errorlogs "${test_args[@]}" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local ok fail skip
  ok=$(awk '/^Ok:/ {print $2}' "$log"); fail=$(awk '/^Fail:/ {print $2}' "$log")
  skip=$(awk '/^Skipped:/ {print $2}' "$log")
  skipped=$((skipped + ${skip:-0}))
  local timeout; timeout=$(awk '/^Timeout:/ {print $2}' "$log")
  # should_fail tests (the leaks tracer's canary): failing is passing
  local xfail xpass
  xfail=$(awk '/^Expected Fail:/ {print $3}' "$log")
  xpass=$(awk '/^Unexpected Pass:/ {print $3}' "$log")
  ok=$((${ok:-0} + ${xfail:-0})); fail=$((${fail:-0} + ${xpass:-0}))
  passed=$((passed + ok)); failed=$((failed + fail + ${timeout:-0}))
  [ "$rc" -ne 0 ] && status=1 && [ "$fail" -eq 0 ] && failed=$((failed + 1))
  rm -f "$log"
  times+=("$dir $((SECONDS - start)) s")
}

# every build is warning-free (-Werror), with GCC here and with clang below
run_config build -Dblas=enabled -Dwerror=true
# the fuzz targets (clang's, the same for every build) run in build/ alone
run_config build-portable -Dblas=disabled -Dwerror=true -Dfuzz=disabled
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_config build-asan -Db_sanitize=address,undefined -Dbuildtype=debugoptimized \
  -Dwerror=true
unset ASAN_OPTIONS UBSAN_OPTIONS

# arm64, what most devices run; on an arm64 machine the builds above are
# arm64 already
if [ "$(uname -m)" = aarch64 ]; then
  echo "=== build-arm64: skipped, this machine is arm64 (the builds above are)"
  skipped=$((skipped + 1))
elif scripts/ensure-arm64.sh; then
  # emulation is 5-20x slower: the learning tests and those in which
  # nothing depends on the architecture (tests/meson.build's
  # arch_neutral) stay on the host, and the time limits stretch
  test_args=(--no-suite learning --no-suite arch_neutral
    --timeout-multiplier 4)
  run_config build-arm64 --cross-file scripts/cross/aarch64-linux-gnu.ini \
    -Dblas=disabled -Dwerror=true
  test_args=()
  # the same portable kernels on both machines: within tolerances, as FMA
  # splits them in the last bits
  if [ -x build-arm64/tools/tensor-trainer ]; then
    echo "=== x86-64 against arm64 (tests/cross_arch.sh)"
    log=$(mktemp)
    tests/cross_arch.sh build-portable/tools/tensor-trainer \
      "qemu-aarch64-static build-arm64/tools/tensor-trainer" "$top" | tee "$log"
    [ "${PIPESTATUS[0]}" -ne 0 ] && status=1
    read -r ok fail < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$log")
    passed=$((passed + ${ok:-0})); failed=$((failed + ${fail:-1}))
    rm -f "$log"
  fi
else
  echo "=== build-arm64: the cross toolchain could not be installed"
  failed=$((failed + 1)); status=1
fi

# skipped: tests that do not apply to a build (e.g. OpenBLAS's thread
# count without OpenBLAS), each printing why
# clang: the whole tree builds warning-free (built, not tested: the GCC
# builds run the tests)
start=$SECONDS
echo "=== build-clang (CC=clang -Dwerror=true, build only)"
if CC=clang scripts/build.sh build-clang -Dwerror=true; then
  echo "ok: clang -Werror build"; passed=$((passed + 1))
else
  echo "FAIL: clang -Werror build"; failed=$((failed + 1)); status=1
fi
times+=("build-clang $((SECONDS - start)) s")

# the code style (.clang-format-free: GStreamer's gst-indent rules), and
# the files' whitespace (.editorconfig)
start=$SECONDS
echo "=== style (scripts/check-style.sh)"
if scripts/check-style.sh; then
  echo "ok: style"; passed=$((passed + 1))
else
  echo "FAIL: style (scripts/check-style.sh --fix rewrites the files)"
  failed=$((failed + 1)); status=1
fi
times+=("style $((SECONDS - start)) s")

for t in "${times[@]}"; do echo "wall time: $t"; done
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
