/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The replay buffer (gsttensorreplay.h). Its file, all integers little
 * endian:
 *   0   8  "TTREPLAY"
 *   8   4  version (1)
 *   12  4  tensors per sample (T)
 *   16  8  samples seen (offered to the reservoir, over all runs)
 *   24  4  samples stored (N)
 *   28  4  0
 *   32  8T bytes of each tensor in a sample
 *   then N samples, each its T tensors back to back (as the trainer
 *   feeds the model: float32 inputs, the float32 label)
 *   then 4  CRC-32 (zlib's) of every byte before it.
 * The buffer keeps the file's image in one block, so a save writes it as
 * it is. */
#include "gsttensorreplay.h"

#include <string.h>
#include <zlib.h>

#define REPLAY_FIXED_HEADER 32

static guint64
replay_next (GstTensorReplay * r)
{
  guint64 z = (r->rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* uniform in [0, n), n >= 1 */
static guint64
replay_below (GstTensorReplay * r, guint64 n)
{
  return replay_next (r) % n;
}

gsize
gst_tensor_replay_footprint (guint n_tensors, const gsize * bytes,
    guint capacity)
{
  gsize per = 0;
  for (guint i = 0; i < n_tensors; i++)
    per += bytes[i];
  return REPLAY_FIXED_HEADER + 8 * (gsize) n_tensors + per * capacity + 4 +
      sizeof (guint32) * (gsize) capacity;
}

gboolean
gst_tensor_replay_init (GstTensorReplay * r, guint n_tensors,
    const gsize * bytes, guint capacity, guint64 seed)
{
  memset (r, 0, sizeof *r);
  g_return_val_if_fail (n_tensors >= 1
      && n_tensors <= GST_TENSOR_REPLAY_MAX_TENSORS, FALSE);
  r->n_tensors = n_tensors;
  for (guint i = 0; i < n_tensors; i++) {
    r->bytes[i] = bytes[i];
    r->sample_bytes += bytes[i];
  }
  r->capacity = capacity;
  r->rng = seed;
  r->header_bytes = REPLAY_FIXED_HEADER + 8 * (gsize) n_tensors;
  if (r->sample_bytes && capacity > (G_MAXSIZE - r->header_bytes - 4) /
      r->sample_bytes)
    return FALSE;
  r->block = g_try_malloc0 (r->header_bytes + r->sample_bytes * capacity + 4);
  r->order = g_try_new (guint32, MAX (capacity, 1));
  if (!r->block || !r->order) {
    gst_tensor_replay_clear (r);
    return FALSE;
  }
  for (guint i = 0; i < capacity; i++)
    r->order[i] = i;
  return TRUE;
}

void
gst_tensor_replay_clear (GstTensorReplay * r)
{
  g_clear_pointer (&r->block, g_free);
  g_clear_pointer (&r->order, g_free);
  r->count = 0;
  r->capacity = 0;
}

static guint8 *
replay_slot (const GstTensorReplay * r, guint i)
{
  return r->block + r->header_bytes + r->sample_bytes * (gsize) i;
}

/* Algorithm R: the first capacity samples fill the slots; sample t
 * (0-based) then replaces a random slot with probability capacity/(t+1). */
guint8 *
gst_tensor_replay_offer (GstTensorReplay * r)
{
  const guint64 t = r->seen++;
  guint64 j;
  if (r->capacity == 0)
    return NULL;
  if (r->count < r->capacity)
    return replay_slot (r, r->count++);
  j = replay_below (r, t + 1);
  return j < r->capacity ? replay_slot (r, (guint) j) : NULL;
}

const guint8 *
gst_tensor_replay_sample (const GstTensorReplay * r, guint i)
{
  g_return_val_if_fail (i < r->count, NULL);
  return replay_slot (r, i);
}

/* a partial Fisher-Yates shuffle of the first count entries of order,
 * which stay a permutation of 0..count-1 (the rest are untouched) */
void
gst_tensor_replay_pick (GstTensorReplay * r, guint k, guint * out)
{
  g_return_if_fail (k <= r->count);
  for (guint j = 0; j < k; j++) {
    const guint s = j + (guint) replay_below (r, r->count - j);
    const guint32 tmp = r->order[j];
    r->order[j] = r->order[s];
    r->order[s] = tmp;
    out[j] = r->order[j];
  }
}

static gchar *
replay_sizes (guint n, const gsize * bytes)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%u tensor%s of ", n, n == 1 ? "" : "s");
  for (guint i = 0; i < n; i++)
    g_string_append_printf (s, "%s%" G_GSIZE_FORMAT, i ? " + " : "", bytes[i]);
  g_string_append (s, " bytes");
  return g_string_free (s, FALSE);
}

gboolean
gst_tensor_replay_load (GstTensorReplay * r, const gchar * path, gchar ** why)
{
  gchar *data = NULL;
  gsize len = 0, header, sample = 0, expect;
  guint32 version, n_tensors, count, crc;
  guint64 seen;
  gsize bytes[GST_TENSOR_REPLAY_MAX_TENSORS];
  GError *error = NULL;
  gboolean ok = FALSE;
  const guint8 *p;

  if (!g_file_get_contents (path, &data, &len, &error)) {
    *why = g_strdup_printf ("replay-file %s: %s", path, error->message);
    g_error_free (error);
    return FALSE;
  }
  p = (const guint8 *) data;
  if (len < REPLAY_FIXED_HEADER + 4 || memcmp (p,
          GST_TENSOR_REPLAY_MAGIC, 8) != 0) {
    *why = g_strdup_printf ("replay-file %s is not a replay file (no "
        GST_TENSOR_REPLAY_MAGIC " header)", path);
    goto out;
  }
  memcpy (&version, p + 8, 4);
  memcpy (&n_tensors, p + 12, 4);
  memcpy (&seen, p + 16, 8);
  memcpy (&count, p + 24, 4);
  version = GUINT32_FROM_LE (version);
  n_tensors = GUINT32_FROM_LE (n_tensors);
  seen = GUINT64_FROM_LE (seen);
  count = GUINT32_FROM_LE (count);
  if (version != GST_TENSOR_REPLAY_VERSION) {
    *why = g_strdup_printf ("replay-file %s: version %u, this element reads "
        "version %u", path, version, GST_TENSOR_REPLAY_VERSION);
    goto out;
  }
  if (n_tensors == 0 || n_tensors > GST_TENSOR_REPLAY_MAX_TENSORS
      || len < REPLAY_FIXED_HEADER + 8 * (gsize) n_tensors + 4) {
    *why = g_strdup_printf ("replay-file %s: %u tensors per sample "
        "(1 to %u) in a file of %" G_GSIZE_FORMAT " bytes", path, n_tensors,
        GST_TENSOR_REPLAY_MAX_TENSORS, len);
    goto out;
  }
  header = REPLAY_FIXED_HEADER + 8 * (gsize) n_tensors;
  for (guint i = 0; i < n_tensors; i++) {
    guint64 b;
    memcpy (&b, p + REPLAY_FIXED_HEADER + 8 * i, 8);
    bytes[i] = (gsize) GUINT64_FROM_LE (b);
    if (bytes[i] > len) {
      *why = g_strdup_printf ("replay-file %s: tensor %u of %" G_GUINT64_FORMAT
          " bytes in a file of %" G_GSIZE_FORMAT, path, i,
          GUINT64_FROM_LE (b), len);
      goto out;
    }
    sample += bytes[i];
  }
  /* the label (the last tensor) may be shorter: a classifier grown since
   * the file was written (tensor-trainer grow) */
  if (n_tensors != r->n_tensors
      || memcmp (bytes, r->bytes, (n_tensors - 1) * sizeof *bytes) != 0
      || bytes[n_tensors - 1] > r->bytes[n_tensors - 1]) {
    gchar *file = replay_sizes (n_tensors, bytes);
    gchar *model = replay_sizes (r->n_tensors, r->bytes);
    *why = g_strdup_printf ("replay-file %s holds samples of %s; the model "
        "takes %s", path, file, model);
    g_free (file);
    g_free (model);
    goto out;
  }
  expect = header + sample * count + 4;
  if ((sample && count > (len - header) / sample) || len != expect) {
    *why = g_strdup_printf ("replay-file %s: %" G_GSIZE_FORMAT " bytes, "
        "but %u samples of %" G_GSIZE_FORMAT " bytes make a file of %"
        G_GSIZE_FORMAT, path, len, count, sample, expect);
    goto out;
  }
  memcpy (&crc, p + len - 4, 4);
  if (GUINT32_FROM_LE (crc) != (guint32) crc32 (0L, p, (uInt) (len - 4))) {
    *why = g_strdup_printf ("replay-file %s: CRC mismatch (the file is "
        "damaged)", path);
    goto out;
  }
  r->count = MIN (count, r->capacity);
  r->seen = MAX (seen, (guint64) r->count);
  if (sample == r->sample_bytes) {
    memcpy (replay_slot (r, 0), p + header, sample * r->count);
  } else {
    /* each sample's label padded with zeros (the new classes' entries) */
    for (guint i = 0; i < r->count; i++) {
      guint8 *dst = replay_slot (r, i);
      memcpy (dst, p + header + sample * i, sample);
      memset (dst + sample, 0, r->sample_bytes - sample);
    }
  }
  ok = TRUE;
out:
  g_free (data);
  return ok;
}

gboolean
gst_tensor_replay_save (GstTensorReplay * r, const gchar * path, gchar ** why)
{
  guint8 *p = r->block;
  const gsize len = r->header_bytes + r->sample_bytes * r->count + 4;
  guint32 u;
  guint64 v;
  GError *error = NULL;

  memcpy (p, GST_TENSOR_REPLAY_MAGIC, 8);
  u = GUINT32_TO_LE (GST_TENSOR_REPLAY_VERSION);
  memcpy (p + 8, &u, 4);
  u = GUINT32_TO_LE (r->n_tensors);
  memcpy (p + 12, &u, 4);
  v = GUINT64_TO_LE (r->seen);
  memcpy (p + 16, &v, 8);
  u = GUINT32_TO_LE (r->count);
  memcpy (p + 24, &u, 4);
  memset (p + 28, 0, 4);
  for (guint i = 0; i < r->n_tensors; i++) {
    v = GUINT64_TO_LE ((guint64) r->bytes[i]);
    memcpy (p + REPLAY_FIXED_HEADER + 8 * i, &v, 8);
  }
  u = GUINT32_TO_LE ((guint32) crc32 (0L, p, (uInt) (len - 4)));
  memcpy (p + len - 4, &u, 4);
  /* GLib writes a temporary file beside path, syncs and renames it */
  if (!g_file_set_contents (path, (const gchar *) p, (gssize) len, &error)) {
    *why = g_strdup_printf ("replay-file %s: %s", path, error->message);
    g_error_free (error);
    return FALSE;
  }
  return TRUE;
}
