/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tensor_predictor: the model and its weights. READY->PAUSED loads and
 * plans the inference model (its config perhaps from the trainer it
 * follows), its weights and the class names; PAUSED->READY frees them.
 * Between batches, fresh weights: the trainer's latest publication, or
 * the weights file loaded again when it was replaced. */
#include "gsttensorpredictor_private.h"
#include "gsttensormodelshare.h"
#include "gstttthreads.h"
#include "gstttmodelopen.h"

#include <string.h>
#include <sys/stat.h>

/* ---- model life: loaded at READY->PAUSED, freed at PAUSED->READY ---- */

gboolean
gst_tensor_predictor_posting (GstTtTensorPredictor * self)
{
  gboolean post;
  GST_OBJECT_LOCK (self);
  post = self->post_messages;
  GST_OBJECT_UNLOCK (self);
  return post;
}

void
gst_tensor_predictor_stop (GstTtTensorPredictor * self)
{
  if (self->share_key)
    gst_tensor_model_share_unsubscribe (self->share_key);
  g_clear_pointer (&self->share_key, g_free);
  g_clear_pointer (&self->trainer_name, g_free);
  g_clear_pointer (&self->watch_path, g_free);
  tt_model_free (self->model);
  self->model = NULL;
  for (guint i = 0; i < GST_TENSOR_PREDICTOR_MAX_INPUTS; i++)
    g_clear_pointer (&self->in_batch[i], g_free);
  g_clear_pointer (&self->label_batch, g_free);
  g_clear_pointer (&self->stamps, g_free);
  g_clear_pointer (&self->class_names, g_strfreev);
  self->n_class_names = 0;
  self->fill = 0;
  self->negotiated = FALSE;
  self->flexible = FALSE;
  self->have_identity = FALSE;
  self->have_version = 0;
  self->reloads = 0;
  self->busy_us = 0;
  self->first_us = 0;
  self->runs = 0;
}

static void
gst_tensor_predictor_model_error (GstTtTensorPredictor * self,
    const tt_error * err, const gchar * what)
{
  if (err->status == TT_ERR_IO)
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", err->message),
        ("%s: %s", what, tt_status_name (err->status)));
  else
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS, ("%s", err->message),
        ("%s: %s", what, tt_status_name (err->status)));
}

/* (device, inode, size, mtime) of path: what an atomic rename changes */
static gboolean
gst_tensor_predictor_identity (const gchar * path, guint64 id[4])
{
  struct stat sb;
  if (stat (path, &sb) != 0)
    return FALSE;
  id[0] = (guint64) sb.st_dev;
  id[1] = (guint64) sb.st_ino;
  id[2] = (guint64) sb.st_size;
  id[3] = (guint64) sb.st_mtim.tv_sec * G_GUINT64_CONSTANT (1000000000) +
      (guint64) sb.st_mtim.tv_nsec;
  return TRUE;
}

static gboolean
gst_tensor_predictor_read_labels (GstTtTensorPredictor * self,
    const gchar * path)
{
  gchar *text = NULL;
  GError *error = NULL;
  if (!g_file_get_contents (path, &text, NULL, &error)) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("labels: %s",
            error->message), (NULL));
    g_error_free (error);
    return FALSE;
  }
  self->class_names = g_strsplit (g_strchomp (text), "\n", -1);
  g_free (text);
  self->n_class_names = g_strv_length (self->class_names);
  for (guint i = 0; i < self->n_class_names; i++)
    g_strstrip (self->class_names[i]);
  return TRUE;
}

static void
gst_tensor_predictor_post_plan (GstTtTensorPredictor * self)
{
  tt_plan_info p;
  tt_memory_info mem;
  tt_model_plan_info (self->model, &p);
  tt_model_memory_info (self->model, &mem);
  GST_INFO_OBJECT (self, "inference model: %s in %.3f ms, pool %"
      G_GUINT64_FORMAT " bytes (lower bound %" G_GUINT64_FORMAT
      "), weights %" G_GSIZE_FORMAT " bytes, batch %u",
      p.from_stored_plan ? "stored plan validated" : "planned",
      p.plan_seconds * 1e3, p.pool_bytes, p.lower_bound, mem.weight_bytes,
      self->batch);
  if (!gst_tensor_predictor_posting (self))
    return;
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("tensor-predictor-plan",
              "plan-loaded", G_TYPE_BOOLEAN, (gboolean) p.from_stored_plan,
              "pool-bytes", G_TYPE_UINT64, (guint64) p.pool_bytes,
              "lower-bound", G_TYPE_UINT64, (guint64) p.lower_bound,
              "weight-bytes", G_TYPE_UINT64, (guint64) mem.weight_bytes,
              "plan-ms", G_TYPE_DOUBLE, p.plan_seconds * 1e3,
              "batch-size", G_TYPE_UINT, self->batch, NULL)));
}

