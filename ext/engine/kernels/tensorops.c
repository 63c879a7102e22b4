/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tensor-manipulation layers' arithmetic (layers/layer_matmul.c,
 * layer_permute.c, layer_slice.c, layer_gather.c): batched matrix
 * products through tt_gemm, axis permutations, blocks copied along an
 * axis, gathers and their scatter-adds. Arrays in, arrays out; every pass
 * split over the pool's threads by whole matrices, planes or rows, each
 * value computed alike whatever the split (bit-identical to one thread;
 * the products: a part is a one-thread tt_gemm of whole matrices, or of
 * rows of one matrix through tt_gemm_split).
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <math.h>
#include <string.h>

/* copies of at least this many values, all together, go to the threads */
#define TENSOROPS_SPLIT_MIN 16384

/* ---- batched matrix products ----------------------------------------- */

typedef struct
{
  const tt_matmul_shape *s;
  const float *a, *b, *dy;
  float *y, *da, *db;
} matmul_job;

/* one product of a matrix pair, in s->gemm_inputs (one thread: pool
 * NULL) */
static void
matmul_gemm (const tt_matmul_shape * s, tt_threads * pool, bool trans_a,
    bool trans_b, int m, int n, int k, const float *a, int lda,
    const float *b, int ldb, float *y, int ldy)
{
  if (pool)
    tt_gemm_as_split (s->gemm_inputs, pool, trans_a, trans_b, m, n, k, 1.0f,
        a, lda, b, ldb, 0.0f, y, ldy);
  else
    tt_gemm_as_small (s->gemm_inputs, trans_a, trans_b, m, n, k, 1.0f, a,
        lda, b, ldb, 0.0f, y, ldy);
}

static void
matmul_forward_range (void *arg, size_t begin, size_t end)
{
  const matmul_job *j = arg;
  const tt_matmul_shape *s = j->s;
  const size_t sa = (size_t) s->m * s->k, sb = (size_t) s->k * s->n,
      sy = (size_t) s->m * s->n;
  for (size_t p = begin; p < end; p++)
    matmul_gemm (s, NULL, false, false, s->m, s->n, s->k, j->a + p * sa,
        s->k, j->b + p * sb, s->n, j->y + p * sy, s->n);
}

static void
matmul_backward_range (void *arg, size_t begin, size_t end)
{
  const matmul_job *j = arg;
  const tt_matmul_shape *s = j->s;
  const size_t sa = (size_t) s->m * s->k, sb = (size_t) s->k * s->n,
      sy = (size_t) s->m * s->n;
  for (size_t p = begin; p < end; p++) {
    /* dA = dY B^T (m x k), dB = A^T dY (k x n) */
    if (j->da)
      matmul_gemm (s, NULL, false, true, s->m, s->k, s->n, j->dy + p * sy,
          s->n, j->b + p * sb, s->n, j->da + p * sa, s->k);
    if (j->db)
      matmul_gemm (s, NULL, true, false, s->k, s->n, s->m, j->a + p * sa,
          s->k, j->dy + p * sy, s->n, j->db + p * sb, s->n);
  }
}

/* matrices a part: whole matrices while there are at least two a thread,
 * else each product split by rows (tt_gemm_split) */
static bool
matmul_by_matrices (tt_threads * pool, size_t count)
{
  return !pool || count >= 2 * (size_t) tt_threads_count (pool);
}

static size_t
matmul_min_matrices (const tt_matmul_shape * s)
{
  const size_t flops = (size_t) s->m * s->n * s->k + 1;
  return (TT_GEMM_SPLIT_MIN + flops - 1) / flops;
}

void
tt_matmul_forward (tt_threads * pool, const tt_matmul_shape * s,
    size_t count, const float *a, const float *b, float *y)
{
  matmul_job j = { s, a, b, NULL, y, NULL, NULL };
  if (matmul_by_matrices (pool, count)) {
    tt_split (pool, count, 1, matmul_min_matrices (s), matmul_forward_range,
        &j);
    return;
  }
  const size_t sa = (size_t) s->m * s->k, sb = (size_t) s->k * s->n,
      sy = (size_t) s->m * s->n;
  for (size_t p = 0; p < count; p++)
    matmul_gemm (s, pool, false, false, s->m, s->n, s->k, a + p * sa, s->k,
        b + p * sb, s->n, y + p * sy, s->n);
}

