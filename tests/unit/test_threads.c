/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine's thread pool (core/threads.c): every part of every job runs
 * exactly once, with the partition it was given; many short jobs in a
 * row (a late worker must never run a part of the wrong job); nested
 * runs go inline; a pool per model, remade by tt_model_set_threads.
 * Owned jobs run part i on thread i, the same thread job after job,
 * between dynamic jobs; a model's large fully connected weights are
 * owned on several threads, with a worker scratch for their products;
 * a step keeps the worker off the caller's CPU. Steps are split or run
 * on the caller alone as timing says, and not tried split while the
 * other CPUs are busy; the kernel's count of idle time is read.
 */
#include "tt_internal.h"
#include "tt_test.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define PARTS_MAX 64

static char root[900] = ".";

typedef struct
{
  unsigned job;                 /* written by the caller between jobs */
  atomic_uint runs[PARTS_MAX];  /* times each part ran */
  unsigned seen_job[PARTS_MAX]; /* the job each part saw */
  unsigned seen_parts[PARTS_MAX];
  tt_threads *pool;             /* for the nested case */
  unsigned nested_runs;
} job_state;

static void
count_part (void *arg, unsigned part, unsigned n_parts)
{
  job_state *s = arg;
  atomic_fetch_add (&s->runs[part], 1);
  s->seen_job[part] = s->job;
  s->seen_parts[part] = n_parts;
}

static void
inner_part (void *arg, unsigned part, unsigned n_parts)
{
  (void) part;
  (void) n_parts;
  unsigned *runs = arg;
  (*runs)++;
}

/* each part runs a job of 3 parts on the busy pool: inline, in order */
static void
nested_part (void *arg, unsigned part, unsigned n_parts)
{
  job_state *s = arg;
  unsigned runs = 0;
  tt_threads_run (s->pool, inner_part, &runs, 3);
  s->seen_job[part] = runs;
  s->seen_parts[part] = n_parts;
}

/* Job number job, of 1 + job % PARTS_MAX parts; the parts that did not
 * run exactly once, with the job's number and part count */
static int
run_counted (tt_threads * pool, job_state * s, unsigned job)
{
  const unsigned parts = 1 + job % PARTS_MAX;
  s->job = job;
  for (unsigned k = 0; k < parts; k++)
    atomic_store (&s->runs[k], 0);
  tt_threads_run (pool, count_part, s, parts);
  int bad = 0;
  for (unsigned k = 0; k < parts; k++)
    bad += atomic_load (&s->runs[k]) != 1 || s->seen_job[k] != job ||
        s->seen_parts[k] != parts;
  return bad;
}

static void
test_every_part_once (void)
{
  for (unsigned n = 1; n <= 4; n++) {
    tt_threads *pool;
    CHECK (tt_threads_new (n, &pool) == 0, "%u threads", n);
    CHECK ((pool == NULL) == (n == 1), "%u threads: pool %p", n, (void *) pool);
    CHECK (tt_threads_count (pool) == n, "%u", tt_threads_count (pool));
    static job_state s;
    int bad = 0;
    /* many short jobs back to back, part counts varying */
    for (unsigned job = 1; job <= 20000; job++)
      bad += run_counted (pool, &s, job);
    CHECK (bad == 0, "%u threads: %d parts ran wrongly", n, bad);
    /* nested: inline */
    s.pool = pool;
    tt_threads_run (pool, nested_part, &s, 4);
    for (unsigned k = 0; k < 4; k++)
      CHECK (s.seen_job[k] == 3 && s.seen_parts[k] == 4, "nested part %u: "
          "%u inner runs, %u parts", k, s.seen_job[k], s.seen_parts[k]);
    tt_threads_free (pool);
  }
}

/* Parts that count where they ran (test_blocks, test_step_choice): each
 * sleeps sleep_us, and worker_sleep_us more when a worker runs it;
 * on_worker counts each part's runs on a worker. */
typedef struct
{
  pthread_t caller;
  int sleep_us;
  int worker_sleep_us;
  int on_worker[4];
} choice_step;

static void
choice_part (void *arg, unsigned part, unsigned n_parts)
{
  (void) n_parts;
  choice_step *c = arg;
  const bool worker = !pthread_equal (pthread_self (), c->caller);
  c->on_worker[part] += worker;
  if (c->sleep_us)
    usleep ((useconds_t) c->sleep_us);
  if (worker && c->worker_sleep_us)
    usleep ((useconds_t) c->worker_sleep_us);
}

