/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nntrainer's BIN weights: no header; every layer's weights in nntrainer's
 * order (bin_layer_order), raw little-endian float32; for Adam the 4 bytes
 * "adam" then each trainable weight's first and second moments (none in
 * what nntrainer's save() writes after initialize() or train()); then the
 * epoch and iteration counters as uint32 (AdamW: no tag and no moments
 * in what nntrainer and ours save; ours reads them when there). A file is
 * accepted only at one of the exact sizes such a file can have for this
 * model, and only if every value is one the model can hold
 * (state_check.c): the model is not touched until the whole file checked
 * out. A save refuses the same values. The weights are at the model's
 * weight type (bin_width.h, [Model] model_tensor_type): 4 bytes each, or
 * IEEE half (FP16, as nntrainer writes) or bfloat16 (BF16), 2 bytes each,
 * widened to the pool's fp32 master copies on load and rounded to nearest
 * even on save; moments stay float32 (as nntrainer's, adam.cpp:38-48).
 */
#include "tt_internal.h"
#include "atomic_file.h"
#include "bin_width.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "bin.c reads and writes little-endian floats in place; add swapping"
#endif

#define BIN_TAG "adam"
#define BIN_TAG_LEN 4
#define BIN_COUNTERS 8


/* The layers in the order nntrainer's NeuralNetwork::save walks them
 * (tests/interop/nntrainer/FINDINGS.md, section 1): GraphCore's
 * topological sort, a depth-first search that emits reverse post-order.
 * Nodes are taken in nntrainer's node-list order, which is ours by
 * creation (sections in INI order, each realized activation or flatten
 * right after its layer; multiouts and the loss sit elsewhere in ours, but
 * they are chain links and leaves, which do not move a weighted layer);
 * each node's consumers are visited in that order too, and every node not
 * yet visited starts a new search. For a chain this is the INI order;
 * parallel branches come out in reverse INI order. A weight shared
 * between layers would be written by its first layer in this order; the
 * engine has none. malloc'd, n_layers entries; NULL when out of memory. */
static int *
bin_layer_order (const tt_model * m)
{
  const uint32_t n = m->n_layers;
  uint32_t edges = 0;
  for (uint32_t i = 0; i < n; i++)
    edges += m->layers[i].n_inputs;
  const size_t slots = (size_t) n + 1;
  int *list = malloc (slots * sizeof *list);
  int *start = calloc (slots + 1, sizeof *start);
  int *fill = malloc (slots * sizeof *fill);
  int *adj = malloc (((size_t) edges + 1) * sizeof *adj);
  int *stack = malloc (slots * sizeof *stack);
  int *next = malloc (slots * sizeof *next);
  bool *seen = calloc (slots, sizeof *seen);
  int *out = malloc (slots * sizeof *out);
  if (!list || !start || !fill || !adj || !stack || !next || !seen || !out) {
    free (out);
    out = NULL;
    goto done;
  }
  /* the node list: layers by creation (a permutation of 0..n-1 after the
   * graph dropped folded layers, so sort rather than index) */
  for (uint32_t i = 0; i < n; i++)
    list[i] = (int) i;
  for (uint32_t i = 1; i < n; i++) {
    const int v = list[i];
    uint32_t j = i;
    for (; j > 0 && m->layers[list[j - 1]].creation > m->layers[v].creation;
        j--)
      list[j] = list[j - 1];
    list[j] = v;
  }
  /* consumers of each layer, in node-list order (CSR) */
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < m->layers[i].n_inputs; k++)
      start[m->layers[i].inputs[k].layer + 1]++;
  for (uint32_t i = 0; i < n; i++)
    start[i + 1] += start[i];
  memcpy (fill, start, n * sizeof *fill);
  for (uint32_t i = 0; i < n; i++) {
    const tt_layer *l = &m->layers[list[i]];
    for (uint32_t k = 0; k < l->n_inputs; k++)
      adj[fill[l->inputs[k].layer]++] = list[i];
  }
  /* the search, without recursion; post-order fills out from the end */
  uint32_t left = n;
  for (uint32_t r = 0; r < n; r++) {
    if (seen[list[r]])
      continue;
    uint32_t depth = 0;
    stack[depth] = list[r];
    next[depth++] = start[list[r]];
    seen[list[r]] = true;
    while (depth > 0) {
      const int at = stack[depth - 1];
      if (next[depth - 1] < start[at + 1]) {
        const int c = adj[next[depth - 1]++];
        if (!seen[c]) {
          seen[c] = true;
          stack[depth] = c;
          next[depth++] = start[c];
        }
      } else {
        out[--left] = at;
        depth--;
      }
    }
  }
done:
  free (list);
  free (start);
  free (fill);
  free (adj);
  free (stack);
  free (next);
  free (seen);
  return out;
}

