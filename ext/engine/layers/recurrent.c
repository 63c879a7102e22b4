/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What nntrainer's recurrent layers (lstm, gru) share: the keys unit,
 * return_sequences, integrate_bias, hidden_state_activation,
 * recurrent_activation and dropout_rate, the input shape
 * 1:timesteps:features, the output 1:timesteps:unit or 1:1:unit, and the
 * weights in nntrainer's order: weight_ih [features][gates*unit],
 * weight_hh [unit][gates*unit], then bias_h with integrate_bias, else
 * bias_ih and bias_hh [gates*unit].
 *
 * dropout_rate, as nntrainer: in training, each step's hidden state is
 * multiplied by a mask (0 with probability rate, else 1 / (1 - rate);
 * kept as one byte an element, 1 where kept: tt_rng_mask_bytes) before
 * it reaches the output and the next step. The mask is drawn from
 * the model's stream (nntrainer thresholds an undrawn tensor) and kept for
 * backward, which masks the whole derivative of the hidden state, the
 * next step's part too (nntrainer masks only the output's part).
 */
#include "tt_layer.h"
#include "gate_act.h"

#include <string.h>

static tt_status
recurrent_activation (const tt_section * s, const char *key,
    const char *type, tt_activation * out, tt_error * err)
{
  int v = (int) *out;
  tt_status st = tt_section_enum (s, key, tt_activation_names, &v, err);
  if (st)
    return st;
  if (!tt_gate_activation_ok ((tt_activation) v))
    return tt_section_error (s, key, err, TT_ERR_INVALID,
        "'%s' is not supported in %s (its backward keeps only the "
        "activated gates): use tanh, sigmoid, relu, leaky_relu, elu or none",
        tt_section_string (s, key), type);
  *out = (tt_activation) v;
  return TT_OK;
}

tt_status
tt_recurrent_parse (const tt_section * s, const char *type,
    tt_recurrent * r, tt_error * err)
{
  tt_status st;
  r->dropout = 0.0f;
  r->act = TT_ACT_TANH;
  r->recurrent = TT_ACT_SIGMOID;
  if ((st = tt_section_uint (s, "unit", 1, 1u << 20, &r->unit, err)) ||
      (st = tt_section_bool (s, "return_sequences", &r->return_sequences,
              err)) ||
      (st = tt_section_bool (s, "integrate_bias", &r->integrate_bias, err))
      || (st = recurrent_activation (s, "hidden_state_activation", type,
              &r->act, err)) ||
      (st = recurrent_activation (s, "recurrent_activation", type,
              &r->recurrent, err)) ||
      (st = tt_section_float (s, "dropout_rate", &r->dropout, err)))
    return st;
  if (!tt_section_has (s, "unit"))
    return tt_section_error (s, "unit", err, TT_ERR_INVALID,
        "missing key (the size of the hidden state)");
  if (!(r->dropout >= 0.0f))
    return tt_section_error (s, "dropout_rate", err, TT_ERR_INVALID,
        "must not be negative (allowed: [0, 1))");
  if (!(r->dropout < 1.0f))
    return tt_section_error (s, "dropout_rate", err, TT_ERR_INVALID,
        "must be below 1 (allowed: [0, 1))");
  return TT_OK;
}

tt_status
tt_recurrent_infer (const tt_init_ctx * c, tt_layer * l, const char *type,
    const tt_recurrent * r, uint32_t gates, tt_error * err)
{
  const tt_dims in = l->in_dims[0];
  const uint32_t unit = r->unit, g = gates * unit;
  if (in.c != 1)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s]: %s needs an input of "
        "one channel (1:timesteps:features), got %u:%u:%u", c->path,
        l->section, type, in.c, in.h, in.w);
  if ((uint64_t) in.w * g > (1u << 30) || (uint64_t) unit * g > (1u << 30))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] unit: the %u x %u weights are too large", c->path,
        l->section, in.w > unit ? in.w : unit, g);
  l->out_dims[0] = (tt_dims) {
  1, r->return_sequences ? in.h : 1, unit};
  /* nntrainer's fans: [rows][cols] weights have fan_in rows, fan_out cols;
   * a single row has both equal to its width */
  tt_weight *w = tt_layer_add_weight (l, "weight_ih", (size_t) in.w * g,
      l->weight_init, in.w > 1 ? in.w : g, g, true);
  w->decay = l->weight_decay;
  w->l2 = l->l2_constant;
  w = tt_layer_add_weight (l, "weight_hh", (size_t) unit * g, l->weight_init,
      unit > 1 ? unit : g, g, true);
  w->decay = l->weight_decay;
  w->l2 = l->l2_constant;
  if (!l->disable_bias) {
    static const char *const names[3] = { "bias_h", "bias_ih", "bias_hh" };
    const int first = r->integrate_bias ? 0 : 1;
    const int last = r->integrate_bias ? 0 : 2;
    for (int k = first; k <= last; k++)
      tt_layer_add_weight (l, names[k], g, l->bias_init, g, g,
          true)->decay = l->bias_decay;
  }
  return TT_OK;
}

