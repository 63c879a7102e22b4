/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_predictor through GstHarness: outputs equal the engine's forward
 * pass bit for bit (batch 1 and batched, a dense and a convolutional
 * model), timestamps kept, accuracy on labelled buffers, text output, the
 * inference pool against the training pool, reload of a replaced weights
 * file, errors for bad files, caps and buffers, and the live hand-off from
 * a tensor_trainer under load: two threads train and predict at once, and
 * every prediction must come from one whole published weight set.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "tt_engine.h"
#include "tt_gst_test.h"

/* input 1:1:4 -> fully_connected 3 -> softmax */
static const gchar *dense_ini =
    "[Model]\n"
    "type = NeuralNetwork\n"
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

/* input 1:6:6 -> conv 2x3x3 relu -> max pool 2x2 -> fc 3 softmax */
static const gchar *conv_ini =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "batch_size = 4\n"
    "loss = cross\n"
    "[Optimizer]\n"
    "type = adam\n"
    "learning_rate = 0.01\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:6:6\n"
    "[conv]\n"
    "type = conv2d\n"
    "filters = 2\n"
    "kernel_size = 3,3\n"
    "activation = relu\n"
    "[pool]\n"
    "type = pooling2d\n"
    "pooling = max\n"
    "pool_size = 2,2\n"
    "stride = 2,2\n"
    "[flat]\n"
    "type = flatten\n"
    "[output]\n"
    "type = fully_connected\n" "unit = 3\n" "activation = softmax\n";

/* input 1:1:N -> fully_connected 1, zero weights, mse, plain SGD, batch
 * 1: on an all-ones input every weight and the bias get the same gradient,
 * so all N + 1 stay equal after every step and the output on ones is
 * N + 1 times that value. A torn set (some weights of one step, some of
 * the next) gives an output between two published ones, which no whole set
 * gives. N is large enough (64 KiB of weights) that copies take long
 * enough to overlap if anything let them. */
#define STAMP_N 16384
static const gchar *stamp_ini =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "batch_size = 1\n"
    "loss = mse\n"
    "[Optimizer]\n"
    "type = sgd\n"
    "learning_rate = 0.000008\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:1:16384\n"
    "[output]\n"
    "type = fully_connected\n"
    "unit = 1\n" "weight_initializer = zeros\n" "bias_initializer = zeros\n";

#define DENSE_CAPS "other/tensors,format=static,num_tensors=1," \
  "dimensions=(string)4:1:1:1,types=(string)float32,framerate=(fraction)30/1"
#define DENSE_INDEX_CAPS(type) "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"4:1:1:1,1:1:1:1\",types=(string)\"float32," type \
  "\",framerate=(fraction)30/1"
#define DENSE_LABEL_CAPS "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"4:1:1:1,3:1:1:1\",types=(string)\"float32,float32\"," \
  "framerate=(fraction)0/1"
#define CONV_CAPS "other/tensors,format=static,num_tensors=1," \
  "dimensions=(string)6:6:1:1,types=(string)float32,framerate=(fraction)0/1"
#define STAMP_CAPS "other/tensors,format=static,num_tensors=1," \
  "dimensions=(string)16384:1:1:1,types=(string)float32," \
  "framerate=(fraction)0/1"
#define STAMP_TRAIN_CAPS "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"16384:1:1:1,1:1:1:1\"," \
  "types=(string)\"float32,float32\",framerate=(fraction)0/1"

static gchar *tmp_dir;

static gchar *
write_tmp (const gchar * name, const gchar * text)
{
  gchar *path = g_build_filename (tmp_dir, name, NULL);
  fail_unless (g_file_set_contents (path, text, -1, NULL));
  return path;
}

/* A model compiled for training from the INI at path with seeded random
 * weights, trained two steps so the weights are not their initial ones,
 * saved as a BIN at bin. */
static void
make_weights (const gchar * ini, const gchar * bin, guint64 seed)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (ini, &err);
  fail_unless (m != NULL, "%s", err.message);
  tt_model_set_seed (m, seed);
  fail_unless (tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  tt_shape in, ls;
  tt_model_input_shape (m, 0, &in);
  ls = tt_model_label_shape (m);
  const gsize n_in = (gsize) in.channel * in.height * in.width;
  const gsize n_l = (gsize) ls.channel * ls.height * ls.width;
  const guint batch = tt_model_batch_size (m);
  gfloat *x = g_new (gfloat, batch * n_in), *y = g_new0 (gfloat, batch * n_l);
  GRand *r = g_rand_new_with_seed ((guint32) seed);
  for (gsize i = 0; i < batch * n_in; i++)
    x[i] = (gfloat) g_rand_double (r);
  for (guint b = 0; b < batch; b++)
    y[b * n_l + b % n_l] = 1;
  const void *inputs[1] = { x };
  for (int s = 0; s < 2; s++)
    fail_unless (tt_model_train_batch (m, batch, inputs, NULL, y, NULL,
            &err) == TT_OK, "%s", err.message);
  fail_unless (tt_model_save_bin (m, bin, &err) == TT_OK, "%s", err.message);
  g_rand_free (r);
  g_free (x);
  g_free (y);
  tt_model_free (m);
}

/* The engine's inference output for n samples at the given batch size. */
static gfloat *
engine_predict_on (const gchar * ini, const gchar * bin, guint batch,
    const gfloat * x, guint n, guint threads)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (ini, &err);
  fail_unless (m != NULL, "%s", err.message);
  fail_unless (tt_model_set_batch_size (m, batch, &err) == TT_OK);
  fail_unless (tt_model_set_threads (m, threads, &err) == TT_OK);
  fail_unless (tt_model_set_inference (m, true, &err) == TT_OK);
  fail_unless (tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  fail_unless (tt_model_load_bin (m, bin, &err) == TT_OK, "%s", err.message);
  tt_shape in, out;
  tt_model_input_shape (m, 0, &in);
  out = tt_model_output_shape (m);
  const gsize n_in = (gsize) in.channel * in.height * in.width;
  const gsize n_out = (gsize) out.channel * out.height * out.width;
  gfloat *y = g_new (gfloat, n * n_out);
  for (guint at = 0; at < n; at += batch) {
    guint k = MIN (batch, n - at);
    const void *inputs[1] = { x + at * n_in };
    fail_unless (tt_model_eval_batch (m, k, inputs, NULL, NULL, NULL,
            &err) == TT_OK, "%s", err.message);
    memcpy (y + at * n_out, tt_model_output (m), k * n_out * sizeof *y);
  }
  tt_model_free (m);
  return y;
}

static gfloat *
engine_predict (const gchar * ini, const gchar * bin, guint batch,
    const gfloat * x, guint n)
{
  return engine_predict_on (ini, bin, batch, x, n, 1);
}

static GstElement *
make_predictor (GstBus ** bus)
{
  GstElement *e = gst_element_factory_make ("tensor_predictor", NULL);
  fail_unless (e != NULL, "tensor_predictor not found");
  if (bus) {
    *bus = gst_bus_new ();
    gst_element_set_bus (e, *bus);
  }
  return e;
}

