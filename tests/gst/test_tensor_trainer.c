/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_trainer through GstHarness: caps accepted and refused, buffer
 * sizes, a small synthetic stream on which the loss falls, the per-epoch
 * figures, partial batches, EOS only after the model is on disk, early EOS,
 * pause/resume, checkpoints and model errors.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/base/gstbasesink.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "tt_engine.h"
#include "tt_bundle.h"
#include "tt_gst_test.h"

/* A caps event from a caps string: the event holds the only reference
 * (gst_event_new_caps refs its caps; passing gst_caps_from_string's
 * straight in leaks them, which the leaks-tracer run reports). */
static GstEvent *
caps_event (const gchar * str)
{
  GstCaps *caps = gst_caps_from_string (str);
  GstEvent *event = gst_event_new_caps (caps);
  gst_caps_unref (caps);
  return event;
}

/* input 1:1:4 -> fully_connected 3 -> softmax, cross entropy, batch 4 */
static const gchar *tiny_ini =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "epochs = 3\n"
    "batch_size = 4\n"
    "loss = cross\n"
    "[Optimizer]\n"
    "type = adam\n"
    "learning_rate = 0.05\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:1:4\n"
    "[output]\n"
    "type = fully_connected\n" "unit = 3\n" "activation = softmax\n";

#define TINY_CAPS "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"4:1:1:1,3:1:1:1\",types=(string)\"float32,float32\"," \
  "framerate=(fraction)0/1"

typedef struct
{
  gchar *dir, *ini, *bin;
  GstBus *bus;
  GstElement *trainer;
  GstHarness *h;
} Fixture;

static void
fixture_init (Fixture * f, const gchar * ini_text)
{
  memset (f, 0, sizeof *f);
  f->dir = g_dir_make_tmp ("tt-gst-XXXXXX", NULL);
  fail_unless (f->dir != NULL);
  f->ini = g_build_filename (f->dir, "tiny.ini", NULL);
  f->bin = g_build_filename (f->dir, "tiny.bin", NULL);
  fail_unless (g_file_set_contents (f->ini, ini_text ? ini_text : tiny_ini,
          -1, NULL));
  f->trainer = gst_element_factory_make ("tensor_trainer", NULL);
  fail_unless (f->trainer != NULL, "tensor_trainer not found");
  f->bus = gst_bus_new ();
  gst_element_set_bus (f->trainer, f->bus);
  g_object_set (f->trainer, "model-config", f->ini, "model-save-path", f->bin,
      NULL);
}

/* Wraps the configured element in a harness (which sets it PLAYING). */
static void
fixture_start (Fixture * f)
{
  f->h = gst_harness_new_with_element (f->trainer, "sink", "src");
}

static void
fixture_clear (Fixture * f)
{
  if (f->h)
    gst_harness_teardown (f->h);
  else
    gst_element_set_state (f->trainer, GST_STATE_NULL);
  gst_object_unref (f->trainer);
  gst_bus_set_flushing (f->bus, TRUE);
  gst_object_unref (f->bus);
  /* the test's own files, then the folder */
  GDir *d = g_dir_open (f->dir, 0, NULL);
  const gchar *name;
  while (d && (name = g_dir_read_name (d))) {
    gchar *p = g_build_filename (f->dir, name, NULL);
    g_unlink (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  g_rmdir (f->dir);
  g_free (f->dir);
  g_free (f->ini);
  g_free (f->bin);
}

/* Sample k of a separable 3-class problem: class k % 3 lights its input. */
static GstBuffer *
make_sample (guint k)
{
  gfloat x[4], y[3] = { 0, 0, 0 };
  const guint c = k % 3;
  guint32 r = k * 2654435761u;
  for (guint i = 0; i < 4; i++) {
    r = r * 1664525u + 1013904223u;
    x[i] = (gfloat) (r >> 8) / (gfloat) (1 << 24) * 0.4f - 0.2f;
  }
  x[c] += 1.0f;
  y[c] = 1.0f;
  GstMapInfo m0, m1;
  GstBuffer *b = gst_buffer_new ();
  GstMemory *mx = gst_allocator_alloc (NULL, sizeof x, NULL);
  GstMemory *my = gst_allocator_alloc (NULL, sizeof y, NULL);
  gst_memory_map (mx, &m0, GST_MAP_WRITE);
  memcpy (m0.data, x, sizeof x);
  gst_memory_unmap (mx, &m0);
  gst_memory_map (my, &m1, GST_MAP_WRITE);
  memcpy (m1.data, y, sizeof y);
  gst_memory_unmap (my, &m1);
  gst_buffer_append_memory (b, mx);
  gst_buffer_append_memory (b, my);
  return b;
}

static void
push_samples (GstHarness * h, guint from, guint n)
{
  for (guint k = from; k < from + n; k++)
    fail_unless_equals_int (gst_harness_push (h, make_sample (k)), GST_FLOW_OK);
}

static void
read_stats (GstBuffer * b, gdouble v[4])
{
  fail_unless (b != NULL);
  fail_unless_equals_int (gst_buffer_get_size (b), 4 * sizeof (gdouble));
  gst_buffer_extract (b, 0, v, 4 * sizeof (gdouble));
}

/* The next tensor-trainer-epoch message on the bus, or NULL. */
static GstMessage *
pop_epoch_message (GstBus * bus)
{
  return tt_gst_pop_named (bus, "tensor-trainer-epoch");
}

/* ---- caps ------------------------------------------------------------ */

GST_START_TEST (test_caps_accepted)
{
  const gchar *ok_caps[] = {
    TINY_CAPS,
    /* uint8 inputs; other placements of the 1s describe the same layout */
    "other/tensors,format=static,num_tensors=2,"
        "dimensions=(string)\"1:4:1:1,1:1:3:1\",types=(string)\"uint8,float32\"",
    "other/tensors,format=static,num_tensors=2,dimensions=(string)\"4.3\","
        "types=(string)\"float32.float32\"",
  };
  for (guint i = 0; i < G_N_ELEMENTS (ok_caps); i++) {
    Fixture f;
    fixture_init (&f, NULL);
    g_object_set (f.trainer, "num-training-samples", 4, NULL);
    fixture_start (&f);
    gst_harness_set_src_caps_str (f.h, ok_caps[i]);
    GstCaps *out = gst_pad_get_current_caps (f.h->sinkpad);
    fail_unless (out != NULL);
    GstStructure *s = gst_caps_get_structure (out, 0);
    fail_unless_equals_string (gst_structure_get_string (s, "dimensions"),
        "1:1:4:1");
    fail_unless_equals_string (gst_structure_get_string (s, "types"),
        "float64");
    gst_caps_unref (out);
    fail_if (gst_bus_have_pending (f.bus) &&
        gst_bus_pop_filtered (f.bus, GST_MESSAGE_ERROR), "unexpected error");
    fixture_clear (&f);
  }
}

GST_END_TEST;

GST_START_TEST (test_caps_refused)
{
  const struct
  {
    const gchar *caps, *says[3];
  } cases[] = {
    {"other/tensors,format=static,num_tensors=2,"
          "dimensions=(string)\"5:1:1:1,3:1:1:1\",types=(string)\"float32,float32\"",
        {"5:1:1:1", "expected 4:1:1:1", "input"}},
    {"other/tensors,format=static,num_tensors=2,"
          "dimensions=(string)\"4:1:1:1,3:1:1:1\",types=(string)\"float32,uint8\"",
        {"label", "type uint8", "expected float32"}},
    {"other/tensors,format=static,num_tensors=2,"
          "dimensions=(string)\"4:1:1:1,2:1:1:1\",types=(string)\"float32,int32\"",
          {"label", "or a class index: one element of an integer type",
            "label dimensions=3:1:1:1 types=float32 or a class index"}},
    {"other/tensors,format=static,num_tensors=3,"
          "dimensions=(string)\"4:1:1:1,3:1:1:1,1:1:1:1\","
          "types=(string)\"float32,float32,float32\"",
        {"3 tensors received", "takes 2 tensors", "num-inputs=1"}},
    {"other/tensors,format=static,num_tensors=2,"
          "dimensions=(string)\"4:1:1:1,3:1:1:1\",types=(string)\"int16,float32\"",
        {"type int16", "uint8 or float32", "input"}},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    Fixture f;
    fixture_init (&f, NULL);
    g_object_set (f.trainer, "num-training-samples", 4, NULL);
    fixture_start (&f);
    gst_harness_push_event (f.h, gst_event_new_stream_start ("test"));
    /* a sticky event counts as pushed even when refused: look at the pad */
    gst_harness_push_event (f.h, caps_event (cases[i].caps));
    GstPad *sink = gst_element_get_static_pad (f.trainer, "sink");
    fail_if (gst_pad_has_current_caps (sink));
    gst_object_unref (sink);
    GstSegment seg;
    gst_segment_init (&seg, GST_FORMAT_TIME);
    gst_harness_push_event (f.h, gst_event_new_segment (&seg));
    fail_unless_equals_int (gst_harness_push (f.h, make_sample (0)),
        GST_FLOW_NOT_NEGOTIATED);
    gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
    GST_INFO ("refusal: %s", msg);
    for (guint j = 0; j < 3; j++)
      fail_unless (strstr (msg, cases[i].says[j]) != NULL,
          "\"%s\" does not say \"%s\"", msg, cases[i].says[j]);
    g_free (msg);
    fixture_clear (&f);
  }
}

GST_END_TEST;

/* ---- buffers --------------------------------------------------------- */

GST_START_TEST (test_wrong_buffer_size)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 4, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  GstBuffer *b = gst_buffer_new ();
  gst_buffer_append_memory (b, gst_allocator_alloc (NULL, 12, NULL));
  gst_buffer_append_memory (b, gst_allocator_alloc (NULL, 12, NULL));
  fail_unless_equals_int (gst_harness_push (f.h, b), GST_FLOW_ERROR);
  gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "holds 12 bytes, expected 16 bytes") != NULL,
      "%s", msg);
  g_free (msg);

  /* else the memories must hold all tensors back to back: 28 bytes */
  b = gst_buffer_new_allocate (NULL, 20, NULL);
  fail_unless_equals_int (gst_harness_push (f.h, b), GST_FLOW_ERROR);
  msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "20 bytes in 1 memories") != NULL, "%s", msg);
  fail_unless (strstr (msg, "or 28 bytes in all") != NULL, "%s", msg);
  g_free (msg);
  fixture_clear (&f);
}

GST_END_TEST;

/* Tensors back to back are read across memories (gst_buffer_extract), so a
 * sample's 28 bytes split in any 3 memories are taken, as the predictor
 * takes them: one rule for both (gst/common/gsttensorsamples.c). */
GST_START_TEST (test_sample_split_across_memories)
{
  Fixture f;
  guint8 bytes[28];
  GstBuffer *whole, *split;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 4, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  whole = make_sample (0);
  fail_unless_equals_int (gst_buffer_extract (whole, 0, bytes, sizeof bytes),
      sizeof bytes);
  gst_buffer_unref (whole);
  split = gst_buffer_new ();
  gst_buffer_append_memory (split, gst_allocator_alloc (NULL, 10, NULL));
  gst_buffer_append_memory (split, gst_allocator_alloc (NULL, 10, NULL));
  gst_buffer_append_memory (split, gst_allocator_alloc (NULL, 8, NULL));
  fail_unless_equals_int (gst_buffer_fill (split, 0, bytes, sizeof bytes),
      sizeof bytes);
  fail_unless_equals_int (gst_harness_push (f.h, split), GST_FLOW_OK);
  fixture_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_single_memory_accepted)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 4, "epochs", 1, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  for (guint k = 0; k < 4; k++) {
    GstBuffer *two = make_sample (k);
    GstBuffer *one = gst_buffer_new_allocate (NULL, 28, NULL);
    GstMapInfo m;
    gst_buffer_map (one, &m, GST_MAP_WRITE);
    gst_buffer_extract (two, 0, m.data, 28);
    gst_buffer_unmap (one, &m);
    gst_buffer_unref (two);
    fail_unless_equals_int (gst_harness_push (f.h, one), GST_FLOW_OK);
  }
  gdouble v[4];
  GstBuffer *stats = gst_harness_pull (f.h);
  read_stats (stats, v);
  fail_unless (isfinite (v[0]) && v[0] > 0);
  gst_buffer_unref (stats);
  fixture_clear (&f);
}

GST_END_TEST;

/* ---- training -------------------------------------------------------- */

