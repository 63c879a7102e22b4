/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reduce_mean, reduce_sum: nntrainer's reductions of one input over one
 * axis (axis = 1 channel, 2 height, 3 width), kept as a size-1 axis;
 * without axis over all three (the output 1:1:1 per sample).
 */
#include "tt_layer.h"

static const char *const reduce_keys[] = { "axis", NULL };

static tt_status
reduce_parse_axis (tt_layer * l, const tt_section * s, bool mean,
    tt_error * err)
{
  uint32_t axis = 0;
  tt_status st = tt_section_uint (s, "axis", 1, 3, &axis, err);
  if (st)
    return st;
  l->p.reduce.axis = axis;
  l->p.reduce.mean = mean;
  return TT_OK;
}

static tt_status
reduce_mean_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  return reduce_parse_axis (l, s, true, err);
}

static tt_status
reduce_sum_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  return reduce_parse_axis (l, s, false, err);
}

static tt_status
reduce_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  const tt_dims in = l->in_dims[0];
  tt_dims out = in;
  switch (l->p.reduce.axis) {
    case 1:
      out.c = 1;
      l->p.reduce.outer = 1;
      l->p.reduce.r = in.c;
      l->p.reduce.inner = in.h * in.w;
      break;
    case 2:
      out.h = 1;
      l->p.reduce.outer = in.c;
      l->p.reduce.r = in.h;
      l->p.reduce.inner = in.w;
      break;
    case 3:
      out.w = 1;
      l->p.reduce.outer = in.c * in.h;
      l->p.reduce.r = in.w;
      l->p.reduce.inner = 1;
      break;
    default:
    out = (tt_dims) {
    1, 1, 1};
      l->p.reduce.outer = 1;
      l->p.reduce.r = (uint32_t) tt_dims_count (in);
      l->p.reduce.inner = 1;
      break;
  }
  l->out_dims[0] = out;
  return TT_OK;
}

static float
reduce_scale (const tt_layer * l)
{
  return l->p.reduce.mean ? 1.0f / (float) l->p.reduce.r : 1.0f;
}

static void
reduce_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_reduce_forward (c->threads, (size_t) c->batch * l->p.reduce.outer,
      l->p.reduce.r, l->p.reduce.inner, reduce_scale (l),
      tt_run_data (c, l->in[0]), tt_run_data (c, l->out[0]));
}

static void
reduce_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  tt_reduce_backward (c->threads, (size_t) c->batch * l->p.reduce.outer,
      l->p.reduce.r, l->p.reduce.inner, reduce_scale (l),
      tt_run_data (c, l->out_deriv[0]), tt_run_data (c, l->in_deriv[0]));
}

const tt_layer_ops tt_reduce_mean_layer_ops = {
  .type = "reduce_mean",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = reduce_keys,
  .parse = reduce_mean_parse,
  .infer = reduce_infer,
  .forward = reduce_forward,
  .calc_derivative = reduce_calc_derivative,
};

const tt_layer_ops tt_reduce_sum_layer_ops = {
  .type = "reduce_sum",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = reduce_keys,
  .parse = reduce_sum_parse,
  .infer = reduce_infer,
  .forward = reduce_forward,
  .calc_derivative = reduce_calc_derivative,
};
