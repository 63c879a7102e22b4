/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test of the streaming IDX reader (tt_idx_file.h): the samples it
 * reads one by one or in runs are tt_idx_load's; it refuses what
 * tt_idx_load refuses, with the same message; a gzipped file's temporary
 * leaves no name in $TMPDIR, during the run or after; a file truncated
 * while open gives an error naming it, not a crash.
 */
#define _DEFAULT_SOURCE         /* mkdtemp, truncate */

#include "tt_idx.h"
#include "tt_idx_file.h"
#include "tt_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static char tmpdir[64], tmpfiles[80];

static const char *
tmp_path (const char *name)
{
  static char buf[4][256];
  static int slot;
  char *p = buf[slot++ % 4];
  snprintf (p, sizeof buf[0], "%s/%s", tmpdir, name);
  return p;
}

static int
write_file (const char *path, const void *bytes, size_t len, int gz)
{
  if (gz) {
    gzFile f = gzopen (path, "wb");
    if (f == NULL)
      return -1;
    int ok = len == 0 || gzwrite (f, bytes, (unsigned) len) == (int) len;
    return (gzclose (f) == Z_OK && ok) ? 0 : -1;
  }
  FILE *f = fopen (path, "wb");
  if (f == NULL)
    return -1;
  int ok = fwrite (bytes, 1, len, f) == len;
  return (fclose (f) == 0 && ok) ? 0 : -1;
}

static size_t
make_idx (uint8_t * buf, uint8_t type, int ndims, const uint32_t * dims,
    const void *payload, size_t payload_len)
{
  size_t n = 0;
  buf[n++] = 0;
  buf[n++] = 0;
  buf[n++] = type;
  buf[n++] = (uint8_t) ndims;
  for (int i = 0; i < ndims; i++) {
    buf[n++] = (uint8_t) (dims[i] >> 24);
    buf[n++] = (uint8_t) (dims[i] >> 16);
    buf[n++] = (uint8_t) (dims[i] >> 8);
    buf[n++] = (uint8_t) dims[i];
  }
  if (payload_len)
    memcpy (buf + n, payload, payload_len);
  return n + payload_len;
}

/* Entries of the private $TMPDIR (the reader's temporaries go there). */
static int
count_entries (const char *dir)
{
  DIR *d = opendir (dir);
  struct dirent *e;
  int n = 0;
  if (!d)
    return -1;
  while ((e = readdir (d)))
    if (strcmp (e->d_name, ".") && strcmp (e->d_name, ".."))
      n++;
  closedir (d);
  return n;
}

/* path read by both readers: same header, same samples (one by one, in
 * one run, and in runs of 3). */
static void
same_as_load (const char *path, const char *what)
{
  char err[512] = "";
  tt_idx whole;
  tt_idx_file f;
  CHECK (tt_idx_load (path, &whole, err, sizeof err) == 0, "%s: %s", what, err);
  CHECK (tt_idx_file_open (path, &f, err, sizeof err) == 0, "%s: %s", what,
      err);
  if (f.fd < 0 || whole.data == NULL) {
    tt_idx_clear (&whole);
    tt_idx_file_close (&f);
    return;
  }
  CHECK (f.type == whole.type && f.ndims == whole.ndims && f.count ==
      whole.count && f.item_bytes == whole.item_bytes && !memcmp (f.dims,
          whole.dims, sizeof f.dims), "%s: header", what);
  uint8_t *buf = malloc (whole.count * whole.item_bytes);
  int ok = 1;
  for (size_t i = 0; i < f.count; i++) {
    ok &= tt_idx_file_read (&f, i, 1, buf, err, sizeof err) == 0;
    ok &= !memcmp (buf, whole.data + i * f.item_bytes, f.item_bytes);
  }
  CHECK (ok, "%s: every sample read alone is tt_idx_load's", what);
  CHECK (tt_idx_file_read (&f, 0, f.count, buf, err, sizeof err) == 0
      && !memcmp (buf, whole.data, f.count * f.item_bytes),
      "%s: all in one read", what);
  ok = 1;
  for (size_t i = 0; i + 3 <= f.count; i += 3)
    ok &= tt_idx_file_read (&f, i, 3, buf, err, sizeof err) == 0
        && !memcmp (buf, whole.data + i * f.item_bytes, 3 * f.item_bytes);
  CHECK (ok, "%s: runs of 3", what);
  err[0] = '\0';
  CHECK (tt_idx_file_read (&f, f.count - 1, 2, buf, err, sizeof err) == -1
      && strstr (err, path) && strstr (err, "past its"),
      "%s: a read past the end is refused [%s]", what, err);
  free (buf);
  tt_idx_clear (&whole);
  tt_idx_file_close (&f);
  CHECK (f.fd == -1 && f.path == NULL, "%s: closed", what);
  tt_idx_file_close (&f);
}

