/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * SECTION:element-tensor_labeler
 * @title: tensor_labeler
 *
 * Turns video frames into training samples: each `video/x-raw` frame (GRAY8,
 * or 8-bit RGB in any packed order: RGB, BGR, RGBx, BGRx, xRGB, xBGR and
 * the alpha variants, alpha ignored) becomes one buffer of two tensors,
 * `other/tensors,format=static,num_tensors=2`:
 *
 * - the image as float32 normalized to [0, 1] (pixel / 255), channels in
 *   R, G, B order. With #GstTtTensorLabeler:layout=planar (the default) the
 *   memory is C:H:W, the layout of the engine's models (NCHW), which
 *   nnstreamer's innermost-first dimensions write `W:H:C:1`; a model whose
 *   input_shape is `C:H:W` takes it as it is. With layout=interleaved it is
 *   H:W:C, `C:W:H:1`, as tensor_converter writes frames (for GRAY8 both
 *   are the same bytes);
 * - the label as a one-hot float32 vector of #GstTtTensorLabeler:num-classes,
 *   `num-classes:1`, for the class in #GstTtTensorLabeler:label.
 *
 * The caps write dimensions as nnstreamer does now: trailing 1s past the
 * first are dropped, so a planar GRAY8 frame is `W:H:1` and mono planar
 * audio `window:1` (the forms below show all four entries).
 *
 * The label can change while PLAYING: each frame takes the value the
 * property has when the frame is processed. label=-1 drops the frames (no
 * sample) until a class is set again, e.g. while the camera is moved to
 * the next object. A label not below num-classes is an error.
 *
 * Timestamps and the framerate are kept. One GstMemory per tensor.
 *
 * Audio (`audio/x-raw`, interleaved S16LE, S32LE, F32LE or U8, any number
 * of channels and rate) is cut into windows of #GstTtTensorLabeler:window
 * frames, one every #GstTtTensorLabeler:hop frames (overlapping when hop is
 * shorter, with gaps when longer), whatever the buffer sizes; each window
 * is one sample. Its tensor is float32 in [-1, 1] (S16: value / 32768,
 * U8: (value - 128) / 128); planar, channel:1:window (dimensions
 * `window:1:channels:1`), the input of a conv1d model; interleaved,
 * 1:window:channels (dimensions `channels:window:1:1`). A window's
 * timestamp is its first frame's, its duration window / rate, and the
 * output framerate rate / hop. A change of label drops the frames waiting
 * for a window (no window mixes frames from before and after it), as do
 * a discontinuity, a flush and EOS.
 *
 * ## Example launch lines
 *
 * From the top of the source tree: 320 frames of videotestsrc, all of
 * class 0, train pipelines/camera-mlp.ini for one epoch (a camera's frames
 * come the same way from `v4l2src ! videoconvert ! videoscale`, the label
 * set as the camera moves: pipelines/camera-train.sh):
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=320 ! \
 *     video/x-raw,format=GRAY8,width=28,height=28 ! \
 *   tensor_labeler num-classes=4 label=0 ! \
 *   tensor_trainer model-config=pipelines/camera-mlp.ini \
 *     num-training-samples=320 epochs=1 ! fakesink
 * ]|
 * 33 buffers of 256 frames of audiotestsrc, cut into 65 windows of 256
 * frames, one every 128, train the conv1d model of
 * pipelines/audio-conv1d.ini (a microphone's sound comes from
 * `pulsesrc ! audioconvert ! audioresample`: pipelines/audio-train.sh):
 * |[
 * gst-launch-1.0 audiotestsrc num-buffers=33 samplesperbuffer=256 ! \
 *     audio/x-raw,format=S16LE,channels=1,rate=8000 ! \
 *   tensor_labeler num-classes=4 label=0 window=256 hop=128 ! \
 *   tensor_trainer model-config=pipelines/audio-conv1d.ini \
 *     num-training-samples=65 epochs=1 ! fakesink
 * ]|
 */
#include "gsttensorlabeler.h"

#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_tensor_labeler_debug);
#define GST_CAT_DEFAULT gst_tensor_labeler_debug

