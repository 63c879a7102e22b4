/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory-offset planner (see plan_offsets.h).
 *
 * Placing intervals with sizes so that conflicting ones do not overlap is
 * dynamic storage allocation, which is NP-hard; the planner therefore
 * combines greedy constructions with a bounded local search:
 *
 * 1. Greedy placement in a given order: each tensor goes into a gap left
 *    between the already-placed tensors it conflicts with, or on top of
 *    them when no gap is large enough. Two gap rules: best fit (the gap
 *    that wastes least) and first fit (the lowest gap).
 * 2. Construction: largest-first with best fit, the classic, then four
 *    other (order, rule) pairs that win on different shapes of lifetimes
 *    (measured on training-step-like sets, see the unit test): pressure x
 *    size with first fit, where pressure is the highest total live at any
 *    step of the tensor's lifetime, so the tensors that make up the peak
 *    are packed first; duration with best fit; size with first fit; and
 *    peak-first with first fit: by pressure, then duration, so the
 *    tensors live at the peak step come first, stacked longest-lived
 *    lowest. The orders by duration put a long-lived tensor that is not
 *    live at the peak (a loss output) under one that is (the labels,
 *    which it overlaps later), so the peak's stack carries it;
 *    transfer_frozen's pool stayed 111,872 bytes above its bound so.
 * 3. Squeaky-wheel local search from the best of the first four: the
 *    tensors that end above a threshold (the lower bound, or halfway
 *    between it and the current pool) move a random distance earlier in
 *    the order and the greedy runs again; an order that is no worse
 *    becomes the current one, and the best placement, of the search or
 *    of any construction, is kept. It stops at the lower bound (provably
 *    optimal) or when its work budget is spent. Work is counted in
 *    scanned slots, not time, and the generator has a fixed seed, so the
 *    result is deterministic. The peak-first placement does not seed it:
 *    it often ends an alignment unit above the bound, where the search
 *    finds too few culprits to move (bf16 tiny_transformer: stuck 64
 *    bytes above the bound from it, at the bound from pressure x size),
 *    so the search's start and path are those of the four.
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
typedef struct
{
  uint64_t asize;
  int32_t first, last;
  uint32_t idx;
} plan_offsets_item;

/* A placed tensor. Invariant: end = off + asize, computed without
 * overflow. */
typedef struct
{
  uint64_t off, end;
  int32_t first, last;
} plan_offsets_slot;

/* The placed tensors are kept sorted by off, so that one scan in offset
 * order finds every gap, in an unrolled list: chunks of up to
 * PLAN_OFFSETS_CHUNK slots, visited in the order of chunk_order. An
 * insertion shifts at most one chunk instead of half of all slots (a
 * plain array spent most of its time in memmove). Invariant: slots
 * are sorted by off within a chunk and across chunks in chunk_order;
 * only the first chunk may be empty. */
#define PLAN_OFFSETS_CHUNK 64

typedef struct
{
  uint32_t n;
  plan_offsets_slot s[PLAN_OFFSETS_CHUNK];
} plan_offsets_chunk;

/* Sort record for building an order: ascending on k[0], k[1], k[2], then
 * idx, so that every order is total and the result does not depend on
 * what qsort does with ties. Descending keys are stored complemented. */
typedef struct
{
  uint64_t k[3];
  uint32_t idx;
} plan_offsets_key;

typedef enum
{
  PLAN_OFFSETS_BEST_FIT,
  PLAN_OFFSETS_FIRST_FIT
} plan_offsets_fit;

/* Scratch shared by all passes. A chunk splits only when full, into
 * two half-full ones, so m slots never need more than
 * plan_offsets_max_chunks (m) chunks. */
typedef struct
{
  const plan_offsets_item *items;
  uint32_t m;
  plan_offsets_chunk *chunks;
  uint32_t *chunk_order;
  uint32_t n_chunks;
  uint64_t *off;                /* m entries: offset per item of a pass */
  uint64_t work;                /* slots scanned so far */
} plan_offsets_ctx;

static size_t
plan_offsets_max_chunks (size_t m)
{
  return 2 * (m / PLAN_OFFSETS_CHUNK) + 2;
}

