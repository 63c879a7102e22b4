/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fully_connected: y = x W + b over the width axis, so an input of
 * c:h:w gives c:h:unit (nntrainer's rule). W is [w][unit], unit fastest,
 * as in nntrainer's BIN.
 */
#include "tt_layer.h"
#include "tt_split.h"

static const char *const fc_keys[] = { "unit", "lora_rank", "lora_alpha",
  NULL
};

static tt_status
fc_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  tt_status st = tt_section_uint (s, "unit", 1, 1u << 24, &l->p.fc.unit,
      err);
  if (st)
    return st;
  if (!tt_section_has (s, "unit"))
    return tt_section_error (s, "unit", err, TT_ERR_INVALID,
        "missing key (the number of outputs)");
  if ((st = tt_lora_parse (l, s, l->p.fc.unit, err)))
    return st;
  /* with adapters: their own passes (fc_lora.c) */
  if (l->p.fc.lora_rank)
    l->ops = &tt_fc_lora_layer_ops;
  return TT_OK;
}

static tt_status
fc_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims in = l->in_dims[0];
  const uint32_t unit = l->p.fc.unit;
  if ((uint64_t) in.w * unit > (1u << 30))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] unit: a %u x %u weight is too large", c->path, l->section,
        in.w, unit);
  l->out_dims[0] = (tt_dims) {
  in.c, in.h, unit};
  tt_weight *w = tt_layer_add_weight (l, "weight", (size_t) in.w * unit,
      l->weight_init, in.w, unit, true);
  w->decay = l->weight_decay;
  w->l2 = l->l2_constant;
  w->rows = in.w;
  if (!l->disable_bias) {
    tt_weight *b = tt_layer_add_weight (l, "bias", unit, l->bias_init, in.w,
        unit, true);
    b->decay = l->bias_decay;
  }
  /* LoRA: the adapters after them (fc_lora.c) */
  return l->p.fc.lora_rank ? tt_lora_fc_weights (c, l, err) : TT_OK;
}

/* Below this many elements of y the workers' partial products are added
 * on the caller alone (as tt_activation's split) */
#define FC_SUM_SPLIT_MIN 16384

/* Whether l's weight is split by its rows over the threads (owned) */
static bool
fc_owned (const tt_run_ctx * c, const tt_layer * l)
{
  return l->weights[0].owned && tt_threads_scratch_floats (c->threads);
}

/* What a split product of an owned weight (tt_weight.owned) shares
 * between its parts. */
typedef struct
{
  const tt_run_ctx *c;
  const tt_layer *l;
  int rows, k, unit;            /* x is rows x k, W k x unit */
  float beta;                   /* forward: y holds the bias */
  const float *bias;            /* forward, owned: added with the partials */
  float *db;                    /* backward, owned: the bias gradient */
} fc_job;

static void
fc_job_init (fc_job * j, const tt_run_ctx * c, const tt_layer * l)
{
  j->c = c;
  j->l = l;
  j->rows = (int) (c->batch * l->in_dims[0].c * l->in_dims[0].h);
  j->k = (int) l->in_dims[0].w;
  j->unit = (int) l->p.fc.unit;
  j->beta = 0.0f;
  j->bias = NULL;
  j->db = NULL;
}

/* x's columns from c on, of a part owning W's rows [r0, r1), and their
 * row stride: in x's rows, or in the part's own block of them
 * (tt_layer.in_thread_blocks) */
static const float *
fc_input_columns (const fc_job * j, size_t r0, size_t r1, size_t c, int *ld)
{
  const float *x = tt_run_data (j->c, j->l->in[0]);
  if (!j->l->in_thread_blocks) {
    *ld = j->k;
    return x + c;
  }
  *ld = (int) (r1 - r0);
  return x + (size_t) j->rows * r0 + (c - r0);
}

/* dy as part reads it: its worker's copy (tt_layer.out_deriv_copies,
 * core/deriv_copies.c) in a split step, else the tensor */
