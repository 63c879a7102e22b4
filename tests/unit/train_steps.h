/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Training steps on fixed pseudo-random data, for tests that train two
 * models the same way and compare them (update as you go, memory limits):
 * every input value ((j * 7919 + i * 31) % 255) / divisor, sample b's label
 * class (b * 7) % classes, and the last batch one sample short, so a
 * partial batch is covered too; and a byte-for-byte comparison of two
 * models' state. Include after tt_test.h.
 */
#ifndef TT_TRAIN_STEPS_H
#define TT_TRAIN_STEPS_H

#include "tt_engine.h"

static void
tt_test_train_steps (tt_model * m, const char *name, int steps, float divisor)
{
  const uint32_t batch = tt_model_batch_size (m);
  const tt_shape lb = tt_model_label_shape (m);
  const size_t nl = (size_t) lb.channel * lb.height * lb.width;
  const void *inputs[8] = { NULL };
  float *x[8] = { NULL };
  for (uint32_t i = 0; i < tt_model_num_inputs (m) && i < 8; i++) {
    tt_shape in;
    tt_model_input_shape (m, i, &in);
    const size_t nx = (size_t) batch * in.channel * in.height * in.width;
    x[i] = malloc (nx * sizeof (float));
    for (size_t j = 0; j < nx; j++)
      x[i][j] = (float) ((j * 7919 + i * 31) % 255) / divisor;
    inputs[i] = x[i];
  }
  float *t = calloc ((size_t) batch * nl, sizeof *t);
  for (uint32_t b = 0; b < batch; b++)
    t[b * nl + (b * 7u) % nl] = 1;
  for (int s = 0; s < steps; s++) {
    tt_error err;
    tt_batch_result r;
    const uint32_t n = s == steps - 1 && batch > 1 ? batch - 1 : batch;
    CHECK (tt_model_train_batch (m, n, inputs, NULL, t, &r, &err) == TT_OK,
        "%s: %s", name, err.message);
  }
  for (int i = 0; i < 8; i++)
    free (x[i]);
  free (t);
}

#ifdef TT_INTERNAL_H
/* Weights (moving statistics included) and optimizer state of a and b,
 * byte for byte (for tests that include tt_internal.h first); names the
 * first that differs. */
static inline bool
tt_test_same_state (tt_model * a, tt_model * b, const char *name)
{
  uint32_t na, nb;
  int *ia = tt_bin_regions (a, true, &na), *ib = tt_bin_regions (b, true, &nb);
  bool same = ia && ib && na == nb && na > 0;
  for (uint32_t i = 0; same && i < na; i++) {
    same = (ia[i] < 0) == (ib[i] < 0);
    if (ia[i] < 0)
      continue;
    const tt_tensor *x = &a->tensors[ia[i]], *y = &b->tensors[ib[i]];
    same = x->count == y->count && !strcmp (x->name, y->name) &&
        !memcmp (x->data, y->data, x->count * sizeof (float));
    if (!same)
      printf ("%s: %s differs\n", name, x->name);
  }
  free (ia);
  free (ib);
  return same;
}
#endif

#endif
