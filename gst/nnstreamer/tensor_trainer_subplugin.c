/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nnstreamer tensor_trainer sub-plugin "tensor-trainer": nnstreamer's own
 * element trains with this project's engine.
 *
 *   tensor_trainer framework=tensor-trainer model-config=model.ini
 *       model-save-path=model.bin [model-load-path=initial.bin]
 *       num-inputs=1 num-labels=1 num-training-samples=N
 *       num-validation-samples=M epochs=E
 *
 * The contract, as nnstreamer's element (gsttensor_trainer.c) drives it:
 * create() when the element first needs the model (the first buffer, or
 * PAUSED->PLAYING, whichever comes first, so the caps may not be known
 * yet), start() at every PAUSED->PLAYING with the notifier, push_data()
 * once per buffer from the streaming thread (the first one can come
 * before start(): a pipeline prerolls on it), getStatus() for the figures
 * it pushes downstream, destroy() when the element is finalized. After
 * each (num-training-samples + num-validation-samples) samples the element
 * blocks until it hears TRAINER_EVENT_EPOCH_COMPLETION, and at EOS until
 * it hears TRAINER_EVENT_TRAINING_COMPLETION.
 *
 * Training runs inside push_data, in the streaming thread: each epoch's
 * first num-training-samples samples train the model in batches of the
 * INI's batch_size, the next num-validation-samples are evaluated; a batch
 * left incomplete at the end of either phase runs as a smaller batch (as
 * this project's own tensor_trainer does). At the end of each epoch the
 * model is saved to model-save-path (atomically; a BIN for a .bin name, a
 * bundle otherwise, as tt_model_save does), as nntrainer saves after each
 * epoch, then the epoch's event is sent, and after the last epoch the
 * training's. A fatal error (a sample that does not fit the model, a
 * diverged batch, a save that fails) makes push_data fail and also sends
 * the training's event, so that the element's wait at EOS ends.
 *
 * The figures getStatus gives are the last completed epoch's: losses as
 * the engine computes them (mean per sample) and accuracies in percent, as
 * nntrainer's sub-plugin reports them.
 */
#define G_LOG_DOMAIN "tensor-trainer"

#include <nnstreamer_plugin_api_trainer.h>
#include <math.h>
#include <string.h>

#include "nns_tensors.h"
#include "tt_bundle.h"

#define TT_NNS_FRAMEWORK "tensor-trainer"
/* inputs and label in GstTensorsInfo's fixed part */
#define TT_NNS_MAX_INPUTS (NNS_TENSOR_MEMORY_MAX - 1)

typedef struct
{
  guint64 samples;
  guint64 correct;
  gdouble loss_sum;
} TtNnsTally;

typedef struct
{
  GMutex lock;
  tt_model *model;
  gchar *config;
  gchar *save_path;

  guint n_inputs;
  guint batch;
  gsize in_count[TT_NNS_MAX_INPUTS];
  gsize label_count;
  /* the batch being filled, every input as float32 */
  gfloat *in_batch[TT_NNS_MAX_INPUTS];
  gfloat *label_batch;
  guint fill;

  guint n_train, n_valid, n_epochs;
  guint epoch_pos;              /* samples of the current epoch so far */
  guint epochs_done;
  guint64 samples_seen;         /* over the run: for messages */
  TtNnsTally train, valid;
  /* the last completed epoch's figures, for getStatus */
  guint status_epoch;
  gdouble status_train_loss, status_train_accuracy;
  gdouble status_valid_loss, status_valid_accuracy;

  /* NULL until start(); events due before it wait there */
  GstTensorTrainerEventNotifier *notifier;
  guint pending_epoch_events;
  gboolean pending_completion;
  gboolean completion_sent;
} TtNnsTrainer;

static void
tt_nns_trainer_free (TtNnsTrainer * t)
{
  if (!t)
    return;
  tt_model_free (t->model);
  for (guint i = 0; i < TT_NNS_MAX_INPUTS; i++)
    g_free (t->in_batch[i]);
  g_free (t->label_batch);
  g_free (t->config);
  g_free (t->save_path);
  g_mutex_clear (&t->lock);
  g_free (t);
}

/* The event now, or at start() when the element has not given its
 * notifier yet (a pipeline that prerolls on the first epoch). */
