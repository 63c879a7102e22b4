/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ONNX import: an ONNX model (a torch.onnx.export of an MLP or a CNN)
 * written as a model INI in the engine's dialect and a BIN of its
 * initializers in the engine's layout, so that training starts from the
 * exported weights (docs/onnx.md: the operators, their layers, what is
 * refused). Nothing is written unless the whole model maps and the engine
 * accepts the INI; both files are written atomically.
 */
#ifndef TT_ONNX_H
#define TT_ONNX_H

#include "tt_engine.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  /* the [Model] loss on the graph's output: "cross_softmax" (NULL: the
   * default; the output taken as logits, a final Softmax absorbed into
   * it), "cross_sigmoid" (a final Sigmoid absorbed) or "mse" */
  const char *loss;
  /* [Optimizer] type: "sgd" (NULL: the default), "adam" (PyTorch's form
   * and epsilon 1e-8: torch.optim.Adam's defaults) or "adamw" */
  const char *optimizer;
  double learning_rate;         /* 0: 0.001, the engine's default */
  uint32_t batch;               /* 0: the input's fixed batch, else 32 */
  /* comma-separated layers made `trainable = false`: INI section names,
   * initializer names or module paths prefixing them ("features");
   * NULL: none */
  const char *freeze;
} tt_onnx_options;

/* Reads onnx_path and writes ini_path and bin_path (both or neither).
 * opt may be NULL (the defaults). On failure err names the file, and the
 * node (type, name, opset) or initializer at fault. */
tt_status tt_onnx_import (const char *onnx_path, const char *ini_path,
    const char *bin_path, const tt_onnx_options * opt, tt_error * err);

/* The same from an ONNX model in memory, returning the INI text and the
 * BIN's bytes instead of writing files (malloc'd: the caller frees them);
 * name stands for the file in messages. The fuzzer's entry. */
tt_status tt_onnx_convert (const void *data, size_t len, const char *name,
    const tt_onnx_options * opt, char **ini, size_t *ini_len,
    unsigned char **bin, size_t *bin_len, tt_error * err);

/* A path naming an ONNX model: it ends in .onnx (any case). */
bool tt_onnx_is_onnx_path (const char *path);

/* Opens the ONNX model at path as tt_model_open opens an INI (same
 * options, info and messages' steps): converted in memory with onnx (NULL:
 * the defaults), its initializers the weights unless options->weights
 * names a BIN or bundle. Nothing is written. */
tt_model *tt_onnx_model_open (const char *path,
    const tt_open_options * options, const tt_onnx_options * onnx,
    tt_open_info * info, tt_error * err);

/* export-onnx: the ONNX model at onnx_path written to out_path with each
 * initializer that became a weight replaced by that weight of weights (a
 * BIN or a bundle of the model onnx_path imports to), the importer's
 * layout changes undone; everything else as read. Atomic. */
tt_status tt_onnx_export (const char *onnx_path, const char *weights,
    const char *out_path, tt_error * err);

#endif /* TT_ONNX_H */
