/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Planning a compiled graph into one pool:
 *   in-place decisions (inplace.c), tensors and uses (graph_tensors.c),
 *   candidate orders (storage order, nntrainer's depth-first order, the
 *   searched order: order_search.c), and for each the offsets of the
 *   offset planner (plan_offsets.c); the order whose pool is smallest wins,
 *   so the result is never worse than the depth-first order.
 * A stored plan (an optimized INI) replaces all of that by validation:
 * plan_ini.c.
 */
#include "tt_internal.h"
#include "order_search.h"
#include "plan_halves.h"
#include "plan_offsets.h"
#include "plan_validate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double
tt_plan_now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Root tensors as intervals; map[i] is the tensor id of interval i. */
tt_interval *
tt_plan_intervals (const tt_model * m, uint32_t ** map_out, size_t *n_out)
{
  size_t n = 0;
  for (uint32_t i = 0; i < m->n_tensors; i++)
    n += m->tensors[i].alias_of < 0;
  tt_interval *t = calloc (n + 1, sizeof *t);
  uint32_t *map = calloc (n + 1, sizeof *map);
  if (!t || !map) {
    free (t);
    free (map);
    return NULL;
  }
  size_t k = 0;
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    const tt_tensor *x = &m->tensors[i];
    if (x->alias_of >= 0)
      continue;
    t[k].size = (uint64_t) x->count * sizeof (float);
    t[k].first = x->first_use;
    t[k].last = x->last_use;
    t[k].offset = x->offset;
    t[k].halves = x->by_samples;
    map[k++] = i;
  }
  *map_out = map;
  *n_out = n;
  return t;
}

/* Lifetimes, offsets and pool size for the order in m->exec. */
static tt_status
plan_layout (tt_model * m, uint64_t * pool, uint64_t * bound,
    uint64_t * naive, tt_error * err)
{
  tt_lifetimes_compute (m);
  /* dropped activations (remat.c): forward-only first instances, second
   * ones from their trigger */
  if (m->n_dropped)
    tt_remat_lifetimes (m);
  uint32_t *map;
  size_t n;
  tt_interval *t = tt_plan_intervals (m, &map, &n);
  if (!t)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory planning", m->path);
  *bound = tt_plan_lower_bound (t, n, m->align);
  *naive = tt_plan_naive_size (t, n, m->align);
  *pool = tt_plan_assign_offsets_search (t, n, m->align, m->plan_thorough);
  if (*pool != UINT64_MAX)
    for (size_t i = 0; i < n; i++)
      m->tensors[map[i]].offset = t[i].offset;
  m->plan.one_thread_pool_bytes = *pool;
  m->plan.laid_out_threads = 1;
  /* two threads: by halves (plan_halves.h), unless no tensor is big
   * enough for a column or that takes more than half again the bytes */
  bool columns = false;
  for (size_t i = 0; i < n && !columns; i++)
    columns = tt_plan_halves_in_column (&t[i], m->align);
  if (m->plan_halves && columns && *pool != UINT64_MAX &&
      *pool <= UINT64_MAX / 2) {
    const uint64_t halves = tt_plan_assign_offsets_halves (t, n, m->align);
    if (halves <= *pool + *pool / 2) {
      for (size_t i = 0; i < n; i++)
        m->tensors[map[i]].offset = t[i].offset;
      *pool = halves;
      m->plan.laid_out_threads = 2;
    }
  }
  free (t);
  free (map);
  if (*pool == UINT64_MAX || *bound == UINT64_MAX)
    return tt_fail (err, TT_ERR_NOMEM,
        "%s: the memory plan does not fit in 64 bits or memory ran out",
        m->path);
  return TT_OK;
}

/* No reuse, no in-place: every root after the previous, in declaration
 * order. The reference the planned layout is checked against. */
static tt_status
plan_naive (tt_model * m, tt_error * err)
{
  uint64_t offset = 0;
  tt_lifetimes_compute (m);
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    tt_tensor *t = &m->tensors[i];
    if (t->alias_of >= 0)
      continue;
    uint64_t bytes = tt_tensor_aligned_bytes (t, m->align);
    if (offset > UINT64_MAX - bytes)
      return tt_fail (err, TT_ERR_INVALID, "%s: tensor %s overflows the "
          "pool", m->path, t->name);
    t->offset = offset;
    offset += bytes;
  }
  m->pool_bytes = offset;
  m->plan.pool_bytes = m->plan.naive_bytes = offset;
  m->plan.one_thread_pool_bytes = offset;
  m->plan.laid_out_threads = 1;
  return TT_OK;
}

/* The layers in their stored order, no plan yet: where both the search
 * and a stored plan start. */
