/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The importer's entry points: the file read with its size bounded, then
 * model -> graph order -> input layers -> each node folded or mapped ->
 * the INI and BIN (onnx_write.c), written atomically, both or neither.
 */
#include "onnx_internal.h"
#include "onnx_map_rnn.h"
#include "atomic_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static tt_status
import_options (onnx_import * im, const tt_onnx_options * opt, tt_error * err)
{
  if (opt)
    im->opt = *opt;
  im->loss = im->opt.loss ? im->opt.loss : "cross_softmax";
  im->optimizer = im->opt.optimizer ? im->opt.optimizer : "sgd";
  if (strcmp (im->loss, "cross_softmax") && strcmp (im->loss, "cross_sigmoid")
      && strcmp (im->loss, "mse"))
    return onnx_fail (NULL, err, TT_ERR_INVALID, "loss '%.60s': allowed are "
        "cross_softmax, cross_sigmoid, mse", im->loss);
  if (strcmp (im->optimizer, "sgd") && strcmp (im->optimizer, "adam") &&
      strcmp (im->optimizer, "adamw"))
    return onnx_fail (NULL, err, TT_ERR_INVALID, "optimizer '%.60s': allowed "
        "are sgd, adam, adamw", im->optimizer);
  if (!(im->opt.learning_rate >= 0) || im->opt.learning_rate > 1e6)
    return onnx_fail (NULL, err, TT_ERR_INVALID, "learning rate %g: allowed "
        "are numbers above 0", im->opt.learning_rate);
  if (im->opt.batch > 65536)
    return onnx_fail (NULL, err, TT_ERR_INVALID, "batch %u: allowed are 1 to "
        "65536", im->opt.batch);
  return TT_OK;
}

tt_status
tt_onnx_convert (const void *data, size_t len, const char *name,
    const tt_onnx_options * opt, char **ini, size_t *ini_len,
    unsigned char **bin, size_t *bin_len, tt_error * err)
{
  onnx_import im;
  tt_status st = onnx_convert_keep (&im, data, len, name, opt, ini, ini_len,
      bin, bin_len, err);
  onnx_import_free (&im);
  return st;
}

tt_status
onnx_convert_keep (onnx_import * im, const void *data, size_t len,
    const char *name, const tt_onnx_options * opt, char **ini,
    size_t *ini_len, unsigned char **bin, size_t *bin_len, tt_error * err)
{
  memset (im, 0, sizeof *im);
  im->path = name ? name : "ONNX model";
  *ini = NULL;
  *bin = NULL;
  *ini_len = *bin_len = 0;
  tt_status st = import_options (im, opt, err);
  if (!st)
    st = onnx_model_read (im, data, len, err);
  if (!st)
    st = onnx_graph_order (im, err);
  /* an input layer per graph input that is no initializer */
  for (size_t k = 0; !st && k < im->n_values; k++) {
    onnx_value *v = &im->values[k];
    if (v->is_const || v->producer >= 0)
      continue;
    int l = onnx_layer_add (im, v->name, "input", err);
    if (l < 0) {
      st = err->status;
      break;
    }
    v->layer = l;
    onnx_layer *L = &im->layers[l];
    snprintf (L->keys, sizeof L->keys, "input_shape = %lld:%lld:%lld\n",
        (long long) (v->rank == 2 ? 1 : v->dims[1]),
        (long long) (v->rank == 4 ? v->dims[2] : 1),
        (long long) v->dims[v->rank - 1]);
  }
  for (size_t k = 0; !st && k < im->n_order; k++) {
    bool done;
    if (im->absorbed[im->order[k]])
      continue;                 /* handled with another node */
    st = onnx_fold_rnn (im, im->order[k], &done, err);
    if (!st && !done)
      st = onnx_fold_node (im, im->order[k], &done, err);
    if (!st && !done)
      st = onnx_map_node (im, im->order[k], err);
  }
  if (!st) {
    const onnx_value *o = &im->values[im->output];
    if (o->is_const || o->layer < 0 || o->padded)
      st = onnx_fail (im, err, TT_ERR_INVALID, "the graph's output "
          "'%.200s' is not the output of a layer", o->name);
    else if (im->layers[o->layer].n_inputs == 0)
      st = onnx_fail (im, err, TT_ERR_INVALID, "the graph's output is its "
          "input: there is no layer to train");
    else if (o->layer != (int) im->n_layers - 1)
      st = onnx_fail (im, err, TT_ERR_INVALID, "the graph's output is not "
          "the last layer mapped (layer '%s' is): not supported",
          im->layers[im->n_layers - 1].name);
  }
  if (!st)
    st = onnx_freeze_apply (im, err);
  if (!st)
    st = onnx_write_text (im, ini, ini_len, bin, bin_len, err);
  return st;
}

tt_status
onnx_file_read (const char *path, unsigned char **data, size_t *len,
    tt_error * err)
{
  onnx_import im = {.path = path };
  FILE *f = fopen (path, "rb");
  if (!f)
    return onnx_fail (&im, err, TT_ERR_IO, "cannot open: %s", strerror (errno));
  struct stat sb;
  if (fstat (fileno (f), &sb) || !S_ISREG (sb.st_mode)) {
    fclose (f);
    return onnx_fail (&im, err, TT_ERR_IO, "not a regular file");
  }
  if ((uint64_t) sb.st_size > ONNX_MAX_FILE) {
    fclose (f);
    return onnx_fail (&im, err, TT_ERR_INVALID, "%lld bytes: larger than "
        "the %zu an ONNX model may have here", (long long) sb.st_size,
        ONNX_MAX_FILE);
  }
  *len = (size_t) sb.st_size;
  *data = malloc (*len ? *len : 1);
  if (!*data) {
    fclose (f);
    return onnx_fail (&im, err, TT_ERR_NOMEM, "out of memory");
  }
  size_t got = fread (*data, 1, *len, f);
  int bad = ferror (f);
  fclose (f);
  if (bad || got != *len) {
    free (*data);
    *data = NULL;
    return onnx_fail (&im, err, TT_ERR_IO, "read failed");
  }
  return TT_OK;
}

tt_status
tt_onnx_import (const char *onnx_path, const char *ini_path,
    const char *bin_path, const tt_onnx_options * opt, tt_error * err)
{
  unsigned char *data = NULL, *bin = NULL;
  char *ini = NULL;
  size_t len = 0, ini_len = 0, bin_len = 0;
  tt_status st = onnx_file_read (onnx_path, &data, &len, err);
  if (!st)
    st = tt_onnx_convert (data, len, onnx_path, opt, &ini, &ini_len, &bin,
        &bin_len, err);
  free (data);
  if (st)
    return st;
  tt_atomic_file fi, fb;
  bool open_i = false, open_b = false;
  if ((st = tt_atomic_file_open (&fi, ini_path, err)))
    goto done;
  open_i = true;
  if ((st = tt_atomic_file_open (&fb, bin_path, err)))
    goto done;
  open_b = true;
  if ((st = tt_atomic_file_write (&fi, ini, ini_len, err)) ||
      (st = tt_atomic_file_write (&fb, bin, bin_len, err)))
    goto done;
  open_b = false;
  if ((st = tt_atomic_file_commit (&fb, err)))
    goto done;
  open_i = false;
  if ((st = tt_atomic_file_commit (&fi, err)))
    unlink (bin_path);          /* both or neither */
done:
  if (open_b)
    tt_atomic_file_abort (&fb);
  if (open_i)
    tt_atomic_file_abort (&fi);
  free (ini);
  free (bin);
  return st;
}
