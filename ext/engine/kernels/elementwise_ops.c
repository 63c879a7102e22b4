/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nntrainer's operation layers' arithmetic: binary operations (add,
 * subtract, multiply, divide) with numpy-style broadcasting of size-1
 * axes, unary functions (negative, sqrt, sin, cos, tan, pow) and sums or
 * means over one axis (reduce_sum, reduce_mean). Arrays in, arrays out;
 * every pass split over the pool's threads by element ranges, rows or
 * samples, each value computed by the same code whatever the split, so
 * results are one thread's bit for bit.
 */
#include "tt_layer.h"
#include "tt_split.h"
#include "vmath.h"

#include <math.h>
#include <string.h>

/* ---- broadcasting ---------------------------------------------------- */

bool
tt_bcast_init (tt_bcast * g, const uint32_t a[3], const uint32_t b[3],
    uint32_t y[3])
{
  size_t d[3];
  unsigned pat[3];
  int m = 0;
  for (int k = 0; k < 3; k++) {
    if (a[k] != b[k] && a[k] != 1 && b[k] != 1)
      return false;
    y[k] = a[k] > b[k] ? a[k] : b[k];
  }
  /* axes of size 1 dropped, neighbours broadcast alike merged */
  for (int k = 0; k < 3; k++) {
    if (y[k] == 1)
      continue;
    unsigned p = (a[k] == 1 ? 1u : 0u) | (b[k] == 1 ? 2u : 0u);
    if (m > 0 && pat[m - 1] == p) {
      d[m - 1] *= y[k];
      continue;
    }
    d[m] = y[k];
    pat[m] = p;
    m++;
  }
  memset (g, 0, sizeof *g);
  for (int k = 0; k < 3; k++)
    g->d[k] = 1;
  for (int k = 0; k < m; k++) {
    g->d[3 - m + k] = d[k];
  }
  size_t ra = 1, rb = 1;
  for (int k = 2; k >= 3 - m; k--) {
    const unsigned p = pat[k - (3 - m)];
    g->sa[k] = (p & 1u) ? 0 : ra;
    g->sb[k] = (p & 2u) ? 0 : rb;
    if (!(p & 1u))
      ra *= g->d[k];
    if (!(p & 2u))
      rb *= g->d[k];
  }
  g->a_count = ra;
  g->b_count = rb;
  g->y_count = g->d[0] * g->d[1] * g->d[2];
  return true;
}

TT_ALWAYS_INLINE float
binop_value (tt_binop op, float a, float b)
{
  switch (op) {
    case TT_BINOP_ADD:
      return a + b;
    case TT_BINOP_SUB:
      return a - b;
    case TT_BINOP_MUL:
      return a * b;
    default:
      return a / b;
  }
}

/* d y / d a (which 0) or d y / d b (which 1), times dy */
TT_ALWAYS_INLINE float
binop_grad (tt_binop op, int which, float a, float b, float dy)
{
  switch (op) {
    case TT_BINOP_ADD:
      return dy;
    case TT_BINOP_SUB:
      return which ? -dy : dy;
    case TT_BINOP_MUL:
      return which ? dy * a : dy * b;
    default:
      return which ? -dy * a / (b * b) : dy / b;
  }
}

/* y[i] = a[i * sa] op b[i * sb], the strides 0 or 1 known where inlined */
TT_ALWAYS_INLINE void
binop_row_inl (tt_binop op, size_t n, const float *a, size_t sa,
    const float *b, size_t sb, float *y)
{
  for (size_t i = 0; i < n; i++)
    y[i] = binop_value (op, a[i * sa], b[i * sb]);
}

static TT_VECTOR_CLONES void
binop_row (tt_binop op, size_t n, const float *a, size_t sa, const float *b,
    size_t sb, float *y)
{
#define BINOP_ROW(OP) \
  do { \
    if (sa && sb) \
      binop_row_inl (OP, n, a, 1, b, 1, y); \
    else if (sa) \
      binop_row_inl (OP, n, a, 1, b, 0, y); \
    else if (sb) \
      binop_row_inl (OP, n, a, 0, b, 1, y); \
    else \
      binop_row_inl (OP, n, a, 0, b, 0, y); \
  } while (0)
  switch (op) {
    case TT_BINOP_ADD:
      BINOP_ROW (TT_BINOP_ADD);
      break;
    case TT_BINOP_SUB:
      BINOP_ROW (TT_BINOP_SUB);
      break;
    case TT_BINOP_MUL:
      BINOP_ROW (TT_BINOP_MUL);
      break;
    case TT_BINOP_DIV:
      BINOP_ROW (TT_BINOP_DIV);
      break;
  }
#undef BINOP_ROW
}

