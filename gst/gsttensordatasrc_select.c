/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_datasrc's classes and per-class (personalization: a few shots of
 * some classes): the classes property parsed, and the samples of a range
 * that are pushed picked from its labels, in file order.
 */
#include "gsttensordatasrc_private.h"

#include <string.h>

/* classes or per-class asks for a subset */
gboolean
gst_tensor_datasrc_select_wanted (const gchar * spec, guint per_class)
{
  return (spec && *spec) || per_class > 0;
}

/* "5-9", "0,2,4-6": want[c] set for each class named, each below limit.
 * FALSE after posting an error naming the property. */
static gboolean
gst_tensor_datasrc_parse_classes (GstTtTensorDataSrc * self,
    const gchar * spec, guint limit, gboolean want[256])
{
  const gchar *p = spec;
  memset (want, 0, 256 * sizeof want[0]);
  while (TRUE) {
    guint64 a, b;
    gchar *end;
    while (*p == ' ')
      p++;
    if (!g_ascii_isdigit (*p))
      goto bad;
    a = g_ascii_strtoull (p, &end, 10);
    p = end;
    b = a;
    while (*p == ' ')
      p++;
    if (*p == '-') {
      p++;
      while (*p == ' ')
        p++;
      if (!g_ascii_isdigit (*p))
        goto bad;
      b = g_ascii_strtoull (p, &end, 10);
      p = end;
      while (*p == ' ')
        p++;
    }
    if (a > b) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("classes='%s': the range %" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT
              " runs backwards (write LOW-HIGH).", spec, a, b), (NULL));
      return FALSE;
    }
    if (b >= limit) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("classes='%s': class %" G_GUINT64_FORMAT " is out of range: "
              "classes are 0 to %u (%s).", spec, b, limit - 1,
              self->out_label_format == GST_TENSOR_DATASRC_LABEL_ONEHOT ?
              "below num-classes" : "IDX labels are bytes"), (NULL));
      return FALSE;
    }
    for (guint64 c = a; c <= b; c++)
      want[c] = TRUE;
    if (*p == '\0')
      return TRUE;
    if (*p != ',')
      goto bad;
    p++;
  }
bad:
  GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
      ("classes='%s' is not a list of classes: write class indices and "
          "ranges separated by commas, e.g. 5-9 or 0,2,4-6 (each below %u).",
          spec, limit), (NULL));
  return FALSE;
}

/* Keeps, of set's range, the samples whose label is in spec (all when
 * unset), the first per_class of each class (all when 0), in file order:
 * set->pick and set->count. labels are the file's (indexed by file
 * position). FALSE after posting an error. */
gboolean
gst_tensor_datasrc_select (GstTtTensorDataSrc * self, const gchar * spec,
    guint per_class, GstTtTensorDataSrcSet * set, const guint8 * labels,
    const gchar * file, const gchar * what)
{
  gboolean want[256];
  guint taken[256] = { 0 };
  const guint limit =
      self->out_label_format == GST_TENSOR_DATASRC_LABEL_ONEHOT ?
      MIN (self->classes, 256) : 256;
  const gboolean listed = spec && *spec;
  guint n = 0;

  if (!gst_tensor_datasrc_select_wanted (spec, per_class))
    return TRUE;
  if (listed && !gst_tensor_datasrc_parse_classes (self, spec, limit, want))
    return FALSE;
  if (!listed)
    for (guint c = 0; c < 256; c++)
      want[c] = TRUE;

  set->pick = g_new (guint32, MAX (set->count, 1));
  for (guint i = set->start; i < set->start + set->count; i++) {
    const guint8 c = labels[i];
    if (!want[c] || (per_class && taken[c] >= per_class))
      continue;
    taken[c]++;
    set->pick[n++] = i;
  }
  /* every class asked for has its samples: a class listed, or (per-class
   * alone) one present in the range */
  for (guint c = 0; c < 256; c++) {
    if (!want[c] || (!listed && !taken[c]))
      continue;
    if (!taken[c] || (per_class && taken[c] < per_class)) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("classes='%s' per-class=%u: the %s range (start %u, %u samples) "
              "of %s holds %u sample(s) of class %u%s.", listed ? spec : "",
              per_class, what, set->start, set->count, file, taken[c], c,
              per_class ? "; widen the range or lower per-class" :
              "; remove the class or widen the range"), (NULL));
      return FALSE;
    }
  }
  GST_INFO_OBJECT (self, "%s: %u of the %u samples of the range (classes "
      "'%s', per-class %u)", what, n, set->count, listed ? spec : "all",
      per_class);
  set->count = n;
  return TRUE;
}
