/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bundles (bundle_*.c, docs/bundle.md). For each model (adam, adam with
 * batch normalization, frozen layers with dropout, sgd without moments):
 *   a. pack INI + BIN -> bundle -> unpack: the same bytes, compressed or
 *      not, page-aligned or not, for every part a BIN may hold; pack of the
 *      unpacked files gives the same bundle again;
 *   b. tt_model_save: .ttb/.bundle/other -> bundle, .bin -> BIN, .ini
 *      refused; a saved bundle unpacks to the optimized INI
 *      (tt_model_save_plan_ini's bytes, = tt_plan_ini_text) and the BIN
 *      tt_model_save_bin writes;
 *   c. bundles read, mapped, compressed, from memory and INI + BIN all
 *      train to bit-identical weights;
 *   d. evaluation is identical from a file, from memory, mapped, and with
 *      the weights used in place (mapped file, memory blob); in place the
 *      weights really are the blob's, and training, loading or
 *      initializing weights fail with a clear message;
 *   e. tt_model_load_bin_memory equals tt_model_load_bin and refuses what
 *      it refuses, leaving the model untouched;
 *   f. tt_bundle_load_weights loads into a compiled model; refusals leave
 *      it untouched.
 * Then, on damaged bundles (every loader: read, mmap, in place, memory,
 * unpack, inspect, load_weights): truncation, a flipped byte in each
 * section, lengths past the end, overlapping sections, unknown version,
 * bad magic and more, each rejected with its own message; every single
 * byte of a small bundle flipped; random header and index values with
 * valid checksums. Run under AddressSanitizer, nothing is read out of
 * bounds.
 *
 * usage: test_bundle SOURCE_ROOT
 */
#include "tt_engine.h"
#include "tt_bundle.h"
#include "tt_test.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <zlib.h>

#define BU_BATCH 4

static char bu_root[1024];
static char bu_dir[600];

static const char bu_sgd_ini[] =
    "# sgd with momentum: no moments in the BIN\n"
    "[Model]\ntype = NeuralNetwork\nbatch_size = 8\nloss = mse\n"
    "[Optimizer]\ntype = sgd\nlearning_rate = 0.05\nmomentum = 0.9\n"
    "[in]\ntype = input\ninput_shape = 1:1:6\n"
    "[fc1]\ntype = fully_connected\nunit = 5\nactivation = tanh\n"
    "[bn]\ntype = batch_normalization\n"
    "[fc2]\ntype = fully_connected\nunit = 3\ndisable_bias = true\n";

typedef struct
{
  const char *name;
  const char *rel_path;         /* under the source root, or NULL */
  const char *ini;              /* inline text when rel_path is NULL */
  bool adam;
} bu_spec;

/* ---- files ----------------------------------------------------------- */

static unsigned char *
bu_slurp (const char *path, size_t *len)
{
  FILE *f = fopen (path, "rb");
  *len = 0;
  if (!f)
    return NULL;
  fseek (f, 0, SEEK_END);
  long size = ftell (f);
  fseek (f, 0, SEEK_SET);
  unsigned char *data = malloc ((size_t) size + 1);
  if (data && fread (data, 1, (size_t) size, f) != (size_t) size) {
    free (data);
    data = NULL;
  }
  fclose (f);
  if (data)
    *len = (size_t) size;
  return data;
}

static bool
bu_same_file (const char *a, const char *b)
{
  size_t la, lb;
  unsigned char *da = bu_slurp (a, &la), *db = bu_slurp (b, &lb);
  bool same = da && db && la == lb && memcmp (da, db, la) == 0;
  free (da);
  free (db);
  return same;
}

static char *
bu_path (const char *name)
{
  size_t len = strlen (bu_dir) + strlen (name) + 2;
  char *p = malloc (len);
  if (!p)
    exit (2);
  snprintf (p, len, "%s/%s", bu_dir, name);
  return p;
}

static char *
bu_write (const char *name, const void *data, size_t len)
{
  return strdup (tt_test_write_file (name, data, len));
}

static bool
bu_contains (const char *msg, const char *want)
{
  return strstr (msg, want) != NULL;
}

/* A copy of data at an address aligned to 4096 (+ shift). */
static unsigned char *
bu_aligned_copy (const void *data, size_t len, size_t shift, void **base)
{
  *base = aligned_alloc (4096, ((len + shift + 4096) / 4096) * 4096);
  unsigned char *p = (unsigned char *) *base + shift;
  if (len)
    memcpy (p, data, len);
  return p;
}

static int
bu_temporaries (void)
{
  int n = 0;
  DIR *d = opendir (bu_dir);
  if (!d)
    return -1;
  struct dirent *e;
  while ((e = readdir (d)))
    if (strstr (e->d_name, ".tmp"))
      n++;
  closedir (d);
  return n;
}

/* ---- the format, as docs/bundle.md describes it ---------------------- */

#define H_SECTION(i) (64 + 40 * (i))
enum
{ S_INI = 0, S_INDEX = 1, S_WEIGHTS = 2 };

static uint32_t
rd32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
      (uint32_t) p[3] << 24;
}

static uint64_t
rd64 (const unsigned char *p)
{
  return (uint64_t) rd32 (p) | (uint64_t) rd32 (p + 4) << 32;
}

static void
wr32 (unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char) (v >> (8 * i));
}

static void
wr64 (unsigned char *p, uint64_t v)
{
  wr32 (p, (uint32_t) v);
  wr32 (p + 4, (uint32_t) (v >> 32));
}

static void
fix_header (unsigned char *b)
{
  wr32 (b + 16, (uint32_t) crc32 (0, b + 24, 160));
}

static uint64_t
sec_off (const unsigned char *b, int i)
{
  return rd64 (b + H_SECTION (i) + 8);
}

static uint64_t
sec_len (const unsigned char *b, int i)
{
  return rd64 (b + H_SECTION (i) + 16);
}

/* recomputes section i's checksum, then the header's */
static void
fix_section (unsigned char *b, int i)
{
  wr32 (b + H_SECTION (i) + 32, (uint32_t) crc32 (0, b + sec_off (b, i),
          (uInt) sec_len (b, i)));
  fix_header (b);
}

/* ---- models ---------------------------------------------------------- */

static char *
bu_ini_path (const bu_spec * s)
{
  if (s->rel_path) {
    size_t len = strlen (bu_root) + strlen (s->rel_path) + 2;
    char *p = malloc (len);
    snprintf (p, len, "%s/%s", bu_root, s->rel_path);
    return p;
  }
  char name[64];
  snprintf (name, sizeof name, "%s.ini", s->name);
  return bu_write (name, s->ini, strlen (s->ini));
}

static tt_model *
bu_open_ini (const char *ini, const char *bin)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (ini, &err);
  CHECK (m != NULL, "%s: %s", ini, err.message);
  if (!m)
    return NULL;
  tt_model_set_seed (m, 42);
  tt_status st = tt_model_set_batch_size (m, BU_BATCH, &err);
  if (!st)
    st = tt_model_compile (m, &err);
  if (!st && bin)
    st = tt_model_load_bin (m, bin, &err);
  CHECK (st == TT_OK, "%s: %s", ini, err.message);
  if (st) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static tt_model *
