/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gru: nntrainer's unidirectional GRU (math in gru.c). The input is
 * 1:timesteps:features per sample; the output is 1:timesteps:unit with
 * return_sequences, else 1:1:unit (the last step). Weights in nntrainer's
 * order and layout: weight_ih [features][3*unit], weight_hh [unit][3*unit]
 * (gates z, r, g along 3*unit), then bias_h [3*unit] with integrate_bias,
 * else bias_ih and bias_hh [3*unit] (nntrainer's default); disable_bias
 * drops them. reset_after (default true, PyTorch's form) applies the reset
 * gate to h_{t-1} W_hg + b_hg; false applies it to h_{t-1} before W_hg.
 *
 * dropout_rate: recurrent.c. Not implemented, refused with the key named:
 * softmax /
 * swish / gelu as a GRU activation (backward keeps only activated gates)
 * and an input with more than one channel. nntrainer's gru has no
 * bidirectional or max_timestep key: both are refused as unknown keys.
 */
#include "tt_layer.h"


static const char *const gru_keys[] = {
  "unit", "return_sequences", "integrate_bias", "reset_after",
  "hidden_state_activation", "recurrent_activation", "dropout_rate", NULL
};

static tt_status
gru_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  l->p.gru.reset_after = true;
  tt_status st = tt_recurrent_parse (s, "a gru", &l->p.gru.rec, err);
  if (st)
    return st;
  return tt_section_bool (s, "reset_after", &l->p.gru.reset_after, err);
}

static tt_status
gru_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  return tt_recurrent_infer (c, l, "a gru", &l->p.gru.rec, 3, err);
}

static bool
gru_runs_gradient (const tt_layer * l)
{
  return l->weights[0].grad >= 0;
}

/* Scratch, by what runs. Forward holds every step's gates [B][T][4U]
 * (z, r, hn or r * h, g), so the input projection is one GEMM in every
 * mode and a forward-only layer (inference, frozen with nothing trainable
 * below) computes what training's forward does, bit for bit; it holds
 * them during forward only. A layer with a backward pass (weight
 * gradients or an input derivative) keeps them to its last backward phase
 * (the derivatives are written over them), and needs every step's hidden
 * state in backpropagation through time: the output with
 * return_sequences, else "hidden" [B][T][U]. "bptt_carry" (dh and
 * d(r * h) of one step) lives in the phase running backpropagation through
 * time: calcGradient when it runs, else calcDerivative. */
static void
gru_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch_size, steps = l->in_dims[0].h;
  const size_t unit = l->p.gru.rec.unit;
  const bool grad = gru_runs_gradient (l), deriv = l->needs_derivative;
  const tt_phase bptt = grad ? TT_PHASE_GRADIENT : TT_PHASE_DERIVATIVE;
  l->p.gru.hidden = -1;
  l->p.gru.carry = -1;
  l->p.gru.mask = tt_recurrent_declare_mask (c, l, &l->p.gru.rec,
      grad || deriv, bptt);
  l->p.gru.gates = tt_init_scratch (c, "gates", batch * steps * 4 * unit);
  tt_init_use (c, l->p.gru.gates, TT_PHASE_FORWARD);
  if (!grad && !deriv)
    return;
  tt_init_use (c, l->p.gru.gates, bptt);
  if (deriv)
    tt_init_use (c, l->p.gru.gates, TT_PHASE_DERIVATIVE);
  l->p.gru.carry = tt_init_scratch (c, "bptt_carry", batch * 2 * unit);
  tt_init_use (c, l->p.gru.carry, bptt);
  /* the hidden states: backpropagation through time and dW_hh read them */
  if (l->p.gru.rec.return_sequences) {
    tt_init_use (c, l->out[0], bptt);
  } else {
    l->p.gru.hidden = tt_init_scratch (c, "hidden", batch * steps * unit);
    tt_init_use (c, l->p.gru.hidden, TT_PHASE_FORWARD);
    tt_init_use (c, l->p.gru.hidden, bptt);
  }
  /* dW_ih reads the input */
  if (grad)
    tt_init_use (c, l->in[0], TT_PHASE_GRADIENT);
}

