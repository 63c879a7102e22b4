/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_labeler through GstHarness: caps for GRAY8, RGB and BGRx frames in
 * both layouts, normalized values (row padding included), the label
 * changing mid-stream while PLAYING, label -1 dropping frames, a label out
 * of range, and labeler ! tensor_trainer; audio cut into windows (sizes,
 * hops, formats, layouts, timestamps, discontinuities) and audio windows
 * training a conv1d model.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "tt_gst_test.h"

static GstHarness *
new_labeler (const gchar * video_caps, const gchar * props)
{
  gchar *launch = g_strdup_printf ("tensor_labeler %s", props ? props : "");
  GstHarness *h = gst_harness_new_parse (launch);
  g_free (launch);
  gst_harness_set_src_caps_str (h, video_caps);
  return h;
}

/* A frame whose pixel (x, y), channel byte b holds 10 * y + x + 100 * b,
 * rows padded to stride bytes (the padding holds 0xEE). */
static GstBuffer *
make_frame (gint width, gint height, gint bpp, gint stride)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, (gsize) stride * height,
      NULL);
  GstMapInfo m;
  gst_buffer_map (b, &m, GST_MAP_WRITE);
  memset (m.data, 0xEE, m.size);
  for (gint y = 0; y < height; y++)
    for (gint x = 0; x < width; x++)
      for (gint k = 0; k < bpp; k++)
        m.data[y * stride + x * bpp + k] = (guint8) (10 * y + x + 40 * k);
  gst_buffer_unmap (b, &m);
  return b;
}

static gchar *
out_dims (GstHarness * h)
{
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstStructure *s = gst_caps_get_structure (caps, 0);
  gchar *d = g_strdup_printf ("%s|%s", gst_structure_get_string (s,
          "dimensions"), gst_structure_get_string (s, "types"));
  gint n, fn, fd;
  fail_unless (gst_structure_get_int (s, "num_tensors", &n) && n == 2);
  fail_unless (gst_structure_get_fraction (s, "framerate", &fn, &fd));
  fail_unless (fn == 30 && fd == 1, "framerate %d/%d", fn, fd);
  gst_caps_unref (caps);
  return d;
}

static void
read_label (GstBuffer * b, guint classes, gint * hot)
{
  gfloat v[16];
  fail_unless_equals_int (gst_buffer_n_memory (b), 2);
  fail_unless_equals_int (gst_memory_get_sizes (gst_buffer_peek_memory (b,
              1), NULL, NULL), classes * sizeof (gfloat));
  gst_buffer_extract (b, gst_buffer_get_size (b) - classes * sizeof (gfloat),
      v, classes * sizeof (gfloat));
  *hot = -1;
  for (guint c = 0; c < classes; c++) {
    fail_unless (v[c] == 0.0f || v[c] == 1.0f);
    if (v[c] == 1.0f) {
      fail_unless (*hot == -1, "two hot classes");
      *hot = (gint) c;
    }
  }
}

