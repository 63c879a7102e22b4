/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the 128-byte header of a flexible tensor
 * (gst/gsttensorinfo.c, gst_tensor_meta_parse and gst_tensor_meta_write).
 * The input is the header (cut or zero-padded to 128 bytes).
 *
 * Checks: a refusal has a message; an accepted header describes a tensor
 * that holds gsttensorinfo.h's invariants, the fields it came from (magic,
 * type, dimensions, zeros after the last one), and written back with
 * gst_tensor_meta_write it parses to the same description, which writes
 * the same bytes again (the round trip is stable).
 */
#include "fuzz_gst.h"

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

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  guint8 header[GST_TENSOR_META_HEADER_SIZE] = { 0 };
  memcpy (header, data, MIN (size, sizeof header));
  GstTensorDesc desc;
  gchar *error = (gchar *) "untouched";
  if (!gst_tensor_meta_parse (header, &desc, &error)) {
    fuzz_gst_check_error (error);
    g_free (error);
    return 0;
  }
  FUZZ_CHECK (error == NULL, "accepted with the message %s", error);
  fuzz_gst_check_desc (&desc);
  guint32 v[GST_TENSOR_META_HEADER_SIZE / 4];
  memcpy (v, header, sizeof v);
  FUZZ_CHECK (v[0] == GST_TENSOR_META_MAGIC, "magic 0x%08x accepted", v[0]);
  for (guint i = 0; i < GST_TENSOR_RANK_LIMIT; i++)
    FUZZ_CHECK (v[3 + i] == (i < desc.rank ? desc.dims[i] : 0),
        "dimension %u: header %u, parsed %u (rank %u)", i, v[3 + i],
        desc.dims[i], desc.rank);

  guint8 out[GST_TENSOR_META_HEADER_SIZE], out2[GST_TENSOR_META_HEADER_SIZE];
  memset (out, 0xa5, sizeof out);
  gst_tensor_meta_write (&desc, out);
  GstTensorDesc again;
  gboolean ok = gst_tensor_meta_parse (out, &again, &error);
  FUZZ_CHECK (ok, "the header written back does not parse: %s", error);
  FUZZ_CHECK (memcmp (&desc, &again, sizeof desc) == 0,
      "the header written back parses differently");
  memcpy (v + 0, out, sizeof v);
  FUZZ_CHECK (memcmp (out + 8, header + 8, 4) == 0, "the type changed");
  for (guint i = 21; i < G_N_ELEMENTS (v); i++)
    FUZZ_CHECK (v[i] == 0, "byte %u of the written header is not zero", i * 4);
  memset (out2, 0x5a, sizeof out2);
  gst_tensor_meta_write (&again, out2);
  FUZZ_CHECK (memcmp (out, out2, sizeof out) == 0, "writing is not stable");
  return 0;
}
