/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Max and average pooling over NCHW planes.
 *
 * Each (sample, channel) plane is independent and small enough to stay in
 * cache, so the loops walk one plane at a time and, inside it, one output
 * row at a time. Within a row, the columns whose window lies wholly inside
 * the input (all but a few at the borders) are processed as a block, tap
 * by tap: for every kernel tap, one pass over the block's outputs. That
 * makes the per-output work independent (a window-at-a-time loop is one
 * long dependency chain through the running max or sum) and turns the
 * input reads into short strided sweeps. Border columns, where taps fall
 * into padding, take a per-window path with clipping.
 */
#include "tt_layer.h"

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

/* Outputs [*a, *b) of an axis whose whole window lies inside the input
 * along it. */
static void
pooling_interior_axis (int in, int out, int k, int stride, int dil, int pad,
    int *a, int *b)
{
  int64_t lo = ((int64_t) pad + stride - 1) / stride;
  int64_t last = (int64_t) in - 1 - (int64_t) (k - 1) * dil + pad;
  int64_t hi = last < 0 ? 0 : last / stride + 1;

  if (hi > out)
    hi = out;
  if (lo > hi)
    lo = hi;
  *a = (int) lo;
  *b = (int) hi;
}

/* Output columns [*a, *b) whose whole window lies inside the row, so the
 * per-window clipping can be skipped for them. */
static void
pooling_interior (const tt_window_geom * g, int *a, int *b)
{
  pooling_interior_axis (g->in_w, g->out_w, g->kernel_w, g->stride_w,
      g->dilation_w, g->pad_left, a, b);
}

/* Max pooling's index: the winner's tap in its window, i * kernel_w + j,
 * stored in the fewest bytes that number the window's taps. A window of
 * padding only stores tap 0, which lies outside the input like all its
 * taps, so backward finds it there and scatters nothing. */
size_t
tt_maxpool_index_bytes (const tt_window_geom * g)
{
  const int64_t taps = (int64_t) g->kernel_h * g->kernel_w;
  return taps <= 256 ? 1 : taps <= 65536 ? 2 : 4;
}

static inline void
pooling_index_store (void *argmax, size_t o, size_t bytes, uint32_t t)
{
  if (bytes == 1)
    ((uint8_t *) argmax)[o] = (uint8_t) t;
  else if (bytes == 2)
    ((uint16_t *) argmax)[o] = (uint16_t) t;
  else
    ((uint32_t *) argmax)[o] = t;
}

static inline uint32_t
pooling_index_load (const void *argmax, size_t o, size_t bytes)
{
  if (bytes == 1)
    return ((const uint8_t *) argmax)[o];
  if (bytes == 2)
    return ((const uint16_t *) argmax)[o];
  return ((const uint32_t *) argmax)[o];
}

/* Output columns per block; the block's accumulators live on the stack. */
#define POOLING_BLOCK 16
#define POOLING_BLOCK_SMALL 8

/* m ? a : b for an all-ones or all-zero mask m. Written with bit
 * operations because GCC turns a plain ?: on floats back into a branch,
 * and on real data "v > best" is a coin flip the predictor always loses. */
static inline float
pooling_select (uint32_t m, float a, float b)
{
  uint32_t ua, ub;

  memcpy (&ua, &a, sizeof ua);
  memcpy (&ub, &b, sizeof ub);
  ua = (ua & m) | (ub & ~m);
  memcpy (&a, &ua, sizeof a);
  return a;
}

/* All-ones when v replaces best: v is greater, or v is the window's first
 * NaN. A NaN thus always wins and is never replaced, so a diverged input
 * is not masked; PyTorch propagates NaN the same way (it reports the last
 * NaN's index rather than the first). */
static inline uint32_t
pooling_take (float v, float best)
{
  return 0u - (uint32_t) (!(v <= best) & (best == best));
}

