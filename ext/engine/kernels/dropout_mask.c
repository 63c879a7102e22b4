/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tt_dropout_apply (kernels.h): a byte dropout mask applied */
#include "tt_layer.h"

/* keep where the mask is 1, 0.0f where it is 0: the products of the
 * float mask (x * 0.0f keeps x's sign on its zero), bit for bit; y may
 * be x (in place), the mask is never written through y */
TT_VECTOR_CLONES void
tt_dropout_apply (const float *x, const uint8_t * restrict mask, float keep,
    float *y, size_t n)
{
  for (size_t i = 0; i < n; i++)
    y[i] = x[i] * (mask[i] ? keep : 0.0f);
}