static const float *
fc_out_deriv (const fc_job * j, unsigned part)
{
  if (part && j->l->out_deriv_copies && !tt_threads_step_inline (j->c->threads))
    return tt_threads_scratch (j->c->threads, part) + j->l->deriv_copy_at;
  return tt_run_data (j->c, j->l->out_deriv[0]);
}

/* forward, owned: thread part's rows r of W give x[:, r] W[r, :], thread
 * 0's over the bias in y, the others' in their own scratch */
static void
fc_forward_part (void *arg, unsigned part, unsigned n_parts)
{
  const fc_job *j = arg;
  const tt_weight *w = &j->l->weights[0];
  size_t r0, r1;
  tt_weight_owned_rows (w, part, n_parts, &r0, &r1);
  float *out = part ? tt_threads_scratch (j->c->threads, part) :
      tt_run_data (j->c, j->l->out[0]);
  int ld;
  const float *x = fc_input_columns (j, r0, r1, r0, &ld);
  tt_run_gemm (j->c, false, false, j->rows, j->unit, (int) (r1 - r0), 1.0f,
      x, ld,
      tt_run_data (j->c, w->value) + r0 * (size_t) j->unit, j->unit,
      part ? 0.0f : j->beta, out, j->unit);
}

/* forward, owned: the bias and the workers' partial products added to
 * y in thread order, by ranges of y. The bias comes first, as when y
 * held it before thread 0's product (y = x W + b, the same sums bit for
 * bit): added here, in the pass that reads y anyway, rather than
 * written by the caller alone before the product, the caller skips a
 * pass over y whose lines the workers' last writes (the step before)
 * left in their caches: on the 2-core machine that pass took the MLP's
 * first layer at batch 128 12 us a step on 2 threads (4 on one), and
 * without it the MLP trained 2-4% faster on 2 threads (medians of 8 and
 * 4 pairs). The relu after (tt_layer.relu_in_sum) is taken in the last
 * addition, as tt_activation_forward takes it. Compiled for the wide
 * registers too (TT_VECTOR_CLONES; additions and selects, the same
 * results), as is the bias gradient (tt_column_sums): on the baseline's
 * SSE2 the dense layer's own functions took 866 of 34.6k perf samples of
 * the MLP's steps at batch 32 run inline on 2 threads, 350 after. */
static inline float
fc_relu_if (float v, bool relu)
{
  return relu && !(v > 0.0f) ? 0.0f : v;
}

static TT_VECTOR_CLONES void
fc_sum_partials (void *arg, size_t begin, size_t end)
{
  const fc_job *j = arg;
  float *restrict y = tt_run_data (j->c, j->l->out[0]);
  const unsigned n = tt_threads_count (j->c->threads);
  const bool relu = j->l->relu_in_sum;
  unsigned t = 1;
  if (j->bias) {
    const size_t unit = (size_t) j->unit;
    const float *restrict p = tt_threads_scratch (j->c->threads, 1);
    const float *restrict b = j->bias;
    const bool last = relu && n == 2;
    for (size_t row = begin - begin % unit; row < end; row += unit) {
      const size_t lo = row > begin ? row : begin;
      const size_t hi = row + unit < end ? row + unit : end;
      for (size_t i = lo; i < hi; i++)
        y[i] = fc_relu_if ((y[i] + b[i - row]) + p[i], last);
    }
    t = 2;
  }
  for (; t < n; t++) {
    const float *restrict p = tt_threads_scratch (j->c->threads, t);
    const bool last = relu && t == n - 1;
    for (size_t i = begin; i < end; i++)
      y[i] = fc_relu_if (y[i] + p[i], last);
  }
}

