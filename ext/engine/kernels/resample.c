/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * upsample2d's and channel_shuffle's arithmetic (layers/layer_resample.c).
 * Arrays in, arrays out; every pass split over the pool's threads by whole
 * planes (upsampling) or channels (shuffle), each value computed alike
 * whatever the split (bit-identical to one thread).
 *
 * Bilinear follows PyTorch's align_corners = False (and nntrainer's
 * upsample2d): output column o reads the input at x = (o + 0.5) / k - 0.5,
 * clamped below at 0, between floor (x) and the next column (the last one
 * at the right edge); rows alike.
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <string.h>

/* planes of at least this many values, all together, go to the threads */
#define RESAMPLE_SPLIT_MIN 16384

/* Where output index o of a scale-k axis of n inputs reads: i0, i1 and
 * the weight l1 of i1 (that of i0 is 1 - l1), as PyTorch computes them. */
TT_ALWAYS_INLINE void
bilinear_src (uint32_t o, uint32_t k, uint32_t n, uint32_t * i0,
    uint32_t * i1, float *l1)
{
  float x = ((float) o + 0.5f) * (1.0f / (float) k) - 0.5f;
  x = x < 0.0f ? 0.0f : x;
  const uint32_t a = (uint32_t) x;
  *i0 = a;
  *i1 = a + 1 < n ? a + 1 : a;
  *l1 = x - (float) a;
}

typedef struct
{
  uint32_t h, w, kh, kw;
  const float *x;
  float *y;
} up_job;

/* nearest: y[o][p] = x[o / kh][p / kw] */
static TT_VECTOR_CLONES void
nearest_planes (void *arg, size_t begin, size_t end)
{
  const up_job *j = arg;
  const size_t ow = (size_t) j->w * j->kw, in_plane = (size_t) j->h * j->w;
  const size_t out_plane = in_plane * j->kh * j->kw;
  for (size_t p = begin; p < end; p++) {
    const float *x = j->x + p * in_plane;
    float *y = j->y + p * out_plane;
    for (uint32_t r = 0; r < j->h; r++) {
      const float *xr = x + (size_t) r * j->w;
      float *yr = y + (size_t) r * j->kh * ow;
      if (j->kw == 2)
        for (uint32_t i = 0; i < j->w; i++) {
          yr[2 * i] = xr[i];
          yr[2 * i + 1] = xr[i];
      } else
        for (uint32_t i = 0; i < j->w; i++)
          for (uint32_t q = 0; q < j->kw; q++)
            yr[(size_t) i * j->kw + q] = xr[i];
      for (uint32_t q = 1; q < j->kh; q++)
        memcpy (yr + q * ow, yr, ow * sizeof *yr);
    }
  }
}

/* nearest backward: dx[r][i] = the sum of dy over its kh x kw block;
 * here x is dy and y is dx */
static TT_VECTOR_CLONES void
nearest_back_planes (void *arg, size_t begin, size_t end)
{
  const up_job *j = arg;
  const size_t ow = (size_t) j->w * j->kw, in_plane = (size_t) j->h * j->w;
  const size_t out_plane = in_plane * j->kh * j->kw;
  for (size_t p = begin; p < end; p++) {
    const float *dy = j->x + p * out_plane;
    float *dx = j->y + p * in_plane;
    for (uint32_t r = 0; r < j->h; r++) {
      float *dr = dx + (size_t) r * j->w;
      for (uint32_t q = 0; q < j->kh; q++) {
        const float *g = dy + ((size_t) r * j->kh + q) * ow;
        if (j->kw == 2)
          for (uint32_t i = 0; i < j->w; i++) {
            const float s = g[2 * i] + g[2 * i + 1];
            dr[i] = q ? dr[i] + s : s;
        } else
          for (uint32_t i = 0; i < j->w; i++) {
            float s = 0.0f;
            for (uint32_t t = 0; t < j->kw; t++)
              s += g[(size_t) i * j->kw + t];
            dr[i] = q ? dr[i] + s : s;
          }
      }
    }
  }
}

