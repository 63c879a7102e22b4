/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Window geometry, im2col/col2im and the convolution built on them.
 *
 * A convolution is lowered to GEMMs on the im2col matrix, so every flop
 * runs in tt_gemm, which is where the speed is. The im2col matrix of a
 * sample is not built whole: the output positions are cut into chunks and
 * each chunk's columns are built and consumed at once. A chunk is sized
 * to stay in L2 between im2col writing it and the GEMM packing it; a whole
 * sample's matrix (9x the input for a 3x3 kernel) would round-trip
 * through DRAM, which measured as the single largest cost of a conv. It
 * also shrinks the scratch to one chunk.
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

static inline void
window_fill (float *restrict d, float v, int n)
{
  int k = 0;
  for (; k + WINDOW_BLOCK <= n; k += WINDOW_BLOCK)
    for (int l = 0; l < WINDOW_BLOCK; l++)
      d[k + l] = v;
  for (; k < n; k++)
    d[k] = v;
}

/* Sum in double over independent lanes: one serial double chain would be
 * latency bound at several cycles per element. */
static double
window_sum (const float *s, int n)
{
  double lane[4] = { 0.0, 0.0, 0.0, 0.0 };
  double t;
  int k = 0;

  for (; k + 4 <= n; k += 4) {
    /* Unrolled so the lanes stay in registers rather than memory. */
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++)
      lane[l] += s[k + l];
  }
  t = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  for (; k < n; k++)
    t += s[k];
  return t;
}

/*
 * The im2col sweep over output positions [q0, q0 + nq) (flattened as
 * oy * out_w + ox), with the column matrix laid out [C*kh*kw][nq]. Given
 * img_in it fills col_out, padding reading as 0 (im2col); given col_in it
 * adds into img_out and drops padding taps (col2im). One walker for both
 * keeps them exact adjoints of each other.
 */
static void
window_sweep (const tt_window_geom * g, int q0, int nq, const float *img_in,
    float *col_out, const float *col_in, float *img_out)
{
  const int ow = g->out_w, iw = g->in_w, sw = g->stride_w;
  const size_t plane = (size_t) g->in_h * iw;
  const int oy_first = q0 / ow, oy_last = (q0 + nq - 1) / ow;
  const bool to_col = img_in != NULL;
  size_t row = 0;

  for (int c = 0; c < g->channels; c++) {
    const size_t img_c = c * plane;
    for (int i = 0; i < g->kernel_h; i++) {
      const int off_y = i * g->dilation_h - g->pad_top;
      int ylo, yhi;
      window_valid_span (g->out_h, g->stride_h, off_y, g->in_h, &ylo, &yhi);
      for (int j = 0; j < g->kernel_w; j++, row += nq) {
        const int off_x = j * g->dilation_w - g->pad_left;
        int xlo, xhi;
        window_valid_span (ow, sw, off_x, iw, &xlo, &xhi);

        for (int oy = oy_first; oy <= oy_last; oy++) {
          /* This output row's share of the chunk: columns [a, b). */
          const int a = oy == oy_first ? q0 - oy * ow : 0;
          const int b = oy == oy_last ? q0 + nq - oy * ow : ow;
          /* Column matrix index of column a, and image index of the
           * input row; offsets from there may be negative, so they are
           * applied as indices (a pointer before a buffer is undefined). */
          const size_t d = row + (size_t) (oy * ow + a - q0);
          size_t s;
          int lo, hi;

          if (oy < ylo || oy >= yhi) {
            /* The tap falls in vertical padding for the whole row. */
            if (to_col)
              memset (col_out + d, 0, sizeof (float) * (b - a));
            continue;
          }
          s = img_c + (size_t) (oy * g->stride_h + off_y) * iw;
          lo = xlo > a ? xlo : a;
          hi = xhi < b ? xhi : b;
          if (lo > b)
            lo = b;
          if (hi < lo)
            hi = lo;

          if (to_col) {
            float *dc = col_out + d;
            const float *si = img_in + s;
            memset (dc, 0, sizeof (float) * (lo - a));
            if (sw == 1) {
              memcpy (dc + (lo - a), si + lo + off_x,
                  sizeof (float) * (hi - lo));
            } else {
              for (int ox = lo; ox < hi; ox++)
                dc[ox - a] = si[ox * sw + off_x];
            }
            memset (dc + (hi - a), 0, sizeof (float) * (b - hi));
          } else {
            const float *dc = col_in + d;
            float *si = img_out + s;
            if (sw == 1) {
              window_add (si + lo + off_x, dc + (lo - a), hi - lo);
            } else {
              for (int ox = lo; ox < hi; ox++)
                si[ox * sw + off_x] += dc[ox - a];
            }
          }
        }
      }
    }
  }
}

void
tt_im2col (const tt_window_geom * g, const float *img, float *col)
{
  window_sweep (g, 0, g->out_h * g->out_w, img, col, NULL, NULL);
}

