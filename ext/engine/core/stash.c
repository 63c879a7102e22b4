/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stash of mixed precision (docs/precision.md): with a half
 * activation type (m->activation_type bf16 or fp16), a training model
 * keeps the activations backward reads at 2 bytes an element from their
 * last forward use to the backward layer that first needs them. The plan
 * decides which (plan/remat.c, mode TT_REMAT_STASH: the activation
 * roots backward reads, but the loss's output) and lays out each root's
 * three instances: the fp32 first one for the forward uses, the stash
 * ("<name>:stashed"), the fp32 second one ("<name>:widened") from the
 * trigger to the last backward use. Here: narrowing after the forward
 * of the group's stash_layer (its last forward use; round to
 * nearest even, kernels/bf16.c), widening before the trigger's backward
 * phases (model_remat.c, where the tensor and its views are pointed at
 * the second instance as for a swapped group). Large tensors are split
 * over the model's threads; the parts depend on sizes only, and the
 * conversions are element by element, so results do not depend on the
 * thread count. The same conversions serve a root swapped at half width
 * (swap.c): narrowed into its staging, widened in place.
 */
#include "tt_internal.h"
#include "kernels.h"

#include <stdint.h>

/* elements of a part; below twice this, one part */
#define STASH_PART_ELEMS 32768

bool
tt_stash_on (const tt_model * m)
{
  return !m->inference && m->half_only != TT_HALF_GEMM_ONLY &&
      (m->activation_type == TT_PRECISION_BF16 ||
      m->activation_type == TT_PRECISION_FP16);
}

typedef struct
{
  const float *wide;
  uint16_t *half;
  float *out;
  size_t n;
  bool narrow, bf16;
} stash_job;

static void
stash_part (void *arg, unsigned part, unsigned n_parts)
{
  const stash_job *j = arg;
  size_t b, e;
  tt_threads_range (j->n, 16, part, n_parts, &b, &e);
  if (e <= b)
    return;
  if (j->narrow && j->bf16)
    tt_f32_to_bf16 (j->wide + b, j->half + b, e - b);
  else if (j->narrow)
    tt_f32_to_f16 (j->wide + b, j->half + b, e - b);
  else if (j->bf16)
    tt_bf16_to_f32 (j->half + b, j->out + b, e - b);
  else
    tt_f16_to_f32 (j->half + b, j->out + b, e - b);
}

static void
stash_convert (tt_model * m, stash_job * j)
{
  j->bf16 = m->activation_type == TT_PRECISION_BF16;
  const unsigned parts = j->n < 2 * STASH_PART_ELEMS ? 1 :
      tt_threads_parts (m->run.threads, j->n / STASH_PART_ELEMS, 1);
  tt_threads_run (m->run.threads, stash_part, j, parts);
}

void
tt_stash_out (tt_model * m, int layer)
{
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    if (G->mode != TT_REMAT_STASH || G->stash_layer != layer)
      continue;
    for (uint32_t k = 0; k < G->n_tensors; k++) {
      if (G->stash[k] < 0)
        continue;
      const int id = G->tensors[k];
      stash_job j = { m->tensors[id].data,
        (uint16_t *) (void *) m->tensors[G->stash[k]].data, NULL,
        m->tensors[id].count, true, false
      };
      stash_convert (m, &j);
    }
  }
}

void
tt_stash_in (tt_model * m, const tt_remat * g)
{
  for (uint32_t k = 0; k < g->n_tensors; k++) {
    if (g->stash[k] < 0 || g->twins[k] < 0)
      continue;
    stash_job j = { NULL, (uint16_t *) (void *) m->tensors[g->stash[k]].data,
      m->tensors[g->twins[k]].data, m->tensors[g->tensors[k]].count, false,
      false
    };
    stash_convert (m, &j);
  }
}

void
tt_stash_narrow (tt_model * m, const float *x, uint16_t * y, size_t n)
{
  stash_job j = { x, y, NULL, n, true, false };
  stash_convert (m, &j);
}

/* Back to front, in parts [b, e) with e <= 2 b: the part reads bytes
 * [2 b, 2 e) and writes [4 b, 4 e), which do not overlap (2 e <= 4 b),
 * and lie above every half not read yet ([0, 2 b)); element 0, which
 * overlaps itself, through a copy. So the conversion never reads what
 * it wrote, whatever order a kernel or the threads take inside a part. */
void
tt_stash_widen_in_place (tt_model * m, float *x, size_t n)
{
  uint16_t *h = (uint16_t *) (void *) x;
  size_t e = n;
  while (e > 1) {
    const size_t b = (e + 1) / 2;
    stash_job j = { NULL, h + b, x + b, e - b, false, false };
    stash_convert (m, &j);
    e = b;
  }
  if (n) {
    uint16_t first = h[0];
    stash_job j = { NULL, &first, x, 1, false, false };
    stash_convert (m, &j);
  }
}
