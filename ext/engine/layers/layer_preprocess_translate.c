/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * preprocess_translate: nntrainer's random translation for data
 * augmentation. In training each sample draws tx then ty from the model's
 * stream, uniform in [-r, r) times its width and height (r: the
 * random_translate key, its absolute value, as nntrainer takes it), and
 * its output pixel (row, column) is the input at (row + ty, column + tx):
 * bilinear between the four pixels around it, the image reflected at its
 * borders (OpenCV's warpAffine with WARP_INVERSE_MAP and BORDER_REFLECT,
 * which nntrainer calls). In inference, and for r below 1e-5, the
 * identity. The shifts are kept (two floats a sample) for backward, the
 * translation's adjoint.
 */
#include "tt_layer.h"

#include <math.h>
#include <string.h>

static const char *const translate_keys[] = { "random_translate", NULL };

/* nntrainer's: below it the layer does nothing */
#define TRANSLATE_EPSILON 1e-5f
/* the largest fraction accepted */
#define TRANSLATE_MAX 65536.0f

static tt_status
translate_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  if (!tt_section_has (s, "random_translate"))
    return tt_section_error (s, "random_translate", err, TT_ERR_INVALID,
        "missing key (the largest shift, a fraction of the size, e.g. " "0.1)");
  float r = 0.0f;
  tt_status st = tt_section_float (s, "random_translate", &r, err);
  if (st)
    return st;
  r = fabsf (r);
  if (!(r <= TRANSLATE_MAX))
    return tt_section_error (s, "random_translate", err, TT_ERR_INVALID,
        "must be a number of at most %g in magnitude", TRANSLATE_MAX);
  l->p.prep.translate = r;
  return TT_OK;
}

static tt_status
translate_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->in_dims[0];
  return TT_OK;
}

static void
translate_declare (tt_init_ctx * c, tt_layer * l)
{
  l->scratch[0] = tt_init_scratch (c, "shifts", 2 * (size_t) c->batch_size);
}

static void
translate_forward (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims d = l->in_dims[0];
  float *shifts = tt_run_data (c, l->scratch[0]);
  const float r = l->p.prep.translate;
  const bool on = c->training && r >= TRANSLATE_EPSILON;
  for (uint32_t b = 0; b < c->batch; b++) {
    float tx = 0.0f, ty = 0.0f;
    if (on) {
      tx = (2.0f * tt_rng_uniform (c->rng) - 1.0f) * r * (float) d.w;
      ty = (2.0f * tt_rng_uniform (c->rng) - 1.0f) * r * (float) d.h;
    }
    shifts[2 * b] = ty;
    shifts[2 * b + 1] = tx;
  }
  const float *x = tt_run_data (c, l->in[0]);
  float *y = tt_run_data (c, l->out[0]);
  if (!on) {
    memcpy (y, x, c->batch * tt_dims_count (d) * sizeof *y);
    return;
  }
  tt_translate_forward (c->threads, c->batch, d.c, d.h, d.w, shifts, x, y);
}

static void
translate_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims d = l->in_dims[0];
  tt_translate_backward (c->threads, c->batch, d.c, d.h, d.w,
      tt_run_data (c, l->scratch[0]), tt_run_data (c, l->out_deriv[0]),
      tt_run_data (c, l->in_deriv[0]));
}

const tt_layer_ops tt_preprocess_translate_layer_ops = {
  .type = "preprocess_translate",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = translate_keys,
  .parse = translate_parse,
  .infer = translate_infer,
  .declare = translate_declare,
  .forward = translate_forward,
  .calc_derivative = translate_calc_derivative,
  .draws_random = true,
};
