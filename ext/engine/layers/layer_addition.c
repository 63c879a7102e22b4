/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* addition: element-wise sum of inputs of one shape. */
#include "tt_layer.h"
#include "tt_split.h"

#include <string.h>

static tt_status
addition_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims a = l->in_dims[0];
  for (uint32_t i = 1; i < l->n_inputs; i++) {
    const tt_dims b = l->in_dims[i];
    if (a.c != b.c || a.h != b.h || a.w != b.w)
      return tt_fail (err, TT_ERR_INVALID,
          "%s: [%s] input_layers: '%s' gives %u:%u:%u but '%s' gives "
          "%u:%u:%u; addition needs equal shapes", c->path, l->section,
          l->inputs[0].name, a.c, a.h, a.w, l->inputs[i].name, b.c, b.h, b.w);
  }
  l->out_dims[0] = a;
  return TT_OK;
}

/* Split over the model's threads by element ranges from this many
 * elements: each element sums its inputs in input order either way */
#define ADDITION_SPLIT_MIN 16384

typedef struct
{
  const tt_run_ctx *c;
  const tt_layer *l;
} addition_job;

static void
addition_forward_range (void *arg, size_t begin, size_t end)
{
  const addition_job *j = arg;
  float *y = tt_run_data (j->c, j->l->out[0]) + begin;
  const size_t n = end - begin;
  memcpy (y, tt_run_data (j->c, j->l->in[0]) + begin, n * sizeof *y);
  for (uint32_t k = 1; k < j->l->n_inputs; k++) {
    const float *x = tt_run_data (j->c, j->l->in[k]) + begin;
    for (size_t i = 0; i < n; i++)
      y[i] += x[i];
  }
}

static void
addition_forward (const tt_run_ctx * c, tt_layer * l)
{
  addition_job j = { c, l };
  tt_split (c->threads, c->batch * tt_dims_count (l->in_dims[0]), 16,
      ADDITION_SPLIT_MIN, addition_forward_range, &j);
}

static void
addition_backward_range (void *arg, size_t begin, size_t end)
{
  const addition_job *j = arg;
  const float *dy = tt_run_data (j->c, j->l->out_deriv[0]) + begin;
  for (uint32_t k = 0; k < j->l->n_inputs; k++)
    if (j->l->in_deriv[k] >= 0)
      memcpy (tt_run_data (j->c, j->l->in_deriv[k]) + begin, dy,
          (end - begin) * sizeof *dy);
}

static void
addition_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  addition_job j = { c, l };
  tt_split (c->threads, c->batch * tt_dims_count (l->in_dims[0]), 16,
      ADDITION_SPLIT_MIN, addition_backward_range, &j);
}

const tt_layer_ops tt_addition_layer_ops = {
  .type = "addition",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .infer = addition_infer,
  .forward = addition_forward,
  .calc_derivative = addition_calc_derivative,
};
