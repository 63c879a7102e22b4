/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tensor_trainer: replay (docs/personalize.md, "Replay"). With replay-size
 * M, past training samples are kept by reservoir sampling
 * (ext/engine/io/replay.c, shared with tensor-trainer train); once the buffer holds replay-per-batch
 * (k) of them, each training batch takes B - k new samples from the
 * stream and k distinct ones from the buffer. replay-file fills the
 * buffer at start and keeps it at the end. The buffer is allocated when
 * the model is, and counts against memory-limit with the pool. */
#include "gsttensortrainer_private.h"

#include <string.h>

/* the replay-per-batch default: half the batch, rounded down */
#define REPLAY_PER_BATCH_HALF G_MAXUINT

gboolean
gst_tensor_trainer_replay_start (GstTtTensorTrainer * self)
{
  size_t bytes[GST_TENSOR_MAX_TENSORS], footprint;
  tt_error err;
  guint size, per_batch;
  guint64 seed, limit;
  GST_OBJECT_LOCK (self);
  size = self->replay_size;
  per_batch = self->replay_per_batch;
  seed = self->replay_seed;
  limit = self->memory_limit;
  g_free (self->replay_path);
  self->replay_path = self->replay_file && *self->replay_file ?
      g_strdup (self->replay_file) : NULL;
  GST_OBJECT_UNLOCK (self);

  self->replay_k = 0;
  self->replay_dirty = FALSE;
  if (size == 0) {
    if (self->replay_path) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("replay-file=%s is set but replay-size is 0: set how many "
              "samples the replay buffer keeps.", self->replay_path), (NULL));
      return FALSE;
    }
    return TRUE;
  }
  self->replay_k = per_batch == REPLAY_PER_BATCH_HALF ? self->batch / 2 :
      per_batch;
  if (self->replay_k >= self->batch) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("replay-per-batch=%u: a batch of %u ([Model] batch_size of %s) "
            "holds at least one new sample, so it is 0 to %u.",
            self->replay_k, self->batch, self->config_path, self->batch - 1),
        (NULL));
    return FALSE;
  }
  if (self->replay_k > size) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("replay-per-batch=%u is over replay-size=%u: a batch cannot take "
            "more samples than the buffer keeps (0 to %u).", self->replay_k,
            size, size), (NULL));
    return FALSE;
  }
  for (guint i = 0; i < self->n_inputs; i++)
    bytes[i] = self->in_count[i] * sizeof (gfloat);
  bytes[self->n_inputs] = self->label_count * sizeof (gfloat);
  footprint = tt_replay_footprint (self->n_inputs + 1, bytes, size);
  if (limit && (footprint == 0 || footprint > limit
          || self->plan.pool_bytes > limit - footprint)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("replay-size=%u needs %" G_GSIZE_FORMAT " bytes beside the memory "
            "pool's %" G_GUINT64_FORMAT " bytes: %" G_GUINT64_FORMAT " in all, "
            "over memory-limit=%" G_GUINT64_FORMAT ".", size, footprint,
            (guint64) self->plan.pool_bytes,
            (guint64) self->plan.pool_bytes + footprint, limit), (NULL));
    return FALSE;
  }
  if (tt_replay_init (&self->replay, self->n_inputs + 1, bytes, size, seed,
          &err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("replay-size=%u: could not allocate %" G_GSIZE_FORMAT " bytes for "
            "the replay buffer.", size, footprint), (NULL));
    return FALSE;
  }
  if (self->replay_path && g_file_test (self->replay_path, G_FILE_TEST_EXISTS)) {
    if (tt_replay_load (&self->replay, self->replay_path, &err)) {
      GST_ELEMENT_ERROR (self, RESOURCE, READ, ("replay-file %s.",
              err.message), (NULL));
      tt_replay_clear (&self->replay);
      return FALSE;
    }
    GST_INFO_OBJECT (self, "replay buffer: %u samples (of %" G_GUINT64_FORMAT
        " seen) from %s", self->replay.count, self->replay.seen,
        self->replay_path);
  }
  GST_INFO_OBJECT (self, "replay buffer of %u samples (%" G_GSIZE_FORMAT
      " bytes), %u per batch of %u", size, footprint, self->replay_k,
      self->batch);
  return TRUE;
}

