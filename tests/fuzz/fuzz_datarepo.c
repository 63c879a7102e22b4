/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the datarepo JSON of tensor_datasrc
 * (gst/gsttensordatarepo.c, gst_tensor_datarepo_parse: json-glib, then
 * the caps string inside through gst_caps_from_string and
 * gst_tensors_desc_from_caps). The input is the JSON text.
 *
 * Checks: no crash, leak or GLib critical; a refusal is SYNTAX or FORMAT
 * with a message; the same bytes parsed NUL-terminated (length -1) give
 * the same outcome when they hold no NUL; an accepted description holds
 * gsttensordatarepo.h's invariants, recomputed here: 1 <= total <=
 * G_MAXUINT; static tensors (each as gsttensorinfo.h requires), sizes the
 * tensors' bytes, offsets their prefix sums, sample_size their sum
 * without overflow, and total * sample_size fits a gsize; or flexible
 * tensors, each sample 1..GST_TENSOR_MAX_TENSORS tensors of more than a
 * header's bytes, the tensor indices covering tensor_size in order, no
 * sample's end overflowing and data_end the largest.
 */
#include "fuzz_gst.h"
#include "gsttensordatarepo.h"

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

static void
fuzz_check_flexible (const GstTensorDataRepoInfo * info)
{
  guint64 data_end = 0;
  FUZZ_CHECK (info->sample_offsets && info->first_tensor
      && info->tensor_sizes, "flexible without its arrays");
  FUZZ_CHECK (info->first_tensor[0] == 0, "first tensor %u",
      info->first_tensor[0]);
  FUZZ_CHECK (info->first_tensor[info->total] == info->n_tensors,
      "the tensors end at %u of %u", info->first_tensor[info->total],
      info->n_tensors);
  for (guint64 i = 0; i < info->total; i++) {
    guint first = info->first_tensor[i], next = info->first_tensor[i + 1];
    guint64 end = info->sample_offsets[i];
    FUZZ_CHECK (next > first && next - first <= GST_TENSOR_MAX_TENSORS,
        "sample %" G_GUINT64_FORMAT ": tensors %u..%u", i, first, next);
    for (guint j = first; j < next; j++) {
      FUZZ_CHECK (info->tensor_sizes[j] > GST_TENSOR_META_HEADER_SIZE,
          "tensor %u: %" G_GSIZE_FORMAT " bytes", j, info->tensor_sizes[j]);
      FUZZ_CHECK (!__builtin_add_overflow (end, info->tensor_sizes[j], &end)
          && end <= G_MAXSIZE, "sample %" G_GUINT64_FORMAT " overflows", i);
    }
    data_end = MAX (data_end, end);
  }
  FUZZ_CHECK (info->data_end == data_end, "data_end %" G_GUINT64_FORMAT
      ", the samples end at %" G_GUINT64_FORMAT, info->data_end, data_end);
}

/* The same description, arrays compared by content. */
static gboolean
fuzz_same_info (const GstTensorDataRepoInfo * a,
    const GstTensorDataRepoInfo * b)
{
  GstTensorDataRepoInfo a0 = *a, b0 = *b;
  a0.sample_offsets = b0.sample_offsets = NULL;
  a0.first_tensor = b0.first_tensor = NULL;
  a0.tensor_sizes = b0.tensor_sizes = NULL;
  if (memcmp (&a0, &b0, sizeof a0) != 0)
    return FALSE;
  if (a->desc.format != GST_TENSOR_FORMAT_FLEXIBLE)
    return TRUE;
  return memcmp (a->sample_offsets, b->sample_offsets,
      a->total * sizeof *a->sample_offsets) == 0
      && memcmp (a->first_tensor, b->first_tensor,
      (a->total + 1) * sizeof *a->first_tensor) == 0
      && memcmp (a->tensor_sizes, b->tensor_sizes,
      a->n_tensors * sizeof *a->tensor_sizes) == 0;
}

