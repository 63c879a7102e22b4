/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: a model from INI text (tt_model_load_ini_text), compiled at
 * batch 2 with a fresh plan (a stored plan is fuzz_plan's business).
 * Loading and compiling must fail cleanly or give a layout the independent
 * validator accepts, whose optimized INI loads back as the same layout.
 * Small models (a pool of at most 1 MiB, which also bounds the work of a
 * step) then train one step and evaluate, in the planned pool and in the
 * naive layout: the two must agree bit for bit. One input in four (by its
 * size) is compiled for inference only instead, with the same checks.
 */
#include "fuzz_common.h"

#define FUZZ_BATCH 2
#define FUZZ_TRAIN_POOL (1u << 20)

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  tt_set_num_threads (1);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  tt_error err;
  tt_model *m = tt_model_load_ini_text ((const char *) data, size,
      "fuzz.ini", &err);
  if (!m) {
    fuzz_check_error (err.status, &err);
    return 0;
  }
  tt_status st;
  if ((st = tt_model_set_batch_size (m, FUZZ_BATCH, &err)) ||
      (st = tt_model_set_inference (m, size % 4 == 3, &err)) ||
      (tt_model_has_stored_plan (m) &&
          (st = tt_model_set_plan_mode (m, TT_PLAN_REPLAN, &err))))
    FUZZ_CHECK (st == TT_OK, "%s", err.message);
  st = tt_model_compile (m, &err);
  if (st != TT_OK) {
    fuzz_check_error (st, &err);
    tt_model_free (m);
    return 0;
  }
  fuzz_check_layout (m);
  fuzz_check_plan_round_trip (m);
  if (m->pool_bytes <= FUZZ_TRAIN_POOL)
    fuzz_check_against_naive (m, data, size, FUZZ_BATCH);
  tt_model_free (m);
  return 0;
}
