/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the tests of nntrainer's recordings (test_nntrainer_interop.c,
 * test_nntrainer_fp16.c) share: nntrainer's recorded loss, a recorded
 * batch's loss at given weights, and the mathematics' SGD steps by
 * finite differences of the loss, to judge a disagreement with
 * nntrainer.
 */
#ifndef INTEROP_TOOLS_H
#define INTEROP_TOOLS_H

#include "tt_internal.h"
#include "tt_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nntrainer's mean training loss of the second epoch in rec/record.log
 * ("train MODEL epochs=3 last_training_loss=X", 6 digits), or NAN */
static inline double
interop_recorded_loss_in (const char *rec, const char *model)
{
  char path[1400], key[160];
  snprintf (path, sizeof path, "%s/record.log", rec);
  snprintf (key, sizeof key, "train %s epochs=3 last_training_loss=", model);
  size_t len = 0;
  char *log = tt_test_read_file (path, &len);
  const char *at = log ? strstr (log, key) : NULL;
  const double loss = at ? strtod (at + strlen (key), NULL) : NAN;
  free (log);
  return loss;
}

/* The mean loss of recorded batch b (4 samples) at weights w (evaluation
 * mode: the recorded models have no dropout or batch normalization, so
 * it is training's) */
static inline double
interop_batch_loss (tt_model * m, const float *w, size_t nw, const float *x,
    size_t sx, const float *t, size_t sl, int b)
{
  tt_error err;
  tt_batch_result r;
  const void *inputs[1] = { x + (size_t) b * 4 * sx };
  if (tt_model_import_weights (m, w, nw, &err) != TT_OK ||
      tt_model_eval_batch (m, 4, inputs, NULL, t + (size_t) b * 4 * sl, &r,
          &err) != TT_OK)
    return NAN;
  return r.loss;
}

/* The mathematics' 8 SGD steps from w (nw floats) on the 4 recorded
 * batches, each gradient by central differences of step h: w is
 * updated; only where trains (NULL: everywhere). */
static inline bool
interop_fd_sgd_h (tt_model * m, float *w, size_t nw, const float *x,
    size_t sx, const float *t, size_t sl, const bool *trains, double h)
{
  const double lr = m->opt.learning_rate;
  double *g = malloc (nw * sizeof *g);
  bool ok = g != NULL;
  for (int step = 0; step < 8 && ok; step++) {
    for (size_t i = 0; i < nw && ok; i++) {
      g[i] = 0.0;
      if (trains && !trains[i])
        continue;
      const float w0 = w[i];
      w[i] = (float) (w0 + h);
      const double up = interop_batch_loss (m, w, nw, x, sx, t, sl, step % 4);
      w[i] = (float) (w0 - h);
      const double down = interop_batch_loss (m, w, nw, x, sx, t, sl,
          step % 4);
      /* the step actually taken, in float */
      const double taken = (double) (float) (w0 + h) - (double) (float) (w0 -
          h);
      w[i] = w0;
      g[i] = (up - down) / taken;
      ok = isfinite (g[i]);
    }
    for (size_t i = 0; i < nw && ok; i++)
      w[i] = (float) (w[i] - lr * g[i]);
  }
  free (g);
  return ok;
}

#endif
