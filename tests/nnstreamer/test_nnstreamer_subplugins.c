/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nnstreamer's own tensor_trainer and tensor_filter running this engine
 * through the sub-plugins of gst/nnstreamer/ (framework=tensor-trainer).
 *
 * The environment (tests/nnstreamer/meson.build) loads nnstreamer's
 * GStreamer plugin and no plugin of this project, so tensor_trainer is
 * nnstreamer's element, and points nnstreamer at the sub-plugins of the
 * build tree.
 *
 *   trainer   2 epochs through tensor_trainer: the saved BIN loads, its
 *             weights differ from the initial ones (model-load-path) and
 *             equal the engine's own training on the same batches; the
 *             element pushes its 4 figures per update
 *   filter    tensor_filter with model=bundle and model=INI,BIN: every
 *             output equals the engine's own inference at batch 1; with
 *             is-updatable=true a new model= serves the samples after it
 *   errors    bad files, an INI without weights, samples that do not fit:
 *             an error or a refused state change, a message naming the
 *             file, no hang
 */
#include <gst/gst.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "tt_bundle.h"

static int failures;

#define CHECK(cond, ...) \
  do { \
    if (!(cond)) { \
      failures++; \
      g_printerr ("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      g_printerr (__VA_ARGS__); \
      g_printerr ("\n"); \
    } \
  } while (0)

static const gchar tiny_ini[] =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "epochs = 1\n"
    "batch_size = 4\n"
    "loss = cross\n"
    "[Optimizer]\n"
    "type = adam\n"
    "learning_rate = 0.05\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:1:4\n"
    "[hidden]\n"
    "type = fully_connected\n"
    "unit = 8\n"
    "activation = relu\n"
    "[output]\n"
    "type = fully_connected\n" "unit = 3\n" "activation = softmax\n";

#define IN_FLOATS 4
#define OUT_FLOATS 3
#define TRAIN_CAPS "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"4:1:1:1,3:1:1:1\",types=(string)\"float32,float32\"," \
  "framerate=(fraction)0/1"
#define INFER_CAPS "other/tensors,format=static,num_tensors=1," \
  "dimensions=(string)4:1:1:1,types=(string)float32,framerate=(fraction)0/1"

/* (26 training samples: the last batch of each epoch is a partial one) */
#define N_TRAIN 26
#define N_VALID 6
#define N_EPOCHS 2
#define TIMEOUT (60 * GST_SECOND)

/* The sub-plugins' messages (log domain "tensor-trainer"), kept so a test
 * can check that a failure said what was wrong. */
static GString *subplugin_log;

static void
log_handler (const gchar * domain, GLogLevelFlags level, const gchar * msg,
    gpointer data)
{
  (void) domain;
  (void) level;
  (void) data;
  g_string_append_printf (subplugin_log, "%s\n", msg);
  g_printerr ("(sub-plugin) %s\n", msg);
}

/* Sample k of a separable 3-class problem: class k % 3 lights its input. */
static void
make_sample (guint k, gfloat x[IN_FLOATS], gfloat y[OUT_FLOATS])
{
  const guint c = k % 3;
  guint32 r = k * 2654435761u;
  for (guint i = 0; i < IN_FLOATS; i++) {
    r = r * 1664525u + 1013904223u;
    x[i] = (gfloat) (r >> 8) / (gfloat) (1 << 24) * 0.4f - 0.2f;
  }
  x[c] += 1.0f;
  for (guint i = 0; i < OUT_FLOATS; i++)
    y[i] = i == c ? 1.0f : 0.0f;
}

/* A memory owning a copy of size bytes at data. */
static GstMemory *
memory_copy (gconstpointer data, gsize size)
{
  gpointer copy = g_memdup2 (data, size);
  return gst_memory_new_wrapped (0, copy, size, 0, size, copy, g_free);
}

static GstBuffer *
sample_buffer (guint k, gboolean with_label)
{
  gfloat x[IN_FLOATS], y[OUT_FLOATS];
  GstBuffer *buf = gst_buffer_new ();
  make_sample (k, x, y);
  gst_buffer_append_memory (buf, memory_copy (x, sizeof x));
  if (with_label)
    gst_buffer_append_memory (buf, memory_copy (y, sizeof y));
  return buf;
}

static void
push (GstElement * src, GstBuffer * buf)
{
  GstFlowReturn ret;
  g_signal_emit_by_name (src, "push-buffer", buf, &ret);
  gst_buffer_unref (buf);
}

static void
end_of_stream (GstElement * src)
{
  GstFlowReturn ret;
  g_signal_emit_by_name (src, "end-of-stream", &ret);
}

/* Waits for EOS or an error; the error's text into *error (g_free). */
static gboolean
wait_eos (GstElement * pipeline, gchar ** error)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, TIMEOUT,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gboolean eos = FALSE;

  *error = NULL;
  if (!m) {
    *error = g_strdup ("timed out");
  } else if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
    GError *e;
    gchar *dbg;
    gst_message_parse_error (m, &e, &dbg);
    *error = g_strdup_printf ("%s (%s)", e->message, dbg ? dbg : "");
    g_error_free (e);
    g_free (dbg);
  } else {
    eos = TRUE;
  }
  if (m)
    gst_message_unref (m);
  gst_object_unref (bus);
  return eos;
}

static GstElement *
launch (const gchar * description)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (description, &err);
  CHECK (p && !err, "%s: %s", description, err ? err->message : "");
  g_clear_error (&err);
  return p;
}

