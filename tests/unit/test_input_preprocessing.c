/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The input layer's normalization and standardization against a real
 * nntrainer (issue 16 item 6): the models of tests/interop/nntrainer/models
 * (input_normalization.ini, input_standardization.ini) with the weights
 * nntrainer initialized (recordings/NAME.init.bin), fed the recorded inputs at
 * batch 4 and at batch 1, give nntrainer's recorded outputs within 1e-5.
 * Then small cases computed by hand: normalization takes one min and max
 * over the whole batch (not per sample), standardization divides by
 * ||x - mean|| / N per sample, both together run normalization first, and
 * inputs without range give zeros (not NaN). Bytes (uint8 inputs), which
 * the engine normalizes while converting them, give the very floats that
 * the same values given as floats do.
 *
 * The weights are read from the recorded BIN as its first W floats and
 * imported (tt_model_import_weights): what is tested here is the
 * preprocessing, not the BIN's size rules (tests/interop checks those).
 *
 * usage: test_input_preprocessing SOURCE_ROOT
 */
#include "tt_engine.h"
#include "tt_test.h"

#include <math.h>
#include <string.h>

static const char *source_root = ".";

static float *
read_floats (const char *name, size_t *count)
{
  char path[2048];
  snprintf (path, sizeof path,
      "%s/tests/interop/nntrainer/recordings/%s", source_root, name);
  size_t len = 0;
  char *data = tt_test_read_file (path, &len);
  if (!data)
    printf ("cannot read %s\n", path);
  *count = data ? len / sizeof (float) : 0;
  return (float *) data;
}

/* Largest |a - b| over n values (NaN counts as infinitely far). */
static double
max_diff (const float *a, const float *b, size_t n)
{
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs ((double) a[i] - (double) b[i]);
    if (!(d <= worst))
      worst = isnan (d) ? INFINITY : d;
  }
  return worst;
}

/* The interop model NAME compiled at batch_size, nntrainer's initial
 * weights in it; NULL (after a failed CHECK) if anything fails. */
static tt_model *
open_recorded (const char *name, uint32_t batch_size)
{
  char path[2048];
  tt_error err;
  snprintf (path, sizeof path, "%s/tests/interop/nntrainer/models/%s.ini",
      source_root, name);
  tt_model *m = tt_model_load_ini (path, &err);
  CHECK (m != NULL, "%s: %s", path, err.message);
  if (!m)
    return NULL;
  tt_status st = tt_model_set_batch_size (m, batch_size, &err);
  if (!st)
    st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s at batch %u: %s", name, batch_size, err.message);
  if (st) {
    tt_model_free (m);
    return NULL;
  }
  char bin[256];
  snprintf (bin, sizeof bin, "%s.init.bin", name);
  size_t have = 0;
  float *w = read_floats (bin, &have);
  const size_t need = tt_model_weight_floats (m);
  CHECK (w && have >= need, "%s: %zu floats, the model has %zu", bin, have,
      need);
  st = w && have >= need ? tt_model_import_weights (m, w, need, &err) :
      TT_ERR_INVALID;
  free (w);
  if (st) {
    CHECK (st == TT_OK, "%s: import: %s", name, err.message);
    tt_model_free (m);
    return NULL;
  }
  return m;
}

/* Runs n samples of in through m (eval) and compares the output with
 * want; returns the largest difference (INFINITY when it could not run). */
static double
run_and_compare (tt_model * m, uint32_t n, const float *in, const float *want,
    size_t want_count)
{
  tt_error err;
  const void *inputs[1] = { in };
  const tt_dtype types[1] = { TT_DTYPE_FLOAT32 };
  tt_batch_result r;
  tt_status st = tt_model_eval_batch (m, n, inputs, types, NULL, &r, &err);
  CHECK (st == TT_OK, "eval at %u: %s", n, err.message);
  if (st)
    return INFINITY;
  tt_shape s = tt_model_output_shape (m);
  const size_t out = (size_t) n * s.channel * s.height * s.width;
  CHECK (out == want_count, "output has %zu values, the recording %zu", out,
      want_count);
  return out == want_count ? max_diff (tt_model_output (m), want, out) :
      INFINITY;
}

