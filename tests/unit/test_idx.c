/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test of the IDX reader. Builds its inputs itself in a private temp
 * directory so it needs no fixtures, and additionally reads the real
 * Fashion-MNIST test set when the Debian package is installed.
 */
#define _DEFAULT_SOURCE         /* mkdtemp, truncate */

#include "tt_idx.h"
#include "tt_test.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static char tmpdir[64];

/* One printed line per check, so a failing run shows what passed before;
 * counted by tt_test.h, which prints the summary. */
static void
check (int ok, const char *fmt, ...)
{
  va_list ap;

  printf ("%s - ", ok ? "ok" : "FAIL");
  va_start (ap, fmt);
  vprintf (fmt, ap);
  va_end (ap);
  printf ("\n");
  if (ok)
    tt_test_passed++;
  else
    tt_test_failed++;
}

static const char *
tmp_path (const char *name)
{
  static char buf[4][256];
  static int slot;
  char *p = buf[slot++ % 4];

  snprintf (p, sizeof (buf[0]), "%s/%s", tmpdir, name);
  return p;
}

static int
write_file (const char *path, const void *bytes, size_t len, int gz)
{
  if (gz) {
    gzFile f = gzopen (path, "wb");
    int ok;

    if (f == NULL)
      return -1;
    ok = len == 0 || gzwrite (f, bytes, (unsigned) len) == (int) len;
    return (gzclose (f) == Z_OK && ok) ? 0 : -1;
  } else {
    FILE *f = fopen (path, "wb");
    int ok;

    if (f == NULL)
      return -1;
    ok = fwrite (bytes, 1, len, f) == len;
    return (fclose (f) == 0 && ok) ? 0 : -1;
  }
}

/* Serialises an IDX header followed by payload into buf; returns its
 * length. Dims are written big-endian as the format demands. */
static size_t
make_idx (uint8_t * buf, uint8_t type, int ndims, const uint32_t * dims,
    const void *payload, size_t payload_len)
{
  size_t n = 0;
  int i;

  buf[n++] = 0;
  buf[n++] = 0;
  buf[n++] = type;
  buf[n++] = (uint8_t) ndims;
  for (i = 0; i < ndims; i++) {
    buf[n++] = (uint8_t) (dims[i] >> 24);
    buf[n++] = (uint8_t) (dims[i] >> 16);
    buf[n++] = (uint8_t) (dims[i] >> 8);
    buf[n++] = (uint8_t) dims[i];
  }
  if (payload_len)
    memcpy (buf + n, payload, payload_len);
  return n + payload_len;
}

/* Every failure must leave the struct empty and name the file, since the
 * caller typically just prints err. */
static void
expect_fail (const char *name, const void *bytes, size_t len, int gz,
    const char *what, const char *must_contain)
{
  const char *path = tmp_path (name);
  char err[512] = "";
  tt_idx idx;
  int rc;

  if (bytes != NULL && write_file (path, bytes, len, gz) != 0) {
    check (0, "%s: could not write %s", what, path);
    return;
  }
  rc = tt_idx_load (path, &idx, err, sizeof (err));
  check (rc == -1, "%s: load fails", what);
  check (strstr (err, path) != NULL, "%s: message names the file [%s]",
      what, err);
  if (must_contain)
    check (strstr (err, must_contain) != NULL,
        "%s: message mentions '%s'", what, must_contain);
  check (idx.data == NULL && idx.count == 0 && idx.ndims == 0,
      "%s: output left empty", what);
  tt_idx_clear (&idx);
}

