/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Batched convolution: the im2col columns of all n samples of a batch sit
 * side by side in one [C*kh*kw][n*out_h*out_w] matrix, so each pass is ONE
 * large GEMM instead of n small ones (per-sample GEMMs of a 28x28 CNN are
 * too small for any BLAS to run near peak).
 *
 * No columns are kept from forward to backward: backward_weight reads
 * the input and makes them again, a chunk of samples at a time, each
 * chunk's product with the output derivative added into dW
 * (tt_conv2d_batch_backward_weight); the direct and Winograd convolutions read the
 * input too. Kept, the columns were kh * kw / stride^2 times the input
 * (2.25 to 9 times for 3x3 kernels) for the whole step, beside the input
 * that backward keeps anyway for the layer before (a relu reads its
 * output). backward_input writes the column gradient into a buffer of
 * its own pass. The caller owns every buffer (kernels.h).
 *
 * Half-width operands (tt_conv2d_batch_half): in bf16 or fp16 the GEMMs
 * round the columns and the regrouped output derivative anyway, so they
 * are written rounded, at 2 bytes an element, and read in place
 * (tt_gemm_as_mixed): the same products, half the scratch kept from
 * forward to backward. The column gradient, a GEMM's fp32 result, then
 * has a buffer of its own for the input derivative's pass.
 */
#include "kernels.h"

#include <string.h>

/* Samples per chunk: the columns of a chunk (about CONV2D_CHUNK_BYTES)
 * are multiplied while they are still in cache, right after im2col wrote
 * them (or, in backward, right before col2im reads them). A whole batch of
 * columns at once spills to memory (the CNN at batch 128: +12% samples/s
 * with chunks); much smaller chunks make the GEMMs too thin (-10% at 512
 * KiB on batch 32). */
#define CONV2D_CHUNK_BYTES (1024u * 1024u)

/* A 1x1 kernel at stride 1 without padding: a sample's columns are its
 * input, so its own GEMM reads the input and writes its output, and the
 * input derivative's GEMM writes the input derivative, with no copy after
 * (col2im). Forward keeps no columns: the weight gradient gathers them
 * from the input into a buffer of its own pass (the input is usually
 * kept for backward anyway, by the activation before it, and kept
 * columns would be a second copy of it all step long). */
static bool
conv2d_pointwise (const tt_window_geom * g)
{
  return g->kernel_h == 1 && g->kernel_w == 1 && g->stride_h == 1 &&
      g->stride_w == 1 && g->pad_top == 0 && g->pad_bottom == 0 &&
      g->pad_left == 0 && g->pad_right == 0;
}

/* the algorithm the geometry and the planned batch get
 * (tt_conv2d_batch_algo) */
static bool
conv2d_direct (const tt_window_geom * g, int planned)
{
  return tt_conv2d_batch_algo (g, planned) == TT_CONV2D_DIRECT;
}

static bool
conv2d_winograd (const tt_window_geom * g, int planned)
{
  return tt_conv2d_batch_algo (g, planned) == TT_CONV2D_WINOGRAD;
}


static int
conv2d_chunk (const tt_window_geom * g)
{
  const size_t per = (size_t) g->channels * g->kernel_h * g->kernel_w *
      g->out_h * g->out_w * sizeof (float);
  size_t n = per ? CONV2D_CHUNK_BYTES / per : 1;
  return n < 1 ? 1 : n > 64 ? 64 : (int) n;
}

/* Samples in the largest chunk of a planned batch. */
static int
conv2d_chunk_of (const tt_window_geom * g, int planned)
{
  const int chunk = conv2d_chunk (g);
  return planned < chunk ? (planned > 0 ? planned : 1) : chunk;
}

/* The scratch each algorithm needs, each for one pass: the direct
 * convolution the input derivative's column gradient (the im2col path's
 * pass); Winograd its other scratch (out, grouped); im2col the columns of
 * a chunk in forward (none for a pointwise layer: its input is its
 * columns) and in backward_weight, the GEMM result of a chunk (none for
 * chunks of one sample: the GEMM writes the output directly), the
 * regrouped output derivative and the column gradient. */
