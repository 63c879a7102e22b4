/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Winograd F(2x2, 3x3) convolution for 3x3, stride-1 layers with enough
 * channels (the CNN's second layer, 32 -> 64). Each 2x2 output tile is
 * computed from a 4x4 input tile d as
 *
 *     Y = A^T [ (G g G^T) . (B^T d B) ] A
 *
 * so the 36 multiplies per tile and channel pair of a direct 3x3 become
 * 16, and the sum over channels becomes 16 independent GEMMs, one per
 * position xi of the 4x4 transformed tile:
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
 * F(2x2, 3x3) keeps the transforms exact in binary up to rounding (the
 * constants are 0, +-1 and 1/2), so its error stays at float rounding.
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
 * Scratch (both from the memory pool, kernels.h): col holds V from
 * forward to backward_weight, then dV, chunk after chunk ([16][C][columns]
 * each), or in a forward-only layer the V of one chunk; out holds U (or dU), the products
 * of one chunk of sample blocks, and the zero-padded plane of one block
 * and channel (or the output tiles of one block and filter).
 */
#include "kernels.h"
#include "tt_internal.h"

#include <string.h>

/* Samples per vector of the transforms. */
#define WB 8

/* GEMM columns per chunk, in whole blocks (at least one): M of a chunk
 * (16 x F x columns) stays in cache between the GEMMs that write it and
 * the output transform that reads it. */
#define WINO_CHUNK_COLUMNS 512

#define WINO_INLINE static inline __attribute__ ((always_inline))

/* The lane loops write (or read) 16 rows of one matrix at run-time
 * distances: the compiler cannot prove that they do not overlap and would
 * not vectorize them. They never do (the distance is at least WB). */
#if defined(__GNUC__) && !defined(__clang__)
#define WINO_IVDEP _Pragma ("GCC ivdep")
#else
/* (clang's assume_safety warns where it cannot vectorize; clang builds
 * are the fuzzing ones, where speed does not matter) */
#define WINO_IVDEP
#endif

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
  /* Not worth it when the 2x2 tiles mostly hang over the output's edge. */
  const size_t th = (size_t) (g->out_h + 1) / 2;
  const size_t tw = (size_t) (g->out_w + 1) / 2;
  return 16 * th * tw <= 9 * (size_t) g->out_h * g->out_w;
}

typedef struct {
  int th, tw;                   /* tile positions, down and across */
  int ph, pw;                   /* padded plane: 2 * th + 2 by 2 * tw + 2 */
  int pos;                      /* th * tw */
  int blocks;                   /* blocks of WB samples */
  int chunk;                    /* blocks per chunk of GEMMs */
  size_t bcols;                 /* columns of a block: pos * WB */
  size_t ld;                    /* columns: blocks * bcols */
} wino_shape;

static wino_shape
wino_shape_of (const tt_window_geom * g, int batch)
{
  wino_shape s;
  s.th = (g->out_h + 1) / 2;
  s.tw = (g->out_w + 1) / 2;
  s.ph = 2 * s.th + 2;
  s.pw = 2 * s.tw + 2;
  s.pos = s.th * s.tw;
  s.blocks = batch > 0 ? (batch + WB - 1) / WB : 1;
  s.bcols = (size_t) s.pos * WB;
  s.chunk = (int) (WINO_CHUNK_COLUMNS / s.bcols);
  if (s.chunk < 1)
    s.chunk = 1;
  if (s.chunk > s.blocks)
    s.chunk = s.blocks;
  s.ld = (size_t) s.blocks * s.bcols;
  return s;
}

size_t
tt_conv2d_winograd_col_floats (const tt_window_geom * g, int batch,
    bool keep)
{
  const wino_shape s = wino_shape_of (g, batch);
  return 16 * (size_t) g->channels * (keep ? s.ld : s.chunk * s.bcols);
}

/* V (or dV) of the chunk that starts at block k0: [16][C][nt], nt its
 * columns; chunk after chunk in col when kept for the backward passes. */
static inline float *
wino_chunk_of (const tt_window_geom * g, const wino_shape * s, float *col,
    int k0)
{
  return col + 16 * (size_t) g->channels * k0 * s->bcols;
}

