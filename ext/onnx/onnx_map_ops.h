/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * More operators on activations (onnx_map_ops.c), rows of onnx_map.c's
 * table: ConvTranspose (conv2dtranspose), Concat (concat), Slice
 * (slice), Unsqueeze (reshape or nothing), Resize and Upsample
 * (upsample2d), Mul and a broadcasting Add of two activations
 * (multiply, add).
 */
#ifndef TT_ONNX_MAP_OPS_H
#define TT_ONNX_MAP_OPS_H

#include "onnx_internal.h"

tt_status onnx_map_convtranspose (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
tt_status onnx_map_concat (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
tt_status onnx_map_slice (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
tt_status onnx_map_unsqueeze (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
tt_status onnx_map_resize (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
/* Split into equal parts: a split layer, an identity per output */
tt_status onnx_map_split (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
/* Mul of two activations; Add of two activations of different shapes
 * (map_add keeps the same-shape residual as `addition`) */
tt_status onnx_map_binary (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);

#endif /* TT_ONNX_MAP_OPS_H */