GST_START_TEST (test_loss_falls)
{
  Fixture f;
  const guint epochs = 6, n = 60;
  gdouble first[4], last[4];
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", n, "epochs", epochs, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  for (guint e = 0; e < epochs; e++) {
    push_samples (f.h, 0, n);
    GstBuffer *stats = gst_harness_pull (f.h);
    gdouble v[4];
    read_stats (stats, v);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (stats), e * GST_SECOND);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (stats), GST_SECOND);
    gst_buffer_unref (stats);
    GST_INFO ("epoch %u: loss %g accuracy %g", e + 1, v[0], v[1]);
    fail_unless (v[0] > 0 && isfinite (v[0]));
    fail_unless (v[1] >= 0 && v[1] <= 1);
    fail_unless (isnan (v[2]) && isnan (v[3]), "no validation: NaN");
    memcpy (e == 0 ? first : last, v, sizeof v);

    GstMessage *m = pop_epoch_message (f.bus);
    fail_unless (m != NULL);
    const GstStructure *s = gst_message_get_structure (m);
    guint epoch, total;
    guint64 samples;
    gdouble loss, rate;
    gboolean complete;
    fail_unless (gst_structure_get (s, "epoch", G_TYPE_UINT, &epoch,
            "epochs", G_TYPE_UINT, &total, "samples", G_TYPE_UINT64, &samples,
            "loss", G_TYPE_DOUBLE, &loss, "samples-per-second", G_TYPE_DOUBLE,
            &rate, "complete", G_TYPE_BOOLEAN, &complete, NULL));
    fail_unless_equals_int (epoch, e + 1);
    fail_unless_equals_int (total, epochs);
    fail_unless_equals_uint64 (samples, n);
    fail_unless_equals_float (loss, v[0]);
    fail_unless (complete);
    fail_unless (rate > 0);
    gst_message_unref (m);
  }
  fail_unless (last[0] < first[0] * 0.5, "loss %g -> %g", first[0], last[0]);
  fail_unless (last[1] > 0.9, "accuracy %g", last[1]);
  fixture_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_validation_figures)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 30,
      "num-validation-samples", 9, "epochs", 2, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  for (guint e = 0; e < 2; e++) {
    push_samples (f.h, 0, 39);
    gdouble v[4];
    GstBuffer *stats = gst_harness_pull (f.h);
    read_stats (stats, v);
    gst_buffer_unref (stats);
    for (guint i = 0; i < 4; i++)
      fail_unless (isfinite (v[i]), "figure %u is %g", i, v[i]);
    fail_unless (v[2] > 0);
    fail_unless (v[3] >= 0 && v[3] <= 1);
    /* 9 samples: the accuracy is a multiple of 1/9 */
    fail_unless (fabs (v[3] * 9 - round (v[3] * 9)) < 1e-9);
    GstMessage *m = pop_epoch_message (f.bus);
    guint64 samples, vsamples;
    fail_unless (gst_structure_get (gst_message_get_structure (m), "samples",
            G_TYPE_UINT64, &samples, "validation-samples", G_TYPE_UINT64,
            &vsamples, NULL));
    fail_unless_equals_uint64 (samples, 30);
    fail_unless_equals_uint64 (vsamples, 9);
    gst_message_unref (m);
  }
  fixture_clear (&f);
}

GST_END_TEST;

/* The BIN at the fixture's save path loads into its model with these
 * epoch and iteration counters. */
static void
check_saved_counters (Fixture * f, guint epoch, guint iteration)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (f->ini, &err);
  fail_unless (m != NULL, "%s", err.message);
  fail_unless_equals_int (tt_model_compile (m, &err), TT_OK);
  fail_unless_equals_int (tt_model_load_bin (m, f->bin, &err), TT_OK);
  fail_unless_equals_int (tt_model_epoch (m), epoch);
  fail_unless_equals_int (tt_model_iteration (m), iteration);
  tt_model_free (m);
}

/* 10 samples with batch 4: batches of 4, 4 and 2 (no sample dropped). */
GST_START_TEST (test_partial_batch)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 10, "epochs", 2, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 20);
  check_saved_counters (&f, 2, 6);
  fixture_clear (&f);
}

GST_END_TEST;

typedef struct
{
  const gchar *bin, *ini;
  gint eos_seen;
  gboolean file_loaded;
} EosCheck;

static GstPadProbeReturn
eos_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  EosCheck *c = data;
  (void) pad;
  if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) == GST_EVENT_EOS) {
    tt_error err;
    tt_model *m = tt_model_load_ini (c->ini, &err);
    c->eos_seen++;
    c->file_loaded = m && tt_model_compile (m, &err) == TT_OK
        && tt_model_load_bin (m, c->bin, &err) == TT_OK;
    tt_model_free (m);
  }
  return GST_PAD_PROBE_OK;
}

static void
check_eos_after_save (guint pushed, gboolean send_eos)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 12, "epochs", 2, NULL);
  fixture_start (&f);
  EosCheck c = { f.bin, f.ini, 0, FALSE };
  GstPad *src = gst_element_get_static_pad (f.trainer, "src");
  gst_pad_add_probe (src, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, eos_probe, &c,
      NULL);
  gst_object_unref (src);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  fail_if (g_file_test (f.bin, G_FILE_TEST_EXISTS));
  push_samples (f.h, 0, pushed);
  if (send_eos)
    fail_unless (gst_harness_push_event (f.h, gst_event_new_eos ()));
  fail_unless_equals_int (c.eos_seen, 1);
  fail_unless (c.file_loaded, "EOS went out before the model was loadable");
  /* buffers after the last epoch are dropped: a tee upstream goes on */
  if (!send_eos) {
    fail_unless_equals_int (gst_harness_push (f.h, make_sample (0)),
        GST_FLOW_OK);
    fail_unless_equals_int (c.eos_seen, 1);
  }
  gchar *warning = tt_gst_pop_text (f.bus, GST_MESSAGE_WARNING);
  if (pushed < 24)
    fail_unless (strstr (warning, "EOS after 17 of 24 expected samples"),
        "%s", warning);
  else
    fail_unless_equals_string (warning, "");
  g_free (warning);
  fixture_clear (&f);
}

GST_START_TEST (test_eos_after_model_saved)
{
  check_eos_after_save (24, FALSE);     /* the element ends after 2 epochs */
  check_eos_after_save (24, TRUE);      /* upstream EOS after that: dropped */
}

GST_END_TEST;

/* Packaging is the default: a save path not ending in .bin gets a bundle
 * (INI, plan, weights, optimizer state, counters), which loads on its own
 * as a compiled model and serves as model-config and model-load-path. */
GST_START_TEST (test_bundle_save_and_resume)
{
  Fixture f;
  fixture_init (&f, NULL);
  gchar *bundle = g_build_filename (f.dir, "tiny.ttb", NULL);
  g_object_set (f.trainer, "num-training-samples", 12, "epochs", 1,
      "model-save-path", bundle, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 12);
  fail_unless (tt_bundle_is_bundle (bundle), "no bundle written");
  tt_error err;
  tt_model *m = tt_bundle_load (bundle, NULL, &err);
  fail_unless (m != NULL, "%s", m ? "" : err.message);
  fail_unless_equals_int (tt_model_iteration (m), 3);
  fail_unless_equals_int (tt_model_epoch (m), 1);
  tt_model_free (m);

  /* the bundle as the whole model: training goes on from its counters */
  Fixture g;
  fixture_init (&g, NULL);
  gchar *again = g_build_filename (g.dir, "again.ttb", NULL);
  g_object_set (g.trainer, "model-config", bundle, "model-save-path", again,
      "num-training-samples", 12, "epochs", 1, NULL);
  fixture_start (&g);
  gst_harness_set_src_caps_str (g.h, TINY_CAPS);
  push_samples (g.h, 0, 12);
  m = tt_bundle_load (again, NULL, &err);
  fail_unless (m != NULL, "%s", m ? "" : err.message);
  fail_unless_equals_int (tt_model_iteration (m), 6);
  tt_model_free (m);
  fixture_clear (&g);
  fixture_clear (&f);
  g_free (bundle);
  g_free (again);
}

GST_END_TEST;

GST_START_TEST (test_early_eos)
{
  check_eos_after_save (17, TRUE);

  /* the partial epoch is pushed and posted as incomplete */
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 12, "epochs", 2, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 17);
  fail_unless (gst_harness_push_event (f.h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (f.h), 2);
  GstMessage *m1 = pop_epoch_message (f.bus), *m2 = pop_epoch_message (f.bus);
  gboolean c1, c2;
  guint64 s2;
  fail_unless (gst_structure_get (gst_message_get_structure (m1), "complete",
          G_TYPE_BOOLEAN, &c1, NULL));
  fail_unless (gst_structure_get (gst_message_get_structure (m2), "complete",
          G_TYPE_BOOLEAN, &c2, "samples", G_TYPE_UINT64, &s2, NULL));
  fail_unless (c1 && !c2);
  fail_unless_equals_uint64 (s2, 5);
  gst_message_unref (m1);
  gst_message_unref (m2);
  fixture_clear (&f);

  /* EOS before any sample: nothing saved, said so */
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 12, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  fail_unless (gst_harness_push_event (f.h, gst_event_new_eos ()));
  gchar *warning = tt_gst_pop_text (f.bus, GST_MESSAGE_WARNING);
  fail_unless (strstr (warning, "EOS before any sample"), "%s", warning);
  g_free (warning);
  fail_if (g_file_test (f.bin, G_FILE_TEST_EXISTS));
  fixture_clear (&f);
}

GST_END_TEST;

typedef struct
{
  GstHarness *h;
  guint from, n;
} PushJob;

static gpointer
push_thread (gpointer data)
{
  PushJob *j = data;
  push_samples (j->h, j->from, j->n);
  return NULL;
}

GST_START_TEST (test_pause_resume)
{
  Fixture f;
  tt_error err;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 20, "epochs", 2, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 15);

  /* paused: a buffer waits, and nothing is lost */
  fail_unless_equals_int (gst_element_set_state (f.trainer,
          GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  PushJob job = { f.h, 15, 25 };
  GThread *t = g_thread_new ("push", push_thread, &job);
  g_usleep (300 * 1000);
  fail_unless_equals_int (gst_harness_buffers_received (f.h), 0);
  fail_unless_equals_int (gst_element_set_state (f.trainer,
          GST_STATE_PLAYING), GST_STATE_CHANGE_SUCCESS);
  g_thread_join (t);

  fail_unless_equals_int (gst_harness_buffers_received (f.h), 2);
  for (guint e = 0; e < 2; e++) {
    GstMessage *m = pop_epoch_message (f.bus);
    guint64 samples;
    guint epoch;
    fail_unless (gst_structure_get (gst_message_get_structure (m), "samples",
            G_TYPE_UINT64, &samples, "epoch", G_TYPE_UINT, &epoch, NULL));
    fail_unless_equals_uint64 (samples, 20);
    fail_unless_equals_int (epoch, e + 1);
    gst_message_unref (m);
  }
  gchar *warning = tt_gst_pop_text (f.bus, GST_MESSAGE_WARNING);
  fail_unless_equals_string (warning, "");
  g_free (warning);
  tt_model *m = tt_model_load_ini (f.ini, &err);
  fail_unless (m && tt_model_compile (m, &err) == TT_OK);
  fail_unless_equals_int (tt_model_load_bin (m, f.bin, &err), TT_OK);
  fail_unless_equals_int (tt_model_iteration (m), 10);
  tt_model_free (m);
  fixture_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_checkpoints_and_quiet)
{
  Fixture f;
  fixture_init (&f, NULL);
  gchar *pattern = g_build_filename (f.dir, "ck-%u.bin", NULL);
  g_object_set (f.trainer, "num-training-samples", 8, "epochs", 2,
      "checkpoint-path", pattern, "post-messages", FALSE, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 16);
  for (guint e = 1; e <= 2; e++) {
    gchar *name = g_strdup_printf ("ck-%u.bin", e);
    gchar *path = g_build_filename (f.dir, name, NULL);
    fail_unless (g_file_test (path, G_FILE_TEST_EXISTS), "%s missing", path);
    g_free (name);
    g_free (path);
  }
  fail_unless (pop_epoch_message (f.bus) == NULL);
  g_free (pattern);
  fixture_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_nan_input_is_an_error)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 8, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 3);
  GstBuffer *b = make_sample (3);
  GstMapInfo m;
  GstMemory *mem = gst_buffer_peek_memory (b, 0);
  gst_memory_map (mem, &m, GST_MAP_WRITE);
  ((gfloat *) m.data)[2] = NAN;
  gst_memory_unmap (mem, &m);
  fail_unless_equals_int (gst_harness_push (f.h, b), GST_FLOW_ERROR);
  gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "Training diverged") && strstr (msg, f.ini)
      && strstr (msg, "nan"), "%s", msg);
  g_free (msg);
  fixture_clear (&f);
}

GST_END_TEST;

/* skip-bad-batches: a batch with a NaN input is dropped with a warning,
 * the model is untouched, training goes on and the epoch message counts
 * the dropped samples. */
