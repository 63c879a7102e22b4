/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reader for IDX files, the container of MNIST and Fashion-MNIST. Kept
 * free of GStreamer so the training engine, the tools and the unit tests
 * can all link it. Files are read through zlib, which passes plain files
 * through unchanged, because datasets ship both gzipped (Debian's
 * dataset-fashion-mnist) and already unpacked.
 *
 * IDX layout: 2 zero bytes, a type byte, a dimension-count byte, then one
 * big-endian uint32 per dimension, then the elements, big-endian, row-major.
 */
#ifndef TT_IDX_H
#define TT_IDX_H

#include <stddef.h>
#include <stdint.h>

/* Element type codes, as stored in the third header byte. */
#define TT_IDX_UINT8   0x08
#define TT_IDX_INT8    0x09
#define TT_IDX_INT16   0x0B
#define TT_IDX_INT32   0x0C
#define TT_IDX_FLOAT32 0x0D
#define TT_IDX_FLOAT64 0x0E

/* The format itself has no limit; this one keeps a corrupt or hostile
 * header from making us allocate the address space away. */
#define TT_IDX_MAX_BYTES ((uint64_t) 4 << 30)

/*
 * A loaded file. Multi-byte elements are already in host byte order, so
 * data can be cast to int16_t / int32_t / float / double directly (malloc
 * alignment suffices for all of them).
 * Invariants after a successful load: 1 <= ndims <= 4, dims[0..ndims-1] are
 * all non-zero, dims[ndims..3] are 0, count == dims[0], and
 * count * item_bytes bytes are at data. A 1-D file (labels) has
 * item_bytes == element size.
 */
typedef struct
{
  uint8_t type;
  int ndims;
  uint32_t dims[4];
  size_t count;
  size_t item_bytes;
  uint8_t *data;
} tt_idx;

/* Bytes per element for a type code, 0 for an unknown code
 * (tt_idx_format.c). */
size_t tt_idx_type_size (uint8_t type);

/*
 * Loads path (gzipped or plain) into *out, which need not be initialised
 * beforehand: it is overwritten, so load into a cleared or fresh struct or
 * the previous data leaks. Returns 0, or -1 with *out zeroed and err
 * holding a message that starts with the path. err may be NULL.
 */
int tt_idx_load (const char *path, tt_idx * out, char *err, size_t err_len);

/* Frees the data and zeroes the struct; safe on a zeroed struct and
 * on a struct already cleared. */
void tt_idx_clear (tt_idx * idx);

/*
 * Checks that images and labels describe the same samples: equal counts,
 * and labels a 1-D uint8 file. The structs carry no file names, so the
 * message names the two roles and their counts; callers that know the
 * paths should prefix them.
 */
int tt_idx_check_pair (const tt_idx * images, const tt_idx * labels,
    char *err, size_t err_len);

#endif /* TT_IDX_H */