/* Up to 32 parts a job goes by blocks: on 2 threads, parts 0 and 1 of 4
 * on the caller, 2 and 3 on the worker, when the worker is there to take
 * them (parts that sleep 2 ms let both run on a loaded machine); the
 * caller takes the worker's parts only when it is late, from the last. */
static void
test_blocks (void)
{
  tt_threads *pool;
  CHECK (tt_threads_new (2, &pool) == 0, "2 threads");
  int by_blocks = 0, caller_own = 0;
  for (int round = 0; round < 20; round++) {
    choice_step c = {.caller = pthread_self (),.sleep_us = 2000 };
    tt_threads_begin (pool, TT_THREADS_ALWAYS_SPLIT);
    tt_threads_run (pool, choice_part, &c, 4);
    tt_threads_end (pool);
    const bool own = !c.on_worker[0] && !c.on_worker[1];
    caller_own += own;
    by_blocks += own && c.on_worker[2] && c.on_worker[3];
  }
  CHECK (by_blocks >= 10, "the parts went by blocks in %d of 20 rounds "
      "(the caller ran its own block in %d)", by_blocks, caller_own);
  tt_threads_free (pool);
}

/* a job after the workers went to sleep (past their spin) still runs */
static void
test_after_sleep (void)
{
  tt_threads *pool;
  CHECK (tt_threads_new (3, &pool) == 0, "3 threads");
  static job_state s;
  for (unsigned round = 0; round < 3; round++) {
    usleep (20000);
    s.job = round + 1;
    for (unsigned k = 0; k < 8; k++)
      atomic_store (&s.runs[k], 0);
    tt_threads_run (pool, count_part, &s, 8);
    for (unsigned k = 0; k < 8; k++)
      CHECK (atomic_load (&s.runs[k]) == 1, "round %u part %u: %u runs",
          round, k, atomic_load (&s.runs[k]));
  }
  tt_threads_free (pool);
}

static void
test_ranges (void)
{
  const size_t totals[] = { 0, 1, 7, 8, 9, 100, 1000, 4097 };
  const size_t quanta[] = { 0, 1, 4, 8, 48 };
  int bad = 0;
  for (size_t t = 0; t < sizeof totals / sizeof *totals; t++)
    for (size_t q = 0; q < sizeof quanta / sizeof *quanta; q++)
      for (unsigned n = 1; n <= 9; n++) {
        size_t at = 0, lo = (size_t) -1, hi = 0;
        const size_t qu = quanta[q] ? quanta[q] : 1;
        for (unsigned k = 0; k < n; k++) {
          size_t b, e;
          tt_threads_range (totals[t], quanta[q], k, n, &b, &e);
          bad += b != at || e < b || (e != totals[t] && e % qu) ||
              (b != totals[t] && b % qu);
          const size_t units = (e - b + qu - 1) / qu;
          lo = units < lo ? units : lo;
          hi = units > hi ? units : hi;
          at = e;
        }
        bad += at != totals[t] || hi - lo > 1;
      }
  CHECK (bad == 0, "%d bad partitions", bad);
  tt_threads *pool;
  CHECK (tt_threads_new (4, &pool) == 0, "4 threads");
  CHECK (tt_threads_parts (pool, 100, 1) == 4, "%u",
      tt_threads_parts (pool, 100, 1));
  CHECK (tt_threads_parts (pool, 100, 3) == 12, "%u",
      tt_threads_parts (pool, 100, 3));
  CHECK (tt_threads_parts (pool, 3, 2) == 3, "%u",
      tt_threads_parts (pool, 3, 2));
  CHECK (tt_threads_parts (pool, 0, 2) == 1, "%u",
      tt_threads_parts (pool, 0, 2));
  CHECK (tt_threads_parts (NULL, 100, 4) == 4, "%u",
      tt_threads_parts (NULL, 100, 4));
  tt_threads_free (pool);
}

/* An owned weight's rows (tt_weight_owned_start): contiguous, on row
 * tiles, none empty, each start within half a tile of t * rows / n (so
 * each part within a tile of rows / n), for every weight with a chunk
 * quantum a thread (model_threads.c owns no smaller one); a tie gives the
 * earlier part the smaller share. */
