/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the files of tensor_datasrc share: its debug category, the
 * properties' defaults and the functions one file calls in another.
 * gsttensordatasrc.c holds the element (type, properties, state changes,
 * caps), gsttensordatasrc_start.c the start and stop,
 * gsttensordatasrc_idx.c the IDX files, gsttensordatasrc_repo.c the
 * datarepo files, gsttensordatasrc_samples.c the order and the buffers,
 * gsttensordatasrc_select.c the classes and per-class subsets.
 * gsttensordatasrc.h stays the type's header.
 */
#ifndef __GST_TENSOR_DATASRC_PRIVATE_H__
#define __GST_TENSOR_DATASRC_PRIVATE_H__

#include "gsttensordatasrc.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_tensor_datasrc_debug);
#define GST_CAT_DEFAULT gst_tensor_datasrc_debug

#define DEFAULT_LOCATION NULL
#define DEFAULT_LABEL_LOCATION NULL
#define DEFAULT_START_SAMPLE 0
#define DEFAULT_NUM_SAMPLES 0
#define DEFAULT_VALIDATION_LOCATION NULL
#define DEFAULT_VALIDATION_LABEL_LOCATION NULL
#define DEFAULT_VALIDATION_START_SAMPLE 0
#define DEFAULT_VALIDATION_NUM_SAMPLES 0
#define DEFAULT_EPOCHS 1
#define DEFAULT_SHUFFLE FALSE
#define DEFAULT_SEED 0
#define DEFAULT_IMAGE_FORMAT GST_TENSOR_DATASRC_IMAGE_UINT8
#define DEFAULT_LABEL_FORMAT GST_TENSOR_DATASRC_LABEL_ONEHOT
#define DEFAULT_NUM_CLASSES 10
#define DEFAULT_JSON NULL
#define DEFAULT_PUSH_LIST_SIZE 32
#define DEFAULT_VALIDATION_JSON NULL
#define DEFAULT_CLASSES NULL
#define DEFAULT_PER_CLASS 0

/* gsttensordatasrc_start.c */
void gst_tensor_datasrc_set_init (GstTtTensorDataSrcSet * set);
gboolean gst_tensor_datasrc_set_range (GstTtTensorDataSrc * self,
    GstTtTensorDataSrcSet * set, const gchar * file, const gchar * what,
    guint start, guint num);
gboolean gst_tensor_datasrc_open (GstTtTensorDataSrc * self);
gboolean gst_tensor_datasrc_stop (GstBaseSrc * src);

/* gsttensordatasrc_idx.c */
gboolean gst_tensor_datasrc_start_idx (GstTtTensorDataSrc * self,
    const gchar * loc, const gchar * lab, const gchar * vloc,
    const gchar * vlab, guint start, guint num, guint vstart, guint vnum);

/* gsttensordatasrc_repo.c */
gchar *gst_tensor_datasrc_repo_json (const gchar * location,
    const gchar * json);
gboolean gst_tensor_datasrc_start_repo (GstTtTensorDataSrc * self,
    const gchar * loc, const gchar * json, const gchar * lab,
    const gchar * vloc, const gchar * vjson_prop, const gchar * vlab,
    guint start, guint num, guint vstart, guint vnum);
GstBuffer *gst_tensor_datasrc_repo_sample (GstTtTensorDataSrc * self,
    const GstTtTensorDataSrcSet * set, guint index);

/* gsttensordatasrc_samples.c */
void gst_tensor_datasrc_store_release (gpointer store);
void gst_tensor_datasrc_make_store (GstTtTensorDataSrc * self);
GstFlowReturn gst_tensor_datasrc_create (GstPushSrc * src, GstBuffer ** buf);

/* gsttensordatasrc_select.c: classes and per-class */
gboolean gst_tensor_datasrc_select (GstTtTensorDataSrc * self,
    const gchar * spec, guint per_class, GstTtTensorDataSrcSet * set,
    const guint8 * labels, const gchar * file, const gchar * what);
gboolean gst_tensor_datasrc_select_wanted (const gchar * spec,
    guint per_class);
static inline guint
gst_tensor_datasrc_set_index (const GstTtTensorDataSrcSet * set, guint i)
{
  return set->pick ? set->pick[i] : set->start + i;
}

G_END_DECLS

#endif /* __GST_TENSOR_DATASRC_PRIVATE_H__ */
