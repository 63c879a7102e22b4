/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine's thread pool (core/threads.c): every part of every job runs
 * exactly once, with the partition it was given; many short jobs in a
 * row (a late worker must never run a part of the wrong job); nested
 * runs go inline; a pool per model, remade by tt_model_set_threads.
 */
#include "tt_internal.h"
#include "tt_test.h"

#include <stdatomic.h>

#define PARTS_MAX 64

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
    for (unsigned job = 1; job <= 20000; job++) {
      const unsigned parts = 1 + job % PARTS_MAX;
      s.job = job;
      for (unsigned k = 0; k < parts; k++)
        atomic_store (&s.runs[k], 0);
      tt_threads_run (pool, count_part, &s, parts);
      for (unsigned k = 0; k < parts; k++)
        bad += atomic_load (&s.runs[k]) != 1 || s.seen_job[k] != job ||
            s.seen_parts[k] != parts;
    }
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

int
main (void)
{
  TT_TEST_RUN (test_every_part_once);
  TT_TEST_RUN (test_after_sleep);
  TT_TEST_RUN (test_ranges);
  TT_TEST_RUN (test_model_threads);
  return tt_test_summary ();
}
