/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conv2dtranspose: nntrainer's transposed convolution, PyTorch's
 * nn.ConvTranspose2d with the padding cut from the full output. Filter
 * [filters][channels][kh][kw] (nntrainer's layout: PyTorch's weight
 * [channels][filters][kh][kw] with its first two axes swapped), bias
 * [filters]. Output height (in_h - 1) * stride + (kh - 1) * dilation + 1
 * - pad_top - pad_bottom, width alike; padding valid (none), same (the
 * pads conv2d's same would take on this layer's input) or explicit.
 *
 * groups G (PyTorch's ConvTranspose2d groups, not nntrainer's): filters
 * and channels split into G groups, filter [filters/G][channels][kh][kw]
 * (PyTorch's grouped weight [channels][filters/G][kh][kw] with its first
 * two axes swapped, as above), output channel g * filters/G + f reading
 * only group g's channels.
 *
 * It is conv2d's adjoint (kernels/conv_transpose.c), sample by sample:
 * forward is a GEMM and col2im, the input derivative im2col and a GEMM,
 * the filter gradient im2col and a GEMM added over the batch.
 */
#include "tt_layer.h"

static const char *const convt_keys[] = {
  "filters", "kernel_size", "stride", "padding", "dilation", "groups", NULL
};

static tt_status
convt_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st;
  l->p.convt.stride[0] = l->p.convt.stride[1] = 1;
  l->p.convt.dilation[0] = l->p.convt.dilation[1] = 1;
  l->p.convt.groups = 1;
  if ((st = tt_section_uint (s, "groups", 1, 1u << 16, &l->p.convt.groups, err))
      || (st =
          tt_section_uint (s, "filters", 1, 1u << 16, &l->p.convt.filters, err))
      || (st = tt_window_pair (s, "kernel_size", 1, l->p.convt.kernel, err))
      || (st = tt_window_pair (s, "stride", 1, l->p.convt.stride, err))
      || (st = tt_window_pair (s, "dilation", 1, l->p.convt.dilation, err))
      || (st =
          tt_window_padding (s, &l->p.convt.padding_mode, l->p.convt.pad, err)))
    return st;
  if (!tt_section_has (s, "filters"))
    return tt_section_error (s, "filters", err, TT_ERR_INVALID,
        "missing key (the number of output channels)");
  if (!tt_section_has (s, "kernel_size"))
    return tt_section_error (s, "kernel_size", err, TT_ERR_INVALID,
        "missing key (e.g. 3,3)");
  return TT_OK;
}

/* same: the pads of conv2d's same on an input of n (nntrainer's
 * Padding2D::compute on this layer's input), the odd one at the end */
static void
convt_same (uint32_t n, uint32_t k, uint32_t stride, uint32_t dilation,
    uint32_t * lo, uint32_t * hi)
{
  const int64_t out = ((int64_t) n + stride - 1) / stride;
  const int64_t eff = ((int64_t) k - 1) * dilation + 1;
  int64_t total = (out - 1) * stride + eff - n;
  if (total < 0)
    total = 0;
  *lo = (uint32_t) (total / 2);
  *hi = (uint32_t) (total - total / 2);
}

