/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_trainer's side of a federation (issue 20): its federation-*
 * properties and, when federation-broker is set, a connection to the
 * broker (ext/federation/fed_mqtt.h). The first batch waits up to
 * federation-wait seconds for the global model (retained on the broker)
 * and starts from it. Every federation-epochs-per-round
 * epochs the trainer publishes its weights as an update of the next round
 * on <topic>/update/<client-id>, waits up to federation-wait seconds for
 * that round's global model on <topic>/global and continues from it;
 * a global model that comes later is taken between two batches, never
 * within one. Offline, training goes on locally: the update is published
 * at the end of the first round the broker is back, and the device
 * rejoins with the next global model.
 *
 * An update whose global model has not come is sent again (the same
 * bytes) every 3 s while the device waits for it, and at the end of the
 * next round: an aggregator that missed it (restarted, or not subscribed
 * yet after a broker restart) takes it, one that has it refuses the copy
 * as a replay.
 *
 * The aggregator's end-of-run marker (retained on <topic>/end, after the
 * last round's global model) ends training at the next batch: the
 * trainer saves the last global model and sends EOS (a device that joins
 * after the end gets both at once and ends at its first batch).
 *
 * Element messages "tensor-trainer-federation": event "published"
 * (round, samples), "resent", "applied" (round), "refused" (reason),
 * "offline" (reason), "ended" (round: the last one).
 */
#ifndef __GST_TENSOR_FEDERATION_H__
#define __GST_TENSOR_FEDERATION_H__

#include <gst/gst.h>
#include "tt_engine.h"

G_BEGIN_DECLS

typedef struct
{
  gchar *broker, *topic, *client_id, *credentials, *ca, *cert, *key;
  guint epochs_per_round;
  guint wait;                   /* seconds */
} GstTensorFederationConfig;

typedef struct _GstTensorFederation GstTensorFederation;

/* The properties, ids first_id, first_id + 1, ... */
void gst_tensor_federation_install_properties (GObjectClass * klass,
    guint first_id);
void gst_tensor_federation_config_init (GstTensorFederationConfig * c);
void gst_tensor_federation_config_clear (GstTensorFederationConfig * c);
/* TRUE when prop_id is one of them (then handled); call under the object
 * lock. */
gboolean gst_tensor_federation_set_property (GstTensorFederationConfig * c,
    guint first_id, guint prop_id, const GValue * value);
gboolean gst_tensor_federation_get_property (const GstTensorFederationConfig
    * c, guint first_id, guint prop_id, GValue * value);

/* At READY->PAUSED, with the element's object lock NOT held: NULL and
 * *ok TRUE when federation-broker is empty; NULL and *ok FALSE after
 * posting an error (bad property, no federation in this build). */
GstTensorFederation *gst_tensor_federation_start (GstElement * element,
    GstTensorFederationConfig * config, gboolean * ok);
/* Before a training batch of n samples: takes a global model that came.
 * TRUE when the aggregator's end-of-run marker came: the batch is not to
 * be trained, training is over (the model then holds the last global
 * model: batches trained since it are undone). */
gboolean gst_tensor_federation_before_batch (GstTensorFederation * f,
    tt_model * model, guint n);
/* After a complete epoch: at a round's end publishes the update and waits
 * for the round's global model. After the last epoch (final) it also
 * waits up to federation-wait seconds for a broker that is away, so that
 * a device that trained offline still sends its update and takes the
 * global model before it stops. */
void gst_tensor_federation_epoch_end (GstTensorFederation * f,
    tt_model * model, gboolean final);
/* PAUSED->READY: waits up to 5 s for the broker to acknowledge what was
 * published, then disconnects. */
void gst_tensor_federation_stop (GstTensorFederation * f);

G_END_DECLS

#endif
