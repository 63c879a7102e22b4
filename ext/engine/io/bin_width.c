/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The BIN's weights at the model's weight type (bin_width.h): the
 * conversions of kernels/bf16.c, in chunks through a stack buffer so that
 * file bytes of any alignment convert without allocation.
 */
#include "bin_width.h"

#include <math.h>
#include <string.h>

#define WIDTH_CHUNK 1024

size_t
tt_bin_weight_width (const tt_model * m)
{
  return m->weight_type == TT_PRECISION_FP16 ||
      m->weight_type == TT_PRECISION_BF16 ? sizeof (uint16_t) : sizeof (float);
}

const char *
tt_bin_type_name (tt_precision p)
{
  return p == TT_PRECISION_FP16 ? "FP16" : p == TT_PRECISION_BF16 ? "BF16" :
      "FP32";
}

void
tt_bin_widen (tt_precision p, const void *src, float *dst, size_t n)
{
  uint16_t half[WIDTH_CHUNK];
  const unsigned char *s = src;
  for (size_t done = 0; done < n;) {
    const size_t k = n - done < WIDTH_CHUNK ? n - done : WIDTH_CHUNK;
    memcpy (half, s + done * sizeof *half, k * sizeof *half);
    if (p == TT_PRECISION_BF16)
      tt_bf16_to_f32 (half, dst + done, k);
    else
      tt_f16_to_f32 (half, dst + done, k);
    done += k;
  }
}

void
tt_bin_narrow (tt_precision p, const float *src, void *dst, size_t n)
{
  uint16_t half[WIDTH_CHUNK];
  unsigned char *d = dst;
  for (size_t done = 0; done < n;) {
    const size_t k = n - done < WIDTH_CHUNK ? n - done : WIDTH_CHUNK;
    if (p == TT_PRECISION_BF16)
      tt_f32_to_bf16 (src + done, half, k);
    else
      tt_f32_to_f16 (src + done, half, k);
    memcpy (d + done * sizeof *half, half, k * sizeof *half);
    done += k;
  }
}

size_t
tt_bin_find_unrepresentable (tt_precision p, const float *x, size_t n,
    float *largest)
{
  uint16_t half[WIDTH_CHUNK];
  float back[WIDTH_CHUNK];
  if (p == TT_PRECISION_FP16) {
    const uint16_t max = 0x7bff;
    tt_f16_to_f32 (&max, largest, 1);
  } else if (p == TT_PRECISION_BF16) {
    const uint16_t max = 0x7f7f;
    tt_bf16_to_f32 (&max, largest, 1);
  } else {
    *largest = 3.40282347e+38f;
    return n;
  }
  for (size_t done = 0; done < n;) {
    const size_t k = n - done < WIDTH_CHUNK ? n - done : WIDTH_CHUNK;
    tt_bin_narrow (p, x + done, half, k);
    tt_bin_widen (p, half, back, k);
    for (size_t i = 0; i < k; i++)
      if (isinf (back[i]) && isfinite (x[done + i]))
        return done + i;
    done += k;
  }
  return n;
}
