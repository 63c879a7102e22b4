/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Winograd convolution F(m x m, 3x3), m = 2 or 4, for 3x3, stride-1
 * layers with enough channels (the CNN's second layer, 32 -> 64). Each
 * m x m output tile is computed from an n x n input tile d, n = m + 2, as
 *
 *     Y = A^T [ (G g G^T) . (B^T d B) ] A
 *
 * so the 9 m^2 multiplies per tile and channel pair of a direct 3x3
 * become n^2 (16 for F(2x2), 36 for F(4x4)), and the sum over channels
 * becomes n^2 independent GEMMs, one per element xi of the transformed
 * tile:
 *
 *     M[xi] (F x T) = U[xi] (F x C) * V[xi] (C x T)
 *
 * with U = G g G^T the transformed filters, V = B^T d B the transformed
 * input tiles (T tiles over the whole batch) and M the products, which
 * the output transform A^T M A turns into outputs. The backward passes
 * are the transposes of the same linear maps:
 *
 *     dM = A dY A^T                      (per output tile and filter)
 *     dU[xi] (F x C) = sum over chunks of dM[xi] * V[xi]^T;  dw = G^T dU G
 *     dV[xi] (C x T) = U[xi]^T * dM[xi];  dx += B dV B^T  (tiles overlap)
 *
 * This file holds what both tile sizes share (the layout, the gathers
 * and scatters, the passes) and F(2x2, 3x3)'s transforms:
 *
 *   B^T = | 1  0 -1  0 |   G = |  1    0    0  |   A^T = | 1  1  1  0 |
 *         | 0  1  1  0 |       | 1/2  1/2  1/2 |         | 0  1 -1 -1 |
 *         | 0 -1  1  0 |       | 1/2 -1/2  1/2 |
 *         | 0  1  0 -1 |       |  0    0    1  |
 *
 * which are exact in binary (so its error stays at float rounding);
 * conv2d_winograd4.c holds F(4x4, 3x3)'s, 44% fewer products per output
 * but larger transforms and rounding errors, and tiles that hang further
 * over the output's edge. wino_tile_of picks per layer the one with
 * fewer products (F(4x4) for the CNN's 11x11 outputs: 9 tiles of 36
 * instead of 36 of 16).
 *
 * The samples are the innermost dimension of every transformed matrix,
 * in blocks of WB = 8: tile position p of sample b is column
 * (b / WB) * pos * WB + p * WB + b % WB. Each transform is then the same
 * arithmetic on vectors of WB samples, and a chunk of GEMM columns holds
 * whole samples, so each output plane is written in one go. Only the
 * gathers from and scatters to the NCHW tensors are scalar, one float per
 * input or output value, each sample's plane read or written in order. A
 * last block of fewer samples is padded with zeros.
 *
 * Scratch (from the memory pool, kernels.h): out holds U (or dU), the
 * products of one chunk of sample blocks, the zero-padded plane of one
 * block and channel (or the output tiles of one block and filter) and
 * the V (or dV) of one chunk ([n^2][C][columns], wino_chunk).
 *
 * V is not kept from forward to backward: the weight gradient transforms
 * each chunk's input again (the input is kept for it, the layer's
 * backward reads it), right before the chunk's dU product reads it, the
 * same arithmetic as forward's, so the same bits. Kept, V was 2.25 times
 * the input (F(4x4): 36 values for 16 outputs) for the whole step: on
 * ResNet-8 at batch 32, 10.6 MB of a 47 MB pool at its busiest step.
 */
#include "kernels.h"
#include "conv2d_winograd.h"
#include "tt_layer.h"

#include <string.h>

/* Products (GEMM rows of M: n^2 per filter) times columns per chunk, in
 * whole blocks (at least one): M of a chunk (n^2 x F x columns) stays in
 * cache between the GEMMs that write it and the output transform that
 * reads it. 16 x 512 as tuned for F(2x2) (the CNN's layer then took one
 * block, 288 columns, a chunk); F(4x4) gets the same bytes, 227 columns,
 * on the CNN 2 blocks of 72 (wino_shape_of; 1 to 4 blocks measured
 * within 10% of each other at batch 32 and 128). */
#define WINO_CHUNK_PRODUCTS (16 * 512)

/* The tile side m for a geometry: the one that needs fewer products,
 * n^2 per tile position (F(2x2) on a tie: exact transforms, tighter
 * tiles). */
static int
wino_tile_of (const tt_window_geom * g)
{
  const size_t t2 = (size_t) ((g->out_h + 1) / 2) * ((g->out_w + 1) / 2);
  const size_t t4 = (size_t) ((g->out_h + 3) / 4) * ((g->out_w + 3) / 4);
  return 36 * t4 < 16 * t2 ? 4 : 2;
}

/* Smaller batches would leave most lanes of each block, and most GEMM
 * columns, empty (batch 1: 8 times the work, 4 times the scratch of
 * im2col). */
bool
tt_conv2d_winograd_applies (const tt_window_geom * g, int planned)
{
  if (g->kernel_h != 3 || g->kernel_w != 3 || g->stride_h != 1 ||
      g->stride_w != 1 || g->dilation_h != 1 || g->dilation_w != 1 ||
      g->channels < 16 || planned < WB)
    return false;
  /* Not worth it when the tiles mostly hang over the output's edge:
   * no fewer products than the direct 9 per output. */
  const int m = wino_tile_of (g), n = m + 2;
  const size_t th = (size_t) (g->out_h + m - 1) / m;
  const size_t tw = (size_t) (g->out_w + m - 1) / m;
  return (size_t) (n) * n * th * tw <= 9 * (size_t) g->out_h * g->out_w;
}

static wino_shape
wino_shape_of (const tt_window_geom * g, int batch)
{
  wino_shape s;
  s.m = wino_tile_of (g);
  s.lg = s.m == 4 ? 2 : 1;
  s.n = s.m + 2;
  s.xn = s.n * s.n;
  s.th = (g->out_h + s.m - 1) / s.m;
  s.tw = (g->out_w + s.m - 1) / s.m;
  s.ph = s.m * s.th + 2;
  s.pw = s.m * s.tw + 2;
  s.pos = s.th * s.tw;
  s.blocks = batch > 0 ? (batch + WB - 1) / WB : 1;
  s.bcols = (size_t) s.pos * WB;
  s.chunk = (int) (WINO_CHUNK_PRODUCTS / s.xn / s.bcols);
  /* an even number of blocks of an odd number of tile positions: whole
   * 16-float vectors of columns for the GEMM kernels, no padding
   * (wino_row); F(4x4) on 11x11 outputs, 9 positions, 2 blocks a chunk
   * rather than 3: 10% faster at batch 32 */
  if (s.pos % 2 && s.chunk > 1)
    s.chunk &= ~1;
  if (s.chunk < 1)
    s.chunk = 1;
  if (s.chunk > s.blocks)
    s.chunk = s.blocks;
  return s;
}

