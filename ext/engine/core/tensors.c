/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tensor table and the single pool. Every tensor of a training step
 * is declared here with a name and its uses; the planner (plan.c) gives
 * each root tensor an offset, then one aligned allocation backs them all.
 */
#include "tt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
tensors_push (tt_model * m, const char *layer, const char *suffix,
    tt_tensor_kind kind, size_t count, int alias_of)
{
  if (m->n_tensors == m->cap_tensors) {
    uint32_t cap = m->cap_tensors ? m->cap_tensors * 2 : 64;
    tt_tensor *grown = realloc (m->tensors, cap * sizeof *grown);
    if (!grown) {
      m->tensor_oom = true;
      return -1;
    }
    m->tensors = grown;
    m->cap_tensors = cap;
  }
  tt_tensor *t = &m->tensors[m->n_tensors];
  memset (t, 0, sizeof *t);
  snprintf (t->name, sizeof t->name, "%s:%s", layer, suffix);
  t->kind = kind;
  t->by_samples = kind == TT_TENSOR_INPUT || kind == TT_TENSOR_LABEL ||
      kind == TT_TENSOR_ACTIVATION || kind == TT_TENSOR_DERIVATIVE;
  t->count = count;
  t->alias_of = alias_of;
  t->first_use = -1;
  t->last_use = -1;
  return (int) m->n_tensors++;
}

int
tt_tensor_declare (tt_model * m, const char *layer, const char *suffix,
    tt_tensor_kind kind, size_t count)
{
  return tensors_push (m, layer, suffix, kind, count, -1);
}

int
tt_tensor_root (const tt_model * m, int id)
{
  while (id >= 0 && m->tensors[id].alias_of >= 0)
    id = m->tensors[id].alias_of;
  return id;
}

int
tt_tensor_view (tt_model * m, const char *layer, const char *suffix, int root)
{
  int r = tt_tensor_root (m, root);
  if (r < 0)
    return -1;
  return tensors_push (m, layer, suffix, m->tensors[r].kind,
      m->tensors[r].count, r);
}

void
tt_tensor_use (tt_model * m, int id, int layer, tt_phase phase)
{
  int root = tt_tensor_root (m, id);
  if (root < 0)
    return;
  if (m->n_uses == m->cap_uses) {
    uint32_t cap = m->cap_uses ? m->cap_uses * 2 : 256;
    tt_use *grown = realloc (m->uses, cap * sizeof *grown);
    if (!grown) {
      m->tensor_oom = true;
      return;
    }
    m->uses = grown;
    m->cap_uses = cap;
  }
  m->uses[m->n_uses++] = (tt_use) {
  root, layer, phase};
}

int
tt_init_scratch (tt_init_ctx * c, const char *suffix, size_t count)
{
  tt_model *m = c->owner->model;
  return tt_tensor_declare (m, m->layers[c->owner->layer].name, suffix,
      TT_TENSOR_SCRATCH, count);
}

int
tt_init_scratch_by_samples (tt_init_ctx * c, const char *suffix, size_t count)
{
  const int id = tt_init_scratch (c, suffix, count);
  if (id >= 0)
    c->owner->model->tensors[id].by_samples = true;
  return id;
}

/* the pool counts floats: bytes rounded up to whole ones */
static size_t
scratch_bytes_floats (size_t bytes)
{
  return bytes / sizeof (float) + (bytes % sizeof (float) != 0);
}

int
tt_init_scratch_bytes (tt_init_ctx * c, const char *suffix, size_t bytes)
{
  return tt_init_scratch (c, suffix, scratch_bytes_floats (bytes));
}

int
tt_init_scratch_bytes_by_samples (tt_init_ctx * c, const char *suffix,
    size_t bytes)
{
  return tt_init_scratch_by_samples (c, suffix, scratch_bytes_floats (bytes));
}

/* 2 bytes an element: tt_stash_floats (count) floats */
int
tt_init_scratch_half (tt_init_ctx * c, const char *suffix, size_t count)
{
  return tt_init_scratch_bytes (c, suffix, 2 * count);
}

int
tt_init_scratch_half_by_samples (tt_init_ctx * c, const char *suffix,
    size_t count)
{
  return tt_init_scratch_bytes_by_samples (c, suffix, 2 * count);
}

void
tt_init_use (tt_init_ctx * c, int id, tt_phase phase)
{
  tt_tensor_use (c->owner->model, id, c->owner->layer, phase);
}

tt_status
tt_tensors_bind (tt_model * m, tt_error * err)
{
  /* the plan was validated: every root lies inside the pool */
  size_t bytes = m->pool_bytes ? (size_t) m->pool_bytes : (size_t) m->align;
  if ((uint64_t) bytes != (m->pool_bytes ? m->pool_bytes : m->align)
      || bytes > SIZE_MAX - m->align)
    return tt_fail (err, TT_ERR_NOMEM, "%s: a %llu-byte pool does not fit "
        "the address space", m->path, (unsigned long long) m->pool_bytes);
  bytes = (bytes + m->align - 1) & ~(size_t) (m->align - 1);
  m->pool = aligned_alloc ((size_t) m->align, bytes);
  if (!m->pool)
    return tt_fail (err, TT_ERR_NOMEM,
        "%s: cannot allocate the %zu-byte memory pool", m->path, bytes);
  if (!m->weights_external)
    memset (m->pool, 0, bytes);
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    tt_tensor *t = &m->tensors[i];
    int r = tt_tensor_root (m, (int) i);
    t->offset = m->tensors[r].offset;
    t->data = (float *) ((char *) m->pool + t->offset);
    /* weights used in place (bundle_load.c): evaluation touches only inputs,
     * labels, activations and scratch; the rest of the pool stays
     * untouched, so a large pool is never committed */
    if (m->weights_external && r == (int) i &&
        (t->kind == TT_TENSOR_INPUT || t->kind == TT_TENSOR_LABEL ||
            t->kind == TT_TENSOR_ACTIVATION || t->kind == TT_TENSOR_SCRATCH))
      memset (t->data, 0, t->count * sizeof (float));
  }
  return TT_OK;
}