static gfloat *
model_weights (tt_model * m, gsize * n)
{
  tt_error err;
  gfloat *w;
  *n = tt_model_weight_floats (m);
  w = g_new (gfloat, *n);
  CHECK (tt_model_export_weights (m, w, *n, &err) == TT_OK, "%s", err.message);
  return w;
}

typedef struct
{
  gchar *dir, *ini, *init_bin, *trained_bin, *bundle;
} Files;

static void
files_init (Files * f)
{
  f->dir = g_dir_make_tmp ("tt-nns-XXXXXX", NULL);
  g_assert (f->dir);
  f->ini = g_build_filename (f->dir, "tiny.ini", NULL);
  f->init_bin = g_build_filename (f->dir, "init.bin", NULL);
  f->trained_bin = g_build_filename (f->dir, "trained.bin", NULL);
  f->bundle = g_build_filename (f->dir, "tiny.ttb", NULL);
  g_assert (g_file_set_contents (f->ini, tiny_ini, -1, NULL));
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
  g_free (f->dir);
  g_free (f->ini);
  g_free (f->init_bin);
  g_free (f->trained_bin);
  g_free (f->bundle);
}

/* The engine alone, on the batches the sub-plugin makes: per epoch,
 * N_TRAIN samples trained in batches of 4 (the last one of 2), then
 * N_VALID evaluated. */