static void
test_valid_uint8 (int gz)
{
  const char *kind = gz ? "gzip" : "plain";
  const char *path = tmp_path (gz ? "img.idx3.gz" : "img.idx3");
  uint32_t dims[3] = { 3, 2, 2 };
  uint8_t payload[12], buf[64];
  char err[256] = "";
  tt_idx idx;
  size_t len;
  int i;

  for (i = 0; i < 12; i++)
    payload[i] = (uint8_t) (i * 20 + 1);
  len = make_idx (buf, TT_IDX_UINT8, 3, dims, payload, sizeof (payload));
  if (write_file (path, buf, len, gz) != 0) {
    check (0, "%s uint8: write %s", kind, path);
    return;
  }
  check (tt_idx_load (path, &idx, err, sizeof (err)) == 0,
      "%s uint8 3x2x2: loads [%s]", kind, err);
  check (idx.type == TT_IDX_UINT8 && idx.ndims == 3, "%s uint8: type, ndims",
      kind);
  check (idx.dims[0] == 3 && idx.dims[1] == 2 && idx.dims[2] == 2 &&
      idx.dims[3] == 0, "%s uint8: dims 3x2x2", kind);
  check (idx.count == 3 && idx.item_bytes == 4,
      "%s uint8: count 3, item_bytes 4", kind);
  check (idx.data != NULL && memcmp (idx.data, payload, 12) == 0,
      "%s uint8: data matches", kind);
  tt_idx_clear (&idx);
  check (idx.data == NULL && idx.count == 0, "%s uint8: clear empties", kind);
  tt_idx_clear (&idx);
  check (1, "%s uint8: second clear is harmless", kind);
}

static void
test_valid_types (void)
{
  char err[256] = "";
  uint8_t buf[128];
  tt_idx idx;
  size_t len;

  {
    uint32_t d[2] = { 2, 2 };
    /* big-endian 258, -2, 0x7fff, -32768 */
    const uint8_t p[] = { 0x01, 0x02, 0xff, 0xfe, 0x7f, 0xff, 0x80, 0x00 };
    const char *path = tmp_path ("i16.idx");
    int16_t *v;

    len = make_idx (buf, TT_IDX_INT16, 2, d, p, sizeof (p));
    write_file (path, buf, len, 0);
    check (tt_idx_load (path, &idx, err, sizeof (err)) == 0,
        "int16 2x2: loads [%s]", err);
    v = (int16_t *) idx.data;
    check (v && idx.item_bytes == 4 && v[0] == 258 && v[1] == -2 &&
        v[2] == 32767 && v[3] == -32768, "int16: host-order values");
    tt_idx_clear (&idx);
  }
  {
    uint32_t d[1] = { 2 };
    const uint8_t p[] = { 0x01, 0x02, 0x03, 0x04, 0xff, 0xff, 0xff, 0xfd };
    const char *path = tmp_path ("i32.idx.gz");
    int32_t *v;

    len = make_idx (buf, TT_IDX_INT32, 1, d, p, sizeof (p));
    write_file (path, buf, len, 1);
    check (tt_idx_load (path, &idx, err, sizeof (err)) == 0,
        "int32 gzip: loads [%s]", err);
    v = (int32_t *) idx.data;
    check (v && idx.item_bytes == 4 && v[0] == 0x01020304 && v[1] == -3,
        "int32: host-order values");
    tt_idx_clear (&idx);
  }
  {
    uint32_t d[2] = { 1, 2 };
    /* 1.5f = 0x3fc00000, -0.25f = 0xbe800000 */
    const uint8_t p[] = { 0x3f, 0xc0, 0, 0, 0xbe, 0x80, 0, 0 };
    const char *path = tmp_path ("f32.idx");
    float *v;

    len = make_idx (buf, TT_IDX_FLOAT32, 2, d, p, sizeof (p));
    write_file (path, buf, len, 0);
    check (tt_idx_load (path, &idx, err, sizeof (err)) == 0,
        "float32: loads [%s]", err);
    v = (float *) idx.data;
    check (v && idx.count == 1 && idx.item_bytes == 8 && v[0] == 1.5f &&
        v[1] == -0.25f, "float32: host-order values");
    tt_idx_clear (&idx);
  }
  {
    uint32_t d[1] = { 1 };
    /* -2.25 = 0xc002000000000000 */
    const uint8_t p[] = { 0xc0, 0x02, 0, 0, 0, 0, 0, 0 };
    const char *path = tmp_path ("f64.idx");
    double *v;

    len = make_idx (buf, TT_IDX_FLOAT64, 1, d, p, sizeof (p));
    write_file (path, buf, len, 0);
    check (tt_idx_load (path, &idx, err, sizeof (err)) == 0,
        "float64: loads [%s]", err);
    v = (double *) idx.data;
    check (v && idx.item_bytes == 8 && v[0] == -2.25,
        "float64: host-order value");
    tt_idx_clear (&idx);
  }
  {
    uint32_t d[4] = { 2, 1, 1, 1 };
    const uint8_t p[] = { 0x80, 0x7f };
    const char *path = tmp_path ("i8.idx");

    len = make_idx (buf, TT_IDX_INT8, 4, d, p, sizeof (p));
    write_file (path, buf, len, 0);
    check (tt_idx_load (path, &idx, err, sizeof (err)) == 0,
        "int8 4-D: loads [%s]", err);
    check (idx.data && idx.ndims == 4 && idx.item_bytes == 1 &&
        (int8_t) idx.data[0] == -128 && (int8_t) idx.data[1] == 127,
        "int8 4-D: values");
    tt_idx_clear (&idx);
  }
}

