/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: optimized INIs (a model plus its stored [Plan]; seeds from
 * `tensor-trainer plan`), loaded and compiled as they are. The stored plan
 * must be rejected with a message, or accepted only if it is valid: the
 * independent validator accepts the layout, the pool asks for no more than
 * the naive layout needs, the plan saves and loads back unchanged, and
 * one training step plus an evaluation give the same bits as the naive
 * layout (ASan watches the pool's edges, the comparison its inside).
 *
 * Stored plans go stale when the planner changes (new scratch tensors,
 * other lifetimes), and a stale seed only ever reaches the rejection. So
 * when FUZZ_REPLAN_DIR names a folder (run.sh: a copy of corpus/plan), its
 * files are re-planned at start with the engine under test, each at the
 * batch size of its own [Model] and in the mode of its plan (training or
 * inference only, [Plan] mode). Each input is compiled in the mode its
 * [Plan] names, so inference plans are validated too.
 */
#include "fuzz_common.h"

#include <dirent.h>

#define FUZZ_TRAIN_POOL (8u << 20)

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static void
fuzz_replan (const char *dir)
{
  DIR *d = opendir (dir);
  FUZZ_CHECK (d != NULL, "%s: %s", dir, strerror (errno));
  int done = 0, seen = 0;
  for (struct dirent * e; (e = readdir (d));) {
    if (e->d_name[0] == '.')
      continue;
    char path[4096];
    snprintf (path, sizeof path, "%s/%s", dir, e->d_name);
    size_t len;
    char *text = fuzz_read_all (path, &len);
    tt_error err;
    tt_model *m = tt_model_load_ini_text (text, len, path, &err);
    seen++;
    if (m && tt_model_set_plan_mode (m, TT_PLAN_REPLAN, &err) == TT_OK &&
        tt_model_set_inference (m, tt_plan_ini_inference (m), &err) == TT_OK &&
        tt_model_compile (m, &err) == TT_OK &&
        tt_model_save_plan_ini (m, path, &err) == TT_OK)
      done++;
    else
      fprintf (stderr, "fuzz_plan: cannot re-plan %s: %s\n", path, err.message);
    tt_model_free (m);
    free (text);
  }
  closedir (d);
  fprintf (stderr, "fuzz_plan: re-planned %d of %d seeds in %s\n", done,
      seen, dir);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  tt_set_num_threads (1);
  const char *dir = getenv ("FUZZ_REPLAN_DIR");
  if (dir && *dir)
    fuzz_replan (dir);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  tt_error err;
  tt_model *m = tt_model_load_ini_text ((const char *) data, size,
      "fuzz.opt.ini", &err);
  if (!m) {
    fuzz_check_error (err.status, &err);
    return 0;
  }
  fuzz_pool_refused = 0;
  tt_status st = tt_model_set_inference (m, tt_plan_ini_inference (m), &err);
  FUZZ_CHECK (st == TT_OK, "%s", err.message);
  st = tt_model_compile (m, &err);
  if (st != TT_OK) {
    fuzz_check_error (st, &err);
    /* refused by the harness's pool cap, not by validation: the plan
     * passed, so it must at least not ask for more than naive */
    if (st == TT_ERR_NOMEM && fuzz_pool_refused && m->plan.from_stored_plan)
      FUZZ_CHECK (m->pool_bytes <= m->plan.naive_bytes, "a stored plan "
          "asking for a %llu-byte pool passed validation; the naive layout "
          "needs %llu", (unsigned long long) m->pool_bytes,
          (unsigned long long) m->plan.naive_bytes);
    tt_model_free (m);
    return 0;
  }
  fuzz_check_layout (m);
  fuzz_check_plan_round_trip (m);
  if (m->pool_bytes <= FUZZ_TRAIN_POOL)
    fuzz_check_against_naive (m, data, size, m->batch_size < 2 ?
        m->batch_size : 2);
  tt_model_free (m);
  return 0;
}