GST_START_TEST (test_skip_bad_batches)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 8, "epochs", 1,
      "skip-bad-batches", TRUE, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 3);
  GstBuffer *b = make_sample (3);
  GstMapInfo m;
  GstMemory *mem = gst_buffer_peek_memory (b, 0);
  gst_memory_map (mem, &m, GST_MAP_WRITE);
  ((gfloat *) m.data)[2] = INFINITY;
  gst_memory_unmap (mem, &m);
  fail_unless_equals_int (gst_harness_push (f.h, b), GST_FLOW_OK);
  gchar *warning = tt_gst_pop_text (f.bus, GST_MESSAGE_WARNING);
  fail_unless (strstr (warning, "Skipped a batch of 4 samples"), "%s", warning);
  g_free (warning);
  push_samples (f.h, 4, 4);
  GstMessage *em = pop_epoch_message (f.bus);
  fail_unless (em != NULL, "no epoch message");
  guint64 samples, skipped;
  gdouble loss;
  fail_unless (gst_structure_get (gst_message_get_structure (em),
          "samples", G_TYPE_UINT64, &samples, "skipped-samples",
          G_TYPE_UINT64, &skipped, "loss", G_TYPE_DOUBLE, &loss, NULL));
  fail_unless_equals_uint64 (samples, 4);
  fail_unless_equals_uint64 (skipped, 4);
  fail_unless (isfinite (loss));
  gst_message_unref (em);
  gchar *error = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (error, "");
  g_free (error);
  fixture_clear (&f);
}

GST_END_TEST;

/* An nnstreamer launch line (framework=nntrainer, the nntrainer BIN as
 * save path, every count set) trains and saves unchanged. */
GST_START_TEST (test_nnstreamer_properties)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "framework", "nntrainer", "num-inputs", 1,
      "num-labels", 1, "num-training-samples", 8, "num-validation-samples", 4,
      "epochs", 2, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  for (guint e = 0; e < 2; e++) {
    push_samples (f.h, 0, 12);
    gdouble v[4];
    GstBuffer *stats = gst_harness_pull (f.h);
    read_stats (stats, v);
    gst_buffer_unref (stats);
    for (guint i = 0; i < 4; i++)
      fail_unless (isfinite (v[i]), "epoch %u figure %u is %g", e, i, v[i]);
  }
  gchar *error = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (error, "");
  g_free (error);
  check_saved_counters (&f, 2, 4);
  fixture_clear (&f);
}

GST_END_TEST;

/* ---- start-up errors ------------------------------------------------- */

/* Property and file errors fail READY->PAUSED. */
static gchar *
start_error (const gchar * prop, const gchar * value)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 8, NULL);
  if (prop)
    g_object_set (f.trainer, prop, value, NULL);
  fail_unless_equals_int (gst_element_set_state (f.trainer, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fixture_clear (&f);
  return msg;
}

GST_START_TEST (test_start_errors)
{
  gchar *ini = NULL;
  gchar *msg = start_error ("framework", "tensorflow-lite");
  fail_unless (strstr (msg, "Unknown framework \"tensorflow-lite\""), "%s",
      msg);
  g_free (msg);

  msg = start_error ("model-config", "");
  fail_unless (strstr (msg, "No model-config set"), "%s", msg);
  g_free (msg);

  /* model files are read at start too, not when the caps come */
  msg = start_error ("model-config", "/nonexistent/model.ini");
  fail_unless (strstr (msg, "/nonexistent/model.ini") != NULL, "%s", msg);
  g_free (msg);

  gchar *dir = g_dir_make_tmp ("tt-bad-XXXXXX", NULL);
  ini = g_build_filename (dir, "bad.ini", NULL);
  gchar *bad = g_strdup_printf ("%s%s", tiny_ini, "colour = blue\n");
  fail_unless (g_file_set_contents (ini, bad, -1, NULL));
  msg = start_error ("model-config", ini);
  fail_unless (strstr (msg, ini) && strstr (msg, "colour"), "%s", msg);
  g_free (msg);
  g_free (bad);
  g_unlink (ini);
  g_rmdir (dir);
  g_free (ini);
  g_free (dir);

  msg = start_error ("model-load-path", "/nonexistent/w.bin");
  fail_unless (strstr (msg, "/nonexistent/w.bin") != NULL, "%s", msg);
  g_free (msg);
}

GST_END_TEST;

GST_START_TEST (test_property_errors)
{
  Fixture f;
  fixture_init (&f, NULL);
  /* num-training-samples left at 0 */
  fail_unless_equals_int (gst_element_set_state (f.trainer, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "num-training-samples is 0"), "%s", msg);
  g_free (msg);
  g_object_set (f.trainer, "num-training-samples", 4, "num-labels", 2, NULL);
  fail_unless_equals_int (gst_element_set_state (f.trainer, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "num-labels=2"), "%s", msg);
  g_free (msg);
  fixture_clear (&f);

  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 4, "num-inputs", 2, NULL);
  fail_unless_equals_int (gst_element_set_state (f.trainer, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "num-inputs=2") && strstr (msg, "1 input"), "%s",
      msg);
  g_free (msg);
  fixture_clear (&f);
}

GST_END_TEST;

/* ---- tensor_datasrc ! tensor_trainer --------------------------------- */

static void
write_be32 (GByteArray * a, guint32 v)
{
  guint8 b[4] = { v >> 24, v >> 16, v >> 8, v };
  g_byte_array_append (a, b, 4);
}

/* 2x2 grayscale images of 3 classes: class c lights pixel c. */
static void
write_idx (const gchar * images, const gchar * labels, guint count)
{
  GByteArray *im = g_byte_array_new (), *lb = g_byte_array_new ();
  const guint8 ih[4] = { 0, 0, 0x08, 3 }, lh[4] = { 0, 0, 0x08, 1 };
  g_byte_array_append (im, ih, 4);
  write_be32 (im, count);
  write_be32 (im, 2);
  write_be32 (im, 2);
  g_byte_array_append (lb, lh, 4);
  write_be32 (lb, count);
  for (guint i = 0; i < count; i++) {
    guint8 px[4] = { 10, 20, 15, 5 }, c = i % 3;
    px[c] = 250;
    g_byte_array_append (im, px, 4);
    g_byte_array_append (lb, &c, 1);
  }
  fail_unless (g_file_set_contents (images, (gchar *) im->data, im->len, NULL));
  fail_unless (g_file_set_contents (labels, (gchar *) lb->data, lb->len, NULL));
  g_byte_array_unref (im);
  g_byte_array_unref (lb);
}

GST_START_TEST (test_datasrc_to_trainer)
{
  Fixture f;
  /* the model takes 1:2:2 (flattened), tensor_datasrc sends GRAY8-style
   * 1:2:2:1 */
  gchar **halves = g_strsplit (tiny_ini, "input_shape = 1:1:4\n", 2);
  gchar *ini = g_strconcat (halves[0], "input_shape = 1:2:2\n"
      "[flat]\ntype = flatten\n", halves[1], NULL);
  g_strfreev (halves);
  fixture_init (&f, ini);
  gchar *images = g_build_filename (f.dir, "im.idx", NULL);
  gchar *labels = g_build_filename (f.dir, "lb.idx", NULL);
  write_idx (images, labels, 30);
  gchar *launch = g_strdup_printf ("tensor_datasrc location=%s "
      "label-location=%s num-samples=24 validation-start-sample=24 "
      "validation-num-samples=6 num-classes=3 shuffle=true seed=1 epochs=4 "
      "image-format=float32 ! tensor_trainer name=trainer model-config=%s "
      "num-training-samples=24 num-validation-samples=6 epochs=4 "
      "model-save-path=%s", images, labels, f.ini, f.bin);
  GstHarness *h = gst_harness_new_parse (launch);
  gst_element_set_bus (h->element, f.bus);
  EosCheck c = { f.bin, f.ini, 0, FALSE };
  /* by its name: the factory (the harness's way) may be tt_tensor_trainer,
   * the plugin's second name for the same type */
  GstElement *trainer = gst_bin_get_by_name (GST_BIN (h->element), "trainer");
  fail_unless (trainer != NULL);
  GstPad *trainer_src = gst_element_get_static_pad (trainer, "src");
  gst_pad_add_probe (trainer_src, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      eos_probe, &c, NULL);
  gst_object_unref (trainer_src);
  gst_object_unref (trainer);
  gst_harness_play (h);
  gdouble first[4], v[4];
  for (guint e = 0; e < 4; e++) {
    GstBuffer *b = gst_harness_pull (h);
    read_stats (b, v);
    gst_buffer_unref (b);
    if (e == 0)
      memcpy (first, v, sizeof v);
    fail_unless (isfinite (v[2]) && v[3] >= 0 && v[3] <= 1);
  }
  fail_unless (v[0] < first[0], "loss %g -> %g", first[0], v[0]);
  GstEvent *ev;
  while ((ev = gst_harness_pull_event (h))) {
    gboolean eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    gst_event_unref (ev);
    if (eos)
      break;
  }
  fail_unless_equals_int (c.eos_seen, 1);
  fail_unless (c.file_loaded);
  gst_harness_teardown (h);
  for (guint i = 0; i < 2; i++)
    g_unlink (i ? images : labels);
  g_free (images);
  g_free (labels);
  g_free (launch);
  g_free (ini);
  fixture_clear (&f);
}

GST_END_TEST;

/* ---- caps forms: flexible, other/tensor, flat tensors ----------------- */

#define FLEX_CAPS "other/tensors,format=flexible,framerate=(fraction)0/1"

static GstMemory *
copy_memory (gconstpointer data, gsize size)
{
  gpointer copy = g_memdup2 (data, size);
  return gst_memory_new_wrapped (0, copy, size, 0, size, copy, g_free);
}

/* Sample k with integer inputs (so uint8 and float32 say the same): as
 * static float32 tensors, or flexible with the input as uint8 when
 * as_uint8. */
static GstBuffer *
make_int_sample (guint k, gboolean flexible, gboolean as_uint8)
{
  const guint c = k % 3;
  gfloat x[4], y[3] = { 0, 0, 0 };
  guint8 xu[4];
  const guint32 in_dims[4] = { 4, 1, 1, 1 }, lb_dims[4] = { 3, 1, 1, 1 };
  GstBuffer *b = gst_buffer_new ();
  for (guint i = 0; i < 4; i++) {
    xu[i] = (guint8) ((k * 7 + i * 13) % 5 + (i == c ? 8 : 0));
    x[i] = xu[i];
  }
  y[c] = 1.0f;
  if (!flexible) {
    gst_buffer_append_memory (b, copy_memory (x, sizeof x));
  } else if (as_uint8) {
    gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_UINT8, in_dims,
            4, xu, sizeof xu));
  } else {
    gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_FLOAT32, in_dims,
            4, x, sizeof x));
  }
  if (flexible)
    gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_FLOAT32, lb_dims,
            1, y, sizeof y));
  else
    gst_buffer_append_memory (b, copy_memory (y, sizeof y));
  return b;
}

/* Trains 2 epochs of 10 samples; returns the 8 figures. */
static void
run_int_stream (gboolean flexible, gdouble out[8])
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 10, "epochs", 2, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, flexible ? FLEX_CAPS : TINY_CAPS);
  for (guint k = 0; k < 20; k++)
    fail_unless_equals_int (gst_harness_push (f.h, make_int_sample (k,
                flexible, k % 2 == 1)), GST_FLOW_OK);
  for (guint e = 0; e < 2; e++) {
    GstBuffer *b = gst_harness_pull (f.h);
    read_stats (b, out + 4 * e);
    gst_buffer_unref (b);
  }
  gchar *err = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (err, "");
  g_free (err);
  fixture_clear (&f);
}

/* A flexible stream mixing uint8 and float32 inputs trains exactly as the
 * static float32 stream of the same values. */
GST_START_TEST (test_flexible_matches_static)
{
  gdouble a[8], b[8];
  run_int_stream (FALSE, a);
  run_int_stream (TRUE, b);
  for (guint i = 0; i < 8; i++) {
    if (i % 4 < 2)
      fail_unless (isfinite (a[i]), "figure %u: %g", i, a[i]);
    fail_unless (memcmp (&a[i], &b[i], sizeof a[i]) == 0,
        "figure %u: static %.17g, flexible %.17g", i, a[i], b[i]);
  }
}

GST_END_TEST;

#define INDEX_CAPS(type) "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"4:1:1:1,1:1:1:1\",types=(string)\"float32," type \
  "\",framerate=(fraction)0/1"

typedef enum
{ INDEX_UINT8, INDEX_INT32, INDEX_INT64, INDEX_FLOAT32 } IndexType;

/* make_int_sample's sample with its label as a class index: value (not
 * necessarily its class) as type, static or flexible (int32). */
static GstBuffer *
make_index_sample (guint k, gboolean flexible, IndexType type, gdouble value)
{
  GstBuffer *b = make_int_sample (k, flexible, FALSE);
  union
  {
    guint8 u8;
    gint32 i32;
    gint64 i64;
    gfloat f32;
  } v;
  gsize size;
  gst_buffer_remove_memory (b, 1);
  switch (type) {
    case INDEX_UINT8:
      v.u8 = (guint8) value;
      size = 1;
      break;
    case INDEX_INT32:
      v.i32 = (gint32) value;
      size = 4;
      break;
    case INDEX_INT64:
      v.i64 = (gint64) value;
      size = 8;
      break;
    default:
      v.f32 = (gfloat) value;
      size = 4;
      break;
  }
  if (flexible) {
    const guint32 dims[4] = { 1, 1, 1, 1 };
    fail_unless (type == INDEX_INT32);
    gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_INT32, dims, 4,
            &v, size));
  } else {
    gst_buffer_append_memory (b, copy_memory (&v, size));
  }
  return b;
}

