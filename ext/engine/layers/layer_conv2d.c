/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conv2d: filters [F][C][kh][kw] (nntrainer's layout), batched im2col +
 * one GEMM per pass (conv2d.c); the column buffer is a scratch tensor of
 * the pool, kept from forward to backward, at half width when the model's
 * activations are bf16 or fp16 (the GEMMs round the columns to that).
 *
 * conv1d is nntrainer's: a conv2d with a 1 x kernel_size window over an
 * input of height 1 (channel:1:width), filters [F][C][1][k] (PyTorch's
 * Conv1d weight [F][C][k], byte for byte). Only its keys differ: single
 * integers, and padding as nntrainer's Padding1D (valid, same, causal, P,
 * LEFT,RIGHT), which pads the width only.
 *
 * groups (PyTorch's): filters and channels split into groups, filter
 * [F][C/groups][kh][kw], each filter reading its group's channels only.
 * depthwiseconv2d is groups = channels, filters a multiple of them (a
 * depth multiplier); nntrainer declares that type (depthwise_conv2d_layer.h,
 * not registered) with conv2d's keys. groups > 1 runs the direct grouped
 * kernel (conv_grouped.c): no scratch, backward reads the input.
 */
#include "tt_layer.h"
#include "tt_test_hooks.h"

/* tt_conv2d_force_fp32_scratch */
static bool conv_fp32_scratch_forced;

void
tt_conv2d_force_fp32_scratch (bool on)
{
  conv_fp32_scratch_forced = on;
}

static const char *const conv_keys[] = {
  "filters", "kernel_size", "stride", "padding", "dilation", "groups", NULL
};

/* conv2d's: conv1d's and LoRA's (conv_lora.c) */
static const char *const conv2d_keys[] = {
  "filters", "kernel_size", "stride", "padding", "dilation", "groups",
  "lora_rank", "lora_alpha", NULL
};

static const char *const depthwise_keys[] = {
  "filters", "kernel_size", "stride", "padding", "dilation", NULL
};

/* filters and kernel_size are required; kernel_hint shows a value */
static tt_status
conv_require_keys (const tt_section * s, const char *kernel_hint,
    tt_error * err)
{
  if (!tt_section_has (s, "filters"))
    return tt_section_error (s, "filters", err, TT_ERR_INVALID,
        "missing key (the number of output channels)");
  if (!tt_section_has (s, "kernel_size"))
    return tt_section_error (s, "kernel_size", err, TT_ERR_INVALID,
        "missing key (%s)", kernel_hint);
  return TT_OK;
}

static tt_status
conv_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st;
  l->p.conv.stride[0] = l->p.conv.stride[1] = 1;
  l->p.conv.dilation[0] = l->p.conv.dilation[1] = 1;
  if ((st = tt_section_uint (s, "filters", 1, 1u << 16, &l->p.conv.filters,
              err)) ||
      (st = tt_window_pair (s, "kernel_size", 1, l->p.conv.kernel, err)) ||
      (st = tt_window_pair (s, "stride", 1, l->p.conv.stride, err)) ||
      (st = tt_window_pair (s, "dilation", 1, l->p.conv.dilation, err)) ||
      (st = tt_window_padding (s, &l->p.conv.padding_mode, l->p.conv.pad, err)))
    return st;
  l->p.conv.groups = 1;
  if ((st = tt_section_uint (s, "groups", 1, 1u << 16, &l->p.conv.groups, err)))
    return st;
  return conv_require_keys (s, "e.g. 3,3", err);
}

extern const tt_layer_ops tt_conv2d_lora_layer_ops;

/* conv2d: conv's keys and LoRA's; with a rank, the adapters' passes
 * (conv_lora.c) after the base's */
static tt_status
conv2d_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st = conv_parse (l, s, err);
  if (st || (st = tt_conv_lora_parse (l, s, err)))
    return st;
  if (l->p.conv.lora_rank)
    l->ops = &tt_conv2d_lora_layer_ops;
  return TT_OK;
}

/* conv2d's keys but groups, which is the input channels (infer); filters
 * defaults to them too (a depth multiplier of 1) */
