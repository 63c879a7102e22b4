/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The optimized INI: the model's own text, unchanged but for [Model]
 * batch_size when the model was compiled for another batch (so that the
 * file loads with the batch its plan is for), followed by the plan
 * (format in docs/optimized-ini.md):
 *
 *   [Plan]          version, pool_size, alignment, batch_size, shapes,
 *                   fingerprint, update_as_you_go (when gradients are
 *                   chunked: the chunk rule), and the planner's figures
 *   [Plan.Layers]   layer = execution position [, inplace]
 *   [Plan.Tensors]  tensor = byte offset in the pool
 *   [Plan.Memory]   under a memory limit: activation = recompute | swap;
 *                   with a half activation type: activation = stash
 *
 * Loading one never trusts it: the graph is rebuilt from the model text,
 * the fingerprint compared, the order checked to be a topological
 * permutation, every in-place flag checked for eligibility, every tensor
 * present exactly once, and the offsets checked by an independent sweep
 * (plan_validate.c) before a byte of the pool is touched.
 */
#include "tt_internal.h"
#include "atomic_file.h"
#include "plan_offsets.h"
#include "plan_validate.h"

#include <ctype.h>
#include <inttypes.h>
#include <iniparser/iniparser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PLAN_VERSION 1
#define PLAN_MARKER "# ---- memory plan"
#define PLAN_MAX_POOL (1ull << 44)

static const char *const plan_keys[] = {
  "version", "pool_size", "alignment", "batch_size", "input_shapes",
  "label_shape", "fingerprint", "lower_bound", "naive_size",
  "depth_first_pool", "tensors", "in_place_layers", "order_search", "mode",
  "update_as_you_go", "memory_limit", "unlimited_pool", "threads",
  "one_thread_pool",
  /* personalization: what trains (core/train_choice.c) */
  "train",
  /* mixed precision: the stash's format (core/stash.c) */
  "activations", NULL
};

bool
tt_plan_section_name (const char *section)
{
  return !strcmp (section, "plan") || !strcmp (section, "plan.layers") ||
      !strcmp (section, "plan.tensors") || !strcmp (section, "plan.memory");
}

static tt_status
plan_error (const tt_model * m, tt_error * err, const char *fmt, ...)
    __attribute__((format (printf, 3, 4)));

static tt_status
plan_error (const tt_model * m, tt_error * err, const char *fmt, ...)
{
  char what[900];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (what, sizeof what, fmt, ap);
  va_end (ap);
  return tt_fail (err, TT_ERR_INVALID, "%s: stored plan rejected: %s",
      m->path, what);
}

static const char *
plan_get (const tt_model * m, const char *section, const char *key)
{
  char full[512];
  snprintf (full, sizeof full, "%s:%s", section, key);
  return iniparser_getstring (m->dict, full, NULL);
}

/* A whole unsigned number, no sign, no junk, <= max. */
static bool
plan_u64 (const char *v, uint64_t max, uint64_t * out)
{
  if (!v)
    return false;
  while (isspace ((unsigned char) *v))
    v++;
  if (!isdigit ((unsigned char) *v))
    return false;
  uint64_t x = 0;
  for (; isdigit ((unsigned char) *v); v++) {
    if (x > (UINT64_MAX - 9) / 10)
      return false;
    x = x * 10 + (uint64_t) (*v - '0');
  }
  while (isspace ((unsigned char) *v))
    v++;
  if (*v || x > max)
    return false;
  *out = x;
  return true;
}

static tt_status
plan_number (const tt_model * m, const char *section, const char *key,
    uint64_t max, uint64_t * out, tt_error * err)
{
  const char *v = plan_get (m, section, key);
  if (!v)
    return plan_error (m, err, "[%s] %s: missing key", section, key);
  if (!plan_u64 (v, max, out))
    return plan_error (m, err, "[%s] %s: '%s' is not an integer in [0, %"
        PRIu64 "]", section, key, v, max);
  return TT_OK;
}

/* Every key of a section, for the checks of unknown and extra names. */
static const char **
plan_keys_of (const tt_model * m, const char *section, int *n)
{
  *n = iniparser_getsecnkeys (m->dict, section);
  if (*n <= 0)
    return NULL;
  const char **keys = calloc ((size_t) *n, sizeof *keys);
  if (keys)
    iniparser_getseckeys (m->dict, section, keys);
  return keys;
}

/* [Plan] activations: the format the plan stashes kept activations in;
 * absent, fp32 (no stash); -1: not a format */
static int
plan_activations (const tt_model * m)
{
  const char *v = plan_get (m, "plan", "activations");
  if (!v || !strcasecmp (v, "fp32"))
    return TT_PRECISION_FP32;
  if (!strcasecmp (v, "bf16"))
    return TT_PRECISION_BF16;
  if (!strcasecmp (v, "fp16"))
    return TT_PRECISION_FP16;
  return -1;
}

/* what this model stashes in: the plan must be made for it */
static int
plan_activations_wanted (const tt_model * m)
{
  return tt_stash_on (m) ? (int) m->activation_type : TT_PRECISION_FP32;
}

static const char *
plan_precision_name (int p)
{
  return p == TT_PRECISION_BF16 ? "bf16" : p == TT_PRECISION_FP16 ? "fp16" :
      "fp32";
}