/* Calls fn for each float region of the file, in file order; moments only
 * when with_moments. tensor is -1 for a region the model does not hold (an
 * inference-only model keeps no moments; a weight that a --train choice
 * froze has its moments' place in a BIN, file, but none in the model):
 * count says how many floats it has, name what a training model calls it.
 * file: the moments of every weight the INI trains (a BIN's layout, the
 * same whatever trains); else those of the weights that train (a
 * bundle's regions). Returns the first non-OK status. */
typedef tt_status (*bin_region_fn) (tt_model * m, int tensor, size_t count,
    const char *name, tt_state_kind kind, void *ctx, tt_error * err);

/* bytes per value of a region: the weights at the weight type's width,
 * the moments float32 */
static size_t
bin_region_width (const tt_model * m, tt_state_kind kind)
{
  return kind == TT_STATE_WEIGHT ? tt_bin_weight_width (m) : sizeof (float);
}

static tt_status
bin_for_each (tt_model * m, bool file, bool with_moments, bool moments_only,
    bin_region_fn fn, void *ctx, tt_error * err)
{
  tt_status st = TT_OK;
  int *order = bin_layer_order (m);
  if (!order)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  for (uint32_t c = 0; c < m->n_layers && !moments_only; c++) {
    tt_layer *l = &m->layers[order[c]];
    for (uint32_t i = 0; i < l->n_weights; i++)
      if ((st = fn (m, l->weights[i].value, l->weights[i].count,
                  m->tensors[l->weights[i].value].name, TT_STATE_WEIGHT, ctx,
                  err)))
        goto out;
  }
  if (!with_moments)
    goto out;
  for (uint32_t c = 0; c < m->n_layers; c++) {
    tt_layer *l = &m->layers[order[c]];
    for (uint32_t i = 0; i < l->n_weights; i++) {
      tt_weight *w = &l->weights[i];
      if (!(file ? w->file_moments : w->trainable))
        continue;
      for (int k = 0; k < 2; k++) {
        char skipped[256];
        if (w->opt[k] < 0)
          snprintf (skipped, sizeof skipped, "%s:%s:%s", l->name, w->suffix,
              k ? "v" : "m");
        if ((st = fn (m, w->opt[k], w->count, w->opt[k] >= 0 ?
                    m->tensors[w->opt[k]].name : skipped,
                    k ? TT_STATE_ADAM_V : TT_STATE_ADAM_M, ctx, err)))
          goto out;
      }
    }
  }
out:
  free (order);
  return st;
}

bool
tt_bin_has_moments (const tt_model * m)
{
  return m->opt.type == TT_OPT_ADAM || m->opt.type == TT_OPT_ADAMW;
}

/* the moments a save writes: none when the model runs in place from a
 * bundle that had none, or keeps none (inference only) */
bool
tt_bin_saves_moments (const tt_model * m)
{
  return tt_bin_has_moments (m) && !m->moments_missing && !m->inference;
}

