/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What trains, chosen without editing the model (docs/personalize.md):
 *
 *   everything      what the INI leaves trainable (the default)
 *   biases          each weight named bias (fully_connected, conv2d,
 *                   conv1d, conv2dtranspose) and the gamma and beta of
 *                   batch and layer normalization; the rest frozen
 *   last:N          the last N layers (in INI order) with trainable
 *                   weights; the layers before them frozen
 *   layers:A,B,...  those layers; the others frozen
 *
 * The choice becomes per-weight trainable flags once the layers have
 * their weights and before the graph decides where gradients flow, so
 * the plan sees a frozen weight as it sees one of a trainable = false
 * layer: no gradient, no optimizer state, and no tensor kept for a
 * backward phase that does not run. A choice can only freeze: a layer
 * the INI freezes stays frozen. A stored plan records the choice as
 * [Plan] train (io/plan_ini.c), which applies when nothing else is
 * chosen; the plan's fingerprint hashes every weight's flag.
 */
#include "tt_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <iniparser/iniparser.h>

typedef enum
{
  CHOICE_EVERYTHING,
  CHOICE_BIASES,
  CHOICE_LAST,
  CHOICE_LAYERS,
} choice_kind;

#define CHOICES "everything, biases, last:N (N >= 1) or layers:NAME,NAME..."

/* spec's kind and, for last:N, N; for layers:, where the names begin */
static bool
choice_parse (const char *spec, choice_kind * kind, uint32_t * n,
    const char **names)
{
  *n = 0;
  *names = NULL;
  if (!spec || !*spec || !strcasecmp (spec, "everything")) {
    *kind = CHOICE_EVERYTHING;
    return true;
  }
  if (!strcasecmp (spec, "biases")) {
    *kind = CHOICE_BIASES;
    return true;
  }
  if (!strncasecmp (spec, "last:", 5)) {
    const char *p = spec + 5;
    uint64_t v = 0;
    if (!*p)
      return false;
    for (; *p; p++) {
      if (!isdigit ((unsigned char) *p))
        return false;
      v = v * 10 + (uint64_t) (*p - '0');
      if (v > UINT32_MAX)
        return false;
    }
    if (v == 0)
      return false;
    *kind = CHOICE_LAST;
    *n = (uint32_t) v;
    return true;
  }
  if (!strncasecmp (spec, "layers:", 7)) {
    const char *p = spec + 7;
    /* no empty name: not empty, no ",," and no comma at either end */
    if (!*p || *p == ',' || p[strlen (p) - 1] == ',' || strstr (p, ",,"))
      return false;
    *kind = CHOICE_LAYERS;
    *names = p;
    return true;
  }
  return false;
}

tt_status
tt_model_set_train (tt_model * m, const char *spec, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: choose what trains before compiling", m->path);
  choice_kind kind;
  uint32_t n;
  const char *names;
  if (!choice_parse (spec, &kind, &n, &names))
    return tt_fail (err, TT_ERR_INVALID, "%s: train: '%s' is not a choice: "
        "use " CHOICES, m->path, spec);
  free (m->train_spec);
  m->train_spec = NULL;
  if (kind == CHOICE_EVERYTHING)
    return TT_OK;
  m->train_spec = strdup (spec);
  if (!m->train_spec)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  return TT_OK;
}

const char *
tt_train_choice (const tt_model * m)
{
  if (m->train_spec)
    return m->train_spec;
  const char *stored = iniparser_getstring (m->dict, "plan:train", NULL);
  return stored && *stored && strcasecmp (stored, "everything") ? stored : NULL;
}

/* one more than the largest creation index (dead layers leave gaps) */
static int
choice_creations (const tt_model * m)
{
  int n = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (m->layers[i].creation >= n)
      n = m->layers[i].creation + 1;
  return n;
}

static bool
choice_layer_trains (const tt_layer * l)
{
  for (uint32_t w = 0; w < l->n_weights; w++)
    if (l->weights[w].trainable)
      return true;
  return false;
}

static void
choice_freeze (tt_layer * l)
{
  for (uint32_t w = 0; w < l->n_weights; w++)
    l->weights[w].trainable = false;
  l->trainable = false;
}

