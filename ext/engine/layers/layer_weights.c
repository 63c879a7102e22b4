/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The weights a layer declares while its shapes are inferred: a file of
 * its own so that the layers depend on it and not on the graph builder
 * (core/graph.c), which calls the layers.
 */
#include "tt_layer.h"

#include <string.h>

tt_weight *
tt_layer_add_weight (tt_layer * l, const char *suffix, size_t count,
    tt_initializer init, uint32_t fan_in, uint32_t fan_out, bool trainable)
{
  tt_weight *w = &l->weights[l->n_weights++];
  memset (w, 0, sizeof *w);
  w->suffix = suffix;
  w->count = count;
  w->init = init;
  w->fan_in = fan_in;
  w->fan_out = fan_out;
  w->trainable = trainable && l->trainable;
  w->file_moments = w->trainable;
  w->value = w->grad = w->opt[0] = w->opt[1] = -1;
  return w;
}
