/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The layers' GEMMs in bf16 (tt_run_ctx.gemm_inputs, docs/precision.md):
 * a model whose activation type is bf16 (set here in the model, as the
 * INI's model_tensor_type will) rounds the GEMM inputs of
 * fully_connected (forward, the input derivative with the relu before's
 * mask, the weight gradient, the loss tail), conv2d's im2col path (3x3
 * padded and 1x1) and multi_head_attention's projections to bf16, sums
 * in fp32.
 *
 * Each small model, on 1 and 2 threads, against the same model in fp32:
 * the outputs of an evaluation, then the change of every weight in one
 * SGD step with learning rate 1 (the gradients, which go through every
 * layer's input derivative), within a bf16 tolerance of the fp32 values'
 * scale (max |bf16 - fp32| <= 1e-2 max |fp32|), and not the same bits
 * (the bf16 path ran). With relu instead of sigmoid (fully_connected's
 * fused relu mask), the step within 5% in the L2 norm: a unit whose
 * input bf16 moves across 0 takes its gradient with it. An fp16
 * activation type rounds the same GEMMs' inputs to fp16: its outputs
 * and steps within an eighth of bf16's tolerances (2e-3 of the scale;
 * 1e-2 in L2 with relu), not fp32's bits; a model of convolutions alone
 * shows that theirs round too.
 *
 * Then the Fashion-MNIST MLP and CNN (tests/models) trained 150 steps on
 * synthetic class patterns in bf16 and fp32: the mean loss of the last
 * 20 steps within 0.05 + 10% of fp32's, both well under the first
 * steps'. That bf16 steps allocate nothing is test_no_alloc's
 * test_loss_scaling and test_bf16_gemms.
 *
 * conv2d's im2col path keeps its columns and regrouped output derivative
 * at half width in bf16 and fp16 (kernels/conv2d.c): a model planned so
 * (3x3 padded, strided and frozen, with input derivatives, and 1x1; a
 * conv1d dilated then strided, rows longer than im2col's fp32 block)
 * against the same model keeping them in fp32
 * (tt_conv2d_force_fp32_scratch), on 1 and 2 threads: the losses, the
 * evaluation's outputs and the weights after 3 Adam steps bit for bit,
 * with a smaller plan (naive bytes and peak live bytes).
 *
 * Attention's products (multi_head_attention's and attention's Q K^T,
 * P V and their backward products) and matmul's: the kernels with bf16
 * inputs against fp32 on the same operands rounded to bf16, within the
 * bounds that rounding the inner operands (P, dS) gives; the attention
 * and matmul layers in small models as above (multi_head_attention's
 * products run in test_mha).
 *
 * usage: test_bf16_layers SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "model_tensors.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SGD1 "[Optimizer]\ntype = sgd\nlearning_rate = 1\n"

/* fully_connected: a relu between (the masked input derivative), the
 * softmax output with the loss (the loss tail) */
static const char fc_ini[] =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 24\nloss = cross\n" SGD1
    "[input]\ntype = input\ninput_shape = 1:1:70\n"
    "[fc1]\ntype = fully_connected\nunit = 150\nactivation = sigmoid\n"
    "[fc2]\ntype = fully_connected\nunit = 40\nactivation = tanh\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

/* conv2d's im2col path: 3x3 padded over 3 channels (neither the direct
 * nor the Winograd convolution), then 1x1 */
static const char conv_ini[] =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 8\nloss = cross\n" SGD1
    "[input]\ntype = input\ninput_shape = 3:10:10\n"
    "[conv1]\ntype = conv2d\nfilters = 8\nkernel_size = 3,3\n"
    "padding = same\nactivation = sigmoid\n"
    "[conv2]\ntype = conv2d\nfilters = 6\nkernel_size = 1,1\n"
    "activation = tanh\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

/* convolutions alone (their im2col and 1x1 GEMMs): no dense layer rounds
 * after them, so fp16's and bf16's differences from fp32 are theirs */
static const char conv_only_ini[] =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 8\nloss = mse\n" SGD1
    "[input]\ntype = input\ninput_shape = 3:10:10\n"
    "[conv1]\ntype = conv2d\nfilters = 8\nkernel_size = 3,3\n"
    "padding = same\nactivation = sigmoid\n"
    "[conv2]\ntype = conv2d\nfilters = 6\nkernel_size = 1,1\n";

/* convolutions in bf16 (kernels/conv2d_algo.c): the direct convolution
 * (3x3 unpadded over 2 channels: 18 taps), then Winograd (3x3 over 16
 * channels at batch 8), both kept in bf16 (faster than im2col's bf16
 * GEMMs), Winograd's products on bf16 inputs */
static const char conv_wino_ini[] =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 8\nloss = cross\n" SGD1
    "[input]\ntype = input\ninput_shape = 2:14:14\n"
    "[conv1]\ntype = conv2d\nfilters = 16\nkernel_size = 3,3\n"
    "activation = sigmoid\n"
    "[conv2]\ntype = conv2d\nfilters = 12\nkernel_size = 3,3\n"
    "padding = same\nactivation = tanh\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

/* conv2d's im2col path with half-width scratch (kernels/conv2d.c): 3x3
 * padded over 3 channels (the first layer: no input derivative), 3x3 of
 * stride 2 frozen (its input derivative alone: columns for forward
 * only), 3x3 over 8 channels (both passes: the column gradient in a
 * buffer of its own), then 1x1 (the input derivative straight into dx);
 * none is direct or Winograd */
static const char conv_half_ini[] =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 8\nloss = cross\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
    "[input]\ntype = input\ninput_shape = 3:12:12\n"
    "[conv1]\ntype = conv2d\nfilters = 8\nkernel_size = 3,3\n"
    "padding = same\nactivation = relu\n"
    "[conv2]\ntype = conv2d\nfilters = 8\nkernel_size = 3,3\n"
    "stride = 2,2\npadding = same\nactivation = tanh\ntrainable = false\n"
    "[conv3]\ntype = conv2d\nfilters = 6\nkernel_size = 3,3\n"
    "padding = same\nactivation = sigmoid\n"
    "[conv4]\ntype = conv2d\nfilters = 5\nkernel_size = 1,1\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

