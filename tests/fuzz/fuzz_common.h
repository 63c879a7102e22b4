/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the libFuzzer targets of tests/fuzz (built by run.sh):
 *   - an in-memory file (memfd) for the readers that take a path;
 *   - the pool cap: run.sh links with -Wl,--wrap=aligned_alloc, so the
 *     engine's one large allocation (the pool, tensors.c) comes here and
 *     fails as out of memory above FUZZ_POOL_LIMIT_MB (default 64): a fuzz
 *     input may describe a model of many gigabytes, and the engine must
 *     turn the failed allocation into TT_ERR_NOMEM, which this exercises;
 *   - deterministic input data and a few invariants the targets share.
 */
#ifndef TT_FUZZ_COMMON_H
#define TT_FUZZ_COMMON_H

#include "tt_internal.h"
#include "plan_validate.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_check.h"

/* ---- pool cap ----------------------------------------------------- */

void *__real_aligned_alloc (size_t align, size_t size);
void *__wrap_aligned_alloc (size_t align, size_t size);

static size_t fuzz_pool_limit;          /* bytes; 0 until first use */
static size_t fuzz_pool_refused;        /* size of the last refused pool */

FUZZ_HELPER size_t
fuzz_pool_limit_bytes (void)
{
  if (!fuzz_pool_limit) {
    const char *v = getenv ("FUZZ_POOL_LIMIT_MB");
    long mb = v ? strtol (v, NULL, 10) : 64;
    fuzz_pool_limit = (size_t) (mb > 0 ? mb : 64) << 20;
  }
  return fuzz_pool_limit;
}

void *
__wrap_aligned_alloc (size_t align, size_t size)
{
  if (size > fuzz_pool_limit_bytes ()) {
    fuzz_pool_refused = size;
    errno = ENOMEM;
    return NULL;
  }
  return __real_aligned_alloc (align, size);
}

/* ---- in-memory files ---------------------------------------------- */

typedef struct {
  int fd;
  char path[64];
} fuzz_file;

FUZZ_HELPER void
fuzz_file_open (fuzz_file * f, const char *name)
{
  f->fd = memfd_create (name, 0);
  if (f->fd < 0) {
    perror ("memfd_create");
    abort ();
  }
  snprintf (f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
}

/* Replaces the file's contents. */
FUZZ_HELPER void
fuzz_file_set (fuzz_file * f, const void *data, size_t len)
{
  if (ftruncate (f->fd, 0) != 0) {
    perror ("ftruncate");
    abort ();
  }
  const char *p = data;
  for (size_t done = 0; done < len;) {
    ssize_t n = pwrite (f->fd, p + done, len - done, (off_t) done);
    if (n <= 0) {
      perror ("pwrite");
      abort ();
    }
    done += (size_t) n;
  }
}

/* ---- helpers ------------------------------------------------------ */

/* An error must carry its status and a message (never an empty one). */
FUZZ_HELPER void
fuzz_check_error (tt_status st, const tt_error * err)
{
  FUZZ_CHECK (st != TT_OK && err->status == st && err->message[0],
      "status %d, error status %d, message '%s'", (int) st,
      (int) err->status, err->message);
  FUZZ_CHECK (memchr (err->message, '\0', sizeof err->message) != NULL,
      "unterminated message");
}

/* Deterministic batch data for the model's inputs and labels: n samples,
 * one-hot labels. Caller frees with fuzz_batch_free. */
typedef struct {
  uint32_t n_inputs;
  float *x[TT_MAX_IO];
  const void *inputs[TT_MAX_IO];
  float *labels;
} fuzz_batch;

FUZZ_HELPER bool
fuzz_batch_make (const tt_model * m, uint32_t n, fuzz_batch * b)
{
  memset (b, 0, sizeof *b);
  b->n_inputs = tt_model_num_inputs (m);
  for (uint32_t i = 0; i < b->n_inputs; i++) {
    tt_shape s;
    if (tt_model_input_shape (m, i, &s) != TT_OK)
      return false;
    size_t count = (size_t) n * s.channel * s.height * s.width;
    b->x[i] = malloc ((count ? count : 1) * sizeof (float));
    if (!b->x[i])
      return false;
    for (size_t k = 0; k < count; k++)
      b->x[i][k] = (float) ((k * 7919 + i * 31) % 255) / 255.0f - 0.25f;
    b->inputs[i] = b->x[i];
  }
  tt_shape ls = tt_model_label_shape (m);
  size_t per = (size_t) ls.channel * ls.height * ls.width;
  b->labels = calloc ((size_t) n * per + 1, sizeof (float));
  if (!b->labels)
    return false;
  for (uint32_t s = 0; s < n && per; s++)
    b->labels[s * per + (s * 3) % per] = 1.0f;
  return true;
}

FUZZ_HELPER void
fuzz_batch_free (fuzz_batch * b)
{
  for (uint32_t i = 0; i < TT_MAX_IO; i++)
    free (b->x[i]);
  free (b->labels);
  memset (b, 0, sizeof *b);
}

/* The compiled model's layout passes the independent validator and lies
 * within its figures: lower bound <= pool <= naive. */
FUZZ_HELPER void
fuzz_check_layout (const tt_model * m)
{
  uint32_t *map;
  size_t n;
  tt_interval *t = tt_plan_intervals (m, &map, &n);
  FUZZ_CHECK (t != NULL, "out of memory");
  char why[768];
  int rc = tt_plan_validate (t, n, m->align, m->pool_bytes, NULL, why,
      sizeof why);
  FUZZ_CHECK (rc == 0, "%s: the compiled layout is invalid: %s", m->path,
      why);
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    const tt_tensor *x = &m->tensors[i];
    FUZZ_CHECK ((char *) x->data >= (char *) m->pool &&
        (uint64_t) ((char *) x->data - (char *) m->pool) +
        x->count * sizeof (float) <= m->pool_bytes,
        "tensor %s lies outside the pool", x->name);
  }
  FUZZ_CHECK (m->plan.lower_bound <= m->pool_bytes &&
      m->pool_bytes <= m->plan.naive_bytes, "%s: pool %llu outside [lower "
      "bound %llu, naive %llu]", m->path, (unsigned long long) m->pool_bytes,
      (unsigned long long) m->plan.lower_bound,
      (unsigned long long) m->plan.naive_bytes);
  free (t);
  free (map);
}