GST_START_TEST (test_formats_and_values)
{
  const struct
  {
    const gchar *format;
    gint bpp, stride;
    const gchar *layout;
    const gchar *dims;
    gint r, g, b;               /* byte index of R, G, B in a pixel */
  } cases[] = {
    /* width 3: GRAY8 and RGB rows are padded to 4 bytes */
    {"GRAY8", 1, 4, "planar", "3:2:1,5:1", 0, 0, 0},
    {"GRAY8", 1, 4, "interleaved", "1:3:2:1,5:1", 0, 0, 0},
    {"RGB", 3, 12, "planar", "3:2:3:1,5:1", 0, 1, 2},
    {"RGB", 3, 12, "interleaved", "3:3:2:1,5:1", 0, 1, 2},
    {"BGRx", 4, 12, "planar", "3:2:3:1,5:1", 2, 1, 0},
    {"BGRx", 4, 12, "interleaved", "3:3:2:1,5:1", 2, 1, 0},
  };
  const gint w = 3, h = 2;
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *caps = g_strdup_printf ("video/x-raw,format=%s,width=%d,height=%d,"
        "framerate=30/1", cases[i].format, w, h);
    gchar *props = g_strdup_printf ("num-classes=5 label=3 layout=%s",
        cases[i].layout);
    GstHarness *hr = new_labeler (caps, props);
    GstBuffer *in = make_frame (w, h, cases[i].bpp, cases[i].stride);
    GST_BUFFER_PTS (in) = 7 * GST_SECOND;
    GstBuffer *out = gst_harness_push_and_pull (hr, in);
    fail_unless (out != NULL);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 7 * GST_SECOND);
    gchar *dims = out_dims (hr);
    gchar *want = g_strdup_printf ("%s|float32,float32", cases[i].dims);
    fail_unless_equals_string (dims, want);
    const guint ch = cases[i].bpp == 1 ? 1 : 3;
    const gint comp[3] = { cases[i].r, cases[i].g, cases[i].b };
    gfloat px[3 * 3 * 2];
    fail_unless_equals_int (gst_memory_get_sizes (gst_buffer_peek_memory (out,
                0), NULL, NULL), ch * w * h * sizeof (gfloat));
    gst_buffer_extract (out, 0, px, ch * w * h * sizeof (gfloat));
    for (guint c = 0; c < ch; c++)
      for (gint y = 0; y < h; y++)
        for (gint x = 0; x < w; x++) {
          gsize at = g_str_equal (cases[i].layout, "planar") ?
              (c * h + y) * w + x : (y * w + x) * ch + c;
          gfloat want_v = (10 * y + x + 40 * comp[c]) / 255.0f;
          fail_unless (fabsf (px[at] - want_v) < 1e-6f, "%s %s c%u (%d,%d): "
              "%g, expected %g", cases[i].format, cases[i].layout, c, x, y,
              px[at], want_v);
        }
    gint hot;
    read_label (out, 5, &hot);
    fail_unless_equals_int (hot, 3);
    gst_buffer_unref (out);
    g_free (dims);
    g_free (want);
    g_free (caps);
    g_free (props);
    gst_harness_teardown (hr);
  }
}

GST_END_TEST;

/* The label property changes while PLAYING; each frame takes the value
 * current when it is processed; -1 drops frames. */
GST_START_TEST (test_label_change)
{
  GstHarness *h = new_labeler ("video/x-raw,format=GRAY8,width=2,height=2,"
      "framerate=30/1", "num-classes=4 label=0");
  GstElement *labeler = gst_harness_find_element (h, "tensor_labeler");
  GstState state;
  gst_element_get_state (labeler, &state, NULL, 0);
  fail_unless_equals_int (state, GST_STATE_PLAYING);
  const gint schedule[] = { 0, 0, 2, 2, 2, -1, -1, 1, 3, 0 };
  guint pulled = 0;
  for (guint i = 0; i < G_N_ELEMENTS (schedule); i++) {
    g_object_set (labeler, "label", schedule[i], NULL);
    fail_unless_equals_int (gst_harness_push (h, make_frame (2, 2, 1, 4)),
        GST_FLOW_OK);
    if (schedule[i] < 0) {
      fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
      continue;
    }
    GstBuffer *out = gst_harness_pull (h);
    gint hot;
    read_label (out, 4, &hot);
    fail_unless_equals_int (hot, schedule[i]);
    gst_buffer_unref (out);
    pulled++;
  }
  fail_unless_equals_int (pulled, G_N_ELEMENTS (schedule) - 2);

  /* out of range: a message saying so */
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (labeler, bus);
  g_object_set (labeler, "label", 4, NULL);
  fail_unless_equals_int (gst_harness_push (h, make_frame (2, 2, 1, 4)),
      GST_FLOW_ERROR);
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (text, "label=4 is not below num-classes=4"), "%s", text);
  g_free (text);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  gst_object_unref (labeler);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_refused_formats)
{
  GstElement *e = gst_element_factory_make ("tensor_labeler", NULL);
  GstPad *sink = gst_element_get_static_pad (e, "sink");
  const gchar *no[] = { "video/x-raw,format=I420,width=2,height=2",
    "video/x-raw,format=GRAY16_LE,width=2,height=2",
    "audio/x-raw,format=S24LE,layout=interleaved,channels=1,rate=8000",
    "audio/x-raw,format=S16LE,layout=non-interleaved,channels=2,rate=8000",
    "audio/x-raw,format=S16BE,layout=interleaved,channels=1,rate=8000",
  };
  const gchar *yes[] = { "video/x-raw,format=RGBA,width=2,height=2,"
        "framerate=0/1", "video/x-raw,format=xBGR,width=2,height=2,"
        "framerate=5/1",
    "audio/x-raw,format=S16LE,layout=interleaved,channels=1,rate=8000",
    "audio/x-raw,format=F32LE,layout=interleaved,channels=6,rate=48000",
  };
  for (guint i = 0; i < G_N_ELEMENTS (no); i++) {
    GstCaps *c = gst_caps_from_string (no[i]);
    fail_if (gst_pad_query_accept_caps (sink, c), "%s", no[i]);
    gst_caps_unref (c);
  }
  for (guint i = 0; i < G_N_ELEMENTS (yes); i++) {
    GstCaps *c = gst_caps_from_string (yes[i]);
    fail_unless (gst_pad_query_accept_caps (sink, c), "%s", yes[i]);
    gst_caps_unref (c);
  }
  gst_object_unref (sink);
  gst_object_unref (e);
}

