/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rnncell: one step of nntrainer's rnn (kernels/rnn.c with one step and an
 * initial state). Two inputs, in nntrainer's order: the input
 * 1:1:features and the hidden state 1:1:unit; one output, the new hidden
 * state h = act(x W_ih + h_prev W_hh + bias) (times the dropout mask in
 * training), 1:1:unit. Keys unit, integrate_bias, hidden_state_activation
 * (tanh by default), dropout_rate; weights as rnn's.
 */
#include "tt_layer.h"

#include <string.h>

static const char *const rnncell_keys[] = {
  "unit", "integrate_bias", "hidden_state_activation", "dropout_rate", NULL
};

static tt_status
rnncell_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  return tt_recurrent_parse (s, "an rnncell", &l->p.rnn.rec, err);
}

static tt_status
rnncell_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const uint32_t unit = l->p.rnn.rec.unit;
  tt_status st = tt_cell_check_inputs (c, l, 2, unit, err);
  return st ? st : tt_recurrent_infer (c, l, "an rnncell", &l->p.rnn.rec, 1,
      err);
}

static bool
rnncell_runs_gradient (const tt_layer * l)
{
  return l->weights[0].grad >= 0;
}

/* Scratch: "act" [B][U] from forward to the last backward phase (the
 * pre-activation derivative over it), "bptt_carry" [B][U]; the gradient
 * reads the input (dW_ih) and the state (dW_hh). */
static void
rnncell_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch_size, unit = l->p.rnn.rec.unit;
  const bool grad = rnncell_runs_gradient (l), deriv = l->needs_derivative;
  const tt_phase bptt = grad ? TT_PHASE_GRADIENT : TT_PHASE_DERIVATIVE;
  l->p.rnn.hidden = -1;
  l->p.rnn.carry = -1;
  l->p.rnn.mask = tt_recurrent_declare_mask (c, l, &l->p.rnn.rec,
      grad || deriv, bptt);
  l->p.rnn.act = tt_init_scratch (c, "act", batch * unit);
  tt_init_use (c, l->p.rnn.act, TT_PHASE_FORWARD);
  if (!grad && !deriv)
    return;
  tt_init_use (c, l->p.rnn.act, bptt);
  if (deriv)
    tt_init_use (c, l->p.rnn.act, TT_PHASE_DERIVATIVE);
  l->p.rnn.carry = tt_init_scratch (c, "bptt_carry", batch * unit);
  tt_init_use (c, l->p.rnn.carry, bptt);
  if (!grad)
    return;
  tt_init_use (c, l->in[0], TT_PHASE_GRADIENT);
  tt_init_use (c, l->in[1], TT_PHASE_GRADIENT);
}

static tt_rnn
rnncell_setup (const tt_run_ctx * c, const tt_layer * l)
{
  tt_rnn s = tt_rnn_layer_args (c, l, 1);
  s.hidden = tt_run_data (c, l->out[0]);
  s.h_ld = s.unit;
  s.h0 = tt_run_data (c, l->in[1]);
  return s;
}

static void
rnncell_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_recurrent_draw_mask (c, l, &l->p.rnn.rec, l->p.rnn.mask);
  const tt_rnn s = rnncell_setup (c, l);
  tt_rnn_forward (&s, tt_run_data (c, l->in[0]));
}

static void
rnncell_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (!rnncell_runs_gradient (l))
    return;
  const tt_rnn s = rnncell_setup (c, l);
  tt_rnn_bptt (&s, tt_run_data (c, l->out_deriv[0]), false,
      tt_run_data (c, l->p.rnn.carry));
  float *db = l->n_weights > 2 ? tt_run_data (c, l->weights[2].grad) : NULL;
  tt_rnn_weight_grads (&s, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->weights[0].grad), tt_run_data (c, l->weights[1].grad),
      db);
  tt_recurrent_copy_bias_grad (c, l->weights, l->n_weights);
}

static void
rnncell_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_rnn s = rnncell_setup (c, l);
  if (!rnncell_runs_gradient (l))
    tt_rnn_bptt (&s, tt_run_data (c, l->out_deriv[0]), false,
        tt_run_data (c, l->p.rnn.carry));
  float *dx = tt_run_data (c, l->in_deriv[0]);
  float *dh0 = tt_run_data (c, l->in_deriv[1]);
  if (dx)
    tt_rnn_input_grad (&s, dx);
  if (dh0)
    tt_rnn_state_grad (&s, dh0);
}

/* feature cache */
static const char *
rnncell_varies (const tt_layer * l)
{
  return tt_recurrent_varies (&l->p.rnn.rec);
}

const tt_layer_ops tt_rnncell_layer_ops = {
  .type = "rnncell",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .keys = rnncell_keys,
  .has_weights = true,
  .parse = rnncell_parse,
  .infer = rnncell_infer,
  .declare = rnncell_declare,
  .forward = rnncell_forward,
  .calc_gradient = rnncell_calc_gradient,
  .calc_derivative = rnncell_calc_derivative,
  .multiply_adds = tt_recurrent_multiply_adds,
  .training_varies = rnncell_varies,
};
