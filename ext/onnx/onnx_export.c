/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Trained weights back into the ONNX file they were imported from
 * (tensor-trainer export-onnx, docs/onnx.md "Trained weights back out").
 * The ONNX file is converted again, as tensor-trainer import converts it:
 * that gives the INI the weights belong to, the BIN's layer order and,
 * per weight, the initializer it came from and how (onnx_weights.c); no
 * record is kept in the INI, so an imported INI edited by hand does not
 * change what is written. The weights (a BIN or a bundle) are loaded into
 * that INI's model (with the importer's optimizers in turn: a BIN holds
 * Adam's moments after the weights), so their size and values are checked
 * as training checks them, and each weight, its layout change undone, replaces its
 * initializer's values (as float32 raw_data). Everything else in the
 * file (nodes, names, attributes, metadata, other initializers) is
 * written back as it was read. The output is written atomically.
 */
#include "onnx_internal.h"
#include "atomic_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the trained weights in BIN order, loaded into the imported INI's model */
static float *
export_weights (onnx_import * im, const char *ini, size_t ini_len,
    size_t floats, const char *weights, tt_error * err)
{
  tt_error e;
  float *w = NULL;
  tt_model *m = tt_model_load_ini_text (ini, ini_len, im->path, &e);
  tt_status st = m ? TT_OK : e.status;
  if (!st)
    st = tt_model_set_batch_size (m, 1, &e);
  if (!st)
    st = tt_model_compile (m, &e);
  if (!st)
    st = tt_model_load_weights (m, weights, &e);
  if (!st && tt_model_weight_floats (m) != floats) {
    st = TT_ERR_INVALID;
    snprintf (e.message, sizeof e.message, "%zu weights, the import %zu",
        tt_model_weight_floats (m), floats);
  }
  if (!st && !(w = malloc ((floats ? floats : 1) * sizeof *w))) {
    st = TT_ERR_NOMEM;
    snprintf (e.message, sizeof e.message, "out of memory");
  }
  if (!st)
    st = tt_model_export_weights (m, w, floats, &e);
  tt_model_free (m);
  if (st) {
    free (w);
    onnx_fail (im, err, st, "the weights %s do not fit this model: %s",
        weights, e.message);
    return NULL;
  }
  return w;
}

static int
initializer_find (const Onnx__GraphProto * g, const char *name)
{
  for (size_t k = 0; k < g->n_initializer; k++)
    if (g->initializer[k]->name && !strcmp (g->initializer[k]->name, name))
      return (int) k;
  return -1;
}

/* per initializer: the new values (little-endian float32) or NULL */
static tt_status
export_fill (onnx_import * im, const float *trained, unsigned char **fresh,
    tt_error * err)
{
  const Onnx__GraphProto *g = im->proto->graph;
  int *order = onnx_layer_order (im);
  float *tmp = NULL;
  tt_status st = TT_OK;
  if (!order)
    return onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
  size_t at = 0;
  for (size_t k = 0; !st && k < im->n_layers; k++) {
    const onnx_layer *L = &im->layers[order[k]];
    for (int w = 0; !st && w < L->n_w; w++) {
      const onnx_weight_src *s = &L->src[w];
      const size_t count = L->wn[w];
      int i = s->value ? initializer_find (g, s->value) : -1;
      if (!s->value) {
        st = onnx_fail (im, err, TT_ERR_INVALID, "layer '%s' (%s): its "
            "weight %d has no recorded initializer (its mapping does not "
            "support export-onnx)", L->name, L->type, w);
        break;
      }
      if (i < 0) {
        st = onnx_fail (im, err, TT_ERR_INVALID, "layer '%s': its weight "
            "%d comes from '%.200s', a value the graph computes, not an "
            "initializer: it cannot be written back", L->name, w, s->value);
        break;
      }
      const Onnx__TensorProto *t = g->initializer[i];
      size_t n = 1;
      for (size_t d = 0; d < t->n_dims; d++)
        n *= (size_t) t->dims[d];
      if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || n != count) {
        st = onnx_fail (im, err, TT_ERR_INVALID, "initializer '%.200s' "
            "(data type %d, %zu values) for layer '%s': only float "
            "initializers of the weight's %zu values are written back",
            s->value, (int) t->data_type, n, L->name, count);
        break;
      }
      free (fresh[i]);
      fresh[i] = malloc (count * 4 + 1);
      free (tmp);
      tmp = malloc ((count + 1) * sizeof *tmp);
      if (!fresh[i] || !tmp) {
        st = onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
        break;
      }
      onnx_weight_back (s, trained + at, count, tmp);
      for (size_t v = 0; v < count; v++) {
        uint32_t b;
        memcpy (&b, &tmp[v], 4);
        fresh[i][4 * v] = (unsigned char) b;
        fresh[i][4 * v + 1] = (unsigned char) (b >> 8);
        fresh[i][4 * v + 2] = (unsigned char) (b >> 16);
        fresh[i][4 * v + 3] = (unsigned char) (b >> 24);
      }
      at += count;
    }
  }
  free (tmp);
  free (order);
  return st;
}

