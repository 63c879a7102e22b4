/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The model zoo (tests/models/zoo_*.ini, written by scripts/gen-zoo.py):
 *   plan   each model's pool, planned as `tensor-trainer plan` plans it
 *          (the thorough offset search), is its lower bound;
 *          Multiply-adds per sample: the MLP's by hand, the zoo's against
 *          the figures their authors publish;
 *   learns each model memorizes a few fixed batches: over the epochs its
 *          mean loss falls to at most half of the first epoch's.
 *
 * usage: test_zoo SOURCE_ROOT plan|learns
 */
#include "tt_engine.h"
#include "tt_test.h"

#include <inttypes.h>
#include <math.h>

typedef struct
{
  const char *ini;
  uint32_t batch;               /* 0: the INI's */
  int batches, epochs;
} zoo_model;

static const zoo_model zoo[] = {
  {"zoo_mobilenet_v2.ini", 8, 2, 12},
  {"zoo_ds_cnn.ini", 16, 2, 40},
  {"zoo_vww_mobilenet_v1.ini", 8, 2, 12},
  {"zoo_resnet8.ini", 16, 2, 12},
  {"zoo_resnet18.ini", 4, 2, 10},
  {"zoo_autoencoder.ini", 16, 2, 30},
  {"zoo_transformer.ini", 16, 2, 80},
};

static const char *root;

static tt_model *
zoo_open (const zoo_model * z, bool thorough)
{
  char path[2048];
  snprintf (path, sizeof path, "%s/tests/models/%s", root, z->ini);
  tt_open_options o = { 0 };
  o.batch_size = z->batch;
  o.plan_mode = TT_PLAN_REPLAN;
  o.plan_thorough = thorough;
  o.has_seed = true;
  o.seed = 7;
  tt_error err;
  tt_model *m = tt_model_open (path, &o, NULL, &err);
  CHECK (m != NULL, "%s: %s", z->ini, m ? "" : err.message);
  return m;
}

static void
test_plan_at_bound (void)
{
  for (size_t i = 0; i < sizeof zoo / sizeof zoo[0]; i++) {
    tt_model *m = zoo_open (&zoo[i], true);
    if (!m)
      continue;
    tt_plan_info p;
    tt_model_plan_info (m, &p);
    printf ("%-26s pool %10" PRIu64 "  bound %10" PRIu64 "  (%.4f)\n",
        zoo[i].ini, p.pool_bytes, p.lower_bound,
        (double) p.pool_bytes / (double) p.lower_bound);
    CHECK (p.pool_bytes == p.lower_bound, "%s: pool %" PRIu64 " > bound %"
        PRIu64, zoo[i].ini, p.pool_bytes, p.lower_bound);
    tt_model_free (m);
  }
}

/* tensor-trainer info's multiply-adds */
static void
test_multiply_adds (void)
{
  char path[2048];
  tt_error err;
  uint64_t fwd, bwd;
  snprintf (path, sizeof path, "%s/tests/models/fmnist_mlp.ini", root);
  tt_model *m = tt_model_open (path, NULL, NULL, &err);
  CHECK (m != NULL, "fmnist_mlp: %s", m ? "" : err.message);
  if (m) {
    tt_model_multiply_adds (m, &fwd, &bwd);
    /* 784x256, 256x128, 128x10; backward: every weight gradient, and the
     * input derivatives of all but the first layer */
    const uint64_t f = 784 * 256 + 256 * 128 + 128 * 10;
    CHECK (fwd == f && bwd == f + 256 * 128 + 128 * 10,
        "fmnist_mlp: %" PRIu64 " forward, %" PRIu64 " backward", fwd, bwd);
    tt_model_free (m);
  }
  /* by hand, tests/models/transformer_encoder.ini on 6 tokens: the input
   * projection 4x8, the four 8x8 projections of the attention, its two
   * heads' scores and sums (2 x 6 x 6 x (4 + 4)), the feed-forward 8x16
   * and 16x8, each per token, and the classifier 48x5 */
  snprintf (path, sizeof path, "%s/tests/models/transformer_encoder.ini", root);
  m = tt_model_open (path, NULL, NULL, &err);
  CHECK (m != NULL, "transformer_encoder: %s", m ? "" : err.message);
  if (m) {
    tt_model_multiply_adds (m, &fwd, &bwd);
    const uint64_t want = 6 * 4 * 8 + 4 * 6 * 8 * 8 + 2 * 6 * 6 * 8 +
        2 * 6 * 8 * 16 + 48 * 5;
    CHECK (fwd == want, "transformer_encoder: %" PRIu64 " forward, not %"
        PRIu64, fwd, want);
    tt_model_free (m);
  }
  /* published: MobileNetV2 0.35 is 59.2 M at 224x224 with 1,000 classes,
   * 1.28 M of them the classifier, the rest scaling with the pixels; MLPerf
   * Tiny's DS-CNN 2.7 M (5.4 M operations), visual wake words 7.49 M,
   * ResNet-8 12.5 M, the autoencoder 0.264 M; ResNet-18 with the CIFAR
   * stem 0.56 G */
  static const struct
  {
    const char *ini;
    double millions;
  } published[] = {
    {"zoo_mobilenet_v2.ini", (59.2 - 1.28) * 96 * 96 / (224 * 224)},
    {"zoo_ds_cnn.ini", 2.7},
    {"zoo_vww_mobilenet_v1.ini", 7.49},
    {"zoo_resnet8.ini", 12.5},
    {"zoo_resnet18.ini", 556},
    {"zoo_autoencoder.ini", 0.264},
  };
  for (size_t i = 0; i < sizeof published / sizeof published[0]; i++) {
    snprintf (path, sizeof path, "%s/tests/models/%s", root, published[i].ini);
    m = tt_model_open (path, NULL, NULL, &err);
    CHECK (m != NULL, "%s: %s", published[i].ini, m ? "" : err.message);
    if (!m)
      continue;
    tt_model_multiply_adds (m, &fwd, &bwd);
    const double got = fwd / 1e6;
    printf ("%-26s %.3f M multiply-adds forward (published %.3f M), "
        "%.3f M backward\n", published[i].ini, got, published[i].millions,
        bwd / 1e6);
    CHECK (fabs (got - published[i].millions) <= 0.02 * published[i].millions,
        "%s: %.3f M", published[i].ini, got);
    /* every layer trains, the first takes no input derivative */
    CHECK (bwd > fwd && bwd < 2 * fwd, "%s: backward %" PRIu64,
        published[i].ini, bwd);
    tt_model_free (m);
  }
}

