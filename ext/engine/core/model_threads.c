/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A compiled model's threads: the pool for the count asked, which
 * weights its threads split by rows (tt_weight.owned) and the scratch
 * each worker then needs, the model inputs fed as the threads' blocks,
 * and the fusions decided with the pool (relu_fusion.c,
 * deriv_copies.c, loss_tail.c).
 */
#include "tt_internal.h"

#include <stdlib.h>

/* Which weights n threads split by rows (tt_weight.owned): those with
 * rows (fully connected), at least a GEMM row tile a thread, whose
 * products at the planned batch are worth splitting; and the scratch
 * each worker then needs: its partial product in forward, its gradient
 * chunk in backward, and what layers split by samples need
 * (tt_layer_ops.worker_floats). Returns the floats a worker needs. */
static size_t
model_own_weights (tt_model * m, unsigned n)
{
  size_t need = 0;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_weights; k++) {
      tt_weight *w = &l->weights[k];
      w->owned = false;
      if (n < 2 || w->rows == 0)
        continue;
      const size_t cols = w->count / w->rows;
      /* rows of the product: samples times the input's rows per sample */
      const size_t out = (size_t) m->batch_size * l->in_dims[0].c *
          l->in_dims[0].h;
      if (w->rows < n * TT_GRAD_CHUNK_QUANTUM
          || (double) out * w->count < TT_GEMM_SPLIT_MIN)
        continue;
      w->owned = true;
      const size_t floats = cols * (out > w->chunk_rows ? out : w->chunk_rows);
      need = floats > need ? floats : need;
    }
    if (n >= 2 && l->ops->worker_floats) {
      const size_t floats = l->ops->worker_floats (l, m->batch_size);
      need = floats > need ? floats : need;
    }
  }
  return need;
}

/* tt_layer.out_thread_blocks and in_thread_blocks: on each dense layer
 * whose owned weight (split with scratch for its parts) reads a model
 * input, through views that nothing else reads, and on that input, unless
 * it needs a derivative or standardizes by samples. */
static void
model_thread_blocks (tt_model * m)
{
  for (uint32_t i = 0; i < m->n_layers; i++) {
    m->layers[i].out_thread_blocks = 0;
    m->layers[i].in_thread_blocks = false;
  }
  if (!tt_threads_scratch_floats (m->thread_pool))
    return;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    if (!l->n_weights || !l->weights[0].owned || l->n_inputs != 1 ||
        l->needs_derivative)
      continue;
    const tt_link *in = &l->inputs[0];
    tt_layer *p = &m->layers[in->layer];
    while (in->index == 0 && p->consumers[0] == 1 && p->n_inputs == 1 &&
        p->ops->output_is_view && p->ops->role != TT_ROLE_MULTIOUT) {
      in = &p->inputs[0];
      p = &m->layers[in->layer];
    }
    if (in->index != 0 || p->consumers[0] != 1 ||
        p->ops->role != TT_ROLE_INPUT || p->p.input.standardization ||
        tt_dims_count (p->out_dims[0]) % l->weights[0].rows)
      continue;
    p->out_thread_blocks = l->weights[0].rows;
    l->in_thread_blocks = true;
  }
}

/* Each of the have - 1 workers' scratch, per floats (none when 0) */
static tt_status
model_worker_scratch (tt_model * m, unsigned have, size_t per, tt_error * err)
{
  tt_threads_set_scratch (m->thread_pool, NULL, 0);
  free (m->worker_scratch);
  m->worker_scratch = NULL;
  if (!per || have < 2)
    return TT_OK;
  if (posix_memalign ((void **) &m->worker_scratch, 64,
          (have - 1) * per * sizeof (float)))
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory for the "
        "threads' scratch (%zu bytes)", m->path, (have - 1) * per *
        sizeof (float));
  tt_threads_set_scratch (m->thread_pool, m->worker_scratch, per);
  return TT_OK;
}

/* (Re)makes the pool for the count asked (one thread: none) and the
 * workers' scratch. */
tt_status
tt_model_make_threads (tt_model * m, tt_error * err)
{
  const unsigned n = tt_model_threads (m);
  if (tt_threads_count (m->thread_pool) != n) {
    tt_threads_free (m->thread_pool);
    m->thread_pool = m->run.threads = NULL;
    if (tt_threads_new (n, &m->thread_pool))
      return tt_fail (err, TT_ERR_NOMEM, "%s: could not start %u threads",
          m->path, n - 1);
    m->run.threads = m->thread_pool;
    tt_threads_set_timing (m->thread_pool, m->profiling);
  }
  const unsigned have = tt_threads_count (m->thread_pool);
  const size_t floats = model_own_weights (m, have);
  /* whole cache lines a worker: no line shared between two */
  const size_t per = (floats + 15) / 16 * 16;
  tt_status st = model_worker_scratch (m, have, per, err);
  if (st)
    return st;
  model_thread_blocks (m);
  tt_relu_fuse (m);
  /* the derivative copies (which need the fusions decided) after */
  const size_t copies = tt_deriv_copies (m, per);
  if (copies && (st = model_worker_scratch (m, have, per + copies, err)))
    return st;
  return tt_loss_tail (m, err);
}

tt_status
tt_model_set_threads (tt_model * m, unsigned n, tt_error * err)
{
  if (n > TT_THREADS_MAX)
    return tt_fail (err, TT_ERR_INVALID, "%s: %u threads asked; the engine "
        "runs 1 to %u (0: the default)", m->path, n, TT_THREADS_MAX);
  m->threads = n;
  return m->compiled ? tt_model_make_threads (m, err) : TT_OK;
}

unsigned
tt_model_threads (const tt_model * m)
{
  return m->threads ? m->threads : tt_engine_threads_default ();
}

void
tt_model_thread_steps (const tt_model * m, uint64_t * split,
    uint64_t * inline_steps)
{
  tt_threads_step_counts (m->thread_pool, split, inline_steps);
}