static void
test_owned_rows (void)
{
  const size_t q = TT_OWNED_ROW_QUANTUM;
  int bad = 0, tried = 0;
  for (unsigned n = 1; n <= 8; n++)
    for (size_t rows = n * TT_GRAD_CHUNK_QUANTUM; rows <= 5000;
        rows += rows < 600 ? 1 : 7) {
      size_t at = 0;
      for (unsigned t = 0; t < n; t++) {
        const size_t b = tt_weight_owned_start (rows, t, n);
        const size_t e = tt_weight_owned_start (rows, t + 1, n);
        const double share = (double) rows / n, size = (double) (e - b);
        const double off = (double) b - share * t;
        bad += b != at || e <= b || b % q || (e != rows && e % q) ||
            size > share + q || size < share - q || off > q / 2.0 ||
            off < -(q / 2.0);
        at = e;
      }
      bad += at != rows;
      tried++;
    }
  CHECK (bad == 0, "%d bad parts in %d partitions", bad, tried);
  CHECK (tt_weight_owned_start (256, 1, 2) == 128 &&
      tt_weight_owned_start (784, 1, 2) == 384 &&
      tt_weight_owned_start (1616, 1, 2) == 800 &&
      tt_weight_owned_start (784, 1, 4) == 192 &&
      tt_weight_owned_start (784, 3, 4) == 592, "%zu %zu %zu %zu %zu",
      tt_weight_owned_start (256, 1, 2), tt_weight_owned_start (784, 1, 2),
      tt_weight_owned_start (1616, 1, 2), tt_weight_owned_start (784, 1, 4),
      tt_weight_owned_start (784, 3, 4));
}

typedef struct
{
  unsigned job;
  atomic_uint runs[PARTS_MAX];
  pthread_t thread[PARTS_MAX];  /* who ran each part of the last job */
  unsigned seen_parts[PARTS_MAX];
} owned_state;

/* busy for about us microseconds: long enough that a spinning worker
 * claims its part before the caller, done with its own, would */
static void
busy_wait_us (int us)
{
  struct timespec t0, t;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  do
    clock_gettime (CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000
      < us);
}

static void
owned_part (void *arg, unsigned part, unsigned n_parts)
{
  owned_state *s = arg;
  busy_wait_us (20);
  atomic_fetch_add (&s->runs[part], 1);
  s->thread[part] = pthread_self ();
  s->seen_parts[part] = n_parts;
}

/* owned jobs among dynamic ones: one part a thread, each once, part 0 on
 * the caller; part i on its own worker, the same every time, or on the
 * caller when that worker had not started it (the caller runs those
 * after its own, and all of them in the pool's fallback) */
static void
test_owned (void)
{
  for (unsigned n = 1; n <= 4; n++) {
    tt_threads *pool;
    CHECK (tt_threads_new (n, &pool) == 0, "%u threads", n);
    static owned_state s;
    static job_state d;
    pthread_t owner[PARTS_MAX];
    bool have_owner[PARTS_MAX] = { false };
    int bad = 0, moved = 0, on_workers = 0;
    for (unsigned job = 1; job <= 6000; job++) {
      if (job % 3) {
        bad += run_counted (pool, &d, job);
        continue;
      }
      for (unsigned k = 0; k < n; k++)
        atomic_store (&s.runs[k], 0);
      tt_threads_run_owned (pool, owned_part, &s);
      bad += !pthread_equal (s.thread[0], pthread_self ());
      for (unsigned k = 0; k < n; k++) {
        bad += atomic_load (&s.runs[k]) != 1 || s.seen_parts[k] != n;
        if (k == 0 || pthread_equal (s.thread[k], pthread_self ()))
          continue;
        on_workers++;
        if (!have_owner[k]) {
          owner[k] = s.thread[k];
          have_owner[k] = true;
        }
        moved += !pthread_equal (owner[k], s.thread[k]);
        for (unsigned i = 1; i < k; i++)
          bad += pthread_equal (s.thread[k], s.thread[i]) != 0;
      }
    }
    CHECK (bad == 0, "%u threads: %d parts ran wrongly", n, bad);
    CHECK (moved == 0, "%u threads: %d owned parts ran on another worker "
        "than the first time", n, moved);
    CHECK (n == 1 || on_workers > 0, "%u threads: no owned part ran on a "
        "worker", n);
    tt_threads_free (pool);
  }
  /* no pool: part 0 of 1, inline */
  static owned_state s;
  atomic_store (&s.runs[0], 0);
  tt_threads_run_owned (NULL, owned_part, &s);
  CHECK (atomic_load (&s.runs[0]) == 1 && s.seen_parts[0] == 1, "no pool: "
      "%u runs of %u parts", atomic_load (&s.runs[0]), s.seen_parts[0]);
}

/* A reduction by parts: part p writes p + 1 and (p + 1) * 10 into its
 * partial, part 0 into sum itself */
typedef struct
{
  tt_threads *pool;
  float sum[2];
  unsigned parts_seen;
} partial_state;