static tt_model *
train_directly (const Files * f)
{
  tt_open_options o = { 0 };
  tt_error err;
  tt_model *m;
  guint k = 0;

  o.weights = f->init_bin;
  m = tt_model_open (f->ini, &o, NULL, &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return NULL;
  for (guint e = 0; e < N_EPOCHS; e++) {
    for (guint pos = 0; pos < N_TRAIN + N_VALID;) {
      const gboolean training = pos < N_TRAIN;
      const guint end = training ? N_TRAIN : N_TRAIN + N_VALID;
      const guint n = MIN (4, end - pos);
      gfloat x[4 * IN_FLOATS], y[4 * OUT_FLOATS];
      const void *inputs[1] = { x };
      const tt_dtype types[1] = { TT_DTYPE_FLOAT32 };
      for (guint i = 0; i < n; i++)
        make_sample (k++, x + i * IN_FLOATS, y + i * OUT_FLOATS);
      if (training)
        CHECK (tt_model_train_batch (m, n, inputs, types, y, NULL,
                &err) == TT_OK, "%s", err.message);
      else
        CHECK (tt_model_eval_batch (m, n, inputs, types, y, NULL,
                &err) == TT_OK, "%s", err.message);
      pos += n;
    }
    tt_model_finish_epoch (m);
  }
  return m;
}

static void
test_trainer (void)
{
  Files f;
  tt_error err;
  tt_model *m;
  gfloat *w_init, *w_saved, *w_direct;
  gsize n_init, n_saved, n_direct;
  gchar *desc, *error;
  GstElement *pipeline, *src, *sink;
  guint figures = 0;
  gdouble last[4] = { 0 };

  files_init (&f);
  /* the initial weights, handed to tensor_trainer as model-load-path */
  m = tt_model_open (f.ini, NULL, NULL, &err);
  CHECK (m != NULL, "%s", err.message);
  CHECK (tt_model_save_bin (m, f.init_bin, &err) == TT_OK, "%s", err.message);
  w_init = model_weights (m, &n_init);
  tt_model_free (m);

  desc = g_strdup_printf ("appsrc name=src caps=\"" TRAIN_CAPS "\" "
      "format=time ! tensor_trainer framework=tensor-trainer "
      "model-config=%s model-load-path=%s model-save-path=%s num-inputs=1 "
      "num-labels=1 num-training-samples=%u num-validation-samples=%u "
      "epochs=%u ! appsink name=sink sync=false wait-on-eos=false", f.ini,
      f.init_bin, f.trained_bin, N_TRAIN, N_VALID, N_EPOCHS);
  pipeline = launch (desc);
  g_free (desc);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  /* the samples queue in appsrc, so the first reaches tensor_trainer
   * before PLAYING (where nnstreamer starts the training) */
  for (guint k = 0; k < N_EPOCHS * (N_TRAIN + N_VALID); k++)
    push (src, sample_buffer (k, TRUE));
  end_of_stream (src);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  CHECK (wait_eos (pipeline, &error), "%s", error);
  g_free (error);

  /* nnstreamer's tensor_trainer pushes its figures (training loss and
   * accuracy, validation loss and accuracy, float64) after an epoch's
   * first sample and at its end */
  for (;;) {
    GstSample *s = NULL;
    g_signal_emit_by_name (sink, "try-pull-sample", (GstClockTime) 0, &s);
    if (!s)
      break;
    GstBuffer *b = gst_sample_get_buffer (s);
    CHECK (gst_buffer_get_size (b) == sizeof last, "%zu bytes",
        gst_buffer_get_size (b));
    if (gst_buffer_get_size (b) == sizeof last)
      gst_buffer_extract (b, 0, last, sizeof last);
    figures++;
    gst_sample_unref (s);
  }
  CHECK (figures == 2 * N_EPOCHS, "%u buffers of figures", figures);
  CHECK (isfinite (last[0]) && last[0] > 0, "training loss %g", last[0]);
  CHECK (last[3] > 50.0 && last[3] <= 100.0,
      "validation accuracy %g%% after %u epochs", last[3], N_EPOCHS);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);

  /* the BIN loads, holds trained weights, the engine's own */
  m = tt_model_open (f.ini, NULL, NULL, &err);
  CHECK (m != NULL, "%s", err.message);
  CHECK (tt_model_load_bin (m, f.trained_bin, &err) == TT_OK, "%s",
      err.message);
  CHECK (tt_model_epoch (m) == N_EPOCHS, "epoch counter %u",
      tt_model_epoch (m));
  w_saved = model_weights (m, &n_saved);
  tt_model_free (m);
  CHECK (n_saved == n_init && memcmp (w_saved, w_init,
          n_init * sizeof *w_init) != 0,
      "the saved weights are the initial ones");
  m = train_directly (&f);
  w_direct = model_weights (m, &n_direct);
  tt_model_free (m);
  CHECK (n_direct == n_saved && memcmp (w_direct, w_saved,
          n_saved * sizeof *w_saved) == 0,
      "the saved weights differ from the engine's training on the same "
      "batches");
  g_free (w_init);
  g_free (w_saved);
  g_free (w_direct);
  files_clear (&f);
}

/* A trained model as INI + BIN and as a bundle (and its initial weights
 * as a BIN). */
