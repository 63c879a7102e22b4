/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Batch normalization over x viewed as [outer][features][inner].
 *
 * Every kernel makes two passes per feature: one reduction (moments, or
 * the two gradient sums) and one elementwise map. Sums run in double: a
 * feature can gather millions of values and float accumulation would lose
 * the low digits that the variance and the gradient projection live on.
 *
 * A feature's values come in `outer` runs of `inner` contiguous floats.
 * With long runs (conv maps) the kernels sweep one feature at a time.
 * With short runs (inner == 1 after a dense layer) that would stride
 * through memory, so a chunk of adjacent features is swept row by row
 * instead, with one accumulator per element of the chunk, reduced to
 * per-feature values at the end.
 */
#include "kernels.h"

#include <math.h>
#include <stddef.h>

/* Fixed-length blocks let GCC vectorize at -O2, whose cost model rejects
 * loops needing a scalar epilogue or a runtime alias check. Elementwise
 * maps go through a local block so that y == x (in place) stays valid. */
#define BN_BLOCK 8
/* Elements per chunk in the short-run path; a kernel keeps a handful of
 * float and double arrays of this size, ~35 KiB of stack at most. */
#define BN_CHUNK 512
/* Runs at least this long are swept directly, one feature at a time. */
#define BN_LONG_RUN 64

static inline int
bn_min (int a, int b)
{
  return a < b ? a : b;
}

/* ---- long runs: one feature, per-run scalars ------------------------- */

/* s1 += sum(x - k), s2 += sum((x - k)^2). Shifting by a sample k of the
 * data keeps the one-pass variance free of cancellation when the mean is
 * large against the spread. Four lanes break the double add chain. */
static void
bn_run_moments (const float *x, size_t n, double k, double *s1, double *s2)
{
  double a[4] = { 0, 0, 0, 0 }, b[4] = { 0, 0, 0, 0 };
  double ta, tb;
  size_t i = 0;

  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; l++) {
      double d = x[i + l] - k;
      a[l] += d;
      b[l] += d * d;
    }
  ta = (a[0] + a[1]) + (a[2] + a[3]);
  tb = (b[0] + b[1]) + (b[2] + b[3]);
  for (; i < n; i++) {
    double d = x[i] - k;
    ta += d;
    tb += d * d;
  }
  *s1 += ta;
  *s2 += tb;
}

/* sdy += sum(dy), sdx += sum(dy * (x - m)). */
static void
bn_run_grad_sums (const float *x, const float *dy, size_t n, double m,
    double *sdy, double *sdx)
{
  double a[4] = { 0, 0, 0, 0 }, b[4] = { 0, 0, 0, 0 };
  double ta, tb;
  size_t i = 0;

  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; l++) {
      double g = dy[i + l];
      a[l] += g;
      b[l] += g * (x[i + l] - m);
    }
  ta = (a[0] + a[1]) + (a[2] + a[3]);
  tb = (b[0] + b[1]) + (b[2] + b[3]);
  for (; i < n; i++) {
    double g = dy[i];
    ta += g;
    tb += g * (x[i] - m);
  }
  *sdy += ta;
  *sdx += tb;
}

/* y = (x - m) * s + t. Centering first keeps y accurate near the mean. */
static void
bn_run_affine (const float *x, float *y, size_t n, float m, float s, float t)
{
  size_t i = 0;

  for (; i + BN_BLOCK <= n; i += BN_BLOCK) {
    float v[BN_BLOCK];
    for (int l = 0; l < BN_BLOCK; l++)
      v[l] = (x[i + l] - m) * s + t;
    for (int l = 0; l < BN_BLOCK; l++)
      y[i + l] = v[l];
  }
  for (; i < n; i++)
    y[i] = (x[i] - m) * s + t;
}

/* dx = k1 * dy + cx * (x - m) + c0. */
static void
bn_run_grad (const float *x, const float *dy, float *dx, size_t n, float m,
    float k1, float cx, float c0)
{
  size_t i = 0;

  for (; i + BN_BLOCK <= n; i += BN_BLOCK) {
    float v[BN_BLOCK];
    for (int l = 0; l < BN_BLOCK; l++)
      v[l] = k1 * dy[i + l] + cx * (x[i + l] - m) + c0;
    for (int l = 0; l < BN_BLOCK; l++)
      dx[i + l] = v[l];
  }
  for (; i < n; i++)
    dx[i] = k1 * dy[i] + cx * (x[i] - m) + c0;
}

