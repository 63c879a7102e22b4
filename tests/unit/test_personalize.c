/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Personalization's choices of what trains (core/train_choice.c,
 * tt_model_set_train), on a small CNN (conv, batch norm, pooling, two
 * dense layers):
 * - layers:A,B and last:N train bit for bit as the INI that says the same
 *   with trainable = false (weights and optimizer state, memcmp);
 * - frozen weights stay bit-identical through training; biases trains
 *   only biases and normalization parameters, with the gradient the whole
 *   model's training gives them (one SGD step, within rounding);
 * - pools shrink: biases < everything, last:1 < biases, each plan at its
 *   lower bound;
 * - the optimized INI stores the choice ([Plan] train) and loads it
 *   validated, training as the choice did;
 * - under a memory limit the partially frozen model trains as without;
 * - bad choices, unknown layers and N over the weighted layers fail with
 *   messages naming them;
 * - an Adam BIN has one layout whatever trains: it loads across choices.
 *
 * Usage: test_personalize SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "tt_test_hooks.h"
#include "train_steps.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define CNN_HEAD \
    "[Model]\nbatch_size = 4\nloss = cross\n"
#define CNN_BODY(t1, t2) \
    "[input]\ntype = input\ninput_shape = 2:12:12\n" \
    "[conv1]\ntype = conv2d\nfilters = 6\nkernel_size = 3,3\n" \
    "padding = same\n" t1 \
    "[bn1]\ntype = batch_normalization\nactivation = relu\n" t1 \
    "[conv2]\ntype = conv2d\nfilters = 8\nkernel_size = 3,3\n" \
    "padding = same\n" t2 \
    "[bn2]\ntype = batch_normalization\nactivation = relu\n" t2 \
    "[pool]\ntype = pooling2d\npooling = max\npool_size = 2,2\n" \
    "stride = 2,2\n" \
    "[flat]\ntype = flatten\n" \
    "[fc1]\ntype = fully_connected\nunit = 16\nactivation = relu\n" t2 \
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n"
#define ADAM "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
#define SGD "[Optimizer]\ntype = sgd\nlearning_rate = 0.1\n"
#define FROZEN "trainable = false\n"

static const char cnn[] = CNN_HEAD ADAM CNN_BODY ("", "");
static const char cnn_sgd[] = CNN_HEAD SGD CNN_BODY ("", "");
/* conv1 and bn1 frozen by the INI: layers:conv2,bn2,fc1,out */
static const char cnn_front_frozen[] = CNN_HEAD ADAM CNN_BODY (FROZEN, "");
/* all but out frozen by the INI: last:1 */
static const char cnn_all_but_out[] = CNN_HEAD ADAM CNN_BODY (FROZEN,
    FROZEN);

static tt_model *
open_choice (const char *text, const char *choice, uint64_t limit,
    tt_error * err)
{
  tt_model *m = tt_model_load_ini_text (text, strlen (text), "cnn.ini", err);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 7);
  if (tt_model_set_threads (m, 1, err) ||
      (choice && tt_model_set_train (m, choice, err)) ||
      (limit && tt_model_set_memory_limit (m, limit, err)) ||
      tt_model_compile (m, err)) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

/* a copy of every weight's values, in layer and weight order */
static float *
weights_copy (const tt_model * m)
{
  size_t n = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    for (uint32_t w = 0; w < m->layers[i].n_weights; w++)
      n += m->tensors[m->layers[i].weights[w].value].count;
  float *out = malloc ((n ? n : 1) * sizeof *out);
  size_t at = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    for (uint32_t w = 0; w < m->layers[i].n_weights; w++) {
      const tt_tensor *t = &m->tensors[m->layers[i].weights[w].value];
      memcpy (out + at, t->data, t->count * sizeof (float));
      at += t->count;
    }
  return out;
}

static bool
is_bias (const tt_weight * w)
{
  return !strcmp (w->suffix, "bias") || !strcmp (w->suffix, "gamma") ||
      !strcmp (w->suffix, "beta");
}

/* after training m from the values in before: frozen weights the same,
 * trainable ones changed */
static void
check_frozen_kept (const tt_model * m, const float *before, const char *what)
{
  size_t at = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    for (uint32_t w = 0; w < m->layers[i].n_weights; w++) {
      const tt_weight *wt = &m->layers[i].weights[w];
      const tt_tensor *t = &m->tensors[wt->value];
      const bool same = !memcmp (before + at, t->data,
          t->count * sizeof (float));
      const bool stats = !strcmp (wt->suffix, "moving_mean") ||
          !strcmp (wt->suffix, "moving_variance");
      if (!stats)
        CHECK (same == !wt->trainable, "%s: %s:%s %s", what,
            m->layers[i].name, wt->suffix, same ? "did not train" :
            "changed while frozen");
      CHECK (wt->trainable == (wt->grad >= 0) &&
          (wt->trainable || wt->opt[0] < 0),
          "%s: %s:%s gradient and state only when trainable", what,
          m->layers[i].name, wt->suffix);
      at += t->count;
    }
}

