/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transforms of Winograd F(4x4, 3x3): each 4x4 output tile from a 6x6
 * input tile d, Y = A^T [ (G g G^T) . (B^T d B) ] A, so 36 products per
 * tile and channel pair instead of F(2x2, 3x3)'s 16 per 2x2 tile: 2.25
 * multiplies per output instead of 4 (and 9 for a direct 3x3). The rest
 * of the algorithm (the layout, the GEMMs, the passes) is the same for
 * both and lives in conv2d_winograd.c, which picks the tile per layer.
 *
 * Lavin & Gray's matrices, interpolation points 0, +-1, +-2 and infinity:
 *
 *   B^T = | 4  0 -5  0  1  0 |   G = |  1/4     0     0  |
 *         | 0 -4 -4  1  1  0 |       | -1/6  -1/6  -1/6  |
 *         | 0  4 -4 -1  1  0 |       | -1/6   1/6  -1/6  |
 *         | 0 -2 -1  2  1  0 |       |  1/24  1/12  1/6  |
 *         | 0  2 -1 -2  1  0 |       |  1/24 -1/12  1/6  |
 *         | 0  4  0 -5  0  1 |       |   0     0     1   |
 *
 *   A^T = | 1  1  1  1  1  0 |
 *         | 0  1 -1  2 -2  0 |
 *         | 0  1  1  4  4  0 |
 *         | 0  1 -1  8 -8  1 |
 *
 * Unlike F(2x2)'s, these amplify rounding: entries up to 8 and sums of
 * five terms. Against a double-precision direct convolution (test_kernels)
 * the error stays under 5e-6 of the sum of the magnitudes of each output's
 * terms (F(2x2): mostly under 5e-7), far inside the tests' 1e-4; on the
 * PyTorch golden CNN, the input derivative's worst difference went from
 * 0.03 to 0.11 of its tolerance, the other tensors' hardly moved.
 *
 * Each value below is a vector of the WB samples of a block (the layout
 * of conv2d_winograd.c), so every transform is plain vector arithmetic.
 */
#include "conv2d_winograd.h"
#include "tt_layer.h"

#include <string.h>

/* (by pointer: a function that returned a wvec would change ABI with
 * the ISA, which -Wpsabi reports for the baseline clone) */
TT_ALWAYS_INLINE void
wload (wvec * v, const float *p)
{
  memcpy (v, p, sizeof *v);
}

TT_ALWAYS_INLINE void
wstore (float *p, const wvec * v)
{
  memcpy (p, v, sizeof *v);
}

