/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a model's stored state may hold, checked where it enters (a BIN or
 * a bundle loaded) and where it leaves (a save): weights finite; adam's
 * first moments finite with a square float32 can hold; its second moments
 * finite and not negative (they average squares); epoch and iteration
 * counters with room to go on counting.
 *
 * Why both ends: a negative second moment loads as a number, but sqrt of
 * it turns the next update into NaN, and ReLU can hide NaN weights from
 * the loss for a whole run; a save would then replace a good model with
 * one no loader accepts. Refusing such values on load and on save keeps
 * the previous file.
 */
#include "tt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bits of 2^64 as a float: a first moment at or above it squares to
 * infinity (FLT_MAX is just under 2^128). */
#define STATE_M_LIMIT_BITS 0x5f800000u
#define STATE_INF_BITS 0x7f800000u
#define STATE_BLOCK 1024

static bool
state_value_bad (tt_state_kind kind, uint32_t u)
{
  const uint32_t mag = u & 0x7fffffffu;
  if (kind == TT_STATE_ADAM_M)
    return mag >= STATE_M_LIMIT_BITS;
  if (kind == TT_STATE_ADAM_V)
    return mag >= STATE_INF_BITS || ((u >> 31) && mag);
  return mag >= STATE_INF_BITS;
}

size_t
tt_state_find_bad (tt_state_kind kind, const void *data, size_t n)
{
  const unsigned char *p = data;
  /* integer tests on the bits, a block at a time without an early exit so
   * the loop vectorizes; only a block with a bad value is searched */
  for (size_t at = 0; at < n; at += STATE_BLOCK) {
    const size_t end = n - at < STATE_BLOCK ? n : at + STATE_BLOCK;
    unsigned any = 0;
    for (size_t i = at; i < end; i++) {
      uint32_t u;
      memcpy (&u, p + i * 4, 4);
      any |= state_value_bad (kind, u);
    }
    if (!any)
      continue;
    for (size_t i = at; i < end; i++) {
      uint32_t u;
      memcpy (&u, p + i * 4, 4);
      if (state_value_bad (kind, u))
        return i;
    }
  }
  return n;
}

const char *
tt_state_why (tt_state_kind kind, const void *value)
{
  uint32_t u;
  memcpy (&u, value, 4);
  if ((u & 0x7fffffffu) >= STATE_INF_BITS)
    return "a non-finite value";
  if (kind == TT_STATE_ADAM_V)
    return "a negative adam second moment";
  return "an adam first moment too large to square in float32";
}

tt_status
tt_state_fail (tt_error * err, const char *file, const char *tensor,
    tt_state_kind kind, const void *data, size_t index)
{
  const unsigned char *p = (const unsigned char *) data + index * 4;
  float v;
  memcpy (&v, p, 4);
  return tt_fail (err, TT_ERR_PARSE, "%s: tensor %s holds %s (%g) at "
      "element %zu", file, tensor, tt_state_why (kind, p), (double) v, index);
}

tt_status
tt_state_check_counters (uint32_t epoch, uint32_t iteration,
    const char *file, tt_error * err)
{
  /* A run goes on from the stored counters: a value this high is a
   * damaged file (2^31 batches is years of training), and a few more
   * steps would wrap the iteration, restarting adam's bias correction
   * and the learning-rate schedule. */
  if (epoch > TT_STATE_COUNTER_MAX)
    return tt_fail (err, TT_ERR_PARSE, "%s: the epoch counter is %u, above "
        "%u: continuing would overflow it (a damaged file?)", file, epoch,
        TT_STATE_COUNTER_MAX);
  if (iteration > TT_STATE_COUNTER_MAX)
    return tt_fail (err, TT_ERR_PARSE, "%s: the iteration counter is %u, "
        "above %u: continuing would overflow it (a damaged file?)", file,
        iteration, TT_STATE_COUNTER_MAX);
  return TT_OK;
}
