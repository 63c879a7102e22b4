/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What iniparser lets through and a model description must not have,
 * checked on the raw text before it is parsed (ini_text.c keeps
 * iniparser's own rules, which merge and skip silently):
 *   - a key set twice in a section, or a section opened twice: iniparser
 *     keeps the last value, so `unit = 3` then `unit = 7` trains a model
 *     nobody wrote down; refused with both line numbers;
 *   - "[]": iniparser keeps the previous section under a cut-down name;
 *   - binary data (NUL bytes, control characters): iniparser says "input
 *     line too long" about a file that is not text at all;
 *   - a damaged bundle: when the magic does not match, the file would be
 *     read as INI text and fail on some line; said as what it is.
 * A UTF-8 byte-order mark, which some editors write, is accepted: the
 * caller skips it.
 */
#include "tt_internal.h"

#include <ctype.h>
#include <iniparser/dictionary.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STRICT_LINE 1024        /* iniparser's ASCIILINESZ */

static const unsigned char strict_bundle_magic[8] = {
  0x89, 'T', 'T', 'B', '\r', '\n', 0x1a, '\n'
};

/* Most of a bundle's magic in place: a bundle whose first bytes were
 * damaged (a text file cannot start with 0x89 and "TTB" by chance). */
static bool
strict_near_bundle (const unsigned char *p, size_t len)
{
  if (len < sizeof strict_bundle_magic)
    return false;
  int same = 0;
  for (size_t i = 0; i < sizeof strict_bundle_magic; i++)
    same += p[i] == strict_bundle_magic[i];
  return same >= 5 || !memcmp (p + 1, "TTB", 3);
}

/* A byte no text file holds: NUL, or a control character other than
 * tab, line feed, vertical tab, form feed and carriage return. Bytes of
 * 0x80 and above pass: UTF-8 text in comments and values. */
static bool
strict_binary_byte (unsigned char c)
{
  return (c < 0x20 && !(c >= '\t' && c <= '\r')) || c == 0x7f;
}

static int
strict_line_of (const char *text, size_t at)
{
  int line = 1;
  for (size_t i = 0; i < at; i++)
    line += text[i] == '\n';
  return line;
}

/* Records name (a section, or "section:key") first seen at line; when it
 * was seen before, *first gets that line and false is returned. */
static bool
strict_first_time (dictionary * seen, const char *name, int line, int *first)
{
  const char *at = dictionary_get (seen, name, NULL);
  if (at) {
    *first = atoi (at);
    return false;
  }
  char buf[16];
  snprintf (buf, sizeof buf, "%d", line);
  dictionary_set (seen, name, buf);
  return true;
}

/* One logical line (first_line: where it starts); *stop set at a line
 * the parser will refuse. */
static tt_status
strict_line (dictionary * seen, char *line, int first_line, char *section,
    size_t sec_cap, const char *name, bool *stop, tt_error * err)
{
  char *s = tt_ini_text_strip (line);
  size_t len = strlen (s);
  int first;
  if (len == 0 || s[0] == '#' || s[0] == ';')
    return TT_OK;
  if (s[0] == '[' && s[len - 1] == ']') {
    /* the name as ini_text.c reads it: up to the first ']', trimmed */
    s[len - 1] = '\0';
    char *sec = s + 1;
    char *close = strchr (sec, ']');
    if (close)
      *close = '\0';
    sec = tt_ini_text_strip (sec);
    if (!*sec)
      return tt_fail (err, TT_ERR_PARSE, "%s: line %d: empty section name "
          "'[]'", name, first_line);
    tt_ini_text_lower (sec);
    snprintf (section, sec_cap, "%s", sec);
    if (!strict_first_time (seen, section, first_line, &first))
      return tt_fail (err, TT_ERR_PARSE, "%s: [%s] appears twice, at line %d "
          "and line %d: a section is written once (its keys are not "
          "merged)", name, section, first, first_line);
    return TT_OK;
  }
  char *eq = strchr (s, '=');
  char *key = NULL;
  if (eq) {
    *eq = '\0';
    key = tt_ini_text_strip (s);
  }
  if (!key || !*key) {
    /* a syntax error, which the parser names: what follows it is not
     * what its writer meant ("[in" does not open a section, so the keys
     * after it would look like repeats of the section above) */
    *stop = true;
    return TT_OK;
  }
  tt_ini_text_lower (key);
  char full[2 * STRICT_LINE + 2];
  snprintf (full, sizeof full, "%s:%s", section, key);
  if (!strict_first_time (seen, full, first_line, &first)) {
    if (*section)
      return tt_fail (err, TT_ERR_PARSE, "%s: [%s] %s: set twice, at line %d "
          "and line %d (one value per key)", name, section, key, first,
          first_line);
    return tt_fail (err, TT_ERR_PARSE, "%s: %s: set twice, at line %d and "
        "line %d (one value per key)", name, key, first, first_line);
  }
  return TT_OK;
}

tt_status
tt_ini_strict_check (const char *text, size_t len, const char *name,
    size_t *skip, tt_error * err)
{
  const unsigned char *u = (const unsigned char *) text;
  *skip = 0;
  if (strict_near_bundle (u, len))
    return tt_fail (err, TT_ERR_PARSE, "%s: starts like a tensor-trainer "
        "bundle but its header is damaged (first bytes %02x %02x %02x %02x "
        "%02x %02x %02x %02x; a bundle's are 89 54 54 42 0d 0a 1a 0a), and "
        "it is not INI text either", name, u[0], u[1], u[2], u[3], u[4],
        u[5], u[6], u[7]);
  if (len >= 3 && u[0] == 0xef && u[1] == 0xbb && u[2] == 0xbf)
    *skip = 3;
  for (size_t i = *skip; i < len; i++)
    if (strict_binary_byte (u[i]))
      return tt_fail (err, TT_ERR_PARSE, "%s: binary data, not INI text: "
          "byte 0x%02x at offset %zu (line %d)", name, u[i], i,
          strict_line_of (text, i));

  dictionary *seen = dictionary_new (0);
  if (!seen)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", name);
  char section[STRICT_LINE] = "";
  char line[STRICT_LINE + 1];
  size_t line_len = 0;
  int line_no = 0, first_line = 1;
  tt_status st = TT_OK;
  bool stop = false;
  for (size_t at = *skip; at < len && !st && !stop;) {
    const char *nl = memchr (text + at, '\n', len - at);
    size_t n = nl ? (size_t) (nl - (text + at)) : len - at;
    line_no++;
    if (line_len == 0)
      first_line = line_no;
    /* the parser reports lines too long for it */
    if (line_len + n >= STRICT_LINE)
      break;
    memcpy (line + line_len, text + at, n);
    line_len += n;
    line[line_len] = '\0';
    at += n + (nl ? 1 : 0);
    while (line_len > 0 && isspace ((unsigned char) line[line_len - 1]))
      line[--line_len] = '\0';
    if (line_len > 0 && line[line_len - 1] == '\\') {
      line[--line_len] = '\0';
      continue;
    }
    st = strict_line (seen, line, first_line, section, sizeof section, name,
        &stop, err);
    line_len = 0;
  }
  dictionary_del (seen);
  return st;
}