bool
tt_plan_ini_inference (const tt_model * m)
{
  const char *mode = plan_get (m, "plan", "mode");
  return mode && !strcasecmp (mode, "inference");
}

static tt_status
plan_check_header (tt_model * m, tt_error * err)
{
  tt_status st;
  int n;
  const char **keys = plan_keys_of (m, "plan", &n);
  for (int i = 0; keys && i < n; i++) {
    const char *key = keys[i] + strlen ("plan:");
    bool known = false;
    for (int k = 0; plan_keys[k]; k++)
      known |= !strcmp (key, plan_keys[k]);
    if (!known) {
      free (keys);
      return plan_error (m, err, "[Plan] %s: unknown key", key);
    }
  }
  free (keys);

  uint64_t version, align, batch, pool;
  if ((st = plan_number (m, "plan", "version", UINT32_MAX, &version, err)))
    return st;
  if (version != PLAN_VERSION)
    return plan_error (m, err, "[Plan] version: %" PRIu64 " is not a "
        "version this engine reads (%d); re-plan the model", version,
        PLAN_VERSION);
  if ((st = plan_number (m, "plan", "alignment", 4096, &align, err)) ||
      (st = plan_number (m, "plan", "batch_size", 1u << 16, &batch, err)) ||
      (st = plan_number (m, "plan", "pool_size", PLAN_MAX_POOL, &pool, err)))
    return st;
  if (align < 4 || (align & (align - 1)))
    return plan_error (m, err, "[Plan] alignment: %" PRIu64 " is not a "
        "power of two in [4, 4096]", align);
  const char *mode = plan_get (m, "plan", "mode");
  if (mode && strcasecmp (mode, "training") && strcasecmp (mode, "inference"))
    return plan_error (m, err, "[Plan] mode: '%s' is neither training nor "
        "inference", mode);
  if (plan_activations (m) < 0)
    return plan_error (m, err, "[Plan] activations: '%s' is not fp32, bf16 "
        "or fp16", plan_get (m, "plan", "activations"));
  if (plan_activations (m) != plan_activations_wanted (m))
    return plan_error (m, err, "[Plan] activations: the plan stashes "
        "activations as %s but the model trains with %s ones: re-plan",
        plan_precision_name (plan_activations (m)),
        plan_precision_name (plan_activations_wanted (m)));
  if (batch != m->batch_size)
    return plan_error (m, err, "[Plan] batch_size: planned for batch %"
        PRIu64 " but compiled for batch %u: the plan is stale; re-plan",
        batch, m->batch_size);
  if (pool % align)
    return plan_error (m, err, "[Plan] pool_size: %" PRIu64 " is not a "
        "multiple of the alignment %" PRIu64, pool, align);
  /* update as you go (graph_tensors.c): absent in plans made before it
   * (their gradients are whole, as then); present, the chunk rule it was
   * planned with, which must be this engine's */
  const char *uayg = plan_get (m, "plan", "update_as_you_go");
  char rule[32];
  snprintf (rule, sizeof rule, "%d:%d", TT_GRAD_CHUNK_QUANTUM,
      TT_GRAD_CHUNK_FLOATS);
  if (uayg && strcmp (uayg, rule))
    return plan_error (m, err, "[Plan] update_as_you_go: '%s' is not the "
        "gradient chunk rule of this engine (%s); re-plan the model", uayg,
        rule);
  m->update_as_you_go = uayg != NULL;
  m->align = align;
  m->pool_bytes = pool;
  m->fingerprint = tt_plan_fingerprint (m);

  const char *fp = plan_get (m, "plan", "fingerprint");
  char want[32];
  snprintf (want, sizeof want, "%016" PRIx64, m->fingerprint);
  if (!fp)
    return plan_error (m, err, "[Plan] fingerprint: missing key");
  if (strcasecmp (fp, want))
    return plan_error (m, err, "[Plan] fingerprint: the plan was made for "
        "a different model (plan %s, model %s): layers, shapes, batch, "
        "optimizer or trainable flags changed since planning; re-plan",
        fp, want);
  return TT_OK;
}

