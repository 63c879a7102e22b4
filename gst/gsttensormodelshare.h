/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Live weight hand-off between elements of one process: a tensor_trainer
 * publishes its weights under its name, a tensor_predictor naming that
 * trainer picks up the latest ones between two of its buffers.
 *
 * A name is looked up in the pipeline (the top-level bin) of the element,
 * not in the whole process: two pipelines of one application may both
 * call their trainer "trainer" (element names are unique in a bin only),
 * and each predictor follows the trainer of its own pipeline. Elements in
 * no bin (GstHarness) share one scope of their own.
 *
 * Copy-on-publish: a publication copies the trainer's weights (between two
 * training steps, so never half-updated) into a snapshot nobody else
 * holds, then swaps it in as the current one under a lock held for a few
 * pointer moves. A snapshot is immutable once published and reference
 * counted: a predictor takes a reference, copies the weights into its own
 * model outside the lock and drops it. So the trainer never waits for a
 * predictor's copy and a predictor never sees a snapshot being written;
 * two snapshots per channel are recycled in turn (a third is allocated
 * only while a predictor still holds the older one).
 *
 * Why not double-buffer the model itself: the trainer and the predictor
 * have different plans (the predictor's pool is inference-only, often of
 * another batch size), so weights must be copied anyway, and a copy per
 * publication costs the trainer one memcpy of the weights (CNN: 0.9 MB).
 */
#ifndef __GST_TENSOR_MODEL_SHARE_H__
#define __GST_TENSOR_MODEL_SHARE_H__

#include <gst/gst.h>
#include "tt_engine.h"

G_BEGIN_DECLS

typedef struct
{
  gint refcount;
  guint64 version;              /* 1, 2, ... per channel */
  guint32 epoch, iteration;     /* the trainer's counters at publication */
  guint64 signature;            /* tt_model_weight_signature of the trainer */
  gsize n_floats;
  gfloat *data;
} GstTensorWeights;

GstTensorWeights *gst_tensor_weights_ref (GstTensorWeights * w);
void gst_tensor_weights_unref (GstTensorWeights * w);

/* The channel key of the trainer called name as seen from element: name
 * scoped to element's top-level bin. Taken at READY->PAUSED, when the
 * element is in its pipeline; g_free it. The functions below take it. */
gchar *gst_tensor_model_share_key (GstElement * element, const gchar * name);

/* A predictor declares interest in a key (start) and withdraws it (stop);
 * a trainer publishes only while someone listens. */
void gst_tensor_model_share_subscribe (const gchar * key);
void gst_tensor_model_share_unsubscribe (const gchar * key);
gboolean gst_tensor_model_share_has_subscribers (const gchar * key);

/* The trainer stops publishing: the channel keeps its current snapshot
 * for the predictors still subscribed, and goes away with the last. */
void gst_tensor_model_share_withdraw (const gchar * key);

/* Copies model's weights into a new current snapshot of key; returns its
 * version, 0 with err filled on failure. */
guint64 gst_tensor_model_share_publish (const gchar * key, tt_model * model,
    tt_error * err);

/* The current snapshot of key if its version is above have (a new
 * reference), else NULL. */
GstTensorWeights *gst_tensor_model_share_latest (const gchar * key,
    guint64 have);

/* The version of key's current snapshot, 0 when none: cheap enough for
 * every buffer. */
guint64 gst_tensor_model_share_version (const gchar * key);

/* tensor_planner writes its files when the first caps come, after the
 * elements downstream of it have gone to PAUSED. An element that reads a
 * file at READY->PAUSED asks upstream of its sink pad first: TRUE when an
 * element there will write path (so it is read when the caps come).
 * Elements in between forward the query (it is a non-serialized custom
 * query, answered even while the pads are inactive). */
gboolean gst_tensor_model_file_written_upstream (GstPad * sinkpad,
    const gchar * path);

/* For a writer's query handler: when query asks about one of the n
 * paths (NULL or empty ones skipped), answers it and returns TRUE; else
 * FALSE, and the query goes on upstream. */
gboolean gst_tensor_model_file_query_answer (GstQuery * query,
    const gchar * const *paths, guint n);

/* Checks, before any work is done for it, that path (the value of the
 * element's property prop) can be written: it is no folder and its folder
 * exists and takes a new file. Else posts an error (RESOURCE, OPEN_WRITE)
 * naming both and returns FALSE. */
gboolean gst_tensor_model_file_check_writable (GstElement * element,
    const gchar * prop, const gchar * path);

G_END_DECLS

#endif /* __GST_TENSOR_MODEL_SHARE_H__ */
