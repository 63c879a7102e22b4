/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_datasrc through GstHarness, on small IDX files written here:
 * caps, ranges, epochs, seeded shuffling that keeps the training and
 * validation ranges apart, image and label formats, and errors; and the
 * same on nnstreamer datarepo files (raw samples + JSON) written here.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <string.h>
#include <zlib.h>

#include "tt_gst_test.h"

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
  fail_unless (g_file_set_contents (images, (gchar *) im->data, im->len, NULL));
  fail_unless (g_file_set_contents (labels, (gchar *) lb->data, lb->len, NULL));
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
      "num_tensors=2,dimensions=(string)\"1:3:2:1,4:1\","
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

/* The orders drawn for seed 7 (20 training samples, epochs 0 to 2) by the
 * element when it held the data set in memory: the streaming reader
 * permutes the same indices, so a seed gives the same run as before. */
GST_START_TEST (test_shuffle_order_unchanged)
{
  static const guint want[3][20] = {
    {4, 1, 2, 15, 16, 18, 9, 6, 13, 3, 8, 5, 19, 12, 17, 10, 11, 0, 14, 7},
    {5, 2, 11, 18, 7, 6, 17, 19, 0, 12, 16, 10, 8, 4, 3, 1, 14, 9, 13, 15},
    {2, 6, 16, 4, 1, 12, 15, 19, 13, 5, 17, 14, 10, 3, 9, 0, 8, 7, 11, 18},
  };
  Files f;
  files_init (&f);
  GArray *a = shuffled_run (&f, 7);
  fail_unless_equals_int (a->len, 90);
  for (guint e = 0; e < 3; e++)
    for (guint i = 0; i < 20; i++)
      fail_unless_equals_int (g_array_index (a, guint, e * 30 + i), want[e][i]);
  g_array_unref (a);
  files_clear (&f);
}

GST_END_TEST;

static void
gzip_file (const gchar * from, const gchar * to)
{
  gchar *bytes;
  gsize len;
  fail_unless (g_file_get_contents (from, &bytes, &len, NULL));
  gzFile z = gzopen (to, "wb");
  fail_unless (z != NULL);
  fail_unless_equals_int (gzwrite (z, bytes, (unsigned) len), (int) len);
  fail_unless_equals_int (gzclose (z), Z_OK);
  g_free (bytes);
}

static guint
dir_entries (const gchar * path)
{
  GDir *d = g_dir_open (path, 0, NULL);
  guint n = 0;
  fail_unless (d != NULL);
  while (g_dir_read_name (d))
    n++;
  g_dir_close (d);
  return n;
}

/* Gzipped files give the samples of the plain ones, in the same shuffled
 * order; their decompressed temporaries leave no name in $TMPDIR while
 * the element runs, nor after. */
GST_START_TEST (test_gzip_temporary)
{
  Files f;
  files_init (&f);
  gchar *tmp = g_build_filename (f.dir, "tmp", NULL);
  gchar *gz_images = g_strconcat (f.images, ".gz", NULL);
  gchar *gz_labels = g_strconcat (f.labels, ".gz", NULL);
  gchar *old_tmp = g_strdup (g_getenv ("TMPDIR"));
  fail_unless (g_mkdir (tmp, 0700) == 0);
  gzip_file (f.images, gz_images);
  gzip_file (f.labels, gz_labels);
  GArray *plain = shuffled_run (&f, 11);
  g_setenv ("TMPDIR", tmp, TRUE);
  GstHarness *h = gst_harness_new ("tensor_datasrc");
  g_object_set (h->element, "location", gz_images, "label-location",
      gz_labels, "num-classes", CLASSES, "num-samples", 20,
      "validation-start-sample", 20, "validation-num-samples", 10, "epochs",
      3, "shuffle", TRUE, "seed", (guint64) 11, "push-list-size", 1, NULL);
  gst_harness_play (h);
  GstBuffer *first = gst_harness_pull (h);
  fail_unless (first != NULL);
  fail_unless_equals_int (dir_entries (tmp), 0);
  guint8 px;
  gst_buffer_extract (first, 0, &px, 1);
  fail_unless_equals_int (px, g_array_index (plain, guint, 0));
  gst_buffer_unref (first);
  GArray *gz = run_to_eos (h);
  gst_harness_teardown (h);
  fail_unless_equals_int (gz->len + 1, plain->len);
  fail_unless (memcmp (gz->data, &g_array_index (plain, guint, 1),
          gz->len * sizeof (guint)) == 0, "gzipped files, other samples");
  fail_unless_equals_int (dir_entries (tmp), 0);
  if (old_tmp)
    g_setenv ("TMPDIR", old_tmp, TRUE);
  else
    g_unsetenv ("TMPDIR");
  g_array_unref (plain);
  g_array_unref (gz);
  g_unlink (gz_images);
  g_unlink (gz_labels);
  g_rmdir (tmp);
  g_free (tmp);
  g_free (gz_images);
  g_free (gz_labels);
  g_free (old_tmp);
  files_clear (&f);
}

GST_END_TEST;

/* A source of location (with labels, or json), streaming (epochs
 * without end), and location cut to keep bytes once the first buffer is
 * out. Exactly one error, whose text is returned; no EOS (a trainer must
 * not take the cut run for a whole one). */
