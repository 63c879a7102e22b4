/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * SECTION:element-tensor_datasrc
 * @title: tensor_datasrc
 *
 * Reads a labelled data set from MNIST-format IDX files (images and labels,
 * gzipped or not), or from nnstreamer's datarepo files (see below), and
 * pushes one sample per buffer as nnstreamer tensors. From IDX files:
 * the image, then the label, one GstMemory each, with caps such as
 * `other/tensors,format=static,num_tensors=2,dimensions="1:28:28:1,10:1",types="uint8,float32",framerate=0/1`.
 * Image dimensions are written as tensor_converter writes GRAY8 frames
 * (channel:width:height:1). Images go out as stored (uint8) or normalized to
 * [0, 1] (#GstTtTensorDataSrc:image-format=float32); labels as one-hot float32
 * vectors of #GstTtTensorDataSrc:num-classes or as a float32 class index.
 *
 * Each epoch pushes the training range (#GstTtTensorDataSrc:start-sample,
 * #GstTtTensorDataSrc:num-samples), shuffled when #GstTtTensorDataSrc:shuffle is
 * set, then the validation range in file order. The validation range comes
 * from #GstTtTensorDataSrc:validation-location (and its labels) when set,
 * otherwise from the training files, where it must not overlap the training
 * range. Shuffling permutes the training range only, with an order drawn
 * from #GstTtTensorDataSrc:seed and the epoch number: the same seed gives the
 * same orders, and a training and a validation sample never trade places.
 * After #GstTtTensorDataSrc:epochs epochs the element sends EOS. Buffers carry
 * no timestamps; their offset is the sample's position in the stream.
 *
 * The files are checked at start and the samples read from them as they
 * are pushed (a pread of one sample each), so the data set is never held
 * in memory: shuffling permutes indices (4 bytes a sample), the IDX
 * labels (1 byte a sample) are held. A gzipped IDX file is decompressed
 * once, at start, into a temporary file without a name in $TMPDIR (else
 * /tmp), which goes when the element stops or the process dies. A file
 * truncated while the element reads it stops the stream with one error
 * naming it (and no EOS).
 *
 * ## Datarepo files
 *
 * nnstreamer's MLOps data repository (what datareposink writes) keeps the
 * samples in one raw file, back to back, each sample the tensors of its caps
 * back to back, and describes it in a JSON file:
 * `{"gst_caps": "other/tensors, format=(string)static, ...",
 * "total_samples": 1000, "sample_size": 3176}` (sample_size is optional
 * here and checked when present). Set #GstTtTensorDataSrc:json to read
 * #GstTtTensorDataSrc:location that way; a location ending in .data, .dat or
 * .raw whose JSON sits beside it (same name, .json) is recognized without
 * it. The samples go out as the caps say, labels included, one memory per
 * tensor (sharing the one read of the sample). A datarepo of flexible
 * tensors (what datareposink writes from other/tensors,format=flexible:
 * the JSON lists `sample_offset`, `tensor_size` and `tensor_count`, and
 * each tensor in the file is its 128-byte header, then its data) goes out
 * as `other/tensors,format=flexible`, each memory a tensor's header and
 * data, the bytes nnstreamer's datareposrc reads; the headers are checked
 * at start. Ranges, epochs, shuffling and validation work as
 * for IDX files; #GstTtTensorDataSrc:validation-location with
 * #GstTtTensorDataSrc:validation-json (or a JSON beside it) names a second
 * datarepo file of the same caps. label-location, image-format,
 * label-format and num-classes are for IDX files only.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 tensor_datasrc location=train-images-idx3-ubyte.gz \
 *     label-location=train-labels-idx1-ubyte.gz num-samples=50000 \
 *     validation-start-sample=50000 validation-num-samples=10000 \
 *     shuffle=true epochs=3 ! \
 *   tensor_trainer model-config=fmnist_mlp.ini num-training-samples=50000 \
 *     num-validation-samples=10000 epochs=3 ! fakesink
 * ]|
 */
#include "gsttensordatasrc.h"
#include "gsttensordatarepo.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

GST_DEBUG_CATEGORY_STATIC (gst_tensor_datasrc_debug);
#define GST_CAT_DEFAULT gst_tensor_datasrc_debug

#define DEFAULT_LOCATION NULL
#define DEFAULT_LABEL_LOCATION NULL
#define DEFAULT_START_SAMPLE 0
#define DEFAULT_NUM_SAMPLES 0
#define DEFAULT_VALIDATION_LOCATION NULL
#define DEFAULT_VALIDATION_LABEL_LOCATION NULL
#define DEFAULT_VALIDATION_START_SAMPLE 0
#define DEFAULT_VALIDATION_NUM_SAMPLES 0
#define DEFAULT_EPOCHS 1
#define DEFAULT_SHUFFLE FALSE
#define DEFAULT_SEED 0
#define DEFAULT_IMAGE_FORMAT GST_TENSOR_DATASRC_IMAGE_UINT8
#define DEFAULT_LABEL_FORMAT GST_TENSOR_DATASRC_LABEL_ONEHOT
#define DEFAULT_NUM_CLASSES 10
#define DEFAULT_JSON NULL
#define DEFAULT_PUSH_LIST_SIZE 32
#define DEFAULT_VALIDATION_JSON NULL

enum
{
  PROP_0,
  PROP_LOCATION,
  PROP_LABEL_LOCATION,
  PROP_START_SAMPLE,
  PROP_NUM_SAMPLES,
  PROP_VALIDATION_LOCATION,
  PROP_VALIDATION_LABEL_LOCATION,
  PROP_VALIDATION_START_SAMPLE,
  PROP_VALIDATION_NUM_SAMPLES,
  PROP_EPOCHS,
  PROP_SHUFFLE,
  PROP_SEED,
  PROP_IMAGE_FORMAT,
  PROP_LABEL_FORMAT,
  PROP_NUM_CLASSES,
  PROP_JSON,
  PROP_VALIDATION_JSON,
  PROP_PUSH_LIST_SIZE,
};

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("other/tensors, format = (string) static, "
        "framerate = (fraction) 0/1"));

#define GST_TYPE_TENSOR_DATASRC_IMAGE_FORMAT \
  (gst_tensor_datasrc_image_format_get_type ())
static GType
gst_tensor_datasrc_image_format_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_TENSOR_DATASRC_IMAGE_UINT8, "Pixels as stored (uint8)", "uint8"},
    {GST_TENSOR_DATASRC_IMAGE_FLOAT32,
        "Pixels as float32 (uint8 ones divided by 255)", "float32"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstTtTensorDataSrcImageFormat", values));
  return type;
}

#define GST_TYPE_TENSOR_DATASRC_LABEL_FORMAT \
  (gst_tensor_datasrc_label_format_get_type ())
static GType
gst_tensor_datasrc_label_format_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_TENSOR_DATASRC_LABEL_ONEHOT,
        "One-hot float32 vector of num-classes (num-classes:1)", "onehot"},
    {GST_TENSOR_DATASRC_LABEL_INDEX, "Class index as one float32 (1:1)",
        "index"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstTtTensorDataSrcLabelFormat", values));
  return type;
}

