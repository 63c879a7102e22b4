/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer grow MODEL.ini --weights W --layer NAME --units N
 *     -o OUT.ini [--seed S]
 *
 * Grows a classifier: OUT.ini is MODEL.ini with the fully_connected
 * layer NAME's unit raised to N, OUT.bin (beside it) its weights: every
 * weight as in W, NAME's weight and bias extended, the old outputs'
 * columns and entries kept bit for bit, the new columns drawn by the
 * layer's weight initializer with the seed, the new bias entries 0
 * (docs/personalize.md, "Growing a classifier"). The grown description is
 * compiled and filled in memory first; then OUT.ini and OUT.bin are
 * written, each atomically.
 */
#include "cli.h"
#include "atomic_file.h"
#include "grow.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The whole file; NULL after a message. */
static char *
grow_read (const char *path, size_t *len)
{
  FILE *f = fopen (path, "rb");
  char *text = NULL;
  long size;
  if (!f || fseek (f, 0, SEEK_END) || (size = ftell (f)) < 0
      || fseek (f, 0, SEEK_SET) || !(text = malloc ((size_t) size + 1))
      || fread (text, 1, (size_t) size, f) != (size_t) size) {
    cli_fail ("%s: cannot read it", path);
    free (text);
    if (f)
      fclose (f);
    return NULL;
  }
  fclose (f);
  text[size] = '\0';
  *len = (size_t) size;
  return text;
}

/* [ a , b ) trimmed */
static void
grow_trim (const char **a, const char **b)
{
  while (*a < *b && isspace ((unsigned char) **a))
    (*a)++;
  while (*b > *a && isspace ((unsigned char) (*b)[-1]))
    (*b)--;
}

/* text with the value of key unit in section layer replaced by units
 * (malloc'd), NULL when the INI has a [Plan] section or no such key */
static char *
grow_text (const char *text, size_t len, const char *layer, uint32_t units,
    const char *path)
{
  const char *line = text, *end = text + len, *value = NULL, *value_end = NULL;
  bool in_layer = false;
  while (line < end) {
    const char *nl = memchr (line, '\n', (size_t) (end - line));
    const char *a = line, *b = nl ? nl : end;
    grow_trim (&a, &b);
    if (a < b && *a == '[') {
      const char *na = a + 1, *nb = memchr (a, ']', (size_t) (b - a));
      if (nb) {
        grow_trim (&na, &nb);
        if ((size_t) (nb - na) >= 4 && !strncasecmp (na, "plan", 4)) {
          cli_fail ("%s: an optimized INI (its [Plan] sections plan the "
              "old sizes): grow its plain INI (tensor-trainer strip)", path);
          return NULL;
        }
        in_layer = strlen (layer) == (size_t) (nb - na)
            && !strncasecmp (na, layer, (size_t) (nb - na));
      }
    } else if (in_layer && a < b && *a != '#' && *a != ';') {
      const char *eq = memchr (a, '=', (size_t) (b - a));
      if (eq) {
        const char *ka = a, *kb = eq, *va = eq + 1, *vb = b;
        grow_trim (&ka, &kb);
        grow_trim (&va, &vb);
        if (kb - ka == 4 && !strncasecmp (ka, "unit", 4)) {
          value = va;
          value_end = vb;
        }
      }
    }
    line = nl ? nl + 1 : end;
  }
  if (!value) {
    cli_fail ("%s: [%s] has no unit key to raise", path, layer);
    return NULL;
  }
  char num[16];
  int k = snprintf (num, sizeof num, "%u", units);
  size_t head = (size_t) (value - text), tail = len - (size_t) (value_end -
      text);
  char *out = malloc (head + (size_t) k + tail + 1);
  if (!out) {
    cli_fail ("out of memory");
    return NULL;
  }
  memcpy (out, text, head);
  memcpy (out + head, num, (size_t) k);
  memcpy (out + head + k, value_end, tail);
  out[head + k + tail] = '\0';
  return out;
}

static int
grow_write (const char *path, const char *text, tt_error * err)
{
  tt_atomic_file f;
  if (tt_atomic_file_open (&f, path, err))
    return 1;
  if (tt_atomic_file_write (&f, text, strlen (text), err)) {
    tt_atomic_file_abort (&f);
    return 1;
  }
  return tt_atomic_file_commit (&f, err) != TT_OK;
}

int
cli_grow (const cli_options * o)
{
  tt_error err;
  tt_model *old = NULL, *grown = NULL;
  char *text = NULL, *out_text = NULL, *bin = NULL;
  size_t len, n;
  uint32_t unit, in_width;
  int rc = 1;

  if (!o->weights || !o->layer || !o->units || !o->output)
    return cli_fail ("grow needs --weights W, --layer NAME, --units N and "
        "-o OUT.ini");
  n = strlen (o->output);
  if (n < 5 || strcasecmp (o->output + n - 4, ".ini"))
    return cli_fail ("grow: -o '%s' must end in .ini (the BIN is written "
        "beside it, .bin instead of .ini)", o->output);
  bin = malloc (n + 1);
  if (!bin)
    return cli_fail ("out of memory");
  memcpy (bin, o->output, n - 4);
  strcpy (bin + n - 4, ".bin");

  old = tt_model_load_ini (o->model, &err);
  if (!old || tt_model_compile (old, &err)
      || tt_model_load_weights (old, o->weights, &err)
      || tt_grow_find_layer (old, o->layer, &unit, &in_width, &err)) {
    cli_fail ("%s", err.message);
    goto out;
  }
  if (o->units <= unit) {
    cli_fail ("%s: --units %u: [%s] has %u units already; grow needs more "
        "(--units %u or above)", o->model, o->units, o->layer, unit, unit + 1);
    goto out;
  }
  if (!(text = grow_read (o->model, &len))
      || !(out_text = grow_text (text, len, o->layer, o->units, o->model)))
    goto out;
  grown = tt_model_load_ini_text (out_text, strlen (out_text), o->output, &err);
  if (grown && o->has_seed)
    tt_model_set_seed (grown, o->seed);
  if (!grown || tt_model_compile (grown, &err)
      || tt_model_init_weights (grown, &err)
      || tt_grow_copy_weights (old, grown, o->layer, &err)) {
    cli_fail ("%s", err.message);
    goto out;
  }
  if (grow_write (o->output, out_text, &err)) {
    cli_fail ("%s", err.message);
    goto out;
  }
  if (tt_model_save_bin (grown, bin, &err)) {
    cli_fail ("%s", err.message);
    unlink (o->output);
    goto out;
  }
  printf ("grew [%s] from %u to %u units (%u inputs): %s, %s\n", o->layer,
      unit, o->units, in_width, o->output, bin);
  rc = 0;
out:
  tt_model_free (old);
  tt_model_free (grown);
  free (text);
  free (out_text);
  free (bin);
  return rc;
}
