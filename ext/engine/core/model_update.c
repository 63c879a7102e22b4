/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The optimizer's update of the weights from their gradients during
 * backward: a layer's weights whole (split by ranges, or by owned rows),
 * or a chunk at a time as calc_gradient computes them (update as you
 * go, tt_run_apply_chunk); and clip_grad_by_norm's scaling.
 */
#include "tt_internal.h"
#include "tt_split.h"

#include <math.h>

/* Below this many elements an update runs on the calling thread alone:
 * waking the pool costs more than it saves (measured: see TT_SPLIT_*) */
#define MODEL_APPLY_SPLIT_MIN 8192

typedef struct
{
  tt_model *m;
  const tt_weight *w;
  size_t at;
  float *grad;                  /* elements [at, ...) of the gradient */
} model_apply_job;

/* elements [at + begin, at + end) of the job's weight; element-wise, so
 * any split gives the serial update bit for bit */
static void
model_apply_range (void *arg, size_t begin, size_t end)
{
  const model_apply_job *j = arg;
  tt_model *m = j->m;
  const tt_weight *w = j->w;
  const size_t n = end - begin, at = j->at + begin;
  float *v = tt_data (m, w->value) + at, *g = j->grad + begin;
  const float decay = w->l2 + w->decay;
  if (decay != 0.0f)
    for (size_t k = 0; k < n; k++)
      g[k] += decay * v[k];
  float *s0 = tt_data (m, w->opt[0]), *s1 = tt_data (m, w->opt[1]);
  tt_optimizer_apply_step (&m->opt_step, v, g, s0 ? s0 + at : NULL,
      s1 ? s1 + at : NULL, n);
}

/* The update of elements [at, at + n) of w from grad, which holds those
 * elements (consumed), split over the model's threads by fixed ranges
 * (whole cache lines); inline when called from a part of a job (the
 * pool is busy then). */
static void
model_apply_weight (tt_model * m, const tt_weight * w, size_t at, size_t n,
    float *grad)
{
  model_apply_job j = { m, w, at, grad };
  tt_split (m->run.threads, n, 16, MODEL_APPLY_SPLIT_MIN, model_apply_range,
      &j);
}

/* update as you go: a layer's calc_gradient hands each chunk here */
void
tt_model_apply_chunk (const void *owner, const tt_weight * w, size_t at,
    size_t n, float *grad)
{
  model_apply_weight ((tt_model *) owner, w, at, n, grad);
}

/* An owned weight's update: each thread its own rows. */
static void
model_apply_owned_part (void *arg, unsigned part, unsigned n_parts)
{
  const model_apply_job *j = arg;
  size_t r0, r1;
  tt_weight_owned_rows (j->w, part, n_parts, &r0, &r1);
  const size_t cols = j->w->count / j->w->rows;
  if (r0 < r1)
    model_apply_range ((void *) arg, r0 * cols, r1 * cols);
}

/* The update of l's weights from their gradients (consumed); chunked
 * ones were updated chunk by chunk in calc_gradient. */
void
tt_model_apply_layer (tt_model * m, tt_layer * l)
{
  for (uint32_t k = 0; k < l->n_weights; k++) {
    tt_weight *w = &l->weights[k];
    if (w->grad < 0 || w->chunk_rows)
      continue;
    if (w->owned) {
      model_apply_job j = { m, w, 0, tt_data (m, w->grad) };
      tt_threads_run_owned (m->run.threads, model_apply_owned_part, &j);
    } else {
      model_apply_weight (m, w, 0, w->count, tt_data (m, w->grad));
    }
  }
}

/* clip_grad_by_norm, as nntrainer (network_graph.cpp, weight.h): the
 * global norm is the L2 norm of the gradients' L2 norms (before
 * regularization and decay are added); every gradient is scaled by
 * max / (norm + 1e-6) when norm + 1e-6 > max. With loss scaling the
 * gradients hold scale times theirs: the norm is the unscaled one and
 * unscale joins the clip's factor (a power-of-two scale divides out
 * exactly, so the result is the unscaled gradients' bit for bit). */
void
tt_model_clip_gradients (tt_model * m, float unscale)
{
  const float eps = 1e-6f, max = m->clip_grad_norm;
  float factor = 1.0f;
  if (max > 0) {
    double sum = 0;
    for (uint32_t i = 0; i < m->n_layers; i++) {
      const tt_layer *l = &m->layers[i];
      for (uint32_t k = 0; k < l->n_weights; k++) {
        const tt_weight *w = &l->weights[k];
        if (w->grad < 0)
          continue;
        const float *g = tt_data (m, w->grad);
        double sq = 0;
        for (size_t j = 0; j < w->count; j++)
          sq += (double) g[j] * g[j];
        const double norm = (float) sqrt (sq);
        sum += norm * norm;
      }
    }
    const float total = (float) sqrt (sum) * unscale + eps;
    if (total > max)
      factor = max / total;
  }
  if (factor * unscale != 1.0f)
    tt_model_scale_gradients (m, factor * unscale);
}
