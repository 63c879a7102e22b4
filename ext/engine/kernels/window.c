/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Window geometry, shared by conv2d and pooling (im2col and col2im are the
 * batched convolution's, in conv2d.c).
 */
#include "kernels.h"

#include <limits.h>
#include <stdint.h>

int
tt_window_geom_init (tt_window_geom * g)
{
  int64_t padded_h, padded_w, eff_h, eff_w, out_h, out_w;
  uint64_t col;

  if (g == NULL)
    return -1;
  g->out_h = g->out_w = 0;

  if (g->channels < 1 || g->in_h < 1 || g->in_w < 1 || g->kernel_h < 1
      || g->kernel_w < 1 || g->stride_h < 1 || g->stride_w < 1
      || g->dilation_h < 1 || g->dilation_w < 1 || g->pad_top < 0
      || g->pad_bottom < 0 || g->pad_left < 0 || g->pad_right < 0)
    return -1;

  /* All in 64 bits: every operand is a positive int, so no sum or product
   * of two of them can overflow int64_t. */
  padded_h = (int64_t) g->in_h + g->pad_top + g->pad_bottom;
  padded_w = (int64_t) g->in_w + g->pad_left + g->pad_right;
  eff_h = (int64_t) g->dilation_h * (g->kernel_h - 1) + 1;
  eff_w = (int64_t) g->dilation_w * (g->kernel_w - 1) + 1;
  /* Kernels index padded coordinates with int, so the padded extent must
   * fit; then eff <= padded fits too. */
  if (padded_h > INT_MAX || padded_w > INT_MAX)
    return -1;
  if (eff_h > padded_h || eff_w > padded_w)
    return -1;
  out_h = (padded_h - eff_h) / g->stride_h + 1;
  out_w = (padded_w - eff_w) / g->stride_w + 1;

  /* Per-sample extents used as int strides or int GEMM dimensions, and
   * max pooling's index (a tap of the window, in up to 32 bits). */
  if ((int64_t) g->in_h * g->in_w > INT_MAX / g->channels)
    return -1;
  if ((int64_t) g->kernel_h * g->kernel_w > INT_MAX / g->channels)
    return -1;
  if (out_h * out_w > INT_MAX / g->channels)
    return -1;
  /* The im2col scratch is addressed with size_t; both factors are below
   * 2^31, so the product is exact in 64 bits. */
  col = (uint64_t) g->channels * g->kernel_h * g->kernel_w
      * (uint64_t) (out_h * out_w);
  if (col > PTRDIFF_MAX / sizeof (float))
    return -1;

  g->out_h = (int) out_h;
  g->out_w = (int) out_w;
  return 0;
}