/* ---- short runs: a chunk of features, per-element arrays ------------- */

static void
bn_vec_moments (const float *x, size_t n, const double *k,
    double *restrict s1, double *restrict s2)
{
  size_t i = 0;

  for (; i + BN_BLOCK <= n; i += BN_BLOCK)
    for (int l = 0; l < BN_BLOCK; l++) {
      double d = x[i + l] - k[i + l];
      s1[i + l] += d;
      s2[i + l] += d * d;
    }
  for (; i < n; i++) {
    double d = x[i] - k[i];
    s1[i] += d;
    s2[i] += d * d;
  }
}

static void
bn_vec_grad_sums (const float *x, const float *dy, size_t n, const double *m,
    double *restrict sdy, double *restrict sdx)
{
  size_t i = 0;

  for (; i + BN_BLOCK <= n; i += BN_BLOCK)
    for (int l = 0; l < BN_BLOCK; l++) {
      double g = dy[i + l];
      sdy[i + l] += g;
      sdx[i + l] += g * (x[i + l] - m[i + l]);
    }
  for (; i < n; i++) {
    double g = dy[i];
    sdy[i] += g;
    sdx[i] += g * (x[i] - m[i]);
  }
}

static void
bn_vec_affine (const float *x, float *y, size_t n, const float *m,
    const float *s, const float *t)
{
  size_t i = 0;

  for (; i + BN_BLOCK <= n; i += BN_BLOCK) {
    float v[BN_BLOCK];
    for (int l = 0; l < BN_BLOCK; l++)
      v[l] = (x[i + l] - m[i + l]) * s[i + l] + t[i + l];
    for (int l = 0; l < BN_BLOCK; l++)
      y[i + l] = v[l];
  }
  for (; i < n; i++)
    y[i] = (x[i] - m[i]) * s[i] + t[i];
}

static void
bn_vec_grad (const float *x, const float *dy, float *dx, size_t n,
    const float *m, const float *k1, const float *cx, const float *c0)
{
  size_t i = 0;

  for (; i + BN_BLOCK <= n; i += BN_BLOCK) {
    float v[BN_BLOCK];
    for (int l = 0; l < BN_BLOCK; l++)
      v[l] = k1[i + l] * dy[i + l] + cx[i + l] * (x[i + l] - m[i + l])
          + c0[i + l];
    for (int l = 0; l < BN_BLOCK; l++)
      dx[i + l] = v[l];
  }
  for (; i < n; i++)
    dx[i] = k1[i] * dy[i] + cx[i] * (x[i] - m[i]) + c0[i];
}

/* Repeats each of nf per-feature values inner times. */
static void
bn_expand_f (const float *src, int nf, int inner, float *dst)
{
  for (int f = 0; f < nf; f++)
    for (int i = 0; i < inner; i++)
      *dst++ = src[f];
}

static void
bn_expand_fd (const float *src, int nf, int inner, double *dst)
{
  for (int f = 0; f < nf; f++)
    for (int i = 0; i < inner; i++)
      *dst++ = src[f];
}

/* Sums the inner per-element accumulators of each feature. */
static void
bn_reduce (const double *acc, int nf, int inner, double *out)
{
  for (int f = 0; f < nf; f++) {
    double s = 0.0;
    for (int i = 0; i < inner; i++)
      s += acc[f * inner + i];
    out[f] = s;
  }
}

/* ---- chunk drivers ---------------------------------------------------- */

/* Features per chunk: one for long runs, as many as fill BN_CHUNK
 * elements otherwise (at least 8, since inner < BN_LONG_RUN). */
static int
bn_chunk_features (int inner)
{
  return inner >= BN_LONG_RUN ? 1 : BN_CHUNK / inner;
}

/* For features f0..f0+nf-1 (x already offset to f0): s1, s2 get the sums
 * of (x - k) and (x - k)^2 with k the feature's first value. */
