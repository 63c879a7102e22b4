/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading one INI section's values, for every part that has keys of its
 * own (the model parser, each layer, the optimizer): numbers, lists,
 * enums, dimensions and booleans with their ranges checked, unknown keys
 * named with the closest known one, and every error naming the file,
 * section and key. A module of its own so that layers and the optimizer
 * depend on it, not on the model parser that calls them.
 */
#include "tt_internal.h"

#include <ctype.h>
#include <errno.h>
#include <iniparser/iniparser.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- value readers --------------------------------------------------- */

static const char *
section_lookup (const tt_section * s, const char *key)
{
  char full[2 * TT_NAME_MAX + 2];
  snprintf (full, sizeof full, "%s:%s", s->name, key);
  return iniparser_getstring ((dictionary *) s->dict, full, NULL);
}

bool
tt_section_has (const tt_section * s, const char *key)
{
  return section_lookup (s, key) != NULL;
}

const char *
tt_section_string (const tt_section * s, const char *key)
{
  return section_lookup (s, key);
}

tt_status
tt_section_error (const tt_section * s, const char *key, tt_error * err,
    tt_status status, const char *fmt, ...)
{
  char what[768];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (what, sizeof what, fmt, ap);
  va_end (ap);
  if (key)
    return tt_fail (err, status, "%s: [%s] %s: %s", s->file, s->name, key,
        what);
  return tt_fail (err, status, "%s: [%s]: %s", s->file, s->name, what);
}

/* Parses one unsigned integer from [p, end), trimmed; no sign, no junk.
 * A value too large for 64 bits saturates to UINT64_MAX, so the callers'
 * range checks report it as out of range rather than as not a number. */
bool
tt_ini_parse_uint (const char *p, const char *end, uint64_t * out)
{
  while (p < end && isspace ((unsigned char) *p))
    p++;
  while (end > p && isspace ((unsigned char) end[-1]))
    end--;
  if (p == end)
    return false;
  uint64_t v = 0;
  for (; p < end; p++) {
    if (!isdigit ((unsigned char) *p))
      return false;
    if (v > (UINT64_MAX - 9) / 10)
      v = UINT64_MAX;
    else
      v = v * 10 + (uint64_t) (*p - '0');
  }
  *out = v;
  return true;
}

/* The trimmed text of one item of a list, for messages. */
static int
ini_item_len (const char **p, const char *end)
{
  while (*p < end && isspace ((unsigned char) **p))
    (*p)++;
  while (end > *p && isspace ((unsigned char) end[-1]))
    end--;
  return (int) (end - *p);
}

tt_status
tt_section_uint (const tt_section * s, const char *key, uint32_t min,
    uint32_t max, uint32_t * out, tt_error * err)
{
  const char *v = section_lookup (s, key);
  uint64_t x;
  if (!v)
    return TT_OK;
  if (!tt_ini_parse_uint (v, v + strlen (v), &x))
    return tt_section_error (s, key, err, TT_ERR_PARSE,
        "'%s' is not a non-negative integer", v);
  if (x < min || x > max)
    return tt_section_error (s, key, err, TT_ERR_INVALID,
        "%s is out of range [%u, %u]", v, min, max);
  *out = (uint32_t) x;
  return TT_OK;
}

tt_status
tt_section_float (const tt_section * s, const char *key, float *out,
    tt_error * err)
{
  const char *v = section_lookup (s, key);
  char *end;
  if (!v)
    return TT_OK;
  errno = 0;
  double x = strtod (v, &end);
  while (*end && isspace ((unsigned char) *end))
    end++;
  if (end == v || *end)
    return tt_section_error (s, key, err, TT_ERR_PARSE,
        "'%s' is not a number", v);
  if (!isfinite (x) || fabs (x) > 3.0e38)
    return tt_section_error (s, key, err, TT_ERR_INVALID,
        "'%s' is not a finite float32", v);
  *out = (float) x;
  return TT_OK;
}

tt_status
tt_section_bool (const tt_section * s, const char *key, bool *out,
    tt_error * err)
{
  const char *v = section_lookup (s, key);
  if (!v)
    return TT_OK;
  if (!strcasecmp (v, "true"))
    *out = true;
  else if (!strcasecmp (v, "false"))
    *out = false;
  else
    return tt_section_error (s, key, err, TT_ERR_PARSE,
        "'%s' is not a boolean (true or false)", v);
  return TT_OK;
}

tt_status
tt_section_uint_list (const tt_section * s, const char *key, uint32_t min,
    uint32_t max, uint32_t * out, uint32_t max_items, uint32_t * n_out,
    tt_error * err)
{
  const char *v = section_lookup (s, key);
  uint32_t n = 0;
  if (!v)
    return TT_OK;
  const char *p = v;
  for (;;) {
    const char *comma = strchr (p, ',');
    const char *end = comma ? comma : p + strlen (p);
    uint64_t x;
    if (n == max_items)
      return tt_section_error (s, key, err, TT_ERR_INVALID,
          "'%s' has more than %u values", v, max_items);
    if (!tt_ini_parse_uint (p, end, &x))
      return tt_section_error (s, key, err, TT_ERR_PARSE,
          "'%s' is not a comma-separated list of non-negative integers", v);
    if (x < min || x > max) {
      int len = ini_item_len (&p, end);
      return tt_section_error (s, key, err, TT_ERR_INVALID,
          "%.*s in '%s' is out of range [%u, %u]", len, p, v, min, max);
    }
    out[n++] = (uint32_t) x;
    if (!comma)
      break;
    p = comma + 1;
  }
  *n_out = n;
  return TT_OK;
}

