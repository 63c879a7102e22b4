/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_gemm_as_mixed (kernels/gemm_inputs.c, gemm_bf16.c, gemm_f16.c,
 * gemm_split.c): a product whose operands are each fp32 (rounded while
 * packed) or already half width (bf16 or fp16, as a layer's half-width
 * scratch holds them) gives the bits of the half-width GEMM on both
 * operands rounded whole, for both formats, each combination of operand
 * kinds, every transpose, sizes past the blocks, padded leading
 * dimensions, on each path (the portable one forced, and the CPU's own
 * where it has one), on one thread and split over two. Also
 * tt_narrow_as / tt_widen_as against the format's own conversions.
 */
#include "kernels.h"
#include "tt_test.h"
#include "tt_test_hooks.h"
#include "tt_threads.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t seed = 99;

static float
rand_value (void)
{
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  const uint32_t r = (uint32_t) (seed >> 33);
  return (float) (r & 0xffffff) / (float) (1 << 23) - 1.0f;
}

typedef struct
{
  bool ta, tb;
  int m, n, k, pad;
  float beta;
} mcase;

static void
narrow (tt_gemm_inputs f, const float *x, uint16_t * y, size_t n)
{
  if (f == TT_GEMM_FP16)
    tt_f32_to_f16 (x, y, n);
  else
    tt_f32_to_bf16 (x, y, n);
}

/* the reference: both operands rounded whole, the format's own GEMM (on
 * one thread, or bf16's split) */
static void
reference (tt_gemm_inputs f, tt_threads * pool, const mcase * g,
    const uint16_t * ah, int lda, const uint16_t * bh, int ldb, float *c,
    int ldc)
{
  if (f == TT_GEMM_BF16 && pool)
    tt_gemm_bf16_split (pool, g->ta, g->tb, g->m, g->n, g->k, 1.0f, ah, lda,
        bh, ldb, g->beta, c, ldc);
  else if (f == TT_GEMM_BF16)
    tt_gemm_bf16 (g->ta, g->tb, g->m, g->n, g->k, 1.0f, ah, lda, bh, ldb,
        g->beta, c, ldc);
  else
    tt_gemm_f16 (g->ta, g->tb, g->m, g->n, g->k, 1.0f, ah, lda, bh, ldb,
        g->beta, c, ldc);
}

/* failures of the four operand kinds for one case, on the current path */
static int
run_case (tt_gemm_inputs f, const mcase * g, tt_threads * pool)
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
  for (size_t i = 0; i < nc; i++)
    c0[i] = rand_value ();
  narrow (f, a, ah, na);
  narrow (f, b, bh, nb);
  memcpy (want, c0, sizeof *want * nc);
  if (f == TT_GEMM_FP16 && pool)
    /* the fp32-operand split, itself checked against tt_gemm_f16 on the
     * rounded operands by test_gemm_f32_f16 */
    tt_gemm_f32_as_f16_split (pool, g->ta, g->tb, g->m, g->n, g->k, 1.0f, a,
        lda, b, ldb, g->beta, want, ldc);
  else
    reference (f, pool, g, ah, lda, bh, ldb, want, ldc);
  int failed = 0;
  for (int kinds = 0; kinds < 4; kinds++) {
    const tt_gemm_operand oa = kinds & 1 ? tt_gemm_half_operand (ah, lda) :
        tt_gemm_fp32_operand (a, lda);
    const tt_gemm_operand ob = kinds & 2 ? tt_gemm_half_operand (bh, ldb) :
        tt_gemm_fp32_operand (b, ldb);
    memcpy (got, c0, sizeof *got * nc);
    tt_gemm_as_mixed (f, pool, g->ta, g->tb, g->m, g->n, g->k, 1.0f, oa, ob,
        g->beta, got, ldc);
    if (memcmp (want, got, sizeof *got * nc) != 0) {
      printf ("  %s A %s B %s %c%c %dx%dx%d pad %d%s differs\n",
          f == TT_GEMM_FP16 ? "fp16" : "bf16", kinds & 1 ? "half" : "fp32",
          kinds & 2 ? "half" : "fp32", g->ta ? 'T' : 'N', g->tb ? 'T' : 'N',
          g->m, g->n, g->k, g->pad, pool ? " (2 threads)" : "");
      failed++;
    }
  }
  free (a), free (b), free (ah), free (bh), free (c0), free (want), free (got);
  return failed;
}

static void
run_all (tt_threads * pool, const int (*shapes)[3], int n_shapes,
    const char *what)
{
  static const tt_gemm_inputs formats[] = { TT_GEMM_BF16, TT_GEMM_FP16 };
  int failed = 0, run = 0;
  for (int portable = 0; portable < 2; portable++) {
    tt_bf16_force_portable (portable);
    for (int fi = 0; fi < 2; fi++)
      for (int s = 0; s < n_shapes; s++)
        for (int t = 0; t < 4; t++) {
          const mcase g = { t & 1, t >> 1, shapes[s][0], shapes[s][1],
            shapes[s][2], (s + t) % 3, (s + t) % 2 ? 0.5f : 0.0f
          };
          failed += run_case (formats[fi], &g, pool);
          run += 4;
        }
  }
  tt_bf16_force_portable (false);
  CHECK (failed == 0, "%s: %d of %d mixed products differ from rounding "
      "both operands whole", what, failed, run);
}

static void
test_one_thread (void)
{
  /* small, odd K, and past every block (K over 256, N and M over 128) */
  static const int shapes[][3] = { {1, 1, 1}, {15, 17, 33}, {33, 100, 7},
  {129, 257, 513}, {270, 33, 301}
  };
  run_all (NULL, shapes, 5, "one thread");
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
  run_all (pool, shapes, 2, "two threads");
  tt_threads_free (pool);
}

static void
test_narrow_widen (void)
{
  float x[37], back[37], want[37];
  uint16_t h[37], ref[37];
  for (int i = 0; i < 37; i++)
    x[i] = rand_value () * 1000.0f;
  tt_narrow_as (TT_GEMM_BF16, x, h, 37);
  tt_f32_to_bf16 (x, ref, 37);
  CHECK (!memcmp (h, ref, sizeof h), "tt_narrow_as bf16 is tt_f32_to_bf16");
  tt_widen_as (TT_GEMM_BF16, h, back, 37);
  tt_bf16_to_f32 (ref, want, 37);
  CHECK (!memcmp (back, want, sizeof back), "tt_widen_as bf16 is "
      "tt_bf16_to_f32");
  tt_narrow_as (TT_GEMM_FP16, x, h, 37);
  tt_f32_to_f16 (x, ref, 37);
  CHECK (!memcmp (h, ref, sizeof h), "tt_narrow_as fp16 is tt_f32_to_f16");
  tt_widen_as (TT_GEMM_FP16, h, back, 37);
  tt_f16_to_f32 (ref, want, 37);
  CHECK (!memcmp (back, want, sizeof back), "tt_widen_as fp16 is "
      "tt_f16_to_f32");
}

int
main (void)
{
  TT_TEST_RUN (test_one_thread);
  TT_TEST_RUN (test_split);
  TT_TEST_RUN (test_narrow_widen);
  return tt_test_summary ();
}
