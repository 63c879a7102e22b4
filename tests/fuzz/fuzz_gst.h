/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the fuzz targets of the GStreamer plugin's parsers (caps,
 * flexheader, datarepo): GStreamer initialized without plugins (no
 * registry is read, written or scanned: the parsers need only the core
 * types), and GLib's criticals and warnings made fatal, so that a
 * g_return_if_fail tripped by a fuzz input is a crash, not a log line.
 */
#ifndef TT_FUZZ_GST_H
#define TT_FUZZ_GST_H

#include "fuzz_check.h"

#include "gsttensorinfo.h"

#include <gst/gst.h>
#include <stdint.h>
#include <string.h>

/* GStreamer's own parser (gst_caps_from_string) reports some inputs with a
 * critical (an invalid structure name, for one) and returns NULL: its
 * business, not the plugin's; set while it runs. */
static gboolean fuzz_gst_in_core;

static void
fuzz_gst_log (const gchar * domain, GLogLevelFlags level,
    const gchar * message, gpointer data)
{
  (void) data;
  if (!(level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL |
              G_LOG_LEVEL_WARNING)))
    return;
  if (fuzz_gst_in_core && domain && !strcmp (domain, "GStreamer"))
    return;
  fprintf (stderr, "fuzz invariant failed: a GLib %s from %s: %s\n",
      level & G_LOG_LEVEL_WARNING ? "warning" : "critical",
      domain ? domain : "(no domain)", message);
  abort ();
}

FUZZ_HELPER void
fuzz_gst_init (void)
{
  setenv ("GST_REGISTRY_UPDATE", "no", 1);
  setenv ("GST_REGISTRY", "/dev/null", 1);
  setenv ("GST_PLUGIN_SYSTEM_PATH_1_0", "", 1);
  setenv ("GST_PLUGIN_PATH_1_0", "", 1);
  setenv ("GST_REGISTRY_FORK", "no", 1);
  gst_init (NULL, NULL);
  g_log_set_default_handler (fuzz_gst_log, NULL);
}

/* gst_caps_from_string with GStreamer's own criticals tolerated. */
FUZZ_HELPER GstCaps *
fuzz_gst_caps_from_string (const gchar * s)
{
  fuzz_gst_in_core = TRUE;
  GstCaps *caps = gst_caps_from_string (s);
  fuzz_gst_in_core = FALSE;
  return caps;
}

/* A NUL-terminated copy of the input (free with g_free). */
FUZZ_HELPER gchar *
fuzz_gst_string (const uint8_t * data, size_t size)
{
  gchar *s = g_malloc (size + 1);
  memcpy (s, data, size);
  s[size] = '\0';
  return s;
}

/* An error is a non-empty sentence. */
FUZZ_HELPER void
fuzz_gst_check_error (const gchar * error)
{
  FUZZ_CHECK (error != NULL && error[0] != '\0', "a refusal without a "
      "message");
}

/* A parsed tensor holds gsttensorinfo.h's invariant: rank 1..16, every
 * dimension non-zero, a known type, and a byte size that fits (computed
 * here independently). */
FUZZ_HELPER void
fuzz_gst_check_desc (const GstTensorDesc * d)
{
  FUZZ_CHECK (d->rank >= 1 && d->rank <= GST_TENSOR_RANK_LIMIT, "rank %u",
      d->rank);
  unsigned __int128 bytes = gst_tensor_type_size (d->type);
  FUZZ_CHECK (bytes > 0, "type %d has no size", (int) d->type);
  for (guint i = 0; i < d->rank; i++) {
    FUZZ_CHECK (d->dims[i] > 0, "dimension %u is 0", i);
    bytes *= d->dims[i];
    if (bytes > G_MAXSIZE)
      bytes = (unsigned __int128) G_MAXSIZE + 1;
  }
  FUZZ_CHECK (bytes <= G_MAXSIZE && gst_tensor_desc_bytes (d) == bytes,
      "%" G_GSIZE_FORMAT " bytes, expected %s", gst_tensor_desc_bytes (d),
      bytes > G_MAXSIZE ? "an overflow refused" : "the product");
  /* its own dimensions as channel:height:width match it */
  if (d->rank <= 3)
    FUZZ_CHECK (gst_tensor_desc_matches_shape (d, d->rank > 2 ? d->dims[2] :
            1, d->rank > 1 ? d->dims[1] : 1, d->dims[0]), "does not match "
        "its own shape");
  /* a flat shape of as many elements matches any layout */
  guint64 count = gst_tensor_desc_count (d);
  if (count <= G_MAXUINT32)
    FUZZ_CHECK (gst_tensor_desc_matches_shape (d, 1, 1, (guint32) count),
        "does not match the flat 1:1:%" G_GUINT64_FORMAT, count);
}

#endif
