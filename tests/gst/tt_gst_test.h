/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus helpers shared by the element tests: the text of the next error or
 * warning, and the next element message of a given name.
 */
#ifndef TT_GST_TEST_H
#define TT_GST_TEST_H

#include <gst/gst.h>

/* The text of the next message of type (GST_MESSAGE_ERROR or
 * GST_MESSAGE_WARNING) on bus, "" when there is none; g_free it. */
static inline gchar *
tt_gst_pop_text (GstBus * bus, GstMessageType type)
{
  GstMessage *m = gst_bus_pop_filtered (bus, type);
  GError *err = NULL;
  gchar *text;
  if (!m)
    return g_strdup ("");
  if (type == GST_MESSAGE_ERROR)
    gst_message_parse_error (m, &err, NULL);
  else
    gst_message_parse_warning (m, &err, NULL);
  text = g_strdup (err->message);
  g_error_free (err);
  gst_message_unref (m);
  return text;
}

/* The next element message called name on bus (the ones before it are
 * dropped), or NULL; unref it. */
static inline GstMessage *
tt_gst_pop_named (GstBus * bus, const gchar * name)
{
  GstMessage *m;
  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *s = gst_message_get_structure (m);
    if (s && gst_structure_has_name (s, name))
      return m;
    gst_message_unref (m);
  }
  return NULL;
}

#endif /* TT_GST_TEST_H */