GST_END_TEST;

/* The input buffer of sample k, of class *c. */
typedef GstBuffer *(*SampleMaker) (guint k, guint * c);

/* Trains model_text through "tensor_labeler props ! tensor_trainer" on
 * caps, epochs of n samples from make, each labelled with its class as it
 * goes in; the first and last epoch's training loss and the last epoch's
 * accuracy. */
static void
train_through_labeler (const gchar * model_text, const gchar * props,
    const gchar * caps, guint epochs, guint n, SampleMaker make,
    gdouble * first, gdouble * last, gdouble * accuracy)
{
  gchar *dir = g_dir_make_tmp ("tt-labeler-XXXXXX", NULL);
  gchar *ini = g_build_filename (dir, "model.ini", NULL);
  fail_unless (g_file_set_contents (ini, model_text, -1, NULL));
  gchar *launch = g_strdup_printf ("tensor_labeler name=lab %s ! "
      "tensor_trainer model-config=%s num-training-samples=%u epochs=%u",
      props, ini, n, epochs);
  GstHarness *h = gst_harness_new_parse (launch);
  gst_harness_set_src_caps_str (h, caps);
  GstElement *lab = gst_harness_find_element (h, "tensor_labeler");
  for (guint e = 0; e < epochs; e++) {
    for (guint k = 0; k < n; k++) {
      guint c;
      GstBuffer *b = make (k, &c);
      g_object_set (lab, "label", (gint) c, NULL);
      fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    }
    GstBuffer *stats = gst_harness_pull (h);
    gdouble v[4];
    gst_buffer_extract (stats, 0, v, sizeof v);
    gst_buffer_unref (stats);
    if (e == 0)
      *first = v[0];
    *last = v[0];
    *accuracy = v[1];
  }
  gst_object_unref (lab);
  gst_harness_teardown (h);
  g_unlink (ini);
  g_rmdir (dir);
  g_free (ini);
  g_free (dir);
  g_free (launch);
}

/* 2x2 RGB frames of 3 classes: the left, right or no column lit. */
static GstBuffer *
make_column_frame (guint k, guint * c)
{
  *c = k % 3;
  /* RGB rows are padded to 4 bytes: 2 pixels take 8 */
  GstBuffer *b = gst_buffer_new_allocate (NULL, 16, NULL);
  GstMapInfo m;
  gst_buffer_map (b, &m, GST_MAP_WRITE);
  memset (m.data, 20, m.size);
  if (*c < 2)
    for (gint y = 0; y < 2; y++)
      memset (m.data + y * 8 + *c * 3, 230, 3);
  gst_buffer_unmap (b, &m);
  return b;
}

