/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The execution order changes the memory lower bound itself (nntrainer
 * issue #1126: it uses a plain depth-first order). The backward pass runs
 * the forward order in reverse, so the bytes live while layer L runs any of
 * its four phases depend only on L and the SET S of layers that ran forward
 * before it, never on the order inside S. An order is a path through the
 * downward-closed sets ("ideals") of the graph, its peak the largest
 * transition cost on the path:
 *
 *   exact:  dynamic programming over ideals, minimizing the bottleneck
 *           (best[S + L] = min over L of max(best[S], cost(S, L))), when
 *           the graph has few enough ideals;
 *   greedy: otherwise, repeatedly run the ready layer of least cost, then
 *           improve by swapping adjacent independent layers.
 *
 * cost(S, L) is exact: a tensor is live while L runs phase p when one of
 * its uses comes no later and one no earlier, and "earlier" between two
 * layers is decided by membership in S alone (forward: A ran before L iff
 * A is in S; backward: A's backward ran before L's iff A is not in S).
 */
#include "tt_internal.h"
#include "order_search.h"

#include <stdlib.h>
#include <string.h>

#define ORDER_MAX_IDEALS 20000
/* The local improvement stops after this many neighbour swaps tried
 * (each re-walks the whole order): a bound on work, not on seconds, so
 * that a plan does not depend on how busy the machine was (about 0.1 s
 * for a 48-layer graph on the 2-core development machine). */
#define ORDER_IMPROVE_SWAPS 20000

typedef struct
{
  const tt_model *m;
  uint32_t n, words;
  uint64_t align;
  /* per root: uses [use_start[r], use_start[r+1]) in uses_by_root */
  uint32_t n_roots;
  uint64_t *root_bytes;
  uint32_t *use_start;
  tt_use *uses_by_root;
  uint64_t *preds;              /* n x words: producers of each layer */
  bool always_total_ready;
  uint64_t always_bytes;        /* roots live at every step */
  bool *is_always;
} order_ctx;

static inline bool
order_bit (const uint64_t * s, uint32_t i)
{
  return (s[i >> 6] >> (i & 63)) & 1u;
}

static inline void
order_set (uint64_t * s, uint32_t i)
{
  s[i >> 6] |= 1ull << (i & 63);
}

/* -1: use comes before (L, p); +1: after; 0: same step. */
static int
order_compare (const order_ctx * c, const uint64_t * s, const tt_use * u,
    uint32_t l, tt_phase p)
{
  if (u->phase == TT_PHASE_BEGIN)
    return -1;
  if (u->phase == TT_PHASE_END)
    return 1;
  if ((uint32_t) u->layer == l) {
    int a = tt_phase_rank (c->m, u->layer, u->phase);
    int b = tt_phase_rank (c->m, (int) l, p);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  bool a_fwd = u->phase == TT_PHASE_FORWARD, l_fwd = p == TT_PHASE_FORWARD;
  bool in_s = order_bit (s, (uint32_t) u->layer);
  (void) c;
  if (a_fwd && l_fwd)
    return in_s ? -1 : 1;
  if (a_fwd)
    return -1;
  if (l_fwd)
    return 1;
  return in_s ? 1 : -1;
}

/* Largest live bytes over the four phases of l, after the layers in s ran
 * forward. */
static uint64_t
order_cost (const order_ctx * c, const uint64_t * s, uint32_t l)
{
  uint64_t worst = 0;
  for (int p = TT_PHASE_FORWARD; p <= TT_PHASE_APPLY; p++) {
    uint64_t live = c->always_bytes;
    for (uint32_t r = 0; r < c->n_roots; r++) {
      if (c->is_always[r])
        continue;
      bool before = false, after = false;
      for (uint32_t k = c->use_start[r]; k < c->use_start[r + 1]; k++) {
        int cmp = order_compare (c, s, &c->uses_by_root[k], l, (tt_phase) p);
        before |= cmp <= 0;
        after |= cmp >= 0;
        if (before && after)
          break;
      }
      if (before && after)
        live += c->root_bytes[r];
    }
    if (live > worst)
      worst = live;
  }
  return worst;
}

static void
order_ctx_free (order_ctx * c)
{
  free (c->root_bytes);
  free (c->use_start);
  free (c->uses_by_root);
  free (c->preds);
  free (c->is_always);
}

static int
order_ctx_init (order_ctx * c, const tt_model * m, uint64_t align)
{
  memset (c, 0, sizeof *c);
  c->m = m;
  c->n = m->n_layers;
  c->words = (c->n + 63) / 64;
  c->align = align;
  c->n_roots = m->n_tensors;    /* indexed by tensor id; views stay empty */
  c->root_bytes = calloc (c->n_roots, sizeof *c->root_bytes);
  c->use_start = calloc (c->n_roots + 1, sizeof *c->use_start);
  c->uses_by_root = malloc ((m->n_uses + 1) * sizeof *c->uses_by_root);
  c->preds = calloc ((size_t) c->n * c->words, sizeof *c->preds);
  c->is_always = calloc (c->n_roots, sizeof *c->is_always);
  if (!c->root_bytes || !c->use_start || !c->uses_by_root || !c->preds
      || !c->is_always) {
    order_ctx_free (c);
    return -1;
  }
  for (uint32_t u = 0; u < m->n_uses; u++)
    c->use_start[m->uses[u].tensor + 1]++;
  for (uint32_t r = 0; r < c->n_roots; r++)
    c->use_start[r + 1] += c->use_start[r];
  uint32_t *fill = calloc (c->n_roots + 1, sizeof *fill);
  if (!fill) {
    order_ctx_free (c);
    return -1;
  }
  for (uint32_t u = 0; u < m->n_uses; u++) {
    uint32_t r = (uint32_t) m->uses[u].tensor;
    c->uses_by_root[c->use_start[r] + fill[r]++] = m->uses[u];
    if (m->uses[u].phase == TT_PHASE_ALWAYS)
      c->is_always[r] = true;
  }
  free (fill);
  for (uint32_t r = 0; r < c->n_roots; r++) {
    if (m->tensors[r].alias_of >= 0)
      continue;
    c->root_bytes[r] = tt_tensor_aligned_bytes (&m->tensors[r], align);
    if (c->is_always[r])
      c->always_bytes += c->root_bytes[r];
  }
  for (uint32_t l = 0; l < c->n; l++)
    for (uint32_t k = 0; k < m->layers[l].n_inputs; k++)
      order_set (c->preds + (size_t) l * c->words,
          (uint32_t) m->layers[l].inputs[k].layer);
  return 0;
}

static bool
order_ready (const order_ctx * c, const uint64_t * s, uint32_t l)
{
  if (order_bit (s, l))
    return false;
  const uint64_t *p = c->preds + (size_t) l * c->words;
  for (uint32_t w = 0; w < c->words; w++)
    if (p[w] & ~s[w])
      return false;
  return true;
}

uint64_t
tt_order_peak (const tt_model * m, const int *exec, uint64_t align)
{
  order_ctx c;
  if (order_ctx_init (&c, m, align))
    return UINT64_MAX;
  uint64_t *s = calloc (c.words, sizeof *s), peak = 0;
  for (uint32_t i = 0; s && i < c.n; i++) {
    uint64_t cost = order_cost (&c, s, (uint32_t) exec[i]);
    peak = cost > peak ? cost : peak;
    order_set (s, (uint32_t) exec[i]);
  }
  if (!s)
    peak = UINT64_MAX;
  free (s);
  order_ctx_free (&c);
  return peak;
}

/* ---- depth-first order (nntrainer's) ---------------------------------- */

static void
order_dfs_visit (const tt_model * m, uint32_t l, bool *seen, int *post,
    uint32_t * n_post)
{
  seen[l] = true;
  /* consumers in storage order, so the deepest branch finishes first */
  for (uint32_t c = 0; c < m->n_layers; c++) {
    if (seen[c])
      continue;
    for (uint32_t k = 0; k < m->layers[c].n_inputs; k++)
      if ((uint32_t) m->layers[c].inputs[k].layer == l) {
        order_dfs_visit (m, c, seen, post, n_post);
        break;
      }
  }
  post[(*n_post)++] = (int) l;
}

int
tt_order_dfs (const tt_model * m, int *exec)
{
  bool *seen = calloc (m->n_layers, sizeof *seen);
  int *post = malloc (m->n_layers * sizeof *post);
  uint32_t n_post = 0;
  if (!seen || !post) {
    free (seen);
    free (post);
    return -1;
  }
  for (uint32_t l = 0; l < m->n_layers; l++)
    if (!seen[l] && m->layers[l].n_inputs == 0)
      order_dfs_visit (m, l, seen, post, &n_post);
  /* reverse postorder is a topological order */
  for (uint32_t i = 0; i < n_post; i++)
    exec[i] = post[n_post - 1 - i];
  free (seen);
  free (post);
  return n_post == m->n_layers ? 0 : -1;
}

/* ---- exact search over ideals ---------------------------------------- */

typedef struct
{
  uint64_t *sets;               /* capacity x words */
  uint64_t *best;
  int32_t *parent;              /* ideal index it came from */
  int32_t *via;                 /* layer added */
  int32_t *slots;               /* hash table of ideal indices, -1 empty */
  uint32_t n, capacity, n_slots;
} order_ideals;

static uint64_t
order_hash (const uint64_t * s, uint32_t words)
{
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (uint32_t w = 0; w < words; w++) {
    h ^= s[w] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  }
  return h ^ (h >> 33);
}

/* Finds or inserts s; returns its index, -1 when full. */
static int32_t
order_ideals_get (order_ideals * t, const uint64_t * s, uint32_t words,
    bool *created)
{
  uint32_t mask = t->n_slots - 1;
  for (uint32_t h = (uint32_t) order_hash (s, words) & mask;;
      h = (h + 1) & mask) {
    int32_t at = t->slots[h];
    if (at < 0) {
      if (t->n == t->capacity)
        return -1;
      memcpy (t->sets + (size_t) t->n * words, s, words * sizeof *s);
      t->slots[h] = (int32_t) t->n;
      *created = true;
      return (int32_t) t->n++;
    }
    if (!memcmp (t->sets + (size_t) at * words, s, words * sizeof *s)) {
      *created = false;
      return at;
    }
  }
}

/* Returns 0 and the best order, 1 when the graph has too many ideals, -1
 * on allocation failure. */
static int
order_exact (const order_ctx * c, int *exec, uint64_t * peak)
{
  order_ideals t;
  memset (&t, 0, sizeof t);
  t.capacity = ORDER_MAX_IDEALS;
  t.n_slots = 1;
  while (t.n_slots < 2 * t.capacity)
    t.n_slots <<= 1;
  t.sets = calloc ((size_t) t.capacity * c->words, sizeof *t.sets);
  t.best = malloc (t.capacity * sizeof *t.best);
  t.parent = malloc (t.capacity * sizeof *t.parent);
  t.via = malloc (t.capacity * sizeof *t.via);
  t.slots = malloc (t.n_slots * sizeof *t.slots);
  uint64_t *next = calloc (c->words, sizeof *next);
  int rc = 0;
  if (!t.sets || !t.best || !t.parent || !t.via || !t.slots || !next) {
    rc = -1;
    goto out;
  }
  memset (t.slots, 0xff, t.n_slots * sizeof *t.slots);
  bool created;
  int32_t root = order_ideals_get (&t, next, c->words, &created);
  t.best[root] = 0;
  t.parent[root] = -1;
  t.via[root] = -1;
  /* ideals are created in order of size (breadth first), so every ideal's
   * predecessors are final before it is expanded */
  for (uint32_t i = 0; i < t.n; i++) {
    const uint64_t *s = t.sets + (size_t) i * c->words;
    for (uint32_t l = 0; l < c->n; l++) {
      if (!order_ready (c, s, l))
        continue;
      uint64_t cost = order_cost (c, s, l);
      uint64_t cand = cost > t.best[i] ? cost : t.best[i];
      memcpy (next, s, c->words * sizeof *next);
      order_set (next, l);
      int32_t j = order_ideals_get (&t, next, c->words, &created);
      if (j < 0) {
        rc = 1;
        goto out;
      }
      if (created || cand < t.best[j]) {
        t.best[j] = cand;
        t.parent[j] = (int32_t) i;
        t.via[j] = (int32_t) l;
      }
      s = t.sets + (size_t) (i) * c->words;
    }
  }
  /* the full set is the last ideal created */
  int32_t at = (int32_t) t.n - 1;
  *peak = t.best[at];
  for (int32_t pos = (int32_t) c->n - 1; pos >= 0; pos--) {
    exec[pos] = t.via[at];
    at = t.parent[at];
  }
out:
  free (t.sets);
  free (t.best);
  free (t.parent);
  free (t.via);
  free (t.slots);
  free (next);
  return rc;
}

/* ---- greedy with local improvement ----------------------------------- */

static uint64_t
order_path_peak (const order_ctx * c, const int *exec, uint64_t * s)
{
  memset (s, 0, c->words * sizeof *s);
  uint64_t peak = 0;
  for (uint32_t i = 0; i < c->n; i++) {
    uint64_t cost = order_cost (c, s, (uint32_t) exec[i]);
    peak = cost > peak ? cost : peak;
    order_set (s, (uint32_t) exec[i]);
  }
  return peak;
}

static bool
order_consumes (const tt_model * m, int consumer, int producer)
{
  for (uint32_t k = 0; k < m->layers[consumer].n_inputs; k++)
    if (m->layers[consumer].inputs[k].layer == producer)
      return true;
  return false;
}

static int
order_greedy (const order_ctx * c, int *exec, uint64_t * peak)
{
  uint64_t *s = calloc (c->words, sizeof *s);
  if (!s)
    return -1;
  for (uint32_t i = 0; i < c->n; i++) {
    int pick = -1;
    uint64_t pick_cost = UINT64_MAX;
    for (uint32_t l = 0; l < c->n; l++) {
      if (!order_ready (c, s, l))
        continue;
      uint64_t cost = order_cost (c, s, l);
      if (cost < pick_cost) {
        pick_cost = cost;
        pick = (int) l;
      }
    }
    if (pick < 0) {
      free (s);
      return -1;
    }
    exec[i] = pick;
    order_set (s, (uint32_t) pick);
  }
  /* local improvement: swap neighbours that do not depend on each other
   * while it lowers the peak, within a work budget */
  uint64_t best = order_path_peak (c, exec, s);
  uint32_t swaps = 0;
  for (bool improved = true; improved;) {
    improved = false;
    for (uint32_t i = 0; i + 1 < c->n; i++) {
      if (order_consumes (c->m, exec[i + 1], exec[i]))
        continue;
      int a = exec[i];
      exec[i] = exec[i + 1];
      exec[i + 1] = a;
      uint64_t p = order_path_peak (c, exec, s);
      if (p < best) {
        best = p;
        improved = true;
      } else {
        exec[i + 1] = exec[i];
        exec[i] = a;
      }
      if (++swaps >= ORDER_IMPROVE_SWAPS) {
        improved = false;
        break;
      }
    }
  }
  *peak = best;
  free (s);
  return 0;
}

int
tt_order_search (const tt_model * m, uint64_t align, int *exec,
    uint64_t * peak, bool *exact)
{
  order_ctx c;
  if (order_ctx_init (&c, m, align))
    return -1;
  int rc = order_exact (&c, exec, peak);
  *exact = rc == 0;
  if (rc == 1)
    rc = order_greedy (&c, exec, peak);
  order_ctx_free (&c);
  return rc;
}
