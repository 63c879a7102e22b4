/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lstmcell: one step of nntrainer's lstm (kernels/lstm.c with one step and
 * initial states). Three inputs, in nntrainer's order: the input
 * 1:1:features, the hidden state and the cell state, 1:1:unit each; two
 * outputs (tt_layer_ops.outputs), name(0) the new hidden state and
 * name(1) the new cell state, 1:1:unit each (an unread cell state is
 * dropped). Keys unit, integrate_bias, hidden_state_activation (tanh),
 * recurrent_activation (sigmoid), dropout_rate (on the hidden state);
 * weights as lstm's.
 *
 * zoneout_lstmcell (layer_zoneout_lstmcell.c) is this cell plus a mix of
 * its outputs with its state inputs: it shares the scratch, the forward
 * and the backward passes below (tt_lstmcell_*), its derivatives of the
 * new states given.
 */
#include "tt_layer.h"

#include <string.h>

static const char *const lstmcell_keys[] = {
  "unit", "integrate_bias", "hidden_state_activation",
  "recurrent_activation", "dropout_rate", NULL
};

static tt_status
lstmcell_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  l->p.lstm.zoneout_test = false;
  return tt_recurrent_parse (s, "an lstmcell", &l->p.lstm.rec, err);
}

tt_status
tt_lstmcell_infer (const tt_init_ctx * c, tt_layer * l, const char *type,
    tt_error * err)
{
  tt_status st = tt_cell_check_inputs (c, l, 3, l->p.lstm.rec.unit, err);
  if (st || (st = tt_recurrent_infer (c, l, type, &l->p.lstm.rec, 4, err)))
    return st;
  l->out_dims[1] = l->out_dims[0];
  return TT_OK;
}

static tt_status
lstmcell_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  return tt_lstmcell_infer (c, l, "an lstmcell", err);
}

/* the cell's weights, zoneout_lstmcell's test masks after them left out */
static uint32_t
lstmcell_weights (const tt_layer * l)
{
  return l->n_weights - (l->p.lstm.zoneout_test ? 2 : 0);
}

static bool
lstmcell_runs_gradient (const tt_layer * l)
{
  return l->weights[0].grad >= 0;
}

/* Scratch: "gates" [B][4U] and "cell" [B][U] (the new cell state, copied
 * to output 1, so that no layer reading that output in place changes
 * what backward reads) from forward to the last backward phase;
 * "bptt_carry" [B][2U] (dh, dc: dc0 at the end) to calcDerivative. */
void
tt_lstmcell_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch_size, unit = l->p.lstm.rec.unit;
  const bool grad = lstmcell_runs_gradient (l), deriv = l->needs_derivative;
  const tt_phase bptt = grad ? TT_PHASE_GRADIENT : TT_PHASE_DERIVATIVE;
  l->p.lstm.carry = -1;
  l->p.lstm.hidden_d[0] = l->p.lstm.hidden_d[1] = -1;
  l->p.lstm.gates_d[1] = l->p.lstm.cell_d[1] = -1;
  l->p.lstm.mask = tt_recurrent_declare_mask (c, l, &l->p.lstm.rec,
      grad || deriv, bptt);
  l->p.lstm.gates_d[0] = tt_init_scratch (c, "gates", batch * 4 * unit);
  l->p.lstm.cell_d[0] = tt_init_scratch (c, "cell", batch * unit);
  tt_init_use (c, l->p.lstm.gates_d[0], TT_PHASE_FORWARD);
  tt_init_use (c, l->p.lstm.cell_d[0], TT_PHASE_FORWARD);
  if (!grad && !deriv)
    return;
  tt_init_use (c, l->p.lstm.cell_d[0], bptt);
  tt_init_use (c, l->p.lstm.gates_d[0], bptt);
  tt_init_use (c, l->in[2], bptt);
  l->p.lstm.carry = tt_init_scratch (c, "bptt_carry", batch * 2 * unit);
  tt_init_use (c, l->p.lstm.carry, bptt);
  if (deriv) {
    tt_init_use (c, l->p.lstm.gates_d[0], TT_PHASE_DERIVATIVE);
    tt_init_use (c, l->p.lstm.carry, TT_PHASE_DERIVATIVE);
  }
  if (!grad)
    return;
  tt_init_use (c, l->in[0], TT_PHASE_GRADIENT);
  tt_init_use (c, l->in[1], TT_PHASE_GRADIENT);
}

