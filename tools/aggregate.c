/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer aggregate: the federation's aggregator (issue 20).
 *
 * Publishes the global model of round 0 (MODEL's weights, or those of the
 * last round saved: a restarted aggregator resumes there) retained on
 * <prefix>/global, then for each round collects the devices' updates from
 * <prefix>/update/<client-id> (ext/federation/tt_fed.h: one per client and
 * round, of this model, finite), until N came, or K (the quorum) once the
 * round timeout has passed; averages them weighted by their samples; saves
 * the result (--save: the message first, PATH.state, then the bundle
 * PATH, each atomically) and publishes it retained as the next global
 * model.
 */
#include "aggregate.h"
#include "cli_number.h"

#ifdef TT_HAVE_FEDERATION

#include "fed_mqtt.h"
#include "tt_bundle.h"
#include "tt_engine.h"
#include "tt_fed.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct
{
  const char *model, *broker, *topic, *client_id, *save, *archive, *spill;
  const char *credentials, *ca, *cert, *key;
  uint64_t clients, rounds, quorum, seed;
  double timeout, max_norm_ratio;
  bool has_seed;
} agg_options;

static volatile sig_atomic_t agg_stop;

static void
agg_on_signal (int sig)
{
  (void) sig;
  agg_stop = 1;
}

static int
agg_fail (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fputs ("tensor-trainer aggregate: ", stderr);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
  return 1;
}

static double
agg_now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static void
agg_usage (FILE * out)
{
  fputs ("usage: tensor-trainer aggregate MODEL --broker URL --clients N "
      "--rounds R\n"
      "    [--quorum K] [--round-timeout S] [--save GLOBAL.ttb]\n"
      "    [--topic PREFIX] [--client-id ID] [--credentials FILE]\n"
      "    [--ca FILE] [--cert FILE --key FILE] [--archive DIR] [--seed S]\n"
      "    [--max-norm-ratio F] [--spill-dir DIR]\n"
      "Federated averaging over MQTT: publishes the global model retained on\n"
      "PREFIX/global (default prefix tensor-trainer), takes one update per\n"
      "device and round from PREFIX/update/<client-id>, closes a round when N\n"
      "came, or K (default N) once S seconds (default 0: none) have passed,\n"
      "averages them weighted by their samples and publishes the result as\n"
      "the next round's global model; after the last round, an end-of-run\n"
      "marker retained on PREFIX/end (devices stop with the last global\n"
      "model). When a round would close with 3\n"
      "updates or more, those that moved from the global model more than F\n"
      "times (default 10; 0: no check) the round's median move (L2 norm) are\n"
      "rejected. --save writes the global model each round (GLOBAL.ttb, a\n"
      "bundle, and GLOBAL.ttb.state, the message a restart resumes from).\n"
      "--archive keeps every update taken (rejected-*: rejected ones) and\n"
      "every global message in DIR. A round's updates wait for its close\n"
      "in an unlinked file in --spill-dir (default: the folder of --save,\n"
      "else $TMPDIR or /tmp), not in memory.\n"
      "URL: mqtt://HOST[:PORT] or mqtts://HOST[:PORT] (TLS, --ca,\n"
      "--cert/--key); FILE of --credentials: one line USER:PASSWORD.\n", out);
}