static GstBuffer *
floats_buffer (const gfloat * v, gsize n, guint64 index)
{
  GstBuffer *b = gst_buffer_new_memdup (v, n * sizeof *v);
  GST_BUFFER_PTS (b) = index * GST_SECOND / 30;
  GST_BUFFER_DURATION (b) = GST_SECOND / 30;
  GST_BUFFER_OFFSET (b) = index;
  return b;
}

static void
check_output (GstBuffer * out, const gfloat * want, gsize n)
{
  GstMapInfo map;
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  fail_unless_equals_uint64 (map.size, n * sizeof (gfloat));
  fail_unless (memcmp (map.data, want, map.size) == 0,
      "output differs from the engine's forward pass: %g vs %g",
      ((const gfloat *) map.data)[0], want[0]);
  gst_buffer_unmap (out, &map);
}

/* The first element message of that name on the bus (NULL if none). */
static GstStructure *
pop_element_message (GstBus * bus, const gchar * name)
{
  GstMessage *m = tt_gst_pop_named (bus, name);
  GstStructure *s = m ? gst_structure_copy (gst_message_get_structure (m)) :
      NULL;
  if (m)
    gst_message_unref (m);
  return s;
}

static void
random_inputs (gfloat * x, gsize n, guint32 seed)
{
  GRand *r = g_rand_new_with_seed (seed);
  for (gsize i = 0; i < n; i++)
    x[i] = (gfloat) g_rand_double (r);
  g_rand_free (r);
}

static void
check_model_outputs (const gchar * ini_text, const gchar * caps, gsize n_in,
    gsize n_out, guint batch)
{
  gchar *ini = write_tmp ("m.ini", ini_text);
  gchar *bin = g_build_filename (tmp_dir, "m.bin", NULL);
  const guint n = 10;
  gfloat *x = g_new (gfloat, n * n_in);
  make_weights (ini, bin, 11);
  random_inputs (x, n * n_in, 5);
  gfloat *want = engine_predict (ini, bin, batch, x, n);

  GstElement *e = make_predictor (NULL);
  g_object_set (e, "model-config", ini, "model-load-path", bin,
      "batch-size", batch, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, caps);
  for (guint k = 0; k < n; k++) {
    fail_unless_equals_int (gst_harness_push (h, floats_buffer (x + k * n_in,
                n_in, k)), GST_FLOW_OK);
    /* batch 1 answers at once; a larger batch waits until it is full */
    fail_unless_equals_int (gst_harness_buffers_received (h), batch == 1 ?
        k + 1 : (k + 1) / batch * batch);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), n);
  for (guint k = 0; k < n; k++) {
    GstBuffer *out = gst_harness_pull (h);
    check_output (out, want + k * n_out, n_out);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), k * GST_SECOND / 30);
    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (out), k);
    gst_buffer_unref (out);
  }
  guint64 samples;
  g_object_get (e, "samples", &samples, NULL);
  fail_unless_equals_uint64 (samples, n);
  gst_harness_teardown (h);
  gst_object_unref (e);
  g_free (want);
  g_free (x);
  g_free (ini);
  g_free (bin);
}

GST_START_TEST (test_output_equals_engine)
{
  check_model_outputs (dense_ini, DENSE_CAPS, 4, 3, 1);
  check_model_outputs (conv_ini, CONV_CAPS, 36, 3, 1);
}

GST_END_TEST;

GST_START_TEST (test_batched_output_equals_engine)
{
  check_model_outputs (dense_ini, DENSE_CAPS, 4, 3, 4);
  check_model_outputs (conv_ini, CONV_CAPS, 36, 3, 3);
}

GST_END_TEST;

/* input 1:1:128 -> fully_connected 64 relu -> fully_connected 3, batch
 * 32: on 2 threads the first layer's weight is split by rows and its
 * input fed by thread blocks */
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

#define WIDE_CAPS "other/tensors,format=static,num_tensors=1," \
  "dimensions=(string)\"128:1:1:1\",types=(string)\"float32\"," \
  "framerate=(fraction)0/1"

/* threads=2 on the element: its outputs are the engine's on 2 threads bit
 * for bit (a thread count gives the same results whether the pool
 * splits a step or not), and one thread's within rounding (the split
 * dense layer adds its threads' partial products) */