static gchar *
error_after_cut (const gchar * location, const gchar * labels,
    const gchar * json, gsize keep)
{
  GstHarness *h = gst_harness_new ("tensor_datasrc");
  GstBus *bus = gst_bus_new ();
  GError *err = NULL;
  gst_element_set_bus (h->element, bus);
  g_object_set (h->element, "location", location, "epochs", G_MAXUINT,
      "push-list-size", 8, NULL);
  if (labels)
    g_object_set (h->element, "label-location", labels, "num-classes",
        CLASSES, NULL);
  if (json)
    g_object_set (h->element, "json", json, NULL);
  gst_harness_play (h);
  gst_buffer_unref (gst_harness_pull (h));
  fail_unless (truncate (location, (off_t) keep) == 0);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, 20 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  fail_unless (m != NULL);
  fail_unless_equals_int (GST_MESSAGE_TYPE (m), GST_MESSAGE_ERROR);
  gst_message_parse_error (m, &err, NULL);
  gchar *text = g_strdup (err->message);
  g_error_free (err);
  gst_message_unref (m);
  gst_harness_teardown (h);
  gchar *second = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (second, "");
  g_free (second);
  m = gst_bus_pop_filtered (bus, GST_MESSAGE_EOS);
  fail_unless (m == NULL, "EOS after a read error");
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  return text;
}

/* An IDX file truncated while the element streams it: one clear error
 * naming it, not a crash or a short run ending in EOS. (The labels are
 * held from the start: the images are cut, to 10 of their 40 samples.) */
GST_START_TEST (test_truncated_mid_stream)
{
  Files f;
  files_init (&f);
  gchar *msg = error_after_cut (f.images, f.labels, NULL,
      16 + 10 * ROWS * COLS);
  fail_unless (strstr (msg, f.images) && strstr (msg, "truncated or "
          "replaced"), "%s", msg);
  g_free (msg);
  files_clear (&f);
}

GST_END_TEST;

/* In file order the samples of a list are read at once: their images are
 * pieces of one memory; float32 images of a list are each converted. */
GST_START_TEST (test_list_reads_runs)
{
  Files f;
  files_init (&f);
  GstHarness *h = new_src (&f);
  g_object_set (h->element, "start-sample", 5, "num-samples", 10,
      "push-list-size", 4, NULL);
  gst_harness_play (h);
  GstBuffer *b[10];
  for (guint i = 0; i < 10; i++) {
    guint8 px;
    b[i] = gst_harness_pull (h);
    gst_buffer_extract (b[i], 0, &px, 1);
    fail_unless_equals_int (px, 5 + i);
  }
  /* lists of 4, 4 and 2 */
  fail_unless (gst_memory_is_span (gst_buffer_peek_memory (b[0], 0),
          gst_buffer_peek_memory (b[1], 0), NULL));
  fail_unless (gst_memory_is_span (gst_buffer_peek_memory (b[2], 0),
          gst_buffer_peek_memory (b[3], 0), NULL));
  fail_if (gst_memory_is_span (gst_buffer_peek_memory (b[3], 0),
          gst_buffer_peek_memory (b[4], 0), NULL));
  fail_unless (gst_memory_is_span (gst_buffer_peek_memory (b[8], 0),
          gst_buffer_peek_memory (b[9], 0), NULL));
  gst_harness_teardown (h);
  for (guint i = 0; i < 10; i++) {
    /* the buffers outlive the element */
    guint8 px[ROWS * COLS];
    gst_buffer_extract (b[i], 0, px, sizeof px);
    fail_unless_equals_int (px[ROWS * COLS - 1], 5 + i);
    gst_buffer_unref (b[i]);
  }

  h = new_src (&f);
  g_object_set (h->element, "start-sample", 5, "num-samples", 10,
      "push-list-size", 4, "image-format", 1 /* float32 */ , NULL);
  gst_harness_play (h);
  for (guint i = 0; i < 10; i++) {
    GstBuffer *fb = gst_harness_pull (h);
    gfloat px[ROWS * COLS];
    gst_buffer_extract (fb, 0, px, sizeof px);
    fail_unless_equals_float (px[0], (5 + i) / 255.0f);
    fail_unless_equals_float (px[ROWS * COLS - 1], (5 + i) / 255.0f);
    gst_buffer_unref (fb);
  }
  gst_harness_teardown (h);
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
      "1:3:2:1,1:1");
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
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (*text, "no error posted");
  /* the element's own error only, not GstBaseSrc's generic one after it */
  gchar *second = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (second, "");
  g_free (second);
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
  fail_unless (strstr (msg, "overlaps the training range") != NULL, "%s", msg);
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
  /* a property left unset is named */
  msg = start_error (&f, "label-location", NULL, NULL);
  fail_unless (strstr (msg, "label-location is not set") && strstr (msg,
          f.images), "%s", msg);
  g_free (msg);
  msg = start_error (&f, "location", NULL, NULL);
  fail_unless (strstr (msg, "location is not set"), "%s", msg);
  g_free (msg);
  msg = start_error (&f, "validation-location", f.v_images, NULL);
  fail_unless (strstr (msg, "validation-label-location is not set")
      && strstr (msg, f.v_images), "%s", msg);
  g_free (msg);
  files_clear (&f);
}

GST_END_TEST;

/* ---- datarepo files -------------------------------------------------- */

/* The samples of write_idx_pair as a datarepo: per sample the 1:3:2:1
 * uint8 image and the one-hot float32 label, and its JSON (nnstreamer
 * writes "." between tensors). */