static void
partial_part (void *arg, unsigned part, unsigned n_parts)
{
  partial_state *s = arg;
  float *out = part ? tt_threads_scratch (s->pool, part) : s->sum;
  out[0] = (float) (part + 1);
  out[1] = (float) (part + 1) * 10;
  if (part == 0)
    s->parts_seen = n_parts;
}

/* tt_threads_run_partials on the workers when their scratch holds the
 * partial, else on the caller alone; tt_threads_add_partials adds the
 * workers' partials to part 0's */
static void
test_partials (void)
{
  for (unsigned n = 1; n <= 4; n++) {
    tt_threads *pool;
    CHECK (tt_threads_new (n, &pool) == 0, "%u threads", n);
    static float scratch[3 * 16];
    for (int with = 0; with < 2; with++) {
      tt_threads_set_scratch (pool, with ? scratch : NULL, with ? 16 : 0);
      partial_state s = {.pool = pool };
      const unsigned parts = tt_threads_run_partials (pool, 2, partial_part,
          &s);
      const unsigned want = with ? n : 1;
      CHECK (parts == want && s.parts_seen == want, "%u threads, scratch "
          "%d: %u parts run, part 0 saw %u, want %u", n, with, parts,
          s.parts_seen, want);
      tt_threads_add_partials (pool, parts, 1, s.sum + 1, 1);
      tt_threads_add_partials (pool, parts, 0, s.sum, 1);
      const float total = (float) (want * (want + 1) / 2);
      CHECK (s.sum[0] == total && s.sum[1] == total * 10, "%u threads, "
          "scratch %d: sums %g and %g, want %g and %g", n, with,
          (double) s.sum[0], (double) s.sum[1], (double) total,
          (double) total * 10);
    }
    tt_threads_free (pool);
  }
}

#ifdef __linux__
typedef struct
{
  int cpu[2];
  pthread_t thread[2];
} cpu_state;

static void
cpu_part (void *arg, unsigned part, unsigned n_parts)
{
  (void) n_parts;
  cpu_state *c = arg;
  busy_wait_us (200);
  c->cpu[part] = sched_getcpu ();
  c->thread[part] = pthread_self ();
}

/* On a machine of 2 CPUs or more, a step (tt_threads_begin) puts the
 * worker on another CPU than the caller's (threads_place): when the
 * worker runs its part of an owned job, it is on the other CPU (at least
 * 3 times in 4: the caller may move between the step's start and its
 * job) */
static void
test_placement (void)
{
  cpu_set_t allowed;
  if (sched_getaffinity (0, sizeof allowed, &allowed) != 0 ||
      CPU_COUNT (&allowed) < 2) {
    printf ("skip placement: fewer than 2 CPUs\n");
    return;
  }
  tt_threads *pool;
  CHECK (tt_threads_new (2, &pool) == 0, "2 threads");
  /* steps in which the worker ran its part (under load, as when other
   * tests take the CPUs, the caller often runs both) */
  int worked = 0, apart = 0;
  for (int step = 0; step < 400 && worked < 20; step++) {
    cpu_state c = {.cpu = {-1, -1} };
    tt_threads_begin (pool, TT_THREADS_ALWAYS_SPLIT);
    tt_threads_run_owned (pool, cpu_part, &c);
    tt_threads_end (pool);
    if (pthread_equal (c.thread[1], pthread_self ()))
      continue;
    worked++;
    apart += c.cpu[0] >= 0 && c.cpu[1] >= 0 && c.cpu[0] != c.cpu[1];
    usleep (1000);
  }
  CHECK (worked >= 5 && apart * 4 >= worked * 3, "the worker ran %d of "
      "its parts, %d of them on another CPU than the caller's", worked, apart);
  tt_threads_free (pool);
}
#endif

/* The pool's choice between its workers and the caller alone, step by
 * step (tt_threads_begin with a kind), with choice_part's parts. */
/* steps of kind 1 with one owned job each; returns the steps of the last
 * held that a worker had a part of */
static int
choice_steps (tt_threads * pool, choice_step * c, int steps, int held)
{
  int on_worker = 0;
  for (int i = 0; i < steps; i++) {
    const int before = c->on_worker[1];
    tt_threads_begin (pool, 1);
    tt_threads_run_owned (pool, choice_part, c);
    tt_threads_end (pool);
    if (i >= steps - held)
      on_worker += c->on_worker[1] != before;
  }
  return on_worker;
}

