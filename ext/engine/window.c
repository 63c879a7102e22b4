/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Window geometry, im2col/col2im and the convolution built on them.
 *
 * A convolution is lowered per sample to one GEMM on the im2col matrix:
 * that keeps the scratch at one sample's worth (C*kh*kw x out_h*out_w) and
 * lets every flop run in tt_gemm, which is where the speed is.
 */
#include "kernels.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

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

  /* Per-sample extents used as int strides or int GEMM dimensions, and the
   * argmax (an int32 index into one channel plane). */
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

/*
 * Output positions o in [0, n_out) read input coordinate o * stride + off.
 * Returns in [*lo, *hi) the positions where that coordinate lies inside
 * [0, n_in); the rest read padding. Computed in 64 bits because off may be
 * as low as -INT_MAX.
 */
static void
window_valid_span (int n_out, int stride, int off, int n_in, int *lo, int *hi)
{
  int64_t l = 0, h;

  if (off < 0)
    l = (-(int64_t) off + stride - 1) / stride;
  h = (int64_t) n_in - off;
  h = h <= 0 ? 0 : (h + stride - 1) / stride;
  if (h > n_out)
    h = n_out;
  if (l > h)
    l = h;
  *lo = (int) l;
  *hi = (int) h;
}

void
tt_im2col (const tt_window_geom * g, const float *img, float *col)
{
  const int ow = g->out_w, oh = g->out_h, iw = g->in_w;
  const size_t ohw = (size_t) oh * ow;
  const size_t plane = (size_t) g->in_h * iw;
  float *row = col;

  for (int c = 0; c < g->channels; c++) {
    const float *src_c = img + c * plane;
    for (int i = 0; i < g->kernel_h; i++) {
      int off_y = i * g->dilation_h - g->pad_top;
      int ylo, yhi;
      window_valid_span (oh, g->stride_h, off_y, g->in_h, &ylo, &yhi);
      for (int j = 0; j < g->kernel_w; j++, row += ohw) {
        int off_x = j * g->dilation_w - g->pad_left;
        int xlo, xhi;
        window_valid_span (ow, g->stride_w, off_x, iw, &xlo, &xhi);

        /* Whole output rows whose tap falls in vertical padding. */
        memset (row, 0, sizeof (float) * (size_t) ylo * ow);
        memset (row + (size_t) yhi * ow, 0,
            sizeof (float) * (size_t) (oh - yhi) * ow);
        for (int oy = ylo; oy < yhi; oy++) {
          /* Index from the row start: off_x may be negative, and a
           * pointer before the buffer would be undefined. */
          const float *s = src_c + (size_t) (oy * g->stride_h + off_y) * iw;
          float *d = row + (size_t) oy * ow;

          memset (d, 0, sizeof (float) * xlo);
          if (g->stride_w == 1) {
            memcpy (d + xlo, s + xlo + off_x, sizeof (float) * (xhi - xlo));
          } else {
            const int sw = g->stride_w;
            for (int ox = xlo; ox < xhi; ox++)
              d[ox] = s[ox * sw + off_x];
          }
          memset (d + xhi, 0, sizeof (float) * (ow - xhi));
        }
      }
    }
  }
}

/*
 * GCC's -O2 cost model ("very-cheap") vectorizes a loop only when its trip
 * count is a known multiple of the vector length and no runtime alias
 * check is needed. Hence the fixed-length inner blocks and the restrict
 * parameters in these helpers: they are what makes the loops SIMD at -O2.
 */
#define WINDOW_BLOCK 8

static inline void
window_add (float *restrict d, const float *restrict s, int n)
{
  int k = 0;
  for (; k + WINDOW_BLOCK <= n; k += WINDOW_BLOCK)
    for (int l = 0; l < WINDOW_BLOCK; l++)
      d[k + l] += s[k + l];
  for (; k < n; k++)
    d[k] += s[k];
}

/* Sum in double over independent lanes: one serial double chain would be
 * latency bound at several cycles per element. */
static double
window_sum (const float *s, int n)
{
  double lane[4] = { 0.0, 0.0, 0.0, 0.0 };
  double t;
  int k = 0;

  for (; k + 4 <= n; k += 4)
    for (int l = 0; l < 4; l++)
      lane[l] += s[k + l];
  t = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  for (; k < n; k++)
    t += s[k];
  return t;
}

void
tt_col2im (const tt_window_geom * g, const float *col, float *img)
{
  const int ow = g->out_w, oh = g->out_h, iw = g->in_w;
  const size_t ohw = (size_t) oh * ow;
  const size_t plane = (size_t) g->in_h * iw;
  const float *row = col;

  /* Mirror of tt_im2col: the same sweep, with the copy turned into an
   * accumulation and padding taps simply dropped. */
  for (int c = 0; c < g->channels; c++) {
    float *dst_c = img + c * plane;
    for (int i = 0; i < g->kernel_h; i++) {
      int off_y = i * g->dilation_h - g->pad_top;
      int ylo, yhi;
      window_valid_span (oh, g->stride_h, off_y, g->in_h, &ylo, &yhi);
      for (int j = 0; j < g->kernel_w; j++, row += ohw) {
        int off_x = j * g->dilation_w - g->pad_left;
        int xlo, xhi;
        window_valid_span (ow, g->stride_w, off_x, iw, &xlo, &xhi);

        for (int oy = ylo; oy < yhi; oy++) {
          float *d = dst_c + (size_t) (oy * g->stride_h + off_y) * iw;
          const float *s = row + (size_t) oy * ow;

          if (g->stride_w == 1) {
            window_add (d + xlo + off_x, s + xlo, xhi - xlo);
          } else {
            const int sw = g->stride_w;
            for (int ox = xlo; ox < xhi; ox++)
              d[ox * sw + off_x] += s[ox];
          }
        }
      }
    }
  }
}

