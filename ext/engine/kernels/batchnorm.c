/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Batch normalization over x viewed as [outer][features][inner].
 *
 * Training forward and backward make two passes over their data: a
 * reduction (moments, or the two gradient sums) and an elementwise map;
 * inference is the map alone.
 *
 * Traversal. Features are processed in chunks of adjacent features, and
 * within a chunk always in memory order: for each outer index, the
 * chunk's contiguous nf * inner floats. Sweeping one feature at a time
 * instead (outer runs of inner floats, a whole slab apart) measured 4x
 * slower at conv sizes because it defeats the hardware prefetchers. With
 * long runs (inner >= BN_LONG_RUN, conv maps) each run is reduced or
 * mapped on its own; with short runs (inner == 1 after a dense layer) the
 * chunk is handled as one vector with per-element accumulators and
 * per-element copies of the feature constants.
 *
 * Precision. Sums are carried in double: a feature can gather millions of
 * values, and the variance and the gradient projection live in the low
 * digits. The innermost additions are float, over short spans (at most
 * BN_SPAN values per lane, or BN_ROWS rows per element) flushed into the
 * double totals, so the hot loops stay 4- or 8-wide SIMD. Moments are
 * taken about a shift k, a value of the feature itself, which removes the
 * cancellation of the one-pass variance when |mean| >> std.
 */
#include "kernels.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* Fixed-length blocks let GCC vectorize at -O2, whose cost model rejects
 * loops needing a scalar epilogue or a runtime alias check. Elementwise
 * maps go through a local block so that y == x (in place) stays valid. */
#define BN_BLOCK 8
/* Floats added into one float lane before flushing to double. */
#define BN_SPAN 256
/* Rows accumulated per element in float before flushing (short runs). */
#define BN_ROWS 32
/* Features per chunk, and elements per chunk row in the short-run path.
 * The per-chunk arrays on the stack come to ~30 KiB at most. */
#define BN_CHUNK 512
/* Runs at least this long are reduced and mapped one run at a time. */
#define BN_LONG_RUN 64

/* ---- long runs: one contiguous run of one feature -------------------- */

#if defined(__GNUC__)
/* The float partial sums are written with GNU vector extensions (GCC and
 * Clang): with plain lane arrays GCC keeps the lanes in memory at -O2
 * unless the lane loop is unrolled by pragma, and at -O3 that pragma
 * makes it unroll before vectorizing, leaving scalar code; both measured
 * 2-4x slower than these explicit vectors. 16 bytes is native on every
 * SIMD target (a wider generic vector is lowered through the stack on
 * SSE), so a block is two of them. */
typedef float bn_vec __attribute__((vector_size (16)));
#define BN_VEC_FLOATS 4

static inline void
bn_load (bn_vec * v, const float *p)
{
  memcpy (v, p, sizeof *v);
}
#endif

/* Adds the BN_BLOCK lanes of a and b, in double, to *s1 and *s2. */
static inline void
bn_lanes_to_double (const float *a, const float *b, double *s1, double *s2)
{
  double ta = 0.0, tb = 0.0;

  for (int l = 0; l < BN_BLOCK; l++) {
    ta += a[l];
    tb += b[l];
  }
  *s1 += ta;
  *s2 += tb;
}

/* s1 += sum(x - k), s2 += sum((x - k)^2). */
static void
bn_run_moments (const float *x, size_t n, float k, double *s1, double *s2)
{
  size_t i = 0;

  while (i + BN_BLOCK <= n) {
    const size_t end = n - i > BN_SPAN ? i + BN_SPAN : n;
    float a[BN_BLOCK], b[BN_BLOCK];
#if defined(__GNUC__)
    bn_vec a0 = { 0 }, a1 = { 0 }, b0 = { 0 }, b1 = { 0 };

    for (; i + BN_BLOCK <= end; i += BN_BLOCK) {
      bn_vec d0, d1;
      bn_load (&d0, x + i);
      bn_load (&d1, x + i + BN_VEC_FLOATS);
      d0 -= k;
      d1 -= k;
      a0 += d0;
      a1 += d1;
      b0 += d0 * d0;
      b1 += d1 * d1;
    }
    memcpy (a, &a0, sizeof a0);
    memcpy (a + BN_VEC_FLOATS, &a1, sizeof a1);
    memcpy (b, &b0, sizeof b0);
    memcpy (b + BN_VEC_FLOATS, &b1, sizeof b1);
#else
    for (int l = 0; l < BN_BLOCK; l++)
      a[l] = b[l] = 0.0f;
    for (; i + BN_BLOCK <= end; i += BN_BLOCK)
      for (int l = 0; l < BN_BLOCK; l++) {
        const float d = x[i + l] - k;
        a[l] += d;
        b[l] += d * d;
      }
#endif
    bn_lanes_to_double (a, b, s1, s2);
  }
  for (; i < n; i++) {
    const double d = (double) x[i] - k;
    *s1 += d;
    *s2 += d * d;
  }
}

