/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Feeding a batch: the caller's values of an input layer converted into
 * its output tensor (tt_feed, called by model_feed), split over the
 * model's threads.
 *
 * Bytes that the layer normalizes are normalized here, in one pass over
 * the floats: the minimum and maximum are found among the bytes (a
 * quarter of the data) and the floats written once (converting, then
 * normalizing in place took 35 us of the MLP's step at batch 128 on 2
 * threads). Bit-identical to the layer's forward: the same float
 * operations on the same values.
 *
 * Split by thread blocks (tt_layer.out_thread_blocks): the first dense
 * layer of the MLP reads the batch by its weight's rows, thread t the
 * columns of its own rows, so fed by samples each core wrote lines that
 * the other had read in the last step: on the 2-core machine feeding the
 * MLP at batch 128 took 40 us a step split by samples and 65 on the
 * caller alone, against 11 on one thread, and the steps' time outside
 * the layers went from 16 to 58 ms an epoch. By columns within the
 * row-major batch it stayed as slow: each core's prefetchers run from
 * its columns of a row into the other's (a ReLU over 128 x 256 split by
 * columns took 5 times as long as by rows). So each thread writes its
 * columns as a block of its own, which only it reads.
 */
#include "tt_layer.h"

#include <math.h>

/* as the element-wise layers (activation.c): below, a job costs more
 * than it saves */
#define FEED_SPLIT_MIN 16384

typedef struct
{
  tt_feed_kind kind;
  const void *src;
  float *dst;
  size_t n, width;              /* width: of the rows, when by blocks */
  float low, range;             /* TT_FEED_BYTES_NORMALIZED */
  size_t bad[2 * TT_THREADS_MAX];       /* each part's first non-finite */
} feed_job;

/* count values from src[from] to dst; the first non-finite float's
 * offset, or count */
static TT_VECTOR_CLONES size_t
feed_values (const feed_job * j, size_t from, size_t count, float *restrict dst)
{
  if (j->kind == TT_FEED_FLOATS) {
    const float *restrict src = (const float *) j->src + from;
    for (size_t i = 0; i < count; i++)
      dst[i] = src[i];
    /* a NaN would reach batch-norm statistics before the loss shows it */
    for (size_t i = 0; i < count; i++)
      if (!isfinite (dst[i]))
        return i;
    return count;
  }
  const uint8_t *restrict src = (const uint8_t *) j->src + from;
  if (j->kind == TT_FEED_BYTES)
    for (size_t i = 0; i < count; i++)
      dst[i] = (float) src[i];
  else
    for (size_t i = 0; i < count; i++)
      dst[i] = ((float) src[i] - j->low) / j->range;
  return count;
}

/* part's values: its range of the batch, or its block of columns of
 * every row (its rows x its columns at dst + rows * its first column) */
static void
feed_part (void *arg, unsigned part, unsigned n_parts)
{
  feed_job *j = arg;
  j->bad[part] = j->n;
  if (!j->width) {
    size_t begin, end;
    tt_threads_range (j->n, 16, part, n_parts, &begin, &end);
    const size_t ok = begin < end ? feed_values (j, begin, end - begin,
        j->dst + begin) : 0;
    if (begin + ok < end)
      j->bad[part] = begin + ok;
    return;
  }
  const size_t rows = j->n / j->width;
  const size_t c0 = tt_weight_owned_start (j->width, part, n_parts);
  const size_t cols = tt_weight_owned_start (j->width, part + 1, n_parts)
      - c0;
  float *block = j->dst + rows * c0;
  for (size_t r = 0; r < rows && cols; r++) {
    const size_t ok = feed_values (j, r * j->width + c0, cols,
        block + r * cols);
    if (ok < cols) {
      j->bad[part] = r * j->width + c0 + ok;
      return;
    }
  }
}

/* the least and the greatest of n > 0 bytes: on the caller alone,
 * before the parts convert, so in the wide registers too (16 bytes a
 * step on the baseline: 4 us of the MLP's step at batch 128) */
static TT_VECTOR_CLONES void
feed_byte_range (const uint8_t * restrict bytes, size_t n, uint8_t * lo_out,
    uint8_t * hi_out)
{
  uint8_t lo = bytes[0], hi = bytes[0];
  for (size_t i = 0; i < n; i++) {
    lo = bytes[i] < lo ? bytes[i] : lo;
    hi = bytes[i] > hi ? bytes[i] : hi;
  }
  *lo_out = lo;
  *hi_out = hi;
}

size_t
tt_feed (tt_threads * pool, tt_feed_kind kind, const void *src, size_t n,
    size_t blocks_width, float *dst)
{
  if (n == 0)
    return 0;
  feed_job j = { kind, src, dst, n, blocks_width, 0.0f, 1.0f, {0}
  };
  if (kind == TT_FEED_BYTES_NORMALIZED) {
    uint8_t lo, hi;
    feed_byte_range (src, n, &lo, &hi);
    if (hi == lo) {
      /* no range: all zeros, as nntrainer (in any layout) */
      for (size_t i = 0; i < n; i++)
        dst[i] = 0.0f;
      return n;
    }
    j.low = (float) lo;
    j.range = (float) hi - (float) lo;
  }
  /* by blocks whatever the size (the layer reads them so), a block a
   * thread; by ranges as tt_split, two a thread */
  unsigned parts = 1;
  if (pool && blocks_width) {
    parts = tt_threads_count (pool);
    tt_threads_run_owned (pool, feed_part, &j);
  } else if (pool && n >= FEED_SPLIT_MIN) {
    parts = tt_threads_parts (pool, (n + 15) / 16, 2);
    tt_threads_run (pool, feed_part, &j, parts);
  } else {
    j.width = 0;                /* one block of every column: the rows */
    feed_part (&j, 0, 1);
  }
  size_t bad = n;
  for (unsigned p = 0; p < parts; p++)
    bad = j.bad[p] < bad ? j.bad[p] : bad;
  return bad;
}