static void
tt_nns_trainer_notify (TtNnsTrainer * t, GstTensorTrainerEventType type)
{
  if (type == TRAINER_EVENT_TRAINING_COMPLETION) {
    if (t->completion_sent)
      return;
    t->completion_sent = TRUE;
  }
  if (t->notifier)
    nnstreamer_trainer_notify_event (t->notifier, type, NULL);
  else if (type == TRAINER_EVENT_EPOCH_COMPLETION)
    t->pending_epoch_events++;
  else
    t->pending_completion = TRUE;
}

/* A fatal error: push_data fails, and the training's event ends the
 * element's wait at the EOS that follows. */
static int
tt_nns_trainer_fail (TtNnsTrainer * t)
{
  tt_nns_trainer_notify (t, TRAINER_EVENT_TRAINING_COMPLETION);
  return -1;
}

static int
tt_nns_trainer_create (const GstTensorTrainerFramework * self,
    const GstTensorTrainerProperties * prop, void **private_data)
{
  TtNnsTrainer *t;
  tt_open_options opts = { 0 };
  tt_open_info opened;
  tt_error err;
  const gchar *load = prop->model_load_path;
  const gchar *save = prop->model_save_path;

  (void) self;
  if (*private_data) {
    tt_nns_trainer_free (*private_data);
    *private_data = NULL;
  }
  if (!prop->model_config || !*prop->model_config) {
    g_warning (TT_NNS_FRAMEWORK ": no model-config set: tensor_trainer "
        "needs a model INI file (or a bundle).");
    return -1;
  }
  if (!save || !*save) {
    g_warning (TT_NNS_FRAMEWORK ": no model-save-path set.");
    return -1;
  }
  if (prop->num_labels != 1) {
    g_warning (TT_NNS_FRAMEWORK ": num-labels=%u: the engine trains models "
        "with one label tensor.", prop->num_labels);
    return -1;
  }
  if (prop->num_training_samples == 0) {
    g_warning (TT_NNS_FRAMEWORK ": num-training-samples is 0: set how many "
        "buffers train the model in each epoch.");
    return -1;
  }
  if (prop->num_epochs == 0) {
    g_warning (TT_NNS_FRAMEWORK ": epochs is 0.");
    return -1;
  }
  if (tt_model_check_save_path (save, &err) != TT_OK) {
    g_warning (TT_NNS_FRAMEWORK ": cannot write model-save-path: %s",
        err.message);
    return -1;
  }

  t = g_new0 (TtNnsTrainer, 1);
  g_mutex_init (&t->lock);
  opts.weights = load && *load ? load : NULL;
  t->model = tt_model_open (prop->model_config, &opts, &opened, &err);
  if (!t->model) {
    g_warning (TT_NNS_FRAMEWORK ": %s%s", opened.failed_step ==
        TT_OPEN_WEIGHTS ? "model-load-path: " : "", err.message);
    goto fail;
  }
  t->n_inputs = tt_model_num_inputs (t->model);
  if (t->n_inputs != prop->num_inputs) {
    g_warning (TT_NNS_FRAMEWORK ": num-inputs=%u but the model %s has %u "
        "input layer(s).", prop->num_inputs, prop->model_config, t->n_inputs);
    goto fail;
  }
  if (t->n_inputs > TT_NNS_MAX_INPUTS) {
    g_warning (TT_NNS_FRAMEWORK ": the model %s has %u inputs; at most %u "
        "are supported.", prop->model_config, t->n_inputs, TT_NNS_MAX_INPUTS);
    goto fail;
  }
  t->batch = tt_model_batch_size (t->model);
  for (guint i = 0; i < t->n_inputs; i++) {
    tt_shape s;
    tt_model_input_shape (t->model, i, &s);
    t->in_count[i] = (gsize) s.channel * s.height * s.width;
    t->in_batch[i] = g_malloc_n ((gsize) t->batch * t->in_count[i],
        sizeof (gfloat));
  }
  {
    tt_shape s = tt_model_label_shape (t->model);
    t->label_count = (gsize) s.channel * s.height * s.width;
    t->label_batch = g_malloc_n ((gsize) t->batch * t->label_count,
        sizeof (gfloat));
  }
  t->config = g_strdup (prop->model_config);
  t->save_path = g_strdup (save);
  t->n_train = prop->num_training_samples;
  t->n_valid = prop->num_validation_samples;
  t->n_epochs = prop->num_epochs;
  g_debug ("%s: batch %u, %u input(s), %u epoch(s) of %u training + %u "
      "validation samples, saved to %s", t->config, t->batch, t->n_inputs,
      t->n_epochs, t->n_train, t->n_valid, t->save_path);
  *private_data = t;
  return 0;

fail:
  tt_nns_trainer_free (t);
  return -1;
}