#define DEFAULT_LABEL 0
#define DEFAULT_NUM_CLASSES 10
#define DEFAULT_LAYOUT GST_TENSOR_LABELER_LAYOUT_PLANAR
#define DEFAULT_WINDOW 256
#define DEFAULT_HOP 0

enum
{
  PROP_0,
  PROP_LABEL,
  PROP_NUM_CLASSES,
  PROP_LAYOUT,
  PROP_WINDOW,
  PROP_HOP,
};

#define GST_TENSOR_LABELER_FORMATS \
  "{ GRAY8, RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA, ARGB, ABGR }"

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (GST_TENSOR_LABELER_FORMATS) "; "
        "audio/x-raw, format = (string) " GST_TENSOR_AUDIO_WINDOW_FORMATS
        ", layout = (string) interleaved, channels = (int) [ 1, 64 ], "
        "rate = (int) [ 1, MAX ]"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("other/tensors, format = (string) static, "
        "num_tensors = (int) 2, types = (string) \"float32,float32\", "
        "framerate = (fraction) [ 0/1, 2147483647/1 ]"));

#define GST_TYPE_TENSOR_LABELER_LAYOUT (gst_tensor_labeler_layout_get_type ())
static GType
gst_tensor_labeler_layout_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_TENSOR_LABELER_LAYOUT_PLANAR,
        "Planar C:H:W (dimensions W:H:C:1), the engine's NCHW", "planar"},
    {GST_TENSOR_LABELER_LAYOUT_INTERLEAVED,
          "Interleaved H:W:C (dimensions C:W:H:1), as tensor_converter",
        "interleaved"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstTtTensorLabelerLayout", values));
  return type;
}

#define gst_tensor_labeler_parent_class parent_class
G_DEFINE_TYPE (GstTtTensorLabeler, gst_tensor_labeler, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE_WITH_CODE (tensor_labeler, "tensor_labeler",
    GST_RANK_NONE, GST_TYPE_TENSOR_LABELER,
    GST_DEBUG_CATEGORY_INIT (gst_tensor_labeler_debug, "tensor_labeler", 0,
        "tensor_labeler element"));

static void gst_tensor_labeler_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_tensor_labeler_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstCaps *gst_tensor_labeler_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter);
static gboolean gst_tensor_labeler_set_caps (GstBaseTransform * trans,
    GstCaps * incaps, GstCaps * outcaps);
static gboolean gst_tensor_labeler_stop (GstBaseTransform * trans);
static gboolean gst_tensor_labeler_sink_event (GstBaseTransform * trans,
    GstEvent * event);
static GstFlowReturn gst_tensor_labeler_submit_input_buffer
    (GstBaseTransform * trans, gboolean is_discont, GstBuffer * input);
static GstFlowReturn gst_tensor_labeler_generate_output
    (GstBaseTransform * trans, GstBuffer ** outbuf);
static void gst_tensor_labeler_finalize (GObject * object);
static GstFlowReturn gst_tensor_labeler_prepare_output_buffer
    (GstBaseTransform * trans, GstBuffer * input, GstBuffer ** outbuf);
static GstFlowReturn gst_tensor_labeler_transform (GstBaseTransform * trans,
    GstBuffer * inbuf, GstBuffer * outbuf);

