/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * SECTION:element-tensor_planner
 * @title: tensor_planner
 *
 * Plans the memory of a model for the stream that goes through it and
 * writes the result as an optimized INI (the model's own text followed by
 * its plan; see docs/optimized-ini.md), so that a #GstTtTensorTrainer, or any
 * program using the engine, loads it later without planning again. Buffers
 * pass through untouched (the element is a passthrough #GstBaseTransform),
 * so it can stand right in front of tensor_trainer.
 *
 * At READY->PAUSED it reads and compiles #GstTtTensorPlanner:model-config
 * (an INI: a bundle, which holds its plan already, is refused with a
 * message saying so), checks #GstTtTensorPlanner:model-load-path against it
 * and that the files to write can be written: a bad file fails the state
 * change. When the first caps arrive, before it forwards them, the element
 * checks that the caps' first tensors are
 * the model's inputs (other/tensors static or flexible, or the legacy single
 * other/tensor; further tensors, such as labels, are ignored), plans the
 * model afresh (an earlier plan in the INI is ignored) for the batch size of
 * #GstTtTensorPlanner:batch-size or the INI's (with the tensors aligned to
 * #GstTtTensorPlanner:alignment, the pool kept under
 * #GstTtTensorPlanner:memory-limit and laid out for the
 * #GstTtTensorPlanner:threads of the trainer that will load it), and
 * writes:
 *
 * - #GstTtTensorPlanner:location: the optimized INI (a path ending in .ini),
 *   else a bundle holding it and the weights (a path ending in .bin is
 *   refused: a BIN holds no plan), atomically. With batch-size set, the
 *   INI's [Model] batch_size is rewritten to it, so the file loads as it
 *   is.
 * - #GstTtTensorPlanner:weights-location (optional): the model's initial
 *   weights, those of #GstTtTensorPlanner:model-load-path or freshly
 *   initialized as the INI says, as a BIN (a path ending in .bin) or a
 *   bundle.
 *
 * A model-config ending in `.onnx` is an ONNX model, converted in memory
 * (docs/onnx.md; the importer's defaults, as tensor_trainer converts it)
 * and planned like an INI: location gets the converted, planned INI, so
 * that later starts skip both conversion and planning. Its weights are the
 * ONNX initializers (or model-load-path's), so location must be a bundle
 * or weights-location must be set, else the start fails saying so.
 *
 * Then it posts an element message `tensor-planner-plan` with model,
 * location, weights-location, batch-size, pool-bytes, lower-bound,
 * naive-bytes, depth-first-bytes, tensors, in-place-layers, order-exact and
 * plan-ms (the planning time), and logs the same at INFO.
 *
 * Because the file is written before the caps go downstream, and a
 * tensor_trainer whose model-config (or model-load-path) is one of this
 * element's files learns so at its start (a custom query upstream, answered
 * here) and loads it when its first caps arrive, a
 * `tensor_planner location=X ! tensor_trainer model-config=X` pipeline
 * always trains from the plan just written, whatever the state-change order
 * (its `tensor-trainer-plan` message says plan-loaded=true). Later caps are
 * only checked against the model; flexible tensors, which have no shapes in
 * their caps, are checked on the first buffer.
 *
 * ## Example launch line
 *
 * Plans tests/models/fmnist_mlp.ini (run from the top of the source tree)
 * for batches of 64, writes /tmp/mlp.opt.ini and /tmp/mlp.init.bin, and
 * trains one epoch of the 60,000 Fashion-MNIST training images from them
 * (-m shows the tensor-planner-plan message, and tensor-trainer-plan with
 * plan-loaded=true):
 * |[
 * gst-launch-1.0 -m tensor_datasrc \
 *     location=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz \
 *     label-location=/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz ! \
 *   tensor_planner model-config=tests/models/fmnist_mlp.ini \
 *     location=/tmp/mlp.opt.ini weights-location=/tmp/mlp.init.bin \
 *     batch-size=64 ! \
 *   tensor_trainer model-config=/tmp/mlp.opt.ini \
 *     model-load-path=/tmp/mlp.init.bin num-training-samples=60000 \
 *     epochs=1 ! fakesink
 * ]|
 */
#include "gsttensorplanner.h"
#include "gsttensormodelshare.h"
#include "gstttthreads.h"
#include "gstttmodelopen.h"
#include "tt_bundle.h"

#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_tensor_planner_debug);
#define GST_CAT_DEFAULT gst_tensor_planner_debug

#define DEFAULT_MODEL_CONFIG NULL
#define DEFAULT_LOCATION NULL
#define DEFAULT_WEIGHTS_LOCATION NULL
#define DEFAULT_MODEL_LOAD_PATH NULL
#define DEFAULT_BATCH_SIZE 0
#define DEFAULT_ALIGNMENT 0

enum
{
  PROP_0,
  PROP_MODEL_CONFIG,
  PROP_LOCATION,
  PROP_WEIGHTS_LOCATION,
  PROP_MODEL_LOAD_PATH,
  PROP_BATCH_SIZE,
  PROP_ALIGNMENT,
  PROP_MEMORY_LIMIT,
  PROP_THREADS,
  PROP_TRAIN,                   /* personalization: what trains */
  PROP_PRECISION,               /* mixed precision */
};

#define GST_TENSOR_PLANNER_CAPS \
  "other/tensors, format = (string) static; " \
  "other/tensors, format = (string) flexible; other/tensor"

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_TENSOR_PLANNER_CAPS));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_TENSOR_PLANNER_CAPS));