/* Work budgets, in scanned slots (1-3 ns each). A pass starts only if
 * the work so far plus the previous pass's work fits: a pass costs about
 * m^2 / 2 scans, so the budgets turn into pass counts that shrink as the
 * input grows, instead of a time that grows with it.
 *
 * Constructions after the first: ~1 s worth. All five run up to ~10,000
 * tensors; much larger inputs keep only the classic one. */
#define PLAN_OFFSETS_CONSTRUCT_BUDGET 400000000ull
/* Local search, quick: ~10 ms worth, ~10 passes for 1,000 tensors; none
 * for 10,000, where one pass scans ~4e7 slots and the constructions
 * already land close to the bound (the squeaky wheel pays off on small,
 * ragged sets). Thorough, for plans that are stored: ~2.5 s worth (it
 * stops at the bound). From the four seeding constructions alone it
 * takes MobileNetV2's 1,149 tensors from 1.0008 x the bound to the
 * bound in about 1,500 passes (400M scans left it 704 bytes above once
 * its 1x1 layers kept im2col columns); the peak-first construction
 * reaches that bound directly, but bf16 zoo_transformer needs the
 * thorough search (1.021 x the bound quick). */
#define PLAN_OFFSETS_SEARCH_BUDGET 4000000ull
#define PLAN_OFFSETS_THOROUGH_BUDGET 1000000000ull
/* A cap on passes, for tiny inputs where the budget means little. */
#define PLAN_OFFSETS_SEARCH_MAX_PASSES 64u
#define PLAN_OFFSETS_THOROUGH_MAX_PASSES 2048u

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

/* Full 128-bit product, for sort keys that multiply two 64-bit values. */
static void
plan_offsets_mul (uint64_t a, uint64_t b, uint64_t * hi, uint64_t * lo)
{
  uint64_t a0 = a & 0xffffffffu, a1 = a >> 32;
  uint64_t b0 = b & 0xffffffffu, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);

  *lo = (mid << 32) | (p00 & 0xffffffffu);
  *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

