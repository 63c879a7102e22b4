/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_planner through GstHarness: it writes the optimized INI (and the
 * BIN) when the caps come, before forwarding them, so tensor_trainer
 * downstream loads the stored plan without planning again (asserted via
 * the plan-loaded field of its messages); batch-size override; weights;
 * passthrough; caps accepted and refused; flexible headers; errors.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

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
    "# tiny test model\n"
    "[Model]\n"
    "type = NeuralNetwork\n"
    "epochs = 2\n"
    "batch_size = 4   # four at a time\n"
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
  gchar *dir, *ini, *opt, *bin;
  GstBus *bus;
} Files;

static void
files_init (Files * f)
{
  f->dir = g_dir_make_tmp ("tt-planner-XXXXXX", NULL);
  f->ini = g_build_filename (f->dir, "tiny.ini", NULL);
  f->opt = g_build_filename (f->dir, "tiny.opt.ini", NULL);
  f->bin = g_build_filename (f->dir, "tiny.init.bin", NULL);
  fail_unless (g_file_set_contents (f->ini, tiny_ini, -1, NULL));
  f->bus = gst_bus_new ();
}

static void
files_clear (Files * f)
{
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
  gst_bus_set_flushing (f->bus, TRUE);
  gst_object_unref (f->bus);
  g_free (f->dir);
  g_free (f->ini);
  g_free (f->opt);
  g_free (f->bin);
}

static GstBuffer *
make_sample (guint k)
{
  gfloat v[7] = { 0.1f, -0.1f, 0.05f, 0.0f, 0, 0, 0 };
  const guint c = k % 3;
  v[c] += 1.0f;
  v[4 + c] = 1.0f;
  GstBuffer *b = gst_buffer_new ();
  for (guint i = 0; i < 2; i++) {
    gsize n = i ? 3 * sizeof (gfloat) : 4 * sizeof (gfloat);
    gpointer copy = g_memdup2 (i ? v + 4 : v, n);
    gst_buffer_append_memory (b, gst_memory_new_wrapped (0, copy, n, 0, n,
            copy, g_free));
  }
  return b;
}

static gboolean
field_bool (GstMessage * m, const gchar * name)
{
  gboolean v = FALSE;
  fail_unless (gst_structure_get_boolean (gst_message_get_structure (m), name,
          &v), "no %s", name);
  return v;
}

/* A harness around a configured tensor_planner (the harness plays it). */
static GstHarness *
new_planner (Files * f, const gchar * first, ...)
{
  GstElement *e = gst_element_factory_make ("tensor_planner", NULL);
  va_list ap;
  gst_element_set_bus (e, f->bus);
  va_start (ap, first);
  g_object_set_valist (G_OBJECT (e), first, ap);
  va_end (ap);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_object_unref (e);
  return h;
}

static GstHarness *
new_pipeline (Files * f, const gchar * planner_props,
    const gchar * trainer_props)
{
  gchar *launch = g_strdup_printf ("tensor_planner model-config=%s "
      "location=%s %s ! tensor_trainer model-config=%s %s", f->ini, f->opt,
      planner_props, f->opt, trainer_props);
  GstHarness *h = gst_harness_new_parse (launch);
  g_free (launch);
  gst_element_set_bus (h->element, f->bus);
  gst_harness_play (h);
  return h;
}

/* tensor_planner ! tensor_trainer: the trainer trains from the plan just
 * written, without planning again, even when an old file is in the way. */
