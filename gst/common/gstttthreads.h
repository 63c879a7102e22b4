/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine threads of tensor_trainer and tensor_predictor (their
 * threads property): 0, the default, is min (cores, GST_TT_AUTO_THREADS).
 *
 * Why 2: on the 2-core test machine (tests/bench/thread_speed.sh, figures
 * in docs/benchmarks.md, taken while other work loaded it) two threads
 * trained the CNN and the MLP 1.25-1.95x as fast as one, and with a CPU
 * hog pinned to one core 1.23-1.67x, except the MLP at batch 32 (0.87x):
 * parts are claimed one at a time, so the thread that keeps its core
 * takes over the other's, and idle threads sleep rather than spin.
 * Batches of one sample stay on the streaming thread (their products and
 * pooling are below the kernels' split thresholds), so the predictor's
 * default costs nothing there. More than 2 is left to the user: a
 * pipeline's other elements (decoders, converters, sinks) want cores too.
 */
#ifndef GST_TT_THREADS_H
#define GST_TT_THREADS_H

#include <glib.h>

#define GST_TT_AUTO_THREADS 2
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
