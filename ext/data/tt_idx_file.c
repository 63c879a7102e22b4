/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* O_TMPFILE */
#endif
#include "tt_idx_file.h"
#include "tt_idx.h"
#include "tt_idx_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Decompression goes through a buffer of this size (freed after open). */
#define CHUNK ((size_t) 1 << 20)

void
tt_idx_file_init (tt_idx_file * f)
{
  memset (f, 0, sizeof *f);
  f->fd = -1;
}

void
tt_idx_file_close (tt_idx_file * f)
{
  if (f == NULL)
    return;
  if (f->fd >= 0)
    close (f->fd);
  free (f->path);
  tt_idx_file_init (f);
}

int
tt_data_tmpfile (char *err, size_t err_len)
{
  const char *dir = getenv ("TMPDIR");
  int fd = -1;

  if (dir == NULL || dir[0] == '\0')
    dir = "/tmp";
#ifdef O_TMPFILE
  fd = open (dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0)
    return fd;
#endif
  {
    /* no O_TMPFILE here (or not on this file system): a named file,
     * unlinked at once */
    size_t n = strlen (dir) + sizeof "/tensor-trainer-XXXXXX";
    char *name = malloc (n);

    if (name == NULL) {
      tt_idx_set_err (err, err_len, "%s: out of memory", dir);
      return -1;
    }
    snprintf (name, n, "%s/tensor-trainer-XXXXXX", dir);
    fd = mkstemp (name);
    if (fd < 0) {
      tt_idx_set_err (err, err_len, "cannot create a temporary file in %s: %s",
          dir, strerror (errno));
      free (name);
      return -1;
    }
    unlink (name);
    free (name);
    (void) fcntl (fd, F_SETFD, FD_CLOEXEC);
  }
  return fd;
}

