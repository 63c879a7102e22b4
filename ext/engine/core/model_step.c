/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The steps: a batch fed into the pool, the forward pass, the loss and
 * score, the backward pass with each layer's update as it goes
 * (model_update.c) and the dropped activations rebuilt (model_remat.c);
 * public as training, evaluation and gradient steps. No step allocates.
 */
#include "tt_internal.h"

#include <math.h>
#include <string.h>

static tt_status
model_feed (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile the model first", m->path);
  if (n < 1 || n > m->batch_size)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: %u samples given; a batch holds 1 to %u", m->path, n,
        m->batch_size);
  /* a step from the feature cache feeds no input: the prefix is skipped */
  const bool cached = m->fcache && m->fcache->mode == TT_FCACHE_FROM;
  if (!inputs && !cached)
    return tt_fail (err, TT_ERR_INVALID, "%s: no input data", m->path);
  for (uint32_t i = 0; !cached && i < m->n_inputs; i++) {
    tt_layer *l = &m->layers[m->input_layers[i]];
    const size_t count = n * tt_dims_count (l->out_dims[0]);
    float *dst = tt_data (m, l->out[0]);
    tt_dtype type = types ? types[i] : TT_DTYPE_FLOAT32;
    if (!inputs[i])
      return tt_fail (err, TT_ERR_INVALID, "%s: input %u (%s) has no data",
          m->path, i, l->name);
    l->p.input.normalized_at_feed = type == TT_DTYPE_UINT8 &&
        l->p.input.normalization;
    if (type != TT_DTYPE_UINT8 && type != TT_DTYPE_FLOAT32)
      return tt_fail (err, TT_ERR_INVALID, "%s: input %u: unknown data type "
          "%d", m->path, i, (int) type);
    const tt_feed_kind kind = type == TT_DTYPE_FLOAT32 ? TT_FEED_FLOATS :
        l->p.input.normalized_at_feed ? TT_FEED_BYTES_NORMALIZED :
        TT_FEED_BYTES;
    const size_t bad = tt_feed (m->thread_pool, kind, inputs[i], count,
        l->out_thread_blocks, dst);
    if (bad < count) {
      const size_t per = tt_dims_count (l->out_dims[0]);
      return tt_fail (err, TT_ERR_NUMERIC,
          "%s: input %u (%s), sample %zu holds %g at element %zu; this "
          "batch was not applied", m->path, i, l->name, bad / per,
          (double) ((const float *) inputs[i])[bad], bad % per);
    }
  }
  if (labels) {
    tt_layer *loss = &m->layers[m->loss_layer];
    memcpy (tt_data (m, loss->p.loss.label), labels,
        n * tt_dims_count (loss->out_dims[0]) * sizeof *labels);
  }
  /* what the layers see of this batch (model_forward sets training) */
  m->run.tensors = m->tensors;
  m->run.batch = n;
  m->run.batch_size = m->batch_size;
  m->run.have_labels = labels != NULL;
  m->run.rng = &m->rng;
  m->run.loss = &m->loss_value;
  /* mixed precision (docs/precision.md): bf16 and fp16 activations
   * round the layers' GEMM inputs to their format (sums in fp32), in
   * training and in evaluation */
  m->run.gemm_inputs = tt_model_gemm_inputs (m);
  return TT_OK;
}

/* training: the swapped activations (plan/remat.c) go to the swap file
 * as their writers complete them */
static tt_status
model_forward (tt_model * m, bool training, tt_error * err)
{
  m->run.training = training;
  const tt_run_ctx *c = &m->run;
  const bool swap = training && m->plan.swapped;
  const bool stash = training && m->plan.stashed;
  tt_layer_time *const prof = m->profiling ? m->profile : NULL;
  const tt_fcache_mode cache = m->fcache ? m->fcache->mode : TT_FCACHE_OFF;
  if (prof)
    m->profile_steps++;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[m->exec[i]];
    if (cache == TT_FCACHE_FROM && m->fcache->prefix[m->exec[i]]) {
      tt_fcache_put (m, m->exec[i]);
      if (stash)
        tt_stash_out (m, m->exec[i]);
      continue;
    }
    if (prof) {
      tt_model_forward_timed (m, l, &prof[m->exec[i]]);
      prof[m->exec[i]].calls++;
    } else {
      l->ops->forward (c, l);
    }
    if (cache == TT_FCACHE_KEEP)
      tt_fcache_take (m, m->exec[i]);
    tt_status st;
    if (swap && (st = tt_swap_out (m, m->exec[i], err)))
      return st;
    /* mixed precision: the stashed groups narrowed (core/stash.c) */
    if (stash)
      tt_stash_out (m, m->exec[i]);
  }
  return TT_OK;
}

static double
model_regularization (const tt_model * m)
{
  double sum = 0;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_weights; k++) {
      const tt_weight *w = &l->weights[k];
      if (w->l2 <= 0)
        continue;
      const float *v = tt_data (m, w->value);
      double sq = 0;
      for (size_t j = 0; j < w->count; j++)
        sq += (double) v[j] * v[j];
      sum += 0.5 * w->l2 * sq;
    }
  }
  return sum;
}

