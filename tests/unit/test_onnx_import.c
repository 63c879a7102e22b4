/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ONNX import (ext/onnx/) against PyTorch: each fixture of tests/onnx/
 * (make_fixtures.py: a torch.onnx.export and PyTorch's golden data) is
 * imported, its logits from the initial weights compared (1e-4 of the
 * largest logit), then 5 full-batch steps of SGD and of Adam trained from
 * those weights, their losses compared (2e-3 relative). Then the files
 * the importer must refuse, each with one message naming what is wrong
 * and no file left behind.
 *
 *   test_onnx_import SOURCE_ROOT
 */
#include "tt_engine.h"
#include "tt_onnx.h"
#include "tt_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *root;
static char dir[256];

typedef struct
{
  uint32_t batch;
  float *input, *labels, *logits;
  size_t n_input, n_labels, n_logits;
  double sgd_lr, adam_lr;
  float sgd[5], adam[5];
  bool has_losses;
} golden;

static float *
read_floats (char **p, size_t *n)
{
  *n = strtoul (*p, p, 10);
  float *v = malloc ((*n ? *n : 1) * sizeof *v);
  for (size_t k = 0; k < *n; k++)
    v[k] = strtof (*p, p);
  return v;
}

static bool
golden_read (const char *name, golden * g)
{
  char path[512];
  snprintf (path, sizeof path, "%s/tests/onnx/%s.golden", root, name);
  char *text = tt_test_read_file (path, NULL);
  if (!text)
    return false;
  memset (g, 0, sizeof *g);
  for (char *line = strtok (text, "\n"); line; line = strtok (NULL, "\n")) {
    char *p = strchr (line, ' ');
    if (!p)
      continue;
    *p++ = '\0';
    size_t n;
    if (!strcmp (line, "batch"))
      g->batch = (uint32_t) strtoul (p, NULL, 10);
    else if (!strcmp (line, "input"))
      g->input = read_floats (&p, &g->n_input);
    else if (!strcmp (line, "labels"))
      g->labels = read_floats (&p, &g->n_labels);
    else if (!strcmp (line, "logits"))
      g->logits = read_floats (&p, &g->n_logits);
    else if (*p != '-') {
      bool sgd = !strcmp (line, "sgd");
      double lr = strtod (p, &p);
      n = strtoul (p, &p, 10);
      for (size_t k = 0; k < n && k < 5; k++)
        (sgd ? g->sgd : g->adam)[k] = strtof (p, &p);
      if (sgd)
        g->sgd_lr = lr;
      else
        g->adam_lr = lr;
      g->has_losses = true;
    }
  }
  free (text);
  return g->input && g->labels && g->logits;
}

static void
golden_free (golden * g)
{
  free (g->input);
  free (g->labels);
  free (g->logits);
}

static tt_model *
open_imported (const char *name, const char *optimizer, const char *loss,
    double lr, uint32_t batch, char *ini, size_t cap)
{
  char onnx[512], bin[600];
  snprintf (onnx, sizeof onnx, "%s/tests/onnx/%s.onnx", root, name);
  snprintf (ini, cap, "%s/%s_%s.ini", dir, name, optimizer);
  snprintf (bin, sizeof bin, "%s/%s_%s.bin", dir, name, optimizer);
  tt_onnx_options o = {.optimizer = optimizer,.loss = loss,
    .learning_rate = lr,
    .batch = batch
  };
  tt_error err;
  if (tt_onnx_import (onnx, ini, bin, &o, &err)) {
    CHECK (false, "%s: import: %s", name, err.message);
    return NULL;
  }
  tt_model *m = tt_model_load_ini (ini, &err);
  if (!m || tt_model_compile (m, &err) || tt_model_load_weights (m, bin, &err)) {
    CHECK (false, "%s: %s", name, err.message);
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static void
check_fixture (const char *name)
{
  golden g;
  if (!golden_read (name, &g)) {
    CHECK (false, "%s: golden file unreadable", name);
    return;
  }
  char ini[600];
  tt_error err;
  const void *in[1] = { g.input };
  const tt_dtype types[1] = { TT_DTYPE_FLOAT32 };
  /* the logits: with mse the model's output is the last layer's */
  tt_model *m = open_imported (name, "sgd", "mse", 0.1, g.batch, ini,
      sizeof ini);
  if (m) {
    tt_status st = tt_model_eval_batch (m, g.batch, in, types, NULL, NULL,
        &err);
    CHECK (!st, "%s: eval: %s", name, err.message);
    const float *y = tt_model_output (m);
    float big = 0, worst = 0;
    for (size_t k = 0; k < g.n_logits; k++)
      big = fmaxf (big, fabsf (g.logits[k]));
    for (size_t k = 0; !st && k < g.n_logits; k++)
      worst = fmaxf (worst, fabsf (y[k] - g.logits[k]));
    CHECK (!st && worst <= 1e-4f * big, "%s: logits differ by %g (largest "
        "logit %g)", name, worst, big);
    printf ("%s: logits within %.2g of the largest", name, big > 0 ?
        worst / big : worst);
    tt_model_free (m);
  }
  for (int opt = 0; opt < 2; opt++) {
    const char *optimizer = opt ? "adam" : "sgd";
    double rel = 0;
    m = open_imported (name, optimizer, NULL, opt ? g.adam_lr :
        g.sgd_lr > 0 ? g.sgd_lr : 0.1, g.batch, ini, sizeof ini);
    if (!m)
      break;
    for (int step = 0; g.has_losses && step < 5; step++) {
      tt_batch_result r;
      tt_status st = tt_model_train_batch (m, g.batch, in, types, g.labels,
          &r, &err);
      const float want = (opt ? g.adam : g.sgd)[step];
      if (!st)
        rel = fmax (rel, fabs (r.loss - want) / fabs (want));
      CHECK (!st && fabs (r.loss - want) <= 2e-3 * fabs (want), "%s: %s step "
          "%d: loss %.7g, PyTorch's %.7g%s%s", name, optimizer, step, r.loss,
          want, st ? ": " : "", st ? err.message : "");
    }
    if (g.has_losses)
      printf (", %s losses within %.2g", optimizer, rel);
    tt_model_free (m);
  }
  printf ("\n");
  golden_free (&g);
}

static void
test_fixtures (void)
{
  static const char *const names[] = { "mlp_op13", "mlp_op17",
    "cnn_train_op13", "cnn_train_op17", "residual_op13", "residual_op17",
    "dwsep_op13", "dwsep_op17", "conv1d_op13", "residual_down_op15",
    "folded_op14", "mlp_softmax_op13", "conv1d_pool_op17",
    "mlp_dropout_train_op13",
    /* transformer encoders (onnx_map_tf.c) */
    "tf_post_relu_train_op13", "tf_post_relu_op17", "tf_pre_gelu_op13",
    "tf_pre_gelu_train_op17", "tf_two_gelu_op13", "tf_dropout_train_op17",
    /* torchvision CNNs, the zoo's, recurrent and embedding (onnxrnn) */
    "mobilenet_v2_train_op13", "mobilenet_v2_train_op17", "mobilenet_v2_op13",
    "resnet18_train_op13", "resnet18_cifar_train_op17", "dscnn_train_op13",
    "dscnn_train_op17", "audio1d_train_op13", "audio1d_train_op17",
    "lstm_last_op13", "lstm_last_op17", "gru_hidden_op13", "gru_hidden_op17",
    "gru_last_op13", "lstm_hidden_op17", "embed_lstm_op13", "embed_lstm_op17",
    "lstm2_last_op13", "gru_step_op17",
    /* ConvTranspose, Concat, Resize, Slice, Unsqueeze, broadcasting Mul */
    "deconv_op13", "deconv_op17", "concat_up_op13", "concat_up_op17",
    "se_op13", "se_op17", "rnn_last_op13", "rnn_hidden_op17",
    "split_op13", "split_op17"
  };
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    check_fixture (names[k]);
}

/* the dropout fixture: training mode keeps its ratio */
static void
test_dropout_kept (void)
{
  char ini[600];
  tt_model *m = open_imported ("mlp_dropout_train_op13", "sgd", NULL, 0.1,
      4, ini, sizeof ini);
  tt_model_free (m);
  char *text = tt_test_read_file (ini, NULL);
  CHECK (text && strstr (text, "type = dropout\n") &&
      strstr (text, "dropout_rate = 0.25\n"), "dropout not kept: %s",
      text ? text : "(no INI)");
  free (text);
}

/* transformer encoders: attention's and the layers' dropout kept */
static void
test_tf_dropout_kept (void)
{
  char ini[600];
  tt_model *m = open_imported ("tf_dropout_train_op17", "sgd", NULL, 0.1,
      4, ini, sizeof ini);
  tt_model_free (m);
  char *text = tt_test_read_file (ini, NULL);
  const char *mha = text ? strstr (text, "type = multi_head_attention\n") :
      NULL;
  CHECK (mha && strstr (mha, "num_heads = 2\ndropout_rate = 0.1") &&
      strstr (text, "type = dropout\n") && strstr (text,
          "type = layer_normalization\n"), "transformer dropout: %s",
      text ? text : "(no INI)");
  free (text);
}

/* a final Softmax: one softmax layer either way; with cross_softmax it
 * is the layer nntrainer's `loss = cross` folds into the loss, with mse
 * the model's output */
static void
test_softmax_absorbed (void)
{
  char ini[600];
  for (int mse = 0; mse < 2; mse++) {
    tt_model *m = open_imported ("mlp_softmax_op13", "sgd",
        mse ? "mse" : NULL, 0.1, 4, ini, sizeof ini);
    const bool opened = m != NULL;
    tt_model_free (m);
    char *text = tt_test_read_file (ini, NULL);
    const char *layer = text ? strstr (text, "activation = softmax\n") : NULL;
    bool one = layer && !strstr (layer + 1, "activation = softmax\n");
    bool note = text && strstr (text, "Softmax ('/Softmax') is that layer");
    bool loss = text && strstr (text, mse ? "\nloss = mse\n" :
        "\nloss = cross\n");
    CHECK (opened && one && loss && note == (mse == 0), "%s: %s",
        mse ? "mse" : "cross_softmax", text ? text : "(no INI)");
    free (text);
  }
}

static bool
exists (const char *path)
{
  struct stat sb;
  return stat (path, &sb) == 0;
}

/* path refused with a message holding every one of want (NULL-ended) */
static void
refused (const char *label, const char *path, const char *const *want)
{
  char ini[512], bin[512];
  snprintf (ini, sizeof ini, "%s/refused.ini", dir);
  snprintf (bin, sizeof bin, "%s/refused.bin", dir);
  tt_error err;
  tt_status st = tt_onnx_import (path, ini, bin, NULL, &err);
  CHECK (st != TT_OK, "%s: accepted", label);
  if (st == TT_OK)
    return;
  for (const char *const *w = want; *w; w++)
    CHECK (strstr (err.message, *w), "%s: '%s' not in: %s", label, *w,
        err.message);
  CHECK (strstr (err.message, path), "%s: the file is not named: %s", label,
      err.message);
  CHECK (!exists (ini) && !exists (bin), "%s: files left behind", label);
}

static void
test_refusals (void)
{
  char path[512];
#define BAD(file, ...) do {                                               \
    static const char *const w[] = { __VA_ARGS__, NULL };                 \
    snprintf (path, sizeof path, "%s/tests/onnx/bad/%s", root, file);     \
    refused (file, path, w);                                              \
  } while (0)
  BAD ("unsupported_op.onnx", "operator Exp", "'/Exp'", "opset 13",
      "supported: Gemm", "MaxPool");
  BAD ("unknown_input.onnx", "'relu_a'", "input 'nowhere'",
      "not produced by any node");
  BAD ("cycle.onnx", "cycle", "'add_a'", "'relu_b'");
  BAD ("external_data.onnx", "initializer 'w'", "missing_weights.bin",
      "external data is not supported");
  /* transformer encoders (onnx_map_tf.c) */
  BAD ("tf_mask.onnx", "Transpose, opset 13", "an attention mask is not "
      "supported", "self-attention block");
  BAD ("tf_layernorm_2d.onnx", "LayerNormalization, opset 17", "axis -2",
      "supported is the last axis");
  BAD ("tf_transpose.onnx", "'/Transpose'", "perm 1,0,2 on [N, T, D]");
  BAD ("tf_div.onnx", "'/Div'", "GELU's Erf form");
  /* recurrent graphs (onnxrnn) */
  BAD ("lstm_bidirectional.onnx", "'/rnn/LSTM'", "(LSTM, opset 13)",
      "direction 'bidirectional'", "supported is forward");
  BAD ("lstm_cell_state.onnx", "'/rnn/LSTM'", "cell state Y_c is read");
  BAD ("gru_initial_state.onnx", "'/rnn/GRU'", "(GRU, opset 13)",
      "initial states given as inputs are not supported");
  /* more operators on activations (onnx_map_ops.c) */
  BAD ("ops_deconv_output_padding.onnx", "'/d/ConvTranspose'",
      "(ConvTranspose, opset 13)", "output_padding 1 beyond the end "
      "padding 0", "supported: output_padding up to the end pads");
  BAD ("ops_resize_align_corners.onnx", "'/Resize' (Resize, opset 13)",
      "coordinate_transformation_mode 'align_corners'",
      "supported is half_pixel");
  BAD ("ops_resize_fraction.onnx", "'/Resize'", "scales 1, 1, 1.5, 1.5",
      "integer factors");
  BAD ("ops_slice_step.onnx", "'/Slice' (Slice, opset 13)", "step 2",
      "supported is 1");
  BAD ("ops_mul_constant.onnx", "'/Mul' (Mul, opset 13)", "a Mul by a "
      "constant", "no layer multiplies by a constant",
      "supported: two activations");
  BAD ("ops_rnn_relu.onnx", "'/rnn/RNN' (RNN, opset 13)",
      "activations 'Relu'", "supported is Tanh");
  BAD ("ops_split_unequal.onnx", "'/Split' (Split, opset 13)",
      "part 0 is 1", "supported are equal parts (2 each)");
#undef BAD
  /* truncated, and not an ONNX file at all */
  size_t len;
  snprintf (path, sizeof path, "%s/tests/onnx/cnn_train_op13.onnx", root);
  char *good = tt_test_read_file (path, &len);
  CHECK (good && len > 100, "fixture unreadable");
  if (!good)
    return;
  static const char *const truncated[] = { "truncated", NULL };
  for (size_t cut = 1; cut < len; cut += len / 7) {
    const char *p = tt_test_write_file ("truncated.onnx", good, cut);
    snprintf (path, sizeof path, "%s", p);
    refused ("truncated", path, truncated);
  }
  free (good);
  const char *ini_text = "[Model]\ntype = NeuralNetwork\n";
  snprintf (path, sizeof path, "%s", tt_test_write_text ("model.onnx",
          ini_text));
  static const char *const not_onnx[] = { "not an ONNX model", NULL };
  refused ("an INI", path, not_onnx);
  snprintf (path, sizeof path, "%s", tt_test_write_file ("empty.onnx", "", 0));
  static const char *const empty[] = { "empty file", NULL };
  refused ("empty", path, empty);
  snprintf (path, sizeof path, "%s/no_such_file.onnx", dir);
  static const char *const missing[] = { "cannot open", NULL };
  refused ("missing", path, missing);
}

/* the options, each refused with the allowed values */
static void
test_bad_options (void)
{
  char path[512], ini[512], bin[512];
  snprintf (path, sizeof path, "%s/tests/onnx/mlp_op13.onnx", root);
  snprintf (ini, sizeof ini, "%s/opt.ini", dir);
  snprintf (bin, sizeof bin, "%s/opt.bin", dir);
  tt_error err;
  tt_onnx_options o = {.loss = "cross" };
  CHECK (tt_onnx_import (path, ini, bin, &o, &err) && strstr (err.message,
          "cross_softmax, cross_sigmoid, mse"), "loss: %s", err.message);
  o = (tt_onnx_options) {
  .optimizer = "rmsprop"};
  CHECK (tt_onnx_import (path, ini, bin, &o, &err) && strstr (err.message,
          "sgd, adam, adamw"), "optimizer: %s", err.message);
  CHECK (!exists (ini) && !exists (bin), "files left behind");
  /* mse keeps a final softmax; nothing to absorb here, the INI says mse */
  o = (tt_onnx_options) {
  .loss = "mse"};
  CHECK (!tt_onnx_import (path, ini, bin, &o, &err), "mse: %s", err.message);
  char *text = tt_test_read_file (ini, NULL);
  CHECK (text && strstr (text, "loss = mse\n"), "mse INI: %s", text);
  free (text);
}

int
main (int argc, char **argv)
{
  root = argc > 1 ? argv[1] : ".";
  snprintf (dir, sizeof dir, "/tmp/tt-onnx-XXXXXX");
  if (!mkdtemp (dir))
    return 2;
  TT_TEST_RUN (test_fixtures);
  TT_TEST_RUN (test_dropout_kept);
  TT_TEST_RUN (test_softmax_absorbed);
  TT_TEST_RUN (test_refusals);
  TT_TEST_RUN (test_bad_options);
  TT_TEST_RUN (test_tf_dropout_kept);
  char cmd[300];
  snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system (cmd))
    printf ("could not remove %s\n", dir);
  return tt_test_summary ();
}
