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
 * And first of all, how many cores the two threads really have: two
 * threads pinned to two CPUs, each running arithmetic on registers
 * alone (no memory, so no cache or bandwidth shared), against one of
 * them alone; then the same with each streaming over 8 MB of its own
 * (what the cores share: the last-level cache, memory), and over 256
 * KB of its own (what each core's own caches hold). Two whole cores
 * give about 2x on registers; two virtual CPUs that the host runs on
 * one core (two hardware threads of one core, or time slices of one)
 * give about 1x, and then nothing a kernel does can make two threads
 * faster on compute. On the development machine the registers read
 * 0.93-0.95x and 1.8-2.0x within half an hour (2026-12-02), the
 * streaming 1.3-2.4x from one minute to the next; thread_speed.sh
 * takes the line before and after each pair of its runs. It did not
 * predict the CNN's ratio there (1.1-1.3x at every reading from 1.26x
 * to 1.98x): the one-thread runs themselves drifted by a third.
 *
 *   parallel-probe [ROUNDS]
 *   parallel-probe --cores     (that first line alone; its last figure
 *                               is the lower of the first two ratios)
 *   parallel-probe --cross     (the cross-core line alone, 300 rounds:
 *                               with 30, a fresh pool read 30-40 us
 *                               where the whole probe read 11; its
 *                               first figure tells the machine's state:
 *                               11-16 us fast, 30-40 slow)
 */
#include "tt_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* an owned job with nothing to do: what a fork and join alone cost */
static void
empty_part (void *arg, unsigned part, unsigned n_parts)
{
  (void) arg;
  (void) part;
  (void) n_parts;
}

#define JOBS_A_ROUND 100

/* median time of one empty owned job inside a step, over rounds of
 * JOBS_A_ROUND jobs back to back (as a step's layers run them) */
static double
job_round_trip_us (tt_threads * pool, int rounds, double *times)
{
  for (int r = -10; r < rounds; r++) {
    tt_threads_begin (pool, TT_THREADS_ALWAYS_SPLIT);
    const double t0 = probe_now_us ();
    for (int i = 0; i < JOBS_A_ROUND; i++)
      tt_threads_run_owned (pool, empty_part, NULL);
    const double t = (probe_now_us () - t0) / JOBS_A_ROUND;
    tt_threads_end (pool);
    if (r >= 0)
      times[r] = t;
  }
  return probe_median (times, rounds);
}

