/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: IDX files (tt_idx_load, through a memfd), plain and
 * gzipped. Byte 0 picks how the rest reaches the reader: even, as it is
 * (plain IDX, or gzip bytes the fuzzer mutates directly); odd, gzipped
 * by the harness first, so mutations of the IDX structure also reach the
 * reader through zlib's inflate. A load fails with a message naming the
 * path, or holds the invariants tt_idx.h promises. The streaming reader
 * (tt_idx_file.h) must agree: it fails where the load fails, with the
 * same message, and otherwise has the same header and reads the same
 * samples (alone, and all in one run).
 */
#include "tt_idx.h"
#include "tt_idx_file.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#define FUZZ_CHECK(cond, ...)                                             \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf (stderr, "fuzz invariant failed at %s:%d: %s: ", __FILE__,  \
          __LINE__, #cond);                                               \
      fprintf (stderr, __VA_ARGS__);                                      \
      fprintf (stderr, "\n");                                             \
      abort ();                                                           \
    }                                                                     \
  } while (0)

static int fd = -1;
static char path[64];
static uint8_t *gz;
static size_t gz_cap;

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  fd = memfd_create ("fuzz_idx", 0);
  FUZZ_CHECK (fd >= 0, "memfd_create failed");
  snprintf (path, sizeof path, "/proc/self/fd/%d", fd);
  return 0;
}

static void
put (const uint8_t * data, size_t len)
{
  FUZZ_CHECK (ftruncate (fd, 0) == 0, "ftruncate failed");
  for (size_t done = 0; done < len;) {
    ssize_t n = pwrite (fd, data + done, len - done, (off_t) done);
    FUZZ_CHECK (n > 0, "pwrite failed");
    done += (size_t) n;
  }
}

/* data as one gzip member; returns its length */
static size_t
gzip (const uint8_t * data, size_t len)
{
  size_t need = len + len / 1000 + 64;
  if (need > gz_cap) {
    free (gz);
    gz = malloc (gz_cap = need);
    FUZZ_CHECK (gz != NULL, "out of memory");
  }
  /* one stream for the whole run: its buffers are large */
  static z_stream z;
  static bool ready;
  if (!ready) {
    FUZZ_CHECK (deflateInit2 (&z, 1, Z_DEFLATED, 15 + 16, 8,
            Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2 failed");
    ready = true;
  } else {
    FUZZ_CHECK (deflateReset (&z) == Z_OK, "deflateReset failed");
  }
  z.next_in = (Bytef *) data;
  z.avail_in = (uInt) len;
  z.next_out = gz;
  z.avail_out = (uInt) gz_cap;
  FUZZ_CHECK (deflate (&z, Z_FINISH) == Z_STREAM_END, "deflate failed");
  return gz_cap - z.avail_out;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  if (size < 1)
    return 0;
  if (data[0] & 1) {
    size_t n = gzip (data + 1, size - 1);
    put (gz, n);
  } else
    put (data + 1, size - 1);

  tt_idx idx;
  memset (&idx, 0xa5, sizeof idx);      /* load must not need it cleared */
  char err[512], ferr[512];
  err[0] = ferr[0] = '\0';
  tt_idx_file f;
  memset (&f, 0xa5, sizeof f);  /* nor open */
  int opened = tt_idx_file_open (path, &f, ferr, sizeof ferr);
  if (tt_idx_load (path, &idx, err, sizeof err) != 0) {
    FUZZ_CHECK (!strncmp (err, path, strlen (path)), "message '%s' does not "
        "start with the path", err);
    FUZZ_CHECK (idx.data == NULL && idx.ndims == 0 && idx.count == 0,
        "a failed load left data behind");
    FUZZ_CHECK (opened != 0 && !strcmp (err, ferr), "load failed with '%s', "
        "open gave %d '%s'", err, opened, ferr);
    FUZZ_CHECK (f.fd == -1 && f.path == NULL, "a failed open left a file");
    return 0;
  }
  FUZZ_CHECK (opened == 0, "load worked, open failed: %s", ferr);
  FUZZ_CHECK (f.type == idx.type && f.ndims == idx.ndims && f.count ==
      idx.count && f.item_bytes == idx.item_bytes && !memcmp (f.dims,
          idx.dims, sizeof f.dims), "the readers disagree on the header");
  {
    uint8_t *buf = malloc (idx.count * idx.item_bytes);
    FUZZ_CHECK (buf != NULL, "out of memory");
    for (size_t i = 0; i < idx.count; i++) {
      FUZZ_CHECK (tt_idx_file_read (&f, i, 1, buf, ferr, sizeof ferr) == 0,
          "sample %zu: %s", i, ferr);
      FUZZ_CHECK (!memcmp (buf, idx.data + i * idx.item_bytes,
              idx.item_bytes), "sample %zu differs", i);
    }
    FUZZ_CHECK (tt_idx_file_read (&f, 0, idx.count, buf, ferr,
            sizeof ferr) == 0 && !memcmp (buf, idx.data,
            idx.count * idx.item_bytes), "one run differs");
    FUZZ_CHECK (tt_idx_file_read (&f, idx.count, 1, buf, ferr,
            sizeof ferr) == -1, "a read past the end worked");
    free (buf);
    tt_idx_file_close (&f);
  }
  size_t esize = tt_idx_type_size (idx.type);
  FUZZ_CHECK (esize > 0, "type 0x%02x", idx.type);
  FUZZ_CHECK (idx.ndims >= 1 && idx.ndims <= 4, "%d dims", idx.ndims);
  uint64_t total = esize;
  for (int i = 0; i < 4; i++) {
    if (i < idx.ndims) {
      FUZZ_CHECK (idx.dims[i] != 0, "dim %d is zero", i);
      total *= idx.dims[i];
    } else {
      FUZZ_CHECK (idx.dims[i] == 0, "dim %d past ndims is %u", i, idx.dims[i]);
    }
  }
  FUZZ_CHECK (idx.count == idx.dims[0] && idx.item_bytes * idx.count ==
      total, "count %zu, item_bytes %zu, total %llu", idx.count,
      idx.item_bytes, (unsigned long long) total);
  if (idx.ndims == 1)
    FUZZ_CHECK (idx.item_bytes == esize, "1-D item_bytes %zu", idx.item_bytes);
  /* every byte is there (ASan checks the reads) */
  unsigned sum = 0;
  for (uint64_t i = 0; i < total; i++)
    sum += idx.data[i];
  (void) sum;
  /* the data is the file's, in host order */
  const uint8_t *raw = data[0] & 1 ? data + 1 : NULL;
  if (raw) {
    const uint8_t *p = raw + 4 + 4 * (size_t) idx.ndims;
    for (uint64_t i = 0; i < total; i += esize) {
      uint64_t v = 0, w = 0;
      for (size_t k = 0; k < esize; k++)
        v = v << 8 | p[i + k];
      memcpy (&w, idx.data + i, esize);
      FUZZ_CHECK (v == w, "element at byte %llu differs",
          (unsigned long long) i);
    }
  }
  char perr[256];
  int pair = tt_idx_check_pair (&idx, &idx, perr, sizeof perr);
  FUZZ_CHECK (pair == 0 || perr[0], "check_pair failed without a message");
  tt_idx_clear (&idx);
  FUZZ_CHECK (idx.data == NULL, "clear left data");
  tt_idx_clear (&idx);
  return 0;
}