/* A 1x1 window with unit stride and no padding makes im2col the identity
 * (dilation has no effect on a single tap), so x is the GEMM operand as is
 * and no scratch is needed. */
static bool
window_conv_is_pointwise (const tt_window_geom * g)
{
  return g->kernel_h == 1 && g->kernel_w == 1 && g->stride_h == 1
      && g->stride_w == 1 && g->pad_top == 0 && g->pad_bottom == 0
      && g->pad_left == 0 && g->pad_right == 0;
}

/* 0 for the pointwise case: col is then never touched and may be NULL. */
size_t
tt_conv2d_scratch_floats (const tt_window_geom * g)
{
  if (window_conv_is_pointwise (g))
    return 0;
  return (size_t) g->channels * g->kernel_h * g->kernel_w
      * ((size_t) g->out_h * g->out_w);
}

void
tt_conv2d_forward (const tt_window_geom * g, int filters, int batch,
    const float *x, const float *w, const float *bias, float *y, float *col)
{
  const int ckk = g->channels * g->kernel_h * g->kernel_w;
  const int ohw = g->out_h * g->out_w;
  const size_t x_step = (size_t) g->channels * g->in_h * g->in_w;
  const size_t y_step = (size_t) filters * ohw;
  const bool pointwise = window_conv_is_pointwise (g);

  for (int n = 0; n < batch; n++) {
    const float *xn = x + n * x_step;
    float *yn = y + n * y_step;
    const float *b = xn;
    float beta = 0.0f;

    if (!pointwise) {
      tt_im2col (g, xn, col);
      b = col;
    }
    /* Seeding y with the bias and accumulating (beta = 1) folds the bias
     * into the GEMM's own pass over y instead of a second sweep. */
    if (bias != NULL) {
      for (int f = 0; f < filters; f++) {
        float *yf = yn + (size_t) f * ohw;
        const float bf = bias[f];
        for (int p = 0; p < ohw; p++)
          yf[p] = bf;
      }
      beta = 1.0f;
    }
    tt_gemm (false, false, filters, ohw, ckk, 1.0f, w, ckk, b, ohw, beta, yn,
        ohw);
  }
}

void
tt_conv2d_backward_weight (const tt_window_geom * g, int filters,
    int batch, const float *x, const float *dy, float *dw, float *dbias,
    float *col)
{
  const int ckk = g->channels * g->kernel_h * g->kernel_w;
  const int ohw = g->out_h * g->out_w;
  const size_t x_step = (size_t) g->channels * g->in_h * g->in_w;
  const size_t y_step = (size_t) filters * ohw;
  const bool pointwise = window_conv_is_pointwise (g);

  if (batch <= 0)
    memset (dw, 0, sizeof (float) * (size_t) filters * ckk);

  /* The first sample overwrites dw (beta = 0), later ones accumulate. */
  for (int n = 0; n < batch; n++) {
    const float *xn = x + n * x_step;
    const float *b = xn;

    if (!pointwise) {
      tt_im2col (g, xn, col);
      b = col;
    }
    tt_gemm (false, true, filters, ckk, ohw, 1.0f, dy + n * y_step, ohw, b,
        ohw, n == 0 ? 0.0f : 1.0f, dw, ckk);
  }

  if (dbias != NULL) {
    /* batch * out_h * out_w terms per filter: accumulate in double so the
     * gradient does not degrade with batch size. */
    for (int f = 0; f < filters; f++) {
      double s = 0.0;
      for (int n = 0; n < batch; n++)
        s += window_sum (dy + n * y_step + (size_t) f * ohw, ohw);
      dbias[f] = (float) s;
    }
  }
}

void
tt_conv2d_backward_input (const tt_window_geom * g, int filters,
    int batch, const float *w, const float *dy, float *dx, float *col)
{
  const int ckk = g->channels * g->kernel_h * g->kernel_w;
  const int ohw = g->out_h * g->out_w;
  const size_t x_step = (size_t) g->channels * g->in_h * g->in_w;
  const size_t y_step = (size_t) filters * ohw;

  for (int n = 0; n < batch; n++) {
    float *dxn = dx + n * x_step;
    const float *dyn = dy + n * y_step;

    if (window_conv_is_pointwise (g)) {
      /* col(dx) is dx itself, so the GEMM writes the gradient directly. */
      tt_gemm (true, false, ckk, ohw, filters, 1.0f, w, ckk, dyn, ohw, 0.0f,
          dxn, ohw);
    } else {
      tt_gemm (true, false, ckk, ohw, filters, 1.0f, w, ckk, dyn, ohw, 0.0f,
          col, ohw);
      memset (dxn, 0, sizeof (float) * x_step);
      tt_col2im (g, col, dxn);
    }
  }
}
