/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mol_attention: nntrainer's mixture-of-logistics attention (its
 * Tacotron-style decoders'), input_layers = query, value, state[,
 * length]: query 1:1:D, value 1:T:D, state 1:1:mol_k, length 1:1:1 (a
 * float, rounded down: the scores from it on are zeroed). A dense layer
 * (fc_w, fc_bias) and tanh on the query, a product without bias
 * (fc_proj_w) into 3 mol_k sources of kappa (exp), beta (exp) and alpha
 * (softmax); the new state m = state + kappa; the score of time step t
 * (from 0) sum_k alpha_k (sigmoid ((t + 1.5 - m_k) / (beta_k + 1e-8)) -
 * sigmoid ((t + 0.5 - m_k) / (beta_k + 1e-8))); output 0 the scores'
 * weighted sum of the values, 1:1:D; output 1 (NAME(1), when a layer
 * reads it) the new state, 1:1:mol_k. Weights in nntrainer's order and
 * layout: fc_w [D][unit], fc_bias [unit], fc_proj_w [unit][3 mol_k]
 * (kappa's columns, beta's, alpha's). The arithmetic after the products
 * is kernels/mol_attention.c's.
 *
 * Scratch: tanh of the first product, kappa | beta | alpha, m and the
 * scores, kept from forward to the phase running the backward
 * (calcGradient when the weights train, else calcDerivative); the
 * derivatives of the sources and of the first product in backward (that
 * of the first product to calcDerivative, the query's derivative); the
 * scores' derivative is written over the scores. The length gets a zero
 * derivative.
 */
#include "tt_layer.h"

#include <stdio.h>
#include <string.h>

static const char *const mol_keys[] = { "unit", "mol_k", NULL };

static tt_status
mol_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st;
  memset (&l->p.mol, 0, sizeof l->p.mol);
  if ((st = tt_section_uint (s, "unit", 1, 1u << 20, &l->p.mol.unit, err)) ||
      (st = tt_section_uint (s, "mol_k", 1, 1u << 16, &l->p.mol.k, err)))
    return st;
  if (!tt_section_has (s, "unit"))
    return tt_section_error (s, "unit", err, TT_ERR_INVALID,
        "missing key (the width of the first dense product)");
  if (!tt_section_has (s, "mol_k"))
    return tt_section_error (s, "mol_k", err, TT_ERR_INVALID,
        "missing key (the number of logistics, the state's width)");
  if (l->disable_bias)
    return tt_section_error (s, "disable_bias", err, TT_ERR_INVALID,
        "mol_attention always has fc_bias (nntrainer's layer); allowed: "
        "false");
  return TT_OK;
}

static tt_status
mol_shape_error (const tt_init_ctx * c, const tt_layer * l, uint32_t i,
    const char *role, const char *want, tt_error * err)
{
  const tt_dims d = l->in_dims[i];
  return tt_fail (err, TT_ERR_INVALID,
      "%s: [%s] input_layers: %s '%s' gives %u:%u:%u, not %s", c->path,
      l->section, role, l->inputs[i].name, d.c, d.h, d.w, want);
}

static tt_status
mol_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  if (l->n_inputs < 3 || l->n_inputs > 4)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: mol_attention takes 3 or 4 inputs "
        "(input_layers = query, value, state[, length]), not %u", c->path,
        l->section, l->n_inputs);
  const tt_dims q = l->in_dims[0], v = l->in_dims[1], st = l->in_dims[2];
  const uint32_t k = l->p.mol.k, unit = l->p.mol.unit;
  char want[96];
  if (q.c != 1 || q.h != 1)
    return mol_shape_error (c, l, 0, "query", "1:1:features", err);
  if (v.c != 1 || v.w != q.w) {
    snprintf (want, sizeof want, "1:length:%u (the query's width)", q.w);
    return mol_shape_error (c, l, 1, "value", want, err);
  }
  if (st.c != 1 || st.h != 1 || st.w != k) {
    snprintf (want, sizeof want, "1:1:%u (1:1:mol_k)", k);
    return mol_shape_error (c, l, 2, "state", want, err);
  }
  if (l->n_inputs == 4) {
    const tt_dims m = l->in_dims[3];
    if (m.c != 1 || m.h != 1 || m.w != 1)
      return mol_shape_error (c, l, 3, "length", "1:1:1", err);
  }
  if ((uint64_t) q.w * unit + (uint64_t) unit * 3 * k > (1u << 30) ||
      (uint64_t) v.h * (k + v.w) > (1u << 30))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] unit: %u units and %u logistics over %u:%u values are too "
        "large", c->path, l->section, unit, k, v.h, v.w);
  l->p.mol.t = v.h;
  l->p.mol.d = q.w;
  l->out_dims[0] = (tt_dims) {
  1, 1, q.w};
  l->out_dims[1] = (tt_dims) {
  1, 1, k};
  tt_weight *w = tt_layer_add_weight (l, "fc_w", (size_t) q.w * unit,
      l->weight_init, q.w, unit, true);
  w->decay = l->weight_decay;
  w->l2 = l->l2_constant;
  tt_weight *b = tt_layer_add_weight (l, "fc_bias", unit, l->bias_init, q.w,
      unit, true);
  b->decay = l->bias_decay;
  w = tt_layer_add_weight (l, "fc_proj_w", (size_t) unit * 3 * k,
      l->weight_init, unit, 3 * k, true);
  w->decay = l->weight_decay;
  w->l2 = l->l2_constant;
  return TT_OK;
}