static void
fc_forward (const tt_run_ctx * c, tt_layer * l)
{
  if (l->loss_tail) {
    tt_fc_loss_tail_forward (c, l);
    return;
  }
  fc_job j;
  fc_job_init (&j, c, l);
  const int rows = j.rows, k = j.k, unit = j.unit;
  float *y = tt_run_data (c, l->out[0]);
  const bool owned = fc_owned (c, l);
  if (owned && l->n_weights > 1)
    j.bias = tt_run_data (c, l->weights[1].value);
  else if (l->n_weights > 1) {
    const float *bias = tt_run_data (c, l->weights[1].value);
    for (int r = 0; r < rows; r++)
      for (int i = 0; i < unit; i++)
        y[(size_t) r * unit + i] = bias[i];
    j.beta = 1.0f;
  }
  if (owned) {
    tt_threads_run_owned (c->threads, fc_forward_part, &j);
    tt_split (c->threads, (size_t) rows * unit, 16, FC_SUM_SPLIT_MIN,
        fc_sum_partials, &j);
    return;
  }
  tt_run_gemm_split (c, c->threads, false, false, rows, unit, k, 1.0f,
      tt_run_data (c, l->in[0]), k, tt_run_data (c, l->weights[0].value),
      unit, j.beta, y, unit);
}

/* dW's rows [r0, r1) = x[:, r0:r1]^T dy, each product split over pool
 * (NULL inside a part). Update as you go: chunk_rows at a time, each
 * chunk written to buf and applied before the next; every element is
 * the same reduction over the batch as in the whole product, as chunks
 * start on the GEMM's own row tiles (TT_GRAD_CHUNK_QUANTUM from r0: an
 * owned part's r0 is on TT_OWNED_ROW_QUANTUM's, which OpenBLAS's 24-row
 * tiles may round otherwise). Else into the gradient tensor's rows. */
static void
fc_weight_gradient_rows (const fc_job * j, tt_threads * pool,
    const float *dy, size_t r0, size_t r1, float *buf)
{
  const tt_run_ctx *c = j->c;
  const tt_weight *w = &j->l->weights[0];
  const size_t unit = (size_t) j->unit;
  int ld;
  if (!w->chunk_rows) {
    const float *x = fc_input_columns (j, r0, r1, r0, &ld);
    tt_run_gemm_split (c, pool, true, false, (int) (r1 - r0), j->unit,
        j->rows, 1.0f, x, ld, dy, j->unit, 0.0f,
        tt_run_data (c, w->grad) + r0 * unit, j->unit);
    return;
  }
  for (size_t r = r0; r < r1; r += w->chunk_rows) {
    const size_t mr = r1 - r < w->chunk_rows ? r1 - r : w->chunk_rows;
    const float *x = fc_input_columns (j, r0, r1, r, &ld);
    tt_run_gemm_split (c, pool, true, false, (int) mr, j->unit, j->rows,
        1.0f, x, ld, dy, j->unit, 0.0f, buf, j->unit);
    tt_run_apply_chunk (c, w, r * unit, mr * unit, buf);
  }
}

/* db's columns [c0, c1) */
static void
fc_bias_gradient (const fc_job * j, const float *dy, size_t c0, size_t c1)
{
  tt_column_sums (dy, (size_t) j->rows, (size_t) j->unit, c0, c1, j->db);
}

/* backward, owned: thread part's rows of dW, its chunks in its own
 * scratch (thread 0's in the gradient tensor), applied by the thread;
 * and its columns of db, which the caller summed alone after the job
 * before (the MLP's first layer's: 3 us of its step at batch 128 on 2
 * threads, on the 2-core machine) */
static void
fc_gradient_part (void *arg, unsigned part, unsigned n_parts)
{
  const fc_job *j = arg;
  size_t r0, r1;
  tt_weight_owned_rows (&j->l->weights[0], part, n_parts, &r0, &r1);
  const float *dy = fc_out_deriv (j, part);
  fc_weight_gradient_rows (j, NULL, dy, r0, r1, part ?
      tt_threads_scratch (j->c->threads, part) :
      tt_run_data (j->c, j->l->weights[0].grad));
  if (j->db) {
    size_t c0, c1;
    tt_threads_range ((size_t) j->unit, 16, part, n_parts, &c0, &c1);
    fc_bias_gradient (j, dy, c0, c1);
  }
}