#define gst_tensor_planner_parent_class parent_class
G_DEFINE_TYPE (GstTtTensorPlanner, gst_tensor_planner, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (tensor_planner, "tensor_planner",
    GST_RANK_NONE, GST_TYPE_TENSOR_PLANNER,
    GST_DEBUG_CATEGORY_INIT (gst_tensor_planner_debug, "tensor_planner", 0,
        "tensor_planner element"));

static void gst_tensor_planner_finalize (GObject * object);
static void gst_tensor_planner_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_tensor_planner_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean gst_tensor_planner_start (GstBaseTransform * trans);
static gboolean gst_tensor_planner_stop (GstBaseTransform * trans);
static gboolean gst_tensor_planner_set_caps (GstBaseTransform * trans,
    GstCaps * incaps, GstCaps * outcaps);
static gboolean gst_tensor_planner_query (GstBaseTransform * trans,
    GstPadDirection direction, GstQuery * query);
static GstFlowReturn gst_tensor_planner_transform_ip (GstBaseTransform *
    trans, GstBuffer * buf);

static void
gst_tensor_planner_class_init (GstTtTensorPlannerClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->finalize = gst_tensor_planner_finalize;
  gobject_class->set_property = gst_tensor_planner_set_property;
  gobject_class->get_property = gst_tensor_planner_get_property;

  /* Every property is read twice: at READY->PAUSED, to check the model and
   * the files to write, and again when the first caps come, to plan and
   * write (a value changed in between is used unchecked). A change after
   * that takes effect at the next start. */

  /**
   * GstTtTensorPlanner:model-config:
   *
   * The model to plan: an INI file in nntrainer's dialect. A plan it
   * already holds (an optimized INI) is ignored: the model is planned
   * afresh for the stream. A bundle, which holds its plan already, is
   * refused with a message saying so. Required: without it the start
   * fails. Read and compiled at READY->PAUSED (without the order search),
   * so a missing or bad file fails the state change; read again, and
   * planned, when the first caps come.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_CONFIG,
      g_param_spec_string ("model-config", "Model configuration",
          "Model INI or ONNX model (.onnx) to plan (required; a bundle is "
          "refused)", DEFAULT_MODEL_CONFIG, rw));
  /**
   * GstTtTensorPlanner:location:
   *
   * The file written, atomically, when the first caps arrive and before
   * they are forwarded. A path ending in .ini (or .INI) gets the optimized
   * INI: the model's text, its [Model] batch_size set to the batch
   * planned for, followed by its plan. Any other path is saved as the
   * engine saves a model: a bundle (that INI and the weights of
   * #GstTtTensorPlanner:model-load-path, or initialized ones, in one file).
   * A path ending in .bin (any case) is refused at start: BIN weights
   * cannot hold a plan. Required: without it the start fails; at start
   * its folder must take a new file. A tensor_trainer downstream whose model-config (or
   * model-load-path) names this file learns so at its start and loads
   * the model when the caps come.
   */
  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "Location",
          "Optimized INI (.ini) or bundle written with the plan (required)",
          DEFAULT_LOCATION, rw));
  /**
   * GstTtTensorPlanner:weights-location:
   *
   * A second file written after #GstTtTensorPlanner:location, with the
   * model's initial weights: those of #GstTtTensorPlanner:model-load-path,
   * or initialized as the INI says. A path ending in .bin (any case)
   * gets nntrainer's BIN; any other a bundle; one ending in .ini is
   * refused at start. At start its folder must
   * take a new file. A tensor_trainer downstream whose model-load-path
   * names it loads it when the caps come. Unset (the default): no such
   * file.
   */
  g_object_class_install_property (gobject_class, PROP_WEIGHTS_LOCATION,
      g_param_spec_string ("weights-location", "Weights location",
          "File of the initial weights (a BIN for .bin); unset: none",
          DEFAULT_WEIGHTS_LOCATION, rw));
  /**
   * GstTtTensorPlanner:model-load-path:
   *
   * Weights, a BIN or a bundle, to write to
   * #GstTtTensorPlanner:weights-location (and into a bundle
   * #GstTtTensorPlanner:location) instead of initialized ones. Loaded into
   * the model at start, so a file that does not fit it fails the start.
   * Unset (the default): initialized weights.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_LOAD_PATH,
      g_param_spec_string ("model-load-path", "Model load path",
          "Weights to write instead of initialized ones: a BIN or a bundle",
          DEFAULT_MODEL_LOAD_PATH, rw));
  /**
   * GstTtTensorPlanner:batch-size:
   *
   * The batch size to plan for; the written INI's [Model] batch_size is
   * set to it, so the file loads as it is. 0 (the default): the INI's
   * batch_size. The model checked at start is compiled for it too.
   */
  g_object_class_install_property (gobject_class, PROP_BATCH_SIZE,
      g_param_spec_uint ("batch-size", "Batch size",
          "Batch size to plan for; 0: the INI's batch_size", 0, 65536,
          DEFAULT_BATCH_SIZE, rw));
  /**
   * GstTtTensorPlanner:alignment:
   *
   * Byte alignment of every tensor in the pool, stored with the plan:
   * a power of two from 4 to 4096. 0 (the default): the engine's, 64.
   * Checked at start with the model: a value the engine refuses (1, 2,
   * or not a power of two) fails the start.
   */
  g_object_class_install_property (gobject_class, PROP_ALIGNMENT,
      g_param_spec_uint ("alignment", "Alignment",
          "Byte alignment of every tensor in the pool; 0: the default (64)",
          0, 4096, DEFAULT_ALIGNMENT, rw));
  /**
   * GstTtTensorPlanner:memory-limit:
   *
   * The most bytes the planned pool may take (0, the default: no limit).
   * Over it, the plan drops activations after forward and rebuilds them
   * during backward (recomputation, or the INI's [Model] memory_swap
   * file): the decisions are stored with the plan ([Plan.Memory]) and
   * training with it is bit-identical. A limit no schedule meets fails
   * planning with an error naming the smallest feasible one.
   */
  g_object_class_install_property (gobject_class, PROP_MEMORY_LIMIT,
      g_param_spec_uint64 ("memory-limit", "Memory limit",
          "Most bytes of the planned pool: activations are recomputed (or "
          "swapped, with [Model] memory_swap) during backward to fit; 0: no "
          "limit", 0, G_MAXUINT64, 0, rw));
  /**
   * GstTtTensorPlanner:threads:
   *
   * The engine threads of the tensor_trainer that will load the plan (0,
   * the default, means 1). For 2 the pool is laid out by
   * halves, each thread writing the same bytes every step (the optimized
   * INI's `threads = 2`); any plan serves any count.
   */
  g_object_class_install_property (gobject_class, PROP_THREADS,
      g_param_spec_uint ("threads", "Threads",
          "Engine threads of the trainer the pool is laid out for (2: by "
          "halves); 0: the default, 1", 0, GST_TT_MAX_THREADS, 0, rw));
  /**
   * GstTtTensorPlanner:train:
   *
   * What the trainer will train (docs/personalize.md): "everything" (the
   * default), "biases", "last:N" or "layers:A,B"; the rest is frozen and
   * planned so. The choice is stored with the plan ([Plan] train), so
   * tensor_trainer loading the optimized INI trains just that.
   */
  g_object_class_install_property (gobject_class, PROP_TRAIN,
      g_param_spec_string ("train", "Train",
          "What trains: everything, biases, last:N or layers:A,B (the rest "
          "frozen, stored with the plan); NULL: everything", NULL, rw));
  /* mixed precision */
  /**
   * GstTtTensorPlanner:precision:
   *
   * The precision the trainer will train at (docs/precision.md): "fp32",
   * "bf16" or "fp16" (the activations' type; the weights' stays the
   * INI's) or a full "W-A" as [Model] model_tensor_type takes it
   * ("FP32-BF16", "W16A16", ...); NULL: the INI's. The optimized INI
   * states it as [Model] model_tensor_type, so that tensor_trainer
   * loading it plans and validates for the same. Another value is an
   * element error naming the allowed values.
   */
  g_object_class_install_property (gobject_class, PROP_PRECISION,
      g_param_spec_string ("precision", "Precision",
          "fp32, bf16, fp16 (the activations' type) or W-A as [Model] "
          "model_tensor_type (FP32-BF16, W16A16, ...); NULL: the INI's",
          NULL, rw));

  gst_element_class_set_static_metadata (element_class, "Tensor planner",
      "Filter/Tensor",
      "Plans a model's memory for the tensors streaming through and writes "
      "the optimized INI (and initial weights) for tensor_trainer; passes "
      "buffers through", "tensor-trainer project");
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);

  trans_class->start = GST_DEBUG_FUNCPTR (gst_tensor_planner_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_tensor_planner_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_tensor_planner_set_caps);
  trans_class->query = GST_DEBUG_FUNCPTR (gst_tensor_planner_query);
  trans_class->transform_ip =
      GST_DEBUG_FUNCPTR (gst_tensor_planner_transform_ip);
  trans_class->passthrough_on_same_caps = TRUE;
  trans_class->transform_ip_on_passthrough = TRUE;
}

