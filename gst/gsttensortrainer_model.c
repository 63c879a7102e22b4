/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tensor_trainer: the model's life. READY->PAUSED takes the properties,
 * checks them and the destinations to write (model-save-path,
 * checkpoint-path, [Model] save_best_path), and loads and plans the model
 * (or does so at the first caps when its files are written upstream);
 * PAUSED->READY frees it all. */
#include "gsttensortrainer_private.h"
#include "gsttensormodelshare.h"
#include "gstttthreads.h"
#include "gstttmodelopen.h"

#include <string.h>

static void gst_tensor_trainer_post_plan (GstTtTensorTrainer * self);

/* ---- model life: properties at READY->PAUSED, the model at the first
 * caps, all freed at PAUSED->READY ---------------------------------- */

static void
gst_tensor_trainer_free_model (GstTtTensorTrainer * self)
{
  gst_tensor_trainer_replay_stop (self);
  gst_tensor_trainer_fcache_stop (self);
  tt_model_free (self->model);
  self->model = NULL;
  for (guint i = 0; i < GST_TENSOR_TRAINER_MAX_INPUTS; i++)
    g_clear_pointer (&self->in_batch[i], g_free);
  g_clear_pointer (&self->scratch, g_free);
  g_clear_pointer (&self->label_batch, g_free);
}

void
gst_tensor_trainer_stop (GstTtTensorTrainer * self)
{
  if (self->share_key)
    gst_tensor_model_share_withdraw (self->share_key);
  g_clear_pointer (&self->share_key, g_free);
  g_clear_pointer (&self->fed, gst_tensor_federation_stop);
  self->train_batches_total = 0;
  gst_tensor_trainer_free_model (self);
  g_clear_pointer (&self->config_path, g_free);
  g_clear_pointer (&self->load_path, g_free);
  g_clear_pointer (&self->save_path, g_free);
  g_clear_pointer (&self->ckpt_path, g_free);
  self->load_failed = FALSE;
  gst_clear_caps (&self->refused_caps);
  self->negotiated = FALSE;
  self->plan_posted = FALSE;
  self->src_caps_sent = FALSE;
  self->finished = FALSE;
  self->fed_ended = FALSE;
  self->flexible = FALSE;
  self->fill = 0;
  self->epoch_pos = 0;
  self->epochs_done = 0;
  self->samples_seen = 0;
  self->batches = 0;
  memset (&self->train, 0, sizeof self->train);
  self->skipped_samples = 0;
  memset (&self->valid, 0, sizeof self->valid);
}

/* Can the engine save a model at path (the value of prop)? */
static gboolean
gst_tensor_trainer_check_destination (GstTtTensorTrainer * self,
    const gchar * prop, const gchar * path)
{
  tt_error err;
  if (tt_model_check_save_path (path, &err) == TT_OK)
    return TRUE;
  GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
      ("Cannot write %s: %s.", prop, err.message),
      ("tt_model_check_save_path: %s", tt_status_name (err.status)));
  return FALSE;
}

/* READY->PAUSED: takes the properties, checks them, checks that the files
 * to write can be written and loads the model. */
