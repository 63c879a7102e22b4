/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One sample of flexible tensors (format=flexible): each tensor is
 * nnstreamer's 128-byte header followed by its data. nnstreamer puts each
 * tensor in a GstMemory of its own; a buffer whose memories are not one per
 * tensor is read as the tensors back to back. tensor_trainer and
 * tensor_predictor both read their flexible input through this.
 */
#ifndef __GST_TENSOR_FLEX_SAMPLE_H__
#define __GST_TENSOR_FLEX_SAMPLE_H__

#include "gsttensorinfo.h"

G_BEGIN_DECLS

typedef struct
{
  guint num;                    /* tensors read */
  GstTensorDesc tensors[GST_TENSOR_MAX_TENSORS];
  gsize offsets[GST_TENSOR_MAX_TENSORS];        /* of each one's data */
} GstTensorFlexSample;

/* Checks tensor i as soon as its header is read, before the sizes are:
 * FALSE with *why a sentence (the caller's) refuses the sample. */
typedef gboolean (*GstTensorFlexCheck) (guint i, const GstTensorDesc * desc,
    gpointer user_data, gchar ** why);

/*
 * Reads the headers of the flexible tensors of buf: at least min and at
 * most max (<= GST_TENSOR_MAX_TENSORS) of them, as many as the buffer
 * holds. When the buffer has between min and max memories (more than one),
 * tensor i must fill memory i exactly. Tensor label_index is named "label"
 * in messages, the others "input". check, when not NULL, is called on
 * each tensor whose header parses.
 *
 * Returns TRUE with *sample filled, or FALSE with *why a sentence: "Wrong
 * buffer size: ..." (headers and data do not add up to the buffer) or "Bad
 * flexible tensor header: tensor N (input|label): ...", or check's.
 */
gboolean gst_tensor_flex_sample_read (GstBuffer * buf, guint min, guint max,
    guint label_index, GstTensorFlexCheck check, gpointer user_data,
    GstTensorFlexSample * sample, gchar ** why);

G_END_DECLS
#endif /* __GST_TENSOR_FLEX_SAMPLE_H__ */