/* r = B^T d, d one column (or row) of a tile */
TT_ALWAYS_INLINE void
wino4_bt (const wvec d[6], wvec r[6])
{
  const wvec a = d[4] - 4.0f * d[2], b = d[3] - 4.0f * d[1];
  const wvec c = d[4] - d[2], e = 2.0f * (d[3] - d[1]);
  r[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  r[1] = a + b;
  r[2] = a - b;
  r[3] = c + e;
  r[4] = c - e;
  r[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

/* r = B v, the transpose */
TT_ALWAYS_INLINE void
wino4_b (const wvec v[6], wvec r[6])
{
  const wvec d21 = v[2] - v[1], s12 = v[1] + v[2];
  const wvec d34 = v[3] - v[4], s34 = v[3] + v[4];
  r[0] = 4.0f * v[0];
  r[1] = 4.0f * (d21 + v[5]) - 2.0f * d34;
  r[2] = -5.0f * v[0] - 4.0f * s12 - s34;
  r[3] = 2.0f * d34 - d21 - 5.0f * v[5];
  r[4] = v[0] + s12 + s34;
  r[5] = v[5];
}

/* r = A^T m */
TT_ALWAYS_INLINE void
wino4_at (const wvec m[6], wvec r[4])
{
  const wvec a = m[1] + m[2], b = m[1] - m[2];
  const wvec c = m[3] + m[4], d = m[3] - m[4];
  r[0] = m[0] + a + c;
  r[1] = b + 2.0f * d;
  r[2] = a + 4.0f * c;
  r[3] = b + 8.0f * d + m[5];
}

/* r = A y, the transpose */
TT_ALWAYS_INLINE void
wino4_a (const wvec y[4], wvec r[6])
{
  const wvec p = y[0] + y[2], q = y[1] + y[3];
  const wvec p4 = y[0] + 4.0f * y[2], q2 = 2.0f * y[1] + 8.0f * y[3];
  r[0] = y[0];
  r[1] = p + q;
  r[2] = p - q;
  r[3] = p4 + q2;
  r[4] = p4 - q2;
  r[5] = y[3];
}

/* r = G g, g one column (or row) of a filter */
TT_ALWAYS_INLINE void
wino4_g (const wvec g[3], wvec r[6])
{
  const wvec p = g[0] + g[2], q = g[0] * (1.0f / 24) + g[2] * (1.0f / 6);
  r[0] = 0.25f * g[0];
  r[1] = -(p + g[1]) * (1.0f / 6);
  r[2] = -(p - g[1]) * (1.0f / 6);
  r[3] = q + g[1] * (1.0f / 12);
  r[4] = q - g[1] * (1.0f / 12);
  r[5] = g[2];
}

/* r = G^T u, the transpose */
TT_ALWAYS_INLINE void
wino4_gt (const wvec u[6], wvec r[3])
{
  const wvec s12 = u[1] + u[2], s34 = u[3] + u[4];
  r[0] = 0.25f * u[0] - s12 * (1.0f / 6) + s34 * (1.0f / 24);
  r[1] = (u[2] - u[1]) * (1.0f / 6) + (u[3] - u[4]) * (1.0f / 12);
  r[2] = (s34 - s12) * (1.0f / 6) + u[5];
}

TT_VECTOR_CLONES void
tt_wino4_filter_lanes (const wvec g[9], wvec r[36])
{
  wvec t[6][3];
  for (int j = 0; j < 3; j++) {
    const wvec c[3] = { g[j], g[3 + j], g[6 + j] };
    wvec e[6];
    wino4_g (c, e);
    for (int i = 0; i < 6; i++)
      t[i][j] = e[i];
  }
  for (int i = 0; i < 6; i++)
    wino4_g (t[i], r + 6 * i);
}

TT_VECTOR_CLONES void
tt_wino4_filter_gradient_lanes (const wvec d[36], wvec r[9])
{
  wvec t[3][6];
  for (int j = 0; j < 6; j++) {
    wvec c[6], e[3];
    for (int i = 0; i < 6; i++)
      c[i] = d[6 * i + j];
    wino4_gt (c, e);
    for (int i = 0; i < 3; i++)
      t[i][j] = e[i];
  }
  for (int i = 0; i < 3; i++)
    wino4_gt (t[i], r + 3 * i);
}

TT_VECTOR_CLONES void
tt_wino4_input_transform (const wino_shape * s, const float *restrict pad,
    float *restrict v, size_t xs)
{
  const size_t row = (size_t) s->pw * WB;
  for (int ty = 0; ty < s->th; ty++)
    for (int tx = 0; tx < s->tw; tx++) {
      const float *d = pad + (size_t) 4 * ty * row + (size_t) 4 * tx * WB;
      float *o = v + (size_t) (ty * s->tw + tx) * WB;
      wvec t[6][6];
      /* B^T d: combine rows, column by column */
      for (int j = 0; j < 6; j++) {
        wvec c[6], r[6];
        for (int i = 0; i < 6; i++)
          wload (&c[i], d + i * row + j * WB);
        wino4_bt (c, r);
        for (int i = 0; i < 6; i++)
          t[i][j] = r[i];
      }
      /* (B^T d) B: combine the columns of each row */
      for (int i = 0; i < 6; i++) {
        wvec r[6];
        wino4_bt (t[i], r);
        for (int j = 0; j < 6; j++)
          wstore (o + (6 * i + j) * xs, &r[j]);
      }
    }
}

TT_VECTOR_CLONES void
tt_wino4_input_gradient (const wino_shape * s, const float *restrict dv,
    size_t xs, float *restrict pad)
{
  const size_t row = (size_t) s->pw * WB;
  for (int ty = 0; ty < s->th; ty++)
    for (int tx = 0; tx < s->tw; tx++) {
      float *d = pad + (size_t) 4 * ty * row + (size_t) 4 * tx * WB;
      const float *e = dv + (size_t) (ty * s->tw + tx) * WB;
      wvec t[6][6];
      /* dV B^T: combine the columns of each row */
      for (int i = 0; i < 6; i++) {
        wvec c[6];
        for (int j = 0; j < 6; j++)
          wload (&c[j], e + (6 * i + j) * xs);
        wino4_b (c, t[i]);
      }
      /* B (dV B^T): combine rows, column by column; tiles overlap by two
       * rows and columns, so add */
      for (int j = 0; j < 6; j++) {
        wvec c[6], r[6];
        for (int i = 0; i < 6; i++)
          c[i] = t[i][j];
        wino4_b (c, r);
        for (int i = 0; i < 6; i++) {
          float *q = d + i * row + j * WB;
          wvec a;
          wload (&a, q);
          a += r[i];
          wstore (q, &a);
        }
      }
    }
}

TT_VECTOR_CLONES void
tt_wino4_output_tiles (const wino_shape * s, const float *restrict m,
    size_t xs, float bias, float *restrict tile)
{
  for (int p = 0; p < s->pos; p++) {
    const float *e = m + (size_t) p * WB;
    float *ta = tile + (size_t) p * 16 * WB;
    wvec t[4][6];
    /* A^T M: combine rows, column by column */
    for (int j = 0; j < 6; j++) {
      wvec c[6], r[4];
      for (int i = 0; i < 6; i++)
        wload (&c[i], e + (6 * i + j) * xs);
      wino4_at (c, r);
      for (int i = 0; i < 4; i++)
        t[i][j] = r[i];
    }
    /* (A^T M) A: combine the columns of each row */
    for (int i = 0; i < 4; i++) {
      wvec r[4];
      wino4_at (t[i], r);
      for (int j = 0; j < 4; j++) {
        const wvec b = r[j] + bias;
        wstore (ta + (4 * i + j) * WB, &b);
      }
    }
  }
}

TT_VECTOR_CLONES void
tt_wino4_output_gradient_tiles (const wino_shape * s,
    const float *restrict tile, float *restrict dm, size_t xs)
{
  for (int p = 0; p < s->pos; p++) {
    const float *ta = tile + (size_t) p * 16 * WB;
    float *o = dm + (size_t) p * WB;
    wvec t[6][4];
    /* A dY: combine rows, column by column */
    for (int j = 0; j < 4; j++) {
      wvec c[4], r[6];
      for (int i = 0; i < 4; i++)
        wload (&c[i], ta + (4 * i + j) * WB);
      wino4_a (c, r);
      for (int i = 0; i < 6; i++)
        t[i][j] = r[i];
    }
    /* (A dY) A^T: combine the columns of each row */
    for (int i = 0; i < 6; i++) {
      wvec r[6];
      wino4_a (t[i], r);
      for (int j = 0; j < 6; j++)
        wstore (o + (6 * i + j) * xs, &r[j]);
    }
  }
}
