/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pooling2d: max, average, global_max, global_average. Max pooling keeps
 * the winner's tap in its window per output, in a scratch tensor for
 * backward, in as few bytes as the window's taps need (one for up to
 * 256: a 2x2 pool's indices are a quarter of int32's).
 * ceil_mode and count_include_pad are PyTorch's; average pooling divides
 * by the cells inside the input unless count_include_pad (nntrainer's
 * rule is the default).
 */
#include "tt_layer.h"

enum
{ POOL_MAX, POOL_AVERAGE, POOL_GLOBAL_MAX, POOL_GLOBAL_AVERAGE };

static const char *const pool_keys[] = {
  "pooling", "pool_size", "stride", "padding", "ceil_mode",
  "count_include_pad", NULL
};

static tt_status
pool_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  static const char *const kinds[] = {
    "max", "average", "global_max", "global_average", NULL
  };
  tt_status st;
  l->p.pool.stride[0] = l->p.pool.stride[1] = 1;
  if ((st = tt_section_enum (s, "pooling", kinds, &l->p.pool.kind, err)) ||
      (st = tt_window_pair (s, "pool_size", 1, l->p.pool.size, err)) ||
      (st = tt_window_pair (s, "stride", 1, l->p.pool.stride, err)) ||
      (st = tt_window_padding (s, &l->p.pool.padding_mode, l->p.pool.pad, err))
      || (st = tt_section_bool (s, "ceil_mode", &l->p.pool.ceil_mode, err)) ||
      (st = tt_section_bool (s, "count_include_pad",
              &l->p.pool.count_include_pad, err)))
    return st;
  if (!tt_section_has (s, "pooling"))
    return tt_section_error (s, "pooling", err, TT_ERR_INVALID,
        "missing key (max, average, global_max or global_average)");
  bool global = l->p.pool.kind >= POOL_GLOBAL_MAX;
  if (!(global ||tt_section_has (s, "pool_size")))
    return tt_section_error (s, "pool_size", err, TT_ERR_INVALID,
        "missing key (e.g. 2,2)");
  if (global &&(tt_section_has (s, "pool_size") ||
          tt_section_has (s, "stride") || tt_section_has (s, "padding")))
    return tt_section_error (s, "pooling", err, TT_ERR_INVALID,
        "global pooling takes no pool_size, stride or padding");
  if (global &&tt_section_has (s, "ceil_mode"))
    return tt_section_error (s, "ceil_mode", err, TT_ERR_INVALID,
        "only for pooling = max or average (global pooling has one window)");
  if (l->p.pool.kind != POOL_AVERAGE && tt_section_has (s, "count_include_pad"))
    return tt_section_error (s, "count_include_pad", err, TT_ERR_INVALID,
        "only for pooling = average (true or false)");
  return TT_OK;
}

/* PyTorch's ceil_mode for one axis: the output count rounded up, less
 * one when the last window would start past the input and its leading
 * padding. */
static int
pool_ceil_axis (int in, int k, int stride, int dil, int pad_lo, int pad_hi)
{
  const int64_t span = (int64_t) in + pad_lo + pad_hi - ((int64_t) k - 1) *
      dil - 1;
  int64_t out = (span + stride - 1) / stride + 1;
  if ((out - 1) * stride >= (int64_t) in + pad_lo)
    out--;
  return (int) out;
}

/* geometry g (floor) turned to ceil_mode; false when it outgrows the
 * kernels' int indices */
static bool
pool_ceil (tt_window_geom * g)
{
  const int oh = pool_ceil_axis (g->in_h, g->kernel_h, g->stride_h,
      g->dilation_h, g->pad_top, g->pad_bottom);
  const int ow = pool_ceil_axis (g->in_w, g->kernel_w, g->stride_w,
      g->dilation_w, g->pad_left, g->pad_right);
  if ((int64_t) oh * ow > INT32_MAX / g->channels)
    return false;
  /* never below the floor's count */
  g->out_h = oh > g->out_h ? oh : g->out_h;
  g->out_w = ow > g->out_w ? ow : g->out_w;
  return true;
}

static tt_status
pool_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const uint32_t one[2] = { 1, 1 };
  const uint32_t pad0[4] = { 0, 0, 0, 0 };
  tt_status st;
  if (l->p.pool.kind >= POOL_GLOBAL_MAX) {
    const uint32_t whole[2] = { l->in_dims[0].h, l->in_dims[0].w };
    st = tt_window_setup (c, l, &l->p.pool.geom, whole, one, one, 0, pad0, err);
  } else {
    st = tt_window_setup (c, l, &l->p.pool.geom, l->p.pool.size,
        l->p.pool.stride, one, l->p.pool.padding_mode, l->p.pool.pad, err);
  }
  if (st)
    return st;
  if (l->p.pool.ceil_mode && !pool_ceil (&l->p.pool.geom))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] ceil_mode: the output of the %u:%u:%u input is too large",
        c->path, l->section, l->in_dims[0].c, l->in_dims[0].h, l->in_dims[0].w);
  l->out_dims[0] = (tt_dims) {
  l->in_dims[0].c,
        (uint32_t) l->p.pool.geom.out_h, (uint32_t) l->p.pool.geom.out_w};
  return TT_OK;
}

static bool
pool_is_max (const tt_layer * l)
{
  return l->p.pool.kind == POOL_MAX || l->p.pool.kind == POOL_GLOBAL_MAX;
}

/* max and global max pooling pick one element per window, and relu keeps
 * the order of what it does not zero (graph.c moves a ReLU after them) */
static bool
pool_commutes_with_relu (const tt_layer * l)
{
  return pool_is_max (l);
}

static void
pool_declare (tt_init_ctx * c, tt_layer * l)
{
  if (!pool_is_max (l))
    return;
  /* scratch counts 4-byte elements */
  const size_t bytes = c->batch_size * tt_dims_count (l->out_dims[0]) *
      tt_maxpool_index_bytes (&l->p.pool.geom);
  l->scratch[0] = tt_init_scratch_by_samples (c, "argmax", (bytes + 3) / 4);
}

static void
pool_forward (const tt_run_ctx * c, tt_layer * l)
{
  const float *x = tt_run_data (c, l->in[0]);
  float *y = tt_run_data (c, l->out[0]);
  if (pool_is_max (l))
    tt_maxpool_forward (c->threads, &l->p.pool.geom, (int) c->batch, x, y,
        tt_run_data (c, l->scratch[0]));
  else
    tt_avgpool_forward (c->threads, &l->p.pool.geom, (int) c->batch, x, y,
        l->p.pool.count_include_pad);
}

static void
pool_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const float *dy = tt_run_data (c, l->out_deriv[0]);
  float *dx = tt_run_data (c, l->in_deriv[0]);
  if (pool_is_max (l))
    tt_maxpool_backward (c->threads, &l->p.pool.geom, (int) c->batch, dy,
        tt_run_data (c, l->scratch[0]), dx);
  else
    tt_avgpool_backward (c->threads, &l->p.pool.geom, (int) c->batch, dy, dx,
        l->p.pool.count_include_pad);
}

const tt_layer_ops tt_pooling2d_layer_ops = {
  .type = "pooling2d",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = pool_keys,
  .parse = pool_parse,
  .infer = pool_infer,
  .declare = pool_declare,
  .forward = pool_forward,
  .calc_derivative = pool_calc_derivative,
  .commutes_with_relu = pool_commutes_with_relu,
};
