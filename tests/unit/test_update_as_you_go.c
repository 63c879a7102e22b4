/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Update as you go (issue 18, item 2): a large fully_connected weight's
 * gradient is computed a chunk of rows at a time, each chunk applied as
 * soon as it is computed, so the gradient is never whole in the pool.
 * Training must be bit-identical to the whole-gradient path
 * (tt_model_set_whole_gradients) with the portable kernels, whose elements do
 * not depend on the rows of a product: weights and optimizer state after
 * a few steps compared with memcmp. OpenBLAS picks its kernels and tiles
 * by shape and by machine (OPENBLAS_CORETYPE), so a chunk of rows may
 * round its last bits differently there: within a tight tolerance (and
 * the count of elements that differ at all is printed). For every model
 * of tests/models, at the
 * INI's batch and at batch 32, and for the optimizers and regularizers
 * that touch the update. Also: clip_grad_by_norm and OpenBLAS on several
 * threads keep gradients whole,
 * tt_model_gradients refuses a chunked model, stored plans (with, without
 * and with a foreign chunk rule) and the chunk validator.
 *
 * Usage: test_update_as_you_go SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test_hooks.h"
#include "plan_validate.h"
#include "tt_test.h"
#include "train_steps.h"
#include "plan_bound.h"

#include <inttypes.h>
#include <math.h>

static char root[1024];

static const char *models[] = {
  "fmnist_mlp.ini", "fmnist_cnn.ini", "branchy_bn.ini", "resnet_bn.ini",
  "inception.ini", "transfer_frozen.ini", "sensor_conv1d.ini",
  "sensor_lstm.ini", "sensor_gru.ini", NULL
};

/* how a model's gradients are planned */
typedef enum
{
  GRADIENTS_CHUNKED,            /* update as you go where it may */
  GRADIENTS_WHOLE,              /* tt_model_set_whole_gradients */
  GRADIENTS_KEPT,               /* tt_model_keep_gradients */
} gradients_mode;

