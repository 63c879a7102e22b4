/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A bundle's weight section as a stream of raw bytes (bundle_stream.c).
 */
#ifndef TT_BUNDLE_STREAM_H
#define TT_BUNDLE_STREAM_H

#include "bundle_parse.h"

typedef struct
{
  bundle *b;
  const b_section *s;
  uint64_t pos;                 /* stored bytes consumed */
  uint64_t raw_pos;             /* raw bytes produced */
  uint32_t crc;
  bool crc_on;                  /* checksum the stored bytes as they go */
  bool compressed, z_ready;
  z_stream z;
  unsigned char *in;            /* input buffer: compressed, from a file */
} w_stream;

tt_status tt_bundle_stream_open (w_stream * w, bundle * b, bool crc_on,
    tt_error * err);
void tt_bundle_stream_close (w_stream * w);
/* The next n raw bytes into dst. */
tt_status tt_bundle_stream_read (w_stream * w, void *dst, uint64_t n,
    tt_error * err);
/* Everything read: the stream ends exactly here and the checksum holds. */
tt_status tt_bundle_stream_finish (w_stream * w, tt_error * err);
/* After a failure mid-stream: a damaged section reports as damaged, so
 * checksum the stored bytes not yet read and prefer that message. */
tt_status tt_bundle_stream_fail (w_stream * w, tt_status st, tt_error * err);
/* CRC of the stored weight section, reading it all. */
tt_status tt_bundle_weights_crc (bundle * b, uint32_t * crc, tt_error * err);

#endif
