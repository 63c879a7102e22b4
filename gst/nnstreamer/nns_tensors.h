/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nnstreamer's tensor descriptions (tensor_typedef.h) next to the engine's
 * shapes, for the sub-plugins: element sizes and counts, the conversion of
 * any numeric type to float32, and shapes as nnstreamer writes them.
 *
 * nnstreamer lists dimensions innermost first (width:height:channel:batch,
 * then 0 or 1 for ranks not used); the engine's shapes are
 * channel:height:width per sample.
 */
#ifndef TT_NNS_TENSORS_H
#define TT_NNS_TENSORS_H

#include <glib.h>
#include <tensor_typedef.h>

#include "tt_engine.h"

/* Bytes of one element; 0 for a type the engine cannot take (float16,
 * whose C type nnstreamer leaves to the build, and unknown values). */
gsize tt_nns_element_size (tensor_type type);
const gchar *tt_nns_type_name (tensor_type type);

/* Elements of a tensor: the product of its dimensions up to the first 0
 * (nnstreamer 2 marks the ranks not used with 0; older ones with 1). */
gsize tt_nns_info_count (const GstTensorInfo * info);

/* "w:h:c:b" of info's first four dimensions, into buf. */
const gchar *tt_nns_dims_string (const GstTensorInfo * info, gchar * buf,
    gsize size);

/* Converts n elements of type at src to float32 (exact for every integer
 * type up to 24 bits, rounded beyond, as any float32 cast). FALSE for a
 * type tt_nns_element_size refuses. */
gboolean tt_nns_to_float (const void *src, tensor_type type, gsize n,
    gfloat * dst);

/* info as one sample (batch 1) of shape, float32. */
void tt_nns_info_set_shape (GstTensorInfo * info, tt_shape shape);

/* Does info describe one sample of shape: width, height and channel
 * equal, every other dimension 1 or 0 (any type)? */
gboolean tt_nns_info_is_shape (const GstTensorInfo * info, tt_shape shape);

#endif
