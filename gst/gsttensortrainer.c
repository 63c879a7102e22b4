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
 * A #GstTtTensorTrainer:model-config ending in `.onnx` is an ONNX model
 * (torch.onnx.export of an MLP or a CNN: docs/onnx.md), converted in memory
 * at READY->PAUSED as `tensor-trainer import` converts it with its
 * defaults: loss cross_softmax (the graph's output taken as logits, a
 * final Softmax absorbed), SGD at learning rate 0.001, the ONNX input's
 * batch (else 32); the ONNX initializers are the initial weights unless
 * #GstTtTensorTrainer:model-load-path names others. No file is written for
 * it; a file the importer refuses fails the start with its message (the
 * file and the reason). For another loss, optimizer or rate, run
 * `tensor-trainer import` and train the INI it writes; to put the trained
 * weights back into the ONNX file, `tensor-trainer export-onnx`.
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
 * ## Properties
 * The model and its files: #GstTtTensorTrainer:model-config,
 * #GstTtTensorTrainer:model-load-path, #GstTtTensorTrainer:model-save-path,
 * #GstTtTensorTrainer:checkpoint-path and #GstTtTensorTrainer:framework.
 * The samples: #GstTtTensorTrainer:num-inputs,
 * #GstTtTensorTrainer:num-labels, #GstTtTensorTrainer:num-training-samples,
 * #GstTtTensorTrainer:num-validation-samples and #GstTtTensorTrainer:epochs.
 * While training: #GstTtTensorTrainer:post-messages,
 * #GstTtTensorTrainer:progress-interval,
 * #GstTtTensorTrainer:publish-interval and
 * #GstTtTensorTrainer:skip-bad-batches. The engine:
 * #GstTtTensorTrainer:memory-limit and #GstTtTensorTrainer:threads.
 * Personalization: #GstTtTensorTrainer:train, the replay-* properties,
 * #GstTtTensorTrainer:feature-cache and
 * #GstTtTensorTrainer:feature-cache-file.
 * Federated training: federation-broker and the other federation-*
 * properties (gsttensorfederation.c).
 *
 * ## Example launch line
 * Five epochs on Fashion-MNIST's 60000 training images, run from the top
 * of the source tree with D the folder of the dataset's IDX files (e.g.
 * D=/usr/share/datasets/fashion-mnist); the trained model is saved as
 * fmnist-mlp.bin:
 * |[
 * gst-launch-1.0 -m tensor_datasrc location=$D/train-images-idx3-ubyte.gz \
 *     label-location=$D/train-labels-idx1-ubyte.gz epochs=5 ! \
 *   tensor_trainer model-config=tests/models/fmnist_mlp.ini \
 *     num-training-samples=60000 epochs=5 model-save-path=fmnist-mlp.bin ! \
 *   fakesink
 * ]|
 */
#include "gsttensortrainer_private.h"
#include "gstttthreads.h"

