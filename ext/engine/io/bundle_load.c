/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Loading a bundle into a model: the model built from the bundle's INI,
 * the bundle's tensors matched to the model's by name, the weights
 * streamed into the pool (or used in place in a mapping or blob) and
 * checked (checksums, zero padding, values a model can hold), the
 * counters; or only the weights into a compiled model.
 */
#include "bundle_stream.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- weights used in place: checked before use ------------------------- */

static tt_status
bundle_verify_weights (bundle * b, tt_error * err)
{
  uint32_t crc;
  tt_status st = tt_bundle_weights_crc (b, &crc, err);
  if (st)
    return st;
  b->weights->crc_computed = crc;
  b->weights->crc_known = true;
  b->weights->crc_ok = crc == b->weights->crc;
  if (!b->weights->crc_ok)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: checksum "
        "mismatch (stored %08x, computed %08x): the bundle is damaged",
        b->name, b->weights->crc, crc);
  return TT_OK;
}

/* The zero padding between the tensors of an uncompressed weight section
 * in memory, which the copy loaders check as they stream it (bundle_fill):
 * in place, so that every loader accepts the same bundles. */
static tt_status
bundle_check_padding (bundle * b, tt_error * err)
{
  const unsigned char *base = b->mem + b->weights->offset;
  uint64_t end = 0;
  for (uint32_t i = 0; i < b->n_tensors; i++) {
    const b_tensor *t = &b->tensors[i];
    for (uint64_t k = end; k < t->offset; k++)
      if (base[k])
        return tt_fail (err, TT_ERR_PARSE, "%s: section weights: the "
            "padding before tensor %.*s is not zero", b->name,
            (int) t->name_len, t->name);
    end = t->offset + t->bytes;
  }
  return TT_OK;
}

/* ---- bundle against model ------------------------------------------------ */

/* The name of the model's BIN region r (ids from tt_bin_regions, nw of
 * them weights): its tensor's, or for a moment an inference-only model
 * does not keep, its weight's name with ":m" or ":v" (as a training model
 * names it). */
static void
bundle_region_name (const tt_model * m, const int *ids, uint32_t nw,
    const int *trainable, uint32_t r, char *out, size_t size)
{
  if (ids[r] >= 0) {
    snprintf (out, size, "%s", m->tensors[ids[r]].name);
    return;
  }
  const uint32_t j = r - nw;
  snprintf (out, size, "%s:%s", m->tensors[trainable[j / 2]].name,
      j % 2 ? "v" : "m");
}

typedef struct
{
  const char *name;
  uint32_t region;
} bundle_named;

static int
bundle_by_name (const void *a, const void *b)
{
  return strcmp (((const bundle_named *) a)->name,
      ((const bundle_named *) b)->name);
}

/* The model's BIN regions, which the bundle's index must list exactly:
 * ids_out[i] is the model tensor of the bundle's tensor i (-1 for a moment
 * an inference-only model skips). Matched by name, so that a bundle whose
 * tensors are in another order loads right: the bundles of engines before
 * nntrainer's BIN order (issue 16) list them in INI order. */