static void
write_repo (const gchar * data, const gchar * json, guint count, guint base,
    const gchar * json_extra)
{
  GByteArray *a = g_byte_array_new ();
  for (guint i = 0; i < count; i++) {
    guint8 px[ROWS * COLS];
    gfloat label[CLASSES] = { 0 };
    memset (px, base + i, sizeof px);
    label[(base + i) % CLASSES] = 1.0f;
    g_byte_array_append (a, px, sizeof px);
    g_byte_array_append (a, (guint8 *) label, sizeof label);
  }
  fail_unless (g_file_set_contents (data, (gchar *) a->data, a->len, NULL));
  g_byte_array_unref (a);
  gchar *text = g_strdup_printf ("{\"gst_caps\":\"other/tensors, "
      "format=(string)static, framerate=(fraction)30/1, num_tensors=(int)2, "
      "dimensions=(string)1:%u:%u:1.%u:1:1:1, types=(string)uint8.float32\","
      "\"total_samples\":%u%s}", COLS, ROWS, CLASSES, count,
      json_extra ? json_extra : ",\"sample_size\":22");
  fail_unless (g_file_set_contents (json, text, -1, NULL));
  g_free (text);
}

typedef struct
{
  gchar *dir, *data, *json, *vdata, *vjson;
} Repo;

static void
repo_init (Repo * r)
{
  r->dir = g_dir_make_tmp ("tt-repo-XXXXXX", NULL);
  r->data = g_build_filename (r->dir, "samples.data", NULL);
  r->json = g_build_filename (r->dir, "samples.json", NULL);
  r->vdata = g_build_filename (r->dir, "valid.bin", NULL);
  r->vjson = g_build_filename (r->dir, "valid-meta.json", NULL);
  write_repo (r->data, r->json, N_SAMPLES, 0, NULL);
  write_repo (r->vdata, r->vjson, 8, 100, NULL);
}

static void
repo_clear (Repo * r)
{
  g_unlink (r->data);
  g_unlink (r->json);
  g_unlink (r->vdata);
  g_unlink (r->vjson);
  g_rmdir (r->dir);
  g_free (r->dir);
  g_free (r->data);
  g_free (r->json);
  g_free (r->vdata);
  g_free (r->vjson);
}

/* A datarepo source; json NULL: found beside the .data file. */
static GstHarness *
new_repo_src (const Repo * r, gboolean with_json)
{
  GstHarness *h = gst_harness_new ("tensor_datasrc");
  g_object_set (h->element, "location", r->data, NULL);
  if (with_json)
    g_object_set (h->element, "json", r->json, NULL);
  return h;
}

/* The caps go out in nnstreamer's current form ("4:1"), whether the JSON
 * pads the dimensions to 4 entries (older nnstreamer) or not; a tensor
 * without a trailing 1 keeps its rank. */
GST_START_TEST (test_repo_caps)
{
  const struct
  {
    const gchar *json, *caps;
  } dims[] = {
    {"1:3:2:1.4:1:1:1", "1:3:2:1,4:1"},
    {"1:3:2:1.4:1", "1:3:2:1,4:1"},
    {"1:3:2.4", "1:3:2,4"},
  };
  Repo r;
  repo_init (&r);
  for (guint i = 0; i < G_N_ELEMENTS (dims); i++) {
    gchar *text = g_strdup_printf ("{\"gst_caps\":\"other/tensors, "
        "format=(string)static, num_tensors=(int)2, dimensions=(string)%s, "
        "types=(string)uint8.float32\",\"total_samples\":%u}", dims[i].json,
        N_SAMPLES);
    fail_unless (g_file_set_contents (r.json, text, -1, NULL));
    g_free (text);
    GstHarness *h = new_repo_src (&r, TRUE);
    g_object_set (h->element, "num-samples", 1, NULL);
    gst_harness_play (h);
    GstBuffer *b = gst_harness_pull (h);
    fail_unless_equals_int (gst_buffer_n_memory (b), 2);
    gst_buffer_unref (b);
    GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
    gchar *want_str = g_strdup_printf ("other/tensors,format=static,"
        "num_tensors=2,dimensions=(string)\"%s\","
        "types=(string)\"uint8,float32\",framerate=(fraction)0/1",
        dims[i].caps);
    GstCaps *want = gst_caps_from_string (want_str);
    g_free (want_str);
    fail_unless (gst_caps_is_equal (caps, want), "JSON %s: %" GST_PTR_FORMAT,
        dims[i].json, caps);
    gst_caps_unref (caps);
    gst_caps_unref (want);
    gst_harness_teardown (h);
  }
  repo_clear (&r);
}

GST_END_TEST;

/* The same ranges, epochs, shuffles and validation as from IDX files give
 * the same samples in the same order. */
