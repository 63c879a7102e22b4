/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the element tests: the text of the next error or
 * warning, the next element message of a given name, flexible tensors
 * as nnstreamer makes them, and a case's scratch folder removed.
 */
#ifndef TT_GST_TEST_H
#define TT_GST_TEST_H

#include <glib/gstdio.h>
#include <gst/gst.h>
#include <string.h>

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

/* nnstreamer's tensor_type values */
enum
{ TT_NNS_INT32 = 0, TT_NNS_UINT8 = 5, TT_NNS_FLOAT32 = 7 };

/* A flexible tensor in a memory of its own: nnstreamer's 128-byte header
 * (version 1.0, media type tensor), then the data. */
static inline GstMemory *
tt_gst_flex_memory (guint32 nns_type, const guint32 * dims, guint rank,
    gconstpointer data, gsize size)
{
  guint32 h[32] = { 0 };
  GstMemory *mem = gst_allocator_alloc (NULL, sizeof h + size, NULL);
  GstMapInfo m;
  h[0] = 0xfeedcced;
  h[1] = 0xDE001000;            /* version 1.0 */
  h[2] = nns_type;
  for (guint i = 0; i < rank; i++)
    h[3 + i] = dims[i];
  h[19] = 1;                    /* flexible */
  h[20] = 4;                    /* tensor */
  gst_memory_map (mem, &m, GST_MAP_WRITE);
  memcpy (m.data, h, sizeof h);
  memcpy (m.data + sizeof h, data, size);
  gst_memory_unmap (mem, &m);
  return mem;
}

/* The files a case wrote in its folder dir, then the folder. */
static inline void
tt_gst_remove_dir (const gchar * dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  const gchar *name;
  while (d && (name = g_dir_read_name (d))) {
    gchar *p = g_build_filename (dir, name, NULL);
    g_unlink (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  g_rmdir (dir);
}

#endif /* TT_GST_TEST_H */
