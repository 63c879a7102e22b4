/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tensor_trainer: the sample path. The sink pad's caps (checked against
 * the model) and events, the src caps, the chain functions (waiting while
 * paused) and each sample copied into the batch: static or flexible
 * tensors, uint8 inputs widened, the label; a full batch or a phase's end
 * runs it (gsttensortrainer_epochs.c). */
#include "gsttensortrainer_private.h"
#include "gsttensorflexsample.h"

#include <string.h>

static GstFlowReturn gst_tensor_trainer_sample (GstTtTensorTrainer * self,
    GstBuffer * buf);

/* ---- caps ------------------------------------------------------------ */

/* Checks caps against the model (loading it with the first caps); on
 * mismatch posts an error saying what was expected and what came. */
static gboolean
gst_tensor_trainer_set_caps (GstTtTensorTrainer * self, GstCaps * caps)
{
  GstTensorsDesc desc;
  gchar *why = NULL;
  tt_dtype types[GST_TENSOR_TRAINER_MAX_INPUTS];
  gsize bytes[GST_TENSOR_TRAINER_MAX_INPUTS];
  GstTensorLabelForm label_form;

  if (!self->model) {
    /* upstream retries refused caps: the error was posted the first time */
    if (self->load_failed)
      return FALSE;
    if (!gst_tensor_trainer_load_model (self)) {
      self->load_failed = TRUE;
      return FALSE;
    }
  }
  if (self->refused_caps && gst_caps_is_equal (caps, self->refused_caps))
    return FALSE;

  if (!gst_tensor_samples_read_caps (&self->spec, caps, &desc, types, bytes,
          &label_form, &why))
    goto refuse;
  if (desc.format == GST_TENSOR_FORMAT_FLEXIBLE) {
    self->flexible = TRUE;
    goto accept;
  }

  /* a batch is fed with one type per input: finish one of other types */
  if (self->negotiated && self->fill > 0
      && memcmp (types, self->in_types, self->n_inputs * sizeof *types)) {
    GST_ERROR_OBJECT (self, "input types changed mid-batch");
    why = g_strdup ("input types changed in the middle of a batch");
    goto refuse;
  }
  memcpy (self->in_types, types, self->n_inputs * sizeof *types);
  memcpy (self->sample_bytes, bytes, self->n_inputs * sizeof *bytes);
  self->label_desc = desc.tensors[self->n_inputs];
  self->label_form = label_form;
  self->sample_bytes[self->n_inputs] =
      gst_tensor_desc_bytes (&self->label_desc);
  self->flexible = FALSE;
accept:
  self->negotiated = TRUE;
  gst_clear_caps (&self->refused_caps);
  GST_INFO_OBJECT (self, "accepted caps %" GST_PTR_FORMAT, caps);
  return TRUE;

refuse:
  gst_caps_replace (&self->refused_caps, caps);
  gst_tensor_samples_refuse_caps (GST_ELEMENT (self), &self->spec, caps, why);
  return FALSE;
}

/* Sends caps and a TIME segment on the src pad once. */
void
gst_tensor_trainer_send_src_caps (GstTtTensorTrainer * self)
{
  GstCaps *caps;
  GstSegment segment;

  if (self->src_caps_sent)
    return;
  if (!gst_pad_has_current_caps (self->srcpad)) {
    GstEvent *ss = gst_pad_get_sticky_event (self->srcpad,
        GST_EVENT_STREAM_START, 0);
    if (ss)
      gst_event_unref (ss);
    else {
      gchar *id = gst_pad_create_stream_id (self->srcpad,
          GST_ELEMENT (self), "stats");
      gst_pad_push_event (self->srcpad, gst_event_new_stream_start (id));
      g_free (id);
    }
  }
  caps = gst_pad_get_pad_template_caps (self->srcpad);
  gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_pad_push_event (self->srcpad, gst_event_new_segment (&segment));
  /* lets sinks preroll now rather than after the first epoch */
  gst_pad_push_event (self->srcpad, gst_event_new_gap (0, 0));
  self->src_caps_sent = TRUE;
}

/* ---- samples into the batch ------------------------------------------ */

/* Makes input i of the batch float32: the n samples already in it (uint8)
 * are widened in place, from the last byte down so nothing is overwritten
 * before it is read. The engine casts uint8 to float itself, so the values
 * it sees do not change. */
