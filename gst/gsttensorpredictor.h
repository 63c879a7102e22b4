/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_TENSOR_PREDICTOR_H__
#define __GST_TENSOR_PREDICTOR_H__

#include <gst/gst.h>
#include "gsttensorsamples.h"
#include "tt_engine.h"

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_PREDICTOR (gst_tensor_predictor_get_type ())
G_DECLARE_FINAL_TYPE (GstTtTensorPredictor, gst_tensor_predictor, GST,
    TENSOR_PREDICTOR, GstElement)

#define GST_TENSOR_PREDICTOR_MAX_INPUTS GST_TENSOR_SAMPLES_MAX_INPUTS

typedef enum
{
  GST_TENSOR_PREDICTOR_OUTPUT_TENSORS = 0,
  GST_TENSOR_PREDICTOR_OUTPUT_TEXT,
} GstTtTensorPredictorOutput;

/* What a waiting sample needs when its output is pushed. */
typedef struct
{
  GstClockTime pts, dts, duration;
  guint64 offset, offset_end;
  GstBufferFlags flags;
} GstTtTensorPredictorStamp;

struct _GstTtTensorPredictor
{
  GstElement parent;

  GstPad *sinkpad, *srcpad;

  /* properties, under the object lock; read at READY->PAUSED except
   * post-messages, read at every use */
  gchar *model_config;
  gchar *model_load_path;
  guint batch_size;
  gchar *trainer;
  gboolean reload;
  guint reload_interval_ms;
  GstTtTensorPredictorOutput output;
  gchar *labels_path;
  gboolean post_messages;
  guint threads;                /* engine threads; 0: automatic */

  /* read-only figures, under the object lock */
  guint64 samples, labelled, correct;
  guint64 weights_version;
  guint64 pool_bytes;

  /* the streaming thread's, between start and stop */
  gchar *trainer_name;                  /* copy taken at start */
  gchar *share_key;                     /* of trainer_name in this pipeline */
  GstTtTensorPredictorOutput out_mode;    /* output, taken at start */
  gchar *watch_path;                    /* reload: the weights file */
  gint64 next_check_us;
  gboolean have_identity;
  guint64 identity[4];                  /* device, inode, size, mtime ns */
  guint64 have_version;                 /* of the trainer's snapshots */
  guint64 reloads;
  tt_model *model;
  uint64_t signature;
  guint batch, n_inputs;
  gsize in_count[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  tt_dtype in_types[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  gsize in_bytes[GST_TENSOR_PREDICTOR_MAX_INPUTS];  /* per sample */
  guint8 *in_batch[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  gboolean with_labels;                 /* the samples carry a label */
  gboolean flexible;                    /* described per buffer */
  GstTensorSampleSpec spec;             /* the sample the model takes */
  gsize out_count;                      /* output floats per sample */
  gfloat *label_batch;
  GstTensorDesc label_desc;             /* static: the label's tensor */
  GstTensorLabelForm label_form;        /* vector or class index: static,
                                         * from the caps; flexible, of the
                                         * sample being read */
  GstTtTensorPredictorStamp *stamps;
  guint fill;
  gboolean negotiated;
  gchar **class_names;
  guint n_class_names;
  gint64 busy_us;                       /* time spent in the engine */
  gint64 first_us;
  guint64 runs;
};

GST_ELEMENT_REGISTER_DECLARE (tensor_predictor);

G_END_DECLS

#endif /* __GST_TENSOR_PREDICTOR_H__ */
