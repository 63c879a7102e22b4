/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LoRA adapters on fully_connected (layers/fc_lora.c), on a small MLP:
 * - loraA starts at zeros: the adapted model's first outputs are the
 *   base model's, bit for bit, given the same base weights;
 * - training moves loraA and loraB only: the base weights and biases
 *   stay bit-identical;
 * - the pool is planned to its lower bound and is smaller than the
 *   whole model's training (no gradient, no optimizer state for the
 *   base);
 * - under a memory limit it trains as without, byte for byte;
 * - --train choices act on the adapters: last:1 freezes the first
 *   layer's, biases finds nothing to train in a model whose dense
 *   layers all have adapters;
 * - the tools (tensor-trainer lora): adapters added, trained, merged
 *   (the merged model's outputs the adapted one's), saved alone and
 *   applied again.
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "train_steps.h"
#include "lora_tools.h"

#include <inttypes.h>
#include <math.h>

#define MLP_HEAD(opt) \
    "[Model]\nbatch_size = 64\nloss = cross\n" \
    "[Optimizer]\ntype = " opt "\nlearning_rate = 0.01\n" \
    "[input]\ntype = input\ninput_shape = 1:1:32\n"
#define MLP_BODY(l1, l2) \
    "[fc1]\ntype = fully_connected\nunit = 64\nactivation = relu\n" l1 \
    "[fc2]\ntype = fully_connected\nunit = 10\nactivation = softmax\n" l2
#define LORA1 "lora_rank = 4\nlora_alpha = 8\n"
#define LORA2 "lora_rank = 2\n"

static const char plain[] = MLP_HEAD ("adam") MLP_BODY ("", "");
     static const char
         lora[] = MLP_HEAD ("adam") MLP_BODY (LORA1, LORA2);
     static const char
         lora_sgd[] = MLP_HEAD ("sgd") MLP_BODY (LORA1, LORA2);

     static tt_model *
     open_model (const char *text, const char *choice, uint64_t limit,
    tt_error * err)
{
  tt_model *m = tt_model_load_ini_text (text, strlen (text), "mlp.ini", err);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 11);
  if (tt_model_set_threads (m, 1, err) ||
      (choice && tt_model_set_train (m, choice, err)) ||
      (limit && tt_model_set_memory_limit (m, limit, err)) ||
      tt_model_compile (m, err)) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static const tt_weight *
weight_of (const tt_model * m, const char *layer, uint32_t k)
{
  return &m->layers[tt_model_find_layer (m, layer)].weights[k];
}

static float *
values (const tt_model * m, const tt_weight * w)
{
  return m->tensors[w->value].data;
}

/* the same inputs as tt_test_train_steps' */
static float *
inputs_of (const tt_model * m)
{
  tt_shape in;
  tt_model_input_shape (m, 0, &in);
  const size_t nx = (size_t) tt_model_batch_size (m) * in.channel * in.height
      * in.width;
  float *x = malloc (nx * sizeof *x);
  for (size_t j = 0; j < nx; j++)
    x[j] = (float) ((j * 7919) % 255) / 255.0f;
  return x;
}

static void
test_starts_as_base (void)
{
  tt_error err;
  tt_model *a = open_model (plain, NULL, 0, &err);
  tt_model *b = open_model (lora, NULL, 0, &err);
  CHECK (a && b, "open: %s", err.message);
  if (!a || !b)
    goto out;
  const char *layers[2] = { "fc1", "fc2" };
  for (int i = 0; i < 2; i++)
    for (uint32_t k = 0; k < 2; k++) {
      const tt_weight *wa = weight_of (a, layers[i], k);
      const tt_weight *wb = weight_of (b, layers[i], k);
      CHECK (wa->count == wb->count, "%s:%s", layers[i], wa->suffix);
      memcpy (values (b, wb), values (a, wa), wa->count * sizeof (float));
    }
  float *x = inputs_of (a);
  const void *in[1] = { x };
  tt_batch_result r;
  const size_t n = 64 * 10;
  float *ya = malloc (n * sizeof *ya);
  CHECK (tt_model_eval_batch (a, 64, in, NULL, NULL, &r, &err) == TT_OK,
      "eval: %s", err.message);
  memcpy (ya, tt_model_output (a), n * sizeof *ya);
  CHECK (tt_model_eval_batch (b, 64, in, NULL, NULL, &r, &err) == TT_OK,
      "eval: %s", err.message);
  CHECK (!memcmp (ya, tt_model_output (b), n * sizeof *ya),
      "loraA = 0: the base model's outputs");
  free (ya);
  free (x);
out:
  tt_model_free (a);
  tt_model_free (b);
}