/* The gradient of one input over a row: mode 2 writes dx[i], 1 adds to
 * dx[i], 0 adds the row's sum to dx[0] (an axis that input broadcasts;
 * eight partial sums, then the tail, so that it vectorizes) */
TT_ALWAYS_INLINE void
grad_row_inl (tt_binop op, int which, size_t n, const float *a, size_t sa,
    const float *b, size_t sb, const float *dy, float *dx, int mode)
{
  if (mode == 2) {
    for (size_t i = 0; i < n; i++)
      dx[i] = binop_grad (op, which, a[i * sa], b[i * sb], dy[i]);
  } else if (mode == 1) {
    for (size_t i = 0; i < n; i++)
      dx[i] += binop_grad (op, which, a[i * sa], b[i * sb], dy[i]);
  } else {
    float acc[8] = { 0 };
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (size_t k = 0; k < 8; k++)
        acc[k] += binop_grad (op, which, a[(i + k) * sa], b[(i + k) * sb],
            dy[i + k]);
    float s = 0.0f;
    for (; i < n; i++)
      s += binop_grad (op, which, a[i * sa], b[i * sb], dy[i]);
    dx[0] += ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) +
        (acc[6] + acc[7])) + s;
  }
}

static TT_VECTOR_CLONES void
grad_row (tt_binop op, int which, size_t n, const float *a, size_t sa,
    const float *b, size_t sb, const float *dy, float *dx, int mode)
{
#define GRAD_MODE(OP, W, SA, SB) \
  do { \
    if (mode == 2) \
      grad_row_inl (OP, W, n, a, SA, b, SB, dy, dx, 2); \
    else if (mode == 1) \
      grad_row_inl (OP, W, n, a, SA, b, SB, dy, dx, 1); \
    else \
      grad_row_inl (OP, W, n, a, SA, b, SB, dy, dx, 0); \
  } while (0)
#define GRAD_ROW(OP, W) \
  do { \
    if (sa && sb) \
      GRAD_MODE (OP, W, 1, 1); \
    else if (sa) \
      GRAD_MODE (OP, W, 1, 0); \
    else if (sb) \
      GRAD_MODE (OP, W, 0, 1); \
    else \
      GRAD_MODE (OP, W, 0, 0); \
  } while (0)
  switch (op) {
    case TT_BINOP_ADD:
      GRAD_MODE (TT_BINOP_ADD, 0, 0, 0);
      break;
    case TT_BINOP_SUB:
      if (which)
        GRAD_MODE (TT_BINOP_SUB, 1, 0, 0);
      else
        GRAD_MODE (TT_BINOP_SUB, 0, 0, 0);
      break;
    case TT_BINOP_MUL:
      if (which)
        GRAD_ROW (TT_BINOP_MUL, 1);
      else
        GRAD_ROW (TT_BINOP_MUL, 0);
      break;
    case TT_BINOP_DIV:
      if (which)
        GRAD_ROW (TT_BINOP_DIV, 1);
      else
        GRAD_ROW (TT_BINOP_DIV, 0);
      break;
  }
#undef GRAD_ROW
#undef GRAD_MODE
}

typedef struct
{
  tt_binop op;
  const tt_bcast *g;
  const float *a, *b, *dy;
  float *y;                     /* forward: y; backward: dx */
  int which;
} binop_job;

/* the row's (sample, i0, i1) offsets into a and b */
static void
binop_offsets (const tt_bcast * g, size_t row, size_t *oa, size_t *ob)
{
  const size_t per = g->d[0] * g->d[1];
  const size_t s = row / per, q = row % per;
  const size_t i0 = q / g->d[1], i1 = q % g->d[1];
  *oa = s * g->a_count + i0 * g->sa[0] + i1 * g->sa[1];
  *ob = s * g->b_count + i0 * g->sb[0] + i1 * g->sb[1];
}

static void
binop_forward_range (void *arg, size_t begin, size_t end)
{
  const binop_job *j = arg;
  const tt_bcast *g = j->g;
  const size_t n = g->d[2];
  for (size_t row = begin / n; row < end / n; row++) {
    size_t oa, ob;
    binop_offsets (g, row, &oa, &ob);
    binop_row (j->op, n, j->a + oa, g->sa[2], j->b + ob, g->sb[2],
        j->y + row * n);
  }
}

void
tt_binop_forward (tt_threads * pool, tt_binop op, const tt_bcast * g,
    size_t batch, const float *a, const float *b, float *y)
{
  binop_job j = { op, g, a, b, NULL, y, 0 };
  tt_split (pool, batch * g->y_count, g->d[2], TT_ELEMENTWISE_SPLIT_MIN,
      binop_forward_range, &j);
}

