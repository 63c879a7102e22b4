/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_TENSOR_PLANNER_H__
#define __GST_TENSOR_PLANNER_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

#include "gsttensorinfo.h"
#include "tt_engine.h"

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_PLANNER (gst_tensor_planner_get_type ())
G_DECLARE_FINAL_TYPE (GstTtTensorPlanner, gst_tensor_planner, GST,
    TENSOR_PLANNER, GstBaseTransform)

struct _GstTtTensorPlanner
{
  GstBaseTransform parent;

  /* properties, under the object lock; read when the caps come */
  gchar *model_config;
  gchar *location;
  gchar *weights_location;
  gchar *model_load_path;
  guint batch_size;
  guint alignment;
  guint64 memory_limit;         /* pool bytes at most; 0: none */
  guint threads;                /* the trainer's threads the pool is laid
                                 * out for; 0: the default, 1 */
  gchar *train;                 /* what trains (tt_model_set_train) */
  gchar *precision;             /* mixed precision (tt_model_set_precision) */

  /* streaming state, between start and stop. Invariant: planned implies
   * n_inputs and inputs[] describe the model that was written. */
  gboolean planned;
  gboolean check_buffer;        /* flexible: check the next buffer */
  guint n_inputs;
  tt_shape inputs[GST_TENSOR_MAX_TENSORS];
  gchar *config_path;           /* for messages */
  GstCaps *refused_caps;        /* posted once: GstBaseTransform offers
                                 * the same caps again at each buffer */
};

GST_ELEMENT_REGISTER_DECLARE (tensor_planner);

G_END_DECLS

#endif /* __GST_TENSOR_PLANNER_H__ */
