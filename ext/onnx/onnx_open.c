/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Opening an ONNX file as a model, in memory: the file converted
 * (tt_onnx_convert), its INI text opened with the caller's options
 * (tt_model_open_ini_text) and its initializers loaded as the weights,
 * unless options->weights names others. No file is written. What the
 * elements call for a model path ending in .onnx.
 */
#include "onnx_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool
tt_onnx_is_onnx_path (const char *path)
{
  const size_t n = path ? strlen (path) : 0;
  return n >= 5 && !strcasecmp (path + n - 5, ".onnx");
}

tt_model *
tt_onnx_model_open (const char *path, const tt_open_options * options,
    const tt_onnx_options * onnx, tt_open_info * info, tt_error * err)
{
  static const tt_open_options defaults = { 0 };
  const tt_open_options *o = options ? options : &defaults;
  tt_open_info scratch;
  if (!info)
    info = &scratch;
  info->kind = TT_MODEL_FILE_INI;
  info->failed_step = TT_OPEN_READ;
  unsigned char *data = NULL, *bin = NULL;
  char *ini = NULL;
  size_t len = 0, ini_len = 0, bin_len = 0;
  tt_model *m = NULL;
  if (onnx_file_read (path, &data, &len, err) ||
      tt_onnx_convert (data, len, path, onnx, &ini, &ini_len, &bin, &bin_len,
          err))
    goto done;
  tt_open_options oo = *o;
  oo.weights = NULL;
  m = tt_model_open_ini_text (ini, ini_len, path, &oo, info, err);
  if (!m)
    goto done;
  info->failed_step = TT_OPEN_WEIGHTS;
  if (o->weights && *o->weights ? tt_model_load_weights (m, o->weights, err)
      : tt_model_load_bin_memory (m, bin, bin_len, path, err)) {
    tt_model_free (m);
    m = NULL;
    goto done;
  }
  info->failed_step = TT_OPEN_OK;
done:
  free (data);
  free (ini);
  free (bin);
  return m;
}
