/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Weight initializers with the usual scales: lecun (1/fan_in), xavier
 * (2/(fan_in+fan_out)), he (2/fan_in), as variances of a normal or the
 * matching bounds of a uniform distribution.
 */
#include "tt_internal.h"

#include <math.h>

const char *const tt_initializer_names[] = {
  "zeros", "ones", "lecun_normal", "lecun_uniform", "xavier_normal",
  "xavier_uniform", "he_normal", "he_uniform", NULL
};

void
tt_initializer_fill (tt_rng * rng, tt_initializer init, float *w, size_t n,
    uint32_t fan_in, uint32_t fan_out)
{
  double fi = fan_in ? fan_in : 1, fo = fan_out ? fan_out : 1;
  double variance = 0;
  bool uniform = false;

  switch (init) {
    case TT_INIT_ZEROS:
    case TT_INIT_ONES:
      for (size_t i = 0; i < n; i++)
        w[i] = init == TT_INIT_ONES ? 1.0f : 0.0f;
      return;
    case TT_INIT_LECUN_UNIFORM:
      uniform = true;
      /* fall through */
    case TT_INIT_LECUN_NORMAL:
      variance = 1.0 / fi;
      break;
    case TT_INIT_XAVIER_UNIFORM:
      uniform = true;
      /* fall through */
    case TT_INIT_XAVIER_NORMAL:
      variance = 2.0 / (fi + fo);
      break;
    case TT_INIT_HE_UNIFORM:
      uniform = true;
      /* fall through */
    case TT_INIT_HE_NORMAL:
      variance = 2.0 / fi;
      break;
  }
  if (uniform) {
    /* a uniform on [-b, b] has variance b^2 / 3 */
    float bound = (float) sqrt (3.0 * variance);
    for (size_t i = 0; i < n; i++)
      w[i] = (2.0f * tt_rng_uniform (rng) - 1.0f) * bound;
  } else {
    float sd = (float) sqrt (variance);
    for (size_t i = 0; i < n; i++)
      w[i] = tt_rng_normal (rng) * sd;
  }
}
