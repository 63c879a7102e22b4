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
 * evaluation for an inference model) first takes the layout that fits
 * how the step runs. The tensors that live from step to step (weights,
 * optimizer state, moving statistics: the roots that live over the
 * whole step) stay where the halves put them, in both layouts, so a
 * switch copies nothing: the others, which each step rewrites, are laid
 * out for one thread below the lowest of them (the halves put them at
 * the top, above the columns). A switch follows each change of the
 * pool's choice, rare once settled, in a step the pool does not time.
 * The results are the same in either layout, bit for bit: only
 * addresses change.
 *
 * Not for weights in a read-only blob (bundle_load.c), for dropped
 * activations (remat.c: their twins have offsets of their own), nor when
 * the one-thread layout does not fit under the tensors that stay. The
 * optimized INI and the plan's queries give the layout by halves
 * whichever one is in use.
 */
#include "tt_internal.h"
#include "tt_threads.h"
#include "tt_test_hooks.h"

#include <stdlib.h>

/* Whether root t keeps data from one step to the next: it lives over the
 * whole step (TT_PHASE_ALWAYS), as every tensor that does must. */
static bool
layout_persistent (const tt_model * m, const tt_tensor * t)
{
  return t->alias_of < 0 && t->first_use == 0 &&
      t->last_use == tt_step_of (m, 0, TT_PHASE_END);
}

void
tt_layout_free (tt_model * m)
{
  free (m->layout_offsets[0]);
  free (m->layout_offsets[1]);
  m->layout_offsets[0] = m->layout_offsets[1] = NULL;
  m->laid_inline = false;
}

/* The second layout's offsets into single: the roots that live from
 * step to step where the halves put them, the others laid out for one
 * thread below the lowest of those. false when they do not fit there. */
static bool
layout_single (tt_model * m, const tt_interval * t, const uint32_t * map,
    size_t n, tt_interval * rest, uint64_t * single)
{
  uint64_t floor = m->pool_bytes;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const tt_tensor *x = &m->tensors[map[i]];
    if (layout_persistent (m, x))
      floor = x->offset < floor ? x->offset : floor;
    else
      rest[k++] = t[i];
  }
  const uint64_t below = k ? tt_plan_assign_offsets (rest, k, m->align) : 0;
  if (below == UINT64_MAX || below > floor)
    return false;
  for (uint32_t i = 0; i < m->n_tensors; i++)
    single[i] = m->tensors[i].offset;
  k = 0;
  for (size_t i = 0; i < n; i++)
    if (!layout_persistent (m, &m->tensors[map[i]]))
      single[map[i]] = rest[k++].offset;
  /* views at their root's offset (tt_tensors_bind) */
  for (uint32_t i = 0; i < m->n_tensors; i++)
    single[i] = single[tt_tensor_root (m, (int) i)];
  return true;
}

tt_status
tt_layout_prepare (tt_model * m, tt_error * err)
{
  tt_layout_free (m);
  if (m->plan.laid_out_threads != 2 || m->n_dropped || m->n_remat ||
      m->pool_bytes == 0)
    return TT_OK;
  /* the lifetimes are those of the plan's order (plan.c, plan_ini.c) */
  uint32_t *map = NULL;
  size_t n = 0;
  tt_interval *t = tt_plan_intervals (m, &map, &n);
  tt_interval *rest = t ? malloc ((n + 1) * sizeof *rest) : NULL;
  uint64_t *halves = malloc (m->n_tensors * sizeof *halves);
  uint64_t *single = malloc (m->n_tensors * sizeof *single);
  tt_status st = TT_OK;
  if (!t || !rest || !halves || !single)
    st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory planning", m->path);
  else if (layout_single (m, t, map, n, rest, single)) {
    for (uint32_t i = 0; i < m->n_tensors; i++)
      halves[i] = m->tensors[i].offset;
    m->layout_offsets[0] = halves;
    m->layout_offsets[1] = single;
    halves = single = NULL;
  }
  free (t);
  free (map);
  free (rest);
  free (halves);
  free (single);
  return st;
}

/* Points every tensor at its offset in layout `to` (0 by halves, 1 for
 * one thread): the roots that keep data have the same in both. */
static void
layout_move (tt_model * m, int to)
{
  const uint64_t *dst = m->layout_offsets[to];
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    tt_tensor *t = &m->tensors[i];
    t->offset = dst[i];
    t->data = (float *) ((char *) m->pool + dst[i]);
  }
  m->laid_inline = to == 1;
  m->layout_switches++;
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
  return m->layout_offsets[0] ? m->layout_offsets[0][i] : m->tensors[i].offset;
}

uint64_t
tt_model_force_layout (tt_model * m, int which, bool *has_two)
{
  m->layout_force = which;
  *has_two = m->layout_offsets[0] != NULL;
  return m->layout_switches;
}