GST_START_TEST (test_planner_then_trainer)
{
  Files f;
  files_init (&f);
  /* a stale file where the plan goes: the trainer must not read it */
  fail_unless (g_file_set_contents (f.opt, "[Model]\nnot an ini at all\n",
          -1, NULL));
  GstHarness *h = new_pipeline (&f, "", "num-training-samples=8 epochs=2");
  gst_harness_set_src_caps_str (h, TINY_CAPS);

  GstMessage *pm = tt_gst_pop_named (f.bus, "tensor-planner-plan");
  fail_unless (pm != NULL, "no tensor-planner-plan message");
  const GstStructure *ps = gst_message_get_structure (pm);
  guint64 pool, bound, naive;
  guint batch;
  gdouble ms;
  fail_unless (gst_structure_get (ps, "pool-bytes", G_TYPE_UINT64, &pool,
          "lower-bound", G_TYPE_UINT64, &bound, "naive-bytes", G_TYPE_UINT64,
          &naive, "batch-size", G_TYPE_UINT, &batch, "plan-ms", G_TYPE_DOUBLE,
          &ms, NULL));
  fail_unless (bound <= pool && pool <= naive && pool > 0);
  fail_unless_equals_int (batch, 4);
  fail_unless (ms >= 0);
  fail_unless_equals_string (gst_structure_get_string (ps, "location"), f.opt);

  GstMessage *tm = tt_gst_pop_named (f.bus, "tensor-trainer-plan");
  fail_unless (tm != NULL, "no tensor-trainer-plan message");
  fail_unless (field_bool (tm, "plan-loaded"),
      "tensor_trainer planned again instead of loading the stored plan");
  guint64 tpool;
  fail_unless (gst_structure_get_uint64 (gst_message_get_structure (tm),
          "pool-bytes", &tpool));
  fail_unless_equals_uint64 (tpool, pool);

  for (guint k = 0; k < 16; k++)
    fail_unless_equals_int (gst_harness_push (h, make_sample (k)), GST_FLOW_OK);
  for (guint e = 0; e < 2; e++) {
    GstBuffer *b = gst_harness_pull (h);
    gdouble v[4];
    gst_buffer_extract (b, 0, v, sizeof v);
    fail_unless (isfinite (v[0]) && v[0] > 0);
    gst_buffer_unref (b);
    GstMessage *em = tt_gst_pop_named (f.bus, "tensor-trainer-epoch");
    fail_unless (em != NULL);
    fail_unless (field_bool (em, "plan-loaded"));
    gst_message_unref (em);
  }
  gchar *err = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (err, "");
  g_free (err);

  /* the file is an optimized INI of the model's own text */
  gchar *text;
  fail_unless (g_file_get_contents (f.opt, &text, NULL, NULL));
  fail_unless (g_str_has_prefix (text, "# tiny test model\n[Model]"));
  fail_unless (strstr (text, "[Plan]") && strstr (text, "[Plan.Tensors]"));
  g_free (text);
  gst_message_unref (pm);
  gst_message_unref (tm);
  gst_harness_teardown (h);
  files_clear (&f);
}

GST_END_TEST;

/* A location that does not end in .ini gets a bundle: the plan and the
 * weights in one file, which the trainer takes as its whole model. */
GST_START_TEST (test_bundle_location)
{
  Files f;
  files_init (&f);
  gchar *bundle = g_strconcat (f.opt, ".ttb", NULL);
  gchar *launch = g_strdup_printf ("tensor_planner model-config=%s "
      "location=%s ! tensor_trainer model-config=%s num-training-samples=8 "
      "epochs=1", f.ini, bundle, bundle);
  GstHarness *h = gst_harness_new_parse (launch);
  g_free (launch);
  gst_element_set_bus (h->element, f.bus);
  gst_harness_play (h);
  gst_harness_set_src_caps_str (h, TINY_CAPS);
  fail_unless (tt_bundle_is_bundle (bundle), "no bundle at the location");
  GstMessage *tm = tt_gst_pop_named (f.bus, "tensor-trainer-plan");
  fail_unless (tm != NULL, "no tensor-trainer-plan message");
  fail_unless (field_bool (tm, "plan-loaded"),
      "the trainer planned again instead of using the bundle's plan");
  gst_message_unref (tm);
  for (guint k = 0; k < 8; k++)
    fail_unless_equals_int (gst_harness_push (h, make_sample (k)), GST_FLOW_OK);
  gchar *err = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (err, "");
  g_free (err);
  gst_harness_teardown (h);
  g_unlink (bundle);
  g_free (bundle);
  files_clear (&f);
}

GST_END_TEST;

/* batch-size: planned for 8 and written into [Model], so the trainer
 * loads the plan with batch 8. */
