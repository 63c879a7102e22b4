/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * attention: nntrainer's dot-product attention without weights,
 * input_layers = query, value[, key] (key defaults to value): y =
 * softmax (Q K^T [/ sqrt (d)] [+ causal mask]) V, each channel on its own
 * (query c:lq:d, value and key c:lk:d; output c:lq:d). Keys:
 * scaled_dot_product (false) divides the scores by sqrt (d), causal_mask
 * (false) leaves out the keys past each query's index.
 *
 * Backward reads the three inputs and the softmax's output (probs, kept
 * from forward); the scores' derivative lives in calcDerivative alone.
 */
#include "tt_layer.h"

#include <math.h>

static const char *const attention_keys[] = {
  "scaled_dot_product", "causal_mask", NULL
};

static tt_status
attention_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st;
  l->p.attn.scaled = false;
  l->p.attn.causal = false;
  if ((st = tt_section_bool (s, "scaled_dot_product", &l->p.attn.scaled,
              err)) ||
      (st = tt_section_bool (s, "causal_mask", &l->p.attn.causal, err)))
    return st;
  return TT_OK;
}

static tt_status
attention_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  if (l->n_inputs < 2 || l->n_inputs > 3)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: attention takes 2 or 3 inputs "
        "(input_layers = query, value[, key]), not %u", c->path, l->section,
        l->n_inputs);
  const tt_dims q = l->in_dims[0], v = l->in_dims[1];
  const tt_dims k = l->n_inputs == 3 ? l->in_dims[2] : v;
  if (q.c != v.c || q.w != v.w)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: query '%s' gives %u:%u:%u and value '%s' "
        "%u:%u:%u (channels and widths must match)", c->path, l->section,
        l->inputs[0].name, q.c, q.h, q.w, l->inputs[1].name, v.c, v.h, v.w);
  if (k.c != v.c || k.h != v.h || k.w != v.w)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: key '%s' gives %u:%u:%u and value '%s' "
        "%u:%u:%u (key and value must have the same shape)", c->path,
        l->section, l->inputs[2].name, k.c, k.h, k.w, l->inputs[1].name, v.c,
        v.h, v.w);
  if ((uint64_t) q.c * q.h * v.h > (1u << 28))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s]: %u x %u x %u attention scores are too many", c->path,
        l->section, q.c, q.h, v.h);
  l->p.attn.heads = q.c;
  l->p.attn.key_dim = l->p.attn.value_dim = q.w;
  l->p.attn.lq = q.h;
  l->p.attn.lk = v.h;
  l->out_dims[0] = q;
  return TT_OK;
}

static void
attention_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t scores = (size_t) c->batch_size * l->p.attn.heads *
      l->p.attn.lq * l->p.attn.lk;
  l->p.attn.probs = tt_init_scratch_by_samples (c, "probs", scores);
  tt_init_use (c, l->p.attn.probs, TT_PHASE_FORWARD);
  l->p.attn.dscores = -1;
  if (!l->needs_derivative)
    return;
  tt_init_use (c, l->p.attn.probs, TT_PHASE_DERIVATIVE);
  l->p.attn.dscores = tt_init_scratch_by_samples (c, "dscores", scores);
  tt_init_use (c, l->p.attn.dscores, TT_PHASE_DERIVATIVE);
}

static tt_attention
attention_setup (const tt_run_ctx * c, const tt_layer * l)
{
  const int lq = (int) l->p.attn.lq, lk = (int) l->p.attn.lk;
  const int d = (int) l->p.attn.key_dim, heads = (int) l->p.attn.heads;
  const int key = l->n_inputs == 3 ? 2 : 1;
  const size_t qh = (size_t) lq * d, kh = (size_t) lk *d;
  tt_attention a = {
    .batch = (int) c->batch,.heads = heads,.lq = lq,.lk = lk,.dk = d,.dv = d,
    .q = tt_run_data (c, l->in[0]),.k = tt_run_data (c, l->in[key]),
    .v = tt_run_data (c, l->in[1]),.o = tt_run_data (c, l->out[0]),
    .q_bs = qh * heads,.k_bs = kh * heads,.v_bs = kh * heads,
    .o_bs = qh * heads,.q_hs = qh,.k_hs = kh,.v_hs = kh,.o_hs = qh,
    .q_ld = d,.k_ld = d,.v_ld = d,.o_ld = d,
    .scale = l->p.attn.scaled ? 1.0f / sqrtf ((float) d) : 1.0f,
    .causal = l->p.attn.causal,
    .probs = tt_run_data (c, l->p.attn.probs),
    .threads = c->threads,
    .gemm_inputs = tt_run_gemm_inputs (c),
  };
  return a;
}

static void
attention_forward (const tt_run_ctx * c, tt_layer * l)
{
  const tt_attention a = attention_setup (c, l);
  tt_attention_forward (&a);
}

static void
attention_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_attention a = attention_setup (c, l);
  const int key = l->n_inputs == 3 ? 2 : 1;
  tt_attention_backward (&a, tt_run_data (c, l->out_deriv[0]),
      tt_run_data (c, l->in_deriv[0]), tt_run_data (c, l->in_deriv[key]),
      tt_run_data (c, l->in_deriv[1]), NULL,
      tt_run_data (c, l->p.attn.dscores));
}

static unsigned
attention_backward_reads (const tt_layer * l)
{
  (void) l;
  return TT_READS_INPUT;
}

/* per channel (head): the scores (lq x lk over d) and their weighted sum
 * of the values (lq x d over lk) */
static void
attention_multiply_adds (const tt_layer * l, uint64_t * weighted,
    uint64_t * between)
{
  *weighted = 0;
  *between = (uint64_t) l->p.attn.heads * l->p.attn.lq * l->p.attn.lk *
      (l->p.attn.key_dim + l->p.attn.value_dim);
}

const tt_layer_ops tt_attention_layer_ops = {
  .type = "attention",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .keys = attention_keys,
  .parse = attention_parse,
  .infer = attention_infer,
  .declare = attention_declare,
  .forward = attention_forward,
  .calc_derivative = attention_calc_derivative,
  .backward_reads = attention_backward_reads,
  .multiply_adds = attention_multiply_adds,
};
