/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nnstreamer's tensor caps, as far as the elements of this plugin need
 * them: parsing `other/tensors` (static or flexible) and the legacy single
 * `other/tensor` into a list of tensor dimensions and types, printing them
 * back, reading and writing the 128-byte header that flexible tensors carry
 * in each memory, and comparing a tensor with a model shape.
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

typedef enum
{
  GST_TENSOR_FORMAT_STATIC = 0,
  GST_TENSOR_FORMAT_FLEXIBLE,
} GstTensorFormat;

/* Invariant: static: 1 <= num <= GST_TENSOR_MAX_TENSORS, every tensor
 * described. Flexible: the caps describe no tensor (each memory carries
 * its own header), num is num_tensors when the caps give it, else 0. */
typedef struct
{
  GstTensorFormat format;
  guint num;
  GstTensorDesc tensors[GST_TENSOR_MAX_TENSORS];
} GstTensorsDesc;

/* nnstreamer's flexible-tensor header: 128 bytes in front of each tensor's
 * data, in host byte order: uint32 magic (0xfeedcced), version
 * (0xDE000000 | major << 12 | minor; 1.0 here), type (nnstreamer's enum:
 * int32, uint32, int16, uint16, int8, uint8, float64, float32, int64,
 * uint64, float16), 16 dimensions innermost first (0 ends the list), format
 * (0 static, 1 flexible, 2 sparse), media type (0..4), nnz (sparse only),
 * zeros to 128 bytes. */
#define GST_TENSOR_META_HEADER_SIZE 128
#define GST_TENSOR_META_MAGIC 0xfeedccedu
#define GST_TENSOR_META_VERSION 0xDE001000u

const gchar *gst_tensor_type_name (GstTensorType type);
GstTensorType gst_tensor_type_from_name (const gchar * name);
gsize gst_tensor_type_size (GstTensorType type);

/* Elements of one sample of the tensor, and its bytes; 0 on overflow. */
guint64 gst_tensor_desc_count (const GstTensorDesc * desc);
gsize gst_tensor_desc_bytes (const GstTensorDesc * desc);

/* "d0:d1:d2:d3" (at least 4 entries, trailing 1s added): the form of
 * error messages, which older nnstreamer (rank limit 4) also wrote. */
gchar *gst_tensor_desc_dims_string (const GstTensorDesc * desc);

/*
 * The dimensions as nnstreamer (rank limit 16) writes them in caps: no
 * padding to 4 entries, the dimensions up to the last one above 1, then
 * the outermost one (the batch, 1) once if the tensor has it. So
 * "10:1:1:1" is written "10:1" (what a classifier output is in nnstreamer,
 * and the only form tensor_decoder mode=image_labeling accepts),
 * "1:28:28:1" stays "1:28:28:1" (tensor_converter's GRAY8 frame),
 * "28:28:1:1" is "28:28:1", "1:1:1:1" is "1:1", and a tensor without
 * trailing 1s keeps all its dimensions. Every element of this plugin
 * writes its caps this way (gst_tensors_desc_to_caps); on input both forms
 * are read (gst_tensors_desc_from_caps keeps the rank it is given, and the
 * shape checks ignore 1s).
 */
gchar *gst_tensor_desc_caps_dims_string (const GstTensorDesc * desc);

/* TRUE when a and b have the same format and, static, the same tensors:
 * types equal, dimensions equal once trailing 1s are dropped (as
 * nnstreamer's gst_tensor_dimension_is_equal compares them: "4:1:1:1",
 * "4:1" and "4" are one tensor). */
gboolean gst_tensors_desc_equal (const GstTensorsDesc * a,
    const GstTensorsDesc * b);

/*
 * Parses fixed `other/tensors` caps, format=static (a missing format counts
 * as static; `.` is accepted between tensors as nnstreamer does) or
 * format=flexible, and the legacy `other/tensor` (dimension, type: one
 * tensor). Returns FALSE with *error set to a sentence saying what is
 * wrong (sparse tensors are refused).
 */
gboolean gst_tensors_desc_from_caps (const GstCaps * caps,
    GstTensorsDesc * desc, gchar ** error);

/* `other/tensors,format=static,...` for desc, with the given framerate;
 * dimensions as gst_tensor_desc_caps_dims_string writes them. A flexible
 * desc gives `other/tensors,format=flexible` and the framerate. */
GstCaps *gst_tensors_desc_to_caps (const GstTensorsDesc * desc,
    gint fps_n, gint fps_d);

/*
 * Reads a flexible tensor's header. Returns FALSE with *error set to a
 * sentence naming the faulty field (magic, version, type, dimensions,
 * format, media type) when the header is not one nnstreamer writes, or
 * describes a sparse tensor.
 */
gboolean gst_tensor_meta_parse (const guint8 * header, GstTensorDesc * desc,
    gchar ** error);
/* Writes the header of a flexible tensor (media type: tensor). */
void gst_tensor_meta_write (const GstTensorDesc * desc, guint8 * header);

/*
 * TRUE when the tensor holds exactly the elements of a model shape
 * (channel:height:width, NCHW) in the same memory order. Dimensions of 1
 * do not change a contiguous layout, so both are compared with their 1s
 * dropped: "1:28:28:1" (what tensor_converter makes of GRAY8 28x28) and
 * "28:28:1:1" both match 1:28:28, "10:1:1:1" and "1:1:10:1" both match
 * 1:1:10, but an interleaved RGB "3:32:32:1" does not match 3:32:32
 * (planar), whose layout differs. A flat side (at most one dimension other
 * than 1, such as nnstreamer's MNIST "1:1:784:1" or a model input 1:1:3072)
 * has no layout of its own: it matches any tensor with as many elements,
 * taken in memory order.
 */
gboolean gst_tensor_desc_matches_shape (const GstTensorDesc * desc,
    guint32 channel, guint32 height, guint32 width);

/* "W:H:C:1": a model shape channel:height:width as nnstreamer writes it. */
gchar *gst_tensor_shape_dims_string (guint32 channel, guint32 height,
    guint32 width);

/* Tensor i of a buffer against the model tensor it feeds (what: "input" or
 * "label"): its shape (gst_tensor_desc_matches_shape) and its type, float32
 * or, unless float_only, uint8. FALSE with *why a sentence saying what
 * differs. */
gboolean gst_tensor_desc_check_model (const GstTensorDesc * desc, guint i,
    const gchar * what, guint32 channel, guint32 height, guint32 width,
    gboolean float_only, gchar ** why);

G_END_DECLS

#endif /* __GST_TENSOR_INFO_H__ */