GST_START_TEST (test_threads_output)
{
  gchar *ini = write_tmp ("wide.ini", wide_ini);
  gchar *bin = g_build_filename (tmp_dir, "wide.bin", NULL);
  const guint n = 64, batch = 32;
  gfloat *x = g_new (gfloat, n * 128);
  make_weights (ini, bin, 7);
  random_inputs (x, n * 128, 9);
  gfloat *want = engine_predict_on (ini, bin, batch, x, n, 2);
  gfloat *one = engine_predict_on (ini, bin, batch, x, n, 1);
  gdouble worst = 0;
  for (guint i = 0; i < n * 3; i++) {
    const gdouble d = fabs ((gdouble) want[i] - one[i]);
    worst = MAX (worst, d / (1e-6 + 1e-5 * fabs (one[i])));
  }
  fail_unless (worst <= 1.0, "2 threads against 1: worst %g of 1e-6 + 1e-5 "
      "relative", worst);

  GstElement *e = make_predictor (NULL);
  g_object_set (e, "model-config", ini, "model-load-path", bin,
      "batch-size", batch, "threads", 2, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, WIDE_CAPS);
  for (guint k = 0; k < n; k++)
    fail_unless_equals_int (gst_harness_push (h, floats_buffer (x + k * 128,
                128, k)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), n);
  for (guint k = 0; k < n; k++) {
    GstBuffer *out = gst_harness_pull (h);
    check_output (out, want + k * 3, 3);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
  gst_object_unref (e);
  g_free (want);
  g_free (one);
  g_free (x);
  g_free (ini);
  g_free (bin);
}

GST_END_TEST;

/* The output dimensions are nnstreamer's current form, "3:1" (what
 * tensor_decoder mode=image_labeling takes), whichever form the input
 * dimensions come in: padded to 4 entries, as older nnstreamer wrote
 * them, trimmed, or a bare rank 1. */
GST_START_TEST (test_output_caps)
{
  const gchar *inputs[] = { "4:1:1:1", "4:1", "4" };
  gchar *ini = write_tmp ("m.ini", dense_ini);
  for (guint i = 0; i < G_N_ELEMENTS (inputs); i++) {
    GstElement *e = make_predictor (NULL);
    g_object_set (e, "model-config", ini, NULL);
    GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
    gchar *in = g_strdup_printf ("other/tensors,format=static,num_tensors=1,"
        "dimensions=(string)%s,types=(string)float32,"
        "framerate=(fraction)30/1", inputs[i]);
    gst_harness_set_src_caps_str (h, in);
    gfloat x[4] = { 1, 2, 3, 4 };
    fail_unless (gst_harness_push (h, floats_buffer (x, 4, 0)) == GST_FLOW_OK,
        "input %s refused", inputs[i]);
    GstBuffer *out = gst_harness_pull (h);
    fail_unless_equals_int (gst_buffer_get_size (out), 3 * sizeof (gfloat));
    gst_buffer_unref (out);
    GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
    GstCaps *want = gst_caps_from_string ("other/tensors,format=static,"
        "num_tensors=1,dimensions=(string)3:1,types=(string)float32,"
        "framerate=(fraction)30/1");
    fail_unless (gst_caps_is_equal (caps, want), "input %s: caps %"
        GST_PTR_FORMAT, inputs[i], caps);
    gst_caps_unref (caps);
    gst_caps_unref (want);
    g_free (in);
    gst_harness_teardown (h);
    gst_object_unref (e);
  }
  g_free (ini);
}

GST_END_TEST;

/* Labelled buffers: the accuracy property and the summary at EOS, with
 * one-hot labels or class indexes (uint8, in one memory with the input,
 * or int32 in a memory of its own). */
static void
check_accuracy_on_labels (gint index_bytes)
{
  gchar *ini = write_tmp ("m.ini", dense_ini);
  gchar *bin = g_build_filename (tmp_dir, "m.bin", NULL);
  GstBus *bus;
  const guint n = 12;
  gfloat x[12 * 4];
  make_weights (ini, bin, 3);
  random_inputs (x, n * 4, 9);
  gfloat *y = engine_predict (ini, bin, 1, x, n);
  GstElement *e = make_predictor (&bus);
  g_object_set (e, "model-config", ini, "model-load-path", bin, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, index_bytes == 0 ? DENSE_LABEL_CAPS :
      index_bytes == 1 ? DENSE_INDEX_CAPS ("uint8") :
      DENSE_INDEX_CAPS ("int32"));
  guint correct = 0;
  for (guint k = 0; k < n; k++) {
    /* label: the predicted class for even k, another for odd k */
    guint best = 0;
    for (guint c = 1; c < 3; c++)
      best = y[k * 3 + c] > y[k * 3 + best] ? c : best;
    guint label = k % 2 ? (best + 1) % 3 : best;
    correct += label == best;
    gfloat sample[7];
    memcpy (sample, x + k * 4, sizeof (gfloat) * 4);
    for (guint c = 0; c < 3; c++)
      sample[4 + c] = c == label;
    GstBuffer *in;
    if (index_bytes == 0) {
      in = floats_buffer (sample, 7, k);
    } else if (index_bytes == 1) {
      guint8 one[17];
      memcpy (one, sample, 16);
      one[16] = (guint8) label;
      in = gst_buffer_new_memdup (one, sizeof one);
    } else {
      const gint32 l = (gint32) label;
      gpointer copy = g_memdup2 (&l, sizeof l);
      in = floats_buffer (sample, 4, k);
      gst_buffer_append_memory (in, gst_memory_new_wrapped (0, copy,
              sizeof l, 0, sizeof l, copy, g_free));
    }
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull (h);
    check_output (out, y + k * 3, 3);   /* the label is not an input */
    gst_buffer_unref (out);
  }
  gdouble accuracy;
  g_object_get (e, "accuracy", &accuracy, NULL);
  fail_unless (fabs (accuracy - (gdouble) correct / n) < 1e-12,
      "accuracy %g, want %g", accuracy, (gdouble) correct / n);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  GstStructure *s = pop_element_message (bus, "tensor-predictor-summary");
  fail_unless (s != NULL);
  guint64 got_samples, got_correct;
  fail_unless (gst_structure_get_uint64 (s, "samples", &got_samples));
  fail_unless (gst_structure_get_uint64 (s, "correct", &got_correct));
  fail_unless_equals_uint64 (got_samples, n);
  fail_unless_equals_uint64 (got_correct, correct);
  gst_structure_free (s);
  gst_harness_teardown (h);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (y);
  g_free (ini);
  g_free (bin);
}

GST_START_TEST (test_accuracy_on_labels)
{
  check_accuracy_on_labels (0);
  check_accuracy_on_labels (1);
  check_accuracy_on_labels (4);

  /* an index that is no class: an error naming the sample */
  gchar *ini = write_tmp ("m.ini", dense_ini);
  gchar *bin = g_build_filename (tmp_dir, "m.bin", NULL);
  GstBus *bus;
  make_weights (ini, bin, 3);
  GstElement *e = make_predictor (&bus);
  g_object_set (e, "model-config", ini, "model-load-path", bin, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, DENSE_INDEX_CAPS ("uint8"));
  guint8 one[17] = { 0 };
  one[16] = 3;
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_memdup (one,
              sizeof one)), GST_FLOW_ERROR);
  gchar *msg = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "Sample 0: the label 3 (uint8) is not a class "
          "index: the model has 3 classes"), "%s", msg);
  g_free (msg);
  gst_harness_teardown (h);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (ini);
  g_free (bin);
}

GST_END_TEST;

GST_START_TEST (test_text_output)
{
  gchar *ini = write_tmp ("m.ini", dense_ini);
  gchar *bin = g_build_filename (tmp_dir, "m.bin", NULL);
  gchar *labels = write_tmp ("labels.txt", "ball\nsnow\npinwheel\n");
  gfloat x[4] = { 0.1f, 0.7f, 0.3f, 0.9f };
  make_weights (ini, bin, 5);
  gfloat *y = engine_predict (ini, bin, 1, x, 1);
  guint best = 0;
  for (guint c = 1; c < 3; c++)
    best = y[c] > y[best] ? c : best;
  static const gchar *names[] = { "ball", "snow", "pinwheel" };
  gchar *want = g_strdup_printf ("%s (%.0f%%)", names[best], 100.0 * y[best]);

  GstElement *e = make_predictor (NULL);
  g_object_set (e, "model-config", ini, "model-load-path", bin, "labels",
      labels, NULL);
  gst_util_set_object_arg (G_OBJECT (e), "output", "text");
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, DENSE_CAPS);
  fail_unless_equals_int (gst_harness_push (h, floats_buffer (x, 4, 0)),
      GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull (h);
  GstMapInfo map;
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  gchar *text = g_strndup ((const gchar *) map.data, map.size);
  fail_unless_equals_string (text, want);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (gst_structure_has_name (gst_caps_get_structure (caps, 0),
          "text/x-raw"));
  gst_caps_unref (caps);
  gst_harness_teardown (h);
  gst_object_unref (e);
  g_free (text);
  g_free (want);
  g_free (y);
  g_free (ini);
  g_free (bin);
  g_free (labels);
}

GST_END_TEST;

