/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Federated training: the messages devices and the aggregator exchange
 * (no network here: fed_mqtt.h carries them over MQTT) and federated
 * averaging.
 *
 * A message is a 128-byte envelope around a model bundle (tt_bundle.h,
 * docs/bundle.md: INI text, weights, a CRC32 per section). Little-endian:
 *
 *   offset  bytes  field
 *        0      8  magic "TTFEDMSG"
 *        8      4  version (1)
 *       12      4  envelope bytes (128)
 *       16      4  kind: 1 a device's update, 2 the global model, 3 the
 *                  end of the run (the envelope alone)
 *       20      4  round: an update of round r was trained from the
 *                  global model of round r - 1; the global model of round
 *                  r averages the updates of round r (round 0: the
 *                  aggregator's starting model)
 *       24      8  samples the update was trained on (the global model:
 *                  their sum over the round)
 *       32      8  weight signature (tt_model_weight_signature: the
 *                  weight tensors' names, sizes and order)
 *       40      8  weight floats (tt_model_weight_floats)
 *       48      8  bundle bytes (the rest of the message, exactly)
 *       56     64  client id, NUL-padded: 1 to 63 of [A-Za-z0-9_.-]
 *      120      4  CRC32 (zlib's) of the bundle bytes
 *      124      4  CRC32 of bytes 0..123
 *      128      -  the bundle
 *
 * A message is refused, with a reason naming it, when any of that does not
 * hold, when its signature or size is not the receiving model's, when the
 * bundle does not open (its own checksums and checks), when the bundle's
 * model has another signature than the envelope says, or when a weight is
 * NaN or infinite. Rounds (stale, replayed, ahead) are the aggregator's
 * business: tt_fed_round_add.
 */
#ifndef TT_FED_H
#define TT_FED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tt_engine.h"

#define TT_FED_MAGIC "TTFEDMSG"
#define TT_FED_VERSION 1
#define TT_FED_ENVELOPE_BYTES 128
#define TT_FED_ID_MAX 64        /* with its NUL */
/* more would be no sample count of a device's round */
#define TT_FED_MAX_SAMPLES (UINT64_C (1) << 40)

typedef enum
{
  TT_FED_UPDATE = 1,
  TT_FED_GLOBAL = 2,
  TT_FED_END = 3,               /* the run is over: the envelope alone (no
                                 * bundle), round: the last one, samples:
                                 * its global model's, signature and
                                 * n_floats: the model's */
} tt_fed_kind;

typedef struct
{
  uint32_t kind;                /* tt_fed_kind */
  uint32_t round;
  uint64_t samples;
  uint64_t signature;
  uint64_t n_floats;
  char client_id[TT_FED_ID_MAX];
} tt_fed_header;

typedef struct
{
  tt_fed_header header;
  float *weights;               /* n_floats, BIN order; malloc'ed */
} tt_fed_message;

/* true when id is 1 to 63 characters of [A-Za-z0-9_.-] (it becomes an
 * MQTT topic level: no '/', '+', '#'). */
bool tt_fed_client_id_valid (const char *id);

/* The message for model's current weights: header's signature and
 * n_floats are taken from the model (header's own are ignored). The model
 * is saved as a bundle of its weights only: a training model through an
 * inference copy (compiled here each time: keep one to avoid it), so that
 * no optimizer state travels. *out is malloc'ed, *len its bytes. */
tt_status tt_fed_encode (tt_model * model, const tt_fed_header * header,
    void **out, size_t *len, tt_error * err);

/* The end-of-run marker: header's kind is ignored (TT_FED_END), its
 * signature and n_floats are written as given. *out is malloc'ed (128
 * bytes). */
tt_status tt_fed_encode_end (const tt_fed_header * header, void **out,
    size_t *len, tt_error * err);

/* Parses and checks a message (name stands for it in messages: the topic)
 * against the receiving model's signature and weight floats. On TT_OK
 * msg holds the header and the weights (tt_fed_message_clear); on failure
 * msg is empty and err says why. */
tt_status tt_fed_decode (const void *data, size_t len, const char *name,
    uint64_t signature, size_t n_floats, tt_fed_message * msg,
    tt_error * err);
void tt_fed_message_clear (tt_fed_message * msg);

/* Reads only the envelope (no bundle, no weights): for tools and tests. */
tt_status tt_fed_peek (const void *data, size_t len, const char *name,
    tt_fed_header * header, tt_error * err);

/* ---- federated averaging -------------------------------------------- */

/* The updates of one round, until it closes: the average is
 * sum(samples_i * w_i) / sum(samples_i), in double, summed in the order of
 * the client ids (so the result does not depend on arrival order), then
 * rounded to float.
 *
 * Spilled (tt_fed_round_spill), each update's weights go to an unlinked
 * file as they come and memory holds only their headers and distances:
 * the round's memory is O(model) whatever the client count. The close
 * reads them back twice at most (the norm screen: one pass, each update's
 * distance kept once computed; the average: one pass in client-id order
 * into a double accumulator), so the results are bit for bit those of
 * updates kept in memory. */
typedef struct
{
  tt_fed_header header;
  float *weights;               /* in memory; NULL when spilled or rejected */
  uint64_t slot;                /* spilled: its place in the file */
  double distance;              /* ||w - global||; < 0: not computed yet */
  bool rejected;                /* by tt_fed_round_screen: its id still
                                 * counts for replays */
} tt_fed_entry;

typedef struct
{
  uint64_t signature;
  size_t n_floats;
  uint32_t round;               /* the round being collected */
  uint32_t n, cap;
  tt_fed_entry *updates;        /* sorted by client id */
  uint32_t n_rejected;          /* by tt_fed_round_screen */
  uint64_t samples;             /* the sum of the others' */
  bool spilling;
  int spill_fd;                 /* when spilling */
  uint64_t spill_slots;         /* written this round */
} tt_fed_round;

void tt_fed_round_init (tt_fed_round * r, uint64_t signature,
    size_t n_floats, uint32_t round);
/* From now on (this round and the next ones) the updates' weights are
 * written to an unlinked temporary file in dir as they are taken. */
tt_status tt_fed_round_spill (tt_fed_round * r, const char *dir,
    tt_error * err);
/* Takes msg's weights (msg is emptied) when it is an update of this round
 * from a client not yet counted in it; else refuses it, msg untouched:
 * another kind, a stale round (below), a round ahead, a replay (a client
 * already counted), another signature or size, a spill file that cannot
 * be written (TT_ERR_IO). */
tt_status tt_fed_round_add (tt_fed_round * r, tt_fed_message * msg,
    tt_error * err);
/* Rejects the updates that moved far from the global model they were
 * trained from: distance d_i = ||w_i - global|| (L2); an update is
 * rejected when d_i > max_ratio * median(d) of the round's updates not
 * rejected yet. Needs 3 of them (with 2, neither can be told the
 * outlier): else nothing is done. on_reject (may be NULL) gets each
 * rejected client's id and the reason. Returns how many were rejected. */
uint32_t tt_fed_round_screen (tt_fed_round * r, const float *global,
    double max_ratio, void (*on_reject) (void *user, const char *client_id,
        const char *reason), void *user);
/* Updates taken and not rejected. */
uint32_t tt_fed_round_accepted (const tt_fed_round * r);
/* The weighted average into out (n_floats). TT_ERR_STATE when no update
 * was taken, TT_ERR_IO when a spilled one cannot be read back. */
tt_status tt_fed_round_average (const tt_fed_round * r, float *out,
    tt_error * err);
/* Drops the round's updates and starts collecting round. */
void tt_fed_round_reset (tt_fed_round * r, uint32_t round);
void tt_fed_round_clear (tt_fed_round * r);

/* ---- files ----------------------------------------------------------- */

/* Writes data to path atomically: a temporary file in its folder,
 * fsync'ed, renamed over path, the folder fsync'ed. */
tt_status tt_fed_write_file (const char *path, const void *data, size_t len,
    tt_error * err);
/* Reads a whole file (at most max bytes); *out malloc'ed. */
tt_status tt_fed_read_file (const char *path, size_t max, void **out,
    size_t *len, tt_error * err);

#endif