/*
 * One tap over a block: output k reads xp[base + k * sw], and records the
 * tap by its index `tap` in the window, a constant for the whole block.
 *
 * Blocks of POOLING_BLOCK or POOLING_BLOCK_SMALL columns go through
 * pooling_*_run with that constant as n: after inlining the loop has a
 * constant trip count, the only kind GCC vectorizes at -O2. The selects
 * are bit masks rather than ?: because at -O3 GCC unrolls the 8-column
 * loop before vectorizing and turns a ?: on floats into branches (4x
 * slower); the masks vectorize at -O2 and -O3 and stay branch-free in
 * scalar code.
 */
static inline void
pooling_max_run (const float *xp, int base, int sw, int n, int tap,
    float *restrict best, int32_t * restrict rel)
{
  /* Not unrolled: -O3 would fully unroll the 8-column case before the
   * vectorizer sees it, leaving scalar compares. */
#pragma GCC unroll 1
  for (int k = 0; k < n; k++) {
    const float v = xp[base + k * sw];
    const uint32_t m = pooling_take (v, best[k]);
    best[k] = pooling_select (m, v, best[k]);
    rel[k] = (int32_t) (((uint32_t) tap & m) | ((uint32_t) rel[k] & ~m));
  }
}

static inline void
pooling_max_tap (const float *xp, int base, int sw, int n, int tap,
    float *restrict best, int32_t * restrict rel)
{
  if (n == POOLING_BLOCK)
    pooling_max_run (xp, base, sw, POOLING_BLOCK, tap, best, rel);
  else if (n == POOLING_BLOCK_SMALL)
    pooling_max_run (xp, base, sw, POOLING_BLOCK_SMALL, tap, best, rel);
  else
    pooling_max_run (xp, base, sw, n, tap, best, rel);
}

static inline void
pooling_sum_run (const float *xp, int base, int sw, int n, float *restrict sum)
{
#pragma GCC unroll 1
  for (int k = 0; k < n; k++)
    sum[k] += xp[base + k * sw];
}

static inline void
pooling_sum_tap (const float *xp, int base, int sw, int n, float *restrict sum)
{
  if (n == POOLING_BLOCK)
    pooling_sum_run (xp, base, sw, POOLING_BLOCK, sum);
  else if (n == POOLING_BLOCK_SMALL)
    pooling_sum_run (xp, base, sw, POOLING_BLOCK_SMALL, sum);
  else
    pooling_sum_run (xp, base, sw, n, sum);
}

/* Distinct k hit distinct inputs, so the adds are independent (a scatter
 * with a runtime stride does not vectorize, but it pipelines). */
static inline void
pooling_scatter_tap (float *dxp, int base, int sw, int n,
    const float *restrict d)
{
  for (int k = 0; k < n; k++)
    dxp[base + k * sw] += d[k];
}

/* Size of the block of interior columns starting at *bx: POOLING_BLOCK,
 * or POOLING_BLOCK_SMALL for rows too narrow for it (a 26-wide map pooled
 * 2x2 has 13 outputs per row). A short last block is slid back to end at
 * xb, overlapping the previous one: the forward kernels just recompute a
 * few outputs, and every block keeps a vectorizable width. The backward
 * scatter must not overlap; it passes overlap = false. */
static inline int
pooling_block (int xa, int xb, bool overlap, int *bx)
{
  const int width = xb - xa;
  const int b = width >= POOLING_BLOCK ? POOLING_BLOCK : POOLING_BLOCK_SMALL;

  if (xb - *bx >= b)
    return b;
  if (overlap && width >= b) {
    *bx = xb - b;
    return b;
  }
  return xb - *bx;
}

/* Vertical taps [*ilo, *ihi) of output row oy; returns the first input
 * row, which may be negative. */
static inline int
pooling_rows (const tt_window_geom * g, int oy, int *ilo, int *ihi)
{
  int iy0 = oy * g->stride_h - g->pad_top;

  pooling_tap_span (iy0, g->kernel_h, g->dilation_h, g->in_h, ilo, ihi);
  return iy0;
}

/* Taps of one window axis that count in an average's divisor: those
 * inside the input, or (include_pad) inside the input and its padding,
 * PyTorch's count_include_pad; a ceil_mode window may reach past both. */
