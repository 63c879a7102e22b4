/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LoRA beyond fully_connected (layers/mha_lora.c, layers/conv_lora.c) on
 * a small model: a 3x3 conv2d (not adaptable), a 1x1 conv2d, a
 * multi_head_attention over its channels as tokens, a dense classifier:
 * - loraA starts at zeros: the adapted model's first outputs are the
 *   base model's, bit for bit, given the same base weights;
 * - training moves the adapters only: the 1x1 filter, the projections and
 *   their biases stay bit-identical;
 * - the pool is planned to its lower bound and is smaller than the
 *   whole model's training;
 * - under a memory limit it trains as without, byte for byte;
 * - the tools (tensor-trainer lora): --rank adds adapters to the 1x1
 *   conv2d, the attention and the dense layer (not the 3x3 conv2d, which
 *   --layers refuses with the reason); trained, merged (the merged
 *   model's outputs the adapted one's within rounding), saved alone and
 *   applied again bit for bit.
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "train_steps.h"
#include "lora_tools.h"

#include <inttypes.h>
#include <math.h>

#define LL_HEAD \
    "[Model]\nbatch_size = 32\nloss = cross\n" \
    "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n" \
    "[input]\ntype = input\ninput_shape = 16:4:4\n" \
    "[c3]\ntype = conv2d\nfilters = 16\nkernel_size = 3,3\n" \
    "padding = same\nactivation = relu\n"
#define LL_BODY(pw, attn, out) \
    "[pw]\ntype = conv2d\nfilters = 32\nkernel_size = 1,1\n" \
    "activation = tanh\n" pw \
    "[tokens]\ntype = reshape\ntarget_shape = 1:8:64\n" \
    "[attn]\ntype = multi_head_attention\n" \
    "input_layers = tokens, tokens, tokens\nnum_heads = 4\n" attn \
    "[flat]\ntype = flatten\n" \
    "[out]\ntype = fully_connected\nunit = 5\nactivation = softmax\n" out

static const char plain[] = LL_HEAD LL_BODY ("", "", "");
static const char lora[] = LL_HEAD
LL_BODY ("lora_rank = 2\nlora_alpha = 4\n", "lora_rank = 3\n",
    "lora_rank = 2\n");

static tt_model *
open_model (const char *text, uint64_t limit, tt_error * err)
{
  tt_model *m = tt_model_load_ini_text (text, strlen (text), "ll.ini", err);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 13);
  if (tt_model_set_threads (m, 1, err) ||
      (limit && tt_model_set_memory_limit (m, limit, err)) ||
      tt_model_compile (m, err)) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static const tt_layer *
layer_of (const tt_model * m, const char *name)
{
  return &m->layers[tt_model_find_layer (m, name)];
}

static float *
values (const tt_model * m, const tt_weight * w)
{
  return m->tensors[w->value].data;
}

static float *
inputs_of (const tt_model * m)
{
  const size_t nx = (size_t) tt_model_batch_size (m) * 16 * 4 * 4;
  float *x = malloc (nx * sizeof *x);
  for (size_t j = 0; j < nx; j++)
    x[j] = (float) ((j * 7919) % 255) / 255.0f;
  return x;
}

/* the softmax outputs of m on inputs_of's batch, into y (16 x 5) */
static void
outputs_of (tt_model * m, float *y)
{
  tt_error err;
  float *x = inputs_of (m);
  const void *in[1] = { x };
  tt_batch_result r;
  CHECK (tt_model_eval_batch (m, 16, in, NULL, NULL, &r, &err) == TT_OK,
      "eval: %s", err.message);
  memcpy (y, tt_model_output (m), 16 * 5 * sizeof *y);
  free (x);
}

static const char *const adapted[3] = { "pw", "attn", "out" };