static void
recorded_case (const char *name)
{
  char file[256];
  size_t n_in = 0, n_b4 = 0, n_b1 = 0;
  snprintf (file, sizeof file, "%s.input.f32", name);
  float *in = read_floats (file, &n_in);
  snprintf (file, sizeof file, "%s.init.out.b4.f32", name);
  float *b4 = read_floats (file, &n_b4);
  snprintf (file, sizeof file, "%s.init.out.b1.f32", name);
  float *b1 = read_floats (file, &n_b1);
  CHECK (in && b4 && b1, "%s: recordings missing", name);
  if (in && b4 && b1) {
    /* batch 4, as nntrainer's inference (batch 4) */
    tt_model *m = open_recorded (name, 4);
    if (m) {
      double d = run_and_compare (m, 4, in, b4, n_b4);
      printf ("%s: batch 4: max |ours - nntrainer| = %.3g\n", name, d);
      CHECK (d <= 1e-5, "%s batch 4: off by %g", name, d);
      /* a batch-4 model fed one sample normalizes it alone, as nntrainer
       * at batch 1 */
      d = run_and_compare (m, 1, in, b1, n_b1);
      printf ("%s: 1 sample in a batch-4 model: max diff = %.3g\n", name, d);
      CHECK (d <= 1e-5, "%s 1 of 4: off by %g", name, d);
      tt_model_free (m);
    }
    /* batch 1, as nntrainer's inference (batch 1) */
    m = open_recorded (name, 1);
    if (m) {
      double d = run_and_compare (m, 1, in, b1, n_b1);
      printf ("%s: batch 1: max |ours - nntrainer| = %.3g\n", name, d);
      CHECK (d <= 1e-5, "%s batch 1: off by %g", name, d);
      tt_model_free (m);
    }
  }
  free (in);
  free (b4);
  free (b1);
}

static void
test_nntrainer_normalization (void)
{
  recorded_case ("input_normalization");
}

static void
test_nntrainer_standardization (void)
{
  recorded_case ("input_standardization");
}

/* ---- hand-computed cases ---------------------------------------------- */

/* input 1:1:3 -> fully_connected 3 with identity weights and zero bias:
 * the model's output is the input layer's output. */