static void
gst_tensor_planner_init (GstTtTensorPlanner * self)
{
  self->batch_size = DEFAULT_BATCH_SIZE;
  self->alignment = DEFAULT_ALIGNMENT;
  gst_base_transform_set_passthrough (GST_BASE_TRANSFORM (self), TRUE);
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
}

/* ---- start / stop ---------------------------------------------------- */

/* The properties one validation or planning reads, copied under the
 * object lock so that a property set meanwhile cannot change them
 * halfway. */
typedef struct
{
  gchar *config, *location, *weights, *load_path, *train;
  gchar *precision;             /* mixed precision */
  guint batch, alignment, threads;
  guint64 memory_limit;
} GstTtTensorPlannerSettings;

static void
gst_tensor_planner_settings_read (GstTtTensorPlanner * self,
    GstTtTensorPlannerSettings * s)
{
  GST_OBJECT_LOCK (self);
  s->config = g_strdup (self->model_config);
  s->location = g_strdup (self->location);
  s->weights = g_strdup (self->weights_location);
  s->load_path = g_strdup (self->model_load_path);
  s->train = g_strdup (self->train);
  s->precision = g_strdup (self->precision);
  s->batch = self->batch_size;
  s->alignment = self->alignment;
  s->memory_limit = self->memory_limit;
  s->threads = gst_tt_threads_resolve (self->threads);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_tensor_planner_settings_clear (GstTtTensorPlannerSettings * s)
{
  g_free (s->config);
  g_free (s->location);
  g_free (s->weights);
  g_free (s->load_path);
  g_free (s->train);
  g_free (s->precision);
}

/* path ends in suffix, in any case */
static gboolean
gst_tensor_planner_has_suffix (const gchar * path, const gchar * suffix)
{
  const gsize n = strlen (path), k = strlen (suffix);
  return n >= k && !g_ascii_strcasecmp (path + n - k, suffix);
}

/* model-config (an INI: a bundle holds its plan already) opened with o,
 * or NULL after posting the error. */
static tt_model *
gst_tensor_planner_open (GstTtTensorPlanner * self, const gchar * config,
    tt_open_options * o)
{
  tt_error err;
  tt_open_info opened;
  tt_model *model;
  const gsize skip = config ? strlen (config) : 0;

  o->kind = TT_MODEL_FILE_INI;
  if ((model = gst_tt_model_open (config, o, NULL, &opened, &err)))
    return model;
  switch (opened.failed_step) {
    case TT_OPEN_KIND:
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("model-config=%s is a bundle (a model packaged with its plan and "
              "weights): tensor_planner plans a model INI. tensor_trainer "
              "and tensor_predictor take the bundle as it is; "
              "`tensor-trainer unpack %s -o DIR` gives back its INI.", config,
              config), (NULL));
      break;
    case TT_OPEN_READ:
      /* (the engine's message starts with the path: said once) */
      if (err.status == TT_ERR_IO)
        GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
            ("Cannot read model-config %s: %s", config,
                !strncmp (err.message, config, skip)
                && !strncmp (err.message + skip, ": ", 2) ?
                err.message + skip + 2 : err.message), (NULL));
      else
        GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS, ("%s", err.message),
            ("tt_model_open: %s", tt_status_name (err.status)));
      break;
    case TT_OPEN_SETTINGS:
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS, ("%s", err.message), (NULL));
      break;
    case TT_OPEN_COMPILE:
      GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("%s", err.message),
          ("tt_model_compile: %s", tt_status_name (err.status)));
      break;
    default:                   /* TT_OPEN_WEIGHTS */
      GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err.message),
          ("loading model-load-path"));
      break;
  }
  return NULL;
}