/* xorshift32, so the data are the same on every platform */
static float
zoo_draw (uint32_t * s)
{
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return (float) (*s >> 8) / 16777216.0f * 2.0f - 1.0f;
}

static void
test_learns (void)
{
  for (size_t i = 0; i < sizeof zoo / sizeof zoo[0]; i++) {
    const zoo_model *z = &zoo[i];
    tt_model *m = zoo_open (z, false);
    if (!m)
      continue;
    const uint32_t batch = tt_model_batch_size (m);
    tt_shape in, lb;
    tt_model_input_shape (m, 0, &in);
    lb = tt_model_label_shape (m);
    const size_t nx = (size_t) in.channel * in.height * in.width;
    const size_t nl = (size_t) lb.channel * lb.height * lb.width;
    const size_t samples = (size_t) batch * z->batches;
    float *x = malloc (samples * nx * sizeof *x);
    float *t = calloc (samples * nl, sizeof *t);
    uint32_t s = 0x2545F491u + (uint32_t) i;
    for (size_t j = 0; j < samples * nx; j++)
      x[j] = zoo_draw (&s);
    /* a reconstruction model (the label is as wide as the input) learns
     * its input; a classifier, a class per sample */
    const bool autoencoder = nl == nx;
    for (size_t k = 0; k < samples; k++) {
      if (autoencoder)
        memcpy (t + k * nl, x + k * nx, nx * sizeof *x);
      else
        t[k * nl + (k * 7 + 3) % nl] = 1.0f;
    }
    double first = 0, last = 0;
    bool ok = true;
    for (int e = 0; e < z->epochs && ok; e++) {
      double sum = 0;
      for (int b = 0; b < z->batches && ok; b++) {
        const void *inputs[1] = { x + (size_t) b * batch * nx };
        tt_batch_result r;
        tt_error err;
        ok = tt_model_train_batch (m, batch, inputs, NULL,
            t + (size_t) b * batch * nl, &r, &err) == TT_OK;
        CHECK (ok, "%s: %s", z->ini, ok ? "" : err.message);
        sum += r.loss;
      }
      const double mean = sum / z->batches;
      CHECK (isfinite (mean), "%s: epoch %d loss %g", z->ini, e + 1, mean);
      if (e == 0)
        first = mean;
      last = mean;
    }
    printf ("%-26s batch %3u  loss %.4f -> %.4f after %d epochs of %d "
        "batches\n", z->ini, batch, first, last, z->epochs, z->batches);
    CHECK (ok && last <= 0.5 * first, "%s: loss %.4f -> %.4f", z->ini, first,
        last);
    free (x);
    free (t);
    tt_model_free (m);
  }
}

int
main (int argc, char **argv)
{
  if (argc < 3) {
    fprintf (stderr, "usage: test_zoo SOURCE_ROOT plan|learns\n");
    return 2;
  }
  root = argv[1];
  if (!strcmp (argv[2], "plan")) {
    TT_TEST_RUN (test_plan_at_bound);
    TT_TEST_RUN (test_multiply_adds);
  } else
    TT_TEST_RUN (test_learns);
  return tt_test_summary ();
}
