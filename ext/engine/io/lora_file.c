/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LoRA adapters as files (tensor-trainer lora, docs/personalize.md):
 *
 *   add       the INI with lora_rank (and lora_alpha) on the layers LoRA
 *             adapts (fully_connected, multi_head_attention, 1x1 conv2d:
 *             the lora_refuses trait), and a BIN of the base weights
 *             with fresh adapters
 *   merge     the INI without the lora keys, and a BIN with W + s A B
 *             in each adapted weight (the lora_pairs trait: a dense
 *             layer's, each projection of an attention, a 1x1 filter)
 *   adapters  only the adapters: loraA then loraB of each layer that has
 *             them, in BIN order, raw float32 (no header)
 *   apply     base weights and such an adapters file into the LoRA
 *             model's BIN (or, merged, the plain model's)
 *
 * The INI text is edited by lines: in the chosen sections, lines whose
 * key is lora_rank or lora_alpha go, and the new keys end the section
 * (before the next header). Every other line stays as written.
 * Each output file is written atomically (io/atomic_file.c).
 */
#include "tt_internal.h"
#include "atomic_file.h"
#include "text_buf.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* the key of line [p, end) ("" when none), lower-cased into key */
static void
lora_line_key (const char *p, const char *end, char *key, size_t size)
{
  size_t n = 0;
  while (p < end && isspace ((unsigned char) *p))
    p++;
  const char *eq = memchr (p, '=', (size_t) (end - p));
  key[0] = '\0';
  if (!eq || *p == '#' || *p == ';' || *p == '[')
    return;
  const char *k = eq;
  while (k > p && isspace ((unsigned char) k[-1]))
    k--;
  for (; p < k && n + 1 < size; p++)
    key[n++] = (char) tolower ((unsigned char) *p);
  key[n] = '\0';
}

/* the section name of a header line, lower-cased, or false */
static bool
lora_line_section (const char *p, const char *end, char *name, size_t size)
{
  while (p < end && isspace ((unsigned char) *p))
    p++;
  if (p >= end || *p != '[')
    return false;
  const char *close = memchr (p, ']', (size_t) (end - p));
  if (!close)
    return false;
  size_t n = 0;
  for (p++; p < close && n + 1 < size; p++)
    name[n++] = (char) tolower ((unsigned char) *p);
  name[n] = '\0';
  return true;
}

/* whether section s (lower case) is in the comma list (NULL: all) */
static bool
lora_listed (const char *list, const char *s)
{
  if (!list)
    return true;
  const size_t n = strlen (s);
  for (const char *p = list; *p;) {
    const char *comma = strchr (p, ',');
    const size_t len = comma ? (size_t) (comma - p) : strlen (p);
    if (len == n && !strncasecmp (p, s, n))
      return true;
    p += len + (comma ? 1 : 0);
  }
  return false;
}

/* whether layer li of m takes adapters: its type has the lora_refuses
 * trait and it does not refuse (a conv2d of another kernel does) */
static bool
lora_adaptable (const tt_model * m, int li)
{
  const tt_layer_ops *ops = m->layers[li].ops;
  return ops->lora_refuses && !ops->lora_refuses (&m->layers[li]);
}

/* text with the lora keys of the chosen sections (the names in layers,
 * NULL: every layer LoRA adapts) dropped, and with rank > 0 the new
 * keys added at the section's end; NULL on no memory. m (the model of
 * text, loaded) tells which sections are layers LoRA adapts. */