static void
fc_calc_gradient (const tt_run_ctx * c, tt_layer * l)
{
  /* with the loss: made with the input derivative, in one job
   * (tt_fc_loss_tail_backward) */
  if (l->loss_tail)
    return;
  fc_job j;
  fc_job_init (&j, c, l);
  const tt_weight *w = &l->weights[0];
  if (l->n_weights > 1 && l->weights[1].grad >= 0)
    j.db = tt_run_data (c, l->weights[1].grad);
  if (w->grad >= 0 && fc_owned (c, l)) {
    tt_threads_run_owned (c->threads, fc_gradient_part, &j);
    return;
  }
  const float *dy = tt_run_data (c, l->out_deriv[0]);
  if (w->grad >= 0)
    fc_weight_gradient_rows (&j, c->threads, dy, 0, (size_t) j.k,
        tt_run_data (c, w->grad));
  if (j.db)
    fc_bias_gradient (&j, dy, 0, (size_t) j.unit);
}

/* For the relu before (tt_layer.relu_mask_in): its output, this layer's
 * input, which masks dx in the product's stores (tt_gemm_relu_masked),
 * with its row stride (k); NULL without */
static const float *
fc_relu_keep (const fc_job * j)
{
  return j->l->relu_mask_in ? tt_run_data (j->c, j->l->in[0]) : NULL;
}

/* backward, owned: thread part's columns of dx = dy W^T, from its rows
 * of W, masked for the relu before */
static void
fc_derivative_part (void *arg, unsigned part, unsigned n_parts)
{
  const fc_job *j = arg;
  const tt_weight *w = &j->l->weights[0];
  size_t r0, r1;
  tt_weight_owned_rows (w, part, n_parts, &r0, &r1);
  float *dx = tt_run_data (j->c, j->l->in_deriv[0]);
  const float *keep = fc_relu_keep (j);
  if (tt_run_gemm_inputs (j->c) != TT_GEMM_FP32) {
    /* half-width inputs: the product, then the mask */
    tt_run_gemm (j->c, false, true, j->rows, (int) (r1 - r0), j->unit,
        1.0f, fc_out_deriv (j, part), j->unit,
        tt_run_data (j->c, w->value) + r0 * (size_t) j->unit, j->unit, 0.0f,
        dx + r0, j->k);
    if (keep)
      tt_relu_mask ((size_t) j->rows, r1 - r0, keep + r0, (size_t) j->k,
          dx + r0, (size_t) j->k);
    return;
  }
  tt_gemm_relu_masked (false, true, j->rows, (int) (r1 - r0), j->unit, 1.0f,
      fc_out_deriv (j, part), j->unit,
      tt_run_data (j->c, w->value) + r0 * (size_t) j->unit, j->unit, 0.0f,
      dx + r0, j->k, keep ? keep + r0 : NULL, j->k);
}

/* backward, a product too small to split whose result an owned layer's
 * parts read whole (tt_layer.in_deriv_copies): dx = dy W^T, masked for
 * the relu before, by the caller into the tensor and by each worker into
 * its copy. The mask in a pass of its own, not in the product's stores:
 * there the worker's part of the MLP's output layer took 13.5 us a step
 * against 5.8 (its keep, the layer's input, half in the other core's
 * cache, read a few lines at a time; a pass streams it), while the owned
 * layers' parts, which write columns of rows the other thread writes
 * too, gain by the fused mask (tt_gemm_relu_masked). */
static void
fc_derivative_copy_part (void *arg, unsigned part, unsigned n_parts)
{
  const fc_job *j = arg;
  (void) n_parts;
  float *dx = part ? tt_threads_scratch (j->c->threads, part) +
      j->l->deriv_copy_at : tt_run_data (j->c, j->l->in_deriv[0]);
  tt_run_gemm (j->c, false, true, j->rows, j->k, j->unit, 1.0f,
      tt_run_data (j->c, j->l->out_deriv[0]), j->unit,
      tt_run_data (j->c, j->l->weights[0].value), j->unit, 0.0f, dx, j->k);
  if (j->l->relu_mask_in)
    tt_relu_mask ((size_t) j->rows, (size_t) j->k, fc_relu_keep (j),
        (size_t) j->k, dx, (size_t) j->k);
}