static inline int
pooling_count (int start, int n, int dil, int limit, int pad_lo, int pad_hi,
    bool include_pad)
{
  int lo, hi;

  if (include_pad)
    pooling_tap_span (start + pad_lo, n, dil, limit + pad_lo + pad_hi, &lo,
        &hi);
  else
    pooling_tap_span (start, n, dil, limit, &lo, &hi);
  return hi - lo;
}

/* 1 / divisor of output row oy's windows, as taps counted down the rows;
 * the columns' count multiplies it (0 when nothing counts). */
static inline float
pooling_inv (int rows, int cols)
{
  return rows > 0 && cols > 0 ? 1.0f / ((float) rows * (float) cols) : 0.0f;
}

static inline int
pooling_count_rows (const tt_window_geom * g, int iy0, bool include_pad)
{
  return pooling_count (iy0, g->kernel_h, g->dilation_h, g->in_h, g->pad_top,
      g->pad_bottom, include_pad);
}

static inline int
pooling_count_cols (const tt_window_geom * g, int ox, bool include_pad)
{
  return pooling_count (ox * g->stride_w - g->pad_left, g->kernel_w,
      g->dilation_w, g->in_w, g->pad_left, g->pad_right, include_pad);
}

/* Per-window max for a border column, with clipped taps; returns the
 * winner's tap. Taps run in row-major order and only a strictly greater
 * value wins, which is the same order and rule as the block path. */
static uint32_t
pooling_max_one (const tt_window_geom * g, const float *xp, int iy0, int ilo,
    int ihi, int ox, float *y)
{
  const int iw = g->in_w, kw = g->kernel_w, dh = g->dilation_h,
      dw = g->dilation_w;
  const int ix0 = ox * g->stride_w - g->pad_left;
  int jlo, jhi;
  float best = 0.0f;
  uint32_t a = 0;

  pooling_tap_span (ix0, kw, dw, iw, &jlo, &jhi);
  /* A window made only of padding: nothing wins, the output is 0. */
  if (ilo < ihi && jlo < jhi) {
    /* Seeding with the first tap gives a window of -inf an argmax. */
    a = (uint32_t) (ilo * kw + jlo);
    best = xp[(iy0 + ilo * dh) * iw + ix0 + jlo * dw];
    for (int i = ilo; i < ihi; i++) {
      const int row = (iy0 + i * dh) * iw + ix0;
      for (int j = jlo; j < jhi; j++) {
        const float v = xp[row + j * dw];
        const uint32_t m = pooling_take (v, best);
        best = pooling_select (m, v, best);
        a = ((uint32_t) (i * kw + j) & m) | (a & ~m);
      }
    }
  }
  *y = best;
  return a;
}

static float
pooling_sum_one (const tt_window_geom * g, const float *xp, int iy0, int ilo,
    int ihi, int ox)
{
  const int iw = g->in_w, dh = g->dilation_h, dw = g->dilation_w;
  const int ix0 = ox * g->stride_w - g->pad_left;
  int jlo, jhi;
  float s = 0.0f;

  pooling_tap_span (ix0, g->kernel_w, dw, iw, &jlo, &jhi);
  for (int i = ilo; i < ihi; i++) {
    const float *r = xp + (size_t) (iy0 + i * dh) * iw;
    for (int j = jlo; j < jhi; j++)
      s += r[ix0 + j * dw];
  }
  return s;
}

static void
pooling_scatter_one (const tt_window_geom * g, float *dxp, int iy0, int ilo,
    int ihi, int ox, float d)
{
  const int iw = g->in_w, dh = g->dilation_h, dw = g->dilation_w;
  const int ix0 = ox * g->stride_w - g->pad_left;
  int jlo, jhi;

  pooling_tap_span (ix0, g->kernel_w, dw, iw, &jlo, &jhi);
  for (int i = ilo; i < ihi; i++) {
    float *r = dxp + (size_t) (iy0 + i * dh) * iw;
    for (int j = jlo; j < jhi; j++)
      r[ix0 + j * dw] += d;
  }
}