GST_START_TEST (test_repo_matches_idx)
{
  Files f;
  Repo r;
  files_init (&f);
  repo_init (&r);
  for (guint c = 0; c < 4; c++) {
    GstHarness *hi = new_src (&f), *hr = new_repo_src (&r, c != 1);
    GstHarness *both[2] = { hi, hr };
    for (guint i = 0; i < 2; i++) {
      if (c == 0 || c == 1)
        g_object_set (both[i]->element, "start-sample", 5, "num-samples", 6,
            "epochs", 3, NULL);
      else if (c == 2)
        g_object_set (both[i]->element, "num-samples", 20,
            "validation-start-sample", 20, "validation-num-samples", 10,
            "epochs", 3, "shuffle", TRUE, "seed", (guint64) 7, NULL);
      else
        g_object_set (both[i]->element, "num-samples", 4,
            "validation-location", i ? r.vdata : f.v_images,
            "validation-start-sample", 2, "epochs", 2, NULL);
    }
    if (c == 3) {
      g_object_set (hi->element, "validation-label-location", f.v_labels, NULL);
      g_object_set (hr->element, "validation-json", r.vjson, NULL);
    }
    GArray *a = run_to_eos (hi), *b = run_to_eos (hr);
    fail_unless (a->len > 0);
    fail_unless_equals_int (a->len, b->len);
    fail_unless (memcmp (a->data, b->data, a->len * sizeof (guint)) == 0,
        "case %u: other samples", c);
    g_array_unref (a);
    g_array_unref (b);
    gst_harness_teardown (hi);
    gst_harness_teardown (hr);
  }
  repo_clear (&r);
  files_clear (&f);
}

GST_END_TEST;

/* The samples are read from the file as they are pushed: the tensors of
 * a sample share one memory, and so do the samples of a list in file
 * order; the buffers outlive the element. */
GST_START_TEST (test_repo_read_per_sample)
{
  Repo r;
  repo_init (&r);
  GstHarness *h = new_repo_src (&r, TRUE);
  g_object_set (h->element, "start-sample", 3, "num-samples", 2, NULL);
  gst_harness_play (h);
  GstBuffer *a = gst_harness_pull (h), *b = gst_harness_pull (h);
  guint8 px0;
  gfloat label[CLASSES];
  fail_unless_equals_int (gst_buffer_get_size (a), 22);
  gst_buffer_extract (a, 0, &px0, 1);
  fail_unless_equals_int (px0, 3);
  gst_buffer_extract (b, 0, &px0, 1);
  fail_unless_equals_int (px0, 4);
  gst_buffer_extract (b, 6, label, sizeof label);
  fail_unless_equals_float (label[0], 1.0f);
  GstMemory *m0 = gst_buffer_peek_memory (a, 0);
  GstMemory *m1 = gst_buffer_peek_memory (a, 1);
  fail_unless (gst_memory_is_span (m0, m1, NULL), "tensors of one sample "
      "not in one memory");
  /* in file order the samples of a list are read at once */
  fail_unless (gst_memory_is_span (m1, gst_buffer_peek_memory (b, 0), NULL),
      "two samples of a list not read at once");
  gst_harness_teardown (h);
  /* the buffers outlive the element */
  fail_unless_equals_int (gst_buffer_get_size (a), 22);
  gst_buffer_extract (a, 0, &px0, 1);
  fail_unless_equals_int (px0, 3);
  gst_buffer_unref (a);
  gst_buffer_unref (b);
  repo_clear (&r);
}

GST_END_TEST;

/* The same for a datarepo file cut to 10 of its 40 samples. */
GST_START_TEST (test_repo_truncated_mid_stream)
{
  Repo r;
  repo_init (&r);
  gchar *msg = error_after_cut (r.data, NULL, r.json, 10 * 22);
  fail_unless (strstr (msg, r.data) && strstr (msg, "truncated or "
          "replaced"), "%s", msg);
  g_free (msg);
  repo_clear (&r);
}

GST_END_TEST;

/* The error message of a datarepo source whose start fails; data_bytes
 * of data_text, or of zeros when it is NULL. Exactly one error must be
 * posted. */
static gchar *
repo_error_va (const Repo * r, const gchar * json_text,
    gconstpointer data_text, gsize data_bytes, const gchar * first_prop,
    va_list ap)
{
  GstElement *e = gst_element_factory_make ("tensor_datasrc", NULL);
  GstBus *bus = gst_bus_new ();
  gchar *json = g_build_filename (r->dir, "bad.json", NULL);
  gchar *data = g_build_filename (r->dir, "bad.data", NULL);
  gchar *zeros = g_malloc0 (data_bytes + 1);
  fail_unless (g_file_set_contents (json, json_text, -1, NULL));
  fail_unless (g_file_set_contents (data, data_text ? data_text : zeros,
          data_bytes, NULL));
  g_free (zeros);
  gst_element_set_bus (e, bus);
  g_object_set (e, "location", data, "json", json, NULL);
  if (first_prop)
    g_object_set_valist (G_OBJECT (e), first_prop, ap);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gchar *text = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (*text, "no error posted");
  /* the element's own error only, not GstBaseSrc's generic one after it */
  gchar *second = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless_equals_string (second, "");
  g_free (second);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_unlink (json);
  g_unlink (data);
  g_free (json);
  g_free (data);
  return text;
}

static gchar *
repo_error (const Repo * r, const gchar * json_text, gsize data_bytes,
    const gchar * first_prop, ...)
{
  va_list ap;
  va_start (ap, first_prop);
  gchar *text = repo_error_va (r, json_text, NULL, data_bytes, first_prop,
      ap);
  va_end (ap);
  return text;
}

static gchar *
repo_error_bytes (const Repo * r, const gchar * json_text,
    gconstpointer data, gsize data_bytes, const gchar * first_prop, ...)
{
  va_list ap;
  va_start (ap, first_prop);
  gchar *text = repo_error_va (r, json_text, data, data_bytes, first_prop,
      ap);
  va_end (ap);
  return text;
}

