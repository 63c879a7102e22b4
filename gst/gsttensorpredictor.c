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
 * A model-config ending in `.onnx` is an ONNX model, converted in memory at
 * start (docs/onnx.md) with loss mse, so that nothing of the graph is
 * absorbed into a loss: the output is the ONNX graph's own (probabilities
 * when it ends in Softmax). Its initializers are the weights unless
 * #GstTtTensorPredictor:model-load-path names others (the BIN a
 * tensor_trainer saved while training the same .onnx, for instance). A
 * file the importer refuses fails the start with its message.
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
 * ## Properties
 * The model: #GstTtTensorPredictor:model-config,
 * #GstTtTensorPredictor:model-load-path, #GstTtTensorPredictor:batch-size
 * and #GstTtTensorPredictor:threads. Fresh weights:
 * #GstTtTensorPredictor:trainer, #GstTtTensorPredictor:reload and
 * #GstTtTensorPredictor:reload-interval. The output:
 * #GstTtTensorPredictor:output, #GstTtTensorPredictor:labels and
 * #GstTtTensorPredictor:post-messages. Read-only figures:
 * #GstTtTensorPredictor:samples, #GstTtTensorPredictor:accuracy,
 * #GstTtTensorPredictor:weights-version and
 * #GstTtTensorPredictor:pool-bytes.
 *
 * ## Example launch line
 * Scores the model that tensor_trainer's example saved (fmnist-mlp.bin) on
 * Fashion-MNIST's 10000 test images, run from the top of the source tree
 * with D the folder of the dataset's IDX files (e.g.
 * D=/usr/share/datasets/fashion-mnist); the tensor-predictor-summary
 * message at EOS gives its accuracy:
 * |[
 * gst-launch-1.0 -m tensor_datasrc location=$D/t10k-images-idx3-ubyte.gz \
 *     label-location=$D/t10k-labels-idx1-ubyte.gz ! \
 *   tensor_predictor model-config=tests/models/fmnist_mlp.ini \
 *     model-load-path=fmnist-mlp.bin ! fakesink
 * ]|
 */
#include "gsttensorpredictor_private.h"
#include "gstttthreads.h"

GST_DEBUG_CATEGORY (gst_tensor_predictor_debug);

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
          "Model INI, optimized INI, bundle or ONNX model (.onnx) to run "
          "(default: the trainer's)", NULL, rw));
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
