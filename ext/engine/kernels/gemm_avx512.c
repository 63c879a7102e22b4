/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_gemm_avx512: the products of small layers (fully_connected at the
 * batches devices train with, small convolutions) on CPUs with AVX-512.
 *
 * OpenBLAS picks its kernels by OPENBLAS_CORETYPE, which our environments
 * pin (Haswell: 256-bit), so on a CPU with full-width 512-bit units (Zen
 * 5, Intel server cores) half of the arithmetic goes unused: measured on
 * the MLP's shapes (32 x 256 x 784 and the like) this kernel runs
 * 2.1-2.5x OpenBLAS's single-thread speed. A CPU without AVX-512 never
 * runs it (tt_gemm falls back to BLAS).
 *
 * Layout: C is cut into MR x NR tiles (8 rows, two 16-float vectors), each
 * accumulated in 16 registers over the whole of K and stored once. op(A)
 * is read in place, one broadcast scalar at a time (any transpose, through
 * a row and a column stride). op(B) is read in place when it is not
 * transposed (a row of B is a row of the tile); transposed, it is
 * transposed 16 x 16 at a time into a K x NR panel on the stack.
 *
 * Every element of C is one chain of fused multiply-adds over p = 0..K-1
 * in order, whatever M, N or the tile it falls in: so a product of some
 * rows of A gives bit for bit the rows of the whole product (update as
 * you go computes the weight gradient a chunk of rows at a time).
 */
#include "kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>
#include "transpose16_avx512.h"

#define MR 8
#define NR 32
/* Largest K with a transposed B: its panel, K x NR floats, is on the
 * stack (32 KiB) */
#define KT 256
/* Largest K and M * K taken at all: beyond them a tile's A rows and B
 * panel outgrow the caches that this unblocked loop relies on, and
 * packing (OpenBLAS's) should pay off. Measured on the development
 * machine (Zen 5, OpenBLAS pinned to Haswell's kernels), one thread,
 * this kernel against OpenBLAS: 32x128x1600 (the CNN's dense layer) 67
 * against 151 us, 128x128x3136 674 against 1,091, 784x256x1024 with A
 * transposed 3,433 against 4,358, and still ahead at K = 8192 and M * K =
 * 2^22 (1.1-2.1x); these bounds (K 1024 and M * K 2^18 until
 * 2026-12-02) keep to shapes a device trains with. */
#define KMAX 4096
#define MKMAX (1 << 20)

#define T512 __attribute__ ((target ("avx512f")))
/* (a macro, which indent reads as one word) */
#define T512_INLINE static inline \
  __attribute__ ((always_inline, target ("avx512f")))

/* lanes [0, n) of a vector of 16 */
T512 static inline __mmask16
gemm_mask (int n)
{
  return n >= 16 ? (__mmask16) 0xffff : n <= 0 ? 0 :
      (__mmask16) ((1u << n) - 1);
}

/* lanes m of alpha x (+ beta d) to d, zero where keep (when not NULL)
 * is not positive */
T512_INLINE void
gemm_store (float *d, __m512 x, __mmask16 m, float alpha, float beta,
    const float *keep)
{
  if (alpha != 1.0f)
    x = _mm512_mul_ps (x, _mm512_set1_ps (alpha));
  /* beta == 0 must not read C: it may hold NaN or garbage, as BLAS
   * allows */
  if (beta != 0.0f)
    x = _mm512_fmadd_ps (_mm512_set1_ps (beta), _mm512_maskz_loadu_ps (m,
            d), x);
  /* ordered: NaN is not positive, as in the relu's own backward */
  if (keep)
    x = _mm512_maskz_mov_ps (_mm512_mask_cmp_ps_mask (m,
            _mm512_maskz_loadu_ps (m, keep), _mm512_setzero_ps (),
            _CMP_GT_OQ), x);
  _mm512_mask_storeu_ps (d, m, x);
}

T512_INLINE void
gemm_store_row (float *d, __m512 x0, __m512 x1, __mmask16 m0,
    __mmask16 m1, float alpha, float beta, const float *keep)
{
  gemm_store (d, x0, m0, alpha, beta, keep);
  gemm_store (d + 16, x1, m1, alpha, beta, keep ? keep + 16 : NULL);
}

/* row r of a tile's keep rows (NULL: none) */
#define GEMM_KEEP(r) (keep ? keep + r * ldk : NULL)

