/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * slice and split: nntrainer's layers that take parts of their input
 * along one axis (1 channel, 2 height, 3 width; the batch axis is the
 * samples and is not cut). Each sample is viewed as [outer][n][inner]
 * around the axis; a part is a block of every row of n x inner values,
 * copied (kernels/tensorops.c): the samples interleave the parts, so a
 * part is a view of its input only at batch 1, and copies keep one rule.
 *
 * slice: axis, start_index, end_index (all required, nntrainer's 1-based
 * indices, end excluded): values start_index - 1 ... end_index - 2 of the
 * axis (torch's x[..., start_index - 1 : end_index - 1]). Backward: the
 * derivative there and zeros elsewhere (nntrainer leaves the rest
 * unwritten).
 *
 * split: axis (required; nntrainer's SplitDimension property is read
 * from the key "axis"), split_number (default: the axis's size): the
 * axis cut into split_number equal parts, output k the k-th (torch.split
 * by size / split_number). Its outputs are named NAME(k) in
 * its consumers' input_layers, every one of them used, as nntrainer
 * requires.
 */
#include "tt_layer.h"

#include <strings.h>

static const char *const slice_keys[] = { "axis", "start_index",
  "end_index", "print", NULL
};

static tt_status
slice_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  static const char *const need[][2] = {
    {"axis", "1 channel, 2 height or 3 width"},
    {"start_index", "the first value taken, from 1"},
    {"end_index", "one past the last value taken, from 1"},
  };
  for (int k = 0; k < 3; k++)
    if (!tt_section_has (s, need[k][0]))
      return tt_section_error (s, need[k][0], err, TT_ERR_INVALID,
          "missing key (%s)", need[k][1]);
  uint32_t axis = 0, start = 0, end = 0;
  bool print = false;
  tt_status st;
  if ((st = tt_section_uint (s, "axis", 1, 3, &axis, err)) ||
      (st = tt_section_uint (s, "start_index", 1, 1u << 24, &start, err)) ||
      (st = tt_section_uint (s, "end_index", 1, 1u << 24, &end, err)) ||
      (st = tt_section_bool (s, "print", &print, err)))
    return st;
  if (end <= start)
    return tt_section_error (s, "end_index", err, TT_ERR_INVALID,
        "%u is not after start_index %u (end_index is one past the last "
        "value taken: start_index < end_index)", end, start);
  l->p.slice.axis = axis;
  l->p.slice.start = start - 1;
  l->p.slice.end = end - 1;
  return TT_OK;
}

/* the sample's extents around axis: outer, n (the axis), inner */
static void
slice_view (tt_dims d, uint32_t axis, size_t *outer, size_t *n, size_t *inner)
{
  const uint32_t e[3] = { d.c, d.h, d.w };
  *outer = 1;
  *inner = 1;
  for (uint32_t a = 0; a < 3; a++)
    if (a + 1 < axis)
      *outer *= e[a];
    else if (a + 1 > axis)
      *inner *= e[a];
  *n = e[axis - 1];
}

static tt_dims
slice_set (tt_dims d, uint32_t axis, uint32_t v)
{
  if (axis == 1)
    d.c = v;
  else if (axis == 2)
    d.h = v;
  else
    d.w = v;
  return d;
}

static tt_status
slice_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims in = l->in_dims[0];
  size_t outer, n, inner;
  slice_view (in, l->p.slice.axis, &outer, &n, &inner);
  if (l->p.slice.end > n)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] end_index: %u is past "
        "the input %u:%u:%u's axis %u of %zu (allowed: start_index < "
        "end_index <= %zu)", c->path, l->section, l->p.slice.end + 1, in.c,
        in.h, in.w, l->p.slice.axis, n, n + 1);
  l->out_dims[0] = slice_set (in, l->p.slice.axis,
      l->p.slice.end - l->p.slice.start);
  return TT_OK;
}

static void
slice_forward (const tt_run_ctx * c, tt_layer * l)
{
  size_t outer, n, inner;
  slice_view (l->in_dims[0], l->p.slice.axis, &outer, &n, &inner);
  tt_block_copy (c->threads, c->batch * outer, n * inner,
      l->p.slice.start * inner,
      (size_t) (l->p.slice.end - l->p.slice.start) * inner,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->out[0]));
}

