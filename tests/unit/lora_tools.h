/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What test_lora.c and test_lora_layers.c share for the lora tools
 * (io/lora_file.c): files in one folder, a model opened from an INI and a
 * weights file, its weights copied out. Include after tt_test.h.
 */
#ifndef TT_LORA_TOOLS_H
#define TT_LORA_TOOLS_H

#include "tt_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the folder of the files the tools write */
static char tool_dir[512];

/* tool_dir/name (four results live at once) */
static const char *
tool_path (const char *name)
{
  static char path[4][600];
  static int next;
  char *p = path[next++ % 4];
  snprintf (p, sizeof path[0], "%s/%s", tool_dir, name);
  return p;
}

/* a model of ini and bin (training, one thread), with choice (--train)
 * or NULL */
static tt_model *
tool_open (const char *ini, const char *bin, const char *choice)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (ini, &err);
  if (m && (tt_model_set_threads (m, 1, &err) ||
          (choice && tt_model_set_train (m, choice, &err)) ||
          tt_model_compile (m, &err)
          || (bin && tt_model_load_weights (m, bin, &err)))) {
    tt_model_free (m);
    m = NULL;
  }
  CHECK (m != NULL, "%s: %s", ini, m ? "" : err.message);
  return m;
}

/* m's weights, *n floats (malloc'd) */
static float *
tool_weights (tt_model * m, size_t *n)
{
  tt_error err;
  *n = tt_model_weight_floats (m);
  float *w = malloc (*n * sizeof *w);
  CHECK (tt_model_export_weights (m, w, *n, &err) == TT_OK, "export");
  return w;
}

#endif /* TT_LORA_TOOLS_H */