int
tt_data_read_at (int fd, const char *path, uint64_t offset, void *dst,
    size_t len, char *err, size_t err_len)
{
  size_t got = 0;

  while (got < len) {
    ssize_t n = pread (fd, (uint8_t *) dst + got, len - got,
        (off_t) (offset + got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      tt_idx_set_err (err, err_len,
          "%s: cannot read %zu bytes at byte %llu: %s", path, len,
          (unsigned long long) offset, strerror (errno));
      return -1;
    }
    if (n == 0) {
      struct stat st;
      uint64_t end = offset + got;
      if (fstat (fd, &st) == 0 && (uint64_t) st.st_size < end)
        end = (uint64_t) st.st_size;
      tt_idx_set_err (err, err_len,
          "%s: cannot read %zu bytes at byte %llu: the "
          "file ends at byte %llu (truncated or replaced since it was "
          "opened)", path, len, (unsigned long long) offset,
          (unsigned long long) end);
      return -1;
    }
    got += (size_t) n;
  }
  return 0;
}

static int
write_all (int fd, const uint8_t * buf, size_t len)
{
  while (len > 0) {
    ssize_t n = write (fd, buf, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    buf += n;
    len -= (size_t) n;
  }
  return 0;
}

/* The data of a gzipped file (after its header, f already past it) into
 * an unnamed temporary file, checked as tt_idx_load checks it. */
static int
decompress (gzFile gz, tt_idx_file * out, uint64_t total, char *err,
    size_t err_len)
{
  const char *path = out->path;
  uint8_t *buf = malloc (CHUNK);
  uint64_t got = 0;
  int64_t n;
  char why[256];
  int fd;

  if (buf == NULL) {
    tt_idx_set_err (err, err_len, "%s: cannot allocate %zu bytes", path, CHUNK);
    gzclose (gz);
    return -1;
  }
  fd = tt_data_tmpfile (why, sizeof why);
  if (fd < 0) {
    tt_idx_set_err (err, err_len, "%s: cannot decompress: %s", path, why);
    free (buf);
    gzclose (gz);
    return -1;
  }
  out->fd = fd;
  out->decompressed = true;
  while (got < total) {
    size_t want = total - got < CHUNK ? (size_t) (total - got) : CHUNK;
    n = tt_idx_gz_read_full (gz, buf, want);
    if (n < 0) {
      tt_idx_set_err (err, err_len, "%s: read error in data: %s", path,
          tt_idx_gz_reason (gz, path));
      goto fail;
    }
    if (n > 0 && write_all (fd, buf, (size_t) n) != 0) {
      tt_idx_set_err (err, err_len,
          "%s: cannot write its decompressed data to a "
          "temporary file (in $TMPDIR, else /tmp): %s", path, strerror (errno));
      goto fail;
    }
    got += (uint64_t) n;
    if ((size_t) n < want)
      break;
  }
  free (buf);
  return tt_idx_read_end (gz, path, total, got, err, err_len);
fail:
  free (buf);
  gzclose (gz);
  return -1;
}

/* A plain file: opened again (zlib's handle is closed by the caller),
 * its length checked against the header. */
static int
open_plain (tt_idx_file * out, uint64_t total, char *err, size_t err_len)
{
  const char *path = out->path;
  struct stat st;

  out->fd = open (path, O_RDONLY | O_CLOEXEC);
  if (out->fd < 0) {
    tt_idx_set_err (err, err_len, "%s: cannot open: %s", path,
        strerror (errno));
    return -1;
  }
  if (fstat (out->fd, &st) != 0) {
    tt_idx_set_err (err, err_len, "%s: cannot read: %s", path,
        strerror (errno));
    return -1;
  }
  if ((uint64_t) st.st_size < out->data_offset + total) {
    uint64_t have = (uint64_t) st.st_size > out->data_offset ?
        (uint64_t) st.st_size - out->data_offset : 0;
    tt_idx_set_err (err, err_len,
        "%s: truncated: header promises %llu data bytes, "
        "file has %llu (end of file)", path, (unsigned long long) total,
        (unsigned long long) have);
    return -1;
  }
  if ((uint64_t) st.st_size > out->data_offset + total) {
    tt_idx_set_err (err, err_len,
        "%s: trailing bytes after the %llu data bytes " "the header describes",
        path, (unsigned long long) total);
    return -1;
  }
  return 0;
}

int
tt_idx_file_open (const char *path, tt_idx_file * out, char *err,
    size_t err_len)
{
  gzFile gz = NULL;
  uint64_t total;
  tt_idx_shape shape;
  int rc;

  if (out != NULL)
    tt_idx_file_init (out);
  if (path == NULL || out == NULL) {
    tt_idx_set_err (err, err_len, "%s: invalid argument (NULL %s)",
        path ? path : "(null)", path ? "output" : "path");
    return -1;
  }
  out->path = strdup (path);
  if (out->path == NULL) {
    tt_idx_set_err (err, err_len, "%s: out of memory", path);
    return -1;
  }

  errno = 0;
  gz = gzopen (path, "rb");
  if (gz == NULL) {
    tt_idx_set_err (err, err_len, "%s: cannot open: %s", path,
        errno ? strerror (errno) : "out of memory");
    goto fail;
  }
  gzbuffer (gz, TT_IDX_GZ_BUFFER);

  if (tt_idx_read_header (gz, path, &shape, &total, err, err_len) != 0)
    goto fail;
  out->type = shape.type;
  out->ndims = shape.ndims;
  memcpy (out->dims, shape.dims, sizeof out->dims);
  out->count = shape.count;
  out->item_bytes = shape.item_bytes;
  out->data_offset = 4 + 4 * (uint64_t) out->ndims;

  if (gzdirect (gz)) {
    gzclose (gz);
    gz = NULL;
    if (open_plain (out, total, err, err_len) != 0)
      goto fail;
    return 0;
  }
  /* (decompress closes gz, as it checks the gzip trailer) */
  rc = decompress (gz, out, total, err, err_len);
  gz = NULL;
  if (rc != 0)
    goto fail;
  out->data_offset = 0;
  return 0;

fail:
  if (gz != NULL)
    gzclose (gz);
  tt_idx_file_close (out);
  return -1;
}

int
tt_idx_file_read (const tt_idx_file * f, size_t first, size_t n, void *dst,
    char *err, size_t err_len)
{
  size_t esize;

  if (f == NULL || f->fd < 0 || dst == NULL) {
    tt_idx_set_err (err, err_len, "%s: not open", f
        && f->path ? f->path : "(null)");
    return -1;
  }
  if (first > f->count || n > f->count - first) {
    tt_idx_set_err (err, err_len,
        "%s: samples %zu to %zu are past its %zu samples", f->path, first,
        first + n, f->count);
    return -1;
  }
  if (n == 0)
    return 0;
  if (tt_data_read_at (f->fd, f->path, f->data_offset +
          (uint64_t) first * f->item_bytes, dst, n * f->item_bytes, err,
          err_len) != 0)
    return -1;
  esize = tt_idx_type_size (f->type);
  if (esize > 1)
    tt_idx_to_host_order (dst, n * f->item_bytes / esize, esize);
  return 0;
}

int
tt_idx_file_check_pair (const tt_idx_file * images,
    const tt_idx_file * labels, char *err, size_t err_len)
{
  if (images == NULL || labels == NULL || images->fd < 0 || labels->fd < 0) {
    tt_idx_set_err (err, err_len, "images/labels: %s not loaded",
        (images == NULL || images->fd < 0) ? "images" : "labels");
    return -1;
  }
  return tt_idx_check_pair_shapes (labels->type, labels->ndims,
      images->count, labels->count, err, err_len);
}