bool
tt_conv2d_batch_half (const tt_window_geom * g, int planned)
{
  return g->stored_as != TT_GEMM_FP32 &&
      tt_conv2d_batch_algo (g, planned) == TT_CONV2D_IM2COL;
}

static size_t
conv2d_ckk_ohw (const tt_window_geom * g)
{
  return (size_t) g->channels * g->kernel_h * g->kernel_w * g->out_h * g->out_w;
}

/* The column gradient of a chunk: each part of backward_input makes its
 * samples' a chunk at a time, col2im right after the chunk's GEMM (part
 * 0 in the layer's, the others in their workers' scratch). */
size_t
tt_conv2d_batch_col_grad_floats (const tt_window_geom * g, int planned,
    bool derivative)
{
  if (!derivative || conv2d_pointwise (g) || conv2d_winograd (g, planned))
    return 0;
  return conv2d_ckk_ohw (g) * conv2d_chunk_of (g, planned);
}

size_t
tt_conv2d_batch_col_floats (const tt_window_geom * g, int planned)
{
  if (tt_conv2d_batch_algo (g, planned) != TT_CONV2D_IM2COL ||
      conv2d_pointwise (g))
    return 0;
  return conv2d_ckk_ohw (g) * conv2d_chunk_of (g, planned);
}

/* The weight gradient's columns, a chunk of forward's samples. They
 * are fp32 at every precision, made in fp32 and rounded by the GEMM as it
 * packs them (the bits of half-width columns): made at half width, they
 * cost a rounding pass more per step (ResNet-8 in bf16: its convolutions
 * 8% slower than with the columns kept). The same chunks at every
 * precision, so that the weight gradient adds the same products whatever
 * the columns' width (test_bf16_layers compares them); and as few as
 * forward's: a batch that fits one chunk sums its products in one GEMM,
 * as when the columns were kept. */
size_t
tt_conv2d_batch_col_back_floats (const tt_window_geom * g, int planned,
    bool gradient)
{
  if (!gradient || tt_conv2d_batch_algo (g, planned) != TT_CONV2D_IM2COL)
    return 0;
  return conv2d_ckk_ohw (g) * conv2d_chunk_of (g, planned);
}

size_t
tt_conv2d_batch_out_floats (const tt_window_geom * g, int filters, int planned)
{
  if (conv2d_direct (g, planned))
    return 0;
  if (conv2d_winograd (g, planned))
    return tt_conv2d_winograd_out_floats (g, filters, planned, false);
  /* pointwise: each sample's GEMM writes its output */
  if (conv2d_pointwise (g))
    return 0;
  const int chunk = conv2d_chunk_of (g, planned);
  return chunk > 1 ? (size_t) (filters) * chunk * g->out_h * g->out_w : 0;
}

size_t
tt_conv2d_batch_grouped_floats (const tt_window_geom * g, int filters,
    int planned, bool gradient, bool derivative)
{
  const size_t grouped = (size_t) filters * planned * g->out_h * g->out_w;
  if (conv2d_direct (g, planned))
    return derivative ? grouped : 0;
  if (!gradient && !derivative)
    return 0;
  if (conv2d_winograd (g, planned))
    return tt_conv2d_winograd_out_floats (g, filters, planned,
        gradient && derivative);
  return grouped;
}

/* The output columns [lo, hi) whose input column lies inside the image for
 * kernel column offset jx = j * dilation - pad_left. */
static void
conv2d_valid_range (int out, int in, int stride, int jx, int *lo, int *hi)
{
  /* need 0 <= o*stride + jx < in */
  int a = jx >= 0 ? 0 : (-jx + stride - 1) / stride;
  int b = in - jx <= 0 ? 0 : (in - jx + stride - 1) / stride;
  if (b > out)
    b = out;
  if (a > b)
    a = b;
  *lo = a;
  *hi = b;
}

/* The rows im2col copies and col2im adds are output rows, often short
 * (11 floats for the CNN's second layer): a memcpy call per row cost
 * more than the copy, and a plain loop of unknown length does not
 * vectorize at -O2. Whole 8-float blocks, then an overlapping last block
 * for the copy (it rewrites a few floats with the same values) or a
 * scalar tail for the sum. */
