/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test of the memory-offset planner (ext/engine/plan_offsets.h) and
 * of its independent validator (ext/engine/plan_validate.h).
 *
 * - Hand-made sets with a known optimum: chains, all-overlapping, gap
 *   filling, a set where largest-first alone is not optimal, one where
 *   only the peak-first construction is (a long-lived tensor under the
 *   peak), zero-size and single tensors, alignment rounding, invalid
 *   input and overflow.
 * - Property test: TEST_SETS random sets of TEST_TENSORS tensors shaped
 *   like a training step (whole-range weights, forward activations kept
 *   until their backward step, short temporaries, gradients), each
 *   planned, validated and compared with the lower bound; the average
 *   ratio pool / bound must stay <= TEST_MAX_AVG_RATIO.
 * - Validator: each kind of broken plan rejected with its own message,
 *   and its verdict compared with a brute-force pairwise check.
 *
 * Output: failures with their location, a few summary lines, then
 * "N passed, M failed"; the exit status is non-zero when anything failed.
 *
 * Build:
 *   gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I ext/engine \
 *       -I tests/unit ext/engine/plan_offsets.c ext/engine/plan_validate.c \
 *       tests/unit/test_plan_offsets.c -o test_plan_offsets
 */
#include "plan_offsets.h"
#include "plan_validate.h"
#include "tt_test.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define TEST_SETS 200
#define TEST_TENSORS 1000
#define TEST_MAX_AVG_RATIO 1.02
#define TEST_BIG_TENSORS 10000


