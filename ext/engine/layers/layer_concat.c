/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * concat along axis 1 (channel), 2 (height) or 3 (width, nntrainer's
 * default). A sample is seen as [outer][axis][inner]; each input
 * contributes a contiguous run of axis_i * inner values per outer index.
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <string.h>

static const char *const concat_keys[] = { "axis", NULL };

static tt_status
concat_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  uint32_t axis = 3;
  tt_status st = tt_section_uint (s, "axis", 1, 3, &axis, err);
  l->p.concat.axis = (int) axis;
  return st;
}

static uint32_t
concat_axis_len (tt_dims d, int axis)
{
  return axis == 1 ? d.c : axis == 2 ? d.h : d.w;
}

static tt_status
concat_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const int axis = l->p.concat.axis;
  tt_dims out = l->in_dims[0];
  uint64_t total = 0;
  for (uint32_t i = 0; i < l->n_inputs; i++) {
    tt_dims d = l->in_dims[i];
    bool ok = (axis == 1 || d.c == out.c) && (axis == 2 || d.h == out.h) &&
        (axis == 3 || d.w == out.w);
    if (!ok)
      return tt_fail (err, TT_ERR_INVALID,
          "%s: [%s] input_layers: '%s' gives %u:%u:%u and '%s' gives "
          "%u:%u:%u; they differ off axis %d", c->path, l->section,
          l->inputs[0].name, out.c, out.h, out.w, l->inputs[i].name, d.c,
          d.h, d.w, axis);
    total += concat_axis_len (d, axis);
  }
  if (total > (1u << 24))
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s]: concatenation too large",
        c->path, l->section);
  if (axis == 1)
    out.c = (uint32_t) total;
  else if (axis == 2)
    out.h = (uint32_t) total;
  else
    out.w = (uint32_t) total;
  l->out_dims[0] = out;
  return TT_OK;
}

static void
concat_geometry (const tt_layer * l, size_t *outer, size_t *inner)
{
  const tt_dims d = l->out_dims[0];
  const int axis = l->p.concat.axis;
  *outer = axis == 1 ? 1 : axis == 2 ? d.c : (size_t) d.c * d.h;
  *inner = axis == 1 ? (size_t) d.h * d.w : axis == 2 ? d.w : 1;
}

/* Split over the model's threads by outer rows from this many values
 * (copies: identical either way) */
#define CONCAT_SPLIT_MIN 16384

typedef struct
{
  const tt_run_ctx *c;
  const tt_layer *l;
  size_t inner;
  bool forward;
} concat_job;

/* Copies rows [o0, o1) between the output and the inputs; forward picks
 * the way. */
static void
concat_move_rows (void *arg, size_t o0, size_t o1)
{
  const concat_job *j = arg;
  const tt_layer *l = j->l;
  const size_t out_run = concat_axis_len (l->out_dims[0], l->p.concat.axis)
      * j->inner;
  float *y = tt_run_data (j->c, j->forward ? l->out[0] : l->out_deriv[0]);
  size_t at = 0;
  for (uint32_t k = 0; k < l->n_inputs; k++) {
    const size_t run = concat_axis_len (l->in_dims[k], l->p.concat.axis) *
        j->inner;
    float *x = tt_run_data (j->c, j->forward ? l->in[k] : l->in_deriv[k]);
    if (x)
      for (size_t o = o0; o < o1; o++) {
        if (j->forward)
          memcpy (y + o * out_run + at, x + o * run, run * sizeof *x);
        else
          memcpy (x + o * run, y + o * out_run + at, run * sizeof *x);
      }
    at += run;
  }
}

static void
concat_move (const tt_run_ctx * c, tt_layer * l, bool forward)
{
  size_t outer, inner;
  concat_geometry (l, &outer, &inner);
  outer *= c->batch;
  concat_job j = { c, l, inner, forward };
  const size_t values = c->batch * tt_dims_count (l->out_dims[0]);
  tt_split (c->threads, outer, 1, values >= CONCAT_SPLIT_MIN ? 2 : outer + 1,
      concat_move_rows, &j);
}

static void
concat_forward (const tt_run_ctx * c, tt_layer * l)
{
  concat_move (c, l, true);
}

static void
concat_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  concat_move (c, l, false);
}

const tt_layer_ops tt_concat_layer_ops = {
  .type = "concat",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .keys = concat_keys,
  .parse = concat_parse,
  .infer = concat_infer,
  .forward = concat_forward,
  .calc_derivative = concat_calc_derivative,
};