static int
agg_parse (int argc, char **argv, agg_options * o)
{
  memset (o, 0, sizeof *o);
  o->topic = "tensor-trainer";
  o->client_id = "aggregator";
  o->max_norm_ratio = 10.0;
  if (argc < 2 || argv[1][0] == '-')
    return -1;
  o->model = argv[1];
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    const char **str = NULL;
    uint64_t *num = NULL, max = UINT32_MAX;
    if (!strcmp (a, "--broker"))
      str = &o->broker;
    else if (!strcmp (a, "--topic"))
      str = &o->topic;
    else if (!strcmp (a, "--client-id"))
      str = &o->client_id;
    else if (!strcmp (a, "--save"))
      str = &o->save;
    else if (!strcmp (a, "--archive"))
      str = &o->archive;
    else if (!strcmp (a, "--spill-dir"))
      str = &o->spill;
    else if (!strcmp (a, "--credentials"))
      str = &o->credentials;
    else if (!strcmp (a, "--ca"))
      str = &o->ca;
    else if (!strcmp (a, "--cert"))
      str = &o->cert;
    else if (!strcmp (a, "--key"))
      str = &o->key;
    else if (!strcmp (a, "--clients"))
      num = &o->clients;
    else if (!strcmp (a, "--rounds"))
      num = &o->rounds;
    else if (!strcmp (a, "--quorum"))
      num = &o->quorum;
    else if (!strcmp (a, "--seed")) {
      num = &o->seed;
      max = UINT64_MAX;
      o->has_seed = true;
    } else if (!strcmp (a, "--max-norm-ratio")) {
      char *end;
      errno = 0;
      double t = v ? strtod (v, &end) : -1.0;
      if (!v || errno || *end || !(t >= 0.0 && t <= 1e12))
        return agg_fail ("--max-norm-ratio: '%s' is not a ratio (0: no "
            "check)", v ? v : "");
      o->max_norm_ratio = t;
      i++;
      continue;
    } else if (!strcmp (a, "--round-timeout")) {
      char *end;
      errno = 0;
      double t = v ? strtod (v, &end) : -1.0;
      if (!v || errno || *end || !(t >= 0.0 && t <= 1e7))
        return agg_fail ("--round-timeout: '%s' is not seconds (0 to 1e7)",
            v ? v : "");
      o->timeout = t;
      i++;
      continue;
    } else
      return agg_fail ("unknown option '%s'", a);
    if (!v)
      return agg_fail ("%s needs a value", a);
    if (str)
      *str = v;
    else if (!tt_cli_uint (v, max, num))
      return agg_fail ("%s: '%s' is not a whole number up to %" PRIu64, a, v,
          max);
    i++;
  }
  if (!o->broker)
    return agg_fail ("--broker URL is required (mqtt://HOST[:PORT])");
  if (o->clients == 0)
    return agg_fail ("--clients N (1 or more) is required");
  if (o->rounds == 0)
    return agg_fail ("--rounds R (1 or more) is required");
  if (o->quorum == 0)
    o->quorum = o->clients;
  if (o->quorum > o->clients)
    return agg_fail ("--quorum %" PRIu64 " is more than --clients %" PRIu64,
        o->quorum, o->clients);
  if (!tt_fed_client_id_valid (o->client_id))
    return agg_fail ("--client-id '%s': 1 to 63 characters of A-Z a-z 0-9 "
        "_ . -", o->client_id);
  if (!*o->topic || strpbrk (o->topic, "+#") || o->topic[0] == '/'
      || o->topic[strlen (o->topic) - 1] == '/')
    return agg_fail ("--topic '%s': a topic prefix without + or # and not "
        "starting or ending with /", o->topic);
  return 0;
}

typedef struct
{
  agg_options *o;
  tt_model *model;              /* compiled for training: what --save keeps */
  tt_model *carrier;            /* inference, batch 1: the messages */
  uint64_t signature;
  size_t n_floats;
  float *weights;
  tt_fed_mqtt *mqtt;
  unsigned connections;         /* when the last global was published */
  void *global_msg;             /* it, for a broker that lost it */
  size_t global_len;
  char global_topic[512], update_prefix[512], end_topic[512];
} agg_state;

static tt_model *
agg_open (agg_options * o, bool inference, tt_error * err)
{
  tt_open_options oo;
  memset (&oo, 0, sizeof oo);
  oo.inference = inference;
  oo.batch_size = inference ? 1 : 0;
  oo.plan_mode = inference ? TT_PLAN_REPLAN : TT_PLAN_AUTO;
  oo.has_seed = o->has_seed;
  oo.seed = o->seed;
  return tt_model_open (o->model, &oo, NULL, err);
}