static tt_model *
open_model (const char *path, const char *text, uint32_t batch,
    gradients_mode mode, tt_error * err)
{
  /* text: NUL-terminated */
  tt_model *m = text ? tt_model_load_ini_text (text, strlen (text), path,
      err) : tt_model_load_ini (path, err);
  if (!m)
    return NULL;
  if ((batch && tt_model_set_batch_size (m, batch, err)) ||
      (mode == GRADIENTS_WHOLE && tt_model_set_whole_gradients (m, err)) ||
      (mode == GRADIENTS_KEPT && tt_model_keep_gradients (m, err)) ||
      tt_model_compile (m, err)) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static uint32_t
chunked_weights (const tt_model * m)
{
  uint32_t n = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    for (uint32_t k = 0; k < m->layers[i].n_weights; k++)
      n += m->layers[i].weights[k].chunk_rows > 0;
  return n;
}

/* steps training steps on fixed pseudo-random data (the last batch one
 * sample short, so a partial batch is covered too) */
static void
train_steps (tt_model * m, const char *name, int steps)
{
  tt_test_train_steps (m, name, steps, 1.0f);
}

/* x and y as one result: the same bytes, or with OpenBLAS within its
 * rounding of a differently shaped product */
static bool
same_value (float x, float y)
{
#ifdef TT_HAVE_CBLAS
  return x == y || fabsf (x - y) <= 1e-6f + 1e-5f * fabsf (x);
#else
  return !memcmp (&x, &y, sizeof x);
#endif
}

/* Weights and optimizer state of a and b (same_value). */
static bool
same_state (tt_model * a, tt_model * b, const char *name)
{
  size_t differ = 0;
  uint32_t na, nb;
  int *ia = tt_bin_regions (a, true, &na), *ib = tt_bin_regions (b, true, &nb);
  bool same = ia && ib && na == nb && na > 0;
  for (uint32_t i = 0; same && i < na; i++) {
    /* an optimizer without that state (sgd) */
    same = (ia[i] < 0) == (ib[i] < 0);
    if (ia[i] < 0)
      continue;
    const tt_tensor *x = &a->tensors[ia[i]], *y = &b->tensors[ib[i]];
    same = x->count == y->count && !strcmp (x->name, y->name);
    for (size_t j = 0; same && j < x->count; j++) {
      differ += memcmp (&x->data[j], &y->data[j], sizeof (float)) != 0;
      if (!same_value (x->data[j], y->data[j])) {
        printf ("%s: %s differs at %zu: %.9g %.9g\n", name, x->name, j,
            (double) x->data[j], (double) y->data[j]);
        same = false;
      }
    }
  }
  if (differ)
    printf ("%s: %zu values not bit-identical (within rounding)\n", name,
        differ);
  free (ia);
  free (ib);
  return same;
}

/* Chunked and whole training of one model, same seed, same data. */
static void
compare (const char *name, const char *path, const char *text,
    uint32_t batch, int expect_chunks)
{
  tt_error err;
  tt_model *a = open_model (path, text, batch, GRADIENTS_CHUNKED, &err);
  CHECK (a != NULL, "%s: %s", name, a ? "" : err.message);
  tt_model *b = open_model (path, text, batch, GRADIENTS_WHOLE, &err);
  CHECK (b != NULL, "%s: %s", name, b ? "" : err.message);
  if (a && b) {
    const uint32_t chunks = chunked_weights (a);
    CHECK (chunked_weights (b) == 0, "%s: whole gradients asked for, %u "
        "chunked", name, chunked_weights (b));
    if (expect_chunks >= 0)
      CHECK (chunks == (uint32_t) expect_chunks, "%s: %u chunked weights, "
          "%d expected", name, chunks, expect_chunks);
    tt_plan_info pa, pb;
    tt_model_plan_info (a, &pa);
    tt_model_plan_info (b, &pb);
    printf ("%-22s batch %3u  chunked %u  pool %10" PRIu64 " (whole %10"
        PRIu64 ")  bound %10" PRIu64 "\n", name, tt_model_batch_size (a),
        chunks, pa.pool_bytes, pb.pool_bytes, pa.lower_bound);
    CHECK (plan_bound_met (name, pa.pool_bytes, pa.lower_bound),
        "%s: pool %" PRIu64 " above its bound %" PRIu64, name,
        pa.pool_bytes, pa.lower_bound);
    /* never larger; smaller where a gradient made the peak (not where
     * activations do: fmnist_cnn, inception) */
    CHECK (chunks ? pa.pool_bytes <= pb.pool_bytes :
        pa.pool_bytes == pb.pool_bytes, "%s: pool %" PRIu64 ", whole %"
        PRIu64, name, pa.pool_bytes, pb.pool_bytes);
    if (expect_chunks > 0)
      CHECK (pa.pool_bytes < pb.pool_bytes, "%s: pool %" PRIu64 ", whole %"
          PRIu64, name, pa.pool_bytes, pb.pool_bytes);
    train_steps (a, name, 3);
    train_steps (b, name, 3);
    CHECK (same_state (a, b, name), "%s: update as you go does not "
        "train as whole gradients do", name);
  }
  tt_model_free (a);
  tt_model_free (b);
}

static void
test_models (void)
{
  for (int i = 0; models[i]; i++) {
    char path[2048];
    snprintf (path, sizeof path, "%s/tests/models/%s", root, models[i]);
    compare (models[i], path, NULL, 0, -1);
    compare (models[i], path, NULL, 32, -1);
  }
}

/* The figures the issue names: fmnist_mlp at batch 32 was 3,760,064
 * bytes with whole gradients; its three fully_connected weights (784 x
 * 256, 256 x 128, 128 x 10) leave only the first two chunked. */
static void
test_mlp_figures (void)
{
  char path[2048];
  tt_error err;
  snprintf (path, sizeof path, "%s/tests/models/fmnist_mlp.ini", root);
  tt_model *a = open_model (path, NULL, 32, GRADIENTS_CHUNKED, &err);
  tt_model *b = open_model (path, NULL, 32, GRADIENTS_WHOLE, &err);
  CHECK (a && b, "fmnist_mlp: %s", err.message);
  if (a && b) {
    CHECK (chunked_weights (a) == 2, "%u chunked", chunked_weights (a));
    CHECK (b->pool_bytes == 3760064, "whole: %" PRIu64, b->pool_bytes);
    CHECK (a->pool_bytes < 3100000, "chunked: %" PRIu64, a->pool_bytes);
    /* hidden1's 784 rows of 256: chunks of 48 rows (12288 floats) */
    int h = tt_model_find_layer (a, "hidden1");
    CHECK (h >= 0 && a->layers[h].weights[0].chunk_rows == 48 &&
        a->tensors[a->layers[h].weights[0].grad].count == 48 * 256,
        "hidden1's chunk");
  }
  tt_model_free (a);
  tt_model_free (b);
}

#define SMALL(opt, extra) \
  "[Model]\ntype=NeuralNetwork\nbatch_size=5\nloss=cross\n" extra \
  "[Optimizer]\n" opt "\n[in]\ntype=input\ninput_shape=1:1:500\n" \
  "normalization=true\n[a]\ntype=fully_connected\nunit=40\n" \
  "weight_regularizer=l2norm\nweight_regularizer_constant=0.01\n" \
  "weight_decay=0.002\nbias_decay=0.003\nactivation=relu\n" \
  "[b]\ntype=fully_connected\nunit=300\nactivation=sigmoid\n" \
  "[out]\ntype=fully_connected\nunit=7\nactivation=softmax\n"

/* Every optimizer form the update reaches, with an l2norm regularizer,
 * a per-weight decay and a bias decay on the chunked layer, whose last
 * chunk is ragged (a: 500 rows in chunks of 288; b: 40 rows of 300,
 * fewer than a chunk, whole; out: 300 rows of 7, chunks of 1728 > 300,
 * whole) */
static void
test_optimizers (void)
{
  static const char *const opts[] = {
    SMALL ("type=adam\nlearning_rate=0.01", ""),
    SMALL ("type=adam\nlearning_rate=0.01\ntorch_ref=true\n"
        "weight_decay=0.01", ""),
    SMALL ("type=adamw\nlearning_rate=0.01\nweight_decay=0.05", ""),
    SMALL ("type=sgd\nlearning_rate=0.1", ""),
    SMALL ("type=sgd\nlearning_rate=0.1\nmomentum=0.9", ""),
    SMALL ("type=adam\nlearning_rate=0.01\n[LearningRateScheduler]\n"
        "type=exponential\nlearning_rate=0.01\ndecay_rate=0.5\n"
        "decay_steps=1", ""),
  };
  for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
    char name[32];
    snprintf (name, sizeof name, "small%zu", i);
    compare (name, name, opts[i], 0, 1);
  }
}

