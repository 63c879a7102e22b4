/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tensor_trainer: the feature cache (docs/personalize.md, "Feature
 * cache"), the element's form of tensor-trainer train --feature-cache /
 * --feature-cache-file. With a frozen prefix, the first epoch's training
 * steps keep each sample's boundary values (tt_model_train_batch_keep);
 * later epochs train a batch from them (tt_model_train_batch_cached, the
 * prefix skipped) when the batch's samples are the ones the first epoch
 * had at the same places of the epoch.
 *
 * The stream decides what a later epoch holds (tensor_datasrc
 * shuffle=true orders each epoch anew), so the element checks it: each
 * training sample's input bytes are hashed (64 bits, with its types) at
 * its place in the epoch; a batch whose every sample has the hash of the
 * first epoch's sample at its place (and a record) trains from the
 * cache, any other runs the prefix as without the cache. Validation
 * samples are evaluated as always. The epoch message's cached-samples
 * counts the training samples that came from the cache.
 *
 * In memory (feature-cache=BYTES), the records of the epoch's first
 * samples that fit, in whole batches; in a file (feature-cache-file),
 * every training sample's, written during the first epoch (atomically:
 * committed when the epoch ends) behind the header the command line
 * writes (tools/cli_feature_cache.c), read back by position, removed
 * when the model is freed. */
#include "gsttensortrainer_private.h"
#include "gstttthreads.h"
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define FCACHE_MAGIC "TTFCACHE"
#define FCACHE_VERSION 1u
#define FCACHE_HEADER 64        /* bytes before the first record */

typedef struct
{
  char magic[8];
  guint32 version, tensors;
  guint64 floats_per_sample, fingerprint, samples;
  guint32 batch, prefix_layers;
} FcacheHeader;
G_STATIC_ASSERT (sizeof (FcacheHeader) <= FCACHE_HEADER);

struct _GstTensorTrainerFcache
{
  tt_feature_boundary boundary;
  gsize record;                 /* bytes of a sample's record */
  guint capacity;               /* samples with a record */
  gchar *path;                  /* feature-cache-file, or NULL */
  gfloat *mem;                  /* memory: capacity records */
  gfloat *buf;                  /* a batch of records (file) */
  float **keep;                 /* batch pointers */
  const float **from;
  guint64 *hash;                /* n_train: the first epoch's samples;
                                 * 0: no record */
  tt_atomic_file *writer;       /* the first epoch's file */
  gint fd;                      /* the file, read back */
  gboolean written, filled;
};

/* a sample's input bytes, 64 bits (FNV-1a's primes on 8-byte words,
 * then a final mix); never 0 */
static guint64
fcache_hash (guint64 h, const guint8 * p, gsize len)
{
  gsize i = 0;
  for (; i + 8 <= len; i += 8) {
    guint64 w;
    memcpy (&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < len; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h | 1;
}

static guint64
fcache_sample_hash (GstTtTensorTrainer * self, guint b)
{
  guint64 h = 0xcbf29ce484222325ull;
  for (guint i = 0; i < self->n_inputs; i++) {
    const gsize size = self->in_types[i] == TT_DTYPE_UINT8 ? 1 :
        sizeof (gfloat);
    const gsize bytes = self->in_count[i] * size;
    h = fcache_hash (h ^ (guint64) self->in_types[i], self->in_batch[i] +
        (gsize) b * bytes, bytes);
  }
  return h;
}

static void
fcache_free (GstTensorTrainerFcache * c)
{
  if (c->writer) {
    tt_atomic_file_abort (c->writer);
    g_free (c->writer);
  }
  if (c->fd >= 0)
    close (c->fd);
  if (c->written && c->path)
    unlink (c->path);
  g_free (c->path);
  g_free (c->mem);
  g_free (c->buf);
  g_free (c->keep);
  g_free (c->from);
  g_free (c->hash);
  g_free (c);
}

void
gst_tensor_trainer_fcache_stop (GstTtTensorTrainer * self)
{
  g_clear_pointer (&self->fcache, fcache_free);
  self->fcache_samples = 0;
}

/* An existing file that is not a feature cache is not overwritten. */
static gboolean
fcache_check_existing (GstTtTensorTrainer * self, const gchar * path)
{
  char magic[8] = { 0 };
  int fd = open (path, O_RDONLY);
  if (fd < 0) {
    if (errno == ENOENT)
      return TRUE;
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("feature-cache-file=%s: %s", path, g_strerror (errno)), (NULL));
    return FALSE;
  }
  const ssize_t got = read (fd, magic, sizeof magic);
  close (fd);
  if (got != (ssize_t) sizeof magic || memcmp (magic, FCACHE_MAGIC, 8)) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
        ("feature-cache-file=%s: the file exists and is not a feature "
            "cache: not overwritten (give a new path, or remove it).", path),
        (NULL));
    return FALSE;
  }
  return TRUE;
}

