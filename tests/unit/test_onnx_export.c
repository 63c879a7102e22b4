/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer export-onnx (tt_onnx_export): for every fixture of
 * tests/onnx/, import -> train a few steps (SGD, and Adam and AdamW for
 * two, whose BIN holds the moments too; random data; batch
 * normalization's running statistics move too) -> save as a BIN and as a
 * bundle -> export -> import the exported file again: its BIN is the
 * trained weights bit for bit, its INI the first import's. Exporting the
 * untrained weights gives back the fixture byte for byte (PyTorch writes
 * raw_data, and protobuf-c packs the fields in its order). With
 * python3-onnx (/usr/bin/python3), onnx.checker accepts every exported file (else a line
 * says it was skipped). Then the refusals: weights of another model, a
 * missing weights file, a file that is no ONNX model; nothing written.
 * Usage: test_onnx_export SOURCE_ROOT
 */
#include "tt_engine.h"
#include "tt_onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
      fprintf (stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); } } while (0)

static unsigned char *
slurp (const char *path, size_t *len)
{
  FILE *f = fopen (path, "rb");
  if (!f)
    return NULL;
  fseek (f, 0, SEEK_END);
  long n = ftell (f);
  fseek (f, 0, SEEK_SET);
  unsigned char *d = malloc (n > 0 ? (size_t) n : 1);
  *len = d ? fread (d, 1, (size_t) n, f) : 0;
  fclose (f);
  return d;
}

static const char *const fixtures[] = {
  "mlp_op13", "mlp_op17", "mlp_softmax_op13", "mlp_dropout_train_op13",
  "cnn_train_op13", "cnn_train_op17", "residual_op13", "residual_op17",
  "residual_down_op15", "dwsep_op13", "dwsep_op17", "conv1d_op13",
  "conv1d_pool_op17", "folded_op14",
  /* ConvTranspose (its weight's axes swapped), Concat, Resize, Mul */
  "deconv_op13", "deconv_op17", "concat_up_op13", "se_op17", "split_op13",
};

static char dir[64];
static int have_checker;

static void
path_in (char *buf, size_t cap, const char *name)
{
  snprintf (buf, cap, "%s/%s", dir, name);
}

/* trains the imported model 3 steps on seeded random data */
static void
train (const char *ini, const char *bin, const char *out_bin,
    const char *out_ttb)
{
  tt_error err;
  tt_open_options oo = { 0 };
  oo.weights = bin;
  tt_model *m = tt_model_open (ini, &oo, NULL, &err);
  CHECK (m, "%s", err.message);
  if (!m)
    return;
  tt_shape in;
  tt_model_input_shape (m, 0, &in);
  const tt_shape ls = tt_model_label_shape (m);
  const size_t n_in = (size_t) in.channel * in.height * in.width;
  const size_t n_l = (size_t) ls.channel * ls.height * ls.width;
  const uint32_t b = tt_model_batch_size (m);
  float *x = malloc (b * n_in * sizeof *x), *y = calloc (b * n_l, sizeof *y);
  unsigned r = 12345;
  for (size_t k = 0; k < b * n_in; k++) {
    r = r * 1664525u + 1013904223u;
    x[k] = (float) (r >> 8) / (float) (1 << 24) * 2 - 1;
  }
  for (uint32_t k = 0; k < b; k++)
    y[k * n_l + k % n_l] = 1;
  const void *inputs[1] = { x };
  for (int s = 0; s < 3; s++)
    CHECK (!tt_model_train_batch (m, b, inputs, NULL, y, NULL, &err), "%s",
        err.message);
  CHECK (!tt_model_save (m, out_bin, &err), "%s", err.message);
  CHECK (!tt_model_save (m, out_ttb, &err), "%s", err.message);
  free (x);
  free (y);
  tt_model_free (m);
}

static void
check_reimport (const char *name, const char *exported, const char *ini,
    const char *trained_bin, const tt_onnx_options * opt)
{
  char re_ini[128], re_bin[128];
  tt_error err;
  path_in (re_ini, sizeof re_ini, "re.ini");
  path_in (re_bin, sizeof re_bin, "re.bin");
  CHECK (!tt_onnx_import (exported, re_ini, re_bin, opt, &err), "%s: %s",
      name, err.message);
  size_t na = 0, nb = 0, ia = 0, ib = 0;
  unsigned char *a = slurp (re_bin, &na), *b = slurp (trained_bin, &nb);
  unsigned char *ta = slurp (ini, &ia), *tb = slurp (re_ini, &ib);
  /* (a saved BIN has the counters after the weights) */
  CHECK (a && b && na > 0 && nb >= na && !memcmp (a, b, na),
      "%s: the re-imported weights (%zu bytes) differ from the trained "
      "(%zu bytes)", name, na, nb);
  /* the INIs: the same but for the first line (the file's name) */
  const char *ea = ta ? memchr (ta, '\n', ia) : NULL;
  const char *eb = tb ? memchr (tb, '\n', ib) : NULL;
  CHECK (ea && eb && ia - (size_t) (ea - (char *) ta) ==
      ib - (size_t) (eb - (char *) tb) && !memcmp (ea, eb,
          ia - (size_t) (ea - (char *) ta)), "%s: the INIs differ", name);
  free (a);
  free (b);
  free (ta);
  free (tb);
  unlink (re_ini);
  unlink (re_bin);
}

