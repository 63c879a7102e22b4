/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dropout: in training, zeroes each value with probability dropout_rate and
 * scales the rest by 1/(1-rate) (inverted dropout, so evaluation is the
 * identity). The mask is a scratch tensor of one byte an element (1:
 * kept), drawn from the model's seeded generator, alive from forward to
 * backward; both multiply by (kept ? 1/(1-rate) : 0.0f), the products of
 * a float mask of those values bit for bit at a quarter of its bytes.
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <string.h>

static const char *const dropout_keys[] = { "dropout_rate", NULL };

static tt_status
dropout_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st = tt_section_float (s, "dropout_rate", &l->p.dropout.rate,
      err);
  if (st)
    return st;
  if (l->p.dropout.rate < 0 || l->p.dropout.rate >= 1)
    return tt_section_error (s, "dropout_rate", err, TT_ERR_INVALID,
        "must be in [0, 1)");
  return TT_OK;
}

static tt_status
dropout_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->in_dims[0];
  return TT_OK;
}

static void
dropout_declare (tt_init_ctx * c, tt_layer * l)
{
  l->scratch[0] = tt_init_scratch_bytes (c, "mask",
      c->batch_size * tt_dims_count (l->in_dims[0]));
}

/* Split over the model's threads by element ranges from this many
 * elements (the mask is still drawn in order, on the caller: the random
 * stream must not depend on the thread count) */
#define DROPOUT_SPLIT_MIN 16384

typedef struct
{
  const float *x;
  const uint8_t *mask;
  float keep;
  float *y;
} dropout_job;

static void
dropout_multiply (void *arg, size_t begin, size_t end)
{
  const dropout_job *j = arg;
  tt_dropout_apply (j->x + begin, j->mask + begin, j->keep, j->y + begin,
      end - begin);
}

static float
dropout_keep (const tt_layer * l)
{
  return 1.0f / (1.0f - l->p.dropout.rate);
}

static void
dropout_forward (const tt_run_ctx * c, tt_layer * l)
{
  const size_t n = c->batch * tt_dims_count (l->in_dims[0]);
  const float *x = tt_run_data (c, l->in[0]);
  float *y = tt_run_data (c, l->out[0]);
  uint8_t *mask = tt_run_bytes (c, l->scratch[0]);
  const float rate = l->p.dropout.rate;
  if (!c->training || rate == 0.0f) {
    if (y != x)
      memcpy (y, x, n * sizeof *y);
    /* backward multiplies by keep, 1.0f at rate 0 */
    if (c->training)
      memset (mask, 1, n);
    return;
  }
  tt_rng_mask_bytes (c->rng, mask, n, rate);
  dropout_job j = { x, mask, dropout_keep (l), y };
  tt_split (c->threads, n, 16, DROPOUT_SPLIT_MIN, dropout_multiply, &j);
}

static void
dropout_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const size_t n = c->batch * tt_dims_count (l->in_dims[0]);
  dropout_job j = { tt_run_data (c, l->out_deriv[0]),
    tt_run_bytes (c, l->scratch[0]), dropout_keep (l),
    tt_run_data (c, l->in_deriv[0])
  };
  tt_split (c->threads, n, 16, DROPOUT_SPLIT_MIN, dropout_multiply, &j);
}

static bool
dropout_can_run_in_place (const tt_layer * l)
{
  (void) l;
  return true;
}

const tt_layer_ops tt_dropout_layer_ops = {
  .type = "dropout",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = dropout_keys,
  .parse = dropout_parse,
  .infer = dropout_infer,
  .declare = dropout_declare,
  .forward = dropout_forward,
  .calc_derivative = dropout_calc_derivative,
  .can_run_in_place = dropout_can_run_in_place,
  .draws_random = true,
};
