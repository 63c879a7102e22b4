/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Training under a memory limit. When the planned pool exceeds
 * m->memory_limit, activations are dropped after their last forward use
 * and rebuilt during backward, just before the first backward phase that
 * reads them: by running the forward of the layers that wrote them again
 * (recomputation), or, with [Model] memory_swap, by reading them back
 * from a file written after forward (swap).
 *
 * The unit is a group (tt_remat, tt_internal.h): an activation root, the
 * layers that write it in forward (its layer and in-place layers after
 * it) and the scratch their forward touches. A dropped group's tensors
 * get a second instance ("<name>:recomputed" / ":swapped") living from
 * the trigger, the first backward step of the layer whose backward reads
 * the group first, to their last backward use; the first instance keeps
 * only the forward uses. Recomputing reads the writers' inputs at the
 * trigger: a kept input lives until then, a dropped one is rebuilt at the
 * same trigger or before (triggers propagate from consumers to inputs).
 * No new step numbers: a trigger is the first step of a backward layer,
 * and the runner rebuilds before that layer's phases, so the lifetimes
 * above are what the offset planner and the validator see, and plans
 * without dropped groups are exactly those of before.
 *
 * Choosing: greedy on the live-bytes profile. While some step holds more
 * than the target, drop the group (or swap it, when allowed) that removes
 * the most bytes above the target, summed over steps, per unit of forward
 * work it costs; then lay out the offsets, and lower the target by what
 * the pool exceeds the limit if it does. Recomputation runs first, swap
 * only when recomputation cannot reach the limit.
 *
 * Stash (mixed precision, core/stash.c): with a half activation type, a
 * training model's groups whose root backward reads and that swap could
 * take (not the loss's output) are stashed to begin with, whether or not
 * a limit is set: like a swapped group, but for the root alone (its
 * layers' scratch may hold indices, as pooling's argmax, and keeps its
 * whole life), and the copy is a third instance in the pool
 * ("<name>:stashed", 2 bytes an element) living from the root's last
 * forward use to the trigger; the second instance is "<name>:widened".
 * Under a limit the search starts from those stashes (a stashed group is
 * the baseline a decision is taken from and undone to): a group it
 * recomputes or swaps needs no stash.
 */
#include "tt_internal.h"
#include "plan_offsets.h"
#include "tt_test_hooks.h"

/* tt_remat_keep_every_stash */
static bool remat_every_stash;

void
tt_remat_keep_every_stash (bool on)
{
  remat_every_stash = on;
}

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a byte read back from the swap file costs about this many multiply-adds
 * of recomputation (two copies through the page cache) */
#define REMAT_SWAP_COST_PER_BYTE 16
#define REMAT_ROUNDS 64

static int
remat_root (const tt_model * m, int id)
{
  while (id >= 0 && m->tensors[id].alias_of >= 0)
    id = m->tensors[id].alias_of;
  return id;
}

static bool
remat_backward_phase (tt_phase p)
{
  return p == TT_PHASE_GRADIENT || p == TT_PHASE_DERIVATIVE ||
      p == TT_PHASE_APPLY || p == TT_PHASE_END;
}

/* Steps of a root's uses: all of them, the last forward one, the
 * backward ones (-1: none). */
typedef struct
{
  int first, last, fwd_last, bwd_first, bwd_last;
} remat_span;

static void
remat_spans (const tt_model * m, remat_span * sp)
{
  const int end = 4 * (int) m->n_layers - 1;
  for (uint32_t i = 0; i < m->n_base_tensors; i++)
    sp[i] = (remat_span) {
    -1, -1, -1, -1, -1};
  for (uint32_t u = 0; u < m->n_uses; u++) {
    const tt_use *use = &m->uses[u];
    if ((uint32_t) use->tensor >= m->n_base_tensors)
      continue;
    remat_span *s = &sp[use->tensor];
    const int step = tt_step_of (m, use->layer, use->phase);
    const int first = use->phase == TT_PHASE_ALWAYS ? 0 : step;
    if (s->first < 0 || first < s->first)
      s->first = first;
    if (step > s->last)
      s->last = step;
    if (remat_backward_phase (use->phase)) {
      if (s->bwd_first < 0 || step < s->bwd_first)
        s->bwd_first = step;
      if (step > s->bwd_last)
        s->bwd_last = step;
    } else if (step > s->fwd_last) {
      s->fwd_last = step;
    }
  }
  for (uint32_t i = 0; i < m->n_base_tensors; i++)
    if (sp[i].first < 0) {
      sp[i].first = 0;
      sp[i].last = end;
    }
}

/* A second instance for tensor k of a dropped group: every tensor when
 * recomputed (the writers' forward writes them all), the root and what
 * backward reads when swapped. */
#define REMAT_SLOTS (3 * TT_REMAT_TENSORS)

/* The slot of tensor k of group g: its second instance, or (late) its
 * instance when the first writer runs again. */
static int
remat_slot (uint32_t g, uint32_t k, bool late)
{
  return (int) (g * REMAT_SLOTS + (late ? TT_REMAT_TENSORS : 0) + k);
}

/* The slot of tensor k's stash in group g. */
static int
remat_stash_slot (uint32_t g, uint32_t k)
{
  return (int) (g * REMAT_SLOTS + 2 * TT_REMAT_TENSORS + k);
}

/* The mode a group has before any decision: stashed when the model
 * stashes, swap could take it and backward reads its root, else kept. */
static tt_remat_mode
remat_base (const tt_model * m, const tt_remat * g)
{
  return tt_stash_on (m) && tt_remat_stashable (g) && !g->unstashed ?
      TT_REMAT_STASH : TT_REMAT_KEEP;
}

bool
tt_remat_stashable (const tt_remat * g)
{
  return g->swappable && g->root_backward;
}

/* Swapped, g writes its root at half width through a staging tensor:
 * what the stash would have held, rounded the same. */
static bool
remat_half_swap (const tt_model * m, const tt_remat * g)
{
  return g->mode == TT_REMAT_SWAP && tt_stash_on (m) && tt_remat_stashable (g);
}

uint64_t
tt_remat_swap_bytes (const tt_model * m, const tt_remat * g, uint32_t k)
{
  const uint64_t n = m->tensors[g->tensors[k]].count;
  return k == 0 && tt_stash_on (m) && tt_remat_stashable (g) ? 2 * n :
      n * sizeof (float);
}

/* The floats of tensor k's instance in slot part 2: its stash, or the
 * staging of a half-width swap (the root's). */
static size_t
remat_part2_floats (const tt_model * m, const tt_remat * g, uint32_t k)
{
  const size_t count = m->tensors[g->tensors[k]].count;
  return tt_stash_floats (g->mode == TT_REMAT_STASH ? count :
      tt_swap_staging_elems (count));
}

/* Scratch of the first writer that its backward reads: rebuilt by the
 * rerun, read from that instance afterwards. */
static bool
remat_late_scratch (const tt_remat * g, uint32_t k, const remat_span * sp)
{
  return g->late && k > 0 && g->owner[k] == g->writers[0] &&
      sp[g->tensors[k]].bwd_first >= 0;
}

/* Written by the rerun of the first writer. */
static bool
remat_in_rerun (const tt_remat * g, uint32_t k)
{
  return g->late && (k == 0 || g->owner[k] == g->writers[0]);
}

/* The first backward step of the first writer: where it reruns. */
static int
remat_rerun_step (const tt_model * m, const tt_remat * g)
{
  const int n = (int) m->n_layers;
  return n + 3 * (n - 1 - m->layers[g->writers[0]].order);
}

static bool
remat_needs_twin (const tt_remat * g, uint32_t k, const remat_span * sp)
{
  if (g->mode == TT_REMAT_KEEP)
    return false;
  /* a stash holds the root only (floats: scratch may hold indices) */
  if (g->mode == TT_REMAT_STASH)
    return k == 0;
  return g->mode == TT_REMAT_RECOMPUTE || k == 0 ||
      (sp[g->tensors[k]].bwd_first >= 0 && !remat_late_scratch (g, k, sp));
}

int
tt_remat_find (const tt_model * m, int id)
{
  for (uint32_t g = 0; g < m->n_remat; g++)
    if (m->remat[g].root == id)
      return (int) g;
  return -1;
}

/* Forward work of a layer, in multiply-adds (an estimate: the outputs,
 * plus each weight once per output position). */
static uint64_t
remat_cost (const tt_model * m, const tt_layer * l)
{
  const tt_dims d = l->out_dims[0];
  const uint64_t per = d.c > 1 ? (uint64_t) d.h * d.w : 1;
  uint64_t c = (uint64_t) m->batch_size * tt_dims_count (d);
  for (uint32_t w = 0; w < l->n_weights; w++)
    c += (uint64_t) m->batch_size * l->weights[w].count * per;
  return c + 1;
}

static void
remat_add (int *list, uint32_t * n, uint32_t cap, int v, bool *full)
{
  for (uint32_t i = 0; i < *n; i++)
    if (list[i] == v)
      return;
  if (*n == cap) {
    *full = true;
    return;
  }
  list[(*n)++] = v;
}

tt_status
tt_remat_groups (tt_model * m, tt_error * err)
{
  free (m->remat);
  m->remat = NULL;
  m->n_remat = m->n_dropped = 0;
  m->n_base_tensors = m->n_tensors;
  int *group_of = malloc ((m->n_tensors + 1) * sizeof *group_of);
  int *writer_group = malloc ((m->n_layers + 1) * sizeof *writer_group);
  m->remat = calloc (m->n_tensors + 1, sizeof *m->remat);
  if (!group_of || !writer_group || !m->remat) {
    free (group_of);
    free (writer_group);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  }
  for (uint32_t i = 0; i < m->n_tensors; i++)
    group_of[i] = -1;
  for (uint32_t i = 0; i < m->n_layers; i++)
    writer_group[i] = -1;
  for (uint32_t pos = 0; pos < m->n_layers; pos++) {
    const int li = m->exec[pos];
    const tt_layer *l = &m->layers[li];
    const bool input = l->ops->role == TT_ROLE_INPUT;
    if (l->ops->output_is_view && !l->in_place)
      continue;
    for (uint32_t o = 0; o < l->n_outputs; o++) {
      const int r = remat_root (m, l->out[o]);
      if (r < 0 || m->tensors[r].kind != (input ? TT_TENSOR_INPUT :
              TT_TENSOR_ACTIVATION))
        continue;
      if (group_of[r] < 0) {
        tt_remat *g = &m->remat[m->n_remat];
        group_of[r] = (int) m->n_remat++;
        g->root = r;
        g->tensors[0] = r;
        g->n_tensors = 1;
        g->swappable = true;
        g->trigger = g->trigger_step = -1;
        for (int k = 0; k < TT_REMAT_TENSORS; k++)
          g->twins[k] = g->late_twins[k] = -1;
        g->cost_first = remat_cost (m, l);
      }
      tt_remat *g = &m->remat[group_of[r]];
      bool full = false;
      remat_add (g->writers, &g->n_writers, TT_REMAT_WRITERS, li, &full);
      for (uint32_t k = 0; k < l->n_inputs; k++) {
        const int in = remat_root (m, l->in[k]);
        if (in >= 0 && in != r)
          remat_add (g->inputs, &g->n_inputs, TT_REMAT_INPUTS, in, &full);
      }
      g->cost += remat_cost (m, l);
      if (full)
        g->not_recomputable = "its group of layers is too large", g->swappable
            = false;
      else if (l->ops->role == TT_ROLE_LOSS)
        g->not_recomputable = "it is the loss's output", g->swappable = false;
      else if (input)
        g->not_recomputable = "it is a model input";
      else if (l->ops->draws_random)
        g->not_recomputable = "a layer writing it draws random numbers "
            "(dropout)";
      else if (l->n_outputs > 1)
        g->not_recomputable = "a layer writing it has several outputs";
      if (writer_group[li] < 0)
        writer_group[li] = group_of[r];
    }
  }
  /* the scratch each writer's forward touches joins its group */
  for (uint32_t u = 0; u < m->n_uses; u++) {
    const tt_use *use = &m->uses[u];
    if (use->phase != TT_PHASE_FORWARD ||
        m->tensors[use->tensor].kind != TT_TENSOR_SCRATCH ||
        writer_group[use->layer] < 0)
      continue;
    tt_remat *g = &m->remat[writer_group[use->layer]];
    bool full = false;
    const uint32_t before = g->n_tensors;
    remat_add (g->tensors, &g->n_tensors, TT_REMAT_TENSORS, use->tensor, &full);
    if (g->n_tensors > before && before < TT_REMAT_TENSORS)
      g->owner[before] = use->layer;
    if (full)
      g->not_recomputable = "its layers have too much scratch",
          g->swappable = false;
  }
  for (uint32_t g = 0; g < m->n_remat; g++)
    m->remat[g].owner[0] = m->remat[g].writers[m->remat[g].n_writers - 1];
  /* whether backward reads the group: else dropping it saves nothing */
  for (uint32_t u = 0; u < m->n_uses; u++)
    if (remat_backward_phase (m->uses[u].phase))
      group_of[m->uses[u].tensor] = -2;
  for (uint32_t g = 0; g < m->n_remat; g++) {
    tt_remat *G = &m->remat[g];
    G->root_backward = group_of[G->root] == -2;
    for (uint32_t k = 0; k < G->n_tensors; k++) {
      const bool bwd = group_of[G->tensors[k]] == -2;
      G->backward_use |= bwd;
      G->late_ok |= k > 0 && bwd && G->owner[k] == G->writers[0] &&
          !G->not_recomputable;
    }
  }
  free (group_of);
  free (writer_group);
  return TT_OK;
}

/* ---- lifetimes under decisions --------------------------------------- */

typedef struct
{
  tt_model *m;
  remat_span *sp;               /* per base tensor */
  int *group_of;                /* per base tensor: the group it roots */
  int *first, *last;            /* per base tensor */
  int *tfirst, *tlast;          /* per group and tensor slot; -1: none */
  uint64_t *abytes;             /* aligned bytes per base tensor */
  uint64_t *sbytes;             /* aligned bytes of its stash */
  int64_t *live;                /* per step */
  int steps;
  tt_interval *iv;
  uint32_t *iv_slot;            /* interval i: base tensor, or n_base +
                                 * g * TT_REMAT_TENSORS + k */
  uint64_t pool;                /* the last remat_offsets */
} remat_ctx;

/* The instance of input in that holds it at step: its group's second
 * instance when dropped, else its own; lives until step at least. */
static void
remat_extend (remat_ctx * c, int in, int step)
{
  const int h = c->group_of[in];
  int *last = h >= 0 && c->m->remat[h].mode != TT_REMAT_KEEP ?
      &c->tlast[remat_slot ((uint32_t) h, 0, false)] : &c->last[in];
  if (*last < step)
    *last = step;
}

/* A dropped input must be back by step: its trigger no later. */
static void
remat_need_by (remat_ctx * c, const tt_remat * G, int step)
{
  for (uint32_t i = 0; i < G->n_inputs; i++) {
    const int h = c->group_of[G->inputs[i]];
    if (h >= 0 && c->m->remat[h].mode != TT_REMAT_KEEP &&
        step < c->m->remat[h].trigger_step)
      c->m->remat[h].trigger_step = step;
  }
}

/* first/last of every base tensor and instance for the decisions in
 * m->remat; sets the triggers. */
static void
remat_layout (remat_ctx * c)
{
  tt_model *m = c->m;
  const int n = (int) m->n_layers;
  for (uint32_t i = 0; i < m->n_base_tensors; i++) {
    c->first[i] = c->sp[i].first;
    c->last[i] = c->sp[i].last;
  }
  for (uint32_t g = 0; g < m->n_remat; g++)
    m->remat[g].trigger_step = INT_MAX;
  /* consumers before their inputs: a dropped input must be back by the
   * trigger of a recomputed group, or the rerun of a writer, reading it */
  for (uint32_t g = m->n_remat; g-- > 0;) {
    tt_remat *G = &m->remat[g];
    if (G->mode != TT_REMAT_KEEP) {
      int t = G->trigger_step;
      /* (stashed: the root's first backward use; its scratch is kept) */
      for (uint32_t k = 0; k < G->n_tensors; k++) {
        const int b = c->sp[G->tensors[k]].bwd_first;
        if (b >= 0 && b < t && !remat_late_scratch (G, k, c->sp) &&
            (G->mode != TT_REMAT_STASH || k == 0))
          t = b;
      }
      if (t == INT_MAX || t > 4 * n - 1)
        t = 4 * n - 1;
      if (t < n)
        t = n;
      const int back = (t - n) / 3;
      G->trigger = m->exec[n - 1 - back];
      G->trigger_step = n + 3 * back;
      if (G->mode == TT_REMAT_RECOMPUTE)
        remat_need_by (c, G, G->trigger_step);
    }
    if (G->late)
      remat_need_by (c, G, remat_rerun_step (m, G));
  }
  for (uint32_t g = 0; g < m->n_remat; g++) {
    tt_remat *G = &m->remat[g];
    for (uint32_t k = 0; k < REMAT_SLOTS; k++)
      c->tfirst[g * REMAT_SLOTS + k] = c->tlast[g * REMAT_SLOTS + k] = -1;
    G->stash_layer = -1;
    const int t1 = G->trigger_step, t2 = G->late ? remat_rerun_step (m, G) : -1;
    for (uint32_t k = 0; k < G->n_tensors; k++) {
      const int id = G->tensors[k];
      const bool late = remat_late_scratch (G, k, c->sp);
      /* stashed: the scratch keeps its whole life, as when kept */
      const bool dropped = G->mode == TT_REMAT_STASH ? k == 0 :
          G->mode != TT_REMAT_KEEP;
      if (dropped || late)
        c->last[id] = c->sp[id].fwd_last >= c->first[id] ?
            c->sp[id].fwd_last : c->first[id];
      if (remat_needs_twin (G, k, c->sp)) {
        const int s = remat_slot (g, k, false);
        c->tfirst[s] = t1;
        c->tlast[s] = late || c->sp[id].bwd_last < t1 ? t1 : c->sp[id].bwd_last;
      }
      if (remat_in_rerun (G, k)) {
        const int s = remat_slot (g, k, true);
        c->tfirst[s] = t2;
        c->tlast[s] = late && c->sp[id].bwd_last > t2 ? c->sp[id].bwd_last : t2;
      }
    }
    /* swapped at half width: the root narrowed in parts through its
     * staging right after the forward that completes it */
    if (remat_half_swap (m, G)) {
      const int s = remat_stash_slot (g, 0);
      c->tfirst[s] = c->tlast[s] = tt_step_of (m, G->owner[0],
          TT_PHASE_FORWARD);
    }
    /* stashed: every twin narrowed after the last forward use of any */
    if (G->mode == TT_REMAT_STASH) {
      int at = 0;
      for (uint32_t k = 0; k < G->n_tensors; k++)
        if (remat_needs_twin (G, k, c->sp) && c->last[G->tensors[k]] > at)
          at = c->last[G->tensors[k]];
      if (at > n - 1)
        at = n - 1;
      G->stash_layer = m->exec[at];
      for (uint32_t k = 0; k < G->n_tensors; k++)
        if (remat_needs_twin (G, k, c->sp)) {
          const int s = remat_stash_slot (g, k);
          c->tfirst[s] = at;
          c->tlast[s] = t1;
        }
    }
  }
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    for (uint32_t i = 0; i < G->n_inputs; i++) {
      if (G->mode == TT_REMAT_RECOMPUTE)
        remat_extend (c, G->inputs[i], G->trigger_step);
      if (G->late)
        remat_extend (c, G->inputs[i], remat_rerun_step (m, G));
    }
  }
}

