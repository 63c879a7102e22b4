/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dynamic loss scaling (core/loss_scale.c, docs/precision.md) and the
 * precision override (tt_model_set_precision):
 * - a power-of-two scale that never overflows trains, in fp32, the same
 *   weights and Adam state bit for bit as no scaling (multiplying by 2^k
 *   and dividing it out is exact), with and without clip_grad_by_norm;
 *   the reference keeps its gradients whole and does the loss in the
 *   loss layer, as scaling does, so that only the scaling differs;
 * - an initial scale of 2^127 overflows the first steps: each is skipped
 *   (weights, Adam state and the iteration counter as before it), the
 *   scale halves each time, the skipped steps are counted, then training
 *   goes on and the loss falls;
 * - the scale doubles after the growth interval's good steps in a row,
 *   and the text saved with the model carries the scale reached;
 * - a half-precision activation type scales from 1 without the key, fp32
 *   with loss_scale = 1 does not scale;
 * - bad values of [Model] loss_scale and of the precision are refused,
 *   naming the key or the allowed values.
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "tt_test_hooks.h"
#include "train_steps.h"

#include <inttypes.h>
#include <math.h>

#define MLP_HEAD \
  "[Model]\ntype = NeuralNetwork\nbatch_size = 8\n"
#define MLP_BODY \
  "[Optimizer]\ntype = adam\nlearning_rate = 0.001\n" \
  "[input]\ntype = input\ninput_shape = 1:1:24\n" \
  "[hidden]\ntype = fully_connected\nunit = 32\nactivation = relu\n" \
  "[output]\ntype = fully_connected\nunit = 6\nactivation = softmax\n"

/* tt_plan_ini_text's text (len bytes, not NUL-terminated) as a string */
static char *
plan_text (tt_model * m, tt_error * err)
{
  char *text = NULL, *s = NULL;
  size_t len = 0;
  if (tt_plan_ini_text (m, &text, &len, err) == TT_OK && (s = malloc (len + 1))) {
    memcpy (s, text, len);
    s[len] = '\0';
  }
  free (text);
  return s;
}

static tt_model *
load (const char *name, const char *text, tt_error * err)
{
  return tt_model_load_ini_text (text, strlen (text), name, err);
}

/* loaded and compiled with seed 7; whole: the gradients kept whole and
 * the loss done by the loss layer (the path loss scaling takes) */