static void
test_malformed (void)
{
  uint8_t buf[256], payload[64];
  size_t len;

  memset (payload, 7, sizeof (payload));

  {
    uint32_t d[1] = { 4 };
    len = make_idx (buf, TT_IDX_UINT8, 1, d, payload, 4);
    buf[0] = 0x1f;
    expect_fail ("badmagic.idx", buf, len, 0, "bad magic", "magic");
  }
  {
    uint32_t d[1] = { 4 };
    len = make_idx (buf, 0x07, 1, d, payload, 4);
    expect_fail ("badtype.idx", buf, len, 0, "unknown type", "type");
  }
  {
    len = make_idx (buf, TT_IDX_UINT8, 0, NULL, NULL, 0);
    expect_fail ("zerondims.idx", buf, len, 0, "0 dimensions", "dimensions");
  }
  {
    uint32_t d[3] = { 2, 0, 3 };
    len = make_idx (buf, TT_IDX_UINT8, 3, d, NULL, 0);
    expect_fail ("zerodim.idx", buf, len, 0, "zero dimension", "zero");
  }
  {
    uint32_t d[5] = { 1, 1, 1, 1, 2 };
    len = make_idx (buf, TT_IDX_UINT8, 5, d, payload, 2);
    expect_fail ("fivedims.idx", buf, len, 0, "5 dimensions", "5 dim");
  }
  {
    uint32_t d[2] = { 4, 4 };
    len = make_idx (buf, TT_IDX_UINT8, 2, d, payload, 10);
    expect_fail ("trunc.idx", buf, len, 0, "truncated data", "16");
    expect_fail ("trunc.idx", NULL, 0, 0, "truncated data (actual)", " 10 ");
  }
  {
    uint32_t d[2] = { 4, 4 };
    len = make_idx (buf, TT_IDX_UINT8, 2, d, payload, 10);
    expect_fail ("trunc.idx.gz", buf, len, 1, "truncated data, gzip", "16");
  }
  {
    uint32_t d[3] = { 4, 4, 4 };
    len = make_idx (buf, TT_IDX_UINT8, 3, d, NULL, 0);
    expect_fail ("trunchead.idx", buf, len - 3, 0, "truncated header",
        "header");
  }
  {
    uint32_t d[2] = { 2, 2 };
    len = make_idx (buf, TT_IDX_UINT8, 2, d, payload, 5);
    expect_fail ("trailing.idx", buf, len, 0, "trailing bytes", "trailing");
    expect_fail ("trailing.idx.gz", buf, len, 1, "trailing bytes, gzip",
        "trailing");
  }
  expect_fail ("empty.idx", "", 0, 0, "empty file", "empty");
  expect_fail ("empty.idx.gz", "", 0, 1, "empty gzip file", "empty");
  expect_fail ("does-not-exist.idx", NULL, 0, 0, "missing file", "open");
  {
    /* 65536 x 65536 x 2 bytes = 8 GiB: must be refused before allocating. */
    uint32_t d[3] = { 65536, 65536, 2 };
    len = make_idx (buf, TT_IDX_UINT8, 3, d, NULL, 0);
    expect_fail ("huge.idx", buf, len, 0, "over 4 GiB", "too large");
  }
  {
    /* Would wrap a naive 64-bit product. */
    uint32_t d[4] = { 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu };
    len = make_idx (buf, TT_IDX_FLOAT64, 4, d, NULL, 0);
    expect_fail ("overflow.idx", buf, len, 0, "overflowing dims", "too large");
  }
  {
    /* A gzip stream cut short: zlib must report it, not us read garbage. */
    uint8_t big[12 + 4096];
    uint32_t d[2] = { 64, 64 };
    const char *path = tmp_path ("cut.idx.gz");
    FILE *f;
    long size;
    int i;

    for (i = 0; i < 4096; i++)
      big[12 + i] = (uint8_t) (i * 7919u >> 3);
    make_idx (big, TT_IDX_UINT8, 2, d, NULL, 0);
    write_file (path, big, 12 + 4096, 1);
    f = fopen (path, "rb");
    fseek (f, 0, SEEK_END);
    size = ftell (f);
    fclose (f);
    if (truncate (path, size / 2) != 0)
      check (0, "cut gzip: truncate");
    expect_fail ("cut.idx.gz", NULL, 0, 0, "gzip stream cut short", "4096");
    /* all the data there, only the 8-byte trailer (CRC-32, length)
     * missing: the data was never checked, so it is refused as such */
    write_file (path, big, 12 + 4096, 1);
    f = fopen (path, "rb");
    fseek (f, 0, SEEK_END);
    size = ftell (f);
    fclose (f);
    if (truncate (path, size - 8) != 0)
      check (0, "no trailer: truncate");
    expect_fail ("cut.idx.gz", NULL, 0, 0, "gzip trailer missing",
        "truncated gzip file");
  }
  {
    /* A directory opens fine on Linux but fails at read. */
    expect_fail (".", NULL, 0, 0, "directory", NULL);
  }
}

