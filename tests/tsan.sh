#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Data races in the engine's thread pool and the kernels split over it
# (issue 19): a ThreadSanitizer build (build-tsan/, the portable GEMM so
# that every access is instrumented; OpenBLAS's own are not) runs the pool
# test, the split kernels against one thread (test_threads_kernels and
# test_split), the convolution cases on 2-4
# threads, training of the MLP, CNN and resnet_bn on 1-4 threads, and
# the two layouts of a pool laid out by halves. Any
# report fails the run (halt_on_error). Prints its wall time.
#
# Usage: tests/tsan.sh [BUILD_DIR]   (default build-tsan)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build-tsan}
start=$SECONDS
"$top/scripts/build.sh" "$dir" -Db_sanitize=thread -Dbuildtype=debugoptimized \
  -Dblas=disabled -Dwerror=true
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
status=0
run () {
  echo "=== $*"
  if ! "$@" | tail -3; then status=1; fi
}
cd "$dir"
run tests/test_threads "$top"
run tests/test_threads_kernels
run tests/test_threads_training "$top"
# the pool's timing of the workers' parts, which profiling turns on
run tests/test_model_profile "$top"
# the pool laid out by halves, and its second layout switched between
# steps (core/layout_switch.c)
run tests/test_plan_halves "$top"
# element-wise kernels, losses, optimizer, LSTM/GRU cells (core/split.c)
run tests/test_split "$top"
# the convolution cases (their threaded runs included), without the other
# kernels' cases, and few finite-difference probes (their threaded
# runs are what matters here)
TT_TEST_CASE=test_conv TT_TEST_FD_PROBES=4 run tests/test_kernels
echo "tsan: $((SECONDS - start)) s, $([ $status = 0 ] && echo "no race reported" || echo FAILED)"
exit $status
