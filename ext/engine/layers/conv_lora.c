/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LoRA on conv2d (ours: nntrainer's conv2d has no adapters): a conv2d of
 * kernel 1x1, stride 1, no padding and groups 1 is a fully_connected
 * applied at each pixel (filter [F][C][1][1]: y[f][p] = sum_c W[f][c]
 * x[c][p] + b[f]); lora_rank and lora_alpha adapt it as they do the
 * dense layer: loraA [C][r] (zeros), loraB [r][F] (lecun normal), after
 * the filter and bias, which freeze. Per sample, with X its C x P
 * channels (P pixels) and dY its F x P output derivative:
 *
 *   H = A^T X (r x P),  Y += s B^T H,  dH = s B dY,
 *   dB = s sum H dY^T,  dA = sum X dH^T,  dX += A dH
 *
 * Any other kernel, stride, padding or groups with lora_rank is refused
 * (infer), naming what differs. The base's passes are
 * layer_conv2d.c's; these run after them.
 */
#include "tt_layer.h"

tt_status
tt_conv_lora_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  return tt_lora_keys (s, 1u << 16, &l->p.conv.lora_rank,
      &l->p.conv.lora_alpha, &l->p.conv.lora_scale, err);
}

const char *
tt_conv_lora_refuses (const tt_layer * l)
{
  const tt_window_geom *g = &l->p.conv.geom;
  if (g->kernel_h != 1 || g->kernel_w != 1)
    return "LoRA adapts a conv2d of kernel_size 1,1 only (a per-pixel "
        "fully_connected)";
  if (l->p.conv.groups != 1)
    return "LoRA adapts a conv2d of groups 1 only";
  if (g->stride_h != 1 || g->stride_w != 1)
    return "LoRA adapts a 1x1 conv2d of stride 1,1 only";
  if (g->pad_top || g->pad_bottom || g->pad_left || g->pad_right)
    return "LoRA adapts a 1x1 conv2d without padding only";
  return NULL;
}

/* after conv's infer: the geometry checked, the base frozen, A and B */
tt_status
tt_conv_lora_weights (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const uint32_t rank = l->p.conv.lora_rank, f = l->p.conv.filters;
  const uint32_t ch = (uint32_t) l->p.conv.geom.channels;
  const char *why = tt_conv_lora_refuses (l);
  if (why)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] lora_rank: %s", c->path,
        l->section, why);
  const uint32_t most = ch < f ? ch : f;
  if (rank > most)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] lora_rank: %u is above "
        "min (input channels %u, filters %u) = %u", c->path, l->section,
        rank, ch, f, most);
  for (uint32_t i = 0; i < l->n_weights; i++)
    l->weights[i].trainable = false;
  tt_lora_add_pair (l, "loraA", "loraB", ch, f, rank);
  return TT_OK;
}

static const tt_weight *
conv_lora_a (const tt_layer * l)
{
  return &l->weights[l->n_weights - 2];
}

static const tt_weight *
conv_lora_b (const tt_layer * l)
{
  return &l->weights[l->n_weights - 1];
}

static bool
conv_lora_trains (const tt_layer * l)
{
  return conv_lora_a (l)->grad >= 0 || conv_lora_b (l)->grad >= 0;
}

/* scratch: H of every sample, forward to the gradient; dH, the gradient
 * (or the derivative, adapters frozen) to the derivative */
void
tt_conv_lora_declare (tt_init_ctx * c, tt_layer * l)
{
  const tt_window_geom *g = &l->p.conv.geom;
  const size_t n = (size_t) c->batch_size * l->p.conv.lora_rank *
      (size_t) g->out_h * (size_t) g->out_w;
  const bool grad = conv_lora_trains (l);
  l->p.conv.lora_h = tt_init_scratch_by_samples (c, "lora_h", n);
  tt_init_use (c, l->p.conv.lora_h, TT_PHASE_FORWARD);
  if (grad)
    tt_init_use (c, l->p.conv.lora_h, TT_PHASE_GRADIENT);
  l->p.conv.lora_dh = -1;
  if (!grad && !l->needs_derivative)
    return;
  l->p.conv.lora_dh = tt_init_scratch_by_samples (c, "lora_dh", n);
  if (grad)
    tt_init_use (c, l->p.conv.lora_dh, TT_PHASE_GRADIENT);
  if (l->needs_derivative)
    tt_init_use (c, l->p.conv.lora_dh, TT_PHASE_DERIVATIVE);
}

typedef struct
{
  int ch, f, r, p;
  float s;
} conv_lora_shape;

