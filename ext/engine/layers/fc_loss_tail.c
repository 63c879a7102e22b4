/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small dense layer and the softmax cross-entropy loss after it, in
 * two jobs on every thread (tt_layer.loss_tail, core/loss_tail.c): the
 * MLP's 10-class output layer and its loss, which otherwise ran on the
 * caller alone, a product too small to split and passes over 10 values
 * a row, while the workers waited. On the 2-core machine they were 27 ms
 * of the MLP's 351 at batch 128 on 2 threads (938 steps, fast state):
 * 7.7% of the split step on the caller alone, a cap near 1.9x.
 *
 * Forward, part t of the rows (whole cache lines of them): its logits
 * y = x W + b, their softmax p, its rows' loss (a partial, added in part
 * order) and, training, the loss's derivative dy = (p sum t - t) /
 * batch into tail_dy. In the MLP each part reads the input rows its
 * thread wrote: the owned dense layer before adds its partial products
 * by the same row blocks. dy goes to tail_dy, not to the loss's
 * derivative tensor: that one's planned lifetime begins in backward, and
 * may share memory with what forward still reads.
 *
 * Backward, every part reads the whole of dy: dx = dy W^T (masked for a
 * relu before), into the tensor for the caller and into its worker's
 * copy for the others (tt_layer.in_deriv_copies), its rows of dW = x^T
 * dy and its columns of db. The products split M, so their elements are
 * the serial layer's where the GEMM's do not depend on M (the portable
 * one; OpenBLAS's here, bit for bit over 2 epochs) and within rounding
 * otherwise; the bias sums columns row by row, as the layer does. The
 * loss adds its parts' partials in part order: within rounding of one
 * thread's.
 * In an inline step the parts run in order on the caller, and the
 * workers' copies are not made (the owned layer reads the tensor then).
 *
 * A forward below TAIL_FORWARD_SPLIT_MIN runs as one part, on the caller
 * alone: the hand-off and the rows the worker then reads from the other
 * core cost more than half of it saves.
 */
#include "tt_layer.h"

/* Multiply-adds of the forward's product from which its rows are split
 * over the threads. On the 2-core machine in the slow state, the MLP on
 * 2 threads against its build before, every step split, medians of 68
 * interleaved runs: at batch 128 (163,840) split 1.014, on the caller
 * 1.006; at batch 32 (40,960) split 0.987, on the caller 1.001. */
#define TAIL_FORWARD_SPLIT_MIN 65536

typedef struct
{
  const tt_run_ctx *c;
  const tt_layer *l;
  size_t rows, k, unit;
  double loss[TT_THREADS_MAX];  /* the forward's parts' */
} tail_job;

static void
tail_job_init (tail_job * j, const tt_run_ctx * c, const tt_layer * l)
{
  j->c = c;
  j->l = l;
  j->rows = (size_t) c->batch * l->in_dims[0].c * l->in_dims[0].h;
  j->k = l->in_dims[0].w;
  j->unit = l->p.fc.unit;
}

/* part's rows: whole cache lines of the unit-wide rows of y, p and dy,
 * so that no line is written by two threads */
static void
tail_rows (const tail_job * j, unsigned part, unsigned n_parts, size_t *r0,
    size_t *r1)
{
  size_t quantum = 16;
  for (size_t u = j->unit; quantum > 1 && u % 2 == 0; u /= 2)
    quantum /= 2;
  tt_threads_range (j->rows, quantum, part, n_parts, r0, r1);
}

static void
tail_forward_part (void *arg, unsigned part, unsigned n_parts)
{
  tail_job *j = arg;
  const tt_run_ctx *c = j->c;
  const tt_layer *l = j->l;
  size_t r0, r1;
  tail_rows (j, part, n_parts, &r0, &r1);
  j->loss[part] = 0.0;
  if (r0 >= r1)
    return;
  const size_t n = r1 - r0, unit = j->unit;
  float *y = tt_run_data (c, l->out[0]) + r0 * unit;
  float beta = 0.0f;
  if (l->n_weights > 1) {
    const float *b = tt_run_data (c, l->weights[1].value);
    for (size_t r = 0; r < n; r++)
      for (size_t i = 0; i < unit; i++)
        y[r * unit + i] = b[i];
    beta = 1.0f;
  }
  tt_run_gemm (c, false, false, (int) n, (int) unit, (int) j->k, 1.0f,
      tt_run_data (c, l->in[0]) + r0 * j->k, (int) j->k,
      tt_run_data (c, l->weights[0].value), (int) unit, beta, y, (int) unit);
  float *p = tt_run_data (c, l->tail_prob) + r0 * unit;
  tt_activation_forward (TT_ACT_SOFTMAX, n, unit, y, p);
  if (!c->have_labels)
    return;
  const float *t = tt_run_data (c, l->tail_label) + r0 * unit;
  j->loss[part] = tt_cross_softmax_loss_rows (y, p, t, n, unit);
  if (c->training)
    tt_cross_softmax_derivative_rows (p, t, l->tail_dy + r0 * unit, n, unit,
        1.0f / (float) c->batch);
}

void
tt_fc_loss_tail_forward (const tt_run_ctx * c, const tt_layer * l)
{
  tail_job j;
  tail_job_init (&j, c, l);
  unsigned parts = 1;
  if ((double) j.rows * j.k * j.unit >= TAIL_FORWARD_SPLIT_MIN) {
    parts = tt_threads_count (c->threads);
    tt_threads_run_owned (c->threads, tail_forward_part, &j);
  } else
    tail_forward_part (&j, 0, 1);
  if (!c->have_labels)
    return;
  double sum = 0.0;
  for (unsigned t = 0; t < parts; t++)
    sum += j.loss[t];
  *c->loss = sum / c->batch;
}

static void
tail_backward_part (void *arg, unsigned part, unsigned n_parts)
{
  const tail_job *j = arg;
  const tt_run_ctx *c = j->c;
  const tt_layer *l = j->l;
  const size_t unit = j->unit, k = j->k;
  const float *dy = l->tail_dy;
  const float *w = tt_run_data (c, l->weights[0].value);
  const bool copy = part && !tt_threads_step_inline (c->threads);
  if (!part || copy) {
    float *dx = copy ? tt_threads_scratch (c->threads, part) +
        l->deriv_copy_at : tt_run_data (c, l->in_deriv[0]);
    tt_run_gemm (c, false, true, (int) j->rows, (int) k, (int) unit, 1.0f, dy,
        (int) unit, w, (int) unit, 0.0f, dx, (int) k);
    /* the mask in a pass of its own: see fc_derivative_copy_part */
    if (l->relu_mask_in)
      tt_relu_mask (j->rows, k, tt_run_data (c, l->in[0]), k, dx, k);
  }
  size_t k0, k1;
  tt_threads_range (k, 16, part, n_parts, &k0, &k1);
  if (k0 < k1)
    tt_run_gemm (c, true, false, (int) (k1 - k0), (int) unit, (int) j->rows,
        1.0f,
        tt_run_data (c, l->in[0]) + k0, (int) k, dy, (int) unit, 0.0f,
        tt_run_data (c, l->weights[0].grad) + k0 * unit, (int) unit);
  if (l->n_weights > 1) {
    size_t c0, c1;
    tt_threads_range (unit, 16, part, n_parts, &c0, &c1);
    tt_column_sums (dy, j->rows, unit, c0, c1,
        tt_run_data (c, l->weights[1].grad));
  }
}

void
tt_fc_loss_tail_backward (const tt_run_ctx * c, const tt_layer * l)
{
  tail_job j;
  tail_job_init (&j, c, l);
  tt_threads_run_owned (c->threads, tail_backward_part, &j);
}
