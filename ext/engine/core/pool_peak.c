/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the pool holds at its busiest step, by kind of tensor: the
 * figure that says which tensors a smaller pool has to come from
 * (`tensor-trainer info`, docs/memory.md "The plan's figures").
 */
#include "tt_internal.h"

#include <string.h>

/* whether tensor id holds activations at half width: a stash, or the
 * staging of a root swapped at half width */
static bool
pool_peak_is_half (const tt_model * m, int id)
{
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    if (G->staging == id)
      return true;
    for (uint32_t k = 0; k < G->n_tensors; k++)
      if (G->stash[k] == id)
        return true;
  }
  return false;
}

static uint64_t *
pool_peak_slot (tt_pool_peak * p, const tt_model * m, int id)
{
  switch (m->tensors[id].kind) {
    case TT_TENSOR_INPUT:
    case TT_TENSOR_LABEL:
      return &p->inputs;
    case TT_TENSOR_ACTIVATION:
      return pool_peak_is_half (m, id) ? &p->stashed : &p->activations;
    case TT_TENSOR_DERIVATIVE:
      return &p->derivatives;
    case TT_TENSOR_WEIGHT:
      return &p->weights;
    case TT_TENSOR_GRADIENT:
      return &p->gradients;
    case TT_TENSOR_OPTIMIZER:
      return &p->optimizer;
    case TT_TENSOR_SCRATCH:
    default:
      return &p->scratch;
  }
}

/* The step with the most bytes live (the first of equals), tensors with
 * memory of their own, aligned as the plan lays them out. */
void
tt_model_pool_peak (const tt_model * m, tt_pool_peak * out)
{
  memset (out, 0, sizeof *out);
  out->step = -1;
  if (!m->compiled)
    return;
  int last = -1;
  for (uint32_t i = 0; i < m->n_tensors; i++)
    if (m->tensors[i].alias_of < 0 && m->tensors[i].last_use > last)
      last = m->tensors[i].last_use;
  for (int s = 0; s <= last; s++) {
    uint64_t live = 0;
    for (uint32_t i = 0; i < m->n_tensors; i++) {
      const tt_tensor *t = &m->tensors[i];
      if (t->alias_of < 0 && t->first_use <= s && s <= t->last_use)
        live += tt_tensor_aligned_bytes (t, m->align);
    }
    if (live > out->live_bytes) {
      out->live_bytes = live;
      out->step = s;
    }
  }
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    const tt_tensor *t = &m->tensors[i];
    if (t->alias_of < 0 && t->first_use <= out->step
        && out->step <= t->last_use)
      *pool_peak_slot (out, m, (int) i) += tt_tensor_aligned_bytes (t,
          m->align);
  }
}