tt_status
tt_section_enum (const tt_section * s, const char *key,
    const char *const *names, int *out, tt_error * err)
{
  const char *v = section_lookup (s, key);
  char allowed[512] = "";
  if (!v)
    return TT_OK;
  for (int i = 0; names[i]; i++) {
    if (!strcasecmp (v, names[i])) {
      *out = i;
      return TT_OK;
    }
    size_t len = strlen (allowed);
    snprintf (allowed + len, sizeof allowed - len, "%s%s", i ? ", " : "",
        names[i]);
  }
  return tt_section_error (s, key, err, TT_ERR_INVALID,
      "unknown value '%s' (expected one of: %s)", v, allowed);
}

/* "c:h:w", "h:w", "w" or "b:c:h:w" (b must be 1: batch_size sets it). */
tt_status
tt_section_dims (const tt_section * s, const char *key, tt_dims * out,
    tt_error * err)
{
  const char *v = section_lookup (s, key);
  uint32_t d[4], n = 0;
  if (!v)
    return TT_OK;
  const char *p = v;
  for (;;) {
    const char *colon = strchr (p, ':');
    const char *end = colon ? colon : p + strlen (p);
    uint64_t x;
    if (n == 4)
      return tt_section_error (s, key, err, TT_ERR_INVALID,
          "'%s' has more than 4 dimensions", v);
    if (!tt_ini_parse_uint (p, end, &x))
      return tt_section_error (s, key, err, TT_ERR_PARSE,
          "'%s' is not a shape like 1:28:28", v);
    if (x == 0 || x > (1u << 24)) {
      int len = ini_item_len (&p, end);
      return tt_section_error (s, key, err, TT_ERR_INVALID,
          "dimension %.*s in '%s' is out of range [1, %u]", len, p, v,
          1u << 24);
    }
    d[n++] = (uint32_t) x;
    if (!colon)
      break;
    p = colon + 1;
  }
  if (n == 4 && d[0] != 1)
    return tt_section_error (s, key, err, TT_ERR_INVALID,
        "'%s' gives a batch of %u; set batch_size in [Model] instead", v, d[0]);
  tt_dims r = { 1, 1, 1 };
  r.w = d[n - 1];
  if (n >= 2)
    r.h = d[n - 2];
  if (n >= 3)
    r.c = d[n - 3];
  if ((uint64_t) r.c * r.h * r.w > (1u << 28))
    return tt_section_error (s, key, err, TT_ERR_INVALID,
        "'%s' has more than %u elements", v, 1u << 28);
  *out = r;
  return TT_OK;
}

/* ---- unknown keys ---------------------------------------------------- */

static bool
ini_key_in (const char *key, const char *const *list)
{
  for (; list && *list; list++)
    if (!strcmp (key, *list))
      return true;
  return false;
}

/* Edits (insert, delete, substitute, swap two neighbours) from a to b,
 * stopping early above limit; for "did you mean" hints. */
static int
ini_edit_distance (const char *a, const char *b, int limit)
{
  const int la = (int) strlen (a), lb = (int) strlen (b);
  if (la > 64 || lb > 64 || abs (la - lb) > limit)
    return limit + 1;
  int d[65][65];
  for (int i = 0; i <= la; i++)
    d[i][0] = i;
  for (int j = 0; j <= lb; j++)
    d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best)
        best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best)
        best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

/* The known key closest to key, when close enough to be a typo of it
 * (one edit for short keys, two from six characters on), else NULL. */
static const char *
ini_closest_key (const char *key, const char *const *lists[], int n_lists)
{
  const int limit = strlen (key) >= 6 ? 2 : 1;
  const char *best = NULL;
  int best_d = limit + 1;
  for (int l = 0; l < n_lists; l++)
    for (const char *const *k = lists[l]; k && *k; k++) {
      int d = ini_edit_distance (key, *k, limit);
      if (d < best_d) {
        best_d = d;
        best = *k;
      }
    }
  return best;
}

/* Every key must appear in one of the lists; names the first that does
 * not, and the known key it is likely a misspelling of. */
tt_status
tt_section_check_key_lists (const tt_section * s, const char *const *a,
    const char *const *b, const char *const *c, tt_error * err)
{
  dictionary *d = s->dict;
  int n = iniparser_getsecnkeys (d, s->name);
  if (n <= 0)
    return TT_OK;
  const char **keys = calloc ((size_t) n, sizeof *keys);
  if (!keys)
    return tt_fail (err, TT_ERR_NOMEM, "out of memory");
  iniparser_getseckeys (d, s->name, keys);
  size_t prefix = strlen (s->name) + 1;
  tt_status st = TT_OK;
  for (int i = 0; i < n && st == TT_OK; i++) {
    const char *key = keys[i] + prefix;
    if (!ini_key_in (key, a) && !ini_key_in (key, b) && !ini_key_in (key, c)) {
      const char *const *lists[] = { a, b, c };
      const char *near = ini_closest_key (key, lists, 3);
      if (near)
        st = tt_section_error (s, key, err, TT_ERR_INVALID,
            "unknown key for this section; did you mean '%s'?", near);
      else
        st = tt_section_error (s, key, err, TT_ERR_INVALID,
            "unknown key for this section");
    }
  }
  free (keys);
  return st;
}

tt_status
tt_section_check_keys (const tt_section * s, const char *const *allowed,
    tt_error * err)
{
  return tt_section_check_key_lists (s, allowed, NULL, NULL, err);
}