#define CONV2D_BLOCK 8

static inline void
conv2d_copy (float *restrict d, const float *restrict s, int n)
{
  int k = 0;
  if (n < CONV2D_BLOCK) {
    for (; k < n; k++)
      d[k] = s[k];
    return;
  }
  for (; k + CONV2D_BLOCK <= n; k += CONV2D_BLOCK)
    memcpy (d + k, s + k, CONV2D_BLOCK * sizeof *d);
  if (k < n)
    memcpy (d + n - CONV2D_BLOCK, s + n - CONV2D_BLOCK,
        CONV2D_BLOCK * sizeof *d);
}

static inline void
conv2d_add (float *restrict d, const float *restrict s, int n)
{
  int k = 0;
  for (; k + CONV2D_BLOCK <= n; k += CONV2D_BLOCK)
    for (int l = 0; l < CONV2D_BLOCK; l++)
      d[k + l] += s[k + l];
  for (; k < n; k++)
    d[k] += s[k];
}

/* Output positions [ox0, ox1) of one output row of a tap: src the input
 * row it reads (NULL: a padding row), [lo, hi) the positions inside the
 * image (conv2d_valid_range) */
static inline void
conv2d_row_piece (const float *src, int stride, int jx, int lo, int hi,
    int ox0, int ox1, float *out)
{
  if (!src) {
    memset (out, 0, (size_t) (ox1 - ox0) * sizeof *out);
    return;
  }
  const int a = lo < ox0 ? ox0 : lo > ox1 ? ox1 : lo;
  const int b = hi < a ? a : hi > ox1 ? ox1 : hi;
  for (int ox = ox0; ox < a; ox++)
    out[ox - ox0] = 0.0f;
  if (stride == 1)
    conv2d_copy (out + (a - ox0), src + a + jx, b - a);
  else
    for (int ox = a; ox < b; ox++)
      out[ox - ox0] = src[ox * stride + jx];
  for (int ox = b; ox < ox1; ox++)
    out[ox - ox0] = 0.0f;
}

void
tt_im2col (const tt_window_geom * g, const float *img, float *col, size_t ld)
{
  const int oh = g->out_h, ow = g->out_w;
  for (int c = 0; c < g->channels; c++) {
    const float *plane = img + (size_t) c * g->in_h * g->in_w;
    for (int i = 0; i < g->kernel_h; i++) {
      const int iy_off = i * g->dilation_h - g->pad_top;
      for (int j = 0; j < g->kernel_w; j++) {
        const int jx = j * g->dilation_w - g->pad_left;
        int lo, hi;
        conv2d_valid_range (ow, g->in_w, g->stride_w, jx, &lo, &hi);
        float *row = col + ((size_t) (c * g->kernel_h + i) * g->kernel_w +
            j) * ld;
        for (int oy = 0; oy < oh; oy++, row += ow) {
          const int iy = oy * g->stride_h + iy_off;
          conv2d_row_piece (iy < 0 || iy >= g->in_h ? NULL :
              plane + (size_t) iy * g->in_w, g->stride_w, jx, lo, hi, 0, ow,
              row);
        }
      }
    }
  }
}

/* tt_im2col's columns rounded to g->stored_as. A tap's row of the
 * columns (its out_h * out_w positions, contiguous) is made in fp32 a
 * block at a time in a buffer that stays in L1, then rounded into place
 * by the vectorized conversion (a conversion per output row costs more
 * than the copy when rows are short). */
#define CONV2D_HALF_BLOCK 1024

