/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * BIN weights in nntrainer's layout (see bin.c): every layer's weights in
 * INI order as float32, then for Adam the tag "adam" and the first and
 * second moments of each trainable weight, then the epoch and iteration
 * counters as uint32. For each model:
 *   a. the weight size computed here from the layer list matches the
 *      engine's;
 *   b. save, load into a fresh model, save again: identical files of the
 *      expected size;
 *   c. each size a file may have loads, and counters are restored;
 *   d. other sizes are refused, naming the file and the sizes;
 *   e. a wrong "adam" tag is refused;
 *   f. NaN or Inf is refused, naming the tensor; no refused load changes
 *      the model;
 *   g. saving into a missing folder fails cleanly;
 *   h. saving leaves no temporary file behind, on success or failure, and
 *      a failed save keeps the previous file.
 *
 * usage: test_bin SOURCE_ROOT
 */
#include "tt_engine.h"
#include "tt_test.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define BT_BATCH 4

/* ---- parameter counts, from the layer lists ------------------------- */

static size_t
fc_params (size_t in, size_t unit)
{
  return in * unit + unit;
}

static size_t
conv_params (size_t channels, size_t filters, size_t kh, size_t kw)
{
  return channels * filters * kh * kw + filters;
}

/* moving mean and variance (not trainable), gamma and beta */
static size_t
bn_params (size_t features)
{
  return 4 * features;
}

/* A tensor to poison in test f: its name and its first float's index in
 * the file. */
typedef struct
{
  const char *tensor;
  size_t at;
} bt_probe;

typedef struct
{
  const char *name;
  const char *rel_path;         /* under the source root, or NULL */
  const char *ini;              /* inline text when rel_path is NULL */
  bool adam;
  size_t weights;               /* floats */
  size_t frozen;                /* floats without optimizer state */
  bt_probe weight_probe;        /* a weight tensor */
  const char *first_trainable;  /* its moments come first */
} bt_spec;

static const char bt_sgd_ini[] =
    "# sgd with momentum: the momentum is not part of the BIN\n"
    "[Model]\ntype = NeuralNetwork\nbatch_size = 8\nloss = mse\n"
    "[Optimizer]\ntype = sgd\nlearning_rate = 0.05\nmomentum = 0.9\n"
    "[in]\ntype = input\ninput_shape = 1:1:6\n"
    "[fc1]\ntype = fully_connected\nunit = 5\nactivation = tanh\n"
    "[bn]\ntype = batch_normalization\n"
    "[fc2]\ntype = fully_connected\nunit = 3\ndisable_bias = true\n";

static char bt_root[1024];
static char bt_dir[600];        /* the private temporary folder */

/* ---- files ----------------------------------------------------------- */

static unsigned char *
bt_slurp (const char *path, size_t *len)
{
  FILE *f = fopen (path, "rb");
  *len = 0;
  if (!f)
    return NULL;
  fseek (f, 0, SEEK_END);
  long size = ftell (f);
  fseek (f, 0, SEEK_SET);
  unsigned char *data = malloc ((size_t) size + 1);
  if (data && fread (data, 1, (size_t) size, f) != (size_t) size) {
    free (data);
    data = NULL;
  }
  fclose (f);
  if (data)
    *len = (size_t) size;
  return data;
}

static bool
bt_same_file (const char *a, const char *b)
{
  size_t la, lb;
  unsigned char *da = bt_slurp (a, &la), *db = bt_slurp (b, &lb);
  bool same = da && db && la == lb && memcmp (da, db, la) == 0;
  free (da);
  free (db);
  return same;
}

/* Writes a file in the private folder; returns its path (own copy). */
static char *
bt_write (const char *name, const void *data, size_t len)
{
  return strdup (tt_test_write_file (name, data, len));
}

static char *
bt_join (const char *dir, const char *name)
{
  size_t len = strlen (dir) + strlen (name) + 2;
  char *p = malloc (len);
  if (!p) {
    perror ("malloc");
    exit (2);
  }
  snprintf (p, len, "%s/%s", dir, name);
  return p;
}

static char *
bt_path (const char *name)
{
  return bt_join (bt_dir, name);
}

