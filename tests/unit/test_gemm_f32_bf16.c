/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_gemm_f32_as_bf16 and its split (kernels/gemm_bf16.c): fp32 operands
 * rounded to bf16 while the product runs give the bits of rounding them
 * whole with tt_f32_to_bf16, then tt_gemm_bf16, on each path forced in
 * turn (tt_bf16_force_portable; the AVX-512 BF16 one where the CPU has
 * it): every transpose, sizes 1, 15, 17, 33, 100 in M, N and K, sizes
 * past the blocks (K over 256 and odd, N and M over 128), padded leading
 * dimensions, alpha and beta (beta 0 over a C of NaN), and operands with
 * values that round up, ties, NaN and overflow to infinity. On two
 * threads the split gives tt_gemm_bf16_split's bits on the rounded
 * operands.
 */
#include "kernels.h"
#include "tt_test.h"
#include "tt_test_hooks.h"
#include "tt_threads.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t seed = 4242;

/* in [-1, 1), with every mantissa bit set at random (so rounding to bf16
 * matters), a few exact ties between bf16 values */
static float
rand_value (void)
{
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  const uint32_t r = (uint32_t) (seed >> 33);
  float v = (float) (r & 0xffffff) / (float) (1 << 23) - 1.0f;
  if ((r >> 24) % 16 == 0) {
    /* a tie: the low 16 bits exactly half */
    uint32_t u;
    memcpy (&u, &v, sizeof u);
    u = (u & 0xffff0000u) | 0x8000u;
    memcpy (&v, &u, sizeof v);
  }
  return v;
}

typedef struct
{
  bool ta, tb;
  int m, n, k, pad;
  float alpha, beta;
} gcase;

/* whether the two agree bit for bit on both paths (and leave C's padding
 * alone); a and b may hold special values */
static bool
run_case (const gcase * g, tt_threads * pool, bool special)
{
  const int ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
  const int br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
  const int lda = ac + g->pad, ldb = bc + g->pad, ldc = g->n + g->pad;
  const size_t na = (size_t) ar * lda, nb = (size_t) br *ldb;
  const size_t nc = (size_t) g->m * ldc;
  float *a = malloc (sizeof *a * na), *b = malloc (sizeof *b * nb);
  uint16_t *ah = malloc (sizeof *ah * na), *bh = malloc (sizeof *bh * nb);
  float *c0 = malloc (sizeof *c0 * nc), *want = malloc (sizeof *want * nc);
  float *got = malloc (sizeof *got * nc);
  for (size_t i = 0; i < na; i++)
    a[i] = rand_value ();
  for (size_t i = 0; i < nb; i++)
    b[i] = rand_value () * 4;
  if (special) {
    a[0] = NAN;
    b[nb - 1] = 3.4e38f;        /* rounds up to infinity */
    a[na / 2] = 1e-39f;         /* subnormal */
  }
  for (size_t i = 0; i < nc; i++)
    c0[i] = g->beta == 0 ? NAN : rand_value ();
  tt_f32_to_bf16 (a, ah, na);
  tt_f32_to_bf16 (b, bh, nb);
  bool ok = true;
  for (int portable = 0; portable < 2; portable++) {
    tt_bf16_force_portable (portable);
    if (!portable && !tt_bf16_hw_dot ())
      continue;
    memcpy (want, c0, sizeof *want * nc);
    memcpy (got, c0, sizeof *got * nc);
    if (pool) {
      tt_gemm_bf16_split (pool, g->ta, g->tb, g->m, g->n, g->k, g->alpha, ah,
          lda, bh, ldb, g->beta, want, ldc);
      tt_gemm_f32_as_bf16_split (pool, g->ta, g->tb, g->m, g->n, g->k,
          g->alpha, a, lda, b, ldb, g->beta, got, ldc);
    } else {
      tt_gemm_bf16 (g->ta, g->tb, g->m, g->n, g->k, g->alpha, ah, lda, bh,
          ldb, g->beta, want, ldc);
      tt_gemm_f32_as_bf16 (g->ta, g->tb, g->m, g->n, g->k, g->alpha, a, lda,
          b, ldb, g->beta, got, ldc);
    }
    if (memcmp (want, got, sizeof *got * nc) != 0) {
      size_t first = 0;
      while (!memcmp (want + first, got + first, sizeof *got))
        first++;
      printf ("  %s: %c%c %dx%dx%d pad %d alpha %g beta %g%s: element %zu "
          "%.9g, rounded first %.9g\n", portable ? "portable" : "avx512bf16",
          g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->m, g->n, g->k, g->pad,
          g->alpha, g->beta, pool ? " (2 threads)" : "", first, got[first],
          want[first]);
      ok = false;
    }
  }
  tt_bf16_force_portable (false);
  free (a), free (b), free (ah), free (bh), free (c0), free (want), free (got);
  return ok;
}

