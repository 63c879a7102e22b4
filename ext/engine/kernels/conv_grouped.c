/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Grouped and depthwise convolution, direct: no im2col. Filter f reads
 * the cg = channels / groups channels of its group (f / (filters /
 * groups)); its weights are [f][cg][kh][kw], PyTorch's layout.
 *
 * Every pass works row by row on one plane, the kernel's taps swept along
 * the row in vectors (TT_VECTOR_CLONES):
 * - forward, per output plane (sample, filter): each output row starts
 *   at the bias and adds, for each channel and tap, the weight times the
 *   input row it reads (a contiguous row for stride 1, every s-th value
 *   otherwise);
 * - the input derivative, per input plane (sample, channel): each input
 *   row adds, for each filter of the group and tap, the weight times the
 *   output derivative row that read it;
 * - the weight gradient, per filter: each tap's dot products of output
 *   derivative rows with the input rows they read, over every sample in
 *   order (8 lane partials, then their sum).
 * At stride 1, a plane small enough (GROUPED_FLAT_FLOATS) runs flat
 * instead: the input plane copied with its padding into rows of pitch P
 * (the padded width), the output computed in rows of the same pitch (the
 * columns past the output's width are thrown away), so that each tap is
 * one vector operation over the whole plane, not one per row: narrow maps
 * (DS-CNN's 25x5, MobileNet's 12x12 and 6x6) have rows too short for
 * vectors. The sums run in the same order (padding adds w * 0).
 * Forward and the input derivative split planes, the weight gradient
 * filters, over the pool's threads: every value is computed by one part
 * in the same order whatever the split, so results equal one thread's bit
 * for bit. Nothing is allocated; nothing but the arrays is read.
 */
#include "kernels.h"
#include "tt_layer.h"

#include <string.h>

/* Below this many multiply-adds a pass runs on the caller alone */
#define GROUPED_SPLIT_MIN (256 * 1024)
/* Floats of the flat path's buffers, on the stack: a padded input plane
 * and an output plane, both of pitch P (32 KiB; 48x48 maps fit) */
#define GROUPED_FLAT_FLOATS 8192

/* The flat path's geometry: pitch p (the padded width), rows_in padded
 * input rows, n values swept per tap ((out_h - 1) * p + out_w); 0 when
 * the plane runs by rows (a stride, or too large) */
typedef struct
{
  int p, rows_in, n;
} grouped_flat;

static grouped_flat
grouped_flat_of (const tt_window_geom * g)
{
  grouped_flat fl = { 0, 0, 0 };
  if (g->stride_h != 1 || g->stride_w != 1)
    return fl;
  const int p = g->out_w + (g->kernel_w - 1) * g->dilation_w;
  const int rows_in = g->out_h + (g->kernel_h - 1) * g->dilation_h;
  if ((size_t) p * ((size_t) rows_in + g->out_h) > GROUPED_FLAT_FLOATS)
    return fl;
  fl.p = p;
  fl.rows_in = rows_in;
  fl.n = (g->out_h - 1) * p + g->out_w;
  return fl;
}

/* xp[r][q] = x[r - pad_top][q - pad_left], 0 outside the input */
TT_ALWAYS_INLINE void
grouped_pad_plane (const tt_window_geom * g, const grouped_flat * fl,
    const float *restrict x, float *restrict xp)
{
  for (int r = 0; r < fl->rows_in; r++) {
    float *row = xp + (size_t) r * fl->p;
    const int iy = r - g->pad_top;
    if (iy < 0 || iy >= g->in_h) {
      memset (row, 0, (size_t) fl->p * sizeof *row);
      continue;
    }
    const int left = g->pad_left < fl->p ? g->pad_left : fl->p;
    int width = fl->p - left < g->in_w ? fl->p - left : g->in_w;
    memset (row, 0, (size_t) left * sizeof *row);
    memcpy (row + left, x + (size_t) iy * g->in_w, (size_t) width *
        sizeof *row);
    memset (row + left + width, 0, (size_t) (fl->p - left - width) *
        sizeof *row);
  }
}

/* yq[oy][ox] = y[oy][ox] in rows of pitch p, 0 past the output's width */
TT_ALWAYS_INLINE void
grouped_widen_plane (const tt_window_geom * g, const grouped_flat * fl,
    const float *restrict y, float *restrict yq)
{
  for (int oy = 0; oy < g->out_h; oy++) {
    float *row = yq + (size_t) oy * fl->p;
    memcpy (row, y + (size_t) oy * g->out_w, (size_t) g->out_w * sizeof *row);
    memset (row + g->out_w, 0, (size_t) (fl->p - g->out_w) * sizeof *row);
  }
}

/* The output columns [lo, hi) of a row whose input column o * stride + jx
 * lies inside [0, in) */
static void
grouped_valid (int out, int in, int stride, int jx, int *lo, int *hi)
{
  int a = jx >= 0 ? 0 : (-jx + stride - 1) / stride;
  int b = in - jx <= 0 ? 0 : (in - jx + stride - 1) / stride;
  if (b > out)
    b = out;
  if (a > b)
    a = b;
  *lo = a;
  *hi = b;
}

/* y[k] += w * x[k * stride], k < n */
TT_ALWAYS_INLINE void
grouped_axpy (float *restrict y, const float *restrict x, float w, int n,
    int stride)
{
  if (stride == 1)
    for (int k = 0; k < n; k++)
      y[k] += w * x[k];
  else if (stride == 2)
    for (int k = 0; k < n; k++)
      y[k] += w * x[2 * k];
  else
    for (int k = 0; k < n; k++)
      y[k] += w * x[k * stride];
}

/* y[k * stride] += w * x[k], k < n */
TT_ALWAYS_INLINE void
grouped_scatter (float *restrict y, const float *restrict x, float w, int n,
    int stride)
{
  if (stride == 1)
    for (int k = 0; k < n; k++)
      y[k] += w * x[k];
  else
    for (int k = 0; k < n; k++)
      y[k * stride] += w * x[k];
}

/* the sum of a[k] * x[k * stride], k < n: 8 lane partials */
TT_ALWAYS_INLINE float
grouped_dot (const float *restrict a, const float *restrict x, int n,
    int stride)
{
  float acc[8] = { 0 };
  int k = 0;
  if (stride == 1)
    for (; k + 8 <= n; k += 8)
      for (int l = 0; l < 8; l++)
        acc[l] += a[k + l] * x[k + l];
  else if (stride == 2)
    for (; k + 8 <= n; k += 8)
      for (int l = 0; l < 8; l++)
        acc[l] += a[k + l] * x[2 * (k + l)];
  float s = 0.0f;
  for (int l = 0; l < 8; l++)
    s += acc[l];
  for (; k < n; k++)
    s += a[k] * x[k * stride];
  return s;
}

/* the sum of a[k] * x[k], k < n: 32 lane partials (several vectors, so
 * that each add does not wait on the previous one) */
TT_ALWAYS_INLINE float
grouped_dot_long (const float *restrict a, const float *restrict x, int n)
{
  float acc[32] = { 0 };
  int k = 0;
  for (; k + 32 <= n; k += 32)
    for (int l = 0; l < 32; l++)
      acc[l] += a[k + l] * x[k + l];
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; l++)
      acc[l] += a[k + l] * x[k + l];
  float s = 0.0f;
  for (int l = 0; l < 32; l++)
    s += acc[l];
  for (; k < n; k++)
    s += a[k] * x[k];
  return s;
}

