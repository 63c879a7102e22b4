/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Growing a classifier (tensor-trainer grow, docs/personalize.md): a
 * fully_connected layer's units raised, its old outputs kept bit for bit
 * (io/grow.c). */
#ifndef TT_GROW_H
#define TT_GROW_H

#include "tt_internal.h"

/* The fully_connected layer of the compiled m whose INI section is name
 * (case aside): its unit count and input width. Else TT_ERR_INVALID
 * naming m's file, name and m's fully_connected layers. */
tt_status tt_grow_find_layer (const tt_model * m, const char *name,
    uint32_t * unit, uint32_t * in_width, tt_error * err);

/* grown is compiled from old's description with name's unit raised, its
 * weights initialized. Every weight of old is copied into grown's of the
 * same name; name's weight ([in][unit], unit fastest) and bias keep old's
 * columns and entries, the new columns their initial values, the new bias
 * entries 0. Another weight whose size changed: TT_ERR_INVALID naming it. */
tt_status tt_grow_copy_weights (tt_model * old, tt_model * grown,
    const char *name, tt_error * err);

#endif
