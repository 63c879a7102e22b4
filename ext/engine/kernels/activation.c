/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Activation functions and their derivatives. Backward takes both x and
 * y = f(x) and uses y where the derivative allows (relu, leaky_relu,
 * sigmoid, tanh, softmax, elu, softplus, selu, relu6, hard_sigmoid,
 * clip), so
 * those can run in place over their input.
 * Softmax is taken over the width axis, as nntrainer does.
 */
#include "tt_layer.h"
#include "vmath.h"
#include "tt_split.h"

#include <math.h>

/* SELU's constants (Klambauer et al., PyTorch's, nntrainer's in float) */
#define SELU_ALPHA 1.67326324235437728f
#define SELU_SCALE 1.05070098735548049f
/* tanh_gelu: 0.5 x (1 + tanh (sqrt (2/pi) (x + 0.044715 x^3))) */
#define TANH_GELU_K 0.797884560802865355f
#define TANH_GELU_C 0.044715f
/* sigmoid_gelu (quick gelu): x sigmoid (1.702 x) */
#define SIGMOID_GELU_K 1.702f

static inline float
tanh_gelu_arg (float x)
{
  return TANH_GELU_K * (x + TANH_GELU_C * x * x * x);
}

/* ln (1 + e^x) = max (x, 0) + ln (1 + e^-|x|): no overflow (nntrainer's
 * ln (1 + e^x) is inf from x = 89 on), x itself above 17 as in float */
static inline float
softplus (float x)
{
  const float a = x < 0.0f ? -x : x;
  return (x > 0.0f ? x : 0.0f) + tt_vlog1pf (tt_vexpf (-a));
}

/* e^x for mish, x clamped to 20 (tanh softplus x is 1 in float from 9
 * on), so that e^x (e^x + 2) and its square stay finite */
static inline float
mish_exp (float x)
{
  return tt_vexpf (x < 20.0f ? x : 20.0f);
}

static inline float
relu6 (float x)
{
  const float r = x > 0.0f ? x : 0.0f;
  return r < 6.0f ? r : 6.0f;
}


/* Row by row, the maxima subtracted; then e^ over the whole block at
 * once, so that rows narrower than a vector (10 classes) still fill
 * them; then each row scaled by its sum. tt_vexpf, not libm's expf one
 * value at a time: the MLP's loss at batch 128 took 9 us a step. */
static TT_VECTOR_CLONES void
softmax_rows (size_t rows, size_t width, const float *x, float *y)
{
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * width;
    float *yr = y + r * width;
    float mx = xr[0];
    for (size_t i = 1; i < width; i++)
      mx = xr[i] > mx ? xr[i] : mx;
    for (size_t i = 0; i < width; i++)
      yr[i] = xr[i] - mx;
  }
  const size_t n = rows * width;
  for (size_t i = 0; i < n; i++)
    y[i] = tt_vexpf (y[i]);
  for (size_t r = 0; r < rows; r++) {
    float *yr = y + r * width;
    float sum = 0;
    for (size_t i = 0; i < width; i++)
      sum += yr[i];
    const float inv = 1.0f / sum;
    for (size_t i = 0; i < width; i++)
      yr[i] *= inv;
  }
}

TT_VECTOR_CLONES void
tt_activation_forward (tt_activation fn, size_t rows, size_t width,
    const float *x, float *y)
{
  const size_t n = rows * width;
  switch (fn) {
    case TT_ACT_NONE:
      if (x != y)
        for (size_t i = 0; i < n; i++)
          y[i] = x[i];
      break;
    case TT_ACT_RELU:
      for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      break;
    case TT_ACT_LEAKY_RELU:
      for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : TT_LEAKY_RELU_SLOPE * x[i];
      break;
    case TT_ACT_SIGMOID:
      for (size_t i = 0; i < n; i++)
        y[i] = tt_vsigmoidf (x[i]);
      break;
    case TT_ACT_TANH:
      for (size_t i = 0; i < n; i++)
        y[i] = tt_vtanhf (x[i]);
      break;
    case TT_ACT_SOFTMAX:
      softmax_rows (rows, width, x, y);
      break;
    case TT_ACT_SWISH:
      for (size_t i = 0; i < n; i++)
        y[i] = x[i] / (1.0f + expf (-x[i]));
      break;
    case TT_ACT_GELU:
      for (size_t i = 0; i < n; i++)
        y[i] = x[i] * tt_vnormcdff (x[i]);
      break;
    case TT_ACT_ELU:
      for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : expm1f (x[i]);
      break;
    case TT_ACT_TANH_GELU:
      /* 0.5 x (1 + tanh u) = x sigmoid (2u): no cancellation for x < 0 */
      for (size_t i = 0; i < n; i++)
        y[i] = x[i] * tt_vsigmoidf (2.0f * tanh_gelu_arg (x[i]));
      break;
    case TT_ACT_SIGMOID_GELU:
      for (size_t i = 0; i < n; i++)
        y[i] = x[i] * tt_vsigmoidf (SIGMOID_GELU_K * x[i]);
      break;
    case TT_ACT_SOFTPLUS:
      for (size_t i = 0; i < n; i++)
        y[i] = softplus (x[i]);
      break;
    case TT_ACT_SELU:
      for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? SELU_SCALE * x[i] :
            SELU_SCALE * SELU_ALPHA * tt_vexpm1f (x[i]);
      break;
    case TT_ACT_MISH:
      for (size_t i = 0; i < n; i++) {
        const float e = mish_exp (x[i]), m = e * (e + 2.0f);
        y[i] = x[i] * (m / (m + 2.0f));
      }
      break;
    case TT_ACT_RELU6:
      for (size_t i = 0; i < n; i++)
        y[i] = relu6 (x[i]);
      break;
    case TT_ACT_HARD_SWISH:
      for (size_t i = 0; i < n; i++)
        y[i] = x[i] * relu6 (x[i] + 3.0f) / 6.0f;
      break;
    case TT_ACT_HARD_SIGMOID:
      for (size_t i = 0; i < n; i++)
        y[i] = relu6 (x[i] + 3.0f) / 6.0f;
      break;
    case TT_ACT_CLIP:
      /* the default bounds; a layer with its own calls tt_clip_* */
      tt_clip_forward (TT_CLIP_DEFAULT_MIN, TT_CLIP_DEFAULT_MAX, n, x, y);
      break;
  }
}

