/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cost of a live weight hand-off (gsttensormodelshare.c) for a model:
 * the trainer's side (copy its weights into a snapshot and swap it in) and
 * the predictor's side (take the snapshot, copy it into its own inference
 * model), each timed over many rounds; prints the medians in microseconds
 * and the weight bytes moved.
 *
 *   handoff-cost MODEL.ini [ROUNDS]
 */
#include "gsttensormodelshare.h"

#include <stdio.h>
#include <stdlib.h>

static int
compare_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static tt_model *
open_model (const char *path, gboolean inference)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (path, &err);
  if (!m || tt_model_set_inference (m, inference, &err) ||
      (inference && tt_model_set_batch_size (m, 1, &err)) ||
      tt_model_compile (m, &err)) {
    fprintf (stderr, "handoff-cost: %s\n", err.message);
    exit (1);
  }
  return m;
}

int
main (int argc, char **argv)
{
  if (argc < 2) {
    fprintf (stderr, "usage: handoff-cost MODEL.ini [ROUNDS]\n");
    return 2;
  }
  const int rounds = argc > 2 ? atoi (argv[2]) : 2000;
  tt_model *trainer = open_model (argv[1], FALSE);
  tt_model *predictor = open_model (argv[1], TRUE);
  double *publish = g_new (double, rounds), *take = g_new (double, rounds);
  guint64 have = 0;
  tt_error err;

  gst_tensor_model_share_subscribe ("bench");
  for (int r = 0; r < rounds; r++) {
    gint64 t0 = g_get_monotonic_time ();
    if (!gst_tensor_model_share_publish ("bench", trainer, &err)) {
      fprintf (stderr, "handoff-cost: %s\n", err.message);
      return 1;
    }
    gint64 t1 = g_get_monotonic_time ();
    GstTensorWeights *w = gst_tensor_model_share_latest ("bench", have);
    if (!w || tt_model_import_weights (predictor, w->data, w->n_floats, &err)) {
      fprintf (stderr, "handoff-cost: no snapshot or %s\n", err.message);
      return 1;
    }
    have = w->version;
    gst_tensor_weights_unref (w);
    gint64 t2 = g_get_monotonic_time ();
    publish[r] = (double) (t1 - t0);
    take[r] = (double) (t2 - t1);
  }
  gst_tensor_model_share_unsubscribe ("bench");
  gst_tensor_model_share_withdraw ("bench");
  qsort (publish, rounds, sizeof *publish, compare_double);
  qsort (take, rounds, sizeof *take, compare_double);
  printf ("model=%s weight_bytes=%zu rounds=%d publish_us=%.1f "
      "take_us=%.1f total_us=%.1f\n", argv[1],
      tt_model_weight_floats (trainer) * sizeof (float), rounds,
      publish[rounds / 2], take[rounds / 2],
      publish[rounds / 2] + take[rounds / 2]);
  g_free (publish);
  g_free (take);
  tt_model_free (trainer);
  tt_model_free (predictor);
  return 0;
}
