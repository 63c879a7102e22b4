/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_trainer's feature-cache and feature-cache-file properties
 * (docs/personalize.md, "Feature cache"): with train=last:1 over a
 * frozen prefix of two dense layers, 3 epochs save the same bytes with
 * the cache as without (in memory, whole or the first two batches, and
 * in a file, removed at the end), the epoch messages count the samples
 * that came from the cache, an epoch whose samples come in another
 * order does not use it (and still trains the same), and each refused
 * setting fails the start with one error naming the property.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tt_engine.h"
#include "tt_gst_test.h"

/* input 1:1:4 -> dense 6 (relu) -> dense 5 (tanh) -> dense 3 (softmax),
 * cross entropy, batch 4, Adam; %s: extra keys of the first layer */
static const gchar *ini_format =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "batch_size = 4\n"
    "loss = cross\n"
    "[Optimizer]\n"
    "type = adam\n"
    "learning_rate = 0.01\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:1:4\n"
    "[fc1]\n"
    "type = fully_connected\n"
    "unit = 6\n"
    "activation = relu\n"
    "%s"
    "[fc2]\n"
    "type = fully_connected\n"
    "unit = 5\n"
    "activation = tanh\n"
    "[output]\n" "type = fully_connected\n" "unit = 3\n"
    "activation = softmax\n";

#define CAPS "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"4:1:1:1,3:1:1:1\",types=(string)\"float32,float32\"," \
  "framerate=(fraction)0/1"

#define SAMPLES 24
#define EPOCHS 3

