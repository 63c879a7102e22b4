/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tensor_trainer's insides, shared by its files (not installed):
 * gsttensortrainer.c, the element (properties, pads, state changes);
 * gsttensortrainer_model.c, start, model loading and stop;
 * gsttensortrainer_samples.c, caps, events and samples into the batch;
 * gsttensortrainer_epochs.c, batches, epochs, saving and messages. */
#ifndef __GST_TENSOR_TRAINER_PRIVATE_H__
#define __GST_TENSOR_TRAINER_PRIVATE_H__

#include "gsttensortrainer.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_tensor_trainer_debug);
#define GST_CAT_DEFAULT gst_tensor_trainer_debug

#define GST_TENSOR_TRAINER_FRAMEWORK "tensor-trainer"
/* nnstreamer's launch lines name nntrainer, whose INI dialect and BIN
 * layout this engine reads and writes: they run unchanged */
#define GST_TENSOR_TRAINER_FRAMEWORK_ALIAS "nntrainer"

/* gsttensortrainer_model.c */
gboolean gst_tensor_trainer_start (GstTtTensorTrainer * self);
gboolean gst_tensor_trainer_load_model (GstTtTensorTrainer * self);
void gst_tensor_trainer_stop (GstTtTensorTrainer * self);

/* gsttensortrainer_samples.c */
gboolean gst_tensor_trainer_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
GstFlowReturn gst_tensor_trainer_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buf);
GstFlowReturn gst_tensor_trainer_chain_list (GstPad * pad,
    GstObject * parent, GstBufferList * list);
void gst_tensor_trainer_send_src_caps (GstTtTensorTrainer * self);

/* gsttensortrainer_epochs.c */
gboolean gst_tensor_trainer_posting (GstTtTensorTrainer * self,
    guint * interval);
GstFlowReturn gst_tensor_trainer_run_batch (GstTtTensorTrainer * self,
    gboolean training);
GstFlowReturn gst_tensor_trainer_end_epoch (GstTtTensorTrainer * self,
    gboolean complete);
GstFlowReturn gst_tensor_trainer_finish (GstTtTensorTrainer * self);
gchar *gst_tensor_trainer_checkpoint_name (const gchar * pattern,
    guint epoch);

/* gsttensortrainer_samples.c */
void gst_tensor_trainer_widen_input (GstTtTensorTrainer * self, guint i,
    guint n);

/* gsttensortrainer_replay.c (replay of past samples) */
#define GST_TENSOR_TRAINER_REPLAY_MAX_PICKS 64
gboolean gst_tensor_trainer_replay_start (GstTtTensorTrainer * self);
guint gst_tensor_trainer_replay_new_per_batch (GstTtTensorTrainer * self,
    gboolean training);
guint gst_tensor_trainer_replay_mix (GstTtTensorTrainer * self, guint n_new);
void gst_tensor_trainer_replay_done (GstTtTensorTrainer * self);
void gst_tensor_trainer_replay_save (GstTtTensorTrainer * self);
void gst_tensor_trainer_replay_stop (GstTtTensorTrainer * self);

/* gsttensortrainer_fcache.c (the feature cache) */
typedef struct _GstTensorTrainerFcache GstTensorTrainerFcache;
gboolean gst_tensor_trainer_fcache_start (GstTtTensorTrainer * self);
tt_status gst_tensor_trainer_fcache_train (GstTtTensorTrainer * self,
    guint64 at, guint n, const void *const *inputs, tt_batch_result * r,
    tt_error * err);
gboolean gst_tensor_trainer_fcache_epoch_done (GstTtTensorTrainer * self);
void gst_tensor_trainer_fcache_stop (GstTtTensorTrainer * self);

/* gsttensortrainer_precision.c (mixed precision): the note said once
 * after the model loads; the epoch's skipped steps (since the last
 * call) */
void gst_tensor_trainer_post_precision (GstTtTensorTrainer * self);
guint64 gst_tensor_trainer_epoch_skipped_steps (GstTtTensorTrainer * self);

G_END_DECLS

#endif /* __GST_TENSOR_TRAINER_PRIVATE_H__ */
