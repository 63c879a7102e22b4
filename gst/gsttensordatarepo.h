/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON that describes an nnstreamer datarepo file (what datareposink
 * writes beside its raw samples):
 *
 *   {"gst_caps": "other/tensors, format=(string)static, ...",
 *    "total_samples": 1000, "sample_size": 3176}
 *
 * Pure parsing, no element state and no file access: tensor_datasrc reads
 * the file and maps the data, tests/fuzz/fuzz_datarepo.c fuzzes this.
 */
#ifndef __GST_TENSOR_DATAREPO_H__
#define __GST_TENSOR_DATAREPO_H__

#include "gsttensorinfo.h"

G_BEGIN_DECLS

/* What the JSON describes. Invariants when parsed: desc is static with
 * 1..GST_TENSOR_MAX_TENSORS tensors; every sizes[i] is the tensor's bytes
 * (> 0) and offsets[i] its place in a sample (the sum of the sizes before
 * it); sample_size is the sum of all sizes (no overflow); 1 <= total <=
 * G_MAXUINT and total * sample_size fits a gsize. */
typedef struct
{
  GstTensorsDesc desc;
  guint64 total;
  gsize sample_size;
  gsize offsets[GST_TENSOR_MAX_TENSORS], sizes[GST_TENSOR_MAX_TENSORS];
} GstTensorDataRepoInfo;

typedef enum
{
  GST_TENSOR_DATAREPO_OK = 0,
  GST_TENSOR_DATAREPO_ERROR_SYNTAX,     /* not JSON at all */
  GST_TENSOR_DATAREPO_ERROR_FORMAT,     /* JSON, not a datarepo description */
} GstTensorDataRepoStatus;

/*
 * Parses length bytes of JSON (length < 0: NUL-terminated). On an error
 * *error is a sentence (for SYNTAX: json-glib's message) naming the field
 * ("gst_caps", "total_samples", "sample_size") and what is wrong; info is
 * then unspecified.
 */
GstTensorDataRepoStatus gst_tensor_datarepo_parse (const gchar * text,
    gssize length, GstTensorDataRepoInfo * info, gchar ** error);

G_END_DECLS

#endif /* __GST_TENSOR_DATAREPO_H__ */
