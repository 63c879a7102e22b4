/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * From an optimized INI (or a bundle) back to the plain INI nntrainer
 * reads (issue 16 item 8). What tt_plan_ini_text adds to the model text,
 * and what is taken out here:
 *
 * - the marker line "# ---- memory plan: ..." and the sections [Plan],
 *   [Plan.Layers] and [Plan.Tensors] (nntrainer would read them as layers),
 *   wherever they are;
 * - the [Model] batch_size line a plan for another batch wrote,
 *   "batch_size = N   # the batch of the plan below (was: LINE)": LINE
 *   comes back; without "(was: ...)" the line was added and goes.
 *
 * Everything else (comments included) is kept as written; trailing blank
 * lines are cut to one line end.
 */
#include "tt_internal.h"
#include "tt_bundle.h"
#include "atomic_file.h"
#include "text_buf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define STRIP_MARKER "# ---- memory plan"
#define STRIP_BATCH_NOTE "# the batch of the plan below"

/* [NAME] on the line (blanks around allowed): its name, lower-cased, in
 * name (size cap); false for any other line. */
static bool
strip_section (const char *line, size_t n, char *name, size_t cap)
{
  const char *p = line, *end = line + n;
  while (p < end && isspace ((unsigned char) *p))
    p++;
  while (end > p && isspace ((unsigned char) end[-1]))
    end--;
  if (end - p < 2 || *p != '[' || end[-1] != ']')
    return false;
  p++;
  end--;
  while (p < end && isspace ((unsigned char) *p))
    p++;
  while (end > p && isspace ((unsigned char) end[-1]))
    end--;
  size_t k = 0;
  for (; p < end && k + 1 < cap; p++)
    name[k++] = (char) tolower ((unsigned char) *p);
  name[k] = '\0';
  return p == end;
}

/* Whether the line is "batch_size = ..." (case and blanks aside). */
static bool
strip_is_batch_line (const char *line, size_t n)
{
  const char *p = line, *end = line + n;
  while (p < end && isspace ((unsigned char) *p))
    p++;
  const size_t k = strlen ("batch_size");
  if ((size_t) (end - p) < k || strncasecmp (p, "batch_size", k))
    return false;
  p += k;
  while (p < end && isspace ((unsigned char) *p))
    p++;
  return p < end && *p == '=';
}

static const char *
strip_find (const char *s, size_t n, const char *what)
{
  const size_t k = strlen (what);
  for (size_t i = 0; i + k <= n; i++)
    if (!memcmp (s + i, what, k))
      return s + i;
  return NULL;
}

tt_status
tt_ini_strip_plan (const char *text, size_t len, char **out, size_t *out_len,
    tt_error * err)
{
  tt_text_buf o = { NULL, 0, 0, false };
  bool in_plan = false, in_model = false;
  char name[64];
  size_t at = 0;
  *out = NULL;
  if (out_len)
    *out_len = 0;
  while (at < len) {
    const char *line = text + at;
    const char *nl = memchr (line, '\n', len - at);
    size_t n = nl ? (size_t) (nl - line) : len - at;
    at += n + (nl ? 1 : 0);
    const char *p = line;
    while (p < line + n && isspace ((unsigned char) *p))
      p++;
    if ((size_t) (line + n - p) >= strlen (STRIP_MARKER) &&
        !strncmp (p, STRIP_MARKER, strlen (STRIP_MARKER)))
      continue;
    if (strip_section (line, n, name, sizeof name)) {
      in_plan = tt_plan_section_name (name);
      in_model = !strcmp (name, "model");
      if (in_plan)
        continue;
    } else if (in_plan) {
      continue;
    } else if (in_model && strip_is_batch_line (line, n) &&
        strip_find (line, n, STRIP_BATCH_NOTE)) {
      const char *was = strip_find (line, n, "(was: ");
      const char *close = NULL;
      for (const char *q = line + n; was && q > was; q--)
        if (q[-1] == ')') {
          close = q - 1;
          break;
        }
      if (!was || !close)
        continue;               /* a line the plan added */
      was += strlen ("(was: ");
      /* the original line, as it was indented */
      tt_text_buf_append (&o, line, (size_t) (p - line));
      tt_text_buf_append (&o, was, (size_t) (close - was));
      tt_text_buf_append (&o, "\n", 1);
      continue;
    }
    tt_text_buf_append (&o, line, n);
    tt_text_buf_append (&o, "\n", 1);
  }
  /* one line end at the end, whatever blank lines the plan left */
  while (o.len > 0 && (o.buf[o.len - 1] == '\n' || o.buf[o.len - 1] == ' '
          || o.buf[o.len - 1] == '\t' || o.buf[o.len - 1] == '\r'))
    o.len--;
  tt_text_buf_append (&o, "\n", 1);
  if (o.failed) {
    free (o.buf);
    return tt_fail (err, TT_ERR_NOMEM, "out of memory");
  }
  *out = o.buf;
  if (out_len)
    *out_len = o.len;
  return TT_OK;
}