/* Index in the plane of tap (i, j) for output column bx of row iy0; only
 * called for interior columns, where it is never negative. */
static inline int
pooling_tap_index (const tt_window_geom * g, int iy0, int i, int j, int bx)
{
  /* Column first: it lies in [0, in_w), so no partial sum overflows. */
  const int ix = bx * g->stride_w - g->pad_left + j * g->dilation_w;
  return (iy0 + i * g->dilation_h) * g->in_w + ix;
}

/* Stores the block's n taps from output o on, at the index width. */
static void
pooling_index_store_block (void *argmax, size_t o, size_t bytes,
    const int32_t * rel, int n)
{
  if (bytes == 1)
    for (int k = 0; k < n; k++)
      ((uint8_t *) argmax)[o + k] = (uint8_t) rel[k];
  else if (bytes == 2)
    for (int k = 0; k < n; k++)
      ((uint16_t *) argmax)[o + k] = (uint16_t) rel[k];
  else
    memcpy ((uint32_t *) argmax + o, rel, sizeof (int32_t) * n);
}

static void
pooling_serial_maxpool_forward (const tt_window_geom * g, int batch,
    const float *x, float *y, void *argmax)
{
  const int ow = g->out_w, sw = g->stride_w, iw = g->in_w,
      kw = g->kernel_w, dh = g->dilation_h, dw = g->dilation_w;
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t out_plane = (size_t) g->out_h * ow;
  const size_t planes = (size_t) batch * g->channels;
  const size_t bytes = tt_maxpool_index_bytes (g);
  int xa, xb;

  if (tt_maxpool2x2_applies (g)) {
    tt_maxpool2x2_forward (g, batch, x, y, argmax);
    return;
  }
  pooling_interior (g, &xa, &xb);
  for (size_t pl = 0; pl < planes; pl++) {
    const float *xp = x + pl * in_plane;

    for (int oy = 0; oy < g->out_h; oy++) {
      float *yr = y + pl * out_plane + (size_t) oy * ow;
      const size_t o = pl * out_plane + (size_t) oy * ow;
      int ilo, ihi;
      int iy0 = pooling_rows (g, oy, &ilo, &ihi);

      for (int ox = 0; ox < xa; ox++)
        pooling_index_store (argmax, o + ox, bytes,
            pooling_max_one (g, xp, iy0, ilo, ihi, ox, yr + ox));
      for (int ox = xb; ox < ow; ox++)
        pooling_index_store (argmax, o + ox, bytes,
            pooling_max_one (g, xp, iy0, ilo, ihi, ox, yr + ox));
      if (ilo == ihi) {
        /* The whole row's windows sit in vertical padding. */
        for (int ox = xa; ox < xb; ox++) {
          yr[ox] = 0.0f;
          pooling_index_store (argmax, o + ox, bytes, 0);
        }
        continue;
      }

      for (int bx = xa, n; bx < xb; bx += n) {
        n = pooling_block (xa, xb, true, &bx);
        /* Plane index of the first valid tap of column bx's window. */
        const int org = pooling_tap_index (g, iy0, ilo, 0, bx);
        float best[POOLING_BLOCK];
        int32_t rel[POOLING_BLOCK];

        /* Seed with the first tap; re-testing it below is a no-op. */
        for (int k = 0; k < n; k++) {
          best[k] = xp[org + k * sw];
          rel[k] = ilo * kw;
        }
        for (int i = ilo; i < ihi; i++)
          for (int j = 0; j < kw; j++) {
            const int off = (i - ilo) * dh * iw + j * dw;
            pooling_max_tap (xp, org + off, sw, n, i * kw + j, best, rel);
          }
        memcpy (yr + bx, best, sizeof (float) * n);
        pooling_index_store_block (argmax, o + bx, bytes, rel, n);
      }
    }
  }
}

