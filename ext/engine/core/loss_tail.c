/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which small dense layer does the softmax cross-entropy loss after it
 * in its own jobs, on every thread (tt_layer.loss_tail, loss_in_tail;
 * the jobs: layers/fc_loss_tail.c). Only a layer whose input derivative
 * every thread already makes (core/deriv_copies.c: the MLP's output
 * layer after an owned dense layer), whose output the loss alone reads,
 * whose weight and bias train, whole (no update as you go, which needs
 * the derivative before the gradient), and not with activations dropped
 * or swapped (as the copies), nor with loss scaling (loss_scale.c). The
 * two sides say they can
 * (tt_layer_ops.runs_loss_tail on the dense layer, fits_loss_tail on
 * the loss).
 *
 * The plan stays the loss's own (plan/lifetime.c): the dense layer
 * writes the loss's output one step before the loss would, at its own
 * forward, and a tensor live then but not at the loss's forward would
 * have its last use there: one of the dense layer's operands, but its
 * input is read again in backward, its output is the loss's input and
 * its weights live always; so none shares bytes with the loss's output.
 * It writes its weight gradients in its derivative step, between their
 * gradient and update steps, and the loss's derivative outside the pool.
 */
#include "tt_internal.h"
#include "tt_test_hooks.h"

#include <stdlib.h>

static bool
tail_dense (const tt_layer * l)
{
  if (!l->ops->runs_loss_tail || !l->in_deriv_copies || l->update_in_gradient)
    return false;
  for (uint32_t k = 0; k < l->n_weights; k++)
    if (l->weights[k].grad < 0 || l->weights[k].chunk_rows)
      return false;
  return l->n_weights > 0;
}

tt_status
tt_loss_tail (tt_model * m, tt_error * err)
{
  free (m->loss_tail_dy);
  m->loss_tail_dy = NULL;
  tt_layer *dense = NULL, *loss = NULL;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    l->loss_tail = l->loss_in_tail = false;
    l->tail_prob = l->tail_label = -1;
    l->tail_dy = NULL;
    tt_layer *next;
    if (!dense && tail_dense (l) &&
        (next = tt_model_sole_consumer (m, (int) i)) &&
        next->ops->fits_loss_tail) {
      dense = l;
      loss = next;
    }
  }
  /* loss scaling multiplies the loss's derivative in the pool, which a
   * tail does not write */
  if (!dense || m->no_loss_tail || m->loss_scale > 0)
    return TT_OK;
  const tt_dims out = dense->out_dims[0];
  const size_t floats = (size_t) m->batch_size * out.c * out.h * out.w;
  if (posix_memalign ((void **) &m->loss_tail_dy, 64,
          (floats + 15) / 16 * 16 * sizeof (float)))
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory for the loss's "
        "derivative (%zu bytes)", m->path, floats * sizeof (float));
  dense->loss_tail = loss->loss_in_tail = true;
  dense->tail_prob = loss->out[0];
  dense->tail_label = loss->p.loss.label;
  dense->tail_dy = m->loss_tail_dy;
  return TT_OK;
}

void
tt_model_set_loss_tail (tt_model * m, bool on)
{
  m->no_loss_tail = !on;
}

/* one at most: the buffer is there when there is one */
unsigned
tt_model_loss_tails (const tt_model * m)
{
  return m->loss_tail_dy != NULL;
}
