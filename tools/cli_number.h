/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Numbers on the command lines of tensor-trainer's commands. */
#ifndef TT_CLI_NUMBER_H
#define TT_CLI_NUMBER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* A decimal integer from 0 to max, nothing else: no sign (strtoull would
 * wrap "-1"), no blanks, no trailing characters. */
static inline bool
tt_cli_uint (const char *s, uint64_t max, uint64_t * out)
{
  char *end;
  errno = 0;
  if (!s || *s == '-' || *s == '\0')
    return false;
  unsigned long long v = strtoull (s, &end, 10);
  if (errno || *end || v > max)
    return false;
  *out = v;
  return true;
}

/* A byte count: a decimal integer, optionally followed by K, M or G
 * (1024, 1024^2, 1024^3; either case), at most max. */
static inline bool
tt_cli_bytes (const char *s, uint64_t max, uint64_t * out)
{
  char *end;
  errno = 0;
  if (!s || *s < '0' || *s > '9')
    return false;
  unsigned long long v = strtoull (s, &end, 10);
  if (errno)
    return false;
  int shift = 0;
  if (*end == 'k' || *end == 'K')
    shift = 10;
  else if (*end == 'm' || *end == 'M')
    shift = 20;
  else if (*end == 'g' || *end == 'G')
    shift = 30;
  if (shift)
    end++;
  if (*end || v > (max >> shift))
    return false;
  *out = (uint64_t) v << shift;
  return true;
}

#endif /* TT_CLI_NUMBER_H */