static tt_status
convt_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims in = l->in_dims[0];
  uint32_t *pad = l->p.convt.pad;
  const uint32_t *k = l->p.convt.kernel, *s = l->p.convt.stride,
      *d = l->p.convt.dilation;
  if (l->p.convt.padding_mode == 0)
    pad[0] = pad[1] = pad[2] = pad[3] = 0;
  else if (l->p.convt.padding_mode == 1) {
    convt_same (in.h, k[0], s[0], d[0], &pad[0], &pad[1]);
    convt_same (in.w, k[1], s[1], d[1], &pad[2], &pad[3]);
  }
  const int64_t full_h = ((int64_t) in.h - 1) * s[0] +
      ((int64_t) k[0] - 1) * d[0] + 1;
  const int64_t full_w = ((int64_t) in.w - 1) * s[1] +
      ((int64_t) k[1] - 1) * d[1] + 1;
  const int64_t out_h = full_h - pad[0] - pad[1];
  const int64_t out_w = full_w - pad[2] - pad[3];
  if (out_h < 1 || out_w < 1)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] padding: %u,%u,%u,%u "
        "leaves nothing of the %lldx%lld output of a %ux%u kernel (stride "
        "%u,%u, dilation %u,%u) on the %u:%u:%u input", c->path, l->section,
        pad[0], pad[1], pad[2], pad[3], (long long) full_h,
        (long long) full_w, k[0], k[1], s[0], s[1], d[0], d[1], in.c, in.h,
        in.w);
  const uint32_t f = l->p.convt.filters, groups = l->p.convt.groups;
  if (f % groups || in.c % groups)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] groups: filters (%u) and "
        "the input's channels (%u) must both divide by groups (%u)",
        c->path, l->section, f, in.c, groups);
  tt_window_geom *g = &l->p.convt.geom;
  *g = (tt_window_geom) {
  .channels = (int) f,.in_h =
        (int) (out_h < (1 << 30) ? out_h : 1 << 30),.in_w =
        (int) (out_w < (1 << 30) ? out_w : 1 << 30),.kernel_h =
        (int) k[0],.kernel_w = (int) k[1],.stride_h = (int) s[0],.stride_w =
        (int) s[1],.pad_top = (int) pad[0],.pad_bottom =
        (int) pad[1],.pad_left = (int) pad[2],.pad_right =
        (int) pad[3],.dilation_h = (int) d[0],.dilation_w = (int) d[1]};
  const uint64_t kk = (uint64_t) k[0] * k[1];
  if (out_h >= (1 << 30) || out_w >= (1 << 30) || tt_window_geom_init (g)
      || (uint32_t) g->out_h != in.h || (uint32_t) g->out_w != in.w
      || (uint64_t) f * in.c * kk > (1u << 30)
      || (uint64_t) in.c * in.h * in.w * f * kk > (1ull << 40))
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] filters, kernel_size: "
        "the %lldx%lld output of %u filters of %ux%u over the %u:%u:%u "
        "input is too large",
        c->path, l->section, (long long) out_h, (long long) out_w, f, k[0],
        k[1], in.c, in.h, in.w);
  l->out_dims[0] = (tt_dims) {
  f, (uint32_t) out_h, (uint32_t) out_w};
  tt_weight *w = tt_layer_add_weight (l, "filter",
      (size_t) f / groups * in.c * kk, l->weight_init,
      (uint32_t) (in.c / groups * kk), (uint32_t) (f * kk), true);
  w->decay = l->weight_decay;
  w->l2 = l->l2_constant;
  if (!l->disable_bias) {
    tt_weight *b = tt_layer_add_weight (l, "bias", f, l->bias_init,
        (uint32_t) (in.c * kk), (uint32_t) (f * kk), true);
    b->decay = l->bias_decay;
  }
  return TT_OK;
}

/* Two scratch tensors, each the permuted filter then one sample's
 * columns (the workers have their own, worker_floats): forward's lives
 * in forward alone, backward's in calcGradient (the filter gradient,
 * transposed) and calcDerivative (the permuted filter). */
static void
convt_declare (tt_init_ctx * c, tt_layer * l)
{
  const tt_window_geom *g = &l->p.convt.geom;
  const size_t hw = (size_t) g->out_h * g->out_w;
  const size_t fkk = (size_t) g->channels * g->kernel_h * g->kernel_w;
  const size_t n = fkk * l->in_dims[0].c + fkk * hw;
  const bool grad = l->weights[0].grad >= 0, deriv = l->needs_derivative;
  l->p.convt.fwd = tt_init_scratch (c, "forward", n);
  tt_init_use (c, l->p.convt.fwd, TT_PHASE_FORWARD);
  l->p.convt.bwd = -1;
  if (!grad && !deriv)
    return;
  l->p.convt.bwd = tt_init_scratch (c, "backward", n);
  if (grad)
    tt_init_use (c, l->p.convt.bwd, TT_PHASE_GRADIENT);
  if (deriv)
    tt_init_use (c, l->p.convt.bwd, TT_PHASE_DERIVATIVE);
}

