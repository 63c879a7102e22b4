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
 * A plane small enough (GROUPED_FLAT_FLOATS) runs flat instead, at any
 * stride and dilation: the padded input plane is split into its stride
 * phases (grouped_flat), after which every tap reads one phase at one
 * offset for all outputs, so that a block of outputs sums all its taps in
 * registers and is stored once (forward), the input derivative gathers
 * per phase from the output derivative with zero margins (the adjoint of
 * the same offsets), and the weight gradient reads the output derivative
 * once for a group of taps. Narrow maps (DS-CNN's 25x5, MobileNet's 12x12
 * and 6x6) have rows too short for vectors, strided ones would need
 * strided loads; flat they have neither. Forward adds bias, then each
 * channel's taps in order, as the rows do.
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
/* Floats of the flat path's buffer, on the stack (32 KiB: a 48x48 input
 * map fits at stride 1 and 2) */
#define GROUPED_FLAT_FLOATS 8192
/* Lanes of a block of the flat path: two vectors of 8 */
#define GV 8
typedef float gvec __attribute__((vector_size (4 * GV)));
#define GV_LOAD(v, p) memcpy (&(v), (p), sizeof (gvec))
#define GV_STORE(p, v) memcpy ((p), &(v), sizeof (gvec))
#define GV_SPLAT(s) ((gvec) { 0 } + (s))
/* Taps whose weight-gradient sums share one read of the output derivative */
#define GROUPED_TAP_GROUP 4

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

/* Stride 2: the two column phases of a row at once, d0[q] = x[2q + j],
 * d1[q] = x[2q + 1 + j], for q in [lo, hi) (whole vectors where both
 * reads are inside [0, in), the rest one by one) */
TT_ALWAYS_INLINE void
grouped_deinterleave (float *restrict d0, float *restrict d1,
    const float *restrict x, int j, int in, const int lo[2], const int hi[2])
{
  int q = lo[0] > lo[1] ? lo[0] : lo[1];
  const int end = hi[0] < hi[1] ? hi[0] : hi[1];
  for (int k = lo[0]; k < q && k < hi[0]; k++)
    d0[k] = x[2 * k + j];
  for (int k = lo[1]; k < q && k < hi[1]; k++)
    d1[k] = x[2 * k + 1 + j];
  for (; q + GV <= end && 2 * q + j + 2 * GV <= in; q += GV) {
    gvec v0, v1;
    GV_LOAD (v0, x + 2 * q + j);
    GV_LOAD (v1, x + 2 * q + j + GV);
    const gvec e = __builtin_shufflevector (v0, v1, 0, 2, 4, 6, 8, 10, 12, 14);
    const gvec o = __builtin_shufflevector (v0, v1, 1, 3, 5, 7, 9, 11, 13, 15);
    GV_STORE (d0 + q, e);
    GV_STORE (d1 + q, o);
  }
  for (int k = q; k < hi[0]; k++)
    d0[k] = x[2 * k + j];
  for (int k = q; k < hi[1]; k++)
    d1[k] = x[2 * k + 1 + j];
}

/* Its inverse: x[2q + j] = s0[q], x[2q + 1 + j] = s1[q] */
TT_ALWAYS_INLINE void
grouped_interleave (float *restrict x, const float *restrict s0,
    const float *restrict s1, int j, int in, const int lo[2], const int hi[2])
{
  int q = lo[0] > lo[1] ? lo[0] : lo[1];
  const int end = hi[0] < hi[1] ? hi[0] : hi[1];
  for (int k = lo[0]; k < q && k < hi[0]; k++)
    x[2 * k + j] = s0[k];
  for (int k = lo[1]; k < q && k < hi[1]; k++)
    x[2 * k + 1 + j] = s1[k];
  for (; q + GV <= end && 2 * q + j + 2 * GV <= in; q += GV) {
    gvec e, o;
    GV_LOAD (e, s0 + q);
    GV_LOAD (o, s1 + q);
    const gvec v0 = __builtin_shufflevector (e, o, 0, 8, 1, 9, 2, 10, 3, 11);
    const gvec v1 = __builtin_shufflevector (e, o, 4, 12, 5, 13, 6, 14, 7,
        15);
    GV_STORE (x + 2 * q + j, v0);
    GV_STORE (x + 2 * q + j + GV, v1);
  }
  for (int k = q; k < hi[0]; k++)
    x[2 * k + j] = s0[k];
  for (int k = q; k < hi[1]; k++)
    x[2 * k + 1 + j] = s1[k];
}