/* Named accumulators, not an array: GCC keeps an array of vectors in
 * memory and the kernel then runs at a third of its speed. */
#define GEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define GEMM_DECL(r) __m512 c##r##0 = _mm512_setzero_ps (), \
    c##r##1 = _mm512_setzero_ps ();
#define GEMM_FMA(r) { const __m512 av = _mm512_set1_ps (ap[r * rs]);  \
    c##r##0 = _mm512_fmadd_ps (av, b0, c##r##0);                     \
    c##r##1 = _mm512_fmadd_ps (av, b1, c##r##1); }
#define GEMM_STORE(r) gemm_store_row (c + r * ldc, c##r##0, c##r##1, m0, \
    m1, alpha, beta, GEMM_KEEP (r));

/* An MR-row tile, nr <= NR columns: op(A)[r][p] = a[r * rs + p * ps],
 * op(B)[p][j] = b[p * ldb + j]; keep (or NULL) the relu's output over C,
 * rows ldk apart (tt_gemm_relu_masked) */
T512 static void
gemm_tile8 (int nr, int k, const float *a, ptrdiff_t rs, ptrdiff_t ps,
    const float *b, ptrdiff_t ldb, float alpha, float beta, float *c,
    ptrdiff_t ldc, const float *keep, ptrdiff_t ldk)
{
  const __mmask16 m0 = gemm_mask (nr), m1 = gemm_mask (nr - 16);
  GEMM_ROWS (GEMM_DECL);
  if (nr == NR) {
    for (int p = 0; p < k; p++) {
      const __m512 b0 = _mm512_loadu_ps (b + p * ldb);
      const __m512 b1 = _mm512_loadu_ps (b + p * ldb + 16);
      const float *ap = a + p * ps;
      GEMM_ROWS (GEMM_FMA);
    }
  } else {
    for (int p = 0; p < k; p++) {
      const __m512 b0 = _mm512_maskz_loadu_ps (m0, b + p * ldb);
      const __m512 b1 = _mm512_maskz_loadu_ps (m1, b + p * ldb + 16);
      const float *ap = a + p * ps;
      GEMM_ROWS (GEMM_FMA);
    }
  }
  GEMM_ROWS (GEMM_STORE);
}

/* A 16-row tile of at most 16 columns (one vector a row): an 8-row tile
 * spends half its multiply-adds on a second vector of zeros there, and
 * the dense layer before a handful of classes has 10 columns in forward
 * and in its weight gradient (the MLP's output layer at batch 128:
 * 4.7 us a product each with 8-row tiles, 3.2-3.3 and 3.4 with this
 * one; the two kernels side by side, best of 7 x 1000 calls) */
#define GEMM_ROWS16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) \
    X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define GEMM_DECL1(r) __m512 c##r = _mm512_setzero_ps ();
#define GEMM_FMA1(r) c##r = _mm512_fmadd_ps (_mm512_set1_ps (ap[r * rs]), \
    b0, c##r);
#define GEMM_STORE1(r) gemm_store (c + r * ldc, c##r, m0, alpha, beta, \
    GEMM_KEEP (r));

T512 static void
gemm_tile16x16 (int nr, int k, const float *a, ptrdiff_t rs, ptrdiff_t ps,
    const float *b, ptrdiff_t ldb, float alpha, float beta, float *c,
    ptrdiff_t ldc, const float *keep, ptrdiff_t ldk)
{
  const __mmask16 m0 = gemm_mask (nr);
  GEMM_ROWS16 (GEMM_DECL1);
  for (int p = 0; p < k; p++) {
    const __m512 b0 = _mm512_maskz_loadu_ps (m0, b + p * ldb);
    const float *ap = a + p * ps;
    GEMM_ROWS16 (GEMM_FMA1);
  }
  GEMM_ROWS16 (GEMM_STORE1);
}

/* One row of the last, ragged rows (fewer than MR) */
T512 static void
gemm_tile1 (int nr, int k, const float *a, ptrdiff_t ps, const float *b,
    ptrdiff_t ldb, float alpha, float beta, float *c, const float *keep)
{
  const __mmask16 m0 = gemm_mask (nr), m1 = gemm_mask (nr - 16);
  const ptrdiff_t rs = 0, ldc = 0, ldk = 0;
  GEMM_DECL (0);
  for (int p = 0; p < k; p++) {
    const __m512 b0 = _mm512_maskz_loadu_ps (m0, b + p * ldb);
    const __m512 b1 = _mm512_maskz_loadu_ps (m1, b + p * ldb + 16);
    const float *ap = a + p * ps;
    GEMM_FMA (0);
  }
  GEMM_STORE (0);
}