static int
tt_nns_trainer_destroy (const GstTensorTrainerFramework * self,
    const GstTensorTrainerProperties * prop, void **private_data)
{
  (void) self;
  (void) prop;
  tt_nns_trainer_free (*private_data);
  *private_data = NULL;
  return 0;
}

static int
tt_nns_trainer_start (const GstTensorTrainerFramework * self,
    const GstTensorTrainerProperties * prop,
    GstTensorTrainerEventNotifier * notifier, void *private_data)
{
  TtNnsTrainer *t = private_data;

  (void) self;
  (void) prop;
  if (!t || !notifier)
    return -1;
  g_mutex_lock (&t->lock);
  /* a pipeline played again after its training ended (and the element
   * heard so) trains anew, from the weights it has; PAUSED->PLAYING in the
   * middle goes on, and events due before the first start are sent now */
  if (t->notifier && t->completion_sent && !t->pending_completion
      && t->epochs_done >= t->n_epochs) {
    t->epochs_done = 0;
    t->epoch_pos = 0;
    t->fill = 0;
    t->completion_sent = FALSE;
    t->pending_completion = FALSE;
    t->pending_epoch_events = 0;
    memset (&t->train, 0, sizeof t->train);
    memset (&t->valid, 0, sizeof t->valid);
  }
  t->notifier = notifier;
  for (; t->pending_epoch_events > 0; t->pending_epoch_events--)
    nnstreamer_trainer_notify_event (notifier, TRAINER_EVENT_EPOCH_COMPLETION,
        NULL);
  if (t->pending_completion) {
    t->pending_completion = FALSE;
    nnstreamer_trainer_notify_event (notifier,
        TRAINER_EVENT_TRAINING_COMPLETION, NULL);
  }
  g_mutex_unlock (&t->lock);
  return 0;
}

static int
tt_nns_trainer_stop (const GstTensorTrainerFramework * self,
    const GstTensorTrainerProperties * prop, void **private_data)
{
  TtNnsTrainer *t = *private_data;

  (void) self;
  (void) prop;
  if (!t)
    return -1;
  g_mutex_lock (&t->lock);
  /* what was trained is in the last epoch's save; nothing more comes */
  t->epochs_done = t->n_epochs;
  tt_nns_trainer_notify (t, TRAINER_EVENT_TRAINING_COMPLETION);
  g_mutex_unlock (&t->lock);
  return 0;
}

/* Trains (or evaluates) the samples waiting in the batch. */
static gboolean
tt_nns_trainer_run_batch (TtNnsTrainer * t, gboolean training)
{
  const void *inputs[TT_NNS_MAX_INPUTS];
  tt_dtype types[TT_NNS_MAX_INPUTS];
  TtNnsTally *tally = training ? &t->train : &t->valid;
  const guint n = t->fill;
  tt_batch_result r;
  tt_error err;
  tt_status st;

  if (n == 0)
    return TRUE;
  for (guint i = 0; i < t->n_inputs; i++) {
    inputs[i] = t->in_batch[i];
    types[i] = TT_DTYPE_FLOAT32;
  }
  t->fill = 0;
  if (training)
    st = tt_model_train_batch (t->model, n, inputs, types, t->label_batch,
        &r, &err);
  else
    st = tt_model_eval_batch (t->model, n, inputs, types, t->label_batch,
        &r, &err);
  if (st != TT_OK) {
    g_warning (TT_NNS_FRAMEWORK ": %s%s", st == TT_ERR_NUMERIC ?
        "training diverged: " : "", err.message);
    return FALSE;
  }
  tally->samples += n;
  tally->correct += r.correct;
  tally->loss_sum += r.loss * n;
  return TRUE;
}

