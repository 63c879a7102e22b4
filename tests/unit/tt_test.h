/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A minimal test harness: CHECK records a result and prints failures with
 * their location; tt_test_summary prints "N passed, M failed" (the line
 * meson and CI read) and gives the exit code.
 */
#ifndef TT_TEST_H
#define TT_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tt_test_passed, tt_test_failed;

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (cond) {                                                           \
      tt_test_passed++;                                                   \
    } else {                                                              \
      tt_test_failed++;                                                   \
      printf ("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);             \
      printf (__VA_ARGS__);                                               \
      printf ("\n");                                                      \
    }                                                                     \
  } while (0)

/* TT_TEST_RUN (test_case) runs one case of a test binary, unless the
 * environment's TT_TEST_CASE names others: then only the cases whose name
 * contains it run (TT_TEST_CASE=learns build/tests/test_training); and
 * not the cases whose name contains TT_TEST_SKIP (tests/meson.build runs
 * a binary's slow learning case apart, in the suite emulation skips). */
static int tt_test_cases_run;

static inline void
tt_test_run (const char *name, void (*fn) (void))
{
  const char *only = getenv ("TT_TEST_CASE");
  const char *skip = getenv ("TT_TEST_SKIP");
  if ((only && *only && !strstr (name, only)) ||
      (skip && *skip && strstr (name, skip)))
    return;
  tt_test_cases_run++;
  fn ();
}

#define TT_TEST_RUN(fn) tt_test_run (#fn, fn)

static inline int
tt_test_summary (void)
{
  const char *only = getenv ("TT_TEST_CASE");
  if (only && *only && tt_test_cases_run == 0) {
    /* a filter that matched nothing must not pass as "0 failed" */
    printf ("no case matches TT_TEST_CASE=%s\n", only);
    tt_test_failed++;
  }
  printf ("%d passed, %d failed\n", tt_test_passed, tt_test_failed);
  return tt_test_failed ? 1 : 0;
}

/* Writes text to a fresh file under a private temporary folder and
 * returns its path (static storage, valid until the next call). */
static inline const char *
tt_test_write_file (const char *name, const void *data, size_t len)
{
  static char dir[256] = "";
  static char path[512];
  if (!dir[0]) {
    snprintf (dir, sizeof dir, "/tmp/tt-test-XXXXXX");
    if (!mkdtemp (dir)) {
      perror ("mkdtemp");
      exit (2);
    }
  }
  snprintf (path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen (path, "wb");
  if (!f) {
    perror (path);
    exit (2);
  }
  if (len && fwrite (data, 1, len, f) != len) {
    perror (path);
    exit (2);
  }
  fclose (f);
  return path;
}

/* The whole file, NUL-terminated (malloc'd; NULL if unreadable); *len gets
 * its size when len is not NULL. */
static inline char *
tt_test_read_file (const char *path, size_t *len)
{
  FILE *f = fopen (path, "rb");
  if (!f)
    return NULL;
  fseek (f, 0, SEEK_END);
  long n = ftell (f);
  fseek (f, 0, SEEK_SET);
  char *s = n >= 0 ? malloc ((size_t) n + 1) : NULL;
  size_t got = s ? fread (s, 1, (size_t) n, f) : 0;
  fclose (f);
  if (s)
    s[got] = '\0';
  if (len)
    *len = got;
  return s;
}

static inline const char *
tt_test_write_text (const char *name, const char *text)
{
  return tt_test_write_file (name, text, strlen (text));
}

#endif