static void
test_trains_adapters (const char *text, const char *what)
{
  tt_error err;
  tt_model *m = open_model (text, NULL, 0, &err);
  CHECK (m != NULL, "%s: %s", what, m ? "" : err.message);
  if (!m)
    return;
  float *before[2][4];
  const char *layers[2] = { "fc1", "fc2" };
  for (int i = 0; i < 2; i++)
    for (uint32_t k = 0; k < 4; k++) {
      const tt_weight *w = weight_of (m, layers[i], k);
      before[i][k] = malloc (w->count * sizeof (float));
      memcpy (before[i][k], values (m, w), w->count * sizeof (float));
    }
  tt_test_train_steps (m, what, 4, 255.0f);
  for (int i = 0; i < 2; i++)
    for (uint32_t k = 0; k < 4; k++) {
      const tt_weight *w = weight_of (m, layers[i], k);
      const bool same = !memcmp (before[i][k], values (m, w),
          w->count * sizeof (float));
      CHECK (same == (k < 2), "%s: %s:%s %s", what, layers[i], w->suffix,
          same ? "unchanged" : "changed");
      free (before[i][k]);
    }
  tt_model_free (m);
}

static void
test_adapters_train (void)
{
  test_trains_adapters (lora, "adam");
  test_trains_adapters (lora_sgd, "sgd");
}

static uint64_t
pool_of (const char *text, const char *choice, double *x_bound)
{
  tt_error err;
  tt_model *m = open_model (text, choice, 0, &err);
  CHECK (m != NULL, "%s: %s", choice ? choice : "everything",
      m ? "" : err.message);
  if (!m)
    return 0;
  tt_plan_info p;
  tt_model_plan_info (m, &p);
  *x_bound = (double) p.pool_bytes / (double) p.lower_bound;
  tt_model_free (m);
  return p.pool_bytes;
}

/* the whole model, its LoRA twin and the twin with fc1 frozen, each
 * planned to its lower bound (at batch 8, last:1's offsets end one
 * alignment above it: the greedy placements and their local search miss
 * a placement at the bound) */
static void
test_pools (void)
{
  double x[3];
  const uint64_t whole = pool_of (plain, NULL, &x[0]);
  const uint64_t adapted = pool_of (lora, NULL, &x[1]);
  const uint64_t last = pool_of (lora, "last:1", &x[2]);
  printf ("everything %" PRIu64 " (%.4f x bound), LoRA %" PRIu64
      " (%.4f), LoRA last:1 %" PRIu64 " (%.4f) bytes\n", whole, x[0],
      adapted, x[1], last, x[2]);
  CHECK (x[0] == 1.0 && x[1] == 1.0 && x[2] == 1.0,
      "pools at their lower bounds");
  CHECK (adapted < whole, "LoRA %" PRIu64 " < everything %" PRIu64, adapted,
      whole);
  CHECK (last < adapted, "LoRA last:1 %" PRIu64 " < LoRA %" PRIu64, last,
      adapted);
}

static void
test_memory_limit (void)
{
  tt_error err;
  tt_model *a = open_model (lora, NULL, 0, &err);
  CHECK (a != NULL, "%s", a ? "" : err.message);
  if (!a)
    return;
  tt_plan_info p;
  tt_model_plan_info (a, &p);
  uint64_t limit = p.pool_bytes - p.pool_bytes / 4;
  tt_model *b = open_model (lora, NULL, limit, &err);
  if (!b && strstr (err.message, "smallest")) {
    const char *num = strstr (err.message, "smallest");
    while (*num && (*num < '0' || *num > '9'))
      num++;
    limit = strtoull (num, NULL, 10);
    b = limit < p.pool_bytes ? open_model (lora, NULL, limit, &err) : NULL;
  }
  CHECK (b != NULL, "under %" PRIu64 ": %s", limit, b ? "" : err.message);
  if (b) {
    tt_plan_info q;
    tt_model_plan_info (b, &q);
    CHECK (q.pool_bytes <= limit && q.pool_bytes < p.pool_bytes,
        "pool %" PRIu64 " under the limit %" PRIu64, q.pool_bytes, limit);
    tt_test_train_steps (a, "unlimited", 3, 255.0f);
    tt_test_train_steps (b, "limited", 3, 255.0f);
    CHECK (tt_test_same_state (a, b, "limited"), "same training under the "
        "limit");
  }
  tt_model_free (b);
  tt_model_free (a);
}