gboolean
gst_tensor_trainer_start (GstTtTensorTrainer * self)
{
  gchar *framework;
  guint num_labels;
  gboolean epochs_set, as_nnstreamer;
  gboolean ok = FALSE;

  GST_OBJECT_LOCK (self);
  framework = g_strdup (self->framework);
  self->config_path = g_strdup (self->model_config);
  self->load_path = g_strdup (self->model_load_path);
  self->save_path = g_strdup (self->model_save_path);
  self->ckpt_path = g_strdup (self->checkpoint_path);
  self->want_inputs = self->num_inputs;
  num_labels = self->num_labels;
  self->n_train = self->num_training_samples;
  self->n_valid = self->num_validation_samples;
  self->want_epochs = self->epochs;
  epochs_set = self->epochs_set;
  GST_OBJECT_UNLOCK (self);
  /* (takes the locks of the element and its parents) */
  self->share_key = gst_tensor_model_share_key (GST_ELEMENT (self),
      GST_ELEMENT_NAME (self));

  as_nnstreamer = g_strcmp0 (framework,
      GST_TENSOR_TRAINER_FRAMEWORK_ALIAS) == 0;
  if (as_nnstreamer) {
    GST_INFO_OBJECT (self, "framework \"" GST_TENSOR_TRAINER_FRAMEWORK_ALIAS
        "\": training with this project's engine, which reads nntrainer's "
        "INI and BIN files");
  } else if (g_strcmp0 (framework, GST_TENSOR_TRAINER_FRAMEWORK) != 0) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Unknown framework \"%s\": this element trains with \""
            GST_TENSOR_TRAINER_FRAMEWORK "\" (or \""
            GST_TENSOR_TRAINER_FRAMEWORK_ALIAS "\", the same engine) only.",
            framework ? framework : "(null)"), (NULL));
    goto out;
  }
  if (!self->config_path || !*self->config_path) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No model-config set: tensor_trainer needs a model INI file."),
        (NULL));
    goto out;
  }
  if (self->want_inputs == 0
      || self->want_inputs > GST_TENSOR_TRAINER_MAX_INPUTS) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("num-inputs=%u: a buffer carries 1 to %u input tensors before its "
            "label.", self->want_inputs, GST_TENSOR_TRAINER_MAX_INPUTS),
        (NULL));
    goto out;
  }
  if (num_labels != 1) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("num-labels=%u: the engine trains models with one label tensor.",
            num_labels), (NULL));
    goto out;
  }
  if (self->n_train == 0) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("num-training-samples is 0: set how many buffers train the model "
            "in each epoch."), (NULL));
    goto out;
  }
  /* nnstreamer's rules for its own launch lines */
  if (as_nnstreamer) {
    if (!self->save_path || !*self->save_path) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("No model-save-path set: with framework="
              GST_TENSOR_TRAINER_FRAMEWORK_ALIAS " it is required, as in "
              "nnstreamer's tensor_trainer (without a framework, the model "
              "is then not saved)."), (NULL));
      goto out;
    }
    if (!epochs_set)
      self->want_epochs = 1;
    else if (self->want_epochs == 0) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("epochs=0: with framework=" GST_TENSOR_TRAINER_FRAMEWORK_ALIAS
              " it must be at least 1, as in nnstreamer's tensor_trainer "
              "(without a framework, 0 takes the INI's [Model] epochs)."),
          (NULL));
      goto out;
    }
  }
  /* a destination that cannot be written must not cost a whole run */
  if (self->save_path && *self->save_path
      && !gst_tensor_trainer_check_destination (self, "model-save-path",
          self->save_path))
    goto out;
  if (self->ckpt_path && *self->ckpt_path) {
    gchar *first = gst_tensor_trainer_checkpoint_name (self->ckpt_path, 1);
    gboolean writable = gst_tensor_trainer_check_destination (self,
        "checkpoint-path", first);
    g_free (first);
    if (!writable)
      goto out;
  }
  /* a bad model file fails the state change, posted once, rather than
   * every caps event that comes; only files that an element upstream
   * (tensor_planner) writes when the caps come are read then */
  if (gst_tensor_model_file_written_upstream (self->sinkpad,
          self->config_path) || (self->load_path && *self->load_path
          && gst_tensor_model_file_written_upstream (self->sinkpad,
              self->load_path)))
    GST_INFO_OBJECT (self, "%s or %s is written upstream when the caps "
        "come: loading the model then", self->config_path,
        self->load_path ? self->load_path : "(no weights)");
  else if (!gst_tensor_trainer_load_model (self))
    goto out;
  self->fed = gst_tensor_federation_start (GST_ELEMENT (self),
      &self->federation, &ok);
  if (!ok)
    goto out;
out:
  if (!ok)
    gst_tensor_trainer_stop (self);
  g_free (framework);
  return ok;
}

/* Loads, plans (or validates the stored plan of) and prepares the model:
 * at start, or with the first caps (in the streaming thread) when its
 * files are written upstream then. */
