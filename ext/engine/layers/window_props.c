/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Keys shared by conv2d and pooling2d: a pair of sizes ("3,3" or "3") and
 * padding ("valid", "same", or 1, 2 or 4 integers as nntrainer reads
 * them: all sides; height,width; top,bottom,left,right); conv1d's padding
 * (nntrainer's Padding1D: "valid", "same", "causal", 1 or 2 integers:
 * both sides; left,right).
 */
#include "tt_layer.h"

#include <strings.h>

tt_status
tt_window_pair (const tt_section * s, const char *key, uint32_t min,
    uint32_t out[2], tt_error * err)
{
  uint32_t v[2], n = 0;
  tt_status st = tt_section_uint_list (s, key, min, 1u << 16, v, 2, &n, err);
  if (st || !tt_section_has (s, key))
    return st;
  out[0] = v[0];
  out[1] = n == 2 ? v[1] : v[0];
  return TT_OK;
}

tt_status
tt_window_padding (const tt_section * s, int *mode, uint32_t pad[4],
    tt_error * err)
{
  const char *v = tt_section_string (s, "padding");
  uint32_t p[4], n = 0;
  if (!v)
    return TT_OK;
  if (!strcasecmp (v, "valid")) {
    *mode = 0;
    return TT_OK;
  }
  if (!strcasecmp (v, "same")) {
    *mode = 1;
    return TT_OK;
  }
  tt_status st = tt_section_uint_list (s, "padding", 0, 1u << 16, p, 4, &n,
      err);
  if (st)
    return tt_section_error (s, "padding", err, TT_ERR_PARSE,
        "'%s' is not valid, same, or 1, 2 or 4 non-negative integers", v);
  if (n == 3)
    return tt_section_error (s, "padding", err, TT_ERR_INVALID,
        "'%s' has 3 values (give 1, 2 or 4)", v);
  *mode = 2;
  if (n == 1)
    pad[0] = pad[1] = pad[2] = pad[3] = p[0];
  else if (n == 2) {
    pad[0] = pad[1] = p[0];
    pad[2] = pad[3] = p[1];
  } else
    for (int i = 0; i < 4; i++)
      pad[i] = p[i];
  return TT_OK;
}

tt_status
tt_window_padding1d (const tt_section * s, int *mode, uint32_t pad[4],
    tt_error * err)
{
  const char *v = tt_section_string (s, "padding");
  uint32_t p[2], n = 0;
  if (!v)
    return TT_OK;
  if (!strcasecmp (v, "valid") || !strcasecmp (v, "same") ||
      !strcasecmp (v, "causal")) {
    *mode = !strcasecmp (v, "valid") ? 0 : !strcasecmp (v, "same") ? 1 : 3;
    return TT_OK;
  }
  tt_status st = tt_section_uint_list (s, "padding", 0, 1u << 16, p, 2, &n,
      err);
  if (st)
    return tt_section_error (s, "padding", err, TT_ERR_PARSE,
        "'%s' is not valid, same, causal, P (both sides) or LEFT,RIGHT "
        "(non-negative integers)", v);
  *mode = 2;
  pad[0] = pad[1] = 0;
  pad[2] = p[0];
  pad[3] = n == 2 ? p[1] : p[0];
  return TT_OK;
}

/* TensorFlow's "same": output = ceil(input / stride), the extra pixel of an
 * odd total going to the bottom/right. */
static void
window_same (uint32_t in, uint32_t k, uint32_t stride, uint32_t dilation,
    int *lo, int *hi)
{
  int64_t out = ((int64_t) in + stride - 1) / stride;
  int64_t eff = ((int64_t) k - 1) * dilation + 1;
  int64_t total = (out - 1) * stride + eff - in;
  if (total < 0)
    total = 0;
  *lo = (int) (total / 2);
  *hi = (int) (total - total / 2);
}

tt_status
tt_window_setup (const tt_init_ctx * c, const tt_layer * l, tt_window_geom * g,
    const uint32_t kernel[2], const uint32_t stride[2],
    const uint32_t dilation[2], int mode, const uint32_t pad[4], tt_error * err)
{
  const tt_dims in = l->in_dims[0];
  g->channels = (int) in.c;
  g->in_h = (int) in.h;
  g->in_w = (int) in.w;
  g->kernel_h = (int) kernel[0];
  g->kernel_w = (int) kernel[1];
  g->stride_h = (int) stride[0];
  g->stride_w = (int) stride[1];
  g->dilation_h = (int) dilation[0];
  g->dilation_w = (int) dilation[1];
  if (mode == 1 || mode == 3) {
    window_same (in.h, kernel[0], stride[0], dilation[0], &g->pad_top,
        &g->pad_bottom);
    window_same (in.w, kernel[1], stride[1], dilation[1], &g->pad_left,
        &g->pad_right);
    if (mode == 3) {
      /* causal (conv1d): the whole total on the left */
      g->pad_top = g->pad_bottom = 0;
      g->pad_left += g->pad_right;
      g->pad_right = 0;
    }
  } else if (mode == 2) {
    g->pad_top = (int) pad[0];
    g->pad_bottom = (int) pad[1];
    g->pad_left = (int) pad[2];
    g->pad_right = (int) pad[3];
  } else {
    g->pad_top = g->pad_bottom = g->pad_left = g->pad_right = 0;
  }
  if (tt_window_geom_init (g) != 0)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] %s: a %ux%u window (stride %u,%u, dilation %u,%u, "
        "padding %d,%d,%d,%d) does not fit the %u:%u:%u input", c->path,
        l->section, l->ops->has_weights ? "kernel_size" :
        "pool_size", kernel[0], kernel[1], stride[0], stride[1], dilation[0],
        dilation[1], g->pad_top, g->pad_bottom, g->pad_left, g->pad_right,
        in.c, in.h, in.w);
  return TT_OK;
}
