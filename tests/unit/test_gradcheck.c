/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Finite-difference checks of every layer's backward pass and every loss.
 * Each case is a tiny model; the analytic derivative of the loss with
 * respect to the input and the gradient of every trainable weight are
 * compared with central differences of the loss (training-mode forward,
 * dropout masks replayed from a fixed seed).
 *
 * Tolerance: float32 forward passes, step 1e-2 (5e-3 for weights), pass
 * when |fd - analytic| <= 2e-2 * max(|fd|, |analytic|) + 5e-4.
 *
 * And the gru's forward against nntrainer's formulas in double (its
 * reset_after = false form has no PyTorch golden).
 */
#include "tt_internal.h"
#include "tt_test.h"

#include <float.h>
#include <math.h>

#define GC_BATCH 3
#define GC_SAMPLES 40           /* entries checked per tensor */

typedef struct
{
  const char *name;
  const char *ini;              /* [Model] and [Optimizer] are prepended */
  const char *loss;
} gc_case;

static const gc_case gc_cases[] = {
  {"fc", "[in]\ntype=input\ninput_shape=1:1:5\n[fc]\ntype=fully_connected\n"
        "unit=4\n", "mse"},
  {"fc_4d", "[in]\ntype=input\ninput_shape=2:3:5\n[fc]\n"
        "type=fully_connected\nunit=3\nweight_initializer=he_normal\n", "mse"},
  {"fc_no_bias", "[in]\ntype=input\ninput_shape=1:1:6\n[fc]\n"
        "type=fully_connected\nunit=2\ndisable_bias=true\n", "mse"},
  {"conv_valid", "[in]\ntype=input\ninput_shape=2:5:5\n[c]\ntype=conv2d\n"
        "filters=3\nkernel_size=3,3\n", "mse"},
  {"conv_same_stride", "[in]\ntype=input\ninput_shape=2:7:6\n[c]\n"
        "type=conv2d\nfilters=2\nkernel_size=3,2\nstride=2,1\npadding=same\n",
      "mse"},
  {"conv_pad_dilation", "[in]\ntype=input\ninput_shape=1:7:7\n[c]\n"
        "type=conv2d\nfilters=2\nkernel_size=3,3\ndilation=2,2\n"
        "padding=1,0,2,1\n", "mse"},
  {"conv_1x1", "[in]\ntype=input\ninput_shape=3:4:4\n[c]\ntype=conv2d\n"
        "filters=2\nkernel_size=1,1\n", "mse"},
  {"conv1d_same", "[in]\ntype=input\ninput_shape=3:1:9\n[c]\ntype=conv1d\n"
        "filters=2\nkernel_size=3\npadding=same\n", "mse"},
  {"conv1d_stride_dilation", "[in]\ntype=input\ninput_shape=2:1:12\n[c]\n"
        "type=conv1d\nfilters=3\nkernel_size=3\nstride=2\ndilation=2\n"
        "padding=2,1\n[d]\ntype=conv1d\nfilters=2\nkernel_size=2\n",
      "mse"},
  {"conv1d_direct", "[in]\ntype=input\ninput_shape=8:1:20\n[c]\n"
        "type=conv1d\nfilters=3\nkernel_size=3\n", "mse"},
  {"pool_max", "[in]\ntype=input\ninput_shape=2:6:6\n[p]\ntype=pooling2d\n"
        "pooling=max\npool_size=2,2\nstride=2,2\n", "mse"},
  {"pool_avg_pad", "[in]\ntype=input\ninput_shape=2:5:5\n[p]\n"
        "type=pooling2d\npooling=average\npool_size=3,3\nstride=1,1\n"
        "padding=1\n", "mse"},
  {"pool_global_max", "[in]\ntype=input\ninput_shape=3:4:5\n[p]\n"
        "type=pooling2d\npooling=global_max\n", "mse"},
  {"pool_global_avg", "[in]\ntype=input\ninput_shape=3:4:5\n[p]\n"
        "type=pooling2d\npooling=global_average\n", "mse"},
  {"flatten_fc", "[in]\ntype=input\ninput_shape=2:2:3\n[f]\ntype=flatten\n"
        "[fc]\ntype=fully_connected\nunit=3\n", "mse"},
  {"reshape_fc", "[in]\ntype=input\ninput_shape=1:1:12\n[r]\ntype=reshape\n"
        "target_shape=3:2:2\n[c]\ntype=conv2d\nfilters=2\nkernel_size=2,2\n",
      "mse"},
  {"relu", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\ntype=activation\n"
        "activation=relu\n", "mse"},
  {"leaky_relu", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\n"
        "type=activation\nactivation=leaky_relu\n", "mse"},
  {"sigmoid", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\ntype=activation\n"
        "activation=sigmoid\n", "mse"},
  {"tanh", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\ntype=activation\n"
        "activation=tanh\n", "mse"},
  {"softmax", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\ntype=activation\n"
        "activation=softmax\n", "mse"},
  {"swish", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\ntype=activation\n"
        "activation=swish\n", "mse"},
  {"gelu", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\ntype=activation\n"
        "activation=gelu\n", "mse"},
  {"elu", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\ntype=activation\n"
        "activation=elu\n", "mse"},
  {"fc_activation_key", "[in]\ntype=input\ninput_shape=1:1:4\n[fc]\n"
        "type=fully_connected\nunit=3\nactivation=tanh\n", "mse"},
  {"bn_channel", "[in]\ntype=input\ninput_shape=3:3:3\n[bn]\n"
        "type=batch_normalization\ngamma_initializer=he_normal\n"
        "beta_initializer=he_normal\n", "mse"},
  {"bn_width", "[in]\ntype=input\ninput_shape=1:1:6\n[bn]\n"
        "type=batch_normalization\ngamma_initializer=he_normal\n", "mse"},
  {"bn_height", "[in]\ntype=input\ninput_shape=2:4:3\n[bn]\n"
        "type=batch_normalization\naxis=2\ngamma_initializer=he_normal\n",
      "mse"},
  {"dropout", "[in]\ntype=input\ninput_shape=1:2:8\n[d]\ntype=dropout\n"
        "dropout_rate=0.3\n[fc]\ntype=fully_connected\nunit=3\n", "mse"},
  {"addition_multiout", "[in]\ntype=input\ninput_shape=1:1:5\n[a]\n"
        "type=fully_connected\nunit=4\ninput_layers=in\n[b]\n"
        "type=fully_connected\nunit=4\ninput_layers=in\n[sum]\n"
        "type=addition\ninput_layers=a,b,in/multiout(0)\n", "bad"},
  {"addition", "[in]\ntype=input\ninput_shape=1:1:5\n[a]\n"
        "type=fully_connected\nunit=4\ninput_layers=in\n[b]\n"
        "type=fully_connected\nunit=4\ninput_layers=in\nactivation=sigmoid\n"
        "[sum]\ntype=addition\ninput_layers=a,b\n", "mse"},
  {"concat_channel", "[in]\ntype=input\ninput_shape=2:3:3\n[a]\n"
        "type=conv2d\nfilters=2\nkernel_size=1,1\ninput_layers=in\n[b]\n"
        "type=conv2d\nfilters=3\nkernel_size=1,1\ninput_layers=in\n[cat]\n"
        "type=concat\naxis=1\ninput_layers=a,b\n", "mse"},
  {"concat_height", "[in]\ntype=input\ninput_shape=2:3:3\n[a]\n"
        "type=conv2d\nfilters=2\nkernel_size=2,1\ninput_layers=in\n[b]\n"
        "type=conv2d\nfilters=2\nkernel_size=1,1\ninput_layers=in\n[cat]\n"
        "type=concat\naxis=2\ninput_layers=a,b\n", "mse"},
  {"concat_width", "[in]\ntype=input\ninput_shape=1:2:4\n[a]\n"
        "type=fully_connected\nunit=2\ninput_layers=in\n[b]\n"
        "type=fully_connected\nunit=3\ninput_layers=in\n[cat]\n"
        "type=concat\ninput_layers=a,b,in\n", "mse"},
  {"cross_softmax", "[in]\ntype=input\ninput_shape=1:1:6\n[fc]\n"
        "type=fully_connected\nunit=4\nactivation=softmax\n", "cross"},
  {"cross_sigmoid", "[in]\ntype=input\ninput_shape=1:1:6\n[fc]\n"
        "type=fully_connected\nunit=4\nactivation=sigmoid\n", "cross"},
  {"cross_softmax_layer", "[in]\ntype=input\ninput_shape=1:1:6\n[fc]\n"
        "type=fully_connected\nunit=4\n[l]\ntype=cross_softmax\n", NULL},
  {"cross_sigmoid_layer", "[in]\ntype=input\ninput_shape=1:1:6\n[fc]\n"
        "type=fully_connected\nunit=4\n[l]\ntype=cross_sigmoid\n", NULL},
  {"mse_layer", "[in]\ntype=input\ninput_shape=1:1:6\n[fc]\n"
        "type=fully_connected\nunit=4\n[l]\ntype=mse\n", NULL},
  {"lstm_sequences", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\ntype=lstm\n"
        "unit=5\nreturn_sequences=true\nbias_initializer=he_uniform\n", "mse"},
  {"lstm_last", "[in]\ntype=input\ninput_shape=1:5:3\n[l]\ntype=lstm\n"
        "unit=4\n", "mse"},
  {"lstm_integrate_bias", "[in]\ntype=input\ninput_shape=1:4:2\n[l]\n"
        "type=lstm\nunit=3\nintegrate_bias=true\nreturn_sequences=true\n",
      "mse"},
  {"lstm_one_step", "[in]\ntype=input\ninput_shape=1:1:4\n[l]\n"
        "type=lstm\nunit=3\nintegrate_bias=true\n", "mse"},
  {"lstm_no_bias", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\ntype=lstm\n"
        "unit=3\ndisable_bias=true\nreturn_sequences=true\n", "mse"},
  {"lstm_activations", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\n"
        "type=lstm\nunit=4\nreturn_sequences=true\n"
        "hidden_state_activation=sigmoid\nrecurrent_activation=tanh\n",
      "mse"},
  {"lstm_elu_none", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\n"
        "type=lstm\nunit=3\nhidden_state_activation=elu\n"
        "recurrent_activation=none\n", "mse"},
  {"lstm_stack", "[in]\ntype=input\ninput_shape=1:4:3\n[a]\ntype=lstm\n"
        "unit=4\nreturn_sequences=true\n[b]\ntype=lstm\nunit=3\n"
        "[fc]\ntype=fully_connected\nunit=2\nactivation=softmax\n",
      "cross"},
  {"lstm_frozen", "[in]\ntype=input\ninput_shape=1:4:3\n[a]\n"
        "type=fully_connected\nunit=3\n[l]\ntype=lstm\nunit=4\n"
        "return_sequences=true\ntrainable=false\n[fc]\n"
        "type=fully_connected\nunit=2\n", "mse"},
  {"gru_sequences", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\ntype=gru\n"
        "unit=5\nreturn_sequences=true\nbias_initializer=he_uniform\n", "mse"},
  {"gru_last", "[in]\ntype=input\ninput_shape=1:5:3\n[l]\ntype=gru\n"
        "unit=4\n", "mse"},
  {"gru_reset_before", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\n"
        "type=gru\nunit=4\nreturn_sequences=true\nreset_after=false\n",
      "mse"},
  {"gru_reset_before_last", "[in]\ntype=input\ninput_shape=1:5:2\n[l]\n"
        "type=gru\nunit=3\nreset_after=false\n", "mse"},
  {"gru_integrate_bias", "[in]\ntype=input\ninput_shape=1:4:2\n[l]\n"
        "type=gru\nunit=3\nintegrate_bias=true\nreturn_sequences=true\n",
      "mse"},
  {"gru_integrate_bias_before", "[in]\ntype=input\ninput_shape=1:4:2\n"
        "[l]\ntype=gru\nunit=3\nintegrate_bias=true\nreset_after=false\n",
      "mse"},
  {"gru_one_step", "[in]\ntype=input\ninput_shape=1:1:4\n[l]\n"
        "type=gru\nunit=3\n", "mse"},
  {"gru_one_step_before", "[in]\ntype=input\ninput_shape=1:1:4\n[l]\n"
        "type=gru\nunit=3\nreset_after=false\nreturn_sequences=true\n",
      "mse"},
  {"gru_no_bias", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\ntype=gru\n"
        "unit=3\ndisable_bias=true\nreturn_sequences=true\n", "mse"},
  {"gru_no_bias_before", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\n"
        "type=gru\nunit=3\ndisable_bias=true\nreset_after=false\n", "mse"},
  {"gru_activations", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\n"
        "type=gru\nunit=4\nreturn_sequences=true\n"
        "hidden_state_activation=sigmoid\nrecurrent_activation=tanh\n",
      "mse"},
  {"gru_elu_none_before", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\n"
        "type=gru\nunit=3\nhidden_state_activation=elu\n"
        "recurrent_activation=none\nreset_after=false\n", "mse"},
  {"gru_stack", "[in]\ntype=input\ninput_shape=1:4:3\n[a]\ntype=gru\n"
        "unit=4\nreturn_sequences=true\n[b]\ntype=gru\nunit=3\n"
        "reset_after=false\n[fc]\ntype=fully_connected\nunit=2\n"
        "activation=softmax\n", "cross"},
  {"gru_frozen", "[in]\ntype=input\ninput_shape=1:4:3\n[a]\n"
        "type=fully_connected\nunit=3\n[l]\ntype=gru\nunit=4\n"
        "return_sequences=true\ntrainable=false\n[fc]\n"
        "type=fully_connected\nunit=2\n", "mse"},
  {"gru_frozen_last_before", "[in]\ntype=input\ninput_shape=1:4:3\n[a]\n"
        "type=fully_connected\nunit=3\n[l]\ntype=gru\nunit=4\n"
        "reset_after=false\ntrainable=false\n[fc]\n"
        "type=fully_connected\nunit=2\n", "mse"},
  {"frozen_middle", "[in]\ntype=input\ninput_shape=1:1:5\n[a]\n"
        "type=fully_connected\nunit=4\n[b]\ntype=fully_connected\nunit=4\n"
        "trainable=false\nactivation=tanh\n[c]\ntype=fully_connected\n"
        "unit=3\n", "mse"},
  /* convolutions: conv1d's Padding1D forms, groups, depthwise */
  {"conv1d_pad_left_right", "[in]\ntype=input\ninput_shape=2:1:7\n[c]\n"
        "type=conv1d\nfilters=2\nkernel_size=3\npadding=0,2\n", "mse"},
  {"conv1d_causal", "[in]\ntype=input\ninput_shape=2:1:8\n[c]\n"
        "type=conv1d\nfilters=2\nkernel_size=3\ndilation=2\n"
        "padding=causal\n", "mse"},
  {"conv1d_same_even_stride", "[in]\ntype=input\ninput_shape=2:1:9\n[c]\n"
        "type=conv1d\nfilters=2\nkernel_size=4\nstride=2\npadding=same\n",
      "mse"},
  {"conv1d_groups", "[in]\ntype=input\ninput_shape=4:1:10\n[c]\n"
        "type=conv1d\nfilters=6\nkernel_size=3\ngroups=2\npadding=1\n",
      "mse"},
  {"conv2d_groups", "[in]\ntype=input\ninput_shape=4:5:5\n[c]\n"
        "type=conv2d\nfilters=6\nkernel_size=3,2\ngroups=2\nstride=2,1\n"
        "padding=same\n", "mse"},
  {"conv2d_groups_1x1", "[in]\ntype=input\ninput_shape=4:3:3\n[c]\n"
        "type=conv2d\nfilters=4\nkernel_size=1,1\ngroups=4\n", "mse"},
  {"depthwise_3x3", "[in]\ntype=input\ninput_shape=3:6:6\n[c]\n"
        "type=depthwiseconv2d\nkernel_size=3,3\npadding=same\n", "mse"},
  {"depthwise_stride2_mult", "[in]\ntype=input\ninput_shape=2:7:7\n[c]\n"
        "type=depthwiseconv2d\nfilters=4\nkernel_size=3,3\nstride=2,2\n"
        "padding=1\n", "mse"},
  {"depthwise_dilation_stride3", "[in]\ntype=input\ninput_shape=2:9:11\n"
        "[c]\ntype=depthwiseconv2d\nkernel_size=3,2\nstride=3,3\n"
        "dilation=2,2\npadding=1,2,0,3\n", "mse"},
  {"depthwise_frozen_below", "[in]\ntype=input\ninput_shape=2:5:5\n[a]\n"
        "type=depthwiseconv2d\nkernel_size=3,3\npadding=same\n"
        "trainable=false\n[b]\ntype=conv2d\nfilters=2\nkernel_size=1,1\n",
      "mse"},
  {"layer_norm_width", "[in]\ntype=input\ninput_shape=2:3:6\n[ln]\n"
        "type=layer_normalization\naxis=3\nepsilon=0.01\n", "mse"},
  {"layer_norm_chw", "[in]\ntype=input\ninput_shape=2:3:4\n[ln]\n"
        "type=layer_normalization\naxis=1,2,3\n[fc]\n"
        "type=fully_connected\nunit=3\n", "mse"},
  {"layer_norm_height", "[in]\ntype=input\ninput_shape=2:5:3\n[ln]\n"
        "type=layer_normalization\naxis=2\n", "mse"},
  {"layer_norm_channel_height", "[in]\ntype=input\ninput_shape=3:2:4\n"
        "[ln]\ntype=layer_normalization\naxis=2,1\n", "mse"},
  {"layer_norm_long_rows", "[in]\ntype=input\ninput_shape=1:2:21\n[ln]\n"
        "type=layer_normalization\naxis=3\n", "mse"},
  {"embedding", "[in]\ntype=input\ninput_shape=1:1:5\n[e]\n"
        "type=embedding\nin_dim=7\nout_dim=4\n", "mse"},
  {"embedding_transformer", "[in]\ntype=input\ninput_shape=1:1:6\n[e]\n"
        "type=embedding\nin_dim=5\nout_dim=8\n[pe]\n"
        "type=positional_encoding\nmax_timestep=10\n[ln]\n"
        "type=layer_normalization\naxis=3\n[fc]\ntype=fully_connected\n"
        "unit=3\n", "mse"},
  {"positional_encoding", "[in]\ntype=input\ninput_shape=2:4:6\n[pe]\n"
        "type=positional_encoding\nmax_timestep=4\n[fc]\n"
        "type=fully_connected\nunit=3\nactivation=tanh\n", "mse"},
  {"tanh_gelu", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\n"
        "type=activation\nactivation=tanh_gelu\n", "mse"},
  {"sigmoid_gelu", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\n"
        "type=activation\nactivation=sigmoid_gelu\n", "mse"},
  {"softplus", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\n"
        "type=activation\nactivation=softplus\n", "mse"},
  {"selu", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\n"
        "type=activation\nactivation=selu\n", "mse"},
  {"mish", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\n"
        "type=activation\nactivation=mish\n", "mse"},
  {"relu6", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\n"
        "type=activation\nactivation=relu6\n", "mse"},
  {"hard_swish", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\n"
        "type=activation\nactivation=hard_swish\n", "mse"},
  {"hard_sigmoid", "[in]\ntype=input\ninput_shape=1:2:6\n[a]\n"
        "type=activation\nactivation=hard_sigmoid\n", "mse"},
  /* activation= on a layer; chains of activations that differentiate
   * from their outputs (in place where the planner allows) */
  {"fc_mish_hard_swish", "[in]\ntype=input\ninput_shape=1:1:5\n[a]\n"
        "type=fully_connected\nunit=4\nactivation=mish\n[b]\n"
        "type=fully_connected\nunit=3\nactivation=hard_swish\n", "mse"},
  {"fc_output_activations", "[in]\ntype=input\ninput_shape=1:1:5\n[a]\n"
        "type=fully_connected\nunit=4\nactivation=softplus\n[s]\n"
        "type=activation\nactivation=selu\n[r]\ntype=activation\n"
        "activation=relu6\n[b]\ntype=fully_connected\nunit=3\n"
        "activation=hard_sigmoid\n", "mse"},
  /* nntrainer's operation layers (layer_binary_ops.c, layer_unary_ops.c,
   * layer_reduce.c) */
#define GC_OPS_IN "[in]\ntype=input\ninput_shape=2:3:4\n"
#define GC_OPS_CONV(NAME) "[" NAME "]\ntype=conv2d\nfilters=3\n" \
  "kernel_size=1,1\ninput_layers=in\n"
#define GC_OPS_GATE "[g]\ntype=pooling2d\npooling=global_average\n" \
  "input_layers=in\n[s]\ntype=conv2d\nfilters=3\nkernel_size=1,1\n" \
  "activation=sigmoid\n"
  {"op_add", "[in]\ntype=input\ninput_shape=1:1:5\n[a]\n"
        "type=fully_connected\nunit=4\ninput_layers=in\n[b]\n"
        "type=fully_connected\nunit=4\ninput_layers=in\nactivation=tanh\n"
        "[op]\ntype=add\ninput_layers=a,b\n", "mse"},
  {"op_multiply_se", GC_OPS_IN GC_OPS_CONV ("a") GC_OPS_GATE
        "[op]\ntype=multiply\ninput_layers=a,s\n", "mse"},
  {"op_multiply_same_input", GC_OPS_IN "[r]\ntype=reduce_sum\naxis=3\n"
        "input_layers=in\n[op]\ntype=multiply\ninput_layers=in,r\n", "mse"},
  {"op_add_bcast_left", GC_OPS_IN GC_OPS_CONV ("a") GC_OPS_GATE
        "[op]\ntype=add\ninput_layers=s,a\n", "mse"},
  {"op_subtract_bcast_left", GC_OPS_IN GC_OPS_CONV ("a") GC_OPS_GATE
        "[op]\ntype=subtract\ninput_layers=s,a\n", "mse"},
  {"op_subtract", "[in]\ntype=input\ninput_shape=1:1:5\n[a]\n"
        "type=fully_connected\nunit=4\ninput_layers=in\n[b]\n"
        "type=fully_connected\nunit=4\ninput_layers=in\n"
        "[op]\ntype=subtract\ninput_layers=a,b\n", "mse"},
  {"op_divide_bcast", GC_OPS_IN GC_OPS_CONV ("a")
      "[p]\ntype=reduce_mean\naxis=1\ninput_layers=a\n"
        "activation=sigmoid\n[op]\ntype=divide\ninput_layers=a,p\n", "mse"},
  {"op_divide_bcast_left", GC_OPS_IN GC_OPS_CONV ("a") GC_OPS_GATE
        "[e]\ntype=activation\nactivation=sigmoid\ninput_layers=a\n"
        "[op]\ntype=divide\ninput_layers=s,e\n", "mse"},
  {"op_multiply_cross", "[in]\ntype=input\ninput_shape=1:3:1\n"
        "[w]\ntype=reshape\ntarget_shape=1:1:3\ninput_layers=in\n"
        "[op]\ntype=multiply\ninput_layers=in,w\n", "mse"},
  {"op_negative", GC_OPS_IN "[op]\ntype=negative\n[fc]\n"
        "type=fully_connected\nunit=3\n", "mse"},
  {"op_sqrt", GC_OPS_IN "[e]\ntype=activation\nactivation=sigmoid\n"
        "[op]\ntype=sqrt\n", "mse"},
  {"op_sin", GC_OPS_IN "[op]\ntype=sin\n", "mse"},
  {"op_cos", GC_OPS_IN "[op]\ntype=cos\n", "mse"},
  {"op_tan", GC_OPS_IN "[e]\ntype=activation\nactivation=tanh\n"
        "[op]\ntype=tan\n", "mse"},
  {"op_pow_3", GC_OPS_IN "[op]\ntype=pow\nexponent=3\n", "mse"},
  {"op_pow_2", GC_OPS_IN "[op]\ntype=pow\nexponent=2\n", "mse"},
  {"op_pow_half", GC_OPS_IN "[e]\ntype=activation\nactivation=sigmoid\n"
        "[op]\ntype=pow\nexponent=-0.5\n", "mse"},
  /* the exponents pow computes without powf, and one it does not */
  {"op_pow_sqrt", GC_OPS_IN "[e]\ntype=activation\nactivation=sigmoid\n"
        "[op]\ntype=pow\nexponent=0.5\n", "mse"},
  {"op_pow_recip", GC_OPS_IN "[e]\ntype=activation\nactivation=sigmoid\n"
        "[op]\ntype=pow\nexponent=-1\n", "mse"},
  {"op_pow_recip_square", GC_OPS_IN "[e]\ntype=activation\n"
        "activation=sigmoid\n[op]\ntype=pow\nexponent=-2\n", "mse"},
  {"op_pow_general", GC_OPS_IN "[e]\ntype=activation\nactivation=sigmoid\n"
        "[op]\ntype=pow\nexponent=1.7\n", "mse"},
  {"op_identity", GC_OPS_IN "[op]\ntype=identity\n[fc]\n"
        "type=fully_connected\nunit=3\n", "mse"},
  {"op_reduce_mean_all", GC_OPS_IN "[op]\ntype=reduce_mean\n", "mse"},
  {"op_reduce_sum_all", GC_OPS_IN "[op]\ntype=reduce_sum\n", "mse"},
  {"op_reduce_mean_h", GC_OPS_IN "[op]\ntype=reduce_mean\naxis=2\n",
      "mse"},
  {"op_reduce_sum_w", GC_OPS_IN "[op]\ntype=reduce_sum\naxis=3\n", "mse"},
  {"op_reduce_sum_c", GC_OPS_IN "[op]\ntype=reduce_sum\naxis=1\n", "mse"},
  /* in place: sqrt after a sum of squares; negative and tan after sin */
  {"op_inplace_sqrt", GC_OPS_IN "[a]\ntype=pow\nexponent=2\n[r]\n"
        "type=reduce_sum\naxis=3\n[op]\ntype=sqrt\n[fc]\n"
        "type=fully_connected\nunit=3\n", "mse"},
  {"op_inplace_negative_tan", GC_OPS_IN "[a]\ntype=sin\n[n]\n"
        "type=negative\n[op]\ntype=tan\n[fc]\ntype=fully_connected\n"
        "unit=3\n", "mse"},
#undef GC_OPS_IN
#undef GC_OPS_CONV
#undef GC_OPS_GATE
  /* upsample2d, channel_shuffle, flatten's dimensions
   * (layer_resample.c, layer_view.c) */
  {"upsample_nearest", "[in]\ntype=input\ninput_shape=2:3:4\n[u]\n"
        "type=upsample2d\nupsample=nearest\nkernel_size=2,3\n", "mse"},
  {"upsample_nearest_square", "[in]\ntype=input\ninput_shape=2:3:3\n"
        "[u]\ntype=upsample2d\nupsample=nearest\nkernel_size=2\n[fc]\n"
        "type=fully_connected\nunit=3\n", "mse"},
  {"upsample_bilinear", "[in]\ntype=input\ninput_shape=2:3:4\n[u]\n"
        "type=upsample2d\nupsample=bilinear\nkernel_size=3,2\n", "mse"},
  {"upsample_bilinear_one_row", "[in]\ntype=input\ninput_shape=1:1:3\n"
        "[u]\ntype=upsample2d\nupsample=bilinear\nkernel_size=4,1\n"
        "[fc]\ntype=fully_connected\nunit=2\n", "mse"},
  {"channel_shuffle", "[in]\ntype=input\ninput_shape=6:2:3\n[s]\n"
        "type=channel_shuffle\nsplit_number=3\n[fc]\n"
        "type=fully_connected\nunit=3\n", "mse"},
  {"channel_shuffle_default", "[in]\ntype=input\ninput_shape=9:1:2\n"
        "[s]\ntype=channel_shuffle\n[fc]\ntype=fully_connected\n"
        "unit=2\n", "mse"},
  {"flatten_dimensions", "[in]\ntype=input\ninput_shape=2:3:4\n[f]\n"
        "type=flatten\nstart_dimension=1\nend_dimension=2\n[fc]\n"
        "type=fully_connected\nunit=3\n", "mse"},
  /* lstm and gru with dropout_rate (masks replayed by the seed) */
  {"lstm_dropout_sequences", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\n"
        "type=lstm\nunit=4\nreturn_sequences=true\ndropout_rate=0.4\n",
      "mse"},
  {"lstm_dropout_last", "[in]\ntype=input\ninput_shape=1:5:3\n[l]\n"
        "type=lstm\nunit=4\ndropout_rate=0.3\n", "mse"},
  {"gru_dropout_sequences", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\n"
        "type=gru\nunit=4\nreturn_sequences=true\ndropout_rate=0.4\n",
      "mse"},
  {"gru_dropout_before_last", "[in]\ntype=input\ninput_shape=1:5:3\n[l]\n"
        "type=gru\nunit=4\nreset_after=false\ndropout_rate=0.3\n", "mse"},
  /* pooling: ceil_mode, count_include_pad (the last window of a ceil
   * axis reaches past the padding: its divisor clips to the padding) */
  {"pool_avg_ceil_incl", "[in]\ntype=input\ninput_shape=2:7:7\n[p]\n"
        "type=pooling2d\npooling=average\npool_size=4,4\nstride=2,2\n"
        "padding=1\nceil_mode=true\ncount_include_pad=true\n", "mse"},
  {"pool_avg_ceil_excl", "[in]\ntype=input\ninput_shape=2:7:7\n[p]\n"
        "type=pooling2d\npooling=average\npool_size=4,4\nstride=2,2\n"
        "padding=1\nceil_mode=true\ncount_include_pad=false\n", "mse"},
  {"pool_avg_excl_asym", "[in]\ntype=input\ninput_shape=2:7:6\n[p]\n"
        "type=pooling2d\npooling=average\npool_size=3,3\nstride=2,2\n"
        "padding=1,0,2,1\n", "mse"},
  {"pool_max_ceil", "[in]\ntype=input\ninput_shape=2:6:6\n[p]\n"
        "type=pooling2d\npooling=max\npool_size=3,3\nstride=2,2\n"
        "padding=1\nceil_mode=true\n", "mse"},
  {"pool_max_2x2_ceil", "[in]\ntype=input\ninput_shape=2:7:7\n[p]\n"
        "type=pooling2d\npooling=max\npool_size=2,2\nstride=2,2\n"
        "ceil_mode=true\n", "mse"},
  /* tensor-manipulation layers (layer_weight.c, layer_matmul.c,
   * layer_cast.c, layer_gather.c, layer_slice.c, layer_permute.c) */
  {"matmul", "[in]\ntype=input\ninput_shape=2:3:4\n[p]\ntype=permute\n"
        "direction=1,3,2\ninput_layers=in\n[f]\ntype=fully_connected\n"
        "unit=5\n[m]\ntype=matmul\ninput_layers=in,f\n", "mse"},
  {"matmul_weight", "[in]\ntype=input\ninput_shape=2:3:4\n[w]\n"
        "type=weight\ndim=2:5:3\ninput_layers=in\n[m]\ntype=matmul\n"
        "input_layers=w,in\n", "mse"},
  {"matmul_self", "[in]\ntype=input\ninput_shape=1:3:3\n[m]\n"
        "type=matmul\ninput_layers=in,in\n[fc]\ntype=fully_connected\n"
        "unit=2\n", "mse"},
  {"permute_312", "[in]\ntype=input\ninput_shape=2:3:4\n[p]\n"
        "type=permute\ndirection=3,1,2\n[fc]\ntype=fully_connected\n"
        "unit=3\n", "mse"},
  {"permute_231", "[in]\ntype=input\ninput_shape=2:3:4\n[p]\n"
        "type=permute\ndirection=2,3,1\n", "mse"},
  {"permute_213", "[in]\ntype=input\ninput_shape=2:3:4\n[p]\n"
        "type=permute\ndirection=2,1,3\n[fc]\ntype=fully_connected\n"
        "unit=2\n", "mse"},
  {"slice_height", "[in]\ntype=input\ninput_shape=2:5:3\n[s]\n"
        "type=slice\naxis=2\nstart_index=2\nend_index=5\n[fc]\n"
        "type=fully_connected\nunit=3\n", "mse"},
  {"slice_channel", "[in]\ntype=input\ninput_shape=3:2:3\n[s]\n"
        "type=slice\naxis=1\nstart_index=3\nend_index=4\n", "mse"},
  {"slice_width", "[in]\ntype=input\ninput_shape=2:2:6\n[s]\n"
        "type=slice\naxis=3\nstart_index=1\nend_index=4\n[fc]\n"
        "type=fully_connected\nunit=2\n", "mse"},
  {"split_width", "[in]\ntype=input\ninput_shape=2:2:6\n[s]\n"
        "type=split\naxis=3\nsplit_number=2\n[a]\n"
        "type=fully_connected\nunit=3\ninput_layers=s(0)\n[b]\n"
        "type=fully_connected\nunit=3\ninput_layers=s(1)\n[sum]\n"
        "type=addition\ninput_layers=a,b\n", "mse"},
  {"split_output_shared", "[in]\ntype=input\ninput_shape=2:2:6\n[s]\n"
        "type=split\naxis=3\nsplit_number=3\n[a]\n"
        "type=fully_connected\nunit=3\ninput_layers=s(0)\n[b]\n"
        "type=fully_connected\nunit=3\ninput_layers=s(0)\n[c]\n"
        "type=fully_connected\nunit=3\ninput_layers=s(2)\n[d]\n"
        "type=fully_connected\nunit=3\ninput_layers=s(1)\n[sum]\n"
        "type=addition\ninput_layers=a,b,c,d\n", "mse"},
  {"split_channel_default", "[in]\ntype=input\ninput_shape=2:3:2\n[s]\n"
        "type=split\naxis=1\n[f]\ntype=fully_connected\n"
        "unit=2\ninput_layers=s(0)\n[cat]\ntype=concat\naxis=1\n"
        "input_layers=s(1),f,s(0)\n", "mse"},
  {"cast", "[in]\ntype=input\ninput_shape=1:2:3\n[c]\ntype=cast\n"
        "tensor_dtype=FP32\n[fc]\ntype=fully_connected\nunit=2\n", "mse"},
  {"gather_width", "[in]\ntype=input\ninput_shape=1:1:4\n[w]\n"
        "type=weight\ndim=2:3:5\ninput_layers=in\n[g]\ntype=gather\n"
        "axis=3\ninput_layers=w,in\n", "mse"},
  {"gather_height_full", "[in]\ntype=input\ninput_shape=2:4:3\n[w]\n"
        "type=weight\ndim=2:5:3\ninput_layers=in\n[g]\ntype=gather\n"
        "axis=2\ninput_layers=w,in\n[fc]\ntype=fully_connected\nunit=2\n",
      "mse"},
  /* the rest of nntrainer's set: kld (labels drawn positive), as [Model]
   * loss and as a layer; constant_derivative; clip (bounds away from the
   * drawn values by more than the step) */
  {"kld_model_loss", "[in]\ntype=input\ninput_shape=1:2:4\n[fc]\n"
        "type=fully_connected\nunit=5\nactivation=softmax\n", "kld"},
  {"kld_layer", "[in]\ntype=input\ninput_shape=1:1:6\n[fc]\n"
        "type=fully_connected\nunit=4\n[s]\ntype=activation\n"
        "activation=sigmoid\n[l]\ntype=kld\n", NULL},
  {"constant_derivative", "[in]\ntype=input\ninput_shape=1:1:6\n[fc]\n"
        "type=fully_connected\nunit=3\nactivation=tanh\n[l]\n"
        "type=constant_derivative\n", NULL},
  {"clip_layer", "[in]\ntype=input\ninput_shape=2:1:5\n[a]\n"
        "type=activation\nactivation=clip\nclip_min=-0.45\nclip_max=0.65\n"
        "[fc]\ntype=fully_connected\nunit=3\n", "mse"},
  {"clip_default", "[in]\ntype=input\ninput_shape=1:1:8\n[a]\n"
        "type=activation\nactivation=clip\n[fc]\ntype=fully_connected\n"
        "unit=3\n", "mse"},
  {"clip_after_fc", "[in]\ntype=input\ninput_shape=1:1:6\n[fc]\n"
        "type=fully_connected\nunit=6\nactivation=clip\nclip_min=-0.2\n"
        "clip_max=0.3\n[out]\ntype=fully_connected\nunit=3\n", "mse"},
  /* transposed convolution and the preprocessing layers */
  {"convt_valid", "[in]\ntype=input\ninput_shape=2:3:4\n[t]\n"
        "type=conv2dtranspose\nfilters=3\nkernel_size=3,2\n", "mse"},
  {"convt_stride2", "[in]\ntype=input\ninput_shape=3:3:3\n[t]\n"
        "type=conv2dtranspose\nfilters=2\nkernel_size=3,3\nstride=2,2\n",
      "mse"},
  {"convt_stride2_same", "[in]\ntype=input\ninput_shape=2:3:4\n[t]\n"
        "type=conv2dtranspose\nfilters=2\nkernel_size=4,3\nstride=2,2\n"
        "padding=same\n", "mse"},
  {"convt_pad_dilation", "[in]\ntype=input\ninput_shape=2:4:3\n[t]\n"
        "type=conv2dtranspose\nfilters=2\nkernel_size=3,3\nstride=2,3\n"
        "dilation=2,1\npadding=1,2,0,1\n", "mse"},
  {"convt_stride_over_kernel", "[in]\ntype=input\ninput_shape=2:2:3\n"
        "[t]\ntype=conv2dtranspose\nfilters=2\nkernel_size=2,1\n"
        "stride=3,2\ndisable_bias=true\n", "mse"},
  {"convt_frozen_decoder", "[in]\ntype=input\ninput_shape=2:6:6\n[c]\n"
        "type=conv2d\nfilters=3\nkernel_size=2,2\nstride=2,2\n[t]\n"
        "type=conv2dtranspose\nfilters=2\nkernel_size=2,2\nstride=2,2\n"
        "trainable=false\n", "mse"},
  {"preprocess_flip", "[in]\ntype=input\ninput_shape=2:3:5\n[f]\n"
        "type=preprocess_flip\n[fc]\ntype=fully_connected\nunit=3\n", "mse"},
  {"preprocess_flip_vertical", "[in]\ntype=input\ninput_shape=1:4:3\n"
        "[f]\ntype=preprocess_flip\nflip_direction=vertical\n[c]\n"
        "type=conv2d\nfilters=2\nkernel_size=2,2\n", "mse"},
  {"preprocess_translate", "[in]\ntype=input\ninput_shape=2:4:5\n[t]\n"
        "type=preprocess_translate\nrandom_translate=0.4\n[fc]\n"
        "type=fully_connected\nunit=3\n", "mse"},
  {"preprocess_translate_far", "[in]\ntype=input\ninput_shape=1:3:2\n"
        "[t]\ntype=preprocess_translate\nrandom_translate=-2.5\n[fc]\n"
        "type=fully_connected\nunit=2\n", "mse"},
  {"preprocess_l2norm", "[in]\ntype=input\ninput_shape=1:1:6\n[n]\n"
        "type=preprocess_l2norm\n[fc]\ntype=fully_connected\nunit=3\n",
      "mse"},
  {"preprocess_l2norm_image", "[in]\ntype=input\ninput_shape=2:3:2\n"
        "[n]\ntype=preprocess_l2norm\nepsilon=0.5\n", "mse"},
  /* attention: attention, multi_head_attention */
#define GC_ATTN_FC(NAME, FROM, UNIT) "[" NAME "]\ntype=fully_connected\n" \
  "unit=" UNIT "\ninput_layers=" FROM "\n"
  {"attention_key_is_value", "[in]\ntype=input\ninput_shape=1:4:3\n"
        GC_ATTN_FC ("q", "in", "3") GC_ATTN_FC ("v", "in", "3")
      "[a]\ntype=attention\ninput_layers=q,v\n", "mse"},
  {"attention_scaled_causal", "[in]\ntype=input\ninput_shape=2:4:3\n"
        GC_ATTN_FC ("q", "in", "3") GC_ATTN_FC ("v", "in", "3")
        GC_ATTN_FC ("k", "in", "3")
      "[a]\ntype=attention\ninput_layers=q,v,k\nscaled_dot_product=true\n"
        "causal_mask=true\n", "mse"},
  {"attention_cross", "[in]\ntype=input\ninput_shape=1:6:4\n"
        "[r]\ntype=reshape\ntarget_shape=1:3:8\ninput_layers=in\n"
        GC_ATTN_FC ("v", "r", "4") GC_ATTN_FC ("k", "r", "4")
      "[a]\ntype=attention\ninput_layers=in,v,k\n", "mse"},
  {"mha_self", "[in]\ntype=input\ninput_shape=1:4:6\n[a]\n"
        "type=multi_head_attention\nnum_heads=2\ninput_layers=in,in,in\n",
      "mse"},
  {"mha_projections", "[in]\ntype=input\ninput_shape=1:4:6\n"
        GC_ATTN_FC ("q", "in", "6") GC_ATTN_FC ("k", "in", "6")
      GC_ATTN_FC ("v", "in", "6") "[a]\ntype=multi_head_attention\n"
        "num_heads=3\ninput_layers=q,k,v\n", "mse"},
  {"mha_cross_dims", "[in]\ntype=input\ninput_shape=1:6:4\n"
        "[r]\ntype=reshape\ntarget_shape=1:3:8\ninput_layers=in\n"
        GC_ATTN_FC ("v", "r", "5") "[a]\ntype=multi_head_attention\n"
        "num_heads=2\nprojected_key_dim=3\nprojected_value_dim=2\n"
        "output_shape=5\ndisable_bias=true\ninput_layers=in,r,v\n", "mse"},
  {"mha_mask", "[in]\ntype=input\ninput_shape=1:4:4\n"
        GC_ATTN_FC ("m", "in", "8")
      "[mr]\ntype=reshape\ntarget_shape=2:4:4\ninput_layers=m\n"
        "[a]\ntype=multi_head_attention\nnum_heads=2\n"
        "input_layers=in,in,in,mr\n", "mse"},
  {"mha_dropout", "[in]\ntype=input\ninput_shape=1:5:4\n[a]\n"
        "type=multi_head_attention\nnum_heads=2\ndropout_rate=0.3\n"
        "input_layers=in,in,in\n", "mse"},
  {"mha_frozen", "[in]\ntype=input\ninput_shape=1:4:4\n[a]\n"
        "type=multi_head_attention\nnum_heads=2\ntrainable=false\n"
        "input_layers=in,in,in\n" GC_ATTN_FC ("o", "a", "3"), "mse"},
  /* the recurrent family: rnn */
  {"rnn_sequences", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\ntype=rnn\n"
        "unit=4\nreturn_sequences=true\n", "mse"},
  {"rnn_last", "[in]\ntype=input\ninput_shape=1:5:3\n[l]\ntype=rnn\n"
        "unit=3\n", "mse"},
  {"rnn_integrate_bias_relu", "[in]\ntype=input\ninput_shape=1:4:2\n[l]\n"
        "type=rnn\nunit=3\nintegrate_bias=true\nreturn_sequences=true\n"
        "hidden_state_activation=sigmoid\n", "mse"},
  {"rnn_no_bias_one_step", "[in]\ntype=input\ninput_shape=1:1:4\n[l]\n"
        "type=rnn\nunit=3\ndisable_bias=true\n", "mse"},
  {"rnn_dropout", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\ntype=rnn\n"
        "unit=4\nreturn_sequences=true\ndropout_rate=0.4\n", "mse"},
  {"rnn_frozen", "[in]\ntype=input\ninput_shape=1:4:3\n[a]\n"
        "type=fully_connected\nunit=3\n[l]\ntype=rnn\nunit=4\n"
        "trainable=false\n[fc]\ntype=fully_connected\nunit=2\n", "mse"},
  {"rnn_stack", "[in]\ntype=input\ninput_shape=1:4:3\n[a]\ntype=rnn\n"
        "unit=4\nreturn_sequences=true\n[b]\ntype=rnn\nunit=3\n", "mse"},
  {"lstm_bidirectional_sequences", "[in]\ntype=input\ninput_shape=1:4:3\n"
        "[l]\ntype=lstm\nunit=3\nreturn_sequences=true\n"
        "bidirectional=true\n", "mse"},
  {"lstm_bidirectional_last", "[in]\ntype=input\ninput_shape=1:5:3\n"
        "[l]\ntype=lstm\nunit=3\nbidirectional=true\n", "mse"},
  {"lstm_bidirectional_integrate_bias", "[in]\ntype=input\n"
        "input_shape=1:4:2\n[l]\ntype=lstm\nunit=3\nintegrate_bias=true\n"
        "bidirectional=true\nreturn_sequences=true\n[b]\ntype=lstm\n"
        "unit=2\nbidirectional=true\ndisable_bias=true\n", "mse"},
  {"lstm_bidirectional_frozen", "[in]\ntype=input\ninput_shape=1:4:3\n"
        "[a]\ntype=fully_connected\nunit=3\n[l]\ntype=lstm\nunit=4\n"
        "bidirectional=true\ntrainable=false\n[fc]\n"
        "type=fully_connected\nunit=2\n", "mse"},
  {"rnncell", "[in]\ntype=input\ninput_shape=1:1:4\n[h]\n"
        "type=fully_connected\nunit=3\ninput_layers=in\nactivation=tanh\n"
        "[l]\ntype=rnncell\nunit=3\ninput_layers=in,h\n", "mse"},
  {"rnncell_chain", "[in]\ntype=input\ninput_shape=1:1:4\n[h]\n"
        "type=fully_connected\nunit=3\ninput_layers=in\n"
        "[l]\ntype=rnncell\nunit=3\nintegrate_bias=true\n"
        "hidden_state_activation=sigmoid\ninput_layers=in,h\n[l2]\n"
        "type=rnncell\nunit=3\ndisable_bias=true\ndropout_rate=0.3\n"
        "input_layers=in,l\n", "mse"},
  {"lstmcell", "[in]\ntype=input\ninput_shape=1:1:4\n[h]\n"
        "type=fully_connected\nunit=3\ninput_layers=in\nactivation=tanh\n"
        "[c]\ntype=fully_connected\nunit=3\ninput_layers=in\n"
        "[l]\ntype=lstmcell\nunit=3\ninput_layers=in,h,c\n[sum]\n"
        "type=addition\ninput_layers=l(0),l(1)\n", "mse"},
  {"lstmcell_unread_cell", "[in]\ntype=input\ninput_shape=1:1:4\n[h]\n"
        "type=fully_connected\nunit=3\ninput_layers=in\n"
        "[c]\ntype=fully_connected\nunit=3\ninput_layers=in\n"
        "[l]\ntype=lstmcell\nunit=3\nintegrate_bias=true\n"
        "input_layers=in,h,c\n[l2]\ntype=lstmcell\nunit=3\n"
        "dropout_rate=0.3\ninput_layers=in,l(0),l(1)\n", "mse"},
  {"lstmcell_cell_only", "[in]\ntype=input\ninput_shape=1:1:4\n[h]\n"
        "type=fully_connected\nunit=3\ninput_layers=in\n"
        "[c]\ntype=fully_connected\nunit=3\ninput_layers=in\n"
        "[l]\ntype=lstmcell\nunit=3\ndisable_bias=true\n"
        "input_layers=in,h,c\n[fc]\ntype=fully_connected\nunit=3\n"
        "input_layers=l(1)\n[sum]\ntype=addition\n"
        "input_layers=fc,l(0)\n", "mse"},
  {"time_dist_fc", "[in]\ntype=input\ninput_shape=1:4:3\n[l]\n"
        "type=lstm\nunit=3\nreturn_sequences=true\n[fc]\n"
        "type=fully_connected\nunit=2\ndistribute=true\n[a]\n"
        "type=activation\nactivation=tanh\ndistribute=true\n", "mse"},
  {"lstm_bidirectional_one_step", "[in]\ntype=input\ninput_shape=1:1:3\n"
        "[l]\ntype=lstm\nunit=2\nbidirectional=true\n", "mse"},
  /* the recurrent family's last cells: grucell, zoneout_lstmcell (rates
   * 0, masks drawn and replayed by the seed, test's masks: the random
   * weights) */
  {"grucell", "[in]\ntype=input\ninput_shape=1:1:4\n[h]\ntype=fully_connected\n"
        "unit=3\ninput_layers=in\nactivation=tanh\n"
        "[l]\ntype=grucell\nunit=3\ninput_layers=in,h\n", "mse"},
  {"grucell_reset_before",
      "[in]\ntype=input\ninput_shape=1:1:4\n[h]\ntype=fully_connected\n"
        "unit=3\ninput_layers=in\nactivation=tanh\n"
        "[l]\ntype=grucell\nunit=3\nreset_after=false\n"
        "integrate_bias=true\ninput_layers=in,h\n", "mse"},
  {"grucell_chain",
      "[in]\ntype=input\ninput_shape=1:1:4\n[h]\ntype=fully_connected\n"
        "unit=3\ninput_layers=in\nactivation=tanh\n"
        "[l]\ntype=grucell\nunit=3\ndisable_bias=true\n"
        "hidden_state_activation=sigmoid\ninput_layers=in,h\n[l2]\n"
        "type=grucell\nunit=3\nreset_after=false\ndropout_rate=0.3\n"
        "input_layers=in,l\n", "mse"},
  {"grucell_after_integrate",
      "[in]\ntype=input\ninput_shape=1:1:4\n[h]\ntype=fully_connected\n"
        "unit=3\ninput_layers=in\nactivation=tanh\n"
        "[l]\ntype=grucell\nunit=3\nintegrate_bias=true\n"
        "dropout_rate=0.4\ninput_layers=in,h\n", "mse"},
  {"zoneout_lstmcell",
      "[in]\ntype=input\ninput_shape=1:1:4\n[h]\ntype=fully_connected\n"
        "unit=3\ninput_layers=in\nactivation=tanh\n"
        "[c]\ntype=fully_connected\nunit=3\ninput_layers=in\n"
        "[l]\ntype=zoneout_lstmcell\nunit=3\nmax_timestep=3\ntimestep=1\n"
        "input_layers=in,h,c\n[sum]\ntype=addition\n"
        "input_layers=l(0),l(1)\n", "mse"},
  {"zoneout_lstmcell_drawn",
      "[in]\ntype=input\ninput_shape=1:1:4\n[h]\ntype=fully_connected\n"
        "unit=3\ninput_layers=in\nactivation=tanh\n"
        "[c]\ntype=fully_connected\nunit=3\ninput_layers=in\n"
        "[l]\ntype=zoneout_lstmcell\nunit=3\nmax_timestep=3\ntimestep=1\n"
        "hidden_state_zoneout_rate=0.4\ncell_state_zoneout_rate=0.6\n"
        "input_layers=in,h,c\n[sum]\ntype=addition\n"
        "input_layers=l(0),l(1)\n", "mse"},
  {"zoneout_lstmcell_test",
      "[in]\ntype=input\ninput_shape=1:1:4\n[h]\ntype=fully_connected\n"
        "unit=3\ninput_layers=in\nactivation=tanh\n"
        "[c]\ntype=fully_connected\nunit=3\ninput_layers=in\n"
        "[l]\ntype=zoneout_lstmcell\nunit=3\nmax_timestep=3\ntimestep=1\n"
        "test=true\nintegrate_bias=true\ninput_layers=in,h,c\n[sum]\n"
        "type=addition\ninput_layers=l(0),l(1)\n", "mse"},
  {"zoneout_lstmcell_chain",
      "[in]\ntype=input\ninput_shape=1:1:4\n[h]\ntype=fully_connected\n"
        "unit=3\ninput_layers=in\nactivation=tanh\n"
        "[c]\ntype=fully_connected\nunit=3\ninput_layers=in\n"
        "[l]\ntype=zoneout_lstmcell\nunit=3\nmax_timestep=3\ntimestep=1\n"
        "hidden_state_zoneout_rate=0.5\ndisable_bias=true\n"
        "input_layers=in,h,c\n[l2]\ntype=zoneout_lstmcell\nunit=3\n"
        "max_timestep=2\ntimestep=1\ncell_state_zoneout_rate=0.5\n"
        "input_layers=in,l(0),l(1)\n", "mse"},
  /* multi_head_attention's attention weights (return_attention_weight) */
  {"mha_weights_after_mean", "[in]\ntype=input\ninput_shape=1:4:6\n[a]\n"
        "type=multi_head_attention\nnum_heads=2\ndropout_rate=0.3\n"
        "return_attention_weight=after\ninput_layers=in,in,in\n"
        GC_ATTN_FC ("o", "a(0)", "3") GC_ATTN_FC ("w", "a(1)", "3")
      "[sum]\ntype=addition\ninput_layers=o,w\n", "mse"},
  {"mha_weights_before_heads", "[in]\ntype=input\ninput_shape=1:4:6\n"
        "[a]\ntype=multi_head_attention\nnum_heads=2\ndropout_rate=0.3\n"
        "return_attention_weight=before\naverage_attention_weight=false\n"
        "input_layers=in,in,in\n[r]\ntype=reshape\ntarget_shape=1:4:8\n"
        "input_layers=a(1)\n" GC_ATTN_FC ("o", "a(0)", "3")
        GC_ATTN_FC ("w", "r", "3")
      "[sum]\ntype=addition\ninput_layers=o,w\n", "mse"},
  {"mha_weights_after_heads_mask", "[in]\ntype=input\ninput_shape=1:4:4\n"
        GC_ATTN_FC ("m", "in", "8")
        "[mr]\ntype=reshape\ntarget_shape=2:4:4\ninput_layers=m\n"
        "[a]\ntype=multi_head_attention\nnum_heads=2\n"
        "return_attention_weight=after\naverage_attention_weight=false\n"
        "input_layers=in,in,in,mr\n[r]\ntype=reshape\n"
        "target_shape=1:4:8\ninput_layers=a(1)\n"
        GC_ATTN_FC ("o", "a(0)", "3") GC_ATTN_FC ("w", "r", "3")
      "[sum]\ntype=addition\ninput_layers=o,w\n", "mse"},
  {"mha_weights_unread", "[in]\ntype=input\ninput_shape=1:4:4\n[a]\n"
        "type=multi_head_attention\nnum_heads=2\n"
        "return_attention_weight=before\ninput_layers=in,in,in\n"
        GC_ATTN_FC ("o", "a(0)", "3"), "mse"},
  /* conv2dtranspose's groups */
  {"convt_groups2", "[in]\ntype=input\ninput_shape=4:3:3\n[t]\n"
        "type=conv2dtranspose\nfilters=6\nkernel_size=3,2\nstride=2,2\n"
        "groups=2\n", "mse"},
  {"convt_depthwise_same", "[in]\ntype=input\ninput_shape=3:3:4\n[t]\n"
        "type=conv2dtranspose\nfilters=3\nkernel_size=3,3\nstride=2,2\n"
        "padding=same\ngroups=3\n", "mse"},
  {"convt_depthwise_multiplier", "[in]\ntype=input\ninput_shape=2:3:3\n"
        "[t]\ntype=conv2dtranspose\nfilters=4\nkernel_size=2,2\n"
        "dilation=2,2\ngroups=2\ndisable_bias=true\n", "mse"},
  /* mixture-of-logistics attention */
#define GC_MOL_IN(T, TD) GC_ATTN_FC ("q", "in", "4") GC_ATTN_FC ("vf", "in", \
      #TD) "[v]\ntype=reshape\ntarget_shape=1:" #T ":4\n" \
  "input_layers=vf\n" GC_ATTN_FC ("s", "in", "2")
  {"mol_attention", "[in]\ntype=input\ninput_shape=1:1:5\n" GC_MOL_IN (3, 12)
        "[m]\ntype=mol_attention\nunit=3\nmol_k=2\ninput_layers=q,v,s\n"
        GC_ATTN_FC ("o", "m(0)", "3") GC_ATTN_FC ("w", "m(1)", "3")
      "[sum]\ntype=addition\ninput_layers=o,w\n", "mse"},
  {"mol_attention_state_unread", "[in]\ntype=input\ninput_shape=1:1:5\n"
        GC_MOL_IN (4, 16) "[m]\ntype=mol_attention\nunit=4\nmol_k=2\n"
        "input_layers=q,v,s\n", "mse"},
  {"mol_attention_frozen", "[in]\ntype=input\ninput_shape=1:1:5\n"
        GC_MOL_IN (3, 12) "[m]\ntype=mol_attention\nunit=3\nmol_k=2\n"
        "trainable=false\ninput_layers=q,v,s\n"
        GC_ATTN_FC ("o", "m(0)", "3") GC_ATTN_FC ("w", "m(1)", "3")
      "[sum]\ntype=addition\ninput_layers=o,w\n", "mse"},
  {"mol_attention_length", "[in]\ntype=input\ninput_shape=1:1:4\n"
        GC_MOL_IN (3, 12) "[len]\ntype=slice\naxis=3\nstart_index=1\n"
        "end_index=2\ninput_layers=in\n[m]\ntype=mol_attention\nunit=3\n"
        "mol_k=2\ninput_layers=q,v,s,len\n"
        GC_ATTN_FC ("o", "m(0)", "3") GC_ATTN_FC ("w", "m(1)", "3")
      "[sum]\ntype=addition\ninput_layers=o,w\n", "mse"},
  /* LoRA adapters (layers/fc_lora.c): only loraA and loraB train */
  {"lora_fc", "[in]\ntype=input\ninput_shape=1:1:6\n[a]\n"
        "type=fully_connected\nunit=5\nlora_rank=2\nlora_alpha=4\n"
        "activation=tanh\n[b]\ntype=fully_connected\nunit=3\nlora_rank=1\n",
      "mse"},
  {"lora_fc_4d", "[in]\ntype=input\ninput_shape=2:3:5\n[a]\n"
        "type=fully_connected\nunit=4\nlora_rank=3\nlora_alpha=2\n"
        "disable_bias=true\n", "mse"},
  {"lora_fc_frozen", "[in]\ntype=input\ninput_shape=1:1:5\n[a]\n"
        "type=fully_connected\nunit=4\nlora_rank=2\ntrainable=false\n"
        "[b]\ntype=fully_connected\nunit=3\n", "mse"},
  /* LoRA beyond fully_connected (mha_lora.c, conv_lora.c): the four
   * projections' adapters, a 1x1 conv2d's; trained, and frozen with a
   * trainable layer before (the input derivative through them) */
  {"lora_mha", "[in]\ntype=input\ninput_shape=1:4:6\n"
        GC_ATTN_FC ("q", "in", "6") "[a]\ntype=multi_head_attention\n"
        "num_heads=2\nlora_rank=2\nlora_alpha=3\ninput_layers=q,in,in\n",
      "mse"},
  {"lora_mha_cross_dims", "[in]\ntype=input\ninput_shape=1:6:4\n"
        "[r]\ntype=reshape\ntarget_shape=1:3:8\ninput_layers=in\n"
        GC_ATTN_FC ("v", "r", "5") "[a]\ntype=multi_head_attention\n"
        "num_heads=2\nprojected_key_dim=3\nprojected_value_dim=2\n"
        "output_shape=5\ndisable_bias=true\nlora_rank=2\n"
        "input_layers=in,r,v\n", "mse"},
  {"lora_mha_frozen", "[in]\ntype=input\ninput_shape=1:4:4\n"
        GC_ATTN_FC ("q", "in", "4") "[a]\ntype=multi_head_attention\n"
        "num_heads=2\nlora_rank=1\ntrainable=false\ninput_layers=q,q,q\n"
        GC_ATTN_FC ("o", "a", "3"), "mse"},
  {"lora_conv_1x1", "[in]\ntype=input\ninput_shape=3:3:4\n[c]\n"
        "type=conv2d\nfilters=4\nkernel_size=1,1\nlora_rank=2\n"
        "lora_alpha=4\nactivation=tanh\n[d]\ntype=conv2d\nfilters=2\n"
        "kernel_size=1,1\nlora_rank=1\n", "mse"},
  {"lora_conv_1x1_frozen", "[in]\ntype=input\ninput_shape=2:3:3\n[c0]\n"
        "type=conv2d\nfilters=3\nkernel_size=2,2\npadding=same\n[c]\n"
        "type=conv2d\nfilters=4\nkernel_size=1,1\nlora_rank=2\n"
        "disable_bias=true\ntrainable=false\n", "mse"},
};

