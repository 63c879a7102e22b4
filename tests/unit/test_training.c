/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Training mechanics: optimizers and schedules against their closed forms,
 * initializer statistics, l2norm regularization, determinism given a seed,
 * uint8 and float32 inputs, partial batches, evaluation mode, a 1-D CNN
 * (conv1d) learning to tell waveforms apart, and an LSTM and a GRU
 * learning to carry a bit across noise steps.
 */
#include "tt_internal.h"
#include "tt_test.h"

#include <math.h>

/* A model compiled at that batch; seed 0 keeps the default seed. */
static tt_model *
training_model_seeded (const char *name, const char *text, uint32_t batch,
    uint64_t seed)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (tt_test_write_text (name, text), &err);
  CHECK (m != NULL, "%s: %s", name, err.message);
  if (!m)
    return NULL;
  if (seed)
    tt_model_set_seed (m, seed);
  tt_status st = tt_model_set_batch_size (m, batch, &err);
  if (!st)
    st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s: %s", name, err.message);
  if (st) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static tt_model *
training_model (const char *name, const char *text, uint32_t batch)
{
  return training_model_seeded (name, text, batch, 0);
}

static bool
near (double a, double b, double rel)
{
  return fabs (a - b) <= rel * fmax (fabs (a), fabs (b)) + 1e-12;
}

static void
test_optimizers (void)
{
  tt_optimizer o;
  memset (&o, 0, sizeof o);
  float w[3] = { 1.0f, -2.0f, 0.5f }, g[3] = { 0.5f, 0.25f, -1.0f };
  float s0[3] = { 0 }, s1[3] = { 0 };

  /* sgd: w - lr g */
  o.type = TT_OPT_SGD;
  o.learning_rate = 0.1f;
  tt_optimizer_apply (&o, 0, w, g, NULL, NULL, 3);
  CHECK (near (w[0], 0.95, 1e-6) && near (w[2], 0.6, 1e-6), "sgd %g %g",
      w[0], w[2]);

  /* sgd with momentum, two steps: buf = g, then mu g + g */
  o.momentum = 0.9f;
  w[0] = 1.0f;
  g[0] = 0.5f;
  s0[0] = 0;
  tt_optimizer_apply (&o, 0, w, g, s0, NULL, 1);
  tt_optimizer_apply (&o, 1, w, g, s0, NULL, 1);
  CHECK (near (w[0], 1.0 - 0.1 * 0.5 - 0.1 * (0.9 * 0.5 + 0.5), 1e-6),
      "momentum %g", w[0]);

  /* adam step 1: w - lr g / (|g| + eps) */
  o.type = TT_OPT_ADAM;
  o.momentum = 0;
  o.beta1 = 0.9f;
  o.beta2 = 0.999f;
  o.epsilon = 1e-7f;
  o.learning_rate = 0.01f;
  w[0] = 1.0f;
  g[0] = 0.5f;
  s0[0] = s1[0] = 0;
  tt_optimizer_apply (&o, 0, w, g, s0, s1, 1);
  CHECK (near (w[0], 1.0 - 0.01 * 0.5 / (0.5 + 1e-7), 1e-5), "adam %g", w[0]);
  CHECK (near (s0[0], 0.05, 1e-4) && near (s1[0], 0.001 * 0.25, 1e-4),
      "adam moments %g %g", s0[0], s1[0]);

  /* adamw: decay decoupled from the moments */
  o.type = TT_OPT_ADAMW;
  o.weight_decay = 0.1f;
  w[0] = 1.0f;
  s0[0] = s1[0] = 0;
  tt_optimizer_apply (&o, 0, w, g, s0, s1, 1);
  CHECK (near (w[0], 1.0 * (1 - 0.01 * 0.1) - 0.01 * 0.5 / (0.5 + 1e-7),
          1e-5), "adamw %g", w[0]);
  CHECK (near (s0[0], 0.05, 1e-5), "adamw keeps decay out of m: %g", s0[0]);
}

