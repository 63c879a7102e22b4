/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * multi_head_attention: nntrainer's (and PyTorch's nn.MultiheadAttention,
 * batch_first), input_layers = query, key, value[, mask]: query 1:lq:dq,
 * key 1:lk:dk, value 1:lk:dv, mask num_heads:lq:lk (added to the scaled
 * scores). Each input is projected (Qp = query Wq + bq, Kp, Vp alike),
 * split by columns into num_heads heads of projected_key_dim
 * (projected_value_dim for V), each head's softmax (Qh Kh^T / sqrt
 * (projected_key_dim) + mask) Vh (dropout_rate on the attention weights
 * in training), the heads side by side projected by fc_weight, fc_bias
 * into 1:lq:output_shape. Weights in nntrainer's order and layout:
 * query_fc_weight [dq][H * kd], query_fc_bias, key_fc_weight [dk][H *
 * kd], key_fc_bias, value_fc_weight [dv][H * vd], value_fc_bias,
 * fc_weight [H * vd][output_shape], fc_bias (no biases with
 * disable_bias).
 *
 * Scratch: the projections and the softmax's output (probs), kept from
 * forward to the phase running the attention's backward (calcGradient
 * when the weights train, else calcDerivative); the heads' output,
 * before the output projection, to that phase too when the output
 * projection's weight gradient (or its adapters') reads it, then its
 * derivative is written over it; without a gradient (frozen, as under
 * --train biases) the heads' output lives in forward alone and their
 * derivative is a scratch of the backward phase (dheads); the dropout's
 * mask (one byte an element, 1: kept, scaled by 1 / (1 - rate)) to
 * backward, its dropped weights in forward alone; the derivatives of the scores and of the
 * projections in backward. Backward reads the inputs
 * in calcGradient alone (the projections' weight gradients).
 *
 * Planned with half-width GEMM inputs (bf16, fp16), the projections are
 * held at 2 bytes an element: they are only ever the products' operands,
 * which round them to that format anyway, so their GEMMs write a scratch
 * of forward alone in fp32, narrowed into the held one. So is the heads'
 * output when the output projection's weight gradient reads it (not
 * with LoRA, whose adapters read it in fp32): its fp32 copy lives in
 * forward, and its derivative has its own scratch. The results are the
 * bits of holding them in fp32. The softmax's output (probs) is held at
 * half width too when the key length is at most TT_ATTENTION_HALF_ROW:
 * the softmax's derivative then reads it rounded, a change of the
 * gradients (about 5e-4 of their L2 norm in bf16, a tenth of what bf16
 * changes already; docs/precision.md), its forward uses in fp32.
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <math.h>
#include <string.h>

static const char *const mha_keys[] = {
  "num_heads", "projected_key_dim", "projected_value_dim", "output_shape",
  "dropout_rate", "return_attention_weight", "average_attention_weight",
  "lora_rank", "lora_alpha", NULL
};

static const char *const mha_return_names[] = {
  "none", "before", "after", NULL
};

static tt_status
mha_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st;
  int ret = 0;
  bool average = true;
  memset (&l->p.attn, 0, sizeof l->p.attn);
  l->p.attn.heads = 1;
  if ((st = tt_section_uint (s, "num_heads", 1, 1u << 16, &l->p.attn.heads,
              err)) ||
      (st = tt_section_uint (s, "projected_key_dim", 1, 1u << 20,
              &l->p.attn.key_dim, err)) ||
      (st = tt_section_uint (s, "projected_value_dim", 1, 1u << 20,
              &l->p.attn.value_dim, err)) ||
      (st = tt_section_uint (s, "output_shape", 1, 1u << 20,
              &l->p.attn.out_dim, err)) ||
      (st = tt_section_float (s, "dropout_rate", &l->p.attn.dropout, err)) ||
      (st = tt_section_enum (s, "return_attention_weight", mha_return_names,
              &ret, err)) ||
      (st = tt_section_bool (s, "average_attention_weight", &average, err)))
    return st;
  if (!(l->p.attn.dropout >= 0 && l->p.attn.dropout < 1))
    return tt_section_error (s, "dropout_rate", err, TT_ERR_INVALID,
        "must be in [0, 1)");
  l->p.attn.ret_weights = ret;
  l->p.attn.avg_weights = average;
  /* the attention weights are the second output when returned */
  l->n_outputs = ret ? 2 : 1;
  /* LoRA on the four projections (mha_lora.c) */
  return tt_mha_lora_parse (l, s, err);
}

