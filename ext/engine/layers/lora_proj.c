/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LoRA beyond fully_connected: what multi_head_attention's projections
 * (mha_lora.c) and a 1x1 conv2d (conv_lora.c) share with the dense
 * layer's adapters (fc_lora.c): the keys, the pair of weights, and one
 * adapted projection's products. A projection y = x W (x rows x k, W
 * k x n) adapted with rank r and scale s:
 *
 *   y = x W + s (x A) B,   h = x A (rows x r), dh = s dy B^T
 *   dB = s h^T dy,   dA = x^T dh,   dx = dy W^T + dh A^T
 *
 * The base W (and its bias) frozen; A starts at zeros (the adapted
 * layer's first outputs are the base's), B lecun normal, as nntrainer's
 * fully_connected adapters.
 */
#include "tt_layer.h"

tt_status
tt_lora_keys (const tt_section * s, uint32_t max, uint32_t * rank,
    uint32_t * alpha, float *scale, tt_error * err)
{
  tt_status st;
  *rank = *alpha = 0;
  *scale = 1.0f;
  if ((st = tt_section_uint (s, "lora_rank", 0, max, rank, err)) ||
      (st = tt_section_uint (s, "lora_alpha", 1, 1u << 24, alpha, err)))
    return st;
  if (tt_section_has (s, "lora_alpha") && !*rank)
    return tt_section_error (s, "lora_alpha", err, TT_ERR_INVALID,
        "needs lora_rank >= 1 (the adapters' rank; lora_rank = 0 or none: "
        "no adapters)");
  if (*rank && *alpha)
    *scale = (float) *alpha / (float) *rank;
  return TT_OK;
}

void
tt_lora_add_pair (tt_layer * l, const char *a_name, const char *b_name,
    uint32_t k, uint32_t n, uint32_t rank)
{
  tt_weight *a = tt_layer_add_weight (l, a_name, (size_t) k * rank,
      TT_INIT_ZEROS, k, rank, true);
  tt_weight *b = tt_layer_add_weight (l, b_name, (size_t) rank * n,
      TT_INIT_LECUN_NORMAL, rank, n, true);
  a->decay = b->decay = l->weight_decay;
  a->l2 = b->l2 = l->l2_constant;
}

void
tt_lora_proj_forward (tt_threads * pool, int rows, int k, int n, int r,
    float s, const float *x, const float *a, const float *b, float *h, float *y)
{
  tt_gemm_split (pool, false, false, rows, r, k, 1.0f, x, k, a, r, 0.0f, h, r);
  tt_gemm_split (pool, false, false, rows, n, r, s, h, r, b, n, 1.0f, y, n);
}

void
tt_lora_proj_dh (tt_threads * pool, int rows, int n, int r, float s,
    const float *dy, const float *b, float *dh)
{
  tt_gemm_split (pool, false, true, rows, r, n, s, dy, n, b, n, 0.0f, dh, r);
}

void
tt_lora_proj_grads (tt_threads * pool, int rows, int k, int n, int r,
    float s, const float *x, const float *dy, const float *h,
    const float *dh, float *da, float *db)
{
  if (db)
    tt_gemm_split (pool, true, false, r, n, rows, s, h, r, dy, n, 0.0f, db, n);
  if (da)
    tt_gemm_split (pool, true, false, k, r, rows, 1.0f, x, k, dh, r, 0.0f,
        da, r);
}

void
tt_lora_proj_input (tt_threads * pool, int rows, int k, int r,
    const float *dh, const float *a, float *dx)
{
  tt_gemm_split (pool, false, true, rows, k, r, 1.0f, dh, r, a, r, 1.0f, dx, k);
}
