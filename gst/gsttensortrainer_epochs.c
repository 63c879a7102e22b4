/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tensor_trainer: training. A batch trained or evaluated, the epoch
 * closed (its figures pushed and posted, the checkpoint and the best
 * model saved), the run finished (the model saved, EOS sent); the bus
 * messages and the weights published to predictors on the way. */
#include "gsttensortrainer_private.h"
#include "gsttensormodelshare.h"
#include "tt_bundle.h"

#include <math.h>
#include <string.h>

/* ---- training -------------------------------------------------------- */

gboolean
gst_tensor_trainer_posting (GstTtTensorTrainer * self, guint * interval)
{
  gboolean post;
  GST_OBJECT_LOCK (self);
  post = self->post_messages;
  if (interval)
    *interval = self->progress_interval;
  GST_OBJECT_UNLOCK (self);
  return post;
}

static GstFlowReturn
gst_tensor_trainer_engine_error (GstTtTensorTrainer * self, const tt_error * e,
    const gchar * what)
{
  if (e->status == TT_ERR_NUMERIC)
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("Training diverged: %s", e->message), ("%s: %s", what,
            tt_status_name (e->status)));
  else
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("%s", e->message),
        ("%s: %s", what, tt_status_name (e->status)));
  return GST_FLOW_ERROR;
}