/* Bytes live at each step; returns the peak, *excess the bytes above
 * target summed over steps. */
static uint64_t
remat_profile (remat_ctx * c, uint64_t target, int64_t * excess)
{
  const tt_model *m = c->m;
  memset (c->live, 0, (size_t) (c->steps + 1) * sizeof *c->live);
  for (uint32_t i = 0; i < m->n_base_tensors; i++) {
    if (m->tensors[i].alias_of >= 0)
      continue;
    c->live[c->first[i]] += (int64_t) c->abytes[i];
    c->live[c->last[i] + 1] -= (int64_t) c->abytes[i];
  }
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    if (G->mode == TT_REMAT_KEEP && !G->late)
      continue;
    for (int part = 0; part < 3; part++)
      for (uint32_t k = 0; k < G->n_tensors; k++) {
        const int s = part == 2 ? remat_stash_slot (g, k) :
            remat_slot (g, k, part);
        if (c->tfirst[s] < 0)
          continue;
        int64_t b = (int64_t) c->abytes[G->tensors[k]];
        if (part == 2 && G->mode == TT_REMAT_STASH)
          b = (int64_t) c->sbytes[G->tensors[k]];
        else if (part == 2) {
          tt_tensor staged = m->tensors[G->tensors[k]];
          staged.count = remat_part2_floats (m, G, k);
          b = (int64_t) tt_tensor_aligned_bytes (&staged, m->align);
        }
        c->live[c->tfirst[s]] += b;
        c->live[c->tlast[s] + 1] -= b;
      }
  }
  int64_t run = 0, peak = 0, over = 0;
  for (int t = 0; t < c->steps; t++) {
    run += c->live[t];
    if (run > peak)
      peak = run;
    if (run > (int64_t) target)
      over += run - (int64_t) target;
  }
  *excess = over;
  return (uint64_t) peak;
}

