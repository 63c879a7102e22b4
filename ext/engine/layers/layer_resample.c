/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * upsample2d and channel_shuffle: nntrainer's layers that move values
 * without weights (kernels/resample.c).
 *
 * upsample2d: upsample = nearest | bilinear (required), kernel_size =
 * KH,KW or K (the scale factors, required): C:H:W to C:(H KH):(W KW).
 * Bilinear is PyTorch's align_corners = False, as nntrainer computes it.
 *
 * channel_shuffle: split_number = G (default: the smallest divisor of C
 * above 1), 1 < G < C dividing C: the channels viewed as [G][C/G] are
 * transposed to [C/G][G] (ShuffleNet's); backward is the inverse.
 */
#include "tt_layer.h"

static const char *const upsample_keys[] = { "upsample", "kernel_size",
  NULL
};

static const char *const upsample_modes[] = { "nearest", "bilinear", NULL };

/* the largest output height or width */
#define UPSAMPLE_MAX_SIDE (1u << 24)

static tt_status
upsample_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  int mode = -1;
  tt_status st = tt_section_enum (s, "upsample", upsample_modes, &mode, err);
  if (st)
    return st;
  if (mode < 0)
    return tt_section_error (s, "upsample", err, TT_ERR_INVALID,
        "missing key (nearest or bilinear)");
  l->p.upsample.bilinear = mode == 1;
  if (!tt_section_has (s, "kernel_size"))
    return tt_section_error (s, "kernel_size", err, TT_ERR_INVALID,
        "missing key (the scale factors, e.g. 2,2)");
  return tt_window_pair (s, "kernel_size", 1, l->p.upsample.scale, err);
}

static tt_status
upsample_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims in = l->in_dims[0];
  const uint32_t *k = l->p.upsample.scale;
  if ((uint64_t) in.h * k[0] > UPSAMPLE_MAX_SIDE ||
      (uint64_t) in.w * k[1] > UPSAMPLE_MAX_SIDE)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] kernel_size: %u,%u "
        "makes the input %u:%u:%u %llu x %llu (at most %u a side)", c->path,
        l->section, k[0], k[1], in.c, in.h, in.w,
        (unsigned long long) in.h * k[0], (unsigned long long) in.w * k[1],
        UPSAMPLE_MAX_SIDE);
  l->out_dims[0] = (tt_dims) {
  in.c, in.h * k[0], in.w * k[1]};
  return TT_OK;
}

static void
upsample_forward (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims in = l->in_dims[0];
  tt_upsample2d_forward (c->threads, l->p.upsample.bilinear,
      (size_t) c->batch * in.c, in.h, in.w, l->p.upsample.scale[0],
      l->p.upsample.scale[1], tt_run_data (c, l->in[0]),
      tt_run_data (c, l->out[0]));
}

static void
upsample_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims in = l->in_dims[0];
  tt_upsample2d_backward (c->threads, l->p.upsample.bilinear,
      (size_t) c->batch * in.c, in.h, in.w, l->p.upsample.scale[0],
      l->p.upsample.scale[1], tt_run_data (c, l->out_deriv[0]),
      tt_run_data (c, l->in_deriv[0]));
}

const tt_layer_ops tt_upsample2d_layer_ops = {
  .type = "upsample2d",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = upsample_keys,
  .parse = upsample_parse,
  .infer = upsample_infer,
  .forward = upsample_forward,
  .calc_derivative = upsample_calc_derivative,
};

static const char *const shuffle_keys[] = { "split_number", NULL };

static tt_status
shuffle_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  l->p.shuffle.groups = 0;
  return tt_section_uint (s, "split_number", 2, 1u << 24,
      &l->p.shuffle.groups, err);
}

static tt_status
shuffle_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims in = l->in_dims[0];
  uint32_t g = l->p.shuffle.groups;
  if (!g) {
    for (uint32_t i = 2; i < in.c && !g; i++)
      if (in.c % i == 0)
        g = i;
    if (!g)
      return tt_fail (err, TT_ERR_INVALID, "%s: [%s] split_number: not "
          "set, and the input %u:%u:%u has %u channels, which no number "
          "above 1 and below it divides (set split_number, or give the "
          "input a channel count that is not prime)", c->path, l->section,
          in.c, in.h, in.w, in.c);
  } else if (g >= in.c || in.c % g)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] split_number: %u does "
        "not fit the input %u:%u:%u (allowed: a divisor of its %u channels, "
        "above 1 and below %u)", c->path, l->section, g, in.c, in.h, in.w,
        in.c, in.c);
  l->p.shuffle.groups = g;
  l->out_dims[0] = in;
  return TT_OK;
}

static void
shuffle_forward (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims d = l->in_dims[0];
  const uint32_t g = l->p.shuffle.groups;
  tt_channel_shuffle (c->threads, c->batch, g, d.c / g, (size_t) d.h * d.w,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->out[0]));
}

static void
shuffle_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims d = l->in_dims[0];
  const uint32_t g = l->p.shuffle.groups;
  tt_channel_shuffle (c->threads, c->batch, d.c / g, g, (size_t) d.h * d.w,
      tt_run_data (c, l->out_deriv[0]), tt_run_data (c, l->in_deriv[0]));
}

const tt_layer_ops tt_channel_shuffle_layer_ops = {
  .type = "channel_shuffle",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = shuffle_keys,
  .parse = shuffle_parse,
  .infer = shuffle_infer,
  .forward = shuffle_forward,
  .calc_derivative = shuffle_calc_derivative,
};