static void
fuzz_check_info (const GstTensorDataRepoInfo * info)
{
  const GstTensorsDesc *d = &info->desc;
  FUZZ_CHECK (info->total >= 1 && info->total <= G_MAXUINT, "total %"
      G_GUINT64_FORMAT, info->total);
  if (d->format == GST_TENSOR_FORMAT_FLEXIBLE) {
    fuzz_check_flexible (info);
    return;
  }
  FUZZ_CHECK (d->format == GST_TENSOR_FORMAT_STATIC, "format %d",
      (int) d->format);
  FUZZ_CHECK (!info->sample_offsets && !info->first_tensor
      && !info->tensor_sizes, "static with flexible arrays");
  FUZZ_CHECK (d->num >= 1 && d->num <= GST_TENSOR_MAX_TENSORS, "%u tensors",
      d->num);
  gsize sum = 0;
  for (guint i = 0; i < d->num; i++) {
    fuzz_gst_check_desc (&d->tensors[i]);
    FUZZ_CHECK (info->sizes[i] == gst_tensor_desc_bytes (&d->tensors[i]),
        "tensor %u: size %" G_GSIZE_FORMAT, i, info->sizes[i]);
    FUZZ_CHECK (info->offsets[i] == sum, "tensor %u: offset %"
        G_GSIZE_FORMAT ", expected %" G_GSIZE_FORMAT, i, info->offsets[i], sum);
    FUZZ_CHECK (!__builtin_add_overflow (sum, info->sizes[i], &sum),
        "the sample size overflows");
  }
  FUZZ_CHECK (info->sample_size == sum, "sample_size %" G_GSIZE_FORMAT
      ", the tensors make %" G_GSIZE_FORMAT, info->sample_size, sum);
  FUZZ_CHECK (info->total >= 1 && info->total <= G_MAXUINT, "total %"
      G_GUINT64_FORMAT, info->total);
  gsize bytes;
  FUZZ_CHECK (!__builtin_mul_overflow ((gsize) info->total,
          info->sample_size, &bytes), "total * sample_size overflows");
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  if (size > 65536)
    return 0;
  GstTensorDataRepoInfo info;
  gchar *error = (gchar *) "untouched";
  /* GStreamer's criticals on bad caps strings are tolerated (fuzz_caps
   * has the caps; json-glib's and GLib's stay fatal) */
  fuzz_gst_in_core = TRUE;
  GstTensorDataRepoStatus st = gst_tensor_datarepo_parse ((const gchar *)
      data, (gssize) size, &info, &error);
  fuzz_gst_in_core = FALSE;
  if (st != GST_TENSOR_DATAREPO_OK) {
    FUZZ_CHECK (st == GST_TENSOR_DATAREPO_ERROR_SYNTAX ||
        st == GST_TENSOR_DATAREPO_ERROR_FORMAT, "status %d", (int) st);
    fuzz_gst_check_error (error);
  } else {
    FUZZ_CHECK (error == NULL, "accepted with the message %s", error);
    fuzz_check_info (&info);
  }

  /* NUL-terminated, the same bytes parse the same */
  if (!memchr (data, '\0', size)) {
    gchar *text = fuzz_gst_string (data, size);
    GstTensorDataRepoInfo again;
    gchar *error2 = NULL;
    fuzz_gst_in_core = TRUE;
    GstTensorDataRepoStatus st2 = gst_tensor_datarepo_parse (text, -1,
        &again, &error2);
    fuzz_gst_in_core = FALSE;
    FUZZ_CHECK (st2 == st && (st != GST_TENSOR_DATAREPO_OK ||
            fuzz_same_info (&info, &again)),
        "with its length: %d %s; NUL-terminated: %d %s", (int) st,
        st ? error : "OK", (int) st2, st2 ? error2 : "OK");
    g_free (error2);
    g_free (text);
    gst_tensor_datarepo_info_clear (&again);
  }
  if (st != GST_TENSOR_DATAREPO_OK)
    g_free (error);
  gst_tensor_datarepo_info_clear (&info);
  return 0;
}