static uint64_t
remat_evaluate (remat_ctx * c, uint64_t target, int64_t * excess)
{
  remat_layout (c);
  return remat_profile (c, target, excess);
}

/* The pool of the offset planner for the current decisions: the base
 * tensors in id order, then each group's instances in slot order, as
 * tt_remat_materialize declares them. */
static uint64_t
remat_offsets (remat_ctx * c)
{
  tt_model *m = c->m;
  remat_layout (c);
  size_t n = 0;
  for (uint32_t i = 0; i < m->n_base_tensors; i++) {
    if (m->tensors[i].alias_of >= 0)
      continue;
    c->iv[n] = (tt_interval) {
    (uint64_t) m->tensors[i].count * sizeof (float), c->first[i],
          c->last[i], 0, false};
    c->iv_slot[n++] = i;
  }
  for (uint32_t g = 0; g < m->n_remat; g++)
    for (int part = 0; part < 3; part++)
      for (uint32_t k = 0; k < m->remat[g].n_tensors; k++) {
        const int s = part == 2 ? remat_stash_slot (g, k) :
            remat_slot (g, k, part);
        if (c->tfirst[s] < 0)
          continue;
        const uint64_t bytes = (part == 2 ?
            remat_part2_floats (m, &m->remat[g], k) :
            m->tensors[m->remat[g].tensors[k]].count) * sizeof (float);
        c->iv[n] = (tt_interval) {
        bytes, c->tfirst[s], c->tlast[s], 0, false};
        c->iv_slot[n++] = m->n_base_tensors + (uint32_t) s;
      }
  c->pool = tt_plan_assign_offsets (c->iv, n, m->align);
  return c->pool;
}