tt_gru
tt_gru_layer_args (const tt_run_ctx * c, const tt_layer * l, int steps)
{
  tt_gru s = {
    .batch = (int) c->batch,
    .steps = steps,
    .features = (int) l->in_dims[0].w,
    .unit = (int) l->p.gru.rec.unit,
    .act = l->p.gru.rec.act,
    .recurrent = l->p.gru.rec.recurrent,
    .reset_after = l->p.gru.reset_after,
    .w_ih = tt_run_data (c, l->weights[0].value),
    .w_hh = tt_run_data (c, l->weights[1].value),
    .bias_ih = l->n_weights > 2 ? tt_run_data (c, l->weights[2].value) : NULL,
    .bias_hh = l->n_weights > 3 ? tt_run_data (c, l->weights[3].value) : NULL,
    .gates = tt_run_data (c, l->p.gru.gates),
    .mask = tt_recurrent_mask (c, l->p.gru.mask),
    .mask_keep = tt_recurrent_keep (&l->p.gru.rec),
    .threads = c->threads,
  };
  return s;
}

static tt_gru
gru_setup (const tt_run_ctx * c, const tt_layer * l)
{
  tt_gru s = tt_gru_layer_args (c, l, (int) l->in_dims[0].h);
  tt_recurrent_hidden (c, l, &l->p.gru.rec, l->p.gru.hidden, &s.hidden,
      &s.h_ld, &s.h_step);
  return s;
}

static void
gru_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_recurrent_draw_mask (c, l, &l->p.gru.rec, l->p.gru.mask);
  const tt_gru s = gru_setup (c, l);
  tt_gru_forward (&s, tt_run_data (c, l->in[0]));
  tt_recurrent_last_step (c, l, &l->p.gru.rec, l->p.gru.hidden, s.batch);
}

static void
gru_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (!gru_runs_gradient (l))
    return;
  const tt_gru s = gru_setup (c, l);
  tt_gru_bptt (&s, tt_run_data (c, l->out_deriv[0]),
      l->p.gru.rec.return_sequences, tt_run_data (c, l->p.gru.carry));
  tt_gru_weight_grads (&s, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->weights[0].grad), tt_run_data (c, l->weights[1].grad),
      l->n_weights > 2 ? tt_run_data (c, l->weights[2].grad) : NULL,
      l->n_weights > 3 ? tt_run_data (c, l->weights[3].grad) : NULL);
}

static void
gru_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_gru s = gru_setup (c, l);
  if (!gru_runs_gradient (l))
    tt_gru_bptt (&s, tt_run_data (c, l->out_deriv[0]),
        l->p.gru.rec.return_sequences, tt_run_data (c, l->p.gru.carry));
  tt_gru_input_grad (&s, tt_run_data (c, l->in_deriv[0]));
}

/* With return_sequences the output holds the hidden states that
 * backpropagation through time reads: a layer after it must not write
 * over it in place. */
static unsigned
gru_backward_reads (const tt_layer * l)
{
  return l->p.gru.rec.return_sequences && (l->weights[0].trainable ||
      l->needs_derivative) ? TT_READS_OUTPUT : 0;
}

/* feature cache */
static const char *
gru_varies (const tt_layer * l)
{
  return tt_recurrent_varies (&l->p.gru.rec);
}

const tt_layer_ops tt_gru_layer_ops = {
  .type = "gru",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = gru_keys,
  .has_weights = true,
  .parse = gru_parse,
  .infer = gru_infer,
  .declare = gru_declare,
  .forward = gru_forward,
  .calc_gradient = gru_calc_gradient,
  .calc_derivative = gru_calc_derivative,
  .backward_reads = gru_backward_reads,
  .multiply_adds = tt_recurrent_multiply_adds,
  .training_varies = gru_varies,
};
