/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dynamic loss scaling (docs/precision.md), on when the model's
 * loss_scale is above 0: the loss's derivative is multiplied by the
 * scale, so that small gradients stay representable in half-precision
 * activations and their derivatives; the gradients then wait whole for
 * the end of the step (graph_tensors.c, as with clip_grad_by_norm), are
 * checked finite, and are divided by the scale in the clip's scaling
 * (model_update.c) before the update. A step with a gradient that is
 * not finite updates nothing, halves the scale (not below 1) and counts
 * as skipped; loss_scale_interval good steps in a row double it
 * (nntrainer's network_graph.cpp: 2000).
 */
#include "tt_internal.h"
#include "tt_split.h"
#include "tt_test_hooks.h"

#include <float.h>
#include <string.h>

/* nntrainer's growth interval (network_graph.cpp: "growth_interval :
 * default --> 2000") */
#define LOSS_SCALE_INTERVAL 2000
/* below this many elements a check or scaling runs on the calling thread
 * alone (as the optimizer's update: model_update.c) */
#define LOSS_SCALE_SPLIT_MIN 8192

void
tt_loss_scale_compile (tt_model * m)
{
  /* nntrainer's LossScale defaults to 1, and a mixed model of its scales
   * from there: its derivatives are fp16. Here derivatives stay fp32 at
   * every precision (only the activations kept for backward are half),
   * so scaling is on only when asked for, with a scale above 1 */
  m->loss_scale_good = 0;
}

bool
tt_model_gradients_whole (const tt_model * m)
{
  return m->clip_grad_norm > 0 || (m->loss_scale > 0 && !m->inference);
}

typedef struct
{
  float *x;
  float s;
} scale_job;

TT_VECTOR_CLONES static void
scale_range (void *arg, size_t begin, size_t end)
{
  const scale_job *j = arg;
  float *restrict x = j->x;
  const float s = j->s;
  for (size_t i = begin; i < end; i++)
    x[i] *= s;
}

static void
scale_floats (tt_model * m, float *x, size_t n, float s)
{
  scale_job j = { x, s };
  tt_split (m->run.threads, n, 16, LOSS_SCALE_SPLIT_MIN, scale_range, &j);
}

/* after the loss's backward: its input derivatives, the seed of every
 * gradient, times the scale (a power of two exactly) */
void
tt_loss_scale_seed (tt_model * m)
{
  const tt_layer *l = &m->layers[m->loss_layer];
  for (uint32_t k = 0; k < l->n_inputs; k++)
    if (l->in_deriv[k] >= 0)
      scale_floats (m, tt_data (m, l->in_deriv[k]),
          (size_t) m->run.batch * tt_dims_count (l->in_dims[k]), m->loss_scale);
}

/* the values of [begin, end) whose exponent is all ones (infinities and
 * NaNs): integer compares, which vectorize where a float reduction
 * would not */
TT_VECTOR_CLONES static double
nonfinite_range (void *arg, size_t begin, size_t end)
{
  const uint32_t *restrict bits = arg;
  uint32_t bad = 0;
  for (size_t i = begin; i < end; i++)
    bad += (bits[i] & 0x7f800000u) == 0x7f800000u;
  return bad;
}

bool
tt_loss_scale_finite (tt_model * m)
{
  _Static_assert (sizeof (float) == sizeof (uint32_t), "float is 32 bits");
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_weights; k++) {
      const tt_weight *w = &l->weights[k];
      if (w->grad < 0)
        continue;
      /* the pool's floats read as their bits (same size, no copy) */
      void *g = tt_data (m, w->grad);
      if (tt_split_sum (m->run.threads, w->count, 16, LOSS_SCALE_SPLIT_MIN,
              nonfinite_range, g) > 0)
        return false;
    }
  }
  return true;
}

void
tt_loss_scale_update (tt_model * m, bool finite)
{
  const uint32_t interval = m->loss_scale_interval ? m->loss_scale_interval :
      LOSS_SCALE_INTERVAL;
  if (!finite) {
    m->skipped_steps++;
    m->loss_scale_good = 0;
    m->loss_scale = m->loss_scale > 2.0f ? m->loss_scale * 0.5f : 1.0f;
    return;
  }
  if (++m->loss_scale_good < interval)
    return;
  m->loss_scale_good = 0;
  /* doubled while it stays a finite float */
  if (m->loss_scale <= FLT_MAX / 2)
    m->loss_scale *= 2.0f;
}

void
tt_model_scale_gradients (tt_model * m, float s)
{
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_weights; k++) {
      const tt_weight *w = &l->weights[k];
      if (w->grad >= 0)
        scale_floats (m, tt_data (m, w->grad), w->count, s);
    }
  }
}

float
tt_model_loss_scale (const tt_model * m)
{
  return m->loss_scale > 0 ? m->loss_scale : 0.0f;
}

uint64_t
tt_model_skipped_steps (const tt_model * m)
{
  return m->skipped_steps;
}

void
tt_model_set_loss_scale_interval (tt_model * m, uint32_t steps)
{
  m->loss_scale_interval = steps;
}

void
tt_model_set_initial_loss_scale (tt_model * m, float scale)
{
  m->loss_scale = scale;
}