static void
test_schedules (void)
{
  const char *base = "[Model]\ntype=NeuralNetwork\nloss=mse\n"
      "[Optimizer]\ntype=sgd\nlearning_rate=0.1\n%s"
      "[in]\ntype=input\ninput_shape=1:1:2\n[fc]\ntype=fully_connected\n"
      "unit=1\n";
  char ini[1024];
  struct
  {
    const char *sched;
    uint32_t it[3];
    double lr[3];
  } cases[] = {
    {"", {0, 10, 1000}, {0.1, 0.1, 0.1}},
    /* nntrainer's: continuous, not a staircase */
    {"[LearningRateScheduler]\ntype=exponential\nlearning_rate=0.1\n"
          "decay_rate=0.5\ndecay_steps=10\n", {0, 5, 20},
        {0.1, 0.0707106781, 0.025}},
    {"[LearningRateScheduler]\ntype=step\nlearning_rate=0.1,0.01,0.001\n"
          "iteration=5,8\n", {4, 5, 8}, {0.1, 0.01, 0.001}},
    {"[LearningRateScheduler]\ntype=cosine\nmax_learning_rate=0.1\n"
          "min_learning_rate=0.0\ndecay_steps=100\n", {0, 50, 200},
        {0.1, 0.05, 0.0}},
    {"[LearningRateScheduler]\ntype=linear\nmax_learning_rate=0.1\n"
          "min_learning_rate=0.02\ndecay_steps=10\n", {0, 5, 99},
        {0.1, 0.06, 0.02}},
    {"[LearningRateScheduler]\ntype=constant\nlearning_rate=0.3\n",
        {0, 7, 70}, {0.3, 0.3, 0.3}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    snprintf (ini, sizeof ini, base, cases[c].sched);
    tt_model *m = training_model ("sched.ini", ini, 1);
    if (!m)
      continue;
    for (int k = 0; k < 3; k++) {
      double lr = tt_optimizer_learning_rate (&m->opt, cases[c].it[k]);
      CHECK (near (lr, cases[c].lr[k], 1e-5) || (cases[c].lr[k] == 0 &&
              fabs (lr) < 1e-9), "schedule %zu at %u: %g, expected %g", c,
          cases[c].it[k], lr, cases[c].lr[k]);
    }
    tt_model_free (m);
  }
}

/* nntrainer's older form: the optimizer in [Model] (adam by default,
 * decay as an exponential schedule), weight_decay = l2norm with
 * weight_decay_lambda for the regularizer. */
static void
test_legacy_optimizer (void)
{
  static const char legacy[] =
      "[Model]\ntype=NeuralNetwork\nloss=mse\nlearning_rate=0.02\n"
      "decay_rate=0.5\ndecay_steps=100\nbeta2=0.9999\nepsilon=1e-6\n"
      "[in]\ntype=input\ninput_shape=1:1:2\n[fc]\ntype=fully_connected\n"
      "unit=1\nweight_decay=l2norm\nweight_decay_lambda=0.005\n";
  tt_model *m = training_model ("legacy.ini", legacy, 1);
  if (!m)
    return;
  CHECK (m->opt.type == TT_OPT_ADAM, "optimizer %d, expected adam",
      (int) m->opt.type);
  CHECK (near (m->opt.beta2, 0.9999, 1e-7) && near (m->opt.epsilon, 1e-6,
          1e-7) && near (m->opt.beta1, 0.9, 1e-7), "adam settings");
  CHECK (near (tt_optimizer_learning_rate (&m->opt, 200), 0.005, 1e-6),
      "decayed rate %g", tt_optimizer_learning_rate (&m->opt, 200));
  const tt_layer *fc = NULL;
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (!strcmp (m->layers[i].name, "fc"))
      fc = &m->layers[i];
  CHECK (fc && near (fc->l2_constant, 0.005, 1e-6) && fc->weight_decay == 0,
      "regularizer %g, decay %g", fc ? fc->l2_constant : -1.0,
      fc ? fc->weight_decay : -1.0);
  tt_model_free (m);

  static const char sgd[] =
      "[Model]\ntype=NeuralNetwork\nloss=mse\noptimizer=sgd\n"
      "learning_rate=0.3\n[in]\ntype=input\ninput_shape=1:1:2\n"
      "[fc]\ntype=fully_connected\nunit=1\n";
  m = training_model ("legacy_sgd.ini", sgd, 1);
  if (!m)
    return;
  CHECK (m->opt.type == TT_OPT_SGD
      && near (tt_optimizer_learning_rate (&m->opt, 1000), 0.3, 1e-7),
      "legacy sgd");
  tt_model_free (m);
}

static void
test_initializers (void)
{
  enum
  { N = 200000 };
  static float w[N];
  tt_rng rng;
  tt_rng_seed (&rng, 3);
  const uint32_t fi = 50, fo = 150;
  struct
  {
    tt_initializer init;
    double variance;
  } cases[] = {
    {TT_INIT_LECUN_NORMAL, 1.0 / fi}, {TT_INIT_LECUN_UNIFORM, 1.0 / fi},
    {TT_INIT_XAVIER_NORMAL, 2.0 / (fi + fo)},
    {TT_INIT_XAVIER_UNIFORM, 2.0 / (fi + fo)},
    {TT_INIT_HE_NORMAL, 2.0 / fi}, {TT_INIT_HE_UNIFORM, 2.0 / fi},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    tt_initializer_fill (&rng, cases[c].init, w, N, fi, fo);
    double sum = 0, sq = 0;
    for (int i = 0; i < N; i++)
      sum += w[i];
    double mean = sum / N;
    for (int i = 0; i < N; i++)
      sq += (w[i] - mean) * (w[i] - mean);
    double var = sq / N;
    CHECK (fabs (mean) < 0.01 * sqrt (cases[c].variance) * 5,
        "%s mean %g", tt_initializer_names[cases[c].init], mean);
    CHECK (near (var, cases[c].variance, 0.03), "%s variance %g, expected %g",
        tt_initializer_names[cases[c].init], var, cases[c].variance);
  }
  tt_initializer_fill (&rng, TT_INIT_ONES, w, 10, fi, fo);
  CHECK (w[0] == 1.0f && w[9] == 1.0f, "ones");
  tt_initializer_fill (&rng, TT_INIT_ZEROS, w, 10, fi, fo);
  CHECK (w[0] == 0.0f && w[9] == 0.0f, "zeros");
}

/* The dropout's byte mask (tt_rng_mask_bytes) keeps exactly the float
 * mask's elements from the same stream, consuming the same draws, and
 * tt_dropout_apply's products are the float mask's bit for bit (signed
 * zeros included), in place too. */
static void
test_dropout_mask_bytes (void)
{
  enum
  { N = 100003 };
  static float wide[N], x[N], by_float[N], by_bytes[N];
  static uint8_t bytes[N];
  const float rates[] = { 0.0f, 0.2f, 0.4f, 0.5f, 0.999f };
  for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
    const float rate = rates[r], keep = 1.0f / (1.0f - rate);
    tt_rng a, b;
    tt_rng_seed (&a, 7 + r);
    b = a;
    tt_rng_mask (&a, wide, N, rate, keep);
    tt_rng_mask_bytes (&b, bytes, N, rate);
    size_t differ = 0, dropped = 0;
    for (size_t i = 0; i < N; i++) {
      differ += wide[i] != (bytes[i] ? keep : 0.0f) || bytes[i] > 1;
      dropped += !bytes[i];
    }
    CHECK (differ == 0, "rate %g: %zu of %d elements differ", rate, differ, N);
    CHECK (!memcmp (&a, &b, sizeof a) && tt_rng_next (&a) == tt_rng_next (&b),
        "rate %g: the byte mask consumed other draws", rate);
    /* the rule itself: about rate of the elements dropped */
    const double frac = (double) dropped / N;
    CHECK (fabs (frac - rate) < 0.01, "rate %g: %g dropped", rate, frac);
    for (size_t i = 0; i < N; i++)
      x[i] = (float) ((int) (i % 7) - 3) * 0.37f;
    for (size_t i = 0; i < N; i++)
      by_float[i] = x[i] * wide[i];
    tt_dropout_apply (x, bytes, keep, by_bytes, N);
    CHECK (!memcmp (by_float, by_bytes, sizeof by_float),
        "rate %g: products differ from the float mask's", rate);
    tt_dropout_apply (x, bytes, keep, x, N);
    CHECK (!memcmp (by_float, x, sizeof x), "rate %g: in place differs", rate);
  }
}

