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
#include "tt_gst_mlp3.h"

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