gboolean
gst_tensor_trainer_fcache_start (GstTtTensorTrainer * self)
{
  guint64 bytes, limit;
  gchar *path;
  guint threads, replay;
  gboolean fed;
  tt_error err;

  GST_OBJECT_LOCK (self);
  bytes = self->fcache_bytes;
  path = self->fcache_file && *self->fcache_file ?
      g_strdup (self->fcache_file) : NULL;
  limit = self->memory_limit;
  threads = gst_tt_threads_resolve (self->threads);
  replay = self->replay_size;
  fed = self->federation.broker && *self->federation.broker;
  GST_OBJECT_UNLOCK (self);
  self->fcache_samples = 0;
  if (!bytes && !path)
    return TRUE;
  const gchar *prop = path ? "feature-cache-file" : "feature-cache";
  const gchar *why = NULL;
  if (bytes && path)
    why = "feature-cache and feature-cache-file are both set: the cache is "
        "in memory or in a file, set one";
  else if (threads > 1)
    why = "more than one engine thread (threads): with several the pool "
        "may lay an activation out by the threads' blocks, which a sample's "
        "record does not follow; set threads=1";
  else if (limit)
    why = "memory-limit is set: the prefix's activations may be dropped "
        "and rebuilt; unset memory-limit";
  else if (replay)
    why = "replay-size is set: replayed samples have no place in the epoch "
        "to be cached at; use one or the other";
  else if (fed)
    why = "federation-broker is set: a global model may change the frozen "
        "prefix's weights between epochs";
  else if (self->n_train == 0)
    why = "num-training-samples is 0: there is no epoch of training samples "
        "to cache";
  if (why) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS, ("%s: %s.", prop, why), (NULL));
    g_free (path);
    return FALSE;
  }

  GstTensorTrainerFcache *c = g_new0 (GstTensorTrainerFcache, 1);
  c->fd = -1;
  c->path = path;
  self->fcache = c;
  if (tt_model_feature_boundary (self->model, &c->boundary, &err)) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS, ("%s: %s", prop,
            err.message), ("tt_model_feature_boundary: %s",
            tt_status_name (err.status)));
    goto fail;
  }
  c->record = c->boundary.floats_per_sample * sizeof (gfloat);
  if (c->path) {
    if (!fcache_check_existing (self, c->path))
      goto fail;
    c->capacity = self->n_train;
  } else {
    const guint64 fit = bytes / c->record;
    c->capacity = fit >= self->n_train ? self->n_train :
        (guint) (fit / self->batch * self->batch);
    if (!c->capacity) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("feature-cache=%" G_GUINT64_FORMAT ": a sample's record is %"
              G_GSIZE_FORMAT " bytes, a batch's %" G_GSIZE_FORMAT ": the "
              "cache would hold none.", bytes, c->record,
              c->record * self->batch), (NULL));
      goto fail;
    }
    c->mem = g_try_malloc ((gsize) c->capacity * c->record);
    if (!c->mem) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("feature-cache: could not allocate %" G_GUINT64_FORMAT " bytes.",
              (guint64) c->capacity * c->record), (NULL));
      goto fail;
    }
  }
  c->buf = g_malloc ((gsize) self->batch * c->record);
  c->keep = g_new0 (float *, self->batch);
  c->from = g_new0 (const float *, self->batch);
  c->hash = g_new0 (guint64, self->n_train);
  if (c->path) {
    const char zero[FCACHE_HEADER] = { 0 };
    c->writer = g_new0 (tt_atomic_file, 1);
    if (tt_atomic_file_open (c->writer, c->path, &err)) {
      g_clear_pointer (&c->writer, g_free);
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
          ("feature-cache-file: %s", err.message), (NULL));
      goto fail;
    }
    if (tt_atomic_file_write (c->writer, zero, sizeof zero, &err)) {
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
          ("feature-cache-file: %s", err.message), (NULL));
      goto fail;
    }
  }
  GST_INFO_OBJECT (self, "feature cache: %u of %u training samples (%"
      G_GSIZE_FORMAT " bytes each) in %s, after a frozen prefix of %u "
      "layers", c->capacity, self->n_train, c->record,
      c->path ? c->path : "memory", c->boundary.prefix_layers);
  return TRUE;

