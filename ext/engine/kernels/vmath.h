/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Branch-free expf, tanhf, sinf, cosf and the normal distribution
 * function for element-wise loops. glibc's tanhf costs
 * about 24 ns a value here, one value at a time (its vector variants are
 * declared only under -ffast-math), and was most of an LSTM's training
 * time; these are plain arithmetic the compiler vectorizes, within a few
 * ulp (test_kernels measures them against double precision), and keep
 * NaN as NaN so numeric faults still show.
 */
#ifndef TT_VMATH_H
#define TT_VMATH_H

#include <stdint.h>
#include <string.h>

/* e^x, x clamped to [-87, 88] (e^-87 and e^88 are normal floats): x = k ln2
 * + r with |r| <= ln2 / 2 (ln2 in two parts, so k ln2 is exact), e^r by
 * its Taylor polynomial to r^6 (next term below 1.2e-7), 2^k from the
 * exponent bits. */
static inline float
tt_vexpf (float x)
{
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  /* round to nearest by adding 1.5 * 2^23: the sum's low mantissa bits
   * then hold k (no libm call, no float-to-int conversion) */
  const float shifted = x * 1.44269504088896341f + 12582912.0f;
  const float k = shifted - 12582912.0f;
  const float r = (x - k * 0.693145751953125f) - k * 1.42860682028622682e-6f;
  const float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666666666666667e-1f
              + r * (4.16666666666666667e-2f + r * (8.33333333333333333e-3f
                      + r * 1.38888888888888889e-3f)))));
  /* NaN: the bits give some scale; p carries the NaN */
  uint32_t kbits;
  memcpy (&kbits, &shifted, sizeof kbits);
  const uint32_t bits = (kbits - 0x4b400000u + 127u) << 23;
  float scale;
  memcpy (&scale, &bits, sizeof scale);
  return p * scale;
}

/* tanh x: below |x| = 0.5 its odd Taylor series to x^13 (next term below
 * 5e-8 of the value), above it (e^2|x| - 1) / (e^2|x| + 1) with |x|
 * clamped to 9 (tanh is 1 in float from 9.01 on), the sign put back. */
static inline float
tt_vtanhf (float x)
{
  const float a = x < 0.0f ? -x : x;
  const float x2 = x * x;
  const float small = x * (1.0f + x2 * (-3.33333333333333333e-1f
          + x2 * (1.33333333333333333e-1f + x2 * (-5.39682539682539683e-2f
                  + x2 * (2.18694885361552028e-2f + x2 *
                      (-8.86323552990219657e-3f + x2 *
                          3.59212803657248102e-3f))))));
  const float e = tt_vexpf (2.0f * (a > 9.0f ? 9.0f : a));
  const float big = (e - 1.0f) / (e + 1.0f);
  return a < 0.5f ? small : (x < 0.0f ? -big : big);
}

/* 1 / (1 + e^-x) */
static inline float
tt_vsigmoidf (float x)
{
  return 1.0f / (1.0f + tt_vexpf (-x));
}

/* e^x - 1: below |x| = ln 3 its Taylor series to x^12 (next term below
 * 1e-9 of the value), above it tt_vexpf (x) - 1 (where e^x - 1 is at
 * least 2, or e^x at most 1/3, so the subtraction costs no bit). */
static inline float
tt_vexpm1f (float x)
{
  const float a = x < 0.0f ? -x : x;
  const float small = x * (1.0f + x * (0.5f + x * (1.66666666666666667e-1f
              + x * (4.16666666666666667e-2f + x * (8.33333333333333333e-3f
                      + x * (1.38888888888888889e-3f
                          + x * (1.98412698412698413e-4f
                              + x * (2.48015873015873016e-5f
                                  + x * (2.75573192239858907e-6f
                                      + x * (2.75573192239858907e-7f
                                          + x * (2.50521083854417188e-8f
                                              + x *
                                              2.08767569878680990e-9f)))))))))));
  const float big = tt_vexpf (x) - 1.0f;
  return a < 1.0986123f ? small : big;
}

/* ln (1 + u), u > -1: w = 1 + u rounded = 2^k m with m in [sqrt(1/2),
 * sqrt 2), ln m = 2 atanh s = 2 (s + s^3/3 + ... + s^11/11) with s =
 * (m - 1) / (m + 1), |s| <= 0.172 (next term below 2e-10); then the
 * rounding of 1 + u put back as (u - (w - 1)) / w. Finite u only; u near
 * 3e38 overflows w. */
