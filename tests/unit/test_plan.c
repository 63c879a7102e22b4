/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The memory plan end to end: planned pools against their bounds and the
 * depth-first order, training in the planned pool bit-identical to the
 * naive layout, the optimized INI round trip, and a corpus of damaged
 * plans each rejected with its own message.
 *
 * usage: test_plan SOURCE_ROOT
 */
#include "tt_internal.h"
#include "order_search.h"
#include "tt_test.h"
#include "plan_bound.h"

#include <inttypes.h>
#include <pthread.h>
#include <math.h>
#include <time.h>

static char root[1024];

static const char *models[] = {
  "fmnist_mlp.ini", "fmnist_cnn.ini", "branchy_bn.ini", "resnet_bn.ini",
  "inception.ini", "transfer_frozen.ini", "sensor_conv1d.ini",
  "sensor_lstm.ini", "sensor_gru.ini",
  /* convolutions */
  "conv1d_padding.ini", "mobilenet_block.ini",
  "tiny_transformer.ini",
  "activations_mlp.ini",
  "se_block.ini", "ops_chain.ini",
  /* upsample2d, channel_shuffle, flatten's dimensions */
  "upsample_shuffle.ini",
  /* pooling: ceil_mode, count_include_pad */
  "pool_modes.ini",
  /* tensor-manipulation layers */
  "tensorops.ini", "tensorops_gather.ini",
  /* the rest of nntrainer's set: clip, kld, constant_derivative,
   * centroid_knn */
  "clip_kld.ini", "constant_derivative.ini", "centroid_knn.ini",
  /* transposed convolution */
  "conv_transpose.ini", "preprocess.ini", "l2norm_mlp.ini",
  /* attention: multi_head_attention, attention */
  "mha_self.ini", "mha_cross_mask.ini", "transformer_encoder.ini",
  /* the recurrent family */
  "sensor_rnn.ini", "sensor_bilstm.ini", "cells.ini",
  /* the recurrent family's last cells: grucell, zoneout_lstmcell */
  "cells2.ini", "cells2_zoneout.ini",
  /* multi_head_attention's attention weights */
  "mha_weights.ini",
  /* conv2dtranspose's groups */
  "conv_transpose_groups.ini",
  /* mixture-of-logistics attention */
  "mol_attention.ini", NULL
};

