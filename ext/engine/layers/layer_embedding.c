/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * embedding: an input of 1:1:W indices (floats, truncated toward zero as
 * nntrainer converts them) becomes 1:W:out_dim, row i of the output the
 * weight's row of index i. The weight ("Embedding", nntrainer's name) is
 * [in_dim][out_dim]. Its gradient adds each output row's derivative into
 * the row of its index; the input derivative (indices) is zero.
 *
 * An index outside [0, in_dim) (or not a number) gives a row of NaN:
 * nntrainer throws there; a step cannot fail from inside a layer here, so
 * training refuses the batch through its loss ("the loss became nan ...
 * not applied") and inference shows NaN rows.
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <math.h>
#include <string.h>

static const char *const emb_keys[] = { "in_dim", "out_dim", NULL };

static tt_status
emb_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st;
  if (!tt_section_has (s, "in_dim"))
    return tt_section_error (s, "in_dim", err, TT_ERR_INVALID,
        "missing key (the number of indices, the vocabulary's size)");
  if (!tt_section_has (s, "out_dim"))
    return tt_section_error (s, "out_dim", err, TT_ERR_INVALID,
        "missing key (the size of an embedding vector)");
  if ((st = tt_section_uint (s, "in_dim", 1, 1u << 24, &l->p.emb.in_dim,
              err)) ||
      (st = tt_section_uint (s, "out_dim", 1, 1u << 20, &l->p.emb.out_dim,
              err)))
    return st;
  return TT_OK;
}

static tt_status
emb_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims d = l->in_dims[0];
  /* nntrainer refuses channels and reads only the first row of a sample */
  if (d.c != 1 || d.h != 1)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s]: embedding needs an "
        "input of 1:1:W indices, got %u:%u:%u", c->path, l->section, d.c,
        d.h, d.w);
  const uint32_t in = l->p.emb.in_dim, out = l->p.emb.out_dim;
  if ((uint64_t) in * out > (1u << 28))
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s]: in_dim %u x out_dim %u "
        "is larger than %u weights", c->path, l->section, in, out, 1u << 28);
  l->out_dims[0] = (tt_dims) {
  1, d.w, out};
  tt_weight *w = tt_layer_add_weight (l, "Embedding", (size_t) in * out,
      l->weight_init, in, out, true);
  w->decay = l->weight_decay;
  w->l2 = l->l2_constant;
  return TT_OK;
}

typedef struct
{
  const float *x, *w;
  float *y;
  uint32_t in_dim, out_dim;
} emb_job;

static void
emb_lookup (void *arg, size_t begin, size_t end)
{
  const emb_job *j = arg;
  const size_t d = j->out_dim;
  for (size_t t = begin; t < end; t++) {
    const float v = j->x[t];
    float *y = j->y + t * d;
    if (v >= 0.0f && v < (float) j->in_dim)
      memcpy (y, j->w + (size_t) v * d, d * sizeof *y);
    else
      for (size_t k = 0; k < d; k++)
        y[k] = NAN;
  }
}

static void
emb_forward (const tt_run_ctx * c, tt_layer * l)
{
  const size_t tokens = (size_t) c->batch * l->in_dims[0].w;
  emb_job j = { tt_run_data (c, l->in[0]),
    tt_run_data (c, l->weights[0].value), tt_run_data (c, l->out[0]),
    l->p.emb.in_dim, l->p.emb.out_dim
  };
  /* a token at least, whole rows of copies */
  const size_t min = 16384 / l->p.emb.out_dim + 1;
  tt_split (c->threads, tokens, 1, min, emb_lookup, &j);
}

static TT_VECTOR_CLONES void
emb_add_row (float *restrict g, const float *restrict dy, size_t d)
{
  for (size_t k = 0; k < d; k++)
    g[k] += dy[k];
}

/* Serial: tokens with the same index add into the same row, in token
 * order (the result does not depend on the thread count). */
static void
emb_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  const tt_weight *w = &l->weights[0];
  if (w->grad < 0)
    return;
  const size_t d = l->p.emb.out_dim;
  const size_t tokens = (size_t) c->batch * l->in_dims[0].w;
  const float *x = tt_run_data (c, l->in[0]);
  const float *dy = tt_run_data (c, l->out_deriv[0]);
  float *g = tt_run_data (c, w->grad);
  memset (g, 0, w->count * sizeof *g);
  for (size_t t = 0; t < tokens; t++) {
    const float v = x[t];
    /* forward gave NaN for the others: the step stops at its loss */
    if (v >= 0.0f && v < (float) l->p.emb.in_dim)
      emb_add_row (g + (size_t) v * d, dy + t * d, d);
  }
}

/* Indices have no derivative: zero, so that a layer before sees none. */
static void
emb_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  float *dx = tt_run_data (c, l->in_deriv[0]);
  memset (dx, 0, (size_t) c->batch * l->in_dims[0].w * sizeof *dx);
}

static unsigned
emb_backward_reads (const tt_layer * l)
{
  (void) l;
  return TT_READS_INPUT;
}

const tt_layer_ops tt_embedding_layer_ops = {
  .type = "embedding",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = emb_keys,
  .has_weights = true,
  .parse = emb_parse,
  .infer = emb_infer,
  .forward = emb_forward,
  .calc_gradient = emb_calc_gradient,
  .calc_derivative = emb_calc_derivative,
  .backward_reads = emb_backward_reads,
};