static void
test_same_samples (void)
{
  uint8_t buf[4096];
  uint8_t px[7 * 2 * 3];
  int32_t i32[5 * 2];
  double f64[4];
  const uint32_t d3[3] = { 7, 2, 3 }, d2[2] = { 5, 2 }, d1[1] = { 4 };
  for (size_t i = 0; i < sizeof px; i++)
    px[i] = (uint8_t) (i * 37 + 1);
  /* big-endian bytes: the readers assemble the host values */
  for (size_t i = 0; i < sizeof i32; i++)
    ((uint8_t *) i32)[i] = (uint8_t) (i * 11 + 3);
  for (size_t i = 0; i < sizeof f64; i++)
    ((uint8_t *) f64)[i] = (uint8_t) (0x40 + i);
  for (int gz = 0; gz < 2; gz++) {
    size_t n = make_idx (buf, TT_IDX_UINT8, 3, d3, px, sizeof px);
    const char *p = tmp_path (gz ? "u8.idx.gz" : "u8.idx");
    CHECK (write_file (p, buf, n, gz) == 0, "write %s", p);
    same_as_load (p, gz ? "uint8, gzip" : "uint8, plain");
    n = make_idx (buf, TT_IDX_INT32, 2, d2, i32, sizeof i32);
    p = tmp_path (gz ? "i32.idx.gz" : "i32.idx");
    CHECK (write_file (p, buf, n, gz) == 0, "write %s", p);
    same_as_load (p, gz ? "int32, gzip" : "int32, plain");
    n = make_idx (buf, TT_IDX_FLOAT64, 1, d1, f64, sizeof f64);
    p = tmp_path (gz ? "f64.idx.gz" : "f64.idx");
    CHECK (write_file (p, buf, n, gz) == 0, "write %s", p);
    same_as_load (p, gz ? "float64, gzip" : "float64, plain");
  }
}

/* bytes refused by both readers, with the same message */
static void
expect_same_failure (const char *name, const void *bytes, size_t len, int gz,
    const char *must_contain)
{
  const char *path = tmp_path (name);
  char e1[512] = "", e2[512] = "";
  tt_idx idx;
  tt_idx_file f;
  if (bytes)
    CHECK (write_file (path, bytes, len, gz) == 0, "write %s", path);
  CHECK (tt_idx_load (path, &idx, e1, sizeof e1) == -1, "%s: load fails", name);
  CHECK (tt_idx_file_open (path, &f, e2, sizeof e2) == -1, "%s: open fails",
      name);
  CHECK (!strcmp (e1, e2), "%s: same message [%s] [%s]", name, e1, e2);
  CHECK (strstr (e2, path) && strstr (e2, must_contain), "%s: [%s]", name, e2);
  CHECK (f.fd == -1 && f.path == NULL, "%s: cleared", name);
  tt_idx_file_close (&f);
}

static void
test_failures (void)
{
  uint8_t buf[256], px[12] = { 0 };
  const uint32_t d3[3] = { 2, 2, 3 };
  size_t n = make_idx (buf, TT_IDX_UINT8, 3, d3, px, sizeof px);
  expect_same_failure ("trunc.idx", buf, n - 1, 0, "truncated: header "
      "promises 12 data bytes, file has 11");
  expect_same_failure ("trunc.idx.gz", buf, n - 1, 1, "truncated: header "
      "promises 12 data bytes, file has 11");
  buf[n] = 9;
  expect_same_failure ("trailing.idx", buf, n + 1, 0, "trailing bytes");
  expect_same_failure ("trailing.idx.gz", buf, n + 1, 1, "trailing bytes");
  expect_same_failure ("head.idx", buf, 6, 0, "truncated IDX header");
  expect_same_failure ("empty.idx", buf, 0, 0, "empty file");
  buf[0] = 1;
  expect_same_failure ("magic.idx", buf, n, 0, "bad IDX magic");
  expect_same_failure ("missing.idx", NULL, 0, 0, "cannot open");
  /* a gzip file cut before its trailer */
  buf[0] = 0;
  const char *gzp = tmp_path ("cut.idx.gz");
  CHECK (write_file (gzp, buf, n, 1) == 0, "write");
  struct stat st;
  CHECK (stat (gzp, &st) == 0 && truncate (gzp, st.st_size - 4) == 0, "cut");
  expect_same_failure ("cut.idx.gz", NULL, 0, 0, "");
}

