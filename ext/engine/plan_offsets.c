/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory-offset planner (see plan_offsets.h).
 *
 * Placing intervals with sizes so that conflicting ones do not overlap is
 * dynamic storage allocation, which is NP-hard; the planner therefore
 * combines cheap greedy constructions with a bounded local search:
 *
 * 1. Greedy placement in a given order: each tensor goes to the
 *    lowest-waste gap (best fit) left between the already-placed tensors
 *    it conflicts with, or on top of them when no gap fits. Largest-first
 *    is the classic order; size x duration, first use and duration are
 *    tried as well because each wins on different shapes of lifetimes.
 * 2. Squeaky-wheel local search from the best order: the tensors that end
 *    highest (the ones that make the pool larger than the lower bound)
 *    are moved earlier in the order and the greedy runs again; an order
 *    that is no worse replaces the current one, the best result is kept.
 *    The search stops at the lower bound (provably optimal) or when its
 *    work budget, counted in scanned slots rather than time so that the
 *    result stays deterministic, is spent.
 *
 * All sizes are rounded up to the alignment before placement, so every
 * offset, being 0 or the end of another tensor, stays aligned.
 */
#include "plan_offsets.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A tensor that needs bytes. Invariant: asize > 0 and a multiple of the
 * alignment, 0 <= first <= last, idx < n (the caller's index). */
typedef struct {
  uint64_t asize;
  int32_t first, last;
  uint32_t idx;
} plan_offsets_item;

/* A placed tensor, kept in an array sorted by off so that one scan finds
 * every gap. Invariant: end = off + asize, no overflow. */
typedef struct {
  uint64_t off, end;
  int32_t first, last;
} plan_offsets_slot;

/* Sort record for building an order: ascending on k[0], k[1], k[2], then
 * idx, so that every order is total and the result deterministic whatever
 * qsort does with ties. "Descending" keys are stored complemented. */
typedef struct {
  uint64_t k[3];
  uint32_t idx;
} plan_offsets_key;

/* Scratch shared by all passes; sized once for m items. */
typedef struct {
  const plan_offsets_item *items;
  uint32_t m;
  plan_offsets_slot *slots;     /* m entries */
  uint64_t *off;                /* m entries: offset per item of this pass */
  uint64_t work;                /* slots scanned so far, the search budget */
} plan_offsets_ctx;

/* Work budget of the whole search, in scanned slots (about 1 ns each).
 * The construction passes always run; the local search only while the
 * budget lasts, so large inputs get fewer iterations and stay fast. */
#define PLAN_OFFSETS_WORK_BUDGET 12000000ull
/* ... but at least this many local-search passes on small inputs. */
#define PLAN_OFFSETS_MIN_ITERS 64u
/* ... and never more than this many. */
#define PLAN_OFFSETS_MAX_ITERS 400u

static bool
plan_offsets_add (uint64_t a, uint64_t b, uint64_t * out)
{
  if (a > UINT64_MAX - b)
    return false;
  *out = a + b;
  return true;
}

/* Rounds size up to align (a power of two); false on overflow. */
static bool
plan_offsets_round (uint64_t size, uint64_t align, uint64_t * out)
{
  if (size > UINT64_MAX - (align - 1))
    return false;
  *out = (size + align - 1) & ~(align - 1);
  return true;
}

static bool
plan_offsets_align_ok (uint64_t * align)
{
  if (*align == 0)
    *align = TT_PLAN_DEFAULT_ALIGN;
  return (*align & (*align - 1)) == 0;
}

static bool
plan_offsets_lifetime_ok (const tt_interval * t)
{
  return t->first >= 0 && t->first <= t->last;
}

uint64_t
tt_plan_naive_size (const tt_interval * t, size_t n, uint64_t align)
{
  uint64_t total = 0, a;

  if (!plan_offsets_align_ok (&align))
    return UINT64_MAX;
  for (size_t i = 0; i < n; i++) {
    if (!plan_offsets_lifetime_ok (&t[i])
        || !plan_offsets_round (t[i].size, align, &a)
        || !plan_offsets_add (total, a, &total))
      return UINT64_MAX;
  }
  return total;
}

/* A lifetime boundary for the lower-bound sweep: the aligned size enters
 * at step first and leaves at step last + 1 (int64: last may be
 * INT32_MAX). */
typedef struct {
  int64_t step;
  uint64_t asize;
  bool leave;
} plan_offsets_event;

static int
plan_offsets_event_cmp (const void *pa, const void *pb)
{
  const plan_offsets_event *a = pa, *b = pb;

  if (a->step != b->step)
    return a->step < b->step ? -1 : 1;
  /* Leaving first: a tensor whose last step is t - 1 is not live at t. */
  if (a->leave != b->leave)
    return a->leave ? -1 : 1;
  return 0;
}

uint64_t
tt_plan_lower_bound (const tt_interval * t, size_t n, uint64_t align)
{
  plan_offsets_event *ev;
  uint64_t live = 0, peak = 0, a;
  size_t ne = 0;

  if (!plan_offsets_align_ok (&align))
    return UINT64_MAX;
  if (n == 0)
    return 0;
  if (n > SIZE_MAX / (2 * sizeof *ev))
    return UINT64_MAX;
  ev = malloc (2 * n * sizeof *ev);
  if (!ev)
    return UINT64_MAX;
  for (size_t i = 0; i < n; i++) {
    if (!plan_offsets_lifetime_ok (&t[i])
        || !plan_offsets_round (t[i].size, align, &a)) {
      free (ev);
      return UINT64_MAX;
    }
    if (a == 0)
      continue;
    ev[ne++] = (plan_offsets_event) {
    t[i].first, a, false};
    ev[ne++] = (plan_offsets_event) {
    (int64_t) t[i].last + 1, a, true};
  }
  qsort (ev, ne, sizeof *ev, plan_offsets_event_cmp);
  for (size_t i = 0; i < ne; i++) {
    if (ev[i].leave) {
      live -= ev[i].asize;      /* entered before: cannot underflow */
    } else if (!plan_offsets_add (live, ev[i].asize, &live)) {
      free (ev);
      return UINT64_MAX;
    }
    if (live > peak)
      peak = live;
  }
  free (ev);
  return peak;
}

static int
plan_offsets_key_cmp (const void *pa, const void *pb)
{
  const plan_offsets_key *a = pa, *b = pb;

  for (int i = 0; i < 3; i++)
    if (a->k[i] != b->k[i])
      return a->k[i] < b->k[i] ? -1 : 1;
  if (a->idx != b->idx)
    return a->idx < b->idx ? -1 : 1;
  return 0;
}

/* The orders the construction tries. */
typedef enum {
  PLAN_OFFSETS_BY_SIZE,         /* size, then duration, descending */
  PLAN_OFFSETS_BY_AREA,         /* size x duration descending */
  PLAN_OFFSETS_BY_FIRST,        /* first use ascending, larger first */
  PLAN_OFFSETS_BY_DURATION,     /* duration, then size, descending */
  PLAN_OFFSETS_N_ORDERS
} plan_offsets_order_kind;

/* a * b as a 96-bit value split into (hi, lo): hi = a * b >> 32,
 * lo = low 32 bits. b < 2^32, so hi cannot overflow. */
static void
plan_offsets_mul (uint64_t a, uint64_t b, uint64_t * hi, uint64_t * lo)
{
  uint64_t lo_part = (a & 0xffffffffu) * b;

  *hi = (a >> 32) * b + (lo_part >> 32);
  *lo = lo_part & 0xffffffffu;
}

/* Fills order[] (m item indices) according to kind. */
static void
plan_offsets_make_order (const plan_offsets_item * items, uint32_t m,
    plan_offsets_order_kind kind, plan_offsets_key * keys, uint32_t * order)
{
  for (uint32_t i = 0; i < m; i++) {
    const plan_offsets_item *it = &items[i];
    /* Duration in steps, at most 2^31: fits in 32 bits. */
    uint64_t dur = (uint64_t) ((int64_t) it->last - it->first + 1);
    plan_offsets_key *k = &keys[i];

    k->idx = i;
    switch (kind) {
      case PLAN_OFFSETS_BY_SIZE:
        k->k[0] = ~it->asize;
        k->k[1] = ~dur;
        k->k[2] = 0;
        break;
      case PLAN_OFFSETS_BY_AREA:
        plan_offsets_mul (it->asize, dur, &k->k[0], &k->k[1]);
        k->k[0] = ~k->k[0];
        k->k[1] = ~k->k[1];
        k->k[2] = ~it->asize;
        break;
      case PLAN_OFFSETS_BY_FIRST:
        k->k[0] = (uint64_t) it->first;
        k->k[1] = ~it->asize;
        k->k[2] = ~dur;
        break;
      default:
        k->k[0] = ~dur;
        k->k[1] = ~it->asize;
        k->k[2] = 0;
        break;
    }
  }
  qsort (keys, m, sizeof *keys, plan_offsets_key_cmp);
  for (uint32_t i = 0; i < m; i++)
    order[i] = keys[i].idx;
}

/* One greedy pass: places the items in the given order, each at the
 * best-fitting gap among the placed items it conflicts with. Fills
 * ctx->off and returns the pool size, or UINT64_MAX on overflow. */
static uint64_t
plan_offsets_greedy (plan_offsets_ctx * ctx, const uint32_t * order)
{
  plan_offsets_slot *slots = ctx->slots;
  uint32_t ns = 0;
  uint64_t pool = 0;

  for (uint32_t k = 0; k < ctx->m; k++) {
    const plan_offsets_item *it = &ctx->items[order[k]];
    uint64_t asize = it->asize, cur = 0, best = UINT64_MAX;
    uint64_t best_waste = UINT64_MAX, end;
    int32_t first = it->first, last = it->last;
    uint32_t s, lo, hi;

    /* cur is the highest end among the conflicting slots scanned so far;
     * slots are sorted by off, so [cur, slot.off) is free of conflicts. */
    for (s = 0; s < ns; s++) {
      const plan_offsets_slot *sl = &slots[s];

      if (sl->first > last || sl->last < first)
        continue;
      if (sl->off > cur) {
        uint64_t gap = sl->off - cur;

        if (gap >= asize && gap - asize < best_waste) {
          best_waste = gap - asize;
          best = cur;
          if (best_waste == 0)
            break;              /* a perfect fit cannot be beaten */
        }
      }
      if (sl->end > cur)
        cur = sl->end;
    }
    ctx->work += s + 1;
    if (best == UINT64_MAX)
      best = cur;               /* no gap fits: on top of the conflicts */
    if (!plan_offsets_add (best, asize, &end))
      return UINT64_MAX;
    if (end > pool)
      pool = end;
    ctx->off[order[k]] = best;

    /* Insert after every slot with off <= best (upper bound). */
    lo = 0;
    hi = ns;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;

      if (slots[mid].off <= best)
        lo = mid + 1;
      else
        hi = mid;
    }
    memmove (&slots[lo + 1], &slots[lo], (ns - lo) * sizeof *slots);
    slots[lo] = (plan_offsets_slot) {
    best, end, first, last};
    ns++;
  }
  return pool;
}

