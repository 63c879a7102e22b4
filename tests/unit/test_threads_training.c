/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Training on the engine's threads (issue 19): the MLP, the CNN (direct
 * and Winograd convolutions, max pooling) and resnet_bn (im2col
 * convolutions, batch norm, global pooling) train a few steps on 1 to 4
 * threads from the same weights and data:
 *  - the same thread count twice gives the same weights bit for bit (the
 *    partition is fixed, whatever thread runs a part), and so do its
 *    steps run inline (TT_THREADS_STEPS=inline: the same parts on the
 *    caller alone);
 *  - the last step trains a part of a batch, and an evaluation of a whole
 *    batch follows: every step's loss and the evaluation's loss and
 *    count of correct answers agree with one thread's within rounding
 *    (losses are sums of the threads' partials: the MLP's output layer
 *    and its loss run by rows on every thread, core/loss_tail.c);
 *  - every count's weights agree with one thread's within rounding, 1e-3
 *    of the largest weight change (moving statistics included): split
 *    GEMMs have other shapes, so with OpenBLAS a few last bits differ,
 *    which batch norm amplifies; a fully connected layer whose weight
 *    the threads split by rows (the MLP's, the CNN's dense layers) adds
 *    their partial products in forward; and the direct and Winograd
 *    convolutions (the CNN's, resnet_bn's stem and 3x3 blocks) add each
 *    thread's weight gradient over its samples. The models train with SGD here: Adam
 *    turns a rounding difference in a gradient near 0 into a whole
 *    step's difference (its step is about lr * sign (g)).
 * Argument: the source root (for tests/models).
 */
#include "tt_engine.h"
#include "tt_test.h"
#include "tt_test_hooks.h"

#include <math.h>
#include <stdint.h>

#define STEPS 3
/* samples a batch: 16, and 64 where the MLP's output layer splits its
 * forward (layers/fc_loss_tail.c) */
static uint32_t batch = 16;
/* the last training step's samples: a part of a batch */
#define LAST_BATCH (batch - 5)

static const char *root = ".";
/* a line added to the model's [Model] section (NULL: none) */
static const char *model_extra;
/* whether dense layers do the relus between them (tt_model_set_relu_fusion),
 * and the relu passes the last model compiled fused */
static bool relu_fusion = true;
/* whether the output layer does the loss (tt_model_set_loss_tail) */
static bool loss_tail = true;
static unsigned relu_fusions, deriv_copies, loss_tails;
/* the losses of the last model trained: its steps, then an evaluation */
static double losses[STEPS + 1];
static uint32_t eval_correct;

/* The weights after STEPS steps on threads threads; NULL on failure.
 * *before gets the initial ones (when not NULL). */
static float *
train (const char *model, unsigned threads, size_t *floats, float **before)
{
  char path[4096], text[16384];
  snprintf (path, sizeof path, "%s/tests/models/%s.ini", root, model);
  FILE *f = fopen (path, "r");
  CHECK (f != NULL, "%s: cannot open", path);
  if (!f)
    return NULL;
  size_t len = fread (text, 1, sizeof text - 1024, f);
  fclose (f);
  text[len] = 0;
  char *model_at = strstr (text, "[Model]\n");
  if (model_extra && model_at) {
    char *after = model_at + strlen ("[Model]\n");
    const size_t add = strlen (model_extra);
    memmove (after + add, after, strlen (after) + 1);
    memcpy (after, model_extra, add);
    len += add;
  }
  char *adam = strstr (text, "type = adam");
  CHECK (adam != NULL, "%s: no 'type = adam'", path);
  if (adam)
    memcpy (adam, "type = sgd ", 11);
  /* Adam's keys become comments */
  for (char *k = text; (k = strstr (k, "torch_ref"));)
    *k = '#';
  tt_error err;
  tt_model *m = tt_model_load_ini_text (text, len, path, &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 7);
  CHECK (tt_model_set_batch_size (m, batch, &err) == TT_OK, "%s", err.message);
  CHECK (tt_model_set_threads (m, threads, &err) == TT_OK, "%s", err.message);
  tt_model_set_relu_fusion (m, relu_fusion);
  tt_model_set_loss_tail (m, loss_tail);
  if (tt_model_compile (m, &err) != TT_OK) {
    CHECK (0, "%s: %s", model, err.message);
    tt_model_free (m);
    return NULL;
  }
  relu_fusions = tt_model_relu_fusions (m);
  deriv_copies = tt_model_deriv_copies (m);
  loss_tails = tt_model_loss_tails (m);
  CHECK (tt_model_threads (m) == threads, "%u", tt_model_threads (m));
  tt_shape in, lab = tt_model_label_shape (m);
  tt_model_input_shape (m, 0, &in);
  const size_t ni = (size_t) in.channel * in.height * in.width,
      nl = (size_t) lab.channel * lab.height * lab.width;
  float *x = malloc (batch * ni * sizeof *x);
  float *t = calloc (batch * nl, sizeof *t);
  *floats = tt_model_weight_floats (m);
  float *w = malloc (*floats * sizeof *w);
  uint64_t r = 12345;
  for (size_t i = 0; i < batch * ni; i++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float) (r >> 40) / (float) (1u << 24) * 255.0f;
  }
  for (size_t b = 0; b < batch; b++)
    t[b * nl + b % nl] = 1.0f;
  if (before) {
    *before = malloc (*floats * sizeof **before);
    tt_model_export_weights (m, *before, *floats, &err);
  }
  const void *inputs[1] = { x };
  for (int s = 0; s < STEPS; s++) {
    tt_batch_result res = { 0 };
    tt_status st = tt_model_train_batch (m, s == STEPS - 1 ? LAST_BATCH :
        batch, inputs, NULL, t, &res, &err);
    CHECK (st == TT_OK, "%s on %u threads, step %d: %s", model, threads, s,
        err.message);
    losses[s] = res.loss;
  }
  tt_batch_result res = { 0 };
  CHECK (tt_model_eval_batch (m, batch, inputs, NULL, t, &res, &err) ==
      TT_OK, "%s on %u threads, evaluation: %s", model, threads, err.message);
  losses[STEPS] = res.loss;
  eval_correct = res.correct;
  CHECK (tt_model_export_weights (m, w, *floats, &err) == TT_OK, "%s",
      err.message);
  free (x);
  free (t);
  tt_model_free (m);
  return w;
}