/* sdy += sum(dy), sdx += sum(dy * (x - m)). */
static void
bn_run_grad_sums (const float *x, const float *dy, size_t n, float m,
    double *sdy, double *sdx)
{
  size_t i = 0;

  while (i + BN_BLOCK <= n) {
    const size_t end = n - i > BN_SPAN ? i + BN_SPAN : n;
    float a[BN_BLOCK], b[BN_BLOCK];
#if defined(__GNUC__)
    bn_vec a0 = { 0 }, a1 = { 0 }, b0 = { 0 }, b1 = { 0 };

    for (; i + BN_BLOCK <= end; i += BN_BLOCK) {
      bn_vec g0, g1, x0, x1;
      bn_load (&g0, dy + i);
      bn_load (&g1, dy + i + BN_VEC_FLOATS);
      bn_load (&x0, x + i);
      bn_load (&x1, x + i + BN_VEC_FLOATS);
      a0 += g0;
      a1 += g1;
      b0 += g0 * (x0 - m);
      b1 += g1 * (x1 - m);
    }
    memcpy (a, &a0, sizeof a0);
    memcpy (a + BN_VEC_FLOATS, &a1, sizeof a1);
    memcpy (b, &b0, sizeof b0);
    memcpy (b + BN_VEC_FLOATS, &b1, sizeof b1);
#else
    for (int l = 0; l < BN_BLOCK; l++)
      a[l] = b[l] = 0.0f;
    for (; i + BN_BLOCK <= end; i += BN_BLOCK)
      for (int l = 0; l < BN_BLOCK; l++) {
        a[l] += dy[i + l];
        b[l] += dy[i + l] * (x[i + l] - m);
      }
#endif
    bn_lanes_to_double (a, b, sdy, sdx);
  }
  for (; i < n; i++) {
    *sdy += dy[i];
    *sdx += (double) dy[i] * ((double) x[i] - m);
  }
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

/* ---- short runs: one row of a chunk, per-element arrays --------------- */

static void
bn_vec_moments (const float *x, size_t n, const float *k, float *restrict s1,
    float *restrict s2)
{
  size_t i = 0;

  for (; i + BN_BLOCK <= n; i += BN_BLOCK)
    for (int l = 0; l < BN_BLOCK; l++) {
      const float d = x[i + l] - k[i + l];
      s1[i + l] += d;
      s2[i + l] += d * d;
    }
  for (; i < n; i++) {
    const float d = x[i] - k[i];
    s1[i] += d;
    s2[i] += d * d;
  }
}

static void
bn_vec_grad_sums (const float *x, const float *dy, size_t n, const float *m,
    float *restrict sdy, float *restrict sdx)
{
  size_t i = 0;

  for (; i + BN_BLOCK <= n; i += BN_BLOCK)
    for (int l = 0; l < BN_BLOCK; l++) {
      sdy[i + l] += dy[i + l];
      sdx[i + l] += dy[i + l] * (x[i + l] - m[i + l]);
    }
  for (; i < n; i++) {
    sdy[i] += dy[i];
    sdx[i] += dy[i] * (x[i] - m[i]);
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
bn_expand (const float *src, int nf, int inner, float *dst)
{
  for (int f = 0; f < nf; f++)
    for (int i = 0; i < inner; i++)
      *dst++ = src[f];
}

/* acc += part (double += float), then part = 0. */
static void
bn_flush (float *restrict part, double *restrict acc, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    acc[i] += part[i];
    part[i] = 0.0f;
  }
}

/* out[f] = sum of the inner per-element accumulators of feature f. */
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

/* A chunk: features [f0, f0 + nf) of a [outer][features][inner] tensor.
 * Pointers handed to the drivers are already offset to feature f0. */
typedef struct
{
  int outer, inner, nf;
  size_t slab;                  /* features * inner: one outer step */
  bool long_runs;
} bn_chunk;

static bn_chunk
bn_chunk_at (int outer, int features, int inner, int f0, int f_end)
{
  bn_chunk c;
  int step;

  c.outer = outer;
  c.inner = inner;
  c.slab = (size_t) (features) * inner;
  c.long_runs = inner >= BN_LONG_RUN;
  /* Short runs: as many features as fill BN_CHUNK elements (at least 8,
   * since inner < BN_LONG_RUN). */
  step = c.long_runs ? BN_CHUNK : BN_CHUNK / inner;
  c.nf = f_end - f0 < step ? f_end - f0 : step;
  return c;
}

/* s1, s2 [nf]: sums of (x - k) and (x - k)^2 per feature. */
static void
bn_moments (const bn_chunk * c, const float *x, const float *k, double *s1,
    double *s2)
{
  for (int f = 0; f < c->nf; f++)
    s1[f] = s2[f] = 0.0;

  if (c->long_runs) {
    for (int o = 0; o < c->outer; o++)
      for (int f = 0; f < c->nf; f++)
        bn_run_moments (x + o * c->slab + (size_t) f * c->inner, c->inner,
            k[f], &s1[f], &s2[f]);
  } else {
    const size_t len = (size_t) c->nf * c->inner;
    double a1[BN_CHUNK] = { 0 }, a2[BN_CHUNK] = { 0 };
    float p1[BN_CHUNK] = { 0 }, p2[BN_CHUNK] = { 0 }, ke[BN_CHUNK];

    bn_expand (k, c->nf, c->inner, ke);
    for (int o = 0; o < c->outer; o++) {
      bn_vec_moments (x + o * c->slab, len, ke, p1, p2);
      if ((o + 1) % BN_ROWS == 0 || o + 1 == c->outer) {
        bn_flush (p1, a1, len);
        bn_flush (p2, a2, len);
      }
    }
    bn_reduce (a1, c->nf, c->inner, s1);
    bn_reduce (a2, c->nf, c->inner, s2);
  }
}

/* y = (x - m[f]) * s[f] + t[f]. */
static void
bn_affine (const bn_chunk * c, const float *x, float *y, const float *m,
    const float *s, const float *t)
{
  if (c->long_runs) {
    for (int o = 0; o < c->outer; o++)
      for (int f = 0; f < c->nf; f++) {
        const size_t off = o * c->slab + (size_t) f * c->inner;
        bn_run_affine (x + off, y + off, c->inner, m[f], s[f], t[f]);
      }
  } else {
    const size_t len = (size_t) c->nf * c->inner;
    float me[BN_CHUNK], se[BN_CHUNK], te[BN_CHUNK];

    bn_expand (m, c->nf, c->inner, me);
    bn_expand (s, c->nf, c->inner, se);
    bn_expand (t, c->nf, c->inner, te);
    for (int o = 0; o < c->outer; o++)
      bn_vec_affine (x + o * c->slab, y + o * c->slab, len, me, se, te);
  }
}

/* sdy, sdx [nf]: sums of dy and dy * (x - m) per feature. */
static void
bn_grad_sums (const bn_chunk * c, const float *x, const float *dy,
    const float *m, double *sdy, double *sdx)
{
  for (int f = 0; f < c->nf; f++)
    sdy[f] = sdx[f] = 0.0;

  if (c->long_runs) {
    for (int o = 0; o < c->outer; o++)
      for (int f = 0; f < c->nf; f++) {
        const size_t off = o * c->slab + (size_t) f * c->inner;
        bn_run_grad_sums (x + off, dy + off, c->inner, m[f], &sdy[f], &sdx[f]);
      }
  } else {
    const size_t len = (size_t) c->nf * c->inner;
    double a1[BN_CHUNK] = { 0 }, a2[BN_CHUNK] = { 0 };
    float p1[BN_CHUNK] = { 0 }, p2[BN_CHUNK] = { 0 }, me[BN_CHUNK];

    bn_expand (m, c->nf, c->inner, me);
    for (int o = 0; o < c->outer; o++) {
      bn_vec_grad_sums (x + o * c->slab, dy + o * c->slab, len, me, p1, p2);
      if ((o + 1) % BN_ROWS == 0 || o + 1 == c->outer) {
        bn_flush (p1, a1, len);
        bn_flush (p2, a2, len);
      }
    }
    bn_reduce (a1, c->nf, c->inner, sdy);
    bn_reduce (a2, c->nf, c->inner, sdx);
  }
}

/* dx = k1[f] * dy + cx[f] * (x - m[f]) + c0[f]. */
static void
bn_grad (const bn_chunk * c, const float *x, const float *dy, float *dx,
    const float *m, const float *k1, const float *cx, const float *c0)
{
  if (c->long_runs) {
    for (int o = 0; o < c->outer; o++)
      for (int f = 0; f < c->nf; f++) {
        const size_t off = o * c->slab + (size_t) f * c->inner;
        bn_run_grad (x + off, dy + off, dx + off, c->inner, m[f], k1[f],
            cx[f], c0[f]);
      }
  } else {
    const size_t len = (size_t) c->nf * c->inner;
    float me[BN_CHUNK], k1e[BN_CHUNK], cxe[BN_CHUNK], c0e[BN_CHUNK];

    bn_expand (m, c->nf, c->inner, me);
    bn_expand (k1, c->nf, c->inner, k1e);
    bn_expand (cx, c->nf, c->inner, cxe);
    bn_expand (c0, c->nf, c->inner, c0e);
    for (int o = 0; o < c->outer; o++)
      bn_vec_grad (x + o * c->slab, dy + o * c->slab, dx + o * c->slab, len,
          me, k1e, cxe, c0e);
  }
}

/* ---- entry points ----------------------------------------------------- */

/* The arguments of an entry point, for its parts (features [fa, fb) each:
 * a feature's arithmetic never depends on the others', so any split
 * gives one thread's results). */
typedef struct
{
  int outer, features, inner;
  const float *x, *dy, *gamma, *beta, *mean_in, *var_in, *invstd_in;
  float *y, *moving_mean, *moving_var, *mean, *invstd, *dgamma, *dbeta;
  float momentum, epsilon;
} bn_args;

static void
bn_forward_train_range (const bn_args * a, int fa, int fb)
{
  const int outer = a->outer, features = a->features, inner = a->inner;
  const float *x = a->x, *gamma = a->gamma, *beta = a->beta;
  float *y = a->y, *moving_mean = a->moving_mean, *moving_var =
      a->moving_var, *mean = a->mean, *invstd = a->invstd;
  const float momentum = a->momentum, epsilon = a->epsilon;
  const double n = (double) outer * inner;

  for (int f0 = fa, nf; f0 < fb; f0 += nf) {
    const bn_chunk c = bn_chunk_at (outer, features, inner, f0, fb);
    const size_t off = (size_t) f0 * inner;
    double s1[BN_CHUNK], s2[BN_CHUNK];
    float k[BN_CHUNK], sc[BN_CHUNK];

    nf = c.nf;
    /* Shift by the feature's first value: any sample of the data bounds
     * |x - k| by the spread, which is what the one-pass variance needs. */
    for (int i = 0; i < nf; i++)
      k[i] = x[off + (size_t) i * inner];
    bn_moments (&c, x + off, k, s1, s2);

    for (int i = 0; i < nf; i++) {
      const int f = f0 + i;
      const double d = s1[i] / n;
      double var = s2[i] / n - d * d;
      const double mu = k[i] + d;
      double is;

      /* Rounding can leave a constant feature a hair below zero. */
      if (var < 0.0)
        var = 0.0;
      is = 1.0 / sqrt (var + epsilon);
      mean[f] = (float) mu;
      invstd[f] = (float) is;
      sc[i] = (float) (gamma[f] * is);
      if (moving_mean != NULL)
        moving_mean[f] = (float) (momentum * (double) moving_mean[f]
            + (1.0 - momentum) * mu);
      if (moving_var != NULL)
        moving_var[f] = (float) (momentum * (double) moving_var[f]
            + (1.0 - momentum) * var);
    }
    bn_affine (&c, x + off, y + off, mean + f0, sc, beta + f0);
  }
}

static void
bn_forward_eval_range (const bn_args * a, int fa, int fb)
{
  const int outer = a->outer, features = a->features, inner = a->inner;
  const float *x = a->x, *gamma = a->gamma, *beta = a->beta,
      *moving_mean = a->mean_in, *moving_var = a->var_in;
  float *y = a->y;
  const float epsilon = a->epsilon;

  for (int f0 = fa, nf; f0 < fb; f0 += nf) {
    const bn_chunk c = bn_chunk_at (outer, features, inner, f0, fb);
    const size_t off = (size_t) f0 * inner;
    float sc[BN_CHUNK];

    nf = c.nf;
    for (int i = 0; i < nf; i++) {
      const int f = f0 + i;
      sc[i] = (float) (gamma[f] / sqrt ((double) moving_var[f] + epsilon));
    }
    bn_affine (&c, x + off, y + off, moving_mean + f0, sc, beta + f0);
  }
}

static void
bn_backward_range (const bn_args * a, int fa, int fb)
{
  const int outer = a->outer, features = a->features, inner = a->inner;
  const float *x = a->x, *dy = a->dy, *gamma = a->gamma,
      *mean = a->mean_in, *invstd = a->invstd_in;
  float *dx = a->y, *dgamma = a->dgamma, *dbeta = a->dbeta;
  const double n = (double) outer * inner;

  for (int f0 = fa, nf; f0 < fb; f0 += nf) {
    const bn_chunk c = bn_chunk_at (outer, features, inner, f0, fb);
    const size_t off = (size_t) f0 * inner;
    double sdy[BN_CHUNK], sdx[BN_CHUNK];
    float k1[BN_CHUNK], cx[BN_CHUNK], c0[BN_CHUNK];

    nf = c.nf;
    bn_grad_sums (&c, x + off, dy + off, mean + f0, sdy, sdx);

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
    if (dx != NULL)
      bn_grad (&c, x + off, dy + off, dx + off, mean + f0, k1, cx, c0);
  }
}

/* ---- split over the engine's threads ----------------------------------- */

/* Below this many values a split costs more than it saves. */
#define BN_SPLIT_MIN 16384

typedef struct
{
  const bn_args *a;
  void (*range) (const bn_args * a, int fa, int fb);
  size_t quantum;
} bn_job;

static void
bn_part (void *arg, unsigned part, unsigned n_parts)
{
  const bn_job *j = arg;
  size_t lo, hi;
  tt_threads_range ((size_t) j->a->features, j->quantum, part, n_parts, &lo,
      &hi);
  if (lo < hi)
    j->range (j->a, (int) lo, (int) hi);
}

/* Features split in parts; short runs in blocks of 8 features, which
 * keeps the per-element vectors of a chunk (bn_chunk_at) full. */
static void
bn_run (tt_threads * pool, const bn_args * a,
    void (*range) (const bn_args * a, int fa, int fb))
{
  bn_job j = { a, range, a->inner >= BN_LONG_RUN ? 1 : 8 };
  const size_t units = ((size_t) a->features + j.quantum - 1) / j.quantum;
  const bool big = (double) a->outer * a->features * a->inner >= BN_SPLIT_MIN;
  tt_threads_run (pool, bn_part, &j, big ? tt_threads_parts (pool, units,
          2) : 1);
}

void
tt_batchnorm_forward_train (tt_threads * pool, int outer, int features,
    int inner, const float *x, float *y, const float *gamma,
    const float *beta, float *moving_mean, float *moving_var, float momentum,
    float epsilon, float *mean, float *invstd)
{
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
  const bn_args a = {.outer = outer,.features = features,.inner = inner,
    .x = x,.gamma = gamma,.beta = beta,.y = y,.moving_mean = moving_mean,
    .moving_var = moving_var,.mean = mean,.invstd = invstd,
    .momentum = momentum,.epsilon = epsilon
  };
  bn_run (pool, &a, bn_forward_train_range);
}

void
tt_batchnorm_forward_eval (tt_threads * pool, int outer, int features,
    int inner, const float *x, float *y, const float *gamma,
    const float *beta, const float *moving_mean, const float *moving_var,
    float epsilon)
{
  if (features <= 0 || outer <= 0 || inner <= 0)
    return;
  const bn_args a = {.outer = outer,.features = features,.inner = inner,
    .x = x,.gamma = gamma,.beta = beta,.mean_in = moving_mean,
    .var_in = moving_var,.y = y,.epsilon = epsilon
  };
  bn_run (pool, &a, bn_forward_eval_range);
}

void
tt_batchnorm_backward (tt_threads * pool, int outer, int features,
    int inner, const float *x, const float *dy, const float *gamma,
    const float *mean, const float *invstd, float *dx, float *dgamma,
    float *dbeta)
{
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
  const bn_args a = {.outer = outer,.features = features,.inner = inner,
    .x = x,.dy = dy,.gamma = gamma,.mean_in = mean,.invstd_in = invstd,
    .y = dx,.dgamma = dgamma,.dbeta = dbeta
  };
  bn_run (pool, &a, bn_backward_range);
}
