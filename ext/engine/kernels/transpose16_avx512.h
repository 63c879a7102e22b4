/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A 16 x 16 transpose of 32-bit words in AVX-512 registers, for the
 * GEMMs' packing of a transposed operand (gemm_avx512.c, gemm_bf16.c):
 * r[i] lane j becomes r[j] lane i. Included only where the file is built
 * for x86-64 with GCC's vector attributes.
 */
#ifndef TT_TRANSPOSE16_AVX512_H
#define TT_TRANSPOSE16_AVX512_H

#include <immintrin.h>

/* (a macro, which indent reads as one word) */
#define TT_TRANSPOSE16_INLINE static inline \
  __attribute__ ((always_inline, target ("avx512f")))

TT_TRANSPOSE16_INLINE void
tt_transpose16_avx512 (__m512 r[16])
{
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps (r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps (r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    r[4 * i] = _mm512_shuffle_ps (t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps (t[4 * i], t[4 * i + 2], 0xee);
    r[4 * i + 2] = _mm512_shuffle_ps (t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps (t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  for (int i = 0; i < 2; i++)
    for (int q = 0; q < 4; q++) {
      t[8 * i + q] = _mm512_shuffle_f32x4 (r[8 * i + q], r[8 * i + 4 + q],
          0x88);
      t[8 * i + 4 + q] = _mm512_shuffle_f32x4 (r[8 * i + q],
          r[8 * i + 4 + q], 0xdd);
    }
  for (int q = 0; q < 8; q++) {
    r[q] = _mm512_shuffle_f32x4 (t[q], t[8 + q], 0x88);
    r[q + 8] = _mm512_shuffle_f32x4 (t[q], t[8 + q], 0xdd);
  }
}

#endif /* TT_TRANSPOSE16_AVX512_H */
