/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Datarepo JSON parsing; see gsttensordatarepo.h.
 */
#include "gsttensordatarepo.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* A member that holds an integer (not a float, string, null, object or
 * array): TRUE with its value. */
static gboolean
gst_tensor_datarepo_get_int (JsonObject * obj, const gchar * name,
    gint64 * value)
{
  JsonNode *node = json_object_get_member (obj, name);
  if (!node || !JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_INT64)
    return FALSE;
  *value = json_node_get_int (node);
  return TRUE;
}

/* Member name as an array of non-negative integers, each at most max:
 * the array, or NULL with *error set. */
static JsonArray *
gst_tensor_datarepo_get_uint_array (JsonObject * obj, const gchar * name,
    guint64 max, gchar ** error)
{
  JsonNode *node = json_object_get_member (obj, name);
  JsonArray *array;
  guint n;
  if (!node || !JSON_NODE_HOLDS_ARRAY (node)) {
    *error = g_strdup_printf ("flexible tensors need a \"%s\" array.", name);
    return NULL;
  }
  array = json_node_get_array (node);
  n = json_array_get_length (array);
  for (guint i = 0; i < n; i++) {
    JsonNode *e = json_array_get_element (array, i);
    if (!JSON_NODE_HOLDS_VALUE (e)
        || json_node_get_value_type (e) != G_TYPE_INT64
        || json_node_get_int (e) < 0 || (guint64) json_node_get_int (e) > max) {
      *error = g_strdup_printf ("\"%s\"[%u] is not an integer in 0..%"
          G_GUINT64_FORMAT ".", name, i, max);
      return NULL;
    }
  }
  return array;
}

/* The sample_offset, tensor_size and tensor_count arrays of flexible
 * tensors into info (see gsttensordatarepo.h). */
static gboolean
gst_tensor_datarepo_parse_flexible (JsonObject * obj, guint64 total,
    GstTensorDataRepoInfo * info, gchar ** error)
{
  JsonArray *offsets, *sizes, *counts;
  guint n_sizes;

  if (!(offsets = gst_tensor_datarepo_get_uint_array (obj, "sample_offset",
              G_MAXSIZE, error))
      || !(sizes = gst_tensor_datarepo_get_uint_array (obj, "tensor_size",
              G_MAXSIZE, error))
      || !(counts = gst_tensor_datarepo_get_uint_array (obj, "tensor_count",
              G_MAXUINT, error)))
    return FALSE;
  if (json_array_get_length (offsets) != total
      || json_array_get_length (counts) != total) {
    *error = g_strdup_printf ("\"total_samples\" is %" G_GUINT64_FORMAT
        " but \"sample_offset\" lists %u and \"tensor_count\" %u.", total,
        json_array_get_length (offsets), json_array_get_length (counts));
    return FALSE;
  }
  n_sizes = json_array_get_length (sizes);
  info->n_tensors = n_sizes;
  info->sample_offsets = g_new (guint64, total);
  info->first_tensor = g_new (guint, total + 1);
  info->tensor_sizes = g_new (gsize, MAX (n_sizes, 1));
  for (guint j = 0; j < n_sizes; j++) {
    info->tensor_sizes[j] = (gsize) json_array_get_int_element (sizes, j);
    if (info->tensor_sizes[j] <= GST_TENSOR_META_HEADER_SIZE) {
      *error = g_strdup_printf ("\"tensor_size\"[%u] is %" G_GSIZE_FORMAT
          " bytes, not more than the %d-byte header of a flexible tensor.",
          j, info->tensor_sizes[j], GST_TENSOR_META_HEADER_SIZE);
      return FALSE;
    }
  }
  for (guint i = 0; i <= total; i++)
    info->first_tensor[i] = i < total ?
        (guint) json_array_get_int_element (counts, i) : n_sizes;
  if (info->first_tensor[0] != 0) {
    *error = g_strdup_printf ("\"tensor_count\"[0] is %u, not 0.",
        info->first_tensor[0]);
    return FALSE;
  }
  info->data_end = 0;
  for (guint i = 0; i < total; i++) {
    guint first = info->first_tensor[i], next = info->first_tensor[i + 1];
    guint64 end;
    if (next <= first || next > n_sizes
        || next - first > GST_TENSOR_MAX_TENSORS) {
      *error = g_strdup_printf ("sample %u: \"tensor_count\" goes from %u "
          "to %u (of %u \"tensor_size\" entries), but a sample holds 1 to "
          "%d tensors.", i, first, next, n_sizes, GST_TENSOR_MAX_TENSORS);
      return FALSE;
    }
    info->sample_offsets[i] = (guint64) json_array_get_int_element (offsets, i);
    end = info->sample_offsets[i];
    for (guint j = first; j < next; j++) {
      if (info->tensor_sizes[j] > G_MAXSIZE - end) {
        *error = g_strdup_printf ("sample %u (\"sample_offset\" %"
            G_GUINT64_FORMAT ") ends past %" G_GSIZE_FORMAT " bytes.", i,
            info->sample_offsets[i], G_MAXSIZE);
        return FALSE;
      }
      end += info->tensor_sizes[j];
    }
    info->data_end = MAX (info->data_end, end);
  }
  return TRUE;
}

/* Tensor caps never nest lists or ranges: a caps string that does came
 * from somewhere else, and GStreamer 1.22's gst_caps_from_string both
 * leaks on deeply nested lists it refuses and backtracks through nested
 * brackets in exponential time (a 1.5 KB string took 30 s). The file is
 * data nobody checked, so such strings are refused before GStreamer
 * parses them. Quoted text is skipped. */
