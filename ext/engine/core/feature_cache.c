/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The feature cache: with a frozen prefix (layers none of whose weights
 * trains, fed only by such layers from the inputs), a sample's boundary
 * tensors (what the prefix writes and the trainable part reads) are the
 * same every epoch, as long as each prefix layer's training forward is a
 * function of the sample alone (tt_layer_ops.draws_random,
 * training_varies). A first-epoch step copies them out
 * (tt_model_train_batch_keep); a later step copies them back where the
 * prefix's layers would have written them, in their place in the
 * execution order, and skips those layers (tt_model_train_batch_cached):
 * the pool holds the same values at every point of the step as without
 * the cache, so the weights come out bit for bit the same.
 */
#include "tt_internal.h"

#include <stdlib.h>
#include <string.h>

static uint64_t
fcache_hash (uint64_t h, const void *data, size_t len)
{
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* the steps' conditions, checked at the query and at each step */
static tt_status
fcache_usable (const tt_model * m, tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile the model first", m->path);
  if (m->inference)
    return tt_fail (err, TT_ERR_STATE, "%s: feature cache: the model was "
        "compiled for inference only", m->path);
  if (m->memory_limit || m->n_remat || m->plan.swapped)
    return tt_fail (err, TT_ERR_STATE, "%s: feature cache: not under a "
        "memory limit (the prefix's activations may be dropped and "
        "rebuilt)", m->path);
  if (tt_model_threads (m) > 1)
    return tt_fail (err, TT_ERR_STATE, "%s: feature cache: runs on one "
        "thread (%u asked): with several the pool may lay activations out "
        "by threads' blocks", m->path, tt_model_threads (m));
  return TT_OK;
}

/* the frozen prefix, in execution order (producers first) */
static tt_status
fcache_prefix (tt_model * m, tt_fcache * f, tt_error * err)
{
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const int li = m->exec[i];
    const tt_layer *l = &m->layers[li];
    bool in = l->ops->role != TT_ROLE_LOSS;
    for (uint32_t k = 0; in && k < l->n_weights; k++)
      in = !l->weights[k].trainable;
    for (uint32_t k = 0; in && k < l->n_inputs; k++)
      in = l->inputs[k].layer >= 0 && f->prefix[l->inputs[k].layer];
    f->prefix[li] = in;
    if (!in)
      continue;
    if (l->ops->role != TT_ROLE_INPUT)
      f->n_prefix++;
    const char *why = l->ops->draws_random ?
        "its training forward draws random numbers" :
        l->ops->training_varies ? l->ops->training_varies (l) : NULL;
    if (why)
      return tt_fail (err, TT_ERR_INVALID, "%s: feature cache: layer %s (%s) "
          "is in the frozen prefix, and %s: its output is not the same for "
          "a sample every epoch; --train can leave that layer's part "
          "trainable (e.g. layers:... naming it or a layer before it), or "
          "freeze less", m->path, l->name, l->ops->type, why);
  }
  if (!f->n_prefix)
    return tt_fail (err, TT_ERR_INVALID, "%s: feature cache: no frozen "
        "prefix: the layers after the inputs train or are fed by one that "
        "does; freeze the first layers (--train last:N, layers:...)", m->path);
  return TT_OK;
}

