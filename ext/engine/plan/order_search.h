/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef TT_ORDER_SEARCH_H
#define TT_ORDER_SEARCH_H

#include "tt_internal.h"

/* Peak live bytes (the lower bound of any layout) of an execution order. */
uint64_t tt_order_peak (const tt_model * m, const int *exec, uint64_t align);
/* nntrainer's depth-first topological order; 0 on success. */
int tt_order_dfs (const tt_model * m, int *exec);
/* The order of least peak: exact over ideals when the graph has few
 * enough, else greedy with local improvement. 0 on success. */
int tt_order_search (const tt_model * m, uint64_t align, int *exec,
    uint64_t * peak, bool *exact);

#endif