/* Closes an epoch: its figures, the save, the events. */
static gboolean
tt_nns_trainer_end_epoch (TtNnsTrainer * t)
{
  const TtNnsTally *tr = &t->train, *va = &t->valid;
  tt_error err;
  gchar saved_to[4096];

  tt_model_finish_epoch (t->model);
  t->epochs_done++;
  t->status_epoch = t->epochs_done;
  t->status_train_loss = tr->samples ? tr->loss_sum / tr->samples : NAN;
  t->status_train_accuracy = tr->samples ?
      100.0 * tr->correct / tr->samples : NAN;
  t->status_valid_loss = va->samples ? va->loss_sum / va->samples : NAN;
  t->status_valid_accuracy = va->samples ?
      100.0 * va->correct / va->samples : NAN;
  g_debug ("epoch %u/%u: loss %g accuracy %g%% validation loss %g accuracy "
      "%g%%", t->epochs_done, t->n_epochs, t->status_train_loss,
      t->status_train_accuracy, t->status_valid_loss, t->status_valid_accuracy);
  memset (&t->train, 0, sizeof t->train);
  memset (&t->valid, 0, sizeof t->valid);
  t->epoch_pos = 0;

  /* the destination was checked at create: a failure here is a full disk
   * or a folder removed meanwhile, and the engine keeps the model in a
   * fallback file its message names */
  if (tt_model_save_with_fallback (t->model, t->save_path, NULL, saved_to,
          sizeof saved_to, &err) != TT_OK) {
    g_warning (TT_NNS_FRAMEWORK ": could not save the model of epoch %u to "
        "model-save-path: %s", t->epochs_done, err.message);
    return FALSE;
  }
  tt_nns_trainer_notify (t, TRAINER_EVENT_EPOCH_COMPLETION);
  if (t->epochs_done >= t->n_epochs)
    tt_nns_trainer_notify (t, TRAINER_EVENT_TRAINING_COMPLETION);
  return TRUE;
}

/* The label of the sample into batch slot fill: the model's label itself
 * (any numeric type, label-shape elements) or, for a model with more than
 * one output, one element holding a class index (its one-hot vector). */
static gboolean
tt_nns_trainer_put_label (TtNnsTrainer * t, const GstTensorInfo * info,
    const GstTensorMemory * mem, gsize count)
{
  gfloat *dst = t->label_batch + t->label_count * t->fill;
  gfloat index;

  if (count == t->label_count)
    return tt_nns_to_float (mem->data, info->type, count, dst);
  if (count != 1) {
    g_warning (TT_NNS_FRAMEWORK ": sample %" G_GUINT64_FORMAT ": the label "
        "has %" G_GSIZE_FORMAT " elements; the model %s takes %"
        G_GSIZE_FORMAT " (or 1, a class index).", t->samples_seen + 1,
        count, t->config, t->label_count);
    return FALSE;
  }
  tt_nns_to_float (mem->data, info->type, 1, &index);
  if (!(index >= 0 && index < (gfloat) t->label_count
          && index == floorf (index))) {
    g_warning (TT_NNS_FRAMEWORK ": sample %" G_GUINT64_FORMAT ": label %g is "
        "no class of the model %s (0 to %" G_GSIZE_FORMAT ").",
        t->samples_seen + 1, index, t->config, t->label_count - 1);
    return FALSE;
  }
  memset (dst, 0, t->label_count * sizeof *dst);
  dst[(gsize) index] = 1.0f;
  return TRUE;
}

/* Copies the sample's tensors into batch slot fill, checking each. */
static gboolean
tt_nns_trainer_put_sample (TtNnsTrainer * t,
    const GstTensorTrainerProperties * prop, const GstTensorMemory * input)
{
  const guint ntens = t->n_inputs + 1;
  const guint64 k = t->samples_seen + 1;

  if (prop->input_meta.num_tensors != ntens) {
    g_warning (TT_NNS_FRAMEWORK ": sample %" G_GUINT64_FORMAT ": %u tensors; "
        "the model %s takes %u input(s) and a label.", k,
        prop->input_meta.num_tensors, t->config, t->n_inputs);
    return FALSE;
  }
  for (guint i = 0; i < ntens; i++) {
    const GstTensorInfo *info = &prop->input_meta.info[i];
    const gsize esize = tt_nns_element_size (info->type);
    const gsize count = tt_nns_info_count (info);
    gchar dims[64];

    if (esize == 0) {
      g_warning (TT_NNS_FRAMEWORK ": sample %" G_GUINT64_FORMAT ": tensor %u "
          "is %s, which the engine does not take (integers, float32 and "
          "float64 only).", k, i, tt_nns_type_name (info->type));
      return FALSE;
    }
    if (!input[i].data || input[i].size != count * esize) {
      g_warning (TT_NNS_FRAMEWORK ": sample %" G_GUINT64_FORMAT ": tensor %u "
          "has %" G_GSIZE_FORMAT " bytes; its caps (%s, %s) say %"
          G_GSIZE_FORMAT ".", k, i, input[i].size,
          tt_nns_dims_string (info, dims, sizeof dims),
          tt_nns_type_name (info->type), count * esize);
      return FALSE;
    }
    if (i == t->n_inputs)
      return tt_nns_trainer_put_label (t, info, &input[i], count);
    if (count != t->in_count[i]) {
      tt_shape s;
      tt_model_input_shape (t->model, i, &s);
      g_warning (TT_NNS_FRAMEWORK ": sample %" G_GUINT64_FORMAT ": input %u "
          "is %s (%" G_GSIZE_FORMAT " elements); the model %s takes %u:%u:%u "
          "(channel:height:width), %" G_GSIZE_FORMAT " elements.", k, i,
          tt_nns_dims_string (info, dims, sizeof dims), count, t->config,
          s.channel, s.height, s.width, t->in_count[i]);
      return FALSE;
    }
    tt_nns_to_float (input[i].data, info->type, count,
        t->in_batch[i] + count * t->fill);
  }
  return TRUE;
}

