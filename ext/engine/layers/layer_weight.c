/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * weight: nntrainer's layer whose output is a weight of its own (a
 * learned constant: a class token, a positional table, a matrix for
 * matmul). dim = C:H:W (or 1:C:H:W; required) is the weight's shape and
 * each sample's output; tensor_dtype FP32 only (tensors here are fp32);
 * weight_name is accepted (the BIN is by position: the weight is this
 * layer's one tensor, in the layers' INI order); the weight keys
 * (weight_initializer, default xavier_uniform with nntrainer's fans,
 * weight_regularizer, weight_decay) apply.
 *
 * It takes the layer before it as its input, as every layer without
 * input_layers does, and does not read it; that input's derivative is
 * zero (nntrainer does not backpropagate through it). Every sample's
 * output is the weight, so its gradient is the sum over the batch of the
 * output's derivative (nntrainer copies the derivative, the same at
 * batch 1).
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <string.h>
#include <strings.h>

static const char *const weight_keys[] = { "dim", "tensor_dtype",
  "weight_name", NULL
};

static tt_status
weight_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  if (!tt_section_has (s, "dim"))
    return tt_section_error (s, "dim", err, TT_ERR_INVALID,
        "missing key (the weight's shape, e.g. 1:4:8)");
  tt_status st = tt_section_dims (s, "dim", &l->p.weight.dim, err);
  if (st)
    return st;
  const char *dtype = tt_section_string (s, "tensor_dtype");
  if (dtype && strcasecmp (dtype, "FP32"))
    return tt_section_error (s, "tensor_dtype", err, TT_ERR_INVALID,
        "'%s' is not supported: tensors here are fp32 (allowed: FP32)", dtype);
  return TT_OK;
}

static tt_status
weight_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims d = l->p.weight.dim;
  if (tt_dims_count (d) > (1u << 28))
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] dim: %u:%u:%u is larger "
        "than %u weights", c->path, l->section, d.c, d.h, d.w, 1u << 28);
  l->out_dims[0] = d;
  /* nntrainer's fans for a 1:C:H:W tensor */
  uint32_t fan_in = d.w, fan_out = d.w;
  if (d.c * d.h != 1 && d.c == 1)
    fan_in = d.h;
  else if (d.c != 1) {
    fan_in = d.c * d.h * d.w;
    fan_out = d.h * d.w;
  }
  tt_weight *w = tt_layer_add_weight (l, "weight", tt_dims_count (d),
      l->weight_init, fan_in, fan_out, true);
  w->decay = l->weight_decay;
  w->l2 = l->l2_constant;
  return TT_OK;
}

typedef struct
{
  const float *w, *dy;
  float *y;
  size_t count, batch;
} weight_job;

static void
weight_copies (void *arg, size_t begin, size_t end)
{
  const weight_job *j = arg;
  for (size_t b = begin; b < end; b++)
    memcpy (j->y + b * j->count, j->w, j->count * sizeof *j->y);
}

static void
weight_forward (const tt_run_ctx * c, tt_layer * l)
{
  const size_t n = l->weights[0].count;
  weight_job j = { tt_run_data (c, l->weights[0].value), NULL,
    tt_run_data (c, l->out[0]), n, c->batch
  };
  tt_split (c->threads, c->batch, 1, 16384 / (n + 1) + 1, weight_copies, &j);
}

static TT_VECTOR_CLONES void
weight_sum_range (float *restrict g, const float *restrict dy, size_t count,
    size_t batch, size_t begin, size_t end)
{
  for (size_t i = begin; i < end; i++)
    g[i] = dy[i];
  for (size_t b = 1; b < batch; b++)
    for (size_t i = begin; i < end; i++)
      g[i] += dy[b * count + i];
}

/* elements [begin, end) of the gradient, each summed over the batch in
 * order (bit-identical whatever the split) */
static void
weight_sums (void *arg, size_t begin, size_t end)
{
  const weight_job *j = arg;
  weight_sum_range (j->y, j->dy, j->count, j->batch, begin, end);
}

static void
weight_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  const tt_weight *w = &l->weights[0];
  if (w->grad < 0)
    return;
  weight_job j = { NULL, tt_run_data (c, l->out_deriv[0]),
    tt_run_data (c, w->grad), w->count, c->batch
  };
  tt_split (c->threads, w->count, 16, 16384 / (c->batch + 1) + 1,
      weight_sums, &j);
}

static void
weight_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  float *dx = tt_run_data (c, l->in_deriv[0]);
  if (dx)
    memset (dx, 0, (size_t) c->batch * tt_dims_count (l->in_dims[0]) *
        sizeof *dx);
}

const tt_layer_ops tt_weight_layer_ops = {
  .type = "weight",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = weight_keys,
  .has_weights = true,
  .parse = weight_parse,
  .infer = weight_infer,
  .forward = weight_forward,
  .calc_gradient = weight_calc_gradient,
  .calc_derivative = weight_calc_derivative,
};