void
gst_tensor_trainer_widen_input (GstTtTensorTrainer * self, guint i, guint n)
{
  const gsize n_el = (gsize) n * self->in_count[i];
  guint8 *u = self->in_batch[i];
  gfloat *f = (gfloat *) self->in_batch[i];
  for (gsize k = n_el; k-- > 0;)
    f[k] = u[k];
  self->in_types[i] = TT_DTYPE_FLOAT32;
}

/* The label at offset of buf into batch slot fill. */
static GstFlowReturn
gst_tensor_trainer_put_label (GstTtTensorTrainer * self, GstBuffer * buf,
    gsize offset, const GstTensorDesc * desc, GstTensorLabelForm form)
{
  return gst_tensor_samples_put_label (GST_ELEMENT (self), buf, offset, desc,
      form, self->label_batch + self->label_count * self->fill,
      self->label_count, self->samples_seen);
}

/* Flexible tensors (gsttensorflexsample.h): every header is checked, and
 * each tensor against the model. */
static GstFlowReturn
gst_tensor_trainer_copy_flexible (GstTtTensorTrainer * self, GstBuffer * buf)
{
  const guint ntens = self->n_inputs + 1;
  GstTensorFlexSample sample;

  if (!gst_tensor_samples_read_flexible (GST_ELEMENT (self), &self->spec, buf,
          &sample, self->samples_seen))
    return GST_FLOW_ERROR;
  for (guint i = 0; i < ntens; i++) {
    const GstTensorDesc *t = &sample.tensors[i];
    const gsize offset = sample.offsets[i], size = gst_tensor_desc_bytes (t);
    if (i == self->n_inputs) {
      GstFlowReturn ret = gst_tensor_trainer_put_label (self, buf, offset,
          t, self->spec.flex_label_form);
      if (ret != GST_FLOW_OK)
        return ret;
    } else {
      const tt_dtype type = gst_tensor_samples_input_type (t);
      const gsize count = self->in_count[i];
      if (self->fill == 0)
        self->in_types[i] = type;
      else if (type == TT_DTYPE_FLOAT32 && self->in_types[i] == TT_DTYPE_UINT8)
        gst_tensor_trainer_widen_input (self, i, self->fill);
      if (type == self->in_types[i]) {
        gst_buffer_extract (buf, offset, self->in_batch[i] + size *
            self->fill, size);
      } else {
        /* a uint8 sample in a float32 batch */
        gfloat *dst = (gfloat *) self->in_batch[i] + count * self->fill;
        gst_buffer_extract (buf, offset, self->scratch, size);
        for (gsize k = 0; k < count; k++)
          dst[k] = self->scratch[k];
      }
    }
  }
  return GST_FLOW_OK;
}

/* Copies the buffer's tensors into batch slot fill. */
static GstFlowReturn
gst_tensor_trainer_copy_sample (GstTtTensorTrainer * self, GstBuffer * buf)
{
  gsize offset;

  if (self->flexible)
    return gst_tensor_trainer_copy_flexible (self, buf);
  if (!gst_tensor_samples_check_sizes (GST_ELEMENT (self), buf,
          self->n_inputs + 1, self->n_inputs, self->sample_bytes,
          self->samples_seen))
    return GST_FLOW_ERROR;
  offset = gst_tensor_samples_copy_inputs (buf, self->n_inputs,
      self->sample_bytes, self->in_batch, self->fill);
  return gst_tensor_trainer_put_label (self, buf, offset, &self->label_desc,
      self->label_form);
}

/* Blocks while the element is paused (target state PAUSED), so pausing the
 * pipeline pauses training. */
static GstFlowReturn
gst_tensor_trainer_wait_playing (GstTtTensorTrainer * self)
{
  GstFlowReturn ret = GST_FLOW_OK;

  /* fast path, once per buffer, without the lock: a state change that
   * races with it lets this one buffer through, as if it had come a moment
   * earlier; the next one waits */
  if (G_LIKELY (GST_STATE_TARGET (self) == GST_STATE_PLAYING
          && !g_atomic_int_get (&self->flushing)))
    return GST_FLOW_OK;
  GST_OBJECT_LOCK (self);
  while (!self->flushing && GST_STATE_TARGET (self) <= GST_STATE_PAUSED) {
    GST_DEBUG_OBJECT (self, "paused: waiting for PLAYING");
    g_cond_wait (&self->cond, GST_OBJECT_GET_LOCK (self));
  }
  if (self->flushing)
    ret = GST_FLOW_FLUSHING;
  GST_OBJECT_UNLOCK (self);
  return ret;
}

