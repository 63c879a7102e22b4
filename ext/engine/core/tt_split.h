/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_split: a loop over [0, total) cut into contiguous ranges, one per
 * part of a job on the model's thread pool (tt_threads.h), for the
 * element-wise kernels (activations, losses, the optimizer, dropout,
 * addition) and the recurrent cells' per-sample work.
 *
 * Ranges start at multiples of quantum (a SIMD width, a row, a sample)
 * and depend only on total, quantum and the thread count, so for
 * element-wise work the result is the serial loop's bit for bit: every
 * element is computed by the same code on the same values, only on
 * another core. Below min_total the job would cost more than it saves
 * (waking a sleeping pool is a few microseconds) and fn runs once,
 * inline, over everything.
 */
#ifndef TT_SPLIT_H
#define TT_SPLIT_H

#include "tt_threads.h"

#include <stddef.h>

typedef void (*tt_split_fn) (void *arg, size_t begin, size_t end);

void tt_split (tt_threads * pool, size_t total, size_t quantum,
    size_t min_total, tt_split_fn fn, void *arg);

/* A sum the same way: fn returns its range's partial, and the partials
 * are added in part order. Deterministic for a thread count; across
 * thread counts equal within rounding (the serial sum's order differs). */
typedef double (*tt_split_sum_fn) (void *arg, size_t begin, size_t end);

double tt_split_sum (tt_threads * pool, size_t total, size_t quantum,
    size_t min_total, tt_split_sum_fn fn, void *arg);

#endif