/* Reads [Plan.Layers] into an execution order and in-place flags. */
static tt_status
plan_read_layers (tt_model * m, int *exec, tt_error * err)
{
  const uint32_t n = m->n_layers;
  for (uint32_t i = 0; i < n; i++)
    exec[i] = -1;
  for (uint32_t i = 0; i < n; i++) {
    tt_layer *l = &m->layers[i];
    const char *v = plan_get (m, "plan.layers", l->name);
    if (!v)
      return plan_error (m, err, "[Plan.Layers] %s: missing layer", l->name);
    char buf[128];
    snprintf (buf, sizeof buf, "%s", v);
    char *comma = strchr (buf, ',');
    bool in_place = false;
    if (comma) {
      *comma = '\0';
      char *flag = comma + 1;
      while (isspace ((unsigned char) *flag))
        flag++;
      char *end = flag + strlen (flag);
      while (end > flag && isspace ((unsigned char) end[-1]))
        *--end = '\0';
      if (strcasecmp (flag, "inplace"))
        return plan_error (m, err, "[Plan.Layers] %s: '%s' is not "
            "'inplace'", l->name, flag);
      in_place = true;
    }
    uint64_t pos;
    if (!plan_u64 (buf, n - 1, &pos))
      return plan_error (m, err, "[Plan.Layers] %s: position '%s' is not "
          "an integer in [0, %u]", l->name, buf, n - 1);
    if (exec[pos] >= 0)
      return plan_error (m, err, "[Plan.Layers] %s and %s both run at "
          "position %" PRIu64, m->layers[exec[pos]].name, l->name, pos);
    exec[pos] = (int) i;
    l->in_place = in_place;
  }
  int nk;
  const char **keys = plan_keys_of (m, "plan.layers", &nk);
  for (int k = 0; keys && k < nk; k++) {
    const char *name = keys[k] + strlen ("plan.layers:");
    if (tt_model_find_layer (m, name) < 0) {
      tt_status st = plan_error (m, err, "[Plan.Layers] %s: no such layer "
          "in the model", name);
      free (keys);
      return st;
    }
  }
  free (keys);

  /* every producer must run before its consumers */
  for (uint32_t pos = 0; pos < n; pos++)
    m->layers[exec[pos]].order = (int) pos;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < m->layers[i].n_inputs; k++) {
      const tt_layer *p = &m->layers[m->layers[i].inputs[k].layer];
      if (p->order >= m->layers[i].order)
        return plan_error (m, err, "[Plan.Layers] %s runs at %d, before "
            "its input %s at %d", m->layers[i].name, m->layers[i].order,
            p->name, p->order);
    }
  /* in storage (topological) order, as the decisions depend on producers */
  for (uint32_t i = 0; i < n; i++) {
    const char *why;
    if (m->layers[i].in_place && !tt_inplace_eligible (m, &m->layers[i], &why))
      return plan_error (m, err, "[Plan.Layers] %s: cannot run in place: "
          "%s", m->layers[i].name, why);
  }
  return TT_OK;
}

/* [Plan.Memory]: the activations dropped under the memory limit, each
 * checked as the planner would have chosen it (remat.c), then given its
 * second instance; their offsets follow in [Plan.Tensors]. */
static tt_status
plan_read_memory (tt_model * m, tt_error * err)
{
  int nk;
  const char **keys = plan_keys_of (m, "plan.memory", &nk);
  if (nk <= 0)
    return TT_OK;
  if (!keys)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  tt_status st = tt_remat_groups (m, err);
  for (int k = 0; k < nk && st == TT_OK; k++) {
    const char *name = keys[k] + strlen ("plan.memory:");
    const char *v = plan_get (m, "plan.memory", name);
    int id = -1;
    for (uint32_t i = 0; i < m->n_tensors && id < 0; i++)
      if (m->tensors[i].alias_of < 0 && !strcmp (m->tensors[i].name, name))
        id = (int) i;
    const int g = id < 0 ? -1 : tt_remat_find (m, id);
    tt_remat *G = g < 0 ? NULL : &m->remat[g];
    /* "mode" or "mode, rerun" */
    char word[32] = "", flag[32] = "";
    const char *comma = v ? strchr (v, ',') : NULL;
    if (v)
      snprintf (word, sizeof word, "%.*s", comma ? (int) (comma - v) :
          (int) strlen (v), v);
    if (comma)
      snprintf (flag, sizeof flag, "%s", comma + 1);
    const char *mode = tt_ini_text_strip (word);
    const char *what = tt_ini_text_strip (flag);
    tt_ini_text_lower (word);
    tt_ini_text_lower (flag);
    const bool swap = !strcmp (mode, "swap"), keep = !strcmp (mode, "keep");
    const bool stash = !strcmp (mode, "stash");
    const bool rerun = !strcmp (what, "rerun");
    if (id < 0)
      st = plan_error (m, err, "[Plan.Memory] %s: no tensor of that name "
          "has memory of its own in this model", name);
    else if (!G)
      st = plan_error (m, err, "[Plan.Memory] %s: not an activation a "
          "layer writes in forward; only those can be dropped", name);
    else if ((!swap && !keep && !stash && strcmp (mode, "recompute")) ||
        (comma && !rerun) || (keep && !rerun))
      st = plan_error (m, err, "[Plan.Memory] %s: '%s' is neither "
          "recompute nor swap nor stash, optionally followed by ', rerun' "
          "(or 'keep, rerun')", name, v ? v : "");
    else if (rerun && !G->late_ok)
      st = plan_error (m, err, "[Plan.Memory] %s: rerun: its first layer "
          "%s keeps no scratch for its backward, or cannot run twice", name,
          m->layers[G->writers[0]].name);
    else if (keep)
      G->late = true;
    else if (!G->backward_use)
      st = plan_error (m, err, "[Plan.Memory] %s: no backward phase reads "
          "it, so there is nothing to rebuild", name);
    else if (stash && !tt_stash_on (m))
      st = plan_error (m, err, "[Plan.Memory] %s: stash: the model's "
          "activations are fp32 (a stash needs [Model] model_tensor_type "
          "with bf16 or fp16 activations, and training)", name);
    else if (stash && !tt_remat_stashable (G))
      st = plan_error (m, err, "[Plan.Memory] %s: stash: not an activation "
          "kept for backward that can be stashed (%s)", name,
          !G->swappable && G->not_recomputable ? G->not_recomputable :
          !G->swappable ? "the loss's output" : "no backward phase reads "
          "it");
    else if (!swap && !stash && G->not_recomputable)
      st = plan_error (m, err, "[Plan.Memory] %s: cannot be recomputed: "
          "%s", name, G->not_recomputable);
    else if (swap && !G->swappable)
      st = plan_error (m, err, "[Plan.Memory] %s: cannot be swapped", name);
    else if (swap && !m->memory_swap)
      st = plan_error (m, err, "[Plan.Memory] %s: swap needs [Model] "
          "memory_swap = true", name);
    else {
      G->mode = swap ? TT_REMAT_SWAP : stash ? TT_REMAT_STASH :
          TT_REMAT_RECOMPUTE;
      G->late = rerun;
    }
  }
  free (keys);
  if (st == TT_OK)
    st = tt_remat_materialize (m, err);
  /* every stash holds its tensor at 2 bytes an element: checked apart
   * from the declarations (plan_validate.c) */
  for (uint32_t g = 0; g < m->n_remat && st == TT_OK; g++)
    for (uint32_t k = 0; k < m->remat[g].n_tensors && st == TT_OK; k++) {
      const int s = m->remat[g].stash[k];
      char why[512];
      if (s >= 0
          && tt_plan_validate_stash (m->tensors[m->remat[g].tensors[k]].count,
              (uint64_t) m->tensors[s].count * sizeof (float),
              m->tensors[s].name, why, sizeof why))
        st = plan_error (m, err, "[Plan.Memory] %s", why);
    }
  return st;
}

