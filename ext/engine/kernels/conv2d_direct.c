/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Direct convolution for layers with few input taps (C*kh*kw <= 32: a
 * first layer on a gray or RGB image). There, im2col multiplies the data
 * by kh*kw for a GEMM whose inner dimension (9 for a 3x3 kernel on one
 * channel) is far too short to run near peak, and the weight gradient is
 * a GEMM with a 9-wide output that BLAS runs at a few GFLOP/s. Here every
 * output row is swept in vectors of DV outputs: forward loads the C*kh*kw
 * input vectors of a block once and multiplies them into every filter;
 * the weight gradient keeps one vector accumulator per tap and reads each
 * output derivative once.
 *
 * Rows wider than DV but not a multiple of it end with a block that
 * overlaps the previous one: forward just writes those outputs twice
 * (same values), the weight gradient masks the lanes already counted.
 * Valid windows only (no padding), stride and dilation 1, out_w >= DV.
 *
 * Not for 1x1 kernels: there im2col is a plain copy, and the weight
 * gradient here reads every sample's input once per filter, which stays
 * in cache for a first layer's few KiB but not for a pointwise layer of a
 * mobile network (16 channels of 48x48 at batch 32: 4.7 MB read once per
 * filter; MobileNetV2's 1x1 layers took twice as long as through GEMM).
 */
#include "kernels.h"
#include "tt_layer.h"

#include <string.h>

#define DV 8
#define DIRECT_MAX_TAPS 32

typedef float dvec __attribute__((vector_size (4 * DV)));

bool
tt_conv2d_direct_applies (const tt_window_geom * g)
{
  return g->channels * g->kernel_h * g->kernel_w <= DIRECT_MAX_TAPS &&
      g->stride_h == 1 && g->stride_w == 1 && g->dilation_h == 1 &&
      g->dilation_w == 1 && g->pad_top == 0 && g->pad_bottom == 0 &&
      g->pad_left == 0 && g->pad_right == 0 && g->out_w >= DV &&
      g->kernel_h * g->kernel_w > 1;
}

/* Unaligned vector loads and stores; memcpy keeps them free of alignment
 * and aliasing assumptions and compiles to one vector move. (Helpers take
 * and return vectors through pointers only: passing 32-byte vectors by
 * value has a different ABI with and without AVX.) */
#define DV_LOAD(v, p) memcpy (&(v), (p), sizeof (dvec))
#define DV_STORE(p, v) memcpy ((p), &(v), sizeof (dvec))
#define DV_SPLAT(s) ((dvec) { 0 } + (s))

TT_ALWAYS_INLINE float
dv_sum (const dvec * v)
{
  float s = 0.0f;
  for (int l = 0; l < DV; l++)
    s += (*v)[l];
  return s;
}

/* Start of block k of a row of ow outputs: 0, DV, 2*DV, ..., and a last
 * block at ow - DV when ow is not a multiple of DV. */
TT_ALWAYS_INLINE int
dv_blocks (int ow)
{
  return (ow + DV - 1) / DV;
}

TT_ALWAYS_INLINE int
dv_block_start (int k, int ow)
{
  const int s = k * DV;
  return s + DV <= ow ? s : ow - DV;
}

/* One sample, any tap count: the block's input vectors are loaded once
 * for all filters; four filters at a time, four independent accumulation
 * chains hiding the add latency. */
TT_ALWAYS_INLINE void
direct_forward_sample (const tt_window_geom * g, int channels, int kh,
    int kw, int filters, const float *restrict x, const float *restrict w,
    const float *restrict bias, float *restrict y)
{
  const int iw = g->in_w, taps = channels * kh * kw;
  const int oh = g->out_h, ow = g->out_w, nblk = dv_blocks (ow);
  const size_t plane = (size_t) g->in_h * iw, ohw = (size_t) (oh) * ow;

  for (int oy = 0; oy < oh; oy++)
    for (int k = 0; k < nblk; k++) {
      const int ox = dv_block_start (k, ow);
      dvec xv[DIRECT_MAX_TAPS];
      for (int c = 0; c < channels; c++)
        for (int i = 0; i < kh; i++)
          for (int j = 0; j < kw; j++)
            DV_LOAD (xv[(c * kh + i) * kw + j],
                x + c * plane + (size_t) (oy + i) * iw + ox + j);
      float *yo = y + (size_t) oy * ow + ox;
      int f = 0;
      for (; f + 4 <= filters; f += 4) {
        const float *wf = w + (size_t) f * taps;
        dvec a0 = DV_SPLAT (bias ? bias[f] : 0.0f);
        dvec a1 = DV_SPLAT (bias ? bias[f + 1] : 0.0f);
        dvec a2 = DV_SPLAT (bias ? bias[f + 2] : 0.0f);
        dvec a3 = DV_SPLAT (bias ? bias[f + 3] : 0.0f);
        for (int u = 0; u < taps; u++) {
          a0 += wf[u] * xv[u];
          a1 += wf[taps + u] * xv[u];
          a2 += wf[2 * taps + u] * xv[u];
          a3 += wf[3 * taps + u] * xv[u];
        }
        DV_STORE (yo + f * ohw, a0);
        DV_STORE (yo + (f + 1) * ohw, a1);
        DV_STORE (yo + (f + 2) * ohw, a2);
        DV_STORE (yo + (f + 3) * ohw, a3);
      }
      for (; f < filters; f++) {
        const float *wf = w + (size_t) f * taps;
        dvec a0 = DV_SPLAT (bias ? bias[f] : 0.0f);
        for (int u = 0; u < taps; u++)
          a0 += wf[u] * xv[u];
        DV_STORE (yo + f * ohw, a0);
      }
    }
}

/* The 3x3 kernel on one channel (a first layer on gray images), with the
 * nine input vectors in named variables so that they stay in registers
 * whatever the compiler makes of arrays (an array of them measured 1.5-3x
 * slower: spilled accumulators). */
#define K3_LOADS(p, iw) \
  dvec x0, x1, x2, x3, x4, x5, x6, x7, x8; \
  DV_LOAD (x0, (p)); DV_LOAD (x1, (p) + 1); DV_LOAD (x2, (p) + 2); \
  DV_LOAD (x3, (p) + (iw)); DV_LOAD (x4, (p) + (iw) + 1); \
  DV_LOAD (x5, (p) + (iw) + 2); DV_LOAD (x6, (p) + 2 * (iw)); \
  DV_LOAD (x7, (p) + 2 * (iw) + 1); DV_LOAD (x8, (p) + 2 * (iw) + 2)
#define K3_DOT(a, wf) \
  a += (wf)[0] * x0; a += (wf)[1] * x1; a += (wf)[2] * x2; \
  a += (wf)[3] * x3; a += (wf)[4] * x4; a += (wf)[5] * x5; \
  a += (wf)[6] * x6; a += (wf)[7] * x7; a += (wf)[8] * x8

TT_ALWAYS_INLINE void
direct_k3_forward_sample (const tt_window_geom * g, int filters,
    const float *restrict x, const float *restrict w,
    const float *restrict bias, float *restrict y)
{
  const int iw = g->in_w, oh = g->out_h, ow = g->out_w, nblk = dv_blocks (ow);
  const size_t ohw = (size_t) oh * ow;

  for (int oy = 0; oy < oh; oy++)
    for (int k = 0; k < nblk; k++) {
      const int ox = dv_block_start (k, ow);
      K3_LOADS (x + (size_t) oy * iw + ox, iw);
      float *yo = y + (size_t) oy * ow + ox;
      int f = 0;
      for (; f + 4 <= filters; f += 4) {
        const float *wf = w + (size_t) f * 9;
        dvec a0 = DV_SPLAT (bias ? bias[f] : 0.0f);
        dvec a1 = DV_SPLAT (bias ? bias[f + 1] : 0.0f);
        dvec a2 = DV_SPLAT (bias ? bias[f + 2] : 0.0f);
        dvec a3 = DV_SPLAT (bias ? bias[f + 3] : 0.0f);
        K3_DOT (a0, wf);
        K3_DOT (a1, wf + 9);
        K3_DOT (a2, wf + 18);
        K3_DOT (a3, wf + 27);
        DV_STORE (yo + f * ohw, a0);
        DV_STORE (yo + (f + 1) * ohw, a1);
        DV_STORE (yo + (f + 2) * ohw, a2);
        DV_STORE (yo + (f + 3) * ohw, a3);
      }
      for (; f < filters; f++) {
        dvec a0 = DV_SPLAT (bias ? bias[f] : 0.0f);
        K3_DOT (a0, w + (size_t) f * 9);
        DV_STORE (yo + f * ohw, a0);
      }
    }
}

#define K3_ACC(a, d, p) \
  do { \
    dvec t_; \
    DV_LOAD (t_, (p)); \
    a += (d) * t_; \
  } while (0)
#define K3_STEP(d, p, iw) \
  do { \
    K3_ACC (a0, d, (p)); K3_ACC (a1, d, (p) + 1); K3_ACC (a2, d, (p) + 2); \
    K3_ACC (a3, d, (p) + (iw)); K3_ACC (a4, d, (p) + (iw) + 1); \
    K3_ACC (a5, d, (p) + (iw) + 2); K3_ACC (a6, d, (p) + 2 * (iw)); \
    K3_ACC (a7, d, (p) + 2 * (iw) + 1); \
    K3_ACC (a8, d, (p) + 2 * (iw) + 2); \
    ab += d; \
  } while (0)

/* The weight gradient of the 3x3 one-channel case: a function of its own
 * so that the ten accumulators get registers of their own. The blocks of
 * a row: the whole ones, then the overlapping last one with the lanes
 * already counted masked out. */
static TT_VECTOR_CLONES void
direct_k3_backward_weight (const tt_window_geom * g, int filters, int b0,
    int b1, const float *x, const float *dy, float *dw, float *dbias)
{
  const int iw = g->in_w, oh = g->out_h, ow = g->out_w, whole = ow / DV;
  const size_t in_sample = (size_t) g->in_h * iw, ohw = (size_t) (oh) * ow;
  dvec mask;
  for (int l = 0; l < DV; l++)
    mask[l] = ow - DV + l >= whole * DV ? 1.0f : 0.0f;

  for (int f = 0; f < filters; f++) {
    dvec a0 = DV_SPLAT (0.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
    dvec a6 = a0, a7 = a0, a8 = a0, ab = a0;
    for (int b = b0; b < b1; b++) {
      const float *xb = x + b * in_sample;
      const float *dyp = dy + ((size_t) b * filters + f) * ohw;
      for (int oy = 0; oy < oh; oy++) {
        const float *xr = xb + (size_t) oy * iw, *dr = dyp + (size_t) (oy) * ow;
        for (int k = 0; k < whole; k++) {
          dvec d;
          DV_LOAD (d, dr + k * DV);
          K3_STEP (d, xr + k * DV, iw);
        }
        if (whole * DV < ow) {
          dvec d;
          DV_LOAD (d, dr + ow - DV);
          d *= mask;
          K3_STEP (d, xr + ow - DV, iw);
        }
      }
    }
    float *wf = dw + (size_t) f * 9;
    wf[0] = dv_sum (&a0);
    wf[1] = dv_sum (&a1);
    wf[2] = dv_sum (&a2);
    wf[3] = dv_sum (&a3);
    wf[4] = dv_sum (&a4);
    wf[5] = dv_sum (&a5);
    wf[6] = dv_sum (&a6);
    wf[7] = dv_sum (&a7);
    wf[8] = dv_sum (&a8);
    if (dbias)
      dbias[f] = dv_sum (&ab);
  }
}

/* Samples [b0, b1) */
static TT_VECTOR_CLONES void
direct_forward_range (const tt_window_geom * g, int filters, int b0, int b1,
    const float *x, const float *w, const float *bias, float *y)
{
  const size_t in_sample = (size_t) g->channels * g->in_h * g->in_w;
  const size_t out_sample = (size_t) filters * g->out_h * g->out_w;
  const bool k133 = g->channels == 1 && g->kernel_h == 3 && g->kernel_w == 3;
  for (int b = b0; b < b1; b++) {
    const float *xb = x + b * in_sample;
    float *yb = y + b * out_sample;
    if (k133)
      direct_k3_forward_sample (g, filters, xb, w, bias, yb);
    else
      direct_forward_sample (g, g->channels, g->kernel_h, g->kernel_w,
          filters, xb, w, bias, yb);
  }
}

/* Split over the engine's threads by samples: forward's outputs are one
 * thread's bit for bit; the weight gradient's partials, below. */
typedef struct
{
  tt_threads *pool;
  const tt_window_geom *g;
  int filters, batch;
  const float *x, *w, *bias, *dy;
  float *y, *dw, *dbias;
} direct_job;

static void
direct_forward_part (void *arg, unsigned part, unsigned n_parts)
{
  const direct_job *j = arg;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  direct_forward_range (j->g, j->filters, (int) lo, (int) hi, j->x, j->w,
      j->bias, j->y);
}

void
tt_conv2d_direct_forward (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, const float *x, const float *w,
    const float *bias, float *y)
{
  direct_job j = {.g = g,.filters = filters,.batch = batch,.x = x,.w = w,
    .bias = bias,.y = y
  };
  tt_threads_run (pool, direct_forward_part, &j,
      tt_threads_parts (pool, (size_t) batch, 2));
}

/* acc[t] += sum over one (b, f) output plane of dy * the input under tap
 * t; *accb += sum of dy. */
TT_ALWAYS_INLINE void
direct_weight_plane (const tt_window_geom * g, int channels, int kh, int kw,
    const float *restrict x, const float *restrict dy, const dvec * tail_mask,
    dvec * restrict acc, dvec * restrict accb)
{
  const int iw = g->in_w, taps = channels * kh * kw;
  const int oh = g->out_h, ow = g->out_w, nblk = dv_blocks (ow);
  const size_t plane = (size_t) g->in_h * iw;
  dvec a[DIRECT_MAX_TAPS], ab = *accb;

  for (int t = 0; t < taps; t++)
    a[t] = acc[t];
  for (int oy = 0; oy < oh; oy++)
    for (int k = 0; k < nblk; k++) {
      const int ox = dv_block_start (k, ow);
      dvec d;
      DV_LOAD (d, dy + (size_t) oy * ow + ox);
      if (ox != k * DV)
        d *= *tail_mask;
      ab += d;
      for (int c = 0; c < channels; c++)
        for (int i = 0; i < kh; i++)
          for (int j = 0; j < kw; j++) {
            dvec xv;
            DV_LOAD (xv, x + c * plane + (size_t) (oy + i) * iw + ox + j);
            a[(c * kh + i) * kw + j] += d * xv;
          }
    }
  for (int t = 0; t < taps; t++)
    acc[t] = a[t];
  *accb = ab;
}

/* dw and dbias over samples [b0, b1): per filter, per-lane partial sums
 * reduced once at the end. */
static TT_VECTOR_CLONES void
direct_backward_weight_range (const tt_window_geom * g, int filters, int b0,
    int b1, const float *x, const float *dy, float *dw, float *dbias)
{
  const int taps = g->channels * g->kernel_h * g->kernel_w;
  const int ow = g->out_w;
  const size_t in_sample = (size_t) g->channels * g->in_h * g->in_w;
  const size_t ohw = (size_t) g->out_h * ow;
  if (g->channels == 1 && g->kernel_h == 3 && g->kernel_w == 3) {
    direct_k3_backward_weight (g, filters, b0, b1, x, dy, dw, dbias);
    return;
  }
  /* lanes of the overlapping last block not counted by the one before */
  dvec tail_mask;
  for (int l = 0; l < DV; l++)
    tail_mask[l] = ow - DV + l >= (ow / DV) * DV ? 1.0f : 0.0f;

  /* Filters outermost: per filter, the accumulators live across the
   * samples, each input sample (a few KiB) comes from cache, and each
   * output derivative plane is read once. */
  for (int f = 0; f < filters; f++) {
    dvec acc[DIRECT_MAX_TAPS], accb = DV_SPLAT (0.0f);
    for (int t = 0; t < taps; t++)
      acc[t] = DV_SPLAT (0.0f);
    for (int b = b0; b < b1; b++) {
      const float *xb = x + b * in_sample;
      const float *dyp = dy + ((size_t) b * filters + f) * ohw;
      direct_weight_plane (g, g->channels, g->kernel_h, g->kernel_w, xb, dyp,
          &tail_mask, acc, &accb);
    }
    for (int t = 0; t < taps; t++)
      dw[(size_t) f * taps + t] = dv_sum (&acc[t]);
    if (dbias)
      dbias[f] = dv_sum (&accb);
  }
}

/* The weight gradient by samples, as forward: thread i of the pool sums
 * over the i-th contiguous range of the batch (tt_threads_run_owned), the
 * samples whose output derivative the layer after it (pooling, by planes)
 * wrote on that core, into its own partial (part 0: dw and dbias, part i:
 * its worker's scratch); the partials are added in part order after the
 * job. By filters instead, each thread read every sample's derivative,
 * half of them from the other core's cache. Deterministic for a thread
 * count, within rounding of one thread's; a pool without the scratch
 * (tt_conv2d_direct_worker_floats) runs it on the caller alone. */
/* A part's partial: dw in whole cache lines, then dbias. */
static size_t
direct_dbias_at (const tt_window_geom * g, int filters)
{
  const size_t n = (size_t) filters * g->channels * g->kernel_h * g->kernel_w;
  return (n + 15) & ~(size_t) 15;
}

size_t
tt_conv2d_direct_worker_floats (const tt_window_geom * g, int filters,
    bool gradient)
{
  return gradient ? direct_dbias_at (g, filters) + (size_t) filters : 0;
}

static void
direct_backward_weight_part (void *arg, unsigned part, unsigned n_parts)
{
  const direct_job *j = arg;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  float *dw = j->dw, *dbias = j->dbias;
  if (part > 0) {
    dw = tt_threads_scratch (j->pool, part);
    dbias = dbias ? dw + direct_dbias_at (j->g, j->filters) : NULL;
  }
  direct_backward_weight_range (j->g, j->filters, (int) lo, (int) hi, j->x,
      j->dy, dw, dbias);
}

void
tt_conv2d_direct_backward_weight (tt_threads * pool,
    const tt_window_geom * g, int filters, int batch, const float *x,
    const float *dy, float *dw, float *dbias)
{
  direct_job j = {.pool = pool,.g = g,.filters = filters,.batch = batch,
    .x = x,.dy = dy,.dw = dw,.dbias = dbias
  };
  const unsigned parts = tt_threads_run_partials (pool,
      tt_conv2d_direct_worker_floats (g, filters, true),
      direct_backward_weight_part, &j);
  const size_t nw = (size_t) filters * g->channels * g->kernel_h * g->kernel_w;
  tt_threads_add_partials (pool, parts, 0, dw, nw);
  if (dbias)
    tt_threads_add_partials (pool, parts, direct_dbias_at (g, filters), dbias,
        (size_t) filters);
}
