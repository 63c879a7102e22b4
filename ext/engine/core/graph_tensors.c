/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Declares every tensor of a training step and the (layer, phase) uses
 * that bound its lifetime, from what each layer type really reads:
 *
 *   weights, optimizer state   every step
 *   weight gradient            calcGradient .. applyGradient of its layer;
 *                              a chunked one (update as you go: a chunk of
 *                              rows, each applied as soon as computed)
 *                              calcGradient alone
 *   layer output               forward of its layer .. forward of its
 *                              consumer, or later if the consumer's backward
 *                              reads its input (fully_connected, batch norm,
 *                              swish, gelu, mse) or the layer's backward
 *                              reads its own output (relu, sigmoid, softmax,
 *                              cross losses ...)
 *   output derivative          calcDerivative of its consumer ..
 *                              calcGradient/calcDerivative of its layer
 *   scratch (im2col, argmax,   forward .. the last backward phase of its
 *     masks, batch statistics)   layer that runs
 * Backward uses count only where that phase runs: calcGradient needs a
 * trainable weight, calcDerivative gradients flowing to the inputs.
 *   inputs, labels             written before the step .. last reader
 *   the model output           forward of the loss .. end of the step
 *
 * In-place layers (inplace.c) and views (flatten, reshape, multiout, mse)
 * declare no memory of their own: their uses extend their root's.
 */
#include "tt_internal.h"

#include <stdio.h>

static bool
tensors_is_loss (const tt_layer * l)
{
  return l->ops->role == TT_ROLE_LOSS;
}

static unsigned
tensors_backward_reads (const tt_layer * l)
{
  return l->ops->backward_reads ? l->ops->backward_reads (l) : 0;
}

/* Backward phases that really run for l: calcGradient only with a
 * trainable weight, calcDerivative only when gradients flow to its inputs.
 * A frozen layer's tensors must not be kept alive for a backward pass that
 * never happens. */
static bool
tensors_runs_gradient (const tt_layer * l)
{
  for (uint32_t w = 0; w < l->n_weights; w++)
    if (l->weights[w].grad >= 0)
      return true;
  return false;
}

static void
tensors_declare_weights (tt_model * m, tt_layer * l, int li)
{
  for (uint32_t w = 0; w < l->n_weights; w++) {
    tt_weight *wt = &l->weights[w];
    char suffix[64];
    wt->value = tt_tensor_declare (m, l->name, wt->suffix, TT_TENSOR_WEIGHT,
        wt->count);
    tt_tensor_use (m, wt->value, li, TT_PHASE_ALWAYS);
    if (!wt->trainable || m->inference)
      continue;
    snprintf (suffix, sizeof suffix, "%s:grad", wt->suffix);
    /* update as you go: the gradient is a chunk of rows, applied as soon
     * as computed; clip_grad_by_norm needs every gradient whole first */
    wt->chunk_rows = 0;
    if (m->update_as_you_go && !tt_model_gradients_whole (m) &&
        l->ops->chunked_gradient && wt->rows > 0)
      wt->chunk_rows = tt_grad_chunk_rows (wt->rows, wt->count / wt->rows);
    l->update_in_gradient |= wt->chunk_rows > 0;
    wt->grad = tt_tensor_declare (m, l->name, suffix, TT_TENSOR_GRADIENT,
        wt->chunk_rows ? wt->chunk_rows * (wt->count / wt->rows) : wt->count);
    tt_tensor_use (m, wt->grad, li, TT_PHASE_GRADIENT);
    if (wt->chunk_rows == 0)
      tt_tensor_use (m, wt->grad, li, TT_PHASE_APPLY);
    /* clip_grad_by_norm, loss scaling: every update waits for every
     * gradient; tt_model_keep_gradients: the caller reads every gradient
     * after the step, so no later layer's tensor may take its bytes */
    if (tt_model_gradients_whole (m) || m->keep_gradients)
      tt_tensor_use (m, wt->grad, li, TT_PHASE_END);
    uint32_t states = tt_optimizer_state_count (&m->opt);
    for (uint32_t s = 0; s < states; s++) {
      snprintf (suffix, sizeof suffix, "%s:%s", wt->suffix,
          states == 1 ? "momentum" : s == 0 ? "m" : "v");
      wt->opt[s] = tt_tensor_declare (m, l->name, suffix,
          TT_TENSOR_OPTIMIZER, wt->count);
      tt_tensor_use (m, wt->opt[s], li, TT_PHASE_ALWAYS);
    }
  }
}

/* output o of layer li is some layer's input (an unread later output of
 * a layer with several has no derivative: the layer takes it as zero) */
static bool
tensors_output_read (const tt_model * m, int li, uint32_t o)
{
  for (uint32_t i = 0; i < m->n_layers; i++)
    for (uint32_t k = 0; k < m->layers[i].n_inputs; k++)
      if (m->layers[i].inputs[k].layer == li &&
          m->layers[i].inputs[k].index == o)
        return true;
  return false;
}

/* Declares outputs and output derivatives of l (inputs are its producers'
 * outputs, declared earlier because layers are stored in a topological
 * order). */
