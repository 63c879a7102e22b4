#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole test suite, as CI runs it: installs what is missing, then
# builds and tests three configurations:
#   build/           OpenBLAS GEMM (the default)
#   build-portable/  -Dblas=disabled: the portable C kernels
#   build-asan/      AddressSanitizer + UndefinedBehaviorSanitizer
# and ends with one line "N passed, M failed, K skipped" over all of them.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# clang and its runtime build the libFuzzer targets (tests/fuzz/run.sh)
scripts/ensure-deps.sh clang libclang-rt-14-dev || exit 1

passed=0 failed=0 skipped=0 status=0
run_config () {
  local dir=$1; shift
  echo "=== $dir ($*)"
  if ! scripts/build.sh "$dir" "$@"; then
    echo "build of $dir failed"; failed=$((failed + 1)); status=1; return
  fi
  local log
  log=$(mktemp)
  meson test -C "$dir" --print-errorlogs 2>&1 | tee "$log"
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
}

run_config build -Dblas=enabled
run_config build-portable -Dblas=disabled
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_config build-asan -Db_sanitize=address,undefined -Dbuildtype=debugoptimized

# skipped: tests that do not apply to a build (e.g. OpenBLAS's thread
# count without OpenBLAS), each printing why
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