/* A class index as the label (uint8, int32, int64, float32; static or
 * flexible) trains exactly as its one-hot vector; an index that is no
 * class is an error naming the sample (test_caps_refused: a label of two
 * elements is not an index). */
GST_START_TEST (test_index_labels)
{
  const struct
  {
    const gchar *caps;
    IndexType type;
    gboolean flexible;
  } cases[] = {
    {INDEX_CAPS ("uint8"), INDEX_UINT8, FALSE},
    {INDEX_CAPS ("int32"), INDEX_INT32, FALSE},
    {INDEX_CAPS ("int64"), INDEX_INT64, FALSE},
    {INDEX_CAPS ("float32"), INDEX_FLOAT32, FALSE},
    {FLEX_CAPS, INDEX_INT32, TRUE},
  };
  gdouble want[8];
  run_int_stream (FALSE, want);
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    Fixture f;
    gdouble got[8];
    fixture_init (&f, NULL);
    g_object_set (f.trainer, "num-training-samples", 10, "epochs", 2, NULL);
    fixture_start (&f);
    gst_harness_set_src_caps_str (f.h, cases[c].caps);
    for (guint k = 0; k < 20; k++)
      fail_unless_equals_int (gst_harness_push (f.h, make_index_sample (k,
                  cases[c].flexible, cases[c].type, k % 3)), GST_FLOW_OK);
    for (guint e = 0; e < 2; e++) {
      GstBuffer *b = gst_harness_pull (f.h);
      read_stats (b, got + 4 * e);
      gst_buffer_unref (b);
    }
    for (guint i = 0; i < 8; i++)
      fail_unless (memcmp (&got[i], &want[i], sizeof got[i]) == 0,
          "case %u figure %u: %.17g, one-hot %.17g", c, i, got[i], want[i]);
    fixture_clear (&f);
  }

  /* no class: 3 of 3 classes, 1.5, -1 */
  const struct
  {
    const gchar *caps;
    IndexType type;
    gboolean flexible;
    gdouble value;
    const gchar *says;
  } bad[] = {
    {INDEX_CAPS ("uint8"), INDEX_UINT8, FALSE, 3,
        "the label 3 (uint8) is not a class index: the model has 3 classes"},
    {INDEX_CAPS ("float32"), INDEX_FLOAT32, FALSE, 1.5,
        "the label 1.5 (float32) is not a class index"},
    {FLEX_CAPS, INDEX_INT32, TRUE, -1,
        "the label -1 (int32) is not a class index"},
  };
  for (guint c = 0; c < G_N_ELEMENTS (bad); c++) {
    Fixture f;
    fixture_init (&f, NULL);
    g_object_set (f.trainer, "num-training-samples", 10, NULL);
    fixture_start (&f);
    gst_harness_set_src_caps_str (f.h, bad[c].caps);
    fail_unless_equals_int (gst_harness_push (f.h, make_index_sample (0,
                bad[c].flexible, bad[c].type, 0)), GST_FLOW_OK);
    fail_unless_equals_int (gst_harness_push (f.h, make_index_sample (1,
                bad[c].flexible, bad[c].type, bad[c].value)), GST_FLOW_ERROR);
    gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
    fail_unless (strstr (msg, "Sample 1: ") && strstr (msg, bad[c].says),
        "%s", msg);
    g_free (msg);
    fixture_clear (&f);
  }
}

GST_END_TEST;

GST_START_TEST (test_flexible_bad_headers)
{
  const struct
  {
    guint field;                /* header word to change, or 99: data size */
    guint32 value;
    guint tensor;
    const gchar *says[2];
  } cases[] = {
    {0, 0xfeedcc00, 0, {"magic is 0xfeedcc00", "tensor 0 (input)"}},
    {1, 0x00001000, 0, {"version 0x00001000", "Bad flexible tensor header"}},
    {2, 11, 1, {"type 11 is not a tensor type", "tensor 1 (label)"}},
    {19, 2, 0, {"sparse", "not supported"}},
    {20, 9, 0, {"media type 9", "tensor 0"}},
    {3, 5, 0, {"dimensions 5:1:1:1", "expected 4:1:1:1"}},
    {2, TT_NNS_UINT8, 1, {"type uint8", "expected float32"}},
    {99, 8, 1, {"announces 12 bytes of data", "8 are left"}},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    Fixture f;
    fixture_init (&f, NULL);
    g_object_set (f.trainer, "num-training-samples", 8, NULL);
    fixture_start (&f);
    gst_harness_set_src_caps_str (f.h, FLEX_CAPS);
    fail_unless_equals_int (gst_harness_push (f.h, make_int_sample (0, TRUE,
                FALSE)), GST_FLOW_OK);
    GstBuffer *b = make_int_sample (1, TRUE, FALSE);
    GstMemory *mem = gst_buffer_peek_memory (b, cases[i].tensor);
    GstMapInfo m;
    if (cases[i].field == 99) {
      gst_memory_resize (mem, 0, 128 + cases[i].value);
    } else {
      gst_memory_map (mem, &m, GST_MAP_WRITE);
      ((guint32 *) m.data)[cases[i].field] = cases[i].value;
      gst_memory_unmap (mem, &m);
    }
    fail_unless_equals_int (gst_harness_push (f.h, b), GST_FLOW_ERROR);
    gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
    GST_INFO ("refusal: %s", msg);
    for (guint j = 0; j < 2; j++)
      fail_unless (strstr (msg, cases[i].says[j]) != NULL,
          "case %u: \"%s\" does not say \"%s\"", i, msg, cases[i].says[j]);
    g_free (msg);
    fixture_clear (&f);
  }
}

GST_END_TEST;

GST_START_TEST (test_other_tensor)
{
  /* the legacy single tensor links, but cannot carry a label */
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 8, NULL);
  fixture_start (&f);
  gst_harness_push_event (f.h, gst_event_new_stream_start ("test"));
  GstCaps *caps = gst_caps_from_string ("other/tensor,"
      "dimension=(string)4:1:1:1,type=(string)float32,"
      "framerate=(fraction)30/1");
  GstPad *sink = gst_element_get_static_pad (f.trainer, "sink");
  fail_unless (gst_pad_query_accept_caps (sink, caps));
  gst_harness_push_event (f.h, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  fail_if (gst_pad_has_current_caps (sink));
  gst_object_unref (sink);
  gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "other/tensor carries one tensor and no label")
      && strstr (msg, "tensor_mux") && strstr (msg, "takes 2 tensors"), "%s",
      msg);
  g_free (msg);
  fixture_clear (&f);
}

GST_END_TEST;

/* input 3:2:2 planar -> flatten -> fully_connected 3 */
static const gchar *rgb_ini =
    "[Model]\nbatch_size = 2\nloss = cross\n"
    "[Optimizer]\ntype = sgd\nlearning_rate = 0.1\n"
    "[input]\ntype = input\ninput_shape = 3:2:2\n"
    "[flat]\ntype = flatten\n"
    "[output]\ntype = fully_connected\nunit = 3\nactivation = softmax\n";

static gboolean
caps_fit (const gchar * ini, const gchar * dims)
{
  Fixture f;
  gchar *caps = g_strdup_printf ("other/tensors,format=static,num_tensors=2,"
      "dimensions=(string)\"%s,3:1:1:1\",types=(string)\"float32,float32\"",
      dims);
  fixture_init (&f, ini);
  g_object_set (f.trainer, "num-training-samples", 2, NULL);
  fixture_start (&f);
  gst_harness_push_event (f.h, gst_event_new_stream_start ("test"));
  gst_harness_push_event (f.h, caps_event (caps));
  GstPad *sink = gst_element_get_static_pad (f.trainer, "sink");
  gboolean ok = gst_pad_has_current_caps (sink);
  gst_object_unref (sink);
  fixture_clear (&f);
  g_free (caps);
  return ok;
}

GST_START_TEST (test_flat_and_planar_shapes)
{
  /* planar C:H:W is W:H:C:1 innermost first */
  fail_unless (caps_fit (rgb_ini, "2:2:3:1"));
  /* a flat tensor has no layout: taken in memory order */
  fail_unless (caps_fit (rgb_ini, "12:1:1:1"));
  fail_unless (caps_fit (rgb_ini, "1:1:12:1"));
  /* interleaved RGB (tensor_converter's 3:W:H:1) is another layout */
  fail_if (caps_fit (rgb_ini, "3:2:2:1"));
  fail_if (caps_fit (rgb_ini, "13:1:1:1"));
  /* a flat model input takes any tensor with as many elements */
  gchar **halves = g_strsplit (tiny_ini, "input_shape = 1:1:4\n", 2);
  gchar *ini = g_strconcat (halves[0], "input_shape = 1:1:4\n", halves[1],
      NULL);
  fail_unless (caps_fit (ini, "2:2:1:1"));
  g_strfreev (halves);
  g_free (ini);
}

GST_END_TEST;

/* ---- plan and progress messages -------------------------------------- */

/* Trains one epoch from ini; checks and returns plan-loaded of the plan
 * and epoch messages, and the pool size. */
static gboolean
plan_loaded (const gchar * ini_path, guint64 * pool)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "model-config", ini_path, "num-training-samples",
      4, "epochs", 1, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  GstMessage *m = tt_gst_pop_named (f.bus, "tensor-trainer-plan");
  fail_unless (m != NULL, "no tensor-trainer-plan message");
  const GstStructure *s = gst_message_get_structure (m);
  gboolean loaded, exact;
  guint64 bound, naive, dfs;
  guint tensors, batch;
  gdouble ms;
  const gchar *model;
  fail_unless (gst_structure_get (s, "plan-loaded", G_TYPE_BOOLEAN, &loaded,
          "pool-bytes", G_TYPE_UINT64, pool, "lower-bound", G_TYPE_UINT64,
          &bound, "naive-bytes", G_TYPE_UINT64, &naive, "depth-first-bytes",
          G_TYPE_UINT64, &dfs, "tensors", G_TYPE_UINT, &tensors,
          "order-exact", G_TYPE_BOOLEAN, &exact, "plan-ms", G_TYPE_DOUBLE, &ms,
          "batch-size", G_TYPE_UINT, &batch, NULL));
  model = gst_structure_get_string (s, "model");
  fail_unless_equals_string (model, ini_path);
  fail_unless (*pool > 0 && bound <= *pool && *pool <= naive, "%"
      G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, bound,
      *pool, naive);
  fail_unless (tensors > 0 && ms >= 0 && batch == 4);
  gst_message_unref (m);
  push_samples (f.h, 0, 4);
  m = pop_epoch_message (f.bus);
  fail_unless (m != NULL);
  gboolean loaded2;
  guint64 pool2;
  fail_unless (gst_structure_get (gst_message_get_structure (m),
          "plan-loaded", G_TYPE_BOOLEAN, &loaded2, "pool-bytes",
          G_TYPE_UINT64, &pool2, "lower-bound", G_TYPE_UINT64, &bound,
          "naive-bytes", G_TYPE_UINT64, &naive, "plan-ms", G_TYPE_DOUBLE, &ms,
          NULL));
  fail_unless_equals_int (loaded, loaded2);
  fail_unless_equals_uint64 (pool2, *pool);
  gst_message_unref (m);
  /* one-time */
  fail_unless (tt_gst_pop_named (f.bus, "tensor-trainer-plan") == NULL);
  fixture_clear (&f);
  return loaded;
}

