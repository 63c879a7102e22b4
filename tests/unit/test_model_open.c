/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_model_open (io/model_open.c): one call opens a model by path.
 *   ini        an INI file, compiled, its weights initialized as
 *              tt_model_load_ini + tt_model_compile initialize them
 *   ini_bin    an INI with a BIN (and with a bundle) as options->weights
 *   bundle     a bundle: its weights, counters; batch and inference
 *   missing    a file that does not exist: the loader's own message
 *   wrong_kind options->kind not met, options of the other kind
 *   options    batch size, inference, plan mode, alignment, seed, bundle
 *              mode, trust, honoured
 *   steps      which step failed: settings, compile, weights
 *   load_weights  tt_model_load_weights from a BIN and from a bundle
 */
#include "tt_engine.h"
#include "tt_bundle.h"
#include "tt_test.h"

#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdint.h>

static const char *mo_ini_text =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 2\nloss = cross\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
    "[in]\ntype = input\ninput_shape = 1:1:4\n"
    "[fc1]\ntype = fully_connected\nunit = 3\nactivation = relu\n"
    "[fc2]\ntype = fully_connected\nunit = 2\nactivation = softmax\n";

#define MO_WEIGHTS 23           /* 12 + 3 + 6 + 2 */

static char mo_dir[512];
static char mo_ini[600], mo_bin[600], mo_ttb[600], mo_plan_ini[600];

static const char *
mo_path (const char *name)
{
  static char buf[4][600];
  static int k;
  k = (k + 1) % 4;
  snprintf (buf[k], sizeof buf[k], "%s/%s", mo_dir, name);
  return buf[k];
}

static void
mo_die (const char *what, const tt_error * err)
{
  printf ("%s: %s\n", what, err->message);
  exit (2);
}

/* weights as one flat array */
static void
mo_weights (tt_model * m, float *w)
{
  tt_error err;
  if (tt_model_weight_floats (m) != MO_WEIGHTS ||
      tt_model_export_weights (m, w, MO_WEIGHTS, &err))
    mo_die ("export", &err);
}

static bool
mo_same_weights (tt_model * a, tt_model * b)
{
  float wa[MO_WEIGHTS], wb[MO_WEIGHTS];
  mo_weights (a, wa);
  mo_weights (b, wb);
  return !memcmp (wa, wb, sizeof wa);
}

static tt_status
mo_train_step (tt_model * m, tt_error * err)
{
  const float x[8] = { 0.1f, 0.5f, -0.3f, 0.9f, 1, 0, 0.2f, -0.4f };
  const float y[4] = { 1, 0, 0, 1 };
  const void *in[1] = { x };
  const tt_dtype t[1] = { TT_DTYPE_FLOAT32 };
  return tt_model_train_batch (m, 2, in, t, y, NULL, err);
}

/* The files every case uses: the INI; a model of it (seed 7) trained one
 * step, saved as a BIN and as a bundle; the INI with a stored plan. */
static tt_model *
mo_setup (void)
{
  const char *p = tt_test_write_text ("model.ini", mo_ini_text);
  snprintf (mo_ini, sizeof mo_ini, "%s", p);
  char copy[600];
  snprintf (copy, sizeof copy, "%s", p);
  snprintf (mo_dir, sizeof mo_dir, "%s", dirname (copy));
  snprintf (mo_bin, sizeof mo_bin, "%s", mo_path ("trained.bin"));
  snprintf (mo_ttb, sizeof mo_ttb, "%s", mo_path ("trained.ttb"));
  snprintf (mo_plan_ini, sizeof mo_plan_ini, "%s", mo_path ("plan.ini"));

  tt_error err;
  tt_model *m = tt_model_load_ini (mo_ini, &err);
  if (!m)
    mo_die ("load", &err);
  tt_model_set_seed (m, 7);
  if (tt_model_compile (m, &err) || mo_train_step (m, &err) ||
      tt_model_save_bin (m, mo_bin, &err) || tt_model_save (m, mo_ttb, &err)
      || tt_model_save_plan_ini (m, mo_plan_ini, &err))
    mo_die ("setup", &err);
  return m;
}

static tt_model *mo_trained;

