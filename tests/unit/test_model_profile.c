/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_model_set_profiling, tt_model_layer_profile, tt_model_profile: the
 * time of each layer's forward, backward and update.
 *   off         never turned on: no counters (TT_ERR_STATE, zeros), before
 *               compile TT_ERR_INVALID, past the last layer TT_ERR_INVALID
 *   counts      turned on before compile, training steps: every layer ran
 *               once a step and took time forward; trainable layers took
 *               time backward and updating, the rest none updating; the
 *               totals add up; a refused step is not a step
 *   eval        evaluation: forward only
 *   reset       turned on again: every counter back to zero
 *   off_keeps   turned off: the counters stay as they were, readable
 *   after_compile  turned on after compile
 *   recompute   under a memory limit: forward reruns are forward time, not
 *               calls
 */
#include "tt_engine.h"
#include "tt_test.h"
#include "train_steps.h"

#include <inttypes.h>
#include <stdlib.h>
#include <stdint.h>

/* conv (trainable) below a frozen fc: the frozen layer's backward runs
 * (the conv needs its derivative), its update does not */
static const char *pr_ini =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 4\nloss = cross\n"
    "[Optimizer]\ntype = sgd\nlearning_rate = 0.01\n"
    "[in]\ntype = input\ninput_shape = 1:6:6\n"
    "[conv]\ntype = conv2d\nfilters = 2\nkernel_size = 3,3\n"
    "activation = relu\n"
    "[flat]\ntype = flatten\n"
    "[frozen]\ntype = fully_connected\nunit = 8\ntrainable = false\n"
    "[fc]\ntype = fully_connected\nunit = 3\nactivation = softmax\n";

static const char *const pr_sections[] = { "in", "conv", "flat", "frozen",
  "fc"
};

