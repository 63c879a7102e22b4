/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Plan validator (see plan_validate.h).
 *
 * Per-tensor checks first, then a sweep over time: tensors enter the live
 * set at their first step (in order of first) after every tensor whose
 * last step is earlier has left (in order of last). The live set is kept
 * ordered by offset and, as long as no overlap was found, its byte ranges
 * are pairwise disjoint; so a newcomer can only overlap a live tensor if
 * it overlaps its nearest live neighbour below or above in offset order.
 * Every conflicting pair is live together at the later of the two first
 * steps, when the later one enters, so every pair gets checked.
 *
 * The ordered set is a Fenwick tree over the ranks of the tensors sorted
 * by (offset, index): presence counts give the neighbours in O(log n).
 */
#include "plan_validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* A sort record: ascending on key, then on idx (total, deterministic). */
typedef struct
{
  uint64_t key;
  size_t idx;
} plan_validate_rec;

static int
plan_validate_rec_cmp (const void *pa, const void *pb)
{
  const plan_validate_rec *a = pa, *b = pb;

  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  if (a->idx != b->idx)
    return a->idx < b->idx ? -1 : 1;
  return 0;
}

/* Name of tensor i; buf holds "#<i>" when there is no name. */
static const char *
plan_validate_name (const char *const *names, size_t i, char *buf, size_t len)
{
  if (names && names[i])
    return names[i];
  snprintf (buf, len, "#%zu", i);
  return buf;
}

static int plan_validate_fail (char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format (printf, 3, 4)));

static int
plan_validate_fail (char *err, size_t err_len, const char *fmt, ...)
{
  va_list ap;

  if (err && err_len) {
    va_start (ap, fmt);
    vsnprintf (err, err_len, fmt, ap);
    va_end (ap);
  }
  return -1;
}

/* Fenwick tree over ranks 1..n counting live tensors. */
typedef struct
{
  uint32_t *c;                  /* c[1..n]; c[0] unused */
  size_t n;
  size_t top;                   /* highest power of two <= n */
} plan_validate_fenwick;

static void
plan_validate_fw_add (plan_validate_fenwick * fw, size_t r, int32_t d)
{
  for (; r <= fw->n; r += r & (~r + 1))
    fw->c[r] += (uint32_t) d;
}

/* Number of live tensors with rank <= r. */
static size_t
plan_validate_fw_prefix (const plan_validate_fenwick * fw, size_t r)
{
  size_t s = 0;

  for (; r > 0; r -= r & (~r + 1))
    s += fw->c[r];
  return s;
}

/* Rank of the k-th live tensor (1-based k <= live count). */
static size_t
plan_validate_fw_kth (const plan_validate_fenwick * fw, size_t k)
{
  size_t pos = 0;

  for (size_t step = fw->top; step; step >>= 1) {
    if (pos + step <= fw->n && fw->c[pos + step] < k) {
      pos += step;
      k -= fw->c[pos];
    }
  }
  return pos + 1;
}

