/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Transposed convolution (layers/layer_conv2d_transpose.c) as conv2d's
 * adjoint, on conv2d's own im2col and col2im (conv2d.c) and the engine's
 * GEMM. The geometry g is that of the conv2d whose input derivative this
 * layer's forward is: g->channels, in_h, in_w are the transposed layer's
 * output (F channels), g->out_h, out_w its input (C channels):
 *
 *   forward     y_b  = col2im (Wc^T x_b)        Wc: [C][F*kh*kw]
 *   input grad  dx_b = Wc im2col (dy_b)         (conv2d's forward)
 *   weight grad dWc^T = sum_b im2col (dy_b) x_b^T
 *
 * Wc is nntrainer's filter [F][C][kh][kw] with its first two axes swapped
 * (tt_conv_transpose_permute). With G groups (PyTorch's grouped
 * ConvTranspose2d) the filter is [F/G][C][kh][kw] and Wc [C][F/G*kh*kw]:
 * group g's C/G input channels and F/G output channels, whose rows of the
 * columns are contiguous, make their own products of the same form. Every pass goes sample by sample through
 * one sample's columns: thread i of the pool takes the i-th contiguous
 * range of the batch with its columns in its worker's scratch (the
 * caller's in col), and the weight gradient sums each range into its own
 * partial, added in thread order after the job (deterministic for a
 * thread count, within rounding of one thread's); without the workers'
 * scratch the caller runs it all.
 */
#include "tt_layer.h"

#include <string.h>

void
tt_conv_transpose_permute (const float *w, int f, int c, int kk, float *wc)
{
  for (int i = 0; i < f; i++)
    for (int j = 0; j < c; j++)
      memcpy (wc + ((size_t) j * f + i) * kk, w + ((size_t) i * c + j) * kk,
          (size_t) kk * sizeof *wc);
}

/* A worker's scratch: one sample's columns, then (weight gradient) its
 * partial dWc^T and dbias, each on whole cache lines */
static size_t
convt_cols (const tt_window_geom * g)
{
  const size_t n = (size_t) g->channels * g->kernel_h * g->kernel_w *
      g->out_h * g->out_w;
  return (n + 15) & ~(size_t) 15;
}

static size_t
convt_dwt (const tt_window_geom * g, int in_ch)
{
  const size_t n = (size_t) g->channels * g->kernel_h * g->kernel_w * in_ch;
  return (n + 15) & ~(size_t) 15;
}

size_t
tt_conv_transpose_worker_floats (const tt_window_geom * g, int in_ch,
    bool gradient)
{
  return convt_cols (g) + (gradient ? convt_dwt (g, in_ch) +
      (size_t) g->channels : 0);
}

typedef struct
{
  tt_threads *pool;
  const tt_window_geom *g;
  int in_ch, groups, batch;
  const float *x, *wc, *bias, *dy;
  float *y, *col, *dx, *dwt, *dbias;
} convt_job;

/* y += bias, plane by plane */
static TT_VECTOR_CLONES void
convt_add_bias (float *y, const float *bias, int planes, size_t plane)
{
  for (int f = 0; f < planes; f++) {
    const float bf = bias[f];
    float *yf = y + (size_t) f * plane;
    for (size_t p = 0; p < plane; p++)
      yf[p] += bf;
  }
}

/* sum over the plane, added to *s */
static TT_VECTOR_CLONES float
convt_plane_sum (const float *d, size_t plane, float s)
{
  for (size_t p = 0; p < plane; p++)
    s += d[p];
  return s;
}

static float *
convt_part_cols (const convt_job * j, unsigned part)
{
  return part ? tt_threads_scratch (j->pool, part) : j->col;
}

static void
convt_forward_part (void *arg, unsigned part, unsigned n_parts)
{
  const convt_job *j = arg;
  const tt_window_geom *g = j->g;
  const size_t hw = (size_t) g->out_h * g->out_w;
  const size_t out_plane = (size_t) g->in_h * g->in_w;
  const size_t out_sample = (size_t) g->channels * out_plane;
  const int fkk = g->channels / j->groups * g->kernel_h * g->kernel_w;
  const int cg = j->in_ch / j->groups;
  float *cc = convt_part_cols (j, part);
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  for (size_t b = lo; b < hi; b++) {
    for (int gi = 0; gi < j->groups; gi++)
      tt_gemm (true, false, fkk, (int) hw, cg, 1.0f,
          j->wc + (size_t) gi * cg * fkk, fkk,
          j->x + (b * j->in_ch + (size_t) gi * cg) * hw, (int) hw, 0.0f,
          cc + (size_t) gi * fkk * hw, (int) hw);
    float *y = j->y + b * out_sample;
    memset (y, 0, out_sample * sizeof *y);
    tt_col2im (g, cc, hw, y);
    if (j->bias)
      convt_add_bias (y, j->bias, g->channels, out_plane);
  }
}

void
tt_conv_transpose_forward (tt_threads * pool, const tt_window_geom * g,
    int in_ch, int groups, int batch, const float *x, const float *wc,
    const float *bias, float *y, float *col)
{
  convt_job j = {.pool = pool,.g = g,.in_ch = in_ch,.groups = groups,
    .batch = batch,.x = x,
    .wc = wc,.bias = bias,.y = y,.col = col
  };
  tt_threads_run_partials (pool, convt_cols (g), convt_forward_part, &j);
}

static void
convt_input_part (void *arg, unsigned part, unsigned n_parts)
{
  const convt_job *j = arg;
  const tt_window_geom *g = j->g;
  const size_t hw = (size_t) g->out_h * g->out_w;
  const size_t out_sample = (size_t) g->channels * g->in_h * g->in_w;
  const int fkk = g->channels / j->groups * g->kernel_h * g->kernel_w;
  const int cg = j->in_ch / j->groups;
  float *cc = convt_part_cols (j, part);
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  for (size_t b = lo; b < hi; b++) {
    tt_im2col (g, j->dy + b * out_sample, cc, hw);
    for (int gi = 0; gi < j->groups; gi++)
      tt_gemm (false, false, cg, (int) hw, fkk, 1.0f,
          j->wc + (size_t) gi * cg * fkk, fkk, cc + (size_t) gi * fkk * hw,
          (int) hw, 0.0f, j->dx + (b * j->in_ch + (size_t) gi * cg) * hw,
          (int) hw);
  }
}

void
tt_conv_transpose_backward_input (tt_threads * pool, const tt_window_geom * g,
    int in_ch, int groups, int batch, const float *wc, const float *dy,
    float *col, float *dx)
{
  convt_job j = {.pool = pool,.g = g,.in_ch = in_ch,.groups = groups,
    .batch = batch,.wc = wc,
    .dy = dy,.col = col,.dx = dx
  };
  tt_threads_run_partials (pool, convt_cols (g), convt_input_part, &j);
}

static void
convt_weight_part (void *arg, unsigned part, unsigned n_parts)
{
  const convt_job *j = arg;
  const tt_window_geom *g = j->g;
  const size_t hw = (size_t) g->out_h * g->out_w;
  const size_t out_plane = (size_t) g->in_h * g->in_w;
  const size_t out_sample = (size_t) g->channels * out_plane;
  const int fkk = g->channels / j->groups * g->kernel_h * g->kernel_w;
  const int cg = j->in_ch / j->groups;
  float *cc = convt_part_cols (j, part), *dwt = j->dwt, *dbias = j->dbias;
  if (part) {
    dwt = cc + convt_cols (g);
    dbias = j->dbias ? dwt + convt_dwt (g, j->in_ch) : NULL;
  }
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  if (lo == hi)
    memset (dwt, 0, (size_t) fkk * j->in_ch * sizeof *dwt);
  if (dbias)
    memset (dbias, 0, (size_t) g->channels * sizeof *dbias);
  for (size_t b = lo; b < hi; b++) {
    const float *dy = j->dy + b * out_sample;
    tt_im2col (g, dy, cc, hw);
    /* group g's [F/G*kh*kw][C/G] after the groups before it */
    for (int gi = 0; gi < j->groups; gi++)
      tt_gemm (false, true, fkk, cg, (int) hw, 1.0f,
          cc + (size_t) gi * fkk * hw, (int) hw,
          j->x + (b * j->in_ch + (size_t) gi * cg) * hw, (int) hw,
          b == lo ? 0.0f : 1.0f, dwt + (size_t) gi * fkk * cg, cg);
    if (dbias)
      for (int f = 0; f < g->channels; f++)
        dbias[f] = convt_plane_sum (dy + (size_t) f * out_plane, out_plane,
            dbias[f]);
  }
}

void
tt_conv_transpose_backward_weight (tt_threads * pool,
    const tt_window_geom * g, int in_ch, int groups, int batch, const float *x,
    const float *dy, float *col, float *dwt, float *dw, float *dbias)
{
  const int kk = g->kernel_h * g->kernel_w, fg = g->channels / groups;
  const int fkk = fg * kk, cg = in_ch / groups;
  convt_job j = {.pool = pool,.g = g,.in_ch = in_ch,.groups = groups,
    .batch = batch,.x = x,
    .dy = dy,.col = col,.dwt = dwt,.dbias = dbias
  };
  const unsigned parts = tt_threads_run_partials (pool,
      tt_conv_transpose_worker_floats (g, in_ch, true), convt_weight_part,
      &j);
  tt_threads_add_partials (pool, parts, convt_cols (g), dwt,
      (size_t) fkk * in_ch);
  if (dbias)
    tt_threads_add_partials (pool, parts, convt_cols (g) + convt_dwt (g,
            in_ch), dbias, (size_t) g->channels);
  /* back to nntrainer's [F/G][C][kk] */
  for (int f = 0; f < fg; f++)
    for (int c = 0; c < in_ch; c++)
      for (int k = 0; k < kk; k++)
        dw[((size_t) f * in_ch + c) * kk + k] =
            dwt[(size_t) (c / cg) * fkk * cg + ((size_t) f * kk + k) * cg +
            c % cg];
}