/* Frames of 3 classes through the labeler train a planar-input model. */
GST_START_TEST (test_labeler_to_trainer)
{
  gdouble first, last, accuracy;
  train_through_labeler ("[Model]\nbatch_size = 4\nloss = cross\n"
      "[Optimizer]\ntype = adam\nlearning_rate = 0.05\n"
      "[input]\ntype = input\ninput_shape = 3:2:2\n"
      "[flat]\ntype = flatten\n"
      "[out]\ntype = fully_connected\nunit = 3\nactivation = softmax\n",
      "num-classes=3", "video/x-raw,format=RGB,width=2,height=2,"
      "framerate=30/1", 3, 24, make_column_frame, &first, &last, &accuracy);
  fail_unless (last < first, "loss %g -> %g", first, last);
}

GST_END_TEST;


/* ---- audio ----------------------------------------------------------- */

/* A buffer of frames first .. first + n - 1 of an S16LE stream whose
 * channel c of frame f holds 100 * f + c (PTS at rate 1000). */
static GstBuffer *
make_s16 (guint first, guint n, guint channels)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, (gsize) n * channels * 2,
      NULL);
  GstMapInfo m;
  gst_buffer_map (b, &m, GST_MAP_WRITE);
  for (guint f = 0; f < n; f++)
    for (guint c = 0; c < channels; c++) {
      gint16 v = GINT16_TO_LE ((gint16) (100 * (first + f) + c));
      memcpy (m.data + ((gsize) f * channels + c) * 2, &v, 2);
    }
  gst_buffer_unmap (b, &m);
  GST_BUFFER_PTS (b) = gst_util_uint64_scale (first, GST_SECOND, 1000);
  return b;
}

/* Checks window k (frames k * hop ..) of make_s16's stream. */
static void
check_s16_window (GstBuffer * out, guint k, guint window, guint hop,
    guint channels, gboolean planar)
{
  gfloat v[64];
  /* (not "first": check's equality macros declare one) */
  const guint start = k * hop;
  fail_unless_equals_int (gst_memory_get_sizes (gst_buffer_peek_memory (out,
              0), NULL, NULL), window * channels * sizeof (gfloat));
  gst_buffer_extract (out, 0, v, window * channels * sizeof (gfloat));
  for (guint f = 0; f < window; f++)
    for (guint c = 0; c < channels; c++) {
      const gfloat want = (100.0f * (start + f) + c) / 32768.0f;
      const gfloat got = planar ? v[c * window + f] : v[f * channels + c];
      fail_unless (fabsf (got - want) < 1e-7f, "window %u frame %u ch %u: "
          "%g, expected %g", k, f, c, got, want);
    }
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out),
      gst_util_uint64_scale (start, GST_SECOND, 1000));
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out),
      gst_util_uint64_scale (window, GST_SECOND, 1000));
}

/* Windows of any size from buffers of any size: the same frames, in order,
 * with exact timestamps, overlapping (hop < window) or with gaps. */
