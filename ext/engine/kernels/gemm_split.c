/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_gemm_split: one product split over the engine's threads by blocks of
 * rows or of columns of C, each block a one-thread tt_gemm with the whole
 * K. No partial sums: every element of C is the same reduction over K as
 * in a GEMM of its block's shape, so results are deterministic for a
 * thread count. Whether they equal the unsplit product's bit for bit is
 * the GEMM's business: the portable GEMM's elements depend on neither M
 * nor N (blocked over K alone); OpenBLAS's on the kernels its tiles pick
 * (it tiles M by 8, 16 or 24 by machine), equal within rounding.
 */
#include "kernels.h"

/* Rows of a block of C: 8, fine enough to balance a batch of 32 over 4
 * threads (48, a multiple of every row tile, left 2 threads 96 and 32
 * rows of a batch of 128). */
#define TT_GEMM_ROW_QUANTUM 8
/* Columns of a block: whole 16-float vectors. */
#define TT_GEMM_COL_QUANTUM 16

typedef struct
{
  bool trans_a, trans_b, by_rows;
  int m, n, k;
  float alpha, beta;
  const float *a, *b;
  int lda, ldb, ldc;
  float *c;
  size_t quantum;
  const float *keep;            /* tt_gemm_split_relu_masked's, or NULL */
  int ldk;
  tt_gemm_fn *one;              /* without keep: each block's GEMM */
  /* tt_gemm_split_mixed's (a and b NULL) */
  tt_gemm_mixed_fn *mixed;
  tt_gemm_operand ma, mb;
} gemm_job;

/* the operand from element (row, col) of its matrix on */
static tt_gemm_operand
operand_at (tt_gemm_operand o, size_t row, size_t col)
{
  const size_t at = row * (size_t) o.ld + col;
  o.p = o.half ? (const void *) ((const uint16_t *) o.p + at) :
      (const void *) ((const float *) o.p + at);
  return o;
}

/* a block of C of the mixed operands: rows [lo, hi) (by_rows) or columns */
static void
gemm_mixed_part (const gemm_job * j, size_t lo, size_t hi)
{
  tt_gemm_operand a = j->ma, b = j->mb;
  int m = j->m, n = j->n;
  float *c = j->c;
  if (j->by_rows) {
    a = j->trans_a ? operand_at (a, 0, lo) : operand_at (a, lo, 0);
    c += lo * (size_t) j->ldc;
    m = (int) (hi - lo);
  } else {
    b = j->trans_b ? operand_at (b, lo, 0) : operand_at (b, 0, lo);
    c += lo;
    n = (int) (hi - lo);
  }
  j->mixed (j->trans_a, j->trans_b, m, n, j->k, j->alpha, a, b, j->beta, c,
      j->ldc);
}

/* a block of C: the relu-masked GEMM, or j->one */
static void
gemm_block (const gemm_job * j, int m, int n, const float *a,
    const float *b, float *c, const float *keep)
{
  if (j->one)
    j->one (j->trans_a, j->trans_b, m, n, j->k, j->alpha, a, j->lda, b,
        j->ldb, j->beta, c, j->ldc);
  else
    tt_gemm_relu_masked (j->trans_a, j->trans_b, m, n, j->k, j->alpha, a,
        j->lda, b, j->ldb, j->beta, c, j->ldc, keep, j->ldk);
}

static void
gemm_part (void *arg, unsigned part, unsigned n_parts)
{
  const gemm_job *j = arg;
  size_t lo, hi;
  tt_threads_range (j->by_rows ? (size_t) j->m : (size_t) j->n, j->quantum,
      part, n_parts, &lo, &hi);
  if (lo >= hi)
    return;
  if (j->mixed) {
    gemm_mixed_part (j, lo, hi);
    return;
  }
  const size_t row = j->by_rows ? lo : 0, col = j->by_rows ? 0 : lo;
  const float *keep = j->keep ? j->keep + row * (size_t) j->ldk + col : NULL;
  if (j->by_rows) {
    const float *a = j->trans_a ? j->a + lo : j->a + lo * (size_t) j->lda;
    gemm_block (j, (int) (hi - lo), j->n, a, j->b,
        j->c + lo * (size_t) j->ldc, keep);
  } else {
    const float *b = j->trans_b ? j->b + lo * (size_t) j->ldb : j->b + lo;
    gemm_block (j, j->m, (int) (hi - lo), j->a, b, j->c + lo, keep);
  }
}

void
tt_gemm_split (tt_threads * pool, bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc)
{
  tt_gemm_split_relu_masked (pool, trans_a, trans_b, m, n, k, alpha, a, lda,
      b, ldb, beta, c, ldc, NULL, 0);
}

static void
gemm_split_run (tt_threads * pool, gemm_job j)
{
  unsigned parts = 1;
  if (pool && (double) j.m * j.n * j.k >= TT_GEMM_SPLIT_MIN) {
    const size_t row_units = ((size_t) j.m + TT_GEMM_ROW_QUANTUM - 1) /
        TT_GEMM_ROW_QUANTUM;
    const size_t col_units = ((size_t) j.n + TT_GEMM_COL_QUANTUM - 1) /
        TT_GEMM_COL_QUANTUM;
    const unsigned threads = tt_threads_count (pool);
    /* rows when they make a part per thread, else the dimension that
     * makes more parts */
    j.by_rows = row_units >= threads || row_units >= col_units;
    if (!j.by_rows)
      j.quantum = TT_GEMM_COL_QUANTUM;
    parts = tt_threads_parts (pool, j.by_rows ? row_units : col_units, 1);
  }
  tt_threads_run (pool, gemm_part, &j, parts);
}

void
tt_gemm_split_relu_masked (tt_threads * pool, bool trans_a, bool trans_b,
    int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *c, int ldc,
    const float *keep, int ldk)
{
  gemm_job j = { trans_a, trans_b, true, m, n, k, alpha, beta, a, b, lda, ldb,
    ldc, c, TT_GEMM_ROW_QUANTUM, keep, ldk, NULL, NULL, {0}, {0}
  };
  gemm_split_run (pool, j);
}

void
tt_gemm_split_with (tt_threads * pool, tt_gemm_fn * one, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *c, int ldc)
{
  gemm_job j = { trans_a, trans_b, true, m, n, k, alpha, beta, a, b, lda, ldb,
    ldc, c, TT_GEMM_ROW_QUANTUM, NULL, 0, one, NULL, {0}, {0}
  };
  gemm_split_run (pool, j);
}

void
tt_gemm_split_mixed (tt_threads * pool, tt_gemm_mixed_fn * one, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, tt_gemm_operand a,
    tt_gemm_operand b, float beta, float *c, int ldc)
{
  gemm_job j = { trans_a, trans_b, true, m, n, k, alpha, beta, NULL, NULL,
    a.ld, b.ld, ldc, c, TT_GEMM_ROW_QUANTUM, NULL, 0, NULL, one, a, b
  };
  gemm_split_run (pool, j);
}
