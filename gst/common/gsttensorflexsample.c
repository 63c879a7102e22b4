/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading one sample of flexible tensors; see gsttensorflexsample.h.
 */
#include "gsttensorflexsample.h"

static const gchar *
gst_tensor_flex_sample_role (guint i, guint label_index)
{
  return i == label_index ? "label" : "input";
}

gboolean
gst_tensor_flex_sample_read (GstBuffer * buf, guint min, guint max,
    guint label_index, GstTensorFlexCheck check, gpointer user_data,
    GstTensorFlexSample * sample, gchar ** why)
{
  const guint n_mem = gst_buffer_n_memory (buf);
  const gsize total = gst_buffer_get_size (buf);
  /* one memory per tensor, as nnstreamer sends them */
  const gboolean per_memory = n_mem > 1 && n_mem >= min && n_mem <= max;
  gsize offset = 0, mem_start = 0, prev_start = 0;
  guint i;

  g_return_val_if_fail (max <= GST_TENSOR_MAX_TENSORS && min <= max, FALSE);
  *why = NULL;
  for (i = 0; i < max && (i < min || offset < total
          || (per_memory && i < n_mem)); i++) {
    guint8 header[GST_TENSOR_META_HEADER_SIZE];
    GstTensorDesc *t = &sample->tensors[i];
    gchar *bad = NULL;
    gsize size;

    if (per_memory) {
      if (offset != mem_start) {
        *why = g_strdup_printf ("Wrong buffer size: memory %u holds %"
            G_GSIZE_FORMAT " bytes, but flexible tensor %u is %"
            G_GSIZE_FORMAT " bytes of header and data.", i - 1,
            mem_start - prev_start, i - 1, offset - prev_start);
        return FALSE;
      }
      if (i < n_mem)
        mem_start += gst_memory_get_sizes (gst_buffer_peek_memory (buf, i),
            NULL, NULL);
    }
    prev_start = offset;
    if (gst_buffer_extract (buf, offset, header, sizeof header) !=
        sizeof header) {
      *why = g_strdup_printf ("Wrong buffer size: %" G_GSIZE_FORMAT " bytes "
          "hold no header for flexible tensor %u of %u (at byte %"
          G_GSIZE_FORMAT ").", total, i, MAX (min, i + 1), offset);
      return FALSE;
    }
    if (!gst_tensor_meta_parse (header, t, &bad)) {
      *why = g_strdup_printf ("Bad flexible tensor header: tensor %u (%s): "
          "%s.", i, gst_tensor_flex_sample_role (i, label_index), bad);
      g_free (bad);
      return FALSE;
    }
    if (check && !check (i, t, user_data, why))
      return FALSE;
    offset += sizeof header;
    size = gst_tensor_desc_bytes (t);
    if (total - offset < size) {
      *why = g_strdup_printf ("Wrong buffer size: flexible tensor %u "
          "announces %" G_GSIZE_FORMAT " bytes of data, %" G_GSIZE_FORMAT
          " are left.", i, size, total - offset);
      return FALSE;
    }
    sample->offsets[i] = offset;
    offset += size;
  }
  sample->num = i;
  if (per_memory && offset != mem_start) {
    *why = g_strdup_printf ("Wrong buffer size: memory %u holds %"
        G_GSIZE_FORMAT " bytes, but flexible tensor %u is %" G_GSIZE_FORMAT
        " bytes of header and data.", i - 1, mem_start - prev_start, i - 1,
        offset - prev_start);
    return FALSE;
  }
  if (offset != total) {
    *why = g_strdup_printf ("Wrong buffer size: %" G_GSIZE_FORMAT " bytes, "
        "but %u flexible tensors (at most %u) make %" G_GSIZE_FORMAT
        " bytes of headers and data.", total, i, max, offset);
    return FALSE;
  }
  return TRUE;
}
