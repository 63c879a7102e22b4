/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Convolutions in bf16 (kernels/conv2d_algo.c): one training pass of a
 * conv2d layer (forward, weight gradient, input derivative) per
 * algorithm, on one thread, for the layer shapes of the models whose
 * convolutions have a direct or Winograd form (fmnist_cnn, zoo_resnet8):
 * and of zoo_mobilenet_v2's im2col layers (its stem, strided, and 1x1s):
 * fp32's choice (direct or Winograd), im2col with fp32 GEMMs, im2col
 * with bf16 GEMM inputs as a layer planned in bf16 runs it (its columns
 * and regrouped output derivative kept at half width, kernels/conv2d.c)
 * and the same with them kept in fp32 (the GEMMs rounding them as they
 * pack). Each the best of RUNS passes (ms).
 *
 *   conv-algo-speed [-r RUNS] BATCH...
 *
 * prints one line per shape and batch:
 *   shape=32x13x13>64k3s1 batch=32 algo=winograd fp32=... im2col=...
 *       im2col_bf16=... im2col_bf16_fp32_scratch=... (ms)
 */
#include "kernels.h"
#include "tt_test_hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  const char *model;
  int c, h, w, f, k, pad, stride;
} shape;

/* after the 2x2 pooling: fmnist_cnn's second layer sees 13x13 */
static const shape shapes[] = {
  {"fmnist_cnn conv1", 1, 28, 28, 32, 3, 0, 1},
  {"fmnist_cnn conv2", 32, 13, 13, 64, 3, 0, 1},
  {"zoo_resnet8 s1", 16, 32, 32, 16, 3, 1, 1},
  {"zoo_resnet8 s2_b", 32, 16, 16, 32, 3, 1, 1},
  {"zoo_resnet8 s3_b", 64, 8, 8, 64, 3, 1, 1},
  {"zoo_mobilenet_v2 stem", 3, 96, 96, 16, 3, 1, 2},
  {"zoo_mobilenet_v2 b0_project", 16, 48, 48, 8, 1, 0, 1},
  {"zoo_mobilenet_v2 b1_expand", 8, 48, 48, 48, 1, 0, 1},
};

static float
rnd (uint64_t * r)
{
  *r = *r * 6364136223846793005ull + 1442695040888963407ull;
  return (float) ((*r >> 40) & 0xffffff) / (float) (1 << 23) - 1.0f;
}

/* the best of runs passes, ms; algo -1: fp32's choice; half: the
 * operands kept at half width (bf16) */