static tt_status
plan_read_offsets (tt_model * m, tt_error * err)
{
  tt_status st = TT_OK;
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    tt_tensor *t = &m->tensors[i];
    if (t->alias_of >= 0)
      continue;
    const char *v = plan_get (m, "plan.tensors", t->name);
    /* a plan from before half-width swap files swaps a bf16 or fp16
     * root at 4 bytes an element, without its staging */
    const char *colon = strrchr (t->name, ':');
    if (!v && colon && !strcmp (colon, ":staging"))
      return plan_error (m, err, "[Plan.Tensors] %s: missing tensor: the "
          "plan swaps %.*s without it, as when the swap file held fp32; "
          "this engine writes %s activations there at 2 bytes an element "
          "through that tensor: re-plan", t->name, (int) (colon - t->name),
          t->name, plan_precision_name (m->activation_type));
    if (!v)
      return plan_error (m, err, "[Plan.Tensors] %s: missing tensor", t->name);
    uint64_t off;
    if (!plan_u64 (v, PLAN_MAX_POOL, &off))
      return plan_error (m, err, "[Plan.Tensors] %s: offset '%s' is not an "
          "integer in [0, %llu]", t->name, v, (unsigned long long)
          PLAN_MAX_POOL);
    t->offset = off;
  }
  int nk;
  const char **keys = plan_keys_of (m, "plan.tensors", &nk);
  for (int k = 0; keys && k < nk && st == TT_OK; k++) {
    const char *name = keys[k] + strlen ("plan.tensors:");
    bool found = false;
    for (uint32_t i = 0; i < m->n_tensors && !found; i++)
      found = m->tensors[i].alias_of < 0 && !strcmp (m->tensors[i].name, name);
    if (!found)
      st = plan_error (m, err, "[Plan.Tensors] %s: no tensor of that name "
          "has memory of its own in this model", name);
  }
  free (keys);
  return st;
}

bool
tt_plan_ini_serves (const tt_model * m)
{
  /* a plan stored for the other mode (training vs inference only) is not
   * an error: this mode simply needs its own */
  uint64_t pool = 0;
  plan_u64 (plan_get (m, "plan", "pool_size"), UINT64_MAX, &pool);
  /* a plan over the limit asked for is planned afresh under it; so is
   * one made for another activation type (mixed precision: a precision
   * set over the INI's), and any plan when gradients are kept: a stored
   * plan lets later tensors reuse a gradient's bytes */
  const int acts = plan_activations (m);
  return m->stored_plan && m->plan_mode == TT_PLAN_AUTO &&
      (acts < 0 || acts == plan_activations_wanted (m)) &&
      tt_plan_ini_inference (m) == m->inference &&
      !m->keep_gradients &&
      !(m->whole_gradients && plan_get (m, "plan", "update_as_you_go")) &&
      !(tt_model_gradients_whole (m) &&
      plan_get (m, "plan", "update_as_you_go")) &&
      !(m->memory_limit && pool > m->memory_limit);
}

tt_status
tt_plan_ini_use (tt_model * m, tt_error * err)
{
  const double t0 = tt_plan_now ();
  tt_plan_reset (m);
  tt_status st = tt_plan_ini_apply (m, err);
  m->plan.plan_seconds = tt_plan_now () - t0;
  m->plan.from_stored_plan = true;
  return st;
}