static tt_status
bundle_match (bundle * b, tt_model * m, int **ids_out, tt_error * err)
{
  const bool moments = (b->wflags & B_WF_MOMENTS) != 0;
  *ids_out = NULL;
  if (moments && !tt_bin_has_moments (m))
    return tt_fail (err, TT_ERR_INVALID, "%s: the bundle holds adam moments "
        "but the model's optimizer keeps none", b->name);
  uint32_t n, nw;
  int *ids = tt_bin_regions (m, moments, &n);
  int *wids = tt_bin_regions (m, false, &nw);
  int *trainable = malloc ((nw ? nw : 1) * sizeof *trainable);
  int *out = malloc ((n ? n : 1) * sizeof *out);
  bundle_named *named = calloc (n ? n : 1, sizeof *named);
  const size_t stride = B_MAX_NAME + 4;
  char *names = malloc ((n ? n : 1) * stride);
  bool *used = calloc (n ? n : 1, sizeof *used);
  tt_status st = TT_OK;
  if (!ids || !wids || !trainable || !out || !named || !names || !used) {
    st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
    goto done;
  }
  if (n != b->n_tensors) {
    st = tt_fail (err, TT_ERR_INVALID, "%s: the bundle holds %u tensors, "
        "the model %s %u", b->name, b->n_tensors, m->path, n);
    goto done;
  }
  /* the trainable weights in BIN order, whose moments follow */
  uint32_t nt = 0;
  for (uint32_t i = 0; i < nw; i++)
    for (uint32_t c = 0; c < m->n_layers; c++)
      for (uint32_t k = 0; k < m->layers[c].n_weights; k++)
        if (m->layers[c].weights[k].value == wids[i] &&
            m->layers[c].weights[k].trainable)
          trainable[nt++] = wids[i];
  for (uint32_t r = 0; r < n; r++) {
    named[r].name = names + r * stride;
    named[r].region = r;
    bundle_region_name (m, ids, nw, trainable, r, (char *) named[r].name,
        stride);
  }
  qsort (named, n, sizeof *named, bundle_by_name);
  for (uint32_t i = 0; i < n && !st; i++) {
    const b_tensor *t = &b->tensors[i];
    char key[B_MAX_NAME + 1];
    snprintf (key, sizeof key, "%.*s", (int) t->name_len, t->name);
    const bundle_named probe = { key, 0 };
    const bundle_named *hit = bsearch (&probe, named, n, sizeof *named,
        bundle_by_name);
    if (!hit) {
      char want[B_MAX_NAME + 4];
      bundle_region_name (m, ids, nw, trainable, i, want, sizeof want);
      st = tt_fail (err, TT_ERR_INVALID, "%s: tensor %u is %s (%" PRIu64
          " bytes) in the bundle but the model %s has no tensor of that "
          "name (its tensor %u is %s)", b->name, i, key, t->bytes, m->path,
          i, want);
      break;
    }
    const uint32_t r = hit->region;
    const uint32_t kind = r < nw ? 0 : 1 + (r - nw) % 2;
    const uint64_t bytes = ids[r] >= 0 ?
        (uint64_t) m->tensors[ids[r]].count * sizeof (float) :
        (uint64_t) m->tensors[trainable[(r - nw) / 2]].count * sizeof (float);
    if (used[r])
      st = tt_fail (err, TT_ERR_INVALID, "%s: tensor %s is listed twice in "
          "the bundle", b->name, key);
    else if (t->bytes != bytes || t->kind != kind)
      st = tt_fail (err, TT_ERR_INVALID, "%s: tensor %u is %s (%" PRIu64
          " bytes, kind %u) in the bundle but %s (%" PRIu64 " bytes, kind "
          "%u) in the model", b->name, i, key, t->bytes, t->kind, key, bytes,
          kind);
    used[r] = true;
    out[i] = ids[r];
  }
done:
  free (ids);
  free (wids);
  free (trainable);
  free (named);
  free (names);
  free (used);
  if (st) {
    free (out);
    return st;
  }
  *ids_out = out;
  return TT_OK;
}

/* value (the element at index of data) cannot be held: the message
 * names the bundle, the tensor and the element (at) */
static tt_status
bundle_state_fail (bundle * b, const b_tensor * t, const void *data,
    size_t index, size_t at, tt_error * err)
{
  const unsigned char *p = (const unsigned char *) data + index * 4;
  float v;
  memcpy (&v, p, 4);
  return tt_fail (err, TT_ERR_PARSE, "%s: tensor %.*s holds %s (%g) at "
      "element %zu", b->name, (int) t->name_len, t->name,
      tt_state_why (t->kind, p), (double) v, at);
}

/* Streams the weight section: with store, every tensor straight into its
 * place in the pool; without, into a scratch buffer to check it. */
static tt_status
bundle_fill (bundle * b, tt_model * m, const int *ids, bool store,
    bool crc_on, tt_error * err)
{
  w_stream w;
  tt_status st = tt_bundle_stream_open (&w, b, crc_on, err);
  if (st)
    return st;
  unsigned char *scratch = malloc (B_CHUNK);
  if (!scratch) {
    tt_bundle_stream_close (&w);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
  }
  int bad_tensor = -1;
  size_t bad_at = 0;
  unsigned char bad_value[4] = { 0 };
  for (uint32_t i = 0; i < b->n_tensors && !st; i++) {
    const b_tensor *t = &b->tensors[i];
    uint64_t pad = t->offset - w.raw_pos;
    if ((st = tt_bundle_stream_read (&w, scratch, pad, err)))
      break;
    for (uint64_t k = 0; k < pad; k++)
      if (scratch[k]) {
        st = tt_fail (err, TT_ERR_PARSE, "%s: section weights: the padding "
            "before tensor %.*s is not zero", b->name, (int) t->name_len,
            t->name);
        break;
      }
    if (st)
      break;
    if (store && ids[i] >= 0) {
      st = tt_bundle_stream_read (&w, m->tensors[ids[i]].data, t->bytes, err);
      continue;
    }
    for (uint64_t done = 0; done < t->bytes && !st;) {
      uint64_t take = t->bytes - done > B_CHUNK ? B_CHUNK : t->bytes - done;
      if ((st = tt_bundle_stream_read (&w, scratch, take, err)))
        break;
      /* moments an inference-only model skips are checked too: both kinds
       * of model accept the same bundles */
      const size_t at = bad_tensor < 0 ? tt_state_find_bad (t->kind,
          scratch, (size_t) take / 4) : (size_t) take / 4;
      if (at < take / 4) {
        bad_tensor = (int) i;
        bad_at = (size_t) (done / 4) + at;
        memcpy (bad_value, scratch + at * 4, 4);
      }
      done += take;
    }
  }
  if (!st)
    st = tt_bundle_stream_finish (&w, err);
  /* a damaged section reports as damaged, whichever check saw it first */
  if (st)
    st = tt_bundle_stream_fail (&w, st, err);
  tt_bundle_stream_close (&w);
  free (scratch);
  if (!st && bad_tensor >= 0)
    st = bundle_state_fail (b, &b->tensors[bad_tensor], bad_value, 0, bad_at,
        err);
  return st;
}

