/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_trainer in a federation: properties, updates out, global models
 * in (gsttensorfederation.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gsttensorfederation.h"

#include <string.h>

#ifdef TT_HAVE_FEDERATION
#include "fed_mqtt.h"
#include "tt_fed.h"
#endif

GST_DEBUG_CATEGORY_STATIC (gst_tensor_federation_debug);
#define GST_CAT_DEFAULT gst_tensor_federation_debug

#define DEFAULT_TOPIC "tensor-trainer"
#define DEFAULT_EPOCHS_PER_ROUND 1
#define DEFAULT_WAIT 60
/* while waiting for a round's global model, the update is sent again this
 * often (microseconds) */
#define FED_RESEND_US (3 * G_USEC_PER_SEC)

enum
{
  FED_BROKER,
  FED_TOPIC,
  FED_CLIENT_ID,
  FED_CREDENTIALS,
  FED_CA,
  FED_CERT,
  FED_KEY,
  FED_EPOCHS_PER_ROUND,
  FED_WAIT,
  FED_N
};

void
gst_tensor_federation_install_properties (GObjectClass * klass, guint first_id)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;
  GST_DEBUG_CATEGORY_INIT (gst_tensor_federation_debug,
      "tensor_trainer_federation", 0, "tensor_trainer in a federation");
  g_object_class_install_property (klass, first_id + FED_BROKER,
      g_param_spec_string ("federation-broker", "Federation broker",
          "MQTT broker of a federation to join, mqtt://HOST[:PORT] or "
          "mqtts://HOST[:PORT] (TLS); empty: train alone. Every "
          "federation-epochs-per-round epochs the weights go to the "
          "aggregator (tensor-trainer aggregate) and training continues "
          "from the global model it sends back", NULL, rw));
  g_object_class_install_property (klass, first_id + FED_TOPIC,
      g_param_spec_string ("federation-topic", "Federation topic prefix",
          "Topic prefix: updates go to PREFIX/update/CLIENT-ID, the global "
          "model comes from PREFIX/global", DEFAULT_TOPIC, rw));
  g_object_class_install_property (klass, first_id + FED_CLIENT_ID,
      g_param_spec_string ("federation-client-id", "Federation client id",
          "This device's id (1 to 63 of A-Z a-z 0-9 _ . -), unique in the "
          "federation; empty: the element's name", NULL, rw));
  g_object_class_install_property (klass, first_id + FED_CREDENTIALS,
      g_param_spec_string ("federation-credentials", "Federation "
          "credentials", "File whose first line is USER:PASSWORD for the "
          "broker; empty: none", NULL, rw));
  g_object_class_install_property (klass, first_id + FED_CA,
      g_param_spec_string ("federation-ca", "Federation CA",
          "CA certificate file (PEM) for mqtts://; empty: the system's",
          NULL, rw));
  g_object_class_install_property (klass, first_id + FED_CERT,
      g_param_spec_string ("federation-cert", "Federation certificate",
          "Client certificate file (PEM) for mqtts://, with "
          "federation-key", NULL, rw));
  g_object_class_install_property (klass, first_id + FED_KEY,
      g_param_spec_string ("federation-key", "Federation key",
          "Client key file (PEM) of federation-cert", NULL, rw));
  g_object_class_install_property (klass, first_id + FED_EPOCHS_PER_ROUND,
      g_param_spec_uint ("federation-epochs-per-round", "Epochs per round",
          "Epochs trained locally between two updates", 1, G_MAXUINT,
          DEFAULT_EPOCHS_PER_ROUND, rw));
  g_object_class_install_property (klass, first_id + FED_WAIT,
      g_param_spec_uint ("federation-wait", "Federation wait",
          "Seconds to wait, after publishing an update, for the round's "
          "global model before training on (it is taken later, between "
          "two batches, when it comes); 0: never wait. Not waited for "
          "while the broker is unreachable", 0, 3600, DEFAULT_WAIT, rw));
}

void
gst_tensor_federation_config_init (GstTensorFederationConfig * c)
{
  memset (c, 0, sizeof *c);
  c->topic = g_strdup (DEFAULT_TOPIC);
  c->epochs_per_round = DEFAULT_EPOCHS_PER_ROUND;
  c->wait = DEFAULT_WAIT;
}