static tt_status
mha_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  static const char *const role[4] = { "query", "key", "value", "mask" };
  if (l->n_inputs < 3 || l->n_inputs > 4)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: multi_head_attention takes 3 or 4 inputs "
        "(input_layers = query, key, value[, mask]), not %u", c->path,
        l->section, l->n_inputs);
  for (uint32_t i = 0; i < 3; i++)
    if (l->in_dims[i].c != 1)
      return tt_fail (err, TT_ERR_INVALID,
          "%s: [%s] input_layers: %s '%s' gives %u:%u:%u; its channel must "
          "be 1 (1:length:features)", c->path, l->section, role[i],
          l->inputs[i].name, l->in_dims[i].c, l->in_dims[i].h, l->in_dims[i].w);
  const tt_dims q = l->in_dims[0], k = l->in_dims[1], v = l->in_dims[2];
  const uint32_t heads = l->p.attn.heads;
  if (k.h != v.h)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: key '%s' gives %u:%u:%u and value '%s' "
        "%u:%u:%u (key and value must have the same length, the height)",
        c->path, l->section, l->inputs[1].name, k.c, k.h, k.w,
        l->inputs[2].name, v.c, v.h, v.w);
  if (!l->p.attn.key_dim) {
    if (q.w % heads)
      return tt_fail (err, TT_ERR_INVALID,
          "%s: [%s] num_heads: %u does not divide the query's width %u "
          "(set projected_key_dim, or a num_heads dividing %u)", c->path,
          l->section, heads, q.w, q.w);
    l->p.attn.key_dim = q.w / heads;
  }
  if (!l->p.attn.value_dim)
    l->p.attn.value_dim = l->p.attn.key_dim;
  if (!l->p.attn.out_dim)
    l->p.attn.out_dim = q.w;
  l->p.attn.lq = q.h;
  l->p.attn.lk = k.h;
  l->p.attn.has_mask = l->n_inputs == 4;
  if (l->p.attn.has_mask) {
    const tt_dims m = l->in_dims[3];
    if (m.c != heads || m.h != q.h || m.w != k.h)
      return tt_fail (err, TT_ERR_INVALID,
          "%s: [%s] input_layers: mask '%s' gives %u:%u:%u, not "
          "num_heads:query length:key length = %u:%u:%u", c->path,
          l->section, l->inputs[3].name, m.c, m.h, m.w, heads, q.h, k.h);
  }
  const uint64_t hk = (uint64_t) heads * l->p.attn.key_dim,
      hv = (uint64_t) heads *l->p.attn.value_dim;
  if (hk > (1u << 24) || hv > (1u << 24) ||
      (uint64_t) heads * q.h * k.h > (1u << 28) ||
      (q.w + k.w) * hk + (v.w + l->p.attn.out_dim) * hv > (1u << 30))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] num_heads: %u heads of %u:%u (key:value dimensions) over "
        "%u x %u positions are too large", c->path, l->section, heads,
        l->p.attn.key_dim, l->p.attn.value_dim, q.h, k.h);
  l->out_dims[0] = (tt_dims) {
  1, q.h, l->p.attn.out_dim};
  l->out_dims[1] = (tt_dims) {
  l->p.attn.avg_weights ? 1 : heads, q.h, k.h};
  static const char *const names[8] = {
    "query_fc_weight", "query_fc_bias", "key_fc_weight", "key_fc_bias",
    "value_fc_weight", "value_fc_bias", "fc_weight", "fc_bias"
  };
  const uint32_t rows[4] = { q.w, k.w, v.w, (uint32_t) hv };
  const uint32_t cols[4] = { (uint32_t) hk, (uint32_t) hk, (uint32_t) hv,
    l->p.attn.out_dim
  };
  for (int i = 0; i < 4; i++) {
    tt_weight *w = tt_layer_add_weight (l, names[2 * i],
        (size_t) rows[i] * cols[i], l->weight_init, rows[i], cols[i], true);
    w->decay = l->weight_decay;
    w->l2 = l->l2_constant;
    if (!l->disable_bias) {
      tt_weight *b = tt_layer_add_weight (l, names[2 * i + 1], cols[i],
          l->bias_init, rows[i], cols[i], true);
      b->decay = l->bias_decay;
    }
  }
  /* LoRA: the adapters after them, the projections frozen (mha_lora.c) */
  return l->p.attn.lora_rank ? tt_mha_lora_weights (c, l, err) : TT_OK;
}

