/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LoRA on multi_head_attention (ours: nntrainer's has no adapters):
 * lora_rank and lora_alpha, as on fully_connected, adapt each of the
 * four projections (query, key, value: input x W + b; output: the
 * heads x fc_weight + fc_bias) with a pair of the same rank and scale
 * (lora_proj.c's products). The projections' weights and biases freeze;
 * the adapters follow the layer's own weights in the BIN: query_loraA
 * [dq][r], query_loraB [r][H * kd], then key_, value_ and fc_ (the
 * output projection: [H * vd][r], [r][output_shape]). The passes are
 * layer_multi_head_attention.c's, which call the products.
 */
#include "tt_layer.h"

static const char *const mha_lora_names[4] = { "query", "key", "value",
  "output"
};

static const char *const mha_lora_a[4] = { "query_loraA", "key_loraA",
  "value_loraA", "fc_loraA"
};

static const char *const mha_lora_b[4] = { "query_loraB", "key_loraB",
  "value_loraB", "fc_loraB"
};

tt_status
tt_mha_lora_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  return tt_lora_keys (s, 1u << 20, &l->p.attn.lora_rank,
      &l->p.attn.lora_alpha, &l->p.attn.lora_scale, err);
}

/* after the layer's eight (or four) weights, in infer */
tt_status
tt_mha_lora_weights (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const uint32_t rank = l->p.attn.lora_rank, heads = l->p.attn.heads;
  const uint32_t hk = heads * l->p.attn.key_dim,
      hv = heads * l->p.attn.value_dim;
  const uint32_t k[4] = { l->in_dims[0].w, l->in_dims[1].w, l->in_dims[2].w,
    hv
  };
  const uint32_t n[4] = { hk, hk, hv, l->p.attn.out_dim };
  for (int i = 0; i < 4; i++) {
    const uint32_t most = k[i] < n[i] ? k[i] : n[i];
    if (rank > most)
      return tt_fail (err, TT_ERR_INVALID, "%s: [%s] lora_rank: %u is above "
          "min (in %u, out %u) = %u of the %s projection (lora_rank adapts "
          "all four projections: query, key, value, output)", c->path,
          l->section, rank, k[i], n[i], most, mha_lora_names[i]);
  }
  for (uint32_t i = 0; i < l->n_weights; i++)
    l->weights[i].trainable = false;
  for (int i = 0; i < 4; i++)
    tt_lora_add_pair (l, mha_lora_a[i], mha_lora_b[i], k[i], n[i], rank);
  return TT_OK;
}

uint32_t
tt_mha_lora_pairs (const tt_layer * l, tt_lora_pair * out)
{
  const uint32_t rank = l->p.attn.lora_rank;
  if (!rank)
    return 0;
  const uint32_t base = l->n_weights - 8;
  for (uint32_t i = 0; i < 4; i++) {
    const uint32_t a = base + 2 * i;
    out[i] = (tt_lora_pair) {
    .base = l->disable_bias ? i : 2 * i,.a = a,.b = a + 1,.k =
          (uint32_t) (l->weights[a].count / rank),.n =
          (uint32_t) (l->weights[a + 1].count / rank),.rank = rank,.scale =
          l->p.attn.lora_scale,.transposed = false};
  }
  return 4;
}

const char *
tt_mha_lora_refuses (const tt_layer * l)
{
  (void) l;
  return NULL;
}
