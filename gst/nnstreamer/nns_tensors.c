/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "nns_tensors.h"

#include <stdio.h>

gsize
tt_nns_element_size (tensor_type type)
{
  switch (type) {
    case _NNS_INT8:
    case _NNS_UINT8:
      return 1;
    case _NNS_INT16:
    case _NNS_UINT16:
      return 2;
    case _NNS_INT32:
    case _NNS_UINT32:
    case _NNS_FLOAT32:
      return 4;
    case _NNS_INT64:
    case _NNS_UINT64:
    case _NNS_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

const gchar *
tt_nns_type_name (tensor_type type)
{
  switch (type) {
    case _NNS_INT32:
      return "int32";
    case _NNS_UINT32:
      return "uint32";
    case _NNS_INT16:
      return "int16";
    case _NNS_UINT16:
      return "uint16";
    case _NNS_INT8:
      return "int8";
    case _NNS_UINT8:
      return "uint8";
    case _NNS_FLOAT64:
      return "float64";
    case _NNS_FLOAT32:
      return "float32";
    case _NNS_INT64:
      return "int64";
    case _NNS_UINT64:
      return "uint64";
    case _NNS_FLOAT16:
      return "float16";
    default:
      return "unknown";
  }
}

gsize
tt_nns_info_count (const GstTensorInfo * info)
{
  gsize count = 1;
  for (guint i = 0; i < NNS_TENSOR_RANK_LIMIT && info->dimension[i]; i++)
    count *= info->dimension[i];
  return info->dimension[0] ? count : 0;
}

const gchar *
tt_nns_dims_string (const GstTensorInfo * info, gchar * buf, gsize size)
{
  snprintf (buf, size, "%u:%u:%u:%u", info->dimension[0], info->dimension[1],
      info->dimension[2], info->dimension[3]);
  return buf;
}

/* (one loop per type: the compiler vectorizes each) */
#define TT_NNS_CONVERT(ctype) \
  do { \
    const ctype *s = src; \
    for (gsize k = 0; k < n; k++) \
      dst[k] = (gfloat) s[k]; \
  } while (0)

gboolean
tt_nns_to_float (const void *src, tensor_type type, gsize n, gfloat * dst)
{
  switch (type) {
    case _NNS_INT8:
      TT_NNS_CONVERT (gint8);
      return TRUE;
    case _NNS_UINT8:
      TT_NNS_CONVERT (guint8);
      return TRUE;
    case _NNS_INT16:
      TT_NNS_CONVERT (gint16);
      return TRUE;
    case _NNS_UINT16:
      TT_NNS_CONVERT (guint16);
      return TRUE;
    case _NNS_INT32:
      TT_NNS_CONVERT (gint32);
      return TRUE;
    case _NNS_UINT32:
      TT_NNS_CONVERT (guint32);
      return TRUE;
    case _NNS_INT64:
      TT_NNS_CONVERT (gint64);
      return TRUE;
    case _NNS_UINT64:
      TT_NNS_CONVERT (guint64);
      return TRUE;
    case _NNS_FLOAT32:
      TT_NNS_CONVERT (gfloat);
      return TRUE;
    case _NNS_FLOAT64:
      TT_NNS_CONVERT (gdouble);
      return TRUE;
    default:
      return FALSE;
  }
}

void
tt_nns_info_set_shape (GstTensorInfo * info, tt_shape shape)
{
  info->type = _NNS_FLOAT32;
  for (guint i = 0; i < NNS_TENSOR_RANK_LIMIT; i++)
    info->dimension[i] = 0;
  info->dimension[0] = shape.width;
  info->dimension[1] = shape.height;
  info->dimension[2] = shape.channel;
  info->dimension[3] = 1;
}

gboolean
tt_nns_info_is_shape (const GstTensorInfo * info, tt_shape shape)
{
  const guint32 want[3] = { shape.width, shape.height, shape.channel };
  gboolean ended = FALSE;

  if (info->dimension[0] == 0)
    return FALSE;
  for (guint i = 0; i < NNS_TENSOR_RANK_LIMIT; i++) {
    guint32 d = info->dimension[i];
    /* the ranks after the first 0 are not used: 1s */
    ended = ended || d == 0;
    if (ended)
      d = 1;
    if (d != (i < 3 ? want[i] : 1))
      return FALSE;
  }
  return TRUE;
}