/* What a BIN save writes after the weights besides the counters: the tag
 * and the moments only for adam, as nntrainer, whose save() tests the
 * optimizer's type for exactly "adam" (neuralnet.cpp:637): an AdamW BIN
 * is weights and counters (tests/interop/nntrainer/FINDINGS.md section
 * 2; its moments live on in bundles only). A load takes both forms. */
static bool
bin_saves_tag (const tt_model * m)
{
  return m->opt.type == TT_OPT_ADAM && tt_bin_saves_moments (m);
}

/* The sizes do not depend on the order: no allocation, no failure. */
size_t
tt_bin_weight_bytes (const tt_model * m)
{
  size_t bytes = 0;
  for (uint32_t c = 0; c < m->n_layers; c++)
    for (uint32_t i = 0; i < m->layers[c].n_weights; i++)
      bytes += m->layers[c].weights[i].count * tt_bin_weight_width (m);
  return bytes;
}

static size_t
bin_moment_bytes (tt_model * m)
{
  size_t bytes = 0;
  if (tt_bin_has_moments (m))
    for (uint32_t c = 0; c < m->n_layers; c++)
      for (uint32_t i = 0; i < m->layers[c].n_weights; i++)
        if (m->layers[c].weights[i].file_moments)
          bytes += 2 * m->layers[c].weights[i].count * sizeof (float);
  return bytes;
}

typedef struct
{
  int *ids;
  uint32_t n;
} bin_id_list;

static tt_status
bin_collect (tt_model * m, int tensor, size_t count,
    const char *name, tt_state_kind kind, void *ctx, tt_error * err)
{
  (void) name;
  (void) m;
  (void) count;
  (void) kind;
  (void) err;
  bin_id_list *l = ctx;
  if (l->ids)
    l->ids[l->n] = tensor;
  l->n++;
  return TT_OK;
}

int *
tt_bin_regions (tt_model * m, bool moments, uint32_t * n)
{
  bin_id_list l = { NULL, 0 };
  *n = 0;
  if (bin_for_each (m, false, moments, false, bin_collect, &l, NULL))
    return NULL;
  l.ids = malloc ((l.n ? l.n : 1) * sizeof *l.ids);
  if (!l.ids)
    return NULL;
  l.n = 0;
  if (bin_for_each (m, false, moments, false, bin_collect, &l, NULL)) {
    free (l.ids);
    return NULL;
  }
  *n = l.n;
  return l.ids;
}

char **
tt_bin_region_names (const tt_model * m, bool moments, uint32_t * n)
{
  *n = 0;
  int *order = bin_layer_order (m);
  if (!order)
    return NULL;
  uint32_t count = 0;
  for (uint32_t c = 0; c < m->n_layers; c++)
    for (uint32_t i = 0; i < m->layers[c].n_weights; i++)
      count += 1 + (moments && m->layers[c].weights[i].trainable ? 2 : 0);
  const size_t len = sizeof ((tt_tensor *) 0)->name;
  char **names = malloc ((count ? count : 1) * (sizeof *names + len));
  if (!names) {
    free (order);
    return NULL;
  }
  char *text = (char *) (names + (count ? count : 1));
  uint32_t k = 0;
  for (int pass = 0; pass < (moments ? 2 : 1); pass++)
    for (uint32_t c = 0; c < m->n_layers; c++) {
      const tt_layer *l = &m->layers[order[c]];
      for (uint32_t i = 0; i < l->n_weights; i++) {
        if (pass && !l->weights[i].trainable)
          continue;
        names[k] = text + (size_t) k *len;
        snprintf (names[k++], len, "%s:%s%s", l->name, l->weights[i].suffix,
            pass ? ":m" : "");
        if (pass) {
          names[k] = text + (size_t) k *len;
          snprintf (names[k++], len, "%s:%s:v", l->name, l->weights[i].suffix);
        }
      }
    }
  free (order);
  *n = k;
  return names;
}

/* Every value a save writes (the weights and, when it saves them, the
 * moments, in the order of tt_bin_regions) is one a load accepts. Here,
 * beside the regions, so that the value checks (state_check.c) need not
 * know the BIN's order. */