/* bp[p * NR + j] = op(B)[p][j] = b[j * ldb + p] for p < k, j < nr; zero
 * for nr <= j < 16 * ceil (nr / 16) (the tiles read no column from nr on
 * but through masked loads, which touch no memory where masked off: a
 * panel of at most 16 columns, the attention heads' K^T, packs only
 * its first half) */
T512 static void
gemm_pack_bt (int nr, int k, const float *b, ptrdiff_t ldb, float *bp)
{
  for (int h = 0; h < nr; h += 16)
    for (int p0 = 0; p0 < k; p0 += 16) {
      const __mmask16 mp = gemm_mask (k - p0);
      __m512 r[16];
      for (int j = 0; j < 16; j++)
        r[j] = h + j < nr ? _mm512_maskz_loadu_ps (mp,
            b + (h + j) * ldb + p0) : _mm512_setzero_ps ();
      tt_transpose16_avx512 (r);
      for (int p = 0; p < 16 && p0 + p < k; p++)
        _mm512_storeu_ps (bp + (p0 + p) * NR + h, r[p]);
    }
}

T512 static void
gemm_run (bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    const float *a, int lda, const float *b, int ldb, float beta, float *c,
    int ldc, const float *keep, int ldk)
{
  _Alignas (64) float bp[KT * NR];
  const ptrdiff_t rs = trans_a ? 1 : lda, ps = trans_a ? lda : 1;
  for (int j0 = 0; j0 < n; j0 += NR) {
    const int nr = n - j0 < NR ? n - j0 : NR;
    const float *bj = b + j0;
    ptrdiff_t ldbj = ldb;
    if (trans_b) {
      gemm_pack_bt (nr, k, b + (size_t) j0 * ldb, ldb, bp);
      bj = bp;
      ldbj = NR;
    }
    int i0 = 0;
    /* the tile's keep rows */
#define GEMM_KEEP_AT(i) (keep ? keep + (size_t) (i) * ldk + j0 : NULL)
    if (nr <= 16)
      for (; i0 + 16 <= m; i0 += 16)
        gemm_tile16x16 (nr, k, a + i0 * rs, rs, ps, bj, ldbj, alpha, beta,
            c + (size_t) i0 * ldc + j0, ldc, GEMM_KEEP_AT (i0), ldk);
    for (; i0 + MR <= m; i0 += MR)
      gemm_tile8 (nr, k, a + i0 * rs, rs, ps, bj, ldbj, alpha, beta,
          c + (size_t) i0 * ldc + j0, ldc, GEMM_KEEP_AT (i0), ldk);
    for (; i0 < m; i0++)
      gemm_tile1 (nr, k, a + i0 * rs, ps, bj, ldbj, alpha, beta,
          c + (size_t) i0 * ldc + j0, GEMM_KEEP_AT (i0));
#undef GEMM_KEEP_AT
  }
}

bool
tt_gemm_avx512_relu_masked (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc, const float *keep, int ldk)
{
  /* (reads what libgcc's constructor found: no race between threads) */
  if (!__builtin_cpu_supports ("avx512f") || m <= 0 || n <= 0 || k <= 0
      || alpha == 0.0f || k > KMAX || (size_t) m * k > MKMAX || (trans_b
          && k > KT))
    return false;
  gemm_run (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
      keep, ldk);
  return true;
}

bool
tt_gemm_avx512 (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc)
{
  return tt_gemm_avx512_relu_masked (trans_a, trans_b, m, n, k, alpha, a,
      lda, b, ldb, beta, c, ldc, NULL, 0);
}

#else /* no x86-64 or no GNU C: never taken */

bool
tt_gemm_avx512_relu_masked (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc, const float *keep, int ldk)
{
  (void) trans_a, (void) trans_b, (void) m, (void) n, (void) k;
  (void) alpha, (void) a, (void) lda, (void) b, (void) ldb, (void) beta;
  (void) c, (void) ldc, (void) keep, (void) ldk;
  return false;
}

bool
tt_gemm_avx512 (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc)
{
  (void) trans_a, (void) trans_b, (void) m, (void) n, (void) k;
  (void) alpha, (void) a, (void) lda, (void) b, (void) ldb, (void) beta;
  (void) c, (void) ldc;
  return false;
}

#endif
