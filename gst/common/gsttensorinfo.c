/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nnstreamer tensor caps helpers; see gsttensorinfo.h.
 */
#include "gsttensorinfo.h"

#include <string.h>

static const struct
{
  const gchar *name;
  GstTensorType type;
  gsize size;
} gst_tensor_types[] = {
  {"int8", GST_TENSOR_TYPE_INT8, 1},
  {"uint8", GST_TENSOR_TYPE_UINT8, 1},
  {"int16", GST_TENSOR_TYPE_INT16, 2},
  {"uint16", GST_TENSOR_TYPE_UINT16, 2},
  {"int32", GST_TENSOR_TYPE_INT32, 4},
  {"uint32", GST_TENSOR_TYPE_UINT32, 4},
  {"int64", GST_TENSOR_TYPE_INT64, 8},
  {"uint64", GST_TENSOR_TYPE_UINT64, 8},
  {"float16", GST_TENSOR_TYPE_FLOAT16, 2},
  {"float32", GST_TENSOR_TYPE_FLOAT32, 4},
  {"float64", GST_TENSOR_TYPE_FLOAT64, 8},
};

const gchar *
gst_tensor_type_name (GstTensorType type)
{
  for (gsize i = 0; i < G_N_ELEMENTS (gst_tensor_types); i++)
    if (gst_tensor_types[i].type == type)
      return gst_tensor_types[i].name;
  return "invalid";
}

GstTensorType
gst_tensor_type_from_name (const gchar * name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (gst_tensor_types); i++)
    if (g_ascii_strcasecmp (gst_tensor_types[i].name, name) == 0)
      return gst_tensor_types[i].type;
  return GST_TENSOR_TYPE_INVALID;
}

gsize
gst_tensor_type_size (GstTensorType type)
{
  for (gsize i = 0; i < G_N_ELEMENTS (gst_tensor_types); i++)
    if (gst_tensor_types[i].type == type)
      return gst_tensor_types[i].size;
  return 0;
}

guint64
gst_tensor_desc_count (const GstTensorDesc * desc)
{
  guint64 n = 1;
  for (guint i = 0; i < desc->rank; i++) {
    /* 16 dims of up to 2^32 each can overflow 64 bits */
    if (desc->dims[i] && n > G_MAXUINT64 / desc->dims[i])
      return 0;
    n *= desc->dims[i];
  }
  return n;
}

gsize
gst_tensor_desc_bytes (const GstTensorDesc * desc)
{
  guint64 n = gst_tensor_desc_count (desc);
  gsize size = gst_tensor_type_size (desc->type);
  if (n == 0 || size == 0 || n > G_MAXSIZE / size)
    return 0;
  return (gsize) (n) * size;
}

gchar *
gst_tensor_desc_dims_string (const GstTensorDesc * desc)
{
  GString *s = g_string_new (NULL);
  guint shown = MAX (desc->rank, 4);
  for (guint i = 0; i < shown; i++)
    g_string_append_printf (s, "%s%u", i ? ":" : "",
        i < desc->rank ? desc->dims[i] : 1);
  return g_string_free (s, FALSE);
}

gchar *
gst_tensor_desc_caps_dims_string (const GstTensorDesc * desc)
{
  GString *s = g_string_new (NULL);
  guint significant = 1, shown;
  for (guint i = 0; i < desc->rank; i++)
    if (desc->dims[i] > 1)
      significant = i + 1;
  /* one trailing 1 stays: nnstreamer's outermost (batch) dimension */
  shown = MIN (desc->rank, significant + 1);
  for (guint i = 0; i < shown; i++)
    g_string_append_printf (s, "%s%u", i ? ":" : "", desc->dims[i]);
  return g_string_free (s, FALSE);
}

gboolean
gst_tensors_desc_equal (const GstTensorsDesc * a, const GstTensorsDesc * b)
{
  if (a->format != b->format || a->num != b->num)
    return FALSE;
  for (guint i = 0; i < a->num; i++) {
    const GstTensorDesc *x = &a->tensors[i], *y = &b->tensors[i];
    if (x->type != y->type)
      return FALSE;
    for (guint d = 0; d < MAX (x->rank, y->rank); d++)
      if ((d < x->rank ? x->dims[d] : 1) != (d < y->rank ? y->dims[d] : 1))
        return FALSE;
  }
  return TRUE;
}

/* Splits a tensor list on ',' or '.', trimming blanks around each item. */
static gchar **
gst_tensor_split_list (const gchar * s)
{
  gchar **parts = g_strsplit_set (s, ",.", -1);
  for (gchar ** p = parts; *p; p++)
    g_strstrip (*p);
  return parts;
}

