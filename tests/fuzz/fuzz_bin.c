/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: BIN weights (tt_model_load_bin, through a memfd) for two
 * small models compiled once: a conv2d + batch_normalization +
 * fully_connected model with Adam (weights, the "adam" tag and moments,
 * counters) and a fully_connected model with SGD (weights, counters).
 *
 * Input: byte 0 picks the model (bit 0) and whether the rest is fitted
 * (bit 1: cut or zero-padded to the valid size byte 1 picks, with the tag
 * written in place unless bit 2 is set), so the fuzzer reaches the checks
 * behind the size check as often as the size check itself; the bytes from
 * 2 on are the file.
 *
 * Each input goes through both loaders, tt_model_load_bin (a memfd path)
 * and tt_model_load_bin_memory, which must agree: same status, same model
 * afterwards. A rejected file leaves the model untouched (README: "a
 * rejected file leaves the model untouched"); an accepted one holds only
 * finite values, saves back to the same bytes, and trains a step.
 *
 * Each model also has an inference-only twin (no moments in its pool: the
 * loader skips them in the file): it must accept exactly the files the
 * training model accepts, with the same weights and counters.
 */
#include "fuzz_common.h"
#include "fuzz_models.h"

typedef struct
{
  tt_model *m;
  void *pristine;               /* the pool after compile */
  size_t sizes[6];              /* the valid file sizes */
  size_t weights;               /* bytes of weights */
  bool adam;
} fuzz_model;

static fuzz_model models[2];
static tt_model *twins[2];      /* the same models, inference only */
static float *twin_weights[2];
static fuzz_file file;
static uint8_t *fitted;
static size_t fitted_cap;
static void *from_file;         /* the pool after the file loader */
static size_t from_file_cap;

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  tt_set_num_threads (1);
  fuzz_file_open (&file, "fuzz_bin");
  for (int i = 0; i < 2; i++) {
    fuzz_model *f = &models[i];
    tt_error err;
    f->m = tt_model_load_ini_text (fuzz_models[i], strlen (fuzz_models[i]),
        i ? "sgd.ini" : "adam.ini", &err);
    FUZZ_CHECK (f->m && tt_model_compile (f->m, &err) == TT_OK, "%s",
        err.message);
    f->pristine = malloc (f->m->pool_bytes);
    FUZZ_CHECK (f->pristine != NULL, "out of memory");
    memcpy (f->pristine, f->m->pool, f->m->pool_bytes);
    f->adam = f->m->opt.type == TT_OPT_ADAM;
    f->weights = tt_bin_weight_bytes (f->m);
    size_t mom = 0;
    for (uint32_t l = 0; l < f->m->n_layers; l++)
      for (uint32_t w = 0; w < f->m->layers[l].n_weights; w++)
        if (f->m->layers[l].weights[w].trainable)
          mom += 2 * f->m->layers[l].weights[w].count * sizeof (float);
    f->sizes[0] = f->weights;
    f->sizes[1] = f->weights + 8;
    f->sizes[2] = f->adam ? f->weights + 4 + mom : f->weights;
    f->sizes[3] = f->adam ? f->weights + 4 + mom + 8 : f->weights + 8;
    /* nntrainer's save() after initialize() or train(): the tag without
     * moments, with or without counters */
    f->sizes[4] = f->adam ? f->weights + 4 : f->weights;
    f->sizes[5] = f->adam ? f->weights + 4 + 8 : f->weights + 8;
    twins[i] = tt_model_load_ini_text (fuzz_models[i],
        strlen (fuzz_models[i]), i ? "sgd.ini" : "adam.ini", &err);
    FUZZ_CHECK (twins[i] && tt_model_set_inference (twins[i], true,
            &err) == TT_OK && tt_model_compile (twins[i], &err) == TT_OK,
        "%s", err.message);
    twin_weights[i] = malloc (f->weights);
    FUZZ_CHECK (twin_weights[i] != NULL, "out of memory");
  }
  return 0;
}

/* The inference twin of f loads the same file as f did (status st). */
static void
fuzz_check_twin (int i, const uint8_t * bin, size_t len, tt_status st)
{
  const fuzz_model *f = &models[i];
  tt_model *t = twins[i];
  tt_error err;
  t->epoch = t->iteration = 0;  /* as the training model starts each input */
  tt_status tst = tt_model_load_bin_memory (t, len ? bin : NULL, len,
      "fuzz.bin", &err);
  FUZZ_CHECK (tst == st, "training model: %d, inference twin: %s",
      (int) st, tst ? err.message : "OK");
  if (tst != TT_OK)
    return;
  const size_t n = f->weights / sizeof (float);
  FUZZ_CHECK (tt_model_export_weights (t, twin_weights[i], n, &err) ==
      TT_OK, "%s", err.message);
  size_t at = 0;
  for (uint32_t l = 0; l < f->m->n_layers; l++) {
    const tt_layer *layer = &f->m->layers[f->m->canonical[l]];
    for (uint32_t w = 0; w < layer->n_weights; w++) {
      const tt_weight *x = &layer->weights[w];
      FUZZ_CHECK (!memcmp (twin_weights[i] + at, tt_data (f->m, x->value),
              x->count * sizeof (float)), "%s:%s differs in the inference "
          "twin", layer->name, x->suffix);
      at += x->count;
    }
  }
  FUZZ_CHECK (t->epoch == f->m->epoch && t->iteration == f->m->iteration,
      "the inference twin's counters differ");
}