static tt_status
bundle_check_finite (bundle * b, tt_model * m, const int *ids, tt_error * err)
{
  for (uint32_t i = 0; i < b->n_tensors; i++) {
    const b_tensor *bt = &b->tensors[i];
    const unsigned char *data;
    size_t n;
    if (ids[i] < 0) {
      /* moments an inference-only model skips: copied loaders checked
       * them while streaming; used in place, they lie in the blob */
      data = b->mem && !(b->weights->flags & TT_BUNDLE_SECTION_ZLIB) ?
          b->mem + b->weights->offset + bt->offset : NULL;
      n = (size_t) (bt->bytes / 4);
    } else {
      data = (const unsigned char *) m->tensors[ids[i]].data;
      n = m->tensors[ids[i]].count;
    }
    if (!data)
      continue;
    const size_t bad = tt_state_find_bad (bt->kind, data, n);
    if (bad < n)
      return bundle_state_fail (b, bt, data, bad, bad, err);
  }
  return TT_OK;
}

/* Points every listed tensor (and its views) into the mapped section. */
static tt_status
bundle_bind_in_place (bundle * b, tt_model * m, const int *ids, tt_error * err)
{
  const unsigned char *base = b->mem + b->weights->offset;
  const uint64_t need = b->alignment < 64 ? b->alignment : 64;
  if ((uintptr_t) b->mem % need)
    return tt_fail (err, TT_ERR_INVALID, "%s: the blob at %p is not aligned "
        "to %" PRIu64 " bytes, which using its weights in place needs "
        "(export it with --align %" PRIu64 ", or load it with a copy mode)",
        b->name, (const void *) b->mem, need, need);
  int *slot = malloc ((m->n_tensors ? m->n_tensors : 1) * sizeof *slot);
  if (!slot)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
  for (uint32_t k = 0; k < m->n_tensors; k++)
    slot[k] = -1;
  for (uint32_t i = 0; i < b->n_tensors; i++)
    if (ids[i] >= 0)
      slot[ids[i]] = (int) i;
  for (uint32_t k = 0; k < m->n_tensors; k++) {
    int r = (int) k;
    while (m->tensors[r].alias_of >= 0)
      r = m->tensors[r].alias_of;
    if (slot[r] >= 0)
      m->tensors[k].data = (float *) (uintptr_t) (base +
          b->tensors[slot[r]].offset);
  }
  free (slot);
  return TT_OK;
}

static tt_status
bundle_check_counters (bundle * b, tt_error * err)
{
  if (!(b->wflags & B_WF_COUNTERS))
    return TT_OK;
  return tt_state_check_counters (b->epoch, b->iteration, b->name, err);
}