/* The flat path's geometry. The padded input plane is split into
 * sh * sw phases (phase (a, b) holds padded rows a, a + sh, ... and
 * columns b, b + sw, ...), each of rows x pitch floats, pitch = out_w +
 * (the kernel's reach in phase columns). Then tap (i, t) of output
 * (oy, ox) reads phase ((i*dh) % sh, (t*dw) % sw) at (oy + (i*dh) / sh,
 * ox + (t*dw) / sw): one offset per tap, the same for every output, so
 * an output plane kept at the same pitch is a sum of shifted planes and
 * each tap is one vector sweep over the whole plane, not one per row
 * (narrow maps such as DS-CNN's 25x5 and MobileNet's 12x12 and 6x6 have
 * rows too short for vectors; strided maps need no strided loads). The
 * columns past out_w of an output row are thrown away (forward) or zero
 * (derivatives); n = (out_h - 1) * pitch + out_w values are needed, and
 * the sweeps run in whole blocks of 2 * GV past them: each phase plane
 * is followed by zeros up to the next (plane floats apart), so every
 * read stays in the buffer and the extra values are thrown away or
 * multiplied by zero. */
typedef struct
{
  int phases, rows, pitch, n;
  int plane;                    /* floats from one phase to the next */
  int margin;                   /* the largest tap offset */
  int taps;
  int phase[GROUPED_FLAT_FLOATS / 64];  /* per tap (i * kw + t) */
  int offset[GROUPED_FLAT_FLOATS / 64];
} grouped_flat;

/* Fills *fl; false when the plane runs by rows (too large, or a kernel
 * with more taps than the table) */
static bool
grouped_flat_of (const tt_window_geom * g, grouped_flat * fl)
{
  const int sh = g->stride_h, sw = g->stride_w;
  const int kh = g->kernel_h, kw = g->kernel_w;
  if (kh * kw > (int) (sizeof fl->phase / sizeof fl->phase[0]))
    return false;
  const int reach_h = (kh - 1) * g->dilation_h / sh;
  const int reach_w = (kw - 1) * g->dilation_w / sw;
  const size_t pitch = (size_t) g->out_w + reach_w;
  const size_t rows = (size_t) g->out_h + reach_h;
  const size_t margin = reach_h * pitch + reach_w;
  const size_t plane = (rows * pitch + 2 * GV + 2 * GV - 1) / (2 * GV) *
      (2 * GV);
  /* phases, then (forward, weight gradient) an output plane or (input
   * derivative) an output derivative plane with a margin before it */
  if ((size_t) sh * sw * plane + margin + plane > GROUPED_FLAT_FLOATS)
    return false;
  fl->phases = sh * sw;
  fl->rows = (int) rows;
  fl->pitch = (int) pitch;
  fl->plane = (int) plane;
  fl->n = (g->out_h - 1) * (int) pitch + g->out_w;
  fl->margin = (int) margin;
  fl->taps = kh * kw;
  for (int i = 0; i < kh; i++)
    for (int t = 0; t < kw; t++) {
      const int y = i * g->dilation_h, x = t * g->dilation_w;
      fl->phase[i * kw + t] = (y % sh) * sw + x % sw;
      fl->offset[i * kw + t] = y / sh * (int) pitch + x / sw;
    }
  return true;
}

/* The phases of one input plane: xph[(a * sw + b) * rows * pitch + r *
 * pitch + q] = x[r * sh + a - pad_top][q * sw + b - pad_left], 0 outside
 * the input */