tt_status
tt_plan_ini_apply (tt_model * m, tt_error * err)
{
  tt_status st;
  int *exec = malloc (m->n_layers * sizeof *exec);
  if (!exec)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  if ((st = plan_check_header (m, err)) ||
      (st = plan_read_layers (m, exec, err))) {
    free (exec);
    return st;
  }
  tt_graph_declare_tensors (m);
  if (m->tensor_oom) {
    free (exec);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  }
  if ((st = tt_plan_check_chunks (m, err))) {
    free (exec);
    return st;
  }
  tt_order_apply (m, exec);
  free (exec);
  if ((st = plan_read_memory (m, err)))
    return st;
  tt_lifetimes_compute (m);
  if (m->n_dropped)
    tt_remat_lifetimes (m);
  if ((st = plan_read_offsets (m, err)))
    return st;

  uint32_t *map;
  size_t n;
  tt_interval *t = tt_plan_intervals (m, &map, &n);
  if (!t)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  const char **names = malloc ((n + 1) * sizeof *names);
  if (!names) {
    free (t);
    free (map);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  }
  for (size_t i = 0; i < n; i++)
    names[i] = m->tensors[map[i]].name;
  char why[768];
  if (tt_plan_validate (t, n, m->align, m->pool_bytes, names, why,
          sizeof why) != 0)
    st = plan_error (m, err, "[Plan.Tensors] %s", why);
  /* the planner's own figures, for reports and for saving the plan again
   * unchanged; only the bound is recomputed (it is cheap and checked) */
  uint64_t figure;
  if (plan_u64 (plan_get (m, "plan", "depth_first_pool"), UINT64_MAX, &figure))
    m->plan.dfs_pool_bytes = figure;
  const char *search = plan_get (m, "plan", "order_search");
  m->plan.order_exact = search && !strcmp (search, "exact");
  m->plan.pool_bytes = m->pool_bytes;
  m->plan.lower_bound = tt_plan_lower_bound (t, n, m->align);
  m->plan.naive_bytes = tt_plan_naive_size (t, n, m->align);
  /* no layout needs more than every tensor its own bytes: a larger
   * pool_size is damage, and would be allocated as written */
  if (st == TT_OK && m->pool_bytes > m->plan.naive_bytes)
    st = plan_error (m, err, "[Plan] pool_size: %" PRIu64 " bytes is more "
        "than the %" PRIu64 " of the naive layout (every tensor its own "
        "bytes)", m->pool_bytes, m->plan.naive_bytes);
  /* planned under a limit: the pool fits it */
  const char *limit = plan_get (m, "plan", "memory_limit");
  if (limit && st == TT_OK) {
    if (!plan_u64 (limit, UINT64_MAX, &figure))
      st = plan_error (m, err, "[Plan] memory_limit: '%s' is not an "
          "integer", limit);
    else if (m->pool_bytes > figure)
      st = plan_error (m, err, "[Plan] pool_size: %" PRIu64 " bytes is "
          "more than the memory_limit of %" PRIu64, m->pool_bytes, figure);
    else
      m->plan.memory_limit = figure;
  }
  if (plan_u64 (plan_get (m, "plan", "unlimited_pool"), UINT64_MAX, &figure))
    m->plan.unlimited_pool_bytes = figure;
  /* laid out for two threads (plan_halves.h): any layout the check above
   * passed serves every thread count, so this only reports it */
  const char *threads = plan_get (m, "plan", "threads");
  m->plan.laid_out_threads = 1;
  m->plan.one_thread_pool_bytes = m->pool_bytes;
  if (threads && st == TT_OK) {
    if (!plan_u64 (threads, 2, &figure) || figure < 1)
      st = plan_error (m, err, "[Plan] threads: '%s' is not 1 or 2 (the "
          "thread count the pool was laid out for)", threads);
    else
      m->plan.laid_out_threads = (uint32_t) figure;
  }
  if (plan_u64 (plan_get (m, "plan", "one_thread_pool"), UINT64_MAX, &figure))
    m->plan.one_thread_pool_bytes = figure;
  m->plan.tensors = (uint32_t) n;
  for (uint32_t i = 0; i < m->n_layers; i++)
    m->plan.in_place_layers += m->layers[i].in_place;
  free (names);
  free (t);
  free (map);
  return st;
}

/* ---- writing --------------------------------------------------------- */

/* The text grows in a buffer; the first failure sticks. */
typedef struct
{
  char *buf;
  size_t len, cap;
  tt_error *err;
  tt_status st;
} plan_writer;

static void
plan_append (plan_writer * w, const char *data, size_t len)
{
  if (w->st)
    return;
  if (len > w->cap - w->len) {
    size_t cap = w->cap ? w->cap : 4096;
    while (len > cap - w->len) {
      if (cap > SIZE_MAX / 2) {
        w->st = tt_fail (w->err, TT_ERR_NOMEM, "plan text too large");
        return;
      }
      cap *= 2;
    }
    char *grown = realloc (w->buf, cap);
    if (!grown) {
      w->st = tt_fail (w->err, TT_ERR_NOMEM, "out of memory writing the "
          "plan");
      return;
    }
    w->buf = grown;
    w->cap = cap;
  }
  memcpy (w->buf + w->len, data, len);
  w->len += len;
}

static void plan_printf (plan_writer * w, const char *fmt, ...)
    __attribute__((format (printf, 2, 3)));