static void
check_checker (const char *name, const char *path)
{
  if (!have_checker)
    return;
  char cmd[512];
  snprintf (cmd, sizeof cmd, "/usr/bin/python3 -c \"import onnx; "
      "onnx.checker.check_model(onnx.load('%s'), full_check=True)\"", path);
  CHECK (system (cmd) == 0, "%s: onnx.checker refuses %s", name, path);
}

static void
check_fixture (const char *root, const char *name, const char *optimizer)
{
  tt_onnx_options opt = { 0 };
  opt.optimizer = optimizer;
  char onnx[512], ini[128], bin[128], tbin[128], ttb[128], out[128];
  tt_error err;
  snprintf (onnx, sizeof onnx, "%s/tests/onnx/%s.onnx", root, name);
  path_in (ini, sizeof ini, "m.ini");
  path_in (bin, sizeof bin, "m.bin");
  path_in (tbin, sizeof tbin, "trained.bin");
  path_in (ttb, sizeof ttb, "trained.ttb");
  path_in (out, sizeof out, "out.onnx");
  if (tt_onnx_import (onnx, ini, bin, &opt, &err)) {
    CHECK (0, "%s: %s", name, err.message);
    return;
  }
  /* the untrained weights: the fixture again */
  CHECK (!tt_onnx_export (onnx, bin, out, &err), "%s: %s", name, err.message);
  size_t n0 = 0, n1 = 0;
  unsigned char *f0 = slurp (onnx, &n0), *f1 = slurp (out, &n1);
  CHECK (f0 && f1 && n0 == n1 && !memcmp (f0, f1, n0), "%s: the export "
      "of the imported weights is not the fixture byte for byte (%zu bytes, "
      "%zu)", name, n1, n0);
  free (f0);
  free (f1);
  check_reimport (name, out, ini, bin, &opt);

  train (ini, bin, tbin, ttb);
  CHECK (!tt_onnx_export (onnx, tbin, out, &err), "%s: %s", name, err.message);
  check_reimport (name, out, ini, tbin, &opt);
  check_checker (name, out);
  /* from the bundle: the same file */
  char out2[128];
  path_in (out2, sizeof out2, "out2.onnx");
  CHECK (!tt_onnx_export (onnx, ttb, out2, &err), "%s: %s", name, err.message);
  f0 = slurp (out, &n0);
  f1 = slurp (out2, &n1);
  CHECK (f0 && f1 && n0 == n1 && !memcmp (f0, f1, n0), "%s: the export "
      "from the bundle differs from that from the BIN", name);
  free (f0);
  free (f1);
  unlink (out2);
  unlink (out);
  unlink (tbin);
  unlink (ttb);
  unlink (ini);
  unlink (bin);
}

static void
check_refusals (const char *root)
{
  char mlp[512], cnn[512], ini[128], bin[128], out[128];
  tt_error err;
  snprintf (mlp, sizeof mlp, "%s/tests/onnx/mlp_op13.onnx", root);
  snprintf (cnn, sizeof cnn, "%s/tests/onnx/cnn_train_op13.onnx", root);
  path_in (ini, sizeof ini, "c.ini");
  path_in (bin, sizeof bin, "c.bin");
  path_in (out, sizeof out, "bad.onnx");
  CHECK (!tt_onnx_import (cnn, ini, bin, NULL, &err), "%s", err.message);
  /* weights of another model */
  CHECK (tt_onnx_export (mlp, bin, out, &err) && strstr (err.message, mlp)
      && strstr (err.message, bin), "another model's weights: %s", err.message);
  CHECK (access (out, F_OK) != 0, "%s written", out);
  /* missing weights */
  CHECK (tt_onnx_export (mlp, "/nonexistent/w.bin", out, &err) &&
      strstr (err.message, "/nonexistent/w.bin"), "missing weights: %s",
      err.message);
  /* no ONNX model */
  CHECK (tt_onnx_export (ini, bin, out, &err) && strstr (err.message, ini),
      "an INI as the model: %s", err.message);
  CHECK (access (out, F_OK) != 0, "%s written", out);
  unlink (ini);
  unlink (bin);
  /* a recurrent layer's weights are re-laid out from several
   * initializers: refused, naming the layer (onnx_map_rnn.c) */
  char rnn[512];
  snprintf (rnn, sizeof rnn, "%s/tests/onnx/rnn_last_op13.onnx", root);
  CHECK (!tt_onnx_import (rnn, ini, bin, NULL, &err), "%s", err.message);
  CHECK (tt_onnx_export (rnn, bin, out, &err) && strstr (err.message,
          "'rnn_RNN_1' (rnn)") && strstr (err.message, "no recorded "
          "initializer"), "rnn: %s", err.message);
  CHECK (access (out, F_OK) != 0, "%s written", out);
  unlink (ini);
  unlink (bin);
}

int
main (int argc, char **argv)
{
  const char *root = argc > 1 ? argv[1] : ".";
  snprintf (dir, sizeof dir, "/tmp/tt-onnx-export-XXXXXX");
  if (!mkdtemp (dir)) {
    perror ("mkdtemp");
    return 1;
  }
  have_checker =
      system ("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") == 0;
  if (!have_checker)
    printf ("skipped: onnx.checker (python3-onnx is not installed)\n");
  for (size_t k = 0; k < sizeof fixtures / sizeof *fixtures; k++)
    check_fixture (root, fixtures[k], NULL);
  /* a BIN with Adam's moments after the weights */
  check_fixture (root, "mlp_op13", "adam");
  check_fixture (root, "cnn_train_op13", "adamw");
  check_refusals (root);
  rmdir (dir);
  printf ("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