size_t
tt_conv2d_winograd_out_floats (const tt_window_geom * g, int filters,
    int batch, bool both)
{
  const wino_shape s = wino_shape_of (g, batch);
  return 16 * (size_t) filters * g->channels * (both ? 2 : 1) +
      16 * (size_t) filters * s.chunk * s.bcols + (size_t) s.ph * s.pw * WB;
}

/* Layout of the out scratch. */
typedef struct {
  float *u;                     /* U or dU: [16][F][C] */
  float *m;                     /* M or dM of a chunk: [16][F][columns] */
  float *pad;                   /* a block's padded plane [ph][pw][WB], or
                                 * its output tiles [pos][4][WB] (fewer
                                 * floats: 4 * th * tw <= ph * pw) */
  float *ut;                    /* U^T [16][C][F] while dU is in u (both
                                 * backward passes at once) */
} wino_scratch;

static wino_scratch
wino_scratch_of (const tt_window_geom * g, const wino_shape * s, int filters,
    float *out)
{
  wino_scratch w;
  w.u = out;
  w.m = w.u + 16 * (size_t) filters * g->channels;
  w.pad = w.m + 16 * (size_t) filters * s->chunk * s->bcols;
  w.ut = w.pad + (size_t) s->ph * s->pw * WB;
  return w;
}

/* U[xi][f][c] = (G g G^T)[xi] for every filter f and channel c, or
 * U[xi][c][f] when transposed. */
WINO_INLINE void
wino_filter_transform (int filters, int channels, const float *restrict w,
    float *restrict u, bool transposed)
{
  const size_t fc = (size_t) filters * channels;
  WINO_IVDEP
  for (size_t k = 0; k < fc; k++) {
    const float *g = w + 9 * k;
    float t[4][3], r[16];
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
    const size_t o = transposed ? (k % channels) * filters + k / channels :
        k;
    for (int xi = 0; xi < 16; xi++)
      u[xi * fc + o] = r[xi];
  }
}

/* dw[f][c] = G^T dU[f][c] G, the adjoint of wino_filter_transform. */
WINO_INLINE void
wino_filter_gradient (int filters, int channels, const float *restrict du,
    float *restrict dw)
{
  const size_t fc = (size_t) filters * channels;
  WINO_IVDEP
  for (size_t k = 0; k < fc; k++) {
    float d[16], t[3][4];
    for (int xi = 0; xi < 16; xi++)
      d[xi] = du[xi * fc + k];
    for (int j = 0; j < 4; j++) {
      t[0][j] = d[j] + 0.5f * (d[4 + j] + d[8 + j]);
      t[1][j] = 0.5f * (d[4 + j] - d[8 + j]);
      t[2][j] = 0.5f * (d[4 + j] + d[8 + j]) + d[12 + j];
    }
    float *o = dw + 9 * k;
    for (int i = 0; i < 3; i++) {
      o[3 * i] = t[i][0] + 0.5f * (t[i][1] + t[i][2]);
      o[3 * i + 1] = 0.5f * (t[i][1] - t[i][2]);
      o[3 * i + 2] = 0.5f * (t[i][1] + t[i][2]) + t[i][3];
    }
  }
}

/* Moving 8 x 8 blocks between the NCHW planes of a block's samples and
 * the lane-interleaved layout: 8 vector loads, a transpose in registers,
 * 8 vector stores, instead of 64 scalar moves. Rows of at least WB floats
 * go by blocks of WB columns, the last block overlapping the one before
 * (it moves the same values again). */
typedef float wvec __attribute__ ((vector_size (4 * WB)));