#define GOOD_CAPS "\"gst_caps\":\"other/tensors,format=static,num_tensors=2," \
  "dimensions=(string)1:3:2:1.4:1:1:1,types=(string)uint8.float32\""

GST_START_TEST (test_repo_errors)
{
  Repo r;
  repo_init (&r);
  const struct
  {
    const gchar *json;
    gsize bytes;
    const gchar *says;
  } cases[] = {
    {"{" GOOD_CAPS "}", 22, "\"total_samples\" is missing"},
    {"{" GOOD_CAPS ",\"total_samples\":-3}", 22, "\"total_samples\" is "
          "missing or not a positive integer"},
    {"{\"total_samples\":1}", 22, "no \"gst_caps\""},
    {"{" GOOD_CAPS ",\"total_samples\":2,\"sample_size\":30}", 44,
        "\"sample_size\" is 30 bytes but the tensors of \"gst_caps\" make 22"},
    {"{" GOOD_CAPS ",\"total_samples\":3}", 50, "holds 50 bytes"},
    {"{\"gst_caps\":\"other/tensors,format=flexible\",\"total_samples\":3}",
        66, "flexible tensors need a \"sample_offset\" array"},
    {"{\"gst_caps\":\"video/x-raw\",\"total_samples\":3}", 66,
        "not other/tensors"},
    {"[1, 2]", 22, "not a JSON object"},
    /* refused before GStreamer's parser sees it (it leaks on these) */
    {"{\"gst_caps\":\"other/tensors,d=(buffer){{{{{1}}}}}\","
          "\"total_samples\":3}", 66, "nests lists or ranges more than 4"},
    {"{ \"gst_caps\": ", 22, "Cannot read the datarepo JSON"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *msg = repo_error (&r, cases[i].json, cases[i].bytes, NULL);
    fail_unless (strstr (msg, cases[i].says) != NULL && strstr (msg,
            "bad."), "case %u: %s", i, msg);
    g_free (msg);
  }
  const gchar *good = "{" GOOD_CAPS ",\"total_samples\":2}";
  gchar *msg = repo_error (&r, good, 44, "label-location", "x.idx", NULL);
  fail_unless (strstr (msg, "carry their labels as tensors"), "%s", msg);
  g_free (msg);
  msg = repo_error (&r, good, 44, "image-format", 1, NULL);
  fail_unless (strstr (msg, "image-format and label-format are for IDX"),
      "%s", msg);
  g_free (msg);
  msg = repo_error (&r, good, 44, "num-samples", 1, "validation-start-sample",
      0, "validation-num-samples", 1, NULL);
  fail_unless (strstr (msg, "overlaps the training range"), "%s", msg);
  g_free (msg);
  msg = repo_error (&r, good, 44, "validation-location", "/tmp/none.bin", NULL);
  fail_unless (strstr (msg, "needs validation-json"), "%s", msg);
  g_free (msg);
  repo_clear (&r);
}

GST_END_TEST;

/* The validation file's dimensions may be written in the other form
 * (trailing 1s or not); other shapes are refused. */
GST_START_TEST (test_repo_validation_forms)
{
  Repo r;
  repo_init (&r);
  gchar *text = g_strdup_printf ("{\"gst_caps\":\"other/tensors, "
      "format=(string)static, num_tensors=(int)2, dimensions=(string)"
      "1:3:2.4, types=(string)uint8.float32\",\"total_samples\":8}");
  fail_unless (g_file_set_contents (r.vjson, text, -1, NULL));
  g_free (text);
  GstHarness *h = new_repo_src (&r, TRUE);
  g_object_set (h->element, "num-samples", 2, "validation-location", r.vdata,
      "validation-json", r.vjson, "validation-num-samples", 2, NULL);
  gst_harness_play (h);
  for (guint i = 0; i < 4; i++) {
    GstBuffer *b = gst_harness_pull (h);
    guint8 px0;
    gst_buffer_extract (b, 0, &px0, 1);
    fail_unless_equals_int (px0, i < 2 ? i : 100 + i - 2);
    gst_buffer_unref (b);
  }
  gst_harness_teardown (h);

  text = g_strdup_printf ("{\"gst_caps\":\"other/tensors, "
      "format=(string)static, num_tensors=(int)2, dimensions=(string)"
      "1:2:3.4, types=(string)uint8.float32\",\"total_samples\":8}");
  fail_unless (g_file_set_contents (r.vjson, text, -1, NULL));
  g_free (text);
  gchar *msg = repo_error (&r, "{" GOOD_CAPS ",\"total_samples\":2}", 44,
      "validation-location", r.vdata, "validation-json", r.vjson, NULL);
  fail_unless (strstr (msg, "describe tensors of different shapes or types"),
      "%s", msg);
  g_free (msg);
  repo_clear (&r);
}

GST_END_TEST;

/* ---- flexible datarepo files ---------------------------------------- */

/* tests/gst/data/nns-flexible.{data,json}: recorded with nnstreamer 2.7's
 * datareposink from tensor_mux of two flexible streams, a GRAY8 4x3 frame
 * (1:4:3:1 uint8) and 4, 4, then 2 bytes of a 10-byte file
 * (application/octet-stream, 4, 4, 2 uint8): 3 samples of 2 tensors, each
 * tensor its 128-byte header, then its data. nnstreamer's datareposrc
 * reads the whole file back, in order, as those 6 memories. */
#define FLEX_DATA TT_GST_TEST_DATA "/nns-flexible.data"
#define FLEX_JSON TT_GST_TEST_DATA "/nns-flexible.json"

GST_START_TEST (test_repo_flexible)
{
  const gsize sizes[3][2] = { {140, 132}, {140, 132}, {140, 130} };
  const guint32 last_dim0[3] = { 4, 4, 2 };
  gchar *file;
  gsize file_len, at = 0;
  fail_unless (g_file_get_contents (FLEX_DATA, &file, &file_len, NULL));
  /* json= set, and found beside the .data file */
  for (guint with_json = 0; with_json < 2; with_json++) {
    GstHarness *h = gst_harness_new ("tensor_datasrc");
    g_object_set (h->element, "location", FLEX_DATA, NULL);
    if (with_json)
      g_object_set (h->element, "json", FLEX_JSON, NULL);
    gst_harness_play (h);
    at = 0;
    for (guint i = 0; i < 3; i++) {
      GstBuffer *b = gst_harness_pull (h);
      fail_unless (b != NULL);
      fail_unless_equals_int (gst_buffer_n_memory (b), 2);
      for (guint j = 0; j < 2; j++) {
        GstMemory *m = gst_buffer_peek_memory (b, j);
        GstMapInfo mi;
        fail_unless (gst_memory_map (m, &mi, GST_MAP_READ));
        fail_unless_equals_int (mi.size, sizes[i][j]);
        fail_unless (at + mi.size <= file_len
            && memcmp (mi.data, file + at, mi.size) == 0,
            "sample %u tensor %u: other bytes than the file's", i, j);
        guint32 h32[4];
        memcpy (h32, mi.data, sizeof h32);
        fail_unless_equals_int (h32[0], 0xfeedcced);
        fail_unless_equals_int (h32[3], j ? last_dim0[i] : 1);
        at += mi.size;
        gst_memory_unmap (m, &mi);
      }
      gst_buffer_unref (b);
    }
    fail_unless_equals_int (at, file_len);
    GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
    GstCaps *want = gst_caps_from_string ("other/tensors,format=flexible,"
        "framerate=(fraction)0/1");
    fail_unless (gst_caps_is_equal (caps, want), "%" GST_PTR_FORMAT, caps);
    gst_caps_unref (caps);
    gst_caps_unref (want);
    gst_harness_teardown (h);
  }

  /* ranges pick samples, as for static tensors */
  GstHarness *h = gst_harness_new ("tensor_datasrc");
  g_object_set (h->element, "location", FLEX_DATA, "start-sample", 2,
      "num-samples", 1, "epochs", 2, NULL);
  gst_harness_play (h);
  for (guint e = 0; e < 2; e++) {
    GstBuffer *b = gst_harness_pull (h);
    fail_unless_equals_int (gst_buffer_get_size (b), 140 + 130);
    fail_unless (gst_buffer_memcmp (b, 0, file + 544, 270) == 0);
    gst_buffer_unref (b);
  }
  gst_harness_teardown (h);
  g_free (file);
}

GST_END_TEST;

/* A flexible tensor as datareposink writes it: header and dims[0] bytes. */
static void
append_flex_tensor (GByteArray * a, guint32 magic, guint32 dim0, guint8 value)
{
  guint32 h[32] = { 0 };
  guint8 d[64];
  h[0] = magic;
  h[1] = 0xDE001000;
  h[2] = TT_NNS_UINT8;
  h[3] = dim0;
  h[19] = 1;
  h[20] = 4;
  g_byte_array_append (a, (guint8 *) h, sizeof h);
  memset (d, value, sizeof d);
  g_byte_array_append (a, d, dim0);
}

static gchar *
flex_error (const Repo * r, const gchar * json, const GByteArray * data)
{
  return repo_error_bytes (r, json, data->data, data->len, NULL);
}

#define FLEX_CAPS "\"gst_caps\":\"other/tensors,format=flexible\""

/* Each failure posts one error, naming the file and what is wrong. */
GST_START_TEST (test_repo_flexible_errors)
{
  Repo r;
  repo_init (&r);
  /* two samples: 2 tensors (8 and 4 bytes), then 1 tensor (6 bytes) */
  GByteArray *good = g_byte_array_new ();
  append_flex_tensor (good, 0xfeedcced, 8, 1);
  append_flex_tensor (good, 0xfeedcced, 4, 2);
  append_flex_tensor (good, 0xfeedcced, 6, 3);
  const gchar *good_json = "{" FLEX_CAPS ",\"total_samples\":2,"
      "\"sample_offset\":[0,268],\"tensor_size\":[136,132,134],"
      "\"tensor_count\":[0,2]}";
  const struct
  {
    const gchar *json, *says;
  } json_cases[] = {
    {"{" FLEX_CAPS ",\"total_samples\":2,\"sample_offset\":[0,268],"
          "\"tensor_count\":[0,2]}", "need a \"tensor_size\" array"},
    {"{" FLEX_CAPS ",\"total_samples\":2,\"sample_offset\":[0,268],"
          "\"tensor_size\":[136,132,134]}", "need a \"tensor_count\" array"},
    {"{" FLEX_CAPS ",\"total_samples\":3,\"sample_offset\":[0,268],"
          "\"tensor_size\":[136,132,134],\"tensor_count\":[0,2]}",
        "\"total_samples\" is 3 but \"sample_offset\" lists 2"},
    {"{" FLEX_CAPS ",\"total_samples\":2,\"sample_offset\":[0,-1],"
          "\"tensor_size\":[136,132,134],\"tensor_count\":[0,2]}",
        "\"sample_offset\"[1] is not an integer"},
    {"{" FLEX_CAPS ",\"total_samples\":2,\"sample_offset\":[0,268],"
          "\"tensor_size\":[136,128,134],\"tensor_count\":[0,2]}",
        "\"tensor_size\"[1] is 128 bytes"},
    {"{" FLEX_CAPS ",\"total_samples\":2,\"sample_offset\":[0,268],"
          "\"tensor_size\":[136,132,134],\"tensor_count\":[1,2]}",
        "\"tensor_count\"[0] is 1, not 0"},
    {"{" FLEX_CAPS ",\"total_samples\":2,\"sample_offset\":[0,268],"
          "\"tensor_size\":[136,132,134],\"tensor_count\":[0,3]}",
        "sample 1: \"tensor_count\" goes from 3 to 3"},
    /* past the end of tensor_size (decreasing after) */
    {"{" FLEX_CAPS ",\"total_samples\":2,\"sample_offset\":[0,268],"
          "\"tensor_size\":[136,132,134],\"tensor_count\":[0,9]}",
        "sample 0: \"tensor_count\" goes from 0 to 9 (of 3"},
    {"{" FLEX_CAPS ",\"total_samples\":2,\"sample_offset\":[0,300],"
          "\"tensor_size\":[136,132,134],\"tensor_count\":[0,2]}",
        "end at byte 434"},
    /* the second tensor's header describes 4 bytes of data, the JSON 2 */
    {"{" FLEX_CAPS ",\"total_samples\":2,\"sample_offset\":[0,268],"
          "\"tensor_size\":[136,130,134],\"tensor_count\":[0,2]}",
        "sample 0, tensor 1 (byte 136): its header describes 4:1:1:1 uint8, "
          "4 bytes, but"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (json_cases); i++) {
    gchar *msg = flex_error (&r, json_cases[i].json, good);
    fail_unless (strstr (msg, json_cases[i].says) != NULL
        && strstr (msg, "bad."), "case %u: %s", i, msg);
    g_free (msg);
  }
  /* a header nnstreamer does not write */
  GByteArray *bad = g_byte_array_new ();
  append_flex_tensor (bad, 0xfeedcced, 8, 1);
  append_flex_tensor (bad, 0xdeadbeef, 4, 2);
  append_flex_tensor (bad, 0xfeedcced, 6, 3);
  gchar *msg = flex_error (&r, good_json, bad);
  fail_unless (strstr (msg, "bad.data: sample 0, tensor 1 (byte 136): the "
          "flexible tensor header is wrong: magic is 0xdeadbeef"), "%s", msg);
  g_free (msg);
  g_byte_array_unref (bad);

  /* and the good one reads */
  gchar *json = g_build_filename (r.dir, "good.json", NULL);
  gchar *data = g_build_filename (r.dir, "good.data", NULL);
  fail_unless (g_file_set_contents (json, good_json, -1, NULL));
  fail_unless (g_file_set_contents (data, (gchar *) good->data, good->len,
          NULL));
  GstHarness *h = gst_harness_new ("tensor_datasrc");
  g_object_set (h->element, "location", data, "json", json, NULL);
  gst_harness_play (h);
  GstBuffer *b = gst_harness_pull (h);
  fail_unless_equals_int (gst_buffer_n_memory (b), 2);
  gst_buffer_unref (b);
  b = gst_harness_pull (h);
  fail_unless_equals_int (gst_buffer_n_memory (b), 1);
  fail_unless_equals_int (gst_buffer_get_size (b), 134);
  gst_buffer_unref (b);
  gst_harness_teardown (h);
  g_unlink (json);
  g_unlink (data);
  g_free (json);
  g_free (data);
  g_byte_array_unref (good);
  repo_clear (&r);
}

GST_END_TEST;

/* ---- personalization: classes and per-class ------------------------ */

/* a source of f's files with classes and per-class set */
static GArray *
selected_run (const Files * f, const gchar * classes, guint per_class,
    const gchar * first_prop, ...)
{
  GstHarness *h = new_src (f);
  va_list ap;
  g_object_set (h->element, "classes", classes, "per-class", per_class, NULL);
  if (first_prop) {
    va_start (ap, first_prop);
    g_object_set_valist (G_OBJECT (h->element), first_prop, ap);
    va_end (ap);
  }
  GArray *v = run_to_eos (h);
  gst_harness_teardown (h);
  return v;
}

static void
expect_values (GArray * v, const guint * want, guint n)
{
  fail_unless_equals_int (v->len, n);
  for (guint i = 0; i < n; i++)
    fail_unless_equals_int (g_array_index (v, guint, i), want[i]);
  g_array_unref (v);
}

GST_START_TEST (test_classes_per_class)
{
  Files f;
  files_init (&f);
  /* sample i has label i % 4: classes 1 and 3 are the odd samples */
  GArray *v = selected_run (&f, "1,3", 0, NULL);
  fail_unless_equals_int (v->len, N_SAMPLES / 2);
  for (guint i = 0; i < v->len; i++)
    fail_unless_equals_int (g_array_index (v, guint, i), 2 * i + 1);
  g_array_unref (v);
  /* a range, the first 2 of each class in file order, per epoch */
  const guint two[] = { 2, 3, 6, 7, 2, 3, 6, 7 };
  expect_values (selected_run (&f, "2-3", 2, "epochs", 2, NULL), two, 8);
  /* per-class alone: every class present, with spaces in the list */
  const guint first[] = { 0, 1, 2, 3 };
  expect_values (selected_run (&f, NULL, 1, NULL), first, 4);
  expect_values (selected_run (&f, " 0 - 3 ", 1, NULL), first, 4);
  /* within the range only: samples 10..19 */
  const guint ranged[] = { 12, 16 };
  expect_values (selected_run (&f, "0", 2, "start-sample", 10,
          "num-samples", 10, NULL), ranged, 2);
  /* the validation range of the same files is filtered too */
  const guint shared[] = { 0, 4, 8, 12, 16, 20, 24, 28 };
  expect_values (selected_run (&f, "0", 0, "num-samples", 20,
          "validation-start-sample", 20, "validation-num-samples", 10,
          NULL), shared, 8);
  /* and a validation file of its own (its samples 100.. have label
   * (100 + i) % 4) */
  const guint vfile[] = { 1, 5, 101, 105 };
  expect_values (selected_run (&f, "1", 2, "validation-location",
          f.v_images, "validation-label-location", f.v_labels, NULL), vfile, 4);
  /* shuffled: each epoch a permutation of the same picks */
  v = selected_run (&f, "2", 3, "shuffle", TRUE, "seed", (guint64) 3,
      "epochs", 3, NULL);
  fail_unless_equals_int (v->len, 9);
  for (guint e = 0; e < 3; e++) {
    guint sum = 0;
    for (guint i = 0; i < 3; i++) {
      const guint x = g_array_index (v, guint, 3 * e + i);
      fail_unless (x == 2 || x == 6 || x == 10, "sample %u", x);
      sum += x;
    }
    fail_unless_equals_int (sum, 18);
  }
  g_array_unref (v);
  /* one buffer a push reads the same samples */
  expect_values (selected_run (&f, "2-3", 2, "epochs", 2, "push-list-size",
          1, NULL), two, 8);
  files_clear (&f);
}

GST_END_TEST;

GST_START_TEST (test_classes_errors)
{
  Files f;
  files_init (&f);
  const struct
  {
    const gchar *classes;
    guint per_class;
    const gchar *says;
  } cases[] = {
    {"x", 0, "classes='x' is not a list of classes: write class indices "
          "and ranges separated by commas, e.g. 5-9 or 0,2,4-6 (each below "
          "4)."},
    {"1,", 0, "classes='1,' is not a list of classes"},
    {"1;2", 0, "classes='1;2' is not a list of classes"},
    {"-2", 0, "classes='-2' is not a list of classes"},
    {"3-1", 0, "classes='3-1': the range 3-1 runs backwards"},
    {"0-4", 0, "classes='0-4': class 4 is out of range: classes are 0 to 3 "
          "(below num-classes)."},
    {"99999999999999999999", 0, "is out of range"},
    {"1", 11, "classes='1' per-class=11: the training range (start 0, 40 "
          "samples) of "},
    {NULL, 11, "holds 10 sample(s) of class 0; widen the range or lower "
          "per-class"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *msg = start_error (&f, "classes", cases[i].classes, "per-class",
        cases[i].per_class, NULL);
    fail_unless (strstr (msg, cases[i].says) != NULL, "case %u: %s", i, msg);
    g_free (msg);
  }
  /* a class listed but absent from the range */
  gchar *msg = start_error (&f, "classes", "3", "start-sample", 0,
      "num-samples", 3, NULL);
  fail_unless (strstr (msg, "holds 0 sample(s) of class 3; remove the class "
          "or widen the range") != NULL, "%s", msg);
  g_free (msg);
  /* datarepo files carry no IDX labels to choose by */
  Repo r;
  repo_init (&r);
  GstElement *e = gst_element_factory_make ("tensor_datasrc", NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  g_object_set (e, "location", r.data, "json", r.json, "per-class", 2, NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  msg = tt_gst_pop_text (bus, GST_MESSAGE_ERROR);
  fail_unless (strstr (msg, "classes and per-class choose samples by their "
          "IDX labels") && strstr (msg, r.data), "%s", msg);
  g_free (msg);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  repo_clear (&r);
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
  tcase_add_test (tc, test_shuffle_order_unchanged);
  tcase_add_test (tc, test_gzip_temporary);
  tcase_add_test (tc, test_truncated_mid_stream);
  tcase_add_test (tc, test_list_reads_runs);
  tcase_add_test (tc, test_repo_truncated_mid_stream);
  tcase_add_test (tc, test_validation_files);
  tcase_add_test (tc, test_formats);
  tcase_add_test (tc, test_errors);
  tcase_add_test (tc, test_repo_caps);
  tcase_add_test (tc, test_repo_matches_idx);
  tcase_add_test (tc, test_repo_read_per_sample);
  tcase_add_test (tc, test_repo_errors);
  tcase_add_test (tc, test_repo_validation_forms);
  tcase_add_test (tc, test_repo_flexible);
  tcase_add_test (tc, test_repo_flexible_errors);
  /* personalization: classes and per-class */
  tcase_add_test (tc, test_classes_per_class);
  tcase_add_test (tc, test_classes_errors);
  return s;
}

GST_CHECK_MAIN (tensor_datasrc);
