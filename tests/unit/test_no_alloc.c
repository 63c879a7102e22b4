/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A training step makes no heap allocation: every tensor lives in the pool
 * allocated by compile. This program replaces malloc and friends with
 * counting wrappers around glibc's own allocator and asserts that N
 * training and evaluation steps of the MLP and the CNN allocate nothing,
 * profiled (tt_model_set_profiling) or not.
 * (Not built with sanitizers, which own malloc themselves.)
 *
 * usage: test_no_alloc SOURCE_ROOT
 */
#include "tt_engine.h"
#include "tt_test.h"
#include "tt_test_hooks.h"

#include <stdint.h>
#include <string.h>

extern void *__libc_malloc (size_t);
extern void *__libc_calloc (size_t, size_t);
extern void *__libc_realloc (void *, size_t);
extern void *__libc_memalign (size_t, size_t);
extern void __libc_free (void *);

static volatile int counting;
static volatile long allocations;

void *
malloc (size_t n)
{
  if (counting)
    allocations++;
  return __libc_malloc (n);
}

void *
calloc (size_t n, size_t s)
{
  if (counting)
    allocations++;
  return __libc_calloc (n, s);
}

void *
realloc (void *p, size_t n)
{
  if (counting)
    allocations++;
  return __libc_realloc (p, n);
}

void *
aligned_alloc (size_t a, size_t n)
{
  if (counting)
    allocations++;
  return __libc_memalign (a, n);
}

int
posix_memalign (void **p, size_t a, size_t n)
{
  if (counting)
    allocations++;
  *p = __libc_memalign (a, n);
  return *p ? 0 : 12;
}

void
free (void *p)
{
  __libc_free (p);
}

/* personalization: what trains in no_alloc_model (NULL: everything) */
static const char *na_train;
/* mixed precision: the precision override (NULL: the INI's), and loss
 * scaling's growth interval (0: the default) */
static const char *na_precision;
static uint32_t na_growth;
/* memory limits: the model's INI text instead of the file (NULL: the
 * file), compiled under the smallest feasible limit */
static const char *na_text;