static void
test_pair (void)
{
  uint8_t buf[128], payload[64];
  uint32_t di[3] = { 3, 2, 2 }, dl[1] = { 3 }, dl4[1] = { 4 }, dl2[2] =
      { 3, 1 };
  const char *pi = tmp_path ("p-images.idx");
  const char *pl = tmp_path ("p-labels.idx");
  const char *pl4 = tmp_path ("p-labels4.idx");
  const char *pl2 = tmp_path ("p-labels2d.idx");
  tt_idx im, lb, lb4, lb2, lbi;
  char err[256] = "";
  size_t len;

  memset (payload, 1, sizeof (payload));
  write_file (pi, buf, make_idx (buf, TT_IDX_UINT8, 3, di, payload, 12), 0);
  write_file (pl, buf, make_idx (buf, TT_IDX_UINT8, 1, dl, payload, 3), 0);
  write_file (pl4, buf, make_idx (buf, TT_IDX_UINT8, 1, dl4, payload, 4), 0);
  write_file (pl2, buf, make_idx (buf, TT_IDX_UINT8, 2, dl2, payload, 3), 0);
  len = make_idx (buf, TT_IDX_INT32, 1, dl, payload, 12);
  write_file (tmp_path ("p-labels-i32.idx"), buf, len, 0);

  check (tt_idx_load (pi, &im, err, sizeof (err)) == 0 &&
      tt_idx_load (pl, &lb, err, sizeof (err)) == 0 &&
      tt_idx_load (pl4, &lb4, err, sizeof (err)) == 0 &&
      tt_idx_load (pl2, &lb2, err, sizeof (err)) == 0 &&
      tt_idx_load (tmp_path ("p-labels-i32.idx"), &lbi, err,
          sizeof (err)) == 0, "pair: inputs load [%s]", err);
  err[0] = '\0';
  check (tt_idx_check_pair (&im, &lb, err, sizeof (err)) == 0,
      "pair: 3 images + 3 labels accepted [%s]", err);
  err[0] = '\0';
  check (tt_idx_check_pair (&im, &lb4, err, sizeof (err)) == -1 &&
      strstr (err, "3 images") && strstr (err, "4 labels"),
      "pair: count mismatch rejected with both counts [%s]", err);
  err[0] = '\0';
  check (tt_idx_check_pair (&im, &lb2, err, sizeof (err)) == -1 &&
      strstr (err, "1-D"), "pair: 2-D labels rejected [%s]", err);
  err[0] = '\0';
  check (tt_idx_check_pair (&im, &lbi, err, sizeof (err)) == -1 &&
      strstr (err, "uint8"), "pair: int32 labels rejected [%s]", err);
  err[0] = '\0';
  check (tt_idx_check_pair (NULL, &lb, err, sizeof (err)) == -1,
      "pair: NULL images rejected [%s]", err);
  tt_idx_clear (&im);
  tt_idx_clear (&lb);
  tt_idx_clear (&lb4);
  tt_idx_clear (&lb2);
  tt_idx_clear (&lbi);
}