#define gst_tensor_datasrc_parent_class parent_class
G_DEFINE_TYPE (GstTtTensorDataSrc, gst_tensor_datasrc, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (tensor_datasrc, "tensor_datasrc",
    GST_RANK_NONE, GST_TYPE_TENSOR_DATASRC,
    GST_DEBUG_CATEGORY_INIT (gst_tensor_datasrc_debug, "tensor_datasrc", 0,
        "tensor_datasrc element"));

static void gst_tensor_datasrc_finalize (GObject * object);
static void gst_tensor_datasrc_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_tensor_datasrc_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstStateChangeReturn gst_tensor_datasrc_change_state (GstElement *
    element, GstStateChange transition);
static gboolean gst_tensor_datasrc_open (GstTtTensorDataSrc * self);
static void gst_tensor_datasrc_set_init (GstTtTensorDataSrcSet * set);
static gboolean gst_tensor_datasrc_stop (GstBaseSrc * src);
static GstCaps *gst_tensor_datasrc_get_caps (GstBaseSrc * src,
    GstCaps * filter);
static gboolean gst_tensor_datasrc_is_seekable (GstBaseSrc * src);
static GstFlowReturn gst_tensor_datasrc_create (GstPushSrc * src,
    GstBuffer ** buf);

static void
gst_tensor_datasrc_class_init (GstTtTensorDataSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *pushsrc_class = GST_PUSH_SRC_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->finalize = gst_tensor_datasrc_finalize;
  gobject_class->set_property = gst_tensor_datasrc_set_property;
  gobject_class->get_property = gst_tensor_datasrc_get_property;

  /* Every property is read when the element goes from READY to PAUSED: a
   * change while PAUSED or PLAYING takes effect at the next start. */

  /**
   * GstTtTensorDataSrc:location:
   *
   * The file the samples come from: an MNIST-format IDX file of images
   * (gzipped or not; uint8 or float32 elements), or the raw
   * data file of an nnstreamer datarepo (see #GstTtTensorDataSrc:json). It
   * is required: without it the element fails to go to PAUSED, with an
   * error saying what to set. The file is opened and checked at
   * READY->PAUSED and read sample by sample until the element stops.
   */
  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "Images location",
          "IDX images file, or a datarepo data file (required)",
          DEFAULT_LOCATION, rw));
  /**
   * GstTtTensorDataSrc:label-location:
   *
   * The IDX file of the labels of #GstTtTensorDataSrc:location: 1-D, uint8
   * class indices, one per image (gzipped or not). Required for IDX
   * images; the two files must hold the same number of samples. Refused
   * for a datarepo file, whose samples carry their labels as tensors.
   */
  g_object_class_install_property (gobject_class, PROP_LABEL_LOCATION,
      g_param_spec_string ("label-location", "Labels location",
          "IDX file of the labels (uint8 class indices), one per image",
          DEFAULT_LABEL_LOCATION, rw));
  /**
   * GstTtTensorDataSrc:start-sample:
   *
   * Index in #GstTtTensorDataSrc:location of the first sample of the
   * training range. It must lie inside the file; the range is
   * #GstTtTensorDataSrc:num-samples samples from here.
   */
  g_object_class_install_property (gobject_class, PROP_START_SAMPLE,
      g_param_spec_uint ("start-sample", "Start sample",
          "Index of the first training sample in the files", 0, G_MAXUINT,
          DEFAULT_START_SAMPLE, rw));
  /**
   * GstTtTensorDataSrc:num-samples:
   *
   * Samples in the training range, pushed in each epoch, from
   * #GstTtTensorDataSrc:start-sample on. 0 (the default) takes every sample
   * to the end of the file. A range that does not fit the file fails the
   * start, naming both. Match it with tensor_trainer's
   * num-training-samples.
   */
  g_object_class_install_property (gobject_class, PROP_NUM_SAMPLES,
      g_param_spec_uint ("num-samples", "Number of samples",
          "Training samples per epoch; 0: all to the end of the file", 0,
          G_MAXUINT, DEFAULT_NUM_SAMPLES, rw));
  /**
   * GstTtTensorDataSrc:validation-location:
   *
   * A second file of the validation samples, pushed after the training
   * range in each epoch, in file order: IDX images (with
   * #GstTtTensorDataSrc:validation-label-location), or a datarepo data file
   * (with #GstTtTensorDataSrc:validation-json or a .json beside it). Its
   * samples must have the type and size of the training samples (for
   * datarepo files: the same caps). Unset (the default), the validation
   * range, if any, is taken from #GstTtTensorDataSrc:location, where it
   * must not overlap the training range.
   */
  g_object_class_install_property (gobject_class, PROP_VALIDATION_LOCATION,
      g_param_spec_string ("validation-location", "Validation images",
          "Separate IDX images or datarepo file of the validation samples",
          DEFAULT_VALIDATION_LOCATION, rw));
  /**
   * GstTtTensorDataSrc:validation-label-location:
   *
   * The IDX labels of #GstTtTensorDataSrc:validation-location, as
   * #GstTtTensorDataSrc:label-location is for the training images. Set both
   * or neither; refused for datarepo files.
   */
  g_object_class_install_property (gobject_class,
      PROP_VALIDATION_LABEL_LOCATION,
      g_param_spec_string ("validation-label-location", "Validation labels",
          "IDX labels of validation-location (set both or neither)",
          DEFAULT_VALIDATION_LABEL_LOCATION, rw));
  /**
   * GstTtTensorDataSrc:validation-start-sample:
   *
   * Index of the first validation sample, in
   * #GstTtTensorDataSrc:validation-location when it is set, else in
   * #GstTtTensorDataSrc:location.
   */
  g_object_class_install_property (gobject_class,
      PROP_VALIDATION_START_SAMPLE,
      g_param_spec_uint ("validation-start-sample", "Validation start",
          "Index of the first validation sample in its files", 0, G_MAXUINT,
          DEFAULT_VALIDATION_START_SAMPLE, rw));
  /**
   * GstTtTensorDataSrc:validation-num-samples:
   *
   * Validation samples pushed after the training range of each epoch.
   * Without #GstTtTensorDataSrc:validation-location, 0 (the default) means
   * no validation, and the range [validation-start-sample,
   * validation-start-sample + validation-num-samples) of
   * #GstTtTensorDataSrc:location must not overlap the training range
   * (validation samples would be trained on). With it, 0 means every
   * sample of that file from #GstTtTensorDataSrc:validation-start-sample
   * on. Match it with tensor_trainer's num-validation-samples.
   */
  g_object_class_install_property (gobject_class,
      PROP_VALIDATION_NUM_SAMPLES,
      g_param_spec_uint ("validation-num-samples", "Validation samples",
          "Validation samples per epoch; 0: none, or all of "
          "validation-location", 0, G_MAXUINT, DEFAULT_VALIDATION_NUM_SAMPLES,
          rw));
  /**
   * GstTtTensorDataSrc:epochs:
   *
   * How many times the training range, then the validation range, are
   * pushed; EOS follows the last. Match it with tensor_trainer's epochs.
   */
  g_object_class_install_property (gobject_class, PROP_EPOCHS,
      g_param_spec_uint ("epochs", "Epochs",
          "Times the ranges are pushed before EOS", 1, G_MAXUINT,
          DEFAULT_EPOCHS, rw));
  /**
   * GstTtTensorDataSrc:shuffle:
   *
   * Push the training range in a new random order in each epoch, drawn
   * from #GstTtTensorDataSrc:seed and the epoch number. Only the training
   * range is permuted: the validation range stays in file order, and a
   * training and a validation sample never trade places.
   */
  g_object_class_install_property (gobject_class, PROP_SHUFFLE,
      g_param_spec_boolean ("shuffle", "Shuffle",
          "Shuffle the training range anew in each epoch", DEFAULT_SHUFFLE,
          rw));
  /**
   * GstTtTensorDataSrc:seed:
   *
   * Seed of the shuffling (#GstTtTensorDataSrc:shuffle): an epoch's order is
   * a function of the seed and the epoch number only, so one seed gives
   * the same orders on every run, and each epoch its own.
   */
  g_object_class_install_property (gobject_class, PROP_SEED,
      g_param_spec_uint64 ("seed", "Seed",
          "Seed of the shuffling: the same seed, the same orders", 0,
          G_MAXUINT64, DEFAULT_SEED, rw));
  /**
   * GstTtTensorDataSrc:image-format:
   *
   * The type of the image tensor of IDX files. uint8 (the default) pushes
   * the pixels as stored; float32 divides uint8 pixels by
   * 255 into [0, 1]. Files of float32 images need float32, and are pushed
   * as stored. For datarepo files only the default is accepted: their
   * tensors go out as their JSON describes them.
   */
  g_object_class_install_property (gobject_class, PROP_IMAGE_FORMAT,
      g_param_spec_enum ("image-format", "Image format",
          "Type of the IDX image tensor: uint8 as stored, or float32",
          GST_TYPE_TENSOR_DATASRC_IMAGE_FORMAT, DEFAULT_IMAGE_FORMAT, rw));
  /**
   * GstTtTensorDataSrc:label-format:
   *
   * The form of the label tensor of IDX files: onehot (the default), a
   * float32 vector of #GstTtTensorDataSrc:num-classes with a 1 at the class
   * (dimensions num-classes:1), or index, the class index as one
   * float32 (1:1). tensor_trainer and tensor_predictor take either.
   * For datarepo files only the default is accepted.
   */
  g_object_class_install_property (gobject_class, PROP_LABEL_FORMAT,
      g_param_spec_enum ("label-format", "Label format",
          "Form of the IDX label tensor: one-hot vector or class index",
          GST_TYPE_TENSOR_DATASRC_LABEL_FORMAT, DEFAULT_LABEL_FORMAT, rw));
  /**
   * GstTtTensorDataSrc:num-classes:
   *
   * The length of a one-hot label (#GstTtTensorDataSrc:label-format=onehot),
   * the model's output units. Every label of the ranges pushed must be
   * below it, or the start fails naming the first that is not. Not used
   * for class-index labels or datarepo files.
   */
  g_object_class_install_property (gobject_class, PROP_NUM_CLASSES,
      g_param_spec_uint ("num-classes", "Number of classes",
          "Length of a one-hot label; every label must be below it", 1, 65535,
          DEFAULT_NUM_CLASSES, rw));
  /**
   * GstTtTensorDataSrc:json:
   *
   * The nnstreamer datarepo description of #GstTtTensorDataSrc:location
   * (`gst_caps`, `total_samples`, optional `sample_size`), which then
   * holds raw samples back to back: each the static tensors of the caps,
   * labels included, pushed as one memory per tensor. For flexible tensors the JSON also lists `sample_offset`,
   * `tensor_size` and `tensor_count`, and each memory is a tensor's
   * header and data. Unset (the default), a location ending in .data, .dat
   * or .raw with a .json of the same name beside it is read that way, any
   * other as IDX images.
   */
  g_object_class_install_property (gobject_class, PROP_JSON,
      g_param_spec_string ("json", "Datarepo JSON",
          "nnstreamer datarepo JSON describing location's samples",
          DEFAULT_JSON, rw));
  /**
   * GstTtTensorDataSrc:validation-json:
   *
   * The datarepo description of #GstTtTensorDataSrc:validation-location;
   * its caps must equal the training file's. Unset (the default): the
   * .json beside validation-location.
   */
  g_object_class_install_property (gobject_class, PROP_VALIDATION_JSON,
      g_param_spec_string ("validation-json", "Validation datarepo JSON",
          "datarepo JSON of validation-location (default: the one beside it)",
          DEFAULT_VALIDATION_JSON, rw));
  /**
   * GstTtTensorDataSrc:push-list-size:
   *
   * Samples pushed at once, as a buffer list in which each sample is
   * still its own buffer. Elements that take lists, such as
   * tensor_trainer, then pay the per-push costs once per list; the others
   * receive the buffers one by one. 1 pushes each buffer alone.
   */
  g_object_class_install_property (gobject_class, PROP_PUSH_LIST_SIZE,
      g_param_spec_uint ("push-list-size", "Push list size",
          "Samples pushed at once as a buffer list; 1: one buffer per push",
          1, 1024, DEFAULT_PUSH_LIST_SIZE, rw));

  gst_element_class_set_static_metadata (element_class, "Tensor data source",
      "Source/Tensor",
      "Pushes the samples of MNIST-format IDX image and label files, or of "
      "nnstreamer datarepo files, as other/tensors, by epochs, ranges and "
      "seeded shuffles", "tensor-trainer project");
  gst_element_class_add_static_pad_template (element_class, &src_template);

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_tensor_datasrc_change_state);
  basesrc_class->stop = GST_DEBUG_FUNCPTR (gst_tensor_datasrc_stop);
  basesrc_class->get_caps = GST_DEBUG_FUNCPTR (gst_tensor_datasrc_get_caps);
  basesrc_class->is_seekable =
      GST_DEBUG_FUNCPTR (gst_tensor_datasrc_is_seekable);
  pushsrc_class->create = GST_DEBUG_FUNCPTR (gst_tensor_datasrc_create);

  gst_type_mark_as_plugin_api (GST_TYPE_TENSOR_DATASRC_IMAGE_FORMAT, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_TENSOR_DATASRC_LABEL_FORMAT, 0);
}