/* The inference pool, posted and readable, is below the training pool. */
GST_START_TEST (test_pool_smaller_than_training)
{
  static const gchar *inis[] = { NULL, NULL };
  inis[0] = dense_ini;
  inis[1] = conv_ini;
  for (guint i = 0; i < G_N_ELEMENTS (inis); i++) {
    gchar *ini = write_tmp ("m.ini", inis[i]);
    tt_error err;
    tt_model *m = tt_model_load_ini (ini, &err);
    fail_unless (m && tt_model_compile (m, &err) == TT_OK);
    tt_memory_info train;
    tt_model_memory_info (m, &train);
    tt_model_free (m);

    GstBus *bus;
    GstElement *e = make_predictor (&bus);
    g_object_set (e, "model-config", ini, "batch-size", 4, NULL);
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
        GST_STATE_CHANGE_SUCCESS);
    GstStructure *s = pop_element_message (bus, "tensor-predictor-plan");
    fail_unless (s != NULL);
    guint64 posted, prop;
    fail_unless (gst_structure_get_uint64 (s, "pool-bytes", &posted));
    g_object_get (e, "pool-bytes", &prop, NULL);
    fail_unless_equals_uint64 (posted, prop);
    fail_unless (posted > 0 && posted < train.pool_bytes,
        "inference pool %" G_GUINT64_FORMAT ", training %" G_GSIZE_FORMAT,
        posted, train.pool_bytes);
    GST_INFO ("model %u: inference pool %" G_GUINT64_FORMAT ", training %"
        G_GSIZE_FORMAT, i, posted, train.pool_bytes);
    gst_structure_free (s);
    gst_element_set_state (e, GST_STATE_NULL);
    gst_object_unref (e);
    gst_bus_set_flushing (bus, TRUE);
    gst_object_unref (bus);
    g_free (ini);
  }
}

GST_END_TEST;

/* Runs one sample through a predictor configured by the two paths and
 * checks the output against want; returns whether the plan came stored. */
