/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* O_TMPFILE */
#endif
#include "tt_idx_file.h"
#include "tt_idx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Decompression goes through a buffer of this size (freed after open). */
#define CHUNK ((size_t) 1 << 20)
#define GZ_BUFFER (128u * 1024u)

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

/* As tt_idx.c: why gzread came up short, without zlib's path prefix. */
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

static int64_t
gz_read_full (gzFile f, uint8_t * buf, size_t len)
{
  size_t got = 0;

  while (got < len) {
    size_t want = len - got;
    int n;

    if (want > CHUNK)
      want = CHUNK;
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
      set_err (err, err_len, "%s: out of memory", dir);
      return -1;
    }
    snprintf (name, n, "%s/tensor-trainer-XXXXXX", dir);
    fd = mkstemp (name);
    if (fd < 0) {
      set_err (err, err_len, "cannot create a temporary file in %s: %s", dir,
          strerror (errno));
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
      set_err (err, err_len, "%s: cannot read %zu bytes at byte %llu: %s",
          path, len, (unsigned long long) offset, strerror (errno));
      return -1;
    }
    if (n == 0) {
      struct stat st;
      uint64_t end = offset + got;
      if (fstat (fd, &st) == 0 && (uint64_t) st.st_size < end)
        end = (uint64_t) st.st_size;
      set_err (err, err_len, "%s: cannot read %zu bytes at byte %llu: the "
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
  uint8_t extra;
  int64_t n;
  char why[256];
  int fd;

  if (buf == NULL) {
    set_err (err, err_len, "%s: cannot allocate %zu bytes", path, CHUNK);
    return -1;
  }
  fd = tt_data_tmpfile (why, sizeof why);
  if (fd < 0) {
    set_err (err, err_len, "%s: cannot decompress: %s", path, why);
    free (buf);
    return -1;
  }
  out->fd = fd;
  out->decompressed = true;
  while (got < total) {
    size_t want = total - got < CHUNK ? (size_t) (total - got) : CHUNK;
    n = gz_read_full (gz, buf, want);
    if (n < 0) {
      set_err (err, err_len, "%s: read error in data: %s", path,
          gz_reason (gz, path));
      goto fail;
    }
    if (n > 0 && write_all (fd, buf, (size_t) n) != 0) {
      set_err (err, err_len, "%s: cannot write its decompressed data to a "
          "temporary file (in $TMPDIR, else /tmp): %s", path, strerror (errno));
      goto fail;
    }
    got += (uint64_t) n;
    if ((size_t) n < want)
      break;
  }
  free (buf);
  buf = NULL;
  if (got < total) {
    set_err (err, err_len, "%s: truncated: header promises %llu data bytes, "
        "file has %llu (%s)", path, (unsigned long long) total,
        (unsigned long long) got, gz_reason (gz, path));
    return -1;
  }
  n = gz_read_full (gz, &extra, 1);
  if (n < 0) {
    set_err (err, err_len, "%s: read error after data: %s", path,
        gz_reason (gz, path));
    return -1;
  }
  if (n > 0) {
    set_err (err, err_len, "%s: trailing bytes after the %llu data bytes "
        "the header describes", path, (unsigned long long) total);
    return -1;
  }
  return 0;
fail:
  free (buf);
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
    set_err (err, err_len, "%s: cannot open: %s", path, strerror (errno));
    return -1;
  }
  if (fstat (out->fd, &st) != 0) {
    set_err (err, err_len, "%s: cannot read: %s", path, strerror (errno));
    return -1;
  }
  if ((uint64_t) st.st_size < out->data_offset + total) {
    uint64_t have = (uint64_t) st.st_size > out->data_offset ?
        (uint64_t) st.st_size - out->data_offset : 0;
    set_err (err, err_len, "%s: truncated: header promises %llu data bytes, "
        "file has %llu (end of file)", path, (unsigned long long) total,
        (unsigned long long) have);
    return -1;
  }
  if ((uint64_t) st.st_size > out->data_offset + total) {
    set_err (err, err_len, "%s: trailing bytes after the %llu data bytes "
        "the header describes", path, (unsigned long long) total);
    return -1;
  }
  return 0;
}

int
tt_idx_file_open (const char *path, tt_idx_file * out, char *err,
    size_t err_len)
{
  gzFile gz = NULL;
  uint8_t head[4];
  uint8_t dimbuf[16];
  uint64_t total;
  size_t esize;
  int64_t n;
  int i, closed;

  if (out != NULL)
    tt_idx_file_init (out);
  if (path == NULL || out == NULL) {
    set_err (err, err_len, "%s: invalid argument (NULL %s)",
        path ? path : "(null)", path ? "output" : "path");
    return -1;
  }
  out->path = strdup (path);
  if (out->path == NULL) {
    set_err (err, err_len, "%s: out of memory", path);
    return -1;
  }

  errno = 0;
  gz = gzopen (path, "rb");
  if (gz == NULL) {
    set_err (err, err_len, "%s: cannot open: %s", path,
        errno ? strerror (errno) : "out of memory");
    goto fail;
  }
  gzbuffer (gz, GZ_BUFFER);

  n = gz_read_full (gz, head, sizeof (head));
  if (n < 0) {
    set_err (err, err_len, "%s: read error: %s", path, gz_reason (gz, path));
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

  n = gz_read_full (gz, dimbuf, 4 * (size_t) out->ndims);
  if (n < 0) {
    set_err (err, err_len, "%s: read error: %s", path, gz_reason (gz, path));
    goto fail;
  }
  if (n < 4 * (int64_t) out->ndims) {
    set_err (err, err_len, "%s: truncated IDX header: %d dimensions need "
        "%d size bytes, file has %d", path, out->ndims, 4 * out->ndims,
        (int) n);
    goto fail;
  }
  total = esize;
  for (i = 0; i < out->ndims; i++) {
    out->dims[i] = be32 (dimbuf + 4 * i);
    if (out->dims[i] == 0) {
      set_err (err, err_len, "%s: dimension %d is zero", path, i);
      goto fail;
    }
    total *= out->dims[i];
    if (total > TT_IDX_MAX_BYTES || total > (uint64_t) SIZE_MAX) {
      set_err (err, err_len, "%s: data too large (dimensions exceed the "
          "%llu byte limit)", path, (unsigned long long) TT_IDX_MAX_BYTES);
      goto fail;
    }
  }
  out->count = out->dims[0];
  out->item_bytes = (size_t) (total / out->dims[0]);
  out->data_offset = 4 + 4 * (uint64_t) out->ndims;

  if (gzdirect (gz)) {
    gzclose (gz);
    gz = NULL;
    if (open_plain (out, total, err, err_len) != 0)
      goto fail;
    return 0;
  }
  if (decompress (gz, out, total, err, err_len) != 0)
    goto fail;
  out->data_offset = 0;
  closed = gzclose (gz);
  gz = NULL;
  if (closed == Z_BUF_ERROR) {
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
  return 0;

fail:
  if (gz != NULL)
    gzclose (gz);
  tt_idx_file_close (out);
  return -1;
}

/* As tt_idx.c: each element assembled from its big-endian bytes. */
static void
to_host_order (uint8_t * data, size_t n_elems, size_t esize)
{
  for (size_t i = 0; i < n_elems; i++) {
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
tt_idx_file_read (const tt_idx_file * f, size_t first, size_t n, void *dst,
    char *err, size_t err_len)
{
  size_t esize;

  if (f == NULL || f->fd < 0 || dst == NULL) {
    set_err (err, err_len, "%s: not open", f && f->path ? f->path : "(null)");
    return -1;
  }
  if (first > f->count || n > f->count - first) {
    set_err (err, err_len, "%s: samples %zu to %zu are past its %zu samples",
        f->path, first, first + n, f->count);
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
    to_host_order (dst, n * f->item_bytes / esize, esize);
  return 0;
}

int
tt_idx_file_check_pair (const tt_idx_file * images,
    const tt_idx_file * labels, char *err, size_t err_len)
{
  if (images == NULL || labels == NULL || images->fd < 0 || labels->fd < 0) {
    set_err (err, err_len, "images/labels: %s not loaded",
        (images == NULL || images->fd < 0) ? "images" : "labels");
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