/* the weight and bias of projection i (0 query ... 3 output) */
static const tt_weight *
mha_weight (const tt_layer * l, int i, bool bias)
{
  if (l->disable_bias)
    return bias ? NULL : &l->weights[i];
  return &l->weights[2 * i + (bias ? 1 : 0)];
}

/* LoRA (mha_lora.c): projection i's adapters A and B, NULL without */
static const tt_weight *
mha_lora (const tt_layer * l, int i, bool b)
{
  if (!l->p.attn.lora_rank)
    return NULL;
  return &l->weights[l->n_weights - 8 + 2 * i + (b ? 1 : 0)];
}

/* an adapter's gradient tensor, NULL when it has none */
static float *
mha_lora_grad (const tt_run_ctx * c, const tt_layer * l, int i, bool b)
{
  const tt_weight *w = mha_lora (l, i, b);
  return w && w->grad >= 0 ? tt_run_data (c, w->grad) : NULL;
}

static bool
mha_runs_gradient (const tt_layer * l)
{
  if (l->p.attn.lora_rank)
    for (int i = 0; i < 4; i++)
      if (mha_lora (l, i, false)->grad >= 0 || mha_lora (l, i, true)->grad >= 0)
        return true;
  return l->weights[0].grad >= 0;
}

/* LoRA's scratch: x A of each projection, from forward to the gradient;
 * its derivative in backward (the output projection's in the phase of
 * the attention's backward, the others' from the gradient, or the
 * derivative, to the derivative) */
static void
mha_lora_declare (tt_init_ctx * c, tt_layer * l, bool grad, bool deriv)
{
  static const char *const hn[4] = { "lora_h_query", "lora_h_key",
    "lora_h_value", "lora_h_output"
  };
  static const char *const dn[4] = { "lora_dh_query", "lora_dh_key",
    "lora_dh_value", "lora_dh_output"
  };
  const size_t r = l->p.attn.lora_rank, batch = c->batch_size;
  const size_t rows[4] = { batch * l->p.attn.lq, batch * l->p.attn.lk,
    batch * l->p.attn.lk, batch * l->p.attn.lq
  };
  for (int i = 0; i < 4; i++) {
    l->p.attn.lora_h[i] = l->p.attn.lora_dh[i] = -1;
    if (!r)
      continue;
    l->p.attn.lora_h[i] = tt_init_scratch_by_samples (c, hn[i], rows[i] * r);
    tt_init_use (c, l->p.attn.lora_h[i], TT_PHASE_FORWARD);
    if (grad)
      tt_init_use (c, l->p.attn.lora_h[i], TT_PHASE_GRADIENT);
    if (!grad && !deriv)
      continue;
    l->p.attn.lora_dh[i] = tt_init_scratch_by_samples (c, dn[i], rows[i] * r);
    if (grad)
      tt_init_use (c, l->p.attn.lora_dh[i], TT_PHASE_GRADIENT);
    if (deriv)
      tt_init_use (c, l->p.attn.lora_dh[i], TT_PHASE_DERIVATIVE);
  }
}

/* tt_test_hooks.h: the heads' output kept as before frozen attentions
 * had their own derivative scratch */
static bool mha_keep_heads;

void tt_mha_force_keep_heads (bool on);
void
tt_mha_force_keep_heads (bool on)
{
  mha_keep_heads = on;
}

/* tt_test_hooks.h: the projections and heads held in fp32 whatever the
 * GEMM inputs */
static bool mha_fp32_scratch, mha_fp32_probs;

void tt_mha_force_fp32_scratch (bool on);
void
tt_mha_force_fp32_scratch (bool on)
{
  mha_fp32_scratch = on;
}

void tt_mha_force_fp32_probs (bool on);
void
tt_mha_force_fp32_probs (bool on)
{
  mha_fp32_probs = on;
}

/* the format the scratch kept for backward is held in: the planned GEMM
 * inputs' (which round it when read), fp32 without a backward */
static tt_gemm_inputs
mha_held_format (const tt_init_ctx * c, bool back)
{
  if (!back || mha_fp32_scratch)
    return TT_GEMM_FP32;
  return tt_gemm_inputs_of (tt_init_gemm_inputs (c));
}

/* scratch of count elements, fp32 or held at half width */
static int
mha_scratch (tt_init_ctx * c, const char *suffix, size_t count, bool half)
{
  return half ? tt_init_scratch_half_by_samples (c, suffix, count) :
      tt_init_scratch_by_samples (c, suffix, count);
}