GST_START_TEST (test_batch_size)
{
  Files f;
  files_init (&f);
  GstHarness *h = new_pipeline (&f, "batch-size=8",
      "num-training-samples=8 epochs=1");
  gst_harness_set_src_caps_str (h, TINY_CAPS);
  GstMessage *tm = tt_gst_pop_named (f.bus, "tensor-trainer-plan");
  fail_unless (tm != NULL);
  fail_unless (field_bool (tm, "plan-loaded"));
  guint batch;
  fail_unless (gst_structure_get_uint (gst_message_get_structure (tm),
          "batch-size", &batch));
  fail_unless_equals_int (batch, 8);
  gst_message_unref (tm);
  gchar *text;
  fail_unless (g_file_get_contents (f.opt, &text, NULL, NULL));
  fail_unless (strstr (text, "batch_size = 8   # the batch of the plan "
          "below (was: batch_size = 4   # four at a time)"), "%s", text);
  fail_unless (strstr (text, "\nbatch_size = 8\n"), "[Plan] batch");
  g_free (text);
  for (guint k = 0; k < 8; k++)
    fail_unless_equals_int (gst_harness_push (h, make_sample (k)), GST_FLOW_OK);
  GstBuffer *b = gst_harness_pull (h);
  gst_buffer_unref (b);
  gst_harness_teardown (h);

  /* a batch_size key missing from [Model] is added */
  gchar *no_batch = g_strdup (tiny_ini);
  gchar *at = strstr (no_batch, "batch_size");
  memcpy (at, "#atch_size", 10);
  fail_unless (g_file_set_contents (f.ini, no_batch, -1, NULL));
  g_free (no_batch);
  h = new_pipeline (&f, "batch-size=2", "num-training-samples=4 epochs=1");
  gst_harness_set_src_caps_str (h, TINY_CAPS);
  tm = tt_gst_pop_named (f.bus, "tensor-trainer-plan");
  fail_unless (tm != NULL);
  fail_unless (field_bool (tm, "plan-loaded"));
  fail_unless (gst_structure_get_uint (gst_message_get_structure (tm),
          "batch-size", &batch));
  fail_unless_equals_int (batch, 2);
  gst_message_unref (tm);
  gst_harness_teardown (h);
  files_clear (&f);
}

GST_END_TEST;

/* weights-location: initialized weights, or model-load-path's. */
GST_START_TEST (test_weights)
{
  Files f;
  tt_error err;
  files_init (&f);
  GstHarness *h = new_planner (&f, "model-config", f.ini, "location", f.opt,
      "weights-location", f.bin, NULL);
  gst_harness_set_src_caps_str (h, TINY_CAPS);
  fail_unless (g_file_test (f.bin, G_FILE_TEST_EXISTS));
  tt_model *m = tt_model_load_ini (f.opt, &err);
  fail_unless (m != NULL, "%s", err.message);
  fail_unless_equals_int (tt_model_compile (m, &err), TT_OK);
  tt_plan_info info;
  tt_model_plan_info (m, &info);
  fail_unless (info.from_stored_plan);
  fail_unless_equals_int (tt_model_load_bin (m, f.bin, &err), TT_OK);
  /* a BIN to start from: copied through the model */
  gchar *src = g_build_filename (f.dir, "start.bin", NULL);
  fail_unless_equals_int (tt_model_save_bin (m, src, &err), TT_OK);
  tt_model_free (m);
  gst_harness_teardown (h);
  g_unlink (f.bin);

  h = new_planner (&f, "model-config", f.ini, "location", f.opt,
      "weights-location", f.bin, "model-load-path", src, NULL);
  gst_harness_set_src_caps_str (h, TINY_CAPS);
  gchar *a, *b;
  gsize na, nb;
  fail_unless (g_file_get_contents (src, &a, &na, NULL));
  fail_unless (g_file_get_contents (f.bin, &b, &nb, NULL));
  fail_unless (na == nb && memcmp (a, b, na) == 0);
  g_free (a);
  g_free (b);
  g_free (src);
  gst_harness_teardown (h);
  files_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_passthrough)
{
  Files f;
  files_init (&f);
  GstHarness *h =
      new_planner (&f, "model-config", f.ini, "location", f.opt, NULL);
  gst_harness_set_src_caps_str (h, TINY_CAPS);
  GstCaps *out = gst_pad_get_current_caps (h->sinkpad);
  GstCaps *in = gst_caps_from_string (TINY_CAPS);
  fail_unless (gst_caps_is_equal (in, out));
  gst_caps_unref (in);
  gst_caps_unref (out);
  for (guint k = 0; k < 3; k++) {
    GstBuffer *b = make_sample (k);
    gst_buffer_ref (b);
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    GstBuffer *o = gst_harness_pull (h);
    fail_unless (o == b, "the buffer was not passed through");
    gst_buffer_unref (o);
    gst_buffer_unref (b);
  }
  gst_harness_teardown (h);
  files_clear (&f);
}