static tt_model *
open_model (const char *name, const char *text, bool whole,
    const char *precision)
{
  tt_error err;
  tt_model *m = load (name, text, &err);
  CHECK (m != NULL, "%s: %s", name, m ? "" : err.message);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 7);
  if (whole) {
    tt_model_set_loss_tail (m, false);
    CHECK (tt_model_keep_gradients (m, &err) == TT_OK, "%s", err.message);
  }
  if (precision)
    CHECK (tt_model_set_precision (m, precision, &err) == TT_OK, "%s: %s",
        name, err.message);
  if (tt_model_compile (m, &err)) {
    CHECK (false, "%s: compile: %s", name, err.message);
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static void
test_power_of_two_exact (void)
{
  static const struct
  {
    const char *name, *loss, *extra;
  } cases[] = {
    {"cross", "loss = cross\n", ""},
    {"mse", "loss = mse\n", ""},
    {"cross+clip", "loss = cross\n", "clip_grad_by_norm = 0.05\n"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char plain[2048], scaled[2048];
    snprintf (plain, sizeof plain, MLP_HEAD "%s%s" MLP_BODY, cases[c].loss,
        cases[c].extra);
    snprintf (scaled, sizeof scaled, MLP_HEAD "%s%sloss_scale = 1024\n"
        MLP_BODY, cases[c].loss, cases[c].extra);
    tt_model *a = open_model (cases[c].name, plain, true, NULL);
    tt_model *b = open_model (cases[c].name, scaled, false, NULL);
    if (!a || !b)
      goto next;
    CHECK (tt_model_loss_scale (a) == 0.0f, "%s: scaling without the key",
        cases[c].name);
    CHECK (tt_model_loss_scale (b) == 1024.0f, "%s: scale %g",
        cases[c].name, (double) tt_model_loss_scale (b));
    tt_test_train_steps (a, cases[c].name, 6, 64.0f);
    tt_test_train_steps (b, cases[c].name, 6, 64.0f);
    CHECK (tt_test_same_state (a, b, cases[c].name),
        "%s: loss_scale = 1024 changed the training", cases[c].name);
    CHECK (tt_model_skipped_steps (b) == 0 && tt_model_iteration (b) == 6 &&
        tt_model_loss_scale (b) == 1024.0f, "%s: skipped %" PRIu64
        " iteration %u scale %g", cases[c].name, tt_model_skipped_steps (b),
        tt_model_iteration (b), (double) tt_model_loss_scale (b));
  next:
    tt_model_free (a);
    tt_model_free (b);
  }
}

/* the model's weights and optimizer state, copied out */
static float *
snapshot (tt_model * m, size_t *n)
{
  uint32_t nr;
  int *r = tt_bin_regions (m, true, &nr);
  size_t total = 0;
  for (uint32_t i = 0; r && i < nr; i++)
    total += r[i] >= 0 ? m->tensors[r[i]].count : 0;
  float *s = malloc (total * sizeof *s + 1);
  size_t at = 0;
  for (uint32_t i = 0; r && s && i < nr; i++)
    if (r[i] >= 0) {
      memcpy (s + at, m->tensors[r[i]].data,
          m->tensors[r[i]].count * sizeof *s);
      at += m->tensors[r[i]].count;
    }
  free (r);
  *n = total;
  return s;
}

static void
test_overflow_skips (void)
{
  /* 2^127: the largest power of two a float holds */
  tt_model *m = open_model ("overflow", MLP_HEAD "loss = cross\n"
      "loss_scale = 1.7014118346046923e38\n" MLP_BODY, false, NULL);
  if (!m)
    return;
  CHECK (tt_model_loss_scale (m) == ldexpf (1.0f, 127), "scale %g",
      (double) tt_model_loss_scale (m));
  const uint32_t batch = tt_model_batch_size (m);
  float x[8 * 24], t[8 * 6] = { 0 };
  for (size_t j = 0; j < sizeof x / sizeof x[0]; j++)
    x[j] = (float) ((j * 7919) % 255) / 16.0f;
  for (uint32_t b = 0; b < batch; b++)
    t[b * 6 + (b * 7u) % 6] = 1;
  const void *inputs[1] = { x };
  tt_error err;
  tt_batch_result r;
  uint64_t skipped = 0;
  double first_loss = NAN, last_loss = NAN;
  bool consistent = true;
  for (int s = 0; s < 200; s++) {
    size_t n0, n1;
    float *before = snapshot (m, &n0);
    const float scale = tt_model_loss_scale (m);
    const uint32_t it = tt_model_iteration (m);
    CHECK (tt_model_train_batch (m, batch, inputs, NULL, t, &r, &err) ==
        TT_OK, "step %d: %s", s, err.message);
    float *after = snapshot (m, &n1);
    if (r.skipped) {
      skipped++;
      /* nothing of the model moved, the scale halved */
      consistent &= n0 == n1 && !memcmp (before, after, n0 * sizeof *before)
          && tt_model_iteration (m) == it &&
          tt_model_loss_scale (m) == scale / 2;
      CHECK (isnan (first_loss), "step %d skipped after a good step", s);
    } else {
      consistent &= tt_model_iteration (m) == it + 1 &&
          tt_model_loss_scale (m) == scale &&
          memcmp (before, after, n0 * sizeof *before) != 0;
      if (isnan (first_loss))
        first_loss = r.loss;
      last_loss = r.loss;
    }
    free (before);
    free (after);
  }
  printf ("overflow: %" PRIu64 " steps skipped, scale now 2^%d, loss %.6f "
      "-> %.6f\n", skipped, (int) log2f (tt_model_loss_scale (m)),
      first_loss, last_loss);
  CHECK (consistent, "a skipped step changed the model, or a good one did "
      "not update it, or the scale did not halve");
  CHECK (skipped >= 1 && skipped == tt_model_skipped_steps (m),
      "skipped %" PRIu64 ", counted %" PRIu64, skipped,
      tt_model_skipped_steps (m));
  CHECK (tt_model_loss_scale (m) == ldexpf (1.0f, 127 - (int) skipped),
      "scale %g after %" PRIu64 " halvings", (double) tt_model_loss_scale (m),
      skipped);
  CHECK (tt_model_iteration (m) == 200 - skipped, "iteration %u",
      tt_model_iteration (m));
  CHECK (last_loss < 0.5 * first_loss, "the loss did not fall: %g -> %g",
      first_loss, last_loss);
  tt_model_free (m);
}

static void
test_growth (void)
{
  tt_error err;
  tt_model *m = load ("growth", MLP_HEAD "loss = cross\nloss_scale = 4\n"
      MLP_BODY, &err);
  CHECK (m != NULL, "%s", m ? "" : err.message);
  if (!m)
    return;
  tt_model_set_loss_scale_interval (m, 3);
  if (tt_model_compile (m, &err)) {
    CHECK (false, "%s", err.message);
    tt_model_free (m);
    return;
  }
  float scales[7];
  for (int s = 0; s < 7; s++) {
    tt_test_train_steps (m, "growth", 1, 64.0f);
    scales[s] = tt_model_loss_scale (m);
  }
  /* doubled at the 3rd and 6th good step */
  CHECK (scales[0] == 4 && scales[1] == 4 && scales[2] == 8 &&
      scales[3] == 8 && scales[4] == 8 && scales[5] == 16 && scales[6] == 16,
      "scales %g %g %g %g %g %g %g", (double) scales[0], (double) scales[1],
      (double) scales[2], (double) scales[3], (double) scales[4],
      (double) scales[5], (double) scales[6]);
  CHECK (tt_model_skipped_steps (m) == 0, "skipped");
  /* the text saved with the model (checkpoints, bundles, optimized INIs)
   * carries the scale reached, which a model loaded from it starts at */
  char *text = plan_text (m, &err);
  CHECK (text != NULL, "%s", err.message);
  CHECK (text && strstr (text, "loss_scale = 16   # the scale dynamic loss "
          "scaling reached (was: loss_scale = 4)\n"), "%s", text ? text : "");
  tt_model *again = text ? tt_model_load_ini_text (text, strlen (text),
      "again", &err) : NULL;
  CHECK (again && tt_model_loss_scale (again) == 16.0f, "reloaded: %s",
      again ? "" : err.message);
  if (again && tt_model_compile (again, &err) == TT_OK)
    CHECK (tt_model_loss_scale (again) == 16.0f, "compiled scale %g",
        (double) tt_model_loss_scale (again));
  tt_model_free (again);
  free (text);
  tt_model_free (m);
  /* a scale that never moved leaves the line as written */
  m = open_model ("still", MLP_HEAD "loss = cross\nloss_scale = 4\n" MLP_BODY,
      false, NULL);
  if (m && (text = plan_text (m, &err))) {
    CHECK (strstr (text, "\nloss_scale = 4\n") && !strstr (text,
            "scaling reached"), "%s", text);
    free (text);
  }
  tt_model_free (m);
}

static void
test_defaults (void)
{
  /* fp32, loss_scale = 1: no scaling (gradients as nntrainer's fp32) */
  tt_model *m = open_model ("one", MLP_HEAD "loss = cross\nloss_scale = 1\n"
      MLP_BODY, false, NULL);
  if (m)
    CHECK (tt_model_loss_scale (m) == 0.0f, "fp32 scale 1 scales");
  tt_model_free (m);
  /* half-precision activations without the key: off (derivatives stay
   * fp32 at every precision) */
  m = open_model ("bf16", MLP_HEAD "loss = cross\n" MLP_BODY, false, "bf16");
  if (m) {
    char buf[16];
    CHECK (tt_model_loss_scale (m) == 0.0f, "bf16 scale %g",
        (double) tt_model_loss_scale (m));
    CHECK (!strcmp (tt_model_precision (m, buf, sizeof buf), "FP32-BF16"),
        "precision %s", buf);
    /* training goes on unscaled */
    tt_test_train_steps (m, "bf16", 3, 64.0f);
    CHECK (tt_model_iteration (m) == 3, "iteration %u", tt_model_iteration (m));
  }
  tt_model_free (m);
  m = open_model ("fp16", MLP_HEAD "loss = cross\nloss_scale = 256\n"
      MLP_BODY, false, "W16A16");
  if (m) {
    char buf[16];
    CHECK (tt_model_loss_scale (m) == 256.0f, "fp16 scale %g",
        (double) tt_model_loss_scale (m));
    CHECK (!strcmp (tt_model_precision (m, buf, sizeof buf), "FP16-FP16"),
        "precision %s", buf);
  }
  tt_model_free (m);
}

static void
test_bad_values (void)
{
  static const char *const bad[] = { "0", "-2", "nan", "0.5", "inf", "x" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[2048];
    snprintf (text, sizeof text, MLP_HEAD "loss = cross\nloss_scale = %s\n"
        MLP_BODY, bad[i]);
    tt_error err;
    tt_model *m = load ("bad.ini", text, &err);
    CHECK (m == NULL, "loss_scale = %s accepted", bad[i]);
    tt_model_free (m);
    if (!m)
      CHECK (strstr (err.message, "[model] loss_scale") &&
          strstr (err.message, "bad.ini"), "loss_scale = %s: %s", bad[i],
          err.message);
  }
  static const char *const specs[] = { "fp64", "", "FP16_FP16", "bf16-",
    "FP32-FP8", "W8A16"
  };
  tt_error err;
  tt_model *m = load ("p.ini", MLP_HEAD "loss = cross\n" MLP_BODY, &err);
  if (!m)
    return;
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    CHECK (tt_model_set_precision (m, specs[i], &err) == TT_ERR_INVALID,
        "precision '%s' accepted", specs[i]);
    CHECK (strstr (err.message, "fp32, bf16, fp16") != NULL, "%s", err.message);
  }
  CHECK (tt_model_set_precision (m, NULL, &err) == TT_ERR_INVALID, "NULL");
  CHECK (m->activation_type == TT_PRECISION_FP32 &&
      m->weight_type == TT_PRECISION_FP32, "a refused precision changed "
      "the model");
  CHECK (tt_model_set_precision (m, "Fp16", &err) == TT_OK, "%s", err.message);
  CHECK (m->activation_type == TT_PRECISION_FP16 &&
      m->weight_type == TT_PRECISION_FP32, "fp16: %d-%d", m->weight_type,
      m->activation_type);
  CHECK (tt_model_set_precision (m, "bf16-fp32", &err) == TT_OK, "%s",
      err.message);
  CHECK (m->activation_type == TT_PRECISION_FP32 &&
      m->weight_type == TT_PRECISION_BF16, "bf16-fp32: %d-%d",
      m->weight_type, m->activation_type);
  CHECK (tt_model_set_precision (m, "fp32", &err) == TT_OK, "%s", err.message);
  CHECK (tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  CHECK (tt_model_set_precision (m, "bf16", &err) == TT_ERR_STATE,
      "after compile");
  tt_model_free (m);
  /* the note names the path this CPU takes */
  const char *note = tt_precision_note (TT_PRECISION_BF16);
#ifdef __aarch64__
  const char *hw_name = "ARMv8.6 BF16 (BFDOT)";
#else
  const char *hw_name = "AVX-512 BF16 (vdpbf16ps";
#endif
  CHECK (!strncmp (note, "bf16: ", 6) && strstr (note, tt_bf16_hw_dot ()?
          hw_name : "portable"), "%s", note);
  note = tt_precision_note (TT_PRECISION_FP16);
  CHECK (!strncmp (note, "fp16: ", 6), "%s", note);
}

int
main (void)
{
  TT_TEST_RUN (test_power_of_two_exact);
  TT_TEST_RUN (test_overflow_skips);
  TT_TEST_RUN (test_growth);
  TT_TEST_RUN (test_defaults);
  TT_TEST_RUN (test_bad_values);
  return tt_test_summary ();
}
