/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The plugin loads beside nnstreamer: every GObject type name nnstreamer
 * registers is taken (by decoy types) before GStreamer loads this plugin,
 * and all five elements still load and work. A type name registered twice
 * makes the second plugin's plugin_init fail, and GStreamer then
 * blacklists that whole plugin in its registry cache: with nnstreamer
 * installed, one of the two plugins disappeared.
 */
#include <gst/check/gstcheck.h>
#include <string.h>

/* The GType names of nnstreamer 2.7 (commit 5b13ea6: its G_DEFINE_TYPE
 * and g_*_register_static calls under gst/ and ext/), and of its plugin's
 * enums. */
static const gchar *nnstreamer_type_names[] = {
  "GstAMCSrc", "GstDataRepoSink", "GstDataRepoSrc", "GstEdgeSink",
  "GstEdgeSrc", "GstJoin", "GstJoinPad", "GstMqttSink", "GstMqttSrc",
  "GstTensorAggregator", "GstTensorAllocator", "GstTensorConverter",
  "GstTensorCrop", "GstTensorDebug", "GstTensorDecoder", "GstTensorDemux",
  "GstTensorFilter", "GstTensorIf", "GstTensorMerge", "GstTensorMux",
  "GstTensorQueryClient", "GstTensorQueryServerSink",
  "GstTensorQueryServerSrc", "GstTensorRate", "GstTensorRepoSink",
  "GstTensorRepoSrc", "GstTensorSink", "GstTensorSinkGRPC",
  "GstTensorSparseDec", "GstTensorSparseEnc", "GstTensorSplit",
  "GstTensorSrcGRPC", "GstTensorSrcIIO", "GstTensorSrcTIZENSENSOR",
  "GstTensorTrainer", "GstTensorTransform", "edge_protocol", "gtd_cap",
  "gtd_meta", "gtd_output", "gtt_mode_type", "sensor_op_modes",
  "sensor_type_e", "tensor_if_behavior", "tensor_if_compared_value",
  "tensor_if_operator", "tensor_query_protocol",
  /* names this plugin used before it took its prefix, which another
   * plugin modelled on nnstreamer's naming could well use */
  "GstTensorDataSrc", "GstTensorPlanner", "GstTensorLabeler",
  "GstTensorPredictor",
};

static const gchar *elements[] = {
  "tensor_trainer", "tensor_datasrc", "tensor_planner", "tensor_labeler",
  "tensor_predictor", "tt_tensor_trainer",
};

static GType decoys[G_N_ELEMENTS (nnstreamer_type_names)];

/* Before gst_init: scanning the plugins loads them into this process when
 * the registry is rebuilt, so the names must be taken first. */
static void
register_decoy_types (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (nnstreamer_type_names); i++) {
    decoys[i] = g_type_register_static_simple (G_TYPE_OBJECT,
        nnstreamer_type_names[i], sizeof (GObjectClass), NULL,
        sizeof (GObject), NULL, 0);
    g_assert (decoys[i] != 0);
  }
}

static gboolean
is_nnstreamer_name (const gchar * name)
{
  for (guint i = 0; i < G_N_ELEMENTS (nnstreamer_type_names); i++)
    if (g_str_equal (name, nnstreamer_type_names[i]))
      return TRUE;
  return FALSE;
}

GST_START_TEST (test_elements_load_beside_nnstreamer_types)
{
  for (guint i = 0; i < G_N_ELEMENTS (elements); i++) {
    GstElement *e = gst_element_factory_make (elements[i], NULL);
    fail_unless (e != NULL, "%s did not load", elements[i]);
    const gchar *type_name = G_OBJECT_TYPE_NAME (e);
    fail_unless (g_str_has_prefix (type_name, "GstTt"),
        "%s: type %s has no project prefix", elements[i], type_name);
    fail_if (is_nnstreamer_name (type_name), "%s", type_name);

    /* enum and flags types of its properties carry the prefix too */
    guint n;
    GParamSpec **specs =
        g_object_class_list_properties (G_OBJECT_GET_CLASS (e), &n);
    for (guint k = 0; k < n; k++) {
      if (specs[k]->owner_type != G_OBJECT_TYPE (e))
        continue;
      GType vt = G_PARAM_SPEC_VALUE_TYPE (specs[k]);
      if (G_TYPE_IS_ENUM (vt) || G_TYPE_IS_FLAGS (vt)) {
        fail_unless (g_str_has_prefix (g_type_name (vt), "GstTt"),
            "%s: property %s: type %s", elements[i], specs[k]->name,
            g_type_name (vt));
      }
    }
    g_free (specs);
    gst_object_unref (e);
  }

  /* the plugin's init ran without failing (no blacklisting) */
  GstPlugin *plugin = gst_registry_find_plugin (gst_registry_get (),
      "tensortrainer");
  fail_unless (plugin != NULL);
  fail_unless (gst_plugin_is_loaded (plugin));
  gst_object_unref (plugin);

  /* the decoys are still what their names resolve to */
  for (guint i = 0; i < G_N_ELEMENTS (nnstreamer_type_names); i++)
    fail_unless_equals_uint64 (g_type_from_name (nnstreamer_type_names[i]),
        decoys[i]);
}

GST_END_TEST;

/* tt_tensor_trainer is this plugin's trainer whichever plugin's
 * tensor_trainer the registry holds (README: "Beside nnstreamer") */
GST_START_TEST (test_unique_trainer_name_is_the_same_element)
{
  GstElement *a = gst_element_factory_make ("tensor_trainer", NULL);
  GstElement *b = gst_element_factory_make ("tt_tensor_trainer", NULL);
  fail_unless (a != NULL && b != NULL);
  fail_unless (G_OBJECT_TYPE (a) == G_OBJECT_TYPE (b));
  gst_object_unref (a);
  gst_object_unref (b);
}

GST_END_TEST;

static Suite *
type_names_suite (void)
{
  Suite *s = suite_create ("type_names");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_elements_load_beside_nnstreamer_types);
  tcase_add_test (tc, test_unique_trainer_name_is_the_same_element);
  return s;
}

int
main (int argc, char **argv)
{
  register_decoy_types ();
  gst_check_init (&argc, &argv);
  return gst_check_run_suite (type_names_suite (), "type_names", __FILE__);
}