static void
tensors_declare_outputs (tt_model * m, tt_layer * l, int li)
{
  const size_t batch = m->batch_size;
  for (uint32_t in = 0; in < l->n_inputs; in++) {
    tt_layer *p = &m->layers[l->inputs[in].layer];
    l->in[in] = p->out[l->inputs[in].index];
    if (l->needs_derivative)
      l->in_deriv[in] = p->out_deriv[l->inputs[in].index];
  }
  for (uint32_t o = 0; o < l->n_outputs; o++) {
    char suffix[32], dsuffix[40];
    size_t count = batch * tt_dims_count (l->out_dims[o]);
    if (l->n_outputs > 1)
      snprintf (suffix, sizeof suffix, "out%u", o);
    else
      snprintf (suffix, sizeof suffix, "out");
    snprintf (dsuffix, sizeof dsuffix, "%s:deriv", suffix);
    bool view = l->ops->output_is_view || l->in_place;
    if (l->ops->role == TT_ROLE_INPUT) {
      l->out[o] = tt_tensor_declare (m, l->name, suffix, TT_TENSOR_INPUT,
          count);
      tt_tensor_use (m, l->out[o], li, TT_PHASE_BEGIN);
    } else if (view) {
      l->out[o] = tt_tensor_view (m, l->name, suffix, l->in[0]);
    } else {
      l->out[o] = tt_tensor_declare (m, l->name, suffix,
          TT_TENSOR_ACTIVATION, count);
    }
    tt_tensor_use (m, l->out[o], li, TT_PHASE_FORWARD);
    if ((tensors_backward_reads (l) & TT_READS_OUTPUT) && l->needs_derivative)
      tt_tensor_use (m, l->out[o], li, TT_PHASE_DERIVATIVE);

    if (!l->grad_flows || tensors_is_loss (l) ||
        (o > 0 && !tensors_output_read (m, li, o)))
      continue;
    /* a view's derivative is a view of its input's derivative, except for
     * multiout, whose outputs' derivatives are summed */
    if (l->in_deriv[0] >= 0 && (l->in_place || (l->ops->output_is_view &&
                l->ops->role != TT_ROLE_MULTIOUT)))
      l->out_deriv[o] = tt_tensor_view (m, l->name, dsuffix, l->in_deriv[0]);
    else
      l->out_deriv[o] = tt_tensor_declare (m, l->name, dsuffix,
          TT_TENSOR_DERIVATIVE, count);
    if (tensors_runs_gradient (l))
      tt_tensor_use (m, l->out_deriv[o], li, TT_PHASE_GRADIENT);
    tt_tensor_use (m, l->out_deriv[o], li, TT_PHASE_DERIVATIVE);
  }
}

static void
tensors_declare_reads (tt_model * m, tt_layer * l, int li)
{
  const unsigned reads = tensors_backward_reads (l);
  const bool grad = tensors_runs_gradient (l), deriv = l->needs_derivative;
  for (uint32_t in = 0; in < l->n_inputs; in++) {
    tt_tensor_use (m, l->in[in], li, TT_PHASE_FORWARD);
    if ((reads & TT_READS_INPUT) && grad)
      tt_tensor_use (m, l->in[in], li, TT_PHASE_GRADIENT);
    if ((reads & TT_READS_INPUT) && deriv)
      tt_tensor_use (m, l->in[in], li, TT_PHASE_DERIVATIVE);
    if (l->in_deriv[in] >= 0)
      tt_tensor_use (m, l->in_deriv[in], li, TT_PHASE_DERIVATIVE);
  }
  if (tensors_is_loss (l)) {
    l->p.loss.label = tt_tensor_declare (m, l->name, "label",
        TT_TENSOR_LABEL, m->batch_size * tt_dims_count (l->out_dims[0]));
    tt_tensor_use (m, l->p.loss.label, li, TT_PHASE_BEGIN);
    tt_tensor_use (m, l->p.loss.label, li, TT_PHASE_FORWARD);
    tt_tensor_use (m, l->p.loss.label, li, TT_PHASE_DERIVATIVE);
    /* the prediction stays readable after the step (tt_model_output) */
    tt_tensor_use (m, l->out[0], li, TT_PHASE_END);
  }
  if (l->ops->declare) {
    struct tt_init_owner owner = { m, li };
    tt_init_ctx c = { m->path, m->batch_size, &owner };
    l->ops->declare (&c, l);
  }
  for (int s = 0; s < TT_MAX_SCRATCH; s++)
    if (l->scratch[s] >= 0) {
      tt_tensor_use (m, l->scratch[s], li, TT_PHASE_FORWARD);
      if (grad)
        tt_tensor_use (m, l->scratch[s], li, TT_PHASE_GRADIENT);
      if (deriv)
        tt_tensor_use (m, l->scratch[s], li, TT_PHASE_DERIVATIVE);
    }
}

uint32_t
tt_grad_chunk_rows (uint32_t rows, size_t cols)
{
  const size_t q = TT_GRAD_CHUNK_QUANTUM;
  size_t chunk = TT_GRAD_CHUNK_FLOATS / (cols ? cols : 1) / q * q;
  if (chunk < q)
    chunk = q;
  return chunk < rows ? (uint32_t) chunk : 0;
}

void
tt_graph_declare_tensors (tt_model * m)
{
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    l->update_in_gradient = false;
    tensors_declare_weights (m, l, (int) i);
    tensors_declare_outputs (m, l, (int) i);
    tensors_declare_reads (m, l, (int) i);
  }
}