bu_load (const char *path, tt_bundle_mode mode, bool trust)
{
  tt_bundle_load_options o = { 0 };
  o.mode = mode;
  o.trust = trust;
  o.has_seed = true;
  o.seed = 42;
  tt_error err;
  tt_model *m = tt_bundle_load (path, &o, &err);
  CHECK (m != NULL, "%s (mode %d): %s", path, (int) mode, err.message);
  return m;
}

static tt_model *
bu_load_memory (const void *data, size_t len, tt_bundle_mode mode)
{
  tt_bundle_load_options o = { 0 };
  o.mode = mode;
  o.has_seed = true;
  o.seed = 42;
  tt_error err;
  tt_model *m = tt_bundle_load_memory (data, len, "blob", &o, &err);
  CHECK (m != NULL, "memory (mode %d): %s", (int) mode, err.message);
  return m;
}

typedef struct
{
  float *x, *t;
  size_t nx, nt;
} bu_data;

static bu_data
bu_make_data (tt_model * m, unsigned salt)
{
  bu_data d;
  tt_shape in, out;
  tt_model_input_shape (m, 0, &in);
  out = tt_model_label_shape (m);
  d.nx = (size_t) (BU_BATCH) * in.channel * in.height * in.width;
  d.nt = (size_t) (BU_BATCH) * out.channel * out.height * out.width;
  d.x = malloc (d.nx * sizeof *d.x);
  d.t = calloc (d.nt, sizeof *d.t);
  uint32_t state = 2463534242u + salt;
  for (size_t i = 0; i < d.nx; i++) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    d.x[i] = (float) (state % 2001) / 1000.0f - 1.0f;
  }
  size_t k = d.nt / BU_BATCH;
  for (size_t b = 0; b < BU_BATCH; b++)
    d.t[b * k + (b * 7 + salt) % k] = 1.0f;
  return d;
}

static void
bu_free_data (bu_data * d)
{
  free (d->x);
  free (d->t);
}

static size_t
bu_out_count (tt_model * m)
{
  tt_shape out = tt_model_output_shape (m);
  return (size_t) (BU_BATCH) * out.channel * out.height * out.width;
}

static float *
bu_eval (tt_model * m, const bu_data * d)
{
  tt_error err;
  const void *inputs[1] = { d->x };
  tt_status st = tt_model_eval_batch (m, BU_BATCH, inputs, NULL, NULL, NULL,
      &err);
  CHECK (st == TT_OK, "eval: %s", err.message);
  size_t n = bu_out_count (m);
  float *y = malloc (n * sizeof *y);
  memcpy (y, tt_model_output (m), n * sizeof *y);
  return y;
}

static void
bu_train (tt_model * m, int steps, unsigned salt)
{
  tt_error err;
  for (int i = 0; i < steps; i++) {
    bu_data d = bu_make_data (m, salt + (unsigned) i);
    const void *inputs[1] = { d.x };
    tt_status st = tt_model_train_batch (m, BU_BATCH, inputs, NULL, d.t,
        NULL, &err);
    CHECK (st == TT_OK, "train: %s", err.message);
    bu_free_data (&d);
  }
}

/* The model's BIN, as bytes. */
static unsigned char *
bu_bin_of (tt_model * m, size_t *len)
{
  tt_error err;
  char *p = bu_path ("bin_of.bin");
  tt_status st = tt_model_save_bin (m, p, &err);
  CHECK (st == TT_OK, "save: %s", err.message);
  unsigned char *b = bu_slurp (p, len);
  unlink (p);
  free (p);
  return b;
}

/* ---- a. b. round trips ------------------------------------------------- */

static void
bu_pack_unpack (const bu_spec * s, const char *ini, const char *bin,
    const char *what, const tt_bundle_options * opt)
{
  tt_error err;
  char name[128];
  snprintf (name, sizeof name, "%s_%s.ttb", s->name, what);
  char *bundle = bu_path (name), *ini2 = bu_path ("unpacked.ini"),
      *bin2 = bu_path ("unpacked.bin"), *again = bu_path ("again.ttb");
  tt_status st = tt_bundle_pack (ini, bin, bundle, BU_BATCH, opt, &err);
  CHECK (st == TT_OK, "%s %s: pack: %s", s->name, what, err.message);
  st = tt_bundle_unpack (bundle, ini2, bin2, &err);
  CHECK (st == TT_OK, "%s %s: unpack: %s", s->name, what, err.message);
  CHECK (bu_same_file (ini, ini2), "%s %s: the INI changed in the round "
      "trip", s->name, what);
  CHECK (bu_same_file (bin, bin2), "%s %s: the BIN changed in the round "
      "trip", s->name, what);
  st = tt_bundle_pack (ini2, bin2, again, BU_BATCH, opt, &err);
  CHECK (st == TT_OK && bu_same_file (bundle, again), "%s %s: packing the "
      "unpacked files gives another bundle", s->name, what);
  /* the layout promised */
  tt_bundle_info info;
  st = tt_bundle_inspect (bundle, &info, &err);
  CHECK (st == TT_OK && info.checksums_ok, "%s %s: inspect: %s", s->name,
      what, err.message);
  if (st == TT_OK) {
    uint32_t align = opt && opt->alignment ? opt->alignment : 64;
    CHECK (info.alignment == align, "%s %s: alignment %u", s->name, what,
        info.alignment);
    const tt_bundle_section_info *w = &info.sections[S_WEIGHTS];
    CHECK (w->offset % align == 0, "%s %s: weights at %llu", s->name, what,
        (unsigned long long) w->offset);
    for (uint32_t i = 0; i < info.n_tensors; i++)
      CHECK (info.tensors[i].offset % align == 0, "%s %s: %s at %llu",
          s->name, what, info.tensors[i].name,
          (unsigned long long) info.tensors[i].offset);
    CHECK (((w->flags & TT_BUNDLE_SECTION_ZLIB) != 0) == (opt &&
            opt->compress), "%s %s: compression flag", s->name, what);
    tt_bundle_info_clear (&info);
  }
  unlink (ini2);
  unlink (bin2);
  unlink (again);
  free (ini2);
  free (bin2);
  free (again);
  free (bundle);
}

/* A trained model; INI and BIN saved; bundles p.ttb, pz.ttb, s.ttb made. */
typedef struct
{
  char *ini, *bin, *packed, *packed_z, *saved;
  size_t w_bytes;
} bu_files;

