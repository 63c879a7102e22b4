/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A program embedding the engine, built by install_test.sh against the
 * installed tree only (pkg-config tensor-trainer): opens a model, trains
 * one batch of made-up samples, prints the library's version.
 *
 * usage: embed MODEL.ini
 */
#include <tensor-trainer/tt_engine.h>
#include <tensor-trainer/tt_version.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !TT_VERSION_CHECK (0, 1, 0)
#error "tensor-trainer 0.1.0 or later is needed"
#endif

int
main (int argc, char **argv)
{
  if (argc != 2) {
    fprintf (stderr, "usage: %s MODEL.ini\n", argv[0]);
    return 2;
  }
  tt_error err;
  tt_model *m = tt_model_open (argv[1], NULL, NULL, &err);
  if (!m) {
    fprintf (stderr, "embed: %s\n", err.message);
    return 1;
  }
  if (tt_model_num_inputs (m) != 1) {
    fprintf (stderr, "embed: %s has %u inputs, 1 expected\n", argv[1],
        tt_model_num_inputs (m));
    tt_model_free (m);
    return 1;
  }
  const uint32_t batch = tt_model_batch_size (m);
  tt_shape in, out = tt_model_label_shape (m);
  tt_model_input_shape (m, 0, &in);
  const size_t per_in = (size_t) in.channel * in.height * in.width;
  const size_t classes = (size_t) out.channel * out.height * out.width;
  float *x = malloc (batch * per_in * sizeof *x);
  float *y = calloc (batch * classes, sizeof *y);
  int rc = 1;
  if (!x || !y) {
    fprintf (stderr, "embed: out of memory\n");
    goto out;
  }
  for (size_t i = 0; i < batch * per_in; i++)
    x[i] = (float) (i % 17) / 17.0f;
  for (uint32_t s = 0; s < batch; s++)
    y[s * classes + s % classes] = 1.0f;
  const void *inputs[1] = { x };
  const tt_dtype types[1] = { TT_DTYPE_FLOAT32 };
  tt_batch_result r;
  if (tt_model_train_batch (m, batch, inputs, types, y, &r, &err)) {
    fprintf (stderr, "embed: %s\n", err.message);
    goto out;
  }
  printf ("version=%s headers=%s batch=%u loss=%.6f\n", tt_version (),
      TT_VERSION_STRING, r.samples, r.loss);
  if (strcmp (tt_version (), TT_VERSION_STRING) || !isfinite (r.loss) ||
      r.samples != batch) {
    fprintf (stderr, "embed: unexpected result\n");
    goto out;
  }
  rc = 0;
out:
  free (x);
  free (y);
  tt_model_free (m);
  return rc;
}