GST_START_TEST (test_audio_windows)
{
  const struct
  {
    guint channels, window, hop;
    const gchar *layout, *dims, *fps;
  } cases[] = {
    {1, 4, 0, "planar", "4:1,3:1", "250/1"},
    {1, 4, 2, "planar", "4:1,3:1", "500/1"},
    {2, 5, 7, "planar", "5:1:2:1,3:1", "1000/7"},
    {2, 5, 3, "interleaved", "2:5:1,3:1", "1000/3"},
  };
  /* 40 frames in buffers of 3, 1, 7, 5, ... frames */
  const guint sizes[] = { 3, 1, 7, 5, 9, 2, 6, 4, 3 };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *caps = g_strdup_printf ("audio/x-raw,format=S16LE,"
        "layout=interleaved,channels=%u,rate=1000", cases[i].channels);
    gchar *props = g_strdup_printf ("num-classes=3 label=1 window=%u hop=%u "
        "layout=%s", cases[i].window, cases[i].hop, cases[i].layout);
    GstHarness *h = new_labeler (caps, props);
    const guint hop = cases[i].hop ? cases[i].hop : cases[i].window;
    guint at = 0, k = 0;
    for (guint b = 0; b < G_N_ELEMENTS (sizes); b++) {
      fail_unless_equals_int (gst_harness_push (h, make_s16 (at,
                  sizes[b], cases[i].channels)), GST_FLOW_OK);
      at += sizes[b];
      /* every window whose frames have all come */
      for (; k * hop + cases[i].window <= at; k++) {
        GstBuffer *out = gst_harness_try_pull (h);
        fail_unless (out != NULL, "case %u: window %u missing after %u "
            "frames", i, k, at);
        check_s16_window (out, k, cases[i].window, hop, cases[i].channels,
            g_str_equal (cases[i].layout, "planar"));
        gint hot;
        read_label (out, 3, &hot);
        fail_unless_equals_int (hot, 1);
        gst_buffer_unref (out);
      }
      fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
    }
    fail_unless_equals_int (at, 40);
    fail_unless_equals_int (k, (40 - cases[i].window) / hop + 1);
    GstCaps *oc = gst_pad_get_current_caps (h->sinkpad);
    GstStructure *st = gst_caps_get_structure (oc, 0);
    gchar *want = g_strdup_printf ("%s", cases[i].dims);
    fail_unless_equals_string (gst_structure_get_string (st, "dimensions"),
        want);
    gchar *fps = gst_value_serialize (gst_structure_get_value (st,
            "framerate"));
    fail_unless_equals_string (fps, cases[i].fps);
    g_free (fps);
    g_free (want);
    gst_caps_unref (oc);
    g_free (caps);
    g_free (props);
    gst_harness_teardown (h);
  }
}

GST_END_TEST;

/* F32LE passes through, U8 is centred on 128; label -1 consumes windows
 * unsent and the label changes per window; a discontinuity and a label
 * change drop the frames waiting; an out-of-range label is an error. */