static void
test_same_as_ini (void)
{
  const struct
  {
    const char *choice, *ini;
  } cases[] = {
    {"layers:conv2,bn2,fc1,out", cnn_front_frozen},
    {"last:1", cnn_all_but_out},
    {"layers:out", cnn_all_but_out},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tt_error err;
    tt_model *a = open_choice (cnn, cases[k].choice, 0, &err);
    CHECK (a != NULL, "%s: %s", cases[k].choice, a ? "" : err.message);
    tt_model *b = open_choice (cases[k].ini, NULL, 0, &err);
    CHECK (b != NULL, "ini: %s", b ? "" : err.message);
    if (!a || !b) {
      tt_model_free (a);
      tt_model_free (b);
      continue;
    }
    tt_plan_info pa, pb;
    tt_model_plan_info (a, &pa);
    tt_model_plan_info (b, &pb);
    CHECK (pa.pool_bytes == pb.pool_bytes, "%s: pool %" PRIu64 " vs the "
        "INI's %" PRIu64, cases[k].choice, pa.pool_bytes, pb.pool_bytes);
    float *before = weights_copy (a);
    tt_test_train_steps (a, cases[k].choice, 3, 255.0f);
    tt_test_train_steps (b, "ini", 3, 255.0f);
    CHECK (tt_test_same_state (a, b, cases[k].choice), "%s trains as the "
        "INI with trainable = false", cases[k].choice);
    check_frozen_kept (a, before, cases[k].choice);
    free (before);
    tt_model_free (a);
    tt_model_free (b);
  }
}

/* A path in the temporary folder for this process */
static void
temp_path (char *out, size_t cap, const char *name)
{
  const char *tmp = getenv ("TMPDIR");
  snprintf (out, cap, "%s/tt-personalize-%d-%s", tmp && *tmp ? tmp : "/tmp",
      (int) getpid (), name);
}

/* An Adam BIN has the same layout whatever --train chose (the moments of
 * every weight the INI trains): a BIN of a full run loads into last:1 with
 * the moments of out, and last:1's BIN, the frozen weights' moments zero,
 * loads back into the full model, weights and moments as saved. */
