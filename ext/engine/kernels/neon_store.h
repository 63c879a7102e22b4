/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The arm64 half-width GEMM tiles' store (gemm_bf16.c's BFDOT,
 * gemm_f16.c's FMLAL): a row of 8 fp32 sums in two NEON vectors.
 */
#ifndef TT_NEON_STORE_H
#define TT_NEON_STORE_H

#include <arm_neon.h>
#include <math.h>

/* columns [0, nr) of alpha x (+ beta d) to d; beta == 0 does not read d
 * (it may hold NaN or garbage, as BLAS allows) */
static inline void
tt_neon_store8 (float *d, float32x4_t lo, float32x4_t hi, int nr,
    float alpha, float beta)
{
  float x[8];
  vst1q_f32 (x, lo);
  vst1q_f32 (x + 4, hi);
  for (int j = 0; j < nr; j++) {
    const float v = alpha == 1.0f ? x[j] : alpha * x[j];
    d[j] = beta != 0.0f ? fmaf (beta, d[j], v) : v;
  }
}

#endif
