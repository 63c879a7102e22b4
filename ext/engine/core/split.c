/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tt_split (tt_split.h) */
#include "tt_split.h"

typedef struct
{
  tt_split_fn fn;
  void *arg;
  size_t total, quantum;
} split_job;

static void
split_part (void *arg, unsigned part, unsigned n_parts)
{
  const split_job *j = arg;
  size_t begin, end;
  tt_threads_range (j->total, j->quantum, part, n_parts, &begin, &end);
  if (begin < end)
    j->fn (j->arg, begin, end);
}

void
tt_split (tt_threads * pool, size_t total, size_t quantum, size_t min_total,
    tt_split_fn fn, void *arg)
{
  if (total == 0)
    return;
  if (quantum == 0)
    quantum = 1;
  if (!pool || total < min_total || tt_threads_count (pool) < 2) {
    fn (arg, 0, total);
    return;
  }
  /* two parts a thread: a free thread takes over from one that lost its
   * core to another process */
  split_job j = { fn, arg, total, quantum };
  tt_threads_run (pool, split_part, &j,
      tt_threads_parts (pool, (total + quantum - 1) / quantum, 2));
}

typedef struct
{
  tt_split_sum_fn fn;
  void *arg;
  size_t total, quantum;
  double partial[2 * TT_THREADS_MAX];
} split_sum_job;

static void
split_sum_part (void *arg, unsigned part, unsigned n_parts)
{
  split_sum_job *j = arg;
  size_t begin, end;
  tt_threads_range (j->total, j->quantum, part, n_parts, &begin, &end);
  j->partial[part] = begin < end ? j->fn (j->arg, begin, end) : 0.0;
}

double
tt_split_sum (tt_threads * pool, size_t total, size_t quantum,
    size_t min_total, tt_split_sum_fn fn, void *arg)
{
  if (total == 0)
    return 0.0;
  if (quantum == 0)
    quantum = 1;
  if (!pool || total < min_total || tt_threads_count (pool) < 2)
    return fn (arg, 0, total);
  split_sum_job j = { fn, arg, total, quantum, {0}
  };
  const unsigned parts = tt_threads_parts (pool,
      (total + quantum - 1) / quantum, 2);
  tt_threads_run (pool, split_sum_part, &j, parts);
  double sum = 0.0;
  for (unsigned p = 0; p < parts; p++)
    sum += j.partial[p];
  return sum;
}