static bool
mol_runs_gradient (const tt_layer * l)
{
  return l->weights[0].grad >= 0;
}

static void
mol_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch_size, unit = l->p.mol.unit, k = l->p.mol.k;
  const bool grad = mol_runs_gradient (l), deriv = l->needs_derivative;
  const tt_phase bphase = grad ? TT_PHASE_GRADIENT : TT_PHASE_DERIVATIVE;
  l->p.mol.hidden = tt_init_scratch_by_samples (c, "hidden", batch * unit);
  l->p.mol.proj = tt_init_scratch_by_samples (c, "proj", batch * 3 * k);
  l->p.mol.m = tt_init_scratch_by_samples (c, "state", batch * k);
  l->p.mol.scores = tt_init_scratch_by_samples (c, "scores",
      batch * l->p.mol.t);
  const int kept[4] = { l->p.mol.hidden, l->p.mol.proj, l->p.mol.m,
    l->p.mol.scores
  };
  for (int i = 0; i < 4; i++)
    tt_init_use (c, kept[i], TT_PHASE_FORWARD);
  l->p.mol.dproj = l->p.mol.dhidden = -1;
  if (!grad && !deriv)
    return;
  for (int i = 0; i < 4; i++)
    tt_init_use (c, kept[i], bphase);
  l->p.mol.dproj = tt_init_scratch_by_samples (c, "proj:deriv", batch * 3 * k);
  tt_init_use (c, l->p.mol.dproj, bphase);
  l->p.mol.dhidden = tt_init_scratch_by_samples (c, "hidden:deriv",
      batch * unit);
  tt_init_use (c, l->p.mol.dhidden, bphase);
  if (deriv)
    tt_init_use (c, l->p.mol.dhidden, TT_PHASE_DERIVATIVE);
  /* backward reads the values and the length; the values' and the
   * state's derivatives are written with it */
  for (uint32_t i = 1; i < l->n_inputs; i++)
    if (i != 2)
      tt_init_use (c, l->in[i], bphase);
  for (uint32_t i = 1; i < 3; i++)
    if (l->in_deriv[i] >= 0)
      tt_init_use (c, l->in_deriv[i], bphase);
  /* the weight gradients read the query */
  if (grad)
    tt_init_use (c, l->in[0], TT_PHASE_GRADIENT);
}

/* y = x W: rows x n from rows x k */
static void
mol_product (const tt_run_ctx * c, bool trans_b, const float *x,
    const float *w, size_t rows, size_t k, size_t n, float *y)
{
  tt_gemm_split (c->threads, false, trans_b, (int) rows, (int) n, (int) k,
      1.0f, x, (int) k, w, trans_b ? (int) k : (int) n, 0.0f, y, (int) n);
}

static tt_mol
mol_setup (const tt_run_ctx * c, const tt_layer * l)
{
  tt_mol a = {
    .batch = c->batch,.t = l->p.mol.t,.k = l->p.mol.k,.d = l->p.mol.d,
    .proj = tt_run_data (c, l->p.mol.proj),
    .m = tt_run_data (c, l->p.mol.m),
    .scores = tt_run_data (c, l->p.mol.scores),
    .state = tt_run_data (c, l->in[2]),
    .len = l->n_inputs == 4 ? tt_run_data (c, l->in[3]) : NULL,
    .value = tt_run_data (c, l->in[1]),
    .threads = c->threads,
  };
  return a;
}

