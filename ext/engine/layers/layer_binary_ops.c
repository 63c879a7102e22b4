/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * add, subtract, multiply, divide: nntrainer's binary operation layers,
 * y = a op b of their two inputs (input_layers = a, b). Beyond nntrainer,
 * the inputs broadcast numpy-style: each of C, H, W equal, or 1 in one
 * of them (a [C,1,1] channel scale against [C,H,W]: squeeze and
 * excitation); the output has the broadcast shape, and each input's
 * derivative is summed over the axes it broadcasts.
 */
#include "tt_layer.h"

static const char *const binary_keys[] = {
  "inplace", "inplace_direction", NULL
};

static const char *const binary_directions[] = { "left", "right", NULL };

/* nntrainer's in-place keys are read and checked; the planner decides
 * what runs in place */
static tt_status
binary_parse (tt_layer * l, const tt_section * s, tt_binop op, tt_error * err)
{
  bool inplace = false;
  int dir = 0;
  tt_status st;
  if ((st = tt_section_bool (s, "inplace", &inplace, err)) ||
      (st = tt_section_enum (s, "inplace_direction", binary_directions,
              &dir, err)))
    return st;
  l->p.binop.op = op;
  return TT_OK;
}

static tt_status
binary_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  if (l->n_inputs != 2)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: %s takes two inputs (input_layers = a, b), "
        "not %u", c->path, l->section, l->ops->type, l->n_inputs);
  const tt_dims a = l->in_dims[0], b = l->in_dims[1];
  const uint32_t da[3] = { a.c, a.h, a.w }, db[3] = { b.c, b.h, b.w };
  uint32_t y[3];
  if (!tt_bcast_init (&l->p.binop.g, da, db, y))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: '%s' gives %u:%u:%u and '%s' gives "
        "%u:%u:%u, which do not broadcast (each of channel, height and "
        "width equal, or 1 in one of them)", c->path, l->section,
        l->inputs[0].name, a.c, a.h, a.w, l->inputs[1].name, b.c, b.h, b.w);
  l->out_dims[0] = (tt_dims) {
  y[0], y[1], y[2]};
  return TT_OK;
}

static void
binary_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_binop_forward (c->threads, l->p.binop.op, &l->p.binop.g, c->batch,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->in[1]),
      tt_run_data (c, l->out[0]));
}

static void
binary_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  tt_binop_backward (c->threads, l->p.binop.op, &l->p.binop.g, c->batch,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->in[1]),
      tt_run_data (c, l->out_deriv[0]), tt_run_data (c, l->in_deriv[0]),
      tt_run_data (c, l->in_deriv[1]));
}

/* multiply and divide differentiate from both inputs; add and subtract
 * from neither */
static unsigned
binary_backward_reads (const tt_layer * l)
{
  return l->p.binop.op == TT_BINOP_MUL || l->p.binop.op == TT_BINOP_DIV ?
      TT_READS_INPUT : 0;
}

#define BINARY_LAYER(NAME, TYPE, OP) \
  static tt_status \
  NAME##_parse (tt_layer * l, const tt_section * s, tt_error * err) \
  { \
    return binary_parse (l, s, OP, err); \
  } \
  const tt_layer_ops tt_##NAME##_layer_ops = { \
    .type = TYPE, \
    .role = TT_ROLE_COMPUTE, \
    .max_inputs = TT_MAX_IO, \
    .keys = binary_keys, \
    .parse = NAME##_parse, \
    .infer = binary_infer, \
    .forward = binary_forward, \
    .calc_derivative = binary_calc_derivative, \
    .backward_reads = binary_backward_reads, \
  }

BINARY_LAYER (add, "add", TT_BINOP_ADD);
BINARY_LAYER (subtract, "subtract", TT_BINOP_SUB);
BINARY_LAYER (multiply, "multiply", TT_BINOP_MUL);
BINARY_LAYER (divide, "divide", TT_BINOP_DIV);