/* Floats from one row of a chunk's V (or dV) or M (or dM) to the next:
 * its columns, nt, rounded up to a multiple of 16. OpenBLAS's small-matrix
 * kernel (0.3.21, AVX-512), which runs most of these GEMMs, allocates a
 * buffer on every call whose product has 1 to 8 columns past a multiple
 * of 16 (n of M = U V and of dV = U^T dM), as a chunk of an odd number of
 * blocks of an odd number of tile positions has (8 past), and a training
 * step must allocate nothing (test_no_alloc). Those chunks' products get
 * 8 columns more, zeros in, ignored out. */
static inline size_t
wino_row (size_t nt)
{
  return (nt + 15) & ~(size_t) 15;
}

/* Floats from one of the n^2 matrices of V (or dV) or M (or dM) of a
 * chunk to the next: theirs and a cache line more. The transforms touch
 * all n^2 of them tile by tile; a multiple of 4 KiB apart (or of 2 KiB:
 * twice as many sets), they would all fall in the same few sets of the L1
 * cache, more lines than it has ways: on the CNN, F(4x4)'s 36 M matrices
 * (64 filters, 144 columns) are 36 KiB apart, one set, and the layer took
 * 25% longer at batch 32 without the extra line (10% at 128). */
static inline size_t
wino_plane (size_t floats)
{
  return floats + 64 / sizeof (float);
}

/* Floats of a (whole) chunk of V (rows C) or M (rows F) */
static inline size_t
wino_chunk_floats (const wino_shape * s, int rows)
{
  return (size_t) s->xn * wino_plane ((size_t) rows *
      wino_row (s->chunk * s->bcols));
}


size_t
tt_conv2d_winograd_out_floats (const tt_window_geom * g, int filters,
    int batch, bool both)
{
  const wino_shape s = wino_shape_of (g, batch);
  return (size_t) s.xn * filters * g->channels * (both ? 2 : 1) +
      wino_chunk_floats (&s, filters) + (size_t) s.ph * s.pw * WB +
      wino_chunk_floats (&s, g->channels);
}

/* Layout of the out scratch. */
typedef struct
{
  float *u;                     /* U or dU: [n^2][F][C] */
  float *m;                     /* M or dM of a chunk (wino_chunk) */
  float *pad;                   /* a block's padded plane [ph][pw][WB], or
                                 * its output tiles [pos][m^2][WB] (fewer
                                 * floats: m^2 th tw <= ph pw) */
  float *v;                     /* V or dV of a chunk */
  float *ut;                    /* U^T [n^2][C][F] while dU is in u (both
                                 * backward passes at once) */
} wino_scratch;

static wino_scratch
wino_scratch_of (const tt_window_geom * g, const wino_shape * s, int filters,
    float *out)
{
  wino_scratch w;
  w.u = out;
  w.m = w.u + (size_t) s->xn * filters * g->channels;
  w.pad = w.m + wino_chunk_floats (s, filters);
  w.v = w.pad + (size_t) s->ph * s->pw * WB;
  w.ut = w.v + wino_chunk_floats (s, g->channels);
  return w;
}

/* ---- F(2x2, 3x3)'s transforms (F(4x4)'s: conv2d_winograd4.c) ---------- */