void
gst_tensor_federation_config_clear (GstTensorFederationConfig * c)
{
  g_free (c->broker);
  g_free (c->topic);
  g_free (c->client_id);
  g_free (c->credentials);
  g_free (c->ca);
  g_free (c->cert);
  g_free (c->key);
  memset (c, 0, sizeof *c);
}

static gchar **
config_string (GstTensorFederationConfig * c, guint which)
{
  switch (which) {
    case FED_BROKER:
      return &c->broker;
    case FED_TOPIC:
      return &c->topic;
    case FED_CLIENT_ID:
      return &c->client_id;
    case FED_CREDENTIALS:
      return &c->credentials;
    case FED_CA:
      return &c->ca;
    case FED_CERT:
      return &c->cert;
    case FED_KEY:
      return &c->key;
    default:
      return NULL;
  }
}

gboolean
gst_tensor_federation_set_property (GstTensorFederationConfig * c,
    guint first_id, guint prop_id, const GValue * value)
{
  if (prop_id < first_id || prop_id >= first_id + FED_N)
    return FALSE;
  guint which = prop_id - first_id;
  gchar **s = config_string (c, which);
  if (s) {
    g_free (*s);
    *s = g_value_dup_string (value);
  } else if (which == FED_EPOCHS_PER_ROUND)
    c->epochs_per_round = g_value_get_uint (value);
  else if (which == FED_WAIT)
    c->wait = g_value_get_uint (value);
  return TRUE;
}

gboolean
gst_tensor_federation_get_property (const GstTensorFederationConfig * c,
    guint first_id, guint prop_id, GValue * value)
{
  if (prop_id < first_id || prop_id >= first_id + FED_N)
    return FALSE;
  guint which = prop_id - first_id;
  gchar **s = config_string ((GstTensorFederationConfig *) c, which);
  if (s)
    g_value_set_string (value, *s);
  else if (which == FED_EPOCHS_PER_ROUND)
    g_value_set_uint (value, c->epochs_per_round);
  else if (which == FED_WAIT)
    g_value_set_uint (value, c->wait);
  return TRUE;
}

#ifdef TT_HAVE_FEDERATION

struct _GstTensorFederation
{
  GstElement *element;
  GstTensorFederationConfig config;     /* a copy taken at start */
  gchar *client_id;
  gchar *update_topic, *global_topic, *end_topic;
  tt_fed_mqtt *mqtt;
  tt_model *carrier;            /* inference copy: the smallest message */
  gboolean checked;             /* signature taken from the model */
  guint64 signature;
  gsize n_floats;
  gint64 base_round;            /* of the global model trained from; -1 */
  gint64 published_round;       /* the last update published; -1 */
  guint64 samples;              /* trained since base_round's global */
  guint epochs;                 /* in this round */
  void *pending;                /* the update of published_round, until its
                                 * global model comes */
  size_t pending_len;
  gboolean warned_offline;
  gboolean started;             /* a batch was trained */
  float *last_global;           /* the weights of base_round's global model:
                                 * what the device ends with */
  gboolean ended;               /* the aggregator's end-of-run marker came */
  gint64 end_round;             /* its last round */
};

static void
fed_post (GstTensorFederation * f, const gchar * event, gint64 round,
    guint64 samples, const gchar * reason)
{
  GstStructure *s = gst_structure_new ("tensor-trainer-federation",
      "event", G_TYPE_STRING, event,
      "client-id", G_TYPE_STRING, f->client_id,
      "round", G_TYPE_INT64, round,
      "samples", G_TYPE_UINT64, samples,
      "reason", G_TYPE_STRING, reason ? reason : "", NULL);
  gst_element_post_message (f->element,
      gst_message_new_element (GST_OBJECT (f->element), s));
}

