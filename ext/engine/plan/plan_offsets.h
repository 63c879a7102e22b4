/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory-offset planner: gives every tensor of a training step a byte
 * offset in one pool so that tensors whose lifetimes intersect never
 * share bytes, keeping the pool close to its lower bound (the largest
 * total of aligned sizes live at any one step).
 *
 * Runs once at load/plan time, so it allocates scratch memory (and checks
 * every allocation); the result is deterministic: the same input always
 * gives the same offsets, on every platform.
 */
#ifndef TT_PLAN_OFFSETS_H
#define TT_PLAN_OFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Alignment used when the caller passes 0. */
#define TT_PLAN_DEFAULT_ALIGN 64

/* One tensor to place. Input: size (bytes; 0 is allowed and consumes
 * nothing) and the inclusive lifetime [first, last] in execution steps,
 * 0 <= first <= last. Output: offset, a multiple of the alignment.
 * Two tensors conflict when their lifetimes share at least one step.
 * halves: written by two threads by halves (plan_halves.h); the other
 * planners ignore it. */
typedef struct {
  uint64_t size;
  int32_t first, last;
  uint64_t offset;
  bool halves;
} tt_interval;

/* In all three functions, align is a power of two (0 means
 * TT_PLAN_DEFAULT_ALIGN) and every size is rounded up to it. They return
 * UINT64_MAX on invalid input (align not a power of two, first < 0 or
 * first > last), on arithmetic overflow and on allocation failure. */

/* max over steps t of the sum of the aligned sizes live at t: no valid
 * placement can use a smaller pool. 0 when n == 0. */
uint64_t tt_plan_lower_bound (const tt_interval * t, size_t n,
    uint64_t align);

/* Sum of the aligned sizes: the pool without any reuse. */
uint64_t tt_plan_naive_size (const tt_interval * t, size_t n, uint64_t align);

/* Writes t[i].offset for every tensor and returns the pool size (the
 * largest offset + aligned size; 0 when nothing has a size). Zero-size
 * tensors get offset 0. On failure (UINT64_MAX) the offsets are
 * unspecified. */
uint64_t tt_plan_assign_offsets (tt_interval * t, size_t n, uint64_t align);

/* The same with the local search's work budget chosen: thorough spends
 * about a hundred times the quick budget (about a second on a thousand
 * tensors) to close the last fraction of a percent to the bound, for a
 * plan made once and stored. */
uint64_t tt_plan_assign_offsets_search (tt_interval * t, size_t n,
    uint64_t align, bool thorough);

#endif