TT_VECTOR_CLONES void
tt_activation_backward (tt_activation fn, size_t rows, size_t width,
    const float *x, const float *y, const float *dy, float *dx)
{
  const size_t n = rows * width;
  switch (fn) {
    case TT_ACT_NONE:
      if (dx != dy)
        for (size_t i = 0; i < n; i++)
          dx[i] = dy[i];
      break;
    case TT_ACT_RELU:
      /* dy read on every lane: read only where y > 0, the loop stays
       * scalar wherever there are no masked loads (NEON, SSE2) */
      for (size_t i = 0; i < n; i++) {
        const float g = dy[i];
        dx[i] = y[i] > 0.0f ? g : 0.0f;
      }
      break;
    case TT_ACT_LEAKY_RELU:
      for (size_t i = 0; i < n; i++)
        dx[i] = y[i] > 0.0f ? dy[i] : TT_LEAKY_RELU_SLOPE * dy[i];
      break;
    case TT_ACT_SIGMOID:
      for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] * y[i] * (1.0f - y[i]);
      break;
    case TT_ACT_TANH:
      for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] * (1.0f - y[i] * y[i]);
      break;
    case TT_ACT_SOFTMAX:
      for (size_t r = 0; r < rows; r++) {
        const float *yr = y + r * width, *dyr = dy + r * width;
        float *dxr = dx + r * width;
        float dot = 0;
        for (size_t i = 0; i < width; i++)
          dot += dyr[i] * yr[i];
        for (size_t i = 0; i < width; i++)
          dxr[i] = yr[i] * (dyr[i] - dot);
      }
      break;
    case TT_ACT_SWISH:
      for (size_t i = 0; i < n; i++) {
        float s = 1.0f / (1.0f + expf (-x[i]));
        dx[i] = dy[i] * (s + x[i] * s * (1.0f - s));
      }
      break;
    case TT_ACT_GELU:
      for (size_t i = 0; i < n; i++) {
        const float cdf = tt_vnormcdff (x[i]);
        const float pdf = tt_vexpf (-0.5f * x[i] * x[i]) * 0.3989422804014327f;
        dx[i] = dy[i] * (cdf + x[i] * pdf);
      }
      break;
    case TT_ACT_ELU:
      for (size_t i = 0; i < n; i++)
        dx[i] = y[i] > 0.0f ? dy[i] : dy[i] * (y[i] + 1.0f);
      break;
    case TT_ACT_TANH_GELU:
      /* s = sigmoid (2u) = (1 + tanh u) / 2: f' = s + 2 x s (1 - s) u' */
      for (size_t i = 0; i < n; i++) {
        const float v = x[i], s = tt_vsigmoidf (2.0f * tanh_gelu_arg (v));
        const float du = TANH_GELU_K * (1.0f + 3.0f * TANH_GELU_C * v * v);
        dx[i] = dy[i] * (s + 2.0f * v * s * (1.0f - s) * du);
      }
      break;
    case TT_ACT_SIGMOID_GELU:
      for (size_t i = 0; i < n; i++) {
        const float v = x[i], s = tt_vsigmoidf (SIGMOID_GELU_K * v);
        dx[i] = dy[i] * (s + SIGMOID_GELU_K * v * s * (1.0f - s));
      }
      break;
    case TT_ACT_SOFTPLUS:
      /* sigmoid x = 1 - e^-y */
      for (size_t i = 0; i < n; i++)
        dx[i] = -dy[i] * tt_vexpm1f (-y[i]);
      break;
    case TT_ACT_SELU:
      /* scale alpha e^x = y + scale alpha for x <= 0 */
      for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] * (y[i] > 0.0f ? SELU_SCALE : y[i] + SELU_SCALE *
            SELU_ALPHA);
      break;
    case TT_ACT_MISH:
      /* t = tanh softplus x = m / (m + 2), m = e^x (e^x + 2); f' = t + x
       * sigmoid (x) (1 - t^2), 1 - t^2 = 4 (m + 1) / (m + 2)^2 */
      for (size_t i = 0; i < n; i++) {
        const float v = x[i], e = mish_exp (v), m = e * (e + 2.0f);
        const float d = m + 2.0f, s = e / (1.0f + e);
        dx[i] = dy[i] * (m / d + v * s * 4.0f * (m + 1.0f) / (d * d));
      }
      break;
    case TT_ACT_RELU6:
      /* & and dy read on every lane: no branches, so the loop vectorizes */
      for (size_t i = 0; i < n; i++) {
        const float g = dy[i];
        dx[i] = ((y[i] > 0.0f) & (y[i] < 6.0f)) ? g : 0.0f;
      }
      break;
    case TT_ACT_HARD_SWISH:
      /* PyTorch's: 0 below -3, x / 3 + 1/2 on [-3, 3], 1 above */
      for (size_t i = 0; i < n; i++) {
        const float v = x[i];
        const float d = v < -3.0f ? 0.0f : v <= 3.0f ? v / 3.0f + 0.5f : 1.0f;
        dx[i] = dy[i] * d;
      }
      break;
    case TT_ACT_HARD_SIGMOID:
      for (size_t i = 0; i < n; i++) {
        const float g = dy[i] * (1.0f / 6.0f);
        dx[i] = ((y[i] > 0.0f) & (y[i] < 1.0f)) ? g : 0.0f;
      }
      break;
    case TT_ACT_CLIP:
      tt_clip_backward (TT_CLIP_DEFAULT_MIN, TT_CLIP_DEFAULT_MAX, n, y, dy, dx);
      break;
  }
}