static void
test_bin_across_choices (void)
{
  char full_bin[512], last_bin[512];
  temp_path (full_bin, sizeof full_bin, "full.bin");
  temp_path (last_bin, sizeof last_bin, "last.bin");
  tt_error err;
  tt_model *full = open_choice (cnn, NULL, 0, &err);
  tt_model *last = open_choice (cnn, "last:1", 0, &err);
  tt_model *again = open_choice (cnn, NULL, 0, &err);
  CHECK (full && last && again, "open: %s", err.message);
  if (!full || !last || !again)
    goto out;
  tt_test_train_steps (full, "full", 2, 255.0f);
  CHECK (!tt_model_save_bin (full, full_bin, &err), "save: %s", err.message);
  CHECK (!tt_model_load_bin (last, full_bin, &err), "the full run's BIN into "
      "last:1: %s", err.message);
  CHECK (!tt_model_load_bin (again, full_bin, &err), "reload: %s", err.message);
  /* last:1 holds the full run's weights and out's moments */
  const tt_layer *lo = NULL, *fo = NULL;
  for (uint32_t i = 0; i < last->n_layers; i++)
    if (!strcmp (last->layers[i].name, "out"))
      lo = &last->layers[i];
  for (uint32_t i = 0; i < full->n_layers; i++)
    if (!strcmp (full->layers[i].name, "out"))
      fo = &full->layers[i];
  CHECK (lo && fo, "layer out");
  if (!lo || !fo)
    goto out;
  float *wf = weights_copy (full), *wl = weights_copy (last);
  size_t nw = 0;
  for (uint32_t i = 0; i < full->n_layers; i++)
    for (uint32_t w = 0; w < full->layers[i].n_weights; w++)
      nw += full->layers[i].weights[w].count;
  CHECK (!memcmp (wf, wl, nw * sizeof *wf), "last:1 got the full run's "
      "weights");
  for (uint32_t w = 0; w < lo->n_weights; w++)
    for (int k = 0; k < 2; k++) {
      const tt_tensor *a = &last->tensors[lo->weights[w].opt[k]];
      const tt_tensor *b = &full->tensors[fo->weights[w].opt[k]];
      CHECK (a->count == b->count && !memcmp (a->data, b->data,
              a->count * sizeof (float)), "out:%s moment %d loaded",
          lo->weights[w].suffix, k);
    }
  free (wf);
  free (wl);
  /* last:1 trains and saves a BIN of the full model's layout and size */
  tt_test_train_steps (last, "last:1", 2, 255.0f);
  CHECK (!tt_model_save_bin (last, last_bin, &err), "save: %s", err.message);
  struct stat sf, sl;
  CHECK (!stat (full_bin, &sf) && !stat (last_bin, &sl) &&
      sf.st_size == sl.st_size, "the BINs' sizes differ: %lld and %lld",
      (long long) sf.st_size, (long long) sl.st_size);
  CHECK (!tt_model_load_bin (again, last_bin, &err), "last:1's BIN into the "
      "full model: %s", err.message);
  wl = weights_copy (last);
  float *wa = weights_copy (again);
  CHECK (!memcmp (wl, wa, nw * sizeof *wl), "the full model got last:1's "
      "weights");
  free (wl);
  free (wa);
  for (uint32_t i = 0; i < again->n_layers; i++) {
    const tt_layer *l = &again->layers[i];
    for (uint32_t w = 0; w < l->n_weights; w++)
      for (int k = 0; k < 2 && l->weights[w].opt[k] >= 0; k++) {
        const tt_tensor *t = &again->tensors[l->weights[w].opt[k]];
        bool zero = true;
        for (size_t j = 0; j < t->count; j++)
          zero &= t->data[j] == 0.0f;
        CHECK (zero == (strcmp (l->name, "out") != 0), "%s:%s moment %d: %s",
            l->name, l->weights[w].suffix, k, zero ? "zero" : "not zero");
      }
  }
out:
  unlink (full_bin);
  unlink (last_bin);
  tt_model_free (full);
  tt_model_free (last);
  tt_model_free (again);
}

/* biases: only biases and gamma/beta train, with the gradient the whole
 * model gives them at the same weights (one SGD step) */
static void
test_biases (void)
{
  tt_error err;
  tt_model *a = open_choice (cnn_sgd, "biases", 0, &err);
  CHECK (a != NULL, "biases: %s", a ? "" : err.message);
  tt_model *b = open_choice (cnn_sgd, NULL, 0, &err);
  CHECK (b != NULL, "everything: %s", b ? "" : err.message);
  if (!a || !b) {
    tt_model_free (a);
    tt_model_free (b);
    return;
  }
  for (uint32_t i = 0; i < a->n_layers; i++)
    for (uint32_t w = 0; w < a->layers[i].n_weights; w++) {
      const tt_weight *wt = &a->layers[i].weights[w];
      const bool stats = !strcmp (wt->suffix, "moving_mean") ||
          !strcmp (wt->suffix, "moving_variance");
      if (!stats)
        CHECK (wt->trainable == is_bias (wt), "biases: %s:%s trainable %d",
            a->layers[i].name, wt->suffix, wt->trainable);
    }
  float *before = weights_copy (a);
  tt_test_train_steps (a, "biases", 1, 255.0f);
  tt_test_train_steps (b, "everything", 1, 255.0f);
  check_frozen_kept (a, before, "biases");
  double worst = 0;
  for (uint32_t i = 0; i < a->n_layers; i++)
    for (uint32_t w = 0; w < a->layers[i].n_weights; w++) {
      const tt_weight *wa = &a->layers[i].weights[w];
      const tt_weight *wb = &b->layers[i].weights[w];
      if (!wa->trainable)
        continue;
      const float *x = a->tensors[wa->value].data;
      const float *y = b->tensors[wb->value].data;
      for (size_t j = 0; j < a->tensors[wa->value].count; j++) {
        double d = fabs ((double) x[j] - y[j]) / (1e-3 + fabs (y[j]));
        worst = d > worst ? d : worst;
      }
    }
  CHECK (worst < 1e-4, "biases: a step moves them as the whole model's "
      "step does (worst relative difference %g)", worst);
  free (before);
  tt_model_free (a);
  tt_model_free (b);
}

static uint64_t
pool_of (const char *choice, bool *at_bound)
{
  tt_error err;
  tt_model *m = open_choice (cnn, choice, 0, &err);
  CHECK (m != NULL, "%s: %s", choice ? choice : "everything",
      m ? "" : err.message);
  if (!m)
    return 0;
  tt_plan_info p;
  tt_model_plan_info (m, &p);
  *at_bound = p.pool_bytes == p.lower_bound;
  tt_model_free (m);
  return p.pool_bytes;
}