static void
plan_printf (plan_writer * w, const char *fmt, ...)
{
  char line[1024];
  if (w->st)
    return;
  va_list ap;
  va_start (ap, fmt);
  int len = vsnprintf (line, sizeof line, fmt, ap);
  va_end (ap);
  if (len < 0 || (size_t) len >= sizeof line) {
    w->st = tt_fail (w->err, TT_ERR_INVALID, "plan line too long");
    return;
  }
  plan_append (w, line, (size_t) len);
}

/* Whether a line is a section header, read as the INI parsers read it:
 * trimmed, "[" ... "]", the name up to the first "]", trimmed; the name's
 * span in *name, *n. */
static bool
plan_line_section (const char *p, size_t len, const char **name, size_t *n)
{
  while (len > 0 && isspace ((unsigned char) *p)) {
    p++;
    len--;
  }
  while (len > 0 && isspace ((unsigned char) p[len - 1]))
    len--;
  if (len < 2 || p[0] != '[' || p[len - 1] != ']')
    return false;
  const char *start = p + 1, *end = memchr (start, ']', len - 1);
  while (start < end && isspace ((unsigned char) *start))
    start++;
  while (end > start && isspace ((unsigned char) end[-1]))
    end--;
  *name = start;
  *n = (size_t) (end - start);
  return true;
}

/* Whether a line opens a plan section, any case ("[planet]" is a layer,
 * not a plan section). */
static bool
plan_header_line (const char *p, size_t len)
{
  const char *name;
  size_t n;
  char buf[16];
  if (!plan_line_section (p, len, &name, &n) || n >= sizeof buf)
    return false;
  for (size_t i = 0; i < n; i++)
    buf[i] = (char) tolower ((unsigned char) name[i]);
  buf[n] = '\0';
  return tt_plan_section_name (buf);
}

/* Length of the model text without an earlier plan: up to the marker line
 * or the first [Plan...] section. */
static size_t
plan_text_end (const char *text, size_t len)
{
  size_t at = 0;
  while (at < len) {
    const char *line = text + at;
    const char *nl = memchr (line, '\n', len - at);
    size_t line_len = nl ? (size_t) (nl - line) : len - at;
    const char *p = line;
    while (p < line + line_len && (*p == ' ' || *p == '\t'))
      p++;
    if ((size_t) (line + line_len - p) >= strlen (PLAN_MARKER) &&
        !strncmp (p, PLAN_MARKER, strlen (PLAN_MARKER)))
      return at;
    if (plan_header_line (line, line_len))
      return at;
    at += line_len + (nl ? 1 : 0);
  }
  return len;
}

/* An entry of a [Plan...] section ("plan.layers:x", or the section). */
static bool
plan_entry (const char *key)
{
  const char *colon = strchr (key, ':');
  size_t n = colon ? (size_t) (colon - key) : strlen (key);
  return (n == 4 && !strncmp (key, "plan", 4)) ||
      (n == 11 && !strncmp (key, "plan.layers", 11)) ||
      (n == 11 && !strncmp (key, "plan.memory", 11)) ||
      (n == 12 && !strncmp (key, "plan.tensors", 12));
}

/* Saving a plan keeps the model text up to its old plan (plan_text_end)
 * and appends the new one; so that no part of the model is dropped, that
 * kept text must parse to the same entries as the whole text, plan
 * entries aside: nothing of the model may follow the plan. */
tt_status
tt_plan_text_check (tt_model * m, tt_error * err)
{
  size_t keep = plan_text_end (m->ini_text, m->ini_len);
  if (keep == m->ini_len)
    return TT_OK;
  tt_error perr;
  dictionary *head = tt_ini_text_parse (m->ini_text, keep, m->path, &perr);
  const dictionary *d = m->dict;
  bool same = head != NULL;
  ssize_t j = 0;
  for (ssize_t i = 0; same && i <= d->size; i++) {
    if (i < d->size && (!d->key[i] || plan_entry (d->key[i])))
      continue;
    while (j < head->size && (!head->key[j] || plan_entry (head->key[j])))
      j++;
    if (i == d->size) {
      same = j == head->size;
      break;
    }
    same = j < head->size && !strcmp (d->key[i], head->key[j]) &&
        !d->val[i] == !head->val[j] && (!d->val[i] ||
        !strcmp (d->val[i], head->val[j]));
    j++;
  }
  if (head)
    iniparser_freedict (head);
  if (same)
    return TT_OK;
  int line = 1;
  for (size_t i = 0; i < keep; i++)
    line += m->ini_text[i] == '\n';
  return tt_fail (err, TT_ERR_INVALID, "%s: the model continues after its "
      "stored plan (which starts at line %d): the plan must end the file",
      m->path, line);
}

/* Whether line (len bytes) is "key = ..." for key, case aside. */
static bool
plan_line_has_key (const char *line, size_t len, const char *key)
{
  const char *p = line, *end = line + len;
  while (p < end && isspace ((unsigned char) *p))
    p++;
  if (p == end || *p == '#' || *p == ';' || *p == '[')
    return false;
  const char *eq = memchr (p, '=', (size_t) (end - p));
  if (!eq)
    return false;
  const char *q = eq;
  while (q > p && isspace ((unsigned char) q[-1]))
    q--;
  return (size_t) (q - p) == strlen (key) &&
      !strncasecmp (p, key, (size_t) (q - p));
}

