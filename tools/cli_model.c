/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The model a tensor-trainer subcommand works on: MODEL opened from the
 * options (--mode, --trust, --align, --batch, --replan, --naive,
 * --inference, --memory-limit, --seed, --threads) with the messages of a
 * model that does not open; and its plan and memory limit printed, as
 * train, info, plan and check show them.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool
cli_bundle_mode (const char *name, tt_bundle_mode * mode)
{
  if (!name || !strcmp (name, "read"))
    *mode = TT_BUNDLE_READ;
  else if (!strcmp (name, "mmap"))
    *mode = TT_BUNDLE_MMAP;
  else if (!strcmp (name, "inplace"))
    *mode = TT_BUNDLE_IN_PLACE;
  else
    return false;
  return true;
}

/* A model that failed to open: the message, and when a stored plan was
 * refused (made for another batch, say) the option that plans afresh. */
static void
cli_fail_open (const cli_options * o, const tt_error * err)
{
  if (!o->replan && !o->naive && strstr (err->message, "stored plan "
          "rejected"))
    cli_fail ("%s\n(pass --replan to plan the model afresh%s)", err->message,
        o->batch ? " for this --batch" : "");
  else
    cli_fail ("%s", err->message);
}

/* Opens MODEL, an INI file or a bundle, compiled; info (if not NULL) gets
 * what it is, *seconds (if not NULL) the time it took. */
tt_model *
cli_open_model (const cli_options * o, tt_open_info * info, double *seconds)
{
  tt_error err;
  tt_open_info scratch;
  tt_open_options oo = { 0 };
  if (!info)
    info = &scratch;
  if (!cli_bundle_mode (o->mode, &oo.mode)) {
    cli_fail ("--mode is read, mmap or inplace, not '%s'", o->mode);
    return NULL;
  }
  /* --mode and --trust say the model is a bundle; --align, that it is
   * not (tt_model_open refuses the other kind before reading it) */
  oo.kind = o->mode || o->trust ? TT_MODEL_FILE_BUNDLE : TT_MODEL_FILE_ANY;
  oo.alignment = o->align;
  oo.batch_size = o->batch;
  oo.plan_mode = o->naive ? TT_PLAN_NAIVE : o->replan ? TT_PLAN_REPLAN :
      TT_PLAN_AUTO;
  oo.plan_thorough = o->plan_thorough;
  oo.inference = o->inference;
  oo.memory_limit = o->memory_limit;
  oo.has_seed = o->has_seed;
  oo.seed = o->seed;
  oo.trust = o->trust;
  oo.threads = (unsigned) o->threads;
  oo.train = o->train;
  oo.precision = o->precision;
  const double t0 = cli_now ();
  tt_model *m = tt_model_open (o->model, &oo, info, &err);
  if (!m) {
    if (info->failed_step == TT_OPEN_KIND && info->kind == TT_MODEL_FILE_BUNDLE)
      cli_fail ("--align sets the alignment of a plan made from an INI "
          "file; %s is a bundle", o->model);
    else if (info->failed_step == TT_OPEN_KIND)
      cli_fail ("--mode and --trust apply to bundle models; %s is not one",
          o->model);
    else if (info->failed_step == TT_OPEN_READ &&
        info->kind != TT_MODEL_FILE_BUNDLE)
      cli_fail ("%s", err.message);
    else
      cli_fail_open (o, &err);
    return NULL;
  }
  if (seconds)
    *seconds = cli_now () - t0;
  cli_precision_note (o, m);
  return m;
}

/* Under a memory limit: the limit, what the pool would be without it,
 * and the activations dropped, each rebuilt during backward. */
void
cli_print_memory (const tt_model * m, const tt_plan_info * p)
{
  if (!p->memory_limit)
    return;
  printf ("%-22s %14" PRIu64 "\n", "memory limit", p->memory_limit);
  if (p->unlimited_pool_bytes)
    printf ("%-22s %14" PRIu64 "\n", "pool without limit",
        p->unlimited_pool_bytes);
  printf ("recomputed=%u (%" PRIu64 " bytes) swapped=%u (%" PRIu64
      " bytes)\n", p->recomputed, p->recomputed_bytes, p->swapped,
      p->swapped_bytes);
  const char *name, *how;
  for (uint32_t i = 0; (name = tt_model_plan_dropped (m, i, &how)); i++)
    printf ("  %-16s %s\n", how, name);
}

void
cli_print_plan (const tt_plan_info * p)
{
  printf ("%-22s %14s\n", "", "bytes");
  printf ("%-22s %14" PRIu64 "\n", "naive (no reuse)", p->naive_bytes);
  printf ("%-22s %14" PRIu64 "\n", "depth-first order", p->dfs_pool_bytes);
  printf ("%-22s %14" PRIu64 "  (%.4f x bound)\n", "planned pool",
      p->pool_bytes, p->lower_bound ? (double) p->pool_bytes /
      (double) p->lower_bound : 1.0);
  printf ("%-22s %14" PRIu64 "\n", "lower bound", p->lower_bound);
  printf ("tensors=%u in_place_layers=%u order_search=%s %s=%.3f ms\n",
      p->tensors, p->in_place_layers, p->order_exact ? "exact" : "greedy",
      p->from_stored_plan ? "validation" : "planning", p->plan_seconds * 1e3);
  if (p->laid_out_threads == 2)
    printf ("laid out for 2 threads' halves (for any count: %" PRIu64
        " bytes)\n", p->one_thread_pool_bytes);
}