TT_ALWAYS_INLINE void
grouped_split_plane (const tt_window_geom * g, const grouped_flat * fl,
    const float *restrict x, float *restrict xph)
{
  const int sh = g->stride_h, sw = g->stride_w, p = fl->pitch;
  if (sw == 2) {
    int lo[2], hi[2];
    for (int b = 0; b < 2; b++)
      grouped_valid (p, g->in_w, 2, b - g->pad_left, &lo[b], &hi[b]);
    for (int a = 0; a < sh; a++) {
      float *p0 = xph + (size_t) (a * 2) * fl->plane;
      float *p1 = p0 + fl->plane;
      memset (p0 + (size_t) fl->rows * p, 0, (size_t) (fl->plane -
              fl->rows * p) * sizeof *p0);
      memset (p1 + (size_t) fl->rows * p, 0, (size_t) (fl->plane -
              fl->rows * p) * sizeof *p1);
      for (int r = 0; r < fl->rows; r++) {
        float *r0 = p0 + (size_t) r * p, *r1 = p1 + (size_t) r *p;
        const int iy = r * sh + a - g->pad_top;
        if (iy < 0 || iy >= g->in_h) {
          memset (r0, 0, (size_t) p * sizeof *r0);
          memset (r1, 0, (size_t) p * sizeof *r1);
          continue;
        }
        memset (r0, 0, (size_t) lo[0] * sizeof *r0);
        memset (r1, 0, (size_t) lo[1] * sizeof *r1);
        grouped_deinterleave (r0, r1, x + (size_t) iy * g->in_w, -g->pad_left,
            g->in_w, lo, hi);
        memset (r0 + hi[0], 0, (size_t) (p - hi[0]) * sizeof *r0);
        memset (r1 + hi[1], 0, (size_t) (p - hi[1]) * sizeof *r1);
      }
    }
    return;
  }
  for (int a = 0; a < sh; a++)
    for (int b = 0; b < sw; b++) {
      float *phase = xph + (size_t) (a * sw + b) * fl->plane;
      memset (phase + (size_t) fl->rows * p, 0, (size_t) (fl->plane -
              fl->rows * p) * sizeof *phase);
      for (int r = 0; r < fl->rows; r++) {
        float *row = phase + (size_t) r * p;
        const int iy = r * sh + a - g->pad_top;
        if (iy < 0 || iy >= g->in_h) {
          memset (row, 0, (size_t) p * sizeof *row);
          continue;
        }
        const float *xr = x + (size_t) iy * g->in_w;
        /* the columns q with 0 <= q * sw + b - pad_left < in_w */
        int lo, hi;
        grouped_valid (p, g->in_w, sw, b - g->pad_left, &lo, &hi);
        memset (row, 0, (size_t) lo * sizeof *row);
        if (sw == 1)
          memcpy (row + lo, xr + lo + b - g->pad_left, (size_t) (hi - lo) *
              sizeof *row);
        else
          for (int q = lo; q < hi; q++)
            row[q] = xr[q * sw + b - g->pad_left];
        memset (row + hi, 0, (size_t) (p - hi) * sizeof *row);
      }
    }
}

/* The input derivative plane from its phases (the inverse of
 * grouped_split_plane; padded positions no output read get 0) */
TT_ALWAYS_INLINE void
grouped_merge_plane (const tt_window_geom * g, const grouped_flat * fl,
    const float *restrict dxph, float *restrict dx)
{
  const int sh = g->stride_h, sw = g->stride_w, p = fl->pitch;
  for (int iy = 0; iy < g->in_h; iy++) {
    float *dr = dx + (size_t) iy * g->in_w;
    const int r = (iy + g->pad_top) / sh, a = (iy + g->pad_top) % sh;
    if (r >= fl->rows) {
      memset (dr, 0, (size_t) g->in_w * sizeof *dr);
      continue;
    }
    if (sw == 2) {
      int lo[2], hi[2];
      for (int b = 0; b < 2; b++)
        grouped_valid (p, g->in_w, 2, b - g->pad_left, &lo[b], &hi[b]);
      const float *s0 = dxph + (size_t) (a * 2) * fl->plane + (size_t) r * p;
      grouped_interleave (dr, s0, s0 + fl->plane, -g->pad_left, g->in_w, lo,
          hi);
    }
    for (int b = 0; b < sw && sw != 2; b++) {
      const float *src = dxph + (size_t) (a * sw + b) * fl->plane +
          (size_t) r * p;
      /* the columns ix = q * sw + b - pad_left of this phase */
      int lo, hi;
      grouped_valid (p, g->in_w, sw, b - g->pad_left, &lo, &hi);
      if (sw == 1)
        memcpy (dr + lo + b - g->pad_left, src + lo, (size_t) (hi - lo) *
            sizeof *dr);
      else
        for (int q = lo; q < hi; q++)
          dr[q * sw + b - g->pad_left] = src[q];
    }
    /* input columns past the last phase column no output read */
    const int first_unread = fl->pitch * sw - g->pad_left;
    for (int ix = first_unread > 0 ? first_unread : 0; ix < g->in_w; ix++)
      dr[ix] = 0.0f;
  }
}