/* ---- files in a private folder (atomic saves need a real folder) -- */

static char fuzz_tmp_dir[64];
static char fuzz_tmp_file[128];

FUZZ_HELPER void
fuzz_tmp_cleanup (void)
{
  if (fuzz_tmp_file[0])
    unlink (fuzz_tmp_file);
  if (fuzz_tmp_dir[0])
    rmdir (fuzz_tmp_dir);
}

/* One path (the same on every call) in a fresh folder under /dev/shm
 * (memory, so saves stay cheap), or under TMPDIR when there is none. */
FUZZ_HELPER const char *
fuzz_tmp_path (void)
{
  if (!fuzz_tmp_dir[0]) {
    snprintf (fuzz_tmp_dir, sizeof fuzz_tmp_dir, "/dev/shm/ttfuzz-XXXXXX");
    if (!mkdtemp (fuzz_tmp_dir)) {
      const char *t = getenv ("TMPDIR");
      snprintf (fuzz_tmp_dir, sizeof fuzz_tmp_dir, "%s/ttfuzz-XXXXXX",
          t ? t : "/tmp");
      if (!mkdtemp (fuzz_tmp_dir)) {
        perror ("mkdtemp");
        abort ();
      }
    }
    snprintf (fuzz_tmp_file, sizeof fuzz_tmp_file, "%s/file", fuzz_tmp_dir);
    atexit (fuzz_tmp_cleanup);
  }
  return fuzz_tmp_file;
}

FUZZ_HELPER char *
fuzz_read_all (const char *path, size_t *len)
{
  FILE *f = fopen (path, "rb");
  FUZZ_CHECK (f != NULL, "%s: %s", path, strerror (errno));
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc (cap);
  for (size_t got = 1; buf && got;) {
    if (n == cap)
      buf = realloc (buf, cap *= 2);
    if (buf)
      n += got = fread (buf + n, 1, cap - n, f);
  }
  fclose (f);
  FUZZ_CHECK (buf != NULL, "out of memory");
  *len = n;
  return buf;
}

/* The optimized INI of a compiled model loads back (at the same batch),
 * passes validation and gives the same layout. */
FUZZ_HELPER void
fuzz_check_plan_round_trip (const tt_model * m)
{
  if (m->plan_mode == TT_PLAN_NAIVE)
    return;
  tt_error err;
  const char *path = fuzz_tmp_path ();
  tt_status st = tt_model_save_plan_ini ((tt_model *) m, path, &err);
  FUZZ_CHECK (st == TT_OK, "saving the plan: %s", err.message);
  size_t len;
  char *text = fuzz_read_all (path, &len);
  tt_model *r = tt_model_load_ini_text (text, len, "round-trip.opt.ini",
      &err);
  if (!r)
    fprintf (stderr, "---- saved plan ----\n%.*s\n----\n", (int) len, text);
  FUZZ_CHECK (r != NULL, "the saved plan does not load: %s", err.message);
  st = tt_model_set_batch_size (r, m->batch_size, &err);
  FUZZ_CHECK (st == TT_OK, "%s", err.message);
  st = tt_model_set_inference (r, m->inference, &err);
  FUZZ_CHECK (st == TT_OK, "%s", err.message);
  st = tt_model_compile (r, &err);
  if (st != TT_OK)
    fprintf (stderr, "---- saved plan ----\n%.*s\n----\n", (int) len, text);
  /* the same pool compiled once already, so the cap does not refuse it */
  FUZZ_CHECK (st == TT_OK, "the saved plan does not compile: %s",
      err.message);
  FUZZ_CHECK (r->plan.from_stored_plan, "the saved plan was not used");
  FUZZ_CHECK (r->pool_bytes == m->pool_bytes && r->fingerprint ==
      m->fingerprint && r->n_tensors == m->n_tensors,
      "the saved plan loads as a different layout");
  for (uint32_t i = 0; i < m->n_tensors; i++)
    FUZZ_CHECK (r->tensors[i].offset == m->tensors[i].offset &&
        !strcmp (r->tensors[i].name, m->tensors[i].name),
        "tensor %s moved in the round trip", m->tensors[i].name);
  tt_model_free (r);
  free (text);
}

