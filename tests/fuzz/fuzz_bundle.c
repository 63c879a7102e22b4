/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: model bundles (tt_bundle.h, bundle_*.c), through every
 * loader:
 *   - tt_bundle_load from a file (a memfd path) with TT_BUNDLE_READ,
 *     TT_BUNDLE_MMAP and TT_BUNDLE_IN_PLACE;
 *   - tt_bundle_load_memory with TT_BUNDLE_READ and TT_BUNDLE_IN_PLACE (a
 *     64-byte-aligned copy of the input), and with trust when bit 1 is set;
 *   - tt_bundle_inspect_memory;
 *   - tt_bundle_load_weights into two small models compiled once (the
 *     models of fuzz_bin.c, which most seeds are bundles of).
 *
 * Input: byte 0 holds options; bit 0: fix up the bytes first (the header's
 * recorded file size, every section's CRC32 and the header's CRC32 are
 * recomputed), so that mutations reach the checks behind the checksums as
 * often as the checksums themselves; bit 1: also load trusted. The bytes
 * from 1 on are the bundle.
 *
 * Checks: the copy loaders (file read, file mmap, memory) give the same
 * status and message; the in-place loaders (file and memory) agree with
 * each other, refuse a compressed weight section, and accept exactly what
 * the copy loaders accept otherwise; a rejection is an error with a
 * message. An accepted bundle gives the same weights, moments and counters
 * through every loader, inspects with good checksums, evaluates
 * bit-identically in place and copied, loads into a model with
 * tt_bundle_load_weights to the same weights, saves and loads back to the
 * same weights, and (pool <= 1 MiB) trains a step, which the in-place
 * model refuses. tt_bundle_load_weights into the fixed models leaves them
 * untouched when it refuses, and finite when it accepts.
 *
 * Inference only (tt_bundle_load_options.inference, the moments skipped):
 * a bundle the copy loaders accept loads for inference too, copied and in
 * place (unless compressed), with the same weights and counters, and
 * evaluates to the same bits as the training model.
 */
#include "fuzz_common.h"
#include "tt_bundle.h"

#include <zlib.h>

#include "fuzz_models.h"

typedef struct
{
  tt_model *m;
  void *pristine;               /* the pool after compile */
} fuzz_fixed;

static fuzz_fixed fixed[2];
static fuzz_file file;

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  tt_set_num_threads (1);
  fuzz_file_open (&file, "fuzz_bundle");
  for (int i = 0; i < 2; i++) {
    tt_error err;
    fixed[i].m = tt_model_load_ini_text (fuzz_models[i],
        strlen (fuzz_models[i]), i ? "sgd.ini" : "adam.ini", &err);
    FUZZ_CHECK (fixed[i].m && tt_model_compile (fixed[i].m, &err) == TT_OK,
        "%s", err.message);
    fixed[i].pristine = malloc (fixed[i].m->pool_bytes);
    FUZZ_CHECK (fixed[i].pristine != NULL, "out of memory");
    memcpy (fixed[i].pristine, fixed[i].m->pool, fixed[i].m->pool_bytes);
  }
  return 0;
}

static uint32_t
get32 (const uint8_t * p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
      (uint32_t) p[3] << 24;
}

static uint64_t
get64 (const uint8_t * p)
{
  return get32 (p) | (uint64_t) get32 (p + 4) << 32;
}

static void
put32 (uint8_t * p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t) (v >> (8 * i));
}

static void
put64 (uint8_t * p, uint64_t v)
{
  put32 (p, (uint32_t) v);
  put32 (p + 4, (uint32_t) (v >> 32));
}

/* The recorded size, the section CRCs and the header CRC made to match
 * the bytes (docs/bundle.md: preamble 24 bytes, header at 24, section
 * table at 64, 40 bytes an entry, CRC at 32 in an entry). */
static void
fuzz_fixup (uint8_t * p, size_t len)
{
  if (len < 24 + 40)
    return;
  uint32_t hl = get32 (p + 12);
  if (hl < 40 || hl > 4096 || hl > len - 24)
    return;
  put64 (p + 24, len);
  for (uint32_t i = 0; i < 3 && 40 + (i + 1) * 40 <= hl; i++) {
    uint8_t *e = p + 64 + i * 40;
    uint64_t off = get64 (e + 8), n = get64 (e + 16);
    if (off <= len && n <= len - off)
      put32 (e + 32, (uint32_t) crc32_z (0, p + off, n));
  }
  put32 (p + 16, (uint32_t) crc32_z (0, p + 24, hl));
}