static void
test_starts_as_base (void)
{
  tt_error err;
  tt_model *a = open_model (plain, 0, &err);
  tt_model *b = open_model (lora, 0, &err);
  CHECK (a && b, "open: %s", err.message);
  if (!a || !b)
    goto out;
  /* every base weight of a into b's weight of the same name */
  for (uint32_t i = 0; i < a->n_layers; i++) {
    const tt_layer *la = &a->layers[i];
    const tt_layer *lb = layer_of (b, la->name);
    for (uint32_t k = 0; k < la->n_weights; k++) {
      CHECK (!strcmp (la->weights[k].suffix, lb->weights[k].suffix) &&
          la->weights[k].count == lb->weights[k].count, "%s:%s", la->name,
          la->weights[k].suffix);
      memcpy (values (b, &lb->weights[k]), values (a, &la->weights[k]),
          la->weights[k].count * sizeof (float));
    }
  }
  float ya[80], yb[80];
  outputs_of (a, ya);
  outputs_of (b, yb);
  CHECK (!memcmp (ya, yb, sizeof ya), "loraA = 0: the base model's outputs");
  /* the attention: its 8 weights, then 4 pairs ([64][3], [3][64]); the
   * 1x1 conv2d: filter, bias, loraA [16][2], loraB [2][32] */
  const tt_layer *att = layer_of (b, "attn"), *pw = layer_of (b, "pw");
  CHECK (att->n_weights == 16 && !strcmp (att->weights[8].suffix,
          "query_loraA") && !strcmp (att->weights[15].suffix, "fc_loraB")
      && att->weights[8].count == 64 * 3 && att->weights[15].count == 3 * 64,
      "attention's adapters: %u weights", att->n_weights);
  CHECK (pw->n_weights == 4 && pw->weights[2].count == 16 * 2 &&
      pw->weights[3].count == 2 * 32, "1x1 conv2d's adapters");
  for (int i = 0; i < 2; i++) {
    const tt_layer *l = i ? att : pw;
    for (uint32_t k = 0; k < l->n_weights; k++) {
      const bool adapter = k >= l->n_weights - (i ? 8u : 2u);
      CHECK (l->weights[k].trainable == adapter &&
          (l->weights[k].grad >= 0) == adapter, "%s:%s trainable %d",
          l->name, l->weights[k].suffix, l->weights[k].trainable);
    }
  }
out:
  tt_model_free (a);
  tt_model_free (b);
}

static void
test_trains_adapters (void)
{
  tt_error err;
  tt_model *m = open_model (lora, 0, &err);
  CHECK (m != NULL, "%s", m ? "" : err.message);
  if (!m)
    return;
  float *before[3][16];
  for (int i = 0; i < 3; i++) {
    const tt_layer *l = layer_of (m, adapted[i]);
    for (uint32_t k = 0; k < l->n_weights; k++) {
      before[i][k] = malloc (l->weights[k].count * sizeof (float));
      memcpy (before[i][k], values (m, &l->weights[k]),
          l->weights[k].count * sizeof (float));
    }
  }
  tt_test_train_steps (m, "lora", 4, 255.0f);
  for (int i = 0; i < 3; i++) {
    const tt_layer *l = layer_of (m, adapted[i]);
    const uint32_t first = l->n_weights - (i == 1 ? 8u : 2u);
    for (uint32_t k = 0; k < l->n_weights; k++) {
      const bool same = !memcmp (before[i][k], values (m, &l->weights[k]),
          l->weights[k].count * sizeof (float));
      CHECK (same == (k < first), "%s:%s %s", l->name, l->weights[k].suffix,
          same ? "unchanged" : "changed");
      free (before[i][k]);
    }
  }
  tt_model_free (m);
}

static uint64_t
pool_of (const char *text, double *x_bound)
{
  tt_error err;
  tt_model *m = open_model (text, 0, &err);
  CHECK (m != NULL, "%s", m ? "" : err.message);
  if (!m)
    return 0;
  tt_plan_info p;
  tt_model_plan_info (m, &p);
  *x_bound = (double) p.pool_bytes / (double) p.lower_bound;
  tt_model_free (m);
  return p.pool_bytes;
}

/* both planned to their lower bounds at batch 32 (at 8 and 16 the LoRA
 * model's offsets end one or two alignments above it: the placements'
 * search misses a placement at the bound) */
static void
test_pools (void)
{
  double x[2];
  const uint64_t whole = pool_of (plain, &x[0]);
  const uint64_t adapted_pool = pool_of (lora, &x[1]);
  printf ("everything %" PRIu64 " (%.4f x bound), LoRA %" PRIu64
      " (%.4f) bytes\n", whole, x[0], adapted_pool, x[1]);
  CHECK (x[0] == 1.0 && x[1] == 1.0, "pools at their lower bounds");
  CHECK (adapted_pool < whole, "LoRA %" PRIu64 " < everything %" PRIu64,
      adapted_pool, whole);
}

