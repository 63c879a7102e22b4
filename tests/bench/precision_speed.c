/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Training speed in fp32 and with the layers' GEMMs in bf16 (the
 * activation type bf16, docs/precision.md), side by side in one run:
 * for each model and batch, a model compiled per precision (the same
 * seed, so the same weights), synthetic inputs in [0, 1) and one-hot
 * labels made before the clock starts, 2 warm-up steps, then RUNS timed
 * runs of STEPS steps alternating fp32 and bf16; samples/s is the median
 * run's. The bf16 model is set with tt_model_set_precision before it
 * compiles, as --precision bf16 does: its GEMMs round to bf16 and its
 * kept activations are stashed at half width.
 *
 *   precision-speed [-r RUNS] [-s STEPS] [-t THREADS] [-p 1] [-c fp16]
 *       [-H 1] SOURCE_ROOT MODEL:BATCH...
 *
 * -c fp16 compares fp16 instead of bf16 (the column keeps its name).
 * -H 1 compares the half precision with itself, the first model holding
 * multi_head_attention's scratch in fp32 (tt_mha_force_fp32_scratch, the
 * layout before it was held at half width) instead of an fp32 model:
 *   model=zoo_transformer batch=32 held_fp32=... held_half=... ratio=...
 *
 * -p 1 profiles the steps (tt_model_set_profiling) and adds, per layer
 * type, the milliseconds a step of each precision spends in its layers
 * (forward, backward and update) and outside them:
 *   profile model=fmnist_cnn batch=32 type=conv2d fp32=... bf16=... (ms)
 *   e.g. precision-speed . fmnist_cnn:32 zoo_transformer:128
 *
 * prints one line per model and batch:
 *   model=fmnist_cnn batch=32 fp32=... bf16=... ratio=... (samples/s)
 */
#include "tt_internal.h"
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
      tt_model_set_precision (b->m, tt_precision_name (act), &err) ||
      tt_model_compile (b->m, &err)) {
    fprintf (stderr, "precision-speed: %s\n", err.message);
    return false;
  }
  tt_model_set_seed (b->m, 1);
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
/* per layer type, ms a step of a and of b (the same graph) */
static void
bench_profile (bench * a, bench * b, const char *name)
{
  const char *types[64];
  double ms[2][64] = { {0} };
  int n = 0;
  bench *m[2] = { a, b };
  double other[2];
  for (int p = 0; p < 2; p++) {
    tt_profile all;
    if (tt_model_profile (m[p]->m, &all))
      return;
    const double steps = all.steps ? (double) all.steps : 1;
    other[p] = all.other_ns / steps * 1e-6;
    for (uint32_t i = 0; i < tt_model_num_layers (m[p]->m); i++) {
      tt_layer_profile lp;
      if (tt_model_layer_profile (m[p]->m, i, &lp) || !lp.type)
        continue;
      int t = 0;
      while (t < n && strcmp (types[t], lp.type))
        t++;
      if (t == n && n < 64)
        types[n++] = lp.type;
      if (t < 64)
        ms[p][t] += (lp.forward_ns + lp.backward_ns + lp.update_ns) / steps *
            1e-6;
    }
  }
  for (int t = 0; t < n; t++)
    printf ("profile model=%s batch=%u type=%s fp32=%.3f bf16=%.3f\n", name,
        a->batch, types[t], ms[0][t], ms[1][t]);
  printf ("profile model=%s batch=%u type=(outside the layers) fp32=%.3f "
      "bf16=%.3f\n", name, a->batch, other[0], other[1]);
}

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
  bool profile = false, held = false;
  tt_precision half = TT_PRECISION_BF16;
  for (; a + 1 < argc && argv[a][0] == '-'; a += 2) {
    if (!strcmp (argv[a], "-r"))
      runs = atoi (argv[a + 1]);
    else if (!strcmp (argv[a], "-s"))
      steps = atoi (argv[a + 1]);
    else if (!strcmp (argv[a], "-t"))
      threads = (unsigned) atoi (argv[a + 1]);
    else if (!strcmp (argv[a], "-p"))
      profile = atoi (argv[a + 1]) != 0;
    else if (!strcmp (argv[a], "-H"))
      held = atoi (argv[a + 1]) != 0;
    else if (!strcmp (argv[a], "-c"))
      half = strcmp (argv[a + 1], "fp16") ? TT_PRECISION_BF16 :
          TT_PRECISION_FP16;
    else
      break;
  }
  if (a + 1 >= argc || runs < 1 || runs > 99 || steps < 1) {
    fprintf (stderr, "usage: precision-speed [-r RUNS 1-99] [-s STEPS] "
        "[-t THREADS] [-p 1] [-c fp16] [-H 1] SOURCE_ROOT MODEL:BATCH...\n");
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
    tt_mha_force_fp32_scratch (held);
    const bool first = bench_open (&b[0], path, batch, threads, held ? half :
        TT_PRECISION_FP32);
    tt_mha_force_fp32_scratch (false);
    if (!first || !bench_open (&b[1], path, batch, threads, half))
      return 1;
    /* (profiled: the counters start after the warm-up) */
    for (int p = 0; p < 2; p++) {
      tt_error err;
      bench_run (&b[p], 2);
      if (profile && tt_model_set_profiling (b[p].m, true, &err)) {
        fprintf (stderr, "precision-speed: %s\n", err.message);
        return 1;
      }
    }
    double rate[2][99];
    for (int r = 0; r < runs; r++)
      for (int p = 0; p < 2; p++)
        rate[p][r] = bench_run (&b[p], steps);
    for (int p = 0; p < 2; p++)
      qsort (rate[p], (size_t) runs, sizeof (double), cmp_double);
    const double f = rate[0][runs / 2], h = rate[1][runs / 2];
    printf ("model=%s batch=%u %s=%.1f %s=%.1f ratio=%.2f\n", name, batch,
        held ? "held_fp32" : "fp32", f, held ? "held_half" : "bf16", h, h / f);
    if (profile)
      bench_profile (&b[0], &b[1], name);
    fflush (stdout);
    bench_close (&b[0]);
    bench_close (&b[1]);
  }
  return 0;
}
