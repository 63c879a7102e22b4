/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The parts of the IDX format both readers share (tt_idx loads a file
 * whole, tt_idx_file streams it): the header, element sizes
 * (tt_idx_type_size, declared in tt_idx.h), the end of the data, byte
 * order, zlib reads and their messages. Internal to ext/data: both
 * readers must accept and refuse the same files with the same messages
 * (fuzz_idx compares them).
 */
#ifndef TT_IDX_FORMAT_H
#define TT_IDX_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

/* zlib's default 8 KiB input buffer makes decompression of the 26 MB
 * training set noticeably slower. */
#define TT_IDX_GZ_BUFFER (128u * 1024u)

/* What the header says. Invariants after tt_idx_read_header: 1 <= ndims
 * <= 4, dims[0..ndims-1] non-zero, the others 0, count == dims[0],
 * item_bytes the bytes of one sample. */
typedef struct
{
  uint8_t type;
  int ndims;
  uint32_t dims[4];
  size_t count;
  size_t item_bytes;
} tt_idx_shape;

void tt_idx_set_err (char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format (printf, 3, 4)));

/* Why gzread came up short, without zlib's path prefix. */
const char *tt_idx_gz_reason (gzFile f, const char *path);

/* Up to len bytes (gzread may return less before the end): the count, or
 * -1 on a zlib error. */
int64_t tt_idx_gz_read_full (gzFile f, uint8_t * buf, size_t len);

uint32_t tt_idx_be32 (const uint8_t * p);

/* Big-endian elements of esize bytes to host order, in place. */
void tt_idx_to_host_order (uint8_t * data, size_t n_elems, size_t esize);

/* Reads and checks the header at f's start; *total: the data's bytes
 * (at most TT_IDX_MAX_BYTES and SIZE_MAX). 0, or -1 with err set. */
int tt_idx_read_header (gzFile f, const char *path, tt_idx_shape * shape,
    uint64_t * total, char *err, size_t err_len);

/* After got of the total data bytes were read: refuses a short file,
 * trailing bytes and a gzip stream cut before its trailer, and closes f
 * (always). 0, or -1 with err set. */
int tt_idx_read_end (gzFile f, const char *path, uint64_t total,
    uint64_t got, char *err, size_t err_len);

/* Images and labels describe the same samples: labels a 1-D uint8 file,
 * equal counts. */
int tt_idx_check_pair_shapes (uint8_t label_type, int label_ndims,
    size_t n_images, size_t n_labels, char *err, size_t err_len);

#endif /* TT_IDX_FORMAT_H */