/* clip_grad_by_norm needs every gradient before any update: nothing is
 * chunked, and the pool is the whole-gradient one. */
static void
test_clip_keeps_whole (void)
{
  compare ("clipped", "clipped", SMALL ("type=adam\nlearning_rate=0.01",
          "clip_grad_by_norm=0.5\n"), 0, 0);
}

/* OpenBLAS on several threads splits dW's rows between them, so chunks
 * would not be bit-identical: the planner keeps gradients whole then.
 * The portable GEMM is one thread whatever is asked. */
static void
test_blas_threads (void)
{
  tt_blas_set_threads (2);
  const bool threaded = tt_blas_thread_count () > 1;
  compare ("two_threads", "two_threads", SMALL ("type=adam\n"
          "learning_rate=0.01", ""), 0, threaded ? 0 : 1);
  tt_blas_set_threads (1);
  CHECK (tt_blas_thread_count () == 1, "%d", tt_blas_thread_count ());
  compare ("one_thread", "one_thread", SMALL ("type=adam\n"
          "learning_rate=0.01", ""), 0, 1);
}

/* tt_model_gradients reads gradients: refused on a chunked plan, with a
 * message naming the way out; fine with tt_model_keep_gradients. */
static void
test_gradients_refused (void)
{
  const char *text = SMALL ("type=adam\nlearning_rate=0.01", "");
  for (int whole = 0; whole < 2; whole++) {
    tt_error err;
    tt_model *m = open_model ("g", text, 0, whole ? GRADIENTS_KEPT :
        GRADIENTS_CHUNKED, &err);
    CHECK (m != NULL, "%s", m ? "" : err.message);
    if (!m)
      continue;
    float x[5 * 500] = { 0 }, t[5 * 7] = { 0 };
    for (int b = 0; b < 5; b++)
      t[b * 7 + b] = 1;
    const void *in[1] = { x };
    double loss;
    tt_status st = tt_model_gradients (m, 5, in, NULL, t, true, &loss, &err);
    if (whole)
      CHECK (st == TT_OK, "%s", err.message);
    else
      CHECK (st == TT_ERR_STATE && strstr (err.message, "layer a ") &&
          strstr (err.message, "tt_model_keep_gradients"), "%d %s", (int) st,
          err.message);
    CHECK (tt_model_gradients (m, 5, in, NULL, t, false, &loss, &err) ==
        TT_OK, "forward only: %s", err.message);
    CHECK (tt_model_keep_gradients (m, &err) == TT_ERR_STATE, "after compile");
    tt_model_free (m);
  }
}