static char *
lora_edit (const tt_model * m, const char *text, const char *layers,
    uint32_t rank, uint32_t alpha)
{
  tt_text_buf o = { 0 };
  char section[TT_NAME_MAX] = "", key[64], add[96] = "";
  bool chosen = false;
  const char *p = text;
  if (rank)
    snprintf (add, sizeof add, alpha ? "lora_rank = %u\nlora_alpha = %u\n" :
        "lora_rank = %u\n", rank, alpha);
  for (;;) {
    const char *nl = strchr (p, '\n');
    const char *end = nl ? nl : p + strlen (p);
    const char *next = nl ? nl + 1 : end;
    char name[TT_NAME_MAX];
    const bool header = lora_line_section (p, end, name, sizeof name);
    if (header || !*p) {
      if (chosen && rank)
        tt_text_buf_append (&o, add, strlen (add));
      if (!*p)
        break;
      snprintf (section, sizeof section, "%s", name);
      const int li = tt_model_find_layer (m, section);
      chosen = li >= 0 && lora_adaptable (m, li) &&
          lora_listed (layers, section);
      tt_text_buf_append (&o, p, (size_t) (next - p));
      p = next;
      continue;
    }
    lora_line_key (p, end, key, sizeof key);
    if (!(chosen && (!strcmp (key, "lora_rank") ||
                !strcmp (key, "lora_alpha"))))
      tt_text_buf_append (&o, p, (size_t) (next - p));
    if (nl == NULL && *end == '\0' && !*next) {
      /* the last line had no line end */
      if (chosen && rank) {
        tt_text_buf_append (&o, "\n", 1);
        tt_text_buf_append (&o, add, strlen (add));
      }
      break;
    }
    p = next;
  }
  if (o.failed) {
    free (o.buf);
    return NULL;
  }
  return o.buf ? o.buf : strdup ("");
}

/* the model of path (or of text, named name), compiled for inference at
 * batch 1 with weights loaded (NULL: initialized from seed) */
