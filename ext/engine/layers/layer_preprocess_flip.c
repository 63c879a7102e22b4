/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * preprocess_flip: nntrainer's random flip for data augmentation. In
 * training each sample draws two numbers from the model's stream (u1
 * then u2, uniform in [0, 1)): u1 < 0.5 reverses its columns unless
 * flip_direction = vertical, u2 < 0.5 its rows unless flip_direction =
 * horizontal; in inference it is the identity. The draws are kept (a
 * scratch of one float a sample) for backward, which flips the output
 * derivative the same way; it may run in place.
 */
#include "tt_layer.h"

#include <string.h>

static const char *const flip_keys[] = { "flip_direction", NULL };

static const char *const flip_directions[] = { "horizontal", "vertical",
  "horizontal_and_vertical", NULL
};

static tt_status
flip_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  l->p.prep.direction = 2;
  return tt_section_enum (s, "flip_direction", flip_directions,
      &l->p.prep.direction, err);
}

static tt_status
flip_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->in_dims[0];
  return TT_OK;
}

static void
flip_declare (tt_init_ctx * c, tt_layer * l)
{
  l->scratch[0] = tt_init_scratch (c, "flips", c->batch_size);
}

static void
flip_forward (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims d = l->in_dims[0];
  float *flags = tt_run_data (c, l->scratch[0]);
  const int dir = l->p.prep.direction;
  for (uint32_t b = 0; b < c->batch; b++) {
    int f = 0;
    if (c->training) {
      /* both numbers drawn whatever the direction, as nntrainer does */
      if (tt_rng_uniform (c->rng) < 0.5f && dir != 1)
        f |= 1;
      if (tt_rng_uniform (c->rng) < 0.5f && dir != 0)
        f |= 2;
    }
    flags[b] = (float) f;
  }
  tt_flip_samples (c->threads, c->batch, d.c, d.h, d.w, flags,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->out[0]));
}

static void
flip_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims d = l->in_dims[0];
  tt_flip_samples (c->threads, c->batch, d.c, d.h, d.w,
      tt_run_data (c, l->scratch[0]), tt_run_data (c, l->out_deriv[0]),
      tt_run_data (c, l->in_deriv[0]));
}

static bool
flip_can_run_in_place (const tt_layer * l)
{
  (void) l;
  return true;
}

const tt_layer_ops tt_preprocess_flip_layer_ops = {
  .type = "preprocess_flip",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = flip_keys,
  .parse = flip_parse,
  .infer = flip_infer,
  .declare = flip_declare,
  .forward = flip_forward,
  .calc_derivative = flip_calc_derivative,
  .can_run_in_place = flip_can_run_in_place,
  .draws_random = true,
};