/* conv1d's rows longer than the half-width im2col's fp32 block (1024
 * positions), dilated, then strided */
static const char conv_half_wide_ini[] =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 4\nloss = cross\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
    "[input]\ntype = input\ninput_shape = 2:1:2100\n"
    "[conv1]\ntype = conv1d\nfilters = 4\nkernel_size = 5\n"
    "dilation = 2\npadding = same\nactivation = tanh\n"
    "[conv2]\ntype = conv1d\nfilters = 3\nkernel_size = 3\nstride = 2\n"
    "activation = sigmoid\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

/* multi_head_attention's projections */
static const char mha_ini[] =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 6\nloss = cross\n" SGD1
    "[input]\ntype = input\ninput_shape = 1:12:20\n"
    "[embed]\ntype = fully_connected\nunit = 32\n"
    "[attn]\ntype = multi_head_attention\n"
    "input_layers = embed, embed, embed\nnum_heads = 4\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

static uint64_t rng_state = 99;

static float
rnd (void)
{
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (float) ((rng_state >> 40) & 0xffffff) / (float) (1 << 23) - 1.0f;
}

static tt_model *
open_text (const char *text, unsigned threads, tt_precision act)
{
  tt_error err;
  tt_model *m = tt_model_load_ini_text (text, strlen (text), "bf16.ini",
      &err);
  CHECK (m != NULL, "%s", m ? "" : err.message);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 7);
  if (tt_model_set_threads (m, threads, &err) || tt_model_compile (m, &err)) {
    CHECK (false, "%s", err.message);
    tt_model_free (m);
    return NULL;
  }
  /* after compile: the GEMMs' inputs change, nothing is stashed (the
   * plan was made at fp32), so only the layers' products differ */
  m->activation_type = act;
  return m;
}

static size_t
input_floats (tt_model * m)
{
  tt_shape in;
  tt_model_input_shape (m, 0, &in);
  return (size_t) tt_model_batch_size (m) * in.channel * in.height * in.width;
}

/* the L2 norms of a - b and of b */
static void
spread2 (const float *a, const float *b, size_t n, double *diff, double *scale)
{
  *diff = 0, *scale = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = (double) a[i] - b[i];
    *diff += d * d;
    *scale += (double) b[i] * b[i];
  }
  *diff = sqrt (*diff), *scale = sqrt (*scale);
}

/* max |a - b| and max |b| */
static void
spread (const float *a, const float *b, size_t n, double *diff, double *scale)
{
  *diff = 0, *scale = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs ((double) a[i] - b[i]);
    *diff = d > *diff || isnan (d) ? d : *diff;
    *scale = fabs (b[i]) > *scale ? fabs (b[i]) : *scale;
  }
}

/* the outputs of an evaluation and the weights' change in one step */
static void
run_once (tt_model * m, const float *x, const float *t, float *out,
    float *delta)
{
  tt_error err;
  tt_batch_result r;
  const uint32_t batch = tt_model_batch_size (m);
  const tt_shape os = tt_model_output_shape (m);
  const size_t no = (size_t) batch * os.channel * os.height * os.width;
  const void *in[1] = { x };
  CHECK (tt_model_eval_batch (m, batch, in, NULL, t, &r, &err) == TT_OK,
      "%s", err.message);
  memcpy (out, tt_model_output (m), no * sizeof *out);
  const size_t nw = tt_model_weight_floats (m);
  float *before = malloc (nw * sizeof *before);
  tt_model_export_weights (m, before, nw, &err);
  CHECK (tt_model_train_batch (m, batch, in, NULL, t, &r, &err) == TT_OK,
      "%s", err.message);
  tt_model_export_weights (m, delta, nw, &err);
  for (size_t i = 0; i < nw; i++)
    delta[i] -= before[i];
  free (before);
}

/* relu: the bf16 step within 5% of fp32's in the L2 norm (a unit whose
 * input is within bf16's rounding of 0 may switch the relu, and its
 * gradient with it), the outputs as smooth activations' */