tt_status
tt_state_check_saveable (tt_model * m, const char *path, tt_error * err)
{
  if (m->swap_failed)
    return tt_fail (err, TT_ERR_STATE, "%s: not saved: a read from the swap "
        "file failed during a step of %s, after part of its update", path,
        m->path);
  const bool moments = tt_bin_saves_moments (m);
  uint32_t n, nw;
  int *ids = tt_bin_regions (m, moments, &n);
  int *w = tt_bin_regions (m, false, &nw);
  free (w);
  if (!ids)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", path);
  tt_status st = TT_OK;
  for (uint32_t i = 0; i < n && !st; i++) {
    if (ids[i] < 0)
      continue;
    const tt_state_kind kind = i < nw ? TT_STATE_WEIGHT :
        (i - nw) % 2 ? TT_STATE_ADAM_V : TT_STATE_ADAM_M;
    const tt_tensor *t = &m->tensors[ids[i]];
    const size_t bad = tt_state_find_bad (kind, t->data, t->count);
    if (bad < t->count) {
      float v = t->data[bad];
      st = tt_fail (err, TT_ERR_NUMERIC, "%s: not saved: tensor %s holds %s "
          "(%g) at element %zu, which no loader accepts (training "
          "diverged?); the file there was left as it was", path, t->name,
          tt_state_why (kind, &t->data[bad]), (double) v, bad);
    }
  }
  free (ids);
  return st;
}

/* A BIN of 2-byte weights holds only weights its type can: a value that
 * would round to an infinity is refused (a bundle keeps fp32 weights and
 * takes any finite value). */
static tt_status
bin_check_width (tt_model * m, const char *path, tt_error * err)
{
  uint32_t n;
  int *ids = tt_bin_regions (m, false, &n);
  if (!ids)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", path);
  tt_status st = TT_OK;
  for (uint32_t i = 0; i < n && !st; i++) {
    if (ids[i] < 0)
      continue;
    const tt_tensor *t = &m->tensors[ids[i]];
    float largest;
    const size_t bad = tt_bin_find_unrepresentable (m->weight_type, t->data,
        t->count, &largest);
    if (bad < t->count)
      st = tt_fail (err, TT_ERR_NUMERIC, "%s: not saved: tensor %s holds %g "
          "at element %zu, beyond the range of %s (largest %g), the type of "
          "this model's BIN weights ([Model] model_tensor_type of %s); the "
          "file there was left as it was", path, t->name,
          (double) t->data[bad], bad, tt_bin_type_name (m->weight_type),
          (double) largest, m->path);
  }
  free (ids);
  return st;
}

/* Which parts a BIN of size bytes holds. An Adam model's file comes in
 * the sizes nntrainer writes: the weights and the counters, each part
 * optional, and between them the tag "adam" followed either by every
 * trainable weight's m and v (what a training run's save_path gets, and
 * what we write) or by nothing (what nntrainer's save() writes after
 * initialize() or train(), its moments not being allocated then; its load
 * reads the counters there). When the moments take exactly 8 bytes,
 * weights + 12 reads as tag and counters, nntrainer's usual file. */
/* Whether size is one of the sizes of the model's BIN with weights of
 * w bytes in all (any width) */
static bool
bin_size_fits (tt_model * m, size_t size, size_t w)
{
  const size_t mom = bin_moment_bytes (m);
  if (size == w || size == w + BIN_COUNTERS)
    return true;
  if (!tt_bin_has_moments (m))
    return false;
  return size == w + BIN_TAG_LEN || size == w + BIN_TAG_LEN + BIN_COUNTERS
      || size == w + BIN_TAG_LEN + mom
      || size == w + BIN_TAG_LEN + mom + BIN_COUNTERS;
}

/* A file that does not fit at the model's weight width but would at the
 * other one: a BIN of FP32 weights for an FP16 or BF16 model, or the
 * reverse */