static void
gst_tensor_datasrc_init (GstTtTensorDataSrc * self)
{
  self->start_sample = DEFAULT_START_SAMPLE;
  self->num_samples = DEFAULT_NUM_SAMPLES;
  self->validation_start_sample = DEFAULT_VALIDATION_START_SAMPLE;
  self->validation_num_samples = DEFAULT_VALIDATION_NUM_SAMPLES;
  self->epochs = DEFAULT_EPOCHS;
  self->shuffle = DEFAULT_SHUFFLE;
  self->seed = DEFAULT_SEED;
  self->image_format = DEFAULT_IMAGE_FORMAT;
  self->label_format = DEFAULT_LABEL_FORMAT;
  self->num_classes = DEFAULT_NUM_CLASSES;
  self->push_list_size = DEFAULT_PUSH_LIST_SIZE;
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
  gst_base_src_set_live (GST_BASE_SRC (self), FALSE);
  gst_tensor_datasrc_set_init (&self->train);
  gst_tensor_datasrc_set_init (&self->valid);
}

/* ---- start / stop ---------------------------------------------------- */

/* A set with no file open. */
static void
gst_tensor_datasrc_set_init (GstTtTensorDataSrcSet * set)
{
  memset (set, 0, sizeof *set);
  tt_idx_file_init (&set->images);
  set->repo.fd = -1;
}