static void
test_pools_shrink (void)
{
  const char *choices[] = { "everything", "layers:conv2,bn2,fc1,out",
    "biases", "last:2", "last:1"
  };
  uint64_t pool[5];
  for (int i = 0; i < 5; i++) {
    bool bound = false;
    pool[i] = pool_of (choices[i], &bound);
    CHECK (bound, "%s: pool %" PRIu64 " at its lower bound", choices[i],
        pool[i]);
    printf ("%-26s pool %8" PRIu64 " bytes\n", choices[i], pool[i]);
  }
  CHECK (pool[2] < pool[0], "biases %" PRIu64 " < everything %" PRIu64,
      pool[2], pool[0]);
  CHECK (pool[1] < pool[0], "frozen front %" PRIu64 " < everything %"
      PRIu64, pool[1], pool[0]);
  CHECK (pool[4] < pool[2], "last:1 %" PRIu64 " < biases %" PRIu64, pool[4],
      pool[2]);
  CHECK (pool[4] < pool[3], "last:1 %" PRIu64 " < last:2 %" PRIu64, pool[4],
      pool[3]);
}

/* the optimized INI stores the choice and loads it validated */
static void
test_stored_plan (void)
{
  tt_error err;
  tt_model *a = open_choice (cnn, "biases", 0, &err);
  CHECK (a != NULL, "biases: %s", a ? "" : err.message);
  if (!a)
    return;
  char *text = NULL;
  size_t len = 0;
  CHECK (tt_plan_ini_text (a, &text, &len, &err) == TT_OK, "plan text: %s",
      err.message);
  /* the text is len bytes, not terminated */
  char *z = text ? malloc (len + 1) : NULL;
  if (z) {
    memcpy (z, text, len);
    z[len] = '\0';
  }
  free (text);
  text = z;
  CHECK (text && strstr (text, "\ntrain = biases\n"), "[Plan] train stored");
  tt_model *b = text ? open_choice (text, NULL, 0, &err) : NULL;
  CHECK (b != NULL, "stored plan loads: %s", b ? "" : err.message);
  if (b) {
    tt_plan_info p;
    tt_model_plan_info (b, &p);
    CHECK (p.from_stored_plan, "the stored plan serves");
    tt_test_train_steps (a, "biases", 2, 255.0f);
    tt_test_train_steps (b, "stored", 2, 255.0f);
    CHECK (tt_test_same_state (a, b, "stored"), "the stored choice trains "
        "as the chosen one");
  }
  /* another choice than the stored plan's: its flags differ, refused */
  tt_model *c = text ? open_choice (text, "last:1", 0, &err) : NULL;
  CHECK (c == NULL && strstr (err.message, "fingerprint"), "a stored plan "
      "for another choice is refused: %s", c ? "(loaded)" : err.message);
  tt_model_free (c);
  tt_model_free (b);
  tt_model_free (a);
  free (text);
}