static int
tt_nns_trainer_push_data (const GstTensorTrainerFramework * self,
    const GstTensorTrainerProperties * prop, void *private_data,
    const GstTensorMemory * input)
{
  TtNnsTrainer *t = private_data;
  gboolean training;
  int ret = 0;

  (void) self;
  if (!t || !prop || !input)
    return -1;
  g_mutex_lock (&t->lock);
  /* after the last epoch (or stop) nothing more is trained; the element
   * drops such buffers itself once it has heard the training's event */
  if (t->epochs_done >= t->n_epochs)
    goto out;
  if (!tt_nns_trainer_put_sample (t, prop, input)) {
    ret = tt_nns_trainer_fail (t);
    goto out;
  }
  t->samples_seen++;
  t->fill++;
  t->epoch_pos++;
  training = t->epoch_pos <= t->n_train;
  /* training and validation samples never share a batch */
  if (t->fill == t->batch || t->epoch_pos == t->n_train
      || t->epoch_pos == t->n_train + t->n_valid) {
    if (!tt_nns_trainer_run_batch (t, training)) {
      ret = tt_nns_trainer_fail (t);
      goto out;
    }
  }
  if (t->epoch_pos == t->n_train + t->n_valid && !tt_nns_trainer_end_epoch (t))
    ret = tt_nns_trainer_fail (t);
out:
  g_mutex_unlock (&t->lock);
  return ret;
}

static int
tt_nns_trainer_get_status (const GstTensorTrainerFramework * self,
    GstTensorTrainerProperties * prop, void *private_data)
{
  TtNnsTrainer *t = private_data;

  (void) self;
  if (!t || !prop)
    return -1;
  g_mutex_lock (&t->lock);
  prop->epoch_count = t->status_epoch;
  prop->training_loss = t->status_train_loss;
  prop->training_accuracy = t->status_train_accuracy;
  prop->validation_loss = t->status_valid_loss;
  prop->validation_accuracy = t->status_valid_accuracy;
  g_mutex_unlock (&t->lock);
  return 0;
}

static int
tt_nns_trainer_get_framework_info (const GstTensorTrainerFramework * self,
    const GstTensorTrainerProperties * prop, void *private_data,
    GstTensorTrainerFrameworkInfo * fw_info)
{
  (void) self;
  (void) prop;
  (void) private_data;
  fw_info->name = TT_NNS_FRAMEWORK;
  return 0;
}

static GstTensorTrainerFramework tt_nns_trainer_framework = {
  .version = GST_TENSOR_TRAINER_FRAMEWORK_V1,
  .create = tt_nns_trainer_create,
  .destroy = tt_nns_trainer_destroy,
  .start = tt_nns_trainer_start,
  .stop = tt_nns_trainer_stop,
  .push_data = tt_nns_trainer_push_data,
  .getStatus = tt_nns_trainer_get_status,
  .getFrameworkInfo = tt_nns_trainer_get_framework_info,
};

/* nnstreamer opens this file by the framework's name; loading it
 * registers the sub-plugin */
static void tt_nns_trainer_register (void) __attribute__((constructor));
static void tt_nns_trainer_unregister (void) __attribute__((destructor));

static void
tt_nns_trainer_register (void)
{
  nnstreamer_trainer_probe (&tt_nns_trainer_framework);
}

static void
tt_nns_trainer_unregister (void)
{
  nnstreamer_trainer_exit (&tt_nns_trainer_framework);
}