static gboolean
predict_one (const gchar * config, const gchar * load, const gfloat * x,
    const gfloat * want)
{
  GstBus *bus;
  GstElement *e = make_predictor (&bus);
  g_object_set (e, "model-config", config, "model-load-path", load, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, DENSE_CAPS);
  fail_unless_equals_int (gst_harness_push (h, floats_buffer (x, 4, 0)),
      GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull (h);
  check_output (out, want, 3);
  gst_buffer_unref (out);
  GstStructure *s = pop_element_message (bus, "tensor-predictor-plan");
  gboolean stored = FALSE;
  fail_unless (s && gst_structure_get_boolean (s, "plan-loaded", &stored));
  gst_structure_free (s);
  gst_harness_teardown (h);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  return stored;
}

/* The same weights through a bundle, an optimized INI with an inference
 * plan (used as stored) and one with a training plan (planned afresh). */
GST_START_TEST (test_model_sources)
{
  gchar *ini = write_tmp ("m.ini", dense_ini);
  gchar *bin = g_build_filename (tmp_dir, "m.bin", NULL);
  gchar *ttb = g_build_filename (tmp_dir, "m.ttb", NULL);
  gchar *inf = g_build_filename (tmp_dir, "m.inference.ini", NULL);
  gchar *trn = g_build_filename (tmp_dir, "m.training.ini", NULL);
  gfloat x[4] = { 0.3f, 0.1f, 0.9f, 0.5f };
  tt_error err;
  make_weights (ini, bin, 21);
  gfloat *want = engine_predict (ini, bin, 1, x, 1);
  for (int mode = 0; mode < 2; mode++) {
    tt_model *m = tt_model_load_ini (ini, &err);
    fail_unless (m != NULL);
    fail_unless (tt_model_set_batch_size (m, 1, &err) == TT_OK &&
        tt_model_set_inference (m, mode == 0, &err) == TT_OK &&
        tt_model_compile (m, &err) == TT_OK, "%s", err.message);
    fail_unless (tt_model_load_bin (m, bin, &err) == TT_OK, "%s", err.message);
    fail_unless (tt_model_save_plan_ini (m, mode == 0 ? inf : trn,
            &err) == TT_OK, "%s", err.message);
    if (mode == 1)
      fail_unless (tt_model_save (m, ttb, &err) == TT_OK, "%s", err.message);
    tt_model_free (m);
  }
  fail_unless (predict_one (inf, bin, x, want));
  fail_if (predict_one (trn, bin, x, want));
  predict_one (ttb, NULL, x, want);
  g_free (want);
  g_free (ini);
  g_free (bin);
  g_free (ttb);
  g_free (inf);
  g_free (trn);
}

GST_END_TEST;

/* trainer=NAME alone: the model comes from that trainer's model-config. */
GST_START_TEST (test_model_from_trainer)
{
  gchar *ini = write_tmp ("m.ini", conv_ini);
  GstElement *pipeline = gst_pipeline_new (NULL);
  GstElement *t = gst_element_factory_make ("tensor_trainer", "teacher");
  GstElement *p = make_predictor (NULL);
  g_object_set (t, "model-config", ini, "num-training-samples", 4, NULL);
  g_object_set (p, "trainer", "teacher", NULL);
  gst_bin_add_many (GST_BIN (pipeline), t, p, NULL);
  fail_if (gst_element_set_state (pipeline, GST_STATE_PAUSED) ==
      GST_STATE_CHANGE_FAILURE);
  gchar *config;
  guint64 pool;
  g_object_get (p, "model-config", &config, "pool-bytes", &pool, NULL);
  fail_unless (config == NULL); /* the property stays unset */
  fail_unless (pool > 0, "the predictor did not load the trainer's model");
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  g_free (ini);
}

GST_END_TEST;

/* Replaces path atomically by the BIN of a model with another seed. */
static void
replace_weights (const gchar * ini, const gchar * path, guint64 seed)
{
  gchar *tmp = g_strconcat (path, ".new.bin", NULL);
  make_weights (ini, tmp, seed);
  fail_unless (g_rename (tmp, path) == 0);
  g_free (tmp);
}

GST_START_TEST (test_reload_replaced_file)
{
  gchar *ini = write_tmp ("m.ini", dense_ini);
  gchar *bin = g_build_filename (tmp_dir, "live.bin", NULL);
  gchar *other = g_build_filename (tmp_dir, "other.bin", NULL);
  gfloat x[4] = { 0.2f, 0.4f, 0.6f, 0.8f };
  GstBus *bus;
  make_weights (ini, bin, 1);
  gfloat *y1 = engine_predict (ini, bin, 1, x, 1);

  GstElement *e = make_predictor (&bus);
  g_object_set (e, "model-config", ini, "model-load-path", bin, "reload",
      TRUE, "reload-interval", 0, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, DENSE_CAPS);
  fail_unless_equals_int (gst_harness_push (h, floats_buffer (x, 4, 0)),
      GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull (h);
  check_output (out, y1, 3);
  gst_buffer_unref (out);

  /* another process saves new weights: write, rename */
  replace_weights (ini, bin, 2);
  gfloat *y2 = engine_predict (ini, bin, 1, x, 1);
  fail_unless (memcmp (y1, y2, sizeof (gfloat) * 3) != 0);
  fail_unless_equals_int (gst_harness_push (h, floats_buffer (x, 4, 1)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  check_output (out, y2, 3);
  gst_buffer_unref (out);
  guint64 version;
  g_object_get (e, "weights-version", &version, NULL);
  fail_unless_equals_uint64 (version, 1);
  GstStructure *s = pop_element_message (bus, "tensor-predictor-weights");
  fail_unless (s != NULL);
  fail_unless_equals_string (gst_structure_get_string (s, "source"), "file");
  gst_structure_free (s);

  /* a file of another model: a warning, the weights stay */
  fail_unless (g_file_set_contents (other, "not a BIN of this model", -1,
          NULL));
  fail_unless (g_rename (other, bin) == 0);
  fail_unless_equals_int (gst_harness_push (h, floats_buffer (x, 4, 2)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  check_output (out, y2, 3);
  gst_buffer_unref (out);
  gchar *warning = tt_gst_pop_text (bus, GST_MESSAGE_WARNING);
  fail_unless (strstr (warning, "Kept the current weights") &&
      strstr (warning, "live.bin") && strstr (warning, "size"),
      "warning: %s", warning);
  g_free (warning);

  gst_harness_teardown (h);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (y1);
  g_free (y2);
  g_free (ini);
  g_free (bin);
  g_free (other);
}

GST_END_TEST;

/* Starting fails with an error whose text contains want. */
static void
check_start_error (const gchar * config, const gchar * load,
    const gchar * want1, const gchar * want2)
{
  GstBus *bus;
  GstElement *e = make_predictor (&bus);
  g_object_set (e, "model-config", config, "model-load-path", load, NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (text, want1) && (!want2 || strstr (text, want2)),
      "error: \"%s\", expected \"%s\" and \"%s\"", text, want1,
      want2 ? want2 : "");
  g_free (text);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
}

GST_START_TEST (test_bad_model_files)
{
  gchar *ini = write_tmp ("m.ini", dense_ini);
  gchar *bad = write_tmp ("bad.ini", "[Model]\nbatch_size = 2\n[in]\n"
      "type = input\ninput_shape = 1:1:4\n[out]\ntype = fully_connected\n"
      "units = 3\n");
  gchar *short_bin = write_tmp ("short.bin", "0123456789");
  gchar *missing = g_build_filename (tmp_dir, "missing.ini", NULL);
  check_start_error (NULL, NULL, "No model-config", NULL);
  {
    /* a trainer to take the model from must be in the same pipeline */
    GstBus *bus;
    GstElement *e = make_predictor (&bus);
    g_object_set (e, "trainer", "nowhere", NULL);
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
        GST_STATE_CHANGE_FAILURE);
    gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
    fail_unless (strstr (text, "no tensor_trainer called \"nowhere\""),
        "error: %s", text);
    g_free (text);
    gst_element_set_state (e, GST_STATE_NULL);
    gst_object_unref (e);
    gst_bus_set_flushing (bus, TRUE);
    gst_object_unref (bus);
  }
  check_start_error (missing, NULL, "missing.ini", NULL);
  check_start_error (bad, NULL, "bad.ini", "unit");
  check_start_error (ini, short_bin, "short.bin", "size");
  g_free (ini);
  g_free (bad);
  g_free (short_bin);
  g_free (missing);
}

GST_END_TEST;

/* Pushes caps and a buffer and expects an error naming why. */
static void
check_push_error (const gchar * caps, GstBuffer * b, const gchar * want)
{
  gchar *ini = write_tmp ("m.ini", dense_ini);
  GstBus *bus;
  GstElement *e = make_predictor (&bus);
  g_object_set (e, "model-config", ini, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, caps);
  fail_if (gst_harness_push (h, b) == GST_FLOW_OK);
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (text, want), "error: \"%s\", expected \"%s\"", text,
      want);
  g_free (text);
  gst_harness_teardown (h);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (ini);
}

/* The same with a buffer of that many zero bytes. */
static void
check_stream_error (const gchar * caps, gsize bytes, const gchar * want)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, bytes, NULL);
  gst_buffer_memset (b, 0, 0, bytes);
  check_push_error (caps, b, want);
}

GST_START_TEST (test_bad_caps_and_buffers)
{
  check_stream_error ("other/tensors,format=static,num_tensors=1,"
      "dimensions=(string)5:1:1:1,types=(string)float32", 20,
      "dimensions 5:1:1:1, expected 4:1:1:1");
  check_stream_error ("other/tensors,format=static,num_tensors=3,"
      "dimensions=(string)\"4:1:1:1,3:1:1:1,1:1:1:1\","
      "types=(string)\"float32,float32,float32\"", 32, "3 tensors received");
  check_stream_error ("other/tensors,format=static,num_tensors=2,"
      "dimensions=(string)\"4:1:1:1,3:1:1:1\","
      "types=(string)\"float32,uint8\"", 19, "label) has type uint8");
  check_stream_error ("other/tensors,format=static,num_tensors=1,"
      "dimensions=(string)4:1:1:1,types=(string)int16", 8, "has type int16");
  check_stream_error ("other/tensors,format=flexible", 8,
      "hold no header for flexible tensor 0");
  check_stream_error (DENSE_CAPS, 12, "Wrong buffer size");
}

GST_END_TEST;

/* ---- flexible tensors -------------------------------------------------- */

#define FLEX_CAPS "other/tensors,format=flexible,framerate=(fraction)0/1"

/* Sample k of test_flexible_inputs: input x (integers, so uint8 says the
 * same) as uint8 for odd k, float32 for even k; a one-hot label of class
 * label when label >= 0. */
static GstBuffer *
flex_sample (const gfloat * x, guint k, gint label)
{
  const guint32 in_dims[4] = { 4, 1, 1, 1 }, lb_dims[4] = { 3, 1, 1, 1 };
  GstBuffer *b = gst_buffer_new ();
  guint8 xu[4];
  for (guint i = 0; i < 4; i++)
    xu[i] = (guint8) x[i];
  if (k % 2)
    gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_UINT8, in_dims,
            4, xu, sizeof xu));
  else
    gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_FLOAT32, in_dims,
            4, x, 4 * sizeof (gfloat)));
  if (label >= 0 && k % 2) {
    /* a class index (int32) */
    const guint32 index_dims[4] = { 1, 1, 1, 1 };
    const gint32 index = label;
    gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_INT32,
            index_dims, 4, &index, sizeof index));
  } else if (label >= 0) {
    gfloat y[3] = { 0, 0, 0 };
    y[label] = 1;
    gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_FLOAT32, lb_dims,
            1, y, sizeof y));
  }
  GST_BUFFER_PTS (b) = k * GST_SECOND;
  return b;
}

/* A flexible stream whose input type and label come and go from buffer to
 * buffer predicts what the engine does on the same values, scores only the
 * labelled samples, and keeps every buffer's timestamp; batch-size 1 is
 * bit-identical to the engine, batch-size 4 (batches cut where the
 * samples change form) within float rounding. */