static void
compare_counts (const char *model)
{
  size_t n = 0, n2 = 0;
  float *w0 = NULL;
  float *one = train (model, 1, &n, &w0);
  if (!one)
    return;
  double change = 0;
  /* a comparison, not fmax: aarch64 GCC 12 at -O3 crashes vectorizing an
   * fmax reduction over float to double */
  for (size_t i = 0; i < n; i++) {
    const double d = fabs ((double) one[i] - w0[i]);
    if (d > change)
      change = d;
  }
  CHECK (change > 0, "%s: training changed no weight", model);
  double one_losses[STEPS + 1];
  memcpy (one_losses, losses, sizeof losses);
  const uint32_t one_correct = eval_correct;
  for (unsigned threads = 2; threads <= 4; threads++) {
    float *a = train (model, threads, &n2, NULL);
    for (int s = 0; s <= STEPS; s++)
      CHECK (fabs (losses[s] - one_losses[s]) <= 1e-5 * fabs (one_losses[s]),
          "%s: %u threads: %s %d's loss %.9g, one thread's %.9g", model,
          threads, s < STEPS ? "step" : "evaluation", s, losses[s],
          one_losses[s]);
    CHECK (eval_correct == one_correct, "%s: %u threads: %u correct in the "
        "evaluation, one thread %u", model, threads, eval_correct, one_correct);
    float *b = train (model, threads, &n2, NULL);
    /* every step inline: the same parts in order on the caller, sharing
     * what scratch they may (tt_threads_step_inline), the same weights */
    setenv ("TT_THREADS_STEPS", "inline", 1);
    float *c = train (model, threads, &n2, NULL);
    setenv ("TT_THREADS_STEPS", "split", 1);
    if (a && c)
      CHECK (memcmp (a, c, n * sizeof *a) == 0, "%s: %u threads, inline "
          "steps gave other weights than split ones", model, threads);
    free (c);
    if (a && b) {
      CHECK (memcmp (a, b, n * sizeof *a) == 0, "%s: %u threads twice gave "
          "different weights", model, threads);
      double worst = 0;
      size_t at = 0;
      for (size_t i = 0; i < n; i++) {
        const double d = fabs ((double) a[i] - one[i]);
        if (d > worst) {
          worst = d;
          at = i;
        }
      }
      const double tolerance = 1e-3 * change;
      CHECK (worst <= tolerance, "%s: %u threads: weight %zu is %g, one "
          "thread's %g (largest change %g)", model, threads, at,
          (double) a[at], (double) one[at], change);
      printf ("%s: %u threads: largest difference from 1 thread %.3g "
          "(largest weight change %.3g)\n", model, threads, worst, change);
    }
    free (a);
    free (b);
  }
  free (one);
  free (w0);
}

static void
test_mlp (void)
{
  compare_counts ("fmnist_mlp");
}

/* clip_grad_by_norm: whole gradients (no update as you go), every update
 * after the last gradient, each thread updating its own rows */
static void
test_mlp_clipped (void)
{
  model_extra = "clip_grad_by_norm = 0.5\n";
  compare_counts ("fmnist_mlp");
  model_extra = NULL;
}

