/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tt_column_sums (kernels.h): a dense layer's bias gradient */
#include "tt_layer.h"

/* compiled for the wide registers too (additions only, the same sums):
 * see fc_sum_partials in layers/layer_fc.c */
TT_VECTOR_CLONES void
tt_column_sums (const float *restrict a, size_t rows, size_t lda, size_t c0,
    size_t c1, float *restrict out)
{
  for (size_t i = c0; i < c1; i++)
    out[i] = 0.0f;
  for (size_t r = 0; r < rows; r++)
    for (size_t i = c0; i < c1; i++)
      out[i] += a[r * lda + i];
}
