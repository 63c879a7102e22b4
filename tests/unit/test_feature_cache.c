/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The feature cache (core/feature_cache.c): a frozen prefix's boundary
 * values kept in the first epoch (tt_model_train_batch_keep) and used
 * instead of its forward pass in the next (tt_model_train_batch_cached).
 * - an MLP, a small CNN without batch normalization and the zoo's
 *   transformer train several epochs to the same weights and optimizer
 *   state, byte for byte (memcmp), as without the cache, whole or with
 *   only the first samples cached; the prefix's layers run in the first
 *   epoch only (profiling's calls);
 * - the boundary's size, and its fingerprint following the prefix's
 *   weights;
 * - refusals naming the reason: a batch-normalization or dropout layer
 *   in the prefix, no frozen prefix, several threads, a memory limit.
 *
 * Usage: test_feature_cache SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "train_steps.h"

#include <inttypes.h>

#define SAMPLES 27              /* batch 4: six full batches and a short one */
#define SGD "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"

static const char mlp[] =
    "[Model]\nbatch_size = 4\nloss = cross\n" SGD
    "[input]\ntype = input\ninput_shape = 1:1:20\n"
    "[fc1]\ntype = fully_connected\nunit = 24\nactivation = relu\n"
    "[fc2]\ntype = fully_connected\nunit = 16\nactivation = tanh\n"
    "[out]\ntype = fully_connected\nunit = 5\nactivation = softmax\n";

static const char cnn[] =
    "[Model]\nbatch_size = 4\nloss = cross\n" SGD
    "[input]\ntype = input\ninput_shape = 2:10:10\n"
    "[conv1]\ntype = conv2d\nfilters = 6\nkernel_size = 3,3\n"
    "padding = same\nactivation = relu\n"
    "[pool1]\ntype = pooling2d\npooling = max\npool_size = 2,2\n"
    "stride = 2,2\n"
    "[conv2]\ntype = conv2d\nfilters = 8\nkernel_size = 3,3\n"
    "padding = same\nactivation = relu\n"
    "[flat]\ntype = flatten\n"
    "[fc1]\ntype = fully_connected\nunit = 16\nactivation = relu\n"
    "[out]\ntype = fully_connected\nunit = 5\nactivation = softmax\n";

/* batch normalization and dropout in what last:1 freezes */
static const char cnn_bn[] =
    "[Model]\nbatch_size = 4\nloss = cross\n" SGD
    "[input]\ntype = input\ninput_shape = 2:10:10\n"
    "[conv1]\ntype = conv2d\nfilters = 6\nkernel_size = 3,3\n"
    "[bn1]\ntype = batch_normalization\nactivation = relu\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 5\nactivation = softmax\n";
static const char mlp_dropout[] =
    "[Model]\nbatch_size = 4\nloss = cross\n" SGD
    "[input]\ntype = input\ninput_shape = 1:1:20\n"
    "[fc1]\ntype = fully_connected\nunit = 24\nactivation = relu\n"
    "[drop]\ntype = dropout\ndropout_rate = 0.2\n"
    "[out]\ntype = fully_connected\nunit = 5\nactivation = softmax\n";

static const char *root;

static tt_model *
open_text (const char *text, const char *choice, unsigned threads,
    uint64_t limit, tt_error * err)
{
  tt_model *m = tt_model_load_ini_text (text, strlen (text), "m.ini", err);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 7);
  if (tt_model_set_threads (m, threads, err) ||
      (choice && tt_model_set_train (m, choice, err)) ||
      (limit && tt_model_set_memory_limit (m, limit, err)) ||
      tt_model_compile (m, err)) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static tt_model *
open_zoo (const char *choice, tt_error * err)
{
  char path[2048];
  snprintf (path, sizeof path, "%s/tests/models/zoo_transformer.ini", root);
  tt_open_options o = { 0 };
  o.batch_size = 4;
  o.has_seed = true;
  o.seed = 7;
  o.threads = 1;
  o.train = choice;
  return tt_model_open (path, &o, NULL, err);
}

/* the data set: sample s's input values and its label class */
typedef struct
{
  float *x, *t;
  size_t nx, nl;
} data_set;

static void
data_make (tt_model * m, data_set * d)
{
  tt_shape in, lb = tt_model_label_shape (m);
  tt_model_input_shape (m, 0, &in);
  d->nx = (size_t) in.channel * in.height * in.width;
  d->nl = (size_t) lb.channel * lb.height * lb.width;
  d->x = malloc (SAMPLES * d->nx * sizeof *d->x);
  d->t = calloc (SAMPLES * d->nl, sizeof *d->t);
  for (size_t j = 0; j < SAMPLES * d->nx; j++)
    d->x[j] = (float) ((j * 7919 + 31) % 255) / 255.0f - 0.4f;
  for (size_t s = 0; s < SAMPLES; s++)
    d->t[s * d->nl + (s * 7) % d->nl] = 1;
}

/* epochs over the data set in order; cached: how many samples (from the
 * first) the cache holds, 0 none (plain steps). Returns the steps that
 * came from the cache, or -1. */
static int
train_epochs (tt_model * m, const data_set * d, int epochs, uint32_t cached,
    const char *name)
{
  const uint32_t batch = tt_model_batch_size (m);
  tt_feature_boundary fb = { 0 };
  tt_error err;
  float *records = NULL;
  if (cached) {
    CHECK (tt_model_feature_boundary (m, &fb, &err) == TT_OK, "%s: %s",
        name, err.message);
    records = malloc ((size_t) cached * fb.floats_per_sample * sizeof *records);
  }
  int from_cache = 0;
  for (int e = 0; e < epochs; e++) {
    for (uint32_t at = 0; at < SAMPLES; at += batch) {
      const uint32_t n = SAMPLES - at < batch ? SAMPLES - at : batch;
      const void *inputs[1] = { d->x + at * d->nx };
      const float *labels = d->t + at * d->nl;
      float *keep[64] = { NULL };
      tt_status st;
      if (cached && e > 0 && at + n <= cached) {
        const float *from[64];
        for (uint32_t b = 0; b < n; b++)
          from[b] = records + (at + b) * fb.floats_per_sample;
        st = tt_model_train_batch_cached (m, n, from, labels, NULL, &err);
        from_cache++;
      } else if (cached && e == 0) {
        for (uint32_t b = 0; b < n; b++)
          keep[b] = at + b < cached ?
              records + (at + b) * fb.floats_per_sample : NULL;
        st = tt_model_train_batch_keep (m, n, inputs, NULL, labels, keep,
            NULL, &err);
      } else {
        st = tt_model_train_batch (m, n, inputs, NULL, labels, NULL, &err);
      }
      CHECK (st == TT_OK, "%s: epoch %d, sample %u: %s", name, e, at,
          err.message);
      if (st) {
        free (records);
        return -1;
      }
    }
  }
  free (records);
  return from_cache;
}

/* calls of the layer named name (profiling) */
static uint64_t
layer_calls (const tt_model * m, const char *name)
{
  tt_layer_profile p;
  for (uint32_t i = 0; i < tt_model_num_layers (m); i++)
    if (!tt_model_layer_profile (m, i, &p) && !strcmp (p.name, name))
      return p.calls;
  return UINT64_MAX;
}

/* plain, whole cache, first samples cached: the same state, byte for
 * byte; the prefix's first layer ran only where the cache did not */
static void
same_weights (tt_model * (*open) (const char *, const char *), const char
    *text, const char *choice, const char *first, const char *name)
{
  tt_model *plain = open (text, choice);
  CHECK (plain != NULL, "%s: open", name);
  if (!plain)
    return;
  data_set d;
  data_make (plain, &d);
  const int epochs = 4;
  const uint32_t batch = tt_model_batch_size (plain);
  const int steps = (SAMPLES + batch - 1) / batch;
  CHECK (train_epochs (plain, &d, epochs, 0, name) == 0, "%s", name);
  const uint32_t parts[] = { SAMPLES, 2 * batch + 1 };
  for (size_t p = 0; p < 2; p++) {
    tt_model *m = open (text, choice);
    tt_error err;
    CHECK (m && tt_model_set_profiling (m, true, &err) == TT_OK, "%s", name);
    if (!m)
      continue;
    const int got = train_epochs (m, &d, epochs, parts[p], name);
    /* whole: every later step; partly: the two full batches it holds */
    const int want = (epochs - 1) * (p == 0 ? steps : 2);
    CHECK (got == want, "%s, %u cached: %d steps from the cache, not %d",
        name, parts[p], got, want);
    CHECK ((int) layer_calls (m, first) == epochs * steps - want,
        "%s: %s ran %" PRIu64 " times, not %d", name, first,
        layer_calls (m, first), epochs * steps - want);
    CHECK (tt_test_same_state (plain, m, name), "%s, %u samples cached: "
        "state differs from training without the cache", name, parts[p]);
    tt_model_free (m);
  }
  tt_model_free (plain);
  free (d.x);
  free (d.t);
}

static tt_model *
open_plain (const char *text, const char *choice)
{
  tt_error err;
  tt_model *m = open_text (text, choice, 1, 0, &err);
  if (!m)
    printf ("open: %s\n", err.message);
  return m;
}

static tt_model *
open_zoo_text (const char *text, const char *choice)
{
  (void) text;
  tt_error err;
  tt_model *m = open_zoo (choice, &err);
  if (!m)
    printf ("open: %s\n", err.message);
  return m;
}

static void
test_mlp (void)
{
  same_weights (open_plain, mlp, "last:1", "fc1", "mlp last:1");
  same_weights (open_plain, mlp, "last:2", "fc1", "mlp last:2");
}

static void
test_cnn (void)
{
  same_weights (open_plain, cnn, "last:2", "conv1", "cnn last:2");
  same_weights (open_plain, cnn, "layers:conv2,out", "conv1",
      "cnn layers:conv2,out");
}

static void
test_transformer (void)
{
  same_weights (open_zoo_text, NULL, "last:4", "patches",
      "zoo_transformer last:4");
}

/* the boundary: fc2's output (after its activation) for the MLP's
 * last:1; the fingerprint follows the prefix's weights only */
static void
test_boundary (void)
{
  tt_error err;
  tt_model *m = open_text (mlp, "last:1", 1, 0, &err);
  CHECK (m != NULL, "%s", m ? "" : err.message);
  if (!m)
    return;
  tt_feature_boundary b;
  CHECK (tt_model_feature_boundary (m, &b, &err) == TT_OK, "%s", err.message);
  CHECK (b.tensors == 1 && b.floats_per_sample == 16, "tensors %u, floats "
      "%zu", b.tensors, b.floats_per_sample);
  /* input, fc1, its relu, fc2, its tanh */
  CHECK (b.prefix_layers == 4, "prefix layers %u", b.prefix_layers);
  const uint64_t f0 = b.fingerprint;
  /* out trains: its weights leave the fingerprint as it is */
  tt_layer *out = &m->layers[m->loss_layer];
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (!strcmp (m->layers[i].name, "out"))
      out = &m->layers[i];
  tt_data (m, out->weights[0].value)[0] += 1.0f;
  CHECK (tt_model_feature_boundary (m, &b, &err) == TT_OK &&
      b.fingerprint == f0, "a trained weight changed the fingerprint");
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (!strcmp (m->layers[i].name, "fc1"))
      tt_data (m, m->layers[i].weights[0].value)[0] += 1.0f;
  CHECK (tt_model_feature_boundary (m, &b, &err) == TT_OK &&
      b.fingerprint != f0, "a prefix weight left the fingerprint as it was");
  tt_model_free (m);
}

static void
refused (const char *text, const char *choice, unsigned threads,
    uint64_t limit, tt_status want, const char *needle, const char *needle2)
{
  tt_error err;
  tt_model *m = open_text (text, choice, threads, limit, &err);
  CHECK (m != NULL, "%s: %s", choice, m ? "" : err.message);
  if (!m)
    return;
  tt_feature_boundary b;
  const tt_status st = tt_model_feature_boundary (m, &b, &err);
  CHECK (st == want && strstr (err.message, needle) &&
      strstr (err.message, needle2), "%s: %s (%s)", choice,
      st ? err.message : "accepted", tt_status_name (st));
  /* nor does a step take a cache */
  float rec[64] = { 0 };
  const float *from[1] = { rec };
  float t[5] = { 1 };
  CHECK (tt_model_train_batch_cached (m, 1, from, t, NULL, &err) == want,
      "%s: a cached step was not refused", choice);
  tt_model_free (m);
}

static void
test_refusals (void)
{
  refused (cnn_bn, "last:1", 1, 0, TT_ERR_INVALID, "layer bn1 "
      "(batch_normalization)", "batch's statistics");
  refused (mlp_dropout, "last:1", 1, 0, TT_ERR_INVALID, "layer drop "
      "(dropout)", "random");
  refused (mlp, "everything", 1, 0, TT_ERR_INVALID, "no frozen prefix",
      "--train");
  refused (mlp, "last:1", 2, 0, TT_ERR_STATE, "one thread", "2 asked");
  refused (mlp, "last:1", 1, 5760, TT_ERR_STATE, "memory limit", "cache");
  /* a record missing from a cached step */
  tt_error err;
  tt_model *m = open_text (mlp, "last:1", 1, 0, &err);
  if (!m)
    return;
  float rec[16] = { 0 }, t[10] = { 1 };
  const float *from[2] = { rec, NULL };
  CHECK (tt_model_train_batch_cached (m, 2, from, t, NULL, &err) ==
      TT_ERR_INVALID && strstr (err.message, "sample 1"), "%s", err.message);
  tt_model_free (m);
}

int
main (int argc, char **argv)
{
  root = argc > 1 ? argv[1] : ".";
  (void) tt_test_train_steps;   /* train_steps.h: its state comparison only */
  TT_TEST_RUN (test_mlp);
  TT_TEST_RUN (test_cnn);
  TT_TEST_RUN (test_transformer);
  TT_TEST_RUN (test_boundary);
  TT_TEST_RUN (test_refusals);
  return tt_test_summary ();
}
