/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine threads of tensor_trainer and tensor_predictor (their
 * threads property): 0, the default, is GST_TT_AUTO_THREADS, capped at
 * the cores.
 *
 * Why 1: measured with tests/bench/thread_speed.sh on the 2-core test
 * machine (docs/benchmarks.md), two threads were faster than one while
 * other work loaded the machine (CNN 1.25-1.95x, MLP 1.60-1.83x), but on
 * the near-quiet machine at the end slower (CNN batch 32 about 10,000
 * against 13,000 samples/s, MLP 0.71-0.84x), and with a CPU hog pinned
 * to one core slower too (0.55-0.88x). Until that is understood a
 * pipeline gets the one-thread speed it had; threads=2 (or more) asks
 * for the pool, whose results are deterministic for its count.
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