guint
gst_tensor_trainer_replay_new_per_batch (GstTtTensorTrainer * self,
    gboolean training)
{
  if (training && self->replay_k && self->replay.count >= self->replay_k)
    return self->batch - self->replay_k;
  return self->batch;
}

/* Batch slots n_new.. get k samples of the buffer; then the n_new new
 * samples of slots 0.. are offered to it. Returns k. */
guint
gst_tensor_trainer_replay_mix (GstTtTensorTrainer * self, guint n_new)
{
  tt_replay *r = &self->replay;
  const guint k = self->replay.count >= self->replay_k ? self->replay_k : 0;
  guint32 picks[GST_TENSOR_TRAINER_REPLAY_MAX_PICKS];
  guint done = 0;

  if (!r->block)
    return 0;
  /* the buffer holds float32: a uint8 batch is widened first */
  self->replay_widened = 0;
  for (guint i = 0; k && i < self->n_inputs; i++)
    if (self->in_types[i] == TT_DTYPE_UINT8) {
      gst_tensor_trainer_widen_input (self, i, n_new);
      self->replay_widened |= 1u << i;
    }
  while (done < k) {
    const guint part = MIN (k - done, GST_TENSOR_TRAINER_REPLAY_MAX_PICKS);
    tt_replay_pick (r, part, picks);
    for (guint j = 0; j < part; j++) {
      const guint8 *src = tt_replay_sample (r, picks[j]);
      const guint slot = n_new + done + j;
      for (guint i = 0; i < self->n_inputs; i++) {
        const gsize b = self->in_count[i] * sizeof (gfloat);
        memcpy (self->in_batch[i] + b * slot, src, b);
        src += b;
      }
      memcpy (self->label_batch + self->label_count * slot, src,
          self->label_count * sizeof (gfloat));
    }
    done += part;
  }
  for (guint s = 0; s < n_new; s++) {
    guint8 *dst = tt_replay_offer (r);
    if (!dst)
      continue;
    for (guint i = 0; i < self->n_inputs; i++) {
      const gsize count = self->in_count[i];
      if (self->in_types[i] == TT_DTYPE_UINT8) {
        const guint8 *u = self->in_batch[i] + count * s;
        for (gsize e = 0; e < count; e++) {
          const gfloat v = u[e];
          memcpy (dst + e * sizeof v, &v, sizeof v);
        }
      } else {
        memcpy (dst, self->in_batch[i] + count * sizeof (gfloat) * s,
            count * sizeof (gfloat));
      }
      dst += count * sizeof (gfloat);
    }
    memcpy (dst, self->label_batch + self->label_count * s,
        self->label_count * sizeof (gfloat));
  }
  self->replay_dirty = TRUE;
  return k;
}

/* After the batch ran: the inputs widened for it take the stream's type
 * again (the next samples come as uint8). */
void
gst_tensor_trainer_replay_done (GstTtTensorTrainer * self)
{
  for (guint i = 0; i < self->n_inputs; i++)
    if (self->replay_widened & (1u << i))
      self->in_types[i] = TT_DTYPE_UINT8;
  self->replay_widened = 0;
}

/* At the end of the run (EOS or stop): the buffer into replay-file. */
void
gst_tensor_trainer_replay_save (GstTtTensorTrainer * self)
{
  tt_error err;

  if (!self->replay.block || !self->replay_path || !self->replay_dirty)
    return;
  self->replay_dirty = FALSE;
  if (tt_replay_save (&self->replay, self->replay_path, &err)) {
    GST_ELEMENT_WARNING (self, RESOURCE, WRITE,
        ("Could not save the replay buffer to replay-file: %s.",
            err.message), (NULL));
    return;
  }
  GST_INFO_OBJECT (self, "replay buffer: %u samples (of %" G_GUINT64_FORMAT
      " seen) saved to %s", self->replay.count, self->replay.seen,
      self->replay_path);
}

void
gst_tensor_trainer_replay_stop (GstTtTensorTrainer * self)
{
  gst_tensor_trainer_replay_save (self);
  tt_replay_clear (&self->replay);
  g_clear_pointer (&self->replay_path, g_free);
  self->replay_k = 0;
}