/* what a decision costs: mode, or (mode KEEP) the rerun */
static uint64_t
remat_cost_of (const tt_model * m, const tt_remat * g, tt_remat_mode mode)
{
  if (mode == TT_REMAT_KEEP)
    return g->cost_first;
  if (mode == TT_REMAT_RECOMPUTE)
    return g->cost;
  uint64_t bytes = 0;
  for (uint32_t k = 0; k < g->n_tensors; k++)
    bytes += mode == TT_REMAT_SWAP ? tt_remat_swap_bytes (m, g, k) :
        (uint64_t) m->tensors[g->tensors[k]].count * sizeof (float);
  /* a stash is a conversion each way in memory, no file */
  if (mode == TT_REMAT_STASH)
    return bytes / 2 + 1;
  /* swapped: the bytes of the file (the root at half width when the
   * model stashes) */
  return bytes * REMAT_SWAP_COST_PER_BYTE + 1;
}

/* Decision opt of group G (1 recompute, 2 swap, 3 rerun) made (on) or
 * unmade. */
static void
remat_set (const tt_model * m, tt_remat * G, int opt, bool on)
{
  if (opt == 3)
    G->late = on;
  else
    G->mode = on ? (tt_remat_mode) opt : remat_base (m, G);
}

/* Drops groups until no step holds more than target, or none helps. */
static void
remat_greedy (remat_ctx * c, uint64_t target, bool allow_swap)
{
  tt_model *m = c->m;
  for (;;) {
    int64_t excess;
    remat_evaluate (c, target, &excess);
    if (excess == 0)
      return;
    int best = -1, best_opt = 0;
    double best_score = 0;
    for (uint32_t g = 0; g < m->n_remat; g++) {
      tt_remat *G = &m->remat[g];
      for (int opt = 1; opt <= 3; opt++) {
        if (opt < 3 && (G->mode != remat_base (m, G) || !G->backward_use))
          continue;
        if (opt == 1 && G->not_recomputable)
          continue;
        if (opt == 2 && (!allow_swap || !G->swappable))
          continue;
        if (opt == 3 && (G->late || !G->late_ok))
          continue;
        int64_t ex;
        remat_set (m, G, opt, true);
        remat_evaluate (c, target, &ex);
        remat_set (m, G, opt, false);
        if (ex >= excess)
          continue;
        const double score = (double) (excess - ex) /
            (double) remat_cost_of (m, G, opt == 3 ? TT_REMAT_KEEP :
            (tt_remat_mode) opt);
        if (score > best_score) {
          best_score = score;
          best = (int) g;
          best_opt = opt;
        }
      }
    }
    if (best < 0)
      return;
    remat_set (m, &m->remat[best], best_opt, true);
  }
}