static GstBuffer *
make_sample (guint k)
{
  gfloat x[4] = { 0.1f * (gfloat) (k % 5), -0.2f + 0.03f * (gfloat) k,
    0.05f * (gfloat) (k % 7), 0.3f
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

typedef struct
{
  gchar *dir, *ini, *bin;
} Model;

static void
model_make (Model * md, const gchar * fc1_keys)
{
  md->dir = g_dir_make_tmp ("tt-gst-fcache-XXXXXX", NULL);
  fail_unless (md->dir != NULL);
  gchar *text = g_strdup_printf (ini_format, fc1_keys);
  md->ini = g_build_filename (md->dir, "m.ini", NULL);
  fail_unless (g_file_set_contents (md->ini, text, -1, NULL));
  g_free (text);
  tt_error err;
  tt_model *m = tt_model_load_ini (md->ini, &err);
  fail_unless (m != NULL, "%s", err.message);
  tt_model_set_seed (m, 11);
  fail_unless (tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  fail_unless (tt_model_init_weights (m, &err) == TT_OK, "%s", err.message);
  md->bin = g_build_filename (md->dir, "init.bin", NULL);
  fail_unless (tt_model_save_bin (m, md->bin, &err) == TT_OK, "%s",
      err.message);
  tt_model_free (m);
}

static void
model_free (Model * md)
{
  tt_gst_remove_dir (md->dir);
  g_free (md->dir);
  g_free (md->ini);
  g_free (md->bin);
}

/* Trains EPOCHS epochs of SAMPLES (epoch 2 reversed when reverse_second)
 * with train=last:1 and the cache property (NULL: none) set to value;
 * the saved file's bytes (g_free), *len its size, cached[e] each epoch's
 * cached-samples. */
static gchar *
train (Model * md, const gchar * prop, const gchar * value,
    gboolean reverse_second, gsize * len, guint64 * cached)
{
  gchar *out = g_build_filename (md->dir, "out.bin", NULL);
  GstElement *trainer = gst_element_factory_make ("tensor_trainer", NULL);
  fail_unless (trainer != NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (trainer, bus);
  g_object_set (trainer, "model-config", md->ini, "model-load-path", md->bin,
      "model-save-path", out, "num-training-samples", SAMPLES, "epochs",
      EPOCHS, "train", "last:1", NULL);
  if (prop)
    gst_util_set_object_arg (G_OBJECT (trainer), prop, value);
  GstHarness *h = gst_harness_new_with_element (trainer, "sink", "src");
  gst_harness_set_src_caps_str (h, CAPS);
  for (guint e = 0; e < EPOCHS; e++) {
    for (guint k = 0; k < SAMPLES; k++) {
      const guint i = reverse_second && e == 1 ? SAMPLES - 1 - k : k;
      fail_unless_equals_int (gst_harness_push (h, make_sample (i)),
          GST_FLOW_OK);
    }
    gst_buffer_unref (gst_harness_pull (h));
    GstMessage *m = tt_gst_pop_named (bus, "tensor-trainer-epoch");
    fail_unless (m != NULL, "no message for epoch %u", e + 1);
    fail_unless (gst_structure_get (gst_message_get_structure (m),
            "cached-samples", G_TYPE_UINT64, &cached[e], NULL));
    gst_message_unref (m);
  }
  gst_harness_teardown (h);
  gst_object_unref (trainer);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  gchar *data = NULL;
  fail_unless (g_file_get_contents (out, &data, len, NULL), "%s not saved",
      out);
  g_unlink (out);
  g_free (out);
  return data;
}

GST_START_TEST (test_same_weights_with_the_cache)
{
  Model md;
  model_make (&md, "");
  gsize ref_len, len;
  guint64 cached[EPOCHS];
  gchar *ref = train (&md, NULL, NULL, FALSE, &ref_len, cached);
  for (guint e = 0; e < EPOCHS; e++)
    fail_unless_equals_uint64 (cached[e], 0);

  /* in memory, every sample: epochs 2 and 3 from the cache */
  gchar *a = train (&md, "feature-cache", "1048576", FALSE, &len, cached);
  fail_unless_equals_uint64 (len, ref_len);
  fail_unless (memcmp (a, ref, len) == 0, "feature-cache changed the weights");
  fail_unless_equals_uint64 (cached[0], 0);
  fail_unless_equals_uint64 (cached[1], SAMPLES);
  fail_unless_equals_uint64 (cached[2], SAMPLES);
  g_free (a);

  /* the first two batches alone (a record is fc2's 5 floats) */
  a = train (&md, "feature-cache", "160", FALSE, &len, cached);
  fail_unless_equals_uint64 (len, ref_len);
  fail_unless (memcmp (a, ref, len) == 0, "a partial cache changed them");
  fail_unless_equals_uint64 (cached[1], 8);
  fail_unless_equals_uint64 (cached[2], 8);
  g_free (a);

  /* in a file, removed when the model is freed */
  gchar *file = g_build_filename (md.dir, "features.cache", NULL);
  a = train (&md, "feature-cache-file", file, FALSE, &len, cached);
  fail_unless_equals_uint64 (len, ref_len);
  fail_unless (memcmp (a, ref, len) == 0, "feature-cache-file changed them");
  fail_unless_equals_uint64 (cached[0], 0);
  fail_unless_equals_uint64 (cached[1], SAMPLES);
  fail_unless_equals_uint64 (cached[2], SAMPLES);
  fail_if (g_file_test (file, G_FILE_TEST_EXISTS), "%s left behind", file);
  g_free (a);
  g_free (file);
  g_free (ref);

  /* epoch 2 in another order: not from the cache, epoch 3 is; the same
   * bytes as without the cache on that stream */
  ref = train (&md, NULL, NULL, TRUE, &ref_len, cached);
  a = train (&md, "feature-cache", "1048576", TRUE, &len, cached);
  fail_unless_equals_uint64 (len, ref_len);
  fail_unless (memcmp (a, ref, len) == 0, "a reordered epoch changed them");
  fail_unless_equals_uint64 (cached[1], 0);
  fail_unless_equals_uint64 (cached[2], SAMPLES);
  g_free (a);
  g_free (ref);
  model_free (&md);
}

GST_END_TEST;

/* The start fails with one error containing expect. */
static void
start_fails (const gchar * fc1_keys, const gchar * const *props,
    const gchar * expect)
{
  Model md;
  model_make (&md, fc1_keys);
  gchar *out = g_build_filename (md.dir, "out.bin", NULL);
  GstElement *trainer = gst_element_factory_make ("tensor_trainer", NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (trainer, bus);
  g_object_set (trainer, "model-config", md.ini, "model-load-path", md.bin,
      "model-save-path", out, "num-training-samples", SAMPLES, NULL);
  for (guint i = 0; props[i]; i += 2) {
    gchar *v = g_strdup (props[i + 1]);
    if (g_str_has_prefix (v, "DIR/")) {
      gchar *p = g_build_filename (md.dir, v + 4, NULL);
      g_free (v);
      v = p;
    }
    gst_util_set_object_arg (G_OBJECT (trainer), props[i], v);
    g_free (v);
  }
  fail_unless_equals_int (gst_element_set_state (trainer, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (text, expect) != NULL, "expected '%s' in '%s'", expect,
      text);
  g_free (text);
  text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (text, "");
  g_free (text);
  gst_element_set_state (trainer, GST_STATE_NULL);
  gst_object_unref (trainer);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (out);
  model_free (&md);
}

GST_START_TEST (test_refusals)
{
  {
    const gchar *p[] = { "feature-cache", "1048576", NULL };
    start_fails ("", p, "m.ini: feature cache: no frozen prefix");
  }
  {
    const gchar *p[] = { "train", "last:1", "feature-cache", "1048576",
      "threads", "2", NULL
    };
    start_fails ("", p, "feature-cache: more than one engine thread");
  }
  {
    const gchar *p[] = { "train", "last:1", "feature-cache-file",
      "DIR/f.cache", "memory-limit", "100000000", NULL
    };
    start_fails ("", p, "feature-cache-file: memory-limit is set");
  }
  {
    const gchar *p[] = { "train", "last:1", "feature-cache", "1048576",
      "replay-size", "8", NULL
    };
    start_fails ("", p, "feature-cache: replay-size is set");
  }
  {
    const gchar *p[] = { "train", "last:1", "feature-cache", "1048576",
      "feature-cache-file", "DIR/f.cache", NULL
    };
    start_fails ("", p, "both set");
  }
  {
    const gchar *p[] = { "train", "last:1", "feature-cache", "40", NULL };
    start_fails ("", p, "feature-cache=40: a sample's record is 20 bytes");
  }
  {
    /* the INI itself is not a feature cache: not overwritten */
    const gchar *p[] = { "train", "last:1", "feature-cache-file", "DIR/m.ini",
      NULL
    };
    start_fails ("", p, "is not a feature cache: not overwritten");
  }
  {
    /* a dropout in the prefix: not a function of the sample */
    const gchar *p[] = { "train", "last:1", "feature-cache", "1048576",
      NULL
    };
    start_fails ("[drop]\ntype = dropout\ndropout_rate = 0.5\n", p,
        "layer drop (dropout) is in the frozen prefix");
  }
}

GST_END_TEST;

static Suite *
trainer_feature_cache_suite (void)
{
  Suite *s = suite_create ("tensor_trainer feature cache");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_same_weights_with_the_cache);
  tcase_add_test (tc, test_refusals);
  return s;
}

GST_CHECK_MAIN (trainer_feature_cache);
