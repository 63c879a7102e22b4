/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer: the engine without GStreamer, to train, evaluate and
 * inspect models from the command line and to benchmark the engine.
 *
 *   tensor-trainer train MODEL --data IMAGES --labels LABELS
 *       [--valid-data IMAGES --valid-labels LABELS] [--epochs N]
 *       [--batch N] [--samples N] [--valid-samples N] [--load WEIGHTS]
 *       [--save FILE] [--compress] [--seed S] [--checkpoint FILE]
 *       [--resume] [--threads T] [--profile]
 *   tensor-trainer eval MODEL [--weights WEIGHTS] --data IMAGES
 *       --labels LABELS [--batch N] [--samples N] [--mode M] [--inference]
 *       [--profile]
 *   tensor-trainer info MODEL [--batch N] [--mode M] [--inference]
 *   tensor-trainer plan MODEL.ini -o OUT.opt.ini [--batch N] [--align N]
 *       [--inference] [--memory-limit BYTES] [--threads T]
 *   tensor-trainer check MODEL.opt.ini|MODEL.ttb [--inference]
 *   tensor-trainer pack MODEL.ini [WEIGHTS.bin] -o OUT.ttb [--compress]
 *       [--align N] [--batch N] [--seed S]
 *   tensor-trainer unpack MODEL.ttb -o DIR
 *   tensor-trainer strip MODEL.opt.ini|MODEL.ttb -o MODEL.ini
 *       [--weights MODEL.bin]
 *   tensor-trainer inspect MODEL.ttb
 *   tensor-trainer export MODEL.ttb --c-out DIR [--section NAME]
 *       [--align N] [--format asm|c] [--symbol NAME]
 *   tensor-trainer import MODEL.onnx -o OUT.ini [--loss L] [--optimizer O]
 *       [--learning-rate R] [--batch N]
 *   tensor-trainer export-onnx MODEL.onnx --weights TRAINED -o OUT.onnx
 *   tensor-trainer grow MODEL.ini --weights W --layer NAME --units N
 *       -o OUT.ini [--seed S]
 *
 * MODEL is an INI file or a bundle (recognized by its magic, whatever its
 * name); WEIGHTS a BIN or a bundle. --save and --checkpoint write a bundle
 * unless the path ends in .bin (tt_model_save). Data are MNIST-format IDX
 * files, gzipped or not. Every epoch prints one line of key=value pairs so
 * scripts can read it; --profile adds a table of the time each layer took
 * on standard error, leaving standard output as it is.
 *
 * This file holds main: it parses the command line (cli_options.c) and
 * runs the subcommand, each in its own file (cli.h lists them; aggregate
 * in aggregate.c).
 */
#include "aggregate.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

int
main (int argc, char **argv)
{
  cli_options o;
  if (argc >= 2 && !strcmp (argv[1], "aggregate"))
    return tt_cli_aggregate (argc - 1, argv + 1);       /* aggregate.c */
  if (argc >= 2 && (!strcmp (argv[1], "-h") || !strcmp (argv[1], "--help"))) {
    cli_usage (stdout);
    return 0;
  }
  int p = cli_parse (argc, argv, &o);
  if (p == -1) {
    cli_usage (stderr);
    return 2;
  }
  if (p)
    return 2;
  if (!strcmp (o.command, "train"))
    return cli_train (&o, true);
  if (!strcmp (o.command, "eval"))
    return cli_train (&o, false);
  if (!strcmp (o.command, "info"))
    return cli_info (&o);
  if (!strcmp (o.command, "plan"))
    return cli_plan (&o);
  if (!strcmp (o.command, "check"))
    return cli_check (&o);
  if (!strcmp (o.command, "pack"))
    return cli_pack (&o);
  if (!strcmp (o.command, "unpack"))
    return cli_unpack (&o);
  if (!strcmp (o.command, "strip"))
    return cli_strip (&o);
  if (!strcmp (o.command, "inspect"))
    return cli_inspect (&o);
  if (!strcmp (o.command, "export"))
    return cli_export (&o);
  if (!strcmp (o.command, "import"))
    return cli_import (&o);
  if (!strcmp (o.command, "export-onnx"))
    return cli_export_onnx (&o);
  if (!strcmp (o.command, "grow"))
    return cli_grow (&o);
  if (!strcmp (o.command, "lora"))      /* LoRA adapters as files */
    return cli_lora (&o);
  cli_fail ("unknown command '%s'", o.command);
  cli_usage (stderr);
  return 2;
}