static tt_status
depthwise_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st;
  l->p.conv.stride[0] = l->p.conv.stride[1] = 1;
  l->p.conv.dilation[0] = l->p.conv.dilation[1] = 1;
  l->p.conv.filters = 0;
  l->p.conv.groups = 0;
  if ((st = tt_section_uint (s, "filters", 1, 1u << 16, &l->p.conv.filters,
              err)) ||
      (st = tt_window_pair (s, "kernel_size", 1, l->p.conv.kernel, err)) ||
      (st = tt_window_pair (s, "stride", 1, l->p.conv.stride, err)) ||
      (st = tt_window_pair (s, "dilation", 1, l->p.conv.dilation, err)) ||
      (st = tt_window_padding (s, &l->p.conv.padding_mode, l->p.conv.pad, err)))
    return st;
  if (!tt_section_has (s, "kernel_size"))
    return tt_section_error (s, "kernel_size", err, TT_ERR_INVALID,
        "missing key (e.g. 3,3)");
  return TT_OK;
}

/* kernel_size, stride and dilation are one integer each, on the width;
 * padding is nntrainer's Padding1D (the width only: "0,2" pads 0 on the
 * left and 2 on the right, as nntrainer's conv1d hands "0,0,0,2" to its
 * conv2d). */
static tt_status
conv1d_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st;
  uint32_t kernel = 0, stride = 1, dilation = 1;
  l->p.conv.groups = 1;
  if ((st = tt_section_uint (s, "filters", 1, 1u << 16, &l->p.conv.filters,
              err)) ||
      (st = tt_section_uint (s, "kernel_size", 1, 1u << 16, &kernel, err)) ||
      (st = tt_section_uint (s, "stride", 1, 1u << 16, &stride, err)) ||
      (st = tt_section_uint (s, "dilation", 1, 1u << 16, &dilation, err)) ||
      (st = tt_section_uint (s, "groups", 1, 1u << 16, &l->p.conv.groups,
              err)) ||
      (st = tt_window_padding1d (s, &l->p.conv.padding_mode, l->p.conv.pad,
              err)))
    return st;
  if ((st = conv_require_keys (s, "the window's width, e.g. 3", err)))
    return st;
  l->p.conv.kernel[0] = l->p.conv.stride[0] = l->p.conv.dilation[0] = 1;
  l->p.conv.kernel[1] = kernel;
  l->p.conv.stride[1] = stride;
  l->p.conv.dilation[1] = dilation;
  return TT_OK;
}

static tt_status
conv_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  tt_window_geom *g = &l->p.conv.geom;
  tt_status st = tt_window_setup (c, l, g, l->p.conv.kernel,
      l->p.conv.stride, l->p.conv.dilation, l->p.conv.padding_mode,
      l->p.conv.pad, err);
  if (st)
    return st;
  /* the algorithm and its scratch follow the planned GEMMs (conv2d_algo.c) */
  g->plan_bf16 = tt_init_gemm_inputs (c) == TT_PRECISION_BF16;
  /* the im2col path's operands at the GEMMs' width (conv2d.c) */
  g->stored_as = conv_fp32_scratch_forced ? TT_GEMM_FP32 :
      tt_gemm_inputs_of (tt_init_gemm_inputs (c));
  if (l->p.conv.groups == 0) {
    /* depthwiseconv2d: a group per channel, filters a multiple of them */
    l->p.conv.groups = (uint32_t) g->channels;
    if (l->p.conv.filters == 0)
      l->p.conv.filters = (uint32_t) g->channels;
    if (l->p.conv.filters % (uint32_t) g->channels)
      return tt_fail (err, TT_ERR_INVALID, "%s: [%s] filters: %u is not a "
          "multiple of the input's %d channels (depthwiseconv2d: filters = "
          "channels x depth multiplier)", c->path, l->section,
          l->p.conv.filters, g->channels);
  }
  const uint32_t f = l->p.conv.filters, groups = l->p.conv.groups;
  if (f % groups || (uint32_t) g->channels % groups)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] groups: filters (%u) and "
        "the input's channels (%d) must both divide by groups (%u)",
        c->path, l->section, f, g->channels, groups);
  const size_t ckk = (size_t) g->channels / groups * g->kernel_h * g->kernel_w;
  if (ckk * f > (1u << 30))
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s]: the filter is too large",
        c->path, l->section);
  l->out_dims[0] = (tt_dims) {
  f, (uint32_t) g->out_h, (uint32_t) g->out_w};
  const uint32_t kk = (uint32_t) (g->kernel_h * g->kernel_w);
  tt_weight *w = tt_layer_add_weight (l, "filter", ckk * f, l->weight_init,
      (uint32_t) ckk, f * kk, true);
  w->decay = l->weight_decay;
  w->l2 = l->l2_constant;
  if (!l->disable_bias) {
    tt_weight *b = tt_layer_add_weight (l, "bias", f, l->bias_init,
        (uint32_t) ckk, f * kk, true);
    b->decay = l->bias_decay;
  }
  return TT_OK;
}

