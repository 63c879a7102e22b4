/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Training speed of a model on synthetic float32 samples, for models the
 * command-line tool cannot feed (it reads IDX images only): the sequence
 * models of tests/models (sensor_conv1d.ini, sensor_lstm.ini) and any other
 * INI. The samples are deterministic pseudo-random inputs of the model's
 * input shape (uniform in [0, 1)) with one-hot labels of its output width,
 * all generated before the clock starts; only the training steps are
 * timed. A partial last batch is dropped (as tests/bench/torch_seq.py
 * does), so every step runs at the full batch.
 *
 *   seq-speed MODEL.ini [--batch B] [--samples N] [--epochs E] [--seed S]
 *             [--threads T] [--profile]
 *
 * Prints a header line, then one line per epoch, e.g.
 *   epoch=2/2 loss=1.791 accuracy=0.1702 samples_per_s=123456.7 seconds=0.265
 * (tests/bench/seq_speed.sh reads the last samples_per_s). --profile adds,
 * for the last epoch, the time per layer type (forward, backward, update,
 * share of the step) to standard error, and with SEQ_SPEED_LAYERS set in
 * the environment each layer's forward and backward.
 */
#include "tt_engine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Prints the profile summed by layer type, largest first. */
static void
print_type_profile (const tt_model * m)
{
  enum
  { MAX_TYPES = 64 };
  struct
  {
    const char *type;
    uint64_t fwd, bwd, upd;
  } t[MAX_TYPES];
  int n = 0;
  tt_profile total;
  if (tt_model_profile (m, &total))
    return;
  for (uint32_t i = 0; i < tt_model_num_layers (m); i++) {
    tt_layer_profile p;
    if (tt_model_layer_profile (m, i, &p))
      return;
    int k = 0;
    while (k < n && strcmp (t[k].type, p.type))
      k++;
    if (k == n) {
      if (n == MAX_TYPES)
        continue;
      t[n].type = p.type;
      t[n].fwd = t[n].bwd = t[n].upd = 0;
      n++;
    }
    t[k].fwd += p.forward_ns;
    t[k].bwd += p.backward_ns;
    t[k].upd += p.update_ns;
  }
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++)
      if (t[b].fwd + t[b].bwd + t[b].upd > t[a].fwd + t[a].bwd + t[a].upd) {
        __typeof__ (t[0]) tmp = t[a];
        t[a] = t[b];
        t[b] = tmp;
      }
  const double steps = total.steps ? (double) total.steps : 1.0;
  fprintf (stderr, "# per step (ms), last epoch: step %.3f, other %.3f\n",
      total.step_ns / steps * 1e-6, total.other_ns / steps * 1e-6);
  fprintf (stderr, "# %-22s %9s %9s %9s %6s\n", "type", "forward",
      "backward", "update", "share");
  for (int k = 0; k < n; k++)
    fprintf (stderr, "  %-22s %9.3f %9.3f %9.3f %5.1f%%\n", t[k].type,
        t[k].fwd / steps * 1e-6, t[k].bwd / steps * 1e-6,
        t[k].upd / steps * 1e-6, 100.0 * (double) (t[k].fwd + t[k].bwd +
            t[k].upd) / (double) (total.step_ns ? total.step_ns : 1));
  if (!getenv ("SEQ_SPEED_LAYERS"))
    return;
  fprintf (stderr, "# %-22s %-16s %9s %9s\n", "layer", "type", "forward",
      "backward");
  for (uint32_t i = 0; i < tt_model_num_layers (m); i++) {
    tt_layer_profile p;
    if (tt_model_layer_profile (m, i, &p))
      return;
    fprintf (stderr, "  %-22s %-16s %9.3f %9.3f\n", p.name, p.type,
        p.forward_ns / steps * 1e-6, p.backward_ns / steps * 1e-6);
  }
}

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* splitmix64: deterministic, the same on every platform */
static uint64_t
next_u64 (uint64_t * state)
{
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static float
next_unit (uint64_t * state)
{
  return (float) (next_u64 (state) >> 40) * (1.0f / 16777216.0f);
}

static int
usage (void)
{
  fprintf (stderr, "usage: seq-speed MODEL.ini [--batch B] [--samples N] "
      "[--epochs E] [--seed S] [--threads T] [--profile]\n");
  return 2;
}

static int
parse_u32 (const char *s, uint32_t * v)
{
  char *end;
  errno = 0;
  unsigned long long x = strtoull (s, &end, 10);
  if (errno || end == s || *end || s[0] == '-' || x == 0 || x > UINT32_MAX)
    return -1;
  *v = (uint32_t) x;
  return 0;
}

static size_t
shape_count (tt_shape s)
{
  return (size_t) s.channel * s.height * s.width;
}

int
main (int argc, char **argv)
{
  const char *path = NULL;
  uint32_t batch = 0, samples = 16384, epochs = 2, threads = 0, seed = 1;
  bool profile = false;
  for (int i = 1; i < argc; i++) {
    uint32_t *dst = NULL;
    if (!strcmp (argv[i], "--profile")) {
      profile = true;
      continue;
    }
    if (!strcmp (argv[i], "--batch"))
      dst = &batch;
    else if (!strcmp (argv[i], "--samples"))
      dst = &samples;
    else if (!strcmp (argv[i], "--epochs"))
      dst = &epochs;
    else if (!strcmp (argv[i], "--seed"))
      dst = &seed;
    else if (!strcmp (argv[i], "--threads"))
      dst = &threads;
    else if (argv[i][0] == '-' || path)
      return usage ();
    else
      path = argv[i];
    if (dst && (i + 1 >= argc || parse_u32 (argv[i + 1], dst))) {
      fprintf (stderr, "seq-speed: %s wants a positive integer\n", argv[i]);
      return 2;
    }
    if (dst)
      i++;
  }
  if (!path)
    return usage ();
  if (threads)
    tt_set_num_threads ((int) threads);

  tt_error err;
  tt_model *m = tt_model_load_ini (path, &err);
  if (!m || (batch && tt_model_set_batch_size (m, batch, &err)) ||
      (tt_model_set_seed (m, seed), false) || tt_model_compile (m, &err)) {
    fprintf (stderr, "seq-speed: %s\n", err.message);
    tt_model_free (m);
    return 1;
  }
  batch = tt_model_batch_size (m);
  const uint32_t steps = samples / batch;
  if (steps == 0) {
    fprintf (stderr, "seq-speed: --samples %u is less than a batch (%u)\n",
        samples, batch);
    tt_model_free (m);
    return 2;
  }
  const uint32_t used = steps * batch;

  /* the data, generated before any timing: every input of the model */
  const uint32_t n_inputs = tt_model_num_inputs (m);
  float **data = calloc (n_inputs, sizeof *data);
  const void **inputs = calloc (n_inputs, sizeof *inputs);
  tt_dtype *types = calloc (n_inputs, sizeof *types);
  size_t *per = calloc (n_inputs, sizeof *per);
  const size_t classes = shape_count (tt_model_label_shape (m));
  float *labels = calloc ((size_t) used * classes, sizeof *labels);
  int rc = 1;
  if (!data || !inputs || !types || !per || !labels)
    goto oom;
  uint64_t rng = 0x5eed0000ull + seed;
  for (uint32_t k = 0; k < n_inputs; k++) {
    tt_shape s;
    if (tt_model_input_shape (m, k, &s)) {
      fprintf (stderr, "seq-speed: no input %u\n", k);
      goto out;
    }
    per[k] = shape_count (s);
    types[k] = TT_DTYPE_FLOAT32;
    if (!(data[k] = malloc ((size_t) used * per[k] * sizeof (float))))
      goto oom;
    for (size_t i = 0; i < (size_t) used * per[k]; i++)
      data[k][i] = next_unit (&rng);
  }
  for (uint32_t i = 0; i < used; i++)
    labels[(size_t) i * classes + next_u64 (&rng) % classes] = 1.0f;

  tt_memory_info mem;
  tt_model_memory_info (m, &mem);
  printf ("# model=%s batch=%u samples=%u classes=%zu pool_bytes=%zu "
      "weight_bytes=%zu\n", path, batch, used, classes, mem.pool_bytes,
      mem.weight_bytes);
  for (uint32_t e = 0; e < epochs; e++) {
    double loss_sum = 0;
    uint64_t correct = 0;
    tt_batch_result r[1];
    if (profile && e + 1 == epochs && tt_model_set_profiling (m, true, &err)) {
      fprintf (stderr, "seq-speed: %s\n", err.message);
      goto out;
    }
    double t0 = now ();
    for (uint32_t b = 0; b < steps; b++) {
      for (uint32_t k = 0; k < n_inputs; k++)
        inputs[k] = data[k] + (size_t) (b) * batch * per[k];
      if (tt_model_train_batch (m, batch, inputs, types,
              labels + (size_t) b * batch * classes, r, &err)) {
        fprintf (stderr, "seq-speed: %s\n", err.message);
        goto out;
      }
      loss_sum += r->loss * batch;
      correct += r->correct;
    }
    double sec = now () - t0;
    tt_model_finish_epoch (m);
    printf ("epoch=%u/%u loss=%.6f accuracy=%.4f samples_per_s=%.1f "
        "seconds=%.3f\n", e + 1, epochs, loss_sum / used,
        (double) correct / used, used / sec, sec);
    fflush (stdout);
  }
  if (profile)
    print_type_profile (m);
  rc = 0;
  goto out;
oom:
  fprintf (stderr, "seq-speed: out of memory\n");
out:
  for (uint32_t k = 0; data && k < n_inputs; k++)
    free (data[k]);
  free (data);
  free (inputs);
  free (types);
  free (per);
  free (labels);
  tt_model_free (m);
  return rc;
}
