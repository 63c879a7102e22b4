/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A bad input never costs a training run (issue 14), the engine's side:
 *   a. tt_model_check_save_path refuses, before any training, a folder
 *      that does not exist, a parent that is a file, a folder as the
 *      name, an .ini name; accepts a good path and leaves nothing there;
 *   b. tt_model_save_with_fallback: the target's folder removed during
 *      the run, the model goes to $TMPDIR in the same form, loads back
 *      equal, and the message names it; a refusal writes no fallback;
 *   c. adam moments no step can use (negative second moment, first moment
 *      whose square overflows, NaN) are refused from a BIN and from a
 *      bundle, naming the tensor; the model is left as it was;
 *   d. counters of 0xFFFFFFFF (epoch, iteration) are refused from a BIN
 *      and a bundle, naming the counter and the value; the largest
 *      accepted value loads; a step at the iteration limit is refused;
 *   e. non-finite weights are not saved (BIN, bundle): the old file stays
 *      byte for byte, the message names the tensor;
 *   f. a save removes temporaries of its target left by a killed writer
 *      (pid gone) and keeps a live writer's.
 */
#include "tt_engine.h"
#include "tt_bundle.h"
#include "tt_internal.h"
#include "tt_test.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char *ss_ini =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 2\nloss = cross\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
    "[in]\ntype = input\ninput_shape = 1:1:4\n"
    "[fc1]\ntype = fully_connected\nunit = 3\nactivation = relu\n"
    "[fc2]\ntype = fully_connected\nunit = 2\nactivation = softmax\n";

/* weights 12 + 3 + 6 + 2 floats; moments follow "adam" in the same
 * order, m then v for each weight */
#define SS_WEIGHTS 23
#define SS_BIN_BYTES (SS_WEIGHTS * 4 + 4 + 2 * SS_WEIGHTS * 4 + 8)
#define SS_FC1_V_AT (SS_WEIGHTS * 4 + 4 + 12 * 4)       /* v of fc1's weight */
#define SS_FC1_M_AT (SS_WEIGHTS * 4 + 4)        /* m of fc1's weight */

static char ss_dir[256];
static const char *ss_ini_path;

static const char *
ss_path (const char *name)
{
  static char buf[8][512];
  static int k;
  k = (k + 1) % 8;
  snprintf (buf[k], sizeof buf[k], "%s/%s", ss_dir, name);
  return buf[k];
}

/* A compiled model with initialized weights, trained one step so the
 * moments are not zero. */
static tt_model *
ss_model (void)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (ss_ini_path, &err);
  if (!m || tt_model_compile (m, &err) || tt_model_init_weights (m, &err)) {
    printf ("cannot build the test model: %s\n", err.message);
    exit (2);
  }
  const float x[8] = { 0.1f, 0.5f, -0.3f, 0.9f, 1, 0, 0.2f, -0.4f };
  const float y[4] = { 1, 0, 0, 1 };
  const void *in[1] = { x };
  const tt_dtype t[1] = { TT_DTYPE_FLOAT32 };
  if (tt_model_train_batch (m, 2, in, t, y, NULL, &err)) {
    printf ("cannot train the test model: %s\n", err.message);
    exit (2);
  }
  return m;
}

static bool
ss_contains (const char *s, const char *part)
{
  return strstr (s, part) != NULL;
}

static bool
ss_exists (const char *path)
{
  struct stat sb;
  return stat (path, &sb) == 0;
}

static bool
ss_same_file (const char *a, const char *b)
{
  size_t la = 0, lb = 0;
  char *x = tt_test_read_file (a, &la), *y = tt_test_read_file (b, &lb);
  bool same = x && y && la == lb && !memcmp (x, y, la);
  free (x);
  free (y);
  return same;
}

static int
ss_count_entries (const char *dir)
{
  DIR *d = opendir (dir);
  int n = 0;
  if (!d)
    return -1;
  for (struct dirent * e; (e = readdir (d));)
    n += strcmp (e->d_name, ".") && strcmp (e->d_name, "..");
  closedir (d);
  return n;
}

