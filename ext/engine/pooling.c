/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Max and average pooling over NCHW planes.
 *
 * Each (sample, channel) plane is independent and small enough to stay in
 * cache, so the loops walk one plane at a time and, inside it, produce
 * output rows left to right; every window then reads a few short input
 * rows that the previous window mostly brought in already.
 */
#include "kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Taps t in [0, n) read coordinate start + t * dil. Returns in [*lo, *hi)
 * the taps whose coordinate lies in [0, limit); the others are padding. */
static inline void
pooling_tap_span (int start, int n, int dil, int limit, int *lo, int *hi)
{
  int64_t l = 0, h = n;

  if (start < 0)
    l = (-(int64_t) start + dil - 1) / dil;
  if (start >= limit)
    h = 0;
  else if ((int64_t) start + (int64_t) (n - 1) * dil >= limit)
    h = ((int64_t) limit - 1 - start) / dil + 1;
  if (l > h)
    l = h;
  *lo = (int) l;
  *hi = (int) h;
}

/* Output columns [*a, *b) whose whole window lies inside the row, so the
 * per-window clipping can be skipped for them. */
static void
pooling_interior (const tt_window_geom * g, int *a, int *b)
{
  int64_t lo = ((int64_t) g->pad_left + g->stride_w - 1) / g->stride_w;
  int64_t last = (int64_t) g->in_w - 1 - (int64_t) (g->kernel_w - 1)
      * g->dilation_w + g->pad_left;
  int64_t hi = last < 0 ? 0 : last / g->stride_w + 1;

  if (hi > g->out_w)
    hi = g->out_w;
  if (lo > hi)
    lo = hi;
  *a = (int) lo;
  *b = (int) hi;
}

/* Horizontal taps of output column ox: the full kernel in the interior,
 * clipped at the borders. Returns the first input column (may be < 0). */
static inline int
pooling_columns (const tt_window_geom * g, int ox, int xa, int xb, int *jlo,
    int *jhi)
{
  int ix0 = ox * g->stride_w - g->pad_left;

  if (ox >= xa && ox < xb) {
    *jlo = 0;
    *jhi = g->kernel_w;
  } else {
    pooling_tap_span (ix0, g->kernel_w, g->dilation_w, g->in_w, jlo, jhi);
  }
  return ix0;
}

void
tt_maxpool_forward (const tt_window_geom * g, int batch, const float *x,
    float *y, int32_t * argmax)
{
  const int iw = g->in_w, ow = g->out_w, dh = g->dilation_h,
      dw = g->dilation_w;
  const size_t in_plane = (size_t) g->in_h * iw;
  const size_t out_plane = (size_t) g->out_h * ow;
  const size_t planes = (size_t) batch * g->channels;
  int xa, xb;

  pooling_interior (g, &xa, &xb);
  for (size_t pl = 0; pl < planes; pl++) {
    const float *xp = x + pl * in_plane;
    float *yp = y + pl * out_plane;
    int32_t *ap = argmax + pl * out_plane;

    for (int oy = 0; oy < g->out_h; oy++) {
      int iy0 = oy * g->stride_h - g->pad_top;
      int ilo, ihi;
      pooling_tap_span (iy0, g->kernel_h, dh, g->in_h, &ilo, &ihi);

      for (int ox = 0; ox < ow; ox++) {
        int jlo, jhi;
        int ix0 = pooling_columns (g, ox, xa, xb, &jlo, &jhi);
        float best = 0.0f;
        int32_t arg = -1;

        for (int i = ilo; i < ihi; i++) {
          const int row = (iy0 + i * dh) * iw + ix0;
          for (int j = jlo; j < jhi; j++) {
            const float v = xp[row + j * dw];
            /* The first tap seeds the max (so a window of -inf still
             * has an argmax); a NaN wins and then sticks, as in PyTorch,
             * so a diverged input is not masked. */
            if (arg < 0 || v > best || (isnan (v) && !isnan (best))) {
              best = v;
              arg = row + j * dw;
            }
          }
        }
        /* A window made only of padding: no input wins, output 0. */
        yp[(size_t) oy * ow + ox] = best;
        ap[(size_t) oy * ow + ox] = arg;
      }
    }
  }
}

