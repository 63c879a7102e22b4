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
 *   weight grad dWc  = sum_b x_b im2col (dy_b)^T
 *
 * Wc is nntrainer's filter [F][C][kh][kw] with its first two axes swapped
 * (tt_conv_transpose_permute). Forward and the input gradient split by
 * samples, the weight gradient by blocks of its rows (tt_gemm_split), the
 * bias gradient by filters: deterministic for a thread count.
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

typedef struct
{
  const tt_window_geom *g;
  int in_ch, batch;
  size_t ld;                    /* batch * the input's plane */
  const float *x, *wc, *bias, *dy;
  float *y, *col, *dx, *dbias;
} convt_job;

static void
convt_forward_part (void *arg, unsigned part, unsigned n_parts)
{
  const convt_job *j = arg;
  const tt_window_geom *g = j->g;
  const size_t hw = (size_t) g->out_h * g->out_w;
  const size_t out_plane = (size_t) g->in_h * g->in_w;
  const size_t out_sample = (size_t) g->channels * out_plane;
  const int fkk = g->channels * g->kernel_h * g->kernel_w;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  for (size_t b = lo; b < hi; b++) {
    /* the sample's columns, [F*kk][hw], in its slot of the batch's */
    float *cc = j->col + b * hw;
    tt_gemm (true, false, fkk, (int) hw, j->in_ch, 1.0f, j->wc, fkk,
        j->x + b * j->in_ch * hw, (int) hw, 0.0f, cc, (int) j->ld);
    float *y = j->y + b * out_sample;
    memset (y, 0, out_sample * sizeof *y);
    tt_col2im (g, cc, j->ld, y);
    if (j->bias)
      for (int f = 0; f < g->channels; f++) {
        const float bf = j->bias[f];
        float *yf = y + (size_t) f * out_plane;
        for (size_t p = 0; p < out_plane; p++)
          yf[p] += bf;
      }
  }
}

void
tt_conv_transpose_forward (tt_threads * pool, const tt_window_geom * g,
    int in_ch, int batch, const float *x, const float *wc, const float *bias,
    float *y, float *col)
{
  convt_job j = {.g = g,.in_ch = in_ch,.batch = batch,
    .ld = (size_t) batch * g->out_h * g->out_w,.x = x,.wc = wc,.bias = bias,
    .y = y,.col = col
  };
  tt_threads_run (pool, convt_forward_part, &j, tt_threads_parts (pool,
          (size_t) batch, 1));
}

static void
convt_columns_part (void *arg, unsigned part, unsigned n_parts)
{
  const convt_job *j = arg;
  const tt_window_geom *g = j->g;
  const size_t hw = (size_t) g->out_h * g->out_w;
  const size_t out_sample = (size_t) g->channels * g->in_h * g->in_w;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  for (size_t b = lo; b < hi; b++)
    tt_im2col (g, j->dy + b * out_sample, j->col + b * hw, j->ld);
}

void
tt_conv_transpose_columns (tt_threads * pool, const tt_window_geom * g,
    int batch, const float *dy, float *col)
{
  convt_job j = {.g = g,.batch = batch,
    .ld = (size_t) batch * g->out_h * g->out_w,.dy = dy,.col = col
  };
  tt_threads_run (pool, convt_columns_part, &j, tt_threads_parts (pool,
          (size_t) batch, 1));
}

static void
convt_input_part (void *arg, unsigned part, unsigned n_parts)
{
  const convt_job *j = arg;
  const tt_window_geom *g = j->g;
  const size_t hw = (size_t) g->out_h * g->out_w;
  const int fkk = g->channels * g->kernel_h * g->kernel_w;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  for (size_t b = lo; b < hi; b++)
    tt_gemm (false, false, j->in_ch, (int) hw, fkk, 1.0f, j->wc, fkk,
        j->col + b * hw, (int) j->ld, 0.0f, j->dx + b * j->in_ch * hw,
        (int) hw);
}

void
tt_conv_transpose_backward_input (tt_threads * pool, const tt_window_geom * g,
    int in_ch, int batch, const float *wc, const float *col, float *dx)
{
  convt_job j = {.g = g,.in_ch = in_ch,.batch = batch,
    .ld = (size_t) batch * g->out_h * g->out_w,.wc = wc,.col = (float *) col,
    .dx = dx
  };
  tt_threads_run (pool, convt_input_part, &j, tt_threads_parts (pool,
          (size_t) batch, 1));
}

/* x [batch][C][hw] -> [C][batch][hw] */
static void
convt_regroup_part (void *arg, unsigned part, unsigned n_parts)
{
  const convt_job *j = arg;
  const size_t hw = (size_t) j->g->out_h * j->g->out_w;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  for (size_t b = lo; b < hi; b++)
    for (int c = 0; c < j->in_ch; c++)
      memcpy (j->y + (size_t) c * j->ld + b * hw,
          j->x + ((size_t) b * j->in_ch + c) * hw, hw * sizeof *j->y);
}

/* dbias[f]: dy's plane f summed over the batch, in one order whatever the
 * split */
static void
convt_bias_part (void *arg, unsigned part, unsigned n_parts)
{
  const convt_job *j = arg;
  const tt_window_geom *g = j->g;
  const size_t plane = (size_t) g->in_h * g->in_w;
  size_t lo, hi;
  tt_threads_range ((size_t) g->channels, 1, part, n_parts, &lo, &hi);
  for (size_t f = lo; f < hi; f++) {
    float s = 0.0f;
    for (int b = 0; b < j->batch; b++) {
      const float *d = j->dy + ((size_t) b * g->channels + f) * plane;
      for (size_t p = 0; p < plane; p++)
        s += d[p];
    }
    j->dbias[f] = s;
  }
}

void
tt_conv_transpose_backward_weight (tt_threads * pool,
    const tt_window_geom * g, int in_ch, int batch, const float *x,
    const float *col, const float *dy, float *xg, float *dwt, float *dw,
    float *dbias)
{
  const size_t ld = (size_t) batch * g->out_h * g->out_w;
  const int kk = g->kernel_h * g->kernel_w, fkk = g->channels * kk;
  convt_job j = {.g = g,.in_ch = in_ch,.batch = batch,.ld = ld,.x = x,
    .y = xg,.dy = dy,.dbias = dbias
  };
  tt_threads_run (pool, convt_regroup_part, &j, tt_threads_parts (pool,
          (size_t) batch, 1));
  /* dWc^T [F*kk][C] = columns x regrouped input^T */
  tt_gemm_split (pool, false, true, fkk, in_ch, (int) ld, 1.0f, col,
      (int) ld, xg, (int) ld, 0.0f, dwt, in_ch);
  /* back to nntrainer's [F][C][kk] */
  for (int f = 0; f < g->channels; f++)
    for (int c = 0; c < in_ch; c++)
      for (int k = 0; k < kk; k++)
        dw[((size_t) f * in_ch + c) * kk + k] =
            dwt[((size_t) f * kk + k) * in_ch + c];
  if (dbias)
    tt_threads_run (pool, convt_bias_part, &j, tt_threads_parts (pool,
            (size_t) g->channels, 1));
}