static void
model_score (const tt_model * m, tt_batch_result * r)
{
  if (!r)
    return;
  r->samples = m->run.batch;
  r->correct = 0;
  r->skipped = 0;
  r->loss = m->run.have_labels ? m->loss_value + model_regularization (m) : NAN;
  if (!m->run.have_labels)
    return;
  const tt_layer *loss = &m->layers[m->loss_layer];
  const size_t k = tt_dims_count (loss->out_dims[0]);
  const float *y = tt_data (m, loss->out[0]);
  const float *t = tt_data (m, loss->p.loss.label);
  /* the maxima in registers: indexing by the best index so far made
   * each comparison wait for a load (5 us of the MLP's step at batch 128) */
  for (uint32_t b = 0; b < m->run.batch; b++, y += k, t += k) {
    size_t py = 0, pt = 0;
    float my = y[0], mt = t[0];
    for (size_t i = 1; i < k; i++) {
      if (y[i] > my) {
        my = y[i];
        py = i;
      }
      if (t[i] > mt) {
        mt = t[i];
        pt = i;
      }
    }
    r->correct += py == pt;
  }
}

/* l's backward phases in nntrainer's order (calc_gradient, then
 * calc_derivative), but with update as you go calc_derivative first: it
 * reads the weights, which that calc_gradient updates */
static void
model_layer_backward (const tt_run_ctx * c, tt_layer * l)
{
  bool trainable = false;
  for (uint32_t k = 0; k < l->n_weights; k++)
    trainable |= l->weights[k].grad >= 0;
  const bool derive = l->needs_derivative && l->ops->calc_derivative;
  if (derive && l->update_in_gradient)
    l->ops->calc_derivative (c, l);
  if (trainable && l->ops->calc_gradient)
    l->ops->calc_gradient (c, l);
  if (derive && !l->update_in_gradient)
    l->ops->calc_derivative (c, l);
}

/* A layer with nothing to update (no weights, frozen, or every gradient
 * applied chunk by chunk in calc_gradient) reads no clock: its update
 * time stays 0 rather than the clock's own cost. */
static void
model_apply_layer_timed (tt_model * m, tt_layer * l, tt_layer_time * t)
{
  bool any = false;
  for (uint32_t k = 0; k < l->n_weights; k++)
    any |= l->weights[k].grad >= 0 && !l->weights[k].chunk_rows;
  if (!any)
    return;
  const tt_model_timer k = tt_model_timer_start (m);
  tt_model_apply_layer (m, l);
  t->update_ns += tt_model_timer_stop (m, k, t);
}

static void
model_layer_backward_timed (tt_model * m, tt_layer * l, bool update,
    tt_layer_time * t)
{
  const tt_model_timer k = tt_model_timer_start (m);
  model_layer_backward (&m->run, l);
  t->backward_ns += tt_model_timer_stop (m, k, t);
  if (update)
    model_apply_layer_timed (m, l, t);
}

/* apply: update the weights, each layer's right after its gradients
 * (their memory may then serve later layers), a chunked gradient's chunk
 * by chunk as calc_gradient computes them (update as you go, after
 * calc_derivative, which reads the old weights: lifetime.c numbers the
 * steps the same way), or, with clip_grad_by_norm or loss scaling, all
 * at the end (the gradients then live until it, graph_tensors.c). With
 * loss scaling (loss_scale.c) the loss's derivative is scaled, and a
 * step whose gradients are not all finite updates nothing (*skipped). */
static tt_status
model_backward (tt_model * m, bool apply, bool *skipped, tt_error * err)
{
  tt_run_ctx *c = &m->run;
  const bool defer = tt_model_gradients_whole (m);
  const bool scaled = apply && m->loss_scale > 0;
  tt_layer_time *const prof = m->profiling ? m->profile : NULL;
  c->apply_chunk = apply ? tt_model_apply_chunk : NULL;
  c->apply_owner = m;
  if (apply)
    tt_optimizer_step_at (&m->opt, m->iteration, &m->opt_step);
  for (uint32_t i = m->n_layers; i-- > 0;) {
    tt_layer *l = &m->layers[m->exec[i]];
    if (m->n_dropped) {
      tt_status st = tt_model_rebuild (m, m->exec[i], err);
      if (st) {
        c->apply_chunk = NULL;
        tt_model_unbind_dropped (m);
        return st;
      }
    }
    if (prof) {
      model_layer_backward_timed (m, l, apply && !defer, &prof[m->exec[i]]);
    } else {
      model_layer_backward (c, l);
      if (apply && !defer)
        tt_model_apply_layer (m, l);
    }
    if (scaled && m->exec[i] == m->loss_layer)
      tt_loss_scale_seed (m);
  }
  c->apply_chunk = NULL;
  if (m->n_dropped)
    tt_model_unbind_dropped (m);
  if (!apply || !defer)
    return TT_OK;
  float unscale = 1.0f;
  if (scaled) {
    const bool finite = tt_loss_scale_finite (m);
    const float scale = m->loss_scale;
    tt_loss_scale_update (m, finite);
    if (!finite) {
      *skipped = true;
      return TT_OK;
    }
    unscale = 1.0f / scale;
  }
  tt_model_clip_gradients (m, unscale);
  for (uint32_t i = m->n_layers; i-- > 0;) {
    tt_layer *l = &m->layers[m->exec[i]];
    if (prof)
      model_apply_layer_timed (m, l, &prof[m->exec[i]]);
    else
      tt_model_apply_layer (m, l);
  }
  return TT_OK;
}

