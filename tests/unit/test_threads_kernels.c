/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The split kernels against themselves on one thread (issue 19): pooling
 * (planes) and batch norm (features) on 2 to 4 threads give one thread's
 * results bit for bit; tt_gemm_split gives tt_gemm's bit for bit with the
 * portable GEMM and within rounding with OpenBLAS (other block shapes).
 * The convolutions are checked in test_kernels (test_conv), the whole
 * models in test_threads_training.
 */
#include "kernels.h"
#include "tt_test.h"

#include <math.h>
#include <stdint.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float *
random_floats (size_t n)
{
  float *p = malloc ((n ? n : 1) * sizeof *p);
  for (size_t i = 0; i < n; i++) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float) (rng_state >> 40) / (float) (1u << 23) - 1.0f;
  }
  return p;
}

static float *
copy_floats (const float *p, size_t n)
{
  float *q = malloc ((n ? n : 1) * sizeof *q);
  memcpy (q, p, n * sizeof *q);
  return q;
}

static tt_window_geom
geom (int c, int h, int w, int k, int s, int pad)
{
  tt_window_geom g = { 0 };
  g.channels = c;
  g.in_h = h;
  g.in_w = w;
  g.kernel_h = g.kernel_w = k;
  g.stride_h = g.stride_w = s;
  g.pad_top = g.pad_bottom = g.pad_left = g.pad_right = pad;
  g.dilation_h = g.dilation_w = 1;
  tt_window_geom_init (&g);
  return g;
}

static void
test_pooling (void)
{
  const struct
  {
    const char *name;
    tt_window_geom g;
  } cases[] = {
    /* each over pooling.c's POOLING_SPLIT_MIN input values at batch 5 */
    {"2x2 stride 2", geom (16, 32, 32, 2, 2, 0)},
    {"3x3 stride 2 padded", geom (16, 31, 29, 3, 2, 1)},
    {"global", geom (64, 15, 15, 15, 1, 0)},
    /* 400 taps: 2-byte indices */
    {"global 20x20", geom (64, 20, 20, 20, 1, 0)},
  };
  const int batch = 5;
  for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
    const tt_window_geom *g = &cases[t].g;
    const size_t nx = (size_t) batch * g->channels * g->in_h * g->in_w;
    const size_t ny = (size_t) batch * g->channels * g->out_h * g->out_w;
    float *x = random_floats (nx), *dy = random_floats (ny);
    float *y1 = random_floats (ny), *dx1 = random_floats (nx);
    const size_t na = ny * tt_maxpool_index_bytes (g);
    uint8_t *a1 = malloc (na), *a2 = malloc (na);
    float *ya1 = random_floats (ny), *dxa1 = random_floats (nx);
    tt_maxpool_forward (NULL, g, batch, x, y1, a1);
    tt_maxpool_backward (NULL, g, batch, dy, a1, dx1);
    tt_avgpool_forward (NULL, g, batch, x, ya1, true);
    tt_avgpool_backward (NULL, g, batch, dy, dxa1, true);
    for (unsigned n = 2; n <= 4; n++) {
      tt_threads *pool;
      CHECK (tt_threads_new (n, &pool) == 0, "%u threads", n);
      float *y2 = random_floats (ny), *dx2 = random_floats (nx);
      float *ya2 = random_floats (ny), *dxa2 = random_floats (nx);
      tt_maxpool_forward (pool, g, batch, x, y2, a2);
      tt_maxpool_backward (pool, g, batch, dy, a2, dx2);
      tt_avgpool_forward (pool, g, batch, x, ya2, true);
      tt_avgpool_backward (pool, g, batch, dy, dxa2, true);
      CHECK (!memcmp (y1, y2, ny * sizeof *y1) && !memcmp (a1, a2, na) &&
          !memcmp (dx1, dx2, nx * sizeof *dx1),
          "max pooling %s on %u threads differs", cases[t].name, n);
      CHECK (!memcmp (ya1, ya2, ny * sizeof *y1) && !memcmp (dxa1, dxa2,
              nx * sizeof *dx1), "average pooling %s on %u threads differs",
          cases[t].name, n);
      free (y2);
      free (dx2);
      free (ya2);
      free (dxa2);
      tt_threads_free (pool);
    }
    free (x);
    free (dy);
    free (y1);
    free (dx1);
    free (a1);
    free (a2);
    free (ya1);
    free (dxa1);
  }
}