static void
mha_declare (tt_init_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch_size, heads = l->p.attn.heads;
  const size_t lq = l->p.attn.lq, lk = l->p.attn.lk;
  const size_t hk = heads * l->p.attn.key_dim, hv = heads * l->p.attn.value_dim;
  const size_t proj[3] = { batch * lq * hk, batch * lk * hk, batch * lk * hv };
  const size_t scores = batch * heads * lq * lk;
  static const char *const pnames[3] = { "proj_query", "proj_key",
    "proj_value"
  };
  static const char *const dnames[3] = { "proj_query:deriv",
    "proj_key:deriv", "proj_value:deriv"
  };
  const bool grad = mha_runs_gradient (l), deriv = l->needs_derivative;
  const bool back = grad || deriv;
  const tt_phase bphase = grad ? TT_PHASE_GRADIENT : TT_PHASE_DERIVATIVE;
  const tt_gemm_inputs held = mha_held_format (c, back);
  const bool half = held != TT_GEMM_FP32;
  const bool heads_half = half && grad && !l->p.attn.lora_rank;
  const bool probs_half = half && !mha_fp32_probs &&
      lk <= TT_ATTENTION_HALF_ROW;
  l->p.attn.held = held;
  l->p.attn.proj_wide = l->p.attn.heads_wide = l->p.attn.probs_wide = -1;
  if (half) {
    const size_t most = proj[0] > proj[1] ? proj[0] : proj[1];
    l->p.attn.proj_wide = tt_init_scratch_by_samples (c, "proj:fp32",
        most > proj[2] ? most : proj[2]);
    tt_init_use (c, l->p.attn.proj_wide, TT_PHASE_FORWARD);
  }
  for (int i = 0; i < 3; i++) {
    l->p.attn.proj[i] = mha_scratch (c, pnames[i], proj[i], half);
    tt_init_use (c, l->p.attn.proj[i], TT_PHASE_FORWARD);
    l->p.attn.dproj[i] = -1;
  }
  l->p.attn.probs = mha_scratch (c, "probs", scores, probs_half);
  tt_init_use (c, l->p.attn.probs, TT_PHASE_FORWARD);
  if (probs_half) {
    l->p.attn.probs_wide = tt_init_scratch_by_samples (c, "probs:fp32", scores);
    tt_init_use (c, l->p.attn.probs_wide, TT_PHASE_FORWARD);
  }
  l->p.attn.heads_out = mha_scratch (c, "heads", batch * lq * hv, heads_half);
  tt_init_use (c, l->p.attn.heads_out, TT_PHASE_FORWARD);
  if (heads_half) {
    l->p.attn.heads_wide = tt_init_scratch_by_samples (c, "heads:fp32",
        batch * lq * hv);
    tt_init_use (c, l->p.attn.heads_wide, TT_PHASE_FORWARD);
  }
  l->p.attn.drop = l->p.attn.dropped = -1;
  if (l->p.attn.dropout > 0) {
    l->p.attn.drop = tt_init_scratch_bytes_by_samples (c, "dropout_mask",
        scores);
    tt_init_use (c, l->p.attn.drop, TT_PHASE_FORWARD);
    l->p.attn.dropped = tt_init_scratch_by_samples (c, "dropped", scores);
    tt_init_use (c, l->p.attn.dropped, TT_PHASE_FORWARD);
  }
  mha_lora_declare (c, l, grad, deriv);
  l->p.attn.dscores = -1;
  l->p.attn.dheads = -1;
  if (!back)
    return;
  for (int i = 0; i < 3; i++) {
    tt_init_use (c, l->p.attn.proj[i], bphase);
    l->p.attn.dproj[i] = tt_init_scratch_by_samples (c, dnames[i], proj[i]);
    tt_init_use (c, l->p.attn.dproj[i], bphase);
    if (deriv)
      tt_init_use (c, l->p.attn.dproj[i], TT_PHASE_DERIVATIVE);
  }
  tt_init_use (c, l->p.attn.probs, bphase);
  if (l->p.attn.drop >= 0)
    tt_init_use (c, l->p.attn.drop, bphase);
  /* the heads' output derivative is written over their output, after
   * the output projection's weight gradient read it; without gradients
   * nothing reads the heads' output in backward: their derivative has
   * its own scratch, and the output is not kept from forward; held at
   * half width, the heads' output cannot hold their fp32 derivative */
  if ((grad || mha_keep_heads) && !heads_half) {
    tt_init_use (c, l->p.attn.heads_out, bphase);
  } else {
    l->p.attn.dheads = tt_init_scratch_by_samples (c, "heads:deriv",
        batch * lq * hv);
    tt_init_use (c, l->p.attn.dheads, bphase);
  }
  l->p.attn.dscores = tt_init_scratch_by_samples (c, "scores:deriv", scores);
  tt_init_use (c, l->p.attn.dscores, bphase);
  /* the mask's derivative is written with the attention's backward */
  if (l->p.attn.has_mask && l->in_deriv[3] >= 0)
    tt_init_use (c, l->in_deriv[3], bphase);
  if (!grad)
    return;
  /* the weight gradients read the inputs and the heads' output */
  tt_init_use (c, l->p.attn.heads_out, TT_PHASE_GRADIENT);
  for (int i = 0; i < 3; i++)
    tt_init_use (c, l->in[i], TT_PHASE_GRADIENT);
}

