/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer train --feature-cache BYTES | --feature-cache-file FILE:
 * the frozen prefix's outputs (the engine's feature cache,
 * tt_model_feature_boundary) of each training sample, kept during the
 * run's first epoch and used in the next ones, whose steps then skip the
 * prefix (and the reading of their images). The data set is fed in its
 * order every epoch (cli_train.c): a sample's record is found by its
 * index. In memory, the records of the first samples that fit in BYTES
 * (whole batches); in a file, every sample's, written atomically during
 * the first epoch behind a header (the model's fingerprint and the
 * boundary's sizes, checked when it is read back), and removed at the
 * end of the run.
 */
#include "cli.h"
#include "cli_number.h"
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FCACHE_MAGIC "TTFCACHE"
#define FCACHE_VERSION 1u
#define FCACHE_HEADER 64        /* bytes before the first record */

typedef struct
{
  char magic[8];
  uint32_t version, tensors;
  uint64_t floats_per_sample, fingerprint, samples;
  uint32_t batch, prefix_layers;
} fcache_header;
_Static_assert (sizeof (fcache_header) <= FCACHE_HEADER, "header too big");

/* the header this run writes and expects */
static void
fcache_header_make (const cli_fcache * c, fcache_header * h)
{
  memset (h, 0, sizeof *h);
  memcpy (h->magic, FCACHE_MAGIC, 8);
  h->version = FCACHE_VERSION;
  h->tensors = c->boundary.tensors;
  h->floats_per_sample = c->boundary.floats_per_sample;
  h->fingerprint = c->boundary.fingerprint;
  h->samples = c->capacity;
  h->batch = c->batch;
  h->prefix_layers = c->boundary.prefix_layers;
}

/* An existing FILE that is not a feature cache is not overwritten; one
 * that is (of this model or another) is rebuilt, never read before. */
static int
fcache_check_existing (const char *path)
{
  int fd = open (path, O_RDONLY);
  if (fd < 0)
    return errno == ENOENT ? 0 : cli_fail ("--feature-cache-file %s: %s",
        path, strerror (errno));
  char magic[8] = { 0 };
  const ssize_t got = read (fd, magic, sizeof magic);
  close (fd);
  if (got != (ssize_t) sizeof magic || memcmp (magic, FCACHE_MAGIC, 8))
    return cli_fail ("--feature-cache-file %s: the file exists and is not a "
        "feature cache: not overwritten (give a new path, or remove it)", path);
  return 0;
}

int
cli_fcache_open (cli_fcache * c, const cli_options * o, tt_model * m,
    uint32_t samples)
{
  memset (c, 0, sizeof *c);
  c->fd = -1;
  if (!o->feature_cache && !o->feature_cache_file)
    return 0;
  tt_error err;
  if (tt_model_feature_boundary (m, &c->boundary, &err))
    return cli_fail ("%s", err.message);
  c->batch = tt_model_batch_size (m);
  c->record = c->boundary.floats_per_sample * sizeof (float);
  c->samples = samples;
  c->path = o->feature_cache_file;
  if (c->path) {
    if (fcache_check_existing (c->path))
      return 1;
    c->capacity = samples;
  } else {
    const uint64_t fit = o->feature_cache / c->record;
    c->capacity = fit >= samples ? samples :
        (uint32_t) (fit / c->batch * c->batch);
    if (!c->capacity)
      return cli_fail ("--feature-cache %" PRIu64 ": a sample's record is "
          "%zu bytes, a batch's %zu: the cache would hold none",
          o->feature_cache, c->record, c->record * c->batch);
    c->mem = malloc ((size_t) c->capacity * c->record);
    if (!c->mem)
      return cli_fail ("--feature-cache: out of memory for %" PRIu64
          " bytes", (uint64_t) c->capacity * c->record);
  }
  c->buf = malloc (c->batch * c->record);
  c->keep = calloc (c->batch, sizeof *c->keep);
  c->from = calloc (c->batch, sizeof *c->from);
  if (!c->buf || !c->keep || !c->from)
    return cli_fail ("--feature-cache: out of memory");
  if (c->path) {
    c->writer = calloc (1, sizeof (tt_atomic_file));
    if (!c->writer)
      return cli_fail ("--feature-cache-file: out of memory");
    if (tt_atomic_file_open (c->writer, c->path, &err)) {
      free (c->writer);
      c->writer = NULL;
      return cli_fail ("--feature-cache-file: %s", err.message);
    }
    const char zero[FCACHE_HEADER] = { 0 };
    if (tt_atomic_file_write (c->writer, zero, sizeof zero, &err))
      return cli_fail ("--feature-cache-file: %s", err.message);
  }
  printf ("# feature cache: %u of %u samples (%zu bytes each, %" PRIu64
      " bytes) in %s, after a frozen prefix of %u layers%s\n", c->capacity,
      samples, c->record, (uint64_t) c->capacity * c->record,
      c->path ? c->path : "memory",
      c->boundary.prefix_layers, c->capacity < samples ?
      "; the others' prefix runs every epoch" : "");
  return 0;
}

/* after the first epoch: the file committed, then opened and its header
 * checked */
static int
fcache_seal (cli_fcache * c)
{
  if (!c->path)
    return 0;
  tt_error err;
  fcache_header h;
  fcache_header_make (c, &h);
  tt_atomic_file *w = c->writer;
  c->writer = NULL;
  tt_status st = tt_atomic_file_pwrite (w, 0, &h, sizeof h, &err);
  if (!st)
    st = tt_atomic_file_commit (w, &err);
  else
    tt_atomic_file_abort (w);
  free (w);
  if (st)
    return cli_fail ("--feature-cache-file: %s", err.message);
  c->written = true;
  c->fd = open (c->path, O_RDONLY);
  fcache_header got;
  if (c->fd < 0 || pread (c->fd, &got, sizeof got, 0) != (ssize_t) sizeof got)
    return cli_fail ("--feature-cache-file %s: cannot read it back: %s",
        c->path, strerror (errno));
  if (memcmp (&got, &h, sizeof h))
    return cli_fail ("--feature-cache-file %s: its header does not match the "
        "model (fingerprint %016" PRIx64 ", %" PRIu64 " floats a sample, %"
        PRIu64 " samples; expected %016" PRIx64 ", %" PRIu64 ", %" PRIu64
        "): changed by another program? Not used", c->path, got.fingerprint,
        got.floats_per_sample, got.samples, h.fingerprint,
        h.floats_per_sample, h.samples);
  return 0;
}

int
cli_fcache_pass_done (cli_fcache * c)
{
  if (!c->record || c->filled)
    return 0;
  c->filled = true;
  return fcache_seal (c);
}

bool
cli_fcache_has (const cli_fcache * c, uint32_t at, uint32_t n)
{
  return c->record && c->filled && at + n <= c->capacity;
}

int
cli_fcache_step (cli_fcache * c, tt_model * m, uint32_t at, uint32_t n,
    const float *labels, tt_batch_result * r)
{
  const float *recs = c->mem ? c->mem + (size_t) at * c->record /
      sizeof (float) : c->buf;
  if (!c->mem) {
    const size_t len = n * c->record;
    const off_t off = FCACHE_HEADER + (off_t) at * (off_t) c->record;
    if (pread (c->fd, c->buf, len, off) != (ssize_t) len)
      return cli_fail ("--feature-cache-file %s: reading samples %u to %u: "
          "%s", c->path, at, at + n - 1, strerror (errno));
  }
  for (uint32_t b = 0; b < n; b++)
    c->from[b] = recs + (size_t) b *c->boundary.floats_per_sample;
  tt_error err;
  if (tt_model_train_batch_cached (m, n, c->from, labels, r, &err))
    return cli_fail ("%s", err.message);
  c->from_cache += n;
  return 0;
}

int
cli_fcache_keep_step (cli_fcache * c, tt_model * m, uint32_t at, uint32_t n,
    const void *const *inputs, const tt_dtype * types, const float *labels,
    tt_batch_result * r)
{
  float *recs = c->mem ? c->mem + (size_t) at * c->record / sizeof (float)
      : c->buf;
  for (uint32_t b = 0; b < n; b++)
    c->keep[b] = at + b < c->capacity ?
        recs + (size_t) b *c->boundary.floats_per_sample : NULL;
  tt_error err;
  if (tt_model_train_batch_keep (m, n, inputs, types, labels, c->keep, r, &err))
    return cli_fail ("%s", err.message);
  if (c->writer && tt_atomic_file_write (c->writer, c->buf, n * c->record,
          &err))
    return cli_fail ("--feature-cache-file: %s", err.message);
  return 0;
}

void
cli_fcache_close (cli_fcache * c)
{
  if (c->record && c->trained)
    printf ("# feature cache: %" PRIu64 " sample steps of %" PRIu64
        " came from the cache\n", c->from_cache, c->trained);
  if (c->writer) {
    tt_atomic_file_abort (c->writer);
    free (c->writer);
  }
  if (c->fd >= 0)
    close (c->fd);
  if (c->written && c->path)
    unlink (c->path);
  free (c->mem);
  free (c->buf);
  free (c->keep);
  free (c->from);
  memset (c, 0, sizeof *c);
  c->fd = -1;
}
