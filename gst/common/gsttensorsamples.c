/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sample side shared by tensor_trainer and tensor_predictor (see
 * gsttensorsamples.h): one copy of the rules, so the two elements accept
 * and refuse the same samples with the same words.
 */
#include "gsttensorsamples.h"

#include <string.h>

/* "W:H:C:1" as nnstreamer writes a model shape c:h:w. */
static gchar *
gst_tensor_samples_shape_dims (tt_shape s)
{
  return gst_tensor_shape_dims_string (s.channel, s.height, s.width);
}

gchar *
gst_tensor_samples_expected (const GstTensorSampleSpec * spec)
{
  GString *s = g_string_new (NULL);
  gchar *d;

  if (spec->label_optional)
    g_string_append_printf (s, "%u tensors, or %u with a label: ",
        spec->n_inputs, spec->n_inputs + 1);
  else
    g_string_append_printf (s, "%u tensors (num-inputs=%u + num-labels=1): ",
        spec->n_inputs + 1, spec->n_inputs);
  for (guint i = 0; i < spec->n_inputs; i++) {
    tt_shape sh;
    tt_model_input_shape (spec->model, i, &sh);
    d = gst_tensor_samples_shape_dims (sh);
    g_string_append_printf (s, "input %u dimensions=%s types=uint8|float32, ",
        i, d);
    g_free (d);
  }
  d = gst_tensor_samples_shape_dims (spec->label_shape);
  g_string_append_printf (s, "label dimensions=%s types=float32", d);
  if (spec->label_count > 1)
    g_string_append (s, " or a class index (dimensions=1:1:1:1, an integer "
        "type, float32 or float64)");
  g_free (d);
  return g_string_free (s, FALSE);
}

gboolean
gst_tensor_samples_check_tensor (const GstTensorSampleSpec * spec, guint i,
    const GstTensorDesc * t, GstTensorLabelForm * form, gchar ** why)
{
  tt_shape s;

  if (i == spec->n_inputs) {
    s = spec->label_shape;
    return gst_tensor_label_check (t, i, s.channel, s.height, s.width, form,
        why);
  }
  tt_model_input_shape (spec->model, i, &s);
  return gst_tensor_desc_check_model (t, i, "input", s.channel, s.height,
      s.width, FALSE, why);
}

gboolean
gst_tensor_samples_check_flexible (guint i, const GstTensorDesc * t,
    gpointer user_data, gchar ** why)
{
  GstTensorSampleSpec *spec = user_data;
  GstTensorLabelForm form;
  gchar *what = NULL, *expected;

  if (gst_tensor_samples_check_tensor (spec, i, t, &form, &what)) {
    /* the label's form, for the copy that follows */
    if (i == spec->n_inputs)
      spec->flex_label_form = form;
    return TRUE;
  }
  expected = gst_tensor_samples_expected (spec);
  *why = g_strdup_printf ("Flexible tensor does not fit the model: %s; the "
      "model takes %s.", what, expected);
  g_free (expected);
  g_free (what);
  return FALSE;
}

gboolean
gst_tensor_samples_read_caps (const GstTensorSampleSpec * spec,
    GstCaps * caps, GstTensorsDesc * desc, tt_dtype * types, gsize * bytes,
    GstTensorLabelForm * label_form, gchar ** why)
{
  const guint most = spec->n_inputs + 1;
  const guint least = spec->label_optional ? spec->n_inputs : most;

  *label_form = GST_TENSOR_LABEL_VECTOR;
  if (!gst_tensors_desc_from_caps (caps, desc, why))
    return FALSE;
  if (desc->format == GST_TENSOR_FORMAT_FLEXIBLE) {
    /* the tensors are described per buffer, in their headers */
    if (desc->num && (desc->num < least || desc->num > most)) {
      *why = g_strdup_printf ("%u tensors received", desc->num);
      return FALSE;
    }
    return TRUE;
  }
  if (desc->num < least || desc->num > most) {
    if (!spec->label_optional
        && gst_structure_has_name (gst_caps_get_structure (caps, 0),
            "other/tensor"))
      *why = g_strdup ("other/tensor carries one tensor and no label (put "
          "the label next to it with tensor_mux, or send other/tensors)");
    else
      *why = g_strdup_printf ("%u tensors received", desc->num);
    return FALSE;
  }
  for (guint i = 0; i < desc->num; i++) {
    const GstTensorDesc *t = &desc->tensors[i];
    if (!gst_tensor_samples_check_tensor (spec, i, t, label_form, why))
      return FALSE;
    if (i < spec->n_inputs) {
      types[i] = gst_tensor_samples_input_type (t);
      bytes[i] = gst_tensor_desc_bytes (t);
    }
  }
  return TRUE;
}