static const char *mlp_ini =
    "[Model]\ntype=NeuralNetwork\nloss=cross\n"
    "[Optimizer]\ntype=adam\nlearning_rate=0.01\n"
    "[in]\ntype=input\ninput_shape=1:4:4\nnormalization=true\n"
    "[flat]\ntype=flatten\n"
    "[h]\ntype=fully_connected\nunit=8\nactivation=relu\n"
    "[drop]\ntype=dropout\ndropout_rate=0.25\n"
    "[out]\ntype=fully_connected\nunit=3\nactivation=softmax\n";

static void
training_data (uint8_t * x, float *t, int n)
{
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < 16; k++)
      x[i * 16 + k] = (uint8_t) ((i * 37 + k * 11 + (k == i % 3) * 90) % 256);
    for (int k = 0; k < 3; k++)
      t[i * 3 + k] = k == i % 3;
  }
}

/* Trains 20 steps with the given seed and saves the weights to name. */
static const char *
training_run (uint64_t seed, const char *name)
{
  static char path[512];
  uint8_t x[8 * 16];
  float t[8 * 3];
  tt_dtype u8 = TT_DTYPE_UINT8;
  tt_error err;
  training_data (x, t, 8);
  tt_model *m = tt_model_load_ini (tt_test_write_text ("det.ini", mlp_ini),
      &err);
  if (!m)
    return NULL;
  tt_model_set_seed (m, seed);
  tt_model_set_batch_size (m, 8, &err);
  tt_model_compile (m, &err);
  const void *in[1] = { x };
  for (int s = 0; s < 20; s++)
    tt_model_train_batch (m, 8, in, &u8, t, NULL, &err);
  snprintf (path, sizeof path, "%s", tt_test_write_text (name, ""));
  tt_model_save_bin (m, path, &err);
  tt_model_free (m);
  return path;
}

static size_t
file_read (const char *path, char *buf, size_t cap)
{
  FILE *f = fopen (path, "rb");
  if (!f)
    return 0;
  size_t n = fread (buf, 1, cap, f);
  fclose (f);
  return n;
}