/* y[r][j] = b[j] added over rows of n */
TT_VECTOR_CLONES static void
mha_add_bias (float *y, const float *b, size_t rows, size_t n)
{
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < n; j++)
      y[r * n + j] += b[j];
}

/* y = x W (+ b): rows x n from rows x k */
static void
mha_project (const tt_run_ctx * c, const float *x, const tt_weight * w,
    const tt_weight * b, size_t rows, size_t k, size_t n, float *y)
{
  tt_run_gemm_split (c, c->threads, false, false, (int) rows, (int) n, (int) k,
      1.0f, x, (int) k, tt_run_data (c, w->value), (int) n, 0.0f, y, (int) n);
  if (b)
    mha_add_bias (y, tt_run_data (c, b->value), rows, n);
}

/* n values of fp32 scratch narrowed into held scratch, split over the
 * threads by samples (a conversion element by element: the same bits
 * on any split) */
typedef struct
{
  tt_gemm_inputs f;
  const float *x;
  uint16_t *y;
  size_t per_sample;
} mha_narrow_job;

static void
mha_narrow_range (void *arg, size_t begin, size_t end)
{
  const mha_narrow_job *j = arg;
  const size_t at = begin * j->per_sample;
  tt_narrow_as (j->f, j->x + at, j->y + at, (end - begin) * j->per_sample);
}

static void
mha_narrow (const tt_run_ctx * c, const tt_layer * l, const float *x,
    int held, size_t rows_per_sample, size_t cols)
{
  mha_narrow_job j = { l->p.attn.held, x, tt_run_half (c, held),
    rows_per_sample * cols
  };
  tt_split (c->threads, c->batch, 1, c->batch * j.per_sample >= 64 * 1024 ?
      1 : SIZE_MAX, mha_narrow_range, &j);
}

/* y += s (x A) B of projection i, x A kept (lora_proj.c) */
static void
mha_lora_forward (const tt_run_ctx * c, const tt_layer * l, int i,
    const float *x, size_t rows, size_t k, size_t n, float *y)
{
  tt_lora_proj_forward (c->threads, (int) rows, (int) k, (int) n,
      (int) l->p.attn.lora_rank, l->p.attn.lora_scale, x,
      tt_run_data (c, mha_lora (l, i, false)->value),
      tt_run_data (c, mha_lora (l, i, true)->value),
      tt_run_data (c, l->p.attn.lora_h[i]), y);
}

/* dh = s dy B^T of projection i */
static void
mha_lora_dh (const tt_run_ctx * c, const tt_layer * l, int i,
    const float *dy, size_t rows, size_t n)
{
  tt_lora_proj_dh (c->threads, (int) rows, (int) n,
      (int) l->p.attn.lora_rank, l->p.attn.lora_scale, dy,
      tt_run_data (c, mha_lora (l, i, true)->value),
      tt_run_data (c, l->p.attn.lora_dh[i]));
}

/* dh, then dA and dB of projection i, from its input x and dy */
static void
mha_lora_grads (const tt_run_ctx * c, const tt_layer * l, int i,
    const float *x, const float *dy, size_t rows, size_t k, size_t n)
{
  mha_lora_dh (c, l, i, dy, rows, n);
  tt_lora_proj_grads (c->threads, (int) rows, (int) k, (int) n,
      (int) l->p.attn.lora_rank, l->p.attn.lora_scale, x, dy,
      tt_run_data (c, l->p.attn.lora_h[i]),
      tt_run_data (c, l->p.attn.lora_dh[i]), mha_lora_grad (c, l, i, false),
      mha_lora_grad (c, l, i, true));
}

