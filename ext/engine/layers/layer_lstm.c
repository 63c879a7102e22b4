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
 * bidirectional = true (nntrainer's): a second LSTM with weights of its
 * own runs over the reversed sequence (kernels/lstm.c, reverse); the
 * output is 1:timesteps:2*unit (or 1:1:2*unit), each position the forward
 * direction's hidden state then the reverse one's at that position
 * (without return_sequences the last position's: the reverse direction's
 * first step, as PyTorch's output[:, -1]). Its weights follow the forward
 * ones: reverse_weight_ih, reverse_weight_hh, then reverse_bias_h or
 * reverse_bias_ih and reverse_bias_hh, laid out alike.
 *
 * dropout_rate: recurrent.c. Not implemented, refused with the key named:
 * dropout_rate with bidirectional, softmax / swish / gelu as an LSTM
 * activation (backward
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
  l->p.lstm.bidirectional = bidirectional;
  if (bidirectional && l->p.lstm.rec.dropout > 0.0f)
    return tt_section_error (s, "dropout_rate", err, TT_ERR_INVALID,
        "not implemented with bidirectional = true (allowed: 0)");
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
  tt_status st = tt_recurrent_infer (c, l, "an lstm", &l->p.lstm.rec, 4, err);
  if (st || !l->p.lstm.bidirectional)
    return st;
  /* the reverse direction's weights, as the forward ones */
  static const char *const names[] = { "reverse_weight_ih",
    "reverse_weight_hh", "reverse_bias_h", "reverse_bias_ih",
    "reverse_bias_hh"
  };
  const uint32_t n = l->n_weights;
  for (uint32_t i = 0; i < n; i++) {
    const tt_weight w = l->weights[i];
    const int k = i < 2 ? (int) i : l->p.lstm.rec.integrate_bias ? 2 :
        (int) i + 1;
    tt_weight *r = tt_layer_add_weight (l, names[k], w.count, w.init,
        w.fan_in, w.fan_out, true);
    r->decay = w.decay;
    r->l2 = w.l2;
  }
  l->out_dims[0].w *= 2;
  return TT_OK;
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
  const int dirs = l->p.lstm.bidirectional ? 2 : 1;
  static const char *const sfx[2][3] = {
    {"gates", "cell", "hidden"}, {"reverse_gates", "reverse_cell",
        "reverse_hidden"}
  };
  l->p.lstm.carry = -1;
  l->p.lstm.mask = tt_recurrent_declare_mask (c, l, &l->p.lstm.rec,
      grad || deriv, bptt);
  for (int d = 0; d < dirs; d++) {
    l->p.lstm.hidden_d[d] = -1;
    l->p.lstm.gates_d[d] = tt_init_scratch (c, sfx[d][0],
        batch * steps * 4 * unit);
    l->p.lstm.cell_d[d] = tt_init_scratch (c, sfx[d][1], batch * steps * unit);
    tt_init_use (c, l->p.lstm.gates_d[d], TT_PHASE_FORWARD);
    tt_init_use (c, l->p.lstm.cell_d[d], TT_PHASE_FORWARD);
    /* a bidirectional lstm's last position without return_sequences
     * is the reverse direction's first step: every step has rows */
    if (dirs == 2 && !l->p.lstm.rec.return_sequences) {
      l->p.lstm.hidden_d[d] = tt_init_scratch (c, sfx[d][2],
          batch * steps * unit);
      tt_init_use (c, l->p.lstm.hidden_d[d], TT_PHASE_FORWARD);
    }
  }
  if (!grad && !deriv)
    return;
  for (int d = 0; d < dirs; d++) {
    tt_init_use (c, l->p.lstm.cell_d[d], bptt);
    tt_init_use (c, l->p.lstm.gates_d[d], bptt);
    if (deriv)
      tt_init_use (c, l->p.lstm.gates_d[d], TT_PHASE_DERIVATIVE);
  }
  l->p.lstm.carry = tt_init_scratch (c, "bptt_carry", batch * 2 * unit);
  tt_init_use (c, l->p.lstm.carry, bptt);
  if (!grad)
    return;
  /* dW_ih reads the input, dW_hh the hidden states */
  tt_init_use (c, l->in[0], TT_PHASE_GRADIENT);
  if (l->p.lstm.rec.return_sequences) {
    tt_init_use (c, l->out[0], TT_PHASE_GRADIENT);
    return;
  }
  for (int d = 0; d < dirs; d++) {
    if (l->p.lstm.hidden_d[d] < 0) {
      l->p.lstm.hidden_d[d] = tt_init_scratch (c, sfx[d][2],
          batch * steps * unit);
      tt_init_use (c, l->p.lstm.hidden_d[d], TT_PHASE_FORWARD);
    }
    tt_init_use (c, l->p.lstm.hidden_d[d], TT_PHASE_GRADIENT);
  }
}

/* direction d's kernel arguments (0 forward, 1 reverse); *dy_at: where
 * its part of a position of dy (and of the output) starts */
tt_lstm
tt_lstm_layer_args (const tt_run_ctx * c, const tt_layer * l, int steps,
    int d, uint32_t w0, uint32_t nw)
{
  tt_lstm s = {
    .batch = (int) c->batch,
    .steps = steps,
    .features = (int) l->in_dims[0].w,
    .unit = (int) l->p.lstm.rec.unit,
    .act = l->p.lstm.rec.act,
    .recurrent = l->p.lstm.rec.recurrent,
    .w_ih = tt_run_data (c, l->weights[w0].value),
    .w_hh = tt_run_data (c, l->weights[w0 + 1].value),
    .bias = {
          nw > 2 ? tt_run_data (c, l->weights[w0 + 2].value) : NULL,
        nw > 3 ? tt_run_data (c, l->weights[w0 + 3].value) : NULL},
    .gates = tt_run_data (c, l->p.lstm.gates_d[d]),
    .cell = tt_run_data (c, l->p.lstm.cell_d[d]),
    .mask = tt_recurrent_mask (c, l->p.lstm.mask),
    .mask_keep = tt_recurrent_keep (&l->p.lstm.rec),
    .threads = c->threads,
  };
  return s;
}

static tt_lstm
lstm_setup (const tt_run_ctx * c, const tt_layer * l, int d, size_t *dy_at)
{
  const int steps = (int) l->in_dims[0].h, unit = (int) l->p.lstm.rec.unit;
  const bool bi = l->p.lstm.bidirectional;
  const uint32_t nw = bi ? l->n_weights / 2 : l->n_weights, w0 = d * nw;
  tt_lstm s = tt_lstm_layer_args (c, l, steps, d, w0, nw);
  s.reverse = d == 1;
  s.dy_width = bi ? 2 * unit : 0;
  *dy_at = d ? (size_t) unit : 0;
  if (!bi) {
    tt_recurrent_hidden (c, l, &l->p.lstm.rec, l->p.lstm.hidden_d[0],
        &s.hidden, &s.h_ld, &s.h_step);
  } else if (l->p.lstm.hidden_d[d] >= 0) {
    s.hidden = tt_run_data (c, l->p.lstm.hidden_d[d]);
    s.h_ld = steps * unit;
    s.h_step = unit;
  } else {
    /* return_sequences: the output's half of each position */
    s.hidden = tt_run_data (c, l->out[0]) + *dy_at;
    s.h_ld = steps * 2 * unit;
    s.h_step = 2 * unit;
  }
  return s;
}

static void
lstm_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_recurrent_draw_mask (c, l, &l->p.lstm.rec, l->p.lstm.mask);
  size_t at;
  if (!l->p.lstm.bidirectional) {
    const tt_lstm s = lstm_setup (c, l, 0, &at);
    tt_lstm_forward (&s, tt_run_data (c, l->in[0]));
    tt_recurrent_last_step (c, l, &l->p.lstm.rec, l->p.lstm.hidden_d[0],
        s.batch);
    return;
  }
  for (int d = 0; d < 2; d++) {
    const tt_lstm s = lstm_setup (c, l, d, &at);
    tt_lstm_forward (&s, tt_run_data (c, l->in[0]));
    if (l->p.lstm.rec.return_sequences)
      continue;
    /* the last position of each direction, side by side */
    const size_t T = (size_t) s.steps, U = (size_t) s.unit;
    float *y = tt_run_data (c, l->out[0]);
    for (size_t b = 0; b < (size_t) s.batch; b++)
      memcpy (y + b * 2 * U + at, s.hidden + (b * T + T - 1) * U,
          U * sizeof *y);
  }
}

static void
lstm_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (!lstm_runs_gradient (l))
    return;
  const int dirs = l->p.lstm.bidirectional ? 2 : 1;
  const uint32_t nw = l->n_weights / dirs;
  for (int d = 0; d < dirs; d++) {
    size_t at;
    const tt_lstm s = lstm_setup (c, l, d, &at);
    const tt_weight *w = l->weights + d * nw;
    tt_lstm_bptt (&s, tt_run_data (c, l->out_deriv[0]) + at,
        l->p.lstm.rec.return_sequences, tt_run_data (c, l->p.lstm.carry));
    float *db = nw > 2 ? tt_run_data (c, w[2].grad) : NULL;
    tt_lstm_weight_grads (&s, tt_run_data (c, l->in[0]),
        tt_run_data (c, w[0].grad), tt_run_data (c, w[1].grad), db);
    tt_recurrent_copy_bias_grad (c, w, nw);
  }
}

static void
lstm_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const int dirs = l->p.lstm.bidirectional ? 2 : 1;
  for (int d = 0; d < dirs; d++) {
    size_t at;
    const tt_lstm s = lstm_setup (c, l, d, &at);
    if (!lstm_runs_gradient (l))
      tt_lstm_bptt (&s, tt_run_data (c, l->out_deriv[0]) + at,
          l->p.lstm.rec.return_sequences, tt_run_data (c, l->p.lstm.carry));
    tt_lstm_input_grad (&s, tt_run_data (c, l->in_deriv[0]), d > 0);
  }
}

/* With return_sequences the output holds the hidden states dW_hh reads:
 * a layer after it must not write over it in place. */
static unsigned
lstm_backward_reads (const tt_layer * l)
{
  return l->p.lstm.rec.return_sequences && l->weights[0].trainable ?
      TT_READS_OUTPUT : 0;
}

/* feature cache */
static const char *
lstm_varies (const tt_layer * l)
{
  return tt_recurrent_varies (&l->p.lstm.rec);
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
  .training_varies = lstm_varies,
};