GST_END_TEST;

/* The caps forms: other/tensor (input only) and flexible are accepted,
 * and dimensions with or without trailing 1s (older nnstreamer padded
 * them to 4 entries, the current one writes "4:1"). */
GST_START_TEST (test_caps_forms)
{
  Files f;
  files_init (&f);
  const gchar *forms[] = {
    "other/tensor,dimension=(string)4:1:1:1,type=(string)uint8,"
        "framerate=(fraction)30/1",
    "other/tensors,format=static,num_tensors=1,dimensions=(string)1:4:1:1,"
        "types=(string)float32,framerate=(fraction)0/1",
    "other/tensors,format=flexible,framerate=(fraction)0/1",
    "other/tensors,format=static,num_tensors=2,dimensions=(string)\"4:1,3:1\","
        "types=(string)\"float32,float32\",framerate=(fraction)0/1",
    "other/tensors,format=static,num_tensors=2,dimensions=(string)\"4,3\","
        "types=(string)\"float32,float32\",framerate=(fraction)0/1",
  };
  for (guint i = 0; i < G_N_ELEMENTS (forms); i++) {
    g_unlink (f.opt);
    GstHarness *h = new_planner (&f, "model-config", f.ini, "location", f.opt,
        NULL);
    gst_harness_set_src_caps_str (h, forms[i]);
    fail_unless (g_file_test (f.opt, G_FILE_TEST_EXISTS), "%s", forms[i]);
    /* a passthrough: downstream gets the caps as they came */
    GstCaps *out = gst_pad_get_current_caps (h->sinkpad);
    GstCaps *in = gst_caps_from_string (forms[i]);
    fail_unless (gst_caps_is_equal (out, in), "%" GST_PTR_FORMAT, out);
    gst_caps_unref (out);
    gst_caps_unref (in);
    gchar *err = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
    fail_unless_equals_string (err, "");
    g_free (err);
    gst_harness_teardown (h);
  }
  files_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_caps_refused)
{
  Files f;
  files_init (&f);
  GstHarness *h =
      new_planner (&f, "model-config", f.ini, "location", f.opt, NULL);
  gst_harness_push_event (h, gst_event_new_stream_start ("s"));
  gst_harness_push_event (h, caps_event
      ("other/tensors,format=static,num_tensors=2,"
          "dimensions=(string)\"5:1:1:1,3:1:1:1\","
          "types=(string)\"float32,float32\""));
  gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "tensor 0 has dimensions 5:1:1:1, expected "
          "4:1:1:1") && strstr (msg, f.ini), "%s", msg);
  g_free (msg);
  fail_if (g_file_test (f.opt, G_FILE_TEST_EXISTS),
      "written for caps that do not fit");
  /* each buffer makes GstBaseTransform offer the same caps again: still
   * one error for the one failure */
  GstSegment segment;
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_harness_push_event (h, gst_event_new_segment (&segment));
  for (guint k = 0; k < 3; k++)
    fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_allocate
            (NULL, 8 * sizeof (gfloat), NULL)), GST_FLOW_NOT_NEGOTIATED);
  fail_unless (gst_bus_pop_filtered (f.bus, GST_MESSAGE_ERROR) == NULL,
      "the refused caps were posted again");
  gst_harness_teardown (h);

  /* flexible: the first buffer's headers are checked */
  h = new_planner (&f, "model-config", f.ini, "location", f.opt, NULL);
  gst_harness_set_src_caps_str (h, "other/tensors,format=flexible");
  guint32 hd[32] = { 0xfeedcced, 0xDE001000, 7, 6, 1, 1, 1 };
  hd[19] = 1;
  hd[20] = 4;
  gsize n = sizeof hd + 6 * sizeof (gfloat);
  guint8 *data = g_malloc0 (n);
  memcpy (data, hd, sizeof hd);
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_wrapped (data,
              n)), GST_FLOW_ERROR);
  msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "tensor 0 has dimensions 6:1:1:1"), "%s", msg);
  g_free (msg);
  gst_harness_teardown (h);
  files_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_errors)
{
  Files f;
  files_init (&f);
  /* properties */
  GstElement *e = gst_element_factory_make ("tensor_planner", NULL);
  gst_element_set_bus (e, f.bus);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "No model-config set"), "%s", msg);
  g_free (msg);
  g_object_set (e, "model-config", f.ini, NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "No location set"), "%s", msg);
  g_free (msg);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);

  /* files are read and checked at start: a bad one fails the state change
   * with its message, once; a bundle is no INI to plan */
  gchar *bad = g_build_filename (f.dir, "bad.ini", NULL);
  gchar *text = g_strconcat (tiny_ini, "colour = blue\n", NULL);
  fail_unless (g_file_set_contents (bad, text, -1, NULL));
  gchar *bundle = g_build_filename (f.dir, "tiny.ttb", NULL);
  {
    tt_error err;
    tt_model *m = tt_model_load_ini (f.ini, &err);
    fail_unless (m && tt_model_compile (m, &err) == TT_OK);
    fail_unless (tt_model_init_weights (m, &err) == TT_OK);
    fail_unless (tt_model_save (m, bundle, &err) == TT_OK, "%s", err.message);
    tt_model_free (m);
  }
  gchar *short_bin = g_build_filename (f.dir, "short.bin", NULL);
  fail_unless (g_file_set_contents (short_bin, "0123456789", -1, NULL));
  gchar *out_bin = g_build_filename (f.dir, "out.BIN", NULL);
  gchar *w_ini = g_build_filename (f.dir, "w.ini", NULL);
  const gchar *cases[][5] = {
    /* model-config, location, weights-location, model-load-path, says */
    {bad, NULL, NULL, NULL, "colour"},
    {"/nonexistent/m.ini", NULL, NULL, NULL, "/nonexistent/m.ini"},
    {f.dir, NULL, NULL, NULL, f.dir},
    {bundle, NULL, NULL, NULL, "is a bundle"},
    {NULL, "/nonexistent/dir/out.ini", NULL, NULL,
        "location=/nonexistent/dir/out.ini"},
    {NULL, NULL, "/nonexistent/dir/w.bin", NULL,
        "weights-location=/nonexistent/dir/w.bin"},
    {NULL, NULL, NULL, short_bin, "short.bin"},
    {NULL, out_bin, NULL, NULL, "BIN weights cannot hold a plan"},
    {NULL, NULL, w_ini, NULL, "not an INI"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    e = gst_element_factory_make ("tensor_planner", NULL);
    gst_element_set_bus (e, f.bus);
    g_object_set (e, "model-config", cases[i][0] ? cases[i][0] : f.ini,
        "location", cases[i][1] ? cases[i][1] : f.opt, "weights-location",
        cases[i][2], "model-load-path", cases[i][3], NULL);
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
        GST_STATE_CHANGE_FAILURE);
    msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
    fail_unless (strstr (msg, cases[i][4]) != NULL, "case %u: %s", i, msg);
    /* readable words, not the bundle's bytes */
    fail_unless (g_utf8_validate (msg, -1, NULL), "case %u", i);
    g_free (msg);
    fail_unless (gst_bus_pop_filtered (f.bus, GST_MESSAGE_ERROR) == NULL);
    gst_element_set_state (e, GST_STATE_NULL);
    gst_object_unref (e);
  }
  /* an alignment the engine refuses fails the start, not the caps */
  e = gst_element_factory_make ("tensor_planner", NULL);
  gst_element_set_bus (e, f.bus);
  g_object_set (e, "model-config", f.ini, "location", f.opt, "alignment", 2,
      NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "align") != NULL, "alignment: %s", msg);
  g_free (msg);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  /* nothing was written by the refused starts */
  fail_if (g_file_test (out_bin, G_FILE_TEST_EXISTS));
  fail_if (g_file_test (w_ini, G_FILE_TEST_EXISTS));
  fail_if (g_file_test (f.opt, G_FILE_TEST_EXISTS));
  g_free (out_bin);
  g_free (w_ini);
  g_free (bundle);
  g_free (short_bin);
  g_free (bad);
  g_free (text);
  files_clear (&f);
}