static tt_status
conv1d_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  if (l->in_dims[0].h != 1)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s]: conv1d needs an input "
        "of height 1 (channel:1:width), got %u:%u:%u", c->path, l->section,
        l->in_dims[0].c, l->in_dims[0].h, l->in_dims[0].w);
  return conv_infer (c, l, err);
}

/* Scratch tensors, each of one pass: forward's columns of a chunk of
 * samples (`im2col`) and GEMM result (`gemm_out`), the weight gradient's
 * columns of a chunk, made again from the input (`im2col_back`), the
 * regrouped output derivative (`dy_grouped`, calcGradient ..
 * calcDerivative) and the column gradient (`im2col_grad`, calcDerivative).
 * Their sizes depend on the algorithm (conv2d.c): Winograd's transformed
 * input is in its gemm_out and dy_grouped, the direct convolution needs
 * only the input derivative's column gradient and regrouped derivative.
 * Nothing lives from forward into backward but the input, which the
 * weight gradient reads (conv_backward_reads): kept columns were kh * kw /
 * stride^2 times it. With half-width operands (tt_conv2d_batch_half) the
 * columns and the regrouped derivative take 2 bytes an element. */
static void
conv_declare (tt_init_ctx * c, tt_layer * l)
{
  const tt_window_geom *g = &l->p.conv.geom;
  if (l->p.conv.groups > 1) {
    /* the direct grouped kernel reads the input, needs no scratch */
    l->p.conv.col = l->p.conv.gemm_out = l->p.conv.dy_grouped = -1;
    l->p.conv.col_grad = l->p.conv.col_back = -1;
    return;
  }
  const int batch = (int) c->batch_size, f = (int) l->p.conv.filters;
  const bool grad = l->weights[0].grad >= 0, deriv = l->needs_derivative;
  const size_t ncol = tt_conv2d_batch_col_floats (g, batch);
  const size_t ncol_back = tt_conv2d_batch_col_back_floats (g, batch, grad);
  const size_t nout = tt_conv2d_batch_out_floats (g, f, batch);
  const size_t ngrouped = tt_conv2d_batch_grouped_floats (g, f, batch, grad,
      deriv);
  const bool half = tt_conv2d_batch_half (g, batch);
  const size_t ncol_grad = tt_conv2d_batch_col_grad_floats (g, batch, deriv);
  l->p.conv.col = -1;
  l->p.conv.col_back = -1;
  l->p.conv.gemm_out = -1;
  l->p.conv.dy_grouped = -1;
  l->p.conv.col_grad = -1;
  if (ncol) {
    l->p.conv.col = half ? tt_init_scratch_half (c, "im2col", ncol) :
        tt_init_scratch (c, "im2col", ncol);
    tt_init_use (c, l->p.conv.col, TT_PHASE_FORWARD);
  }
  if (ncol_back) {
    l->p.conv.col_back = tt_init_scratch (c, "im2col_back", ncol_back);
    tt_init_use (c, l->p.conv.col_back, TT_PHASE_GRADIENT);
  }
  if (ncol_grad) {
    l->p.conv.col_grad = tt_init_scratch (c, "im2col_grad", ncol_grad);
    tt_init_use (c, l->p.conv.col_grad, TT_PHASE_DERIVATIVE);
  }
  if (nout) {
    l->p.conv.gemm_out = tt_init_scratch (c, "gemm_out", nout);
    tt_init_use (c, l->p.conv.gemm_out, TT_PHASE_FORWARD);
  }
  if (ngrouped) {
    l->p.conv.dy_grouped = half ?
        tt_init_scratch_half (c, "dy_grouped", ngrouped) :
        tt_init_scratch (c, "dy_grouped", ngrouped);
    tt_init_use (c, l->p.conv.dy_grouped, grad ? TT_PHASE_GRADIENT :
        TT_PHASE_DERIVATIVE);
    if (deriv)
      tt_init_use (c, l->p.conv.dy_grouped, TT_PHASE_DERIVATIVE);
  }
  /* both passes in calcGradient: the input derivative is written there */
  if (grad && deriv && tt_conv2d_batch_fuses_backward (g, batch))
    tt_init_use (c, l->in_deriv[0], TT_PHASE_GRADIENT);
}

/* the layer's geometry for the batched passes: their im2col GEMMs in
 * the run's format (docs/precision.md) */
static tt_window_geom
conv_run_geom (const tt_run_ctx * c, const tt_layer * l)
{
  tt_window_geom g = l->p.conv.geom;
  g.gemm_inputs = tt_run_gemm_inputs (c);
  return g;
}

