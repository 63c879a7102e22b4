/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Live weight hand-off between elements of one process: a tensor_trainer
 * publishes its weights under its name, a tensor_predictor naming that
 * trainer picks up the latest ones between two of its buffers.
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

#include <glib.h>
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

/* A predictor declares interest in a name (start) and withdraws it (stop);
 * a trainer publishes only while someone listens. */
void gst_tensor_model_share_subscribe (const gchar * name);
void gst_tensor_model_share_unsubscribe (const gchar * name);
gboolean gst_tensor_model_share_has_subscribers (const gchar * name);

/* The trainer stops publishing: the channel keeps its current snapshot
 * for the predictors still subscribed, and goes away with the last. */
void gst_tensor_model_share_withdraw (const gchar * name);

/* Copies model's weights into a new current snapshot of name; returns its
 * version, 0 with err filled on failure. */
guint64 gst_tensor_model_share_publish (const gchar * name, tt_model * model,
    tt_error * err);

/* The current snapshot of name if its version is above have (a new
 * reference), else NULL. */
GstTensorWeights *gst_tensor_model_share_latest (const gchar * name,
    guint64 have);

/* The version of name's current snapshot, 0 when none: cheap enough for
 * every buffer. */
guint64 gst_tensor_model_share_version (const gchar * name);

G_END_DECLS

#endif /* __GST_TENSOR_MODEL_SHARE_H__ */
