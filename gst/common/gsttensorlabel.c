/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Labels: a float32 vector of the model's label shape, or a class index
 * (gsttensorlabel.h). Indexes are read in host byte order, as nnstreamer
 * stores tensors.
 */
#include "gsttensorlabel.h"

#include <math.h>
#include <string.h>

static gboolean
label_index_type (GstTensorType type)
{
  switch (type) {
    case GST_TENSOR_TYPE_INT8:
    case GST_TENSOR_TYPE_UINT8:
    case GST_TENSOR_TYPE_INT16:
    case GST_TENSOR_TYPE_UINT16:
    case GST_TENSOR_TYPE_INT32:
    case GST_TENSOR_TYPE_UINT32:
    case GST_TENSOR_TYPE_INT64:
    case GST_TENSOR_TYPE_UINT64:
    case GST_TENSOR_TYPE_FLOAT32:
    case GST_TENSOR_TYPE_FLOAT64:
      return TRUE;
    default:
      return FALSE;
  }
}

gboolean
gst_tensor_label_check (const GstTensorDesc * desc, guint i,
    guint32 channel, guint32 height, guint32 width, GstTensorLabelForm * form,
    gchar ** why)
{
  const guint64 classes = (guint64) channel * height * width;
  gchar *vector_why = NULL;

  /* one element for several classes can only be an index (a model with
   * one output value takes the value itself) */
  if (classes > 1 && gst_tensor_desc_count (desc) == 1 &&
      label_index_type (desc->type)) {
    *form = GST_TENSOR_LABEL_INDEX;
    return TRUE;
  }
  if (gst_tensor_desc_check_model (desc, i, "label", channel, height, width,
          TRUE, &vector_why)) {
    *form = GST_TENSOR_LABEL_VECTOR;
    return TRUE;
  }
  if (classes > 1) {
    *why = g_strdup_printf ("%s (or a class index: one element of an "
        "integer type, float32 or float64)", vector_why);
    g_free (vector_why);
  } else {
    *why = vector_why;
  }
  return FALSE;
}

/* The index held by data, as a double (exact for every integer below
 * 2^53; larger ones are no class anyway). */
static gdouble
label_index_value (GstTensorType type, const guint8 * data)
{
  union
  {
    gint8 i8;
    guint8 u8;
    gint16 i16;
    guint16 u16;
    gint32 i32;
    guint32 u32;
    gint64 i64;
    guint64 u64;
    gfloat f32;
    gdouble f64;
  } v;
  memcpy (&v, data, gst_tensor_type_size (type));
  switch (type) {
    case GST_TENSOR_TYPE_INT8:
      return v.i8;
    case GST_TENSOR_TYPE_UINT8:
      return v.u8;
    case GST_TENSOR_TYPE_INT16:
      return v.i16;
    case GST_TENSOR_TYPE_UINT16:
      return v.u16;
    case GST_TENSOR_TYPE_INT32:
      return v.i32;
    case GST_TENSOR_TYPE_UINT32:
      return v.u32;
    case GST_TENSOR_TYPE_INT64:
      return (gdouble) v.i64;
    case GST_TENSOR_TYPE_UINT64:
      return (gdouble) v.u64;
    case GST_TENSOR_TYPE_FLOAT32:
      return v.f32;
    case GST_TENSOR_TYPE_FLOAT64:
      return v.f64;
    default:
      return NAN;
  }
}

gboolean
gst_tensor_label_extract (GstBuffer * buf, gsize offset,
    const GstTensorDesc * desc, GstTensorLabelForm form, gfloat * dst,
    gsize count, gchar ** why)
{
  guint8 raw[8];
  gdouble v;

  if (form == GST_TENSOR_LABEL_VECTOR) {
    gst_buffer_extract (buf, offset, dst, count * sizeof (gfloat));
    return TRUE;
  }
  gst_buffer_extract (buf, offset, raw, gst_tensor_type_size (desc->type));
  v = label_index_value (desc->type, raw);
  if (!(v >= 0 && v < (gdouble) count && v == floor (v))) {
    *why = g_strdup_printf ("the label %g (%s) is not a class index: the "
        "model has %" G_GSIZE_FORMAT " classes, 0 .. %" G_GSIZE_FORMAT, v,
        gst_tensor_type_name (desc->type), count, count - 1);
    return FALSE;
  }
  memset (dst, 0, count * sizeof (gfloat));
  dst[(gsize) v] = 1.0f;
  return TRUE;
}
