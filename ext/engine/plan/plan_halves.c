/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pool laid out for two threads writing by halves (see
 * plan_halves.h):
 *
 * 1. Columns. The tensors written by halves, largest first, each join
 *    the narrowest column at least as wide whose tensors' lifetimes all
 *    miss its own, else open a column of their width. Columns lie one
 *    after the other from offset 0; a tensor sits centred in its column
 *    (its offset rounded down to the alignment, so its halves meet
 *    within an alignment unit of the column's middle).
 * 2. The other tensors, largest first, each at the lowest offset that is
 *    free over its lifetime in the lower half of a column, trying the
 *    columns in order, else at the lowest such offset above the columns.
 *
 * Both passes scan the tensors placed so far for every tensor they
 * place, quadratic in the count: the work (scans, and sorts as n log n)
 * is counted and the layout given up past PLAN_HALVES_BUDGET.
 */
#include "plan_halves.h"

#include <stdlib.h>
#include <string.h>

/* Scans of placed tensors before the layout is given up: about 0.1 s.
 * The CNN takes about 2,000. */
#define PLAN_HALVES_BUDGET 50000000ull

typedef struct
{
  uint64_t asize, off;
  int32_t first, last;
  uint32_t idx;
  bool placed;
} halves_item;

typedef struct
{
  uint64_t width, base;
  int32_t head;                 /* first member (an item index), -1: none */
} halves_column;

/* A placed item's bytes, [off, end) */
typedef struct
{
  uint64_t off, end;
} halves_span;

typedef struct
{
  halves_item *items;
  uint32_t m;
  int32_t *next;                /* the next member of an item's column */
  halves_span *spans;           /* scratch: conflicting placed items */
  uint64_t work;
} halves_ctx;

static bool
halves_overlap_in_time (const halves_item * a, const halves_item * b)
{
  return a->first <= b->last && b->first <= a->last;
}

/* Largest first; ties by first use, then index: a total order. */
static int
halves_cmp (const void *pa, const void *pb)
{
  const halves_item *a = *(const halves_item * const *) pa;
  const halves_item *b = *(const halves_item * const *) pb;
  if (a->asize != b->asize)
    return a->asize > b->asize ? -1 : 1;
  if (a->first != b->first)
    return a->first < b->first ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int
halves_span_cmp (const void *pa, const void *pb)
{
  const halves_span *a = pa, *b = pb;
  if (a->off != b->off)
    return a->off < b->off ? -1 : 1;
  return a->end < b->end ? -1 : a->end > b->end;
}

/* Whether the lifetimes of column c's members all miss the item's. */
static bool
halves_column_free (halves_ctx * x, const halves_column * c,
    const halves_item * it)
{
  for (int32_t k = c->head; k >= 0; k = x->next[k]) {
    x->work++;
    if (halves_overlap_in_time (&x->items[k], it))
      return false;
  }
  return true;
}

/* The lowest offset in [lo, hi) where it fits among the placed items
 * live with it, UINT64_MAX when none (hi UINT64_MAX: no end). */
static uint64_t
halves_fit (halves_ctx * x, const halves_item * it, uint64_t lo, uint64_t hi)
{
  uint32_t n = 0;
  for (uint32_t k = 0; k < x->m; k++) {
    const halves_item *p = &x->items[k];
    x->work++;
    if (p->placed && p->asize && halves_overlap_in_time (p, it) &&
        p->off < hi && p->off + p->asize > lo)
      x->spans[n++] = (halves_span) {
      p->off, p->off + p->asize};
  }
  /* the sort's work too: n log n */
  for (uint32_t k = n; k > 1; k >>= 1)
    x->work += n;
  qsort (x->spans, n, sizeof *x->spans, halves_span_cmp);
  uint64_t o = lo;
  for (uint32_t i = 0; i < n; i++) {
    if (x->spans[i].off >= o && x->spans[i].off - o >= it->asize)
      break;
    if (x->spans[i].end > o)
      o = x->spans[i].end;
  }
  if (o > hi || hi - o < it->asize)
    return UINT64_MAX;
  return o;
}

bool
tt_plan_halves_in_column (const tt_interval * t, uint64_t align)
{
  return t->halves && t->size >= TT_PLAN_HALVES_MIN_BYTES - (align - 1);
}

uint64_t
tt_plan_assign_offsets_halves (tt_interval * t, size_t n, uint64_t align)
{
  if (align == 0)
    align = TT_PLAN_DEFAULT_ALIGN;
  if (align & (align - 1) || n > UINT32_MAX / 2)
    return UINT64_MAX;
  halves_ctx x = { 0 };
  x.m = (uint32_t) n;
  x.items = calloc (n + 1, sizeof *x.items);
  x.next = calloc (n + 1, sizeof *x.next);
  x.spans = calloc (n + 1, sizeof *x.spans);
  halves_item **order = calloc (n + 1, sizeof *order);
  halves_column *cols = calloc (n + 1, sizeof *cols);
  uint64_t pool = UINT64_MAX;
  uint32_t n_cols = 0, n_order = 0;
  if (!x.items || !x.next || !x.spans || !order || !cols)
    goto out;
  for (size_t i = 0; i < n; i++) {
    if (t[i].first < 0 || t[i].first > t[i].last ||
        t[i].size > UINT64_MAX - (align - 1))
      goto out;
    x.items[i] = (halves_item) {
    (t[i].size + align - 1) & ~(align - 1), 0, t[i].first, t[i].last,
          (uint32_t) i, false};
  }

  /* 1. the columns */
  for (uint32_t i = 0; i < x.m; i++)
    if (tt_plan_halves_in_column (&t[i], align))
      order[n_order++] = &x.items[i];
  qsort (order, n_order, sizeof *order, halves_cmp);
  for (uint32_t k = 0; k < n_order; k++) {
    halves_item *it = order[k];
    int32_t best = -1;
    for (uint32_t c = 0; c < n_cols; c++) {
      if (cols[c].width < it->asize || (best >= 0 &&
              cols[c].width >= cols[best].width))
        continue;
      if (halves_column_free (&x, &cols[c], it))
        best = (int32_t) c;
    }
    if (best < 0) {
      best = (int32_t) n_cols++;
      cols[best] = (halves_column) {
      it->asize, 0, -1};
    }
    x.next[it->idx] = cols[best].head;
    cols[best].head = (int32_t) it->idx;
    if (x.work > PLAN_HALVES_BUDGET)
      goto out;
  }
  uint64_t top = 0;
  for (uint32_t c = 0; c < n_cols; c++) {
    cols[c].base = top;
    if (top > UINT64_MAX - cols[c].width)
      goto out;
    top += cols[c].width;
    for (int32_t k = cols[c].head; k >= 0; k = x.next[k]) {
      halves_item *it = &x.items[k];
      it->off = top - cols[c].width + ((cols[c].width - it->asize) / 2 &
          ~(align - 1));
      it->placed = true;
    }
  }

  /* 2. the others: the columns' lower halves, else above them */
  n_order = 0;
  for (uint32_t i = 0; i < x.m; i++)
    if (!x.items[i].placed && x.items[i].asize)
      order[n_order++] = &x.items[i];
  qsort (order, n_order, sizeof *order, halves_cmp);
  for (uint32_t k = 0; k < n_order; k++) {
    halves_item *it = order[k];
    uint64_t o = UINT64_MAX;
    for (uint32_t c = 0; c < n_cols && o == UINT64_MAX; c++)
      if (cols[c].width / 2 >= it->asize)
        o = halves_fit (&x, it, cols[c].base, cols[c].base +
            (cols[c].width / 2 & ~(align - 1)));
    if (o == UINT64_MAX)
      o = halves_fit (&x, it, top, UINT64_MAX);
    if (o == UINT64_MAX || x.work > PLAN_HALVES_BUDGET)
      goto out;
    it->off = o;
    it->placed = true;
  }

  pool = 0;
  for (uint32_t i = 0; i < x.m; i++) {
    const halves_item *it = &x.items[i];
    t[i].offset = it->asize ? it->off : 0;
    if (it->asize && it->off + it->asize > pool)
      pool = it->off + it->asize;
  }
out:
  free (x.items);
  free (x.next);
  free (x.spans);
  free (order);
  free (cols);
  return pool;
}
