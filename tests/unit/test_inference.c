/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inference-only models (tt_model_set_inference): for every test model,
 * trained a few steps so weights, moments and batch-norm statistics are
 * not their initial values,
 *   - the inference pool is smaller than the training pool (printed);
 *   - its outputs equal the training model's evaluation bit for bit, with
 *     weights from a BIN holding adam moments, from a bundle (read and in
 *     place), and handed over with export/import;
 *   - a planned and a naive inference layout agree bit for bit;
 *   - at batch 1 it agrees with the training model's batch evaluation;
 *   - its optimized INI loads back as a stored inference plan, while a
 *     training compile of the same file plans afresh;
 *   - training it fails with a clear message; a BIN it saves (no moments)
 *     loads back into a training model.
 */
#include "tt_engine.h"
#include "tt_bundle.h"
#include "tt_test.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>

#define BATCH 4

typedef struct
{
  float *in[8];
  const void *inputs[8];
  tt_dtype types[8];
  float *labels;
  uint32_t n_inputs;
} batch_data;

static uint64_t rng_state = 0x1234567;

static float
rnd (void)
{
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (float) ((rng_state >> 40) & 0xffff) / 65536.0f;
}

static void
batch_make (tt_model * m, uint32_t n, batch_data * b)
{
  memset (b, 0, sizeof *b);
  b->n_inputs = tt_model_num_inputs (m);
  for (uint32_t i = 0; i < b->n_inputs; i++) {
    tt_shape s;
    tt_model_input_shape (m, i, &s);
    size_t count = (size_t) n * s.channel * s.height * s.width;
    b->in[i] = malloc (count * sizeof (float));
    for (size_t k = 0; k < count; k++)
      b->in[i][k] = rnd ();
    /* every sample holds the least and the largest value rnd () gives, so
     * that an input layer's normalization (one min and max over the whole
     * batch, as nntrainer's) gives a sample the same values at any batch */
    const size_t per = count / n;
    for (uint32_t k = 0; k < n && per >= 2; k++) {
      b->in[i][k * per] = 0.0f;
      b->in[i][k * per + 1] = 65535.0f / 65536.0f;
    }
    b->inputs[i] = b->in[i];
    b->types[i] = TT_DTYPE_FLOAT32;
  }
  tt_shape ls = tt_model_label_shape (m);
  size_t per = (size_t) ls.channel * ls.height * ls.width;
  b->labels = calloc ((size_t) n * per, sizeof (float));
  for (uint32_t k = 0; k < n; k++)
    b->labels[k * per + (k * 7) % per] = 1.0f;
}

static void
batch_free (batch_data * b)
{
  for (uint32_t i = 0; i < b->n_inputs; i++)
    free (b->in[i]);
  free (b->labels);
}

static tt_model *
open_model (const char *path, uint32_t batch, bool inference, tt_plan_mode mode)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (path, &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 7);
  tt_status st;
  if ((st = tt_model_set_batch_size (m, batch, &err)) ||
      (st = tt_model_set_inference (m, inference, &err)) ||
      (st = tt_model_set_plan_mode (m, mode, &err)) ||
      (st = tt_model_compile (m, &err))) {
    CHECK (st == TT_OK, "%s", err.message);
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static size_t
output_floats (const tt_model * m, uint32_t n)
{
  tt_shape s = tt_model_output_shape (m);
  return (size_t) (n) * s.channel * s.height * s.width;
}

/* Evaluates b on m and returns a copy of the output. */
static float *
eval_copy (tt_model * m, uint32_t n, const batch_data * b)
{
  tt_error err;
  tt_status st = tt_model_eval_batch (m, n, b->inputs, b->types, NULL, NULL,
      &err);
  CHECK (st == TT_OK, "%s", err.message);
  if (st)
    return NULL;
  size_t k = output_floats (m, n);
  float *out = malloc (k * sizeof *out);
  memcpy (out, tt_model_output (m), k * sizeof *out);
  return out;
}

static bool
same_bits (const float *a, const float *b, size_t n)
{
  return a && b && memcmp (a, b, n * sizeof *a) == 0;
}

static double
max_rel_diff (const float *a, const float *b, size_t n)
{
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs ((double) a[i] - b[i]) / (fabs ((double) b[i]) + 1e-3);
    worst = d > worst ? d : worst;
  }
  return worst;
}

