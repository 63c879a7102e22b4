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
 * activation type rounds the same GEMMs' inputs to fp16 (but conv2d's,
 * which stay fp32): its outputs and steps within an eighth of bf16's
 * tolerances (2e-3 of the scale; 1e-2 in L2 with relu), not fp32's bits.
 *
 * Then the Fashion-MNIST MLP and CNN (tests/models) trained 150 steps on
 * synthetic class patterns in bf16 and fp32: the mean loss of the last
 * 20 steps within 0.05 + 10% of fp32's, both well under the first
 * steps'. That bf16 steps allocate nothing is test_no_alloc's
 * test_loss_scaling and test_bf16_gemms.
 *
 * usage: test_bf16_layers SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test.h"

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
     * bits (every model here ends in fully_connected, which rounds) */
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
}

static void
test_mha (void)
{
  compare_layers ("multi_head_attention", mha_ini, false);
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

int
main (int argc, char **argv)
{
  if (argc > 1)
    root = argv[1];
  TT_TEST_RUN (test_fc);
  TT_TEST_RUN (test_conv);
  TT_TEST_RUN (test_mha);
  TT_TEST_RUN (test_training);
  return tt_test_summary ();
}