/* the sum of a[k], k < n: 8 lane partials */
TT_ALWAYS_INLINE float
grouped_sum (const float *restrict a, int n)
{
  float acc[8] = { 0 };
  int k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; l++)
      acc[l] += a[k + l];
  float s = 0.0f;
  for (int l = 0; l < 8; l++)
    s += acc[l];
  for (; k < n; k++)
    s += a[k];
  return s;
}

typedef struct
{
  const tt_window_geom *g;
  int filters, groups, batch;
  const float *x, *w, *bias, *dy;
  float *y, *dw, *dbias, *dx;
} grouped_job;

/* Output plane p = b * filters + f */
static TT_VECTOR_CLONES void
grouped_forward_plane (const grouped_job * j, size_t p)
{
  const tt_window_geom *g = j->g;
  const int f = (int) (p % (size_t) j->filters);
  const size_t b = p / (size_t) j->filters;
  const int cg = g->channels / j->groups, fg = j->filters / j->groups;
  const int kh = g->kernel_h, kw = g->kernel_w, oh = g->out_h, ow = g->out_w;
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const float *x = j->x + (b * (size_t) g->channels +
      (size_t) (f / fg) * cg) * in_plane;
  const float *w = j->w + (size_t) f * cg * kh * kw;
  float *y = j->y + p * (size_t) oh * ow;
  const float bias = j->bias ? j->bias[f] : 0.0f;
  const grouped_flat fl = grouped_flat_of (g);
  if (fl.p) {
    float buf[GROUPED_FLAT_FLOATS];
    float *xp = buf, *yp = buf + (size_t) fl.rows_in * fl.p;
    for (int k = 0; k < oh * fl.p; k++)
      yp[k] = bias;
    for (int c = 0; c < cg; c++) {
      grouped_pad_plane (g, &fl, x + c * in_plane, xp);
      for (int i = 0; i < kh; i++)
        for (int t = 0; t < kw; t++)
          grouped_axpy (yp, xp + (size_t) i * g->dilation_h * fl.p +
              t * g->dilation_w, w[((size_t) c * kh + i) * kw + t], fl.n, 1);
    }
    for (int oy = 0; oy < oh; oy++)
      memcpy (y + (size_t) oy * ow, yp + (size_t) oy * fl.p,
          (size_t) ow * sizeof *y);
    return;
  }
  for (int oy = 0; oy < oh; oy++) {
    float *yr = y + (size_t) oy * ow;
    for (int ox = 0; ox < ow; ox++)
      yr[ox] = bias;
    for (int c = 0; c < cg; c++)
      for (int i = 0; i < kh; i++) {
        const int iy = oy * g->stride_h + i * g->dilation_h - g->pad_top;
        if (iy < 0 || iy >= g->in_h)
          continue;
        const float *xr = x + c * in_plane + (size_t) iy * g->in_w;
        const float *wr = w + ((size_t) c * kh + i) * kw;
        for (int t = 0; t < kw; t++) {
          const int jx = t * g->dilation_w - g->pad_left;
          int lo, hi;
          grouped_valid (ow, g->in_w, g->stride_w, jx, &lo, &hi);
          if (hi > lo)
            grouped_axpy (yr + lo, xr + lo * g->stride_w + jx, wr[t],
                hi - lo, g->stride_w);
        }
      }
  }
}