static void
conv_forward (const tt_run_ctx * c, tt_layer * l)
{
  if (l->p.conv.groups > 1) {
    tt_conv_grouped_forward (c->threads, &l->p.conv.geom,
        (int) l->p.conv.filters, (int) l->p.conv.groups, (int) c->batch,
        tt_run_data (c, l->in[0]), tt_run_data (c, l->weights[0].value),
        l->n_weights > 1 ? tt_run_data (c, l->weights[1].value) : NULL,
        tt_run_data (c, l->out[0]));
    return;
  }
  const tt_window_geom g = conv_run_geom (c, l);
  tt_conv2d_batch_forward (c->threads, &g, (int) l->p.conv.filters,
      (int) c->batch, (int) c->batch_size, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->weights[0].value),
      l->n_weights > 1 ? tt_run_data (c, l->weights[1].value) : NULL,
      tt_run_data (c, l->out[0]), tt_run_data (c, l->p.conv.col),
      tt_run_data (c, l->p.conv.gemm_out));
}

static void
conv_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  /* a frozen filter, a bias that trains: the bias's gradient alone */
  if (l->weights[0].grad < 0) {
    if (l->n_weights > 1 && l->weights[1].grad >= 0)
      tt_plane_sums (c->threads, tt_run_data (c, l->out_deriv[0]),
          c->batch, l->p.conv.filters, (size_t) l->out_dims[0].h *
          l->out_dims[0].w, tt_run_data (c, l->weights[1].grad));
    return;
  }
  if (l->p.conv.groups > 1) {
    tt_conv_grouped_backward_weight (c->threads, &l->p.conv.geom,
        (int) l->p.conv.filters, (int) l->p.conv.groups, (int) c->batch,
        tt_run_data (c, l->in[0]), tt_run_data (c, l->out_deriv[0]),
        tt_run_data (c, l->weights[0].grad), l->n_weights > 1 ?
        tt_run_data (c, l->weights[1].grad) : NULL);
    return;
  }
  if (l->needs_derivative
      && tt_conv2d_batch_fuses_backward (&l->p.conv.geom,
          (int) c->batch_size)) {
    const tt_window_geom g = conv_run_geom (c, l);
    tt_conv2d_batch_backward (c->threads, &g,
        (int) l->p.conv.filters, (int) c->batch, (int) c->batch_size,
        tt_run_data (c, l->in[0]), tt_run_data (c, l->weights[0].value),
        tt_run_data (c, l->out_deriv[0]), tt_run_data (c, l->weights[0].grad),
        l->n_weights > 1 ? tt_run_data (c, l->weights[1].grad) : NULL,
        tt_run_data (c, l->in_deriv[0]), tt_run_data (c, l->p.conv.dy_grouped));
    return;
  }
  const tt_window_geom g = conv_run_geom (c, l);
  tt_conv2d_batch_backward_weight (c->threads, &g,
      (int) l->p.conv.filters, (int) c->batch, (int) c->batch_size,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->out_deriv[0]),
      tt_run_data (c, l->weights[0].grad),
      l->n_weights > 1 ? tt_run_data (c, l->weights[1].grad) : NULL,
      tt_run_data (c, l->p.conv.col_back),
      tt_run_data (c, l->p.conv.dy_grouped));
}

static void
conv_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  if (l->p.conv.groups > 1) {
    tt_conv_grouped_backward_input (c->threads, &l->p.conv.geom,
        (int) l->p.conv.filters, (int) l->p.conv.groups, (int) c->batch,
        tt_run_data (c, l->weights[0].value), tt_run_data (c,
            l->out_deriv[0]), tt_run_data (c, l->in_deriv[0]));
    return;
  }
  /* calcGradient ran both passes, or regrouped the output derivative */
  if (l->weights[0].grad >= 0
      && tt_conv2d_batch_fuses_backward (&l->p.conv.geom, (int) c->batch_size))
    return;
  const tt_window_geom g = conv_run_geom (c, l);
  tt_conv2d_batch_backward_input (c->threads, &g,
      (int) l->p.conv.filters, (int) c->batch, (int) c->batch_size,
      tt_run_data (c, l->weights[0].value), tt_run_data (c, l->out_deriv[0]),
      tt_run_data (c, l->in_deriv[0]), tt_run_data (c, l->p.conv.col_grad),
      tt_run_data (c, l->p.conv.dy_grouped), l->weights[0].grad >= 0);
}