GstTensorFederation *
gst_tensor_federation_start (GstElement * element,
    GstTensorFederationConfig * config, gboolean * ok)
{
  *ok = TRUE;
  GST_OBJECT_LOCK (element);
  if (!config->broker || !*config->broker) {
    GST_OBJECT_UNLOCK (element);
    return NULL;
  }
  GstTensorFederation *f = g_new0 (GstTensorFederation, 1);
  f->element = element;
  f->config.broker = g_strdup (config->broker);
  f->config.topic = g_strdup (config->topic);
  f->config.client_id = g_strdup (config->client_id);
  f->config.credentials = g_strdup (config->credentials);
  f->config.ca = g_strdup (config->ca);
  f->config.cert = g_strdup (config->cert);
  f->config.key = g_strdup (config->key);
  f->config.epochs_per_round = config->epochs_per_round;
  f->config.wait = config->wait;
  f->client_id = g_strdup (config->client_id && *config->client_id ?
      config->client_id : GST_OBJECT_NAME (element));
  GST_OBJECT_UNLOCK (element);
  f->base_round = -1;
  f->published_round = -1;

  const gchar *topic = f->config.topic ? f->config.topic : "";
  if (!tt_fed_client_id_valid (f->client_id)) {
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
        ("federation-client-id '%s' is not 1 to 63 characters of A-Z a-z "
            "0-9 _ . - (it names an MQTT topic level).", f->client_id), (NULL));
    goto fail;
  }
  if (!*topic || strpbrk (topic, "+#") || topic[0] == '/'
      || topic[strlen (topic) - 1] == '/') {
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
        ("federation-topic '%s' is not a topic prefix (no + or #, not "
            "starting or ending with /).", topic), (NULL));
    goto fail;
  }
  f->update_topic = g_strdup_printf ("%s/update/%s", topic, f->client_id);
  f->global_topic = g_strdup_printf ("%s/global", topic);
  f->end_topic = g_strdup_printf ("%s/end", topic);
  /* in this order: a device that joins after the end gets the last global
   * model before the marker */
  const char *subscribe[] = { f->global_topic, f->end_topic, NULL };
  tt_fed_mqtt_options mo;
  memset (&mo, 0, sizeof mo);
  mo.url = f->config.broker;
  mo.client_id = f->client_id;
  mo.credentials = f->config.credentials;
  mo.ca = f->config.ca;
  mo.cert = f->config.cert;
  mo.key = f->config.key;
  tt_error err = { 0 };
  f->mqtt = tt_fed_mqtt_new (&mo, subscribe, &err);
  if (!f->mqtt) {
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
        ("Cannot join the federation at %s: %s.", f->config.broker,
            err.message), (NULL));
    goto fail;
  }
  /* a broker that refuses us (credentials, ACL) is an error now; one that
   * is away is waited for in the background, training goes on */
  if (tt_fed_mqtt_wait_connected (f->mqtt, 3000, &err) != TT_OK) {
    if (strstr (err.message, "refused")) {
      GST_ELEMENT_ERROR (element, RESOURCE, OPEN_READ_WRITE,
          ("The federation broker %s refused this device (%s): %s.",
              f->config.broker, f->client_id, err.message), (NULL));
      goto fail;
    }
    GST_ELEMENT_WARNING (element, RESOURCE, OPEN_READ_WRITE,
        ("Federation broker %s not reachable yet (%s): training locally "
            "until it is.", f->config.broker, err.message), (NULL));
  }
  GST_INFO_OBJECT (element, "federation %s: client %s, %u epoch(s) per "
      "round", f->config.broker, f->client_id, f->config.epochs_per_round);
  return f;
fail:
  *ok = FALSE;
  gst_tensor_federation_stop (f);
  return NULL;
}

/* The aggregator's end-of-run marker (an empty message: a marker
 * cleared by a new run). TRUE when it is this federation's. */