/* Every progress-interval batches: where the epoch stands. */
static void
gst_tensor_trainer_post_progress (GstTtTensorTrainer * self, gboolean training)
{
  const GstTtTensorTrainerTally *t = training ? &self->train : &self->valid;
  const gdouble seconds = (g_get_monotonic_time () - (training ?
          self->epoch_start_us : self->train_end_us)) / 1e6;
  guint interval;
  GstStructure *s;

  if (!gst_tensor_trainer_posting (self, &interval) || interval == 0
      || self->batches % interval != 0)
    return;
  s = gst_structure_new ("tensor-trainer-progress",
      "epoch", G_TYPE_UINT, self->epochs_done + 1,
      "epochs", G_TYPE_UINT, self->n_epochs,
      "phase", G_TYPE_STRING, training ? "training" : "validation",
      "batch", G_TYPE_UINT, self->batches,
      "samples", G_TYPE_UINT64, t->samples,
      "total", G_TYPE_UINT64, (guint64) (training ? self->n_train :
          self->n_valid),
      "loss", G_TYPE_DOUBLE, t->loss_sum / (t->samples + t->replayed),
      "accuracy", G_TYPE_DOUBLE, (gdouble) t->correct / (t->samples +
          t->replayed),
      "samples-per-second", G_TYPE_DOUBLE, seconds > 0 ?
      t->samples / seconds : NAN, NULL);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

/* Hands the weights to the predictors following this trainer, if any. */
static void
gst_tensor_trainer_publish (GstTtTensorTrainer * self)
{
  tt_error err;
  if (!self->model || !gst_tensor_model_share_has_subscribers (self->share_key))
    return;
  guint64 version = gst_tensor_model_share_publish (self->share_key,
      self->model, &err);
  if (version == 0)
    GST_ELEMENT_WARNING (self, RESOURCE, FAILED,
        ("Could not publish the weights to predictors: %s", err.message),
        (NULL));
  else
    GST_LOG_OBJECT (self, "published weights version %" G_GUINT64_FORMAT
        " (iteration %u)", version, tt_model_iteration (self->model));
}

/* Trains (or evaluates) the samples waiting in the batch, fill of them. */
GstFlowReturn
gst_tensor_trainer_run_batch (GstTtTensorTrainer * self, gboolean training)
{
  const void *inputs[GST_TENSOR_TRAINER_MAX_INPUTS];
  GstTtTensorTrainerTally *tally = training ? &self->train : &self->valid;
  tt_batch_result r;
  tt_error err;
  tt_status st;
  const guint n_new = self->fill;
  guint n;

  if (n_new == 0)
    return GST_FLOW_OK;
  /* replay: past samples after the new ones (none while validating) */
  n = n_new + (training ? gst_tensor_trainer_replay_mix (self, n_new) : 0);
  for (guint i = 0; i < self->n_inputs; i++)
    inputs[i] = self->in_batch[i];
  self->fill = 0;
  /* a global model comes between batches; the federation's end of the
   * run, too: then this batch is not trained (the caller finishes) */
  if (training && gst_tensor_federation_before_batch (self->fed, self->model,
          n)) {
    self->fed_ended = TRUE;
    gst_tensor_trainer_replay_done (self);
    return GST_FLOW_OK;
  }
  if (training && self->fcache)
    st = gst_tensor_trainer_fcache_train (self, self->epoch_pos - n_new, n,
        inputs, &r, &err);
  else if (training)
    st = tt_model_train_batch (self->model, n, inputs, self->in_types,
        self->label_batch, &r, &err);
  else
    st = tt_model_eval_batch (self->model, n, inputs, self->in_types,
        self->label_batch, &r, &err);
  gst_tensor_trainer_replay_done (self);
  if (st == TT_ERR_NUMERIC) {
    gboolean skip;
    GST_OBJECT_LOCK (self);
    skip = self->skip_bad_batches;
    GST_OBJECT_UNLOCK (self);
    if (skip) {
      /* the engine left the model as it was: dropping the batch is safe */
      self->skipped_samples += n_new;
      GST_ELEMENT_WARNING (self, STREAM, FAILED,
          ("Skipped a batch of %u samples: %s", n, err.message),
          ("skip-bad-batches=true"));
      return GST_FLOW_OK;
    }
  }
  if (st != TT_OK)
    return gst_tensor_trainer_engine_error (self, &err, training ?
        "tt_model_train_batch" : "tt_model_eval_batch");
  tally->samples += n_new;
  tally->replayed += n - n_new;
  tally->correct += r.correct;
  tally->loss_sum += r.loss * n;
  self->batches++;
  GST_LOG_OBJECT (self, "%s batch of %u: loss %g, %u correct",
      training ? "trained" : "evaluated", n, r.loss, r.correct);
  gst_tensor_trainer_post_progress (self, training);
  if (training) {
    guint every;
    self->train_batches_total++;
    GST_OBJECT_LOCK (self);
    every = self->publish_interval;
    GST_OBJECT_UNLOCK (self);
    if (every && self->train_batches_total % every == 0)
      gst_tensor_trainer_publish (self);
  }
  return GST_FLOW_OK;
}

gchar *
gst_tensor_trainer_checkpoint_name (const gchar * pattern, guint epoch)
{
  gchar **parts = g_strsplit (pattern, "%u", -1);
  gchar *num = g_strdup_printf ("%u", epoch);
  gchar *path = g_strjoinv (num, parts);
  g_free (num);
  g_strfreev (parts);
  return path;
}

/* [Model] save_best_path after epoch's validation pass: the engine keeps
 * the record and writes the BIN when the pass is the best so far. Returns
 * whether it did. */
static gboolean
gst_tensor_trainer_save_best (GstTtTensorTrainer * self, guint epoch,
    gdouble loss, gdouble accuracy)
{
  const gchar *path = tt_model_save_best_path (self->model);
  tt_error err;
  bool saved = false;

  if (!path || !*path)
    return FALSE;
  /* the model in memory is fine and model-save-path may still be
   * written: a best model that could not be saved does not end the run */
  if (tt_model_save_best (self->model, loss, accuracy, &saved, &err)
      != TT_OK) {
    GST_ELEMENT_WARNING (self, RESOURCE, WRITE,
        ("Could not save the best model so far after epoch %u: %s; training "
            "goes on.", epoch, err.message), (NULL));
    return FALSE;
  }
  if (saved)
    GST_INFO_OBJECT (self, "epoch %u: best validation so far (accuracy %g, "
        "loss %g), saved %s", epoch, accuracy, loss, path);
  return saved;
}

/* Closes the current epoch (complete or cut short by EOS): pushes its
 * figures, posts its message, saves the checkpoint. */
GstFlowReturn
gst_tensor_trainer_end_epoch (GstTtTensorTrainer * self, gboolean complete)
{
  const GstTtTensorTrainerTally *t = &self->train, *v = &self->valid;
  const gint64 now = g_get_monotonic_time ();
  const gdouble seconds = (now - self->epoch_start_us) / 1e6;
  /* training throughput, as tensor-trainer (the CLI) reports it: the
   * training samples over the time from the epoch's first buffer to its
   * last training batch, everything upstream included */
  const gdouble train_seconds = ((v->samples ? self->train_end_us : now) -
      self->epoch_start_us) / 1e6;
  const gdouble rate = train_seconds > 0 ? t->samples / train_seconds : NAN;
  /* (over every sample trained, the replayed ones included) */
  const guint64 t_all = t->samples + t->replayed;
  gdouble stats[4] = {
    t_all ? t->loss_sum / t_all : NAN,
    t_all ? (gdouble) t->correct / t_all : NAN,
    v->samples ? v->loss_sum / v->samples : NAN,
    v->samples ? (gdouble) v->correct / v->samples : NAN,
  };
  const guint index = self->epochs_done;        /* 0-based */
  gboolean post, best_saved = FALSE;
  GstBuffer *out;
  GstFlowReturn ret;

  if (complete) {
    tt_model_finish_epoch (self->model);
    self->epochs_done++;
    gst_tensor_federation_epoch_end (self->fed, self->model,
        self->epochs_done >= self->n_epochs);
    /* nntrainer saves its best model after validation passes only */
    if (v->samples > 0)
      best_saved = gst_tensor_trainer_save_best (self, index + 1, stats[2],
          stats[3]);
  }
  gst_tensor_trainer_publish (self);
  GST_INFO_OBJECT (self, "epoch %u/%u%s: loss %g accuracy %g validation loss "
      "%g accuracy %g, %.1f samples/s", index + 1, self->n_epochs,
      complete ? "" : " (cut short)", stats[0], stats[1], stats[2], stats[3],
      rate);

  gst_tensor_trainer_send_src_caps (self);
  out = gst_buffer_new_memdup (stats, sizeof stats);
  GST_BUFFER_PTS (out) = index * GST_SECOND;
  GST_BUFFER_DURATION (out) = GST_SECOND;
  GST_BUFFER_OFFSET (out) = index;
  GST_BUFFER_OFFSET_END (out) = index + 1;
  ret = gst_pad_push (self->srcpad, out);
  if (ret == GST_FLOW_NOT_LINKED || ret == GST_FLOW_EOS)
    ret = GST_FLOW_OK;          /* the figures are optional downstream */

  /* mixed precision: counted whether posted or not */
  const guint64 skipped_steps = gst_tensor_trainer_epoch_skipped_steps (self);
  post = gst_tensor_trainer_posting (self, NULL);
  if (post) {
    GstStructure *s = gst_structure_new ("tensor-trainer-epoch",
        "epoch", G_TYPE_UINT, index + 1,
        "epochs", G_TYPE_UINT, self->n_epochs,
        "samples", G_TYPE_UINT64, t->samples,
        "validation-samples", G_TYPE_UINT64, v->samples,
        "skipped-samples", G_TYPE_UINT64, self->skipped_samples,
        "loss", G_TYPE_DOUBLE, stats[0],
        "accuracy", G_TYPE_DOUBLE, stats[1],
        "validation-loss", G_TYPE_DOUBLE, stats[2],
        "validation-accuracy", G_TYPE_DOUBLE, stats[3],
        "samples-per-second", G_TYPE_DOUBLE, rate,
        "seconds", G_TYPE_DOUBLE, seconds,
        "complete", G_TYPE_BOOLEAN, complete,
        "best-saved", G_TYPE_BOOLEAN, best_saved,
        "plan-loaded", G_TYPE_BOOLEAN, (gboolean) self->plan.from_stored_plan,
        "pool-bytes", G_TYPE_UINT64, (guint64) self->plan.pool_bytes,
        "lower-bound", G_TYPE_UINT64, (guint64) self->plan.lower_bound,
        "naive-bytes", G_TYPE_UINT64, (guint64) self->plan.naive_bytes,
        "plan-ms", G_TYPE_DOUBLE, self->plan.plan_seconds * 1e3,
        "replayed-samples", G_TYPE_UINT64, t->replayed,
        "cached-samples", G_TYPE_UINT64, self->fcache_samples,
        /* mixed precision: loss scaling */
        "skipped-steps", G_TYPE_UINT64, skipped_steps,
        "loss-scale", G_TYPE_DOUBLE,
        (gdouble) tt_model_loss_scale (self->model), NULL);
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self), s));
  }

  if (complete && self->ckpt_path && *self->ckpt_path) {
    gchar *path = gst_tensor_trainer_checkpoint_name (self->ckpt_path,
        index + 1);
    tt_error err;
    /* the model in memory is fine and model-save-path may still be
     * written: a lost checkpoint does not end the run */
    if (tt_model_save (self->model, path, &err) != TT_OK) {
      GST_ELEMENT_WARNING (self, RESOURCE, WRITE,
          ("Could not write the checkpoint of epoch %u (checkpoint-path): "
              "%s; training goes on.", index + 1, err.message), (NULL));
    } else {
      GST_INFO_OBJECT (self, "checkpoint %s", path);
    }
    g_free (path);
  }

  /* the feature cache: its first epoch's file committed */
  if (complete && !gst_tensor_trainer_fcache_epoch_done (self))
    ret = GST_FLOW_ERROR;
  self->fcache_samples = 0;
  memset (&self->train, 0, sizeof self->train);
  self->skipped_samples = 0;
  memset (&self->valid, 0, sizeof self->valid);
  self->epoch_pos = 0;
  self->batches = 0;
  return ret;
}

