/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tt_idx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* gzread takes an unsigned int length, and bounded reads keep the error
 * position reportable; 1 MiB is large enough that call overhead vanishes
 * next to inflate. */
#define READ_CHUNK ((size_t) 1 << 20)

/* zlib's default 8 KiB input buffer makes decompression of the 26 MB
 * training set noticeably slower. */
#define GZ_BUFFER (128u * 1024u)

/* The data buffer starts at this size (or the header's, when smaller) and
 * doubles as the data keeps coming. */
#define FIRST_ALLOC ((size_t) 16 << 20)

/* On 32-bit hosts size_t, not the format cap, is the tighter limit. */
#if SIZE_MAX < UINT64_MAX
#define MAX_ALLOC ((uint64_t) SIZE_MAX)
#else
#define MAX_ALLOC UINT64_MAX
#endif

static void
set_err (char *err, size_t err_len, const char *fmt, ...)
{
  va_list ap;

  if (err == NULL || err_len == 0)
    return;
  va_start (ap, fmt);
  vsnprintf (err, err_len, fmt, ap);
  va_end (ap);
}

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

/* Describes why gzread came up short: a zlib error (corrupt gzip data,
 * I/O error) says more than a bare byte count does. zlib prefixes its
 * message with the path, which our own message already starts with. */
static const char *
gz_reason (gzFile f, const char *path)
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

/* Reads up to len bytes, looping because gzread may return less than asked
 * for before the end. Returns the byte count, or -1 on a zlib error. */
static int64_t
read_full (gzFile f, uint8_t * buf, size_t len)
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

static uint32_t
be32 (const uint8_t * p)
{
  return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) |
      ((uint32_t) p[2] << 8) | (uint32_t) p[3];
}

/* Assembles each element from its bytes instead of swapping, so the same
 * code is right on big- and little-endian hosts. */
static void
to_host_order (uint8_t * data, size_t n_elems, size_t esize)
{
  size_t i;

  for (i = 0; i < n_elems; i++) {
    uint8_t *p = data + i * esize;

    if (esize == 2) {
      uint16_t v = (uint16_t) (((unsigned) p[0] << 8) | p[1]);
      memcpy (p, &v, 2);
    } else if (esize == 4) {
      uint32_t v = be32 (p);
      memcpy (p, &v, 4);
    } else if (esize == 8) {
      uint64_t v = ((uint64_t) be32 (p) << 32) | be32 (p + 4);
      memcpy (p, &v, 8);
    }
  }
}