static void
compare_layers (const char *name, const char *text, bool relu)
{
  for (unsigned threads = 1; threads <= 2; threads++) {
    tt_model *m[3] = { open_text (text, threads, TT_PRECISION_FP32),
      open_text (text, threads, TT_PRECISION_BF16),
      open_text (text, threads, TT_PRECISION_FP16)
    };
    if (!m[0] || !m[1] || !m[2]) {
      for (int i = 0; i < 3; i++)
        if (m[i])
          tt_model_free (m[i]);
      return;
    }
    const uint32_t batch = tt_model_batch_size (m[0]);
    const size_t nx = input_floats (m[0]);
    const tt_shape os = tt_model_output_shape (m[0]);
    const size_t no = (size_t) batch * os.channel * os.height * os.width;
    const size_t nw = tt_model_weight_floats (m[0]);
    float *x = malloc (nx * sizeof *x);
    float *t = calloc (no, sizeof *t);
    for (size_t i = 0; i < nx; i++)
      x[i] = rnd ();
    for (uint32_t b = 0; b < batch; b++)
      t[b * (no / batch) + (b * 7u) % (no / batch)] = 1;
    float *out[3], *delta[3];
    for (int i = 0; i < 3; i++) {
      out[i] = malloc (no * sizeof (float));
      delta[i] = malloc (nw * sizeof (float));
      run_once (m[i], x, t, out[i], delta[i]);
    }
    double d, s;
    spread (out[1], out[0], no, &d, &s);
    CHECK (d <= 1e-2 * s && d > 0, "%s, %u threads: bf16 outputs %.3g from "
        "fp32's (scale %.3g)", name, threads, d, s);
    printf ("%s, %u threads: outputs %.3g of scale %.3g apart", name,
        threads, d, s);
    if (relu) {
      spread2 (delta[1], delta[0], nw, &d, &s);
      CHECK (d <= 5e-2 * s && d > 0, "%s, %u threads: bf16 step %.3g from "
          "fp32's in L2 (norm %.3g)", name, threads, d, s);
    } else {
      spread (delta[1], delta[0], nw, &d, &s);
      CHECK (d <= 1e-2 * s && d > 0, "%s, %u threads: bf16 step %.3g from "
          "fp32's (scale %.3g)", name, threads, d, s);
    }
    printf (", steps %.3g of scale %.3g\n", d, s);
    /* fp16 GEMM inputs (tt_gemm_f32_as_f16): 11 significant bits to
     * bf16's 8, so within an eighth of bf16's tolerances, and not fp32's
     * bits */
    spread (out[2], out[0], no, &d, &s);
    CHECK (d <= 2e-3 * s && d > 0, "%s, %u threads: fp16 outputs %.3g from "
        "fp32's (scale %.3g)", name, threads, d, s);
    printf ("%s, %u threads: fp16 outputs %.3g of scale %.3g apart", name,
        threads, d, s);
    if (relu) {
      spread2 (delta[2], delta[0], nw, &d, &s);
      CHECK (d <= 1e-2 * s && d > 0, "%s, %u threads: fp16 step %.3g from "
          "fp32's in L2 (norm %.3g)", name, threads, d, s);
    } else {
      spread (delta[2], delta[0], nw, &d, &s);
      CHECK (d <= 2e-3 * s && d > 0, "%s, %u threads: fp16 step %.3g from "
          "fp32's (scale %.3g)", name, threads, d, s);
    }
    printf (", steps %.3g of scale %.3g\n", d, s);
    for (int i = 0; i < 3; i++) {
      free (out[i]);
      free (delta[i]);
      tt_model_free (m[i]);
    }
    free (x);
    free (t);
  }
}

/* the text with its sigmoid a relu */
static void
compare_relu (const char *name, const char *text)
{
  char buf[2048];
  const char *at = strstr (text, "sigmoid");
  const size_t head = (size_t) (at - text);
  snprintf (buf, sizeof buf, "%.*srelu%s", (int) head, text, at + 7);
  compare_layers (name, buf, true);
}

static void
test_fc (void)
{
  compare_layers ("fully_connected", fc_ini, false);
  compare_relu ("fully_connected, relu", fc_ini);
}

static void
test_conv (void)
{
  compare_layers ("conv2d", conv_ini, false);
  compare_relu ("conv2d, relu", conv_ini);
  compare_layers ("conv2d alone", conv_only_ini, false);
}

/* text planned in precision, its im2col scratch at half width or forced
 * fp32 */
static tt_model *
open_planned (const char *text, const char *precision, unsigned threads,
    bool fp32_scratch)
{
  tt_error err;
  tt_model *m = tt_model_load_ini_text (text, strlen (text), "conv_half.ini",
      &err);
  CHECK (m != NULL, "%s", m ? "" : err.message);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 7);
  tt_conv2d_force_fp32_scratch (fp32_scratch);
  /* the two plans' busiest steps differ: the same stashes in both */
  tt_remat_keep_every_stash (true);
  const bool failed = tt_model_set_threads (m, threads, &err) ||
      tt_model_set_precision (m, precision, &err) || tt_model_compile (m, &err);
  tt_conv2d_force_fp32_scratch (false);
  tt_remat_keep_every_stash (false);
  CHECK (!failed, "%s", err.message);
  if (failed) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

/* the half-width columns change no bit of a step: the GEMMs rounded the
 * fp32 columns to the same values */
static void
compare_half_scratch (const char *name, const char *text)
{
  static const char *const precisions[] = { "bf16", "fp16" };
  for (int p = 0; p < 2; p++)
    for (unsigned threads = 1; threads <= 2; threads++) {
      tt_model *half = open_planned (text, precisions[p], threads, false);
      tt_model *full = open_planned (text, precisions[p], threads, true);
      if (!half || !full) {
        if (half)
          tt_model_free (half);
        if (full)
          tt_model_free (full);
        continue;
      }
      tt_plan_info hi, fi;
      tt_model_plan_info (half, &hi);
      tt_model_plan_info (full, &fi);
      CHECK (hi.naive_bytes < fi.naive_bytes && hi.lower_bound <
          fi.lower_bound, "%s, %s, %u threads: half-width scratch, naive %llu "
          "peak %llu bytes; fp32 %llu, %llu", name, precisions[p], threads,
          (unsigned long long) hi.naive_bytes,
          (unsigned long long) hi.lower_bound,
          (unsigned long long) fi.naive_bytes,
          (unsigned long long) fi.lower_bound);
      const uint32_t batch = tt_model_batch_size (half);
      const size_t nx = input_floats (half);
      const size_t no = (size_t) batch * 10;
      const size_t nw = tt_model_weight_floats (half);
      float *x = malloc (nx * sizeof *x);
      float *t = calloc (no, sizeof *t);
      float *wh = malloc (nw * sizeof *wh);
      float *wf = malloc (nw * sizeof *wf);
      for (size_t i = 0; i < nx; i++)
        x[i] = rnd ();
      for (uint32_t b = 0; b < batch; b++)
        t[b * 10 + (b * 3u) % 10] = 1;
      const void *in[1] = { x };
      tt_error err;
      for (int step = 0; step < 3; step++) {
        tt_batch_result rh, rf;
        CHECK (tt_model_train_batch (half, batch, in, NULL, t, &rh,
                &err) == TT_OK, "%s", err.message);
        CHECK (tt_model_train_batch (full, batch, in, NULL, t, &rf,
                &err) == TT_OK, "%s", err.message);
        CHECK (!memcmp (&rh.loss, &rf.loss, sizeof rh.loss), "%s, %s, %u "
            "threads, step %d: loss %.9g, fp32 scratch's %.9g",
            name, precisions[p], threads, step, rh.loss, rf.loss);
      }
      tt_model_export_weights (half, wh, nw, &err);
      tt_model_export_weights (full, wf, nw, &err);
      CHECK (!memcmp (wh, wf, nw * sizeof *wh), "%s, %s, %u threads: the "
          "weights after 3 steps differ", name, precisions[p], threads);
      tt_batch_result r;
      CHECK (tt_model_eval_batch (half, batch, in, NULL, t, &r, &err) ==
          TT_OK, "%s", err.message);
      memcpy (wh, tt_model_output (half), no * sizeof *wh);
      CHECK (tt_model_eval_batch (full, batch, in, NULL, t, &r, &err) ==
          TT_OK, "%s", err.message);
      CHECK (!memcmp (wh, tt_model_output (full), no * sizeof *wh),
          "%s, %s, %u threads: the outputs differ", name, precisions[p],
          threads);
      printf ("%s, %s, %u threads: losses, weights and outputs equal; naive "
          "%llu bytes (fp32 scratch %llu), peak %llu (%llu)\n", name,
          precisions[p], threads, (unsigned long long) hi.naive_bytes,
          (unsigned long long) fi.naive_bytes,
          (unsigned long long) hi.lower_bound,
          (unsigned long long) fi.lower_bound);
      free (x);
      free (t);
      free (wh);
      free (wf);
      tt_model_free (half);
      tt_model_free (full);
    }
}

