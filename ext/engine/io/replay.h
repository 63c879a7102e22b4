/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A replay buffer: up to capacity past samples, each the same tensors of
 * fixed byte sizes back to back (the inputs, then the label), kept by
 * reservoir sampling (every sample offered so far equally likely to be
 * held), with distinct random picks for a batch and a small file format
 * of its own (docs/personalize.md, "Replay"). tensor_trainer's
 * replay-size and tensor-trainer train --replay-size share it.
 * tt_replay_init allocates everything: offering and picking allocate
 * nothing. */
#ifndef TT_REPLAY_H
#define TT_REPLAY_H

#include "tt_engine.h"

#include <stddef.h>
#include <stdint.h>

#define TT_REPLAY_MAX_TENSORS 16
#define TT_REPLAY_MAGIC "TTREPLAY"
#define TT_REPLAY_VERSION 1

typedef struct
{
  uint32_t n_tensors;
  size_t bytes[TT_REPLAY_MAX_TENSORS];  /* per sample, each tensor */
  size_t sample_bytes;          /* their sum */
  uint32_t capacity;            /* samples at most */
  uint32_t count;               /* samples held */
  uint64_t seen;                /* samples offered so far, loaded ones
                                 * included (the file keeps the count) */
  uint64_t rng;                 /* splitmix64 state */
  size_t header_bytes;
  uint8_t *block;               /* header | capacity samples | CRC */
  uint32_t *order;              /* a permutation for distinct picks */
} tt_replay;

/* Bytes that init allocates for this buffer (0 when it cannot be had). */
size_t tt_replay_footprint (uint32_t n_tensors, const size_t * bytes,
    uint32_t capacity);
/* TT_ERR_NOMEM when the memory cannot be had (nothing is then held). */
tt_status tt_replay_init (tt_replay * r, uint32_t n_tensors,
    const size_t * bytes, uint32_t capacity, uint64_t seed, tt_error * err);
void tt_replay_clear (tt_replay * r);

/* One more sample seen: where to write it (its tensors back to back), or
 * NULL when the reservoir does not keep it. */
uint8_t *tt_replay_offer (tt_replay * r);
const uint8_t *tt_replay_sample (const tt_replay * r, uint32_t i);
/* k distinct indices of held samples into out (k <= count). */
void tt_replay_pick (tt_replay * r, uint32_t k, uint32_t * out);

/* Fills the buffer from path; an error naming path for a file that
 * cannot be read, is not a replay file, is damaged, or holds tensors of
 * other sizes (a shorter last tensor, the label of a classifier grown
 * since, is padded with zeros). A file of more samples than capacity
 * gives its first capacity ones. */
tt_status tt_replay_load (tt_replay * r, const char *path, tt_error * err);
/* Writes the buffer to path atomically (io/atomic_file.c). */
tt_status tt_replay_save (tt_replay * r, const char *path, tt_error * err);

#endif