static void
test_determinism (void)
{
  static char a[1 << 16], b[1 << 16], c[1 << 16];
  char pa[512], pb[512];
  snprintf (pa, sizeof pa, "%s", training_run (11, "a.bin"));
  snprintf (pb, sizeof pb, "%s", training_run (11, "b.bin"));
  size_t na = file_read (pa, a, sizeof a), nb = file_read (pb, b, sizeof b);
  const char *pc = training_run (12, "c.bin");
  size_t nc = file_read (pc, c, sizeof c);
  CHECK (na > 0 && na == nb && !memcmp (a, b, na),
      "same seed, different weights");
  CHECK (nc == na && memcmp (a, c, na) != 0,
      "a different seed gave the same weights");
}

static void
test_inputs_and_batches (void)
{
  tt_error err;
  tt_model *m = training_model ("io.ini", mlp_ini, 8);
  if (!m)
    return;
  uint8_t x[8 * 16];
  float xf[8 * 16], t[8 * 3];
  training_data (x, t, 8);
  /* every sample spans 0..255, so that the input layer's normalization
   * (one min and max over the whole batch, as nntrainer's) gives each row
   * the same values in a batch of 8 as in a batch of 3 */
  for (int i = 0; i < 8; i++) {
    x[i * 16 + 14] = 0;
    x[i * 16 + 15] = 255;
  }
  for (int i = 0; i < 8 * 16; i++)
    xf[i] = x[i];
  tt_dtype u8 = TT_DTYPE_UINT8, f32 = TT_DTYPE_FLOAT32;
  float out_u8[8 * 3], out_f32[8 * 3], out_part[3 * 3];
  const void *in_u8[1] = { x }, *in_f32[1] = { xf };
  tt_batch_result r;

  CHECK (tt_model_eval_batch (m, 8, in_u8, &u8, t, &r, &err) == TT_OK,
      "%s", err.message);
  memcpy (out_u8, tt_model_output (m), sizeof out_u8);
  CHECK (r.samples == 8 && isfinite (r.loss), "eval result");
  CHECK (tt_model_eval_batch (m, 8, in_f32, &f32, NULL, &r, &err) == TT_OK,
      "%s", err.message);
  memcpy (out_f32, tt_model_output (m), sizeof out_f32);
  CHECK (!memcmp (out_u8, out_f32, sizeof out_u8),
      "uint8 and float32 inputs differ");
  CHECK (isnan (r.loss) && r.correct == 0, "no labels: loss is NaN");

  /* evaluation rows are independent: a partial batch gives the same rows.
   * The portable kernels compute a row the same way whatever the batch, so
   * bit for bit; OpenBLAS picks its kernel (and so its summation order) by
   * the matrix shape and the CPU (OPENBLAS_CORETYPE), so only within float
   * rounding of the 16-term dot products: 1e-6 relative. */
  CHECK (tt_model_eval_batch (m, 3, in_u8, &u8, t, &r, &err) == TT_OK,
      "%s", err.message);
  memcpy (out_part, tt_model_output (m), sizeof out_part);
#ifdef TT_HAVE_CBLAS
  double worst = 0;
  for (size_t i = 0; i < sizeof out_part / sizeof *out_part; i++) {
    double d = fabs ((double) out_part[i] - out_u8[i]) /
        (fabs ((double) out_u8[i]) + 1e-6);
    worst = d > worst ? d : worst;
  }
  CHECK (worst <= 1e-6, "partial batch changes the outputs (worst relative "
      "difference %.3g)", worst);
#else
  CHECK (!memcmp (out_part, out_u8, sizeof out_part),
      "partial batch changes the outputs");
#endif
  CHECK (r.samples == 3, "partial batch counted %u", r.samples);

  /* evaluation mode ignores dropout: two passes agree */
  tt_model_eval_batch (m, 8, in_u8, &u8, t, &r, &err);
  CHECK (!memcmp (tt_model_output (m), out_u8, sizeof out_u8),
      "evaluation is not deterministic");

  /* bad batch sizes and dtypes are errors, not crashes */
  CHECK (tt_model_train_batch (m, 9, in_u8, &u8, t, &r, &err) ==
      TT_ERR_INVALID && strstr (err.message, "9 samples"), "%s", err.message);
  CHECK (tt_model_train_batch (m, 0, in_u8, &u8, t, &r, &err) ==
      TT_ERR_INVALID, "zero samples");
  CHECK (tt_model_train_batch (m, 8, in_u8, &u8, NULL, &r, &err) ==
      TT_ERR_INVALID, "no labels");
  tt_dtype bogus = (tt_dtype) 42;
  CHECK (tt_model_train_batch (m, 8, in_u8, &bogus, t, &r, &err) ==
      TT_ERR_INVALID && strstr (err.message, "data type"), "%s", err.message);

  /* a partial training batch trains */
  uint32_t it = tt_model_iteration (m);
  CHECK (tt_model_train_batch (m, 5, in_u8, &u8, t, &r, &err) == TT_OK &&
      r.samples == 5 && tt_model_iteration (m) == it + 1, "partial train");

  /* training lowers the loss on a learnable batch */
  double first = 0, last = 0;
  for (int s = 0; s < 300; s++) {
    tt_model_train_batch (m, 8, in_u8, &u8, t, &r, &err);
    if (s == 0)
      first = r.loss;
    last = r.loss;
  }
  CHECK (last < first * 0.5, "loss went from %g to %g", first, last);

  /* NaN input: the step is refused and the weights stay finite */
  xf[5] = NAN;
  CHECK (tt_model_train_batch (m, 8, in_f32, &f32, t, &r, &err) ==
      TT_ERR_NUMERIC && strstr (err.message, "not applied"), "%s", err.message);
  xf[5] = 1;
  CHECK (tt_model_eval_batch (m, 8, in_f32, &f32, t, &r, &err) == TT_OK &&
      isfinite (r.loss), "weights damaged by a refused step");
  tt_model_free (m);
}