static void
bu_round_trips (const bu_spec * s, tt_model * m, bu_files * f)
{
  tt_error err;
  tt_status st;
  char name[128];
  snprintf (name, sizeof name, "%s.bin", s->name);
  f->bin = bu_path (name);
  st = tt_model_save_bin (m, f->bin, &err);
  CHECK (st == TT_OK, "%s: %s", s->name, err.message);
  size_t full_len;
  unsigned char *full = bu_slurp (f->bin, &full_len);
  tt_memory_info mi;
  tt_model_memory_info (m, &mi);
  f->w_bytes = mi.weight_bytes;

  /* every part a BIN may hold, every option */
  tt_bundle_options plain = { 0 }, z = { 0 }, page = { 0 }, small = { 0 };
  z.compress = true;
  page.alignment = 4096;
  small.alignment = 4;
  small.compress = true;
  small.level = 1;
  bu_pack_unpack (s, f->ini, f->bin, "full", &plain);
  bu_pack_unpack (s, f->ini, f->bin, "full_z", &z);
  bu_pack_unpack (s, f->ini, f->bin, "full_page", &page);
  bu_pack_unpack (s, f->ini, f->bin, "full_small", &small);
  bu_pack_unpack (s, f->ini, f->bin, "full_null", NULL);
  struct
  {
    const char *what;
    size_t len;
    bool adam_only;
  } parts[] = {
    {"weights", f->w_bytes, false},
    {"weights_counters", 0, false},
    {"weights_moments", full_len - 8, true},
  };
  parts[1].len = f->w_bytes + 8;
  unsigned char *v = malloc (full_len);
  for (size_t i = 0; i < 3 && full; i++) {
    if (parts[i].adam_only && !s->adam)
      continue;
    memcpy (v, full, parts[i].len);
    if (i == 1)
      memcpy (v + f->w_bytes, full + full_len - 8, 8);
    snprintf (name, sizeof name, "%s_%s.bin", s->name, parts[i].what);
    char *p = bu_write (name, v, parts[i].len);
    bu_pack_unpack (s, f->ini, p, parts[i].what, &plain);
    bu_pack_unpack (s, f->ini, p, parts[i].what, &z);
    unlink (p);
    free (p);
  }
  free (v);
  free (full);

  /* a BIN that does not fit is refused, and nothing written */
  {
    char *bad = bu_write ("short.bin", "abc", 3);
    char *out = bu_path ("never.ttb");
    st = tt_bundle_pack (f->ini, bad, out, BU_BATCH, NULL, &err);
    CHECK (st != TT_OK && bu_contains (err.message, "size 3 bytes"),
        "%s: a 3-byte BIN packed: %s", s->name, err.message);
    struct stat sb;
    CHECK (stat (out, &sb) != 0, "%s: a refused pack left a file", s->name);
    unlink (bad);
    free (bad);
    free (out);
  }

  snprintf (name, sizeof name, "%s_p.ttb", s->name);
  f->packed = bu_path (name);
  st = tt_bundle_pack (f->ini, f->bin, f->packed, BU_BATCH, NULL, &err);
  CHECK (st == TT_OK, "%s: %s", s->name, err.message);
  snprintf (name, sizeof name, "%s_pz.ttb", s->name);
  f->packed_z = bu_path (name);
  st = tt_bundle_pack (f->ini, f->bin, f->packed_z, BU_BATCH, &z, &err);
  CHECK (st == TT_OK, "%s: %s", s->name, err.message);

  /* b. tt_model_save by extension */
  snprintf (name, sizeof name, "%s_s.ttb", s->name);
  f->saved = bu_path (name);
  st = tt_model_save (m, f->saved, &err);
  CHECK (st == TT_OK && tt_bundle_is_bundle (f->saved), "%s: save .ttb: %s",
      s->name, err.message);
  const char *bundles[] = { "x.bundle", "x.TTB", "x.weights", "noext", NULL };
  for (int i = 0; bundles[i]; i++) {
    char *p = bu_path (bundles[i]);
    st = tt_model_save (m, p, &err);
    CHECK (st == TT_OK && tt_bundle_is_bundle (p) && bu_same_file (p,
            f->saved), "%s: save %s did not write the bundle: %s", s->name,
        bundles[i], err.message);
    unlink (p);
    free (p);
  }
  const char *bins[] = { "x.bin", "x.BIN", "dir.ttb/x.bin", NULL };
  char *dir = bu_path ("dir.ttb");
  mkdir (dir, 0700);
  for (int i = 0; bins[i]; i++) {
    char *p = bu_path (bins[i]);
    st = tt_model_save (m, p, &err);
    CHECK (st == TT_OK && bu_same_file (p, f->bin), "%s: save %s did not "
        "write the BIN: %s", s->name, bins[i], err.message);
    unlink (p);
    free (p);
  }
  rmdir (dir);
  free (dir);
  {
    char *p = bu_path ("x.ini");
    st = tt_model_save (m, p, &err);
    CHECK (st == TT_ERR_INVALID && bu_contains (err.message, ".ttb"),
        "%s: save .ini: status %d %s", s->name, (int) st, err.message);
    struct stat sb;
    CHECK (stat (p, &sb) != 0, "%s: save .ini wrote a file", s->name);
    free (p);
  }
  /* the saved bundle holds the optimized INI and the BIN */
  {
    char *plan = bu_path ("plan.opt.ini"), *ini2 = bu_path ("saved.ini"),
        *bin2 = bu_path ("saved.bin");
    st = tt_model_save_plan_ini (m, plan, &err);
    CHECK (st == TT_OK, "%s: %s", s->name, err.message);
    st = tt_bundle_unpack (f->saved, ini2, bin2, &err);
    CHECK (st == TT_OK, "%s: %s", s->name, err.message);
    CHECK (bu_same_file (plan, ini2), "%s: the saved bundle's INI is not "
        "the optimized INI", s->name);
    CHECK (bu_same_file (f->bin, bin2), "%s: the saved bundle's weights are "
        "not the model's BIN", s->name);
    char *text;
    size_t len, plan_len;
    unsigned char *plan_bytes = bu_slurp (plan, &plan_len);
    st = tt_plan_ini_text (m, &text, &len, &err);
    CHECK (st == TT_OK && plan_bytes && len == plan_len &&
        !memcmp (text, plan_bytes, len), "%s: tt_plan_ini_text differs from "
        "the file", s->name);
    free (text);
    free (plan_bytes);
    unlink (plan);
    unlink (ini2);
    unlink (bin2);
    free (plan);
    free (ini2);
    free (bin2);
  }
  CHECK (bu_temporaries () == 0, "%s: temporary files left", s->name);
}

/* ---- c. d. loading ------------------------------------------------------ */