/* Pins the calling thread to cpu: 0, or an error number. */
static int
probe_pin (int cpu)
{
  cpu_set_t one;
  CPU_ZERO (&one);
  CPU_SET (cpu, &one);
  return pthread_setaffinity_np (pthread_self (), sizeof one, &one);
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
    if (!CPU_ISSET (cpu, &allowed) || probe_pin (cpu))
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

/* ---- cores: arithmetic on registers, one thread against two -------- */

/* 12 independent chains of a multiply and an add on 4-float vectors:
 * enough to keep every floating-point pipe of a core busy (a chain's
 * latency is hidden by the others), few enough to stay in the 16
 * vector registers of x86-64's and arm64's baselines. */
typedef float cores_vec __attribute__((vector_size (16)));
#define CORES_CHAINS 12

/* floats each thread streams over in the memory round: 8 MB, more than
 * a core's own caches hold, so that it runs on what the cores share
 * (the last-level cache, memory) */
#define CORES_STREAM_FLOATS (1u << 21)
/* and in the cache round: 256 KB, which a core's own caches hold, so
 * that two whole cores share nothing in it. On the development machine
 * it read 1.40-2.19x within a few minutes on 2026-12-04 (the registers
 * 1.90-2.16x, the 8 MB 1.58-2.07x): at times even what each core does
 * in its own caches gains little from the second. */
#define CORES_CACHE_FLOATS (1u << 16)

typedef struct
{
  int cpu;                      /* pinned to */
  float *stream;                /* NULL: the register round */
  unsigned floats;              /* of stream */
  long iterations;
  pthread_barrier_t *start;
  double seconds;
  float sink;
} cores_arg;

static double
cores_spin (long iterations, float *sink)
{
  cores_vec a[CORES_CHAINS];
  const cores_vec m = { 0.9999f, 0.9999f, 0.9999f, 0.9999f };
  const cores_vec c = { 1e-4f, 1e-4f, 1e-4f, 1e-4f };
  const cores_vec base = { 0, 1, 2, 3 };
  for (int i = 0; i < CORES_CHAINS; i++)
    a[i] = base + i * 1e-3f;
  const double t0 = probe_now_us ();
  for (long k = 0; k < iterations; k++)
    for (int i = 0; i < CORES_CHAINS; i++)
      a[i] = a[i] * m + c;
  const double t = probe_now_us () - t0;
  float s = 0;
  for (int i = 0; i < CORES_CHAINS; i++)
    s += a[i][0] + a[i][3];
  *sink = s;
  return t / 1e6;
}

static void *
cores_thread (void *p)
{
  cores_arg *a = p;
  probe_pin (a->cpu);
  pthread_barrier_wait (a->start);
  if (a->stream) {
    const double t0 = probe_now_us ();
    for (long k = 0; k < a->iterations; k++)
      for (unsigned i = 0; i < a->floats; i++)
        a->stream[i] = a->stream[i] * 0.5f + 1.0f;
    a->seconds = (probe_now_us () - t0) / 1e6;
    a->sink = a->stream[0];
  } else
    a->seconds = cores_spin (a->iterations, &a->sink);
  return NULL;
}

/* runs n (1 or 2) threads on cpus[], together, streaming over the
 * floats of stream[i] when given */
static void
cores_run (int n, const int *cpus, float *const *stream, unsigned floats,
    long iterations, double *seconds)
{
  pthread_barrier_t start;
  pthread_t t[2];
  cores_arg a[2];
  if (pthread_barrier_init (&start, NULL, (unsigned) n)) {
    fprintf (stderr, "parallel-probe: no barrier\n");
    exit (1);
  }
  for (int i = 0; i < n; i++) {
    const cores_arg one = {.cpu = cpus[i],.stream = stream ? stream[i] :
          NULL,.floats = floats,.iterations = iterations,.start = &start
    };
    a[i] = one;
    if (pthread_create (&t[i], NULL, cores_thread, &a[i])) {
      /* the ones started wait at the barrier forever: give up */
      fprintf (stderr, "parallel-probe: no thread\n");
      exit (1);
    }
  }
  for (int i = 0; i < n; i++) {
    pthread_join (t[i], NULL);
    seconds[i] = a[i].seconds;
  }
  pthread_barrier_destroy (&start);
}

/* The first two CPUs the process may run on (-1 when there is no
 * second). */
static void
cores_cpus (int cpus[2])
{
  cpus[0] = cpus[1] = -1;
  cpu_set_t allowed;
  if (sched_getaffinity (0, sizeof allowed, &allowed))
    return;
  for (int cpu = 0, k = 0; cpu < CPU_SETSIZE && k < 2; cpu++)
    if (CPU_ISSET (cpu, &allowed))
      cpus[k++] = cpu;
}

/* One round: each CPU alone, then both together, about 30 ms each;
 * the ratio is the work two threads did in the time of the slower,
 * over the work of the faster CPU alone in its time. */
static double
cores_round (const int cpus[2], float *const *stream, unsigned floats,
    long per_unit)
{
  long iterations = 1;
  double t[2];
  for (;;) {
    cores_run (1, cpus, stream, floats, iterations * per_unit, t);
    if (t[0] > 0.005 || iterations > (1L << 40) / per_unit)
      break;
    iterations *= 4;
  }
  iterations = (long) (iterations * (0.03 / t[0])) + 1;
  double alone[2];
  cores_run (1, &cpus[0], stream, floats, iterations * per_unit, &alone[0]);
  cores_run (1, &cpus[1], stream ? stream + 1 : NULL, floats,
      iterations * per_unit, &alone[1]);
  cores_run (2, cpus, stream, floats, iterations * per_unit, t);
  const double fast = alone[0] < alone[1] ? alone[0] : alone[1];
  return 2 * fast / (t[0] > t[1] ? t[0] : t[1]);
}

/* Prints the cores line: register arithmetic, then streaming over
 * memory, then over each core's own cache, and the lower of the first
 * two ratios last (what thread_speed.sh reads: under 1.3, the two CPUs
 * on one core). */
static void
probe_cores (void)
{
  int cpus[2];
  cores_cpus (cpus);
  if (cpus[1] < 0) {
    printf ("cores: one CPU only\n");
    return;
  }
  const double compute = cores_round (cpus, NULL, 0, 1 << 16);
  float *stream[2];
  for (int i = 0; i < 2; i++) {
    stream[i] = calloc (CORES_STREAM_FLOATS, sizeof (float));
    if (!stream[i]) {
      fprintf (stderr, "parallel-probe: out of memory\n");
      exit (1);
    }
  }
  const double memory = cores_round (cpus, stream, CORES_STREAM_FLOATS, 1);
  const double cache = cores_round (cpus, stream, CORES_CACHE_FLOATS, 1);
  free (stream[0]);
  free (stream[1]);
  printf ("cores: cpus %d and %d together against one, register arithmetic "
      "%.2fx, streaming 8 MB each %.2fx, 256 KB each (in cache) %.2fx: "
      "%.2fx\n", cpus[0], cpus[1], compute, memory, cache,
      compute < memory ? compute : memory);
}

/* Prints the cross-core line (rounds of each read; one and two hold
 * rounds doubles), or returns -1 when out of memory. */
static int
probe_cross (tt_threads * pool, int rounds, double *one, double *two)
{
  cross_job cj = {.caller = pthread_self () };
  cj.buf[0] = calloc (CROSS_FLOATS, sizeof (float));
  cj.buf[1] = calloc (CROSS_FLOATS, sizeof (float));
  if (!cj.buf[0] || !cj.buf[1]) {
    free (cj.buf[0]);
    free (cj.buf[1]);
    return -1;
  }
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
  return 0;
}

int
main (int argc, char **argv)
{
  if (argc > 1 && !strcmp (argv[1], "--cores")) {
    probe_cores ();
    return 0;
  }
  if (argc > 1 && !strcmp (argv[1], "--cross")) {
    tt_threads *pool;
    double one[300], two[300];  /* rounds of each read */
    tt_blas_threads_default ();
    if (tt_threads_new (2, &pool) || !pool)
      return 1;
    const int status = probe_cross (pool, 300, one, two);
    tt_threads_free (pool);
    return status ? 1 : 0;
  }
  probe_cores ();
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
  if (probe_cross (pool, rounds, one, two))
    return 1;
  printf ("round trip: an empty job on both threads inside a step, "
      "%.2f us\n", job_round_trip_us (pool, rounds, one));
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
