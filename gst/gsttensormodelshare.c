/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process-wide channels of gsttensormodelshare.h: one per published
 * name, under one lock that is held only to look up a channel and move
 * snapshot pointers, never while weights are copied.
 */
#include "gsttensormodelshare.h"

#include <string.h>

typedef struct
{
  guint subscribers;
  gboolean publishing;          /* a trainer published and has not withdrawn */
  guint64 version;
  GstTensorWeights *current;    /* what predictors take */
  GstTensorWeights *spare;      /* the previous one, reused when free */
} ShareChannel;

static GMutex share_lock;
static GHashTable *share_channels;      /* name -> ShareChannel */

GstTensorWeights *
gst_tensor_weights_ref (GstTensorWeights * w)
{
  g_atomic_int_inc (&w->refcount);
  return w;
}

void
gst_tensor_weights_unref (GstTensorWeights * w)
{
  if (w && g_atomic_int_dec_and_test (&w->refcount)) {
    g_free (w->data);
    g_free (w);
  }
}

static void
share_channel_free (gpointer data)
{
  ShareChannel *c = data;
  gst_tensor_weights_unref (c->current);
  gst_tensor_weights_unref (c->spare);
  g_free (c);
}

/* with share_lock held */
static ShareChannel *
share_channel (const gchar * name, gboolean create)
{
  if (!share_channels) {
    if (!create)
      return NULL;
    share_channels = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
        share_channel_free);
  }
  ShareChannel *c = g_hash_table_lookup (share_channels, name);
  if (!c && create) {
    c = g_new0 (ShareChannel, 1);
    g_hash_table_insert (share_channels, g_strdup (name), c);
  }
  return c;
}

/* with share_lock held: forgets a channel nobody uses any more */
static void
share_channel_gc (const gchar * name, ShareChannel * c)
{
  if (c->subscribers == 0 && !c->publishing)
    g_hash_table_remove (share_channels, name);
}

void
gst_tensor_model_share_subscribe (const gchar * name)
{
  g_mutex_lock (&share_lock);
  share_channel (name, TRUE)->subscribers++;
  g_mutex_unlock (&share_lock);
}

void
gst_tensor_model_share_unsubscribe (const gchar * name)
{
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (name, FALSE);
  if (c && c->subscribers > 0) {
    c->subscribers--;
    share_channel_gc (name, c);
  }
  g_mutex_unlock (&share_lock);
}

gboolean
gst_tensor_model_share_has_subscribers (const gchar * name)
{
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (name, FALSE);
  gboolean any = c && c->subscribers > 0;
  g_mutex_unlock (&share_lock);
  return any;
}

void
gst_tensor_model_share_withdraw (const gchar * name)
{
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (name, FALSE);
  if (c) {
    c->publishing = FALSE;
    g_clear_pointer (&c->spare, gst_tensor_weights_unref);
    share_channel_gc (name, c);
  }
  g_mutex_unlock (&share_lock);
}

guint64
gst_tensor_model_share_publish (const gchar * name, tt_model * model,
    tt_error * err)
{
  const gsize n = tt_model_weight_floats (model);
  GstTensorWeights *w = NULL;

  /* the spare is free when the channel's is the only reference: predictors
   * only ever take the current snapshot, so nobody can grab it meanwhile */
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (name, TRUE);
  if (c->spare && g_atomic_int_get (&c->spare->refcount) == 1 &&
      c->spare->n_floats == n) {
    w = c->spare;
    c->spare = NULL;
  }
  g_mutex_unlock (&share_lock);

  if (!w) {
    w = g_new0 (GstTensorWeights, 1);
    w->refcount = 1;
    w->n_floats = n;
    w->data = g_try_malloc_n (n ? n : 1, sizeof (gfloat));
    if (!w->data) {
      g_free (w);
      tt_error e = { TT_ERR_NOMEM, "" };
      g_snprintf (e.message, sizeof e.message, "%s: no memory for a %"
          G_GSIZE_FORMAT "-float weight snapshot", name, n);
      if (err)
        *err = e;
      return 0;
    }
  }
  if (tt_model_export_weights (model, w->data, n, err) != TT_OK) {
    gst_tensor_weights_unref (w);
    return 0;
  }
  w->signature = tt_model_weight_signature (model);
  w->epoch = tt_model_epoch (model);
  w->iteration = tt_model_iteration (model);

  g_mutex_lock (&share_lock);
  c = share_channel (name, TRUE);
  w->version = ++c->version;
  GstTensorWeights *old_spare = c->spare;
  c->spare = c->current;
  c->current = w;
  c->publishing = TRUE;
  guint64 version = w->version;
  g_mutex_unlock (&share_lock);
  /* still held by a predictor: it frees it when done */
  gst_tensor_weights_unref (old_spare);
  return version;
}

GstTensorWeights *
gst_tensor_model_share_latest (const gchar * name, guint64 have)
{
  GstTensorWeights *w = NULL;
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (name, FALSE);
  if (c && c->current && c->current->version > have)
    w = gst_tensor_weights_ref (c->current);
  g_mutex_unlock (&share_lock);
  return w;
}

guint64
gst_tensor_model_share_version (const gchar * name)
{
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (name, FALSE);
  guint64 v = c ? c->version : 0;
  g_mutex_unlock (&share_lock);
  return v;
}
