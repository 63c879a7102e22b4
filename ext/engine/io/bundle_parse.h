/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A parsed bundle (bundle_parse.c): its source, header, section table and
 * index, and the reads the other bundle files build on.
 */
#ifndef TT_BUNDLE_PARSE_H
#define TT_BUNDLE_PARSE_H

#include "bundle_format.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct
{
  uint32_t type, flags;
  uint64_t offset, length, raw_length;
  uint32_t crc;
  uint32_t crc_computed;
  bool crc_known, crc_ok;
} b_section;

typedef struct
{
  uint64_t offset, bytes;
  uint32_t kind;
  const char *name;             /* in the index data, not NUL-terminated */
  uint32_t name_len;
} b_tensor;

typedef struct
{
  const char *name;             /* for messages */
  /* the source: whole bundle in memory (a blob or a mapping), else fd */
  const unsigned char *mem;
  int fd;
  uint64_t size;
  void *map;                    /* our mapping, unmapped by tt_bundle_close */
  size_t map_len;

  uint32_t version, header_len, header_crc;
  uint64_t file_size;
  uint32_t alignment, n_sections, flags, batch_size, wflags;
  uint32_t epoch, iteration, n_tensors;
  b_section sec[B_SECTIONS];
  b_section *ini, *index, *weights;

  char *ini_text;
  unsigned char *index_data;
  b_tensor *tensors;
  bool index_ok;
} bundle;

tt_status tt_bundle_open_file (bundle * b, const char *path, bool map,
    tt_error * err);
void tt_bundle_open_memory (bundle * b, const void *data, size_t len,
    const char *name);
void tt_bundle_close (bundle * b);
/* len bytes at off of the source; off + len must lie in it. */
tt_status tt_bundle_read (bundle * b, uint64_t off, void *dst, uint64_t len,
    tt_error * err);
/* The preamble, the header and the section table. */
tt_status tt_bundle_parse_header (bundle * b, tt_error * err);
/* The header, then the ini and index sections; strict: a checksum mismatch
 * is an error (else it is recorded for inspection). */
tt_status tt_bundle_read_meta (bundle * b, bool strict, tt_error * err);

#endif