static tt_status
bin_width_mismatch (tt_model * m, size_t size, const char *name, tt_error * err)
{
  const size_t width = tt_bin_weight_width (m);
  const size_t values = tt_bin_weight_bytes (m) / width;
  const size_t other = width == sizeof (float) ? 2 : sizeof (float);
  if (!bin_size_fits (m, size, values * other))
    return TT_OK;
  const char *type = tt_bin_type_name (m->weight_type);
  return tt_fail (err, TT_ERR_INVALID, "%s: is %zu bytes: %s weights "
      "([Model] model_tensor_type of %s) need %zu bytes (%zu weights of %zu "
      "bytes), and %zu bytes of weights is the %s size: this file has the "
      "weights of the model at %zu bytes each; set "
      "model_tensor_type to the file's type", name, size, type, m->path,
      values * width, values, width, values * other,
      other == 2 ? "FP16 (or BF16)" : "FP32", other);
}

static tt_status
bin_layout (tt_model * m, size_t size, const char *name, bool *tag,
    bool *moments, bool *counters, tt_error * err)
{
  const size_t w = tt_bin_weight_bytes (m);
  const size_t mom = bin_moment_bytes (m);
  const bool adam = tt_bin_has_moments (m);
  tt_status st;
  *tag = *moments = *counters = false;
  if (!bin_size_fits (m, size, w) &&
      (st = bin_width_mismatch (m, size, name, err)))
    return st;
  if (size == w) {
  } else if (size == w + BIN_COUNTERS) {
    *counters = true;
  } else if (adam && size == w + BIN_TAG_LEN) {
    *tag = true;
  } else if (adam && size == w + BIN_TAG_LEN + BIN_COUNTERS) {
    *tag = *counters = true;
  } else if (adam && size == w + BIN_TAG_LEN + mom) {
    *tag = *moments = true;
  } else if (adam && size == w + BIN_TAG_LEN + mom + BIN_COUNTERS) {
    *tag = *moments = *counters = true;
  } else if (adam) {
    return tt_fail (err, TT_ERR_INVALID,
        "%s: size %zu bytes does not fit the model %s: expected %zu "
        "(weights), %zu (weights + counters), %zu (weights + 'adam'), %zu "
        "(weights + 'adam' + counters, as nntrainer's save() writes), %zu "
        "(weights + 'adam' + moments) or %zu (weights + 'adam' + moments + "
        "counters)", name, size, m->path, w, w + BIN_COUNTERS,
        w + BIN_TAG_LEN, w + BIN_TAG_LEN + BIN_COUNTERS,
        w + BIN_TAG_LEN + mom, w + BIN_TAG_LEN + mom + BIN_COUNTERS);
  } else {
    return tt_fail (err, TT_ERR_INVALID,
        "%s: size %zu bytes does not fit the model %s: expected %zu "
        "(weights) or %zu (weights + counters)", name, size, m->path, w,
        w + BIN_COUNTERS);
  }
  return TT_OK;
}

tt_status
tt_bin_layout (tt_model * m, size_t size, const char *name, bool *moments,
    bool *counters, tt_error * err)
{
  bool tag;
  return bin_layout (m, size, name, &tag, moments, counters, err);
}

/* Weights loaded without moments start the optimizer afresh. */
static void
bin_zero_moments (tt_model * m)
{
  for (uint32_t c = 0; c < m->n_layers; c++)
    for (uint32_t i = 0; i < m->layers[c].n_weights; i++)
      for (int k = 0; k < 2; k++) {
        const int id = m->layers[c].weights[i].opt[k];
        if (id >= 0)
          memset (m->tensors[id].data, 0,
              m->tensors[id].count * sizeof (float));
      }
}

tt_status
tt_model_refuse_external (tt_model * m, const char *what, tt_error * err)
{
  return tt_fail (err, TT_ERR_STATE, "%s: cannot %s: the weights are used "
      "in place from a read-only bundle (evaluation only); load the bundle "
      "with TT_BUNDLE_READ or TT_BUNDLE_MMAP (tensor-trainer --mode read) "
      "to %s", m->path, what, what);
}

