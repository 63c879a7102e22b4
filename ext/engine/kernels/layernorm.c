/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Layer normalization of x viewed as [outer][n][inner]: each of the
 * outer * inner groups of n values (stride inner) is normalized on its
 * own, y = (x - mean) * rstd * gamma[j] + beta[j], gamma and beta indexed
 * by the position j in the group; biased variance, as PyTorch's LayerNorm.
 *
 * Forward takes each group's mean and variance in one pass, about a shift
 * (the group's first value: no cancellation when |mean| >> std), and
 * keeps mean and rstd = 1 / sqrt (var + eps) for backward, which reads x
 * again (xhat = (x - mean) * rstd) rather than a kept copy of xhat.
 * Backward of a group: g = dy * gamma, dx = rstd * (g - mean (g) - xhat *
 * mean (g * xhat)), its two reductions in one pass. dgamma and dbeta sum
 * dy * xhat and dy over the groups.
 *
 * Threads: forward and dx by ranges of outer (every group's arithmetic
 * the same whatever the split: bit-identical to one thread); dgamma and
 * dbeta by ranges of j, each element summed over the groups in order
 * (bit-identical too).
 *
 * The row reductions (inner == 1) use GNU vector types: at -O2 without
 * -ffast-math GCC does not reassociate a float sum, so a plain loop stays
 * scalar (kernels/batchnorm.c has the measurements). With inner > 1 the
 * lanes are the inner positions, contiguous, and the loops vectorize as
 * written.
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <math.h>
#include <string.h>

/* elements from which a pass is split over the threads */
#define LN_SPLIT_MIN 16384
/* inner positions handled at once (stack accumulators) */
#define LN_LANES 256

#if defined(__GNUC__)
typedef float ln_vec __attribute__((vector_size (16)));

TT_ALWAYS_INLINE ln_vec
ln_load (const float *p)
{
  ln_vec v;
  memcpy (&v, p, sizeof v);
  return v;
}

TT_ALWAYS_INLINE float
ln_hsum (ln_vec a, ln_vec b)
{
  const ln_vec s = a + b;
  return (s[0] + s[1]) + (s[2] + s[3]);
}
#endif

/* s1 = sum (x - k), s2 = sum ((x - k)^2) over a row of n */
TT_ALWAYS_INLINE void
ln_row_moments (const float *x, size_t n, float k, float *s1, float *s2)
{
  size_t i = 0;
  float a = 0.0f, b = 0.0f;
#if defined(__GNUC__)
  ln_vec a0 = { 0 }, a1 = { 0 }, b0 = { 0 }, b1 = { 0 };
  for (; i + 8 <= n; i += 8) {
    const ln_vec d0 = ln_load (x + i) - k, d1 = ln_load (x + i + 4) - k;
    a0 += d0;
    a1 += d1;
    b0 += d0 * d0;
    b1 += d1 * d1;
  }
  a = ln_hsum (a0, a1);
  b = ln_hsum (b0, b1);
#endif
  for (; i < n; i++) {
    const float d = x[i] - k;
    a += d;
    b += d * d;
  }
  *s1 = a;
  *s2 = b;
}

/* sg = sum (dy * gamma), sgx = sum (dy * gamma * xhat) over a row */
TT_ALWAYS_INLINE void
ln_row_grad_sums (const float *x, const float *dy, const float *gamma,
    size_t n, float mean, float rstd, float *sg, float *sgx)
{
  size_t i = 0;
  float a = 0.0f, b = 0.0f;
#if defined(__GNUC__)
  ln_vec a0 = { 0 }, a1 = { 0 }, b0 = { 0 }, b1 = { 0 };
  for (; i + 8 <= n; i += 8) {
    const ln_vec g0 = ln_load (dy + i) * ln_load (gamma + i);
    const ln_vec g1 = ln_load (dy + i + 4) * ln_load (gamma + i + 4);
    const ln_vec h0 = (ln_load (x + i) - mean) * rstd;
    const ln_vec h1 = (ln_load (x + i + 4) - mean) * rstd;
    a0 += g0;
    a1 += g1;
    b0 += g0 * h0;
    b1 += g1 * h1;
  }
  a = ln_hsum (a0, a1);
  b = ln_hsum (b0, b1);
#endif
  for (; i < n; i++) {
    const float g = dy[i] * gamma[i];
    a += g;
    b += g * ((x[i] - mean) * rstd);
  }
  *sg = a;
  *sgx = b;
}

typedef struct
{
  size_t n, inner;
  const float *x, *dy, *gamma, *beta;
  float *y, *dx, *mean, *rstd, *dgamma, *dbeta;
  float eps;
  size_t groups;                /* outer * inner, for the column pass */
} ln_job;

static TT_VECTOR_CLONES void
ln_forward_rows (const ln_job * j, size_t r0, size_t r1)
{
  const size_t n = j->n;
  const float inv_n = 1.0f / (float) n;
  for (size_t r = r0; r < r1; r++) {
    const float *x = j->x + r * n;
    float *y = j->y + r * n;
    float s1, s2;
    const float k = x[0];
    ln_row_moments (x, n, k, &s1, &s2);
    const float d = s1 * inv_n;
    float var = s2 * inv_n - d * d;
    var = var > 0.0f ? var : 0.0f;
    const float mean = k + d, rstd = 1.0f / sqrtf (var + j->eps);
    j->mean[r] = mean;
    j->rstd[r] = rstd;
    const float *gamma = j->gamma, *beta = j->beta;
    for (size_t i = 0; i < n; i++)
      y[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
  }
}

/* groups of stride inner: lanes are inner positions, LN_LANES at a time */
static TT_VECTOR_CLONES void
ln_forward_strided (const ln_job * j, size_t o0, size_t o1)
{
  const size_t n = j->n, inner = j->inner;
  const float inv_n = 1.0f / (float) n;
  float s1[LN_LANES], s2[LN_LANES];
  for (size_t o = o0; o < o1; o++)
    for (size_t i0 = 0; i0 < inner; i0 += LN_LANES) {
      const size_t w = inner - i0 < LN_LANES ? inner - i0 : LN_LANES;
      const float *x = j->x + o * n * inner + i0;
      float *y = j->y + o * n * inner + i0;
      float *mean = j->mean + o * inner + i0, *rstd = j->rstd + o * inner + i0;
      for (size_t l = 0; l < w; l++)
        s1[l] = s2[l] = 0.0f;
      for (size_t p = 0; p < n; p++) {
        const float *xp = x + p * inner;
        for (size_t l = 0; l < w; l++) {
          const float d = xp[l] - x[l];
          s1[l] += d;
          s2[l] += d * d;
        }
      }
      for (size_t l = 0; l < w; l++) {
        const float d = s1[l] * inv_n;
        float var = s2[l] * inv_n - d * d;
        var = var > 0.0f ? var : 0.0f;
        mean[l] = x[l] + d;
        rstd[l] = 1.0f / sqrtf (var + j->eps);
      }
      for (size_t p = 0; p < n; p++) {
        const float gp = j->gamma[p], bp = j->beta[p];
        const float *xp = x + p * inner;
        float *yp = y + p * inner;
        for (size_t l = 0; l < w; l++)
          yp[l] = (xp[l] - mean[l]) * rstd[l] * gp + bp;
      }
    }
}

static void
ln_forward_range (void *arg, size_t begin, size_t end)
{
  const ln_job *j = arg;
  const size_t block = j->n * j->inner;
  if (j->inner == 1)
    ln_forward_rows (j, begin / block, end / block);
  else
    ln_forward_strided (j, begin / block, end / block);
}

void
tt_layernorm_forward (tt_threads * pool, size_t outer, size_t n,
    size_t inner, const float *x, float *y, const float *gamma,
    const float *beta, float eps, float *mean, float *rstd)
{
  ln_job j = {.n = n,.inner = inner,.x = x,.gamma = gamma,.beta = beta,
    .y = y,.mean = mean,.rstd = rstd,.eps = eps
  };
  tt_split (pool, outer * n * inner, n * inner, LN_SPLIT_MIN,
      ln_forward_range, &j);
}

static TT_VECTOR_CLONES void
ln_dx_rows (const ln_job * j, size_t r0, size_t r1)
{
  const size_t n = j->n;
  const float inv_n = 1.0f / (float) n;
  const float *gamma = j->gamma;
  for (size_t r = r0; r < r1; r++) {
    const float *x = j->x + r * n, *dy = j->dy + r * n;
    float *dx = j->dx + r * n;
    const float mean = j->mean[r], rstd = j->rstd[r];
    float sg, sgx;
    ln_row_grad_sums (x, dy, gamma, n, mean, rstd, &sg, &sgx);
    const float a = sg * inv_n, b = sgx * inv_n;
    for (size_t i = 0; i < n; i++) {
      const float h = (x[i] - mean) * rstd;
      dx[i] = rstd * (dy[i] * gamma[i] - a - h * b);
    }
  }
}

static TT_VECTOR_CLONES void
ln_dx_strided (const ln_job * j, size_t o0, size_t o1)
{
  const size_t n = j->n, inner = j->inner;
  const float inv_n = 1.0f / (float) n;
  float sg[LN_LANES], sgx[LN_LANES];
  for (size_t o = o0; o < o1; o++)
    for (size_t i0 = 0; i0 < inner; i0 += LN_LANES) {
      const size_t w = inner - i0 < LN_LANES ? inner - i0 : LN_LANES;
      const size_t at = o * n * inner + i0;
      const float *x = j->x + at, *dy = j->dy + at;
      float *dx = j->dx + at;
      const float *mean = j->mean + o * inner + i0;
      const float *rstd = j->rstd + o * inner + i0;
      for (size_t l = 0; l < w; l++)
        sg[l] = sgx[l] = 0.0f;
      for (size_t p = 0; p < n; p++) {
        const float gp = j->gamma[p];
        const float *xp = x + p * inner, *dyp = dy + p * inner;
        for (size_t l = 0; l < w; l++) {
          const float g = dyp[l] * gp;
          sg[l] += g;
          sgx[l] += g * ((xp[l] - mean[l]) * rstd[l]);
        }
      }
      for (size_t l = 0; l < w; l++) {
        sg[l] *= inv_n;
        sgx[l] *= inv_n;
      }
      for (size_t p = 0; p < n; p++) {
        const float gp = j->gamma[p];
        const float *xp = x + p * inner, *dyp = dy + p * inner;
        float *dxp = dx + p * inner;
        for (size_t l = 0; l < w; l++) {
          const float h = (xp[l] - mean[l]) * rstd[l];
          dxp[l] = rstd[l] * (dyp[l] * gp - sg[l] - h * sgx[l]);
        }
      }
    }
}

static void
ln_dx_range (void *arg, size_t begin, size_t end)
{
  const ln_job *j = arg;
  const size_t block = j->n * j->inner;
  if (j->inner == 1)
    ln_dx_rows (j, begin / block, end / block);
  else
    ln_dx_strided (j, begin / block, end / block);
}

/* dgamma, dbeta over positions [p0, p1): every group in order */
static TT_VECTOR_CLONES void
ln_param_grads (const ln_job * j, size_t p0, size_t p1)
{
  const size_t n = j->n, inner = j->inner, outer = j->groups / inner;
  float *dg = j->dgamma, *db = j->dbeta;
  for (size_t p = p0; p < p1; p++) {
    if (dg)
      dg[p] = 0.0f;
    if (db)
      db[p] = 0.0f;
  }
  if (inner == 1) {
    for (size_t r = 0; r < outer; r++) {
      const float *x = j->x + r * n, *dy = j->dy + r * n;
      const float mean = j->mean[r], rstd = j->rstd[r];
      if (dg)
        for (size_t p = p0; p < p1; p++)
          dg[p] += dy[p] * ((x[p] - mean) * rstd);
      if (db)
        for (size_t p = p0; p < p1; p++)
          db[p] += dy[p];
    }
    return;
  }
  for (size_t o = 0; o < outer; o++) {
    const float *mean = j->mean + o * inner, *rstd = j->rstd + o * inner;
    for (size_t p = p0; p < p1; p++) {
      const float *x = j->x + (o * n + p) * inner;
      const float *dy = j->dy + (o * n + p) * inner;
      float sg = 0.0f, sb = 0.0f;
      for (size_t l = 0; l < inner; l++) {
        sg += dy[l] * ((x[l] - mean[l]) * rstd[l]);
        sb += dy[l];
      }
      if (dg)
        dg[p] += sg;
      if (db)
        db[p] += sb;
    }
  }
}

static void
ln_param_range (void *arg, size_t begin, size_t end)
{
  ln_param_grads (arg, begin, end);
}

void
tt_layernorm_backward (tt_threads * pool, size_t outer, size_t n,
    size_t inner, const float *x, const float *dy, const float *gamma,
    const float *mean, const float *rstd, float *dx, float *dgamma,
    float *dbeta)
{
  ln_job j = {.n = n,.inner = inner,.x = x,.dy = dy,.gamma = gamma,
    .dx = dx,.mean = (float *) mean,.rstd = (float *) rstd,
    .dgamma = dgamma,.dbeta = dbeta,.groups = outer * inner
  };
  const size_t total = outer * n * inner;
  if (dx)
    tt_split (pool, total, n * inner, LN_SPLIT_MIN, ln_dx_range, &j);
  if (dgamma || dbeta)
    /* by positions; split only when the whole pass is big enough */
    tt_split (pool, n, 16, total >= LN_SPLIT_MIN ? 1 : SIZE_MAX,
        ln_param_range, &j);
}