static int
agg_archive (agg_state * s, const char *name, const void *data, size_t len)
{
  if (!s->o->archive)
    return 0;
  char path[4096];
  tt_error err = { 0 };
  snprintf (path, sizeof path, "%s/%s", s->o->archive, name);
  if (tt_fed_write_file (path, data, len, &err) != TT_OK)
    return agg_fail ("--archive: %s", err.message);
  return 0;
}

/* Publishes the last global message, retained, until the broker takes
 * it. */
static void
agg_send_global (agg_state * s)
{
  tt_error err = { 0 };
  for (;;) {
    unsigned c = tt_fed_mqtt_connections (s->mqtt);
    tt_status st = tt_fed_mqtt_publish (s->mqtt, s->global_topic,
        s->global_msg, s->global_len, true, &err);
    if (st == TT_OK || agg_stop) {
      s->connections = c;
      break;
    }
    fprintf (stderr, "tensor-trainer aggregate: %s; retrying\n", err.message);
    tt_fed_mqtt_wait_connected (s->mqtt, 2000, NULL);
  }
}

/* The global message of round (s->weights), saved and published. */
static int
agg_publish_global (agg_state * s, uint32_t round, uint64_t samples, bool save)
{
  tt_error err = { 0 };
  if (tt_model_import_weights (s->carrier, s->weights, s->n_floats,
          &err) != TT_OK
      || tt_model_import_weights (s->model, s->weights, s->n_floats,
          &err) != TT_OK)
    return agg_fail ("%s", err.message);
  tt_fed_header h;
  memset (&h, 0, sizeof h);
  h.kind = TT_FED_GLOBAL;
  h.round = round;
  h.samples = samples;
  snprintf (h.client_id, sizeof h.client_id, "%s", s->o->client_id);
  void *msg;
  size_t len;
  if (tt_fed_encode (s->carrier, &h, &msg, &len, &err) != TT_OK)
    return agg_fail ("round %u: %s", round, err.message);
  if (save && s->o->save) {
    /* the message first: it alone is what a restart resumes from */
    char state[4200];
    snprintf (state, sizeof state, "%s.state", s->o->save);
    if (tt_fed_write_file (state, msg, len, &err) != TT_OK
        || tt_bundle_save (s->model, s->o->save, NULL, &err) != TT_OK) {
      free (msg);
      return agg_fail ("round %u: --save: %s", round, err.message);
    }
  }
  char name[64];
  snprintf (name, sizeof name, "global-%06u.msg", round);
  if (agg_archive (s, name, msg, len)) {
    free (msg);
    return 1;
  }
  /* retained: a device that connects later gets it at once; a broker
   * that is away now gets it when the connection is back */
  free (s->global_msg);
  s->global_msg = msg;
  s->global_len = len;
  agg_send_global (s);
  printf ("round %u: global model published on %s (%zu bytes)\n", round,
      s->global_topic, len);
  fflush (stdout);
  return 0;
}

/* The end of the run, retained on PREFIX/end (docs/federation.md):
 * devices that get it stop with the last global model. When a run starts
 * (or resumes before its last round), a marker left by a previous run
 * is cleared first (an empty retained message deletes it). */
static int
agg_publish_end (agg_state * s, uint32_t round, uint64_t samples, bool end)
{
  tt_error err = { 0 };
  void *msg = NULL;
  size_t len = 0;
  if (end) {
    tt_fed_header h;
    memset (&h, 0, sizeof h);
    h.round = round;
    h.samples = samples;
    h.signature = s->signature;
    h.n_floats = s->n_floats;
    snprintf (h.client_id, sizeof h.client_id, "%s", s->o->client_id);
    if (tt_fed_encode_end (&h, &msg, &len, &err) != TT_OK)
      return agg_fail ("%s", err.message);
  }
  for (;;) {
    tt_status st = tt_fed_mqtt_publish (s->mqtt, s->end_topic, msg, len,
        true, &err);
    if (st == TT_OK || agg_stop)
      break;
    fprintf (stderr, "tensor-trainer aggregate: %s; retrying\n", err.message);
    tt_fed_mqtt_wait_connected (s->mqtt, 2000, NULL);
  }
  free (msg);
  if (end)
    printf ("round %u: end of the run published on %s\n", round, s->end_topic);
  fflush (stdout);
  return 0;
}

