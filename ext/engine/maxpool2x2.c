/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Max pooling for the shape almost every CNN uses: a 2x2 window, stride 2,
 * no padding, no dilation. The general kernel (pooling.c) pays for window
 * bookkeeping and data-dependent branches on every tap; here each output
 * is four loads and three selects the compiler turns into blends.
 */
#include "tt_internal.h"

bool
tt_maxpool2x2_applies (const tt_window_geom * g)
{
  return g->kernel_h == 2 && g->kernel_w == 2 && g->stride_h == 2 &&
      g->stride_w == 2 && g->dilation_h == 1 && g->dilation_w == 1 &&
      g->pad_top == 0 && g->pad_bottom == 0 && g->pad_left == 0 &&
      g->pad_right == 0;
}

TT_VECTOR_CLONES void
tt_maxpool2x2_forward (const tt_window_geom * g, int batch, const float *x,
    float *y, int32_t * argmax)
{
  const int iw = g->in_w, oh = g->out_h, ow = g->out_w;
  const size_t in_plane = (size_t) g->in_h * iw, out_plane = (size_t) oh * ow;
  const size_t planes = (size_t) batch * g->channels;
  for (size_t p = 0; p < planes; p++) {
    const float *xp = x + p * in_plane;
    float *yp = y + p * out_plane;
    int32_t *ap = argmax + p * out_plane;
    for (int oy = 0; oy < oh; oy++) {
      const int r0 = 2 * oy * iw, r1 = r0 + iw;
      float *yr = yp + (size_t) oy * ow;
      int32_t *ar = ap + (size_t) oy * ow;
      for (int ox = 0; ox < ow; ox++) {
        const int i0 = r0 + 2 * ox, i2 = r1 + 2 * ox;
        const float a = xp[i0], b = xp[i0 + 1], c = xp[i2], d = xp[i2 + 1];
        /* first maximum wins, in reading order, as in pooling.c */
        const bool ab = b > a, cd = d > c;
        const float top = ab ? b : a, bottom = cd ? d : c;
        const int32_t itop = ab ? i0 + 1 : i0, ibottom = cd ? i2 + 1 : i2;
        const bool down = bottom > top;
        yr[ox] = down ? bottom : top;
        ar[ox] = down ? ibottom : itop;
      }
    }
  }
}
