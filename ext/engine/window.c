/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Window geometry (shared by conv2d and pooling) and a per-sample
 * im2col/col2im. The engine's convolution is the batched one of conv2d.c;
 * these two remain as the exact-adjoint reference the kernel tests check
 * the window arithmetic with.
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