static void
remat_reset (tt_model * m)
{
  for (uint32_t g = 0; g < m->n_remat; g++) {
    m->remat[g].mode = remat_base (m, &m->remat[g]);
    m->remat[g].late = false;
  }
}

/* Decisions whose pool fits limit, from none: true when found. */
static bool
remat_search (remat_ctx * c, uint64_t limit, bool allow_swap)
{
  remat_reset (c->m);
  uint64_t target = limit;
  for (int round = 0; round < REMAT_ROUNDS; round++) {
    remat_greedy (c, target, allow_swap);
    int64_t excess;
    const uint64_t peak = remat_evaluate (c, target, &excess);
    const uint64_t pool = remat_offsets (c);
    if (pool == UINT64_MAX)
      return false;
    if (pool <= limit)
      return true;
    if (peak > target)
      return false;
    const uint64_t over = pool - limit;
    target = target > over ? target - over : 0;
  }
  return false;
}

/* After a search met limit: decisions undone, the costliest first, while
 * the pool still fits (the greedy may overshoot). */
static void
remat_prune (remat_ctx * c, uint64_t limit)
{
  tt_model *m = c->m;
  for (;;) {
    int undo = -1, undo_opt = 0;
    uint64_t undo_cost = 0;
    for (uint32_t g = 0; g < m->n_remat; g++) {
      tt_remat *G = &m->remat[g];
      if (G->mode != remat_base (m, G) && !G->tried &&
          (undo < 0 || remat_cost_of (m, G, G->mode) > undo_cost)) {
        undo = (int) g;
        undo_opt = (int) G->mode;
        undo_cost = remat_cost_of (m, G, G->mode);
      }
      if (G->late && !G->tried_late &&
          (undo < 0 || remat_cost_of (m, G, TT_REMAT_KEEP) > undo_cost)) {
        undo = (int) g;
        undo_opt = 3;
        undo_cost = remat_cost_of (m, G, TT_REMAT_KEEP);
      }
    }
    if (undo < 0)
      break;
    tt_remat *G = &m->remat[undo];
    if (undo_opt == 3)
      G->tried_late = true;
    else
      G->tried = true;
    remat_set (m, G, undo_opt, false);
    int64_t excess;
    if (remat_evaluate (c, limit, &excess) > limit || remat_offsets (c) > limit)
      remat_set (m, G, undo_opt, true);
  }
  for (uint32_t g = 0; g < m->n_remat; g++)
    m->remat[g].tried = m->remat[g].tried_late = false;
}

