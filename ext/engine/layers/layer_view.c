/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Layers whose outputs are views of their input: flatten and reshape
 * (same data, new shape; the derivative is a view too, so forward and
 * backward cost nothing) and multiout (one tensor read by several layers;
 * their derivatives are summed into the input's).
 */
#include "tt_layer.h"

#include <string.h>

static tt_status
flatten_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = (tt_dims) {
    1, 1, (uint32_t) tt_dims_count (l->in_dims[0])
  };
  return TT_OK;
}

static void
view_forward (const tt_run_ctx * c, tt_layer * l)
{
  (void) c;
  (void) l;
}

static void
view_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  (void) c;
  (void) l;
}

const tt_layer_ops tt_flatten_layer_ops = {
  .type = "flatten",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .infer = flatten_infer,
  .forward = view_forward,
  .calc_derivative = view_calc_derivative,
  .output_is_view = true,
};

static const char *const reshape_keys[] = { "target_shape", NULL };

static tt_status
reshape_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st = tt_section_dims (s, "target_shape", &l->p.reshape.target,
      err);
  if (st)
    return st;
  if (!tt_section_has (s, "target_shape"))
    return tt_section_error (s, "target_shape", err, TT_ERR_INVALID,
        "missing key (e.g. 1:1:784)");
  return TT_OK;
}

static tt_status
reshape_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  tt_dims t = l->p.reshape.target, in = l->in_dims[0];
  if (tt_dims_count (t) != tt_dims_count (in))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] target_shape: %u:%u:%u holds %zu elements but the input "
        "%u:%u:%u holds %zu", c->path, l->section, t.c, t.h, t.w,
        tt_dims_count (t), in.c, in.h, in.w, tt_dims_count (in));
  l->out_dims[0] = t;
  return TT_OK;
}

const tt_layer_ops tt_reshape_layer_ops = {
  .type = "reshape",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = reshape_keys,
  .parse = reshape_parse,
  .infer = reshape_infer,
  .forward = view_forward,
  .calc_derivative = view_calc_derivative,
  .output_is_view = true,
};

static tt_status
multiout_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  for (uint32_t o = 0; o < l->n_outputs; o++)
    l->out_dims[o] = l->in_dims[0];
  return TT_OK;
}

static void
multiout_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const size_t n = c->batch * tt_dims_count (l->in_dims[0]);
  float *dx = tt_run_data (c, l->in_deriv[0]);
  memcpy (dx, tt_run_data (c, l->out_deriv[0]), n * sizeof *dx);
  for (uint32_t o = 1; o < l->n_outputs; o++) {
    const float *d = tt_run_data (c, l->out_deriv[o]);
    for (size_t i = 0; i < n; i++)
      dx[i] += d[i];
  }
}

const tt_layer_ops tt_multiout_layer_ops = {
  .type = "multiout",
  .role = TT_ROLE_MULTIOUT,
  .max_inputs = 1,
  .infer = multiout_infer,
  .forward = view_forward,
  .calc_derivative = multiout_calc_derivative,
  .output_is_view = true,
};