static uint64_t
plan_offsets_duration (const plan_offsets_item * it)
{
  return (uint64_t) ((int64_t) it->last - it->first + 1);
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
typedef struct
{
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

static int
plan_offsets_i64_cmp (const void *pa, const void *pb)
{
  int64_t a = *(const int64_t *) pa, b = *(const int64_t *) pb;

  return a < b ? -1 : a > b;
}

/* Index of v in the sorted distinct array p[0..np), where it must be. */
static uint32_t
plan_offsets_find (const int64_t * p, uint32_t np, int64_t v)
{
  uint32_t lo = 0, hi = np;

  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;

    if (p[mid] <= v)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* pressure[i] = the highest total of aligned sizes live at any step of
 * item i's lifetime. Steps are compressed to the distinct lifetime
 * boundaries; a difference array gives the total per elementary segment
 * and a segment tree its maximum over each lifetime. Totals never exceed
 * the lower bound, which did not overflow; the prefix sums may wrap in
 * between, harmlessly, since unsigned arithmetic is modular. Returns
 * false when out of memory. */
static bool
plan_offsets_pressure (const plan_offsets_item * items, uint32_t m,
    uint64_t * pressure)
{
  uint32_t np = 0, nseg;
  int64_t *pts = malloc (2 * (size_t) m * sizeof *pts);
  uint64_t *tree = malloc (4 * (size_t) m * sizeof *tree);
  uint64_t sum = 0;

  if (!pts || !tree) {
    free (pts);
    free (tree);
    return false;
  }
  for (uint32_t i = 0; i < m; i++) {
    pts[2 * i] = items[i].first;
    pts[2 * i + 1] = (int64_t) items[i].last + 1;
  }
  qsort (pts, 2 * (size_t) m, sizeof *pts, plan_offsets_i64_cmp);
  for (uint32_t i = 0; i < 2 * m; i++)
    if (np == 0 || pts[np - 1] != pts[i])
      pts[np++] = pts[i];
  /* Segment j is [pts[j], pts[j + 1]); leaves live at tree[nseg + j]. */
  nseg = np - 1;                /* m >= 1, so np >= 2 */
  memset (tree, 0, 2 * (size_t) nseg * sizeof *tree);
  for (uint32_t i = 0; i < m; i++) {
    uint32_t a = plan_offsets_find (pts, np, items[i].first);
    uint32_t b = plan_offsets_find (pts, np, (int64_t) items[i].last + 1);

    tree[nseg + a] += items[i].asize;
    if (b < nseg)
      tree[nseg + b] -= items[i].asize;
  }
  for (uint32_t j = 0; j < nseg; j++) {
    sum += tree[nseg + j];
    tree[nseg + j] = sum;
  }
  for (uint32_t j = nseg - 1; j >= 1; j--)
    tree[j] = tree[2 * j] > tree[2 * j + 1] ? tree[2 * j] : tree[2 * j + 1];
  for (uint32_t i = 0; i < m; i++) {
    uint32_t lo = plan_offsets_find (pts, np, items[i].first) + nseg;
    uint32_t hi = plan_offsets_find (pts, np,
        (int64_t) items[i].last + 1) + nseg;
    uint64_t best = 0;

    for (; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) {
        best = tree[lo] > best ? tree[lo] : best;
        lo++;
      }
      if (hi & 1) {
        hi--;
        best = tree[hi] > best ? tree[hi] : best;
      }
    }
    pressure[i] = best;
  }
  free (pts);
  free (tree);
  return true;
}

/* The orders the construction uses. */
typedef enum
{
  PLAN_OFFSETS_BY_SIZE,         /* size, then duration, descending */
  PLAN_OFFSETS_BY_PRESSURE,     /* pressure x size, then size, descending */
  PLAN_OFFSETS_BY_DURATION,     /* duration, then size, descending */
  PLAN_OFFSETS_BY_PEAK,         /* pressure, duration, size, descending */
} plan_offsets_order_kind;

/* Fills order[] (the m item indices) according to kind. */
static void
plan_offsets_make_order (const plan_offsets_item * items, uint32_t m,
    const uint64_t * pressure, plan_offsets_order_kind kind,
    plan_offsets_key * keys, uint32_t * order)
{
  for (uint32_t i = 0; i < m; i++) {
    const plan_offsets_item *it = &items[i];
    uint64_t dur = plan_offsets_duration (it);
    plan_offsets_key *k = &keys[i];

    k->idx = i;
    switch (kind) {
      case PLAN_OFFSETS_BY_SIZE:
        k->k[0] = ~it->asize;
        k->k[1] = ~dur;
        k->k[2] = 0;
        break;
      case PLAN_OFFSETS_BY_PRESSURE:
        plan_offsets_mul (pressure[i], it->asize, &k->k[0], &k->k[1]);
        k->k[0] = ~k->k[0];
        k->k[1] = ~k->k[1];
        k->k[2] = ~it->asize;
        break;
      case PLAN_OFFSETS_BY_DURATION:
        k->k[0] = ~dur;
        k->k[1] = ~it->asize;
        k->k[2] = 0;
        break;
      case PLAN_OFFSETS_BY_PEAK:
        k->k[0] = ~pressure[i];
        k->k[1] = ~dur;
        k->k[2] = ~it->asize;
        break;
    }
  }
  qsort (keys, m, sizeof *keys, plan_offsets_key_cmp);
  for (uint32_t i = 0; i < m; i++)
    order[i] = keys[i].idx;
}

/* Inserts a slot after every slot with off <= sl.off. */
static void
plan_offsets_insert (plan_offsets_ctx * ctx, plan_offsets_slot sl)
{
  uint32_t lo = 0, hi = ctx->n_chunks, c, pos;
  plan_offsets_chunk *ch;

  /* The last chunk whose first slot is <= sl.off, else the first one. */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;

    if (ctx->chunks[ctx->chunk_order[mid]].s[0].off <= sl.off)
      lo = mid;
    else
      hi = mid;
  }
  c = lo;
  ch = &ctx->chunks[ctx->chunk_order[c]];
  if (ch->n == PLAN_OFFSETS_CHUNK) {
    /* Split: the upper half moves to a fresh chunk placed right after. */
    uint32_t id = ctx->n_chunks;
    plan_offsets_chunk *up = &ctx->chunks[id];

    up->n = PLAN_OFFSETS_CHUNK / 2;
    memcpy (up->s, &ch->s[PLAN_OFFSETS_CHUNK / 2], up->n * sizeof *up->s);
    ch->n = PLAN_OFFSETS_CHUNK / 2;
    memmove (&ctx->chunk_order[c + 2], &ctx->chunk_order[c + 1],
        (ctx->n_chunks - c - 1) * sizeof *ctx->chunk_order);
    ctx->chunk_order[c + 1] = id;
    ctx->n_chunks++;
    if (up->s[0].off <= sl.off)
      ch = up;
  }
  lo = 0;
  hi = ch->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;

    if (ch->s[mid].off <= sl.off)
      lo = mid + 1;
    else
      hi = mid;
  }
  pos = lo;
  memmove (&ch->s[pos + 1], &ch->s[pos], (ch->n - pos) * sizeof *ch->s);
  ch->s[pos] = sl;
  ch->n++;
}

