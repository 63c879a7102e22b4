/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Training speed in fp32 and with the layers' GEMMs in bf16 (the
 * activation type bf16, docs/precision.md), side by side in one run:
 * for each model and batch, a model compiled per precision (the same
 * seed, so the same weights), synthetic inputs in [0, 1) and one-hot
 * labels made before the clock starts, 2 warm-up steps, then RUNS timed
 * runs of STEPS steps alternating fp32 and bf16; samples/s is the median
 * run's. The activation type is set in the model here (tests include the
 * internal header), as model_tensor_type = FP32-BF16 will set it.
 *
 *   precision-speed [-r RUNS] [-s STEPS] [-t THREADS] SOURCE_ROOT
 *       MODEL:BATCH...
 *   e.g. precision-speed . fmnist_cnn:32 zoo_transformer:128
 *
 * prints one line per model and batch:
 *   model=fmnist_cnn batch=32 fp32=... bf16=... ratio=... (samples/s)
 */
#include "tt_internal.h"

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

static int
cmp_double (const void *x, const void *y)
{
  const double a = *(const double *) x, b = *(const double *) y;
  return a < b ? -1 : a > b;
}

typedef struct
{
  tt_model *m;
  float *x[8], *t;
  const void *in[8];
  uint32_t batch;
} bench;

static bool
bench_open (bench * b, const char *path, uint32_t batch, unsigned threads,
    tt_precision act)
{
  tt_error err;
  memset (b, 0, sizeof *b);
  b->m = tt_model_load_ini (path, &err);
  if (!b->m || tt_model_set_batch_size (b->m, batch, &err) ||
      (threads && tt_model_set_threads (b->m, threads, &err)) ||
      tt_model_compile (b->m, &err)) {
    fprintf (stderr, "precision-speed: %s\n", err.message);
    return false;
  }
  tt_model_set_seed (b->m, 1);
  b->m->activation_type = act;
  b->batch = batch;
  uint64_t r = 12345;
  for (uint32_t i = 0; i < tt_model_num_inputs (b->m) && i < 8; i++) {
    tt_shape s;
    tt_model_input_shape (b->m, i, &s);
    const size_t n = (size_t) batch * s.channel * s.height * s.width;
    b->x[i] = malloc (n * sizeof (float));
    for (size_t j = 0; j < n; j++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      b->x[i][j] = (float) (r >> 40) / (float) (1 << 24);
    }
    b->in[i] = b->x[i];
  }
  const tt_shape ls = tt_model_label_shape (b->m);
  const size_t nl = (size_t) ls.channel * ls.height * ls.width;
  b->t = calloc ((size_t) batch * nl, sizeof (float));
  for (uint32_t s = 0; s < batch; s++)
    b->t[s * nl + (s * 7u) % nl] = 1;
  return true;
}

static void
bench_close (bench * b)
{
  for (int i = 0; i < 8; i++)
    free (b->x[i]);
  free (b->t);
  if (b->m)
    tt_model_free (b->m);
}

/* samples/s of steps steps */
static double
bench_run (bench * b, int steps)
{
  tt_error err;
  tt_batch_result r;
  const double t0 = now ();
  for (int s = 0; s < steps; s++)
    if (tt_model_train_batch (b->m, b->batch, b->in, NULL, b->t, &r, &err)) {
      fprintf (stderr, "precision-speed: %s\n", err.message);
      exit (1);
    }
  return (double) steps *b->batch / (now () - t0);
}

int
main (int argc, char **argv)
{
  int runs = 5, steps = 5, a = 1;
  unsigned threads = 0;
  for (; a + 1 < argc && argv[a][0] == '-'; a += 2) {
    if (!strcmp (argv[a], "-r"))
      runs = atoi (argv[a + 1]);
    else if (!strcmp (argv[a], "-s"))
      steps = atoi (argv[a + 1]);
    else if (!strcmp (argv[a], "-t"))
      threads = (unsigned) atoi (argv[a + 1]);
    else
      break;
  }
  if (a + 1 >= argc || runs < 1 || runs > 99 || steps < 1) {
    fprintf (stderr, "usage: precision-speed [-r RUNS 1-99] [-s STEPS] "
        "[-t THREADS] SOURCE_ROOT MODEL:BATCH...\n");
    return 2;
  }
  const char *root = argv[a++];
  printf ("avx512_bf16=%s\n", tt_bf16_hw_dot ()? "yes" : "no");
  for (; a < argc; a++) {
    char name[256];
    unsigned batch = 0;
    if (sscanf (argv[a], "%255[^:]:%u", name, &batch) != 2 || batch == 0) {
      fprintf (stderr, "precision-speed: %s: expected MODEL:BATCH\n", argv[a]);
      return 2;
    }
    char path[1024];
    snprintf (path, sizeof path, "%s/tests/models/%s.ini", root, name);
    bench b[2];
    if (!bench_open (&b[0], path, batch, threads, TT_PRECISION_FP32) ||
        !bench_open (&b[1], path, batch, threads, TT_PRECISION_BF16))
      return 1;
    for (int p = 0; p < 2; p++)
      bench_run (&b[p], 2);
    double rate[2][99];
    for (int r = 0; r < runs; r++)
      for (int p = 0; p < 2; p++)
        rate[p][r] = bench_run (&b[p], steps);
    for (int p = 0; p < 2; p++)
      qsort (rate[p], (size_t) runs, sizeof (double), cmp_double);
    const double f = rate[0][runs / 2], h = rate[1][runs / 2];
    printf ("model=%s batch=%u fp32=%.1f bf16=%.1f ratio=%.2f\n", name,
        batch, f, h, h / f);
    fflush (stdout);
    bench_close (&b[0]);
    bench_close (&b[1]);
  }
  return 0;
}
