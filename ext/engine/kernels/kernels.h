/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Numeric kernels of the engine: pure functions on caller-owned float
 * buffers. No allocation happens here: every scratch buffer is passed in,
 * because the engine places all of them in its single memory pool.
 *
 * Layout conventions (nntrainer's): tensors are NCHW with the batch
 * outermost, row-major; a conv2d filter is [filters][channels][kh][kw].
 */
#ifndef TT_KERNELS_H
#define TT_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tt_threads.h"

/* C = alpha * op(A) * op(B) + beta * C, row-major; op(A) is M x K, op(B) is
 * K x N. cblas_sgemm when built with BLAS, a portable blocked loop
 * otherwise. */
void tt_gemm (bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    const float *a, int lda, const float *b, int ldb, float beta, float *c,
    int ldc);
/* Below this many multiply-adds a split costs more than it saves: a job
 * is a few microseconds of synchronization, 256k multiply-adds some 10 to
 * 30 on one core. A batch of one sample's dense layers (the CNN's 1600 x
 * 128: 205k) then run on one thread: tensor_predictor at batch 1 took
 * 200 us a frame on 2 threads against 146 on one with the split at 64k
 * (under load). */
#define TT_GEMM_SPLIT_MIN (256 * 1024)

/* The same product split over pool's threads (gemm_split.c): blocks of
 * rows (or of columns) of C, each a one-thread tt_gemm with the whole K;
 * one tt_gemm for a NULL pool or a small product. Deterministic for a
 * thread count. */
void tt_gemm_split (tt_threads * pool, bool trans_a, bool trans_b, int m,
    int n, int k, float alpha, const float *a, int lda, const float *b,
    int ldb, float beta, float *c, int ldc);
/* a one-thread GEMM of tt_gemm's arguments */
typedef void tt_gemm_fn (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc);
/* A GEMM operand of the half-width products (mixed precision): an fp32
 * matrix (half false), which the product rounds to its format, or one
 * already in that format (half: bf16 or fp16 as uint16_t, rounded when
 * it was written: a layer's scratch at half width). Row stride ld in
 * elements. */
typedef struct
{
  const void *p;
  int ld;
  bool half;
} tt_gemm_operand;
static inline tt_gemm_operand
tt_gemm_fp32_operand (const float *p, int ld)
{
  return (tt_gemm_operand) {
  p, ld, false};
}

static inline tt_gemm_operand
tt_gemm_half_operand (const uint16_t * p, int ld)
{
  return (tt_gemm_operand) {
  p, ld, true};
}

/* a one-thread GEMM of such operands */
typedef void tt_gemm_mixed_fn (bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, tt_gemm_operand a, tt_gemm_operand b, float beta,
    float *c, int ldc);
/* tt_gemm_split's blocks of C over pool, each computed by one */
void tt_gemm_split_mixed (tt_threads * pool, tt_gemm_mixed_fn * one,
    bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    tt_gemm_operand a, tt_gemm_operand b, float beta, float *c, int ldc);
/* The half-width GEMMs' portable path (gemm_widened.c): blocks of A and
 * B widened to fp32 by their widen functions, rows x cols of a matrix of
 * row stride ld elements into dst (row stride cols, cols at most
 * TT_GEMM_WIDEN_COLS), multiplied by tt_gemm; A's blocks are
 * TT_GEMM_WIDEN_ROWS rows */
#define TT_GEMM_WIDEN_COLS 128
#define TT_GEMM_WIDEN_ROWS 64
typedef void tt_widen_rows_fn (const void *src, size_t ld, int rows,
    int cols, float *dst);
/* an operand of tt_gemm_widened: elements of es bytes, and how they widen */
typedef struct
{
  const void *p;
  int ld;
  size_t es;
  tt_widen_rows_fn *widen;
} tt_widened_operand;
void tt_gemm_widened (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, tt_widened_operand a, tt_widened_operand b, float beta,
    float *c, int ldc);
/* C = beta C, beta == 0 writing zeros (a product whose A B term vanishes) */
void tt_gemm_scale_c (int m, int n, float beta, float *c, int ldc);
/* tt_gemm_split's blocks, each computed by one (the fp16 GEMM's split) */
void tt_gemm_split_with (tt_threads * pool, tt_gemm_fn * one, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *c, int ldc);

/* mixed precision (docs/precision.md): the format a layer's GEMM rounds
 * its fp32 inputs to, sums in fp32. Zero (as zeroed) is fp32. */
typedef enum
{
  TT_GEMM_FP32 = 0,
  TT_GEMM_BF16,                 /* tt_gemm_f32_as_bf16 */
  TT_GEMM_FP16                  /* tt_gemm_f32_as_f16 */
} tt_gemm_inputs;
/* tt_gemm in the format f (gemm_inputs.c); _split over pool as
 * tt_gemm_split (NULL: one thread); _small for many small products
 * (attention's heads, matmul's matrices): bf16 through
 * tt_gemm_f32_as_bf16_small, the others as tt_gemm_as */
void tt_gemm_as (tt_gemm_inputs f, bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc);
void tt_gemm_as_split (tt_gemm_inputs f, tt_threads * pool, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *c, int ldc);
void tt_gemm_as_small (tt_gemm_inputs f, bool trans_a, bool trans_b, int m,
    int n, int k, float alpha, const float *a, int lda, const float *b,
    int ldb, float beta, float *c, int ldc);
/* tt_gemm_as_small with operands of either kind (tt_gemm_operand), as
 * tt_gemm_as_mixed below: a half one read as it is, the bits of
 * tt_gemm_as_small on the fp32 operands whose rounding made it */
void tt_gemm_as_small_mixed (tt_gemm_inputs f, bool trans_a, bool trans_b,
    int m, int n, int k, float alpha, tt_gemm_operand a, tt_gemm_operand b,
    float beta, float *c, int ldc);
/* tt_gemm_as_split with operands of either kind (tt_gemm_operand): an
 * fp32 one rounded as tt_gemm_as rounds it, a half one (in f's format)
 * read as it is, so the result has the bits of tt_gemm_as_split on the
 * fp32 operands whose rounding made the half ones. With f fp32 every
 * operand must be fp32. */
void tt_gemm_as_mixed (tt_gemm_inputs f, tt_threads * pool, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, tt_gemm_operand a,
    tt_gemm_operand b, float beta, float *c, int ldc);
/* n values rounded to f's half format (bf16 or fp16, as tt_f32_to_bf16 /
 * tt_f32_to_f16), and back (exact); f fp32 is not a half format */
void tt_narrow_as (tt_gemm_inputs f, const float *x, uint16_t * y, size_t n);
void tt_widen_as (tt_gemm_inputs f, const uint16_t * x, float *y, size_t n);

/* The same product with 512-bit vectors (gemm_avx512.c), when the CPU has
 * them and the shape is one it serves (small K and M * K); false, having
 * done nothing, otherwise. tt_gemm tries it first. */
bool tt_gemm_avx512 (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc);

/* tt_gemm, then C's elements zeroed wherever keep's (M x N, rows ldk
 * apart) is not positive: the product's result through a relu's
 * backward, keep being the relu's output (a dense layer's input
 * derivative through the relu before it). The same elements bit for bit
 * as the product and then tt_relu_mask; in the product's own stores when
 * gemm_avx512 takes it: on two threads each masking its own columns of
 * the MLP's 128 x 256 input derivative in a pass of its own, the pass
 * took 12-17 us a step on each thread against 1.2-1.9 on the caller
 * alone after the job (the other core writes the neighbouring columns
 * of the same rows). */
void tt_gemm_relu_masked (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc, const float *keep, int ldk);
/* tt_gemm_split's product through the relu's backward (as above) */
void tt_gemm_split_relu_masked (tt_threads * pool, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *c, int ldc,
    const float *keep, int ldk);
/* out[i] = the sum of a[r * lda + i] over r < rows, added row by row in
 * order, for columns c0 <= i < c1: the same sums whatever the columns'
 * split (a dense layer's bias gradient from its output derivative) */
void tt_column_sums (const float *a, size_t rows, size_t lda, size_t c0,
    size_t c1, float *out);
/* y[i] = x[i] * (mask[i] ? keep : 0.0f) for i < n: a dropout's byte mask
 * (tt_rng_mask_bytes), forward and backward; y may be x */
void tt_dropout_apply (const float *x, const uint8_t * mask, float keep,
    float *y, size_t n);
/* c[r * ldc + j] = 0 where keep[r * ldk + j] is not positive, for r <
 * rows, j < cols (the relu's backward in place) */
void tt_relu_mask (size_t rows, size_t cols, const float *keep, size_t ldk,
    float *c, size_t ldc);
/* tt_gemm_avx512 with the mask of tt_gemm_relu_masked (NULL keep: none) */
bool tt_gemm_avx512_relu_masked (bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc, const float *keep, int ldk);

/* Geometry of a 2-D window sweep (convolution or pooling) over one sample.
 * Invariant after tt_window_geom_init returned 0: out_h, out_w >= 1. */
typedef struct {
  int channels, in_h, in_w;
  int kernel_h, kernel_w;
  int stride_h, stride_w;
  int pad_top, pad_bottom, pad_left, pad_right;
  int dilation_h, dilation_w;
  int out_h, out_w;
  /* mixed precision: the format the im2col path's GEMMs
   * (tt_conv2d_batch_*) round their inputs to, sums in fp32; zeroed:
   * fp32. The direct and Winograd convolutions stay fp32 either way. */
  tt_gemm_inputs gemm_inputs;
  /* mixed precision: the layer was planned with bf16 GEMMs (its model's
   * activation type), so the batched convolution chooses its algorithm
   * by the bf16 rule (tt_conv2d_batch_algo, conv2d_algo.c); false (as
   * zeroed) keeps fp32's choice. Set at plan time, unlike gemm_inputs: the
   * scratch sizes follow the algorithm. */
  bool plan_bf16;
  /* mixed precision: the format the im2col path keeps its GEMMs' operands
   * in (the columns, the regrouped output derivative), set at plan time
   * from the model's activation type: bf16 or fp16 (2 bytes an element,
   * rounded as the GEMM would round them, tt_conv2d_batch_half), or fp32
   * (as zeroed). The direct and Winograd convolutions keep fp32. */
  tt_gemm_inputs stored_as;
} tt_window_geom;

/* Fills out_h/out_w from the other fields; returns -1 when the window does
 * not fit (output would be empty) or a field is out of range. */
int tt_window_geom_init (tt_window_geom * g);

/* The batched convolution's im2col (conv2d.c) for one sample: col is
 * [channels*kernel_h*kernel_w][out_h*out_w] with rows ld floats apart
 * (the sample's columns within the batch's); padding reads as 0. */
void tt_im2col (const tt_window_geom * g, const float *img, float *col,
    size_t ld);
/* img += col2im(col), its adjoint: accumulates, so the caller zeroes img
 * first. */
void tt_col2im (const tt_window_geom * g, const float *col, size_t ld,
    float *img);

/* Batched convolution (conv2d.c): one GEMM per chunk of samples, or a
 * direct or Winograd convolution (below) where those apply.
 * Nothing is kept from forward to backward but the input x, which every
 * algorithm's backward_weight reads (the caller keeps it: the layer
 * declares TT_READS_INPUT).
 * col: forward's im2col columns of one chunk of samples,
 * [C*kh*kw][n*out_h*out_w], reused chunk after chunk
 * (tt_conv2d_batch_col_floats; none for a 1x1 kernel at stride 1 without
 * padding, whose input is its columns, nor for the direct and Winograd
 * convolutions); backward_weight makes the columns of a chunk again in a
 * col of its own (tt_conv2d_batch_col_back_floats) and adds each chunk's
 * product into dw; backward_input writes the column gradient, fp32, into
 * a col of its own too (tt_conv2d_batch_col_grad_floats: a chunk's, and
 * on several threads each worker's in its scratch; none for 1x1 layers,
 * whose GEMM writes dx, nor for Winograd).
 * out: forward's scratch (the GEMM result of one chunk); grouped:
 * backward's ([filters][batch*out_h*out_w], the output derivative
 * regrouped; backward_input regroups it itself unless dy_grouped says
 * backward_weight just did).
 * planned: the batch the scratch was sized for (batch <= planned, e.g. a
 * short last batch): the algorithm depends on it, so every pass of a
 * layer takes the same one. The size functions give the floats of each
 * buffer for the algorithm the geometry and planned batch get (any may
 * be 0 floats, and NULL); gradient, derivative: whether backward_weight,
 * backward_input will run.
 * All outputs are overwritten, not accumulated.
 * pool: the work split over its threads (NULL: one thread). Direct and
 * Winograd convolutions split by samples (with the workers' scratch,
 * tt_conv2d_batch_worker_floats): output and dx equal one thread's bit
 * for bit; dw and dbias add each thread's partial in a fixed order,
 * deterministic for a thread count and within rounding of one thread's.
 * The im2col path runs, on several threads, one
 * GEMM per sample (forward), blocks of samples (input gradient) and
 * blocks of dW's rows: deterministic for a thread count, equal to one
 * thread's within rounding (other GEMM shapes). */
size_t tt_conv2d_batch_col_floats (const tt_window_geom * g, int planned);
size_t tt_conv2d_batch_col_back_floats (const tt_window_geom * g,
    int planned, bool gradient);
size_t tt_conv2d_batch_col_grad_floats (const tt_window_geom * g,
    int planned, bool derivative);
/* Half-width operands (g->stored_as bf16 or fp16, the im2col algorithm):
 * the columns (col of forward and backward_weight) and grouped hold
 * 2-byte elements (uint16_t, the counts above are elements), written
 * rounded to g->stored_as and read in place by the GEMMs
 * (tt_gemm_as_mixed), the bits of the fp32 path whose GEMMs round them. */
bool tt_conv2d_batch_half (const tt_window_geom * g, int planned);
size_t tt_conv2d_batch_out_floats (const tt_window_geom * g, int filters,
    int planned);
size_t tt_conv2d_batch_grouped_floats (const tt_window_geom * g, int filters,
    int planned, bool gradient, bool derivative);
void tt_conv2d_batch_forward (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, int planned, const float *x, const float *w,
    const float *bias, float *y, void *col, float *out);
/* x: the input; col: the columns of a chunk, made here
 * (tt_conv2d_batch_col_back_floats) */
void tt_conv2d_batch_backward_weight (tt_threads * pool,
    const tt_window_geom * g, int filters, int batch, int planned,
    const float *x, const float *dy, float *dw, float *dbias, void *col,
    void *grouped);
/* col: where the column gradient goes (tt_conv2d_batch_col_grad_floats) */
void tt_conv2d_batch_backward_input (tt_threads * pool,
    const tt_window_geom * g, int filters, int batch, int planned,
    const float *w, const float *dy, float *dx, float *col, void *grouped,
    bool dy_grouped);
/* Whether the algorithm runs both backward passes in one sweep
 * (tt_conv2d_batch_backward, instead of backward_weight then
 * backward_input; dx is then written while the weight gradient is: the
 * caller's lifetimes must allow it). Winograd does: each chunk's output
 * derivative is transformed once for both. grouped sized with gradient
 * and derivative true. */
bool tt_conv2d_batch_fuses_backward (const tt_window_geom * g, int planned);
/* Floats each worker of the pool needs in its scratch
 * (tt_threads_set_scratch) for the layer's passes to split by samples
 * (the direct and Winograd convolutions; 0 for the im2col path, which
 * needs none); with less, those passes run on the caller alone. */
size_t tt_conv2d_batch_worker_floats (const tt_window_geom * g, int filters,
    int planned, bool gradient, bool derivative);
void tt_conv2d_batch_backward (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, int planned, const float *x, const float *w,
    const float *dy, float *dw, float *dbias, float *dx, float *grouped);

/* The algorithm of the batched functions above for a geometry and a
 * planned batch (conv2d_algo.c): fp32 (plan_bf16 false) the direct
 * convolution where it applies, else Winograd where it applies, else
 * im2col; planned with bf16 GEMMs, the rule measured there. */
typedef enum
{
  TT_CONV2D_IM2COL,
  TT_CONV2D_DIRECT,
  TT_CONV2D_WINOGRAD
} tt_conv2d_algo;
tt_conv2d_algo tt_conv2d_batch_algo (const tt_window_geom * g, int planned);

/* Direct convolution (conv2d_direct.c), which the batched functions above
 * use when it applies (few taps: C*kh*kw <= 32; no padding, stride and
 * dilation 1; out_w >= 8); forward then keeps a copy of x in col for
 * backward_weight, which reads nothing else (none when keep is false). */
bool tt_conv2d_direct_applies (const tt_window_geom * g);
void tt_conv2d_direct_forward (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, const float *x, const float *w,
    const float *bias, float *y);
void tt_conv2d_direct_backward_weight (tt_threads * pool,
    const tt_window_geom * g, int filters, int batch, const float *x,
    const float *dy, float *dw, float *dbias);
size_t tt_conv2d_direct_worker_floats (const tt_window_geom * g, int filters,
    bool gradient);

/* Winograd convolution, F(2x2, 3x3) or F(4x4, 3x3), whichever needs
 * fewer products for the layer's output size (conv2d_winograd.c,
 * conv2d_winograd4.c), which the batched functions use for 3x3, stride-1
 * layers of 16 or more channels planned for batches of 8 or more (it
 * works on blocks of 8 samples); out as there, sized by the function
 * below, holds a chunk's transformed input too (never kept from forward:
 * the weight gradient transforms the input x again). */
bool tt_conv2d_winograd_applies (const tt_window_geom * g, int planned);
size_t tt_conv2d_winograd_out_floats (const tt_window_geom * g, int filters,
    int batch, bool both);
size_t tt_conv2d_winograd_worker_floats (const tt_window_geom * g,
    int filters, int planned, bool gradient);
void tt_conv2d_winograd_forward (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, const float *x, const float *w,
    const float *bias, float *y, float *out);
void tt_conv2d_winograd_backward_weight (tt_threads * pool,
    const tt_window_geom * g, int filters, int batch, const float *x,
    const float *dy, float *dw, float *dbias, float *out);
void tt_conv2d_winograd_backward_input (tt_threads * pool,
    const tt_window_geom * g, int filters, int batch, const float *w,
    const float *dy, float *dx, float *out);
/* Both backward passes in one sweep (out sized with both true). */
void tt_conv2d_winograd_backward (tt_threads * pool, const tt_window_geom * g,
    int filters, int batch, const float *x, const float *w, const float *dy,
    float *dw, float *dbias, float *dx, float *out);

/* Pooling over a batch; x [batch][C][H][W], y [batch][C][out_h][out_w].
 * Padding never wins a max and counts as 0 in an average, whose divisor
 * is the window's taps inside the input and (include_pad: PyTorch's
 * count_include_pad=True) its padding; a window with nothing to count
 * (all padding) gives 0. g->out_h, out_w may exceed what the padded
 * extent holds by one (ceil_mode): the taps past it are skipped.
 * argmax: batch*C*out_h*out_w indices of tt_maxpool_index_bytes (g) bytes
 * each, the winner's tap in its window, i * kernel_w + j (0 for a window
 * of padding only, whose tap 0 lies outside the input, as every tap).
 * pool: planes split over its threads, each plane's arithmetic the same
 * (NULL: one thread). */
void tt_maxpool_forward (tt_threads * pool, const tt_window_geom * g,
    int batch, const float *x, float *y, void *argmax);
void tt_maxpool_backward (tt_threads * pool, const tt_window_geom * g,
    int batch, const float *dy, const void *argmax, float *dx);
/* Bytes of one argmax index: the fewest of 1, 2 and 4 that number the
 * window's kernel_h * kernel_w taps (1 up to 256, 2 up to 65536). */
size_t tt_maxpool_index_bytes (const tt_window_geom * g);
/* Output o's (of tt_maxpool_forward's batch * C * out_h * out_w) winner
 * as an index into its channel plane, -1 for a window of padding only. */
int32_t tt_maxpool_argmax_plane_index (const tt_window_geom * g,
    const void *argmax, size_t o);
/* The 2x2, stride 2, unpadded case (maxpool2x2.c), which the two above
 * hand over to (tt_layer.h declares its test and forward): one byte an
 * index, 0 to 3 in reading order. */
void tt_maxpool2x2_backward (const tt_window_geom * g, int batch,
    const float *dy, const uint8_t * argmax, float *dx);
void tt_avgpool_forward (tt_threads * pool, const tt_window_geom * g,
    int batch, const float *x, float *y, bool include_pad);
void tt_avgpool_backward (tt_threads * pool, const tt_window_geom * g,
    int batch, const float *dy, float *dx, bool include_pad);

/* Batch normalization of x viewed as [outer][features][inner]; statistics
 * per feature over outer*inner values, biased variance.
 * Training: y = gamma * xhat + beta with batch statistics; the moving
 * statistics become momentum * moving + (1 - momentum) * batch (nntrainer's
 * convention); mean and invstd [features] are saved for backward. */
void tt_batchnorm_forward_train (tt_threads * pool, int outer, int features,
    int inner, const float *x, float *y, const float *gamma,
    const float *beta, float *moving_mean, float *moving_var, float momentum,
    float epsilon, float *mean, float *invstd);
void tt_batchnorm_forward_eval (tt_threads * pool, int outer, int features,
    int inner, const float *x, float *y, const float *gamma,
    const float *beta, const float *moving_mean, const float *moving_var,
    float epsilon);
/* dgamma, dbeta overwritten (skipped when NULL); dx overwritten (skipped
 * when NULL). x is the forward input. pool: features split over its
 * threads; each feature's reduction is the same whatever the split, so
 * results equal one thread's bit for bit (NULL: one thread). */
void tt_batchnorm_backward (tt_threads * pool, int outer, int features,
    int inner, const float *x, const float *dy, const float *gamma,
    const float *mean, const float *invstd, float *dx, float *dgamma,
    float *dbeta);

/* Grouped convolution (conv_grouped.c), groups > 1: filters and
 * g->channels both divide by groups, filter f reads channels [grp * cg,
 * (grp + 1) * cg) (grp = f / (filters / groups), cg = channels / groups),
 * w is [filters][cg][kh][kw] (PyTorch's); depthwise is groups = channels.
 * Direct: no scratch; backward_weight reads the forward input x. x, dy
 * [batch][...] as in the batched functions; every output overwritten.
 * pool: forward and dx split by planes, dw and dbias by filters: each
 * value computed by one part, in one order, so equal to one thread's bit
 * for bit (NULL: one thread). */
void tt_conv_grouped_forward (tt_threads * pool, const tt_window_geom * g,
    int filters, int groups, int batch, const float *x, const float *w,
    const float *bias, float *y);
void tt_conv_grouped_backward_weight (tt_threads * pool,
    const tt_window_geom * g, int filters, int groups, int batch,
    const float *x, const float *dy, float *dw, float *dbias);
void tt_conv_grouped_backward_input (tt_threads * pool,
    const tt_window_geom * g, int filters, int groups, int batch,
    const float *w, const float *dy, float *dx);
/* Layer normalization of x viewed as [outer][n][inner] (layernorm.c):
 * each of the outer * inner groups of n values (stride inner) normalized
 * on its own, y = (x - mean) * rstd * gamma[j] + beta[j], biased
 * variance, rstd = 1 / sqrt (var + eps); mean and rstd [outer][inner]
 * written for backward. Backward: dx (NULL: skipped) from x, dy and the
 * kept statistics; dgamma, dbeta [n] overwritten (NULL: skipped). pool:
 * split over its threads, bit-identical to one thread (NULL: one). */
void tt_layernorm_forward (tt_threads * pool, size_t outer, size_t n,
    size_t inner, const float *x, float *y, const float *gamma,
    const float *beta, float eps, float *mean, float *rstd);
void tt_layernorm_backward (tt_threads * pool, size_t outer, size_t n,
    size_t inner, const float *x, const float *dy, const float *gamma,
    const float *mean, const float *rstd, float *dx, float *dgamma,
    float *dbeta);
/* elementwise_ops.c: nntrainer's operation layers' arithmetic, each pass
 * split over pool's threads (NULL: inline) from this many values, every
 * value computed alike whatever the split (bit-identical to one thread) */
#define TT_ELEMENTWISE_SPLIT_MIN 16384

typedef enum {
  TT_BINOP_ADD,
  TT_BINOP_SUB,
  TT_BINOP_MUL,
  TT_BINOP_DIV,
} tt_binop;

/* Two per-sample shapes (C, H, W) broadcast numpy-style (each axis equal,
 * or 1 in one of them) to y's, collapsed to three axes d[0..2], outer to
 * inner, with a's and b's strides (0 where broadcast) and the three
 * per-sample counts. */
typedef struct {
  size_t d[3];
  size_t sa[3], sb[3];
  size_t a_count, b_count, y_count;
} tt_bcast;

/* false when an axis differs and neither is 1; y gets the output shape */
bool tt_bcast_init (tt_bcast * g, const uint32_t a[3], const uint32_t b[3],
    uint32_t y[3]);
/* y = a op b over batch samples */
void tt_binop_forward (tt_threads * pool, tt_binop op, const tt_bcast * g,
    size_t batch, const float *a, const float *b, float *y);
/* da, db (each skipped when NULL) overwritten with d y / d a * dy and d y
 * / d b * dy, summed over the axes that input broadcasts (split by
 * samples then) */
void tt_binop_backward (tt_threads * pool, tt_binop op, const tt_bcast * g,
    size_t batch, const float *a, const float *b, const float *dy,
    float *da, float *db);

typedef enum {
  TT_UNARY_NEGATIVE,
  TT_UNARY_SQRT,
  TT_UNARY_SIN,
  TT_UNARY_COS,
  TT_UNARY_TAN,
  TT_UNARY_POW,
} tt_unary;

/* y = f (x) over n values (pow: x^exponent); y may equal x */
void tt_unary_forward (tt_threads * pool, tt_unary fn, float exponent,
    size_t n, const float *x, float *y);
/* dx = f'(x) dy; reads x (sin, cos, pow), y (sqrt, tan) or neither
 * (negative), the other may be NULL; dx may equal dy */
void tt_unary_backward (tt_threads * pool, tt_unary fn, float exponent,
    size_t n, const float *x, const float *y, const float *dy, float *dx);

/* x viewed as [outer][r][inner]: y[o][i] = scale * sum over r of x[o][r][i]
 * (split by whole o), and back: dx[o][r][i] = scale * dy[o][i] */
void tt_reduce_forward (tt_threads * pool, size_t outer, size_t r,
    size_t inner, float scale, const float *x, float *y);
void tt_reduce_backward (tt_threads * pool, size_t outer, size_t r,
    size_t inner, float scale, const float *dy, float *dx);

/* resample.c: upsample2d over planes of h x w values, scale kh x kw
 * (nearest or bilinear, PyTorch's align_corners = False), and back: dx
 * overwritten with the derivative from dy */
void tt_upsample2d_forward (tt_threads * pool, bool bilinear, size_t planes,
    uint32_t h, uint32_t w, uint32_t kh, uint32_t kw, const float *x,
    float *y);
void tt_upsample2d_backward (tt_threads * pool, bool bilinear,
    size_t planes, uint32_t h, uint32_t w, uint32_t kh, uint32_t kw,
    const float *dy, float *dx);
/* channel_shuffle's permutation of batch samples of a x b channels of
 * plane values each: the channels viewed as [a][b] in x become [b][a] in
 * y (y may not be x); its inverse swaps a and b */
void tt_channel_shuffle (tt_threads * pool, size_t batch, size_t a, size_t b,
    size_t plane, const float *x, float *y);

/* tensorops.c: the tensor-manipulation layers' arithmetic */
/* count products y = a b of m x k by k x n matrices, stored one after the
 * other (a, b, y); backward: da = dy b^T, db = a^T dy (NULL: not wanted).
 * Split over pool's threads by whole matrices (at least two a thread),
 * else each product by rows (tt_gemm_split). */
typedef struct
{
  int m, n, k;
  /* mixed precision: the format a and b (dy) are rounded to, sums in
   * fp32 (tt_gemm_as_small) */
  tt_gemm_inputs gemm_inputs;
} tt_matmul_shape;
void tt_matmul_forward (tt_threads * pool, const tt_matmul_shape * s,
    size_t count, const float *a, const float *b, float *y);
void tt_matmul_backward (tt_threads * pool, const tt_matmul_shape * s,
    size_t count, const float *a, const float *b, const float *dy,
    float *da, float *db);
/* batch samples of in[0] x in[1] x in[2] values: output axis a is input
 * axis perm[a] (0, 1, 2); y may not be x */
void tt_permute (tt_threads * pool, size_t batch, const uint32_t in[3],
    const uint32_t perm[3], const float *x, float *y);
/* rows of x_row values: y gets n values of each from offset on (rows of
 * n); back: dx's rows get dy's there (zeros for a NULL dy), and with
 * zero_rest zeros elsewhere */
void tt_block_copy (tt_threads * pool, size_t rows, size_t x_row,
    size_t offset, size_t n, const float *x, float *y);
void tt_block_copy_back (tt_threads * pool, size_t rows, size_t x_row,
    size_t offset, size_t n, bool zero_rest, const float *dy, float *dx);
/* gather along an axis: each sample of x is [outer][r][inner], of y
 * [outer][t][inner], of the indices [idx_outer][t][idx_inner] (idx_outer
 * 1 or outer, idx_inner 1 or inner: broadcast); y[o][t][i] =
 * x[o][idx][i], NaN where the index (truncated toward zero) is outside
 * [0, r). Backward: dx overwritten with dy's values added at the indices
 * (each sample and outer block by one thread, in order of t). */
typedef struct
{
  uint32_t outer, r, inner, t;
  uint32_t idx_outer, idx_t, idx_inner;
  size_t idx_count;             /* index values per sample */
} tt_gather_shape;
void tt_gather_forward (tt_threads * pool, const tt_gather_shape * g,
    size_t batch, const float *x, const float *idx, float *y);
void tt_gather_backward (tt_threads * pool, const tt_gather_shape * g,
    size_t batch, const float *idx, const float *dy, float *dx);
/* clip.c: the clip activation, y = min (max (x, lo), hi) (nn.Hardtanh),
 * and dx = dy where lo < y < hi, else 0 (dx may equal dy, y may equal
 * x); the _split forms over pool's threads by element ranges (NULL:
 * inline), bit-identical */
void tt_clip_forward (float lo, float hi, size_t n, const float *x,
    float *y);
void tt_clip_backward (float lo, float hi, size_t n, const float *y,
    const float *dy, float *dx);
void tt_clip_forward_split (tt_threads * pool, float lo, float hi, size_t n,
    const float *x, float *y);
void tt_clip_backward_split (tt_threads * pool, float lo, float hi,
    size_t n, const float *y, const float *dy, float *dx);
/* conv_transpose.c: conv2dtranspose, conv2d's adjoint. g is the geometry
 * of the conv2d whose input derivative the forward is: channels, in_h,
 * in_w the layer's output (F channels), out_h, out_w its input (in_ch
 * channels). wc: the filter as that conv2d's, [in_ch][F*kh*kw], from
 * nntrainer's [F][in_ch][kh][kw] by tt_conv_transpose_permute. col: one
 * sample's columns, [F*kh*kw][out_h*out_w], the caller's; the pool's
 * workers need tt_conv_transpose_worker_floats each (tt_threads_scratch)
 * to share the work (else the caller does it all). dwt: the filter
 * gradient as [F*kh*kw][in_ch], before dw gets it in nntrainer's layout.
 * groups G (PyTorch's grouped ConvTranspose2d): the filter is
 * [F/G][in_ch][kh][kw], wc [in_ch][F/G*kh*kw] (permuted with f = F/G),
 * dwt [G][F/G*kh*kw][in_ch/G]; 1: ungrouped. Outputs are overwritten. */
void tt_conv_transpose_permute (const float *w, int f, int c, int kk,
    float *wc);
size_t tt_conv_transpose_worker_floats (const tt_window_geom * g, int in_ch,
    bool gradient);
void tt_conv_transpose_forward (tt_threads * pool, const tt_window_geom * g,
    int in_ch, int groups, int batch, const float *x, const float *wc,
    const float *bias, float *y, float *col);
void tt_conv_transpose_backward_input (tt_threads * pool,
    const tt_window_geom * g, int in_ch, int groups, int batch,
    const float *wc, const float *dy, float *col, float *dx);
void tt_conv_transpose_backward_weight (tt_threads * pool,
    const tt_window_geom * g, int in_ch, int groups, int batch, const float *x,
    const float *dy, float *col, float *dwt, float *dw, float *dbias);

/* preprocess.c: the preprocessing layers, batch samples of c:h:w values
 * (n values for l2norm), split by samples over pool's threads.
 * tt_flip_samples: flags[b] (a float) bit 0 reverses sample b's columns,
 * bit 1 its rows; y may be x; its own inverse (the derivative alike).
 * tt_translate_*: shifts[2b], shifts[2b + 1] (ty, tx, in pixels): output
 * (r, q) is the input at (r + ty, q + tx), bilinear, reflected at the
 * borders (OpenCV's BORDER_REFLECT); backward is its adjoint (dx
 * overwritten). tt_l2norm_*: y = x / (|x| + eps) per sample and its
 * exact derivative. */
void tt_flip_samples (tt_threads * pool, size_t batch, uint32_t c,
    uint32_t h, uint32_t w, const float *flags, const float *x, float *y);
void tt_translate_forward (tt_threads * pool, size_t batch, uint32_t c,
    uint32_t h, uint32_t w, const float *shifts, const float *x, float *y);
void tt_translate_backward (tt_threads * pool, size_t batch, uint32_t c,
    uint32_t h, uint32_t w, const float *shifts, const float *dy, float *dx);
void tt_l2norm_forward (tt_threads * pool, size_t batch, size_t n, float eps,
    const float *x, float *y);
void tt_l2norm_backward (tt_threads * pool, size_t batch, size_t n,
    float eps, const float *x, const float *dy, float *dx);
/* attention.c: scaled dot-product attention of heads of samples. Head h
 * of sample b: row i of Q at q + b * q_bs + h * q_hs + i * q_ld (K, V, O
 * alike, with their lengths lq (Q, O) and lk (K, V) and widths dk (Q, K)
 * and dv (V, O)). P = softmax (scale Q K^T + mask) row by row (causal:
 * column j > i left out), O = (P * drop) V. probs [B][H][lq][lk] keeps P;
 * mask (additive), drop (a byte mask: drop_keep where 1, 0.0f where 0,
 * tt_dropout_apply) and dropped (forward's P * drop, needed with drop)
 * are [B][H][lq][lk] or NULL. Split over threads by
 * (sample, head), bit-identical to one thread. */
typedef struct {
  int batch, heads, lq, lk, dk, dv;
  /* fp32, or with qkv_half already in gemm_inputs' half format (a
   * layer's half-width scratch: they are only the products' operands) */
  const void *q, *k, *v;
  bool qkv_half;
  float *o;
  size_t q_bs, k_bs, v_bs, o_bs, q_hs, k_hs, v_hs, o_hs;
  int q_ld, k_ld, v_ld, o_ld;
  float scale;
  bool causal;
  const float *mask;
  const uint8_t *drop;
  float drop_keep;
  float *probs, *dropped;
  tt_threads *threads;
  /* backward: the derivative of the attention weights returned as an
   * output (tt_attention_weights), NULL: none */
  const float *dweights;
  bool weights_after, weights_mean;
  /* mixed precision: the format the products' inputs (Q, K, V, P * drop,
   * dO, dS) are rounded to, sums in fp32 (tt_gemm_as_small). Softmax,
   * mask and dropout stay fp32. */
  tt_gemm_inputs gemm_inputs;
  /* backward: P held at half width in gemm_inputs' format instead of
   * probs (NULL: probs), read in place by dV's product and widened a row
   * at a time (lk at most TT_ATTENTION_HALF_ROW) for the softmax's
   * derivative */
  const uint16_t *probs_half;
} tt_attention;
#define TT_ATTENTION_HALF_ROW 4096

void tt_attention_forward (const tt_attention * a);
/* after tt_attention_forward: the attention weights as an output, P
 * (after false) or P * drop (after true; P without drop), each sample's
 * heads averaged into [B][lq][lk] (mean) or [B][H][lq][lk]; backward
 * adds a->dweights (that layout) to dP when set, with weights_after and
 * weights_mean as given here */
void tt_attention_weights (const tt_attention * a, bool after, bool mean,
    float *out);
/* From dout (O's layout): dq, dk, dv in Q's, K's, V's layouts, written
 * (NULL: not wanted; dk == dv with k == v: key is value, both added),
 * dmask (NULL: none) d loss / d (scale Q K^T + mask); dscores
 * [B][H][lq][lk] scratch */
void tt_attention_backward (const tt_attention * a, const float *dout,
    float *dq, float *dk, float *dv, float *dmask, float *dscores);
/* gemm_bf16_small.c: tt_gemm_f32_as_bf16 for small products (attention's
 * heads, matmul's matrices): op(B) and op(A) rounded and packed once,
 * tiles of 8 x 32, the bits of tt_gemm_f32_as_bf16 with AVX-512 BF16;
 * larger products (K past 256, or op(A) or op(B) past 16K values) and
 * other CPUs go to tt_gemm_f32_as_bf16 */
void tt_gemm_f32_as_bf16_small (bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc);
/* the same on operands of either kind (tt_gemm_operand: fp32 rounded
 * while packed, or bf16 read as it is), the bits of tt_gemm_bf16_mixed */
void tt_gemm_bf16_small_mixed (bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, tt_gemm_operand a, tt_gemm_operand b, float beta,
    float *c, int ldc);

/* mol_attention.c: mixture-of-logistics attention of batch samples
 * (nntrainer's mol_attention). proj [B][3K]: the sources of kappa, beta
 * and alpha, which forward turns into kappa (exp), beta (exp), alpha
 * (softmax) in place; state, m (state + kappa, kept) and new_state
 * (NULL: not wanted) [B][K]; len [B] (a length each, NULL: none) zeroes
 * the scores from it on; scores [B][T]; value [B][T][D]; out [B][D].
 * Backward (from dout [B][D] and dnew_state, NULL: zero) writes dvalue
 * and dstate (NULL: not wanted) and dproj [B][3K], the derivative of the
 * sources, and the scores' derivative over the scores. Split over the threads by samples, bit-identical. */
typedef struct {
  size_t batch, t, k, d;
  float *proj, *m, *scores;
  const float *state, *len, *value;
  float *out, *new_state;
  const float *dout, *dnew_state;
  float *dvalue, *dstate, *dproj;
  tt_threads *threads;
} tt_mol;

void tt_mol_forward (const tt_mol * a);
void tt_mol_backward (const tt_mol * a);

/* personalization: out[c] = the sum over batch samples of channel c's
 * plane of x ([batch][channels][plane]), a convolution's bias gradient
 * when its filter is frozen; channels split over pool */
void tt_plane_sums (tt_threads * pool, const float *x, size_t batch,
    size_t channels, size_t plane, float *out);

/* mixed precision: bf16 and fp16 (uint16_t storage) and fp32 (bf16.c).
 * Narrowing rounds to nearest even, overflows to infinity, keeps
 * subnormals, and quiets NaNs (sign and top of the payload kept); every
 * path (AVX-512 BF16, F16C, arm64's NEON, portable) gives the same bits.
 * n elements, x and y not overlapping. */
void tt_f32_to_bf16 (const float *x, uint16_t *y, size_t n);
void tt_bf16_to_f32 (const uint16_t *x, float *y, size_t n);
void tt_f32_to_f16 (const float *x, uint16_t *y, size_t n);
void tt_f16_to_f32 (const uint16_t *x, float *y, size_t n);
/* one value each way */
uint16_t tt_bf16_from_f32 (float x);
float tt_bf16_value (uint16_t h);
uint16_t tt_f16_from_f32 (float x);
float tt_f16_value (uint16_t h);
/* whether the CPU has a bf16 dot product for tt_gemm_bf16: AVX-512
 * BF16's vdpbf16ps and vcvtne2ps2bf16 on x86-64, ARMv8.6's BFDOT on arm64
 * (HWCAP2_BF16) (and tt_bf16_force_portable did not turn them off) */
bool tt_bf16_hw_dot (void);
/* whether fp16 conversions run on the CPU's own (F16C, arm64's NEON) */
bool tt_f16_hw_convert (void);

/* C = alpha * op(A) * op(B) + beta * C as tt_gemm, with A and B in bf16
 * and C in fp32, products and sums in fp32 (gemm_bf16.c): AVX-512 BF16's
 * vdpbf16ps where the CPU has it (bf16 pairs of K packed; denormal
 * products and sums flushed to zero, as the instruction does), else A
 * and B widened to fp32 a block at a time (on the stack) into tt_gemm.
 * beta == 0 does not read C. */
void tt_gemm_bf16 (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const uint16_t *a, int lda, const uint16_t *b, int ldb,
    float beta, float *c, int ldc);
/* the same split over pool's threads as tt_gemm_split (blocks of rows or
 * of columns of C, each with the whole K: deterministic) */
void tt_gemm_bf16_split (tt_threads * pool, bool trans_a, bool trans_b,
    int m, int n, int k, float alpha, const uint16_t *a, int lda,
    const uint16_t *b, int ldb, float beta, float *c, int ldc);
/* tt_gemm_bf16 with fp32 operands, rounded to bf16 as tt_f32_to_bf16
 * rounds them a block at a time (on the stack) while the product runs:
 * the same bits as rounding A and B whole, then tt_gemm_bf16, on either
 * path (the layers' GEMMs in bf16, tt_run_ctx.gemm_inputs); _split as
 * tt_gemm_bf16_split */
void tt_gemm_f32_as_bf16 (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc);
void tt_gemm_f32_as_bf16_split (tt_threads * pool, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *c, int ldc);
/* tt_gemm_bf16 on operands of either kind (tt_gemm_operand): the fp32
 * ones rounded as tt_gemm_f32_as_bf16 rounds them, the same bits */
void tt_gemm_bf16_mixed (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, tt_gemm_operand a, tt_gemm_operand b, float beta, float *c,
    int ldc);

/* fp16 GEMM inputs (gemm_f16.c): whether arm64's FMLAL/FMLAL2 (FEAT_FHM,
 * HWCAP_ASIMDFHM: fp16 products summed in fp32) run tt_gemm_f16, and
 * whether the CPU has ARMv8.2's fp16 arithmetic (HWCAP_ASIMDHP; reported
 * only: without FHM the GEMM widens to fp32); false on x86-64 and when
 * tt_bf16_force_portable turned them off */
bool tt_f16_hw_fmlal (void);
bool tt_f16_hw_arith (void);
/* C = alpha * op(A) * op(B) + beta * C as tt_gemm, A and B in fp16
 * (IEEE binary16), C in fp32, products and sums in fp32: FMLAL where
 * tt_f16_hw_fmlal, else A and B widened to fp32 a block at a time (on
 * the stack: F16C, NEON or portable conversions) into tt_gemm. beta == 0
 * does not read C. */
void tt_gemm_f16 (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const uint16_t *a, int lda, const uint16_t *b, int ldb,
    float beta, float *c, int ldc);
/* tt_gemm_f16 with fp32 operands rounded to fp16 as tt_f32_to_f16 rounds
 * them (beyond 65504: infinity), a block at a time while the product
 * runs: the bits of rounding A and B whole, then tt_gemm_f16, on either
 * path (the layers' GEMMs with an fp16 activation type,
 * tt_run_ctx.gemm_inputs); _split as tt_gemm_bf16_split */
void tt_gemm_f32_as_f16 (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc);
void tt_gemm_f32_as_f16_split (tt_threads * pool, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *c, int ldc);
/* tt_gemm_f16 on operands of either kind, as tt_gemm_bf16_mixed */
void tt_gemm_f16_mixed (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, tt_gemm_operand a, tt_gemm_operand b, float beta, float *c,
    int ldc);

#endif
