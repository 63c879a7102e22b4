/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * preprocess_l2norm: nntrainer's per-sample normalization, y = x / (|x|
 * + epsilon), |x| the L2 norm of the sample's values (all of them: the
 * shape is kept), in training and inference alike. Backward is its
 * exact derivative (it reads the input): dx = (dy - x (x . dy) / (|x|
 * s)) / s, s = |x| + epsilon.
 */
#include "tt_layer.h"

static const char *const l2norm_keys[] = { "epsilon", NULL };

static tt_status
l2norm_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  l->p.prep.epsilon = 0.001f;
  tt_status st = tt_section_float (s, "epsilon", &l->p.prep.epsilon, err);
  if (st)
    return st;
  if (!(l->p.prep.epsilon > 0.0f) || !(l->p.prep.epsilon < 1e30f))
    return tt_section_error (s, "epsilon", err, TT_ERR_INVALID,
        "must be a positive number");
  return TT_OK;
}

static tt_status
l2norm_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->in_dims[0];
  return TT_OK;
}

static void
l2norm_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_l2norm_forward (c->threads, c->batch, tt_dims_count (l->in_dims[0]),
      l->p.prep.epsilon, tt_run_data (c, l->in[0]), tt_run_data (c, l->out[0]));
}

static void
l2norm_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  tt_l2norm_backward (c->threads, c->batch, tt_dims_count (l->in_dims[0]),
      l->p.prep.epsilon, tt_run_data (c, l->in[0]), tt_run_data (c,
          l->out_deriv[0]), tt_run_data (c, l->in_deriv[0]));
}

static unsigned
l2norm_backward_reads (const tt_layer * l)
{
  (void) l;
  return TT_READS_INPUT;
}

const tt_layer_ops tt_preprocess_l2norm_layer_ops = {
  .type = "preprocess_l2norm",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = l2norm_keys,
  .parse = l2norm_parse,
  .infer = l2norm_infer,
  .forward = l2norm_forward,
  .calc_derivative = l2norm_calc_derivative,
  .backward_reads = l2norm_backward_reads,
};
