/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How tensor_trainer, tensor_predictor and tensor_planner open their
 * model: tt_model_open for an INI or a bundle; a path ending in .onnx is
 * an ONNX model, converted in memory when the element starts
 * (tt_onnx_model_open, docs/onnx.md "In the elements": the importer's
 * defaults, loss cross_softmax for the trainer and the planner, mse for
 * the predictor so that its output is the graph's own). The importer's
 * message, naming the file and the reason, is the element's error.
 */
#ifndef GST_TT_MODEL_OPEN_H
#define GST_TT_MODEL_OPEN_H

#include "tt_engine.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#ifdef TT_HAVE_ONNX
#include "tt_onnx.h"
#endif

/* the loss an element's ONNX model gets: NULL, the importer's default
 * (cross_softmax: the output taken as logits), or "mse" (the graph's
 * output as it is: the predictor) */
static inline tt_model *
gst_tt_model_open (const char *path, const tt_open_options * o,
    const char *onnx_loss, tt_open_info * info, tt_error * err)
{
  const size_t n = path ? strlen (path) : 0;
  if (n >= 5 && !strcasecmp (path + n - 5, ".onnx")) {
#ifdef TT_HAVE_ONNX
    tt_onnx_options oo = { 0 };
    oo.loss = onnx_loss;
    return tt_onnx_model_open (path, o, &oo, info, err);
#else
    info->kind = TT_MODEL_FILE_INI;
    info->failed_step = TT_OPEN_READ;
    err->status = TT_ERR_INVALID;
    snprintf (err->message, sizeof err->message, "%s: an ONNX model, and "
        "this build has no ONNX support (it needs protoc-c, libprotobuf-c "
        "and onnx.proto)", path);
    return NULL;
#endif
  }
  (void) onnx_loss;
  return tt_model_open (path, o, info, err);
}

#endif /* GST_TT_MODEL_OPEN_H */