static void
test_l2norm (void)
{
  const char *ini = "[Model]\ntype=NeuralNetwork\nloss=mse\n"
      "[Optimizer]\ntype=sgd\nlearning_rate=0.1\n"
      "[in]\ntype=input\ninput_shape=1:1:3\n"
      "[fc]\ntype=fully_connected\nunit=2\nweight_regularizer=l2norm\n"
      "weight_regularizer_constant=0.5\nbias_initializer=ones\n";
  tt_model *m = training_model ("l2.ini", ini, 2);
  if (!m)
    return;
  tt_error err;
  float x[6] = { 1, 2, 3, -1, 0.5f, 2 }, t[4] = { 1, 0, 0, 1 };
  const void *in[1] = { x };
  tt_weight *w = &m->layers[1].weights[0];
  float before[6], grad[6];
  memcpy (before, tt_data (m, w->value), sizeof before);
  double data_loss;
  tt_model_gradients (m, 2, in, NULL, t, true, &data_loss, &err);
  memcpy (grad, tt_data (m, w->grad), sizeof grad);
  tt_batch_result r;
  tt_model_train_batch (m, 2, in, NULL, t, &r, &err);
  double sq = 0;
  for (int i = 0; i < 6; i++)
    sq += (double) before[i] * before[i];
  CHECK (near (r.loss, data_loss + 0.25 * sq, 1e-5),
      "l2 loss %g, expected %g", r.loss, data_loss + 0.25 * sq);
  const float *after = tt_data (m, w->value);
  for (int i = 0; i < 6; i++)
    CHECK (near (after[i], before[i] - 0.1 * (grad[i] + 0.5 * before[i]),
            1e-5), "l2 update [%d]: %g", i, after[i]);
  tt_model_free (m);
}

/* conv -> relu -> max pool runs as conv -> max pool -> relu (graph.c):
 * the same numbers, bit for bit, as the model written that way, and the
 * relu's tensors have the pooled shape. An average pooling keeps its
 * relu in front (they do not commute). */
static tt_model *
relu_pool_model (const char *name, const char *layers, uint32_t batch)
{
  char text[1024];
  snprintf (text, sizeof text, "[Model]\ntype=NeuralNetwork\nloss=cross\n"
      "[Optimizer]\ntype=adam\nlearning_rate=0.01\n"
      "[in]\ntype=input\ninput_shape=2:6:6\n%s"
      "[out]\ntype=fully_connected\nunit=3\nactivation=softmax\n", layers);
  return training_model_seeded (name, text, batch, 5);
}

