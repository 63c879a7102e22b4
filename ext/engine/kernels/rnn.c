/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simple RNN kernels, nntrainer's rnn (PyTorch's nn.RNN): per step t,
 *
 *   h_t = act(x_t W_ih + h_{t-1} W_hh + bias),   h_{-1} = 0,
 *
 * times the dropout mask in training. The input projection of all steps
 * is one GEMM ([B*T][F] x [F][U]); each step adds h_{t-1} W_hh with one
 * GEMM over the batch. The activated values (before the mask) are kept
 * for backward, which writes the pre-activation derivatives over them;
 * dW_ih and dx are one GEMM each over all steps. Every buffer is the
 * caller's (pool scratch).
 *
 * h0 (rnncell's hidden state input) replaces h_{-1} = 0: step 0 adds
 * h0 W_hh, dW_hh gets h0^T dz_0 and tt_rnn_state_grad gives dh0.
 */
#include "gate_act.h"
#include "tt_split.h"

#include <string.h>

/* Step t's cells of samples [b0, b1): the activation over the summed
 * pre-activations, the hidden rows (masked) out. */
TT_ALWAYS_INLINE void
rnn_forward_cells (const tt_rnn * s, int t, int b0, int b1)
{
  const int T = s->steps, U = s->unit;
  for (int b = b0; b < b1; b++) {
    float *restrict a = s->act_out + ((size_t) b * T + t) * U;
    float *restrict h = s->hidden + (size_t) b * s->h_ld +
        (size_t) t * s->h_step;
    const uint8_t *m = s->mask ? s->mask + ((size_t) b * T + t) * U : NULL;
    if (s->act == TT_ACT_TANH)
      for (int j = 0; j < U; j++)
        a[j] = tt_gate_act (TT_ACT_TANH, a[j]);
    else
      for (int j = 0; j < U; j++)
        a[j] = tt_gate_act (s->act, a[j]);
    if (m)
      tt_dropout_apply (a, m, s->mask_keep, h, (size_t) U);
    else
      memcpy (h, a, (size_t) U * sizeof *h);
  }
}

/* Step t's cells backward: dz = dh * act'(a) over the kept activations
 * (dh already masked). */
TT_ALWAYS_INLINE void
rnn_backward_cells (const tt_rnn * s, int t, const float *dh, int b0, int b1)
{
  const int T = s->steps, U = s->unit;
  for (int b = b0; b < b1; b++) {
    float *restrict a = s->act_out + ((size_t) b * T + t) * U;
    const float *restrict d = dh + (size_t) b * U;
    if (s->act == TT_ACT_TANH)
      for (int j = 0; j < U; j++)
        a[j] = d[j] * tt_gate_prime (TT_ACT_TANH, a[j]);
    else
      for (int j = 0; j < U; j++)
        a[j] = d[j] * tt_gate_prime (s->act, a[j]);
  }
}

TT_VECTOR_CLONES static void
rnn_forward_range (const tt_rnn * s, int t, int b0, int b1)
{
  rnn_forward_cells (s, t, b0, b1);
}

TT_VECTOR_CLONES static void
rnn_backward_range (const tt_rnn * s, int t, const float *dh, int b0, int b1)
{
  rnn_backward_cells (s, t, dh, b0, b1);
}

/* A step's cells split by samples when there are enough of them (each
 * sample's row alone: any split is bit-identical) */
#define RNN_SPLIT_MIN 8192

typedef struct
{
  const tt_rnn *s;
  int t;
  const float *dh;              /* NULL: forward */
} rnn_cells_job;

static void
rnn_cells_part (void *arg, size_t b0, size_t b1)
{
  const rnn_cells_job *j = arg;
  if (j->dh)
    rnn_backward_range (j->s, j->t, j->dh, (int) b0, (int) b1);
  else
    rnn_forward_range (j->s, j->t, (int) b0, (int) b1);
}

static void
rnn_cells (const tt_rnn * s, int t, const float *dh)
{
  rnn_cells_job j = { s, t, dh };
  const size_t B = (size_t) s->batch;
  tt_split (s->threads, B, 1, B * s->unit >= RNN_SPLIT_MIN ? 2 : B + 1,
      rnn_cells_part, &j);
}

void
tt_rnn_forward (const tt_rnn * s, const float *x)
{
  const int B = s->batch, T = s->steps, F = s->features, U = s->unit;
  for (int r = 0; r < B * T; r++) {
    float *row = s->act_out + (size_t) r * U;
    if (!s->bias[0]) {
      memset (row, 0, (size_t) U * sizeof *row);
      continue;
    }
    for (int j = 0; j < U; j++)
      row[j] = s->bias[0][j] + (s->bias[1] ? s->bias[1][j] : 0.0f);
  }
  tt_gemm_split (s->threads, false, false, B * T, U, F, 1.0f, x, F, s->w_ih,
      U, 1.0f, s->act_out, U);
  for (int t = 0; t < T; t++) {
    if (t == 0 && s->h0)
      tt_gemm_split (s->threads, false, false, B, U, U, 1.0f, s->h0, U,
          s->w_hh, U, 1.0f, s->act_out, T * U);
    if (t > 0)
      tt_gemm_split (s->threads, false, false, B, U, U, 1.0f,
          s->hidden + (size_t) (t - 1) * s->h_step, s->h_ld, s->w_hh, U,
          1.0f, s->act_out + (size_t) t * U, T * U);
    rnn_cells (s, t, NULL);
  }
}

void
tt_rnn_bptt (const tt_rnn * s, const float *dy, bool sequences, float *dh)
{
  const int B = s->batch, T = s->steps, U = s->unit;
  for (int t = T - 1; t >= 0; t--) {
    /* dh_t = dy_t + dz_{t+1} W_hh^T */
    for (int b = 0; b < B; b++) {
      float *row = dh + (size_t) b * U;
      if (sequences)
        memcpy (row, dy + ((size_t) b * T + t) * U, (size_t) U * sizeof *row);
      else if (t == T - 1)
        memcpy (row, dy + (size_t) b * U, (size_t) U * sizeof *row);
      else
        memset (row, 0, (size_t) U * sizeof *row);
    }
    if (t < T - 1)
      tt_gemm_split (s->threads, false, true, B, U, U, 1.0f,
          s->act_out + (size_t) (t + 1) * U, T * U, s->w_hh, U, 1.0f, dh, U);
    for (int b = 0; s->mask && b < B; b++) {
      float *row = dh + (size_t) b * U;
      tt_dropout_apply (row, s->mask + ((size_t) b * T + t) * U,
          s->mask_keep, row, (size_t) U);
    }
    rnn_cells (s, t, dh);
  }
}

void
tt_rnn_weight_grads (const tt_rnn * s, const float *x, float *dw_ih,
    float *dw_hh, float *db)
{
  const int B = s->batch, T = s->steps, F = s->features, U = s->unit;
  tt_gemm_split (s->threads, true, false, F, U, B * T, 1.0f, x, F,
      s->act_out, U, 0.0f, dw_ih, U);
  if (s->h0)
    tt_gemm_split (s->threads, true, false, U, U, B, 1.0f, s->h0, U,
        s->act_out, T * U, 0.0f, dw_hh, U);
  else if (T == 1)
    memset (dw_hh, 0, (size_t) U * U * sizeof *dw_hh);
  for (int t = 1; t < T; t++)
    tt_gemm_split (s->threads, true, false, U, U, B, 1.0f,
        s->hidden + (size_t) (t - 1) * s->h_step, s->h_ld,
        s->act_out + (size_t) t * U, T * U, t == 1 && !s->h0 ? 0.0f : 1.0f,
        dw_hh, U);
  if (db) {
    memset (db, 0, (size_t) U * sizeof *db);
    for (size_t r = 0; r < (size_t) B * T; r++) {
      const float *g = s->act_out + r * U;
      for (int j = 0; j < U; j++)
        db[j] += g[j];
    }
  }
}

void
tt_rnn_input_grad (const tt_rnn * s, float *dx)
{
  tt_gemm_split (s->threads, false, true, s->batch * s->steps, s->features,
      s->unit, 1.0f, s->act_out, s->unit, s->w_ih, s->unit, 0.0f, dx,
      s->features);
}

void
tt_rnn_state_grad (const tt_rnn * s, float *dh0)
{
  const int U = s->unit;
  tt_gemm_split (s->threads, false, true, s->batch, U, U, 1.0f, s->act_out,
      s->steps * U, s->w_hh, U, 0.0f, dh0, U);
}
