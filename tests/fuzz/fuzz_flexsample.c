/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: one sample of flexible tensors
 * (gst/gsttensorflexsample.c, gst_tensor_flex_sample_read, what
 * tensor_trainer and tensor_predictor read format=flexible buffers with).
 *
 * Input: byte 0 picks min (bits 0-1) and max - min (bits 2-3) of the
 * tensors wanted, and whether a check refuses float16 tensors (bit 4);
 * byte 1 (low 2 bits) how many cuts split the buffer into memories, each
 * cut a 16-bit position in the bytes after it (modulo the payload); the
 * rest is the buffer's bytes.
 *
 * Checks: a refusal is a sentence (the check's own, exactly, when the
 * check refused); an accepted sample holds min..max tensors whose headers
 * parse to valid tensors, whose data start right after their headers and
 * whose headers and data tile the whole buffer in order; with one memory
 * per tensor (between min and max memories, more than one) each tensor
 * fills its memory exactly; the check saw every tensor, in order.
 */
#include "fuzz_gst.h"
#include "gsttensorflexsample.h"

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  fuzz_gst_init ();
  return 0;
}

typedef struct
{
  gboolean refuse_float16;
  guint seen;                   /* tensors checked, in order */
  gboolean refused;
} FuzzCheck;

#define FUZZ_REFUSAL "refused by the check."

static gboolean
fuzz_check_tensor (guint i, const GstTensorDesc * desc, gpointer user_data,
    gchar ** why)
{
  FuzzCheck *c = user_data;
  FUZZ_CHECK (i == c->seen, "tensor %u checked after %u", i, c->seen);
  fuzz_gst_check_desc (desc);
  c->seen++;
  if (c->refuse_float16 && desc->type == GST_TENSOR_TYPE_FLOAT16) {
    c->refused = TRUE;
    *why = g_strdup (FUZZ_REFUSAL);
    return FALSE;
  }
  return TRUE;
}

static void
fuzz_free_copy (gpointer p)
{
  g_free (p);
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  if (size < 2 || size > 65536)
    return 0;
  const guint min = data[0] & 3, max = min + ((data[0] >> 2) & 3);
  FuzzCheck check = { (data[0] >> 4) & 1, 0, FALSE };
  guint ncuts = data[1] & 3;
  if (size < 2 + 2 * (gsize) ncuts)
    return 0;
  const uint8_t *payload = data + 2 + 2 * ncuts;
  const gsize n = size - 2 - 2 * ncuts;
  gsize cuts[5] = { 0 };
  guint k = 0;
  for (guint c = 0; c < ncuts; c++) {
    gsize at = n ? (gsize) (data[2 + 2 * c] | data[3 + 2 * c] << 8) % n : 0;
    /* sorted; equal cuts make no memory */
    guint j = k++;
    while (j > 0 && cuts[j - 1] > at) {
      cuts[j] = cuts[j - 1];
      j--;
    }
    cuts[j] = at;
  }
  cuts[k] = n;
  GstBuffer *buf = gst_buffer_new ();
  gsize from = 0;
  for (guint c = 0; c <= k; c++) {
    gsize len = cuts[c] - from;
    if (len == 0)
      continue;
    gpointer copy = g_memdup2 (payload + from, len);
    gst_buffer_append_memory (buf, gst_memory_new_wrapped (0, copy, len, 0,
            len, copy, fuzz_free_copy));
    from = cuts[c];
  }

  GstTensorFlexSample sample;
  gchar *why = (gchar *) "untouched";
  gboolean ok = gst_tensor_flex_sample_read (buf, min, max, min,
      fuzz_check_tensor, &check, &sample, &why);
  if (!ok) {
    fuzz_gst_check_error (why);
    if (check.refused)
      FUZZ_CHECK (strcmp (why, FUZZ_REFUSAL) == 0, "the check refused, "
          "the reader says %s", why);
    else
      FUZZ_CHECK (g_str_has_prefix (why, "Wrong buffer size: ") ||
          g_str_has_prefix (why, "Bad flexible tensor header: "),
          "refusal %s", why);
    g_free (why);
    gst_buffer_unref (buf);
    return 0;
  }
  FUZZ_CHECK (why == NULL, "accepted with the message %s", why);
  FUZZ_CHECK (!check.refused, "accepted after the check refused");
  FUZZ_CHECK (sample.num >= min && sample.num <= max, "%u tensors, wanted "
      "%u..%u", sample.num, min, max);
  FUZZ_CHECK (check.seen == sample.num, "%u tensors checked, %u read",
      check.seen, sample.num);
  const guint n_mem = gst_buffer_n_memory (buf);
  const gboolean per_memory = n_mem > 1 && n_mem >= min && n_mem <= max;
  gsize at = 0, mem_at = 0;
  for (guint i = 0; i < sample.num; i++) {
    const GstTensorDesc *t = &sample.tensors[i];
    fuzz_gst_check_desc (t);
    if (per_memory)
      FUZZ_CHECK (at == mem_at, "tensor %u starts at byte %" G_GSIZE_FORMAT
          ", its memory at %" G_GSIZE_FORMAT, i, at, mem_at);
    guint8 header[GST_TENSOR_META_HEADER_SIZE];
    FUZZ_CHECK (gst_buffer_extract (buf, at, header, sizeof header) ==
        sizeof header, "tensor %u: no header at %" G_GSIZE_FORMAT, i, at);
    GstTensorDesc again;
    gchar *bad = NULL;
    FUZZ_CHECK (gst_tensor_meta_parse (header, &again, &bad) &&
        memcmp (&again, t, sizeof again) == 0, "tensor %u: its header at %"
        G_GSIZE_FORMAT " says otherwise", i, at);
    at += sizeof header;
    FUZZ_CHECK (sample.offsets[i] == at, "tensor %u: data at %"
        G_GSIZE_FORMAT ", its header ends at %" G_GSIZE_FORMAT, i,
        sample.offsets[i], at);
    at += gst_tensor_desc_bytes (t);
    if (per_memory)
      mem_at += gst_memory_get_sizes (gst_buffer_peek_memory (buf, i), NULL,
          NULL);
  }
  FUZZ_CHECK (at == n, "the tensors make %" G_GSIZE_FORMAT " bytes of %"
      G_GSIZE_FORMAT, at, n);
  if (per_memory)
    FUZZ_CHECK (sample.num == n_mem && mem_at == n, "%u tensors in %u "
        "memories", sample.num, n_mem);
  gst_buffer_unref (buf);
  return 0;
}
