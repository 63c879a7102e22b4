/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unpacking a bundle into nntrainer's files: its INI, and its weights as a
 * BIN in the model's BIN order (with the "adam" tag and the counters when
 * the bundle holds them), both saved atomically. A bundle keeps fp32
 * weights whatever the model's weight type; the BIN gets them at that
 * type's width (bin_width.h: FP16 or BF16 rounded to nearest even).
 */
#include "bundle_stream.h"
#include "atomic_file.h"
#include "bin_width.h"

#include <stdlib.h>
#include <string.h>

/* Where each tensor of the model's BIN lies in the bundle's index:
 * perm[r] = the bundle tensor of BIN region r. Learnt from the bundle's
 * INI (its graph only: no pool); false when that cannot be built or its
 * names do not match (then the bundle loads nowhere, and the index order
 * is all there is). Bundles written before nntrainer's BIN order (issue
 * 16) list the tensors in INI order: unpacked in the model's order, their
 * BIN loads right. */
static bool
bundle_bin_order (bundle * b, uint32_t * perm, tt_precision * weight_type)
{
  tt_error err;
  tt_model *m = tt_model_load_ini_text (b->ini_text, b->ini->length, b->name,
      &err);
  uint32_t n = 0;
  char **names = NULL;
  bool ok = m && (!b->batch_size ||
      tt_model_set_batch_size (m, b->batch_size, &err) == TT_OK) &&
      tt_graph_build (m, &err) == TT_OK &&
      (names = tt_bin_region_names (m, (b->wflags & B_WF_MOMENTS) != 0,
          &n)) && n == b->n_tensors;
  if (m)
    *weight_type = m->weight_type;
  for (uint32_t r = 0; ok && r < n; r++) {
    const size_t len = strlen (names[r]);
    bool found = false;
    /* the same position first: bundles in the BIN's order cost n steps */
    for (uint32_t k = 0; k < n && !found; k++) {
      const uint32_t i = (r + k) % n;
      if (b->tensors[i].name_len == len &&
          !memcmp (b->tensors[i].name, names[r], len)) {
        perm[r] = i;
        found = true;
      }
    }
    ok = found;
  }
  free (names);
  tt_model_free (m);
  return ok;
}

/* Writes a tensor's bytes (fp32) to the BIN: a weight (kind 0) narrowed to
 * the weight type when that is 2 bytes wide, refused when a value is
 * beyond that type's range */
static tt_status
unpack_write (tt_atomic_file * fb, const unsigned char *data, uint64_t bytes,
    const b_tensor * t, tt_precision type, const char *path, tt_error * err)
{
  if (t->kind != 0 || type == TT_PRECISION_FP32)
    return tt_atomic_file_write (fb, data, (size_t) bytes, err);
  float x[1024];
  uint16_t half[1024];
  tt_status st = TT_OK;
  for (uint64_t done = 0; !st && done < bytes;) {
    const size_t n = (size_t) ((bytes - done) / sizeof (float) < 1024 ?
        (bytes - done) / sizeof (float) : 1024);
    float largest;
    memcpy (x, data + done, n * sizeof (float));
    const size_t bad = tt_bin_find_unrepresentable (type, x, n, &largest);
    if (bad < n)
      return tt_fail (err, TT_ERR_NUMERIC, "%s: cannot unpack: tensor %.*s "
          "holds %g, beyond the range of %s (largest %g), the type of the "
          "model's BIN weights ([Model] model_tensor_type)", path,
          (int) t->name_len, t->name, (double) x[bad],
          tt_bin_type_name (type), (double) largest);
    tt_bin_narrow (type, x, half, n);
    st = tt_atomic_file_write (fb, half, n * sizeof *half, err);
    done += n * sizeof (float);
  }
  return st;
}