/* [Model] keys set to the compiled model's values in the text stored
 * with it: those the plan below depends on, batch_size and (mixed
 * precision) model_tensor_type, the precision it was planned for; and
 * loss_scale, the scale dynamic loss scaling has reached, which a model
 * loaded from this text starts from (a checkpoint resumes at it) */
typedef struct
{
  const char *key, *what;
  char value[32];
  bool rewrite, done;
} plan_model_key;

/* whether [Model] model_tensor_type as written (absent: FP32-FP32) is
 * the model's precision */
static bool
plan_precision_written (const tt_model * m)
{
  const char *v = iniparser_getstring (m->dict, "model:model_tensor_type",
      NULL);
  int w;
  tt_precision a;
  if (!v)
    return m->weight_type == TT_PRECISION_FP32 &&
        m->activation_type == TT_PRECISION_FP32;
  return tt_precision_parse (v, &w, &a) && w >= 0 &&
      (tt_precision) w == m->weight_type && a == m->activation_type;
}

/* One key's line in the text (line, n bytes), replaced by the model's
 * value (the old one kept in a comment) */
static void
plan_replace_key (plan_writer * w, const tt_model * m, plan_model_key * k,
    const char *line, size_t n)
{
  size_t e = n;
  while (e > 0 && isspace ((unsigned char) line[e - 1]))
    e--;
  if (e > 0 && line[e - 1] == '\\') {
    w->st = tt_fail (w->err, TT_ERR_INVALID, "%s: [model] %s continues "
        "onto the next line: write it on one line to save a plan for %s %s",
        m->path, k->key, k->key, k->value);
    return;
  }
  const char *p = line;
  while (p < line + e && isspace ((unsigned char) *p))
    p++;
  plan_printf (w, "%s = %s   # %s (was: ", k->key, k->value, k->what);
  plan_append (w, p, (size_t) (line + e - p));
  plan_append (w, ")", 1);
  k->done = true;
}

/* The keys not in [Model]'s text, added at its end */
static void
plan_add_keys (plan_writer * w, plan_model_key * keys, size_t n_keys,
    const char *lead)
{
  for (size_t i = 0; i < n_keys; i++)
    if (keys[i].rewrite && !keys[i].done) {
      plan_printf (w, "%s%s = %s   # %s", lead, keys[i].key, keys[i].value,
          keys[i].what);
      if (*lead == '\0')
        plan_append (w, "\n", 1);
      keys[i].done = true;
    }
}

/* The model text (len bytes) with [Model] batch_size set to the compiled
 * batch, model_tensor_type to the compiled precision and loss_scale to
 * the scale reached: a key's line
 * replaced (the old one kept in a comment), or the key added at the end
 * of [Model] (which every loaded model has). */
static void
plan_append_model_text (plan_writer * w, const tt_model * m, size_t len)
{
  const char *text = m->ini_text;
  const int written = iniparser_getint (m->dict, "model:batch_size", 1);
  /* (ini_model.c: a written scale of 1 or less is off, loss_scale 0) */
  const double scale_written = iniparser_getdouble (m->dict,
      "model:loss_scale", 0.0);
  plan_model_key keys[] = {
    {"batch_size", "the batch of the plan below", "",
        written != (int) m->batch_size, false},
    {"model_tensor_type", "the precision of the plan below", "",
        !plan_precision_written (m), false},
    {"loss_scale", "the scale dynamic loss scaling reached", "",
          m->loss_scale > 0 && (double) m->loss_scale != scale_written,
        false},
  };
  const size_t n_keys = sizeof keys / sizeof keys[0];
  snprintf (keys[0].value, sizeof keys[0].value, "%u", m->batch_size);
  tt_model_precision (m, keys[1].value, sizeof keys[1].value);
  snprintf (keys[2].value, sizeof keys[2].value, "%.9g",
      (double) m->loss_scale);
  bool any = false;
  for (size_t i = 0; i < n_keys; i++)
    any |= keys[i].rewrite;
  if (!any) {
    plan_append (w, text, len);
    return;
  }
  bool in_model = false, seen_model = false;
  size_t at = 0;
  while (at < len && !w->st) {
    const char *line = text + at;
    const char *nl = memchr (line, '\n', len - at);
    size_t n = nl ? (size_t) (nl - line) : len - at;
    const char *name;
    size_t name_len;
    if (plan_line_section (line, n, &name, &name_len)) {
      const bool model = name_len == 5 && !strncasecmp (name, "model", 5);
      if (in_model)
        plan_add_keys (w, keys, n_keys, "");
      in_model = model && !seen_model;
      seen_model |= model;
    }
    plan_model_key *k = NULL;
    for (size_t i = 0; in_model && !k && i < n_keys; i++)
      if (keys[i].rewrite && !keys[i].done &&
          plan_line_has_key (line, n, keys[i].key))
        k = &keys[i];
    if (k)
      plan_replace_key (w, m, k, line, n);
    else
      plan_append (w, line, n);
    if (nl)
      plan_append (w, "\n", 1);
    at += n + (nl ? 1 : 0);
  }
  if (in_model)
    plan_add_keys (w, keys, n_keys, "\n");
}

