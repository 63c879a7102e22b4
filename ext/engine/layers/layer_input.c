/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Input layer. The model copies (and converts) the caller's samples into
 * this layer's output; forward then applies nntrainer's per-sample
 * normalization (min-max to [0, 1]) or standardization (zero mean, unit
 * variance), in place.
 */
#include "tt_layer.h"

#include <math.h>

static const char *const input_keys[] = {
  "normalization", "standardization", NULL
};

static tt_status
input_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st;
  if ((st = tt_section_bool (s, "normalization", &l->p.input.normalization,
              err)) ||
      (st = tt_section_bool (s, "standardization",
              &l->p.input.standardization, err)))
    return st;
  if (l->p.input.normalization && l->p.input.standardization)
    return tt_section_error (s, "standardization", err, TT_ERR_INVALID,
        "normalization and standardization exclude each other");
  return TT_OK;
}

static tt_status
input_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->input_shape;
  return TT_OK;
}

static void
input_forward (const tt_run_ctx * c, tt_layer * l)
{
  if (!l->p.input.normalization && !l->p.input.standardization)
    return;
  float *x = tt_run_data (c, l->out[0]);
  const size_t per = tt_dims_count (l->out_dims[0]);
  for (uint32_t b = 0; b < c->batch; b++, x += per) {
    if (l->p.input.normalization) {
      float lo = x[0], hi = x[0];
      for (size_t i = 1; i < per; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
      }
      /* a constant sample has no range: it maps to 0 */
      float scale = hi > lo ? 1.0f / (hi - lo) : 0.0f;
      for (size_t i = 0; i < per; i++)
        x[i] = (x[i] - lo) * scale;
    } else {
      double sum = 0, sq = 0;
      for (size_t i = 0; i < per; i++)
        sum += x[i];
      float mean = (float) (sum / per);
      for (size_t i = 0; i < per; i++)
        sq += (double) (x[i] - mean) * (x[i] - mean);
      double sd = sqrt (sq / per);
      float inv = sd > 1e-12 ? (float) (1.0 / sd) : 0.0f;
      for (size_t i = 0; i < per; i++)
        x[i] = (x[i] - mean) * inv;
    }
  }
}

const tt_layer_ops tt_input_layer_ops = {
  .type = "input",
  .role = TT_ROLE_INPUT,
  .max_inputs = 0,
  .keys = input_keys,
  .parse = input_parse,
  .infer = input_infer,
  .forward = input_forward,
};