typedef struct
{
  agg_state *s;
  uint32_t round;
} agg_reject_ctx;

/* An update rejected at the round's close: said, and its archived copy
 * renamed rejected-* (the round's average does not include it). */
static void
agg_on_reject (void *user, const char *client_id, const char *reason)
{
  agg_reject_ctx *c = user;
  printf ("round %u: rejected the update of %s: %s\n", c->round, client_id,
      reason);
  if (c->s->o->archive) {
    char from[4200], to[4200];
    snprintf (from, sizeof from, "%s/update-%06u-%s.msg", c->s->o->archive,
        c->round, client_id);
    snprintf (to, sizeof to, "%s/rejected-%06u-%s.msg", c->s->o->archive,
        c->round, client_id);
    rename (from, to);
  }
}

/* One received message of round r: taken into it or refused (a line
 * saying why; the round goes on). */
static void
agg_take (agg_state * s, tt_fed_round * r, const char *topic,
    const void *data, size_t len)
{
  size_t pl = strlen (s->update_prefix);
  if (strncmp (topic, s->update_prefix, pl) != 0)
    return;                     /* our own global model, retained */
  const char *id = topic + pl;
  tt_error err = { 0 };
  tt_fed_message m;
  if (tt_fed_decode (data, len, topic, s->signature, s->n_floats, &m,
          &err) != TT_OK) {
    printf ("round %u: refused %s: %s\n", r->round, topic, err.message);
    return;
  }
  if (strcmp (m.header.client_id, id) != 0) {
    printf ("round %u: refused %s: the update says client %s, the topic "
        "%s\n", r->round, topic, m.header.client_id, id);
    tt_fed_message_clear (&m);
    return;
  }
  uint64_t samples = m.header.samples;
  char name[128];
  snprintf (name, sizeof name, "update-%06u-%s.msg", r->round, id);
  if (tt_fed_round_add (r, &m, &err) != TT_OK) {
    printf ("round %u: refused %s: %s\n", r->round, topic, err.message);
    tt_fed_message_clear (&m);
    return;
  }
  agg_archive (s, name, data, len);
  printf ("round %u: update from %s (%" PRIu64 " samples), %u of %" PRIu64
      "\n", r->round, id, samples, tt_fed_round_accepted (r), s->o->clients);
  fflush (stdout);
}

