/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_datasrc's samples: the label table its buffers share, the
 * order of each epoch's training range (shuffled from the seed), and
 * the buffers made of the samples read, pushed alone or as lists
 * (create).
 */
#include "gsttensordatasrc_private.h"

static void
gst_tensor_datasrc_store_free (gpointer data)
{
  GstTtTensorDataSrcStore *store = data;
  g_free (store->labels_f32);
}

void
gst_tensor_datasrc_store_release (gpointer store)
{
  g_atomic_rc_box_release_full (store, gst_tensor_datasrc_store_free);
}

/* Builds the shared label table. */
void
gst_tensor_datasrc_make_store (GstTtTensorDataSrc * self)
{
  GstTtTensorDataSrcStore *store =
      g_atomic_rc_box_new0 (GstTtTensorDataSrcStore);
  const gboolean onehot =
      self->out_label_format == GST_TENSOR_DATASRC_LABEL_ONEHOT;
  store->label_floats = onehot ? self->classes : 1;
  store->labels_f32 = g_new0 (gfloat, 256 * store->label_floats);
  for (guint v = 0; v < 256; v++) {
    if (onehot && v < self->classes)
      store->labels_f32[v * store->label_floats + v] = 1.0f;
    else if (!onehot)
      store->labels_f32[v] = (gfloat) v;
  }
  self->store = store;
}

/* A read-only memory over size bytes of the store at data. */
static GstMemory *
gst_tensor_datasrc_wrap (GstTtTensorDataSrc * self, const void *data,
    gsize size)
{
  return gst_memory_new_wrapped (GST_MEMORY_FLAG_READONLY, (gpointer) data,
      size, 0, size, g_atomic_rc_box_acquire (self->store),
      gst_tensor_datasrc_store_release);
}