typedef struct
{
  const char *what;
  tt_model *m;
  tt_status st;
  tt_error err;
} fuzz_load;

static void
fuzz_loaded (fuzz_load * l, const char *what, tt_model * m)
{
  l->what = what;
  l->m = m;
  l->st = m ? TT_OK : l->err.status;
  if (!m) {
    fuzz_check_error (l->st, &l->err);
    FUZZ_CHECK (strstr (l->err.message, file.path) != NULL,
        "%s: the message does not name the bundle: %s", what, l->err.message);
  }
}

static void
fuzz_same_outcome (const fuzz_load * a, const fuzz_load * b)
{
  FUZZ_CHECK (a->st == b->st && (a->st == TT_OK ||
          !strcmp (a->err.message, b->err.message)),
      "%s: %d %s; %s: %d %s", a->what, (int) a->st,
      a->st ? a->err.message : "OK", b->what, (int) b->st,
      b->st ? b->err.message : "OK");
}

/* The weights (and moments) both models hold, and the counters. */
static void
fuzz_same_weights (const fuzz_load * a, const fuzz_load * b, bool moments)
{
  uint32_t na, nb;
  int *ia = tt_bin_regions (a->m, moments, &na);
  int *ib = tt_bin_regions (b->m, moments, &nb);
  FUZZ_CHECK (ia && ib && na == nb, "%s and %s list %u and %u regions",
      a->what, b->what, na, nb);
  for (uint32_t i = 0; i < na; i++) {
    if (ia[i] < 0 || ib[i] < 0)
      continue;
    const tt_tensor *x = &a->m->tensors[ia[i]], *y = &b->m->tensors[ib[i]];
    FUZZ_CHECK (x->count == y->count && !memcmp (x->data, y->data,
            x->count * sizeof (float)), "%s differs between %s and %s",
        x->name, a->what, b->what);
  }
  FUZZ_CHECK (a->m->epoch == b->m->epoch &&
      a->m->iteration == b->m->iteration, "counters differ between %s and "
      "%s", a->what, b->what);
  free (ia);
  free (ib);
}

static void
fuzz_check_finite (tt_model * m)
{
  uint32_t n;
  int *ids = tt_bin_regions (m, tt_bin_has_moments (m), &n);
  FUZZ_CHECK (ids != NULL, "out of memory");
  for (uint32_t i = 0; i < n; i++) {
    if (ids[i] < 0)
      continue;
    const tt_tensor *t = &m->tensors[ids[i]];
    for (size_t k = 0; k < t->count; k++)
      FUZZ_CHECK (isfinite (t->data[k]), "%s[%zu] = %g accepted", t->name,
          k, (double) t->data[k]);
  }
  free (ids);
}

/* Loading into a fixed model: refused, it is untouched; accepted, finite.
 * Either way back to its compiled state afterwards. */
static void
fuzz_load_weights_fixed (fuzz_fixed * f)
{
  tt_error err;
  tt_status st = tt_bundle_load_weights (f->m, file.path, &err);
  if (st != TT_OK) {
    fuzz_check_error (st, &err);
    FUZZ_CHECK (!memcmp (f->m->pool, f->pristine, f->m->pool_bytes) &&
        f->m->epoch == 0 && f->m->iteration == 0,
        "a refused bundle changed the model: %s", err.message);
    return;
  }
  fuzz_check_finite (f->m);
  memcpy (f->m->pool, f->pristine, f->m->pool_bytes);
  f->m->epoch = f->m->iteration = 0;
}