/* bias_ih and bias_hh (integrate_bias = false) enter the gates added
 * alike: bias_hh's gradient is bias_ih's, computed once */
void
tt_recurrent_copy_bias_grad (const tt_run_ctx * c, const tt_weight * w,
    uint32_t n_weights)
{
  if (n_weights > 3)
    memcpy (tt_run_data (c, w[3].grad), tt_run_data (c, w[2].grad),
        w[3].count * sizeof (float));
}

/* weight_ih and weight_hh (a bidirectional lstm's reverse ones too),
 * once per time step */
void
tt_recurrent_multiply_adds (const tt_layer * l, uint64_t * weighted,
    uint64_t * between)
{
  uint64_t per_step = 0;
  for (uint32_t i = 0; i < l->n_weights; i++)
    if (strstr (l->weights[i].suffix, "weight_"))
      per_step += l->weights[i].count;
  *weighted = per_step * l->in_dims[0].h;
  *between = 0;
}

void
tt_recurrent_hidden (const tt_run_ctx * c, const tt_layer * l,
    const tt_recurrent * r, int hidden_id, float **hidden, int *h_ld,
    int *h_step)
{
  const int steps = (int) l->in_dims[0].h, unit = (int) r->unit;
  if (r->return_sequences || hidden_id >= 0) {
    *hidden = r->return_sequences ? tt_run_data (c, l->out[0]) :
        tt_run_data (c, hidden_id);
    *h_ld = steps * unit;
    *h_step = unit;
  } else {
    *hidden = tt_run_data (c, l->out[0]);
    *h_ld = unit;
    *h_step = 0;
  }
}

void
tt_recurrent_last_step (const tt_run_ctx * c, const tt_layer * l,
    const tt_recurrent * r, int hidden_id, int batch)
{
  if (hidden_id < 0)
    return;
  const size_t steps = l->in_dims[0].h, unit = r->unit;
  const float *hidden = tt_run_data (c, hidden_id);
  float *y = tt_run_data (c, l->out[0]);
  for (int b = 0; b < batch; b++)
    memcpy (y + (size_t) b * unit, hidden + ((size_t) b * steps + steps - 1) *
        unit, unit * sizeof *y);
}

int
tt_recurrent_declare_mask (tt_init_ctx * c, const tt_layer * l,
    const tt_recurrent * r, bool backward, tt_phase bptt)
{
  if (r->dropout == 0.0f)
    return -1;
  int id = tt_init_scratch_bytes (c, "dropout_mask",
      (size_t) c->batch_size * l->in_dims[0].h * r->unit);
  tt_init_use (c, id, TT_PHASE_FORWARD);
  if (backward)
    tt_init_use (c, id, bptt);
  return id;
}

const uint8_t *
tt_recurrent_mask (const tt_run_ctx * c, int mask_id)
{
  return mask_id < 0 || !c->training ? NULL : tt_run_bytes (c, mask_id);
}

float
tt_recurrent_keep (const tt_recurrent * r)
{
  return 1.0f / (1.0f - r->dropout);
}

void
tt_recurrent_draw_mask (const tt_run_ctx * c, const tt_layer * l,
    tt_recurrent * r, int mask_id)
{
  if (mask_id < 0 || !c->training)
    return;
  /* a rerun (plan/remat.c) writes its own instance of the mask: the
   * same one, drawn again from the generator as it was */
  if (!c->recompute)
    r->drop_rng = *c->rng;
  tt_rng rng = r->drop_rng;
  tt_rng_mask_bytes (&rng, tt_run_bytes (c, mask_id),
      (size_t) c->batch * l->in_dims[0].h * r->unit, r->dropout);
  if (!c->recompute)
    *c->rng = rng;
}

/* the recurrent cells (rnncell, lstmcell, grucell) */
tt_status
tt_cell_check_inputs (const tt_init_ctx * c, const tt_layer * l,
    uint32_t n, uint32_t unit, tt_error * err)
{
  static const char *const what[] = { "the input", "the hidden state",
    "the cell state"
  };
  if (l->n_inputs != n)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] input_layers: %s takes "
        "%u inputs (the input, the hidden state%s), got %u", c->path,
        l->section, l->ops->type, n, n > 2 ? ", the cell state" : "",
        l->n_inputs);
  const tt_dims x = l->in_dims[0];
  if (x.c != 1 || x.h != 1)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s]: %s's input must be one "
        "step, 1:1:features, got %u:%u:%u", c->path, l->section,
        l->ops->type, x.c, x.h, x.w);
  for (uint32_t k = 1; k < n; k++) {
    const tt_dims d = l->in_dims[k];
    if (d.c != 1 || d.h != 1 || d.w != unit)
      return tt_fail (err, TT_ERR_INVALID, "%s: [%s]: %s's input %u (%s) "
          "must be 1:1:%u (unit), got %u:%u:%u", c->path, l->section,
          l->ops->type, k, what[k], unit, d.c, d.h, d.w);
  }
  return TT_OK;
}

/* feature cache */
const char *
tt_recurrent_varies (const tt_recurrent * r)
{
  return r->dropout > 0 ? "its dropout_rate draws random masks in training"
      : NULL;
}