/* dx += dh A^T of projection i */
static void
mha_lora_input (const tt_run_ctx * c, const tt_layer * l, int i,
    size_t rows, size_t k, float *dx)
{
  tt_lora_proj_input (c->threads, (int) rows, (int) k,
      (int) l->p.attn.lora_rank, tt_run_data (c, l->p.attn.lora_dh[i]),
      tt_run_data (c, mha_lora (l, i, false)->value), dx);
}

static tt_attention
mha_setup (const tt_run_ctx * c, const tt_layer * l)
{
  const int heads = (int) l->p.attn.heads, kd = (int) l->p.attn.key_dim,
      vd = (int) l->p.attn.value_dim;
  const int lq = (int) l->p.attn.lq, lk = (int) l->p.attn.lk;
  tt_attention a = {
    .batch = (int) c->batch,.heads = heads,.lq = lq,.lk = lk,.dk = kd,
    .dv = vd,
    .q = tt_run_data (c, l->p.attn.proj[0]),
    .k = tt_run_data (c, l->p.attn.proj[1]),
    .v = tt_run_data (c, l->p.attn.proj[2]),
    .qkv_half = l->p.attn.held != TT_GEMM_FP32,
    .o = tt_run_data (c, l->p.attn.heads_wide >= 0 ? l->p.attn.heads_wide :
        l->p.attn.heads_out),
    .q_bs = (size_t) lq * heads * kd,.k_bs = (size_t) lk * heads * kd,
    .v_bs = (size_t) lk * heads * vd,.o_bs = (size_t) lq * heads * vd,
    .q_hs = (size_t) kd,.k_hs = (size_t) kd,.v_hs = (size_t) vd,
    .o_hs = (size_t) vd,
    .q_ld = heads * kd,.k_ld = heads * kd,.v_ld = heads * vd,
    .o_ld = heads * vd,
    .scale = 1.0f / sqrtf ((float) kd),
    .mask = l->p.attn.has_mask ? tt_run_data (c, l->in[3]) : NULL,
    .probs = tt_run_data (c, l->p.attn.probs_wide >= 0 ?
        l->p.attn.probs_wide : l->p.attn.probs),
    .dropped = tt_run_data (c, l->p.attn.dropped),
    .drop_keep = 1.0f / (1.0f - l->p.attn.dropout),
    .threads = c->threads,
    .gemm_inputs = l->p.attn.held != TT_GEMM_FP32 ? l->p.attn.held :
        tt_run_gemm_inputs (c),
  };
  return a;
}

static void
mha_forward (const tt_run_ctx * c, tt_layer * l)
{
  const size_t batch = c->batch, lq = l->p.attn.lq, lk = l->p.attn.lk;
  const size_t heads = l->p.attn.heads;
  const size_t hk = heads * l->p.attn.key_dim, hv = heads * l->p.attn.value_dim;
  const size_t rows[3] = { batch * lq, batch * lk, batch * lk };
  const size_t cols[3] = { hk, hk, hv };
  const bool half = l->p.attn.held != TT_GEMM_FP32;
  for (int i = 0; i < 3; i++) {
    float *y = tt_run_data (c, half ? l->p.attn.proj_wide : l->p.attn.proj[i]);
    mha_project (c, tt_run_data (c, l->in[i]), mha_weight (l, i, false),
        mha_weight (l, i, true), rows[i], l->in_dims[i].w, cols[i], y);
    if (l->p.attn.lora_rank)
      mha_lora_forward (c, l, i, tt_run_data (c, l->in[i]), rows[i],
          l->in_dims[i].w, cols[i], y);
    if (half)
      mha_narrow (c, l, y, l->p.attn.proj[i], rows[i] / batch, cols[i]);
  }
  tt_attention a = mha_setup (c, l);
  if (l->p.attn.drop >= 0 && c->training) {
    /* a rerun writes its own instance of the scratch (plan/remat.c):
     * the same mask, drawn again from the generator as it was */
    uint8_t *mask = tt_run_bytes (c, l->p.attn.drop);
    if (!c->recompute)
      l->p.attn.drop_rng = *c->rng;
    tt_rng rng = l->p.attn.drop_rng;
    tt_rng_mask_bytes (&rng, mask, batch * heads * lq * lk, l->p.attn.dropout);
    if (!c->recompute)
      *c->rng = rng;
    a.drop = mask;
  }
  tt_attention_forward (&a);
  if (l->p.attn.ret_weights)
    tt_attention_weights (&a, l->p.attn.ret_weights == 2,
        l->p.attn.avg_weights, tt_run_data (c, l->out[1]));
  mha_project (c, a.o, mha_weight (l, 3, false), mha_weight (l, 3, true),
      batch * lq, hv, l->p.attn.out_dim, tt_run_data (c, l->out[0]));
  if (l->p.attn.lora_rank)
    mha_lora_forward (c, l, 3, a.o, batch * lq, hv, l->p.attn.out_dim,
        tt_run_data (c, l->out[0]));
  if (l->p.attn.heads_wide >= 0)
    mha_narrow (c, l, a.o, l->p.attn.heads_out, lq, hv);
  if (l->p.attn.probs_wide >= 0)
    mha_narrow (c, l, a.probs, l->p.attn.probs, heads * lq, lk);
}

