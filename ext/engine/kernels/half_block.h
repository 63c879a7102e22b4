/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A block of a half-width GEMM's operand (tt_gemm_operand) in its half
 * format, for gemm_bf16.c (bf16) and gemm_f16.c (fp16), which differ
 * only in the rounding: read in place when the operand is half width
 * already, else its fp32 rows rounded into a buffer on the caller's
 * stack.
 */
#ifndef TT_HALF_BLOCK_H
#define TT_HALF_BLOCK_H

#include "kernels.h"

/* n fp32 values rounded to a half format: tt_f32_to_bf16, tt_f32_to_f16 */
typedef void tt_narrow_fn (const float *x, uint16_t * y, size_t n);

/* always inlined, so that each caller's narrow, a constant, is a direct
 * call once a row (a macro, which indent reads as one word) */
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

#endif
