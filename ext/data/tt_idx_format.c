/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tt_idx_format.h"
#include "tt_idx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* gzread takes an unsigned int length, and bounded reads keep the error
 * position reportable; 1 MiB is large enough that call overhead vanishes
 * next to inflate. */
#define READ_CHUNK ((size_t) 1 << 20)

void
tt_idx_set_err (char *err, size_t err_len, const char *fmt, ...)
{
  va_list ap;

  if (err == NULL || err_len == 0)
    return;
  va_start (ap, fmt);
  vsnprintf (err, err_len, fmt, ap);
  va_end (ap);
}

/* A zlib error (corrupt gzip data, I/O error) says more than a bare byte
 * count does. zlib prefixes its message with the path, which our own
 * message already starts with. */
const char *
tt_idx_gz_reason (gzFile f, const char *path)
{
  int errnum = Z_OK;
  const char *msg = gzerror (f, &errnum);
  size_t plen = strlen (path);

  if (errnum == Z_OK || msg == NULL || msg[0] == '\0')
    return "end of file";
  if (strncmp (msg, path, plen) == 0 && strncmp (msg + plen, ": ", 2) == 0)
    return msg + plen + 2;
  return msg;
}

int64_t
tt_idx_gz_read_full (gzFile f, uint8_t * buf, size_t len)
{
  size_t got = 0;

  while (got < len) {
    size_t want = len - got;
    int n;

    if (want > READ_CHUNK)
      want = READ_CHUNK;
    n = gzread (f, buf + got, (unsigned) want);
    if (n < 0)
      return -1;
    if (n == 0)
      break;
    got += (size_t) n;
  }
  return (int64_t) got;
}

/* declared in tt_idx.h, the readers' public header; here with the
 * header code, its first user, which the readers call, not the reverse */
