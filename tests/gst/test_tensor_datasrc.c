/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_datasrc through GstHarness, on small IDX files written here:
 * caps, ranges, epochs, seeded shuffling that keeps the training and
 * validation ranges apart, image and label formats, and errors.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <string.h>

#define N_SAMPLES 40
#define ROWS 2
#define COLS 3
#define CLASSES 4

typedef struct
{
  gchar *dir, *images, *labels, *v_images, *v_labels;
} Files;

static void
put_be32 (GByteArray * a, guint32 v)
{
  guint8 b[4] = { v >> 24, v >> 16, v >> 8, v };
  g_byte_array_append (a, b, 4);
}

/* Images: every pixel of sample i holds base + i; label: (base + i) % 4. */
static void
write_idx_pair (const gchar * images, const gchar * labels, guint count,
    guint base)
{
  GByteArray *im = g_byte_array_new (), *lb = g_byte_array_new ();
  const guint8 im_head[4] = { 0, 0, 0x08, 3 }, lb_head[4] = { 0, 0, 0x08, 1 };
  g_byte_array_append (im, im_head, 4);
  put_be32 (im, count);
  put_be32 (im, ROWS);
  put_be32 (im, COLS);
  g_byte_array_append (lb, lb_head, 4);
  put_be32 (lb, count);
  for (guint i = 0; i < count; i++) {
    guint8 px[ROWS * COLS], label = (base + i) % CLASSES;
    memset (px, base + i, sizeof px);
    g_byte_array_append (im, px, sizeof px);
    g_byte_array_append (lb, &label, 1);
  }
  fail_unless (g_file_set_contents (images, (gchar *) im->data, im->len,
          NULL));
  fail_unless (g_file_set_contents (labels, (gchar *) lb->data, lb->len,
          NULL));
  g_byte_array_unref (im);
  g_byte_array_unref (lb);
}

static void
files_init (Files * f)
{
  f->dir = g_dir_make_tmp ("tt-datasrc-XXXXXX", NULL);
  f->images = g_build_filename (f->dir, "images.idx", NULL);
  f->labels = g_build_filename (f->dir, "labels.idx", NULL);
  f->v_images = g_build_filename (f->dir, "v-images.idx", NULL);
  f->v_labels = g_build_filename (f->dir, "v-labels.idx", NULL);
  write_idx_pair (f->images, f->labels, N_SAMPLES, 0);
  write_idx_pair (f->v_images, f->v_labels, 8, 100);
}

static void
files_clear (Files * f)
{
  g_unlink (f->images);
  g_unlink (f->labels);
  g_unlink (f->v_images);
  g_unlink (f->v_labels);
  g_rmdir (f->dir);
  g_free (f->dir);
  g_free (f->images);
  g_free (f->labels);
  g_free (f->v_images);
  g_free (f->v_labels);
}

static GstHarness *
new_src (const Files * f)
{
  GstHarness *h = gst_harness_new ("tensor_datasrc");
  g_object_set (h->element, "location", f->images, "label-location",
      f->labels, "num-classes", CLASSES, NULL);
  return h;
}

/* Runs the source to EOS and returns the sample value (pixel) of each
 * buffer, checking every label against it. */
static GArray *
run_to_eos (GstHarness * h)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (guint));
  GstBuffer *b;
  gst_harness_play (h);
  while (gst_harness_pull_until_eos (h, &b) && b) {
    GstMapInfo m;
    guint v;
    gfloat label[CLASSES];
    fail_unless_equals_int (gst_buffer_n_memory (b), 2);
    gst_memory_map (gst_buffer_peek_memory (b, 0), &m, GST_MAP_READ);
    fail_unless_equals_int (m.size, ROWS * COLS);
    v = m.data[0];
    fail_unless_equals_int (m.data[ROWS * COLS - 1], v);
    gst_memory_unmap (gst_buffer_peek_memory (b, 0), &m);
    fail_unless_equals_int (gst_memory_get_sizes (gst_buffer_peek_memory (b,
                1), NULL, NULL), sizeof label);
    gst_buffer_extract (b, ROWS * COLS, label, sizeof label);
    for (guint c = 0; c < CLASSES; c++)
      fail_unless_equals_float (label[c], c == v % CLASSES ? 1.0f : 0.0f);
    g_array_append_val (out, v);
    gst_buffer_unref (b);
  }
  return out;
}

