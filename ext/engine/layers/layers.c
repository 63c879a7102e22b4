/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The layer types the INI can name, by nntrainer's type strings. */
#include "tt_layer.h"

#include <strings.h>

static const tt_layer_ops *const layers_all[] = {
  &tt_input_layer_ops, &tt_fc_layer_ops, &tt_conv2d_layer_ops,
  &tt_conv1d_layer_ops,
  &tt_pooling2d_layer_ops, &tt_flatten_layer_ops, &tt_reshape_layer_ops,
  &tt_activation_layer_ops, &tt_batchnorm_layer_ops, &tt_dropout_layer_ops,
  &tt_addition_layer_ops, &tt_concat_layer_ops, &tt_multiout_layer_ops,
  &tt_mse_layer_ops, &tt_cross_softmax_layer_ops,
  &tt_cross_sigmoid_layer_ops, &tt_lstm_layer_ops, &tt_gru_layer_ops,
  &tt_depthwiseconv2d_layer_ops,
  &tt_layer_normalization_layer_ops, &tt_embedding_layer_ops,
  &tt_positional_encoding_layer_ops,
  /* nntrainer's operation layers */
  &tt_add_layer_ops, &tt_subtract_layer_ops, &tt_multiply_layer_ops,
  &tt_divide_layer_ops, &tt_pow_layer_ops, &tt_sqrt_layer_ops,
  &tt_sin_layer_ops, &tt_cos_layer_ops, &tt_tan_layer_ops,
  &tt_negative_layer_ops, &tt_identity_layer_ops,
  &tt_reduce_mean_layer_ops, &tt_reduce_sum_layer_ops,
  /* upsample2d, channel_shuffle */
  &tt_upsample2d_layer_ops, &tt_channel_shuffle_layer_ops,
  /* tensor-manipulation layers */
  &tt_weight_layer_ops, &tt_matmul_layer_ops, &tt_cast_layer_ops,
  &tt_gather_layer_ops, &tt_slice_layer_ops, &tt_split_layer_ops,
  &tt_permute_layer_ops,
  /* the rest of nntrainer's set: kld, constant_derivative, centroid_knn */
  &tt_kld_layer_ops, &tt_constant_derivative_layer_ops,
  &tt_centroid_knn_layer_ops,
  /* transposed convolution and the preprocessing layers */
  &tt_conv2d_transpose_layer_ops, &tt_preprocess_flip_layer_ops,
  &tt_preprocess_translate_layer_ops, &tt_preprocess_l2norm_layer_ops,
  /* attention */
  &tt_attention_layer_ops, &tt_multi_head_attention_layer_ops,
  /* the recurrent family */
  &tt_rnn_layer_ops, &tt_rnncell_layer_ops, &tt_lstmcell_layer_ops,
  /* the recurrent family's last cells: grucell, zoneout_lstmcell */
  &tt_grucell_layer_ops, &tt_zoneout_lstmcell_layer_ops,
  /* mixture-of-logistics attention */
  &tt_mol_attention_layer_ops,
};

/* a type declared in tt_layer.h but left out here (or the reverse) would
 * be unknown to the INI and to the registry check */
_Static_assert (sizeof layers_all / sizeof layers_all[0] == TT_LAYER_TYPES,
    "layers_all lists every layer type, TT_LAYER_TYPES (tt_layer.h) counts "
    "them");

const tt_layer_ops *
tt_layer_ops_find (const char *type)
{
  for (uint32_t i = 0; i < TT_LAYER_TYPES; i++)
    if (!strcasecmp (type, layers_all[i]->type))
      return layers_all[i];
  /* nntrainer's older name of multiout (its ResNet INI still uses it) */
  if (!strcasecmp (type, "output"))
    return &tt_multiout_layer_ops;
  return NULL;
}

const tt_layer_ops *
tt_layer_ops_at (uint32_t i)
{
  return i < TT_LAYER_TYPES ? layers_all[i] : NULL;
}
