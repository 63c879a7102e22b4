/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Lifetimes from uses and an execution order. For n layers, the layer at
 * position i runs forward at step i; walking backwards, the layer at
 * position i (k = n-1-i) runs calcGradient at n+3k, calcDerivative at
 * n+3k+1 and applyGradient at n+3k+2 (nntrainer's scheme). A layer
 * that updates as it goes (update_in_gradient: a chunked weight gradient,
 * graph_tensors.c) runs calcDerivative at n+3k and calcGradient, with the
 * chunks' updates, at n+3k+1, as model_backward does. A tensor lives from
 * its earliest use to its latest.
 */
#include "tt_internal.h"

#include <string.h>

/* The order of a layer's own phases: forward 0, then its backward
 * phases 1, 2, 3 in the order they run. */
int
tt_phase_rank (const tt_model * m, int layer, tt_phase phase)
{
  if (m->layers[layer].update_in_gradient) {
    if (phase == TT_PHASE_GRADIENT)
      return 2;
    if (phase == TT_PHASE_DERIVATIVE)
      return 1;
  }
  return (int) phase;
}

int
tt_step_of (const tt_model * m, int layer, tt_phase phase)
{
  const int n = (int) m->n_layers;
  const int pos = m->layers[layer].order;
  switch (phase) {
    case TT_PHASE_FORWARD:
      return pos;
    case TT_PHASE_GRADIENT:
    case TT_PHASE_DERIVATIVE:
    case TT_PHASE_APPLY:
      return n + 3 * (n - 1 - pos) + tt_phase_rank (m, layer, phase) - 1;
    case TT_PHASE_BEGIN:
      return 0;
    case TT_PHASE_ALWAYS:
    case TT_PHASE_END:
      return 4 * n - 1;
  }
  return 0;
}

void
tt_order_apply (tt_model * m, const int *exec)
{
  if (exec != m->exec)
    memcpy (m->exec, exec, m->n_layers * sizeof *exec);
  for (uint32_t i = 0; i < m->n_layers; i++)
    m->layers[m->exec[i]].order = (int) i;
}

void
tt_lifetimes_compute (tt_model * m)
{
  for (uint32_t i = 0; i < m->n_tensors; i++)
    m->tensors[i].first_use = m->tensors[i].last_use = -1;
  for (uint32_t u = 0; u < m->n_uses; u++) {
    const tt_use *use = &m->uses[u];
    tt_tensor *t = &m->tensors[use->tensor];
    int first = use->phase == TT_PHASE_ALWAYS ? 0 :
        tt_step_of (m, use->layer, use->phase);
    int last = tt_step_of (m, use->layer, use->phase);
    if (t->first_use < 0 || first < t->first_use)
      t->first_use = first;
    if (last > t->last_use)
      t->last_use = last;
  }
  /* a root nobody touches (cannot happen for a built graph) is kept for
   * the whole step rather than trusted to share memory */
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    tt_tensor *t = &m->tensors[i];
    if (t->alias_of < 0 && t->first_use < 0) {
      t->first_use = 0;
      t->last_use = 4 * (int) m->n_layers - 1;
    }
  }
}

/* The 4-byte elements of a root, aligned as the pool lays it out. */
uint64_t
tt_tensor_aligned_bytes (const tt_tensor * t, uint64_t align)
{
  uint64_t bytes = (uint64_t) t->count * sizeof (float);
  return (bytes + align - 1) & ~(align - 1);
}
