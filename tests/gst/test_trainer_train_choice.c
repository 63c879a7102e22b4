/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_trainer's `train` property (docs/personalize.md): with
 * train=last:1 the saved first layer is the loaded one byte for byte and
 * the last layer trained, and the run saves the same bytes as the INI
 * that freezes the first layer itself (`trainable = false`); a choice
 * misspelled, or naming a layer that does not exist, fails the start with
 * one error that says so.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tt_engine.h"
#include "tt_gst_test.h"
#include "tt_gst_mlp3.h"

/* Trains ini from bin (train: the property, or NULL) on 2 epochs of 24
 * samples; the saved file's bytes (g_free), *len its size. */
static gchar *
train (const gchar * dir, const gchar * ini, const gchar * bin,
    const gchar * choice, gsize * len)
{
  gchar *out = g_build_filename (dir, choice ? "choice.bin" : "ini.bin", NULL);
  GstElement *trainer = gst_element_factory_make ("tensor_trainer", NULL);
  fail_unless (trainer != NULL);
  g_object_set (trainer, "model-config", ini, "model-load-path", bin,
      "model-save-path", out, "num-training-samples", 24, "epochs", 2,
      "post-messages", FALSE, NULL);
  if (choice)
    g_object_set (trainer, "train", choice, NULL);
  GstHarness *h = gst_harness_new_with_element (trainer, "sink", "src");
  gst_harness_set_src_caps_str (h, CAPS);
  for (guint e = 0; e < 2; e++) {
    for (guint k = 0; k < 24; k++)
      fail_unless_equals_int (gst_harness_push (h, make_sample (k)),
          GST_FLOW_OK);
    gst_buffer_unref (gst_harness_pull (h));
  }
  gst_harness_teardown (h);
  gst_object_unref (trainer);
  gchar *data = NULL;
  fail_unless (g_file_get_contents (out, &data, len, NULL), "%s not saved",
      out);
  g_free (out);
  return data;
}

GST_START_TEST (test_last_layer_trains_alone)
{
  gchar *dir = g_dir_make_tmp ("tt-gst-train-XXXXXX", NULL);
  fail_unless (dir != NULL);
  gchar *bin, *frozen_bin, *init = NULL;
  gchar *ini = write_model (dir, "free", "", &bin);
  gchar *frozen_ini = write_model (dir, "frozen", "trainable = false\n",
      &frozen_bin);
  gsize init_len, a_len, b_len;
  fail_unless (g_file_get_contents (bin, &init, &init_len, NULL));
  fail_unless (init_len >= ALL_BYTES, "%" G_GSIZE_FORMAT " bytes", init_len);

  gchar *a = train (dir, ini, bin, "last:1", &a_len);
  fail_unless (a_len >= ALL_BYTES);
  fail_unless (memcmp (a, init, HIDDEN_BYTES) == 0,
      "train=last:1 changed the first layer");
  fail_unless (memcmp (a + HIDDEN_BYTES, init + HIDDEN_BYTES,
          ALL_BYTES - HIDDEN_BYTES) != 0, "the last layer did not train");

  /* the same model with the first layer frozen in its INI, the same
   * initial weights: the same bytes */
  gchar *b = train (dir, frozen_ini, frozen_bin, NULL, &b_len);
  fail_unless_equals_uint64 (a_len, b_len);
  fail_unless (memcmp (a, b, ALL_BYTES) == 0,
      "train=last:1 trains otherwise than trainable = false");

  g_free (a);
  g_free (b);
  g_free (init);
  g_free (ini);
  g_free (bin);
  g_free (frozen_ini);
  g_free (frozen_bin);
  tt_gst_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* The start fails with one error naming what is wrong. */
static void
start_fails (const gchar * choice, const gchar * expect)
{
  gchar *dir = g_dir_make_tmp ("tt-gst-train-XXXXXX", NULL);
  gchar *bin;
  gchar *ini = write_model (dir, "m", "", &bin);
  gchar *out = g_build_filename (dir, "out.bin", NULL);
  GstElement *trainer = gst_element_factory_make ("tensor_trainer", NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (trainer, bus);
  g_object_set (trainer, "model-config", ini, "model-load-path", bin,
      "model-save-path", out, "num-training-samples", 24, "train", choice,
      NULL);
  fail_unless_equals_int (gst_element_set_state (trainer, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (text, expect) != NULL, "train=%s: '%s'", choice, text);
  g_free (text);
  text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (text, "");
  g_free (text);
  gst_element_set_state (trainer, GST_STATE_NULL);
  gst_object_unref (trainer);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (out);
  g_free (ini);
  g_free (bin);
  tt_gst_remove_dir (dir);
  g_free (dir);
}

GST_START_TEST (test_bad_choices_fail_the_start)
{
  start_fails ("some", "'some' is not a choice");
  start_fails ("layers:hidden,nope", "no layer named 'nope'");
  start_fails ("last:3", "not 3");
}

GST_END_TEST;

static Suite *
trainer_train_choice_suite (void)
{
  Suite *s = suite_create ("tensor_trainer train");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_last_layer_trains_alone);
  tcase_add_test (tc, test_bad_choices_fail_the_start);
  return s;
}

GST_CHECK_MAIN (trainer_train_choice);