/* One window covering the whole unpadded plane (global pooling). */
static bool
pooling_is_global (const tt_window_geom * g)
{
  return g->out_h == 1 && g->out_w == 1 && g->kernel_h == g->in_h &&
      g->kernel_w == g->in_w && g->pad_top == 0 && g->pad_left == 0 &&
      g->pad_bottom == 0 && g->pad_right == 0;
}

/* A window's taps as offsets from its first: rows (i * dilation_h),
 * columns (j * dilation_w) and in the plane, tabled for windows of up to
 * 256 taps (one byte an index), divided out of the tap for larger ones. */
#define POOLING_TAPS_TABLED 256

typedef struct
{
  int kw, dh, dw, iw;
  int row[POOLING_TAPS_TABLED], col[POOLING_TAPS_TABLED];
  int plane[POOLING_TAPS_TABLED];
} pooling_taps;

static void
pooling_taps_init (const tt_window_geom * g, pooling_taps * t)
{
  t->kw = g->kernel_w;
  t->dh = g->dilation_h;
  t->dw = g->dilation_w;
  t->iw = g->in_w;
  if ((int64_t) g->kernel_h * g->kernel_w > POOLING_TAPS_TABLED)
    return;
  for (int i = 0, k = 0; i < g->kernel_h; i++)
    for (int j = 0; j < g->kernel_w; j++, k++) {
      t->row[k] = i * g->dilation_h;
      t->col[k] = j * g->dilation_w;
      t->plane[k] = t->row[k] * g->in_w + t->col[k];
    }
}

TT_ALWAYS_INLINE void
pooling_tap_rowcol (const pooling_taps * t, size_t bytes, uint32_t tap,
    int *row, int *col)
{
  if (bytes == 1) {
    *row = t->row[tap];
    *col = t->col[tap];
  } else {
    *row = (int) (tap / (uint32_t) t->kw) * t->dh;
    *col = (int) (tap % (uint32_t) t->kw) * t->dw;
  }
}

/* dy of a border column's window to its winner, if it has one (a window
 * of padding only has none: its tap lies outside the input). */
TT_ALWAYS_INLINE void
pooling_unpool_border (const tt_window_geom * g, const pooling_taps * t,
    size_t bytes, uint32_t tap, int iy0, int ox, float d, float *dxp)
{
  int row, col;
  pooling_tap_rowcol (t, bytes, tap, &row, &col);
  const int iy = iy0 + row, ix = ox * g->stride_w - g->pad_left + col;
  if ((unsigned) iy < (unsigned) g->in_h && (unsigned) ix < (unsigned) g->in_w)
    dxp[iy * g->in_w + ix] += d;
}

/* The scatter in output order, one index width per instance (bytes is a
 * constant where it is inlined). Windows wholly inside the input (rows
 * [ya, yb), columns [xa, xb)) hold their winner: no test for them. */
TT_ALWAYS_INLINE void
pooling_unpool_plane (const tt_window_geom * g, const pooling_taps * t,
    size_t bytes, int ya, int yb, int xa, int xb, const float *dyp,
    const void *ap, float *dxp)
{
  const int ow = g->out_w, sw = g->stride_w;

  for (int oy = 0; oy < g->out_h; oy++) {
    const size_t o = (size_t) oy * ow;
    const int iy0 = oy * g->stride_h - g->pad_top;
    if (oy < ya || oy >= yb) {
      for (int ox = 0; ox < ow; ox++)
        pooling_unpool_border (g, t, bytes, pooling_index_load (ap, o + ox,
                bytes), iy0, ox, dyp[o + ox], dxp);
      continue;
    }
    for (int ox = 0; ox < xa; ox++)
      pooling_unpool_border (g, t, bytes, pooling_index_load (ap, o + ox,
              bytes), iy0, ox, dyp[o + ox], dxp);
    const int org = iy0 * g->in_w - g->pad_left;
    for (int ox = xa; ox < xb; ox++) {
      const uint32_t tap = pooling_index_load (ap, o + ox, bytes);
      int off;
      if (bytes == 1)
        off = t->plane[tap];
      else {
        int row, col;
        pooling_tap_rowcol (t, bytes, tap, &row, &col);
        off = row * t->iw + col;
      }
      dxp[org + ox * sw + off] += dyp[o + ox];
    }
    for (int ox = xb; ox < ow; ox++)
      pooling_unpool_border (g, t, bytes, pooling_index_load (ap, o + ox,
              bytes), iy0, ox, dyp[o + ox], dxp);
  }
}