static void
gst_tensor_labeler_class_init (GstTtTensorLabelerClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  gobject_class->set_property = gst_tensor_labeler_set_property;
  gobject_class->get_property = gst_tensor_labeler_get_property;
  gobject_class->finalize = gst_tensor_labeler_finalize;

  /**
   * GstTtTensorLabeler:label:
   *
   * The class of the frames from now on, sent as a one-hot float32 label
   * of #GstTtTensorLabeler:num-classes. It can change while PLAYING (the
   * camera or microphone now shows the next class): a video frame takes
   * the value the property has when the frame is processed, an audio
   * window the value when the window is complete; a change drops the
   * audio frames waiting for a window, so that no window mixes two
   * classes. -1 drops the frames (no sample) until a class is set again.
   * A label not below num-classes is an error when the next sample is
   * made.
   */
  g_object_class_install_property (gobject_class, PROP_LABEL,
      g_param_spec_int ("label", "Label",
          "Class of the frames from now on; -1: drop them (can change "
          "while PLAYING)", -1, 65535, DEFAULT_LABEL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstTtTensorLabeler:num-classes:
   *
   * The length of the one-hot label tensor (dimensions num-classes:1),
   * the model's output units. Read when the caps are negotiated: a change
   * takes effect at the next negotiation.
   */
  g_object_class_install_property (gobject_class, PROP_NUM_CLASSES,
      g_param_spec_uint ("num-classes", "Number of classes",
          "Length of the one-hot label (the model's output units)", 1, 65535,
          DEFAULT_NUM_CLASSES, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstTtTensorLabeler:layout:
   *
   * The memory order of the input tensor. planar (the default): channel
   * by channel, C:H:W for video (dimensions W:H:C:1) and channel:1:window
   * for audio (window:1:channels:1), what the engine's models (NCHW) with
   * input_shape C:H:W take as they are. interleaved: H:W:C for video
   * (C:W:H:1), as tensor_converter writes frames, and 1:window:channels
   * for audio (channels:window:1:1). For GRAY8 frames and mono audio both
   * are the same bytes. Read when the caps are negotiated.
   */
  g_object_class_install_property (gobject_class, PROP_LAYOUT,
      g_param_spec_enum ("layout", "Layout",
          "Memory order of the input tensor: planar (C:H:W) or interleaved",
          GST_TYPE_TENSOR_LABELER_LAYOUT, DEFAULT_LAYOUT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstTtTensorLabeler:window:
   *
   * Audio only: the frames (samples per channel) of one sample, the
   * width of its tensor; a window lasts window / rate seconds. Read when
   * the caps are negotiated.
   */
  g_object_class_install_property (gobject_class, PROP_WINDOW,
      g_param_spec_uint ("window", "Window",
          "Audio: frames (samples per channel) in one sample", 1, 1 << 20,
          DEFAULT_WINDOW, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstTtTensorLabeler:hop:
   *
   * Audio only: the frames from the start of one window to the start of
   * the next. Shorter than #GstTtTensorLabeler:window, windows overlap;
   * longer, the frames between them are skipped. 0 (the default) means
   * window: back to back. The output framerate is rate / hop. Read when
   * the caps are negotiated.
   */
  g_object_class_install_property (gobject_class, PROP_HOP,
      g_param_spec_uint ("hop", "Hop",
          "Audio: frames from one window's start to the next; 0: window", 0,
          1 << 20, DEFAULT_HOP, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  gst_element_class_set_static_metadata (element_class, "Tensor labeler",
      "Filter/Converter/Video/Audio/Tensor",
      "Turns video frames or audio windows into training samples: a "
      "normalized float32 tensor and a one-hot label from a property that "
      "can change while playing", "tensor-trainer project");
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);

  trans_class->transform_caps =
      GST_DEBUG_FUNCPTR (gst_tensor_labeler_transform_caps);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_tensor_labeler_set_caps);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_tensor_labeler_stop);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_tensor_labeler_sink_event);
  trans_class->submit_input_buffer =
      GST_DEBUG_FUNCPTR (gst_tensor_labeler_submit_input_buffer);
  trans_class->generate_output =
      GST_DEBUG_FUNCPTR (gst_tensor_labeler_generate_output);
  trans_class->prepare_output_buffer =
      GST_DEBUG_FUNCPTR (gst_tensor_labeler_prepare_output_buffer);
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_tensor_labeler_transform);
  trans_class->passthrough_on_same_caps = FALSE;

  gst_type_mark_as_plugin_api (GST_TYPE_TENSOR_LABELER_LAYOUT, 0);
}

static void
gst_tensor_labeler_init (GstTtTensorLabeler * self)
{
  self->label = DEFAULT_LABEL;
  self->num_classes = DEFAULT_NUM_CLASSES;
  self->layout = DEFAULT_LAYOUT;
  self->window = DEFAULT_WINDOW;
  self->hop = DEFAULT_HOP;
  gst_video_info_init (&self->info);
  gst_tensor_audio_window_init (&self->awin);
}

static void
gst_tensor_labeler_finalize (GObject * object)
{
  gst_tensor_audio_window_free (&GST_TENSOR_LABELER (object)->awin);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* ---- caps ------------------------------------------------------------ */

/* The image tensor's dimensions for a frame. */
static void
gst_tensor_labeler_image_desc (guint channels, gint width, gint height,
    GstTtTensorLabelerLayout layout, GstTensorDesc * d)
{
  memset (d, 0, sizeof *d);
  d->rank = 4;
  if (layout == GST_TENSOR_LABELER_LAYOUT_PLANAR) {
    d->dims[0] = width;
    d->dims[1] = height;
    d->dims[2] = channels;
  } else {
    d->dims[0] = channels;
    d->dims[1] = width;
    d->dims[2] = height;
  }
  d->dims[3] = 1;
  d->type = GST_TENSOR_TYPE_FLOAT32;
}

/* Video or audio caps to tensor caps: exact where the tensor's shape is
 * known (video: width, height, format; audio: channels, with the window),
 * the template's otherwise. Audio windows come rate / hop times a second. */
static GstCaps *
gst_tensor_labeler_video_to_tensors (GstTtTensorLabeler * self, GstCaps * caps)
{
  GstCaps *out = gst_caps_new_empty ();
  guint classes, window, hop;
  GstTtTensorLabelerLayout layout;

  GST_OBJECT_LOCK (self);
  classes = self->num_classes;
  layout = self->layout;
  window = self->window;
  hop = self->hop ? self->hop : self->window;
  GST_OBJECT_UNLOCK (self);

  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *st = gst_caps_get_structure (caps, i);
    const gboolean audio = gst_structure_has_name (st, "audio/x-raw");
    const gchar *format = gst_structure_get_string (st, "format");
    const GValue *fps = gst_structure_get_value (st, "framerate");
    gint w, h, channels, rate = 0;
    GValue audio_fps = G_VALUE_INIT;
    GstStructure *o;
    if (audio && gst_structure_get_int (st, "rate", &rate)) {
      g_value_init (&audio_fps, GST_TYPE_FRACTION);
      gst_value_set_fraction (&audio_fps, rate, (gint) hop);
      fps = &audio_fps;
    } else if (audio) {
      fps = NULL;
    }
    if (audio ? gst_structure_get_int (st, "channels", &channels) :
        format && gst_structure_get_int (st, "width", &w)
        && gst_structure_get_int (st, "height", &h)) {
      GstTensorsDesc desc;
      GstCaps *c;
      memset (&desc, 0, sizeof desc);
      desc.num = 2;
      if (audio)
        gst_tensor_labeler_image_desc ((guint) channels, (gint) window, 1,
            layout, &desc.tensors[0]);
      else
        gst_tensor_labeler_image_desc (g_str_equal (format, "GRAY8") ? 1 :
            3, w, h, layout, &desc.tensors[0]);
      desc.tensors[1].rank = 4;
      desc.tensors[1].dims[0] = classes;
      desc.tensors[1].dims[1] = desc.tensors[1].dims[2] =
          desc.tensors[1].dims[3] = 1;
      desc.tensors[1].type = GST_TENSOR_TYPE_FLOAT32;
      c = gst_tensors_desc_to_caps (&desc, 0, 1);
      o = gst_structure_copy (gst_caps_get_structure (c, 0));
      gst_caps_unref (c);
    } else {
      o = gst_structure_new ("other/tensors", "format", G_TYPE_STRING,
          "static", "num_tensors", G_TYPE_INT, 2, "types", G_TYPE_STRING,
          "float32,float32", NULL);
    }
    if (fps)
      gst_structure_set_value (o, "framerate", fps);
    else
      gst_structure_remove_field (o, "framerate");
    if (G_IS_VALUE (&audio_fps))
      g_value_unset (&audio_fps);
    out = gst_caps_merge_structure (out, o);
  }
  return out;
}

static GstCaps *
gst_tensor_labeler_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  GstTtTensorLabeler *self = GST_TENSOR_LABELER (trans);
  GstCaps *out;

  if (direction == GST_PAD_SINK) {
    out = gst_tensor_labeler_video_to_tensors (self, caps);
  } else {
    /* any frame size: tensor dimensions do not constrain upstream; a
     * framerate constrains video only (for audio it is rate / hop) */
    out = gst_static_pad_template_get_caps (&sink_template);
    if (gst_caps_get_size (caps) == 1) {
      const GValue *fps = gst_structure_get_value (gst_caps_get_structure
          (caps, 0), "framerate");
      if (fps) {
        out = gst_caps_make_writable (out);
        for (guint k = 0; k < gst_caps_get_size (out); k++) {
          GstStructure *st = gst_caps_get_structure (out, k);
          if (gst_structure_has_name (st, "video/x-raw"))
            gst_structure_set_value (st, "framerate", fps);
        }
      }
    }
  }
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, out,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (out);
    out = tmp;
  }
  GST_DEBUG_OBJECT (self, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
      direction == GST_PAD_SINK ? "video" : "tensors", caps, out);
  return out;
}

static gboolean
gst_tensor_labeler_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstTtTensorLabeler *self = GST_TENSOR_LABELER (trans);

  (void) outcaps;
  self->audio = gst_structure_has_name (gst_caps_get_structure (incaps, 0),
      "audio/x-raw");
  GST_OBJECT_LOCK (self);
  self->classes = self->num_classes;
  self->out_layout = self->layout;
  const guint window = self->window;
  const guint hop = self->hop ? self->hop : self->window;
  GST_OBJECT_UNLOCK (self);
  if (self->audio) {
    GstAudioInfo info;
    if (!gst_audio_info_from_caps (&info, incaps)) {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Cannot read audio caps %" GST_PTR_FORMAT, incaps), (NULL));
      return FALSE;
    }
    self->channels = GST_AUDIO_INFO_CHANNELS (&info);
    gst_tensor_audio_window_configure (&self->awin, &info, window, hop);
    self->awin_label = -1;
    self->configured = TRUE;
    GST_INFO_OBJECT (self, "%s, %u channel(s) at %d Hz -> windows of %u "
        "frames every %u, %s, %u classes",
        gst_audio_format_to_string (GST_AUDIO_INFO_FORMAT (&info)),
        self->channels, GST_AUDIO_INFO_RATE (&info), window, hop,
        self->out_layout == GST_TENSOR_LABELER_LAYOUT_PLANAR ? "planar" :
        "interleaved", self->classes);
    return TRUE;
  }
  if (!gst_video_info_from_caps (&self->info, incaps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Cannot read video caps %" GST_PTR_FORMAT, incaps), (NULL));
    return FALSE;
  }
  self->channels = GST_VIDEO_INFO_IS_GRAY (&self->info) ? 1 : 3;
  self->configured = TRUE;
  GST_INFO_OBJECT (self, "%s %dx%d -> %u channel(s), %s, %u classes",
      GST_VIDEO_INFO_NAME (&self->info), GST_VIDEO_INFO_WIDTH (&self->info),
      GST_VIDEO_INFO_HEIGHT (&self->info), self->channels,
      self->out_layout == GST_TENSOR_LABELER_LAYOUT_PLANAR ? "planar" :
      "interleaved", self->classes);
  return TRUE;
}

static gboolean
gst_tensor_labeler_stop (GstBaseTransform * trans)
{
  GstTtTensorLabeler *self = GST_TENSOR_LABELER (trans);

  self->configured = FALSE;
  gst_tensor_audio_window_clear (&self->awin);
  return TRUE;
}

/* A flush or EOS drops the audio frames waiting for a window. */
static gboolean
gst_tensor_labeler_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstTtTensorLabeler *self = GST_TENSOR_LABELER (trans);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_STOP:
    case GST_EVENT_EOS:
      gst_tensor_audio_window_clear (&self->awin);
      break;
    default:
      break;
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

/* ---- samples --------------------------------------------------------- */

/* The label for the next sample: FALSE with *ret set when there is none
 * (-1: dropped) or it is out of range (an error). */
static gboolean
gst_tensor_labeler_current_label (GstTtTensorLabeler * self, gint * label,
    GstFlowReturn * ret)
{
  GST_OBJECT_LOCK (self);
  *label = self->label;
  GST_OBJECT_UNLOCK (self);
  if (*label < 0) {
    *ret = GST_BASE_TRANSFORM_FLOW_DROPPED;
    return FALSE;
  }
  if ((guint) * label >= self->classes) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("label=%d is not below num-classes=%u.", *label, self->classes),
        (NULL));
    *ret = GST_FLOW_ERROR;
    return FALSE;
  }
  return TRUE;
}

/* A buffer of two memories: a tensor of floats floats, and the one-hot
 * label. */
static GstBuffer *
gst_tensor_labeler_new_sample (GstTtTensorLabeler * self, gsize floats)
{
  GstBuffer *out = gst_buffer_new ();
  gst_buffer_append_memory (out, gst_allocator_alloc (NULL,
          floats * sizeof (gfloat), NULL));
  gst_buffer_append_memory (out, gst_allocator_alloc (NULL,
          self->classes * sizeof (gfloat), NULL));
  return out;
}

static void
gst_tensor_labeler_write_label (GstBuffer * out, gint label)
{
  GstMapInfo lm;
  gst_buffer_map_range (out, 1, 1, &lm, GST_MAP_WRITE);
  memset (lm.data, 0, lm.size);
  ((gfloat *) lm.data)[label] = 1.0f;
  gst_buffer_unmap (out, &lm);
}

/* Audio: the buffer's frames join those waiting for a window. */
static GstFlowReturn
gst_tensor_labeler_submit_input_buffer (GstBaseTransform * trans,
    gboolean is_discont, GstBuffer * input)
{
  GstTtTensorLabeler *self = GST_TENSOR_LABELER (trans);

  if (!self->audio)
    return GST_BASE_TRANSFORM_CLASS (parent_class)->submit_input_buffer
        (trans, is_discont, input);
  if (!self->configured) {
    gst_buffer_unref (input);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (is_discont) {
    input = gst_buffer_make_writable (input);
    GST_BUFFER_FLAG_SET (input, GST_BUFFER_FLAG_DISCONT);
  }
  GST_OBJECT_LOCK (self);
  const gint label = self->label;
  GST_OBJECT_UNLOCK (self);
  if (label != self->awin_label) {
    gst_tensor_audio_window_clear (&self->awin);
    self->awin_label = label;
  }
  gst_tensor_audio_window_push (&self->awin, input);
  return GST_FLOW_OK;
}

/* Audio: the next labelled window, or none (*outbuf NULL) when no whole
 * window waits; windows while the label is -1 are consumed unsent. */
static GstFlowReturn
gst_tensor_labeler_generate_output (GstBaseTransform * trans,
    GstBuffer ** outbuf)
{
  GstTtTensorLabeler *self = GST_TENSOR_LABELER (trans);
  const GstAudioInfo *info = &self->awin.info;
  const gsize floats = (gsize) self->awin.window * self->channels;
  GstFlowReturn ret = GST_FLOW_OK;
  GstBuffer *out;
  GstClockTime pts;
  GstMapInfo im;
  gboolean got;
  gint label;

  *outbuf = NULL;
  if (!self->audio)
    return GST_BASE_TRANSFORM_CLASS (parent_class)->generate_output (trans,
        outbuf);
  out = gst_tensor_labeler_new_sample (self, floats);
  for (;;) {
    gst_buffer_map_range (out, 0, 1, &im, GST_MAP_WRITE);
    got = gst_tensor_audio_window_pop (&self->awin, (gfloat *) im.data,
        self->out_layout == GST_TENSOR_LABELER_LAYOUT_PLANAR, &pts);
    gst_buffer_unmap (out, &im);
    if (!got)
      break;
    if (gst_tensor_labeler_current_label (self, &label, &ret))
      break;
    if (ret != GST_BASE_TRANSFORM_FLOW_DROPPED)
      break;                    /* an error, posted */
    ret = GST_FLOW_OK;
  }
  if (!got || ret != GST_FLOW_OK) {
    gst_buffer_unref (out);
    return ret;
  }
  gst_tensor_labeler_write_label (out, label);
  GST_BUFFER_PTS (out) = pts;
  GST_BUFFER_DURATION (out) = gst_util_uint64_scale_int (self->awin.window,
      GST_SECOND, GST_AUDIO_INFO_RATE (info));
  *outbuf = out;
  return GST_FLOW_OK;
}

/* A new buffer of two memories (image, label) with the input's metadata;
 * no output (dropped) while label is -1. */
static GstFlowReturn
gst_tensor_labeler_prepare_output_buffer (GstBaseTransform * trans,
    GstBuffer * input, GstBuffer ** outbuf)
{
  GstTtTensorLabeler *self = GST_TENSOR_LABELER (trans);
  const gsize pixels = (gsize) GST_VIDEO_INFO_WIDTH (&self->info) *
      GST_VIDEO_INFO_HEIGHT (&self->info);
  GstBuffer *out;

  if (!self->configured)
    return GST_FLOW_NOT_NEGOTIATED;
  out = gst_tensor_labeler_new_sample (self, pixels * self->channels);
  gst_buffer_copy_into (out, input, GST_BUFFER_COPY_METADATA, 0, -1);
  *outbuf = out;
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_tensor_labeler_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstTtTensorLabeler *self = GST_TENSOR_LABELER (trans);
  const gint width = GST_VIDEO_INFO_WIDTH (&self->info);
  const gint height = GST_VIDEO_INFO_HEIGHT (&self->info);
  const guint channels = self->channels;
  const gboolean planar = self->out_layout == GST_TENSOR_LABELER_LAYOUT_PLANAR;
  /* R, G, B (or Y) components of the frame */
  const guint comps[3] = { GST_VIDEO_COMP_R, GST_VIDEO_COMP_G,
    GST_VIDEO_COMP_B
  };
  GstVideoFrame frame;
  GstMapInfo im;
  GstFlowReturn ret;
  gint label;
  gfloat *dst;

  if (!gst_tensor_labeler_current_label (self, &label, &ret))
    return ret;
  if (!gst_video_frame_map (&frame, &self->info, inbuf, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("A frame of %" G_GSIZE_FORMAT " bytes does not fit the caps (%dx%d "
            "%s).", gst_buffer_get_size (inbuf), width, height,
            GST_VIDEO_INFO_NAME (&self->info)), (NULL));
    return GST_FLOW_ERROR;
  }
  gst_buffer_map_range (outbuf, 0, 1, &im, GST_MAP_WRITE);
  dst = (gfloat *) im.data;
  for (guint c = 0; c < channels; c++) {
    const guint comp = channels == 1 ? GST_VIDEO_COMP_Y : comps[c];
    const guint8 *base = GST_VIDEO_FRAME_COMP_DATA (&frame, comp);
    const gint stride = GST_VIDEO_FRAME_COMP_STRIDE (&frame, comp);
    const gint pstride = GST_VIDEO_FRAME_COMP_PSTRIDE (&frame, comp);
    for (gint y = 0; y < height; y++) {
      const guint8 *row = base + (gsize) y * stride;
      gfloat *out = planar ? dst + ((gsize) c * height + y) * width :
          dst + (gsize) y * width * channels + c;
      const gsize step = planar ? 1 : channels;
      for (gint x = 0; x < width; x++)
        out[x * step] = row[x * pstride] * (1.0f / 255.0f);
    }
  }
  gst_buffer_unmap (outbuf, &im);
  gst_video_frame_unmap (&frame);

  gst_tensor_labeler_write_label (outbuf, label);
  return GST_FLOW_OK;
}

/* ---- properties ------------------------------------------------------ */

static void
gst_tensor_labeler_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstTtTensorLabeler *self = GST_TENSOR_LABELER (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LABEL:
      self->label = g_value_get_int (value);
      GST_DEBUG_OBJECT (self, "label %d", self->label);
      break;
    case PROP_NUM_CLASSES:
      self->num_classes = g_value_get_uint (value);
      break;
    case PROP_LAYOUT:
      self->layout = g_value_get_enum (value);
      break;
    case PROP_WINDOW:
      self->window = g_value_get_uint (value);
      break;
    case PROP_HOP:
      self->hop = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_tensor_labeler_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstTtTensorLabeler *self = GST_TENSOR_LABELER (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LABEL:
      g_value_set_int (value, self->label);
      break;
    case PROP_NUM_CLASSES:
      g_value_set_uint (value, self->num_classes);
      break;
    case PROP_LAYOUT:
      g_value_set_enum (value, self->layout);
      break;
    case PROP_WINDOW:
      g_value_set_uint (value, self->window);
      break;
    case PROP_HOP:
      g_value_set_uint (value, self->hop);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}