/* Cases whose input holds indices k + 0.5, k in [0, range) (an
 * embedding's): a step of 1e-2 keeps each index, whose derivative is 0. */
static const struct
{
  const char *name;
  int range;
} gc_index_inputs[] = {
  {"embedding", 7}, {"embedding_transformer", 5},
  /* tensor-manipulation layers */
  {"gather_width", 5}, {"gather_height_full", 5},
  /* mixture-of-logistics attention: lengths 0 to 3 of 3 steps */
  {"mol_attention_length", 4},
};

static int
gc_index_range (const char *name)
{
  for (size_t i = 0; i < sizeof gc_index_inputs / sizeof gc_index_inputs[0];
      i++)
    if (!strcmp (name, gc_index_inputs[i].name))
      return gc_index_inputs[i].range;
  return 0;
}

static uint64_t gc_state = 12345;

static float
gc_rand (void)
{
  gc_state = gc_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float) ((gc_state >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

static double
gc_loss (tt_model * m, const float *x, const float *t)
{
  const void *inputs[1] = { x };
  double loss = 0;
  tt_error err;
  tt_rng_seed (&m->rng, 99);
  if (tt_model_gradients (m, GC_BATCH, inputs, NULL, t, false, &loss, &err))
    printf ("forward failed: %s\n", err.message);
  return loss;
}

static void
gc_compare (const char *what, const char *case_name, double fd, double an,
    int *bad)
{
  double tol = 2e-2 * fmax (fabs (fd), fabs (an)) + 5e-4;
  if (fabs (fd - an) > tol) {
    if (*bad < 3)
      printf ("  %s %s: finite difference %.6g, analytic %.6g\n", case_name,
          what, fd, an);
    (*bad)++;
  }
}

static void
gc_run (const gc_case * c)
{
  char ini[4096];
  tt_error err;
  snprintf (ini, sizeof ini,
      "[Model]\ntype=NeuralNetwork\nbatch_size=%d\n%s%s\n"
      "[Optimizer]\ntype=sgd\nlearning_rate=0.1\n%s", GC_BATCH,
      c->loss ? "loss=" : "", c->loss ? c->loss : "", c->ini);
  char fname[128];
  snprintf (fname, sizeof fname, "%s.ini", c->name);
  const char *path = tt_test_write_text (fname, ini);
  tt_model *m = tt_model_load_ini (path, &err);
  if (c->loss && !strcmp (c->loss, "bad")) {
    /* explicit reference to an implicit multiout is not allowed: the
     * name does not exist until the graph is built */
    CHECK (m == NULL || tt_model_compile (m, &err) != TT_OK,
        "%s: expected a failure", c->name);
    tt_model_free (m);
    return;
  }
  CHECK (m != NULL, "%s: load failed: %s", c->name, err.message);
  if (!m)
    return;
  tt_model_set_seed (m, 7);
  /* each case draws its own data (seeded by its name), so adding a case
   * leaves the others' unchanged */
  gc_state = 12345;
  for (const char *p = c->name; *p; p++)
    gc_state = (gc_state ^ (uint8_t) * p) * 1099511628211ULL;
  /* gradients are read after the whole backward pass: give every tensor
   * its own memory (the planned pool reuses a gradient's bytes once its
   * update is applied) */
  tt_status st = tt_model_set_plan_mode (m, TT_PLAN_NAIVE, &err);
  if (!st)
    st = tt_model_request_input_derivative (m, &err);
  if (!st)
    st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s: compile failed: %s", c->name, err.message);
  if (st) {
    tt_model_free (m);
    return;
  }
  /* random weights everywhere, so zeros and ones do not hide errors */
  for (uint32_t i = 0; i < m->n_layers; i++)
    for (uint32_t k = 0; k < m->layers[i].n_weights; k++) {
      tt_weight *w = &m->layers[i].weights[k];
      float *v = tt_data (m, w->value);
      for (size_t j = 0; j < w->count; j++)
        v[j] = gc_rand () * 0.8f + (k == 1 && !strncmp (w->suffix,
                "moving_var", 10) ? 1.5f : 0.0f);
    }

  tt_shape in, out;
  tt_model_input_shape (m, 0, &in);
  out = tt_model_label_shape (m);
  size_t nx = GC_BATCH * (size_t) in.channel * in.height * in.width;
  size_t nt = GC_BATCH * (size_t) out.channel * out.height * out.width;
  float *x = malloc (nx * sizeof *x), *t = malloc (nt * sizeof *t);
  /* |x| >= 0.1, ten times the step: a layer with a kink at 0 (relu,
   * leaky_relu, elu) reading the input has a derivative there */
  const int index_range = gc_index_range (c->name);
  for (size_t i = 0; i < nx; i++) {
    const float r = gc_rand ();
    x[i] = r < 0 ? r * 1.9f - 0.1f : r * 1.9f + 0.1f;
    if (index_range > 0)
      x[i] = floorf ((r + 1.0f) * 0.5f * (float) index_range) + 0.5f;
  }
  /* cross losses fuse softmax or sigmoid: labels are probabilities */
  bool cross = m->layers[m->loss_layer].ops->fused_activation != TT_ACT_NONE;
  /* kld's labels are probabilities too: positive (not normalized: the
   * loss and its derivative do not need it) */
  const bool positive = !strcmp (m->layers[m->loss_layer].ops->type, "kld");
  for (size_t i = 0; i < nt; i++)
    t[i] = cross ? 0.0f : positive ? 0.05f + fabsf (gc_rand ()) : gc_rand ();
  if (cross) {
    size_t k = nt / GC_BATCH;
    for (int b = 0; b < GC_BATCH; b++)
      t[b * k + (size_t) b % k] = 1.0f;
  }

  /* analytic */
  const void *inputs[1] = { x };
  double loss;
  tt_rng_seed (&m->rng, 99);
  st = tt_model_gradients (m, GC_BATCH, inputs, NULL, t, true, &loss, &err);
  CHECK (st == TT_OK && isfinite (loss), "%s: gradients failed", c->name);
  int in_layer = m->input_layers[0];
  const float *dx = tt_data (m, m->layers[in_layer].out_deriv[0]);
  float *dx_copy = malloc (nx * sizeof *dx_copy);
  memcpy (dx_copy, dx, nx * sizeof *dx);

  /* gradients are overwritten by later forward passes: copy them */
  size_t ngrad = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    for (uint32_t k = 0; k < m->layers[i].n_weights; k++)
      if (m->layers[i].weights[k].grad >= 0)
        ngrad += m->layers[i].weights[k].count;
  float *grads = malloc ((ngrad + 1) * sizeof *grads), *gp = grads;
  for (uint32_t i = 0; i < m->n_layers; i++)
    for (uint32_t k = 0; k < m->layers[i].n_weights; k++) {
      tt_weight *w = &m->layers[i].weights[k];
      if (w->grad >= 0) {
        memcpy (gp, tt_data (m, w->grad), w->count * sizeof *gp);
        gp += w->count;
      }
    }

  int bad = 0;
  const float h = 1e-2f;
  size_t step = nx > GC_SAMPLES ? nx / GC_SAMPLES : 1;
  for (size_t i = 0; i < nx; i += step) {
    float keep = x[i];
    x[i] = keep + h;
    double lp = gc_loss (m, x, t);
    x[i] = keep - h;
    double lm = gc_loss (m, x, t);
    x[i] = keep;
    gc_compare ("d loss / d input", c->name, (lp - lm) / (2 * h), dx_copy[i],
        &bad);
  }
  CHECK (bad == 0, "%s: %d input derivatives disagree", c->name, bad);

  gp = grads;
  int checked_weights = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    for (uint32_t k = 0; k < m->layers[i].n_weights; k++) {
      tt_weight *w = &m->layers[i].weights[k];
      if (w->grad < 0)
        continue;
      float *v = tt_data (m, w->value);
      const float hw = 5e-3f;
      bad = 0;
      size_t wstep = w->count > GC_SAMPLES ? w->count / GC_SAMPLES : 1;
      for (size_t j = 0; j < w->count; j += wstep) {
        float keep = v[j];
        v[j] = keep + hw;
        double lp = gc_loss (m, x, t);
        v[j] = keep - hw;
        double lm = gc_loss (m, x, t);
        v[j] = keep;
        char what[160];
        snprintf (what, sizeof what, "d loss / d %s:%s[%zu]",
            m->layers[i].name, w->suffix, j);
        gc_compare (what, c->name, (lp - lm) / (2 * hw), gp[j], &bad);
      }
      CHECK (bad == 0, "%s: %d gradients of %s:%s disagree", c->name, bad,
          m->layers[i].name, w->suffix);
      gp += w->count;
      checked_weights++;
    }
  /* a frozen layer must have no gradient tensor at all */
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (!m->layers[i].trainable)
      for (uint32_t k = 0; k < m->layers[i].n_weights; k++)
        CHECK (m->layers[i].weights[k].grad < 0,
            "%s: frozen layer %s has a gradient", c->name, m->layers[i].name);
  printf ("ok %s (loss %.5f, %d weight tensors)\n", c->name, loss,
      checked_weights);
  free (x);
  free (t);
  free (dx_copy);
  free (grads);
  tt_model_free (m);
}

/* The finite differences check a layer's backward against its own
 * forward; this checks the gru's forward against nntrainer's formulas
 * written out per value in double (gru.cpp: gates z, r, g along 3U; g =
 * act(x W_ig + b_ig + r * (h W_hg + b_hg)) with reset_after, act(x W_ig +
 * b_ig + (r * h) W_hg + b_hg) without; h = z * h_prev + (1 - z) * g), for
 * reset_after both ways, with two biases, one (integrate_bias) and none.
 * The golden test covers reset_after = true against PyTorch; the form
 * without it has no PyTorch counterpart. */
static void
gru_forward_reference (bool reset_after, int biases)
{
  enum
  { T = 5, F = 3, U = 4, G = 3 * U };
  char ini[1024], name[64];
  tt_error err;
  snprintf (ini, sizeof ini,
      "[Model]\ntype=NeuralNetwork\nbatch_size=%d\nloss=mse\n"
      "[Optimizer]\ntype=sgd\nlearning_rate=0.1\n"
      "[in]\ntype=input\ninput_shape=1:%d:%d\n[l]\ntype=gru\nunit=%d\n"
      "return_sequences=true\nreset_after=%s\n%s", GC_BATCH, T, F, U,
      reset_after ? "true" : "false", biases == 0 ? "disable_bias=true\n" :
      biases == 1 ? "integrate_bias=true\n" : "");
  snprintf (name, sizeof name, "gru_ref_%d_%d", reset_after, biases);
  char fname[96];
  snprintf (fname, sizeof fname, "%s.ini", name);
  tt_model *m = tt_model_load_ini (tt_test_write_text (fname, ini), &err);
  tt_status st = m ? tt_model_set_plan_mode (m, TT_PLAN_NAIVE, &err) : 1;
  if (!st)
    st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s: %s", name, err.message);
  if (st) {
    tt_model_free (m);
    return;
  }
  const tt_layer *l = &m->layers[tt_model_find_layer (m, "l")];
  CHECK (l->n_weights == (uint32_t) (2 + biases), "%s: %u weights", name,
      l->n_weights);
  gc_state = 777 + 10 * reset_after + biases;
  const float *w[4] = { NULL };
  for (uint32_t k = 0; k < l->n_weights; k++) {
    float *v = tt_data (m, l->weights[k].value);
    for (size_t j = 0; j < l->weights[k].count; j++)
      v[j] = gc_rand () * 0.8f;
    w[k] = v;
  }
  /* integrate_bias: bias_h plays bias_ih, bias_hh absent */
  const float *w_ih = w[0], *w_hh = w[1], *b_ih = w[2], *b_hh = w[3];
  float x[GC_BATCH * T * F], t[GC_BATCH * T * U];
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
    x[i] = gc_rand () * 2.0f;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    t[i] = gc_rand ();
  const void *inputs[1] = { x };
  double loss;
  st = tt_model_gradients (m, GC_BATCH, inputs, NULL, t, false, &loss, &err);
  CHECK (st == TT_OK, "%s: forward failed: %s", name, err.message);
  const float *y = tt_data (m, l->out[0]);
  double worst = 0;
  for (int b = 0; b < GC_BATCH; b++) {
    double h[U] = { 0 };
    for (int s = 0; s < T; s++) {
      const float *xs = x + ((size_t) b * T + s) * F;
      double a[G], hh[G], rh[U];
      for (int j = 0; j < G; j++) {
        a[j] = b_ih ? b_ih[j] : 0.0;
        for (int f = 0; f < F; f++)
          a[j] += (double) xs[f] * w_ih[f * G + j];
        hh[j] = b_hh ? b_hh[j] : 0.0;
        for (int k = 0; k < U; k++)
          hh[j] += h[k] * w_hh[k * G + j];
      }
      double z[U], r[U], g[U];
      for (int j = 0; j < U; j++) {
        z[j] = 1.0 / (1.0 + exp (-(a[j] + hh[j])));
        r[j] = 1.0 / (1.0 + exp (-(a[U + j] + hh[U + j])));
        rh[j] = r[j] * h[j];
      }
      for (int j = 0; j < U; j++) {
        double pre = a[2 * U + j];
        if (reset_after) {
          pre += r[j] * hh[2 * U + j];
        } else {
          pre += b_hh ? b_hh[2 * U + j] : 0.0;
          for (int k = 0; k < U; k++)
            pre += rh[k] * w_hh[k * G + 2 * U + j];
        }
        g[j] = tanh (pre);
      }
      for (int j = 0; j < U; j++) {
        h[j] = z[j] * h[j] + (1.0 - z[j]) * g[j];
        const double d = fabs (h[j] - y[((size_t) b * T + s) * U + j]);
        worst = d > worst ? d : worst;
      }
    }
  }
  CHECK (worst < 1e-5, "%s: output off nntrainer's formulas by %.3g", name,
      worst);
  printf ("ok %s (forward against the formulas: worst |diff| %.2g)\n", name,
      worst);
  tt_model_free (m);
}

/* Every registered layer type states what it is to the code around it:
 * a role, the inputs it reads, and what its role implies. A new type that
 * forgets its traits fails here. */
static void
test_layer_traits (void)
{
  uint32_t n = 0;
  const tt_layer_ops *ops;
  for (uint32_t i = 0; (ops = tt_layer_ops_at (i)); i++, n++) {
    CHECK (ops->type && ops->infer && ops->forward,
        "registered type %u: no type name, infer or forward", i);
    if (!ops->type)
      continue;
    const char *t = ops->type;
    CHECK (tt_layer_ops_find (t) == ops, "%s: its name finds another type", t);
    CHECK (ops->role != TT_ROLE_UNSET, "%s: no role", t);
    CHECK ((ops->max_inputs == 0) == (ops->role == TT_ROLE_INPUT),
        "%s: max_inputs %u for role %d (0 for an input only)", t,
        ops->max_inputs, (int) ops->role);
    CHECK (ops->max_inputs <= 1 || ops->max_inputs == TT_MAX_IO,
        "%s: max_inputs %u (0, 1 or TT_MAX_IO)", t, ops->max_inputs);
    CHECK (ops->role == TT_ROLE_LOSS || ops->fused_activation == TT_ACT_NONE,
        "%s: fuses an activation but is no loss", t);
    CHECK (ops->role != TT_ROLE_LOSS || ops->max_inputs == 1,
        "%s: a loss reads one input", t);
    CHECK (ops->role != TT_ROLE_MULTIOUT || ops->output_is_view,
        "%s: a multiout's outputs are views of its input", t);
    CHECK (!ops->has_weights || ops->role == TT_ROLE_COMPUTE,
        "%s: has weights but role %d", t, (int) ops->role);
    CHECK (ops->has_weights || !(ops->fuses_relu || ops->copies_derivative
            || ops->derivative_product || ops->runs_loss_tail),
        "%s: a thread fusion's dense side, without weights", t);
    CHECK (!ops->runs_loss_tail || ops->copies_derivative,
        "%s: runs the loss tail without its derivative copies", t);
    CHECK (!ops->fits_loss_tail || ops->role == TT_ROLE_LOSS,
        "%s: fits the loss tail but is no loss", t);
  }
  CHECK (n == TT_LAYER_TYPES, "%u types registered, TT_LAYER_TYPES is %d",
      n, TT_LAYER_TYPES);
  printf ("ok layer traits (%u types)\n", n);
}

static void
test_gru_reference (void)
{
  for (int biases = 0; biases <= 2; biases++) {
    gru_forward_reference (true, biases);
    gru_forward_reference (false, biases);
  }
}

/* pooling = average over a window equal to the input (with either
 * count_include_pad, and ceil_mode) is global_average: the same outputs,
 * loss and input derivative, bit for bit. */
static void
pool_window_run (const char *name, const char *pool, float *y, float *dx,
    double *loss)
{
  char ini[1024];
  tt_error err;
  snprintf (ini, sizeof ini, "[Model]\ntype=NeuralNetwork\nbatch_size=%d\n"
      "loss=mse\n[Optimizer]\ntype=sgd\nlearning_rate=0.1\n[in]\n"
      "type=input\ninput_shape=3:5:7\n[p]\ntype=pooling2d\n%s", GC_BATCH, pool);
  const char *path = tt_test_write_text (name, ini);
  tt_model *m = tt_model_load_ini (path, &err);
  tt_status st = m ? tt_model_set_plan_mode (m, TT_PLAN_NAIVE, &err) :
      TT_ERR_INVALID;
  if (!st)
    st = tt_model_request_input_derivative (m, &err);
  if (!st)
    st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s: %s", name, err.message);
  if (st) {
    tt_model_free (m);
    return;
  }
  float x[GC_BATCH * 3 * 5 * 7], t[GC_BATCH * 3];
  gc_state = 4242;
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
    x[i] = gc_rand ();
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    t[i] = gc_rand ();
  const void *inputs[1] = { x };
  st = tt_model_gradients (m, GC_BATCH, inputs, NULL, t, true, loss, &err);
  CHECK (st == TT_OK, "%s: %s", name, err.message);
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (!strcmp (m->layers[i].section, "p"))
      memcpy (y, tt_data (m, m->layers[i].out[0]), sizeof t);
  memcpy (dx, tt_data (m, m->layers[m->input_layers[0]].out_deriv[0]),
      sizeof x);
  tt_model_free (m);
}

static void
test_pool_window_is_global (void)
{
  static const char *const windows[] = {
    "pooling=average\npool_size=5,7\n",
    "pooling=average\npool_size=5,7\nstride=2,3\ncount_include_pad=true\n",
    "pooling=average\npool_size=5,7\nceil_mode=true\ncount_include_pad=false\n",
  };
  float y0[GC_BATCH * 3], dx0[GC_BATCH * 3 * 5 * 7];
  double loss0 = 0;
  pool_window_run ("pool_global.ini", "pooling=global_average\n", y0, dx0,
      &loss0);
  for (size_t k = 0; k < sizeof windows / sizeof windows[0]; k++) {
    float y[GC_BATCH * 3], dx[GC_BATCH * 3 * 5 * 7];
    double loss = -1;
    pool_window_run ("pool_window.ini", windows[k], y, dx, &loss);
    CHECK (loss == loss0 && !memcmp (y, y0, sizeof y) &&
        !memcmp (dx, dx0, sizeof dx), "window %zu differs from global "
        "average (loss %.9g against %.9g)", k, loss, loss0);
  }
}

/* transposed convolution and the preprocessing layers: preprocess_flip
 * flips about half the samples each way in training (the same ones for
 * the same seed), none in evaluation; preprocess_translate moves samples
 * in training only */
#define PD_BATCH 400

static tt_model *
pd_open (const char *fname, const char *layer)
{
  char ini[1024];
  tt_error err;
  snprintf (ini, sizeof ini, "[Model]\ntype=NeuralNetwork\nbatch_size=%d\n"
      "loss=mse\n[Optimizer]\ntype=sgd\nlearning_rate=0.1\n[in]\n"
      "type=input\ninput_shape=1:2:2\n[p]\n%s", PD_BATCH, layer);
  tt_model *m = tt_model_load_ini (tt_test_write_text (fname, ini), &err);
  CHECK (m != NULL, "%s: %s", fname, m ? "" : err.message);
  if (m && tt_model_compile (m, &err)) {
    CHECK (0, "%s: %s", fname, err.message);
    tt_model_free (m);
    m = NULL;
  }
  return m;
}

/* a training forward (seed) or an evaluation (seed 0): counts of samples
 * [[1, 2], [3, 4]] whose columns, rows were reversed, and of others */
static void
pd_run (tt_model * m, uint64_t seed, int *cols, int *rows, int *other)
{
  static float x[PD_BATCH * 4], t[PD_BATCH * 4];
  const void *inputs[1] = { x };
  tt_error err;
  double loss;
  for (int b = 0; b < PD_BATCH; b++)
    for (int i = 0; i < 4; i++)
      x[b * 4 + i] = (float) (i + 1);
  tt_status st;
  if (seed) {
    tt_rng_seed (&m->rng, seed);
    st = tt_model_gradients (m, PD_BATCH, inputs, NULL, t, false, &loss, &err);
  } else
    st = tt_model_eval_batch (m, PD_BATCH, inputs, NULL, t, NULL, &err);
  CHECK (st == TT_OK, "forward: %s", st ? err.message : "");
  const float *y = tt_data (m, m->layers[m->n_layers - 1].in[0]);
  for (uint32_t p = 0; p < m->n_layers; p++)
    if (!strcmp (m->layers[p].name, "p"))
      y = tt_data (m, m->layers[p].out[0]);
  *cols = *rows = *other = 0;
  for (int b = 0; b < PD_BATCH; b++) {
    const float *s = y + b * 4;
    const bool c = s[0] == 2 && s[1] == 1 && s[2] == 4 && s[3] == 3;
    const bool r = s[0] == 3 && s[1] == 4 && s[2] == 1 && s[3] == 2;
    const bool both = s[0] == 4 && s[1] == 3 && s[2] == 2 && s[3] == 1;
    const bool none = s[0] == 1 && s[1] == 2 && s[2] == 3 && s[3] == 4;
    *cols += c || both;
    *rows += r || both;
    *other += !(c || r || both || none);
  }
}

static void
test_preprocess_draws (void)
{
  int cols, rows, other, cols2, rows2, other2;
  tt_model *m = pd_open ("pd_flip.ini", "type=preprocess_flip\n");
  if (m) {
    pd_run (m, 5, &cols, &rows, &other);
    printf ("preprocess_flip: %d of %d columns, %d rows reversed\n", cols,
        PD_BATCH, rows);
    /* binomial (400, 0.5): sd 10 */
    CHECK (cols > 150 && cols < 250 && rows > 150 && rows < 250 &&
        other == 0, "flips: %d columns, %d rows, %d others", cols, rows, other);
    pd_run (m, 5, &cols2, &rows2, &other2);
    CHECK (cols2 == cols && rows2 == rows, "the same seed flipped others");
    pd_run (m, 0, &cols, &rows, &other);
    CHECK (cols == 0 && rows == 0 && other == 0, "evaluation flipped %d, %d",
        cols, rows);
    tt_model_free (m);
  }
  m = pd_open ("pd_flip_h.ini", "type=preprocess_flip\n"
      "flip_direction=horizontal\n");
  if (m) {
    pd_run (m, 6, &cols, &rows, &other);
    CHECK (cols > 150 && cols < 250 && rows == 0 && other == 0,
        "horizontal flips: %d columns, %d rows", cols, rows);
    tt_model_free (m);
  }
  m = pd_open ("pd_translate.ini", "type=preprocess_translate\n"
      "random_translate=0.5\n");
  if (m) {
    pd_run (m, 0, &cols, &rows, &other);
    CHECK (other == 0 && cols == 0 && rows == 0, "evaluation translated");
    pd_run (m, 7, &cols, &rows, &other);
    CHECK (other > PD_BATCH / 2, "training translated %d of %d", other,
        PD_BATCH);
    tt_model_free (m);
  }
}

/* the table's case being run: its name is what TT_TEST_CASE matches */
/* centroid_knn against a hand computation: the centroids as running
 * means of each class's training samples in batch order, the counts, the
 * output (minus the distance; -FLT_MAX for a class never seen), nothing
 * moved in evaluation, and the BIN: map [classes][features] then
 * num_samples */
static float
knn_score (const float *x, const float *c)
{
  double s = 0;
  for (int f = 0; f < 3; f++)
    s += ((double) x[f] - c[f]) * ((double) x[f] - c[f]);
  return (float) -sqrt (s);
}

static void
test_centroid_knn (void)
{
  const char *ini = "[Model]\ntype=NeuralNetwork\nbatch_size=4\n"
      "[Optimizer]\ntype=sgd\nlearning_rate=0.1\n[in]\ntype=input\n"
      "input_shape=1:1:3\n[knn]\ntype=centroid_knn\nnum_class=3\n";
  tt_error err;
  tt_model *m = tt_model_load_ini (tt_test_write_text ("knn.ini", ini), &err);
  CHECK (m != NULL, "load: %s", m ? "" : err.message);
  if (!m)
    return;
  tt_status st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "compile: %s", st ? err.message : "");
  if (st) {
    tt_model_free (m);
    return;
  }
  tt_shape out = tt_model_output_shape (m);
  CHECK (out.channel == 1 && out.height == 1 && out.width == 3,
      "output and label shape %u:%u:%u, expected 1:1:3", out.channel,
      out.height, out.width);
  /* two batches: classes 0 2 0 0, then 2 0 (a smaller last batch) */
  const float x1[12] = { 1, 2, 3, -1, 0, 4, 3, 0, 1, 0.5f, 1, -2 };
  const float t1[12] = { 1, 0, 0, 0, 0, 1, 1, 0, 0, 0.9f, 0.1f, 0 };
  const float x2[6] = { 5, 1, 0, 2, 2, 2 };
  const float t2[6] = { 0, 0, 1, 1, 0, 0 };
  const void *in1[1] = { x1 }, *in2[1] = { x2 };
  tt_batch_result r;
  st = tt_model_train_batch (m, 4, in1, NULL, t1, &r, &err);
  CHECK (st == TT_OK && r.loss == 0.0, "train 1: %s", st ? err.message : "");
  const tt_layer *l = &m->layers[m->loss_layer];
  const float *map = tt_data (m, l->weights[0].value);
  const float *count = tt_data (m, l->weights[1].value);
  /* class 0: ((1 2 3) + (3 0 1)) / 2 then with (0.5 1 -2) / 3, the
   * running means; class 2: (-1 0 4) */
  float c0[3], c2[3] = { -1, 0, 4 };
  for (int f = 0; f < 3; f++) {
    float a = x1[f];
    a = (a * 1.0f + x1[6 + f]) / 2.0f;
    c0[f] = (a * 2.0f + x1[9 + f]) / 3.0f;
  }
  bool ok = count[0] == 3 && count[1] == 0 && count[2] == 1;
  for (int f = 0; f < 3; f++)
    ok = ok && map[f] == c0[f] && map[3 + f] == 0 && map[6 + f] == c2[f];
  CHECK (ok, "after batch 1: counts %g %g %g, centroid 0 (%g %g %g)",
      count[0], count[1], count[2], map[0], map[1], map[2]);
  const float *y = tt_model_output (m);
  int bad = 0;
  for (int b = 0; b < 4; b++) {
    bad += fabsf (y[b * 3] - knn_score (x1 + b * 3, c0)) > 1e-5f;
    bad += y[b * 3 + 1] != -FLT_MAX;
    bad += fabsf (y[b * 3 + 2] - knn_score (x1 + b * 3, c2)) > 1e-5f;
  }
  CHECK (bad == 0, "after batch 1: %d scores differ from the hand "
      "computation", bad);
  st = tt_model_train_batch (m, 2, in2, NULL, t2, &r, &err);
  CHECK (st == TT_OK, "train 2: %s", st ? err.message : "");
  for (int f = 0; f < 3; f++) {
    c2[f] = (c2[f] * 1.0f + x2[f]) / 2.0f;
    c0[f] = (c0[f] * 3.0f + x2[3 + f]) / 4.0f;
  }
  ok = count[0] == 4 && count[1] == 0 && count[2] == 2;
  for (int f = 0; f < 3; f++)
    ok = ok && map[f] == c0[f] && map[6 + f] == c2[f];
  CHECK (ok, "after batch 2: counts %g %g %g", count[0], count[1], count[2]);
  /* evaluation reads the centroids, moves none; the nearest is argmax */
  st = tt_model_eval_batch (m, 4, in1, NULL, t1, &r, &err);
  CHECK (st == TT_OK && count[0] == 4 && count[2] == 2 && map[0] == c0[0],
      "eval: %s, counts %g %g", st ? err.message : "moved", count[0], count[2]);
  bad = 0;
  for (int b = 0; b < 4; b++) {
    bad += fabsf (y[b * 3] - knn_score (x1 + b * 3, c0)) > 1e-5f;
    bad += fabsf (y[b * 3 + 2] - knn_score (x1 + b * 3, c2)) > 1e-5f;
  }
  int correct = 0;
  for (int b = 0; b < 4; b++) {
    const int want = t1[b * 3] > t1[b * 3 + 2] ? 0 : 2;
    const int got = y[b * 3] > y[b * 3 + 2] ? 0 : 2;
    correct += got == want;
  }
  CHECK (bad == 0 && r.correct == (uint32_t) correct, "eval: %d scores "
      "differ, %u correct (hand: %d)", bad, r.correct, correct);
  /* the BIN: map then num_samples, then the counters */
  char path[1024];
  snprintf (path, sizeof path, "%s", tt_test_write_text ("knn.bin", ""));
  remove (path);
  st = tt_model_save_bin (m, path, &err);
  CHECK (st == TT_OK, "save: %s", st ? err.message : "");
  float saved[12 + 8];
  FILE *f = fopen (path, "rb");
  size_t n = f ? fread (saved, 4, 20, f) : 0;
  if (f)
    fclose (f);
  CHECK (n == 12 + 2, "BIN of %zu floats, expected 9 + 3 and the counters", n);
  CHECK (n >= 12 && !memcmp (saved, map, 9 * 4) && saved[9] == 4 &&
      saved[10] == 0 && saved[11] == 2, "BIN: map then num_samples");
  tt_model_free (m);
}

static const gc_case *gc_current;

static void
gc_run_current (void)
{
  gc_run (gc_current);
}

/* the recurrent family's last cells: zoneout_lstmcell's mix by hand,
 * against the same cell with rates 0 (its lstmcell): a training forward
 * with drawn masks gives, per element, the cell's new state or the
 * previous one, the previous about rate of the time; test's masks (here
 * 0, 1 and 0.25) give M * new + (1 - M) * prev; evaluation gives the
 * expectation (1 - rate) * new + rate * prev */
#define ZO_UNIT 32
static tt_model *
zoneout_open (const char *name, const char *keys)
{
  char ini[1024];
  tt_error err;
  snprintf (ini, sizeof ini, "[Model]\ntype=NeuralNetwork\nbatch_size=%d\n"
      "loss=mse\n[Optimizer]\ntype=sgd\nlearning_rate=0.1\n[in]\n"
      "type=input\ninput_shape=1:1:6\n[h]\ntype=fully_connected\nunit=%d\n"
      "activation=tanh\n[c]\ntype=fully_connected\nunit=%d\n"
      "input_layers=in\n[l]\ntype=zoneout_lstmcell\nunit=%d\n"
      "max_timestep=2\ntimestep=1\n%sinput_layers=in,h,c\n[sum]\n"
      "type=addition\ninput_layers=l(0),l(1)\n", GC_BATCH, ZO_UNIT, ZO_UNIT,
      ZO_UNIT, keys);
  tt_model *m = tt_model_load_ini (tt_test_write_text (name, ini), &err);
  tt_status st = m ? tt_model_set_plan_mode (m, TT_PLAN_NAIVE, &err) :
      TT_ERR_INVALID;
  if (!st)
    st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s: %s", name, err.message);
  if (st) {
    tt_model_free (m);
    return NULL;
  }
  tt_model_set_seed (m, 7);
  gc_state = 777;
  for (uint32_t i = 0; i < m->n_layers; i++)
    for (uint32_t k = 0; k < m->layers[i].n_weights; k++) {
      tt_weight *w = &m->layers[i].weights[k];
      float *v = tt_data (m, w->value);
      for (size_t j = 0; j < w->count; j++)
        v[j] = strstr (w->suffix, "zoneout_mask") ? (j % 4 == 0 ? 0.0f :
            j % 4 == 1 ? 0.25f : 1.0f) : gc_rand () * 0.8f;
    }
  return m;
}

/* one forward (training or evaluation); out: [2][B][U] new states, prev:
 * [2][B][U] the state inputs */
static void
zoneout_run (tt_model * m, bool training, float *out, float *prev)
{
  float x[GC_BATCH * 6], t[GC_BATCH * ZO_UNIT];
  gc_state = 4243;
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
    x[i] = gc_rand ();
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    t[i] = gc_rand ();
  const void *inputs[1] = { x };
  tt_error err;
  double loss;
  tt_batch_result r;
  tt_rng_seed (&m->rng, 99);
  tt_status st = training ? tt_model_gradients (m, GC_BATCH, inputs, NULL, t,
      true, &loss, &err) : tt_model_eval_batch (m, GC_BATCH, inputs, NULL, t,
      &r, &err);
  CHECK (st == TT_OK, "zoneout forward: %s", st ? err.message : "");
  const tt_layer *l = &m->layers[tt_model_find_layer (m, "l")];
  const size_t n = GC_BATCH * ZO_UNIT;
  for (int k = 0; k < 2; k++) {
    memcpy (out + k * n, tt_data (m, l->out[k]), n * sizeof *out);
    memcpy (prev + k * n, tt_data (m, l->in[1 + k]), n * sizeof *prev);
  }
}

static void
test_zoneout_mix (void)
{
  const size_t n = GC_BATCH * ZO_UNIT;
  static float cell[2 * GC_BATCH * ZO_UNIT], prev[2 * GC_BATCH * ZO_UNIT];
  static float y[2 * GC_BATCH * ZO_UNIT], p2[2 * GC_BATCH * ZO_UNIT];
  tt_model *plain = zoneout_open ("zoneout_plain.ini", "");
  tt_model *drawn = zoneout_open ("zoneout_drawn.ini",
      "hidden_state_zoneout_rate=0.25\ncell_state_zoneout_rate=0.75\n");
  tt_model *test = zoneout_open ("zoneout_test.ini", "test=true\n");
  if (!plain || !drawn || !test)
    goto out;
  zoneout_run (plain, true, cell, prev);
  zoneout_run (drawn, true, y, p2);
  size_t other = 0, kept[2] = { 0, 0 };
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < n; i++) {
      const size_t j = k * n + i;
      if (prev[j] == cell[j])
        continue;
      other += y[j] != cell[j] && y[j] != prev[j];
      kept[k] += y[j] == prev[j];
    }
  CHECK (other == 0 && kept[0] > n / 8 && kept[0] < n * 3 / 8 &&
      kept[1] > n * 5 / 8 && kept[1] < n * 7 / 8, "drawn: %zu mixed values, "
      "%zu and %zu of %zu kept (rates 0.25, 0.75)", other, kept[0], kept[1], n);
  zoneout_run (test, true, y, p2);
  int bad = 0;
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < n; i++) {
      /* the weight's rows at timestep 1 of 2: row B + b */
      const size_t j = k * n + i, w = n + i;
      const float mk = w % 4 == 0 ? 0.0f : w % 4 == 1 ? 0.25f : 1.0f;
      bad += fabsf (y[j] - (mk * cell[j] + (1.0f - mk) * prev[j])) > 1e-6f;
    }
  CHECK (bad == 0, "test: %d values are not M * new + (1 - M) * prev", bad);
  zoneout_run (plain, false, cell, prev);
  zoneout_run (drawn, false, y, p2);
  bad = 0;
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < n; i++) {
      const size_t j = k * n + i;
      const float rate = k ? 0.75f : 0.25f;
      bad += fabsf (y[j] - ((1.0f - rate) * cell[j] + rate * prev[j])) > 1e-6f;
    }
  CHECK (bad == 0, "evaluation: %d values are not the expectation", bad);