static tt_lstm
lstmcell_setup (const tt_run_ctx * c, const tt_layer * l, const float *dc)
{
  tt_lstm s = tt_lstm_layer_args (c, l, 1, 0, 0, lstmcell_weights (l));
  s.hidden = tt_run_data (c, l->out[0]);
  s.h_ld = s.unit;
  s.h0 = tt_run_data (c, l->in[1]);
  s.c0 = tt_run_data (c, l->in[2]);
  s.dc_last = dc;
  return s;
}

void
tt_lstmcell_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_recurrent_draw_mask (c, l, &l->p.lstm.rec, l->p.lstm.mask);
  const tt_lstm s = lstmcell_setup (c, l, NULL);
  tt_lstm_forward (&s, tt_run_data (c, l->in[0]));
  memcpy (tt_run_data (c, l->out[1]), s.cell,
      (size_t) s.batch * s.unit * sizeof *s.cell);
}

void
tt_lstmcell_gradient (const tt_run_ctx * c, tt_layer * l, const float *dh,
    const float *dc)
{
  if (!lstmcell_runs_gradient (l))
    return;
  const tt_lstm s = lstmcell_setup (c, l, dc);
  tt_lstm_bptt (&s, dh, false, tt_run_data (c, l->p.lstm.carry));
  const uint32_t n_weights = lstmcell_weights (l);
  float *db = n_weights > 2 ? tt_run_data (c, l->weights[2].grad) : NULL;
  tt_lstm_weight_grads (&s, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->weights[0].grad), tt_run_data (c, l->weights[1].grad),
      db);
  tt_recurrent_copy_bias_grad (c, l->weights, n_weights);
}

void
tt_lstmcell_derivative (const tt_run_ctx * c, tt_layer * l, const float *dh,
    const float *dc)
{
  const tt_lstm s = lstmcell_setup (c, l, dc);
  float *carry = tt_run_data (c, l->p.lstm.carry);
  if (!lstmcell_runs_gradient (l))
    tt_lstm_bptt (&s, dh, false, carry);
  float *dx = tt_run_data (c, l->in_deriv[0]);
  float *dh0 = tt_run_data (c, l->in_deriv[1]);
  float *dc0 = tt_run_data (c, l->in_deriv[2]);
  if (dx)
    tt_lstm_input_grad (&s, dx, false);
  if (dh0)
    tt_lstm_state_grad (&s, dh0);
  if (dc0)
    memcpy (dc0, carry + (size_t) s.batch * s.unit,
        (size_t) s.batch * s.unit * sizeof *dc0);
}

static void
lstmcell_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  tt_lstmcell_gradient (c, l, tt_run_data (c, l->out_deriv[0]),
      tt_run_data (c, l->out_deriv[1]));
}

static void
lstmcell_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  tt_lstmcell_derivative (c, l, tt_run_data (c, l->out_deriv[0]),
      tt_run_data (c, l->out_deriv[1]));
}

/* feature cache */
static const char *
lstmcell_varies (const tt_layer * l)
{
  return tt_recurrent_varies (&l->p.lstm.rec);
}

const tt_layer_ops tt_lstmcell_layer_ops = {
  .type = "lstmcell",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .keys = lstmcell_keys,
  .has_weights = true,
  .parse = lstmcell_parse,
  .infer = lstmcell_infer,
  .declare = tt_lstmcell_declare,
  .forward = tt_lstmcell_forward,
  .calc_gradient = lstmcell_calc_gradient,
  .calc_derivative = lstmcell_calc_derivative,
  .outputs = 2,
  .multiply_adds = tt_recurrent_multiply_adds,
  .training_varies = lstmcell_varies,
};