static gboolean
fed_take_end (GstTensorFederation * f, const char *topic, const void *data,
    size_t len)
{
  if (len == 0 || f->ended)
    return FALSE;
  tt_fed_header h;
  tt_error err = { 0 };
  if (tt_fed_peek (data, len, topic, &h, &err) == TT_OK
      && (h.kind != TT_FED_END || h.signature != f->signature
          || h.n_floats != f->n_floats)) {
    g_snprintf (err.message, sizeof err.message, "%s: not an end-of-run "
        "marker of this model (kind %u, signature %016" G_GINT64_MODIFIER
        "x)", topic, h.kind, h.signature);
    err.status = TT_ERR_INVALID;
  }
  if (err.status != TT_OK) {
    GST_ELEMENT_WARNING (f->element, STREAM, DECODE,
        ("Refused an end-of-run marker of the federation: %s.", err.message),
        (NULL));
    fed_post (f, "refused", -1, 0, err.message);
    return FALSE;
  }
  f->ended = TRUE;
  f->end_round = h.round;
  g_clear_pointer (&f->pending, free);
  GST_INFO_OBJECT (f->element, "the federation's run ended after round %u",
      h.round);
  fed_post (f, "ended", f->end_round, h.samples, NULL);
  return TRUE;
}

/* Takes the newest global model among those that came, if it is newer
 * than the one trained from; waits up to timeout_ms for one of round
 * at least want (0: takes what is there). */
static void
fed_take_global (GstTensorFederation * f, tt_model * model, gint64 want,
    gint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  gint64 resend_at = g_get_monotonic_time () + FED_RESEND_US;
  for (;;) {
    gint left = 0;
    gint64 now = g_get_monotonic_time ();
    gboolean waiting = timeout_ms > 0 && f->base_round < want && now < deadline;
    if (waiting) {
      gint64 us = MIN (deadline - now, FED_RESEND_US);
      left = (gint) (us / 1000) + 1;
    }
    char *topic;
    void *data;
    size_t len;
    if (!tt_fed_mqtt_next (f->mqtt, left, &topic, &data, &len)) {
      if (!waiting)
        return;
      /* still no global model: the update again, every few seconds (an
       * aggregator that was not subscribed when it went out, after a
       * broker restart, never got it; one that has it refuses copies) */
      now = g_get_monotonic_time ();
      if (f->pending && now >= resend_at && tt_fed_mqtt_connected (f->mqtt)) {
        tt_error err = { 0 };
        if (tt_fed_mqtt_publish (f->mqtt, f->update_topic, f->pending,
                f->pending_len, FALSE, &err) == TT_OK)
          fed_post (f, "resent", f->published_round, f->samples, NULL);
        resend_at = now + FED_RESEND_US;
      }
      continue;
    }
    if (!strcmp (topic, f->end_topic)) {
      if (fed_take_end (f, topic, data, len)) {
        /* no later global model comes; the last one, when it is not here
         * yet, is waited for up to federation-wait */
        want = f->end_round;
        if (f->base_round < f->end_round && f->config.wait > 0) {
          timeout_ms = (gint) f->config.wait * 1000;
          deadline = g_get_monotonic_time () +
              (gint64) f->config.wait * G_USEC_PER_SEC;
        }
      }
      free (topic);
      free (data);
      continue;
    }
    tt_fed_message m;
    tt_error err = { 0 };
    tt_status st = tt_fed_decode (data, len, topic, f->signature,
        f->n_floats, &m, &err);
    free (data);
    if (st == TT_OK && m.header.kind != TT_FED_GLOBAL) {
      g_snprintf (err.message, sizeof err.message, "%s: an update where "
          "the global model was expected", topic);
      tt_fed_message_clear (&m);
      st = TT_ERR_INVALID;
    }
    free (topic);
    if (st != TT_OK) {
      GST_ELEMENT_WARNING (f->element, STREAM, DECODE,
          ("Refused a global model of the federation: %s.", err.message),
          (NULL));
      fed_post (f, "refused", -1, 0, err.message);
      continue;
    }
    if ((gint64) m.header.round <= f->base_round) {
      /* the retained one we already have, or an older one */
      tt_fed_message_clear (&m);
      continue;
    }
    st = tt_model_import_weights (model, m.weights, f->n_floats, &err);
    if (st != TT_OK) {
      GST_ELEMENT_WARNING (f->element, STREAM, DECODE,
          ("Could not take the federation's global model of round %u: %s.",
              m.header.round, err.message), (NULL));
    } else {
      GST_INFO_OBJECT (f->element, "global model of round %u applied (%"
          G_GUINT64_FORMAT " samples)", m.header.round, m.header.samples);
      f->base_round = m.header.round;
      f->samples = 0;
      g_clear_pointer (&f->pending, free);
      free (f->last_global);
      f->last_global = m.weights;
      m.weights = NULL;
      fed_post (f, "applied", f->base_round, m.header.samples, NULL);
    }
    tt_fed_message_clear (&m);
  }
}

