/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The replay buffer (io/replay.h). Its file, all integers little endian:
 *   0   8  "TTREPLAY"
 *   8   4  version (1)
 *   12  4  tensors per sample (T)
 *   16  8  samples seen (offered to the reservoir, over all runs)
 *   24  4  samples stored (N)
 *   28  4  0
 *   32  8T bytes of each tensor in a sample
 *   then N samples, each its T tensors back to back (as the model is
 *   fed: float32 inputs, the float32 label)
 *   then 4  CRC-32 (zlib's) of every byte before it.
 * The buffer keeps the file's image in one block, so a save writes it as
 * it is. */
#include "replay.h"
#include "atomic_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define REPLAY_FIXED_HEADER 32

static uint64_t
replay_next (tt_replay * r)
{
  uint64_t z = (r->rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* uniform in [0, n), n >= 1 */
static uint64_t
replay_below (tt_replay * r, uint64_t n)
{
  return replay_next (r) % n;
}

static void
replay_put32 (uint8_t * p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t) (v >> (8 * i));
}

static void
replay_put64 (uint8_t * p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t) (v >> (8 * i));
}

static uint32_t
replay_get32 (const uint8_t * p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
      (uint32_t) p[3] << 24;
}

static uint64_t
replay_get64 (const uint8_t * p)
{
  return (uint64_t) replay_get32 (p) | (uint64_t) replay_get32 (p + 4) << 32;
}

size_t
tt_replay_footprint (uint32_t n_tensors, const size_t *bytes, uint32_t capacity)
{
  size_t per = 0, head = REPLAY_FIXED_HEADER + 8 * (size_t) n_tensors;
  for (uint32_t i = 0; i < n_tensors; i++)
    per += bytes[i];
  if (per + 4 && capacity > (SIZE_MAX - head - 4) / (per + 4))
    return 0;
  return head + per * capacity + 4 + sizeof (uint32_t) * (size_t) capacity;
}

tt_status
tt_replay_init (tt_replay * r, uint32_t n_tensors, const size_t *bytes,
    uint32_t capacity, uint64_t seed, tt_error * err)
{
  memset (r, 0, sizeof *r);
  if (n_tensors < 1 || n_tensors > TT_REPLAY_MAX_TENSORS)
    return tt_fail (err, TT_ERR_INVALID, "replay: %u tensors a sample (1 to "
        "%d)", n_tensors, TT_REPLAY_MAX_TENSORS);
  r->n_tensors = n_tensors;
  for (uint32_t i = 0; i < n_tensors; i++) {
    r->bytes[i] = bytes[i];
    r->sample_bytes += bytes[i];
  }
  r->capacity = capacity;
  r->rng = seed;
  r->header_bytes = REPLAY_FIXED_HEADER + 8 * (size_t) n_tensors;
  const size_t footprint = tt_replay_footprint (n_tensors, bytes, capacity);
  if (footprint) {
    r->block = calloc (1, r->header_bytes + r->sample_bytes * capacity + 4);
    r->order = malloc (sizeof (uint32_t) * (capacity ? capacity : 1));
  }
  if (!r->block || !r->order) {
    tt_replay_clear (r);
    return tt_fail (err, TT_ERR_NOMEM, "replay: %u samples of %zu bytes: "
        "out of memory", capacity, r->sample_bytes);
  }
  for (uint32_t i = 0; i < capacity; i++)
    r->order[i] = i;
  return TT_OK;
}

void
tt_replay_clear (tt_replay * r)
{
  free (r->block);
  free (r->order);
  r->block = NULL;
  r->order = NULL;
  r->count = 0;
  r->capacity = 0;
}

static uint8_t *
replay_slot (const tt_replay * r, uint32_t i)
{
  return r->block + r->header_bytes + r->sample_bytes * (size_t) i;
}

/* Algorithm R: the first capacity samples fill the slots; sample t
 * (0-based) then replaces a random slot with probability capacity/(t+1). */
uint8_t *
tt_replay_offer (tt_replay * r)
{
  const uint64_t t = r->seen++;
  if (r->capacity == 0)
    return NULL;
  if (r->count < r->capacity)
    return replay_slot (r, r->count++);
  const uint64_t j = replay_below (r, t + 1);
  return j < r->capacity ? replay_slot (r, (uint32_t) j) : NULL;
}

const uint8_t *
tt_replay_sample (const tt_replay * r, uint32_t i)
{
  return i < r->count ? replay_slot (r, i) : NULL;
}

/* a partial Fisher-Yates shuffle of the first count entries of order,
 * which stay a permutation of 0..count-1 (the rest are untouched) */
void
tt_replay_pick (tt_replay * r, uint32_t k, uint32_t * out)
{
  if (k > r->count)
    k = r->count;
  for (uint32_t j = 0; j < k; j++) {
    const uint32_t s = j + (uint32_t) replay_below (r, r->count - j);
    const uint32_t tmp = r->order[j];
    r->order[j] = r->order[s];
    r->order[s] = tmp;
    out[j] = r->order[j];
  }
}

/* "2 tensors of 16 + 12 bytes" */
static void
replay_sizes (char *out, size_t size, uint32_t n, const size_t *bytes)
{
  int at = snprintf (out, size, "%u tensor%s of ", n, n == 1 ? "" : "s");
  for (uint32_t i = 0; i < n && at > 0 && (size_t) at < size; i++)
    at += snprintf (out + at, size - (size_t) at, "%s%zu", i ? " + " : "",
        bytes[i]);
  if (at > 0 && (size_t) at < size)
    snprintf (out + at, size - (size_t) at, " bytes");
}

/* the whole file (malloc'd), NULL after the error */
static uint8_t *
replay_read (const char *path, size_t *len, tt_error * err)
{
  FILE *f = fopen (path, "rb");
  uint8_t *data = NULL;
  long size = -1;
  if (f && !fseek (f, 0, SEEK_END))
    size = ftell (f);
  if (size >= 0 && !fseek (f, 0, SEEK_SET)
      && (data = malloc ((size_t) size + 1))
      && fread (data, 1, (size_t) size, f) == (size_t) size) {
    fclose (f);
    *len = (size_t) size;
    return data;
  }
  free (data);
  if (f)
    fclose (f);
  tt_fail (err, TT_ERR_IO, "%s: cannot read it", path);
  return NULL;
}

tt_status
tt_replay_load (tt_replay * r, const char *path, tt_error * err)
{
  size_t len = 0, header, sample = 0, expect;
  size_t bytes[TT_REPLAY_MAX_TENSORS];
  tt_status st = TT_ERR_INVALID;
  uint8_t *p = replay_read (path, &len, err);

  if (!p)
    return TT_ERR_IO;
  if (len < REPLAY_FIXED_HEADER + 4 || memcmp (p, TT_REPLAY_MAGIC, 8)) {
    tt_fail (err, st, "%s is not a replay file (no " TT_REPLAY_MAGIC
        " header)", path);
    goto out;
  }
  const uint32_t version = replay_get32 (p + 8);
  const uint32_t n_tensors = replay_get32 (p + 12);
  const uint64_t seen = replay_get64 (p + 16);
  const uint32_t count = replay_get32 (p + 24);
  if (version != TT_REPLAY_VERSION) {
    tt_fail (err, st, "%s: version %u, this build reads version %d", path,
        version, TT_REPLAY_VERSION);
    goto out;
  }
  if (n_tensors == 0 || n_tensors > TT_REPLAY_MAX_TENSORS
      || len < REPLAY_FIXED_HEADER + 8 * (size_t) n_tensors + 4) {
    tt_fail (err, st, "%s: %u tensors a sample (1 to %d) in a file of %zu "
        "bytes", path, n_tensors, TT_REPLAY_MAX_TENSORS, len);
    goto out;
  }
  header = REPLAY_FIXED_HEADER + 8 * (size_t) n_tensors;
  for (uint32_t i = 0; i < n_tensors; i++) {
    const uint64_t b = replay_get64 (p + REPLAY_FIXED_HEADER + 8 * i);
    if (b > len) {
      tt_fail (err, st, "%s: tensor %u of %llu bytes in a file of %zu", path,
          i, (unsigned long long) b, len);
      goto out;
    }
    bytes[i] = (size_t) b;
    sample += bytes[i];
  }
  /* the label (the last tensor) may be shorter: a classifier grown since
   * the file was written (tensor-trainer grow) */
  if (n_tensors != r->n_tensors
      || memcmp (bytes, r->bytes, (n_tensors - 1) * sizeof *bytes)
      || bytes[n_tensors - 1] > r->bytes[n_tensors - 1]) {
    char file[256], model[256];
    replay_sizes (file, sizeof file, n_tensors, bytes);
    replay_sizes (model, sizeof model, r->n_tensors, r->bytes);
    tt_fail (err, st, "%s holds samples of %s; the model takes %s", path,
        file, model);
    goto out;
  }
  expect = header + sample * count + 4;
  if ((sample && count > (len - header) / sample) || len != expect) {
    tt_fail (err, st, "%s: %zu bytes, but %u samples of %zu bytes make a "
        "file of %zu", path, len, count, sample, expect);
    goto out;
  }
  if (replay_get32 (p + len - 4) != (uint32_t) crc32 (0L, p, (uInt) (len - 4))) {
    tt_fail (err, st, "%s: CRC mismatch (the file is damaged)", path);
    goto out;
  }
  r->count = count < r->capacity ? count : r->capacity;
  r->seen = seen > r->count ? seen : r->count;
  if (sample == r->sample_bytes) {
    memcpy (replay_slot (r, 0), p + header, sample * r->count);
  } else {
    /* each sample's label padded with zeros (the new classes' entries) */
    for (uint32_t i = 0; i < r->count; i++) {
      uint8_t *dst = replay_slot (r, i);
      memcpy (dst, p + header + sample * i, sample);
      memset (dst + sample, 0, r->sample_bytes - sample);
    }
  }
  st = TT_OK;
out:
  free (p);
  return st;
}

tt_status
tt_replay_save (tt_replay * r, const char *path, tt_error * err)
{
  uint8_t *p = r->block;
  const size_t len = r->header_bytes + r->sample_bytes * r->count + 4;
  tt_atomic_file f;

  memcpy (p, TT_REPLAY_MAGIC, 8);
  replay_put32 (p + 8, TT_REPLAY_VERSION);
  replay_put32 (p + 12, r->n_tensors);
  replay_put64 (p + 16, r->seen);
  replay_put32 (p + 24, r->count);
  replay_put32 (p + 28, 0);
  for (uint32_t i = 0; i < r->n_tensors; i++)
    replay_put64 (p + REPLAY_FIXED_HEADER + 8 * i, r->bytes[i]);
  replay_put32 (p + len - 4, (uint32_t) crc32 (0L, p, (uInt) (len - 4)));
  tt_status st = tt_atomic_file_open (&f, path, err);
  if (st)
    return st;
  st = tt_atomic_file_write (&f, p, len, err);
  if (st) {
    tt_atomic_file_abort (&f);
    return st;
  }
  return tt_atomic_file_commit (&f, err);
}
