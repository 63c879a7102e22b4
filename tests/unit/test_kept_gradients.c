/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_model_keep_gradients: after tt_model_gradients, every trainable
 * weight's gradient is readable in the pool as planned for use (tensors
 * sharing bytes over the step, layers in place), not only in the naive
 * pool the golden test reads them from. Each weight's kept gradient is
 * compared with PyTorch's (tests/golden/, the golden test's tolerance
 * over the case's largest gradient) for dense, convolution, batch and
 * layer normalization, LoRA, LSTM and multi_head_attention layers, on
 * one thread and on two with split steps (owned dense weights, the loss
 * in the output layer's jobs). Also: a stored plan, made without kept
 * gradients, is planned afresh when they are asked for.
 *
 * usage: test_kept_gradients SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "golden_data.h"

#include <inttypes.h>

/* golden cases, by the layers whose gradients they check */
static const char *const cases[] = {
  "mha_self",                   /* multi_head_attention, attention */
  "mha_cross_mask",             /* multi_head_attention with a mask */
  "transformer_encoder",        /* layer_normalization, mha, addition */
  "mlp",                        /* fully_connected, owned on 2 threads */
  "cnn",                        /* conv2d, pooling */
  "branchy_bn",                 /* batch_normalization, branches */
  "lora_mlp",                   /* fully_connected's LoRA adapters */
  "lora_layers",                /* conv2d's and mha's LoRA adapters */
  "lstm",
};

/* what the two-thread runs went through, checked once at the end */
static unsigned owned_weights, loss_tails;

/* A case's model at its golden batch and weights, gradients kept,
 * planned (or from ini_text, when given, whose plan it may store) on
 * threads threads; NULL after a failed CHECK. */
static tt_model *
kept_model (const char *dir, const char *ini_text, unsigned threads)
{
  char model_rel[512], batch_s[32], ini[2048], bin[2048];
  tt_error err;
  CHECK (golden_meta (dir, "model", model_rel, sizeof model_rel) &&
      golden_meta (dir, "batch", batch_s, sizeof batch_s), "%s: meta.txt", dir);
  snprintf (ini, sizeof ini, "%s/%s", golden_root, model_rel);
  snprintf (bin, sizeof bin, "%s/tests/golden/%s/init.bin", golden_root, dir);
  tt_model *m = ini_text ?
      tt_model_load_ini_text (ini_text, strlen (ini_text), ini, &err) :
      tt_model_load_ini (ini, &err);
  CHECK (m != NULL, "%s: %s", dir, m ? "" : err.message);
  if (!m)
    return NULL;
  tt_status st = tt_model_set_batch_size (m, (uint32_t) atoi (batch_s), &err);
  if (!st)
    st = tt_model_set_threads (m, threads, &err);
  if (!st)
    st = tt_model_keep_gradients (m, &err);
  if (!st)
    st = tt_model_compile (m, &err);
  if (!st)
    st = tt_model_load_bin (m, bin, &err);
  CHECK (st == TT_OK, "%s: %s", dir, err.message);
  if (st) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

/* One step of tt_model_gradients on the case's golden batch, then every
 * trainable weight's gradient against torch's. */
static void
kept_check (tt_model * m, const char *dir, const char *label)
{
  char batch_s[32];
  tt_error err;
  golden_meta (dir, "batch", batch_s, sizeof batch_s);
  golden_array input = golden_read (dir, "input.f32");
  golden_array target = golden_read (dir, "label.f32");
  golden_array grads = golden_read (dir, "grads.f32");
  CHECK (input.count && target.count && grads.count, "%s: golden files", dir);
  float scale = 0;
  for (size_t i = 0; i < grads.count; i++)
    scale = fmaxf (scale, fabsf (grads.data[i]));
  const void *inputs[1] = { input.data };
  double loss;
  tt_status st = tt_model_gradients (m, (uint32_t) atoi (batch_s), inputs,
      NULL, target.data, true, &loss, &err);
  CHECK (st == TT_OK, "%s %s: %s", dir, label, err.message);
  uint32_t n_bin;
  tt_weight **bin_w = golden_bin_weights (m, &n_bin);
  CHECK (bin_w != NULL, "%s: out of memory", dir);
  size_t at = 0;
  for (uint32_t i = 0; !st && bin_w && i < n_bin; i++) {
    const tt_weight *w = bin_w[i];
    if (w->grad < 0)
      continue;
    const char *name = m->tensors[w->grad].name;
    CHECK (at + w->count <= grads.count, "%s %s: %s beyond torch's %zu "
        "gradient values", dir, label, name, grads.count);
    if (at + w->count > grads.count)
      break;
    CHECK (golden_compare_scaled (name, tt_data (m, w->grad),
            grads.data + at, w->count, NULL, scale) == 0,
        "%s %s: kept gradient %s differs from torch's", dir, label, name);
    at += w->count;
  }
  CHECK (st || at == grads.count, "%s %s: %zu gradient values, torch has "
      "%zu", dir, label, at, grads.count);
  free (bin_w);
  free (input.data);
  free (target.data);
  free (grads.data);
}

/* The fused paths a two-thread run went through: owned weights, the
 * loss in the output layer's jobs. */
static void
kept_coverage (const tt_model * m)
{
  for (uint32_t l = 0; l < m->n_layers; l++) {
    loss_tails += m->layers[l].loss_tail;
    for (uint32_t k = 0; k < m->layers[l].n_weights; k++)
      owned_weights += m->layers[l].weights[k].owned;
  }
}

static void
test_planned_pool (void)
{
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (unsigned threads = 1; threads <= 2; threads++) {
      printf ("case %s, %u thread%s\n", cases[c], threads,
          threads > 1 ? "s" : "");
      tt_model *m = kept_model (cases[c], NULL, threads);
      if (!m)
        continue;
      tt_plan_info info;
      tt_model_plan_info (m, &info);
      /* else a later tensor could not take a gradient's bytes */
      CHECK (info.pool_bytes < info.naive_bytes, "%s: the plan shares no "
          "bytes between tensors (pool %" PRIu64 ")", cases[c],
          info.pool_bytes);
      if (threads > 1)
        kept_coverage (m);
      kept_check (m, cases[c], threads > 1 ? "2 threads" : "1 thread");
      tt_model_free (m);
    }
  CHECK (owned_weights > 0, "no case had an owned weight on 2 threads");
  CHECK (loss_tails > 0, "no case ran its loss in the output layer's jobs");
}

/* The line that begins with key removed from text, in place. */
static void
drop_line (char *text, const char *key)
{
  char *at = strstr (text, key);
  while (at && at > text && at[-1] != '\n')
    at = strstr (at + 1, key);
  char *end = at ? strchr (at, '\n') : NULL;
  if (end)
    memmove (at, end + 1, strlen (end + 1) + 1);
}

/* A plan stored without kept gradients lets later tensors take a
 * gradient's bytes: asked for kept gradients, the model plans afresh,
 * whether the plan updates as it goes or not (a plan made while OpenBLAS
 * ran on several threads has whole gradients, each living to its
 * layer's update). */
static void
test_stored_plan (void)
{
  char model_rel[512], ini[2048];
  tt_error err;
  CHECK (golden_meta ("mha_self", "model", model_rel, sizeof model_rel),
      "mha_self: meta.txt");
  snprintf (ini, sizeof ini, "%s/%s", golden_root, model_rel);
  tt_model *plain = tt_model_load_ini (ini, &err);
  char *text = NULL;
  size_t len = 0;
  tt_status st = plain ? tt_model_set_batch_size (plain, 4, &err) : 1;
  if (!st)
    st = tt_model_compile (plain, &err);
  if (!st)
    st = tt_plan_ini_text (plain, &text, &len, &err);
  CHECK (st == TT_OK, "%s", err.message);
  tt_model_free (plain);
  char *stored = text ? strndup (text, len) : NULL;
  free (text);
  for (int whole = 0; stored && whole < 2; whole++) {
    const char *label = whole ? "stored whole plan" : "stored plan";
    if (whole)
      drop_line (stored, "update_as_you_go = ");
    CHECK (!whole || !strstr (stored, "update_as_you_go"), "%s: key left",
        label);
    tt_model *m = kept_model ("mha_self", stored, 1);
    CHECK (m && tt_model_has_stored_plan (m) && !m->plan.from_stored_plan,
        "%s: used with kept gradients", label);
    if (m)
      kept_check (m, "mha_self", label);
    tt_model_free (m);
  }
  free (stored);
}

int
main (int argc, char **argv)
{
  snprintf (golden_root, sizeof golden_root, "%s", argc > 1 ? argv[1] : ".");
  /* two threads always split, so the owned and fused paths run */
  setenv ("TT_THREADS_STEPS", "split", 1);
  TT_TEST_RUN (test_planned_pool);
  TT_TEST_RUN (test_stored_plan);
  return tt_test_summary ();
}
