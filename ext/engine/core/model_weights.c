/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A compiled model's weight values: initialized from its seed, and
 * copied whole to and from one flat array in the BIN's order (the
 * hand-off between models), whose layout a signature names.
 */
#include "tt_internal.h"

#include <stdlib.h>
#include <string.h>

tt_status
tt_model_init_weights (tt_model * m, tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile before initializing",
        m->path);
  if (m->weights_external)
    return tt_model_refuse_external (m, "initialize weights", err);
  /* its own stream, so weights do not depend on how much dropout ran */
  tt_rng rng;
  tt_rng_seed (&rng, m->seed ^ 0x1a1e5eedULL);
  for (uint32_t c = 0; c < m->n_layers; c++) {
    tt_layer *l = &m->layers[m->canonical[c]];
    for (uint32_t i = 0; i < l->n_weights; i++) {
      tt_weight *w = &l->weights[i];
      tt_initializer_fill (&rng, w->init, tt_data (m, w->value), w->count,
          w->fan_in, w->fan_out);
      for (int s = 0; s < 2; s++)
        if (w->opt[s] >= 0)
          memset (tt_data (m, w->opt[s]), 0, w->count * sizeof (float));
    }
  }
  m->epoch = m->iteration = 0;
  return TT_OK;
}

size_t
tt_model_weight_floats (const tt_model * m)
{
  /* the weights' elements, whatever the BIN's width (a 2-byte weight
   * type halves the bytes, not the floats) */
  uint32_t n = 0;
  int *ids = m->compiled ? tt_bin_regions ((tt_model *) m, false, &n) : NULL;
  size_t floats = 0;
  for (uint32_t i = 0; ids && i < n; i++)
    floats += m->tensors[ids[i]].count;
  free (ids);
  return floats;
}

uint64_t
tt_model_weight_signature (const tt_model * m)
{
  uint64_t h = 0xcbf29ce484222325ull;
  uint32_t n = 0;
  int *ids = m->compiled ? tt_bin_regions ((tt_model *) m, false, &n) : NULL;
  for (uint32_t i = 0; ids && i < n; i++) {
    const tt_tensor *t = &m->tensors[ids[i]];
    for (const char *c = t->name; *c; c++)
      h = (h ^ (unsigned char) *c) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
    for (int k = 0; k < 8; k++)
      h = (h ^ ((uint64_t) t->count >> (8 * k) & 0xff)) * 0x100000001b3ull;
  }
  free (ids);
  return h;
}

/* Copies between the model's weight tensors and dst/src in BIN order. */
static tt_status
model_weights_copy (tt_model * m, float *out, const float *in, size_t floats,
    tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile the model first", m->path);
  if (in && m->weights_external)
    return tt_model_refuse_external (m, "load weights", err);
  const size_t want = tt_model_weight_floats (m);
  if (floats != want)
    return tt_fail (err, TT_ERR_INVALID, "%s: %zu weight floats given, the "
        "model has %zu", m->path, floats, want);
  uint32_t n;
  int *ids = tt_bin_regions (m, false, &n);
  if (!ids)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  size_t at = 0;
  for (uint32_t i = 0; i < n; i++) {
    tt_tensor *t = &m->tensors[ids[i]];
    if (in)
      memcpy (t->data, in + at, t->count * sizeof (float));
    else
      memcpy (out + at, t->data, t->count * sizeof (float));
    at += t->count;
  }
  free (ids);
  return TT_OK;
}

tt_status
tt_model_export_weights (tt_model * m, float *dst, size_t floats,
    tt_error * err)
{
  return model_weights_copy (m, dst, NULL, floats, err);
}

tt_status
tt_model_import_weights (tt_model * m, const float *src, size_t floats,
    tt_error * err)
{
  return model_weights_copy (m, NULL, src, floats, err);
}