/* xorshift64*: a fixed-seed generator keeps the search deterministic. */
static uint64_t
plan_offsets_rand (uint64_t * state)
{
  uint64_t x = *state;

  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dull;
}

/* Squeaky-wheel step: builds next[] from order[] by moving every item
 * whose end exceeds the threshold (the tensors that stick out above the
 * lower bound) forward by a random distance; the others keep their
 * relative order. */
static void
plan_offsets_bump (const plan_offsets_ctx * ctx, const uint32_t * order,
    const uint64_t * cur_off, uint64_t threshold, uint64_t * rng, plan_offsets_key * keys,
    uint32_t * next)
{
  uint32_t m = ctx->m;

  for (uint32_t k = 0; k < m; k++) {
    uint32_t i = order[k];
    uint64_t pos = (uint64_t) k << 20;  /* room for fractional moves */

    if (cur_off[i] + ctx->items[i].asize > threshold) {
      /* Move forward by up to the whole distance to the front. */
      uint64_t r = plan_offsets_rand (rng) % ((uint64_t) k + 1);

      pos -= r << 20;
      if (pos >= (1u << 19))
        pos -= 1u << 19;        /* ahead of the item now at that place */
    }
    keys[k].k[0] = pos;
    keys[k].k[1] = k;
    keys[k].k[2] = 0;
    keys[k].idx = i;
  }
  qsort (keys, m, sizeof *keys, plan_offsets_key_cmp);
  for (uint32_t k = 0; k < m; k++)
    next[k] = keys[k].idx;
}

