/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The half-width GEMMs' portable path (gemm_bf16.c, gemm_f16.c): blocks
 * of the operands widened to fp32 (exactly: a bf16 or fp16 value is an
 * fp32 one) and multiplied by tt_gemm, with the whole K of a block
 * summed there. The blocks are fixed, so that the fp32-operand forms,
 * which round the same blocks, give these bits.
 */
#include "kernels.h"

#include <string.h>

#define WM TT_GEMM_WIDEN_ROWS
#define WK TT_GEMM_WIDEN_COLS
#define WN TT_GEMM_WIDEN_COLS

static inline int
widened_min (int x, int y)
{
  return x < y ? x : y;
}

void
tt_gemm_scale_c (int m, int n, float beta, float *c, int ldc)
{
  if (beta == 1.0f)
    return;
  for (int i = 0; i < m; i++) {
    float *d = c + (size_t) i * ldc;
    if (beta == 0.0f)
      memset (d, 0, sizeof (float) * (size_t) n);
    else
      for (int j = 0; j < n; j++)
        d[j] *= beta;
  }
}

void
tt_gemm_widened (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, tt_widened_operand a, tt_widened_operand b, float beta,
    float *c, int ldc)
{
  _Alignas (64) float aw[WM * WK];
  _Alignas (64) float bw[WK * WN];
  const char *ab = a.p, *bb = b.p;
  const size_t lda = (size_t) a.ld, ldb = (size_t) b.ld;
  for (int j0 = 0; j0 < n; j0 += WN) {
    const int nb = widened_min (WN, n - j0);
    for (int p0 = 0; p0 < k; p0 += WK) {
      const int kb = widened_min (WK, k - p0);
      /* the block keeps B's transpose: rows of nb (op(B) rows) or of kb
       * (transposed: op(B) columns) */
      if (trans_b)
        b.widen (bb + ((size_t) j0 * ldb + p0) * b.es, ldb, nb, kb, bw);
      else
        b.widen (bb + ((size_t) p0 * ldb + j0) * b.es, ldb, kb, nb, bw);
      const float bet = p0 == 0 ? beta : 1.0f;
      for (int i0 = 0; i0 < m; i0 += WM) {
        const int mb = widened_min (WM, m - i0);
        if (trans_a)
          a.widen (ab + ((size_t) p0 * lda + i0) * a.es, lda, kb, mb, aw);
        else
          a.widen (ab + ((size_t) i0 * lda + p0) * a.es, lda, mb, kb, aw);
        tt_gemm (trans_a, trans_b, mb, nb, kb, alpha, aw, trans_a ? mb : kb,
            bw, trans_b ? kb : nb, bet, c + (size_t) i0 * ldc + j0, ldc);
      }
    }
  }
}