typedef struct
{
  FILE *fp;
  const char *path;
  bool store;                   /* false: check only */
  size_t offset;
} bin_reader;

static tt_status
bin_read_region (tt_model * m, int tensor, size_t count,
    const char *name, tt_state_kind kind, void *ctx, tt_error * err)
{
  bin_reader *r = ctx;
  const size_t width = bin_region_width (m, kind);
  /* a region the model does not hold is checked like the others, so both
   * kinds of model accept the same files, and skipped when storing */
  if (tensor < 0 && r->store) {
    if (fseek (r->fp, (long) (count * width), SEEK_CUR) != 0)
      return tt_fail (err, TT_ERR_IO, "%s: cannot seek: %s", r->path,
          strerror (errno));
    r->offset += count * width;
    return TT_OK;
  }
  tt_tensor *t = tensor >= 0 ? &m->tensors[tensor] : NULL;
  float chunk[4096];
  uint16_t half[4096];
  for (size_t done = 0; done < count;) {
    size_t n = count - done < 4096 ? count - done : 4096;
    float *dst = r->store ? t->data + done : chunk;
    if (fread (width == sizeof (float) ? (void *) dst : (void *) half,
            width, n, r->fp) != n)
      return tt_fail (err, TT_ERR_IO, "%s: read failed at byte %zu (%s)",
          r->path, r->offset, ferror (r->fp) ? strerror (errno) :
          "file shrank while reading");
    if (width != sizeof (float))
      tt_bin_widen (m->weight_type, half, dst, n);
    const size_t bad = r->store ? n : tt_state_find_bad (kind, dst, n);
    if (bad < n)
      return tt_fail (err, TT_ERR_PARSE,
          "%s: tensor %s holds %s (%g) at element %zu (byte %zu)", r->path,
          name, tt_state_why (kind, &dst[bad]), (double) dst[bad],
          done + bad, r->offset + bad * width);
    done += n;
    r->offset += n * width;
  }
  return TT_OK;
}

static tt_status
bin_read_all (tt_model * m, bin_reader * r, bool tag, bool moments,
    uint32_t * counters, tt_error * err)
{
  tt_status st;
  r->offset = 0;
  if (fseek (r->fp, 0, SEEK_SET) != 0)
    return tt_fail (err, TT_ERR_IO, "%s: cannot seek: %s", r->path,
        strerror (errno));
  if ((st = bin_for_each (m, true, false, false, bin_read_region, r, err)))
    return st;
  if (tag) {
    char bytes[BIN_TAG_LEN];
    if (fread (bytes, 1, BIN_TAG_LEN, r->fp) != BIN_TAG_LEN)
      return tt_fail (err, TT_ERR_IO, "%s: read failed at byte %zu", r->path,
          r->offset);
    if (memcmp (bytes, BIN_TAG, BIN_TAG_LEN) != 0)
      return tt_fail (err, TT_ERR_PARSE,
          "%s: expected the tag 'adam' at byte %zu after the weights", r->path,
          r->offset);
    r->offset += BIN_TAG_LEN;
  }
  if (moments
      && (st = bin_for_each (m, true, true, true, bin_read_region, r, err)))
    return st;
  if (counters && fread (counters, sizeof (uint32_t), 2, r->fp) != 2)
    return tt_fail (err, TT_ERR_IO, "%s: read failed at byte %zu", r->path,
        r->offset);
  return TT_OK;
}

