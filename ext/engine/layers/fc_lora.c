/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LoRA adapters, nntrainer's way (fc_layer.cpp): lora_rank = r adds
 * loraA [in][r] (initialized to zeros) and loraB [r][unit] (lecun
 * normal) to a fully_connected layer, after its weight and bias, and
 *
 *   y = x W + b + s (x A) B,     s = lora_alpha / r (1 without alpha)
 *
 * Only A and B train: W and b are frozen (no gradient, no optimizer
 * state). With h = x A (kept from forward, a scratch tensor of rows x r)
 * and dh = s dy B^T (rows x r):
 *
 *   dB = s h^T dy,   dA = x^T dh,   dx = dy W^T + dh A^T
 *
 * which is dx = dy (W + s A B)^T, nntrainer's input derivative, without
 * forming the in x unit sum. The layer keeps none of the dense layer's
 * thread fusions (owned rows, update as you go, relu and loss fusions):
 * its products split over the threads as any tt_gemm_split. Its ops
 * table (tt_fc_lora_layer_ops) is layer_fc.c's, which calls these.
 */
#include "tt_layer.h"

#include <stdio.h>

tt_status
tt_lora_parse (tt_layer * l, const tt_section * s, uint32_t max, tt_error * err)
{
  uint32_t rank = 0, alpha = 0;
  tt_status st;
  l->p.fc.lora_rank = l->p.fc.lora_alpha = 0;
  l->p.fc.lora_scale = 1.0f;
  if ((st = tt_section_uint (s, "lora_rank", 0, max, &rank, err)) ||
      (st = tt_section_uint (s, "lora_alpha", 1, 1u << 24, &alpha, err)))
    return st;
  if (tt_section_has (s, "lora_alpha") && !rank)
    return tt_section_error (s, "lora_alpha", err, TT_ERR_INVALID,
        "needs lora_rank >= 1 (the adapters' rank; lora_rank = 0 or none: "
        "no adapters)");
  l->p.fc.lora_rank = rank;
  l->p.fc.lora_alpha = alpha;
  if (rank && alpha)
    l->p.fc.lora_scale = (float) alpha / (float) rank;
  return TT_OK;
}

tt_status
tt_lora_fc_weights (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const uint32_t rank = l->p.fc.lora_rank, in = l->in_dims[0].w;
  const uint32_t unit = l->p.fc.unit, most = in < unit ? in : unit;
  if (rank > most)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] lora_rank: %u is above "
        "min (input width %u, unit %u) = %u", c->path, l->section, rank, in,
        unit, most);
  /* the base weight and bias freeze; not split by rows over threads */
  for (uint32_t i = 0; i < l->n_weights; i++)
    l->weights[i].trainable = false;
  l->weights[0].rows = 0;
  tt_weight *a = tt_layer_add_weight (l, "loraA", (size_t) in * rank,
      TT_INIT_ZEROS, in, rank, true);
  tt_weight *b = tt_layer_add_weight (l, "loraB", (size_t) rank * unit,
      TT_INIT_LECUN_NORMAL, rank, unit, true);
  a->decay = b->decay = l->weight_decay;
  a->l2 = b->l2 = l->l2_constant;
  return TT_OK;
}

/* weights: 0 W, then b unless disable_bias, then A, B */
static const tt_weight *
lora_a (const tt_layer * l)
{
  return &l->weights[l->n_weights - 2];
}

static const tt_weight *
lora_b (const tt_layer * l)
{
  return &l->weights[l->n_weights - 1];
}

typedef struct
{
  int rows, k, unit, r;
  float s;
} lora_shape;

static lora_shape
lora_shape_of (const tt_layer * l, uint32_t batch)
{
  lora_shape g;
  g.rows = (int) (batch * l->in_dims[0].c * l->in_dims[0].h);
  g.k = (int) l->in_dims[0].w;
  g.unit = (int) l->p.fc.unit;
  g.r = (int) l->p.fc.lora_rank;
  g.s = l->p.fc.lora_scale;
  return g;
}

/* scratch[0]: h = x A, from forward to the gradient; scratch[1]: dh,
 * from the gradient (or the derivative, when the adapters are frozen) to
 * the derivative */
void
tt_lora_fc_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t rows = (size_t) c->batch_size * l->in_dims[0].c *
      l->in_dims[0].h;
  const size_t n = rows * l->p.fc.lora_rank;
  const bool grad = lora_a (l)->grad >= 0 || lora_b (l)->grad >= 0;
  l->p.fc.lora_h = tt_init_scratch (c, "lora_h", n);
  tt_init_use (c, l->p.fc.lora_h, TT_PHASE_FORWARD);
  if (grad)
    tt_init_use (c, l->p.fc.lora_h, TT_PHASE_GRADIENT);
  l->p.fc.lora_dh = -1;
  if (!grad && !l->needs_derivative)
    return;
  l->p.fc.lora_dh = tt_init_scratch (c, "lora_dh", n);
  if (grad)
    tt_init_use (c, l->p.fc.lora_dh, TT_PHASE_GRADIENT);
  if (l->needs_derivative)
    tt_init_use (c, l->p.fc.lora_dh, TT_PHASE_DERIVATIVE);
}