static void
gst_tensor_datasrc_set_clear (GstTtTensorDataSrcSet * set)
{
  tt_idx_file_close (&set->images);
  g_free (set->labels);
  if (set->repo.fd >= 0)
    close (set->repo.fd);
  g_free (set->repo.path);
  g_free (set->repo.sample_offsets);
  g_free (set->repo.first_tensor);
  g_free (set->repo.tensor_sizes);
  gst_tensor_datasrc_set_init (set);
}

static void
gst_tensor_datasrc_store_free (gpointer data)
{
  GstTtTensorDataSrcStore *store = data;
  g_free (store->labels_f32);
}

static void
gst_tensor_datasrc_store_release (gpointer store)
{
  g_atomic_rc_box_release_full (store, gst_tensor_datasrc_store_free);
}

/* Builds the shared label table. */
static void
gst_tensor_datasrc_make_store (GstTtTensorDataSrc * self)
{
  GstTtTensorDataSrcStore *store =
      g_atomic_rc_box_new0 (GstTtTensorDataSrcStore);
  const gboolean onehot =
      self->out_label_format == GST_TENSOR_DATASRC_LABEL_ONEHOT;
  store->label_floats = onehot ? self->classes : 1;
  store->labels_f32 = g_new0 (gfloat, 256 * store->label_floats);
  for (guint v = 0; v < 256; v++) {
    if (onehot && v < self->classes)
      store->labels_f32[v * store->label_floats + v] = 1.0f;
    else if (!onehot)
      store->labels_f32[v] = (gfloat) v;
  }
  self->store = store;
}

/* A read-only memory over size bytes of the store at data. */
static GstMemory *
gst_tensor_datasrc_wrap (GstTtTensorDataSrc * self, const void *data,
    gsize size)
{
  return gst_memory_new_wrapped (GST_MEMORY_FLAG_READONLY, (gpointer) data,
      size, 0, size, g_atomic_rc_box_acquire (self->store),
      gst_tensor_datasrc_store_release);
}

/* Loads a file pair and checks it; FALSE after posting an error. */
static gboolean
gst_tensor_datasrc_load_pair (GstTtTensorDataSrc * self, const gchar * images,
    const gchar * labels, const gchar * prefix, GstTtTensorDataSrcSet * set)
{
  char err[1024];
  if (!images || !*images) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("%slocation is not set: it names the IDX images file%s.", prefix,
            *prefix ? "" : " (or, with json=, a datarepo file)"), (NULL));
    return FALSE;
  }
  if (!labels || !*labels) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("%slabel-location is not set: the IDX images of %slocation=%s need "
            "their labels file (e.g. train-labels-idx1-ubyte.gz beside "
            "train-images-idx3-ubyte.gz).", prefix, prefix, images), (NULL));
    return FALSE;
  }
  /* the images stay open and are read as they are pushed; the labels,
   * a byte a sample, are read whole */
  tt_idx_file lf;
  gboolean ok;
  if (tt_idx_file_open (images, &set->images, err, sizeof err) != 0
      || tt_idx_file_open (labels, &lf, err, sizeof err) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", err), (NULL));
    return FALSE;
  }
  if (tt_idx_file_check_pair (&set->images, &lf, err, sizeof err) != 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("%s and %s: %s", images,
            labels, err), (NULL));
    tt_idx_file_close (&lf);
    return FALSE;
  }
  set->labels = g_malloc (MAX (lf.count, 1));
  ok = tt_idx_file_read (&lf, 0, lf.count, set->labels, err, sizeof err) == 0;
  tt_idx_file_close (&lf);
  if (!ok) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err), (NULL));
    return FALSE;
  }
  if (set->images.ndims < 2) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("%s: a 1-D IDX file holds no images.", images), (NULL));
    return FALSE;
  }
  if (set->images.type != TT_IDX_UINT8 && set->images.type != TT_IDX_FLOAT32) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("%s: IDX element type 0x%02x; only uint8 (0x08) and float32 (0x0D) "
            "images are supported.", images, set->images.type), (NULL));
    return FALSE;
  }
  set->total = set->images.count;
  return TRUE;
}

/* Sets the range [start, start + num) of set, num 0 meaning to the end. */
static gboolean
gst_tensor_datasrc_set_range (GstTtTensorDataSrc * self,
    GstTtTensorDataSrcSet * set, const gchar * file, const gchar * what,
    guint start, guint num)
{
  const gsize total = set->total;
  if (start >= total || (num && num > total - start)) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("The %s range (start %u, %u samples) does not fit the %"
            G_GSIZE_FORMAT " samples of %s.", what, start, num, total, file),
        (NULL));
    return FALSE;
  }
  set->start = start;
  set->count = num ? num : (guint) (total - start);
  return TRUE;
}

static gboolean
gst_tensor_datasrc_check_labels (GstTtTensorDataSrc * self,
    const GstTtTensorDataSrcSet * set, const gchar * file)
{
  for (guint i = set->start; i < set->start + set->count; i++)
    if (set->labels[i] >= self->classes) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("%s: label %u of sample %u is not below num-classes=%u.", file,
              set->labels[i], i, self->classes), (NULL));
      return FALSE;
    }
  return TRUE;
}

/* ---- datarepo files -------------------------------------------------- */

/* The JSON of a datarepo location: json if set, else for a .data, .dat or
 * .raw file the .json beside it when it exists; NULL: an IDX file. */
static gchar *
gst_tensor_datasrc_repo_json (const gchar * location, const gchar * json)
{
  static const gchar *exts[] = { ".data", ".dat", ".raw" };
  if (json && *json)
    return g_strdup (json);
  if (!location)
    return NULL;
  for (guint i = 0; i < G_N_ELEMENTS (exts); i++) {
    gsize n = strlen (location), e = strlen (exts[i]);
    if (n > e && g_ascii_strcasecmp (location + n - e, exts[i]) == 0) {
      gchar *stem = g_strndup (location, n - e);
      gchar *path = g_strconcat (stem, ".json", NULL);
      g_free (stem);
      if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
        return path;
      g_free (path);
    }
  }
  return NULL;
}

/* A flexible datarepo file against its JSON: the file ends where the
 * last sample does, and every tensor's header is one nnstreamer writes
 * and describes as many bytes as tensor_size says. FALSE after posting an
 * error naming the file, the sample and the tensor. */
static gboolean
gst_tensor_datasrc_check_flexible (GstTtTensorDataSrc * self,
    const gchar * data, const gchar * json, const GstTensorDataRepoInfo * info,
    const GstTtTensorDataSrcRepo * repo, gsize length)
{
  guint8 header[GST_TENSOR_META_HEADER_SIZE];
  char err[1024];

  if (length != info->data_end) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("%s holds %" G_GSIZE_FORMAT " bytes, but the samples %s describes "
            "end at byte %" G_GUINT64_FORMAT ".", data, length, json,
            info->data_end), (NULL));
    return FALSE;
  }
  for (guint i = 0; i < info->total; i++) {
    gsize at = (gsize) repo->sample_offsets[i];
    for (guint j = repo->first_tensor[i]; j < repo->first_tensor[i + 1]; j++) {
      GstTensorDesc t;
      gchar *why = NULL;
      const gsize size = repo->tensor_sizes[j];
      if (tt_data_read_at (repo->fd, data, at, header, sizeof header, err,
              sizeof err) != 0) {
        GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err), (NULL));
        return FALSE;
      }
      if (!gst_tensor_meta_parse (header, &t, &why)) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT,
            ("%s: sample %u, tensor %u (byte %" G_GSIZE_FORMAT "): the "
                "flexible tensor header is wrong: %s", data, i,
                j - repo->first_tensor[i], at, why), (NULL));
        g_free (why);
        return FALSE;
      }
      if (gst_tensor_desc_bytes (&t) != size - GST_TENSOR_META_HEADER_SIZE) {
        gchar *dims = gst_tensor_desc_dims_string (&t);
        GST_ELEMENT_ERROR (self, STREAM, FORMAT,
            ("%s: sample %u, tensor %u (byte %" G_GSIZE_FORMAT "): its "
                "header describes %s %s, %" G_GSIZE_FORMAT " bytes, but %s "
                "gives it %" G_GSIZE_FORMAT " bytes after the header.", data,
                i, j - repo->first_tensor[i], at, dims,
                gst_tensor_type_name (t.type), gst_tensor_desc_bytes (&t),
                json, size - GST_TENSOR_META_HEADER_SIZE), (NULL));
        g_free (dims);
        return FALSE;
      }
      at += size;
    }
  }
  return TRUE;
}