static tt_model *
lora_open (const char *path, const char *text, const char *name,
    const char *weights, uint64_t seed, tt_error * err)
{
  tt_model *m = text ? tt_model_load_ini_text (text, strlen (text), name,
      err) : tt_model_load_ini (path, err);
  if (!m)
    return NULL;
  tt_model_set_seed (m, seed);
  if (tt_model_set_batch_size (m, 1, err) ||
      tt_model_set_inference (m, true, err) || tt_model_compile (m, err) ||
      (weights && tt_model_load_weights (m, weights, err))) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static tt_weight *
lora_find (tt_model * m, const char *layer, const char *suffix)
{
  const int li = tt_model_find_layer (m, layer);
  if (li < 0)
    return NULL;
  for (uint32_t k = 0; k < m->layers[li].n_weights; k++)
    if (!strcmp (m->layers[li].weights[k].suffix, suffix))
      return &m->layers[li].weights[k];
  return NULL;
}

/* loraA, loraB, or a projection's (query_loraA ...) */
static bool
lora_is_adapter (const tt_weight * w)
{
  const size_t n = strlen (w->suffix);
  return n >= 5 && (!strcmp (w->suffix + n - 5, "loraA") ||
      !strcmp (w->suffix + n - 5, "loraB"));
}

/* dst's weights from src's of the same layer and name and size; with
 * adapters, dst's adapters too, else they stay */
static void
lora_copy (tt_model * dst, tt_model * src, bool adapters)
{
  for (uint32_t i = 0; i < dst->n_layers; i++)
    for (uint32_t k = 0; k < dst->layers[i].n_weights; k++) {
      tt_weight *w = &dst->layers[i].weights[k];
      if (lora_is_adapter (w) && !adapters)
        continue;
      const tt_weight *s = lora_find (src, dst->layers[i].name, w->suffix);
      if (s && s->count == w->count)
        memcpy (tt_data (dst, w->value), tt_data (src, s->value),
            w->count * sizeof (float));
    }
}

/* OUT.bin beside OUT.ini: its .ini replaced (or .bin appended) */
static tt_status
lora_bin_path (const char *out_ini, char *bin, size_t size, tt_error * err)
{
  const size_t n = strlen (out_ini);
  const size_t keep = n > 4 && !strcasecmp (out_ini + n - 4, ".ini") ?
      n - 4 : n;
  if ((size_t) snprintf (bin, size, "%.*s.bin", (int) keep, out_ini) >= size)
    return tt_fail (err, TT_ERR_INVALID, "%s: path too long", out_ini);
  return TT_OK;
}

static tt_status
lora_write (const char *path, const void *data, size_t len, tt_error * err)
{
  tt_atomic_file f;
  tt_status st = tt_atomic_file_open (&f, path, err);
  if (st)
    return st;
  if ((st = tt_atomic_file_write (&f, data, len, err))) {
    tt_atomic_file_abort (&f);
    return st;
  }
  return tt_atomic_file_commit (&f, err);
}

/* refuses outputs that are inputs */
static tt_status
lora_check_outputs (const char *ini, const char *weights, const char *extra,
    const char *out, const char *out_bin, tt_error * err)
{
  const char *in[3] = { ini, weights, extra };
  for (int i = 0; i < 3; i++)
    if (in[i] && ((out && !strcmp (in[i], out)) ||
            (out_bin && !strcmp (in[i], out_bin))))
      return tt_fail (err, TT_ERR_INVALID, "lora: %s is an input: not "
          "written over", in[i]);
  return TT_OK;
}

/* "a, b, c": the layers of m LoRA adapts */
static void
lora_fc_list (const tt_model * m, char *out, size_t size)
{
  size_t len = 0;
  out[0] = '\0';
  for (uint32_t i = 0; i < m->n_layers && len < size; i++)
    if (lora_adaptable (m, (int) i))
      len += (size_t) snprintf (out + len, size - len, "%s%s",
          len ? ", " : "", m->layers[i].name);
}

/* each name of layers is a layer of m LoRA adapts */
static tt_status
lora_check_layers (const tt_model * m, const char *layers, tt_error * err)
{
  if (!layers)
    return TT_OK;
  if (!*layers || *layers == ',' || layers[strlen (layers) - 1] == ',' ||
      strstr (layers, ",,"))
    return tt_fail (err, TT_ERR_INVALID, "%s: lora --layers '%s': an empty "
        "name", m->path, layers);
  for (const char *p = layers; *p;) {
    const char *comma = strchr (p, ',');
    const size_t len = comma ? (size_t) (comma - p) : strlen (p);
    char name[TT_NAME_MAX];
    snprintf (name, sizeof name, "%.*s", (int) len, p);
    tt_ini_text_lower (name);
    const int li = tt_model_find_layer (m, name);
    if (li < 0 || !lora_adaptable (m, li)) {
      char list[1024];
      const tt_layer_ops *ops = li < 0 ? NULL : m->layers[li].ops;
      const char *why = ops && ops->lora_refuses ?
          ops->lora_refuses (&m->layers[li]) : NULL;
      lora_fc_list (m, list, sizeof list);
      return tt_fail (err, TT_ERR_INVALID, "%s: lora --layers: %s '%s'%s%s; "
          "the layers LoRA adapts (fully_connected, multi_head_attention, "
          "1x1 conv2d) are: %s", m->path, li < 0 ? "no layer named" :
          "not a layer LoRA adapts:", name, why ? ": " : "", why ? why : "",
          list[0] ? list : "(none)");
    }
    p += len + (comma ? 1 : 0);
  }
  return TT_OK;
}

/* writes text as out_ini and m's weights as out_bin */
static tt_status
lora_save (const char *text, const char *out_ini, tt_model * m,
    const char *out_bin, tt_error * err)
{
  tt_status st = lora_write (out_ini, text, strlen (text), err);
  return st ? st : tt_model_save_bin (m, out_bin, err);
}

tt_status
tt_lora_add (const char *ini, const char *weights, uint32_t rank,
    uint32_t alpha, const char *layers, uint64_t seed, const char *out_ini,
    tt_error * err)
{
  char bin[4096];
  tt_status st;
  if (!rank)
    return tt_fail (err, TT_ERR_INVALID, "lora: --rank needs 1 or more");
  if ((st = lora_bin_path (out_ini, bin, sizeof bin, err)) ||
      (st = lora_check_outputs (ini, weights, NULL, out_ini, bin, err)))
    return st;
  tt_model *base = lora_open (ini, NULL, NULL, weights, seed, err);
  if (!base)
    return err ? err->status : TT_ERR_INVALID;
  char *text = NULL;
  tt_model *out = NULL;
  if ((st = lora_check_layers (base, layers, err)))
    goto done;
  text = lora_edit (base, base->ini_text, layers, rank, alpha);
  if (!text) {
    st = tt_fail (err, TT_ERR_NOMEM, "lora: out of memory");
    goto done;
  }
  out = lora_open (NULL, text, out_ini, NULL, seed, err);
  if (!out) {
    st = err ? err->status : TT_ERR_INVALID;
    goto done;
  }
  lora_copy (out, base, false);
  st = lora_save (text, out_ini, out, bin, err);
done:
  free (text);
  tt_model_free (out);
  tt_model_free (base);
  return st;
}

/* plain's weights: lora's, each adapted weight W + s A B ([k][n]), or
 * W + s (A B)^T for a base held [n][k] (a 1x1 conv2d's filter) */
static void
lora_merge_into (tt_model * plain, tt_model * lora)
{
  lora_copy (plain, lora, false);
  for (uint32_t i = 0; i < lora->n_layers; i++) {
    const tt_layer *l = &lora->layers[i];
    tt_lora_pair pairs[TT_LORA_MAX_PAIRS];
    const uint32_t n = l->ops->lora_pairs ? l->ops->lora_pairs (l, pairs) : 0;
    for (uint32_t p = 0; p < n; p++) {
      const tt_lora_pair *q = &pairs[p];
      tt_weight *w = lora_find (plain, l->name, l->weights[q->base].suffix);
      if (!w || w->count != (size_t) q->k * q->n)
        continue;
      const float *a = tt_data (lora, l->weights[q->a].value);
      const float *b = tt_data (lora, l->weights[q->b].value);
      const int k = (int) q->k, nn = (int) q->n, r = (int) q->rank;
      if (q->transposed)
        tt_gemm (true, true, nn, k, r, q->scale, b, nn, a, r, 1.0f,
            tt_data (plain, w->value), k);
      else
        tt_gemm (false, false, k, nn, r, q->scale, a, r, b, nn, 1.0f,
            tt_data (plain, w->value), nn);
    }
  }
}

/* the LoRA model of ini (with weights) and its plain twin (the lora keys
 * dropped), with the plain text */
static tt_status
lora_pair (const char *ini, const char *weights, tt_model ** lora,
    tt_model ** plain, char **plain_text, tt_error * err)
{
  *plain = NULL;
  *plain_text = NULL;
  *lora = lora_open (ini, NULL, NULL, weights, 0, err);
  if (!*lora)
    return err ? err->status : TT_ERR_INVALID;
  *plain_text = lora_edit (*lora, (*lora)->ini_text, NULL, 0, 0);
  if (!*plain_text)
    return tt_fail (err, TT_ERR_NOMEM, "lora: out of memory");
  *plain = lora_open (NULL, *plain_text, ini, NULL, 0, err);
  return *plain ? TT_OK : (err ? err->status : TT_ERR_INVALID);
}

tt_status
tt_lora_merge (const char *ini, const char *weights, const char *out_ini,
    tt_error * err)
{
  char bin[4096];
  tt_model *lora = NULL, *plain = NULL;
  char *text = NULL;
  tt_status st;
  if ((st = lora_bin_path (out_ini, bin, sizeof bin, err)) ||
      (st = lora_check_outputs (ini, weights, NULL, out_ini, bin, err)) ||
      (st = lora_pair (ini, weights, &lora, &plain, &text, err)))
    goto done;
  lora_merge_into (plain, lora);
  st = lora_save (text, out_ini, plain, bin, err);
done:
  free (text);
  tt_model_free (plain);
  tt_model_free (lora);
  return st;
}

/* the adapters of m in BIN order: calls fn on each; their floats */
static size_t
lora_adapters_each (tt_model * m, void (*fn) (tt_model *, tt_weight *,
        void *), void *arg)
{
  uint32_t n = 0;
  int *ids = tt_bin_regions (m, false, &n);
  size_t floats = 0;
  for (uint32_t r = 0; ids && r < n; r++)
    for (uint32_t i = 0; i < m->n_layers; i++)
      for (uint32_t k = 0; k < m->layers[i].n_weights; k++) {
        tt_weight *w = &m->layers[i].weights[k];
        if (w->value != ids[r] || !lora_is_adapter (w))
          continue;
        floats += w->count;
        if (fn)
          fn (m, w, arg);
      }
  free (ids);
  return floats;
}

typedef struct
{
  float *at;
  bool into_model;              /* apply: from at into the model */
} lora_cursor;

static void
lora_adapter_copy (tt_model * m, tt_weight * w, void *arg)
{
  lora_cursor *c = arg;
  float *v = tt_data (m, w->value);
  if (c->into_model)
    memcpy (v, c->at, w->count * sizeof (float));
  else
    memcpy (c->at, v, w->count * sizeof (float));
  c->at += w->count;
}

tt_status
tt_lora_save_adapters (const char *ini, const char *weights,
    const char *out_bin, tt_error * err)
{
  tt_status st = lora_check_outputs (ini, weights, NULL, out_bin, NULL, err);
  if (st)
    return st;
  tt_model *m = lora_open (ini, NULL, NULL, weights, 0, err);
  if (!m)
    return err ? err->status : TT_ERR_INVALID;
  const size_t n = lora_adapters_each (m, NULL, NULL);
  float *buf = malloc ((n ? n : 1) * sizeof *buf);
  if (!n)
    st = tt_fail (err, TT_ERR_INVALID, "%s: no layer has lora_rank: no "
        "adapters to write", ini);
  else if (!buf)
    st = tt_fail (err, TT_ERR_NOMEM, "lora: out of memory");
  else {
    lora_cursor c = { buf, false };
    lora_adapters_each (m, lora_adapter_copy, &c);
    st = lora_write (out_bin, buf, n * sizeof *buf, err);
  }
  free (buf);
  tt_model_free (m);
  return st;
}

tt_status
tt_lora_apply (const char *ini, const char *weights, const char *adapters,
    bool merge, const char *out_ini, tt_error * err)
{
  char bin[4096];
  tt_model *lora = NULL, *plain = NULL;
  char *text = NULL;
  float *buf = NULL;
  tt_status st;
  if ((st = lora_bin_path (out_ini, bin, sizeof bin, err)) ||
      (st = lora_check_outputs (ini, weights, adapters, out_ini, bin, err)) ||
      (st = lora_pair (ini, NULL, &lora, &plain, &text, err)))
    goto done;
  /* the base: the plain model's weights, or the LoRA model's own */
  tt_error plain_err;
  if (tt_model_load_weights (plain, weights, &plain_err) == TT_OK)
    lora_copy (lora, plain, false);
  else if ((st = tt_model_load_weights (lora, weights, err)))
    goto done;
  const size_t n = lora_adapters_each (lora, NULL, NULL);
  FILE *f = fopen (adapters, "rb");
  if (!f) {
    st = tt_fail (err, TT_ERR_IO, "%s: cannot open", adapters);
    goto done;
  }
  buf = malloc ((n + 1) * sizeof *buf);
  const size_t got = buf ? fread (buf, 1, (n + 1) * sizeof *buf, f) : 0;
  fclose (f);
  if (!buf) {
    st = tt_fail (err, TT_ERR_NOMEM, "lora: out of memory");
    goto done;
  }
  if (!n || got != n * sizeof *buf) {
    st = tt_fail (err, TT_ERR_INVALID, "%s: %zu bytes do not fit the "
        "adapters of %s: expected %zu (loraA and loraB of each layer with "
        "lora_rank, in BIN order, float32)", adapters, got, ini,
        n * sizeof *buf);
    goto done;
  }
  for (size_t i = 0; i < n; i++)
    if (!isfinite (buf[i])) {
      st = tt_fail (err, TT_ERR_INVALID, "%s: float %zu is not finite",
          adapters, i);
      goto done;
    }
  lora_cursor c = { buf, true };
  lora_adapters_each (lora, lora_adapter_copy, &c);
  if (merge) {
    lora_merge_into (plain, lora);
    st = lora_save (text, out_ini, plain, bin, err);
  } else
    st = lora_save (lora->ini_text, out_ini, lora, bin, err);
done:
  free (buf);
  free (text);
  tt_model_free (plain);
  tt_model_free (lora);
  return st;
}
