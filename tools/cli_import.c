/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer import: an ONNX model as a model INI and a BIN of its
 * weights beside it; export-onnx: trained weights written back into the
 * ONNX file (ext/onnx/tt_onnx.h; docs/onnx.md).
 */
#include "cli.h"
#include "tt_bundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef TT_HAVE_ONNX
#include "tt_onnx.h"

/* -o OUT.ttb: the imported model opened in memory, planned for the
 * batch and saved as a bundle (its initializers the weights) */
static int
import_bundle (const cli_options * o, const tt_onnx_options * opt)
{
  tt_open_options oo = { 0 };
  oo.batch_size = o->batch;
  oo.alignment = o->align;
  if (o->has_seed) {
    oo.has_seed = true;
    oo.seed = o->seed;
  }
  tt_error err;
  tt_model *m = tt_onnx_model_open (o->model, &oo, opt, NULL, &err);
  if (!m)
    return cli_fail ("%s", err.message);
  tt_bundle_options bo = { 0 };
  bo.alignment = o->align;
  bo.compress = o->compress;
  tt_status st = tt_bundle_save (m, o->output, &bo, &err);
  tt_model_free (m);
  if (st)
    return cli_fail ("%s", err.message);
  printf ("imported %s: %s\n", o->model, o->output);
  return 0;
}

int
cli_import (const cli_options * o)
{
  if (!o->output)
    return cli_fail ("import needs -o OUT.ini (or OUT.ttb for a bundle)");
  size_t n = strlen (o->output);
  const bool bundle = n > 4 && !strcasecmp (o->output + n - 4, ".ttb");
  if (!bundle && (n < 5 || strcasecmp (o->output + n - 4, ".ini")))
    return cli_fail ("import: -o '%s' must end in .ini (the BIN is written "
        "beside it, .bin instead of .ini) or .ttb (a bundle)", o->output);
  double lr = 0;
  if (o->learning_rate) {
    char *end;
    lr = strtod (o->learning_rate, &end);
    if (end == o->learning_rate || *end || !(lr > 0) || lr > 1e6)
      return cli_fail ("--learning-rate needs a number above 0, got '%s'",
          o->learning_rate);
  }
  tt_onnx_options opt = {
    .loss = o->loss,
    .optimizer = o->optimizer,
    .learning_rate = lr,
    .batch = o->batch,
    .freeze = o->freeze,
  };
  if (bundle)
    return import_bundle (o, &opt);
  char *bin = malloc (n + 1);
  if (!bin)
    return cli_fail ("out of memory");
  memcpy (bin, o->output, n - 4);
  strcpy (bin + n - 4, ".bin");
  tt_error err;
  if (tt_onnx_import (o->model, o->output, bin, &opt, &err)) {
    free (bin);
    return cli_fail ("%s", err.message);
  }
  printf ("imported %s: %s, %s\n", o->model, o->output, bin);
  free (bin);
  return 0;
}

int
cli_export_onnx (const cli_options * o)
{
  if (!o->weights)
    return cli_fail ("export-onnx needs --weights TRAINED.bin|.ttb (the "
        "weights of the model %s imports to)", o->model);
  if (!o->output)
    return cli_fail ("export-onnx needs -o OUT.onnx");
  tt_error err;
  if (tt_onnx_export (o->model, o->weights, o->output, &err))
    return cli_fail ("%s", err.message);
  printf ("exported %s with the weights of %s: %s\n", o->model, o->weights,
      o->output);
  return 0;
}
#else
int
cli_import (const cli_options * o)
{
  (void) o;
  return cli_fail ("import: this build has no ONNX support (it needs "
      "protoc-c, libprotobuf-c and onnx.proto: Debian's protobuf-c-compiler, "
      "libprotobuf-c-dev, libonnx-dev)");
}

int
cli_export_onnx (const cli_options * o)
{
  return cli_import (o);
}
#endif