static void
pooling_serial_maxpool_backward (const tt_window_geom * g, int batch,
    const float *dy, const void *argmax, float *dx)
{
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t out_plane = (size_t) g->out_h * g->out_w;
  const size_t planes = (size_t) batch * g->channels;
  const size_t bytes = tt_maxpool_index_bytes (g);
  /* one window, the plane: its tap is the plane index */
  const bool global = pooling_is_global (g);
  pooling_taps taps;
  int ya, yb, xa, xb;

  if (tt_maxpool2x2_applies (g)) {
    tt_maxpool2x2_backward (g, batch, dy, argmax, dx);
    return;
  }
  pooling_taps_init (g, &taps);
  pooling_interior_axis (g->in_h, g->out_h, g->kernel_h, g->stride_h,
      g->dilation_h, g->pad_top, &ya, &yb);
  pooling_interior (g, &xa, &xb);
  for (size_t pl = 0; pl < planes; pl++) {
    float *dxp = dx + pl * in_plane;
    const float *dyp = dy + pl * out_plane;
    const void *ap = (const char *) argmax + pl * out_plane * bytes;

    /* Zero the plane right before scattering into it, while it is hot. */
    memset (dxp, 0, sizeof (float) * in_plane);
    if (global)
      dxp[pooling_index_load (ap, 0, bytes)] += dyp[0];
    else if (bytes == 1)
      pooling_unpool_plane (g, &taps, 1, ya, yb, xa, xb, dyp, ap, dxp);
    else if (bytes == 2)
      pooling_unpool_plane (g, &taps, 2, ya, yb, xa, xb, dyp, ap, dxp);
    else
      pooling_unpool_plane (g, &taps, 4, ya, yb, xa, xb, dyp, ap, dxp);
  }
}

int32_t
tt_maxpool_argmax_plane_index (const tt_window_geom * g, const void *argmax,
    size_t o)
{
  const size_t r = o % ((size_t) g->out_h * g->out_w);
  const int oy = (int) (r / (size_t) g->out_w);
  const int ox = (int) (r % (size_t) g->out_w);
  const uint32_t tap = pooling_index_load (argmax, o,
      tt_maxpool_index_bytes (g));
  const int iy = oy * g->stride_h - g->pad_top +
      (int) (tap / (uint32_t) g->kernel_w) * g->dilation_h;
  const int ix = ox * g->stride_w - g->pad_left +
      (int) (tap % (uint32_t) g->kernel_w) * g->dilation_w;
  if (iy < 0 || iy >= g->in_h || ix < 0 || ix >= g->in_w)
    return -1;
  return iy * g->in_w + ix;
}

