/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strict INI reading (ini_strict.c, issue 14), from a file and from text:
 *   a. a key set twice, a section written twice: refused with both lines;
 *   b. a misspelt key is named, with the known key it is closest to, and
 *      not reported as the missing key it was meant to be;
 *   c. a UTF-8 byte-order mark loads (and is not kept in the saved plan);
 *   d. NUL bytes and control characters: "binary data" with the offset;
 *   e. "[]": an empty section name with its line;
 *   f. a bundle whose magic is damaged is called that, not an INI error;
 *   g. models loading in several threads at once each get their own
 *      message (iniparser's error callback was one for the process).
 */
#include "tt_engine.h"
#include "tt_test.h"

#include <pthread.h>

static const char *is_model = "[Model]\n"       /* 1 */
    "type = NeuralNetwork\n"    /* 2 */
    "batch_size = 2\n"          /* 3 */
    "loss = cross\n"            /* 4 */
    "[Optimizer]\n"             /* 5 */
    "type = adam\n"             /* 6 */
    "[in]\n"                    /* 7 */
    "type = input\n"            /* 8 */
    "input_shape = 1:1:4\n"     /* 9 */
    "[hidden]\n"                /* 10 */
    "type = fully_connected\n"  /* 11 */
    "unit = 3\n"                /* 12 */
    "activation = relu\n"       /* 13 */
    "[out]\n"                   /* 14 */
    "type = fully_connected\n"  /* 15 */
    "unit = 2\n"                /* 16 */
    "activation = softmax\n";   /* 17 */

static char *
is_replace (const char *text, const char *from, const char *to)
{
  const char *at = strstr (text, from);
  if (!at) {
    printf ("test bug: '%s' not in the model\n", from);
    exit (2);
  }
  size_t n = strlen (text) - strlen (from) + strlen (to) + 1;
  char *out = malloc (n);
  snprintf (out, n, "%.*s%s%s", (int) (at - text), text, to,
      at + strlen (from));
  return out;
}

/* Loads text from a file and from memory; both must fail (expect set) or
 * load. Returns false on a mismatch, printing it. */
static void
is_both (const char *what, const char *text, size_t len, const char *expect1,
    const char *expect2)
{
  char name[128];
  snprintf (name, sizeof name, "%s.ini", what);
  const char *path = tt_test_write_file (name, text, len);
  for (int from_text = 0; from_text < 2; from_text++) {
    tt_error err;
    tt_model *m = from_text ? tt_model_load_ini_text (text, len, name, &err)
        : tt_model_load_ini (path, &err);
    if (!expect1) {
      CHECK (m != NULL, "%s (%s): refused: %s", what, from_text ? "text" :
          "file", err.message);
    } else {
      CHECK (!m && strstr (err.message, name) && strstr (err.message,
              expect1) && (!expect2 || strstr (err.message, expect2)),
          "%s (%s): %s", what, from_text ? "text" : "file",
          m ? "loaded" : err.message);
    }
    tt_model_free (m);
  }
}

static void
is_both_text (const char *what, const char *text, const char *expect1,
    const char *expect2)
{
  is_both (what, text, strlen (text), expect1, expect2);
}

static void
test_repeats (void)
{
  char *t = is_replace (is_model, "unit = 3\n", "unit = 3\nunit = 7\n");
  is_both_text ("dup_key", t, "[hidden] unit: set twice, at line 12 and "
      "line 13", NULL);
  free (t);
  /* case and spacing do not make another key */
  t = is_replace (is_model, "unit = 3\n", "unit = 3\n  UNIT=3\n");
  is_both_text ("dup_key_case", t, "[hidden] unit: set twice", NULL);
  free (t);
  t = is_replace (is_model, "[out]\n", "[Hidden]\nactivation = tanh\n"
      "[out]\n");
  is_both_text ("dup_section", t, "[hidden] appears twice, at line 10 and "
      "line 14", NULL);
  free (t);
  /* the same key in two sections is no repeat */
  is_both_text ("same_key_two_sections", is_model, NULL, NULL);
  /* a continued line counts from where it starts */
  t = is_replace (is_model, "unit = 3\n", "unit = \\\n 3\nunit = 4\n");
  is_both_text ("dup_key_continued", t, "line 12 and line 14", NULL);
  free (t);
}

static void
test_misspelt (void)
{
  char *t = is_replace (is_model, "unit = 3\n", "units = 3\n");
  is_both_text ("typo_unit", t, "[hidden] units: unknown key",
      "did you mean 'unit'?");
  free (t);
  t = is_replace (is_model, "batch_size = 2\n", "bacth_size = 2\n");
  is_both_text ("typo_batch", t, "[model] bacth_size: unknown key",
      "did you mean 'batch_size'?");
  free (t);
  t = is_replace (is_model, "activation = relu\n", "activaton = relu\n");
  is_both_text ("typo_universal", t, "activaton: unknown key",
      "did you mean 'activation'?");
  free (t);
  /* nothing close: no guess */
  t = is_replace (is_model, "unit = 3\n", "unit = 3\ncolour = blue\n");
  is_both_text ("unknown_far", t, "colour: unknown key", NULL);
  tt_error err;
  tt_model *m = tt_model_load_ini_text (t, strlen (t), "far.ini", &err);
  CHECK (!m && !strstr (err.message, "did you mean"), "%s", err.message);
  tt_model_free (m);
  free (t);
}

static void
test_bom (void)
{
  size_t n = strlen (is_model);
  char *t = malloc (n + 3);
  memcpy (t, "\xef\xbb\xbf", 3);
  memcpy (t + 3, is_model, n);
  is_both ("bom", t, n + 3, NULL, NULL);
  /* the plan saved after the text starts with the text, not the mark */
  const char *path = tt_test_write_file ("bom2.ini", t, n + 3);
  char saved[600];
  snprintf (saved, sizeof saved, "%s", path);
  strcpy (strrchr (saved, '/'), "/bom2.opt.ini");
  tt_error err;
  tt_model *m = tt_model_load_ini (path, &err);
  CHECK (m && !tt_model_compile (m, &err) &&
      !tt_model_save_plan_ini (m, saved, &err), "%s", err.message);
  char *back = tt_test_read_file (saved, NULL);
  CHECK (back && !strncmp (back, "[Model]", 7), "saved plan starts '%.8s'",
      back ? back : "(none)");
  free (back);
  tt_model_free (m);
  /* a mark anywhere else is no mark */
  char *late = is_replace (is_model, "[in]\n", "\xef\xbb\xbf[in]\n");
  is_both_text ("bom_late", late, "syntax error at line 7", NULL);
  free (late);
  free (t);
}

static void
test_binary (void)
{
  size_t n = strlen (is_model);
  char *t = malloc (n);
  memcpy (t, is_model, n);
  const size_t at = (size_t) (strstr (is_model, "[in]") - is_model) + 2;
  t[at] = '\0';
  is_both ("nul", t, n, "binary data, not INI text: byte 0x00 at offset",
      "(line 7)");
  char expect[64];
  snprintf (expect, sizeof expect, "offset %zu", at);
  is_both ("nul_offset", t, n, expect, NULL);
  t[at] = 0x01;
  is_both ("control", t, n, "byte 0x01 at offset", NULL);
  free (t);
  /* a compressed file, say */
  unsigned char gz[64] = { 0x1f, 0x8b, 0x08, 0x00 };
  for (int i = 4; i < 64; i++)
    gz[i] = (unsigned char) (i * 37);
  is_both ("gzip", (const char *) gz, sizeof gz, "binary data", "offset 0");
  /* UTF-8 in comments and values is text */
  char *utf = is_replace (is_model, "[in]\n", "# café, 模型\n[in]\n");
  is_both_text ("utf8_comment", utf, NULL, NULL);
  free (utf);
}

static void
test_empty_section (void)
{
  char *t = is_replace (is_model, "[out]\n", "[]\n[out]\n");
  is_both_text ("empty_section", t, "line 14: empty section name", NULL);
  free (t);
  t = is_replace (is_model, "[out]\n", "[   ]\n[out]\n");
  is_both_text ("blank_section", t, "line 14: empty section name", NULL);
  free (t);
}

static void
test_near_bundle (void)
{
  unsigned char b[256];
  const unsigned char magic[8] = { 0x89, 'T', 'T', 'B', '\r', '\n', 0x1a,
    '\n'
  };
  memcpy (b, magic, 8);
  memset (b + 8, 0, sizeof b - 8);
  for (int damaged = 0; damaged < 3; damaged++) {
    unsigned char c[256];
    memcpy (c, b, sizeof c);
    c[damaged == 2 ? 4 : damaged] ^= 0x40;      /* one byte hit */
    is_both ("near_bundle", (const char *) c, sizeof c,
        "starts like a tensor-trainer bundle but its header is damaged", NULL);
  }
}

/* ---- g. threads --------------------------------------------------------- */

#define IS_THREADS 6
#define IS_ROUNDS 40

typedef struct
{
  char path[512];
  const char *expect;           /* NULL: must load */
  int failures;
} is_job;

static void *
is_worker (void *arg)
{
  is_job *j = arg;
  for (int r = 0; r < IS_ROUNDS; r++) {
    tt_error err;
    tt_model *m = tt_model_load_ini (j->path, &err);
    bool ok = j->expect ? !m && strstr (err.message, j->path) &&
        strstr (err.message, j->expect) : m != NULL;
    if (!ok && j->failures++ == 0)
      printf ("  %s: %s\n", j->path, m ? "loaded" : err.message);
    tt_model_free (m);
  }
  return NULL;
}

static void
test_threads (void)
{
  is_job jobs[IS_THREADS];
  char *texts[IS_THREADS] = {
    strdup (is_model),
    is_replace (is_model, "[in]\n", "[in\n"),
    is_replace (is_model, "unit = 2\n", "unit = 2\nunit = 5\n"),
    strdup (is_model),
    is_replace (is_model, "type = adam\n", "type = adam\nno equals\n"),
    is_replace (is_model, "unit = 3\n", "units = 3\n"),
  };
  const char *expect[IS_THREADS] = {
    NULL, "syntax error at line 7", "[out] unit: set twice, at line 16 and "
        "line 17", NULL, "syntax error at line 7: no equals",
    "did you mean 'unit'"
  };
  for (int i = 0; i < IS_THREADS; i++) {
    char name[32];
    snprintf (name, sizeof name, "thread%d.ini", i);
    snprintf (jobs[i].path, sizeof jobs[i].path, "%s",
        tt_test_write_text (name, texts[i]));
    jobs[i].expect = expect[i];
    jobs[i].failures = 0;
    free (texts[i]);
  }
  pthread_t th[IS_THREADS];
  for (int i = 0; i < IS_THREADS; i++)
    pthread_create (&th[i], NULL, is_worker, &jobs[i]);
  for (int i = 0; i < IS_THREADS; i++)
    pthread_join (th[i], NULL);
  for (int i = 0; i < IS_THREADS; i++)
    CHECK (jobs[i].failures == 0, "thread %d: %d of %d loads got another "
        "result", i, jobs[i].failures, IS_ROUNDS);
}

int
main (void)
{
  TT_TEST_RUN (test_repeats);
  TT_TEST_RUN (test_misspelt);
  TT_TEST_RUN (test_bom);
  TT_TEST_RUN (test_binary);
  TT_TEST_RUN (test_empty_section);
  TT_TEST_RUN (test_near_bundle);
  TT_TEST_RUN (test_threads);
  return tt_test_summary ();
}