GST_START_TEST (test_plan_message)
{
  gchar *dir = g_dir_make_tmp ("tt-plan-XXXXXX", NULL);
  gchar *ini = g_build_filename (dir, "tiny.ini", NULL);
  gchar *opt = g_build_filename (dir, "tiny.opt.ini", NULL);
  guint64 pool_plain, pool_opt;
  tt_error err;
  fail_unless (g_file_set_contents (ini, tiny_ini, -1, NULL));
  tt_model *m = tt_model_load_ini (ini, &err);
  fail_unless (m && tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  fail_unless_equals_int (tt_model_save_plan_ini (m, opt, &err), TT_OK);
  tt_model_free (m);

  fail_if (plan_loaded (ini, &pool_plain), "a plain INI was not planned");
  fail_unless (plan_loaded (opt, &pool_opt), "the stored plan was not used");
  fail_unless_equals_uint64 (pool_plain, pool_opt);
  g_unlink (ini);
  g_unlink (opt);
  g_rmdir (dir);
  g_free (ini);
  g_free (opt);
  g_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_progress_interval)
{
  Fixture f;
  fixture_init (&f, NULL);
  /* batch 4: training batches 1..3 (4, 4, 2 samples), validation 4..5 */
  g_object_set (f.trainer, "num-training-samples", 10,
      "num-validation-samples", 6, "epochs", 2, "progress-interval", 2, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 32);
  const struct
  {
    guint epoch, batch;
    const gchar *phase;
    guint64 samples, total;
  } want[] = {
    {1, 2, "training", 8, 10}, {1, 4, "validation", 4, 6},
    {2, 2, "training", 8, 10}, {2, 4, "validation", 4, 6},
  };
  for (guint i = 0; i < G_N_ELEMENTS (want); i++) {
    GstMessage *m = tt_gst_pop_named (f.bus, "tensor-trainer-progress");
    fail_unless (m != NULL, "progress message %u missing", i);
    guint epoch, epochs, batch;
    guint64 samples, total;
    gdouble loss, acc, rate;
    const GstStructure *s = gst_message_get_structure (m);
    fail_unless (gst_structure_get (s, "epoch", G_TYPE_UINT, &epoch,
            "epochs", G_TYPE_UINT, &epochs, "batch", G_TYPE_UINT, &batch,
            "samples", G_TYPE_UINT64, &samples, "total", G_TYPE_UINT64,
            &total, "loss", G_TYPE_DOUBLE, &loss, "accuracy", G_TYPE_DOUBLE,
            &acc, "samples-per-second", G_TYPE_DOUBLE, &rate, NULL));
    fail_unless_equals_int (epoch, want[i].epoch);
    fail_unless_equals_int (epochs, 2);
    fail_unless_equals_int (batch, want[i].batch);
    fail_unless_equals_string (gst_structure_get_string (s, "phase"),
        want[i].phase);
    fail_unless_equals_uint64 (samples, want[i].samples);
    fail_unless_equals_uint64 (total, want[i].total);
    fail_unless (isfinite (loss) && loss > 0 && acc >= 0 && acc <= 1);
    gst_message_unref (m);
  }
  fail_unless (tt_gst_pop_named (f.bus, "tensor-trainer-progress") == NULL);
  fixture_clear (&f);

  /* 0 (the default): none */
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 8, "epochs", 1, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 8);
  fail_unless (tt_gst_pop_named (f.bus, "tensor-trainer-progress") == NULL);
  fixture_clear (&f);
}

GST_END_TEST;

/* ---- a real pipeline: EOS on the bus, true zeros --------------------- */

/* The tests load no plugin but ours: a do-nothing sink for pipelines. */
typedef GstBaseSink TestSink;
typedef GstBaseSinkClass TestSinkClass;
G_DEFINE_TYPE (TestSink, test_sink, GST_TYPE_BASE_SINK);
static GstStaticPadTemplate test_sink_template = GST_STATIC_PAD_TEMPLATE
    ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static void
test_sink_class_init (TestSinkClass * klass)
{
  gst_element_class_add_static_pad_template (GST_ELEMENT_CLASS (klass),
      &test_sink_template);
  gst_element_class_set_static_metadata (GST_ELEMENT_CLASS (klass),
      "Test sink", "Sink", "Drops buffers", "tests");
}

static void
test_sink_init (TestSink * self)
{
  gst_base_sink_set_sync (self, FALSE);
}

typedef struct
{
  const gchar *bin, *ini;
  gint eos_seen;
  gboolean file_loaded;
  guint warnings;
} BusCheck;

/* Runs in the thread that posts: the EOS message is checked at the moment
 * an application could see it. */
static GstBusSyncReply
bus_sync (GstBus * bus, GstMessage * m, gpointer data)
{
  BusCheck *c = data;
  (void) bus;
  if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING)
    c->warnings++;
  if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS) {
    tt_error err;
    tt_model *model = tt_model_load_ini (c->ini, &err);
    c->eos_seen++;
    c->file_loaded = model && tt_model_compile (model, &err) == TT_OK
        && tt_model_load_bin (model, c->bin, &err) == TT_OK;
    tt_model_free (model);
  }
  return GST_BUS_PASS;
}

static void
check_eos_on_bus (guint src_epochs, guint trainer_epochs)
{
  Fixture f;
  gchar **halves = g_strsplit (tiny_ini, "input_shape = 1:1:4\n", 2);
  gchar *ini = g_strconcat (halves[0], "input_shape = 1:2:2\n"
      "[flat]\ntype = flatten\n", halves[1], NULL);
  g_strfreev (halves);
  fixture_init (&f, ini);
  gchar *images = g_build_filename (f.dir, "im.idx", NULL);
  gchar *labels = g_build_filename (f.dir, "lb.idx", NULL);
  write_idx (images, labels, 30);
  gchar *launch = g_strdup_printf ("tensor_datasrc location=%s "
      "label-location=%s num-samples=24 num-classes=3 epochs=%u ! "
      "tensor_trainer model-config=%s num-training-samples=24 epochs=%u "
      "model-save-path=%s ! testsink", images, labels, src_epochs, f.ini,
      trainer_epochs, f.bin);
  GError *error = NULL;
  gst_element_register (NULL, "testsink", GST_RANK_NONE, test_sink_get_type ());
  GstElement *pipeline = gst_parse_launch (launch, &error);
  fail_unless (pipeline != NULL && error == NULL, "%s", error ?
      error->message : "");
  GstBus *bus = gst_element_get_bus (pipeline);
  BusCheck c = { f.bin, f.ini, 0, FALSE, 0 };
  gst_bus_set_sync_handler (bus, bus_sync, &c, NULL);
  fail_if (g_file_test (f.bin, G_FILE_TEST_EXISTS));
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS);
  gst_message_unref (m);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  fail_unless_equals_int (c.eos_seen, 1);
  fail_unless (c.file_loaded, "EOS reached the bus before the model could "
      "be loaded");
  /* an early EOS (fewer epochs upstream) is said, as a warning */
  fail_unless_equals_int (c.warnings, src_epochs < trainer_epochs ? 1 : 0);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_unlink (images);
  g_unlink (labels);
  g_free (images);
  g_free (labels);
  g_free (launch);
  g_free (ini);
  fixture_clear (&f);
}

GST_START_TEST (test_eos_on_bus_after_save)
{
  check_eos_on_bus (2, 2);      /* the trainer ends after its epochs */
  check_eos_on_bus (1, 2);      /* upstream ends early */
}

GST_END_TEST;

/* A sample of make_sample with its label replaced by class cls. */
static GstBuffer *
make_class_sample (guint k, guint cls)
{
  GstBuffer *b = make_sample (k);
  gfloat y[3] = { 0, 0, 0 };
  y[cls] = 1.0f;
  gst_buffer_fill (b, 4 * sizeof (gfloat), y, sizeof y);
  return b;
}

/* A model taught that everything is class 0 scores exactly 0 on samples of
 * class 1: a true zero is 0 (not -inf as nnstreamer's trainer says, nor
 * NaN, which means "no such figure"). */
GST_START_TEST (test_true_zero)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 40,
      "num-validation-samples", 8, "epochs", 2, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  gdouble v[4];
  for (guint e = 0; e < 2; e++) {
    for (guint k = 0; k < 40; k++)
      fail_unless_equals_int (gst_harness_push (f.h, make_class_sample (k,
                  0)), GST_FLOW_OK);
    for (guint k = 0; k < 8; k++)
      fail_unless_equals_int (gst_harness_push (f.h, make_class_sample (k,
                  1)), GST_FLOW_OK);
    GstBuffer *b = gst_harness_pull (f.h);
    read_stats (b, v);
    gst_buffer_unref (b);
  }
  fail_unless (v[1] == 1.0, "training accuracy %g", v[1]);
  fail_unless (v[3] == 0.0 && !signbit (v[3]), "validation accuracy %g", v[3]);
  fail_unless (isfinite (v[2]) && v[2] > 0);
  GstMessage *m = pop_epoch_message (f.bus);
  gst_message_unref (m);
  m = pop_epoch_message (f.bus);
  gdouble acc;
  fail_unless (gst_structure_get_double (gst_message_get_structure (m),
          "validation-accuracy", &acc));
  fail_unless (acc == 0.0 && !signbit (acc));
  gst_message_unref (m);
  fixture_clear (&f);
}

GST_END_TEST;

/* ---- bad files and destinations: caught at start, posted once --------- */

/* What the bus holds: every message is popped; errors and warnings are
 * counted, with the first one's text and source name. */
typedef struct
{
  guint errors, warnings;
  gchar *error, *error_source, *warning;
} Drained;

static void
drain_bus (GstBus * bus, Drained * d)
{
  GstMessage *m;
  memset (d, 0, sizeof *d);
  while ((m = gst_bus_pop (bus))) {
    GError *err = NULL;
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
      gst_message_parse_error (m, &err, NULL);
      if (d->errors++ == 0) {
        d->error = g_strdup (err->message);
        d->error_source = gst_object_get_name (GST_MESSAGE_SRC (m));
      }
    } else if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING) {
      gst_message_parse_warning (m, &err, NULL);
      if (d->warnings++ == 0)
        d->warning = g_strdup (err->message);
    }
    g_clear_error (&err);
    gst_message_unref (m);
  }
}

static void
drained_clear (Drained * d)
{
  g_free (d->error);
  g_free (d->error_source);
  g_free (d->warning);
}

/* input -> a -> b -> a: a cycle */
static const gchar *cycle_ini =
    "[Model]\nbatch_size = 4\nloss = mse\n"
    "[in]\ntype = input\ninput_shape = 1:2:2\n"
    "[a]\ntype = fully_connected\nunit = 4\ninput_layers = in, b\n"
    "[b]\ntype = fully_connected\nunit = 4\ninput_layers = a\n";

/* gst-launch-1.0 used to hang on these (the model was loaded, and its
 * error posted, at every caps event, while the main loop was not yet
 * running): a real pipeline fails its state change with exactly one error,
 * from tensor_trainer, naming the file; every time. */
GST_START_TEST (test_bad_model_fails_start_once)
{
  gchar *dir = g_dir_make_tmp ("tt-bad-XXXXXX", NULL);
  gchar *images = g_build_filename (dir, "im.idx", NULL);
  gchar *labels = g_build_filename (dir, "lb.idx", NULL);
  gchar *cycle = g_build_filename (dir, "cycle.ini", NULL);
  gchar *folder = g_build_filename (dir, "folder.ini", NULL);
  gchar *missing = g_build_filename (dir, "missing.ini", NULL);
  const gchar *configs[] = { cycle, folder, missing };
  const gchar *says[] = { "cycle", "folder.ini", "missing.ini" };

  write_idx (images, labels, 12);
  fail_unless (g_file_set_contents (cycle, cycle_ini, -1, NULL));
  fail_unless (g_mkdir (folder, 0755) == 0);
  for (guint c = 0; c < G_N_ELEMENTS (configs); c++) {
    for (guint run = 0; run < 10; run++) {
      gchar *launch = g_strdup_printf ("tensor_datasrc location=%s "
          "label-location=%s num-classes=3 ! tensor_trainer name=trainer "
          "model-config=%s num-training-samples=12", images, labels,
          configs[c]);
      GError *perr = NULL;
      GstElement *pipeline = gst_parse_launch (launch, &perr);
      fail_unless (pipeline != NULL, "%s", perr ? perr->message : "");
      GstBus *bus = gst_element_get_bus (pipeline);
      fail_unless_equals_int (gst_element_set_state (pipeline,
              GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
      Drained d;
      drain_bus (bus, &d);
      fail_unless_equals_int (d.errors, 1);
      fail_unless_equals_string (d.error_source, "trainer");
      fail_unless (strstr (d.error, says[c]), "%s: \"%s\"", configs[c],
          d.error);
      drained_clear (&d);
      gst_element_set_state (pipeline, GST_STATE_NULL);
      drain_bus (bus, &d);
      fail_unless_equals_int (d.errors, 0);
      drained_clear (&d);
      gst_object_unref (bus);
      gst_object_unref (pipeline);
      g_free (launch);
    }
  }
  g_rmdir (folder);
  g_unlink (cycle);
  g_unlink (images);
  g_unlink (labels);
  g_rmdir (dir);
  g_free (dir);
  g_free (images);
  g_free (labels);
  g_free (cycle);
  g_free (folder);
  g_free (missing);
}

GST_END_TEST;

/* Refused caps that upstream sends again with every buffer: one error. */
GST_START_TEST (test_caps_refusal_posted_once)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 4, NULL);
  fixture_start (&f);
  gst_harness_push_event (f.h, gst_event_new_stream_start ("test"));
  gst_harness_push_event (f.h, caps_event ("other/tensors,format=static,"
          "num_tensors=2,dimensions=(string)\"5:1:1:1,3:1:1:1\","
          "types=(string)\"float32,float32\""));
  GstSegment seg;
  gst_segment_init (&seg, GST_FORMAT_TIME);
  gst_harness_push_event (f.h, gst_event_new_segment (&seg));
  for (guint k = 0; k < 4; k++)
    fail_unless_equals_int (gst_harness_push (f.h, make_sample (k)),
        GST_FLOW_NOT_NEGOTIATED);
  Drained d;
  drain_bus (f.bus, &d);
  fail_unless_equals_int (d.errors, 1);
  fail_unless (strstr (d.error, "5:1:1:1"), "%s", d.error);
  drained_clear (&d);
  fixture_clear (&f);
}

GST_END_TEST;

/* The error of a start that fails for prop=value: its text, after checking
 * that it is RESOURCE OPEN_WRITE. */
