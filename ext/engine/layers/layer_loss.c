/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Loss layers, PyTorch's definitions:
 *   mse:           mean over all elements of (y - t)^2
 *   cross_softmax: softmax over the width, mean over the batch of
 *                  -sum t log p (computed from logits with log-sum-exp)
 *   cross_sigmoid: sigmoid, mean over all elements of binary cross-entropy
 *                  (computed from logits: softplus form, no log(0))
 * The output is the prediction (softmax/sigmoid probabilities; mse passes
 * its input through as a view).
 */
#include "tt_layer.h"

#include <math.h>

static tt_status
loss_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->in_dims[0];
  return TT_OK;
}

static void
loss_sizes (const tt_run_ctx * c, const tt_layer * l, size_t *rows,
    size_t *width)
{
  const tt_dims d = l->in_dims[0];
  *rows = (size_t) c->batch * d.c * d.h;
  *width = d.w;
}

static void
mse_forward (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  if (!c->have_labels)
    return;
  const size_t n = rows * width;
  const float *y = tt_run_data (c, l->out[0]);
  const float *t = tt_run_data (c, l->p.loss.label);
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    double d = (double) y[i] - t[i];
    sum += d * d;
  }
  *c->loss = sum / (double) n;
}

static void
mse_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  const size_t n = rows * width;
  const float *y = tt_run_data (c, l->out[0]);
  const float *t = tt_run_data (c, l->p.loss.label);
  float *dx = tt_run_data (c, l->in_deriv[0]);
  const float scale = 2.0f / (float) n;
  for (size_t i = 0; i < n; i++)
    dx[i] = scale * (y[i] - t[i]);
}

static void
cross_softmax_forward (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  const float *x = tt_run_data (c, l->in[0]);
  float *p = tt_run_data (c, l->out[0]);
  tt_activation_forward (TT_ACT_SOFTMAX, rows, width, x, p);
  if (!c->have_labels)
    return;
  const float *t = tt_run_data (c, l->p.loss.label);
  double sum = 0;
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * width, *tr = t + r * width;
    float mx = xr[0];
    for (size_t i = 1; i < width; i++)
      mx = xr[i] > mx ? xr[i] : mx;
    double se = 0;
    for (size_t i = 0; i < width; i++)
      se += exp ((double) xr[i] - mx);
    double lse = mx + log (se);
    for (size_t i = 0; i < width; i++)
      if (tr[i] != 0.0f)
        sum -= tr[i] * ((double) xr[i] - lse);
  }
  *c->loss = sum / c->batch;
}

static void
cross_softmax_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  const size_t n = rows * width;
  const float *p = tt_run_data (c, l->out[0]);
  const float *t = tt_run_data (c, l->p.loss.label);
  float *dx = tt_run_data (c, l->in_deriv[0]);
  const float scale = 1.0f / (float) c->batch;
  /* d/dx of -sum t log softmax(x) is p * sum(t) - t; sum(t) is 1 for a
   * one-hot label but is kept general for soft labels */
  for (size_t r = 0; r < rows; r++) {
    float ts = 0;
    for (size_t i = 0; i < width; i++)
      ts += t[r * width + i];
    for (size_t i = 0; i < width; i++)
      dx[r * width + i] = scale * (p[r * width + i] * ts - t[r * width + i]);
  }
  (void) n;
}

static void
cross_sigmoid_forward (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  const size_t n = rows * width;
  const float *x = tt_run_data (c, l->in[0]);
  float *p = tt_run_data (c, l->out[0]);
  tt_activation_forward (TT_ACT_SIGMOID, rows, width, x, p);
  if (!c->have_labels)
    return;
  const float *t = tt_run_data (c, l->p.loss.label);
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    double xi = x[i];
    sum += (xi > 0 ? xi : 0) - xi * t[i] + log1p (exp (-fabs (xi)));
  }
  *c->loss = sum / (double) n;
}

static void
cross_sigmoid_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  const size_t n = rows * width;
  const float *p = tt_run_data (c, l->out[0]);
  const float *t = tt_run_data (c, l->p.loss.label);
  float *dx = tt_run_data (c, l->in_deriv[0]);
  const float scale = 1.0f / (float) n;
  for (size_t i = 0; i < n; i++)
    dx[i] = scale * (p[i] - t[i]);
}

/* every loss derives from its prediction (mse's is a view of its input) */
static unsigned
loss_backward_reads (const tt_layer * l)
{
  (void) l;
  return TT_READS_OUTPUT;
}

const tt_layer_ops tt_mse_layer_ops = {
  .type = "mse",
  .role = TT_ROLE_LOSS,
  .max_inputs = 1,
  .output_is_view = true,
  .infer = loss_infer,
  .forward = mse_forward,
  .calc_derivative = mse_calc_derivative,
  .backward_reads = loss_backward_reads,
};

const tt_layer_ops tt_cross_softmax_layer_ops = {
  .type = "cross_softmax",
  .role = TT_ROLE_LOSS,
  .max_inputs = 1,
  .fused_activation = TT_ACT_SOFTMAX,
  .infer = loss_infer,
  .forward = cross_softmax_forward,
  .calc_derivative = cross_softmax_calc_derivative,
  .backward_reads = loss_backward_reads,
};

const tt_layer_ops tt_cross_sigmoid_layer_ops = {
  .type = "cross_sigmoid",
  .role = TT_ROLE_LOSS,
  .max_inputs = 1,
  .fused_activation = TT_ACT_SIGMOID,
  .infer = loss_infer,
  .forward = cross_sigmoid_forward,
  .calc_derivative = cross_sigmoid_calc_derivative,
  .backward_reads = loss_backward_reads,
};
