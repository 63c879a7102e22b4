/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A compiled model's tensor by its plan name (`<layer>:<what>`, as the
 * optimized INI's [Plan.Tensors] names them), for tests that look at the
 * plan's tensors.
 */
#ifndef TT_TEST_MODEL_TENSORS_H
#define TT_TEST_MODEL_TENSORS_H

#include "tt_internal.h"

#include <string.h>

/* the tensor named name of m, or NULL */
static inline const tt_tensor *
tt_test_find_tensor (const tt_model * m, const char *name)
{
  for (uint32_t i = 0; i < m->n_tensors; i++)
    if (!strcmp (m->tensors[i].name, name))
      return &m->tensors[i];
  return NULL;
}

#endif
