/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Optimizers (sgd with optional momentum, adam, adamw) and learning-rate
 * schedules. Adam's two forms are nntrainer's [Optimizer] torch_ref
 * (nntrainer/optimizers/adam.cpp): by default (torch_ref = false, as
 * nntrainer) epsilon is added to the uncorrected root of the second moment
 * and the step scaled by sqrt(1 - b2^t) / (1 - b1^t); torch_ref = true is
 * PyTorch's form, epsilon added to the bias-corrected root. They differ
 * by about eps / sqrt(1 - b2^t) in the denominator, visible only for
 * gradients near that size.
 */
#include "tt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const optimizer_keys[] = {
  "type", "learning_rate", "beta1", "beta2", "epsilon", "weight_decay",
  "momentum", "decay_rate", "decay_steps", "torch_ref", NULL
};

static const char *const scheduler_keys[] = {
  "type", "learning_rate", "decay_rate", "decay_steps", "iteration",
  "max_learning_rate", "min_learning_rate", NULL
};

/* Parses a comma list of floats into out; returns the count or -1. */
static int
optimizer_float_list (const char *v, float *out, int max)
{
  int n = 0;
  const char *p = v;
  for (;;) {
    char *end;
    double x = strtod (p, &end);
    if (end == p || !isfinite (x) || n == max)
      return -1;
    out[n++] = (float) x;
    while (*end == ' ' || *end == '\t')
      end++;
    if (*end == '\0')
      return n;
    if (*end != ',')
      return -1;
    p = end + 1;
  }
}

static tt_status
optimizer_parse_scheduler (tt_optimizer * o, const tt_section * s,
    tt_error * err)
{
  static const char *const types[] = {
    "constant", "exponential", "step", "cosine", "linear", NULL
  };
  tt_status st;
  int type = TT_LR_CONSTANT;
  if ((st = tt_section_check_keys (s, scheduler_keys, err)) ||
      (st = tt_section_enum (s, "type", types, &type, err)))
    return st;
  if (!tt_section_has (s, "type"))
    return tt_section_error (s, "type", err, TT_ERR_INVALID,
        "missing key (constant, exponential, step, cosine or linear)");
  o->lr_type = (tt_lr_type) type;

  if (o->lr_type == TT_LR_STEP) {
    const char *lrs = tt_section_string (s, "learning_rate");
    const char *its = tt_section_string (s, "iteration");
    if (!lrs || !its)
      return tt_section_error (s, lrs ? "iteration" : "learning_rate", err,
          TT_ERR_INVALID, "a step schedule needs learning_rate and "
          "iteration lists");
    int nl = optimizer_float_list (lrs, o->step_lr, TT_MAX_STEPS + 1);
    uint32_t ni = 0;
    if (nl < 0)
      return tt_section_error (s, "learning_rate", err, TT_ERR_PARSE,
          "'%s' is not a list of at most %d numbers", lrs, TT_MAX_STEPS + 1);
    if ((st = tt_section_uint_list (s, "iteration", 1, UINT32_MAX,
                o->step_iter, TT_MAX_STEPS, &ni, err)))
      return st;
    if ((uint32_t) nl != ni + 1)
      return tt_section_error (s, "iteration", err, TT_ERR_INVALID,
          "%u iterations need %u learning rates, got %d", ni, ni + 1, nl);
    for (uint32_t i = 1; i < ni; i++)
      if (o->step_iter[i] <= o->step_iter[i - 1])
        return tt_section_error (s, "iteration", err, TT_ERR_INVALID,
            "iterations must increase");
    o->n_steps = ni;
    o->learning_rate = o->step_lr[0];
    return TT_OK;
  }

  if ((st = tt_section_float (s, "learning_rate", &o->learning_rate, err)) ||
      (st = tt_section_float (s, "decay_rate", &o->decay_rate, err)) ||
      (st = tt_section_uint (s, "decay_steps", 1, UINT32_MAX,
              &o->decay_steps, err)) ||
      (st = tt_section_float (s, "max_learning_rate", &o->max_lr, err)) ||
      (st = tt_section_float (s, "min_learning_rate", &o->min_lr, err)))
    return st;
  if (tt_section_has (s, "iteration"))
    return tt_section_error (s, "iteration", err, TT_ERR_INVALID,
        "only a step schedule takes iteration");
  if (o->lr_type == TT_LR_EXPONENTIAL && (!tt_section_has (s, "decay_rate")
          || !tt_section_has (s, "decay_steps")))
    return tt_section_error (s, NULL, err, TT_ERR_INVALID,
        "an exponential schedule needs decay_rate and decay_steps");
  if (o->lr_type == TT_LR_COSINE || o->lr_type == TT_LR_LINEAR) {
    if (!tt_section_has (s, "max_learning_rate"))
      o->max_lr = o->learning_rate;
    if (!tt_section_has (s, "decay_steps"))
      return tt_section_error (s, "decay_steps", err, TT_ERR_INVALID,
          "missing key (a %s schedule needs it)", types[type]);
  }
  return TT_OK;
}