tt_status
tt_model_load_bin (tt_model * m, const char *path, tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile the model before loading "
        "weights", path);
  if (m->weights_external)
    return tt_model_refuse_external (m, "load weights", err);
  const bool adam = tt_bin_has_moments (m);
  FILE *fp = fopen (path, "rb");
  if (!fp)
    return tt_fail (err, TT_ERR_IO, "%s: cannot open: %s", path,
        strerror (errno));
  struct stat sb;
  if (fstat (fileno (fp), &sb) != 0 || !S_ISREG (sb.st_mode)) {
    fclose (fp);
    return tt_fail (err, TT_ERR_IO, "%s: not a regular file", path);
  }
  const size_t size = (size_t) sb.st_size;
  bool tag, moments, counters;
  tt_status lst = bin_layout (m, size, path, &tag, &moments, &counters, err);
  if (lst) {
    fclose (fp);
    return lst;
  }

  /* check everything first, then store: a bad file leaves the model as it
   * was */
  bin_reader r = { fp, path, false, 0 };
  uint32_t cnt[2] = { 0, 0 };
  tt_status st = bin_read_all (m, &r, tag, moments, counters ? cnt : NULL,
      err);
  if (st == TT_OK && counters)
    st = tt_state_check_counters (cnt[0], cnt[1], path, err);
  if (st == TT_OK) {
    r.store = true;
    st = bin_read_all (m, &r, tag, moments, counters ? cnt : NULL, err);
  }
  fclose (fp);
  if (st)
    return st;
  if (adam && !moments)
    bin_zero_moments (m);
  if (counters) {
    m->epoch = cnt[0];
    m->iteration = cnt[1];
  }
  return TT_OK;
}

/* ---- a BIN in memory ------------------------------------------------- */

typedef struct
{
  const unsigned char *data;
  const char *name;
  bool store;
  size_t offset;
} bin_memory;

static tt_status
bin_memory_region (tt_model * m, int tensor, size_t count,
    const char *name, tt_state_kind kind, void *ctx, tt_error * err)
{
  bin_memory *r = ctx;
  tt_tensor *t = tensor >= 0 ? &m->tensors[tensor] : NULL;
  const size_t width = bin_region_width (m, kind);
  const size_t bytes = count * width;
  if (width != sizeof (float)) {
    /* 2-byte weights: widened, into the tensor or (checking) a chunk */
    float chunk[4096];
    const unsigned char *p = r->data + r->offset;
    for (size_t done = 0; done < count;) {
      const size_t n = count - done < 4096 ? count - done : 4096;
      float *dst = r->store && t ? t->data + done : chunk;
      tt_bin_widen (m->weight_type, p + done * width, dst, n);
      const size_t bad = r->store ? n : tt_state_find_bad (kind, dst, n);
      if (bad < n)
        return tt_fail (err, TT_ERR_PARSE,
            "%s: tensor %s holds %s (%g) at element %zu (byte %zu)",
            r->name, name, tt_state_why (kind, &dst[bad]),
            (double) dst[bad], done + bad, r->offset + (done + bad) * width);
      done += n;
    }
  } else if (r->store) {
    if (t)
      memcpy (t->data, r->data + r->offset, bytes);
  } else {
    /* any alignment: one float at a time through memcpy; a region the
     * model does not hold is checked too (both kinds of model accept the
     * same files) */
    const unsigned char *p = r->data + r->offset;
    const size_t bad = tt_state_find_bad (kind, p, count);
    if (bad < count) {
      float v;
      memcpy (&v, p + bad * sizeof v, sizeof v);
      return tt_fail (err, TT_ERR_PARSE,
          "%s: tensor %s holds %s (%g) at element %zu (byte %zu)", r->name,
          name, tt_state_why (kind, p + bad * sizeof v), (double) v, bad,
          r->offset + bad * sizeof (float));
    }
  }
  r->offset += bytes;
  return TT_OK;
}

static tt_status
bin_memory_all (tt_model * m, bin_memory * r, bool tag, bool moments,
    tt_error * err)
{
  tt_status st;
  r->offset = 0;
  if ((st = bin_for_each (m, true, false, false, bin_memory_region, r, err)))
    return st;
  if (tag) {
    if (memcmp (r->data + r->offset, BIN_TAG, BIN_TAG_LEN) != 0)
      return tt_fail (err, TT_ERR_PARSE,
          "%s: expected the tag 'adam' at byte %zu after the weights",
          r->name, r->offset);
    r->offset += BIN_TAG_LEN;
  }
  if (moments
      && (st = bin_for_each (m, true, true, true, bin_memory_region, r, err)))
    return st;
  return TT_OK;
}

