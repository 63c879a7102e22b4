/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TT_HALF_ONLY (core/precision_spec.c), the bench's ablation of a half
 * activation type (docs/precision.md, "MobileNetV2 on upscaled
 * Fashion-MNIST"): fmnist_cnn in bf16 at batch 8 on one thread,
 * - unset: the GEMMs' inputs in bf16 and a stash;
 * - gemm: the GEMMs' inputs in bf16, nothing stashed; its first loss (a
 *   forward of the weights as initialized) the bits of the unset
 *   model's, and not fp32's;
 * - stash: the GEMMs' inputs in fp32 and a stash; its first loss the
 *   bits of fp32's, and a later one not (backward read rounded
 *   activations);
 * - anything else: the compile fails, naming the variable and the value.
 *
 * Usage: test_half_only SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test.h"

#include <math.h>

enum
{ STEPS = 3 };

static char path[2048];

/* fmnist_cnn at act, TT_HALF_ONLY = only (NULL: unset); NULL when the
 * compile fails, its message in err */
static tt_model *
open_with (tt_precision act, const char *only, tt_error * err)
{
  if (only)
    setenv ("TT_HALF_ONLY", only, 1);
  else
    unsetenv ("TT_HALF_ONLY");
  tt_model *m = tt_model_load_ini (path, err);
  if (m && (tt_model_set_batch_size (m, 8, err) ||
          tt_model_set_threads (m, 1, err) ||
          tt_model_set_precision (m, tt_precision_name (act), err) ||
          tt_model_compile (m, err))) {
    tt_model_free (m);
    m = NULL;
  }
  unsetenv ("TT_HALF_ONLY");
  return m;
}

/* STEPS training steps on fixed data, each step's loss */
static void
train_losses (tt_model * m, double *loss)
{
  const uint32_t batch = tt_model_batch_size (m);
  tt_shape in, lb = tt_model_label_shape (m);
  tt_model_input_shape (m, 0, &in);
  const size_t nx = (size_t) batch * in.channel * in.height * in.width;
  const size_t nl = (size_t) lb.channel * lb.height * lb.width;
  float *x = malloc (nx * sizeof *x), *t = calloc (batch * nl, sizeof *t);
  CHECK (x && t, "out of memory");
  if (x && t) {
    for (size_t j = 0; j < nx; j++)
      x[j] = (float) ((j * 7919) % 255) / 255.0f;
    for (uint32_t b = 0; b < batch; b++)
      t[b * nl + (b * 7u) % nl] = 1;
    const void *inputs[1] = { x };
    for (int s = 0; s < STEPS; s++) {
      tt_error err;
      tt_batch_result r = { 0 };
      CHECK (tt_model_train_batch (m, batch, inputs, NULL, t, &r, &err) ==
          TT_OK, "%s", err.message);
      loss[s] = r.loss;
    }
  }
  free (x);
  free (t);
}

/* the model at act and only: its plan's stash and GEMM format as
 * expected; its losses into loss */
static bool
run (const char *name, tt_precision act, const char *only, bool stashed,
    tt_precision gemm, double *loss)
{
  tt_error err;
  tt_model *m = open_with (act, only, &err);
  CHECK (m != NULL, "%s: %s", name, m ? "" : err.message);
  if (!m)
    return false;
  tt_plan_info info;
  tt_model_plan_info (m, &info);
  CHECK ((info.stashed > 0) == stashed, "%s: %u stashed, expected %s",
      name, (unsigned) info.stashed, stashed ? "some" : "none");
  CHECK (tt_model_gemm_inputs (m) == gemm, "%s: GEMM inputs %s, expected "
      "%s", name, tt_precision_name (tt_model_gemm_inputs (m)),
      tt_precision_name (gemm));
  train_losses (m, loss);
  for (int s = 0; s < STEPS; s++)
    printf ("%s step %d: loss %.9f\n", name, s, loss[s]);
  tt_model_free (m);
  return true;
}

int
main (int argc, char **argv)
{
  if (argc < 2) {
    fprintf (stderr, "usage: %s SOURCE_ROOT\n", argv[0]);
    return 2;
  }
  snprintf (path, sizeof path, "%s/tests/models/fmnist_cnn.ini", argv[1]);
  double fp32[STEPS], both[STEPS], gemm[STEPS], stash[STEPS];
  if (run ("fp32", TT_PRECISION_FP32, NULL, false, TT_PRECISION_FP32, fp32)
      && run ("bf16", TT_PRECISION_BF16, NULL, true, TT_PRECISION_BF16, both)
      && run ("bf16 gemm only", TT_PRECISION_BF16, "gemm", false,
          TT_PRECISION_BF16, gemm)
      && run ("bf16 stash only", TT_PRECISION_BF16, "stash", true,
          TT_PRECISION_FP32, stash)) {
    CHECK (gemm[0] == both[0] && gemm[0] != fp32[0],
        "gemm only: first loss %.9f, bf16's %.9f, fp32's %.9f", gemm[0],
        both[0], fp32[0]);
    CHECK (stash[0] == fp32[0], "stash only: first loss %.9f, fp32's %.9f",
        stash[0], fp32[0]);
    const int last = STEPS - 1;
    CHECK (stash[last] != fp32[last] && isfinite (stash[last]),
        "stash only: last loss %.9f, fp32's %.9f", stash[last], fp32[last]);
  }

  tt_error err;
  tt_model *bad = open_with (TT_PRECISION_BF16, "bogus", &err);
  CHECK (bad == NULL, "TT_HALF_ONLY=bogus: compiled");
  tt_model_free (bad);
  if (!bad)
    CHECK (strstr (err.message, "TT_HALF_ONLY") &&
        strstr (err.message, "'bogus'"), "TT_HALF_ONLY=bogus: '%s'",
        err.message);
  return tt_test_summary ();
}
