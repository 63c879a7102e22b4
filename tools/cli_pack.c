/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer pack, unpack and strip: a model's files made a bundle,
 * a bundle made an INI and a BIN again, and the plain INI (and BIN) of
 * an optimized INI or a bundle.
 */
#include "cli.h"
#include "tt_bundle.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t
cli_file_size (const char *path)
{
  struct stat sb;
  return stat (path, &sb) == 0 ? (uint64_t) sb.st_size : 0;
}

int
cli_pack (const cli_options * o)
{
  if (!o->output)
    return cli_fail ("pack needs -o OUT.ttb");
  tt_bundle_options bo = { 0 };
  bo.alignment = o->align;
  bo.compress = o->compress;
  tt_error err;
  if (o->positional) {
    if (tt_bundle_pack (o->model, o->positional, o->output, o->batch, &bo,
            &err))
      return cli_fail ("%s", err.message);
  } else {
    /* no weights: the model's own initialization (--seed), saved as a
     * model is, plan included */
    cli_options copy = *o;
    copy.align = 0;
    tt_model *m = cli_open_model (&copy, NULL, NULL);
    if (!m)
      return 1;
    tt_status st = tt_bundle_save (m, o->output, &bo, &err);
    tt_model_free (m);
    if (st)
      return cli_fail ("%s", err.message);
  }
  printf ("packed %s%s%s -> %s (%" PRIu64 " bytes%s)\n", o->model,
      o->positional ? " + " : " (initialized weights)",
      o->positional ? o->positional : "", o->output,
      cli_file_size (o->output), o->compress ? ", weights compressed" : "");
  return 0;
}

int
cli_unpack (const cli_options * o)
{
  if (!o->output)
    return cli_fail ("unpack needs -o DIR");
  if (mkdir (o->output, 0777) != 0 && errno != EEXIST)
    return cli_fail ("%s: cannot create: %s", o->output, strerror (errno));
  char ini[PATH_MAX], bin[PATH_MAX];
  if (snprintf (ini, sizeof ini, "%s/model.ini", o->output) >=
      (int) sizeof ini ||
      snprintf (bin, sizeof bin, "%s/model.bin", o->output) >= (int) sizeof bin)
    return cli_fail ("%s: path too long", o->output);
  tt_error err;
  if (tt_bundle_unpack (o->model, ini, bin, &err))
    return cli_fail ("%s", err.message);
  printf ("unpacked %s -> %s (%" PRIu64 " bytes) + %s (%" PRIu64
      " bytes)\n", o->model, ini, cli_file_size (ini), bin,
      cli_file_size (bin));
  return 0;
}

int
cli_strip (const cli_options * o)
{
  if (!o->output)
    return cli_fail ("strip needs -o MODEL.ini");
  tt_error err;
  if (tt_model_strip (o->model, o->output, o->weights, &err))
    return cli_fail ("%s", err.message);
  printf ("stripped %s -> %s (%" PRIu64 " bytes)", o->model, o->output,
      cli_file_size (o->output));
  if (o->weights)
    printf (" + %s (%" PRIu64 " bytes)", o->weights,
        cli_file_size (o->weights));
  printf ("\n");
  return 0;
}