/* The attention's backward: the derivatives of the heads' output, of the
 * mask and of the three projections */
static void
mha_backward_common (const tt_run_ctx * c, tt_layer * l)
{
  const size_t rows = (size_t) c->batch * l->p.attn.lq;
  const size_t hv = (size_t) l->p.attn.heads * l->p.attn.value_dim;
  const int out = (int) l->p.attn.out_dim;
  float *dheads = tt_run_data (c, l->p.attn.dheads >= 0 ? l->p.attn.dheads :
      l->p.attn.heads_out);
  tt_run_gemm_split (c, c->threads, false, true, (int) rows, (int) hv, out,
      1.0f, tt_run_data (c, l->out_deriv[0]), out, tt_run_data (c,
          mha_weight (l, 3, false)->value), out, 0.0f, dheads, (int) hv);
  if (l->p.attn.lora_rank) {
    /* the output adapters' dh: made with their gradients, or here */
    if (!mha_runs_gradient (l))
      mha_lora_dh (c, l, 3, tt_run_data (c, l->out_deriv[0]), rows,
          (size_t) out);
    mha_lora_input (c, l, 3, rows, hv, dheads);
  }
  tt_attention a = mha_setup (c, l);
  a.o = NULL;
  if (l->p.attn.probs_wide >= 0) {
    a.probs = NULL;
    a.probs_half = tt_run_half (c, l->p.attn.probs);
  }
  if (l->p.attn.drop >= 0 && c->training)
    a.drop = tt_run_bytes (c, l->p.attn.drop);
  if (l->p.attn.ret_weights) {
    a.dweights = tt_run_data (c, l->out_deriv[1]);
    a.weights_after = l->p.attn.ret_weights == 2;
    a.weights_mean = l->p.attn.avg_weights;
  }
  tt_attention_backward (&a, dheads, tt_run_data (c, l->p.attn.dproj[0]),
      tt_run_data (c, l->p.attn.dproj[1]),
      tt_run_data (c, l->p.attn.dproj[2]),
      l->p.attn.has_mask ? tt_run_data (c, l->in_deriv[3]) : NULL,
      tt_run_data (c, l->p.attn.dscores));
}

/* dW = x^T dy, db = the column sums of dy: rows x k by rows x n; x
 * fp32, or held at half width in format held */
static void
mha_weight_grads (const tt_run_ctx * c, tt_gemm_inputs held,
    tt_gemm_operand x, const float *dy, const tt_weight * w,
    const tt_weight * b, size_t rows, size_t k, size_t n)
{
  /* frozen (lora_rank): none */
  if (w->grad >= 0 && x.half)
    tt_gemm_as_mixed (held, c->threads, true, false, (int) k, (int) n,
        (int) rows, 1.0f, x, tt_gemm_fp32_operand (dy, (int) n), 0.0f,
        tt_run_data (c, w->grad), (int) n);
  else if (w->grad >= 0)
    tt_run_gemm_split (c, c->threads, true, false, (int) k, (int) n, (int) rows,
        1.0f, x.p, (int) k, dy, (int) n, 0.0f, tt_run_data (c, w->grad),
        (int) n);
  if (b && b->grad >= 0)
    tt_column_sums (dy, rows, n, 0, n, tt_run_data (c, b->grad));
}