static void
make_trained_model (const Files * f)
{
  tt_error err;
  tt_model *m = tt_model_open (f->ini, NULL, NULL, &err);
  gfloat x[4 * IN_FLOATS], y[4 * OUT_FLOATS];
  const void *inputs[1] = { x };
  const tt_dtype types[1] = { TT_DTYPE_FLOAT32 };

  CHECK (m != NULL, "%s", err.message);
  CHECK (tt_model_save_bin (m, f->init_bin, &err) == TT_OK, "%s", err.message);
  for (guint b = 0; b < 20; b++) {
    for (guint i = 0; i < 4; i++)
      make_sample (b * 4 + i, x + i * IN_FLOATS, y + i * OUT_FLOATS);
    CHECK (tt_model_train_batch (m, 4, inputs, types, y, NULL, &err) == TT_OK,
        "%s", err.message);
  }
  CHECK (tt_model_save_bin (m, f->trained_bin, &err) == TT_OK, "%s",
      err.message);
  tt_model_free (m);
  CHECK (tt_bundle_pack (f->ini, f->trained_bin, f->bundle, 0, NULL,
          &err) == TT_OK, "%s", err.message);
}

#define N_INFER 12

/* The output of sample k against the engine's model m at batch 1. */
static void
check_output (GstSample * s, tt_model * m, guint k, const gchar * what)
{
  gfloat x[IN_FLOATS], y[OUT_FLOATS], got[OUT_FLOATS];
  const void *inputs[1] = { x };
  const tt_dtype types[1] = { TT_DTYPE_FLOAT32 };
  tt_error err;
  GstBuffer *b = gst_sample_get_buffer (s);

  CHECK (gst_buffer_get_size (b) == sizeof got, "%zu bytes",
      gst_buffer_get_size (b));
  gst_buffer_extract (b, 0, got, sizeof got);
  make_sample (k, x, y);
  CHECK (m && tt_model_eval_batch (m, 1, inputs, types, NULL, NULL,
          &err) == TT_OK, "%s", err.message);
  CHECK (m && memcmp (got, tt_model_output (m), sizeof got) == 0,
      "%s, sample %u: %g %g %g, the engine %g %g %g", what, k,
      got[0], got[1], got[2], tt_model_output (m)[0],
      tt_model_output (m)[1], tt_model_output (m)[2]);
}

static tt_model *
open_for_inference (const gchar * ini, const gchar * weights)
{
  tt_open_options o = { 0 };
  tt_error err;
  tt_model *m;
  o.batch_size = 1;
  o.inference = TRUE;
  o.weights = weights;
  m = tt_model_open (ini, &o, NULL, &err);
  CHECK (m != NULL, "%s", err.message);
  return m;
}

/* tensor_filter with model=model_spec against the engine at batch 1. */
static void
check_filter (const Files * f, const gchar * model_spec)
{
  tt_model *m = open_for_inference (f->ini, f->trained_bin);
  gchar *desc, *error;
  GstElement *pipeline, *src, *sink;
  guint outputs = 0;

  desc = g_strdup_printf ("appsrc name=src caps=\"" INFER_CAPS "\" "
      "format=time ! tensor_filter framework=tensor-trainer model=%s ! "
      "appsink name=sink sync=false wait-on-eos=false", model_spec);
  pipeline = launch (desc);
  g_free (desc);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  for (guint k = 0; k < N_INFER; k++)
    push (src, sample_buffer (k, FALSE));
  end_of_stream (src);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  CHECK (wait_eos (pipeline, &error), "model=%s: %s", model_spec, error);
  g_free (error);

  for (guint k = 0;; k++) {
    GstSample *s = NULL;
    g_signal_emit_by_name (sink, "try-pull-sample", (GstClockTime) 0, &s);
    if (!s)
      break;
    if (k == 0) {
      gchar *caps = gst_caps_to_string (gst_sample_get_caps (s));
      CHECK (strstr (caps, "3:1:1:1") && strstr (caps, "float32"),
          "output caps %s", caps);
      g_free (caps);
    }
    check_output (s, m, k, model_spec);
    outputs++;
    gst_sample_unref (s);
  }
  CHECK (outputs == N_INFER, "model=%s: %u outputs", model_spec, outputs);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  tt_model_free (m);
}

/* tensor_filter is-updatable=true: a new model= in the middle of the
 * stream serves the samples after it. */