/* Reads a datarepo JSON and opens its data file into set; FALSE after
 * posting an error naming the file and the field. */
static gboolean
gst_tensor_datasrc_load_repo (GstTtTensorDataSrc * self, const gchar * data,
    const gchar * json, GstTtTensorDataSrcSet * set)
{
  GError *gerr = NULL;
  gchar *text = NULL, *why = NULL;
  gsize text_len, length;
  GStatBuf st;
  GstTensorDataRepoInfo info;
  GstTensorDataRepoStatus status;
  GstTtTensorDataSrcRepo *repo = &set->repo;
  gboolean ok = FALSE;

  if (!data || !*data) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No location set for the datarepo data of %s.", json), (NULL));
    goto out;
  }
  if (!g_file_get_contents (json, &text, &text_len, &gerr)) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Cannot read the datarepo JSON %s: %s", json, gerr->message), (NULL));
    goto out;
  }
  status = gst_tensor_datarepo_parse (text, (gssize) text_len, &info, &why);
  /* the set owns the flexible arrays from here, whatever happens */
  repo->sample_offsets = g_steal_pointer (&info.sample_offsets);
  repo->first_tensor = g_steal_pointer (&info.first_tensor);
  repo->tensor_sizes = g_steal_pointer (&info.tensor_sizes);
  if (status == GST_TENSOR_DATAREPO_ERROR_SYNTAX) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Cannot read the datarepo JSON %s: %s", json, why), (NULL));
    goto out;
  }
  if (status != GST_TENSOR_DATAREPO_OK) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("%s: %s", json, why), (NULL));
    goto out;
  }
  repo->desc = info.desc;
  repo->sample_size = info.sample_size;
  memcpy (repo->offsets, info.offsets, sizeof repo->offsets);
  memcpy (repo->sizes, info.sizes, sizeof repo->sizes);
  repo->path = g_strdup (data);
  repo->fd = g_open (data, O_RDONLY | O_CLOEXEC, 0);
  if (repo->fd < 0 || fstat (repo->fd, &st) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("Cannot read %s: %s",
            data, g_strerror (errno)), (NULL));
    goto out;
  }
  if (!S_ISREG (st.st_mode)) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("Cannot read %s: not a "
            "regular file.", data), (NULL));
    goto out;
  }
  length = (gsize) st.st_size;
  if (info.desc.format == GST_TENSOR_FORMAT_FLEXIBLE) {
    if (!gst_tensor_datasrc_check_flexible (self, data, json, &info, repo,
            length))
      goto out;
  } else if (length != (gsize) info.total * repo->sample_size) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("%s holds %" G_GSIZE_FORMAT " bytes, but %s describes %"
            G_GUINT64_FORMAT " samples of %" G_GSIZE_FORMAT " bytes (%"
            G_GUINT64_FORMAT ").", data, length, json, info.total,
            repo->sample_size, info.total * repo->sample_size), (NULL));
    goto out;
  }
  set->total = (gsize) info.total;
  ok = TRUE;
out:
  g_clear_error (&gerr);
  g_free (why);
  g_free (text);
  return ok;
}

/* start() for datarepo files: the caps are the JSON's. */
static gboolean
gst_tensor_datasrc_start_repo (GstTtTensorDataSrc * self, const gchar * loc,
    const gchar * json, const gchar * lab, const gchar * vloc,
    const gchar * vjson_prop, const gchar * vlab, guint start, guint num,
    guint vstart, guint vnum)
{
  gchar *vjson = NULL;
  gboolean ok = FALSE;

  if ((lab && *lab) || (vlab && *vlab)) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("label-location and validation-label-location are for IDX files: "
            "the samples of datarepo file %s carry their labels as tensors.",
            loc), (NULL));
    return FALSE;
  }
  if (self->out_image_format != DEFAULT_IMAGE_FORMAT
      || self->out_label_format != DEFAULT_LABEL_FORMAT) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("image-format and label-format are for IDX files: the tensors of "
            "datarepo file %s go out as %s describes them.", loc, json),
        (NULL));
    return FALSE;
  }
  if (!gst_tensor_datasrc_load_repo (self, loc, json, &self->train)
      || !gst_tensor_datasrc_set_range (self, &self->train, loc, "training",
          start, num))
    goto out;

  self->valid_shares_files = !vloc || !*vloc;
  if (!self->valid_shares_files) {
    vjson = gst_tensor_datasrc_repo_json (vloc, vjson_prop);
    if (!vjson) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("validation-location %s needs validation-json (no .json beside "
              "it).", vloc), (NULL));
      goto out;
    }
    if (!gst_tensor_datasrc_load_repo (self, vloc, vjson, &self->valid)
        || !gst_tensor_datasrc_set_range (self, &self->valid, vloc,
            "validation", vstart, vnum))
      goto out;
    if (!gst_tensors_desc_equal (&self->valid.repo.desc,
            &self->train.repo.desc)) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("%s and %s describe tensors of different shapes or types.", json,
              vjson), (NULL));
      goto out;
    }
  } else if (vnum > 0) {
    const GstTtTensorDataSrcSet *t = &self->train;
    if (vstart >= t->total || vnum > t->total - vstart) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("The validation range (start %u, %u samples) does not fit the %"
              G_GSIZE_FORMAT " samples of %s.", vstart, vnum, t->total, loc),
          (NULL));
      goto out;
    }
    if (vstart < t->start + t->count && t->start < vstart + vnum) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("The validation range [%u, %u) overlaps the training range "
              "[%u, %u) of %s: validation samples would be trained on.",
              vstart, vstart + vnum, t->start, t->start + t->count, loc),
          (NULL));
      goto out;
    }
    self->valid.start = vstart;
    self->valid.count = vnum;
  }
  {
    GstCaps *caps = gst_tensors_desc_to_caps (&self->train.repo.desc, 0, 1);
    GST_OBJECT_LOCK (self);
    gst_caps_take (&self->caps, caps);
    GST_OBJECT_UNLOCK (self);
  }
  self->order = g_new (guint32, MAX (self->train.count, 1));
  self->order_epoch = G_MAXUINT;
  self->position = 0;
  GST_INFO_OBJECT (self, "datarepo %s (%s): %u epoch(s) of %u training "
      "samples from %u and %u validation samples from %u; caps %"
      GST_PTR_FORMAT, loc, json, self->n_epochs, self->train.count,
      self->train.start, self->valid.count, self->valid.start, self->caps);
  ok = TRUE;
