/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Growing a classifier: a fully_connected layer found by its section, and
 * the weights of a model copied into the same model with that layer's
 * unit raised (io/grow.h). The CLI's tensor-trainer grow writes the INI
 * and saves the result (tools/cli_grow.c).
 */
#include "grow.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define GROW_FC "fully_connected"

static const tt_layer *
grow_layer (const tt_model * m, const char *name)
{
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    if (!strcasecmp (l->section, name) && !strcasecmp (l->name, name))
      return l;
  }
  return NULL;
}

/* "a, b, c" of m's fully_connected layers, in INI order */
static void
grow_fc_names (const tt_model * m, char *out, size_t size)
{
  size_t at = 0;
  out[0] = '\0';
  for (uint32_t c = 0; c < m->n_layers; c++) {
    const tt_layer *l = &m->layers[m->canonical[c]];
    if (strcmp (l->ops->type, GROW_FC) != 0)
      continue;
    int k = snprintf (out + at, size - at, "%s%s", at ? ", " : "", l->name);
    if (k < 0 || (size_t) k >= size - at)
      break;
    at += (size_t) k;
  }
  if (!out[0])
    snprintf (out, size, "(none)");
}

tt_status
tt_grow_find_layer (const tt_model * m, const char *name, uint32_t * unit,
    uint32_t * in_width, tt_error * err)
{
  char names[1024];
  const tt_layer *l = grow_layer (m, name);

  grow_fc_names (m, names, sizeof names);
  if (!l)
    return tt_fail (err, TT_ERR_INVALID, "%s: --layer %s: no layer of that "
        "name; the fully_connected layers are: %s", m->path, name, names);
  if (strcmp (l->ops->type, GROW_FC) != 0)
    return tt_fail (err, TT_ERR_INVALID, "%s: --layer %s is of type %s, not "
        "fully_connected; the fully_connected layers are: %s", m->path, name,
        l->ops->type, names);
  *unit = l->p.fc.unit;
  *in_width = l->in_dims[0].w;
  return TT_OK;
}

static const tt_weight *
grow_weight (const tt_layer * l, const char *suffix)
{
  for (uint32_t i = 0; i < l->n_weights; i++)
    if (!strcmp (l->weights[i].suffix, suffix))
      return &l->weights[i];
  return NULL;
}

tt_status
tt_grow_copy_weights (tt_model * old, tt_model * grown, const char *name,
    tt_error * err)
{
  uint32_t old_unit, new_unit, in_old, in_new;
  tt_status st = tt_grow_find_layer (old, name, &old_unit, &in_old, err);
  if (st == TT_OK)
    st = tt_grow_find_layer (grown, name, &new_unit, &in_new, err);
  if (st != TT_OK)
    return st;
  if (in_old != in_new || new_unit < old_unit)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] takes %u inputs to %u "
        "units, %s %u to %u: not the same layer grown", grown->path, name,
        in_new, new_unit, old->path, in_old, old_unit);
  if (old->n_layers != grown->n_layers)
    return tt_fail (err, TT_ERR_INVALID, "%s has %u layers, %s %u",
        grown->path, grown->n_layers, old->path, old->n_layers);
  for (uint32_t c = 0; c < old->n_layers; c++) {
    const tt_layer *lo = &old->layers[old->canonical[c]];
    const tt_layer *ln = &grown->layers[grown->canonical[c]];
    const bool grows = !strcasecmp (lo->name, name);
    if (strcmp (lo->name, ln->name) || lo->n_weights != ln->n_weights)
      return tt_fail (err, TT_ERR_INVALID, "%s: layer %s does not match %s's "
          "%s", grown->path, ln->name, old->path, lo->name);
    for (uint32_t i = 0; i < lo->n_weights; i++) {
      const tt_weight *wo = &lo->weights[i];
      const tt_weight *wn = grow_weight (ln, wo->suffix);
      const float *src = tt_data (old, wo->value);
      float *dst;
      if (!wn)
        return tt_fail (err, TT_ERR_INVALID, "%s: layer %s has no %s",
            grown->path, ln->name, wo->suffix);
      dst = tt_data (grown, wn->value);
      if (!grows) {
        if (wo->count != wn->count)
          return tt_fail (err, TT_ERR_INVALID, "%s: growing %s changes "
              "%s:%s (%zu values, %zu grown): its weights depend on %s's "
              "units, so they cannot be kept; grow a layer no weight "
              "depends on (the last fully_connected)", old->path, name,
              ln->name, wo->suffix, wo->count, wn->count, name);
        memcpy (dst, src, wo->count * sizeof (float));
      } else if (!strcmp (wo->suffix, "weight")) {
        /* [in][unit], unit fastest: each row's first old_unit values */
        for (uint32_t r = 0; r < in_old; r++)
          memcpy (dst + (size_t) r * new_unit, src + (size_t) r * old_unit,
              old_unit * sizeof (float));
      } else if (!strcmp (wo->suffix, "bias")) {
        memcpy (dst, src, old_unit * sizeof (float));
        memset (dst + old_unit, 0, (new_unit - old_unit) * sizeof (float));
      } else {
        return tt_fail (err, TT_ERR_INVALID, "%s: %s:%s: a fully_connected "
            "weight grow does not know", grown->path, ln->name, wo->suffix);
      }
    }
  }
  return TT_OK;
}