/* Counts the entries of dir whose name holds ".tmp": leftovers of a save. */
static int
bt_temporaries (const char *dir)
{
  int n = 0;
  DIR *d = opendir (dir);
  if (!d)
    return -1;
  struct dirent *e;
  while ((e = readdir (d)))
    if (strstr (e->d_name, ".tmp"))
      n++;
  closedir (d);
  return n;
}

/* ---- models ---------------------------------------------------------- */

static tt_model *
bt_open (const bt_spec * s, const char *ini_path)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (ini_path, &err);
  CHECK (m != NULL, "%s: %s", s->name, err.message);
  if (!m)
    return NULL;
  tt_status st = tt_model_set_batch_size (m, BT_BATCH, &err);
  tt_model_set_seed (m, 42);
  if (!st)
    st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s: %s", s->name, err.message);
  if (st) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

typedef struct
{
  float *x, *t;
  size_t nx, nt;
} bt_data;

static bt_data
bt_make_data (tt_model * m, unsigned salt)
{
  bt_data d;
  tt_shape in, out;
  tt_model_input_shape (m, 0, &in);
  out = tt_model_label_shape (m);
  d.nx = (size_t) (BT_BATCH) * in.channel * in.height * in.width;
  d.nt = (size_t) (BT_BATCH) * out.channel * out.height * out.width;
  d.x = malloc (d.nx * sizeof *d.x);
  d.t = calloc (d.nt, sizeof *d.t);
  uint32_t state = 2463534242u + salt;
  for (size_t i = 0; i < d.nx; i++) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    d.x[i] = (float) (state % 2001) / 1000.0f - 1.0f;
  }
  size_t k = d.nt / BT_BATCH;
  for (size_t b = 0; b < BT_BATCH; b++)
    d.t[b * k + (b * 7 + salt) % k] = 1.0f;
  return d;
}

static void
bt_free_data (bt_data * d)
{
  free (d->x);
  free (d->t);
}

/* Output of an evaluation pass, copied. */
static float *
bt_eval (tt_model * m, const bt_data * d)
{
  tt_error err;
  const void *inputs[1] = { d->x };
  tt_status st = tt_model_eval_batch (m, BT_BATCH, inputs, NULL, NULL, NULL,
      &err);
  CHECK (st == TT_OK, "eval: %s", err.message);
  tt_shape out = tt_model_output_shape (m);
  size_t n = (size_t) BT_BATCH * out.channel * out.height * out.width;
  float *y = malloc (n * sizeof *y);
  memcpy (y, tt_model_output (m), n * sizeof *y);
  return y;
}

static bool
bt_contains (const char *msg, const char *want)
{
  return strstr (msg, want) != NULL;
}

/* ---- the checks ------------------------------------------------------ */

/* Tries to load data; must fail. The model must not change: its saved
 * BIN and its evaluation output are compared with reference ones. */
static void
bt_refused (const bt_spec * s, tt_model * m, const char *ref_bin,
    const float *ref_out, size_t n_out, const bt_data * d, const char *what,
    const void *data, size_t len, const char *const *expect)
{
  tt_error err;
  char name[96];
  snprintf (name, sizeof name, "%s_%s.bin", s->name, what);
  char *path = bt_write (name, data, len);
  tt_status st = tt_model_load_bin (m, path, &err);
  CHECK (st != TT_OK, "%s %s: %zu bytes accepted", s->name, what, len);
  if (st != TT_OK) {
    CHECK (bt_contains (err.message, path), "%s %s: file not named: %s",
        s->name, what, err.message);
    if (getenv ("TT_TEST_VERBOSE"))
      printf ("  refused %s: %s\n", what, err.message);
    for (; expect && *expect; expect++)
      CHECK (bt_contains (err.message, *expect), "%s %s: no \"%s\" in: %s",
          s->name, what, *expect, err.message);
  }
  char *after = bt_path ("after_refusal.bin");
  st = tt_model_save_bin (m, after, &err);
  CHECK (st == TT_OK, "%s: %s", s->name, err.message);
  CHECK (bt_same_file (ref_bin, after), "%s %s: the refused load changed "
      "the model's BIN", s->name, what);
  float *y = bt_eval (m, d);
  CHECK (memcmp (y, ref_out, n_out * sizeof *y) == 0,
      "%s %s: the refused load changed the model's output", s->name, what);
  free (y);
  unlink (after);
  free (after);
  unlink (path);
  free (path);
}