static gboolean
gst_tensor_parse_dims (const gchar * s, GstTensorDesc * desc, gchar ** error)
{
  gchar **parts = g_strsplit (s, ":", -1);
  guint n = g_strv_length (parts);
  gboolean ok = n >= 1 && n <= GST_TENSOR_RANK_LIMIT;
  if (!ok)
    *error = g_strdup_printf ("dimension \"%s\" has %u entries; 1 to %u are "
        "allowed", s, n, GST_TENSOR_RANK_LIMIT);
  for (guint i = 0; ok && i < n; i++) {
    guint64 v;
    gchar *end = NULL;
    g_strstrip (parts[i]);
    v = g_ascii_strtoull (parts[i], &end, 10);
    if (parts[i][0] == '\0' || *end != '\0' || v == 0 || v > G_MAXUINT32) {
      *error = g_strdup_printf ("dimension \"%s\": \"%s\" is not a positive "
          "integer", s, parts[i]);
      ok = FALSE;
    }
    desc->dims[i] = (guint32) v;
  }
  desc->rank = n;
  g_strfreev (parts);
  return ok;
}

/* The tensors of a static list: num_tensors, dimensions, types. */
static gboolean
gst_tensors_parse_list (const GstStructure * st, GstTensorsDesc * desc,
    gchar ** error)
{
  const gchar *dims, *types;
  gint num;
  gchar **dim_list = NULL, **type_list = NULL;
  gboolean ok = FALSE;

  if (!gst_structure_get_int (st, "num_tensors", &num) || num < 1
      || num > GST_TENSOR_MAX_TENSORS) {
    *error = g_strdup_printf ("num_tensors is missing or not in 1..%d",
        GST_TENSOR_MAX_TENSORS);
    return FALSE;
  }
  dims = gst_structure_get_string (st, "dimensions");
  types = gst_structure_get_string (st, "types");
  if (!dims || !types) {
    *error = g_strdup ("dimensions or types is missing");
    return FALSE;
  }
  dim_list = gst_tensor_split_list (dims);
  type_list = gst_tensor_split_list (types);
  if (g_strv_length (dim_list) != (guint) num
      || g_strv_length (type_list) != (guint) num) {
    *error = g_strdup_printf ("num_tensors=%d but dimensions=\"%s\" lists %u "
        "and types=\"%s\" lists %u", num, dims, g_strv_length (dim_list),
        types, g_strv_length (type_list));
    goto out;
  }
  desc->num = (guint) num;
  for (gint i = 0; i < num; i++) {
    if (!gst_tensor_parse_dims (dim_list[i], &desc->tensors[i], error))
      goto out;
    desc->tensors[i].type = gst_tensor_type_from_name (type_list[i]);
    if (desc->tensors[i].type == GST_TENSOR_TYPE_INVALID) {
      *error = g_strdup_printf ("unknown tensor type \"%s\"", type_list[i]);
      goto out;
    }
    if (gst_tensor_desc_bytes (&desc->tensors[i]) == 0) {
      *error = g_strdup_printf ("tensor %d (%s) is too large", i, dim_list[i]);
      goto out;
    }
  }
  ok = TRUE;
out:
  g_strfreev (dim_list);
  g_strfreev (type_list);
  return ok;
}

