/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tensor table and the single pool. Every tensor of a training step
 * is declared here with a name and a lifetime; a layout pass gives each
 * root tensor an offset, then one aligned allocation backs them all.
 *
 * The layout here places roots one after another (no reuse); the planner
 * replaces it with lifetime-aware offsets.
 */
#include "tt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TT_POOL_ALIGN 64

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

static int
tensors_root (const tt_model * m, int id)
{
  while (id >= 0 && m->tensors[id].alias_of >= 0)
    id = m->tensors[id].alias_of;
  return id;
}

int
tt_tensor_view (tt_model * m, const char *layer, const char *suffix,
    int root)
{
  int r = tensors_root (m, root);
  if (r < 0)
    return -1;
  return tensors_push (m, layer, suffix, m->tensors[r].kind,
      m->tensors[r].count, r);
}

void
tt_tensor_use (tt_model * m, int id, int order)
{
  if (id < 0)
    return;
  for (; id >= 0; id = m->tensors[id].alias_of) {
    tt_tensor *t = &m->tensors[id];
    if (t->first_use < 0 || order < t->first_use)
      t->first_use = order;
    if (order > t->last_use)
      t->last_use = order;
  }
}

tt_status
tt_tensors_allocate (tt_model * m, tt_error * err)
{
  size_t offset = 0;
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    tt_tensor *t = &m->tensors[i];
    if (t->alias_of >= 0)
      continue;
    size_t bytes = t->count * sizeof (float);
    if (bytes / sizeof (float) != t->count
        || offset > SIZE_MAX - bytes - TT_POOL_ALIGN)
      return tt_fail (err, TT_ERR_INVALID,
          "%s: tensor %s is too large for the address space", m->path,
          t->name);
    t->offset = offset;
    offset += (bytes + TT_POOL_ALIGN - 1) & ~(size_t) (TT_POOL_ALIGN - 1);
  }
  m->pool_bytes = offset ? offset : TT_POOL_ALIGN;
  m->pool = aligned_alloc (TT_POOL_ALIGN, m->pool_bytes);
  if (!m->pool)
    return tt_fail (err, TT_ERR_NOMEM,
        "%s: cannot allocate the %zu-byte memory pool", m->path,
        m->pool_bytes);
  memset (m->pool, 0, m->pool_bytes);
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    tt_tensor *t = &m->tensors[i];
    int r = tensors_root (m, (int) i);
    t->offset = m->tensors[r].offset;
    t->data = (float *) ((char *) m->pool + t->offset);
  }
  return TT_OK;
}