static void
test_relu_after_max_pool (void)
{
  tt_model *a = relu_pool_model ("relu_pool.ini",
      "[conv]\ntype=conv2d\nfilters=3\nkernel_size=3,3\npadding=same\n"
      "activation=relu\n"
      "[pool]\ntype=pooling2d\npooling=max\npool_size=2,2\nstride=2,2\n"
      "flatten=true\n", 4);
  tt_model *b = relu_pool_model ("pool_relu.ini",
      "[conv]\ntype=conv2d\nfilters=3\nkernel_size=3,3\npadding=same\n"
      "[pool]\ntype=pooling2d\npooling=max\npool_size=2,2\nstride=2,2\n"
      "[relu]\ntype=activation\nactivation=relu\nflatten=true\n", 4);
  tt_model *c = relu_pool_model ("relu_avg.ini",
      "[conv]\ntype=conv2d\nfilters=3\nkernel_size=3,3\npadding=same\n"
      "activation=relu\n"
      "[pool]\ntype=pooling2d\npooling=average\npool_size=2,2\n"
      "stride=2,2\nflatten=true\n", 4);
  if (!a || !b || !c)
    goto out;
  const int ia = tt_model_find_layer (a, "conv/activation_realized");
  const int ic = tt_model_find_layer (c, "conv/activation_realized");
  const tt_layer *ra = ia >= 0 ? &a->layers[ia] : NULL;
  const tt_layer *rc = ic >= 0 ? &c->layers[ic] : NULL;
  CHECK (ra && ra->out_dims[0].c == 3 && ra->out_dims[0].h == 3 &&
      ra->out_dims[0].w == 3, "the relu before a max pool runs after it");
  CHECK (rc && rc->out_dims[0].h == 6 && rc->out_dims[0].w == 6,
      "the relu before an average pool stays in front");

  float x[4 * 72], t[4 * 3] = { 0 };
  uint32_t seed = 7;
  for (int i = 0; i < 4 * 72; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float) (seed >> 8) / (float) (1 << 24) * 2.0f - 1.0f;
  }
  for (int k = 0; k < 4; k++)
    t[k * 3 + k % 3] = 1;
  const void *in[1] = { x };
  tt_error err;
  tt_batch_result r;
  for (int s = 0; s < 3; s++) {
    CHECK (tt_model_train_batch (a, 4, in, NULL, t, &r, &err) == TT_OK,
        "%s", err.message);
    CHECK (tt_model_train_batch (b, 4, in, NULL, t, &r, &err) == TT_OK,
        "%s", err.message);
  }
  const size_t n = tt_model_weight_floats (a);
  CHECK (n == tt_model_weight_floats (b), "weights %zu vs %zu", n,
      tt_model_weight_floats (b));
  float *wa = calloc (n, sizeof *wa), *wb = calloc (n, sizeof *wb);
  CHECK (wa && wb && tt_model_export_weights (a, wa, n, &err) == TT_OK
      && tt_model_export_weights (b, wb, n, &err) == TT_OK, "export");
  CHECK (wa && wb && !memcmp (wa, wb, n * sizeof *wa),
      "3 steps: the weights differ from the model written pool -> relu");
  free (wa);
  free (wb);
  tt_model_eval_batch (a, 4, in, NULL, t, &r, &err);
  float ya[12];
  memcpy (ya, tt_model_output (a), sizeof ya);
  tt_model_eval_batch (b, 4, in, NULL, t, &r, &err);
  CHECK (!memcmp (ya, tt_model_output (b), sizeof ya),
      "the outputs differ from the model written pool -> relu");
out:
  tt_model_free (a);
  tt_model_free (b);
  tt_model_free (c);
}

/* Trains m (batch 16) for 300 steps on fresh samples from sample (x_per
 * input and t_per label floats each, seed 1), then counts how many of 128
 * held-out samples (seed 2) it gets right. */
static uint32_t
learn_and_score (tt_model * m, size_t x_per, size_t t_per,
    void (*sample) (uint64_t * state, float *x, float *t))
{
  float *x = malloc (16 * x_per * sizeof *x);
  float *t = malloc (16 * t_per * sizeof *t);
  const void *in[1] = { x };
  tt_batch_result r;
  tt_error err;
  uint64_t train_rng = 1, test_rng = 2;
  uint32_t correct = 0, seen = 0;
  for (int step = 0; step < 300; step++) {
    for (int i = 0; i < 16; i++)
      sample (&train_rng, x + i * x_per, t + i * t_per);
    if (tt_model_train_batch (m, 16, in, NULL, t, &r, &err) != TT_OK) {
      CHECK (false, "step %d: %s", step, err.message);
      break;
    }
  }
  for (int b = 0; b < 8; b++) {
    for (int i = 0; i < 16; i++)
      sample (&test_rng, x + i * x_per, t + i * t_per);
    CHECK (tt_model_eval_batch (m, 16, in, NULL, t, &r, &err) == TT_OK,
        "%s", err.message);
    correct += r.correct;
    seen += r.samples;
  }
  CHECK (seen == 128, "%u held-out samples evaluated", seen);
  free (x);
  free (t);
  return correct;
}

/* Sample of a 4-class waveform problem on 3 axes x 32 steps (channel-major,
 * as channel:1:width): classes 0..2 put a slow sine (2 periods) on axis
 * 0..2, class 3 a fast one (5 periods) on axis 0; random phase, noise on
 * every axis. */
static void
waveform_sample (uint64_t * state, float *x, float *t)
{
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  const int c = (int) ((*state >> 33) % 4);
  const double phase = (double) ((*state >> 11) & 0xffff) / 65536.0 * 6.283;
  const int axis = c == 3 ? 0 : c;
  const double periods = c == 3 ? 5 : 2;
  for (int a = 0; a < 3; a++)
    for (int i = 0; i < 32; i++) {
      *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
      double v = ((double) ((*state >> 40) & 0xffff) / 65536.0 - 0.5) * 0.6;
      if (a == axis)
        v += sin (phase + 6.283185307 * periods * i / 32.0);
      x[a * 32 + i] = (float) v;
    }
  for (int k = 0; k < 4; k++)
    t[k] = k == c ? 1.0f : 0.0f;
}

