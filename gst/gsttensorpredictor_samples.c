/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tensor_predictor: the sample path. The caps (checked against the
 * model; the src caps from its output), the chain and events, each
 * sample copied into the batch with its timestamps, the batch run
 * through the model and one output buffer (tensor or text) pushed per
 * sample; the summary at EOS. */
#include "gsttensorpredictor_private.h"
#include "gsttensorflexsample.h"

#include <math.h>
#include <string.h>

/* ---- caps ------------------------------------------------------------ */

static GstCaps *
gst_tensor_predictor_src_caps (GstTtTensorPredictor * self, gint fps_n,
    gint fps_d)
{
  if (self->out_mode == GST_TENSOR_PREDICTOR_OUTPUT_TEXT)
    return gst_caps_new_simple ("text/x-raw", "format", G_TYPE_STRING,
        "utf8", NULL);
  GstTensorsDesc desc = { 0 };
  tt_shape s = tt_model_output_shape (self->model);
  desc.format = GST_TENSOR_FORMAT_STATIC;
  desc.num = 1;
  desc.tensors[0].rank = 4;
  desc.tensors[0].dims[0] = s.width;
  desc.tensors[0].dims[1] = s.height;
  desc.tensors[0].dims[2] = s.channel;
  desc.tensors[0].dims[3] = 1;
  desc.tensors[0].type = GST_TENSOR_TYPE_FLOAT32;
  return gst_tensors_desc_to_caps (&desc, fps_n, fps_d);
}

gboolean
gst_tensor_predictor_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstTtTensorPredictor *self = GST_TENSOR_PREDICTOR (parent);
  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    GstCaps *filter, *caps;
    gst_query_parse_caps (query, &filter);
    caps = gst_pad_get_current_caps (pad);
    if (!caps) {
      /* the model is known from PAUSED on: its output, any framerate */
      if (self->model && self->out_mode == GST_TENSOR_PREDICTOR_OUTPUT_TEXT)
        caps = gst_tensor_predictor_src_caps (self, 0, 1);
      else if (self->model) {
        caps = gst_tensor_predictor_src_caps (self, 0, 1);
        gst_structure_remove_field (gst_caps_get_structure (caps, 0),
            "framerate");
      } else
        caps = gst_pad_get_pad_template_caps (pad);
    }
    if (filter) {
      GstCaps *both = gst_caps_intersect_full (filter, caps,
          GST_CAPS_INTERSECT_FIRST);
      gst_caps_unref (caps);
      caps = both;
    }
    gst_query_set_caps_result (query, caps);
    gst_caps_unref (caps);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}

static GstFlowReturn gst_tensor_predictor_run (GstTtTensorPredictor * self);

/* Checks caps against the model; on mismatch posts an error saying what
 * was expected and what came. */
