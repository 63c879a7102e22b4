/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Max pooling's forward and backward (kernels/pooling.c, maxpool2x2.c)
 * on one thread, for fmnist_cnn's two 2x2 pools, a padded 3x3, a global
 * and a 20x20 pooling (2-byte indices): the best of RUNS passes of each,
 * in microseconds and nanoseconds an output, and a hash of y and dx, the
 * same wherever the arithmetic is (two builds compared bit for bit).
 *
 *   pool-speed [-r RUNS] BATCH...
 *
 * prints one line per shape and batch:
 *   fmnist_cnn pool1   batch=32 outputs=173056 forward=... us (... ns/output)
 *       backward=... us (... ns/output) y,dx hash ...
 */
#include "kernels.h"

#include <stdint.h>
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
  const char *name;
  int c, h, w, k, s, pad;
} shape;

static const shape shapes[] = {
  {"fmnist_cnn pool1", 32, 26, 26, 2, 2, 0},
  {"fmnist_cnn pool2", 64, 11, 11, 2, 2, 0},
  {"3x3 s2 pad 1", 64, 32, 32, 3, 2, 1},
  {"global 8x8", 64, 8, 8, 8, 1, 0},
  {"20x20 s4 pad 3", 16, 30, 29, 20, 4, 3},
};

/* FNV-1a of n bytes: the same outputs and derivatives give the same */
static uint64_t
fnv (uint64_t h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static float
rnd (uint64_t * r)
{
  *r = *r * 6364136223846793005ull + 1442695040888963407ull;
  return (float) ((*r >> 40) & 0xffffff) / (float) (1 << 23) - 1.0f;
}

int
main (int argc, char **argv)
{
  int runs = 200, a = 1;
  if (argc > 2 && !strcmp (argv[1], "-r")) {
    runs = atoi (argv[2]);
    a = 3;
  }
  if (a >= argc || runs < 1) {
    fprintf (stderr, "usage: pool-speed [-r RUNS] BATCH...\n");
    return 2;
  }
  for (; a < argc; a++) {
    const int batch = atoi (argv[a]);
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
      const shape *s = &shapes[i];
      tt_window_geom g = {.channels = s->c,.in_h = s->h,.in_w = s->w,
        .kernel_h = s->k,.kernel_w = s->k,.stride_h = s->s,.stride_w = s->s,
        .pad_top = s->pad,.pad_bottom = s->pad,.pad_left = s->pad,
        .pad_right = s->pad,.dilation_h = 1,.dilation_w = 1
      };
      if (batch < 1 || tt_window_geom_init (&g) != 0) {
        fprintf (stderr, "pool-speed: bad batch or shape\n");
        return 2;
      }
      const size_t nx = (size_t) batch * s->c * s->h * s->w;
      const size_t ny = (size_t) batch * s->c * g.out_h * g.out_w;
      float *x = malloc (nx * sizeof *x), *dx = malloc (nx * sizeof *dx);
      float *y = malloc (ny * sizeof *y), *dy = malloc (ny * sizeof *dy);
      void *arg = malloc (ny * tt_maxpool_index_bytes (&g));
      if (!x || !dx || !y || !dy || !arg)
        return 1;
      uint64_t r = 1;
      for (size_t k = 0; k < nx; k++)
        x[k] = rnd (&r);
      for (size_t k = 0; k < ny; k++)
        dy[k] = rnd (&r);
      double fwd = 1e9, bwd = 1e9;
      for (int k = 0; k < runs; k++) {
        double t0 = now ();
        tt_maxpool_forward (NULL, &g, batch, x, y, arg);
        double t1 = now ();
        tt_maxpool_backward (NULL, &g, batch, dy, arg, dx);
        double t2 = now ();
        fwd = t1 - t0 < fwd ? t1 - t0 : fwd;
        bwd = t2 - t1 < bwd ? t2 - t1 : bwd;
      }
      const uint64_t h = fnv (fnv (14695981039346656037ull, y,
              ny * sizeof *y), dx, nx * sizeof *dx);
      printf ("%-18s batch=%d outputs=%zu forward=%.1f us (%.2f ns/output)"
          " backward=%.1f us (%.2f ns/output) y,dx hash %016llx\n", s->name,
          batch, ny, fwd * 1e6, fwd * 1e9 / ny, bwd * 1e6, bwd * 1e9 / ny,
          (unsigned long long) h);
      free (x);
      free (dx);
      free (y);
      free (dy);
      free (arg);
    }
  }
  return 0;
}
