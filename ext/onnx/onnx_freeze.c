/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * import --freeze: layers that do not train, named by their INI section
 * or by the initializers they come from (an initializer's name, or a
 * PyTorch module path that prefixes it: "features" freezes every layer
 * whose weights are features.*). A layer freezes whole (nntrainer's
 * per-layer `trainable = false`), so a name that covers only some of a
 * layer's weights is refused rather than silently widened or dropped.
 */
#include "onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the initializer name equals name, or lies under it as a module path */
static bool
source_matches (const char *source, const char *name, size_t len)
{
  return source && !strncmp (source, name, len) &&
      (source[len] == '\0' || source[len] == '.');
}

/* batch normalization's running statistics (its first two weights) never
 * train: a name need not cover them */
static bool
weight_trains (const onnx_layer * l, int w)
{
  return w >= 2 || strcmp (l->type, "batch_normalization");
}

/* the weights that train, as a mask */
static unsigned
trained_mask (const onnx_layer * l)
{
  unsigned mask = 0;
  for (int w = 0; w < l->n_w; w++)
    if (weight_trains (l, w))
      mask |= 1u << w;
  return mask;
}

/* up to a few of the layers with weights, for messages */
static void
weighted_layers (const onnx_import * im, char *buf, size_t cap)
{
  size_t at = 0, shown = 0;
  buf[0] = '\0';
  for (size_t k = 0; k < im->n_layers && at + 1 < cap; k++) {
    const onnx_layer *l = &im->layers[k];
    if (!l->n_w)
      continue;
    if (shown == 8) {
      snprintf (buf + at, cap - at, ", ...");
      return;
    }
    const int w = l->n_w > 2 && !weight_trains (l, 0) ? 2 : 0;
    int n = snprintf (buf + at, cap - at, "%s%s (%s)", shown ? ", " : "",
        l->name, l->src[w].value ? l->src[w].value : "several initializers");
    if (n < 0)
      return;
    at += (size_t) n;
    shown++;
  }
}

tt_status
onnx_freeze_apply (onnx_import * im, tt_error * err)
{
  const char *list = im->opt.freeze;
  if (!list || !*list)
    return TT_OK;
  /* per layer, the weights some name covers (bit w) */
  unsigned *covered = calloc (im->n_layers + 1, sizeof *covered);
  if (!covered)
    return onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
  char known[640];
  tt_status st = TT_OK;
  for (const char *p = list; !st && *p;) {
    const char *comma = strchr (p, ',');
    size_t len = comma ? (size_t) (comma - p) : strlen (p);
    bool matched = false;
    if (len == 0) {
      st = onnx_fail (im, err, TT_ERR_INVALID, "--freeze '%.200s': an empty "
          "name (use NAME,NAME...)", list);
      break;
    }
    for (size_t k = 0; k < im->n_layers; k++) {
      onnx_layer *l = &im->layers[k];
      if (strlen (l->name) == len && !strncmp (l->name, p, len)) {
        if (!l->n_w) {
          st = onnx_fail (im, err, TT_ERR_INVALID, "--freeze '%.*s': layer "
              "'%s' (%s) has no weights to freeze", (int) len, p, l->name,
              l->type);
          break;
        }
        covered[k] = trained_mask (l);
        matched = true;
        continue;
      }
      for (int w = 0; w < l->n_w; w++)
        if (weight_trains (l, w) && source_matches (l->src[w].value, p, len)) {
          covered[k] |= 1u << w;
          matched = true;
        }
    }
    if (!st && !matched) {
      weighted_layers (im, known, sizeof known);
      st = onnx_fail (im, err, TT_ERR_INVALID, "--freeze '%.*s': no layer "
          "and no initializer (or module path of one) of that name; the "
          "layers with weights (and their first initializer) are: %s",
          (int) len > 200 ? 200 : (int) len, p, known);
    }
    p = comma ? comma + 1 : p + len;
  }
  for (size_t k = 0; !st && k < im->n_layers; k++) {
    onnx_layer *l = &im->layers[k];
    if (!covered[k])
      continue;
    if (covered[k] != trained_mask (l)) {
      char names[400];
      size_t at = 0;
      names[0] = '\0';
      for (int w = 0; w < l->n_w && at + 1 < sizeof names; w++) {
        if (!weight_trains (l, w))
          continue;
        int n = snprintf (names + at, sizeof names - at, "%s%s%s",
            at ? ", " : "", l->src[w].value ? l->src[w].value : "(built)",
            covered[k] >> w & 1 ? " (named)" : "");
        if (n < 0)
          break;
        at += (size_t) n;
      }
      st = onnx_fail (im, err, TT_ERR_INVALID, "--freeze: layer '%s' would "
          "freeze only some of its weights (%s): a layer freezes whole; "
          "name the layer or all of its initializers (or choose at training "
          "time: --train biases)", l->name, names);
      break;
    }
    onnx_layer_key (l, "trainable = false\n");
  }
  free (covered);
  return st;
}
