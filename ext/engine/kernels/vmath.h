/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Branch-free expf and tanhf for element-wise loops. glibc's tanhf costs
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

#endif /* TT_VMATH_H */
