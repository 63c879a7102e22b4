/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Federation messages and federated averaging (ext/federation/tt_fed.h),
 * no broker: a message round-trips with its weights and header; another
 * model's (signature, size), a NaN weight, corrupted or truncated bytes
 * are refused with a reason; a round takes one update per client of its
 * own round (stale, ahead, replayed refused) and averages them weighted by
 * samples, the same whatever the arrival order; files are replaced
 * atomically.
 */
#include "tt_fed.h"
#include "tt_bundle.h"
#include "../unit/tt_test.h"

#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <zlib.h>

static const char *ini_a =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 4\nloss = cross\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
    "[input]\ntype = input\ninput_shape = 1:1:8\n"
    "[h]\ntype = fully_connected\nunit = 5\nactivation = relu\n"
    "[out]\ntype = fully_connected\nunit = 3\nactivation = softmax\n";
/* the same weight count in another arrangement: 8*4+4 + 4*... differs */
static const char *ini_b =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 4\nloss = cross\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
    "[input]\ntype = input\ninput_shape = 1:1:8\n"
    "[h]\ntype = fully_connected\nunit = 6\nactivation = relu\n"
    "[out]\ntype = fully_connected\nunit = 3\nactivation = softmax\n";

static tt_model *
model_of (const char *ini, uint64_t seed, bool inference)
{
  tt_error err = { 0 };
  tt_model *m = tt_model_load_ini_text (ini, strlen (ini), "test.ini", &err);
  if (!m) {
    printf ("load: %s\n", err.message);
    exit (2);
  }
  tt_model_set_seed (m, seed);
  if ((inference && tt_model_set_inference (m, true, &err) != TT_OK)
      || tt_model_compile (m, &err) != TT_OK
      || tt_model_init_weights (m, &err) != TT_OK) {
    printf ("compile: %s\n", err.message);
    exit (2);
  }
  return m;
}

static void *
encode (tt_model * m, uint32_t kind, uint32_t round, uint64_t samples,
    const char *id, size_t *len)
{
  tt_fed_header h;
  memset (&h, 0, sizeof h);
  h.kind = kind;
  h.round = round;
  h.samples = samples;
  snprintf (h.client_id, sizeof h.client_id, "%s", id);
  void *out = NULL;
  tt_error err = { 0 };
  tt_status st = tt_fed_encode (m, &h, &out, len, &err);
  CHECK (st == TT_OK, "encode: %s", err.message);
  return out;
}

static uint32_t
get32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
      (uint32_t) p[3] << 24;
}

static void
put32 (unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char) (v >> (8 * i));
}

/* recomputes the envelope's two checksums after an edit */
static void
reseal (unsigned char *m, size_t len)
{
  put32 (m + 120, (uint32_t) crc32 (0, m + 128, (uInt) (len - 128)));
  put32 (m + 124, (uint32_t) crc32 (0, m, 124));
}

