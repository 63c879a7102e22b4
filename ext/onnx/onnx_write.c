/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The importer's output: the model INI (a [Model] with the loss, an
 * [Optimizer], an input section per graph input, a section per layer
 * naming its inputs) and the BIN (every layer's weights in nntrainer's
 * layer order: reverse post-order of a depth-first search over consumers,
 * as docs/formats.md "Layer order" says, sections being created in
 * order). The engine then reads both, as training will: the INI compiles,
 * the BIN has exactly the size the model expects and finite values.
 */
#include "onnx_internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct
{
  char *s;
  size_t len, cap;
  bool failed;
} onnx_text;

static void text_add (onnx_text * t, const char *fmt, ...)
    __attribute__((format (printf, 2, 3)));

static void
text_add (onnx_text * t, const char *fmt, ...)
{
  if (t->failed)
    return;
  for (;;) {
    va_list ap;
    va_start (ap, fmt);
    int n = vsnprintf (t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len :
        0, fmt, ap);
    va_end (ap);
    if (n < 0) {
      t->failed = true;
      return;
    }
    if (t->s && t->len + (size_t) n < t->cap) {
      t->len += (size_t) n;
      return;
    }
    size_t cap = (t->cap ? t->cap * 2 : 4096) + (size_t) n;
    char *s = realloc (t->s, cap);
    if (!s) {
      t->failed = true;
      return;
    }
    t->s = s;
    t->cap = cap;
  }
}

/* printable ASCII of s, at most 60 characters */
static void
clean_copy (char *dst, size_t cap, const char *s)
{
  size_t k = 0;
  for (; s && *s && k + 1 < cap && k < 60; s++)
    dst[k++] = isprint ((unsigned char) *s) ? *s : '?';
  dst[k] = '\0';
}

/* nntrainer's layer order (reverse post-order of the consumer search) */
int *
onnx_layer_order (const onnx_import * im)
{
  const size_t n = im->n_layers;
  int *out = malloc ((n + 1) * sizeof *out);
  int *stack = malloc ((n + 1) * sizeof *stack);
  size_t *next = malloc ((n + 1) * sizeof *next);
  bool *seen = calloc (n + 1, sizeof *seen);
  if (!out || !stack || !next || !seen) {
    free (out);
    out = NULL;
    goto done;
  }
  size_t left = n;
  for (size_t r = 0; r < n; r++) {
    if (seen[r])
      continue;
    size_t depth = 0;
    stack[depth] = (int) r;
    next[depth++] = 0;
    seen[r] = true;
    while (depth) {
      const int at = stack[depth - 1];
      /* the next consumer of at, in creation order */
      int found = -1;
      while (next[depth - 1] < n && found < 0) {
        size_t c = next[depth - 1]++;
        for (int k = 0; k < im->layers[c].n_inputs; k++)
          if (im->layers[c].inputs[k] == at && !seen[c]) {
            found = (int) c;
            break;
          }
      }
      if (found >= 0) {
        seen[found] = true;
        stack[depth] = found;
        next[depth++] = 0;
      } else {
        out[--left] = at;
        depth--;
      }
    }
  }
done:
  free (stack);
  free (next);
  free (seen);
  return out;
}

/* cross_softmax and cross_sigmoid in nntrainer's form, which both
 * engines read: `loss = cross` after a final softmax (sigmoid) activation
 * layer, the pair folded into the loss (nntrainer 65dccdec's [Model] loss
 * takes only cross, mse and kld, and needs that activation layer last).
 * The final Softmax (Sigmoid) the mapping absorbed becomes that layer. */
static tt_status
cross_entropy_layer (onnx_import * im, const char **loss, tt_error * err)
{
  *loss = im->loss;
  const bool softmax = !strcmp (im->loss, "cross_softmax");
  if (!softmax && strcmp (im->loss, "cross_sigmoid"))
    return TT_OK;
  const char *fn = softmax ? "softmax" : "sigmoid";
  const int last = (int) im->n_layers - 1;
  const int l = onnx_layer_add (im, fn, "activation", err);
  if (l < 0)
    return err->status;
  onnx_layer *L = &im->layers[l];
  L->inputs[0] = last;
  L->n_inputs = 1;
  onnx_layer_key (L, "activation = %s", fn);
  *loss = "cross";
  return TT_OK;
}