gboolean
gst_tensors_desc_from_caps (const GstCaps * caps, GstTensorsDesc * desc,
    gchar ** error)
{
  const GstStructure *st;
  const gchar *format;

  memset (desc, 0, sizeof *desc);
  *error = NULL;
  if (!caps || gst_caps_get_size (caps) != 1 || !gst_caps_is_fixed (caps)) {
    *error = g_strdup ("caps are not fixed");
    return FALSE;
  }
  st = gst_caps_get_structure (caps, 0);
  if (gst_structure_has_name (st, "other/tensor")) {
    /* the legacy single form: one tensor, static */
    const gchar *dim = gst_structure_get_string (st, "dimension");
    const gchar *type = gst_structure_get_string (st, "type");
    if (!dim || !type) {
      *error = g_strdup ("other/tensor without dimension or type");
      return FALSE;
    }
    desc->num = 1;
    if (!gst_tensor_parse_dims (dim, &desc->tensors[0], error))
      return FALSE;
    desc->tensors[0].type = gst_tensor_type_from_name (type);
    if (desc->tensors[0].type == GST_TENSOR_TYPE_INVALID) {
      *error = g_strdup_printf ("unknown tensor type \"%s\"", type);
      return FALSE;
    }
    if (gst_tensor_desc_bytes (&desc->tensors[0]) == 0) {
      *error = g_strdup_printf ("tensor %s is too large", dim);
      return FALSE;
    }
    return TRUE;
  }
  if (!gst_structure_has_name (st, "other/tensors")) {
    *error = g_strdup_printf ("media type is %s, not other/tensors",
        gst_structure_get_name (st));
    return FALSE;
  }
  format = gst_structure_get_string (st, "format");
  if (format && g_strcmp0 (format, "flexible") == 0) {
    gint num;
    desc->format = GST_TENSOR_FORMAT_FLEXIBLE;
    if (gst_structure_get_int (st, "num_tensors", &num)) {
      if (num < 1 || num > GST_TENSOR_MAX_TENSORS) {
        *error = g_strdup_printf ("num_tensors=%d is not in 1..%d", num,
            GST_TENSOR_MAX_TENSORS);
        return FALSE;
      }
      desc->num = (guint) num;
    }
    return TRUE;
  }
  if (format && g_strcmp0 (format, "static") != 0) {
    *error = g_strdup_printf ("format=%s is not supported (only static and "
        "flexible)", format);
    return FALSE;
  }
  return gst_tensors_parse_list (st, desc, error);
}

/* nnstreamer's tensor_type enum, in its order */
static const GstTensorType gst_tensor_meta_types[] = {
  GST_TENSOR_TYPE_INT32, GST_TENSOR_TYPE_UINT32, GST_TENSOR_TYPE_INT16,
  GST_TENSOR_TYPE_UINT16, GST_TENSOR_TYPE_INT8, GST_TENSOR_TYPE_UINT8,
  GST_TENSOR_TYPE_FLOAT64, GST_TENSOR_TYPE_FLOAT32, GST_TENSOR_TYPE_INT64,
  GST_TENSOR_TYPE_UINT64, GST_TENSOR_TYPE_FLOAT16,
};

gboolean
gst_tensor_meta_parse (const guint8 * header, GstTensorDesc * desc,
    gchar ** error)
{
  guint32 v[22];
  guint rank = 0;

  memcpy (v, header, sizeof v);
  memset (desc, 0, sizeof *desc);
  *error = NULL;
  if (v[0] != GST_TENSOR_META_MAGIC) {
    *error = g_strdup_printf ("magic is 0x%08x, not 0x%08x: not a flexible "
        "tensor header", v[0], GST_TENSOR_META_MAGIC);
    return FALSE;
  }
  /* version: 0xDE000000 marks it, bits 12..23 the major version (1 is the
   * one with a 128-byte header) */
  if ((v[1] & 0xFF000000u) != 0xDE000000u || ((v[1] >> 12) & 0xFFF) != 1) {
    *error = g_strdup_printf ("version 0x%08x is not 1.x (0x%08x)", v[1],
        GST_TENSOR_META_VERSION);
    return FALSE;
  }
  if (v[2] >= G_N_ELEMENTS (gst_tensor_meta_types)) {
    *error = g_strdup_printf ("type %u is not a tensor type (0..%u)", v[2],
        (guint) G_N_ELEMENTS (gst_tensor_meta_types) - 1);
    return FALSE;
  }
  desc->type = gst_tensor_meta_types[v[2]];
  while (rank < GST_TENSOR_RANK_LIMIT && v[3 + rank] != 0) {
    desc->dims[rank] = v[3 + rank];
    rank++;
  }
  for (guint i = rank; i < GST_TENSOR_RANK_LIMIT; i++)
    if (v[3 + i] != 0) {
      *error = g_strdup_printf ("dimension %u is 0 but dimension %u is %u",
          rank, i, v[3 + i]);
      return FALSE;
    }
  if (rank == 0) {
    *error = g_strdup ("no dimension (the first is 0)");
    return FALSE;
  }
  desc->rank = rank;
  if (v[19] == 2) {
    *error = g_strdup ("format is sparse, which is not supported");
    return FALSE;
  }
  if (v[19] > 2) {
    *error = g_strdup_printf ("format %u is not static (0), flexible (1) or "
        "sparse (2)", v[19]);
    return FALSE;
  }
  if (v[20] > 4) {
    *error = g_strdup_printf ("media type %u is not one of 0..4", v[20]);
    return FALSE;
  }
  if (gst_tensor_desc_bytes (desc) == 0) {
    gchar *d = gst_tensor_desc_dims_string (desc);
    *error = g_strdup_printf ("tensor %s is too large", d);
    g_free (d);
    return FALSE;
  }
  return TRUE;
}

