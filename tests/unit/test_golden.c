/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Compares the engine with PyTorch on the committed golden data of
 * tests/golden/ (see its README for the files and the tolerance):
 * forward output, loss, derivative w.r.t. the input, weight gradients, and
 * the whole BIN (weights, Adam moments) after one Adam step.
 *
 * usage: test_golden SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "golden_data.h"

static void
golden_case (const char *dir)
{
  char model_rel[512], batch_s[32], loss_s[64];
  tt_error err;
  printf ("case %s\n", dir);
  CHECK (golden_meta (dir, "model", model_rel, sizeof model_rel) &&
      golden_meta (dir, "batch", batch_s, sizeof batch_s) &&
      golden_meta (dir, "loss", loss_s, sizeof loss_s), "%s: meta.txt", dir);
  char ini[2048], bin[2048];
  snprintf (ini, sizeof ini, "%s/%s", golden_root, model_rel);
  snprintf (bin, sizeof bin, "%s/tests/golden/%s/init.bin", golden_root, dir);
  uint32_t batch = (uint32_t) atoi (batch_s);

  tt_model *m = tt_model_load_ini (ini, &err);
  CHECK (m != NULL, "%s: %s", dir, err.message);
  if (!m)
    return;
  /* gradients are inspected after the whole backward pass: no reuse,
   * and whole (not updated as they are computed) */
  tt_status st = tt_model_set_batch_size (m, batch, &err);
  if (!st)
    st = tt_model_set_plan_mode (m, TT_PLAN_NAIVE, &err);
  if (!st)
    st = tt_model_keep_gradients (m, &err);
  if (!st)
    st = tt_model_request_input_derivative (m, &err);
  if (!st)
    st = tt_model_compile (m, &err);
  if (!st)
    st = tt_model_load_bin (m, bin, &err);
  CHECK (st == TT_OK, "%s: %s", dir, err.message);
  if (st) {
    tt_model_free (m);
    return;
  }

  golden_array input = golden_read (dir, "input.f32");
  golden_array label = golden_read (dir, "label.f32");
  golden_array output = golden_read (dir, "output.f32");
  golden_array dinput = golden_read (dir, "dinput.f32");
  golden_array grads = golden_read (dir, "grads.f32");
  golden_array after = golden_read (dir, "after_adam.bin");

  const void *inputs[1] = { input.data };
  double loss;
  st = tt_model_gradients (m, batch, inputs, NULL, label.data, true, &loss,
      &err);
  CHECK (st == TT_OK, "%s: %s", dir, err.message);
  double want_loss = atof (loss_s);
  CHECK (fabs (loss - want_loss) <= 1e-4 * fabs (want_loss),
      "%s: loss %.9g, torch %.9g", dir, loss, want_loss);
  printf ("  loss: engine %.9g, torch %.9g\n", loss, want_loss);

  CHECK (golden_compare ("output", tt_model_output (m), output.data,
          output.count, NULL) == 0, "%s: output differs", dir);
  const float *dx = tt_data (m, m->layers[m->input_layers[0]].out_deriv[0]);
  CHECK (golden_compare ("dinput", dx, dinput.data, dinput.count, NULL) == 0,
      "%s: input derivative differs", dir);

  /* gradients of trainable weights in BIN order, and which after-Adam
   * weights have a gradient too small to pin the first Adam step */
  size_t total_weights = tt_bin_weight_bytes (m) / 4;
  float *ours = malloc (grads.count * sizeof *ours + 4);
  bool *loose = calloc (total_weights + 1, sizeof *loose);
  size_t gi = 0, wi = 0;
  uint32_t n_bin;
  tt_weight **bin_w = golden_bin_weights (m, &n_bin);
  CHECK (bin_w != NULL, "%s: out of memory", dir);
  for (uint32_t i = 0; bin_w && i < n_bin; i++) {
    tt_weight *w = bin_w[i];
    if (w->grad >= 0 && gi + w->count <= grads.count) {
      memcpy (ours + gi, tt_data (m, w->grad), w->count * sizeof *ours);
      for (size_t j = 0; j < w->count; j++)
        loose[wi + j] = fabsf (grads.data[gi + j]) < 1e-5f;
      gi += w->count;
    }
    wi += w->count;
  }
  free (bin_w);
  CHECK (gi == grads.count, "%s: %zu gradient values, torch has %zu", dir,
      gi, grads.count);
  CHECK (golden_compare ("grads", ours, grads.data, grads.count, NULL) == 0,
      "%s: weight gradients differ", dir);

  /* one real Adam step from the same start, with the planned pool (reused
   * memory, in-place layers) */
  tt_model_free (m);
  m = tt_model_load_ini (ini, &err);
  st = m ? tt_model_set_batch_size (m, batch, &err) : TT_ERR_INVALID;
  if (!st)
    st = tt_model_compile (m, &err);
  if (!st)
    st = tt_model_load_bin (m, bin, &err);
  tt_batch_result r;
  if (!st)
    st = tt_model_train_batch (m, batch, inputs, NULL, label.data, &r, &err);
  char saved[1024];
  snprintf (saved, sizeof saved, "%s", tt_test_write_text ("golden.bin", ""));
  if (!st)
    st = tt_model_save_bin (m, saved, &err);
  CHECK (st == TT_OK, "%s: %s", dir, err.message);
  golden_array mine = golden_read_file (saved);
  /* ours carries the 8 bytes of counters after what torch wrote */
  CHECK (mine.count == after.count + 2, "%s: saved %zu floats, torch %zu + 2",
      dir, mine.count, after.count);
  if (mine.count == after.count + 2) {
    const float lr = m->opt.learning_rate;
    int bad = golden_compare ("after_adam weights", mine.data, after.data,
        total_weights, loose);
    for (size_t i = 0; i < total_weights; i++)
      if (loose[i] && !(fabsf (mine.data[i] - after.data[i]) <= 2 * lr))
        bad++;
    CHECK (bad == 0, "%s: weights after one Adam step differ", dir);
    CHECK (!memcmp (mine.data + total_weights, "adam", 4),
        "%s: no adam tag", dir);
    /* moments interleave m and v per weight: split them */
    size_t nm = (after.count - total_weights - 1) / 2;
    float *m_ours = malloc (nm * 4 + 4), *v_ours = malloc (nm * 4 + 4);
    float *m_want = malloc (nm * 4 + 4), *v_want = malloc (nm * 4 + 4);
    size_t at = total_weights + 1, k = 0;
    bin_w = golden_bin_weights (m, &n_bin);
    for (uint32_t i = 0; bin_w && i < n_bin; i++) {
      tt_weight *w = bin_w[i];
      if (!w->file_moments)
        continue;
      memcpy (m_ours + k, mine.data + at, w->count * 4);
      memcpy (m_want + k, after.data + at, w->count * 4);
      memcpy (v_ours + k, mine.data + at + w->count, w->count * 4);
      memcpy (v_want + k, after.data + at + w->count, w->count * 4);
      at += 2 * w->count;
      k += w->count;
    }
    free (bin_w);
    CHECK (golden_compare ("adam m", m_ours, m_want, nm, NULL) == 0,
        "%s: first moments differ", dir);
    CHECK (golden_compare ("adam v", v_ours, v_want, nm, NULL) == 0,
        "%s: second moments differ", dir);
    uint32_t counters[2];
    memcpy (counters, mine.data + mine.count - 2, 8);
    CHECK (counters[0] == 0 && counters[1] == 1,
        "%s: counters epoch %u iteration %u, expected 0 and 1", dir,
        counters[0], counters[1]);
    free (m_ours);
    free (v_ours);
    free (m_want);
    free (v_want);
  }
  free (mine.data);
  free (ours);
  free (loose);
  free (input.data);
  free (label.data);
  free (output.data);
  free (dinput.data);
  free (grads.data);
  free (after.data);
  tt_model_free (m);
}