static void
ss_patch (const char *path, long at, const void *bytes, size_t n)
{
  FILE *f = fopen (path, "r+b");
  if (!f || fseek (f, at, SEEK_SET) || fwrite (bytes, 1, n, f) != n) {
    perror (path);
    exit (2);
  }
  fclose (f);
}

static uint32_t
ss_crc32 (const unsigned char *p, size_t n)
{
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0xedb88320u & -(c & 1));
  }
  return ~c;
}

static uint32_t
ss_get32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
      (uint32_t) p[3] << 24;
}

static void
ss_put32 (unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char) (v >> (8 * i));
}

/* Rewrites an uncompressed bundle's checksums (weight section, header)
 * after a test changed its bytes, so that only the values are wrong. */
static void
ss_bundle_reseal (const char *path)
{
  size_t len = 0;
  unsigned char *b = (unsigned char *) tt_test_read_file (path, &len);
  for (int i = 0; i < 3; i++) {
    unsigned char *e = b + 64 + 40 * i;
    if (ss_get32 (e) != 3)
      continue;
    uint64_t off = ss_get32 (e + 8) | (uint64_t) ss_get32 (e + 12) << 32;
    uint64_t n = ss_get32 (e + 16) | (uint64_t) ss_get32 (e + 20) << 32;
    ss_put32 (e + 32, ss_crc32 (b + off, n));
  }
  ss_put32 (b + 16, ss_crc32 (b + 24, 160));
  ss_patch (path, 0, b, len);
  free (b);
}

/* Where tensor kind/index lies in the bundle file: the weight section's
 * offset plus the tensor's. */
static long
ss_bundle_tensor_at (const char *path, uint32_t kind, int nth)
{
  tt_bundle_info info;
  tt_error err;
  if (tt_bundle_inspect (path, &info, &err)) {
    printf ("inspect: %s\n", err.message);
    exit (2);
  }
  long at = -1;
  uint64_t wsec = 0;
  for (uint32_t i = 0; i < info.n_sections; i++)
    if (info.sections[i].type == TT_BUNDLE_SECTION_WEIGHTS)
      wsec = info.sections[i].offset;
  for (uint32_t i = 0; i < info.n_tensors; i++)
    if (info.tensors[i].kind == kind && nth-- == 0) {
      at = (long) (wsec + info.tensors[i].offset);
      break;
    }
  tt_bundle_info_clear (&info);
  return at;
}

/* ---- a. the destination, before training ------------------------------ */

static void
test_check_save_path (void)
{
  tt_error err;
  const char *good = ss_path ("a/model.ttb");
  mkdir (ss_path ("a"), 0777);
  CHECK (tt_model_check_save_path (good, &err) == TT_OK, "%s", err.message);
  CHECK (ss_count_entries (ss_path ("a")) == 0, "the probe file was left "
      "behind");
  CHECK (tt_model_check_save_path (ss_path ("a/w.bin"), &err) == TT_OK,
      "%s", err.message);

  tt_status st = tt_model_check_save_path (ss_path ("none/dir/m.ttb"), &err);
  CHECK (st == TT_ERR_IO && ss_contains (err.message, "none/dir") &&
      ss_contains (err.message, "No such file"), "%s", err.message);
  st = tt_model_check_save_path (ss_path ("a/m.ini"), &err);
  CHECK (st == TT_ERR_INVALID && ss_contains (err.message, "m.ini"), "%s",
      err.message);
  st = tt_model_check_save_path (ss_path ("a/M.INI"), &err);
  CHECK (st == TT_ERR_INVALID, "an .INI name in capitals accepted");
  st = tt_model_check_save_path (ss_path ("a"), &err);
  CHECK (st == TT_ERR_INVALID && ss_contains (err.message, "folder"), "%s",
      err.message);
  st = tt_model_check_save_path (ss_path ("a/"), &err);
  CHECK (st == TT_ERR_INVALID && ss_contains (err.message, "folder"), "%s",
      err.message);
  tt_test_write_text ("plainfile", "x");
  st = tt_model_check_save_path (ss_path ("plainfile/m.ttb"), &err);
  CHECK (st == TT_ERR_IO && ss_contains (err.message, "not a folder"), "%s",
      err.message);
  CHECK (tt_model_check_save_path ("", &err) == TT_ERR_INVALID,
      "an empty path accepted");
}

