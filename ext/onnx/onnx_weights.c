/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which ONNX initializer each weight of the BIN comes from, and how: the
 * one place where the importer's layout changes are written down, both
 * ways. A weight is an initializer's values, scaled (Gemm's alpha and
 * beta) and, for Gemm's transB = 1, transposed ([out][in] to our
 * [in][out]). The importer fills weights through onnx_weight_from, which
 * records the source; export-onnx (onnx_export.c) converts the import
 * again to recover these records and applies onnx_weight_back, the
 * inverse, to trained weights.
 */
#include "onnx_internal.h"

#include <stdlib.h>
#include <string.h>

float *
onnx_weight_from (onnx_import * im, onnx_layer * L, const onnx_value * v,
    int64_t rows, int64_t cols, float scale, tt_error * err)
{
  if (L->n_w == ONNX_MAX_LAYER_WEIGHTS) {
    onnx_fail (im, err, TT_ERR_INVALID, "too many weights in a layer");
    return NULL;
  }
  const size_t count = v->count;
  float *w = malloc ((count ? count : 1) * sizeof *w);
  if (!w) {
    onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
    return NULL;
  }
  if (rows > 0) {
    /* v is [rows][cols]; ours its transpose, [cols][rows] */
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++)
        w[c * rows + r] = scale * v->f[r * cols + c];
  } else {
    for (size_t k = 0; k < count; k++)
      w[k] = scale * v->f[k];
  }
  const int k = L->n_w++;
  L->w[k] = w;
  L->wn[k] = count;
  L->src[k].value = v->name;
  L->src[k].rows = rows > 0 ? rows : 0;
  L->src[k].cols = rows > 0 ? cols : 0;
  L->src[k].scale = scale;
  L->src[k].block = 0;
  return w;
}

float *
onnx_weight_swapped (onnx_import * im, onnx_layer * L, const onnx_value * v,
    int64_t rows, int64_t cols, int64_t block, tt_error * err)
{
  float *w = onnx_weight_from (im, L, v, 0, 0, 1.0f, err);
  if (!w)
    return NULL;
  /* v is [rows][cols][block]; ours [cols][rows][block] */
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      memcpy (w + (c * rows + r) * block, v->f + (r * cols + c) * block,
          (size_t) block * sizeof *w);
  onnx_weight_src *s = &L->src[L->n_w - 1];
  s->rows = rows;
  s->cols = cols;
  s->block = block;
  return w;
}

float *
onnx_weight_new (onnx_import * im, onnx_layer * L, size_t count, tt_error * err)
{
  if (L->n_w == ONNX_MAX_LAYER_WEIGHTS) {
    onnx_fail (im, err, TT_ERR_INVALID, "too many weights in a layer");
    return NULL;
  }
  float *w = calloc (count ? count : 1, sizeof *w);
  if (!w) {
    onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
    return NULL;
  }
  const int k = L->n_w++;
  L->w[k] = w;
  L->wn[k] = count;
  memset (&L->src[k], 0, sizeof L->src[k]);
  return w;
}

void
onnx_weight_back (const onnx_weight_src * s, const float *w, size_t count,
    float *out)
{
  /* (a scale of 1, what PyTorch writes, gives the values bit for bit) */
  const float inv = s->scale == 1.0f ? 1.0f : 1.0f / s->scale;
  if (s->rows > 0 && s->block > 1) {
    /* onnx_weight_swapped's inverse (its scale is 1) */
    for (int64_t r = 0; r < s->rows; r++)
      for (int64_t c = 0; c < s->cols; c++)
        memcpy (out + (r * s->cols + c) * s->block,
            w + (c * s->rows + r) * s->block, (size_t) s->block * sizeof *w);
  } else if (s->rows > 0) {
    for (int64_t r = 0; r < s->rows; r++)
      for (int64_t c = 0; c < s->cols; c++)
        out[r * s->cols + c] = s->scale == 1.0f ? w[c * s->rows + r] :
            w[c * s->rows + r] * inv;
  } else {
    for (size_t k = 0; k < count; k++)
      out[k] = s->scale == 1.0f ? w[k] : w[k] * inv;
  }
}