void
tt_lora_fc_forward (const tt_run_ctx * c, tt_layer * l)
{
  const lora_shape g = lora_shape_of (l, c->batch);
  const float *x = tt_run_data (c, l->in[0]);
  float *y = tt_run_data (c, l->out[0]);
  float *h = tt_run_data (c, l->p.fc.lora_h);
  float beta = 0.0f;
  if (l->n_weights == 4) {
    const float *bias = tt_run_data (c, l->weights[1].value);
    for (int row = 0; row < g.rows; row++)
      for (int i = 0; i < g.unit; i++)
        y[(size_t) row * g.unit + i] = bias[i];
    beta = 1.0f;
  }
  tt_gemm_split (c->threads, false, false, g.rows, g.unit, g.k, 1.0f, x, g.k,
      tt_run_data (c, l->weights[0].value), g.unit, beta, y, g.unit);
  tt_gemm_split (c->threads, false, false, g.rows, g.r, g.k, 1.0f, x, g.k,
      tt_run_data (c, lora_a (l)->value), g.r, 0.0f, h, g.r);
  tt_gemm_split (c->threads, false, false, g.rows, g.unit, g.r, g.s, h, g.r,
      tt_run_data (c, lora_b (l)->value), g.unit, 1.0f, y, g.unit);
}

/* dh = s dy B^T */
static void
lora_dh (const tt_run_ctx * c, const tt_layer * l, const lora_shape * g)
{
  tt_gemm_split (c->threads, false, true, g->rows, g->r, g->unit, g->s,
      tt_run_data (c, l->out_deriv[0]), g->unit,
      tt_run_data (c, lora_b (l)->value), g->unit, 0.0f,
      tt_run_data (c, l->p.fc.lora_dh), g->r);
}

void
tt_lora_fc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  const tt_weight *a = lora_a (l), *b = lora_b (l);
  if (a->grad < 0 && b->grad < 0)
    return;
  const lora_shape g = lora_shape_of (l, c->batch);
  const float *dy = tt_run_data (c, l->out_deriv[0]);
  if (b->grad >= 0)
    tt_gemm_split (c->threads, true, false, g.r, g.unit, g.rows, g.s,
        tt_run_data (c, l->p.fc.lora_h), g.r, dy, g.unit, 0.0f,
        tt_run_data (c, b->grad), g.unit);
  lora_dh (c, l, &g);
  if (a->grad >= 0)
    tt_gemm_split (c->threads, true, false, g.k, g.r, g.rows, 1.0f,
        tt_run_data (c, l->in[0]), g.k, tt_run_data (c, l->p.fc.lora_dh),
        g.r, 0.0f, tt_run_data (c, a->grad), g.r);
}

void
tt_lora_fc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const lora_shape g = lora_shape_of (l, c->batch);
  if (lora_a (l)->grad < 0 && lora_b (l)->grad < 0)
    lora_dh (c, l, &g);
  float *dx = tt_run_data (c, l->in_deriv[0]);
  tt_gemm_split (c->threads, false, true, g.rows, g.k, g.unit, 1.0f,
      tt_run_data (c, l->out_deriv[0]), g.unit,
      tt_run_data (c, l->weights[0].value), g.unit, 0.0f, dx, g.k);
  tt_gemm_split (c->threads, false, true, g.rows, g.k, g.r, 1.0f,
      tt_run_data (c, l->p.fc.lora_dh), g.r,
      tt_run_data (c, lora_a (l)->value), g.r, 1.0f, dx, g.k);
}

/* dA reads the input; dB reads h (scratch), dx neither */
unsigned
tt_lora_fc_backward_reads (const tt_layer * l)
{
  return lora_a (l)->trainable ? TT_READS_INPUT : 0;
}

void
tt_lora_fc_multiply_adds (const tt_layer * l, uint64_t * weighted,
    uint64_t * between)
{
  const uint64_t rows = (uint64_t) l->in_dims[0].c * l->in_dims[0].h;
  *weighted = (l->weights[0].count + lora_a (l)->count + lora_b (l)->count)
      * rows;
  *between = 0;
}

/* tensor-trainer lora (io/lora_file.c): every fully_connected takes
 * adapters; its pair: weight [in][unit], loraA, loraB */
const char *
tt_lora_fc_refuses (const tt_layer * l)
{
  (void) l;
  return NULL;
}

uint32_t
tt_lora_fc_pairs (const tt_layer * l, tt_lora_pair * out)
{
  if (!l->p.fc.lora_rank)
    return 0;
  out[0] = (tt_lora_pair) {
  .base = 0,.a = l->n_weights - 2,.b = l->n_weights - 1,.k =
        l->in_dims[0].w,.n = l->p.fc.unit,.rank = l->p.fc.lora_rank,.scale =
        l->p.fc.lora_scale,.transposed = false};
  return 1;
}