/* The pool splits its first 16 steps (and 30 ms or 64 steps), tries the
 * other way for at least 4 timed steps and 30 ms (or 64 steps), then
 * holds the faster way for 64 steps or more (16 after a change), and at
 * least 120 ms or 256 steps. Parts that sleep 2 ms run side by side on
 * any machine, however loaded: a split step takes about half an inline
 * one, so the pool keeps splitting (steps 26 to 89 or so; the test looks
 * at 50 to 65). A part that sleeps 3 ms when a worker runs it (a worker
 * that lost its core) makes split steps slower than inline ones, which
 * take microseconds: the pool runs steps 81 to 337 or so on the caller
 * alone (the test looks at 184 to 199). TT_THREADS_STEPS overrides
 * both. */
static void
test_step_choice (void)
{
  tt_threads *pool;
  choice_step fast = {.caller = pthread_self (),.sleep_us = 2000 };
  /* On a machine loaded by other processes the worker may wait for a core
   * longer than its part takes, and the split steps then lose their
   * trial: up to 3 fresh pools (a pool that never keeps splitting fast
   * steps still fails) */
  int on_worker = 0;
  for (int attempt = 0; attempt < 3 && on_worker < 12; attempt++) {
    CHECK (tt_threads_new (2, &pool) == 0, "2 threads");
    fast.on_worker[1] = 0;
    on_worker = choice_steps (pool, &fast, 66, 16);
    tt_threads_free (pool);
  }
  CHECK (on_worker >= 12, "split steps were twice as fast, yet the worker "
      "ran a part in only %d of the 16 steps after the trial", on_worker);

  /* the same load can make the caller's own part late and the split
   * steps win their trial: up to 3 fresh pools here too (a pool that
   * keeps splitting slow steps every time still fails) */
  choice_step slow = {.caller = pthread_self (),.worker_sleep_us = 3000 };
  on_worker = 1;
  for (int attempt = 0; attempt < 3 && on_worker != 0; attempt++) {
    CHECK (tt_threads_new (2, &pool) == 0, "2 threads");
    slow.on_worker[1] = 0;
    on_worker = choice_steps (pool, &slow, 200, 16);
    tt_threads_free (pool);
  }
  CHECK (on_worker == 0, "split steps were slower, yet the worker ran a "
      "part in %d of the 16 steps after the trial", on_worker);

  setenv ("TT_THREADS_STEPS", "split", 1);
  CHECK (tt_threads_new (2, &pool) == 0, "2 threads");
  /* split steps take 5 ms, inline ones 4: the choice would be inline */
  slow = (choice_step) {
  .caller = pthread_self (),.sleep_us = 2000,.worker_sleep_us = 3000};
  on_worker = choice_steps (pool, &slow, 24, 16);
  CHECK (on_worker >= 12, "TT_THREADS_STEPS=split, yet the worker ran a "
      "part in only %d of 16 steps", on_worker);
  tt_threads_free (pool);

  setenv ("TT_THREADS_STEPS", "inline", 1);
  CHECK (tt_threads_new (2, &pool) == 0, "2 threads");
  on_worker = choice_steps (pool, &fast, 24, 24);
  CHECK (on_worker == 0, "TT_THREADS_STEPS=inline, yet the worker ran a "
      "part in %d steps", on_worker);
  tt_threads_free (pool);
  unsetenv ("TT_THREADS_STEPS");
}

/* A clock and an idle count for tests (tt_threads_set_clock,
 * tt_threads_set_idle_source): the time is what the test says, and the
 * pool's CPUs were idle free_cores of a core all along by that clock,
 * however loaded the machine that runs the test. */
typedef struct
{
  uint64_t now;
  double free_cores;
} fake_time;

static uint64_t
fake_now (void *ctx)
{
  return ((const fake_time *) ctx)->now;
}

static int
fake_idle (void *ctx, const int *cpus, unsigned n, uint64_t * idle_ns)
{
  (void) cpus;
  (void) n;
  const fake_time *t = ctx;
  *idle_ns = (uint64_t) (t->free_cores * (double) t->now);
  return 0;
}

/* Steps of kind 1 on a new pool of 2 threads, by the fake clock: a split
 * step takes split_ns, an inline one inline_ns; the CPUs idle free_cores
 * of a core, or no idle count at all (free_cores < 0). Returns the
 * steps split; *inline_steps, the others. */