static gboolean
gst_tensor_predictor_set_caps (GstTtTensorPredictor * self, GstCaps * caps)
{
  GstTensorsDesc desc;
  gchar *why = NULL;
  tt_dtype types[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  gsize bytes[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  gint fps_n = 0, fps_d = 1;
  GstCaps *out;
  gboolean ok;
  GstTensorLabelForm label_form;

  if (!gst_tensor_samples_read_caps (&self->spec, caps, &desc, types, bytes,
          &label_form, &why)) {
    gst_tensor_samples_refuse_caps (GST_ELEMENT (self), &self->spec, caps, why);
    return FALSE;
  }
  /* samples waiting were described by the old caps: run them first */
  if (self->fill > 0 && gst_tensor_predictor_run (self) != GST_FLOW_OK)
    return FALSE;
  self->flexible = desc.format == GST_TENSOR_FORMAT_FLEXIBLE;
  if (!self->flexible) {
    memcpy (self->in_types, types, self->n_inputs * sizeof *types);
    memcpy (self->in_bytes, bytes, self->n_inputs * sizeof *bytes);
    self->with_labels = desc.num == self->n_inputs + 1;
    if (self->with_labels) {
      self->label_desc = desc.tensors[self->n_inputs];
      self->label_form = label_form;
    }
  }

  gst_structure_get_fraction (gst_caps_get_structure (caps, 0), "framerate",
      &fps_n, &fps_d);
  out = gst_tensor_predictor_src_caps (self, fps_n, fps_d);
  ok = gst_pad_push_event (self->srcpad, gst_event_new_caps (out));
  gst_caps_unref (out);
  self->negotiated = TRUE;
  GST_INFO_OBJECT (self, "accepted caps %" GST_PTR_FORMAT, caps);
  return ok;
}

/* ---- prediction -------------------------------------------------------- */

static GstBuffer *
gst_tensor_predictor_text (GstTtTensorPredictor * self, const gfloat * y)
{
  gsize best = 0;
  for (gsize i = 1; i < self->out_count; i++)
    best = y[i] > y[best] ? i : best;
  gchar *text = best < self->n_class_names && *self->class_names[best] ?
      g_strdup_printf ("%s (%.0f%%)", self->class_names[best],
      100.0 * y[best]) : g_strdup_printf ("class %" G_GSIZE_FORMAT
      " (%.0f%%)", best, 100.0 * y[best]);
  gsize len = strlen (text);
  return gst_buffer_new_wrapped (text, len);
}

/* Runs the samples waiting in the batch and pushes one buffer each. */
static GstFlowReturn
gst_tensor_predictor_run (GstTtTensorPredictor * self)
{
  const void *inputs[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  const guint n = self->fill;
  tt_batch_result r;
  tt_error err;
  GstFlowReturn ret = GST_FLOW_OK;

  if (n == 0)
    return GST_FLOW_OK;
  self->fill = 0;
  if (self->trainer_name &&
      (ret = gst_tensor_predictor_follow_trainer (self)) != GST_FLOW_OK)
    return ret;
  if (self->watch_path)
    gst_tensor_predictor_check_reload (self);

  for (guint i = 0; i < self->n_inputs; i++)
    inputs[i] = self->in_batch[i];
  const gint64 t0 = g_get_monotonic_time ();
  if (!self->first_us)
    self->first_us = t0;
  if (tt_model_eval_batch (self->model, n, inputs, self->in_types,
          self->with_labels ? self->label_batch : NULL, &r, &err) != TT_OK) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("%s", err.message),
        ("tt_model_eval_batch"));
    return GST_FLOW_ERROR;
  }
  self->busy_us += g_get_monotonic_time () - t0;
  self->runs++;
  GST_OBJECT_LOCK (self);
  self->samples += n;
  if (self->with_labels) {
    self->labelled += n;
    self->correct += r.correct;
  }
  GST_OBJECT_UNLOCK (self);

  const gfloat *y = tt_model_output (self->model);
  for (guint k = 0; k < n && ret == GST_FLOW_OK; k++) {
    const gfloat *yk = y + (gsize) k * self->out_count;
    GstBuffer *out = self->out_mode == GST_TENSOR_PREDICTOR_OUTPUT_TEXT ?
        gst_tensor_predictor_text (self, yk) :
        gst_buffer_new_memdup (yk, self->out_count * sizeof (gfloat));
    const GstTtTensorPredictorStamp *st = &self->stamps[k];
    GST_BUFFER_PTS (out) = st->pts;
    GST_BUFFER_DTS (out) = st->dts;
    GST_BUFFER_DURATION (out) = st->duration;
    GST_BUFFER_OFFSET (out) = st->offset;
    GST_BUFFER_OFFSET_END (out) = st->offset_end;
    GST_BUFFER_FLAGS (out) = st->flags;
    ret = gst_pad_push (self->srcpad, out);
  }
  return ret;
}

/* Keeps the timestamps of the sample just copied into the batch. */
static void
gst_tensor_predictor_stamp (GstTtTensorPredictor * self, GstBuffer * buf)
{
  GstTtTensorPredictorStamp *st = &self->stamps[self->fill];
  st->pts = GST_BUFFER_PTS (buf);
  st->dts = GST_BUFFER_DTS (buf);
  st->duration = GST_BUFFER_DURATION (buf);
  st->offset = GST_BUFFER_OFFSET (buf);
  st->offset_end = GST_BUFFER_OFFSET_END (buf);
  st->flags = GST_BUFFER_FLAGS (buf) & (GST_BUFFER_FLAG_DISCONT |
      GST_BUFFER_FLAG_DELTA_UNIT);
  self->fill++;
}

/* The label at offset of buf into batch slot fill. */
static GstFlowReturn
gst_tensor_predictor_put_label (GstTtTensorPredictor * self, GstBuffer * buf,
    gsize offset, const GstTensorDesc * desc, GstTensorLabelForm form)
{
  return gst_tensor_samples_put_label (GST_ELEMENT (self), buf, offset, desc,
      form, self->label_batch + self->out_count * self->fill, self->out_count,
      self->samples + self->fill);
}

/* Copies one sample of flexible tensors into the batch; a sample whose
 * input types or label differ from the samples waiting runs those first. */
static GstFlowReturn
gst_tensor_predictor_take_flexible (GstTtTensorPredictor * self,
    GstBuffer * buf)
{
  GstTensorFlexSample sample;
  tt_dtype types[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  GstFlowReturn ret;

  if (!gst_tensor_samples_read_flexible (GST_ELEMENT (self), &self->spec, buf,
          &sample, self->samples + self->fill))
    return GST_FLOW_ERROR;
  const gboolean labelled = sample.num == self->n_inputs + 1;
  for (guint i = 0; i < self->n_inputs; i++)
    types[i] = gst_tensor_samples_input_type (&sample.tensors[i]);
  if (self->fill > 0 && (labelled != self->with_labels ||
          memcmp (types, self->in_types, self->n_inputs * sizeof *types))
      && (ret = gst_tensor_predictor_run (self)) != GST_FLOW_OK)
    return ret;
  memcpy (self->in_types, types, self->n_inputs * sizeof *types);
  self->with_labels = labelled;
  for (guint i = 0; i < self->n_inputs; i++) {
    self->in_bytes[i] = gst_tensor_desc_bytes (&sample.tensors[i]);
    gst_buffer_extract (buf, sample.offsets[i], self->in_batch[i] +
        self->in_bytes[i] * self->fill, self->in_bytes[i]);
  }
  if (labelled) {
    if ((ret = gst_tensor_predictor_put_label (self, buf,
                sample.offsets[self->n_inputs], &sample.tensors[self->n_inputs],
                self->spec.flex_label_form)) != GST_FLOW_OK)
      return ret;
  }
  gst_tensor_predictor_stamp (self, buf);
  return GST_FLOW_OK;
}

/* Copies one sample into the batch; an error posted on a wrong size. */
static GstFlowReturn
gst_tensor_predictor_take (GstTtTensorPredictor * self, GstBuffer * buf)
{
  gsize bytes[GST_TENSOR_MAX_TENSORS], offset;

  memcpy (bytes, self->in_bytes, self->n_inputs * sizeof *bytes);
  bytes[self->n_inputs] = self->label_form == GST_TENSOR_LABEL_INDEX ?
      gst_tensor_desc_bytes (&self->label_desc) :
      self->out_count * sizeof (gfloat);
  if (!gst_tensor_samples_check_sizes (GST_ELEMENT (self), buf,
          self->n_inputs + (self->with_labels ? 1 : 0), self->n_inputs, bytes,
          self->samples + self->fill))
    return GST_FLOW_ERROR;
  offset = gst_tensor_samples_copy_inputs (buf, self->n_inputs,
      self->in_bytes, self->in_batch, self->fill);
  if (self->with_labels) {
    GstFlowReturn ret = gst_tensor_predictor_put_label (self, buf, offset,
        &self->label_desc, self->label_form);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  gst_tensor_predictor_stamp (self, buf);
  return GST_FLOW_OK;
}

GstFlowReturn
gst_tensor_predictor_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstTtTensorPredictor *self = GST_TENSOR_PREDICTOR (parent);
  GstFlowReturn ret = GST_FLOW_OK;
  (void) pad;

  if (!self->negotiated) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Buffer before caps: tensor_predictor needs other/tensors caps "
            "first."), (NULL));
    ret = GST_FLOW_NOT_NEGOTIATED;
  } else {
    ret = self->flexible ? gst_tensor_predictor_take_flexible (self, buf) :
        gst_tensor_predictor_take (self, buf);
    if (ret == GST_FLOW_OK && self->fill == self->batch)
      ret = gst_tensor_predictor_run (self);
  }
  gst_buffer_unref (buf);
  return ret;
}