static void
bn_moments (int outer, int features, int inner, const float *x, int nf,
    float *k, double *s1, double *s2)
{
  const size_t slab = (size_t) features * inner;

  for (int f = 0; f < nf; f++)
    k[f] = x[(size_t) f * inner];

  if (inner >= BN_LONG_RUN) {
    s1[0] = s2[0] = 0.0;
    for (int o = 0; o < outer; o++)
      bn_run_moments (x + o * slab, inner, k[0], &s1[0], &s2[0]);
  } else {
    const size_t len = (size_t) nf * inner;
    double a1[BN_CHUNK] = { 0 }, a2[BN_CHUNK] = { 0 }, ke[BN_CHUNK];

    bn_expand_fd (k, nf, inner, ke);
    for (int o = 0; o < outer; o++)
      bn_vec_moments (x + o * slab, len, ke, a1, a2);
    bn_reduce (a1, nf, inner, s1);
    bn_reduce (a2, nf, inner, s2);
  }
}

/* y = (x - m[f]) * s[f] + t[f] for the chunk's features. */
static void
bn_affine (int outer, int features, int inner, const float *x, float *y,
    int nf, const float *m, const float *s, const float *t)
{
  const size_t slab = (size_t) features * inner;

  if (inner >= BN_LONG_RUN) {
    for (int o = 0; o < outer; o++)
      bn_run_affine (x + o * slab, y + o * slab, inner, m[0], s[0], t[0]);
  } else {
    const size_t len = (size_t) nf * inner;
    float me[BN_CHUNK], se[BN_CHUNK], te[BN_CHUNK];

    bn_expand_f (m, nf, inner, me);
    bn_expand_f (s, nf, inner, se);
    bn_expand_f (t, nf, inner, te);
    for (int o = 0; o < outer; o++)
      bn_vec_affine (x + o * slab, y + o * slab, len, me, se, te);
  }
}

void
tt_batchnorm_forward_train (int outer, int features, int inner,
    const float *x, float *y, const float *gamma, const float *beta,
    float *moving_mean, float *moving_var, float momentum, float epsilon,
    float *mean, float *invstd)
{
  const double n = (double) outer * inner;
  const int step = inner > 0 ? bn_chunk_features (inner) : 1;

  if (features <= 0)
    return;
  if (outer <= 0 || inner <= 0) {
    /* No values: report zero statistics and leave the moving ones. */
    for (int f = 0; f < features; f++) {
      mean[f] = 0.0f;
      invstd[f] = (float) (1.0 / sqrt ((double) epsilon));
    }
    return;
  }

  for (int f0 = 0; f0 < features; f0 += step) {
    const int nf = bn_min (step, features - f0);
    const size_t off = (size_t) f0 * inner;
    double s1[BN_CHUNK], s2[BN_CHUNK];
    float k[BN_CHUNK], m[BN_CHUNK], sc[BN_CHUNK];

    bn_moments (outer, features, inner, x + off, nf, k, s1, s2);
    for (int i = 0; i < nf; i++) {
      const int f = f0 + i;
      const double d = s1[i] / n;
      double var = s2[i] / n - d * d;
      double mu = k[i] + d, is;

      /* Rounding can leave a constant feature a hair below zero. */
      if (var < 0.0)
        var = 0.0;
      is = 1.0 / sqrt (var + epsilon);
      mean[f] = (float) mu;
      invstd[f] = (float) is;
      if (moving_mean != NULL)
        moving_mean[f] = (float) (momentum * (double) moving_mean[f]
            + (1.0 - momentum) * mu);
      if (moving_var != NULL)
        moving_var[f] = (float) (momentum * (double) moving_var[f]
            + (1.0 - momentum) * var);
      m[i] = (float) mu;
      sc[i] = (float) (gamma[f] * is);
    }
    bn_affine (outer, features, inner, x + off, y + off, nf, m, sc,
        beta + f0);
  }
}

