/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tt_idx.h"
#include "tt_idx_format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The data buffer starts at this size (or the header's, when smaller) and
 * doubles as the data keeps coming. */
#define FIRST_ALLOC ((size_t) 16 << 20)

int
tt_idx_load (const char *path, tt_idx * out, char *err, size_t err_len)
{
  gzFile f = NULL;
  uint64_t total;
  size_t esize, cap, got, grown;
  uint8_t *data;
  int64_t n;

  if (out != NULL)
    memset (out, 0, sizeof (*out));
  if (path == NULL || out == NULL) {
    tt_idx_set_err (err, err_len, "%s: invalid argument (NULL %s)",
        path ? path : "(null)", path ? "output" : "path");
    return -1;
  }

  errno = 0;
  f = gzopen (path, "rb");
  if (f == NULL) {
    tt_idx_set_err (err, err_len, "%s: cannot open: %s", path,
        errno ? strerror (errno) : "out of memory");
    return -1;
  }
  gzbuffer (f, TT_IDX_GZ_BUFFER);

  tt_idx_shape shape;
  if (tt_idx_read_header (f, path, &shape, &total, err, err_len) != 0)
    goto fail;
  out->type = shape.type;
  out->ndims = shape.ndims;
  memcpy (out->dims, shape.dims, sizeof out->dims);
  out->count = shape.count;
  out->item_bytes = shape.item_bytes;
  esize = tt_idx_type_size (shape.type);

  /* The buffer grows as the data arrives: a corrupt or hostile header on
   * a short file must not make us allocate what it promises. */
  cap = total < FIRST_ALLOC ? (size_t) total : FIRST_ALLOC;
  got = 0;
  out->data = malloc (cap);
  for (;;) {
    if (out->data == NULL) {
      tt_idx_set_err (err, err_len, "%s: cannot allocate %zu bytes", path, cap);
      goto fail;
    }
    n = tt_idx_gz_read_full (f, out->data + got, cap - got);
    if (n < 0) {
      tt_idx_set_err (err, err_len, "%s: read error in data: %s", path,
          tt_idx_gz_reason (f, path));
      goto fail;
    }
    got += (size_t) n;
    if (got < cap || cap == total)
      break;
    /* full, and the header promises more */
    grown = total - cap < cap ? (size_t) total : 2 * cap;
    data = realloc (out->data, grown);
    if (data == NULL) {
      tt_idx_set_err (err, err_len, "%s: cannot allocate %zu bytes", path,
          grown);
      goto fail;
    }
    out->data = data;
    cap = grown;
  }
  n = tt_idx_read_end (f, path, total, got, err, err_len);
  f = NULL;                     /* closed */
  if (n != 0)
    goto fail;

  if (esize > 1)
    tt_idx_to_host_order (out->data, (size_t) (total / esize), esize);
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
    tt_idx_set_err (err, err_len, "images/labels: %s not loaded",
        (images == NULL || images->data == NULL) ? "images" : "labels");
    return -1;
  }
  return tt_idx_check_pair_shapes (labels->type, labels->ndims,
      images->count, labels->count, err, err_len);
}
