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
#include "tt_split.h"

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

/* Split over the model's threads from this many values: the derivatives
 * by element ranges (softmax's by rows), bit-identical; the loss sums by
 * the same ranges, partials added in part order (within rounding of one
 * thread's sum) */
#define LOSS_SPLIT_MIN 16384

typedef struct
{
  const float *x, *y, *t;
  float *dx;
  size_t width;
  float scale;
} loss_job;

/* (min_total of tt_split: units is rows for row-wise work) */
static size_t
loss_split_min (size_t units, size_t values)
{
  return values >= LOSS_SPLIT_MIN ? 2 : units + 1;
}

static double
mse_range (void *arg, size_t begin, size_t end)
{
  const loss_job *j = arg;
  double sum = 0;
  for (size_t i = begin; i < end; i++) {
    double d = (double) j->y[i] - j->t[i];
    sum += d * d;
  }
  return sum;
}

/* dx = scale * (y - t): mse's (2 / n) and cross_sigmoid's (1 / n) */
static void
difference_range (void *arg, size_t begin, size_t end)
{
  const loss_job *j = arg;
  for (size_t i = begin; i < end; i++)
    j->dx[i] = j->scale * (j->y[i] - j->t[i]);
}

static void
mse_forward (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  if (!c->have_labels)
    return;
  const size_t n = rows * width;
  loss_job j = { NULL, tt_run_data (c, l->out[0]),
    tt_run_data (c, l->p.loss.label), NULL, width, 0.0f
  };
  *c->loss = tt_split_sum (c->threads, n, 16, LOSS_SPLIT_MIN, mse_range,
      &j) / (double) n;
}

static void
mse_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  const size_t n = rows * width;
  loss_job j = { NULL, tt_run_data (c, l->out[0]),
    tt_run_data (c, l->p.loss.label), tt_run_data (c, l->in_deriv[0]),
    width, 2.0f / (float) n
  };
  tt_split (c->threads, n, 16, LOSS_SPLIT_MIN, difference_range, &j);
}

/* A row's log-sum-exp is max x - log p at the max, where p = 1 / sum
 * exp (x - max) is at least 1 / width (never underflows): one log a row,
 * not an exp per value (which took 15 us of the MLP's 500 us step at
 * batch 128), within float rounding of the sum itself. */
double
tt_cross_softmax_loss_rows (const float *x, const float *p, const float *t,
    size_t rows, size_t width)
{
  double sum = 0;
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * width, *tr = t + r * width;
    size_t at = 0;
    for (size_t i = 1; i < width; i++)
      at = xr[i] > xr[at] ? i : at;
    const double lse = (double) xr[at] - log ((double) p[r * width + at]);
    for (size_t i = 0; i < width; i++)
      if (tr[i] != 0.0f)
        sum -= tr[i] * ((double) xr[i] - lse);
  }
  return sum;
}

/* rows [begin, end), from the logits x and their softmax y */
static double
cross_softmax_range (void *arg, size_t begin, size_t end)
{
  const loss_job *j = arg;
  const size_t at = begin * j->width;
  return tt_cross_softmax_loss_rows (j->x + at, j->y + at, j->t + at,
      end - begin, j->width);
}

static void
cross_softmax_forward (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  if (l->loss_in_tail)
    return;
  loss_sizes (c, l, &rows, &width);
  const float *x = tt_run_data (c, l->in[0]);
  float *p = tt_run_data (c, l->out[0]);
  tt_activation_forward_split (c->threads, TT_ACT_SOFTMAX, rows, width, x, p);
  if (!c->have_labels)
    return;
  loss_job j = { x, p, tt_run_data (c, l->p.loss.label), NULL, width, 0 };
  *c->loss = tt_split_sum (c->threads, rows, 1, loss_split_min (rows,
          rows * width), cross_softmax_range, &j) / c->batch;
}

/* d/dx of -sum t log softmax(x) is p * sum(t) - t; sum(t) is 1 for a
 * one-hot label but is kept general for soft labels */
void
tt_cross_softmax_derivative_rows (const float *p, const float *t, float *dx,
    size_t rows, size_t width, float scale)
{
  for (size_t r = 0; r < rows; r++) {
    const float *pr = p + r * width, *tr = t + r * width;
    float *dr = dx + r * width;
    float ts = 0;
    for (size_t i = 0; i < width; i++)
      ts += tr[i];
    for (size_t i = 0; i < width; i++)
      dr[i] = scale * (pr[i] * ts - tr[i]);
  }
}

/* rows [begin, end) */
static void
cross_softmax_derivative_range (void *arg, size_t begin, size_t end)
{
  const loss_job *j = arg;
  const size_t at = begin * j->width;
  tt_cross_softmax_derivative_rows (j->y + at, j->t + at, j->dx + at,
      end - begin, j->width, j->scale);
}

static void
cross_softmax_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  if (l->loss_in_tail)
    return;
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  loss_job j = { NULL, tt_run_data (c, l->out[0]),
    tt_run_data (c, l->p.loss.label), tt_run_data (c, l->in_deriv[0]),
    width, 1.0f / (float) c->batch
  };
  tt_split (c->threads, rows, 1, loss_split_min (rows, rows * width),
      cross_softmax_derivative_range, &j);
}

static double
cross_sigmoid_range (void *arg, size_t begin, size_t end)
{
  const loss_job *j = arg;
  double sum = 0;
  for (size_t i = begin; i < end; i++) {
    double xi = j->x[i];
    sum += (xi > 0 ? xi : 0) - xi * j->t[i] + log1p (exp (-fabs (xi)));
  }
  return sum;
}

static void
cross_sigmoid_forward (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  const size_t n = rows * width;
  const float *x = tt_run_data (c, l->in[0]);
  float *p = tt_run_data (c, l->out[0]);
  tt_activation_forward_split (c->threads, TT_ACT_SIGMOID, rows, width, x, p);
  if (!c->have_labels)
    return;
  loss_job j = { x, p, tt_run_data (c, l->p.loss.label), NULL, width, 0 };
  *c->loss = tt_split_sum (c->threads, n, 16, LOSS_SPLIT_MIN,
      cross_sigmoid_range, &j) / (double) n;
}

static void
cross_sigmoid_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  size_t rows, width;
  loss_sizes (c, l, &rows, &width);
  const size_t n = rows * width;
  loss_job j = { NULL, tt_run_data (c, l->out[0]),
    tt_run_data (c, l->p.loss.label), tt_run_data (c, l->in_deriv[0]),
    width, 1.0f / (float) n
  };
  tt_split (c->threads, n, 16, LOSS_SPLIT_MIN, difference_range, &j);
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
  .fits_loss_tail = true,
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