/* The busiest step of the current decisions (remat_layout run). */
static int
remat_peak_step (remat_ctx * c)
{
  int64_t excess;
  remat_profile (c, UINT64_MAX, &excess);
  int64_t run = 0, peak = -1;
  int at = 0;
  for (int t = 0; t < c->steps; t++) {
    run += c->live[t];
    if (run > peak) {
      peak = run;
      at = t;
    }
  }
  return at;
}

/* A stash's first step holds the fp32 root and the stash it is narrowed
 * into, its trigger step the stash and the fp32 copy widened from it.
 * Where one of them is the busiest step, the stash adds half the root's
 * bytes to the pool rather than saving them: the Fashion-MNIST CNN in
 * bf16 widens pool1's output at conv2's backward, its busiest step, which
 * Winograd's scratch fills; an MLP narrows its input right after its
 * first layer's forward, where the weights and Adam's state already
 * peak. Such a group keeps its fp32 root when that lowers the pool;
 * again at the new busiest step until none does. */
static void
remat_unstash_peaks (remat_ctx * c)
{
  tt_model *m = c->m;
  uint64_t pool = remat_offsets (c);
  for (bool lowered = true; lowered;) {
    lowered = false;
    const int peak = remat_peak_step (c);
    for (uint32_t g = 0; g < m->n_remat; g++) {
      tt_remat *G = &m->remat[g];
      const int slot = remat_stash_slot (g, 0);
      if (G->mode != TT_REMAT_STASH || (c->tfirst[slot] != peak &&
              c->tlast[slot] != peak))
        continue;
      G->mode = TT_REMAT_KEEP;
      const uint64_t kept = remat_offsets (c);
      if (kept < pool) {
        /* the baseline every search starts from (remat_base) */
        G->unstashed = true;
        pool = kept;
        lowered = true;
        break;
      }
      G->mode = TT_REMAT_STASH;
      remat_layout (c);
    }
  }
}

/* The forward work the decisions cost. */
static uint64_t
remat_total_cost (const tt_model * m)
{
  uint64_t sum = 0;
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    if (G->mode != remat_base (m, G))
      sum += remat_cost_of (m, G, G->mode);
    if (G->late)
      sum += remat_cost_of (m, G, TT_REMAT_KEEP);
  }
  return sum;
}

/* The smallest pool reachable by remat_search, whose result is not
 * monotonic in the limit: bisection over limits. Leaves in m->remat the
 * cheapest decisions found whose pool fits limit, else those of the
 * smallest pool. */
static uint64_t
remat_smallest (remat_ctx * c, uint64_t unlimited, bool allow_swap,
    uint64_t limit)
{
  tt_model *m = c->m;
  int *best = malloc (2 * (m->n_remat + 1) * sizeof *best);
  int *cheap = best ? best + m->n_remat + 1 : NULL;
  uint64_t best_pool = unlimited, cheap_cost = UINT64_MAX, lo = 0;
  uint64_t hi = unlimited;
  for (uint32_t g = 0; best && g < m->n_remat; g++)
    best[g] = (int) remat_base (m, &m->remat[g]);
  while (best && lo + m->align < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (remat_search (c, mid, false) || (allow_swap &&
            remat_search (c, mid, true))) {
      const uint64_t cost = remat_total_cost (m);
      if (c->pool < best_pool)
        best_pool = c->pool;
      for (uint32_t g = 0; g < m->n_remat; g++) {
        const int d = (int) m->remat[g].mode | (m->remat[g].late ? 16 : 0);
        if (c->pool == best_pool)
          best[g] = d;
        if (c->pool <= limit && cost < cheap_cost)
          cheap[g] = d;
      }
      if (c->pool <= limit && cost < cheap_cost)
        cheap_cost = cost;
      hi = c->pool < mid ? c->pool : mid;
    } else {
      lo = mid;
    }
  }
  const int *keep = cheap_cost < UINT64_MAX ? cheap : best;
  for (uint32_t g = 0; g < m->n_remat; g++) {
    m->remat[g].mode = keep ? (tt_remat_mode) (keep[g] & 15) :
        remat_base (m, &m->remat[g]);
    m->remat[g].late = keep && (keep[g] & 16);
  }
  free (best);
  return best_pool;
}

