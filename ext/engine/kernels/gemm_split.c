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
} gemm_job;

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
    ldc, c, TT_GEMM_ROW_QUANTUM, keep, ldk, NULL
  };
  gemm_split_run (pool, j);
}

void
tt_gemm_split_with (tt_threads * pool, tt_gemm_fn * one, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *c, int ldc)
{
  gemm_job j = { trans_a, trans_b, true, m, n, k, alpha, beta, a, b, lda, ldb,
    ldc, c, TT_GEMM_ROW_QUANTUM, NULL, 0, one
  };
  gemm_split_run (pool, j);
}