/* The relus between the MLP's dense layers, done by those layers on 2
 * to 4 threads (core/relu_fusion.c): the forward of both (the first and
 * second layers' weights are split by rows at this batch), and the
 * backward of both (in the second layer's parts, and after the output
 * layer's product, which runs on the caller); that product made by
 * every thread for the second layer's parts (core/deriv_copies.c); and
 * the output layer and the loss by rows on every thread
 * (core/loss_tail.c). With the relu fusion and the copies, the same
 * weights bit for bit as with the relu layers' own passes and one
 * product (the same GEMM shapes); with the loss tail too, the same
 * within rounding (its products split rows: other shapes). On one
 * thread, none. */
static void
test_mlp_relu_fusion (void)
{
  size_t n = 0;
  float *one = train ("fmnist_mlp", 1, &n, NULL);
  CHECK (relu_fusions == 0 && deriv_copies == 0 && loss_tails == 0,
      "1 thread: %u relu passes fused, %u derivatives copied, %u losses "
      "in a dense layer", relu_fusions, deriv_copies, loss_tails);
  free (one);
  for (unsigned threads = 2; threads <= 4; threads++) {
    float *w0 = NULL;
    float *tail = train ("fmnist_mlp", threads, &n, &w0);
    CHECK (relu_fusions == 4 && deriv_copies == 1 && loss_tails == 1,
        "%u threads: %u relu passes fused, not 4; %u derivatives copied, "
        "not 1; %u losses in a dense layer, not 1", threads, relu_fusions,
        deriv_copies, loss_tails);
    loss_tail = false;
    float *fused = train ("fmnist_mlp", threads, &n, NULL);
    loss_tail = true;
    CHECK (relu_fusions == 4 && deriv_copies == 1 && loss_tails == 0,
        "%u threads, no loss tail: %u relu passes fused, not 4; %u "
        "derivatives copied, not 1; %u losses in a dense layer", threads,
        relu_fusions, deriv_copies, loss_tails);
    /* the loss tail's products split rows (other GEMM shapes): equal
     * within rounding, 1e-3 of the largest weight change */
    if (tail && fused && w0) {
      double change = 0, worst = 0;
      for (size_t i = 0; i < n; i++) {
        const double d = fabs ((double) fused[i] - w0[i]),
            e = fabs ((double) tail[i] - fused[i]);
        change = d > change ? d : change;
        worst = e > worst ? e : worst;
      }
      CHECK (change > 0 && worst <= 1e-3 * change, "%u threads: the loss "
          "tail's weights differ by %g (largest change %g)", threads, worst,
          change);
    }
    free (tail);
    free (w0);
    relu_fusion = false;
    float *apart = train ("fmnist_mlp", threads, &n, NULL);
    CHECK (relu_fusions == 0 && deriv_copies == 0 && loss_tails == 0,
        "%u threads, fusion off: %u relu passes fused, %u derivatives "
        "copied, %u losses in a dense layer", threads, relu_fusions,
        deriv_copies, loss_tails);
    relu_fusion = true;
    if (fused && apart)
      CHECK (memcmp (fused, apart, n * sizeof *fused) == 0, "%u threads: "
          "the fused relus gave other weights than the relu layers", threads);
    free (fused);
    free (apart);
  }
}

/* At batch 64 the output layer's forward is split by rows over the
 * threads (below, at 16, it runs on the caller): the same checks */
static void
test_mlp_batch64 (void)
{
  batch = 64;
  compare_counts ("fmnist_mlp");
  test_mlp_relu_fusion ();
  batch = 16;
}

static void
test_cnn (void)
{
  compare_counts ("fmnist_cnn");
}

static void
test_resnet_bn (void)
{
  compare_counts ("resnet_bn");
}

/* transposed convolution: samples by threads, filter gradients added in
 * thread order */
static void
test_conv_transpose (void)
{
  compare_counts ("conv_transpose");
}

int
main (int argc, char **argv)
{
  if (argc > 1)
    root = argv[1];
  /* every step split: the pool would otherwise run steps inline where
   * splitting does not pay (a loaded machine), and the comparison would
   * not see the split code */
  setenv ("TT_THREADS_STEPS", "split", 1);
  TT_TEST_RUN (test_mlp);
  TT_TEST_RUN (test_mlp_clipped);
  TT_TEST_RUN (test_mlp_relu_fusion);
  TT_TEST_RUN (test_mlp_batch64);
  TT_TEST_RUN (test_cnn);
  TT_TEST_RUN (test_resnet_bn);
  /* transposed convolution */
  TT_TEST_RUN (test_conv_transpose);
  return tt_test_summary ();
}