/* yq[oy][ox] = y[oy][ox] in rows of the flat pitch, 0 past the output's
 * width, in the rows_after rows after the output's and in a block after
 * them */
TT_ALWAYS_INLINE void
grouped_widen_plane (const tt_window_geom * g, const grouped_flat * fl,
    const float *restrict y, float *restrict yq, int rows_after)
{
  const int p = fl->pitch;
  for (int oy = 0; oy < g->out_h; oy++) {
    float *row = yq + (size_t) oy * p;
    memcpy (row, y + (size_t) oy * g->out_w, (size_t) g->out_w * sizeof *row);
    memset (row + g->out_w, 0, (size_t) (p - g->out_w) * sizeof *row);
  }
  memset (yq + (size_t) g->out_h * p, 0, ((size_t) rows_after * p + 2 * GV) *
      sizeof *yq);
}

/* yp[k] += the sum over taps of w[tap] * xph[phase][k + offset], k < n
 * (and in the rest of the last block), the taps added in order to each
 * value (as one tap at a time would) */
TT_ALWAYS_INLINE void
grouped_flat_taps (const grouped_flat * fl, const float *restrict xph,
    const float *restrict w, float *restrict yp)
{
  const size_t plane = (size_t) fl->plane;
  for (int k = 0; k < fl->n; k += 2 * GV) {
    gvec a0, a1;
    GV_LOAD (a0, yp + k);
    GV_LOAD (a1, yp + k + GV);
    for (int tap = 0; tap < fl->taps; tap++) {
      const float *src = xph + fl->phase[tap] * plane + fl->offset[tap] + k;
      gvec x0, x1;
      GV_LOAD (x0, src);
      GV_LOAD (x1, src + GV);
      a0 += w[tap] * x0;
      a1 += w[tap] * x1;
    }
    GV_STORE (yp + k, a0);
    GV_STORE (yp + k + GV, a1);
  }
}

/* dxph[phase][m] += the sum over the taps of that phase of w[tap] *
 * dyq[m - offset], m < rows * pitch; dyq has margin zeros before it and
 * zeros past the output's rows and columns, so every read is in range */
TT_ALWAYS_INLINE void
grouped_flat_taps_adjoint (const grouped_flat * fl, const float *restrict dyq,
    const float *restrict w, float *restrict dxph)
{
  const int len = fl->rows * fl->pitch;
  for (int ph = 0; ph < fl->phases; ph++) {
    float *dst = dxph + (size_t) ph * fl->plane;
    for (int k = 0; k < len; k += 2 * GV) {
      gvec a0, a1;
      GV_LOAD (a0, dst + k);
      GV_LOAD (a1, dst + k + GV);
      for (int tap = 0; tap < fl->taps; tap++) {
        if (fl->phase[tap] != ph)
          continue;
        const float *src = dyq + k - fl->offset[tap];
        gvec d0, d1;
        GV_LOAD (d0, src);
        GV_LOAD (d1, src + GV);
        a0 += w[tap] * d0;
        a1 += w[tap] * d1;
      }
      GV_STORE (dst + k, a0);
      GV_STORE (dst + k + GV, a1);
    }
  }
}

TT_ALWAYS_INLINE float
grouped_gv_sum (const gvec * v)
{
  float s = 0.0f;
  for (int l = 0; l < GV; l++)
    s += (*v)[l];
  return s;
}

/* dw[t] += the sum over k < n of dyq[k] * src[t][k], t < nt: one read of
 * dyq for nt taps (nt a constant where this is inlined; dyq is zero in
 * the rest of the last block) */
TT_ALWAYS_INLINE void
grouped_dot_group (int n, const float *restrict dyq,
    const float *const *src, float *restrict dw, const int nt)
{
  gvec acc[GROUPED_TAP_GROUP][2];
  for (int j = 0; j < nt; j++)
    acc[j][0] = acc[j][1] = GV_SPLAT (0.0f);
  for (int k = 0; k < n; k += 2 * GV) {
    gvec d0, d1;
    GV_LOAD (d0, dyq + k);
    GV_LOAD (d1, dyq + k + GV);
    for (int j = 0; j < nt; j++) {
      gvec x0, x1;
      GV_LOAD (x0, src[j] + k);
      GV_LOAD (x1, src[j] + k + GV);
      acc[j][0] += d0 * x0;
      acc[j][1] += d1 * x1;
    }
  }
  for (int j = 0; j < nt; j++) {
    gvec both = acc[j][0] + acc[j][1];
    dw[j] += grouped_gv_sum (&both);
  }
}

