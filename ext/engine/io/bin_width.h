/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The width of a BIN's weights (docs/formats.md): [Model]
 * model_tensor_type's weight type W. FP32: 4 bytes each; FP16 (IEEE
 * half, as nntrainer writes an FP16-* model's weights) and BF16 (ours):
 * 2 bytes each. The pool keeps fp32 master copies: a load widens, a save
 * rounds to nearest even. Optimizer moments and counters keep their
 * widths (4 bytes).
 */
#ifndef TT_BIN_WIDTH_H
#define TT_BIN_WIDTH_H

#include "tt_internal.h"

/* bytes per weight in the model's BIN: 4, or 2 for FP16 and BF16 */
size_t tt_bin_weight_width (const tt_model * m);

/* "FP32", "FP16", "BF16" */
const char *tt_bin_type_name (tt_precision p);

/* n values of the weight type p (2 bytes each, any alignment) into
 * floats, and floats into p (rounded to nearest even); p is FP16 or
 * BF16 */
void tt_bin_widen (tt_precision p, const void *src, float *dst, size_t n);
void tt_bin_narrow (tt_precision p, const float *src, void *dst, size_t n);

/* The first of n finite floats that p cannot hold (it would round to an
 * infinity: |x| >= 65520 for FP16), n when none; for FP32, n. The largest
 * finite value of p in *largest. */
size_t tt_bin_find_unrepresentable (tt_precision p, const float *x, size_t n,
    float *largest);

#endif