out:
  tt_model_free (plain);
  tt_model_free (drawn);
  tt_model_free (test);
}

/* mixture-of-logistics attention: its forward against the formula,
 * written out here in double, on 2 samples of 3 steps (with a length
 * and without) */
static double
mol_sigmoid (double z)
{
  return 1.0 / (1.0 + exp (-z));
}

static void
mol_reference_run (bool with_length)
{
  enum
  { B = 2, T = 3, D = 2, U = 3, K = 2 };
  char ini[1024];
  snprintf (ini, sizeof ini, "[Model]\ntype=NeuralNetwork\nbatch_size=%d\n"
      "loss=mse\n[Optimizer]\ntype=sgd\nlearning_rate=0.1\n"
      "[q]\ntype=input\ninput_shape=1:1:%d\n[v]\ntype=input\n"
      "input_shape=1:%d:%d\n[s]\ntype=input\ninput_shape=1:1:%d\n%s"
      "[m]\ntype=mol_attention\nunit=%d\nmol_k=%d\ninput_layers=q,v,s%s\n"
      "[o]\ntype=addition\ninput_layers=m(0)\n[w]\ntype=addition\n"
      "input_layers=m(1)\n[c]\ntype=concat\ninput_layers=o,w\n", B, D,
      T, D, K, with_length ? "[len]\ntype=input\ninput_shape=1:1:1\n" : "",
      U, K, with_length ? ",len" : "");
  tt_error err;
  tt_model *m = tt_model_load_ini (tt_test_write_text ("mol.ini", ini), &err);
  /* naive: every tensor its own memory, the outputs readable after */
  tt_status st = m ? tt_model_set_plan_mode (m, TT_PLAN_NAIVE, &err) :
      TT_ERR_INVALID;
  if (!st)
    st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "mol_attention reference: %s", err.message);
  if (st) {
    tt_model_free (m);
    return;
  }
  const tt_layer *l = NULL;
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (!strcmp (m->layers[i].section, "m"))
      l = &m->layers[i];
  float q[B * D], v[B * T * D], st0[B * K], len[B] = { 2.0f, 3.7f };
  float w1[D * U], b1[U], w2[U * 3 * K], t[B * (D + K)];
  gc_state = 777;
  float *all[] = { q, v, st0, w1, b1, w2, t };
  const size_t counts[] = { B * D, B * T * D, B * K, D * U, U, U * 3 * K,
    B * (D + K)
  };
  for (int a = 0; a < 7; a++)
    for (size_t i = 0; i < counts[a]; i++)
      all[a][i] = gc_rand ();
  /* states near the steps, so that the logistics cover them */
  for (size_t i = 0; i < B * K; i++)
    st0[i] = 1.0f + st0[i];
  memcpy (tt_data (m, l->weights[0].value), w1, sizeof w1);
  memcpy (tt_data (m, l->weights[1].value), b1, sizeof b1);
  memcpy (tt_data (m, l->weights[2].value), w2, sizeof w2);
  const void *inputs[4] = { q, v, st0, len };
  double loss;
  st = tt_model_gradients (m, B, inputs, NULL, t, false, &loss, &err);
  CHECK (st == TT_OK, "mol_attention reference: %s", err.message);
  const float *out = tt_data (m, l->out[0]), *ns = tt_data (m, l->out[1]);
  double worst = 0;
  for (int b = 0; b < B; b++) {
    double h[U], p[3 * K], kappa[K], beta[K], alpha[K], mk[K], asum = 0;
    for (int u = 0; u < U; u++) {
      double z = b1[u];
      for (int i = 0; i < D; i++)
        z += (double) q[b * D + i] * w1[i * U + u];
      h[u] = tanh (z);
    }
    for (int j = 0; j < 3 * K; j++) {
      p[j] = 0;
      for (int u = 0; u < U; u++)
        p[j] += h[u] * w2[u * 3 * K + j];
    }
    for (int k = 0; k < K; k++) {
      kappa[k] = exp (p[k]);
      beta[k] = exp (p[K + k]);
      alpha[k] = exp (p[2 * K + k]);
      asum += alpha[k];
    }
    for (int k = 0; k < K; k++) {
      alpha[k] /= asum;
      mk[k] = st0[b * K + k] + kappa[k];
      worst = fmax (worst, fabs (ns[b * K + k] - mk[k]));
    }
    /* the mask keeps the steps before the length, rounded down */
    const int keep = with_length ? (int) len[b] : T;
    for (int i = 0; i < D; i++) {
      double y = 0;
      for (int j = 0; j < T && j < keep; j++) {
        double score = 0;
        for (int k = 0; k < K; k++)
          score += alpha[k] * (mol_sigmoid ((j + 1 + 0.5 - mk[k]) /
                  (beta[k] + 1e-8)) - mol_sigmoid ((j + 1 - 0.5 - mk[k]) /
                  (beta[k] + 1e-8)));
        y += score * v[(b * T + j) * D + i];
      }
      worst = fmax (worst, fabs (out[b * D + i] - y));
    }
  }
  CHECK (worst < 1e-5, "mol_attention reference (%s length): worst "
      "difference %.3g", with_length ? "with" : "without", worst);
  tt_model_free (m);
}