static char *
replace (const char *text, const char *from, const char *to)
{
  const char *at = strstr (text, from);
  if (!at)
    return NULL;
  size_t n = strlen (text) - strlen (from) + strlen (to) + 1;
  char *out = malloc (n);
  snprintf (out, n, "%.*s%s%s", (int) (at - text), text, to,
      at + strlen (from));
  return out;
}

/* A plan saved with update as you go loads with it and trains the same;
 * a plan made before it (no update_as_you_go key) still loads, with
 * whole gradients and its own pool, and trains the same; a plan with
 * another chunk rule is refused with a re-plan hint. */
static void
test_stored_plans (void)
{
  char path[2048];
  tt_error err;
  snprintf (path, sizeof path, "%s/tests/models/fmnist_mlp.ini", root);
  tt_model *a = open_model (path, NULL, 32, GRADIENTS_CHUNKED, &err);
  tt_model *b = open_model (path, NULL, 32, GRADIENTS_WHOLE, &err);
  CHECK (a && b, "%s", err.message);
  if (!a || !b) {
    tt_model_free (a);
    tt_model_free (b);
    return;
  }
  char *ta = NULL, *tb = NULL;
  size_t la = 0, lb = 0;
  CHECK (tt_plan_ini_text (a, &ta, &la, &err) == TT_OK, "%s", err.message);
  CHECK (tt_plan_ini_text (b, &tb, &lb, &err) == TT_OK, "%s", err.message);
  /* the texts come with a length: made strings here */
  char *sa = ta ? strndup (ta, la) : NULL, *sb = tb ? strndup (tb, lb) : NULL;
  free (ta);
  free (tb);
  ta = sa;
  tb = sb;
  CHECK (ta && strstr (ta, "\nupdate_as_you_go = 48:12288\n"), "key");
  CHECK (tb && !strstr (tb, "update_as_you_go"), "no key with whole "
      "gradients");
  train_steps (a, "fresh", 3);
  if (ta && tb) {
    tt_model *c = open_model ("mlp.opt.ini", ta, 0, GRADIENTS_CHUNKED, &err);
    CHECK (c && tt_model_has_stored_plan (c) && c->plan.from_stored_plan &&
        chunked_weights (c) == 2 && c->pool_bytes == a->pool_bytes,
        "stored chunked plan: %s", c ? "" : err.message);
    if (c) {
      train_steps (c, "stored", 3);
      CHECK (same_state (a, c, "stored"), "stored chunked plan trains "
          "differently");
    }
    tt_model_free (c);

    /* tb is what this engine wrote before update as you go existed */
    c = open_model ("old.opt.ini", tb, 0, GRADIENTS_CHUNKED, &err);
    CHECK (c && c->plan.from_stored_plan && chunked_weights (c) == 0 &&
        c->pool_bytes == 3760064, "old plan: %s", c ? "" : err.message);
    if (c) {
      train_steps (c, "old", 3);
      CHECK (same_state (a, c, "old"), "an old plan trains differently");
    }
    tt_model_free (c);

    /* whole or kept gradients asked of a chunked stored plan: re-planned */
    for (gradients_mode g = GRADIENTS_WHOLE; g <= GRADIENTS_KEPT; g++) {
      c = open_model ("mlp.opt.ini", ta, 0, g, &err);
      CHECK (c && !c->plan.from_stored_plan && chunked_weights (c) == 0,
          "%s gradients on a chunked plan: %s", g == GRADIENTS_KEPT ?
          "kept" : "whole", c ? "" : err.message);
      tt_model_free (c);
    }

    char *bad = replace (ta, "update_as_you_go = 48:12288",
        "update_as_you_go = 24:12288");
    c = bad ? open_model ("bad.opt.ini", bad, 0, GRADIENTS_CHUNKED,
        &err) : NULL;
    CHECK (bad && !c && strstr (err.message, "update_as_you_go") &&
        strstr (err.message, "re-plan"), "foreign rule: %s", err.message);
    tt_model_free (c);
    free (bad);

    /* a chunked plan with its key removed is not a whole-gradient plan:
     * the independent sweep finds the overlap */
    bad = replace (ta, "update_as_you_go = 48:12288\n", "");
    c = bad ? open_model ("bad2.opt.ini", bad, 0, GRADIENTS_CHUNKED,
        &err) : NULL;
    CHECK (bad && !c && strstr (err.message, "stored plan rejected"),
        "key removed: %s", c ? "loaded" : err.message);
    tt_model_free (c);
    free (bad);
  }
  free (ta);
  free (tb);
  tt_model_free (a);
  tt_model_free (b);
}

