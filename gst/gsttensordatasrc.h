/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_TENSOR_DATASRC_H__
#define __GST_TENSOR_DATASRC_H__

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>

#include "gsttensorinfo.h"
#include "tt_idx.h"
#include "tt_idx_file.h"

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_DATASRC (gst_tensor_datasrc_get_type ())
G_DECLARE_FINAL_TYPE (GstTtTensorDataSrc, gst_tensor_datasrc, GST,
    TENSOR_DATASRC, GstPushSrc)

typedef enum
{
  GST_TENSOR_DATASRC_IMAGE_UINT8,
  GST_TENSOR_DATASRC_IMAGE_FLOAT32,
} GstTtTensorDataSrcImageFormat;

typedef enum
{
  GST_TENSOR_DATASRC_LABEL_ONEHOT,
  GST_TENSOR_DATASRC_LABEL_INDEX,
} GstTtTensorDataSrcLabelFormat;

/* A datarepo file (nnstreamer's MLOps data repository), open for reading
 * (pread of one sample at a time, nothing held). Static tensors: samples
 * back to back, each the tensors of gst_caps back to back; invariant once
 * loaded: the file holds total * sample_size bytes and sample_size is the
 * sum of sizes[0..num-1]. Flexible tensors (desc.format): sample i is the
 * tensors first_tensor[i] .. first_tensor[i + 1] - 1, each header and data
 * of tensor_sizes[j] bytes, back to back from sample_offsets[i]; invariant
 * once loaded: every sample lies in the file and every tensor's header is
 * valid and describes its size (gsttensordatarepo.h). */
typedef struct
{
  gint fd;                      /* -1 when not open */
  gchar *path;
  GstTensorsDesc desc;
  gsize sample_size;
  gsize offsets[GST_TENSOR_MAX_TENSORS], sizes[GST_TENSOR_MAX_TENSORS];
  guint64 *sample_offsets;
  guint *first_tensor;
  gsize *tensor_sizes;
} GstTtTensorDataSrcRepo;

/* One IDX image + label file pair, or one datarepo file, and the range of
 * samples taken from it. The images are read from their file as they are
 * pushed (a gzipped file from its decompressed, unnamed temporary); the
 * labels, one byte a sample, are held. Invariant once loaded: start +
 * count <= total (IDX: total == images.count, labels holds total bytes). */
typedef struct
{
  tt_idx_file images;
  guint8 *labels;
  GstTtTensorDataSrcRepo repo;
  gsize total;
  guint start, count;
  /* classes / per-class: the count file indices of the range that are
   * pushed, ascending; NULL: start .. start + count - 1 */
  guint32 *pick;
} GstTtTensorDataSrcSet;

/* The label table, shared with the read-only memories that wrap its rows
 * (no copy per sample): released by the element at stop and by each
 * memory, freed with the last reference. labels_f32 holds, per class
 * value 0..255, its output label (one-hot row or index). */
typedef struct
{
  gfloat *labels_f32;
  gsize label_floats;           /* floats per label */
} GstTtTensorDataSrcStore;

struct _GstTtTensorDataSrc
{
  GstPushSrc parent;

  /* properties, under the object lock; read at start */
  gchar *location, *label_location;
  gchar *validation_location, *validation_label_location;
  gchar *json, *validation_json;
  guint start_sample, num_samples;
  guint validation_start_sample, validation_num_samples;
  guint epochs;
  gboolean shuffle;
  guint64 seed;
  GstTtTensorDataSrcImageFormat image_format;
  GstTtTensorDataSrcLabelFormat label_format;
  guint num_classes;
  guint push_list_size;
  /* personalization: a subset of the classes, N samples of each */
  gchar *classes_spec;
  guint per_class;

  /* streaming state, between start and stop */
  GstTtTensorDataSrcSet train, valid;
  gboolean repo_mode;           /* datarepo files, not IDX */
  gboolean valid_shares_files;  /* valid reads train's files */
  GstTtTensorDataSrcImageFormat out_image_format;
  GstTtTensorDataSrcLabelFormat out_label_format;
  guint classes, n_epochs, list_size;
  gboolean do_shuffle;
  guint64 rng_seed;
  gsize image_bytes;            /* one output image */
  GstCaps *caps;
  GstTtTensorDataSrcStore *store;
  guint8 *scratch;              /* list_size stored images, for float32 */
  guint32 *order;               /* train.count indices of this epoch */
  guint order_epoch;            /* the epoch order was drawn for */
  guint64 position;             /* samples pushed */
  /* personalization: classes and per-class as read at start */
  gchar *sel_classes;
  guint sel_per_class;
};

GST_ELEMENT_REGISTER_DECLARE (tensor_datasrc);

G_END_DECLS

#endif /* __GST_TENSOR_DATASRC_H__ */