out:
  g_free (vjson);
  return ok;
}

/* One sample of a datarepo file, read from it: one memory of the
 * sample's bytes (one pread), a shared sub-memory per tensor; NULL after
 * posting an error when the file cannot be read (it shrank under us). */
static GstBuffer *
gst_tensor_datasrc_repo_sample (GstTtTensorDataSrc * self,
    const GstTtTensorDataSrcSet * set, guint index)
{
  const GstTtTensorDataSrcRepo *repo = &set->repo;
  const gboolean flexible = repo->desc.format == GST_TENSOR_FORMAT_FLEXIBLE;
  guint64 at;
  gsize bytes = 0;
  GstMemory *mem;
  GstMapInfo map;
  GstBuffer *out;
  char err[1024];
  gboolean ok;

  if (flexible) {
    at = repo->sample_offsets[index];
    for (guint j = repo->first_tensor[index];
        j < repo->first_tensor[index + 1]; j++)
      bytes += repo->tensor_sizes[j];
  } else {
    at = (guint64) index *repo->sample_size;
    bytes = repo->sample_size;
  }
  mem = gst_allocator_alloc (NULL, bytes, NULL);
  gst_memory_map (mem, &map, GST_MAP_WRITE);
  ok = tt_data_read_at (repo->fd, repo->path, at, map.data, bytes, err,
      sizeof err) == 0;
  gst_memory_unmap (mem, &map);
  if (!ok) {
    gst_memory_unref (mem);
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err), (NULL));
    return NULL;
  }
  out = gst_buffer_new ();
  if (flexible) {
    /* header and data of each tensor, as datareposrc reads them */
    gsize off = 0;
    for (guint j = repo->first_tensor[index];
        j < repo->first_tensor[index + 1]; j++) {
      gst_buffer_append_memory (out, gst_memory_share (mem, off,
              repo->tensor_sizes[j]));
      off += repo->tensor_sizes[j];
    }
  } else {
    for (guint i = 0; i < repo->desc.num; i++)
      gst_buffer_append_memory (out, gst_memory_share (mem, repo->offsets[i],
              repo->sizes[i]));
  }
  gst_memory_unref (mem);
  return out;
}

/* Reads and checks the files (at READY->PAUSED). */
static gboolean
gst_tensor_datasrc_open (GstTtTensorDataSrc * self)
{
  gchar *loc, *lab, *vloc, *vlab, *json, *vjson;
  guint start, num, vstart, vnum;
  GstTensorsDesc desc;
  GstTensorDesc *image = &desc.tensors[0], *label = &desc.tensors[1];
  const tt_idx_file *im;
  gboolean ok = FALSE;

  GST_OBJECT_LOCK (self);
  loc = g_strdup (self->location);
  lab = g_strdup (self->label_location);
  vloc = g_strdup (self->validation_location);
  vlab = g_strdup (self->validation_label_location);
  json = gst_tensor_datasrc_repo_json (self->location, self->json);
  vjson = g_strdup (self->validation_json);
  start = self->start_sample;
  num = self->num_samples;
  vstart = self->validation_start_sample;
  vnum = self->validation_num_samples;
  self->n_epochs = self->epochs;
  self->do_shuffle = self->shuffle;
  self->rng_seed = self->seed;
  self->out_image_format = self->image_format;
  self->out_label_format = self->label_format;
  self->classes = self->num_classes;
  self->list_size = self->push_list_size;
  GST_OBJECT_UNLOCK (self);

  self->repo_mode = json != NULL;
  if (self->repo_mode) {
    ok = gst_tensor_datasrc_start_repo (self, loc, json, lab, vloc, vjson,
        vlab, start, num, vstart, vnum);
    goto out;
  }
  if (!gst_tensor_datasrc_load_pair (self, loc, lab, "", &self->train)
      || !gst_tensor_datasrc_set_range (self, &self->train, loc, "training",
          start, num))
    goto out;
  if (self->out_label_format == GST_TENSOR_DATASRC_LABEL_ONEHOT
      && !gst_tensor_datasrc_check_labels (self, &self->train, lab))
    goto out;

  self->valid_shares_files = !vloc && !vlab;
  if (!self->valid_shares_files) {
    if (!gst_tensor_datasrc_load_pair (self, vloc, vlab, "validation-",
            &self->valid)
        || !gst_tensor_datasrc_set_range (self, &self->valid, vloc,
            "validation", vstart, vnum))
      goto out;
    if (self->valid.images.type != self->train.images.type
        || memcmp (self->valid.images.dims + 1, self->train.images.dims + 1,
            3 * sizeof (guint32))) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("%s and %s hold images of different types or sizes.", vloc, loc),
          (NULL));
      goto out;
    }
  } else if (vnum > 0) {
    /* the validation range reads the training files: keep them apart */
    self->valid.start = vstart;
    if (vstart >= self->train.images.count
        || vnum > self->train.images.count - vstart) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("The validation range (start %u, %u samples) does not fit the %"
              G_GSIZE_FORMAT " samples of %s.", vstart, vnum,
              self->train.images.count, loc), (NULL));
      goto out;
    }
    self->valid.count = vnum;
    if (vstart < self->train.start + self->train.count
        && self->train.start < vstart + vnum) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("The validation range [%u, %u) overlaps the training range "
              "[%u, %u) of %s: validation samples would be trained on.",
              vstart, vstart + vnum, self->train.start,
              self->train.start + self->train.count, loc), (NULL));
      goto out;
    }
  }
  if (self->valid.count > 0
      && self->out_label_format == GST_TENSOR_DATASRC_LABEL_ONEHOT) {
    /* a view of the validation range, in whichever files hold it */
    GstTtTensorDataSrcSet view = self->valid_shares_files ? self->train :
        self->valid;
    view.start = self->valid.start;
    view.count = self->valid.count;
    if (!gst_tensor_datasrc_check_labels (self, &view,
            self->valid_shares_files ? lab : vlab))
      goto out;
  }

  im = &self->train.images;
  if (im->type == TT_IDX_FLOAT32
      && self->out_image_format == GST_TENSOR_DATASRC_IMAGE_UINT8) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("%s holds float32 images: set image-format=float32.", loc), (NULL));
    goto out;
  }

  /* dimensions innermost first; a 2-D image gets tensor_converter's
   * channel 1 in front, as a GRAY8 frame would */
  memset (&desc, 0, sizeof desc);
  desc.num = 2;
  image->rank = 0;
  if (im->ndims == 3)
    image->dims[image->rank++] = 1;
  for (gint d = im->ndims - 1; d >= 1; d--)
    image->dims[image->rank++] = im->dims[d];
  while (image->rank < 4)
    image->dims[image->rank++] = 1;
  image->type = self->out_image_format == GST_TENSOR_DATASRC_IMAGE_UINT8 ?
      GST_TENSOR_TYPE_UINT8 : GST_TENSOR_TYPE_FLOAT32;
  label->rank = 4;
  label->dims[0] = self->out_label_format == GST_TENSOR_DATASRC_LABEL_ONEHOT ?
      self->classes : 1;
  label->dims[1] = label->dims[2] = label->dims[3] = 1;
  label->type = GST_TENSOR_TYPE_FLOAT32;
  self->image_bytes = gst_tensor_desc_bytes (image);
  {
    /* get_caps may run in another thread: the caps are read under lock */
    GstCaps *caps = gst_tensors_desc_to_caps (&desc, 0, 1);
    GST_OBJECT_LOCK (self);
    gst_caps_take (&self->caps, caps);
    GST_OBJECT_UNLOCK (self);
  }

  gst_tensor_datasrc_make_store (self);
  self->scratch = g_malloc ((gsize) MAX (self->list_size, 1) * im->item_bytes);
  self->order = g_new (guint32, MAX (self->train.count, 1));
  self->order_epoch = G_MAXUINT;
  self->position = 0;
  GST_INFO_OBJECT (self, "%u epoch(s) of %u training samples from %u and %u "
      "validation samples from %u; caps %" GST_PTR_FORMAT, self->n_epochs,
      self->train.count, self->train.start, self->valid.count,
      self->valid.start, self->caps);
  ok = TRUE;