static void
remat_ctx_free (remat_ctx * c)
{
  free (c->sp);
  free (c->group_of);
  free (c->first);
  free (c->last);
  free (c->tfirst);
  free (c->tlast);
  free (c->abytes);
  free (c->sbytes);
  free (c->live);
  free (c->iv);
  free (c->iv_slot);
}

static tt_status
remat_ctx_init (remat_ctx * c, tt_model * m, tt_error * err)
{
  memset (c, 0, sizeof *c);
  c->m = m;
  const size_t nb = m->n_base_tensors + 1, ng = m->n_remat + 1;
  c->steps = 4 * (int) m->n_layers;
  c->sp = malloc (nb * sizeof *c->sp);
  c->group_of = malloc (nb * sizeof *c->group_of);
  c->first = malloc (nb * sizeof *c->first);
  c->last = malloc (nb * sizeof *c->last);
  c->tfirst = malloc (ng * REMAT_SLOTS * sizeof *c->tfirst);
  c->tlast = malloc (ng * REMAT_SLOTS * sizeof *c->tlast);
  c->abytes = malloc (nb * sizeof *c->abytes);
  c->sbytes = malloc (nb * sizeof *c->sbytes);
  c->live = malloc ((size_t) (c->steps + 2) * sizeof *c->live);
  c->iv = malloc ((nb + ng * REMAT_SLOTS) * sizeof *c->iv);
  c->iv_slot = malloc ((nb + ng * REMAT_SLOTS) * sizeof *c->iv_slot);
  if (!c->sp || !c->group_of || !c->first || !c->last || !c->tfirst ||
      !c->tlast || !c->abytes || !c->sbytes || !c->live || !c->iv ||
      !c->iv_slot) {
    remat_ctx_free (c);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  }
  remat_spans (m, c->sp);
  for (uint32_t i = 0; i < m->n_base_tensors; i++) {
    c->group_of[i] = -1;
    c->abytes[i] = tt_tensor_aligned_bytes (&m->tensors[i], m->align);
    tt_tensor half = m->tensors[i];
    half.count = tt_stash_floats (half.count);
    c->sbytes[i] = tt_tensor_aligned_bytes (&half, m->align);
  }
  for (uint32_t g = 0; g < m->n_remat; g++) {
    tt_remat *G = &m->remat[g];
    c->group_of[G->root] = (int) g;
  }
  return TT_OK;
}

tt_status
tt_remat_materialize (tt_model * m, tt_error * err)
{
  remat_ctx c;
  tt_status st = remat_ctx_init (&c, m, err);
  if (st)
    return st;
  uint64_t swap_at = 0;
  m->n_dropped = 0;
  m->plan.recomputed = m->plan.swapped = m->plan.stashed = 0;
  m->plan.recomputed_bytes = m->plan.swapped_bytes = 0;
  m->plan.stashed_bytes = 0;
  for (uint32_t g = 0; g < m->n_remat && !m->tensor_oom; g++) {
    tt_remat *G = &m->remat[g];
    for (uint32_t k = 0; k < TT_REMAT_TENSORS; k++)
      G->twins[k] = G->late_twins[k] = G->stash[k] = -1;
    G->rerun_keep = 0;
    G->staging = -1;
    if (G->mode == TT_REMAT_KEEP && !G->late)
      continue;
    const bool swap = G->mode == TT_REMAT_SWAP;
    const bool stash = G->mode == TT_REMAT_STASH;
    m->n_dropped++;
    G->swap_offset = swap_at;
    /* in slot order, as remat_offsets lays them out */
    for (int late = 0; late < 2; late++)
      for (uint32_t k = 0; k < G->n_tensors; k++) {
        const int id = G->tensors[k];
        if (late ? !remat_in_rerun (G, k) : !remat_needs_twin (G, k, c.sp))
          continue;
        char name[TT_TENSOR_NAME_MAX];
        snprintf (name, sizeof name, "%s", m->tensors[id].name);
        const int t = tt_tensor_declare (m, name, late ? "rerun" : swap ?
            "swapped" : stash ? "widened" : "recomputed", m->tensors[id].kind,
            m->tensors[id].count);
        const uint64_t bytes = (uint64_t) m->tensors[id].count * sizeof (float);
        if (late) {
          G->late_twins[k] = t;
          if (remat_late_scratch (G, k, c.sp)) {
            G->rerun_keep |= 1u << k;
            m->plan.recomputed_bytes += bytes;
          }
        } else {
          G->twins[k] = t;
          if (swap) {
            swap_at += tt_remat_swap_bytes (m, G, k);
            m->plan.swapped_bytes += tt_remat_swap_bytes (m, G, k);
          } else if (stash) {
            /* the stash after the second instance: slot order */
          } else {
            m->plan.recomputed_bytes += bytes;
          }
        }
      }
    for (uint32_t k = 0; stash && k < G->n_tensors; k++) {
      if (G->twins[k] < 0)
        continue;
      const int id = G->tensors[k];
      char name[TT_TENSOR_NAME_MAX];
      snprintf (name, sizeof name, "%s", m->tensors[id].name);
      G->stash[k] = tt_tensor_declare (m, name, "stashed",
          m->tensors[id].kind, tt_stash_floats (m->tensors[id].count));
      m->plan.stashed_bytes += (uint64_t) m->tensors[id].count * 2;
    }
    if (remat_half_swap (m, G)) {
      char name[TT_TENSOR_NAME_MAX];
      snprintf (name, sizeof name, "%s", m->tensors[G->root].name);
      G->staging = tt_tensor_declare (m, name, "staging",
          m->tensors[G->root].kind, remat_part2_floats (m, G, 0));
    }
    m->plan.recomputed += !swap && !stash;
    m->plan.swapped += swap;
    m->plan.stashed += stash;
  }
  remat_ctx_free (&c);
  if (m->tensor_oom)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  return TT_OK;
}