static void
check_filter_reload (const Files * f)
{
  tt_model *trained = open_for_inference (f->ini, f->trained_bin);
  tt_model *initial = open_for_inference (f->ini, f->init_bin);
  gchar *desc, *error, *pair;
  GstElement *pipeline, *src, *sink, *filter;
  guint k = 0;

  desc = g_strdup_printf ("appsrc name=src caps=\"" INFER_CAPS "\" "
      "format=time ! tensor_filter name=filter framework=tensor-trainer "
      "is-updatable=true model=%s ! appsink name=sink sync=false "
      "wait-on-eos=false", f->bundle);
  pipeline = launch (desc);
  g_free (desc);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  filter = gst_bin_get_by_name (GST_BIN (pipeline), "filter");
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  for (; k < N_INFER / 2; k++)
    push (src, sample_buffer (k, FALSE));
  for (guint i = 0; i < N_INFER / 2; i++) {
    GstSample *s = NULL;
    g_signal_emit_by_name (sink, "try-pull-sample", TIMEOUT, &s);
    CHECK (s != NULL, "output %u before the reload", i);
    if (!s)
      break;
    check_output (s, trained, i, "before the reload");
    gst_sample_unref (s);
  }
  pair = g_strdup_printf ("%s,%s", f->ini, f->init_bin);
  g_object_set (filter, "model", pair, NULL);
  g_free (pair);
  for (; k < N_INFER; k++)
    push (src, sample_buffer (k, FALSE));
  end_of_stream (src);
  CHECK (wait_eos (pipeline, &error), "reload: %s", error);
  g_free (error);
  for (guint i = N_INFER / 2; i < N_INFER; i++) {
    GstSample *s = NULL;
    g_signal_emit_by_name (sink, "try-pull-sample", (GstClockTime) 0, &s);
    CHECK (s != NULL, "output %u after the reload", i);
    if (!s)
      break;
    check_output (s, initial, i, "after the reload");
    gst_sample_unref (s);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (filter);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  tt_model_free (trained);
  tt_model_free (initial);
}

static void
test_filter (void)
{
  Files f;
  gchar *pair;

  files_init (&f);
  make_trained_model (&f);
  check_filter (&f, f.bundle);
  pair = g_strdup_printf ("%s,%s", f.ini, f.trained_bin);
  check_filter (&f, pair);
  g_free (pair);
  check_filter_reload (&f);
  files_clear (&f);
}

/* A pipeline that must fail (a refused state change or an error, not a
 * hang) with a sub-plugin message containing says. Live sources: the
 * pipeline reaches PLAYING without a buffer, where nnstreamer's
 * tensor_trainer creates its model; buffers (n_buffers samples of
 * bad_caps' shape) come after. */
static void
check_fails (const gchar * description, guint n_buffers, const gchar * says)
{
  GstElement *pipeline = launch (description);
  GstStateChangeReturn r;
  gchar *error = NULL;

  g_string_truncate (subplugin_log, 0);
  r = gst_element_set_state (pipeline, GST_STATE_PLAYING);
  if (r != GST_STATE_CHANGE_FAILURE)
    r = gst_element_get_state (pipeline, NULL, NULL, TIMEOUT);
  if (r != GST_STATE_CHANGE_FAILURE) {
    GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
    for (guint k = 0; k < n_buffers; k++)
      push (src, sample_buffer (k, TRUE));
    end_of_stream (src);
    gst_object_unref (src);
    CHECK (!wait_eos (pipeline, &error), "%s: no error", description);
    CHECK (error && !strstr (error, "timed out"), "%s: %s", description, error);
    g_free (error);
  }
  CHECK (strstr (subplugin_log->str, says), "%s: the sub-plugin said \"%s\"",
      description, subplugin_log->str);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
}

static void
test_errors (void)
{
  Files f;
  gchar *desc, *bad_ini, *missing;

  files_init (&f);
  make_trained_model (&f);
  bad_ini = g_build_filename (f.dir, "bad.ini", NULL);
  missing = g_build_filename (f.dir, "missing.ttb", NULL);
  g_assert (g_file_set_contents (bad_ini, "[Model]\nbatch_size = x\n", -1,
          NULL));

  /* tensor_filter: an INI without weights, a file that is not there, a
   * BIN that is not the model's */
  desc = g_strdup_printf ("appsrc name=src is-live=true caps=\"" INFER_CAPS
      "\" ! tensor_filter framework=tensor-trainer model=%s ! fakesink async=false",
      f.ini);
  check_fails (desc, 0, "needs its weights");
  g_free (desc);
  desc = g_strdup_printf ("appsrc name=src is-live=true caps=\"" INFER_CAPS
      "\" ! tensor_filter framework=tensor-trainer model=%s ! fakesink async=false",
      missing);
  check_fails (desc, 0, missing);
  g_free (desc);
  desc = g_strdup_printf ("appsrc name=src is-live=true caps=\"" INFER_CAPS
      "\" ! tensor_filter framework=tensor-trainer model=%s,%s ! fakesink async=false",
      f.ini, f.ini);
  check_fails (desc, 0, f.ini);
  g_free (desc);

  /* tensor_trainer: a malformed INI; samples of another shape */
  desc = g_strdup_printf ("appsrc name=src is-live=true caps=\"" TRAIN_CAPS
      "\" ! tensor_trainer framework=tensor-trainer model-config=%s "
      "model-save-path=%s/out.bin num-training-samples=4 ! fakesink async=false",
      bad_ini, f.dir);
  check_fails (desc, 0, bad_ini);
  g_free (desc);
  desc = g_strdup_printf ("appsrc name=src is-live=true caps=\"" TRAIN_CAPS
      "\" ! tensor_trainer framework=tensor-trainer model-config=%s "
      "model-save-path=%s/out.bin num-training-samples=4 num-inputs=2 ! "
      "fakesink async=false", f.ini, f.dir);
  check_fails (desc, 0, "num-inputs=2");
  g_free (desc);
  {
    /* 5 inputs where the model takes 4 */
    gchar *ini5 = g_build_filename (f.dir, "five.ini", NULL);
    gchar *text = g_strdup (tiny_ini);
    gchar *at = strstr (text, "1:1:4");
    at[4] = '5';
    g_assert (g_file_set_contents (ini5, text, -1, NULL));
    desc = g_strdup_printf ("appsrc name=src is-live=true caps=\"" TRAIN_CAPS
        "\" ! tensor_trainer framework=tensor-trainer model-config=%s "
        "model-save-path=%s/out.bin num-training-samples=4 ! fakesink async=false",
        ini5, f.dir);
    check_fails (desc, 1, "1:1:5");
    g_free (desc);
    g_free (ini5);
    g_free (text);
  }
  g_free (bad_ini);
  g_free (missing);
  files_clear (&f);
}

int
main (int argc, char **argv)
{
  const gchar *only = argc > 1 ? argv[1] : NULL;
  GstElementFactory *trainer;

  gst_init (&argc, &argv);
  subplugin_log = g_string_new (NULL);
  g_log_set_handler ("tensor-trainer", G_LOG_LEVEL_MASK, log_handler, NULL);

  /* nnstreamer's element, not this project's (not on the plugin path) */
  trainer = gst_element_factory_find ("tensor_trainer");
  if (!trainer) {
    g_printerr ("nnstreamer's tensor_trainer is not on GST_PLUGIN_PATH\n");
    return 1;
  }
  CHECK (g_strcmp0 (gst_plugin_feature_get_plugin_name (GST_PLUGIN_FEATURE
              (trainer)), "nnstreamer") == 0, "tensor_trainer comes from %s",
      gst_plugin_feature_get_plugin_name (GST_PLUGIN_FEATURE (trainer)));
  gst_object_unref (trainer);

  if (!only || !strcmp (only, "trainer"))
    test_trainer ();
  if (!only || !strcmp (only, "filter"))
    test_filter ();
  if (!only || !strcmp (only, "errors"))
    test_errors ();
  g_string_free (subplugin_log, TRUE);
  gst_deinit ();
  if (failures)
    g_printerr ("%d check(s) failed\n", failures);
  else
    g_print ("all checks passed\n");
  return failures ? 1 : 0;
}