static gboolean
is_permutation_of_range (const guint * v, guint n, guint first)
{
  gboolean seen[256] = { FALSE };
  for (guint i = 0; i < n; i++) {
    if (v[i] < first || v[i] >= first + n || seen[v[i]])
      return FALSE;
    seen[v[i]] = TRUE;
  }
  return TRUE;
}

GST_START_TEST (test_caps)
{
  Files f;
  files_init (&f);
  GstHarness *h = new_src (&f);
  g_object_set (h->element, "num-samples", 1, NULL);
  gst_harness_play (h);
  GstBuffer *b = gst_harness_pull (h);
  gst_buffer_unref (b);
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstCaps *want = gst_caps_from_string ("other/tensors,format=static,"
      "num_tensors=2,dimensions=(string)\"1:3:2:1,4:1:1:1\","
      "types=(string)\"uint8,float32\",framerate=(fraction)0/1");
  fail_unless (gst_caps_is_equal (caps, want), "%" GST_PTR_FORMAT, caps);
  gst_caps_unref (caps);
  gst_caps_unref (want);
  gst_harness_teardown (h);
  files_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_range_and_epochs)
{
  Files f;
  files_init (&f);
  GstHarness *h = new_src (&f);
  g_object_set (h->element, "start-sample", 5, "num-samples", 6, "epochs", 3,
      NULL);
  GArray *v = run_to_eos (h);
  fail_unless_equals_int (v->len, 18);
  for (guint i = 0; i < v->len; i++)
    fail_unless_equals_int (g_array_index (v, guint, i), 5 + i % 6);
  g_array_unref (v);
  gst_harness_teardown (h);

  /* num-samples 0: to the end of the files */
  h = new_src (&f);
  g_object_set (h->element, "start-sample", 30, NULL);
  v = run_to_eos (h);
  fail_unless_equals_int (v->len, 10);
  fail_unless_equals_int (g_array_index (v, guint, 9), 39);
  g_array_unref (v);
  gst_harness_teardown (h);
  files_clear (&f);
}

GST_END_TEST;

static GArray *
shuffled_run (const Files * f, guint64 seed)
{
  GstHarness *h = new_src (f);
  g_object_set (h->element, "num-samples", 20, "validation-start-sample", 20,
      "validation-num-samples", 10, "epochs", 3, "shuffle", TRUE, "seed",
      seed, NULL);
  GArray *v = run_to_eos (h);
  gst_harness_teardown (h);
  return v;
}

