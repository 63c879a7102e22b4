/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LSTM kernels, nntrainer's formulation (PyTorch's too): per step t,
 *
 *   [i f g o] = x_t W_ih + h_{t-1} W_hh + bias    (4U wide, in that order)
 *   i, f, o   = recurrent(.)   (sigmoid by default)
 *   g         = act(.)         (tanh by default)
 *   c_t = f * c_{t-1} + i * g,   h_t = o * act(c_t),   h_{-1} = c_{-1} = 0.
 *
 * The input projection of all steps is one GEMM ([B*T][F] x [F][4U]);
 * each step then adds h_{t-1} W_hh with one GEMM over the batch. Backward
 * keeps only the activated gates and the cells: the gate derivatives are
 * written over the gates (each step's are read once, by that step),
 * act(c_t) is recomputed from c_t, and dW_ih and dx are one GEMM each over
 * all steps. Every buffer is the caller's (pool scratch).
 *
 * reverse (the second direction of a bidirectional lstm) runs the steps
 * from t = T - 1 down to 0, step t's previous state being t + 1's; gates,
 * cells and hidden states stay at their time positions, so the GEMMs over
 * all steps are the same.
 *
 * h0, c0 (lstmcell's state inputs) replace h_{-1} = c_{-1} = 0: the
 * first step adds h0 W_hh and reads c0; dc_last seeds the cell state's
 * derivative; after bptt the carry's dc is dc0 and tt_lstm_state_grad
 * gives dh0.
 */
#include "gate_act.h"
#include "tt_split.h"

#include <math.h>
#include <string.h>

static inline bool
lstm_defaults (const tt_lstm * s)
{
  return s->act == TT_ACT_TANH && s->recurrent == TT_ACT_SIGMOID;
}

/* One sample's step: the gates (i, f, g, o rows, pre-activation in,
 * activated out), the previous cell row cp (may be c itself: step 0,
 * zeroed, read before written), the cell row c and hidden row h out.
 * Always inlined: called with the defaults as constants (tanh, sigmoid)
 * the activation switches fold away and, the rows being separate restrict
 * pointers, the loop vectorizes; with others it switches per value. */
TT_ALWAYS_INLINE void
lstm_cell_forward (int U, tt_activation act, tt_activation rec,
    float *restrict gi, float *restrict gf, float *restrict gg,
    float *restrict go, const float *cp, float *c, float *restrict h)
{
  for (int j = 0; j < U; j++) {
    const float i = tt_gate_act (rec, gi[j]);
    const float f = tt_gate_act (rec, gf[j]);
    const float g = tt_gate_act (act, gg[j]);
    const float o = tt_gate_act (rec, go[j]);
    gi[j] = i;
    gf[j] = f;
    gg[j] = g;
    go[j] = o;
    const float cv = f * cp[j] + i * g;
    c[j] = cv;
    h[j] = o * tt_gate_act (act, cv);
  }
}

/* Its backward: the activated gates in, their pre-activation derivatives
 * out; keep 0 stands for c_{-1} = 0 (cp then points at any finite row). */
TT_ALWAYS_INLINE void
lstm_cell_backward (int U, tt_activation act, tt_activation rec,
    float *restrict gi, float *restrict gf, float *restrict gg,
    float *restrict go, const float *restrict cp, float keep,
    const float *restrict c, const float *restrict dh, float *restrict dc)
{
  for (int j = 0; j < U; j++) {
    const float i = gi[j], f = gf[j], g = gg[j], o = go[j];
    const float a = tt_gate_act (act, c[j]);
    const float dcv = dh[j] * o * tt_gate_prime (act, a) + dc[j];
    gi[j] = dcv * g * tt_gate_prime (rec, i);
    gf[j] = dcv * keep * cp[j] * tt_gate_prime (rec, f);
    gg[j] = dcv * i * tt_gate_prime (act, g);
    go[j] = dh[j] * a * tt_gate_prime (rec, o);
    dc[j] = dcv * f;
  }
}

/* rows of width 4U at g (leading dimension ld) = the bias */
static void
lstm_fill_bias (const tt_lstm * s, int rows, float *g, int ld)
{
  const int n = 4 * s->unit;
  for (int r = 0; r < rows; r++) {
    float *row = g + (size_t) r * ld;
    if (!s->bias[0]) {
      memset (row, 0, (size_t) n * sizeof *row);
      continue;
    }
    for (int j = 0; j < n; j++)
      row[j] = s->bias[0][j] + (s->bias[1] ? s->bias[1][j] : 0.0f);
  }
}

/* Step t's cells, every sample: activations, c_t and h_t. */
TT_ALWAYS_INLINE void
lstm_forward_cells (const tt_lstm * s, int t, int b0, int b1)
{
  const int T = s->steps, U = s->unit, G = 4 * U;
  const int g_ld = T * G, c_ld = T * U;
  const int first = s->reverse ? T - 1 : 0, prev = s->reverse ? U : -U;
  const bool dflt = lstm_defaults (s);
  float *gt = s->gates + (size_t) t * G;
  for (int b = b0; b < b1; b++) {
    float *g = gt + (size_t) b * g_ld;
    float *c = s->cell + (size_t) b * c_ld + (size_t) t * U;
    float *h = s->hidden + (size_t) b * s->h_ld + (size_t) t * s->h_step;
    /* c_{-1} = 0: the cell row itself, zeroed; or c0's row */
    if (t == first && !s->c0)
      memset (c, 0, (size_t) U * sizeof *c);
    const float *cp = t != first ? c + prev : s->c0 ? s->c0 +
        (size_t) b * U : c;
    if (dflt)
      lstm_cell_forward (U, TT_ACT_TANH, TT_ACT_SIGMOID, g, g + U,
          g + 2 * U, g + 3 * U, cp, c, h);
    else
      lstm_cell_forward (U, s->act, s->recurrent, g, g + U, g + 2 * U,
          g + 3 * U, cp, c, h);
    if (s->mask)
      tt_dropout_apply (h, s->mask + ((size_t) b * T + t) * U, s->mask_keep,
          h, (size_t) U);
  }
}

/* Step t's cells backward, every sample: the gate derivatives over the
 * gates, dc carried to step t - 1. */
TT_ALWAYS_INLINE void
lstm_backward_cells (const tt_lstm * s, int t, const float *dh, float *dc,
    int b0, int b1)
{
  const int T = s->steps, U = s->unit, G = 4 * U;
  const bool dflt = lstm_defaults (s);
  /* c_{-1} = 0: keep 0, cp any finite row (c_0) */
  const int first = s->reverse ? T - 1 : 0, prev = s->reverse ? U : -U;
  const float keep = t != first || s->c0 ? 1.0f : 0.0f;
  for (int b = b0; b < b1; b++) {
    float *g = s->gates + ((size_t) b * T + t) * G;
    const float *c = s->cell + ((size_t) b * T + t) * U;
    const float *cp = t != first ? c + prev : s->c0 ? s->c0 +
        (size_t) b * U : c;
    if (dflt)
      lstm_cell_backward (U, TT_ACT_TANH, TT_ACT_SIGMOID, g, g + U,
          g + 2 * U, g + 3 * U, cp, keep, c, dh + (size_t) b * U,
          dc + (size_t) b * U);
    else
      lstm_cell_backward (U, s->act, s->recurrent, g, g + U, g + 2 * U,
          g + 3 * U, cp, keep, c, dh + (size_t) b * U, dc + (size_t) b * U);
  }
}

/* Each compiled twice, as gru.c's: the clones' AVX2 / AVX-512 loops (8
 * and 16 lanes) leave a unit below their width to a slow scalar
 * remainder, so units below LSTM_WIDE_UNIT take the default build's
 * 4-lane loops. */
#define LSTM_WIDE_UNIT 16

static void
lstm_forward_narrow (const tt_lstm * s, int t, int b0, int b1)
{
  lstm_forward_cells (s, t, b0, b1);
}

TT_VECTOR_CLONES static void
lstm_forward_wide (const tt_lstm * s, int t, int b0, int b1)
{
  lstm_forward_cells (s, t, b0, b1);
}

static void
lstm_backward_narrow (const tt_lstm * s, int t, const float *dh, float *dc,
    int b0, int b1)
{
  lstm_backward_cells (s, t, dh, dc, b0, b1);
}

TT_VECTOR_CLONES static void
lstm_backward_wide (const tt_lstm * s, int t, const float *dh, float *dc,
    int b0, int b1)
{
  lstm_backward_cells (s, t, dh, dc, b0, b1);
}

/* A step's cells split by samples when there is enough of them (each
 * sample's row is computed alone, so any split is bit-identical) */
#define LSTM_SPLIT_MIN 8192

typedef struct
{
  const tt_lstm *s;
  int t;
  const float *dh;
  float *dc;                    /* NULL: forward */
} lstm_cells_job;

static void
lstm_cells_range (void *arg, size_t b0, size_t b1)
{
  const lstm_cells_job *j = arg;
  const bool wide = j->s->unit >= LSTM_WIDE_UNIT;
  if (!j->dc && wide)
    lstm_forward_wide (j->s, j->t, (int) b0, (int) b1);
  else if (!j->dc)
    lstm_forward_narrow (j->s, j->t, (int) b0, (int) b1);
  else if (wide)
    lstm_backward_wide (j->s, j->t, j->dh, j->dc, (int) b0, (int) b1);
  else
    lstm_backward_narrow (j->s, j->t, j->dh, j->dc, (int) b0, (int) b1);
}

static void
lstm_cells (const tt_lstm * s, int t, const float *dh, float *dc)
{
  lstm_cells_job j = { s, t, dh, dc };
  const size_t B = (size_t) s->batch;
  tt_split (s->threads, B, 1, B * 4 * s->unit >= LSTM_SPLIT_MIN ? 2 : B + 1,
      lstm_cells_range, &j);
}

/* the time position of the k-th step run */
static inline int
lstm_time (const tt_lstm * s, int k)
{
  return s->reverse ? s->steps - 1 - k : k;
}

void
tt_lstm_forward (const tt_lstm * s, const float *x)
{
  const int B = s->batch, T = s->steps, F = s->features, U = s->unit;
  const int G = 4 * U;
  /* gates of step t of sample b: gates + b * g_ld + t * G */
  const int g_ld = T * G;
  lstm_fill_bias (s, B * T, s->gates, G);
  tt_gemm_split (s->threads, false, false, B * T, G, F, 1.0f, x, F, s->w_ih, G,
      1.0f, s->gates, G);
  for (int k = 0; k < T; k++) {
    const int t = lstm_time (s, k);
    float *gt = s->gates + (size_t) t * G;
    if (k == 0 && s->h0)
      tt_gemm_split (s->threads, false, false, B, G, U, 1.0f, s->h0, U,
          s->w_hh, G, 1.0f, gt, g_ld);
    if (k > 0)
      tt_gemm_split (s->threads, false, false, B, G, U, 1.0f,
          s->hidden + (size_t) lstm_time (s, k - 1) * s->h_step, s->h_ld,
          s->w_hh, G, 1.0f, gt, g_ld);
    lstm_cells (s, t, NULL, NULL);
  }
}

void
tt_lstm_bptt (const tt_lstm * s, const float *dy, bool sequences, float *carry)
{
  const int B = s->batch, T = s->steps, U = s->unit, G = 4 * U;
  const int W = s->dy_width ? s->dy_width : U;
  float *dh = carry, *dc = carry + (size_t) B * U;
  if (s->dc_last)
    memcpy (dc, s->dc_last, (size_t) B * U * sizeof *dc);
  else
    memset (dc, 0, (size_t) B * U * sizeof *dc);
  for (int k = T - 1; k >= 0; k--) {
    const int t = lstm_time (s, k);
    /* dh_t = dy_t + dG_{next} W_hh^T; without sequences dy is the last
     * position's (t = T - 1: a reverse direction's first step) */
    for (int b = 0; b < B; b++) {
      float *row = dh + (size_t) b * U;
      if (sequences)
        memcpy (row, dy + ((size_t) b * T + t) * W, (size_t) U * sizeof *row);
      else if (t == T - 1)
        memcpy (row, dy + (size_t) b * W, (size_t) U * sizeof *row);
      else
        memset (row, 0, (size_t) U * sizeof *row);
    }
    if (k < T - 1)
      tt_gemm_split (s->threads, false, true, B, U, G, 1.0f,
          s->gates + (size_t) lstm_time (s, k + 1) * G, T * G, s->w_hh, G,
          1.0f, dh, U);
    /* dropout: the derivative of the masked h_t, through its mask */
    for (int b = 0; s->mask && b < B; b++)
      tt_dropout_apply (dh + (size_t) b * U, s->mask + ((size_t) b * T + t) *
          U, s->mask_keep, dh + (size_t) b * U, (size_t) U);
    lstm_cells (s, t, dh, dc);
  }
}

void
tt_lstm_weight_grads (const tt_lstm * s, const float *x, float *dw_ih,
    float *dw_hh, float *db)
{
  const int B = s->batch, T = s->steps, F = s->features, U = s->unit;
  const int G = 4 * U;
  tt_gemm_split (s->threads, true, false, F, G, B * T, 1.0f, x, F, s->gates, G,
      0.0f, dw_ih, G);
  /* dW_hh = sum over the steps k >= 1 of h_{k-1}^T dG_k, one GEMM per
   * step as in forward */
  if (s->h0)
    tt_gemm_split (s->threads, true, false, U, G, B, 1.0f, s->h0, U,
        s->gates + (size_t) lstm_time (s, 0) * G, T * G, 0.0f, dw_hh, G);
  else if (T == 1)
    memset (dw_hh, 0, (size_t) U * G * sizeof *dw_hh);
  for (int k = 1; k < T; k++)
    tt_gemm_split (s->threads, true, false, U, G, B, 1.0f,
        s->hidden + (size_t) lstm_time (s, k - 1) * s->h_step, s->h_ld,
        s->gates + (size_t) lstm_time (s, k) * G, T * G,
        k == 1 && !s->h0 ? 0.0f : 1.0f, dw_hh, G);
  if (db) {
    memset (db, 0, (size_t) G * sizeof *db);
    for (size_t r = 0; r < (size_t) B * T; r++) {
      const float *g = s->gates + r * G;
      for (int j = 0; j < G; j++)
        db[j] += g[j];
    }
  }
}

void
tt_lstm_input_grad (const tt_lstm * s, float *dx, bool add)
{
  const int F = s->features, G = 4 * s->unit;
  tt_gemm_split (s->threads, false, true, s->batch * s->steps, F, G, 1.0f,
      s->gates, G, s->w_ih, G, add ? 1.0f : 0.0f, dx, F);
}

void
tt_lstm_state_grad (const tt_lstm * s, float *dh0)
{
  const int U = s->unit, G = 4 * U;
  tt_gemm_split (s->threads, false, true, s->batch, U, G, 1.0f,
      s->gates + (size_t) lstm_time (s, 0) * G, s->steps * G, s->w_hh, G,
      0.0f, dh0, U);
}