static void
test_memory_limit (void)
{
  tt_error err;
  tt_model *a = open_model (lora, 0, &err);
  CHECK (a != NULL, "%s", a ? "" : err.message);
  if (!a)
    return;
  tt_plan_info p;
  tt_model_plan_info (a, &p);
  uint64_t limit = p.pool_bytes - p.pool_bytes / 4;
  tt_model *b = open_model (lora, limit, &err);
  if (!b && strstr (err.message, "smallest")) {
    const char *num = strstr (err.message, "smallest");
    while (*num && (*num < '0' || *num > '9'))
      num++;
    limit = strtoull (num, NULL, 10);
    b = limit < p.pool_bytes ? open_model (lora, limit, &err) : NULL;
  }
  CHECK (b != NULL, "under %" PRIu64 ": %s", limit, b ? "" : err.message);
  if (b) {
    tt_plan_info q;
    tt_model_plan_info (b, &q);
    printf ("pool %" PRIu64 " under the limit %" PRIu64 " (unlimited %"
        PRIu64 ")\n", q.pool_bytes, limit, p.pool_bytes);
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

/* ---- the lora tools (io/lora_file.c) ---- */

/* the adapter pairs of layer name of m (the lora_pairs trait) */
static uint32_t
pairs_of (const tt_model * m, const char *name)
{
  const tt_layer *l = layer_of (m, name);
  tt_lora_pair p[TT_LORA_MAX_PAIRS];
  return l->ops->lora_pairs ? l->ops->lora_pairs (l, p) : 0;
}

/* the adapters trained, the rest frozen (--train layers:pw,attn,out: the
 * 3x3 conv2d too, so that base and adapters are the whole model); merged
 * outputs: softmax probabilities within 1e-6 (x (W + s A B) sums in
 * another order than x W + s (x A) B) */
static void
test_tools (void)
{
  tt_error err;
  const char *base_ini = tt_test_write_text ("ll_base.ini", plain);
  snprintf (tool_dir, sizeof tool_dir, "%s", base_ini);
  *strrchr (tool_dir, '/') = '\0';
  tt_model *base = open_model (plain, 0, &err);
  CHECK (base && tt_model_save_bin (base, tool_path ("ll_base.bin"), &err)
      == TT_OK, "base.bin: %s", err.message);
  tt_model_free (base);
  CHECK (tt_lora_add (base_ini, tool_path ("ll_base.bin"), 2, 4, NULL, 5,
          tool_path ("ll_lora.ini"), &err) == TT_OK, "add: %s", err.message);
  tt_model *m = tool_open (tool_path ("ll_lora.ini"),
      tool_path ("ll_lora.bin"), "layers:pw,attn,out");
  if (!m)
    return;
  CHECK (pairs_of (m, "c3") == 0 && pairs_of (m, "pw") == 1 &&
      pairs_of (m, "attn") == 4 && pairs_of (m, "out") == 1,
      "--rank: the 1x1 conv2d, the attention, the dense layer adapted "
      "(%u %u %u %u)", pairs_of (m, "c3"), pairs_of (m, "pw"),
      pairs_of (m, "attn"), pairs_of (m, "out"));
  tt_test_train_steps (m, "lora", 4, 255.0f);
  CHECK (tt_model_save_bin (m, tool_path ("ll_trained.bin"), &err) == TT_OK,
      "save: %s", err.message);
  CHECK (tt_lora_merge (tool_path ("ll_lora.ini"),
          tool_path ("ll_trained.bin"), tool_path ("ll_merged.ini"), &err)
      == TT_OK, "merge: %s", err.message);
  size_t len = 0;
  char *merged_text = tt_test_read_file (tool_path ("ll_merged.ini"), &len);
  CHECK (merged_text && !strcmp (merged_text, plain), "merge: the INI "
      "without the lora keys is the base's");
  free (merged_text);
  tt_model *g = tool_open (tool_path ("ll_merged.ini"),
      tool_path ("ll_merged.bin"), NULL);
  if (g) {
    float ym[80], yg[80];
    outputs_of (m, ym);
    outputs_of (g, yg);
    double worst = 0.0;
    /* (not fmax: GCC 12 for aarch64 dies vectorizing that reduction,
     * "internal compiler error: in vect_transform_reduction") */
    for (size_t i = 0; i < 80; i++) {
      const double d = fabs ((double) ym[i] - yg[i]);
      worst = d > worst ? d : worst;
    }
    printf ("LoRA against merged: 80 outputs, max |diff| %.3g\n", worst);
    CHECK (worst <= 1e-6, "merged outputs differ by %g", worst);
  }
  CHECK (tt_lora_save_adapters (tool_path ("ll_lora.ini"),
          tool_path ("ll_trained.bin"), tool_path ("ll_adapters.bin"), &err)
      == TT_OK, "adapters: %s", err.message);
  char *ad = tt_test_read_file (tool_path ("ll_adapters.bin"), &len);
  /* pw: 16 x 2 + 2 x 32; attn: 4 x (64 x 2 + 2 x 64); out: 512 x 2 +
   * 2 x 5 */
  CHECK (ad && len == (16 * 2 + 2 * 32 + 4 * (64 * 2 + 2 * 64) + 512 * 2 +
          2 * 5) * 4, "adapters: %zu bytes", len);
  free (ad);
  CHECK (tt_lora_apply (tool_path ("ll_lora.ini"), tool_path ("ll_base.bin"),
          tool_path ("ll_adapters.bin"), false, tool_path ("ll_applied.ini"),
          &err) == TT_OK, "apply: %s", err.message);
  tt_model *a = tool_open (tool_path ("ll_applied.ini"),
      tool_path ("ll_applied.bin"), NULL);
  if (a) {
    size_t na, nm;
    float *wa = tool_weights (a, &na), *wm = tool_weights (m, &nm);
    CHECK (na == nm && !memcmp (wa, wm, na * sizeof *wa), "apply: the "
        "trained weights, bit for bit");
    free (wa);
    free (wm);
  }
  CHECK (tt_lora_apply (tool_path ("ll_lora.ini"), tool_path ("ll_base.bin"),
          tool_path ("ll_adapters.bin"), true, tool_path ("ll_applied_m.ini"),
          &err) == TT_OK, "apply --merge: %s", err.message);
  char *x1 = tt_test_read_file (tool_path ("ll_applied_m.bin"), &len);
  size_t len2 = 0;
  char *x2 = tt_test_read_file (tool_path ("ll_merged.bin"), &len2);
  CHECK (x1 && x2 && len == len2 && !memcmp (x1, x2, len), "apply --merge: "
      "the merged BIN");
  free (x1);
  free (x2);
  /* --layers: the 3x3 conv2d refused with the reason; the attention alone */
  CHECK (tt_lora_add (base_ini, tool_path ("ll_base.bin"), 2, 0, "c3", 1,
          tool_path ("ll_x.ini"), &err) != TT_OK &&
      strstr (err.message, "not a layer LoRA adapts: 'c3'") &&
      strstr (err.message, "kernel_size 1,1 only") &&
      strstr (err.message, "pw, attn, out"), "--layers c3: %s", err.message);
  CHECK (tt_lora_add (base_ini, tool_path ("ll_base.bin"), 2, 0, "attn", 1,
          tool_path ("ll_attn.ini"), &err) == TT_OK, "--layers attn: %s",
      err.message);
  tt_model *t = tool_open (tool_path ("ll_attn.ini"),
      tool_path ("ll_attn.bin"), NULL);
  if (t)
    CHECK (pairs_of (t, "pw") == 0 && pairs_of (t, "attn") == 4 &&
        pairs_of (t, "out") == 0, "--layers attn: the attention alone");
  tt_model_free (t);
  tt_model_free (a);
  tt_model_free (g);
  tt_model_free (m);
}

int
main (void)
{
  TT_TEST_RUN (test_starts_as_base);
  TT_TEST_RUN (test_trains_adapters);
  TT_TEST_RUN (test_pools);
  TT_TEST_RUN (test_memory_limit);
  TT_TEST_RUN (test_tools);
  return tt_test_summary ();
}
