/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A growing text (text_buf.h). */
#include "text_buf.h"

#include <stdlib.h>
#include <string.h>

void
tt_text_buf_append (tt_text_buf * t, const char *s, size_t n)
{
  if (t->failed)
    return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + n + 1)
      cap *= 2;
    char *b = realloc (t->buf, cap);
    if (!b) {
      t->failed = true;
      return;
    }
    t->buf = b;
    t->cap = cap;
  }
  memcpy (t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = '\0';
}