static void
test_conv_half_scratch (void)
{
  compare_half_scratch ("conv2d", conv_half_ini);
  compare_half_scratch ("conv1d, wide", conv_half_wide_ini);
}

/* the plan knows the precision: conv_wino_ini compiled in bf16 (the
 * precision set before compile) plans both layers with bf16 GEMMs, and
 * the algorithms are fp32's (direct, then Winograd) */
static void
test_conv_plan (void)
{
  for (int bf16 = 0; bf16 <= 1; bf16++) {
    tt_error err;
    tt_model *m = tt_model_load_ini_text (conv_wino_ini,
        strlen (conv_wino_ini), "bf16.ini", &err);
    CHECK (m != NULL, "%s", m ? "" : err.message);
    if (!m)
      return;
    if ((bf16 && tt_model_set_precision (m, "bf16", &err)) ||
        tt_model_compile (m, &err)) {
      CHECK (false, "%s", err.message);
      tt_model_free (m);
      return;
    }
    static const tt_conv2d_algo want[2] = { TT_CONV2D_DIRECT,
      TT_CONV2D_WINOGRAD
    };
    int seen = 0;
    for (uint32_t i = 0; i < m->n_layers; i++) {
      const tt_layer *l = &m->layers[i];
      if (strcmp (l->ops->type, "conv2d") || seen >= 2)
        continue;
      const tt_window_geom *g = &l->p.conv.geom;
      CHECK (g->plan_bf16 == (bf16 != 0), "%s: planned with bf16 GEMMs: "
          "%d, the model's: %d", l->name, g->plan_bf16, bf16);
      CHECK (tt_conv2d_batch_algo (g, 8) == want[seen], "%s (%s): "
          "algorithm %d, want %d", l->name, bf16 ? "bf16" : "fp32",
          (int) tt_conv2d_batch_algo (g, 8), (int) want[seen]);
      seen++;
    }
    CHECK (seen == 2, "two conv2d layers, saw %d", seen);
    tt_model_free (m);
  }
}

static void
test_conv_winograd (void)
{
  compare_layers ("conv2d, direct and Winograd", conv_wino_ini, false);
  compare_relu ("conv2d, direct and Winograd, relu", conv_wino_ini);
}

static void
test_mha (void)
{
  compare_layers ("multi_head_attention", mha_ini, false);
}

/* ---- attention's products and matmul in bf16 ----------------------- */

/* the attention layer (query, value; key = value, scaled, causal) and
 * matmul between fully_connected layers */
static const char attention_ini[] =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 6\nloss = cross\n" SGD1
    "[input]\ntype = input\ninput_shape = 2:12:20\n"
    "[q]\ntype = fully_connected\nunit = 16\nactivation = sigmoid\n"
    "[v]\ntype = fully_connected\nunit = 16\ninput_layers = input\n"
    "[attn]\ntype = attention\ninput_layers = q, v\n"
    "scaled_dot_product = true\ncausal_mask = true\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

/* 2:12:16 x 2:16:12 (v's 12:16 permuted) = 2:12:12 */
static const char matmul_ini[] =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 6\nloss = cross\n" SGD1
    "[input]\ntype = input\ninput_shape = 2:12:20\n"
    "[a]\ntype = fully_connected\nunit = 16\nactivation = sigmoid\n"
    "[v]\ntype = fully_connected\nunit = 16\ninput_layers = input\n"
    "[vt]\ntype = permute\ndirection = 1,3,2\n"
    "[mm]\ntype = matmul\ninput_layers = a, vt\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

/* x rounded to bf16 (to nearest even) and back */
static float *
rounded (const float *x, size_t n)
{
  uint16_t *h = malloc (n * sizeof *h);
  float *y = malloc (n * sizeof *y);
  tt_f32_to_bf16 (x, h, n);
  tt_bf16_to_f32 (h, y, n);
  free (h);
  return y;
}

static float *
random_floats (size_t n, float amp)
{
  float *x = malloc (n * sizeof *x);
  for (size_t i = 0; i < n; i++)
    x[i] = amp * rnd ();
  return x;
}

static double
max_abs (const float *x, size_t n)
{
  double m = 0;
  for (size_t i = 0; i < n; i++)
    m = fabs (x[i]) > m ? fabs (x[i]) : m;
  return m;
}

/* over the [pairs][rows][cols] planes x: the largest sum of |x| along a
 * row (rows true) or down a column */
