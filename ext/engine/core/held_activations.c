/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The activations' bytes a training step holds from forward into
 * backward: the part of the pool the stash is for (docs/precision.md,
 * "The stash"), which `tensor-trainer info` reports beside the pool.
 */
#include "tt_internal.h"

/* Bytes of the activations with memory of their own (aligned as the plan
 * lays them out) live at the last forward step: with a bf16 or fp16
 * activation type the stashes, not the fp32 instances, are live there. */
uint64_t
tt_model_held_activation_bytes (const tt_model * m)
{
  if (!m->compiled || m->inference || m->n_layers == 0)
    return 0;
  const int at = (int) m->n_layers - 1;
  uint64_t sum = 0;
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    const tt_tensor *t = &m->tensors[i];
    if (t->alias_of < 0 && t->kind == TT_TENSOR_ACTIVATION &&
        t->first_use <= at && t->last_use >= at)
      sum += tt_tensor_aligned_bytes (t, m->align);
  }
  return sum;
}