/* At start, so that a bad file fails the state change: the model is read
 * and compiled (without the order search: the plan is made when the caps
 * come), the weights of model-load-path are checked against it and the
 * files to write can be written. */
static gboolean
gst_tensor_planner_validate (GstTtTensorPlanner * self)
{
  GstTtTensorPlannerSettings set;
  tt_model *model = NULL;
  gboolean ok = FALSE;

  gst_tensor_planner_settings_read (self, &set);
  const gchar *config = set.config, *location = set.location;
  const gchar *weights = set.weights, *load_path = set.load_path;
  const guint batch = set.batch;
  tt_open_options open_opts = { 0 };

  /* compiled without the order search (the plan is made when the caps
   * come), model-load-path's weights checked against it */
  open_opts.batch_size = batch;
  open_opts.plan_mode = TT_PLAN_NAIVE;
  open_opts.alignment = set.alignment;
  open_opts.weights = load_path;
  open_opts.precision = set.precision;
  /* refused now rather than when the caps come: BIN weights hold no plan
   * (the CLI's plan refuses .bin too), and the weights file is no INI */
  if (gst_tensor_planner_has_suffix (location, ".bin")) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("location %s: tensor_planner writes the optimized INI (.ini) or "
            "a bundle; BIN weights cannot hold a plan.", location), (NULL));
    goto out;
  }
  if (weights && gst_tensor_planner_has_suffix (weights, ".ini")) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("weights-location %s: weights go to a BIN (.bin) or a bundle, "
            "not an INI.", weights), (NULL));
    goto out;
  }
  /* an ONNX model's weights are its initializers: kept beside the plan
   * (weights-location) or in the bundle written */
  if (gst_tensor_planner_has_suffix (config, ".onnx")
      && gst_tensor_planner_has_suffix (location, ".ini")
      && !(weights && *weights)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("model-config %s is an ONNX model: its weights are its "
            "initializers, and location %s (an INI) holds no weights. Set "
            "weights-location (a BIN) too, or write a bundle.", config,
            location), (NULL));
    goto out;
  }
  if (!(model = gst_tensor_planner_open (self, config, &open_opts)))
    goto out;
  if (!gst_tensor_model_file_check_writable (GST_ELEMENT (self), "location",
          location) || (weights && *weights
          && !gst_tensor_model_file_check_writable (GST_ELEMENT (self),
              "weights-location", weights)))
    goto out;
  ok = TRUE;