size_t
tt_idx_type_size (uint8_t type)
{
  switch (type) {
    case TT_IDX_UINT8:
    case TT_IDX_INT8:
      return 1;
    case TT_IDX_INT16:
      return 2;
    case TT_IDX_INT32:
    case TT_IDX_FLOAT32:
      return 4;
    case TT_IDX_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

uint32_t
tt_idx_be32 (const uint8_t * p)
{
  return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) |
      ((uint32_t) p[2] << 8) | (uint32_t) p[3];
}

/* Assembles each element from its bytes instead of swapping, so the same
 * code is right on big- and little-endian hosts. */
void
tt_idx_to_host_order (uint8_t * data, size_t n_elems, size_t esize)
{
  for (size_t i = 0; i < n_elems; i++) {
    uint8_t *p = data + i * esize;

    if (esize == 2) {
      uint16_t v = (uint16_t) (((unsigned) p[0] << 8) | p[1]);
      memcpy (p, &v, 2);
    } else if (esize == 4) {
      uint32_t v = tt_idx_be32 (p);
      memcpy (p, &v, 4);
    } else if (esize == 8) {
      uint64_t v = ((uint64_t) tt_idx_be32 (p) << 32) | tt_idx_be32 (p + 4);
      memcpy (p, &v, 8);
    }
  }
}

int
tt_idx_read_header (gzFile f, const char *path, tt_idx_shape * shape,
    uint64_t * total, char *err, size_t err_len)
{
  uint8_t head[4];
  uint8_t dimbuf[16];
  size_t esize;
  int64_t n;

  memset (shape, 0, sizeof *shape);
  n = tt_idx_gz_read_full (f, head, sizeof (head));
  if (n < 0) {
    tt_idx_set_err (err, err_len, "%s: read error: %s", path,
        tt_idx_gz_reason (f, path));
    return -1;
  }
  if (n == 0) {
    tt_idx_set_err (err, err_len, "%s: empty file, no IDX header", path);
    return -1;
  }
  if (n < (int64_t) sizeof (head)) {
    tt_idx_set_err (err, err_len, "%s: truncated IDX header (%d of 4 "
        "bytes)", path, (int) n);
    return -1;
  }
  if (head[0] != 0 || head[1] != 0) {
    tt_idx_set_err (err, err_len, "%s: bad IDX magic 0x%02x%02x%02x%02x "
        "(first two bytes must be zero; not an IDX file?)", path,
        head[0], head[1], head[2], head[3]);
    return -1;
  }
  esize = tt_idx_type_size (head[2]);
  if (esize == 0) {
    tt_idx_set_err (err, err_len, "%s: unknown IDX element type 0x%02x",
        path, head[2]);
    return -1;
  }
  if (head[3] < 1 || head[3] > 4) {
    tt_idx_set_err (err, err_len, "%s: %d dimensions, supported are 1 to 4",
        path, head[3]);
    return -1;
  }
  shape->type = head[2];
  shape->ndims = head[3];

  n = tt_idx_gz_read_full (f, dimbuf, 4 * (size_t) shape->ndims);
  if (n < 0) {
    tt_idx_set_err (err, err_len, "%s: read error: %s", path,
        tt_idx_gz_reason (f, path));
    return -1;
  }
  if (n < 4 * (int64_t) shape->ndims) {
    tt_idx_set_err (err, err_len, "%s: truncated IDX header: %d dimensions "
        "need %d size bytes, file has %d", path, shape->ndims,
        4 * shape->ndims, (int) n);
    return -1;
  }

  /* Dimensions are checked against the cap one at a time, so the running
   * product never exceeds 2^32 * 2^32 and cannot wrap 64 bits. */
  *total = esize;
  for (int i = 0; i < shape->ndims; i++) {
    shape->dims[i] = tt_idx_be32 (dimbuf + 4 * i);
    if (shape->dims[i] == 0) {
      tt_idx_set_err (err, err_len, "%s: dimension %d is zero", path, i);
      return -1;
    }
    *total *= shape->dims[i];
    if (*total > TT_IDX_MAX_BYTES || *total > (uint64_t) SIZE_MAX) {
      tt_idx_set_err (err, err_len, "%s: data too large (dimensions exceed "
          "the %llu byte limit)", path, (unsigned long long) TT_IDX_MAX_BYTES);
      return -1;
    }
  }
  shape->count = shape->dims[0];
  shape->item_bytes = (size_t) (*total / shape->dims[0]);
  return 0;
}

int
tt_idx_read_end (gzFile f, const char *path, uint64_t total, uint64_t got,
    char *err, size_t err_len)
{
  uint8_t extra;
  int64_t n;
  int closed;

  if (got < total) {
    tt_idx_set_err (err, err_len, "%s: truncated: header promises %llu data "
        "bytes, file has %llu (%s)", path, (unsigned long long) total,
        (unsigned long long) got, tt_idx_gz_reason (f, path));
    gzclose (f);
    return -1;
  }
  /* Trailing bytes usually mean the header is wrong (wrong dims or type),
   * so silently ignoring them would hide a misread dataset. */
  n = tt_idx_gz_read_full (f, &extra, 1);
  if (n < 0) {
    tt_idx_set_err (err, err_len, "%s: read error after data: %s", path,
        tt_idx_gz_reason (f, path));
    gzclose (f);
    return -1;
  }
  if (n > 0) {
    tt_idx_set_err (err, err_len, "%s: trailing bytes after the %llu data "
        "bytes the header describes", path, (unsigned long long) total);
    gzclose (f);
    return -1;
  }
  closed = gzclose (f);
  if (closed == Z_BUF_ERROR) {
    /* zlib's way of saying the last read stopped inside the stream: the
     * data ended before the gzip trailer (CRC-32 and length), so it was
     * never checked */
    tt_idx_set_err (err, err_len, "%s: truncated gzip file: it ends before "
        "the gzip trailer (checksum and length), so the data cannot be "
        "trusted (copy it again)", path);
    return -1;
  }
  if (closed != Z_OK) {
    tt_idx_set_err (err, err_len, "%s: error closing the file: %s", path,
        closed == Z_ERRNO ? strerror (errno) : "zlib error");
    return -1;
  }
  return 0;
}

int
tt_idx_check_pair_shapes (uint8_t label_type, int label_ndims,
    size_t n_images, size_t n_labels, char *err, size_t err_len)
{
  if (label_type != TT_IDX_UINT8 || label_ndims != 1) {
    tt_idx_set_err (err, err_len, "labels: expected a 1-D uint8 file, got "
        "%d-D with element type 0x%02x", label_ndims, label_type);
    return -1;
  }
  if (n_images != n_labels) {
    tt_idx_set_err (err, err_len, "images/labels: count mismatch: %zu "
        "images, %zu labels", n_images, n_labels);
    return -1;
  }
  return 0;
}
