/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer lora: LoRA adapters as files (io/lora_file.c,
 * docs/personalize.md):
 *
 *   lora MODEL.ini --weights BASE.bin --rank R [--alpha A] [--layers A,B]
 *        [--seed S] -o OUT.ini                  adapters added
 *   lora MODEL.ini --weights W.bin --merge -o OUT.ini       merged
 *   lora MODEL.ini --weights W.bin --adapters -o ADAPTERS.bin
 *   lora MODEL.ini --weights BASE.bin --apply ADAPTERS.bin [--merge]
 *        -o OUT.ini
 */
#include "cli.h"

#include <string.h>
#include <sys/stat.h>

static long long
lora_size (const char *path)
{
  struct stat st;
  return stat (path, &st) ? -1 : (long long) st.st_size;
}

/* OUT.bin beside OUT.ini, as the engine names it */
static void
lora_print (const char *what, const char *model, const char *out)
{
  char bin[4096];
  const size_t n = strlen (out);
  const size_t keep = n > 4 && !strcmp (out + n - 4, ".ini") ? n - 4 : n;
  snprintf (bin, sizeof bin, "%.*s.bin", (int) keep, out);
  printf ("lora: %s %s -> %s (%lld bytes) + %s (%lld bytes)\n", what, model,
      out, lora_size (out), bin, lora_size (bin));
}

int
cli_lora (const cli_options * o)
{
  const int modes = (o->lora_rank > 0) + o->lora_adapters +
      (o->lora_apply != NULL) + (o->lora_merge && !o->lora_apply);
  if (modes != 1)
    return cli_fail ("lora needs one of --rank R, --merge, --adapters or "
        "--apply ADAPTERS.bin (with --merge)");
  if (!o->output)
    return cli_fail ("lora needs -o OUT.ini (with --adapters: -o "
        "ADAPTERS.bin)");
  if (!o->weights && !o->lora_rank)
    return cli_fail ("lora needs --weights W.bin");
  if ((o->lora_alpha || o->lora_layers || o->has_seed) && !o->lora_rank)
    return cli_fail ("lora: --alpha, --layers and --seed go with --rank");
  tt_error err;
  tt_status st;
  const char *what;
  if (o->lora_rank) {
    st = tt_lora_add (o->model, o->weights, o->lora_rank, o->lora_alpha,
        o->lora_layers, o->has_seed ? o->seed : 0, o->output, &err);
    what = "adapters added to";
  } else if (o->lora_adapters) {
    st = tt_lora_save_adapters (o->model, o->weights, o->output, &err);
    if (st)
      return cli_fail ("%s", err.message);
    printf ("lora: adapters of %s -> %s (%lld bytes)\n", o->model,
        o->output, lora_size (o->output));
    return 0;
  } else if (o->lora_apply) {
    st = tt_lora_apply (o->model, o->weights, o->lora_apply, o->lora_merge,
        o->output, &err);
    what = o->lora_merge ? "adapters applied and merged into" :
        "adapters applied to";
  } else {
    st = tt_lora_merge (o->model, o->weights, o->output, &err);
    what = "merged";
  }
  if (st)
    return cli_fail ("%s", err.message);
  lora_print (what, o->model, o->output);
  return 0;
}
