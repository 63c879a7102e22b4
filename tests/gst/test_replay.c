/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Replay in tensor_trainer: the reservoir's statistics and picks (the
 * buffer of ext/engine/io/replay.c), which samples a
 * training batch holds (a probe model whose loss is the mean square of
 * the batch's labels, each label naming its sample), the file's round
 * trip through two runs, and the refusals (sizes, memory-limit,
 * replay-per-batch, a file without a size).
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "tt_engine.h"
#include "tt_gst_test.h"
#include "replay.h"

/* the buffer's calls, with a message to g_free on failure */
static gboolean
replay_init (tt_replay * r, guint n, const gsize * bytes, guint capacity,
    guint64 seed)
{
  return tt_replay_init (r, n, bytes, capacity, seed, NULL) == TT_OK;
}

static gboolean
replay_load (tt_replay * r, const gchar * path, gchar ** why)
{
  tt_error e;
  if (tt_replay_load (r, path, &e) == TT_OK)
    return TRUE;
  *why = g_strdup (e.message);
  return FALSE;
}

static gboolean
replay_save (tt_replay * r, const gchar * path, gchar ** why)
{
  tt_error e;
  if (tt_replay_save (r, path, &e) == TT_OK)
    return TRUE;
  *why = g_strdup (e.message);
  return FALSE;
}

/* ---- the buffer alone ------------------------------------------------ */

/* N samples offered to a reservoir of M, over many seeds: each is kept
 * with probability M/N. */
GST_START_TEST (test_reservoir_statistics)
{
  enum
  { N = 40, M = 10, RUNS = 4000 };
  const gsize bytes[2] = { 4, 4 };
  guint kept[N] = { 0 };

  for (guint run = 0; run < RUNS; run++) {
    tt_replay r;
    fail_unless (replay_init (&r, 2, bytes, M, run));
    for (guint32 id = 0; id < N; id++) {
      guint8 *slot = tt_replay_offer (&r);
      if (slot) {
        memcpy (slot, &id, 4);
        memcpy (slot + 4, &id, 4);
      }
    }
    fail_unless_equals_int (r.count, M);
    fail_unless_equals_uint64 (r.seen, N);
    for (guint i = 0; i < r.count; i++) {
      guint32 id;
      memcpy (&id, tt_replay_sample (&r, i), 4);
      fail_unless (id < N);
      kept[id]++;
    }
    tt_replay_clear (&r);
  }
  /* p = 0.25, sd of the frequency over 4000 runs 0.0068: 0.03 is 4.4 sd */
  for (guint id = 0; id < N; id++) {
    const gdouble p = (gdouble) kept[id] / RUNS;
    fail_unless (fabs (p - (gdouble) M / N) < 0.03,
        "sample %u kept with frequency %g, not %g", id, p, (gdouble) M / N);
  }
}

GST_END_TEST;

/* The same seed keeps the same samples; picks are distinct held ones. */
GST_START_TEST (test_reservoir_seed_and_picks)
{
  const gsize bytes[1] = { 4 };
  tt_replay a, b;
  guint32 picks[8];
  guint other = 0;

  fail_unless (replay_init (&a, 1, bytes, 8, 7));
  fail_unless (replay_init (&b, 1, bytes, 8, 7));
  for (guint32 id = 0; id < 100; id++) {
    guint8 *sa = tt_replay_offer (&a), *sb = tt_replay_offer (&b);
    fail_unless ((sa == NULL) == (sb == NULL));
    if (sa) {
      memcpy (sa, &id, 4);
      memcpy (sb, &id, 4);
    }
  }
  fail_unless (memcmp (tt_replay_sample (&a, 0),
          tt_replay_sample (&b, 0), 8 * 4) == 0);
  for (guint round = 0; round < 200; round++) {
    tt_replay_pick (&a, 5, picks);
    for (guint i = 0; i < 5; i++) {
      fail_unless (picks[i] < a.count);
      for (guint j = 0; j < i; j++)
        fail_unless (picks[i] != picks[j], "pick repeated");
    }
    other += picks[0] != 0;
  }
  fail_unless (other > 100, "the picks do not move");
  tt_replay_clear (&a);
  /* another seed keeps another set */
  fail_unless (replay_init (&a, 1, bytes, 8, 8));
  for (guint32 id = 0; id < 100; id++) {
    guint8 *sa = tt_replay_offer (&a);
    if (sa)
      memcpy (sa, &id, 4);
  }
  fail_if (memcmp (tt_replay_sample (&a, 0),
          tt_replay_sample (&b, 0), 8 * 4) == 0);
  tt_replay_clear (&a);
  tt_replay_clear (&b);
}

GST_END_TEST;

/* ---- in the element -------------------------------------------------- */

/* The probe: y = w x + b with w = b = 0 and a learning rate of 1e-30, so
 * every batch's loss (mean squared error) is the mean of its labels'
 * squares (a learning rate of 1e-30 moves nothing it could show). */
static const gchar *probe_ini =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "epochs = 1\n"
    "batch_size = 4\n"
    "loss = mse\n"
    "[Optimizer]\n"
    "type = sgd\n"
    "learning_rate = 1e-30\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:1:1\n"
    "[out]\n"
    "type = fully_connected\n"
    "unit = 1\n" "weight_initializer = zeros\n" "bias_initializer = zeros\n";

#define PROBE_CAPS "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"1:1:1:1,1:1:1:1\",types=(string)\"float32,float32\"," \
  "framerate=(fraction)0/1"

#define PROBE_CAPS_U8 "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"1:1:1:1,1:1:1:1\",types=(string)\"uint8,float32\"," \
  "framerate=(fraction)0/1"

/* sample id: input id (float32, or uint8 with u8), label id + 1 */
static GstBuffer *
probe_sample_as (guint id, gboolean u8)
{
  gfloat v[2] = { (gfloat) id, (gfloat) id + 1 };
  guint8 byte = (guint8) id;
  GstBuffer *b = gst_buffer_new ();
  for (guint i = 0; i < 2; i++) {
    const gsize size = i == 0 && u8 ? 1 : 4;
    gpointer data = g_memdup2 (i == 0 && u8 ? (gpointer) & byte :
        (gpointer) & v[i], size);
    gst_buffer_append_memory (b, gst_memory_new_wrapped (0, data, size, 0,
            size, data, g_free));
  }
  return b;
}

static GstBuffer *
probe_sample (guint id)
{
  return probe_sample_as (id, FALSE);
}

typedef struct
{
  gchar *dir, *ini, *bin, *replay;
  GstBus *bus;
  GstElement *trainer;
  GstHarness *h;
} Fixture;

static void
fixture_init (Fixture * f, const gchar * ini_text)
{
  memset (f, 0, sizeof *f);
  f->dir = g_dir_make_tmp ("tt-replay-XXXXXX", NULL);
  f->ini = g_build_filename (f->dir, "probe.ini", NULL);
  f->bin = g_build_filename (f->dir, "probe.bin", NULL);
  f->replay = g_build_filename (f->dir, "old.replay", NULL);
  fail_unless (g_file_set_contents (f->ini, ini_text, -1, NULL));
  f->trainer = gst_element_factory_make ("tensor_trainer", NULL);
  fail_unless (f->trainer != NULL);
  f->bus = gst_bus_new ();
  gst_element_set_bus (f->trainer, f->bus);
  g_object_set (f->trainer, "model-config", f->ini, "model-save-path", f->bin,
      NULL);
}

static void
fixture_stop (Fixture * f)
{
  if (f->h)
    gst_harness_teardown (f->h);
  else
    gst_element_set_state (f->trainer, GST_STATE_NULL);
  f->h = NULL;
  gst_object_unref (f->trainer);
  gst_bus_set_flushing (f->bus, TRUE);
  gst_object_unref (f->bus);
}

static void
fixture_clear (Fixture * f)
{
  tt_gst_remove_dir (f->dir);
  g_free (f->dir);
  g_free (f->ini);
  g_free (f->bin);
  g_free (f->replay);
}

/* The error that READY->PAUSED posts (the start fails). */
static gchar *
start_error (Fixture * f)
{
  fail_unless_equals_int (gst_element_set_state (f->trainer,
          GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  return tt_gst_pop_text (f->bus, GST_MESSAGE_ERROR);
}

/* Does some pair of distinct ids among the first `seen` samples, none of
 * them in [new_from, new_from + n_new), have labels whose squares sum to
 * sq? */
static gboolean
replayed_pair (gdouble sq, guint seen, guint new_from, guint n_new)
{
  for (guint a = 0; a < seen; a++)
    for (guint b = a + 1; b < seen; b++) {
      if ((a >= new_from && a < new_from + n_new) || (b >= new_from
              && b < new_from + n_new))
        continue;
      if (fabs ((a + 1.0) * (a + 1) + (b + 1.0) * (b + 1) - sq) < 1e-3)
        return TRUE;
    }
  return FALSE;
}

/* Batch 4, replay-per-batch 2 (half the batch): the first batch holds 4
 * new samples, each later one 2 new and 2 distinct earlier ones; with
 * float32 inputs and with uint8 ones (the buffer keeps them widened, the
 * batch takes the stream's uint8 again after each). */
static void
check_batch_composition (gboolean u8)
{
  Fixture f;
  const guint n = 20;
  gdouble prev_sum = 0;
  guint64 all = 0, samples, replayed;
  guint new_from = 0;

  fixture_init (&f, probe_ini);
  g_object_set (f.trainer, "num-training-samples", n, "replay-size", 8,
      "post-messages", TRUE, "progress-interval", 1, "replay-file", f.replay,
      NULL);
  f.h = gst_harness_new_with_element (f.trainer, "sink", "src");
  gst_harness_set_src_caps_str (f.h, u8 ? PROBE_CAPS_U8 : PROBE_CAPS);
  for (guint id = 0; id < n; id++)
    fail_unless_equals_int (gst_harness_push (f.h, probe_sample_as (id, u8)),
        GST_FLOW_OK);
  for (guint b = 0; b < 9; b++) {
    GstMessage *m = tt_gst_pop_named (f.bus, "tensor-trainer-progress");
    const guint n_new = b == 0 ? 4 : 2, n_all = 4;
    gdouble loss, new_sq = 0, sum;
    guint64 got;
    fail_unless (m != NULL, "progress message of batch %u", b + 1);
    fail_unless (gst_structure_get (gst_message_get_structure (m), "loss",
            G_TYPE_DOUBLE, &loss, "samples", G_TYPE_UINT64, &got, NULL));
    gst_message_unref (m);
    fail_unless_equals_uint64 (got, new_from + n_new);
    all += n_all;
    /* loss_sum of the batch = the sum of its labels' squares */
    sum = loss * all - prev_sum;
    prev_sum = loss * all;
    for (guint id = new_from; id < new_from + n_new; id++)
      new_sq += (id + 1.0) * (id + 1);
    if (b == 0)
      fail_unless (fabs (sum - new_sq) < 1e-3, "batch 1: %g, not %g", sum,
          new_sq);
    else
      fail_unless (replayed_pair (sum - new_sq, new_from, new_from, n_new),
          "batch %u: replayed squares %g are no two distinct earlier "
          "samples", b + 1, sum - new_sq);
    new_from += n_new;
  }
  fail_unless_equals_int (new_from, n);
  GstMessage *m = tt_gst_pop_named (f.bus, "tensor-trainer-epoch");
  fail_unless (m != NULL);
  fail_unless (gst_structure_get (gst_message_get_structure (m), "samples",
          G_TYPE_UINT64, &samples, "replayed-samples", G_TYPE_UINT64,
          &replayed, NULL));
  gst_message_unref (m);
  fail_unless_equals_uint64 (samples, n);
  fail_unless_equals_uint64 (replayed, 16);
  fixture_stop (&f);
  /* the samples kept are the stream's, inputs as float32 */
  {
    const gsize bytes[2] = { 4, 4 };
    tt_replay r;
    gchar *why = NULL;
    fail_unless (replay_init (&r, 2, bytes, 8, 0));
    fail_unless (replay_load (&r, f.replay, &why), "%s", why);
    fail_unless_equals_int (r.count, 8);
    for (guint i = 0; i < r.count; i++) {
      gfloat v[2];
      memcpy (v, tt_replay_sample (&r, i), sizeof v);
      fail_unless (v[0] + 1 == v[1] && v[0] >= 0 && v[0] < n,
          "kept sample %u: input %g, label %g", i, v[0], v[1]);
    }
    tt_replay_clear (&r);
  }
  fixture_clear (&f);
}

GST_START_TEST (test_batch_composition)
{
  check_batch_composition (FALSE);
  check_batch_composition (TRUE);
}

GST_END_TEST;

/* A run with replay-file writes the buffer at EOS; its samples are
 * samples of the stream; a second run loads it and replays from its
 * first batch. */
GST_START_TEST (test_file_round_trip)
{
  Fixture f;
  const gsize bytes[2] = { 4, 4 };
  tt_replay r, again;
  gchar *why = NULL, *copy;
  guint64 replayed;

  fixture_init (&f, probe_ini);
  g_object_set (f.trainer, "num-training-samples", 12, "replay-size", 6,
      "replay-file", f.replay, "replay-seed", (guint64) 3, "post-messages",
      TRUE, NULL);
  f.h = gst_harness_new_with_element (f.trainer, "sink", "src");
  gst_harness_set_src_caps_str (f.h, PROBE_CAPS);
  for (guint id = 0; id < 12; id++)
    fail_unless_equals_int (gst_harness_push (f.h, probe_sample (id)),
        GST_FLOW_OK);
  fixture_stop (&f);
  fail_unless (g_file_test (f.replay, G_FILE_TEST_EXISTS));

  fail_unless (replay_init (&r, 2, bytes, 6, 0));
  fail_unless (replay_load (&r, f.replay, &why), "%s", why);
  fail_unless_equals_int (r.count, 6);
  fail_unless_equals_uint64 (r.seen, 12);
  for (guint i = 0; i < r.count; i++) {
    gfloat v[2];
    memcpy (v, tt_replay_sample (&r, i), sizeof v);
    fail_unless (v[0] >= 0 && v[0] < 12 && v[0] == floorf (v[0]));
    fail_unless_equals_float (v[1], v[0] + 1);
    for (guint j = 0; j < i; j++)
      fail_unless (memcmp (tt_replay_sample (&r, j), v, 8) != 0);
  }
  /* saved again and loaded: the same samples, byte for byte */
  copy = g_build_filename (f.dir, "copy.replay", NULL);
  fail_unless (replay_save (&r, copy, &why), "%s", why);
  fail_unless (replay_init (&again, 2, bytes, 6, 0));
  fail_unless (replay_load (&again, copy, &why), "%s", why);
  fail_unless_equals_int (again.count, r.count);
  fail_unless (memcmp (tt_replay_sample (&again, 0),
          tt_replay_sample (&r, 0), 6 * 8) == 0);
  tt_replay_clear (&again);
  g_free (copy);

  /* into a model whose label grew from 1 to 3 values: padded with 0 */
  {
    const gsize wider[2] = { 4, 12 };
    fail_unless (replay_init (&again, 2, wider, 6, 0));
    fail_unless (replay_load (&again, f.replay, &why), "%s", why);
    fail_unless_equals_int (again.count, 6);
    for (guint i = 0; i < again.count; i++) {
      gfloat v[4];
      memcpy (v, tt_replay_sample (&again, i), sizeof v);
      fail_unless (memcmp (v, tt_replay_sample (&r, i), 8) == 0);
      fail_unless (v[2] == 0 && v[3] == 0);
    }
    tt_replay_clear (&again);
  }

  /* a damaged file is refused by its CRC */
  {
    gchar *data;
    gsize len;
    fail_unless (g_file_get_contents (f.replay, &data, &len, NULL));
    data[len - 6] ^= 1;
    copy = g_build_filename (f.dir, "bad.replay", NULL);
    fail_unless (g_file_set_contents (copy, data, len, NULL));
    fail_unless (replay_init (&again, 2, bytes, 6, 0));
    fail_if (replay_load (&again, copy, &why));
    fail_unless (strstr (why, "CRC") && strstr (why, copy), "%s", why);
    g_free (why);
    tt_replay_clear (&again);
    g_free (copy);
    g_free (data);
  }

  /* the next run: 4 new samples, 2 + 2 replayed from the file */
  f.trainer = gst_element_factory_make ("tensor_trainer", NULL);
  f.bus = gst_bus_new ();
  gst_element_set_bus (f.trainer, f.bus);
  g_object_set (f.trainer, "model-config", f.ini, "num-training-samples", 4,
      "replay-size", 6, "replay-file", f.replay, "post-messages", TRUE, NULL);
  f.h = gst_harness_new_with_element (f.trainer, "sink", "src");
  gst_harness_set_src_caps_str (f.h, PROBE_CAPS);
  for (guint id = 100; id < 104; id++)
    fail_unless_equals_int (gst_harness_push (f.h, probe_sample (id)),
        GST_FLOW_OK);
  GstMessage *m = tt_gst_pop_named (f.bus, "tensor-trainer-epoch");
  fail_unless (m != NULL);
  fail_unless (gst_structure_get (gst_message_get_structure (m),
          "replayed-samples", G_TYPE_UINT64, &replayed, NULL));
  gst_message_unref (m);
  fail_unless_equals_uint64 (replayed, 4);
  fixture_stop (&f);
  /* the file now counts both runs' samples */
  tt_replay_clear (&r);
  fail_unless (replay_init (&r, 2, bytes, 6, 0));
  fail_unless (replay_load (&r, f.replay, &why), "%s", why);
  fail_unless_equals_uint64 (r.seen, 16);
  tt_replay_clear (&r);
  fixture_clear (&f);
}

GST_END_TEST;

/* input 1:1:4, label 1:1:3 */
static const gchar *wide_ini =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "batch_size = 4\n"
    "loss = cross\n"
    "[Optimizer]\n"
    "type = sgd\n"
    "learning_rate = 0.1\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:1:4\n"
    "[out]\n" "type = fully_connected\n" "unit = 3\n" "activation = softmax\n";

GST_START_TEST (test_refusals)
{
  Fixture f;
  const gsize bytes[2] = { 4, 4 };
  tt_replay r;
  gchar *msg, *why = NULL;

  /* a file of the probe (4 + 4 bytes) for a model of 16 + 12 */
  fixture_init (&f, wide_ini);
  fail_unless (replay_init (&r, 2, bytes, 2, 0));
  tt_replay_offer (&r);
  fail_unless (replay_save (&r, f.replay, &why), "%s", why);
  tt_replay_clear (&r);
  g_object_set (f.trainer, "num-training-samples", 4, "replay-size", 8,
      "replay-file", f.replay, NULL);
  msg = start_error (&f);
  fail_unless (strstr (msg, f.replay) && strstr (msg, "2 tensors of 4 + 4 "
          "bytes") && strstr (msg, "2 tensors of 16 + 12 bytes"), "%s", msg);
  g_free (msg);
  fixture_stop (&f);
  fixture_clear (&f);

  /* over memory-limit: the buffer alone is 28 MB */
  fixture_init (&f, wide_ini);
  g_object_set (f.trainer, "num-training-samples", 4, "replay-size",
      1000000, "memory-limit", (guint64) 1000000, NULL);
  msg = start_error (&f);
  fail_unless (strstr (msg, "replay-size=1000000 needs 32000052 bytes")
      && strstr (msg, "memory-limit=1000000"), "%s", msg);
  g_free (msg);
  fixture_stop (&f);
  fixture_clear (&f);

  /* replay-per-batch of a whole batch, or over replay-size */
  fixture_init (&f, wide_ini);
  g_object_set (f.trainer, "num-training-samples", 4, "replay-size", 8,
      "replay-per-batch", 4, NULL);
  msg = start_error (&f);
  fail_unless (strstr (msg, "replay-per-batch=4") && strstr (msg, "0 to 3"),
      "%s", msg);
  g_free (msg);
  fixture_stop (&f);
  fixture_clear (&f);
  fixture_init (&f, wide_ini);
  g_object_set (f.trainer, "num-training-samples", 4, "replay-size", 1,
      "replay-per-batch", 3, NULL);
  msg = start_error (&f);
  fail_unless (strstr (msg, "replay-per-batch=3 is over replay-size=1"),
      "%s", msg);
  g_free (msg);
  fixture_stop (&f);
  fixture_clear (&f);

  /* a file without a buffer */
  fixture_init (&f, wide_ini);
  g_object_set (f.trainer, "num-training-samples", 4, "replay-file",
      f.replay, NULL);
  msg = start_error (&f);
  fail_unless (strstr (msg, "replay-size is 0") && strstr (msg, f.replay),
      "%s", msg);
  g_free (msg);
  fixture_stop (&f);
  fixture_clear (&f);
}

GST_END_TEST;

/* ---- forgetting ------------------------------------------------------ */

/* input 1:1:4 -> fully_connected 3 -> softmax, batch 4 */
static const gchar *cls_ini =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "batch_size = 4\n"
    "loss = cross\n"
    "[Optimizer]\n"
    "type = sgd\n"
    "learning_rate = 0.5\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:1:4\n"
    "[out]\n" "type = fully_connected\n" "unit = 3\n" "activation = softmax\n";

#define CLS_CAPS "other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)\"4:1:1:1,3:1:1:1\",types=(string)\"float32,float32\"," \
  "framerate=(fraction)0/1"

/* sample k of class c: input c lit (class 2: inputs 0 and 1), noise
 * elsewhere */
static void
cls_values (guint k, guint c, gfloat x[4], gfloat y[3])
{
  guint32 r = k * 2654435761u + 12345;
  for (guint i = 0; i < 4; i++) {
    r = r * 1664525u + 1013904223u;
    x[i] = (gfloat) (r >> 8) / (gfloat) (1 << 24) * 0.4f - 0.2f;
  }
  /* class 2 shares its inputs with 0 and 1: learning it alone pulls
   * their samples over */
  if (c == 2) {
    x[0] += 1.0f;
    x[1] += 1.0f;
  } else {
    x[c] += 1.0f;
  }
  for (guint i = 0; i < 3; i++)
    y[i] = i == c;
}

static GstBuffer *
cls_sample (guint k, guint c)
{
  gfloat x[4], y[3];
  GstBuffer *b = gst_buffer_new ();
  cls_values (k, c, x, y);
  gpointer dx = g_memdup2 (x, sizeof x), dy = g_memdup2 (y, sizeof y);
  gst_buffer_append_memory (b, gst_memory_new_wrapped (0, dx, sizeof x, 0,
          sizeof x, dx, g_free));
  gst_buffer_append_memory (b, gst_memory_new_wrapped (0, dy, sizeof y, 0,
          sizeof y, dy, g_free));
  return b;
}

/* One run of 4 epochs of 40 samples of the classes [c0, c1]. */
static void
cls_run (const gchar * ini, const gchar * load, const gchar * save,
    guint replay, const gchar * file, guint c0, guint c1)
{
  GstElement *t = gst_element_factory_make ("tensor_trainer", NULL);
  GstHarness *h;
  g_object_set (t, "model-config", ini, "model-save-path", save,
      "num-training-samples", 40, "epochs", 4, NULL);
  if (load)
    g_object_set (t, "model-load-path", load, NULL);
  if (replay)
    g_object_set (t, "replay-size", replay, "replay-file", file, NULL);
  h = gst_harness_new_with_element (t, "sink", "src");
  gst_harness_set_src_caps_str (h, CLS_CAPS);
  for (guint k = 0; k < 160; k++)
    fail_unless_equals_int (gst_harness_push (h, cls_sample (k,
                c0 + k % (c1 - c0 + 1))), GST_FLOW_OK);
  gst_harness_teardown (h);
  gst_object_unref (t);
}

/* accuracy of the weights in bin on 40 samples of classes 0 and 1 */
static gdouble
cls_old_accuracy (const gchar * ini, const gchar * bin)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (ini, &err);
  guint correct = 0;
  fail_unless (m != NULL, "%s", err.message);
  fail_unless_equals_int (tt_model_compile (m, &err), TT_OK);
  fail_unless_equals_int (tt_model_load_weights (m, bin, &err), TT_OK);
  for (guint b = 0; b < 10; b++) {
    gfloat x[16], y[12];
    const void *in[1] = { x };
    tt_dtype types[1] = { TT_DTYPE_FLOAT32 };
    tt_batch_result r;
    for (guint s = 0; s < 4; s++)
      cls_values (1000 + 4 * b + s, s % 2, x + 4 * s, y + 3 * s);
    fail_unless_equals_int (tt_model_eval_batch (m, 4, in, types, y, &r,
            &err), TT_OK);
    correct += r.correct;
  }
  tt_model_free (m);
  return correct / 40.0;
}

/* Classes 0 and 1 first (keeping 16 of their samples), then class 2
 * alone: without replay the old classes are forgotten, with it kept. */
GST_START_TEST (test_forgetting)
{
  gchar *dir = g_dir_make_tmp ("tt-forget-XXXXXX", NULL);
  gchar *ini = g_build_filename (dir, "cls.ini", NULL);
  gchar *a = g_build_filename (dir, "a.bin", NULL);
  gchar *plain = g_build_filename (dir, "plain.bin", NULL);
  gchar *mixed = g_build_filename (dir, "mixed.bin", NULL);
  gchar *file = g_build_filename (dir, "old.replay", NULL);
  gdouble before, without, with;

  fail_unless (g_file_set_contents (ini, cls_ini, -1, NULL));
  cls_run (ini, NULL, a, 16, file, 0, 1);
  cls_run (ini, a, plain, 0, NULL, 2, 2);
  cls_run (ini, a, mixed, 16, file, 2, 2);
  before = cls_old_accuracy (ini, a);
  without = cls_old_accuracy (ini, plain);
  with = cls_old_accuracy (ini, mixed);
  GST_INFO ("old classes: %g after A, %g after B alone, %g after B with "
      "replay", before, without, with);
  fail_unless (before > 0.9, "classes 0 and 1 not learnt: %g", before);
  fail_unless (without < 0.5, "class 2 alone did not forget: %g", without);
  fail_unless (with > 0.9 && with > without + 0.4,
      "replay did not keep the old classes: %g (%g without)", with, without);
  tt_gst_remove_dir (dir);
  g_free (dir);
  g_free (ini);
  g_free (a);
  g_free (plain);
  g_free (mixed);
  g_free (file);
}

GST_END_TEST;

static Suite *
replay_suite (void)
{
  Suite *s = suite_create ("replay");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_reservoir_statistics);
  tcase_add_test (tc, test_reservoir_seed_and_picks);
  tcase_add_test (tc, test_batch_composition);
  tcase_add_test (tc, test_file_round_trip);
  tcase_add_test (tc, test_refusals);
  tcase_add_test (tc, test_forgetting);
  return s;
}

GST_CHECK_MAIN (replay);