static void
mha_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  if (!mha_runs_gradient (l))
    return;
  const size_t batch = c->batch, lq = l->p.attn.lq, lk = l->p.attn.lk;
  const size_t heads = l->p.attn.heads;
  const size_t hk = heads * l->p.attn.key_dim, hv = heads * l->p.attn.value_dim;
  const size_t rows[3] = { batch * lq, batch * lk, batch * lk };
  const size_t cols[3] = { hk, hk, hv };
  /* the output projection's first: the attention's backward writes its
   * derivative over the heads' output */
  const tt_gemm_operand heads_x = l->p.attn.heads_wide >= 0 ?
      tt_gemm_half_operand (tt_run_half (c, l->p.attn.heads_out), (int) hv) :
      tt_gemm_fp32_operand (tt_run_data (c, l->p.attn.heads_out), (int) hv);
  mha_weight_grads (c, l->p.attn.held, heads_x,
      tt_run_data (c, l->out_deriv[0]), mha_weight (l, 3, false),
      mha_weight (l, 3, true), batch * lq, hv, l->p.attn.out_dim);
  if (l->p.attn.lora_rank)
    mha_lora_grads (c, l, 3, tt_run_data (c, l->p.attn.heads_out),
        tt_run_data (c, l->out_deriv[0]), batch * lq, hv, l->p.attn.out_dim);
  mha_backward_common (c, l);
  for (int i = 0; i < 3; i++) {
    mha_weight_grads (c, l->p.attn.held,
        tt_gemm_fp32_operand (tt_run_data (c, l->in[i]),
            (int) l->in_dims[i].w), tt_run_data (c, l->p.attn.dproj[i]),
        mha_weight (l, i, false),
        mha_weight (l, i, true), rows[i], l->in_dims[i].w, cols[i]);
    if (l->p.attn.lora_rank)
      mha_lora_grads (c, l, i, tt_run_data (c, l->in[i]),
          tt_run_data (c, l->p.attn.dproj[i]), rows[i], l->in_dims[i].w,
          cols[i]);
  }
}

static void
mha_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  if (!mha_runs_gradient (l))
    mha_backward_common (c, l);
  const size_t batch = c->batch, lq = l->p.attn.lq, lk = l->p.attn.lk;
  const size_t heads = l->p.attn.heads;
  const size_t hk = heads * l->p.attn.key_dim, hv = heads * l->p.attn.value_dim;
  const size_t rows[3] = { batch * lq, batch * lk, batch * lk };
  const size_t cols[3] = { hk, hk, hv };
  for (int i = 0; i < 3; i++) {
    float *dx = tt_run_data (c, l->in_deriv[i]);
    if (!dx)
      continue;
    const int k = (int) l->in_dims[i].w;
    tt_run_gemm_split (c, c->threads, false, true, (int) rows[i], k,
        (int) cols[i], 1.0f, tt_run_data (c, l->p.attn.dproj[i]), (int) cols[i],
        tt_run_data (c, mha_weight (l, i, false)->value), (int) cols[i], 0.0f,
        dx, k);
    if (!l->p.attn.lora_rank)
      continue;
    if (!mha_runs_gradient (l))
      mha_lora_dh (c, l, i, tt_run_data (c, l->p.attn.dproj[i]), rows[i],
          cols[i]);
    mha_lora_input (c, l, i, rows[i], (size_t) k, dx);
  }
}

/* the query and output projections once per query position, the key
 * and value ones once per key position; per head, the scores and their
 * weighted sum of the values */
static void
mha_multiply_adds (const tt_layer * l, uint64_t * weighted, uint64_t * between)
{
  *weighted = 0;
  for (uint32_t i = 0; i < l->n_weights; i++) {
    const char *name = l->weights[i].suffix;
    if (strstr (name, "_bias"))
      continue;
    const bool per_key = !strncmp (name, "key_", 4) ||
        !strncmp (name, "value_", 6);
    *weighted += (uint64_t) l->weights[i].count *
        (per_key ? l->p.attn.lk : l->p.attn.lq);
  }
  *between = (uint64_t) l->p.attn.heads * l->p.attn.lq * l->p.attn.lk *
      (l->p.attn.key_dim + l->p.attn.value_dim);
}

/* feature cache */
static const char *
mha_varies (const tt_layer * l)
{
  return l->p.attn.dropout > 0 ?
      "its dropout_rate draws random masks in training" : NULL;
}

const tt_layer_ops tt_multi_head_attention_layer_ops = {
  .type = "multi_head_attention",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .keys = mha_keys,
  .has_weights = true,
  .parse = mha_parse,
  .infer = mha_infer,
  .declare = mha_declare,
  .forward = mha_forward,
  .calc_gradient = mha_calc_gradient,
  .calc_derivative = mha_calc_derivative,
  .multiply_adds = mha_multiply_adds,
  /* the output, and the attention weights with return_attention_weight
   * (parse lowers n_outputs to 1 without) */
  .outputs = 2,
  .training_varies = mha_varies,
  .lora_refuses = tt_mha_lora_refuses,
  .lora_pairs = tt_mha_lora_pairs,
};
