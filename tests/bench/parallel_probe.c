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
 * Then what data crossing between the cores costs: the worker reads 1 MB
 * that the caller has just written, against 1 MB it wrote itself (the
 * time of the worker's read alone, median of the rounds in which the
 * worker, not the caller, ran it). The engine's layers that split along
 * different axes move their activations between the cores each step.
 *
 * Last, each CPU alone: the one thread pinned to it in turn, the mean
 * and median of one product. Two threads splitting a step in equal
 * parts go at the pace of the slower CPU: on the development machine
 * the slower virtual CPU's mean ran from 1.0 to 1.7 times the other's
 * over a day, its median close to the other's (it loses its core in
 * bursts), and about 2 times with a CPU hog on it.
 *
 *   parallel-probe [ROUNDS]
 */
#include "tt_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
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

/* the median of n times (sorted in place) */
static double
probe_median (double *times, int n)
{
  qsort (times, n, sizeof *times, probe_compare);
  return times[n / 2];
}

#define CROSS_FLOATS (1u << 18) /* 1 MB */

/* the cross-core rounds: part write_by (0 the caller, 1 the worker; -1
 * none) writes buffer write_set, then part 1 reads buffer read_set (-1:
 * none), timing it */
typedef struct
{
  float *buf[2];
  int write_by, write_set, read_set;
  pthread_t caller;
  double read_us;               /* < 0: the caller ran the read */
  volatile float sink;
} cross_job;

static void
cross_part (void *arg, unsigned part, unsigned n_parts)
{
  (void) n_parts;
  cross_job *j = arg;
  if (j->write_by == (int) part) {
    float *b = j->buf[j->write_set];
    for (unsigned i = 0; i < CROSS_FLOATS; i++)
      b[i] += 1.0f;
  }
  if (part == 1 && j->read_set >= 0) {
    const float *b = j->buf[j->read_set];
    const double t0 = probe_now_us ();
    float s = 0;
    for (unsigned i = 0; i < CROSS_FLOATS; i += 16)
      s += b[i];
    j->sink = s;
    j->read_us = pthread_equal (pthread_self (), j->caller) ? -1 :
        probe_now_us () - t0;
  }
}

/* median read time of the worker over rounds: buffer 0 written by the
 * caller (other) or buffer 1 by the worker itself (own) just before */
static double
cross_read_us (tt_threads * pool, cross_job * j, bool other, int rounds,
    double *times)
{
  int n = 0;
  for (int r = -10; r < rounds; r++) {
    j->write_by = other ? 0 : 1;
    j->write_set = other ? 0 : 1;
    j->read_set = -1;
    tt_threads_begin (pool, TT_THREADS_ALWAYS_SPLIT);
    tt_threads_run_owned (pool, cross_part, j);
    j->write_by = -1;
    j->read_set = other ? 0 : 1;
    tt_threads_run_owned (pool, cross_part, j);
    tt_threads_end (pool);
    if (r >= 0 && j->read_us >= 0)
      times[n++] = j->read_us;
  }
  if (!n)
    return -1;
  return probe_median (times, n);
}

/* The mean and median of one product on the caller pinned to each CPU
 * it may run on, in turn; its affinity restored after. */
static void
probe_cpus (probe_job * j, int rounds, double *times)
{
  cpu_set_t allowed;
  if (pthread_getaffinity_np (pthread_self (), sizeof allowed, &allowed))
    return;
  double slowest = 0, fastest = 0;
  printf ("cpus alone:");
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET (cpu, &allowed))
      continue;
    cpu_set_t one;
    CPU_ZERO (&one);
    CPU_SET (cpu, &one);
    if (pthread_setaffinity_np (pthread_self (), sizeof one, &one))
      continue;
    double sum = 0;
    j->first = 2;
    for (int r = -10; r < rounds; r++) {
      const double t0 = probe_now_us ();
      probe_part (j, 0, 1);
      const double t = probe_now_us () - t0;
      if (r >= 0) {
        times[r] = t;
        sum += t;
      }
    }
    const double mean = sum / rounds;
    printf (" cpu %d mean %.0f us (median %.0f);", cpu, mean,
        probe_median (times, rounds));
    slowest = mean > slowest ? mean : slowest;
    fastest = fastest == 0 || mean < fastest ? mean : fastest;
  }
  pthread_setaffinity_np (pthread_self (), sizeof allowed, &allowed);
  printf (" slowest mean / fastest %.2f\n", fastest > 0 ? slowest / fastest :
      0.0);
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
  const double a = probe_median (one, rounds), b = probe_median (two, rounds);
  printf ("parallel probe: two independent %dx%dx%d products, 1 thread "
      "%.0f us, 2 threads %.0f us: %.2fx\n", PROBE_M, PROBE_N, PROBE_K, a, b,
      a / b);
  cross_job cj = {.caller = pthread_self () };
  cj.buf[0] = calloc (CROSS_FLOATS, sizeof (float));
  cj.buf[1] = calloc (CROSS_FLOATS, sizeof (float));
  if (!cj.buf[0] || !cj.buf[1])
    return 1;
  const double other = cross_read_us (pool, &cj, true, rounds, one);
  const double own = cross_read_us (pool, &cj, false, rounds, two);
  if (other > 0 && own > 0)
    printf ("cross-core: the worker reads 1 MB the caller just wrote in "
        "%.1f us, 1 MB it wrote itself in %.1f us: %.1fx\n", other, own,
        other / own);
  else
    printf ("cross-core: the caller ran every read (no worker got a "
        "core)\n");
  free (cj.buf[0]);
  free (cj.buf[1]);
  tt_threads_free (pool);
  probe_cpus (&j, rounds, one);
  for (int t = 0; t < 4; t++) {
    free (j.a[t]);
    free (j.b[t]);
    free (j.c[t]);
  }
  free (one);
  free (two);
  return 0;
}
