/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Federated messages (an envelope around a bundle, tt_fed.h) and
 * federated averaging.
 */
#include "tt_fed.h"
#include "tt_le.h"
#include "tt_bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static tt_status
fed_fail (tt_error * err, tt_status st, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (err->message, sizeof err->message, fmt, ap);
    va_end (ap);
    err->status = st;
  }
  return st;
}

static uint32_t
crc_of (const void *data, size_t len)
{
  uLong c = crc32 (0L, Z_NULL, 0);
  const unsigned char *p = data;
  while (len > 0) {
    uInt n = len > (1u << 30) ? (1u << 30) : (uInt) len;
    c = crc32 (c, p, n);
    p += n;
    len -= n;
  }
  return (uint32_t) c;
}

bool
tt_fed_client_id_valid (const char *id)
{
  size_t n = 0;
  if (!id)
    return false;
  for (; id[n]; n++) {
    char c = id[n];
    if (n >= TT_FED_ID_MAX - 1)
      return false;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
      return false;
  }
  return n > 0;
}

/* ---- files ----------------------------------------------------------- */

tt_status
tt_fed_write_file (const char *path, const void *data, size_t len,
    tt_error * err)
{
  char tmp[4200];
  if (snprintf (tmp, sizeof tmp, "%s.tmp-%ld-XXXXXX", path,
          (long) getpid ()) >= (int) sizeof tmp)
    return fed_fail (err, TT_ERR_IO, "%s: path too long", path);
  int fd = mkstemp (tmp);
  if (fd < 0)
    return fed_fail (err, TT_ERR_IO, "%s: cannot create a temporary file "
        "beside it: %s", path, strerror (errno));
  const unsigned char *p = data;
  size_t left = len;
  while (left > 0) {
    ssize_t w = write (fd, p, left);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = errno;
      close (fd);
      unlink (tmp);
      return fed_fail (err, TT_ERR_IO, "%s: write failed: %s", path,
          strerror (e));
    }
    p += w;
    left -= (size_t) w;
  }
  mode_t mask = umask (0);
  umask (mask);
  if (fchmod (fd, 0666 & ~mask) != 0 || fsync (fd) != 0) {
    int e = errno;
    close (fd);
    unlink (tmp);
    return fed_fail (err, TT_ERR_IO, "%s: %s", path, strerror (e));
  }
  close (fd);
  if (rename (tmp, path) != 0) {
    int e = errno;
    unlink (tmp);
    return fed_fail (err, TT_ERR_IO, "%s: cannot rename %s over it: %s",
        path, tmp, strerror (e));
  }
  char dir[4200];
  snprintf (dir, sizeof dir, "%s", path);
  char *slash = strrchr (dir, '/');
  if (slash == dir)
    dir[1] = '\0';
  else if (slash)
    *slash = '\0';
  else
    snprintf (dir, sizeof dir, ".");
  int dfd = open (dir, O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    fsync (dfd);
    close (dfd);
  }
  return TT_OK;
}