GST_START_TEST (test_audio_formats_labels_discont)
{
  /* F32LE, 2 channels, window 2 */
  GstHarness *h = new_labeler ("audio/x-raw,format=F32LE,layout=interleaved,"
      "channels=2,rate=16000", "num-classes=2 label=0 window=2");
  const gfloat f[4] = { 0.5f, -0.25f, 1.0f, -1.0f };
  GstBuffer *b = gst_buffer_new_memdup (f, sizeof f);
  GstBuffer *out = gst_harness_push_and_pull (h, b);
  gfloat v[4];
  gst_buffer_extract (out, 0, v, sizeof v);
  /* planar: channel 0's frames, then channel 1's */
  fail_unless (v[0] == 0.5f && v[1] == 1.0f && v[2] == -0.25f
      && v[3] == -1.0f, "%g %g %g %g", v[0], v[1], v[2], v[3]);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* U8 mono, window 3 */
  h = new_labeler ("audio/x-raw,format=U8,layout=interleaved,channels=1,"
      "rate=8000", "num-classes=4 label=3 window=3");
  const guint8 u[3] = { 0, 128, 255 };
  out = gst_harness_push_and_pull (h, gst_buffer_new_memdup (u, sizeof u));
  gst_buffer_extract (out, 0, v, 3 * sizeof (gfloat));
  fail_unless (v[0] == -1.0f && v[1] == 0.0f && v[2] == 127.0f / 128.0f);
  gint hot;
  read_label (out, 4, &hot);
  fail_unless_equals_int (hot, 3);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* S16LE mono, window 2: labels per window */
  h = new_labeler ("audio/x-raw,format=S16LE,layout=interleaved,channels=1,"
      "rate=1000", "num-classes=3 label=0 window=2");
  GstElement *lab = gst_harness_find_element (h, "tensor_labeler");
  const gint schedule[] = { 2, -1, 1, -1, 0 };
  guint at = 0, pulled = 0;
  for (guint i = 0; i < G_N_ELEMENTS (schedule); i++) {
    g_object_set (lab, "label", schedule[i], NULL);
    fail_unless_equals_int (gst_harness_push (h, make_s16 (at, 2, 1)),
        GST_FLOW_OK);
    if (schedule[i] < 0) {
      fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
    } else {
      out = gst_harness_pull (h);
      check_s16_window (out, at / 2, 2, 2, 1, TRUE);
      read_label (out, 3, &hot);
      fail_unless_equals_int (hot, schedule[i]);
      gst_buffer_unref (out);
      pulled++;
    }
    at += 2;
  }
  fail_unless_equals_int (pulled, 3);

  /* one frame waits; a discontinuous buffer drops it */
  g_object_set (lab, "label", 1, NULL);
  fail_unless_equals_int (gst_harness_push (h, make_s16 (at, 1, 1)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  b = make_s16 (at + 10, 2, 1);
  GST_BUFFER_FLAG_SET (b, GST_BUFFER_FLAG_DISCONT);
  out = gst_harness_push_and_pull (h, b);
  check_s16_window (out, (at + 10) / 2, 2, 2, 1, TRUE);
  gst_buffer_unref (out);

  /* window 4 from now: two frames of class 1 wait; the label changes, so
   * the next window holds only frames of class 2 */
  gst_element_set_state (lab, GST_STATE_NULL);
  g_object_set (lab, "window", 4, "label", 1, NULL);
  gst_harness_play (h);
  at += 20;
  fail_unless_equals_int (gst_harness_push (h, make_s16 (at, 2, 1)),
      GST_FLOW_OK);
  g_object_set (lab, "label", 2, NULL);
  fail_unless_equals_int (gst_harness_push (h, make_s16 (at + 2, 3, 1)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  out = gst_harness_push_and_pull (h, make_s16 (at + 5, 1, 1));
  check_s16_window (out, (at + 2) / 2, 4, 2, 1, TRUE);
  read_label (out, 3, &hot);
  fail_unless_equals_int (hot, 2);
  gst_buffer_unref (out);

  /* out of range */
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (lab, bus);
  g_object_set (lab, "label", 3, NULL);
  fail_unless_equals_int (gst_harness_push (h, make_s16 (at + 12, 4, 1)),
      GST_FLOW_ERROR);
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (text, "label=3 is not below num-classes=3"), "%s", text);
  g_free (text);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  gst_object_unref (lab);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* 32 mono F32LE frames of 2 classes: a slow and a fast sine. */
static GstBuffer *
make_sine_window (guint k, guint * c)
{
  gfloat x[32];
  *c = k % 2;
  for (guint i = 0; i < 32; i++)
    x[i] = 0.8f * sinf ((*c ? 1.3f : 0.2f) * i + 0.37f * k);
  return gst_buffer_new_memdup (x, sizeof x);
}

/* Audio windows of two classes through the labeler train a conv1d model
 * taking channel:1:window. */
GST_START_TEST (test_audio_to_trainer)
{
  gdouble first, last, accuracy;
  train_through_labeler ("[Model]\nbatch_size = 4\nloss = cross\n"
      "[Optimizer]\ntype = adam\nlearning_rate = 0.02\n"
      "[input]\ntype = input\ninput_shape = 1:1:32\n"
      "[conv]\ntype = conv1d\nfilters = 4\nkernel_size = 5\n"
      "activation = tanh\n"
      "[gap]\ntype = pooling2d\npooling = global_average\n"
      "[flat]\ntype = flatten\n"
      "[out]\ntype = fully_connected\nunit = 2\nactivation = softmax\n",
      "num-classes=2 window=32", "audio/x-raw,format=F32LE,"
      "layout=interleaved,channels=1,rate=8000", 8, 16, make_sine_window,
      &first, &last, &accuracy);
  fail_unless (last < first, "loss %g -> %g", first, last);
  fail_unless (accuracy > 0.9, "last epoch's accuracy %g", accuracy);
}

GST_END_TEST;

static Suite *
tensor_labeler_suite (void)
{
  Suite *s = suite_create ("tensor_labeler");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_formats_and_values);
  tcase_add_test (tc, test_label_change);
  tcase_add_test (tc, test_refused_formats);
  tcase_add_test (tc, test_labeler_to_trainer);
  tcase_add_test (tc, test_audio_windows);
  tcase_add_test (tc, test_audio_formats_labels_discont);
  tcase_add_test (tc, test_audio_to_trainer);
  return s;
}

GST_CHECK_MAIN (tensor_labeler);
