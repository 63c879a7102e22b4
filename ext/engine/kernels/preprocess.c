/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The preprocessing layers' arithmetic (layers/layer_preprocess_*.c):
 * flipping and translating each sample by its own draw, and normalizing
 * each sample to unit L2 norm; their derivatives. Arrays in, arrays out;
 * every pass split over the pool's threads by whole samples, each value
 * computed alike whatever the split (bit-identical to one thread).
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <math.h>
#include <string.h>

/* samples of at least this many values, all together, go to the threads */
#define PREPROCESS_SPLIT_MIN 16384

typedef struct
{
  uint32_t c, h, w;
  size_t n;                     /* values a sample */
  float eps;
  const float *draw, *x, *dy;
  float *y;
  bool back;
} prep_job;

/* ---- flip ------------------------------------------------------------ */

/* one row reversed; in place when y == x */
static TT_VECTOR_CLONES void
flip_row (const float *x, float *y, uint32_t w)
{
  if (x == y) {
    for (uint32_t i = 0; i < w / 2; i++) {
      const float t = y[i];
      y[i] = y[w - 1 - i];
      y[w - 1 - i] = t;
    }
    return;
  }
  for (uint32_t i = 0; i < w; i++)
    y[i] = x[w - 1 - i];
}

static void
flip_samples (void *arg, size_t begin, size_t end)
{
  const prep_job *j = arg;
  const size_t plane = (size_t) j->h * j->w;
  for (size_t b = begin; b < end; b++) {
    const int f = (int) j->draw[b];
    const float *x = j->x + b * j->n;
    float *y = j->y + b * j->n;
    if (!(f & 3)) {
      if (x != y)
        memcpy (y, x, j->n * sizeof *y);
      continue;
    }
    for (uint32_t c = 0; c < j->c; c++) {
      const float *xp = x + c * plane;
      float *yp = y + c * plane;
      if (f & 2) {
        /* rows swapped pairwise (through the other half when flipping
         * the width too), the middle row of an odd height alone */
        for (uint32_t r = 0; r < (j->h + 1) / 2; r++) {
          const uint32_t q = j->h - 1 - r;
          float *a = yp + (size_t) r * j->w, *z = yp + (size_t) q *j->w;
          const float *xa = xp + (size_t) r * j->w, *xz = xp + (size_t) q *j->w;
          if (r == q) {
            if (f & 1)
              flip_row (xa, a, j->w);
            else if (a != xa)
              memcpy (a, xa, j->w * sizeof *a);
            continue;
          }
          for (uint32_t i = 0; i < j->w; i++) {
            const float va = xa[(f & 1) ? j->w - 1 - i : i];
            const float vz = xz[(f & 1) ? j->w - 1 - i : i];
            if (x == y && (f & 1) && i >= (j->w + 1) / 2)
              break;
            if (x == y && (f & 1)) {
              /* in place and both: swap a[i] with z[w-1-i] and
               * a[w-1-i] with z[i] */
              const uint32_t k = j->w - 1 - i;
              const float a_i = a[i], a_k = a[k];
              a[i] = z[k];
              a[k] = z[i];
              z[i] = a_k;
              z[k] = a_i;
              continue;
            }
            a[i] = vz;
            z[i] = va;
          }
        }
      } else
        for (uint32_t r = 0; r < j->h; r++)
          flip_row (xp + (size_t) r * j->w, yp + (size_t) r * j->w, j->w);
    }
  }
}

void
tt_flip_samples (tt_threads * pool, size_t batch, uint32_t c, uint32_t h,
    uint32_t w, const float *flags, const float *x, float *y)
{
  prep_job j = {.c = c,.h = h,.w = w,.n = (size_t) c * h * w,.draw = flags,
    .x = x,.y = y
  };
  tt_split (pool, batch, 1, PREPROCESS_SPLIT_MIN / (j.n ? j.n : 1) + 1,
      flip_samples, &j);
}

/* ---- translate ------------------------------------------------------- */

/* OpenCV's BORDER_REFLECT (fedcba|abcdefgh|hgfedcb) of index i on n */
static inline int64_t
translate_reflect (int64_t i, int64_t n)
{
  const int64_t p = 2 * n;
  i %= p;
  if (i < 0)
    i += p;
  return i < n ? i : p - 1 - i;
}

/* Output (r, q) reads the input at (r + ty, q + tx) between the four
 * pixels around it, reflected at the borders, with bilinear weights; the
 * shift is the same for every pixel, so are the weights. Backward spreads
 * each output derivative over those four inputs (a sample at a time: no
 * two threads add to the same value). */
