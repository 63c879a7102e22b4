/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fp16 GEMM inputs (kernels/gemm_f16.c):
 *  - tt_gemm_f32_as_f16 gives the bits of rounding its fp32 operands whole
 *    with tt_f32_to_f16, then tt_gemm_f16, on each path (forced portable,
 *    and the CPU's: F16C on x86-64, FMLAL on arm64 with FHM): every
 *    transpose, sizes 1, 15, 17, 33, 100, sizes past the blocks, padded
 *    leading dimensions, alpha and beta (beta 0 over a C of NaN);
 *  - on the widened path (x86-64, arm64 without FHM, forced portable), a
 *    product within one block is tt_gemm's on the rounded operands, bit
 *    for bit: rounding then widening is exact and the sums are tt_gemm's;
 *  - every path is within the bound of a sum of K fp32 roundings of the
 *    exact product of the rounded operands, (K + 4) 2^-23 (|alpha| sum |a
 *    b| + |beta c|): an FMA chain rounds each step to nearest (half an
 *    ulp), fp16 products are exact in fp32; FMLAL and the portable path
 *    differ only in the order of their sums, so they are within twice
 *    that of each other (checked too);
 *  - overflow: an operand beyond fp16's range is infinite in the product;
 *  - the split on two threads against one thread;
 *  - the detection: TT_EXPECT_F16_FMLAL=0 or 1 and TT_EXPECT_BF16_DOT=0
 *    or 1 (the arm64 runs under qemu, with CPU "max" and "cortex-a57")
 *    assert what tt_f16_hw_fmlal and tt_bf16_hw_dot report.
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

static uint64_t seed = 1616;

/* in [-1, 1) with every fp32 mantissa bit random (so rounding to fp16
 * matters), a few exact ties between fp16 values */
static float
rand_value (void)
{
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  const uint32_t r = (uint32_t) (seed >> 33);
  float v = (float) (r & 0xffffff) / (float) (1 << 23) - 1.0f;
  if ((r >> 24) % 16 == 0) {
    uint32_t u;
    memcpy (&u, &v, sizeof u);
    u = (u & 0xffffe000u) | 0x1000u;    /* the low 13 bits exactly half */
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

typedef struct
{
  int lda, ldb, ldc;
  size_t na, nb, nc;
  float *a, *b, *aw, *bw, *c0;
  uint16_t *ah, *bh;
} operands;

static void
operands_make (const gcase * g, operands * o)
{
  const int ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
  const int br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
  o->lda = ac + g->pad, o->ldb = bc + g->pad, o->ldc = g->n + g->pad;
  o->na = (size_t) ar *o->lda, o->nb = (size_t) br * o->ldb;
  o->nc = (size_t) g->m * o->ldc;
  o->a = malloc (sizeof (float) * o->na);
  o->b = malloc (sizeof (float) * o->nb);
  o->aw = malloc (sizeof (float) * o->na);
  o->bw = malloc (sizeof (float) * o->nb);
  o->ah = malloc (sizeof (uint16_t) * o->na);
  o->bh = malloc (sizeof (uint16_t) * o->nb);
  o->c0 = malloc (sizeof (float) * o->nc);
  for (size_t i = 0; i < o->na; i++)
    o->a[i] = rand_value ();
  for (size_t i = 0; i < o->nb; i++)
    o->b[i] = rand_value () * 4;
  for (size_t i = 0; i < o->nc; i++)
    o->c0[i] = g->beta == 0 ? NAN : rand_value ();
  tt_f32_to_f16 (o->a, o->ah, o->na);
  tt_f32_to_f16 (o->b, o->bh, o->nb);
  tt_f16_to_f32 (o->ah, o->aw, o->na);
  tt_f16_to_f32 (o->bh, o->bw, o->nb);
}

static void
operands_free (operands * o)
{
  free (o->a), free (o->b), free (o->aw), free (o->bw), free (o->ah);
  free (o->bh), free (o->c0);
}

/* worst error of c over the bound (< 1 passes), against the exact product
 * of the rounded operands; with other, the worst difference from it over
 * twice the bound */
static double
error_of (const gcase * g, const operands * o, const float *c,
    const float *other)
{
  double worst = 0;
  for (int i = 0; i < g->m; i++)
    for (int j = 0; j < g->n; j++) {
      double s = 0, mag = 0;
      for (int p = 0; p < g->k; p++) {
        const double x = g->ta ? o->aw[(size_t) p * o->lda + i] :
            o->aw[(size_t) i * o->lda + p];
        const double y = g->tb ? o->bw[(size_t) j * o->ldb + p] :
            o->bw[(size_t) p * o->ldb + j];
        s += x * y;
        mag += fabs (x * y);
      }
      const double c0 = o->c0[(size_t) i * o->ldc + j];
      double want = g->alpha * s, bound = fabs (g->alpha) * mag;
      if (g->beta != 0) {
        want += g->beta * c0;
        bound += fabs (g->beta * c0);
      }
      bound = bound * (g->k + 4) * ldexp (1.0, -23) + 1e-30;
      const double got = c[(size_t) i * o->ldc + j];
      double e = isfinite (got) ? fabs (got - want) / bound : INFINITY;
      if (other) {
        const double ref = other[(size_t) i * o->ldc + j];
        e = isfinite (got) ? fabs (got - ref) / (2 * bound) : INFINITY;
      }
      if (!(e <= worst))
        worst = e;
    }
  return worst;
}

static const char *
path_name (int portable)
{
  return portable ? "portable" : tt_f16_hw_fmlal ()? "fmlal" : "conversions";
}

/* one case on each path; returns false on a failure */
static bool
run_case (const gcase * g)
{
  operands o;
  operands_make (g, &o);
  float *want = malloc (sizeof (float) * o.nc);
  float *got[2] = { malloc (sizeof (float) * o.nc),
    malloc (sizeof (float) * o.nc)
  };
  const bool one_block = g->k <= 128 && g->m <= 64 && g->n <= 128;
  bool ok = true;
  for (int portable = 1; portable >= 0; portable--) {
    tt_bf16_force_portable (portable);
    const char *path = path_name (portable);
    float *c = got[portable];
    memcpy (want, o.c0, sizeof (float) * o.nc);
    memcpy (c, o.c0, sizeof (float) * o.nc);
    tt_gemm_f16 (g->ta, g->tb, g->m, g->n, g->k, g->alpha, o.ah, o.lda, o.bh,
        o.ldb, g->beta, want, o.ldc);
    tt_gemm_f32_as_f16 (g->ta, g->tb, g->m, g->n, g->k, g->alpha, o.a, o.lda,
        o.b, o.ldb, g->beta, c, o.ldc);
    char what[160];
    snprintf (what, sizeof what, "%s: %c%c %dx%dx%d pad %d alpha %g beta %g",
        path, g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->m, g->n, g->k, g->pad,
        g->alpha, g->beta);
    if (memcmp (want, c, sizeof (float) * o.nc) != 0) {
      printf ("  %s: differs from tt_gemm_f16 on the rounded operands\n", what);
      ok = false;
    }
    if (one_block && (portable || !tt_f16_hw_fmlal ())) {
      memcpy (want, o.c0, sizeof (float) * o.nc);
      tt_gemm (g->ta, g->tb, g->m, g->n, g->k, g->alpha, o.aw, o.lda, o.bw,
          o.ldb, g->beta, want, o.ldc);
      if (memcmp (want, c, sizeof (float) * o.nc) != 0) {
        printf ("  %s: differs from tt_gemm on the rounded operands\n", what);
        ok = false;
      }
    }
    const double e = error_of (g, &o, c, NULL);
    if (!(e < 1)) {
      printf ("  %s: %.3g of the bound\n", what, e);
      ok = false;
    }
    if (!portable && tt_f16_hw_fmlal ()) {
      const double d = error_of (g, &o, c, got[1]);
      if (!(d < 1)) {
        printf ("  %s: %.3g of twice the bound from the portable path\n",
            what, d);
        ok = false;
      }
    }
    /* C's padding is left alone */
    for (int i = 0; i < g->m; i++)
      for (int j = g->n; j < o.ldc; j++)
        if (memcmp (c + (size_t) i * o.ldc + j, o.c0 + (size_t) i * o.ldc + j,
                sizeof (float))) {
          printf ("  %s: padding overwritten\n", what);
          ok = false;
          i = g->m;
          break;
        }
  }
  tt_bf16_force_portable (false);
  free (want), free (got[0]), free (got[1]);
  operands_free (&o);
  return ok;
}

static void
test_detection (void)
{
  printf ("fp16 GEMM: FMLAL %s, fp16 arithmetic %s, fp16 conversions %s; "
      "bf16 dot %s\n", tt_f16_hw_fmlal ()? "present" : "absent",
      tt_f16_hw_arith ()? "present" : "absent",
      tt_f16_hw_convert ()? "the CPU's" : "portable",
      tt_bf16_hw_dot ()? "present" : "absent");
  const char *fmlal = getenv ("TT_EXPECT_F16_FMLAL");
  const char *dot = getenv ("TT_EXPECT_BF16_DOT");
  if (fmlal)
    CHECK (tt_f16_hw_fmlal () == (atoi (fmlal) != 0),
        "FMLAL detected %d, expected %s", tt_f16_hw_fmlal (), fmlal);
  if (dot)
    CHECK (tt_bf16_hw_dot () == (atoi (dot) != 0),
        "bf16 dot detected %d, expected %s", tt_bf16_hw_dot (), dot);
  tt_bf16_force_portable (true);
  CHECK (!tt_f16_hw_fmlal () && !tt_f16_hw_arith () && !tt_bf16_hw_dot (),
      "forced portable turns the instructions off");
  tt_bf16_force_portable (false);
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
          failed += !run_case (&g);
          run++;
        }
  CHECK (failed == 0, "%d of %d small products wrong", failed, run);
}

static void
test_blocked (void)
{
  /* past the blocks: K over 256 (and odd), N over 128, M over 128 */
  static const int big[][3] = { {50, 300, 600}, {129, 257, 513},
  {270, 33, 301}
  };
  int failed = 0, run = 0;
  for (int t = 0; t < 4; t++)
    for (int s = 0; s < 3; s++) {
      const gcase g = { t & 1, t >> 1, big[s][0], big[s][1], big[s][2],
        s % 3, s == 1 ? -1.25f : 1.0f, s == 2 ? 0.5f : 0.0f
      };
      failed += !run_case (&g);
      run++;
    }
  CHECK (failed == 0, "%d of %d blocked products wrong", failed, run);

  /* k == 0 and alpha == 0: C = beta C, without reading C when beta is 0 */
  float c[6] = { NAN, NAN, NAN, 1, 2, 3 };
  const float one = 1.0f;
  tt_gemm_f32_as_f16 (false, false, 1, 3, 0, 1.0f, &one, 1, &one, 3, 0.0f,
      c, 3);
  tt_gemm_f32_as_f16 (false, false, 1, 3, 1, 0.0f, &one, 1, &one, 3, 2.0f,
      c + 3, 3);
  CHECK (c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 2 && c[4] == 4
      && c[5] == 6, "k = 0 or alpha = 0: %g %g %g %g %g %g", c[0], c[1],
      c[2], c[3], c[4], c[5]);
}

static void
test_rounding_and_overflow (void)
{
  for (int portable = 1; portable >= 0; portable--) {
    tt_bf16_force_portable (portable);
    /* 1 + 2^-12 is below half of fp16's ulp at 1 (2^-11): it rounds to 1;
     * 2049 (fp16's ulp at 2048 is 2) ties to even, 2048 */
    float x[2] = { 1.0f + 0x1p-12f, 2049.0f }, y[2] = { 1.0f, 1.0f };
    float z = 0.0f;
    tt_gemm_f32_as_f16 (false, false, 1, 1, 2, 1.0f, x, 2, y, 1, 0.0f, &z, 1);
    CHECK (z == 2049.0f, "%s: fp16(1 + 2^-12) + fp16(2049) = 1 + 2048: %.9g",
        path_name (portable), z);
    /* 70000 is past fp16's largest, 65504: infinite, whatever it meets
     * (dynamic loss scaling skips such a step and halves the scale) */
    float a[4] = { 70000.0f, 1.0f, 1.0f, 1.0f }, b[4] = { 1.0f, 0.0f, 1.0f,
      1.0f
    };
    float c[4];
    tt_gemm_f32_as_f16 (false, false, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
    CHECK (isinf (c[0]) && c[0] > 0 && c[2] == 2.0f && c[3] == 1.0f,
        "%s: 70000 overflows to +inf: %g %g %g %g", path_name (portable),
        c[0], c[1], c[2], c[3]);
  }
  tt_bf16_force_portable (false);
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
  for (int s = 0; s < 2; s++)
    for (int t = 0; t < 4; t++) {
      const gcase g = { t & 1, t >> 1, shapes[s][0], shapes[s][1],
        shapes[s][2], 0, 1.0f, s ? 1.0f : 0.0f
      };
      operands o;
      operands_make (&g, &o);
      float *one = malloc (sizeof (float) * o.nc);
      float *two = malloc (sizeof (float) * o.nc);
      memcpy (one, o.c0, sizeof (float) * o.nc);
      memcpy (two, o.c0, sizeof (float) * o.nc);
      tt_gemm_f32_as_f16 (g.ta, g.tb, g.m, g.n, g.k, g.alpha, o.a, o.lda,
          o.b, o.ldb, g.beta, one, o.ldc);
      tt_gemm_f32_as_f16_split (pool, g.ta, g.tb, g.m, g.n, g.k, g.alpha,
          o.a, o.lda, o.b, o.ldb, g.beta, two, o.ldc);
      const double e = error_of (&g, &o, two, NULL);
      CHECK (e < 1, "%c%c %dx%dx%d: two threads %.3g of the bound",
          g.ta ? 'T' : 'N', g.tb ? 'T' : 'N', g.m, g.n, g.k, e);
      /* the FMLAL kernel's sums do not depend on the tile's place */
      if (tt_f16_hw_fmlal ())
        CHECK (!memcmp (one, two, sizeof (float) * o.nc),
            "%c%c %dx%dx%d: two threads give one thread's bits",
            g.ta ? 'T' : 'N', g.tb ? 'T' : 'N', g.m, g.n, g.k);
      free (one), free (two);
      operands_free (&o);
    }
  tt_threads_free (pool);
}

int
main (void)
{
  TT_TEST_RUN (test_detection);
  TT_TEST_RUN (test_small);
  TT_TEST_RUN (test_blocked);
  TT_TEST_RUN (test_rounding_and_overflow);
  TT_TEST_RUN (test_split);
  return tt_test_summary ();
}
