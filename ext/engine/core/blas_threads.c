/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Threads: the engine's own (per model, core/threads.c) and the BLAS
 * library's (one, unless the environment chose).
 *
 * OpenBLAS starts a thread per core and synchronizes them inside every
 * call. The engine's GEMMs are small (a batch of samples, chunks of
 * convolution columns), so extra threads only add that synchronization:
 * training the Fashion-MNIST CNN on a quiet 2-core machine, two threads
 * ran at 0.82-0.87 of one thread's speed, and with the other core busy
 * (as the other elements of a pipeline keep it) at 1/16 (546 against
 * 8,891 samples a second), the waiting thread losing its core on every
 * call. The engine's pool splits whole layers instead (convolution
 * columns, batch-norm channels, rows of a fully connected product), each
 * part calling a one-thread GEMM. So the first model compiled sets
 * OpenBLAS to one thread unless OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or
 * OMP_NUM_THREADS is set. OpenBLAS's setting is the process's: a program
 * that sets one of those variables gets OpenBLAS's threads inside each of
 * the engine's parts as well (threads times threads: set the engine's to
 * one then). plan.c keeps gradients whole (no update as you go) while
 * OpenBLAS runs several threads (tt_blas_thread_count).
 *
 * tt_set_num_threads() used to set OpenBLAS's threads; it now sets the
 * engine threads of the models compiled after it that were not given
 * their own (tt_model_set_threads), and leaves OpenBLAS at one.
 */
#include "tt_internal.h"

#include <stdatomic.h>
#include <stdlib.h>

#ifdef TT_HAVE_OPENBLAS
extern void openblas_set_num_threads (int);
extern int openblas_get_num_threads (void);
#endif

/* set once OpenBLAS's thread count is decided, by the environment or by
 * default */
static atomic_int blas_threads_decided;
/* engine threads of a model not told its own; 0 until tt_set_num_threads */
static atomic_uint engine_threads_default;

void
tt_set_num_threads (int threads)
{
  if (threads <= 0)
    return;
  atomic_store (&engine_threads_default, (unsigned) (threads > TT_THREADS_MAX
          ? TT_THREADS_MAX : threads));
  tt_blas_threads_default ();
}

unsigned
tt_engine_threads_default (void)
{
  unsigned n = atomic_load (&engine_threads_default);
  return n ? n : 1;
}

void
tt_blas_set_threads (int threads)
{
  atomic_store (&blas_threads_decided, 1);
#ifdef TT_HAVE_OPENBLAS
  if (threads > 0)
    openblas_set_num_threads (threads);
#else
  (void) threads;
#endif
}

static bool
env_set (const char *name)
{
  const char *v = getenv (name);
  return v && *v;
}

void
tt_blas_threads_default (void)
{
  int undecided = 0;
  if (!atomic_compare_exchange_strong (&blas_threads_decided, &undecided, 1))
    return;
  if (env_set ("OPENBLAS_NUM_THREADS") || env_set ("GOTO_NUM_THREADS") ||
      env_set ("OMP_NUM_THREADS"))
    return;
#ifdef TT_HAVE_OPENBLAS
  openblas_set_num_threads (1);
#endif
}

/* The threads a GEMM call may use now: OpenBLAS's setting, or 1 (the
 * portable GEMM runs on its caller's thread). */
int
tt_blas_thread_count (void)
{
#ifdef TT_HAVE_OPENBLAS
  return openblas_get_num_threads ();
#else
  return 1;
#endif
}