gboolean
gst_tensor_trainer_load_model (GstTtTensorTrainer * self)
{
  const gchar *config = self->config_path;
  tt_error err;
  tt_plan_info *plan = &self->plan;
  gsize widest = 0;
  const gchar *best;

  /* an INI, or a bundle with its INI, plan and weights in one file;
   * model-load-path's weights (a BIN or a bundle) over either */
  tt_open_options open_opts = { 0 };
  tt_open_info opened;
  open_opts.weights = self->load_path;
  GST_OBJECT_LOCK (self);
  open_opts.memory_limit = self->memory_limit;
  gchar *train = g_strdup (self->train_choice);
  open_opts.train = train;
  gchar *precision = g_strdup (self->precision);
  open_opts.precision = precision;
  const guint threads = gst_tt_threads_resolve (self->threads);
  GST_OBJECT_UNLOCK (self);
  /* before compiling: on two threads the pool is laid out for them */
  open_opts.threads = threads;
  self->model = gst_tt_model_open (config, &open_opts, NULL, &opened, &err);
  g_free (train);
  g_free (precision);
  if (self->model && tt_model_set_threads (self->model, threads, &err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("%s", err.message),
        ("starting %u engine threads", threads));
    goto fail;
  }
  if (!self->model) {
    if (opened.failed_step == TT_OPEN_WEIGHTS)
      GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err.message),
          ("loading the weights: %s", tt_status_name (err.status)));
    else if (opened.failed_step == TT_OPEN_COMPILE)
      GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("%s", err.message),
          ("tt_model_compile: %s", tt_status_name (err.status)));
    else if (err.status == TT_ERR_IO)
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", err.message),
          ("loading the model: %s", tt_status_name (err.status)));
    else
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS, ("%s", err.message),
          ("loading the model: %s", tt_status_name (err.status)));
    goto fail;
  }
  tt_model_plan_info (self->model, plan);
  GST_INFO_OBJECT (self, "%s: %s in %.3f ms: pool %" G_GUINT64_FORMAT
      " bytes, lower bound %" G_GUINT64_FORMAT ", naive %" G_GUINT64_FORMAT
      ", depth-first %" G_GUINT64_FORMAT, config, plan->from_stored_plan ?
      "stored plan validated (no planning)" : "model planned",
      plan->plan_seconds * 1e3, plan->pool_bytes, plan->lower_bound,
      plan->naive_bytes, plan->dfs_pool_bytes);
  self->n_inputs = tt_model_num_inputs (self->model);
  if (self->n_inputs != self->want_inputs) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("num-inputs=%u but the model %s has %u input layer(s).",
            self->want_inputs, config, self->n_inputs), (NULL));
    goto fail;
  }
  if (self->n_inputs > GST_TENSOR_TRAINER_MAX_INPUTS) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("The model %s has %u inputs; at most %u fit in a buffer.",
            config, self->n_inputs, GST_TENSOR_TRAINER_MAX_INPUTS), (NULL));
    goto fail;
  }

  self->batch = tt_model_batch_size (self->model);
  for (guint i = 0; i < self->n_inputs; i++) {
    tt_shape s;
    tt_model_input_shape (self->model, i, &s);
    self->in_count[i] = (gsize) s.channel * s.height * s.width;
    self->in_types[i] = TT_DTYPE_FLOAT32;
    /* room for float32, the widest type accepted */
    self->in_batch[i] = g_malloc_n ((gsize) self->batch * self->in_count[i],
        sizeof (gfloat));
    widest = MAX (widest, self->in_count[i]);
  }
  self->scratch = g_malloc_n (widest, sizeof (gfloat));
  {
    tt_shape s = tt_model_label_shape (self->model);
    self->label_count = (gsize) s.channel * s.height * s.width;
    self->label_batch = g_malloc_n ((gsize) self->batch * self->label_count,
        sizeof (gfloat));
  }
  self->spec.model = self->model;
  self->spec.n_inputs = self->n_inputs;
  self->spec.label_shape = tt_model_label_shape (self->model);
  self->spec.label_count = self->label_count;
  self->spec.label_optional = FALSE;
  best = tt_model_save_best_path (self->model);
  if (best && *best) {
    if (self->n_valid == 0)
      GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
          ("[Model] save_best_path of %s (%s) will not be written: it is "
              "saved after validation passes, and num-validation-samples "
              "is 0.", config, best), (NULL));
    else if (!gst_tensor_trainer_check_destination (self,
            "[Model] save_best_path", best))
      goto fail;
  }
  self->n_epochs = self->want_epochs ? self->want_epochs :
      tt_model_epochs (self->model);
  if (self->n_epochs == 0)
    self->n_epochs = 1;
  GST_INFO_OBJECT (self, "model %s: batch %u, %u input(s), %u epoch(s) of "
      "%u training + %u validation samples", config, self->batch,
      self->n_inputs, self->n_epochs, self->n_train, self->n_valid);
  if (!gst_tensor_trainer_replay_start (self))
    goto fail;
  if (!gst_tensor_trainer_fcache_start (self))
    goto fail;
  gst_tensor_trainer_post_plan (self);
  gst_tensor_trainer_post_precision (self);
  return TRUE;

fail:
  gst_tensor_trainer_free_model (self);
  return FALSE;
}

/* The one-time tensor-trainer-plan message. */
static void
gst_tensor_trainer_post_plan (GstTtTensorTrainer * self)
{
  const tt_plan_info *p = &self->plan;
  GstStructure *s;

  if (self->plan_posted)
    return;
  self->plan_posted = TRUE;
  if (!gst_tensor_trainer_posting (self, NULL))
    return;
  s = gst_structure_new ("tensor-trainer-plan",
      "model", G_TYPE_STRING, self->config_path,
      "plan-loaded", G_TYPE_BOOLEAN, (gboolean) p->from_stored_plan,
      "pool-bytes", G_TYPE_UINT64, (guint64) p->pool_bytes,
      "lower-bound", G_TYPE_UINT64, (guint64) p->lower_bound,
      "naive-bytes", G_TYPE_UINT64, (guint64) p->naive_bytes,
      "depth-first-bytes", G_TYPE_UINT64, (guint64) p->dfs_pool_bytes,
      "tensors", G_TYPE_UINT, p->tensors,
      "in-place-layers", G_TYPE_UINT, p->in_place_layers,
      "order-exact", G_TYPE_BOOLEAN, (gboolean) p->order_exact,
      "plan-ms", G_TYPE_DOUBLE, p->plan_seconds * 1e3,
      "batch-size", G_TYPE_UINT, self->batch, NULL);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}