static void
test_round_trip (void)
{
  tt_model *a = model_of (ini_a, 7, true);
  size_t n = tt_model_weight_floats (a), len;
  uint64_t sig = tt_model_weight_signature (a);
  float *w = malloc (n * sizeof (float));
  tt_error err = { 0 };
  tt_model_export_weights (a, w, n, &err);
  void *msg = encode (a, TT_FED_UPDATE, 3, 1234, "dev-1.x_Y", &len);
  tt_fed_message d;
  tt_status st = tt_fed_decode (msg, len, "t/update/dev-1", sig, n, &d, &err);
  CHECK (st == TT_OK, "decode: %s", err.message);
  CHECK (d.header.kind == TT_FED_UPDATE && d.header.round == 3
      && d.header.samples == 1234 && d.header.signature == sig
      && d.header.n_floats == n
      && !strcmp (d.header.client_id, "dev-1.x_Y"), "header round-trips");
  CHECK (d.weights && !memcmp (d.weights, w, n * sizeof (float)),
      "weights round-trip bit for bit");
  tt_fed_message_clear (&d);

  /* a training model (with Adam's moments) gives the same weights */
  tt_model *t = model_of (ini_a, 7, false);
  size_t tlen;
  void *tmsg = encode (t, TT_FED_GLOBAL, 0, 0, "aggregator", &tlen);
  st = tt_fed_decode (tmsg, tlen, "t/global", sig, n, &d, &err);
  CHECK (st == TT_OK, "decode of a training model's message: %s", err.message);
  CHECK (d.weights && !memcmp (d.weights, w, n * sizeof (float)),
      "training model's weights");
  /* and carries the weights alone: not Adam's moments (3 times the
   * weights), which the other side never uses */
  tt_bundle_info bi[2];
  memset (bi, 0, sizeof bi);
  CHECK (tt_bundle_inspect_memory ((unsigned char *) msg + 128, len - 128,
          "inference", &bi[0], &err) == TT_OK
      && tt_bundle_inspect_memory ((unsigned char *) tmsg + 128, tlen - 128,
          "training", &bi[1], &err) == TT_OK, "inspect: %s", err.message);
  uint64_t wbytes[2] = { 0, 0 };
  for (int b = 0; b < 2; b++)
    for (uint32_t s = 0; s < bi[b].n_sections; s++)
      if (bi[b].sections[s].type == TT_BUNDLE_SECTION_WEIGHTS)
        wbytes[b] += bi[b].sections[s].length;
  CHECK (wbytes[0] > 0 && wbytes[0] == wbytes[1], "a training model's "
      "message holds the weights alone: %" PRIu64 " weight bytes, an "
      "inference model's %" PRIu64 " (messages of %zu and %zu bytes)",
      wbytes[1], wbytes[0], tlen, len);
  tt_bundle_info_clear (&bi[0]);
  tt_bundle_info_clear (&bi[1]);
  tt_fed_message_clear (&d);
  free (tmsg);
  tt_model_free (t);

  /* bad ids and kinds are not encoded */
  tt_fed_header h;
  memset (&h, 0, sizeof h);
  h.kind = TT_FED_UPDATE;
  snprintf (h.client_id, sizeof h.client_id, "a/b");
  void *out;
  size_t olen;
  CHECK (tt_fed_encode (a, &h, &out, &olen, &err) == TT_ERR_INVALID
      && strstr (err.message, "client id"), "'/' in an id: %s", err.message);
  CHECK (!tt_fed_client_id_valid ("") && !tt_fed_client_id_valid ("+")
      && !tt_fed_client_id_valid ("#") && tt_fed_client_id_valid ("a"),
      "client id rule");

  /* another model: signature, then size */
  tt_model *b = model_of (ini_b, 7, true);
  st = tt_fed_decode (msg, len, "t/update/dev-1",
      tt_model_weight_signature (b), tt_model_weight_floats (b), &d, &err);
  CHECK (st == TT_ERR_INVALID && strstr (err.message, "signature")
      && strstr (err.message, "t/update/dev-1")
      && strstr (err.message, "dev-1.x_Y"), "another model: %s", err.message);
  CHECK (d.weights == NULL, "nothing kept");
  st = tt_fed_decode (msg, len, "m", sig, n + 1, &d, &err);
  CHECK (st == TT_ERR_INVALID && strstr (err.message, "weight floats"),
      "wrong size: %s", err.message);
  /* an envelope lying about the bundle's model */
  size_t blen;
  unsigned char *bm = encode (b, TT_FED_UPDATE, 3, 10, "liar", &blen);
  unsigned char *lie = malloc (blen);
  memcpy (lie, bm, blen);
  for (int k = 0; k < 8; k++) {
    lie[32 + k] = (unsigned char) (sig >> (8 * k));
    lie[40 + k] = (unsigned char) ((uint64_t) n >> (8 * k));
  }
  reseal (lie, blen);
  st = tt_fed_decode (lie, blen, "m", sig, n, &d, &err);
  CHECK (st == TT_ERR_INVALID && strstr (err.message, "its bundle's model"),
      "envelope lies about the model: %s", err.message);
  free (lie);
  free (bm);
  tt_model_free (b);

  /* an update of zero samples */
  unsigned char *z = malloc (len);
  memcpy (z, msg, len);
  memset (z + 24, 0, 8);
  reseal (z, len);
  st = tt_fed_decode (z, len, "m", sig, n, &d, &err);
  CHECK (st == TT_ERR_INVALID && strstr (err.message, "0 samples"),
      "zero samples: %s", err.message);
  free (z);

  /* a NaN weight with every checksum made right again (the bundle's
   * weight section's too): refused for the NaN */
  unsigned char *nan_msg = malloc (len);
  memcpy (nan_msg, msg, len);
  tt_bundle_info info;
  memset (&info, 0, sizeof info);
  st = tt_bundle_inspect_memory (nan_msg + 128, len - 128, "b", &info, &err);
  CHECK (st == TT_OK, "inspect: %s", err.message);
  for (uint32_t s = 0; s < info.n_sections; s++) {
    tt_bundle_section_info *sec = &info.sections[s];
    if (sec->type != TT_BUNDLE_SECTION_WEIGHTS)
      continue;
    unsigned char *data = nan_msg + 128 + sec->offset;
    float q = NAN;
    memcpy (data, &q, sizeof q);
    uint32_t fresh = (uint32_t) crc32 (0, data, (uInt) sec->length);
    /* the stored CRC sits in the bundle's header */
    unsigned char *bh = nan_msg + 128 + 24;     /* after the preamble */
    uint32_t hlen = get32 (nan_msg + 128 + 12);
    for (size_t at = 0; at + 4 <= hlen; at++)
      if (get32 (bh + at) == sec->crc32_stored) {
        put32 (bh + at, fresh);
        break;
      }
    /* and the bundle header's own checksum (preamble bytes 16..19) */
    put32 (nan_msg + 128 + 16, (uint32_t) crc32 (0, bh, hlen));
  }
  tt_bundle_info_clear (&info);
  reseal (nan_msg, len);
  st = tt_fed_decode (nan_msg, len, "t/update/dev-1", sig, n, &d, &err);
  CHECK (st != TT_OK && (strstr (err.message, "finite")
          || strstr (err.message, "NaN")), "NaN weight: %s", err.message);
  free (nan_msg);

  free (msg);
  free (w);
  tt_model_free (a);
}

