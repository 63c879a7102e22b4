/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine threads of tensor_trainer and tensor_predictor (their
 * threads property): 0, the default, is min (cores, GST_TT_AUTO_THREADS).
 *
 * Why 2: on the 2-core test machine two threads trained the CNN and the
 * MLP at batch 128 about 1.8-1.9x as fast as one, and with a CPU hog on
 * one core still no slower than one (tests/bench/thread_speed.sh): parts
 * are claimed one at a time, so the thread that keeps its core takes
 * over the other's, and idle threads sleep rather than spin. More than 2
 * is left to the user: a pipeline's other elements (decoders,
 * converters, sinks) want cores too.
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