static gchar *
write_error (const gchar * prop, const gchar * value)
{
  Fixture f;
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 8, prop, value, NULL);
  fail_unless_equals_int (gst_element_set_state (f.trainer, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  GstMessage *m = gst_bus_pop_filtered (f.bus, GST_MESSAGE_ERROR);
  fail_unless (m != NULL, "no error for %s=%s", prop, value);
  GError *err = NULL;
  gst_message_parse_error (m, &err, NULL);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_OPEN_WRITE), "%s", err->message);
  gchar *text = g_strdup (err->message);
  g_error_free (err);
  gst_message_unref (m);
  fail_unless (gst_bus_pop_filtered (f.bus, GST_MESSAGE_ERROR) == NULL);
  fixture_clear (&f);
  return text;
}

/* A destination that cannot be written fails the start, not the end of
 * the run. */
GST_START_TEST (test_unwritable_destinations)
{
  gchar *dir = g_dir_make_tmp ("tt-dest-XXXXXX", NULL);
  gchar *missing = g_build_filename (dir, "no-such-folder", "m.ttb", NULL);
  gchar *ck_missing = g_build_filename (dir, "no-such-folder", "ck-%u.ttb",
      NULL);
  gchar *readonly = g_build_filename (dir, "ro", NULL);
  gchar *in_readonly = g_build_filename (readonly, "m.ttb", NULL);
  gchar *text;

  text = write_error ("model-save-path", missing);
  fail_unless (strstr (text, "model-save-path") && strstr (text, missing)
      && strstr (text, "cannot save there"), "%s", text);
  g_free (text);
  /* a name the engine's save would refuse at the end of the run */
  gchar *ini_name = g_build_filename (dir, "m.ini", NULL);
  text = write_error ("model-save-path", ini_name);
  fail_unless (strstr (text, ini_name), "%s", text);
  g_free (text);
  g_free (ini_name);
  text = write_error ("checkpoint-path", ck_missing);
  fail_unless (strstr (text, "checkpoint-path") && strstr (text,
          "no-such-folder"), "%s", text);
  g_free (text);
  /* a folder where the model file should be */
  text = write_error ("model-save-path", dir);
  fail_unless (strstr (text, dir) && strstr (text, "folder"), "%s", text);
  g_free (text);
  /* permission bits do not stop root: only checked as another user */
  fail_unless (g_mkdir (readonly, 0555) == 0);
  if (geteuid () != 0) {
    text = write_error ("model-save-path", in_readonly);
    fail_unless (strstr (text, in_readonly), "%s", text);
    g_free (text);
  }
  /* and nothing was left behind by the checks */
  GDir *d = g_dir_open (dir, 0, NULL);
  const gchar *name;
  guint entries = 0;
  while ((name = g_dir_read_name (d)))
    entries++;
  g_dir_close (d);
  fail_unless_equals_int (entries, 1);
  d = g_dir_open (readonly, 0, NULL);
  fail_unless (g_dir_read_name (d) == NULL);
  g_dir_close (d);
  g_rmdir (readonly);
  g_rmdir (dir);
  g_free (dir);
  g_free (missing);
  g_free (ck_missing);
  g_free (readonly);
  g_free (in_readonly);
}

GST_END_TEST;

/* The folder of model-save-path and of the checkpoints goes away during
 * the run (as a full disk would fail the saves, for root too): the
 * checkpoints are warnings, training goes on, and the final model is
 * saved in a fallback file in the temporary folder, which the error
 * names. */
