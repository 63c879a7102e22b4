/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON that describes an nnstreamer datarepo file (what datareposink
 * writes beside its raw samples). Static tensors:
 *
 *   {"gst_caps": "other/tensors, format=(string)static, ...",
 *    "total_samples": 1000, "sample_size": 3176}
 *
 * Flexible tensors (datareposink after other/tensors,format=flexible):
 *
 *   {"gst_caps": "other/tensors, format=(string)flexible, ...",
 *    "total_samples": 3, "sample_offset": [0, 272, 544],
 *    "tensor_size": [140, 132, 140, 132, 140, 130],
 *    "tensor_count": [0, 2, 4]}
 *
 * Sample i starts at byte sample_offset[i] of the data file and holds the
 * tensors tensor_count[i] .. tensor_count[i + 1] - 1 (the last sample: up
 * to the end of tensor_size) back to back, each tensor_size[j] bytes: its
 * 128-byte flexible header, then its data (gstdatareposink.c writes each
 * memory as it is; gstdatareposrc.c reads them back that way).
 *
 * Pure parsing, no element state and no file access: tensor_datasrc reads
 * the file and maps the data, tests/fuzz/fuzz_datarepo.c fuzzes this.
 */
#ifndef __GST_TENSOR_DATAREPO_H__
#define __GST_TENSOR_DATAREPO_H__

#include "gsttensorinfo.h"

G_BEGIN_DECLS

/* What the JSON describes. Invariants when parsed: 1 <= total <=
 * G_MAXUINT. Static: desc has 1..GST_TENSOR_MAX_TENSORS tensors; every
 * sizes[i] is the tensor's bytes (> 0) and offsets[i] its place in a
 * sample (the sum of the sizes before it); sample_size is the sum of all
 * sizes (no overflow) and total * sample_size fits a gsize. Flexible: see
 * below. */
typedef struct
{
  GstTensorsDesc desc;
  guint64 total;
  gsize sample_size;
  gsize offsets[GST_TENSOR_MAX_TENSORS], sizes[GST_TENSOR_MAX_TENSORS];
  /* Flexible only (desc.format is GST_TENSOR_FORMAT_FLEXIBLE; sample_size,
   * offsets and sizes are then 0): sample i starts at sample_offsets[i]
   * and holds tensors first_tensor[i] .. first_tensor[i + 1] - 1 (1 to
   * GST_TENSOR_MAX_TENSORS of them), tensor j being tensor_sizes[j] bytes
   * (> GST_TENSOR_META_HEADER_SIZE), back to back. first_tensor has total
   * + 1 entries, first_tensor[0] = 0 and first_tensor[total] =
   * n_tensors. data_end is the largest end of a sample (no overflow): the
   * data file's length. NULL arrays for static tensors; freed by
   * gst_tensor_datarepo_info_clear. */
  guint64 *sample_offsets;
  guint *first_tensor;
  gsize *tensor_sizes;
  guint n_tensors;
  guint64 data_end;
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
 * ("gst_caps", "total_samples", "sample_size", "sample_offset",
 * "tensor_size", "tensor_count") and what is wrong; info's fields are
 * then unspecified, but its arrays are NULL or owned (clear it either
 * way).
 */
GstTensorDataRepoStatus gst_tensor_datarepo_parse (const gchar * text,
    gssize length, GstTensorDataRepoInfo * info, gchar ** error);

/* Frees the flexible arrays of info (after any parse, accepted or not). */
void gst_tensor_datarepo_info_clear (GstTensorDataRepoInfo * info);

G_END_DECLS

#endif /* __GST_TENSOR_DATAREPO_H__ */