void
tt_remat_lifetimes (tt_model * m)
{
  remat_ctx c;
  if (remat_ctx_init (&c, m, NULL))
    return;                     /* out of memory: the validator refuses */
  remat_layout (&c);
  for (uint32_t i = 0; i < m->n_base_tensors; i++) {
    m->tensors[i].first_use = c.first[i];
    m->tensors[i].last_use = c.last[i];
  }
  for (uint32_t g = 0; g < m->n_remat; g++)
    for (int part = 0; part < 3; part++)
      for (uint32_t k = 0; k < m->remat[g].n_tensors; k++) {
        const tt_remat *G = &m->remat[g];
        const int t = part == 2 ? (G->stash[k] >= 0 ? G->stash[k] :
            k == 0 ? G->staging : -1) : part ? G->late_twins[k] : G->twins[k];
        if (t < 0)
          continue;
        const int s = part == 2 ? remat_stash_slot (g, k) :
            remat_slot (g, k, part);
        m->tensors[t].first_use = c.tfirst[s];
        m->tensors[t].last_use = c.tlast[s];
      }
  remat_ctx_free (&c);
}

tt_status
tt_remat_plan (tt_model * m, tt_error * err)
{
  const uint64_t limit = m->memory_limit, unlimited = m->pool_bytes;
  m->plan.memory_limit = limit;
  m->plan.unlimited_pool_bytes = unlimited;
  const bool stash = tt_stash_on (m);
  if (!stash && (!limit || unlimited <= limit))
    return TT_OK;
  tt_status st = tt_remat_groups (m, err);
  remat_ctx c;
  if (st || (st = remat_ctx_init (&c, m, err)))
    return st;
  /* stashed: planned with every stash but those that raise the pool,
   * kept when that fits */
  remat_reset (m);
  if (stash && !remat_every_stash) {
    remat_unstash_peaks (&c);
    remat_reset (m);
  }
  bool found = stash && (!limit || remat_offsets (&c) <= limit);
  if (!found)
    found = !m->inference && (remat_search (&c, limit, false) ||
        (m->memory_swap && remat_search (&c, limit, true)));
  if (found)
    remat_prune (&c, limit);
  if (!found) {
    const uint64_t smallest = m->inference ? unlimited :
        remat_smallest (&c, unlimited, m->memory_swap, limit);
    m->plan.min_pool_bytes = smallest;
    found = smallest <= limit;
    if (found)
      remat_prune (&c, limit);
    if (!found) {
      /* what swapping would reach, when it is off */
      const uint64_t swapped = m->inference || m->memory_swap ? smallest :
          remat_smallest (&c, unlimited, true, limit);
      char hint[160] = "";
      if (m->inference)
        snprintf (hint, sizeof hint, "; an inference-only model has no "
            "backward pass to rebuild activations in");
      else if (swapped < smallest)
        snprintf (hint, sizeof hint, "; with [Model] memory_swap = true, %"
            PRIu64 " bytes", swapped);
      remat_ctx_free (&c);
      return tt_fail (err, TT_ERR_INVALID, "%s: a memory limit of %" PRIu64
          " bytes cannot be met: the smallest feasible limit is %" PRIu64
          " bytes (the pool is %" PRIu64 " bytes without a limit%s)",
          m->path, limit, smallest, unlimited, hint);
    }
  }
  remat_ctx_free (&c);
  if ((st = tt_remat_materialize (m, err)))
    return st;
  return TT_OK;
}

const char *
tt_remat_decision (const tt_remat * g)
{
  static const char *const how[4][2] = {
    {"keep", "keep, rerun"}, {"recompute", "recompute, rerun"},
    {"swap", "swap, rerun"}, {"stash", "stash, rerun"}
  };
  return how[g->mode][g->late];
}

const char *
tt_model_plan_dropped (const tt_model * m, uint32_t index, const char **how)
{
  for (uint32_t g = 0; g < m->n_remat; g++) {
    if (m->remat[g].mode == TT_REMAT_KEEP && !m->remat[g].late)
      continue;
    if (index-- == 0) {
      if (how)
        *how = tt_remat_decision (&m->remat[g]);
      return m->tensors[m->remat[g].root].name;
    }
  }
  return NULL;
}