tt_status
tt_fed_read_file (const char *path, size_t max, void **out, size_t *len,
    tt_error * err)
{
  *out = NULL;
  *len = 0;
  FILE *f = fopen (path, "rb");
  if (!f)
    return fed_fail (err, TT_ERR_IO, "%s: %s", path, strerror (errno));
  size_t cap = max < (1 << 16) ? max + 1 : (1 << 16), n = 0;
  unsigned char *buf = malloc (cap);
  while (buf) {
    if (n == cap) {
      size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
      unsigned char *nb = ncap > cap ? realloc (buf, ncap) : NULL;
      if (!nb) {
        free (buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap = ncap;
    }
    size_t r = fread (buf + n, 1, cap - n, f);
    n += r;
    if (r == 0 || n > max)
      break;
  }
  if (buf && n > max) {
    free (buf);
    fclose (f);
    return fed_fail (err, TT_ERR_INVALID, "%s: larger than %zu bytes", path,
        max);
  }
  if (!buf) {
    fclose (f);
    return fed_fail (err, TT_ERR_NOMEM, "%s: out of memory", path);
  }
  if (ferror (f)) {
    free (buf);
    fclose (f);
    return fed_fail (err, TT_ERR_IO, "%s: read failed", path);
  }
  fclose (f);
  *out = buf;
  *len = n;
  return TT_OK;
}

/* ---- messages -------------------------------------------------------- */

/* Writes the envelope of m (its bundle, blen bytes, already after it) */
static void
fed_seal (unsigned char *m, const tt_fed_header * h, uint64_t signature,
    uint64_t n_floats, size_t blen)
{
  memset (m, 0, TT_FED_ENVELOPE_BYTES);
  memcpy (m, TT_FED_MAGIC, 8);
  tt_le_put32 (m + 8, TT_FED_VERSION);
  tt_le_put32 (m + 12, TT_FED_ENVELOPE_BYTES);
  tt_le_put32 (m + 16, h->kind);
  tt_le_put32 (m + 20, h->round);
  tt_le_put64 (m + 24, h->samples);
  tt_le_put64 (m + 32, signature);
  tt_le_put64 (m + 40, n_floats);
  tt_le_put64 (m + 48, blen);
  memcpy (m + 56, h->client_id, strlen (h->client_id));
  tt_le_put32 (m + 120, crc_of (m + TT_FED_ENVELOPE_BYTES, blen));
  tt_le_put32 (m + 124, crc_of (m, 124));
}

/* An inference model of model's INI text (its plan taken out: the copy is
 * planned for batch 1) holding model's weights. */
static tt_model *
fed_inference_copy (tt_model * model, tt_error * err)
{
  char *text = NULL, *plain = NULL;
  size_t len = 0, plain_len = 0;
  tt_model *copy = NULL;
  size_t n = tt_model_weight_floats (model);
  float *w = malloc (n * sizeof (float));
  if (!w) {
    fed_fail (err, TT_ERR_NOMEM, "federation: out of memory");
    return NULL;
  }
  if (tt_plan_ini_text (model, &text, &len, err) == TT_OK
      && tt_ini_strip_plan (text, len, &plain, &plain_len, err) == TT_OK
      && (copy = tt_model_load_ini_text (plain, plain_len, "federation "
              "message", err)) != NULL) {
    if (tt_model_set_inference (copy, true, err) != TT_OK
        || tt_model_set_batch_size (copy, 1, err) != TT_OK
        || tt_model_set_plan_mode (copy, TT_PLAN_REPLAN, err) != TT_OK
        || tt_model_compile (copy, err) != TT_OK
        || tt_model_export_weights (model, w, n, err) != TT_OK
        || tt_model_import_weights (copy, w, n, err) != TT_OK) {
      tt_model_free (copy);
      copy = NULL;
    } else if (tt_model_weight_signature (copy) !=
        tt_model_weight_signature (model)) {
      fed_fail (err, TT_ERR_STATE, "federation: the inference copy of the "
          "model has another weight signature");
      tt_model_free (copy);
      copy = NULL;
    }
  }
  free (text);
  free (plain);
  free (w);
  return copy;
}

/* What every message's header says of its sender: a valid client id and
 * a sample count in range. */
static tt_status
fed_check_sender (const tt_fed_header * h, tt_error * err)
{
  if (!tt_fed_client_id_valid (h->client_id))
    return fed_fail (err, TT_ERR_INVALID, "federation: client id '%s': 1 to "
        "%d characters of A-Z a-z 0-9 _ . -", h->client_id, TT_FED_ID_MAX - 1);
  if (h->samples > TT_FED_MAX_SAMPLES)
    return fed_fail (err, TT_ERR_INVALID, "federation: %" PRIu64
        " samples, more than %" PRIu64, h->samples, TT_FED_MAX_SAMPLES);
  return TT_OK;
}

tt_status
tt_fed_encode (tt_model * model, const tt_fed_header * h, void **out,
    size_t *len, tt_error * err)
{
  *out = NULL;
  *len = 0;
  if (h->kind != TT_FED_UPDATE && h->kind != TT_FED_GLOBAL)
    return fed_fail (err, TT_ERR_INVALID, "federation: message kind %u "
        "(1 update, 2 global)", h->kind);
  tt_status st = fed_check_sender (h, err);
  if (st)
    return st;
  if (tt_model_weight_floats (model) == 0)
    return fed_fail (err, TT_ERR_STATE, "federation: the model has no "
        "weights (not compiled?)");
  if (!tt_model_is_inference (model)) {
    /* a training model's bundle would carry the optimizer's state (Adam's
     * two moments: three times the weights) the other side never uses:
     * the message is made from an inference copy of it */
    tt_model *copy = fed_inference_copy (model, err);
    if (!copy)
      return err ? err->status : TT_ERR_STATE;
    st = tt_fed_encode (copy, h, out, len, err);
    tt_model_free (copy);
    return st;
  }

  /* the bundle goes through a file: tt_bundle_save writes paths */
  const char *tmpdir = getenv ("TMPDIR");
  char dir[4096], path[4200];
  snprintf (dir, sizeof dir, "%s/tt-fed-XXXXXX", tmpdir
      && *tmpdir ? tmpdir : "/tmp");
  if (!mkdtemp (dir))
    return fed_fail (err, TT_ERR_IO, "federation: cannot create a "
        "temporary folder %s: %s", dir, strerror (errno));
  snprintf (path, sizeof path, "%s/message.ttb", dir);
  st = tt_bundle_save (model, path, NULL, err);
  void *bundle = NULL;
  size_t blen = 0;
  if (st == TT_OK)
    st = tt_fed_read_file (path, SIZE_MAX / 2, &bundle, &blen, err);
  unlink (path);
  rmdir (dir);
  if (st != TT_OK)
    return st;

  unsigned char *m = malloc (TT_FED_ENVELOPE_BYTES + blen);
  if (!m) {
    free (bundle);
    return fed_fail (err, TT_ERR_NOMEM, "federation: out of memory");
  }
  memcpy (m + TT_FED_ENVELOPE_BYTES, bundle, blen);
  free (bundle);
  fed_seal (m, h, tt_model_weight_signature (model),
      tt_model_weight_floats (model), blen);
  *out = m;
  *len = TT_FED_ENVELOPE_BYTES + blen;
  return TT_OK;
}

tt_status
tt_fed_encode_end (const tt_fed_header * h, void **out, size_t *len,
    tt_error * err)
{
  *out = NULL;
  *len = 0;
  tt_status st = fed_check_sender (h, err);
  if (st)
    return st;
  unsigned char *m = malloc (TT_FED_ENVELOPE_BYTES);
  if (!m)
    return fed_fail (err, TT_ERR_NOMEM, "federation: out of memory");
  tt_fed_header e = *h;
  e.kind = TT_FED_END;
  fed_seal (m, &e, h->signature, h->n_floats, 0);
  *out = m;
  *len = TT_FED_ENVELOPE_BYTES;
  return TT_OK;
}

tt_status
tt_fed_peek (const void *data, size_t len, const char *name,
    tt_fed_header * h, tt_error * err)
{
  const unsigned char *m = data;
  memset (h, 0, sizeof *h);
  if (!name)
    name = "<message>";
  if (!data || len < TT_FED_ENVELOPE_BYTES)
    return fed_fail (err, TT_ERR_PARSE, "%s: %zu bytes, shorter than the "
        "%d-byte envelope of a federation message", name, len,
        TT_FED_ENVELOPE_BYTES);
  if (memcmp (m, TT_FED_MAGIC, 8) != 0)
    return fed_fail (err, TT_ERR_PARSE, "%s: not a federation message (no "
        "%s magic)", name, TT_FED_MAGIC);
  if (tt_le_get32 (m + 8) != TT_FED_VERSION)
    return fed_fail (err, TT_ERR_PARSE, "%s: message version %u, this "
        "build reads %d", name, tt_le_get32 (m + 8), TT_FED_VERSION);
  if (tt_le_get32 (m + 12) != TT_FED_ENVELOPE_BYTES)
    return fed_fail (err, TT_ERR_PARSE, "%s: envelope of %u bytes, version "
        "1 has %d", name, tt_le_get32 (m + 12), TT_FED_ENVELOPE_BYTES);
  uint32_t hcrc = crc_of (m, 124);
  if (tt_le_get32 (m + 124) != hcrc)
    return fed_fail (err, TT_ERR_PARSE, "%s: envelope checksum 0x%08x, "
        "computed 0x%08x: corrupted", name, tt_le_get32 (m + 124), hcrc);
  h->kind = tt_le_get32 (m + 16);
  h->round = tt_le_get32 (m + 20);
  h->samples = tt_le_get64 (m + 24);
  h->signature = tt_le_get64 (m + 32);
  h->n_floats = tt_le_get64 (m + 40);
  uint64_t blen = tt_le_get64 (m + 48);
  memcpy (h->client_id, m + 56, TT_FED_ID_MAX);
  if (h->client_id[TT_FED_ID_MAX - 1] != '\0'
      || !tt_fed_client_id_valid (h->client_id)) {
    h->client_id[0] = '\0';
    return fed_fail (err, TT_ERR_PARSE, "%s: client id field is not 1 to %d "
        "characters of A-Z a-z 0-9 _ . -", name, TT_FED_ID_MAX - 1);
  }
  for (size_t i = strlen (h->client_id); i < TT_FED_ID_MAX; i++)
    if (h->client_id[i] != '\0')
      return fed_fail (err, TT_ERR_PARSE, "%s: client id field not "
          "NUL-padded", name);
  if (h->kind != TT_FED_UPDATE && h->kind != TT_FED_GLOBAL
      && h->kind != TT_FED_END)
    return fed_fail (err, TT_ERR_PARSE, "%s: message kind %u (1 update, 2 "
        "global, 3 end of the run)", name, h->kind);
  if (h->kind == TT_FED_END && blen != 0)
    return fed_fail (err, TT_ERR_PARSE, "%s: an end-of-run marker with a "
        "%" PRIu64 "-byte bundle (it has none)", name, blen);
  if (blen != len - TT_FED_ENVELOPE_BYTES)
    return fed_fail (err, TT_ERR_PARSE, "%s: envelope says %" PRIu64
        " bundle bytes, the message has %zu", name, blen,
        len - TT_FED_ENVELOPE_BYTES);
  if (h->samples > TT_FED_MAX_SAMPLES)
    return fed_fail (err, TT_ERR_INVALID, "%s: %" PRIu64 " samples, more "
        "than %" PRIu64, name, h->samples, TT_FED_MAX_SAMPLES);
  if (h->kind == TT_FED_UPDATE && h->samples == 0)
    return fed_fail (err, TT_ERR_INVALID, "%s: update of 0 samples", name);
  uint32_t bcrc = crc_of (m + TT_FED_ENVELOPE_BYTES, (size_t) blen);
  if (tt_le_get32 (m + 120) != bcrc)
    return fed_fail (err, TT_ERR_PARSE, "%s: bundle checksum 0x%08x, "
        "computed 0x%08x: corrupted", name, tt_le_get32 (m + 120), bcrc);
  return TT_OK;
}

tt_status
tt_fed_decode (const void *data, size_t len, const char *name,
    uint64_t signature, size_t n_floats, tt_fed_message * msg, tt_error * err)
{
  memset (msg, 0, sizeof *msg);
  if (!name)
    name = "<message>";
  tt_fed_header h;
  tt_status st = tt_fed_peek (data, len, name, &h, err);
  if (st != TT_OK)
    return st;
  if (h.kind == TT_FED_END)
    return fed_fail (err, TT_ERR_INVALID, "%s (client %s): an end-of-run "
        "marker, not a model", name, h.client_id);
  if (h.signature != signature)
    return fed_fail (err, TT_ERR_INVALID, "%s (client %s): weight "
        "signature %016" PRIx64 ", the model's is %016" PRIx64 ": another "
        "model (layer names, shapes or order differ)", name, h.client_id,
        h.signature, signature);
  if (h.n_floats != n_floats)
    return fed_fail (err, TT_ERR_INVALID, "%s (client %s): %" PRIu64
        " weight floats, the model has %zu", name, h.client_id, h.n_floats,
        n_floats);

  /* the bundle's own checks: header, index, checksums, finiteness */
  tt_bundle_load_options o;
  memset (&o, 0, sizeof o);
  o.mode = TT_BUNDLE_READ;
  o.batch_size = 1;
  o.inference = true;
  o.plan_mode = TT_PLAN_REPLAN; /* a stored plan is for its batch size */
  tt_error e = { 0 };
  tt_model *b = tt_bundle_load_memory ((const unsigned char *) data +
      TT_FED_ENVELOPE_BYTES, len - TT_FED_ENVELOPE_BYTES, name, &o, &e);
  if (!b)
    return fed_fail (err, e.status ? e.status : TT_ERR_PARSE, "%s (client "
        "%s): its bundle is refused: %s", name, h.client_id, e.message);
  if (tt_model_weight_signature (b) != signature
      || tt_model_weight_floats (b) != n_floats) {
    uint64_t bs = tt_model_weight_signature (b);
    size_t bn = tt_model_weight_floats (b);
    tt_model_free (b);
    return fed_fail (err, TT_ERR_INVALID, "%s (client %s): the envelope "
        "says signature %016" PRIx64 " (%zu floats), its bundle's model "
        "has %016" PRIx64 " (%zu floats)", name, h.client_id, h.signature,
        n_floats, bs, bn);
  }
  float *w = malloc (n_floats * sizeof (float));
  if (!w) {
    tt_model_free (b);
    return fed_fail (err, TT_ERR_NOMEM, "%s: out of memory", name);
  }
  st = tt_model_export_weights (b, w, n_floats, &e);
  tt_model_free (b);
  if (st != TT_OK) {
    free (w);
    return fed_fail (err, st, "%s (client %s): %s", name, h.client_id,
        e.message);
  }
  for (size_t i = 0; i < n_floats; i++)
    if (!isfinite (w[i])) {
      free (w);
      return fed_fail (err, TT_ERR_NUMERIC, "%s (client %s): weight %zu is "
          "not finite", name, h.client_id, i);
    }
  msg->header = h;
  msg->weights = w;
  return TT_OK;
}

void
tt_fed_message_clear (tt_fed_message * msg)
{
  free (msg->weights);
  memset (msg, 0, sizeof *msg);
}

/* ---- federated averaging -------------------------------------------- */

void
tt_fed_round_init (tt_fed_round * r, uint64_t signature, size_t n_floats,
    uint32_t round)
{
  memset (r, 0, sizeof *r);
  r->signature = signature;
  r->n_floats = n_floats;
  r->round = round;
  r->spill_fd = -1;
}

tt_status
tt_fed_round_spill (tt_fed_round * r, const char *dir, tt_error * err)
{
  if (r->spilling)
    return TT_OK;
  int fd = -1;
#ifdef O_TMPFILE
  fd = open (dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  if (fd < 0) {
    /* no O_TMPFILE here (or not on this file system): named, unlinked */
    size_t n = strlen (dir) + 32;
    char *tmpl = malloc (n);
    if (!tmpl)
      return fed_fail (err, TT_ERR_NOMEM, "out of memory");
    snprintf (tmpl, n, "%s/tt-fed-spill-XXXXXX", dir);
    fd = mkstemp (tmpl);
    if (fd >= 0)
      unlink (tmpl);
    free (tmpl);
  }
  if (fd < 0)
    return fed_fail (err, TT_ERR_IO, "cannot make a spill file for the "
        "round's updates in %s: %s", dir, strerror (errno));
  r->spill_fd = fd;
  r->spilling = true;
  r->spill_slots = 0;
  return TT_OK;
}

static tt_status
fed_spill_io (const tt_fed_round * r, bool write, uint64_t slot, float *w,
    tt_error * err)
{
  const size_t bytes = r->n_floats * sizeof (float);
  const off_t at = (off_t) (slot * bytes);
  size_t done = 0;
  while (done < bytes) {
    ssize_t k = write ? pwrite (r->spill_fd, (char *) w + done, bytes - done,
        at + (off_t) done) : pread (r->spill_fd, (char *) w + done,
        bytes - done, at + (off_t) done);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return fed_fail (err, TT_ERR_IO, "round %u: cannot %s the spill file "
          "of its updates: %s", r->round, write ? "write" : "read back",
          k < 0 ? strerror (errno) : "short");
    done += (size_t) k;
  }
  return TT_OK;
}

/* update i's weights: its own in memory, or read back into buf */
static const float *
fed_entry_weights (const tt_fed_round * r, uint32_t i, float *buf,
    tt_error * err)
{
  const tt_fed_entry *e = &r->updates[i];
  if (e->weights)
    return e->weights;
  if (!r->spilling || e->rejected) {
    fed_fail (err, TT_ERR_STATE, "round %u: client %s has no weights",
        r->round, e->header.client_id);
    return NULL;
  }
  return fed_spill_io (r, false, e->slot, buf, err) == TT_OK ? buf : NULL;
}

tt_status
tt_fed_round_add (tt_fed_round * r, tt_fed_message * msg, tt_error * err)
{
  const tt_fed_header *h = &msg->header;
  if (h->kind != TT_FED_UPDATE)
    return fed_fail (err, TT_ERR_INVALID, "client %s: a global model where "
        "an update was expected", h->client_id);
  if (h->signature != r->signature || h->n_floats != r->n_floats
      || !msg->weights)
    return fed_fail (err, TT_ERR_INVALID, "client %s: another model "
        "(signature %016" PRIx64 ", %" PRIu64 " floats)", h->client_id,
        h->signature, h->n_floats);
  if (h->round < r->round)
    return fed_fail (err, TT_ERR_INVALID, "client %s: update of round %u, "
        "stale: round %u is being collected", h->client_id, h->round, r->round);
  if (h->round > r->round)
    return fed_fail (err, TT_ERR_INVALID, "client %s: update of round %u, "
        "ahead of round %u being collected", h->client_id, h->round, r->round);
  if (h->samples == 0 || h->samples > TT_FED_MAX_SAMPLES)
    return fed_fail (err, TT_ERR_INVALID, "client %s: %" PRIu64 " samples",
        h->client_id, h->samples);
  for (uint32_t i = 0; i < r->n; i++)
    if (!strcmp (r->updates[i].header.client_id, h->client_id))
      return fed_fail (err, TT_ERR_INVALID, "client %s: a second update in "
          "round %u (replayed or resent): the first is kept",
          h->client_id, r->round);
  if (r->n == r->cap) {
    uint32_t cap = r->cap ? r->cap * 2 : 8;
    tt_fed_entry *u = realloc (r->updates, cap * sizeof *u);
    if (!u)
      return fed_fail (err, TT_ERR_NOMEM, "out of memory");
    r->updates = u;
    r->cap = cap;
  }
  tt_fed_entry e;
  memset (&e, 0, sizeof e);
  e.header = *h;
  e.distance = -1.0;
  if (r->spilling) {
    e.slot = r->spill_slots;
    tt_status st = fed_spill_io (r, true, e.slot, msg->weights, err);
    if (st != TT_OK)
      return st;
    r->spill_slots++;
    tt_fed_message_clear (msg);
  } else {
    e.weights = msg->weights;
    memset (msg, 0, sizeof *msg);
  }
  /* sorted by client id: the sum's order does not depend on arrivals */
  uint32_t at = r->n;
  while (at > 0 && strcmp (r->updates[at - 1].header.client_id,
          e.header.client_id) > 0)
    at--;
  memmove (&r->updates[at + 1], &r->updates[at],
      (r->n - at) * sizeof *r->updates);
  r->updates[at] = e;
  r->n++;
  r->samples += e.header.samples;
  return TT_OK;
}

static int
fed_cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

uint32_t
tt_fed_round_accepted (const tt_fed_round * r)
{
  return r->n - r->n_rejected;
}

uint32_t
tt_fed_round_screen (tt_fed_round * r, const float *global, double max_ratio,
    void (*on_reject) (void *user, const char *client_id, const char *reason),
    void *user)
{
  uint32_t live = tt_fed_round_accepted (r), rejected = 0;
  if (live < 3 || !(max_ratio > 0.0))
    return 0;
  double *sorted = malloc (live * sizeof *sorted);
  float *buf = r->spilling ? malloc (r->n_floats * sizeof *buf) : NULL;
  if (!sorted || (r->spilling && !buf)) {
    free (sorted);
    free (buf);
    return 0;
  }
  /* the global model is the same all round: a distance is computed once */
  uint32_t k = 0;
  for (uint32_t i = 0; i < r->n; i++) {
    tt_fed_entry *e = &r->updates[i];
    if (e->rejected)
      continue;
    if (e->distance < 0.0) {
      tt_error err = { 0 };
      const float *w = fed_entry_weights (r, i, buf, &err);
      if (!w) {
        free (sorted);
        free (buf);
        return 0;
      }
      double d = 0.0;
      for (size_t j = 0; j < r->n_floats; j++) {
        double x = (double) w[j] - (double) global[j];
        d += x * x;
      }
      e->distance = sqrt (d);
    }
    sorted[k++] = e->distance;
  }
  free (buf);
  qsort (sorted, live, sizeof *sorted, fed_cmp_double);
  double median = live % 2 ? sorted[live / 2] :
      0.5 * (sorted[live / 2 - 1] + sorted[live / 2]);
  free (sorted);
  for (uint32_t i = 0; i < r->n; i++) {
    tt_fed_entry *e = &r->updates[i];
    if (e->rejected || !(e->distance > max_ratio * median))
      continue;
    char why[256];
    snprintf (why, sizeof why, "moved %.4g from the global model, more "
        "than %g times the round's median %.4g: rejected", e->distance,
        max_ratio, median);
    free (e->weights);
    e->weights = NULL;
    e->rejected = true;
    r->samples -= e->header.samples;
    r->n_rejected++;
    rejected++;
    if (on_reject)
      on_reject (user, e->header.client_id, why);
  }
  return rejected;
}

tt_status
tt_fed_round_average (const tt_fed_round * r, float *out, tt_error * err)
{
  if (tt_fed_round_accepted (r) == 0 || r->samples == 0)
    return fed_fail (err, TT_ERR_STATE, "round %u: no update to average",
        r->round);
  /* one update at a time into the accumulator, in client-id order: for
   * each weight the same additions in the same order as summing it over
   * the updates at once */
  double *acc = calloc (r->n_floats ? r->n_floats : 1, sizeof *acc);
  float *buf = r->spilling ? malloc (r->n_floats * sizeof *buf) : NULL;
  if (!acc || (r->spilling && !buf)) {
    free (acc);
    free (buf);
    return fed_fail (err, TT_ERR_NOMEM, "round %u: out of memory", r->round);
  }
  for (uint32_t i = 0; i < r->n; i++) {
    if (r->updates[i].rejected)
      continue;
    const float *w = fed_entry_weights (r, i, buf, err);
    if (!w) {
      free (acc);
      free (buf);
      return err ? err->status : TT_ERR_IO;
    }
    const double samples = (double) r->updates[i].header.samples;
    for (size_t k = 0; k < r->n_floats; k++)
      acc[k] += (double) w[k] * samples;
  }
  const double total = (double) r->samples;
  for (size_t k = 0; k < r->n_floats; k++)
    out[k] = (float) (acc[k] / total);
  free (acc);
  free (buf);
  return TT_OK;
}

void
tt_fed_round_reset (tt_fed_round * r, uint32_t round)
{
  for (uint32_t i = 0; i < r->n; i++)
    free (r->updates[i].weights);
  r->n = 0;
  r->n_rejected = 0;
  r->samples = 0;
  r->round = round;
  if (r->spilling) {
    /* the file's blocks go back; the next round writes from slot 0 */
    if (ftruncate (r->spill_fd, 0) != 0) {
      /* nothing is lost: later slots overwrite what was there */
    }
    r->spill_slots = 0;
  }
}

void
tt_fed_round_clear (tt_fed_round * r)
{
  tt_fed_round_reset (r, 0);
  if (r->spilling)
    close (r->spill_fd);
  free (r->updates);
  memset (r, 0, sizeof *r);
  r->spill_fd = -1;
}
