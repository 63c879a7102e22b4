/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_plane_sums (kernels.h): a convolution's bias gradient alone, for a
 * layer whose filter is frozen (personalization's biases choice): each
 * channel's sum of its planes over the batch, channels split over the
 * pool's threads. Eight running sums a plane, added in a fixed order, so
 * the result does not depend on the threads.
 */
#include "tt_layer.h"
#include "kernels.h"
#include "tt_threads.h"

typedef struct
{
  const float *x;
  size_t batch, channels, plane;
  float *out;
} plane_job;

static TT_VECTOR_CLONES float
plane_sum (const float *restrict p, size_t n)
{
  float acc[8] = { 0 };
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++)
      acc[k] += p[i + k];
  float s = 0.0f;
  for (int k = 0; k < 8; k++)
    s += acc[k];
  for (; i < n; i++)
    s += p[i];
  return s;
}

static void
plane_part (void *arg, unsigned part, unsigned n_parts)
{
  const plane_job *j = arg;
  size_t c0, c1;
  tt_threads_range (j->channels, 1, part, n_parts, &c0, &c1);
  for (size_t c = c0; c < c1; c++) {
    float s = 0.0f;
    for (size_t b = 0; b < j->batch; b++)
      s += plane_sum (j->x + (b * j->channels + c) * j->plane, j->plane);
    j->out[c] = s;
  }
}

void
tt_plane_sums (tt_threads * pool, const float *x, size_t batch,
    size_t channels, size_t plane, float *out)
{
  plane_job j = { x, batch, channels, plane, out };
  const size_t total = batch * channels * plane;
  unsigned parts = total >= 65536 && channels >= 2 ?
      tt_threads_count (pool) : 1;
  if (parts > channels)
    parts = (unsigned) channels;
  tt_threads_run (parts > 1 ? pool : NULL, plane_part, &j, parts);
}