static void
test_mlp (void)
{
  golden_case ("mlp");
}

static void
test_cnn (void)
{
  golden_case ("cnn");
}

static void
test_branchy_bn (void)
{
  golden_case ("branchy_bn");
}

static void
test_conv1d (void)
{
  golden_case ("conv1d");
}

static void
test_lstm (void)
{
  golden_case ("lstm");
}

static void
test_gru (void)
{
  golden_case ("gru");
}

/* convolutions */
static void
test_conv1d_padding (void)
{
  golden_case ("conv1d_padding");
}

static void
test_mobilenet_block (void)
{
  golden_case ("mobilenet_block");
}

static void
test_transformer (void)
{
  golden_case ("transformer");
}

static void
test_activations (void)
{
  golden_case ("activations");
}

static void
test_se_block (void)
{
  golden_case ("se_block");
}

static void
test_ops_unary (void)
{
  golden_case ("ops_unary");
}

static void
test_upsample_shuffle (void)
{
  golden_case ("upsample_shuffle");
}

static void
test_pool_modes (void)
{
  golden_case ("pool_modes");
}

/* tensor-manipulation layers */
static void
test_tensorops (void)
{
  golden_case ("tensorops");
}

static void
test_tensorops_gather (void)
{
  golden_case ("tensorops_gather");
}

