/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The label tensor of a sample, as tensor_trainer and tensor_predictor
 * read it: the model's label itself (float32 of the label's shape, e.g. a
 * one-hot vector), or a class index (one element of an integer type,
 * float32 or float64 holding a whole number, what tensor_datasrc's
 * label-format=index and many datasets give), which becomes the one-hot
 * vector of the model's label width.
 */
#ifndef __GST_TENSOR_LABEL_H__
#define __GST_TENSOR_LABEL_H__

#include <gst/gst.h>

#include "gsttensorinfo.h"

G_BEGIN_DECLS

typedef enum
{
  GST_TENSOR_LABEL_VECTOR,
  GST_TENSOR_LABEL_INDEX,
} GstTensorLabelForm;

/* Tensor i, the label, against a model label of channel:height:width:
 * TRUE with its form, FALSE with *why a sentence saying what differs. */
gboolean gst_tensor_label_check (const GstTensorDesc * desc, guint i,
    guint32 channel, guint32 height, guint32 width, GstTensorLabelForm * form,
    gchar ** why);

/* The label of one sample, desc's bytes at offset in buf, as count floats
 * into dst (an index as a one-hot vector). FALSE with *why when an index
 * is not a whole number below count. */
gboolean gst_tensor_label_extract (GstBuffer * buf, gsize offset,
    const GstTensorDesc * desc, GstTensorLabelForm form, gfloat * dst,
    gsize count, gchar ** why);

G_END_DECLS

#endif /* __GST_TENSOR_LABEL_H__ */