static void
pooling_serial_avgpool_forward (const tt_window_geom * g, int batch,
    const float *x, float *y, bool include_pad)
{
  if (pooling_is_global (g)) {
    /* the window scan's order (row by row), without its per-tap calls */
    const size_t n = (size_t) g->in_h * g->in_w;
    const size_t planes = (size_t) batch * g->channels;
    const float inv = 1.0f / ((float) g->kernel_h * (float) g->kernel_w);
    for (size_t pl = 0; pl < planes; pl++) {
      const float *xp = x + pl * n;
      float sum = 0.0f;
      for (size_t k = 0; k < n; k++)
        sum += xp[k];
      y[pl] = sum * inv;
    }
    return;
  }
  const int ow = g->out_w, sw = g->stride_w;
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t out_plane = (size_t) g->out_h * ow;
  const size_t planes = (size_t) batch * g->channels;
  int xa, xb;

  pooling_interior (g, &xa, &xb);
  for (size_t pl = 0; pl < planes; pl++) {
    const float *xp = x + pl * in_plane;

    for (int oy = 0; oy < g->out_h; oy++) {
      float *yr = y + pl * out_plane + (size_t) oy * ow;
      int ilo, ihi;
      int iy0 = pooling_rows (g, oy, &ilo, &ihi);
      /* the divisor: one per row for the interior columns, whose windows
       * lie wholly inside the row (kernel_w taps each) */
      const int rows = pooling_count_rows (g, iy0, include_pad);
      const float inv = pooling_inv (rows, g->kernel_w);

      for (int ox = 0; ox < xa; ox++)
        yr[ox] = pooling_sum_one (g, xp, iy0, ilo, ihi, ox) *
            pooling_inv (rows, pooling_count_cols (g, ox, include_pad));
      for (int ox = xb; ox < ow; ox++)
        yr[ox] = pooling_sum_one (g, xp, iy0, ilo, ihi, ox) *
            pooling_inv (rows, pooling_count_cols (g, ox, include_pad));

      for (int bx = xa, n; bx < xb; bx += n) {
        n = pooling_block (xa, xb, true, &bx);
        float sum[POOLING_BLOCK];

        for (int k = 0; k < n; k++)
          sum[k] = 0.0f;
        for (int i = ilo; i < ihi; i++)
          for (int j = 0; j < g->kernel_w; j++)
            pooling_sum_tap (xp, pooling_tap_index (g, iy0, i, j, bx), sw, n,
                sum);
        for (int k = 0; k < n; k++)
          yr[bx + k] = sum[k] * inv;
      }
    }
  }
}

static void
pooling_serial_avgpool_backward (const tt_window_geom * g, int batch,
    const float *dy, float *dx, bool include_pad)
{
  if (pooling_is_global (g)) {
    const size_t n = (size_t) g->in_h * g->in_w;
    const size_t planes = (size_t) batch * g->channels;
    const float inv = 1.0f / ((float) g->kernel_h * (float) g->kernel_w);
    for (size_t pl = 0; pl < planes; pl++) {
      const float d = dy[pl] * inv;
      float *dxp = dx + pl * n;
      for (size_t k = 0; k < n; k++)
        dxp[k] = d;
    }
    return;
  }
  const int ow = g->out_w, sw = g->stride_w;
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t out_plane = (size_t) g->out_h * ow;
  const size_t planes = (size_t) batch * g->channels;
  int xa, xb;

  pooling_interior (g, &xa, &xb);
  for (size_t pl = 0; pl < planes; pl++) {
    float *dxp = dx + pl * in_plane;

    /* Overlapping windows add up, so scatter into a zeroed plane. */
    memset (dxp, 0, sizeof (float) * in_plane);
    for (int oy = 0; oy < g->out_h; oy++) {
      const float *dr = dy + pl * out_plane + (size_t) oy * ow;
      int ilo, ihi;
      int iy0 = pooling_rows (g, oy, &ilo, &ihi);
      const int rows = pooling_count_rows (g, iy0, include_pad);
      const float inv = pooling_inv (rows, g->kernel_w);

      for (int ox = 0; ox < xa; ox++)
        pooling_scatter_one (g, dxp, iy0, ilo, ihi, ox, dr[ox] *
            pooling_inv (rows, pooling_count_cols (g, ox, include_pad)));
      for (int ox = xb; ox < ow; ox++)
        pooling_scatter_one (g, dxp, iy0, ilo, ihi, ox, dr[ox] *
            pooling_inv (rows, pooling_count_cols (g, ox, include_pad)));

      for (int bx = xa, n; bx < xb; bx += n) {
        n = pooling_block (xa, xb, false, &bx);
        float d[POOLING_BLOCK];

        for (int k = 0; k < n; k++)
          d[k] = dr[bx + k] * inv;
        for (int i = ilo; i < ihi; i++)
          for (int j = 0; j < g->kernel_w; j++)
            pooling_scatter_tap (dxp, pooling_tap_index (g, iy0, i, j, bx),
                sw, n, d);
      }
    }
  }
}