/* rows [begin, end) of the output; an input of the output's shape is
 * written row by row, a broadcast one (split by samples) zeroed first */
static void
binop_backward_range (void *arg, size_t begin, size_t end)
{
  const binop_job *j = arg;
  const tt_bcast *g = j->g;
  const size_t n = g->d[2];
  const size_t count = j->which ? g->b_count : g->a_count;
  const bool full = count == g->y_count;
  const size_t *sx = j->which ? g->sb : g->sa;
  if (!full)
    memset (j->y + begin / g->y_count * count, 0,
        (end - begin) / g->y_count * count * sizeof *j->y);
  const size_t per = g->d[0] * g->d[1];
  for (size_t row = begin / n; row < end / n; row++) {
    size_t oa, ob;
    binop_offsets (g, row, &oa, &ob);
    const size_t q = row % per;
    const size_t ox = row / per * count + q / g->d[1] * sx[0] +
        q % g->d[1] * sx[1];
    grad_row (j->op, j->which, n, j->a + oa, g->sa[2], j->b + ob, g->sb[2],
        j->dy + row * n, j->y + ox, full ? 2 : sx[2] ? 1 : 0);
  }
}

void
tt_binop_backward (tt_threads * pool, tt_binop op, const tt_bcast * g,
    size_t batch, const float *a, const float *b, const float *dy,
    float *da, float *db)
{
  for (int which = 0; which < 2; which++) {
    float *dx = which ? db : da;
    if (!dx)
      continue;
    const size_t count = which ? g->b_count : g->a_count;
    binop_job j = { op, g, a, b, dy, dx, which };
    /* a broadcast input sums over its sample's rows: split by samples */
    tt_split (pool, batch * g->y_count,
        count == g->y_count ? g->d[2] : g->y_count, TT_ELEMENTWISE_SPLIT_MIN,
        binop_backward_range, &j);
  }
}

/* ---- unary functions ------------------------------------------------- */

/* The exponents pow runs without powf, as PyTorch does (x * x, x * x *
 * x, 1 / x, 1 / (x * x), sqrt, 1 / sqrt): the same roundings as its
 * results, and vectorized; the others call powf. */
typedef enum
{
  POW_GENERAL, POW_IDENTITY, POW_SQUARE, POW_CUBE, POW_RECIP,
  POW_RECIP_SQUARE, POW_SQRT, POW_RSQRT
} unary_pow_kind;

static unary_pow_kind
unary_pow_kind_of (float e)
{
  return e == 1.0f ? POW_IDENTITY : e == 2.0f ? POW_SQUARE : e == 3.0f ?
      POW_CUBE : e == -1.0f ? POW_RECIP : e == -2.0f ? POW_RECIP_SQUARE :
      e == 0.5f ? POW_SQRT : e == -0.5f ? POW_RSQRT : POW_GENERAL;
}

/* y = sign * dy * (cos x or sin x) (dy NULL: 1) where |x| is past
 * TT_VSINCOS_LIMIT: libm's, for the few values there (x is intact: these
 * layers never run in place) */
TT_ALWAYS_INLINE void
unary_sincos_fixup (size_t n, const float *x, float *y, const float *dy,
    bool cos, float sign)
{
  int big = 0;
  for (size_t i = 0; i < n; i++)
    big |= fabsf (x[i]) > TT_VSINCOS_LIMIT;
  if (!big)
    return;
  for (size_t i = 0; i < n; i++)
    if (fabsf (x[i]) > TT_VSINCOS_LIMIT)
      y[i] = sign * (dy ? dy[i] : 1.0f) * (cos ? cosf (x[i]) : sinf (x[i]));
}