/* The optimizer's keys in s; its type under type_key (which must be
 * there unless legacy). legacy: nntrainer's older form, the optimizer's
 * keys in [Model] (whose key check is the caller's), adam by default. */
static tt_status
optimizer_parse_section (tt_optimizer * o, const tt_section * s,
    const char *type_key, bool legacy, const tt_section * sched, tt_error * err)
{
  static const char *const types[] = { "sgd", "adam", "adamw", NULL };
  tt_status st;
  memset (o, 0, sizeof *o);
  /* nntrainer's defaults */
  o->type = TT_OPT_SGD;
  o->learning_rate = 1e-3f;
  o->beta1 = 0.9f;
  o->beta2 = 0.999f;
  o->epsilon = 1e-7f;
  o->lr_type = TT_LR_CONSTANT;
  o->adam_form = TT_ADAM_NNTRAINER;
  if (!s)
    return TT_OK;

  /* nntrainer's [Optimizer] without type is adam too */
  int type = TT_OPT_ADAM;
  bool torch_ref = false;
  if ((!legacy && (st = tt_section_check_keys (s, optimizer_keys, err))) ||
      (st = tt_section_enum (s, type_key, types, &type, err)) ||
      (st = tt_section_float (s, "learning_rate", &o->learning_rate, err)) ||
      (st = tt_section_float (s, "beta1", &o->beta1, err)) ||
      (st = tt_section_float (s, "beta2", &o->beta2, err)) ||
      (st = tt_section_float (s, "epsilon", &o->epsilon, err)) ||
      (st = tt_section_float (s, "weight_decay", &o->weight_decay, err)) ||
      (st = tt_section_float (s, "momentum", &o->momentum, err)) ||
      (st = tt_section_float (s, "decay_rate", &o->decay_rate, err)) ||
      (st = tt_section_uint (s, "decay_steps", 1, UINT32_MAX,
              &o->decay_steps, err)) ||
      (!legacy && (st = tt_section_bool (s, "torch_ref", &torch_ref, err))))
    return st;
  o->type = (tt_optimizer_type) type;
  if (!legacy && tt_section_has (s, "torch_ref") && o->type == TT_OPT_SGD)
    return tt_section_error (s, "torch_ref", err, TT_ERR_INVALID,
        "only adam and adamw take torch_ref");
  o->adam_form = torch_ref ? TT_ADAM_TORCH : TT_ADAM_NNTRAINER;
  if (o->learning_rate <= 0)
    return tt_section_error (s, "learning_rate", err, TT_ERR_INVALID,
        "must be positive");
  if (o->beta1 < 0 || o->beta1 >= 1 || o->beta2 < 0 || o->beta2 >= 1)
    return tt_section_error (s, o->beta1 < 0 || o->beta1 >= 1 ? "beta1" :
        "beta2", err, TT_ERR_INVALID, "must be in [0, 1)");
  if (o->epsilon <= 0)
    return tt_section_error (s, "epsilon", err, TT_ERR_INVALID,
        "must be positive");
  if (o->momentum < 0 || o->momentum >= 1)
    return tt_section_error (s, "momentum", err, TT_ERR_INVALID,
        "must be in [0, 1)");
  if (o->momentum > 0 && o->type != TT_OPT_SGD)
    return tt_section_error (s, "momentum", err, TT_ERR_INVALID,
        "only sgd takes momentum (adam has beta1)");
  if (o->weight_decay < 0)
    return tt_section_error (s, "weight_decay", err, TT_ERR_INVALID,
        "must not be negative");
  /* nntrainer's older form: decay next to the learning rate is an
   * exponential schedule */
  if (tt_section_has (s, "decay_rate") || tt_section_has (s, "decay_steps")) {
    if (!tt_section_has (s, "decay_rate") || !tt_section_has (s, "decay_steps"))
      return tt_section_error (s, NULL, err, TT_ERR_INVALID,
          "decay_rate and decay_steps go together");
    if (sched)
      return tt_section_error (s, "decay_rate", err, TT_ERR_INVALID,
          "give the decay in [LearningRateScheduler] only");
    o->lr_type = TT_LR_EXPONENTIAL;
  }
  if (sched && (st = optimizer_parse_scheduler (o, sched, err)))
    return st;
  if (o->learning_rate <= 0)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [LearningRateScheduler] learning_rate: must be positive", s->file);
  return TT_OK;
}

tt_status
tt_optimizer_parse (tt_optimizer * o, const tt_section * s,
    const tt_section * sched, tt_error * err)
{
  return optimizer_parse_section (o, s, "type", false, sched, err);
}

