/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fully_connected: y = x W + b over the width axis, so an input of
 * c:h:w gives c:h:unit (nntrainer's rule). W is [w][unit], unit fastest,
 * as in nntrainer's BIN.
 */
#include "tt_layer.h"

static const char *const fc_keys[] = { "unit", NULL };

static tt_status
fc_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st = tt_section_uint (s, "unit", 1, 1u << 24, &l->p.fc.unit,
      err);
  if (st)
    return st;
  if (!tt_section_has (s, "unit"))
    return tt_section_error (s, "unit", err, TT_ERR_INVALID,
        "missing key (the number of outputs)");
  return TT_OK;
}

static tt_status
fc_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims in = l->in_dims[0];
  const uint32_t unit = l->p.fc.unit;
  if ((uint64_t) in.w * unit > (1u << 30))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] unit: a %u x %u weight is too large", c->path, l->section,
        in.w, unit);
  l->out_dims[0] = (tt_dims) {
  in.c, in.h, unit};
  tt_weight *w = tt_layer_add_weight (l, "weight", (size_t) in.w * unit,
      l->weight_init, in.w, unit, true);
  w->decay = l->weight_decay;
  w->l2 = l->l2_constant;
  w->rows = in.w;
  if (!l->disable_bias) {
    tt_weight *b = tt_layer_add_weight (l, "bias", unit, l->bias_init, in.w,
        unit, true);
    b->decay = l->bias_decay;
  }
  return TT_OK;
}

static void
fc_forward (const tt_run_ctx * c, tt_layer * l)
{
  const int rows = (int) (c->batch * l->in_dims[0].c * l->in_dims[0].h);
  const int k = (int) l->in_dims[0].w, unit = (int) l->p.fc.unit;
  float *y = tt_run_data (c, l->out[0]);
  float beta = 0.0f;
  if (l->n_weights > 1) {
    const float *bias = tt_run_data (c, l->weights[1].value);
    for (int r = 0; r < rows; r++)
      for (int j = 0; j < unit; j++)
        y[(size_t) r * unit + j] = bias[j];
    beta = 1.0f;
  }
  tt_gemm_split (c->threads, false, false, rows, unit, k, 1.0f,
      tt_run_data (c, l->in[0]), k, tt_run_data (c, l->weights[0].value),
      unit, beta, y, unit);
}

static void
fc_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  const int rows = (int) (c->batch * l->in_dims[0].c * l->in_dims[0].h);
  const int k = (int) l->in_dims[0].w, unit = (int) l->p.fc.unit;
  const float *dy = tt_run_data (c, l->out_deriv[0]);
  const tt_weight *w = &l->weights[0];
  /* update as you go: rows [r0, r0 + chunk) of dW = X^T dY at a time, each
   * applied before the next. Every element is the same reduction over the
   * batch as in the whole product, provided chunk rows start on the GEMM's
   * own row tiles (TT_GRAD_CHUNK_QUANTUM: OpenBLAS's sgemm kernels tile M
   * by 8, 16 or 24; the portable GEMM's elements do not depend on M) */
  const int step = w->chunk_rows ? (int) w->chunk_rows : k;
  for (int r0 = 0; w->grad >= 0 && r0 < k; r0 += step) {
    const int mr = k - r0 < step ? k - r0 : step;
    tt_gemm_split (c->threads, true, false, mr, unit, rows, 1.0f,
        tt_run_data (c, l->in[0]) + r0, k, dy, unit, 0.0f,
        tt_run_data (c, w->grad), unit);
    if (w->chunk_rows)
      tt_run_apply_chunk (c, w, (size_t) r0 * unit, (size_t) mr * unit);
  }
  if (l->n_weights > 1 && l->weights[1].grad >= 0) {
    float *db = tt_run_data (c, l->weights[1].grad);
    for (int j = 0; j < unit; j++)
      db[j] = 0.0f;
    for (int r = 0; r < rows; r++)
      for (int j = 0; j < unit; j++)
        db[j] += dy[(size_t) r * unit + j];
  }
}

static void
fc_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const int rows = (int) (c->batch * l->in_dims[0].c * l->in_dims[0].h);
  const int k = (int) l->in_dims[0].w, unit = (int) l->p.fc.unit;
  tt_gemm_split (c->threads, false, true, rows, k, unit, 1.0f,
      tt_run_data (c, l->out_deriv[0]), unit,
      tt_run_data (c, l->weights[0].value), unit, 0.0f,
      tt_run_data (c, l->in_deriv[0]), k);
}

static unsigned
fc_backward_reads (const tt_layer * l)
{
  (void) l;
  return TT_READS_INPUT;
}

const tt_layer_ops tt_fc_layer_ops = {
  .type = "fully_connected",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = fc_keys,
  .has_weights = true,
  .parse = fc_parse,
  .infer = fc_infer,
  .forward = fc_forward,
  .calc_gradient = fc_calc_gradient,
  .calc_derivative = fc_calc_derivative,
  .backward_reads = fc_backward_reads,
  .chunked_gradient = true,
};