static void
slice_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  size_t outer, n, inner;
  slice_view (l->in_dims[0], l->p.slice.axis, &outer, &n, &inner);
  tt_block_copy_back (c->threads, c->batch * outer, n * inner,
      l->p.slice.start * inner,
      (size_t) (l->p.slice.end - l->p.slice.start) * inner, true,
      tt_run_data (c, l->out_deriv[0]), tt_run_data (c, l->in_deriv[0]));
}

const tt_layer_ops tt_slice_layer_ops = {
  .type = "slice",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = slice_keys,
  .parse = slice_parse,
  .infer = slice_infer,
  .forward = slice_forward,
  .calc_derivative = slice_calc_derivative,
};

static const char *const split_keys[] = { "axis", "split_number",
  NULL
};

static tt_status
split_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  if (!tt_section_has (s, "axis"))
    return tt_section_error (s, "axis", err, TT_ERR_INVALID,
        "missing key (1 channel, 2 height or 3 width)");
  /* an activation or flatten layer after it would take output 0 alone */
  static const char *const single[] = { "activation", "flatten" };
  for (int k = 0; k < 2; k++) {
    const char *v = tt_section_string (s, single[k]);
    if (v && strcasecmp (v, k ? "false" : "none"))
      return tt_section_error (s, single[k], err, TT_ERR_INVALID,
          "'%s' on a split, which has several outputs (allowed: %s; give "
          "its parts' consumers the layer instead)", v, k ? "false" : "none");
  }
  uint32_t axis = 0, number = 0;
  tt_status st;
  if ((st = tt_section_uint (s, "axis", 1, 3, &axis, err)) ||
      (st = tt_section_uint (s, "split_number", 1, TT_MAX_IO, &number, err)))
    return st;
  l->p.slice.axis = axis;
  l->p.slice.number = number;
  return TT_OK;
}

static tt_status
split_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims in = l->in_dims[0];
  size_t outer, n, inner;
  slice_view (in, l->p.slice.axis, &outer, &n, &inner);
  const bool given = l->p.slice.number > 0;
  const size_t number = given ? l->p.slice.number : n;
  if (n % number)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] split_number: %zu does "
        "not divide the input %u:%u:%u's axis %u of %zu (allowed: a divisor "
        "of %zu, at most %d)", c->path, l->section, number, in.c, in.h,
        in.w, l->p.slice.axis, n, n, TT_MAX_IO);
  if (number > TT_MAX_IO)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] split_number: not set: "
        "the size %zu of the input %u:%u:%u's axis %u, more parts than the "
        "%d a layer may have (set split_number to a divisor of %zu up to "
        "%d)", c->path, l->section, n, in.c, in.h, in.w, l->p.slice.axis,
        TT_MAX_IO, n, TT_MAX_IO);
  if (l->n_outputs != number)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] split_number: %zu part(s)%s "
        "but its consumers use %u (name every part in their input_layers: "
        "%s(0) ... %s(%zu))", c->path, l->section, number,
        given ? "" : " (the axis's size: split_number is not set)",
        l->n_outputs, l->name, l->name, number - 1);
  l->p.slice.number = (uint32_t) number;
  for (uint32_t o = 0; o < l->n_outputs; o++)
    l->out_dims[o] = slice_set (in, l->p.slice.axis, (uint32_t) (n / number));
  return TT_OK;
}

static void
split_forward (const tt_run_ctx * c, tt_layer * l)
{
  size_t outer, n, inner;
  slice_view (l->in_dims[0], l->p.slice.axis, &outer, &n, &inner);
  const size_t part = n / l->p.slice.number * inner;
  for (uint32_t o = 0; o < l->n_outputs; o++)
    tt_block_copy (c->threads, c->batch * outer, n * inner, o * part, part,
        tt_run_data (c, l->in[0]), tt_run_data (c, l->out[o]));
}

static void
split_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  size_t outer, n, inner;
  slice_view (l->in_dims[0], l->p.slice.axis, &outer, &n, &inner);
  const size_t part = n / l->p.slice.number * inner;
  for (uint32_t o = 0; o < l->n_outputs; o++)
    tt_block_copy_back (c->threads, c->batch * outer, n * inner, o * part,
        part, false, tt_run_data (c, l->out_deriv[o]),
        tt_run_data (c, l->in_deriv[0]));
}

const tt_layer_ops tt_split_layer_ops = {
  .type = "split",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = split_keys,
  .parse = split_parse,
  .infer = split_infer,
  .forward = split_forward,
  .calc_derivative = split_calc_derivative,
  .outputs_by_reference = true,
};