static conv_lora_shape
conv_lora_shape_of (const tt_layer * l)
{
  const tt_window_geom *g = &l->p.conv.geom;
  conv_lora_shape q = {
    g->channels, (int) l->p.conv.filters, (int) l->p.conv.lora_rank,
    g->out_h * g->out_w, l->p.conv.lora_scale
  };
  return q;
}

void
tt_conv_lora_forward (const tt_run_ctx * c, tt_layer * l)
{
  const conv_lora_shape q = conv_lora_shape_of (l);
  const float *x = tt_run_data (c, l->in[0]);
  const float *a = tt_run_data (c, conv_lora_a (l)->value);
  const float *b = tt_run_data (c, conv_lora_b (l)->value);
  float *h = tt_run_data (c, l->p.conv.lora_h);
  float *y = tt_run_data (c, l->out[0]);
  const size_t xs = (size_t) q.ch * q.p, hs = (size_t) q.r * q.p,
      ys = (size_t) q.f * q.p;
  for (uint32_t n = 0; n < c->batch; n++) {
    tt_gemm_split (c->threads, true, false, q.r, q.p, q.ch, 1.0f, a, q.r,
        x + n * xs, q.p, 0.0f, h + n * hs, q.p);
    tt_gemm_split (c->threads, true, false, q.f, q.p, q.r, q.s, b, q.f,
        h + n * hs, q.p, 1.0f, y + n * ys, q.p);
  }
}

/* dH = s B dY of every sample */
static void
conv_lora_dh (const tt_run_ctx * c, const tt_layer * l,
    const conv_lora_shape * q)
{
  const float *dy = tt_run_data (c, l->out_deriv[0]);
  const float *b = tt_run_data (c, conv_lora_b (l)->value);
  float *dh = tt_run_data (c, l->p.conv.lora_dh);
  const size_t hs = (size_t) q->r * q->p, ys = (size_t) q->f * q->p;
  for (uint32_t n = 0; n < c->batch; n++)
    tt_gemm_split (c->threads, false, false, q->r, q->p, q->f, q->s, b, q->f,
        dy + n * ys, q->p, 0.0f, dh + n * hs, q->p);
}

void
tt_conv_lora_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (!conv_lora_trains (l))
    return;
  const conv_lora_shape q = conv_lora_shape_of (l);
  const tt_weight *aw = conv_lora_a (l), *bw = conv_lora_b (l);
  conv_lora_dh (c, l, &q);
  const float *x = tt_run_data (c, l->in[0]);
  const float *dy = tt_run_data (c, l->out_deriv[0]);
  const float *h = tt_run_data (c, l->p.conv.lora_h);
  const float *dh = tt_run_data (c, l->p.conv.lora_dh);
  float *da = aw->grad >= 0 ? tt_run_data (c, aw->grad) : NULL;
  float *db = bw->grad >= 0 ? tt_run_data (c, bw->grad) : NULL;
  const size_t xs = (size_t) q.ch * q.p, hs = (size_t) q.r * q.p,
      ys = (size_t) q.f * q.p;
  for (uint32_t n = 0; n < c->batch; n++) {
    const float beta = n ? 1.0f : 0.0f;
    if (db)
      tt_gemm_split (c->threads, false, true, q.r, q.f, q.p, q.s, h + n * hs,
          q.p, dy + n * ys, q.p, beta, db, q.f);
    if (da)
      tt_gemm_split (c->threads, false, true, q.ch, q.r, q.p, 1.0f,
          x + n * xs, q.p, dh + n * hs, q.p, beta, da, q.r);
  }
}

/* after the base's derivative: dX += A dH */
void
tt_conv_lora_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const conv_lora_shape q = conv_lora_shape_of (l);
  if (!conv_lora_trains (l))
    conv_lora_dh (c, l, &q);
  const float *a = tt_run_data (c, conv_lora_a (l)->value);
  const float *dh = tt_run_data (c, l->p.conv.lora_dh);
  float *dx = tt_run_data (c, l->in_deriv[0]);
  const size_t xs = (size_t) q.ch * q.p, hs = (size_t) q.r * q.p;
  for (uint32_t n = 0; n < c->batch; n++)
    tt_gemm_split (c->threads, false, false, q.ch, q.p, q.r, 1.0f, a, q.r,
        dh + n * hs, q.p, 1.0f, dx + n * xs, q.p);
}

uint32_t
tt_conv_lora_pairs (const tt_layer * l, tt_lora_pair * out)
{
  if (!l->p.conv.lora_rank)
    return 0;
  out[0] = (tt_lora_pair) {
  .base = 0,.a = l->n_weights - 2,.b = l->n_weights - 1,.k =
        (uint32_t) l->p.conv.geom.channels,.n = l->p.conv.filters,.rank =
        l->p.conv.lora_rank,.scale = l->p.conv.lora_scale,.transposed = true};
  return 1;
}