static double
max_line_sum (const float *x, size_t pairs, int rows, int cols, bool by_rows)
{
  double best = 0;
  for (size_t p = 0; p < pairs; p++) {
    const float *pl = x + p * (size_t) rows * cols;
    const int lines = by_rows ? rows : cols, len = by_rows ? cols : rows;
    for (int a = 0; a < lines; a++) {
      double s = 0;
      for (int b = 0; b < len; b++)
        s += fabs (by_rows ? pl[(size_t) a * cols + b] :
            pl[(size_t) b * cols + a]);
      best = s > best ? s : best;
    }
  }
  return best;
}

/* bf16 (to nearest) keeps 8 significant bits: |round (x) - x| <= 2^-8 |x| */
#define BF16_U (1.0 / 256.0)

/* a computed x against ref: within tol, and not the same (the bf16 path
 * ran) */
static void
check_within (const char *what, const float *x, const float *ref, size_t n,
    double tol)
{
  double d, s;
  spread (x, ref, n, &d, &s);
  printf ("  %s: %.3g from the reference (bound %.3g, scale %.3g)\n", what,
      d, tol, s);
  CHECK (d <= tol && d > 0, "%s: %.3g from the reference, bound %.3g "
      "(scale %.3g)", what, d, tol, s);
}

/* The attention kernel with gemm_bf16 on Q, K, V, dO against the fp32
 * kernel on the same operands rounded to bf16. Q K^T and dO V^T are then
 * the same products (a product of two bf16 is exact in fp32), summed in
 * another order; what the bf16 kernel does more is round its inner
 * operands, P * drop (before P V and P^T dO) and dS (before dS K and
 * dS^T Q), each by at most 2^-8 of itself. So an output element moves by
 * at most 2^-8 sum |inner| |other|, bounded by 2^-8 times the largest
 * line sum of |P * drop| or |dS| (from the reference) times the largest
 * |other operand|; 1e-4 of the output's scale more covers the sums'
 * order (fp32 sums of 16-24 terms: a few 1e-7 relative, through the
 * softmax). */
static void
test_attention_kernel (void)
{
  enum
  { B = 3, H = 2, LQ = 9, LK = 11, DK = 16, DV = 24 };
  const size_t nq = (size_t) B * LQ * H * DK, nk = (size_t) B *LK * H * DK,
      nv = (size_t) B * LK * H * DV, no = (size_t) B *LQ * H * DV,
      ns = (size_t) B * H * LQ * LK;
  rng_state = 11;
  float *q = random_floats (nq, 1.5f), *k = random_floats (nk, 1.5f);
  float *v = random_floats (nv, 1.0f), *dout = random_floats (no, 1.0f);
  float *mask = random_floats (ns, 0.5f);
  uint8_t *drop = malloc (ns);
  for (size_t i = 0; i < ns; i++)
    drop[i] = rnd () >= -0.6f;
  float *in[2][4] = { {rounded (q, nq), rounded (k, nk), rounded (v, nv),
      rounded (dout, no)}, {q, k, v, dout}
  };
  float *o[2], *dq[2], *dk[2], *dv[2], *probs[2], *dropped[2], *ds[2];
  for (int r = 0; r < 2; r++) {
    o[r] = malloc (no * sizeof (float));
    dq[r] = malloc (nq * sizeof (float));
    dk[r] = malloc (nk * sizeof (float));
    dv[r] = malloc (nv * sizeof (float));
    probs[r] = malloc (ns * sizeof (float));
    dropped[r] = malloc (ns * sizeof (float));
    ds[r] = malloc (ns * sizeof (float));
    /* r 0: fp32 on the rounded operands; r 1: bf16 on the originals */
    tt_attention a = {
      .batch = B,.heads = H,.lq = LQ,.lk = LK,.dk = DK,.dv = DV,
      .q = in[r][0],.k = in[r][1],.v = in[r][2],.o = o[r],
      .q_bs = (size_t) LQ * H * DK,.k_bs = (size_t) LK * H * DK,
      .v_bs = (size_t) LK * H * DV,.o_bs = (size_t) LQ * H * DV,
      .q_hs = DK,.k_hs = DK,.v_hs = DV,.o_hs = DV,
      .q_ld = H * DK,.k_ld = H * DK,.v_ld = H * DV,.o_ld = H * DV,
      .scale = 0.25f,.mask = mask,.drop = drop,.drop_keep = 1.0f / 0.8f,
      .probs = probs[r],.dropped = dropped[r],.gemm_inputs =
          r == 1 ? TT_GEMM_BF16 : TT_GEMM_FP32,
    };
    tt_attention_forward (&a);
    tt_attention_backward (&a, in[r][3], dq[r], dk[r], dv[r], NULL, ds[r]);
  }
  const size_t pairs = (size_t) B * H;
  const double tol_o = BF16_U * max_line_sum (dropped[0], pairs, LQ, LK,
      true) * max_abs (in[0][2], nv) + 1e-4 * max_abs (o[0], no);
  const double tol_dv = BF16_U * max_line_sum (dropped[0], pairs, LQ, LK,
      false) * max_abs (in[0][3], no) + 1e-4 * max_abs (dv[0], nv);
  const double tol_dq = BF16_U * 0.25 * max_line_sum (ds[0], pairs, LQ, LK,
      true) * max_abs (in[0][1], nk) + 1e-4 * max_abs (dq[0], nq);
  const double tol_dk = BF16_U * 0.25 * max_line_sum (ds[0], pairs, LQ, LK,
      false) * max_abs (in[0][0], nq) + 1e-4 * max_abs (dk[0], nk);
  double d, s;
  spread (probs[1], probs[0], ns, &d, &s);
  printf ("attention kernel: P %.3g from the reference\n", d);
  CHECK (d <= 1e-5, "attention kernel: P %.3g from the reference (the "
      "scores' products are exact, only their sums' order differs)", d);
  check_within ("O = (P drop) V", o[1], o[0], no, tol_o);
  check_within ("dV = (P drop)^T dO", dv[1], dv[0], nv, tol_dv);
  check_within ("dQ = scale dS K", dq[1], dq[0], nq, tol_dq);
  check_within ("dK = scale dS^T Q", dk[1], dk[0], nk, tol_dk);
  for (int r = 0; r < 2; r++) {
    free (o[r]);
    free (dq[r]);
    free (dk[r]);
    free (dv[r]);
    free (probs[r]);
    free (dropped[r]);
    free (ds[r]);
  }
  for (int i = 0; i < 4; i++)
    free (in[0][i]);
  free (q);
  free (k);
  free (v);
  free (dout);
  free (mask);
  free (drop);
}