void
tt_col2im (const tt_window_geom * g, const float *col, float *img)
{
  window_sweep (g, 0, g->out_h * g->out_w, NULL, NULL, col, img);
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

/* im2col chunk budget, in floats: 512 KiB fits the L2 of current x86 and
 * ARM server cores, and keeps n large enough for an efficient GEMM. */
#define WINDOW_CHUNK_FLOATS (128 * 1024)
/* Chunk widths are rounded to this, a multiple of the GEMM's panels. */
#define WINDOW_CHUNK_ALIGN 64

/* Output positions per chunk. */
static int
window_chunk (const tt_window_geom * g)
{
  const size_t ckk = (size_t) g->channels * g->kernel_h * g->kernel_w;
  const int ohw = g->out_h * g->out_w;
  size_t q = WINDOW_CHUNK_FLOATS / ckk;

  if (q >= (size_t) ohw)
    return ohw;
  q = q / WINDOW_CHUNK_ALIGN * WINDOW_CHUNK_ALIGN;
  if (q < WINDOW_CHUNK_ALIGN)
    q = WINDOW_CHUNK_ALIGN;
  return q < (size_t) ohw ? (int) q : ohw;
}

/* C*kh*kw x (one chunk of output positions); 0 for the pointwise case,
 * where col is never touched and may be NULL. */
size_t
tt_conv2d_scratch_floats (const tt_window_geom * g)
{
  if (window_conv_is_pointwise (g))
    return 0;
  return (size_t) g->channels * g->kernel_h * g->kernel_w * window_chunk (g);
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
  const int chunk = pointwise ? ohw : window_chunk (g);

  for (int n = 0; n < batch; n++) {
    const float *xn = x + n * x_step;
    float *yn = y + n * y_step;
    float beta = 0.0f;

    /* Seeding y with the bias and accumulating (beta = 1) folds the bias
     * into the GEMM's own pass over y instead of a second sweep. */
    if (bias != NULL) {
      for (int f = 0; f < filters; f++)
        window_fill (yn + (size_t) f * ohw, bias[f], ohw);
      beta = 1.0f;
    }
    if (pointwise) {
      tt_gemm (false, false, filters, ohw, ckk, 1.0f, w, ckk, xn, ohw, beta,
          yn, ohw);
      continue;
    }
    for (int q0 = 0; q0 < ohw; q0 += chunk) {
      const int nq = ohw - q0 < chunk ? ohw - q0 : chunk;
      window_sweep (g, q0, nq, xn, col, NULL, NULL);
      tt_gemm (false, false, filters, nq, ckk, 1.0f, w, ckk, col, nq, beta,
          yn + q0, ohw);
    }
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
  const int chunk = pointwise ? ohw : window_chunk (g);

  if (batch <= 0)
    memset (dw, 0, sizeof (float) * (size_t) filters * ckk);

  /* dw = sum over samples and chunks of dy_chunk * col_chunk^T; the
   * first product overwrites dw (beta = 0), the rest accumulate. */
  for (int n = 0; n < batch; n++) {
    const float *xn = x + n * x_step;
    const float *dyn = dy + n * y_step;

    for (int q0 = 0; q0 < ohw; q0 += chunk) {
      const int nq = ohw - q0 < chunk ? ohw - q0 : chunk;
      const float beta = n == 0 && q0 == 0 ? 0.0f : 1.0f;

      if (pointwise) {
        tt_gemm (false, true, filters, ckk, ohw, 1.0f, dyn, ohw, xn, ohw,
            beta, dw, ckk);
      } else {
        window_sweep (g, q0, nq, xn, col, NULL, NULL);
        tt_gemm (false, true, filters, ckk, nq, 1.0f, dyn + q0, ohw, col, nq,
            beta, dw, ckk);
      }
    }
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
  const bool pointwise = window_conv_is_pointwise (g);
  const int chunk = pointwise ? ohw : window_chunk (g);

  for (int n = 0; n < batch; n++) {
    float *dxn = dx + n * x_step;
    const float *dyn = dy + n * y_step;

    if (pointwise) {
      /* col(dx) is dx itself, so the GEMM writes the gradient directly. */
      tt_gemm (true, false, ckk, ohw, filters, 1.0f, w, ckk, dyn, ohw, 0.0f,
          dxn, ohw);
      continue;
    }
    memset (dxn, 0, sizeof (float) * x_step);
    for (int q0 = 0; q0 < ohw; q0 += chunk) {
      const int nq = ohw - q0 < chunk ? ohw - q0 : chunk;
      tt_gemm (true, false, ckk, nq, filters, 1.0f, w, ckk, dyn + q0, ohw,
          0.0f, col, nq);
      window_sweep (g, q0, nq, NULL, NULL, col, dxn);
    }
  }
}