/* Everything a load may change, as it was. */
static bool
fuzz_untouched (const fuzz_model * f)
{
  return f->m->epoch == 0 && f->m->iteration == 0 &&
      !memcmp (f->m->pool, f->pristine, f->m->pool_bytes);
}

static void
fuzz_check_saved (const fuzz_model * f, const uint8_t * bin, size_t len)
{
  tt_error err;
  const char *path = fuzz_tmp_path ();
  tt_status st = tt_model_save_bin (f->m, path, &err);
  FUZZ_CHECK (st == TT_OK, "saving: %s", err.message);
  size_t n;
  uint8_t *saved = (uint8_t *) fuzz_read_all (path, &n);
  FUZZ_CHECK (n == f->sizes[3], "saved %zu bytes, expected %zu", n,
      f->sizes[3]);
  /* the weights as loaded */
  FUZZ_CHECK (!memcmp (saved, bin, f->weights), "weights changed");
  bool counters = len == f->sizes[1] || len == f->sizes[3] ||
      len == f->sizes[5];
  bool moments = f->adam && (len == f->sizes[2] || len == f->sizes[3]);
  if (moments)
    FUZZ_CHECK (!memcmp (saved + f->weights, bin + f->weights,
            f->sizes[2] - f->weights), "moments changed");
  else
    for (size_t i = f->weights + (f->adam ? 4 : 0); i < n - 8; i++)
      FUZZ_CHECK (saved[i] == 0, "moments not reset at byte %zu", i);
  if (counters)
    FUZZ_CHECK (!memcmp (saved + n - 8, bin + len - 8, 8), "counters changed");
  else
    FUZZ_CHECK (!memcmp (saved + n - 8, "\0\0\0\0\0\0\0\0", 8),
        "counters changed without counters in the file");
  free (saved);
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  if (size < 2)
    return 0;
  fuzz_model *f = &models[data[0] & 1];
  const uint8_t *bin = data + 2;
  size_t len = size - 2;
  if (data[0] & 2) {
    len = f->sizes[data[1] % 6];
    if (len > fitted_cap) {
      free (fitted);
      fitted = malloc (fitted_cap = len);
      FUZZ_CHECK (fitted != NULL, "out of memory");
    }
    memset (fitted, 0, len);
    memcpy (fitted, bin, size - 2 < len ? size - 2 : len);
    if (f->adam && len >= f->weights + 4 && !(data[0] & 4))
      memcpy (fitted + f->weights, "adam", 4);
    bin = fitted;
  }
  fuzz_file_set (&file, bin, len);

  /* the file loader, then the memory loader from the same state */
  tt_error err;
  tt_status st = tt_model_load_bin (f->m, file.path, &err);
  if (st != TT_OK)
    fuzz_check_error (st, &err);
  if (f->m->pool_bytes > from_file_cap) {
    free (from_file);
    from_file = malloc (from_file_cap = f->m->pool_bytes);
    FUZZ_CHECK (from_file != NULL, "out of memory");
  }
  memcpy (from_file, f->m->pool, f->m->pool_bytes);
  uint32_t epoch = f->m->epoch, iteration = f->m->iteration;
  memcpy (f->m->pool, f->pristine, f->m->pool_bytes);
  f->m->epoch = f->m->iteration = 0;
  tt_error merr;
  tt_status mst = tt_model_load_bin_memory (f->m, len ? bin : NULL, len,
      "fuzz.bin", &merr);
  FUZZ_CHECK (mst == st, "file loader: %s; memory loader: %s",
      st ? err.message : "OK", mst ? merr.message : "OK");
  FUZZ_CHECK (!memcmp (from_file, f->m->pool, f->m->pool_bytes) &&
      epoch == f->m->epoch && iteration == f->m->iteration,
      "the file and memory loaders leave different models");
  fuzz_check_twin (data[0] & 1, bin, len, st);
  if (st != TT_OK) {
    fuzz_check_error (st, &err);
    FUZZ_CHECK (fuzz_untouched (f), "a rejected file changed the model: %s",
        err.message);
    return 0;
  }
  bool valid_size = false;
  for (int i = 0; i < 6; i++)
    valid_size |= len == f->sizes[i];
  FUZZ_CHECK (valid_size, "a %zu-byte file was accepted", len);
  for (uint32_t l = 0; l < f->m->n_layers; l++)
    for (uint32_t w = 0; w < f->m->layers[l].n_weights; w++) {
      const tt_weight *x = &f->m->layers[l].weights[w];
      const float *v = tt_data (f->m, x->value);
      for (size_t k = 0; k < x->count; k++)
        FUZZ_CHECK (isfinite (v[k]), "%s:%s[%zu] = %g accepted",
            f->m->layers[l].name, x->suffix, k, (double) v[k]);
    }
  fuzz_check_saved (f, bin, len);

  /* and the model trains on them (or reports a non-finite loss) */
  fuzz_batch b;
  FUZZ_CHECK (fuzz_batch_make (f->m, 2, &b), "out of memory");
  st = tt_model_train_batch (f->m, 2, b.inputs, NULL, b.labels, NULL, &err);
  if (st != TT_OK) {
    FUZZ_CHECK (st == TT_ERR_NUMERIC, "%s", err.message);
    fuzz_check_error (st, &err);
  }
  fuzz_batch_free (&b);

  /* back to the compiled state, so every input starts from the same */
  memcpy (f->m->pool, f->pristine, f->m->pool_bytes);
  f->m->epoch = f->m->iteration = 0;
  return 0;
}
