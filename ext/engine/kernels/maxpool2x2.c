/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Max pooling for the shape almost every CNN uses: a 2x2 window, stride 2,
 * no padding, no dilation. The general kernel (pooling.c) pays for window
 * bookkeeping and data-dependent branches on every tap; here each output
 * is four loads and three selects, PV outputs at a time: the even and odd
 * columns of two input rows are split into vectors, compared, and blended
 * (values and indices alike). Each index is the winner's tap, 0 to 3 in
 * reading order, in one byte (tt_maxpool_index_bytes).
 * tt_maxpool_forward and tt_maxpool_backward hand this shape over to these
 * functions.
 *
 * The vector body (maxpool2x2_lanes.h) is compiled 4 lanes wide, the
 * registers of NEON and of x86-64's baseline, and on x86-64 with GCC also
 * 8 lanes wide for AVX2, picked at run time (not under the sanitizers,
 * as TT_VECTOR_CLONES, so that their build tests the 4 lanes on x86).
 */
#include "tt_layer.h"

#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

bool
tt_maxpool2x2_applies (const tt_window_geom * g)
{
  return g->kernel_h == 2 && g->kernel_w == 2 && g->stride_h == 2 &&
      g->stride_w == 2 && g->dilation_h == 1 && g->dilation_w == 1 &&
      g->pad_top == 0 && g->pad_bottom == 0 && g->pad_left == 0 &&
      g->pad_right == 0 && (int64_t) g->out_h * 2 <= g->in_h &&
      (int64_t) g->out_w * 2 <= g->in_w;
}

/* The scalar forms, for rows narrower than a vector: bit masks, because
 * GCC turns a ?: on floats into a branch that real data mispredicts. */
static inline uint32_t
pool_take (float v, float best)
{
  return 0u - (uint32_t) (!(v <= best) & (best == best));
}

static inline float
pool_select (uint32_t m, float a, float b)
{
  uint32_t ua, ub;
  memcpy (&ua, &a, sizeof ua);
  memcpy (&ub, &b, sizeof ub);
  ua = (ua & m) | (ub & ~m);
  memcpy (&a, &ua, sizeof a);
  return a;
}

#define PV 4
#define PV_NAME(f) f##_4
#include "maxpool2x2_lanes.h"
#undef PV
#undef PV_NAME

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
    && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define POOL_HAVE_WIDE 1
#pragma GCC push_options
#pragma GCC target ("avx2")
#define PV 8
#define PV_NAME(f) f##_8
#include "maxpool2x2_lanes.h"
#undef PV
#undef PV_NAME
#pragma GCC pop_options
#else
#define POOL_HAVE_WIDE 0
#endif

/* The 8-lane body where the machine has AVX2 and rows are that wide;
 * rows of 4 to 7 outputs (7x7 after a 14x14 layer) still take 4 lanes. */
#if POOL_HAVE_WIDE
static bool
pool2x2_wide (const tt_window_geom * g)
{
  return g->out_w >= 8 && __builtin_cpu_supports ("avx2");
}
#endif

void
tt_maxpool2x2_forward (const tt_window_geom * g, int batch, const float *x,
    float *y, uint8_t * argmax)
{
#if POOL_HAVE_WIDE
  if (pool2x2_wide (g)) {
    maxpool2x2_forward_8 (g, batch, x, y, argmax);
    return;
  }
#endif
  maxpool2x2_forward_4 (g, batch, x, y, argmax);
}

void
tt_maxpool2x2_backward (const tt_window_geom * g, int batch, const float *dy,
    const uint8_t * argmax, float *dx)
{
#if POOL_HAVE_WIDE
  if (pool2x2_wide (g)) {
    maxpool2x2_backward_8 (g, batch, dy, argmax, dx);
    return;
  }
#endif
  maxpool2x2_backward_4 (g, batch, dy, argmax, dx);
}
