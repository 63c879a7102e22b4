/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The in-memory INI parser (ini_text.c) against iniparser itself: every
 * model of tests/models and a corpus of tricky lines must give the same
 * dictionary (same entries, same order, same values) and the same compiled
 * model; what iniparser rejects, the text parser rejects too.
 *
 * usage: test_ini_text SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test.h"

#include <iniparser/iniparser.h>

static int
text_quiet (const char *fmt, ...)
{
  (void) fmt;
  return 0;
}

/* Both parsers on one text; returns true when they agree. */
static bool
text_same (const char *name, const char *path, const char *text, size_t len)
{
  iniparser_set_error_callback (text_quiet);
  dictionary *a = iniparser_load (path);
  iniparser_set_error_callback (NULL);
  tt_error err;
  dictionary *b = tt_ini_text_parse (text, len, name, &err);
  bool same;
  if (!a || !b) {
    same = !a && !b;
    if (!same)
      printf ("  %s: iniparser %s, text parser %s%s\n", name,
          a ? "accepts" : "rejects", b ? "accepts" : "rejects: ",
          b ? "" : err.message);
  } else {
    same = a->n == b->n;
    for (ssize_t i = 0, j = 0; same && i < a->size; i++) {
      if (!a->key[i])
        continue;
      while (j < b->size && !b->key[j])
        j++;
      same = j < b->size && !strcmp (a->key[i], b->key[j]) &&
          ((!a->val[i] && !b->val[j]) || (a->val[i] && b->val[j] &&
              !strcmp (a->val[i], b->val[j])));
      if (!same)
        printf ("  %s: entry '%s' = '%s' vs '%s' = '%s'\n", name,
            a->key[i], a->val[i] ? a->val[i] : "(null)",
            j < b->size ? b->key[j] : "(none)", j < b->size
            && b->val[j] ? b->val[j] : "(null)");
      j++;
    }
  }
  if (a)
    iniparser_freedict (a);
  if (b)
    iniparser_freedict (b);
  return same;
}

static const char *snippets[] = {
  "[Model]\nType = NeuralNetwork\n",
  "  [ Spaced Section ]  \n  key   =   value with spaces   \n",
  "[s]\nk = v ; comment\nk2 = v2 # comment\n",
  "[s]\nq = \"quoted ; not a comment\"\nq2 = 'single # kept'\n",
  "[s]\nempty =\nempty2 = \"\"\nempty3 = ''\n",
  "# comment\n; comment\n\n[s]\nk=v\n",
  "[s]\r\nk = v\r\nk2 = w\r\n",
  "[s]\nlong = first \\\n  second\n",
  "key = before any section\n[s]\nk = v\n",
  "[s]\nno equals sign\n",
  "[broken\nk = v\n",
  "[s]\nUPPER = CaseKept\nMiXeD_Key = 1,2,3\n",
  "[a]\nk = 1\n[b]\nk = 2\n[a]\nk = 3\n",
  "[s]\nk = v = w\n",
  "[]\nk = v\n",
  "[s]\n = value without key\n",
  "",
  "\n\n\n",
  "[s]\nk = \"unterminated\n",
  "[s]\nk = \"\" ; empty, then a comment\nk2 = \"a\" trailing\n",
  /* a "[]" line cuts the section to its own length less one, leaving a
   * trailing blank; the next "[]" line first trims that blank (found by
   * fuzzing against iniparser) */
  "[outp= x]\nk = 1\n[]xyzw]\nk = 2\n[]abcdefgh]\nk = 3\n",
};

static const char *text_root = ".";

/* A model of tests/models read from its file and from its text gives the
 * same dictionary, the same compiled model, and an optimized INI that
 * round-trips from text too. */