static void
test_conv1d_learns (void)
{
  static const char ini[] =
      "[Model]\ntype=NeuralNetwork\nbatch_size=16\nloss=cross\n"
      "[Optimizer]\ntype=adam\nlearning_rate=0.01\n"
      "[in]\ntype=input\ninput_shape=3:1:32\n"
      "[c1]\ntype=conv1d\nfilters=8\nkernel_size=5\npadding=same\n"
      "activation=relu\n"
      "[p1]\ntype=pooling2d\npooling=max\npool_size=1,2\nstride=1,2\n"
      "[c2]\ntype=conv1d\nfilters=8\nkernel_size=3\nactivation=tanh\n"
      "[gap]\ntype=pooling2d\npooling=global_average\n"
      "[flat]\ntype=flatten\n"
      "[out]\ntype=fully_connected\nunit=4\nactivation=softmax\n";
  tt_model *m = training_model_seeded ("conv1d.ini", ini, 16, 7);
  if (!m)
    return;
  const uint32_t correct = learn_and_score (m, 96, 4, waveform_sample);
  CHECK (correct >= 0.9 * 128, "conv1d: %u of 128 held-out waveforms right",
      correct);
  printf ("conv1d: %u of 128 held-out waveforms right after 300 steps\n",
      correct);
  tt_model_free (m);
}

/* Sample of a memory task over 12 steps of 2 features (1:12:2): at one
 * step among the first four a marker (feature 0 = 1) comes with the
 * sample's bit in feature 1 (+-1); every other step has feature 0 = 0 and
 * noise of the same size in feature 1. The class is the bit, so the last
 * step's hidden state must carry it across 8 to 11 noise steps. */
static void
memory_sample (uint64_t * state, float *x, float *t)
{
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  const int bit = (int) ((*state >> 33) & 1);
  const int at = (int) ((*state >> 40) % 4);
  for (int i = 0; i < 12; i++) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    const float noise = (float) ((*state >> 40) & 0xffff) / 65536.0f * 2.0f
        - 1.0f;
    x[2 * i] = i == at ? 1.0f : 0.0f;
    x[2 * i + 1] = i == at ? (bit ? 1.0f : -1.0f) : noise;
  }
  t[0] = bit ? 0.0f : 1.0f;
  t[1] = bit ? 1.0f : 0.0f;
}

static void
test_lstm_learns (void)
{
  static const char ini[] =
      "[Model]\ntype=NeuralNetwork\nbatch_size=16\nloss=cross\n"
      "[Optimizer]\ntype=adam\nlearning_rate=0.01\n"
      "[in]\ntype=input\ninput_shape=1:12:2\n"
      "[rnn]\ntype=lstm\nunit=16\n"
      "[out]\ntype=fully_connected\nunit=2\nactivation=softmax\n";
  tt_model *m = training_model_seeded ("lstm.ini", ini, 16, 7);
  if (!m)
    return;
  const uint32_t correct = learn_and_score (m, 24, 2, memory_sample);
  CHECK (correct >= 0.95 * 128, "lstm: %u of 128 held-out sequences right",
      correct);
  printf ("lstm: %u of 128 held-out sequences right after 300 steps\n",
      correct);
  tt_model_free (m);
}

/* The same memory task for a GRU, the first layer without reset_after
 * (r applied to h before W_hg), the second with it (nntrainer's default) */
static void
test_gru_learns (void)
{
  static const char ini[] =
      "[Model]\ntype=NeuralNetwork\nbatch_size=16\nloss=cross\n"
      "[Optimizer]\ntype=adam\nlearning_rate=0.01\n"
      "[in]\ntype=input\ninput_shape=1:12:2\n"
      "[rnn1]\ntype=gru\nunit=16\nreturn_sequences=true\n"
      "reset_after=false\n"
      "[rnn2]\ntype=gru\nunit=8\n"
      "[out]\ntype=fully_connected\nunit=2\nactivation=softmax\n";
  tt_model *m = training_model_seeded ("gru.ini", ini, 16, 7);
  if (!m)
    return;
  const uint32_t correct = learn_and_score (m, 24, 2, memory_sample);
  CHECK (correct >= 0.95 * 128, "gru: %u of 128 held-out sequences right",
      correct);
  printf ("gru: %u of 128 held-out sequences right after 300 steps\n", correct);
  tt_model_free (m);
}

/* batch_normalization's weight_decay (gamma) and bias_decay (beta): one
 * sgd step with the decays equals the step without them minus
 * lr * decay * value, the moving statistics unchanged. */
