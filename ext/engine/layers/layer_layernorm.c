/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layer_normalization: each sample normalized over the axes axis= names
 * (adjacent ones among 1 channel, 2 height, 3 width), separately for
 * every position along the other axes; y = xhat * gamma + beta, gamma and
 * beta shaped as the normalized axes. Weights in nntrainer's order:
 * gamma, beta.
 *
 * Backward reads the input and the per-group mean and 1 / std kept from
 * forward (two floats a group), not a copy of xhat: the input lives to
 * backward anyway only when nothing else frees it earlier, and a kept
 * xhat would always cost a whole activation, so the layer does not run
 * in place. nntrainer's input derivative leaves gamma out of the two
 * reductions (it multiplies by gamma after them), which is wrong unless
 * gamma is constant; this follows the mathematics (and PyTorch).
 */
#include "tt_layer.h"

#include <strings.h>

static const char *const ln_keys[] = {
  "axis", "epsilon", "gamma_initializer", "beta_initializer",
  "weight_decay", "bias_decay", NULL
};

static tt_status
ln_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  static const char *const init_keys[2] = {
    "gamma_initializer", "beta_initializer"
  };
  tt_status st;
  uint32_t axes[3], n_axes = 0;
  l->p.ln.epsilon = 0.001f;
  l->p.ln.init[0] = TT_INIT_ONES;
  l->p.ln.init[1] = TT_INIT_ZEROS;
  if (!tt_section_has (s, "axis"))
    return tt_section_error (s, "axis", err, TT_ERR_INVALID,
        "missing key (the axes to normalize: 3 for the width, or adjacent "
        "ones of 1, 2, 3 such as 2,3 or 1,2,3)");
  if ((st = tt_section_uint_list (s, "axis", 1, 3, axes, 3, &n_axes, err)) ||
      (st = tt_section_float (s, "epsilon", &l->p.ln.epsilon, err)) ||
      (st = tt_section_float (s, "weight_decay", &l->weight_decay, err)) ||
      (st = tt_section_float (s, "bias_decay", &l->bias_decay, err)))
    return st;
  l->p.ln.axes = 0;
  for (uint32_t i = 0; i < n_axes; i++)
    l->p.ln.axes |= 1u << axes[i];
  /* 1 and 3 without 2: not one block of memory per group */
  if (l->p.ln.axes == ((1u << 1) | (1u << 3)))
    return tt_section_error (s, "axis", err, TT_ERR_INVALID,
        "'%s': the axes must be adjacent (1, 2, 3, 1,2, 2,3 or 1,2,3)",
        tt_section_string (s, "axis"));
  for (int i = 0; i < 2; i++) {
    int v = (int) l->p.ln.init[i];
    const char *name = tt_section_string (s, init_keys[i]);
    if (name && !strcasecmp (name, "none"))
      v = (int) TT_INIT_ZEROS;
    else if ((st = tt_section_enum (s, init_keys[i], tt_initializer_names,
                &v, err)))
      return st;
    l->p.ln.init[i] = (tt_initializer) v;
  }
  if (!(l->p.ln.epsilon > 0))
    return tt_section_error (s, "epsilon", err, TT_ERR_INVALID,
        "must be positive");
  if (l->weight_decay < 0 || l->bias_decay < 0)
    return tt_section_error (s, l->weight_decay < 0 ? "weight_decay" :
        "bias_decay", err, TT_ERR_INVALID, "must not be negative");
  return TT_OK;
}

static tt_status
ln_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  const tt_dims d = l->in_dims[0];
  const uint32_t dim[4] = { 1, d.c, d.h, d.w };
  uint32_t first = 3, last = 1;
  for (uint32_t a = 1; a <= 3; a++)
    if (l->p.ln.axes & (1u << a)) {
      first = a < first ? a : first;
      last = a > last ? a : last;
    }
  l->p.ln.outer = l->p.ln.n = l->p.ln.inner = 1;
  for (uint32_t a = 1; a <= 3; a++) {
    if (a < first)
      l->p.ln.outer *= dim[a];
    else if (a <= last)
      l->p.ln.n *= dim[a];
    else
      l->p.ln.inner *= dim[a];
  }
  l->out_dims[0] = d;
  const uint32_t n = l->p.ln.n;
  tt_weight *g = tt_layer_add_weight (l, "gamma", n, l->p.ln.init[0], n, n,
      true);
  g->decay = l->weight_decay;
  tt_weight *b = tt_layer_add_weight (l, "beta", n, l->p.ln.init[1], n, n,
      true);
  b->decay = l->bias_decay;
  return TT_OK;
}

static void
ln_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t groups = (size_t) c->batch_size * l->p.ln.outer * l->p.ln.inner;
  l->scratch[0] = tt_init_scratch_by_samples (c, "mean", groups);
  l->scratch[1] = tt_init_scratch_by_samples (c, "rstd", groups);
}

static void
ln_forward (const tt_run_ctx * c, tt_layer * l)
{
  tt_layernorm_forward (c->threads, (size_t) c->batch * l->p.ln.outer,
      l->p.ln.n, l->p.ln.inner, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->out[0]), tt_run_data (c, l->weights[0].value),
      tt_run_data (c, l->weights[1].value), l->p.ln.epsilon,
      tt_run_data (c, l->scratch[0]), tt_run_data (c, l->scratch[1]));
}

static void
ln_backward (const tt_run_ctx * c, tt_layer * l, bool derivative)
{
  tt_layernorm_backward (c->threads, (size_t) c->batch * l->p.ln.outer,
      l->p.ln.n, l->p.ln.inner, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->out_deriv[0]), tt_run_data (c, l->weights[0].value),
      tt_run_data (c, l->scratch[0]), tt_run_data (c, l->scratch[1]),
      derivative ? tt_run_data (c, l->in_deriv[0]) : NULL,
      derivative ? NULL : tt_run_data (c, l->weights[0].grad),
      derivative ? NULL : tt_run_data (c, l->weights[1].grad));
}

static void
ln_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (l->weights[0].grad >= 0)
    ln_backward (c, l, false);
}

static void
ln_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  ln_backward (c, l, true);
}

static unsigned
ln_backward_reads (const tt_layer * l)
{
  (void) l;
  return TT_READS_INPUT;
}

const tt_layer_ops tt_layer_normalization_layer_ops = {
  .type = "layer_normalization",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = ln_keys,
  .parse = ln_parse,
  .infer = ln_infer,
  .declare = ln_declare,
  .forward = ln_forward,
  .calc_gradient = ln_calc_gradient,
  .calc_derivative = ln_calc_derivative,
  .backward_reads = ln_backward_reads,
};
