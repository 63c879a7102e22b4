/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine threads of tensor_trainer and tensor_predictor (their
 * threads property): 0, the default, is GST_TT_AUTO_THREADS, capped at
 * the cores.
 *
 * Why 1. Measured with tests/bench/thread_speed.sh on the 2-core test
 * machine (docs/benchmarks.md): early on, two threads were slower than
 * one on the near-quiet machine (CNN batch 32 about 10,000 against
 * 13,000 samples/s) and with a CPU hog pinned to one core (0.55-0.88x).
 * Since the pool times split and inline steps and keeps the faster, and
 * tries splitting only when its CPUs were idle (2026-12-03): quiet,
 * 1.57-1.94x in the machine's fast state and 1.23-1.95x in its slow one;
 * with the hog, 0.89-1.06x with no step split (medians of 3 pairs; the
 * lowest where the machine's state changed between the two runs of a
 * pair, or the MLP, whose inline steps cost it 1-3% until their passes
 * were vectorized). The default
 * stays 1 all the same: the pool
 * weighs only its own steps, so a worker splitting them takes a core
 * that a pipeline's other elements may have wanted; a pool for two
 * threads is laid out by halves, a larger pool (the CNN at batch 128:
 * 28.1 MB against 24.4); and results differ across thread counts within
 * rounding, so a pipeline keeps the results it had. threads=2 (or more)
 * asks for the pool, whose results are deterministic for its count.
 */
#ifndef GST_TT_THREADS_H
#define GST_TT_THREADS_H

#include <glib.h>

#define GST_TT_AUTO_THREADS 1
#define GST_TT_MAX_THREADS 64

static inline guint
gst_tt_threads_resolve (guint threads)
{
  if (threads)
    return threads;
  const guint cores = g_get_num_processors ();
  return cores < GST_TT_AUTO_THREADS ? cores : GST_TT_AUTO_THREADS;
}

#endif