/* A gzipped file leaves nothing in $TMPDIR, open or closed; its fd is an
 * unnamed file. */
static void
test_temporary (void)
{
  uint8_t buf[4096], px[50 * 4 * 4];
  const uint32_t d3[3] = { 50, 4, 4 };
  for (size_t i = 0; i < sizeof px; i++)
    px[i] = (uint8_t) i;
  size_t n = make_idx (buf, TT_IDX_UINT8, 3, d3, px, sizeof px);
  const char *p = tmp_path ("t.idx.gz");
  char err[512] = "";
  CHECK (write_file (p, buf, n, 1) == 0, "write");
  const char *old = getenv ("TMPDIR");
  char *saved = old ? strdup (old) : NULL;
  setenv ("TMPDIR", tmpfiles, 1);
  tt_idx_file f;
  CHECK (tt_idx_file_open (p, &f, err, sizeof err) == 0, "%s", err);
  CHECK (f.decompressed && f.data_offset == 0, "decompressed");
  CHECK (count_entries (tmpfiles) == 0, "nothing named in $TMPDIR while "
      "open (%d entries)", count_entries (tmpfiles));
  char link[64], target[512] = "";
  snprintf (link, sizeof link, "/proc/self/fd/%d", f.fd);
  ssize_t len = readlink (link, target, sizeof target - 1);
  if (len > 0) {
    target[len] = '\0';
    CHECK (strstr (target, tmpfiles) && strstr (target, "(deleted)"),
        "the temporary is in $TMPDIR and unlinked: %s", target);
  }
  uint8_t got[16];
  CHECK (tt_idx_file_read (&f, 49, 1, got, err, sizeof err) == 0
      && !memcmp (got, px + 49 * 16, 16), "last sample");
  tt_idx_file_close (&f);
  CHECK (count_entries (tmpfiles) == 0, "nothing left after close");
  /* an unusable $TMPDIR is an error naming it and the file */
  setenv ("TMPDIR", "/nonexistent-tt-dir", 1);
  CHECK (tt_idx_file_open (p, &f, err, sizeof err) == -1
      && strstr (err, p) && strstr (err, "/nonexistent-tt-dir"),
      "bad TMPDIR: %s", err);
  if (saved)
    setenv ("TMPDIR", saved, 1);
  else
    unsetenv ("TMPDIR");
  free (saved);
}

/* A plain file truncated (or rewritten shorter) while open: the read that
 * reaches past its new end fails with a message, the others still work. */
static void
test_truncated_while_open (void)
{
  uint8_t buf[4096], px[100 * 8];
  const uint32_t d2[2] = { 100, 8 };
  for (size_t i = 0; i < sizeof px; i++)
    px[i] = (uint8_t) (i / 8);
  size_t n = make_idx (buf, TT_IDX_UINT8, 2, d2, px, sizeof px);
  const char *p = tmp_path ("shrink.idx");
  char err[512] = "";
  CHECK (write_file (p, buf, n, 0) == 0, "write");
  tt_idx_file f;
  CHECK (tt_idx_file_open (p, &f, err, sizeof err) == 0, "%s", err);
  CHECK (truncate (p, (off_t) (n / 2)) == 0, "truncate");
  uint8_t got[8];
  CHECK (tt_idx_file_read (&f, 3, 1, got, err, sizeof err) == 0
      && got[0] == 3, "a sample before the cut");
  err[0] = '\0';
  CHECK (tt_idx_file_read (&f, 99, 1, got, err, sizeof err) == -1,
      "past the cut fails");
  CHECK (strstr (err, p) && strstr (err, "truncated or replaced"), "[%s]", err);
  char ends[64];
  snprintf (ends, sizeof ends, "the file ends at byte %zu ", n / 2);
  CHECK (strstr (err, ends) != NULL, "its new end: [%s]", err);
  tt_idx_file_close (&f);
}

