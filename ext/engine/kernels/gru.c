/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GRU kernels, nntrainer's formulation: per step t, gates z (update), r
 * (reset) and g (candidate) along 3U, in that order,
 *
 *   z = recurrent(x_t W_iz + h_{t-1} W_hz + b_iz + b_hz)
 *   r = recurrent(x_t W_ir + h_{t-1} W_hr + b_ir + b_hr)
 *   reset_after:  g = act(x_t W_ig + b_ig + r * (h_{t-1} W_hg + b_hg))
 *   otherwise:    g = act(x_t W_ig + b_ig + (r * h_{t-1}) W_hg + b_hg)
 *   h_t = z * h_{t-1} + (1 - z) * g,   h_{-1} = 0,
 *
 * recurrent sigmoid and act tanh by default. reset_after (nntrainer's
 * default) is PyTorch's nn.GRU, whose gates are r, z, n (n = g).
 *
 * Each step's row of the gates holds four slots of U: z, r, then with
 * reset_after hn = h_{t-1} W_hg + b_hg (kept for dr) and g, so that the
 * recurrent product of a step is one GEMM over z, r and hn, W_hh's column
 * order; without reset_after g and r * h_{t-1} (kept for dW_hg), and a
 * step takes two GEMMs, as r must be known before (r * h) W_hg. The input
 * projection of all steps is one GEMM ([B*T][F] x [F][3U]; two with
 * reset_after, around the hn slot). Backward writes the pre-activation
 * derivatives over z, r and g, and d hn over hn (r * h stays: dW_hg reads
 * it); dW_ih and dx are GEMMs over all steps. Every buffer is the
 * caller's (pool scratch).
 *
 * h0 (grucell's state input) replaces h_{-1} = 0: the first step adds
 * h0 W_hh (and r * h0 meets W_hg), and backward keeps its terms; after
 * bptt tt_gru_state_grad gives dh0.
 */
#include "gate_act.h"
#include "tt_split.h"

#include <math.h>
#include <string.h>


/* The cell loops below take the activations as arguments and are always
 * inlined: called with the defaults as constants (tanh, sigmoid) the
 * switches fold away and the loops vectorize (separate restrict rows);
 * with others they switch per value. */
static inline bool
gru_defaults (const tt_gru * s)
{
  return s->act == TT_ACT_TANH && s->recurrent == TT_ACT_SIGMOID;
}

/* offset of g in a gates row; reset_after puts hn before it */
static inline int
gru_g (const tt_gru * s)
{
  return (s->reset_after ? 3 : 2) * s->unit;
}

/* reset_after, one sample's step: z, r, g pre-activation in, activated
 * out; hn read; the previous hidden row hp (may be h itself: read before
 * written) and the hidden row h out */
TT_ALWAYS_INLINE void
gru_cell_after (int U, tt_activation act, tt_activation rec,
    float *restrict z, float *restrict r, const float *restrict hn,
    float *restrict g, const float *hp, float *h)
{
  for (int j = 0; j < U; j++) {
    const float zv = tt_gate_act (rec, z[j]);
    const float rv = tt_gate_act (rec, r[j]);
    const float gv = tt_gate_act (act, g[j] + rv * hn[j]);
    z[j] = zv;
    r[j] = rv;
    g[j] = gv;
    const float hv = hp[j];
    h[j] = zv * hv + (1.0f - zv) * gv;
  }
}

/* without reset_after, before the second GEMM: z and r activated, r * hp
 * into rh */
TT_ALWAYS_INLINE void
gru_cell_gates (int U, tt_activation rec, float *restrict z,
    float *restrict r, float *restrict rh, const float *restrict hp)
{
  for (int j = 0; j < U; j++) {
    const float zv = tt_gate_act (rec, z[j]);
    const float rv = tt_gate_act (rec, r[j]);
    z[j] = zv;
    r[j] = rv;
    rh[j] = rv * hp[j];
  }
}

/* ... and after it: g activated, h out (hp may be h itself) */
TT_ALWAYS_INLINE void
gru_cell_out (int U, tt_activation act, const float *restrict z,
    float *restrict g, const float *hp, float *h)
{
  for (int j = 0; j < U; j++) {
    const float zv = z[j];
    const float gv = tt_gate_act (act, g[j]);
    g[j] = gv;
    const float hv = hp[j];
    h[j] = zv * hv + (1.0f - zv) * gv;
  }
}

/* reset_after's backward of one sample's step: the activated gates and hn
 * in, d (pre-activation) and d hn out; dh in, dh * z out (the direct
 * part of d h_{t-1}); keep 0 stands for h_{-1} = 0 (hp then points at any
 * finite row) */
TT_ALWAYS_INLINE void
gru_back_after (int U, tt_activation act, tt_activation rec,
    float *restrict z, float *restrict r, float *restrict hn,
    float *restrict g, const float *restrict hp, float keep, float *restrict dh)
{
  for (int j = 0; j < U; j++) {
    const float zv = z[j], rv = r[j], gv = g[j], d = dh[j];
    const float dg = d * (1.0f - zv) * tt_gate_prime (act, gv);
    z[j] = d * (keep * hp[j] - gv) * tt_gate_prime (rec, zv);
    r[j] = dg * hn[j] * tt_gate_prime (rec, rv);
    hn[j] = dg * rv;
    g[j] = dg;
    dh[j] = d * zv;
  }
}

/* without reset_after, first part: dz and dg (r is done once d(r * h) is
 * known) */
TT_ALWAYS_INLINE void
gru_back_zg (int U, tt_activation act, tt_activation rec,
    float *restrict z, float *restrict g, const float *restrict hp,
    float keep, float *restrict dh)
{
  for (int j = 0; j < U; j++) {
    const float zv = z[j], gv = g[j], d = dh[j];
    z[j] = d * (keep * hp[j] - gv) * tt_gate_prime (rec, zv);
    g[j] = d * (1.0f - zv) * tt_gate_prime (act, gv);
    dh[j] = d * zv;
  }
}

/* ... second part, from drh = d (r * h_{t-1}): dr, and drh * r into dh */
TT_ALWAYS_INLINE void
gru_back_r (int U, tt_activation rec, float *restrict r,
    const float *restrict hp, const float *restrict drh, float *restrict dh)
{
  for (int j = 0; j < U; j++) {
    const float rv = r[j];
    r[j] = drh[j] * hp[j] * tt_gate_prime (rec, rv);
    dh[j] += drh[j] * rv;
  }
}

/* every row of the gates = the biases (zero without) */
static void
gru_fill_bias (const tt_gru * s, int rows)
{
  const int U = s->unit, G = 4 * U, og = gru_g (s);
  const int oh = s->reset_after ? 2 * U : 3 * U;
  const float *bi = s->bias_ih, *bh = s->bias_hh;
  for (int r = 0; r < rows; r++) {
    float *row = s->gates + (size_t) r * G;
    if (!bi) {
      memset (row, 0, (size_t) G * sizeof *row);
      continue;
    }
    for (int j = 0; j < 2 * U; j++)
      row[j] = bi[j] + (bh ? bh[j] : 0.0f);
    for (int j = 0; j < U; j++) {
      const float bg = bh ? bh[2 * U + j] : 0.0f;
      row[og + j] = bi[2 * U + j] + (s->reset_after ? 0.0f : bg);
      row[oh + j] = s->reset_after ? bg : 0.0f;
    }
  }
}

/* One step's cell loops over the batch. Forward pass 0: the whole cell
 * (reset_after) or z, r and r * h; pass 1 (without reset_after, after
 * the second GEMM): g and h. */
TT_ALWAYS_INLINE void
gru_forward_cells (const tt_gru * s, int t, int pass, int b0, int b1)
{
  const int T = s->steps, U = s->unit, g_ld = T * 4 * U;
  const bool dflt = gru_defaults (s);
  for (int b = b0; b < b1; b++) {
    float *g = s->gates + (size_t) b * g_ld + (size_t) t * 4 * U;
    float *h = s->hidden + (size_t) b * s->h_ld + (size_t) t * s->h_step;
    /* h_{-1} = 0: the hidden row itself, zeroed, read before written;
     * or h0's row */
    if (t == 0 && pass == 0 && !s->h0)
      memset (h, 0, (size_t) U * sizeof *h);
    const float *hp = t > 0 ? h - s->h_step : s->h0 ? s->h0 +
        (size_t) b * U : h;
    if (pass == 1) {
      if (dflt)
        gru_cell_out (U, TT_ACT_TANH, g, g + 2 * U, hp, h);
      else
        gru_cell_out (U, s->act, g, g + 2 * U, hp, h);
    } else if (s->reset_after) {
      if (dflt)
        gru_cell_after (U, TT_ACT_TANH, TT_ACT_SIGMOID, g, g + U, g + 2 * U,
            g + 3 * U, hp, h);
      else
        gru_cell_after (U, s->act, s->recurrent, g, g + U, g + 2 * U,
            g + 3 * U, hp, h);
    } else if (dflt) {
      gru_cell_gates (U, TT_ACT_SIGMOID, g, g + U, g + 3 * U, hp);
    } else {
      gru_cell_gates (U, s->recurrent, g, g + U, g + 3 * U, hp);
    }
    /* dropout: h_t times its mask, once h_t is computed */
    if (s->mask && (pass == 1 || s->reset_after))
      tt_dropout_apply (h, s->mask + ((size_t) b * T + t) * U, s->mask_keep,
          h, (size_t) U);
  }
}

/* Backward pass 0: reset_after's whole cell, or dz and dg; pass 1
 * (without reset_after, t > 0, after drh = dg W_hg^T): dr. dh: [B][U]. */
TT_ALWAYS_INLINE void
gru_backward_cells (const tt_gru * s, int t, int pass, float *dh,
    const float *drh, int b0, int b1)
{
  const int T = s->steps, U = s->unit, g_ld = T * 4 * U;
  const bool dflt = gru_defaults (s);
  /* h_{-1} = 0: keep 0, hp any finite row (h_0); or h0 */
  const float keep = t > 0 || s->h0 ? 1.0f : 0.0f;
  for (int b = b0; b < b1; b++) {
    float *g = s->gates + (size_t) b * g_ld + (size_t) t * 4 * U;
    const float *h = s->hidden + (size_t) b * s->h_ld + (size_t) t * s->h_step;
    const float *hp = t > 0 ? h - s->h_step : s->h0 ? s->h0 +
        (size_t) b * U : h;
    float *dhb = dh + (size_t) b * U;
    if (pass == 1) {
      if (dflt)
        gru_back_r (U, TT_ACT_SIGMOID, g + U, hp, drh + (size_t) b * U, dhb);
      else
        gru_back_r (U, s->recurrent, g + U, hp, drh + (size_t) b * U, dhb);
    } else if (s->reset_after) {
      if (dflt)
        gru_back_after (U, TT_ACT_TANH, TT_ACT_SIGMOID, g, g + U, g + 2 * U,
            g + 3 * U, hp, keep, dhb);
      else
        gru_back_after (U, s->act, s->recurrent, g, g + U, g + 2 * U,
            g + 3 * U, hp, keep, dhb);
    } else if (dflt) {
      gru_back_zg (U, TT_ACT_TANH, TT_ACT_SIGMOID, g, g + 2 * U, hp, keep, dhb);
    } else {
      gru_back_zg (U, s->act, s->recurrent, g, g + 2 * U, hp, keep, dhb);
    }
  }
}

/* Each compiled twice. The clones' AVX2 / AVX-512 loops (8 and 16 lanes)
 * leave a unit below their width to a scalar remainder whose selects
 * become mispredicted branches: sensor_gru.ini's 12 and 8 units trained at
 * half the speed of the default build's 4-lane loops, which a unit of 64
 * runs at half the speed of AVX-512's. Units of 16 and more take the
 * clones. */
static void
gru_forward_narrow (const tt_gru * s, int t, int pass, int b0, int b1)
{
  gru_forward_cells (s, t, pass, b0, b1);
}

TT_VECTOR_CLONES static void
gru_forward_wide (const tt_gru * s, int t, int pass, int b0, int b1)
{
  gru_forward_cells (s, t, pass, b0, b1);
}

static void
gru_backward_narrow (const tt_gru * s, int t, int pass, float *dh,
    const float *drh, int b0, int b1)
{
  gru_backward_cells (s, t, pass, dh, drh, b0, b1);
}

TT_VECTOR_CLONES static void
gru_backward_wide (const tt_gru * s, int t, int pass, float *dh,
    const float *drh, int b0, int b1)
{
  gru_backward_cells (s, t, pass, dh, drh, b0, b1);
}

#define GRU_WIDE_UNIT 16

/* A step's cells split by samples when there is enough of them (each
 * sample's row is computed alone, so any split is bit-identical) */
#define GRU_SPLIT_MIN 8192

typedef struct
{
  const tt_gru *s;
  int t, pass;
  bool backward;
  float *dh;
  const float *drh;
} gru_cells_job;

static void
gru_cells_range (void *arg, size_t b0, size_t b1)
{
  const gru_cells_job *j = arg;
  const bool wide = j->s->unit >= GRU_WIDE_UNIT;
  if (!j->backward && wide)
    gru_forward_wide (j->s, j->t, j->pass, (int) b0, (int) b1);
  else if (!j->backward)
    gru_forward_narrow (j->s, j->t, j->pass, (int) b0, (int) b1);
  else if (wide)
    gru_backward_wide (j->s, j->t, j->pass, j->dh, j->drh, (int) b0, (int) b1);
  else
    gru_backward_narrow (j->s, j->t, j->pass, j->dh, j->drh, (int) b0,
        (int) b1);
}

static void
gru_cells (const tt_gru * s, int t, int pass, bool backward, float *dh,
    const float *drh)
{
  gru_cells_job j = { s, t, pass, backward, dh, drh };
  const size_t B = (size_t) s->batch;
  tt_split (s->threads, B, 1, B * 4 * s->unit >= GRU_SPLIT_MIN ? 2 : B + 1,
      gru_cells_range, &j);
}

void
tt_gru_forward (const tt_gru * s, const float *x)
{
  const int B = s->batch, T = s->steps, F = s->features, U = s->unit;
  const int G = 4 * U, g_ld = T * G;
  gru_fill_bias (s, B * T);
  if (s->reset_after) {
    tt_gemm_split (s->threads, false, false, B * T, 2 * U, F, 1.0f, x, F,
        s->w_ih, 3 * U, 1.0f, s->gates, G);
    tt_gemm_split (s->threads, false, false, B * T, U, F, 1.0f, x, F,
        s->w_ih + 2 * U, 3 * U, 1.0f, s->gates + 3 * U, G);
  } else {
    tt_gemm_split (s->threads, false, false, B * T, 3 * U, F, 1.0f, x, F,
        s->w_ih, 3 * U, 1.0f, s->gates, G);
  }
  for (int t = 0; t < T; t++) {
    float *gt = s->gates + (size_t) t * G;
    if (t > 0 || s->h0)
      tt_gemm_split (s->threads, false, false, B,
          s->reset_after ? 3 * U : 2 * U, U, 1.0f,
          t > 0 ? s->hidden + (size_t) (t - 1) * s->h_step : s->h0,
          t > 0 ? s->h_ld : U, s->w_hh, 3 * U, 1.0f, gt, g_ld);
    gru_cells (s, t, 0, false, NULL, NULL);
    if (s->reset_after)
      continue;
    /* g += (r * h_{t-1}) W_hg; r * h_{-1} = 0 */
    if (t > 0 || s->h0)
      tt_gemm_split (s->threads, false, false, B, U, U, 1.0f, gt + 3 * U, g_ld,
          s->w_hh + 2 * U, 3 * U, 1.0f, gt + 2 * U, g_ld);
    gru_cells (s, t, 1, false, NULL, NULL);
  }
}

void
tt_gru_bptt (const tt_gru * s, const float *dy, bool sequences, float *carry)
{
  const int B = s->batch, T = s->steps, U = s->unit, G = 4 * U;
  const int g_ld = T * G;
  float *dh = carry, *drh = carry + (size_t) B * U;
  for (int t = T - 1; t >= 0; t--) {
    float *gt = s->gates + (size_t) t * G;
    /* dh_t = dy_t + dh_{t+1} * z_{t+1} (+ d(r h) * r: already in dh) +
     * step t+1's derivatives (z, r and hn or z, r) times W_hh^T */
    if (t == T - 1) {
      for (int b = 0; b < B; b++)
        memcpy (dh + (size_t) b * U, dy + (sequences ? ((size_t) b * T + t)
                * U : (size_t) b * U), (size_t) U * sizeof *dh);
    } else {
      tt_gemm_split (s->threads, false, true, B, U,
          s->reset_after ? 3 * U : 2 * U, 1.0f, gt + G, g_ld, s->w_hh, 3 * U,
          1.0f, dh, U);
      if (sequences)
        for (int b = 0; b < B; b++) {
          float *row = dh + (size_t) b * U;
          const float *d = dy + ((size_t) b * T + t) * U;
          for (int j = 0; j < U; j++)
            row[j] += d[j];
        }
    }
    /* dropout: the derivative of the masked h_t, through its mask */
    for (int b = 0; s->mask && b < B; b++)
      tt_dropout_apply (dh + (size_t) b * U, s->mask + ((size_t) b * T + t) *
          U, s->mask_keep, dh + (size_t) b * U, (size_t) U);
    gru_cells (s, t, 0, true, dh, drh);
    if (s->reset_after)
      continue;
    if (t == 0 && !s->h0) {
      /* r met h_{-1} = 0 only: dr = 0 */
      for (int b = 0; b < B; b++)
        memset (gt + (size_t) b * g_ld + U, 0, (size_t) U * sizeof *gt);
      continue;
    }
    /* d(r * h_{t-1}) = dg W_hg^T */
    tt_gemm_split (s->threads, false, true, B, U, U, 1.0f, gt + 2 * U, g_ld,
        s->w_hh + 2 * U, 3 * U, 0.0f, drh, U);
    gru_cells (s, t, 1, true, dh, drh);
  }
}

void
tt_gru_weight_grads (const tt_gru * s, const float *x, float *dw_ih,
    float *dw_hh, float *db_ih, float *db_hh)
{
  const int B = s->batch, T = s->steps, F = s->features, U = s->unit;
  const int G = 4 * U, N = B * T, og = gru_g (s);
  if (s->reset_after) {
    tt_gemm_split (s->threads, true, false, F, 2 * U, N, 1.0f, x, F, s->gates,
        G, 0.0f, dw_ih, 3 * U);
    tt_gemm_split (s->threads, true, false, F, U, N, 1.0f, x, F,
        s->gates + 3 * U, G, 0.0f, dw_ih + 2 * U, 3 * U);
  } else {
    tt_gemm_split (s->threads, true, false, F, 3 * U, N, 1.0f, x, F, s->gates,
        G, 0.0f, dw_ih, 3 * U);
  }
  /* dW_hh: sum over t >= 1 of h_{t-1}^T times step t's z, r and hn (or
   * z, r) derivatives, one GEMM per step as in forward (h0: t = 0's
   * too) */
  const int n_hh = s->reset_after ? 3 * U : 2 * U;
  if (s->h0)
    tt_gemm_split (s->threads, true, false, U, n_hh, B, 1.0f, s->h0, U,
        s->gates, T * G, 0.0f, dw_hh, 3 * U);
  else if (T == 1)
    memset (dw_hh, 0, (size_t) U * 3 * U * sizeof *dw_hh);
  for (int t = 1; t < T; t++)
    tt_gemm_split (s->threads, true, false, U, n_hh, B, 1.0f,
        s->hidden + (size_t) (t - 1) * s->h_step, s->h_ld,
        s->gates + (size_t) t * G, T * G, t == 1 && !s->h0 ? 0.0f : 1.0f,
        dw_hh, 3 * U);
  /* without reset_after, dW_hg = (r * h)^T dg over all steps at once
   * (r * h_{-1} = 0) */
  if (!s->reset_after)
    tt_gemm_split (s->threads, true, false, U, U, N, 1.0f, s->gates + 3 * U, G,
        s->gates + 2 * U, G, 0.0f, dw_hh + 2 * U, 3 * U);
  if (!db_ih)
    return;
  /* the z and r biases are added alike; b_ig meets dg; b_hg meets d hn
   * with reset_after, else dg: the slot after r either way */
  memset (db_ih, 0, (size_t) 3 * U * sizeof *db_ih);
  if (db_hh)
    memset (db_hh, 0, (size_t) 3 * U * sizeof *db_hh);
  for (size_t r = 0; r < (size_t) N; r++) {
    const float *row = s->gates + r * G;
    for (int j = 0; j < 2 * U; j++)
      db_ih[j] += row[j];
    for (int j = 0; j < U; j++)
      db_ih[2 * U + j] += row[og + j];
    if (db_hh)
      for (int j = 0; j < U; j++)
        db_hh[2 * U + j] += row[2 * U + j];
  }
  if (db_hh)
    memcpy (db_hh, db_ih, (size_t) 2 * U * sizeof *db_hh);
}

void
tt_gru_input_grad (const tt_gru * s, float *dx)
{
  const int F = s->features, U = s->unit, G = 4 * U;
  const int N = s->batch * s->steps;
  if (s->reset_after) {
    tt_gemm_split (s->threads, false, true, N, F, 2 * U, 1.0f, s->gates, G,
        s->w_ih, 3 * U, 0.0f, dx, F);
    tt_gemm_split (s->threads, false, true, N, F, U, 1.0f, s->gates + 3 * U, G,
        s->w_ih + 2 * U, 3 * U, 1.0f, dx, F);
  } else {
    tt_gemm_split (s->threads, false, true, N, F, 3 * U, 1.0f, s->gates, G,
        s->w_ih, 3 * U, 0.0f, dx, F);
  }
}

void
tt_gru_state_grad (const tt_gru * s, const float *carry, float *dh0)
{
  const int U = s->unit, G = 4 * U;
  memcpy (dh0, carry, (size_t) s->batch * U * sizeof *dh0);
  tt_gemm_split (s->threads, false, true, s->batch, U,
      s->reset_after ? 3 * U : 2 * U, 1.0f, s->gates, s->steps * G, s->w_hh,
      3 * U, 1.0f, dh0, U);
}