static gboolean
fed_check_model (GstTensorFederation * f, tt_model * model)
{
  if (f->checked)
    return TRUE;
  f->signature = tt_model_weight_signature (model);
  f->n_floats = tt_model_weight_floats (model);
  f->checked = TRUE;
  /* an inference copy carries the weights alone; kept, it is compiled
   * once instead of at every update */
  const char *path = tt_model_path (model);
  if (path && *path) {
    tt_open_options oo;
    memset (&oo, 0, sizeof oo);
    oo.inference = TRUE;
    oo.batch_size = 1;
    oo.plan_mode = TT_PLAN_REPLAN;
    tt_error err = { 0 };
    f->carrier = tt_model_open (path, &oo, NULL, &err);
    if (f->carrier && (tt_model_weight_signature (f->carrier) != f->signature
            || tt_model_weight_floats (f->carrier) != f->n_floats))
      g_clear_pointer (&f->carrier, tt_model_free);
    if (!f->carrier)
      GST_DEBUG_OBJECT (f->element, "no inference copy of %s kept (%s): "
          "each update makes its own (tt_fed_encode)", path, err.message);
  }
  return TRUE;
}

gboolean
gst_tensor_federation_before_batch (GstTensorFederation * f,
    tt_model * model, guint n)
{
  if (!f || !model)
    return FALSE;
  fed_check_model (f, model);
  /* the first batch starts from the federation's model: up to
   * federation-wait for it (when the broker is there) */
  gboolean first = !f->started;
  f->started = TRUE;
  if (!f->ended)
    fed_take_global (f, model, 0, first && tt_fed_mqtt_connected (f->mqtt) ?
        (gint) f->config.wait * 1000 : 0);
  if (f->ended) {
    /* batches trained since the last global model are dropped: the
     * device ends with the federation's model */
    tt_error err = { 0 };
    if (f->samples > 0 && f->last_global && f->base_round == f->end_round
        && tt_model_import_weights (model, f->last_global, f->n_floats,
            &err) == TT_OK)
      f->samples = 0;
    if (f->base_round < f->end_round)
      GST_ELEMENT_WARNING (f->element, STREAM, FAILED,
          ("The federation's run ended after round %" G_GINT64_FORMAT
              " but its global model did not come: this device ends with "
              "the model of round %" G_GINT64_FORMAT " and its own "
              "training since.", f->end_round, f->base_round), (NULL));
    return TRUE;
  }
  f->samples += n;
  return FALSE;
}

