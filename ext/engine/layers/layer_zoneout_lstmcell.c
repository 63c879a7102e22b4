/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zoneout_lstmcell: nntrainer's lstmcell (layer_lstmcell.c: inputs,
 * outputs, weights, passes) whose new states are mixed with its state
 * inputs. In training, with masks M_h and M_c [B][U] (1 with probability
 * 1 - rate, else 0),
 *
 *   h = M_h * h_lstm + (1 - M_h) * h_prev,
 *   c = M_c * c_lstm + (1 - M_c) * c_prev,
 *
 * h_lstm computed from c_lstm (the mix acts on the outputs only), so that
 * each element keeps its previous value with probability rate. test =
 * true takes M_h and M_c from two weights instead (nntrainer's,
 * [max_timestep * B][U] each, the step's B rows at timestep), not
 * trained. At inference both states are the expectations, (1 - rate) *
 * new + rate * previous (nntrainer leaves zoneout at inference undone).
 *
 * Keys: lstmcell's but dropout_rate, and hidden_state_zoneout_rate,
 * cell_state_zoneout_rate ([0, 1], 0), test (false), max_timestep and
 * timestep (required, as nntrainer: timestep < max_timestep).
 */
#include "tt_layer.h"

static const char *const zoneout_keys[] = {
  "unit", "integrate_bias", "hidden_state_activation",
  "recurrent_activation", "hidden_state_zoneout_rate",
  "cell_state_zoneout_rate", "test", "max_timestep", "timestep", NULL
};

static tt_status
zoneout_rate (const tt_section * s, const char *key, float *out, tt_error * err)
{
  *out = 0.0f;
  tt_status st = tt_section_float (s, key, out, err);
  if (st)
    return st;
  if (!(*out >= 0.0f && *out <= 1.0f))
    return tt_section_error (s, key, err, TT_ERR_INVALID,
        "must be a probability (allowed: [0, 1])");
  return TT_OK;
}

static tt_status
zoneout_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  l->p.lstm.zoneout_test = false;
  l->p.lstm.max_timestep = 0;
  l->p.lstm.timestep = 0;
  tt_status st = tt_recurrent_parse (s, "a zoneout_lstmcell", &l->p.lstm.rec,
      err);
  if (st || (st = zoneout_rate (s, "hidden_state_zoneout_rate",
              &l->p.lstm.zoneout[0], err)) ||
      (st = zoneout_rate (s, "cell_state_zoneout_rate",
              &l->p.lstm.zoneout[1], err)) ||
      (st = tt_section_bool (s, "test", &l->p.lstm.zoneout_test, err)) ||
      (st = tt_section_uint (s, "max_timestep", 1, 1u << 20,
              &l->p.lstm.max_timestep, err)) ||
      (st = tt_section_uint (s, "timestep", 0, (1u << 20) - 1,
              &l->p.lstm.timestep, err)))
    return st;
  if (!tt_section_has (s, "max_timestep"))
    return tt_section_error (s, "max_timestep", err, TT_ERR_INVALID,
        "missing key (the steps the cell is unrolled for, as nntrainer "
        "requires it)");
  if (!tt_section_has (s, "timestep"))
    return tt_section_error (s, "timestep", err, TT_ERR_INVALID,
        "missing key (this cell's step, as nntrainer requires it)");
  if (l->p.lstm.timestep >= l->p.lstm.max_timestep)
    return tt_section_error (s, "timestep", err, TT_ERR_INVALID,
        "%u is not below max_timestep = %u (allowed: 0 to %u)",
        l->p.lstm.timestep, l->p.lstm.max_timestep, l->p.lstm.max_timestep - 1);
  return TT_OK;
}

static tt_status
zoneout_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  tt_status st = tt_lstmcell_infer (c, l, "a zoneout_lstmcell", err);
  if (st || !l->p.lstm.zoneout_test)
    return st;
  const size_t n = (size_t) l->p.lstm.max_timestep * c->batch_size *
      l->p.lstm.rec.unit;
  if (n > (1u << 30))
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] max_timestep: the %u x "
        "%u x %u zoneout masks are too large", c->path, l->section,
        l->p.lstm.max_timestep, c->batch_size, l->p.lstm.rec.unit);
  tt_layer_add_weight (l, "hidden_state_zoneout_mask", n, TT_INIT_ZEROS, 1, 1,
      false);
  tt_layer_add_weight (l, "cell_state_zoneout_mask", n, TT_INIT_ZEROS, 1, 1,
      false);
  return TT_OK;
}