static void
test_bn_decay (void)
{
#define BN_DECAY_INI(keys) "[Model]\ntype=NeuralNetwork\nloss=mse\n" \
      "[Optimizer]\ntype=sgd\nlearning_rate=0.1\n" \
      "[in]\ntype=input\ninput_shape=1:1:3\n" \
      "[bn]\ntype=batch_normalization\nbeta_initializer=ones\n" keys \
      "[fc]\ntype=fully_connected\nunit=2\n"
  tt_model *a = training_model ("bn_decay.ini",
      BN_DECAY_INI ("weight_decay=0.5\nbias_decay=0.25\n"), 4);
  tt_model *b = training_model ("bn_nodecay.ini", BN_DECAY_INI (""), 4);
#undef BN_DECAY_INI
  if (!a || !b) {
    tt_model_free (a);
    tt_model_free (b);
    return;
  }
  tt_error err;
  float x[12] = { 1, 2, 3, -1, 0.5f, 2, 0, 1, -2, 3, 1, 0.25f };
  float t[8] = { 1, 0, 0, 1, 0.5f, 0.5f, 0, 0 };
  const void *in[1] = { x };
  tt_layer *la = &a->layers[1], *lb = &b->layers[1];
  CHECK (!strcmp (la->name, "bn") && la->n_weights == 4, "bn layer %s",
      la->name);
  float before[2][3];
  for (int k = 0; k < 2; k++)
    memcpy (before[k], tt_data (a, la->weights[2 + k].value), sizeof before[k]);
  tt_batch_result r;
  CHECK (tt_model_train_batch (a, 4, in, NULL, t, &r, &err) == TT_OK, "%s",
      err.message);
  CHECK (tt_model_train_batch (b, 4, in, NULL, t, &r, &err) == TT_OK, "%s",
      err.message);
  const float decay[2] = { 0.5f, 0.25f };
  for (int k = 0; k < 2; k++) {
    const float *wa = tt_data (a, la->weights[2 + k].value);
    const float *wb = tt_data (b, lb->weights[2 + k].value);
    for (int i = 0; i < 3; i++)
      CHECK (near (wa[i], wb[i] - 0.1 * decay[k] * before[k][i], 1e-6),
          "%s[%d]: %g, expected %g", k ? "beta" : "gamma", i, wa[i],
          wb[i] - 0.1 * decay[k] * before[k][i]);
  }
  for (int k = 0; k < 2; k++)
    CHECK (!memcmp (tt_data (a, la->weights[k].value),
            tt_data (b, lb->weights[k].value), 3 * sizeof (float)),
        "moving statistics %d differ", k);
  tt_model_free (a);
  tt_model_free (b);
}

/* dropout_rate on lstm and gru: in training about rate of the hidden
 * states are 0 (each step's output shows the masked state) */
static void
test_recurrent_dropout (void)
{
  static const char *const types[2] = { "lstm", "gru" };
  for (int k = 0; k < 2; k++) {
    char ini[512];
    snprintf (ini, sizeof ini, "[Model]\ntype=NeuralNetwork\nloss=mse\n"
        "[Optimizer]\ntype=sgd\nlearning_rate=0.1\n"
        "[in]\ntype=input\ninput_shape=1:8:4\n"
        "[r]\ntype=%s\nunit=64\nreturn_sequences=true\n"
        "dropout_rate=0.25\nbias_initializer=ones\n", types[k]);
    tt_model *m = training_model ("recurrent_dropout.ini", ini, 4);
    if (!m)
      continue;
    static float x[4 * 8 * 4], t[4 * 8 * 64];
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
      x[i] = (float) ((i * 37) % 11) / 11.0f - 0.5f;
    const void *in[1] = { x };
    tt_error err;
    double loss;
    CHECK (tt_model_gradients (m, 4, in, NULL, t, false, &loss, &err) ==
        TT_OK, "%s: %s", types[k], err.message);
    const tt_layer *l = &m->layers[1];
    const float *y = tt_data (m, l->out[0]);
    int zeros = 0;
    for (int i = 0; i < 4 * 8 * 64; i++)
      zeros += y[i] == 0.0f;
    CHECK (zeros > 0.2 * 2048 && zeros < 0.3 * 2048,
        "%s: %d of 2048 hidden states dropped, expected about 512",
        types[k], zeros);
    tt_model_free (m);
  }
}

int
main (void)
{
  TT_TEST_RUN (test_optimizers);
  TT_TEST_RUN (test_schedules);
  TT_TEST_RUN (test_legacy_optimizer);
  TT_TEST_RUN (test_initializers);
  TT_TEST_RUN (test_dropout_mask_bytes);
  TT_TEST_RUN (test_relu_after_max_pool);
  TT_TEST_RUN (test_determinism);
  TT_TEST_RUN (test_inputs_and_batches);
  TT_TEST_RUN (test_l2norm);
  TT_TEST_RUN (test_conv1d_learns);
  TT_TEST_RUN (test_lstm_learns);
  TT_TEST_RUN (test_gru_learns);
  TT_TEST_RUN (test_bn_decay);
  TT_TEST_RUN (test_recurrent_dropout);
  return tt_test_summary ();
}
