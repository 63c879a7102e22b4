/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Recurrent and embedding graphs (onnx_map_rnn.c): the mappings of LSTM,
 * GRU, Transpose, Squeeze and Gather of activations, rows of
 * onnx_map.c's table, and the folding of Slice, Concat (any rank) and
 * Expand on constants that their weights and initial states need.
 */
#ifndef TT_ONNX_MAP_RNN_H
#define TT_ONNX_MAP_RNN_H

#include "onnx_internal.h"

tt_status onnx_map_recurrent (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
tt_status onnx_map_transpose (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
tt_status onnx_map_squeeze (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
tt_status onnx_map_gather (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
/* Slice, Concat of constants of rank above 1, Expand of a uniform
 * constant: *done when folded */
tt_status onnx_fold_rnn (onnx_import * im, int node, bool *done,
    tt_error * err);

#endif /* TT_ONNX_MAP_RNN_H */