out:
  tt_model_free (model);
  gst_tensor_planner_settings_clear (&set);
  return ok;
}

/* Tells a tensor_trainer downstream, starting before the caps come, that
 * its model-config or model-load-path is written here then. */
static gboolean
gst_tensor_planner_query (GstBaseTransform * trans, GstPadDirection direction,
    GstQuery * query)
{
  GstTtTensorPlanner *self = GST_TENSOR_PLANNER (trans);

  if (direction == GST_PAD_SRC && GST_QUERY_TYPE (query) == GST_QUERY_CUSTOM) {
    gchar *paths[2];
    gboolean answered;
    GST_OBJECT_LOCK (self);
    paths[0] = g_strdup (self->location);
    paths[1] = g_strdup (self->weights_location);
    GST_OBJECT_UNLOCK (self);
    answered = gst_tensor_model_file_query_answer (query,
        (const gchar * const *) paths, G_N_ELEMENTS (paths));
    g_free (paths[0]);
    g_free (paths[1]);
    if (answered)
      return TRUE;
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->query (trans, direction,
      query);
}

static gboolean
gst_tensor_planner_start (GstBaseTransform * trans)
{
  GstTtTensorPlanner *self = GST_TENSOR_PLANNER (trans);
  gboolean have_config, have_location;

  GST_OBJECT_LOCK (self);
  have_config = self->model_config && *self->model_config;
  have_location = self->location && *self->location;
  GST_OBJECT_UNLOCK (self);
  if (!have_config) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No model-config set: tensor_planner needs a model INI file."),
        (NULL));
    return FALSE;
  }
  if (!have_location) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No location set: tensor_planner needs a file to write the "
            "optimized INI to."), (NULL));
    return FALSE;
  }
  if (!gst_tensor_planner_validate (self))
    return FALSE;
  self->planned = FALSE;
  self->check_buffer = FALSE;
  return TRUE;
}

