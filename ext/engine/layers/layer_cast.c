/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cast: nntrainer's conversion of its input to tensor_dtype (default
 * FP32). Tensors here are fp32, so the one conversion there is, FP32 to
 * FP32, is the identity: the output is a view of the input and costs
 * nothing, forward or backward. Any other tensor_dtype of nntrainer's
 * (FP16, BCQ, QINT4 ... Q4_0) is refused with that reason until the
 * engine has such tensors.
 */
#include "tt_layer.h"

#include <strings.h>

static const char *const cast_keys[] = { "tensor_dtype", "print", NULL };

/* nntrainer's tensor data types, FP32 the one tensors here have */
static const char *const cast_dtypes[] = { "BCQ", "QINT4", "QINT8",
  "QINT16", "FP16", "FP32", "UINT4", "UINT8", "UINT16", "Q4_K", "Q6_K",
  "Q4_0", NULL
};

static tt_status
cast_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  (void) l;
  int dtype = 5;
  bool print = false;
  tt_status st = tt_section_enum (s, "tensor_dtype", cast_dtypes, &dtype,
      err);
  if (!st)
    st = tt_section_bool (s, "print", &print, err);
  if (st)
    return st;
  if (strcasecmp (cast_dtypes[dtype], "FP32"))
    return tt_section_error (s, "tensor_dtype", err, TT_ERR_INVALID,
        "%s is not supported: tensors here are fp32 (allowed: FP32)",
        cast_dtypes[dtype]);
  return TT_OK;
}

static tt_status
cast_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->in_dims[0];
  return TT_OK;
}

static void
cast_pass (const tt_run_ctx * c, tt_layer * l)
{
  (void) c;
  (void) l;
}

const tt_layer_ops tt_cast_layer_ops = {
  .type = "cast",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = cast_keys,
  .parse = cast_parse,
  .infer = cast_infer,
  .forward = cast_pass,
  .calc_derivative = cast_pass,
  .output_is_view = true,
};
