/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * centroid_knn: nntrainer's nearest-centroid classifier (SimpleShot). It
 * ends the model and reads the labels (one-hot, num_class wide), and
 * learns without gradients: in a training step's forward each sample b,
 * in batch order, moves its class k's centroid (k: the label's largest
 * value) to the running mean of the samples seen,
 *   map[k] = (map[k] * n[k] + x_b) / (n[k] + 1), n[k] += 1,
 * then the output is, for every sample and class, minus the Euclidean
 * distance from the sample to the class's centroid (the largest is the
 * nearest), -FLT_MAX for a class with no sample seen yet (nntrainer
 * writes FLT_MIN, a tiny positive number, which beats every seen class).
 * Evaluation only reads the centroids. No loss (0) and no derivative: a
 * model with a trainable layer before it is refused (core/graph.c).
 *
 * Its weights, neither trained by the optimizer, in nntrainer's order:
 * map [num_class][features] (the centroids) then num_samples [num_class]
 * (samples seen per class, as floats), both zeros at first.
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <float.h>
#include <math.h>

/* distances split over samples from this many multiply-adds */
#define KNN_SPLIT_MIN 16384

static const char *const knn_keys[] = { "num_class", NULL };

static tt_status
knn_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  l->p.knn.classes = 0;
  tt_status st = tt_section_uint (s, "num_class", 1, 1u << 20,
      &l->p.knn.classes, err);
  if (st)
    return st;
  if (!l->p.knn.classes)
    return tt_section_error (s, "num_class", err, TT_ERR_INVALID,
        "missing key (the number of classes, 1 to %u)", 1u << 20);
  return TT_OK;
}

static tt_status
knn_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const size_t features = tt_dims_count (l->in_dims[0]);
  const uint32_t k = l->p.knn.classes;
  if ((size_t) k * features > (1u << 28))
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] num_class: %u centroids "
        "of %zu features are more than %u values", c->path, l->section, k,
        features, 1u << 28);
  l->out_dims[0] = (tt_dims) {
  1, 1, k};
  tt_layer_add_weight (l, "map", (size_t) k * features, TT_INIT_ZEROS,
      (uint32_t) features, k, false);
  tt_layer_add_weight (l, "num_samples", k, TT_INIT_ZEROS, k, k, false);
  return TT_OK;
}

typedef struct
{
  const float *x, *map, *count;
  float *y;
  size_t features;
  uint32_t classes;
} knn_job;

/* the squared distance of a and b, in 8 running sums that the compiler
 * can keep in one vector */
static TT_VECTOR_CLONES float
knn_distance2 (const float *a, const float *b, size_t n)
{
  float acc[8] = { 0 };
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) {
      const float d = a[i + k] - b[i + k];
      acc[k] += d * d;
    }
  float sum = 0;
  for (; i < n; i++) {
    const float d = a[i] - b[i];
    sum += d * d;
  }
  for (int k = 0; k < 8; k++)
    sum += acc[k];
  return sum;
}

/* samples [begin, end) */
static void
knn_scores_range (void *arg, size_t begin, size_t end)
{
  const knn_job *j = arg;
  for (size_t b = begin; b < end; b++) {
    const float *x = j->x + b * j->features;
    float *y = j->y + b * j->classes;
    for (uint32_t k = 0; k < j->classes; k++)
      y[k] = j->count[k] > 0.0f ? -sqrtf (knn_distance2 (x,
              j->map + (size_t) k * j->features, j->features)) : -FLT_MAX;
  }
}

/* each sample, in batch order, into its class's running mean */
static void
knn_update (const float *x, const float *t, size_t batch, size_t features,
    uint32_t classes, float *map, float *count)
{
  for (size_t b = 0; b < batch; b++) {
    const float *tb = t + b * classes, *xb = x + b * features;
    uint32_t k = 0;
    for (uint32_t i = 1; i < classes; i++)
      k = tb[i] > tb[k] ? i : k;
    float *ck = map + (size_t) k * features;
    const float n = count[k];
    for (size_t f = 0; f < features; f++)
      ck[f] = (ck[f] * n + xb[f]) / (n + 1.0f);
    count[k] = n + 1.0f;
  }
}

static void
knn_forward (const tt_run_ctx * c, tt_layer * l)
{
  const size_t features = tt_dims_count (l->in_dims[0]);
  const uint32_t classes = l->p.knn.classes;
  const float *x = tt_run_data (c, l->in[0]);
  float *map = tt_run_data (c, l->weights[0].value);
  float *count = tt_run_data (c, l->weights[1].value);
  /* once a step: a recompute (never planned: it ends the model) would
   * not move the centroids again */
  if (c->training && c->have_labels && !c->recompute)
    knn_update (x, tt_run_data (c, l->p.loss.label), c->batch, features,
        classes, map, count);
  knn_job j = { x, map, count, tt_run_data (c, l->out[0]), features,
    classes
  };
  const size_t work = (size_t) c->batch * classes * features;
  tt_split (c->threads, c->batch, 1, work >= KNN_SPLIT_MIN ? 2 : c->batch +
      1, knn_scores_range, &j);
  if (c->have_labels)
    *c->loss = 0.0;
}

/* feature cache */
static const char *
knn_varies (const tt_layer * l)
{
  (void) l;
  return "its training forward updates its centroids";
}

const tt_layer_ops tt_centroid_knn_layer_ops = {
  .type = "centroid_knn",
  .role = TT_ROLE_LOSS,
  .max_inputs = 1,
  .keys = knn_keys,
  .parse = knn_parse,
  .infer = knn_infer,
  .forward = knn_forward,
  .training_varies = knn_varies,
};