static void
conv2d_im2col_half (const tt_window_geom * g, const float *img,
    uint16_t * col, size_t ld)
{
  const int oh = g->out_h, ow = g->out_w;
  float buf[CONV2D_HALF_BLOCK];
  for (int c = 0; c < g->channels; c++) {
    const float *plane = img + (size_t) c * g->in_h * g->in_w;
    for (int i = 0; i < g->kernel_h; i++) {
      const int iy_off = i * g->dilation_h - g->pad_top;
      for (int j = 0; j < g->kernel_w; j++) {
        const int jx = j * g->dilation_w - g->pad_left;
        int lo, hi;
        conv2d_valid_range (ow, g->in_w, g->stride_w, jx, &lo, &hi);
        uint16_t *dst = col + ((size_t) (c * g->kernel_h + i) * g->kernel_w +
            j) * ld;
        size_t used = 0;
        for (int oy = 0; oy < oh; oy++) {
          const int iy = oy * g->stride_h + iy_off;
          const float *src = iy < 0 || iy >= g->in_h ? NULL :
              plane + (size_t) iy * g->in_w;
          for (int ox0 = 0; ox0 < ow; ox0 += CONV2D_HALF_BLOCK) {
            const int ox1 = ow - ox0 > CONV2D_HALF_BLOCK ?
                ox0 + CONV2D_HALF_BLOCK : ow;
            if (used + (size_t) (ox1 - ox0) > CONV2D_HALF_BLOCK) {
              tt_narrow_as (g->stored_as, buf, dst, used);
              dst += used;
              used = 0;
            }
            conv2d_row_piece (src, g->stride_w, jx, lo, hi, ox0, ox1,
                buf + used);
            used += (size_t) (ox1 - ox0);
          }
        }
        tt_narrow_as (g->stored_as, buf, dst, used);
      }
    }
  }
}

void
tt_col2im (const tt_window_geom * g, const float *col, size_t ld, float *img)
{
  const int oh = g->out_h, ow = g->out_w;
  for (int c = 0; c < g->channels; c++) {
    float *plane = img + (size_t) c * g->in_h * g->in_w;
    for (int i = 0; i < g->kernel_h; i++) {
      const int iy_off = i * g->dilation_h - g->pad_top;
      for (int j = 0; j < g->kernel_w; j++) {
        const int jx = j * g->dilation_w - g->pad_left;
        int lo, hi;
        conv2d_valid_range (ow, g->in_w, g->stride_w, jx, &lo, &hi);
        const float *row = col + ((size_t) (c * g->kernel_h + i) *
            g->kernel_w + j) * ld;
        for (int oy = 0; oy < oh; oy++, row += ow) {
          const int iy = oy * g->stride_h + iy_off;
          if (iy < 0 || iy >= g->in_h)
            continue;
          float *dst = plane + (size_t) iy * g->in_w;
          if (g->stride_w == 1)
            conv2d_add (dst + lo + jx, row + lo, hi - lo);
          else
            for (int ox = lo; ox < hi; ox++)
              dst[ox * g->stride_w + jx] += row[ox];
        }
      }
    }
  }
}

/* The im2col path's GEMMs: fp32 operands (a held fp32: the columns,
 * the filter, the output derivative) rounded to g->gemm_inputs, or half
 * ones (held at half width: half) read as g->stored_as. Held at fp32,
 * the calls the path always made (tt_gemm_as, tt_gemm_as_split). */
typedef struct
{
  const void *p;
  size_t ld;
  bool half;
} conv2d_operand;

static conv2d_operand
conv2d_fp32 (const float *p, size_t ld)
{
  return (conv2d_operand) {
  p, ld, false};
}

/* element at of a buffer held as half says */
static conv2d_operand
conv2d_held (const void *p, size_t at, size_t ld, bool half)
{
  return (conv2d_operand) {
  half ? (const void *) ((const uint16_t *) p + at) :
        (const void *) ((const float *) p + at), ld, half};
}

static tt_gemm_operand
conv2d_mixed (conv2d_operand o)
{
  return o.half ? tt_gemm_half_operand (o.p, (int) o.ld) :
      tt_gemm_fp32_operand (o.p, (int) o.ld);
}

static void
conv2d_gemm_split (const tt_window_geom * g, tt_threads * pool,
    bool trans_a, bool trans_b, int m, int n, int k, conv2d_operand a,
    conv2d_operand b, float beta, float *c, int ldc)
{
  if (a.half || b.half)
    tt_gemm_as_mixed (g->stored_as, pool, trans_a, trans_b, m, n, k, 1.0f,
        conv2d_mixed (a), conv2d_mixed (b), beta, c, ldc);
  else
    tt_gemm_as_split (g->gemm_inputs, pool, trans_a, trans_b, m, n, k, 1.0f,
        a.p, (int) a.ld, b.p, (int) b.ld, beta, c, ldc);
}