#define GST_TENSOR_DATAREPO_MAX_NESTING 4

static gboolean
gst_tensor_datarepo_nesting_ok (const gchar * s)
{
  guint depth = 0;
  gboolean quoted = FALSE;
  for (; *s; s++) {
    if (quoted) {
      if (*s == '\\' && s[1])
        s++;
      else if (*s == '"')
        quoted = FALSE;
    } else if (*s == '"') {
      quoted = TRUE;
    } else if (*s == '[' || *s == '{' || *s == '<') {
      if (++depth > GST_TENSOR_DATAREPO_MAX_NESTING)
        return FALSE;
    } else if ((*s == ']' || *s == '}' || *s == '>') && depth > 0) {
      depth--;
    }
  }
  return TRUE;
}

GstTensorDataRepoStatus
gst_tensor_datarepo_parse (const gchar * text, gssize length,
    GstTensorDataRepoInfo * info, gchar ** error)
{
  JsonParser *parser = json_parser_new ();
  GError *gerr = NULL;
  JsonNode *root, *node;
  JsonObject *obj;
  const gchar *caps_str;
  GstCaps *caps = NULL;
  gchar *why = NULL;
  gint64 total, sample_size = -1;
  GstTensorDataRepoStatus status = GST_TENSOR_DATAREPO_ERROR_FORMAT;

  memset (info, 0, sizeof *info);
  *error = NULL;
  if (!json_parser_load_from_data (parser, text, length, &gerr)) {
    *error = g_strdup_printf ("%s.", gerr->message);
    status = GST_TENSOR_DATAREPO_ERROR_SYNTAX;
    goto out;
  }
  root = json_parser_get_root (parser);
  if (!root || !JSON_NODE_HOLDS_OBJECT (root)) {
    *error = g_strdup ("not a JSON object.");
    goto out;
  }
  obj = json_node_get_object (root);
  /* (json_object_get_string_member is a critical on an object or array) */
  node = json_object_get_member (obj, "gst_caps");
  if (!node || !JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_STRING
      || !(caps_str = json_node_get_string (node))) {
    *error = g_strdup ("no \"gst_caps\" string.");
    goto out;
  }
  if (!gst_tensor_datarepo_get_int (obj, "total_samples", &total)
      || total <= 0) {
    *error = g_strdup ("\"total_samples\" is missing or not a positive "
        "integer.");
    goto out;
  }
  if (json_object_has_member (obj, "sample_size")
      && (!gst_tensor_datarepo_get_int (obj, "sample_size", &sample_size)
          || sample_size <= 0)) {
    *error = g_strdup ("\"sample_size\" is not a positive integer.");
    goto out;
  }
  if (!gst_tensor_datarepo_nesting_ok (caps_str)) {
    *error = g_strdup_printf ("\"gst_caps\" nests lists or ranges more "
        "than %d deep, which tensor caps never do.",
        GST_TENSOR_DATAREPO_MAX_NESTING);
    goto out;
  }
  caps = gst_caps_from_string (caps_str);
  if (!caps) {
    *error = g_strdup_printf ("\"gst_caps\" is not a caps string: %s",
        caps_str);
    goto out;
  }
  if (!gst_tensors_desc_from_caps (caps, &info->desc, &why)) {
    *error = g_strdup_printf ("\"gst_caps\": %s.", why);
    goto out;
  }
  if ((guint64) total > G_MAXUINT) {
    *error = g_strdup_printf ("\"total_samples\" %" G_GINT64_FORMAT " is too "
        "large.", total);
    goto out;
  }
  if (info->desc.format == GST_TENSOR_FORMAT_FLEXIBLE) {
    if (!gst_tensor_datarepo_parse_flexible (obj, (guint64) total, info, error))
      goto out;
    info->total = (guint64) total;
    status = GST_TENSOR_DATAREPO_OK;
    goto out;
  }
  info->sample_size = 0;
  for (guint i = 0; i < info->desc.num; i++) {
    info->offsets[i] = info->sample_size;
    info->sizes[i] = gst_tensor_desc_bytes (&info->desc.tensors[i]);
    /* each fits a gsize, their sum need not (and wrapped to 0 it would
     * divide by zero below) */
    if (info->sizes[i] > G_MAXSIZE - info->sample_size) {
      *error = g_strdup_printf ("the tensors of \"gst_caps\" make more than "
          "%" G_GSIZE_FORMAT " bytes per sample.", G_MAXSIZE);
      goto out;
    }
    info->sample_size += info->sizes[i];
  }
  if (sample_size >= 0 && (guint64) sample_size != info->sample_size) {
    *error = g_strdup_printf ("\"sample_size\" is %" G_GINT64_FORMAT
        " bytes but the tensors of \"gst_caps\" make %" G_GSIZE_FORMAT ".",
        sample_size, info->sample_size);
    goto out;
  }
  if ((guint64) total > G_MAXSIZE / info->sample_size) {
    *error = g_strdup_printf ("\"total_samples\" %" G_GINT64_FORMAT " is too "
        "large.", total);
    goto out;
  }
  info->total = (guint64) total;
  status = GST_TENSOR_DATAREPO_OK;
out:
  g_clear_error (&gerr);
  g_free (why);
  if (caps)
    gst_caps_unref (caps);
  g_object_unref (parser);
  return status;
}

void
gst_tensor_datarepo_info_clear (GstTensorDataRepoInfo * info)
{
  g_clear_pointer (&info->sample_offsets, g_free);
  g_clear_pointer (&info->first_tensor, g_free);
  g_clear_pointer (&info->tensor_sizes, g_free);
}