/* One greedy pass: places the items in the given order, each in a gap
 * among the placed items it conflicts with (chosen by fit), or on top of
 * them. Fills ctx->off; returns the pool size, UINT64_MAX on overflow. */
static uint64_t
plan_offsets_greedy (plan_offsets_ctx * ctx, const uint32_t * order,
    plan_offsets_fit fit)
{
  uint64_t pool = 0;

  ctx->n_chunks = 1;
  ctx->chunk_order[0] = 0;
  ctx->chunks[0].n = 0;
  for (uint32_t k = 0; k < ctx->m; k++) {
    const plan_offsets_item *it = &ctx->items[order[k]];
    uint64_t asize = it->asize, cur = 0, best = UINT64_MAX;
    uint64_t best_waste = UINT64_MAX, end;
    int32_t first = it->first, last = it->last;

    /* cur is the highest end among the conflicting slots scanned so far;
     * slots are sorted by off, so [cur, o) below the next conflicting
     * slot is free. Non-conflicting slots are masked to off = end = 0
     * instead of branching: whether a slot conflicts is unpredictable,
     * and this loop is the planner's whole cost. The mask is all ones
     * when both differences are >= 0, i.e. their OR has no sign bit. */
    for (uint32_t c = 0; c < ctx->n_chunks; c++) {
      const plan_offsets_chunk *ch = &ctx->chunks[ctx->chunk_order[c]];
      uint32_t j;

      for (j = 0; j < ch->n; j++) {
        const plan_offsets_slot *sl = &ch->s[j];
        uint64_t x = (uint64_t) (((int64_t) last - sl->first)
            | ((int64_t) sl->last - first));
        uint64_t mask = (x >> 63) - 1;
        uint64_t o = sl->off & mask, e = sl->end & mask;
        uint64_t gap = o > cur ? o - cur : 0;

        if (gap >= asize && gap - asize < best_waste) {
          best_waste = gap - asize;
          best = cur;
          /* The lowest fit is final for first fit; a perfect fit
           * cannot be beaten. */
          if (fit == PLAN_OFFSETS_FIRST_FIT || best_waste == 0)
            break;
        }
        cur = e > cur ? e : cur;
      }
      ctx->work += j + 1;
      if (j < ch->n)
        break;
    }
    if (best == UINT64_MAX)
      best = cur;               /* no gap fits: on top of the conflicts */
    if (!plan_offsets_add (best, asize, &end))
      return UINT64_MAX;
    if (end > pool)
      pool = end;
    ctx->off[order[k]] = best;
    plan_offsets_insert (ctx, (plan_offsets_slot) {
        best, end, first, last}
    );
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
 * that ends above threshold in the placement off[] (the items sticking
 * out above the lower bound) forward by a random distance, up to the
 * front; the others keep their relative order. A random distance rather
 * than the front: moving every culprit to the front just swaps which
 * tensors stick out. */
static void
plan_offsets_bump (const plan_offsets_ctx * ctx, const uint32_t * order,
    const uint64_t * off, uint64_t threshold, uint64_t * rng,
    plan_offsets_key * keys, uint32_t * next)
{
  for (uint32_t k = 0; k < ctx->m; k++) {
    uint32_t i = order[k];
    /* Position k as k * 2: a moved item lands at an odd position, just
     * ahead of the item that was there. */
    uint64_t pos = 2 * (uint64_t) k;

    if (off[i] + ctx->items[i].asize > threshold) {
      uint64_t r = plan_offsets_rand (rng) % ((uint64_t) k + 1);

      pos = 2 * ((uint64_t) k - r);
      if (pos)
        pos--;
    }
    keys[k].k[0] = pos;
    keys[k].k[1] = k;
    keys[k].k[2] = 0;
    keys[k].idx = i;
  }
  qsort (keys, ctx->m, sizeof *keys, plan_offsets_key_cmp);
  for (uint32_t k = 0; k < ctx->m; k++)
    next[k] = keys[k].idx;
}

/* Scratch of tt_plan_assign_offsets, freed together. */
typedef struct
{
  plan_offsets_item *items;
  plan_offsets_key *keys;
  uint32_t *order, *next, *seed_order;
  uint64_t *pressure, *off, *cur_off, *best_off;
  plan_offsets_chunk *chunks;
  uint32_t *chunk_order;
} plan_offsets_scratch;

static void
plan_offsets_scratch_free (plan_offsets_scratch * w)
{
  free (w->items);
  free (w->keys);
  free (w->order);
  free (w->next);
  free (w->seed_order);
  free (w->pressure);
  free (w->off);
  free (w->cur_off);
  free (w->best_off);
  free (w->chunks);
  free (w->chunk_order);
}

static bool
plan_offsets_scratch_alloc (plan_offsets_scratch * w, size_t n)
{
  memset (w, 0, sizeof *w);
  w->items = malloc (n * sizeof *w->items);
  w->keys = malloc (n * sizeof *w->keys);
  w->order = malloc (n * sizeof *w->order);
  w->next = malloc (n * sizeof *w->next);
  w->seed_order = malloc (n * sizeof *w->seed_order);
  w->pressure = malloc (n * sizeof *w->pressure);
  w->off = malloc (n * sizeof *w->off);
  w->cur_off = malloc (n * sizeof *w->cur_off);
  w->best_off = malloc (n * sizeof *w->best_off);
  w->chunks = malloc (plan_offsets_max_chunks (n) * sizeof *w->chunks);
  w->chunk_order = malloc (plan_offsets_max_chunks (n)
      * sizeof *w->chunk_order);
  return w->items && w->keys && w->order && w->next && w->seed_order
      && w->pressure && w->off && w->cur_off && w->best_off && w->chunks
      && w->chunk_order;
}

uint64_t
tt_plan_assign_offsets (tt_interval * t, size_t n, uint64_t align)
{
  return tt_plan_assign_offsets_search (t, n, align, false);
}

uint64_t
tt_plan_assign_offsets_search (tt_interval * t, size_t n, uint64_t align,
    bool thorough)
{
  const uint64_t search_budget = thorough ? PLAN_OFFSETS_THOROUGH_BUDGET :
      PLAN_OFFSETS_SEARCH_BUDGET;
  const uint32_t max_passes = thorough ? PLAN_OFFSETS_THOROUGH_MAX_PASSES :
      PLAN_OFFSETS_SEARCH_MAX_PASSES;
  /* The constructions, in the order tried; the first is the classic. */
  static const struct
  {
    plan_offsets_order_kind order;
    plan_offsets_fit fit;
    bool seeds;                 /* may be where the local search starts */
  } constructions[] = {
    {PLAN_OFFSETS_BY_SIZE, PLAN_OFFSETS_BEST_FIT, true},
    {PLAN_OFFSETS_BY_PRESSURE, PLAN_OFFSETS_FIRST_FIT, true},
    {PLAN_OFFSETS_BY_DURATION, PLAN_OFFSETS_BEST_FIT, true},
    {PLAN_OFFSETS_BY_SIZE, PLAN_OFFSETS_FIRST_FIT, true},
    {PLAN_OFFSETS_BY_PEAK, PLAN_OFFSETS_FIRST_FIT, false},
  };
  plan_offsets_scratch w;
  plan_offsets_ctx ctx;
  plan_offsets_fit seed_fit = PLAN_OFFSETS_BEST_FIT;
  uint64_t result = UINT64_MAX, best_pool = UINT64_MAX, cur_pool, bound;
  uint64_t seed_pool = UINT64_MAX;
  uint64_t rng, search_start, last_pass = 0;
  uint32_t m = 0;

  /* Item indices and counts are 32-bit to keep the scanned memory
   * small; every scratch array takes at most 64 bytes per item (chunks
   * about 49), so no allocation size can overflow. */
  if (!plan_offsets_align_ok (&align) || n >= UINT32_MAX || n > SIZE_MAX / 64)
    return UINT64_MAX;
  bound = tt_plan_lower_bound (t, n, align);
  if (bound == UINT64_MAX)
    return UINT64_MAX;          /* invalid lifetime, overflow or no memory */
  for (size_t i = 0; i < n; i++)
    t[i].offset = 0;            /* zero-size tensors stay at 0 */
  if (bound == 0)
    return 0;                   /* nothing has a size */

  if (!plan_offsets_scratch_alloc (&w, n))
    goto out;
  for (size_t i = 0; i < n; i++) {
    uint64_t a = 0;

    /* Cannot fail: the lower bound already rounded every size. */
    (void) plan_offsets_round (t[i].size, align, &a);
    if (a)
      w.items[m++] = (plan_offsets_item) {
      a, t[i].first, t[i].last, (uint32_t) i};
  }
  if (!plan_offsets_pressure (w.items, m, w.pressure))
    goto out;
  ctx = (plan_offsets_ctx) {
  w.items, m, w.chunks, w.chunk_order, 0, w.off, 0};

  for (size_t c = 0; c < sizeof constructions / sizeof *constructions
      && (c == 0 || ctx.work + last_pass <= PLAN_OFFSETS_CONSTRUCT_BUDGET);
      c++) {
    uint64_t pool, before = ctx.work;

    plan_offsets_make_order (w.items, m, w.pressure, constructions[c].order,
        w.keys, w.order);
    pool = plan_offsets_greedy (&ctx, w.order, constructions[c].fit);
    /* The budget checks estimate the next pass by a seeding one, so the
     * search runs exactly as it would without the peak-first layout. */
    if (constructions[c].seeds)
      last_pass = ctx.work - before;
    if (constructions[c].seeds && pool < seed_pool) {
      seed_pool = pool;
      seed_fit = constructions[c].fit;
      memcpy (w.seed_order, w.order, m * sizeof *w.order);
      memcpy (w.cur_off, w.off, m * sizeof *w.off);
    }
    if (pool < best_pool) {
      best_pool = pool;
      memcpy (w.best_off, w.off, m * sizeof *w.off);
    }
    if (best_pool == bound)
      break;
  }
  if (best_pool == UINT64_MAX)
    goto out;                   /* overflow in every construction */

  /* Local search from the best seeding construction. order/cur_off: the
   * current order and its placement; next/off: the candidate. Swapping
   * pointers accepts a candidate. */
  memcpy (w.order, w.seed_order, m * sizeof *w.order);
  cur_pool = seed_pool;
  rng = 0x9e3779b97f4a7c15ull;
  search_start = ctx.work;
  for (uint32_t pass = 0; pass < max_passes && best_pool > bound
      && seed_pool != UINT64_MAX
      && ctx.work - search_start + last_pass <= search_budget; pass++) {
    /* Alternate thresholds: above the bound moves every culprit, above
     * the midpoint only the worst ones, a smaller perturbation. */
    uint64_t thr = (pass & 1) ? bound + (cur_pool - bound) / 2 : bound;
    uint64_t pool, before = ctx.work, *tmp_off;
    uint32_t *tmp;

    plan_offsets_bump (&ctx, w.order, w.cur_off, thr, &rng, w.keys, w.next);
    pool = plan_offsets_greedy (&ctx, w.next, seed_fit);
    last_pass = ctx.work - before;
    if (pool > cur_pool)
      continue;                 /* includes UINT64_MAX, overflow */
    cur_pool = pool;
    tmp = w.order;
    w.order = w.next;
    w.next = tmp;
    tmp_off = w.cur_off;
    w.cur_off = w.off;
    w.off = tmp_off;
    ctx.off = w.off;
    if (pool < best_pool) {
      best_pool = pool;
      memcpy (w.best_off, w.cur_off, m * sizeof *w.cur_off);
    }
  }

  for (uint32_t i = 0; i < m; i++)
    t[w.items[i].idx].offset = w.best_off[i];
  result = best_pool;

out:
  plan_offsets_scratch_free (&w);
  return result;
}
