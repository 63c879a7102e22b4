/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * xoshiro256** seeded through splitmix64: fast, and the same stream on
 * every platform, which keeps training deterministic given a seed.
 */
#include "tt_internal.h"

#include <math.h>

static uint64_t
rng_splitmix64 (uint64_t * x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void
tt_rng_seed (tt_rng * rng, uint64_t seed)
{
  for (int i = 0; i < 4; i++)
    rng->s[i] = rng_splitmix64 (&seed);
}

static inline uint64_t
rng_rotl (uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

static inline uint64_t
rng_next (tt_rng * rng)
{
  uint64_t *s = rng->s;
  uint64_t result = rng_rotl (s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rng_rotl (s[3], 45);
  return result;
}

uint64_t
tt_rng_next (tt_rng * rng)
{
  return rng_next (rng);
}

/* 24 random bits: exactly representable, never 1.0 */
static inline float
rng_uniform (tt_rng * rng)
{
  return (float) (rng_next (rng) >> 40) * (1.0f / 16777216.0f);
}

/* The dropout rule, one draw: dropped when the draw is below rate. Both
 * masks take it, so the byte mask keeps exactly the float one's
 * elements. */
static inline bool
rng_drops (tt_rng * rng, float rate)
{
  return rng_uniform (rng) < rate;
}

float
tt_rng_uniform (tt_rng * rng)
{
  return rng_uniform (rng);
}

void
tt_rng_mask (tt_rng * rng, float *mask, size_t n, float rate, float keep)
{
  /* the draws of tt_rng_uniform, in order, without a call each */
  for (size_t i = 0; i < n; i++)
    mask[i] = rng_drops (rng, rate) ? 0.0f : keep;
}

void
tt_rng_mask_bytes (tt_rng * rng, uint8_t * mask, size_t n, float rate)
{
  for (size_t i = 0; i < n; i++)
    mask[i] = !rng_drops (rng, rate);
}

float
tt_rng_normal (tt_rng * rng)
{
  /* Box-Muller; u1 is kept away from 0 so log() stays finite */
  double u1 = ((double) (tt_rng_next (rng) >> 11) + 1.0) / 9007199254740993.0;
  double u2 = (double) (tt_rng_next (rng) >> 11) / 9007199254740992.0;
  return (float) (sqrt (-2.0 * log (u1)) * cos (2.0 * M_PI * u2));
}