static void
bu_loading (const bu_spec * s, tt_model * ref, bu_files * f)
{
  tt_error err;
  bu_data d = bu_make_data (ref, 77);
  const size_t n_out = bu_out_count (ref);
  float *want = bu_eval (ref, &d);
  size_t ref_bin_len;
  unsigned char *ref_bin = bu_bin_of (ref, &ref_bin_len);

  size_t blob_len, blobz_len;
  unsigned char *blob = bu_slurp (f->packed, &blob_len);
  unsigned char *blobz = bu_slurp (f->packed_z, &blobz_len);
  void *base;
  unsigned char *aligned = bu_aligned_copy (blob, blob_len, 0, &base);

  /* d. every way of opening gives the same outputs */
  struct
  {
    const char *what;
    tt_model *m;
    bool in_place;
  } opened[] = {
    {"read", bu_load (f->packed, TT_BUNDLE_READ, false), false},
    {"mmap", bu_load (f->packed, TT_BUNDLE_MMAP, false), false},
    {"in_place", bu_load (f->packed, TT_BUNDLE_IN_PLACE, false), true},
    {"in_place_trusted", bu_load (f->packed, TT_BUNDLE_IN_PLACE, true), true},
    {"read_trusted", bu_load (f->packed, TT_BUNDLE_READ, true), false},
    {"z_read", bu_load (f->packed_z, TT_BUNDLE_READ, false), false},
    {"z_mmap", bu_load (f->packed_z, TT_BUNDLE_MMAP, false), false},
    {"saved", bu_load (f->saved, TT_BUNDLE_READ, false), false},
    {"saved_in_place", bu_load (f->saved, TT_BUNDLE_IN_PLACE, false), true},
    {"memory", bu_load_memory (blob, blob_len, TT_BUNDLE_READ), false},
    {"memory_z", bu_load_memory (blobz, blobz_len, TT_BUNDLE_MMAP), false},
    {"memory_in_place", bu_load_memory (aligned, blob_len,
            TT_BUNDLE_IN_PLACE), true},
  };
  const size_t n_opened = sizeof opened / sizeof opened[0];
  for (size_t i = 0; i < n_opened; i++) {
    tt_model *m = opened[i].m;
    if (!m)
      continue;
    CHECK (tt_model_batch_size (m) == BU_BATCH, "%s %s: batch %u", s->name,
        opened[i].what, tt_model_batch_size (m));
    float *y = bu_eval (m, &d);
    CHECK (memcmp (y, want, n_out * sizeof *y) == 0, "%s %s: outputs differ "
        "from the INI + BIN model's", s->name, opened[i].what);
    free (y);
    size_t len;
    unsigned char *b = bu_bin_of (m, &len);
    CHECK (b && len == ref_bin_len && !memcmp (b, ref_bin, len),
        "%s %s: weights, moments or counters differ", s->name, opened[i].what);
    free (b);
    if (!opened[i].in_place)
      continue;
    /* evaluation only, said clearly */
    const void *inputs[1] = { d.x };
    tt_status st = tt_model_train_batch (m, BU_BATCH, inputs, NULL, d.t,
        NULL, &err);
    CHECK (st == TT_ERR_STATE && bu_contains (err.message, "in place") &&
        bu_contains (err.message, "evaluation only"), "%s %s: training in "
        "place: status %d: %s", s->name, opened[i].what, (int) st, err.message);
    st = tt_model_load_bin (m, f->bin, &err);
    CHECK (st == TT_ERR_STATE && bu_contains (err.message, "in place"),
        "%s %s: load_bin in place: %s", s->name, opened[i].what, err.message);
    st = tt_model_load_bin_memory (m, ref_bin, ref_bin_len, "x", &err);
    CHECK (st == TT_ERR_STATE, "%s %s: load_bin_memory in place",
        s->name, opened[i].what);
    st = tt_bundle_load_weights (m, f->packed, &err);
    CHECK (st == TT_ERR_STATE, "%s %s: load_weights in place", s->name,
        opened[i].what);
    st = tt_model_init_weights (m, &err);
    CHECK (st == TT_ERR_STATE && bu_contains (err.message, "in place"),
        "%s %s: init in place: %s", s->name, opened[i].what, err.message);
    /* still evaluates, unchanged */
    y = bu_eval (m, &d);
    CHECK (memcmp (y, want, n_out * sizeof *y) == 0, "%s %s: outputs changed "
        "after the refusals", s->name, opened[i].what);
    free (y);
  }

  /* the weights used in place are the blob's own bytes */
  if (opened[11].m) {
    const size_t w_at = rd64 (aligned + H_SECTION (S_WEIGHTS) + 8);
    float saved, big = 1000.0f;
    memcpy (&saved, aligned + w_at, 4);
    memcpy (aligned + w_at, &big, 4);
    float *y = bu_eval (opened[11].m, &d);
    CHECK (memcmp (y, want, n_out * sizeof *y) != 0, "%s: writing the blob "
        "did not change the in-place model's outputs", s->name);
    free (y);
    memcpy (aligned + w_at, &saved, 4);
    y = bu_eval (opened[11].m, &d);
    CHECK (memcmp (y, want, n_out * sizeof *y) == 0, "%s: in place outputs "
        "not restored", s->name);
    free (y);
  }

  /* c. bit-identical training from every copy mode, and from INI + BIN
   * (a fresh model: dropout's generator starts where the loaded ones'
   * do) */
  tt_model *fresh = bu_open_ini (f->ini, f->bin);
  size_t trained_len = 0;
  unsigned char *trained = NULL;
  if (fresh) {
    bu_train (fresh, 3, 500);
    trained = bu_bin_of (fresh, &trained_len);
    tt_model_free (fresh);
  }
  for (size_t i = 0; i < n_opened; i++) {
    if (!opened[i].m || opened[i].in_place)
      continue;
    bu_train (opened[i].m, 3, 500);
    size_t len;
    unsigned char *b = bu_bin_of (opened[i].m, &len);
    CHECK (b && len == trained_len && !memcmp (b, trained, len),
        "%s %s: training gives other weights than the INI + BIN model",
        s->name, opened[i].what);
    free (b);
  }
  free (trained);
  for (size_t i = 0; i < n_opened; i++)
    tt_model_free (opened[i].m);

  /* in place needs an uncompressed, aligned blob */
  {
    tt_bundle_load_options o = { 0 };
    o.mode = TT_BUNDLE_IN_PLACE;
    tt_model *m = tt_bundle_load (f->packed_z, &o, &err);
    CHECK (!m && bu_contains (err.message, "compressed") &&
        bu_contains (err.message, f->packed_z), "%s: compressed in place: "
        "%s", s->name, m ? "accepted" : err.message);
    tt_model_free (m);
    void *base2;
    unsigned char *off = bu_aligned_copy (blob, blob_len, 16, &base2);
    m = tt_bundle_load_memory (off, blob_len, "shifted", &o, &err);
    CHECK (!m && bu_contains (err.message, "aligned"), "%s: misaligned in "
        "place: %s", s->name, m ? "accepted" : err.message);
    tt_model_free (m);
    o.mode = TT_BUNDLE_READ;
    m = tt_bundle_load_memory (off, blob_len, "shifted", &o, &err);
    CHECK (m != NULL, "%s: misaligned copy: %s", s->name, err.message);
    tt_model_free (m);
    free (base2);
  }

  /* another batch size: a stored plan is then stale unless re-planned */
  {
    tt_bundle_load_options o = { 0 };
    o.batch_size = 2 * BU_BATCH;
    tt_model *m = tt_bundle_load (f->saved, &o, &err);
    CHECK (!m && bu_contains (err.message, "stale"), "%s: batch %u with a "
        "plan for %u: %s", s->name, o.batch_size, BU_BATCH,
        m ? "accepted" : err.message);
    tt_model_free (m);
    o.plan_mode = TT_PLAN_REPLAN;
    m = tt_bundle_load (f->saved, &o, &err);
    CHECK (m && tt_model_batch_size (m) == 2 * BU_BATCH, "%s: replanned: "
        "%s", s->name, err.message);
    tt_model_free (m);
  }

  free (base);
  free (blob);
  free (blobz);
  free (ref_bin);
  free (want);
  bu_free_data (&d);
}