static int
agg_run (agg_options * o)
{
  agg_state s;
  memset (&s, 0, sizeof s);
  s.o = o;
  tt_error err = { 0 };
  s.model = agg_open (o, false, &err);
  if (!s.model)
    return agg_fail ("%s", err.message);
  s.carrier = agg_open (o, true, &err);
  if (!s.carrier) {
    tt_model_free (s.model);
    return agg_fail ("%s", err.message);
  }
  int rc = 1;
  tt_fed_round round;
  memset (&round, 0, sizeof round);
  s.signature = tt_model_weight_signature (s.model);
  s.n_floats = tt_model_weight_floats (s.model);
  s.weights = malloc (s.n_floats * sizeof (float));
  if (!s.weights) {
    agg_fail ("out of memory");
    goto done;
  }
  if (tt_model_export_weights (s.model, s.weights, s.n_floats, &err) != TT_OK) {
    agg_fail ("%s", err.message);
    goto done;
  }
  if (o->archive && mkdir (o->archive, 0777) != 0 && errno != EEXIST) {
    agg_fail ("--archive %s: %s", o->archive, strerror (errno));
    goto done;
  }

  /* a restart resumes from the last round saved */
  uint32_t done_round = 0;
  uint64_t done_samples = 0;
  if (o->save) {
    char state[4200];
    snprintf (state, sizeof state, "%s.state", o->save);
    void *data;
    size_t len;
    struct stat st;
    if (stat (state, &st) == 0) {
      tt_fed_message m;
      if (tt_fed_read_file (state, (size_t) 1 << 31, &data, &len,
              &err) != TT_OK
          || tt_fed_decode (data, len, state, s.signature, s.n_floats, &m,
              &err) != TT_OK) {
        free (data);
        agg_fail ("cannot resume: %s", err.message);
        goto done;
      }
      free (data);
      if (m.header.kind != TT_FED_GLOBAL) {
        tt_fed_message_clear (&m);
        agg_fail ("cannot resume: %s is not a global model", state);
        goto done;
      }
      done_round = m.header.round;
      done_samples = m.header.samples;
      memcpy (s.weights, m.weights, s.n_floats * sizeof (float));
      tt_fed_message_clear (&m);
      printf ("resumed from %s: round %u done\n", state, done_round);
    } else if (errno != ENOENT) {
      agg_fail ("--save: %s: %s", state, strerror (errno));
      goto done;
    }
  }

  /* a round's updates wait on disk, not in memory: O(model) whatever
   * the client count (tt_fed.h) */
  tt_fed_round_init (&round, s.signature, s.n_floats, done_round + 1);
  {
    char dir[4096];
    const char *tmp = getenv ("TMPDIR");
    if (o->spill)
      snprintf (dir, sizeof dir, "%s", o->spill);
    else if (o->save) {
      snprintf (dir, sizeof dir, "%s", o->save);
      char *slash = strrchr (dir, '/');
      if (!slash)
        snprintf (dir, sizeof dir, ".");
      else if (slash == dir)
        dir[1] = '\0';
      else
        *slash = '\0';
    } else
      snprintf (dir, sizeof dir, "%s", tmp && *tmp ? tmp : "/tmp");
    if (tt_fed_round_spill (&round, dir, &err) != TT_OK) {
      agg_fail ("--spill-dir: %s", err.message);
      goto done;
    }
  }

  snprintf (s.global_topic, sizeof s.global_topic, "%s/global", o->topic);
  snprintf (s.update_prefix, sizeof s.update_prefix, "%s/update/", o->topic);
  snprintf (s.end_topic, sizeof s.end_topic, "%s/end", o->topic);
  char sub[600];
  snprintf (sub, sizeof sub, "%s/update/+", o->topic);
  const char *topics[] = { sub, NULL };
  tt_fed_mqtt_options mo;
  memset (&mo, 0, sizeof mo);
  mo.url = o->broker;
  mo.client_id = o->client_id;
  mo.credentials = o->credentials;
  mo.ca = o->ca;
  mo.cert = o->cert;
  mo.key = o->key;
  /* the broker keeps updates sent while the aggregator is away */
  mo.persistent = true;
  /* a few updates wait in memory; when all devices send at once, the
   * others wait in the broker */
  mo.max_queued = 2 * s.n_floats * sizeof (float) + ((size_t) 1 << 20);
  s.mqtt = tt_fed_mqtt_new (&mo, topics, &err);
  if (!s.mqtt) {
    agg_fail ("%s", err.message);
    goto done;
  }
  while (tt_fed_mqtt_wait_connected (s.mqtt, 2000, &err) != TT_OK) {
    fprintf (stderr, "tensor-trainer aggregate: %s (%s)\n", err.message,
        o->broker);
    if (agg_stop || strstr (err.message, "refused"))
      goto done;
  }
  printf ("connected to %s: model %s, %zu weights, signature %016" PRIx64
      ", %" PRIu64 " clients, quorum %" PRIu64 ", %" PRIu64 " rounds\n",
      o->broker, o->model, s.n_floats, s.signature, o->clients, o->quorum,
      o->rounds);
  /* a run that goes on: no end marker of an earlier one may stop its
   * devices (cleared before its global model comes) */
  if (done_round < o->rounds && agg_publish_end (&s, done_round, 0, false))
    goto done;
  if (agg_publish_global (&s, done_round, done_samples, done_round == 0))
    goto done;

  while (round.round <= o->rounds && !agg_stop) {
    double start = agg_now ();
    bool late = false;
    while (!agg_stop) {
      double waited = agg_now () - start;
      bool timed_out = o->timeout > 0 && waited >= o->timeout;
      uint32_t n = tt_fed_round_accepted (&round);
      if (n >= o->clients || (timed_out && n >= o->quorum)) {
        /* the round would close: updates far from the others' first */
        agg_reject_ctx ctx = { &s, round.round };
        if (tt_fed_round_screen (&round, s.weights, o->max_norm_ratio,
                agg_on_reject, &ctx) > 0) {
          fflush (stdout);
          continue;
        }
        if (n < o->clients)
          printf ("round %u: closed after %.1f s with %u of %" PRIu64
              " updates (quorum %" PRIu64 ")\n", round.round, waited, n,
              o->clients, o->quorum);
        break;
      }
      if (timed_out) {
        if (!late)
          printf ("round %u: %.1f s passed with %u of %" PRIu64 " updates, "
              "below the quorum %" PRIu64 ": waiting on\n", round.round,
              waited, n, o->clients, o->quorum);
        late = true;
      }
      char *topic;
      void *data;
      size_t len;
      if (tt_fed_mqtt_connections (s.mqtt) != s.connections
          && tt_fed_mqtt_connected (s.mqtt)) {
        /* connected again: the broker may have restarted and lost the
         * retained global model (and our persistent session) */
        printf ("round %u: connected again to %s: global model of round %u "
            "published again\n", round.round, o->broker, round.round - 1);
        fflush (stdout);
        agg_send_global (&s);
      }
      if (tt_fed_mqtt_next (s.mqtt, 200, &topic, &data, &len)) {
        agg_take (&s, &round, topic, data, len);
        free (topic);
        free (data);
        /* what was taken or refused is seen at once by whoever watches */
        fflush (stdout);
      }
    }
    if (agg_stop)
      break;
    if (tt_fed_round_average (&round, s.weights, &err) != TT_OK) {
      agg_fail ("%s", err.message);
      goto done;
    }
    printf ("round %u: averaged %u updates of %" PRIu64 " samples\n",
        round.round, tt_fed_round_accepted (&round), round.samples);
    if (agg_publish_global (&s, round.round, round.samples, true))
      goto done;
    done_samples = round.samples;
    tt_fed_round_reset (&round, round.round + 1);
  }
  if (agg_stop) {
    printf ("stopped: round %u not finished (the last saved round is kept)"
        "\n", round.round);
    rc = 1;
  } else {
    /* after the last global model: a device that has it ends with it */
    if (agg_publish_end (&s, round.round - 1, done_samples, true))
      goto done;
    printf ("done: %" PRIu64 " rounds\n", o->rounds);
    rc = 0;
  }
  if (!tt_fed_mqtt_flush (s.mqtt, 10000)) {
    agg_fail ("the last global model was not acknowledged by the broker");
    rc = 1;
  }
done:
  fflush (stdout);
  tt_fed_round_clear (&round);
  tt_fed_mqtt_free (s.mqtt);
  free (s.global_msg);
  free (s.weights);
  tt_model_free (s.carrier);
  tt_model_free (s.model);
  return rc;
}

int
tt_cli_aggregate (int argc, char **argv)
{
  agg_options o;
  if (argc >= 2 && (!strcmp (argv[1], "-h") || !strcmp (argv[1], "--help"))) {
    agg_usage (stdout);
    return 0;
  }
  int p = agg_parse (argc, argv, &o);
  if (p == -1) {
    agg_usage (stderr);
    return 2;
  }
  if (p)
    return 2;
  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_handler = agg_on_signal;
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
  return agg_run (&o);
}

#else

#include <stdio.h>

int
tt_cli_aggregate (int argc, char **argv)
{
  (void) argc;
  (void) argv;
  fputs ("tensor-trainer aggregate: this build has no federation (it needs "
      "libmosquitto: Debian's libmosquitto-dev, then meson "
      "-Dfederation=enabled)\n", stderr);
  return 2;
}

#endif