out:
  g_free (loc);
  g_free (lab);
  g_free (vloc);
  g_free (vlab);
  g_free (json);
  g_free (vjson);
  if (!ok)
    gst_tensor_datasrc_stop (GST_BASE_SRC (self));
  return ok;
}

/* The files are opened here rather than in GstBaseSrc's start(): a start()
 * that fails makes the base class post a second, generic error ("failed
 * to post a proper error message") after the element's own. */
static GstStateChangeReturn
gst_tensor_datasrc_change_state (GstElement * element,
    GstStateChange transition)
{
  GstTtTensorDataSrc *self = GST_TENSOR_DATASRC (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED
      && !gst_tensor_datasrc_open (self))
    return GST_STATE_CHANGE_FAILURE;
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE
      && transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    gst_tensor_datasrc_stop (GST_BASE_SRC (self));
  return ret;
}

static gboolean
gst_tensor_datasrc_stop (GstBaseSrc * src)
{
  GstTtTensorDataSrc *self = GST_TENSOR_DATASRC (src);
  if (self->store) {
    /* buffers still out keep the label table alive */
    gst_tensor_datasrc_store_release (self->store);
    self->store = NULL;
  }
  g_clear_pointer (&self->scratch, g_free);
  gst_tensor_datasrc_set_clear (&self->train);
  gst_tensor_datasrc_set_clear (&self->valid);
  g_clear_pointer (&self->order, g_free);
  GST_OBJECT_LOCK (self);
  gst_caps_replace (&self->caps, NULL);
  GST_OBJECT_UNLOCK (self);
  self->position = 0;
  return TRUE;
}

static GstCaps *
gst_tensor_datasrc_get_caps (GstBaseSrc * src, GstCaps * filter)
{
  GstTtTensorDataSrc *self = GST_TENSOR_DATASRC (src);
  GstCaps *caps;

  GST_OBJECT_LOCK (self);
  caps = self->caps ? gst_caps_ref (self->caps) :
      gst_pad_get_pad_template_caps (GST_BASE_SRC_PAD (src));
  GST_OBJECT_UNLOCK (self);
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, caps,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (caps);
    caps = tmp;
  }
  return caps;
}

static gboolean
gst_tensor_datasrc_is_seekable (GstBaseSrc * src)
{
  (void) src;
  return FALSE;
}

/* ---- samples --------------------------------------------------------- */