/* After the last epoch or at EOS: trains the pending batch, closes a
 * partial epoch, saves the model, then sends EOS downstream. */
GstFlowReturn
gst_tensor_trainer_finish (GstTtTensorTrainer * self)
{
  const guint64 expected = (guint64) self->n_epochs *
      ((guint64) self->n_train + self->n_valid);
  GstFlowReturn ret = GST_FLOW_OK;

  if (self->finished)
    return GST_FLOW_EOS;
  if (self->model && self->epoch_pos > 0) {
    ret = gst_tensor_trainer_run_batch (self, self->epoch_pos <= self->n_train);
    if (ret == GST_FLOW_OK)
      ret = gst_tensor_trainer_end_epoch (self, FALSE);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  if (self->samples_seen == 0) {
    /* never replace a saved model by an untrained one */
    GST_ELEMENT_WARNING (self, STREAM, FAILED,
        ("EOS before any sample: nothing was trained%s.", self->save_path
            && *self->save_path ? ", model-save-path was not written" : ""),
        (NULL));
    goto eos;
  }
  if (self->model && self->save_path && *self->save_path) {
    tt_error err;
    gchar saved_to[4096];
    /* the destination was checked at start, so this is a full disk or a
     * folder gone meanwhile: the engine then keeps the model elsewhere,
     * and its message says where */
    if (tt_model_save_with_fallback (self->model, self->save_path, NULL,
            saved_to, sizeof saved_to, &err) != TT_OK) {
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
          ("Could not save the trained model to model-save-path: %s.",
              err.message), ("%s", *saved_to ? "kept in a fallback file" :
              "no fallback file could be written either"));
      return GST_FLOW_ERROR;
    }
    GST_INFO_OBJECT (self, "saved %s", self->save_path);
  }
  gst_tensor_trainer_replay_save (self);
  if (self->fed_ended)
    GST_INFO_OBJECT (self, "the federation's run ended after %"
        G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " samples",
        self->samples_seen, expected);
  else if (self->samples_seen < expected)
    GST_ELEMENT_WARNING (self, STREAM, FAILED,
        ("EOS after %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " expected "
            "samples (%u epochs of %u training + %u validation samples)%s.",
            self->samples_seen, expected, self->n_epochs, self->n_train,
            self->n_valid, self->save_path && *self->save_path ?
            "; the model was saved as trained so far" : ""), (NULL));
eos:
  self->finished = TRUE;
  if (self->negotiated)
    gst_tensor_trainer_send_src_caps (self);
  gst_pad_push_event (self->srcpad, gst_event_new_eos ());
  return GST_FLOW_OK;
}