static void
check_model (const char *root, const char *name)
{
  char ini[2048], bin[2048], ttb[2048], opt[2048], infbin[2048];
  snprintf (ini, sizeof ini, "%s/tests/models/%s.ini", root, name);
  snprintf (bin, sizeof bin, "%s", tt_test_write_file ("w.bin", "", 0));
  snprintf (ttb, sizeof ttb, "%s", tt_test_write_file ("w.ttb", "", 0));
  snprintf (opt, sizeof opt, "%s", tt_test_write_file ("inf.opt.ini", "", 0));
  snprintf (infbin, sizeof infbin, "%s", tt_test_write_file ("inf.bin", "", 0));
  tt_error err;

  tt_model *train = open_model (ini, BATCH, false, TT_PLAN_AUTO);
  if (!train)
    return;
  batch_data b;
  batch_make (train, BATCH, &b);
  for (int step = 0; step < 3; step++)
    CHECK (tt_model_train_batch (train, BATCH, b.inputs, b.types, b.labels,
            NULL, &err) == TT_OK, "%s: %s", name, err.message);
  CHECK (tt_model_save (train, bin, &err) == TT_OK, "%s", err.message);
  CHECK (tt_model_save (train, ttb, &err) == TT_OK, "%s", err.message);
  float *want = eval_copy (train, BATCH, &b);
  const size_t nout = output_floats (train, BATCH);

  /* the same batch size, weights from the BIN with its moments */
  tt_model *inf = open_model (ini, BATCH, true, TT_PLAN_AUTO);
  if (inf) {
    tt_memory_info mt, mi;
    tt_model_memory_info (train, &mt);
    tt_model_memory_info (inf, &mi);
    printf ("%-16s batch %d: training pool %9zu, inference pool %9zu "
        "(%.1f%%), weights %zu\n", name, BATCH, mt.pool_bytes, mi.pool_bytes,
        100.0 * mi.pool_bytes / mt.pool_bytes, mi.weight_bytes);
    CHECK (mi.pool_bytes < mt.pool_bytes, "%s: inference pool %zu, "
        "training %zu", name, mi.pool_bytes, mt.pool_bytes);
    CHECK (mi.weight_bytes == mt.weight_bytes, "%s", name);
    CHECK (tt_model_is_inference (inf) && !tt_model_is_inference (train),
        "%s", name);
    CHECK (tt_model_load_bin (inf, bin, &err) == TT_OK, "%s: %s", name,
        err.message);
    float *got = eval_copy (inf, BATCH, &b);
    CHECK (same_bits (got, want, nout), "%s: inference output differs from "
        "the training model's evaluation (max rel %g)", name,
        got ? max_rel_diff (got, want, nout) : -1.0);
    free (got);

    /* training it is refused, with a reason */
    tt_status st = tt_model_train_batch (inf, BATCH, b.inputs, b.types,
        b.labels, NULL, &err);
    CHECK (st == TT_ERR_STATE && strstr (err.message, "inference only"),
        "%s: %s", name, err.message);

    /* its BIN holds weights and counters, no moments, and trains on */
    CHECK (tt_model_save (inf, infbin, &err) == TT_OK, "%s", err.message);
    tt_model *back = open_model (ini, BATCH, false, TT_PLAN_AUTO);
    if (back) {
      CHECK (tt_model_load_bin (back, infbin, &err) == TT_OK, "%s: %s", name,
          err.message);
      float *again = eval_copy (back, BATCH, &b);
      CHECK (same_bits (again, want, nout), "%s: weights saved by the "
          "inference model differ", name);
      free (again);
      CHECK (tt_model_train_batch (back, BATCH, b.inputs, b.types, b.labels,
              NULL, &err) == TT_OK, "%s", err.message);
      tt_model_free (back);
    }

    /* its optimized INI: a stored inference plan, ignored for training */
    CHECK (tt_model_save_plan_ini (inf, opt, &err) == TT_OK, "%s", err.message);
    tt_model *stored = open_model (opt, BATCH, true, TT_PLAN_AUTO);
    tt_model *other = open_model (opt, BATCH, false, TT_PLAN_AUTO);
    if (stored && other) {
      tt_plan_info ps, po;
      tt_model_plan_info (stored, &ps);
      tt_model_plan_info (other, &po);
      CHECK (ps.from_stored_plan && ps.pool_bytes == mi.pool_bytes,
          "%s: stored inference plan not used (pool %" PRIu64 ")", name,
          ps.pool_bytes);
      CHECK (!po.from_stored_plan && po.pool_bytes == mt.pool_bytes,
          "%s: a training compile used the inference plan", name);
      CHECK (tt_model_load_bin (stored, bin, &err) == TT_OK, "%s", err.message);
      float *s = eval_copy (stored, BATCH, &b);
      CHECK (same_bits (s, want, nout), "%s: stored inference plan output "
          "differs", name);
      free (s);
    }
    tt_model_free (stored);
    tt_model_free (other);
    tt_model_free (inf);
  }

  /* naive inference layout, weights handed over by export/import */
  tt_model *naive = open_model (ini, BATCH, true, TT_PLAN_NAIVE);
  if (naive) {
    CHECK (tt_model_weight_signature (naive) ==
        tt_model_weight_signature (train), "%s: weight signatures differ",
        name);
    size_t nw = tt_model_weight_floats (train);
    CHECK (nw == tt_model_weight_floats (naive) && nw > 0, "%s", name);
    float *w = malloc (nw * sizeof *w);
    CHECK (tt_model_export_weights (train, w, nw, &err) == TT_OK, "%s",
        err.message);
    CHECK (tt_model_import_weights (naive, w, nw, &err) == TT_OK, "%s",
        err.message);
    CHECK (tt_model_import_weights (naive, w, nw - 1, &err) ==
        TT_ERR_INVALID && strstr (err.message, "weight floats"), "%s: %s",
        name, err.message);
    float *got = eval_copy (naive, BATCH, &b);
    CHECK (same_bits (got, want, nout), "%s: naive inference differs", name);
    free (got);
    free (w);
    tt_model_free (naive);
  }

  /* from the bundle: copied and used in place */
  for (int mode = 0; mode < 2; mode++) {
    tt_bundle_load_options lo = { 0 };
    lo.inference = true;
    lo.mode = mode ? TT_BUNDLE_IN_PLACE : TT_BUNDLE_READ;
    tt_model *bm = tt_bundle_load (ttb, &lo, &err);
    CHECK (bm != NULL, "%s: %s", name, err.message);
    if (!bm)
      continue;
    float *got = eval_copy (bm, BATCH, &b);
    CHECK (same_bits (got, want, nout), "%s: bundle (%s) inference differs",
        name, mode ? "in place" : "read");
    free (got);
    tt_model_free (bm);
  }

  /* batch 1, sample by sample, against the batch evaluation */
  tt_model *one = open_model (ini, 1, true, TT_PLAN_AUTO);
  if (one) {
    CHECK (tt_model_load_bin (one, bin, &err) == TT_OK, "%s", err.message);
    const size_t per = output_floats (one, 1);
    double worst = 0;
    for (uint32_t k = 0; k < BATCH; k++) {
      batch_data s = { 0 };
      s.n_inputs = b.n_inputs;
      for (uint32_t i = 0; i < b.n_inputs; i++) {
        tt_shape sh;
        tt_model_input_shape (one, i, &sh);
        s.inputs[i] =
            b.in[i] + (size_t) (k) * sh.channel * sh.height * sh.width;
        s.types[i] = TT_DTYPE_FLOAT32;
      }
      float *got = eval_copy (one, 1, &s);
      if (got) {
        double d = max_rel_diff (got, want + k * per, per);
        worst = d > worst ? d : worst;
      }
      free (got);
    }
    CHECK (worst < 1e-4, "%s: batch 1 differs from the batch by %g", name,
        worst);
    tt_model_free (one);
  }

  free (want);
  batch_free (&b);
  tt_model_free (train);
}

