/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The precision property of tensor_trainer and tensor_planner
 * (docs/precision.md): a valid value reaches the model (a bf16 model
 * scales its loss from 1: the "tensor-trainer-precision" message says
 * the model's FP32-BF16, this CPU's note and the scale; the epoch
 * message carries skipped-steps and loss-scale); a bad value fails the
 * start with one error naming the property and the allowed values.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tt_engine.h"
#include "tt_gst_test.h"

static const gchar *ini_format =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "epochs = 2\n"
    "batch_size = 4\n"
    "loss = cross\n"
    "[Optimizer]\n"
    "type = sgd\n"
    "learning_rate = 0.1\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:1:4\n"
    "[hidden]\n"
    "type = fully_connected\n"
    "unit = 5\n"
    "activation = relu\n"
    "%s"
    "[output]\n" "type = fully_connected\n" "unit = 3\n"
    "activation = softmax\n";

#define CAPS "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"4:1:1:1,3:1:1:1\",types=(string)\"float32,float32\"," \
  "framerate=(fraction)0/1"

/* hidden's weight (4 x 5) and bias (5), then output's (5 x 3, 3) */
#define HIDDEN_BYTES ((4 * 5 + 5) * 4)
#define ALL_BYTES (HIDDEN_BYTES + (5 * 3 + 3) * 4)

/* Sample k: class k % 3 lights its input. */
static GstBuffer *
make_sample (guint k)
{
  gfloat x[4] = { 0.1f * (gfloat) (k % 5), -0.2f, 0.05f * (gfloat) (k % 7),
    0.3f
  }, y[3] = { 0, 0, 0 };
  x[k % 3] += 1.0f;
  y[k % 3] = 1.0f;
  gpointer dx = g_memdup2 (x, sizeof x), dy = g_memdup2 (y, sizeof y);
  GstBuffer *b = gst_buffer_new ();
  gst_buffer_append_memory (b, gst_memory_new_wrapped (0, dx, sizeof x, 0,
          sizeof x, dx, g_free));
  gst_buffer_append_memory (b, gst_memory_new_wrapped (0, dy, sizeof y, 0,
          sizeof y, dy, g_free));
  return b;
}

/* The INI (with the first layer's keys), initial weights from the engine
 * with seed 7, both in dir; the path of the BIN in *bin. */
static gchar *
write_model (const gchar * dir, const gchar * name, const gchar * hidden_keys,
    gchar ** bin)
{
  gchar *text = g_strdup_printf (ini_format, hidden_keys);
  gchar *file = g_strdup_printf ("%s.ini", name);
  gchar *ini = g_build_filename (dir, file, NULL);
  g_free (file);
  fail_unless (g_file_set_contents (ini, text, -1, NULL));
  g_free (text);
  tt_error err;
  tt_model *m = tt_model_load_ini (ini, &err);
  fail_unless (m != NULL, "%s", err.message);
  tt_model_set_seed (m, 7);
  fail_unless (tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  fail_unless (tt_model_init_weights (m, &err) == TT_OK, "%s", err.message);
  file = g_strdup_printf ("%s.init.bin", name);
  *bin = g_build_filename (dir, file, NULL);
  g_free (file);
  fail_unless (tt_model_save_bin (m, *bin, &err) == TT_OK, "%s", err.message);
  tt_model_free (m);
  return ini;
}


GST_START_TEST (test_bf16_reaches_the_model)
{
  gchar *dir = g_dir_make_tmp ("tt-gst-precision-XXXXXX", NULL);
  gchar *bin;
  gchar *ini = write_model (dir, "m", "", &bin);
  GstElement *trainer = gst_element_factory_make ("tensor_trainer", NULL);
  GstBus *bus = gst_bus_new ();
  gchar *got = NULL;
  g_object_set (trainer, "model-config", ini, "model-load-path", bin,
      "num-training-samples", 24, "epochs", 1, "post-messages", TRUE,
      "precision", "bf16", NULL);
  g_object_get (trainer, "precision", &got, NULL);
  fail_unless_equals_string (got, "bf16");
  g_free (got);
  /* the model loads, and says its precision, when the harness starts it */
  gst_element_set_bus (trainer, bus);
  GstHarness *h = gst_harness_new_with_element (trainer, "sink", "src");
  gst_harness_set_src_caps_str (h, CAPS);
  for (guint k = 0; k < 24; k++)
    fail_unless_equals_int (gst_harness_push (h, make_sample (k)), GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  GstMessage *msg = tt_gst_pop_named (bus, "tensor-trainer-precision");
  fail_unless (msg != NULL, "no tensor-trainer-precision message");
  const GstStructure *s = gst_message_get_structure (msg);
  fail_unless_equals_string (gst_structure_get_string (s, "precision"),
      "FP32-BF16");
  fail_unless (g_str_has_prefix (gst_structure_get_string (s, "note"),
          "bf16: "));
  gdouble scale = 0;
  fail_unless (gst_structure_get_double (s, "loss-scale", &scale));
  fail_unless (scale == 0.0, "loss-scale %g", scale);
  gst_message_unref (msg);
  msg = tt_gst_pop_named (bus, "tensor-trainer-epoch");
  fail_unless (msg != NULL, "no epoch message");
  s = gst_message_get_structure (msg);
  guint64 skipped = 1;
  fail_unless (gst_structure_get_uint64 (s, "skipped-steps", &skipped));
  fail_unless_equals_uint64 (skipped, 0);
  fail_unless (gst_structure_get_double (s, "loss-scale", &scale));
  fail_unless (scale == 0.0, "loss-scale %g", scale);
  gst_message_unref (msg);
  msg = tt_gst_pop_named (bus, "tensor-trainer-precision");
  fail_unless (msg == NULL, "the note was posted again");
  gst_harness_teardown (h);
  gst_object_unref (trainer);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (ini);
  g_free (bin);
  tt_gst_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* The start of element (tensor_trainer or tensor_planner) with a bad
 * precision fails with one error naming the property and the values. */
static void
start_fails (const gchar * factory)
{
  gchar *dir = g_dir_make_tmp ("tt-gst-precision-XXXXXX", NULL);
  gchar *bin;
  gchar *ini = write_model (dir, "m", "", &bin);
  gchar *out = g_build_filename (dir, "out.ini", NULL);
  GstElement *e = gst_element_factory_make (factory, NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  g_object_set (e, "model-config", ini, "precision", "fp64", NULL);
  if (!strcmp (factory, "tensor_trainer"))
    g_object_set (e, "model-load-path", bin, "num-training-samples", 24, NULL);
  else
    g_object_set (e, "location", out, NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (text, "precision: 'fp64' is not a precision: use "
          "fp32, bf16, fp16") != NULL, "%s: '%s'", factory, text);
  g_free (text);
  text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (text, "");
  g_free (text);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (out);
  g_free (ini);
  g_free (bin);
  tt_gst_remove_dir (dir);
  g_free (dir);
}

GST_START_TEST (test_bad_precision_fails_the_start)
{
  start_fails ("tensor_trainer");
  start_fails ("tensor_planner");
}

GST_END_TEST;

static Suite *
trainer_precision_suite (void)
{
  Suite *s = suite_create ("precision property");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_bf16_reaches_the_model);
  tcase_add_test (tc, test_bad_precision_fails_the_start);
  return s;
}

GST_CHECK_MAIN (trainer_precision);