/* every byte is covered by a checksum: any change and any truncation is
 * refused, none crashes */
static void
test_corrupted (void)
{
  tt_model *a = model_of (ini_a, 11, true);
  size_t n = tt_model_weight_floats (a), len;
  uint64_t sig = tt_model_weight_signature (a);
  unsigned char *msg = encode (a, TT_FED_UPDATE, 1, 5, "fuzz", &len);
  unsigned char *buf = malloc (len);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  int refused = 0, runs = 400, resealed_refused = 0;
  for (int i = 0; i < runs; i++) {
    memcpy (buf, msg, len);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    size_t at = (size_t) (x % len);
    int mode = i % 4;
    size_t use = len;
    if (mode == 0)
      buf[at] ^= (unsigned char) (1u << (x >> 40) % 8);
    else if (mode == 1)
      use = at;                 /* truncated */
    else {
      /* a few bytes changed, then the envelope resealed: the bundle's own
       * checks must catch what the envelope no longer does */
      for (int k = 0; k < 1 + (int) ((x >> 20) % 4); k++)
        buf[(at + (size_t) k * 97) % len] ^= (unsigned char) (0x5a + k);
      reseal (buf, len);
    }
    tt_fed_message d;
    tt_error err = { 0 };
    tt_status st = tt_fed_decode (buf, use, "fuzz", sig, n, &d, &err);
    if (st != TT_OK) {
      refused++;
      if (mode >= 2)
        resealed_refused++;
      if (!err.message[0])
        CHECK (0, "a refusal without a message");
    } else {
      /* a resealed change in the envelope's own fields can still be a
       * valid message (another round, samples, id): never another model */
      CHECK (mode >= 2 && d.header.signature == sig, "case %d accepted", i);
      for (size_t k = 0; k < n; k++)
        if (!isfinite (d.weights[k]))
          CHECK (0, "accepted a non-finite weight");
      tt_fed_message_clear (&d);
    }
  }
  printf ("corrupted: %d of %d refused (%d of the resealed)\n", refused, runs,
      resealed_refused);
  CHECK (refused >= runs / 2, "plain corruptions all refused");
  free (buf);
  free (msg);
  tt_model_free (a);
}

static tt_fed_message
update_of (const float *w, size_t n, uint64_t sig, uint32_t round,
    uint64_t samples, const char *id)
{
  tt_fed_message m;
  memset (&m, 0, sizeof m);
  m.header.kind = TT_FED_UPDATE;
  m.header.round = round;
  m.header.samples = samples;
  m.header.signature = sig;
  m.header.n_floats = n;
  snprintf (m.header.client_id, sizeof m.header.client_id, "%s", id);
  m.weights = malloc (n * sizeof (float));
  memcpy (m.weights, w, n * sizeof (float));
  return m;
}