void
gst_tensor_federation_epoch_end (GstTensorFederation * f, tt_model * model,
    gboolean final)
{
  if (!f || !model || f->ended)
    return;
  fed_check_model (f, model);
  if (++f->epochs < f->config.epochs_per_round && !final)
    return;
  f->epochs = 0;
  if (final && f->config.wait > 0 && !tt_fed_mqtt_connected (f->mqtt)) {
    GST_INFO_OBJECT (f->element, "last epoch: waiting up to %u s for the "
        "broker", f->config.wait);
    tt_fed_mqtt_wait_connected (f->mqtt, (gint) f->config.wait * 1000, NULL);
  }
  const gint64 round = MAX (f->base_round, 0) + 1;
  if (f->published_round >= round && f->pending) {
    /* the global model of our last update has not come: that update is
     * sent again, the same bytes (an aggregator restarted meanwhile lost
     * it; one that has it refuses the second as a replay), and training
     * goes on */
    tt_error err = { 0 };
    GST_INFO_OBJECT (f->element, "round %" G_GINT64_FORMAT " published, its "
        "global model not come yet: the update is sent again", round);
    if (tt_fed_mqtt_publish (f->mqtt, f->update_topic, f->pending,
            f->pending_len, FALSE, &err) == TT_OK)
      fed_post (f, "resent", round, f->samples, NULL);
    fed_take_global (f, model, round, final
        && tt_fed_mqtt_connected (f->mqtt) ? (gint) f->config.wait * 1000 : 0);
    return;
  }
  if (f->samples == 0)
    return;
  tt_fed_header h;
  memset (&h, 0, sizeof h);
  h.kind = TT_FED_UPDATE;
  h.round = (uint32_t) round;
  h.samples = f->samples;
  g_strlcpy (h.client_id, f->client_id, sizeof h.client_id);
  tt_error err = { 0 };
  tt_model *from = model;
  if (f->carrier) {
    gfloat *w = g_try_malloc (f->n_floats * sizeof (gfloat));
    if (w && tt_model_export_weights (model, w, f->n_floats, &err) == TT_OK
        && tt_model_import_weights (f->carrier, w, f->n_floats, &err) == TT_OK)
      from = f->carrier;
    g_free (w);
  }
  void *msg;
  size_t len;
  if (tt_fed_encode (from, &h, &msg, &len, &err) != TT_OK) {
    GST_ELEMENT_WARNING (f->element, STREAM, ENCODE,
        ("Could not make the federation update of round %u: %s.", h.round,
            err.message), (NULL));
    return;
  }
  tt_status st = tt_fed_mqtt_publish (f->mqtt, f->update_topic, msg, len,
      FALSE, &err);
  if (st == TT_OK) {
    free (f->pending);
    f->pending = msg;
    f->pending_len = len;
  } else
    free (msg);
  if (st != TT_OK) {
    if (!f->warned_offline)
      GST_ELEMENT_WARNING (f->element, RESOURCE, WRITE,
          ("Federation update of round %u not sent (%s): training goes on "
              "locally, the update is sent at the end of a round the broker "
              "is back.", h.round, err.message), (NULL));
    f->warned_offline = TRUE;
    fed_post (f, "offline", h.round, h.samples, err.message);
    return;
  }
  f->warned_offline = FALSE;
  f->published_round = h.round;
  GST_INFO_OBJECT (f->element, "update of round %u published (%"
      G_GUINT64_FORMAT " samples, %zu bytes)", h.round, h.samples, len);
  fed_post (f, "published", h.round, h.samples, NULL);
  fed_take_global (f, model, h.round, tt_fed_mqtt_connected (f->mqtt) ?
      (gint) f->config.wait * 1000 : 0);
}

void
gst_tensor_federation_stop (GstTensorFederation * f)
{
  if (!f)
    return;
  if (f->mqtt) {
    tt_fed_mqtt_flush (f->mqtt, 5000);
    tt_fed_mqtt_free (f->mqtt);
  }
  if (f->carrier)
    tt_model_free (f->carrier);
  free (f->pending);
  free (f->last_global);
  gst_tensor_federation_config_clear (&f->config);
  g_free (f->client_id);
  g_free (f->update_topic);
  g_free (f->global_topic);
  g_free (f->end_topic);
  g_free (f);
}

#else /* no libmosquitto in this build */

struct _GstTensorFederation
{
  int unused;
};

GstTensorFederation *
gst_tensor_federation_start (GstElement * element,
    GstTensorFederationConfig * config, gboolean * ok)
{
  gboolean wanted;
  GST_OBJECT_LOCK (element);
  wanted = config->broker && *config->broker;
  GST_OBJECT_UNLOCK (element);
  *ok = !wanted;
  if (wanted)
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
        ("federation-broker is set but this build has no federation (it "
            "needs libmosquitto: Debian's libmosquitto-dev)."), (NULL));
  return NULL;
}

gboolean
gst_tensor_federation_before_batch (GstTensorFederation * f,
    tt_model * model, guint n)
{
  (void) f;
  (void) model;
  (void) n;
  return FALSE;
}

void
gst_tensor_federation_epoch_end (GstTensorFederation * f, tt_model * model,
    gboolean final)
{
  (void) f;
  (void) model;
  (void) final;
}

void
gst_tensor_federation_stop (GstTensorFederation * f)
{
  g_free (f);
}

#endif