fail:
  gst_tensor_trainer_fcache_stop (self);
  return FALSE;
}

/* The file's header written and committed, opened and checked. */
static gboolean
fcache_seal (GstTtTensorTrainer * self, GstTensorTrainerFcache * c)
{
  FcacheHeader h, got;
  tt_error err;
  tt_status st;
  tt_atomic_file *w = c->writer;

  memset (&h, 0, sizeof h);
  memcpy (h.magic, FCACHE_MAGIC, 8);
  h.version = FCACHE_VERSION;
  h.tensors = c->boundary.tensors;
  h.floats_per_sample = c->boundary.floats_per_sample;
  h.fingerprint = c->boundary.fingerprint;
  h.samples = c->capacity;
  h.batch = self->batch;
  h.prefix_layers = c->boundary.prefix_layers;
  c->writer = NULL;
  st = tt_atomic_file_pwrite (w, 0, &h, sizeof h, &err);
  if (!st)
    st = tt_atomic_file_commit (w, &err);
  else
    tt_atomic_file_abort (w);
  g_free (w);
  if (st) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("feature-cache-file: %s",
            err.message), (NULL));
    return FALSE;
  }
  c->written = TRUE;
  c->fd = open (c->path, O_RDONLY);
  if (c->fd < 0 || pread (c->fd, &got, sizeof got, 0) != (ssize_t) sizeof got
      || memcmp (&got, &h, sizeof h)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("feature-cache-file=%s: cannot read it back, or its header does "
            "not match the model (changed by another program?).", c->path),
        (NULL));
    return FALSE;
  }
  return TRUE;
}

gboolean
gst_tensor_trainer_fcache_epoch_done (GstTtTensorTrainer * self)
{
  GstTensorTrainerFcache *c = self->fcache;
  self->fcache_samples = 0;
  if (!c || c->filled)
    return TRUE;
  c->filled = TRUE;
  return !c->path || fcache_seal (self, c);
}

tt_status
gst_tensor_trainer_fcache_train (GstTtTensorTrainer * self, guint64 at,
    guint n, const void *const *inputs, tt_batch_result * r, tt_error * err)
{
  GstTensorTrainerFcache *c = self->fcache;
  const gsize per = c->boundary.floats_per_sample;
  tt_status st;

  if (!c->filled) {
    /* the first epoch: every sample's hash, the records that fit */
    gfloat *recs = c->mem ? c->mem + (gsize) at * per : c->buf;
    for (guint b = 0; b < n; b++) {
      c->hash[at + b] = fcache_sample_hash (self, b);
      c->keep[b] = at + b < c->capacity ? recs + (gsize) b *per : NULL;
    }
    st = tt_model_train_batch_keep (self->model, n, inputs, self->in_types,
        self->label_batch, c->keep, r, err);
    if (st == TT_ERR_NUMERIC)
      /* a skipped batch (skip-bad-batches): its records are not trusted */
      for (guint b = 0; b < n; b++)
        c->hash[at + b] = 0;
    if ((st == TT_OK || st == TT_ERR_NUMERIC) && c->writer
        && tt_atomic_file_write (c->writer, c->buf, n * c->record, err))
      return err->status ? err->status : TT_ERR_IO;
    return st;
  }
  gboolean hit = at + n <= c->capacity;
  for (guint b = 0; hit && b < n; b++)
    hit = c->hash[at + b] != 0 && c->hash[at + b] ==
        fcache_sample_hash (self, b);
  if (!hit)
    return tt_model_train_batch (self->model, n, inputs, self->in_types,
        self->label_batch, r, err);
  const gfloat *recs = c->mem ? c->mem + (gsize) at * per : c->buf;
  if (!c->mem) {
    const gsize len = n * c->record;
    const off_t off = FCACHE_HEADER + (off_t) at * (off_t) c->record;
    if (pread (c->fd, c->buf, len, off) != (ssize_t) len) {
      err->status = TT_ERR_IO;
      g_snprintf (err->message, sizeof err->message,
          "feature-cache-file %s: reading samples %" G_GUINT64_FORMAT " to %"
          G_GUINT64_FORMAT ": %s", c->path, at, at + n - 1, g_strerror (errno));
      return TT_ERR_IO;
    }
  }
  for (guint b = 0; b < n; b++)
    c->from[b] = recs + (gsize) b *per;
  st = tt_model_train_batch_cached (self->model, n, c->from,
      self->label_batch, r, err);
  if (st == TT_OK)
    self->fcache_samples += n;
  return st;
}