static void
mol_forward (const tt_run_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch, unit = l->p.mol.unit, k = l->p.mol.k;
  const size_t d = l->p.mol.d;
  /* h = tanh (query fc_w + fc_bias): the bias rows, the product added */
  float *h = tt_run_data (c, l->p.mol.hidden);
  const float *bias = tt_run_data (c, l->weights[1].value);
  for (size_t b = 0; b < batch; b++)
    memcpy (h + b * unit, bias, unit * sizeof *h);
  tt_gemm_split (c->threads, false, false, (int) batch, (int) unit, (int) d,
      1.0f, tt_run_data (c, l->in[0]), (int) d,
      tt_run_data (c, l->weights[0].value), (int) unit, 1.0f, h, (int) unit);
  tt_activation_forward_split (c->threads, TT_ACT_TANH, batch, unit, h, h);
  tt_mol a = mol_setup (c, l);
  mol_product (c, false, h, tt_run_data (c, l->weights[2].value), batch,
      unit, 3 * k, a.proj);
  a.out = tt_run_data (c, l->out[0]);
  a.new_state = tt_run_data (c, l->out[1]);
  tt_mol_forward (&a);
}

/* the derivatives of the sources (and the values', the state's), then
 * of the first product */
static void
mol_backward_common (const tt_run_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch, unit = l->p.mol.unit, k = l->p.mol.k;
  tt_mol a = mol_setup (c, l);
  a.dout = tt_run_data (c, l->out_deriv[0]);
  a.dnew_state = tt_run_data (c, l->out_deriv[1]);
  a.dvalue = tt_run_data (c, l->in_deriv[1]);
  a.dstate = tt_run_data (c, l->in_deriv[2]);
  a.dproj = tt_run_data (c, l->p.mol.dproj);
  tt_mol_backward (&a);
  float *dh = tt_run_data (c, l->p.mol.dhidden);
  mol_product (c, true, a.dproj, tt_run_data (c, l->weights[2].value), batch,
      3 * k, unit, dh);
  const float *h = tt_run_data (c, l->p.mol.hidden);
  tt_activation_backward_split (c->threads, TT_ACT_TANH, batch, unit, h, h,
      dh, dh);
}

static void
mol_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (!mol_runs_gradient (l))
    return;
  const size_t batch = c->batch, unit = l->p.mol.unit, k = l->p.mol.k;
  const size_t d = l->p.mol.d;
  mol_backward_common (c, l);
  const float *dh = tt_run_data (c, l->p.mol.dhidden);
  tt_gemm_split (c->threads, true, false, (int) d, (int) unit, (int) batch,
      1.0f, tt_run_data (c, l->in[0]), (int) d, dh, (int) unit, 0.0f,
      tt_run_data (c, l->weights[0].grad), (int) unit);
  tt_column_sums (dh, batch, unit, 0, unit,
      tt_run_data (c, l->weights[1].grad));
  tt_gemm_split (c->threads, true, false, (int) unit, (int) (3 * k),
      (int) batch, 1.0f, tt_run_data (c, l->p.mol.hidden), (int) unit,
      tt_run_data (c, l->p.mol.dproj), (int) (3 * k), 0.0f,
      tt_run_data (c, l->weights[2].grad), (int) (3 * k));
}

static void
mol_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  if (!mol_runs_gradient (l))
    mol_backward_common (c, l);
  const size_t batch = c->batch, unit = l->p.mol.unit, d = l->p.mol.d;
  float *dq = tt_run_data (c, l->in_deriv[0]);
  if (dq)
    mol_product (c, true, tt_run_data (c, l->p.mol.dhidden),
        tt_run_data (c, l->weights[0].value), batch, unit, d, dq);
  float *dlen = l->n_inputs == 4 ? tt_run_data (c, l->in_deriv[3]) : NULL;
  if (dlen)
    memset (dlen, 0, batch * sizeof *dlen);
}

/* the two products once per sample; the scores' weighted sum of the
 * values */
static void
mol_multiply_adds (const tt_layer * l, uint64_t * weighted, uint64_t * between)
{
  *weighted = (uint64_t) l->weights[0].count + l->weights[2].count;
  *between = (uint64_t) l->p.mol.t * l->p.mol.d;
}

const tt_layer_ops tt_mol_attention_layer_ops = {
  .type = "mol_attention",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .keys = mol_keys,
  .has_weights = true,
  .parse = mol_parse,
  .infer = mol_infer,
  .declare = mol_declare,
  .forward = mol_forward,
  .calc_gradient = mol_calc_gradient,
  .calc_derivative = mol_calc_derivative,
  .multiply_adds = mol_multiply_adds,
  /* the attended values, and the new state when a layer reads it */
  .outputs = 2,
};
