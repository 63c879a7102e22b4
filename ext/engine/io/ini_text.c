/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parses INI text held in memory into an iniparser dictionary, with
 * iniparser 4.1's own rules, for models that come from a bundle or a
 * linked blob where there is no file to hand to iniparser_load():
 *   - lines are trimmed; empty lines and lines starting with # or ; are
 *     comments;
 *   - "[name]" opens a section, lower-cased; "[]..." (no name) keeps
 *     the previous section, cut to the line's length less one;
 *   - key = "value" and key = 'value' keep the quoted text; otherwise the
 *     value ends at the first ; or # and is trimmed; "" and '' are empty;
 *   - keys are lower-cased and stored as "section:key";
 *   - a line ending in a backslash continues on the next;
 *   - a line of 1024 characters or more, or any other line, is an error.
 * tests/unit/test_ini_text.c checks that files parse to the same
 * dictionary both ways.
 */
#include "tt_internal.h"

#include <ctype.h>
#include <iniparser/dictionary.h>
#include <stdio.h>
#include <string.h>

#define INI_TEXT_LINE 1024      /* iniparser's ASCIILINESZ */

/* (shared with ini_strict.c, which reads lines by the same rules) */
char *
tt_ini_text_strip (char *s)
{
  while (isspace ((unsigned char) *s))
    s++;
  char *end = s + strlen (s);
  while (end > s && isspace ((unsigned char) end[-1]))
    *--end = '\0';
  return s;
}

void
tt_ini_text_lower (char *s)
{
  for (; *s; s++)
    *s = (char) tolower ((unsigned char) *s);
}

/* One logical line; returns 0, or -1 for a syntax error. */
static int
ini_text_line (dictionary * d, char *line, char *section, size_t sec_len)
{
  char *s = tt_ini_text_strip (line);
  size_t len = strlen (s);
  if (len == 0 || s[0] == '#' || s[0] == ';')
    return 0;
  if (s[0] == '[' && s[len - 1] == ']') {
    if (s[1] == ']') {
      /* iniparser's sscanf ("[%[^]]") reads no name here and leaves the
       * previous section in place, which its strstrip () trims (a
       * section an earlier "[]" cut may end in a blank) and its strlwc ()
       * then cuts to the length of this line less one: "[ab]" then "[]"
       * gives "a" */
      char *kept = tt_ini_text_strip (section);
      memmove (section, kept, strlen (kept) + 1);
      if (strlen (section) > len - 1)
        section[len - 1] = '\0';
      return dictionary_set (d, section, NULL) == 0 ? 0 : -1;
    }
    s[len - 1] = '\0';
    char *name = tt_ini_text_strip (s + 1);
    /* iniparser reads up to the first ']' */
    char *close = strchr (name, ']');
    if (close)
      *close = '\0';
    name = tt_ini_text_strip (name);
    tt_ini_text_lower (name);
    snprintf (section, sec_len, "%s", name);
    return dictionary_set (d, section, NULL) == 0 ? 0 : -1;
  }
  char *eq = strchr (s, '=');
  if (!eq)
    return -1;
  *eq = '\0';
  char *key = tt_ini_text_strip (s);
  char *value = tt_ini_text_strip (eq + 1);
  if (!*key)
    return -1;
  tt_ini_text_lower (key);
  if ((value[0] == '"' || value[0] == '\'') && value[1] && value[1] != value[0]) {
    /* quoted: up to the closing quote (or the end, as iniparser's sscanf
     * reads it), comments included */
    char *endq = strchr (value + 1, value[0]);
    if (endq)
      *endq = '\0';
    value = value + 1;
  } else {
    value[strcspn (value, ";#")] = '\0';
    value = tt_ini_text_strip (value);
    if (!strcmp (value, "\"\"") || !strcmp (value, "''"))
      value[0] = '\0';
  }
  char full[2 * INI_TEXT_LINE + 2];
  snprintf (full, sizeof full, "%s:%s", section, key);
  return dictionary_set (d, full, value) == 0 ? 0 : -1;
}

void *
tt_ini_text_parse (const char *text, size_t len, const char *name,
    tt_error * err)
{
  dictionary *d = dictionary_new (0);
  if (!d) {
    tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", name);
    return NULL;
  }
  char section[INI_TEXT_LINE] = "";
  char line[INI_TEXT_LINE + 1];
  size_t line_len = 0;
  int line_no = 0;
  size_t at = 0;
  while (at < len) {
    const char *nl = memchr (text + at, '\n', len - at);
    size_t n = nl ? (size_t) (nl - (text + at)) : len - at;
    line_no++;
    if (memchr (text + at, '\0', n)) {
      tt_fail (err, TT_ERR_PARSE, "%s: line %d holds a NUL byte", name,
          line_no);
      dictionary_del (d);
      return NULL;
    }
    if (line_len + n >= INI_TEXT_LINE) {
      tt_fail (err, TT_ERR_PARSE, "%s: line %d is longer than %d characters",
          name, line_no, INI_TEXT_LINE - 1);
      dictionary_del (d);
      return NULL;
    }
    memcpy (line + line_len, text + at, n);
    line_len += n;
    line[line_len] = '\0';
    at += n + (nl ? 1 : 0);
    /* drop a CR and trailing blanks, then see whether the line goes on */
    while (line_len > 0 && isspace ((unsigned char) line[line_len - 1]))
      line[--line_len] = '\0';
    if (line_len > 0 && line[line_len - 1] == '\\') {
      line[--line_len] = '\0';
      continue;
    }
    /* the line as written, for the message: parsing cuts it up */
    char shown[81];
    snprintf (shown, sizeof shown, "%s", tt_ini_text_strip (line));
    if (ini_text_line (d, line, section, sizeof section) != 0) {
      tt_fail (err, TT_ERR_PARSE, "%s: not a valid INI file: syntax error at "
          "line %d: %s", name, line_no, shown);
      dictionary_del (d);
      return NULL;
    }
    line_len = 0;
  }
  return d;
}