GST_START_TEST (test_final_save_fails_model_kept)
{
  Fixture f;
  fixture_init (&f, NULL);
  gchar *sub = g_build_filename (f.dir, "sub", NULL);
  gchar *save = g_build_filename (sub, "model.ttb", NULL);
  gchar *ck = g_build_filename (sub, "ck-%u.ttb", NULL);
  fail_unless (g_mkdir (sub, 0755) == 0);
  g_object_set (f.trainer, "num-training-samples", 8, "epochs", 2,
      "model-save-path", save, "checkpoint-path", ck, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  fail_unless (g_rmdir (sub) == 0);
  push_samples (f.h, 0, 8);
  /* the second epoch still trains */
  push_samples (f.h, 8, 7);
  fail_unless_equals_int (gst_harness_push (f.h, make_sample (15)),
      GST_FLOW_ERROR);
  Drained d;
  drain_bus (f.bus, &d);
  fail_unless_equals_int (d.warnings, 2);
  fail_unless (strstr (d.warning, "checkpoint of epoch 1")
      && strstr (d.warning, "training goes on"), "%s", d.warning);
  fail_unless_equals_int (d.errors, 1);
  const gchar *text = d.error;
  fail_unless (strstr (text, save), "%s", text);
  const gchar *at = strstr (text, "was saved to ");
  fail_unless (at != NULL, "%s", text);
  gchar *rescued = g_strdup (at + strlen ("was saved to "));
  fail_unless (g_str_has_suffix (rescued, " instead."), "%s", text);
  rescued[strlen (rescued) - strlen (" instead.")] = '\0';
  gchar *rescued_dir = g_path_get_dirname (rescued);
  gchar *rescued_name = g_path_get_basename (rescued);
  fail_unless_equals_string (rescued_dir, g_get_tmp_dir ());
  fail_unless (g_str_has_prefix (rescued_name, "model.rescued-")
      && g_str_has_suffix (rescued_name, ".ttb"), "%s", rescued);
  g_free (rescued_dir);
  g_free (rescued_name);
  /* the rescued model is the trained one: both epochs' iterations */
  tt_error err;
  tt_model *m = tt_bundle_load (rescued, NULL, &err);
  fail_unless (m != NULL, "%s", err.message);
  fail_unless_equals_int (tt_model_iteration (m), 4);
  tt_model_free (m);
  fail_unless (g_unlink (rescued) == 0);
  g_free (rescued);
  drained_clear (&d);
  g_free (sub);
  g_free (save);
  g_free (ck);
  fixture_clear (&f);
}

GST_END_TEST;

/* ---- nnstreamer's tensor_trainer tests -------------------------------- */

/* nnstreamer 2.7's tests/nnstreamer_trainer/unittest_trainer.cc, case by
 * case (its names in the comments), with tensor_datasrc in place of
 * datareposrc and no sink in place of tensor_sink (these tests load this
 * plugin only): the same property values read back and the same state
 * changes refused. Each refusal here also names its cause, in exactly one
 * error from tensor_trainer. */

/* input 1:2:2 (tensor_datasrc's 2x2 GRAY8 images) -> 3 classes */
static const gchar *nns_ini =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "epochs = 3\n"
    "batch_size = 4\n"
    "loss = cross\n"
    "[Optimizer]\n"
    "type = adam\n"
    "learning_rate = 0.05\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:2:2\n"
    "[flat]\n"
    "type = flatten\n"
    "[output]\n"
    "type = fully_connected\n" "unit = 3\n" "activation = softmax\n";

typedef struct
{
  gchar *dir, *images, *labels, *ini;
  GstElement *pipeline, *trainer;
  GstBus *bus;
} NnsCase;

/* Files of 12 samples in a new folder, and the pipeline whose
 * tensor_trainer, named "tensor_trainer" as in nnstreamer's tests, has
 * the properties trainer_props, where @INI@ stands for the model INI and
 * @DIR@ for the folder. */
static void
nns_case_init (NnsCase * c, const gchar * trainer_props)
{
  memset (c, 0, sizeof *c);
  c->dir = g_dir_make_tmp ("tt-nns-XXXXXX", NULL);
  fail_unless (c->dir != NULL);
  c->images = g_build_filename (c->dir, "images.idx", NULL);
  c->labels = g_build_filename (c->dir, "labels.idx", NULL);
  c->ini = g_build_filename (c->dir, "model.ini", NULL);
  write_idx (c->images, c->labels, 12);
  fail_unless (g_file_set_contents (c->ini, nns_ini, -1, NULL));
  GString *props = g_string_new (trainer_props);
  g_string_replace (props, "@INI@", c->ini, 0);
  g_string_replace (props, "@DIR@", c->dir, 0);
  gchar *launch = g_strdup_printf ("tensor_datasrc location=%s "
      "label-location=%s num-classes=3 epochs=5 ! tensor_trainer "
      "name=tensor_trainer %s", c->images, c->labels, props->str);
  GError *err = NULL;
  c->pipeline = gst_parse_launch (launch, &err);
  fail_unless (c->pipeline != NULL && err == NULL, "%s: %s", launch,
      err ? err->message : "");
  c->trainer = gst_bin_get_by_name (GST_BIN (c->pipeline), "tensor_trainer");
  fail_unless (c->trainer != NULL);
  c->bus = gst_element_get_bus (c->pipeline);
  g_string_free (props, TRUE);
  g_free (launch);
}

static void
nns_case_clear (NnsCase * c)
{
  gst_element_set_state (c->pipeline, GST_STATE_NULL);
  gst_bus_set_flushing (c->bus, TRUE);
  gst_object_unref (c->bus);
  gst_object_unref (c->trainer);
  gst_object_unref (c->pipeline);
  tt_gst_remove_dir (c->dir);
  g_free (c->dir);
  g_free (c->images);
  g_free (c->labels);
  g_free (c->ini);
}

/* Sets the pipeline PLAYING, which must fail, and returns the text of the
 * one error tensor_trainer posted (g_free it). */
static gchar *
nns_case_refused (NnsCase * c)
{
  fail_unless_equals_int (gst_element_set_state (c->pipeline,
          GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  Drained d;
  drain_bus (c->bus, &d);
  fail_unless_equals_int (d.errors, 1);
  fail_unless_equals_string (d.error_source, "tensor_trainer");
  gchar *text = g_strdup (d.error);
  drained_clear (&d);
  return text;
}

static guint
get_uint (GstElement * e, const gchar * prop)
{
  guint v = 0;
  g_object_get (e, prop, &v, NULL);
  return v;
}

/* SetParams: every property reads back as set; model-load-path is
 * nullable. nnstreamer does not look at the files before PLAYING; this
 * element reads model-load-path at READY->PAUSED, so its missing
 * old_model.bin fails PAUSED here (nnstreamer's test does not check that
 * state change). */
GST_START_TEST (test_nns_set_params)
{
  NnsCase c;
  nns_case_init (&c, "framework=nntrainer model-config=@INI@ "
      "model-save-path=@DIR@/new_model.bin "
      "model-load-path=@DIR@/old_model.bin "
      "num-inputs=1 num-labels=1 num-training-samples=100 "
      "num-validation-samples=100 epochs=1");
  fail_unless_equals_int (gst_element_set_state (c.pipeline,
          GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  Drained d;
  drain_bus (c.bus, &d);
  fail_unless_equals_int (d.errors, 1);
  fail_unless (strstr (d.error, "old_model.bin"), "%s", d.error);
  drained_clear (&d);

  gchar *s = NULL;
  gchar *save = g_build_filename (c.dir, "new_model.bin", NULL);
  gchar *load = g_build_filename (c.dir, "old_model.bin", NULL);
  g_object_get (c.trainer, "model-config", &s, NULL);
  fail_unless_equals_string (s, c.ini);
  g_free (s);
  g_object_get (c.trainer, "model-save-path", &s, NULL);
  fail_unless_equals_string (s, save);
  g_free (s);
  g_object_get (c.trainer, "model-load-path", &s, NULL);
  fail_unless_equals_string (s, load);
  g_free (s);
  g_free (save);
  g_free (load);
  g_object_set (c.trainer, "model-load-path", NULL, NULL);
  g_object_get (c.trainer, "model-load-path", &s, NULL);
  fail_unless (s == NULL, "model-load-path is \"%s\"", s);
  fail_unless_equals_int (get_uint (c.trainer, "num-inputs"), 1);
  fail_unless_equals_int (get_uint (c.trainer, "num-labels"), 1);
  fail_unless_equals_int (get_uint (c.trainer, "num-training-samples"), 100);
  fail_unless_equals_int (get_uint (c.trainer, "num-validation-samples"), 100);
  fail_unless_equals_int (get_uint (c.trainer, "epochs"), 1);
  nns_case_clear (&c);
}

GST_END_TEST;

/* invalidFramework0_n (NULL) and invalidFramework1_n (an unknown name) */
GST_START_TEST (test_nns_invalid_framework)
{
  const gchar *names[] = { NULL, "no_framework" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++) {
    NnsCase c;
    nns_case_init (&c, "model-config=@INI@ model-save-path=@DIR@/model.bin "
        "num-inputs=1 num-labels=1 num-training-samples=100 "
        "num-validation-samples=100 epochs=5");
    g_object_set (c.trainer, "framework", names[i], NULL);
    gchar *text = nns_case_refused (&c);
    gchar *says = g_strdup_printf ("Unknown framework \"%s\"",
        names[i] ? names[i] : "(null)");
    fail_unless (strstr (text, says), "%s", text);
    g_free (says);
    g_free (text);
    nns_case_clear (&c);
  }
}

GST_END_TEST;

/* invalidModelConfig0_n (NULL) and invalidModelConfig1_n (a file that
 * does not exist). nnstreamer's launch lines there miss a space
 * ("framework=nntrainermodel-save-path=model.bin"), so their framework
 * is unknown too; these set a valid one, so that the model-config is what is
 * refused. */
GST_START_TEST (test_nns_invalid_model_config)
{
  NnsCase c;
  nns_case_init (&c, "framework=nntrainer model-save-path=@DIR@/model.bin "
      "num-inputs=1 num-labels=1 num-training-samples=100 "
      "num-validation-samples=100 epochs=5");
  g_object_set (c.trainer, "model-config", NULL, NULL);
  gchar *text = nns_case_refused (&c);
  fail_unless (strstr (text, "No model-config set"), "%s", text);
  g_free (text);
  nns_case_clear (&c);

  nns_case_init (&c, "framework=nntrainer model-save-path=@DIR@/model.bin "
      "num-inputs=1 num-labels=1 num-training-samples=100 "
      "num-validation-samples=100 epochs=5");
  gchar *missing = g_build_filename (c.dir, "non_existent_file.ini", NULL);
  g_object_set (c.trainer, "model-config", missing, NULL);
  text = nns_case_refused (&c);
  fail_unless (strstr (text, missing), "%s", text);
  g_free (text);
  g_free (missing);
  nns_case_clear (&c);
}

GST_END_TEST;

/* invalidModelSavePath0_n: with framework=nntrainer, model-save-path is
 * required, as in nnstreamer; without a framework it is not (the model is
 * then not saved). */
GST_START_TEST (test_nns_model_save_path_required)
{
  NnsCase c;
  nns_case_init (&c, "framework=nntrainer model-config=@INI@ num-inputs=1 "
      "num-labels=1 num-training-samples=100 num-validation-samples=100 "
      "epochs=5");
  g_object_set (c.trainer, "model-save-path", NULL, NULL);
  gchar *text = nns_case_refused (&c);
  fail_unless (strstr (text, "No model-save-path set")
      && strstr (text, "framework=nntrainer"), "%s", text);
  g_free (text);
  nns_case_clear (&c);

  nns_case_init (&c, "model-config=@INI@ num-training-samples=12 epochs=1");
  fail_unless (gst_element_set_state (c.pipeline, GST_STATE_PAUSED) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_get_state (c.pipeline, NULL, NULL,
          GST_CLOCK_TIME_NONE) != GST_STATE_CHANGE_FAILURE);
  gchar *error = tt_gst_pop_text (c.bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (error, "");
  g_free (error);
  nns_case_clear (&c);
}

GST_END_TEST;

/* invalidModelNumTrainingSamples0_n, invalidModelNumValidationSamples0_n,
 * invalidEpochs0_n, invalidNumInputs0_n, invalidNumLabels0_n: -1 is out of
 * range (GLib warns and leaves the value), so each reads nnstreamer's
 * default: 0 samples, 1 epoch, 1 input, 1 label. The launch line leaves
 * that property unset, as nnstreamer's does. */
GST_START_TEST (test_nns_out_of_range_keeps_default)
{
  const struct
  {
    const gchar *prop, *props;
    guint expected;
  } cases[] = {
    {"num-training-samples", "framework=nntrainer model-config=@INI@ "
          "model-save-path=@DIR@/model.bin num-inputs=1 num-labels=1 "
          "num-validation-samples=100 epochs=5", 0},
    {"num-validation-samples", "framework=nntrainer model-config=@INI@ "
          "model-save-path=@DIR@/model.bin num-inputs=1 num-labels=1 "
          "num-training-samples=100 epochs=5", 0},
    {"epochs", "framework=nntrainer model-config=@INI@ "
          "model-save-path=@DIR@/model.bin num-inputs=1 num-labels=1 "
          "num-training-samples=100 num-validation-samples=100", 1},
    {"num-inputs", "framework=nntrainer model-config=@INI@ "
          "model-save-path=@DIR@/model.bin num-labels=1 num-training-samples=100 "
          "num-validation-samples=100 epochs=5", 1},
    {"num-labels", "framework=nntrainer model-config=@INI@ "
          "model-save-path=@DIR@/model.bin num-inputs=1 "
          "num-validation-samples=100 epochs=5", 1},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    NnsCase c;
    nns_case_init (&c, cases[i].props);
    ASSERT_WARNING (g_object_set (c.trainer, cases[i].prop, -1, NULL));
    fail_unless_equals_int (get_uint (c.trainer, cases[i].prop),
        cases[i].expected);
    nns_case_clear (&c);
  }
}

GST_END_TEST;

/* ---- nnstreamer's defaults and ranges beside this element's ---------- */

/* epochs: unset, framework=nntrainer trains (and reads) 1 epoch where the
 * default framework takes the INI's [Model] epochs (3 in tiny_ini) and
 * reads 0; framework=nntrainer refuses epochs=0. */
GST_START_TEST (test_nns_epochs_default)
{
  Fixture f;
  fixture_init (&f, NULL);
  fail_unless_equals_int (get_uint (f.trainer, "epochs"), 0);
  g_object_set (f.trainer, "framework", "nntrainer", "num-training-samples",
      8, "num-validation-samples", 4, NULL);
  fail_unless_equals_int (get_uint (f.trainer, "epochs"), 1);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 12);
  GstBuffer *stats = gst_harness_pull (f.h);
  gst_buffer_unref (stats);
  /* one epoch: the model is saved, EOS sent, and more is dropped */
  fail_unless (g_file_test (f.bin, G_FILE_TEST_IS_REGULAR));
  fail_unless_equals_int (gst_harness_push (f.h, make_sample (12)),
      GST_FLOW_OK);
  GstMessage *m = pop_epoch_message (f.bus);
  guint epochs = 0;
  fail_unless (m != NULL);
  gst_structure_get_uint (gst_message_get_structure (m), "epochs", &epochs);
  fail_unless_equals_int (epochs, 1);
  gst_message_unref (m);
  fixture_clear (&f);

  /* the default framework: the INI's 3 epochs */
  fixture_init (&f, NULL);
  g_object_set (f.trainer, "num-training-samples", 8, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 8);
  m = pop_epoch_message (f.bus);
  fail_unless (m != NULL);
  gst_structure_get_uint (gst_message_get_structure (m), "epochs", &epochs);
  fail_unless_equals_int (epochs, 3);
  gst_message_unref (m);
  fixture_clear (&f);

  fixture_init (&f, NULL);
  g_object_set (f.trainer, "framework", "nntrainer", "num-training-samples",
      8, "epochs", 0, NULL);
  fail_unless_equals_int (gst_element_set_state (f.trainer, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *text = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (text, "epochs=0") && strstr (text, "nntrainer"), "%s",
      text);
  g_free (text);
  fail_unless_equals_int (get_uint (f.trainer, "epochs"), 0);
  fixture_clear (&f);
}

GST_END_TEST;

/* The ranges are nnstreamer's (counts up to G_MAXINT, num-inputs and
 * num-labels up to 256); what this element cannot do fails the start with
 * an error naming the property and its limit. */
GST_START_TEST (test_nns_ranges)
{
  Fixture f;
  fixture_init (&f, NULL);
  const gchar *counts[] = { "num-training-samples", "num-validation-samples",
    "epochs"
  };
  for (guint i = 0; i < G_N_ELEMENTS (counts); i++) {
    g_object_set (f.trainer, counts[i], (guint) G_MAXINT, NULL);
    fail_unless_equals_int (get_uint (f.trainer, counts[i]), G_MAXINT);
    ASSERT_WARNING (g_object_set (f.trainer, counts[i],
            (guint) G_MAXINT + 1u, NULL));
    fail_unless_equals_int (get_uint (f.trainer, counts[i]), G_MAXINT);
  }
  fixture_clear (&f);

  const struct
  {
    const gchar *prop;
    guint value;
    const gchar *says;
  } refused[] = {
    {"num-inputs", 0, "num-inputs=0: a buffer carries 1 to 15 input"},
    {"num-inputs", 256, "num-inputs=256: a buffer carries 1 to 15 input"},
    {"num-labels", 0, "num-labels=0"},
    {"num-labels", 256, "num-labels=256"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (refused); i++) {
    fixture_init (&f, NULL);
    g_object_set (f.trainer, "num-training-samples", 8, refused[i].prop,
        refused[i].value, NULL);
    fail_unless_equals_int (get_uint (f.trainer, refused[i].prop),
        refused[i].value);
    fail_unless_equals_int (gst_element_set_state (f.trainer,
            GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    Drained d;
    drain_bus (f.bus, &d);
    fail_unless_equals_int (d.errors, 1);
    fail_unless (strstr (d.error, refused[i].says), "%s", d.error);
    drained_clear (&d);
    fixture_clear (&f);
  }
}

GST_END_TEST;

/* ---- one error per failure -------------------------------------------- */

/* Runs launch until it has posted expected errors (or none came for 10
 * s), then stops it; returns how many errors tensor_trainer (named
 * "trainer") posted in all, and the text of its first one in *text
 * (g_free it). *total: errors from any element. */
static guint
trainer_errors (const gchar * launch, guint expected, guint * total,
    gchar ** text)
{
  GError *perr = NULL;
  GstElement *pipeline = gst_parse_launch (launch, &perr);
  fail_unless (pipeline != NULL && perr == NULL, "%s", perr ?
      perr->message : "");
  GstBus *bus = gst_element_get_bus (pipeline);
  guint from_trainer = 0;
  *total = 0;
  *text = NULL;
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  GstMessage *m;
  gboolean stopped = FALSE;
  /* a source posts its flow error when its push returns; stopping the
   * pipeline sooner would make that push return flushing instead, so the
   * expected ones are waited for, and NULL then joins the streaming
   * threads: whatever else they post is on the bus too */
  while ((m = stopped ? gst_bus_pop (bus) : gst_bus_timed_pop_filtered (bus,
              10 * GST_SECOND, GST_MESSAGE_ERROR))) {
    GError *err = NULL;
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
      (*total)++;
      gst_message_parse_error (m, &err, NULL);
      if (g_strcmp0 (GST_OBJECT_NAME (GST_MESSAGE_SRC (m)), "trainer") == 0
          && from_trainer++ == 0)
        *text = g_strdup (err->message);
      g_clear_error (&err);
    }
    gst_message_unref (m);
    if (!stopped && *total == expected) {
      gst_element_set_state (pipeline, GST_STATE_NULL);
      stopped = TRUE;
    }
  }
  fail_unless (*total > 0, "no error from %s", launch);
  if (!stopped)
    gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  return from_trainer;
}

/* Caps that do not fit the model, a weights file that does not exist, a
 * save path that cannot be written: each is one error from tensor_trainer.
 * The caps refusal also stops the source, which posts GStreamer's generic
 * "Internal data stream error" (not-negotiated) as every source whose
 * push fails does: two errors on the bus, one from tensor_trainer. */
GST_START_TEST (test_one_error_per_failure)
{
  gchar *dir = g_dir_make_tmp ("tt-errors-XXXXXX", NULL);
  gchar *images = g_build_filename (dir, "im.idx", NULL);
  gchar *labels = g_build_filename (dir, "lb.idx", NULL);
  gchar *ini = g_build_filename (dir, "m.ini", NULL);
  gchar *wrong = g_build_filename (dir, "wrong.ini", NULL);
  gchar *text;
  guint total;

  write_idx (images, labels, 12);
  fail_unless (g_file_set_contents (ini, nns_ini, -1, NULL));
  /* the model takes 5 values, the images have 4 */
  gchar **halves = g_strsplit (tiny_ini, "1:1:4", 2);
  gchar *wrong_ini = g_strjoinv ("1:1:5", halves);
  g_strfreev (halves);
  fail_unless (g_file_set_contents (wrong, wrong_ini, -1, NULL));
  g_free (wrong_ini);

  const gchar *src = "tensor_datasrc location=%s label-location=%s "
      "num-classes=3 epochs=2 ! ";
  gchar *head = g_strdup_printf (src, images, labels);
  struct
  {
    gchar *launch;
    const gchar *says;
    guint total;
  } cases[] = {
    {g_strdup_printf ("%stensor_trainer name=trainer model-config=%s "
              "num-training-samples=12", head, wrong),
        "Caps do not fit the model", 2},
    {g_strdup_printf ("%stensor_trainer name=trainer framework=nntrainer "
              "model-config=%s model-save-path=%s/m.bin "
              "num-training-samples=12", head, wrong, dir),
        "Caps do not fit the model", 2},
    {g_strdup_printf ("%stensor_trainer name=trainer model-config=%s "
              "model-load-path=%s/missing.bin num-training-samples=12", head,
            ini, dir), "missing.bin", 1},
    {g_strdup_printf ("%stensor_trainer name=trainer model-config=%s "
              "model-save-path=%s/no-such-folder/m.bin "
              "num-training-samples=12", head, ini, dir),
        "no-such-folder", 1},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    fail_unless_equals_int (trainer_errors (cases[i].launch, cases[i].total,
            &total, &text), 1);
    fail_unless (strstr (text, cases[i].says), "%s: %s", cases[i].launch, text);
    fail_unless_equals_int (total, cases[i].total);
    g_free (text);
    g_free (cases[i].launch);
  }
  g_free (head);
  tt_gst_remove_dir (dir);
  g_free (dir);
  g_free (images);
  g_free (labels);
  g_free (ini);
  g_free (wrong);
}

GST_END_TEST;

/* ---- [Model] save_best_path ------------------------------------------ */

/* tiny_ini with [Model] save_best_path = path */
static gchar *
ini_with_save_best (const gchar * path)
{
  gchar **halves = g_strsplit (tiny_ini, "loss = cross\n", 2);
  gchar *line = g_strdup_printf ("loss = cross\nsave_best_path = %s\n", path);
  gchar *ini = g_strjoinv (line, halves);
  g_free (line);
  g_strfreev (halves);
  return ini;
}

/* The BIN at path loads into the fixture's model with these counters. */
static void
check_bin_counters (Fixture * f, const gchar * path, guint epoch,
    guint iteration)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (f->ini, &err);
  fail_unless (m != NULL, "%s", err.message);
  fail_unless_equals_int (tt_model_compile (m, &err), TT_OK);
  fail_unless_equals_int (tt_model_load_bin (m, path, &err), TT_OK);
  fail_unless_equals_int (tt_model_epoch (m), epoch);
  fail_unless_equals_int (tt_model_iteration (m), iteration);
  tt_model_free (m);
}

/* The best-saved field of the next epoch message. */
static gboolean
pop_best_saved (GstBus * bus)
{
  GstMessage *m = pop_epoch_message (bus);
  gboolean saved = FALSE;
  fail_unless (m != NULL);
  fail_unless (gst_structure_get_boolean (gst_message_get_structure (m),
          "best-saved", &saved));
  gst_message_unref (m);
  return saved;
}

/* After each epoch's validation pass the engine applies nntrainer's rule:
 * the first pass is the best so far, so the BIN appears after epoch 1
 * with that epoch's counters; after epoch 2 it holds epoch 2's weights
 * exactly when the message says it was saved. */
GST_START_TEST (test_save_best_path)
{
  Fixture f;
  gchar *dir = g_dir_make_tmp ("tt-best-XXXXXX", NULL);
  gchar *best = g_build_filename (dir, "best.bin", NULL);
  gchar *ini = ini_with_save_best (best);
  fixture_init (&f, ini);
  g_object_set (f.trainer, "num-training-samples", 8,
      "num-validation-samples", 4, "epochs", 2, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  fail_if (g_file_test (best, G_FILE_TEST_EXISTS));
  push_samples (f.h, 0, 12);
  gst_buffer_unref (gst_harness_pull (f.h));
  fail_unless (pop_best_saved (f.bus));
  check_bin_counters (&f, best, 1, 2);
  push_samples (f.h, 12, 12);
  gst_buffer_unref (gst_harness_pull (f.h));
  if (pop_best_saved (f.bus))
    check_bin_counters (&f, best, 2, 4);
  else
    check_bin_counters (&f, best, 1, 2);
  fixture_clear (&f);
  g_unlink (best);
  g_rmdir (dir);
  g_free (dir);
  g_free (best);
  g_free (ini);
}

GST_END_TEST;

/* Without validation samples there is no validation pass: the file is
 * never written, and a warning at start says why. */
GST_START_TEST (test_save_best_path_needs_validation)
{
  Fixture f;
  gchar *dir = g_dir_make_tmp ("tt-best-XXXXXX", NULL);
  gchar *best = g_build_filename (dir, "best.bin", NULL);
  gchar *ini = ini_with_save_best (best);
  fixture_init (&f, ini);
  g_object_set (f.trainer, "num-training-samples", 8, "epochs", 2, NULL);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, TINY_CAPS);
  push_samples (f.h, 0, 16);
  fail_unless (g_file_test (f.bin, G_FILE_TEST_IS_REGULAR));
  fail_if (g_file_test (best, G_FILE_TEST_EXISTS));
  /* one pass over the bus: popping by type would drop the other types */
  GstMessage *m;
  guint epochs = 0, warnings = 0;
  while ((m = gst_bus_pop (f.bus))) {
    const GstStructure *s = gst_message_get_structure (m);
    GError *err = NULL;
    gboolean saved = TRUE;
    fail_if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR);
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING) {
      gst_message_parse_warning (m, &err, NULL);
      fail_unless (strstr (err->message, "save_best_path")
          && strstr (err->message, best)
          && strstr (err->message, "num-validation-samples is 0"), "%s",
          err->message);
      g_error_free (err);
      warnings++;
    } else if (s && gst_structure_has_name (s, "tensor-trainer-epoch")) {
      fail_unless (gst_structure_get_boolean (s, "best-saved", &saved));
      fail_if (saved);
      epochs++;
    }
    gst_message_unref (m);
  }
  fail_unless_equals_int (warnings, 1);
  fail_unless_equals_int (epochs, 2);
  fixture_clear (&f);
  g_rmdir (dir);
  g_free (dir);
  g_free (best);
  g_free (ini);
}

GST_END_TEST;

/* A save_best_path that cannot be written fails the start, once, as
 * model-save-path does. */
GST_START_TEST (test_save_best_path_unwritable)
{
  Fixture f;
  gchar *dir = g_dir_make_tmp ("tt-best-XXXXXX", NULL);
  gchar *best = g_build_filename (dir, "no-such-folder", "best.bin", NULL);
  gchar *ini = ini_with_save_best (best);
  fixture_init (&f, ini);
  g_object_set (f.trainer, "num-training-samples", 8,
      "num-validation-samples", 4, NULL);
  fail_unless_equals_int (gst_element_set_state (f.trainer, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  Drained d;
  drain_bus (f.bus, &d);
  fail_unless_equals_int (d.errors, 1);
  fail_unless (strstr (d.error, "save_best_path") && strstr (d.error,
          "no-such-folder"), "%s", d.error);
  drained_clear (&d);
  fixture_clear (&f);
  g_rmdir (dir);
  g_free (dir);
  g_free (best);
  g_free (ini);
}

GST_END_TEST;

/* input 1:1:128 -> fully_connected 64 (relu) -> fully_connected 3
 * (softmax), batch 32: the first layer's weight is split by rows over 2
 * threads (owned: 64 rows a thread, a product of 32 x 128 x 64), and
 * its input is then fed by thread blocks */
static const gchar *wide_ini =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "batch_size = 32\n"
    "loss = cross\n"
    "[Optimizer]\n"
    "type = sgd\n"
    "learning_rate = 0.05\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:1:128\n"
    "[hidden]\n"
    "type = fully_connected\n"
    "unit = 64\n"
    "activation = relu\n"
    "[output]\n"
    "type = fully_connected\n" "unit = 3\n" "activation = softmax\n";

#define WIDE_CAPS "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"128:1:1:1,3:1:1:1\",types=(string)\"float32,float32\"," \
  "framerate=(fraction)0/1"

/* Sample k of 128 inputs: class k % 3 lights its third of them. */
static GstBuffer *
make_wide_sample (guint k)
{
  gfloat x[128], y[3] = { 0, 0, 0 };
  const guint c = k % 3;
  guint32 r = k * 2654435761u;
  for (guint i = 0; i < 128; i++) {
    r = r * 1664525u + 1013904223u;
    x[i] = (gfloat) (r >> 8) / (gfloat) (1 << 24) - 0.5f + (i / 43 == c);
  }
  y[c] = 1.0f;
  GstBuffer *b = gst_buffer_new ();
  gpointer px = g_memdup2 (x, sizeof x), py = g_memdup2 (y, sizeof y);
  gst_buffer_append_memory (b, gst_memory_new_wrapped (0, px, sizeof x, 0,
          sizeof x, px, g_free));
  gst_buffer_append_memory (b, gst_memory_new_wrapped (0, py, sizeof y, 0,
          sizeof y, py, g_free));
  return b;
}

/* The weights the element saved after 2 epochs of 96 samples on threads
 * engine threads (every step split), and their count. */
static gfloat *
train_wide (guint threads, gsize * n)
{
  Fixture f;
  fixture_init (&f, wide_ini);
  g_object_set (f.trainer, "num-training-samples", 96, "epochs", 2,
      "threads", threads, NULL);
  guint got = 0;
  g_object_get (f.trainer, "threads", &got, NULL);
  fail_unless_equals_int (got, threads);
  fixture_start (&f);
  gst_harness_set_src_caps_str (f.h, WIDE_CAPS);
  for (guint e = 0; e < 2; e++) {
    for (guint k = 0; k < 96; k++)
      fail_unless_equals_int (gst_harness_push (f.h, make_wide_sample (k)),
          GST_FLOW_OK);
    gst_buffer_unref (gst_harness_pull (f.h));
  }
  gchar *data = NULL;
  gsize len = 0;
  fail_unless (g_file_get_contents (f.bin, &data, &len, NULL),
      "no weights saved");
  *n = len / sizeof (gfloat);
  fixture_clear (&f);
  return (gfloat *) data;
}

/* threads=2 trains what threads=1 does, within rounding (the split dense
 * layer adds its threads' partial products), through the element: the
 * property reaches the engine, and the input fed by thread blocks reaches
 * the dense layer's parts in their place (read as rows, the weights
 * differed up to 1.4e3 times the tolerance in test_split). */
GST_START_TEST (test_threads_train_alike)
{
  g_setenv ("TT_THREADS_STEPS", "split", TRUE);
  gsize n1, n2;
  gfloat *w1 = train_wide (1, &n1), *w2 = train_wide (2, &n2);
  g_unsetenv ("TT_THREADS_STEPS");
  fail_unless_equals_uint64 (n1, n2);
  fail_unless (n1 >= 128 * 64 + 64 * 3, "%" G_GSIZE_FORMAT " floats", n1);
  gdouble worst = 0;
  gsize differ = 0;
  for (gsize i = 0; i < n1; i++) {
    const gdouble d = fabs ((gdouble) w1[i] - w2[i]);
    differ += d != 0;
    const gdouble rel = d / (1e-6 + 1e-5 * fabs (w1[i]));
    worst = rel > worst ? rel : worst;
  }
  GST_INFO ("threads 2 against 1: %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
      " weights differ, worst %g of the tolerance", differ, n1, worst);
  fail_unless (worst <= 1.0, "weights after 6 steps: worst %g of 1e-6 + "
      "1e-5 relative (%" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT " differ)",
      worst, differ, n1);
  g_free (w1);
  g_free (w2);
}

GST_END_TEST;

static Suite *
tensor_trainer_suite (void)
{
  Suite *s = suite_create ("tensor_trainer");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_caps_accepted);
  tcase_add_test (tc, test_caps_refused);
  tcase_add_test (tc, test_wrong_buffer_size);
  tcase_add_test (tc, test_sample_split_across_memories);
  tcase_add_test (tc, test_single_memory_accepted);
  tcase_add_test (tc, test_loss_falls);
  tcase_add_test (tc, test_threads_train_alike);
  tcase_add_test (tc, test_validation_figures);
  tcase_add_test (tc, test_partial_batch);
  tcase_add_test (tc, test_eos_after_model_saved);
  tcase_add_test (tc, test_early_eos);
  tcase_add_test (tc, test_bundle_save_and_resume);
  tcase_add_test (tc, test_pause_resume);
  tcase_add_test (tc, test_checkpoints_and_quiet);
  tcase_add_test (tc, test_nan_input_is_an_error);
  tcase_add_test (tc, test_skip_bad_batches);
  tcase_add_test (tc, test_nnstreamer_properties);
  tcase_add_test (tc, test_start_errors);
  tcase_add_test (tc, test_property_errors);
  tcase_add_test (tc, test_datasrc_to_trainer);
  tcase_add_test (tc, test_flexible_matches_static);
  tcase_add_test (tc, test_flexible_bad_headers);
  tcase_add_test (tc, test_index_labels);
  tcase_add_test (tc, test_other_tensor);
  tcase_add_test (tc, test_flat_and_planar_shapes);
  tcase_add_test (tc, test_plan_message);
  tcase_add_test (tc, test_progress_interval);
  tcase_add_test (tc, test_eos_on_bus_after_save);
  tcase_add_test (tc, test_true_zero);
  tcase_add_test (tc, test_bad_model_fails_start_once);
  tcase_add_test (tc, test_caps_refusal_posted_once);
  tcase_add_test (tc, test_unwritable_destinations);
  tcase_add_test (tc, test_final_save_fails_model_kept);
  tcase_add_test (tc, test_nns_set_params);
  tcase_add_test (tc, test_nns_invalid_framework);
  tcase_add_test (tc, test_nns_invalid_model_config);
  tcase_add_test (tc, test_nns_model_save_path_required);
  tcase_add_test (tc, test_nns_out_of_range_keeps_default);
  tcase_add_test (tc, test_nns_epochs_default);
  tcase_add_test (tc, test_nns_ranges);
  tcase_add_test (tc, test_one_error_per_failure);
  tcase_add_test (tc, test_save_best_path);
  tcase_add_test (tc, test_save_best_path_needs_validation);
  tcase_add_test (tc, test_save_best_path_unwritable);
  return s;
}

GST_CHECK_MAIN (tensor_trainer);