static uint64_t
played_split_steps (int steps, uint64_t split_ns, uint64_t inline_ns,
    double free_cores, uint64_t * inline_steps)
{
  tt_threads *pool;
  *inline_steps = 0;
  CHECK (tt_threads_new (2, &pool) == 0, "2 threads");
  if (!pool)
    return 0;
  fake_time t = { 1000000000u, free_cores };
  tt_threads_set_clock (pool, fake_now, &t);
  tt_threads_set_idle_source (pool, free_cores < 0 ? NULL : fake_idle, &t);
  for (int i = 0; i < steps; i++) {
    tt_threads_begin (pool, 1);
    t.now += tt_threads_step_inline (pool) ? inline_ns : split_ns;
    tt_threads_end (pool);
  }
  uint64_t split;
  tt_threads_step_counts (pool, &split, inline_steps);
  tt_threads_free (pool);
  return split;
}

/* A trial that has lost twice over ends after 2 timed steps. Split
 * steps take 3 ms, inline ones 10 us, by the pool's clock: the first 16
 * steps split (45 ms timed, a trial's length), 65 inline ones decide
 * for inline, which holds for 257; the split trial then (step 339 on)
 * gives up after its untimed step and 2 timed ones, where it ran 11
 * (30 ms) before. Of 400 steps, 19 split. */
static void
test_trial_gives_up (void)
{
  uint64_t inline_steps;
  const uint64_t split = played_split_steps (400, 3000000u, 10000u, -1,
      &inline_steps);
  CHECK (split == 19 && inline_steps == 381, "split steps %" PRIu64 " of %"
      PRIu64 ", expected 16 and a trial of 3", split, split + inline_steps);
}

/* A trial of inline steps while splitting holds is lost after 2 timed
 * steps when they take over 1.5 times the split ones. Steps of 2 ms
 * split and 3.4 inline (1.7 times as long), 120 of them: the first hold
 * splits 16, the trial of inline runs 3 (one untimed), the split hold
 * 64, the next trial 3: 6 inline steps, where the rule for trials of
 * splitting (twice the held way) would run each trial its 30 ms, 10
 * steps: 20. */
static void
test_inline_trial_gives_up (void)
{
  uint64_t inline_steps;
  played_split_steps (120, 2000000u, 3400000u, -1, &inline_steps);
  CHECK (inline_steps == 6, "%" PRIu64 " inline steps of 120, expected 6: "
      "two trials of 3", inline_steps);
}

/* Steps whose part 1, run by a worker, sleeps worker_sleep_us (a worker
 * that lost its core mid-part) after both parts sleep sleep_us; part 0
 * of a split step first waits (up to 100 ms) for a worker to start part
 * 1, so that the caller never takes it over. By the pool's clock (t), a
 * split step takes split_ns and an inline one inline_ns: the time the
 * worker took to wake, which a loaded machine stretches to milliseconds,
 * does not count, while the caller's wait for the worker's part, which
 * the pool reads from the real clock, is the part's sleep at least. */
typedef struct
{
  tt_threads *pool;
  pthread_t caller;
  atomic_int started;
  int sleep_us, worker_sleep_us;
  fake_time t;
  uint64_t split_ns, inline_ns;
} stall_step;

static void
stall_part (void *arg, unsigned part, unsigned n_parts)
{
  (void) n_parts;
  stall_step *s = arg;
  if (part == 1) {
    atomic_store (&s->started, 1);
    if (s->sleep_us)
      usleep ((useconds_t) s->sleep_us);
    if (s->worker_sleep_us && !pthread_equal (pthread_self (), s->caller))
      usleep ((useconds_t) s->worker_sleep_us);
    return;
  }
  for (int i = 0; i < 100000 && !tt_threads_step_inline (s->pool) &&
      !atomic_load (&s->started); i++)
    usleep (1);
  if (s->sleep_us)
    usleep ((useconds_t) s->sleep_us);
}

static void
stall_steps (stall_step * s, int steps)
{
  for (int i = 0; i < steps; i++) {
    atomic_store (&s->started, 0);
    tt_threads_begin (s->pool, 1);
    tt_threads_run_owned (s->pool, stall_part, s);
    s->t.now += tt_threads_step_inline (s->pool) ? s->inline_ns : s->split_ns;
    tt_threads_end (s->pool);
  }
}

/* A trial of splitting whose step stalls (its caller waited for a
 * worker's part most of the step) is lost at once. Steps whose worker
 * part sleeps 20 ms (21 ms split steps by the pool's clock: a caller
 * that a loaded machine keeps off its core for a few milliseconds still
 * waits), inline ones taking 10 us: the first hold
 * splits 16 steps, the inline trial takes 65, its hold 257, and the
 * trial of splitting at step 339 ends after its first step, where the
 * rule of means alone ran an untimed step and 2 timed ones
 * (test_trial_gives_up): 17 split steps of 400, not 19. */
