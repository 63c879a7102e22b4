/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A growing text: bytes appended, NUL-terminated, failure remembered
 * (an append after an allocation failure does nothing; check failed once
 * at the end). For INI texts the engine writes (ini_strip.c,
 * lora_file.c). Zero-initialized is empty.
 */
#ifndef TT_TEXT_BUF_H
#define TT_TEXT_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct
{
  char *buf;                    /* malloc'd; NULL while empty */
  size_t len, cap;
  bool failed;
} tt_text_buf;

void tt_text_buf_append (tt_text_buf * t, const char *s, size_t n);

#endif /* TT_TEXT_BUF_H */
