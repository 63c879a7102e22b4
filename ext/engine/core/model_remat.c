/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The activations the plan drops (plan/remat.c), during backward:
 * rebuilt in their second instances before the layers that need them,
 * by their writers' forward again, from the swap file (swap.c) or
 * widened from their stash (stash.c), and
 * bound back to their first instances after the step.
 */
#include "tt_internal.h"

/* Points a root and its views at data. */
static void
model_bind_root (tt_model * m, int root, float *data)
{
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    int r = (int) i;
    while (m->tensors[r].alias_of >= 0)
      r = m->tensors[r].alias_of;
    if (r == root)
      m->tensors[i].data = data;
  }
}

/* The data a group's tensor k is read from now: its second instance
 * once rebuilt (after), else its first. */
static float *
model_instance (tt_model * m, const tt_remat * g, uint32_t k, bool after)
{
  const int t = after && g->twins[k] >= 0 ? g->twins[k] : g->tensors[k];
  return after && g->twins[k] >= 0 ? m->tensors[t].data :
      (float *) ((char *) m->pool + m->tensors[t].offset);
}

/* Profiled, a rerun is its layer's forward time (it is forward work,
 * whatever phase asks for it), not a call: calls count steps. */
static void
model_rerun_forward (tt_model * m, const tt_remat * g, uint32_t writers)
{
  tt_layer_time *const prof = m->profiling ? m->profile : NULL;
  m->run.recompute = true;
  for (uint32_t w = 0; w < writers; w++) {
    tt_layer *l = &m->layers[g->writers[w]];
    if (prof)
      tt_model_forward_timed (m, l, &prof[g->writers[w]]);
    else
      l->ops->forward (&m->run, l);
  }
  m->run.recompute = false;
}

/* Before the backward phases of layer (plan/remat.c), in execution order
 * of the groups: the dropped groups it is the trigger of rebuilt in
 * their second instances (their writers' forward again, or read back
 * from the swap file), which they and their views point at from then on;
 * and the groups whose first writer it is and reruns: its forward again
 * into the rerun instances, the scratch its backward reads kept there. */
tt_status
tt_model_rebuild (tt_model * m, int layer, tt_error * err)
{
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    if (G->mode != TT_REMAT_KEEP && G->trigger == layer) {
      for (uint32_t k = 0; k < G->n_tensors; k++)
        if (G->twins[k] >= 0)
          model_bind_root (m, G->tensors[k], m->tensors[G->twins[k]].data);
      tt_status st;
      if (G->mode == TT_REMAT_SWAP && (st = tt_swap_in (m, G, err)))
        return st;
      if (G->mode == TT_REMAT_STASH)
        tt_stash_in (m, G);
      if (G->mode == TT_REMAT_RECOMPUTE)
        model_rerun_forward (m, G, G->n_writers);
    }
    if (G->late && G->writers[0] == layer) {
      for (uint32_t k = 0; k < G->n_tensors; k++)
        if (G->late_twins[k] >= 0)
          model_bind_root (m, G->tensors[k], m->tensors[G->late_twins[k]].data);
      model_rerun_forward (m, G, 1);
      for (uint32_t k = 0; k < G->n_tensors; k++)
        if (G->late_twins[k] >= 0 && !(G->rerun_keep & (1u << k)))
          model_bind_root (m, G->tensors[k], model_instance (m, G, k,
                  G->mode != TT_REMAT_KEEP));
    }
  }
  return TT_OK;
}

/* After backward: the dropped activations back at their first instances,
 * where the next forward writes them. */
void
tt_model_unbind_dropped (tt_model * m)
{
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    for (uint32_t k = 0; k < G->n_tensors; k++)
      if (G->twins[k] >= 0 || G->late_twins[k] >= 0)
        model_bind_root (m, G->tensors[k], model_instance (m, G, k, false));
  }
}