/* bilinear: each output row from the two input rows it lies between */
static TT_VECTOR_CLONES void
bilinear_planes (void *arg, size_t begin, size_t end)
{
  const up_job *j = arg;
  const uint32_t oh = j->h * j->kh, ow = j->w * j->kw;
  const size_t in_plane = (size_t) j->h * j->w;
  for (size_t p = begin; p < end; p++) {
    const float *x = j->x + p * in_plane;
    float *y = j->y + p * oh * ow;
    for (uint32_t o = 0; o < oh; o++) {
      uint32_t r0, r1;
      float h1;
      bilinear_src (o, j->kh, j->h, &r0, &r1, &h1);
      const float h0 = 1.0f - h1;
      const float *x0 = x + (size_t) r0 * j->w, *x1 = x + (size_t) r1 *j->w;
      float *yr = y + (size_t) o * ow;
      for (uint32_t q = 0; q < ow; q++) {
        uint32_t c0, c1;
        float w1;
        bilinear_src (q, j->kw, j->w, &c0, &c1, &w1);
        const float w0 = 1.0f - w1;
        yr[q] = h0 * (w0 * x0[c0] + w1 * x0[c1]) +
            h1 * (w0 * x1[c0] + w1 * x1[c1]);
      }
    }
  }
}

/* bilinear backward: each output derivative spread over the four inputs
 * it read, with their weights (a plane at a time: no two threads add to
 * the same value); x is dy, y is dx */
static void
bilinear_back_planes (void *arg, size_t begin, size_t end)
{
  const up_job *j = arg;
  const uint32_t oh = j->h * j->kh, ow = j->w * j->kw;
  const size_t in_plane = (size_t) j->h * j->w;
  for (size_t p = begin; p < end; p++) {
    const float *dy = j->x + p * oh * ow;
    float *dx = j->y + p * in_plane;
    memset (dx, 0, in_plane * sizeof *dx);
    for (uint32_t o = 0; o < oh; o++) {
      uint32_t r0, r1;
      float h1;
      bilinear_src (o, j->kh, j->h, &r0, &r1, &h1);
      const float h0 = 1.0f - h1;
      float *d0 = dx + (size_t) r0 * j->w, *d1 = dx + (size_t) r1 *j->w;
      const float *g = dy + (size_t) o * ow;
      for (uint32_t q = 0; q < ow; q++) {
        uint32_t c0, c1;
        float w1;
        bilinear_src (q, j->kw, j->w, &c0, &c1, &w1);
        const float w0 = 1.0f - w1;
        d0[c0] += h0 * w0 * g[q];
        d0[c1] += h0 * w1 * g[q];
        d1[c0] += h1 * w0 * g[q];
        d1[c1] += h1 * w1 * g[q];
      }
    }
  }
}

static void
upsample_run (tt_threads * pool, size_t planes, uint32_t h, uint32_t w,
    uint32_t kh, uint32_t kw, const float *x, float *y, tt_split_fn fn)
{
  up_job j = { h, w, kh, kw, x, y };
  const size_t plane = (size_t) h * w * kh * kw;
  tt_split (pool, planes, 1, (RESAMPLE_SPLIT_MIN + plane - 1) / plane, fn, &j);
}

void
tt_upsample2d_forward (tt_threads * pool, bool bilinear, size_t planes,
    uint32_t h, uint32_t w, uint32_t kh, uint32_t kw, const float *x, float *y)
{
  upsample_run (pool, planes, h, w, kh, kw, x, y,
      bilinear ? bilinear_planes : nearest_planes);
}

void
tt_upsample2d_backward (tt_threads * pool, bool bilinear, size_t planes,
    uint32_t h, uint32_t w, uint32_t kh, uint32_t kw, const float *dy,
    float *dx)
{
  upsample_run (pool, planes, h, w, kh, kw, dy, dx,
      bilinear ? bilinear_back_planes : nearest_back_planes);
}

/* ---- channel shuffle ------------------------------------------------- */

typedef struct
{
  size_t a, b, plane;
  const float *x;
  float *y;
} shuffle_job;

/* output channels [begin, end) of every sample: y[n][j][i] = x[n][i][j]
 * with the channels viewed as [a][b] in x and [b][a] in y */
static void
shuffle_channels (void *arg, size_t begin, size_t end)
{
  const shuffle_job *s = arg;
  const size_t ch = s->a * s->b;
  for (size_t k = begin; k < end; k++) {
    const size_t n = k / ch, r = k % ch;
    const size_t jb = r / s->a, ia = r % s->a;
    memcpy (s->y + k * s->plane, s->x + (n * ch + ia * s->b + jb) * s->plane,
        s->plane * sizeof *s->y);
  }
}

void
tt_channel_shuffle (tt_threads * pool, size_t batch, size_t a, size_t b,
    size_t plane, const float *x, float *y)
{
  shuffle_job s = { a, b, plane, x, y };
  tt_split (pool, batch * a * b, 1,
      (RESAMPLE_SPLIT_MIN + plane - 1) / plane, shuffle_channels, &s);
}