/* the tensors prefix layers write that other layers read */
static tt_status
fcache_boundary (tt_model * m, tt_fcache * f, tt_error * err)
{
  uint32_t cap = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    cap += m->layers[i].n_inputs;
  f->tensor = malloc ((cap + 1) * sizeof *f->tensor);
  f->producer = malloc ((cap + 1) * sizeof *f->producer);
  f->floats = malloc ((cap + 1) * sizeof *f->floats);
  f->at = malloc ((cap + 1) * sizeof *f->at);
  if (!f->tensor || !f->producer || !f->floats || !f->at)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const int li = m->exec[i];
    const tt_layer *l = &m->layers[li];
    if (f->prefix[li])
      continue;
    for (uint32_t k = 0; k < l->n_inputs; k++) {
      const int p = l->inputs[k].layer;
      if (p < 0 || !f->prefix[p])
        continue;
      uint32_t j = 0;
      while (j < f->n && f->tensor[j] != l->in[k])
        j++;
      if (j < f->n)
        continue;
      f->tensor[j] = l->in[k];
      f->producer[j] = p;
      f->floats[j] = tt_dims_count (l->in_dims[k]);
      f->at[j] = f->record;
      f->record += f->floats[j];
      f->n++;
      h = fcache_hash (h, &f->floats[j], sizeof f->floats[j]);
    }
  }
  /* the prefix's weights' values: the boundary is a function of them */
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const int li = m->exec[i];
    const tt_layer *l = &m->layers[li];
    if (!f->prefix[li])
      continue;
    h = fcache_hash (h, l->name, strlen (l->name) + 1);
    for (uint32_t k = 0; k < l->n_weights; k++)
      if (l->weights[k].value >= 0)
        h = fcache_hash (h, tt_data (m, l->weights[k].value),
            l->weights[k].count * sizeof (float));
  }
  f->fingerprint = h;
  return TT_OK;
}

tt_status
tt_model_feature_boundary (tt_model * m, tt_feature_boundary * out,
    tt_error * err)
{
  tt_status st = fcache_usable (m, err);
  if (st)
    return st;
  tt_fcache_free (m);
  tt_fcache *f = calloc (1, sizeof *f);
  if (!f || !(f->prefix = calloc (m->n_layers, sizeof *f->prefix))) {
    free (f);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  }
  m->fcache = f;
  if ((st = fcache_prefix (m, f, err)) || (st = fcache_boundary (m, f, err))) {
    tt_fcache_free (m);
    return st;
  }
  if (out) {
    out->tensors = f->n;
    out->prefix_layers = f->n_prefix;
    out->floats_per_sample = f->record;
    out->fingerprint = f->fingerprint;
  }
  return TT_OK;
}

static tt_status
fcache_ready (tt_model * m, uint32_t n, const void *records, tt_error * err)
{
  tt_status st;
  if (!m->fcache && (st = tt_model_feature_boundary (m, NULL, err)))
    return st;
  if ((st = fcache_usable (m, err)))
    return st;
  if (!records)
    return tt_fail (err, TT_ERR_INVALID, "%s: feature cache: no records "
        "given", m->path);
  if (n < 1 || n > m->batch_size)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: %u samples given; a batch holds 1 to %u", m->path, n,
        m->batch_size);
  return TT_OK;
}

tt_status
tt_model_train_batch_keep (tt_model * m, uint32_t n,
    const void *const *inputs, const tt_dtype * types, const float *labels,
    float *const *features, tt_batch_result * result, tt_error * err)
{
  tt_status st = fcache_ready (m, n, features, err);
  if (st)
    return st;
  m->fcache->mode = TT_FCACHE_KEEP;
  m->fcache->keep = features;
  st = tt_model_train_batch (m, n, inputs, types, labels, result, err);
  m->fcache->mode = TT_FCACHE_OFF;
  m->fcache->keep = NULL;
  return st;
}

tt_status
tt_model_train_batch_cached (tt_model * m, uint32_t n,
    const float *const *features, const float *labels,
    tt_batch_result * result, tt_error * err)
{
  tt_status st = fcache_ready (m, n, features, err);
  if (st)
    return st;
  for (uint32_t b = 0; b < n; b++)
    if (!features[b])
      return tt_fail (err, TT_ERR_INVALID, "%s: feature cache: sample %u "
          "of the batch has no record", m->path, b);
  m->fcache->mode = TT_FCACHE_FROM;
  m->fcache->from = features;
  st = tt_model_train_batch (m, n, NULL, NULL, labels, result, err);
  m->fcache->mode = TT_FCACHE_OFF;
  m->fcache->from = NULL;
  return st;
}
