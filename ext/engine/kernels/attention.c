/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scaled dot-product attention, head by head: for head h of sample b,
 * P = softmax (scale Q K^T + mask) (row by row; causal: the columns past
 * the row's index left out, PyTorch's tril of ones), O = (P * drop) V,
 * drop being the dropout's multipliers when given: a byte mask, 1 / (1 -
 * rate) (drop_keep) where it is 1, 0.0f where 0 (tt_dropout_apply).
 * Q, K, V and O are addressed by strides (tt_attention): a layer's
 * [B][L][H * d] projections (multi_head_attention) and [B][C][L][d]
 * inputs (attention) alike, without transposes.
 *
 * The products are one-thread tt_gemm calls per head (with gemm_bf16,
 * tt_gemm_bf16_small_mixed: their inputs, the scaled P and dS included,
 * rounded to bf16, sums in fp32; softmax, mask and dropout stay fp32,
 * and the fp32 path is unchanged; Q, K and V may be held in the half
 * format already, qkv_half, read as they are: the same bits; so may P
 * for backward, probs_half, which the softmax's derivative then reads
 * rounded); the softmax runs
 * over each score row while it is in cache: its maximum, then the
 * exponentials and their sum in one pass (vmath.h's exp), then the
 * normalization. P is kept (probs) for backward, which needs nothing else
 * of the forward but Q, K and V: dV = (P * drop)^T dO, dP = (dO V^T) *
 * drop, dS = P (dP - rowsum (dP P)), dQ = scale dS K, dK = scale dS^T Q.
 * The weights as an output (multi_head_attention's
 * return_attention_weight), W = P or P * drop, averaged over the heads or
 * not: their derivative dW (divided by the heads when averaged) is added
 * to dP, before the dropout's multipliers for P * drop, after them for P.
 *
 * Threads: the (sample, head) pairs split into contiguous ranges, each a
 * part of one tt_threads_run job; every pair's arithmetic is the same
 * whatever the split, so results are bit-identical to one thread's.
 */
#include "tt_layer.h"
#include "tt_split.h"
#include "tt_test_hooks.h"
#include "vmath.h"

#include <math.h>
#include <string.h>

/* multiply-adds of a job from which it is split over the threads */
#define ATTN_SPLIT_MIN (64 * 1024)

/* The rows' arithmetic on 8-float vectors (GCC's vector extensions: SSE,
 * AVX or AVX-512 registers on x86 as the clone's target allows, two NEON
 * registers on arm64), the maximum and sum kept in one vector register.
 * GCC does not reassociate a float sum or maximum without -ffast-math, so
 * a plain loop stays scalar, and a loop over an array of lanes is spilled
 * and re-read: at the 16-token rows of a small transformer that cost
 * about 50 ns a row, these about 25 (x86-64-v4 clone). */
typedef float attn_v8 __attribute__((vector_size (32)));
typedef uint32_t attn_v8u __attribute__((vector_size (32)));
typedef int32_t attn_v8i __attribute__((vector_size (32)));
/* an attn_v8 at any float's address (loads and stores of rows) */
typedef float attn_v8_any
    __attribute__((vector_size (32), aligned (4), may_alias));

/* Vectors go through pointers and macros, never through a call's
 * arguments or result: GCC warns (-Wpsabi, which no pragma silences)
 * that such a call passes 32 bytes differently with AVX and without. */
#define ATTN_V8_LOAD(p) (*(const attn_v8_any *) (p))
#define ATTN_V8_STORE(p, v) (*(attn_v8_any *) (p) = (v))
/* b where m is set (all ones), else a */
#define ATTN_V8_SELECT(m, b, a) \
  ((attn_v8) (((attn_v8i) (a) & ~(m)) | ((attn_v8i) (b) & (m))))

/* tt_vexpf on 8 lanes, in place: the same operations in the same order
 * (NaN stays NaN: it compares false with both bounds) */
TT_ALWAYS_INLINE void
attn_v8_exp (attn_v8 * v)
{
  attn_v8 x = *v;
  const attn_v8 lo = x - x - 87.0f, hi = x - x + 88.0f;
  x = ATTN_V8_SELECT (x < lo, lo, x);
  x = ATTN_V8_SELECT (x > hi, hi, x);
  const attn_v8 shifted = x * 1.44269504088896341f + 12582912.0f;
  const attn_v8 k = shifted - 12582912.0f;
  const attn_v8 r = (x - k * 0.693145751953125f) - k * 1.42860682028622682e-6f;
  const attn_v8 p = 1.0f + r * (1.0f + r * (0.5f + r *
          (1.66666666666666667e-1f + r * (4.16666666666666667e-2f + r *
                  (8.33333333333333333e-3f + r * 1.38888888888888889e-3f)))));
  const attn_v8u bits = ((attn_v8u) shifted - 0x4b400000u + 127u) << 23;
  *v = p * (attn_v8) bits;
}

TT_ALWAYS_INLINE float
attn_v8_max (const attn_v8 * v)
{
  float m = (*v)[0];
  for (int k = 1; k < 8; k++)
    m = (*v)[k] > m ? (*v)[k] : m;
  return m;
}

TT_ALWAYS_INLINE float
attn_v8_sum (const attn_v8 * v)
{
  return (((*v)[0] + (*v)[4]) + ((*v)[1] + (*v)[5])) + (((*v)[2] + (*v)[6])
      + ((*v)[3] + (*v)[7]));
}

/* the softmax of s[0 .. n) in place, columns from valid on zeroed: the
 * mask added and the row's maximum in one pass, the exponentials and
 * their sum in the next, then the normalization */
TT_VECTOR_CLONES static void
attn_softmax_row (float *s, const float *mask, int n, int valid)
{
  attn_v8 mx = { -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
    -INFINITY, -INFINITY, -INFINITY
  };
  int j = 0;
  for (; j + 8 <= valid; j += 8) {
    attn_v8 v = ATTN_V8_LOAD (s + j);
    if (mask)
      v += ATTN_V8_LOAD (mask + j);
    ATTN_V8_STORE (s + j, v);
    mx = ATTN_V8_SELECT (v > mx, v, mx);
  }
  float m = attn_v8_max (&mx);
  for (; j < valid; j++) {
    const float v = s[j] + (mask ? mask[j] : 0.0f);
    s[j] = v;
    m = v > m ? v : m;
  }
  attn_v8 acc = { 0 };
  for (j = 0; j + 8 <= valid; j += 8) {
    attn_v8 e = ATTN_V8_LOAD (s + j) - m;
    attn_v8_exp (&e);
    ATTN_V8_STORE (s + j, e);
    acc += e;
  }
  float tail = 0.0f;
  for (; j < valid; j++) {
    const float e = tt_vexpf (s[j] - m);
    s[j] = e;
    tail += e;
  }
  const float inv = 1.0f / (attn_v8_sum (&acc) + tail);
  for (j = 0; j + 8 <= valid; j += 8)
    ATTN_V8_STORE (s + j, ATTN_V8_LOAD (s + j) * inv);
  for (; j < valid; j++)
    s[j] *= inv;
  for (j = valid; j < n; j++)
    s[j] = 0.0f;
}

/* dS = P (dP - sum (dP P)) in place of dP, over a row of n */
TT_VECTOR_CLONES static void
attn_softmax_backward_row (const float *p, float *d, int n)
{
  attn_v8 acc = { 0 };
  int j = 0;
  for (; j + 8 <= n; j += 8)
    acc += ATTN_V8_LOAD (p + j) * ATTN_V8_LOAD (d + j);
  float dot = attn_v8_sum (&acc);
  for (; j < n; j++)
    dot += p[j] * d[j];
  for (j = 0; j + 8 <= n; j += 8)
    ATTN_V8_STORE (d + j, ATTN_V8_LOAD (p + j) * (ATTN_V8_LOAD (d + j) - dot));
  for (; j < n; j++)
    d[j] = p[j] * (d[j] - dot);
}

/* The softmax rows with AVX-512, where the CPU has it: a row is one
 * 16-float vector (or a few), its maximum and sum reduced in registers.
 * The portable rows above keep their lanes' partial maxima and sums in
 * an array that the compiler spills, and the scalar reads of a vector's
 * store stall: at the short rows of a small transformer (16 tokens) a
 * row cost about 75 ns, three quarters of the attention's forward (the
 * zoo transformer's 2048 rows a layer, 155 us a step on one thread, now
 * about 10). The same arithmetic as tt_vexpf (multiplies and adds, not
 * fused), the sums in another order (the last bit may differ). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ATTN_T512 __attribute__ ((target ("avx512f")))
#define ATTN_T512_INLINE static inline \
  __attribute__ ((always_inline, target ("avx512f")))

ATTN_T512_INLINE __mmask16
attn_mask16 (int n)
{
  return n >= 16 ? (__mmask16) 0xffff : n <= 0 ? 0 :
      (__mmask16) ((1u << n) - 1);
}

/* tt_vexpf on 16 lanes */
ATTN_T512_INLINE __m512
attn_exp16 (__m512 x)
{
  /* max (c, x), min (c, x): NaN x passes through, as in tt_vexpf */
  x = _mm512_max_ps (_mm512_set1_ps (-87.0f), x);
  x = _mm512_min_ps (_mm512_set1_ps (88.0f), x);
  const __m512 big = _mm512_set1_ps (12582912.0f);
  const __m512 shifted = _mm512_add_ps (_mm512_mul_ps (x,
          _mm512_set1_ps (1.44269504088896341f)), big);
  const __m512 k = _mm512_sub_ps (shifted, big);
  const __m512 r = _mm512_sub_ps (_mm512_sub_ps (x, _mm512_mul_ps (k,
              _mm512_set1_ps (0.693145751953125f))), _mm512_mul_ps (k,
          _mm512_set1_ps (1.42860682028622682e-6f)));
  __m512 p = _mm512_set1_ps (1.38888888888888889e-3f);
  static const float c[6] = { 8.33333333333333333e-3f,
    4.16666666666666667e-2f, 1.66666666666666667e-1f, 0.5f, 1.0f, 1.0f
  };
  for (int i = 0; i < 6; i++)
    p = _mm512_add_ps (_mm512_set1_ps (c[i]), _mm512_mul_ps (r, p));
  const __m512i bits = _mm512_slli_epi32 (_mm512_add_epi32
      (_mm512_castps_si512 (shifted), _mm512_set1_epi32 (127 - 0x4b400000)),
      23);
  return _mm512_mul_ps (p, _mm512_castsi512_ps (bits));
}

/* attn_softmax_row's result for rows rows of n, row i's first valid (i)
 * columns kept (valid (i) = n, or i + 1 when causal), mask rows alike
 * (or NULL) */
ATTN_T512 static void
attn_softmax_rows512 (float *s, const float *mask, int rows, int n, bool causal)
{
  for (int i = 0; i < rows; i++) {
    float *r = s + (size_t) i * n;
    const float *mr = mask ? mask + (size_t) i * n : NULL;
    const int valid = causal && i + 1 < n ? i + 1 : n;
    __m512 mx = _mm512_set1_ps (-INFINITY);
    for (int j = 0; j < valid; j += 16) {
      const __mmask16 m = attn_mask16 (valid - j);
      __m512 v = _mm512_maskz_loadu_ps (m, r + j);
      if (mr)
        v = _mm512_add_ps (v, _mm512_maskz_loadu_ps (m, mr + j));
      _mm512_mask_storeu_ps (r + j, m, v);
      mx = _mm512_mask_max_ps (mx, m, v, mx);
    }
    const __m512 mv = _mm512_set1_ps (_mm512_reduce_max_ps (mx));
    __m512 acc = _mm512_setzero_ps ();
    for (int j = 0; j < valid; j += 16) {
      const __mmask16 m = attn_mask16 (valid - j);
      const __m512 e = attn_exp16 (_mm512_sub_ps (_mm512_maskz_loadu_ps (m,
                  r + j), mv));
      _mm512_mask_storeu_ps (r + j, m, e);
      acc = _mm512_mask_add_ps (acc, m, acc, e);
    }
    const __m512 inv = _mm512_set1_ps (1.0f / _mm512_reduce_add_ps (acc));
    for (int j = 0; j < n; j += 16) {
      const __mmask16 m = attn_mask16 (n - j);
      /* zero from valid on */
      const __mmask16 keep = attn_mask16 (valid - j);
      _mm512_mask_storeu_ps (r + j, m, _mm512_maskz_mul_ps (keep,
              _mm512_maskz_loadu_ps (keep, r + j), inv));
    }
  }
}

/* attn_softmax_backward_row over rows rows of n */
ATTN_T512 static void
attn_softmax_backward_rows512 (const float *p, float *d, int rows, int n)
{
  for (int i = 0; i < rows; i++) {
    const float *pr = p + (size_t) i * n;
    float *dr = d + (size_t) i * n;
    __m512 acc = _mm512_setzero_ps ();
    for (int j = 0; j < n; j += 16) {
      const __mmask16 m = attn_mask16 (n - j);
      acc = _mm512_fmadd_ps (_mm512_maskz_loadu_ps (m, pr + j),
          _mm512_maskz_loadu_ps (m, dr + j), acc);
    }
    const __m512 dot = _mm512_set1_ps (_mm512_reduce_add_ps (acc));
    for (int j = 0; j < n; j += 16) {
      const __mmask16 m = attn_mask16 (n - j);
      _mm512_mask_storeu_ps (dr + j, m, _mm512_mul_ps (_mm512_maskz_loadu_ps
              (m, pr + j), _mm512_sub_ps (_mm512_maskz_loadu_ps (m, dr + j),
                  dot)));
    }
  }
}

/* the tests' switch to the rows every CPU runs (tt_test_hooks.h) */
static bool attn_portable_forced;

void
tt_attention_force_portable (bool on)
{
  attn_portable_forced = on;
}

/* (reads what libgcc's constructor found: no race between threads) */
static bool
attn_has_avx512 (void)
{
  return !attn_portable_forced && __builtin_cpu_supports ("avx512f");
}
#else
void
tt_attention_force_portable (bool on)
{
  (void) on;
}

static bool
attn_has_avx512 (void)
{
  return false;
}

static void
attn_softmax_rows512 (float *s, const float *mask, int rows, int n, bool causal)
{
  (void) s, (void) mask, (void) rows, (void) n, (void) causal;
}

static void
attn_softmax_backward_rows512 (const float *p, float *d, int rows, int n)
{
  (void) p, (void) d, (void) rows, (void) n;
}
#endif

/* y += s x */
TT_VECTOR_CLONES static void
attn_add_scaled (const float *x, float s, float *y, size_t n)
{
  for (size_t i = 0; i < n; i++)
    y[i] += s * x[i];
}

/* one product of a head, in a->gemm_inputs */
static void
attn_gemm (const tt_attention * a, bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, tt_gemm_operand x, tt_gemm_operand y, float beta,
    float *c, int ldc)
{
  tt_gemm_as_small_mixed (a->gemm_inputs, trans_a, trans_b, m, n, k, alpha,
      x, y, beta, c, ldc);
}

static tt_gemm_operand
attn_fp32 (const float *p, int ld)
{
  return tt_gemm_fp32_operand (p, ld);
}

/* Q, K or V (base) from element off on, row stride ld */
static tt_gemm_operand
attn_qkv (const tt_attention * a, const void *base, size_t off, int ld)
{
  if (a->qkv_half)
    return tt_gemm_half_operand ((const uint16_t *) base + off, ld);
  return tt_gemm_fp32_operand ((const float *) base + off, ld);
}

static void
attn_forward_pair (const tt_attention * a, size_t pair)
{
  const size_t b = pair / (size_t) a->heads, h = pair % (size_t) a->heads;
  const size_t plane = (size_t) a->lq * a->lk;
  const tt_gemm_operand q = attn_qkv (a, a->q, b * a->q_bs + h * a->q_hs,
      a->q_ld);
  const tt_gemm_operand k = attn_qkv (a, a->k, b * a->k_bs + h * a->k_hs,
      a->k_ld);
  const tt_gemm_operand v = attn_qkv (a, a->v, b * a->v_bs + h * a->v_hs,
      a->v_ld);
  float *o = a->o + b * a->o_bs + h * a->o_hs;
  float *p = a->probs + pair * plane;
  const float *mask = a->mask ? a->mask + pair * plane : NULL;
  attn_gemm (a, false, true, a->lq, a->lk, a->dk, a->scale, q, k, 0.0f, p,
      a->lk);
  if (attn_has_avx512 ())
    attn_softmax_rows512 (p, mask, a->lq, a->lk, a->causal);
  else
    for (int i = 0; i < a->lq; i++) {
      const int valid = a->causal && i + 1 < a->lk ? i + 1 : a->lk;
      attn_softmax_row (p + (size_t) i * a->lk,
          mask ? mask + (size_t) i * a->lk : NULL, a->lk, valid);
    }
  const float *pv = p;
  if (a->drop) {
    float *pd = a->dropped + pair * plane;
    tt_dropout_apply (p, a->drop + pair * plane, a->drop_keep, pd, plane);
    pv = pd;
  }
  attn_gemm (a, false, false, a->lq, a->dv, a->lk, 1.0f, attn_fp32 (pv,
          a->lk), v, 0.0f, o, a->o_ld);
}

/* the softmax's derivative of a head whose P is held at half width (ph):
 * as many rows as TT_ATTENTION_HALF_ROW floats hold widened (exactly) at
 * a time (a 16 x 16 head at once: one conversion call, not 16), and run
 * as fp32 ones */
static void
attn_softmax_backward_half (const tt_attention * a, const uint16_t * ph,
    float *ds)
{
  float rows[TT_ATTENTION_HALF_ROW];
  const bool wide = attn_has_avx512 ();
  const int lk = a->lk, per = TT_ATTENTION_HALF_ROW / lk;
  for (int i0 = 0; i0 < a->lq; i0 += per) {
    const int n = a->lq - i0 < per ? a->lq - i0 : per;
    float *d = ds + (size_t) i0 * lk;
    tt_widen_as (a->gemm_inputs, ph + (size_t) i0 * lk, rows, (size_t) n * lk);
    if (wide)
      attn_softmax_backward_rows512 (rows, d, n, lk);
    else
      for (int i = 0; i < n; i++)
        attn_softmax_backward_row (rows + (size_t) i * lk, d + (size_t) i * lk,
            lk);
  }
}

typedef struct
{
  const tt_attention *a;
  const float *dout;
  float *dq, *dk, *dv, *dmask, *dscores;
} attn_back;

static void
attn_backward_pair (const attn_back * j, size_t pair)
{
  const tt_attention *a = j->a;
  const size_t b = pair / (size_t) a->heads, h = pair % (size_t) a->heads;
  const size_t plane = (size_t) a->lq * a->lk;
  const size_t qo = b * a->q_bs + h * a->q_hs, ko = b * a->k_bs + h * a->k_hs,
      vo = b * a->v_bs + h * a->v_hs;
  const float *dout = j->dout + b * a->o_bs + h * a->o_hs;
  const uint16_t *ph = a->probs_half ? a->probs_half + pair * plane : NULL;
  const float *p = ph ? NULL : a->probs + pair * plane;
  float *ds = j->dscores + pair * plane;
  /* dV = (P * drop)^T dO, with the dropped P in the scores' place */
  tt_gemm_operand pv = ph ? tt_gemm_half_operand (ph, a->lk) : attn_fp32 (p,
      a->lk);
  if (a->drop) {
    if (ph) {
      tt_widen_as (a->gemm_inputs, ph, ds, plane);
      tt_dropout_apply (ds, a->drop + pair * plane, a->drop_keep, ds, plane);
    } else {
      tt_dropout_apply (p, a->drop + pair * plane, a->drop_keep, ds, plane);
    }
    pv = attn_fp32 (ds, a->lk);
  }
  if (j->dv)
    attn_gemm (a, true, false, a->lk, a->dv, a->lq, 1.0f, pv,
        attn_fp32 (dout, a->o_ld), 0.0f, j->dv + vo, a->v_ld);
  /* dP = (dO V^T) * drop, then dS through the softmax */
  attn_gemm (a, false, true, a->lq, a->lk, a->dv, 1.0f, attn_fp32 (dout,
          a->o_ld), attn_qkv (a, a->v, vo, a->v_ld), 0.0f, ds, a->lk);
  const float *dw = NULL;
  float dw_scale = 1.0f;
  if (a->dweights) {
    dw = a->dweights + (a->weights_mean ? b : pair) * plane;
    dw_scale = a->weights_mean ? 1.0f / (float) a->heads : 1.0f;
  }
  if (dw && (a->weights_after || !a->drop))
    attn_add_scaled (dw, dw_scale, ds, plane);
  if (a->drop)
    tt_dropout_apply (ds, a->drop + pair * plane, a->drop_keep, ds, plane);
  if (dw && !a->weights_after && a->drop)
    attn_add_scaled (dw, dw_scale, ds, plane);
  if (ph)
    attn_softmax_backward_half (a, ph, ds);
  else if (attn_has_avx512 ())
    attn_softmax_backward_rows512 (p, ds, a->lq, a->lk);
  else
    for (int i = 0; i < a->lq; i++)
      attn_softmax_backward_row (p + (size_t) i * a->lk,
          ds + (size_t) i * a->lk, a->lk);
  if (j->dmask)
    memcpy (j->dmask + pair * plane, ds, plane * sizeof *ds);
  /* dQ = scale dS K; dK = scale dS^T Q (added to dV when key is value) */
  if (j->dq)
    attn_gemm (a, false, false, a->lq, a->dk, a->lk, a->scale, attn_fp32 (ds,
            a->lk), attn_qkv (a, a->k, ko, a->k_ld), 0.0f, j->dq + qo, a->q_ld);
  if (j->dk)
    attn_gemm (a, true, false, a->lk, a->dk, a->lq, a->scale, attn_fp32 (ds,
            a->lk), attn_qkv (a, a->q, qo, a->q_ld), j->dk == j->dv &&
        a->k == a->v ? 1.0f : 0.0f, j->dk + ko, a->k_ld);
}

typedef struct
{
  const tt_attention *a;
  const attn_back *back;
  size_t pairs;
} attn_job;

static void
attn_part (void *arg, unsigned part, unsigned n_parts)
{
  const attn_job *j = arg;
  size_t begin, end;
  tt_threads_range (j->pairs, 1, part, n_parts, &begin, &end);
  for (size_t i = begin; i < end; i++) {
    if (j->back)
      attn_backward_pair (j->back, i);
    else
      attn_forward_pair (j->a, i);
  }
}

static void
attn_run (const tt_attention * a, const attn_back * back)
{
  attn_job j = { a, back, (size_t) a->batch * a->heads };
  const double work = (double) j.pairs * a->lq * a->lk * (a->dk + a->dv);
  const unsigned parts = work < ATTN_SPLIT_MIN ? 1 :
      tt_threads_parts (a->threads, j.pairs, 2);
  if (parts <= 1 || !a->threads)
    attn_part (&j, 0, 1);
  else
    tt_threads_run (a->threads, attn_part, &j, parts);
}

void
tt_attention_forward (const tt_attention * a)
{
  attn_run (a, NULL);
}

void
tt_attention_backward (const tt_attention * a, const float *dout, float *dq,
    float *dk, float *dv, float *dmask, float *dscores)
{
  attn_back back = { a, dout, dq, dk, dv, dmask, dscores };
  attn_run (a, &back);
}

typedef struct
{
  const float *w;
  float *out;
  size_t plane, heads;
  bool mean;
} attn_weights_job;

/* samples [begin, end) of the returned weights */
static void
attn_weights_range (void *arg, size_t begin, size_t end)
{
  const attn_weights_job *j = arg;
  const size_t plane = j->plane, heads = j->heads;
  if (!j->mean) {
    memcpy (j->out + begin * heads * plane, j->w + begin * heads * plane,
        (end - begin) * heads * plane * sizeof *j->out);
    return;
  }
  const float inv = 1.0f / (float) heads;
  for (size_t b = begin; b < end; b++) {
    float *o = j->out + b * plane;
    memset (o, 0, plane * sizeof *o);
    for (size_t h = 0; h < heads; h++)
      attn_add_scaled (j->w + (b * heads + h) * plane, inv, o, plane);
  }
}

void
tt_attention_weights (const tt_attention * a, bool after, bool mean, float *out)
{
  attn_weights_job j = {
    .w = after && a->drop ? a->dropped : a->probs,.out = out,
    .plane = (size_t) a->lq * a->lk,.heads = (size_t) a->heads,.mean = mean
  };
  const size_t per = j.plane * j.heads;
  tt_split (a->threads, (size_t) a->batch, 1, (size_t) a->batch * per >=
      ATTN_SPLIT_MIN ? 1 : SIZE_MAX, attn_weights_range, &j);
}