void
gst_tensor_meta_write (const GstTensorDesc * desc, guint8 * header)
{
  guint32 v[GST_TENSOR_META_HEADER_SIZE / 4] = { 0 };
  v[0] = GST_TENSOR_META_MAGIC;
  v[1] = GST_TENSOR_META_VERSION;
  for (guint i = 0; i < G_N_ELEMENTS (gst_tensor_meta_types); i++)
    if (gst_tensor_meta_types[i] == desc->type)
      v[2] = i;
  for (guint i = 0; i < desc->rank; i++)
    v[3 + i] = desc->dims[i];
  v[19] = 1;                    /* flexible */
  v[20] = 4;                    /* tensor */
  memcpy (header, v, sizeof v);
}

GstCaps *
gst_tensors_desc_to_caps (const GstTensorsDesc * desc, gint fps_n, gint fps_d)
{
  GString *dims = g_string_new (NULL), *types = g_string_new (NULL);
  GstCaps *caps;
  if (desc->format == GST_TENSOR_FORMAT_FLEXIBLE) {
    g_string_free (dims, TRUE);
    g_string_free (types, TRUE);
    /* each memory's header describes its tensor */
    return gst_caps_new_simple ("other/tensors",
        "format", G_TYPE_STRING, "flexible",
        "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
  }
  for (guint i = 0; i < desc->num; i++) {
    gchar *d = gst_tensor_desc_caps_dims_string (&desc->tensors[i]);
    g_string_append_printf (dims, "%s%s", i ? "," : "", d);
    g_string_append_printf (types, "%s%s", i ? "," : "",
        gst_tensor_type_name (desc->tensors[i].type));
    g_free (d);
  }
  caps = gst_caps_new_simple ("other/tensors",
      "format", G_TYPE_STRING, "static",
      "num_tensors", G_TYPE_INT, (gint) desc->num,
      "dimensions", G_TYPE_STRING, dims->str,
      "types", G_TYPE_STRING, types->str,
      "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
  g_string_free (dims, TRUE);
  g_string_free (types, TRUE);
  return caps;
}

gboolean
gst_tensor_desc_matches_shape (const GstTensorDesc * desc, guint32 channel,
    guint32 height, guint32 width)
{
  const guint32 want_all[3] = { width, height, channel };
  guint32 want[3], have[GST_TENSOR_RANK_LIMIT];
  guint nw = 0, nh = 0;
  guint64 want_count = (guint64) width * height * channel;
  for (guint i = 0; i < 3; i++)
    if (want_all[i] != 1)
      want[nw++] = want_all[i];
  for (guint i = 0; i < desc->rank; i++)
    if (desc->dims[i] != 1)
      have[nh++] = desc->dims[i];
  /* a flat side has no layout: the element count decides */
  if (nw <= 1 || nh <= 1)
    return gst_tensor_desc_count (desc) == want_count;
  if (nw != nh)
    return FALSE;
  for (guint i = 0; i < nw; i++)
    if (want[i] != have[i])
      return FALSE;
  return TRUE;
}

gchar *
gst_tensor_shape_dims_string (guint32 channel, guint32 height, guint32 width)
{
  return g_strdup_printf ("%u:%u:%u:1", width, height, channel);
}

gboolean
gst_tensor_desc_check_model (const GstTensorDesc * desc, guint i,
    const gchar * what, guint32 channel, guint32 height, guint32 width,
    gboolean float_only, gchar ** why)
{
  if (!gst_tensor_desc_matches_shape (desc, channel, height, width)) {
    gchar *want = gst_tensor_shape_dims_string (channel, height, width);
    gchar *have = gst_tensor_desc_dims_string (desc);
    *why = g_strdup_printf ("tensor %u (%s) has dimensions %s, expected %s "
        "(model shape %u:%u:%u)", i, what, have, want, channel, height, width);
    g_free (want);
    g_free (have);
    return FALSE;
  }
  if (desc->type != GST_TENSOR_TYPE_FLOAT32 &&
      (float_only || desc->type != GST_TENSOR_TYPE_UINT8)) {
    *why = g_strdup_printf ("tensor %u (%s) has type %s, expected %s", i,
        what, gst_tensor_type_name (desc->type),
        float_only ? "float32" : "uint8 or float32");
    return FALSE;
  }
  return TRUE;
}