static void
text_model (const char *model)
{
  char path[2048];
  size_t len;
  snprintf (path, sizeof path, "%s/tests/models/%s.ini", text_root, model);
  char *text = tt_test_read_file (path, &len);
  CHECK (text != NULL, "%s", path);
  if (!text)
    return;
  CHECK (text_same (model, path, text, len), "%s differs", model);
  /* and the compiled models agree */
  tt_error err;
  tt_model *a = tt_model_load_ini (path, &err);
  tt_model *b = tt_model_load_ini_text (text, len, path, &err);
  CHECK (a && b && tt_model_compile (a, &err) == TT_OK &&
      tt_model_compile (b, &err) == TT_OK, "%s: %s", model, err.message);
  if (a && b && a->compiled && b->compiled) {
    CHECK (a->fingerprint == b->fingerprint && a->pool_bytes ==
        b->pool_bytes, "%s: compiled models differ", model);
    /* the optimized INI of a text model round-trips too */
    const char *opt = tt_test_write_text ("text.opt.ini", "");
    char opt_path[512];
    snprintf (opt_path, sizeof opt_path, "%s", opt);
    CHECK (tt_model_save_plan_ini (b, opt_path, &err) == TT_OK, "%s",
        err.message);
    size_t olen = 0;
    char *otext = tt_test_read_file (opt_path, &olen);
    CHECK (otext && text_same ("optimized", opt_path, otext, olen),
        "%s: optimized INI differs", model);
    tt_model *c = tt_model_load_ini_text (otext, olen, "opt", &err);
    CHECK (c && tt_model_compile (c, &err) == TT_OK &&
        c->plan.from_stored_plan, "%s: stored plan from text: %s", model,
        err.message);
    tt_model_free (c);
    free (otext);
  }
  tt_model_free (a);
  tt_model_free (b);
  free (text);
}

static void
test_fmnist_mlp (void)
{
  text_model ("fmnist_mlp");
}

static void
test_fmnist_cnn (void)
{
  text_model ("fmnist_cnn");
}

static void
test_branchy_bn (void)
{
  text_model ("branchy_bn");
}

static void
test_resnet_bn (void)
{
  text_model ("resnet_bn");
}

static void
test_inception (void)
{
  text_model ("inception");
}

static void
test_transfer_frozen (void)
{
  text_model ("transfer_frozen");
}

static void
test_sensor_conv1d (void)
{
  text_model ("sensor_conv1d");
}

static void
test_sensor_lstm (void)
{
  text_model ("sensor_lstm");
}

static void
test_sensor_gru (void)
{
  text_model ("sensor_gru");
}

static void
test_snippets (void)
{
  for (size_t i = 0; i < sizeof snippets / sizeof snippets[0]; i++) {
    char name[32];
    snprintf (name, sizeof name, "snippet%zu", i);
    const char *path = tt_test_write_text ("snippet.ini", snippets[i]);
    CHECK (text_same (name, path, snippets[i], strlen (snippets[i])),
        "snippet %zu differs: %s", i, snippets[i]);
  }
}

/* lines iniparser refuses as too long */
static void
test_long_line (void)
{
  char longline[1200];
  memset (longline, 'x', sizeof longline);
  memcpy (longline, "[s]\nk = ", 8);
  longline[sizeof longline - 1] = '\0';
  tt_error err;
  void *d = tt_ini_text_parse (longline, strlen (longline), "long", &err);
  CHECK (d == NULL && strstr (err.message, "longer than"), "long line: %s",
      d ? "accepted" : err.message);
  if (d)
    iniparser_freedict (d);
}

int
main (int argc, char **argv)
{
  text_root = argc > 1 ? argv[1] : ".";
  TT_TEST_RUN (test_fmnist_mlp);
  TT_TEST_RUN (test_fmnist_cnn);
  TT_TEST_RUN (test_branchy_bn);
  TT_TEST_RUN (test_resnet_bn);
  TT_TEST_RUN (test_inception);
  TT_TEST_RUN (test_transfer_frozen);
  TT_TEST_RUN (test_sensor_conv1d);
  TT_TEST_RUN (test_sensor_lstm);
  TT_TEST_RUN (test_sensor_gru);
  TT_TEST_RUN (test_snippets);
  TT_TEST_RUN (test_long_line);
  return tt_test_summary ();
}