/* one thread */
static void
conv2d_gemm (const tt_window_geom * g, bool trans_a, bool trans_b, int m,
    int n, int k, conv2d_operand a, conv2d_operand b, float *c, int ldc)
{
  if (a.half || b.half)
    conv2d_gemm_split (g, NULL, trans_a, trans_b, m, n, k, a, b, 0.0f, c, ldc);
  else
    tt_gemm_as (g->gemm_inputs, trans_a, trans_b, m, n, k, 1.0f, a.p,
        (int) a.ld, b.p, (int) b.ld, 0.0f, c, ldc);
}

/* one sample's columns into col (at element at, rows ld apart) */
static void
conv2d_im2col_into (const tt_window_geom * g, bool half, const float *img,
    void *col, size_t at, size_t ld)
{
  if (half)
    conv2d_im2col_half (g, img, (uint16_t *) col + at, ld);
  else
    tt_im2col (g, img, (float *) col + at, ld);
}

/* ---- the im2col path on several threads --------------------------------
 *
 * A part takes a range of samples. Forward: each sample's columns, in
 * the part's one-sample slice of the chunk buffer, then its own GEMM
 * straight into y (the chunked GEMM's result buffer is one chunk's, for
 * one thread). Input gradient: one GEMM over the part's samples'
 * columns, then their col2im. Weight gradient: each chunk's columns by
 * samples, then blocks of dW's rows (tt_gemm_split); the bias gradient
 * by filter. */
typedef struct
{
  const tt_window_geom *g;
  tt_threads *pool;             /* backward_input: its workers' scratch */
  int filters, batch;
  size_t ld;                    /* forward: ohw; else the columns' rows */
  const float *x, *w, *bias;
  const void *dyg;              /* fp32, or half width (half) */
  void *col;                    /* forward: the columns, fp32 or half;
                                 * backward_input: the column gradient */
  float *y, *dx, *dbias;
  bool half;
} conv2d_job;

static void
conv2d_forward_part (void *arg, unsigned part, unsigned n_parts)
{
  const conv2d_job *j = arg;
  const tt_window_geom *g = j->g;
  const size_t ohw = (size_t) g->out_h * g->out_w;
  const size_t in_sample = (size_t) g->channels * g->in_h * g->in_w;
  const int ckk = g->channels * g->kernel_h * g->kernel_w;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  const bool pointwise = conv2d_pointwise (g);
  for (size_t b = lo; b < hi; b++) {
    const size_t at = part * ckk * ohw;
    /* pointwise: the sample is its columns (rounded by the GEMM as the
     * half columns would be) */
    const conv2d_operand cols = pointwise ?
        conv2d_fp32 (j->x + b * in_sample, ohw) :
        conv2d_held (j->col, at, j->ld, j->half);
    if (!pointwise)
      conv2d_im2col_into (g, j->half, j->x + b * in_sample, j->col, at, j->ld);
    float *dst = j->y + b * j->filters * ohw;
    conv2d_gemm (g, false, false, j->filters, (int) ohw, ckk,
        conv2d_fp32 (j->w, ckk), cols, dst, (int) ohw);
    if (j->bias)
      for (int f = 0; f < j->filters; f++)
        for (size_t p = 0; p < ohw; p++)
          dst[f * ohw + p] += j->bias[f];
  }
}

