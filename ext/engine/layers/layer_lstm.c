/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lstm: nntrainer's unidirectional LSTM (math in lstm.c). The input is
 * 1:timesteps:features per sample; the output is 1:timesteps:unit with
 * return_sequences, else 1:1:unit (the last step). Weights in nntrainer's
 * order and layout: weight_ih [features][4*unit], weight_hh [unit][4*unit]
 * (gates i, f, g, o along 4*unit), then bias_h [4*unit] with
 * integrate_bias, else bias_ih and bias_hh [4*unit] (nntrainer's default);
 * disable_bias drops them.
 *
 * dropout_rate: recurrent.c. Not implemented, refused with the key named:
 * bidirectional = true, softmax / swish / gelu as an LSTM activation (backward
 * keeps only activated gates), an input with more than one channel, and
 * max_timestep above the input's timesteps (nntrainer would unroll past
 * the input; at or below it the key changes nothing and is accepted).
 */
#include "tt_layer.h"

#include <string.h>

static const char *const lstm_keys[] = {
  "unit", "return_sequences", "integrate_bias", "hidden_state_activation",
  "recurrent_activation", "bidirectional", "dropout_rate", "max_timestep",
  NULL
};

static tt_status
lstm_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st;
  bool bidirectional = false;
  if ((st = tt_recurrent_parse (s, "an lstm", &l->p.lstm.rec, err)) ||
      (st = tt_section_bool (s, "bidirectional", &bidirectional, err)) ||
      (st = tt_section_uint (s, "max_timestep", 1, 1u << 24,
              &l->p.lstm.max_timestep, err)))
    return st;
  if (bidirectional)
    return tt_section_error (s, "bidirectional", err, TT_ERR_INVALID,
        "a bidirectional lstm is not implemented (only false)");
  return TT_OK;
}

static tt_status
lstm_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims in = l->in_dims[0];
  if (l->p.lstm.max_timestep > in.h)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] max_timestep: %u is more "
        "than the input's %u timesteps (1:%u:%u); nntrainer would unroll "
        "past the input: not supported", c->path, l->section,
        l->p.lstm.max_timestep, in.h, in.h, in.w);
  return tt_recurrent_infer (c, l, "an lstm", &l->p.lstm.rec, 4, err);
}

static bool
lstm_runs_gradient (const tt_layer * l)
{
  return l->weights[0].grad >= 0;
}

/* Scratch, by what runs. Forward holds every step's gates [B][T][4U] and
 * cells [B][T][U], so the input projection is one GEMM in every mode and a
 * forward-only layer (inference, frozen with nothing trainable below)
 * computes what training's forward does, bit for bit; it holds them
 * during forward only. A layer with a backward pass (weight gradients or
 * an input derivative) keeps them to its last backward phase (the gate
 * derivatives are written over the gates); "hidden" [B][T][U] holds the
 * hidden states for dW_hh when the output does not (no
 * return_sequences); "bptt_carry" (dh, dc of one step) lives in the phase
 * running backpropagation through time: calcGradient when it runs, else
 * calcDerivative. */
static void
lstm_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch_size, steps = l->in_dims[0].h;
  const size_t unit = l->p.lstm.rec.unit;
  const bool grad = lstm_runs_gradient (l), deriv = l->needs_derivative;
  const tt_phase bptt = grad ? TT_PHASE_GRADIENT : TT_PHASE_DERIVATIVE;
  l->p.lstm.hidden = -1;
  l->p.lstm.carry = -1;
  l->p.lstm.mask = tt_recurrent_declare_mask (c, l, &l->p.lstm.rec,
      grad || deriv, bptt);
  l->p.lstm.gates = tt_init_scratch (c, "gates", batch * steps * 4 * unit);
  l->p.lstm.cell = tt_init_scratch (c, "cell", batch * steps * unit);
  tt_init_use (c, l->p.lstm.gates, TT_PHASE_FORWARD);
  tt_init_use (c, l->p.lstm.cell, TT_PHASE_FORWARD);
  if (!grad && !deriv)
    return;
  tt_init_use (c, l->p.lstm.cell, bptt);
  tt_init_use (c, l->p.lstm.gates, bptt);
  if (deriv)
    tt_init_use (c, l->p.lstm.gates, TT_PHASE_DERIVATIVE);
  l->p.lstm.carry = tt_init_scratch (c, "bptt_carry", batch * 2 * unit);
  tt_init_use (c, l->p.lstm.carry, bptt);
  if (!grad)
    return;
  /* dW_ih reads the input, dW_hh the hidden states */
  tt_init_use (c, l->in[0], TT_PHASE_GRADIENT);
  if (l->p.lstm.rec.return_sequences) {
    tt_init_use (c, l->out[0], TT_PHASE_GRADIENT);
  } else {
    l->p.lstm.hidden = tt_init_scratch (c, "hidden", batch * steps * unit);
    tt_init_use (c, l->p.lstm.hidden, TT_PHASE_FORWARD);
    tt_init_use (c, l->p.lstm.hidden, TT_PHASE_GRADIENT);
  }
}

