/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A GEMM in the format its layer runs (docs/precision.md): fp32, or its
 * fp32 inputs rounded to bf16 or fp16 while they are packed, sums in
 * fp32. One place chooses the kernel, so that every layer honours every
 * activation type the same way.
 */
#include "kernels.h"

void
tt_gemm_as (tt_gemm_inputs f, bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc)
{
  switch (f) {
    case TT_GEMM_BF16:
      tt_gemm_f32_as_bf16 (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
          beta, c, ldc);
      return;
    case TT_GEMM_FP16:
      tt_gemm_f32_as_f16 (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
          beta, c, ldc);
      return;
    case TT_GEMM_FP32:
    default:
      tt_gemm (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
  }
}

void
tt_gemm_as_split (tt_gemm_inputs f, tt_threads * pool, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *c, int ldc)
{
  switch (f) {
    case TT_GEMM_BF16:
      tt_gemm_f32_as_bf16_split (pool, trans_a, trans_b, m, n, k, alpha, a,
          lda, b, ldb, beta, c, ldc);
      return;
    case TT_GEMM_FP16:
      tt_gemm_f32_as_f16_split (pool, trans_a, trans_b, m, n, k, alpha, a,
          lda, b, ldb, beta, c, ldc);
      return;
    case TT_GEMM_FP32:
    default:
      tt_gemm_split (pool, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
          beta, c, ldc);
      return;
  }
}

void
tt_gemm_as_small (tt_gemm_inputs f, bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc)
{
  tt_gemm_as_small_mixed (f, trans_a, trans_b, m, n, k, alpha,
      tt_gemm_fp32_operand (a, lda), tt_gemm_fp32_operand (b, ldb), beta, c,
      ldc);
}

void
tt_gemm_as_small_mixed (tt_gemm_inputs f, bool trans_a, bool trans_b, int m,
    int n, int k, float alpha, tt_gemm_operand a, tt_gemm_operand b,
    float beta, float *c, int ldc)
{
  /* the general bf16 kernel's blocks cost 3x fp32 on a 16 x 16 x 16
   * product (gemm_bf16_small.c); fp16 widens into tt_gemm on x86-64,
   * whose small products need no other kernel */
  switch (f) {
    case TT_GEMM_BF16:
      tt_gemm_bf16_small_mixed (trans_a, trans_b, m, n, k, alpha, a, b, beta,
          c, ldc);
      return;
    case TT_GEMM_FP16:
      tt_gemm_f16_mixed (trans_a, trans_b, m, n, k, alpha, a, b, beta, c, ldc);
      return;
    case TT_GEMM_FP32:
    default:
      tt_gemm (trans_a, trans_b, m, n, k, alpha, a.p, a.ld, b.p, b.ld, beta,
          c, ldc);
      return;
  }
}

void
tt_gemm_as_mixed (tt_gemm_inputs f, tt_threads * pool, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, tt_gemm_operand a,
    tt_gemm_operand b, float beta, float *c, int ldc)
{
  switch (f) {
    case TT_GEMM_BF16:
      tt_gemm_split_mixed (pool, tt_gemm_bf16_mixed, trans_a, trans_b, m, n,
          k, alpha, a, b, beta, c, ldc);
      return;
    case TT_GEMM_FP16:
      tt_gemm_split_mixed (pool, tt_gemm_f16_mixed, trans_a, trans_b, m, n, k,
          alpha, a, b, beta, c, ldc);
      return;
    case TT_GEMM_FP32:
    default:
      tt_gemm_split (pool, trans_a, trans_b, m, n, k, alpha, a.p, a.ld, b.p,
          b.ld, beta, c, ldc);
      return;
  }
}

void
tt_narrow_as (tt_gemm_inputs f, const float *x, uint16_t * y, size_t n)
{
  if (f == TT_GEMM_FP16)
    tt_f32_to_f16 (x, y, n);
  else
    tt_f32_to_bf16 (x, y, n);
}

void
tt_widen_as (tt_gemm_inputs f, const uint16_t * x, float *y, size_t n)
{
  if (f == TT_GEMM_FP16)
    tt_f16_to_f32 (x, y, n);
  else
    tt_bf16_to_f32 (x, y, n);
}