/* r = G g G^T, lane by lane (filter pairs), g [3][3] */
TT_ALWAYS_INLINE void
wino2_filter_lanes (const wvec g[9], wvec r[16])
{
  wvec t[4][3];
  for (int j = 0; j < 3; j++) {
    t[0][j] = g[j];
    t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
    t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
    t[3][j] = g[6 + j];
  }
  for (int i = 0; i < 4; i++) {
    r[4 * i] = t[i][0];
    r[4 * i + 1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
    r[4 * i + 2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
    r[4 * i + 3] = t[i][2];
  }
}

/* r = G^T d G, the adjoint */
TT_ALWAYS_INLINE void
wino2_filter_gradient_lanes (const wvec d[16], wvec r[9])
{
  wvec t[3][4];
  for (int j = 0; j < 4; j++) {
    t[0][j] = d[j] + 0.5f * (d[4 + j] + d[8 + j]);
    t[1][j] = 0.5f * (d[4 + j] - d[8 + j]);
    t[2][j] = 0.5f * (d[4 + j] + d[8 + j]) + d[12 + j];
  }
  for (int i = 0; i < 3; i++) {
    r[3 * i] = t[i][0] + 0.5f * (t[i][1] + t[i][2]);
    r[3 * i + 1] = 0.5f * (t[i][1] - t[i][2]);
    r[3 * i + 2] = 0.5f * (t[i][1] + t[i][2]) + t[i][3];
  }
}

/* v[xi * xs + p * WB + l] = (B^T d B)[xi] for every tile position p of a
 * block, d the 4x4 tile at (2 ty, 2 tx) of the padded plane. */
TT_ALWAYS_INLINE void
wino2_input_transform (const wino_shape * s, const float *restrict pad,
    float *restrict v, size_t xs)
{
  const size_t row = (size_t) s->pw * WB;
  for (int ty = 0; ty < s->th; ty++)
    for (int tx = 0; tx < s->tw; tx++) {
      const float *d0 = pad + (size_t) 2 * ty * row + (size_t) 2 * tx * WB;
      const float *d1 = d0 + row, *d2 = d1 + row, *d3 = d2 + row;
      float *o = v + (size_t) (ty * s->tw + tx) * WB;
      WINO_FOR_LANES (l) {
        float t[4][4];
        /* B^T d: combine rows */
        for (int j = 0; j < 4; j++) {
          const float a0 = d0[j * WB + l], a1 = d1[j * WB + l];
          const float a2 = d2[j * WB + l], a3 = d3[j * WB + l];
          t[0][j] = a0 - a2;
          t[1][j] = a1 + a2;
          t[2][j] = a2 - a1;
          t[3][j] = a1 - a3;
        }
        /* (B^T d) B: combine columns */
        for (int i = 0; i < 4; i++) {
          o[(4 * i) * xs + l] = t[i][0] - t[i][2];
          o[(4 * i + 1) * xs + l] = t[i][1] + t[i][2];
          o[(4 * i + 2) * xs + l] = t[i][2] - t[i][1];
          o[(4 * i + 3) * xs + l] = t[i][1] - t[i][3];
        }
      }
    }
}

/* pad += B dV B^T for every tile position of a block; dv as v above. */
TT_ALWAYS_INLINE void
wino2_input_gradient (const wino_shape * s, const float *restrict dv,
    size_t xs, float *restrict pad)
{
  const size_t row = (size_t) s->pw * WB;
  for (int ty = 0; ty < s->th; ty++)
    for (int tx = 0; tx < s->tw; tx++) {
      float *d0 = pad + (size_t) 2 * ty * row + (size_t) 2 * tx * WB;
      float *d1 = d0 + row, *d2 = d1 + row, *d3 = d2 + row;
      const float *e = dv + (size_t) (ty * s->tw + tx) * WB;
      WINO_FOR_LANES (l) {
        float t[4][4];
        /* dV B^T: combine the columns of each row */
        for (int i = 0; i < 4; i++) {
          const float a = e[(4 * i) * xs + l], c = e[(4 * i + 2) * xs + l];
          const float b = e[(4 * i + 1) * xs + l];
          const float d = e[(4 * i + 3) * xs + l];
          t[i][0] = a;
          t[i][1] = b - c + d;
          t[i][2] = b + c - a;
          t[i][3] = -d;
        }
        /* B (dV B^T): combine rows */
        for (int j = 0; j < 4; j++) {
          d0[j * WB + l] += t[0][j];
          d1[j * WB + l] += t[1][j] - t[2][j] + t[3][j];
          d2[j * WB + l] += t[1][j] + t[2][j] - t[0][j];
          d3[j * WB + l] -= t[3][j];
        }
      }
    }
}

/* tile[p][2 i + j][l] = (A^T M A)[i][j] + bias for every tile position p
 * of a block; m as v above. */
TT_ALWAYS_INLINE void
wino2_output_tiles (const wino_shape * s, const float *restrict m, size_t xs,
    float bias, float *restrict tile)
{
  for (int p = 0; p < s->pos; p++) {
    const float *e = m + (size_t) p * WB;
    float *ta = tile + (size_t) p * 4 * WB;
    WINO_FOR_LANES (l) {
      float t[2][4];
      /* A^T M: combine rows */
      for (int j = 0; j < 4; j++) {
        const float m0 = e[j * xs + l], m1 = e[(4 + j) * xs + l];
        const float m2 = e[(8 + j) * xs + l], m3 = e[(12 + j) * xs + l];
        t[0][j] = m0 + m1 + m2;
        t[1][j] = m1 - m2 - m3;
      }
      ta[l] = t[0][0] + t[0][1] + t[0][2] + bias;
      ta[WB + l] = t[0][1] - t[0][2] - t[0][3] + bias;
      ta[2 * WB + l] = t[1][0] + t[1][1] + t[1][2] + bias;
      ta[3 * WB + l] = t[1][1] - t[1][2] - t[1][3] + bias;
    }
  }
}

/* dm[xi * xs + p * WB + l] = (A dY A^T)[xi] for every tile position p of
 * a block, dY from tile as above. */
TT_ALWAYS_INLINE void
wino2_output_gradient_tiles (const wino_shape * s, const float *restrict tile,
    float *restrict dm, size_t xs)
{
  for (int p = 0; p < s->pos; p++) {
    const float *ta = tile + (size_t) p * 4 * WB;
    float *o = dm + (size_t) p * WB;
    WINO_FOR_LANES (l) {
      const float a = ta[l], b = ta[WB + l], c = ta[2 * WB + l];
      const float d = ta[3 * WB + l];
      /* A dY: rows (a b), (a+c b+d), (a-c b-d), (-c -d); then A^T on the
       * columns of each */
      const float r[4][2] = { {a, b}, {a + c, b + d}, {a - c, b - d},
      {-c, -d}
      };
      for (int i = 0; i < 4; i++) {
        o[(4 * i) * xs + l] = r[i][0];
        o[(4 * i + 1) * xs + l] = r[i][0] + r[i][1];
        o[(4 * i + 2) * xs + l] = r[i][0] - r[i][1];
        o[(4 * i + 3) * xs + l] = -r[i][1];
      }
    }
  }
}

/* ---- the transforms of the layer's tile size ------------------------- */

/* Filter pairs per step of the filter transforms: a cache line of each
 * of U's n^2 planes at once. The planes are F C floats apart, a multiple
 * of 4 KiB for most layers (64 x 32 filters: 8 KiB), so all of them fall
 * in one set of the L1 cache: one pair at a time (n^2 scattered floats
 * per pair), each line went back and forth between the caches up to 16
 * times (F(4x4)'s transform took 14% of the layer's time). */
#define WINO_FB (2 * WB)

/* U[xi][f][c] = (G g G^T)[xi] for every filter f and channel c, or
 * U[xi][c][f] when transposed. */
TT_ALWAYS_INLINE void
wino_filter_transform (const wino_shape * s, int filters, int channels,
    const float *restrict w, float *restrict u, bool transposed,
    size_t o_begin, size_t o_end)
{
  const size_t fc = (size_t) filters * channels;
  /* of the next pair, transposed */
  int f = (int) (o_begin % filters), c = (int) (o_begin / filters);
  for (size_t o0 = o_begin; o0 < o_end; o0 += WINO_FB) {
    const int nl = o_end - o0 < WINO_FB ? (int) (o_end - o0) : WINO_FB;
    float gl[9][WINO_FB], r[36][WINO_FB];
    if (nl < WINO_FB)
      memset (gl, 0, sizeof gl);
    for (int l = 0; l < nl; l++) {
      const float *g = w + 9 * (transposed ? (size_t) f * channels + c :
          o0 + l);
      for (int t = 0; t < 9; t++)
        gl[t][l] = g[t];
      if (++f == filters) {
        f = 0;
        c++;
      }
    }
    for (int h = 0; h < WINO_FB; h += WB) {
      wvec gv[9], rv[36];
      for (int t = 0; t < 9; t++)
        memcpy (&gv[t], &gl[t][h], sizeof (wvec));
      if (s->m == 4)
        tt_wino4_filter_lanes (gv, rv);
      else
        wino2_filter_lanes (gv, rv);
      for (int xi = 0; xi < s->xn; xi++)
        memcpy (&r[xi][h], &rv[xi], sizeof (wvec));
    }
    /* (a constant size for whole steps: a variable one is copied 8
     * bytes at a time) */
    if (nl == WINO_FB)
      for (int xi = 0; xi < s->xn; xi++)
        memcpy (u + xi * fc + o0, r[xi], sizeof r[xi]);
    else
      for (int xi = 0; xi < s->xn; xi++)
        memcpy (u + xi * fc + o0, r[xi], sizeof (float) * nl);
  }
}

/* dw[f][c] = G^T dU[f][c] G, the adjoint of wino_filter_transform (not
 * transposed). */
TT_ALWAYS_INLINE void
wino_filter_gradient (const wino_shape * s, int filters, int channels,
    const float *const *du, unsigned n_du, float *restrict dw,
    size_t o_begin, size_t o_end)
{
  const size_t fc = (size_t) filters * channels;
  for (size_t o0 = o_begin; o0 < o_end; o0 += WINO_FB) {
    const int nl = o_end - o0 < WINO_FB ? (int) (o_end - o0) : WINO_FB;
    float d[36][WINO_FB], r[9][WINO_FB];
    if (nl < WINO_FB)
      memset (d, 0, sizeof d);
    if (nl == WINO_FB)
      for (int xi = 0; xi < s->xn; xi++)
        memcpy (d[xi], du[0] + xi * fc + o0, sizeof d[xi]);
    else
      for (int xi = 0; xi < s->xn; xi++)
        memcpy (d[xi], du[0] + xi * fc + o0, sizeof (float) * nl);
    /* the other parts' partials, in part order */
    for (unsigned q = 1; q < n_du; q++)
      for (int xi = 0; xi < s->xn; xi++)
        for (int l = 0; l < nl; l++)
          d[xi][l] += du[q][xi * fc + o0 + l];
    for (int h = 0; h < WINO_FB; h += WB) {
      wvec dv[36], rv[9];
      for (int xi = 0; xi < s->xn; xi++)
        memcpy (&dv[xi], &d[xi][h], sizeof (wvec));
      if (s->m == 4)
        tt_wino4_filter_gradient_lanes (dv, rv);
      else
        wino2_filter_gradient_lanes (dv, rv);
      for (int t = 0; t < 9; t++)
        memcpy (&r[t][h], &rv[t], sizeof (wvec));
    }
    for (int l = 0; l < nl; l++)
      for (int t = 0; t < 9; t++)
        dw[9 * (o0 + l) + t] = r[t][l];
  }
}

TT_ALWAYS_INLINE void
wino_input_transform (const wino_shape * s, const float *pad, float *v,
    size_t xs)
{
  if (s->m == 4)
    tt_wino4_input_transform (s, pad, v, xs);
  else
    wino2_input_transform (s, pad, v, xs);
}

TT_ALWAYS_INLINE void
wino_input_gradient (const wino_shape * s, const float *dv, size_t xs,
    float *pad)
{
  if (s->m == 4)
    tt_wino4_input_gradient (s, dv, xs, pad);
  else
    wino2_input_gradient (s, dv, xs, pad);
}

TT_ALWAYS_INLINE void
wino_output_tiles (const wino_shape * s, const float *m, size_t xs,
    float bias, float *tile)
{
  if (s->m == 4)
    tt_wino4_output_tiles (s, m, xs, bias, tile);
  else
    wino2_output_tiles (s, m, xs, bias, tile);
}

TT_ALWAYS_INLINE void
wino_output_gradient_tiles (const wino_shape * s, const float *tile,
    float *dm, size_t xs)
{
  if (s->m == 4)
    tt_wino4_output_gradient_tiles (s, tile, dm, xs);
  else
    wino2_output_gradient_tiles (s, tile, dm, xs);
}

/* ---- between the NCHW tensors and the layout ------------------------ */

/* Moving 8 x 8 blocks between the NCHW planes of a block's samples and
 * the lane-interleaved layout: 8 vector loads, a transpose in registers,
 * 8 vector stores, instead of 64 scalar moves. Rows of at least WB floats
 * go by blocks of WB columns, the last block overlapping the one before
 * (it moves the same values again). */

#if defined(__clang__)
#define WSHUF(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
  __builtin_shufflevector (a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#else
typedef int32_t wivec __attribute__((vector_size (4 * WB)));
#define WSHUF(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
  __builtin_shuffle (a, b, (wivec) { i0, i1, i2, i3, i4, i5, i6, i7 })
#endif

/* r[i][j] -> r[j][i] */
TT_ALWAYS_INLINE void
wino_transpose8 (wvec * r)
{
  const wvec t0 = WSHUF (r[0], r[1], 0, 8, 1, 9, 4, 12, 5, 13);
  const wvec t1 = WSHUF (r[0], r[1], 2, 10, 3, 11, 6, 14, 7, 15);
  const wvec t2 = WSHUF (r[2], r[3], 0, 8, 1, 9, 4, 12, 5, 13);
  const wvec t3 = WSHUF (r[2], r[3], 2, 10, 3, 11, 6, 14, 7, 15);
  const wvec t4 = WSHUF (r[4], r[5], 0, 8, 1, 9, 4, 12, 5, 13);
  const wvec t5 = WSHUF (r[4], r[5], 2, 10, 3, 11, 6, 14, 7, 15);
  const wvec t6 = WSHUF (r[6], r[7], 0, 8, 1, 9, 4, 12, 5, 13);
  const wvec t7 = WSHUF (r[6], r[7], 2, 10, 3, 11, 6, 14, 7, 15);
  const wvec u0 = WSHUF (t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);
  const wvec u1 = WSHUF (t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);
  const wvec u2 = WSHUF (t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);
  const wvec u3 = WSHUF (t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);
  const wvec u4 = WSHUF (t4, t6, 0, 1, 8, 9, 4, 5, 12, 13);
  const wvec u5 = WSHUF (t4, t6, 2, 3, 10, 11, 6, 7, 14, 15);
  const wvec u6 = WSHUF (t5, t7, 0, 1, 8, 9, 4, 5, 12, 13);
  const wvec u7 = WSHUF (t5, t7, 2, 3, 10, 11, 6, 7, 14, 15);
  r[0] = WSHUF (u0, u4, 0, 1, 2, 3, 8, 9, 10, 11);
  r[1] = WSHUF (u1, u5, 0, 1, 2, 3, 8, 9, 10, 11);
  r[2] = WSHUF (u2, u6, 0, 1, 2, 3, 8, 9, 10, 11);
  r[3] = WSHUF (u3, u7, 0, 1, 2, 3, 8, 9, 10, 11);
  r[4] = WSHUF (u0, u4, 4, 5, 6, 7, 12, 13, 14, 15);
  r[5] = WSHUF (u1, u5, 4, 5, 6, 7, 12, 13, 14, 15);
  r[6] = WSHUF (u2, u6, 4, 5, 6, 7, 12, 13, 14, 15);
  r[7] = WSHUF (u3, u7, 4, 5, 6, 7, 12, 13, 14, 15);
}

/* Columns [x0, x0 + WB) of row `row` of the nb sample planes at
 * src + l * stride, zeros for the missing samples: r[j] holds column
 * x0 + j of every sample. */
TT_ALWAYS_INLINE void
wino_load_columns (const float *src, size_t stride, int nb, wvec * r)
{
  for (int l = 0; l < WB; l++) {
    if (l < nb)
      memcpy (&r[l], src + l * stride, sizeof (wvec));
    else
      r[l] = (wvec) {
      0};
  }
  wino_transpose8 (r);
}

/* The inverse: r[j] (column x0 + j of every sample) into the nb planes. */
TT_ALWAYS_INLINE void
wino_store_columns (wvec * r, float *dst, size_t stride, int nb)
{
  wino_transpose8 (r);
  for (int l = 0; l < nb; l++)
    memcpy (dst + l * stride, &r[l], sizeof (wvec));
}

/* Start of block k of a row of n >= WB columns. */
static inline int
wino_col_block (int k, int n)
{
  return k * WB + WB <= n ? k * WB : n - WB;
}

/* pad[r][q][l] = x[b0 + l][c][r - pad_top][q - pad_left] for the nb
 * samples of a block, 0 outside the image and for missing samples. */
TT_ALWAYS_INLINE void
wino_gather_plane (const tt_window_geom * g, const wino_shape * s,
    const float *restrict x, int b0, int nb, int c, float *restrict pad)
{
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t stride = (size_t) g->channels * in_plane;
  const int rows = s->ph - g->pad_top < g->in_h ? s->ph - g->pad_top : g->in_h;
  const int cols = s->pw - g->pad_left < g->in_w ? s->pw - g->pad_left :
      g->in_w;
  memset (pad, 0, sizeof (float) * s->ph * s->pw * WB);
  if (cols >= WB) {
    const int nblk = (cols + WB - 1) / WB;
    for (int iy = 0; iy < rows; iy++)
      for (int k = 0; k < nblk; k++) {
        const int ix = wino_col_block (k, cols);
        wvec r[WB];
        wino_load_columns (x + (size_t) b0 * stride + c * in_plane +
            (size_t) iy * g->in_w + ix, stride, nb, r);
        float *d = pad + ((size_t) (iy + g->pad_top) * s->pw + ix +
            g->pad_left) * WB;
        for (int j = 0; j < WB; j++)
          memcpy (d + j * WB, &r[j], sizeof (wvec));
      }
    return;
  }
  for (int l = 0; l < nb; l++) {
    const float *src = x + (size_t) (b0 + l) * stride + c * in_plane;
    float *d = pad + ((size_t) g->pad_top * s->pw + g->pad_left) * WB + l;
    for (int iy = 0; iy < rows; iy++)
      for (int ix = 0; ix < cols; ix++)
        d[((size_t) iy * s->pw + ix) * WB] = src[(size_t) iy * g->in_w + ix];
  }
}

/* dx[b0 + l][c][iy][ix] = pad[iy + pad_top][ix + pad_left][l] for the nb
 * samples of a block (0 past the padded plane: never, in practice). */
TT_ALWAYS_INLINE void
wino_scatter_plane (const tt_window_geom * g, const wino_shape * s,
    const float *restrict pad, int b0, int nb, int c, float *restrict dx)
{
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t stride = (size_t) g->channels * in_plane;
  if (g->in_w >= WB && g->pad_top + g->in_h <= s->ph &&
      g->pad_left + g->in_w <= s->pw) {
    const int nblk = (g->in_w + WB - 1) / WB;
    for (int iy = 0; iy < g->in_h; iy++)
      for (int k = 0; k < nblk; k++) {
        const int ix = wino_col_block (k, g->in_w);
        const float *src = pad + ((size_t) (iy + g->pad_top) * s->pw + ix +
            g->pad_left) * WB;
        wvec r[WB];
        for (int j = 0; j < WB; j++)
          memcpy (&r[j], src + j * WB, sizeof (wvec));
        wino_store_columns (r, dx + (size_t) b0 * stride + c * in_plane +
            (size_t) iy * g->in_w + ix, stride, nb);
      }
    return;
  }
  for (int l = 0; l < nb; l++) {
    float *d = dx + (size_t) (b0 + l) * stride + c * in_plane;
    for (int iy = 0; iy < g->in_h; iy++)
      for (int ix = 0; ix < g->in_w; ix++) {
        const int r = iy + g->pad_top, q = ix + g->pad_left;
        d[(size_t) iy * g->in_w + ix] = r < s->ph && q < s->pw ?
            pad[((size_t) r * s->pw + q) * WB + l] : 0.0f;
      }
  }
}

/* Slot of output (oy, ox) in a block's output tiles [pos][m^2][WB]:
 * tile position (oy / m, ox / m), element m (oy % m) + ox % m. */
static inline size_t
wino_tile_slot (const wino_shape * s, int oy, int ox)
{
  return ((size_t) ((oy >> s->lg) * s->tw + (ox >> s->lg)) << (2 * s->lg))
      + (size_t) ((oy & (s->m - 1)) << s->lg) + (size_t) (ox & (s->m - 1));
}

/* dm[xi * xs + p * WB + l] = (A dY A^T)[xi] for every tile position of a
 * block and filter f; dY is sample b0 + l's m x m output tile, 0 past the
 * output's edge and for missing samples. tile: [pos][m^2][WB] scratch. */
TT_ALWAYS_INLINE void
wino_output_gradient (const tt_window_geom * g, const wino_shape * s,
    int filters, const float *restrict dy, int b0, int nb, int f,
    float *restrict tile, float *restrict dm, size_t xs)
{
  const int oh = g->out_h, ow = g->out_w;
  const size_t ohw = (size_t) oh * ow, stride = (size_t) (filters) * ohw;
  /* slots past the output's edge stay 0 */
  memset (tile, 0, sizeof (float) * s->m * s->m * WB * s->pos);
  if (ow >= WB) {
    const int nblk = (ow + WB - 1) / WB;
    for (int oy = 0; oy < oh; oy++)
      for (int k = 0; k < nblk; k++) {
        const int ox = wino_col_block (k, ow);
        wvec r[WB];
        wino_load_columns (dy + (size_t) b0 * stride + f * ohw +
            (size_t) oy * ow + ox, stride, nb, r);
        for (int j = 0; j < WB; j++)
          memcpy (tile + wino_tile_slot (s, oy, ox + j) * WB, &r[j],
              sizeof (wvec));
      }
  } else {
    /* rows narrower than WB: the values sample by sample */
    for (int l = 0; l < nb; l++) {
      const float *src = dy + (size_t) (b0 + l) * stride + f * ohw;
      for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++)
          tile[wino_tile_slot (s, oy, ox) * WB + l] =
              src[(size_t) oy * ow + ox];
    }
  }
  wino_output_gradient_tiles (s, tile, dm, xs);
}

/* y = A^T M A + bias for every tile position of a block and filter f,
 * cropped to the output; m as dm above, tile as there. */
TT_ALWAYS_INLINE void
wino_output_transform (const tt_window_geom * g, const wino_shape * s,
    int filters, const float *restrict m, size_t xs, int b0, int nb, int f,
    float bias, float *restrict tile, float *restrict y)
{
  const int oh = g->out_h, ow = g->out_w;
  const size_t ohw = (size_t) oh * ow, stride = (size_t) (filters) * ohw;
  wino_output_tiles (s, m, xs, bias, tile);
  if (ow >= WB) {
    const int nblk = (ow + WB - 1) / WB;
    for (int oy = 0; oy < oh; oy++)
      for (int k = 0; k < nblk; k++) {
        const int ox = wino_col_block (k, ow);
        wvec r[WB];
        for (int j = 0; j < WB; j++)
          memcpy (&r[j], tile + wino_tile_slot (s, oy, ox + j) * WB,
              sizeof (wvec));
        wino_store_columns (r, y + (size_t) b0 * stride + f * ohw +
            (size_t) oy * ow + ox, stride, nb);
      }
    return;
  }
  for (int l = 0; l < nb; l++) {
    float *dst = y + (size_t) (b0 + l) * stride + f * ohw;
    for (int oy = 0; oy < oh; oy++)
      for (int ox = 0; ox < ow; ox++)
        dst[(size_t) oy * ow + ox] = tile[wino_tile_slot (s, oy, ox) * WB + l];
  }
}

static inline int
wino_block_samples (int batch, int k)
{
  return batch - k * WB < WB ? batch - k * WB : WB;
}

/* The chunk of blocks [k0, k1) and its matrices: V (or dV) [n^2][C][ld],
 * M (or dM) [n^2][F][ld], of nt columns and ld - nt zeros (wino_row),
 * their n^2 matrices xs and ms floats apart (wino_plane). */
typedef struct
{
  int k0, k1;
  size_t nt, ld, xs, ms;
} wino_chunk;

static inline wino_chunk
wino_chunk_at (const tt_window_geom * g, const wino_shape * s, int filters,
    int k0)
{
  wino_chunk ch;
  ch.k0 = k0;
  ch.k1 = s->blocks - k0 < s->chunk ? s->blocks : k0 + s->chunk;
  ch.nt = (size_t) (ch.k1 - k0) * s->bcols;
  ch.ld = wino_row (ch.nt);
  ch.xs = wino_plane ((size_t) g->channels * ch.ld);
  ch.ms = wino_plane ((size_t) filters * ch.ld);
  return ch;
}

/* Zeros in the padding columns [nt, ld) of the rows rows of each of the
 * n^2 matrices at a, xs floats apart. */
TT_ALWAYS_INLINE void
wino_zero_padding (const wino_shape * s, const wino_chunk * ch, int rows,
    float *a, size_t xs)
{
  if (ch->ld > ch->nt)
    for (int xi = 0; xi < s->xn; xi++)
      for (int r = 0; r < rows; r++)
        memset (a + xi * xs + r * ch->ld + ch->nt, 0,
            sizeof (float) * (ch->ld - ch->nt));
}

/* dbias[f] = the sum of dy over samples [b0, b1) of plane f. */
TT_ALWAYS_INLINE void
wino_bias_gradient (const tt_window_geom * g, int filters, int b0, int b1,
    int f, const float *restrict dy, float *restrict dbias)
{
  const size_t ohw = (size_t) g->out_h * g->out_w;
  /* WB partial sums (a plain running sum is one long chain of
   * dependent adds, which cannot be vectorized) */
  float part[WB] = { 0 };
  for (int b = b0; b < b1; b++) {
    const float *q = dy + ((size_t) b * filters + f) * ohw;
    size_t k = 0;
    for (; k + WB <= ohw; k += WB)
      for (int l = 0; l < WB; l++)
        part[l] += q[k + l];
    for (; k < ohw; k++)
      part[k % WB] += q[k];
  }
  float sum = 0.0f;
  for (int l = 0; l < WB; l++)
    sum += part[l];
  dbias[f] = sum;
}

/* ---- the passes, by samples over the engine's threads -----------------
 *
 * Thread i of the pool takes the i-th contiguous range of chunks
 * (tt_threads_run_owned, tt_threads_range) and runs every stage of each:
 * its samples' planes, transforms, products and outputs stay in its
 * core's caches, and the layers before and after, split by samples the
 * same way (pooling by planes, the direct convolution by samples), hand
 * it data its own core wrote. Split by stage instead (transforms by
 * block, GEMMs by xi, outputs by filter), the CNN's second layer moved
 * its activations between the two cores of the test machine three times
 * a pass and took 15% longer than on one thread when reading what the
 * other core wrote cost 3-4 times reading one's own (parallel-probe).
 *
 * Each part has its own M (or dM), padded plane, V (or dV) and partials
 * of dU and dbias:
 * part 0 the layer's scratch, part i its worker's
 * (tt_threads_scratch, tt_conv2d_winograd_worker_floats). A pool
 * without that scratch runs every chunk as one part, on the caller.
 * The output and dx of a chunk are the same arithmetic whatever the
 * split (one thread's bit for bit); dU and dbias are each part's sums
 * over its chunks, added in part order after the job: deterministic
 * for a thread count, within rounding of one thread's. */

typedef enum
{
  WINO_FORWARD,
  WINO_BACKWARD_WEIGHT,         /* dU, dbias */
  WINO_BACKWARD_INPUT,          /* dx */
  WINO_BACKWARD_BOTH,           /* dU, dbias, then dx over V */
} wino_pass;

typedef struct
{
  wino_pass pass;
  tt_threads *pool;
  const tt_window_geom *g;
  const wino_shape *s;
  int filters, batch;
  const float *x;               /* input, or dy */
  const float *in;              /* the weight gradient's: the input */
  const float *bias;
  const float *u;               /* U (forward), or U^T */
  float *y;                     /* output, or dx */
  float *dbias;                 /* NULL: no bias gradient */
  wino_scratch sc;              /* part 0's */
} wino_job;

/* A part's own buffers. */
typedef struct
{
  float *m, *pad, *v, *du, *dbias;
} wino_part_buffers;

static inline size_t
wino_lines (size_t floats)
{
  return (floats + 15) & ~(size_t) 15;
}

/* Where a part's buffers lie in its worker's scratch, in whole cache
 * lines: M, the padded plane, V, dU and dbias with a gradient; total, the
 * floats it needs. */
typedef struct
{
  size_t m, pad, v, du, dbias, total;
} wino_part_layout;

static wino_part_layout
wino_part_layout_of (const tt_window_geom * g, const wino_shape * s,
    int filters, bool gradient)
{
  wino_part_layout o;
  o.m = 0;
  o.pad = o.m + wino_lines (wino_chunk_floats (s, filters));
  o.v = o.pad + wino_lines ((size_t) s->ph * s->pw * WB);
  o.du = o.v + wino_lines (wino_chunk_floats (s, g->channels));
  o.dbias = o.du + (gradient ?
      wino_lines ((size_t) s->xn * filters * g->channels) : 0);
  o.total = o.dbias + (gradient ? wino_lines ((size_t) filters) : 0);
  return o;
}

size_t
tt_conv2d_winograd_worker_floats (const tt_window_geom * g, int filters,
    int planned, bool gradient)
{
  const wino_shape s = wino_shape_of (g, planned);
  return wino_part_layout_of (g, &s, filters, gradient).total;
}

static bool
wino_pass_has_gradient (const wino_job * j)
{
  return j->pass == WINO_BACKWARD_WEIGHT || j->pass == WINO_BACKWARD_BOTH;
}

static wino_part_buffers
wino_part_buffers_of (const wino_job * j, unsigned part)
{
  if (part == 0)
    return (wino_part_buffers) {
    j->sc.m, j->sc.pad, j->sc.v, j->sc.u, j->dbias};
  const wino_part_layout o = wino_part_layout_of (j->g, j->s, j->filters,
      wino_pass_has_gradient (j));
  float *p = tt_threads_scratch (j->pool, part);
  wino_part_buffers b = {
    p + o.m, p + o.pad, p + o.v, p + o.du, p + o.dbias
  };
  if (tt_threads_step_inline (j->pool)) {
    /* the parts run one after the other on the caller: M, the padded
     * plane and V are each chunk's scratch, rewritten before they are
     * read, so part 0's serve, still in this core's caches (its partials
     * stay apart: they are added after) */
    b.m = j->sc.m;
    b.pad = j->sc.pad;
    b.v = j->sc.v;
  }
  return b;
}

/* Chunks of the batch */
static inline size_t
wino_chunks (const wino_shape * s)
{
  return (size_t) (s->blocks + s->chunk - 1) / s->chunk;
}

/* V of the chunk at k0 from the input x. */
TT_ALWAYS_INLINE void
wino_chunk_input (const wino_job * j, const wino_chunk * ch, const float *x,
    float *v, float *pad)
{
  const wino_shape *s = j->s;
  for (int k = ch->k0; k < ch->k1; k++)
    for (int c = 0; c < j->g->channels; c++) {
      wino_gather_plane (j->g, s, x, k * WB, wino_block_samples (j->batch,
              k), c, pad);
      wino_input_transform (s, pad, v + (size_t) c * ch->ld +
          (size_t) (k - ch->k0) * s->bcols, ch->xs);
    }
  wino_zero_padding (s, ch, j->g->channels, v, ch->xs);
}

/* y from the chunk's M */
TT_ALWAYS_INLINE void
wino_chunk_output (const wino_job * j, const wino_chunk * ch, const float *m,
    float *pad)
{
  for (int f = 0; f < j->filters; f++)
    for (int k = ch->k0; k < ch->k1; k++)
      wino_output_transform (j->g, j->s, j->filters, m + (size_t) f * ch->ld +
          (size_t) (k - ch->k0) * j->s->bcols, ch->ms, k * WB,
          wino_block_samples (j->batch, k), f, j->bias ? j->bias[f] : 0.0f,
          pad, j->y);
}

/* dM of the chunk from dy */
TT_ALWAYS_INLINE void
wino_chunk_output_gradient (const wino_job * j, const wino_chunk * ch,
    float *dm, float *pad)
{
  for (int f = 0; f < j->filters; f++)
    for (int k = ch->k0; k < ch->k1; k++)
      wino_output_gradient (j->g, j->s, j->filters, j->x, k * WB,
          wino_block_samples (j->batch, k), f, pad, dm + (size_t) f *
          ch->ld + (size_t) (k - ch->k0) * j->s->bcols, ch->ms);
  wino_zero_padding (j->s, ch, j->filters, dm, ch->ms);
}

/* dx of the chunk's samples from its dV */
TT_ALWAYS_INLINE void
wino_chunk_input_gradient (const wino_job * j, const wino_chunk * ch,
    const float *dv, float *pad)
{
  const wino_shape *s = j->s;
  for (int k = ch->k0; k < ch->k1; k++)
    for (int c = 0; c < j->g->channels; c++) {
      memset (pad, 0, sizeof (float) * s->ph * s->pw * WB);
      wino_input_gradient (s, dv + (size_t) c * ch->ld +
          (size_t) (k - ch->k0) * s->bcols, ch->xs, pad);
      wino_scatter_plane (j->g, s, pad, k * WB, wino_block_samples (j->batch,
              k), c, j->y);
    }
}

static TT_VECTOR_CLONES void
wino_part (void *arg, unsigned part, unsigned n_parts)
{
  const wino_job *j = arg;
  const tt_window_geom *g = j->g;
  const wino_shape *s = j->s;
  const int c_n = g->channels, filters = j->filters;
  const size_t fc = (size_t) filters * c_n;
  const size_t chunks = wino_chunks (s);
  size_t lo, hi;
  tt_threads_range (chunks, 1, part, n_parts, &lo, &hi);
  const bool weight = wino_pass_has_gradient (j);
  const wino_part_buffers b = wino_part_buffers_of (j, part);
  /* (part 0 always has chunks; the others' partials are added only
   * when they have, wino_run) */
  for (size_t q = lo; q < hi; q++) {
    const int k0 = (int) q * s->chunk;
    const wino_chunk ch = wino_chunk_at (g, s, filters, k0);
    float *v = b.v;
    if (j->pass == WINO_FORWARD) {
      wino_chunk_input (j, &ch, j->x, v, b.pad);
      for (int xi = 0; xi < s->xn; xi++)
        tt_gemm (false, false, filters, (int) ch.ld, c_n, 1.0f,
            j->u + xi * fc, c_n, v + xi * ch.xs, (int) ch.ld, 0.0f,
            b.m + xi * ch.ms, (int) ch.ld);
      wino_chunk_output (j, &ch, b.m, b.pad);
      continue;
    }
    if (weight)
      wino_chunk_input (j, &ch, j->in, v, b.pad);
    wino_chunk_output_gradient (j, &ch, b.m, b.pad);
    for (int xi = 0; xi < s->xn; xi++) {
      if (weight)
        tt_gemm (false, true, filters, c_n, (int) ch.nt, 1.0f,
            b.m + xi * ch.ms, (int) ch.ld, v + xi * ch.xs, (int) ch.ld,
            q > lo ? 1.0f : 0.0f, b.du + xi * fc, c_n);
      /* V[xi] is done with: dV[xi] over it */
      if (j->pass != WINO_BACKWARD_WEIGHT)
        tt_gemm (false, false, c_n, (int) ch.ld, filters, 1.0f,
            j->u + xi * fc, filters, b.m + xi * ch.ms, (int) ch.ld, 0.0f,
            v + xi * ch.xs, (int) ch.ld);
    }
    if (j->pass != WINO_BACKWARD_WEIGHT)
      wino_chunk_input_gradient (j, &ch, v, b.pad);
  }
  if (weight && j->dbias) {
    /* the part's samples: whole blocks of its chunks */
    const size_t per = (size_t) s->chunk * WB;
    const int b0 = (int) (lo * per), b1 = (int) (hi * per);
    for (int f = 0; f < filters; f++)
      wino_bias_gradient (g, filters, b0 < j->batch ? b0 : j->batch,
          b1 < j->batch ? b1 : j->batch, f, j->x, b.dbias);
  }
}

/* The filters' transforms split by ranges of (filter, channel) pairs,
 * whole WINO_FB lanes a part: they took 6% of the CNN's second layer's
 * forward on one thread, and a pass of a split layer waited for them on
 * the caller alone. The transform of U (or U^T) from w; or dw from the
 * parts' dU partials, added in part order pair by pair. */
#define WINO_FILTER_SPLIT_MIN 1024      /* pairs */

typedef struct
{
  const wino_shape *s;
  int filters, channels;
  const float *w;
  float *u;
  bool transposed;
  const float *du[TT_THREADS_MAX];
  unsigned n_du;
  float *dw;
} wino_filter_job;

static TT_VECTOR_CLONES void
wino_filter_part (void *arg, unsigned part, unsigned n_parts)
{
  const wino_filter_job *f = arg;
  size_t lo, hi;
  tt_threads_range ((size_t) f->filters * f->channels, WINO_FB, part,
      n_parts, &lo, &hi);
  if (f->dw)
    wino_filter_gradient (f->s, f->filters, f->channels, f->du, f->n_du,
        f->dw, lo, hi);
  else
    wino_filter_transform (f->s, f->filters, f->channels, f->w, f->u,
        f->transposed, lo, hi);
}

static void
wino_filter_run (tt_threads * pool, wino_filter_job * f)
{
  const size_t pairs = (size_t) f->filters * f->channels;
  tt_threads_run (pool, wino_filter_part, f, pairs < WINO_FILTER_SPLIT_MIN ?
      1 : tt_threads_parts (pool, (pairs + WINO_FB - 1) / WINO_FB, 2));
}

/* U (transposed: U^T) of w into u */
static void
wino_run_filter_transform (wino_job * j, const float *w, float *u,
    bool transposed)
{
  wino_filter_job f = {.s = j->s,.filters = j->filters,
    .channels = j->g->channels,.w = w,.u = u,.transposed = transposed
  };
  wino_filter_run (j->pool, &f);
  j->u = u;
}

/* Runs the pass by chunks; with the weight gradient, dw from the parts'
 * dU (part 0's in the layer's scratch) and dbias, each added in part
 * order: those of the parts that had chunks, the first ones. */
static void
wino_run (wino_job * j, float *dw)
{
  const bool weight = wino_pass_has_gradient (j);
  const wino_part_layout o = wino_part_layout_of (j->g, j->s, j->filters,
      weight);
  const unsigned parts = tt_threads_run_partials (j->pool, o.total,
      wino_part, j);
  if (!weight)
    return;
  const size_t chunks = wino_chunks (j->s);
  const unsigned used = parts < chunks ? parts : (unsigned) chunks;
  wino_filter_job f = {.s = j->s,.filters = j->filters,
    .channels = j->g->channels,.dw = dw,.n_du = used
  };
  for (unsigned part = 0; part < used; part++)
    f.du[part] = wino_part_buffers_of (j, part).du;
  if (j->dbias)
    tt_threads_add_partials (j->pool, used, o.dbias, j->dbias,
        (size_t) j->filters);
  wino_filter_run (j->pool, &f);
}

TT_VECTOR_CLONES void
tt_conv2d_winograd_forward (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, const float *x, const float *w, const float *bias,
    float *y, float *out)
{
  const wino_shape s = wino_shape_of (g, batch);
  wino_job j = {.pass = WINO_FORWARD,.pool = pool,.g = g,.s = &s,
    .filters = filters,.batch = batch,.x = x,.bias = bias,.y = y,
    .sc = wino_scratch_of (g, &s, filters, out)
  };
  wino_run_filter_transform (&j, w, j.sc.u, false);
  wino_run (&j, NULL);
}

TT_VECTOR_CLONES void
tt_conv2d_winograd_backward_weight (tt_threads * pool,
    const tt_window_geom * g, int filters, int batch, const float *x,
    const float *dy, float *dw, float *dbias, float *out)
{
  const wino_shape s = wino_shape_of (g, batch);
  wino_job j = {.pass = WINO_BACKWARD_WEIGHT,.pool = pool,.g = g,.s = &s,
    .filters = filters,.batch = batch,.x = dy,.in = x,
    .sc = wino_scratch_of (g, &s, filters, out),.dbias = dbias
  };
  wino_run (&j, dw);
}

TT_VECTOR_CLONES void
tt_conv2d_winograd_backward_input (tt_threads * pool,
    const tt_window_geom * g, int filters, int batch, const float *w,
    const float *dy, float *dx, float *out)
{
  const wino_shape s = wino_shape_of (g, batch);
  wino_job j = {.pass = WINO_BACKWARD_INPUT,.pool = pool,.g = g,.s = &s,
    .filters = filters,.batch = batch,.x = dy,.y = dx,
    .sc = wino_scratch_of (g, &s, filters, out)
  };
  /* U^T stored as such: dV = U^T dM is then a plain product, which
   * OpenBLAS runs without packing U */
  wino_run_filter_transform (&j, w, j.sc.u, true);
  wino_run (&j, NULL);
}

/* Both backward passes in one sweep (the layer runs them back to back):
 * each chunk's dM is transformed once for dU and dV, instead of once in
 * each pass, and V is read for dU right before dV overwrites it. The same
 * arithmetic as the two passes. out sized with both (U^T apart from dU). */
TT_VECTOR_CLONES void
tt_conv2d_winograd_backward (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, const float *x, const float *w, const float *dy,
    float *dw, float *dbias, float *dx, float *out)
{
  const wino_shape s = wino_shape_of (g, batch);
  wino_job j = {.pass = WINO_BACKWARD_BOTH,.pool = pool,.g = g,.s = &s,
    .filters = filters,.batch = batch,.x = dy,.in = x,.y = dx,
    .sc = wino_scratch_of (g, &s, filters, out),.dbias = dbias
  };
  wino_run_filter_transform (&j, w, j.sc.ut, true);
  wino_run (&j, dw);
}