static void
bt_model (const bt_spec * s)
{
  tt_error err;
  tt_status st;
  char *ini_path;
  if (s->rel_path) {
    ini_path = bt_join (bt_root, s->rel_path);
  } else {
    char name[64];
    snprintf (name, sizeof name, "%s.ini", s->name);
    ini_path = strdup (tt_test_write_text (name, s->ini));
  }
  printf ("model %s\n", s->name);
  tt_model *m = bt_open (s, ini_path);
  if (!m) {
    free (ini_path);
    return;
  }

  /* a. sizes */
  const size_t w = s->weights * 4;
  const size_t mom = s->adam ? 2 * (s->weights - s->frozen) * 4 : 0;
  const size_t full = s->adam ? w + 4 + mom + 8 : w + 8;
  tt_memory_info info;
  tt_model_memory_info (m, &info);
  CHECK (info.weight_bytes == w, "%s: engine says %zu weight bytes, the "
      "layer list %zu", s->name, info.weight_bytes, w);

  /* train a little, so moments and counters are not zero */
  bt_data d = bt_make_data (m, 1);
  const void *inputs[1] = { d.x };
  for (int i = 0; i < 3; i++) {
    st = tt_model_train_batch (m, BT_BATCH, inputs, NULL, d.t, NULL, &err);
    CHECK (st == TT_OK, "%s: train: %s", s->name, err.message);
  }
  tt_model_finish_epoch (m);
  CHECK (tt_model_epoch (m) == 1 && tt_model_iteration (m) == 3,
      "%s: counters %u %u", s->name, tt_model_epoch (m),
      tt_model_iteration (m));

  /* b. save, load, save */
  char *a_path = bt_path ("a.bin"), *b_path = bt_path ("b.bin");
  st = tt_model_save_bin (m, a_path, &err);
  CHECK (st == TT_OK, "%s: save: %s", s->name, err.message);
  size_t a_len;
  unsigned char *a = bt_slurp (a_path, &a_len);
  CHECK (a != NULL && a_len == full, "%s: saved %zu bytes, expected %zu",
      s->name, a_len, full);
  CHECK (bt_temporaries (bt_dir) == 0, "%s: temporary file left after a "
      "save", s->name);
  if (!a || a_len != full) {
    free (a);
    free (a_path);
    free (b_path);
    bt_free_data (&d);
    tt_model_free (m);
    free (ini_path);
    return;
  }
  if (s->adam)
    CHECK (memcmp (a + w, "adam", 4) == 0, "%s: no 'adam' tag at byte %zu",
        s->name, w);
  uint32_t counters[2];
  memcpy (counters, a + full - 8, 8);
  CHECK (counters[0] == 1 && counters[1] == 3, "%s: stored counters %u %u",
      s->name, counters[0], counters[1]);

  tt_model *m2 = bt_open (s, ini_path);
  if (m2) {
    st = tt_model_load_bin (m2, a_path, &err);
    CHECK (st == TT_OK, "%s: load: %s", s->name, err.message);
    CHECK (tt_model_epoch (m2) == 1 && tt_model_iteration (m2) == 3,
        "%s: loaded counters %u %u", s->name, tt_model_epoch (m2),
        tt_model_iteration (m2));
    st = tt_model_save_bin (m2, b_path, &err);
    CHECK (st == TT_OK, "%s: save again: %s", s->name, err.message);
    CHECK (bt_same_file (a_path, b_path), "%s: save, load, save changed "
        "the file", s->name);
    /* the loaded model computes what the saved one does */
    float *y1 = bt_eval (m, &d), *y2 = bt_eval (m2, &d);
    tt_shape out = tt_model_output_shape (m);
    size_t n_out = (size_t) BT_BATCH * out.channel * out.height * out.width;
    CHECK (memcmp (y1, y2, n_out * sizeof *y1) == 0,
        "%s: the loaded model's output differs", s->name);
    free (y1);
    free (y2);
    tt_model_free (m2);
  }

  /* c. every size a file may have; counters changed to tell them apart */
  unsigned char *v = malloc (full + 8);
  const uint32_t new_counters[2] = { 7, 1234 };
  struct
  {
    const char *what;
    size_t len;
    bool moments, counters;
  } sizes[6] = {
    {"weights", w, false, false},
    {"weights_counters", w + 8, false, true},
    {"weights_moments", w + 4 + mom, true, false},
    {"weights_moments_counters", full, true, true},
    /* nntrainer's save() after initialize() or train(): the tag, no
     * moments (and without counters, an INFERENCE-compiled model's) */
    {"weights_tag", w + 4, false, false},
    {"weights_tag_counters", w + 12, false, true},
  };
  for (int i = 0; i < (s->adam ? 6 : 2); i++) {
    /* (the tag comes with the weights copied from the full file) */
    size_t len = sizes[i].moments ? w + 4 + mom : i >= 4 ? w + 4 : w;
    memcpy (v, a, len);
    if (sizes[i].counters) {
      memcpy (v + len, new_counters, 8);
      len += 8;
    }
    char name[96];
    snprintf (name, sizeof name, "%s_%s.bin", s->name, sizes[i].what);
    char *path = bt_write (name, v, len);
    m2 = bt_open (s, ini_path);
    if (!m2) {
      free (path);
      continue;
    }
    /* a step first, so that stale moments would show */
    bt_data d2 = bt_make_data (m2, 2);
    const void *inputs2[1] = { d2.x };
    st = tt_model_train_batch (m2, BT_BATCH, inputs2, NULL, d2.t, NULL, &err);
    CHECK (st == TT_OK, "%s: train: %s", s->name, err.message);
    bt_free_data (&d2);
    st = tt_model_load_bin (m2, path, &err);
    CHECK (st == TT_OK, "%s: %s (%zu bytes) refused: %s", s->name,
        sizes[i].what, len, err.message);
    if (sizes[i].counters)
      CHECK (tt_model_epoch (m2) == 7 && tt_model_iteration (m2) == 1234,
          "%s %s: counters %u %u", s->name, sizes[i].what,
          tt_model_epoch (m2), tt_model_iteration (m2));
    /* what was loaded is what the model saves; absent moments are zero */
    st = tt_model_save_bin (m2, b_path, &err);
    size_t b_len;
    unsigned char *b = bt_slurp (b_path, &b_len);
    CHECK (b && b_len == full && memcmp (b, a, w) == 0,
        "%s %s: weights not restored", s->name, sizes[i].what);
    if (b && b_len == full && s->adam) {
      bool ok = true;
      for (size_t k = w + 4; k < w + 4 + mom; k++)
        ok &= b[k] == (sizes[i].moments ? a[k] : 0);
      CHECK (ok, "%s %s: moments %s", s->name, sizes[i].what,
          sizes[i].moments ? "not restored" : "not reset");
    }
    free (b);
    tt_model_free (m2);
    unlink (path);
    free (path);
  }

  /* d.-f. refusals, on the trained model; each must leave it as it is */
  float *ref_out = bt_eval (m, &d);
  tt_shape out = tt_model_output_shape (m);
  size_t n_out = (size_t) BT_BATCH * out.channel * out.height * out.width;
  char *ref_path = bt_path ("reference.bin");
  st = tt_model_save_bin (m, ref_path, &err);
  CHECK (st == TT_OK, "%s: %s", s->name, err.message);

  /* d. sizes off by 1 or 4 from each valid one, and an empty file */
  size_t valid[6] = { w, w + 8, w + 4 + mom, full, w + 4, w + 12 };
  int n_valid = s->adam ? 6 : 2;
  size_t wrong[28];
  int n_wrong = 0;
  wrong[n_wrong++] = 0;
  for (int i = 0; i < n_valid; i++) {
    const long delta[4] = { -4, -1, 1, 4 };
    for (int k = 0; k < 4; k++) {
      size_t len = (size_t) ((long) valid[i] + delta[k]);
      bool ok = false, seen = false;
      for (int j = 0; j < n_valid; j++)
        ok |= len == valid[j];
      for (int j = 0; j < n_wrong; j++)
        seen |= len == wrong[j];
      if (!ok && !seen)
        wrong[n_wrong++] = len;
    }
  }
  memset (v, 0, full + 8);
  memcpy (v, a, full);
  for (int i = 0; i < n_wrong; i++) {
    char what[48], got[48], want_w[32], want_full[32];
    snprintf (what, sizeof what, "size%zu", wrong[i]);
    snprintf (got, sizeof got, "size %zu bytes", wrong[i]);
    snprintf (want_w, sizeof want_w, "%zu", w);
    snprintf (want_full, sizeof want_full, "%zu", full);
    const char *expect[] = { got, want_w, want_full, NULL };
    bt_refused (s, m, ref_path, ref_out, n_out, &d, what, v, wrong[i], expect);
  }

  /* e. a wrong tag */
  if (s->adam) {
    memcpy (v, a, full);
    memcpy (v + w, "adan", 4);
    const char *expect[] = { "'adam'", NULL };
    bt_refused (s, m, ref_path, ref_out, n_out, &d, "tag", v, full, expect);
    memcpy (v + w, "\0\0\0\0", 4);
    bt_refused (s, m, ref_path, ref_out, n_out, &d, "zero_tag", v, full,
        expect);
  }

  /* f. NaN and Inf: in a weight, in the last weight, in a moment */
  {
    const char *expect[] = { s->weight_probe.tensor, NULL };
    const float nan_value = NAN, inf_value = INFINITY, ninf = -INFINITY;
    memcpy (v, a, full);
    memcpy (v + s->weight_probe.at * 4, &nan_value, 4);
    bt_refused (s, m, ref_path, ref_out, n_out, &d, "nan", v, full, expect);
    /* weights only: the check does not depend on the file's layout */
    bt_refused (s, m, ref_path, ref_out, n_out, &d, "nan_weights_only", v, w,
        expect);
    memcpy (v, a, full);
    memcpy (v + w - 4, &ninf, 4);
    const char *expect_last[] = { "inf", NULL };
    bt_refused (s, m, ref_path, ref_out, n_out, &d, "last_inf", v, full,
        expect_last);
    if (s->adam) {
      char moment[96];
      snprintf (moment, sizeof moment, "%s:m", s->first_trainable);
      const char *expect_m[] = { moment, NULL };
      memcpy (v, a, full);
      memcpy (v + w + 4 + 4, &inf_value, 4);
      bt_refused (s, m, ref_path, ref_out, n_out, &d, "moment_inf", v, full,
          expect_m);
    }
  }

  /* g. a missing folder */
  {
    char *missing = bt_path ("no_such_folder/x.bin");
    st = tt_model_save_bin (m, missing, &err);
    CHECK (st == TT_ERR_IO, "%s: save into a missing folder: status %d",
        s->name, (int) st);
    if (st)
      CHECK (bt_contains (err.message, missing), "%s: message: %s", s->name,
          err.message);
    free (missing);
  }

  /* h. a failed rename (the target is a folder) and a failed write (file
   * size limit) leave no temporary file, and the old file intact */
  {
    char *folder = bt_path ("folder.bin");
    mkdir (folder, 0700);
    st = tt_model_save_bin (m, folder, &err);
    CHECK (st == TT_ERR_IO, "%s: save over a folder: status %d", s->name,
        (int) st);
    if (st)
      CHECK (bt_contains (err.message, folder), "%s: message: %s", s->name,
          err.message);
    CHECK (bt_temporaries (bt_dir) == 0, "%s: temporary file left after a "
        "failed rename", s->name);
    rmdir (folder);
    free (folder);

    struct rlimit old;
    if (getrlimit (RLIMIT_FSIZE, &old) == 0 && old.rlim_cur > 4096 &&
        full > 4096) {
      struct rlimit small = old;
      small.rlim_cur = 4096;
      void (*prev) (int) = signal (SIGXFSZ, SIG_IGN);
      setrlimit (RLIMIT_FSIZE, &small);
      st = tt_model_save_bin (m, ref_path, &err);
      setrlimit (RLIMIT_FSIZE, &old);
      signal (SIGXFSZ, prev);
      CHECK (st == TT_ERR_IO, "%s: save past the file size limit: status "
          "%d", s->name, (int) st);
      if (st)
        CHECK (bt_contains (err.message, ref_path), "%s: message: %s",
            s->name, err.message);
      CHECK (bt_temporaries (bt_dir) == 0, "%s: temporary file left after "
          "a failed write", s->name);
      size_t len;
      unsigned char *kept = bt_slurp (ref_path, &len);
      CHECK (kept && len == full, "%s: a failed save damaged the previous "
          "file (%zu bytes)", s->name, len);
      free (kept);
    }
    CHECK (bt_temporaries (bt_dir) == 0, "%s: temporary files left", s->name);
  }

  unlink (ref_path);
  unlink (a_path);
  unlink (b_path);
  free (ref_path);
  free (ref_out);
  free (v);
  free (a);
  free (a_path);
  free (b_path);
  bt_free_data (&d);
  tt_model_free (m);
  if (!s->rel_path)
    unlink (ini_path);
  free (ini_path);
}