static tt_status
model_train_batch (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, tt_batch_result * result,
    tt_error * err)
{
  if (m->weights_external)
    return tt_model_refuse_external (m, "train", err);
  if (m->inference)
    return tt_fail (err, TT_ERR_STATE, "%s: cannot train: the model was "
        "compiled for inference only (no gradients, no optimizer state)",
        m->path);
  if (!labels)
    return tt_fail (err, TT_ERR_INVALID, "%s: training needs labels", m->path);
  if (m->swap_failed)
    return tt_fail (err, TT_ERR_STATE, "%s: a read from the swap file failed "
        "during a step, after part of its update: reload the model", m->path);
  /* wrapping would restart adam's bias correction and the schedule */
  if (m->iteration == UINT32_MAX)
    return tt_fail (err, TT_ERR_STATE, "%s: the iteration counter is at "
        "%u, its limit: another step would overflow it", m->path, m->iteration);
  tt_status st = model_feed (m, n, inputs, types, labels, err);
  if (st || (st = model_forward (m, true, err)))
    return st;
  tt_batch_result r;
  model_score (m, &r);
  if (!isfinite (r.loss))
    return tt_fail (err, TT_ERR_NUMERIC,
        "%s: the loss became %g at iteration %u (epoch %u); this batch was "
        "not applied", m->path, r.loss, m->iteration, m->epoch);
  bool skipped = false;
  if ((st = model_backward (m, true, &skipped, err)))
    return st;
  /* a skipped step leaves the optimizer's counter as it was */
  m->iteration += !skipped;
  r.skipped = skipped;
  if (result)
    *result = r;
  return TT_OK;
}

_Static_assert (TT_MODEL_STEP_GRADIENTS < TT_THREADS_STEP_KINDS,
    "a kind of step the pool does not time");

/* A step of kind begins: the pool chooses split or inline, then the
 * model takes the layout that fits (layout_switch.c). */
static void
model_step_begin (tt_model * m, unsigned kind)
{
  tt_threads_begin (m->thread_pool, kind);
  tt_layout_fit (m, kind);
}

/* A step: the pool's workers stay awake between its jobs. */
tt_status
tt_model_train_batch (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, tt_batch_result * result,
    tt_error * err)
{
  const tt_model_profile_mark k = tt_model_profile_begin (m);
  model_step_begin (m, TT_MODEL_STEP_TRAIN);
  const tt_status st =
      model_train_batch (m, n, inputs, types, labels, result, err);
  tt_threads_end (m->thread_pool);
  tt_model_profile_end (m, k);
  return st;
}

static tt_status
model_eval_batch (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, tt_batch_result * result,
    tt_error * err)
{
  tt_status st = model_feed (m, n, inputs, types, labels, err);
  if (st || (st = model_forward (m, false, err)))
    return st;
  model_score (m, result);
  return TT_OK;
}

tt_status
tt_model_eval_batch (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, tt_batch_result * result,
    tt_error * err)
{
  const tt_model_profile_mark k = tt_model_profile_begin (m);
  model_step_begin (m, TT_MODEL_STEP_EVAL);
  const tt_status st =
      model_eval_batch (m, n, inputs, types, labels, result, err);
  tt_threads_end (m->thread_pool);
  tt_model_profile_end (m, k);
  return st;
}

static tt_status
model_gradients (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, bool backward, double *loss,
    tt_error * err)
{
  /* a training-mode forward updates batch-normalization statistics */
  if (m->weights_external)
    return tt_model_refuse_external (m, "run a training pass", err);
  if (m->inference)
    return tt_fail (err, TT_ERR_STATE, "%s: cannot run a training pass: the "
        "model was compiled for inference only", m->path);
  for (uint32_t i = 0; backward && i < m->n_layers; i++)
    if (m->layers[i].update_in_gradient)
      return tt_fail (err, TT_ERR_STATE, "%s: the gradient of layer %s is "
          "planned in chunks, each applied as computed (update as you go): "
          "call tt_model_keep_gradients before compiling to read it whole",
          m->path, m->layers[i].name);
  tt_status st = model_feed (m, n, inputs, types, labels, err);
  if (st || (st = model_forward (m, true, err)))
    return st;
  *loss = m->loss_value;
  if (backward)
    return model_backward (m, false, NULL, err);
  return TT_OK;
}

tt_status
tt_model_gradients (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, bool backward, double *loss,
    tt_error * err)
{
  const tt_model_profile_mark k = tt_model_profile_begin (m);
  model_step_begin (m, TT_MODEL_STEP_GRADIENTS);
  const tt_status st =
      model_gradients (m, n, inputs, types, labels, backward, loss, err);
  tt_threads_end (m->thread_pool);
  tt_model_profile_end (m, k);
  return st;
}