static void
conv2d_backward_input_part (void *arg, unsigned part, unsigned n_parts)
{
  const conv2d_job *j = arg;
  const tt_window_geom *g = j->g;
  const size_t ohw = (size_t) g->out_h * g->out_w;
  const size_t in_sample = (size_t) g->channels * g->in_h * g->in_w;
  const int ckk = g->channels * g->kernel_h * g->kernel_w;
  const int chunk = conv2d_chunk (g);
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  if (conv2d_pointwise (g)) {
    for (size_t b = lo; b < hi; b++)
      conv2d_gemm (g, true, false, ckk, (int) ohw, j->filters,
          conv2d_fp32 (j->w, ckk), conv2d_held (j->dyg, b * ohw, j->ld,
              j->half), j->dx + b * in_sample, (int) ohw);
    return;
  }
  /* the part's chunk of column gradient: part 0's the layer's, the
   * others' their workers' (the caller's when the parts run on it) */
  float *col = part == 0 || tt_threads_step_inline (j->pool) ? j->col :
      tt_threads_scratch (j->pool, part);
  memset (j->dx + lo * in_sample, 0, (hi - lo) * in_sample * sizeof *j->dx);
  for (size_t b0 = lo; b0 < hi; b0 += chunk) {
    const size_t n = hi - b0 < (size_t) chunk ? hi - b0 : (size_t) chunk;
    const size_t nohw = n * ohw;
    conv2d_gemm (g, true, false, ckk, (int) nohw, j->filters,
        conv2d_fp32 (j->w, ckk), conv2d_held (j->dyg, b0 * ohw, j->ld,
            j->half), col, (int) nohw);
    for (size_t b = b0; b < b0 + n; b++)
      tt_col2im (g, col + (b - b0) * ohw, nohw, j->dx + b * in_sample);
  }
}

/* dy [batch][filters][ohw] -> [filters][batch][ohw], samples [b0, b1);
 * half: rounded to g->stored_as */
static void
conv2d_regroup_range (const tt_window_geom * g, int filters, int batch,
    size_t b0, size_t b1, const float *dy, void *out, bool half)
{
  const size_t ohw = (size_t) g->out_h * g->out_w;
  const size_t ld = (size_t) batch * ohw;
  for (size_t b = b0; b < b1; b++)
    for (int f = 0; f < filters; f++) {
      const float *src = dy + ((size_t) b * filters + f) * ohw;
      const size_t at = (size_t) f * ld + b * ohw;
      if (half)
        tt_narrow_as (g->stored_as, src, (uint16_t *) out + at, ohw);
      else
        memcpy ((float *) out + at, src, ohw * sizeof *src);
    }
}

static void
conv2d_regroup_part (void *arg, unsigned part, unsigned n_parts)
{
  const conv2d_job *j = arg;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  conv2d_regroup_range (j->g, j->filters, j->batch, lo, hi, j->x,
      (void *) j->dyg, j->half);
}

/* dbias[f] of filters [f0, f1) from dy (j->x) [batch][filters][ohw], in
 * the order of a regrouped row (sample after sample) on one thread */
static void
conv2d_bias_range (const conv2d_job * j, size_t f0, size_t f1)
{
  const size_t ohw = (size_t) j->g->out_h * j->g->out_w;
  for (size_t f = f0; f < f1; f++) {
    float s = 0.0f;
    for (int b = 0; b < j->batch; b++) {
      const float *row = j->x + ((size_t) b * j->filters + f) * ohw;
      for (size_t p = 0; p < ohw; p++)
        s += row[p];
    }
    j->dbias[f] = s;
  }
}

static void
conv2d_bias_part (void *arg, unsigned part, unsigned n_parts)
{
  const conv2d_job *j = arg;
  size_t lo, hi;
  tt_threads_range ((size_t) j->filters, 1, part, n_parts, &lo, &hi);
  conv2d_bias_range (j, lo, hi);
}

/* the columns of samples [0, batch) of x, sample b's at b * ohw */
static void
conv2d_gather_part (void *arg, unsigned part, unsigned n_parts)
{
  const conv2d_job *j = arg;
  const tt_window_geom *g = j->g;
  const size_t ohw = (size_t) g->out_h * g->out_w;
  const size_t in_sample = (size_t) g->channels * g->in_h * g->in_w;
  size_t lo, hi;
  tt_threads_range ((size_t) j->batch, 1, part, n_parts, &lo, &hi);
  for (size_t b = lo; b < hi; b++)
    conv2d_im2col_into (g, j->half, j->x + b * in_sample, j->col, b * ohw,
        j->ld);
}