TT_ALWAYS_INLINE void
unary_forward_inl (tt_unary fn, size_t n, const float *x, float *y, float e)
{
  switch (fn) {
    case TT_UNARY_NEGATIVE:
      for (size_t i = 0; i < n; i++)
        y[i] = -x[i];
      break;
    case TT_UNARY_SQRT:
      for (size_t i = 0; i < n; i++)
        y[i] = sqrtf (x[i]);
      break;
    case TT_UNARY_SIN:
      for (size_t i = 0; i < n; i++)
        y[i] = tt_vsinf (x[i]);
      unary_sincos_fixup (n, x, y, NULL, false, 1.0f);
      break;
    case TT_UNARY_COS:
      for (size_t i = 0; i < n; i++)
        y[i] = tt_vcosf (x[i]);
      unary_sincos_fixup (n, x, y, NULL, true, 1.0f);
      break;
    case TT_UNARY_TAN:
      for (size_t i = 0; i < n; i++)
        y[i] = tanf (x[i]);
      break;
    case TT_UNARY_POW:
      switch (unary_pow_kind_of (e)) {
        case POW_IDENTITY:
          for (size_t i = 0; i < n; i++)
            y[i] = x[i];
          break;
        case POW_SQUARE:
          for (size_t i = 0; i < n; i++)
            y[i] = x[i] * x[i];
          break;
        case POW_CUBE:
          for (size_t i = 0; i < n; i++)
            y[i] = x[i] * x[i] * x[i];
          break;
        case POW_RECIP:
          for (size_t i = 0; i < n; i++)
            y[i] = 1.0f / x[i];
          break;
        case POW_RECIP_SQUARE:
          for (size_t i = 0; i < n; i++)
            y[i] = 1.0f / (x[i] * x[i]);
          break;
        case POW_SQRT:
          for (size_t i = 0; i < n; i++)
            y[i] = sqrtf (x[i]);
          break;
        case POW_RSQRT:
          for (size_t i = 0; i < n; i++)
            y[i] = 1.0f / sqrtf (x[i]);
          break;
        case POW_GENERAL:
          for (size_t i = 0; i < n; i++)
            y[i] = powf (x[i], e);
          break;
      }
      break;
  }
}

static TT_VECTOR_CLONES void
unary_forward_block (tt_unary fn, size_t n, const float *x, float *y, float e)
{
  unary_forward_inl (fn, n, x, y, e);
}

/* dx from dy and x (sin, cos, pow) or y (negative: neither; sqrt, tan:
 * y, so that they can run in place); dx may equal dy */
static TT_VECTOR_CLONES void
unary_backward_block (tt_unary fn, size_t n, const float *x, const float *y,
    const float *dy, float *dx, float e)
{
  switch (fn) {
    case TT_UNARY_NEGATIVE:
      for (size_t i = 0; i < n; i++)
        dx[i] = -dy[i];
      break;
    case TT_UNARY_SQRT:
      for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] * 0.5f / y[i];
      break;
    case TT_UNARY_SIN:
      if (dx == dy) {
        /* the fix-up below needs dy */
        for (size_t i = 0; i < n; i++)
          dx[i] = dy[i] * (fabsf (x[i]) > TT_VSINCOS_LIMIT ? cosf (x[i]) :
              tt_vcosf (x[i]));
        break;
      }
      for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] * tt_vcosf (x[i]);
      unary_sincos_fixup (n, x, dx, dy, true, 1.0f);
      break;
    case TT_UNARY_COS:
      if (dx == dy) {
        for (size_t i = 0; i < n; i++)
          dx[i] = -dy[i] * (fabsf (x[i]) > TT_VSINCOS_LIMIT ? sinf (x[i]) :
              tt_vsinf (x[i]));
        break;
      }
      for (size_t i = 0; i < n; i++)
        dx[i] = -dy[i] * tt_vsinf (x[i]);
      unary_sincos_fixup (n, x, dx, dy, false, -1.0f);
      break;
    case TT_UNARY_TAN:
      for (size_t i = 0; i < n; i++)
        dx[i] = dy[i] * (1.0f + y[i] * y[i]);
      break;
    case TT_UNARY_POW:
      switch (unary_pow_kind_of (e)) {
        case POW_IDENTITY:
          for (size_t i = 0; i < n; i++)
            dx[i] = dy[i];
          break;
        case POW_SQUARE:
          for (size_t i = 0; i < n; i++)
            dx[i] = dy[i] * 2.0f * x[i];
          break;
        case POW_CUBE:
          for (size_t i = 0; i < n; i++)
            dx[i] = dy[i] * 3.0f * (x[i] * x[i]);
          break;
        case POW_RECIP:
          for (size_t i = 0; i < n; i++)
            dx[i] = -dy[i] / (x[i] * x[i]);
          break;
        case POW_RECIP_SQUARE:
          for (size_t i = 0; i < n; i++)
            dx[i] = -2.0f * dy[i] / (x[i] * x[i] * x[i]);
          break;
        case POW_SQRT:
          for (size_t i = 0; i < n; i++)
            dx[i] = dy[i] * 0.5f / sqrtf (x[i]);
          break;
        case POW_RSQRT:
          for (size_t i = 0; i < n; i++)
            dx[i] = -0.5f * dy[i] / (x[i] * sqrtf (x[i]));
          break;
        case POW_GENERAL:
          for (size_t i = 0; i < n; i++)
            dx[i] = dy[i] * e * powf (x[i], e - 1.0f);
          break;
      }
      break;
  }
}

