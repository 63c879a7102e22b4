/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The elements reading an ONNX model (a model-config ending in .onnx,
 * converted in memory at start): tensor_predictor's outputs equal the
 * engine's on the importer's files (loss mse: the graph's output), bit for
 * bit; tensor_trainer trains from the ONNX initializers and saves weights
 * the imported INI loads; tensor_planner writes the converted, planned INI
 * and its weights, which then load without planning; a bad ONNX file, or a
 * planner without a place for the weights, fails the start naming the file.
 * The model is tests/onnx/mlp_op13.onnx: input 12 features, 4 outputs.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tt_engine.h"
#include "tt_onnx.h"
#include "tt_gst_test.h"

#define MLP TT_ONNX_DIR "/mlp_op13.onnx"
#define IN_CAPS "other/tensors,format=static,num_tensors=1," \
  "dimensions=(string)12:1:1:1,types=(string)float32,framerate=(fraction)0/1"
#define TRAIN_CAPS "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"12:1:1:1,4:1:1:1\"," \
  "types=(string)\"float32,float32\",framerate=(fraction)0/1"

static gchar *dir;

static void
make_dir (void)
{
  dir = g_dir_make_tmp ("tt-onnx-XXXXXX", NULL);
  fail_unless (dir != NULL);
}

static void
remove_dir (void)
{
  tt_gst_remove_dir (dir);
  g_free (dir);
}

static guint
files_in_dir (void)
{
  guint n = 0;
  GDir *d = g_dir_open (dir, 0, NULL);
  while (d && g_dir_read_name (d))
    n++;
  if (d)
    g_dir_close (d);
  return n;
}

/* the importer's files for the fixture, with that loss */
static void
import_mlp (const gchar * loss, gchar ** ini, gchar ** bin)
{
  tt_onnx_options o = { 0 };
  tt_error err;
  o.loss = loss;
  *ini = g_build_filename (dir, "ref.ini", NULL);
  *bin = g_build_filename (dir, "ref.bin", NULL);
  fail_unless (tt_onnx_import (MLP, *ini, *bin, &o, &err) == TT_OK, "%s",
      err.message);
}

static void
sample (guint k, gfloat x[12], gfloat y[4])
{
  guint32 r = k * 2654435761u + 1;
  for (guint i = 0; i < 12; i++) {
    r = r * 1664525u + 1013904223u;
    x[i] = (gfloat) (r >> 8) / (gfloat) (1 << 24) - 0.5f;
  }
  if (y) {
    memset (y, 0, 4 * sizeof *y);
    y[k % 4] = 1;
  }
}

static GstBuffer *
sample_buffer (guint k, gboolean label)
{
  gfloat x[16];
  sample (k, x, x + 12);
  return gst_buffer_new_memdup (x, (label ? 16 : 12) * sizeof (gfloat));
}

static gchar *
start_error (const gchar * factory, ...)
{
  va_list ap;
  GstBus *bus = gst_bus_new ();
  GstElement *e = gst_element_factory_make (factory, NULL);
  fail_unless (e != NULL);
  gst_element_set_bus (e, bus);
  va_start (ap, factory);
  const gchar *first = va_arg (ap, const gchar *);
  g_object_set_valist (G_OBJECT (e), first, ap);
  va_end (ap);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  return text;
}

GST_START_TEST (test_predictor_onnx)
{
  gchar *ini, *bin;
  import_mlp ("mse", &ini, &bin);
  tt_error err;
  tt_open_options oo = { 0 };
  oo.inference = TRUE;
  oo.batch_size = 1;
  oo.weights = bin;
  tt_model *m = tt_model_open (ini, &oo, NULL, &err);
  fail_unless (m != NULL, "%s", m ? "" : err.message);

  GstElement *e = gst_element_factory_make ("tensor_predictor", NULL);
  g_object_set (e, "model-config", MLP, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, IN_CAPS);
  for (guint k = 0; k < 3; k++) {
    gfloat x[12];
    sample (k, x, NULL);
    const void *in[1] = { x };
    fail_unless (tt_model_eval_batch (m, 1, in, NULL, NULL, NULL, &err) ==
        TT_OK, "%s", err.message);
    fail_unless_equals_int (gst_harness_push (h, sample_buffer (k, FALSE)),
        GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull (h);
    GstMapInfo map;
    fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
    fail_unless_equals_uint64 (map.size, 4 * sizeof (gfloat));
    fail_unless (!memcmp (map.data, tt_model_output (m), map.size),
        "output %g, the engine's %g", ((const gfloat *) map.data)[0],
        tt_model_output (m)[0]);
    gst_buffer_unmap (out, &map);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
  gst_object_unref (e);
  tt_model_free (m);
  /* nothing written by the element: the importer's two files only */
  fail_unless_equals_int (files_in_dir (), 2);
  g_free (ini);
  g_free (bin);
}

GST_END_TEST;

GST_START_TEST (test_trainer_onnx)
{
  gchar *ini, *bin;
  import_mlp (NULL, &ini, &bin);
  gchar *saved = g_build_filename (dir, "trained.bin", NULL);
  GstElement *e = gst_element_factory_make ("tensor_trainer", NULL);
  g_object_set (e, "model-config", MLP, "model-save-path", saved,
      "num-training-samples", 8, "epochs", 1, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, TRAIN_CAPS);
  for (guint k = 0; k < 8; k++)
    fail_unless_equals_int (gst_harness_push (h, sample_buffer (k, TRUE)),
        GST_FLOW_OK);
  GstBuffer *stats = gst_harness_pull (h);
  fail_unless (stats != NULL);
  gst_buffer_unref (stats);
  gst_harness_teardown (h);
  gst_object_unref (e);

  /* the trained weights fit the imported INI and moved from the ONNX ones */
  gchar *a, *b;
  gsize na, nb;
  fail_unless (g_file_get_contents (bin, &a, &na, NULL));
  fail_unless (g_file_get_contents (saved, &b, &nb, NULL), "nothing saved");
  /* (a save adds the epoch and iteration counters after the weights) */
  fail_unless (nb >= na, "%zu bytes saved, %zu imported", nb, na);
  fail_unless (memcmp (a, b, na) != 0, "the weights did not change");
  g_free (a);
  g_free (b);
  tt_error err;
  tt_open_options oo = { 0 };
  oo.weights = saved;
  tt_model *m = tt_model_open (ini, &oo, NULL, &err);
  fail_unless (m != NULL, "%s", m ? "" : err.message);
  tt_model_free (m);
  fail_unless_equals_int (files_in_dir (), 3);
  g_free (saved);
  g_free (ini);
  g_free (bin);
}

GST_END_TEST;

GST_START_TEST (test_planner_onnx)
{
  gchar *ini, *bin;
  import_mlp (NULL, &ini, &bin);
  gchar *plan = g_build_filename (dir, "planned.ini", NULL);
  gchar *w = g_build_filename (dir, "planned.bin", NULL);
  GstElement *e = gst_element_factory_make ("tensor_planner", NULL);
  g_object_set (e, "model-config", MLP, "location", plan,
      "weights-location", w, "batch-size", 4, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, TRAIN_CAPS);
  fail_unless_equals_int (gst_harness_push (h, sample_buffer (0, TRUE)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  gst_harness_teardown (h);
  gst_object_unref (e);

  /* the plan loads without planning, with the ONNX initializers */
  tt_error err;
  tt_open_options oo = { 0 };
  oo.weights = w;
  tt_model *m = tt_model_open (plan, &oo, NULL, &err);
  fail_unless (m != NULL, "%s", m ? "" : err.message);
  tt_plan_info info;
  tt_model_plan_info (m, &info);
  fail_unless (info.from_stored_plan, "planned again");
  tt_model_free (m);
  gchar *a, *b;
  gsize na, nb;
  fail_unless (g_file_get_contents (bin, &a, &na, NULL));
  fail_unless (g_file_get_contents (w, &b, &nb, NULL));
  fail_unless (nb >= na && !memcmp (a, b, na), "weights differ from the "
      "importer's");
  g_free (a);
  g_free (b);
  g_free (plan);
  g_free (w);
  g_free (ini);
  g_free (bin);
}

GST_END_TEST;

GST_START_TEST (test_bad_onnx)
{
  gchar *bad = g_build_filename (dir, "broken.onnx", NULL);
  fail_unless (g_file_set_contents (bad, "this is no protobuf", -1, NULL));
  static const gchar *const factories[] = { "tensor_trainer",
    "tensor_predictor", "tensor_planner"
  };
  gchar *plan = g_build_filename (dir, "p.ini", NULL);
  for (guint k = 0; k < G_N_ELEMENTS (factories); k++) {
    gchar *msg = k == 2 ?
        start_error (factories[k], "model-config", bad, "location", plan,
        "weights-location", plan, NULL) :
        start_error (factories[k], "model-config", bad,
        k == 0 ? "num-training-samples" : NULL, 8, NULL);
    /* (the planner refuses an INI as weights-location first) */
    if (k < 2)
      fail_unless (strstr (msg, bad) != NULL, "%s: %s", factories[k], msg);
    g_free (msg);
  }
  gchar *w = g_build_filename (dir, "p.bin", NULL);
  gchar *msg = start_error ("tensor_planner", "model-config", bad, "location",
      plan, "weights-location", w, NULL);
  fail_unless (strstr (msg, bad) != NULL, "planner: %s", msg);
  g_free (msg);
  /* an unsupported operator: the importer's message */
  msg = start_error ("tensor_predictor", "model-config",
      TT_ONNX_DIR "/bad/unsupported_op.onnx", NULL);
  fail_unless (strstr (msg, "unsupported_op.onnx") != NULL, "%s", msg);
  g_free (msg);
  msg = start_error ("tensor_trainer", "model-config",
      TT_ONNX_DIR "/missing.onnx", "num-training-samples", 8, NULL);
  fail_unless (strstr (msg, "missing.onnx") != NULL, "%s", msg);
  g_free (msg);
  /* a planner needs somewhere for the weights */
  msg = start_error ("tensor_planner", "model-config", MLP, "location", plan,
      NULL);
  fail_unless (strstr (msg, "weights-location") != NULL, "%s", msg);
  g_free (msg);
  fail_unless_equals_int (files_in_dir (), 1);
  g_free (w);
  g_free (plan);
  g_free (bad);
}

GST_END_TEST;

static Suite *
onnx_elements_suite (void)
{
  Suite *s = suite_create ("onnx_elements");
  TCase *tc = tcase_create ("general");
  tcase_add_checked_fixture (tc, make_dir, remove_dir);
  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_predictor_onnx);
  tcase_add_test (tc, test_trainer_onnx);
  tcase_add_test (tc, test_planner_onnx);
  tcase_add_test (tc, test_bad_onnx);
  return s;
}

GST_CHECK_MAIN (onnx_elements);