static void
conv2d_regroup_dy (tt_threads * pool, const tt_window_geom * g, int filters,
    int batch, const float *dy, void *out, bool half)
{
  conv2d_job j = {.g = g,.filters = filters,.batch = batch,.x = dy,
    .dyg = out,.half = half
  };
  tt_threads_run (pool, conv2d_regroup_part, &j, tt_threads_parts (pool,
          (size_t) batch, 1));
}

void
tt_conv2d_batch_forward (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, int planned, const float *x, const float *w,
    const float *bias, float *y, void *col, float *out)
{
  const size_t ohw = (size_t) g->out_h * g->out_w;
  const size_t in_sample = (size_t) g->channels * g->in_h * g->in_w;
  const int ckk = g->channels * g->kernel_h * g->kernel_w;
  const int chunk = conv2d_chunk (g);

  if (conv2d_direct (g, planned)) {
    tt_conv2d_direct_forward (pool, g, filters, batch, x, w, bias, y);
    return;
  }
  if (conv2d_winograd (g, planned)) {
    tt_conv2d_winograd_forward (pool, g, filters, batch, x, w, bias, y, out);
    return;
  }
  /* the chunk buffer holds conv2d_chunk_of samples' columns: at most
   * that many parts */
  const size_t slots = conv2d_pointwise (g) ? (size_t) batch :
      (size_t) conv2d_chunk_of (g, planned);
  const unsigned parts = tt_threads_parts (pool, (size_t) batch <
      slots ? (size_t) batch : slots, 1);
  /* pointwise: each sample's GEMM writes its output, on one thread too */
  const bool half = tt_conv2d_batch_half (g, planned);
  if (parts > 1 || conv2d_pointwise (g)) {
    conv2d_job j = {.g = g,.filters = filters,.batch = batch,.ld = ohw,
      .x = x,.w = w,.bias = bias,.y = y,.col = col,.half = half
    };
    tt_threads_run (pool, conv2d_forward_part, &j, parts);
    return;
  }
  for (int b0 = 0; b0 < batch; b0 += chunk) {
    const int n = batch - b0 < chunk ? batch - b0 : chunk;
    const size_t ld = (size_t) n * ohw;
    for (int b = 0; b < n; b++)
      conv2d_im2col_into (g, half, x + (b0 + b) * in_sample, col, b * ohw, ld);
    const conv2d_operand cc = conv2d_held (col, 0, ld, half);
    if (n == 1) {
      /* [filters][ohw] is the sample's output already */
      float *dst = y + (size_t) b0 * filters * ohw;
      conv2d_gemm (g, false, false, filters, (int) ohw, ckk,
          conv2d_fp32 (w, ckk), cc, dst, (int) ohw);
      if (bias)
        for (int f = 0; f < filters; f++)
          for (size_t p = 0; p < ohw; p++)
            dst[f * ohw + p] += bias[f];
      continue;
    }
    const size_t nohw = (size_t) n * ohw;
    conv2d_gemm (g, false, false, filters, (int) nohw, ckk,
        conv2d_fp32 (w, ckk), cc, out, (int) nohw);
    /* [filters][n][ohw] -> [n][filters][ohw], adding the bias (without
     * one, a copy: the same values as the single-sample GEMM's, -0 too) */
    for (int b = 0; b < n; b++)
      for (int f = 0; f < filters; f++) {
        const float *src = out + (size_t) f * nohw + b * ohw;
        float *dst = y + ((size_t) (b0 + b) * filters + f) * ohw;
        if (!bias) {
          memcpy (dst, src, ohw * sizeof *dst);
          continue;
        }
        const float bf = bias[f];
        for (size_t p = 0; p < ohw; p++)
          dst[p] = src[p] + bf;
      }
  }
}

