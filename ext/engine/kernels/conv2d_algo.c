/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The batched convolution's algorithm (tt_conv2d_batch_algo): every pass
 * of a layer and the scratch it declares ask here, so they agree.
 *
 * fp32 (plan_bf16 false): the direct convolution where it applies (few
 * taps), else Winograd where it applies (3x3, stride 1, 16+ channels,
 * batches of 8+), else im2col and GEMMs: the choice as it always was.
 *
 * Planned with bf16 GEMMs (plan_bf16: the model's activation type is
 * bf16, docs/precision.md): the im2col path's GEMMs then take bf16
 * inputs (vdpbf16ps, two products per fp32 lane), while the direct and
 * Winograd convolutions stay fp32. Measured (tests/bench/conv_algo_speed.c,
 * one thread, a training pass: forward, weight gradient, input
 * derivative; best of 15, ms, on this AVX-512 BF16 machine shared by
 * other jobs, load 13 on 2 cores), fp32's choice against im2col in fp32
 * and in bf16:
 *
 *   layer (C x H x W > F, 3x3)    algo       batch 32            batch 128
 *                                         fp32 im2col bf16   fp32 im2col bf16
 *   fmnist_cnn conv1 1x28x28>32   direct  0.76  2.50  1.61   9.58 43.5  20.1
 *   fmnist_cnn conv2 32x13x13>64  Winograd 1.61 6.71  3.20  19.6  48.8  35.1
 *   zoo_resnet8 16x32x32>16       Winograd 2.87 31.7 19.2   27.4 128    66.9
 *   zoo_resnet8 32x16x16>32       Winograd 1.28 22.4  9.02   9.84 139   51.0
 *   zoo_resnet8 64x8x8>64         Winograd 1.08 10.7  3.31   4.58 60.4  43.0
 *
 * bf16 speeds im2col up 1.3-2.7x, but the direct convolution (its 9 to
 * 32 taps make a GEMM of K 9 to 32: thin, and im2col copies every input
 * 9 times) and Winograd (4x fewer products with F(4x4)) stay 1.5 to 10
 * times faster than it: the rule in bf16 is fp32's choice. The other
 * models' full convolutions (zoo_ds_cnn, zoo_mobilenet_v2,
 * zoo_vww_mobilenet_v1: strided, or 1x1) are im2col in both already.
 * Winograd's own products on bf16 inputs were tried too: within the
 * noise of fp32's speed, twice im2col's bf16 error (the transforms
 * amplify the rounding: 2% of a step's scale where im2col's is under
 * 1%), so Winograd stays fp32.
 */
#include "kernels.h"
#include "tt_test_hooks.h"

/* tt_conv2d_force_algo: -1 the rule */
static int conv2d_forced = -1;

void
tt_conv2d_force_algo (int algo)
{
  conv2d_forced = algo;
}

static tt_conv2d_algo
conv2d_fp32_algo (const tt_window_geom * g, int planned)
{
  if (tt_conv2d_direct_applies (g))
    return TT_CONV2D_DIRECT;
  if (tt_conv2d_winograd_applies (g, planned))
    return TT_CONV2D_WINOGRAD;
  return TT_CONV2D_IM2COL;
}

tt_conv2d_algo
tt_conv2d_batch_algo (const tt_window_geom * g, int planned)
{
  const tt_conv2d_algo fp32 = conv2d_fp32_algo (g, planned);
  if (conv2d_forced >= 0) {
    const tt_conv2d_algo f = (tt_conv2d_algo) conv2d_forced;
    /* only an algorithm that applies to the geometry */
    return f == TT_CONV2D_IM2COL || f == fp32 ? f : fp32;
  }
  /* bf16 (g->plan_bf16): the same choice, as measured above */
  return fp32;
}