int
tt_idx_load (const char *path, tt_idx * out, char *err, size_t err_len)
{
  gzFile f = NULL;
  uint8_t head[4];
  uint8_t dimbuf[16];
  uint8_t extra;
  uint64_t total;
  size_t esize, cap, got, grown;
  uint8_t *data;
  int64_t n;
  int i;

  if (out != NULL)
    memset (out, 0, sizeof (*out));
  if (path == NULL || out == NULL) {
    set_err (err, err_len, "%s: invalid argument (NULL %s)",
        path ? path : "(null)", path ? "output" : "path");
    return -1;
  }

  errno = 0;
  f = gzopen (path, "rb");
  if (f == NULL) {
    set_err (err, err_len, "%s: cannot open: %s", path,
        errno ? strerror (errno) : "out of memory");
    return -1;
  }
  gzbuffer (f, GZ_BUFFER);

  n = read_full (f, head, sizeof (head));
  if (n < 0) {
    set_err (err, err_len, "%s: read error: %s", path, gz_reason (f, path));
    goto fail;
  }
  if (n == 0) {
    set_err (err, err_len, "%s: empty file, no IDX header", path);
    goto fail;
  }
  if (n < (int64_t) sizeof (head)) {
    set_err (err, err_len, "%s: truncated IDX header (%d of 4 bytes)",
        path, (int) n);
    goto fail;
  }
  if (head[0] != 0 || head[1] != 0) {
    set_err (err, err_len, "%s: bad IDX magic 0x%02x%02x%02x%02x "
        "(first two bytes must be zero; not an IDX file?)", path,
        head[0], head[1], head[2], head[3]);
    goto fail;
  }
  esize = tt_idx_type_size (head[2]);
  if (esize == 0) {
    set_err (err, err_len, "%s: unknown IDX element type 0x%02x", path,
        head[2]);
    goto fail;
  }
  if (head[3] < 1 || head[3] > 4) {
    set_err (err, err_len, "%s: %d dimensions, supported are 1 to 4", path,
        head[3]);
    goto fail;
  }
  out->type = head[2];
  out->ndims = head[3];

  n = read_full (f, dimbuf, 4 * (size_t) out->ndims);
  if (n < 0) {
    set_err (err, err_len, "%s: read error: %s", path, gz_reason (f, path));
    goto fail;
  }
  if (n < 4 * (int64_t) out->ndims) {
    set_err (err, err_len, "%s: truncated IDX header: %d dimensions need "
        "%d size bytes, file has %d", path, out->ndims, 4 * out->ndims,
        (int) n);
    goto fail;
  }

  /* Dimensions are checked against the cap one at a time, so the running
   * product never exceeds 2^32 * 2^32 and cannot wrap 64 bits. */
  total = esize;
  for (i = 0; i < out->ndims; i++) {
    out->dims[i] = be32 (dimbuf + 4 * i);
    if (out->dims[i] == 0) {
      set_err (err, err_len, "%s: dimension %d is zero", path, i);
      goto fail;
    }
    total *= out->dims[i];
    if (total > TT_IDX_MAX_BYTES || total > MAX_ALLOC) {
      set_err (err, err_len, "%s: data too large (dimensions exceed the "
          "%llu byte limit)", path, (unsigned long long) TT_IDX_MAX_BYTES);
      goto fail;
    }
  }
  out->count = out->dims[0];
  out->item_bytes = (size_t) (total / out->dims[0]);

  /* The buffer grows as the data arrives: a corrupt or hostile header on
   * a short file must not make us allocate what it promises. */
  cap = total < FIRST_ALLOC ? (size_t) total : FIRST_ALLOC;
  got = 0;
  out->data = malloc (cap);
  for (;;) {
    if (out->data == NULL) {
      set_err (err, err_len, "%s: cannot allocate %zu bytes", path, cap);
      goto fail;
    }
    n = read_full (f, out->data + got, cap - got);
    if (n < 0) {
      set_err (err, err_len, "%s: read error in data: %s", path,
          gz_reason (f, path));
      goto fail;
    }
    got += (size_t) n;
    if (got < cap || cap == total)
      break;
    /* full, and the header promises more */
    grown = total - cap < cap ? (size_t) total : 2 * cap;
    data = realloc (out->data, grown);
    if (data == NULL) {
      set_err (err, err_len, "%s: cannot allocate %zu bytes", path, grown);
      goto fail;
    }
    out->data = data;
    cap = grown;
  }
  if ((uint64_t) got < total) {
    set_err (err, err_len, "%s: truncated: header promises %llu data bytes, "
        "file has %llu (%s)", path, (unsigned long long) total,
        (unsigned long long) got, gz_reason (f, path));
    goto fail;
  }

  /* Trailing bytes usually mean the header is wrong (wrong dims or type),
   * so silently ignoring them would hide a misread dataset. */
  n = read_full (f, &extra, 1);
  if (n < 0) {
    set_err (err, err_len, "%s: read error after data: %s", path,
        gz_reason (f, path));
    goto fail;
  }
  if (n > 0) {
    set_err (err, err_len, "%s: trailing bytes after the %llu data bytes "
        "the header describes", path, (unsigned long long) total);
    goto fail;
  }

  int closed = gzclose (f);
  f = NULL;
  if (closed == Z_BUF_ERROR) {
    /* zlib's way of saying the last read stopped inside the stream: the
     * data ended before the gzip trailer (CRC-32 and length), so it was
     * never checked */
    set_err (err, err_len, "%s: truncated gzip file: it ends before the "
        "gzip trailer (checksum and length), so the data cannot be trusted "
        "(copy it again)", path);
    goto fail;
  }
  if (closed != Z_OK) {
    set_err (err, err_len, "%s: error closing the file: %s", path,
        closed == Z_ERRNO ? strerror (errno) : "zlib error");
    goto fail;
  }
  f = NULL;

  if (esize > 1)
    to_host_order (out->data, (size_t) (total / esize), esize);
  return 0;

fail:
  if (f != NULL)
    gzclose (f);
  tt_idx_clear (out);
  return -1;
}

void
tt_idx_clear (tt_idx * idx)
{
  if (idx == NULL)
    return;
  free (idx->data);
  memset (idx, 0, sizeof (*idx));
}

int
tt_idx_check_pair (const tt_idx * images, const tt_idx * labels,
    char *err, size_t err_len)
{
  if (images == NULL || labels == NULL || images->data == NULL ||
      labels->data == NULL) {
    set_err (err, err_len, "images/labels: %s not loaded",
        (images == NULL || images->data == NULL) ? "images" : "labels");
    return -1;
  }
  if (labels->type != TT_IDX_UINT8 || labels->ndims != 1) {
    set_err (err, err_len, "labels: expected a 1-D uint8 file, got %d-D "
        "with element type 0x%02x", labels->ndims, labels->type);
    return -1;
  }
  if (images->count != labels->count) {
    set_err (err, err_len, "images/labels: count mismatch: %zu images, "
        "%zu labels", images->count, labels->count);
    return -1;
  }
  return 0;
}
