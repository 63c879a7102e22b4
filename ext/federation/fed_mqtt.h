/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Federation messages over MQTT, through libmosquitto (Debian's
 * libmosquitto-dev): one connection with its own network thread
 * (mosquitto_loop_start), which reconnects by itself after a loss and
 * subscribes again at each connection. Received messages wait in a queue
 * the owner takes them from (tt_fed_mqtt_next) when it suits it: between
 * two batches for a trainer, in its main loop for the aggregator.
 *
 * Topics (prefix: the federation's topic prefix):
 *   <prefix>/update/<client-id>   a device's update, QoS 1, not retained
 *   <prefix>/global               the global model, QoS 1, retained
 */
#ifndef TT_FED_MQTT_H
#define TT_FED_MQTT_H

#include "tt_fed.h"

typedef struct tt_fed_mqtt tt_fed_mqtt;

typedef struct
{
  const char *url;              /* mqtt://HOST[:PORT] (1883) or
                                 * mqtts://HOST[:PORT] (8883, TLS) */
  const char *client_id;        /* the MQTT client id */
  const char *credentials;      /* a file whose first line is
                                 * USER:PASSWORD; NULL or "": none */
  const char *ca;               /* TLS: the CA file (mqtts without one:
                                 * the system's, /etc/ssl/certs) */
  const char *cert, *key;       /* TLS client certificate and key */
  bool persistent;              /* a persistent session (clean_session
                                 * false): the broker keeps QoS 1 messages
                                 * for us while we are away */
  int keepalive;                /* seconds; 0: 30 */
  size_t max_queued;            /* bytes of received messages the queue
                                 * holds before the network thread waits
                                 * for the owner to take some (the broker
                                 * and TCP hold the rest); a message is
                                 * always taken into an empty queue.
                                 * 0: no limit */
} tt_fed_mqtt_options;

/* Parses url into host and port (host at most cap bytes). */
tt_status tt_fed_mqtt_parse_url (const char *url, char *host, size_t cap,
    int *port, bool *tls, tt_error * err);

/* Sets up the connection and starts its thread; connecting goes on in the
 * background (a broker that is down is retried, 1 s to 10 s apart).
 * subscribe: topics (NULL-terminated, may be NULL) subscribed at QoS 1 at
 * every connection. */
tt_fed_mqtt *tt_fed_mqtt_new (const tt_fed_mqtt_options * options,
    const char *const *subscribe, tt_error * err);
void tt_fed_mqtt_free (tt_fed_mqtt * m);

/* Waits up to timeout_ms (0: not at all, -1: forever) for the first
 * connection; TT_OK once connected. A refusal by the broker (bad
 * credentials, not authorized) is TT_ERR_IO with the broker's reason. */
tt_status tt_fed_mqtt_wait_connected (tt_fed_mqtt * m, int timeout_ms,
    tt_error * err);
bool tt_fed_mqtt_connected (tt_fed_mqtt * m);
/* Connections made so far: a change means the connection was lost and
 * made again (a broker restarted without persistence has lost the
 * retained messages). */
unsigned tt_fed_mqtt_connections (tt_fed_mqtt * m);

/* Queues a message for the broker (QoS 1). TT_ERR_IO when it cannot be
 * queued now (not connected): the caller publishes it again later. */
tt_status tt_fed_mqtt_publish (tt_fed_mqtt * m, const char *topic,
    const void *data, size_t len, bool retain, tt_error * err);
/* Waits up to timeout_ms until every published message is acknowledged
 * by the broker; true when none is left. */
bool tt_fed_mqtt_flush (tt_fed_mqtt * m, int timeout_ms);

/* Takes the oldest received message, waiting up to timeout_ms (0: not at
 * all, -1: forever; a connection lost meanwhile ends the wait): true with
 * *topic and *data malloc'ed (the caller frees them), false when none
 * came. */
bool tt_fed_mqtt_next (tt_fed_mqtt * m, int timeout_ms, char **topic,
    void **data, size_t *len);

/* The last error the connection met ("" when none): a refusal, a lost
 * connection. */
void tt_fed_mqtt_last_error (tt_fed_mqtt * m, char *buf, size_t cap);

#endif
