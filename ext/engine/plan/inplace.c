/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * In-place layers: an element-wise layer (an activation whose backward
 * reads only its output, dropout) may write its output over its input, and its input
 * derivative over its output derivative, when nothing else needs that
 * memory afterwards:
 *   - the input is not shared: no multiout on the way to the tensor that
 *     owns the memory (a multiout's outputs are one tensor read by several
 *     layers);
 *   - no layer whose output lives in that memory (the owner, and in-place
 *     layers before this one) reads its own output in backward: relu
 *     followed by an in-place dropout would lose the relu's output.
 * Batch normalization is not eligible: its backward reads its input.
 * An inference-only model has no backward pass, so only the first rule
 * holds there.
 *
 * These rules look only at a layer's producers, never at the execution
 * order, and merging two tensors whose lifetimes intersect never raises
 * the live bytes at any step; so running every eligible layer in place is
 * the best choice for every order, and the order search needs no second
 * dimension for it.
 */
#include "tt_internal.h"

#include <string.h>

static unsigned
inplace_reads (const tt_layer * l)
{
  return l->ops->backward_reads ? l->ops->backward_reads (l) : 0;
}

bool
tt_inplace_eligible (const tt_model * m, const tt_layer * l, const char **why)
{
  const char *dummy;
  if (!why)
    why = &dummy;
  if (!l->ops->can_run_in_place || !l->ops->can_run_in_place (l)) {
    *why = "its type cannot run in place";
    return false;
  }
  if (l->n_inputs != 1) {
    *why = "it has more than one input";
    return false;
  }
  /* walk back through views and in-place layers to the memory's owner */
  const tt_layer *p = &m->layers[l->inputs[0].layer];
  for (;;) {
    if (p->ops->role == TT_ROLE_MULTIOUT) {
      *why = "its input is shared with other layers (multiout)";
      return false;
    }
    if ((inplace_reads (p) & TT_READS_OUTPUT) && !m->inference) {
      *why = "a layer before it reads its own output in backward";
      return false;
    }
    bool passes_through = p->in_place || (p->ops->output_is_view &&
        p->n_inputs == 1);
    if (!passes_through)
      return true;
    p = &m->layers[p->inputs[0].layer];
  }
}

void
tt_inplace_decide (tt_model * m)
{
  /* layers are stored in a topological order, so a producer's decision is
   * made before its consumers look at it */
  for (uint32_t i = 0; i < m->n_layers; i++)
    m->layers[i].in_place = tt_inplace_eligible (m, &m->layers[i], NULL);
}