GST_END_TEST;

/* tiny_ini with three sigmoid layers of 64: some activations can be
 * recomputed during backward */
static const gchar *deep_ini =
    "[Model]\ntype = NeuralNetwork\nepochs = 1\nbatch_size = 4\n"
    "loss = cross\n[Optimizer]\ntype = sgd\nlearning_rate = 0.05\n"
    "[input]\ntype = input\ninput_shape = 1:1:4\n"
    "[h1]\ntype = fully_connected\nunit = 64\nactivation = sigmoid\n"
    "[h2]\ntype = fully_connected\nunit = 64\nactivation = sigmoid\n"
    "[h3]\ntype = fully_connected\nunit = 64\nactivation = sigmoid\n"
    "[output]\ntype = fully_connected\nunit = 3\nactivation = softmax\n";

/* memory-limit on both elements: a limit no plan meets is an error naming
 * the smallest feasible one; that one plans, the decisions go into the
 * optimized INI, and tensor_trainer trains from it without planning. */
GST_START_TEST (test_memory_limit)
{
  Files f;
  files_init (&f);
  fail_unless (g_file_set_contents (f.ini, deep_ini, -1, NULL));
  GstElement *e = gst_element_factory_make ("tensor_trainer", NULL);
  guint64 limit = 1;
  g_object_get (e, "memory-limit", &limit, NULL);
  fail_unless (limit == 0, "default memory-limit %" G_GUINT64_FORMAT, limit);
  gst_element_set_bus (e, f.bus);
  g_object_set (e, "model-config", f.ini, "memory-limit", (guint64) 100,
      "num-inputs", 1, "num-labels", 1, "num-training-samples", 4, NULL);
  g_object_get (e, "memory-limit", &limit, NULL);
  fail_unless (limit == 100);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  const gchar *at = strstr (msg, "smallest feasible limit is ");
  fail_unless (at != NULL, "%s", msg);
  const guint64 smallest = g_ascii_strtoull (at + 27, NULL, 10);
  g_free (msg);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);

  GstHarness *h = new_planner (&f, "model-config", f.ini, "location", f.opt,
      "memory-limit", (guint64) 100, NULL);
  gst_harness_play (h);
  gst_harness_set_src_caps_str (h, TINY_CAPS);
  msg = tt_gst_pop_text (f.bus, GST_MESSAGE_ERROR);
  fail_unless (msg && strstr (msg, "smallest feasible limit is"), "%s", msg);
  g_free (msg);
  gst_harness_teardown (h);

  gchar *props = g_strdup_printf ("memory-limit=%" G_GUINT64_FORMAT,
      smallest);
  h = new_pipeline (&f, props, "num-training-samples=8 epochs=1");
  gst_harness_set_src_caps_str (h, TINY_CAPS);
  GstMessage *pm = tt_gst_pop_named (f.bus, "tensor-planner-plan");
  fail_unless (pm != NULL);
  const GstStructure *ps = gst_message_get_structure (pm);
  guint64 pool = 0, stored = 0;
  guint recomputed = 0;
  fail_unless (gst_structure_get_uint64 (ps, "pool-bytes", &pool) &&
      gst_structure_get_uint64 (ps, "memory-limit", &stored) &&
      gst_structure_get_uint (ps, "recomputed", &recomputed));
  fail_unless (pool <= smallest && stored == smallest && recomputed > 0,
      "pool %" G_GUINT64_FORMAT " limit %" G_GUINT64_FORMAT " recomputed %u",
      pool, stored, recomputed);
  gst_message_unref (pm);
  GstMessage *tm = tt_gst_pop_named (f.bus, "tensor-trainer-plan");
  fail_unless (tm != NULL);
  fail_unless (field_bool (tm, "plan-loaded"));
  gst_message_unref (tm);
  gchar *text;
  fail_unless (g_file_get_contents (f.opt, &text, NULL, NULL));
  fail_unless (strstr (text, "[Plan.Memory]") && strstr (text, "= recompute"),
      "%s", text);
  g_free (text);
  for (guint k = 0; k < 8; k++)
    fail_unless_equals_int (gst_harness_push (h, make_sample (k)), GST_FLOW_OK);
  GstBuffer *b = gst_harness_pull (h);
  gst_buffer_unref (b);
  fail_unless (gst_bus_pop_filtered (f.bus, GST_MESSAGE_ERROR) == NULL);
  gst_harness_teardown (h);
  g_free (props);
  files_clear (&f);
}

