/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sample side shared by tensor_trainer and tensor_predictor: what a
 * sample must look like for a model (inputs, then a label), the caps and
 * flexible headers checked against it, the messages saying what the model
 * takes, and the copy of a sample's tensors into a batch slot.
 */
#ifndef __GST_TENSOR_SAMPLES_H__
#define __GST_TENSOR_SAMPLES_H__

#include <gst/gst.h>

#include "gsttensorflexsample.h"
#include "gsttensorinfo.h"
#include "gsttensorlabel.h"
#include "tt_engine.h"

G_BEGIN_DECLS

/* a buffer holds at most GST_TENSOR_MAX_TENSORS tensors, one of them the
 * label */
#define GST_TENSOR_SAMPLES_MAX_INPUTS (GST_TENSOR_MAX_TENSORS - 1)

/* The sample a model takes: its n_inputs inputs, then a label of
 * label_shape (label_count floats). */
typedef struct
{
  tt_model *model;              /* borrowed from the element */
  guint n_inputs;
  tt_shape label_shape;
  gsize label_count;
  gboolean label_optional;      /* samples may come without a label */
  GstTensorLabelForm flex_label_form;   /* of the flexible sample being
                                         * read (set by check_flexible) */
} GstTensorSampleSpec;

/* How an input's tensor type reaches the engine. */
static inline tt_dtype
gst_tensor_samples_input_type (const GstTensorDesc * t)
{
  return t->type == GST_TENSOR_TYPE_UINT8 ? TT_DTYPE_UINT8 : TT_DTYPE_FLOAT32;
}

/* "what the model takes", for the messages refusing caps or a sample. */
gchar *gst_tensor_samples_expected (const GstTensorSampleSpec * spec);

/* Tensor i (from caps or a flexible header) against the model's input i or,
 * for i == n_inputs, the label; FALSE with *why. */
gboolean gst_tensor_samples_check_tensor (const GstTensorSampleSpec * spec,
    guint i, const GstTensorDesc * t, GstTensorLabelForm * form,
    gchar ** why);

/* A GstTensorFlexCheck with a GstTensorSampleSpec as user_data. */
gboolean gst_tensor_samples_check_flexible (guint i, const GstTensorDesc * t,
    gpointer spec, gchar ** why);

/* Reads caps into desc and checks them against spec. Flexible caps only
 * by their count; static ones also tensor by tensor, giving each input's
 * engine type and bytes per sample (types and bytes: n_inputs each) and
 * the label's form. FALSE with *why. */
gboolean gst_tensor_samples_read_caps (const GstTensorSampleSpec * spec,
    GstCaps * caps, GstTensorsDesc * desc, tt_dtype * types, gsize * bytes,
    GstTensorLabelForm * label_form, gchar ** why);

/* Posts the negotiation error for caps refused because of why (freed). */
void gst_tensor_samples_refuse_caps (GstElement * element,
    const GstTensorSampleSpec * spec, GstCaps * caps, gchar * why);

/* Reads a flexible sample's headers (gsttensorflexsample.h), each tensor
 * checked against spec; an error posted (sample_no in its details) on a
 * bad header or a tensor that does not fit. */
gboolean gst_tensor_samples_read_flexible (GstElement * element,
    GstTensorSampleSpec * spec, GstBuffer * buf, GstTensorFlexSample * sample,
    guint64 sample_no);

/* Checks a static sample's buffer: one memory per tensor of bytes[i]
 * each, or all ntens tensors' bytes in any memories; an error posted
 * (sample_no in its details) otherwise. */
gboolean gst_tensor_samples_check_sizes (GstElement * element,
    GstBuffer * buf, guint ntens, guint n_inputs, const gsize * bytes,
    guint64 sample_no);

/* Copies the n_inputs inputs at the start of buf, bytes[i] each, into
 * batch slot fill of batch[i]; returns the offset of what follows. */
gsize gst_tensor_samples_copy_inputs (GstBuffer * buf, guint n_inputs,
    const gsize * bytes, guint8 * const *batch, guint fill);

/* The label at offset of buf as count floats into dst; an error posted for
 * an index that is no class. */
GstFlowReturn gst_tensor_samples_put_label (GstElement * element,
    GstBuffer * buf, gsize offset, const GstTensorDesc * desc,
    GstTensorLabelForm form, gfloat * dst, gsize count, guint64 sample_no);

G_END_DECLS

#endif /* __GST_TENSOR_SAMPLES_H__ */
