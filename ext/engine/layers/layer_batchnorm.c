/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * batch_normalization. Features lie along the channel axis when there is
 * more than one channel, else along the width (nntrainer's default), or
 * along the axis the INI names. Weights in nntrainer's order: moving_mean,
 * moving_variance (not trainable), gamma, beta; weight_decay decays gamma,
 * bias_decay beta.
 */
#include "tt_layer.h"

#include <strings.h>

static const char *const bn_keys[] = {
  "epsilon", "momentum", "axis", "moving_mean_initializer",
  "moving_variance_initializer", "gamma_initializer", "beta_initializer",
  "weight_decay", "bias_decay", NULL
};

static tt_status
bn_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  static const char *const init_keys[4] = {
    "moving_mean_initializer", "moving_variance_initializer",
    "gamma_initializer", "beta_initializer"
  };
  tt_status st;
  uint32_t axis = 0;
  l->p.bn.epsilon = 0.001f;
  l->p.bn.momentum = 0.99f;
  l->p.bn.init[0] = TT_INIT_ZEROS;
  l->p.bn.init[1] = TT_INIT_ONES;
  l->p.bn.init[2] = TT_INIT_ONES;
  l->p.bn.init[3] = TT_INIT_ZEROS;
  if ((st = tt_section_float (s, "epsilon", &l->p.bn.epsilon, err)) ||
      (st = tt_section_float (s, "momentum", &l->p.bn.momentum, err)) ||
      (st = tt_section_uint (s, "axis", 1, 3, &axis, err)) ||
      (st = tt_section_float (s, "weight_decay", &l->weight_decay, err)) ||
      (st = tt_section_float (s, "bias_decay", &l->bias_decay, err)))
    return st;
  for (int i = 0; i < 4; i++) {
    int v = (int) l->p.bn.init[i];
    /* nntrainer's "none" leaves the pool's memory as it is; its BIN after
     * initialize() holds zeros there (tests/interop/nntrainer/FINDINGS.md
     * section 4): zeros here, deterministic */
    const char *name = tt_section_string (s, init_keys[i]);
    if (name && !strcasecmp (name, "none"))
      v = (int) TT_INIT_ZEROS;
    else if ((st = tt_section_enum (s, init_keys[i], tt_initializer_names,
                &v, err)))
      return st;
    l->p.bn.init[i] = (tt_initializer) v;
  }
  if (l->p.bn.epsilon <= 0)
    return tt_section_error (s, "epsilon", err, TT_ERR_INVALID,
        "must be positive");
  if (l->p.bn.momentum < 0 || l->p.bn.momentum > 1)
    return tt_section_error (s, "momentum", err, TT_ERR_INVALID,
        "must be in [0, 1]");
  if (l->weight_decay < 0 || l->bias_decay < 0)
    return tt_section_error (s, l->weight_decay < 0 ? "weight_decay" :
        "bias_decay", err, TT_ERR_INVALID, "must not be negative");
  l->p.bn.axis = (int) axis;
  return TT_OK;
}

static tt_status
bn_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  const tt_dims d = l->in_dims[0];
  int axis = l->p.bn.axis ? l->p.bn.axis : (d.c > 1 ? 1 : 3);
  switch (axis) {
    case 1:
      l->p.bn.outer = 1;
      l->p.bn.features = d.c;
      l->p.bn.inner = d.h * d.w;
      break;
    case 2:
      l->p.bn.outer = d.c;
      l->p.bn.features = d.h;
      l->p.bn.inner = d.w;
      break;
    default:
      l->p.bn.outer = d.c * d.h;
      l->p.bn.features = d.w;
      l->p.bn.inner = 1;
      break;
  }
  l->out_dims[0] = d;
  static const char *const names[4] = {
    "moving_mean", "moving_variance", "gamma", "beta"
  };
  const uint32_t f = l->p.bn.features;
  /* nntrainer: weight_decay on gamma, bias_decay on beta, each added to
   * its gradient as decay * value (as every layer's decay here) */
  for (int i = 0; i < 4; i++)
    tt_layer_add_weight (l, names[i], f, l->p.bn.init[i], f, f,
        i >= 2)->decay = i == 2 ? l->weight_decay : i == 3 ? l->bias_decay : 0;
  return TT_OK;
}

static void
bn_declare (tt_init_ctx * c, tt_layer * l)
{
  /* batch mean and 1/sqrt(var + eps), kept from forward for backward */
  l->scratch[0] = tt_init_scratch (c, "batch_stats",
      2 * (size_t) l->p.bn.features);
}

static void
bn_forward (const tt_run_ctx * c, tt_layer * l)
{
  const int outer = (int) (c->batch * l->p.bn.outer);
  const int f = (int) l->p.bn.features, inner = (int) l->p.bn.inner;
  const float *x = tt_run_data (c, l->in[0]);
  float *y = tt_run_data (c, l->out[0]);
  float *stats = tt_run_data (c, l->scratch[0]);
  const float *gamma = tt_run_data (c, l->weights[2].value);
  const float *beta = tt_run_data (c, l->weights[3].value);
  float *mean = tt_run_data (c, l->weights[0].value);
  float *var = tt_run_data (c, l->weights[1].value);
  /* a recompute (plan/remat.c) rebuilds y and the batch statistics; the
   * moving ones were updated once, by the step's first forward */
  if (c->training)
    tt_batchnorm_forward_train (c->threads, outer, f, inner, x, y, gamma, beta,
        c->recompute ? NULL : mean, c->recompute ? NULL : var,
        l->p.bn.momentum, l->p.bn.epsilon, stats, stats + f);
  else
    tt_batchnorm_forward_eval (c->threads, outer, f, inner, x, y, gamma, beta,
        mean, var, l->p.bn.epsilon);
}

static void
bn_backward (const tt_run_ctx * c, tt_layer * l, bool derivative)
{
  const int outer = (int) (c->batch * l->p.bn.outer);
  const int f = (int) l->p.bn.features, inner = (int) l->p.bn.inner;
  const float *stats = tt_run_data (c, l->scratch[0]);
  tt_batchnorm_backward (c->threads, outer, f, inner, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->out_deriv[0]), tt_run_data (c, l->weights[2].value),
      stats, stats + f, derivative ? tt_run_data (c, l->in_deriv[0]) : NULL,
      derivative ? NULL : tt_run_data (c, l->weights[2].grad),
      derivative ? NULL : tt_run_data (c, l->weights[3].grad));
}

static void
bn_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (l->weights[2].grad >= 0)
    bn_backward (c, l, false);
}

static void
bn_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  bn_backward (c, l, true);
}

static unsigned
bn_backward_reads (const tt_layer * l)
{
  (void) l;
  return TT_READS_INPUT;
}

/* feature cache */
static const char *
bn_varies (const tt_layer * l)
{
  (void) l;
  return "its training forward normalizes with the batch's statistics "
      "(and updates its moving ones)";
}

const tt_layer_ops tt_batchnorm_layer_ops = {
  .type = "batch_normalization",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = bn_keys,
  .parse = bn_parse,
  .infer = bn_infer,
  .declare = bn_declare,
  .forward = bn_forward,
  .calc_gradient = bn_calc_gradient,
  .calc_derivative = bn_calc_derivative,
  .backward_reads = bn_backward_reads,
  .training_varies = bn_varies,
};
