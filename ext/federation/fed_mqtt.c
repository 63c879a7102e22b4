/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Federation messages over MQTT through libmosquitto (fed_mqtt.h). The
 * protocol is the library's; this file only keeps a queue of received
 * messages and the state of the connection for its owner.
 */
#include "fed_mqtt.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mosquitto.h>

/* libmosquitto is opened when a federation is joined, not linked: every
 * user of the plugin would otherwise pay its pages and those of libssl
 * and libcrypto it pulls in (1.75 MB of RSS, docs/federation.md). Its
 * header still gives the types. */
#define FED_MOSQ_LIB "libmosquitto.so.1"
#define FED_MOSQ_FUNCS(X) \
  X (connack_string) \
  X (connect_async) \
  X (connect_callback_set) \
  X (destroy) \
  X (disconnect) \
  X (disconnect_callback_set) \
  X (lib_init) \
  X (log_callback_set) \
  X (loop_start) \
  X (loop_stop) \
  X (max_inflight_messages_set) \
  X (message_callback_set) \
  X (new) \
  X (publish) \
  X (publish_callback_set) \
  X (reconnect_delay_set) \
  X (strerror) \
  X (subscribe) \
  X (tls_set) \
  X (username_pw_set)

#define FED_MOSQ_FIELD(name) __typeof__ (mosquitto_##name) *name;
static struct
{
FED_MOSQ_FUNCS (FED_MOSQ_FIELD)} mq;
static char mq_error[512];