void
tt_maxpool_backward (const tt_window_geom * g, int batch, const float *dy,
    const int32_t * argmax, float *dx)
{
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t out_plane = (size_t) g->out_h * g->out_w;
  const size_t planes = (size_t) batch * g->channels;

  for (size_t pl = 0; pl < planes; pl++) {
    float *dxp = dx + pl * in_plane;
    const float *dyp = dy + pl * out_plane;
    const int32_t *ap = argmax + pl * out_plane;

    /* Zero the plane right before scattering into it, while it is hot. */
    memset (dxp, 0, sizeof (float) * in_plane);
    for (size_t o = 0; o < out_plane; o++)
      if (ap[o] >= 0)
        dxp[ap[o]] += dyp[o];
  }
}

void
tt_avgpool_forward (const tt_window_geom * g, int batch, const float *x,
    float *y)
{
  const int iw = g->in_w, ow = g->out_w, dh = g->dilation_h,
      dw = g->dilation_w;
  const size_t in_plane = (size_t) g->in_h * iw;
  const size_t out_plane = (size_t) g->out_h * ow;
  const size_t planes = (size_t) batch * g->channels;
  /* count_include_pad: the divisor never depends on clipping. */
  const float inv = 1.0f / ((float) g->kernel_h * (float) g->kernel_w);
  int xa, xb;

  pooling_interior (g, &xa, &xb);
  for (size_t pl = 0; pl < planes; pl++) {
    const float *xp = x + pl * in_plane;
    float *yp = y + pl * out_plane;

    for (int oy = 0; oy < g->out_h; oy++) {
      int iy0 = oy * g->stride_h - g->pad_top;
      int ilo, ihi;
      pooling_tap_span (iy0, g->kernel_h, dh, g->in_h, &ilo, &ihi);

      for (int ox = 0; ox < ow; ox++) {
        int jlo, jhi;
        int ix0 = pooling_columns (g, ox, xa, xb, &jlo, &jhi);
        float s = 0.0f;

        for (int i = ilo; i < ihi; i++) {
          const float *r = xp + (size_t) (iy0 + i * dh) * iw;
          for (int j = jlo; j < jhi; j++)
            s += r[ix0 + j * dw];
        }
        yp[(size_t) oy * ow + ox] = s * inv;
      }
    }
  }
}

void
tt_avgpool_backward (const tt_window_geom * g, int batch, const float *dy,
    float *dx)
{
  const int iw = g->in_w, ow = g->out_w, dh = g->dilation_h,
      dw = g->dilation_w;
  const size_t in_plane = (size_t) g->in_h * iw;
  const size_t out_plane = (size_t) g->out_h * ow;
  const size_t planes = (size_t) batch * g->channels;
  const float inv = 1.0f / ((float) g->kernel_h * (float) g->kernel_w);
  int xa, xb;

  pooling_interior (g, &xa, &xb);
  for (size_t pl = 0; pl < planes; pl++) {
    float *dxp = dx + pl * in_plane;
    const float *dyp = dy + pl * out_plane;

    /* Overlapping windows add up, so scatter into a zeroed plane. */
    memset (dxp, 0, sizeof (float) * in_plane);
    for (int oy = 0; oy < g->out_h; oy++) {
      int iy0 = oy * g->stride_h - g->pad_top;
      int ilo, ihi;
      pooling_tap_span (iy0, g->kernel_h, dh, g->in_h, &ilo, &ihi);

      for (int ox = 0; ox < ow; ox++) {
        int jlo, jhi;
        int ix0 = pooling_columns (g, ox, xa, xb, &jlo, &jhi);
        const float d = dyp[(size_t) oy * ow + ox] * inv;

        for (int i = ilo; i < ihi; i++) {
          float *r = dxp + (size_t) (iy0 + i * dh) * iw;
          for (int j = jlo; j < jhi; j++)
            r[ix0 + j * dw] += d;
        }
      }
    }
  }
}