/* ---- e. f. weights into a compiled model ------------------------------- */

static void
bu_weights_into (const bu_spec * s, const bu_files * f)
{
  tt_error err;
  size_t bin_len;
  unsigned char *bin = bu_slurp (f->bin, &bin_len);
  tt_model *a = bu_open_ini (f->ini, f->bin);
  tt_model *b = bu_open_ini (f->ini, NULL);
  tt_model *c = bu_open_ini (f->ini, NULL);
  if (!a || !b || !c || !bin)
    goto out;
  /* from memory, at an odd address */
  void *base;
  unsigned char *odd = bu_aligned_copy (bin, bin_len, 1, &base);
  tt_status st = tt_model_load_bin_memory (b, odd, bin_len, "odd", &err);
  CHECK (st == TT_OK, "%s: load_bin_memory: %s", s->name, err.message);
  size_t la, lb;
  unsigned char *ba = bu_bin_of (a, &la), *bb = bu_bin_of (b, &lb);
  CHECK (ba && bb && la == lb && !memcmp (ba, bb, la), "%s: memory load "
      "differs from the file load", s->name);
  free (bb);
  /* refusals: the model stays as it is */
  unsigned char *v = malloc (bin_len + 8);
  struct
  {
    const char *what, *expect;
    size_t len;
    size_t poke;                /* byte offset of a NaN, or SIZE_MAX */
  } bad[] = {
    {"empty", "size 0 bytes", 0, SIZE_MAX},
    {"short", "does not fit", bin_len - 1, SIZE_MAX},
    {"long", "does not fit", bin_len + 4, SIZE_MAX},
    {"nan_first", "non-finite", bin_len, 0},
    {"nan_last_weight", "non-finite", bin_len, f->w_bytes - 4},
    {"tag", "'adam'", bin_len, SIZE_MAX - 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (bad[i].poke == SIZE_MAX - 1 && !s->adam)
      continue;
    memset (v, 0, bin_len + 8);
    memcpy (v, bin, bin_len);
    if (bad[i].poke == SIZE_MAX - 1)
      memcpy (v + f->w_bytes, "adan", 4);
    else if (bad[i].poke != SIZE_MAX) {
      const float nan_value = NAN;
      memcpy (v + bad[i].poke, &nan_value, 4);
    }
    st = tt_model_load_bin_memory (c, v, bad[i].len, "bad_blob", &err);
    CHECK (st != TT_OK && bu_contains (err.message, bad[i].expect) &&
        bu_contains (err.message, "bad_blob"), "%s %s: %s", s->name,
        bad[i].what, st ? err.message : "accepted");
    size_t lc;
    unsigned char *bc = bu_bin_of (c, &lc);
    tt_model *fresh = bu_open_ini (f->ini, NULL);
    size_t lf;
    unsigned char *bf = fresh ? bu_bin_of (fresh, &lf) : NULL;
    CHECK (bc && bf && lc == lf && !memcmp (bc, bf, lc), "%s %s: the "
        "refused load changed the model", s->name, bad[i].what);
    free (bc);
    free (bf);
    tt_model_free (fresh);
  }
  free (v);
  free (base);

  /* f. a bundle's weights into a compiled model */
  st = tt_bundle_load_weights (c, f->packed_z, &err);
  CHECK (st == TT_OK, "%s: load_weights: %s", s->name, err.message);
  size_t lc;
  unsigned char *bc = bu_bin_of (c, &lc);
  CHECK (bc && lc == la && !memcmp (bc, ba, la), "%s: load_weights differs",
      s->name);
  free (bc);
  free (ba);
out:
  free (bin);
  tt_model_free (a);
  tt_model_free (b);
  tt_model_free (c);
}

/* ---- damaged bundles ---------------------------------------------------- */

typedef enum
{
  BAD_STRUCTURE,                /* inspect fails too */
  BAD_CHECKSUM,                 /* inspect reports it; loads fail */
  BAD_DATA,                     /* sound header and checksums, bad
                                 * compressed stream: unpack fails too */
  BAD_MODEL,                    /* a sound file that does not fit or holds
                                 * non-finite values: unpack accepts it */
} bu_bad_kind;

static int bu_cases;

/* Every loader must refuse data with a message holding expect. */
static void
bu_refused (const char *what, const unsigned char *data, size_t len,
    const char *expect, bu_bad_kind kind, bool compressed, const char *ini,
    const char *good)
{
  tt_error err;
  char name[96];
  bu_cases++;
  snprintf (name, sizeof name, "bad_%s.ttb", what);
  char *path = bu_write (name, data, len);
  if (getenv ("TT_TEST_VERBOSE")) {
    tt_bundle_load_options o = { 0 };
    tt_model *m = tt_bundle_load (path, &o, &err);
    printf ("  %-28s %s\n", what, m ? "ACCEPTED" : err.message);
    tt_model_free (m);
  }
  const tt_bundle_mode modes[] = { TT_BUNDLE_READ, TT_BUNDLE_MMAP,
    TT_BUNDLE_IN_PLACE
  };
  for (int trust = 0; trust < 2; trust++)
    for (int i = 0; i < 3; i++) {
      if (i == 2 && compressed)
        continue;
      /* trusted loads skip the weight checksum and finiteness only */
      if (trust && (bu_contains (expect, "section weights: checksum") ||
              bu_contains (expect, "non-finite")))
        continue;
      tt_bundle_load_options o = { 0 };
      o.mode = modes[i];
      o.trust = trust;
      tt_model *m = tt_bundle_load (path, &o, &err);
      CHECK (!m, "%s: accepted (mode %d)", what, i);
      /* the message names the file, then says what is wrong */
      const char *rest = strstr (err.message, path);
      if (!m)
        CHECK (rest && bu_contains (rest + strlen (path), expect),
            "%s (mode %d): expected the path, then \"%s\" in: %s", what, i,
            expect, err.message);
      tt_model_free (m);
    }
  for (int i = 0; i < 3; i++) {
    if (i == 2 && compressed)
      continue;
    void *base;
    unsigned char *copy = bu_aligned_copy (data, len, 0, &base);
    tt_bundle_load_options o = { 0 };
    o.mode = modes[i];
    tt_model *m = tt_bundle_load_memory (copy, len, "blob", &o, &err);
    CHECK (!m, "%s: accepted from memory (mode %d)", what, i);
    if (!m)
      CHECK (bu_contains (err.message, expect), "%s (memory %d): expected "
          "\"%s\" in: %s", what, i, expect, err.message);
    tt_model_free (m);
    free (base);
  }
  /* format-level tools */
  char *ini2 = bu_path ("refused.ini"), *bin2 = bu_path ("refused.bin");
  tt_status st = tt_bundle_unpack (path, ini2, bin2, &err);
  const char *after_path = strstr (err.message, path);
  after_path = after_path ? after_path + strlen (path) : err.message;
  if (kind == BAD_MODEL) {
    CHECK (st == TT_OK, "%s: unpack refused a sound file: %s", what,
        err.message);
  } else {
    CHECK (st != TT_OK && bu_contains (after_path, expect), "%s: unpack: "
        "%s", what, st ? err.message : "accepted");
    struct stat sb;
    CHECK (stat (ini2, &sb) != 0 && stat (bin2, &sb) != 0, "%s: a refused "
        "unpack wrote files", what);
  }
  unlink (ini2);
  unlink (bin2);
  free (ini2);
  free (bin2);
  tt_bundle_info info;
  st = tt_bundle_inspect (path, &info, &err);
  after_path = strstr (err.message, path);
  after_path = after_path ? after_path + strlen (path) : err.message;
  if (kind == BAD_STRUCTURE)
    CHECK (st != TT_OK && bu_contains (after_path, expect), "%s: inspect: "
        "%s", what, st ? err.message : "accepted");
  else
    CHECK (st == TT_OK && info.checksums_ok == (kind != BAD_CHECKSUM),
        "%s: inspect: status %d, checksums_ok %d", what, (int) st,
        st ? 0 : (int) info.checksums_ok);
  if (st == TT_OK)
    tt_bundle_info_clear (&info);
  /* into a compiled model: refused, the model untouched */
  tt_model *m = bu_open_ini (ini, NULL);
  if (m) {
    st = tt_bundle_load_weights (m, good, &err);
    CHECK (st == TT_OK, "%s: %s", what, err.message);
    size_t la, lb;
    unsigned char *before = bu_bin_of (m, &la);
    st = tt_bundle_load_weights (m, path, &err);
    CHECK (st != TT_OK, "%s: load_weights accepted it", what);
    after_path = strstr (err.message, path);
    after_path = after_path ? after_path + strlen (path) : err.message;
    if (st)
      CHECK (bu_contains (after_path, expect) || kind == BAD_STRUCTURE,
          "%s: load_weights: expected \"%s\" in: %s", what, expect,
          err.message);
    unsigned char *after = bu_bin_of (m, &lb);
    CHECK (before && after && la == lb && !memcmp (before, after, la),
        "%s: a refused load_weights changed the model", what);
    free (before);
    free (after);
    tt_model_free (m);
  }
  unlink (path);
  free (path);
}

static void
bu_damage (const bu_spec * s, const bu_files * f, const char *bundle_path,
    bool compressed)
{
  size_t len;
  unsigned char *good = bu_slurp (bundle_path, &len);
  if (!good)
    return;
  unsigned char *v = malloc (len + 8);
  char what[96];
  const char *ini = f->ini;
#define RESET() memcpy (v, good, len)
#define REFUSE(tag, n, expect, kind) do {                                  \
    snprintf (what, sizeof what, "%s%s_%s", s->name, compressed ? "_z" : "", \
        tag);                                                             \
    bu_refused (what, v, n, expect, kind, compressed, ini, bundle_path);  \
  } while (0)

  /* truncation, at every kind of place */
  const size_t cuts[] = { 0, 5, 8, 23, 24, 100, 183, 184, 200,
    (size_t) sec_off (good, S_INDEX) + 1, (size_t) sec_off (good, S_WEIGHTS),
    len / 2 + 1, len - 1
  };
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    RESET ();
    char tag[32];
    snprintf (tag, sizeof tag, "cut%zu", cuts[i]);
    REFUSE (tag, cuts[i], cuts[i] >= 24 && cuts[i] < 184 ? "runs past the "
        "end" : cuts[i] == 5 || cuts[i] == 0 ? "truncated" :
        cuts[i] < 24 ? "truncated" : "truncated", BAD_STRUCTURE);
  }
  /* a flipped byte in each section, and in the preamble */
  struct
  {
    const char *tag;
    size_t at;
    const char *expect;
    bu_bad_kind kind;
  } flips[] = {
    {"magic", 1, "bad magic", BAD_STRUCTURE},
    {"version", 8, "format version", BAD_STRUCTURE},
    {"header_crc", 17, "header checksum mismatch", BAD_STRUCTURE},
    {"reserved", 21, "reserved", BAD_STRUCTURE},
    {"header_first", 24, "header checksum mismatch", BAD_STRUCTURE},
    {"header_table", 64 + 40 + 9, "header checksum mismatch", BAD_STRUCTURE},
    {"header_last", 183, "header checksum mismatch", BAD_STRUCTURE},
    {"ini", (size_t) (sec_off (good, S_INI) + sec_len (good, S_INI) / 2),
        "section ini: checksum mismatch", BAD_CHECKSUM},
    {"index", (size_t) (sec_off (good, S_INDEX) + 3),
        "section index: checksum mismatch", BAD_CHECKSUM},
    {"weights_first", (size_t) sec_off (good, S_WEIGHTS),
        "section weights: checksum mismatch", BAD_CHECKSUM},
    {"weights_middle", (size_t) (sec_off (good, S_WEIGHTS) +
              sec_len (good, S_WEIGHTS) / 2),
        "section weights: checksum mismatch", BAD_CHECKSUM},
    {"weights_last", len - 1, "section weights: checksum mismatch",
        BAD_CHECKSUM},
  };
  for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
    RESET ();
    v[flips[i].at] ^= 0x40;
    REFUSE (flips[i].tag, len, flips[i].expect, flips[i].kind);
  }
  /* a flipped byte of padding between sections */
  {
    uint64_t pad_at = sec_off (good, S_INI) + sec_len (good, S_INI);
    if (pad_at < sec_off (good, S_INDEX)) {
      RESET ();
      v[pad_at] = 1;
      REFUSE ("padding", len, "padding before section index", BAD_STRUCTURE);
    }
  }
  /* lengths past the end */
  RESET ();
  wr32 (v + 12, 0x7fffffff);
  REFUSE ("header_len", len, "header length 2147483647 runs past the end",
      BAD_STRUCTURE);
  RESET ();
  wr32 (v + 12, 100);
  REFUSE ("header_len_short", len, "header checksum mismatch", BAD_STRUCTURE);
  RESET ();
  wr64 (v + H_SECTION (S_WEIGHTS) + 16, sec_len (good, S_WEIGHTS) + 1);
  fix_header (v);
  REFUSE ("weights_len", len, "section weights: ", BAD_STRUCTURE);
  RESET ();
  wr64 (v + H_SECTION (S_INI) + 16, UINT64_MAX - 8);
  wr64 (v + H_SECTION (S_INI) + 24, UINT64_MAX - 8);
  fix_header (v);
  REFUSE ("ini_len_huge", len, "run past the end of the bundle", BAD_STRUCTURE);
  RESET ();
  wr64 (v + H_SECTION (S_INDEX) + 8, len + 64);
  fix_header (v);
  REFUSE ("index_off", len, "run past the end of the bundle", BAD_STRUCTURE);
  RESET ();
  wr64 (v + 24, len + 1);
  fix_header (v);
  REFUSE ("file_size", len, "truncated: the header records", BAD_STRUCTURE);
  RESET ();
  v[len] = 0;
  REFUSE ("trailing", len + 1, "trailing data", BAD_STRUCTURE);
  /* overlapping sections */
  RESET ();
  wr64 (v + H_SECTION (S_INDEX) + 8, sec_off (good, S_INI) + 8);
  fix_header (v);
  REFUSE ("overlap", len, "overlap", BAD_STRUCTURE);
  RESET ();
  wr64 (v + H_SECTION (S_INDEX) + 16, sec_len (good, S_INDEX) + 64);
  wr64 (v + H_SECTION (S_INDEX) + 24, sec_len (good, S_INDEX) + 64);
  fix_header (v);
  REFUSE ("overlap_weights", len, "overlap", BAD_STRUCTURE);
  RESET ();
  wr64 (v + H_SECTION (S_INI) + 8, 100);
  fix_header (v);
  REFUSE ("inside_header", len, "inside the header", BAD_STRUCTURE);
  /* version, magic */
  RESET ();
  wr32 (v + 8, 2);
  REFUSE ("version2", len, "format version 2 is not one this engine reads",
      BAD_STRUCTURE);
  RESET ();
  memcpy (v, "[Model]\n", 8);
  REFUSE ("ini_magic", len, "bad magic", BAD_STRUCTURE);
  /* header values, checksum fixed */
  struct
  {
    const char *tag;
    size_t at;
    uint32_t value;
    const char *expect;
  } fields[] = {
    {"sections4", 36, 4, "lists 4 sections"},
    {"align3", 32, 3, "alignment 3 is not a power of two"},
    {"align_huge", 32, 1u << 20, "alignment 1048576"},
    {"flags", 40, 1, "unknown header flags"},
    {"wflags", 48, 8, "unknown weight flags"},
    {"batch", 44, 1u << 20, "batch size"},
    {"tensors_many", 60, 1u << 21, "tensors, more than"},
    {"tensors_more", 60, 0, "tensors end at"},
    {"type", H_SECTION (S_INI), 9, "unknown type 9"},
    {"type_dup", H_SECTION (S_INDEX), TT_BUNDLE_SECTION_INI, "two ini"},
    {"sec_flags", H_SECTION (S_WEIGHTS) + 4, 6, "unknown flags"},
    {"ini_zlib", H_SECTION (S_INI) + 4, 1, "only the weight section"},
    {"sec_reserved", H_SECTION (S_INI) + 36, 1, "reserved"},
    {"weights_misaligned", H_SECTION (S_WEIGHTS) + 8,
        (uint32_t) sec_off (good, S_WEIGHTS) - 4, "not a multiple of the "
          "alignment"},
  };
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    RESET ();
    wr32 (v + fields[i].at, fields[i].value);
    fix_header (v);
    REFUSE (fields[i].tag, len, fields[i].expect, BAD_STRUCTURE);
  }
  if (!compressed) {
    RESET ();
    wr64 (v + H_SECTION (S_WEIGHTS) + 24, sec_len (good, S_WEIGHTS) + 4);
    fix_header (v);
    REFUSE ("raw_len", len, "raw length", BAD_STRUCTURE);
  }
  /* index entries, checksums fixed */
  const uint64_t ix = sec_off (good, S_INDEX);
  const uint32_t nt = rd32 (good + 60);
  struct
  {
    const char *tag;
    size_t at;                  /* in entry 1 */
    uint64_t value;
    bool wide;
    const char *expect;
  } entries[] = {
    {"entry_offset", 0, 12, true, "expected"},
    {"entry_bytes", 8, 1ull << 40, true, "run past the end of the weight"},
    {"entry_bytes_odd", 8, 6, true, "whole number of floats"},
    {"entry_name_off", 16, 1u << 30, false, "outside"},
    {"entry_name_len", 20, 0, false, "outside"},
    {"entry_kind", 24, 7, false, "unknown kind"},
    {"entry_reserved", 28, 1, false, "reserved"},
  };
  for (size_t i = 0; i < sizeof entries / sizeof entries[0] && nt > 1; i++) {
    RESET ();
    unsigned char *e = v + ix + 32 + entries[i].at;
    if (entries[i].wide)
      wr64 (e, entries[i].value);
    else
      wr32 (e, (uint32_t) entries[i].value);
    fix_section (v, S_INDEX);
    REFUSE (entries[i].tag, len, entries[i].expect, BAD_STRUCTURE);
  }
  /* a sound file for another model: a renamed tensor */
  if (nt > 0) {
    RESET ();
    uint32_t name_off = rd32 (v + ix + 16);
    v[ix + (uint64_t) nt * 32 + name_off] ^= 0x20;
    fix_section (v, S_INDEX);
    REFUSE ("renamed", len, "in the bundle but", BAD_MODEL);
  }
  /* moments claimed by a bundle without, and the reverse */
  if (!s->adam) {
    RESET ();
    wr32 (v + 48, rd32 (v + 48) | 1);
    fix_header (v);
    REFUSE ("moments_claimed", len, "optimizer keeps none", BAD_MODEL);
  }
  /* a NaN with every checksum right */
  if (!compressed) {
    RESET ();
    const float nan_value = NAN;
    memcpy (v + sec_off (good, S_WEIGHTS) + 4, &nan_value, 4);
    fix_section (v, S_WEIGHTS);
    REFUSE ("nan", len, "non-finite", BAD_MODEL);
  } else {
    /* compressed data cut short, or followed by junk, checksums right */
    RESET ();
    wr64 (v + H_SECTION (S_WEIGHTS) + 16, sec_len (good, S_WEIGHTS) - 3);
    wr64 (v + 24, len - 3);
    fix_section (v, S_WEIGHTS);
    REFUSE ("z_short", len - 3, "section weights", BAD_DATA);
    RESET ();
    memset (v + len, 0x55, 8);
    wr64 (v + H_SECTION (S_WEIGHTS) + 16, sec_len (good, S_WEIGHTS) + 8);
    wr64 (v + 24, len + 8);
    fix_section (v, S_WEIGHTS);
    REFUSE ("z_junk", len + 8, "after the end of the compressed data",
        BAD_DATA);
    RESET ();
    wr64 (v + H_SECTION (S_WEIGHTS) + 24, rd64 (v + H_SECTION (S_WEIGHTS) +
            24) + 64);
    fix_header (v);
    REFUSE ("z_raw_len", len, "tensors end at", BAD_STRUCTURE);
  }
