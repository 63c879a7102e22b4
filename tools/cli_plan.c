/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer plan and check: a model's memory plan stored (an
 * optimized INI or a bundle), and a stored plan validated.
 */
#include "cli.h"
#include "tt_bundle.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int
cli_plan (const cli_options * o)
{
  if (!o->output)
    return cli_fail ("plan needs -o OUT.opt.ini (or OUT.ttb for a bundle)");
  /* the extension says the form, as for train --save: the optimized INI,
   * or a bundle (with the model's initialized weights); BIN weights hold
   * no plan */
  const char *slash = strrchr (o->output, '/');
  const char *dot = strrchr (slash ? slash + 1 : o->output, '.');
  const bool ini = dot && !strcasecmp (dot, ".ini");
  tt_error err;
  if (dot && !strcasecmp (dot, ".bin"))
    return cli_fail ("%s: plan writes the optimized INI (.ini) or a bundle "
        "(.ttb); BIN weights cannot hold a plan", o->output);
  if (!ini && tt_model_check_save_path (o->output, &err))
    return cli_fail ("%s", err.message);
  cli_options copy = *o;
  copy.replan = true;
  /* a stored plan is made once: worth the longer search for the bound,
   * unless --quick asks for the compile's */
  copy.plan_thorough = !o->plan_quick;
  tt_model *m = cli_open_model (&copy, NULL, NULL);
  if (!m)
    return 1;
  tt_plan_info p;
  tt_model_plan_info (m, &p);
  int rc = 0;
  if (ini ? tt_model_save_plan_ini (m, o->output, &err) :
      tt_bundle_save (m, o->output, NULL, &err)) {
    rc = cli_fail ("%s", err.message);
  } else {
    printf ("model=%s batch=%u -> %s%s\n", o->model, tt_model_batch_size (m),
        o->output, ini ? "" : " (bundle, initialized weights)");
    cli_print_plan (&p);
    cli_print_memory (m, &p);
  }
  tt_model_free (m);
  return rc;
}

int
cli_check (const cli_options * o)
{
  tt_error err;
  /* opened whole, a bundle's header, checksums and weights too; a stored
   * plan is validated as the model is compiled */
  tt_open_options oo = { 0 };
  oo.inference = o->inference;
  tt_model *m = tt_model_open (o->model, &oo, NULL, &err);
  if (!m)
    return cli_fail ("%s", err.message);
  int rc = 0;
  tt_plan_info p;
  if (!tt_model_has_stored_plan (m))
    rc = cli_fail ("%s: no stored plan ([Plan] section); make one with "
        "tensor-trainer plan", o->model);
  else if (tt_model_plan_info (m, &p), !p.from_stored_plan)
    rc = cli_fail ("%s: the stored plan is for %s; check it %s --inference",
        o->model, o->inference ? "training" : "inference only",
        o->inference ? "without" : "with");
  else {
    printf ("%s: plan valid\n", o->model);
    cli_print_plan (&p);
    cli_print_memory (m, &p);
  }
  tt_model_free (m);
  return rc;
}
