/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Two layouts of one pool, switched between steps. A model compiled for
 * two threads is laid out by halves (plan_halves.h), which pays when its
 * steps split; but the pool runs steps inline where splitting does not
 * pay (another process on a core: a CPU hog, a pipeline's other
 * elements), and there the layout for one thread is faster: one thread
 * trained the CNN at batch 128 6% slower on the halves' 28.1 MB pool
 * than on its own 24.4 MB one (docs/benchmarks.md, Threads). So compile
 * also lays the same order's tensors out as for one thread, in the same
 * pool, and each step of the model's main kind (training steps, or
 * evaluation for an inference model) first moves to the layout that
 * fits how the step runs: the tensors that live from step to step
 * (weights, optimizer state, moving statistics: the roots live over the
 * whole step) are copied to their other offsets, the rest are rewritten
 * by the step anyway. A switch follows each change of the pool's choice,
 * which the pool makes rarely (its holds grow to seconds), and the step
 * it happens in is one the pool does not time. The results are the same
 * in either layout, bit for bit: only addresses change.
 *
 * Not for weights in a read-only blob (bundle.c), for dropped
 * activations (remat.c: their twins have offsets of their own), nor when
 * the one-thread layout would need a larger pool. The optimized INI and
 * the plan's queries give the layout by halves whichever one is in use.
 */
#include "tt_internal.h"
#include "tt_threads.h"
#include "tt_test_hooks.h"

#include <stdlib.h>
#include <string.h>

/* Whether root t keeps data from one step to the next: it lives over the
 * whole step (TT_PHASE_ALWAYS), as every tensor that does must. */
static bool
layout_persistent (const tt_model * m, const tt_tensor * t)
{
  return t->alias_of < 0 && t->first_use == 0 &&
      t->last_use == 4 * (int) m->n_layers - 1;
}

void
tt_layout_free (tt_model * m)
{
  free (m->layout_offsets[0]);
  free (m->layout_offsets[1]);
  m->layout_offsets[0] = m->layout_offsets[1] = NULL;
  m->laid_inline = false;
}

tt_status
tt_layout_prepare (tt_model * m, tt_error * err)
{
  tt_layout_free (m);
  if (m->plan.laid_out_threads != 2 || m->n_dropped || m->n_remat ||
      m->pool_bytes == 0)
    return TT_OK;
  tt_lifetimes_compute (m);
  uint32_t *map;
  size_t n;
  tt_interval *t = tt_plan_intervals (m, &map, &n);
  uint64_t *halves = malloc (m->n_tensors * sizeof *halves);
  uint64_t *single = malloc (m->n_tensors * sizeof *single);
  if (!t || !halves || !single) {
    free (t);
    free (map);
    free (halves);
    free (single);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory planning",
        m->path);
  }
  const uint64_t pool = tt_plan_assign_offsets (t, n, m->align);
  for (uint32_t i = 0; i < m->n_tensors; i++)
    halves[i] = single[i] = m->tensors[i].offset;
  for (size_t i = 0; i < n; i++)
    single[map[i]] = t[i].offset;
  free (t);
  free (map);
  if (pool == UINT64_MAX || pool > m->pool_bytes) {
    free (halves);
    free (single);
    return TT_OK;               /* the halves' pool cannot hold it */
  }
  /* views at their root's offset (tt_tensors_bind) */
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    int r = (int) i;
    while (m->tensors[r].alias_of >= 0)
      r = m->tensors[r].alias_of;
    single[i] = single[r];
  }
  m->layout_offsets[0] = halves;
  m->layout_offsets[1] = single;
  return TT_OK;
}

/* Moves every tensor to layout `to` (0 by halves, 1 for one thread),
 * the persistent ones' data with them; false (nothing moved) when the
 * copy's buffer cannot be had. */
static bool
layout_move (tt_model * m, int to)
{
  const uint64_t *dst = m->layout_offsets[to];
  size_t bytes = 0;
  for (uint32_t i = 0; i < m->n_tensors; i++)
    if (layout_persistent (m, &m->tensors[i]))
      bytes += m->tensors[i].count * sizeof (float);
  /* through a buffer: a tensor's new bytes may be another's old ones */
  char *keep = bytes ? malloc (bytes) : NULL;
  if (bytes && !keep)
    return false;
  size_t at = 0;
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    const tt_tensor *t = &m->tensors[i];
    if (!layout_persistent (m, t))
      continue;
    memcpy (keep + at, t->data, t->count * sizeof (float));
    at += t->count * sizeof (float);
  }
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    tt_tensor *t = &m->tensors[i];
    t->offset = dst[i];
    t->data = (float *) ((char *) m->pool + dst[i]);
  }
  at = 0;
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    tt_tensor *t = &m->tensors[i];
    if (!layout_persistent (m, t))
      continue;
    memcpy (t->data, keep + at, t->count * sizeof (float));
    at += t->count * sizeof (float);
  }
  free (keep);
  m->laid_inline = to == 1;
  m->layout_switches++;
  return true;
}

void
tt_layout_fit (tt_model * m, unsigned kind)
{
  if (!m->layout_offsets[0] || m->weights_external)
    return;
  if (kind != (m->inference ? TT_MODEL_STEP_EVAL : TT_MODEL_STEP_TRAIN))
    return;
  const bool want_inline = m->layout_force ? m->layout_force == 1 :
      tt_threads_step_inline (m->thread_pool);
  if (want_inline != m->laid_inline)
    layout_move (m, want_inline ? 1 : 0);
}

uint64_t
tt_layout_planned_offset (const tt_model * m, uint32_t i)
{
  return m->layout_offsets[0] ? m->layout_offsets[0][i] :
      m->tensors[i].offset;
}

uint64_t
tt_model_force_layout (tt_model * m, int which, bool *has_two)
{
  m->layout_force = which;
  *has_two = m->layout_offsets[0] != NULL;
  return m->layout_switches;
}