#undef REFUSE
#undef RESET
  free (v);
  free (good);
}

/* Every single byte of a small bundle flipped: always refused (every byte
 * is covered by a checksum or is padding that must be zero). */
static void
bu_every_byte (const char *bundle_path)
{
  size_t len;
  unsigned char *good = bu_slurp (bundle_path, &len);
  void *base;
  unsigned char *v = bu_aligned_copy (good, len, 0, &base);
  int accepted = 0;
  for (size_t i = 0; i < len; i++) {
    for (int mode = 0; mode < 2; mode++) {
      v[i] ^= (unsigned char) (1u << (i % 8));
      tt_bundle_load_options o = { 0 };
      o.mode = mode ? TT_BUNDLE_IN_PLACE : TT_BUNDLE_READ;
      tt_error err;
      tt_model *m = tt_bundle_load_memory (v, len, "flip", &o, &err);
      if (m) {
        accepted++;
        if (accepted < 5)
          printf ("flip at byte %zu accepted\n", i);
      }
      tt_model_free (m);
      v[i] = good[i];
    }
  }
  CHECK (accepted == 0, "%d of %zu single-byte flips accepted", accepted,
      2 * len);
  free (base);
  free (good);
}

/* Random header and index values, checksums fixed: never a crash, never
 * an out-of-bounds read (AddressSanitizer watches). */