static void
test_batchnorm (void)
{
  /* short runs (after a dense layer), long runs (conv maps), both big
   * enough to be split */
  const int shapes[][3] = { {64, 300, 1}, {8, 12, 196}, {16, 10, 70} };
  for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++) {
    const int outer = shapes[t][0], nf = shapes[t][1], inner = shapes[t][2];
    const size_t n = (size_t) outer * nf * inner;
    float *x = random_floats (n), *dy = random_floats (n);
    float *gamma = random_floats (nf), *beta = random_floats (nf);
    float *mm0 = random_floats (nf), *mv0 = random_floats (nf);
    for (int f = 0; f < nf; f++)
      mv0[f] = fabsf (mv0[f]) + 0.5f;
    float *r[2][9];
    for (int k = 0; k < 2; k++) {
      tt_threads *pool = NULL;
      const unsigned threads = k ? 2 + (unsigned) t % 3 : 1;
      CHECK (tt_threads_new (threads, &pool) == 0, "%u threads", threads);
      float *y = random_floats (n), *ye = random_floats (n);
      float *dx = random_floats (n), *dg = random_floats (nf);
      float *db = random_floats (nf), *mean = random_floats (nf);
      float *is = random_floats (nf);
      float *mm = copy_floats (mm0, nf), *mv = copy_floats (mv0, nf);
      tt_batchnorm_forward_train (pool, outer, nf, inner, x, y, gamma, beta,
          mm, mv, 0.9f, 1e-3f, mean, is);
      tt_batchnorm_forward_eval (pool, outer, nf, inner, x, ye, gamma, beta,
          mm0, mv0, 1e-3f);
      tt_batchnorm_backward (pool, outer, nf, inner, x, dy, gamma, mean, is,
          dx, dg, db);
      float *got[9] = { y, ye, dx, dg, db, mean, is, mm, mv };
      memcpy (r[k], got, sizeof got);
      tt_threads_free (pool);
    }
    const size_t sizes[9] = { n, n, n, nf, nf, nf, nf, nf, nf };
    static const char *const names[9] = { "y", "eval y", "dx", "dgamma",
      "dbeta", "mean", "invstd", "moving mean", "moving variance"
    };
    for (int i = 0; i < 9; i++) {
      CHECK (!memcmp (r[0][i], r[1][i], sizes[i] * sizeof (float)),
          "batch norm %dx%dx%d on threads: %s differs", outer, nf, inner,
          names[i]);
      free (r[0][i]);
      free (r[1][i]);
    }
    free (x);
    free (dy);
    free (gamma);
    free (beta);
    free (mm0);
    free (mv0);
  }
}

static void
test_gemm_split (void)
{
  /* m, n, k: rows split, columns split (few rows), a small product */
  const int shapes[][3] = { {128, 128, 784}, {4, 1200, 64}, {32, 10, 128},
  {4, 4, 4}
  };
  for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        const int m = shapes[t][0], n = shapes[t][1], k = shapes[t][2];
        float *a = random_floats ((size_t) m * k);
        float *b = random_floats ((size_t) k * n);
        float *c1 = random_floats ((size_t) m * n);
        float *c2 = copy_floats (c1, (size_t) m * n);
        const int lda = ta ? m : k, ldb = tb ? k : n;
        tt_gemm (ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.5f, c1, n);
        for (unsigned threads = 2; threads <= 4; threads++) {
          tt_threads *pool;
          CHECK (tt_threads_new (threads, &pool) == 0, "%u", threads);
          float *c = copy_floats (c2, (size_t) m * n);
          tt_gemm_split (pool, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.5f,
              c, n);
          double worst = 0;
          /* a comparison, not fmax: aarch64 GCC 12 at -O3 crashes
           * vectorizing an fmax reduction over float to double */
          for (size_t i = 0; i < (size_t) m * n; i++) {
            const double d = fabs ((double) c[i] - c1[i]) /
                (1.0 + fabs ((double) c1[i]));
            if (d > worst)
              worst = d;
          }
#ifdef TT_HAVE_CBLAS
          const double tolerance = 1e-7 * k;    /* rounding over k terms */
#else
          const double tolerance = 0;
#endif
          CHECK (worst <= tolerance, "gemm %dx%dx%d%s%s on %u threads: "
              "relative difference %g", m, n, k, ta ? " A^T" : "",
              tb ? " B^T" : "", threads, worst);
          free (c);
          tt_threads_free (pool);
        }
        free (a);
        free (b);
        free (c1);
        free (c2);
      }
}

int
main (void)
{
  TT_TEST_RUN (test_pooling);
  TT_TEST_RUN (test_batchnorm);
  TT_TEST_RUN (test_gemm_split);
  return tt_test_summary ();
}