/* the rest of nntrainer's set: clip, kld */
static void
test_clip_kld (void)
{
  golden_case ("clip_kld");
}

/* transposed convolution */
static void
test_conv_transpose (void)
{
  golden_case ("conv_transpose");
}

static void
test_l2norm_mlp (void)
{
  golden_case ("l2norm_mlp");
}

/* attention: multi_head_attention, attention */
static void
test_mha_self (void)
{
  golden_case ("mha_self");
}

static void
test_mha_cross_mask (void)
{
  golden_case ("mha_cross_mask");
}

static void
test_transformer_encoder (void)
{
  golden_case ("transformer_encoder");
}

/* the recurrent family */
static void
test_rnn (void)
{
  golden_case ("rnn");
}

static void
test_bilstm (void)
{
  golden_case ("bilstm");
}

static void
test_cells (void)
{
  golden_case ("cells");
}

/* the recurrent family's last cells: grucell, zoneout_lstmcell */
static void
test_cells2 (void)
{
  golden_case ("cells2");
}

/* multi_head_attention's attention weights */
static void
test_mha_weights (void)
{
  golden_case ("mha_weights");
}

/* conv2dtranspose's groups */
static void
test_conv_transpose_groups (void)
{
  golden_case ("conv_transpose_groups");
}

/* LoRA adapters */
static void
test_lora_mlp (void)
{
  golden_case ("lora_mlp");
}

/* LoRA beyond fully_connected: a 1x1 conv2d, multi_head_attention */
static void
test_lora_layers (void)
{
  golden_case ("lora_layers");
}

int
main (int argc, char **argv)
{
  snprintf (golden_root, sizeof golden_root, "%s", argc > 1 ? argv[1] : ".");
  TT_TEST_RUN (test_mlp);
  TT_TEST_RUN (test_cnn);
  TT_TEST_RUN (test_branchy_bn);
  TT_TEST_RUN (test_conv1d);
  TT_TEST_RUN (test_lstm);
  TT_TEST_RUN (test_gru);
  TT_TEST_RUN (test_conv1d_padding);
  TT_TEST_RUN (test_mobilenet_block);
  TT_TEST_RUN (test_transformer);
  TT_TEST_RUN (test_activations);
  TT_TEST_RUN (test_se_block);
  TT_TEST_RUN (test_ops_unary);
  TT_TEST_RUN (test_upsample_shuffle);
  TT_TEST_RUN (test_pool_modes);
  /* tensor-manipulation layers */
  TT_TEST_RUN (test_tensorops);
  TT_TEST_RUN (test_tensorops_gather);
  TT_TEST_RUN (test_clip_kld);
  /* transposed convolution */
  TT_TEST_RUN (test_conv_transpose);
  TT_TEST_RUN (test_l2norm_mlp);
  TT_TEST_RUN (test_mha_self);
  TT_TEST_RUN (test_mha_cross_mask);
  TT_TEST_RUN (test_transformer_encoder);
  /* the recurrent family */
  TT_TEST_RUN (test_rnn);
  TT_TEST_RUN (test_bilstm);
  TT_TEST_RUN (test_cells);
  /* the recurrent family's last cells */
  TT_TEST_RUN (test_cells2);
  /* multi_head_attention's attention weights */
  TT_TEST_RUN (test_mha_weights);
  /* conv2dtranspose's groups */
  TT_TEST_RUN (test_conv_transpose_groups);
  /* LoRA adapters */
  TT_TEST_RUN (test_lora_mlp);
  /* LoRA beyond fully_connected */
  TT_TEST_RUN (test_lora_layers);
  return tt_test_summary ();
}