/* ---- split over the engine's threads ---------------------------------- */

/* Every kernel above treats the batch's batch * channels planes alike and
 * apart: a part takes a range of planes, as a "batch" of one-channel
 * samples, so each plane gets the same arithmetic whatever the thread
 * count (results identical to one thread's). */
/* Input values below which pooling runs on one thread: the CNN's first
 * pooling at batch 1 (21,632) made tensor_predictor slower on 2 threads
 * (527 against 490 us a frame, under load). */
#define POOLING_SPLIT_MIN 65536

typedef struct
{
  int kind;                     /* 0 max forward, 1 max backward, 2 avg
                                 * forward, 3 avg backward */
  const tt_window_geom *g;
  size_t planes;
  const float *in;
  float *out;
  void *argmax;                 /* max: tt_maxpool_index_bytes each */
  bool include_pad;             /* average: count_include_pad */
} pooling_job;

static void
pooling_part (void *arg, unsigned part, unsigned n_parts)
{
  const pooling_job *j = arg;
  size_t lo, hi;
  tt_threads_range (j->planes, 1, part, n_parts, &lo, &hi);
  if (lo >= hi)
    return;
  tt_window_geom g = *j->g;
  g.channels = 1;
  const size_t in_plane = (size_t) g.in_h * g.in_w;
  const size_t out_plane = (size_t) g.out_h * g.out_w;
  const int n = (int) (hi - lo);
  char *argmax = (char *) j->argmax;
  if (j->kind <= 1)
    argmax += lo * out_plane * tt_maxpool_index_bytes (&g);
  switch (j->kind) {
    case 0:
      pooling_serial_maxpool_forward (&g, n, j->in + lo * in_plane,
          j->out + lo * out_plane, argmax);
      break;
    case 1:
      pooling_serial_maxpool_backward (&g, n, j->in + lo * out_plane,
          argmax, j->out + lo * in_plane);
      break;
    case 2:
      pooling_serial_avgpool_forward (&g, n, j->in + lo * in_plane,
          j->out + lo * out_plane, j->include_pad);
      break;
    default:
      pooling_serial_avgpool_backward (&g, n, j->in + lo * out_plane,
          j->out + lo * in_plane, j->include_pad);
      break;
  }
}

static void
pooling_run (tt_threads * pool, int kind, const tt_window_geom * g,
    int batch, const float *in, float *out, void *argmax, bool include_pad)
{
  pooling_job j = { kind, g, (size_t) batch * g->channels, in, out, argmax,
    include_pad
  };
  /* two parts per thread: a thread that lost its core leaves its second
   * to the others; one below POOLING_SPLIT_MIN input values, where the
   * job's synchronization costs more than it saves */
  const bool big = (double) j.planes * g->in_h * g->in_w >= POOLING_SPLIT_MIN;
  tt_threads_run (pool, pooling_part, &j, big ? tt_threads_parts (pool,
          j.planes, 2) : 1);
}

void
tt_maxpool_forward (tt_threads * pool, const tt_window_geom * g, int batch,
    const float *x, float *y, void *argmax)
{
  pooling_run (pool, 0, g, batch, x, y, argmax, false);
}

void
tt_maxpool_backward (tt_threads * pool, const tt_window_geom * g, int batch,
    const float *dy, const void *argmax, float *dx)
{
  pooling_run (pool, 1, g, batch, dy, dx, (void *) argmax, false);
}

void
tt_avgpool_forward (tt_threads * pool, const tt_window_geom * g, int batch,
    const float *x, float *y, bool include_pad)
{
  pooling_run (pool, 2, g, batch, x, y, NULL, include_pad);
}

void
tt_avgpool_backward (tt_threads * pool, const tt_window_geom * g, int batch,
    const float *dy, float *dx, bool include_pad)
{
  pooling_run (pool, 3, g, batch, dy, dx, NULL, include_pad);
}