static gboolean
gst_tensor_planner_stop (GstBaseTransform * trans)
{
  GstTtTensorPlanner *self = GST_TENSOR_PLANNER (trans);
  self->planned = FALSE;
  self->check_buffer = FALSE;
  self->n_inputs = 0;
  g_clear_pointer (&self->config_path, g_free);
  gst_clear_caps (&self->refused_caps);
  return TRUE;
}

/* ---- planning -------------------------------------------------------- */

static gchar *
gst_tensor_planner_expected (GstTtTensorPlanner * self)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < self->n_inputs; i++) {
    const tt_shape *sh = &self->inputs[i];
    g_string_append_printf (s, "%sinput %u dimensions=%u:%u:%u:1 "
        "types=uint8|float32", i ? ", " : "", i, sh->width, sh->height,
        sh->channel);
  }
  return g_string_free (s, FALSE);
}

/* Checks the model's inputs against tensors; *why says what is wrong. */
static gboolean
gst_tensor_planner_check (GstTtTensorPlanner * self, const GstTensorDesc * t,
    guint n, gchar ** why)
{
  if (n < self->n_inputs) {
    *why = g_strdup_printf ("%u tensor(s) received, the model has %u "
        "input(s)", n, self->n_inputs);
    return FALSE;
  }
  for (guint i = 0; i < self->n_inputs; i++) {
    const tt_shape *s = &self->inputs[i];
    if (!gst_tensor_desc_matches_shape (&t[i], s->channel, s->height, s->width)) {
      gchar *have = gst_tensor_desc_dims_string (&t[i]);
      *why = g_strdup_printf ("tensor %u has dimensions %s, expected "
          "%u:%u:%u:1 (model input shape %u:%u:%u)", i, have, s->width,
          s->height, s->channel, s->channel, s->height, s->width);
      g_free (have);
      return FALSE;
    }
    if (t[i].type != GST_TENSOR_TYPE_UINT8
        && t[i].type != GST_TENSOR_TYPE_FLOAT32) {
      *why = g_strdup_printf ("tensor %u has type %s, expected uint8 or "
          "float32", i, gst_tensor_type_name (t[i].type));
      return FALSE;
    }
  }
  return TRUE;
}

static void
gst_tensor_planner_refuse (GstTtTensorPlanner * self, const gchar * why,
    const gchar * have)
{
  gchar *expected = gst_tensor_planner_expected (self);
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
      ("Caps do not fit the model %s: %s; the model takes %s.",
          self->config_path, why, expected), ("received: %s", have));
  g_free (expected);
}

