/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fp16 GEMM inputs: tt_gemm_f16 (A and B in IEEE binary16, uint16_t; C
 * fp32, products and sums fp32) and tt_gemm_f32_as_f16 (fp32 operands
 * rounded to fp16 while the product runs), with their splits over the
 * threads.
 *
 * arm64 with FEAT_FHM (HWCAP_ASIMDFHM, checked at run time): FMLAL and
 * FMLAL2 multiply fp16 lanes and add the products to fp32 lanes, fused
 * (one rounding, to nearest even, per product added: a product of two
 * fp16 is exact in fp32, so each step is an fp32 FMA of the widened
 * values). op(B) is packed KC x NC at a time into NR-column panels (a
 * row of 8 fp16 columns a vector), op(A) into MR-row panels (a column of
 * 8 fp16 rows a vector); the tile is 8 x 8: 16 fp32 accumulators over
 * the block's K, stored once a block.
 *
 * Otherwise (x86-64, arm64 without FHM, or tt_bf16_force_portable): the
 * operands are converted to fp32 a block at a time into buffers on the
 * stack (fp16 widened; fp32 rounded to fp16 and widened back: F16C on
 * x86-64, NEON's conversions on arm64, portable otherwise) and each block
 * pair goes through tt_gemm. Rounding then widening is exact, so this
 * path's result is tt_gemm's on the rounded operands, block by block.
 *
 * tt_gemm_f32_as_f16 rounds in blocks that start on the blocks of both
 * paths, so the result is the bits of tt_gemm_f16 on the operands rounded
 * whole, on either path.
 */
#include "kernels.h"
#include "half_block.h"

#include <math.h>
#include <string.h>

/* ---- widened: blocks to fp32, multiplied by tt_gemm ------------------ */

static void
widen_f16_rows (const void *src, size_t ld, int rows, int cols, float *dst)
{
  const uint16_t *s = src;
  for (int r = 0; r < rows; r++)
    tt_f16_to_f32 (s + (size_t) r * ld, dst + (size_t) r * cols, (size_t) cols);
}

/* fp32 rounded to fp16 and widened back (exact), through a row of fp16 */
static void
round_f32_rows (const void *src, size_t ld, int rows, int cols, float *dst)
{
  const float *s = src;
  uint16_t h[TT_GEMM_WIDEN_COLS];
  for (int r = 0; r < rows; r++) {
    tt_f32_to_f16 (s + (size_t) r * ld, h, (size_t) cols);
    tt_f16_to_f32 (h, dst + (size_t) r * cols, (size_t) cols);
  }
}

/* ---- arm64 FEAT_FHM: FMLAL / FMLAL2 ---------------------------------- */

#if defined(__aarch64__) && defined(__GNUC__) && !defined(__clang__)
#define F16_FHM 1

#include "neon_store.h"

#define MR 8
#define NR 8
#define KC 256
#define NC 128

#define TFHM __attribute__ ((target ("arch=armv8.2-a+fp16fml")))

static inline int
f16_min (int x, int y)
{
  return x < y ? x : y;
}

/* Columns [j0, j0 + nc) and rows [p0, p0 + kc) of op(B): panel q, row p,
 * column j at bp[(q * kc + p) * NR + j], zero past nc */
static void
fhm_pack_b (bool trans_b, const uint16_t * b, int ldb, int p0, int kc,
    int j0, int nc, uint16_t * bp)
{
  const int panels = (nc + NR - 1) / NR;
  for (int q = 0; q < panels; q++)
    for (int p = 0; p < kc; p++) {
      uint16_t *d = bp + ((size_t) q * kc + p) * NR;
      for (int j = 0; j < NR; j++) {
        const int col = q * NR + j;
        d[j] = col >= nc ? 0 : trans_b ?
            b[(size_t) (j0 + col) * ldb + p0 + p] :
            b[(size_t) (p0 + p) * ldb + j0 + col];
      }
    }
}

/* Rows [i0, i0 + mr) and columns [p0, p0 + kc) of op(A): ap[p * MR + r],
 * zero past mr */
static void
fhm_pack_a (bool trans_a, const uint16_t * a, int lda, int i0, int mr,
    int p0, int kc, uint16_t * ap)
{
  for (int p = 0; p < kc; p++)
    for (int r = 0; r < MR; r++)
      ap[p * MR + r] = r >= mr ? 0 : trans_a ?
          a[(size_t) (p0 + p) * lda + i0 + r] :
          a[(size_t) (i0 + r) * lda + p0 + p];
}


/* Named accumulators (a row's low and high four columns) */
#define FHM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define FHM_DECL(r) float32x4_t c##r##l = vdupq_n_f32 (0), \
    c##r##h = vdupq_n_f32 (0);
#define FHM_FMA(r) c##r##l = vfmlalq_laneq_low_f16 (c##r##l, bv, av, r); \
    c##r##h = vfmlalq_laneq_high_f16 (c##r##h, bv, av, r);
#define FHM_STORE(r) if (r < mr) \
    tt_neon_store8 (c + r * ldc, c##r##l, c##r##h, nr, alpha, beta);

TFHM static void
fhm_tile (int mr, int nr, int kc, const uint16_t * ap, const uint16_t * bp,
    float alpha, float beta, float *c, ptrdiff_t ldc)
{
  FHM_ROWS (FHM_DECL);
  for (int p = 0; p < kc; p++) {
    const float16x8_t bv = vreinterpretq_f16_u16 (vld1q_u16 (bp + p * NR));
    const float16x8_t av = vreinterpretq_f16_u16 (vld1q_u16 (ap + p * MR));
    FHM_ROWS (FHM_FMA);
  }
  FHM_ROWS (FHM_STORE);
}

static void
gemm_f16_fhm (bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    const uint16_t * a, int lda, const uint16_t * b, int ldb, float beta,
    float *c, int ldc)
{
  _Alignas (64) uint16_t bp[KC * NC];
  _Alignas (64) uint16_t ap[KC * MR];
  for (int p0 = 0; p0 < k; p0 += KC) {
    const int kc = f16_min (KC, k - p0);
    const float bet = p0 == 0 ? beta : 1.0f;
    for (int j0 = 0; j0 < n; j0 += NC) {
      const int nc = f16_min (NC, n - j0);
      fhm_pack_b (trans_b, b, ldb, p0, kc, j0, nc, bp);
      for (int i0 = 0; i0 < m; i0 += MR) {
        const int mr = f16_min (MR, m - i0);
        fhm_pack_a (trans_a, a, lda, i0, mr, p0, kc, ap);
        for (int jr = 0; jr < nc; jr += NR)
          fhm_tile (mr, f16_min (NR, nc - jr), kc, ap,
              bp + (size_t) (jr / NR) * kc * NR, alpha, bet,
              c + (size_t) i0 * ldc + j0 + jr, ldc);
      }
    }
  }
}

#endif

void
tt_gemm_f16 (bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    const uint16_t * a, int lda, const uint16_t * b, int ldb, float beta,
    float *c, int ldc)
{
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0 || alpha == 0.0f) {
    tt_gemm_scale_c (m, n, beta, c, ldc);
    return;
  }
#ifdef F16_FHM
  if (tt_f16_hw_fmlal ()) {
    gemm_f16_fhm (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
        ldc);
    return;
  }
#endif
  const tt_widened_operand wa = { a, lda, sizeof *a, widen_f16_rows };
  const tt_widened_operand wb = { b, ldb, sizeof *b, widen_f16_rows };
  tt_gemm_widened (trans_a, trans_b, m, n, k, alpha, wa, wb, beta, c, ldc);
}

/* ---- fp32 operands, rounded to fp16 a block at a time ----------------- */

#ifdef F16_FHM
/* tt_half_blocks_gemm's blocks start on the FMLAL kernel's */
_Static_assert (TT_HALF_BLOCK_K % KC == 0 && TT_HALF_BLOCK_N % NC == 0
    && TT_HALF_BLOCK_M % MR == 0, "FMLAL's blocks");

/* fp32 operands rounded to fp16 a block at a time (half_block.h) */
static void
gemm_f16_mixed_fhm (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, tt_gemm_operand a, tt_gemm_operand b, float beta, float *c,
    int ldc)
{
  tt_half_blocks_gemm (tt_f32_to_f16, gemm_f16_fhm, trans_a, trans_b, m, n,
      k, alpha, a, b, beta, c, ldc);
}
#endif

/* an operand of the widened path: fp16 widened, fp32 rounded to fp16 and
 * widened back */
static tt_widened_operand
f16_widened (tt_gemm_operand o)
{
  const tt_widened_operand half = { o.p, o.ld, sizeof (uint16_t),
    widen_f16_rows
  };
  const tt_widened_operand rounded = { o.p, o.ld, sizeof (float),
    round_f32_rows
  };
  return o.half ? half : rounded;
}

void
tt_gemm_f16_mixed (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, tt_gemm_operand a, tt_gemm_operand b, float beta, float *c,
    int ldc)
{
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0 || alpha == 0.0f) {
    tt_gemm_scale_c (m, n, beta, c, ldc);
    return;
  }
#ifdef F16_FHM
  if (tt_f16_hw_fmlal ()) {
    gemm_f16_mixed_fhm (trans_a, trans_b, m, n, k, alpha, a, b, beta, c, ldc);
    return;
  }
#endif
  /* the same blocks as tt_gemm_f16's widened path, each fp32 block
   * rounded and widened in one pass */
  tt_gemm_widened (trans_a, trans_b, m, n, k, alpha, f16_widened (a),
      f16_widened (b), beta, c, ldc);
}

void
tt_gemm_f32_as_f16 (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc)
{
  tt_gemm_f16_mixed (trans_a, trans_b, m, n, k, alpha,
      tt_gemm_fp32_operand (a, lda), tt_gemm_fp32_operand (b, ldb), beta, c,
      ldc);
}

/* ---- threads --------------------------------------------------------- */

/* tt_gemm_split's blocks of C, each a one-thread tt_gemm_f32_as_f16 with
 * the whole K */
void
tt_gemm_f32_as_f16_split (tt_threads * pool, bool trans_a, bool trans_b,
    int m, int n, int k, float alpha, const float *a, int lda, const float *b,
    int ldb, float beta, float *c, int ldc)
{
  tt_gemm_split_with (pool, tt_gemm_f32_as_f16, trans_a, trans_b, m, n, k,
      alpha, a, lda, b, ldb, beta, c, ldc);
}