/* Input derivative plane p = b * channels + ch */
static TT_VECTOR_CLONES void
grouped_input_plane (const grouped_job * j, size_t p)
{
  const tt_window_geom *g = j->g;
  const int ch = (int) (p % (size_t) g->channels);
  const size_t b = p / (size_t) g->channels;
  const int cg = g->channels / j->groups, fg = j->filters / j->groups;
  const int grp = ch / cg, c = ch % cg;
  const int kh = g->kernel_h, kw = g->kernel_w, oh = g->out_h, ow = g->out_w;
  const int sh = g->stride_h, sw = g->stride_w;
  const size_t out_plane = (size_t) oh * ow;
  float *dx = j->dx + p * (size_t) g->in_h * g->in_w;
  const grouped_flat fl = grouped_flat_of (g);
  if (fl.p) {
    float buf[GROUPED_FLAT_FLOATS];
    float *dxp = buf, *dyq = buf + (size_t) fl.rows_in * fl.p;
    memset (dxp, 0, (size_t) fl.rows_in * fl.p * sizeof *dxp);
    for (int f = grp * fg; f < (grp + 1) * fg; f++) {
      grouped_widen_plane (g, &fl, j->dy + (b * (size_t) j->filters + f) *
          out_plane, dyq);
      const float *w = j->w + ((size_t) f * cg + c) * kh * kw;
      for (int i = 0; i < kh; i++)
        for (int t = 0; t < kw; t++)
          grouped_axpy (dxp + (size_t) i * g->dilation_h * fl.p +
              t * g->dilation_w, dyq, w[i * kw + t], fl.n, 1);
    }
    for (int iy = 0; iy < g->in_h; iy++)
      memcpy (dx + (size_t) iy * g->in_w, dxp + (size_t) (iy + g->pad_top) *
          fl.p + g->pad_left, (size_t) g->in_w * sizeof *dx);
    return;
  }
  for (int iy = 0; iy < g->in_h; iy++) {
    float *dr = dx + (size_t) iy * g->in_w;
    memset (dr, 0, (size_t) g->in_w * sizeof *dr);
    for (int f = grp * fg; f < (grp + 1) * fg; f++) {
      const float *dyp = j->dy + (b * (size_t) j->filters + f) * out_plane;
      const float *w = j->w + ((size_t) f * cg + c) * kh * kw;
      for (int i = 0; i < kh; i++) {
        /* the output row oy that read row iy through tap row i */
        const int num = iy + g->pad_top - i * g->dilation_h;
        if (num < 0 || num % sh)
          continue;
        const int oy = num / sh;
        if (oy >= oh)
          continue;
        const float *dyr = dyp + (size_t) oy * ow;
        for (int t = 0; t < kw; t++) {
          const int jx = t * g->dilation_w - g->pad_left;
          int lo, hi;
          grouped_valid (ow, g->in_w, sw, jx, &lo, &hi);
          if (hi > lo)
            grouped_scatter (dr + lo * sw + jx, dyr + lo, w[i * kw + t],
                hi - lo, sw);
        }
      }
    }
  }
}