static void
bu_fuzz (const char *bundle_path, int rounds)
{
  size_t len;
  unsigned char *good = bu_slurp (bundle_path, &len);
  unsigned char *v = malloc (len);
  uint64_t state = 0x9e3779b97f4a7c15ull;
  const uint64_t interesting[] = { 0, 1, 4, 7, 8, 63, 64, 65, 184, 4096,
    len - 1, len, len + 1, UINT32_MAX, (uint64_t) UINT32_MAX + 1,
    UINT64_MAX / 2, UINT64_MAX - 63, UINT64_MAX
  };
  const size_t ni = sizeof interesting / sizeof interesting[0];
  int accepted = 0;
  const uint64_t ix = sec_off (good, S_INDEX), ixl = sec_len (good, S_INDEX);
  for (int r = 0; r < rounds; r++) {
    memcpy (v, good, len);
    int edits = 1 + (int) (state % 3);
    bool in_index = false;
    for (int e = 0; e < edits; e++) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t x = state >> 11;
      bool index = ixl > 8 && (x & 1);
      uint64_t span = index ? ixl - 8 : 160 - 8;
      size_t at = (size_t) ((index ? ix : 24) + (x >> 1) % span);
      uint64_t val = (x >> 20) & 1 ? interesting[(x >> 24) % ni] :
          v[at] ^ (1ull << ((x >> 30) % 64));
      if ((x >> 40) & 1)
        wr64 (v + at, val);
      else
        wr32 (v + at, (uint32_t) val);
      in_index |= index;
    }
    /* the checksum of the index where it really lies (the table's values
     * may be anything now) */
    if (in_index)
      wr32 (v + H_SECTION (S_INDEX) + 32, (uint32_t) crc32 (0, v + ix,
              (uInt) ixl));
    fix_header (v);
    for (int mode = 0; mode < 3; mode++) {
      tt_bundle_load_options o = { 0 };
      o.mode = (tt_bundle_mode) mode;
      tt_error err;
      void *base;
      unsigned char *a = bu_aligned_copy (v, len, 0, &base);
      tt_model *m = tt_bundle_load_memory (a, len, "fuzz", &o, &err);
      if (m) {
        accepted++;
        /* whatever was accepted must evaluate */
        bu_data d = bu_make_data (m, 3);
        if (tt_model_batch_size (m) == BU_BATCH) {
          float *y = bu_eval (m, &d);
          free (y);
        }
        bu_free_data (&d);
      }
      tt_model_free (m);
      tt_bundle_info info;
      if (tt_bundle_inspect_memory (a, len, "fuzz", &info, &err) == TT_OK)
        tt_bundle_info_clear (&info);
      free (base);
    }
  }
  printf ("fuzz: %d rounds, %d loads accepted (values that change nothing "
      "that is checked, e.g. counters)\n", rounds, accepted);
  free (v);
  free (good);
}

