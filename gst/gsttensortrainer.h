/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_TENSOR_TRAINER_H__
#define __GST_TENSOR_TRAINER_H__

#include <gst/gst.h>

#include "gsttensorinfo.h"
#include "tt_engine.h"

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_TRAINER (gst_tensor_trainer_get_type ())
G_DECLARE_FINAL_TYPE (GstTensorTrainer, gst_tensor_trainer, GST,
    TENSOR_TRAINER, GstElement)

/* The model's inputs, then its one label tensor. */
#define GST_TENSOR_TRAINER_MAX_INPUTS (GST_TENSOR_MAX_TENSORS - 1)

/* Figures of one phase (training or validation) of the current epoch. */
typedef struct
{
  guint64 samples;
  guint64 correct;
  gdouble loss_sum;             /* batch loss times batch samples, summed */
} GstTensorTrainerTally;

struct _GstTensorTrainer
{
  GstElement parent;

  GstPad *sinkpad, *srcpad;

  /* properties, under the object lock; read once at READY->PAUSED
   * (post-messages is read at every epoch) */
  gchar *framework;
  gchar *model_config;
  gchar *model_load_path;
  gchar *model_save_path;
  gchar *checkpoint_path;
  guint num_inputs;
  guint num_labels;
  guint num_training_samples;
  guint num_validation_samples;
  guint epochs;
  gboolean post_messages;

  /* under the object lock: the chain waits on cond while the element is
   * PAUSED on its way down from PLAYING; flushing wakes it for good */
  GCond cond;
  gboolean flushing;

  /* Everything below belongs to the streaming thread between
   * READY->PAUSED (start) and PAUSED->READY (stop); the state change
   * thread touches it only while streaming is stopped. */
  tt_model *model;
  gchar *save_path, *ckpt_path;         /* copies taken at start */
  guint n_train, n_valid, n_epochs;     /* per-epoch plan, epochs planned */
  guint batch;                          /* [Model] batch_size */
  guint n_inputs;                       /* model inputs; labels follow */
  gsize in_count[GST_TENSOR_TRAINER_MAX_INPUTS]; /* elements per sample */
  tt_dtype in_types[GST_TENSOR_TRAINER_MAX_INPUTS]; /* from the caps */
  guint8 *in_batch[GST_TENSOR_TRAINER_MAX_INPUTS];  /* batch * count * 4 */
  gsize label_count;
  gfloat *label_batch;                  /* batch * label_count */
  gsize sample_bytes[GST_TENSOR_MAX_TENSORS]; /* per tensor, from caps */
  gsize total_bytes;                    /* sum of sample_bytes */

  gboolean negotiated;
  gboolean src_caps_sent;
  gboolean finished;                    /* EOS sent downstream */
  guint fill;                           /* samples waiting in the batch */
  guint64 epoch_pos;                    /* samples seen this epoch */
  guint epochs_done;                    /* epochs completed in this run */
  guint64 samples_seen;                 /* all samples of this run */
  GstTensorTrainerTally train, valid;
  gint64 epoch_start_us;                /* first buffer of the epoch */
  gint64 train_end_us;                  /* last training batch done */
};

GST_ELEMENT_REGISTER_DECLARE (tensor_trainer);

G_END_DECLS

#endif /* __GST_TENSOR_TRAINER_H__ */
