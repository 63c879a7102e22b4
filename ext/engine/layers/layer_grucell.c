/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * grucell: one step of nntrainer's gru (kernels/gru.c with one step and
 * an initial state). Two inputs, in nntrainer's order: the input
 * 1:1:features and the hidden state 1:1:unit; one output, the new hidden
 * state (times the dropout mask in training), 1:1:unit. Keys unit,
 * integrate_bias, reset_after (true), hidden_state_activation (tanh),
 * recurrent_activation (sigmoid), dropout_rate; weights as gru's.
 */
#include "tt_layer.h"

static const char *const grucell_keys[] = {
  "unit", "integrate_bias", "reset_after", "hidden_state_activation",
  "recurrent_activation", "dropout_rate", NULL
};

static tt_status
grucell_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  l->p.gru.reset_after = true;
  tt_status st = tt_recurrent_parse (s, "a grucell", &l->p.gru.rec, err);
  return st ? st : tt_section_bool (s, "reset_after", &l->p.gru.reset_after,
      err);
}

static tt_status
grucell_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  tt_status st = tt_cell_check_inputs (c, l, 2, l->p.gru.rec.unit, err);
  return st ? st : tt_recurrent_infer (c, l, "a grucell", &l->p.gru.rec, 3,
      err);
}

static bool
grucell_runs_gradient (const tt_layer * l)
{
  return l->weights[0].grad >= 0;
}

/* Scratch: "gates" [B][4U] (gru.c's four slots) from forward to the last
 * backward phase (the derivatives are written over them), "bptt_carry"
 * [B][2U] (dh, d(r * h)) from the phase running backpropagation to
 * calcDerivative (dh0 starts from it). Backward reads the state input
 * (the step's previous state) and the input (dW_ih), never the output. */
static void
grucell_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch_size, unit = l->p.gru.rec.unit;
  const bool grad = grucell_runs_gradient (l), deriv = l->needs_derivative;
  const tt_phase bptt = grad ? TT_PHASE_GRADIENT : TT_PHASE_DERIVATIVE;
  l->p.gru.hidden = -1;
  l->p.gru.carry = -1;
  l->p.gru.mask = tt_recurrent_declare_mask (c, l, &l->p.gru.rec,
      grad || deriv, bptt);
  l->p.gru.gates = tt_init_scratch (c, "gates", batch * 4 * unit);
  tt_init_use (c, l->p.gru.gates, TT_PHASE_FORWARD);
  if (!grad && !deriv)
    return;
  tt_init_use (c, l->p.gru.gates, bptt);
  tt_init_use (c, l->in[1], bptt);
  l->p.gru.carry = tt_init_scratch (c, "bptt_carry", batch * 2 * unit);
  tt_init_use (c, l->p.gru.carry, bptt);
  if (deriv) {
    tt_init_use (c, l->p.gru.gates, TT_PHASE_DERIVATIVE);
    tt_init_use (c, l->p.gru.carry, TT_PHASE_DERIVATIVE);
  }
  if (grad)
    tt_init_use (c, l->in[0], TT_PHASE_GRADIENT);
}

static tt_gru
grucell_setup (const tt_run_ctx * c, const tt_layer * l)
{
  tt_gru s = tt_gru_layer_args (c, l, 1);
  s.hidden = tt_run_data (c, l->out[0]);
  s.h_ld = s.unit;
  s.h0 = tt_run_data (c, l->in[1]);
  return s;
}

static void
grucell_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_recurrent_draw_mask (c, l, &l->p.gru.rec, l->p.gru.mask);
  const tt_gru s = grucell_setup (c, l);
  tt_gru_forward (&s, tt_run_data (c, l->in[0]));
}

static void
grucell_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (!grucell_runs_gradient (l))
    return;
  const tt_gru s = grucell_setup (c, l);
  tt_gru_bptt (&s, tt_run_data (c, l->out_deriv[0]), false,
      tt_run_data (c, l->p.gru.carry));
  tt_gru_weight_grads (&s, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->weights[0].grad), tt_run_data (c, l->weights[1].grad),
      l->n_weights > 2 ? tt_run_data (c, l->weights[2].grad) : NULL,
      l->n_weights > 3 ? tt_run_data (c, l->weights[3].grad) : NULL);
}

static void
grucell_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_gru s = grucell_setup (c, l);
  float *carry = tt_run_data (c, l->p.gru.carry);
  if (!grucell_runs_gradient (l))
    tt_gru_bptt (&s, tt_run_data (c, l->out_deriv[0]), false, carry);
  float *dx = tt_run_data (c, l->in_deriv[0]);
  float *dh0 = tt_run_data (c, l->in_deriv[1]);
  if (dx)
    tt_gru_input_grad (&s, dx);
  if (dh0)
    tt_gru_state_grad (&s, carry, dh0);
}

/* feature cache */
static const char *
grucell_varies (const tt_layer * l)
{
  return tt_recurrent_varies (&l->p.gru.rec);
}

const tt_layer_ops tt_grucell_layer_ops = {
  .type = "grucell",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .keys = grucell_keys,
  .has_weights = true,
  .parse = grucell_parse,
  .infer = grucell_infer,
  .declare = grucell_declare,
  .forward = grucell_forward,
  .calc_gradient = grucell_calc_gradient,
  .calc_derivative = grucell_calc_derivative,
  .multiply_adds = tt_recurrent_multiply_adds,
  .training_varies = grucell_varies,
};