static inline float
tt_vlog1pf (float u)
{
  const float w = 1.0f + u;
  uint32_t bits;
  memcpy (&bits, &w, sizeof bits);
  /* m in [1, 2), then halved above sqrt 2 (mantissa 0x3504f3) */
  const int32_t above = (bits & 0x7fffffu) > 0x3504f3u;
  const int32_t k = (int32_t) (bits >> 23) - 127 + above;
  const uint32_t mbits = (bits & 0x7fffffu) | (above ? 0x3f000000u :
      0x3f800000u);
  float m;
  memcpy (&m, &mbits, sizeof m);
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  const float lnm = 2.0f * s * (1.0f + s2 * (3.33333333333333333e-1f
          + s2 * (2.0e-1f + s2 * (1.42857142857142857e-1f
                  + s2 * (1.11111111111111111e-1f + s2 *
                      9.09090909090909091e-2f)))));
  return (float) k * 0.693147180559945309f + lnm + (u - (w - 1.0f)) / w;
}

/* |x| up to which tt_vsinf and tt_vcosf are accurate: the three-part
 * pi/2 below leaves k pi/2 exact for k < 2^13 (callers take libm's value
 * above it) */
#define TT_VSINCOS_LIMIT 8192.0f

/* sin x (cos = 0) or cos x (cos = 1) for |x| <= TT_VSINCOS_LIMIT: x = k
 * pi/2 + r with |r| <= pi/4 (pi/2 in three parts, Cody and Waite), sin r
 * and cos r by their minimax polynomials (Cephes' sinf and cosf, within
 * 2 ulp on [-pi/4, pi/4]), the one and the sign the quadrant k + cos
 * picks. Within 8 ulp up to |x| = 100, 1e-7 absolute up to the limit
 * (test_kernels). */
static inline float
tt_vsincosf (float x, int cos)
{
  const float shifted = x * 0.636619772367581343f + 12582912.0f;
  const float k = shifted - 12582912.0f;
  const float r = ((x - k * 1.5703125f) - k * 4.837512969970703125e-4f)
      - k * 7.54978995489188216e-8f;
  const float r2 = r * r;
  const float sin_r = r + r * r2 * (-1.6666654611e-1f + r2 *
      (8.3321608736e-3f + r2 * -1.9515295891e-4f));
  const float cos_r = 1.0f - 0.5f * r2 + r2 * r2 * (4.166664568298827e-2f
      + r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f));
  uint32_t kbits;
  memcpy (&kbits, &shifted, sizeof kbits);
  const uint32_t q = kbits + (uint32_t) cos;
  const float v = (q & 1u) ? cos_r : sin_r;
  return (q & 2u) ? -v : v;
}

static inline float
tt_vsinf (float x)
{
  return tt_vsincosf (x, 0);
}

static inline float
tt_vcosf (float x)
{
  return tt_vsincosf (x, 1);
}

/* The standard normal's distribution function Phi (x) = erfc (-x / sqrt 2)
 * / 2 through Numerical Recipes' Chebyshev-fitted erfc (z >= 0: t = 1 / (1
 * + z / 2), erfc z = t e^(-z^2 + poly (t)), fractional error below 1.2e-7
 * for every z): for x < 0 Phi (x) = erfc (|z|) / 2 keeps its relative
 * precision far into the tail (where 1 + erff cancels: 5% off at x = -5),
 * for x >= 0 1 - erfc (z) / 2. z^2 = x^2 / 2 is taken exactly as qh + ql
 * (x split at 12 mantissa bits: qh's product is exact) and e^-qh kept
 * apart, since a float near z^2 = 80 is only good to 1e-7 x 80. Below x =
 * -13.2 (Phi < 1e-38) tt_vexpf's and the |x| clamp leave a value too
 * large, still below 1e-37. Branch-free, for gelu's loops (glibc's erff is a call a
 * value and does not vectorize). NaN stays NaN. */
static inline float
tt_vnormcdff (float x)
{
  /* |x| clamped to 14 (Phi (14) is 1 in float): no inf - inf below */
  const float ax = x < 0.0f ? -x : x;
  const float a = ax > 14.0f ? 14.0f : ax;
  uint32_t bits;
  memcpy (&bits, &a, sizeof bits);
  bits &= 0xfffff000u;
  float hi;
  memcpy (&hi, &bits, sizeof hi);
  const float lo = a - hi;
  const float qh = 0.5f * hi * hi, ql = hi * lo + 0.5f * lo * lo;
  const float t = 1.0f / (1.0f + 0.5f * 0.70710678118654752f * a);
  const float poly = -1.26551223f + t * (1.00002368f + t * (0.37409196f
          + t * (0.09678418f + t * (-0.18628806f + t * (0.27886807f
                      + t * (-1.13520398f + t * (1.48851587f
                              + t * (-0.82215223f + t * 0.17087277f))))))));
  const float half_erfc = 0.5f * t * tt_vexpf (-qh) * tt_vexpf (poly - ql);
  return x < 0.0f ? half_erfc : 1.0f - half_erfc;
}

#endif /* TT_VMATH_H */