static void
test_err_buffer (void)
{
  tt_idx idx;
  char tiny[8];

  check (tt_idx_load (tmp_path ("missing"), &idx, NULL, 0) == -1,
      "NULL err buffer: fails without crashing");
  memset (tiny, 'x', sizeof (tiny));
  check (tt_idx_load (tmp_path ("missing"), &idx, tiny, sizeof (tiny)) == -1
      && tiny[7] == '\0', "small err buffer: truncated and terminated");
  check (tt_idx_load (NULL, &idx, NULL, 0) == -1, "NULL path rejected");
  check (tt_idx_load (tmp_path ("img.idx3"), NULL, NULL, 0) == -1,
      "NULL output rejected");
}

static void
test_fashion_mnist (void)
{
  const char *ip = FMNIST_DIR "/t10k-images-idx3-ubyte.gz";
  const char *lp = FMNIST_DIR "/t10k-labels-idx1-ubyte.gz";
  char err[512] = "";
  tt_idx im, lb;
  size_t i, bad = 0;

  if (access (ip, R_OK) != 0) {
    printf ("skip - %s not installed (dataset-fashion-mnist)\n", ip);
    return;
  }
  check (tt_idx_load (ip, &im, err, sizeof (err)) == 0,
      "fashion-mnist t10k images load [%s]", err);
  check (im.type == TT_IDX_UINT8 && im.ndims == 3 && im.count == 10000 &&
      im.dims[1] == 28 && im.dims[2] == 28 && im.item_bytes == 784,
      "fashion-mnist t10k images: uint8 10000 x 28 x 28");
  check (tt_idx_load (lp, &lb, err, sizeof (err)) == 0,
      "fashion-mnist t10k labels load [%s]", err);
  check (lb.type == TT_IDX_UINT8 && lb.ndims == 1 && lb.count == 10000,
      "fashion-mnist t10k labels: uint8 10000");
  for (i = 0; lb.data && i < lb.count; i++)
    bad += lb.data[i] > 9;
  check (lb.data && bad == 0, "fashion-mnist t10k labels all in 0..9");
  err[0] = '\0';
  check (tt_idx_check_pair (&im, &lb, err, sizeof (err)) == 0,
      "fashion-mnist t10k images/labels pair [%s]", err);
  tt_idx_clear (&im);
  tt_idx_clear (&lb);
}

/* Only removes what the test created: a flat directory of regular files. */
static void
cleanup (void)
{
  static const char *names[] = {
    "img.idx3", "img.idx3.gz", "i16.idx", "i32.idx.gz", "f32.idx", "f64.idx",
    "i8.idx", "badmagic.idx", "badtype.idx", "zerondims.idx", "zerodim.idx",
    "fivedims.idx", "trunc.idx", "trunc.idx.gz", "trunchead.idx",
    "trailing.idx", "trailing.idx.gz", "empty.idx", "empty.idx.gz",
    "huge.idx", "overflow.idx", "cut.idx.gz", "p-images.idx",
    "p-labels.idx", "p-labels4.idx", "p-labels2d.idx", "p-labels-i32.idx",
  };
  size_t i;

  for (i = 0; i < sizeof (names) / sizeof (names[0]); i++)
    unlink (tmp_path (names[i]));
  if (rmdir (tmpdir) != 0)
    printf ("# note: could not remove %s\n", tmpdir);
}

static void
test_valid_uint8_plain (void)
{
  test_valid_uint8 (0);
}

static void
test_valid_uint8_gzip (void)
{
  test_valid_uint8 (1);
}

int
main (void)
{
  snprintf (tmpdir, sizeof (tmpdir), "/tmp/tt-idx-test-XXXXXX");
  if (mkdtemp (tmpdir) == NULL) {
    perror ("mkdtemp");
    printf ("0 passed, 1 failed\n");
    return 1;
  }

  TT_TEST_RUN (test_valid_uint8_plain);
  TT_TEST_RUN (test_valid_uint8_gzip);
  TT_TEST_RUN (test_valid_types);
  TT_TEST_RUN (test_malformed);
  TT_TEST_RUN (test_pair);
  TT_TEST_RUN (test_err_buffer);
  TT_TEST_RUN (test_fashion_mnist);
  cleanup ();

  return tt_test_summary ();
}
