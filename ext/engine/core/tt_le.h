/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Little-endian fields of the project's binary formats (bundles, the
 * federation's update envelope), read and written byte by byte so the
 * same code is right on any host and at any alignment.
 */
#ifndef TT_LE_H
#define TT_LE_H

#include <stdint.h>

static inline uint32_t
tt_le_get32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
      (uint32_t) p[3] << 24;
}

static inline uint64_t
tt_le_get64 (const unsigned char *p)
{
  return (uint64_t) tt_le_get32 (p) | (uint64_t) tt_le_get32 (p + 4) << 32;
}

static inline void
tt_le_put32 (unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char) (v >> (8 * i));
}

static inline void
tt_le_put64 (unsigned char *p, uint64_t v)
{
  tt_le_put32 (p, (uint32_t) v);
  tt_le_put32 (p + 4, (uint32_t) (v >> 32));
}

#endif /* TT_LE_H */