/* The model-config of the tensor_trainer called name in the same pipeline
 * (NULL if there is none). */
static gchar *
gst_tensor_predictor_trainer_config (GstTtTensorPredictor * self,
    const gchar * name)
{
  GstObject *top = gst_object_ref (GST_OBJECT (self)), *up;
  gchar *config = NULL;
  while ((up = gst_object_get_parent (top))) {
    gst_object_unref (top);
    top = up;
  }
  if (GST_IS_BIN (top)) {
    GstElement *t = gst_bin_get_by_name (GST_BIN (top), name);
    if (t && g_object_class_find_property (G_OBJECT_GET_CLASS (t),
            "model-config") && g_str_equal (G_OBJECT_TYPE_NAME (t),
            "GstTtTensorTrainer"))
      g_object_get (t, "model-config", &config, NULL);
    if (t)
      gst_object_unref (t);
  }
  gst_object_unref (top);
  return config;
}

/* READY->PAUSED: takes the properties, loads and plans the model. */
gboolean
gst_tensor_predictor_start (GstTtTensorPredictor * self)
{
  gchar *config, *load, *labels;
  gboolean reload;
  tt_error err;
  tt_open_options open_opts = { 0 };
  tt_open_info opened;

  GST_OBJECT_LOCK (self);
  config = g_strdup (self->model_config);
  load = g_strdup (self->model_load_path);
  labels = g_strdup (self->labels_path);
  self->batch = self->batch_size;
  self->trainer_name = self->trainer && *self->trainer ?
      g_strdup (self->trainer) : NULL;
  reload = self->reload;
  self->out_mode = self->output;
  self->samples = self->labelled = self->correct = 0;
  self->weights_version = 0;
  self->pool_bytes = 0;
  const guint threads = gst_tt_threads_resolve (self->threads);
  GST_OBJECT_UNLOCK (self);

  if ((!config || !*config) && self->trainer_name) {
    g_free (config);
    config = gst_tensor_predictor_trainer_config (self, self->trainer_name);
  }
  if (!config || !*config) {
    if (self->trainer_name)
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("No model-config set, and no tensor_trainer called \"%s\" with "
              "a model-config in this pipeline to take it from.",
              self->trainer_name), (NULL));
    else
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("No model-config set: tensor_predictor needs a model (INI or "
              "bundle)."), (NULL));
    goto fail;
  }
  /* an INI or a bundle (with its weights), compiled for inference */
  open_opts.inference = TRUE;
  open_opts.batch_size = self->batch;
  /* before compiling: on two threads the pool is laid out for them */
  open_opts.threads = threads;
  self->model = gst_tt_model_open (config, &open_opts, "mse", &opened, &err);
  if (self->model && tt_model_set_threads (self->model, threads, &err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("%s", err.message),
        ("starting %u engine threads", threads));
    goto fail;
  }
  if (!self->model) {
    if (opened.failed_step == TT_OPEN_SETTINGS
        || opened.failed_step == TT_OPEN_COMPILE)
      GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("%s", err.message),
          ("compiling the inference model: %s", tt_status_name (err.status)));
    else
      gst_tensor_predictor_model_error (self, &err,
          opened.kind == TT_MODEL_FILE_BUNDLE ? "loading the bundle" :
          "loading the model");
    goto fail;
  }
  if (load && *load) {
    if (tt_model_load_weights (self->model, load, &err) != TT_OK) {
      GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err.message),
          ("loading the weights"));
      goto fail;
    }
    self->watch_path = g_strdup (load);
  } else if (opened.kind == TT_MODEL_FILE_BUNDLE) {
    self->watch_path = g_strdup (config);
  } else if (!self->trainer_name) {
    GST_ELEMENT_WARNING (self, RESOURCE, NOT_FOUND,
        ("No weights: %s is an INI without model-load-path and no trainer "
            "is set, so predictions come from freshly initialized weights.",
            config), (NULL));
  }
  if (reload && !self->watch_path) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("reload=true but there is no weights file to watch: set "
            "model-load-path (or use a bundle as model-config)."), (NULL));
    goto fail;
  }
  if (!reload)
    g_clear_pointer (&self->watch_path, g_free);
  else
    self->have_identity = gst_tensor_predictor_identity (self->watch_path,
        self->identity);

  self->n_inputs = tt_model_num_inputs (self->model);
  if (self->n_inputs > GST_TENSOR_PREDICTOR_MAX_INPUTS) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("The model %s has %u inputs; at most %u fit in a buffer.", config,
            self->n_inputs, GST_TENSOR_PREDICTOR_MAX_INPUTS), (NULL));
    goto fail;
  }
  for (guint i = 0; i < self->n_inputs; i++) {
    tt_shape s;
    tt_model_input_shape (self->model, i, &s);
    self->in_count[i] = (gsize) s.channel * s.height * s.width;
    self->in_batch[i] = g_malloc_n ((gsize) self->batch * self->in_count[i],
        sizeof (gfloat));
  }
  {
    tt_shape s = tt_model_output_shape (self->model);
    self->out_count = (gsize) s.channel * s.height * s.width;
  }
  self->label_batch = g_malloc_n ((gsize) self->batch * self->out_count,
      sizeof (gfloat));
  self->spec.model = self->model;
  self->spec.n_inputs = self->n_inputs;
  self->spec.label_shape = tt_model_output_shape (self->model);
  self->spec.label_count = self->out_count;
  self->spec.label_optional = TRUE;
  self->stamps = g_new0 (GstTtTensorPredictorStamp, self->batch);
  self->signature = tt_model_weight_signature (self->model);
  if (labels && *labels && !gst_tensor_predictor_read_labels (self, labels))
    goto fail;
  if (self->trainer_name) {
    self->share_key = gst_tensor_model_share_key (GST_ELEMENT (self),
        self->trainer_name);
    gst_tensor_model_share_subscribe (self->share_key);
  }

  {
    tt_memory_info mem;
    tt_model_memory_info (self->model, &mem);
    GST_OBJECT_LOCK (self);
    self->pool_bytes = mem.pool_bytes;
    GST_OBJECT_UNLOCK (self);
  }
  gst_tensor_predictor_post_plan (self);
  g_free (config);
  g_free (load);
  g_free (labels);
  return TRUE;