/* Evaluation of the copied and the in-place model: the same bits. */
static void
fuzz_check_eval (const fuzz_load * a, const fuzz_load * b)
{
  uint32_t n = a->m->batch_size < 2 ? a->m->batch_size : 2;
  fuzz_batch batch;
  FUZZ_CHECK (fuzz_batch_make (a->m, n, &batch), "out of memory");
  tt_batch_result ra = { 0 }, rb = { 0 };
  tt_error ea, eb;
  tt_status sa = tt_model_eval_batch (a->m, n, batch.inputs, NULL,
      batch.labels, &ra, &ea);
  tt_status sb = tt_model_eval_batch (b->m, n, batch.inputs, NULL,
      batch.labels, &rb, &eb);
  FUZZ_CHECK (sa == sb, "evaluation: %s %d, %s %d", a->what, (int) sa,
      b->what, (int) sb);
  if (sa == TT_OK) {
    tt_shape os = tt_model_output_shape (a->m);
    size_t out = (size_t) n * os.channel * os.height * os.width;
    FUZZ_CHECK (memcmp (&ra.loss, &rb.loss, sizeof ra.loss) == 0 &&
        ra.correct == rb.correct && !memcmp (tt_model_output (a->m),
            tt_model_output (b->m), out * sizeof (float)),
        "%s and %s evaluate differently (loss %.9g vs %.9g)", a->what,
        b->what, ra.loss, rb.loss);
  } else {
    fuzz_check_error (sa, &ea);
  }
  fuzz_batch_free (&batch);
}

