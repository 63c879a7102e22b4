/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_trainer's mixed precision (docs/precision.md): the note of what
 * the model's precision does on this CPU, said once when the model
 * loads (GST_INFO, and the "tensor-trainer-precision" element message
 * with post-messages), and loss scaling's skipped steps per epoch for
 * the epoch message.
 */
#include "gsttensortrainer_private.h"

void
gst_tensor_trainer_post_precision (GstTtTensorTrainer * self)
{
  gchar p[16];
  gboolean set;
  const tt_precision a = tt_model_activation_type (self->model);

  self->skipped_steps_at = tt_model_skipped_steps (self->model);
  GST_OBJECT_LOCK (self);
  set = self->precision && *self->precision;
  GST_OBJECT_UNLOCK (self);
  if (!set && a == TT_PRECISION_FP32)
    return;
  tt_model_precision (self->model, p, sizeof p);
  GST_INFO_OBJECT (self, "precision %s: %s (loss scale %g)", p,
      tt_precision_note (a), (gdouble) tt_model_loss_scale (self->model));
  if (!gst_tensor_trainer_posting (self, NULL))
    return;
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("tensor-trainer-precision",
              "precision", G_TYPE_STRING, p,
              "note", G_TYPE_STRING, tt_precision_note (a),
              "loss-scale", G_TYPE_DOUBLE,
              (gdouble) tt_model_loss_scale (self->model), NULL)));
}

guint64
gst_tensor_trainer_epoch_skipped_steps (GstTtTensorTrainer * self)
{
  const guint64 now = tt_model_skipped_steps (self->model);
  const guint64 n = now - self->skipped_steps_at;
  self->skipped_steps_at = now;
  return n;
}