static void
no_alloc_model (const char *root, const char *name, unsigned threads,
    bool profile)
{
  char path[1024];
  tt_error err;
  snprintf (path, sizeof path, "%s/tests/models/%s", root, name);
  tt_model *m = na_text ? tt_model_load_ini_text (na_text, strlen (na_text),
      name, &err) : tt_model_load_ini (path, &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return;
  /* the smallest feasible limit, as a limit of 4096 bytes names it */
  if (na_text) {
    tt_model *probe = tt_model_load_ini_text (na_text, strlen (na_text),
        name, &err);
    if (probe && na_precision)
      tt_model_set_precision (probe, na_precision, &err);
    if (probe)
      tt_model_set_memory_limit (probe, 4096, &err);
    CHECK (probe && tt_model_compile (probe, &err) != TT_OK, "%s: 4096 "
        "bytes met", name);
    const char *at = strstr (err.message, "smallest feasible limit is ");
    CHECK (at != NULL, "%s: %s", name, err.message);
    if (at)
      tt_model_set_memory_limit (m, strtoull (at + strlen ("smallest "
                  "feasible limit is "), NULL, 10), &err);
    tt_model_free (probe);
  }
  /* engine threads: their jobs must allocate nothing either (the
   * workers start at compile) */
  CHECK (tt_model_set_threads (m, threads, &err) == TT_OK, "%s", err.message);
  /* the counters are made at compile, not at a step */
  CHECK (tt_model_set_profiling (m, profile, &err) == TT_OK, "%s", err.message);
  if (na_train)
    CHECK (tt_model_set_train (m, na_train, &err) == TT_OK, "%s", err.message);
  if (na_precision)
    CHECK (tt_model_set_precision (m, na_precision, &err) == TT_OK, "%s",
        err.message);
  tt_model_set_loss_scale_interval (m, na_growth);
  if (na_growth)
    tt_model_set_initial_loss_scale (m, 2.0f);
  tt_status st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s", err.message);
  if (st) {
    tt_model_free (m);
    return;
  }
  if (na_precision && strcmp (na_precision, "fp32")) {
    tt_plan_info pi;
    tt_model_plan_info (m, &pi);
    CHECK (na_text ? pi.swapped > 0 : pi.stashed > 0, "%s: nothing %s",
        name, na_text ? "swapped" : "stashed");
  }
  const uint32_t batch = tt_model_batch_size (m);
  uint8_t *x = __libc_calloc ((size_t) batch * 784, 1);
  float *t = __libc_calloc ((size_t) batch * 10, sizeof *t);
  for (uint32_t i = 0; i < batch * 784; i++)
    x[i] = (uint8_t) (i * 7);
  for (uint32_t i = 0; i < batch; i++)
    t[i * 10 + i % 10] = 1;
  const void *in[1] = { x };
  tt_dtype u8 = TT_DTYPE_UINT8;
  tt_batch_result r;
  /* warm-up: the BLAS library may set up its buffers on first use */
  for (int s = 0; s < 3; s++)
    tt_model_train_batch (m, batch, in, &u8, t, &r, &err);
  allocations = 0;
  counting = 1;
  for (int s = 0; s < 20; s++) {
    tt_model_train_batch (m, batch, in, &u8, t, &r, &err);
    tt_model_train_batch (m, batch / 2, in, &u8, t, &r, &err);
    tt_model_eval_batch (m, batch, in, &u8, t, &r, &err);
  }
  counting = 0;
  const char *how = profile ? ", profiled" : "";
  CHECK (allocations == 0, "%s on %u threads%s: %ld heap allocations in 60 "
      "steps", name, threads, how, allocations);
  printf ("%s on %u threads%s: %ld allocations in 60 steps\n", name, threads,
      how, allocations);
  __libc_free (x);
  __libc_free (t);
  tt_model_free (m);
}

static const char *na_root = ".";

/* the wrappers must see the engine's allocations, or zero proves nothing */
static void
test_counter_sees_allocations (void)
{
  counting = 1;
  tt_error err;
  tt_model *probe = tt_model_load_ini ("/nonexistent/model.ini", &err);
  counting = 0;
  CHECK (probe == NULL && allocations > 0,
      "the counting allocator saw %ld allocations in a model load",
      allocations);
}

static void
test_mlp (void)
{
  no_alloc_model (na_root, "fmnist_mlp.ini", 1, false);
  no_alloc_model (na_root, "fmnist_mlp.ini", 2, false);
}

static void
test_cnn (void)
{
  no_alloc_model (na_root, "fmnist_cnn.ini", 1, false);
  no_alloc_model (na_root, "fmnist_cnn.ini", 2, false);
}

static void
test_lstm (void)
{
  no_alloc_model (na_root, "sensor_lstm.ini", 1, false);
}

static void
test_gru (void)
{
  no_alloc_model (na_root, "sensor_gru.ini", 1, false);
}

/* convolutions: the grouped kernel allocates nothing either */
static void
test_mobilenet_block (void)
{
  no_alloc_model (na_root, "mobilenet_block.ini", 1, false);
  no_alloc_model (na_root, "mobilenet_block.ini", 2, false);
}

static void
test_ops (void)
{
  no_alloc_model (na_root, "se_block.ini", 1, false);
  no_alloc_model (na_root, "se_block.ini", 2, false);
  no_alloc_model (na_root, "ops_unary.ini", 1, false);
  no_alloc_model (na_root, "ops_chain.ini", 2, false);
}

static void
test_profiled (void)
{
  no_alloc_model (na_root, "fmnist_cnn.ini", 1, true);
  no_alloc_model (na_root, "fmnist_cnn.ini", 2, true);
}

/* upsample2d, channel_shuffle, flatten's dimensions */
static void
test_upsample_shuffle (void)
{
  no_alloc_model (na_root, "upsample_shuffle.ini", 1, false);
  no_alloc_model (na_root, "upsample_shuffle.ini", 2, false);
}

/* tensor-manipulation layers */
static void
test_tensorops (void)
{
  no_alloc_model (na_root, "tensorops.ini", 1, false);
  no_alloc_model (na_root, "tensorops.ini", 2, false);
  no_alloc_model (na_root, "tensorops_gather.ini", 2, false);
}

/* the rest of nntrainer's set: clip, kld, constant_derivative,
 * centroid_knn */
static void
test_misc_layers (void)
{
  no_alloc_model (na_root, "clip_kld.ini", 1, false);
  no_alloc_model (na_root, "clip_kld.ini", 2, false);
  no_alloc_model (na_root, "constant_derivative.ini", 2, false);
  no_alloc_model (na_root, "centroid_knn.ini", 1, false);
  no_alloc_model (na_root, "centroid_knn.ini", 2, false);
}

/* transposed convolution and the preprocessing layers */
static void
test_conv_transpose_preprocess (void)
{
  no_alloc_model (na_root, "conv_transpose.ini", 1, false);
  no_alloc_model (na_root, "conv_transpose.ini", 2, false);
  no_alloc_model (na_root, "preprocess.ini", 1, false);
  no_alloc_model (na_root, "preprocess.ini", 2, false);
}

/* attention: multi_head_attention, attention */
static void
test_attention (void)
{
  no_alloc_model (na_root, "mha_self.ini", 1, false);
  no_alloc_model (na_root, "mha_cross_mask.ini", 2, false);
  no_alloc_model (na_root, "transformer_encoder.ini", 2, false);
}

/* the recurrent family */
static void
test_recurrent_family (void)
{
  no_alloc_model (na_root, "sensor_rnn.ini", 1, false);
  no_alloc_model (na_root, "sensor_rnn.ini", 2, false);
  no_alloc_model (na_root, "sensor_bilstm.ini", 1, false);
  no_alloc_model (na_root, "sensor_bilstm.ini", 2, false);
  no_alloc_model (na_root, "cells.ini", 1, false);
  /* the recurrent family's last cells: grucell, zoneout_lstmcell */
  no_alloc_model (na_root, "cells2.ini", 1, false);
  no_alloc_model (na_root, "cells2_zoneout.ini", 1, false);
  no_alloc_model (na_root, "cells2_zoneout.ini", 2, false);
}

/* attention weights, grouped transposed convolution, mol_attention */
static void
test_molconvt (void)
{
  no_alloc_model (na_root, "mha_weights.ini", 1, false);
  no_alloc_model (na_root, "mha_weights.ini", 2, false);
  no_alloc_model (na_root, "conv_transpose_groups.ini", 1, false);
  no_alloc_model (na_root, "conv_transpose_groups.ini", 2, false);
  no_alloc_model (na_root, "mol_attention.ini", 1, false);
  no_alloc_model (na_root, "mol_attention.ini", 2, false);
}

/* personalization: partially frozen models (a conv's bias gradient alone
 * with biases) */
static void
test_personalized (void)
{
  const char *choices[] = { "biases", "last:2" };
  for (int i = 0; i < 2; i++) {
    na_train = choices[i];
    no_alloc_model (na_root, "fmnist_cnn.ini", 1, false);
    no_alloc_model (na_root, "fmnist_cnn.ini", 2, false);
    no_alloc_model (na_root, "mobilenet_block.ini", 2, false);
  }
  na_train = NULL;
}

/* feature cache: steps that keep the boundary and steps from it (the
 * boundary found once, before) */
static void
test_feature_cache (void)
{
  char path[1024];
  tt_error err;
  snprintf (path, sizeof path, "%s/tests/models/fmnist_cnn.ini", na_root);
  tt_model *m = tt_model_load_ini (path, &err);
  CHECK (m != NULL, "%s", err.message);
  if (!m)
    return;
  tt_feature_boundary fb;
  tt_status st;
  if ((st = tt_model_set_threads (m, 1, &err)) ||
      (st = tt_model_set_train (m, "last:1", &err)) ||
      (st = tt_model_compile (m, &err)) ||
      (st = tt_model_feature_boundary (m, &fb, &err))) {
    CHECK (st == TT_OK, "%s", err.message);
    tt_model_free (m);
    return;
  }
  const uint32_t batch = tt_model_batch_size (m);
  uint8_t *x = __libc_calloc ((size_t) batch * 784, 1);
  float *t = __libc_calloc ((size_t) batch * 10, sizeof *t);
  float *rec = __libc_calloc ((size_t) batch * fb.floats_per_sample,
      sizeof *rec);
  float **keep = __libc_calloc (batch, sizeof *keep);
  for (uint32_t i = 0; i < batch * 784; i++)
    x[i] = (uint8_t) (i * 7);
  for (uint32_t i = 0; i < batch; i++) {
    t[i * 10 + i % 10] = 1;
    keep[i] = rec + i * fb.floats_per_sample;
  }
  const void *in[1] = { x };
  tt_dtype u8 = TT_DTYPE_UINT8;
  for (int s = 0; s < 3; s++)
    tt_model_train_batch_keep (m, batch, in, &u8, t, keep, NULL, &err);
  allocations = 0;
  counting = 1;
  long bad = 0;
  for (int s = 0; s < 20; s++) {
    bad += tt_model_train_batch_keep (m, batch, in, &u8, t, keep, NULL,
        &err) != TT_OK;
    bad += tt_model_train_batch_cached (m, batch,
        (const float *const *) keep, t, NULL, &err) != TT_OK;
  }
  counting = 0;
  CHECK (bad == 0, "%s", err.message);
  CHECK (allocations == 0, "feature cache: %ld heap allocations in 40 steps",
      allocations);
  printf ("feature cache: %ld allocations in 40 steps\n", allocations);
  __libc_free (x);
  __libc_free (t);
  __libc_free (rec);
  __libc_free (keep);
  tt_model_free (m);
}

/* LoRA adapters: their passes, and with the first layer's frozen */
static void
test_lora (void)
{
  no_alloc_model (na_root, "fmnist_mlp_lora.ini", 1, false);
  no_alloc_model (na_root, "fmnist_mlp_lora.ini", 2, false);
  na_train = "last:2";
  no_alloc_model (na_root, "fmnist_mlp_lora.ini", 2, false);
  na_train = NULL;
}

/* LoRA beyond fully_connected: a 1x1 conv2d's and an attention's
 * adapters, and with them frozen (last:1, the classifier's alone) */
static void
test_lora_layers (void)
{
  no_alloc_model (na_root, "fmnist_lora_layers.ini", 1, false);
  no_alloc_model (na_root, "fmnist_lora_layers.ini", 2, false);
  na_train = "last:1";
  no_alloc_model (na_root, "fmnist_lora_layers.ini", 2, false);
  na_train = NULL;
}

/* mixed precision: the stash narrows and widens in the pool (bf16 and
 * fp16; two threads split the large conversions) */
static void
test_stash (void)
{
  na_precision = "bf16";
  no_alloc_model (na_root, "fmnist_cnn.ini", 1, false);
  no_alloc_model (na_root, "fmnist_cnn.ini", 2, false);
  na_precision = "fp16";
  no_alloc_model (na_root, "mobilenet_block.ini", 2, false);
  na_precision = NULL;
}

/* mixed precision under a memory limit: activations swapped at half
 * width, narrowed through their staging tensors and widened in place
 * (core/swap.c); 64 samples, so that swapping lowers the pool (at 32 the
 * smallest feasible limit is the pool without one) */
static void
test_stash_swapped (void)
{
  char dir[512], text[2048];
  snprintf (dir, sizeof dir, "%s", tt_test_write_text ("swap", ""));
  *strrchr (dir, '/') = '\0';
  snprintf (text, sizeof text, "[Model]\nbatch_size = 64\nloss = cross\n"
      "memory_swap = true\nmemory_swap_path = %s\n"
      "[Optimizer]\ntype = adam\nlearning_rate = 0.001\n"
      "[input]\ntype = input\ninput_shape = 1:1:784\n"
      "[fc1]\ntype = fully_connected\nunit = 64\n"
      "[drop1]\ntype = dropout\ndropout_rate = 0.25\n"
      "[act1]\ntype = activation\nactivation = tanh\n"
      "[fc2]\ntype = fully_connected\nunit = 64\n"
      "[drop2]\ntype = dropout\ndropout_rate = 0.25\n"
      "[act2]\ntype = activation\nactivation = tanh\n"
      "[fc3]\ntype = fully_connected\nunit = 64\n"
      "[drop3]\ntype = dropout\ndropout_rate = 0.25\n"
      "[act3]\ntype = activation\nactivation = tanh\n"
      "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n", dir);
  na_text = text;
  na_precision = "bf16";
  no_alloc_model (na_root, "dropout_mlp_swap.ini", 1, false);
  no_alloc_model (na_root, "dropout_mlp_swap.ini", 2, false);
  na_text = NULL;
  na_precision = NULL;
}

/* mixed precision: a bf16 model scales its loss (from 2, doubled every
 * step here: the scale's growth, the finiteness check and the unscaling
 * in every step) */
static void
test_loss_scaling (void)
{
  na_precision = "bf16";
  na_growth = 1;
  no_alloc_model (na_root, "fmnist_mlp.ini", 1, false);
  no_alloc_model (na_root, "fmnist_cnn.ini", 2, false);
  na_precision = NULL;
  na_growth = 0;
}

/* mixed precision: the layers' GEMMs on bf16-rounded inputs (dense and
 * convolution above; attention's projections here), unscaled */
static void
test_bf16_gemms (void)
{
  na_precision = "bf16";
  no_alloc_model (na_root, "mha_self.ini", 1, false);
  no_alloc_model (na_root, "fmnist_cnn.ini", 2, false);
  na_precision = NULL;
}

/* mixed precision: conv2d's im2col columns at half width (the inception
 * block's 3x3 and 5x5 with their column gradients, its 1x1s) */
static void
test_half_columns (void)
{
  na_precision = "bf16";
  no_alloc_model (na_root, "inception.ini", 1, false);
  na_precision = "fp16";
  no_alloc_model (na_root, "inception.ini", 2, false);
  na_precision = NULL;
}

/* mixed precision: attention's products and matmul's in bf16 (the
 * transformer encoder's multi_head_attention on 2 threads, tensorops'
 * matmuls); multi_head_attention's projections and heads held at half
 * width, narrowed in forward and read in place (zoo_transformer at
 * batch 32 splits the narrowing over the threads; fp16 as well) */
static void
test_bf16_attention_products (void)
{
  na_precision = "bf16";
  no_alloc_model (na_root, "transformer_encoder.ini", 2, false);
  no_alloc_model (na_root, "tensorops.ini", 2, false);
  no_alloc_model (na_root, "zoo_transformer.ini", 2, false);
  no_alloc_model (na_root, "mha_weights.ini", 1, false);
  na_precision = "fp16";
  no_alloc_model (na_root, "zoo_transformer.ini", 2, false);
  na_precision = NULL;
}

int
main (int argc, char **argv)
{
  if (argc > 1)
    na_root = argv[1];
  tt_set_num_threads (1);
  /* the workers' parts must allocate nothing: every step split */
  setenv ("TT_THREADS_STEPS", "split", 1);
  TT_TEST_RUN (test_counter_sees_allocations);
  TT_TEST_RUN (test_mlp);
  TT_TEST_RUN (test_cnn);
  TT_TEST_RUN (test_lstm);
  TT_TEST_RUN (test_gru);
  TT_TEST_RUN (test_ops);
  TT_TEST_RUN (test_profiled);
  TT_TEST_RUN (test_mobilenet_block);
  TT_TEST_RUN (test_upsample_shuffle);
  TT_TEST_RUN (test_tensorops);
  TT_TEST_RUN (test_misc_layers);
  /* transposed convolution and the preprocessing layers */
  TT_TEST_RUN (test_conv_transpose_preprocess);
  TT_TEST_RUN (test_attention);
  /* the recurrent family */
  TT_TEST_RUN (test_recurrent_family);
  /* attention weights, grouped transposed convolution, mol_attention */
  TT_TEST_RUN (test_molconvt);
  /* personalization: partially frozen models */
  TT_TEST_RUN (test_personalized);
  /* feature cache: keeping and using a frozen prefix's outputs */
  TT_TEST_RUN (test_feature_cache);
  /* LoRA adapters */
  TT_TEST_RUN (test_lora);
  TT_TEST_RUN (test_lora_layers);
  /* mixed precision: activations stashed at half width */
  TT_TEST_RUN (test_stash);
  TT_TEST_RUN (test_stash_swapped);
  /* mixed precision: loss scaling */
  TT_TEST_RUN (test_loss_scaling);
  TT_TEST_RUN (test_bf16_gemms);
  TT_TEST_RUN (test_half_columns);
  /* mixed precision: attention's products and matmul in bf16 */
  TT_TEST_RUN (test_bf16_attention_products);
  return tt_test_summary ();
}