static void
test_round (void)
{
  enum
  { N = 5 };
  const float w[3][N] = {
    {1.0f, -2.0f, 0.1f, 3.0f, 1e-3f},
    {2.0f, 4.0f, 0.2f, -3.0f, 2e-3f},
    {0.5f, 0.0f, 0.3f, 1.0f, 4e-3f},
  };
  const uint64_t samples[3] = { 100, 300, 600 };
  const char *ids[3] = { "c", "a", "b" };
  float avg[2][N];
  tt_error err = { 0 };
  for (int order = 0; order < 2; order++) {
    tt_fed_round r;
    tt_fed_round_init (&r, 42, N, 4);
    for (int j = 0; j < 3; j++) {
      int i = order ? 2 - j : j;
      tt_fed_message m = update_of (w[i], N, 42, 4, samples[i], ids[i]);
      CHECK (tt_fed_round_add (&r, &m, &err) == TT_OK, "add: %s", err.message);
      CHECK (m.weights == NULL, "taken");
    }
    CHECK (r.n == 3 && r.samples == 1000, "3 updates, 1000 samples");
    tt_fed_message m = update_of (w[0], N, 42, 3, 10, "d");
    CHECK (tt_fed_round_add (&r, &m, &err) == TT_ERR_INVALID
        && strstr (err.message, "stale"), "stale: %s", err.message);
    tt_fed_message_clear (&m);
    m = update_of (w[0], N, 42, 5, 10, "d");
    CHECK (tt_fed_round_add (&r, &m, &err) == TT_ERR_INVALID
        && strstr (err.message, "ahead"), "ahead: %s", err.message);
    tt_fed_message_clear (&m);
    m = update_of (w[0], N, 42, 4, 10, "a");
    CHECK (tt_fed_round_add (&r, &m, &err) == TT_ERR_INVALID
        && strstr (err.message, "replayed"), "replay: %s", err.message);
    tt_fed_message_clear (&m);
    m = update_of (w[0], N, 43, 4, 10, "e");
    CHECK (tt_fed_round_add (&r, &m, &err) == TT_ERR_INVALID
        && strstr (err.message, "another model"), "signature: %s", err.message);
    tt_fed_message_clear (&m);
    m = update_of (w[0], N, 42, 4, 10, "f");
    m.header.kind = TT_FED_GLOBAL;
    CHECK (tt_fed_round_add (&r, &m, &err) == TT_ERR_INVALID, "a global");
    tt_fed_message_clear (&m);
    CHECK (r.n == 3 && r.samples == 1000, "refusals left the round alone");
    CHECK (tt_fed_round_average (&r, avg[order], &err) == TT_OK, "average");
    tt_fed_round_reset (&r, 5);
    CHECK (r.n == 0 && r.round == 5, "reset");
    CHECK (tt_fed_round_average (&r, avg[order], &err) == TT_ERR_STATE,
        "empty round: %s", err.message);
    tt_fed_round_clear (&r);
  }
  CHECK (!memcmp (avg[0], avg[1], sizeof avg[0]),
      "arrival order does not change the average");
  for (int k = 0; k < N; k++) {
    /* ids sorted: a (300), b (600), c (100) */
    double s = 0.0;
    s += (double) w[1][k] * 300.0;
    s += (double) w[2][k] * 600.0;
    s += (double) w[0][k] * 100.0;
    float want = (float) (s / 1000.0);
    CHECK (avg[0][k] == want, "weight %d: %g, want %g", k, avg[0][k], want);
  }
}

/* an update far from the others is rejected at the close, its id still
 * counted (a resend is a replay); with two updates nothing is rejected */