/* The models, in the order they run (bt_init_specs computes their sizes
 * from the layer lists). */
enum
{ BT_MLP, BT_CNN, BT_BRANCHY_BN, BT_SGD, BT_MODELS };
static bt_spec bt_specs[BT_MODELS];

static void
bt_init_specs (void)
{
  const size_t mlp_h1 = fc_params (784, 256);
  const size_t cnn_c1 = conv_params (1, 32, 3, 3);
  /* branchy_bn: conv0 2->4 3x3, bn0 (4 channels), branch_a 4->4 3x3,
   * branch_b 4->4 1x1, then concat 8:6:6, pool 8:3:3, flatten 72, bn1
   * (72 features along the width), output 72->5 */
  const size_t br_bn1 = conv_params (2, 4, 3, 3) + bn_params (4) +
      conv_params (4, 4, 3, 3) + conv_params (4, 4, 1, 1);
  const bt_spec specs[BT_MODELS] = {
    {"mlp", "tests/models/fmnist_mlp.ini", NULL, true,
          mlp_h1 + fc_params (256, 128) + fc_params (128, 10), 0,
        {"hidden2:weight", mlp_h1 + 17}, "hidden1:weight"},
    {"cnn", "tests/models/fmnist_cnn.ini", NULL, true,
          cnn_c1 + conv_params (32, 64, 3, 3) + fc_params (64 * 5 * 5, 128) +
          fc_params (128, 10), 0, {"conv2:filter", cnn_c1 + 100},
        "conv1:filter"},
    {"branchy_bn", "tests/models/branchy_bn.ini", NULL, true,
          br_bn1 + bn_params (72) + fc_params (72, 5), 2 * 4 + 2 * 72,
        {"bn1:moving_variance", br_bn1 + 72 + 3}, "conv0:filter"},
    {"sgd", NULL, bt_sgd_ini, false,
          fc_params (6, 5) + bn_params (5) + 5 * 3 /* no bias */ , 2 * 5,
        {"bn:gamma", fc_params (6, 5) + 2 * 5 + 1}, NULL},
  };
  memcpy (bt_specs, specs, sizeof specs);
}

/* one case per model: checks a to h */
static void
test_mlp (void)
{
  bt_model (&bt_specs[BT_MLP]);
}

static void
test_cnn (void)
{
  bt_model (&bt_specs[BT_CNN]);
}

static void
test_branchy_bn (void)
{
  bt_model (&bt_specs[BT_BRANCHY_BN]);
}

static void
test_sgd (void)
{
  bt_model (&bt_specs[BT_SGD]);
}

int
main (int argc, char **argv)
{
  snprintf (bt_root, sizeof bt_root, "%s", argc > 1 ? argv[1] : ".");
  const char *any = tt_test_write_text ("placeholder", "");
  snprintf (bt_dir, sizeof bt_dir, "%.*s", (int) (strrchr (any, '/') - any),
      any);
  unlink (any);

  bt_init_specs ();
  TT_TEST_RUN (test_mlp);
  TT_TEST_RUN (test_cnn);
  TT_TEST_RUN (test_branchy_bn);
  TT_TEST_RUN (test_sgd);
  rmdir (bt_dir);
  return tt_test_summary ();
}
