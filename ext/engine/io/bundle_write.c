/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writing a bundle (the format: bundle_format.h): a model's INI (with its
 * plan when planned), index and weights, raw or zlib-compressed, saved
 * atomically with the header filled in last; from a model (tt_bundle_save,
 * tt_model_save by the path's extension) or from an INI and a BIN
 * (tt_bundle_pack).
 */
#include "bundle_format.h"
#include "atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const unsigned char zeros[4096];

typedef struct
{
  tt_atomic_file *f;
  bool compress, z_ready;
  z_stream z;
  unsigned char *out;
  uint32_t crc;
  uint64_t stored;
  tt_error *err;
} w_writer;

static tt_status
writer_emit (w_writer * w, const void *data, size_t len)
{
  w->crc = tt_bundle_crc (w->crc, data, len);
  w->stored += len;
  return tt_atomic_file_write (w->f, data, len, w->err);
}

static tt_status
writer_deflate (w_writer * w, int flush)
{
  int zr;
  do {
    w->z.next_out = w->out;
    w->z.avail_out = B_CHUNK;
    zr = deflate (&w->z, flush);
    if (zr == Z_STREAM_ERROR)
      return tt_fail (w->err, TT_ERR_IO, "%s: zlib failed", w->f->path);
    size_t have = B_CHUNK - w->z.avail_out;
    tt_status st = have ? writer_emit (w, w->out, have) : TT_OK;
    if (st)
      return st;
  } while (w->z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
  return TT_OK;
}

static tt_status
writer_put (w_writer * w, const void *data, uint64_t len)
{
  const unsigned char *p = data;
  while (len > 0) {
    size_t n = len > (1u << 30) ? (1u << 30) : (size_t) len;
    tt_status st;
    if (!w->compress) {
      st = writer_emit (w, p, n);
    } else {
      w->z.next_in = p;
      w->z.avail_in = (uInt) n;
      st = writer_deflate (w, Z_NO_FLUSH);
    }
    if (st)
      return st;
    p += n;
    len -= n;
  }
  return TT_OK;
}

static tt_status
writer_zeros (w_writer * w, uint64_t len)
{
  while (len > 0) {
    uint64_t n = len > sizeof zeros ? sizeof zeros : len;
    tt_status st = writer_put (w, zeros, n);
    if (st)
      return st;
    len -= n;
  }
  return TT_OK;
}

static tt_status
file_zeros (tt_atomic_file * f, uint64_t len, tt_error * err)
{
  while (len > 0) {
    uint64_t n = len > sizeof zeros ? sizeof zeros : len;
    tt_status st = tt_atomic_file_write (f, zeros, n, err);
    if (st)
      return st;
    len -= n;
  }
  return TT_OK;
}

static tt_status
bundle_check_options (const tt_bundle_options * o, const char *path,
    uint32_t * align, tt_error * err)
{
  *align = o && o->alignment ? o->alignment : TT_BUNDLE_DEFAULT_ALIGNMENT;
  if (*align < 4 || *align > TT_BUNDLE_MAX_ALIGNMENT || (*align & (*align - 1)))
    return tt_fail (err, TT_ERR_INVALID, "%s: alignment %u is not a power of "
        "two in [4, %d]", path, *align, TT_BUNDLE_MAX_ALIGNMENT);
  if (o && (o->level < 0 || o->level > 9))
    return tt_fail (err, TT_ERR_INVALID, "%s: zlib level %d is not in "
        "[1, 9] (0: the default)", path, o->level);
  return TT_OK;
}

/* Writes text and the model's BIN regions (moments when asked) as a
 * bundle; counters when asked. */
static tt_status
bundle_write (tt_model * m, const char *path, const char *text,
    size_t text_len, bool moments, bool counters,
    const tt_bundle_options * o, tt_error * err)
{
  uint32_t align;
  tt_status st = bundle_check_options (o, path, &align, err);
  if (st)
    return st;
  if (text_len > B_MAX_INI)
    return tt_fail (err, TT_ERR_INVALID, "%s: the INI text (%zu bytes) is "
        "more than %u MiB", path, text_len, B_MAX_INI >> 20);
  const bool compress = o && o->compress;
  uint32_t n;
  int *ids = tt_bin_regions (m, moments, &n);
  if (!ids)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", path);

  /* the index: entries, then the names */
  size_t names_len = 0;
  for (uint32_t i = 0; i < n; i++)
    names_len += strlen (m->tensors[ids[i]].name);
  const size_t index_len = (size_t) n * B_INDEX_ENTRY + names_len;
  unsigned char *index = calloc (index_len + 1, 1);
  if (!index) {
    free (ids);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", path);
  }
  uint64_t raw = 0;
  size_t name_at = 0;
  uint32_t weights = 0;
  {
    uint32_t nw;
    int *w = tt_bin_regions (m, false, &nw);
    weights = nw;
    free (w);
  }
  for (uint32_t i = 0; i < n; i++) {
    const tt_tensor *t = &m->tensors[ids[i]];
    unsigned char *e = index + (size_t) i * B_INDEX_ENTRY;
    const size_t nl = strlen (t->name);
    raw = tt_bundle_align_up (raw, align);
    tt_le_put64 (e, raw);
    tt_le_put64 (e + 8, (uint64_t) t->count * sizeof (float));
    tt_le_put32 (e + 16, (uint32_t) name_at);
    tt_le_put32 (e + 20, (uint32_t) nl);
    tt_le_put32 (e + 24, i < weights ? 0 : 1 + (i - weights) % 2);
    memcpy (index + (size_t) n * B_INDEX_ENTRY + name_at, t->name, nl);
    name_at += nl;
    raw += (uint64_t) t->count * sizeof (float);
  }

  const uint64_t ini_off = B_PREAMBLE + B_HEADER_BYTES;
  const uint64_t index_off = tt_bundle_align_up (ini_off + text_len, 8);
  const uint64_t weights_off =
      tt_bundle_align_up (index_off + index_len, align);

  tt_atomic_file f;
  w_writer w = { &f, compress, false, {0}, NULL, 0, 0, err };
  if ((st = tt_atomic_file_open (&f, path, err))) {
    free (index);
    free (ids);
    return st;
  }
  if (compress) {
    w.out = malloc (B_CHUNK);
    if (!w.out || deflateInit (&w.z, o->level ? o->level :
            Z_DEFAULT_COMPRESSION) != Z_OK) {
      st = tt_fail (err, TT_ERR_NOMEM, "%s: cannot start zlib", path);
      goto out;
    }
    w.z_ready = true;
  }
  /* header last, once the weight section's length and checksum are known */
  if ((st = file_zeros (&f, ini_off, err)) ||
      (st = tt_atomic_file_write (&f, text, text_len, err)) ||
      (st = file_zeros (&f, index_off - (ini_off + text_len), err)) ||
      (st = tt_atomic_file_write (&f, index, index_len, err)) ||
      (st = file_zeros (&f, weights_off - (index_off + index_len), err)))
    goto out;
  uint64_t at = 0;
  for (uint32_t i = 0; i < n && !st; i++) {
    const tt_tensor *t = &m->tensors[ids[i]];
    const uint64_t bytes = (uint64_t) t->count * sizeof (float);
    if (!(st = writer_zeros (&w, tt_bundle_align_up (at, align) - at)))
      st = writer_put (&w, t->data, bytes);
    at = tt_bundle_align_up (at, align) + bytes;
  }
  if (!st && compress)
    st = writer_deflate (&w, Z_FINISH);
  if (st)
    goto out;

  unsigned char h[B_PREAMBLE + B_HEADER_BYTES];
  memset (h, 0, sizeof h);
  unsigned char *hd = h + B_PREAMBLE;
  tt_le_put64 (hd, weights_off + w.stored);
  tt_le_put32 (hd + 8, align);
  tt_le_put32 (hd + 12, B_SECTIONS);
  tt_le_put32 (hd + 20, m->batch_size);
  tt_le_put32 (hd + 24, (moments ? B_WF_MOMENTS : 0) |
      (counters ? B_WF_COUNTERS : 0));
  tt_le_put32 (hd + 28, counters ? m->epoch : 0);
  tt_le_put32 (hd + 32, counters ? m->iteration : 0);
  tt_le_put32 (hd + 36, n);
  const struct
  {
    uint32_t type, flags;
    uint64_t offset, length, raw;
    uint32_t crc;
  } table[B_SECTIONS] = {
    {TT_BUNDLE_SECTION_INI, 0, ini_off, text_len, text_len,
        tt_bundle_crc (0, text, text_len)},
    {TT_BUNDLE_SECTION_INDEX, 0, index_off, index_len, index_len,
        tt_bundle_crc (0, index, index_len)},
    {TT_BUNDLE_SECTION_WEIGHTS, compress ? TT_BUNDLE_SECTION_ZLIB : 0,
        weights_off, w.stored, raw, w.crc},
  };
  for (int i = 0; i < B_SECTIONS; i++) {
    unsigned char *e = hd + B_HEADER_FIXED + i * B_SECTION_ENTRY;
    tt_le_put32 (e, table[i].type);
    tt_le_put32 (e + 4, table[i].flags);
    tt_le_put64 (e + 8, table[i].offset);
    tt_le_put64 (e + 16, table[i].length);
    tt_le_put64 (e + 24, table[i].raw);
    tt_le_put32 (e + 32, table[i].crc);
  }
  memcpy (h, tt_bundle_magic, sizeof tt_bundle_magic);
  tt_le_put32 (h + 8, TT_BUNDLE_VERSION);
  tt_le_put32 (h + 12, B_HEADER_BYTES);
  tt_le_put32 (h + 16, tt_bundle_crc (0, hd, B_HEADER_BYTES));
  st = tt_atomic_file_pwrite (&f, 0, h, sizeof h, err);
out:
  if (w.z_ready)
    deflateEnd (&w.z);
  free (w.out);
  free (index);
  free (ids);
  if (st) {
    tt_atomic_file_abort (&f);
    return st;
  }
  return tt_atomic_file_commit (&f, err);
}

tt_status
tt_bundle_save (tt_model * m, const char *path, const tt_bundle_options * o,
    tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: nothing to save: the model is "
        "not compiled", path);
  char *text = NULL;
  size_t len = 0;
  tt_status st = tt_state_check_saveable (m, path, err);
  if (st)
    return st;
  if (m->plan_mode != TT_PLAN_NAIVE &&
      (st = tt_plan_ini_text (m, &text, &len, err)))
    return st;
  st = bundle_write (m, path, text ? text : m->ini_text,
      text ? len : m->ini_len, tt_bin_saves_moments (m), true, o, err);
  free (text);
  return st;
}

tt_status
tt_model_save (tt_model * m, const char *path, tt_error * err)
{
  if (!path)
    return tt_fail (err, TT_ERR_INVALID, "no path to save to");
  const char *slash = strrchr (path, '/');
  const char *dot = strrchr (slash ? slash + 1 : path, '.');
  if (dot && !strcasecmp (dot, ".bin"))
    return tt_model_save_bin (m, path, err);
  if (dot && !strcasecmp (dot, ".ini"))
    return tt_fail (err, TT_ERR_INVALID, "%s: a model saves as a bundle "
        "(.ttb, .bundle) or as BIN weights (.bin); the INI is its "
        "description (tt_model_save_plan_ini writes it with its plan)", path);
  return tt_bundle_save (m, path, NULL, err);
}

tt_status
tt_bundle_pack (const char *ini_path, const char *bin_path,
    const char *bundle_path, uint32_t batch_size,
    const tt_bundle_options * o, tt_error * err)
{
  uint32_t align;
  tt_status st = bundle_check_options (o, bundle_path, &align, err);
  if (st)
    return st;
  tt_model *m = tt_model_load_ini (ini_path, err);
  if (!m)
    return err ? err->status : TT_ERR_INVALID;
  bool moments = false, counters = false;
  struct stat sb;
  m->defer_init = true;
  if ((batch_size && (st = tt_model_set_batch_size (m, batch_size, err))) ||
      (st = tt_model_compile (m, err)))
    goto out;
  if (stat (bin_path, &sb) != 0) {
    st = tt_fail (err, TT_ERR_IO, "%s: cannot open: %s", bin_path,
        strerror (errno));
    goto out;
  }
  if ((st = tt_bin_layout (m, (size_t) sb.st_size, bin_path, &moments,
              &counters, err)) || (st = tt_model_load_bin (m, bin_path, err)))
    goto out;
  st = bundle_write (m, bundle_path, m->ini_text, m->ini_len, moments,
      counters, o, err);
out:
  tt_model_free (m);
  return st;
}