tt_status
onnx_write_text (onnx_import * im, char **ini, size_t *ini_len,
    unsigned char **bin, size_t *bin_len, tt_error * err)
{
  const char *loss;
  if (cross_entropy_layer (im, &loss, err))
    return err->status;
  onnx_text t = { NULL, 0, 0, false };
  char prod[64], ver[64], file[64];
  clean_copy (prod, sizeof prod, im->proto->producer_name);
  clean_copy (ver, sizeof ver, im->proto->producer_version);
  const char *base = strrchr (im->path, '/');
  clean_copy (file, sizeof file, base ? base + 1 : im->path);
  text_add (&t, "# Imported by tensor-trainer import from %s (ONNX IR %lld, "
      "opset %lld%s%s%s%s).\n# Weights: the ONNX initializers, in the BIN "
      "written beside this file.\n", file, (long long) im->ir_version,
      (long long) im->opset, *prod ? ", producer " : "", prod,
      *ver ? " " : "", ver);
  if (strcmp (loss, im->loss))
    text_add (&t, "# The loss: %s, written as nntrainer reads it (loss = "
        "cross after a final %s layer, on the graph's output as logits%s%s)."
        "\n", im->loss, strcmp (im->loss, "cross_softmax") ? "sigmoid" :
        "softmax", *im->absorbed_note ? "; " : "", im->absorbed_note);
  const uint32_t batch = im->opt.batch ? im->opt.batch :
      im->export_batch > 0 ? (uint32_t) im->export_batch : 32;
  text_add (&t, "\n[Model]\ntype = NeuralNetwork\nbatch_size = %u\n"
      "epochs = 1\nloss = %s\n\n[Optimizer]\ntype = %s\nlearning_rate = "
      "%.9g\n", batch, loss, im->optimizer, im->opt.learning_rate > 0 ?
      im->opt.learning_rate : 0.001);
  if (strcmp (im->optimizer, "sgd"))
    text_add (&t, "# torch.optim.Adam's defaults\nepsilon = 1e-8\n"
        "torch_ref = true\n");
  size_t floats = 0;
  for (size_t k = 0; k < im->n_layers; k++) {
    const onnx_layer *l = &im->layers[k];
    text_add (&t, "\n[%s]\ntype = %s\n", l->name, l->type);
    for (int i = 0; i < l->n_inputs; i++) {
      const onnx_layer *in = &im->layers[l->inputs[i]];
      char port[16] = "";
      /* a split's outputs are read as NAME(k) (formats.md, split) */
      if (!strcmp (in->type, "split"))
        snprintf (port, sizeof port, "(%d)", i ? 0 : l->in_port);
      text_add (&t, "%s%s%s%s", i ? ", " : "input_layers = ", in->name,
          port, i + 1 == l->n_inputs ? "\n" : "");
    }
    text_add (&t, "%s", l->keys);
    for (int w = 0; w < l->n_w; w++)
      floats += l->wn[w];
  }
  if (t.failed) {
    free (t.s);
    return onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
  }
  int *order = onnx_layer_order (im);
  float *data = malloc ((floats ? floats : 1) * sizeof *data);
  if (!order || !data) {
    free (order);
    free (data);
    free (t.s);
    return onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
  }
  size_t at = 0;
  for (size_t k = 0; k < im->n_layers; k++) {
    const onnx_layer *l = &im->layers[order[k]];
    for (int w = 0; w < l->n_w; w++) {
      memcpy (data + at, l->w[w], l->wn[w] * sizeof *data);
      at += l->wn[w];
    }
  }
  free (order);
  /* little-endian float32, whatever this machine's order */
  unsigned char *bytes = (unsigned char *) data;
  for (size_t k = 0; k < floats; k++) {
    uint32_t b;
    memcpy (&b, &data[k], 4);
    bytes[4 * k] = (unsigned char) b;
    bytes[4 * k + 1] = (unsigned char) (b >> 8);
    bytes[4 * k + 2] = (unsigned char) (b >> 16);
    bytes[4 * k + 3] = (unsigned char) (b >> 24);
  }
  /* the engine reads both as training will */
  tt_error e;
  tt_model *m = tt_model_load_ini_text (t.s, t.len, "imported INI", &e);
  tt_status st = m ? TT_OK : e.status;
  if (!st)
    st = tt_model_set_batch_size (m, 1, &e);
  if (!st)
    st = tt_model_compile (m, &e);
  if (!st)
    st = tt_model_load_bin_memory (m, bytes, floats * 4, "imported BIN", &e);
  tt_model_free (m);
  if (st) {
    free (data);
    free (t.s);
    return onnx_fail (im, err, st, "the engine refuses the model it maps "
        "to: %s", e.message);
  }
  *ini = t.s;
  *ini_len = t.len;
  *bin = bytes;
  *bin_len = floats * 4;
  return TT_OK;
}
