/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tensor_predictor's insides, shared by its files (not installed):
 * gsttensorpredictor.c, the element (properties, pads, state changes);
 * gsttensorpredictor_model.c, start, stop and fresh weights;
 * gsttensorpredictor_samples.c, caps, events, samples, inference and
 * output. */
#ifndef __GST_TENSOR_PREDICTOR_PRIVATE_H__
#define __GST_TENSOR_PREDICTOR_PRIVATE_H__

#include "gsttensorpredictor.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_tensor_predictor_debug);
#define GST_CAT_DEFAULT gst_tensor_predictor_debug

/* gsttensorpredictor_model.c */
gboolean gst_tensor_predictor_start (GstTtTensorPredictor * self);
void gst_tensor_predictor_stop (GstTtTensorPredictor * self);
gboolean gst_tensor_predictor_posting (GstTtTensorPredictor * self);
GstFlowReturn gst_tensor_predictor_follow_trainer (GstTtTensorPredictor *
    self);
void gst_tensor_predictor_check_reload (GstTtTensorPredictor * self);

/* gsttensorpredictor_samples.c */
gboolean gst_tensor_predictor_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
gboolean gst_tensor_predictor_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query);
GstFlowReturn gst_tensor_predictor_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buf);

G_END_DECLS

#endif /* __GST_TENSOR_PREDICTOR_PRIVATE_H__ */