static void
test_small (void)
{
  static const int sizes[] = { 1, 15, 17, 33, 100 };
  int failed = 0, run = 0;
  for (int t = 0; t < 4; t++)
    for (int i = 0; i < 5; i++)
      for (int j = 0; j < 5; j++)
        for (int l = 0; l < 5; l++) {
          const gcase g = { t & 1, t >> 1, sizes[i], sizes[j], sizes[l],
            (i + j + l) % 3, (i + l) % 2 ? 1.0f : 0.75f,
            (j + l) % 3 == 0 ? 0.0f : (j + l) % 3 == 1 ? 1.0f : -0.5f
          };
          failed += !run_case (&g, NULL, false);
          run++;
        }
  CHECK (failed == 0, "%d of %d small products differ from rounding first",
      failed, run);
}

static void
test_blocked (void)
{
  /* past the blocks: K over 256 (and odd), N over 128, M over 128 */
  static const int big[][3] = { {50, 300, 600}, {129, 257, 513},
  {270, 33, 1001}, {300, 140, 257}
  };
  int failed = 0, run = 0;
  for (int t = 0; t < 4; t++)
    for (int s = 0; s < 4; s++) {
      const gcase g = { t & 1, t >> 1, big[s][0], big[s][1], big[s][2],
        s % 3, s == 1 ? -1.25f : 1.0f, s == 2 ? 0.5f : 0.0f
      };
      failed += !run_case (&g, NULL, s == 3);
      run++;
    }
  CHECK (failed == 0, "%d of %d blocked products differ from rounding first",
      failed, run);

  /* k == 0 and alpha == 0: C = beta C, without reading C when beta is 0 */
  float c[6] = { NAN, NAN, NAN, 1, 2, 3 };
  const float one = 1.0f;
  tt_gemm_f32_as_bf16 (false, false, 1, 3, 0, 1.0f, &one, 1, &one, 3, 0.0f,
      c, 3);
  tt_gemm_f32_as_bf16 (false, false, 1, 3, 1, 0.0f, &one, 1, &one, 3, 2.0f,
      c + 3, 3);
  CHECK (c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 2 && c[4] == 4
      && c[5] == 6, "k = 0 or alpha = 0: %g %g %g %g %g %g", c[0], c[1],
      c[2], c[3], c[4], c[5]);

  /* the rounding happens: a value just over a bf16 takes the bf16's */
  float x = 1.0f + 0x1p-10f, y = 1.0f, z = 0.0f;
  tt_gemm_f32_as_bf16 (false, false, 1, 1, 1, 1.0f, &x, 1, &y, 1, 0.0f, &z, 1);
  CHECK (z == 1.0f, "1 + 2^-10 rounds to bf16's 1: %.9g", z);
}

static void
test_split (void)
{
  tt_threads *pool = NULL;
  CHECK (tt_threads_new (2, &pool) == 0 && pool, "a pool of 2 threads");
  if (!pool)
    return;
  /* by rows (M large), by columns (M small) */
  static const int shapes[][3] = { {256, 96, 300}, {8, 640, 200} };
  int failed = 0;
  for (int s = 0; s < 2; s++)
    for (int t = 0; t < 4; t++) {
      const gcase g = { t & 1, t >> 1, shapes[s][0], shapes[s][1],
        shapes[s][2], 0, 1.0f, s ? 1.0f : 0.0f
      };
      failed += !run_case (&g, pool, false);
    }
  CHECK (failed == 0, "%d of 8 split products differ from rounding first",
      failed);
  tt_threads_free (pool);
}

int
main (void)
{
  TT_TEST_RUN (test_small);
  TT_TEST_RUN (test_blocked);
  TT_TEST_RUN (test_split);
  return tt_test_summary ();
}
