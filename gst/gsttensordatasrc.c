/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * SECTION:element-tensor_datasrc
 * @title: tensor_datasrc
 *
 * Reads a labelled data set from MNIST-format IDX files (images in
 * #GstTtTensorDataSrc:location, labels in #GstTtTensorDataSrc:label-location,
 * gzipped or not), or from nnstreamer's datarepo files (see below), and
 * pushes one sample per buffer as nnstreamer tensors. From IDX files:
 * the image, then the label, one GstMemory each, with caps such as
 * `other/tensors,format=static,num_tensors=2,dimensions="1:28:28:1,10:1",types="uint8,float32",framerate=0/1`.
 * Image dimensions are written as tensor_converter writes GRAY8 frames
 * (channel:width:height:1). Images go out as stored (uint8) or normalized to
 * [0, 1] (#GstTtTensorDataSrc:image-format=float32); labels as one-hot float32
 * vectors of #GstTtTensorDataSrc:num-classes or as a float32 class index
 * (#GstTtTensorDataSrc:label-format).
 *
 * Each epoch pushes the training range (#GstTtTensorDataSrc:start-sample,
 * #GstTtTensorDataSrc:num-samples), shuffled when #GstTtTensorDataSrc:shuffle is
 * set, then the validation range (#GstTtTensorDataSrc:validation-start-sample,
 * #GstTtTensorDataSrc:validation-num-samples) in file order. The validation
 * range comes from #GstTtTensorDataSrc:validation-location (and
 * #GstTtTensorDataSrc:validation-label-location) when set, otherwise from
 * the training files, where it must not overlap the training range.
 * Shuffling permutes the training range only, with an order drawn from
 * #GstTtTensorDataSrc:seed and the epoch number: the same seed gives the
 * same orders, and a training and a validation sample never trade places.
 * After #GstTtTensorDataSrc:epochs epochs the element sends EOS. Buffers carry
 * no timestamps; their offset is the sample's position in the stream. They
 * are pushed #GstTtTensorDataSrc:push-list-size at a time, as a buffer list
 * in which each sample is still its own buffer.
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
 *
 * Trains tests/models/fmnist_mlp.ini (run from the top of the source tree)
 * for 3 epochs on the first 50,000 Fashion-MNIST training images, shuffled,
 * validating on the last 10,000:
 * |[
 * gst-launch-1.0 tensor_datasrc \
 *     location=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz \
 *     label-location=/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz \
 *     num-samples=50000 validation-start-sample=50000 \
 *     validation-num-samples=10000 shuffle=true epochs=3 ! \
 *   tensor_trainer model-config=tests/models/fmnist_mlp.ini \
 *     num-training-samples=50000 num-validation-samples=10000 epochs=3 ! \
 *   fakesink
 * ]|
 */
#include "gsttensordatasrc_private.h"

GST_DEBUG_CATEGORY (gst_tensor_datasrc_debug);

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
  /* personalization: a subset of the classes, N samples of each */
  PROP_CLASSES,
  PROP_PER_CLASS,
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
static GstCaps *gst_tensor_datasrc_get_caps (GstBaseSrc * src,
    GstCaps * filter);
static gboolean gst_tensor_datasrc_is_seekable (GstBaseSrc * src);

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
  /* personalization: a subset of the classes, N samples of each */
  /**
   * GstTtTensorDataSrc:classes:
   *
   * The classes whose samples are pushed (IDX files only), as class
   * indices and ranges separated by commas ("5-9", "0,2,4-6"), each
   * below num-classes (256 with label-format=index). Every other sample
   * of the training and validation ranges is skipped; labels keep their
   * class. Unset or empty: all.
   */
  g_object_class_install_property (gobject_class, PROP_CLASSES,
      g_param_spec_string ("classes", "Classes",
          "Classes pushed, e.g. 5-9 or 0,2,4-6 (IDX only); unset: all",
          DEFAULT_CLASSES, rw));
  /**
   * GstTtTensorDataSrc:per-class:
   *
   * Samples of each class pushed from each range (IDX files only): the
   * first N of the class in file order within the range (shuffle=true
   * shuffles those N with the others). A class with fewer than N samples
   * in the range fails the start. 0: all.
   */
  g_object_class_install_property (gobject_class, PROP_PER_CLASS,
      g_param_spec_uint ("per-class", "Samples per class",
          "Samples of each class per range, the first in file order "
          "(IDX only); 0: all", 0, G_MAXUINT, DEFAULT_PER_CLASS, rw));

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

/* ---- state changes and caps ------------------------------------------ */

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
    case PROP_CLASSES:
      str = &self->classes_spec;
      break;
    case PROP_PER_CLASS:
      self->per_class = g_value_get_uint (value);
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
    case PROP_CLASSES:
      g_value_set_string (value, self->classes_spec);
      break;
    case PROP_PER_CLASS:
      g_value_set_uint (value, self->per_class);
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
  g_free (self->classes_spec);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}