static tt_model *
pr_model (bool profile_before_compile)
{
  tt_error err;
  tt_model *m = tt_model_load_ini_text (pr_ini, strlen (pr_ini), "pr.ini",
      &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 7);
  if (profile_before_compile)
    CHECK (tt_model_set_profiling (m, true, &err) == TT_OK, "%s", err.message);
  if (tt_model_compile (m, &err) != TT_OK) {
    CHECK (false, "compile: %s", err.message);
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static bool
pr_zero (const tt_layer_profile * p)
{
  return !p->name && !p->type && !p->calls && !p->forward_ns &&
      !p->backward_ns && !p->update_ns;
}

/* readable, and every counter of every layer and the totals zero */
static bool
pr_all_zero (const tt_model * m)
{
  tt_profile t;
  bool zero = tt_model_profile (m, &t) == TT_OK && !t.steps && !t.step_ns &&
      !t.layer_ns && !t.other_ns;
  for (uint32_t i = 0; i < tt_model_num_layers (m); i++) {
    tt_layer_profile p;
    zero &= tt_model_layer_profile (m, i, &p) == TT_OK && !p.calls &&
        !p.forward_ns && !p.backward_ns && !p.update_ns;
  }
  return zero;
}

/* a layer of the INI that has weights, and whether they train */
static bool
pr_weighted (const char *name, bool *trainable)
{
  *trainable = strcmp (name, "frozen") != 0;
  return !strcmp (name, "conv") || !strcmp (name, "fc") ||
      !strcmp (name, "frozen");
}

static void
pr_eval_steps (tt_model * m, int steps)
{
  float x[4 * 36], t[4 * 3] = { 0 };
  for (int i = 0; i < 4 * 36; i++)
    x[i] = (float) (i % 11) / 11.0f;
  for (int b = 0; b < 4; b++)
    t[b * 3 + b % 3] = 1;
  const void *in[1] = { x };
  for (int s = 0; s < steps; s++) {
    tt_error err;
    CHECK (tt_model_eval_batch (m, 4, in, NULL, t, NULL, &err) == TT_OK,
        "%s", err.message);
  }
}

static void
test_off (void)
{
  tt_error err;
  tt_layer_profile p;
  tt_profile t;
  tt_model *m = tt_model_load_ini_text (pr_ini, strlen (pr_ini), "pr.ini",
      &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return;
  CHECK (tt_model_num_layers (m) == 0, "%u layers before compile",
      tt_model_num_layers (m));
  CHECK (tt_model_layer_profile (m, 0, &p) == TT_ERR_INVALID && pr_zero (&p),
      "a layer's profile before compile");
  CHECK (tt_model_profile (m, &t) == TT_ERR_INVALID, "totals before compile");
  tt_model_free (m);

  m = pr_model (false);
  if (!m)
    return;
  /* in, conv, its relu, flat, frozen, fc, the loss (softmax folded in) */
  const uint32_t n = tt_model_num_layers (m);
  CHECK (n >= 7, "%u layers", n);
  tt_test_train_steps (m, "off", 3, 255.0f);
  for (uint32_t i = 0; i < n; i++) {
    memset (&p, 0xff, sizeof p);
    CHECK (tt_model_layer_profile (m, i, &p) == TT_ERR_STATE && pr_zero (&p),
        "layer %u: never profiled, yet counters", i);
  }
  memset (&t, 0xff, sizeof t);
  CHECK (tt_model_profile (m, &t) == TT_ERR_STATE && !t.steps && !t.step_ns,
      "totals: never profiled, yet counters");
  /* turned off without ever being on: still nothing to read */
  CHECK (tt_model_set_profiling (m, false, &err) == TT_OK, "%s", err.message);
  CHECK (tt_model_profile (m, &t) == TT_ERR_STATE, "off, off: counters");
  tt_model_set_profiling (m, true, &err);
  CHECK (tt_model_layer_profile (m, n, &p) == TT_ERR_INVALID && pr_zero (&p),
      "layer %u of %u", n, n);
  tt_model_free (m);
}

static void
test_counts (void)
{
  tt_model *m = pr_model (true);
  if (!m)
    return;
  const uint32_t n = tt_model_num_layers (m);
  CHECK (pr_all_zero (m), "counters before the first step");
  tt_test_train_steps (m, "counts", 5, 255.0f);
  /* refused before its forward pass: not a step */
  tt_error err;
  const void *none[1] = { NULL };
  float label[3] = { 1, 0, 0 };
  CHECK (tt_model_train_batch (m, 1, none, NULL, label, NULL, &err) ==
      TT_ERR_INVALID, "a batch without data was trained");

  uint64_t sum = 0;
  bool seen[5] = { false };
  for (uint32_t i = 0; i < n; i++) {
    tt_layer_profile p;
    CHECK (tt_model_layer_profile (m, i, &p) == TT_OK, "layer %u", i);
    if (!p.name || !p.type) {
      CHECK (false, "layer %u: no name or type", i);
      continue;
    }
    printf ("%-20s %-16s calls %" PRIu64 "  forward %8" PRIu64 " ns  "
        "backward %8" PRIu64 " ns  update %8" PRIu64 " ns\n", p.name, p.type,
        p.calls, p.forward_ns, p.backward_ns, p.update_ns);
    if (i == 0)
      CHECK (!strcmp (p.name, "in") && !strcmp (p.type, "input"),
          "execution order starts with %s (%s)", p.name, p.type);
    for (int k = 0; k < 5; k++)
      seen[k] |= !strcmp (p.name, pr_sections[k]);
    CHECK (p.calls == 5, "%s: %" PRIu64 " calls in 5 steps", p.name, p.calls);
    CHECK (p.forward_ns > 0, "%s: no forward time", p.name);
    bool trainable;
    if (pr_weighted (p.name, &trainable) && trainable) {
      CHECK (p.backward_ns > 0, "%s: no backward time", p.name);
      CHECK (p.update_ns > 0, "%s: no update time", p.name);
    } else {
      CHECK (p.update_ns == 0, "%s: %" PRIu64 " ns updating, nothing to "
          "update", p.name, p.update_ns);
    }
    if (!strcmp (p.name, "frozen"))
      CHECK (p.backward_ns > 0, "frozen: no backward time, yet the conv "
          "below needs its derivative");
    sum += p.forward_ns + p.backward_ns + p.update_ns;
  }
  for (int k = 0; k < 5; k++)
    CHECK (seen[k], "section %s is not among the layers", pr_sections[k]);
  tt_profile t;
  CHECK (tt_model_profile (m, &t) == TT_OK, "totals");
  CHECK (t.steps == 5, "%" PRIu64 " steps, 5 run", t.steps);
  CHECK (t.layer_ns == sum, "layer_ns %" PRIu64 ", the layers' sum %"
      PRIu64, t.layer_ns, sum);
  CHECK (t.step_ns >= t.layer_ns, "the steps (%" PRIu64 " ns) took less than "
      "their layers (%" PRIu64 " ns)", t.step_ns, t.layer_ns);
  CHECK (t.other_ns == t.step_ns - t.layer_ns, "other_ns %" PRIu64, t.other_ns);
  tt_model_free (m);
}

static void
test_eval (void)
{
  tt_model *m = pr_model (true);
  if (!m)
    return;
  pr_eval_steps (m, 3);
  for (uint32_t i = 0; i < tt_model_num_layers (m); i++) {
    tt_layer_profile p;
    tt_model_layer_profile (m, i, &p);
    CHECK (p.calls == 3 && p.forward_ns > 0 && !p.backward_ns &&
        !p.update_ns, "%s: eval: calls %" PRIu64 " forward %" PRIu64
        " backward %" PRIu64 " update %" PRIu64, p.name, p.calls,
        p.forward_ns, p.backward_ns, p.update_ns);
  }
  tt_profile t;
  tt_model_profile (m, &t);
  CHECK (t.steps == 3, "%" PRIu64 " eval steps, 3 run", t.steps);
  tt_model_free (m);
}

static void
test_reset (void)
{
  tt_error err;
  tt_model *m = pr_model (true);
  if (!m)
    return;
  tt_test_train_steps (m, "reset", 3, 255.0f);
  CHECK (!pr_all_zero (m), "3 steps counted nothing");
  CHECK (tt_model_set_profiling (m, true, &err) == TT_OK, "%s", err.message);
  CHECK (pr_all_zero (m), "counters left after turning profiling on again");
  tt_test_train_steps (m, "reset", 2, 255.0f);
  tt_profile t;
  tt_model_profile (m, &t);
  CHECK (t.steps == 2, "%" PRIu64 " steps since the reset, 2 run", t.steps);
  for (uint32_t i = 0; i < tt_model_num_layers (m); i++) {
    tt_layer_profile p;
    tt_model_layer_profile (m, i, &p);
    CHECK (p.calls == 2, "%s: %" PRIu64 " calls since the reset, 2 run",
        p.name, p.calls);
  }
  tt_model_free (m);
}

static void
test_off_keeps (void)
{
  tt_error err;
  tt_model *m = pr_model (true);
  if (!m)
    return;
  tt_test_train_steps (m, "off_keeps", 2, 255.0f);
  const uint32_t n = tt_model_num_layers (m);
  tt_layer_profile before[16], after;
  tt_profile tb, ta;
  CHECK (n <= 16, "%u layers", n);
  tt_model_profile (m, &tb);
  for (uint32_t i = 0; i < n && i < 16; i++)
    tt_model_layer_profile (m, i, &before[i]);
  CHECK (tt_model_set_profiling (m, false, &err) == TT_OK, "%s", err.message);
  tt_test_train_steps (m, "off_keeps", 3, 255.0f);
  pr_eval_steps (m, 2);
  CHECK (tt_model_profile (m, &ta) == TT_OK, "off: the totals unreadable");
  CHECK (!memcmp (&ta, &tb, sizeof ta), "off: the totals changed (%" PRIu64
      " steps, were %" PRIu64 ")", ta.steps, tb.steps);
  for (uint32_t i = 0; i < n && i < 16; i++) {
    CHECK (tt_model_layer_profile (m, i, &after) == TT_OK, "off: layer %u "
        "unreadable", i);
    CHECK (!memcmp (&after, &before[i], sizeof after), "off: %s counted",
        after.name);
  }
  tt_model_free (m);
}

static void
test_after_compile (void)
{
  tt_error err;
  tt_model *m = pr_model (false);
  if (!m)
    return;
  tt_test_train_steps (m, "after_compile", 2, 255.0f);
  CHECK (tt_model_set_profiling (m, true, &err) == TT_OK, "%s", err.message);
  CHECK (pr_all_zero (m), "steps before profiling counted");
  tt_test_train_steps (m, "after_compile", 4, 255.0f);
  for (uint32_t i = 0; i < tt_model_num_layers (m); i++) {
    tt_layer_profile p;
    tt_model_layer_profile (m, i, &p);
    CHECK (p.calls == 4 && p.forward_ns > 0, "%s: calls %" PRIu64
        " forward %" PRIu64 " ns", p.name, p.calls, p.forward_ns);
  }
  tt_model_free (m);
}

static const char *pr_root = ".";

static void
test_recompute (void)
{
  char path[1024];
  snprintf (path, sizeof path, "%s/tests/models/resnet_bn.ini", pr_root);
  tt_error err;
  tt_open_options o = { 0 };
  o.batch_size = 4;
  o.memory_limit = 4096;
  tt_model *m = tt_model_open (path, &o, NULL, &err);
  CHECK (m == NULL, "%s: a 4096-byte limit was met", path);
  tt_model_free (m);
  const char *at = strstr (err.message, "smallest feasible limit is ");
  CHECK (at != NULL, "no smallest feasible limit named: %s", err.message);
  if (!at)
    return;
  o.memory_limit = strtoull (at + strlen ("smallest feasible limit is "),
      NULL, 10);
  m = tt_model_open (path, &o, NULL, &err);
  CHECK (m != NULL, "%s at its smallest limit: %s", path, m ? "" : err.message);
  if (!m)
    return;
  tt_plan_info info;
  tt_model_plan_info (m, &info);
  CHECK (info.recomputed > 0, "nothing recomputed under the limit");
  CHECK (tt_model_set_profiling (m, true, &err) == TT_OK, "%s", err.message);
  tt_test_train_steps (m, "recompute", 3, 255.0f);
  for (uint32_t i = 0; i < tt_model_num_layers (m); i++) {
    tt_layer_profile p;
    tt_model_layer_profile (m, i, &p);
    CHECK (p.calls == 3 && p.forward_ns > 0, "%s: calls %" PRIu64
        " forward %" PRIu64 " ns (reruns are not calls)", p.name, p.calls,
        p.forward_ns);
  }
  tt_model_free (m);
}

/* The CNN on threads threads, split steps when split, profiled over 3
 * training steps. */
static tt_model *
pr_threaded_cnn (unsigned threads, bool split)
{
  char path[1024];
  snprintf (path, sizeof path, "%s/tests/models/fmnist_cnn.ini", pr_root);
  tt_error err;
  tt_model *m = tt_model_load_ini (path, &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return NULL;
  /* the pool reads the choice when compile makes it */
  if (split)
    setenv ("TT_THREADS_STEPS", "split", 1);
  const bool ok = tt_model_set_batch_size (m, 32, &err) == TT_OK &&
      tt_model_set_threads (m, threads, &err) == TT_OK &&
      tt_model_set_profiling (m, true, &err) == TT_OK &&
      tt_model_compile (m, &err) == TT_OK;
  unsetenv ("TT_THREADS_STEPS");
  CHECK (ok, "%u threads: %s", threads, err.message);
  if (!ok) {
    tt_model_free (m);
    return NULL;
  }
  tt_test_train_steps (m, "threads profile", 3, 255.0f);
  return m;
}

/* whether both convolutions have had time in the worker's parts */
static bool
pr_convs_on_worker (tt_model * m, uint32_t n)
{
  int seen = 0;
  for (uint32_t i = 0; i < n; i++) {
    tt_layer_profile p;
    tt_layer_threads_profile t;
    if (tt_model_layer_profile (m, i, &p) != TT_OK ||
        tt_model_layer_threads_profile (m, i, &t) != TT_OK)
      return false;
    if ((!strcmp (p.name, "conv1") || !strcmp (p.name, "conv2"))
        && t.workers_ns > 0)
      seen++;
  }
  return seen == 2;
}

/* tt_model_layer_threads_profile: on 2 threads in split steps, the
 * workers' time in the convolutions' parts, and the caller's wait inside
 * each layer's own time; zeros on one thread, in inline steps and for a
 * layer with no job; the errors of tt_model_layer_profile. */
static void
test_threads (void)
{
  tt_model *m = pr_threaded_cnn (2, true);
  if (!m)
    return;
  tt_layer_threads_profile t;
  const uint32_t n = tt_model_num_layers (m);
  /* On a loaded machine the worker may not be scheduled before the
   * caller has claimed every part of a step's jobs: more steps, up to
   * 200, until each convolution has had worker time (a worker that never
   * runs its parts still fails below) */
  for (int extra = 0; extra < 200 && !pr_convs_on_worker (m, n); extra++)
    tt_test_train_steps (m, "threads profile", 1, 255.0f);
  uint64_t workers = 0;
  for (uint32_t i = 0; i < n; i++) {
    tt_layer_profile p;
    CHECK (tt_model_layer_profile (m, i, &p) == TT_OK &&
        tt_model_layer_threads_profile (m, i, &t) == TT_OK, "layer %u", i);
    const uint64_t own = p.forward_ns + p.backward_ns + p.update_ns;
    CHECK (t.wait_ns <= own, "%s: waited %" PRIu64 " ns of its %" PRIu64,
        p.name, t.wait_ns, own);
    if (!strcmp (p.name, "conv1") || !strcmp (p.name, "conv2"))
      CHECK (t.workers_ns > 0, "%s: no time in the worker's parts", p.name);
    if (!strcmp (p.name, "flat"))
      CHECK (!t.wait_ns && !t.workers_ns, "flat: no job, yet %" PRIu64
          " and %" PRIu64 " ns", t.wait_ns, t.workers_ns);
    workers += t.workers_ns;
  }
  CHECK (workers > 0, "no worker time at all");
  CHECK (tt_model_layer_threads_profile (m, n, &t) == TT_ERR_INVALID &&
      !t.wait_ns && !t.workers_ns, "past the last layer");
  tt_error err;
  CHECK (tt_model_set_profiling (m, true, &err) == TT_OK, "%s", err.message);
  for (uint32_t i = 0; i < n; i++)
    CHECK (tt_model_layer_threads_profile (m, i, &t) == TT_OK &&
        !t.wait_ns && !t.workers_ns, "layer %u after the reset", i);
  tt_model_free (m);

  for (unsigned threads = 1; threads <= 2; threads++) {
    /* one thread; two in inline steps (TT_THREADS_STEPS=inline) */
    if (threads == 2)
      setenv ("TT_THREADS_STEPS", "inline", 1);
    m = pr_threaded_cnn (threads, false);
    unsetenv ("TT_THREADS_STEPS");
    if (!m)
      return;
    for (uint32_t i = 0; i < tt_model_num_layers (m); i++)
      CHECK (tt_model_layer_threads_profile (m, i, &t) == TT_OK &&
          !t.wait_ns && !t.workers_ns, "%u threads%s: layer %u: %" PRIu64
          " and %" PRIu64 " ns", threads, threads > 1 ? " inline" : "", i,
          t.wait_ns, t.workers_ns);
    tt_model_free (m);
  }

  m = tt_model_load_ini_text (pr_ini, strlen (pr_ini), "pr.ini", &err);
  CHECK (m && tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  CHECK (tt_model_layer_threads_profile (m, 0, &t) == TT_ERR_STATE,
      "never profiling");
  tt_model_free (m);
}

int
main (int argc, char **argv)
{
  if (argc > 1)
    pr_root = argv[1];
  TT_TEST_RUN (test_off);
  TT_TEST_RUN (test_counts);
  TT_TEST_RUN (test_eval);
  TT_TEST_RUN (test_reset);
  TT_TEST_RUN (test_off_keeps);
  TT_TEST_RUN (test_after_compile);
  TT_TEST_RUN (test_recompute);
  TT_TEST_RUN (test_threads);
  return tt_test_summary ();
}
