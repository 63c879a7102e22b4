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
 * The batch is the innermost dimension of every transformed matrix: tile
 * position p of sample b is column p * batch + b. Each transform then
 * works on whole runs of `batch` floats (one per sample) with the same
 * arithmetic, which the compiler vectorizes; only the gathers from and
 * scatters to the NCHW tensors are scalar, one float per input or output
 * value.
 *
 * Scratch (both from the memory pool, kernels.h): col holds V from
 * forward to backward_weight, then dV; out holds U (or dU), the products
 * of one chunk of tile positions, and one zero-padded channel plane in
 * batch-innermost layout.
 */
#include "kernels.h"
#include "tt_internal.h"

#include <string.h>

/* Columns (tile positions x batch) per chunk of GEMMs: M of a chunk (16 x
 * F x columns) stays in cache between the GEMMs that write it and the
 * output transform that reads it. 256 and 512 measured the same on the
 * CNN; with 512 the planner reaches its lower bound there (256: 1.9%
 * above). */
#define WINO_CHUNK_COLUMNS 512

#define WINO_INLINE static inline __attribute__ ((always_inline))

/* The loops over the batch write 16 (or read 16) rows of one matrix at
 * run-time distances: the compiler cannot prove that they do not overlap
 * and would not vectorize them. They never do (xs >= n). */
#if defined(__clang__)
#define WINO_IVDEP _Pragma ("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define WINO_IVDEP _Pragma ("GCC ivdep")
#else
#define WINO_IVDEP
#endif

bool
tt_conv2d_winograd_applies (const tt_window_geom * g)
{
  if (g->kernel_h != 3 || g->kernel_w != 3 || g->stride_h != 1 ||
      g->stride_w != 1 || g->dilation_h != 1 || g->dilation_w != 1 ||
      g->channels < 16)
    return false;
  /* Not worth it (and V would outgrow the im2col columns) when the 2x2
   * tiles mostly hang over the output's edge. */
  const size_t th = (size_t) (g->out_h + 1) / 2;
  const size_t tw = (size_t) (g->out_w + 1) / 2;
  return 16 * th * tw <= 9 * (size_t) g->out_h * g->out_w;
}

typedef struct {
  int th, tw;                   /* tile positions, down and across */
  int ph, pw;                   /* padded plane: 2 * th + 2 by 2 * tw + 2 */
  int pos;                      /* th * tw */
  int chunk;                    /* tile positions per chunk */
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
  s.chunk = batch > 0 ? WINO_CHUNK_COLUMNS / batch : 1;
  if (s.chunk < 1)
    s.chunk = 1;
  if (s.chunk > s.pos)
    s.chunk = s.pos;
  return s;
}

size_t
tt_conv2d_winograd_col_floats (const tt_window_geom * g, int batch)
{
  const wino_shape s = wino_shape_of (g, batch);
  return 16 * (size_t) g->channels * s.pos * (size_t) batch;
}

size_t
tt_conv2d_winograd_out_floats (const tt_window_geom * g, int filters,
    int batch)
{
  const wino_shape s = wino_shape_of (g, batch);
  return 16 * (size_t) filters * g->channels +
      16 * (size_t) filters * s.chunk * batch +
      (size_t) s.ph * s.pw * batch;
}

/* Layout of the out scratch. */
typedef struct {
  float *u;                     /* U or dU: [16][F][C] */
  float *m;                     /* M or dM of a chunk: [16][F][chunk * n] */
  float *pad;                   /* one padded plane: [ph][pw][n] */
} wino_scratch;

static wino_scratch
wino_scratch_of (const tt_window_geom * g, const wino_shape * s, int filters,
    int n, float *out)
{
  wino_scratch w;
  w.u = out;
  w.m = w.u + 16 * (size_t) filters * g->channels;
  w.pad = w.m + 16 * (size_t) filters * s->chunk * n;
  return w;
}

/* U[xi][f][c] = (G g G^T)[xi] for every filter f and channel c. */
static void
wino_filter_transform (int filters, int channels, const float *w, float *u)
{
  const size_t fc = (size_t) filters * channels;
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
    for (int xi = 0; xi < 16; xi++)
      u[xi * fc + k] = r[xi];
  }
}

