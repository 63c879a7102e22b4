/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_gemm (fp32) against tt_gemm_bf16 (bf16 inputs, fp32 sums), one
 * thread, at the shapes of the zoo's dense layers and convolutions:
 * GFLOP/s (2 M N K per product), the median of 5 timings, each timing as
 * many repetitions as fill about 0.1 s. The bf16 product runs twice:
 * through the CPU's AVX-512 BF16 (when present) and forced portable
 * (tt_bf16_force_portable: widened to fp32 into tt_gemm). And the
 * layers' variant, tt_gemm_f32_as_bf16: fp32 inputs rounded to bf16 a
 * block at a time while the product runs (the AVX-512 BF16 path when
 * present).
 *
 *   gemm-bf16 [M N K]...   (default: the shapes below)
 *
 * prints one line per shape and transpose:
 *   shape=256x256x256 op=NN fp32=... bf16=... bf16_portable=...
 *   f32_as_bf16=... (GFLOP/s)
 */
#include "kernels.h"
#include "tt_test_hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double
now (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct
{
  int m, n, k;
  bool ta, tb;
  const float *af, *bf;
  const uint16_t *ah, *bh;
  float *c;
} shape;

/* which: 0 fp32, 1 bf16, 2 fp32 rounded to bf16 */
static void
run_once (const shape * s, int which)
{
  const int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
  if (which == 0)
    tt_gemm (s->ta, s->tb, s->m, s->n, s->k, 1.0f, s->af, lda, s->bf, ldb,
        0.0f, s->c, s->n);
  else if (which == 2)
    tt_gemm_f32_as_bf16 (s->ta, s->tb, s->m, s->n, s->k, 1.0f, s->af, lda,
        s->bf, ldb, 0.0f, s->c, s->n);
  else
    tt_gemm_bf16 (s->ta, s->tb, s->m, s->n, s->k, 1.0f, s->ah, lda, s->bh,
        ldb, 0.0f, s->c, s->n);
}

static int
cmp_double (const void *x, const void *y)
{
  const double a = *(const double *) x, b = *(const double *) y;
  return a < b ? -1 : a > b;
}

/* GFLOP/s, median of 5 */
static double
measure (const shape * s, int which)
{
  const double flop = 2.0 * s->m * s->n * s->k;
  run_once (s, which);
  double t0 = now ();
  run_once (s, which);
  const double one = now () - t0;
  const int reps = one > 0.1 ? 1 : (int) (0.1 / (one > 1e-7 ? one : 1e-7));
  double rate[5];
  for (int r = 0; r < 5; r++) {
    t0 = now ();
    for (int i = 0; i < reps; i++)
      run_once (s, which);
    rate[r] = flop * reps / (now () - t0) * 1e-9;
  }
  qsort (rate, 5, sizeof rate[0], cmp_double);
  return rate[2];
}

int
main (int argc, char **argv)
{
  static const int defaults[][3] = {
    {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024},
    /* a 3x3 convolution of 64 channels over 56 x 56 (im2col: M the
     * pixels, N the filters, K 64 x 9), and the zoo's dense layers at a
     * batch of 32 */
    {3136, 64, 576}, {32, 128, 1600}, {32, 256, 784}
  };
  int n_shapes = (argc - 1) / 3;
  if (argc > 1 && (argc - 1) % 3) {
    fprintf (stderr, "usage: gemm-bf16 [M N K]...\n");
    return 2;
  }
  if (n_shapes == 0)
    n_shapes = sizeof defaults / sizeof defaults[0];
  printf ("avx512_bf16=%s\n", tt_bf16_hw_dot ()? "yes" : "no");
  for (int i = 0; i < n_shapes; i++) {
    shape s = { 0 };
    if (argc > 1) {
      s.m = atoi (argv[1 + 3 * i]);
      s.n = atoi (argv[2 + 3 * i]);
      s.k = atoi (argv[3 + 3 * i]);
      if (s.m <= 0 || s.n <= 0 || s.k <= 0) {
        fprintf (stderr, "gemm-bf16: sizes must be positive integers\n");
        return 2;
      }
    } else {
      s.m = defaults[i][0];
      s.n = defaults[i][1];
      s.k = defaults[i][2];
    }
    const size_t na = (size_t) s.m * s.k, nb = (size_t) s.k * s.n;
    float *af = malloc (sizeof *af * na), *bf = malloc (sizeof *bf * nb);
    uint16_t *ah = malloc (sizeof *ah * na), *bh = malloc (sizeof *bh * nb);
    float *c = malloc (sizeof *c * (size_t) s.m * s.n);
    if (!af || !bf || !ah || !bh || !c) {
      fprintf (stderr, "gemm-bf16: out of memory\n");
      return 1;
    }
    for (size_t j = 0; j < na; j++)
      af[j] = (float) ((j * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t j = 0; j < nb; j++)
      bf[j] = (float) ((j * 104729) % 1000) / 1000.0f - 0.5f;
    tt_f32_to_bf16 (af, ah, na);
    tt_f32_to_bf16 (bf, bh, nb);
    s.af = af, s.bf = bf, s.ah = ah, s.bh = bh, s.c = c;
    /* forward (NN), a weight gradient (TN), an input gradient (NT) */
    static const bool ops[][2] = { {false, false}, {true, false},
    {false, true}
    };
    for (int o = 0; o < 3; o++) {
      s.ta = ops[o][0];
      s.tb = ops[o][1];
      const double f32 = measure (&s, 0);
      const double b16 = tt_bf16_hw_dot ()? measure (&s, 1) : 0;
      tt_bf16_force_portable (true);
      const double port = measure (&s, 1);
      tt_bf16_force_portable (false);
      const double f32b = measure (&s, 2);
      printf ("shape=%dx%dx%d op=%c%c fp32=%.1f bf16=%.1f "
          "bf16_portable=%.1f f32_as_bf16=%.1f\n", s.m, s.n, s.k,
          s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', f32, b16, port, f32b);
      fflush (stdout);
    }
    free (af), free (bf), free (ah), free (bh), free (c);
  }
  return 0;
}