/* ---- b. the fallback --------------------------------------------------- */

static void
test_fallback_one (const char *name, bool bin)
{
  tt_error err;
  tt_model *m = ss_model ();
  char sub[600], target[700], tmpd[600], saved[4096];
  snprintf (sub, sizeof sub, "%s", ss_path (bin ? "gone_b" : "gone_t"));
  snprintf (tmpd, sizeof tmpd, "%s", ss_path (bin ? "tmp_b" : "tmp_t"));
  snprintf (target, sizeof target, "%s/%s", sub, name);
  mkdir (sub, 0777);
  mkdir (tmpd, 0777);
  CHECK (tt_model_check_save_path (target, &err) == TT_OK, "%s", err.message);
  /* the medium goes away during the run */
  rmdir (sub);
  setenv ("TMPDIR", tmpd, 1);
  tt_status st = tt_model_save_with_fallback (m, target, NULL, saved,
      sizeof saved, &err);
  CHECK (st == TT_ERR_IO, "the failed save reported %s", tt_status_name (st));
  CHECK (!strncmp (saved, tmpd, strlen (tmpd)) &&
      ss_contains (saved, ".rescued-") &&
      !strcmp (saved + strlen (saved) - 4, bin ? ".bin" : ".ttb"),
      "fallback at '%s'", saved);
  CHECK (ss_contains (err.message, saved) && ss_contains (err.message,
          target), "message: %s", err.message);
  CHECK (ss_exists (saved), "%s not written", saved);

  /* it holds the same model */
  float a[SS_WEIGHTS], b[SS_WEIGHTS];
  tt_model_export_weights (m, a, SS_WEIGHTS, &err);
  tt_model *back = NULL;
  if (bin) {
    back = tt_model_load_ini (ss_ini_path, &err);
    if (back && (tt_model_compile (back, &err) ||
            tt_model_load_bin (back, saved, &err))) {
      tt_model_free (back);
      back = NULL;
    }
  } else {
    back = tt_bundle_load (saved, NULL, &err);
  }
  CHECK (back != NULL, "the fallback does not load: %s", err.message);
  if (back) {
    tt_model_export_weights (back, b, SS_WEIGHTS, &err);
    CHECK (!memcmp (a, b, sizeof a), "the fallback holds other weights");
    CHECK (tt_model_iteration (back) == 1, "iteration %u",
        tt_model_iteration (back));
    tt_model_free (back);
  }
  unsetenv ("TMPDIR");
  tt_model_free (m);
}

static void
test_fallback (void)
{
  test_fallback_one ("model.ttb", false);
  test_fallback_one ("model.bin", true);

  /* a refusal (non-finite weights) writes nothing anywhere */
  tt_error err;
  tt_model *m = ss_model ();
  float w[SS_WEIGHTS];
  tt_model_export_weights (m, w, SS_WEIGHTS, &err);
  w[5] = NAN;
  tt_model_import_weights (m, w, SS_WEIGHTS, &err);
  char tmpd[600], saved[4096] = "x";
  snprintf (tmpd, sizeof tmpd, "%s", ss_path ("tmp_nan"));
  mkdir (tmpd, 0777);
  setenv ("TMPDIR", tmpd, 1);
  tt_status st = tt_model_save_with_fallback (m, ss_path ("none/m.ttb"),
      NULL, saved, sizeof saved, &err);
  CHECK (st == TT_ERR_NUMERIC && saved[0] == '\0' &&
      ss_count_entries (tmpd) == 0, "status %s, fallback '%s'",
      tt_status_name (st), saved);
  unsetenv ("TMPDIR");
  tt_model_free (m);
}

