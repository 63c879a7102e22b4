/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mixture-of-logistics attention (layers/layer_mol_attention.c), sample
 * by sample after the layer's two products made p = [kappa | beta |
 * alpha] sources, K each:
 *
 *   kappa = e^p[0:K], beta = e^p[K:2K], alpha = softmax (p[2K:3K])
 *   m = state + kappa                              (the new state)
 *   prob[t][k] = sigmoid ((t + 1.5 - m_k) / (beta_k + 1e-8))
 *              - sigmoid ((t + 0.5 - m_k) / (beta_k + 1e-8))
 *   score[t] = sum_k alpha_k prob[t][k], 0 from t = len on (the mask)
 *   out = sum_t score[t] value[t]
 *
 * Forward keeps kappa, beta, alpha (over p), m and the scores; backward
 * computes the sigmoids again (2 T K of them) rather than keeping them,
 * and writes the scores' derivative over the scores. The products with
 * the values are one-thread tt_gemm calls.
 * Samples split over the threads (tt_split), each sample's arithmetic the
 * same on any count: results are bit-identical to one thread's.
 */
#include "tt_layer.h"
#include "tt_split.h"
#include "vmath.h"

#include <math.h>
#include <string.h>

/* floats of work from which the samples split over the threads */
#define MOL_SPLIT_MIN (16 * 1024)

#define MOL_EPS 1e-8f

/* the mask's length of sample b: its float, rounded down, in [0, t] */
static size_t
mol_length (const float *len, size_t b, size_t t)
{
  if (!len)
    return t;
  const float v = len[b];
  if (!(v > 0.0f))
    return 0;
  return v >= (float) t ? t : (size_t) v;
}

/* p[0 .. 3k): kappa and beta through exp, alpha through the softmax */
static void
mol_transform (float *p, size_t k)
{
  for (size_t i = 0; i < 2 * k; i++)
    p[i] = tt_vexpf (p[i]);
  float *a = p + 2 * k, mx = a[0], sum = 0.0f;
  for (size_t i = 1; i < k; i++)
    mx = a[i] > mx ? a[i] : mx;
  for (size_t i = 0; i < k; i++) {
    a[i] = tt_vexpf (a[i] - mx);
    sum += a[i];
  }
  for (size_t i = 0; i < k; i++)
    a[i] /= sum;
}

/* score = sum_k alpha_k (sigmoid ((u + 1 - m) / be) - sigmoid ((u - m) /
 * be)) at u = t + 0.5 */
TT_VECTOR_CLONES static float
mol_score (const float *m, const float *beta, const float *alpha, size_t k,
    float u)
{
  float s = 0.0f;
  for (size_t i = 0; i < k; i++) {
    const float be = beta[i] + MOL_EPS;
    s += alpha[i] * (tt_vsigmoidf ((u + 1.0f - m[i]) / be) -
        tt_vsigmoidf ((u - m[i]) / be));
  }
  return s;
}

static void
mol_forward_range (void *arg, size_t begin, size_t end)
{
  const tt_mol *a = arg;
  const size_t k = a->k, t = a->t, d = a->d;
  for (size_t b = begin; b < end; b++) {
    float *p = a->proj + b * 3 * k, *m = a->m + b * k;
    float *score = a->scores + b * t, *out = a->out + b * d;
    const float *value = a->value + b * t * d;
    mol_transform (p, k);
    for (size_t i = 0; i < k; i++)
      m[i] = a->state[b * k + i] + p[i];
    if (a->new_state)
      memcpy (a->new_state + b * k, m, k * sizeof *m);
    const size_t len = mol_length (a->len, b, t);
    for (size_t j = 0; j < t; j++)
      score[j] = j < len ? mol_score (m, p + k, p + 2 * k, k,
          (float) j + 0.5f) : 0.0f;
    /* out = score^T value */
    tt_gemm (false, false, 1, (int) d, (int) t, 1.0f, score, (int) t, value,
        (int) d, 0.0f, out, (int) d);
  }
}

void
tt_mol_forward (const tt_mol * a)
{
  tt_split (a->threads, a->batch, 1, (size_t) a->batch * a->t * (a->k + a->d)
      >= MOL_SPLIT_MIN ? 1 : SIZE_MAX, mol_forward_range, (void *) a);
}

/* the derivatives of one time step's score ds to m, beta and alpha,
 * added to dm, dbeta, dalpha */
TT_VECTOR_CLONES static void
mol_score_backward (const float *m, const float *beta, const float *alpha,
    size_t k, float u, float ds, float *dm, float *dbeta, float *dalpha)
{
  for (size_t i = 0; i < k; i++) {
    const float be = beta[i] + MOL_EPS;
    const float zl = (u + 1.0f - m[i]) / be, zr = (u - m[i]) / be;
    const float sl = tt_vsigmoidf (zl), sr = tt_vsigmoidf (zr);
    const float dp = ds * alpha[i];
    const float gl = dp * sl * (1.0f - sl), gr = dp * sr * (1.0f - sr);
    dalpha[i] += ds * (sl - sr);
    dm[i] += (gr - gl) / be;
    dbeta[i] += (gr * zr - gl * zl) / be;
  }
}

static void
mol_backward_range (void *arg, size_t begin, size_t end)
{
  const tt_mol *a = arg;
  const size_t k = a->k, t = a->t, d = a->d;
  for (size_t b = begin; b < end; b++) {
    const float *p = a->proj + b * 3 * k, *m = a->m + b * k;
    const float *dout = a->dout + b * d;
    float *score = a->scores + b * t;
    const float *value = a->value + b * t * d;
    float *dp = a->dproj + b * 3 * k;
    float *dm = dp, *dbeta = dp + k, *dalpha = dp + 2 * k;
    memset (dp, 0, 3 * k * sizeof *dp);
    const size_t len = mol_length (a->len, b, t);
    /* dvalue = score dout^T; then the scores' derivative value dout is
     * written over the scores */
    if (a->dvalue)
      tt_gemm (false, false, (int) t, (int) d, 1, 1.0f, score, 1, dout,
          (int) d, 0.0f, a->dvalue + b * t * d, (int) d);
    tt_gemm (false, false, (int) t, 1, (int) d, 1.0f, value, (int) d, dout, 1,
        0.0f, score, 1);
    for (size_t j = 0; j < len; j++)
      mol_score_backward (m, p + k, p + 2 * k, k, (float) j + 0.5f, score[j],
          dm, dbeta, dalpha);
    if (a->dnew_state)
      for (size_t i = 0; i < k; i++)
        dm[i] += a->dnew_state[b * k + i];
    if (a->dstate)
      memcpy (a->dstate + b * k, dm, k * sizeof *dm);
    /* through exp (kappa, beta) and the softmax (alpha) */
    float dot = 0.0f;
    for (size_t i = 0; i < k; i++)
      dot += dalpha[i] * p[2 * k + i];
    for (size_t i = 0; i < k; i++) {
      dm[i] *= p[i];
      dbeta[i] *= p[k + i];
      dalpha[i] = p[2 * k + i] * (dalpha[i] - dot);
    }
  }
}

void
tt_mol_backward (const tt_mol * a)
{
  tt_split (a->threads, a->batch, 1, (size_t) a->batch * a->t * (a->k + a->d)
      >= MOL_SPLIT_MIN ? 1 : SIZE_MAX, mol_backward_range, (void *) a);
}