static void
test_choices (void)
{
  tt_error err;
  tt_model *m = open_model (lora, "last:1", 0, &err);
  CHECK (m != NULL, "last:1: %s", m ? "" : err.message);
  if (m) {
    for (uint32_t k = 0; k < 4; k++) {
      CHECK (!weight_of (m, "fc1", k)->trainable, "last:1: fc1 frozen");
      CHECK (weight_of (m, "fc2", k)->trainable == (k >= 2),
          "last:1: fc2's adapters train, its base does not");
    }
    tt_model_free (m);
  }
  m = open_model (lora, "biases", 0, &err);
  CHECK (m == NULL && strstr (err.message, "biases"),
      "biases with adapters on every dense layer: %s",
      m ? "trained" : err.message);
  tt_model_free (m);
}

/* ---- the lora tools (io/lora_file.c) ---- */

/* add adapters to a plain MLP's BIN, train them, merge: the merged model
 * gives the LoRA model's outputs within 1e-6 (softmax probabilities:
 * x (W + s A B) sums in another order than x W + s (x A) B, float32
 * rounding of sums of 32 and 64 terms, some 1e-7 relative); the adapters
 * alone and applied to the base give the trained BIN's weights bit for
 * bit, and applied with --merge the merged BIN */
static void
test_tools (void)
{
  tt_error err;
  const char *base_ini = tt_test_write_text ("base.ini", plain);
  snprintf (tool_dir, sizeof tool_dir, "%s", base_ini);
  *strrchr (tool_dir, '/') = '\0';
  tt_model *base = open_model (plain, NULL, 0, &err);
  CHECK (base && tt_model_save_bin (base, tool_path ("base.bin"), &err) ==
      TT_OK, "base.bin: %s", err.message);
  tt_model_free (base);
  CHECK (tt_lora_add (base_ini, tool_path ("base.bin"), 4, 8, NULL, 5,
          tool_path ("lora.ini"), &err) == TT_OK, "add: %s", err.message);
  tt_model *m =
      tool_open (tool_path ("lora.ini"), tool_path ("lora.bin"), NULL);
  if (!m)
    return;
  tt_test_train_steps (m, "lora", 4, 255.0f);
  CHECK (tt_model_save_bin (m, tool_path ("trained.bin"), &err) == TT_OK,
      "save: %s", err.message);
  CHECK (tt_lora_merge (tool_path ("lora.ini"), tool_path ("trained.bin"),
          tool_path ("merged.ini"), &err) == TT_OK, "merge: %s", err.message);
  size_t len = 0;
  char *merged_text = tt_test_read_file (tool_path ("merged.ini"), &len);
  CHECK (merged_text && !strcmp (merged_text, plain), "merge: the INI "
      "without the lora keys is the base's");
  free (merged_text);
  tt_model *g =
      tool_open (tool_path ("merged.ini"), tool_path ("merged.bin"), NULL);
  if (g) {
    float *x = inputs_of (m);
    const void *in[1] = { x };
    tt_batch_result r;
    const size_t n = 64 * 10;
    float *ym = malloc (n * sizeof *ym);
    CHECK (tt_model_eval_batch (m, 64, in, NULL, NULL, &r, &err) == TT_OK,
        "eval: %s", err.message);
    memcpy (ym, tt_model_output (m), n * sizeof *ym);
    CHECK (tt_model_eval_batch (g, 64, in, NULL, NULL, &r, &err) == TT_OK,
        "eval: %s", err.message);
    const float *yg = tt_model_output (g);
    double worst = 0.0;
    /* (not fmax: GCC 12 for aarch64 dies vectorizing that reduction,
     * "internal compiler error: in vect_transform_reduction") */
    for (size_t i = 0; i < n; i++) {
      const double d = fabs ((double) ym[i] - yg[i]);
      worst = d > worst ? d : worst;
    }
    printf ("LoRA against merged: %zu outputs, max |diff| %.3g\n", n, worst);
    CHECK (worst <= 1e-6, "merged outputs differ by %g", worst);
    free (ym);
    free (x);
    /* the merge changed fc1's weight (32 x 64 floats, first in the BIN) */
    size_t nb = 0, ng = 0;
    char *wb = tt_test_read_file (tool_path ("base.bin"), &nb);
    char *wg = tt_test_read_file (tool_path ("merged.bin"), &ng);
    CHECK (wb && wg && nb >= 32 * 64 * 4 && ng >= 32 * 64 * 4 &&
        memcmp (wb, wg, 32 * 64 * 4), "merged: fc1's weight is not the "
        "base's");
    free (wb);
    free (wg);
  }
  CHECK (tt_lora_save_adapters (tool_path ("lora.ini"),
          tool_path ("trained.bin"), tool_path ("adapters.bin"), &err) ==
      TT_OK, "adapters: %s", err.message);
  char *adapters = tt_test_read_file (tool_path ("adapters.bin"), &len);
  /* fc1: 32 x 4 + 4 x 64, fc2: 64 x 4 + 4 x 10 */
  CHECK (adapters && len == (32 * 4 + 4 * 64 + 64 * 4 + 4 * 10) * 4,
      "adapters: %zu bytes", len);
  free (adapters);
  CHECK (tt_lora_apply (tool_path ("lora.ini"), tool_path ("base.bin"),
          tool_path ("adapters.bin"), false, tool_path ("applied.ini"),
          &err) == TT_OK, "apply: %s", err.message);
  tt_model *a =
      tool_open (tool_path ("applied.ini"), tool_path ("applied.bin"), NULL);
  if (a) {
    size_t na, nm;
    float *wa = tool_weights (a, &na), *wm = tool_weights (m, &nm);
    CHECK (na == nm && !memcmp (wa, wm, na * sizeof *wa), "apply: the "
        "trained weights");
    free (wa);
    free (wm);
  }
  CHECK (tt_lora_apply (tool_path ("lora.ini"), tool_path ("base.bin"),
          tool_path ("adapters.bin"), true, tool_path ("applied_m.ini"),
          &err) == TT_OK, "apply --merge: %s", err.message);
  char *x1 = tt_test_read_file (tool_path ("applied_m.bin"), &len);
  size_t len2 = 0;
  char *x2 = tt_test_read_file (tool_path ("merged.bin"), &len2);
  CHECK (x1 && x2 && len == len2 && !memcmp (x1, x2, len), "apply --merge: "
      "the merged BIN");
  free (x1);
  free (x2);
  /* refused: a layer that is not there, adapters of another size, an
   * output over an input */
  CHECK (tt_lora_add (base_ini, tool_path ("base.bin"), 2, 0, "fc1,nope", 1,
          tool_path ("x.ini"), &err) != TT_OK &&
      strstr (err.message, "no layer named 'nope'") &&
      strstr (err.message, "fc1, fc2"), "--layers nope: %s", err.message);
  CHECK (tt_lora_apply (tool_path ("lora.ini"), tool_path ("base.bin"),
          tool_path ("base.bin"), false, tool_path ("x.ini"), &err) != TT_OK
      && strstr (err.message, "do not fit the adapters"), "apply a BIN: %s",
      err.message);
  CHECK (tt_lora_merge (tool_path ("lora.ini"), tool_path ("trained.bin"),
          tool_path ("lora.ini"), &err) != TT_OK &&
      strstr (err.message, "not written over"), "merge over its input: %s",
      err.message);
  tt_model_free (a);
  tt_model_free (g);
  tt_model_free (m);
}

int
main (void)
{
  TT_TEST_RUN (test_starts_as_base);
  TT_TEST_RUN (test_adapters_train);
  TT_TEST_RUN (test_pools);
  TT_TEST_RUN (test_memory_limit);
  TT_TEST_RUN (test_choices);
  TT_TEST_RUN (test_tools);
  return tt_test_summary ();
}
