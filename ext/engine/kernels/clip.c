/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The clip activation, y = min (max (x, lo), hi), PyTorch's
 * nn.Hardtanh (lo, hi); its derivative is 1 strictly inside the bounds
 * and 0 elsewhere, at the bounds too (Hardtanh's; torch.clamp's passes
 * the derivative at the bounds). Taken from y, so it runs in place: y at
 * a bound says only that x was at or beyond it.
 */
#include "tt_layer.h"
#include "tt_split.h"

TT_VECTOR_CLONES void
tt_clip_forward (float lo, float hi, size_t n, const float *x, float *y)
{
  /* a NaN fails both comparisons and stays NaN, as in PyTorch */
  for (size_t i = 0; i < n; i++) {
    const float v = x[i] < lo ? lo : x[i];
    y[i] = v > hi ? hi : v;
  }
}

TT_VECTOR_CLONES void
tt_clip_backward (float lo, float hi, size_t n, const float *y,
    const float *dy, float *dx)
{
  /* & and dy read on every lane: no branches, so the loop vectorizes */
  for (size_t i = 0; i < n; i++) {
    const float g = dy[i];
    dx[i] = ((y[i] > lo) & (y[i] < hi)) ? g : 0.0f;
  }
}

typedef struct
{
  float lo, hi;
  const float *y, *dy;
  float *out;
} clip_job;

static void
clip_forward_range (void *arg, size_t begin, size_t end)
{
  const clip_job *j = arg;
  tt_clip_forward (j->lo, j->hi, end - begin, j->y + begin, j->out + begin);
}

static void
clip_backward_range (void *arg, size_t begin, size_t end)
{
  const clip_job *j = arg;
  tt_clip_backward (j->lo, j->hi, end - begin, j->y + begin, j->dy + begin,
      j->out + begin);
}

/* by element ranges of 64 floats (whole cache lines and vectors), from
 * TT_ACTIVATION_SPLIT_MIN values, as the other activations */
void
tt_clip_forward_split (tt_threads * pool, float lo, float hi, size_t n,
    const float *x, float *y)
{
  clip_job j = { lo, hi, x, NULL, y };
  tt_split (pool, n, 64, TT_ACTIVATION_SPLIT_MIN, clip_forward_range, &j);
}

void
tt_clip_backward_split (tt_threads * pool, float lo, float hi, size_t n,
    const float *y, const float *dy, float *dx)
{
  clip_job j = { lo, hi, y, dy, dx };
  tt_split (pool, n, 64, TT_ACTIVATION_SPLIT_MIN, clip_backward_range, &j);
}
