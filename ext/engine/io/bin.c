/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nntrainer's BIN weights: no header; every layer's weights in INI order,
 * raw little-endian float32; for Adam the 4 bytes "adam" then each
 * trainable weight's first and second moments; then the epoch and
 * iteration counters as uint32. A file is accepted only at one of the
 * exact sizes such a file can have for this model, and only if every value
 * is one the model can hold (state_check.c): the model is not touched until
 * the whole file checked out. A save refuses the same values.
 */
#include "tt_internal.h"
#include "atomic_file.h"

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

/* Calls fn for each float region of the file, in file order; moments only
 * when with_moments. tensor is -1 for a region the model does not hold (an
 * inference-only model keeps no moments): count says how many floats it
 * has, name what a training model calls it. Returns the first non-OK
 * status. */
typedef tt_status (*bin_region_fn) (tt_model * m, int tensor, size_t count,
    const char *name, tt_state_kind kind, void *ctx, tt_error * err);

static tt_status
bin_for_each (tt_model * m, bool with_moments, bool moments_only,
    bin_region_fn fn, void *ctx, tt_error * err)
{
  tt_status st;
  for (uint32_t c = 0; c < m->n_layers; c++) {
    tt_layer *l = &m->layers[m->canonical[c]];
    for (uint32_t i = 0; i < l->n_weights; i++)
      if (!moments_only && (st = fn (m, l->weights[i].value,
                  l->weights[i].count, m->tensors[l->weights[i].value].name,
                  TT_STATE_WEIGHT, ctx, err)))
        return st;
  }
  if (!with_moments)
    return TT_OK;
  for (uint32_t c = 0; c < m->n_layers; c++) {
    tt_layer *l = &m->layers[m->canonical[c]];
    for (uint32_t i = 0; i < l->n_weights; i++) {
      tt_weight *w = &l->weights[i];
      if (!w->trainable)
        continue;
      for (int k = 0; k < 2; k++) {
        char skipped[256];
        if (w->opt[k] < 0)
          snprintf (skipped, sizeof skipped, "%s:%s:%s", l->name, w->suffix,
              k ? "v" : "m");
        if ((st = fn (m, w->opt[k], w->count, w->opt[k] >= 0 ?
                    m->tensors[w->opt[k]].name : skipped,
                    k ? TT_STATE_ADAM_V : TT_STATE_ADAM_M, ctx, err)))
          return st;
      }
    }
  }
  return TT_OK;
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

static tt_status
bin_sum_bytes (tt_model * m, int tensor, size_t count,
    const char *name, tt_state_kind kind, void *ctx, tt_error * err)
{
  (void) name;
  (void) m;
  (void) tensor;
  (void) kind;
  (void) err;
  *(size_t *) ctx += count * sizeof (float);
  return TT_OK;
}

size_t
tt_bin_weight_bytes (const tt_model * m)
{
  size_t bytes = 0;
  bin_for_each ((tt_model *) m, false, false, bin_sum_bytes, &bytes, NULL);
  return bytes;
}

static size_t
bin_moment_bytes (tt_model * m)
{
  size_t bytes = 0;
  if (tt_bin_has_moments (m))
    bin_for_each (m, true, true, bin_sum_bytes, &bytes, NULL);
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
  bin_for_each (m, moments, false, bin_collect, &l, NULL);
  *n = l.n;
  l.ids = malloc ((l.n ? l.n : 1) * sizeof *l.ids);
  if (!l.ids)
    return NULL;
  l.n = 0;
  bin_for_each (m, moments, false, bin_collect, &l, NULL);
  return l.ids;
}

/* Every value a save writes (the weights and, when it saves them, the
 * moments, in the order of tt_bin_regions) is one a load accepts. Here,
 * beside the regions, so that the value checks (state_check.c) need not
 * know the BIN's order. */
tt_status
tt_state_check_saveable (tt_model * m, const char *path, tt_error * err)
{
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

tt_status
tt_bin_layout (tt_model * m, size_t size, const char *name, bool *moments,
    bool *counters, tt_error * err)
{
  const size_t w = tt_bin_weight_bytes (m);
  const size_t mom = bin_moment_bytes (m);
  const bool adam = tt_bin_has_moments (m);
  *moments = *counters = false;
  if (size == w) {
  } else if (size == w + BIN_COUNTERS) {
    *counters = true;
  } else if (adam && size == w + BIN_TAG_LEN + mom) {
    *moments = true;
  } else if (adam && size == w + BIN_TAG_LEN + mom + BIN_COUNTERS) {
    *moments = *counters = true;
  } else if (adam) {
    return tt_fail (err, TT_ERR_INVALID,
        "%s: size %zu bytes does not fit the model %s: expected %zu "
        "(weights), %zu (weights + counters), %zu (weights + adam "
        "moments) or %zu (weights + adam moments + counters)", name, size,
        m->path, w, w + BIN_COUNTERS, w + BIN_TAG_LEN + mom,
        w + BIN_TAG_LEN + mom + BIN_COUNTERS);
  } else {
    return tt_fail (err, TT_ERR_INVALID,
        "%s: size %zu bytes does not fit the model %s: expected %zu "
        "(weights) or %zu (weights + counters)", name, size, m->path, w,
        w + BIN_COUNTERS);
  }
  return TT_OK;
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
  /* a region the model does not hold is checked like the others, so both
   * kinds of model accept the same files, and skipped when storing */
  if (tensor < 0 && r->store) {
    if (fseek (r->fp, (long) (count * sizeof (float)), SEEK_CUR) != 0)
      return tt_fail (err, TT_ERR_IO, "%s: cannot seek: %s", r->path,
          strerror (errno));
    r->offset += count * sizeof (float);
    return TT_OK;
  }
  tt_tensor *t = tensor >= 0 ? &m->tensors[tensor] : NULL;
  float chunk[4096];
  for (size_t done = 0; done < count;) {
    size_t n = count - done < 4096 ? count - done : 4096;
    float *dst = r->store ? t->data + done : chunk;
    if (fread (dst, sizeof (float), n, r->fp) != n)
      return tt_fail (err, TT_ERR_IO, "%s: read failed at byte %zu (%s)",
          r->path, r->offset, ferror (r->fp) ? strerror (errno) :
          "file shrank while reading");
    const size_t bad = r->store ? n : tt_state_find_bad (kind, dst, n);
    if (bad < n)
      return tt_fail (err, TT_ERR_PARSE,
          "%s: tensor %s holds %s (%g) at element %zu (byte %zu)", r->path,
          name, tt_state_why (kind, &dst[bad]), (double) dst[bad],
          done + bad, r->offset + bad * sizeof (float));
    done += n;
    r->offset += n * sizeof (float);
  }
  return TT_OK;
}

static tt_status
bin_zero_region (tt_model * m, int tensor, size_t count,
    const char *name, tt_state_kind kind, void *ctx, tt_error * err)
{
  (void) name;
  (void) count;
  (void) kind;
  (void) ctx;
  (void) err;
  if (tensor < 0)
    return TT_OK;
  memset (m->tensors[tensor].data, 0,
      m->tensors[tensor].count * sizeof (float));
  return TT_OK;
}

static tt_status
bin_read_all (tt_model * m, bin_reader * r, bool moments, uint32_t * counters,
    tt_error * err)
{
  tt_status st;
  r->offset = 0;
  if (fseek (r->fp, 0, SEEK_SET) != 0)
    return tt_fail (err, TT_ERR_IO, "%s: cannot seek: %s", r->path,
        strerror (errno));
  if ((st = bin_for_each (m, false, false, bin_read_region, r, err)))
    return st;
  if (moments) {
    char tag[BIN_TAG_LEN];
    if (fread (tag, 1, BIN_TAG_LEN, r->fp) != BIN_TAG_LEN)
      return tt_fail (err, TT_ERR_IO, "%s: read failed at byte %zu", r->path,
          r->offset);
    if (memcmp (tag, BIN_TAG, BIN_TAG_LEN) != 0)
      return tt_fail (err, TT_ERR_PARSE,
          "%s: expected the tag 'adam' at byte %zu after the weights", r->path,
          r->offset);
    r->offset += BIN_TAG_LEN;
    if ((st = bin_for_each (m, true, true, bin_read_region, r, err)))
      return st;
  }
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
  bool moments, counters;
  tt_status lst = tt_bin_layout (m, size, path, &moments, &counters, err);
  if (lst) {
    fclose (fp);
    return lst;
  }

  /* check everything first, then store: a bad file leaves the model as it
   * was */
  bin_reader r = { fp, path, false, 0 };
  uint32_t cnt[2] = { 0, 0 };
  tt_status st = bin_read_all (m, &r, moments, counters ? cnt : NULL, err);
  if (st == TT_OK && counters)
    st = tt_state_check_counters (cnt[0], cnt[1], path, err);
  if (st == TT_OK) {
    r.store = true;
    st = bin_read_all (m, &r, moments, counters ? cnt : NULL, err);
  }
  fclose (fp);
  if (st)
    return st;
  /* weights without moments start the optimizer afresh */
  if (adam && !moments)
    bin_for_each (m, true, true, bin_zero_region, NULL, NULL);
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
  const size_t bytes = count * sizeof (float);
  if (r->store) {
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
bin_memory_all (tt_model * m, bin_memory * r, bool moments, tt_error * err)
{
  tt_status st;
  r->offset = 0;
  if ((st = bin_for_each (m, false, false, bin_memory_region, r, err)))
    return st;
  if (moments) {
    if (memcmp (r->data + r->offset, BIN_TAG, BIN_TAG_LEN) != 0)
      return tt_fail (err, TT_ERR_PARSE,
          "%s: expected the tag 'adam' at byte %zu after the weights",
          r->name, r->offset);
    r->offset += BIN_TAG_LEN;
    if ((st = bin_for_each (m, true, true, bin_memory_region, r, err)))
      return st;
  }
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
  bool moments, counters;
  tt_status st = tt_bin_layout (m, len, name, &moments, &counters, err);
  if (st)
    return st;
  /* check everything first, then store: bad data leaves the model as it
   * was */
  bin_memory r = { data, name, false, 0 };
  if ((st = bin_memory_all (m, &r, moments, err)))
    return st;
  uint32_t cnt[2] = { 0, 0 };
  if (counters) {
    memcpy (cnt, r.data + r.offset, sizeof cnt);
    if ((st = tt_state_check_counters (cnt[0], cnt[1], name, err)))
      return st;
  }
  r.store = true;
  bin_memory_all (m, &r, moments, NULL);
  if (tt_bin_has_moments (m) && !moments)
    bin_for_each (m, true, true, bin_zero_region, NULL, NULL);
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
  (void) count;
  (void) kind;
  const tt_tensor *t = &m->tensors[tensor];
  return tt_atomic_file_write (ctx, t->data, t->count * sizeof (float), err);
}

tt_status
tt_model_save_bin (tt_model * m, const char *path, tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: nothing to save: the model is "
        "not compiled", path);
  tt_status st = tt_state_check_saveable (m, path, err);
  if (st)
    return st;
  tt_atomic_file f;
  st = tt_atomic_file_open (&f, path, err);
  if (st)
    return st;
  const uint32_t counters[2] = { m->epoch, m->iteration };
  if ((st = bin_for_each (m, false, false, bin_write_region, &f, err)) ||
      (tt_bin_saves_moments (m) &&
          ((st = tt_atomic_file_write (&f, BIN_TAG, BIN_TAG_LEN, err)) ||
              (st = bin_for_each (m, true, true, bin_write_region, &f,
                      err)))) ||
      (st = tt_atomic_file_write (&f, counters, sizeof counters, err))) {
    tt_atomic_file_abort (&f);
    return st;
  }
  return tt_atomic_file_commit (&f, err);
}
