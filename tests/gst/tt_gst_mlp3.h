/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The small model of the tensor_trainer property tests (train,
 * precision): its INI with the first layer's keys left open, its caps,
 * its samples, and its initial weights written by the engine.
 */
#ifndef TT_GST_MLP3_H
#define TT_GST_MLP3_H

#include <gst/check/gstcheck.h>
#include <string.h>

#include "tt_engine.h"

/* input 1:1:4 -> fully_connected 5 (relu) -> fully_connected 3 (softmax),
 * cross entropy, batch 4, SGD; %s: the first layer's extra keys */
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
static inline GstBuffer *
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
static inline gchar *
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

#endif