/* ---- per model ----------------------------------------------------------- */

static void
bu_model (const bu_spec * s, bool damage)
{
  printf ("model %s\n", s->name);
  bu_files f = { 0 };
  f.ini = bu_ini_path (s);
  tt_model *m = bu_open_ini (f.ini, NULL);
  if (!m) {
    free (f.ini);
    return;
  }
  bu_train (m, 3, 1);
  tt_model_finish_epoch (m);
  bu_round_trips (s, m, &f);
  bu_loading (s, m, &f);
  bu_weights_into (s, &f);
  if (damage) {
    bu_damage (s, &f, f.packed, false);
    bu_damage (s, &f, f.packed_z, true);
  }
  tt_model_free (m);
  if (damage && !s->adam) {
    bu_every_byte (f.packed);
    bu_every_byte (f.packed_z);
  }
  if (damage) {
    bu_fuzz (f.packed, 1500);
    bu_fuzz (f.packed_z, 500);
  }
  unlink (f.bin);
  unlink (f.packed);
  unlink (f.packed_z);
  unlink (f.saved);
  if (!s->rel_path)
    unlink (f.ini);
  free (f.ini);
  free (f.bin);
  free (f.packed);
  free (f.packed_z);
  free (f.saved);
}

/* one case per model; the damaged bundles are made from the first two */
static const bu_spec bu_specs[] = {
  {"sgd", NULL, bu_sgd_ini, false},
  {"branchy_bn", "tests/models/branchy_bn.ini", NULL, true},
  {"mlp", "tests/models/fmnist_mlp.ini", NULL, true},
  {"transfer_frozen", "tests/models/transfer_frozen.ini", NULL, true},
};

static void
test_sgd (void)
{
  bu_model (&bu_specs[0], true);
}

static void
test_branchy_bn (void)
{
  bu_model (&bu_specs[1], true);
}

static void
test_mlp (void)
{
  bu_model (&bu_specs[2], false);
}

static void
test_transfer_frozen (void)
{
  bu_model (&bu_specs[3], false);
}

int
main (int argc, char **argv)
{
  snprintf (bu_root, sizeof bu_root, "%s", argc > 1 ? argv[1] : ".");
  const char *any = tt_test_write_text ("placeholder", "");
  snprintf (bu_dir, sizeof bu_dir, "%.*s", (int) (strrchr (any, '/') - any),
      any);
  unlink (any);

  TT_TEST_RUN (test_sgd);
  TT_TEST_RUN (test_branchy_bn);
  TT_TEST_RUN (test_mlp);
  TT_TEST_RUN (test_transfer_frozen);
  printf ("damaged bundles: %d cases, each through every loader\n", bu_cases);
  CHECK (bu_temporaries () == 0, "temporary files left");
  rmdir (bu_dir);
  return tt_test_summary ();
}