/* Weight (and bias) gradient of filter f, over every sample in order */
static TT_VECTOR_CLONES void
grouped_weight_filter (const grouped_job * j, int f)
{
  const tt_window_geom *g = j->g;
  const int cg = g->channels / j->groups, fg = j->filters / j->groups;
  const int kh = g->kernel_h, kw = g->kernel_w, oh = g->out_h, ow = g->out_w;
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t out_plane = (size_t) oh * ow;
  float *dw = j->dw + (size_t) f * cg * kh * kw;
  memset (dw, 0, (size_t) cg * kh * kw * sizeof *dw);
  float db = 0.0f;
  const grouped_flat fl = grouped_flat_of (g);
  float buf[GROUPED_FLAT_FLOATS];
  float *xp = buf, *dyq = buf + (size_t) fl.rows_in * fl.p;
  for (int b = 0; b < j->batch; b++) {
    const float *dyp = j->dy + ((size_t) b * j->filters + f) * out_plane;
    const float *x = j->x + ((size_t) b * g->channels +
        (size_t) (f / fg) * cg) * in_plane;
    if (fl.p) {
      if (j->dbias)
        db += grouped_sum (dyp, (int) out_plane);
      grouped_widen_plane (g, &fl, dyp, dyq);
      for (int c = 0; c < cg; c++) {
        grouped_pad_plane (g, &fl, x + c * in_plane, xp);
        float *dwc = dw + (size_t) c * kh * kw;
        for (int i = 0; i < kh; i++)
          for (int t = 0; t < kw; t++)
            dwc[i * kw + t] += grouped_dot_long (dyq, xp + (size_t) i *
                g->dilation_h * fl.p + t * g->dilation_w, fl.n);
      }
      continue;
    }
    for (int oy = 0; oy < oh; oy++) {
      const float *dyr = dyp + (size_t) oy * ow;
      if (j->dbias) {
        float acc[8] = { 0 };
        int k = 0;
        for (; k + 8 <= ow; k += 8)
          for (int l = 0; l < 8; l++)
            acc[l] += dyr[k + l];
        for (int l = 0; l < 8; l++)
          db += acc[l];
        for (; k < ow; k++)
          db += dyr[k];
      }
      for (int c = 0; c < cg; c++)
        for (int i = 0; i < kh; i++) {
          const int iy = oy * g->stride_h + i * g->dilation_h - g->pad_top;
          if (iy < 0 || iy >= g->in_h)
            continue;
          const float *xr = x + c * in_plane + (size_t) iy * g->in_w;
          float *dwr = dw + ((size_t) c * kh + i) * kw;
          for (int t = 0; t < kw; t++) {
            const int jx = t * g->dilation_w - g->pad_left;
            int lo, hi;
            grouped_valid (ow, g->in_w, g->stride_w, jx, &lo, &hi);
            if (hi > lo)
              dwr[t] += grouped_dot (dyr + lo, xr + lo * g->stride_w + jx,
                  hi - lo, g->stride_w);
          }
        }
    }
  }
  if (j->dbias)
    j->dbias[f] = db;
}

