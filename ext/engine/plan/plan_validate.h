/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Independent check of a memory plan (see plan_offsets.h): written
 * separately from the planner and sharing no code with it, so that a bug
 * in one is not hidden by the same bug in the other.
 */
#ifndef TT_PLAN_VALIDATE_H
#define TT_PLAN_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "plan_offsets.h"

/* Checks that every tensor has first >= 0 and first <= last, an offset
 * that is a multiple of align (a power of two; 0 means
 * TT_PLAN_DEFAULT_ALIGN), offset + size that does not overflow and is
 * <= pool_size, and that no two tensors whose lifetimes share a step
 * share a byte of [offset, offset + size) (zero-size tensors share
 * nothing).
 *
 * Returns 0 when the plan is valid; otherwise -1 with a message in err
 * (err_len bytes, may be 0) that names the offending tensor(s) by
 * names[i], or "#<i>" when names or names[i] is NULL, and for an overlap
 * gives both byte ranges and both lifetimes. O(n log n). */
int tt_plan_validate (const tt_interval * t, size_t n, uint64_t align,
    uint64_t pool_size, const char *const *names, char *err, size_t err_len);

/* Checks a chunked weight gradient (update as you go): a weight of
 * weight_floats in rows whole rows, whose gradient tensor of grad_floats
 * holds exactly chunk_rows rows, 0 < chunk_rows < rows, chunk_rows a
 * multiple of quantum (so every chunk starts on one). Returns 0, or -1
 * with a message naming name in err. */
int tt_plan_validate_chunk (uint64_t weight_floats, uint32_t rows,
    uint32_t chunk_rows, uint64_t grad_floats, uint32_t quantum,
    const char *name, char *err, size_t err_len);

/* Checks a stash of mixed precision (core/stash.c): stash_bytes hold
 * elements values of 2 bytes each. Returns 0, or -1 with a message
 * naming name in err. */
int tt_plan_validate_stash (uint64_t elements, uint64_t stash_bytes,
    const char *name, char *err, size_t err_len);

#endif