int
tt_plan_validate (const tt_interval * t, size_t n, uint64_t align,
    uint64_t pool_size, const char *const *names, char *err, size_t err_len)
{
  plan_validate_rec *by_off = NULL, *by_first = NULL, *by_last = NULL;
  size_t *rank = NULL, *at_rank = NULL;
  plan_validate_fenwick fw = { NULL, n, 1 };
  char b1[32], b2[32];
  int rc = -1;

  if (err && err_len)
    err[0] = '\0';
  if (align == 0)
    align = TT_PLAN_DEFAULT_ALIGN;
  if (align & (align - 1))
    return plan_validate_fail (err, err_len,
        "alignment %" PRIu64 " is not a power of two", align);

  for (size_t i = 0; i < n; i++) {
    const char *nm = plan_validate_name (names, i, b1, sizeof b1);

    if (t[i].first < 0)
      return plan_validate_fail (err, err_len,
          "tensor %s: lifetime [%" PRId32 ", %" PRId32 "] starts before "
          "step 0", nm, t[i].first, t[i].last);
    if (t[i].first > t[i].last)
      return plan_validate_fail (err, err_len,
          "tensor %s: lifetime [%" PRId32 ", %" PRId32 "] ends before it "
          "starts", nm, t[i].first, t[i].last);
    if (t[i].offset % align != 0)
      return plan_validate_fail (err, err_len,
          "tensor %s: offset %" PRIu64 " is not a multiple of the "
          "alignment %" PRIu64, nm, t[i].offset, align);
    if (t[i].size > UINT64_MAX - t[i].offset)
      return plan_validate_fail (err, err_len,
          "tensor %s: offset %" PRIu64 " + size %" PRIu64 " overflows",
          nm, t[i].offset, t[i].size);
    if (t[i].offset + t[i].size > pool_size)
      return plan_validate_fail (err, err_len,
          "tensor %s: bytes [%" PRIu64 ", %" PRIu64 ") exceed the pool of "
          "%" PRIu64 " bytes", nm, t[i].offset, t[i].offset + t[i].size,
          pool_size);
  }
  if (n < 2)
    return 0;

  if (n > SIZE_MAX / sizeof *by_off || n >= UINT32_MAX)
    return plan_validate_fail (err, err_len, "too many tensors (%zu)", n);
  by_off = malloc (n * sizeof *by_off);
  by_first = malloc (n * sizeof *by_first);
  by_last = malloc (n * sizeof *by_last);
  rank = malloc (n * sizeof *rank);
  at_rank = malloc ((n + 1) * sizeof *at_rank);
  fw.c = calloc (n + 1, sizeof *fw.c);
  if (!by_off || !by_first || !by_last || !rank || !at_rank || !fw.c) {
    plan_validate_fail (err, err_len, "out of memory validating %zu "
        "tensors", n);
    goto out;
  }
  while (fw.top * 2 <= n)
    fw.top *= 2;

  for (size_t i = 0; i < n; i++) {
    by_off[i] = (plan_validate_rec) {
    t[i].offset, i};
    /* first and last are >= 0 here, so the casts keep the order. */
    by_first[i] = (plan_validate_rec) {
    (uint64_t) t[i].first, i};
    by_last[i] = (plan_validate_rec) {
    (uint64_t) t[i].last, i};
  }
  qsort (by_off, n, sizeof *by_off, plan_validate_rec_cmp);
  qsort (by_first, n, sizeof *by_first, plan_validate_rec_cmp);
  qsort (by_last, n, sizeof *by_last, plan_validate_rec_cmp);
  for (size_t r = 0; r < n; r++) {
    rank[by_off[r].idx] = r + 1;
    at_rank[r + 1] = by_off[r].idx;
  }

  {
    size_t gone = 0, live = 0;

    for (size_t e = 0; e < n; e++) {
      size_t i = by_first[e].idx, r = rank[i], below;
      uint64_t lo = t[i].offset, hi = lo + t[i].size;
      size_t nb[2];
      int n_nb = 0;

      /* Tensors that ended before this one starts are no longer live;
       * each of them started earlier still, so it was inserted (unless
       * empty). */
      while (gone < n && (int64_t) by_last[gone].key < t[i].first) {
        size_t j = by_last[gone++].idx;

        if (t[j].size) {
          plan_validate_fw_add (&fw, rank[j], -1);
          live--;
        }
      }
      if (t[i].size == 0)
        continue;               /* an empty range overlaps nothing */

      below = plan_validate_fw_prefix (&fw, r - 1);
      if (below > 0)
        nb[n_nb++] = at_rank[plan_validate_fw_kth (&fw, below)];
      if (below < live)
        nb[n_nb++] = at_rank[plan_validate_fw_kth (&fw, below + 1)];
      for (int k = 0; k < n_nb; k++) {
        size_t j = nb[k];
        uint64_t jlo = t[j].offset, jhi = jlo + t[j].size;

        if (lo < jhi && jlo < hi) {
          size_t a = j < i ? j : i, b = j < i ? i : j;

          plan_validate_fail (err, err_len,
              "tensors %s and %s overlap: bytes [%" PRIu64 ", %" PRIu64
              ") and [%" PRIu64 ", %" PRIu64 "), lifetimes [%" PRId32
              ", %" PRId32 "] and [%" PRId32 ", %" PRId32 "]",
              plan_validate_name (names, a, b1, sizeof b1),
              plan_validate_name (names, b, b2, sizeof b2),
              t[a].offset, t[a].offset + t[a].size, t[b].offset,
              t[b].offset + t[b].size, t[a].first, t[a].last, t[b].first,
              t[b].last);
          goto out;
        }
      }
      plan_validate_fw_add (&fw, r, 1);
      live++;
    }
  }
  rc = 0;

out:
  free (by_off);
  free (by_first);
  free (by_last);
  free (rank);
  free (at_rank);
  free (fw.c);
  return rc;
}

int
tt_plan_validate_chunk (uint64_t weight_floats, uint32_t rows,
    uint32_t chunk_rows, uint64_t grad_floats, uint32_t quantum,
    const char *name, char *err, size_t err_len)
{
  if (!name)
    name = "?";
  if (rows == 0 || weight_floats % rows)
    return plan_validate_fail (err, err_len, "%s: %" PRIu64 " floats are "
        "not %" PRIu32 " whole rows", name, weight_floats, rows), -1;
  const uint64_t cols = weight_floats / rows;
  if (chunk_rows == 0 || chunk_rows >= rows)
    return plan_validate_fail (err, err_len, "%s: a chunk of %" PRIu32
        " rows of %" PRIu32 " is no chunk", name, chunk_rows, rows), -1;
  if (quantum == 0 || chunk_rows % quantum)
    return plan_validate_fail (err, err_len, "%s: a chunk of %" PRIu32
        " rows does not start every chunk on a multiple of %" PRIu32
        " rows", name, chunk_rows, quantum), -1;
  if (grad_floats != chunk_rows * cols)
    return plan_validate_fail (err, err_len, "%s: the gradient holds %"
        PRIu64 " floats, a chunk of %" PRIu32 " rows needs %" PRIu64, name,
        grad_floats, chunk_rows, chunk_rows * cols), -1;
  return 0;
}

int
tt_plan_validate_stash (uint64_t elements, uint64_t stash_bytes,
    const char *name, char *err, size_t err_len)
{
  if (elements > UINT64_MAX / 2 || stash_bytes < 2 * elements)
    return plan_validate_fail (err, err_len, "stash %s: %" PRIu64 " bytes "
        "cannot hold %" PRIu64 " values of 2 bytes", name ? name : "?",
        stash_bytes, elements);
  return 0;
}