/* splitmix64: small, fast and good enough to draw permutations */
static guint64
gst_tensor_datasrc_next_random (guint64 * state)
{
  guint64 z = (*state += G_GUINT64_CONSTANT (0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* The training order of an epoch: a function of the seed and the epoch
 * only, so a run can be repeated. */
static void
gst_tensor_datasrc_draw_order (GstTtTensorDataSrc * self, guint epoch)
{
  const guint n = self->train.count;
  guint64 state = self->rng_seed ^ ((guint64) epoch *
      G_GUINT64_CONSTANT (0xd1b54a32d192ed03));

  for (guint i = 0; i < n; i++)
    self->order[i] = i;
  if (self->do_shuffle)
    for (guint i = n - 1; i > 0; i--) {
      guint j = (guint) (gst_tensor_datasrc_next_random (&state) % (i + 1));
      guint32 t = self->order[i];
      self->order[i] = self->order[j];
      self->order[j] = t;
    }
  self->order_epoch = epoch;
}

/* The samples from position on that lie one after the other in one file
 * and one range (training or validation) of one epoch, up to max (>= 1,
 * not past the end): read with one pread into one memory they share, each
 * a buffer in out. The shuffled training range mostly gives runs of 1,
 * file order runs of max. Returns how many, 0 after posting an error
 * when the file cannot be read (it was truncated under us). */
static guint
gst_tensor_datasrc_make_samples (GstTtTensorDataSrc * self, guint max,
    GstBuffer ** out)
{
  const guint64 per_epoch = (guint64) self->train.count + self->valid.count;
  const guint epoch = (guint) (self->position / per_epoch);
  const guint64 k = self->position % per_epoch;
  const GstTtTensorDataSrcSet *set = &self->train;
  const tt_idx_file *images = NULL;
  const gboolean to_float = !self->repo_mode
      && self->out_image_format == GST_TENSOR_DATASRC_IMAGE_FLOAT32
      && set->images.type == TT_IDX_UINT8;
  GstMemory *mem;
  GstMapInfo map;
  guint index, run = 1;
  gsize item;
  char err[1024];
  gboolean ok;

  if (k < self->train.count) {
    if (self->order_epoch != epoch)
      gst_tensor_datasrc_draw_order (self, epoch);
    index = gst_tensor_datasrc_set_index (&self->train, self->order[k]);
    while (run < max && k + run < self->train.count
        && gst_tensor_datasrc_set_index (&self->train,
            self->order[k + run]) == index + run)
      run++;
  } else {
    const guint v = (guint) (k - self->train.count);
    const guint left = (guint) MIN ((guint64) max, per_epoch - k);
    index = gst_tensor_datasrc_set_index (&self->valid, v);
    if (!self->valid_shares_files)
      set = &self->valid;
    while (run < left
        && gst_tensor_datasrc_set_index (&self->valid, v + run) == index + run)
      run++;
  }
  if (self->repo_mode && set->repo.desc.format == GST_TENSOR_FORMAT_FLEXIBLE) {
    /* samples of flexible tensors need not lie back to back */
    out[0] = gst_tensor_datasrc_repo_sample (self, set, index);
    if (!out[0])
      return 0;
    run = 1;
    goto done;
  }

  item = self->repo_mode ? set->repo.sample_size : set->images.item_bytes;
  if (!self->repo_mode)
    images = &set->images;
  /* uint8 images to float32 are read into scratch, the others into the
   * memory the samples share */
  mem = to_float ? NULL : gst_allocator_alloc (NULL, (gsize) run * item, NULL);
  if (mem)
    gst_memory_map (mem, &map, GST_MAP_WRITE);
  if (self->repo_mode)
    ok = tt_data_read_at (set->repo.fd, set->repo.path,
        (guint64) index * item, map.data, (gsize) run * item, err,
        sizeof err) == 0;
  else
    ok = tt_idx_file_read (images, index, run, mem ? map.data :
        self->scratch, err, sizeof err) == 0;
  if (mem)
    gst_memory_unmap (mem, &map);
  if (!ok) {
    if (mem)
      gst_memory_unref (mem);
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err), (NULL));
    return 0;
  }
  for (guint r = 0; r < run; r++) {
    out[r] = gst_buffer_new ();
    if (self->repo_mode) {
      for (guint i = 0; i < set->repo.desc.num; i++)
        gst_buffer_append_memory (out[r], gst_memory_share (mem,
                (gssize) (r * item + set->repo.offsets[i]),
                (gssize) set->repo.sizes[i]));
      continue;
    }
    if (to_float) {
      GstMemory *f = gst_allocator_alloc (NULL, self->image_bytes, NULL);
      const guint8 *px = self->scratch + (gsize) r * item;
      gst_memory_map (f, &map, GST_MAP_WRITE);
      for (gsize i = 0; i < item; i++)
        ((gfloat *) map.data)[i] = px[i] * (1.0f / 255.0f);
      gst_memory_unmap (f, &map);
      gst_buffer_append_memory (out[r], f);
    } else {
      /* as stored */
      gst_buffer_append_memory (out[r], run == 1 ? gst_memory_ref (mem) :
          gst_memory_share (mem, (gssize) (r * item), (gssize) item));
    }
    gst_buffer_append_memory (out[r], gst_tensor_datasrc_wrap (self,
            self->store->labels_f32 + set->labels[index + r] *
            self->store->label_floats,
            self->store->label_floats * sizeof (gfloat)));
  }
  if (mem)
    gst_memory_unref (mem);

done:
  for (guint r = 0; r < run; r++) {
    GST_BUFFER_OFFSET (out[r]) = self->position;
    GST_BUFFER_OFFSET_END (out[r]) = self->position + 1;
    self->position++;
  }
  return run;
}

/* What create() returns after a read error it posted: GST_FLOW_ERROR would
 * make GstBaseSrc post a second, generic error ("Internal data stream
 * error") after the element's own, which names the file. FLUSHING pauses
 * the streaming task without another message and without EOS, so nothing
 * downstream takes the cut stream for a finished one; the application
 * stops the pipeline on the error. */
#define GST_TENSOR_DATASRC_FLOW_READ_ERROR GST_FLOW_FLUSHING

/* One sample, or up to list_size of them as a buffer list: elements that
 * take lists (tensor_trainer) then pay the per-push costs once per list,
 * the others get the buffers one by one from GStreamer. */
GstFlowReturn
gst_tensor_datasrc_create (GstPushSrc * src, GstBuffer ** buf)
{
  GstTtTensorDataSrc *self = GST_TENSOR_DATASRC (src);
  const guint64 end = ((guint64) self->train.count + self->valid.count) *
      self->n_epochs;
  GstBufferList *list;

  if (self->position >= end)
    return GST_FLOW_EOS;
  if (self->list_size <= 1 || end - self->position == 1) {
    return gst_tensor_datasrc_make_samples (self, 1, buf) ?
        GST_FLOW_OK : GST_TENSOR_DATASRC_FLOW_READ_ERROR;
  }
  list = gst_buffer_list_new_sized (self->list_size);
  while (gst_buffer_list_length (list) < self->list_size
      && self->position < end) {
    GstBuffer *made[1024];
    guint n = (guint) MIN ((guint64) (self->list_size -
            gst_buffer_list_length (list)), end - self->position);
    n = gst_tensor_datasrc_make_samples (self, n, made);
    if (!n) {
      /* the samples read before the error are not pushed either: the
       * stream stops at the error */
      gst_buffer_list_unref (list);
      *buf = NULL;
      return GST_TENSOR_DATASRC_FLOW_READ_ERROR;
    }
    for (guint i = 0; i < n; i++)
      gst_buffer_list_add (list, made[i]);
  }
  gst_base_src_submit_buffer_list (GST_BASE_SRC (src), list);
  *buf = NULL;
  return GST_FLOW_OK;
}