GST_DEBUG_CATEGORY (gst_tensor_trainer_debug);

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
  PROP_TRAIN,                   /* personalization: what trains */
  /* replay of past samples */
  PROP_REPLAY_SIZE,
  PROP_REPLAY_PER_BATCH,
  PROP_REPLAY_FILE,
  PROP_REPLAY_SEED,
  /* the feature cache of a frozen prefix */
  PROP_FEATURE_CACHE,
  PROP_FEATURE_CACHE_FILE,
  PROP_PRECISION,               /* mixed precision */
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
          "Model INI, optimized INI, bundle or ONNX model (.onnx) to train "
          "(required)", DEFAULT_MODEL_CONFIG, rw));
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
  /**
   * GstTtTensorTrainer:train:
   *
   * What trains, without editing the model (docs/personalize.md):
   * "everything" (the default: what the INI leaves trainable; a stored
   * plan's own choice when it has one), "biases" (every bias and the
   * gamma and beta of batch and layer normalization), "last:N" (the last
   * N layers with weights) or "layers:A,B" (those layers). The rest is
   * frozen, and planned so: no gradients, no optimizer state, no
   * activations kept for it. A choice that is none of these, a layer
   * that does not exist or an N over the layers with weights is an
   * element error naming them. INI models only; read when the model is
   * loaded.
   */
  g_object_class_install_property (gobject_class, PROP_TRAIN,
      g_param_spec_string ("train", "Train",
          "What trains: everything, biases, last:N or layers:A,B (the rest "
          "frozen); NULL: everything (or a stored plan's choice)", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  /* replay of past samples (docs/personalize.md, "Replay") */
  /**
   * GstTtTensorTrainer:replay-size:
   *
   * Past training samples to keep (0, the default: no replay), chosen by
   * reservoir sampling: every training sample seen so far (those of
   * #GstTtTensorTrainer:replay-file included) is equally likely to be
   * kept. Once the buffer holds #GstTtTensorTrainer:replay-per-batch
   * samples, each training batch mixes that many of them in. The buffer
   * is allocated with the model and counts against
   * #GstTtTensorTrainer:memory-limit. Read when the model is loaded.
   */
  g_object_class_install_property (gobject_class, PROP_REPLAY_SIZE,
      g_param_spec_uint ("replay-size", "Replay size",
          "Past training samples kept (reservoir sampling) and mixed into "
          "training batches; 0: no replay", 0, G_MAXUINT, 0,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  /**
   * GstTtTensorTrainer:replay-per-batch:
   *
   * How many samples of each training batch come from the replay buffer
   * (distinct, picked at random) once it holds that many; the other
   * batch_size - k are new samples of the stream, and
   * #GstTtTensorTrainer:num-training-samples still counts new samples
   * only. 0 to batch_size - 1, and at most replay-size; the default
   * (4294967295) means half the batch, rounded down.
   */
  g_object_class_install_property (gobject_class, PROP_REPLAY_PER_BATCH,
      g_param_spec_uint ("replay-per-batch", "Replay per batch",
          "Replayed samples in each training batch; 4294967295: half the "
          "batch, rounded down", 0, G_MAXUINT, G_MAXUINT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  /**
   * GstTtTensorTrainer:replay-file:
   *
   * A replay buffer's file: read at start when it exists (its samples'
   * tensor sizes must be the model's), written atomically at the end
   * (EOS, or stop). NULL (the default): the buffer lives for the run.
   */
  g_object_class_install_property (gobject_class, PROP_REPLAY_FILE,
      g_param_spec_string ("replay-file", "Replay file",
          "Replay buffer file: loaded at start if it exists, saved at the "
          "end", NULL, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  /**
   * GstTtTensorTrainer:replay-seed:
   *
   * Seed of the reservoir's and the picks' random numbers: a run with
   * the same seed and stream keeps and replays the same samples.
   */
  g_object_class_install_property (gobject_class, PROP_REPLAY_SEED,
      g_param_spec_uint64 ("replay-seed", "Replay seed",
          "Seed of the replay buffer's random choices", 0, G_MAXUINT64, 0,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  /**
   * GstTtTensorTrainer:feature-cache:
   *
   * Bytes of memory for the frozen prefix's outputs (docs/personalize.md,
   * "Feature cache"; 0, the default: off): the first epoch keeps the
   * records of the first training samples that fit (whole batches), and
   * a later epoch's batch whose samples are, byte for byte, the first
   * epoch's at the same places trains from them, skipping the prefix;
   * the same weights come out. Needs a frozen prefix (#GstTtTensorTrainer:train
   * or trainable = false), threads=1, no memory-limit, no replay and no
   * federation. Read when the model is loaded.
   */
  g_object_class_install_property (gobject_class, PROP_FEATURE_CACHE,
      g_param_spec_uint64 ("feature-cache", "Feature cache",
          "Bytes of memory for the frozen prefix's outputs of the first "
          "epoch's training samples, used by later epochs; 0: off", 0,
          G_MAXUINT64, 0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  /**
   * GstTtTensorTrainer:feature-cache-file:
   *
   * As #GstTtTensorTrainer:feature-cache, with every training sample's
   * record in this file (written atomically during the first epoch,
   * removed when the model is freed). An existing file that is not a
   * feature cache is refused, not overwritten. NULL (the default): off.
   */
  g_object_class_install_property (gobject_class, PROP_FEATURE_CACHE_FILE,
      g_param_spec_string ("feature-cache-file", "Feature cache file",
          "File for the frozen prefix's outputs of every training sample of "
          "the first epoch, used by later epochs", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  /* mixed precision */
  /**
   * GstTtTensorTrainer:precision:
   *
   * The precision to train at (docs/precision.md): "fp32", "bf16" or
   * "fp16" (the activations' type; the weights' type, the BIN's width,
   * stays the INI's) or a full "W-A" as [Model] model_tensor_type takes
   * it ("FP32-BF16", "W16A16", ...); NULL (the default): the INI's.
   * Another value is an element error naming the allowed values. When it
   * is set, or the model's activations are not fp32, the element says
   * once what the precision does on this CPU: GST_INFO, and with
   * #GstTtTensorTrainer:post-messages a "tensor-trainer-precision"
   * element message (precision: the model's "W-A", note: the sentence,
   * loss-scale: the initial scale of loss scaling, 0 when off). INI
   * models only; read when the model is loaded.
   */
  g_object_class_install_property (gobject_class, PROP_PRECISION,
      g_param_spec_string ("precision", "Precision",
          "fp32, bf16, fp16 (the activations' type) or W-A as [Model] "
          "model_tensor_type (FP32-BF16, W16A16, ...); NULL: the INI's",
          NULL, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
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
  self->replay_per_batch = G_MAXUINT;
  gst_tensor_federation_config_init (&self->federation);
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
    case PROP_TRAIN:
      g_free (self->train_choice);
      self->train_choice = g_value_dup_string (value);
      break;
    case PROP_PRECISION:
      g_free (self->precision);
      self->precision = g_value_dup_string (value);
      break;
    case PROP_REPLAY_SIZE:
      self->replay_size = g_value_get_uint (value);
      break;
    case PROP_REPLAY_PER_BATCH:
      self->replay_per_batch = g_value_get_uint (value);
      break;
    case PROP_REPLAY_FILE:
      g_free (self->replay_file);
      self->replay_file = g_value_dup_string (value);
      break;
    case PROP_REPLAY_SEED:
      self->replay_seed = g_value_get_uint64 (value);
      break;
    case PROP_FEATURE_CACHE:
      self->fcache_bytes = g_value_get_uint64 (value);
      break;
    case PROP_FEATURE_CACHE_FILE:
      g_free (self->fcache_file);
      self->fcache_file = g_value_dup_string (value);
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
    case PROP_TRAIN:
      g_value_set_string (value, self->train_choice);
      break;
    case PROP_PRECISION:
      g_value_set_string (value, self->precision);
      break;
    case PROP_REPLAY_SIZE:
      g_value_set_uint (value, self->replay_size);
      break;
    case PROP_REPLAY_PER_BATCH:
      g_value_set_uint (value, self->replay_per_batch);
      break;
    case PROP_REPLAY_FILE:
      g_value_set_string (value, self->replay_file);
      break;
    case PROP_REPLAY_SEED:
      g_value_set_uint64 (value, self->replay_seed);
      break;
    case PROP_FEATURE_CACHE:
      g_value_set_uint64 (value, self->fcache_bytes);
      break;
    case PROP_FEATURE_CACHE_FILE:
      g_value_set_string (value, self->fcache_file);
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
  g_free (self->train_choice);
  g_free (self->replay_file);
  g_free (self->fcache_file);
  g_free (self->precision);
  gst_tensor_federation_config_clear (&self->federation);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}