GST_END_TEST;

/* input 1:1:4 -> fully_connected 8192 (128 KB of activations at batch
 * 4: laid out by halves on two threads) -> fully_connected 3 */
static const gchar *wide_ini =
    "[Model]\ntype = NeuralNetwork\nepochs = 1\nbatch_size = 4\n"
    "loss = cross\n[Optimizer]\ntype = sgd\nlearning_rate = 0.01\n"
    "[input]\ntype = input\ninput_shape = 1:1:4\n"
    "[h]\ntype = fully_connected\nunit = 8192\nactivation = relu\n"
    "[output]\ntype = fully_connected\nunit = 3\nactivation = softmax\n";

/* threads: 0 by default; threads=2 lays the pool out by halves (the
 * message's laid-out-threads, the optimized INI's threads = 2), 1 not */
GST_START_TEST (test_threads)
{
  Files f;
  files_init (&f);
  fail_unless (g_file_set_contents (f.ini, wide_ini, -1, NULL));
  GstElement *e = gst_element_factory_make ("tensor_planner", NULL);
  guint threads = 7;
  g_object_get (e, "threads", &threads, NULL);
  fail_unless_equals_int (threads, 0);
  gst_object_unref (e);
  for (guint n = 1; n <= 2; n++) {
    GstHarness *h = new_planner (&f, "model-config", f.ini, "location", f.opt,
        "threads", n, NULL);
    gst_harness_play (h);
    gst_harness_set_src_caps_str (h, TINY_CAPS);
    GstMessage *pm = tt_gst_pop_named (f.bus, "tensor-planner-plan");
    fail_unless (pm != NULL);
    guint laid = 0;
    fail_unless (gst_structure_get_uint (gst_message_get_structure (pm),
            "laid-out-threads", &laid));
    fail_unless_equals_int (laid, n);
    gst_message_unref (pm);
    gchar *text;
    fail_unless (g_file_get_contents (f.opt, &text, NULL, NULL));
    fail_unless ((strstr (text, "\nthreads = 2\n") != NULL) == (n == 2),
        "threads=%u: %s", n, text);
    g_free (text);
    fail_unless (gst_bus_pop_filtered (f.bus, GST_MESSAGE_ERROR) == NULL);
    gst_harness_teardown (h);
  }
  files_clear (&f);
}

