/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What two threads can give on this machine now, whatever the engine's
 * kernels do: two independent products (each thread its own matrices,
 * written by itself, so nothing crosses between cores), one after the
 * other on one thread against one on each of two threads of the engine's
 * pool (an owned job, the workers placed as in a step). Prints the
 * medians of ROUNDS rounds and their ratio. The 2-core development
 * machine swings between states in which this gives about 1.9x and about
 * 1x (docs/benchmarks.md, Threads): tests/bench/thread_speed.sh prints
 * it beside its tables so that each says which state it was taken in.
 *
 *   parallel-probe [ROUNDS]
 */
#include "tt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PROBE_M 128
#define PROBE_N 256
#define PROBE_K 784

/* sets 0 and 1: the two threads' (part i's set i); 2 and 3: the one
 * thread's, so that no round moves a set between cores */
typedef struct
{
  float *a[4], *b[4], *c[4];
  unsigned first;               /* part i uses set first + i */
} probe_job;

static double
probe_now_us (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* thread part's product, from matrices it rewrites first (as a step
 * rewrites its own data) */
static void
probe_part (void *arg, unsigned part, unsigned n_parts)
{
  (void) n_parts;
  probe_job *j = arg;
  const unsigned set = j->first + part;
  for (size_t i = 0; i < (size_t) PROBE_M * PROBE_K; i++)
    j->a[set][i] += 1e-7f;
  tt_gemm (false, false, PROBE_M, PROBE_N, PROBE_K, 1.0f, j->a[set],
      PROBE_K, j->b[set], PROBE_N, 0.0f, j->c[set], PROBE_N);
}

static int
probe_compare (const void *x, const void *y)
{
  const double a = *(const double *) x, b = *(const double *) y;
  return a < b ? -1 : a > b;
}

int
main (int argc, char **argv)
{
  const int rounds = argc > 1 ? atoi (argv[1]) : 200;
  if (rounds < 1 || rounds > 100000) {
    fprintf (stderr, "usage: parallel-probe [ROUNDS (1-100000)]\n");
    return 2;
  }
  tt_blas_threads_default ();
  probe_job j;
  for (int t = 0; t < 4; t++) {
    j.a[t] = calloc ((size_t) PROBE_M * PROBE_K, sizeof (float));
    j.b[t] = calloc ((size_t) PROBE_K * PROBE_N, sizeof (float));
    j.c[t] = calloc ((size_t) PROBE_M * PROBE_N, sizeof (float));
    if (!j.a[t] || !j.b[t] || !j.c[t])
      return 1;
  }
  tt_threads *pool;
  double *one = malloc (rounds * sizeof *one);
  double *two = malloc (rounds * sizeof *two);
  if (!one || !two || tt_threads_new (2, &pool) || !pool)
    return 1;
  for (int r = -10; r < rounds; r++) {
    j.first = 2;
    double t0 = probe_now_us ();
    probe_part (&j, 0, 2);
    probe_part (&j, 1, 2);
    j.first = 0;
    const double alone = probe_now_us () - t0;
    tt_threads_begin (pool, TT_THREADS_ALWAYS_SPLIT);
    t0 = probe_now_us ();
    tt_threads_run_owned (pool, probe_part, &j);
    const double split = probe_now_us () - t0;
    tt_threads_end (pool);
    if (r >= 0) {
      one[r] = alone;
      two[r] = split;
    }
  }
  qsort (one, rounds, sizeof *one, probe_compare);
  qsort (two, rounds, sizeof *two, probe_compare);
  const double a = one[rounds / 2], b = two[rounds / 2];
  printf ("parallel probe: two independent %dx%dx%d products, 1 thread "
      "%.0f us, 2 threads %.0f us: %.2fx\n", PROBE_M, PROBE_N, PROBE_K, a, b,
      a / b);
  tt_threads_free (pool);
  for (int t = 0; t < 4; t++) {
    free (j.a[t]);
    free (j.b[t]);
    free (j.c[t]);
  }
  free (one);
  free (two);
  return 0;
}