static size_t
conv_worker_floats (const tt_layer * l, uint32_t batch_size)
{
  if (l->p.conv.groups > 1)
    return 0;
  return tt_conv2d_batch_worker_floats (&l->p.conv.geom,
      (int) l->p.conv.filters, (int) batch_size, l->weights[0].grad >= 0,
      l->needs_derivative);
}

/* the weight gradient reads the input (no columns kept: conv_declare) */
static unsigned
conv_backward_reads (const tt_layer * l)
{
  return l->weights[0].trainable ? TT_READS_INPUT : 0;
}

/* the filter (its group's channels) at every output position */
static void
conv_multiply_adds (const tt_layer * l, uint64_t * weighted, uint64_t * between)
{
  *weighted = (uint64_t) l->weights[0].count * l->out_dims[0].h *
      l->out_dims[0].w;
  *between = 0;
}

const tt_layer_ops tt_conv2d_layer_ops = {
  .type = "conv2d",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = conv2d_keys,
  .has_weights = true,
  .parse = conv2d_parse,
  .infer = conv_infer,
  .declare = conv_declare,
  .forward = conv_forward,
  .calc_gradient = conv_calc_gradient,
  .calc_derivative = conv_calc_derivative,
  .worker_floats = conv_worker_floats,
  .backward_reads = conv_backward_reads,
  .multiply_adds = conv_multiply_adds,
  .lora_refuses = tt_conv_lora_refuses,
};

const tt_layer_ops tt_conv1d_layer_ops = {
  .type = "conv1d",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = conv_keys,
  .has_weights = true,
  .parse = conv1d_parse,
  .infer = conv1d_infer,
  .declare = conv_declare,
  .forward = conv_forward,
  .calc_gradient = conv_calc_gradient,
  .calc_derivative = conv_calc_derivative,
  .worker_floats = conv_worker_floats,
  .backward_reads = conv_backward_reads,
  .multiply_adds = conv_multiply_adds,
};

const tt_layer_ops tt_depthwiseconv2d_layer_ops = {
  .type = "depthwiseconv2d",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = depthwise_keys,
  .has_weights = true,
  .parse = depthwise_parse,
  .infer = conv_infer,
  .declare = conv_declare,
  .forward = conv_forward,
  .calc_gradient = conv_calc_gradient,
  .calc_derivative = conv_calc_derivative,
  .worker_floats = conv_worker_floats,
  .backward_reads = conv_backward_reads,
  .multiply_adds = conv_multiply_adds,
};

/* conv2d with lora_rank (conv2d_parse): the base's passes (its filter
 * and bias frozen), then the adapters' (conv_lora.c) */
static tt_status
conv_lora_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  tt_status st = conv_infer (c, l, err);
  return st ? st : tt_conv_lora_weights (c, l, err);
}

static void
conv_lora_declare (tt_init_ctx * c, tt_layer * l)
{
  conv_declare (c, l);
  tt_conv_lora_declare (c, l);
}

static void
conv_lora_forward (const tt_run_ctx * c, tt_layer * l)
{
  conv_forward (c, l);
  tt_conv_lora_forward (c, l);
}

static void
conv_lora_derivative (const tt_run_ctx * c, tt_layer * l)
{
  conv_calc_derivative (c, l);
  tt_conv_lora_derivative (c, l);
}

/* dA reads the input, as the filter's own gradient may */
static unsigned
conv_lora_backward_reads (const tt_layer * l)
{
  return l->weights[l->n_weights - 2].trainable ? TT_READS_INPUT :
      conv_backward_reads (l);
}

/* the filter and the adapters at every pixel */
static void
conv_lora_multiply_adds (const tt_layer * l, uint64_t * weighted,
    uint64_t * between)
{
  uint64_t n = 0;
  for (uint32_t i = 0; i < l->n_weights; i++)
    if (i == 0 || i + 2 >= l->n_weights)
      n += l->weights[i].count;
  *weighted = n * l->out_dims[0].h * l->out_dims[0].w;
  *between = 0;
}

const tt_layer_ops tt_conv2d_lora_layer_ops = {
  .type = "conv2d",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = conv2d_keys,
  .has_weights = true,
  .infer = conv_lora_infer,
  .declare = conv_lora_declare,
  .forward = conv_lora_forward,
  .calc_gradient = tt_conv_lora_gradient,
  .calc_derivative = conv_lora_derivative,
  .worker_floats = conv_worker_floats,
  .backward_reads = conv_lora_backward_reads,
  .multiply_adds = conv_lora_multiply_adds,
  .lora_refuses = tt_conv_lora_refuses,
  .lora_pairs = tt_conv_lora_pairs,
};