/* matmul's products with gemm_bf16 against fp32 on the operands rounded
 * to bf16: the same exact products summed in another order, each side
 * within k 2^-24 sum |a| |b| of the exact sum (fp32's sum bound), so
 * within 2 k^2 2^-24 max |a| max |b| of each other; and not fp32's own
 * result on the originals (the rounding happened) */
static void
test_matmul_kernel (void)
{
  const tt_matmul_shape s32 = { 7, 20, 24, TT_GEMM_FP32 },
      s16 = { 7, 20, 24, TT_GEMM_BF16 };
  const size_t count = 5, na = count * 7 * 24, nb = count * 24 * 20,
      ny = count * 7 * 20;
  rng_state = 13;
  float *a = random_floats (na, 2.0f), *b = random_floats (nb, 1.0f);
  float *dy = random_floats (ny, 1.0f);
  float *ar = rounded (a, na), *br = rounded (b, nb), *dyr = rounded (dy, ny);
  float *y[3], *da[3], *db[3];
  for (int r = 0; r < 3; r++) {
    y[r] = malloc (ny * sizeof (float));
    da[r] = malloc (na * sizeof (float));
    db[r] = malloc (nb * sizeof (float));
  }
  /* 0: fp32 on the rounded, 1: bf16, 2: fp32 on the originals */
  tt_matmul_forward (NULL, &s32, count, ar, br, y[0]);
  tt_matmul_backward (NULL, &s32, count, ar, br, dyr, da[0], db[0]);
  tt_matmul_forward (NULL, &s16, count, a, b, y[1]);
  tt_matmul_backward (NULL, &s16, count, a, b, dy, da[1], db[1]);
  tt_matmul_forward (NULL, &s32, count, a, b, y[2]);
  const double u = 1.0 / (1 << 24);
  const double ma = max_abs (ar, na), mb = max_abs (br, nb),
      mdy = max_abs (dyr, ny);
  double d, sc;
  spread (y[1], y[0], ny, &d, &sc);
  printf ("matmul kernel: y %.3g, ", d);
  CHECK (d <= 2.0 * 24 * 24 * u * ma * mb, "matmul: y %.3g apart", d);
  spread (da[1], da[0], na, &d, &sc);
  printf ("da %.3g, ", d);
  CHECK (d <= 2.0 * 20 * 20 * u * mdy * mb, "matmul: da %.3g apart", d);
  spread (db[1], db[0], nb, &d, &sc);
  printf ("db %.3g from fp32 on the rounded operands", d);
  CHECK (d <= 2.0 * 7 * 7 * u * ma * mdy, "matmul: db %.3g apart", d);
  spread (y[1], y[2], ny, &d, &sc);
  printf (", y %.3g from fp32 on the originals\n", d);
  CHECK (d > 1e-3 * sc, "matmul: bf16 y only %.3g from fp32's", d);
  for (int r = 0; r < 3; r++) {
    free (y[r]);
    free (da[r]);
    free (db[r]);
  }
  free (a);
  free (b);
  free (dy);
  free (ar);
  free (br);
  free (dyr);
}

/* tt_gemm_f32_as_bf16_small against tt_gemm_f32_as_bf16, every
 * transpose, shapes around its 8 x 32 tiles and pairs of K (odd K, rows
 * and columns past a tile), alpha and beta, strides past the widths, and
 * sizes it hands to the general kernel: the same bits (on CPUs without
 * AVX-512 BF16 it is the general kernel); and tt_gemm_bf16_small_mixed
 * with A, B or both already rounded to bf16 (a layer's half-width
 * scratch), the same bits again */
static void
test_small_gemm (void)
{
  static const int shapes[][3] = {
    {16, 16, 16}, {1, 1, 1}, {5, 17, 3}, {9, 33, 31}, {16, 64, 64},
    {64, 64, 64}, {3, 50, 256}, {7, 40, 300}, {130, 70, 129}, {4, 16, 2}
  };
  rng_state = 17;
  int mismatches = 0, cases = 0, mixed_mismatches = 0, mixed_cases = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    const int m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
    const int pad = 3, mk = (m > k ? m : k) + pad, nk = (n > k ? n : k) + pad;
    float *a = random_floats ((size_t) mk * mk, 2.0f);
    float *b = random_floats ((size_t) nk * nk, 1.0f);
    float *c0 = random_floats ((size_t) m * (n + pad), 1.0f);
    float *c1 = malloc ((size_t) m * (n + pad) * sizeof *c1);
    float *c2 = malloc ((size_t) m * (n + pad) * sizeof *c2);
    uint16_t *ah = malloc ((size_t) mk * mk * sizeof *ah);
    uint16_t *bh = malloc ((size_t) nk * nk * sizeof *bh);
    tt_f32_to_bf16 (a, ah, (size_t) mk * mk);
    tt_f32_to_bf16 (b, bh, (size_t) nk * nk);
    for (int v = 0; v < 8; v++) {
      const bool ta = v & 1, tb = v & 2;
      const float alpha = v & 4 ? 0.375f : 1.0f, beta = v & 4 ? 0.5f : 0.0f;
      const int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad;
      memcpy (c1, c0, (size_t) m * (n + pad) * sizeof *c1);
      float *before = malloc ((size_t) m * (n + pad) * sizeof *before);
      memcpy (before, c0, (size_t) m * (n + pad) * sizeof *before);
      tt_gemm_f32_as_bf16 (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c0,
          n + pad);
      for (int half = 1; half < 4; half++) {
        memcpy (c2, before, (size_t) m * (n + pad) * sizeof *c2);
        tt_gemm_bf16_small_mixed (ta, tb, m, n, k, alpha, half & 1 ?
            tt_gemm_half_operand (ah, lda) : tt_gemm_fp32_operand (a, lda),
            half & 2 ? tt_gemm_half_operand (bh, ldb) :
            tt_gemm_fp32_operand (b, ldb), beta, c2, n + pad);
        mixed_cases++;
        if (memcmp (c0, c2, (size_t) m * (n + pad) * sizeof *c2)) {
          mixed_mismatches++;
          CHECK (false, "small bf16 GEMM %d x %d x %d, trans %d %d, alpha "
              "%g beta %g, half operands %s: not tt_gemm_f32_as_bf16's bits",
              m, n, k, ta, tb, alpha, beta, half == 1 ? "A" : half == 2 ?
              "B" : "A and B");
        }
      }
      free (before);
      tt_gemm_f32_as_bf16_small (ta, tb, m, n, k, alpha, a, lda, b, ldb,
          beta, c1, n + pad);
      cases++;
      if (memcmp (c0, c1, (size_t) m * (n + pad) * sizeof *c1)) {
        mismatches++;
        CHECK (false, "small bf16 GEMM %d x %d x %d, trans %d %d, alpha "
            "%g beta %g: not tt_gemm_f32_as_bf16's bits", m, n, k, ta, tb,
            alpha, beta);
      }
    }
    free (a);
    free (b);
    free (c0);
    free (c1);
    free (c2);
    free (ah);
    free (bh);
  }
  printf ("small bf16 GEMM: %d of %d cases the general kernel's bits; "
      "with half operands %d of %d\n", cases - mismatches, cases,
      mixed_cases - mixed_mismatches, mixed_cases);
  CHECK (mixed_mismatches == 0 && mixed_cases == 240, "small bf16 GEMM, "
      "half operands: %d of %d cases differ", mixed_mismatches, mixed_cases);
  CHECK (mismatches == 0 && cases == 80, "small bf16 GEMM: %d of %d cases "
      "differ", mismatches, cases);
}

