/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rnn: nntrainer's simple recurrent layer (math in kernels/rnn.c),
 * h_t = act(x_t W_ih + h_{t-1} W_hh + bias), act the
 * hidden_state_activation (tanh by default). The input is
 * 1:timesteps:features per sample; the output 1:timesteps:unit with
 * return_sequences, else 1:1:unit (the last step). Weights in nntrainer's
 * order and layout (recurrent.c, one gate): weight_ih [features][unit],
 * weight_hh [unit][unit], then bias_h [unit] with integrate_bias, else
 * bias_ih and bias_hh [unit]; disable_bias drops them. dropout_rate:
 * recurrent.c's mask on each step's hidden state.
 */
#include "tt_layer.h"

#include <string.h>

static const char *const rnn_keys[] = {
  "unit", "return_sequences", "integrate_bias", "hidden_state_activation",
  "dropout_rate", NULL
};

static tt_status
rnn_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  return tt_recurrent_parse (s, "an rnn", &l->p.rnn.rec, err);
}

static tt_status
rnn_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  return tt_recurrent_infer (c, l, "an rnn", &l->p.rnn.rec, 1, err);
}

static bool
rnn_runs_gradient (const tt_layer * l)
{
  return l->weights[0].grad >= 0;
}

/* Scratch, as lstm's: "act" [B][T][U] holds every step's activated values
 * from forward to the last backward phase (the pre-activation derivatives
 * are written over them); "hidden" [B][T][U] the hidden states dW_hh
 * reads when the output does not hold them (no return_sequences);
 * "bptt_carry" [B][U] the hidden state's derivative of one step, in the
 * phase running backpropagation through time. */
static void
rnn_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch_size, steps = l->in_dims[0].h;
  const size_t unit = l->p.rnn.rec.unit;
  const bool grad = rnn_runs_gradient (l), deriv = l->needs_derivative;
  const tt_phase bptt = grad ? TT_PHASE_GRADIENT : TT_PHASE_DERIVATIVE;
  l->p.rnn.hidden = -1;
  l->p.rnn.carry = -1;
  l->p.rnn.mask = tt_recurrent_declare_mask (c, l, &l->p.rnn.rec,
      grad || deriv, bptt);
  l->p.rnn.act = tt_init_scratch (c, "act", batch * steps * unit);
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
  /* dW_ih reads the input, dW_hh the hidden states */
  tt_init_use (c, l->in[0], TT_PHASE_GRADIENT);
  if (l->p.rnn.rec.return_sequences) {
    tt_init_use (c, l->out[0], TT_PHASE_GRADIENT);
  } else {
    l->p.rnn.hidden = tt_init_scratch (c, "hidden", batch * steps * unit);
    tt_init_use (c, l->p.rnn.hidden, TT_PHASE_FORWARD);
    tt_init_use (c, l->p.rnn.hidden, TT_PHASE_GRADIENT);
  }
}

tt_rnn
tt_rnn_layer_args (const tt_run_ctx * c, const tt_layer * l, int steps)
{
  tt_rnn s = {
    .batch = (int) c->batch,
    .steps = steps,
    .features = (int) l->in_dims[0].w,
    .unit = (int) l->p.rnn.rec.unit,
    .act = l->p.rnn.rec.act,
    .w_ih = tt_run_data (c, l->weights[0].value),
    .w_hh = tt_run_data (c, l->weights[1].value),
    .bias = {
          l->n_weights > 2 ? tt_run_data (c, l->weights[2].value) : NULL,
        l->n_weights > 3 ? tt_run_data (c, l->weights[3].value) : NULL},
    .act_out = tt_run_data (c, l->p.rnn.act),
    .mask = tt_recurrent_mask (c, l->p.rnn.mask),
    .mask_keep = tt_recurrent_keep (&l->p.rnn.rec),
    .threads = c->threads,
  };
  return s;
}

static tt_rnn
rnn_setup (const tt_run_ctx * c, const tt_layer * l)
{
  tt_rnn s = tt_rnn_layer_args (c, l, (int) l->in_dims[0].h);
  tt_recurrent_hidden (c, l, &l->p.rnn.rec, l->p.rnn.hidden, &s.hidden,
      &s.h_ld, &s.h_step);
  return s;
}

static void
rnn_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_recurrent_draw_mask (c, l, &l->p.rnn.rec, l->p.rnn.mask);
  const tt_rnn s = rnn_setup (c, l);
  tt_rnn_forward (&s, tt_run_data (c, l->in[0]));
  tt_recurrent_last_step (c, l, &l->p.rnn.rec, l->p.rnn.hidden, s.batch);
}

static void
rnn_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (!rnn_runs_gradient (l))
    return;
  const tt_rnn s = rnn_setup (c, l);
  tt_rnn_bptt (&s, tt_run_data (c, l->out_deriv[0]),
      l->p.rnn.rec.return_sequences, tt_run_data (c, l->p.rnn.carry));
  float *db = l->n_weights > 2 ? tt_run_data (c, l->weights[2].grad) : NULL;
  tt_rnn_weight_grads (&s, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->weights[0].grad), tt_run_data (c, l->weights[1].grad),
      db);
  /* bias_ih and bias_hh are added alike: the same gradient */
  tt_recurrent_copy_bias_grad (c, l->weights, l->n_weights);
}

static void
rnn_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_rnn s = rnn_setup (c, l);
  if (!rnn_runs_gradient (l))
    tt_rnn_bptt (&s, tt_run_data (c, l->out_deriv[0]),
        l->p.rnn.rec.return_sequences, tt_run_data (c, l->p.rnn.carry));
  tt_rnn_input_grad (&s, tt_run_data (c, l->in_deriv[0]));
}

/* With return_sequences the output holds the hidden states dW_hh reads */
static unsigned
rnn_backward_reads (const tt_layer * l)
{
  return l->p.rnn.rec.return_sequences && l->weights[0].trainable ?
      TT_READS_OUTPUT : 0;
}

/* feature cache */
static const char *
rnn_varies (const tt_layer * l)
{
  return tt_recurrent_varies (&l->p.rnn.rec);
}

const tt_layer_ops tt_rnn_layer_ops = {
  .type = "rnn",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = rnn_keys,
  .has_weights = true,
  .parse = rnn_parse,
  .infer = rnn_infer,
  .declare = rnn_declare,
  .forward = rnn_forward,
  .calc_gradient = rnn_calc_gradient,
  .calc_derivative = rnn_calc_derivative,
  .backward_reads = rnn_backward_reads,
  .multiply_adds = tt_recurrent_multiply_adds,
  .training_varies = rnn_varies,
};