/* drawn masks: a rate above 0 without test */
static bool
zoneout_draws (const tt_layer * l)
{
  return !l->p.lstm.zoneout_test && (l->p.lstm.zoneout[0] > 0.0f ||
      l->p.lstm.zoneout[1] > 0.0f);
}

static bool
zoneout_masks (const tt_layer * l)
{
  return l->p.lstm.zoneout_test || zoneout_draws (l);
}

/* lstmcell's scratch, and with masks: "zoneout_mask" [2][B][U] (drawn)
 * from forward to the last backward phase, "zoneout_d" [2][B][U] (the
 * masked derivatives of the new states) in the phase running
 * backpropagation */
static void
zoneout_declare (tt_init_ctx * c, tt_layer * l)
{
  tt_lstmcell_declare (c, l);
  l->p.lstm.zoneout_mask = l->p.lstm.zoneout_d = -1;
  const size_t n = (size_t) 2 * c->batch_size * l->p.lstm.rec.unit;
  const bool grad = l->weights[0].grad >= 0, deriv = l->needs_derivative;
  const tt_phase bptt = grad ? TT_PHASE_GRADIENT : TT_PHASE_DERIVATIVE;
  if (zoneout_draws (l)) {
    l->p.lstm.zoneout_mask = tt_init_scratch (c, "zoneout_mask", n);
    tt_init_use (c, l->p.lstm.zoneout_mask, TT_PHASE_FORWARD);
    if (grad)
      tt_init_use (c, l->p.lstm.zoneout_mask, TT_PHASE_GRADIENT);
    if (deriv)
      tt_init_use (c, l->p.lstm.zoneout_mask, TT_PHASE_DERIVATIVE);
  }
  if (zoneout_masks (l) && (grad || deriv)) {
    l->p.lstm.zoneout_d = tt_init_scratch (c, "zoneout_d", n);
    tt_init_use (c, l->p.lstm.zoneout_d, bptt);
  }
}

/* test: the step's rows of mask weight k (0 hidden, 1 cell) */
static const float *
zoneout_test_rows (const tt_run_ctx * c, const tt_layer * l, int k)
{
  const float *w = tt_run_data (c, l->weights[l->n_weights - 2 + k].value);
  return w + (size_t) l->p.lstm.timestep * c->batch * l->p.lstm.rec.unit;
}

/* the mask of state k (0 hidden, 1 cell) in training, NULL: none */
static const float *
zoneout_mask_of (const tt_run_ctx * c, const tt_layer * l, int k)
{
  if (!c->training || !zoneout_masks (l))
    return NULL;
  if (l->p.lstm.zoneout_test)
    return zoneout_test_rows (c, l, k);
  return (const float *) tt_run_data (c, l->p.lstm.zoneout_mask) +
      (size_t) k *c->batch * l->p.lstm.rec.unit;
}

/* y = m * y + (1 - m) * prev, n values */
TT_VECTOR_CLONES static void
zoneout_mix (size_t n, float *restrict y, const float *restrict m,
    const float *restrict prev)
{
  for (size_t i = 0; i < n; i++)
    y[i] = m[i] * y[i] + (1.0f - m[i]) * prev[i];
}

/* inference: y = (1 - rate) * y + rate * prev */
TT_VECTOR_CLONES static void
zoneout_expect (size_t n, float *restrict y, float rate,
    const float *restrict prev)
{
  for (size_t i = 0; i < n; i++)
    y[i] = (1.0f - rate) * y[i] + rate * prev[i];
}

/* d = m * dy (dy NULL: zeros) */
TT_VECTOR_CLONES static void
zoneout_mask_d (size_t n, float *restrict d, const float *restrict m,
    const float *restrict dy)
{
  for (size_t i = 0; i < n; i++)
    d[i] = dy ? m[i] * dy[i] : 0.0f;
}