uint64_t
tt_plan_assign_offsets (tt_interval * t, size_t n, uint64_t align)
{
  plan_offsets_item *items = NULL;
  plan_offsets_key *keys = NULL;
  uint32_t *order = NULL, *next = NULL, *best_order = NULL;
  uint64_t *best_off = NULL, *off = NULL, *cur_off = NULL;
  plan_offsets_slot *slots = NULL;
  uint64_t result = UINT64_MAX, best_pool = UINT64_MAX, bound, rng;
  plan_offsets_ctx ctx;
  uint32_t m = 0;

  if (!plan_offsets_align_ok (&align) || n > UINT32_MAX)
    return UINT64_MAX;
  bound = tt_plan_lower_bound (t, n, align);
  if (bound == UINT64_MAX)
    return UINT64_MAX;          /* invalid lifetime, overflow or no memory */
  if (n == 0)
    return 0;

  items = malloc (n * sizeof *items);
  keys = malloc (n * sizeof *keys);
  order = malloc (n * sizeof *order);
  next = malloc (n * sizeof *next);
  best_order = malloc (n * sizeof *best_order);
  best_off = malloc (n * sizeof *best_off);
  off = malloc (n * sizeof *off);
  cur_off = malloc (n * sizeof *cur_off);
  slots = malloc (n * sizeof *slots);
  if (!items || !keys || !order || !next || !best_order || !best_off
      || !off || !cur_off || !slots)
    goto out;

  for (size_t i = 0; i < n; i++) {
    uint64_t a = 0;

    t[i].offset = 0;            /* zero-size tensors stay at 0 */
    /* Cannot fail: the lower bound already rounded every size. */
    (void) plan_offsets_round (t[i].size, align, &a);
    if (a == 0)
      continue;
    items[m++] = (plan_offsets_item) {
    a, t[i].first, t[i].last, (uint32_t) i};
  }
  if (m == 0) {
    result = 0;
    goto out;
  }

  ctx = (plan_offsets_ctx) {
  items, m, slots, off, 0};

  /* Construction: keep the best of the greedy orders. */
  for (int kind = 0; kind < PLAN_OFFSETS_N_ORDERS; kind++) {
    uint64_t pool;

    plan_offsets_make_order (items, m, (plan_offsets_order_kind) kind, keys,
        order);
    pool = plan_offsets_greedy (&ctx, order);
    if (pool < best_pool) {
      best_pool = pool;
      memcpy (best_order, order, m * sizeof *order);
      memcpy (best_off, off, m * sizeof *off);
    }
    if (best_pool == bound)
      break;
  }
  if (best_pool == UINT64_MAX)
    goto out;                   /* overflow in every order */

  /* Local search from the best order; order[] is the current one and
   * cur_off[] its placement, which the bump reads. */
  memcpy (order, best_order, m * sizeof *order);
  memcpy (cur_off, best_off, m * sizeof *cur_off);
  rng = 0x9e3779b97f4a7c15ull ^ m;
  {
    uint64_t cur_pool = best_pool;

    for (uint32_t iter = 0; iter < PLAN_OFFSETS_MAX_ITERS
        && best_pool > bound
        && (iter < PLAN_OFFSETS_MIN_ITERS
            || ctx.work < PLAN_OFFSETS_WORK_BUDGET); iter++) {
      uint64_t pool, *tmp_off;
      uint32_t *tmp;

      /* Bump the items above the bound, or above the pool's midpoint
       * between bound and peak, alternately, to vary the move size. */
      uint64_t thr = (iter & 1) ? bound + (cur_pool - bound) / 2 : bound;

      plan_offsets_bump (&ctx, order, cur_off, thr, &rng, keys, next);
      pool = plan_offsets_greedy (&ctx, next);
      if (pool == UINT64_MAX)
        continue;
      if (pool <= cur_pool) {
        cur_pool = pool;
        tmp = order;
        order = next;
        next = tmp;
        tmp_off = cur_off;
        cur_off = off;
        off = tmp_off;
        ctx.off = off;
        if (pool < best_pool) {
          best_pool = pool;
          memcpy (best_off, cur_off, m * sizeof *cur_off);
        }
      }
    }
  }

  for (uint32_t i = 0; i < m; i++)
    t[items[i].idx].offset = best_off[i];
  result = best_pool;

out:
  free (items);
  free (keys);
  free (order);
  free (next);
  free (best_order);
  free (best_off);
  free (off);
  free (cur_off);
  free (slots);
  return result;
}
