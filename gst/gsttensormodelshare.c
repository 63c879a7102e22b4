/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process-wide channels of gsttensormodelshare.h: one per published
 * key (pipeline and trainer name), under one lock that is held only to
 * look up a channel and move snapshot pointers, never while weights are
 * copied. Then the model-file helpers: the upstream writer query and the
 * check that a file can be written.
 */
#include "gsttensormodelshare.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

typedef struct
{
  guint subscribers;
  gboolean publishing;          /* a trainer published and has not withdrawn */
  guint64 version;
  GstTensorWeights *current;    /* what predictors take */
  GstTensorWeights *spare;      /* the previous one, reused when free */
} ShareChannel;

static GMutex share_lock;
static GHashTable *share_channels;      /* key -> ShareChannel */

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

gchar *
gst_tensor_model_share_key (GstElement * element, const gchar * name)
{
  GstObject *top = gst_object_ref (GST_OBJECT (element)), *up;
  gchar *key;

  while ((up = gst_object_get_parent (top))) {
    gst_object_unref (top);
    top = up;
  }
  /* the address only identifies the pipeline: its trainers withdraw and
   * its predictors unsubscribe at PAUSED->READY, before it can be freed
   * and its address reused; elements in no bin share the NULL scope */
  key = g_strdup_printf ("%p/%s", top == GST_OBJECT (element) ? NULL :
      (gpointer) top, name);
  gst_object_unref (top);
  return key;
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
share_channel (const gchar * key, gboolean create)
{
  if (!share_channels) {
    if (!create)
      return NULL;
    share_channels = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
        share_channel_free);
  }
  ShareChannel *c = g_hash_table_lookup (share_channels, key);
  if (!c && create) {
    c = g_new0 (ShareChannel, 1);
    g_hash_table_insert (share_channels, g_strdup (key), c);
  }
  return c;
}

/* with share_lock held: forgets a channel nobody uses any more */
static void
share_channel_gc (const gchar * key, ShareChannel * c)
{
  if (c->subscribers == 0 && !c->publishing)
    g_hash_table_remove (share_channels, key);
}

void
gst_tensor_model_share_subscribe (const gchar * key)
{
  g_mutex_lock (&share_lock);
  share_channel (key, TRUE)->subscribers++;
  g_mutex_unlock (&share_lock);
}

void
gst_tensor_model_share_unsubscribe (const gchar * key)
{
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (key, FALSE);
  if (c && c->subscribers > 0) {
    c->subscribers--;
    share_channel_gc (key, c);
  }
  g_mutex_unlock (&share_lock);
}

gboolean
gst_tensor_model_share_has_subscribers (const gchar * key)
{
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (key, FALSE);
  gboolean any = c && c->subscribers > 0;
  g_mutex_unlock (&share_lock);
  return any;
}

void
gst_tensor_model_share_withdraw (const gchar * key)
{
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (key, FALSE);
  if (c) {
    c->publishing = FALSE;
    g_clear_pointer (&c->spare, gst_tensor_weights_unref);
    share_channel_gc (key, c);
  }
  g_mutex_unlock (&share_lock);
}

guint64
gst_tensor_model_share_publish (const gchar * key, tt_model * model,
    tt_error * err)
{
  const gsize n = tt_model_weight_floats (model);
  GstTensorWeights *w = NULL;

  /* the spare is free when the channel's is the only reference: predictors
   * only ever take the current snapshot, so nobody can grab it meanwhile */
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (key, TRUE);
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
          G_GSIZE_FORMAT "-float weight snapshot", key, n);
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
  c = share_channel (key, TRUE);
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
gst_tensor_model_share_latest (const gchar * key, guint64 have)
{
  GstTensorWeights *w = NULL;
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (key, FALSE);
  if (c && c->current && c->current->version > have)
    w = gst_tensor_weights_ref (c->current);
  g_mutex_unlock (&share_lock);
  return w;
}

guint64
gst_tensor_model_share_version (const gchar * key)
{
  g_mutex_lock (&share_lock);
  ShareChannel *c = share_channel (key, FALSE);
  guint64 v = c ? c->version : 0;
  g_mutex_unlock (&share_lock);
  return v;
}

#define MODEL_FILE_QUERY "tensor-model-file-writer"

gboolean
gst_tensor_model_file_written_upstream (GstPad * sinkpad, const gchar * path)
{
  gchar *canonical = g_canonicalize_filename (path, NULL);
  GstQuery *query = gst_query_new_custom (GST_QUERY_CUSTOM,
      gst_structure_new (MODEL_FILE_QUERY, "path", G_TYPE_STRING, canonical,
          NULL));
  gboolean written = FALSE;

  if (gst_pad_peer_query (sinkpad, query))
    gst_structure_get_boolean (gst_query_get_structure (query), "written",
        &written);
  gst_query_unref (query);
  g_free (canonical);
  return written;
}

gboolean
gst_tensor_model_file_query_answer (GstQuery * query,
    const gchar * const *paths, guint n)
{
  const GstStructure *s;
  const gchar *asked;
  gboolean match = FALSE;

  if (GST_QUERY_TYPE (query) != GST_QUERY_CUSTOM)
    return FALSE;
  s = gst_query_get_structure (query);
  if (!s || !gst_structure_has_name (s, MODEL_FILE_QUERY)
      || !(asked = gst_structure_get_string (s, "path")))
    return FALSE;
  for (guint i = 0; i < n && !match; i++) {
    gchar *canonical;
    if (!paths[i] || !*paths[i])
      continue;
    canonical = g_canonicalize_filename (paths[i], NULL);
    match = g_str_equal (canonical, asked);
    g_free (canonical);
  }
  if (match)
    gst_structure_set (gst_query_writable_structure (query), "written",
        G_TYPE_BOOLEAN, TRUE, NULL);
  return match;
}

/* a probe file is made and removed: that also catches read-only file
 * systems and permissions, which looking at the folder would not */
gboolean
gst_tensor_model_file_check_writable (GstElement * element,
    const gchar * prop, const gchar * path)
{
  gchar *dir = g_path_get_dirname (path);
  gchar *probe = g_build_filename (dir, ".tensor_trainer-probe-XXXXXX", NULL);
  gboolean ok = FALSE;
  gint fd;

  if (g_file_test (path, G_FILE_TEST_IS_DIR)) {
    GST_ELEMENT_ERROR (element, RESOURCE, OPEN_WRITE,
        ("Cannot write %s=%s: it is a folder; name the model file.", prop,
            path), (NULL));
    goto out;
  }
  fd = g_mkstemp (probe);
  if (fd < 0) {
    const gint errsv = errno;
    if (g_file_test (dir, G_FILE_TEST_IS_DIR))
      GST_ELEMENT_ERROR (element, RESOURCE, OPEN_WRITE,
          ("Cannot write %s=%s: no file can be made in its folder %s (%s).",
              prop, path, dir, g_strerror (errsv)), (NULL));
    else
      GST_ELEMENT_ERROR (element, RESOURCE, OPEN_WRITE,
          ("Cannot write %s=%s: its folder %s does not exist (%s).", prop,
              path, dir, g_strerror (errsv)), (NULL));
    goto out;
  }
  close (fd);
  g_unlink (probe);
  ok = TRUE;
out:
  g_free (probe);
  g_free (dir);
  return ok;
}