static void
test_stalled_worker (void)
{
  stall_step s = {.caller = pthread_self (),.worker_sleep_us = 20000,
    .t = {1000000000u, -1},.split_ns = 21000000u,.inline_ns = 10000u
  };
  CHECK (tt_threads_new (2, &s.pool) == 0, "2 threads");
  tt_threads_set_clock (s.pool, fake_now, &s.t);
  /* no idle count: the trial runs, however loaded the machine */
  tt_threads_set_idle_source (s.pool, NULL, NULL);
  stall_steps (&s, 400);
  uint64_t split, inline_steps;
  tt_threads_step_counts (s.pool, &split, &inline_steps);
  CHECK (split == 17 && inline_steps == 383, "split steps %" PRIu64 " of %"
      PRIu64 " with a stalled worker, expected 16 and a trial's first",
      split, split + inline_steps);
  tt_threads_free (s.pool);
}

/* After a hold of inline steps, the pool tries splitting only if its
 * CPUs were idle half a core or more for its worker meanwhile. Idle
 * 0.1 of a core (another process has the worker's CPU): the first hold's
 * 16 split steps, then inline holds with no trial, not the trial's 3
 * more of test_trial_gives_up; idle 0.6 of a core, or no idle count at
 * all: the trial runs. The kernel's own count (/proc/stat) reads for
 * the CPUs this test may use, never goes back, and is unknown for a CPU
 * that does not exist. */
static void
test_cores_taken (void)
{
  uint64_t inline_steps;
  uint64_t split = played_split_steps (400, 3000000u, 10000u, 0.1,
      &inline_steps);
  CHECK (split == 16, "the other CPU was busy, yet %" PRIu64 " steps split "
      "(16 expected: the first hold's, no trial)", split);
  split = played_split_steps (400, 3000000u, 10000u, 0.6, &inline_steps);
  CHECK (split == 19, "the other CPU was idle 0.6 of the "
      "time, yet %" PRIu64 " steps split (16 and a trial's 3 expected)", split);
  split = played_split_steps (400, 3000000u, 10000u, -1, &inline_steps);
  CHECK (split == 19, "with no idle count, %" PRIu64
      " steps split (16 and a trial's 3 expected)", split);
#ifdef __linux__
  cpu_set_t allowed;
  int cpus[TT_THREADS_MAX];
  unsigned n = 0;
  CHECK (sched_getaffinity (0, sizeof allowed, &allowed) == 0, "affinity");
  for (int c = 0; c < CPU_SETSIZE && n < TT_THREADS_MAX; c++)
    if (CPU_ISSET (c, &allowed))
      cpus[n++] = c;
  uint64_t before = 0, after = 0;
  CHECK (tt_cpu_idle_ns (NULL, cpus, n, &before) == 0, "/proc/stat has no "
      "idle count for this test's %u CPUs", n);
  usleep (30000);
  CHECK (tt_cpu_idle_ns (NULL, cpus, n, &after) == 0 && after >= before,
      "the idle count went from %" PRIu64 " to %" PRIu64 " ns", before, after);
  const int no_such_cpu = CPU_SETSIZE + 7;
  CHECK (tt_cpu_idle_ns (NULL, &no_such_cpu, 1, &after) == -1, "an idle "
      "count for CPU %d", no_such_cpu);
#endif
}

static const char model[] =
    "[Model]\ntype=NeuralNetwork\nbatch_size=4\nloss=mse\n"
    "[Optimizer]\ntype=sgd\nlearning_rate=0.1\n"
    "[in]\ntype=input\ninput_shape=1:1:8\n"
    "[fc]\ntype=fully_connected\nunit=3\n";