static void
lib_init (void)
{
  /* TT_FED_LIBMOSQUITTO: another file (tests: one that is missing) */
  const char *name = getenv ("TT_FED_LIBMOSQUITTO");
  if (!name || !*name)
    name = FED_MOSQ_LIB;
  void *h = dlopen (name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf (mq_error, sizeof mq_error, "cannot load %s (Debian: "
        "libmosquitto1): %s", name, dlerror ());
    return;
  }
  /* POSIX: a function pointer is copied from dlsym's void * */
#define FED_MOSQ_LOAD(fn) \
  if (!mq_error[0]) { \
    void *sym = dlsym (h, "mosquitto_" #fn); \
    if (sym) \
      memcpy (&mq.fn, &sym, sizeof sym); \
    else \
      snprintf (mq_error, sizeof mq_error, "%s has no mosquitto_" #fn, name); \
  }
  FED_MOSQ_FUNCS (FED_MOSQ_LOAD);
#undef FED_MOSQ_LOAD
  if (mq_error[0])
    return;
  mq.lib_init ();
}

typedef struct fed_item
{
  struct fed_item *next;
  char *topic;
  void *data;
  size_t len;
} fed_item;

struct tt_fed_mqtt
{
  struct mosquitto *mosq;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  char **topics;                /* subscribed at each connection */
  fed_item *head, *tail;
  bool connected, refused, started, tls;
  bool closing, flushing;       /* the network thread must not wait */
  size_t queued, max_queued;    /* bytes in the queue, its bound */
  unsigned connections;
  int in_flight;                /* published, not yet acknowledged */
  char error[512];
};

static tt_status
mqtt_fail (tt_error * err, tt_status st, const char *fmt, ...)
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

static void
deadline_after (struct timespec *ts, int ms)
{
  clock_gettime (CLOCK_MONOTONIC, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (long) (ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

/* waits on m->cond (m->lock held) until the deadline; false on timeout */
static bool
wait_until (tt_fed_mqtt * m, int timeout_ms, const struct timespec *ts)
{
  if (timeout_ms == 0)
    return false;
  if (timeout_ms < 0) {
    pthread_cond_wait (&m->cond, &m->lock);
    return true;
  }
  return pthread_cond_timedwait (&m->cond, &m->lock, ts) == 0;
}

tt_status
tt_fed_mqtt_parse_url (const char *url, char *host, size_t cap, int *port,
    bool *tls, tt_error * err)
{
  const char *rest;
  if (!url || !*url)
    return mqtt_fail (err, TT_ERR_INVALID, "federation broker: no URL "
        "(mqtt://HOST[:PORT] or mqtts://HOST[:PORT])");
  if (!strncmp (url, "mqtt://", 7)) {
    *tls = false;
    *port = 1883;
    rest = url + 7;
  } else if (!strncmp (url, "mqtts://", 8)) {
    *tls = true;
    *port = 8883;
    rest = url + 8;
  } else
    return mqtt_fail (err, TT_ERR_INVALID, "federation broker '%s': the URL "
        "must start with mqtt:// or mqtts://", url);
  size_t n = strcspn (rest, ":/");
  if (n == 0 || n >= cap)
    return mqtt_fail (err, TT_ERR_INVALID, "federation broker '%s': no host "
        "or one too long", url);
  memcpy (host, rest, n);
  host[n] = '\0';
  rest += n;
  if (*rest == ':') {
    char *end;
    errno = 0;
    long p = strtol (rest + 1, &end, 10);
    if (errno || end == rest + 1 || p < 1 || p > 65535
        || (*end && strcmp (end, "/")))
      return mqtt_fail (err, TT_ERR_INVALID, "federation broker '%s': port "
          "'%s' is not 1..65535", url, rest + 1);
    *port = (int) p;
  } else if (*rest && strcmp (rest, "/"))
    return mqtt_fail (err, TT_ERR_INVALID, "federation broker '%s': a path "
        "after the host is not taken", url);
  return TT_OK;
}

/* A TLS broker that requires a client certificate (mosquitto's
 * require_certificate) and gets none or an untrusted one closes the
 * connection after the handshake: the client only sees it closed before
 * the broker's answer to CONNECT. */
static const char *
tls_hint (const tt_fed_mqtt * m)
{
  return m->tls && m->connections == 0 ? " (closed by the broker before it "
      "accepted the connection: does it require a client certificate signed "
      "by its CA? federation-cert and federation-key, or --cert and --key)" :
      "";
}

static void
on_connect (struct mosquitto *mosq, void *user, int rc)
{
  tt_fed_mqtt *m = user;
  if (rc == 0)
    for (char **t = m->topics; t && *t; t++)
      mq.subscribe (mosq, NULL, *t, 1);
  pthread_mutex_lock (&m->lock);
  if (rc == 0) {
    m->connected = true;
    m->connections++;
  } else {
    m->refused = true;
    snprintf (m->error, sizeof m->error, "the broker refused the "
        "connection: %s", mq.connack_string (rc));
    size_t n = strlen (m->error);
    if (n > 0 && m->error[n - 1] == '.')
      m->error[n - 1] = '\0';
  }
  pthread_cond_broadcast (&m->cond);
  pthread_mutex_unlock (&m->lock);
}

static void
on_disconnect (struct mosquitto *mosq, void *user, int rc)
{
  (void) mosq;
  tt_fed_mqtt *m = user;
  pthread_mutex_lock (&m->lock);
  m->connected = false;
  if (rc != 0 && !m->refused)
    snprintf (m->error, sizeof m->error, "connection lost: %s%s",
        mq.strerror (rc), tls_hint (m));
  /* unacknowledged QoS 1 messages are resent by the library on the next
   * connection of a persistent session; the owner decides for the rest */
  pthread_cond_broadcast (&m->cond);
  pthread_mutex_unlock (&m->lock);
}

/* the library's own errors (a TLS handshake failing in the network
 * thread, a refused socket) say why no connection came */
static void
on_log (struct mosquitto *mosq, void *user, int level, const char *text)
{
  (void) mosq;
  tt_fed_mqtt *m = user;
  if (level != MOSQ_LOG_ERR || !text)
    return;
  pthread_mutex_lock (&m->lock);
  if (!m->connected && !m->refused)
    snprintf (m->error, sizeof m->error, "%s%s", text, strstr (text, "SSL")
        || strstr (text, "TLS") || strstr (text, "certificate") ? " (the "
        "TLS handshake failed: is the broker's certificate signed by the "
        "CA given and made out to the broker's host name?)" : "");
  pthread_mutex_unlock (&m->lock);
}

static void
on_publish (struct mosquitto *mosq, void *user, int mid)
{
  (void) mosq;
  (void) mid;
  tt_fed_mqtt *m = user;
  pthread_mutex_lock (&m->lock);
  if (m->in_flight > 0)
    m->in_flight--;
  pthread_cond_broadcast (&m->cond);
  pthread_mutex_unlock (&m->lock);
}

static void
on_message (struct mosquitto *mosq, void *user,
    const struct mosquitto_message *msg)
{
  (void) mosq;
  tt_fed_mqtt *m = user;
  size_t len = msg->payloadlen > 0 ? (size_t) msg->payloadlen : 0;
  /* a bounded queue: memory stays a few messages whatever arrives at
   * once; not while the owner waits for acknowledgements (which this
   * thread brings) or closes */
  pthread_mutex_lock (&m->lock);
  while (m->max_queued && m->head && m->queued + len > m->max_queued
      && !m->closing && !m->flushing)
    pthread_cond_wait (&m->cond, &m->lock);
  pthread_mutex_unlock (&m->lock);
  fed_item *it = calloc (1, sizeof *it);
  if (!it)
    return;
  it->topic = strdup (msg->topic ? msg->topic : "");
  it->len = len;
  it->data = malloc (it->len ? it->len : 1);
  if (!it->topic || !it->data) {
    free (it->topic);
    free (it->data);
    free (it);
    return;
  }
  if (it->len)
    memcpy (it->data, msg->payload, it->len);
  pthread_mutex_lock (&m->lock);
  if (m->tail)
    m->tail->next = it;
  else
    m->head = it;
  m->tail = it;
  m->queued += it->len;
  pthread_cond_broadcast (&m->cond);
  pthread_mutex_unlock (&m->lock);
}

static tt_status
read_credentials (const char *path, char *user, size_t ucap, char *pass,
    size_t pcap, tt_error * err)
{
  FILE *f = fopen (path, "r");
  if (!f)
    return mqtt_fail (err, TT_ERR_IO, "federation credentials %s: %s", path,
        strerror (errno));
  char line[1024];
  bool got = fgets (line, sizeof line, f) != NULL;
  fclose (f);
  if (!got)
    return mqtt_fail (err, TT_ERR_PARSE, "federation credentials %s: empty "
        "(one line USER:PASSWORD expected)", path);
  line[strcspn (line, "\r\n")] = '\0';
  char *colon = strchr (line, ':');
  if (!colon || colon == line)
    return mqtt_fail (err, TT_ERR_PARSE, "federation credentials %s: the "
        "first line is not USER:PASSWORD", path);
  *colon = '\0';
  if (strlen (line) >= ucap || strlen (colon + 1) >= pcap)
    return mqtt_fail (err, TT_ERR_PARSE, "federation credentials %s: user "
        "or password too long", path);
  snprintf (user, ucap, "%s", line);
  snprintf (pass, pcap, "%s", colon + 1);
  memset (line, 0, sizeof line);
  return TT_OK;
}

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;


tt_fed_mqtt *
tt_fed_mqtt_new (const tt_fed_mqtt_options * o, const char *const *subscribe,
    tt_error * err)
{
  char host[256];
  int port;
  bool tls;
  if (tt_fed_mqtt_parse_url (o->url, host, sizeof host, &port, &tls,
          err) != TT_OK)
    return NULL;
  if (!o->client_id || !*o->client_id) {
    mqtt_fail (err, TT_ERR_INVALID, "federation: no client id");
    return NULL;
  }
  bool has_cert = o->cert && *o->cert, has_key = o->key && *o->key;
  if (has_cert != has_key) {
    mqtt_fail (err, TT_ERR_INVALID, "federation: a client certificate needs "
        "its key and the other way round (cert '%s', key '%s')",
        o->cert ? o->cert : "", o->key ? o->key : "");
    return NULL;
  }
  if (!tls && ((o->ca && *o->ca) || has_cert)) {
    mqtt_fail (err, TT_ERR_INVALID, "federation broker %s: CA or client "
        "certificate given for a plain mqtt:// URL (use mqtts://)", o->url);
    return NULL;
  }
  pthread_once (&lib_once, lib_init);
  if (mq_error[0]) {
    mqtt_fail (err, TT_ERR_IO, "federation: %s", mq_error);
    return NULL;
  }
  tt_fed_mqtt *m = calloc (1, sizeof *m);
  if (!m) {
    mqtt_fail (err, TT_ERR_NOMEM, "out of memory");
    return NULL;
  }
  pthread_mutex_init (&m->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&m->cond, &ca);
  pthread_condattr_destroy (&ca);
  size_t nt = 0;
  while (subscribe && subscribe[nt])
    nt++;
  m->topics = calloc (nt + 1, sizeof *m->topics);
  for (size_t i = 0; m->topics && i < nt; i++)
    m->topics[i] = strdup (subscribe[i]);
  m->tls = tls;
  m->max_queued = o->max_queued;
  m->mosq = mq.new (o->client_id, !o->persistent, m);
  if (!m->topics || !m->mosq) {
    mqtt_fail (err, TT_ERR_NOMEM, "federation: cannot create the MQTT "
        "client: %s", strerror (errno));
    tt_fed_mqtt_free (m);
    return NULL;
  }
  mq.connect_callback_set (m->mosq, on_connect);
  mq.disconnect_callback_set (m->mosq, on_disconnect);
  mq.publish_callback_set (m->mosq, on_publish);
  mq.message_callback_set (m->mosq, on_message);
  mq.log_callback_set (m->mosq, on_log);
  mq.reconnect_delay_set (m->mosq, 1, 10, true);
  /* messages are whole models: no limit of the library's own */
  mq.max_inflight_messages_set (m->mosq, 0);
  int rc;
  if (o->credentials && *o->credentials) {
    char user[256], pass[512];
    if (read_credentials (o->credentials, user, sizeof user, pass,
            sizeof pass, err) != TT_OK) {
      tt_fed_mqtt_free (m);
      return NULL;
    }
    rc = mq.username_pw_set (m->mosq, user, pass);
    memset (pass, 0, sizeof pass);
    if (rc != MOSQ_ERR_SUCCESS) {
      mqtt_fail (err, TT_ERR_INVALID, "federation credentials %s: %s",
          o->credentials, mq.strerror (rc));
      tt_fed_mqtt_free (m);
      return NULL;
    }
  }
  if (tls) {
    const char *cafile = o->ca && *o->ca ? o->ca : NULL;
    rc = mq.tls_set (m->mosq, cafile, cafile ? NULL : "/etc/ssl/certs",
        has_cert ? o->cert : NULL, has_key ? o->key : NULL, NULL);
    if (rc != MOSQ_ERR_SUCCESS) {
      mqtt_fail (err, TT_ERR_INVALID, "federation TLS (CA '%s', cert '%s', "
          "key '%s'): %s", cafile ? cafile : "/etc/ssl/certs",
          has_cert ? o->cert : "", has_key ? o->key : "",
          rc == MOSQ_ERR_INVAL ? "a file cannot be read" : mq.strerror (rc));
      tt_fed_mqtt_free (m);
      return NULL;
    }
  }
  /* a broker that is down now is retried by the network thread */
  rc = mq.connect_async (m->mosq, host, port,
      o->keepalive > 0 ? o->keepalive : 30);
  if (rc == MOSQ_ERR_TLS) {
    mqtt_fail (err, TT_ERR_IO, "federation broker %s: the TLS handshake "
        "failed: its certificate is not signed by the CA trusted (%s) or "
        "not made out to %s, or it refused the client certificate", o->url,
        o->ca && *o->ca ? o->ca : "/etc/ssl/certs", host);
    tt_fed_mqtt_free (m);
    return NULL;
  }
  if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_ERRNO) {
    mqtt_fail (err, TT_ERR_IO, "federation broker %s: %s", o->url,
        mq.strerror (rc));
    tt_fed_mqtt_free (m);
    return NULL;
  }
  if (rc == MOSQ_ERR_ERRNO)
    snprintf (m->error, sizeof m->error, "cannot connect: %s%s",
        strerror (errno), tls_hint (m));
  rc = mq.loop_start (m->mosq);
  if (rc != MOSQ_ERR_SUCCESS) {
    mqtt_fail (err, TT_ERR_IO, "federation: cannot start the MQTT thread: "
        "%s", mq.strerror (rc));
    tt_fed_mqtt_free (m);
    return NULL;
  }
  m->started = true;
  return m;
}

void
tt_fed_mqtt_free (tt_fed_mqtt * m)
{
  if (!m)
    return;
  pthread_mutex_lock (&m->lock);
  m->closing = true;
  pthread_cond_broadcast (&m->cond);
  pthread_mutex_unlock (&m->lock);
  if (m->mosq) {
    mq.disconnect (m->mosq);
    if (m->started)
      mq.loop_stop (m->mosq, true);
    mq.destroy (m->mosq);
  }
  for (fed_item * it = m->head, *next; it; it = next) {
    next = it->next;
    free (it->topic);
    free (it->data);
    free (it);
  }
  for (char **t = m->topics; t && *t; t++)
    free (*t);
  free (m->topics);
  pthread_cond_destroy (&m->cond);
  pthread_mutex_destroy (&m->lock);
  free (m);
}

tt_status
tt_fed_mqtt_wait_connected (tt_fed_mqtt * m, int timeout_ms, tt_error * err)
{
  struct timespec ts;
  deadline_after (&ts, timeout_ms > 0 ? timeout_ms : 0);
  pthread_mutex_lock (&m->lock);
  while (!m->connected && !m->refused)
    if (!wait_until (m, timeout_ms, &ts))
      break;
  tt_status st = TT_OK;
  if (!m->connected)
    st = mqtt_fail (err, TT_ERR_IO, "federation: not connected to the "
        "broker%s%s", m->error[0] ? ": " : "", m->error);
  pthread_mutex_unlock (&m->lock);
  return st;
}

bool
tt_fed_mqtt_connected (tt_fed_mqtt * m)
{
  pthread_mutex_lock (&m->lock);
  bool c = m->connected;
  pthread_mutex_unlock (&m->lock);
  return c;
}

unsigned
tt_fed_mqtt_connections (tt_fed_mqtt * m)
{
  pthread_mutex_lock (&m->lock);
  unsigned c = m->connections;
  pthread_mutex_unlock (&m->lock);
  return c;
}

tt_status
tt_fed_mqtt_publish (tt_fed_mqtt * m, const char *topic, const void *data,
    size_t len, bool retain, tt_error * err)
{
  if (len > 268435455u)
    return mqtt_fail (err, TT_ERR_INVALID, "federation: a %zu-byte message "
        "is more than MQTT carries (256 MB)", len);
  pthread_mutex_lock (&m->lock);
  bool connected = m->connected;
  if (connected)
    m->in_flight++;
  pthread_mutex_unlock (&m->lock);
  if (!connected)
    return mqtt_fail (err, TT_ERR_IO, "federation: %s not published: not "
        "connected to the broker", topic);
  int rc = mq.publish (m->mosq, NULL, topic, (int) len, data, 1,
      retain);
  if (rc != MOSQ_ERR_SUCCESS) {
    pthread_mutex_lock (&m->lock);
    m->in_flight--;
    pthread_mutex_unlock (&m->lock);
    return mqtt_fail (err, TT_ERR_IO, "federation: %s not published: %s",
        topic, mq.strerror (rc));
  }
  return TT_OK;
}

bool
tt_fed_mqtt_flush (tt_fed_mqtt * m, int timeout_ms)
{
  struct timespec ts;
  deadline_after (&ts, timeout_ms > 0 ? timeout_ms : 0);
  pthread_mutex_lock (&m->lock);
  m->flushing = true;
  pthread_cond_broadcast (&m->cond);
  while (m->in_flight > 0)
    if (!wait_until (m, timeout_ms, &ts))
      break;
  m->flushing = false;
  bool done = m->in_flight <= 0;
  pthread_mutex_unlock (&m->lock);
  return done;
}

bool
tt_fed_mqtt_next (tt_fed_mqtt * m, int timeout_ms, char **topic, void **data,
    size_t *len)
{
  struct timespec ts;
  deadline_after (&ts, timeout_ms > 0 ? timeout_ms : 0);
  pthread_mutex_lock (&m->lock);
  bool was_connected = m->connected;
  while (!m->head) {
    if (!wait_until (m, timeout_ms, &ts))
      break;
    if (was_connected && !m->connected)
      break;                    /* nothing comes while offline */
  }
  fed_item *it = m->head;
  if (it) {
    m->head = it->next;
    if (!m->head)
      m->tail = NULL;
    m->queued -= it->len;
    pthread_cond_broadcast (&m->cond);
  }
  pthread_mutex_unlock (&m->lock);
  if (!it)
    return false;
  *topic = it->topic;
  *data = it->data;
  *len = it->len;
  free (it);
  return true;
}

void
tt_fed_mqtt_last_error (tt_fed_mqtt * m, char *buf, size_t cap)
{
  pthread_mutex_lock (&m->lock);
  snprintf (buf, cap, "%s", m->error);
  pthread_mutex_unlock (&m->lock);
}