static void
test_mol_reference (void)
{
  mol_reference_run (false);
  mol_reference_run (true);
}

/* LoRA: the base weight and bias have no gradient and no optimizer
 * state, the adapters both (Adam: two moments each), in BIN order
 * weight, bias, loraA, loraB; loraA starts at zeros, loraB not */
static void
test_lora_frozen_base (void)
{
  tt_error err;
  const char *path = tt_test_write_text ("lora_frozen_base.ini",
      "[Model]\ntype=NeuralNetwork\nbatch_size=4\nloss=mse\n"
      "[Optimizer]\ntype=adam\nlearning_rate=0.1\n"
      "[in]\ntype=input\ninput_shape=1:1:6\n[a]\ntype=fully_connected\n"
      "unit=5\nlora_rank=2\nlora_alpha=3\n");
  tt_model *m = tt_model_load_ini (path, &err);
  CHECK (m != NULL, "load: %s", m ? "" : err.message);
  if (!m)
    return;
  CHECK (tt_model_compile (m, &err) == TT_OK, "compile: %s", err.message);
  const tt_layer *l = &m->layers[tt_model_find_layer (m, "a")];
  CHECK (l->n_weights == 4, "%u weights", l->n_weights);
  const char *names[4] = { "weight", "bias", "loraA", "loraB" };
  const size_t counts[4] = { 30, 5, 12, 10 };
  for (uint32_t k = 0; k < 4 && k < l->n_weights; k++) {
    const tt_weight *w = &l->weights[k];
    const bool adapter = k >= 2;
    CHECK (!strcmp (w->suffix, names[k]) && w->count == counts[k],
        "weight %u: %s of %zu", k, w->suffix, w->count);
    CHECK (w->trainable == adapter && (w->grad >= 0) == adapter &&
        (w->opt[0] >= 0) == adapter && (w->opt[1] >= 0) == adapter,
        "%s: trainable %d grad %d opt %d %d", w->suffix, w->trainable,
        w->grad, w->opt[0], w->opt[1]);
  }
  const float *a = tt_data (m, l->weights[2].value);
  const float *b = tt_data (m, l->weights[3].value);
  float amax = 0.0f, bmax = 0.0f;
  for (size_t i = 0; i < 12; i++)
    amax = fmaxf (amax, fabsf (a[i]));
  for (size_t i = 0; i < 10; i++)
    bmax = fmaxf (bmax, fabsf (b[i]));
  CHECK (amax == 0.0f && bmax > 0.0f, "loraA max %g, loraB max %g", amax, bmax);
  CHECK (fabsf (l->p.fc.lora_scale - 1.5f) < 1e-7f, "scale %g",
      l->p.fc.lora_scale);
  tt_model_free (m);
}

int
main (void)
{
  TT_TEST_RUN (test_layer_traits);
  for (size_t i = 0; i < sizeof gc_cases / sizeof gc_cases[0]; i++) {
    gc_current = &gc_cases[i];
    tt_test_run (gc_cases[i].name, gc_run_current);
  }
  TT_TEST_RUN (test_gru_reference);
  TT_TEST_RUN (test_pool_window_is_global);
  TT_TEST_RUN (test_centroid_knn);
  /* transposed convolution and the preprocessing layers */
  TT_TEST_RUN (test_preprocess_draws);
  /* the recurrent family's last cells */
  TT_TEST_RUN (test_zoneout_mix);
  /* mixture-of-logistics attention */
  TT_TEST_RUN (test_mol_reference);
  /* LoRA adapters */
  TT_TEST_RUN (test_lora_frozen_base);
  return tt_test_summary ();
}
