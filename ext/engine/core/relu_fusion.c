/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A relu after a dense layer whose weight the threads own by rows
 * (tt_weight.owned), or before one, done by those layers
 * (tt_layer.relu_in_sum, relu_mask_in). On its own, the relu is a job of
 * its own each way, split by ranges of the batch, while the dense layers
 * split by their weight's rows: each relu part reads what the other core
 * wrote, and the job's hand-off costs more than its arithmetic. On the
 * 2-core machine the MLP's relus took 11 ms of its 282 on 2 threads at
 * batch 128 (600 steps), against 3 of 400 on one. Fused, the forward is
 * a last step of the pass that adds the threads' partial products, on
 * the lines that pass writes; the backward, in the stores of the
 * product that makes the next layer's input derivative
 * (tt_gemm_relu_masked), each thread's part of it, or, when it is one
 * product too small to split (the MLP's output layer), that product, on
 * the caller.
 *
 * The plan is the same: the relu runs in place, so its output is the
 * dense layer's, and its input derivative its output derivative; the
 * next layer reads its input in backward anyway, and the relu's output
 * lives until the relu's backward in the plan. So a fused pass reads and
 * writes only what the relu would, within the lifetimes planned for it.
 * Not with activations dropped or swapped (plan/remat.c): their reruns
 * go layer by layer.
 */
#include "tt_internal.h"
#include "tt_threads.h"
#include "tt_test_hooks.h"

/* a dense layer that can do a relu (tt_layer_ops.fuses_relu) and whose
 * threads own its weight's rows */
static bool
fusion_owned_dense (const tt_layer * l)
{
  return l->ops->fuses_relu && l->n_weights > 0 && l->weights[0].owned;
}

/* a dense layer that can do a relu and whose input derivative is one
 * product on the caller (too small to split: tt_gemm_split), so that
 * the mask runs there, in that product's stores */
static bool
fusion_small_dense (const tt_model * m, const tt_layer * l)
{
  return l->ops->fuses_relu && l->n_weights > 0 && !l->weights[0].owned &&
      l->ops->derivative_product &&
      l->ops->derivative_product (l, m->batch_size) < TT_GEMM_SPLIT_MIN;
}

void
tt_relu_fuse (tt_model * m)
{
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    l->relu_in_sum = l->relu_mask_in = false;
    l->relu_fused = 0;
  }
  if (m->no_fusion || !tt_threads_scratch_floats (m->thread_pool) ||
      m->n_dropped || m->plan.swapped)
    return;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *r = &m->layers[i];
    if (tt_layer_activation (r) != TT_ACT_RELU || !r->in_place
        || r->n_inputs != 1 || r->inputs[0].index != 0)
      continue;
    tt_layer *before = &m->layers[r->inputs[0].layer];
    if (fusion_owned_dense (before) &&
        tt_model_sole_consumer (m, r->inputs[0].layer) == r) {
      before->relu_in_sum = true;
      r->relu_fused |= TT_FUSED_FORWARD;
    }
    tt_layer *after = tt_model_sole_consumer (m, (int) i);
    if (after && r->needs_derivative && after->needs_derivative &&
        (fusion_owned_dense (after) || fusion_small_dense (m, after)) &&
        !after->in_thread_blocks) {
      after->relu_mask_in = true;
      r->relu_fused |= TT_FUSED_BACKWARD;
    }
  }
}

void
tt_model_set_relu_fusion (tt_model * m, bool on)
{
  m->no_fusion = !on;
}

unsigned
tt_model_relu_fusions (const tt_model * m)
{
  unsigned n = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    n += (m->layers[i].relu_fused & TT_FUSED_FORWARD ? 1 : 0) +
        (m->layers[i].relu_fused & TT_FUSED_BACKWARD ? 1 : 0);
  return n;
}