tt_status
tt_model_load_bin_memory (tt_model * m, const void *data, size_t len,
    const char *name, tt_error * err)
{
  if (!name)
    name = "<memory>";
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile the model before loading "
        "weights", name);
  if (m->weights_external)
    return tt_model_refuse_external (m, "load weights", err);
  if (!data && len)
    return tt_fail (err, TT_ERR_INVALID, "%s: no data", name);
  bool tag, moments, counters;
  tt_status st = bin_layout (m, len, name, &tag, &moments, &counters, err);
  if (st)
    return st;
  /* check everything first, then store: bad data leaves the model as it
   * was */
  bin_memory r = { data, name, false, 0 };
  if ((st = bin_memory_all (m, &r, tag, moments, err)))
    return st;
  uint32_t cnt[2] = { 0, 0 };
  if (counters) {
    memcpy (cnt, r.data + r.offset, sizeof cnt);
    if ((st = tt_state_check_counters (cnt[0], cnt[1], name, err)))
      return st;
  }
  r.store = true;
  if ((st = bin_memory_all (m, &r, tag, moments, err)))
    return st;
  if (tt_bin_has_moments (m) && !moments)
    bin_zero_moments (m);
  if (counters) {
    m->epoch = cnt[0];
    m->iteration = cnt[1];
  }
  return TT_OK;
}

/* ---- saving ----------------------------------------------------------- */

static tt_status
bin_write_region (tt_model * m, int tensor, size_t count,
    const char *name, tt_state_kind kind, void *ctx, tt_error * err)
{
  (void) name;
  if (tensor < 0) {
    /* the moments of a weight a --train choice froze: it never moved */
    static const float zeros[1024];
    const size_t bytes = count * bin_region_width (m, kind);
    tt_status st = TT_OK;
    for (size_t done = 0; !st && done < bytes; done += sizeof zeros)
      st = tt_atomic_file_write (ctx, zeros, bytes - done < sizeof zeros ?
          bytes - done : sizeof zeros, err);
    return st;
  }
  const tt_tensor *t = &m->tensors[tensor];
  if (kind != TT_STATE_WEIGHT || tt_bin_weight_width (m) == sizeof (float))
    return tt_atomic_file_write (ctx, t->data, t->count * sizeof (float), err);
  uint16_t half[1024];
  tt_status st = TT_OK;
  for (size_t done = 0; !st && done < count; done += 1024) {
    const size_t k = count - done < 1024 ? count - done : 1024;
    tt_bin_narrow (m->weight_type, t->data + done, half, k);
    st = tt_atomic_file_write (ctx, half, k * sizeof *half, err);
  }
  return st;
}

tt_status
tt_model_save_bin (tt_model * m, const char *path, tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: nothing to save: the model is "
        "not compiled", path);
  tt_status st = tt_state_check_saveable (m, path, err);
  if (st || (st = bin_check_width (m, path, err)))
    return st;
  tt_atomic_file f;
  st = tt_atomic_file_open (&f, path, err);
  if (st)
    return st;
  const uint32_t counters[2] = { m->epoch, m->iteration };
  if ((st = bin_for_each (m, true, false, false, bin_write_region, &f, err)) ||
      (bin_saves_tag (m) &&
          ((st = tt_atomic_file_write (&f, BIN_TAG, BIN_TAG_LEN, err)) ||
              (st = bin_for_each (m, true, true, true, bin_write_region, &f,
                      err)))) ||
      (st = tt_atomic_file_write (&f, counters, sizeof counters, err))) {
    tt_atomic_file_abort (&f);
    return st;
  }
  return tt_atomic_file_commit (&f, err);
}