GST_START_TEST (test_flexible_inputs)
{
  gchar *ini = write_tmp ("m.ini", dense_ini);
  gchar *bin = g_build_filename (tmp_dir, "m.bin", NULL);
  const guint n = 10;
  gfloat x[10 * 4];
  make_weights (ini, bin, 5);
  for (guint i = 0; i < n * 4; i++)
    x[i] = (gfloat) ((i * 37 + 11) % 9);
  gfloat *y = engine_predict (ini, bin, 1, x, n);
  for (guint batch = 1; batch <= 4; batch += 3) {
    GstBus *bus;
    GstElement *e = make_predictor (&bus);
    g_object_set (e, "model-config", ini, "model-load-path", bin,
        "batch-size", batch, NULL);
    GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
    gst_harness_set_src_caps_str (h, FLEX_CAPS);
    guint labelled = 0, correct = 0;
    for (guint k = 0; k < n; k++) {
      /* labels on k % 3 == 0: the predicted class, except at k = 3 */
      gint label = -1;
      if (k % 3 == 0) {
        guint best = 0;
        for (guint c = 1; c < 3; c++)
          best = y[k * 3 + c] > y[k * 3 + best] ? c : best;
        label = (gint) (k == 3 ? (best + 1) % 3 : best);
        labelled++;
        correct += k != 3;
      }
      fail_unless_equals_int (gst_harness_push (h, flex_sample (x + k * 4,
                  k, label)), GST_FLOW_OK);
    }
    fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
    for (guint k = 0; k < n; k++) {
      GstBuffer *out = gst_harness_try_pull (h);
      fail_unless (out != NULL, "batch %u: output %u missing", batch, k);
      fail_unless_equals_uint64 (GST_BUFFER_PTS (out), k * GST_SECOND);
      if (batch == 1) {
        check_output (out, y + k * 3, 3);
      } else {
        GstMapInfo map;
        fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
        fail_unless_equals_uint64 (map.size, 3 * sizeof (gfloat));
        for (guint c = 0; c < 3; c++) {
          const gfloat got = ((const gfloat *) map.data)[c];
          fail_unless (fabsf (got - y[k * 3 + c]) <= 1e-5f,
              "batch %u, sample %u, class %u: %g, engine %g", batch, k, c,
              got, y[k * 3 + c]);
        }
        gst_buffer_unmap (out, &map);
      }
      gst_buffer_unref (out);
    }
    guint64 samples;
    gdouble accuracy;
    g_object_get (e, "samples", &samples, "accuracy", &accuracy, NULL);
    fail_unless_equals_uint64 (samples, n);
    fail_unless (fabs (accuracy - (gdouble) correct / labelled) < 1e-12,
        "batch %u: accuracy %g, want %u/%u", batch, accuracy, correct,
        labelled);
    gchar *err = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
    fail_unless_equals_string (err, "");
    g_free (err);
    gst_harness_teardown (h);
    gst_object_unref (e);
    gst_bus_set_flushing (bus, TRUE);
    gst_object_unref (bus);
  }
  g_free (y);
  g_free (ini);
  g_free (bin);
}

GST_END_TEST;

/* A flexible buffer that does not fit: refused with what is wrong. */
static void
check_flexible_error (GstBuffer * b, const gchar * want)
{
  check_push_error (FLEX_CAPS, b, want);
}

GST_START_TEST (test_flexible_refused)
{
  const gfloat x[4] = { 1, 2, 3, 4 };
  const guint32 dims5[4] = { 5, 1, 1, 1 }, dims3[4] = { 3, 1, 1, 1 };
  gfloat five[5] = { 0 };
  guint8 three[3] = { 0 };
  /* an input of another shape */
  GstBuffer *b = gst_buffer_new ();
  gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_FLOAT32, dims5, 1,
          five, sizeof five));
  check_flexible_error (b, "Flexible tensor does not fit the model: tensor 0 "
      "(input) has dimensions 5:1:1:1");
  /* a uint8 label */
  b = flex_sample (x, 0, -1);
  gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_UINT8, dims3, 1,
          three, sizeof three));
  check_flexible_error (b, "label) has type uint8");
  /* a third tensor */
  b = flex_sample (x, 0, 1);
  gst_buffer_append_memory (b, tt_gst_flex_memory (TT_NNS_FLOAT32, dims3, 1,
          five, 3 * sizeof (gfloat)));
  check_flexible_error (b, "but 2 flexible tensors (at most 2) make");
  /* data cut short */
  b = flex_sample (x, 0, -1);
  gst_memory_resize (gst_buffer_peek_memory (b, 0), 0, 128 + 10);
  check_flexible_error (b, "announces 16 bytes of data, 10 are left");
}

GST_END_TEST;

/* ---- live hand-off under load ----------------------------------------- */

typedef struct
{
  GstHarness *h;
  guint samples;
  const gfloat *labels;
  volatile gint done;
} TrainerRun;

static gpointer
train_thread (gpointer data)
{
  TrainerRun *t = data;
  gfloat *sample = g_new (gfloat, STAMP_N + 1);
  for (guint i = 0; i < STAMP_N; i++)
    sample[i] = 1.0f;
  for (guint k = 0; k < t->samples; k++) {
    sample[STAMP_N] = t->labels[k];
    fail_unless_equals_int (gst_harness_push (t->h, floats_buffer (sample,
                STAMP_N + 1, k)), GST_FLOW_OK);
    /* a camera's pace rather than flat out: the predictor, running flat
     * out, then sees most of the weight sets even on a busy machine */
    if (k % 4 == 3)
      g_usleep (100);
  }
  g_free (sample);
  g_atomic_int_set (&t->done, 1);
  return NULL;
}

static gint
float_bits_compare (gconstpointer a, gconstpointer b)
{
  guint32 x, y;
  memcpy (&x, a, 4);
  memcpy (&y, b, 4);
  return x < y ? -1 : x > y;
}

