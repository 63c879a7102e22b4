/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Layers whose outputs are views of their input: flatten and reshape
 * (same data, new shape; the derivative is a view too, so forward and
 * backward cost nothing) and multiout (one tensor read by several layers;
 * their derivatives are summed into the input's).
 */
#include "tt_layer.h"

#include <string.h>

/* flatten's start_dimension and end_dimension (nntrainer's, 1 channel,
 * 2 height, 3 width; default 1 and 3): the axes between them, both
 * included, become one at end_dimension, the others of them 1 */
static const char *const flatten_keys[] = { "start_dimension",
  "end_dimension", NULL
};

static tt_status
flatten_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  uint32_t start = 1, end = 3;
  tt_status st = tt_section_uint (s, "start_dimension", 1, 3, &start, err);
  if (!st)
    st = tt_section_uint (s, "end_dimension", 1, 3, &end, err);
  if (st)
    return st;
  if (start > end)
    return tt_section_error (s, "start_dimension", err, TT_ERR_INVALID,
        "%u is after end_dimension %u (axes 1 channel, 2 height, 3 width; "
        "start_dimension <= end_dimension)", start, end);
  l->p.flatten.start = start;
  l->p.flatten.end = end;
  return TT_OK;
}

static tt_status
flatten_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  const tt_dims in = l->in_dims[0];
  /* a flatten=true layer is not parsed: 0, 0 is the defaults' */
  const uint32_t start = l->p.flatten.start ? l->p.flatten.start : 1;
  const uint32_t end = l->p.flatten.end ? l->p.flatten.end : 3;
  uint32_t d[4] = { 1, in.c, in.h, in.w };
  uint32_t n = 1;
  for (uint32_t a = start; a <= end; a++) {
    n *= d[a];
    d[a] = 1;
  }
  d[end] = n;
  l->out_dims[0] = (tt_dims) {
  d[1], d[2], d[3]};
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
  .keys = flatten_keys,
  .parse = flatten_parse,
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
