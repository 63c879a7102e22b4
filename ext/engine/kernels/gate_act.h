/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-value activations of the recurrent layers' gates (lstm.c, gru.c):
 * the activations whose derivative follows from their output, all a
 * recurrent backward pass keeps. Always inlined: called with constant
 * defaults (tanh, sigmoid) the switches fold away and the cell loops
 * vectorize.
 */
#ifndef TT_GATE_ACT_H
#define TT_GATE_ACT_H

#include "tt_layer.h"
#include "vmath.h"

#include <math.h>

/* the activations these support */
static inline bool
tt_gate_activation_ok (tt_activation fn)
{
  switch (fn) {
    case TT_ACT_NONE:
    case TT_ACT_RELU:
    case TT_ACT_LEAKY_RELU:
    case TT_ACT_SIGMOID:
    case TT_ACT_TANH:
    case TT_ACT_ELU:
      return true;
    default:
      return false;
  }
}

/* f(x), with activation.c's formulas (vmath.h's tanh and sigmoid) */
TT_ALWAYS_INLINE float
tt_gate_act (tt_activation fn, float x)
{
  switch (fn) {
    case TT_ACT_RELU:
      return x > 0.0f ? x : 0.0f;
    case TT_ACT_LEAKY_RELU:
      return x > 0.0f ? x : TT_LEAKY_RELU_SLOPE * x;
    case TT_ACT_SIGMOID:
      return tt_vsigmoidf (x);
    case TT_ACT_TANH:
      return tt_vtanhf (x);
    case TT_ACT_ELU:
      return x > 0.0f ? x : expm1f (x);
    default:
      return x;
  }
}

/* f'(x) from y = f(x) */
TT_ALWAYS_INLINE float
tt_gate_prime (tt_activation fn, float y)
{
  switch (fn) {
    case TT_ACT_RELU:
      return y > 0.0f ? 1.0f : 0.0f;
    case TT_ACT_LEAKY_RELU:
      return y > 0.0f ? 1.0f : TT_LEAKY_RELU_SLOPE;
    case TT_ACT_SIGMOID:
      return y * (1.0f - y);
    case TT_ACT_TANH:
      return 1.0f - y * y;
    case TT_ACT_ELU:
      return y > 0.0f ? 1.0f : y + 1.0f;
    default:
      return 1.0f;
  }
}

#endif /* TT_GATE_ACT_H */