GST_START_TEST (test_live_handoff_never_torn)
{
  const guint steps = 3000;
  gchar *ini = write_tmp ("stamp.ini", stamp_ini);
  gfloat *labels = g_new (gfloat, steps);
  GRand *r = g_rand_new_with_seed (17);
  for (guint k = 0; k < steps; k++)
    labels[k] = (gfloat) g_rand_double_range (r, -4, 4);
  g_rand_free (r);

  /* every whole weight set the trainer can publish, as the predictor's
   * output on ones: the engine trained step by step, each set handed to
   * an inference model as the element does */
  tt_error err;
  tt_model *train = tt_model_load_ini (ini, &err);
  tt_model *inf = tt_model_load_ini (ini, &err);
  fail_unless (train && inf);
  fail_unless (tt_model_compile (train, &err) == TT_OK);
  fail_unless (tt_model_set_inference (inf, true, &err) == TT_OK &&
      tt_model_compile (inf, &err) == TT_OK);
  const gsize nw = tt_model_weight_floats (train);
  gfloat *w = g_new (gfloat, nw), *ones = g_new (gfloat, STAMP_N), valid[3001];
  for (guint i = 0; i < STAMP_N; i++)
    ones[i] = 1.0f;
  const void *in[1] = { ones };
  for (guint k = 0; k <= steps; k++) {
    if (k > 0)
      fail_unless (tt_model_train_batch (train, 1, in, NULL, &labels[k - 1],
              NULL, &err) == TT_OK, "%s", err.message);
    fail_unless (tt_model_export_weights (train, w, nw, &err) == TT_OK);
    gsize unequal = 0;
    for (gsize i = 1; i < nw; i++)
      unequal += w[i] != w[0];
    fail_unless (unequal == 0, "weights of step %u are not all equal", k);
    fail_unless (tt_model_import_weights (inf, w, nw, &err) == TT_OK);
    fail_unless (tt_model_eval_batch (inf, 1, in, NULL, NULL, NULL,
            &err) == TT_OK);
    valid[k] = tt_model_output (inf)[0];
  }
  tt_model_free (train);
  tt_model_free (inf);
  gfloat *sorted = g_memdup2 (valid, sizeof valid);
  qsort (sorted, steps + 1, sizeof *sorted, float_bits_compare);

  /* the predictor subscribes first, so the trainer publishes every batch */
  GstElement *pe = make_predictor (NULL);
  g_object_set (pe, "model-config", ini, "trainer", "stamp-trainer",
      "post-messages", FALSE, NULL);
  GstHarness *ph = gst_harness_new_with_element (pe, "sink", "src");
  gst_harness_set_src_caps_str (ph, STAMP_CAPS);

  GstElement *te = gst_element_factory_make ("tensor_trainer",
      "stamp-trainer");
  g_object_set (te, "model-config", ini, "num-training-samples", steps,
      "epochs", 1, "publish-interval", 1, "post-messages", FALSE, NULL);
  GstHarness *th = gst_harness_new_with_element (te, "sink", "src");
  gst_harness_set_src_caps_str (th, STAMP_TRAIN_CAPS);

  TrainerRun run = { th, steps, labels, 0 };
  GThread *thread = g_thread_new ("trainer", train_thread, &run);
  guint predictions = 0, torn = 0, backwards = 0, switches = 0;
  gint last_index = 0;
  gboolean trainer_done = FALSE;
  /* predict while the trainer trains, and a little after */
  for (guint tail = 0; tail < 50; tail += trainer_done) {
    trainer_done = g_atomic_int_get (&run.done);
    fail_unless_equals_int (gst_harness_push (ph, floats_buffer (ones,
                STAMP_N, predictions)), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull (ph);
    gfloat y;
    gst_buffer_extract (out, 0, &y, sizeof y);
    gst_buffer_unref (out);
    predictions++;
    if (!bsearch (&y, sorted, steps + 1, sizeof y, float_bits_compare)) {
      torn++;
      continue;
    }
    /* the step of this weight set: the first one at or after the last */
    gint index = -1;
    for (guint k = (guint) last_index; k <= steps && index < 0; k++)
      if (float_bits_compare (&valid[k], &y) == 0)
        index = (gint) k;
    if (index < 0) {
      backwards++;
      continue;
    }
    switches += index != last_index;
    last_index = index;
  }
  g_thread_join (thread);
  g_print ("hand-off: %u predictions, %u weight switches, last step %d\n",
      predictions, switches, last_index);
  fail_unless_equals_int (torn, 0);
  fail_unless_equals_int (backwards, 0);
  /* the last predictions used the final weights */
  fail_unless_equals_int (last_index, steps);
  fail_unless (switches >= 50, "only %u weight switches seen in %u "
      "predictions", switches, predictions);
  guint64 version;
  g_object_get (pe, "weights-version", &version, NULL);
  fail_unless (version >= steps, "weights version %" G_GUINT64_FORMAT, version);

  gst_harness_teardown (th);
  gst_harness_teardown (ph);
  gst_object_unref (te);
  gst_object_unref (pe);
  g_free (sorted);
  g_free (ones);
  g_free (w);
  g_free (labels);
  g_free (ini);
}

GST_END_TEST;

GST_START_TEST (test_handoff_other_model_refused)
{
  gchar *dense = write_tmp ("dense.ini", dense_ini);
  gchar *conv = write_tmp ("conv.ini", conv_ini);
  GstBus *bus;
  GstElement *pe = make_predictor (&bus);
  g_object_set (pe, "model-config", dense, "trainer", "conv-trainer", NULL);
  GstHarness *ph = gst_harness_new_with_element (pe, "sink", "src");
  gst_harness_set_src_caps_str (ph, DENSE_CAPS);

  GstElement *te = gst_element_factory_make ("tensor_trainer",
      "conv-trainer");
  g_object_set (te, "model-config", conv, "num-training-samples", 4,
      "epochs", 1, "post-messages", FALSE, NULL);
  GstHarness *th = gst_harness_new_with_element (te, "sink", "src");
  gst_harness_set_src_caps_str (th, "other/tensors,format=static,"
      "num_tensors=2,dimensions=(string)\"6:6:1:1,3:1:1:1\","
      "types=(string)\"float32,float32\",framerate=(fraction)0/1");
  gfloat sample[39] = { 0 };
  sample[36] = 1;
  for (guint k = 0; k < 4; k++)
    fail_unless_equals_int (gst_harness_push (th, floats_buffer (sample, 39,
                k)), GST_FLOW_OK);
  gfloat x[4] = { 1, 2, 3, 4 };
  fail_unless_equals_int (gst_harness_push (ph, floats_buffer (x, 4, 0)),
      GST_FLOW_ERROR);
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (text, "conv-trainer") &&
      strstr (text, "another model"), "error: %s", text);
  g_free (text);
  gst_harness_teardown (th);
  gst_harness_teardown (ph);
  gst_object_unref (te);
  gst_object_unref (pe);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (dense);
  g_free (conv);
}

GST_END_TEST;

/* Two pipelines of one process, each with a tensor_trainer named
 * "trainer" (names are unique within a bin only) and a predictor following
 * it: each predictor takes its own pipeline's weights. The two trainers
 * learn opposite labels, so the two weight sets differ. */