static double
time_pass (const shape * s, int batch, int algo, bool bf16, bool half,
    int runs, tt_conv2d_algo * chosen)
{
  tt_window_geom g = {.channels = s->c,.in_h = s->h,.in_w = s->w,
    .kernel_h = s->k,.kernel_w = s->k,.stride_h = s->stride,
    .stride_w = s->stride,.pad_top = s->pad,.pad_bottom = s->pad,
    .pad_left = s->pad,.pad_right = s->pad,.dilation_h = 1,.dilation_w = 1,
    .gemm_inputs = bf16 ? TT_GEMM_BF16 : TT_GEMM_FP32,
    .stored_as = half ? TT_GEMM_BF16 : TT_GEMM_FP32
  };
  if (tt_window_geom_init (&g))
    return -1;
  tt_conv2d_force_algo (algo);
  *chosen = tt_conv2d_batch_algo (&g, batch);
  const size_t nx = (size_t) batch * s->c * s->h * s->w;
  const size_t ny = (size_t) batch * s->f * g.out_h * g.out_w;
  const size_t nw = (size_t) s->f * s->c * s->k * s->k;
  const size_t ncol = tt_conv2d_batch_col_floats (&g, batch);
  const size_t nback = tt_conv2d_batch_col_back_floats (&g, batch, true);
  const size_t ngrad = tt_conv2d_batch_col_grad_floats (&g, batch, true);
  const size_t nout = tt_conv2d_batch_out_floats (&g, s->f, batch);
  const size_t ngr = tt_conv2d_batch_grouped_floats (&g, s->f, batch, true,
      true);
  float *x = malloc (nx * sizeof *x), *dx = malloc (nx * sizeof *dx);
  float *y = malloc (ny * sizeof *y), *dy = malloc (ny * sizeof *dy);
  float *w = malloc (nw * sizeof *w), *dw = malloc (nw * sizeof *dw);
  float *b = calloc ((size_t) s->f, sizeof *b);
  float *db = malloc ((size_t) s->f * sizeof *db);
  float *col = malloc ((ncol + 1) * sizeof *col);
  float *cback = malloc ((nback + 1) * sizeof *cback);
  float *cgrad = malloc ((ngrad + 1) * sizeof *cgrad);
  float *out = malloc ((nout + 1) * sizeof *out);
  float *gr = malloc ((ngr + 1) * sizeof *gr);
  uint64_t r = 1;
  for (size_t i = 0; i < nx; i++)
    x[i] = rnd (&r);
  for (size_t i = 0; i < ny; i++)
    dy[i] = rnd (&r);
  for (size_t i = 0; i < nw; i++)
    w[i] = rnd (&r) * 0.1f;
  double best = 1e30;
  for (int run = 0; run <= runs; run++) {
    const double t0 = now ();
    tt_conv2d_batch_forward (NULL, &g, s->f, batch, batch, x, w, b, y, col,
        out);
    if (tt_conv2d_batch_fuses_backward (&g, batch)) {
      tt_conv2d_batch_backward (NULL, &g, s->f, batch, batch, x, w, dy, dw,
          db, dx, gr);
    } else {
      tt_conv2d_batch_backward_weight (NULL, &g, s->f, batch, batch, x, dy, dw,
          db, cback, gr);
      tt_conv2d_batch_backward_input (NULL, &g, s->f, batch, batch, w, dy,
          dx, cgrad, gr, true);
    }
    const double t = (now () - t0) * 1e3;
    if (run > 0 && t < best)    /* the first warms up */
      best = t;
  }
  tt_conv2d_force_algo (-1);
  free (x), free (dx), free (y), free (dy), free (w), free (dw), free (b);
  free (db), free (col), free (cback), free (cgrad), free (out), free (gr);
  return best;
}

int
main (int argc, char **argv)
{
  int runs = 5, i = 1;
  if (argc > 2 && strcmp (argv[1], "-r") == 0) {
    runs = atoi (argv[2]);
    i = 3;
  }
  if (i >= argc || runs < 1) {
    fprintf (stderr, "usage: conv-algo-speed [-r RUNS] BATCH...\n");
    return 2;
  }
  static const char *const names[] = { "im2col", "direct", "winograd" };
  for (; i < argc; i++) {
    const int batch = atoi (argv[i]);
    if (batch < 1) {
      fprintf (stderr, "conv-algo-speed: bad batch '%s'\n", argv[i]);
      return 2;
    }
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
      const shape *s = &shapes[k];
      tt_conv2d_algo a = TT_CONV2D_IM2COL, a1, a2;
      const double f = time_pass (s, batch, -1, false, false, runs, &a);
      const double c = time_pass (s, batch, TT_CONV2D_IM2COL, false, false,
          runs, &a1);
      const double h = time_pass (s, batch, TT_CONV2D_IM2COL, true, true,
          runs, &a2);
      const double hf = time_pass (s, batch, TT_CONV2D_IM2COL, true, false,
          runs, &a2);
      printf ("shape=%dx%dx%d>%dk%ds%d (%s) batch=%d algo=%s fp32=%.2f "
          "im2col=%.2f im2col_bf16=%.2f im2col_bf16_fp32_scratch=%.2f "
          "(ms)\n", s->c, s->h, s->w, s->f, s->k, s->stride, s->model, batch,
          names[a], f, c, h, hf);
      fflush (stdout);
    }
  }
  return 0;
}