GST_END_TEST;

/* tensor_trainer reads a file that tensor_planner writes when the caps
 * come (it asks upstream at its start), once: weights that do not fit the
 * model are one error, not one per retried caps event. */
GST_START_TEST (test_trainer_error_once_after_planner)
{
  Files f;
  files_init (&f);
  gchar *short_bin = g_build_filename (f.dir, "short.bin", NULL);
  fail_unless (g_file_set_contents (short_bin, "0123456789", -1, NULL));
  gchar *props = g_strdup_printf ("name=trainer num-training-samples=8 "
      "model-load-path=%s", short_bin);
  /* plays without error: the INI is not there yet, and is not read */
  fail_if (g_file_test (f.opt, G_FILE_TEST_EXISTS));
  GstHarness *h = new_pipeline (&f, "", props);
  gst_harness_set_src_caps_str (h, TINY_CAPS);
  for (guint k = 0; k < 4; k++)
    fail_unless_equals_int (gst_harness_push (h, make_sample (k)),
        GST_FLOW_NOT_NEGOTIATED);
  fail_unless (g_file_test (f.opt, G_FILE_TEST_EXISTS));
  GstMessage *m;
  guint errors = 0;
  while ((m = gst_bus_pop_filtered (f.bus, GST_MESSAGE_ERROR))) {
    GError *err = NULL;
    gst_message_parse_error (m, &err, NULL);
    fail_unless_equals_string (GST_OBJECT_NAME (GST_MESSAGE_SRC (m)),
        "trainer");
    fail_unless (strstr (err->message, "short.bin"), "%s", err->message);
    errors++;
    g_error_free (err);
    gst_message_unref (m);
  }
  fail_unless_equals_int (errors, 1);
  gst_harness_teardown (h);
  g_free (props);
  g_free (short_bin);
  files_clear (&f);
}

GST_END_TEST;

static Suite *
tensor_planner_suite (void)
{
  Suite *s = suite_create ("tensor_planner");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_planner_then_trainer);
  tcase_add_test (tc, test_bundle_location);
  tcase_add_test (tc, test_batch_size);
  tcase_add_test (tc, test_weights);
  tcase_add_test (tc, test_passthrough);
  tcase_add_test (tc, test_caps_forms);
  tcase_add_test (tc, test_caps_refused);
  tcase_add_test (tc, test_errors);
  tcase_add_test (tc, test_trainer_error_once_after_planner);
  tcase_add_test (tc, test_memory_limit);
  tcase_add_test (tc, test_threads);
  return s;
}

GST_CHECK_MAIN (tensor_planner);