void
gst_tensor_samples_refuse_caps (GstElement * element,
    const GstTensorSampleSpec * spec, GstCaps * caps, gchar * why)
{
  gchar *expected = gst_tensor_samples_expected (spec);
  gchar *have = gst_caps_to_string (caps);

  GST_ELEMENT_ERROR (element, CORE, NEGOTIATION,
      ("Caps do not fit the model: %s; the model takes %s.", why, expected),
      ("received caps: %s", have));
  g_free (why);
  g_free (expected);
  g_free (have);
}

gboolean
gst_tensor_samples_read_flexible (GstElement * element,
    GstTensorSampleSpec * spec, GstBuffer * buf, GstTensorFlexSample * sample,
    guint64 sample_no)
{
  const guint most = spec->n_inputs + 1;
  const guint least = spec->label_optional ? spec->n_inputs : most;
  gchar *why = NULL;

  if (gst_tensor_flex_sample_read (buf, least, most, spec->n_inputs,
          gst_tensor_samples_check_flexible, spec, sample, &why))
    return TRUE;
  GST_ELEMENT_ERROR (element, STREAM, FORMAT, ("%s", why),
      ("sample %" G_GUINT64_FORMAT, sample_no));
  g_free (why);
  return FALSE;
}

gboolean
gst_tensor_samples_check_sizes (GstElement * element, GstBuffer * buf,
    guint ntens, guint n_inputs, const gsize * bytes, guint64 sample_no)
{
  const guint n_mem = gst_buffer_n_memory (buf);
  gsize total = 0;

  for (guint i = 0; i < ntens; i++)
    total += bytes[i];
  if (n_mem == ntens && ntens > 1) {
    for (guint i = 0; i < ntens; i++) {
      gsize size = gst_memory_get_sizes (gst_buffer_peek_memory (buf, i),
          NULL, NULL);
      if (size != bytes[i]) {
        GST_ELEMENT_ERROR (element, STREAM, FORMAT,
            ("Wrong buffer size: tensor %u (%s) holds %" G_GSIZE_FORMAT
                " bytes, expected %" G_GSIZE_FORMAT " bytes as the caps say.",
                i, i == n_inputs ? "label" : "input", size, bytes[i]),
            ("sample %" G_GUINT64_FORMAT, sample_no));
        return FALSE;
      }
    }
    return TRUE;
  }
  /* the tensors back to back, however the memories split them: they are
   * read with gst_buffer_extract, which crosses memories */
  if (gst_buffer_get_size (buf) != total) {
    GST_ELEMENT_ERROR (element, STREAM, FORMAT,
        ("Wrong buffer size: %" G_GSIZE_FORMAT " bytes in %u memories, "
            "expected %u memories (one per tensor) or %" G_GSIZE_FORMAT
            " bytes in all.", gst_buffer_get_size (buf), n_mem, ntens, total),
        ("sample %" G_GUINT64_FORMAT, sample_no));
    return FALSE;
  }
  return TRUE;
}

gsize
gst_tensor_samples_copy_inputs (GstBuffer * buf, guint n_inputs,
    const gsize * bytes, guint8 * const *batch, guint fill)
{
  gsize offset = 0;

  for (guint i = 0; i < n_inputs; i++) {
    gst_buffer_extract (buf, offset, batch[i] + bytes[i] * fill, bytes[i]);
    offset += bytes[i];
  }
  return offset;
}

GstFlowReturn
gst_tensor_samples_put_label (GstElement * element, GstBuffer * buf,
    gsize offset, const GstTensorDesc * desc, GstTensorLabelForm form,
    gfloat * dst, gsize count, guint64 sample_no)
{
  gchar *why = NULL;

  if (gst_tensor_label_extract (buf, offset, desc, form, dst, count, &why))
    return GST_FLOW_OK;
  GST_ELEMENT_ERROR (element, STREAM, FORMAT, ("Sample %" G_GUINT64_FORMAT
          ": %s.", sample_no, why), (NULL));
  g_free (why);
  return GST_FLOW_ERROR;
}
