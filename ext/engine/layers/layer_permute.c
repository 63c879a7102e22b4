/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * permute: nntrainer's permutation of the three axes of each sample.
 * direction = A,B,C (required), a permutation of 1 (channel), 2 (height)
 * and 3 (width): output axis i is input axis direction[i], so 1,3,2 turns
 * C:H:W into C:W:H (torch's permute (0, A, B, C) of the 4-D tensor).
 * Backward applies the inverse permutation (kernels/tensorops.c).
 */
#include "tt_layer.h"

static const char *const permute_keys[] = { "direction", NULL };

static tt_status
permute_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  uint32_t d[3], n = 0;
  if (!tt_section_has (s, "direction"))
    return tt_section_error (s, "direction", err, TT_ERR_INVALID,
        "missing key (a permutation of 1 channel, 2 height, 3 width, e.g. "
        "1,3,2)");
  tt_status st = tt_section_uint_list (s, "direction", 1, 3, d, 3, &n, err);
  if (st)
    return st;
  if (n != 3 || d[0] == d[1] || d[0] == d[2] || d[1] == d[2])
    return tt_section_error (s, "direction", err, TT_ERR_INVALID,
        "'%s' is not a permutation of 1, 2 and 3 (each axis once: 1 "
        "channel, 2 height, 3 width, e.g. 1,3,2)",
        tt_section_string (s, "direction"));
  for (int a = 0; a < 3; a++)
    l->p.permute.perm[a] = d[a] - 1;
  return TT_OK;
}

static tt_status
permute_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  const tt_dims in = l->in_dims[0];
  const uint32_t d[3] = { in.c, in.h, in.w };
  const uint32_t *p = l->p.permute.perm;
  l->out_dims[0] = (tt_dims) {
  d[p[0]], d[p[1]], d[p[2]]};
  return TT_OK;
}

static void
permute_forward (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims in = l->in_dims[0];
  const uint32_t d[3] = { in.c, in.h, in.w };
  tt_permute (c->threads, c->batch, d, l->p.permute.perm,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->out[0]));
}

static void
permute_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims out = l->out_dims[0];
  const uint32_t d[3] = { out.c, out.h, out.w };
  const uint32_t *p = l->p.permute.perm;
  uint32_t inverse[3];
  for (uint32_t a = 0; a < 3; a++)
    inverse[p[a]] = a;
  tt_permute (c->threads, c->batch, d, inverse,
      tt_run_data (c, l->out_deriv[0]), tt_run_data (c, l->in_deriv[0]));
}

const tt_layer_ops tt_permute_layer_ops = {
  .type = "permute",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = permute_keys,
  .parse = permute_parse,
  .infer = permute_infer,
  .forward = permute_forward,
  .calc_derivative = permute_calc_derivative,
};