#if defined(__clang__)
#define WSHUF(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
  __builtin_shufflevector (a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#else
typedef int32_t wivec __attribute__ ((vector_size (4 * WB)));
#define WSHUF(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
  __builtin_shuffle (a, b, (wivec) { i0, i1, i2, i3, i4, i5, i6, i7 })
#endif

/* r[i][j] -> r[j][i] */
WINO_INLINE void
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
WINO_INLINE void
wino_load_columns (const float *src, size_t stride, int nb, wvec * r)
{
  for (int l = 0; l < WB; l++) {
    if (l < nb)
      memcpy (&r[l], src + l * stride, sizeof (wvec));
    else
      r[l] = (wvec) { 0 };
  }
  wino_transpose8 (r);
}

/* The inverse: r[j] (column x0 + j of every sample) into the nb planes. */
WINO_INLINE void
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
WINO_INLINE void
wino_gather_plane (const tt_window_geom * g, const wino_shape * s,
    const float *restrict x, int b0, int nb, int c, float *restrict pad)
{
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t stride = (size_t) g->channels * in_plane;
  const int rows = s->ph - g->pad_top < g->in_h ? s->ph - g->pad_top :
      g->in_h;
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
WINO_INLINE void
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

/* v[xi * xs + p * WB + l] = (B^T d B)[xi] for every tile position p of a
 * block, d the 4x4 tile at (2 ty, 2 tx) of the padded plane. */
WINO_INLINE void
wino_input_transform (const wino_shape * s, const float *restrict pad,
    float *restrict v, size_t xs)
{
  const size_t row = (size_t) s->pw * WB;
  for (int ty = 0; ty < s->th; ty++)
    for (int tx = 0; tx < s->tw; tx++) {
      const float *d0 = pad + (size_t) 2 * ty * row + (size_t) 2 * tx * WB;
      const float *d1 = d0 + row, *d2 = d1 + row, *d3 = d2 + row;
      float *o = v + (size_t) (ty * s->tw + tx) * WB;
      WINO_IVDEP
      for (int l = 0; l < WB; l++) {
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
WINO_INLINE void
wino_input_gradient (const wino_shape * s, const float *restrict dv,
    size_t xs, float *restrict pad)
{
  const size_t row = (size_t) s->pw * WB;
  for (int ty = 0; ty < s->th; ty++)
    for (int tx = 0; tx < s->tw; tx++) {
      float *d0 = pad + (size_t) 2 * ty * row + (size_t) 2 * tx * WB;
      float *d1 = d0 + row, *d2 = d1 + row, *d3 = d2 + row;
      const float *e = dv + (size_t) (ty * s->tw + tx) * WB;
      WINO_IVDEP
      for (int l = 0; l < WB; l++) {
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

/* Rows narrower than WB: the tile values sample by sample. */
WINO_INLINE void
wino_output_gradient_scalar (const tt_window_geom * g, const wino_shape * s,
    int filters, const float *restrict dy, int b0, int nb, int f,
    float *restrict tile)
{
  const int oh = g->out_h, ow = g->out_w;
  const size_t ohw = (size_t) oh * ow, stride = (size_t) filters * ohw;
  for (int l = 0; l < nb; l++) {
    const float *src = dy + (size_t) (b0 + l) * stride + f * ohw;
    float *t = tile + l;
    for (int ty = 0; ty < s->th; ty++)
      for (int tx = 0; tx < s->tw; tx++, t += 4 * WB) {
        const int oy = 2 * ty, ox = 2 * tx;
        const bool right = ox + 1 < ow, down = oy + 1 < oh;
        const float *q = src + (size_t) oy * ow + ox;
        t[0] = q[0];
        t[WB] = right ? q[1] : 0.0f;
        t[2 * WB] = down ? q[ow] : 0.0f;
        t[3 * WB] = right && down ? q[ow + 1] : 0.0f;
      }
  }
}

/* dm[xi * xs + p * WB + l] = (A dY A^T)[xi] for every tile position of a
 * block and filter f; dY is sample b0 + l's 2x2 output tile, 0 past the
 * output's edge and for missing samples. tile: [pos][4][WB] scratch. */
WINO_INLINE void
wino_output_gradient (const tt_window_geom * g, const wino_shape * s,
    int filters, const float *restrict dy, int b0, int nb, int f,
    float *restrict tile, float *restrict dm, size_t xs)
{
  const int oh = g->out_h, ow = g->out_w;
  const size_t ohw = (size_t) oh * ow, stride = (size_t) filters * ohw;
  if (ow >= WB) {
    /* tile slot of output (oy, ox): position (oy / 2, ox / 2), value
     * 2 * (oy % 2) + ox % 2; slots past the output's edge stay 0 */
    const int nblk = (ow + WB - 1) / WB;
    memset (tile, 0, sizeof (float) * 4 * WB * s->pos);
    for (int oy = 0; oy < oh; oy++)
      for (int k = 0; k < nblk; k++) {
        const int ox = wino_col_block (k, ow);
        wvec r[WB];
        wino_load_columns (dy + (size_t) b0 * stride + f * ohw +
            (size_t) oy * ow + ox, stride, nb, r);
        for (int j = 0; j < WB; j++) {
          const int x = ox + j;
          memcpy (tile + ((size_t) ((oy / 2) * s->tw + x / 2) * 4 +
                  2 * (oy % 2) + x % 2) * WB, &r[j], sizeof (wvec));
        }
      }
  } else {
    if (nb < WB)
      memset (tile, 0, sizeof (float) * 4 * WB * s->pos);
    wino_output_gradient_scalar (g, s, filters, dy, b0, nb, f, tile);
  }
  for (int p = 0; p < s->pos; p++) {
    const float *ta = tile + (size_t) p * 4 * WB;
    float *o = dm + (size_t) p * WB;
    WINO_IVDEP
    for (int l = 0; l < WB; l++) {
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

/* y = A^T M A + bias for every tile position of a block and filter f,
 * cropped to the output; m as dm above, tile as there. */
WINO_INLINE void
wino_output_transform (const tt_window_geom * g, const wino_shape * s,
    int filters, const float *restrict m, size_t xs, int b0, int nb, int f,
    float bias, float *restrict tile, float *restrict y)
{
  const int oh = g->out_h, ow = g->out_w;
  const size_t ohw = (size_t) oh * ow, stride = (size_t) filters * ohw;
  for (int p = 0; p < s->pos; p++) {
    const float *e = m + (size_t) p * WB;
    float *ta = tile + (size_t) p * 4 * WB;
    WINO_IVDEP
    for (int l = 0; l < WB; l++) {
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
  if (ow >= WB) {
    const int nblk = (ow + WB - 1) / WB;
    for (int oy = 0; oy < oh; oy++)
      for (int k = 0; k < nblk; k++) {
        const int ox = wino_col_block (k, ow);
        wvec r[WB];
        for (int j = 0; j < WB; j++) {
          const int x = ox + j;
          memcpy (&r[j], tile + ((size_t) ((oy / 2) * s->tw + x / 2) * 4 +
                  2 * (oy % 2) + x % 2) * WB, sizeof (wvec));
        }
        wino_store_columns (r, y + (size_t) b0 * stride + f * ohw +
            (size_t) oy * ow + ox, stride, nb);
      }
    return;
  }
  for (int l = 0; l < nb; l++) {
    float *dst = y + (size_t) (b0 + l) * stride + f * ohw;
    const float *t = tile + l;
    for (int ty = 0; ty < s->th; ty++)
      for (int tx = 0; tx < s->tw; tx++, t += 4 * WB) {
        const int oy = 2 * ty, ox = 2 * tx;
        const bool right = ox + 1 < ow, down = oy + 1 < oh;
        float *q = dst + (size_t) oy * ow + ox;
        q[0] = t[0];
        if (right)
          q[1] = t[WB];
        if (down)
          q[ow] = t[2 * WB];
        if (right && down)
          q[ow + 1] = t[3 * WB];
      }
  }
}

static inline int
wino_block_samples (int batch, int k)
{
  return batch - k * WB < WB ? batch - k * WB : WB;
}

TT_VECTOR_CLONES void
tt_conv2d_winograd_forward (const tt_window_geom * g, int filters, int batch,
    const float *x, const float *w, const float *bias, float *y, float *col,
    float *out, bool keep)
{
  const int c_n = g->channels;
  const wino_shape s = wino_shape_of (g, batch);
  const wino_scratch sc = wino_scratch_of (g, &s, filters, out);
  const size_t fc = (size_t) filters * c_n;

  wino_filter_transform (filters, c_n, w, sc.u, false);
  for (int k0 = 0; k0 < s.blocks; k0 += s.chunk) {
    const int k1 = s.blocks - k0 < s.chunk ? s.blocks : k0 + s.chunk;
    const size_t nt = (size_t) (k1 - k0) * s.bcols, xs = (size_t) c_n * nt;
    float *v = keep ? wino_chunk_of (g, &s, col, k0) : col;
    for (int k = k0; k < k1; k++)
      for (int c = 0; c < c_n; c++) {
        wino_gather_plane (g, &s, x, k * WB, wino_block_samples (batch, k),
            c, sc.pad);
        wino_input_transform (&s, sc.pad, v + (size_t) c * nt +
            (size_t) (k - k0) * s.bcols, xs);
      }
    for (int xi = 0; xi < 16; xi++)
      tt_gemm (false, false, filters, (int) nt, c_n, 1.0f, sc.u + xi * fc,
          c_n, v + (size_t) xi * xs, (int) nt,
          0.0f, sc.m + (size_t) xi * filters * nt, (int) nt);
    for (int f = 0; f < filters; f++)
      for (int k = k0; k < k1; k++)
        wino_output_transform (g, &s, filters, sc.m + (size_t) f * nt +
            (size_t) (k - k0) * s.bcols, (size_t) filters * nt, k * WB,
            wino_block_samples (batch, k), f, bias ? bias[f] : 0.0f, sc.pad,
            y);
  }
}

/* dbias[f] = the sum of dy over the batch's plane f. */
WINO_INLINE void
wino_bias_gradient (const tt_window_geom * g, int filters, int batch,
    const float *restrict dy, float *restrict dbias)
{
  const size_t ohw = (size_t) g->out_h * g->out_w;
  for (int f = 0; f < filters; f++) {
    /* WB partial sums (a plain running sum is one long chain of
     * dependent adds, which cannot be vectorized) */
    float part[WB] = { 0 };
    for (int b = 0; b < batch; b++) {
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
}

TT_VECTOR_CLONES void
tt_conv2d_winograd_backward_weight (const tt_window_geom * g, int filters,
    int batch, const float *dy, float *dw, float *dbias, const float *col,
    float *out)
{
  const int c_n = g->channels;
  const wino_shape s = wino_shape_of (g, batch);
  const wino_scratch sc = wino_scratch_of (g, &s, filters, out);
  const size_t fc = (size_t) filters * c_n;

  for (int k0 = 0; k0 < s.blocks; k0 += s.chunk) {
    const int k1 = s.blocks - k0 < s.chunk ? s.blocks : k0 + s.chunk;
    const size_t nt = (size_t) (k1 - k0) * s.bcols, xs = (size_t) c_n * nt;
    const float *v = wino_chunk_of (g, &s, (float *) col, k0);
    for (int f = 0; f < filters; f++)
      for (int k = k0; k < k1; k++)
        wino_output_gradient (g, &s, filters, dy, k * WB,
            wino_block_samples (batch, k), f, sc.pad, sc.m +
            (size_t) f * nt + (size_t) (k - k0) * s.bcols,
            (size_t) filters * nt);
    for (int xi = 0; xi < 16; xi++)
      tt_gemm (false, true, filters, c_n, (int) nt, 1.0f,
          sc.m + (size_t) xi * filters * nt, (int) nt,
          v + (size_t) xi * xs, (int) nt, k0 ? 1.0f : 0.0f, sc.u + xi * fc,
          c_n);
  }
  wino_filter_gradient (filters, c_n, sc.u, dw);
  if (dbias)
    wino_bias_gradient (g, filters, batch, dy, dbias);
}

TT_VECTOR_CLONES void
tt_conv2d_winograd_backward_input (const tt_window_geom * g, int filters,
    int batch, const float *w, const float *dy, float *dx, float *col,
    float *out)
{
  const int c_n = g->channels;
  const wino_shape s = wino_shape_of (g, batch);
  const wino_scratch sc = wino_scratch_of (g, &s, filters, out);
  const size_t fc = (size_t) filters * c_n;

  /* U^T stored as such: dV = U^T dM is then a plain product, which
   * OpenBLAS runs without packing U */
  wino_filter_transform (filters, c_n, w, sc.u, true);
  for (int k0 = 0; k0 < s.blocks; k0 += s.chunk) {
    const int k1 = s.blocks - k0 < s.chunk ? s.blocks : k0 + s.chunk;
    const size_t nt = (size_t) (k1 - k0) * s.bcols, xs = (size_t) c_n * nt;
    float *dv = wino_chunk_of (g, &s, col, k0);
    for (int f = 0; f < filters; f++)
      for (int k = k0; k < k1; k++)
        wino_output_gradient (g, &s, filters, dy, k * WB,
            wino_block_samples (batch, k), f, sc.pad, sc.m +
            (size_t) f * nt + (size_t) (k - k0) * s.bcols,
            (size_t) filters * nt);
    /* dV over V's columns (backward_weight is done with them) */
    for (int xi = 0; xi < 16; xi++)
      tt_gemm (false, false, c_n, (int) nt, filters, 1.0f, sc.u + xi * fc,
          filters, sc.m + (size_t) xi * filters * nt, (int) nt, 0.0f,
          dv + (size_t) xi * xs, (int) nt);
    for (int k = k0; k < k1; k++)
      for (int c = 0; c < c_n; c++) {
        memset (sc.pad, 0, sizeof (float) * s.ph * s.pw * WB);
        wino_input_gradient (&s, dv + (size_t) c * nt +
            (size_t) (k - k0) * s.bcols, xs, sc.pad);
        wino_scatter_plane (g, &s, sc.pad, k * WB,
            wino_block_samples (batch, k), c, dx);
      }
  }
}

/* Both backward passes in one sweep (the layer runs them back to back):
 * each chunk's dM is transformed once for dU and dV, instead of once in
 * each pass, and V is read for dU right before dV overwrites it. The same
 * arithmetic as the two passes. out sized with both (U^T apart from dU). */
TT_VECTOR_CLONES void
tt_conv2d_winograd_backward (const tt_window_geom * g, int filters,
    int batch, const float *w, const float *dy, float *dw, float *dbias,
    float *dx, float *col, float *out)
{
  const int c_n = g->channels;
  const wino_shape s = wino_shape_of (g, batch);
  const wino_scratch sc = wino_scratch_of (g, &s, filters, out);
  const size_t fc = (size_t) filters * c_n;

  wino_filter_transform (filters, c_n, w, sc.ut, true);
  for (int k0 = 0; k0 < s.blocks; k0 += s.chunk) {
    const int k1 = s.blocks - k0 < s.chunk ? s.blocks : k0 + s.chunk;
    const size_t nt = (size_t) (k1 - k0) * s.bcols, xs = (size_t) c_n * nt;
    float *v = wino_chunk_of (g, &s, col, k0);
    for (int f = 0; f < filters; f++)
      for (int k = k0; k < k1; k++)
        wino_output_gradient (g, &s, filters, dy, k * WB,
            wino_block_samples (batch, k), f, sc.pad, sc.m +
            (size_t) f * nt + (size_t) (k - k0) * s.bcols,
            (size_t) filters * nt);
    for (int xi = 0; xi < 16; xi++) {
      tt_gemm (false, true, filters, c_n, (int) nt, 1.0f,
          sc.m + (size_t) xi * filters * nt, (int) nt,
          v + (size_t) xi * xs, (int) nt, k0 ? 1.0f : 0.0f, sc.u + xi * fc,
          c_n);
      /* V[xi] is done with: dV[xi] over it */
      tt_gemm (false, false, c_n, (int) nt, filters, 1.0f, sc.ut + xi * fc,
          filters, sc.m + (size_t) xi * filters * nt, (int) nt, 0.0f,
          v + (size_t) xi * xs, (int) nt);
    }
    for (int k = k0; k < k1; k++)
      for (int c = 0; c < c_n; c++) {
        memset (sc.pad, 0, sizeof (float) * s.ph * s.pw * WB);
        wino_input_gradient (&s, v + (size_t) c * nt +
            (size_t) (k - k0) * s.bcols, xs, sc.pad);
        wino_scatter_plane (g, &s, sc.pad, k * WB,
            wino_block_samples (batch, k), c, dx);
      }
  }
  wino_filter_gradient (filters, c_n, sc.u, dw);
  if (dbias)
    wino_bias_gradient (g, filters, batch, dy, dbias);
}
