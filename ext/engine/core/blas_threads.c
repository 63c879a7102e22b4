/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Threads of the BLAS library: one unless the user chose.
 *
 * OpenBLAS starts a thread per core and synchronizes them inside every
 * call. The engine's GEMMs are small (a batch of samples, chunks of
 * convolution columns), so extra threads only add that synchronization:
 * training the Fashion-MNIST CNN on a quiet 2-core machine, two threads
 * ran at 0.82-0.87 of one thread's speed, and with the other core busy
 * (as the other elements of a pipeline keep it) at 1/16 (546 against
 * 8,891 samples a second), the waiting thread losing its core on every
 * call. So the first model compiled sets OpenBLAS to one thread, unless
 * OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS is set or
 * tt_set_num_threads() was called. The setting is OpenBLAS's own, so it
 * holds for the whole process.
 */
#include "tt_internal.h"

#include <stdatomic.h>
#include <stdlib.h>

#ifdef TT_HAVE_OPENBLAS
extern void openblas_set_num_threads (int);
extern int openblas_get_num_threads (void);
#endif

/* set once the thread count is decided, by the user or by default */
static atomic_int blas_threads_decided;

void
tt_set_num_threads (int threads)
{
  if (threads <= 0)
    return;
  atomic_store (&blas_threads_decided, 1);
#ifdef TT_HAVE_OPENBLAS
  openblas_set_num_threads (threads);
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