static double
test_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* splitmix64: a seeded generator, identical on every platform. */
static uint64_t
test_rand (uint64_t * s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0 (the modulo bias is irrelevant here). */
static uint64_t
test_below (uint64_t * s, uint64_t n)
{
  return test_rand (s) % n;
}

static double
test_unit (uint64_t * s)
{
  return (double) (test_rand (s) >> 11) * (1.0 / 9007199254740992.0);
}

/* 2^x for 0 <= x < 1 by its Taylor series (no libm needed): e^y with
 * y = x ln 2 < 0.7 converges to double precision in 20 terms. */
static double
test_exp2_frac (double x)
{
  double y = x * 0.69314718055994530942, term = 1, sum = 1;

  for (int k = 1; k < 20; k++) {
    term *= y / k;
    sum += term;
  }
  return sum;
}

/* Log-uniform in [64, 64 * 2^16 = 4 MiB). */
static double
test_log_uniform_size (uint64_t * s)
{
  double e = 16.0 * test_unit (s);
  int whole = (int) e;

  return (double) (UINT64_C (64) << whole) * test_exp2_frac (e - whole);
}

static void
test_set (tt_interval * t, size_t i, uint64_t size, int32_t first, int32_t last)
{
  t[i].size = size;
  t[i].first = first;
  t[i].last = last;
  t[i].offset = UINT64_MAX;     /* the planner must overwrite it */
}

/* Plans t[0..n) and checks validity and the expected pool size. */
static uint64_t
test_plan_expect (const char *what, tt_interval * t, size_t n,
    uint64_t align, uint64_t expect)
{
  char err[512];
  uint64_t pool = tt_plan_assign_offsets (t, n, align);

  CHECK (pool == expect, "%s: pool %" PRIu64 ", expected %" PRIu64, what,
      pool, expect);
  if (pool != UINT64_MAX)
    CHECK (tt_plan_validate (t, n, align, pool, NULL, err, sizeof err) == 0,
        "%s: %s", what, err);
  return pool;
}

static void
test_small_sets (void)
{
  tt_interval t[16];
  const uint64_t u = 64;

  /* Empty input. */
  CHECK (tt_plan_assign_offsets (NULL, 0, 64) == 0, "n = 0");
  CHECK (tt_plan_lower_bound (NULL, 0, 64) == 0, "bound of n = 0");
  CHECK (tt_plan_naive_size (NULL, 0, 64) == 0, "naive of n = 0");

  /* Single tensor: offset 0, pool = its aligned size. */
  test_set (t, 0, 1000, 3, 7);
  test_plan_expect ("single", t, 1, 64, 1024);
  CHECK (t[0].offset == 0, "single: offset %" PRIu64, t[0].offset);

  /* A chain of disjoint lifetimes: everything reuses the same bytes. */
  test_set (t, 0, 100, 0, 0);
  test_set (t, 1, 300, 1, 1);
  test_set (t, 2, 200, 2, 2);
  test_set (t, 3, 50, 3, 5);
  test_plan_expect ("chain", t, 4, 64, 320);
  for (int i = 0; i < 4; i++)
    CHECK (t[i].offset == 0, "chain: offset[%d] = %" PRIu64, i, t[i].offset);
  CHECK (tt_plan_naive_size (t, 4, 64) == 128 + 320 + 256 + 64, "naive");

  /* All overlapping: the pool is the sum. */
  test_set (t, 0, 64, 0, 5);
  test_set (t, 1, 128, 2, 3);
  test_set (t, 2, 192, 3, 9);
  test_plan_expect ("all overlapping", t, 3, 64, 384);
  CHECK (tt_plan_lower_bound (t, 3, 64) == 384, "all overlapping: bound");

  /* Lifetimes touching at one step conflict; adjacent ones do not. */
  test_set (t, 0, 64, 0, 2);
  test_set (t, 1, 64, 2, 4);
  test_plan_expect ("touching", t, 2, 64, 128);
  test_set (t, 0, 64, 0, 2);
  test_set (t, 1, 64, 3, 4);
  test_plan_expect ("adjacent", t, 2, 64, 64);

  /* Gap filling: largest-first puts B on top of A, C beside B (reusing
   * B's bytes at other steps) and D above both; that leaves a 1-unit hole
   * above C at steps 2..3, exactly where E lives. Stacking E on top
   * instead would give 10 units; the optimum (= bound) is 9. */
  test_set (t, 0, 4 * u, 0, 3); /* A */
  test_set (t, 1, 3 * u, 0, 1); /* B */
  test_set (t, 2, 2 * u, 2, 3); /* C */
  test_set (t, 3, 2 * u, 0, 3); /* D */
  test_set (t, 4, 1 * u, 2, 3); /* E */
  CHECK (tt_plan_lower_bound (t, 5, 64) == 9 * u, "gap: bound");
  test_plan_expect ("gap filling", t, 5, 64, 9 * u);
  CHECK (t[4].offset == 6 * u, "gap filling: E at %" PRIu64, t[4].offset);

  /* Largest-first (with best fit) is not optimal here: A (5) goes to 0;
   * B (4, live throughout) conflicts with A and lands on it at 5; C (4)
   * fits below B; D (3) conflicts with B and C and finds only a 1-unit
   * hole between them, so it goes on top: 12 units. Placing the
   * long-lived B first at 0 gives the bound, 11 units (A and C at 4, D
   * at 8), which the other orders or the local search find. */
  test_set (t, 0, 5 * u, 1, 1); /* A */
  test_set (t, 1, 4 * u, 0, 3); /* B */
  test_set (t, 2, 4 * u, 0, 0); /* C */
  test_set (t, 3, 3 * u, 0, 0); /* D */
  CHECK (tt_plan_lower_bound (t, 4, 64) == 11 * u, "largest-first: bound");
  test_plan_expect ("largest-first fails", t, 4, 64, 11 * u);

  /* A long-lived tensor under the peak (transfer_frozen's shape): L
   * (labels, 0..5) is live at the peak step 4 and overlaps S (a loss
   * output, 5..20), which is not. By duration S goes lowest and L onto
   * it, so the peak's stack carries S; P under L fills only 3 of its 4
   * units, and C, I, G end at 14 units. Every other classic order and
   * the search from them also end at 14. The tensors live at the peak
   * first, longest-lived lowest (L, P, C, then I, G), tile the bound,
   * 13 units; S then fits beside P and A above it. */
  test_set (t, 0, 3 * u, 0, 5); /* L */
  test_set (t, 1, 4 * u, 5, 20);        /* S */
  test_set (t, 2, 6 * u, 1, 2); /* A */
  test_set (t, 3, 3 * u, 2, 4); /* P */
  test_set (t, 4, 2 * u, 4, 5); /* C */
  test_set (t, 5, 3 * u, 4, 4); /* I */
  test_set (t, 6, 2 * u, 4, 4); /* G */
  CHECK (tt_plan_lower_bound (t, 7, 64) == 13 * u, "peak bridge: bound");
  test_plan_expect ("peak bridge", t, 7, 64, 13 * u);
  CHECK (tt_plan_assign_offsets_search (t, 7, 64, true) == 13 * u,
      "peak bridge: thorough");

  /* Zero-size tensors: offset 0, no bytes, no effect on the pool. */
  test_set (t, 0, 0, 0, 9);
  test_set (t, 1, 100, 0, 9);
  test_set (t, 2, 0, 4, 4);
  test_set (t, 3, 100, 2, 5);
  test_plan_expect ("zero-size", t, 4, 64, 256);
  CHECK (t[0].offset == 0 && t[2].offset == 0, "zero-size: offsets %"
      PRIu64 ", %" PRIu64, t[0].offset, t[2].offset);
  CHECK (tt_plan_lower_bound (t, 4, 64) == 256, "zero-size: bound");
  test_set (t, 0, 0, 0, 1);
  test_set (t, 1, 0, 0, 1);
  test_plan_expect ("only zero-size", t, 2, 64, 0);

  /* Alignment rounding: sizes round up, offsets are multiples. */
  test_set (t, 0, 1, 0, 1);
  test_set (t, 1, 65, 0, 1);
  test_set (t, 2, 4096, 1, 2);
  test_plan_expect ("align 64", t, 3, 64, 64 + 128 + 4096);
  test_set (t, 0, 1, 0, 1);
  test_set (t, 1, 65, 0, 1);
  test_set (t, 2, 4096, 1, 2);
  test_plan_expect ("align 4096", t, 3, 4096, 3 * 4096);
  for (int i = 0; i < 3; i++)
    CHECK (t[i].offset % 4096 == 0, "align 4096: offset[%d] = %" PRIu64, i,
        t[i].offset);
  test_set (t, 0, 3, 0, 1);
  test_set (t, 1, 5, 0, 1);
  test_plan_expect ("align 1", t, 2, 1, 8);
  test_set (t, 0, 1, 0, 1);
  test_set (t, 1, 1, 0, 1);
  test_plan_expect ("align 0 = 64", t, 2, 0, 128);

  /* Invalid input. */
  test_set (t, 0, 64, 0, 1);
  CHECK (tt_plan_assign_offsets (t, 1, 48) == UINT64_MAX, "align 48");
  CHECK (tt_plan_lower_bound (t, 1, 48) == UINT64_MAX, "bound, align 48");
  test_set (t, 0, 64, 2, 1);
  CHECK (tt_plan_assign_offsets (t, 1, 64) == UINT64_MAX, "first > last");
  test_set (t, 0, 64, -1, 1);
  CHECK (tt_plan_assign_offsets (t, 1, 64) == UINT64_MAX, "first < 0");

  /* Overflow: a size that cannot be rounded up, and conflicting sizes
   * whose sum does not fit, both fail; non-conflicting ones do not. */
  test_set (t, 0, UINT64_MAX - 10, 0, 1);
  CHECK (tt_plan_assign_offsets (t, 1, 64) == UINT64_MAX, "huge size");
  CHECK (tt_plan_naive_size (t, 1, 64) == UINT64_MAX, "huge naive");
  test_set (t, 0, UINT64_C (1) << 63, 0, 1);
  test_set (t, 1, UINT64_C (1) << 63, 1, 2);
  CHECK (tt_plan_assign_offsets (t, 2, 64) == UINT64_MAX, "sum overflow");
  CHECK (tt_plan_lower_bound (t, 2, 64) == UINT64_MAX, "bound overflow");
  test_set (t, 1, UINT64_C (1) << 63, 2, 3);
  test_plan_expect ("2^63 reused", t, 2, 64, UINT64_C (1) << 63);
  /* Sizes up to 2^48 with extreme steps. */
  for (int i = 0; i < 16; i++)
    test_set (t, (size_t) i, (UINT64_C (1) << 48) - (uint64_t) i,
        i < 8 ? 0 : INT32_MAX - 1, i < 8 ? INT32_MAX - 2 : INT32_MAX);
  test_plan_expect ("2^48 sizes", t, 16, 64, 8 * (UINT64_C (1) << 48));
}

/* One random training-step-like set. Steps 0..T-1: forward 0..T/2-1,
 * backward T/2..T-2, optimizer T-1. Kind proportions vary per set, so
 * that the sets range from activation-dominated to temporary-dominated.
 * Sizes are log-uniform in [64 B, 4 MiB], in whole floats. */
static void
test_random_set (uint64_t * rng, tt_interval * t, size_t n)
{
  int32_t steps = 40 + 2 * (int32_t) test_below (rng, 200);
  int32_t half = steps / 2;
  double w[5], sum = 0;

  /* weights, activations, temporaries, gradients, medium-range */
  for (int k = 0; k < 5; k++) {
    w[k] = 0.05 + test_unit (rng);
    sum += w[k];
  }
  w[0] *= 0.4;                  /* fewer weights: they are the easy part */
  for (size_t i = 0; i < n; i++) {
    double x = test_unit (rng) * sum, size_f;
    int32_t first, last;
    int kind = 0;

    while (kind < 4 && x >= w[kind])
      x -= w[kind++];
    /* A few empty tensors (e.g. a zero-batch view) must stay at 0. */
    size_f = test_below (rng, 100) ? test_log_uniform_size (rng) : 0;
    switch (kind) {
      case 0:                  /* weight: needed from start to optimizer */
        first = 0;
        last = steps - 1;
        break;
      case 1:                  /* activation: until its backward step */
        first = (int32_t) test_below (rng, (uint64_t) half);
        last = steps - 2 - first + (int32_t) test_below (rng, 2);
        if (last >= steps)
          last = steps - 1;
        break;
      case 2:                  /* temporary inside one layer */
        first = (int32_t) test_below (rng, (uint64_t) steps);
        last = first + (int32_t) (test_below (rng, 4) == 0);
        break;
      case 3:                  /* gradient: backward step to optimizer,
                                 * or to the next backward step */
        first = half + (int32_t) test_below (rng, (uint64_t) (half - 1));
        last = test_below (rng, 2) ? steps - 1 : first + 1;
        break;
      default:                 /* skip connection / stashed value */
        first = (int32_t) test_below (rng, (uint64_t) steps);
        last = first + 1 + (int32_t) test_below (rng, (uint64_t) half / 2);
        if (last >= steps)
          last = steps - 1;
        break;
    }
    test_set (t, i, (uint64_t) size_f & ~(uint64_t) 3, first, last);
  }
}

static void
test_property (void)
{
  tt_interval *t = malloc (TEST_BIG_TENSORS * sizeof *t);
  uint64_t rng = 20240601;
  double ratio_sum = 0, worst = 0, time_sum = 0, time_max = 0;
  int worst_set = -1, at_bound = 0;
  char err[512];

  if (!t) {
    CHECK (t != NULL, "out of memory");
    return;
  }
  for (int s = 0; s < TEST_SETS; s++) {
    uint64_t bound, pool;
    double t0, dt, ratio;

    test_random_set (&rng, t, TEST_TENSORS);
    bound = tt_plan_lower_bound (t, TEST_TENSORS, 64);
    t0 = test_now ();
    pool = tt_plan_assign_offsets (t, TEST_TENSORS, 64);
    dt = test_now () - t0;
    time_sum += dt;
    if (dt > time_max)
      time_max = dt;
    CHECK (pool != UINT64_MAX && bound != UINT64_MAX && bound > 0,
        "set %d: pool %" PRIu64 ", bound %" PRIu64, s, pool, bound);
    if (pool == UINT64_MAX || bound == UINT64_MAX || bound == 0)
      continue;
    CHECK (tt_plan_validate (t, TEST_TENSORS, 64, pool, NULL, err,
            sizeof err) == 0, "set %d: %s", s, err);
    CHECK (pool >= bound, "set %d: pool %" PRIu64 " < bound %" PRIu64, s,
        pool, bound);
    CHECK (pool <= tt_plan_naive_size (t, TEST_TENSORS, 64),
        "set %d: pool above the naive size", s);
    {
      bool zero_ok = true;

      for (size_t i = 0; i < TEST_TENSORS; i++)
        zero_ok = zero_ok && (t[i].size || t[i].offset == 0);
      CHECK (zero_ok, "set %d: a zero-size tensor is not at offset 0", s);
    }
    ratio = (double) pool / (double) bound;
    ratio_sum += ratio;
    at_bound += pool == bound;
    if (ratio > worst) {
      worst = ratio;
      worst_set = s;
    }
  }
  printf ("property: %d sets x %d tensors: pool/bound average %.5f, worst "
      "%.5f (set %d), %d at the bound; planner %.2f ms average, %.2f ms "
      "max\n", TEST_SETS, TEST_TENSORS, ratio_sum / TEST_SETS, worst,
      worst_set, at_bound, 1e3 * time_sum / TEST_SETS, 1e3 * time_max);
  CHECK (ratio_sum / TEST_SETS <= TEST_MAX_AVG_RATIO,
      "average ratio %.5f", ratio_sum / TEST_SETS);
  /* times are printed, not asserted: speed is the benchmarks' business */

  /* Scale: one 10,000-tensor set. */
  {
    uint64_t bound, pool;
    double t0, dt;

    test_random_set (&rng, t, TEST_BIG_TENSORS);
    bound = tt_plan_lower_bound (t, TEST_BIG_TENSORS, 64);
    t0 = test_now ();
    pool = tt_plan_assign_offsets (t, TEST_BIG_TENSORS, 64);
    dt = test_now () - t0;
    CHECK (pool != UINT64_MAX, "10k: planning failed");
    CHECK (tt_plan_validate (t, TEST_BIG_TENSORS, 64, pool, NULL, err,
            sizeof err) == 0, "10k: %s", err);
    printf ("scale: %d tensors: pool/bound %.5f, planner %.1f ms\n",
        TEST_BIG_TENSORS, (double) pool / (double) bound, 1e3 * dt);
  }

  /* Determinism: the same input gives the same offsets. */
  {
    tt_interval *u = malloc (TEST_TENSORS * sizeof *u);
    bool same = true;

    CHECK (u != NULL, "out of memory");
    if (u) {
      test_random_set (&rng, t, TEST_TENSORS);
      memcpy (u, t, TEST_TENSORS * sizeof *u);
      CHECK (tt_plan_assign_offsets (t, TEST_TENSORS, 64)
          == tt_plan_assign_offsets (u, TEST_TENSORS, 64), "determinism");
      for (size_t i = 0; i < TEST_TENSORS; i++)
        same = same && t[i].offset == u[i].offset;
      CHECK (same, "determinism: offsets differ");
      free (u);
    }
  }
  free (t);
}

/* Expects tt_plan_validate to reject with a message containing every
 * non-NULL needle; returns the message for distinctness checks. */
static void
test_reject (const char *what, const tt_interval * t, size_t n,
    uint64_t align, uint64_t pool, const char *const *names, char *err,
    size_t err_len, const char *n1, const char *n2)
{
  int rc = tt_plan_validate (t, n, align, pool, names, err, err_len);

  CHECK (rc == -1, "%s: accepted", what);
  CHECK (n1 == NULL || strstr (err, n1), "%s: \"%s\" lacks \"%s\"", what,
      err, n1);
  CHECK (n2 == NULL || strstr (err, n2), "%s: \"%s\" lacks \"%s\"", what,
      err, n2);
}

/* Reference verdict: every pair, directly from the definitions. */
static bool
test_brute_valid (const tt_interval * t, size_t n, uint64_t align,
    uint64_t pool)
{
  for (size_t i = 0; i < n; i++) {
    if (t[i].first < 0 || t[i].first > t[i].last || t[i].offset % align
        || t[i].size > UINT64_MAX - t[i].offset
        || t[i].offset + t[i].size > pool)
      return false;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (t[i].first <= t[j].last && t[j].first <= t[i].last
          && t[i].size && t[j].size
          && t[i].offset < t[j].offset + t[j].size
          && t[j].offset < t[i].offset + t[i].size)
        return false;
  return true;
}

/* Places t[0..n) by interval partitioning, a valid plan built without
 * the planner: slots of TEST_SLOT bytes (every random size fits in one),
 * each tensor, in order of first step, takes a slot freed by a tensor
 * that ended earlier, or a new one. Returns the pool size, 0 when out of
 * memory. */
#define TEST_SLOT (UINT64_C (4) << 20)

typedef struct
{
  int32_t key;
  size_t idx;
} test_rec;

static int
test_rec_cmp (const void *pa, const void *pb)
{
  const test_rec *a = pa, *b = pb;

  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static uint64_t
test_partition (tt_interval * t, size_t n)
{
  test_rec *by_first = malloc (n * sizeof *by_first);
  test_rec *by_last = malloc (n * sizeof *by_last);
  uint64_t *free_slots = malloc (n * sizeof *free_slots);
  size_t n_free = 0, n_slots = 0, gone = 0;

  if (!by_first || !by_last || !free_slots) {
    free (by_first);
    free (by_last);
    free (free_slots);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    by_first[i] = (test_rec) {
    t[i].first, i};
    by_last[i] = (test_rec) {
    t[i].last, i};
  }
  qsort (by_first, n, sizeof *by_first, test_rec_cmp);
  qsort (by_last, n, sizeof *by_last, test_rec_cmp);
  for (size_t k = 0; k < n; k++) {
    size_t i = by_first[k].idx;

    while (gone < n && by_last[gone].key < t[i].first)
      free_slots[n_free++] = t[by_last[gone++].idx].offset / TEST_SLOT;
    t[i].offset = (n_free ? free_slots[--n_free] : n_slots++) * TEST_SLOT;
  }
  free (by_first);
  free (by_last);
  free (free_slots);
  return n_slots * TEST_SLOT;
}

static void
test_validator (void)
{
  const char *names[] = { "conv1:out", "fc2:grad", "relu:tmp" };
  char msg[6][512];
  tt_interval t[3];
  uint64_t rng = 99;

  test_set (t, 0, 100, 0, 3);
  test_set (t, 1, 64, 2, 5);
  test_set (t, 2, 64, 4, 6);
  t[0].offset = 0;
  t[1].offset = 128;
  t[2].offset = 0;
  CHECK (tt_plan_validate (t, 3, 64, 192, names, msg[0], 512) == 0,
      "valid plan: %s", msg[0]);
  /* Zero-size tensors overlap nothing, even at the same offset. */
  t[2].size = 0;
  t[2].offset = 128;
  CHECK (tt_plan_validate (t, 3, 64, 192, names, msg[0], 512) == 0,
      "zero-size: %s", msg[0]);
  t[2].size = 64;
  t[2].offset = 0;

  /* Each kind of breakage: its own message, naming the tensor(s). */
  t[1].offset = 64;
  test_reject ("overlap", t, 3, 64, 192, names, msg[0], 512,
      "tensors conv1:out and fc2:grad overlap", "bytes [0, 100) and "
      "[64, 128), lifetimes [0, 3] and [2, 5]");
  t[1].offset = 128;
  test_reject ("out of bounds", t, 3, 64, 191, names, msg[1], 512,
      "tensor fc2:grad", "bytes [128, 192) exceed the pool of 191 bytes");
  t[1].offset = 160;
  test_reject ("misaligned", t, 3, 64, 1024, NULL, msg[2], 512, "tensor #1",
      "offset 160 is not a multiple of the alignment 64");
  t[1].offset = 128;
  t[2].first = 7;
  test_reject ("first > last", t, 3, 64, 192, names, msg[3], 512,
      "tensor relu:tmp", "lifetime [7, 6] ends before it starts");
  t[2].first = 4;
  t[2].offset = UINT64_MAX - 63;
  test_reject ("overflow", t, 3, 64, UINT64_MAX, names, msg[4], 512,
      "tensor relu:tmp", "offset 18446744073709551552 + size 64 overflows");
  t[2].offset = 0;
  t[0].first = -2;
  test_reject ("first < 0", t, 3, 64, 192, NULL, msg[5], 512, "tensor #0",
      "lifetime [-2, 3] starts before step 0");
  t[0].first = 0;
  for (int a = 0; a < 6; a++)
    for (int b = a + 1; b < 6; b++)
      CHECK (strcmp (msg[a], msg[b]) != 0, "messages %d and %d alike", a, b);
  {
    /* A missing name falls back to the index. */
    const char *partial[] = { "conv1:out", NULL, "relu:tmp" };

    t[1].offset = 64;
    test_reject ("NULL name", t, 3, 64, 192, partial, msg[0], 512,
        "tensors conv1:out and #1 overlap", NULL);
    t[1].offset = 128;
  }
  CHECK (tt_plan_validate (t, 3, 48, 192, names, msg[0], 512) == -1
      && strstr (msg[0], "power of two"), "align 48: %s", msg[0]);

  /* Truncation is safe and the error buffer may be absent. */
  t[1].offset = 64;
  CHECK (tt_plan_validate (t, 3, 64, 192, names, msg[0], 8) == -1
      && strlen (msg[0]) == 7, "truncated message");
  CHECK (tt_plan_validate (t, 3, 64, 192, names, NULL, 0) == -1,
      "no error buffer");
  t[1].offset = 128;

  /* Random small plans, many of them invalid: same verdict as the
   * brute-force pairwise check. */
  {
    tt_interval r[40];
    int agree = 0, invalid = 0, trials = 3000;

    for (int k = 0; k < trials; k++) {
      size_t n = 1 + test_below (&rng, 40);
      bool ref;
      int rc;

      for (size_t i = 0; i < n; i++) {
        int32_t f = (int32_t) test_below (&rng, 12);

        r[i].size = test_below (&rng, 5) * 64 - (test_below (&rng, 4) == 0);
        if (r[i].size == UINT64_MAX)
          r[i].size = 0;
        r[i].first = f;
        r[i].last = f + (int32_t) test_below (&rng, 6)
            - (test_below (&rng, 200) == 0 ? 7 : 0);
        r[i].offset = test_below (&rng, 24) * 64
            + (test_below (&rng, 300) == 0 ? 32 : 0);
      }
      ref = test_brute_valid (r, n, 64, 24 * 64);
      rc = tt_plan_validate (r, n, 64, 24 * 64, NULL, msg[0], 512);
      agree += (rc == 0) == ref;
      invalid += !ref;
    }
    CHECK (agree == trials, "validator vs brute force: %d of %d agree",
        agree, trials);
    CHECK (invalid > trials / 10 && invalid < trials - trials / 10,
        "random plans: %d of %d invalid (want a mix)", invalid, trials);
  }

  /* 20,000 tensors with heavy reuse validate well within a second, and
   * one overlap planted among them is found and named. */
  {
    size_t n = 20000;
    tt_interval *big = malloc (n * sizeof *big);
    uint64_t pool;
    double t0, dt;
    int rc;

    CHECK (big != NULL, "out of memory");
    if (big) {
      size_t a = 0, b = 0;

      test_random_set (&rng, big, n);
      pool = test_partition (big, n);
      CHECK (pool != 0, "20k: partitioning failed");
      t0 = test_now ();
      rc = tt_plan_validate (big, n, 64, pool, NULL, msg[0], 512);
      dt = test_now () - t0;
      CHECK (rc == 0, "20k: %s", msg[0]);
      printf ("validator: %zu tensors sharing %" PRIu64 " slots in %.1f "
          "ms\n", n, pool / TEST_SLOT, 1e3 * dt);

      /* Two conflicting non-empty tensors in different slots: move the
       * later one onto the earlier one. */
      for (size_t i = n / 2; i < n && !b; i++)
        for (size_t j = i + 1; j < n && j < i + 200 && !b; j++)
          if (big[i].size && big[j].size && big[i].offset != big[j].offset
              && big[i].first <= big[j].last && big[j].first <= big[i].last) {
            a = i;
            b = j;
          }
      CHECK (b != 0, "20k: no conflicting pair found");
      if (b) {
        char needle[32];

        big[b].offset = big[a].offset;
        snprintf (needle, sizeof needle, "#%zu", b);
        test_reject ("20k overlap", big, n, 64, pool, NULL, msg[0], 512,
            needle, "overlap");
      }
      free (big);
    }
  }
}

int
main (void)
{
  TT_TEST_RUN (test_small_sets);
  TT_TEST_RUN (test_validator);
  TT_TEST_RUN (test_property);
  return tt_test_summary ();
}