static void
grouped_forward_part (void *arg, unsigned part, unsigned n_parts)
{
  const grouped_job *j = arg;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch * j->filters, 1, part, n_parts, &lo, &hi);
  for (size_t p = lo; p < hi; p++)
    grouped_forward_plane (j, p);
}

static void
grouped_input_part (void *arg, unsigned part, unsigned n_parts)
{
  const grouped_job *j = arg;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch * j->g->channels, 1, part, n_parts,
      &lo, &hi);
  for (size_t p = lo; p < hi; p++)
    grouped_input_plane (j, p);
}

static void
grouped_weight_part (void *arg, unsigned part, unsigned n_parts)
{
  const grouped_job *j = arg;
  size_t lo, hi;
  tt_threads_range ((size_t) j->filters, 1, part, n_parts, &lo, &hi);
  for (size_t f = lo; f < hi; f++)
    grouped_weight_filter (j, (int) f);
}

/* Parts for units of work of a pass of macs multiply-adds: 1 when small */
static unsigned
grouped_parts (tt_threads * pool, const tt_window_geom * g, int filters,
    int groups, int batch, size_t units)
{
  const double macs = (double) batch * filters * g->out_h * g->out_w *
      (g->channels / groups) * g->kernel_h * g->kernel_w;
  if (macs < GROUPED_SPLIT_MIN)
    return 1;
  return tt_threads_parts (pool, units, 4);
}

void
tt_conv_grouped_forward (tt_threads * pool, const tt_window_geom * g,
    int filters, int groups, int batch, const float *x, const float *w,
    const float *bias, float *y)
{
  grouped_job j = {.g = g,.filters = filters,.groups = groups,.batch = batch,
    .x = x,.w = w,.bias = bias,.y = y
  };
  const size_t units = (size_t) batch * filters;
  tt_threads_run (pool, grouped_forward_part, &j, grouped_parts (pool, g,
          filters, groups, batch, units));
}

void
tt_conv_grouped_backward_weight (tt_threads * pool, const tt_window_geom * g,
    int filters, int groups, int batch, const float *x, const float *dy,
    float *dw, float *dbias)
{
  grouped_job j = {.g = g,.filters = filters,.groups = groups,.batch = batch,
    .x = x,.dy = dy,.dw = dw,.dbias = dbias
  };
  tt_threads_run (pool, grouped_weight_part, &j, grouped_parts (pool, g,
          filters, groups, batch, (size_t) filters));
}

void
tt_conv_grouped_backward_input (tt_threads * pool, const tt_window_geom * g,
    int filters, int groups, int batch, const float *w, const float *dy,
    float *dx)
{
  grouped_job j = {.g = g,.filters = filters,.groups = groups,.batch = batch,
    .w = w,.dy = dy,.dx = dx
  };
  const size_t units = (size_t) batch * g->channels;
  tt_threads_run (pool, grouped_input_part, &j, grouped_parts (pool, g,
          filters, groups, batch, units));
}