static uint8_t *buf;
static size_t buf_cap;

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  if (size < 1)
    return 0;
  const bool fix = data[0] & 1, trusted = data[0] & 2;
  size_t len = size - 1;
  /* a 64-byte-aligned copy: the blob of the memory loaders */
  if (len + 1 > buf_cap) {
    free (buf);
    buf_cap = len + 1;
    FUZZ_CHECK (posix_memalign ((void **) &buf, 64, buf_cap) == 0,
        "out of memory");
  }
  memcpy (buf, data + 1, len);
  if (fix)
    fuzz_fixup (buf, len);
  fuzz_file_set (&file, buf, len);

  fuzz_load l[8];
  memset (l, 0, sizeof l);
  tt_bundle_load_options o = {.mode = TT_BUNDLE_READ };
  fuzz_loaded (&l[0], "file read", tt_bundle_load (file.path, &o, &l[0].err));
  o.mode = TT_BUNDLE_MMAP;
  fuzz_loaded (&l[1], "file mmap", tt_bundle_load (file.path, &o, &l[1].err));
  o.mode = TT_BUNDLE_READ;
  fuzz_loaded (&l[2], "memory read", tt_bundle_load_memory (buf, len,
          file.path, &o, &l[2].err));
  o.mode = TT_BUNDLE_IN_PLACE;
  fuzz_loaded (&l[3], "file in place", tt_bundle_load (file.path, &o,
          &l[3].err));
  fuzz_loaded (&l[4], "memory in place", tt_bundle_load_memory (buf, len,
          file.path, &o, &l[4].err));
  fuzz_same_outcome (&l[0], &l[1]);
  fuzz_same_outcome (&l[0], &l[2]);
  fuzz_same_outcome (&l[3], &l[4]);

  tt_bundle_info info;
  tt_error ierr;
  tt_status ist = tt_bundle_inspect_memory (buf, len, file.path, &info,
      &ierr);
  const bool compressed = ist == TT_OK &&
      (info.sections[0].flags | info.sections[1].flags |
      info.sections[2].flags) & TT_BUNDLE_SECTION_ZLIB;
  if (ist != TT_OK)
    fuzz_check_error (ist, &ierr);

  if (l[0].st == TT_OK) {
    FUZZ_CHECK (ist == TT_OK && info.checksums_ok, "accepted, but "
        "inspection says %s", ist ? ierr.message : "a checksum is wrong");
    if (compressed)
      FUZZ_CHECK (l[3].st == TT_ERR_INVALID &&
          strstr (l[3].err.message, "compressed"), "in place: a compressed "
          "section gives %d %s", (int) l[3].st, l[3].err.message);
    else
      FUZZ_CHECK (l[3].st == TT_OK, "copied: accepted; in place: %s",
          l[3].err.message);
  } else if (l[3].st == TT_OK) {
    FUZZ_CHECK (0, "in place: accepted; copied: %s", l[0].err.message);
  }
  if (trusted) {
    tt_bundle_load_options t = {.mode = TT_BUNDLE_READ,.trust = true };
    fuzz_loaded (&l[5], "memory read trusted", tt_bundle_load_memory (buf,
            len, file.path, &t, &l[5].err));
    if (l[0].st == TT_OK)
      FUZZ_CHECK (l[5].st == TT_OK, "trusted: %s", l[5].err.message);
  }

  if (l[0].st == TT_OK) {
    /* the same bundle for inference only: copied, and in place */
    tt_bundle_load_options inf = {.mode = TT_BUNDLE_READ,
      .inference = true
    };
    fuzz_loaded (&l[6], "memory read, inference", tt_bundle_load_memory (buf,
            len, file.path, &inf, &l[6].err));
    FUZZ_CHECK (l[6].st == TT_OK, "loads for training, not for inference: "
        "%s", l[6].err.message);
    inf.mode = TT_BUNDLE_IN_PLACE;
    fuzz_loaded (&l[7], "memory in place, inference",
        tt_bundle_load_memory (buf, len, file.path, &inf, &l[7].err));
    FUZZ_CHECK (compressed || l[7].st == TT_OK, "in place for inference: "
        "%s", l[7].err.message);
    fuzz_same_weights (&l[0], &l[6], false);
    if (l[7].m)
      fuzz_same_weights (&l[0], &l[7], false);
    if (l[0].m->pool_bytes <= (1u << 20)) {
      fuzz_check_eval (&l[0], &l[6]);
      if (l[7].m)
        fuzz_check_eval (&l[0], &l[7]);
    }
  }

  if (l[0].st == TT_OK) {
    const bool moments = info.has_moments;
    for (int i = 1; i < 6; i++)
      if (l[i].m)
        fuzz_same_weights (&l[0], &l[i], moments);
    fuzz_check_finite (l[0].m);
    if (l[3].m && l[0].m->pool_bytes <= (1u << 20))
      fuzz_check_eval (&l[0], &l[3]);

    /* tt_bundle_load_weights into a model the bundle loaded as: the same
     * weights as the loader's (the mmap model's are cleared first) */
    tt_error err;
    uint32_t n;
    int *ids = tt_bin_regions (l[1].m, tt_bin_has_moments (l[1].m), &n);
    FUZZ_CHECK (ids != NULL, "out of memory");
    for (uint32_t i = 0; i < n; i++)
      if (ids[i] >= 0)
        memset (l[1].m->tensors[ids[i]].data, 0,
            l[1].m->tensors[ids[i]].count * sizeof (float));
    free (ids);
    tt_status st = tt_bundle_load_weights (l[1].m, file.path, &err);
    FUZZ_CHECK (st == TT_OK, "loads, but its weights do not: %s", err.message);
    fuzz_same_weights (&l[2], &l[1], moments);

    if (l[0].m->pool_bytes <= (1u << 20)) {
      /* saved and loaded back: the same weights */
      const char *path = fuzz_tmp_path ();
      st = tt_bundle_save (l[2].m, path, NULL, &err);
      FUZZ_CHECK (st == TT_OK, "saving: %s", err.message);
      fuzz_load r = {.what = "saved" };
      o.mode = TT_BUNDLE_READ;
      r.m = tt_bundle_load (path, &o, &r.err);
      FUZZ_CHECK (r.m != NULL, "the saved bundle does not load: %s",
          r.err.message);
      fuzz_same_weights (&l[2], &r, tt_bin_has_moments (r.m));
      tt_model_free (r.m);

      /* it trains (or reports a non-finite loss); in place it refuses */
      fuzz_batch b;
      uint32_t bs = l[0].m->batch_size;
      FUZZ_CHECK (fuzz_batch_make (l[0].m, bs, &b), "out of memory");
      st = tt_model_train_batch (l[0].m, bs, b.inputs, NULL, b.labels, NULL,
          &err);
      if (st != TT_OK) {
        fuzz_check_error (st, &err);
        FUZZ_CHECK (st == TT_ERR_NUMERIC, "training: %s", err.message);
      }
      if (l[3].m) {
        st = tt_model_train_batch (l[3].m, bs, b.inputs, NULL, b.labels,
            NULL, &err);
        FUZZ_CHECK (st != TT_OK, "a model used in place trained");
        fuzz_check_error (st, &err);
      }
      fuzz_batch_free (&b);
    }
  }
  for (int i = 0; i < 8; i++)
    tt_model_free (l[i].m);
  if (ist == TT_OK)
    tt_bundle_info_clear (&info);

  for (int i = 0; i < 2; i++)
    fuzz_load_weights_fixed (&fixed[i]);
  return 0;
}
