/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_TENSOR_TRAINER_H__
#define __GST_TENSOR_TRAINER_H__

#include <gst/gst.h>

#include "gsttensorfederation.h"
#include "gsttensorsamples.h"
#include "replay.h"
#include "tt_engine.h"

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_TRAINER (gst_tensor_trainer_get_type ())
G_DECLARE_FINAL_TYPE (GstTtTensorTrainer, gst_tensor_trainer, GST,
    TENSOR_TRAINER, GstElement)

/* The model's inputs, then its one label tensor. */
#define GST_TENSOR_TRAINER_MAX_INPUTS GST_TENSOR_SAMPLES_MAX_INPUTS

/* nnstreamer's NNS_TENSOR_SIZE_LIMIT: the upper bound of num-inputs and
 * num-labels in its param specs, kept so that its launch lines and tests
 * see the same ranges; this element's own limits are checked at start. */
#define GST_TENSOR_TRAINER_NNS_TENSOR_LIMIT 256

/* Figures of one phase (training or validation) of the current epoch. */
typedef struct
{
  guint64 samples;
  guint64 correct;
  gdouble loss_sum;             /* batch loss times batch samples, summed */
  guint64 replayed;             /* replay: samples of the buffer trained */
} GstTtTensorTrainerTally;

struct _GstTtTensorTrainer
{
  GstElement parent;

  GstPad *sinkpad, *srcpad;

  /* properties, under the object lock; read once at READY->PAUSED
   * (post-messages and progress-interval are read at every use) */
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
  gboolean epochs_set;          /* epochs was set: framework=nntrainer
                                 * reads an unset one as 1 */
  gboolean post_messages;
  guint progress_interval;
  guint publish_interval;       /* batches between publications; 0: epochs */
  gboolean skip_bad_batches;    /* numeric faults: warn and drop, not stop */
  guint64 memory_limit;         /* pool bytes at most; 0: none */
  guint threads;                /* engine threads; 0: automatic */
  gchar *train_choice;          /* what trains (tt_model_set_train); NULL:
                                 * everything */
  GstTensorFederationConfig federation; /* federation-* (issue 20) */
  guint64 skipped_samples;      /* in the current epoch */

  /* under the object lock: the chain waits on cond while the element is
   * PAUSED on its way down from PLAYING; flushing wakes it for good */
  GCond cond;
  gboolean flushing;

  /* Everything below belongs to the streaming thread between
   * READY->PAUSED (start) and PAUSED->READY (stop); the state change
   * thread touches it only while streaming is stopped. */
  gchar *config_path, *load_path;       /* copies taken at start */
  gchar *save_path, *ckpt_path;
  guint want_inputs, want_epochs;       /* num-inputs, epochs at start */
  tt_model *model;                      /* loaded at start, or at the
                                         * first caps when an element
                                         * upstream writes its files */
  gboolean load_failed;                 /* (at the caps) posted once */
  GstCaps *refused_caps;                /* posted once, not per retry */
  tt_plan_info plan;                    /* of model */
  guint n_train, n_valid, n_epochs;     /* per-epoch plan, epochs planned */
  guint batch;                          /* [Model] batch_size */
  guint n_inputs;                       /* model inputs; labels follow */
  gsize in_count[GST_TENSOR_TRAINER_MAX_INPUTS]; /* elements per sample */
  tt_dtype in_types[GST_TENSOR_TRAINER_MAX_INPUTS]; /* of the batch */
  guint8 *in_batch[GST_TENSOR_TRAINER_MAX_INPUTS];  /* batch * count * 4 */
  guint8 *scratch;                      /* one input sample, as float32 */
  gsize label_count;
  gfloat *label_batch;                  /* batch * label_count */
  GstTensorDesc label_desc;             /* static: the label's tensor */
  GstTensorLabelForm label_form;        /* vector or class index: static,
                                         * from the caps; flexible, of the
                                         * sample being read */
  gboolean flexible;                    /* each memory has a header */
  GstTensorSampleSpec spec;             /* the sample the model takes */
  gsize sample_bytes[GST_TENSOR_MAX_TENSORS]; /* static: per tensor */

  gboolean negotiated;
  gboolean plan_posted;
  gboolean src_caps_sent;
  gboolean finished;                    /* EOS sent downstream */
  gboolean fed_ended;                   /* the federation's run is over */
  guint fill;                           /* samples waiting in the batch */
  guint64 epoch_pos;                    /* samples seen this epoch */
  guint epochs_done;                    /* epochs completed in this run */
  guint64 samples_seen;                 /* all samples of this run */
  guint batches;                        /* batches run this epoch */
  GstTtTensorTrainerTally train, valid;
  gint64 epoch_start_us;                /* first buffer of the epoch */
  gint64 train_end_us;                  /* last training batch done */
  gchar *share_key;                     /* published under: this
                                         * pipeline's element name */
  guint64 train_batches_total;          /* training batches of this run */
  GstTensorFederation *fed;             /* federation-broker set */

  /* replay (gsttensortrainer_replay.c): properties under the object
   * lock, read at load; the rest the streaming thread's */
  guint replay_size;                    /* samples kept; 0: off */
  guint replay_per_batch;               /* G_MAXUINT: half the batch */
  gchar *replay_file;
  guint64 replay_seed;
  gchar *replay_path;                   /* replay-file at start */
  guint replay_k;                       /* replayed samples per batch */
  gboolean replay_dirty;                /* changed since loaded or saved */
  guint32 replay_widened;               /* uint8 inputs of this batch
                                         * widened for replayed ones */
  tt_replay replay;                     /* io/replay.c */

  /* feature cache (gsttensortrainer_fcache.c): properties under the
   * object lock, read at load; the rest the streaming thread's */
  guint64 fcache_bytes;                 /* feature-cache; 0: off */
  gchar *fcache_file;                   /* feature-cache-file */
  struct _GstTensorTrainerFcache *fcache; /* NULL: off */
  guint64 fcache_samples;               /* this epoch's, from the cache */

  /* mixed precision (gsttensortrainer_precision.c): the property, under
   * the object lock, read at load; the skipped steps counted before this
   * epoch */
  gchar *precision;
  guint64 skipped_steps_at;
};

GST_ELEMENT_REGISTER_DECLARE (tensor_trainer);

G_END_DECLS

#endif /* __GST_TENSOR_TRAINER_H__ */
