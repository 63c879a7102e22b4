/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small dense layer's input derivative computed by every thread, each
 * into memory of its own, when an owned dense layer reads it whole in
 * backward (the MLP's output layer before its second dense layer).
 *
 * That derivative (dy W^T, 128 x 128 at batch 128 from 10 classes) is one
 * product too small to split, so the caller made it, and each of the
 * owned layer's parts then read all of it: its rows of dW = x^T dy, its
 * columns of dx = dy W^T. So every step the caller wrote lines that the
 * worker had read in the step before, and the worker read them from the
 * caller's cache. On the 2-core machine, two CPUs on two dies (slow
 * state), that product took 8.6-9.1 us a step on 2 threads against
 * 2.4-2.7 on one, and the worker's parts of the owned layer's backward
 * up to 29% longer than the caller's in 3 of 4 runs. The product costs
 * 2 us; each worker, waiting for
 * the caller's serial passes (the loss, the output layer) anyway, makes
 * its own copy in its scratch (tt_threads_scratch, at deriv_copy_at)
 * with the caller's, and the owned layer's parts read their thread's:
 * the same product of the same values, bit for bit. In inline steps
 * (tt_threads_step_inline) nobody copies and every part reads the
 * tensor, which always holds the caller's.
 *
 * Only where that derivative has no other reader: the owned layer's
 * output goes to the small layer alone, directly or through a relu in
 * place whose backward the small layer makes (core/relu_fusion.c). Not
 * with activations dropped or swapped (their reruns go layer by layer).
 */
#include "tt_internal.h"
#include "tt_threads.h"
#include "tt_test_hooks.h"

/* a dense layer that can make its input derivative on every worker and
 * read its output derivative's copies (tt_layer_ops.copies_derivative) */
static bool
copies_dense (const tt_layer * l)
{
  return l->ops->copies_derivative && l->n_weights > 0;
}

size_t
tt_deriv_copies (tt_model * m, size_t at)
{
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    l->in_deriv_copies = l->out_deriv_copies = false;
    l->deriv_copy_at = 0;
  }
  if (m->no_fusion || !tt_threads_scratch_floats (m->thread_pool) ||
      m->n_dropped || m->plan.swapped)
    return 0;
  size_t need = 0;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *owned = &m->layers[i];
    if (!copies_dense (owned) || !owned->weights[0].owned)
      continue;
    /* the small layer reads the owned one's output, or the relu's in
     * place over it, whose input derivative is then its output's */
    tt_layer *next = tt_model_sole_consumer (m, (int) i);
    if (next && tt_layer_activation (next) == TT_ACT_RELU && next->in_place &&
        (next->relu_fused & TT_FUSED_BACKWARD))
      next = tt_model_sole_consumer (m, (int) (next - m->layers));
    if (!next || !copies_dense (next) || next->weights[0].owned ||
        !next->needs_derivative || next->in_thread_blocks ||
        next->in_deriv[0] < 0)
      continue;
    const tt_dims in = next->in_dims[0];
    const size_t floats = (size_t) m->batch_size * in.c * in.h * in.w;
    next->in_deriv_copies = owned->out_deriv_copies = true;
    next->deriv_copy_at = owned->deriv_copy_at = at + need;
    need += (floats + 15) / 16 * 16;
  }
  return need;
}

unsigned
tt_model_deriv_copies (const tt_model * m)
{
  unsigned n = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    n += m->layers[i].in_deriv_copies;
  return n;
}