static void
test_ini (void)
{
  tt_error err;
  tt_open_info info;
  tt_model *m = tt_model_open (mo_ini, NULL, &info, &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return;
  CHECK (info.kind == TT_MODEL_FILE_INI, "kind %d", info.kind);
  CHECK (info.failed_step == TT_OPEN_OK, "step %d", info.failed_step);
  CHECK (tt_model_batch_size (m) == 2, "batch %u", tt_model_batch_size (m));
  CHECK (!tt_model_is_inference (m), "training by default");
  CHECK (!strcmp (tt_model_path (m), mo_ini), "path %s", tt_model_path (m));
  /* the same weights as the calls it stands for */
  tt_model *by_hand = tt_model_load_ini (mo_ini, &err);
  CHECK (by_hand && !tt_model_compile (by_hand, &err), "%s", err.message);
  if (by_hand)
    CHECK (mo_same_weights (m, by_hand), "initialized as compile does");
  CHECK (mo_train_step (m, &err) == TT_OK, "trains: %s", err.message);
  tt_model_free (by_hand);
  tt_model_free (m);
  /* info may be NULL */
  m = tt_model_open (mo_ini, NULL, NULL, &err);
  CHECK (m != NULL, "%s", err.message);
  tt_model_free (m);
}

static void
test_ini_bin (void)
{
  const char *weights[2] = { mo_bin, mo_ttb };
  for (int i = 0; i < 2; i++) {
    tt_error err;
    tt_open_info info;
    tt_open_options o = { 0 };
    o.weights = weights[i];
    tt_model *m = tt_model_open (mo_ini, &o, &info, &err);
    CHECK (m != NULL, "%s: %s", weights[i], err.message);
    if (!m)
      continue;
    CHECK (info.kind == TT_MODEL_FILE_INI && info.failed_step == TT_OPEN_OK,
        "kind %d step %d", info.kind, info.failed_step);
    CHECK (mo_same_weights (m, mo_trained), "%s: the trained weights",
        weights[i]);
    CHECK (tt_model_iteration (m) == 1, "%s: counters loaded (iteration %u)",
        weights[i], tt_model_iteration (m));
    tt_model_free (m);
  }
  /* "" is no weights file */
  tt_error err;
  tt_open_options o = { 0 };
  o.weights = "";
  tt_model *m = tt_model_open (mo_ini, &o, NULL, &err);
  CHECK (m && tt_model_iteration (m) == 0, "empty weights path: none");
  tt_model_free (m);
}

static void
test_bundle (void)
{
  tt_error err;
  tt_open_info info;
  tt_model *m = tt_model_open (mo_ttb, NULL, &info, &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return;
  CHECK (info.kind == TT_MODEL_FILE_BUNDLE, "kind %d", info.kind);
  CHECK (info.failed_step == TT_OPEN_OK, "step %d", info.failed_step);
  CHECK (mo_same_weights (m, mo_trained), "the bundle's weights");
  CHECK (tt_model_iteration (m) == 1, "counters %u", tt_model_iteration (m));
  CHECK (tt_model_batch_size (m) == 2, "batch it was saved for");
  tt_plan_info p;
  tt_model_plan_info (m, &p);
  CHECK (p.from_stored_plan, "the bundle's plan");
  CHECK (mo_train_step (m, &err) == TT_OK, "trains: %s", err.message);
  tt_model_free (m);

  /* a bundle's name says nothing: its first bytes do */
  size_t len = 0;
  char *data = tt_test_read_file (mo_ttb, &len);
  const char *renamed = tt_test_write_file ("bundle.ini", data, len);
  free (data);
  m = tt_model_open (renamed, NULL, &info, &err);
  CHECK (m && info.kind == TT_MODEL_FILE_BUNDLE, "a bundle named .ini: %s",
      m ? "" : err.message);
  tt_model_free (m);
}

static void
test_missing (void)
{
  const char *missing = mo_path ("no-such-model.ini");
  tt_error err, direct;
  tt_open_info info;
  tt_model *m = tt_model_open (missing, NULL, &info, &err);
  CHECK (m == NULL, "opened a missing file");
  CHECK (info.kind == TT_MODEL_FILE_ANY, "kind %d", info.kind);
  CHECK (info.failed_step == TT_OPEN_READ, "step %d", info.failed_step);
  CHECK (err.status == TT_ERR_IO, "status %s", tt_status_name (err.status));
  CHECK (strstr (err.message, "cannot open"), "%s", err.message);
  /* the words of the loader it stands for */
  CHECK (tt_model_load_ini (missing, &direct) == NULL, "missing");
  CHECK (!strcmp (err.message, direct.message), "%s | %s", err.message,
      direct.message);
  /* asked for a bundle: the bundle loader's words */
  tt_open_options o = { 0 };
  o.kind = TT_MODEL_FILE_BUNDLE;
  m = tt_model_open (missing, &o, &info, &err);
  CHECK (m == NULL && info.failed_step == TT_OPEN_READ, "bundle missing");
  CHECK (tt_bundle_load (missing, NULL, &direct) == NULL, "missing");
  CHECK (!strcmp (err.message, direct.message), "%s | %s", err.message,
      direct.message);
  /* no path */
  m = tt_model_open (NULL, NULL, &info, &err);
  CHECK (m == NULL && err.status == TT_ERR_INVALID, "NULL path: %s",
      err.message);
  /* a broken INI: the parser's message, unchanged */
  const char *broken = tt_test_write_text ("broken.ini",
      "[Model]\nbatch_size = 2\n[in]\ntype = input\ninput_shape = 1:1:4\n"
      "[fc]\ntype = fully_connected\nunits = 3\n");
  m = tt_model_open (broken, NULL, &info, &err);
  CHECK (m == NULL && info.failed_step == TT_OPEN_READ &&
      info.kind == TT_MODEL_FILE_INI, "broken INI: step %d", info.failed_step);
  tt_model *d = tt_model_load_ini (broken, &direct);
  CHECK (d == NULL && !strcmp (err.message, direct.message), "%s | %s",
      err.message, direct.message);
  tt_model_free (d);
}

/* refused before anything is read: TT_OPEN_KIND, TT_ERR_INVALID */
static void
mo_refused (const char *path, const tt_open_options * o,
    tt_model_file_kind kind, const char *says)
{
  tt_error err;
  tt_open_info info;
  tt_model *m = tt_model_open (path, o, &info, &err);
  CHECK (m == NULL, "%s: opened (%s)", path, says);
  tt_model_free (m);
  CHECK (info.failed_step == TT_OPEN_KIND, "%s: step %d", says,
      info.failed_step);
  CHECK (info.kind == kind, "%s: kind %d", says, info.kind);
  CHECK (err.status == TT_ERR_INVALID, "%s: %s", says,
      tt_status_name (err.status));
  CHECK (strstr (err.message, says) && strstr (err.message, path),
      "'%s' in: %s", says, err.message);
}

static void
test_wrong_kind (void)
{
  tt_open_options o = { 0 };
  o.kind = TT_MODEL_FILE_INI;
  mo_refused (mo_ttb, &o, TT_MODEL_FILE_BUNDLE, "is a bundle, not an INI");
  o.kind = TT_MODEL_FILE_BUNDLE;
  mo_refused (mo_ini, &o, TT_MODEL_FILE_INI, "is an INI file, not a bundle");
  /* options of the other kind */
  memset (&o, 0, sizeof o);
  o.alignment = 128;
  mo_refused (mo_ttb, &o, TT_MODEL_FILE_BUNDLE, "its plan brings");
  memset (&o, 0, sizeof o);
  o.mode = TT_BUNDLE_MMAP;
  mo_refused (mo_ini, &o, TT_MODEL_FILE_INI, "is not a bundle");
  memset (&o, 0, sizeof o);
  o.trust = true;
  mo_refused (mo_ini, &o, TT_MODEL_FILE_INI, "is not a bundle");
  /* the kind asked for is met */
  tt_error err;
  memset (&o, 0, sizeof o);
  o.kind = TT_MODEL_FILE_INI;
  tt_model *m = tt_model_open (mo_ini, &o, NULL, &err);
  CHECK (m != NULL, "INI asked, INI given: %s", err.message);
  tt_model_free (m);
  o.kind = TT_MODEL_FILE_BUNDLE;
  m = tt_model_open (mo_ttb, &o, NULL, &err);
  CHECK (m != NULL, "bundle asked, bundle given: %s", err.message);
  tt_model_free (m);
}

static void
test_options (void)
{
  tt_error err;
  const char *paths[2] = { mo_ini, mo_ttb };
  for (int i = 0; i < 2; i++) {
    tt_open_options o = { 0 };
    o.batch_size = 5;
    o.inference = true;
    tt_model *m = tt_model_open (paths[i], &o, NULL, &err);
    CHECK (m != NULL, "%s: %s", paths[i], err.message);
    if (!m)
      continue;
    CHECK (tt_model_batch_size (m) == 5, "%s: batch %u", paths[i],
        tt_model_batch_size (m));
    CHECK (tt_model_is_inference (m), "%s: inference", paths[i]);
    CHECK (mo_train_step (m, &err) == TT_ERR_STATE, "%s: inference only: %s",
        paths[i], err.message);
    tt_model_free (m);

    memset (&o, 0, sizeof o);
    o.plan_mode = TT_PLAN_NAIVE;
    m = tt_model_open (paths[i], &o, NULL, &err);
    CHECK (m != NULL, "%s naive: %s", paths[i], err.message);
    if (m) {
      tt_plan_info p;
      tt_model_plan_info (m, &p);
      CHECK (p.pool_bytes >= p.naive_bytes && !p.from_stored_plan,
          "%s: naive plan (pool %" PRIu64 ", naive %" PRIu64 ")", paths[i],
          p.pool_bytes, p.naive_bytes);
      tt_model_free (m);
    }
  }

  /* the stored plan, unless replan */
  tt_open_options o = { 0 };
  tt_model *m = tt_model_open (mo_plan_ini, &o, NULL, &err);
  tt_plan_info p;
  CHECK (m != NULL, "%s", err.message);
  if (m) {
    tt_model_plan_info (m, &p);
    CHECK (p.from_stored_plan, "stored plan used");
    tt_model_free (m);
  }
  o.plan_mode = TT_PLAN_REPLAN;
  m = tt_model_open (mo_plan_ini, &o, NULL, &err);
  CHECK (m != NULL, "%s", err.message);
  if (m) {
    tt_model_plan_info (m, &p);
    CHECK (!p.from_stored_plan, "replanned");
    tt_model_free (m);
  }

  /* alignment: the plan text says it */
  memset (&o, 0, sizeof o);
  o.alignment = 256;
  m = tt_model_open (mo_ini, &o, NULL, &err);
  CHECK (m != NULL, "%s", err.message);
  if (m) {
    char *text = NULL;
    size_t len;
    CHECK (tt_plan_ini_text (m, &text, &len, &err) == TT_OK, "%s", err.message);
    if (text) {
      char *z = malloc (len + 1);
      memcpy (z, text, len);
      z[len] = '\0';
      CHECK (strstr (z, "alignment = 256"), "alignment in the plan");
      free (z);
      free (text);
    }
    tt_model_free (m);
  }

  /* the seed: the same seed the same weights, another seed others */
  tt_model *a, *b, *c;
  memset (&o, 0, sizeof o);
  o.has_seed = true;
  o.seed = 11;
  a = tt_model_open (mo_ini, &o, NULL, &err);
  b = tt_model_open (mo_ini, &o, NULL, &err);
  o.seed = 12;
  c = tt_model_open (mo_ini, &o, NULL, &err);
  CHECK (a && b && c, "seeded opens");
  if (a && b && c) {
    CHECK (mo_same_weights (a, b), "seed 11 twice");
    CHECK (!mo_same_weights (a, c), "seeds 11 and 12");
  }
  tt_model_free (a);
  tt_model_free (b);
  tt_model_free (c);

  /* bundle mode: in place, evaluation only */
  memset (&o, 0, sizeof o);
  o.mode = TT_BUNDLE_IN_PLACE;
  m = tt_model_open (mo_ttb, &o, NULL, &err);
  CHECK (m != NULL, "in place: %s", err.message);
  if (m) {
    CHECK (mo_same_weights (m, mo_trained), "in place: the weights");
    CHECK (mo_train_step (m, &err) != TT_OK, "in place: no training");
    tt_model_free (m);
  }

  /* trust: a damaged weight section opens only when trusted */
  tt_bundle_info bi;
  CHECK (tt_bundle_inspect (mo_ttb, &bi, &err) == TT_OK, "%s", err.message);
  uint64_t at = 0;
  for (uint32_t s = 0; s < bi.n_sections; s++)
    if (bi.sections[s].type == TT_BUNDLE_SECTION_WEIGHTS)
      at = bi.sections[s].offset + 5;
  tt_bundle_info_clear (&bi);
  size_t len = 0;
  char *data = tt_test_read_file (mo_ttb, &len);
  CHECK (data && at && at < len, "weights at %" PRIu64, at);
  if (data && at && at < len) {
    data[at] ^= 0x01;
    const char *damaged = tt_test_write_file ("damaged.ttb", data, len);
    memset (&o, 0, sizeof o);
    m = tt_model_open (damaged, &o, NULL, &err);
    CHECK (m == NULL && strstr (err.message, "checksum"),
        "damaged refused: %s", m ? "opened" : err.message);
    tt_model_free (m);
    o.trust = true;
    m = tt_model_open (damaged, &o, NULL, &err);
    CHECK (m != NULL, "damaged but trusted: %s", err.message);
    tt_model_free (m);
  }
  free (data);
}

static void
test_steps (void)
{
  tt_error err;
  tt_open_info info;
  tt_open_options o = { 0 };
  /* settings: a batch out of range */
  o.batch_size = 70000;
  tt_model *m = tt_model_open (mo_ini, &o, &info, &err);
  CHECK (m == NULL && info.failed_step == TT_OPEN_SETTINGS,
      "batch 70000: step %d", info.failed_step);
  CHECK (strstr (err.message, "out of range"), "%s", err.message);
  /* ... and on a bundle it is part of opening it */
  m = tt_model_open (mo_ttb, &o, &info, &err);
  CHECK (m == NULL && info.failed_step == TT_OPEN_READ,
      "bundle batch 70000: step %d", info.failed_step);
  /* compile: a plan stored for batch 2 is no plan for batch 3 */
  memset (&o, 0, sizeof o);
  o.batch_size = 3;
  m = tt_model_open (mo_plan_ini, &o, &info, &err);
  CHECK (m == NULL && info.failed_step == TT_OPEN_COMPILE,
      "stored plan, other batch: step %d", info.failed_step);
  CHECK (strstr (err.message, "stored plan rejected"), "%s", err.message);
  tt_model_free (m);
  /* weights: missing, and of another model */
  memset (&o, 0, sizeof o);
  o.weights = mo_path ("no-such.bin");
  m = tt_model_open (mo_ini, &o, &info, &err);
  CHECK (m == NULL && info.failed_step == TT_OPEN_WEIGHTS &&
      err.status == TT_ERR_IO, "missing weights: step %d, %s",
      info.failed_step, err.message);
  CHECK (info.kind == TT_MODEL_FILE_INI, "the model's kind %d", info.kind);
  const char *other = tt_test_write_text ("other.ini",
      "[Model]\nbatch_size = 2\nloss = mse\n"
      "[in]\ntype = input\ninput_shape = 1:1:4\n"
      "[fc]\ntype = fully_connected\nunit = 5\n");
  o.weights = mo_bin;
  m = tt_model_open (other, &o, &info, &err);
  CHECK (m == NULL && info.failed_step == TT_OPEN_WEIGHTS,
      "weights of another model: step %d", info.failed_step);
  CHECK (strstr (err.message, mo_bin), "names the file: %s", err.message);
  o.weights = mo_ttb;
  m = tt_model_open (other, &o, &info, &err);
  CHECK (m == NULL && info.failed_step == TT_OPEN_WEIGHTS,
      "bundle weights of another model: step %d", info.failed_step);
}

static void
test_load_weights (void)
{
  const char *weights[2] = { mo_bin, mo_ttb };
  for (int i = 0; i < 2; i++) {
    tt_error err;
    tt_model *m = tt_model_open (mo_ini, NULL, NULL, &err);
    CHECK (m != NULL, "%s", err.message);
    if (!m)
      continue;
    CHECK (tt_model_load_weights (m, weights[i], &err) == TT_OK, "%s: %s",
        weights[i], err.message);
    CHECK (mo_same_weights (m, mo_trained), "%s: loaded", weights[i]);
    CHECK (tt_model_load_weights (m, NULL, &err) == TT_ERR_INVALID, "no path");
    tt_model_free (m);
  }
}

int
main (void)
{
  mo_trained = mo_setup ();
  TT_TEST_RUN (test_ini);
  TT_TEST_RUN (test_ini_bin);
  TT_TEST_RUN (test_bundle);
  TT_TEST_RUN (test_missing);
  TT_TEST_RUN (test_wrong_kind);
  TT_TEST_RUN (test_options);
  TT_TEST_RUN (test_steps);
  TT_TEST_RUN (test_load_weights);
  tt_model_free (mo_trained);
  const char *files[] = { "model.ini", "trained.bin", "trained.ttb",
    "plan.ini", "bundle.ini", "broken.ini", "damaged.ttb", "other.ini"
  };
  for (size_t i = 0; i < sizeof files / sizeof *files; i++)
    unlink (mo_path (files[i]));
  rmdir (mo_dir);
  return tt_test_summary ();
}