typedef struct
{
  tt_unary fn;
  float e;
  const float *x, *y, *dy;
  float *out;
} unary_job;

static void
unary_forward_range (void *arg, size_t begin, size_t end)
{
  const unary_job *j = arg;
  unary_forward_block (j->fn, end - begin, j->x + begin, j->out + begin, j->e);
}

static void
unary_backward_range (void *arg, size_t begin, size_t end)
{
  const unary_job *j = arg;
  unary_backward_block (j->fn, end - begin, j->x ? j->x + begin : NULL,
      j->y ? j->y + begin : NULL, j->dy + begin, j->out + begin, j->e);
}

void
tt_unary_forward (tt_threads * pool, tt_unary fn, float exponent, size_t n,
    const float *x, float *y)
{
  unary_job j = { fn, exponent, x, NULL, NULL, y };
  tt_split (pool, n, 64, TT_ELEMENTWISE_SPLIT_MIN, unary_forward_range, &j);
}

void
tt_unary_backward (tt_threads * pool, tt_unary fn, float exponent, size_t n,
    const float *x, const float *y, const float *dy, float *dx)
{
  unary_job j = { fn, exponent, x, y, dy, dx };
  tt_split (pool, n, 64, TT_ELEMENTWISE_SPLIT_MIN, unary_backward_range, &j);
}

/* ---- sums over one axis ---------------------------------------------- */

typedef struct
{
  size_t r, inner;
  float scale;
  const float *x;
  float *y;
} reduce_job;

/* y[o][i] = scale * sum_r x[o][r][i]: rows o of r x inner values; the
 * inner values side by side (vectors), or with inner 1 eight partial
 * sums */
static TT_VECTOR_CLONES void
reduce_rows (size_t rows, size_t r, size_t inner, float scale,
    const float *x, float *y)
{
  for (size_t o = 0; o < rows; o++) {
    const float *xo = x + o * r * inner;
    float *yo = y + o * inner;
    if (inner == 1) {
      float acc[8] = { 0 };
      size_t k = 0;
      for (; k + 8 <= r; k += 8)
        for (size_t q = 0; q < 8; q++)
          acc[q] += xo[k + q];
      float s = 0.0f;
      for (; k < r; k++)
        s += xo[k];
      yo[0] = scale * (((acc[0] + acc[1]) + (acc[2] + acc[3])) +
          ((acc[4] + acc[5]) + (acc[6] + acc[7])) + s);
      continue;
    }
    for (size_t i = 0; i < inner; i++)
      yo[i] = xo[i];
    for (size_t k = 1; k < r; k++)
      for (size_t i = 0; i < inner; i++)
        yo[i] += xo[k * inner + i];
    for (size_t i = 0; i < inner; i++)
      yo[i] *= scale;
  }
}

static void
reduce_forward_range (void *arg, size_t begin, size_t end)
{
  const reduce_job *j = arg;
  const size_t unit = j->r * j->inner;
  reduce_rows ((end - begin) / unit, j->r, j->inner, j->scale, j->x + begin,
      j->y + begin / unit * j->inner);
}

/* dx[o][r][i] = scale * dy[o][i] */
static TT_VECTOR_CLONES void
reduce_spread_rows (size_t rows, size_t r, size_t inner, float scale,
    const float *dy, float *dx)
{
  for (size_t o = 0; o < rows; o++)
    for (size_t k = 0; k < r; k++) {
      float *d = dx + (o * r + k) * inner;
      const float *g = dy + o * inner;
      for (size_t i = 0; i < inner; i++)
        d[i] = scale * g[i];
    }
}

static void
reduce_backward_range (void *arg, size_t begin, size_t end)
{
  const reduce_job *j = arg;
  const size_t unit = j->r * j->inner;
  reduce_spread_rows ((end - begin) / unit, j->r, j->inner, j->scale,
      j->x + begin / unit * j->inner, j->y + begin);
}

void
tt_reduce_forward (tt_threads * pool, size_t outer, size_t r, size_t inner,
    float scale, const float *x, float *y)
{
  reduce_job j = { r, inner, scale, x, y };
  tt_split (pool, outer * r * inner, r * inner, TT_ELEMENTWISE_SPLIT_MIN,
      reduce_forward_range, &j);
}

void
tt_reduce_backward (tt_threads * pool, size_t outer, size_t r, size_t inner,
    float scale, const float *dy, float *dx)
{
  reduce_job j = { r, inner, scale, dy, dx };
  tt_split (pool, outer * r * inner, r * inner, TT_ELEMENTWISE_SPLIT_MIN,
      reduce_backward_range, &j);
}