void
tt_matmul_backward (tt_threads * pool, const tt_matmul_shape * s,
    size_t count, const float *a, const float *b, const float *dy, float *da,
    float *db)
{
  matmul_job j = { s, a, b, dy, NULL, da, db };
  if (matmul_by_matrices (pool, count)) {
    tt_split (pool, count, 1, (matmul_min_matrices (s) + 1) / 2,
        matmul_backward_range, &j);
    return;
  }
  const size_t sa = (size_t) s->m * s->k, sb = (size_t) s->k * s->n,
      sy = (size_t) s->m * s->n;
  for (size_t p = 0; p < count; p++) {
    if (da)
      matmul_gemm (s, pool, false, true, s->m, s->k, s->n, dy + p * sy, s->n,
          b + p * sb, s->n, da + p * sa, s->k);
    if (db)
      matmul_gemm (s, pool, true, false, s->k, s->n, s->m, a + p * sa, s->k,
          dy + p * sy, s->n, db + p * sb, s->n);
  }
}

/* ---- permutation of the three axes of each sample -------------------- */

typedef struct
{
  uint32_t out[3];              /* the output's extents */
  size_t stride[3];             /* the input's stride along each output axis */
  size_t in_count;
  const float *x;
  float *y;
} permute_job;

static TT_VECTOR_CLONES void
permute_row (float *restrict y, const float *restrict x, size_t n,
    size_t stride)
{
  for (size_t i = 0; i < n; i++)
    y[i] = x[i * stride];
}

/* output rows [begin, end) (a row: one output value of axes 0 and 1 of
 * one sample) */
static void
permute_rows (void *arg, size_t begin, size_t end)
{
  const permute_job *j = arg;
  const size_t rows = (size_t) j->out[0] * j->out[1], n = j->out[2];
  for (size_t r = begin; r < end; r++) {
    const size_t sample = r / rows, q = r % rows;
    const size_t i0 = q / j->out[1], i1 = q % j->out[1];
    const float *x = j->x + sample * j->in_count + i0 * j->stride[0] +
        i1 * j->stride[1];
    float *y = j->y + r * n;
    if (j->stride[2] == 1)
      memcpy (y, x, n * sizeof *y);
    else
      permute_row (y, x, n, j->stride[2]);
  }
}

void
tt_permute (tt_threads * pool, size_t batch, const uint32_t in[3],
    const uint32_t perm[3], const float *x, float *y)
{
  const size_t st[3] = { (size_t) in[1] * in[2], in[2], 1 };
  permute_job j;
  for (int a = 0; a < 3; a++) {
    j.out[a] = in[perm[a]];
    j.stride[a] = st[perm[a]];
  }
  j.in_count = (size_t) in[0] * in[1] * in[2];
  j.x = x;
  j.y = y;
  const size_t n = j.out[2] ? j.out[2] : 1;
  tt_split (pool, batch * j.out[0] * j.out[1], 1,
      (TENSOROPS_SPLIT_MIN + n - 1) / n, permute_rows, &j);
}

/* ---- blocks along an axis -------------------------------------------- */

typedef struct
{
  size_t x_block, y_block, offset, n;
  const float *x;
  float *y;
  bool back, zero_rest;
} block_job;

static void
block_rows (void *arg, size_t begin, size_t end)
{
  const block_job *j = arg;
  for (size_t r = begin; r < end; r++) {
    const float *src = j->back ? (j->y ? j->y + r * j->y_block : NULL) :
        j->x + r * j->x_block + j->offset;
    float *dst = j->back ? (float *) j->x + r * j->x_block : j->y +
        r * j->y_block;
    if (j->back) {
      if (j->zero_rest) {
        memset (dst, 0, j->offset * sizeof *dst);
        memset (dst + j->offset + j->n, 0,
            (j->x_block - j->offset - j->n) * sizeof *dst);
      }
      if (src)
        memcpy (dst + j->offset, src, j->n * sizeof *dst);
      else
        memset (dst + j->offset, 0, j->n * sizeof *dst);
    } else {
      memcpy (dst, src, j->n * sizeof *dst);
    }
  }
}

void
tt_block_copy (tt_threads * pool, size_t rows, size_t x_row, size_t offset,
    size_t n, const float *x, float *y)
{
  block_job j = { x_row, n, offset, n, x, y, false, false };
  tt_split (pool, rows, 1, (TENSOROPS_SPLIT_MIN + n) / (n + 1), block_rows, &j);
}