void
tt_conv2d_batch_backward_weight (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, int planned, const float *x, const float *dy,
    float *dw, float *dbias, void *col, void *dyg)
{
  const size_t ld = (size_t) batch * g->out_h * g->out_w;
  const int ckk = g->channels * g->kernel_h * g->kernel_w;
  if (conv2d_direct (g, planned)) {
    tt_conv2d_direct_backward_weight (pool, g, filters, batch, x, dy, dw,
        dbias);
    return;
  }
  if (conv2d_winograd (g, planned)) {
    tt_conv2d_winograd_backward_weight (pool, g, filters, batch, x, dy, dw,
        dbias, dyg);
    return;
  }
  const bool half = tt_conv2d_batch_half (g, planned);
  conv2d_regroup_dy (pool, g, filters, batch, dy, dyg, half);
  /* dW = the sum over chunks of dy's columns of the chunk times the
   * chunk's columns, made again from x */
  const size_t ohw = (size_t) g->out_h * g->out_w;
  const size_t in_sample = (size_t) g->channels * g->in_h * g->in_w;
  const int chunk = conv2d_chunk_of (g, planned);
  for (int b0 = 0; b0 < batch; b0 += chunk) {
    const int n = batch - b0 < chunk ? batch - b0 : chunk;
    const size_t nohw = (size_t) n * ohw;
    conv2d_job j = {.g = g,.batch = n,.ld = nohw,.x = x + b0 * in_sample,
      .col = col
    };
    tt_threads_run (pool, conv2d_gather_part, &j, tt_threads_parts (pool,
            (size_t) n, 1));
    conv2d_gemm_split (g, pool, false, true, filters, ckk, (int) nohw,
        conv2d_held (dyg, b0 * ohw, ld, half), conv2d_fp32 (col, nohw),
        b0 ? 1.0f : 0.0f, dw, ckk);
  }
  if (dbias) {
    conv2d_job j = {.g = g,.filters = filters,.batch = batch,.x = dy,
      .dbias = dbias
    };
    tt_threads_run (pool, conv2d_bias_part, &j, tt_threads_parts (pool,
            (size_t) filters, 1));
  }
}

void
tt_conv2d_batch_backward_input (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, int planned, const float *w, const float *dy,
    float *dx, float *col, void *dyg, bool dy_grouped)
{
  const size_t ohw = (size_t) g->out_h * g->out_w;
  const size_t ld = (size_t) batch * ohw;
  if (conv2d_winograd (g, planned)) {
    tt_conv2d_winograd_backward_input (pool, g, filters, batch, w, dy, dx, dyg);
    return;
  }
  /* the direct backward_weight reads dy as it is */
  const bool half = tt_conv2d_batch_half (g, planned);
  if (!dy_grouped || conv2d_direct (g, planned))
    conv2d_regroup_dy (pool, g, filters, batch, dy, dyg, half);
  /* one part: the one thread's chunks (the same loop); more only where
   * the workers have a chunk of column gradient each */
  conv2d_job j = {.g = g,.pool = pool,.filters = filters,.batch = batch,
    .ld = ld,.w = w,.dyg = dyg,.col = col,.dx = dx,.half = half
  };
  const unsigned parts = conv2d_pointwise (g) ||
      tt_threads_step_inline (pool) || tt_threads_scratch_floats (pool) >=
      tt_conv2d_batch_col_grad_floats (g, planned, true) ?
      tt_threads_parts (pool, (size_t) batch, 1) : 1;
  tt_threads_run (pool, conv2d_backward_input_part, &j, parts);
}

size_t
tt_conv2d_batch_worker_floats (const tt_window_geom * g, int filters,
    int planned, bool gradient, bool derivative)
{
  if (conv2d_winograd (g, planned))
    return tt_conv2d_winograd_worker_floats (g, filters, planned, gradient);
  /* the input derivative's chunk of column gradient */
  const size_t cols = tt_conv2d_batch_col_grad_floats (g, planned,
      derivative);
  const size_t direct = conv2d_direct (g, planned) ?
      tt_conv2d_direct_worker_floats (g, filters, gradient) : 0;
  return cols > direct ? cols : direct;
}

bool
tt_conv2d_batch_fuses_backward (const tt_window_geom * g, int planned)
{
  return !conv2d_direct (g, planned) && conv2d_winograd (g, planned);
}

void
tt_conv2d_batch_backward (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, int planned, const float *x, const float *w,
    const float *dy, float *dw, float *dbias, float *dx, float *dyg)
{
  (void) planned;
  tt_conv2d_winograd_backward (pool, g, filters, batch, x, w, dy, dw, dbias,
      dx, dyg);
}