GST_START_TEST (test_two_pipelines_one_trainer_name)
{
  gchar *ini = write_tmp ("m.ini", dense_ini);
  GstElement *pipeline[2], *trainer[2], *predictor[2];
  GstHarness *th[2], *ph[2];
  gchar *saved[2];
  gfloat x[4] = { 0.3f, 0.6f, 0.9f, 0.2f };
  gfloat got[2][3];

  for (guint i = 0; i < 2; i++) {
    pipeline[i] = gst_pipeline_new (NULL);
    trainer[i] = gst_element_factory_make ("tensor_trainer", "trainer");
    predictor[i] = make_predictor (NULL);
    saved[i] = g_build_filename (tmp_dir, i ? "b.bin" : "a.bin", NULL);
    g_object_set (trainer[i], "model-config", ini, "num-training-samples", 8,
        "epochs", 1, "model-save-path", saved[i], "post-messages", FALSE, NULL);
    g_object_set (predictor[i], "model-config", ini, "trainer", "trainer",
        "post-messages", FALSE, NULL);
    fail_unless (gst_bin_add (GST_BIN (pipeline[i]), trainer[i]));
    fail_unless (gst_bin_add (GST_BIN (pipeline[i]), predictor[i]));
    /* the predictors listen before the trainers publish */
    ph[i] = gst_harness_new_with_element (predictor[i], "sink", "src");
    gst_harness_set_src_caps_str (ph[i], DENSE_CAPS);
    th[i] = gst_harness_new_with_element (trainer[i], "sink", "src");
    gst_harness_set_src_caps_str (th[i], DENSE_LABEL_CAPS);
  }
  /* pipeline 0 learns class 0 for everything, pipeline 1 class 2 */
  for (guint i = 0; i < 2; i++)
    for (guint k = 0; k < 8; k++) {
      gfloat sample[7] = { 0 };
      random_inputs (sample, 4, 100 + k);
      sample[4 + (i ? 2 : 0)] = 1;
      fail_unless_equals_int (gst_harness_push (th[i], floats_buffer (sample,
                  7, k)), GST_FLOW_OK);
    }
  for (guint i = 0; i < 2; i++) {
    fail_unless (g_file_test (saved[i], G_FILE_TEST_EXISTS));
    fail_unless_equals_int (gst_harness_push (ph[i], floats_buffer (x, 4,
                0)), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull (ph[i]);
    fail_unless_equals_uint64 (gst_buffer_extract (out, 0, got[i],
            sizeof got[i]), sizeof got[i]);
    gst_buffer_unref (out);
    guint64 version;
    g_object_get (predictor[i], "weights-version", &version, NULL);
    fail_unless (version >= 1, "predictor %u took no weights", i);
    /* the weights its trainer ended with (and saved) */
    gfloat *want = engine_predict (ini, saved[i], 1, x, 1);
    for (guint c = 0; c < 3; c++)
      fail_unless (fabsf (got[i][c] - want[c]) <= 1e-5f, "predictor %u "
          "class %u: %g, its trainer's model gives %g", i, c, got[i][c],
          want[c]);
    g_free (want);
  }
  fail_unless (got[0][0] > got[0][2] && got[1][2] > got[1][0],
      "the predictors did not learn their own labels: %g %g / %g %g",
      got[0][0], got[0][2], got[1][0], got[1][2]);

  for (guint i = 0; i < 2; i++) {
    gst_harness_teardown (th[i]);
    gst_harness_teardown (ph[i]);
    gst_object_unref (pipeline[i]);
    g_free (saved[i]);
  }
  g_free (ini);
}

GST_END_TEST;

/* LoRA adapters: the predictor's outputs of an adapted model are the
 * engine's, and its merged twin's (tensor-trainer lora --merge) within
 * 1e-6 (another order of the same sums, float32 rounding) */
static gfloat *
predictor_outputs (const gchar * ini, const gchar * bin, const gfloat * x,
    guint n, gsize n_in, gsize n_out)
{
  GstElement *e = make_predictor (NULL);
  g_object_set (e, "model-config", ini, "model-load-path", bin,
      "batch-size", 1, NULL);
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");
  gst_harness_set_src_caps_str (h, DENSE_CAPS);
  gfloat *y = g_new (gfloat, n * n_out);
  for (guint k = 0; k < n; k++) {
    fail_unless_equals_int (gst_harness_push (h, floats_buffer (x + k * n_in,
                n_in, k)), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull (h);
    GstMapInfo map;
    fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
    fail_unless_equals_uint64 (map.size, n_out * sizeof (gfloat));
    memcpy (y + k * n_out, map.data, map.size);
    gst_buffer_unmap (out, &map);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
  gst_object_unref (e);
  return y;
}

GST_START_TEST (test_lora_merged_same_outputs)
{
  tt_error err;
  gchar *base = write_tmp ("base.ini", dense_ini);
  gchar *base_bin = g_build_filename (tmp_dir, "base.bin", NULL);
  gchar *lora = g_build_filename (tmp_dir, "lora.ini", NULL);
  gchar *trained = g_build_filename (tmp_dir, "trained.bin", NULL);
  gchar *merged = g_build_filename (tmp_dir, "merged.ini", NULL);
  gchar *merged_bin = g_build_filename (tmp_dir, "merged.bin", NULL);
  make_weights (base, base_bin, 3);
  fail_unless (tt_lora_add (base, base_bin, 2, 4, NULL, 1, lora, &err) ==
      TT_OK, "%s", err.message);
  /* two steps from fresh weights: loraA no longer zeros */
  make_weights (lora, trained, 7);
  fail_unless (tt_lora_merge (lora, trained, merged, &err) == TT_OK, "%s",
      err.message);
  const guint n = 6;
  gfloat x[6 * 4];
  random_inputs (x, G_N_ELEMENTS (x), 9);
  gfloat *want = engine_predict (lora, trained, 1, x, n);
  gfloat *a = predictor_outputs (lora, trained, x, n, 4, 3);
  gfloat *b = predictor_outputs (merged, merged_bin, x, n, 4, 3);
  fail_unless (memcmp (a, want, n * 3 * sizeof *a) == 0,
      "the adapted model's outputs are the engine's");
  for (guint i = 0; i < n * 3; i++)
    fail_unless (fabsf (a[i] - b[i]) <= 1e-6f, "output %u: adapted %g, "
        "merged %g", i, a[i], b[i]);
  /* the merge moved the weight (4 x 3 floats, first in both BINs) */
  gchar *wt = NULL, *wm = NULL;
  gsize lt = 0, lm = 0;
  fail_unless (g_file_get_contents (trained, &wt, &lt, NULL) &&
      g_file_get_contents (merged_bin, &wm, &lm, NULL) && lt >= 48 &&
      lm >= 48 && memcmp (wt, wm, 48) != 0);
  g_free (wt);
  g_free (wm);
  g_free (want);
  g_free (a);
  g_free (b);
  g_free (base);
  g_free (base_bin);
  g_free (lora);
  g_free (trained);
  g_free (merged);
  g_free (merged_bin);
}

GST_END_TEST;

static void
make_tmp_dir (void)
{
  tmp_dir = g_dir_make_tmp ("tt-predictor-XXXXXX", NULL);
  fail_unless (tmp_dir != NULL);
}

static void
remove_tmp_dir (void)
{
  GDir *d = g_dir_open (tmp_dir, 0, NULL);
  const gchar *name;
  while (d && (name = g_dir_read_name (d))) {
    gchar *p = g_build_filename (tmp_dir, name, NULL);
    g_unlink (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  g_rmdir (tmp_dir);
  g_free (tmp_dir);
}

static Suite *
tensor_predictor_suite (void)
{
  Suite *s = suite_create ("tensor_predictor");
  TCase *tc = tcase_create ("general");
  tcase_add_checked_fixture (tc, make_tmp_dir, remove_tmp_dir);
  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_output_equals_engine);
  tcase_add_test (tc, test_batched_output_equals_engine);
  tcase_add_test (tc, test_threads_output);
  tcase_add_test (tc, test_output_caps);
  tcase_add_test (tc, test_accuracy_on_labels);
  tcase_add_test (tc, test_text_output);
  tcase_add_test (tc, test_pool_smaller_than_training);
  tcase_add_test (tc, test_model_sources);
  tcase_add_test (tc, test_model_from_trainer);
  tcase_add_test (tc, test_reload_replaced_file);
  tcase_add_test (tc, test_bad_model_files);
  tcase_add_test (tc, test_bad_caps_and_buffers);
  tcase_add_test (tc, test_flexible_inputs);
  tcase_add_test (tc, test_flexible_refused);
  tcase_add_test (tc, test_live_handoff_never_torn);
  tcase_add_test (tc, test_handoff_other_model_refused);
  tcase_add_test (tc, test_two_pipelines_one_trainer_name);
  /* LoRA adapters */
  tcase_add_test (tc, test_lora_merged_same_outputs);
  return s;
}

GST_CHECK_MAIN (tensor_predictor);
