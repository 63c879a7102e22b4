/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * constant_derivative: nntrainer's loss that feeds a derivative of 1 to
 * every value of the layer before it, whatever the labels (which it
 * takes, and ignores). Its loss is the function whose derivative that
 * is, the sum of its input's values over the batch; nntrainer reports 1
 * (a constant, whose derivative would be 0). The output is the
 * prediction, a view of the input (as mse's).
 */
#include "tt_layer.h"
#include "tt_split.h"

/* as the other losses: split over the model's threads from this many
 * values, the sum's partials added in part order */
#define CONSTANT_SPLIT_MIN 16384

static tt_status
constant_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->in_dims[0];
  return TT_OK;
}

static double
constant_sum_range (void *arg, size_t begin, size_t end)
{
  const float *x = arg;
  double sum = 0;
  for (size_t i = begin; i < end; i++)
    sum += x[i];
  return sum;
}

static TT_VECTOR_CLONES void
constant_fill_range (void *arg, size_t begin, size_t end)
{
  float *dx = arg;
  for (size_t i = begin; i < end; i++)
    dx[i] = 1.0f;
}

static void
constant_forward (const tt_run_ctx * c, tt_layer * l)
{
  if (!c->have_labels)
    return;
  const size_t n = (size_t) c->batch * tt_dims_count (l->in_dims[0]);
  *c->loss = tt_split_sum (c->threads, n, 16, CONSTANT_SPLIT_MIN,
      constant_sum_range, tt_run_data (c, l->out[0]));
}

static void
constant_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const size_t n = (size_t) c->batch * tt_dims_count (l->in_dims[0]);
  tt_split (c->threads, n, 16, CONSTANT_SPLIT_MIN, constant_fill_range,
      tt_run_data (c, l->in_deriv[0]));
}

const tt_layer_ops tt_constant_derivative_layer_ops = {
  .type = "constant_derivative",
  .role = TT_ROLE_LOSS,
  .max_inputs = 1,
  .output_is_view = true,
  .infer = constant_infer,
  .forward = constant_forward,
  .calc_derivative = constant_calc_derivative,
};