/* ---- planned against naive ---------------------------------------- */

typedef struct {
  tt_status train, eval;
  double loss;
  uint32_t correct;
} fuzz_step;

/* One training step on n samples, then an evaluation of one. */
FUZZ_HELPER fuzz_step
fuzz_step_run (tt_model * m, const fuzz_batch * b, uint32_t n)
{
  fuzz_step s = { 0 };
  tt_error err;
  tt_batch_result r = { 0 };
  s.train = tt_model_train_batch (m, n, b->inputs, NULL, b->labels, &r,
      &err);
  if (s.train != TT_OK)
    fuzz_check_error (s.train, &err);
  s.eval = tt_model_eval_batch (m, 1, b->inputs, NULL, b->labels, &r, &err);
  if (s.eval != TT_OK)
    fuzz_check_error (s.eval, &err);
  s.loss = r.loss;
  s.correct = r.correct;
  return s;
}

/* m, compiled from text, trains one step of n samples and evaluates; the
 * same text compiled in the naive layout (every tensor its own bytes) must
 * give the same bits. An inference-only model refuses the step (both
 * must) and evaluates. This catches a layout that lets one tensor overwrite
 * another inside the pool, where ASan cannot see it. */
FUZZ_HELPER void
fuzz_check_against_naive (tt_model * m, const uint8_t * text, size_t len,
    uint32_t n)
{
  tt_error err;
  tt_model *z = tt_model_load_ini_text ((const char *) text, len, m->path,
      &err);
  FUZZ_CHECK (z != NULL, "the text loaded once, not twice: %s",
      err.message);
  tt_status st;
  if ((st = tt_model_set_batch_size (z, m->batch_size, &err)) ||
      (st = tt_model_set_inference (z, m->inference, &err)) ||
      (st = tt_model_set_plan_mode (z, TT_PLAN_NAIVE, &err)))
    FUZZ_CHECK (st == TT_OK, "%s", err.message);
  fuzz_pool_refused = 0;
  st = tt_model_compile (z, &err);
  if (st == TT_ERR_NOMEM && fuzz_pool_refused) {
    tt_model_free (z);         /* the naive layout is over the cap */
    return;
  }
  FUZZ_CHECK (st == TT_OK, "planned compile succeeded, naive failed: %s",
      err.message);
  fuzz_check_layout (z);
  fuzz_batch b;
  FUZZ_CHECK (fuzz_batch_make (m, n, &b), "out of memory");
  fuzz_step a = fuzz_step_run (m, &b, n), c = fuzz_step_run (z, &b, n);
  FUZZ_CHECK (a.train == c.train && a.eval == c.eval, "planned: train %d "
      "eval %d, naive: train %d eval %d", (int) a.train, (int) a.eval,
      (int) c.train, (int) c.eval);
  if (a.eval == TT_OK) {
    FUZZ_CHECK (memcmp (&a.loss, &c.loss, sizeof a.loss) == 0 &&
        a.correct == c.correct, "planned and naive evaluation differ: "
        "loss %.9g vs %.9g", a.loss, c.loss);
    tt_shape os = tt_model_output_shape (m);
    size_t out = (size_t) os.channel * os.height * os.width;
    FUZZ_CHECK (memcmp (tt_model_output (m), tt_model_output (z),
            out * sizeof (float)) == 0, "planned and naive outputs differ");
  }
  FUZZ_CHECK (m->n_layers == z->n_layers, "layer counts differ");
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i], *k = &z->layers[i];
    FUZZ_CHECK (l->n_weights == k->n_weights, "%s: weights differ", l->name);
    for (uint32_t w = 0; w < l->n_weights; w++)
      FUZZ_CHECK (memcmp (tt_data (m, l->weights[w].value),
              tt_data (z, k->weights[w].value),
              l->weights[w].count * sizeof (float)) == 0,
          "%s:%s differs between planned and naive training", l->name,
          l->weights[w].suffix);
  }
  fuzz_batch_free (&b);
  tt_model_free (z);
}

#endif