fail:
  gst_tensor_predictor_stop (self);
  g_free (config);
  g_free (load);
  g_free (labels);
  return FALSE;
}

/* ---- fresh weights ---------------------------------------------------- */

static void
gst_tensor_predictor_post_weights (GstTtTensorPredictor * self,
    guint64 version, guint epoch, guint iteration, const gchar * source)
{
  GST_OBJECT_LOCK (self);
  self->weights_version = version;
  GST_OBJECT_UNLOCK (self);
  GST_DEBUG_OBJECT (self, "weights version %" G_GUINT64_FORMAT " from %s "
      "(epoch %u, iteration %u)", version, source, epoch, iteration);
  if (!gst_tensor_predictor_posting (self))
    return;
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("tensor-predictor-weights",
              "version", G_TYPE_UINT64, version,
              "epoch", G_TYPE_UINT, epoch,
              "iteration", G_TYPE_UINT, iteration,
              "source", G_TYPE_STRING, source, NULL)));
}

/* Takes the trainer's latest snapshot, if newer than the one in use. */
GstFlowReturn
gst_tensor_predictor_follow_trainer (GstTtTensorPredictor * self)
{
  tt_error err;
  if (gst_tensor_model_share_version (self->share_key) <= self->have_version)
    return GST_FLOW_OK;
  GstTensorWeights *w = gst_tensor_model_share_latest (self->share_key,
      self->have_version);
  if (!w)
    return GST_FLOW_OK;
  if (w->signature != self->signature) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("The trainer \"%s\" trains another model: its weights (%"
            G_GSIZE_FORMAT " floats) do not fit this predictor's model (%"
            G_GSIZE_FORMAT " floats, or other tensor names).",
            self->trainer_name, w->n_floats,
            tt_model_weight_floats (self->model)), (NULL));
    gst_tensor_weights_unref (w);
    return GST_FLOW_ERROR;
  }
  if (tt_model_import_weights (self->model, w->data, w->n_floats, &err)) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("%s", err.message), (NULL));
    gst_tensor_weights_unref (w);
    return GST_FLOW_ERROR;
  }
  self->have_version = w->version;
  gst_tensor_predictor_post_weights (self, w->version, w->epoch,
      w->iteration, "trainer");
  gst_tensor_weights_unref (w);
  return GST_FLOW_OK;
}

/* Loads the weights file again when it was replaced. */
void
gst_tensor_predictor_check_reload (GstTtTensorPredictor * self)
{
  guint64 id[4];
  guint interval;
  tt_error err;
  const gint64 now = g_get_monotonic_time ();

  if (now < self->next_check_us)
    return;
  GST_OBJECT_LOCK (self);
  interval = self->reload_interval_ms;
  GST_OBJECT_UNLOCK (self);
  self->next_check_us = now + (gint64) interval *1000;
  if (!gst_tensor_predictor_identity (self->watch_path, id))
    return;                     /* between unlink and rename: next time */
  if (self->have_identity && !memcmp (id, self->identity, sizeof id))
    return;
  memcpy (self->identity, id, sizeof id);
  self->have_identity = TRUE;
  if (tt_model_load_weights (self->model, self->watch_path, &err)) {
    GST_ELEMENT_WARNING (self, RESOURCE, READ,
        ("Kept the current weights: the new %s did not load: %s",
            self->watch_path, err.message), (NULL));
    return;
  }
  self->reloads++;
  gst_tensor_predictor_post_weights (self, self->reloads,
      tt_model_epoch (self->model), tt_model_iteration (self->model), "file");
}