/* dprev += (1 - m) * dy */
TT_VECTOR_CLONES static void
zoneout_residual (size_t n, float *restrict dprev, const float *restrict m,
    const float *restrict dy)
{
  for (size_t i = 0; i < n; i++)
    dprev[i] += (1.0f - m[i]) * dy[i];
}

static void
zoneout_forward (const tt_run_ctx * c, tt_layer * l)
{
  const size_t n = (size_t) c->batch * l->p.lstm.rec.unit;
  if (c->training && zoneout_draws (l)) {
    /* a rerun (plan/remat.c) draws the same masks again */
    if (!c->recompute)
      l->p.lstm.rec.drop_rng = *c->rng;
    tt_rng rng = l->p.lstm.rec.drop_rng;
    float *m = tt_run_data (c, l->p.lstm.zoneout_mask);
    tt_rng_mask (&rng, m, n, l->p.lstm.zoneout[0], 1.0f);
    tt_rng_mask (&rng, m + n, n, l->p.lstm.zoneout[1], 1.0f);
    if (!c->recompute)
      *c->rng = rng;
  }
  tt_lstmcell_forward (c, l);
  for (int k = 0; k < 2; k++) {
    float *y = tt_run_data (c, l->out[k]);
    const float *prev = tt_run_data (c, l->in[1 + k]);
    const float *m = zoneout_mask_of (c, l, k);
    if (!y)
      continue;
    if (m)
      zoneout_mix (n, y, m, prev);
    else if (!c->training && l->p.lstm.zoneout[k] > 0.0f)
      zoneout_expect (n, y, l->p.lstm.zoneout[k], prev);
  }
}

/* the derivatives the lstmcell's backward takes: the new states' masked,
 * into zoneout_d (dy NULL without masks: the outputs' own) */
static void
zoneout_masked_d (const tt_run_ctx * c, const tt_layer * l,
    const float **dh, const float **dc)
{
  *dh = tt_run_data (c, l->out_deriv[0]);
  *dc = tt_run_data (c, l->out_deriv[1]);
  if (!zoneout_masks (l))
    return;
  const size_t n = (size_t) c->batch * l->p.lstm.rec.unit;
  float *d = tt_run_data (c, l->p.lstm.zoneout_d);
  zoneout_mask_d (n, d, zoneout_mask_of (c, l, 0), *dh);
  zoneout_mask_d (n, d + n, zoneout_mask_of (c, l, 1), *dc);
  *dh = d;
  *dc = d + n;
}

static void
zoneout_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (l->weights[0].grad < 0)
    return;
  const float *dh, *dc;
  zoneout_masked_d (c, l, &dh, &dc);
  tt_lstmcell_gradient (c, l, dh, dc);
}

static void
zoneout_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const float *dh = NULL, *dc = NULL;
  if (l->weights[0].grad < 0)
    zoneout_masked_d (c, l, &dh, &dc);
  tt_lstmcell_derivative (c, l, dh, dc);
  if (!zoneout_masks (l))
    return;
  /* the kept previous states' share */
  const size_t n = (size_t) c->batch * l->p.lstm.rec.unit;
  for (int k = 0; k < 2; k++) {
    float *dprev = tt_run_data (c, l->in_deriv[1 + k]);
    const float *dy = tt_run_data (c, l->out_deriv[k]);
    if (dprev && dy)
      zoneout_residual (n, dprev, zoneout_mask_of (c, l, k), dy);
  }
}

/* feature cache */
static const char *
zoneout_varies (const tt_layer * l)
{
  if (zoneout_draws (l))
    return "its zoneout draws random masks in training";
  return tt_recurrent_varies (&l->p.lstm.rec);
}

const tt_layer_ops tt_zoneout_lstmcell_layer_ops = {
  .type = "zoneout_lstmcell",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .keys = zoneout_keys,
  .has_weights = true,
  .parse = zoneout_parse,
  .infer = zoneout_infer,
  .declare = zoneout_declare,
  .forward = zoneout_forward,
  .calc_gradient = zoneout_calc_gradient,
  .calc_derivative = zoneout_calc_derivative,
  .outputs = 2,
  .multiply_adds = tt_recurrent_multiply_adds,
  .training_varies = zoneout_varies,
};