static void
fc_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  if (l->loss_tail) {
    tt_fc_loss_tail_backward (c, l);
    return;
  }
  fc_job j;
  fc_job_init (&j, c, l);
  if (fc_owned (c, l)) {
    tt_threads_run_owned (c->threads, fc_derivative_part, &j);
    return;
  }
  if (l->in_deriv_copies && !tt_threads_step_inline (c->threads)) {
    tt_threads_run_owned (c->threads, fc_derivative_copy_part, &j);
    return;
  }
  if (tt_run_gemm_inputs (c) != TT_GEMM_FP32) {
    /* half-width inputs: the product, then the mask */
    tt_run_gemm_split (c, c->threads, false, true, j.rows, j.k, j.unit,
        1.0f, tt_run_data (c, l->out_deriv[0]), j.unit,
        tt_run_data (c, l->weights[0].value), j.unit, 0.0f,
        tt_run_data (c, l->in_deriv[0]), j.k);
    if (l->relu_mask_in)
      tt_relu_mask ((size_t) j.rows, (size_t) j.k, fc_relu_keep (&j),
          (size_t) j.k, tt_run_data (c, l->in_deriv[0]), (size_t) j.k);
    return;
  }
  tt_gemm_split_relu_masked (c->threads, false, true, j.rows, j.k, j.unit,
      1.0f, tt_run_data (c, l->out_deriv[0]), j.unit,
      tt_run_data (c, l->weights[0].value), j.unit, 0.0f,
      tt_run_data (c, l->in_deriv[0]), j.k, fc_relu_keep (&j), j.k);
}

/* dx = dy W^T: (batch x c x h) x unit by unit x w */
static double
fc_derivative_product (const tt_layer * l, uint32_t batch)
{
  const tt_dims in = l->in_dims[0];
  const double samples = batch;
  return samples * in.c * in.h * in.w * l->p.fc.unit;
}

/* the weight's gradient reads the input; the bias's and the input
 * derivative do not (a frozen weight: the input is not kept) */
static unsigned
fc_backward_reads (const tt_layer * l)
{
  return l->weights[0].trainable ? TT_READS_INPUT : 0;
}

/* a product of the weight per row of the input */
static void
fc_multiply_adds (const tt_layer * l, uint64_t * weighted, uint64_t * between)
{
  *weighted = (uint64_t) l->weights[0].count * l->in_dims[0].c *
      l->in_dims[0].h;
  *between = 0;
}

const tt_layer_ops tt_fc_layer_ops = {
  .type = "fully_connected",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = fc_keys,
  .has_weights = true,
  .parse = fc_parse,
  .infer = fc_infer,
  .forward = fc_forward,
  .calc_gradient = fc_calc_gradient,
  .calc_derivative = fc_calc_derivative,
  .backward_reads = fc_backward_reads,
  .chunked_gradient = true,
  .fuses_relu = true,
  .derivative_product = fc_derivative_product,
  .copies_derivative = true,
  .runs_loss_tail = true,
  .multiply_adds = fc_multiply_adds,
  .distributes = true,
  .lora_refuses = tt_lora_fc_refuses,
};

/* with lora_rank (fc_parse): the adapters' passes (fc_lora.c), none of
 * the thread fusions above */
const tt_layer_ops tt_fc_lora_layer_ops = {
  .type = "fully_connected",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .has_weights = true,
  .infer = fc_infer,
  .declare = tt_lora_fc_declare,
  .forward = tt_lora_fc_forward,
  .calc_gradient = tt_lora_fc_gradient,
  .calc_derivative = tt_lora_fc_derivative,
  .backward_reads = tt_lora_fc_backward_reads,
  .multiply_adds = tt_lora_fc_multiply_adds,
  .distributes = true,
  .lora_refuses = tt_lora_fc_refuses,
  .lora_pairs = tt_lora_fc_pairs,
};