static tt_model *
bundle_model (bundle * b, const tt_bundle_load_options * o, tt_error * err)
{
  static const tt_bundle_load_options defaults = { 0 };
  if (!o)
    o = &defaults;
  tt_status st = tt_bundle_read_meta (b, true, err);
  if (st || bundle_check_counters (b, err))
    return NULL;
  const bool in_place = o->mode == TT_BUNDLE_IN_PLACE;
  if (o->mode != TT_BUNDLE_READ && o->mode != TT_BUNDLE_MMAP && !in_place) {
    tt_fail (err, TT_ERR_INVALID, "%s: unknown load mode %d", b->name,
        (int) o->mode);
    return NULL;
  }
  if (in_place && (b->weights->flags & TT_BUNDLE_SECTION_ZLIB)) {
    tt_fail (err, TT_ERR_INVALID, "%s: the weight section is "
        "zlib-compressed, so it cannot be used in place; load it with "
        "TT_BUNDLE_READ or TT_BUNDLE_MMAP (--mode read or mmap)", b->name);
    return NULL;
  }
  /* used in place, the weights are checked before anything else; copied,
   * their checksum is computed as they stream into the pool */
  if (in_place && !o->trust && (bundle_verify_weights (b, err) ||
          bundle_check_padding (b, err)))
    return NULL;
  tt_model *m = tt_model_load_ini_text (b->ini_text, b->ini->length, b->name,
      err);
  if (!m)
    return NULL;
  int *ids = NULL;
  const uint32_t batch = o->batch_size ? o->batch_size : b->batch_size;
  if (batch && (st = tt_model_set_batch_size (m, batch, err)))
    goto fail;
  if (o->has_seed)
    tt_model_set_seed (m, o->seed);
  if ((st = tt_model_set_plan_mode (m, o->plan_mode, err)) ||
      (st = tt_model_set_inference (m, o->inference, err)))
    goto fail;
  m->defer_init = true;
  if (in_place) {
    m->weights_external = true;
    m->moments_missing = !(b->wflags & B_WF_MOMENTS);
  }
  if ((st = tt_model_compile (m, err)) || (st = bundle_match (b, m, &ids, err)))
    goto fail;
  if (in_place) {
    if ((st = bundle_bind_in_place (b, m, ids, err)))
      goto fail;
  } else if ((st = bundle_fill (b, m, ids, true, !o->trust, err))) {
    goto fail;
  }
  if (!o->trust && (st = bundle_check_finite (b, m, ids, err)))
    goto fail;
  if (b->wflags & B_WF_COUNTERS) {
    m->epoch = b->epoch;
    m->iteration = b->iteration;
  }
  if (in_place && b->map) {
    m->map = b->map;
    m->map_len = b->map_len;
    b->map = NULL;
  }
  free (ids);
  return m;
fail:
  free (ids);
  tt_model_free (m);
  return NULL;
}

tt_model *
tt_bundle_load (const char *path, const tt_bundle_load_options * o,
    tt_error * err)
{
  bundle b;
  const bool map = o && (o->mode == TT_BUNDLE_MMAP ||
      o->mode == TT_BUNDLE_IN_PLACE);
  tt_model *m = NULL;
  if (tt_bundle_open_file (&b, path, map, err) == TT_OK) {
    if (b.map)
      madvise (b.map, b.map_len, o->mode == TT_BUNDLE_MMAP ?
          MADV_SEQUENTIAL : MADV_NORMAL);
    else if (!map)
      posix_fadvise (b.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    else
      tt_bundle_parse_header (&b, err); /* too short to map: say so */
    if (!map || b.map)
      m = bundle_model (&b, o, err);
  }
  tt_bundle_close (&b);
  return m;
}

tt_model *
tt_bundle_load_memory (const void *data, size_t len, const char *name,
    const tt_bundle_load_options * o, tt_error * err)
{
  bundle b;
  if (!data) {
    tt_fail (err, TT_ERR_INVALID, "%s: no data", name ? name : "<memory>");
    return NULL;
  }
  tt_bundle_open_memory (&b, data, len, name);
  tt_model *m = bundle_model (&b, o, err);
  tt_bundle_close (&b);
  return m;
}

tt_status
tt_bundle_load_weights (tt_model * m, const char *path, tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile the model before loading "
        "weights", path);
  if (m->weights_external)
    return tt_model_refuse_external (m, "load weights", err);
  bundle b;
  int *ids = NULL;
  tt_status st;
  if (!(st = tt_bundle_open_file (&b, path, false, err)) &&
      !(st = tt_bundle_read_meta (&b, true, err)) &&
      !(st = bundle_check_counters (&b, err)) &&
      !(st = bundle_match (&b, m, &ids, err)) &&
      /* check everything, then store: a bad bundle leaves the model as it
       * was */
      !(st = bundle_fill (&b, m, ids, false, true, err)) &&
      !(st = bundle_fill (&b, m, ids, true, false, err))) {
    if (tt_bin_has_moments (m) && !(b.wflags & B_WF_MOMENTS)) {
      uint32_t n;
      int *all = tt_bin_regions (m, true, &n);
      uint32_t w = b.n_tensors;
      for (uint32_t i = w; all && i < n; i++)
        if (all[i] >= 0)
          memset (m->tensors[all[i]].data, 0,
              m->tensors[all[i]].count * sizeof (float));
      free (all);
    }
    if (b.wflags & B_WF_COUNTERS) {
      m->epoch = b.epoch;
      m->iteration = b.iteration;
    }
  }
  free (ids);
  tt_bundle_close (&b);
  return st;
}
