/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The half-width GEMMs' fp32 operands rounded a block at a time, for
 * gemm_bf16.c (bf16) and gemm_f16.c (fp16), which differ only in the
 * rounding and in the kernel that multiplies the blocks: an operand's
 * block read in place when it is half width already, else its fp32 rows
 * rounded into a buffer on the caller's stack.
 */
#ifndef TT_HALF_BLOCK_H
#define TT_HALF_BLOCK_H

#include "kernels.h"

/* n fp32 values rounded to a half format: tt_f32_to_bf16, tt_f32_to_f16 */
typedef void tt_narrow_fn (const float *x, uint16_t * y, size_t n);
/* a GEMM of half-width operands in that format (tt_gemm_bf16's
 * arguments) */
typedef void tt_gemm_half_fn (bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, const uint16_t * a, int lda, const uint16_t * b,
    int ldb, float beta, float *c, int ldc);

/* always inlined, so that each caller's narrow and gemm, constants, are
 * direct calls (a macro, which indent reads as one word) */
#define TT_HALF_BLOCK_INLINE static inline __attribute__ ((always_inline))

/* the block of op rows [r0, r0 + rows) x columns [c0, c0 + cols) of o in
 * narrow's format: in place when o is half width (*ld its stride), else
 * rounded by narrow into buf (*ld = cols) */
TT_HALF_BLOCK_INLINE const uint16_t *
tt_half_block (tt_gemm_operand o, tt_narrow_fn * narrow, int r0, int c0,
    int rows, int cols, uint16_t * buf, int *ld)
{
  const size_t at = (size_t) r0 * (size_t) o.ld + (size_t) c0;
  if (o.half) {
    *ld = o.ld;
    return (const uint16_t *) o.p + at;
  }
  const float *src = (const float *) o.p + at;
  for (int r = 0; r < rows; r++)
    narrow (src + (size_t) r * (size_t) o.ld, buf + (size_t) r * cols,
        (size_t) cols);
  *ld = cols;
  return buf;
}

/* tt_half_blocks_gemm's blocks of K, of columns and of rows: each
 * caller's kernels block K, columns and rows by divisors of these (each
 * file asserts its own), so gemm on the blocks makes the sums, in the
 * order, of gemm on the operands rounded whole */
#define TT_HALF_BLOCK_K 256
#define TT_HALF_BLOCK_N 128
#define TT_HALF_BLOCK_M 128

/* C = alpha op(A) op(B) + beta C as gemm computes it on A and B rounded
 * whole by narrow: gemm on each block pair, rounded a block at a time
 * into buffers on the stack (64 KiB each) */
TT_HALF_BLOCK_INLINE void
tt_half_blocks_gemm (tt_narrow_fn * narrow, tt_gemm_half_fn * gemm,
    bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    tt_gemm_operand a, tt_gemm_operand b, float beta, float *c, int ldc)
{
  enum
  { BK = TT_HALF_BLOCK_K, BN = TT_HALF_BLOCK_N, BM = TT_HALF_BLOCK_M };
  _Alignas (64) uint16_t bh[BK * BN];
  _Alignas (64) uint16_t ah[BM * BK];
  for (int p0 = 0; p0 < k; p0 += BK) {
    const int kb = k - p0 < BK ? k - p0 : BK;
    const float bet = p0 == 0 ? beta : 1.0f;
    for (int j0 = 0; j0 < n; j0 += BN) {
      const int nb = n - j0 < BN ? n - j0 : BN;
      /* the block keeps B's layout: nb rows of kb (transposed) or kb
       * rows of nb */
      int ldbb, ldab;
      const uint16_t *bb = trans_b ?
          tt_half_block (b, narrow, j0, p0, nb, kb, bh, &ldbb) :
          tt_half_block (b, narrow, p0, j0, kb, nb, bh, &ldbb);
      for (int i0 = 0; i0 < m; i0 += BM) {
        const int mb = m - i0 < BM ? m - i0 : BM;
        const uint16_t *ab = trans_a ?
            tt_half_block (a, narrow, p0, i0, kb, mb, ah, &ldab) :
            tt_half_block (a, narrow, i0, p0, mb, kb, ah, &ldab);
        gemm (trans_a, trans_b, mb, nb, kb, alpha, ab, ldab, bb, ldbb, bet,
            c + (size_t) i0 * ldc + j0, ldc);
      }
    }
  }
}

#endif