/* "a, b, c": the layers with trainable weights, in INI order, into out */
static void
choice_list (const tt_model * m, char *out, size_t size)
{
  size_t len = 0;
  out[0] = '\0';
  for (int c = 0; c < choice_creations (m); c++)
    for (uint32_t i = 0; i < m->n_layers; i++) {
      const tt_layer *l = &m->layers[i];
      if (l->creation != c || !choice_layer_trains (l))
        continue;
      int k = snprintf (out + len, size - len, "%s%s", len ? ", " : "",
          l->name);
      if (k < 0 || (size_t) k >= size - len) {
        snprintf (out + (size > 5 ? size - 5 : 0), size > 5 ? 5 : size, ",...");
        return;
      }
      len += (size_t) k;
    }
}

static tt_status
choice_layers (tt_model * m, const char *what, const char *names,
    tt_error * err)
{
  bool *keep = calloc (m->n_layers ? m->n_layers : 1, sizeof *keep);
  if (!keep)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  const char *p = names;
  while (*p) {
    const char *comma = strchr (p, ',');
    size_t len = comma ? (size_t) (comma - p) : strlen (p);
    int found = -1;
    for (uint32_t i = 0; i < m->n_layers && found < 0; i++)
      if (strlen (m->layers[i].name) == len &&
          !strncasecmp (m->layers[i].name, p, len))
        found = (int) i;
    if (found < 0 || !choice_layer_trains (&m->layers[found])) {
      char list[1024];
      choice_list (m, list, sizeof list);
      tt_status st = tt_fail (err, TT_ERR_INVALID, "%s: train: %s: %s '%.*s'"
          "; the layers with trainable weights are: %s", m->path, what,
          found < 0 ? "no layer named" : "nothing trains in", (int) len, p,
          list[0] ? list : "(none)");
      free (keep);
      return st;
    }
    keep[found] = true;
    p += len + (comma ? 1 : 0);
  }
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (!keep[i])
      choice_freeze (&m->layers[i]);
  free (keep);
  return TT_OK;
}

static tt_status
choice_last (tt_model * m, const char *what, uint32_t n, tt_error * err)
{
  uint32_t weighted = 0;
  for (uint32_t i = 0; i < m->n_layers; i++)
    weighted += choice_layer_trains (&m->layers[i]);
  if (n > weighted) {
    char list[1024];
    choice_list (m, list, sizeof list);
    return tt_fail (err, TT_ERR_INVALID, "%s: train: %s: the model has %u "
        "layer%s with trainable weights, not %u (N in [1, %u]): %s", m->path,
        what, weighted, weighted == 1 ? "" : "s", n, weighted,
        list[0] ? list : "(none)");
  }
  /* freeze the first weighted - n by INI order (creation) */
  uint32_t frozen = 0;
  for (int c = 0; frozen < weighted - n && c < choice_creations (m); c++)
    for (uint32_t i = 0; i < m->n_layers; i++) {
      tt_layer *l = &m->layers[i];
      if (l->creation == c && choice_layer_trains (l) && frozen < weighted - n) {
        choice_freeze (l);
        frozen++;
      }
    }
  return TT_OK;
}

/* a bias, or a normalization's scale or shift */
static bool
choice_is_bias (const tt_weight * w)
{
  return !strcmp (w->suffix, "bias") || !strcmp (w->suffix, "gamma") ||
      !strcmp (w->suffix, "beta");
}

static tt_status
choice_biases (tt_model * m, tt_error * err)
{
  bool any = false;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    for (uint32_t w = 0; w < l->n_weights; w++) {
      l->weights[w].trainable &= choice_is_bias (&l->weights[w]);
      any |= l->weights[w].trainable;
    }
    if (!choice_layer_trains (l))
      l->trainable = false;
  }
  if (!any && !m->inference)
    return tt_fail (err, TT_ERR_INVALID, "%s: train: biases: the model has "
        "no trainable bias and no batch or layer normalization", m->path);
  return TT_OK;
}

tt_status
tt_train_choice_apply (tt_model * m, tt_error * err)
{
  const char *spec = tt_train_choice (m);
  const char *what = m->train_spec ? spec : "[Plan] train";
  choice_kind kind;
  uint32_t n;
  const char *names;
  if (!spec)
    return TT_OK;
  if (!choice_parse (spec, &kind, &n, &names))
    return tt_fail (err, TT_ERR_INVALID, "%s: %s: '%s' is not a choice: use "
        CHOICES, m->path, what, spec);
  switch (kind) {
    case CHOICE_BIASES:
      return choice_biases (m, err);
    case CHOICE_LAST:
      return choice_last (m, spec, n, err);
    case CHOICE_LAYERS:
      return choice_layers (m, spec, names, err);
    case CHOICE_EVERYTHING:
    default:
      return TT_OK;
  }
}