GST_START_TEST (test_shuffle)
{
  Files f;
  files_init (&f);
  GArray *a = shuffled_run (&f, 7), *b = shuffled_run (&f, 7),
      *c = shuffled_run (&f, 8);
  fail_unless_equals_int (a->len, 90);
  fail_unless (memcmp (a->data, b->data, a->len * sizeof (guint)) == 0,
      "same seed, other order");
  fail_unless (memcmp (a->data, c->data, a->len * sizeof (guint)) != 0,
      "other seed, same order");
  const guint *v = (const guint *) a->data;
  for (guint e = 0; e < 3; e++) {
    const guint *epoch = v + e * 30;
    /* training: a permutation of 0..19, shuffled; validation: 20..29 */
    fail_unless (is_permutation_of_range (epoch, 20, 0));
    gboolean in_order = TRUE;
    for (guint i = 0; i < 20; i++)
      in_order &= epoch[i] == i;
    fail_if (in_order, "epoch %u not shuffled", e);
    for (guint i = 0; i < 10; i++)
      fail_unless_equals_int (epoch[20 + i], 20 + i);
  }
  fail_unless (memcmp (v, v + 30, 20 * sizeof (guint)) != 0,
      "epochs 1 and 2 in the same order");
  g_array_unref (a);
  g_array_unref (b);
  g_array_unref (c);
  files_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_validation_files)
{
  Files f;
  files_init (&f);
  GstHarness *h = new_src (&f);
  g_object_set (h->element, "num-samples", 4, "validation-location",
      f.v_images, "validation-label-location", f.v_labels,
      "validation-start-sample", 2, "epochs", 2, NULL);
  GArray *v = run_to_eos (h);
  const guint want[] = { 0, 1, 2, 3, 102, 103, 104, 105, 106, 107 };
  fail_unless_equals_int (v->len, 2 * G_N_ELEMENTS (want));
  for (guint i = 0; i < v->len; i++)
    fail_unless_equals_int (g_array_index (v, guint, i),
        want[i % G_N_ELEMENTS (want)]);
  g_array_unref (v);
  gst_harness_teardown (h);
  files_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_formats)
{
  Files f;
  files_init (&f);
  GstHarness *h = new_src (&f);
  g_object_set (h->element, "start-sample", 7, "num-samples", 1,
      "image-format", 1 /* float32 */ , "label-format", 1 /* index */ , NULL);
  gst_harness_play (h);
  GstBuffer *b = gst_harness_pull (h);
  gfloat px[ROWS * COLS], label;
  fail_unless_equals_int (gst_buffer_get_size (b), sizeof px + sizeof label);
  gst_buffer_extract (b, 0, px, sizeof px);
  gst_buffer_extract (b, sizeof px, &label, sizeof label);
  fail_unless_equals_float (px[3], 7.0f / 255.0f);
  fail_unless_equals_float (label, 7 % CLASSES);
  gst_buffer_unref (b);
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstStructure *s = gst_caps_get_structure (caps, 0);
  fail_unless_equals_string (gst_structure_get_string (s, "types"),
      "float32,float32");
  fail_unless_equals_string (gst_structure_get_string (s, "dimensions"),
      "1:3:2:1,1:1:1:1");
  gst_caps_unref (caps);
  gst_harness_teardown (h);
  files_clear (&f);
}

GST_END_TEST;

static gchar *
start_error (const Files * f, const gchar * first_prop, ...)
{
  GstElement *e = gst_element_factory_make ("tensor_datasrc", NULL);
  GstBus *bus = gst_bus_new ();
  va_list ap;
  gst_element_set_bus (e, bus);
  g_object_set (e, "location", f->images, "label-location", f->labels,
      "num-classes", CLASSES, NULL);
  va_start (ap, first_prop);
  g_object_set_valist (G_OBJECT (e), first_prop, ap);
  va_end (ap);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (m != NULL);
  GError *err;
  gst_message_parse_error (m, &err, NULL);
  gchar *text = g_strdup (err->message);
  g_error_free (err);
  gst_message_unref (m);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  return text;
}

GST_START_TEST (test_errors)
{
  Files f;
  files_init (&f);
  gchar *msg = start_error (&f, "num-samples", 20, "validation-start-sample",
      15, "validation-num-samples", 10, NULL);
  fail_unless (strstr (msg, "overlaps the training range") != NULL, "%s",
      msg);
  g_free (msg);
  msg = start_error (&f, "start-sample", 35, "num-samples", 10, NULL);
  fail_unless (strstr (msg, "does not fit the 40 samples") != NULL, "%s", msg);
  g_free (msg);
  msg = start_error (&f, "num-classes", 3, NULL);
  fail_unless (strstr (msg, "label 3 of sample 3 is not below "
          "num-classes=3") != NULL, "%s", msg);
  g_free (msg);
  msg = start_error (&f, "location", "/nonexistent/images.idx", NULL);
  fail_unless (strstr (msg, "/nonexistent/images.idx") != NULL, "%s", msg);
  g_free (msg);
  msg = start_error (&f, "label-location", f.v_labels, NULL);
  fail_unless (strstr (msg, f.v_labels) != NULL, "%s", msg);
  g_free (msg);
  files_clear (&f);
}

GST_END_TEST;

static Suite *
tensor_datasrc_suite (void)
{
  Suite *s = suite_create ("tensor_datasrc");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_caps);
  tcase_add_test (tc, test_range_and_epochs);
  tcase_add_test (tc, test_shuffle);
  tcase_add_test (tc, test_validation_files);
  tcase_add_test (tc, test_formats);
  tcase_add_test (tc, test_errors);
  return s;
}

GST_CHECK_MAIN (tensor_datasrc);
