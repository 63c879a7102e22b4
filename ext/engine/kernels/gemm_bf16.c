/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_gemm_bf16: C (fp32) = alpha op(A) op(B) + beta C, A and B in bf16
 * (uint16_t), products summed in fp32.
 *
 * With AVX-512 BF16 (checked at run time): vdpbf16ps multiplies 16 pairs
 * of bf16 by 16 pairs and adds each pair's two products to an fp32 lane,
 * so K is taken two at a time. op(B) is packed, KC x NC at a time (64 KiB
 * on the stack), into NR-column panels where each pair of K rows is
 * interleaved (column j's two values side by side: two vectors hold a
 * pair of K for 32 columns); an MR-row tile of op(A) is read as 32-bit
 * pairs, broadcast, in place when A is not transposed (and the block's K
 * is even), else packed the same way (a few KiB). The tile is 8 rows by
 * 32 columns: 16 accumulators over the block's K, stored once a block
 * (the first block with beta, the next ones added). The instruction
 * treats denormal inputs and results as zero (it ignores MXCSR), so a
 * product or sum below 2^-126 is lost where the portable path keeps it.
 *
 * On arm64 with ARMv8.6's BF16 (HWCAP2_BF16, checked at run time): BFDOT
 * adds, to each fp32 lane, two bf16 products of a pair of K. Arm defines
 * it (without FEAT_EBF16's FPCR.EBF) as: the products and their sum
 * rounded to fp32 by round-to-odd, that sum added to the lane and
 * rounded to odd again, denormal inputs and results flushed to zero,
 * whatever FPCR says. A product of two bf16 is exact in fp32, so a pair
 * costs two roundings of at most an ulp each where an fp32 FMA chain
 * costs two of half an ulp: the sum of K products is within
 * K 2^-23 sum |a b| of the exact one (test_bf16's bound). op(B) is packed
 * into 8-column panels of pairs (a vector: four columns' pairs), op(A)
 * into 8-row panels of pairs (a vector: four rows'), the tile 8 x 8: 16
 * accumulators over a block's K (256), stored once a block.
 *
 * Otherwise (or forced, tt_bf16_force_portable): A and B are widened to
 * fp32 a block at a time into buffers on the stack (96 KiB) and each
 * block pair goes through tt_gemm, with its transposes.
 *
 * tt_gemm_bf16_split cuts C by rows or columns over the threads as
 * tt_gemm_split does (tt_gemm_split_mixed), each part a one-thread
 * tt_gemm_bf16 with the whole K (no partial sums: deterministic for a
 * thread count).
 *
 * tt_gemm_f32_as_bf16 (and _split): fp32 operands, rounded to bf16 (to
 * nearest even, tt_f32_to_bf16: vcvtne2ps2bf16 where the CPU has it) a
 * block at a time into buffers on the stack. With AVX-512 BF16 the
 * kernel rounds them itself: B's KC x NC block once, before it is packed,
 * A's KC x 128 rows once per block of columns (a fp32-operand product
 * of the zoo's shapes ran 1.0-1.35x faster, median 1.1x, than rounding
 * blocks of 128 x 256 into separate tt_gemm_bf16 calls, which packed B
 * again for every 128 rows: thread CPU time, medians of 9). Otherwise
 * each block pair goes through tt_gemm_bf16; the blocks start on the K
 * blocks, column blocks and row tiles of both of its paths. Either way
 * the result is the bits of tt_gemm_bf16 on the rounded operands.
 * tt_gemm_bf16_mixed takes each operand in fp32 (rounded so) or in bf16
 * already (read in place): the same blocks, the same bits.
 */
#include "kernels.h"
#include "half_block.h"

#include <string.h>

static inline int
bf16_min (int x, int y)
{
  return x < y ? x : y;
}

/* ---- portable: widen blocks, multiply in fp32 ------------------------ */

static void
widen_bf16_rows (const void *src, size_t ld, int rows, int cols, float *dst)
{
  const uint16_t *s = src;
  for (int r = 0; r < rows; r++)
    tt_bf16_to_f32 (s + (size_t) r * ld, dst + (size_t) r * cols,
        (size_t) cols);
}

/* ---- AVX-512 BF16 ---------------------------------------------------- */

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>
#include "transpose16_avx512.h"

#define MR 8
#define NR 32
#define KC 256
#define NC 128

#define TBF16 __attribute__ ((target ("avx512f,avx512bw,avx512bf16")))
/* (a macro, which indent reads as one word) */
#define TBF16_INLINE static inline \
  __attribute__ ((always_inline, target ("avx512f,avx512bw,avx512bf16")))

TBF16_INLINE uint32_t
bf16_pair (const uint16_t * p)
{
  uint32_t u;
  memcpy (&u, p, sizeof u);
  return u;
}

/* lanes [0, n) of a vector of 16 */
TBF16_INLINE __mmask16
bf16_mask16 (int n)
{
  return n >= 16 ? (__mmask16) 0xffff : n <= 0 ? 0 :
      (__mmask16) ((1u << n) - 1);
}

/* lanes [0, n) of a vector of 32 halves */
TBF16_INLINE __mmask32
bf16_mask32 (int n)
{
  return n >= 32 ? (__mmask32) 0xffffffffu : n <= 0 ? 0 :
      (__mmask32) ((1u << n) - 1);
}

/* Columns [j0, j0 + nc) and rows [p0, p0 + kc) of op(B) into panels of NR
 * columns: panel q, pair t, column j, half s at
 * bp[((q * kq + t) * NR + j) * 2 + s] = op(B)[p0 + 2t + s][j0 + q NR + j],
 * zero past kc and nc. */
TBF16 static void
bf16_pack_b (bool trans_b, const uint16_t * b, int ldb, int p0, int kc,
    int j0, int nc, uint16_t * bp)
{
  const int kq = (kc + 1) / 2, panels = (nc + NR - 1) / NR;
  if (!trans_b) {
    /* (lane 2j from row 0's j, 2j + 1 from row 1's j: the first half of
     * the columns, then the second) */
    __m512i lo_idx, hi_idx;
    {
      _Alignas (64) uint16_t lo[32], hi[32];
      for (int j = 0; j < 16; j++) {
        lo[2 * j] = (uint16_t) j;
        lo[2 * j + 1] = (uint16_t) (32 + j);
        hi[2 * j] = (uint16_t) (16 + j);
        hi[2 * j + 1] = (uint16_t) (48 + j);
      }
      lo_idx = _mm512_load_si512 (lo);
      hi_idx = _mm512_load_si512 (hi);
    }
    for (int q = 0; q < panels; q++) {
      const __mmask32 cols = bf16_mask32 (nc - q * NR);
      for (int t = 0; t < kq; t++) {
        const uint16_t *s = b + (size_t) (p0 + 2 * t) * ldb + j0 + q * NR;
        const __m512i r0 = _mm512_maskz_loadu_epi16 (cols, s);
        const __m512i r1 = 2 * t + 1 < kc ?
            _mm512_maskz_loadu_epi16 (cols, s + ldb) : _mm512_setzero_si512 ();
        uint16_t *d = bp + ((size_t) q * kq + t) * NR * 2;
        _mm512_storeu_si512 (d, _mm512_permutex2var_epi16 (r0, lo_idx, r1));
        _mm512_storeu_si512 (d + 32, _mm512_permutex2var_epi16 (r0, hi_idx,
                r1));
      }
    }
    return;
  }
  /* op(B)[p][j] = b[j][p]: a column's pair is one 32-bit word, and the
   * panel a transpose of those words, 16 columns by 16 pairs at a time
   * (a pair past kc, or half of one, loads as zero) */
  for (int q = 0; q < panels; q++)
    for (int h = 0; h < NR; h += 16)
      for (int t0 = 0; t0 < kq; t0 += 16) {
        const __mmask32 mp = bf16_mask32 (kc - 2 * t0);
        __m512 r[16];
        for (int jj = 0; jj < 16; jj++) {
          const int j = q * NR + h + jj;
          r[jj] = j < nc ? _mm512_castsi512_ps (_mm512_maskz_loadu_epi16 (mp,
                  b + (size_t) (j0 + j) * ldb + p0 + 2 * t0)) :
              _mm512_setzero_ps ();
        }
        tt_transpose16_avx512 (r);
        for (int t = 0; t < 16 && t0 + t < kq; t++)
          _mm512_storeu_ps ((float *) (void *) (bp + (((size_t) q * kq + t0 +
                          t) * NR + h) * 2), r[t]);
      }
}

/* Rows [i0, i0 + mr) and columns [p0, p0 + kc) of op(A), op(A)[i][p] =
 * a[i rs + p ps], as pairs: ap[(t * MR + r) * 2 + s] =
 * op(A)[i0 + r][p0 + 2t + s], zero past mr and kc */
TBF16 static void
bf16_pack_a (bool trans_a, const uint16_t * a, ptrdiff_t rs, ptrdiff_t ps,
    int i0, int mr, int p0, int kc, uint16_t * ap)
{
  const int kq = (kc + 1) / 2;
  int t0 = 0;
  if (trans_a && mr == MR)
    /* transposed A: a pair's two halves are MR consecutive values of two
     * rows of A, interleaved */
    for (; 2 * t0 + 1 < kc; t0++) {
      const uint16_t *s = a + i0 + (p0 + 2 * t0) * ps;
      const __m128i r0 = _mm_loadu_si128 ((const __m128i *) s);
      const __m128i r1 = _mm_loadu_si128 ((const __m128i *) (s + ps));
      _mm_storeu_si128 ((__m128i *) (ap + t0 * MR * 2),
          _mm_unpacklo_epi16 (r0, r1));
      _mm_storeu_si128 ((__m128i *) (ap + t0 * MR * 2 + MR),
          _mm_unpackhi_epi16 (r0, r1));
    }
  for (int t = t0; t < kq; t++)
    for (int s = 0; s < 2; s++) {
      const int p = 2 * t + s;
      for (int r = 0; r < MR; r++)
        ap[(t * MR + r) * 2 + s] = r < mr && p < kc ?
            a[(i0 + r) * rs + (p0 + p) * ps] : 0;
    }
}

/* lanes m of alpha x (+ beta d) to d */
TBF16_INLINE void
bf16_store (float *d, __m512 x, __mmask16 m, float alpha, float beta)
{
  if (alpha != 1.0f)
    x = _mm512_mul_ps (x, _mm512_set1_ps (alpha));
  /* beta == 0 must not read C: it may hold NaN or garbage, as BLAS
   * allows */
  if (beta != 0.0f)
    x = _mm512_fmadd_ps (_mm512_set1_ps (beta), _mm512_maskz_loadu_ps (m,
            d), x);
  _mm512_mask_storeu_ps (d, m, x);
}

/* Named accumulators, not an array (GCC keeps an array of vectors in
 * memory) */
#define BF16_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define BF16_DECL(r) __m512 c##r##0 = _mm512_setzero_ps (), \
    c##r##1 = _mm512_setzero_ps ();
#define BF16_DOT(r) { const __m512bh av = (__m512bh) _mm512_set1_epi32 ( \
        (int) bf16_pair (ap + r * rs));                                 \
    c##r##0 = _mm512_dpbf16_ps (c##r##0, av, b0);                      \
    c##r##1 = _mm512_dpbf16_ps (c##r##1, av, b1); }
#define BF16_STORE(r) if (r < mr) {                                     \
    bf16_store (c + r * ldc, c##r##0, m0, alpha, beta);                \
    bf16_store (c + r * ldc + 16, c##r##1, m1, alpha, beta); }

/* An MR-row tile (mr rows stored), nr <= NR columns, kq pairs of K: the
 * pair (r, t) of op(A) at a + r rs + t qs, bp the packed panel */
TBF16 static void
bf16_tile (int mr, int nr, int kq, const uint16_t * a, ptrdiff_t rs,
    ptrdiff_t qs, const uint16_t * bp, float alpha, float beta, float *c,
    ptrdiff_t ldc)
{
  const __mmask16 m0 = bf16_mask16 (nr), m1 = bf16_mask16 (nr - 16);
  BF16_ROWS (BF16_DECL);
  for (int t = 0; t < kq; t++) {
    const __m512bh b0 = (__m512bh) _mm512_loadu_si512 (bp + t * 2 * NR);
    const __m512bh b1 = (__m512bh) _mm512_loadu_si512 (bp + t * 2 * NR + 32);
    const uint16_t *ap = a + t * qs;
    BF16_ROWS (BF16_DOT);
  }
  BF16_ROWS (BF16_STORE);
}

/* Rows of op(A) taken at a time when A is fp32, rounded into a buffer
 * (the block of K by these rows) once for every block of columns */
#define AMB 128

/* an operand's block as bf16 (half_block.h) */
static const uint16_t *
bf16_block (tt_gemm_operand o, int r0, int c0, int rows, int cols,
    uint16_t * buf, int *ld)
{
  return tt_half_block (o, tt_f32_to_bf16, r0, c0, rows, cols, buf, ld);
}

/* Operands of either kind (tt_gemm_operand): an fp32 one is rounded a
 * block at a time (B's KC x NC block once, A's KC x AMB rows once per
 * block of columns) and packed as a bf16 one would be, so the products,
 * sums and their order are those of the bf16 operands it rounds to. */
TBF16 static void
gemm_bf16_avx512 (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, tt_gemm_operand oa, tt_gemm_operand ob, float beta,
    float *c, int ldc)
{
  _Alignas (64) uint16_t bp[KC * NC];
  _Alignas (64) uint16_t ap[KC * MR];
  _Alignas (64) uint16_t bs[KC * NC];   /* fp32 B's block, rounded */
  _Alignas (64) uint16_t as[KC * AMB];  /* fp32 A's, rounded */
  for (int p0 = 0; p0 < k; p0 += KC) {
    const int kc = bf16_min (KC, k - p0), kq = (kc + 1) / 2;
    const float bet = p0 == 0 ? beta : 1.0f;
    for (int j0 = 0; j0 < n; j0 += NC) {
      const int nc = bf16_min (NC, n - j0);
      {
        int ldb;
        const uint16_t *b = trans_b ? bf16_block (ob, j0, p0, nc, kc, bs,
            &ldb) : bf16_block (ob, p0, j0, kc, nc, bs, &ldb);
        bf16_pack_b (trans_b, b, ldb, 0, kc, 0, nc, bp);
      }
      for (int ib = 0; ib < m; ib += AMB) {
        const int mb = bf16_min (AMB, m - ib);
        int lda;
        const uint16_t *a = trans_a ? bf16_block (oa, p0, ib, kc, mb, as,
            &lda) : bf16_block (oa, ib, p0, mb, kc, as, &lda);
        const ptrdiff_t ars = trans_a ? 1 : lda, aps = trans_a ? lda : 1;
        for (int i0 = 0; i0 < mb; i0 += MR) {
          const int mr = bf16_min (MR, mb - i0);
          const uint16_t *at = ap;
          ptrdiff_t rs = 2, qs = 2 * MR;
          if (!trans_a && !(kc & 1) && mr == MR) {
            /* in place: a row's pairs are consecutive */
            at = a + (size_t) i0 *lda;
            rs = lda;
            qs = 2;
          } else {
            bf16_pack_a (trans_a, a, ars, aps, i0, mr, 0, kc, ap);
          }
          for (int jr = 0; jr < nc; jr += NR)
            bf16_tile (mr, bf16_min (NR, nc - jr), kq, at, rs, qs,
                bp + (size_t) (jr / NR) * kq * NR * 2, alpha, bet,
                c + (size_t) (ib + i0) * ldc + j0 + jr, ldc);
        }
      }
    }
  }
}

#endif

/* ---- arm64 ARMv8.6 BF16: BFDOT --------------------------------------- */

#if defined(__aarch64__) && defined(__GNUC__) && !defined(__clang__)
#define BF16_BFDOT 1

#include "neon_store.h"
#include <math.h>

#define AMR 8
#define ANR 8
#define AKC 256
#define ANC 128

#define TBFDOT __attribute__ ((target ("arch=armv8.2-a+bf16")))

/* Columns [j0, j0 + nc) and rows [p0, p0 + kc) of op(B) as pairs of K:
 * bp[((q * kq + t) * ANR + j) * 2 + s] = op(B)[p0 + 2t + s][j0 + q ANR + j],
 * zero past kc and nc (a vector: four columns' pairs) */
static void
bfdot_pack_b (bool trans_b, const uint16_t * b, int ldb, int p0, int kc,
    int j0, int nc, uint16_t * bp)
{
  const int kq = (kc + 1) / 2, panels = (nc + ANR - 1) / ANR;
  for (int q = 0; q < panels; q++)
    for (int t = 0; t < kq; t++) {
      uint16_t *d = bp + ((size_t) q * kq + t) * ANR * 2;
      for (int j = 0; j < ANR; j++)
        for (int s = 0; s < 2; s++) {
          const int col = q * ANR + j, p = 2 * t + s;
          d[j * 2 + s] = col >= nc || p >= kc ? 0 : trans_b ?
              b[(size_t) (j0 + col) * ldb + p0 + p] :
              b[(size_t) (p0 + p) * ldb + j0 + col];
        }
    }
}

/* Rows [i0, i0 + mr) and columns [p0, p0 + kc) of op(A) as pairs:
 * ap[(t * AMR + r) * 2 + s] = op(A)[i0 + r][p0 + 2t + s], zero past mr and
 * kc (a vector: four rows' pairs) */
static void
bfdot_pack_a (bool trans_a, const uint16_t * a, int lda, int i0, int mr,
    int p0, int kc, uint16_t * ap)
{
  const int kq = (kc + 1) / 2;
  for (int t = 0; t < kq; t++)
    for (int r = 0; r < AMR; r++)
      for (int s = 0; s < 2; s++) {
        const int p = 2 * t + s;
        ap[(t * AMR + r) * 2 + s] = r >= mr || p >= kc ? 0 : trans_a ?
            a[(size_t) (p0 + p) * lda + i0 + r] :
            a[(size_t) (i0 + r) * lda + p0 + p];
      }
}


/* Named accumulators: row r's columns 0-3 and 4-7; row r's pair is lane
 * r % 4 of the A vector r / 4 */
#define BFDOT_ROWS(X) X(0, a0, 0) X(1, a0, 1) X(2, a0, 2) X(3, a0, 3) \
    X(4, a1, 0) X(5, a1, 1) X(6, a1, 2) X(7, a1, 3)
#define BFDOT_DECL(r, v, l) float32x4_t c##r##0 = vdupq_n_f32 (0), \
    c##r##1 = vdupq_n_f32 (0);
#define BFDOT_DOT(r, v, l) c##r##0 = vbfdotq_laneq_f32 (c##r##0, b0, v, l); \
    c##r##1 = vbfdotq_laneq_f32 (c##r##1, b1, v, l);
#define BFDOT_STORE(r, v, l) if (r < mr) \
    tt_neon_store8 (c + r * ldc, c##r##0, c##r##1, nr, alpha, beta);

TBFDOT static void
bfdot_tile (int mr, int nr, int kq, const uint16_t * ap, const uint16_t * bp,
    float alpha, float beta, float *c, ptrdiff_t ldc)
{
  BFDOT_ROWS (BFDOT_DECL);
  for (int t = 0; t < kq; t++) {
    const bfloat16x8_t b0 = vreinterpretq_bf16_u16 (vld1q_u16 (bp + t * 16));
    const bfloat16x8_t b1 = vreinterpretq_bf16_u16 (vld1q_u16 (bp + t * 16 +
            8));
    const bfloat16x8_t a0 = vreinterpretq_bf16_u16 (vld1q_u16 (ap + t * 16));
    const bfloat16x8_t a1 = vreinterpretq_bf16_u16 (vld1q_u16 (ap + t * 16 +
            8));
    BFDOT_ROWS (BFDOT_DOT);
  }
  BFDOT_ROWS (BFDOT_STORE);
}

static void
gemm_bf16_bfdot (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const uint16_t * a, int lda, const uint16_t * b, int ldb,
    float beta, float *c, int ldc)
{
  _Alignas (64) uint16_t bp[AKC * ANC];
  _Alignas (64) uint16_t ap[AKC * AMR];
  for (int p0 = 0; p0 < k; p0 += AKC) {
    const int kc = bf16_min (AKC, k - p0), kq = (kc + 1) / 2;
    const float bet = p0 == 0 ? beta : 1.0f;
    for (int j0 = 0; j0 < n; j0 += ANC) {
      const int nc = bf16_min (ANC, n - j0);
      bfdot_pack_b (trans_b, b, ldb, p0, kc, j0, nc, bp);
      for (int i0 = 0; i0 < m; i0 += AMR) {
        const int mr = bf16_min (AMR, m - i0);
        bfdot_pack_a (trans_a, a, lda, i0, mr, p0, kc, ap);
        for (int jr = 0; jr < nc; jr += ANR)
          bfdot_tile (mr, bf16_min (ANR, nc - jr), kq, ap,
              bp + (size_t) (jr / ANR) * kq * ANR * 2, alpha, bet,
              c + (size_t) i0 * ldc + j0 + jr, ldc);
      }
    }
  }
}

#endif

void
tt_gemm_bf16 (bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    const uint16_t * a, int lda, const uint16_t * b, int ldb, float beta,
    float *c, int ldc)
{
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0 || alpha == 0.0f) {
    tt_gemm_scale_c (m, n, beta, c, ldc);
    return;
  }
#if defined(__x86_64__) && defined(__GNUC__)
  if (tt_bf16_hw_dot ()) {
    gemm_bf16_avx512 (trans_a, trans_b, m, n, k, alpha,
        tt_gemm_half_operand (a, lda), tt_gemm_half_operand (b, ldb), beta, c,
        ldc);
    return;
  }
#elif defined(BF16_BFDOT)
  if (tt_bf16_hw_dot ()) {
    gemm_bf16_bfdot (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta,
        c, ldc);
    return;
  }
#endif
  const tt_widened_operand wa = { a, lda, sizeof *a, widen_bf16_rows };
  const tt_widened_operand wb = { b, ldb, sizeof *b, widen_bf16_rows };
  tt_gemm_widened (trans_a, trans_b, m, n, k, alpha, wa, wb, beta, c, ldc);
}

/* ---- fp32 operands, rounded to bf16 a block at a time ----------------- */

/* tt_half_blocks_gemm's blocks start on the K blocks, column blocks and
 * row tiles of every path of tt_gemm_bf16 */
_Static_assert (TT_HALF_BLOCK_K % TT_GEMM_WIDEN_COLS == 0
    && TT_HALF_BLOCK_N % TT_GEMM_WIDEN_COLS == 0
    && TT_HALF_BLOCK_M % TT_GEMM_WIDEN_ROWS == 0, "the widened path's blocks");
#if defined(__x86_64__) && defined(__GNUC__)
_Static_assert (TT_HALF_BLOCK_K % KC == 0 && TT_HALF_BLOCK_N % NC == 0
    && TT_HALF_BLOCK_M % MR == 0, "AVX-512 BF16's blocks");
#elif defined(BF16_BFDOT)
_Static_assert (TT_HALF_BLOCK_K % AKC == 0 && TT_HALF_BLOCK_N % ANC == 0
    && TT_HALF_BLOCK_M % AMR == 0, "BFDOT's blocks");
#endif

void
tt_gemm_bf16_mixed (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, tt_gemm_operand a, tt_gemm_operand b, float beta, float *c,
    int ldc)
{
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0 || alpha == 0.0f) {
    tt_gemm_scale_c (m, n, beta, c, ldc);
    return;
  }
  if (a.half && b.half) {
    tt_gemm_bf16 (trans_a, trans_b, m, n, k, alpha, a.p, a.ld, b.p, b.ld,
        beta, c, ldc);
    return;
  }
#if defined(__x86_64__) && defined(__GNUC__)
  /* the kernel rounds the fp32 operands' blocks itself */
  if (tt_bf16_hw_dot ()) {
    gemm_bf16_avx512 (trans_a, trans_b, m, n, k, alpha, a, b, beta, c, ldc);
    return;
  }
#endif
  tt_half_blocks_gemm (tt_f32_to_bf16, tt_gemm_bf16, trans_a, trans_b, m, n,
      k, alpha, a, b, beta, c, ldc);
}

void
tt_gemm_f32_as_bf16 (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc)
{
  tt_gemm_bf16_mixed (trans_a, trans_b, m, n, k, alpha,
      tt_gemm_fp32_operand (a, lda), tt_gemm_fp32_operand (b, ldb), beta, c,
      ldc);
}

/* ---- threads --------------------------------------------------------- */

void
tt_gemm_bf16_split (tt_threads * pool, bool trans_a, bool trans_b, int m,
    int n, int k, float alpha, const uint16_t * a, int lda, const uint16_t * b,
    int ldb, float beta, float *c, int ldc)
{
  tt_gemm_split_mixed (pool, tt_gemm_bf16_mixed, trans_a, trans_b, m, n, k,
      alpha, tt_gemm_half_operand (a, lda), tt_gemm_half_operand (b, ldb),
      beta, c, ldc);
}

void
tt_gemm_f32_as_bf16_split (tt_threads * pool, bool trans_a, bool trans_b,
    int m, int n, int k, float alpha, const float *a, int lda, const float *b,
    int ldb, float beta, float *c, int ldc)
{
  tt_gemm_split_mixed (pool, tt_gemm_bf16_mixed, trans_a, trans_b, m, n, k,
      alpha, tt_gemm_fp32_operand (a, lda), tt_gemm_fp32_operand (b, ldb),
      beta, c, ldc);
}
