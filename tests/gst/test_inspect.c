/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gst-inspect-1.0 of every element of the plugin succeeds and documents
 * every property the element adds: its name and its description appear in
 * the output, and the description says something (not just the name).
 * Also: the element names do not clash with nnstreamer's, except
 * tensor_trainer, which replaces nnstreamer's on purpose.
 */
#include <gst/check/gstcheck.h>
#include <string.h>

static const gchar *elements[] = {
  "tensor_trainer", "tensor_planner", "tensor_datasrc", "tensor_labeler",
  "tensor_predictor",
};

/* nnstreamer's element names (2.x) */
static const gchar *nnstreamer_elements[] = {
  "tensor_converter", "tensor_decoder", "tensor_filter", "tensor_merge",
  "tensor_mux", "tensor_demux", "tensor_split", "tensor_sink",
  "tensor_source", "tensor_src_iio", "tensor_transform", "tensor_aggregator",
  "tensor_repo_sink", "tensor_repo_src", "tensor_if", "tensor_rate",
  "tensor_crop", "tensor_query_client", "tensor_query_serversrc",
  "tensor_query_serversink", "tensor_sparse_enc", "tensor_sparse_dec",
  "tensor_debug", "datareposrc", "datareposink", "join",
  "mqttsrc", "mqttsink", "edgesrc", "edgesink", "tensor_src_grpc",
  "tensor_sink_grpc", "tensor_trainer",
};

GST_START_TEST (test_inspect_documents_properties)
{
  gchar *inspect = g_find_program_in_path ("gst-inspect-1.0");
  if (!inspect) {
    GST_WARNING ("gst-inspect-1.0 not found: skipped");
    return;
  }
  for (guint i = 0; i < G_N_ELEMENTS (elements); i++) {
    gchar *argv[] = { inspect, (gchar *) elements[i], NULL };
    gchar *out = NULL, *err = NULL;
    gint status;
    GError *error = NULL;
    fail_unless (g_spawn_sync (NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
            &out, &err, &status, &error), "%s", error ? error->message : "");
    fail_unless (g_spawn_check_wait_status (status, NULL),
        "gst-inspect-1.0 %s failed: %s", elements[i], err);
    fail_unless (strstr (out, "Factory Details") != NULL, "%s", out);

    GstElement *e = gst_element_factory_make (elements[i], NULL);
    fail_unless (e != NULL, "%s", elements[i]);
    guint n;
    GParamSpec **specs =
        g_object_class_list_properties (G_OBJECT_GET_CLASS (e), &n);
    guint own = 0;
    for (guint k = 0; k < n; k++) {
      const GParamSpec *p = specs[k];
      if (p->owner_type != G_OBJECT_TYPE (e))
        continue;               /* GstObject's name, GstBaseSrc's ... */
      own++;
      const gchar *blurb = g_param_spec_get_blurb ((GParamSpec *) p);
      /* "  name      : blurb" (no blank before ':' for long names) */
      gchar *name_line = g_strdup_printf ("\n  %s ", p->name);
      gchar *name_colon = g_strdup_printf ("\n  %s:", p->name);
      fail_unless (strstr (out, name_line) || strstr (out, name_colon),
          "%s: %s not listed", elements[i], p->name);
      g_free (name_colon);
      fail_unless (blurb && strlen (blurb) >= 25
          && g_ascii_strcasecmp (blurb, p->name) != 0,
          "%s: property %s has no real description", elements[i], p->name);
      /* the description as gst-inspect prints it (its first words) */
      gchar *start = g_strndup (blurb, 25);
      fail_unless (strstr (out, start) != NULL, "%s: %s: \"%s\" not shown",
          elements[i], p->name, start);
      g_free (start);
      g_free (name_line);
    }
    fail_unless (own >= 3, "%s: %u properties", elements[i], own);
    g_free (specs);
    gst_object_unref (e);
    g_free (out);
    g_free (err);
  }
  g_free (inspect);
}

GST_END_TEST;

GST_START_TEST (test_names_do_not_clash)
{
  for (guint i = 0; i < G_N_ELEMENTS (elements); i++) {
    if (g_str_equal (elements[i], "tensor_trainer"))
      continue;
    for (guint k = 0; k < G_N_ELEMENTS (nnstreamer_elements); k++)
      fail_if (g_str_equal (elements[i], nnstreamer_elements[k]), "%s",
          elements[i]);
  }
}

GST_END_TEST;

static Suite *
inspect_suite (void)
{
  Suite *s = suite_create ("inspect");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_inspect_documents_properties);
  tcase_add_test (tc, test_names_do_not_clash);
  return s;
}

GST_CHECK_MAIN (inspect);
