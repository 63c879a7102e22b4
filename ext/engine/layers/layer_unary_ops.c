/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * negative, sqrt, sin, cos, tan, pow: nntrainer's unary operation layers,
 * element-wise on one input; and identity, whose output is its input (a
 * view: no copy, no work).
 */
#include "tt_layer.h"

#include <math.h>

static const char *const unary_keys[] = { "inplace", NULL };
static const char *const pow_keys[] = { "inplace", "exponent", NULL };

/* nntrainer's inplace key is read and checked; the planner decides */
static tt_status
unary_parse (tt_layer * l, const tt_section * s, tt_unary fn, tt_error * err)
{
  bool inplace = false;
  tt_status st = tt_section_bool (s, "inplace", &inplace, err);
  if (st)
    return st;
  l->p.unary.fn = fn;
  l->p.unary.exponent = 1.0f;   /* nntrainer's default */
  if (fn == TT_UNARY_POW) {
    if ((st = tt_section_float (s, "exponent", &l->p.unary.exponent, err)))
      return st;
    if (!isfinite (l->p.unary.exponent))
      return tt_section_error (s, "exponent", err, TT_ERR_INVALID,
          "must be a finite number");
  }
  return TT_OK;
}

static tt_status
unary_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->in_dims[0];
  return TT_OK;
}

static void
unary_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_unary_forward (c->threads, l->p.unary.fn, l->p.unary.exponent,
      c->batch * tt_dims_count (l->in_dims[0]), tt_run_data (c, l->in[0]),
      tt_run_data (c, l->out[0]));
}

static void
unary_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  tt_unary_backward (c->threads, l->p.unary.fn, l->p.unary.exponent,
      c->batch * tt_dims_count (l->in_dims[0]), tt_run_data (c, l->in[0]),
      tt_run_data (c, l->out[0]), tt_run_data (c, l->out_deriv[0]),
      tt_run_data (c, l->in_deriv[0]));
}

/* sin, cos and pow differentiate from x; sqrt and tan from y (0.5 / y,
 * 1 + y^2), so they run in place like negative, which reads neither */
static unsigned
unary_backward_reads (const tt_layer * l)
{
  switch (l->p.unary.fn) {
    case TT_UNARY_NEGATIVE:
      return 0;
    case TT_UNARY_SQRT:
    case TT_UNARY_TAN:
      return TT_READS_OUTPUT;
    default:
      return TT_READS_INPUT;
  }
}

static bool
unary_can_run_in_place (const tt_layer * l)
{
  return !(unary_backward_reads (l) & TT_READS_INPUT);
}

#define UNARY_LAYER(NAME, TYPE, FN, KEYS) \
  static tt_status \
  NAME##_parse (tt_layer * l, const tt_section * s, tt_error * err) \
  { \
    return unary_parse (l, s, FN, err); \
  } \
  const tt_layer_ops tt_##NAME##_layer_ops = { \
    .type = TYPE, \
    .role = TT_ROLE_COMPUTE, \
    .max_inputs = 1, \
    .keys = KEYS, \
    .parse = NAME##_parse, \
    .infer = unary_infer, \
    .forward = unary_forward, \
    .calc_derivative = unary_calc_derivative, \
    .backward_reads = unary_backward_reads, \
    .can_run_in_place = unary_can_run_in_place, \
  }

UNARY_LAYER (negative, "negative", TT_UNARY_NEGATIVE, unary_keys);
UNARY_LAYER (sqrt, "sqrt", TT_UNARY_SQRT, unary_keys);
UNARY_LAYER (sin, "sin", TT_UNARY_SIN, unary_keys);
UNARY_LAYER (cos, "cos", TT_UNARY_COS, unary_keys);
UNARY_LAYER (tan, "tan", TT_UNARY_TAN, unary_keys);
UNARY_LAYER (pow, "pow", TT_UNARY_POW, pow_keys);

static void
identity_pass (const tt_run_ctx * c, tt_layer * l)
{
  (void) c;
  (void) l;
}

/* one input: its output and output derivative are views of the input's */
const tt_layer_ops tt_identity_layer_ops = {
  .type = "identity",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .infer = unary_infer,
  .forward = identity_pass,
  .calc_derivative = identity_pass,
  .output_is_view = true,
};