static void
gst_tensor_predictor_post_summary (GstTtTensorPredictor * self)
{
  guint64 samples, labelled, correct;
  GST_OBJECT_LOCK (self);
  samples = self->samples;
  labelled = self->labelled;
  correct = self->correct;
  GST_OBJECT_UNLOCK (self);
  const gdouble seconds = self->first_us ?
      (g_get_monotonic_time () - self->first_us) / 1e6 : 0;
  const gdouble accuracy = labelled ? (gdouble) correct / labelled : NAN;
  GST_INFO_OBJECT (self, "%" G_GUINT64_FORMAT " samples, accuracy %g, "
      "%.1f us per batch in the engine", samples, accuracy,
      self->runs ? (gdouble) self->busy_us / self->runs : 0.0);
  if (!gst_tensor_predictor_posting (self))
    return;
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("tensor-predictor-summary",
              "samples", G_TYPE_UINT64, samples,
              "labelled", G_TYPE_UINT64, labelled,
              "correct", G_TYPE_UINT64, correct,
              "accuracy", G_TYPE_DOUBLE, accuracy,
              "seconds", G_TYPE_DOUBLE, seconds,
              "samples-per-second", G_TYPE_DOUBLE,
              seconds > 0 ? samples / seconds : 0.0,
              "mean-latency-us", G_TYPE_DOUBLE,
              self->runs ? (gdouble) self->busy_us / self->runs : 0.0,
              "weights-version", G_TYPE_UINT64, self->trainer_name ?
              self->have_version : self->reloads, NULL)));
}

gboolean
gst_tensor_predictor_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstTtTensorPredictor *self = GST_TENSOR_PREDICTOR (parent);

  GST_LOG_OBJECT (self, "event %" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gboolean ok;
      gst_event_parse_caps (event, &caps);
      ok = gst_tensor_predictor_set_caps (self, caps);
      gst_event_unref (event);
      return ok;
    }
    case GST_EVENT_FLUSH_STOP:
      self->fill = 0;           /* flushed samples get no output */
      return gst_pad_event_default (pad, parent, event);
    case GST_EVENT_EOS:
      if (gst_tensor_predictor_run (self) == GST_FLOW_ERROR) {
        gst_event_unref (event);
        return FALSE;
      }
      gst_tensor_predictor_post_summary (self);
      return gst_pad_event_default (pad, parent, event);
    case GST_EVENT_GAP:
    case GST_EVENT_SEGMENT_DONE:
      /* serialized: what waits goes out before them */
      if (gst_tensor_predictor_run (self) == GST_FLOW_ERROR) {
        gst_event_unref (event);
        return FALSE;
      }
      return gst_pad_event_default (pad, parent, event);
    default:
      return gst_pad_event_default (pad, parent, event);
  }
}