tt_status
tt_plan_ini_text (tt_model * m, char **text, size_t *text_len, tt_error * err)
{
  *text = NULL;
  *text_len = 0;
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile the model before saving "
        "its plan", m->path);
  if (m->plan_mode == TT_PLAN_NAIVE)
    return tt_fail (err, TT_ERR_STATE, "%s: a naive layout is not a plan "
        "worth saving", m->path);
  plan_writer w = { NULL, 0, 0, err, TT_OK };
  size_t keep = plan_text_end (m->ini_text, m->ini_len);
  while (keep > 0 && (m->ini_text[keep - 1] == '\n' ||
          m->ini_text[keep - 1] == ' ' || m->ini_text[keep - 1] == '\t'))
    keep--;
  plan_append_model_text (&w, m, keep);
  plan_printf (&w, "\n\n%s: written by tensor-trainer; loading validates "
      "it against the model above ----\n", PLAN_MARKER);
  plan_printf (&w, "[Plan]\nversion = %d\npool_size = %" PRIu64
      "\nalignment = %" PRIu64 "\nbatch_size = %u\nmode = %s\n",
      PLAN_VERSION, m->pool_bytes, m->align, m->batch_size,
      m->inference ? "inference" : "training");
  if (m->update_as_you_go)
    plan_printf (&w, "update_as_you_go = %d:%d\n", TT_GRAD_CHUNK_QUANTUM,
        TT_GRAD_CHUNK_FLOATS);
  if (tt_train_choice (m) && !m->inference)
    plan_printf (&w, "train = %s\n", tt_train_choice (m));
  if (tt_stash_on (m))
    plan_printf (&w, "activations = %s\n",
        plan_precision_name (m->activation_type));
  plan_printf (&w, "input_shapes = ");
  for (uint32_t i = 0; i < m->n_inputs; i++) {
    tt_dims d = m->layers[m->input_layers[i]].out_dims[0];
    plan_printf (&w, "%s%u:%u:%u", i ? "," : "", d.c, d.h, d.w);
  }
  tt_dims ld = m->layers[m->loss_layer].out_dims[0];
  plan_printf (&w, "\nlabel_shape = %u:%u:%u\nfingerprint = %016" PRIx64
      "\n", ld.c, ld.h, ld.w, m->fingerprint);
  plan_printf (&w, "lower_bound = %" PRIu64 "\nnaive_size = %" PRIu64
      "\ndepth_first_pool = %" PRIu64 "\ntensors = %u\nin_place_layers = %u"
      "\norder_search = %s\n", m->plan.lower_bound, m->plan.naive_bytes,
      m->plan.dfs_pool_bytes, m->plan.tensors, m->plan.in_place_layers,
      m->plan.order_exact ? "exact" : "greedy");
  if (m->plan.memory_limit)
    plan_printf (&w, "memory_limit = %" PRIu64 "\nunlimited_pool = %" PRIu64
        "\n", m->plan.memory_limit, m->plan.unlimited_pool_bytes);
  if (m->plan.laid_out_threads == 2)
    plan_printf (&w, "threads = 2\none_thread_pool = %" PRIu64 "\n",
        m->plan.one_thread_pool_bytes);
  plan_printf (&w, "\n[Plan.Layers]\n# layer = execution position "
      "[, inplace]\n");
  for (uint32_t pos = 0; pos < m->n_layers; pos++) {
    const tt_layer *l = &m->layers[m->exec[pos]];
    plan_printf (&w, "%s = %u%s\n", l->name, pos,
        l->in_place ? ", inplace" : "");
  }
  plan_printf (&w, "\n[Plan.Tensors]\n# tensor = byte offset   "
      "# bytes, live steps\n");
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    const tt_tensor *t = &m->tensors[i];
    if (t->alias_of >= 0)
      continue;
    plan_printf (&w, "%s = %" PRIu64 "   # %zu bytes, steps %d..%d\n",
        t->name, tt_layout_planned_offset (m, i), t->count * sizeof (float),
        t->first_use, t->last_use);
  }
  if (m->n_dropped)
    plan_printf (&w, "\n[Plan.Memory]\n# activation = recompute | swap | "
        "stash   [, rerun]   # rebuilt before the backward of\n");
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    if (G->mode != TT_REMAT_KEEP || G->late)
      plan_printf (&w, "%s = %s   # %s%s%s\n", m->tensors[G->root].name,
          tt_remat_decision (G),
          G->mode != TT_REMAT_KEEP ? m->layers[G->trigger].name : "",
          G->mode != TT_REMAT_KEEP && G->late ? "; rerun: " : G->late ?
          "rerun: " : "", G->late ? m->layers[G->writers[0]].name : "");
  }
  if (w.st) {
    free (w.buf);
    return w.st;
  }
  *text = w.buf;
  *text_len = w.len;
  return TT_OK;
}

tt_status
tt_model_save_plan_ini (tt_model * m, const char *path, tt_error * err)
{
  char *text;
  size_t len;
  tt_status st = tt_plan_ini_text (m, &text, &len, err);
  if (st)
    return st;
  tt_atomic_file f;
  if ((st = tt_atomic_file_open (&f, path, err))) {
    free (text);
    return st;
  }
  st = tt_atomic_file_write (&f, text, len, err);
  free (text);
  if (st) {
    tt_atomic_file_abort (&f);
    return st;
  }
  return tt_atomic_file_commit (&f, err);
}