void
tt_plan_reset (tt_model * m)
{
  memset (&m->plan, 0, sizeof m->plan);
  free (m->remat);
  m->remat = NULL;
  m->n_remat = m->n_dropped = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    m->exec[i] = (int) i;
  tt_order_apply (m, m->exec);
}

/* Every chunked gradient against the independent check (plan_validate.c):
 * its tensor holds whole rows, fewer than the weight's, and each chunk
 * starts on a GEMM row tile. */
tt_status
tt_plan_check_chunks (const tt_model * m, tt_error * err)
{
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_weights; k++) {
      const tt_weight *w = &l->weights[k];
      if (w->grad < 0 || w->chunk_rows == 0)
        continue;
      char why[256];
      const tt_tensor *g = &m->tensors[w->grad];
      if (tt_plan_validate_chunk (w->count, w->rows, w->chunk_rows,
              g->count, TT_GRAD_CHUNK_QUANTUM, g->name, why, sizeof why))
        return tt_fail (err, TT_ERR_INVALID, "%s: gradient chunk rejected: "
            "%s", m->path, why);
    }
  }
  return TT_OK;
}

tt_status
tt_plan_build (tt_model * m, tt_error * err)
{
  const double t0 = tt_plan_now ();
  tt_status st;
  tt_plan_reset (m);

  if (m->plan_mode != TT_PLAN_NAIVE)
    tt_inplace_decide (m);
  /* update as you go unless every gradient must be whole at once, or
   * OpenBLAS runs a GEMM on several threads: it then splits the rows of
   * dW between them by their count, so a chunk's elements are no longer
   * those of the whole product (measured: 4% to 16% of them differ in the
   * last bits with 2 threads and 48-row chunks); whole gradients keep such
   * training what it was */
  m->update_as_you_go = !m->keep_gradients && !m->whole_gradients &&
      !m->inference &&
      !tt_model_gradients_whole (m) && tt_blas_thread_count () <= 1;
  tt_graph_declare_tensors (m);
  if (m->tensor_oom)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory declaring tensors",
        m->path);
  if ((st = tt_plan_check_chunks (m, err)))
    return st;
  for (uint32_t i = 0; i < m->n_layers; i++)
    m->plan.in_place_layers += m->layers[i].in_place;
  m->plan.tensors = 0;
  for (uint32_t i = 0; i < m->n_tensors; i++)
    m->plan.tensors += m->tensors[i].alias_of < 0;

  if (m->plan_mode == TT_PLAN_NAIVE) {
    if (m->memory_limit)
      return tt_fail (err, TT_ERR_INVALID, "%s: a naive layout (no reuse) "
          "cannot be planned under a memory limit", m->path);
    st = plan_naive (m, err);
    m->plan.plan_seconds = tt_plan_now () - t0;
    return st;
  }

  const uint32_t n = m->n_layers;
  int *candidates = malloc (3 * (size_t) n * sizeof *candidates);
  if (!candidates)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  int *storage = candidates, *dfs = candidates + n, *searched = dfs + n;
  for (uint32_t i = 0; i < n; i++)
    storage[i] = (int) i;
  uint64_t searched_peak;
  bool exact = false;
  bool have_dfs = tt_order_dfs (m, dfs) == 0;
  bool have_search = tt_order_search (m, m->align, searched, &searched_peak,
      &exact) == 0;
  m->plan.order_exact = exact && have_search;

  /* the searched order first: on a tie it wins; an order equal to one
   * already laid out is not laid out again */
  int *order[3] = { have_search ? searched : NULL, storage,
    have_dfs ? dfs : NULL
  };
  uint64_t *best_offsets = malloc ((m->n_tensors + 1) * sizeof *best_offsets);
  if (!best_offsets) {
    free (candidates);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  }
  int best = -1;
  uint64_t pool_of[3] = { 0 }, bound_of[3] = { 0 }, naive = 0;
  uint64_t one_thread_pool_of[3] = { 0 };
  uint32_t threads_of[3] = { 0 };
  for (int c = 0; c < 3; c++) {
    if (!order[c])
      continue;
    int same = -1;
    for (int k = 0; k < c && same < 0; k++)
      if (order[k] && !memcmp (order[k], order[c], n * sizeof (int)))
        same = k;
    if (same >= 0) {
      pool_of[c] = pool_of[same];
      bound_of[c] = bound_of[same];
      one_thread_pool_of[c] = one_thread_pool_of[same];
      threads_of[c] = threads_of[same];
      continue;
    }
    tt_order_apply (m, order[c]);
    if ((st = plan_layout (m, &pool_of[c], &bound_of[c], &naive, err))) {
      free (candidates);
      free (best_offsets);
      return st;
    }
    one_thread_pool_of[c] = m->plan.one_thread_pool_bytes;
    threads_of[c] = m->plan.laid_out_threads;
    if (best < 0 || pool_of[c] < pool_of[best]) {
      best = c;
      for (uint32_t i = 0; i < m->n_tensors; i++)
        best_offsets[i] = m->tensors[i].offset;
    }
  }
  if (have_dfs) {
    m->plan.dfs_pool_bytes = pool_of[2];
    m->plan.dfs_lower_bound = bound_of[2];
  }
  uint64_t best_pool = pool_of[best], bound = bound_of[best];
  tt_order_apply (m, order[best]);
  tt_lifetimes_compute (m);
  for (uint32_t i = 0; i < m->n_tensors; i++)
    m->tensors[i].offset = best_offsets[i];
  free (best_offsets);
  free (candidates);
  m->pool_bytes = best_pool;
  m->plan.pool_bytes = best_pool;
  m->plan.lower_bound = bound;
  m->plan.naive_bytes = naive;
  m->plan.one_thread_pool_bytes = one_thread_pool_of[best];
  m->plan.laid_out_threads = threads_of[best];
  /* over the memory limit: activations dropped and rebuilt in backward
   * (remat.c), laid out again with their second instances; so are the
   * stashes of a half activation type (core/stash.c) */
  if ((st = tt_remat_plan (m, err)))
    return st;
  if (m->n_dropped) {
    if ((st = plan_layout (m, &best_pool, &bound, &naive, err)))
      return st;
    if (m->memory_limit && best_pool > m->memory_limit)
      return tt_fail (err, TT_ERR_INVALID, "%s: the plan under the memory "
          "limit of %" PRIu64 " bytes came out at %" PRIu64 " bytes",
          m->path, m->memory_limit, best_pool);
    m->pool_bytes = m->plan.pool_bytes = best_pool;
    m->plan.lower_bound = bound;
    m->plan.naive_bytes = naive;
  }
  m->plan.plan_seconds = tt_plan_now () - t0;
  return TT_OK;
}

