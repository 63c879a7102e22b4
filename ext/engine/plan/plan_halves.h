/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Offsets for a pool that two threads write by halves (plan_halves.c):
 * on two engine threads most big tensors of a step (activations,
 * their derivatives, pooling's indices, Winograd's columns) are written
 * by samples, the caller the first half and the worker the second, while
 * the rest (gradients, the caller's own scratch) is written by the caller
 * alone. Where a tensor takes over bytes another wrote last, the two
 * threads writing them should be the same one: a core writing a line the
 * other core wrote last must first take it from the other's cache, which
 * on the 2-core development machine, when its two virtual CPUs sat on
 * different dies, cost 4 times reading its own (parallel-probe), and
 * made the CNN's memory-bound layers slower on two threads than on one.
 *
 * So tensors written by halves (tt_interval.halves) share bytes only
 * with tensors whose halves meet at the same address: each lies centred
 * in a column, a region that only tensors of disjoint lifetimes share,
 * all centred on its middle; the caller's tensors go into the columns'
 * lower halves where they are free, else above the columns. The pool is
 * larger than tt_plan_assign_offsets's (the CNN: 11.0 MB against 9.2 at
 * batch 32, 28.1 against 24.4 at batch 128), so it is used for two
 * threads and batches of two or more only (core/model.c).
 */
#ifndef TT_PLAN_HALVES_H
#define TT_PLAN_HALVES_H

#include "plan_offsets.h"

/* Tensors written by halves smaller than this go where the caller's do:
 * what they would cost in columns is more than their lines are worth. */
#define TT_PLAN_HALVES_MIN_BYTES 65536u

/* Whether the layout centres t in a column: written by halves and, its
 * size rounded up to align (a power of two up to 65536), at least
 * TT_PLAN_HALVES_MIN_BYTES. */
bool tt_plan_halves_in_column (const tt_interval * t, uint64_t align);

/* Writes t[i].offset for every tensor, as tt_plan_assign_offsets, and
 * returns the pool size; UINT64_MAX on invalid input, overflow or
 * allocation failure, and when the work it would take exceeds its
 * budget (inputs of thousands of tensors): plan with
 * tt_plan_assign_offsets then. Deterministic: it counts work, not
 * time. */
uint64_t tt_plan_assign_offsets_halves (tt_interval * t, size_t n,
    uint64_t align);

#endif