static void
test_screen (void)
{
  enum
  { N = 4 };
  const float global[N] = { 0, 0, 0, 0 };
  const float w[4][N] = {
    {1, 0, 0, 0}, {0, 1.5f, 0, 0}, {0, 0, 0.8f, 0}, {500, 0, 0, 0},
  };
  const char *ids[4] = { "a", "b", "c", "huge" };
  tt_error err = { 0 };
  tt_fed_round r;
  tt_fed_round_init (&r, 9, N, 1);
  for (int i = 0; i < 2; i++) {
    tt_fed_message m = update_of (w[i == 1 ? 3 : 0], N, 9, 1, 10, ids[i ==
            1 ? 3 : 0]);
    tt_fed_round_add (&r, &m, &err);
  }
  CHECK (tt_fed_round_screen (&r, global, 10.0, NULL, NULL) == 0,
      "two updates: no outlier can be told");
  tt_fed_round_clear (&r);

  tt_fed_round_init (&r, 9, N, 1);
  for (int i = 0; i < 4; i++) {
    tt_fed_message m = update_of (w[i], N, 9, 1, 10 * (i + 1), ids[i]);
    CHECK (tt_fed_round_add (&r, &m, &err) == TT_OK, "add %s", ids[i]);
  }
  CHECK (tt_fed_round_screen (&r, global, 10.0, NULL, NULL) == 1,
      "the huge one rejected");
  CHECK (tt_fed_round_accepted (&r) == 3 && r.samples == 60,
      "3 left, 60 samples");
  CHECK (tt_fed_round_screen (&r, global, 10.0, NULL, NULL) == 0,
      "nothing more");
  tt_fed_message m = update_of (w[0], N, 9, 1, 10, "huge");
  CHECK (tt_fed_round_add (&r, &m, &err) == TT_ERR_INVALID
      && strstr (err.message, "replayed"), "a rejected client's resend: %s",
      err.message);
  tt_fed_message_clear (&m);
  float avg[N];
  CHECK (tt_fed_round_average (&r, avg, &err) == TT_OK, "average");
  CHECK (avg[0] == (float) (10.0 / 60) && avg[1] == (float) (1.5 * 20 / 60)
      && avg[2] == (float) (0.8f * 30.0 / 60) && avg[3] == 0.0f,
      "the average leaves the rejected out: %g %g %g %g", avg[0], avg[1],
      avg[2], avg[3]);
  tt_fed_round_clear (&r);
}

/* spilled updates (written to a file as they come, read back at the
 * close) give the same decisions and bit for bit the same average as
 * updates kept in memory, round after round; the file leaves no name */
static void
test_spill (void)
{
  enum
  { N = 1000, C = 7 };
  static float w[C][N], global[N];
  uint32_t x = 12345;
  for (int k = 0; k < N; k++) {
    x = x * 1664525u + 1013904223u;
    global[k] = (float) (x >> 8) / (float) (1u << 24) - 0.5f;
  }
  for (int i = 0; i < C; i++)
    for (int k = 0; k < N; k++) {
      x = x * 1664525u + 1013904223u;
      float step = ((float) (x >> 8) / (float) (1u << 24) - 0.5f) * 0.01f;
      w[i][k] = global[k] + (i == 4 ? 300.0f * step : step);
    }
  const char *ids[C] = { "g", "b", "e", "a", "huge", "c", "f" };
  char dir[512];
  snprintf (dir, sizeof dir, "%s", tt_test_write_text ("mark", "x"));
  *strrchr (dir, '/') = '\0';
  float avg[2][2][N];
  uint32_t rejected[2][2], accepted[2][2];
  uint64_t samples[2][2];
  tt_error err = { 0 };
  for (int spill = 0; spill < 2; spill++) {
    tt_fed_round r;
    tt_fed_round_init (&r, 7, N, 1);
    if (spill)
      CHECK (tt_fed_round_spill (&r, dir, &err) == TT_OK, "spill: %s",
          err.message);
    for (int round = 0; round < 2; round++) {
      /* round 2: the clients in another order, one fewer */
      for (int j = 0; j < C - round; j++) {
        int i = round ? C - 1 - j : j;
        tt_fed_message m = update_of (w[i], N, 7, (uint32_t) round + 1,
            (uint64_t) (37 * i + 5), ids[i]);
        CHECK (tt_fed_round_add (&r, &m, &err) == TT_OK, "add: %s",
            err.message);
        CHECK (m.weights == NULL, "taken");
      }
      rejected[spill][round] = tt_fed_round_screen (&r, global, 10.0, NULL,
          NULL);
      accepted[spill][round] = tt_fed_round_accepted (&r);
      samples[spill][round] = r.samples;
      CHECK (tt_fed_round_average (&r, avg[spill][round], &err) == TT_OK,
          "average: %s", err.message);
      tt_fed_round_reset (&r, (uint32_t) round + 2);
    }
    tt_fed_round_clear (&r);
  }
  for (int round = 0; round < 2; round++) {
    CHECK (rejected[0][round] == 1 && rejected[1][round] == 1,
        "round %d: the huge one rejected (%u, %u)", round + 1,
        rejected[0][round], rejected[1][round]);
    CHECK (accepted[0][round] == accepted[1][round]
        && samples[0][round] == samples[1][round], "same updates kept");
    CHECK (!memcmp (avg[0][round], avg[1][round], sizeof avg[0][round]),
        "round %d: the spilled average is the in-memory one, bit for bit",
        round + 1);
  }
  DIR *d = opendir (dir);
  int names = 0;
  for (struct dirent * de; d && (de = readdir (d));)
    names += !!strstr (de->d_name, "tt-fed-spill");
  if (d)
    closedir (d);
  CHECK (names == 0, "no spill file left in %s (%d)", dir, names);
  tt_fed_round r;
  tt_fed_round_init (&r, 7, N, 1);
  CHECK (tt_fed_round_spill (&r, "/nonexistent-dir", &err) == TT_ERR_IO
      && strstr (err.message, "/nonexistent-dir"), "no folder: %s",
      err.message);
  tt_fed_round_clear (&r);
}

