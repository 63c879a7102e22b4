/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * SECTION:element-tensor_trainer
 * @title: tensor_trainer
 *
 * Trains a neural network on the tensors streaming through it. The model
 * is an nntrainer INI file (#GstTtTensorTrainer:model-config) trained by this
 * project's engine; nnstreamer's tensor_trainer properties keep their names
 * and meaning, and its launch lines (framework=nntrainer) run unchanged.
 *
 * Each buffer is one sample: the model's inputs followed by its label, one
 * GstMemory per tensor (a single memory holding the tensors back to back is
 * accepted too). The sink takes `other/tensors` with format=static, whose
 * caps must list the model's input and label shapes (anything else is
 * refused with a message saying what the model expects and what came), or
 * format=flexible, whose tensors each carry nnstreamer's 128-byte header
 * (magic 0xfeedcced, version, type, dimensions, format, media type),
 * checked on every buffer against the model. The legacy single-tensor
 * `other/tensor` links but is refused with that message: it cannot carry a
 * label (put one next to it with tensor_mux). Inputs may be uint8 or
 * float32. A label is float32 of the model's label shape (e.g. one-hot),
 * or a class index: one element of any integer type, float32 or float64
 * (tensor_datasrc's label-format=index), taken as the one-hot vector of
 * that class; an index that is no class of the model is an error. Per
 * epoch, the first #GstTtTensorTrainer:num-training-samples buffers train
 * the model in batches of the INI's batch_size, the next
 * #GstTtTensorTrainer:num-validation-samples are evaluated. A batch left
 * incomplete at the end of either phase is trained (or evaluated) as a
 * smaller batch: no sample is dropped, and training and validation samples
 * never share a batch.
 *
 * After each epoch the element pushes one buffer on its src pad,
 * `other/tensors,format=static,num_tensors=1,dimensions=1:1:4:1,types=float64`,
 * holding the training loss, training accuracy, validation loss and
 * validation accuracy (accuracy as a fraction; NaN for a figure that does not
 * exist, such as validation figures without validation samples). Its PTS is
 * the epoch's index (0-based) times one second, its duration one second and
 * its offset the epoch index: the stream carries one "frame" per epoch.
 * It also posts an element message `tensor-trainer-epoch` (see
 * #GstTtTensorTrainer:post-messages), every #GstTtTensorTrainer:progress-interval
 * batches a `tensor-trainer-progress` message, and saves
 * #GstTtTensorTrainer:checkpoint-path. When the INI's [Model] has
 * nntrainer's save_best_path, each epoch with validation samples ends by
 * saving the weights there (a BIN, as nntrainer writes it) if its
 * validation accuracy is the best so far, or equal to the best with a
 * lower loss; without validation samples it is never written (a warning
 * says so at start). Its folder is checked at start, as
 * #GstTtTensorTrainer:model-save-path's; a save that fails all the same is
 * a warning, and training goes on.
 *
 * The model is loaded at READY->PAUSED: its files (model-config,
 * model-load-path) are read, the model is planned (or its stored plan
 * validated) and the destinations (model-save-path, checkpoint-path) are
 * checked for writing, so a bad or missing file, or a folder that cannot
 * be written, fails the state change with one error instead of costing a
 * training run. Only a file that an element upstream writes when the caps
 * come is read then, once: #GstTtTensorPlanner writes its optimized INI before
 * it forwards the caps (and answers a query saying so), and a
 * tensor_trainer whose #GstTtTensorTrainer:model-config is that file then
 * loads the stored plan (validated, not planned again). A plain INI is
 * planned for the model's shapes, which the caps must match; the log (INFO)
 * says how long planning (or validating a stored plan) took, and a
 * one-time element message `tensor-trainer-plan` carries the figures:
 * model, plan-loaded (TRUE when the plan came from the INI), pool-bytes,
 * lower-bound, naive-bytes, depth-first-bytes, tensors, in-place-layers,
 * order-exact, plan-ms, batch-size. Each epoch message repeats
 * plan-loaded, pool-bytes, lower-bound, naive-bytes and plan-ms. Caps that
 * do not fit the model are refused with an error, posted once however
 * often they are sent again.
 *
 * After the last epoch, or at EOS, it trains the pending batch, saves
 * #GstTtTensorTrainer:model-save-path (atomically: write, fsync, rename) and
 * only then sends EOS downstream, so an application that sees EOS on the bus
 * finds the model on disk. When that save fails all the same (a full disk,
 * a folder removed meanwhile), the engine saves the model in a fallback
 * file (NAME.rescued-DATE-TIME-PID.EXT beside it, else in $TMPDIR or
 * /tmp) and the error says where. A checkpoint that cannot be written is a
 * warning: training goes on. An EOS before the planned number of samples
 * closes the partial epoch (its figures are pushed and posted with
 * complete=false), saves what was trained and posts a warning saying how
 * many samples were seen of how many expected; an EOS before any sample
 * saves nothing, so that an untrained model never replaces a saved one.
 * Buffers after the last epoch are dropped (GST_FLOW_OK, as nnstreamer's
 * tensor_trainer does): refusing them with GST_FLOW_EOS would stop the
 * source for every branch of a tee, e.g. the live predictions next to the
 * training.
 *
 * A #GstTtTensorPredictor in the same pipeline whose trainer property names
 * this element follows its training live: the trainer publishes a copy of
 * its weights at the end of each epoch and, with
 * #GstTtTensorTrainer:publish-interval, every that many training batches,
 * always between two batches (never half-updated weights); nothing is
 * copied while no predictor listens (gsttensormodelshare.h).
 *
 * Pausing the pipeline pauses the training: while the element is PAUSED
 * with PAUSED as its target state, an arriving buffer waits (as a sink
 * would) until PLAYING, a flush or READY. PLAYING to PAUSED and back keeps
 * all progress; going down to READY frees the model and its memory pool.
 * So that the pipeline can preroll before the first epoch ends, the src pad
 * sends a GAP event as soon as caps are accepted.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 -m tensor_datasrc location=train-images-idx3-ubyte.gz \
 *     label-location=train-labels-idx1-ubyte.gz epochs=5 ! \
 *   tensor_trainer model-config=fmnist_mlp.ini num-training-samples=60000 \
 *     epochs=5 model-save-path=model.bin ! fakesink
 * ]|
 */
#include "gsttensortrainer.h"
#include "gsttensorflexsample.h"
#include "gsttensormodelshare.h"
#include "gstttthreads.h"
#include "tt_bundle.h"

#include <math.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_tensor_trainer_debug);
#define GST_CAT_DEFAULT gst_tensor_trainer_debug

#define GST_TENSOR_TRAINER_FRAMEWORK "tensor-trainer"
/* nnstreamer's launch lines name nntrainer, whose INI dialect and BIN
 * layout this engine reads and writes: they run unchanged */
#define GST_TENSOR_TRAINER_FRAMEWORK_ALIAS "nntrainer"

#define DEFAULT_FRAMEWORK GST_TENSOR_TRAINER_FRAMEWORK
#define DEFAULT_MODEL_CONFIG NULL
#define DEFAULT_MODEL_LOAD_PATH NULL
#define DEFAULT_MODEL_SAVE_PATH NULL
#define DEFAULT_CHECKPOINT_PATH NULL
#define DEFAULT_NUM_INPUTS 1
#define DEFAULT_NUM_LABELS 1
#define DEFAULT_NUM_TRAINING_SAMPLES 0
#define DEFAULT_NUM_VALIDATION_SAMPLES 0
#define DEFAULT_EPOCHS 0
#define DEFAULT_POST_MESSAGES TRUE
#define DEFAULT_PROGRESS_INTERVAL 0
#define DEFAULT_PUBLISH_INTERVAL 0
#define DEFAULT_SKIP_BAD_BATCHES FALSE

enum
{
  PROP_0,
  PROP_FRAMEWORK,
  PROP_MODEL_CONFIG,
  PROP_MODEL_LOAD_PATH,
  PROP_MODEL_SAVE_PATH,
  PROP_CHECKPOINT_PATH,
  PROP_NUM_INPUTS,
  PROP_NUM_LABELS,
  PROP_NUM_TRAINING_SAMPLES,
  PROP_NUM_VALIDATION_SAMPLES,
  PROP_EPOCHS,
  PROP_POST_MESSAGES,
  PROP_PROGRESS_INTERVAL,
  PROP_PUBLISH_INTERVAL,
  PROP_SKIP_BAD_BATCHES,
  PROP_MEMORY_LIMIT,
  PROP_THREADS,
  PROP_FEDERATION_FIRST,        /* gsttensorfederation.c's properties */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("other/tensors, format = (string) static, "
        "num_tensors = (int) [ 2, 16 ]; "
        "other/tensors, format = (string) flexible; other/tensor"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("other/tensors, format = (string) static, "
        "num_tensors = (int) 1, dimensions = (string) 1:1:4:1, "
        "types = (string) float64, framerate = (fraction) 0/1"));

#define gst_tensor_trainer_parent_class parent_class
G_DEFINE_TYPE (GstTtTensorTrainer, gst_tensor_trainer, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (tensor_trainer, "tensor_trainer",
    GST_RANK_NONE, GST_TYPE_TENSOR_TRAINER,
    GST_DEBUG_CATEGORY_INIT (gst_tensor_trainer_debug, "tensor_trainer", 0,
        "tensor_trainer element"));

static void gst_tensor_trainer_finalize (GObject * object);
static void gst_tensor_trainer_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_tensor_trainer_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstStateChangeReturn gst_tensor_trainer_change_state (GstElement *
    element, GstStateChange transition);
static gboolean gst_tensor_trainer_sink_event (GstPad * pad,
    GstObject * parent, GstEvent * event);
static GstFlowReturn gst_tensor_trainer_chain (GstPad * pad,
    GstObject * parent, GstBuffer * buf);
static GstFlowReturn gst_tensor_trainer_chain_list (GstPad * pad,
    GstObject * parent, GstBufferList * list);
static GstFlowReturn gst_tensor_trainer_sample (GstTtTensorTrainer * self,
    GstBuffer * buf);
static gboolean gst_tensor_trainer_load_model (GstTtTensorTrainer * self);
static void gst_tensor_trainer_post_plan (GstTtTensorTrainer * self);
static gchar *gst_tensor_trainer_checkpoint_name (const gchar * pattern,
    guint epoch);

static void
gst_tensor_trainer_class_init (GstTtTensorTrainerClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->finalize = gst_tensor_trainer_finalize;
  gobject_class->set_property = gst_tensor_trainer_set_property;
  gobject_class->get_property = gst_tensor_trainer_get_property;

  /* The paths, counts and framework are read when the element goes from
   * READY to PAUSED: a change while PAUSED or PLAYING takes effect at the
   * next start. post-messages, skip-bad-batches, progress-interval and
   * publish-interval are read each time they are used and can change while
   * PLAYING. */

  /**
   * GstTtTensorTrainer:framework:
   *
   * The training framework, a property kept from nnstreamer's
   * tensor_trainer. "tensor-trainer" (the default) is this project's
   * engine; "nntrainer", what nnstreamer's launch lines say, selects the
   * same engine, which reads and writes nntrainer's INI and BIN files, so
   * those lines run unchanged. Any other name, or none (NULL), fails the
   * start (READY->PAUSED) with an error.
   *
   * With "nntrainer" the properties also follow nnstreamer's
   * tensor_trainer where its rules differ from this element's:
   * #GstTtTensorTrainer:model-save-path is required, an unset
   * #GstTtTensorTrainer:epochs means 1 epoch (and reads as 1) instead of
   * the INI's, and epochs=0 is refused. nnstreamer checks its properties
   * at PAUSED->PLAYING (and at the first buffer); this element checks
   * them at READY->PAUSED, with the model's files, so whatever nnstreamer
   * refuses fails before PLAYING here too.
   */
  g_object_class_install_property (gobject_class, PROP_FRAMEWORK,
      g_param_spec_string ("framework", "Framework",
          "Training framework: \"" GST_TENSOR_TRAINER_FRAMEWORK "\" or its "
          "alias \"" GST_TENSOR_TRAINER_FRAMEWORK_ALIAS "\"",
          DEFAULT_FRAMEWORK, rw));
  /**
   * GstTtTensorTrainer:model-config:
   *
   * The model to train: an INI file in nntrainer's dialect (batch_size,
   * epochs, loss, optimizer and one section per layer), an
   * optimized INI (the model with its stored plan, as #GstTtTensorPlanner or
   * `tensor-trainer plan` write it: the plan is validated and used, not
   * made again; a plan stored for inference is not used), or a bundle
   * (INI, plan and weights in one file, told apart by its first bytes).
   * Required: without it the start fails. The file is read, compiled and
   * planned at READY->PAUSED, so a missing or bad file fails the state
   * change; only when a #GstTtTensorPlanner upstream answers that it writes
   * this file (or #GstTtTensorTrainer:model-load-path) is the model loaded
   * when the first caps come. The caps must carry the model's inputs and
   * label; its batch_size is the training batch.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_CONFIG,
      g_param_spec_string ("model-config", "Model configuration",
          "Model INI, optimized INI or bundle to train (required)",
          DEFAULT_MODEL_CONFIG, rw));
  /**
   * GstTtTensorTrainer:model-load-path:
   *
   * Weights to start training from, loaded into the model compiled from
   * #GstTtTensorTrainer:model-config: a BIN in nntrainer's layout (the
   * weights, and the optimizer's moments and the counters when it has
   * them) or a bundle (told apart by the file's first bytes); its weights
   * replace a bundle model-config's own. Unset (the default): the bundle's
   * weights, or weights initialized as the INI says. Loaded with the
   * model, so a file that does not fit the model fails the start.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_LOAD_PATH,
      g_param_spec_string ("model-load-path", "Model load path",
          "Weights to start training from: a BIN or a bundle",
          DEFAULT_MODEL_LOAD_PATH, rw));
  /**
   * GstTtTensorTrainer:model-save-path:
   *
   * Where the trained model is written after the last epoch, or at an
   * earlier EOS, before EOS goes downstream: a bundle (INI, plan, weights,
   * optimizer state and counters in one file), or nntrainer's BIN when the
   * path ends in .bin (any case). The write is atomic (temporary file,
   * fsync, rename). The path is checked at start: a name ending in .ini,
   * a folder, or a folder that does not exist or where no file can be
   * made fails the start.
   * Should the save fail all the same, the model goes to a fallback file
   * that the error names. An EOS before any sample writes nothing, so an
   * untrained model never replaces a saved one. Unset (the default): the
   * model is not saved, except with framework=nntrainer, where, as in
   * nnstreamer, it is required and its absence fails the start.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_SAVE_PATH,
      g_param_spec_string ("model-save-path", "Model save path",
          "Where the trained model is saved: a bundle, or a BIN (.bin)",
          DEFAULT_MODEL_SAVE_PATH, rw));
  /**
   * GstTtTensorTrainer:checkpoint-path:
   *
   * Where the model is written after each complete epoch (not after an
   * epoch cut short by EOS), atomically, in the form
   * #GstTtTensorTrainer:model-save-path would take (a bundle, or a BIN for
   * .bin). Every "%u" in it is replaced by the epoch number (1-based);
   * without one, each checkpoint replaces the last. Checked at start
   * (the name of epoch 1) as model-save-path is. A checkpoint that cannot
   * be written posts a warning and training goes on. Unset (the default):
   * no checkpoints.
   */
  g_object_class_install_property (gobject_class, PROP_CHECKPOINT_PATH,
      g_param_spec_string ("checkpoint-path", "Checkpoint path",
          "Model saved after each epoch (\"%u\": the epoch number)",
          DEFAULT_CHECKPOINT_PATH, rw));
  /**
   * GstTtTensorTrainer:num-inputs:
   *
   * Input tensors at the start of each buffer, the model's input layers
   * in order; the label follows them. It must equal the model's number of
   * inputs, or loading the model fails (at start, or at the first caps
   * when the model is written upstream). The range accepted when set is
   * nnstreamer's, 0 to 256; at start, 0 and more than 15 (the inputs
   * that fit in a buffer beside the label) fail with an error.
   */
  g_object_class_install_property (gobject_class, PROP_NUM_INPUTS,
      g_param_spec_uint ("num-inputs", "Number of inputs",
          "Input tensors per buffer, before the label: the model's inputs "
          "(1 to 15; checked at start)", 0,
          GST_TENSOR_TRAINER_NNS_TENSOR_LIMIT, DEFAULT_NUM_INPUTS, rw));
  /**
   * GstTtTensorTrainer:num-labels:
   *
   * Label tensors per buffer, after the inputs. The engine trains models
   * with one loss and one label, so any value but 1 (the default) fails
   * the start; the property is kept for nnstreamer's launch lines, with
   * nnstreamer's range (0 to 256) when set.
   */
  g_object_class_install_property (gobject_class, PROP_NUM_LABELS,
      g_param_spec_uint ("num-labels", "Number of labels",
          "Label tensors per buffer, after the inputs (must be 1; checked at "
          "start)", 0, GST_TENSOR_TRAINER_NNS_TENSOR_LIMIT,
          DEFAULT_NUM_LABELS, rw));
  /**
   * GstTtTensorTrainer:num-training-samples:
   *
   * Buffers at the start of each epoch that train the model, in batches
   * of the model's batch_size; a last batch left short runs as a smaller
   * batch. Required: 0 (the default) fails the start. Match it with the
   * source's training range (tensor_datasrc's num-samples).
   */
  g_object_class_install_property (gobject_class, PROP_NUM_TRAINING_SAMPLES,
      g_param_spec_uint ("num-training-samples", "Training samples",
          "Buffers that train the model in each epoch (required)", 0,
          G_MAXINT, DEFAULT_NUM_TRAINING_SAMPLES, rw));
  /**
   * GstTtTensorTrainer:num-validation-samples:
   *
   * Buffers after the training ones in each epoch that are evaluated, not
   * trained on; they never share a batch with training samples. 0 (the
   * default): no validation, and the epoch's validation loss and accuracy
   * are NaN. Match it with tensor_datasrc's validation-num-samples.
   */
  g_object_class_install_property (gobject_class,
      PROP_NUM_VALIDATION_SAMPLES,
      g_param_spec_uint ("num-validation-samples", "Validation samples",
          "Buffers evaluated after the training ones in each epoch", 0,
          G_MAXINT, DEFAULT_NUM_VALIDATION_SAMPLES, rw));
  /**
   * GstTtTensorTrainer:epochs:
   *
   * Epochs to train, each #GstTtTensorTrainer:num-training-samples then
   * #GstTtTensorTrainer:num-validation-samples buffers. 0 (the default)
   * takes the INI's [Model] epochs, and 1 when the INI has none. With
   * framework=nntrainer the default is nnstreamer's: left unset, it is 1
   * (and reads as 1), and 0 fails the start. After the
   * last epoch the model is saved and EOS is sent; later buffers are
   * dropped, so that other branches of a tee upstream go on.
   */
  g_object_class_install_property (gobject_class, PROP_EPOCHS,
      g_param_spec_uint ("epochs", "Epochs",
          "Epochs to train; 0: the INI's [Model] epochs (framework=nntrainer: "
          "unset is 1, 0 is refused)", 0, G_MAXINT, DEFAULT_EPOCHS, rw));
  /**
   * GstTtTensorTrainer:post-messages:
   *
   * Post element messages on the bus: "tensor-trainer-epoch" after each
   * epoch (epoch, epochs, samples, validation-samples, skipped-samples,
   * loss, accuracy, validation-loss, validation-accuracy,
   * samples-per-second: training samples per second of the training
   * phase, seconds: the whole epoch, complete: false for an epoch cut
   * short by EOS, best-saved: true when this epoch wrote the INI's
   * [Model] save_best_path, and the plan's plan-loaded, pool-bytes,
   * lower-bound, naive-bytes and plan-ms); "tensor-trainer-plan" once, when the model
   * is loaded (model, plan-loaded, pool-bytes, lower-bound, naive-bytes,
   * depth-first-bytes, tensors, in-place-layers, order-exact, plan-ms,
   * batch-size); and the messages of #GstTtTensorTrainer:progress-interval.
   * Read before each message: it can change while PLAYING (the plan
   * message, once passed by, is not posted later).
   */
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post tensor-trainer-epoch, -plan and -progress messages",
          DEFAULT_POST_MESSAGES, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstTtTensorTrainer:skip-bad-batches:
   *
   * What to do with a batch the engine refuses as not finite: one whose
   * float32 inputs hold NaN or Inf (training or validation), or a
   * training batch whose loss is NaN or infinite. The engine never
   * applies such a batch. false (the default): stop with an error. true:
   * post a warning, drop the batch and go on; its samples are counted in
   * the epoch message's skipped-samples and left out of its figures. Read
   * when such a batch comes: it can change while PLAYING.
   */
  g_object_class_install_property (gobject_class, PROP_SKIP_BAD_BATCHES,
      g_param_spec_boolean ("skip-bad-batches", "Skip bad batches",
          "Drop a batch with NaN or Inf (warning) instead of an error",
          DEFAULT_SKIP_BAD_BATCHES, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstTtTensorTrainer:progress-interval:
   *
   * Post a "tensor-trainer-progress" element message every this many
   * batches of an epoch (training and validation batches counted
   * together from the epoch's start): epoch, epochs, phase ("training"
   * or "validation"), batch, samples and total of the phase, loss and
   * accuracy of the phase so far, samples-per-second. 0 (the default):
   * none. Needs #GstTtTensorTrainer:post-messages. Read after each batch:
   * it can change while PLAYING.
   */
  g_object_class_install_property (gobject_class, PROP_PROGRESS_INTERVAL,
      g_param_spec_uint ("progress-interval", "Progress interval",
          "Post tensor-trainer-progress every this many batches; 0: never",
          0, G_MAXUINT, DEFAULT_PROGRESS_INTERVAL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstTtTensorTrainer:publish-interval:
   *
   * For the #GstTtTensorPredictor elements whose trainer property names
   * this element: besides the end of each epoch, publish a copy of the
   * weights every this many training batches (counted since the start,
   * across epochs), always between two batches. 0 (the default): at the
   * end of each epoch only. Nothing is copied while no predictor listens.
   * Read after each training batch: it can change while PLAYING.
   */
  g_object_class_install_property (gobject_class, PROP_PUBLISH_INTERVAL,
      g_param_spec_uint ("publish-interval", "Publish interval",
          "Publish weights to predictors every this many batches; 0: epoch "
          "ends", 0, G_MAXUINT,
          DEFAULT_PUBLISH_INTERVAL, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstTtTensorTrainer:memory-limit:
   *
   * The most bytes the model's memory pool may take (0, the default: no
   * limit). Over it, the plan drops activations after forward and
   * rebuilds them during backward (recomputation, or the INI's [Model]
   * memory_swap file); training is bit-identical. A limit no schedule
   * meets is an error naming the smallest feasible one. INI models only;
   * read when the model is loaded.
   */
  g_object_class_install_property (gobject_class, PROP_MEMORY_LIMIT,
      g_param_spec_uint64 ("memory-limit", "Memory limit",
          "Most bytes of the memory pool: activations are recomputed (or "
          "swapped, with [Model] memory_swap) during backward to fit; 0: no "
          "limit", 0, G_MAXUINT64, 0,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  /**
   * GstTtTensorTrainer:threads:
   *
   * Threads the engine's kernels run on, the streaming thread included
   * (0, the default: 1; gst/common/gstttthreads.h says why).
   * Read when the model is loaded. Results are the same run to run for a
   * given count and agree across counts within rounding.
   */
  g_object_class_install_property (gobject_class, PROP_THREADS,
      g_param_spec_uint ("threads", "Threads",
          "Engine threads, the streaming thread included; 0: the default, 1",
          0, GST_TT_MAX_THREADS, 0,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  gst_tensor_federation_install_properties (gobject_class,
      PROP_FEDERATION_FIRST);

  gst_element_class_set_static_metadata (element_class, "Tensor trainer",
      "Trainer/Tensor",
      "Trains a neural network (nntrainer INI) on other/tensors samples and "
      "pushes per-epoch loss and accuracy", "tensor-trainer project");
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_tensor_trainer_change_state);
}

static void
gst_tensor_trainer_init (GstTtTensorTrainer * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_tensor_trainer_chain));
  gst_pad_set_chain_list_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_tensor_trainer_chain_list));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_tensor_trainer_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  g_cond_init (&self->cond);
  self->framework = g_strdup (DEFAULT_FRAMEWORK);
  self->num_inputs = DEFAULT_NUM_INPUTS;
  self->num_labels = DEFAULT_NUM_LABELS;
  self->num_training_samples = DEFAULT_NUM_TRAINING_SAMPLES;
  self->num_validation_samples = DEFAULT_NUM_VALIDATION_SAMPLES;
  self->epochs = DEFAULT_EPOCHS;
  self->post_messages = DEFAULT_POST_MESSAGES;
  self->progress_interval = DEFAULT_PROGRESS_INTERVAL;
  self->publish_interval = DEFAULT_PUBLISH_INTERVAL;
  self->skip_bad_batches = DEFAULT_SKIP_BAD_BATCHES;
  gst_tensor_federation_config_init (&self->federation);
}

/* ---- model life: properties at READY->PAUSED, the model at the first
 * caps, all freed at PAUSED->READY ---------------------------------- */

static void
gst_tensor_trainer_free_model (GstTtTensorTrainer * self)
{
  tt_model_free (self->model);
  self->model = NULL;
  for (guint i = 0; i < GST_TENSOR_TRAINER_MAX_INPUTS; i++)
    g_clear_pointer (&self->in_batch[i], g_free);
  g_clear_pointer (&self->scratch, g_free);
  g_clear_pointer (&self->label_batch, g_free);
}

static void
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
static gboolean
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
static gboolean
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
  const guint threads = gst_tt_threads_resolve (self->threads);
  GST_OBJECT_UNLOCK (self);
  /* before compiling: on two threads the pool is laid out for them */
  open_opts.threads = threads;
  self->model = tt_model_open (config, &open_opts, &opened, &err);
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
  gst_tensor_trainer_post_plan (self);
  return TRUE;

fail:
  gst_tensor_trainer_free_model (self);
  return FALSE;
}

static gboolean
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

static GstStateChangeReturn
gst_tensor_trainer_change_state (GstElement * element,
    GstStateChange transition)
{
  GstTtTensorTrainer *self = GST_TENSOR_TRAINER (element);
  GstStateChangeReturn ret;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      if (!gst_tensor_trainer_start (self))
        return GST_STATE_CHANGE_FAILURE;
      GST_OBJECT_LOCK (self);
      g_atomic_int_set (&self->flushing, FALSE);
      GST_OBJECT_UNLOCK (self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_PLAYING:
      GST_OBJECT_LOCK (self);
      g_cond_broadcast (&self->cond);
      GST_OBJECT_UNLOCK (self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      /* release a waiting chain before the pads deactivate */
      GST_OBJECT_LOCK (self);
      g_atomic_int_set (&self->flushing, TRUE);
      g_cond_broadcast (&self->cond);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE) {
    if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
      gst_tensor_trainer_stop (self);
    return ret;
  }
  /* the pads are inactive now: no streaming thread runs */
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_tensor_trainer_stop (self);
  return ret;
}

/* ---- caps ------------------------------------------------------------ */

/* Checks caps against the model (loading it with the first caps); on
 * mismatch posts an error saying what was expected and what came. */
static gboolean
gst_tensor_trainer_set_caps (GstTtTensorTrainer * self, GstCaps * caps)
{
  GstTensorsDesc desc;
  gchar *why = NULL;
  tt_dtype types[GST_TENSOR_TRAINER_MAX_INPUTS];
  gsize bytes[GST_TENSOR_TRAINER_MAX_INPUTS];
  GstTensorLabelForm label_form;

  if (!self->model) {
    /* upstream retries refused caps: the error was posted the first time */
    if (self->load_failed)
      return FALSE;
    if (!gst_tensor_trainer_load_model (self)) {
      self->load_failed = TRUE;
      return FALSE;
    }
  }
  if (self->refused_caps && gst_caps_is_equal (caps, self->refused_caps))
    return FALSE;

  if (!gst_tensor_samples_read_caps (&self->spec, caps, &desc, types, bytes,
          &label_form, &why))
    goto refuse;
  if (desc.format == GST_TENSOR_FORMAT_FLEXIBLE) {
    self->flexible = TRUE;
    goto accept;
  }

  /* a batch is fed with one type per input: finish one of other types */
  if (self->negotiated && self->fill > 0
      && memcmp (types, self->in_types, self->n_inputs * sizeof *types)) {
    GST_ERROR_OBJECT (self, "input types changed mid-batch");
    why = g_strdup ("input types changed in the middle of a batch");
    goto refuse;
  }
  memcpy (self->in_types, types, self->n_inputs * sizeof *types);
  memcpy (self->sample_bytes, bytes, self->n_inputs * sizeof *bytes);
  self->label_desc = desc.tensors[self->n_inputs];
  self->label_form = label_form;
  self->sample_bytes[self->n_inputs] =
      gst_tensor_desc_bytes (&self->label_desc);
  self->flexible = FALSE;
accept:
  self->negotiated = TRUE;
  gst_clear_caps (&self->refused_caps);
  GST_INFO_OBJECT (self, "accepted caps %" GST_PTR_FORMAT, caps);
  return TRUE;

refuse:
  gst_caps_replace (&self->refused_caps, caps);
  gst_tensor_samples_refuse_caps (GST_ELEMENT (self), &self->spec, caps, why);
  return FALSE;
}

/* Sends caps and a TIME segment on the src pad once. */
static void
gst_tensor_trainer_send_src_caps (GstTtTensorTrainer * self)
{
  GstCaps *caps;
  GstSegment segment;

  if (self->src_caps_sent)
    return;
  if (!gst_pad_has_current_caps (self->srcpad)) {
    GstEvent *ss = gst_pad_get_sticky_event (self->srcpad,
        GST_EVENT_STREAM_START, 0);
    if (ss)
      gst_event_unref (ss);
    else {
      gchar *id = gst_pad_create_stream_id (self->srcpad,
          GST_ELEMENT (self), "stats");
      gst_pad_push_event (self->srcpad, gst_event_new_stream_start (id));
      g_free (id);
    }
  }
  caps = gst_pad_get_pad_template_caps (self->srcpad);
  gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_pad_push_event (self->srcpad, gst_event_new_segment (&segment));
  /* lets sinks preroll now rather than after the first epoch */
  gst_pad_push_event (self->srcpad, gst_event_new_gap (0, 0));
  self->src_caps_sent = TRUE;
}

/* ---- training -------------------------------------------------------- */

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
      "loss", G_TYPE_DOUBLE, t->loss_sum / t->samples,
      "accuracy", G_TYPE_DOUBLE, (gdouble) t->correct / t->samples,
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
static GstFlowReturn
gst_tensor_trainer_run_batch (GstTtTensorTrainer * self, gboolean training)
{
  const void *inputs[GST_TENSOR_TRAINER_MAX_INPUTS];
  GstTtTensorTrainerTally *tally = training ? &self->train : &self->valid;
  tt_batch_result r;
  tt_error err;
  tt_status st;
  const guint n = self->fill;

  if (n == 0)
    return GST_FLOW_OK;
  for (guint i = 0; i < self->n_inputs; i++)
    inputs[i] = self->in_batch[i];
  self->fill = 0;
  /* a global model comes between batches; the federation's end of the
   * run, too: then this batch is not trained (the caller finishes) */
  if (training && gst_tensor_federation_before_batch (self->fed, self->model,
          n)) {
    self->fed_ended = TRUE;
    return GST_FLOW_OK;
  }
  if (training)
    st = tt_model_train_batch (self->model, n, inputs, self->in_types,
        self->label_batch, &r, &err);
  else
    st = tt_model_eval_batch (self->model, n, inputs, self->in_types,
        self->label_batch, &r, &err);
  if (st == TT_ERR_NUMERIC) {
    gboolean skip;
    GST_OBJECT_LOCK (self);
    skip = self->skip_bad_batches;
    GST_OBJECT_UNLOCK (self);
    if (skip) {
      /* the engine left the model as it was: dropping the batch is safe */
      self->skipped_samples += n;
      GST_ELEMENT_WARNING (self, STREAM, FAILED,
          ("Skipped a batch of %u samples: %s", n, err.message),
          ("skip-bad-batches=true"));
      return GST_FLOW_OK;
    }
  }
  if (st != TT_OK)
    return gst_tensor_trainer_engine_error (self, &err, training ?
        "tt_model_train_batch" : "tt_model_eval_batch");
  tally->samples += n;
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

/* Makes input i of the batch float32: the samples already in it (uint8)
 * are widened in place, from the last byte down so nothing is overwritten
 * before it is read. The engine casts uint8 to float itself, so the values
 * it sees do not change. */
static void
gst_tensor_trainer_widen_input (GstTtTensorTrainer * self, guint i)
{
  const gsize n = (gsize) self->fill * self->in_count[i];
  guint8 *u = self->in_batch[i];
  gfloat *f = (gfloat *) self->in_batch[i];
  for (gsize k = n; k-- > 0;)
    f[k] = u[k];
  self->in_types[i] = TT_DTYPE_FLOAT32;
}

/* The label at offset of buf into batch slot fill. */
static GstFlowReturn
gst_tensor_trainer_put_label (GstTtTensorTrainer * self, GstBuffer * buf,
    gsize offset, const GstTensorDesc * desc, GstTensorLabelForm form)
{
  return gst_tensor_samples_put_label (GST_ELEMENT (self), buf, offset, desc,
      form, self->label_batch + self->label_count * self->fill,
      self->label_count, self->samples_seen);
}

/* Flexible tensors (gsttensorflexsample.h): every header is checked, and
 * each tensor against the model. */
static GstFlowReturn
gst_tensor_trainer_copy_flexible (GstTtTensorTrainer * self, GstBuffer * buf)
{
  const guint ntens = self->n_inputs + 1;
  GstTensorFlexSample sample;

  if (!gst_tensor_samples_read_flexible (GST_ELEMENT (self), &self->spec, buf,
          &sample, self->samples_seen))
    return GST_FLOW_ERROR;
  for (guint i = 0; i < ntens; i++) {
    const GstTensorDesc *t = &sample.tensors[i];
    const gsize offset = sample.offsets[i], size = gst_tensor_desc_bytes (t);
    if (i == self->n_inputs) {
      GstFlowReturn ret = gst_tensor_trainer_put_label (self, buf, offset,
          t, self->spec.flex_label_form);
      if (ret != GST_FLOW_OK)
        return ret;
    } else {
      const tt_dtype type = gst_tensor_samples_input_type (t);
      const gsize count = self->in_count[i];
      if (self->fill == 0)
        self->in_types[i] = type;
      else if (type == TT_DTYPE_FLOAT32 && self->in_types[i] == TT_DTYPE_UINT8)
        gst_tensor_trainer_widen_input (self, i);
      if (type == self->in_types[i]) {
        gst_buffer_extract (buf, offset, self->in_batch[i] + size *
            self->fill, size);
      } else {
        /* a uint8 sample in a float32 batch */
        gfloat *dst = (gfloat *) self->in_batch[i] + count * self->fill;
        gst_buffer_extract (buf, offset, self->scratch, size);
        for (gsize k = 0; k < count; k++)
          dst[k] = self->scratch[k];
      }
    }
  }
  return GST_FLOW_OK;
}

/* Copies the buffer's tensors into batch slot fill. */
static GstFlowReturn
gst_tensor_trainer_copy_sample (GstTtTensorTrainer * self, GstBuffer * buf)
{
  gsize offset;

  if (self->flexible)
    return gst_tensor_trainer_copy_flexible (self, buf);
  if (!gst_tensor_samples_check_sizes (GST_ELEMENT (self), buf,
          self->n_inputs + 1, self->n_inputs, self->sample_bytes,
          self->samples_seen))
    return GST_FLOW_ERROR;
  offset = gst_tensor_samples_copy_inputs (buf, self->n_inputs,
      self->sample_bytes, self->in_batch, self->fill);
  return gst_tensor_trainer_put_label (self, buf, offset, &self->label_desc,
      self->label_form);
}

static gchar *
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
static GstFlowReturn
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
  gdouble stats[4] = {
    t->samples ? t->loss_sum / t->samples : NAN,
    t->samples ? (gdouble) t->correct / t->samples : NAN,
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
        "plan-ms", G_TYPE_DOUBLE, self->plan.plan_seconds * 1e3, NULL);
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

  memset (&self->train, 0, sizeof self->train);
  self->skipped_samples = 0;
  memset (&self->valid, 0, sizeof self->valid);
  self->epoch_pos = 0;
  self->batches = 0;
  return ret;
}

/* After the last epoch or at EOS: trains the pending batch, closes a
 * partial epoch, saves the model, then sends EOS downstream. */
static GstFlowReturn
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

/* Blocks while the element is paused (target state PAUSED), so pausing the
 * pipeline pauses training. */
static GstFlowReturn
gst_tensor_trainer_wait_playing (GstTtTensorTrainer * self)
{
  GstFlowReturn ret = GST_FLOW_OK;

  /* fast path, once per buffer, without the lock: a state change that
   * races with it lets this one buffer through, as if it had come a moment
   * earlier; the next one waits */
  if (G_LIKELY (GST_STATE_TARGET (self) == GST_STATE_PLAYING
          && !g_atomic_int_get (&self->flushing)))
    return GST_FLOW_OK;
  GST_OBJECT_LOCK (self);
  while (!self->flushing && GST_STATE_TARGET (self) <= GST_STATE_PAUSED) {
    GST_DEBUG_OBJECT (self, "paused: waiting for PLAYING");
    g_cond_wait (&self->cond, GST_OBJECT_GET_LOCK (self));
  }
  if (self->flushing)
    ret = GST_FLOW_FLUSHING;
  GST_OBJECT_UNLOCK (self);
  return ret;
}

static GstFlowReturn
gst_tensor_trainer_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstFlowReturn ret = gst_tensor_trainer_sample (GST_TENSOR_TRAINER (parent),
      buf);
  (void) pad;
  gst_buffer_unref (buf);
  return ret;
}

/* A list of samples (tensor_datasrc pushes them so): one push for many
 * buffers, each handled as by the chain function. */
static GstFlowReturn
gst_tensor_trainer_chain_list (GstPad * pad, GstObject * parent,
    GstBufferList * list)
{
  GstTtTensorTrainer *self = GST_TENSOR_TRAINER (parent);
  const guint n = gst_buffer_list_length (list);
  GstFlowReturn ret = GST_FLOW_OK;

  (void) pad;
  for (guint i = 0; i < n && ret == GST_FLOW_OK; i++)
    ret = gst_tensor_trainer_sample (self, gst_buffer_list_get (list, i));
  gst_buffer_list_unref (list);
  return ret;
}

/* One sample (buf is not taken). */
static GstFlowReturn
gst_tensor_trainer_sample (GstTtTensorTrainer * self, GstBuffer * buf)
{
  GstFlowReturn ret;
  gboolean training;

  if (self->finished) {
    GST_LOG_OBJECT (self, "training is over: buffer dropped");
    return GST_FLOW_OK;
  }
  if (!self->negotiated) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("No caps were negotiated before the first buffer."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  ret = gst_tensor_trainer_wait_playing (self);
  if (ret == GST_FLOW_OK)
    ret = gst_tensor_trainer_copy_sample (self, buf);
  if (ret != GST_FLOW_OK)
    return ret;

  if (self->epoch_pos == 0)
    self->epoch_start_us = g_get_monotonic_time ();
  self->epoch_pos++;
  self->samples_seen++;
  self->fill++;
  training = self->epoch_pos <= self->n_train;

  /* a full batch, or the end of a phase: training and validation samples
   * never share a batch, and a short last batch runs as it is */
  if (self->fill == self->batch || self->epoch_pos == self->n_train
      || self->epoch_pos == (guint64) self->n_train + self->n_valid) {
    ret = gst_tensor_trainer_run_batch (self, training);
    if (ret != GST_FLOW_OK)
      return ret;
    if (self->fed_ended)
      return gst_tensor_trainer_finish (self);
  }
  if (self->epoch_pos == self->n_train)
    self->train_end_us = g_get_monotonic_time ();
  if (self->epoch_pos == (guint64) self->n_train + self->n_valid) {
    ret = gst_tensor_trainer_end_epoch (self, TRUE);
    if (ret != GST_FLOW_OK)
      return ret;
    if (self->epochs_done == self->n_epochs)
      ret = gst_tensor_trainer_finish (self);
  }
  return ret;
}

static gboolean
gst_tensor_trainer_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstTtTensorTrainer *self = GST_TENSOR_TRAINER (parent);

  GST_LOG_OBJECT (self, "event %" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gboolean ok;
      gst_event_parse_caps (event, &caps);
      ok = gst_tensor_trainer_set_caps (self, caps);
      if (ok)
        gst_tensor_trainer_send_src_caps (self);
      gst_event_unref (event);
      return ok;
    }
    case GST_EVENT_FLUSH_START:
      GST_OBJECT_LOCK (self);
      g_atomic_int_set (&self->flushing, TRUE);
      g_cond_broadcast (&self->cond);
      GST_OBJECT_UNLOCK (self);
      return gst_pad_event_default (pad, parent, event);
    case GST_EVENT_FLUSH_STOP:
      GST_OBJECT_LOCK (self);
      g_atomic_int_set (&self->flushing, FALSE);
      GST_OBJECT_UNLOCK (self);
      return gst_pad_event_default (pad, parent, event);
    case GST_EVENT_SEGMENT:
      /* the src pad has its own TIME segment: one frame per epoch */
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_EOS:{
      GstFlowReturn ret;
      gst_event_unref (event);
      if (self->finished)
        return TRUE;            /* sent after the last epoch already */
      ret = gst_tensor_trainer_finish (self);
      return ret == GST_FLOW_OK;
    }
    default:
      return gst_pad_event_default (pad, parent, event);
  }
}

/* ---- properties ------------------------------------------------------ */

static void
gst_tensor_trainer_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstTtTensorTrainer *self = GST_TENSOR_TRAINER (object);
  gchar **str = NULL;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FRAMEWORK:
      str = &self->framework;
      break;
    case PROP_MODEL_CONFIG:
      str = &self->model_config;
      break;
    case PROP_MODEL_LOAD_PATH:
      str = &self->model_load_path;
      break;
    case PROP_MODEL_SAVE_PATH:
      str = &self->model_save_path;
      break;
    case PROP_CHECKPOINT_PATH:
      str = &self->checkpoint_path;
      break;
    case PROP_NUM_INPUTS:
      self->num_inputs = g_value_get_uint (value);
      break;
    case PROP_NUM_LABELS:
      self->num_labels = g_value_get_uint (value);
      break;
    case PROP_NUM_TRAINING_SAMPLES:
      self->num_training_samples = g_value_get_uint (value);
      break;
    case PROP_NUM_VALIDATION_SAMPLES:
      self->num_validation_samples = g_value_get_uint (value);
      break;
    case PROP_EPOCHS:
      self->epochs = g_value_get_uint (value);
      self->epochs_set = TRUE;
      break;
    case PROP_POST_MESSAGES:
      self->post_messages = g_value_get_boolean (value);
      break;
    case PROP_PUBLISH_INTERVAL:
      self->publish_interval = g_value_get_uint (value);
      break;
    case PROP_PROGRESS_INTERVAL:
      self->progress_interval = g_value_get_uint (value);
      break;
    case PROP_SKIP_BAD_BATCHES:
      self->skip_bad_batches = g_value_get_boolean (value);
      break;
    case PROP_THREADS:
      self->threads = g_value_get_uint (value);
      break;
    case PROP_MEMORY_LIMIT:
      self->memory_limit = g_value_get_uint64 (value);
      break;
    default:
      if (gst_tensor_federation_set_property (&self->federation,
              PROP_FEDERATION_FIRST, prop_id, value))
        break;
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
gst_tensor_trainer_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstTtTensorTrainer *self = GST_TENSOR_TRAINER (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FRAMEWORK:
      g_value_set_string (value, self->framework);
      break;
    case PROP_MODEL_CONFIG:
      g_value_set_string (value, self->model_config);
      break;
    case PROP_MODEL_LOAD_PATH:
      g_value_set_string (value, self->model_load_path);
      break;
    case PROP_MODEL_SAVE_PATH:
      g_value_set_string (value, self->model_save_path);
      break;
    case PROP_CHECKPOINT_PATH:
      g_value_set_string (value, self->checkpoint_path);
      break;
    case PROP_NUM_INPUTS:
      g_value_set_uint (value, self->num_inputs);
      break;
    case PROP_NUM_LABELS:
      g_value_set_uint (value, self->num_labels);
      break;
    case PROP_NUM_TRAINING_SAMPLES:
      g_value_set_uint (value, self->num_training_samples);
      break;
    case PROP_NUM_VALIDATION_SAMPLES:
      g_value_set_uint (value, self->num_validation_samples);
      break;
    case PROP_EPOCHS:
      /* nnstreamer's default, which its launch lines and tests read */
      if (!self->epochs_set && g_strcmp0 (self->framework,
              GST_TENSOR_TRAINER_FRAMEWORK_ALIAS) == 0)
        g_value_set_uint (value, 1);
      else
        g_value_set_uint (value, self->epochs);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, self->post_messages);
      break;
    case PROP_PUBLISH_INTERVAL:
      g_value_set_uint (value, self->publish_interval);
      break;
    case PROP_PROGRESS_INTERVAL:
      g_value_set_uint (value, self->progress_interval);
      break;
    case PROP_SKIP_BAD_BATCHES:
      g_value_set_boolean (value, self->skip_bad_batches);
      break;
    case PROP_THREADS:
      g_value_set_uint (value, self->threads);
      break;
    case PROP_MEMORY_LIMIT:
      g_value_set_uint64 (value, self->memory_limit);
      break;
    default:
      if (gst_tensor_federation_get_property (&self->federation,
              PROP_FEDERATION_FIRST, prop_id, value))
        break;
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_tensor_trainer_finalize (GObject * object)
{
  GstTtTensorTrainer *self = GST_TENSOR_TRAINER (object);

  gst_tensor_trainer_stop (self);
  g_free (self->framework);
  g_free (self->model_config);
  g_free (self->model_load_path);
  g_free (self->model_save_path);
  g_free (self->checkpoint_path);
  gst_tensor_federation_config_clear (&self->federation);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}
