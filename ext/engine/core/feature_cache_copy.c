/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The feature cache's copies inside a step (model_step.c calls them):
 * the boundary values a layer wrote out to the caller's records (take),
 * or the records into the tensors a skipped prefix layer would have
 * written (put); and the cache state's release. feature_cache.c finds
 * the prefix and runs the steps.
 */
#include "tt_internal.h"

#include <stdlib.h>
#include <string.h>

void
tt_fcache_free (tt_model * m)
{
  tt_fcache *f = m->fcache;
  if (!f)
    return;
  free (f->prefix);
  free (f->tensor);
  free (f->producer);
  free (f->floats);
  free (f->at);
  free (f);
  m->fcache = NULL;
}

void
tt_fcache_take (tt_model * m, int layer)
{
  const tt_fcache *f = m->fcache;
  const uint32_t n = m->run.batch;
  for (uint32_t k = 0; k < f->n; k++) {
    if (f->producer[k] != layer)
      continue;
    const float *src = tt_data (m, f->tensor[k]);
    const size_t per = f->floats[k];
    for (uint32_t b = 0; b < n; b++)
      if (f->keep[b])
        memcpy (f->keep[b] + f->at[k], src + b * per, per * sizeof *src);
  }
}

void
tt_fcache_put (tt_model * m, int layer)
{
  const tt_fcache *f = m->fcache;
  const uint32_t n = m->run.batch;
  for (uint32_t k = 0; k < f->n; k++) {
    if (f->producer[k] != layer)
      continue;
    float *dst = tt_data (m, f->tensor[k]);
    const size_t per = f->floats[k];
    for (uint32_t b = 0; b < n; b++)
      memcpy (dst + b * per, f->from[b] + f->at[k], per * sizeof *dst);
  }
}