static tt_lstm
lstm_setup (const tt_run_ctx * c, const tt_layer * l)
{
  const int steps = (int) l->in_dims[0].h, unit = (int) l->p.lstm.rec.unit;
  tt_lstm s = {
    .batch = (int) c->batch,
    .steps = steps,
    .features = (int) l->in_dims[0].w,
    .unit = unit,
    .act = l->p.lstm.rec.act,
    .recurrent = l->p.lstm.rec.recurrent,
    .w_ih = tt_run_data (c, l->weights[0].value),
    .w_hh = tt_run_data (c, l->weights[1].value),
    .bias = {
          l->n_weights > 2 ? tt_run_data (c, l->weights[2].value) : NULL,
        l->n_weights > 3 ? tt_run_data (c, l->weights[3].value) : NULL},
    .gates = tt_run_data (c, l->p.lstm.gates),
    .cell = tt_run_data (c, l->p.lstm.cell),
    .mask = tt_recurrent_mask (c, l, &l->p.lstm.rec, l->p.lstm.mask, false),
    .threads = c->threads,
  };
  tt_recurrent_hidden (c, l, &l->p.lstm.rec, l->p.lstm.hidden, &s.hidden,
      &s.h_ld, &s.h_step);
  return s;
}

static void
lstm_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_recurrent_mask (c, l, &l->p.lstm.rec, l->p.lstm.mask, true);
  const tt_lstm s = lstm_setup (c, l);
  tt_lstm_forward (&s, tt_run_data (c, l->in[0]));
  tt_recurrent_last_step (c, l, &l->p.lstm.rec, l->p.lstm.hidden, s.batch);
}

static void
lstm_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (!lstm_runs_gradient (l))
    return;
  const tt_lstm s = lstm_setup (c, l);
  tt_lstm_bptt (&s, tt_run_data (c, l->out_deriv[0]),
      l->p.lstm.rec.return_sequences, tt_run_data (c, l->p.lstm.carry));
  float *db = l->n_weights > 2 ? tt_run_data (c, l->weights[2].grad) : NULL;
  tt_lstm_weight_grads (&s, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->weights[0].grad), tt_run_data (c, l->weights[1].grad),
      db);
  /* bias_ih and bias_hh are added alike: the same gradient */
  if (l->n_weights > 3)
    memcpy (tt_run_data (c, l->weights[3].grad), db,
        l->weights[3].count * sizeof *db);
}

static void
lstm_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_lstm s = lstm_setup (c, l);
  if (!lstm_runs_gradient (l))
    tt_lstm_bptt (&s, tt_run_data (c, l->out_deriv[0]),
        l->p.lstm.rec.return_sequences, tt_run_data (c, l->p.lstm.carry));
  tt_lstm_input_grad (&s, tt_run_data (c, l->in_deriv[0]));
}

/* With return_sequences the output holds the hidden states dW_hh reads:
 * a layer after it must not write over it in place. */
static unsigned
lstm_backward_reads (const tt_layer * l)
{
  return l->p.lstm.rec.return_sequences && l->weights[0].trainable ?
      TT_READS_OUTPUT : 0;
}

const tt_layer_ops tt_lstm_layer_ops = {
  .type = "lstm",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = lstm_keys,
  .has_weights = true,
  .parse = lstm_parse,
  .infer = lstm_infer,
  .declare = lstm_declare,
  .forward = lstm_forward,
  .calc_gradient = lstm_calc_gradient,
  .calc_derivative = lstm_calc_derivative,
  .backward_reads = lstm_backward_reads,
  .multiply_adds = tt_recurrent_multiply_adds,
};
