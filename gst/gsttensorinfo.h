/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nnstreamer's tensor caps, as far as the elements of this plugin need
 * them: parsing `other/tensors` (static) into a list of tensor dimensions
 * and types, printing them back, and comparing a tensor with a model shape.
 *
 * nnstreamer writes dimensions innermost first: a tensor "d0:d1:d2:d3" is
 * stored with d0 varying fastest. A model input of nntrainer's
 * channel:height:width (NCHW, width fastest) is therefore "W:H:C:1".
 */
#ifndef __GST_TENSOR_INFO_H__
#define __GST_TENSOR_INFO_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* nnstreamer's limits: 16 tensors per buffer, rank 16 (it prints 4). */
#define GST_TENSOR_MAX_TENSORS 16
#define GST_TENSOR_RANK_LIMIT 16

typedef enum
{
  GST_TENSOR_TYPE_INVALID = 0,
  GST_TENSOR_TYPE_INT8,
  GST_TENSOR_TYPE_UINT8,
  GST_TENSOR_TYPE_INT16,
  GST_TENSOR_TYPE_UINT16,
  GST_TENSOR_TYPE_INT32,
  GST_TENSOR_TYPE_UINT32,
  GST_TENSOR_TYPE_INT64,
  GST_TENSOR_TYPE_UINT64,
  GST_TENSOR_TYPE_FLOAT16,
  GST_TENSOR_TYPE_FLOAT32,
  GST_TENSOR_TYPE_FLOAT64,
} GstTensorType;

/* One tensor. Invariant: 1 <= rank <= GST_TENSOR_RANK_LIMIT and every
 * dims[0..rank-1] is non-zero; dims past rank count as 1. */
typedef struct
{
  guint rank;
  guint32 dims[GST_TENSOR_RANK_LIMIT];
  GstTensorType type;
} GstTensorDesc;

/* Invariant: 1 <= num <= GST_TENSOR_MAX_TENSORS. */
typedef struct
{
  guint num;
  GstTensorDesc tensors[GST_TENSOR_MAX_TENSORS];
} GstTensorsDesc;

const gchar *gst_tensor_type_name (GstTensorType type);
GstTensorType gst_tensor_type_from_name (const gchar * name);
gsize gst_tensor_type_size (GstTensorType type);

/* Elements of one sample of the tensor, and its bytes; 0 on overflow. */
guint64 gst_tensor_desc_count (const GstTensorDesc * desc);
gsize gst_tensor_desc_bytes (const GstTensorDesc * desc);

/* "d0:d1:d2:d3" (at least 4 entries, as nnstreamer prints them). */
gchar *gst_tensor_desc_dims_string (const GstTensorDesc * desc);

/*
 * Parses fixed `other/tensors` caps with format=static (a missing format
 * counts as static; `.` is accepted between tensors as nnstreamer does).
 * Returns FALSE with *error set to a sentence saying what is wrong.
 */
gboolean gst_tensors_desc_from_caps (const GstCaps * caps,
    GstTensorsDesc * desc, gchar ** error);

/* `other/tensors,format=static,...` for desc, with the given framerate. */
GstCaps *gst_tensors_desc_to_caps (const GstTensorsDesc * desc,
    gint fps_n, gint fps_d);

/*
 * TRUE when the tensor holds exactly the elements of a model shape
 * (channel:height:width, NCHW) in the same memory order. Dimensions of 1
 * do not change a contiguous layout, so both are compared with their 1s
 * dropped: "1:28:28:1" (what tensor_converter makes of GRAY8 28x28) and
 * "28:28:1:1" both match 1:28:28, "10:1:1:1" and "1:1:10:1" both match
 * 1:1:10, but an interleaved RGB "3:32:32:1" does not match 3:32:32
 * (planar), whose layout differs.
 */
gboolean gst_tensor_desc_matches_shape (const GstTensorDesc * desc,
    guint32 channel, guint32 height, guint32 width);

G_END_DECLS

#endif /* __GST_TENSOR_INFO_H__ */