static void
test_pair (void)
{
  uint8_t buf[256], px[12] = { 0 }, lab[3] = { 0 };
  const uint32_t d3[3] = { 2, 2, 3 }, d1[1] = { 3 }, d1b[1] = { 2 };
  char err[256] = "", e2[256] = "";
  tt_idx_file im, lb;
  tt_idx a, b;
  size_t n = make_idx (buf, TT_IDX_UINT8, 3, d3, px, sizeof px);
  CHECK (write_file (tmp_path ("pi.idx"), buf, n, 0) == 0, "write");
  n = make_idx (buf, TT_IDX_UINT8, 1, d1, lab, 3);
  CHECK (write_file (tmp_path ("pl.idx"), buf, n, 0) == 0, "write");
  CHECK (tt_idx_file_open (tmp_path ("pi.idx"), &im, err, sizeof err) == 0
      && tt_idx_file_open (tmp_path ("pl.idx"), &lb, err, sizeof err) == 0,
      "%s", err);
  CHECK (tt_idx_load (tmp_path ("pi.idx"), &a, err, sizeof err) == 0
      && tt_idx_load (tmp_path ("pl.idx"), &b, err, sizeof err) == 0, "%s",
      err);
  CHECK (tt_idx_file_check_pair (&im, &lb, err, sizeof err) == -1
      && tt_idx_check_pair (&a, &b, e2, sizeof e2) == -1 && !strcmp (err, e2)
      && strstr (err, "count mismatch: 2 images, 3 labels"), "[%s]", err);
  tt_idx_file_close (&lb);
  tt_idx_clear (&b);
  n = make_idx (buf, TT_IDX_UINT8, 1, d1b, lab, 2);
  CHECK (write_file (tmp_path ("pl.idx"), buf, n, 0) == 0, "write");
  CHECK (tt_idx_file_open (tmp_path ("pl.idx"), &lb, err, sizeof err) == 0,
      "%s", err);
  CHECK (tt_idx_file_check_pair (&im, &lb, err, sizeof err) == 0, "pair");
  CHECK (tt_idx_file_check_pair (&lb, &im, err, sizeof err) == -1
      && strstr (err, "1-D uint8"), "[%s]", err);
  tt_idx_file_close (&im);
  tt_idx_file_close (&lb);
  tt_idx_clear (&a);
}

static void
test_fashion_mnist (void)
{
  const char *p = FMNIST_DIR "/t10k-images-idx3-ubyte.gz";
  if (access (p, R_OK) != 0) {
    printf ("# skipped: %s not installed\n", p);
    return;
  }
  same_as_load (p, "Fashion-MNIST t10k images");
  same_as_load (FMNIST_DIR "/t10k-labels-idx1-ubyte.gz",
      "Fashion-MNIST t10k labels");
}

static void
cleanup (void)
{
  static const char *names[] = {
    "u8.idx", "u8.idx.gz", "i32.idx", "i32.idx.gz", "f64.idx", "f64.idx.gz",
    "trunc.idx", "trunc.idx.gz", "trailing.idx", "trailing.idx.gz",
    "head.idx", "empty.idx", "magic.idx", "cut.idx.gz", "t.idx.gz",
    "shrink.idx", "pi.idx", "pl.idx",
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    unlink (tmp_path (names[i]));
  rmdir (tmpfiles);
  if (rmdir (tmpdir) != 0)
    printf ("# note: could not remove %s\n", tmpdir);
}

int
main (void)
{
  snprintf (tmpdir, sizeof tmpdir, "/tmp/tt-idx-file-test-XXXXXX");
  if (mkdtemp (tmpdir) == NULL) {
    perror ("mkdtemp");
    printf ("0 passed, 1 failed\n");
    return 1;
  }
  snprintf (tmpfiles, sizeof tmpfiles, "%s/tmp", tmpdir);
  if (mkdir (tmpfiles, 0700) != 0) {
    perror ("mkdir");
    printf ("0 passed, 1 failed\n");
    return 1;
  }
  TT_TEST_RUN (test_same_samples);
  TT_TEST_RUN (test_failures);
  TT_TEST_RUN (test_temporary);
  TT_TEST_RUN (test_truncated_while_open);
  TT_TEST_RUN (test_pair);
  TT_TEST_RUN (test_fashion_mnist);
  cleanup ();
  return tt_test_summary ();
}
