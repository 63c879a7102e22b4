/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bundle format (docs/bundle.md), which the reader (bundle_parse.c)
 * and the writer (bundle_write.c) share: one little-endian file
 *
 *   preamble  24 bytes: magic, format version, header length, header CRC32
 *   header    file size, alignment, batch size, weight flags, counters,
 *             tensor count, then the section table (type, flags, offset,
 *             length, uncompressed length, CRC32 of each section)
 *   ini       the model's INI text (with its plan when planned)
 *   index     one entry per tensor: offset in the weight section, bytes,
 *             kind, name
 *   weights   every tensor's floats at an offset that is a multiple of the
 *             alignment (also in the file), zero padding between; raw or
 *             zlib-compressed
 *
 * Its sizes, limits and flags, the magic, and the helpers both sides use.
 */
#ifndef TT_BUNDLE_FORMAT_H
#define TT_BUNDLE_FORMAT_H

#ifndef ZLIB_CONST
#define ZLIB_CONST
#endif
#include "tt_internal.h"
#include "tt_le.h"
#include "tt_bundle.h"

#include <stdint.h>
#include <zlib.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "bundles store little-endian floats as they lie in memory"
#endif

static const unsigned char tt_bundle_magic[8] = {
  0x89, 'T', 'T', 'B', '\r', '\n', 0x1a, '\n'
};

#define B_PREAMBLE 24
#define B_HEADER_FIXED 40
#define B_SECTION_ENTRY 40
#define B_SECTIONS 3
#define B_HEADER_BYTES (B_HEADER_FIXED + B_SECTIONS * B_SECTION_ENTRY)
#define B_INDEX_ENTRY 32
#define B_MAX_INI (64u << 20)
#define B_MAX_TENSORS (1u << 20)
#define B_MAX_NAME 159
#define B_MAX_RAW (1ull << 46)
#define B_WF_MOMENTS 1u
#define B_WF_COUNTERS 2u
#define B_CHUNK (1u << 20)

/* (little-endian fields: tt_le.h) */

static inline uint64_t
tt_bundle_align_up (uint64_t x, uint64_t a)
{
  return (x + a - 1) & ~(a - 1);
}

static inline uint32_t
tt_bundle_crc (uint32_t crc, const void *data, uint64_t len)
{
  const unsigned char *p = data;
  while (len > 0) {
    size_t n = len > (1u << 30) ? (1u << 30) : (size_t) len;
    crc = (uint32_t) crc32_z (crc, p, n);
    p += n;
    len -= n;
  }
  return crc;
}

static inline const char *
tt_bundle_section_name (uint32_t type)
{
  switch (type) {
    case TT_BUNDLE_SECTION_INI:
      return "ini";
    case TT_BUNDLE_SECTION_INDEX:
      return "index";
    case TT_BUNDLE_SECTION_WEIGHTS:
      return "weights";
  }
  return "unknown";
}

#endif