/* Whether a and b name the same existing file. */
static bool
strip_same_file (const char *a, const char *b)
{
  struct stat sa, sb;
  if (!strcmp (a, b))
    return true;
  return stat (a, &sa) == 0 && stat (b, &sb) == 0 &&
      sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static char *
strip_read_file (const char *path, size_t *len, tt_error * err)
{
  FILE *f = fopen (path, "rb");
  if (!f) {
    tt_fail (err, TT_ERR_IO, "%s: cannot open: %s", path, strerror (errno));
    return NULL;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc (cap);
  while (buf) {
    if (n == cap) {
      char *b = cap < ((size_t) 1 << 30) ? realloc (buf, cap * 2) : NULL;
      if (!b) {
        free (buf);
        buf = NULL;
        break;
      }
      buf = b;
      cap *= 2;
    }
    size_t got = fread (buf + n, 1, cap - n, f);
    n += got;
    if (got == 0)
      break;
  }
  const bool bad = ferror (f);
  fclose (f);
  if (!buf) {
    tt_fail (err, TT_ERR_NOMEM, "%s: too large or out of memory", path);
    return NULL;
  }
  if (bad) {
    free (buf);
    tt_fail (err, TT_ERR_IO, "%s: read error", path);
    return NULL;
  }
  *len = n;
  return buf;
}

tt_status
tt_model_strip (const char *path, const char *ini_path, const char *bin_path,
    tt_error * err)
{
  if (!path || !ini_path)
    return tt_fail (err, TT_ERR_INVALID, "strip needs a model and an INI "
        "to write");
  if (strip_same_file (path, ini_path))
    return tt_fail (err, TT_ERR_INVALID, "%s: strip does not write over "
        "its input", ini_path);
  if (bin_path && strip_same_file (path, bin_path))
    return tt_fail (err, TT_ERR_INVALID, "%s: strip does not write over "
        "its input", bin_path);
  if (bin_path && strip_same_file (ini_path, bin_path))
    return tt_fail (err, TT_ERR_INVALID, "%s: the INI and the BIN need two "
        "files", bin_path);

  char *text = NULL;
  size_t len = 0;
  tt_model *m = NULL;
  tt_status st = TT_OK;
  if (tt_bundle_is_bundle (path)) {
    /* the bundle's INI text, and its weights when asked for: opened as a
     * model (every checksum checked), planned afresh if its plan is stale */
    tt_bundle_load_options opt = { 0 };
    opt.plan_mode = TT_PLAN_REPLAN;
    m = tt_bundle_load (path, &opt, err);
    if (!m)
      return err ? err->status : TT_ERR_INVALID;
    text = malloc (m->ini_len + 1);
    if (!text) {
      tt_model_free (m);
      return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", path);
    }
    memcpy (text, m->ini_text, m->ini_len);
    len = m->ini_len;
  } else {
    if (bin_path)
      return tt_fail (err, TT_ERR_INVALID, "%s: an INI holds no weights: "
          "a BIN comes only from a bundle", path);
    if (!(text = strip_read_file (path, &len, err)))
      return err ? err->status : TT_ERR_IO;
  }

  char *plain = NULL;
  size_t plain_len = 0;
  st = tt_ini_strip_plan (text, len, &plain, &plain_len, err);
  free (text);
  /* what is written must load as a model (no plan to lean on) */
  if (!st) {
    tt_model *check = tt_model_load_ini_text (plain, plain_len, path, err);
    if (!check)
      st = err ? err->status : TT_ERR_INVALID;
    else if (tt_model_has_stored_plan (check))
      st = tt_fail (err, TT_ERR_INVALID, "%s: a plan is left after "
          "stripping", path);
    tt_model_free (check);
  }
  if (!st && m && bin_path)
    st = tt_model_save_bin (m, bin_path, err);
  if (!st) {
    tt_atomic_file f;
    if (!(st = tt_atomic_file_open (&f, ini_path, err))) {
      st = tt_atomic_file_write (&f, plain, plain_len, err);
      if (st)
        tt_atomic_file_abort (&f);
      else
        st = tt_atomic_file_commit (&f, err);
    }
  }
  free (plain);
  tt_model_free (m);
  return st;
}
