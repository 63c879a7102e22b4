/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a layer's infer and declare learn of the model's precision
 * (tt_layer.h): its GEMMs' input format, as core/model_step.c sets the
 * run's. The precision is chosen before compile (tt_model_set_precision
 * refuses after), so the plan and the steps agree.
 */
#include "tt_internal.h"

tt_precision
tt_init_gemm_inputs (const tt_init_ctx * c)
{
  if (!c->owner || !c->owner->model)
    return TT_PRECISION_FP32;
  return tt_model_gemm_inputs (c->owner->model);
}
