/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Many simulated devices in one process, for the aggregator's benchmark
 * (tests/bench/federation_aggregate.sh):
 *
 *   fed-swarm URL PREFIX MODEL CLIENTS ROUNDS
 *
 * CLIENTS MQTT connections (client ids swarm-000, ...) each publish, in
 * every round, an update of MODEL (its initial weights of seed i, the
 * samples 100 + i) on PREFIX/update/<id>, all at once as soon as the
 * previous round's global model is out on PREFIX/global; a watcher
 * connection times the round from the first publication to the round's
 * global model. The updates are encoded once; each round only their
 * round field and envelope checksum change (tt_fed.h's layout). Prints
 * one line a round and a summary: updates a second, seconds a round.
 */
#include "fed_mqtt.h"
#include "tt_fed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static void
put32 (unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char) (v >> (8 * i));
}

/* the newest global model's round seen, + 1 (0: none yet) */
static uint32_t seen;

/* waits for the global model of round want; false after 120 s */
static bool
wait_global (tt_fed_mqtt * watch, uint32_t want)
{
  double deadline = now () + 120.0;
  while (seen < want + 1 && now () < deadline) {
    char *topic;
    void *data;
    size_t len;
    if (!tt_fed_mqtt_next (watch, 500, &topic, &data, &len))
      continue;
    tt_fed_header h;
    tt_error err = { 0 };
    if (tt_fed_peek (data, len, topic, &h, &err) == TT_OK
        && h.kind == TT_FED_GLOBAL && h.round + 1 > seen)
      seen = h.round + 1;
    free (topic);
    free (data);
  }
  return seen >= want + 1;
}

int
main (int argc, char **argv)
{
  if (argc != 6) {
    fprintf (stderr, "usage: fed-swarm URL PREFIX MODEL CLIENTS ROUNDS\n");
    return 2;
  }
  const char *url = argv[1], *prefix = argv[2], *model = argv[3];
  int clients = atoi (argv[4]), rounds = atoi (argv[5]);
  if (clients < 1 || clients > 1000 || rounds < 1) {
    fprintf (stderr, "fed-swarm: 1 to 1000 clients, 1 round or more\n");
    return 2;
  }
  tt_error err = { 0 };
  unsigned char **msg = calloc ((size_t) clients, sizeof *msg);
  size_t *len = calloc ((size_t) clients, sizeof *len);
  tt_fed_mqtt **conn = calloc ((size_t) clients, sizeof *conn);
  if (!msg || !len || !conn)
    return 1;
  for (int i = 0; i < clients; i++) {
    tt_open_options oo;
    memset (&oo, 0, sizeof oo);
    oo.inference = true;
    oo.batch_size = 1;
    oo.plan_mode = TT_PLAN_REPLAN;
    oo.has_seed = true;
    oo.seed = (uint64_t) i + 1;
    tt_model *m = tt_model_open (model, &oo, NULL, &err);
    if (!m) {
      fprintf (stderr, "fed-swarm: %s\n", err.message);
      return 1;
    }
    tt_fed_header h;
    memset (&h, 0, sizeof h);
    h.kind = TT_FED_UPDATE;
    h.round = 1;
    h.samples = 100 + (uint64_t) i;
    snprintf (h.client_id, sizeof h.client_id, "swarm-%03d", i);
    void *out;
    if (tt_fed_encode (m, &h, &out, &len[i], &err) != TT_OK) {
      fprintf (stderr, "fed-swarm: %s\n", err.message);
      return 1;
    }
    msg[i] = out;
    tt_model_free (m);
    tt_fed_mqtt_options o;
    memset (&o, 0, sizeof o);
    o.url = url;
    o.client_id = h.client_id;
    conn[i] = tt_fed_mqtt_new (&o, NULL, &err);
    if (!conn[i]) {
      fprintf (stderr, "fed-swarm: %s\n", err.message);
      return 1;
    }
  }
  char global[512];
  snprintf (global, sizeof global, "%s/global", prefix);
  const char *subscribe[] = { global, NULL };
  tt_fed_mqtt_options o;
  memset (&o, 0, sizeof o);
  o.url = url;
  o.client_id = "swarm-watch";
  tt_fed_mqtt *watch = tt_fed_mqtt_new (&o, subscribe, &err);
  if (!watch || tt_fed_mqtt_wait_connected (watch, 10000, &err) != TT_OK) {
    fprintf (stderr, "fed-swarm: %s\n", err.message);
    return 1;
  }
  for (int i = 0; i < clients; i++)
    if (tt_fed_mqtt_wait_connected (conn[i], 10000, &err) != TT_OK) {
      fprintf (stderr, "fed-swarm: client %d: %s\n", i, err.message);
      return 1;
    }
  printf ("%d clients connected, %zu-byte updates\n", clients, len[0]);
  double total = 0.0;
  int rc = 0;
  for (int r = 1; r <= rounds && !rc; r++) {
    if (!wait_global (watch, (uint32_t) r - 1)) {
      fprintf (stderr, "fed-swarm: no global model of round %d\n", r - 1);
      rc = 1;
      break;
    }
    double t0 = now ();
    for (int i = 0; i < clients && !rc; i++) {
      put32 (msg[i] + 20, (uint32_t) r);
      put32 (msg[i] + 124, (uint32_t) crc32 (0, msg[i], 124));
      char topic[600];
      snprintf (topic, sizeof topic, "%s/update/swarm-%03d", prefix, i);
      if (tt_fed_mqtt_publish (conn[i], topic, msg[i], len[i], false,
              &err) != TT_OK) {
        fprintf (stderr, "fed-swarm: %s\n", err.message);
        rc = 1;
      }
    }
    if (rc || !wait_global (watch, (uint32_t) r)) {
      fprintf (stderr, "fed-swarm: no global model of round %d\n", r);
      rc = 1;
      break;
    }
    double dt = now () - t0;
    total += dt;
    printf ("round %d: %d updates to the global model in %.3f s (%.1f "
        "updates/s)\n", r, clients, dt, clients / dt);
    fflush (stdout);
  }
  if (!rc)
    printf ("summary: %d clients, %d rounds: %.3f s a round, %.1f updates/s"
        "\n", clients, rounds, total / rounds, clients * rounds / total);
  for (int i = 0; i < clients; i++) {
    tt_fed_mqtt_free (conn[i]);
    free (msg[i]);
  }
  tt_fed_mqtt_free (watch);
  free (conn);
  free (msg);
  free (len);
  return rc;
}