static tt_model *
open_identity (const char *keys, uint32_t batch)
{
  char text[1024];
  snprintf (text, sizeof text,
      "[Model]\ntype = NeuralNetwork\nbatch_size = %u\nloss = mse\n"
      "[Optimizer]\ntype = sgd\nlearning_rate = 0.1\n"
      "[in]\ntype = input\ninput_shape = 1:1:3\n%s\n"
      "[fc]\ntype = fully_connected\nunit = 3\n", batch, keys);
  tt_error err;
  tt_model *m = tt_model_load_ini_text (text, strlen (text), "identity",
      &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return NULL;
  tt_status st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s", err.message);
  static const float w[12] = { 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0 };
  if (!st) {
    CHECK (tt_model_weight_floats (m) == 12, "%zu weights",
        tt_model_weight_floats (m));
    st = tt_model_import_weights (m, w, 12, &err);
    CHECK (st == TT_OK, "%s", err.message);
  }
  if (st) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

/* The preprocessed values of n samples of 3 values each. */
static void
expect (const char *keys, uint32_t n, const float *in, const float *want,
    const char *what)
{
  tt_model *m = open_identity (keys, n);
  if (!m)
    return;
  double d = run_and_compare (m, n, in, want, (size_t) n * 3);
  CHECK (d <= 1e-6, "%s: off by %g", what, d);
  const float *out = tt_model_output (m);
  for (uint32_t i = 0; i < n * 3; i++)
    CHECK (isfinite (out[i]), "%s: value %u is %g", what, i, out[i]);
  tt_model_free (m);
}

static void
test_normalization_whole_batch (void)
{
  /* min 0 and max 8 over both samples; per sample both would be 0, .5, 1 */
  const float in[6] = { 0, 1, 2, 4, 6, 8 };
  const float want[6] = { 0, 0.125f, 0.25f, 0.5f, 0.75f, 1 };
  expect ("normalization = true", 2, in, want, "batch-wide min-max");
  /* one sample alone: its own min-max */
  const float one_want[3] = { 0, 0.5f, 1 };
  expect ("normalization = true", 1, in + 3, one_want, "batch of one");
  /* a constant sample next to another is rescaled with the batch's range */
  const float mixed[6] = { 3, 3, 3, 0, 3, 6 };
  const float mixed_want[6] = { 0.5f, 0.5f, 0.5f, 0, 0.5f, 1 };
  expect ("normalization = true", 2, mixed, mixed_want, "constant sample");
}

static void
test_normalization_constant (void)
{
  const float in[6] = { 5, 5, 5, 5, 5, 5 };
  const float want[6] = { 0 };
  expect ("normalization = true", 2, in, want, "constant batch");
}

static void
test_standardization_per_sample (void)
{
  /* mean 2, x - mean = -1, 0, 1, ||.|| / 3 = sqrt (2) / 3: +-3 / sqrt (2);
   * the second sample (x 10) gives the same: per sample */
  const float s = (float) (3.0 / sqrt (2.0));
  const float in[6] = { 1, 2, 3, 10, 20, 30 };
  const float want[6] = { -s, 0, s, -s, 0, s };
  expect ("standardization = true", 2, in, want, "||x - mean|| / N");
  /* not the standard deviation's version (+-1.2247) */
  const float odd[3] = { 0, 0, 3 };
  /* mean 1, x - mean = -1, -1, 2, ||.|| = sqrt (6), / 3 */
  const float k = (float) (3.0 / sqrt (6.0));
  const float odd_want[3] = { -k, -k, 2 * k };
  expect ("standardization = true", 1, odd, odd_want, "uneven sample");
}

static void
test_standardization_constant (void)
{
  /* nntrainer divides 0 by 0 here; we give zeros, and the other sample of
   * the batch is unaffected */
  const float s = (float) (3.0 / sqrt (2.0));
  const float in[6] = { 7, 7, 7, -1, 0, 1 };
  const float want[6] = { 0, 0, 0, -s, 0, s };
  expect ("standardization = true", 2, in, want, "constant sample");
}

static void
test_both (void)
{
  /* nntrainer's order: normalization (0, .125, .25 and .5, .75, 1) and
   * then standardization of each sample */
  const float s = (float) (3.0 / sqrt (2.0));
  const float in[6] = { 0, 1, 2, 4, 6, 8 };
  const float want[6] = { -s, 0, s, -s, 0, s };
  expect ("normalization = true\nstandardization = true", 2, in, want, "both");
}

/* bytes and the same values as floats: the same output, bit for bit */
static void
bytes_as_floats (const char *keys, uint32_t n, const uint8_t * bytes,
    const char *what)
{
  tt_model *m = open_identity (keys, n);
  if (!m)
    return;
  float values[6], from_floats[6];
  for (uint32_t i = 0; i < n * 3; i++)
    values[i] = bytes[i];
  tt_error err;
  tt_batch_result r;
  const tt_dtype as_floats = TT_DTYPE_FLOAT32, as_bytes = TT_DTYPE_UINT8;
  const void *in_floats[1] = { values }, *in_bytes[1] = { bytes };
  tt_status st = tt_model_eval_batch (m, n, in_floats, &as_floats, NULL, &r,
      &err);
  CHECK (st == TT_OK, "%s: %s", what, err.message);
  memcpy (from_floats, tt_model_output (m), n * 3 * sizeof (float));
  st = tt_model_eval_batch (m, n, in_bytes, &as_bytes, NULL, &r, &err);
  CHECK (st == TT_OK, "%s: %s", what, err.message);
  const float *out = tt_model_output (m);
  for (uint32_t i = 0; i < n * 3; i++)
    CHECK (!memcmp (&out[i], &from_floats[i], sizeof (float)),
        "%s: value %u is %.9g from bytes, %.9g from floats", what, i,
        out[i], from_floats[i]);
  tt_model_free (m);
}

static void
test_bytes (void)
{
  const uint8_t spread[6] = { 7, 200, 13, 255, 0, 90 };
  const uint8_t narrow[6] = { 101, 102, 103, 104, 105, 106 };
  const uint8_t constant[6] = { 9, 9, 9, 9, 9, 9 };
  const char *keys[] = { "normalization = true", "standardization = true",
    "normalization = true\nstandardization = true", ""
  };
  for (int k = 0; k < 4; k++) {
    bytes_as_floats (keys[k], 2, spread, keys[k]);
    bytes_as_floats (keys[k], 2, narrow, keys[k]);
    bytes_as_floats (keys[k], 2, constant, keys[k]);
    bytes_as_floats (keys[k], 1, spread + 3, keys[k]);
  }
}

/* A batch large enough for the byte feed's conversion to be split over
 * 2 threads (layer_input.c): bytes and floats give the same output, bit
 * for bit. The fully connected layer, the same in both, is too small to
 * be split itself. */
static void
test_bytes_threads (void)
{
  enum
  { BATCH = 64, PER = 28 * 28 };
  const char *text = "[Model]\ntype = NeuralNetwork\nbatch_size = 64\n"
      "loss = mse\n[Optimizer]\ntype = sgd\nlearning_rate = 0.1\n"
      "[in]\ntype = input\ninput_shape = 1:28:28\nnormalization = true\n"
      "[fc]\ntype = fully_connected\nunit = 3\n";
  tt_error err;
  tt_model *m = tt_model_load_ini_text (text, strlen (text), "bytes", &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return;
  tt_status st = tt_model_set_threads (m, 2, &err);
  if (!st)
    st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s", err.message);
  static uint8_t bytes[BATCH * PER];
  static float values[BATCH * PER], from_floats[BATCH * 3];
  for (size_t i = 0; i < BATCH * PER; i++) {
    bytes[i] = (uint8_t) ((i * 2654435761u) >> 24);
    values[i] = bytes[i];
  }
  const tt_dtype as_floats = TT_DTYPE_FLOAT32, as_bytes = TT_DTYPE_UINT8;
  const void *in_floats[1] = { values }, *in_bytes[1] = { bytes };
  tt_batch_result r;
  for (int round = 0; !st && round < 3; round++) {
    st = tt_model_eval_batch (m, BATCH, in_floats, &as_floats, NULL, &r, &err);
    CHECK (st == TT_OK, "%s", err.message);
    memcpy (from_floats, tt_model_output (m), sizeof from_floats);
    if (!st)
      st = tt_model_eval_batch (m, BATCH, in_bytes, &as_bytes, NULL, &r, &err);
    CHECK (st == TT_OK, "%s", err.message);
    if (!st)
      CHECK (!memcmp (tt_model_output (m), from_floats, sizeof from_floats),
          "round %d: 2 threads, bytes and floats differ", round);
  }
  tt_model_free (m);
}

int
main (int argc, char **argv)
{
  if (argc > 1)
    source_root = argv[1];
  TT_TEST_RUN (test_nntrainer_normalization);
  TT_TEST_RUN (test_nntrainer_standardization);
  TT_TEST_RUN (test_normalization_whole_batch);
  TT_TEST_RUN (test_normalization_constant);
  TT_TEST_RUN (test_standardization_per_sample);
  TT_TEST_RUN (test_standardization_constant);
  TT_TEST_RUN (test_both);
  TT_TEST_RUN (test_bytes);
  TT_TEST_RUN (test_bytes_threads);
  return tt_test_summary ();
}
