/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conversions between fp32 and the 16-bit formats of mixed precision,
 * held as uint16_t: bfloat16 (fp32's sign and 8-bit exponent, 7 mantissa
 * bits) and IEEE binary16 (fp16: 5-bit exponent, 10 mantissa bits).
 *
 * Narrowing rounds to nearest, ties to even; values beyond the largest
 * finite one become infinities of their sign; subnormals of either side
 * are kept (an fp32 subnormal rounds to the nearest bf16 subnormal, an
 * fp32 below fp16's normal range to the nearest fp16 subnormal); a NaN
 * stays a NaN of its sign, made quiet, with the top of its payload. Every
 * path gives the same bits (tests/unit/test_bf16.c checks each against
 * exact references):
 *  - fp32 -> bf16: AVX-512 BF16's vcvtne2ps2bf16 where the CPU has it
 *    (checked at run time). The instruction flushes fp32 subnormals to
 *    zero, so a block of 32 holding one is done by the portable code
 *    instead; otherwise the integer rounding below, vectorized by the
 *    compiler (TT_VECTOR_CLONES).
 *  - fp32 <-> fp16: F16C's vcvtps2ph and vcvtph2ps where the CPU has them
 *    (x86-64, checked at run time), the conversion instructions of
 *    arm64's NEON (always there), portable integer code otherwise.
 *  - bf16 -> fp32 is exact: the bits move up 16 places.
 */
#include "kernels.h"
#include "tt_layer.h"
#include "tt_test_hooks.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define BF16_X86 1
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__)
#define BF16_ARM64 1
#include <arm_neon.h>
#include <sys/auxv.h>
/* (the kernel's numbers, for a libc whose headers predate them) */
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1ul << 10)
#endif
#ifndef HWCAP_ASIMDFHM
#define HWCAP_ASIMDFHM (1ul << 23)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1ul << 14)
#endif
#endif

static bool bf16_portable_forced;

void
tt_bf16_force_portable (bool on)
{
  bf16_portable_forced = on;
}

/* (x86-64: reads what libgcc's constructor found; arm64: the hardware
 * capabilities the kernel gave the process: no race between threads) */
bool
tt_bf16_hw_dot (void)
{
#ifdef BF16_X86
  return !bf16_portable_forced && __builtin_cpu_supports ("avx512bf16")
      && __builtin_cpu_supports ("avx512bw");
#elif defined(BF16_ARM64)
  return !bf16_portable_forced && (getauxval (AT_HWCAP2) & HWCAP2_BF16);
#else
  return false;
#endif
}

bool
tt_f16_hw_fmlal (void)
{
#ifdef BF16_ARM64
  return !bf16_portable_forced && (getauxval (AT_HWCAP) & HWCAP_ASIMDFHM);
#else
  return false;
#endif
}

bool
tt_f16_hw_arith (void)
{
#ifdef BF16_ARM64
  return !bf16_portable_forced && (getauxval (AT_HWCAP) & HWCAP_ASIMDHP);
#else
  return false;
#endif
}

#ifdef BF16_X86
/* F16C: clang's __builtin_cpu_supports does not know it, and cpuid is
 * slow in a virtual machine, so it is read once (0: not yet, 1: absent,
 * 2: present; threads racing to read it store the same value) */
static _Atomic int bf16_f16c_state;

static bool
bf16_has_f16c (void)
{
  int state = atomic_load_explicit (&bf16_f16c_state, memory_order_relaxed);
  if (!state) {
    unsigned eax, ebx, ecx, edx;
    state = __builtin_cpu_supports ("avx")
        && __get_cpuid (1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) ? 2 : 1;
    atomic_store_explicit (&bf16_f16c_state, state, memory_order_relaxed);
  }
  return state == 2;
}
#endif

#if defined(BF16_X86) || defined(BF16_ARM64)
static bool
f16_hw (void)
{
#ifdef BF16_X86
  return !bf16_portable_forced && bf16_has_f16c ();
#elif defined(BF16_ARM64)
  return !bf16_portable_forced;
#endif
}
#endif

/* ---- portable scalars (the references the vector paths must equal) ---- */

TT_ALWAYS_INLINE uint32_t
bits_of (float x)
{
  uint32_t u;
  memcpy (&u, &x, sizeof u);
  return u;
}

TT_ALWAYS_INLINE float
float_of (uint32_t u)
{
  float x;
  memcpy (&x, &u, sizeof x);
  return x;
}

TT_ALWAYS_INLINE uint16_t
bf16_narrow (uint32_t u)
{
  /* NaN: quiet bit set, the top of the payload kept */
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t) ((u >> 16) | 0x40u);
  /* adding just under half an ulp, plus the kept lsb, rounds to nearest
   * even; a carry out of the mantissa steps the exponent (to infinity
   * past the largest finite value) */
  return (uint16_t) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

TT_ALWAYS_INLINE uint16_t
f16_narrow (uint32_t u)
{
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u)          /* NaN: quiet, top of the payload */
    return (uint16_t) (sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u)         /* 65520 and beyond (or inf): infinity */
    return (uint16_t) (sign | 0x7c00u);
  if (a >= 0x38800000u) {       /* 2^-14 and up: a normal fp16 */
    const uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
    return (uint16_t) (sign | ((r >> 13) - (112u << 10)));
  }
  if (a <= 0x33000000u)         /* 2^-25 and below (a tie to 0): zero */
    return (uint16_t) sign;
  /* a subnormal fp16: units of 2^-24 out of the mantissa m * 2^(e-150) */
  const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;      /* 14..24 */
  const uint32_t half = 1u << (shift - 1), rem = m & ((half << 1) - 1);
  uint32_t q = m >> shift;
  if (rem > half || (rem == half && (q & 1u)))
    q++;
  return (uint16_t) (sign | q);
}