static void
test_attention_products (void)
{
  test_small_gemm ();
  test_attention_kernel ();
  test_matmul_kernel ();
  compare_layers ("attention", attention_ini, false);
  compare_layers ("matmul", matmul_ini, false);
}

static const char *root = ".";

static tt_model *
open_file (const char *name, tt_precision act)
{
  char path[1024];
  tt_error err;
  snprintf (path, sizeof path, "%s/tests/models/%s", root, name);
  tt_model *m = tt_model_load_ini (path, &err);
  CHECK (m != NULL, "%s", m ? "" : err.message);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 3);
  if (tt_model_set_threads (m, 2, &err) || tt_model_compile (m, &err)) {
    CHECK (false, "%s", err.message);
    tt_model_free (m);
    return NULL;
  }
  m->activation_type = act;     /* the GEMMs only, as above */
  return m;
}

/* 10 class patterns over 784 pixels, a sample its class's plus noise */
static void
make_batch (uint32_t batch, int step, float *x, float *t)
{
  memset (t, 0, (size_t) batch * 10 * sizeof *t);
  for (uint32_t b = 0; b < batch; b++) {
    const unsigned cls = (unsigned) (step * 31 + (int) b * 7) % 10;
    t[b * 10 + cls] = 1;
    for (unsigned i = 0; i < 784; i++) {
      const float base = ((i * (cls + 3) + cls * 97) % 23) / 23.0f;
      x[(size_t) b * 784 + i] = 255.0f * fminf (1.0f, fmaxf (0.0f, 0.6f *
              base + 0.4f * (rnd () * 0.5f + 0.5f)));
    }
  }
}

/* mean loss of the last 20 of steps, and of the first 5 */
static void
train (tt_model * m, int steps, double *last, double *first)
{
  const uint32_t batch = tt_model_batch_size (m);
  float *x = malloc ((size_t) batch * 784 * sizeof *x);
  float *t = malloc ((size_t) batch * 10 * sizeof *t);
  const void *in[1] = { x };
  *last = *first = 0;
  rng_state = 5;
  for (int s = 0; s < steps; s++) {
    tt_error err;
    tt_batch_result r;
    make_batch (batch, s, x, t);
    CHECK (tt_model_train_batch (m, batch, in, NULL, t, &r, &err) == TT_OK,
        "%s", err.message);
    if (s >= steps - 20)
      *last += r.loss / 20;
    if (s < 5)
      *first += r.loss / 5;
  }
  free (x);
  free (t);
}

static void
compare_training (const char *name, int steps)
{
  tt_model *f = open_file (name, TT_PRECISION_FP32);
  tt_model *h = open_file (name, TT_PRECISION_BF16);
  if (f && h) {
    double lf, lh, ff, fh;
    train (f, steps, &lf, &ff);
    train (h, steps, &lh, &fh);
    printf ("%s, %d steps: loss %.4f -> %.4f in fp32, %.4f -> %.4f in "
        "bf16\n", name, steps, ff, lf, fh, lh);
    CHECK (fabs (lh - lf) <= 0.05 + 0.1 * lf, "%s: bf16's final loss %.4f, "
        "fp32's %.4f", name, lh, lf);
    CHECK (lf < 0.5 * ff && lh < 0.5 * fh, "%s: both learn (%.4f -> %.4f, "
        "%.4f -> %.4f)", name, ff, lf, fh, lh);
  }
  if (f)
    tt_model_free (f);
  if (h)
    tt_model_free (h);
}

static void
test_training (void)
{
  compare_training ("fmnist_mlp.ini", 150);
  compare_training ("fmnist_cnn.ini", 150);
}

/* A 1x1 convolution keeps no columns from forward (kernels/conv2d.c,
 * conv2d_pointwise): its weight gradient gathers them from its input,
 * which lives into backward, into a buffer of that one step; at every
 * precision, so MobileNet's project layers no longer hold a second copy
 * of the activation their relu keeps. */