/* the proto with the fresh values, serialized; the proto restored */
static tt_status
export_pack (onnx_import * im, unsigned char **fresh, unsigned char **out,
    size_t *out_len, tt_error * err)
{
  Onnx__GraphProto *g = im->proto->graph;
  const size_t n = g->n_initializer;
  ProtobufCBinaryData *raw = calloc (n + 1, sizeof *raw);
  protobuf_c_boolean *had = calloc (n + 1, sizeof *had);
  size_t *nf = calloc (n + 1, sizeof *nf);
  if (!raw || !had || !nf) {
    free (raw);
    free (had);
    free (nf);
    return onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
  }
  for (size_t k = 0; k < n; k++) {
    Onnx__TensorProto *t = g->initializer[k];
    if (!fresh[k])
      continue;
    raw[k] = t->raw_data;
    had[k] = t->has_raw_data;
    nf[k] = t->n_float_data;
    size_t count = 1;
    for (size_t d = 0; d < t->n_dims; d++)
      count *= (size_t) t->dims[d];
    t->has_raw_data = 1;
    t->raw_data.data = fresh[k];
    t->raw_data.len = count * 4;
    t->n_float_data = 0;
  }
  const size_t len = onnx__model_proto__get_packed_size (im->proto);
  *out = malloc (len ? len : 1);
  if (*out)
    *out_len = onnx__model_proto__pack (im->proto, *out);
  for (size_t k = 0; k < n; k++) {
    Onnx__TensorProto *t = g->initializer[k];
    if (!fresh[k])
      continue;
    t->raw_data = raw[k];
    t->has_raw_data = had[k];
    t->n_float_data = nf[k];
  }
  free (raw);
  free (had);
  free (nf);
  if (!*out)
    return onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
  return TT_OK;
}

tt_status
tt_onnx_export (const char *onnx_path, const char *weights,
    const char *out_path, tt_error * err)
{
  unsigned char *data = NULL, *bin = NULL, *packed = NULL, **fresh = NULL;
  char *ini = NULL;
  float *trained = NULL;
  size_t len = 0, ini_len = 0, bin_len = 0, packed_len = 0;
  onnx_import im;
  memset (&im, 0, sizeof im);
  tt_status st = onnx_file_read (onnx_path, &data, &len, err);
  if (!st)
    st = onnx_convert_keep (&im, data, len, onnx_path, NULL, &ini, &ini_len,
        &bin, &bin_len, err);
  if (!st && !(trained = export_weights (&im, ini, ini_len, bin_len / 4,
              weights, err))) {
    /* a BIN saved with Adam's moments loads into an Adam model only: the
     * INI again with the importer's other optimizers (the first message
     * if none fits) */
    static const char *const others[] = { "adam", "adamw" };
    tt_error first = *err;
    for (size_t k = 0; !trained && k < sizeof others / sizeof *others; k++) {
      tt_onnx_options o = { 0 };
      char *ini2 = NULL;
      unsigned char *bin2 = NULL;
      size_t ini2_len, bin2_len;
      o.optimizer = others[k];
      if (!tt_onnx_convert (data, len, onnx_path, &o, &ini2, &ini2_len, &bin2,
              &bin2_len, err))
        trained = export_weights (&im, ini2, ini2_len, bin_len / 4, weights,
            err);
      free (ini2);
      free (bin2);
    }
    if (!trained) {
      *err = first;
      st = err->status;
    }
  }
  if (!st && !(fresh = calloc (im.proto->graph->n_initializer + 1,
              sizeof *fresh)))
    st = onnx_fail (&im, err, TT_ERR_NOMEM, "out of memory");
  if (!st)
    st = export_fill (&im, trained, fresh, err);
  if (!st)
    st = export_pack (&im, fresh, &packed, &packed_len, err);
  if (!st) {
    tt_atomic_file f;
    if (!(st = tt_atomic_file_open (&f, out_path, err))) {
      if ((st = tt_atomic_file_write (&f, packed, packed_len, err)))
        tt_atomic_file_abort (&f);
      else
        st = tt_atomic_file_commit (&f, err);
    }
  }
  if (fresh)
    for (size_t k = 0; k < im.proto->graph->n_initializer; k++)
      free (fresh[k]);
  free (fresh);
  onnx_import_free (&im);
  free (packed);
  free (trained);
  free (data);
  free (ini);
  free (bin);
  return st;
}