TT_ALWAYS_INLINE uint32_t
f16_widen (uint16_t h)
{
  const uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f)                /* inf, NaN (made quiet, as the CPUs do) */
    return sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0);
  if (e)
    return sign | ((e + 112u) << 23) | (m << 13);
  /* zero, subnormal: m * 2^-24, exact in fp32 */
  return sign | bits_of ((float) m * 0x1p-24f);
}

uint16_t
tt_bf16_from_f32 (float x)
{
  return bf16_narrow (bits_of (x));
}

float
tt_bf16_value (uint16_t h)
{
  return float_of ((uint32_t) h << 16);
}

uint16_t
tt_f16_from_f32 (float x)
{
  return f16_narrow (bits_of (x));
}

float
tt_f16_value (uint16_t h)
{
  return float_of (f16_widen (h));
}

static TT_VECTOR_CLONES void
bf16_narrow_run (const float *restrict x, uint16_t * restrict y, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy (&u, x + i, sizeof u);
    y[i] = bf16_narrow (u);
  }
}

static TT_VECTOR_CLONES void
bf16_widen_run (const uint16_t * restrict x, float *restrict y, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    const uint32_t u = (uint32_t) x[i] << 16;
    memcpy (y + i, &u, sizeof u);
  }
}

static TT_VECTOR_CLONES void
f16_narrow_run (const float *restrict x, uint16_t * restrict y, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy (&u, x + i, sizeof u);
    y[i] = f16_narrow (u);
  }
}

static TT_VECTOR_CLONES void
f16_widen_run (const uint16_t * restrict x, float *restrict y, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    const uint32_t u = f16_widen (x[i]);
    memcpy (y + i, &u, sizeof u);
  }
}

/* ---- the instructions ------------------------------------------------ */

#ifdef BF16_X86
#define TBF16 __attribute__ ((target ("avx512f,avx512bw,avx512bf16")))
#define TF16C __attribute__ ((target ("avx,f16c")))

/* whole blocks of 32; returns how many floats it did */
TBF16 static size_t
bf16_narrow_avx512 (const float *x, uint16_t * y, size_t n)
{
  const __m512i expo = _mm512_set1_epi32 (0x7f800000),
      mant = _mm512_set1_epi32 (0x007fffff);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 x0 = _mm512_loadu_ps (x + i), x1 = _mm512_loadu_ps (x + i +
        16);
    const __m512i u0 = _mm512_castps_si512 (x0), u1 = _mm512_castps_si512 (x1);
    /* subnormal lanes: zero exponent, non-zero mantissa */
    const __mmask16 s0 = _mm512_testn_epi32_mask (u0, expo)
        & _mm512_test_epi32_mask (u0, mant),
        s1 = _mm512_testn_epi32_mask (u1, expo)
        & _mm512_test_epi32_mask (u1, mant);
    if (s0 | s1)
      bf16_narrow_run (x + i, y + i, 32);
    else
      _mm512_storeu_si512 (y + i, (__m512i) _mm512_cvtne2ps_pbh (x1, x0));
  }
  return i;
}

TF16C static size_t
f16_narrow_f16c (const float *x, uint16_t * y, size_t n)
{
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128 ((__m128i *) (y + i),
        _mm256_cvtps_ph (_mm256_loadu_ps (x + i),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return i;
}

TF16C static size_t
f16_widen_f16c (const uint16_t * x, float *y, size_t n)
{
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps (y + i,
        _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (x + i))));
  return i;
}
#elif defined(BF16_ARM64)
static size_t
f16_narrow_f16c (const float *x, uint16_t * y, size_t n)
{
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1_u16 (y + i, vreinterpret_u16_f16 (vcvt_f16_f32 (vld1q_f32 (x + i))));
  return i;
}

static size_t
f16_widen_f16c (const uint16_t * x, float *y, size_t n)
{
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1q_f32 (y + i, vcvt_f32_f16 (vreinterpret_f16_u16 (vld1_u16 (x + i))));
  return i;
}
#endif

/* ---- arrays ---------------------------------------------------------- */

void
tt_f32_to_bf16 (const float *x, uint16_t * y, size_t n)
{
  size_t i = 0;
#ifdef BF16_X86
  if (tt_bf16_hw_dot ())
    i = bf16_narrow_avx512 (x, y, n);
#endif
  bf16_narrow_run (x + i, y + i, n - i);
}

void
tt_bf16_to_f32 (const uint16_t * x, float *y, size_t n)
{
  bf16_widen_run (x, y, n);
}

void
tt_f32_to_f16 (const float *x, uint16_t * y, size_t n)
{
  size_t i = 0;
#if defined(BF16_X86) || defined(BF16_ARM64)
  if (f16_hw ())
    i = f16_narrow_f16c (x, y, n);
#endif
  f16_narrow_run (x + i, y + i, n - i);
}

void
tt_f16_to_f32 (const uint16_t * x, float *y, size_t n)
{
  size_t i = 0;
#if defined(BF16_X86) || defined(BF16_ARM64)
  if (f16_hw ())
    i = f16_widen_f16c (x, y, n);
#endif
  f16_widen_run (x + i, y + i, n - i);
}

/* the precision override's note (core/precision_spec.c) */
bool
tt_f16_hw_convert (void)
{
#if defined(BF16_X86) || defined(BF16_ARM64)
  return f16_hw ();
#else
  return false;
#endif
}
