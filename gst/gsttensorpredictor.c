/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * SECTION:element-tensor_predictor
 * @title: tensor_predictor
 *
 * Runs a model trained by this project (or nntrainer) on the tensors
 * streaming through it and pushes the model's output for each buffer:
 * class probabilities for a classifier.
 *
 * The model (#GstTtTensorPredictor:model-config: an INI, an optimized INI or
 * a bundle; weights from #GstTtTensorPredictor:model-load-path, a BIN or a
 * bundle) is loaded at READY->PAUSED and compiled for inference only: no
 * gradients, derivatives or optimizer state, tensors alive only as long as
 * the forward pass needs them, so its one memory pool is a fraction of the
 * training pool (the `tensor-predictor-plan` message gives pool-bytes). An
 * optimized INI made with `tensor-trainer plan --inference` is validated
 * and used as stored; a training plan is ignored (planning an inference
 * model takes milliseconds).
 *
 * Each buffer is one sample, `other/tensors`: the model's inputs (uint8 or
 * float32, the model's shapes, as for tensor_trainer), optionally followed
 * by a label: float32 of the output's shape, or a class index (one element
 * of an integer type, float32 or float64), as for tensor_trainer. With
 * `format=flexible` each buffer describes its tensors in their headers, so
 * the input type and the presence of a label may change from one buffer to
 * the next (the samples waiting then run first). The label is not used for
 * the prediction: when present, the element counts how often the output's
 * argmax equals the label's (#GstTtTensorPredictor:accuracy) and posts it at
 * EOS, so a labelled stream (tensor_datasrc, tensor_labeler) can be
 * scored. Samples are run #GstTtTensorPredictor:batch-size at a time
 * (default 1: each buffer goes out as soon as it came in; larger batches
 * trade latency for throughput and wait for the batch to fill; EOS runs
 * what waits). Each output buffer keeps its input's timestamps.
 *
 * Output (#GstTtTensorPredictor:output): `tensors` pushes
 * `other/tensors,format=static,num_tensors=1,types=float32` with the
 * model's output dimensions in nnstreamer's current form (a model output
 * 1:1:10 is `10:1`, which nnstreamer's `tensor_decoder
 * mode=image_labeling` takes); `text` pushes `text/x-raw,format=utf8` naming
 * the argmax class (from #GstTtTensorPredictor:labels, a file with one class
 * name per line) and its probability, for textoverlay's text pad.
 *
 * Fresh weights while it runs:
 * - #GstTtTensorPredictor:trainer names a tensor_trainer of the same
 *   pipeline (two pipelines of one process may each have a trainer of that
 *   name; each predictor follows its own pipeline's): the predictor
 *   switches to each set of weights that trainer
 *   publishes (see #GstTtTensorTrainer:publish-interval), between two of its
 *   batches, never stopping the stream and never reading a half-updated
 *   set (copy-on-publish snapshots, gsttensormodelshare.h).
 * - #GstTtTensorPredictor:reload watches the weights file (model-load-path,
 *   or model-config when it is a bundle) and loads it again when it
 *   changes, as another process saving it atomically replaces it. A file
 *   that does not load (another model) keeps the old weights and posts a
 *   warning.
 * Each switch posts `tensor-predictor-weights` (version, epoch, iteration,
 * source); #GstTtTensorPredictor:weights-version says which weights are in
 * use. At EOS the element posts `tensor-predictor-summary` (samples,
 * labelled, correct, accuracy, seconds, samples-per-second, mean-latency-us:
 * engine time per batch, weights-version).
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 -m tensor_datasrc location=t10k-images-idx3-ubyte.gz \
 *     label-location=t10k-labels-idx1-ubyte.gz ! \
 *   tensor_predictor model-config=fmnist_cnn.ini \
 *     model-load-path=fmnist-cnn.bin ! fakesink
 * ]|
 */
#include "gsttensorpredictor.h"
#include "gsttensorflexsample.h"
#include "gsttensormodelshare.h"
#include "gstttthreads.h"
#include "tt_bundle.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

GST_DEBUG_CATEGORY_STATIC (gst_tensor_predictor_debug);
#define GST_CAT_DEFAULT gst_tensor_predictor_debug

#define DEFAULT_BATCH_SIZE 1
#define DEFAULT_RELOAD FALSE
#define DEFAULT_RELOAD_INTERVAL_MS 1000
#define DEFAULT_OUTPUT GST_TENSOR_PREDICTOR_OUTPUT_TENSORS
#define DEFAULT_POST_MESSAGES TRUE

enum
{
  PROP_0,
  PROP_MODEL_CONFIG,
  PROP_MODEL_LOAD_PATH,
  PROP_BATCH_SIZE,
  PROP_TRAINER,
  PROP_RELOAD,
  PROP_RELOAD_INTERVAL,
  PROP_OUTPUT,
  PROP_LABELS,
  PROP_POST_MESSAGES,
  PROP_SAMPLES,
  PROP_ACCURACY,
  PROP_WEIGHTS_VERSION,
  PROP_POOL_BYTES,
  PROP_THREADS,
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("other/tensors, format = (string) static; "
        "other/tensors, format = (string) flexible; other/tensor"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("other/tensors, format = (string) static, "
        "num_tensors = (int) 1, types = (string) float32; "
        "text/x-raw, format = (string) utf8"));

#define GST_TYPE_TENSOR_PREDICTOR_OUTPUT \
  (gst_tensor_predictor_output_get_type ())
static GType
gst_tensor_predictor_output_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_TENSOR_PREDICTOR_OUTPUT_TENSORS,
        "The model's output as other/tensors (float32)", "tensors"},
    {GST_TENSOR_PREDICTOR_OUTPUT_TEXT,
        "The argmax class and its probability as text/x-raw (utf8)", "text"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstTtTensorPredictorOutput", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

#define gst_tensor_predictor_parent_class parent_class
G_DEFINE_TYPE (GstTtTensorPredictor, gst_tensor_predictor, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (tensor_predictor, "tensor_predictor",
    GST_RANK_NONE, GST_TYPE_TENSOR_PREDICTOR,
    GST_DEBUG_CATEGORY_INIT (gst_tensor_predictor_debug, "tensor_predictor",
        0, "tensor_predictor element"));

static void gst_tensor_predictor_finalize (GObject * object);
static void gst_tensor_predictor_set_property (GObject * object,
    guint prop_id, const GValue * value, GParamSpec * pspec);
static void gst_tensor_predictor_get_property (GObject * object,
    guint prop_id, GValue * value, GParamSpec * pspec);
static GstStateChangeReturn gst_tensor_predictor_change_state (GstElement *
    element, GstStateChange transition);
static gboolean gst_tensor_predictor_sink_event (GstPad * pad,
    GstObject * parent, GstEvent * event);
static gboolean gst_tensor_predictor_src_query (GstPad * pad,
    GstObject * parent, GstQuery * query);
static GstFlowReturn gst_tensor_predictor_chain (GstPad * pad,
    GstObject * parent, GstBuffer * buf);

static void
gst_tensor_predictor_class_init (GstTtTensorPredictorClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  gobject_class->finalize = gst_tensor_predictor_finalize;
  gobject_class->set_property = gst_tensor_predictor_set_property;
  gobject_class->get_property = gst_tensor_predictor_get_property;

  /* The read-write properties except post-messages are read when the
   * element goes from READY to PAUSED: a change while PAUSED or PLAYING
   * takes effect at the next start (reload-interval is read again at each
   * check). */

  /**
   * GstTtTensorPredictor:model-config:
   *
   * The model to run: an INI file in nntrainer's dialect, an optimized
   * INI (its stored plan is validated and used when it was made for
   * inference, as `tensor-trainer plan --inference` makes it; a training
   * plan is not used and the model is planned afresh), or a bundle (with
   * its weights; told apart by the file's first bytes). It is compiled
   * for inference only at READY->PAUSED, so a missing or bad file fails
   * the state change. Unset, with #GstTtTensorPredictor:trainer set: the
   * model-config of that tensor_trainer of the same pipeline; with
   * neither, the start fails.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_CONFIG,
      g_param_spec_string ("model-config", "Model configuration",
          "Model INI, optimized INI or bundle to run (default: the trainer's)",
          NULL, rw));
  /**
   * GstTtTensorPredictor:model-load-path:
   *
   * The weights, loaded at start over those of
   * #GstTtTensorPredictor:model-config: a BIN in nntrainer's layout (the
   * optimizer state in it is skipped) or a bundle, told apart by the
   * file's first bytes. A file that does not fit the model fails the
   * start. Unset (the default): a bundle's own weights, else weights
   * initialized as the INI says, with a warning unless
   * #GstTtTensorPredictor:trainer is set (its published weights replace
   * them). It is the file #GstTtTensorPredictor:reload watches.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_LOAD_PATH,
      g_param_spec_string ("model-load-path", "Model load path",
          "Weights to run the model with: a BIN or a bundle", NULL, rw));
  /**
   * GstTtTensorPredictor:batch-size:
   *
   * Samples run through the model at once, the batch the model is
   * compiled and planned for, whatever the model file says. 1 (the
   * default) pushes each output as soon as its input came; a larger
   * batch trades latency for throughput and waits for the batch to fill.
   * The samples waiting run early at EOS, a gap, a segment-done and new
   * caps; a flush drops them without output.
   */
  g_object_class_install_property (gobject_class, PROP_BATCH_SIZE,
      g_param_spec_uint ("batch-size", "Batch size",
          "Samples run through the model at once; 1: no waiting", 1, 65536,
          DEFAULT_BATCH_SIZE, rw));
  /**
   * GstTtTensorPredictor:trainer:
   *
   * The name of a tensor_trainer element of the same pipeline (a trainer
   * of that name in another pipeline is another trainer) whose weights
   * the predictor follows: before each batch it switches to the latest
   * set the trainer published (at each epoch's end and every
   * #GstTtTensorTrainer:publish-interval training batches), never a
   * half-updated one, posting "tensor-predictor-weights". The trainer must
   * train the same model: weights of another model are an error. It also
   * lends its model-config when #GstTtTensorPredictor:model-config is
   * unset. Unset (the default): no live hand-off.
   */
  g_object_class_install_property (gobject_class, PROP_TRAINER,
      g_param_spec_string ("trainer", "Trainer",
          "Name of a tensor_trainer in this pipeline to take weights from",
          NULL, rw));
  /**
   * GstTtTensorPredictor:reload:
   *
   * Load the weights again when their file is replaced, as another
   * process saving it atomically (a trainer's checkpoint-path or
   * model-save-path) replaces it: the file is
   * #GstTtTensorPredictor:model-load-path, or model-config when that is a
   * bundle; with neither, reload=true fails the start. Before a batch
   * runs, at most every #GstTtTensorPredictor:reload-interval milliseconds,
   * the file's device, inode, size and modification time are compared
   * with those last seen. A new file that does not load (another model)
   * keeps the current weights and posts a warning; one that loads posts
   * "tensor-predictor-weights" and raises
   * #GstTtTensorPredictor:weights-version.
   */
  g_object_class_install_property (gobject_class, PROP_RELOAD,
      g_param_spec_boolean ("reload", "Reload",
          "Load the weights again when their file is replaced",
          DEFAULT_RELOAD, rw));
  /**
   * GstTtTensorPredictor:reload-interval:
   *
   * Milliseconds from one check of the weights file
   * (#GstTtTensorPredictor:reload) to the next; checks are made only when
   * a batch runs. 0 checks before every batch. Read at each check.
   */
  g_object_class_install_property (gobject_class, PROP_RELOAD_INTERVAL,
      g_param_spec_uint ("reload-interval", "Reload interval",
          "Milliseconds between two checks of the weights file (reload)",
          0, G_MAXUINT, DEFAULT_RELOAD_INTERVAL_MS, rw));
  /**
   * GstTtTensorPredictor:output:
   *
   * What goes out for each sample. tensors (the default): the model's
   * output, `other/tensors,format=static,num_tensors=1,types=float32`
   * with the output's dimensions and the input's framerate. text:
   * `text/x-raw,format=utf8` naming the argmax class and its output value
   * as a percentage, "NAME (P%)" with the name from
   * #GstTtTensorPredictor:labels, or "class N (P%)", for textoverlay's text
   * pad.
   */
  g_object_class_install_property (gobject_class, PROP_OUTPUT,
      g_param_spec_enum ("output", "Output",
          "What to push: the output tensor, or text naming the class",
          GST_TYPE_TENSOR_PREDICTOR_OUTPUT, DEFAULT_OUTPUT, rw));
  /**
   * GstTtTensorPredictor:labels:
   *
   * A text file of class names, one per line (the first line names class
   * 0; blanks around a name are dropped), for
   * #GstTtTensorPredictor:output=text.
   * A class without a name, or with an empty one, is written "class N".
   * Read at start whatever the output: a file that cannot be read fails
   * the start. Unset (the default): class numbers.
   */
  g_object_class_install_property (gobject_class, PROP_LABELS,
      g_param_spec_string ("labels", "Labels",
          "Text file of class names, one per line, for output=text", NULL, rw));
  /**
   * GstTtTensorPredictor:post-messages:
   *
   * Post element messages on the bus: "tensor-predictor-plan" at start
   * (plan-loaded, pool-bytes, lower-bound, weight-bytes, plan-ms,
   * batch-size), "tensor-predictor-weights" at each switch of weights
   * (version, epoch, iteration, source: "trainer" or "file") and
   * "tensor-predictor-summary" at EOS (samples, labelled, correct,
   * accuracy, seconds, samples-per-second, mean-latency-us: engine time
   * per batch, weights-version). Read before each message: it can change
   * while PLAYING.
   */
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post tensor-predictor-plan, -weights and -summary messages",
          DEFAULT_POST_MESSAGES, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
          | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstTtTensorPredictor:threads:
   *
   * Threads the engine's kernels run on, the streaming thread included
   * (0, the default: 1; gst/common/gstttthreads.h says why).
   * Read at start (READY->PAUSED). A batch of one sample has little to
   * split: its convolutions and products then run on one thread.
   */
  g_object_class_install_property (gobject_class, PROP_THREADS,
      g_param_spec_uint ("threads", "Threads",
          "Engine threads, the streaming thread included; 0: the default, 1",
          0, GST_TT_MAX_THREADS, 0, rw));
  /**
   * GstTtTensorPredictor:samples:
   *
   * Samples run through the model since the element last started
   * (READY->PAUSED), counted when their batch has run; it keeps its value
   * after the element stops.
   */
  g_object_class_install_property (gobject_class, PROP_SAMPLES,
      g_param_spec_uint64 ("samples", "Samples",
          "Samples predicted since start", 0, G_MAXUINT64, 0, ro));
  /**
   * GstTtTensorPredictor:accuracy:
   *
   * Of the samples that came with a label since the element last
   * started, the fraction whose output's argmax is the label's class (the
   * argmax of a one-hot label, or a class index). -1 before any labelled
   * sample has run. It keeps its value after the element stops.
   */
  g_object_class_install_property (gobject_class, PROP_ACCURACY,
      g_param_spec_double ("accuracy", "Accuracy",
          "Fraction of labelled samples predicted right; -1: none yet", -1,
          1, -1, ro));
  /**
   * GstTtTensorPredictor:weights-version:
   *
   * Which weights are in use: with #GstTtTensorPredictor:trainer, the
   * trainer's publication number of the last set taken; with
   * #GstTtTensorPredictor:reload, how many times the weights file was
   * loaded again. 0: the weights loaded at start. Reset at each start.
   */
  g_object_class_install_property (gobject_class, PROP_WEIGHTS_VERSION,
      g_param_spec_uint64 ("weights-version", "Weights version",
          "Version of the weights in use; 0: those loaded at start", 0,
          G_MAXUINT64, 0, ro));
  /**
   * GstTtTensorPredictor:pool-bytes:
   *
   * Bytes of the inference model's one memory pool, set when a start
   * (READY->PAUSED) has loaded the model; 0 until then. It keeps its
   * value after the element stops.
   */
  g_object_class_install_property (gobject_class, PROP_POOL_BYTES,
      g_param_spec_uint64 ("pool-bytes", "Pool bytes",
          "Bytes of the inference model's one memory pool; 0 before start",
          0, G_MAXUINT64, 0, ro));

  gst_element_class_set_static_metadata (element_class, "Tensor predictor",
      "Filter/Tensor",
      "Runs a trained model (nntrainer INI + BIN, or a bundle) on "
      "other/tensors and pushes its output; follows a tensor_trainer's "
      "weights live", "tensor-trainer project");
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_tensor_predictor_change_state);
}

static void
gst_tensor_predictor_init (GstTtTensorPredictor * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_tensor_predictor_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_tensor_predictor_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_tensor_predictor_src_query));
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->batch_size = DEFAULT_BATCH_SIZE;
  self->reload = DEFAULT_RELOAD;
  self->reload_interval_ms = DEFAULT_RELOAD_INTERVAL_MS;
  self->output = DEFAULT_OUTPUT;
  self->post_messages = DEFAULT_POST_MESSAGES;
}

/* ---- model life: loaded at READY->PAUSED, freed at PAUSED->READY ---- */

static gboolean
gst_tensor_predictor_posting (GstTtTensorPredictor * self)
{
  gboolean post;
  GST_OBJECT_LOCK (self);
  post = self->post_messages;
  GST_OBJECT_UNLOCK (self);
  return post;
}

static void
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
static gboolean
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
  self->model = tt_model_open (config, &open_opts, &opened, &err);
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

static GstStateChangeReturn
gst_tensor_predictor_change_state (GstElement * element,
    GstStateChange transition)
{
  GstTtTensorPredictor *self = GST_TENSOR_PREDICTOR (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED &&
      !gst_tensor_predictor_start (self))
    return GST_STATE_CHANGE_FAILURE;
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE) {
    if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
      gst_tensor_predictor_stop (self);
    return ret;
  }
  /* the pads are inactive now: no streaming thread runs */
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_tensor_predictor_stop (self);
  return ret;
}

/* ---- caps ------------------------------------------------------------ */

static GstCaps *
gst_tensor_predictor_src_caps (GstTtTensorPredictor * self, gint fps_n,
    gint fps_d)
{
  if (self->out_mode == GST_TENSOR_PREDICTOR_OUTPUT_TEXT)
    return gst_caps_new_simple ("text/x-raw", "format", G_TYPE_STRING,
        "utf8", NULL);
  GstTensorsDesc desc = { 0 };
  tt_shape s = tt_model_output_shape (self->model);
  desc.format = GST_TENSOR_FORMAT_STATIC;
  desc.num = 1;
  desc.tensors[0].rank = 4;
  desc.tensors[0].dims[0] = s.width;
  desc.tensors[0].dims[1] = s.height;
  desc.tensors[0].dims[2] = s.channel;
  desc.tensors[0].dims[3] = 1;
  desc.tensors[0].type = GST_TENSOR_TYPE_FLOAT32;
  return gst_tensors_desc_to_caps (&desc, fps_n, fps_d);
}

static gboolean
gst_tensor_predictor_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstTtTensorPredictor *self = GST_TENSOR_PREDICTOR (parent);
  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    GstCaps *filter, *caps;
    gst_query_parse_caps (query, &filter);
    caps = gst_pad_get_current_caps (pad);
    if (!caps) {
      /* the model is known from PAUSED on: its output, any framerate */
      if (self->model && self->out_mode == GST_TENSOR_PREDICTOR_OUTPUT_TEXT)
        caps = gst_tensor_predictor_src_caps (self, 0, 1);
      else if (self->model) {
        caps = gst_tensor_predictor_src_caps (self, 0, 1);
        gst_structure_remove_field (gst_caps_get_structure (caps, 0),
            "framerate");
      } else
        caps = gst_pad_get_pad_template_caps (pad);
    }
    if (filter) {
      GstCaps *both = gst_caps_intersect_full (filter, caps,
          GST_CAPS_INTERSECT_FIRST);
      gst_caps_unref (caps);
      caps = both;
    }
    gst_query_set_caps_result (query, caps);
    gst_caps_unref (caps);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}

static GstFlowReturn gst_tensor_predictor_run (GstTtTensorPredictor * self);

/* Checks caps against the model; on mismatch posts an error saying what
 * was expected and what came. */
static gboolean
gst_tensor_predictor_set_caps (GstTtTensorPredictor * self, GstCaps * caps)
{
  GstTensorsDesc desc;
  gchar *why = NULL;
  tt_dtype types[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  gsize bytes[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  gint fps_n = 0, fps_d = 1;
  GstCaps *out;
  gboolean ok;
  GstTensorLabelForm label_form;

  if (!gst_tensor_samples_read_caps (&self->spec, caps, &desc, types, bytes,
          &label_form, &why)) {
    gst_tensor_samples_refuse_caps (GST_ELEMENT (self), &self->spec, caps, why);
    return FALSE;
  }
  /* samples waiting were described by the old caps: run them first */
  if (self->fill > 0 && gst_tensor_predictor_run (self) != GST_FLOW_OK)
    return FALSE;
  self->flexible = desc.format == GST_TENSOR_FORMAT_FLEXIBLE;
  if (!self->flexible) {
    memcpy (self->in_types, types, self->n_inputs * sizeof *types);
    memcpy (self->in_bytes, bytes, self->n_inputs * sizeof *bytes);
    self->with_labels = desc.num == self->n_inputs + 1;
    if (self->with_labels) {
      self->label_desc = desc.tensors[self->n_inputs];
      self->label_form = label_form;
    }
  }

  gst_structure_get_fraction (gst_caps_get_structure (caps, 0), "framerate",
      &fps_n, &fps_d);
  out = gst_tensor_predictor_src_caps (self, fps_n, fps_d);
  ok = gst_pad_push_event (self->srcpad, gst_event_new_caps (out));
  gst_caps_unref (out);
  self->negotiated = TRUE;
  GST_INFO_OBJECT (self, "accepted caps %" GST_PTR_FORMAT, caps);
  return ok;
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
static GstFlowReturn
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
static void
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

/* ---- prediction -------------------------------------------------------- */

static GstBuffer *
gst_tensor_predictor_text (GstTtTensorPredictor * self, const gfloat * y)
{
  gsize best = 0;
  for (gsize i = 1; i < self->out_count; i++)
    best = y[i] > y[best] ? i : best;
  gchar *text = best < self->n_class_names && *self->class_names[best] ?
      g_strdup_printf ("%s (%.0f%%)", self->class_names[best],
      100.0 * y[best]) : g_strdup_printf ("class %" G_GSIZE_FORMAT
      " (%.0f%%)", best, 100.0 * y[best]);
  gsize len = strlen (text);
  return gst_buffer_new_wrapped (text, len);
}

/* Runs the samples waiting in the batch and pushes one buffer each. */
static GstFlowReturn
gst_tensor_predictor_run (GstTtTensorPredictor * self)
{
  const void *inputs[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  const guint n = self->fill;
  tt_batch_result r;
  tt_error err;
  GstFlowReturn ret = GST_FLOW_OK;

  if (n == 0)
    return GST_FLOW_OK;
  self->fill = 0;
  if (self->trainer_name &&
      (ret = gst_tensor_predictor_follow_trainer (self)) != GST_FLOW_OK)
    return ret;
  if (self->watch_path)
    gst_tensor_predictor_check_reload (self);

  for (guint i = 0; i < self->n_inputs; i++)
    inputs[i] = self->in_batch[i];
  const gint64 t0 = g_get_monotonic_time ();
  if (!self->first_us)
    self->first_us = t0;
  if (tt_model_eval_batch (self->model, n, inputs, self->in_types,
          self->with_labels ? self->label_batch : NULL, &r, &err) != TT_OK) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("%s", err.message),
        ("tt_model_eval_batch"));
    return GST_FLOW_ERROR;
  }
  self->busy_us += g_get_monotonic_time () - t0;
  self->runs++;
  GST_OBJECT_LOCK (self);
  self->samples += n;
  if (self->with_labels) {
    self->labelled += n;
    self->correct += r.correct;
  }
  GST_OBJECT_UNLOCK (self);

  const gfloat *y = tt_model_output (self->model);
  for (guint k = 0; k < n && ret == GST_FLOW_OK; k++) {
    const gfloat *yk = y + (gsize) k * self->out_count;
    GstBuffer *out = self->out_mode == GST_TENSOR_PREDICTOR_OUTPUT_TEXT ?
        gst_tensor_predictor_text (self, yk) :
        gst_buffer_new_memdup (yk, self->out_count * sizeof (gfloat));
    const GstTtTensorPredictorStamp *st = &self->stamps[k];
    GST_BUFFER_PTS (out) = st->pts;
    GST_BUFFER_DTS (out) = st->dts;
    GST_BUFFER_DURATION (out) = st->duration;
    GST_BUFFER_OFFSET (out) = st->offset;
    GST_BUFFER_OFFSET_END (out) = st->offset_end;
    GST_BUFFER_FLAGS (out) = st->flags;
    ret = gst_pad_push (self->srcpad, out);
  }
  return ret;
}

/* Keeps the timestamps of the sample just copied into the batch. */
static void
gst_tensor_predictor_stamp (GstTtTensorPredictor * self, GstBuffer * buf)
{
  GstTtTensorPredictorStamp *st = &self->stamps[self->fill];
  st->pts = GST_BUFFER_PTS (buf);
  st->dts = GST_BUFFER_DTS (buf);
  st->duration = GST_BUFFER_DURATION (buf);
  st->offset = GST_BUFFER_OFFSET (buf);
  st->offset_end = GST_BUFFER_OFFSET_END (buf);
  st->flags = GST_BUFFER_FLAGS (buf) & (GST_BUFFER_FLAG_DISCONT |
      GST_BUFFER_FLAG_DELTA_UNIT);
  self->fill++;
}

/* The label at offset of buf into batch slot fill. */
static GstFlowReturn
gst_tensor_predictor_put_label (GstTtTensorPredictor * self, GstBuffer * buf,
    gsize offset, const GstTensorDesc * desc, GstTensorLabelForm form)
{
  return gst_tensor_samples_put_label (GST_ELEMENT (self), buf, offset, desc,
      form, self->label_batch + self->out_count * self->fill, self->out_count,
      self->samples + self->fill);
}

/* Copies one sample of flexible tensors into the batch; a sample whose
 * input types or label differ from the samples waiting runs those first. */
static GstFlowReturn
gst_tensor_predictor_take_flexible (GstTtTensorPredictor * self,
    GstBuffer * buf)
{
  GstTensorFlexSample sample;
  tt_dtype types[GST_TENSOR_PREDICTOR_MAX_INPUTS];
  GstFlowReturn ret;

  if (!gst_tensor_samples_read_flexible (GST_ELEMENT (self), &self->spec, buf,
          &sample, self->samples + self->fill))
    return GST_FLOW_ERROR;
  const gboolean labelled = sample.num == self->n_inputs + 1;
  for (guint i = 0; i < self->n_inputs; i++)
    types[i] = gst_tensor_samples_input_type (&sample.tensors[i]);
  if (self->fill > 0 && (labelled != self->with_labels ||
          memcmp (types, self->in_types, self->n_inputs * sizeof *types))
      && (ret = gst_tensor_predictor_run (self)) != GST_FLOW_OK)
    return ret;
  memcpy (self->in_types, types, self->n_inputs * sizeof *types);
  self->with_labels = labelled;
  for (guint i = 0; i < self->n_inputs; i++) {
    self->in_bytes[i] = gst_tensor_desc_bytes (&sample.tensors[i]);
    gst_buffer_extract (buf, sample.offsets[i], self->in_batch[i] +
        self->in_bytes[i] * self->fill, self->in_bytes[i]);
  }
  if (labelled) {
    if ((ret = gst_tensor_predictor_put_label (self, buf,
                sample.offsets[self->n_inputs], &sample.tensors[self->n_inputs],
                self->spec.flex_label_form)) != GST_FLOW_OK)
      return ret;
  }
  gst_tensor_predictor_stamp (self, buf);
  return GST_FLOW_OK;
}

/* Copies one sample into the batch; an error posted on a wrong size. */
static GstFlowReturn
gst_tensor_predictor_take (GstTtTensorPredictor * self, GstBuffer * buf)
{
  gsize bytes[GST_TENSOR_MAX_TENSORS], offset;

  memcpy (bytes, self->in_bytes, self->n_inputs * sizeof *bytes);
  bytes[self->n_inputs] = self->label_form == GST_TENSOR_LABEL_INDEX ?
      gst_tensor_desc_bytes (&self->label_desc) :
      self->out_count * sizeof (gfloat);
  if (!gst_tensor_samples_check_sizes (GST_ELEMENT (self), buf,
          self->n_inputs + (self->with_labels ? 1 : 0), self->n_inputs, bytes,
          self->samples + self->fill))
    return GST_FLOW_ERROR;
  offset = gst_tensor_samples_copy_inputs (buf, self->n_inputs,
      self->in_bytes, self->in_batch, self->fill);
  if (self->with_labels) {
    GstFlowReturn ret = gst_tensor_predictor_put_label (self, buf, offset,
        &self->label_desc, self->label_form);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  gst_tensor_predictor_stamp (self, buf);
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_tensor_predictor_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstTtTensorPredictor *self = GST_TENSOR_PREDICTOR (parent);
  GstFlowReturn ret = GST_FLOW_OK;
  (void) pad;

  if (!self->negotiated) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Buffer before caps: tensor_predictor needs other/tensors caps "
            "first."), (NULL));
    ret = GST_FLOW_NOT_NEGOTIATED;
  } else {
    ret = self->flexible ? gst_tensor_predictor_take_flexible (self, buf) :
        gst_tensor_predictor_take (self, buf);
    if (ret == GST_FLOW_OK && self->fill == self->batch)
      ret = gst_tensor_predictor_run (self);
  }
  gst_buffer_unref (buf);
  return ret;
}

static void
gst_tensor_predictor_post_summary (GstTtTensorPredictor * self)
{
  guint64 samples, labelled, correct;
  GST_OBJECT_LOCK (self);
  samples = self->samples;
  labelled = self->labelled;
  correct = self->correct;
  GST_OBJECT_UNLOCK (self);
  const gdouble seconds = self->first_us ?
      (g_get_monotonic_time () - self->first_us) / 1e6 : 0;
  const gdouble accuracy = labelled ? (gdouble) correct / labelled : NAN;
  GST_INFO_OBJECT (self, "%" G_GUINT64_FORMAT " samples, accuracy %g, "
      "%.1f us per batch in the engine", samples, accuracy,
      self->runs ? (gdouble) self->busy_us / self->runs : 0.0);
  if (!gst_tensor_predictor_posting (self))
    return;
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("tensor-predictor-summary",
              "samples", G_TYPE_UINT64, samples,
              "labelled", G_TYPE_UINT64, labelled,
              "correct", G_TYPE_UINT64, correct,
              "accuracy", G_TYPE_DOUBLE, accuracy,
              "seconds", G_TYPE_DOUBLE, seconds,
              "samples-per-second", G_TYPE_DOUBLE,
              seconds > 0 ? samples / seconds : 0.0,
              "mean-latency-us", G_TYPE_DOUBLE,
              self->runs ? (gdouble) self->busy_us / self->runs : 0.0,
              "weights-version", G_TYPE_UINT64, self->trainer_name ?
              self->have_version : self->reloads, NULL)));
}

static gboolean
gst_tensor_predictor_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstTtTensorPredictor *self = GST_TENSOR_PREDICTOR (parent);

  GST_LOG_OBJECT (self, "event %" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gboolean ok;
      gst_event_parse_caps (event, &caps);
      ok = gst_tensor_predictor_set_caps (self, caps);
      gst_event_unref (event);
      return ok;
    }
    case GST_EVENT_FLUSH_STOP:
      self->fill = 0;           /* flushed samples get no output */
      return gst_pad_event_default (pad, parent, event);
    case GST_EVENT_EOS:
      if (gst_tensor_predictor_run (self) == GST_FLOW_ERROR) {
        gst_event_unref (event);
        return FALSE;
      }
      gst_tensor_predictor_post_summary (self);
      return gst_pad_event_default (pad, parent, event);
    case GST_EVENT_GAP:
    case GST_EVENT_SEGMENT_DONE:
      /* serialized: what waits goes out before them */
      if (gst_tensor_predictor_run (self) == GST_FLOW_ERROR) {
        gst_event_unref (event);
        return FALSE;
      }
      return gst_pad_event_default (pad, parent, event);
    default:
      return gst_pad_event_default (pad, parent, event);
  }
}

/* ---- properties ------------------------------------------------------ */

static void
gst_tensor_predictor_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstTtTensorPredictor *self = GST_TENSOR_PREDICTOR (object);
  gchar **str = NULL;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL_CONFIG:
      str = &self->model_config;
      break;
    case PROP_MODEL_LOAD_PATH:
      str = &self->model_load_path;
      break;
    case PROP_TRAINER:
      str = &self->trainer;
      break;
    case PROP_LABELS:
      str = &self->labels_path;
      break;
    case PROP_BATCH_SIZE:
      self->batch_size = g_value_get_uint (value);
      break;
    case PROP_RELOAD:
      self->reload = g_value_get_boolean (value);
      break;
    case PROP_RELOAD_INTERVAL:
      self->reload_interval_ms = g_value_get_uint (value);
      break;
    case PROP_OUTPUT:
      self->output = g_value_get_enum (value);
      break;
    case PROP_POST_MESSAGES:
      self->post_messages = g_value_get_boolean (value);
      break;
    case PROP_THREADS:
      self->threads = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  if (str) {
    g_free (*str);
    *str = g_value_dup_string (value);
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_tensor_predictor_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstTtTensorPredictor *self = GST_TENSOR_PREDICTOR (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL_CONFIG:
      g_value_set_string (value, self->model_config);
      break;
    case PROP_MODEL_LOAD_PATH:
      g_value_set_string (value, self->model_load_path);
      break;
    case PROP_TRAINER:
      g_value_set_string (value, self->trainer);
      break;
    case PROP_LABELS:
      g_value_set_string (value, self->labels_path);
      break;
    case PROP_BATCH_SIZE:
      g_value_set_uint (value, self->batch_size);
      break;
    case PROP_RELOAD:
      g_value_set_boolean (value, self->reload);
      break;
    case PROP_RELOAD_INTERVAL:
      g_value_set_uint (value, self->reload_interval_ms);
      break;
    case PROP_OUTPUT:
      g_value_set_enum (value, self->output);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, self->post_messages);
      break;
    case PROP_SAMPLES:
      g_value_set_uint64 (value, self->samples);
      break;
    case PROP_ACCURACY:
      g_value_set_double (value, self->labelled ?
          (gdouble) self->correct / self->labelled : -1.0);
      break;
    case PROP_WEIGHTS_VERSION:
      g_value_set_uint64 (value, self->weights_version);
      break;
    case PROP_POOL_BYTES:
      g_value_set_uint64 (value, self->pool_bytes);
      break;
    case PROP_THREADS:
      g_value_set_uint (value, self->threads);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_tensor_predictor_finalize (GObject * object)
{
  GstTtTensorPredictor *self = GST_TENSOR_PREDICTOR (object);
  gst_tensor_predictor_stop (self);
  g_free (self->model_config);
  g_free (self->model_load_path);
  g_free (self->trainer);
  g_free (self->labels_path);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}