void
tt_block_copy_back (tt_threads * pool, size_t rows, size_t x_row,
    size_t offset, size_t n, bool zero_rest, const float *dy, float *dx)
{
  block_job j = { x_row, n, offset, n, dx, (float *) dy, true, zero_rest };
  tt_split (pool, rows, 1, (TENSOROPS_SPLIT_MIN + x_row) / (x_row + 1),
      block_rows, &j);
}

/* ---- gather ---------------------------------------------------------- */

typedef struct
{
  const tt_gather_shape *g;
  const float *x, *idx;
  float *y;
} gather_job;

/* the index of output element (o, t, i), or -1 when out of range */
TT_ALWAYS_INLINE long
gather_index (const tt_gather_shape * g, const float *idx, size_t sample,
    size_t o, size_t t, size_t i)
{
  const float v = idx[sample * g->idx_count + (g->idx_outer > 1 ? o : 0) *
      g->idx_t * g->idx_inner + (g->idx_t > 1 ? t : 0) * g->idx_inner +
      (g->idx_inner > 1 ? i : 0)];
  return v >= 0.0f && v < (float) g->r ? (long) v : -1;
}

/* output rows [begin, end): a row is one (sample, outer, t) */
static void
gather_rows (void *arg, size_t begin, size_t end)
{
  const gather_job *j = arg;
  const tt_gather_shape *g = j->g;
  for (size_t row = begin; row < end; row++) {
    const size_t sample = row / ((size_t) g->outer * g->t);
    const size_t q = row % ((size_t) g->outer * g->t);
    const size_t o = q / g->t, t = q % g->t;
    const float *x = j->x + (sample * g->outer + o) * g->r * g->inner;
    float *y = j->y + row * g->inner;
    if (g->idx_inner == 1) {
      const long k = gather_index (g, j->idx, sample, o, t, 0);
      if (k >= 0)
        memcpy (y, x + (size_t) k * g->inner, g->inner * sizeof *y);
      else
        for (size_t i = 0; i < g->inner; i++)
          y[i] = NAN;
      continue;
    }
    for (size_t i = 0; i < g->inner; i++) {
      const long k = gather_index (g, j->idx, sample, o, t, i);
      y[i] = k >= 0 ? x[(size_t) k * g->inner + i] : NAN;
    }
  }
}

void
tt_gather_forward (tt_threads * pool, const tt_gather_shape * g,
    size_t batch, const float *x, const float *idx, float *y)
{
  gather_job j = { g, x, idx, y };
  tt_split (pool, batch * g->outer * g->t, 1,
      (TENSOROPS_SPLIT_MIN + g->inner) / (g->inner + 1), gather_rows, &j);
}

static TT_VECTOR_CLONES void
gather_add_row (float *restrict dx, const float *restrict dy, size_t n)
{
  for (size_t i = 0; i < n; i++)
    dx[i] += dy[i];
}

/* input blocks [begin, end): a block is one (sample, outer), which only
 * its own output rows add into, in order of t */
static void
gather_back_blocks (void *arg, size_t begin, size_t end)
{
  const gather_job *j = arg;
  const tt_gather_shape *g = j->g;
  const float *dy = j->x;
  float *dx = j->y;
  const size_t block = (size_t) g->r * g->inner;
  for (size_t b = begin; b < end; b++) {
    const size_t sample = b / g->outer, o = b % g->outer;
    float *d = dx + b * block;
    memset (d, 0, block * sizeof *d);
    for (size_t t = 0; t < g->t; t++) {
      const float *dyr = dy + (b * g->t + t) * g->inner;
      if (g->idx_inner == 1) {
        const long k = gather_index (g, j->idx, sample, o, t, 0);
        if (k >= 0)
          gather_add_row (d + (size_t) k * g->inner, dyr, g->inner);
        continue;
      }
      for (size_t i = 0; i < g->inner; i++) {
        const long k = gather_index (g, j->idx, sample, o, t, i);
        if (k >= 0)
          d[(size_t) k * g->inner + i] += dyr[i];
      }
    }
  }
}

void
tt_gather_backward (tt_threads * pool, const tt_gather_shape * g,
    size_t batch, const float *idx, const float *dy, float *dx)
{
  gather_job j = { g, dy, idx, dx };
  const size_t block = (size_t) g->t * g->inner + 1;
  tt_split (pool, batch * g->outer, 1, (TENSOROPS_SPLIT_MIN + block - 1) /
      block, gather_back_blocks, &j);
}
