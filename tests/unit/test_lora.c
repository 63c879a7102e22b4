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
 *   layers all have adapters.
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "train_steps.h"

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

int
main (void)
{
  TT_TEST_RUN (test_starts_as_base);
  TT_TEST_RUN (test_adapters_train);
  TT_TEST_RUN (test_pools);
  TT_TEST_RUN (test_memory_limit);
  TT_TEST_RUN (test_choices);
  return tt_test_summary ();
}