static void
test_model_threads (void)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (tt_test_write_text ("threads.ini", model),
      &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return;
  CHECK (tt_model_threads (m) == 1, "default %u", tt_model_threads (m));
  CHECK (tt_model_set_threads (m, 65, &err) == TT_ERR_INVALID, "65 taken");
  CHECK (strstr (err.message, "65 threads") != NULL, "%s", err.message);
  CHECK (tt_model_set_threads (m, 3, &err) == TT_OK, "%s", err.message);
  CHECK (tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  CHECK (tt_threads_count (m->run.threads) == 3, "%u",
      tt_threads_count (m->run.threads));
  CHECK (tt_model_set_threads (m, 2, &err) == TT_OK, "%s", err.message);
  CHECK (tt_threads_count (m->run.threads) == 2 && tt_model_threads (m) == 2,
      "%u", tt_threads_count (m->run.threads));
  CHECK (tt_model_set_threads (m, 1, &err) == TT_OK, "%s", err.message);
  CHECK (m->run.threads == NULL, "one thread: no pool");
  tt_model_free (m);
}

/* fmnist_mlp at batch 32: hidden1 (784 x 256) and hidden2 (256 x 128)
 * are owned on 2 to 4 threads (rows enough for 48 a thread), the output
 * layer's 128 x 10 is too small a product; a worker's scratch holds the
 * larger of its partial products (32 x 256) and its gradient chunks
 * (hidden1's 48 rows of 256 with update as you go), then its copy of the
 * output layer's input derivative; one thread: none */
static void
test_owned_weights (void)
{
  char path[1024];
  snprintf (path, sizeof path, "%s/tests/models/fmnist_mlp.ini", root);
  for (unsigned n = 1; n <= 4; n++) {
    tt_error err;
    tt_model *m = tt_model_load_ini (path, &err);
    CHECK (m != NULL, "%s", err.message);
    if (!m)
      return;
    CHECK (tt_model_set_batch_size (m, 32, &err) == TT_OK, "%s", err.message);
    CHECK (tt_model_set_threads (m, n, &err) == TT_OK, "%s", err.message);
    CHECK (tt_model_compile (m, &err) == TT_OK, "%s", err.message);
    unsigned owned = 0, weights = 0;
    size_t need = 0;
    for (uint32_t i = 0; i < m->n_layers; i++)
      for (uint32_t k = 0; k < m->layers[i].n_weights; k++) {
        const tt_weight *w = &m->layers[i].weights[k];
        owned += w->owned;
        weights++;
        if (w->owned) {
          const size_t rows = w->chunk_rows > 32 ? w->chunk_rows : 32;
          need = rows * (w->count / w->rows) > need ? rows * (w->count /
              w->rows) : need;
          size_t r0, r1, covered = 0;
          for (unsigned t = 0; t < n; t++) {
            tt_weight_owned_rows (w, t, n, &r0, &r1);
            CHECK (r0 == covered && r1 > r0 && r0 % TT_OWNED_ROW_QUANTUM ==
                0, "%s: thread %u owns rows [%zu, %zu)", m->layers[i].name,
                t, r0, r1);
            covered = r1;
          }
          CHECK (covered == w->rows, "%s: %zu of %u rows owned",
              m->layers[i].name, covered, w->rows);
          if (n == 2 && (w->rows == 784 || w->rows == 256)) {
            /* the first layer 384 / 400, not 432 / 352; the second 128 /
             * 128, not 144 / 112 */
            tt_weight_owned_rows (w, 0, n, &r0, &r1);
            CHECK (r1 == (w->rows == 784 ? 384u : 128u),
                "%s: the caller owns %zu rows of %u", m->layers[i].name, r1,
                w->rows);
          }
        }
      }
    CHECK (owned == (n > 1 ? 2u : 0u), "%u threads: %u of %u weights owned",
        n, owned, weights);
    /* and after it, the output layer's input derivative (32 x 128), which
     * each worker makes for the second layer's parts (deriv_copies.c) */
    const size_t copies = n > 1 ? 32 * 128 : 0;
    const size_t floats = tt_threads_scratch_floats (m->run.threads);
    CHECK ((tt_threads_scratch (m->run.threads, 1) != NULL) == (n > 1) &&
        floats == (need + 15) / 16 * 16 + copies, "%u threads: %zu floats a "
        "worker, not %zu + %zu", n, floats, need, copies);
    tt_model_free (m);
  }
}

int
main (int argc, char **argv)
{
  if (argc > 1)
    snprintf (root, sizeof root, "%s", argv[1]);
  TT_TEST_RUN (test_every_part_once);
  TT_TEST_RUN (test_after_sleep);
  TT_TEST_RUN (test_blocks);
  TT_TEST_RUN (test_ranges);
  TT_TEST_RUN (test_model_threads);
  TT_TEST_RUN (test_owned);
  TT_TEST_RUN (test_partials);
#ifdef __linux__
  TT_TEST_RUN (test_placement);
#endif
  TT_TEST_RUN (test_owned_rows);
  TT_TEST_RUN (test_owned_weights);
  TT_TEST_RUN (test_step_choice);
  TT_TEST_RUN (test_trial_gives_up);
  TT_TEST_RUN (test_stalled_worker);
  TT_TEST_RUN (test_cores_taken);
  TT_TEST_RUN (test_inline_trial_gives_up);
  return tt_test_summary ();
}