tt_status
tt_optimizer_parse_legacy (tt_optimizer * o, const tt_section * model,
    const tt_section * sched, tt_error * err)
{
  return optimizer_parse_section (o, model, "optimizer", true, sched, err);
}

uint32_t
tt_optimizer_state_count (const tt_optimizer * o)
{
  if (o->type == TT_OPT_SGD)
    return o->momentum > 0 ? 1 : 0;
  return 2;
}

float
tt_optimizer_learning_rate (const tt_optimizer * o, uint32_t iteration)
{
  switch (o->lr_type) {
    case TT_LR_CONSTANT:
      return o->learning_rate;
    case TT_LR_EXPONENTIAL:
      /* nntrainer's: continuous, rate ^ (iteration / steps) */
      return (float) (o->learning_rate * pow (o->decay_rate,
              (double) iteration / o->decay_steps));
    case TT_LR_STEP:{
      uint32_t i = 0;
      while (i < o->n_steps && iteration >= o->step_iter[i])
        i++;
      return o->step_lr[i];
    }
    case TT_LR_COSINE:{
      double t = iteration >= o->decay_steps ? 1.0 :
          (double) iteration / o->decay_steps;
      return (float) (o->min_lr + 0.5 * (o->max_lr - o->min_lr) *
          (1.0 + cos (M_PI * t)));
    }
    case TT_LR_LINEAR:{
      double t = iteration >= o->decay_steps ? 1.0 :
          (double) iteration / o->decay_steps;
      return (float) (o->max_lr - (o->max_lr - o->min_lr) * t);
    }
  }
  return o->learning_rate;
}

void
tt_optimizer_step_at (const tt_optimizer * o, uint32_t iteration,
    tt_optimizer_step * s)
{
  const float lr = tt_optimizer_learning_rate (o, iteration);
  memset (s, 0, sizeof *s);
  s->type = o->type;
  s->lr = lr;
  s->wd = o->weight_decay;
  s->momentum = o->momentum;
  s->beta1 = o->beta1;
  s->beta2 = o->beta2;
  s->epsilon = o->epsilon;
  if (o->type == TT_OPT_SGD)
    return;
  const double t = (double) iteration + 1.0;
  const double b1 = o->beta1, b2 = o->beta2;
  const bool torch = o->adam_form == TT_ADAM_TORCH;
  /* torch: lr / (1 - b1^t) * m / (sqrt (v) / sqrt (1 - b2^t) + eps);
   * nntrainer: lr * sqrt (1 - b2^t) / (1 - b1^t) * m / (sqrt (v) + eps) */
  s->step = (float) (torch ? lr / (1.0 - pow (b1, t)) :
      lr * sqrt (1.0 - pow (b2, t)) / (1.0 - pow (b1, t)));
  s->inv_bc2 = (float) (torch ? 1.0 / sqrt (1.0 - pow (b2, t)) : 1.0);
  /* adam folds the decay into the gradient (L2); adamw decouples it */
  s->l2 = o->type == TT_OPT_ADAM ? o->weight_decay : 0.0f;
  s->decoupled = o->type == TT_OPT_ADAMW ? 1.0f - lr * o->weight_decay : 1.0f;
}

/* One update of n values of a weight w with gradient g (g is consumed).
 * s0, s1: optimizer state (momentum buffer, or adam's moments). */
void
tt_optimizer_apply (const tt_optimizer * o, uint32_t iteration,
    float *restrict w, float *restrict g, float *restrict s0,
    float *restrict s1, size_t n)
{
  tt_optimizer_step s;
  tt_optimizer_step_at (o, iteration, &s);
  tt_optimizer_apply_step (&s, w, g, s0, s1, n);
}

TT_VECTOR_CLONES void
tt_optimizer_apply_step (const tt_optimizer_step * s, float *restrict w,
    float *restrict g, float *restrict s0, float *restrict s1, size_t n)
{
  const float lr = s->lr, wd = s->wd;
  if (s->type == TT_OPT_SGD) {
    if (s0) {
      const float mu = s->momentum;
      for (size_t i = 0; i < n; i++) {
        float gi = g[i] + wd * w[i];
        s0[i] = mu * s0[i] + gi;
        w[i] -= lr * s0[i];
      }
    } else {
      for (size_t i = 0; i < n; i++)
        w[i] -= lr * (g[i] + wd * w[i]);
    }
    return;
  }
  const float b1 = s->beta1, b2 = s->beta2, eps = s->epsilon;
  const float step = s->step, inv_bc2 = s->inv_bc2, l2 = s->l2;
  const float decoupled = s->decoupled;
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] + l2 * w[i];
    float m = b1 * s0[i] + (1.0f - b1) * gi;
    float v = b2 * s1[i] + (1.0f - b2) * gi * gi;
    s0[i] = m;
    s1[i] = v;
    w[i] = w[i] * decoupled - step * m / (sqrtf (v) * inv_bc2 + eps);
  }
}
