/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kld: the Kullback-Leibler divergence of the model's prediction Q (its
 * input: probabilities, a softmax's output) from the label P, summed over
 * each sample's values and averaged over the batch:
 *   loss = sum over b of sum over i of P log (P / Q) / batch
 * (PyTorch's nn.KLDivLoss (log Q, P, reduction = "batchmean"); a value
 * with P = 0 adds 0, as PyTorch's xlogy). Its derivative d loss / d Q =
 * -P / Q / batch (0 where P = 0). nntrainer's kld_loss_layer computes
 * the same sum without the division by the batch (its derivative is
 * batch times this one) and is not registered as a layer type at
 * 65dccdec. The output is the prediction, a view of the input (as mse's).
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <math.h>

/* Split over the model's threads from this many values (as the other
 * losses): the derivative by element ranges, bit-identical; the loss's
 * sum by the same ranges, partials added in part order */
#define KLD_SPLIT_MIN 16384

typedef struct
{
  const float *q, *p;
  float *dq;
  float scale;
} kld_job;

static tt_status
kld_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->in_dims[0];
  return TT_OK;
}

static double
kld_range (void *arg, size_t begin, size_t end)
{
  const kld_job *j = arg;
  double sum = 0;
  for (size_t i = begin; i < end; i++)
    if (j->p[i] != 0.0f)
      sum += (double) j->p[i] * (log ((double) j->p[i]) -
          log ((double) j->q[i]));
  return sum;
}

static TT_VECTOR_CLONES void
kld_derivative_range (void *arg, size_t begin, size_t end)
{
  const kld_job *j = arg;
  const float *p = j->p, *q = j->q;
  float *dq = j->dq;
  const float s = -j->scale;
  /* both sides on every lane: no branch, so the loop vectorizes */
  for (size_t i = begin; i < end; i++) {
    const float d = s * p[i] / q[i];
    dq[i] = p[i] != 0.0f ? d : 0.0f;
  }
}

static void
kld_forward (const tt_run_ctx * c, tt_layer * l)
{
  if (!c->have_labels)
    return;
  const size_t n = (size_t) c->batch * tt_dims_count (l->in_dims[0]);
  kld_job j = { tt_run_data (c, l->out[0]), tt_run_data (c,
        l->p.loss.label), NULL, 0.0f
  };
  *c->loss = tt_split_sum (c->threads, n, 16, KLD_SPLIT_MIN, kld_range,
      &j) / c->batch;
}

static void
kld_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const size_t n = (size_t) c->batch * tt_dims_count (l->in_dims[0]);
  kld_job j = { tt_run_data (c, l->out[0]), tt_run_data (c,
        l->p.loss.label), tt_run_data (c, l->in_deriv[0]),
    1.0f / (float) c->batch
  };
  tt_split (c->threads, n, 16, KLD_SPLIT_MIN, kld_derivative_range, &j);
}

/* the prediction, a view of the input */
static unsigned
kld_backward_reads (const tt_layer * l)
{
  (void) l;
  return TT_READS_OUTPUT;
}

const tt_layer_ops tt_kld_layer_ops = {
  .type = "kld",
  .role = TT_ROLE_LOSS,
  .max_inputs = 1,
  .output_is_view = true,
  .infer = kld_infer,
  .forward = kld_forward,
  .calc_derivative = kld_calc_derivative,
  .backward_reads = kld_backward_reads,
};