/* FNV-1a over everything a plan depends on: layers (names, types,
 * connections, shapes, weights, trainable flags, where derivatives are
 * computed), batch size and optimizer state count. Alignment, in-place
 * choices and the order are not in it: they are the plan. */
static void
plan_hash_bytes (uint64_t * h, const void *data, size_t len)
{
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    *h ^= p[i];
    *h *= 0x100000001b3ull;
  }
}

static void
plan_hash_u32 (uint64_t * h, uint32_t v)
{
  unsigned char b[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff,
    v >> 24
  };
  plan_hash_bytes (h, b, 4);
}

static void
plan_hash_str (uint64_t * h, const char *s)
{
  plan_hash_bytes (h, s, strlen (s) + 1);
}

uint64_t
tt_plan_fingerprint (const tt_model * m)
{
  uint64_t h = 0xcbf29ce484222325ull;
  plan_hash_str (&h, "tensor-trainer plan 1");
  plan_hash_u32 (&h, m->batch_size);
  plan_hash_u32 (&h, tt_optimizer_state_count (&m->opt));
  plan_hash_u32 (&h, m->force_input_derivative);
  plan_hash_u32 (&h, m->n_layers);
  /* only when set, so training fingerprints stay what they were */
  if (m->inference)
    plan_hash_str (&h, "inference only");
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    plan_hash_str (&h, l->name);
    plan_hash_str (&h, l->ops->type);
    plan_hash_u32 (&h, l->ops->role == TT_ROLE_ACTIVATION ?
        (uint32_t) l->p.act.fn : 0);
    plan_hash_u32 (&h, l->n_inputs);
    for (uint32_t k = 0; k < l->n_inputs; k++) {
      plan_hash_str (&h, m->layers[l->inputs[k].layer].name);
      plan_hash_u32 (&h, l->inputs[k].index);
    }
    plan_hash_u32 (&h, l->n_outputs);
    for (uint32_t o = 0; o < l->n_outputs; o++) {
      plan_hash_u32 (&h, l->out_dims[o].c);
      plan_hash_u32 (&h, l->out_dims[o].h);
      plan_hash_u32 (&h, l->out_dims[o].w);
    }
    plan_hash_u32 (&h, l->n_weights);
    for (uint32_t w = 0; w < l->n_weights; w++) {
      plan_hash_str (&h, l->weights[w].suffix);
      plan_hash_u32 (&h, (uint32_t) l->weights[w].count);
      plan_hash_u32 (&h, l->weights[w].trainable);
    }
    plan_hash_u32 (&h, l->grad_flows);
    plan_hash_u32 (&h, l->needs_derivative);
  }
  return h;
}

void
tt_model_plan_info (const tt_model * m, tt_plan_info * info)
{
  *info = m->plan;
}