/* dw[f][c] = G^T dU[f][c] G, the adjoint of wino_filter_transform. */
static void
wino_filter_gradient (int filters, int channels, const float *du, float *dw)
{
  const size_t fc = (size_t) filters * channels;
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

/* pad[r][q][b] = x[b][c][r - pad_top][q - pad_left], 0 outside. */
WINO_INLINE void
wino_gather_plane (const tt_window_geom * g, const wino_shape * s, int n,
    const float *restrict x, int c, float *restrict pad)
{
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t stride = (size_t) g->channels * in_plane;
  memset (pad, 0, sizeof (float) * s->ph * s->pw * n);
  for (int iy = 0; iy < g->in_h && iy + g->pad_top < s->ph; iy++)
    for (int ix = 0; ix < g->in_w && ix + g->pad_left < s->pw; ix++) {
      float *d = pad + ((size_t) (iy + g->pad_top) * s->pw + ix +
          g->pad_left) * n;
      const float *src = x + c * in_plane + (size_t) iy * g->in_w + ix;
      for (int b = 0; b < n; b++)
        d[b] = src[b * stride];
    }
}

/* dx[b][c][iy][ix] = pad[iy + pad_top][ix + pad_left][b]. */
WINO_INLINE void
wino_scatter_plane (const tt_window_geom * g, const wino_shape * s, int n,
    const float *restrict pad, int c, float *restrict dx)
{
  const size_t in_plane = (size_t) g->in_h * g->in_w;
  const size_t stride = (size_t) g->channels * in_plane;
  for (int iy = 0; iy < g->in_h; iy++)
    for (int ix = 0; ix < g->in_w; ix++) {
      const int r = iy + g->pad_top, q = ix + g->pad_left;
      float *d = dx + c * in_plane + (size_t) iy * g->in_w + ix;
      if (r >= s->ph || q >= s->pw) {
        for (int b = 0; b < n; b++)
          d[b * stride] = 0.0f;
        continue;
      }
      const float *src = pad + ((size_t) r * s->pw + q) * n;
      for (int b = 0; b < n; b++)
        d[b * stride] = src[b];
    }
}

/* V[xi][c][p * n + b] = (B^T d B)[xi] for every tile position p, d the
 * 4x4 tile at (2 ty, 2 tx) of the padded plane; xs is the stride of xi
 * in v. */
WINO_INLINE void
wino_input_transform (const wino_shape * s, int n, const float *restrict pad,
    float *restrict v, size_t xs)
{
  const size_t row = (size_t) s->pw * n;
  for (int ty = 0; ty < s->th; ty++)
    for (int tx = 0; tx < s->tw; tx++) {
      const float *d0 = pad + (size_t) 2 * ty * row + (size_t) 2 * tx * n;
      const float *d1 = d0 + row, *d2 = d1 + row, *d3 = d2 + row;
      float *o = v + (size_t) (ty * s->tw + tx) * n;
      WINO_IVDEP
      for (int b = 0; b < n; b++) {
        float t[4][4];
        /* B^T d: combine rows */
        for (int j = 0; j < 4; j++) {
          const float a0 = d0[j * n + b], a1 = d1[j * n + b];
          const float a2 = d2[j * n + b], a3 = d3[j * n + b];
          t[0][j] = a0 - a2;
          t[1][j] = a1 + a2;
          t[2][j] = a2 - a1;
          t[3][j] = a1 - a3;
        }
        /* (B^T d) B: combine columns */
        for (int i = 0; i < 4; i++) {
          o[(4 * i) * xs + b] = t[i][0] - t[i][2];
          o[(4 * i + 1) * xs + b] = t[i][1] + t[i][2];
          o[(4 * i + 2) * xs + b] = t[i][2] - t[i][1];
          o[(4 * i + 3) * xs + b] = t[i][1] - t[i][3];
        }
      }
    }
}

/* pad += B dV B^T for every tile position; dv and xs as V above. */
WINO_INLINE void
wino_input_gradient (const wino_shape * s, int n, const float *restrict dv,
    size_t xs, float *restrict pad)
{
  const size_t row = (size_t) s->pw * n;
  for (int ty = 0; ty < s->th; ty++)
    for (int tx = 0; tx < s->tw; tx++) {
      float *d0 = pad + (size_t) 2 * ty * row + (size_t) 2 * tx * n;
      float *d1 = d0 + row, *d2 = d1 + row, *d3 = d2 + row;
      const float *e = dv + (size_t) (ty * s->tw + tx) * n;
      WINO_IVDEP
      for (int b = 0; b < n; b++) {
        float t[4][4];
        /* dV B^T: combine the columns of each row */
        for (int i = 0; i < 4; i++) {
          const float a = e[(4 * i) * xs + b], c = e[(4 * i + 2) * xs + b];
          const float bb = e[(4 * i + 1) * xs + b];
          const float d = e[(4 * i + 3) * xs + b];
          t[i][0] = a;
          t[i][1] = bb - c + d;
          t[i][2] = bb + c - a;
          t[i][3] = -d;
        }
        /* B (dV B^T): combine rows */
        for (int j = 0; j < 4; j++) {
          d0[j * n + b] += t[0][j];
          d1[j * n + b] += t[1][j] - t[2][j] + t[3][j];
          d2[j * n + b] += t[1][j] + t[2][j] - t[0][j];
          d3[j * n + b] -= t[3][j];
        }
      }
    }
}

/* dM[xi][f][(p - p0) * n + b] = (A dY A^T)[xi] for positions [p0, p1) of
 * filter f; dY is sample b's 2x2 output tile, 0 past the output's edge.
 * tile: scratch of 4 * n floats; xs: stride of xi in dm. */
WINO_INLINE void
wino_output_gradient (const tt_window_geom * g, const wino_shape * s, int n,
    int filters, const float *restrict dy, int f, int p0, int p1,
    float *restrict tile, float *restrict dm, size_t xs)
{
  const int oh = g->out_h, ow = g->out_w;
  const size_t ohw = (size_t) oh * ow, stride = (size_t) filters * ohw;
  for (int p = p0; p < p1; p++) {
    const int oy = 2 * (p / s->tw), ox = 2 * (p % s->tw);
    const float *src = dy + (size_t) f * ohw + (size_t) oy * ow + ox;
    const bool right = ox + 1 < ow, down = oy + 1 < oh;
    float *ta = tile, *tb = tile + n, *tc = tile + 2 * n, *td = tile + 3 * n;
    for (int b = 0; b < n; b++) {
      const float *q = src + b * stride;
      ta[b] = q[0];
      tb[b] = right ? q[1] : 0.0f;
      tc[b] = down ? q[ow] : 0.0f;
      td[b] = right && down ? q[ow + 1] : 0.0f;
    }
    float *o = dm + (size_t) (p - p0) * n;
    WINO_IVDEP
    for (int b = 0; b < n; b++) {
      const float a = ta[b], bb = tb[b], c = tc[b], d = td[b];
      /* A dY: rows (a bb), (a+c bb+d), (a-c bb-d), (-c -d); then A^T
       * on the columns of each */
      const float r[4][2] = { {a, bb}, {a + c, bb + d}, {a - c, bb - d},
      {-c, -d}
      };
      for (int i = 0; i < 4; i++) {
        o[(4 * i) * xs + b] = r[i][0];
        o[(4 * i + 1) * xs + b] = r[i][0] + r[i][1];
        o[(4 * i + 2) * xs + b] = r[i][0] - r[i][1];
        o[(4 * i + 3) * xs + b] = -r[i][1];
      }
    }
  }
}

/* y = A^T M A + bias for positions [p0, p1) of filter f, cropped to the
 * output; m as dM above. */
WINO_INLINE void
wino_output_transform (const tt_window_geom * g, const wino_shape * s, int n,
    int filters, const float *restrict m, size_t xs, int f, int p0, int p1,
    float bias, float *restrict tile, float *restrict y)
{
  const int oh = g->out_h, ow = g->out_w;
  const size_t ohw = (size_t) oh * ow, stride = (size_t) filters * ohw;
  for (int p = p0; p < p1; p++) {
    const int oy = 2 * (p / s->tw), ox = 2 * (p % s->tw);
    const bool right = ox + 1 < ow, down = oy + 1 < oh;
    const float *e = m + (size_t) (p - p0) * n;
    float *ta = tile, *tb = tile + n, *tc = tile + 2 * n, *td = tile + 3 * n;
    WINO_IVDEP
    for (int b = 0; b < n; b++) {
      float t[2][4];
      /* A^T M: combine rows */
      for (int j = 0; j < 4; j++) {
        const float m0 = e[j * xs + b], m1 = e[(4 + j) * xs + b];
        const float m2 = e[(8 + j) * xs + b], m3 = e[(12 + j) * xs + b];
        t[0][j] = m0 + m1 + m2;
        t[1][j] = m1 - m2 - m3;
      }
      ta[b] = t[0][0] + t[0][1] + t[0][2] + bias;
      tb[b] = t[0][1] - t[0][2] - t[0][3] + bias;
      tc[b] = t[1][0] + t[1][1] + t[1][2] + bias;
      td[b] = t[1][1] - t[1][2] - t[1][3] + bias;
    }
    float *dst = y + (size_t) f * ohw + (size_t) oy * ow + ox;
    for (int b = 0; b < n; b++) {
      float *q = dst + b * stride;
      q[0] = ta[b];
      if (right)
        q[1] = tb[b];
      if (down)
        q[ow] = tc[b];
      if (right && down)
        q[ow + 1] = td[b];
    }
  }
}

TT_VECTOR_CLONES void
tt_conv2d_winograd_forward (const tt_window_geom * g, int filters, int batch,
    const float *x, const float *w, const float *bias, float *y, float *col,
    float *out)
{
  const int c_n = g->channels, n = batch;
  const wino_shape s = wino_shape_of (g, n);
  const wino_scratch sc = wino_scratch_of (g, &s, filters, n, out);
  const size_t ld = (size_t) s.pos * n;        /* row length of V */
  const size_t fc = (size_t) filters * c_n;

  wino_filter_transform (filters, c_n, w, sc.u);
  for (int c = 0; c < c_n; c++) {
    wino_gather_plane (g, &s, n, x, c, sc.pad);
    wino_input_transform (&s, n, sc.pad, col + (size_t) c * ld,
        (size_t) c_n * ld);
  }
  for (int p0 = 0; p0 < s.pos; p0 += s.chunk) {
    const int p1 = s.pos - p0 < s.chunk ? s.pos : p0 + s.chunk;
    const size_t nt = (size_t) (p1 - p0) * n;
    for (int xi = 0; xi < 16; xi++)
      tt_gemm (false, false, filters, (int) nt, c_n, 1.0f, sc.u + xi * fc,
          c_n, col + (size_t) xi * c_n * ld + (size_t) p0 * n, (int) ld,
          0.0f, sc.m + (size_t) xi * filters * nt, (int) nt);
    for (int f = 0; f < filters; f++)
      wino_output_transform (g, &s, n, filters, sc.m + (size_t) f * nt,
          (size_t) filters * nt, f, p0, p1, bias ? bias[f] : 0.0f, sc.pad,
          y);
  }
}

TT_VECTOR_CLONES void
tt_conv2d_winograd_backward_weight (const tt_window_geom * g, int filters,
    int batch, const float *dy, float *dw, float *dbias, const float *col,
    float *out)
{
  const int c_n = g->channels, n = batch;
  const wino_shape s = wino_shape_of (g, n);
  const wino_scratch sc = wino_scratch_of (g, &s, filters, n, out);
  const size_t ld = (size_t) s.pos * n;
  const size_t ohw = (size_t) g->out_h * g->out_w;
  const size_t fc = (size_t) filters * c_n;

  for (int p0 = 0; p0 < s.pos; p0 += s.chunk) {
    const int p1 = s.pos - p0 < s.chunk ? s.pos : p0 + s.chunk;
    const size_t nt = (size_t) (p1 - p0) * n;
    for (int f = 0; f < filters; f++)
      wino_output_gradient (g, &s, n, filters, dy, f, p0, p1, sc.pad,
          sc.m + (size_t) f * nt, (size_t) filters * nt);
    for (int xi = 0; xi < 16; xi++)
      tt_gemm (false, true, filters, c_n, (int) nt, 1.0f,
          sc.m + (size_t) xi * filters * nt, (int) nt,
          col + (size_t) xi * c_n * ld + (size_t) p0 * n, (int) ld,
          p0 ? 1.0f : 0.0f, sc.u + xi * fc, c_n);
  }
  wino_filter_gradient (filters, c_n, sc.u, dw);
  if (dbias)
    for (int f = 0; f < filters; f++) {
      float sum = 0.0f;
      for (int b = 0; b < n; b++) {
        const float *q = dy + ((size_t) b * filters + f) * ohw;
        for (size_t k = 0; k < ohw; k++)
          sum += q[k];
      }
      dbias[f] = sum;
    }
}

TT_VECTOR_CLONES void
tt_conv2d_winograd_backward_input (const tt_window_geom * g, int filters,
    int batch, const float *w, const float *dy, float *dx, float *col,
    float *out)
{
  const int c_n = g->channels, n = batch;
  const wino_shape s = wino_shape_of (g, n);
  const wino_scratch sc = wino_scratch_of (g, &s, filters, n, out);
  const size_t ld = (size_t) s.pos * n;
  const size_t fc = (size_t) filters * c_n;

  wino_filter_transform (filters, c_n, w, sc.u);
  for (int p0 = 0; p0 < s.pos; p0 += s.chunk) {
    const int p1 = s.pos - p0 < s.chunk ? s.pos : p0 + s.chunk;
    const size_t nt = (size_t) (p1 - p0) * n;
    for (int f = 0; f < filters; f++)
      wino_output_gradient (g, &s, n, filters, dy, f, p0, p1, sc.pad,
          sc.m + (size_t) f * nt, (size_t) filters * nt);
    /* dV over V's columns (backward_weight is done with them) */
    for (int xi = 0; xi < 16; xi++)
      tt_gemm (true, false, c_n, (int) nt, filters, 1.0f, sc.u + xi * fc,
          c_n, sc.m + (size_t) xi * filters * nt, (int) nt, 0.0f,
          col + (size_t) xi * c_n * ld + (size_t) p0 * n, (int) ld);
  }
  for (int c = 0; c < c_n; c++) {
    memset (sc.pad, 0, sizeof (float) * s.ph * s.pw * n);
    wino_input_gradient (&s, n, col + (size_t) c * ld, (size_t) c_n * ld,
        sc.pad);
    wino_scatter_plane (g, &s, n, sc.pad, c, dx);
  }
}