static void
translate_samples (void *arg, size_t begin, size_t end)
{
  const prep_job *j = arg;
  const size_t plane = (size_t) j->h * j->w;
  for (size_t b = begin; b < end; b++) {
    const float ty = j->draw[2 * b], tx = j->draw[2 * b + 1];
    const float fy0 = floorf (ty), fx0 = floorf (tx);
    const float wy = ty - fy0, wx = tx - fx0;
    const int64_t oy = (int64_t) fy0, ox = (int64_t) fx0;
    const float *x = j->back ? NULL : j->x + b * j->n;
    const float *dy = j->back ? j->dy + b * j->n : NULL;
    float *y = j->y + b * j->n;
    if (j->back)
      memset (y, 0, j->n * sizeof *y);
    for (uint32_t c = 0; c < j->c; c++) {
      for (uint32_t r = 0; r < j->h; r++) {
        const size_t r0 = (size_t) translate_reflect ((int64_t) r + oy, j->h);
        const size_t r1 = (size_t) translate_reflect ((int64_t) r + oy + 1,
            j->h);
        for (uint32_t q = 0; q < j->w; q++) {
          const size_t c0 = (size_t) translate_reflect ((int64_t) q + ox,
              j->w);
          const size_t c1 = (size_t) translate_reflect ((int64_t) q + ox + 1,
              j->w);
          const size_t p00 = c * plane + r0 * j->w + c0;
          const size_t p01 = c * plane + r0 * j->w + c1;
          const size_t p10 = c * plane + r1 * j->w + c0;
          const size_t p11 = c * plane + r1 * j->w + c1;
          const size_t o = c * plane + (size_t) r * j->w + q;
          if (!j->back) {
            y[o] = (1.0f - wy) * ((1.0f - wx) * x[p00] + wx * x[p01]) +
                wy * ((1.0f - wx) * x[p10] + wx * x[p11]);
            continue;
          }
          const float g = dy[o];
          y[p00] += (1.0f - wy) * (1.0f - wx) * g;
          y[p01] += (1.0f - wy) * wx * g;
          y[p10] += wy * (1.0f - wx) * g;
          y[p11] += wy * wx * g;
        }
      }
    }
  }
}

void
tt_translate_forward (tt_threads * pool, size_t batch, uint32_t c,
    uint32_t h, uint32_t w, const float *shifts, const float *x, float *y)
{
  prep_job j = {.c = c,.h = h,.w = w,.n = (size_t) c * h * w,.draw = shifts,
    .x = x,.y = y
  };
  tt_split (pool, batch, 1, PREPROCESS_SPLIT_MIN / (j.n ? j.n : 1) + 1,
      translate_samples, &j);
}

void
tt_translate_backward (tt_threads * pool, size_t batch, uint32_t c,
    uint32_t h, uint32_t w, const float *shifts, const float *dy, float *dx)
{
  prep_job j = {.c = c,.h = h,.w = w,.n = (size_t) c * h * w,.draw = shifts,
    .dy = dy,.y = dx,.back = true
  };
  tt_split (pool, batch, 1, PREPROCESS_SPLIT_MIN / (j.n ? j.n : 1) + 1,
      translate_samples, &j);
}

/* ---- l2norm ---------------------------------------------------------- */

static TT_VECTOR_CLONES float
l2_dot (const float *a, const float *b, size_t n)
{
  float s = 0.0f;
  for (size_t i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

static TT_VECTOR_CLONES void
l2_scale (const float *x, float *y, size_t n, float k)
{
  for (size_t i = 0; i < n; i++)
    y[i] = x[i] * k;
}

/* dx = (dy - x (x . dy) / (norm s)) / s, s = norm + eps */
static TT_VECTOR_CLONES void
l2_back (const float *x, const float *dy, float *dx, size_t n, float a, float k)
{
  for (size_t i = 0; i < n; i++)
    dx[i] = (dy[i] - x[i] * k) * a;
}

static void
l2norm_samples (void *arg, size_t begin, size_t end)
{
  const prep_job *j = arg;
  for (size_t b = begin; b < end; b++) {
    const float *x = j->x + b * j->n;
    const float norm = sqrtf (l2_dot (x, x, j->n));
    const float s = norm + j->eps;
    if (!j->back) {
      l2_scale (x, j->y + b * j->n, j->n, 1.0f / s);
      continue;
    }
    const float *dy = j->dy + b * j->n;
    /* at x = 0 the norm's derivative is taken as 0 (x is 0 there too) */
    const float k = norm > 0.0f ? l2_dot (x, dy, j->n) / (norm * s) : 0.0f;
    l2_back (x, dy, j->y + b * j->n, j->n, 1.0f / s, k);
  }
}

void
tt_l2norm_forward (tt_threads * pool, size_t batch, size_t n, float eps,
    const float *x, float *y)
{
  prep_job j = {.n = n,.eps = eps,.x = x,.y = y };
  tt_split (pool, batch, 1, PREPROCESS_SPLIT_MIN / (n ? n : 1) + 1,
      l2norm_samples, &j);
}

void
tt_l2norm_backward (tt_threads * pool, size_t batch, size_t n, float eps,
    const float *x, const float *dy, float *dx)
{
  prep_job j = {.n = n,.eps = eps,.x = x,.dy = dy,.y = dx,.back = true };
  tt_split (pool, batch, 1, PREPROCESS_SPLIT_MIN / (n ? n : 1) + 1,
      l2norm_samples, &j);
}
