/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Linked with a bundle exported by `tensor-trainer export --symbol tt_blob`
 * (either route) and the engine's static library, by test_export.sh. Opens
 * the model from the linked symbol (copied into the pool, and, when asked,
 * in place), evaluates a few samples and compares the outputs, bit for
 * bit, with the model opened from the bundle's file.
 *
 * usage: export_prog BUNDLE ALIGN copy|inplace
 */
#include "tt_engine.h"
#include "tt_bundle.h"
#include "tt_test.h"
#include "tt_blob.h"

#include <stdint.h>

static float *
ep_eval (tt_model * m, uint32_t n, const float *x, size_t per_out)
{
  tt_error err;
  const void *inputs[1] = { x };
  tt_status st = tt_model_eval_batch (m, n, inputs, NULL, NULL, NULL, &err);
  CHECK (st == TT_OK, "eval: %s", err.message);
  float *y = malloc (n * per_out * sizeof *y);
  if (st == TT_OK)
    memcpy (y, tt_model_output (m), n * per_out * sizeof *y);
  else
    memset (y, 0, n * per_out * sizeof *y);
  return y;
}

int
main (int argc, char **argv)
{
  if (argc != 4) {
    fprintf (stderr, "usage: export_prog BUNDLE ALIGN copy|inplace\n");
    return 2;
  }
  const char *path = argv[1];
  const uintptr_t align = (uintptr_t) strtoul (argv[2], NULL, 10);
  const bool in_place = !strcmp (argv[3], "inplace");
  tt_error err;

  /* the symbol is the file, aligned as asked */
  CHECK (tt_blob_size == TT_BLOB_SIZE, "size %zu vs %zu", tt_blob_size,
      (size_t) TT_BLOB_SIZE);
  CHECK ((uintptr_t) tt_blob % align == 0, "tt_blob at %p is not aligned "
      "to %lu", (const void *) tt_blob, (unsigned long) align);
  FILE *f = fopen (path, "rb");
  unsigned char *file = malloc (tt_blob_size + 1);
  size_t got = f ? fread (file, 1, tt_blob_size + 1, f) : 0;
  if (f)
    fclose (f);
  CHECK (got == tt_blob_size && !memcmp (file, tt_blob, tt_blob_size),
      "the linked bytes differ from %s (%zu of %zu bytes read)", path, got,
      tt_blob_size);
  free (file);

  tt_model *ref = tt_bundle_load (path, NULL, &err);
  CHECK (ref != NULL, "%s: %s", path, err.message);
  tt_bundle_load_options copy = { 0 }, place = { 0 }, trusted = { 0 };
  copy.mode = TT_BUNDLE_READ;
  place.mode = TT_BUNDLE_IN_PLACE;
  trusted.mode = TT_BUNDLE_IN_PLACE;
  trusted.trust = true;
  tt_model *models[3] = { NULL, NULL, NULL };
  const char *names[3] = { "symbol copied", "symbol in place",
    "symbol in place, trusted"
  };
  models[0] = tt_bundle_load_memory (tt_blob, tt_blob_size, "tt_blob", &copy,
      &err);
  CHECK (models[0] != NULL, "copy: %s", err.message);
  if (in_place) {
    models[1] = tt_bundle_load_memory (tt_blob, tt_blob_size, "tt_blob",
        &place, &err);
    CHECK (models[1] != NULL, "in place: %s", err.message);
    models[2] = tt_bundle_load_memory (tt_blob, tt_blob_size, "tt_blob",
        &trusted, &err);
    CHECK (models[2] != NULL, "in place, trusted: %s", err.message);
  }
  if (!ref)
    return tt_test_summary ();

  /* a few samples */
  tt_shape in, out = tt_model_output_shape (ref);
  tt_model_input_shape (ref, 0, &in);
  const uint32_t n = tt_model_batch_size (ref) < 3 ?
      tt_model_batch_size (ref) : 3;
  const size_t per_in = (size_t) in.channel * in.height * in.width;
  const size_t per_out = (size_t) out.channel * out.height * out.width;
  float *x = malloc (n * per_in * sizeof *x);
  uint32_t state = 12345;
  for (size_t i = 0; i < n * per_in; i++) {
    state = state * 1664525u + 1013904223u;
    x[i] = (float) (state >> 8) / 16777216.0f * 2.0f - 1.0f;
  }
  float *want = ep_eval (ref, n, x, per_out);
  printf ("file %s: %u samples, outputs", path, n);
  for (size_t i = 0; i < n * per_out && i < 6; i++)
    printf (" %.6g", (double) want[i]);
  printf (" ...\n");
  for (int k = 0; k < 3; k++) {
    if (!models[k])
      continue;
    float *y = ep_eval (models[k], n, x, per_out);
    CHECK (!memcmp (y, want, n * per_out * sizeof *y), "%s: outputs differ "
        "from the file's", names[k]);
    printf ("%s: outputs %s\n", names[k], memcmp (y, want,
            n * per_out * sizeof *y) ? "DIFFER" : "identical");
    free (y);
  }
  /* in place from .rodata: evaluation only, and said so */
  if (models[1]) {
    float *labels = calloc (n * per_out, sizeof *labels);
    const void *inputs[1] = { x };
    tt_status st = tt_model_train_batch (models[1], n, inputs, NULL, labels,
        NULL, &err);
    CHECK (st == TT_ERR_STATE && strstr (err.message, "in place"),
        "training in place: %s", st ? err.message : "accepted");
    free (labels);
  }
  /* copied, the model trains */
  if (models[0]) {
    float *labels = calloc (n * per_out, sizeof *labels);
    labels[0] = 1.0f;
    const void *inputs[1] = { x };
    tt_status st = tt_model_train_batch (models[0], n, inputs, NULL, labels,
        NULL, &err);
    CHECK (st == TT_OK, "training the copy: %s", err.message);
    free (labels);
  }
  for (int k = 0; k < 3; k++)
    tt_model_free (models[k]);
  tt_model_free (ref);
  free (want);
  free (x);
  return tt_test_summary ();
}
