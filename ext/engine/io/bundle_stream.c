/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A bundle's weight section as a stream of raw bytes: read (inflated when
 * zlib-compressed) in order, its stored bytes checksummed as they go, its
 * end and checksum checked when done; and its checksum over it whole.
 */
#include "bundle_stream.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

tt_status
tt_bundle_stream_open (w_stream * w, bundle * b, bool crc_on, tt_error * err)
{
  memset (w, 0, sizeof *w);
  w->b = b;
  w->s = b->weights;
  w->crc_on = crc_on;
  w->compressed = (w->s->flags & TT_BUNDLE_SECTION_ZLIB) != 0;
  if (!w->compressed)
    return TT_OK;
  if (!b->mem && !(w->in = malloc (B_CHUNK)))
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
  if (inflateInit (&w->z) != Z_OK) {
    free (w->in);
    w->in = NULL;
    return tt_fail (err, TT_ERR_NOMEM, "%s: cannot start zlib", b->name);
  }
  w->z_ready = true;
  return TT_OK;
}

void
tt_bundle_stream_close (w_stream * w)
{
  if (w->z_ready)
    inflateEnd (&w->z);
  free (w->in);
  w->z_ready = false;
  w->in = NULL;
}

/* More compressed input, when the last is used up. */
static tt_status
stream_feed (w_stream * w, tt_error * err)
{
  if (w->z.avail_in > 0 || w->pos == w->s->length)
    return TT_OK;
  uint64_t take = w->s->length - w->pos;
  if (take > B_CHUNK)
    take = B_CHUNK;
  const unsigned char *p;
  if (w->b->mem) {
    p = w->b->mem + w->s->offset + w->pos;
  } else {
    tt_status st = tt_bundle_read (w->b, w->s->offset + w->pos, w->in, take,
        err);
    if (st)
      return st;
    p = w->in;
  }
  if (w->crc_on)
    w->crc = tt_bundle_crc (w->crc, p, take);
  w->z.next_in = p;
  w->z.avail_in = (uInt) take;
  w->pos += take;
  return TT_OK;
}

static tt_status
stream_zerror (w_stream * w, int zr, tt_error * err)
{
  if ((zr == Z_BUF_ERROR || zr == Z_STREAM_END) &&
      (uint64_t) w->z.total_out < w->s->raw_length)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: the compressed "
        "data ends after %" PRIu64 " of %" PRIu64 " bytes", w->b->name,
        (uint64_t) w->z.total_out, w->s->raw_length);
  if (zr == Z_BUF_ERROR)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: the compressed "
        "data stops before its end marker and checksum", w->b->name);
  return tt_fail (err, TT_ERR_PARSE, "%s: section weights: zlib: %s",
      w->b->name, w->z.msg ? w->z.msg : zError (zr));
}

/* The next n raw bytes into dst. */
tt_status
tt_bundle_stream_read (w_stream * w, void *dst, uint64_t n, tt_error * err)
{
  tt_status st;
  if (n > w->s->raw_length - w->raw_pos)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: read past its "
        "end", w->b->name);
  unsigned char *out = dst;
  /* in chunks, so each is checksummed while it is still in the cache */
  while (!w->compressed && n > 0) {
    uint64_t take = n > B_CHUNK ? B_CHUNK : n;
    if ((st = tt_bundle_read (w->b, w->s->offset + w->raw_pos, out, take, err)))
      return st;
    if (w->crc_on)
      w->crc = tt_bundle_crc (w->crc, out, take);
    w->raw_pos += take;
    w->pos += take;
    out += take;
    n -= take;
  }
  while (n > 0) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt) n;
    w->z.next_out = out;
    w->z.avail_out = chunk;
    while (w->z.avail_out > 0) {
      if ((st = stream_feed (w, err)))
        return st;
      int zr = inflate (&w->z, Z_NO_FLUSH);
      if (zr == Z_STREAM_END && w->z.avail_out > 0)
        return stream_zerror (w, zr, err);
      if (zr == Z_BUF_ERROR && w->z.avail_in == 0 && w->pos == w->s->length)
        return stream_zerror (w, zr, err);
      if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
        return stream_zerror (w, zr, err);
    }
    out += chunk;
    n -= chunk;
    w->raw_pos += chunk;
  }
  return TT_OK;
}

/* Everything read: the stream ends exactly here and the checksum holds. */
tt_status
tt_bundle_stream_finish (w_stream * w, tt_error * err)
{
  tt_status st;
  if (w->compressed) {
    unsigned char extra;
    for (;;) {
      w->z.next_out = &extra;
      w->z.avail_out = 1;
      if ((st = stream_feed (w, err)))
        return st;
      int zr = inflate (&w->z, Z_NO_FLUSH);
      if (w->z.avail_out == 0)
        return tt_fail (err, TT_ERR_PARSE, "%s: section weights: the "
            "compressed data holds more than the %" PRIu64 " bytes of its "
            "tensors", w->b->name, w->s->raw_length);
      if (zr == Z_STREAM_END)
        break;
      if (zr != Z_OK)
        return stream_zerror (w, zr, err);
    }
    if (w->z.avail_in > 0 || w->pos != w->s->length)
      return tt_fail (err, TT_ERR_PARSE, "%s: section weights: %" PRIu64
          " bytes after the end of the compressed data", w->b->name,
          (uint64_t) w->z.avail_in + (w->s->length - w->pos));
  }
  if (w->crc_on && w->crc != w->s->crc)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: checksum "
        "mismatch (stored %08x, computed %08x): the bundle is damaged",
        w->b->name, w->s->crc, w->crc);
  return TT_OK;
}

/* After a failure mid-stream: a damaged section reports as damaged, so
 * checksum the stored bytes not yet read and prefer that message. */
tt_status
tt_bundle_stream_fail (w_stream * w, tt_status st, tt_error * err)
{
  if (!w->crc_on || st == TT_ERR_NOMEM)
    return st;
  unsigned char *buf = malloc (B_CHUNK);
  if (!buf)
    return st;
  uint64_t at = w->compressed ? w->pos : w->raw_pos;
  uint32_t crc = w->crc;
  while (at < w->s->length) {
    uint64_t take = w->s->length - at > B_CHUNK ? B_CHUNK : w->s->length - at;
    if (tt_bundle_read (w->b, w->s->offset + at, buf, take, NULL)) {
      free (buf);
      return st;
    }
    crc = tt_bundle_crc (crc, buf, take);
    at += take;
  }
  free (buf);
  if (crc != w->s->crc)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: checksum "
        "mismatch (stored %08x, computed %08x): the bundle is damaged",
        w->b->name, w->s->crc, crc);
  return st;
}

/* CRC of the stored weight section, reading it all. */
tt_status
tt_bundle_weights_crc (bundle * b, uint32_t * crc, tt_error * err)
{
  const b_section *s = b->weights;
  if (b->mem) {
    *crc = tt_bundle_crc (0, b->mem + s->offset, s->length);
    return TT_OK;
  }
  unsigned char *buf = malloc (B_CHUNK);
  if (!buf)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
  uint32_t c = 0;
  for (uint64_t at = 0; at < s->length;) {
    uint64_t take = s->length - at > B_CHUNK ? B_CHUNK : s->length - at;
    tt_status st = tt_bundle_read (b, s->offset + at, buf, take, err);
    if (st) {
      free (buf);
      return st;
    }
    c = tt_bundle_crc (c, buf, take);
    at += take;
  }
  free (buf);
  *crc = c;
  return TT_OK;
}