static void
test_pointwise_columns (void)
{
  static const char *const precisions[] = { "fp32", "bf16", "fp16" };
  static const char *const layers[] = { "expand", "project" };
  char path[1024];
  snprintf (path, sizeof path, "%s/tests/models/mobilenet_block.ini", root);
  for (int p = 0; p < 3; p++) {
    tt_error err;
    tt_model *m = tt_model_load_ini (path, &err);
    CHECK (m != NULL, "%s", m ? "" : err.message);
    if (!m)
      continue;
    const bool failed = tt_model_set_precision (m, precisions[p], &err) ||
        tt_model_compile (m, &err);
    CHECK (!failed, "%s: %s", precisions[p], failed ? err.message : "");
    for (int k = 0; !failed && k < 2; k++) {
      char name[64];
      snprintf (name, sizeof name, "%s:im2col_back", layers[k]);
      const tt_tensor *col = tt_test_find_tensor (m, name);
      const int layer = tt_model_find_layer (m, layers[k]);
      CHECK (col != NULL && layer >= 0, "%s: %s declared", precisions[p], name);
      if (!col || layer < 0)
        continue;
      /* the input itself, or where backward rebuilds it (a stashed
       * root's second instance) */
      const int root = tt_tensor_root (m, m->layers[layer].in[0]);
      const int gi = tt_remat_find (m, root);
      const tt_remat *g = gi >= 0 ? &m->remat[gi] : NULL;
      const tt_tensor *in = &m->tensors[g && g->mode != TT_REMAT_KEEP &&
          g->twins[0] >= 0 ? g->twins[0] : root];
      CHECK (col->first_use == col->last_use && in->last_use >=
          col->last_use, "%s: %s lives one step (%d..%d), the input %s "
          "until %d", precisions[p], name, col->first_use, col->last_use,
          in->name, in->last_use);
    }
    tt_model_free (m);
  }
}

/* No convolution keeps anything from forward (kernels/conv2d.c): the
 * weight gradient reads the input, the direct convolution's taps as they
 * are, Winograd's transformed again and im2col's columns made again,
 * chunk by chunk; so no scratch of a conv2d layer lives from its forward
 * into its weight gradient, and its input lives until that gradient. The
 * Fashion-MNIST CNN (direct, Winograd) and ResNet-8 (im2col, strided and
 * 1x1, and Winograd), at every precision. */
static void
test_conv_keeps_nothing (void)
{
  static const char *const precisions[] = { "fp32", "bf16", "fp16" };
  static const char *const models[] = { "fmnist_cnn", "zoo_resnet8" };
  bool seen[3] = { false, false, false };
  for (int mi = 0; mi < 2; mi++)
    for (int p = 0; p < 3; p++) {
      char path[1024];
      snprintf (path, sizeof path, "%s/tests/models/%s.ini", root, models[mi]);
      tt_error err;
      tt_model *m = tt_model_load_ini (path, &err);
      CHECK (m != NULL, "%s", m ? "" : err.message);
      if (!m)
        continue;
      const bool failed = tt_model_set_batch_size (m, 32, &err) ||
          tt_model_set_precision (m, precisions[p], &err) ||
          tt_model_compile (m, &err);
      CHECK (!failed, "%s %s: %s", models[mi], precisions[p], failed ?
          err.message : "");
      for (uint32_t li = 0; !failed && li < m->n_layers; li++) {
        const tt_layer *l = &m->layers[li];
        if (strcmp (l->ops->type, "conv2d") || !l->weights[0].trainable)
          continue;
        seen[tt_conv2d_batch_algo (&l->p.conv.geom, 32)] = true;
        const int fwd = tt_step_of (m, (int) li, TT_PHASE_FORWARD);
        const int grad = tt_step_of (m, (int) li, TT_PHASE_GRADIENT);
        const size_t len = strlen (l->name);
        for (uint32_t i = 0; i < m->n_tensors; i++) {
          const tt_tensor *t = &m->tensors[i];
          if (t->kind != TT_TENSOR_SCRATCH || strncmp (t->name, l->name, len)
              || t->name[len] != ':')
            continue;
          CHECK (t->first_use > fwd || t->last_use < grad, "%s %s: %s lives "
              "from forward (step %d) into the weight gradient (step %d): "
              "steps %d..%d", models[mi], precisions[p], t->name, fwd, grad,
              t->first_use, t->last_use);
        }
        /* the input itself, or where backward rebuilds it (a stashed
         * root's second instance) */
        const int root = tt_tensor_root (m, l->in[0]);
        const int gi = tt_remat_find (m, root);
        const tt_remat *g = gi >= 0 ? &m->remat[gi] : NULL;
        const tt_tensor *in = &m->tensors[g && g->mode != TT_REMAT_KEEP &&
            g->twins[0] >= 0 ? g->twins[0] : root];
        CHECK (in->last_use >= grad, "%s %s: %s's input %s lives until %d, "
            "its weight gradient is at %d", models[mi], precisions[p],
            l->name, in->name, in->last_use, grad);
      }
      tt_model_free (m);
    }
  CHECK (seen[TT_CONV2D_IM2COL] && seen[TT_CONV2D_DIRECT] &&
      seen[TT_CONV2D_WINOGRAD], "every algorithm checked: im2col %d, direct "
      "%d, Winograd %d", seen[0], seen[1], seen[2]);
}

int
main (int argc, char **argv)
{
  if (argc > 1)
    root = argv[1];
  TT_TEST_RUN (test_fc);
  TT_TEST_RUN (test_conv);
  TT_TEST_RUN (test_mha);
  /* convolutions in bf16 */
  TT_TEST_RUN (test_conv_plan);
  TT_TEST_RUN (test_conv_winograd);
  TT_TEST_RUN (test_conv_half_scratch);
  TT_TEST_RUN (test_pointwise_columns);
  TT_TEST_RUN (test_conv_keeps_nothing);
  TT_TEST_RUN (test_training);
  /* attention's products and matmul in bf16 */
  TT_TEST_RUN (test_attention_products);
  return tt_test_summary ();
}