/* Loads, plans and writes; called with the first caps. */
static gboolean
gst_tensor_planner_plan (GstTtTensorPlanner * self, const GstTensorsDesc * desc,
    GstCaps * caps)
{
  GstTtTensorPlannerSettings set;
  tt_model *model = NULL;
  tt_error err;
  tt_plan_info plan;
  gboolean ok = FALSE;

  gst_tensor_planner_settings_read (self, &set);
  const gchar *config = set.config, *location = set.location;
  const gchar *weights = set.weights, *load_path = set.load_path;
  const guint batch = set.batch, alignment = set.alignment;
  tt_open_options open_opts = { 0 };
  g_free (self->config_path);
  self->config_path = g_strdup (config);

  /* the saved text then says this batch too (plan_ini.c) */
  open_opts.batch_size = batch;
  open_opts.plan_mode = TT_PLAN_REPLAN;
  open_opts.plan_thorough = TRUE;
  open_opts.alignment = alignment;
  open_opts.memory_limit = set.memory_limit;
  open_opts.threads = set.threads;
  open_opts.train = set.train;
  open_opts.precision = set.precision;
  if (!(model = gst_tensor_planner_open (self, config, &open_opts)))
    goto out;
  if (set.precision && *set.precision) {
    gchar p[16];
    GST_INFO_OBJECT (self, "precision %s: %s", tt_model_precision (model, p,
            sizeof p), tt_precision_note (tt_model_activation_type (model)));
  }
  self->n_inputs = MIN (tt_model_num_inputs (model), GST_TENSOR_MAX_TENSORS);
  for (guint i = 0; i < self->n_inputs; i++)
    tt_model_input_shape (model, i, &self->inputs[i]);

  /* (inputs are known once compiled) the stream must fit before anything
   * is written */
  if (desc->format == GST_TENSOR_FORMAT_STATIC) {
    gchar *why = NULL;
    if (!gst_tensor_planner_check (self, desc->tensors, desc->num, &why)) {
      gchar *have = gst_caps_to_string (caps);
      gst_tensor_planner_refuse (self, why, have);
      g_free (have);
      g_free (why);
      goto out;
    }
  }

  tt_model_plan_info (model, &plan);
  /* packaging is the default: a location not ending in .ini gets a bundle
   * (the optimized INI and the weights in one file) */
  const gboolean as_ini = gst_tensor_planner_has_suffix (location, ".ini");
  /* (an ONNX model's initializers are loaded already, when opened) */
  if ((!as_ini || (weights && *weights))
      && !(gst_tensor_planner_has_suffix (config, ".onnx")
          && !(load_path && *load_path))) {
    tt_status st = load_path && *load_path ?
        tt_model_load_weights (model, load_path, &err) :
        tt_model_init_weights (model, &err);
    if (st != TT_OK) {
      GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err.message),
          ("loading model-load-path"));
      goto out;
    }
  }
  if ((as_ini ? tt_model_save_plan_ini (model, location, &err) :
          tt_model_save (model, location, &err)) != TT_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE, ("%s", err.message),
        ("writing location"));
    goto out;
  }
  if (weights && *weights && tt_model_save (model, weights, &err) != TT_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("%s", err.message),
        ("writing weights-location"));
    goto out;
  }
  GST_INFO_OBJECT (self, "%s planned for batch %u in %.3f ms: pool %"
      G_GUINT64_FORMAT " bytes, lower bound %" G_GUINT64_FORMAT ", naive %"
      G_GUINT64_FORMAT "; wrote %s%s%s", config, tt_model_batch_size (model),
      plan.plan_seconds * 1e3, plan.pool_bytes, plan.lower_bound,
      plan.naive_bytes, location, weights ? " and " : "",
      weights ? weights : "");
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("tensor-planner-plan",
              "model", G_TYPE_STRING, config,
              "location", G_TYPE_STRING, location,
              "weights-location", G_TYPE_STRING, weights,
              "batch-size", G_TYPE_UINT, tt_model_batch_size (model),
              "pool-bytes", G_TYPE_UINT64, (guint64) plan.pool_bytes,
              "lower-bound", G_TYPE_UINT64, (guint64) plan.lower_bound,
              "naive-bytes", G_TYPE_UINT64, (guint64) plan.naive_bytes,
              "depth-first-bytes", G_TYPE_UINT64,
              (guint64) plan.dfs_pool_bytes,
              "tensors", G_TYPE_UINT, plan.tensors,
              "in-place-layers", G_TYPE_UINT, plan.in_place_layers,
              "order-exact", G_TYPE_BOOLEAN, (gboolean) plan.order_exact,
              "memory-limit", G_TYPE_UINT64, (guint64) plan.memory_limit,
              "laid-out-threads", G_TYPE_UINT, plan.laid_out_threads,
              "recomputed", G_TYPE_UINT, plan.recomputed,
              "swapped", G_TYPE_UINT, plan.swapped,
              "plan-ms", G_TYPE_DOUBLE, plan.plan_seconds * 1e3, NULL)));
  self->planned = TRUE;
  ok = TRUE;
out:
  tt_model_free (model);
  gst_tensor_planner_settings_clear (&set);
  return ok;
}

/* Checks (and with the first caps, plans) for set_caps; posts its error. */
static gboolean
gst_tensor_planner_accept_caps (GstTtTensorPlanner * self, GstCaps * incaps)
{
  GstTensorsDesc desc;
  gchar *why = NULL;

  if (!gst_tensors_desc_from_caps (incaps, &desc, &why)) {
    gchar *have = gst_caps_to_string (incaps);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("Caps refused: %s.", why),
        ("received: %s", have));
    g_free (have);
    g_free (why);
    return FALSE;
  }
  if (!self->planned && !gst_tensor_planner_plan (self, &desc, incaps))
    return FALSE;
  /* (later caps: the model is written, the stream must still fit it) */
  if (desc.format == GST_TENSOR_FORMAT_STATIC
      && !gst_tensor_planner_check (self, desc.tensors, desc.num, &why)) {
    gchar *have = gst_caps_to_string (incaps);
    gst_tensor_planner_refuse (self, why, have);
    g_free (have);
    g_free (why);
    return FALSE;
  }
  self->check_buffer = desc.format == GST_TENSOR_FORMAT_FLEXIBLE;
  return TRUE;
}

