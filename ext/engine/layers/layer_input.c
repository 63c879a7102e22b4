/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Input layer. The model copies (and converts) the caller's samples into
 * this layer's output; forward then applies nntrainer's preprocessing, in
 * place and in nntrainer's order (nntrainer/layers/input_layer.cpp):
 *
 * - normalization: one min and one max over the WHOLE BATCH (every sample,
 *   every value; Tensor::normalization_i), x' = (x - min) / (max - min),
 *   all zeros when max == min. The output of a sample depends on the other
 *   samples of its batch; at batch 1 it is the sample's own min-max.
 * - standardization: per sample, m the mean of its N values,
 *   x' = (x - m) / (||x - m||_2 / N) (Tensor::standardization_i): the
 *   usual standard-score times sqrt (N). A sample whose values are all
 *   equal becomes zeros (nntrainer divides 0 by 0 and gives NaN: a
 *   deliberate difference).
 *
 * Both may be set: normalization runs first. No derivative goes through
 * the preprocessing: the input layer has no backward, and the input
 * derivative a caller may request is taken w.r.t. the preprocessed values.
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <math.h>
#include <string.h>

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

/* min-max over all n values (the whole batch); (clones: 5% of the MLP's
 * step at batch 32 in baseline SSE2) */
TT_VECTOR_CLONES static void
input_normalize (float *x, size_t n)
{
  if (n == 0)
    return;
  float lo = x[0], hi = x[0];
  size_t i = 0;
#if defined(__GNUC__)
  /* 16 running minima and maxima in vectors: a scalar min reduction does
   * not vectorize (the compiler may not reorder it), and GNU C has no
   * vector ?: (so a select by mask). x holds no NaN (model_feed). */
  typedef float v16 __attribute__((vector_size (64)));
  typedef int32_t v16i __attribute__((vector_size (64)));
  v16 vlo, vhi;
  for (int j = 0; j < 16; j++)
    vlo[j] = vhi[j] = x[0];
  for (; i + 16 <= n; i += 16) {
    v16 v;
    memcpy (&v, x + i, sizeof v);
    v16i lt = v < vlo, gt = v > vhi;
    vlo = (v16) ((lt & (v16i) v) | (~lt & (v16i) vlo));
    vhi = (v16) ((gt & (v16i) v) | (~gt & (v16i) vhi));
  }
  for (int j = 0; j < 16; j++) {
    lo = vlo[j] < lo ? vlo[j] : lo;
    hi = vhi[j] > hi ? vhi[j] : hi;
  }
#endif
  for (; i < n; i++) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  if (!(hi > lo)) {
    /* no range: all zeros, as nntrainer */
    for (size_t i = 0; i < n; i++)
      x[i] = 0.0f;
    return;
  }
  const float range = hi - lo;
  for (size_t i = 0; i < n; i++)
    x[i] = (x[i] - lo) / range;
}

/* (x - mean) / (||x - mean|| / n) over one sample's n values */
TT_VECTOR_CLONES static void
input_standardize (float *x, size_t n)
{
  double sum = 0, sq = 0;
  for (size_t i = 0; i < n; i++)
    sum += x[i];
  const float mean = (float) (sum / (double) n);
  for (size_t i = 0; i < n; i++) {
    double d = (double) (x[i] - mean);
    sq += d * d;
  }
  const double scale = sqrt (sq) / (double) n;
  if (!(scale > 0)) {
    /* all values equal: zeros where nntrainer divides by zero */
    for (size_t i = 0; i < n; i++)
      x[i] = 0.0f;
    return;
  }
  const float s = (float) scale;
  for (size_t i = 0; i < n; i++)
    x[i] = (x[i] - mean) / s;
}

static void
input_forward (const tt_run_ctx * c, tt_layer * l)
{
  const bool normalize = l->p.input.normalization &&
      !l->p.input.normalized_at_feed;
  if (!normalize && !l->p.input.standardization)
    return;
  float *x = tt_run_data (c, l->out[0]);
  const size_t per = tt_dims_count (l->out_dims[0]);
  if (normalize)
    input_normalize (x, per * c->batch);
  if (l->p.input.standardization)
    for (uint32_t b = 0; b < c->batch; b++)
      input_standardize (x + (size_t) b * per, per);
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