static const char *inf_root = ".";

/* one case per test model */
static void
test_fmnist_mlp (void)
{
  check_model (inf_root, "fmnist_mlp");
}

static void
test_fmnist_cnn (void)
{
  check_model (inf_root, "fmnist_cnn");
}

static void
test_branchy_bn (void)
{
  check_model (inf_root, "branchy_bn");
}

static void
test_resnet_bn (void)
{
  check_model (inf_root, "resnet_bn");
}

static void
test_inception (void)
{
  check_model (inf_root, "inception");
}

static void
test_transfer_frozen (void)
{
  check_model (inf_root, "transfer_frozen");
}

static void
test_sensor_conv1d (void)
{
  check_model (inf_root, "sensor_conv1d");
}

static void
test_sensor_lstm (void)
{
  check_model (inf_root, "sensor_lstm");
}

static void
test_sensor_gru (void)
{
  check_model (inf_root, "sensor_gru");
}

/* choosing inference after compiling is refused */
static void
test_inference_after_compile (void)
{
  char ini[2048];
  snprintf (ini, sizeof ini, "%s/tests/models/fmnist_mlp.ini", inf_root);
  tt_model *m = open_model (ini, 2, false, TT_PLAN_AUTO);
  if (m) {
    tt_error err;
    CHECK (tt_model_set_inference (m, true, &err) == TT_ERR_STATE, "%s",
        err.message);
    tt_model_free (m);
  }
}

int
main (int argc, char **argv)
{
  if (argc > 1)
    inf_root = argv[1];
  TT_TEST_RUN (test_fmnist_mlp);
  TT_TEST_RUN (test_fmnist_cnn);
  TT_TEST_RUN (test_branchy_bn);
  TT_TEST_RUN (test_resnet_bn);
  TT_TEST_RUN (test_inception);
  TT_TEST_RUN (test_transfer_frozen);
  TT_TEST_RUN (test_sensor_conv1d);
  TT_TEST_RUN (test_sensor_lstm);
  TT_TEST_RUN (test_sensor_gru);
  TT_TEST_RUN (test_inference_after_compile);
  return tt_test_summary ();
}
