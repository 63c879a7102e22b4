/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gather: nntrainer's gather of its first input along axis (1 channel, 2
 * height, 3 width; required) at the indices its second input holds
 * (input_layers = x, indices). The output is x's shape with the axis's
 * size the indices' (nntrainer's shape rule). Each value of the indices
 * (a float, truncated toward zero as embedding reads its indices) picks
 * the value of x at that position of the axis, the other coordinates
 * kept: torch.gather. The indices' other axes are each the output's, or
 * all 1 on a side of the axis (before it, after it): the same indices
 * then serve every row (torch.index_select per sample).
 *
 * nntrainer declares the layer but its forward and backward throw (not
 * implemented); this is the mathematics. Backward: the output's
 * derivative added into x's at the indices (a repeated index sums); the
 * indices get a zero derivative. An index outside [0, size of the axis)
 * (or not a number) gives NaN there, as embedding does: training refuses
 * the batch through its loss, and the gradient skips it.
 */
#include "tt_layer.h"

#include <string.h>

static const char *const gather_keys[] = { "axis", "print", NULL };

static tt_status
gather_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  if (!tt_section_has (s, "axis"))
    return tt_section_error (s, "axis", err, TT_ERR_INVALID,
        "missing key (1 channel, 2 height or 3 width)");
  bool print = false;
  tt_status st = tt_section_uint (s, "axis", 1, 3, &l->p.gather.axis, err);
  return st ? st : tt_section_bool (s, "print", &print, err);
}

static tt_status
gather_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  if (l->n_inputs != 2)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: gather takes two inputs (input_layers = x, "
        "indices), not %u", c->path, l->section, l->n_inputs);
  const tt_dims x = l->in_dims[0], ix = l->in_dims[1];
  const uint32_t a = l->p.gather.axis - 1;
  const uint32_t dx[3] = { x.c, x.h, x.w }, di[3] = { ix.c, ix.h, ix.w };
  tt_gather_shape *g = &l->p.gather.g;
  *g = (tt_gather_shape) {
  1, dx[a], 1, di[a], 1, di[a], 1, tt_dims_count (ix)};
  bool fits[2] = { true, true }, ones[2] = { true, true };
  for (uint32_t k = 0; k < 3; k++) {
    if (k == a)
      continue;
    const int side = k > a;
    fits[side] &= di[k] == dx[k];
    ones[side] &= di[k] == 1;
    if (side) {
      g->inner *= dx[k];
      g->idx_inner *= di[k];
    } else {
      g->outer *= dx[k];
      g->idx_outer *= di[k];
    }
  }
  if (!(fits[0] || ones[0]) || !(fits[1] || ones[1]))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: '%s' gives %u:%u:%u and the indices '%s' "
        "%u:%u:%u; along axis %u the indices' other axes must each be the "
        "input's, or all 1 before the axis or after it", c->path,
        l->section, l->inputs[0].name, x.c, x.h, x.w, l->inputs[1].name,
        ix.c, ix.h, ix.w, a + 1);
  uint32_t y[3] = { x.c, x.h, x.w };
  y[a] = di[a];
  l->out_dims[0] = (tt_dims) {
  y[0], y[1], y[2]};
  return TT_OK;
}

static void
gather_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_gather_forward (c->threads, &l->p.gather.g, c->batch,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->in[1]),
      tt_run_data (c, l->out[0]));
}

static void
gather_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  float *dx = tt_run_data (c, l->in_deriv[0]);
  if (dx)
    tt_gather_backward (c->threads, &l->p.gather.g, c->batch,
        tt_run_data (c, l->in[1]), tt_run_data (c, l->out_deriv[0]), dx);
  /* indices have no derivative */
  float *di = tt_run_data (c, l->in_deriv[1]);
  if (di)
    memset (di, 0, (size_t) c->batch * tt_dims_count (l->in_dims[1]) *
        sizeof *di);
}

static unsigned
gather_backward_reads (const tt_layer * l)
{
  (void) l;
  return TT_READS_INPUT;
}

const tt_layer_ops tt_gather_layer_ops = {
  .type = "gather",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .keys = gather_keys,
  .parse = gather_parse,
  .infer = gather_infer,
  .forward = gather_forward,
  .calc_derivative = gather_calc_derivative,
  .backward_reads = gather_backward_reads,
};