static tt_model *
plan_open (const char *path, tt_plan_mode mode, uint32_t batch, tt_error * err)
{
  tt_model *m = tt_model_load_ini (path, err);
  if (!m)
    return NULL;
  if ((batch && tt_model_set_batch_size (m, batch, err)) ||
      tt_model_set_plan_mode (m, mode, err) || tt_model_compile (m, err)) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

/* Bounds and orders of every model of tests/models. */
static void
test_models (void)
{
  for (int i = 0; models[i]; i++) {
    char path[2048];
    tt_error err;
    snprintf (path, sizeof path, "%s/tests/models/%s", root, models[i]);
    tt_model *m = plan_open (path, TT_PLAN_AUTO, 0, &err);
    CHECK (m != NULL, "%s: %s", models[i], m ? "" : err.message);
    if (!m)
      continue;
    tt_plan_info p;
    tt_model_plan_info (m, &p);
    printf ("%-20s naive %10" PRIu64 "  dfs %10" PRIu64 "  pool %10" PRIu64
        "  bound %10" PRIu64 "  (%.4f)  %.2f ms\n", models[i],
        p.naive_bytes, p.dfs_pool_bytes, p.pool_bytes, p.lower_bound,
        (double) p.pool_bytes / (double) p.lower_bound, p.plan_seconds * 1e3);
    CHECK (p.pool_bytes >= p.lower_bound, "%s: pool below the bound",
        models[i]);
    CHECK (p.pool_bytes <= p.dfs_pool_bytes, "%s: worse than depth-first",
        models[i]);
    CHECK (p.pool_bytes < p.naive_bytes, "%s: no saving over naive", models[i]);
    /* the planner's goal on the models we ship is the bound itself, and
     * it reaches it on all of them but one (plan_bound.h; fmnist_cnn was
     * 0.79% above while its second conv kept F(2x2) Winograd scratch;
     * transfer_frozen needs the peak-first construction, plan_offsets.c,
     * or its pool is 4.4% above) */
    CHECK (plan_bound_met (models[i], p.pool_bytes, p.lower_bound),
        "%s: pool %.4f x the bound", models[i],
        (double) p.pool_bytes / (double) p.lower_bound);
    /* the order search's own peak is the interval bound of its order */
    CHECK (tt_order_peak (m, m->exec, m->align) == p.lower_bound,
        "%s: order peak %" PRIu64 " != bound %" PRIu64, models[i],
        tt_order_peak (m, m->exec, m->align), p.lower_bound);
    tt_model_free (m);
  }
}

/* A few training steps in the planned pool and in the naive layout must
 * give the same bytes. */
static void
test_identical_training (const char *name, const char *ini_path)
{
  char saved[2][512];
  static float eval_out[2][4 * 64];
  for (int mode = 0; mode < 2; mode++) {
    tt_error err;
    tt_model *m = plan_open (ini_path, mode ? TT_PLAN_NAIVE : TT_PLAN_AUTO,
        4, &err);
    CHECK (m != NULL, "%s: %s", name, m ? "" : err.message);
    if (!m)
      return;
    tt_shape in = { 0, 0, 0 }, lb = tt_model_label_shape (m);
    tt_model_input_shape (m, 0, &in);
    size_t nx = 4 * (size_t) in.channel * in.height * in.width;
    size_t nl = 4 * (size_t) lb.channel * lb.height * lb.width;
    float *x = malloc (nx * sizeof *x), *t = calloc (nl, sizeof *t);
    memset (eval_out[mode], 0, sizeof eval_out[mode]);
    for (size_t i = 0; i < nx; i++)
      x[i] = (float) ((i * 7919) % 255);
    for (int b = 0; b < 4; b++)
      t[b * (nl / 4) + (size_t) b % (nl / 4)] = 1;
    const void *inputs[1] = { x };
    for (int s = 0; s < 5; s++) {
      tt_batch_result r;
      CHECK (tt_model_train_batch (m, s == 4 ? 3 : 4, inputs, NULL, t, &r,
              &err) == TT_OK, "%s: %s", name, err.message);
    }
    /* evaluation runs in the same pool, on lifetimes inside the training
     * ones: its outputs must agree too */
    tt_batch_result r;
    CHECK (tt_model_eval_batch (m, 4, inputs, NULL, t, &r, &err) == TT_OK,
        "%s: %s", name, err.message);
    memcpy (eval_out[mode], tt_model_output (m),
        (nl < 4 * 64 ? nl : 4 * 64) * sizeof (float));
    snprintf (saved[mode], sizeof saved[mode], "%s", tt_test_write_text (mode
            ? "naive.bin" : "planned.bin", ""));
    CHECK (tt_model_save_bin (m, saved[mode], &err) == TT_OK, "%s",
        err.message);
    free (x);
    free (t);
    tt_model_free (m);
  }
  size_t na = 0, nb = 0;
  char *a = tt_test_read_file (saved[0], &na);
  char *b = tt_test_read_file (saved[1], &nb);
  CHECK (a && b && na == nb && na > 0 && !memcmp (a, b, na),
      "%s: planned and naive training differ", name);
  CHECK (!memcmp (eval_out[0], eval_out[1], sizeof eval_out[0]),
      "%s: planned and naive evaluation differ", name);
  free (a);
  free (b);
}

static void
test_round_trip (void)
{
  char path[2048], opt[512];
  tt_error err;
  snprintf (path, sizeof path, "%s/tests/models/branchy_bn.ini", root);
  tt_model *m = plan_open (path, TT_PLAN_AUTO, 0, &err);
  CHECK (m != NULL, "%s", m ? "" : err.message);
  if (!m)
    return;
  snprintf (opt, sizeof opt, "%s", tt_test_write_text ("rt.opt.ini", ""));
  CHECK (tt_model_save_plan_ini (m, opt, &err) == TT_OK, "%s", err.message);
  tt_model *o = plan_open (opt, TT_PLAN_AUTO, 0, &err);
  CHECK (o != NULL, "reload: %s", o ? "" : err.message);
  if (o) {
    tt_plan_info p;
    tt_model_plan_info (o, &p);
    CHECK (p.from_stored_plan, "the stored plan was not used");
    CHECK (o->pool_bytes == m->pool_bytes, "pool size changed");
    bool same = o->n_tensors == m->n_tensors;
    for (uint32_t i = 0; same && i < m->n_tensors; i++)
      same = o->tensors[i].offset == m->tensors[i].offset &&
          !strcmp (o->tensors[i].name, m->tensors[i].name);
    for (uint32_t i = 0; same && i < m->n_layers; i++)
      same = o->exec[i] == m->exec[i] &&
          o->layers[i].in_place == m->layers[i].in_place;
    CHECK (same, "offsets, order or in-place flags changed in the round "
        "trip");
    /* saving the optimized INI again gives the same file */
    char opt2[512];
    snprintf (opt2, sizeof opt2, "%s", tt_test_write_text ("rt2.opt.ini", ""));
    CHECK (tt_model_save_plan_ini (o, opt2, &err) == TT_OK, "%s", err.message);
    char *a = tt_test_read_file (opt, NULL);
    char *b = tt_test_read_file (opt2, NULL);
    CHECK (a && b && !strcmp (a, b), "re-saving changes the optimized INI");
    free (a);
    free (b);
    tt_model_free (o);
  }
  /* a different batch makes the plan stale; re-planning is on request */
  o = plan_open (opt, TT_PLAN_AUTO, 8, &err);
  CHECK (o == NULL && strstr (err.message, "stale"), "batch change: %s",
      o ? "accepted" : err.message);
  tt_model_free (o);
  o = plan_open (opt, TT_PLAN_REPLAN, 8, &err);
  CHECK (o != NULL, "replan: %s", o ? "" : err.message);
  tt_model_free (o);
  tt_model_free (m);
}

/* Replaces the first occurrence of from by to in text (fresh string). */
static char *
plan_edit (const char *text, const char *from, const char *to)
{
  const char *at = strstr (text, from);
  if (!at)
    return NULL;
  size_t n = strlen (text) - strlen (from) + strlen (to);
  char *s = malloc (n + 1);
  size_t pre = (size_t) (at - text);
  memcpy (s, text, pre);
  strcpy (s + pre, to);
  strcat (s, at + strlen (from));
  return s;
}

/* The value text of "key = value" in the optimized INI. */
static const char *
plan_value (const char *text, const char *key, char *out, size_t len)
{
  char pat[256];
  snprintf (pat, sizeof pat, "\n%s = ", key);
  /* look in the plan only: the model has keys of the same names */
  const char *plan = strstr (text, "[Plan]");
  const char *at = plan ? strstr (plan, pat) : NULL;
  if (!at)
    return NULL;
  at += strlen (pat);
  size_t n = strcspn (at, " \n#");
  snprintf (out, len, "%.*s", (int) (n < len ? n : len - 1), at);
  return out;
}

static void
test_bad_plans (void)
{
  char path[2048], opt[512];
  tt_error err;
  snprintf (path, sizeof path, "%s/tests/models/branchy_bn.ini", root);
  tt_model *m = plan_open (path, TT_PLAN_AUTO, 0, &err);
  if (!m)
    return;
  snprintf (opt, sizeof opt, "%s", tt_test_write_text ("good.opt.ini", ""));
  tt_model_save_plan_ini (m, opt, &err);
  char *good = tt_test_read_file (opt, NULL);
  char v[64], line_from[256], line_to[256];

  /* two tensors whose lifetimes intersect, at one offset: conv0:out and
   * bn0:out are both live when bn0 runs forward */
  char off_a[64], off_b[64];
  plan_value (good, "conv0:out", off_a, sizeof off_a);
  plan_value (good, "bn0:out", off_b, sizeof off_b);
  char pool[64];
  plan_value (good, "pool_size", pool, sizeof pool);
  uint64_t pool_n = strtoull (pool, NULL, 10);

  typedef struct
  {
    const char *name, *from, *to, *expect;
  } bad_case;
  bad_case cases[32];
  int n = 0;
  char buf[16][256];
#define CASE(nm, f, t, e) cases[n++] = (bad_case) { nm, f, t, e }
  snprintf (buf[0], 256, "\nconv0:out = %s ", off_a);
  snprintf (buf[1], 256, "\nconv0:out = %s ", off_b);
  CASE ("overlap", buf[0], buf[1], "overlap");
  snprintf (buf[2], 256, "\nconv0:out = %" PRIu64 " ", pool_n);
  CASE ("out of bounds", buf[0], buf[2], "conv0:out");
  snprintf (buf[3], 256, "\nconv0:out = %" PRIu64 " ",
      (uint64_t) strtoull (off_a, NULL, 10) + 4);
  CASE ("misaligned", buf[0], buf[3], "align");
  snprintf (buf[4], 256, "\nconv0:out = %s ", off_a);
  CASE ("missing tensor", buf[4], "\n# removed ", "conv0:out: missing tensor");
  CASE ("extra tensor", "[Plan.Tensors]\n", "[Plan.Tensors]\nghost:out = 0\n",
      "ghost:out");
  CASE ("negative offset", buf[0], "\nconv0:out = -64 ", "conv0:out");
  CASE ("huge offset", buf[0], "\nconv0:out = 99999999999999999999 ",
      "conv0:out");
  plan_value (good, "fingerprint", v, sizeof v);
  snprintf (buf[6], 256, "fingerprint = %s", v);
  CASE ("wrong fingerprint", buf[6], "fingerprint = 0123456789abcdef",
      "different model");
  CASE ("wrong version", "version = 1", "version = 7", "version");
  CASE ("unknown key", "[Plan]\n", "[Plan]\ncolour = blue\n", "colour");
  snprintf (buf[5], 256, "pool_size = %s\nalignment", pool);
  CASE ("pool too small", buf[5], "pool_size = 64\nalignment",
      "exceed the pool");
  snprintf (buf[9], 256, "pool_size = %" PRIu64 "\nalignment", pool_n + 1);
  CASE ("pool not aligned", buf[5], buf[9], "not a multiple");
  plan_value (good, "conv0", v, sizeof v);
  snprintf (buf[7], 256, "\ninput = 0\nconv0 = %s\n", v);
  snprintf (buf[8], 256, "\ninput = %s\nconv0 = 0\n", v);
  CASE ("order not topological", buf[7], buf[8], "before its input");
  CASE ("duplicate position", "\ninput = 0\n", "\ninput = 1\n",
      "both run at position 1");
  CASE ("missing layer", "\ncat = ", "\n# cat = ", "cat: missing layer");
  CASE ("unknown layer", "[Plan.Layers]\n",
      "[Plan.Layers]\nnobody = 0\n", "nobody");
  CASE ("bad in-place word", "\ninput = 0", "\ninput = 0, maybe", "maybe");
  CASE ("batch changed", "batch_size = 4", "batch_size = 5", "stale");
  CASE ("architecture changed", "unit = 5", "unit = 6", "different model");
  plan_value (good, "bn1", v, sizeof v);
  snprintf (line_from, sizeof line_from, "\nbn1 = %s\n", v);
  snprintf (line_to, sizeof line_to, "\nbn1 = %s, inplace\n", v);
  CASE ("in-place not eligible", line_from, line_to, "cannot run in place");

  const char *seen[32];
  for (int c = 0; c < n; c++) {
    char *bad = plan_edit (good, cases[c].from, cases[c].to);
    CHECK (bad != NULL, "%s: pattern '%s' not found", cases[c].name,
        cases[c].from);
    if (!bad)
      continue;
    const char *p = tt_test_write_text ("bad.opt.ini", bad);
    tt_model *b = plan_open (p, TT_PLAN_AUTO, 0, &err);
    CHECK (b == NULL, "%s: accepted", cases[c].name);
    if (!b) {
      CHECK (strstr (err.message, cases[c].expect) != NULL,
          "%s: message lacks '%s': %s", cases[c].name, cases[c].expect,
          err.message);
      printf ("rejected %-22s %s\n", cases[c].name, err.message);
      /* every case gets its own message */
      seen[c] = strdup (err.message);
      for (int k = 0; k < c; k++)
        if (seen[k] && strcmp (cases[k].name, cases[c].name))
          CHECK (strcmp (seen[k], seen[c]) != 0 ||
              !strcmp (cases[k].expect, cases[c].expect),
              "%s and %s give the same message", cases[k].name, cases[c].name);
    } else {
      seen[c] = NULL;
    }
    tt_model_free (b);
    free (bad);
  }
  for (int c = 0; c < n; c++)
    free ((void *) seen[c]);
  free (good);
  tt_model_free (m);
}

/* A generated model of several hundred layers: validating its stored
 * plan must be much faster than planning it. */
static void
test_large_model (void)
{
  size_t cap = 1 << 20, len = 0;
  char *ini = malloc (cap);
  len += (size_t) snprintf (ini + len, cap - len,
      "[Model]\ntype=NeuralNetwork\nbatch_size=8\nloss=mse\n"
      "[Optimizer]\ntype=adam\n[in]\ntype=input\ninput_shape=1:1:64\n");
  for (int i = 0; i < 300; i++)
    len += (size_t) snprintf (ini + len, cap - len,
        "[fc%d]\ntype=fully_connected\nunit=%d\nactivation=%s\n", i,
        32 + (i * 37) % 64, i % 3 ? "relu" : "tanh");
  const char *path = tt_test_write_text ("large.ini", ini);
  char stored[512];
  tt_error err;
  struct timespec t0, t1, t2;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  tt_model *m = plan_open (path, TT_PLAN_AUTO, 0, &err);
  clock_gettime (CLOCK_MONOTONIC, &t1);
  CHECK (m != NULL, "large: %s", m ? "" : err.message);
  if (!m) {
    free (ini);
    return;
  }
  snprintf (stored, sizeof stored, "%s", tt_test_write_text ("large.opt.ini",
          ""));
  tt_model_save_plan_ini (m, stored, &err);
  clock_gettime (CLOCK_MONOTONIC, &t1);
  tt_model *o = plan_open (stored, TT_PLAN_AUTO, 0, &err);
  clock_gettime (CLOCK_MONOTONIC, &t2);
  CHECK (o != NULL, "large reload: %s", o ? "" : err.message);
  tt_plan_info p, q;
  tt_model_plan_info (m, &p);
  if (o) {
    tt_model_plan_info (o, &q);
    printf ("large model: %u layers, planning %.2f ms, validating the "
        "stored plan %.2f ms (load + compile %.2f ms)\n", m->n_layers,
        p.plan_seconds * 1e3, q.plan_seconds * 1e3,
        ((t2.tv_sec - t1.tv_sec) + (t2.tv_nsec - t1.tv_nsec) * 1e-9) * 1e3);
    /* the reload validated the stored plan instead of searching again
     * (which of the two is faster depends on the machine: timings are
     * printed, not asserted) */
    CHECK (q.from_stored_plan && !p.from_stored_plan,
        "large: the reload did not use the stored plan");
    CHECK (o->pool_bytes == m->pool_bytes, "large: pool changed");
  }
  (void) t0;
  tt_model_free (o);
  tt_model_free (m);
  free (ini);
}

/* A spinning thread: keeps the other core busy while a plan is made. */
static volatile int plan_spin_stop;

static void *
plan_spin (void *unused)
{
  (void) unused;
  volatile uint64_t x = 0;
  while (!plan_spin_stop)
    x++;
  return NULL;
}

/* The plan text of a model 16 branches wide (far more orders than the
 * exact search takes on, so the greedy search with local improvement
 * plans it), made once on a quiet machine and once with both cores busy:
 * the local improvement is bounded by work, not by seconds, so both are
 * the same bytes. */
static void
test_greedy_order_deterministic (void)
{
  char text[8192];
  int at = snprintf (text, sizeof text, "[Model]\ntype=NeuralNetwork\n"
      "batch_size=4\nloss=mse\n[Optimizer]\ntype=sgd\nlearning_rate=0.01\n"
      "[input]\ntype=input\ninput_shape=1:1:8\n");
  for (int i = 0; i < 16; i++)
    at += snprintf (text + at, sizeof text - at, "[a%d]\n"
        "type=fully_connected\nunit=%d\ninput_layers=input\n"
        "activation=relu\n[b%d]\ntype=fully_connected\nunit=8\n"
        "input_layers=a%d\n", i, 8 + i, i, i);
  at += snprintf (text + at, sizeof text - at,
      "[total]\ntype=addition\ninput_layers=");
  for (int i = 0; i < 16; i++)
    at += snprintf (text + at, sizeof text - at, "%sb%d", i ? "," : "", i);
  snprintf (text + at, sizeof text - at,
      "\n[out]\ntype=fully_connected\nunit=2\n");
  const char *path = tt_test_write_text ("wide16.ini", text);
  char *plans[2] = { NULL, NULL };
  size_t lens[2] = { 0, 0 };
  bool exact[2] = { true, true };
  for (int run = 0; run < 2; run++) {
    pthread_t spinner;
    plan_spin_stop = 0;
    bool spinning = run == 1 && pthread_create (&spinner, NULL, plan_spin,
        NULL) == 0;
    tt_error err;
    tt_model *m = tt_model_load_ini (path, &err);
    tt_status st = m ? tt_model_compile (m, &err) : TT_ERR_INVALID;
    if (st == TT_OK)
      st = tt_plan_ini_text (m, &plans[run], &lens[run], &err);
    if (st == TT_OK) {
      tt_plan_info info;
      tt_model_plan_info (m, &info);
      exact[run] = info.order_exact;
    }
    CHECK (st == TT_OK, "wide16 run %d: %s", run, err.message);
    tt_model_free (m);
    plan_spin_stop = 1;
    if (spinning)
      pthread_join (spinner, NULL);
  }
  CHECK (!exact[0] && !exact[1], "wide16: planned by the greedy search");
  CHECK (plans[0] && plans[1] && lens[0] == lens[1] &&
      !memcmp (plans[0], plans[1], lens[0]),
      "wide16: a busy machine changed the plan");
  free (plans[0]);
  free (plans[1]);
}

int
main (int argc, char **argv)
{
  snprintf (root, sizeof root, "%s", argc > 1 ? argv[1] : ".");
  TT_TEST_RUN (test_models);
  TT_TEST_RUN (test_greedy_order_deterministic);
  char path[2048];
  const char *identical[] = { "branchy_bn.ini", "resnet_bn.ini",
    "transfer_frozen.ini", "inception.ini", "sensor_lstm.ini",
    "sensor_gru.ini",
    /* convolutions */
    "conv1d_padding.ini", "mobilenet_block.ini",
    NULL
  };
  for (int i = 0; identical[i]; i++) {
    snprintf (path, sizeof path, "%s/tests/models/%s", root, identical[i]);
    test_identical_training (identical[i], path);
  }
  /* an lstm's output with return_sequences holds the hidden states its
   * calcGradient reads: the activations after it must not run in place */
  snprintf (path, sizeof path, "%s",
      tt_test_write_text ("lstm_then_activations.ini",
          "[Model]\ntype=NeuralNetwork\nbatch_size=4\nloss=cross\n"
          "[Optimizer]\ntype=adam\nlearning_rate=0.01\n"
          "[in]\ntype=input\ninput_shape=1:6:3\nnormalization=true\n"
          "[a]\ntype=lstm\nunit=5\nreturn_sequences=true\n"
          "activation=tanh\n[b]\ntype=lstm\nunit=4\n"
          "return_sequences=true\n[act]\ntype=activation\n"
          "activation=sigmoid\n[out]\ntype=fully_connected\nunit=3\n"
          "activation=softmax\n"));
  test_identical_training ("lstm_then_activations", path);
  /* a gru reads its output (every hidden state) in backpropagation
   * through time even when frozen, for its input derivative: the
   * activation after it must not run in place either */
  snprintf (path, sizeof path, "%s",
      tt_test_write_text ("gru_then_activations.ini",
          "[Model]\ntype=NeuralNetwork\nbatch_size=4\nloss=cross\n"
          "[Optimizer]\ntype=adam\nlearning_rate=0.01\n"
          "[in]\ntype=input\ninput_shape=1:6:3\nnormalization=true\n"
          "[fc]\ntype=fully_connected\nunit=4\n"
          "[a]\ntype=gru\nunit=5\nreturn_sequences=true\n"
          "trainable=false\n[act]\ntype=activation\nactivation=sigmoid\n"
          "[b]\ntype=gru\nunit=4\nreturn_sequences=true\n"
          "reset_after=false\nactivation=tanh\n[out]\n"
          "type=fully_connected\nunit=3\nactivation=softmax\n"));
  test_identical_training ("gru_then_activations", path);
  TT_TEST_RUN (test_round_trip);
  TT_TEST_RUN (test_bad_plans);
  TT_TEST_RUN (test_large_model);
  return tt_test_summary ();
}