/* (kernels.h) the relu's backward above, row by row, in place */
void
tt_relu_mask (size_t rows, size_t cols, const float *keep, size_t ldk,
    float *c, size_t ldc)
{
  if (ldk == cols && ldc == cols) {
    tt_activation_backward (TT_ACT_RELU, 1, rows * cols, NULL, keep, c, c);
    return;
  }
  for (size_t r = 0; r < rows; r++)
    tt_activation_backward (TT_ACT_RELU, 1, cols, NULL, keep + r * ldk,
        c + r * ldc, c + r * ldc);
}

typedef struct
{
  tt_activation fn;
  size_t width;
  const float *x, *y, *dy;
  float *out;
} activation_job;

/* elements [begin, end): whole rows for softmax (a row is its unit),
 * else any run of elements as one row */
static void
activation_range (void *arg, size_t begin, size_t end, bool backward)
{
  const activation_job *j = arg;
  const bool rows = j->fn == TT_ACT_SOFTMAX;
  const size_t n = end - begin;
  const size_t r = rows ? n / j->width : 1, w = rows ? j->width : n;
  if (backward)
    tt_activation_backward (j->fn, r, w, j->x ? j->x + begin : NULL,
        j->y + begin, j->dy + begin, j->out + begin);
  else
    tt_activation_forward (j->fn, r, w, j->x + begin, j->out + begin);
}

static void
activation_forward_range (void *arg, size_t begin, size_t end)
{
  activation_range (arg, begin, end, false);
}

static void
activation_backward_range (void *arg, size_t begin, size_t end)
{
  activation_range (arg, begin, end, true);
}

void
tt_activation_forward_split (tt_threads * pool, tt_activation fn,
    size_t rows, size_t width, const float *x, float *y)
{
  activation_job j = { fn, width, x, NULL, NULL, y };
  /* 64 floats: whole cache lines and vectors for each part */
  tt_split (pool, rows * width, fn == TT_ACT_SOFTMAX ? width : 64,
      TT_ACTIVATION_SPLIT_MIN, activation_forward_range, &j);
}

void
tt_activation_backward_split (tt_threads * pool, tt_activation fn,
    size_t rows, size_t width, const float *x, const float *y,
    const float *dy, float *dx)
{
  activation_job j = { fn, width, x, y, dy, dx };
  tt_split (pool, rows * width, fn == TT_ACT_SOFTMAX ? width : 64,
      TT_ACTIVATION_SPLIT_MIN, activation_backward_range, &j);
}