/* the end-of-run marker: the envelope alone, read by peek, refused by
 * decode (it is no model), damage caught by its checksum */
static void
test_end_marker (void)
{
  tt_fed_header h;
  memset (&h, 0, sizeof h);
  h.kind = TT_FED_UPDATE;       /* ignored */
  h.round = 7;
  h.samples = 4321;
  h.signature = 0x1234;
  h.n_floats = 99;
  snprintf (h.client_id, sizeof h.client_id, "aggregator");
  void *m;
  size_t len;
  tt_error err = { 0 };
  CHECK (tt_fed_encode_end (&h, &m, &len, &err) == TT_OK && len == 128,
      "encode: %s", err.message);
  tt_fed_header p;
  CHECK (tt_fed_peek (m, len, "t/end", &p, &err) == TT_OK
      && p.kind == TT_FED_END && p.round == 7 && p.samples == 4321
      && p.signature == 0x1234 && p.n_floats == 99
      && !strcmp (p.client_id, "aggregator"), "peek: %s", err.message);
  tt_fed_message d;
  CHECK (tt_fed_decode (m, len, "t/end", 0x1234, 99, &d, &err)
      == TT_ERR_INVALID && strstr (err.message, "end-of-run marker"),
      "decode refuses it: %s", err.message);
  ((unsigned char *) m)[20] ^= 1;
  CHECK (tt_fed_peek (m, len, "t/end", &p, &err) == TT_ERR_PARSE
      && strstr (err.message, "envelope checksum"), "damaged: %s", err.message);
  free (m);
}

static void
test_files (void)
{
  const char *p = tt_test_write_text ("state.bin", "old");
  tt_error err = { 0 };
  CHECK (tt_fed_write_file (p, "new contents", 12, &err) == TT_OK, "write: %s",
      err.message);
  void *data;
  size_t len;
  CHECK (tt_fed_read_file (p, 1 << 20, &data, &len, &err) == TT_OK
      && len == 12 && !memcmp (data, "new contents", 12), "read back");
  free (data);
  CHECK (tt_fed_read_file (p, 4, &data, &len, &err) == TT_ERR_INVALID,
      "too large: %s", err.message);
  CHECK (tt_fed_write_file ("/nonexistent-dir/x", "a", 1, &err) == TT_ERR_IO
      && strstr (err.message, "/nonexistent-dir/x"), "no folder: %s",
      err.message);
  CHECK (tt_fed_read_file ("/nonexistent-dir/x", 4, &data, &len, &err)
      == TT_ERR_IO, "no file");
}

int
main (void)
{
  TT_TEST_RUN (test_round_trip);
  TT_TEST_RUN (test_corrupted);
  TT_TEST_RUN (test_round);
  TT_TEST_RUN (test_screen);
  TT_TEST_RUN (test_spill);
  TT_TEST_RUN (test_end_marker);
  TT_TEST_RUN (test_files);
  return tt_test_summary ();
}