/* a partially frozen model under a memory limit trains as without */
static void
test_memory_limit (void)
{
  tt_error err;
  tt_model *a = open_choice (cnn, "biases", 0, &err);
  CHECK (a != NULL, "biases: %s", a ? "" : err.message);
  if (!a)
    return;
  tt_plan_info p;
  tt_model_plan_info (a, &p);
  uint64_t limit = p.pool_bytes - p.pool_bytes / 8;
  tt_model *b = open_choice (cnn, "biases", limit, &err);
  if (!b && strstr (err.message, "smallest")) {
    /* the smallest feasible limit, named in the message */
    const char *num = strstr (err.message, "smallest");
    while (*num && (*num < '0' || *num > '9'))
      num++;
    limit = strtoull (num, NULL, 10);
    b = limit < p.pool_bytes ? open_choice (cnn, "biases", limit, &err) : NULL;
  }
  CHECK (b != NULL, "biases under %" PRIu64 ": %s", limit,
      b ? "" : err.message);
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
test_bad_choices (void)
{
  const struct
  {
    const char *choice, *want1, *want2;
  } cases[] = {
    {"some", "'some' is not a choice", "last:N"},
    {"last:0", "'last:0' is not a choice", "biases"},
    {"last:x", "'last:x' is not a choice", "layers:NAME"},
    {"layers:", "'layers:' is not a choice", "everything"},
    {"layers:a,,b", "is not a choice", "everything"},
    {"layers:conv2,nope", "no layer named 'nope'", "conv1, bn1, conv2"},
    {"layers:pool", "nothing trains in 'pool'", "fc1, out"},
    {"last:7", "has 6 layers with trainable weights, not 7",
        "N in [1, 6]"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tt_error err;
    tt_model *m = open_choice (cnn, cases[k].choice, 0, &err);
    CHECK (m == NULL && strstr (err.message, cases[k].want1) &&
        strstr (err.message, cases[k].want2), "%s: %s", cases[k].choice,
        m ? "(compiled)" : err.message);
    tt_model_free (m);
  }
  /* an INI-frozen layer cannot be chosen back */
  tt_error err;
  tt_model *m = open_choice (cnn_front_frozen, "layers:conv1", 0, &err);
  CHECK (m == NULL && strstr (err.message, "nothing trains in 'conv1'"),
      "INI-frozen: %s", m ? "(compiled)" : err.message);
  tt_model_free (m);
  /* biases of a model with none */
  static const char no_bias[] = "[Model]\nbatch_size = 2\nloss = mse\n"
      "[Optimizer]\ntype = sgd\nlearning_rate = 0.1\n"
      "[input]\ntype = input\ninput_shape = 1:1:4\n"
      "[fc]\ntype = fully_connected\nunit = 3\ndisable_bias = true\n";
  m = open_choice (no_bias, "biases", 0, &err);
  CHECK (m == NULL && strstr (err.message, "no trainable bias"), "no bias: "
      "%s", m ? "(compiled)" : err.message);
  tt_model_free (m);
}

/* --train biases on the zoo transformer: its attentions are frozen
 * whole, so the heads' output is not kept from forward to backward (its
 * derivative has a scratch of its own); the pool drops by it, at its
 * lower bound, and two Adam steps give the weights and optimizer state of
 * the plan that keeps it, bit for bit */
static void
test_attention_frozen_heads (const char *root)
{
  char path[4096];
  snprintf (path, sizeof path, "%s/tests/models/zoo_transformer.ini", root);
  tt_model *m[2] = { NULL, NULL };
  uint64_t pool[2] = { 0, 0 };
  for (int keep = 0; keep < 2; keep++) {
    tt_error err;
    tt_mha_force_keep_heads (keep);
    m[keep] = tt_model_load_ini (path, &err);
    CHECK (m[keep] != NULL, "%s: %s", path, m[keep] ? "" : err.message);
    if (!m[keep])
      break;
    tt_model_set_seed (m[keep], 7);
    tt_status st = tt_model_set_threads (m[keep], 1, &err);
    if (!st)
      st = tt_model_set_batch_size (m[keep], 4, &err);
    if (!st)
      st = tt_model_set_train (m[keep], "biases", &err);
    if (!st)
      st = tt_model_compile (m[keep], &err);
    CHECK (!st, "zoo_transformer biases: %s", st ? err.message : "");
    if (st) {
      tt_model_free (m[keep]);
      m[keep] = NULL;
      break;
    }
    tt_plan_info p;
    tt_model_plan_info (m[keep], &p);
    pool[keep] = p.pool_bytes;
    CHECK (p.pool_bytes == p.lower_bound, "%s: pool %" PRIu64 " at its "
        "lower bound %" PRIu64, keep ? "heads kept" : "heads apart",
        p.pool_bytes, p.lower_bound);
  }
  tt_mha_force_keep_heads (false);
  if (m[0] && m[1]) {
    printf ("zoo_transformer biases batch 4: pool %" PRIu64 " bytes, %"
        PRIu64 " with the heads kept\n", pool[0], pool[1]);
    CHECK (pool[0] < pool[1], "the frozen attentions' heads dropped: %"
        PRIu64 " < %" PRIu64, pool[0], pool[1]);
    tt_test_train_steps (m[0], "heads apart", 2, 255.0f);
    tt_test_train_steps (m[1], "heads kept", 2, 255.0f);
    CHECK (tt_test_same_state (m[0], m[1], "heads"), "trains as the plan "
        "keeping the heads, bit for bit");
  }
  tt_model_free (m[0]);
  tt_model_free (m[1]);
}

int
main (int argc, char **argv)
{
  (void) argc;
  (void) argv;
  TT_TEST_RUN (test_same_as_ini);
  TT_TEST_RUN (test_biases);
  TT_TEST_RUN (test_pools_shrink);
  TT_TEST_RUN (test_stored_plan);
  TT_TEST_RUN (test_memory_limit);
  TT_TEST_RUN (test_bad_choices);
  TT_TEST_RUN (test_bin_across_choices);
  /* personalization: frozen attentions' heads */
  if (argc > 1)
    test_attention_frozen_heads (argv[1]);
  return tt_test_summary ();
}