static void
test_validator (void)
{
  char why[256];
  CHECK (tt_plan_validate_chunk (784 * 256, 784, 48, 48 * 256, 48, "g",
          why, sizeof why) == 0, "%s", why);
  CHECK (tt_plan_validate_chunk (784 * 256, 784, 40, 40 * 256, 48, "g",
          why, sizeof why) == -1 && strstr (why, "multiple of 48"), "%s", why);
  CHECK (tt_plan_validate_chunk (784 * 256, 784, 48, 47 * 256, 48, "g",
          why, sizeof why) == -1 && strstr (why, "g: the gradient holds"),
      "%s", why);
  CHECK (tt_plan_validate_chunk (96 * 10, 96, 96, 960, 48, "g", why,
          sizeof why) == -1 && strstr (why, "no chunk"), "%s", why);
  CHECK (tt_plan_validate_chunk (97 * 10, 96, 48, 480, 48, "g", why,
          sizeof why) == -1 && strstr (why, "whole rows"), "%s", why);
  CHECK (tt_plan_validate_chunk (0, 0, 48, 0, 48, NULL, why, sizeof why) ==
      -1, "no rows");
  /* the rule itself */
  CHECK (tt_grad_chunk_rows (784, 256) == 48, "%u",
      tt_grad_chunk_rows (784, 256));
  CHECK (tt_grad_chunk_rows (256, 128) == 96, "%u",
      tt_grad_chunk_rows (256, 128));
  CHECK (tt_grad_chunk_rows (128, 10) == 0, "%u", tt_grad_chunk_rows (128, 10));
  CHECK (tt_grad_chunk_rows (3000, 1000) == 48, "%u",
      tt_grad_chunk_rows (3000, 1000));
  CHECK (tt_grad_chunk_rows (48, 1000) == 0, "%u",
      tt_grad_chunk_rows (48, 1000));
}

int
main (int argc, char **argv)
{
  snprintf (root, sizeof root, "%s", argc > 1 ? argv[1] : ".");
  /* whatever OPENBLAS_NUM_THREADS says: chunks need one thread */
  tt_set_num_threads (1);
  TT_TEST_RUN (test_validator);
  TT_TEST_RUN (test_mlp_figures);
  TT_TEST_RUN (test_optimizers);
  TT_TEST_RUN (test_clip_keeps_whole);
  TT_TEST_RUN (test_blas_threads);
  TT_TEST_RUN (test_gradients_refused);
  TT_TEST_RUN (test_stored_plans);
  TT_TEST_RUN (test_models);
  return tt_test_summary ();
}