/* splitmix64: small, fast and good enough to draw permutations */
static guint64
gst_tensor_datasrc_next_random (guint64 * state)
{
  guint64 z = (*state += G_GUINT64_CONSTANT (0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* The training order of an epoch: a function of the seed and the epoch
 * only, so a run can be repeated. */
static void
gst_tensor_datasrc_draw_order (GstTtTensorDataSrc * self, guint epoch)
{
  const guint n = self->train.count;
  guint64 state = self->rng_seed ^ ((guint64) epoch *
      G_GUINT64_CONSTANT (0xd1b54a32d192ed03));

  for (guint i = 0; i < n; i++)
    self->order[i] = i;
  if (self->do_shuffle)
    for (guint i = n - 1; i > 0; i--) {
      guint j = (guint) (gst_tensor_datasrc_next_random (&state) % (i + 1));
      guint32 t = self->order[i];
      self->order[i] = self->order[j];
      self->order[j] = t;
    }
  self->order_epoch = epoch;
}

/* The samples from position on that lie one after the other in one file
 * and one range (training or validation) of one epoch, up to max (>= 1,
 * not past the end): read with one pread into one memory they share, each
 * a buffer in out. The shuffled training range mostly gives runs of 1,
 * file order runs of max. Returns how many, 0 after posting an error
 * when the file cannot be read (it was truncated under us). */
static guint
gst_tensor_datasrc_make_samples (GstTtTensorDataSrc * self, guint max,
    GstBuffer ** out)
{
  const guint64 per_epoch = (guint64) self->train.count + self->valid.count;
  const guint epoch = (guint) (self->position / per_epoch);
  const guint64 k = self->position % per_epoch;
  const GstTtTensorDataSrcSet *set = &self->train;
  const tt_idx_file *images = NULL;
  const gboolean to_float = !self->repo_mode
      && self->out_image_format == GST_TENSOR_DATASRC_IMAGE_FLOAT32
      && set->images.type == TT_IDX_UINT8;
  GstMemory *mem;
  GstMapInfo map;
  guint index, run = 1;
  gsize item;
  char err[1024];
  gboolean ok;

  if (k < self->train.count) {
    if (self->order_epoch != epoch)
      gst_tensor_datasrc_draw_order (self, epoch);
    index = self->train.start + self->order[k];
    while (run < max && k + run < self->train.count
        && self->order[k + run] == self->order[k] + run)
      run++;
  } else {
    index = self->valid.start + (guint) (k - self->train.count);
    if (!self->valid_shares_files)
      set = &self->valid;
    run = (guint) MIN ((guint64) max, per_epoch - k);
  }
  if (self->repo_mode && set->repo.desc.format == GST_TENSOR_FORMAT_FLEXIBLE) {
    /* samples of flexible tensors need not lie back to back */
    out[0] = gst_tensor_datasrc_repo_sample (self, set, index);
    if (!out[0])
      return 0;
    run = 1;
    goto done;
  }

  item = self->repo_mode ? set->repo.sample_size : set->images.item_bytes;
  if (!self->repo_mode)
    images = &set->images;
  /* uint8 images to float32 are read into scratch, the others into the
   * memory the samples share */
  mem = to_float ? NULL : gst_allocator_alloc (NULL, (gsize) run * item, NULL);
  if (mem)
    gst_memory_map (mem, &map, GST_MAP_WRITE);
  if (self->repo_mode)
    ok = tt_data_read_at (set->repo.fd, set->repo.path,
        (guint64) index * item, map.data, (gsize) run * item, err,
        sizeof err) == 0;
  else
    ok = tt_idx_file_read (images, index, run, mem ? map.data :
        self->scratch, err, sizeof err) == 0;
  if (mem)
    gst_memory_unmap (mem, &map);
  if (!ok) {
    if (mem)
      gst_memory_unref (mem);
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err), (NULL));
    return 0;
  }
  for (guint r = 0; r < run; r++) {
    out[r] = gst_buffer_new ();
    if (self->repo_mode) {
      for (guint i = 0; i < set->repo.desc.num; i++)
        gst_buffer_append_memory (out[r], gst_memory_share (mem,
                (gssize) (r * item + set->repo.offsets[i]),
                (gssize) set->repo.sizes[i]));
      continue;
    }
    if (to_float) {
      GstMemory *f = gst_allocator_alloc (NULL, self->image_bytes, NULL);
      const guint8 *px = self->scratch + (gsize) r * item;
      gst_memory_map (f, &map, GST_MAP_WRITE);
      for (gsize i = 0; i < item; i++)
        ((gfloat *) map.data)[i] = px[i] * (1.0f / 255.0f);
      gst_memory_unmap (f, &map);
      gst_buffer_append_memory (out[r], f);
    } else {
      /* as stored */
      gst_buffer_append_memory (out[r], run == 1 ? gst_memory_ref (mem) :
          gst_memory_share (mem, (gssize) (r * item), (gssize) item));
    }
    gst_buffer_append_memory (out[r], gst_tensor_datasrc_wrap (self,
            self->store->labels_f32 + set->labels[index + r] *
            self->store->label_floats,
            self->store->label_floats * sizeof (gfloat)));
  }
  if (mem)
    gst_memory_unref (mem);

done:
  for (guint r = 0; r < run; r++) {
    GST_BUFFER_OFFSET (out[r]) = self->position;
    GST_BUFFER_OFFSET_END (out[r]) = self->position + 1;
    self->position++;
  }
  return run;
}

/* What create() returns after a read error it posted: GST_FLOW_ERROR would
 * make GstBaseSrc post a second, generic error ("Internal data stream
 * error") after the element's own, which names the file. FLUSHING pauses
 * the streaming task without another message and without EOS, so nothing
 * downstream takes the cut stream for a finished one; the application
 * stops the pipeline on the error. */
#define GST_TENSOR_DATASRC_FLOW_READ_ERROR GST_FLOW_FLUSHING

/* One sample, or up to list_size of them as a buffer list: elements that
 * take lists (tensor_trainer) then pay the per-push costs once per list,
 * the others get the buffers one by one from GStreamer. */
static GstFlowReturn
gst_tensor_datasrc_create (GstPushSrc * src, GstBuffer ** buf)
{
  GstTtTensorDataSrc *self = GST_TENSOR_DATASRC (src);
  const guint64 end = ((guint64) self->train.count + self->valid.count) *
      self->n_epochs;
  GstBufferList *list;

  if (self->position >= end)
    return GST_FLOW_EOS;
  if (self->list_size <= 1 || end - self->position == 1) {
    return gst_tensor_datasrc_make_samples (self, 1, buf) ?
        GST_FLOW_OK : GST_TENSOR_DATASRC_FLOW_READ_ERROR;
  }
  list = gst_buffer_list_new_sized (self->list_size);
  while (gst_buffer_list_length (list) < self->list_size
      && self->position < end) {
    GstBuffer *made[1024];
    guint n = (guint) MIN ((guint64) (self->list_size -
            gst_buffer_list_length (list)), end - self->position);
    n = gst_tensor_datasrc_make_samples (self, n, made);
    if (!n) {
      /* the samples read before the error are not pushed either: the
       * stream stops at the error */
      gst_buffer_list_unref (list);
      *buf = NULL;
      return GST_TENSOR_DATASRC_FLOW_READ_ERROR;
    }
    for (guint i = 0; i < n; i++)
      gst_buffer_list_add (list, made[i]);
  }
  gst_base_src_submit_buffer_list (GST_BASE_SRC (src), list);
  *buf = NULL;
  return GST_FLOW_OK;
}

/* ---- properties ------------------------------------------------------ */

static void
gst_tensor_datasrc_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstTtTensorDataSrc *self = GST_TENSOR_DATASRC (object);
  gchar **str = NULL;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      str = &self->location;
      break;
    case PROP_LABEL_LOCATION:
      str = &self->label_location;
      break;
    case PROP_VALIDATION_LOCATION:
      str = &self->validation_location;
      break;
    case PROP_VALIDATION_LABEL_LOCATION:
      str = &self->validation_label_location;
      break;
    case PROP_START_SAMPLE:
      self->start_sample = g_value_get_uint (value);
      break;
    case PROP_NUM_SAMPLES:
      self->num_samples = g_value_get_uint (value);
      break;
    case PROP_VALIDATION_START_SAMPLE:
      self->validation_start_sample = g_value_get_uint (value);
      break;
    case PROP_VALIDATION_NUM_SAMPLES:
      self->validation_num_samples = g_value_get_uint (value);
      break;
    case PROP_EPOCHS:
      self->epochs = g_value_get_uint (value);
      break;
    case PROP_SHUFFLE:
      self->shuffle = g_value_get_boolean (value);
      break;
    case PROP_SEED:
      self->seed = g_value_get_uint64 (value);
      break;
    case PROP_IMAGE_FORMAT:
      self->image_format = g_value_get_enum (value);
      break;
    case PROP_LABEL_FORMAT:
      self->label_format = g_value_get_enum (value);
      break;
    case PROP_NUM_CLASSES:
      self->num_classes = g_value_get_uint (value);
      break;
    case PROP_JSON:
      str = &self->json;
      break;
    case PROP_VALIDATION_JSON:
      str = &self->validation_json;
      break;
    case PROP_PUSH_LIST_SIZE:
      self->push_list_size = g_value_get_uint (value);
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
gst_tensor_datasrc_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstTtTensorDataSrc *self = GST_TENSOR_DATASRC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_value_set_string (value, self->location);
      break;
    case PROP_LABEL_LOCATION:
      g_value_set_string (value, self->label_location);
      break;
    case PROP_VALIDATION_LOCATION:
      g_value_set_string (value, self->validation_location);
      break;
    case PROP_VALIDATION_LABEL_LOCATION:
      g_value_set_string (value, self->validation_label_location);
      break;
    case PROP_START_SAMPLE:
      g_value_set_uint (value, self->start_sample);
      break;
    case PROP_NUM_SAMPLES:
      g_value_set_uint (value, self->num_samples);
      break;
    case PROP_VALIDATION_START_SAMPLE:
      g_value_set_uint (value, self->validation_start_sample);
      break;
    case PROP_VALIDATION_NUM_SAMPLES:
      g_value_set_uint (value, self->validation_num_samples);
      break;
    case PROP_EPOCHS:
      g_value_set_uint (value, self->epochs);
      break;
    case PROP_SHUFFLE:
      g_value_set_boolean (value, self->shuffle);
      break;
    case PROP_SEED:
      g_value_set_uint64 (value, self->seed);
      break;
    case PROP_IMAGE_FORMAT:
      g_value_set_enum (value, self->image_format);
      break;
    case PROP_LABEL_FORMAT:
      g_value_set_enum (value, self->label_format);
      break;
    case PROP_NUM_CLASSES:
      g_value_set_uint (value, self->num_classes);
      break;
    case PROP_JSON:
      g_value_set_string (value, self->json);
      break;
    case PROP_VALIDATION_JSON:
      g_value_set_string (value, self->validation_json);
      break;
    case PROP_PUSH_LIST_SIZE:
      g_value_set_uint (value, self->push_list_size);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_tensor_datasrc_finalize (GObject * object)
{
  GstTtTensorDataSrc *self = GST_TENSOR_DATASRC (object);

  gst_tensor_datasrc_stop (GST_BASE_SRC (self));
  g_free (self->location);
  g_free (self->label_location);
  g_free (self->validation_location);
  g_free (self->validation_label_location);
  g_free (self->json);
  g_free (self->validation_json);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}