GstFlowReturn
gst_tensor_trainer_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstFlowReturn ret = gst_tensor_trainer_sample (GST_TENSOR_TRAINER (parent),
      buf);
  (void) pad;
  gst_buffer_unref (buf);
  return ret;
}

/* A list of samples (tensor_datasrc pushes them so): one push for many
 * buffers, each handled as by the chain function. */
GstFlowReturn
gst_tensor_trainer_chain_list (GstPad * pad, GstObject * parent,
    GstBufferList * list)
{
  GstTtTensorTrainer *self = GST_TENSOR_TRAINER (parent);
  const guint n = gst_buffer_list_length (list);
  GstFlowReturn ret = GST_FLOW_OK;

  (void) pad;
  for (guint i = 0; i < n && ret == GST_FLOW_OK; i++)
    ret = gst_tensor_trainer_sample (self, gst_buffer_list_get (list, i));
  gst_buffer_list_unref (list);
  return ret;
}

/* One sample (buf is not taken). */
static GstFlowReturn
gst_tensor_trainer_sample (GstTtTensorTrainer * self, GstBuffer * buf)
{
  GstFlowReturn ret;
  gboolean training;

  if (self->finished) {
    GST_LOG_OBJECT (self, "training is over: buffer dropped");
    return GST_FLOW_OK;
  }
  if (!self->negotiated) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("No caps were negotiated before the first buffer."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  ret = gst_tensor_trainer_wait_playing (self);
  if (ret == GST_FLOW_OK)
    ret = gst_tensor_trainer_copy_sample (self, buf);
  if (ret != GST_FLOW_OK)
    return ret;

  if (self->epoch_pos == 0)
    self->epoch_start_us = g_get_monotonic_time ();
  self->epoch_pos++;
  self->samples_seen++;
  self->fill++;
  training = self->epoch_pos <= self->n_train;

  /* a full batch, or the end of a phase: training and validation samples
   * never share a batch, and a short last batch runs as it is; with
   * replay, a training batch takes batch - replay-per-batch new ones */
  if (self->fill == gst_tensor_trainer_replay_new_per_batch (self, training)
      || self->epoch_pos == self->n_train
      || self->epoch_pos == (guint64) self->n_train + self->n_valid) {
    ret = gst_tensor_trainer_run_batch (self, training);
    if (ret != GST_FLOW_OK)
      return ret;
    if (self->fed_ended)
      return gst_tensor_trainer_finish (self);
  }
  if (self->epoch_pos == self->n_train)
    self->train_end_us = g_get_monotonic_time ();
  if (self->epoch_pos == (guint64) self->n_train + self->n_valid) {
    ret = gst_tensor_trainer_end_epoch (self, TRUE);
    if (ret != GST_FLOW_OK)
      return ret;
    if (self->epochs_done == self->n_epochs)
      ret = gst_tensor_trainer_finish (self);
  }
  return ret;
}

gboolean
gst_tensor_trainer_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstTtTensorTrainer *self = GST_TENSOR_TRAINER (parent);

  GST_LOG_OBJECT (self, "event %" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gboolean ok;
      gst_event_parse_caps (event, &caps);
      ok = gst_tensor_trainer_set_caps (self, caps);
      if (ok)
        gst_tensor_trainer_send_src_caps (self);
      gst_event_unref (event);
      return ok;
    }
    case GST_EVENT_FLUSH_START:
      GST_OBJECT_LOCK (self);
      g_atomic_int_set (&self->flushing, TRUE);
      g_cond_broadcast (&self->cond);
      GST_OBJECT_UNLOCK (self);
      return gst_pad_event_default (pad, parent, event);
    case GST_EVENT_FLUSH_STOP:
      GST_OBJECT_LOCK (self);
      g_atomic_int_set (&self->flushing, FALSE);
      GST_OBJECT_UNLOCK (self);
      return gst_pad_event_default (pad, parent, event);
    case GST_EVENT_SEGMENT:
      /* the src pad has its own TIME segment: one frame per epoch */
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_EOS:{
      GstFlowReturn ret;
      gst_event_unref (event);
      if (self->finished)
        return TRUE;            /* sent after the last epoch already */
      ret = gst_tensor_trainer_finish (self);
      return ret == GST_FLOW_OK;
    }
    default:
      return gst_pad_event_default (pad, parent, event);
  }
}
