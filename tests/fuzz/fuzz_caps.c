/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: `other/tensors` caps (gst/gsttensorinfo.c,
 * gst_tensors_desc_from_caps). The input is a caps string: GStreamer's
 * gst_caps_from_string, then the plugin's parser.
 *
 * Checks: no crash, leak or GLib critical; a refusal has a message and an
 * acceptance none; an accepted description holds gsttensorinfo.h's
 * invariants (static: 1..16 tensors, each of rank 1..16 with non-zero
 * dimensions, a known type and a byte size that fits, computed here
 * independently; flexible: no tensor, num_tensors 0..16), and a static
 * one printed back as caps (gst_tensors_desc_to_caps) parses to the same
 * tensors (dimensions past the rank count as 1).
 *
 * Inputs with more than 8 '[' are skipped: GStreamer 1.22's
 * gst_caps_from_string backtracks through nested brackets in exponential
 * time (a 1.5 KB string with 37 of them took 30 s, all inside GStreamer's
 * parser), and so are inputs nesting lists ('{', '<') more than 8 deep:
 * the same parser leaks on those it refuses (about 10 KB each, 2 GB in a
 * few seconds when leak checks are off). That is GStreamer's string
 * parsing, which the elements never run on stream data: they receive
 * GstCaps, which is what the plugin's parser takes (tensor_datasrc, which
 * does parse a caps string from a file, refuses nesting beyond 4 before
 * GStreamer sees it).
 */
#include "fuzz_gst.h"

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static size_t
fuzz_count_byte (const uint8_t * data, size_t size, uint8_t byte)
{
  size_t n = 0;
  for (size_t i = 0; i < size; i++)
    n += data[i] == byte;
  return n;
}

/* The deepest nesting of '{' and '<' lists (quoted text skipped). */
static size_t
fuzz_list_depth (const uint8_t * data, size_t size)
{
  size_t depth = 0, deepest = 0;
  int quoted = 0;
  for (size_t i = 0; i < size; i++) {
    if (quoted) {
      if (data[i] == '\\' && i + 1 < size)
        i++;
      else if (data[i] == '"')
        quoted = 0;
    } else if (data[i] == '"') {
      quoted = 1;
    } else if (data[i] == '{' || data[i] == '<') {
      if (++depth > deepest)
        deepest = depth;
    } else if ((data[i] == '}' || data[i] == '>') && depth > 0) {
      depth--;
    }
  }
  return deepest;
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  fuzz_gst_init ();
  return 0;
}

/* The same tensor, dimensions past the rank counted as 1. */
static gboolean
fuzz_same_tensor (const GstTensorDesc * a, const GstTensorDesc * b)
{
  if (a->type != b->type)
    return FALSE;
  for (guint i = 0; i < GST_TENSOR_RANK_LIMIT; i++)
    if ((i < a->rank ? a->dims[i] : 1) != (i < b->rank ? b->dims[i] : 1))
      return FALSE;
  return TRUE;
}

static void
fuzz_check_tensors (const GstTensorsDesc * desc)
{
  if (desc->format == GST_TENSOR_FORMAT_FLEXIBLE) {
    FUZZ_CHECK (desc->num <= GST_TENSOR_MAX_TENSORS, "flexible, %u tensors",
        desc->num);
    return;
  }
  FUZZ_CHECK (desc->format == GST_TENSOR_FORMAT_STATIC, "format %d",
      (int) desc->format);
  FUZZ_CHECK (desc->num >= 1 && desc->num <= GST_TENSOR_MAX_TENSORS,
      "static, %u tensors", desc->num);
  for (guint i = 0; i < desc->num; i++)
    fuzz_gst_check_desc (&desc->tensors[i]);
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  if (size > 4096 || fuzz_count_byte (data, size, '[') > 8 ||
      fuzz_list_depth (data, size) > 8)
    return 0;
  gchar *text = fuzz_gst_string (data, size);
  GstCaps *caps = fuzz_gst_caps_from_string (text);
  g_free (text);
  if (!caps)
    return 0;
  GstTensorsDesc desc;
  gchar *error = (gchar *) "untouched";
  gboolean ok = gst_tensors_desc_from_caps (caps, &desc, &error);
  FUZZ_CHECK (GST_MINI_OBJECT_REFCOUNT_VALUE (caps) == 1, "the parser kept "
      "a reference to the caps");
  gst_caps_unref (caps);
  if (!ok) {
    fuzz_gst_check_error (error);
    g_free (error);
    return 0;
  }
  FUZZ_CHECK (error == NULL, "accepted with the message %s", error);
  fuzz_check_tensors (&desc);
  if (desc.format != GST_TENSOR_FORMAT_STATIC)
    return 0;

  /* printed and parsed again: the same tensors */
  GstCaps *back = gst_tensors_desc_to_caps (&desc, 0, 1);
  gchar *s = gst_caps_to_string (back);
  GstTensorsDesc again;
  ok = gst_tensors_desc_from_caps (back, &again, &error);
  FUZZ_CHECK (ok, "%s does not parse: %s", s, error);
  FUZZ_CHECK (again.num == desc.num, "%s: %u tensors, not %u", s, again.num,
      desc.num);
  for (guint i = 0; i < desc.num; i++)
    FUZZ_CHECK (fuzz_same_tensor (&desc.tensors[i], &again.tensors[i]),
        "%s: tensor %u changed", s, i);
  /* and through the string */
  GstCaps *parsed = gst_caps_from_string (s);
  FUZZ_CHECK (parsed && gst_caps_is_equal (parsed, back), "%s does not "
      "parse back as itself", s);
  gst_caps_unref (parsed);
  g_free (s);
  gst_caps_unref (back);
  return 0;
}