tt_status
tt_bundle_unpack (const char *bundle_path, const char *ini_path,
    const char *bin_path, tt_error * err)
{
  bundle b;
  tt_status st;
  tt_atomic_file fb;
  bool fb_open = false;
  w_stream w;
  bool w_open = false;
  unsigned char *buf = NULL, *whole = NULL;
  uint32_t *perm = NULL;
  tt_precision type = TT_PRECISION_FP32;
  if ((st = tt_bundle_open_file (&b, bundle_path, false, err)) ||
      (st = tt_bundle_read_meta (&b, true, err)))
    goto out;
  if (bin_path) {
    if (!(buf = malloc (B_CHUNK))) {
      st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", bundle_path);
      goto out;
    }
    if ((st = tt_atomic_file_open (&fb, bin_path, err)))
      goto out;
    fb_open = true;
  }
  /* always stream the weights: their checksum is checked either way */
  if ((st = tt_bundle_stream_open (&w, &b, true, err)))
    goto out;
  w_open = true;
  if (!buf && !(buf = malloc (B_CHUNK))) {
    st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", bundle_path);
    goto out;
  }
  /* the model's BIN order, when the bundle lists its tensors otherwise
   * (then the section is read whole, and written in that order) */
  if (fb_open && b.n_tensors) {
    perm = malloc (b.n_tensors * sizeof *perm);
    if (!perm) {
      st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", bundle_path);
      goto out;
    }
    bool other = false;
    if (bundle_bin_order (&b, perm, &type))
      for (uint32_t r = 0; r < b.n_tensors; r++)
        other |= perm[r] != r;
    if (other) {
      const uint64_t raw = b.weights->raw_length;
      if (raw > SIZE_MAX - 1 || !(whole = malloc ((size_t) raw + 1))) {
        st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", bundle_path);
        goto out;
      }
      if ((st = tt_bundle_stream_read (&w, whole, raw, err)))
        goto out;
    }
  }
  bool tag = false;
  for (uint32_t k = 0; whole && k <= b.n_tensors && !st; k++) {
    const b_tensor *t = k < b.n_tensors ? &b.tensors[perm[k]] : NULL;
    if ((b.wflags & B_WF_MOMENTS) && !tag && (!t || t->kind != 0)) {
      tag = true;
      st = tt_atomic_file_write (&fb, "adam", 4, err);
    }
    if (t && !st)
      st = unpack_write (&fb, whole + t->offset, t->bytes, t, type,
          bundle_path, err);
  }
  for (uint32_t i = 0; !whole && i <= b.n_tensors && !st; i++) {
    if ((b.wflags & B_WF_MOMENTS) && !tag && (i == b.n_tensors ||
            b.tensors[i].kind != 0)) {
      tag = true;
      if (fb_open && (st = tt_atomic_file_write (&fb, "adam", 4, err)))
        break;
    }
    if (i == b.n_tensors)
      break;
    const b_tensor *t = &b.tensors[i];
    if ((st = tt_bundle_stream_read (&w, buf, t->offset - w.raw_pos, err)))
      break;
    for (uint64_t done = 0; done < t->bytes && !st;) {
      uint64_t take = t->bytes - done > B_CHUNK ? B_CHUNK : t->bytes - done;
      if (!(st = tt_bundle_stream_read (&w, buf, take, err)) && fb_open)
        st = unpack_write (&fb, buf, take, t, type, bundle_path, err);
      done += take;
    }
  }
  if (!st)
    st = tt_bundle_stream_finish (&w, err);
  /* a damaged section reports as damaged, whichever check saw it first */
  if (st)
    st = tt_bundle_stream_fail (&w, st, err);
  if (!st && fb_open && (b.wflags & B_WF_COUNTERS)) {
    unsigned char c[8];
    tt_le_put32 (c, b.epoch);
    tt_le_put32 (c + 4, b.iteration);
    st = tt_atomic_file_write (&fb, c, sizeof c, err);
  }
  if (!st && ini_path) {
    tt_atomic_file fi;
    if (!(st = tt_atomic_file_open (&fi, ini_path, err))) {
      if ((st = tt_atomic_file_write (&fi, b.ini_text, b.ini->length, err)))
        tt_atomic_file_abort (&fi);
      else
        st = tt_atomic_file_commit (&fi, err);
    }
  }
  if (fb_open && !st) {
    fb_open = false;
    st = tt_atomic_file_commit (&fb, err);
  }
out:
  if (fb_open)
    tt_atomic_file_abort (&fb);
  if (w_open)
    tt_bundle_stream_close (&w);
  free (buf);
  free (whole);
  free (perm);
  tt_bundle_close (&b);
  return st;
}