/* the columns after the permuted filter in a scratch tensor */
static float *
convt_columns (const tt_run_ctx * c, const tt_layer * l, int id)
{
  const tt_window_geom *g = &l->p.convt.geom;
  return tt_run_data (c, id) + (size_t) g->channels * g->kernel_h *
      g->kernel_w * l->in_dims[0].c;
}

static void
convt_forward (const tt_run_ctx * c, tt_layer * l)
{
  const tt_window_geom *g = &l->p.convt.geom;
  const int in_ch = (int) l->in_dims[0].c;
  float *wc = tt_run_data (c, l->p.convt.fwd);
  const int groups = (int) l->p.convt.groups;
  tt_conv_transpose_permute (tt_run_data (c, l->weights[0].value),
      g->channels / groups, in_ch, g->kernel_h * g->kernel_w, wc);
  tt_conv_transpose_forward (c->threads, g, in_ch, groups, (int) c->batch,
      tt_run_data (c, l->in[0]), wc, l->n_weights > 1 ? tt_run_data (c,
          l->weights[1].value) : NULL, tt_run_data (c, l->out[0]),
      convt_columns (c, l, l->p.convt.fwd));
}

static void
convt_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  /* a frozen filter, a bias that trains: the bias's gradient alone */
  if (l->weights[0].grad < 0) {
    if (l->n_weights > 1 && l->weights[1].grad >= 0)
      tt_plane_sums (c->threads, tt_run_data (c, l->out_deriv[0]),
          c->batch, l->out_dims[0].c, (size_t) l->out_dims[0].h *
          l->out_dims[0].w, tt_run_data (c, l->weights[1].grad));
    return;
  }
  tt_conv_transpose_backward_weight (c->threads, &l->p.convt.geom,
      (int) l->in_dims[0].c, (int) l->p.convt.groups, (int) c->batch,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->out_deriv[0]),
      convt_columns (c, l, l->p.convt.bwd), tt_run_data (c, l->p.convt.bwd),
      tt_run_data (c, l->weights[0].grad), l->n_weights > 1 ? tt_run_data (c,
          l->weights[1].grad) : NULL);
}

static void
convt_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_window_geom *g = &l->p.convt.geom;
  const int in_ch = (int) l->in_dims[0].c;
  float *wc = tt_run_data (c, l->p.convt.bwd);
  const int groups = (int) l->p.convt.groups;
  tt_conv_transpose_permute (tt_run_data (c, l->weights[0].value),
      g->channels / groups, in_ch, g->kernel_h * g->kernel_w, wc);
  tt_conv_transpose_backward_input (c->threads, g, in_ch, groups,
      (int) c->batch, wc,
      tt_run_data (c, l->out_deriv[0]), convt_columns (c, l, l->p.convt.bwd),
      tt_run_data (c, l->in_deriv[0]));
}

static size_t
convt_worker_floats (const tt_layer * l, uint32_t batch_size)
{
  (void) batch_size;
  return tt_conv_transpose_worker_floats (&l->p.convt.geom,
      (int) l->in_dims[0].c, l->weights[0].grad >= 0);
}

/* the filter gradient reads the input (a frozen filter's backward does
 * not) */
static unsigned
convt_backward_reads (const tt_layer * l)
{
  return l->weights[0].trainable ? TT_READS_INPUT : 0;
}

/* every input position spreads the whole filter */
static void
conv_transpose_multiply_adds (const tt_layer * l, uint64_t * weighted,
    uint64_t * between)
{
  *weighted = (uint64_t) l->weights[0].count * l->in_dims[0].h *
      l->in_dims[0].w;
  *between = 0;
}

const tt_layer_ops tt_conv2d_transpose_layer_ops = {
  .type = "conv2dtranspose",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = convt_keys,
  .has_weights = true,
  .parse = convt_parse,
  .infer = convt_infer,
  .declare = convt_declare,
  .forward = convt_forward,
  .calc_gradient = convt_calc_gradient,
  .calc_derivative = convt_calc_derivative,
  .worker_floats = convt_worker_floats,
  .backward_reads = convt_backward_reads,
  .multiply_adds = conv_transpose_multiply_adds,
};