/* dw[tap] += the sum over k < n of dyq[k] * xph[phase][k + offset], in
 * groups of up to GROUPED_TAP_GROUP taps */
TT_ALWAYS_INLINE void
grouped_flat_taps_dot (const grouped_flat * fl, const float *restrict dyq,
    const float *restrict xph, float *restrict dw)
{
  const size_t plane = (size_t) fl->plane;
  for (int t0 = 0; t0 < fl->taps; t0 += GROUPED_TAP_GROUP) {
    const int nt = fl->taps - t0 < GROUPED_TAP_GROUP ? fl->taps - t0 :
        GROUPED_TAP_GROUP;
    const float *src[GROUPED_TAP_GROUP];
    for (int j = 0; j < nt; j++)
      src[j] = xph + fl->phase[t0 + j] * plane + fl->offset[t0 + j];
    switch (nt) {
      case 4:
        grouped_dot_group (fl->n, dyq, src, dw + t0, 4);
        break;
      case 3:
        grouped_dot_group (fl->n, dyq, src, dw + t0, 3);
        break;
      case 2:
        grouped_dot_group (fl->n, dyq, src, dw + t0, 2);
        break;
      default:
        grouped_dot_group (fl->n, dyq, src, dw + t0, 1);
        break;
    }
  }
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
  bool flat;
  grouped_flat fl;
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
  if (j->flat) {
    const grouped_flat *fl = &j->fl;
    float buf[GROUPED_FLAT_FLOATS];
    float *xph = buf, *yp = buf + (size_t) fl->phases * fl->plane;
    /* whole blocks: the sweep reads them all */
    for (int k = 0; k < (fl->n + 2 * GV - 1) / (2 * GV) * (2 * GV); k++)
      yp[k] = bias;
    for (int c = 0; c < cg; c++) {
      grouped_split_plane (g, fl, x + c * in_plane, xph);
      grouped_flat_taps (fl, xph, w + (size_t) c * kh * kw, yp);
    }
    for (int oy = 0; oy < oh; oy++)
      memcpy (y + (size_t) oy * ow, yp + (size_t) oy * fl->pitch,
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
  if (j->flat) {
    const grouped_flat *fl = &j->fl;
    const size_t phases = (size_t) fl->phases * fl->plane;
    float buf[GROUPED_FLAT_FLOATS];
    float *dxph = buf, *dyq = buf + phases + fl->margin;
    memset (buf, 0, (phases + fl->margin) * sizeof *buf);
    for (int f = grp * fg; f < (grp + 1) * fg; f++) {
      grouped_widen_plane (g, fl, j->dy + (b * (size_t) j->filters + f) *
          out_plane, dyq, fl->rows - oh);
      grouped_flat_taps_adjoint (fl, dyq, j->w + ((size_t) f * cg + c) * kh *
          kw, dxph);
    }
    grouped_merge_plane (g, fl, dxph, dx);
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
  const grouped_flat *fl = &j->fl;
  float buf[GROUPED_FLAT_FLOATS];
  float *xph = buf, *dyq = buf + (size_t) fl->phases * fl->plane;
  for (int b = 0; b < j->batch; b++) {
    const float *dyp = j->dy + ((size_t) b * j->filters + f) * out_plane;
    const float *x = j->x + ((size_t) b * g->channels +
        (size_t) (f / fg) * cg) * in_plane;
    if (j->flat) {
      if (j->dbias)
        db += grouped_sum (dyp, (int) out_plane);
      grouped_widen_plane (g, fl, dyp, dyq, 0);
      for (int c = 0; c < cg; c++) {
        grouped_split_plane (g, fl, x + c * in_plane, xph);
        grouped_flat_taps_dot (fl, dyq, xph, dw + (size_t) c * kh * kw);
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
  j.flat = grouped_flat_of (g, &j.fl);
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
  j.flat = grouped_flat_of (g, &j.fl);
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
  j.flat = grouped_flat_of (g, &j.fl);
  const size_t units = (size_t) batch * g->channels;
  tt_threads_run (pool, grouped_input_part, &j, grouped_parts (pool, g,
          filters, groups, batch, units));
}
