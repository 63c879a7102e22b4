/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * matmul: nntrainer's matrix product of its two inputs (input_layers =
 * a, b), batched over the leading axes: a C:M:K and b C:K:N give C:M:N,
 * out[n][c] = a[n][c] b[n][c] for every sample n and channel c (the
 * channels must be equal, a's width b's height, as nntrainer checks).
 * torch.matmul of the 4-D tensors. nntrainer's own forward flattens a to
 * (B C M) x K and b to (B C K) x N, a product that is only this one at
 * batch 1 with one channel; this follows the mathematics.
 *
 * Backward: da = dy b^T, db = a^T dy, per matrix (kernels/tensorops.c,
 * tt_gemm; inputs rounded to bf16, sums fp32, when the run's GEMMs are
 * bf16: tt_run_gemm_inputs). Keys: nntrainer's inplace and print (read and
 * checked; the planner decides what runs in place, and a product never
 * does).
 */
#include "tt_layer.h"

static const char *const matmul_keys[] = { "inplace", "print", NULL };

static tt_status
matmul_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  (void) l;
  bool inplace = false;
  bool print = false;
  tt_status st = tt_section_bool (s, "inplace", &inplace, err);
  return st ? st : tt_section_bool (s, "print", &print, err);
}

static tt_status
matmul_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  if (l->n_inputs != 2)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: matmul takes two inputs (input_layers = a, "
        "b), not %u", c->path, l->section, l->n_inputs);
  const tt_dims a = l->in_dims[0], b = l->in_dims[1];
  if (a.c != b.c || a.w != b.h)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [%s] input_layers: '%s' gives %u:%u:%u and '%s' gives "
        "%u:%u:%u; matmul needs C:M:K and C:K:N (the same channels, the "
        "first's width the second's height)", c->path, l->section,
        l->inputs[0].name, a.c, a.h, a.w, l->inputs[1].name, b.c, b.h, b.w);
  l->out_dims[0] = (tt_dims) {
  a.c, a.h, b.w};
  return TT_OK;
}

/* the products in the run's GEMM format (tt_run_gemm_inputs) */
static tt_matmul_shape
matmul_shape (const tt_run_ctx * c, const tt_layer * l)
{
  return (tt_matmul_shape) {
  (int) l->in_dims[0].h, (int) l->in_dims[1].w, (int) l->in_dims[0].w,
        tt_run_gemm_inputs (c)};
}

static void
matmul_forward (const tt_run_ctx * c, tt_layer * l)
{
  const tt_matmul_shape s = matmul_shape (c, l);
  tt_matmul_forward (c->threads, &s, (size_t) c->batch * l->in_dims[0].c,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->in[1]),
      tt_run_data (c, l->out[0]));
}

static void
matmul_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const tt_matmul_shape s = matmul_shape (c, l);
  tt_matmul_backward (c->threads, &s, (size_t) c->batch * l->in_dims[0].c,
      tt_run_data (c, l->in[0]), tt_run_data (c, l->in[1]),
      tt_run_data (c, l->out_deriv[0]), tt_run_data (c, l->in_deriv[0]),
      tt_run_data (c, l->in_deriv[1]));
}

static unsigned
matmul_backward_reads (const tt_layer * l)
{
  (void) l;
  return TT_READS_INPUT;
}

/* C products of M x K by K x N, between two activations */
static void
matmul_multiply_adds (const tt_layer * l, uint64_t * weighted,
    uint64_t * between)
{
  *weighted = 0;
  *between = (uint64_t) l->in_dims[0].c * l->in_dims[0].h * l->in_dims[0].w *
      l->in_dims[1].w;
}

const tt_layer_ops tt_matmul_layer_ops = {
  .type = "matmul",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = TT_MAX_IO,
  .keys = matmul_keys,
  .parse = matmul_parse,
  .infer = matmul_infer,
  .forward = matmul_forward,
  .calc_derivative = matmul_calc_derivative,
  .backward_reads = matmul_backward_reads,
  .multiply_adds = matmul_multiply_adds,
};