/* ---- c. moments -------------------------------------------------------- */

static void
test_moments_bin (void)
{
  tt_error err;
  tt_model *m = ss_model ();
  const char *good = ss_path ("good.bin");
  CHECK (tt_model_save_bin (m, good, &err) == TT_OK, "%s", err.message);
  size_t len = 0;
  char *bytes = tt_test_read_file (good, &len);
  CHECK (len == SS_BIN_BYTES, "BIN of %zu bytes, expected %d", len,
      SS_BIN_BYTES);
  free (bytes);
  float before[SS_WEIGHTS], after[SS_WEIGHTS];
  tt_model_export_weights (m, before, SS_WEIGHTS, &err);

  const struct
  {
    const char *what;
    long at;
    float value;
    const char *expect;
  } cases[] = {
    {"negative v", SS_FC1_V_AT + 4 * 2, -1.0f, "negative adam second moment"},
    {"v -0 is zero", SS_FC1_V_AT, -0.0f, NULL},
    {"v NaN", SS_FC1_V_AT + 4, NAN, "non-finite"},
    {"m 3e38", SS_FC1_M_AT + 4 * 3, 3e38f, "too large to square"},
    {"m -2^64", SS_FC1_M_AT, -18446744073709551616.0f, "too large to square"},
    {"m 1e19", SS_FC1_M_AT, 1e19f, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *b = tt_test_read_file (good, &len);
    memcpy (b + cases[i].at, &cases[i].value, 4);
    const char *bad = tt_test_write_file ("bad.bin", b, len);
    free (b);
    tt_status st = tt_model_load_bin (m, bad, &err);
    if (!cases[i].expect) {
      CHECK (st == TT_OK, "%s: refused: %s", cases[i].what, err.message);
      tt_model_load_bin (m, good, &err);
      continue;
    }
    CHECK (st == TT_ERR_PARSE && ss_contains (err.message, cases[i].expect)
        && ss_contains (err.message, "fc1") && ss_contains (err.message,
            "bad.bin"), "%s: %s", cases[i].what, st ? err.message : "loaded");
    tt_model_export_weights (m, after, SS_WEIGHTS, &err);
    CHECK (!memcmp (before, after, sizeof before), "%s: the refused file "
        "changed the model", cases[i].what);
    /* the same from memory */
    b = tt_test_read_file (bad, &len);
    st = tt_model_load_bin_memory (m, b, len, "mem.bin", &err);
    CHECK (st == TT_ERR_PARSE && ss_contains (err.message, cases[i].expect),
        "%s in memory: %s", cases[i].what, st ? err.message : "loaded");
    free (b);
  }
  tt_model_free (m);
}

static void
test_moments_bundle (void)
{
  tt_error err;
  tt_model *m = ss_model ();
  const char *good = ss_path ("good.ttb");
  CHECK (tt_model_save (m, good, &err) == TT_OK, "%s", err.message);
  tt_model_free (m);
  const struct
  {
    const char *what;
    uint32_t kind;
    int nth;
    float value;
    const char *expect;
  } cases[] = {
    {"negative v", 2, 0, -0.5f, "negative adam second moment"},
    {"m 3e38", 1, 1, -3e38f, "too large to square"},
    {"v Inf", 2, 3, INFINITY, "non-finite"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t len = 0;
    char *b = tt_test_read_file (good, &len);
    const char *bad = tt_test_write_file ("bad.ttb", b, len);
    free (b);
    long at = ss_bundle_tensor_at (bad, cases[i].kind, cases[i].nth);
    CHECK (at > 0, "%s: no such tensor", cases[i].what);
    if (at <= 0)
      continue;
    ss_patch (bad, at + 4, &cases[i].value, 4);
    ss_bundle_reseal (bad);
    tt_bundle_load_options modes[3] = { {0}, {0}, {0}
    };
    modes[1].mode = TT_BUNDLE_MMAP;
    modes[2].mode = TT_BUNDLE_IN_PLACE;
    for (int k = 0; k < 3; k++) {
      tt_model *bm = tt_bundle_load (bad, &modes[k], &err);
      CHECK (!bm && ss_contains (err.message, cases[i].expect) &&
          ss_contains (err.message, "element 1"), "%s (mode %d): %s",
          cases[i].what, k, bm ? "loaded" : err.message);
      tt_model_free (bm);
    }
    /* as weights into a compiled model: refused, model untouched */
    tt_model *into = ss_model ();
    float before[SS_WEIGHTS], after[SS_WEIGHTS];
    tt_model_export_weights (into, before, SS_WEIGHTS, &err);
    tt_status st = tt_bundle_load_weights (into, bad, &err);
    tt_model_export_weights (into, after, SS_WEIGHTS, &err);
    CHECK (st == TT_ERR_PARSE && ss_contains (err.message, cases[i].expect)
        && !memcmp (before, after, sizeof before), "%s as weights: %s",
        cases[i].what, st ? err.message : "loaded");
    tt_model_free (into);
  }
}

/* ---- d. counters ------------------------------------------------------- */

static void
test_counters (void)
{
  tt_error err;
  tt_model *m = ss_model ();
  const char *good = ss_path ("good.bin");
  tt_model_save_bin (m, good, &err);
  const struct
  {
    uint32_t epoch, iteration;
    const char *expect;
  } cases[] = {
    {0xffffffffu, 7, "epoch counter is 4294967295"},
    {3, 0xffffffffu, "iteration counter is 4294967295"},
    {3, 0x80000000u, "iteration counter is 2147483648"},
    {0x7fffffffu, 0x7fffffffu, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t len = 0;
    char *b = tt_test_read_file (good, &len);
    uint32_t c[2] = { cases[i].epoch, cases[i].iteration };
    memcpy (b + len - 8, c, 8);
    const char *bad = tt_test_write_file ("counters.bin", b, len);
    tt_status st = tt_model_load_bin (m, bad, &err);
    if (cases[i].expect)
      CHECK (st == TT_ERR_PARSE && ss_contains (err.message,
              cases[i].expect) && ss_contains (err.message, "counters.bin")
          && tt_model_iteration (m) == 1, "BIN %u/%u: %s", c[0], c[1],
          st ? err.message : "loaded");
    else
      CHECK (st == TT_OK && tt_model_epoch (m) == c[0] &&
          tt_model_iteration (m) == c[1], "BIN %u/%u refused: %s", c[0],
          c[1], err.message);
    st = tt_model_load_bin_memory (m, b, len, "mem.bin", &err);
    CHECK ((st == TT_OK) == !cases[i].expect, "BIN in memory %u/%u: %s",
        c[0], c[1], st ? err.message : "loaded");
    free (b);
    tt_model_load_bin (m, good, &err);
  }

  /* a bundle: the counters live in its header */
  const char *gb = ss_path ("counters_good.ttb");
  tt_model_save (m, gb, &err);
  for (int which = 0; which < 2; which++) {
    size_t len = 0;
    char *b = tt_test_read_file (gb, &len);
    const char *bad = tt_test_write_file ("counters.ttb", b, len);
    free (b);
    const unsigned char ff[4] = { 0xff, 0xff, 0xff, 0xff };
    ss_patch (bad, which ? 56 : 52, ff, 4);
    ss_bundle_reseal (bad);
    tt_model *bm = tt_bundle_load (bad, NULL, &err);
    CHECK (!bm && ss_contains (err.message, which ? "iteration counter is "
            "4294967295" : "epoch counter is 4294967295"), "bundle: %s",
        bm ? "loaded" : err.message);
    tt_model_free (bm);
    tt_status st = tt_bundle_load_weights (m, bad, &err);
    CHECK (st == TT_ERR_PARSE && tt_model_iteration (m) == 1,
        "bundle as weights: %s", st ? err.message : "loaded");
  }

  /* a step at the limit is refused instead of wrapping */
  m->iteration = UINT32_MAX;
  const float x[8] = { 0 }, y[4] = { 1, 0, 1, 0 };
  const void *in[1] = { x };
  const tt_dtype t[1] = { TT_DTYPE_FLOAT32 };
  tt_status st = tt_model_train_batch (m, 2, in, t, y, NULL, &err);
  CHECK (st == TT_ERR_STATE && m->iteration == UINT32_MAX &&
      ss_contains (err.message, "iteration counter"), "%s",
      st ? err.message : "trained");
  tt_model_free (m);
}

/* ---- e. non-finite weights are not saved ------------------------------- */

static void
test_no_nan_save (void)
{
  tt_error err;
  const char *names[] = { "keep.ttb", "keep.bin" };
  for (int i = 0; i < 2; i++) {
    tt_model *m = ss_model ();
    const char *path = ss_path (names[i]);
    CHECK (tt_model_save (m, path, &err) == TT_OK, "%s", err.message);
    size_t len = 0;
    char *old = tt_test_read_file (path, &len);
    const char *copy = tt_test_write_file ("old_copy", old, len);
    free (old);
    float w[SS_WEIGHTS];
    tt_model_export_weights (m, w, SS_WEIGHTS, &err);
    w[SS_WEIGHTS - 1] = NAN;    /* fc2's bias */
    tt_model_import_weights (m, w, SS_WEIGHTS, &err);
    tt_status st = tt_model_save (m, path, &err);
    CHECK (st == TT_ERR_NUMERIC && ss_contains (err.message, "fc2") &&
        ss_contains (err.message, "bias") && ss_contains (err.message,
            "non-finite") && ss_contains (err.message, names[i]), "%s: %s",
        names[i], st ? err.message : "saved");
    CHECK (ss_same_file (path, copy), "%s: the old file changed", names[i]);
    tt_model_free (m);
  }
}

/* ---- f. temporaries of killed writers ---------------------------------- */

static void
test_sweep (void)
{
  pid_t child = fork ();
  if (child == 0)
    _exit (0);
  waitpid (child, NULL, 0);
  char dead[700], live[700], other[700];
  const char *target = ss_path ("sweep.ttb");
  snprintf (dead, sizeof dead, "%s.tmp-%ld-AbC123", target, (long) child);
  snprintf (live, sizeof live, "%s.tmp-%ld-XyZ789", target, (long) getpid ());
  snprintf (other, sizeof other, "%s/other.ttb.tmp-%ld-AbC123", ss_dir,
      (long) child);
  FILE *f;
  const char *files[] = { dead, live, other };
  for (int i = 0; i < 3; i++)
    if ((f = fopen (files[i], "wb")))
      fclose (f);
  tt_error err;
  tt_model *m = ss_model ();
  CHECK (tt_model_save (m, target, &err) == TT_OK, "%s", err.message);
  CHECK (!ss_exists (dead), "a dead writer's temporary was kept");
  CHECK (ss_exists (live), "a live writer's temporary was removed");
  CHECK (ss_exists (other), "another target's temporary was removed");
  unlink (live);
  unlink (other);
  tt_model_free (m);
}

int
main (void)
{
  ss_ini_path = tt_test_write_text ("model.ini", ss_ini);
  if (snprintf (ss_dir, sizeof ss_dir, "%s", ss_ini_path) >=
      (int) sizeof ss_dir) {
    printf ("temporary folder name too long: %s\n", ss_ini_path);
    return 2;
  }
  *strrchr (ss_dir, '/') = '\0';
  static char ini_copy[512];
  snprintf (ini_copy, sizeof ini_copy, "%s", ss_ini_path);
  ss_ini_path = ini_copy;

  TT_TEST_RUN (test_check_save_path);
  TT_TEST_RUN (test_fallback);
  TT_TEST_RUN (test_moments_bin);
  TT_TEST_RUN (test_moments_bundle);
  TT_TEST_RUN (test_counters);
  TT_TEST_RUN (test_no_nan_save);
  TT_TEST_RUN (test_sweep);
  return tt_test_summary ();
}
