/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the in-memory INI parser (tt_ini_text_parse) alone, and
 * against iniparser_load() reading the same bytes from a memfd. Both must
 * accept or both reject, and when both accept, give the same dictionary
 * (same entries in the same order, same values), as
 * tests/unit/test_ini_text.c checks on its fixed corpus.
 *
 * Not compared (the text parser is deliberately stricter there, and the
 * engine never meets such files from tensor-trainer or nntrainer):
 *   - text holding a NUL byte: the text parser refuses it, iniparser's
 *     fgets() reading makes the rest of such a line vanish;
 *   - a last line of one character and no newline: iniparser skips it
 *     (an off-by-one: it takes strlen - 1 for the length of the line
 *     without its newline), the text parser reads it, so "x" there is a
 *     syntax error; the text without that character must then parse as
 *     iniparser parsed the whole.
 */
#include "fuzz_common.h"

#include <iniparser/iniparser.h>

static fuzz_file file;

static int
fuzz_quiet (const char *fmt, ...)
{
  (void) fmt;
  return 0;
}

static void
fuzz_dump (const char *what, const dictionary * d)
{
  fprintf (stderr, "%s:", what);
  if (!d) {
    fprintf (stderr, " rejected\n");
    return;
  }
  fprintf (stderr, " %d entries\n", (int) d->n);
  for (ssize_t i = 0; i < d->size; i++)
    if (d->key[i])
      fprintf (stderr, "  '%s' = %s%s%s\n", d->key[i], d->val[i] ? "'" : "",
          d->val[i] ? d->val[i] : "(section)", d->val[i] ? "'" : "");
}

static bool
fuzz_same (const dictionary * a, const dictionary * b)
{
  if (a->n != b->n)
    return false;
  ssize_t j = 0;
  for (ssize_t i = 0; i < a->size; i++) {
    if (!a->key[i])
      continue;
    while (j < b->size && !b->key[j])
      j++;
    if (j == b->size || strcmp (a->key[i], b->key[j]))
      return false;
    if (!a->val[i] != !b->val[j] || (a->val[i] && strcmp (a->val[i],
                b->val[j])))
      return false;
    j++;
  }
  return true;
}

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  fuzz_file_open (&file, "fuzz_ini_text");
  iniparser_set_error_callback (fuzz_quiet);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  tt_error err;
  dictionary *b = tt_ini_text_parse ((const char *) data, size, "fuzz.ini",
      &err);
  if (!b)
    fuzz_check_error (err.status, &err);
  if (memchr (data, '\0', size)) {
    FUZZ_CHECK (b == NULL, "text with a NUL byte accepted");
    return 0;
  }

  /* The comparison with iniparser finds its quirks (what a "[]" header
   * leaves as the section, ...), not memory errors; it runs when asked
   * (run.sh does for runs of a minute or more), not in CI's short runs,
   * where a newly found quirk would fail an unrelated change. */
  static int differential = -1;
  if (differential < 0)
    differential = getenv ("TT_FUZZ_DIFFERENTIAL") != NULL;
  if (!differential) {
    if (b)
      iniparser_freedict (b);
    return 0;
  }
  fuzz_file_set (&file, data, size);
  dictionary *a = iniparser_load (file.path);
  if (a && !b && size > 0 && data[size - 1] != '\n' && (size == 1 ||
          data[size - 2] == '\n'))
    /* iniparser skipped the one-character last line */
    b = tt_ini_text_parse ((const char *) data, size - 1, "fuzz.ini", &err);
  bool same = (!a && !b) || (a && b && fuzz_same (a, b));
  if (!same) {
    fuzz_dump ("iniparser", a);
    fuzz_dump ("text parser", b);
    if (!b)
      fprintf (stderr, "text parser: %s\n", err.message);
    FUZZ_CHECK (same, "iniparser and the text parser disagree");
  }
  if (a)
    iniparser_freedict (a);
  if (b)
    iniparser_freedict (b);
  return 0;
}
