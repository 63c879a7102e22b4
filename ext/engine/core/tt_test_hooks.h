/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Calls for the engine's own tests, not part of the public API (not
 * exported by the shared library, not installed): they reach into what
 * a model computes.
 */
#ifndef TT_TEST_HOOKS_H
#define TT_TEST_HOOKS_H

#include "tt_engine.h"

/* Before compile: also compute the derivative of the loss with respect to
 * the input layers' outputs (normally skipped: nothing needs it), for
 * finite-difference checks of the first layers (test_gradcheck,
 * test_golden). Defined in core/model.c. */
tt_status tt_model_request_input_derivative (tt_model * model, tt_error * err);

/* Before compile: no update as you go, every gradient whole (as when
 * OpenBLAS runs on several threads), living from its layer's
 * calc_gradient to its update as in training, unlike
 * tt_model_keep_gradients's, which live to the end of the step; so that
 * a test compares chunked training and pools with whole gradients'.
 * Defined in core/model.c. */
tt_status tt_model_set_whole_gradients (tt_model * model, tt_error * err);

/* A model laid out by halves for two threads keeps a second layout for
 * the steps it runs inline (core/layout_switch.c). which: 0 the pool's
 * choice (the default), 1 the one-thread layout for every step, 2 the
 * halves for every step. Returns how many times the layout changed so
 * far, and whether the model has two (*has_two). Defined in
 * core/layout_switch.c. */
uint64_t tt_model_force_layout (tt_model * model, int which, bool *has_two);

/* Before compile: whether dense layers do the relus between them
 * (core/relu_fusion.c; on by default), so that a test can compare the
 * fused passes with the relu layers' own. After compile: the relu
 * passes fused (forward and backward each count). Defined in
 * core/relu_fusion.c. */
void tt_model_set_relu_fusion (tt_model * model, bool on);
unsigned tt_model_relu_fusions (const tt_model * model);
/* After compile: the dense layers whose input derivative every thread
 * makes (core/deriv_copies.c; off with the relu fusion). */
unsigned tt_model_deriv_copies (const tt_model * model);
/* Dense layers that do the loss after them on every thread
 * (core/loss_tail.c; off with the relu fusion). */
unsigned tt_model_loss_tails (const tt_model * model);
/* Before compile: whether such a layer does its loss (on by default),
 * so that a test can compare the relu fusion and the derivative copies,
 * the same products bit for bit, apart from the loss's, whose products
 * have other shapes. */
void tt_model_set_loss_tail (tt_model * model, bool on);

/* Whether tt_attention runs its softmax rows on the vectors every CPU
 * has (8-float vector extensions) even where AVX-512 rows exist, so that
 * a test on an AVX-512 machine checks both. Defined in
 * kernels/attention.c. */
void tt_attention_force_portable (bool on);

/* Whether the bf16 and fp16 conversions and tt_gemm_bf16 use the
 * portable code even where AVX-512 BF16, F16C or NEON's conversions
 * exist, so that a test checks both. Defined in kernels/bf16.c. */
void tt_bf16_force_portable (bool on);

/* personalization: whether multi_head_attention keeps the heads' output
 * from forward to backward and writes their derivative over it even
 * when no weight gradient reads it (off by default: a frozen attention
 * gives them separate lifetimes), so that a test can compare the two
 * plans bit for bit. Before compile. Defined in
 * layers/layer_multi_head_attention.c. */
void tt_mha_force_keep_heads (bool on);
/* mixed precision: whether multi_head_attention holds its projections
 * and heads' output in fp32 even when planned with half-width GEMM
 * inputs (off by default: they are held at 2 bytes an element), so that
 * a test can compare the two bit for bit. Before compile. Defined in
 * layers/layer_multi_head_attention.c. */
void tt_mha_force_fp32_scratch (bool on);
/* the same for the softmax's probabilities alone (held at half width by
 * default, rounded where backward reads them), so that a test can
 * compare the rest bit for bit and bound what rounding them changes */
void tt_mha_force_fp32_probs (bool on);

/* dynamic loss scaling: the good steps in a row that double the scale
 * (0: nntrainer's 2000). Defined in core/loss_scale.c. */
void tt_model_set_loss_scale_interval (tt_model * model, uint32_t steps);
/* before compile: the initial scale as [Model] loss_scale sets it (0:
 * off), for a model of tests/models without the key */
void tt_model_set_initial_loss_scale (tt_model * model, float scale);

/* convolutions in bf16: the batched convolution's algorithm for every
 * geometry (tt_conv2d_algo: 0 im2col, 1 direct, 2 Winograd, where it
 * applies; -1 the rule, the default), so that a bench can time each
 * (tests/bench/conv_algo_speed.c). Before compile. Defined in
 * kernels/conv2d_algo.c. */
void tt_conv2d_force_algo (int algo);

/* convolutions in bf16 and fp16: whether conv2d's im2col path keeps its
 * columns and regrouped output derivative in fp32 (the GEMMs rounding
 * them as they pack) instead of at half width, so that a test can
 * compare the two bit for bit (test_bf16_layers). Before compile.
 * Defined in layers/layer_conv2d.c. */
void tt_conv2d_force_fp32_scratch (bool on);

/* with a half activation type: every stashable activation stashed, none
 * kept fp32 where its widening would fall on the busiest step
 * (remat_unstash_peaks), so that a test can compare two plans whose
 * busiest steps differ, or a swap with the stash it stands for, bit for
 * bit. Before compile. Defined in plan/remat.c. */
void tt_remat_keep_every_stash (bool on);

#endif