void
tt_batchnorm_forward_eval (int outer, int features, int inner,
    const float *x, float *y, const float *gamma, const float *beta,
    const float *moving_mean, const float *moving_var, float epsilon)
{
  if (features <= 0 || outer <= 0 || inner <= 0)
    return;

  const int step = bn_chunk_features (inner);
  for (int f0 = 0; f0 < features; f0 += step) {
    const int nf = bn_min (step, features - f0);
    const size_t off = (size_t) f0 * inner;
    float sc[BN_CHUNK];

    for (int i = 0; i < nf; i++) {
      const int f = f0 + i;
      sc[i] = (float) (gamma[f] / sqrt ((double) moving_var[f] + epsilon));
    }
    bn_affine (outer, features, inner, x + off, y + off, nf,
        moving_mean + f0, sc, beta + f0);
  }
}

void
tt_batchnorm_backward (int outer, int features, int inner,
    const float *x, const float *dy, const float *gamma, const float *mean,
    const float *invstd, float *dx, float *dgamma, float *dbeta)
{
  const double n = (double) outer * inner;
  const size_t slab = (size_t) features * inner;

  if (features <= 0)
    return;
  if (outer <= 0 || inner <= 0) {
    for (int f = 0; f < features; f++) {
      if (dgamma != NULL)
        dgamma[f] = 0.0f;
      if (dbeta != NULL)
        dbeta[f] = 0.0f;
    }
    return;
  }

  const int step = bn_chunk_features (inner);
  for (int f0 = 0; f0 < features; f0 += step) {
    const int nf = bn_min (step, features - f0);
    const size_t off = (size_t) f0 * inner;
    const float *xc = x + off, *dyc = dy + off;
    double sdy[BN_CHUNK], sdx[BN_CHUNK];
    float k1[BN_CHUNK], cx[BN_CHUNK], c0[BN_CHUNK];

    /* Pass 1: sum(dy) and sum(dy * (x - mean)) per feature. */
    if (inner >= BN_LONG_RUN) {
      sdy[0] = sdx[0] = 0.0;
      for (int o = 0; o < outer; o++)
        bn_run_grad_sums (xc + o * slab, dyc + o * slab, inner, mean[f0],
            &sdy[0], &sdx[0]);
    } else {
      const size_t len = (size_t) nf * inner;
      double a1[BN_CHUNK] = { 0 }, a2[BN_CHUNK] = { 0 }, me[BN_CHUNK];

      bn_expand_fd (mean + f0, nf, inner, me);
      for (int o = 0; o < outer; o++)
        bn_vec_grad_sums (xc + o * slab, dyc + o * slab, len, me, a1, a2);
      bn_reduce (a1, nf, inner, sdy);
      bn_reduce (a2, nf, inner, sdx);
    }

    /* dgamma = sum(dy * xhat), dbeta = sum(dy); and the coefficients of
     * dx = gamma*invstd/N * (N*dy - sum(dy) - xhat*sum(dy*xhat))
     *    = k1*dy + cx*(x - mean) + c0. */
    for (int i = 0; i < nf; i++) {
      const int f = f0 + i;
      const double is = invstd[f];
      const double sdxhat = sdx[i] * is;
      const double g = gamma[f] * is;

      if (dgamma != NULL)
        dgamma[f] = (float) sdxhat;
      if (dbeta != NULL)
        dbeta[f] = (float) sdy[i];
      k1[i] = (float) g;
      cx[i] = (float) (-g * is * sdxhat / n);
      c0[i] = (float) (-g * sdy[i] / n);
    }
    if (dx == NULL)
      continue;

    /* Pass 2: the elementwise map. */
    if (inner >= BN_LONG_RUN) {
      for (int o = 0; o < outer; o++)
        bn_run_grad (xc + o * slab, dyc + o * slab, dx + off + o * slab,
            inner, mean[f0], k1[0], cx[0], c0[0]);
    } else {
      const size_t len = (size_t) nf * inner;
      float me[BN_CHUNK], k1e[BN_CHUNK], cxe[BN_CHUNK], c0e[BN_CHUNK];

      bn_expand_f (mean + f0, nf, inner, me);
      bn_expand_f (k1, nf, inner, k1e);
      bn_expand_f (cx, nf, inner, cxe);
      bn_expand_f (c0, nf, inner, c0e);
      for (int o = 0; o < outer; o++)
        bn_vec_grad (xc + o * slab, dyc + o * slab, dx + off + o * slab, len,
            me, k1e, cxe, c0e);
    }
  }
}
