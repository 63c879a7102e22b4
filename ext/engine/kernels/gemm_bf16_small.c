/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_gemm_f32_as_bf16_small: tt_gemm_f32_as_bf16 for the small products
 * of attention's heads (a head of 16 tokens by 16 features is a 16 x 16 x
 * 16 product, a few hundred nanoseconds), where the general kernel's
 * blocks cost more than the product: it rounds a block at a time into
 * 128 KiB of buffers, row by row, then packs B again into 8 x 32 tiles of
 * which a 16-column product fills half.
 *
 * Here, with AVX-512 BF16: op(B) is rounded and packed once, straight
 * from fp32, into pairs of K for every column (word t of column j at
 * bw[t * nb + j]: vcvtne2ps2bf16 then a permute, or for a transposed B a
 * 16 x 16 transpose of words); op(A) is rounded into pairs of K per row,
 * read in place by broadcasts (its rows' pairs consecutive, or for a
 * transposed A its columns' pairs packed as B's). Tiles of 8 rows by 32
 * columns (or 16) sum the pairs in K's order from zero by vdpbf16ps, then
 * alpha and beta as tt_gemm_bf16 stores them: for K up to its block (256)
 * the sums are tt_gemm_bf16's, so the result is the bits of
 * tt_gemm_f32_as_bf16 on this path (tests/unit/test_bf16_layers.c).
 *
 * tt_gemm_bf16_small_mixed takes either operand already in bf16 (a
 * layer's half-width scratch, tt_gemm_operand): its words are packed as
 * they are, the same words rounding packs from fp32, so the same bits.
 *
 * Sizes past the packed buffers (64 KiB on the stack), and CPUs without
 * AVX-512 BF16 (or tt_bf16_force_portable), go to tt_gemm_bf16_mixed.
 */
#include "kernels.h"

#include <string.h>

/* the packed operands' words (32 KiB each) and the deepest K */
#define SMALL_WORDS 8192
#define SMALL_K 256

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>
#include "transpose16_avx512.h"

#define TSMALL __attribute__ ((target ("avx512f,avx512bw,avx512bf16")))
#define TSMALL_INLINE static inline \
  __attribute__ ((always_inline, target ("avx512f,avx512bw,avx512bf16")))

TSMALL_INLINE __mmask16
small_mask16 (int n)
{
  return n >= 16 ? (__mmask16) 0xffff : n <= 0 ? 0 :
      (__mmask16) ((1u << n) - 1);
}

/* 32 bf16 of r0 (lanes 0-15) and r1 (16-31) as 16 words of (r0 j, r1 j) */
TSMALL_INLINE __m512i
small_interleave (__m512 r0, __m512 r1)
{
  const __m512i idx = _mm512_set_epi16 (31, 15, 30, 14, 29, 13, 28, 12, 27,
      11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
      1, 16, 0);
  return _mm512_permutexvar_epi16 (idx, (__m512i) _mm512_cvtne2ps_pbh (r1, r0));
}

/* words w[t * ld + j] = (x[2t][j], x[2t + 1][j]) rounded, for pairs t of
 * kq over rows of k (x[p][j] at x + p * ldx + j) and columns j of n, up
 * to n rounded up to 16 (zeros past k and n) */
TSMALL static void
small_pack_rows (const float *x, int ldx, int k, int n, uint32_t * w, int ld)
{
  const int kq = (k + 1) / 2;
  for (int t = 0; t < kq; t++)
    for (int j = 0; j < n; j += 16) {
      const __mmask16 m = small_mask16 (n - j);
      const float *s = x + (size_t) (2 * t) * ldx + j;
      const __m512 r0 = _mm512_maskz_loadu_ps (m, s);
      const __m512 r1 = 2 * t + 1 < k ? _mm512_maskz_loadu_ps (m, s + ldx) :
          _mm512_setzero_ps ();
      _mm512_storeu_si512 (w + (size_t) t * ld + j, small_interleave (r0, r1));
    }
}

/* words w[t * ld + j] = (x[j][2t], x[j][2t + 1]) rounded, x[j][p] at x +
 * j * ldx + p: each row's pairs, transposed 16 rows by 16 pairs at a time
 * (zeros past k and n, up to n rounded up to 16) */
TSMALL static void
small_pack_cols (const float *x, int ldx, int k, int n, uint32_t * w, int ld)
{
  const int kq = (k + 1) / 2;
  for (int j0 = 0; j0 < n; j0 += 16)
    for (int t0 = 0; t0 < kq; t0 += 16) {
      const int p0 = 2 * t0;
      const __mmask16 lo = small_mask16 (k - p0), hi = small_mask16 (k - p0 -
          16);
      __m512 r[16];
      for (int jj = 0; jj < 16; jj++) {
        const float *s = x + (size_t) (j0 + jj) * ldx + p0;
        r[jj] = j0 + jj < n ? (__m512) _mm512_cvtne2ps_pbh
            (_mm512_maskz_loadu_ps (hi, s + 16), _mm512_maskz_loadu_ps (lo,
                s)) : _mm512_setzero_ps ();
      }
      tt_transpose16_avx512 (r);
      for (int t = 0; t < 16 && t0 + t < kq; t++)
        _mm512_storeu_ps ((float *) (w + (size_t) (t0 + t) * ld + j0), r[t]);
    }
}

/* lanes [0, n) of a vector of 32 halves */
TSMALL_INLINE __mmask32
small_mask32 (int n)
{
  return n >= 32 ? (__mmask32) 0xffffffffu : n <= 0 ? 0 :
      (__mmask32) ((1u << n) - 1);
}

/* small_pack_rows of bf16 rows: word j of pair t is row 2t's half j
 * below row 2t + 1's */
TSMALL static void
small_pack_rows_half (const uint16_t * x, int ldx, int k, int n,
    uint32_t * w, int ld)
{
  const int kq = (k + 1) / 2;
  for (int t = 0; t < kq; t++)
    for (int j = 0; j < n; j += 16) {
      const __mmask32 m = small_mask32 (n - j < 16 ? n - j : 16);
      const uint16_t *s = x + (size_t) (2 * t) * ldx + j;
      const __m512i r0 = _mm512_cvtepu16_epi32 (_mm512_castsi512_si256
          (_mm512_maskz_loadu_epi16 (m, s)));
      const __m512i r1 = 2 * t + 1 < k ?
          _mm512_cvtepu16_epi32 (_mm512_castsi512_si256
          (_mm512_maskz_loadu_epi16 (m, s + ldx))) : _mm512_setzero_si512 ();
      _mm512_storeu_si512 (w + (size_t) t * ld + j, _mm512_or_si512 (r0,
              _mm512_slli_epi32 (r1, 16)));
    }
}

/* small_pack_cols of bf16 rows: a row's pairs are its 32-bit words,
 * transposed 16 rows by 16 words at a time (the half past an odd k
 * zero) */
TSMALL static void
small_pack_cols_half (const uint16_t * x, int ldx, int k, int n,
    uint32_t * w, int ld)
{
  const int kq = (k + 1) / 2;
  for (int j0 = 0; j0 < n; j0 += 16)
    for (int t0 = 0; t0 < kq; t0 += 16) {
      const int p0 = 2 * t0;
      const __mmask32 m = small_mask32 (k - p0);
      __m512 r[16];
      for (int jj = 0; jj < 16; jj++)
        r[jj] = j0 + jj < n ? _mm512_castsi512_ps (_mm512_maskz_loadu_epi16
            (m, x + (size_t) (j0 + jj) * ldx + p0)) : _mm512_setzero_ps ();
      tt_transpose16_avx512 (r);
      for (int t = 0; t < 16 && t0 + t < kq; t++)
        _mm512_storeu_ps ((float *) (w + (size_t) (t0 + t) * ld + j0), r[t]);
    }
}

/* op(X) (k rows by n columns: x[p][j] at x + p ld + j, or x + j ld + p
 * transposed) packed as pairs of K for every column */
TSMALL static void
small_pack (tt_gemm_operand x, bool trans, int k, int n, uint32_t * w, int ld)
{
  if (x.half && trans)
    small_pack_cols_half (x.p, x.ld, k, n, w, ld);
  else if (x.half)
    small_pack_rows_half (x.p, x.ld, k, n, w, ld);
  else if (trans)
    small_pack_cols (x.p, x.ld, k, n, w, ld);
  else
    small_pack_rows (x.p, x.ld, k, n, w, ld);
}

/* rows [0, m) of an untransposed A, k wide, as pairs: halves ah[i kq2 +
 * p], zero from k to kq2 */
TSMALL static void
small_pack_a_rows (tt_gemm_operand a, int m, int k, uint16_t * ah, int kq2)
{
  for (int i = 0; i < m; i++)
    for (int p = 0; p < kq2; p += 32) {
      const __mmask32 store = small_mask32 (kq2 - p);
      __m512i v;
      if (a.half) {
        v = _mm512_maskz_loadu_epi16 (small_mask32 (k - p),
            (const uint16_t *) a.p + (size_t) i * a.ld + p);
      } else {
        const float *s = (const float *) a.p + (size_t) i * a.ld + p;
        const __m512 lo = _mm512_maskz_loadu_ps (small_mask16 (k - p), s);
        const __m512 hi = _mm512_maskz_loadu_ps (small_mask16 (k - p - 16),
            s + 16);
        v = (__m512i) _mm512_cvtne2ps_pbh (hi, lo);
      }
      _mm512_mask_storeu_epi16 (ah + (size_t) i * kq2 + p, store, v);
    }
}

/* lanes m of alpha x (+ beta d) to d, as tt_gemm_bf16 stores */
TSMALL_INLINE void
small_store (float *d, __m512 x, __mmask16 m, float alpha, float beta)
{
  if (alpha != 1.0f)
    x = _mm512_mul_ps (x, _mm512_set1_ps (alpha));
  if (beta != 0.0f)
    x = _mm512_fmadd_ps (_mm512_set1_ps (beta), _mm512_maskz_loadu_ps (m,
            d), x);
  _mm512_mask_storeu_ps (d, m, x);
}

/* Named accumulators, not an array (GCC keeps an array of vectors in
 * memory): 8 rows by 2 vectors, or by 1 (16 columns or fewer) */
#define SMALL_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define SMALL_A(r) const uint32_t *a##r = aw + (size_t) (r < mr ? r : 0) * ars;
#define SMALL_DECL2(r) __m512 c##r##0 = _mm512_setzero_ps (), \
    c##r##1 = _mm512_setzero_ps ();
#define SMALL_DECL1(r) __m512 c##r##0 = _mm512_setzero_ps ();
#define SMALL_DOT2(r) { const __m512bh av = (__m512bh) _mm512_set1_epi32 ( \
        (int) a##r[(size_t) t * ats]);                                   \
    c##r##0 = _mm512_dpbf16_ps (c##r##0, av, b0);                        \
    c##r##1 = _mm512_dpbf16_ps (c##r##1, av, b1); }
#define SMALL_DOT1(r) c##r##0 = _mm512_dpbf16_ps (c##r##0, \
      (__m512bh) _mm512_set1_epi32 ((int) a##r[(size_t) t * ats]), b0);
#define SMALL_STORE2(r) if (r < mr) {                                   \
    small_store (c + (size_t) r * ldc, c##r##0, m0, alpha, beta);        \
    small_store (c + (size_t) r * ldc + 16, c##r##1, m1, alpha, beta); }
#define SMALL_STORE1(r) if (r < mr) \
    small_store (c + (size_t) r * ldc, c##r##0, m0, alpha, beta);

/* rows [0, mr) (mr <= 8) of C, columns [0, nr) (nr <= 32): A's word (r,
 * t) at aw[r ars + t ats], B's at bw[t ldb] */
TSMALL static void
small_tile (int mr, int nr, int kq, const uint32_t * aw, size_t ars,
    size_t ats, const uint32_t * bw, int ldb, float alpha, float beta,
    float *c, int ldc)
{
  const __mmask16 m0 = small_mask16 (nr), m1 = small_mask16 (nr - 16);
  SMALL_ROWS (SMALL_A);
  if (nr > 16) {
    SMALL_ROWS (SMALL_DECL2);
    for (int t = 0; t < kq; t++) {
      const uint32_t *bt = bw + (size_t) t * ldb;
      const __m512bh b0 = (__m512bh) _mm512_loadu_si512 (bt);
      const __m512bh b1 = (__m512bh) _mm512_loadu_si512 (bt + 16);
      SMALL_ROWS (SMALL_DOT2);
    }
    SMALL_ROWS (SMALL_STORE2);
  } else {
    SMALL_ROWS (SMALL_DECL1);
    for (int t = 0; t < kq; t++) {
      const __m512bh b0 = (__m512bh) _mm512_loadu_si512 (bw + (size_t) t * ldb);
      SMALL_ROWS (SMALL_DOT1);
    }
    SMALL_ROWS (SMALL_STORE1);
  }
}

TSMALL static void
small_gemm (bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    tt_gemm_operand a, tt_gemm_operand b, float beta, float *c, int ldc,
    int nb, int mb)
{
  _Alignas (64) uint32_t bw[SMALL_WORDS];
  _Alignas (64) uint32_t aw[SMALL_WORDS];
  const int kq = (k + 1) / 2;
  /* op(B)[p][j]: b[p ldb + j], or b[j ldb + p] transposed */
  small_pack (b, trans_b, k, n, bw, nb);
  /* op(A)[i][p]: rows' pairs, word (i, t) at aw[i kq2 + t]; transposed,
   * packed as B's, at aw[t mb + i] */
  size_t ars, ats;
  if (trans_a) {
    small_pack (a, false, k, m, aw, mb);
    ars = 1, ats = (size_t) mb;
  } else {
    small_pack_a_rows (a, m, k, (uint16_t *) aw, 2 * kq);
    ars = (size_t) kq, ats = 1;
  }
  for (int j0 = 0; j0 < n; j0 += 32)
    for (int i0 = 0; i0 < m; i0 += 8)
      small_tile (m - i0 < 8 ? m - i0 : 8, n - j0 < 32 ? n - j0 : 32, kq,
          aw + (size_t) i0 * ars, ars, ats, bw + j0, nb, alpha, beta,
          c + (size_t) i0 * ldc + j0, ldc);
}

#endif

void
tt_gemm_bf16_small_mixed (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, tt_gemm_operand a, tt_gemm_operand b, float beta, float *c,
    int ldc)
{
#if defined(__x86_64__) && defined(__GNUC__)
  const int kq = (k + 1) / 2, nb = (n + 15) / 16 * 16, mb = (m + 15) / 16 * 16;
  if (m > 0 && n > 0 && k > 0 && k <= SMALL_K && alpha != 0.0f &&
      (size_t) kq * nb <= SMALL_WORDS && (size_t) kq * mb <= SMALL_WORDS &&
      tt_bf16_hw_dot ()) {
    small_gemm (trans_a, trans_b, m, n, k, alpha, a, b, beta, c, ldc, nb, mb);
    return;
  }
#endif
  tt_gemm_bf16_mixed (trans_a, trans_b, m, n, k, alpha, a, b, beta, c, ldc);
}

void
tt_gemm_f32_as_bf16_small (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc)
{
  tt_gemm_bf16_small_mixed (trans_a, trans_b, m, n, k, alpha,
      tt_gemm_fp32_operand (a, lda), tt_gemm_fp32_operand (b, ldb), beta, c,
      ldc);
}