static gboolean
gst_tensor_planner_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstTtTensorPlanner *self = GST_TENSOR_PLANNER (trans);

  (void) outcaps;
  /* one error per failure: the same caps come back with the next buffer */
  if (self->refused_caps && gst_caps_is_equal (incaps, self->refused_caps))
    return FALSE;
  if (!gst_tensor_planner_accept_caps (self, incaps)) {
    gst_caps_replace (&self->refused_caps, incaps);
    return FALSE;
  }
  gst_clear_caps (&self->refused_caps);
  return TRUE;
}

/* Passthrough; flexible tensors' headers are checked on the first buffer
 * after the caps. */
static GstFlowReturn
gst_tensor_planner_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstTtTensorPlanner *self = GST_TENSOR_PLANNER (trans);
  GstTensorDesc t[GST_TENSOR_MAX_TENSORS];
  gsize offset = 0;
  gchar *why = NULL;

  if (!self->check_buffer)
    return GST_FLOW_OK;
  self->check_buffer = FALSE;
  for (guint i = 0; i < self->n_inputs; i++) {
    guint8 header[GST_TENSOR_META_HEADER_SIZE];
    if (gst_buffer_extract (buf, offset, header, sizeof header) !=
        sizeof header) {
      why = g_strdup_printf ("the buffer ends before the header of tensor %u",
          i);
      break;
    }
    if (!gst_tensor_meta_parse (header, &t[i], &why))
      break;
    offset += sizeof header + gst_tensor_desc_bytes (&t[i]);
  }
  if (!why)
    gst_tensor_planner_check (self, t, self->n_inputs, &why);
  if (why) {
    gst_tensor_planner_refuse (self, why, "flexible tensors");
    g_free (why);
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

/* ---- properties ------------------------------------------------------ */

static void
gst_tensor_planner_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstTtTensorPlanner *self = GST_TENSOR_PLANNER (object);
  gchar **str = NULL;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL_CONFIG:
      str = &self->model_config;
      break;
    case PROP_LOCATION:
      str = &self->location;
      break;
    case PROP_WEIGHTS_LOCATION:
      str = &self->weights_location;
      break;
    case PROP_MODEL_LOAD_PATH:
      str = &self->model_load_path;
      break;
    case PROP_BATCH_SIZE:
      self->batch_size = g_value_get_uint (value);
      break;
    case PROP_ALIGNMENT:
      self->alignment = g_value_get_uint (value);
      break;
    case PROP_MEMORY_LIMIT:
      self->memory_limit = g_value_get_uint64 (value);
      break;
    case PROP_THREADS:
      self->threads = g_value_get_uint (value);
      break;
    case PROP_TRAIN:
      str = &self->train;
      break;
    case PROP_PRECISION:
      str = &self->precision;
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
gst_tensor_planner_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstTtTensorPlanner *self = GST_TENSOR_PLANNER (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL_CONFIG:
      g_value_set_string (value, self->model_config);
      break;
    case PROP_LOCATION:
      g_value_set_string (value, self->location);
      break;
    case PROP_WEIGHTS_LOCATION:
      g_value_set_string (value, self->weights_location);
      break;
    case PROP_MODEL_LOAD_PATH:
      g_value_set_string (value, self->model_load_path);
      break;
    case PROP_BATCH_SIZE:
      g_value_set_uint (value, self->batch_size);
      break;
    case PROP_ALIGNMENT:
      g_value_set_uint (value, self->alignment);
      break;
    case PROP_MEMORY_LIMIT:
      g_value_set_uint64 (value, self->memory_limit);
      break;
    case PROP_THREADS:
      g_value_set_uint (value, self->threads);
      break;
    case PROP_TRAIN:
      g_value_set_string (value, self->train);
      break;
    case PROP_PRECISION:
      g_value_set_string (value, self->precision);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_tensor_planner_finalize (GObject * object)
{
  GstTtTensorPlanner *self = GST_TENSOR_PLANNER (object);

  g_free (self->model_config);
  g_free (self->location);
  g_free (self->weights_location);
  g_free (self->model_load_path);
  g_free (self->train);
  g_free (self->precision);
  g_free (self->config_path);
  gst_clear_caps (&self->refused_caps);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}
