/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mixed precision's kernels (kernels/bf16.c, kernels/gemm_bf16.c), each
 * path forced in turn (tt_bf16_force_portable): the instructions where
 * the CPU has them (AVX-512 BF16, F16C, arm64's NEON) and the portable
 * code.
 *
 * Conversions against references computed in double: every one of the
 * 65536 bf16 and fp16 patterns to fp32 and back; fp32 values at, just
 * under and just over every midpoint between neighbouring 16-bit values
 * (ties go to the even one); overflow, subnormals, NaNs; a spread of fp32
 * patterns. Exact: any bit of difference fails.
 *
 * tt_gemm_bf16 against a double-precision product of the same bf16
 * inputs, within the error bound of a sum of K fp32 products: for every
 * transpose, sizes 1, 15, 17, 33, 100 in each of M, N and K, blocks past
 * the kernels' own (K 600, N 300), padded leading dimensions, alpha and
 * beta (beta 0 over a C full of NaN). tt_gemm_bf16_split on two threads
 * gives the one-thread product's bits when the AVX-512 BF16 path runs.
 */
#include "kernels.h"
#include "tt_test.h"
#include "tt_test_hooks.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t
bits (float x)
{
  uint32_t u;
  memcpy (&u, &x, sizeof u);
  return u;
}

static float
flt (uint32_t u)
{
  float x;
  memcpy (&x, &u, sizeof x);
  return x;
}

/* ---- references ------------------------------------------------------ */

/* x rounded to nearest even with `digits` significant bits and least
 * exponent emin, in double (exact: the values have fp32's range) */
static double
ref_round (double a, int digits, int emin)
{
  int e = ilogb (a);
  if (e < emin)
    e = emin;
  return ldexp (nearbyint (ldexp (a, digits - 1 - e)), e - (digits - 1));
}

static uint16_t
ref_bf16 (float x)
{
  const uint32_t u = bits (x), sign = (u >> 16) & 0x8000u;
  if (isnan (x))
    return (uint16_t) ((u >> 16) | 0x40u);
  const double a = fabs ((double) x);
  if (a >= ldexp (2.0 - ldexp (1.0, -8), 127))
    return (uint16_t) (sign | 0x7f80u);
  if (a == 0)
    return (uint16_t) sign;
  const double r = ref_round (a, 8, -126);
  return (uint16_t) (sign | (bits ((float) r) >> 16));
}

static uint16_t
ref_f16 (float x)
{
  const uint32_t u = bits (x), sign = (u >> 16) & 0x8000u;
  if (isnan (x))
    return (uint16_t) (sign | 0x7e00u | ((u >> 13) & 0x3ffu));
  const double a = fabs ((double) x);
  if (a >= 65520.0)
    return (uint16_t) (sign | 0x7c00u);
  if (a == 0)
    return (uint16_t) sign;
  const double r = ref_round (a, 11, -14);
  if (r < ldexp (1.0, -14))
    return (uint16_t) (sign | (uint32_t) ldexp (r, 24));
  const int e = ilogb (r);
  return (uint16_t) (sign | (uint32_t) (e + 15) << 10 |
      ((uint32_t) ldexp (r, 10 - e) - 1024u));
}

/* the fp32 bits of an fp16 pattern (NaNs quiet) */
static uint32_t
ref_f16_widen (uint16_t h)
{
  const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double s = h & 0x8000 ? -1.0 : 1.0;
  if (e == 0x1f && m)
    return ((uint32_t) (h & 0x8000) << 16) | 0x7fc00000u | (m << 13);
  if (e == 0x1f)
    return bits ((float) (s * INFINITY));
  return bits ((float) (s * (e ? ldexp (1024.0 + m, (int) e - 25) :
              ldexp ((double) m, -24))));
}

/* ---- conversions ----------------------------------------------------- */

#define PATTERNS 65536

static const char *
path_name (bool portable)
{
  return portable ? "portable" : "instructions";
}

/* every 16-bit pattern to fp32, and back */
static void
check_patterns (bool portable)
{
  static uint16_t h[PATTERNS], back[PATTERNS];
  static float f[PATTERNS];
  for (int i = 0; i < PATTERNS; i++)
    h[i] = (uint16_t) i;

  tt_bf16_to_f32 (h, f, PATTERNS);
  int bad = 0, first = -1;
  for (int i = 0; i < PATTERNS; i++)
    if (bits (f[i]) != (uint32_t) i << 16 || bits (tt_bf16_value (h[i]))
        != (uint32_t) i << 16)
      bad++, first = first < 0 ? i : first;
  CHECK (bad == 0, "%s: %d bf16 patterns widen wrong (first 0x%04x)",
      path_name (portable), bad, first);
  tt_f32_to_bf16 (f, back, PATTERNS);
  bad = 0, first = -1;
  for (int i = 0; i < PATTERNS; i++) {
    const bool nan = (i & 0x7f80) == 0x7f80 && (i & 0x7f);
    const uint16_t want = (uint16_t) (nan ? i | 0x40 : i);
    if (back[i] != want || tt_bf16_from_f32 (f[i]) != want)
      bad++, first = first < 0 ? i : first;
  }
  CHECK (bad == 0, "%s: %d bf16 patterns do not come back (first 0x%04x)",
      path_name (portable), bad, first);

  tt_f16_to_f32 (h, f, PATTERNS);
  bad = 0, first = -1;
  for (int i = 0; i < PATTERNS; i++)
    if (bits (f[i]) != ref_f16_widen (h[i])
        || bits (tt_f16_value (h[i])) != ref_f16_widen (h[i]))
      bad++, first = first < 0 ? i : first;
  CHECK (bad == 0, "%s: %d fp16 patterns widen wrong (first 0x%04x: "
      "0x%08x, want 0x%08x)", path_name (portable), bad, first,
      first < 0 ? 0 : bits (f[first]), first < 0 ? 0 : ref_f16_widen (first));
  tt_f32_to_f16 (f, back, PATTERNS);
  bad = 0, first = -1;
  for (int i = 0; i < PATTERNS; i++) {
    const bool nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff);
    const uint16_t want = (uint16_t) (nan ? i | 0x200 : i);
    if (back[i] != want || tt_f16_from_f32 (f[i]) != want)
      bad++, first = first < 0 ? i : first;
  }
  CHECK (bad == 0, "%s: %d fp16 patterns do not come back (first 0x%04x)",
      path_name (portable), bad, first);
}

/* values to narrow: every midpoint between neighbouring finite 16-bit
 * values of either format, its neighbours in fp32, and fp32 patterns
 * spread over the whole range (NaNs, infinities, subnormals included) */
#define SPREAD (1 << 18)
#define N_VALUES (6 * PATTERNS + SPREAD + 3)

static size_t
make_values (float *v)
{
  size_t n = 0;
  for (uint32_t h = 0; h < PATTERNS; h++) {
    /* bf16: the midpoint is the fp32 with only bit 15 below h */
    const uint32_t mid = (h << 16) | 0x8000u;
    if ((h & 0x7f80) != 0x7f80) {
      v[n++] = flt (mid);
      v[n++] = flt (mid - 1);
      v[n++] = flt (mid + 1);
    }
    /* fp16: finite h and its successor of the same sign */
    if ((h & 0x7c00) != 0x7c00 && (h & 0x7fff) != 0x7bff) {
      const double lo = flt (ref_f16_widen ((uint16_t) h)),
          hi = flt (ref_f16_widen ((uint16_t) (h + 1)));
      const float m = (float) ((lo + hi) / 2);  /* exact */
      v[n++] = m;
      v[n++] = nextafterf (m, 0.0f);
      v[n++] = nextafterf (m, m > 0 ? INFINITY : -INFINITY);
    }
  }
  uint64_t s = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < SPREAD; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    v[n++] = flt ((uint32_t) (s >> 11));
  }
  v[n++] = 65520.0f;
  v[n++] = -65520.0f;
  v[n++] = flt (0x7f7fffffu);
  return n;
}

static void
check_narrowing (bool portable)
{
  static float v[N_VALUES];
  static uint16_t out[N_VALUES];
  /* an odd count: the vector loops' tails run too */
  const size_t n = make_values (v) | 1;
  tt_f32_to_bf16 (v, out, n);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (out[i] != ref_bf16 (v[i]) || tt_bf16_from_f32 (v[i]) != out[i])
      first = bad++ ? first : i;
  CHECK (bad == 0, "%s: %zu of %zu fp32 values narrow to a wrong bf16 "
      "(first 0x%08x: 0x%04x, want 0x%04x)", path_name (portable), bad, n,
      bits (v[first]), out[first], ref_bf16 (v[first]));
  tt_f32_to_f16 (v, out, n);
  bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (out[i] != ref_f16 (v[i]) || tt_f16_from_f32 (v[i]) != out[i])
      first = bad++ ? first : i;
  CHECK (bad == 0, "%s: %zu of %zu fp32 values narrow to a wrong fp16 "
      "(first 0x%08x: 0x%04x, want 0x%04x)", path_name (portable), bad, n,
      bits (v[first]), out[first], ref_f16 (v[first]));
}

/* a few values by hand, so that the references are checked too */
static void
check_cases (bool portable)
{
  static const struct
  {
    uint32_t f;
    uint16_t bf16, f16;
  } cases[] = {
    {0x3f800000u, 0x3f80, 0x3c00},      /* 1 */
    {0x3f808000u, 0x3f80, 0x3c04},      /* 1 + 2^-8: tie, to even 1 */
    {0x3f818000u, 0x3f82, 0x3c0c},      /* 1 + 3 2^-8: tie, up to even */
    {0x3f808001u, 0x3f81, 0x3c04},      /* just over the tie */
    {0x477fe000u, 0x4780, 0x7bff},      /* 65504, fp16's largest */
    {0x477ff000u, 0x4780, 0x7c00},      /* 65520: tie, to infinity */
    {0x477fefffu, 0x4780, 0x7bff},      /* just under it */
    {0x33000000u, 0x3300, 0x0000},      /* 2^-25: tie, to zero */
    {0x33000001u, 0x3300, 0x0001},      /* just over: fp16's least */
    {0x33c00000u, 0x33c0, 0x0002},      /* 1.5 2^-24: tie, up to even */
    {0x38800000u, 0x3880, 0x0400},      /* 2^-14, fp16's least normal */
    {0x387fc000u, 0x3880, 0x03ff},      /* fp16's largest subnormal */
    {0x00400000u, 0x0040, 0x0000},      /* an fp32 subnormal */
    {0x00008000u, 0x0000, 0x0000},      /* bf16 tie at zero: even */
    {0x00018000u, 0x0002, 0x0000},      /* tie between 1 and 2: even 2 */
    {0x80018001u, 0x8002, 0x8000},      /* negative, just over */
    {0x7f7fffffu, 0x7f80, 0x7c00},      /* fp32's largest: both overflow */
    {0x7f800000u, 0x7f80, 0x7c00},      /* infinity */
    {0xff800000u, 0xff80, 0xfc00},
    {0x7f800001u, 0x7fc0, 0x7e00},      /* signalling NaN: made quiet */
    {0xffc12345u, 0xffc1, 0xfe09},      /* quiet NaN, payload kept */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const float x = flt (cases[i].f);
    uint16_t b, h;
    tt_f32_to_bf16 (&x, &b, 1);
    tt_f32_to_f16 (&x, &h, 1);
    CHECK (b == cases[i].bf16 && ref_bf16 (x) == b, "%s: 0x%08x to bf16: "
        "0x%04x, want 0x%04x", path_name (portable), cases[i].f, b,
        cases[i].bf16);
    CHECK (h == cases[i].f16 && ref_f16 (x) == h, "%s: 0x%08x to fp16: "
        "0x%04x, want 0x%04x", path_name (portable), cases[i].f, h,
        cases[i].f16);
  }
}

static void
test_conversions (void)
{
  for (int portable = 0; portable < 2; portable++) {
    tt_bf16_force_portable (portable);
    check_patterns (portable);
    check_narrowing (portable);
    check_cases (portable);
  }
  tt_bf16_force_portable (false);
  printf ("bf16 instructions (AVX-512 BF16, or arm64's BFDOT): %s\n",
      tt_bf16_hw_dot ()? "present" : "absent");
}

/* ---- GEMM ------------------------------------------------------------ */

static uint64_t gemm_seed = 12345;

static float
gemm_rand (void)
{
  gemm_seed = gemm_seed * 6364136223846793005u + 1442695040888963407u;
  return (float) ((double) (gemm_seed >> 11) / 9007199254740992.0 * 2 - 1);
}

typedef struct
{
  bool ta, tb;
  int m, n, k, pad;
  float alpha, beta;
} gemm_case;

/* worst error over C relative to its bound; < 1 passes */
static double
gemm_error (const gemm_case * g, const uint16_t * a, int lda,
    const uint16_t * b, int ldb, const float *c0, const float *c, int ldc)
{
  double worst = 0;
  for (int i = 0; i < g->m; i++)
    for (int j = 0; j < g->n; j++) {
      double s = 0, mag = 0;
      for (int p = 0; p < g->k; p++) {
        const double x = tt_bf16_value (g->ta ? a[p * lda + i] :
            a[i * lda + p]);
        const double y = tt_bf16_value (g->tb ? b[j * ldb + p] :
            b[p * ldb + j]);
        s += x * y;
        mag += fabs (x * y);
      }
      double want = g->alpha * s, bound = fabs (g->alpha) * mag;
      if (g->beta != 0) {
        want += g->beta * (double) c0[i * ldc + j];
        bound += fabs (g->beta * (double) c0[i * ldc + j]);
      }
      /* a sum of K products in fp32, alpha and beta's roundings */
      bound = bound * (g->k + 4) * ldexp (1.0, -23) + 1e-30;
      const double got = c[i * ldc + j];
      const double e = isfinite (got) ? fabs (got - want) / bound : INFINITY;
      if (!(e <= worst))
        worst = e;
    }
  return worst;
}

/* runs one case on both paths (the instructions' only where the CPU has
 * them); returns false on failure */
static bool
gemm_run (const gemm_case * g)
{
  const int ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
  const int br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
  const int lda = ac + g->pad, ldb = bc + g->pad, ldc = g->n + g->pad;
  uint16_t *a = malloc (sizeof *a * (size_t) ar * lda);
  uint16_t *b = malloc (sizeof *b * (size_t) br * ldb);
  float *c0 = malloc (sizeof *c0 * (size_t) g->m * ldc);
  float *c[2] = { malloc (sizeof (float) * (size_t) g->m * ldc),
    malloc (sizeof (float) * (size_t) g->m * ldc)
  };
  for (size_t i = 0; i < (size_t) ar * lda; i++)
    a[i] = tt_bf16_from_f32 (gemm_rand ());
  for (size_t i = 0; i < (size_t) br * ldb; i++)
    b[i] = tt_bf16_from_f32 (gemm_rand () * 4);
  for (size_t i = 0; i < (size_t) g->m * ldc; i++)
    c0[i] = g->beta == 0 ? NAN : gemm_rand ();
  bool ok = true;
  for (int portable = 0; portable < 2; portable++) {
    tt_bf16_force_portable (portable);
    if (!portable && !tt_bf16_hw_dot ())
      continue;
    memcpy (c[portable], c0, sizeof (float) * (size_t) g->m * ldc);
    tt_gemm_bf16 (g->ta, g->tb, g->m, g->n, g->k, g->alpha, a, lda, b, ldb,
        g->beta, c[portable], ldc);
    const double e = gemm_error (g, a, lda, b, ldb, c0, c[portable], ldc);
    /* the padding of C is left alone */
    bool pad_kept = true;
    for (int i = 0; i < g->m; i++)
      for (int j = g->n; j < ldc; j++)
        pad_kept &= bits (c[portable][i * ldc + j]) == bits (c0[i * ldc + j]);
    if (!(e < 1) || !pad_kept) {
      printf ("  %s: %c%c %dx%dx%d pad %d alpha %g beta %g: error %.3g of "
          "the bound%s\n", path_name (portable), g->ta ? 'T' : 'N',
          g->tb ? 'T' : 'N', g->m, g->n, g->k, g->pad, g->alpha, g->beta, e,
          pad_kept ? "" : ", padding overwritten");
      ok = false;
    }
  }
  tt_bf16_force_portable (false);
  free (a), free (b), free (c0), free (c[0]), free (c[1]);
  return ok;
}

static void
test_gemm (void)
{
  static const int sizes[] = { 1, 15, 17, 33, 100 };
  int failed = 0, run = 0;
  for (int t = 0; t < 4; t++)
    for (int i = 0; i < 5; i++)
      for (int j = 0; j < 5; j++)
        for (int l = 0; l < 5; l++) {
          const gemm_case g = { t & 1, t >> 1, sizes[i], sizes[j], sizes[l],
            (i + j + l) % 3, (i + l) % 2 ? 1.0f : 0.75f,
            (j + l) % 3 == 0 ? 0.0f : (j + l) % 3 == 1 ? 1.0f : -0.5f
          };
          failed += !gemm_run (&g);
          run++;
        }
  CHECK (failed == 0, "%d of %d small products out of bounds", failed, run);

  /* past the blocks: K over 256 (and odd), N over 128, M over 64 */
  static const int big[][3] = { {50, 300, 600}, {129, 257, 513},
  {70, 33, 1001}
  };
  failed = 0, run = 0;
  for (int t = 0; t < 4; t++)
    for (int s = 0; s < 3; s++) {
      const gemm_case g = { t & 1, t >> 1, big[s][0], big[s][1], big[s][2],
        s, s == 1 ? -1.25f : 1.0f, s == 2 ? 0.5f : 0.0f
      };
      failed += !gemm_run (&g);
      run++;
    }
  CHECK (failed == 0, "%d of %d blocked products out of bounds", failed, run);

  /* k == 0 and alpha == 0: C = beta C, without reading C when beta is 0 */
  float c[6] = { NAN, NAN, NAN, 1, 2, 3 };
  const uint16_t one = tt_bf16_from_f32 (1.0f);
  tt_gemm_bf16 (false, false, 1, 3, 0, 1.0f, &one, 1, &one, 3, 0.0f, c, 3);
  tt_gemm_bf16 (false, false, 1, 3, 1, 0.0f, &one, 1, &one, 3, 2.0f, c + 3, 3);
  CHECK (c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 2 && c[4] == 4
      && c[5] == 6, "k = 0 or alpha = 0: %g %g %g %g %g %g", c[0], c[1],
      c[2], c[3], c[4], c[5]);
}

/* two threads: each part a one-thread product of some rows or columns */
static void
test_gemm_split (void)
{
  tt_threads *pool = NULL;
  CHECK (tt_threads_new (2, &pool) == 0 && pool, "a pool of 2 threads");
  if (!pool)
    return;
  /* by rows (M large), by columns (M small) */
  static const int shapes[][3] = { {256, 96, 300}, {8, 640, 200} };
  for (int s = 0; s < 2; s++)
    for (int t = 0; t < 4; t++) {
      const bool ta = t & 1, tb = t >> 1;
      const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
      uint16_t *a = malloc (sizeof *a * (size_t) m * k);
      uint16_t *b = malloc (sizeof *b * (size_t) k * n);
      float *c1 = malloc (sizeof *c1 * (size_t) m * n);
      float *c2 = malloc (sizeof *c2 * (size_t) m * n);
      for (size_t i = 0; i < (size_t) m * k; i++)
        a[i] = tt_bf16_from_f32 (gemm_rand ());
      for (size_t i = 0; i < (size_t) k * n; i++)
        b[i] = tt_bf16_from_f32 (gemm_rand ());
      const int lda = ta ? m : k, ldb = tb ? k : n;
      tt_gemm_bf16 (ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c1, n);
      tt_gemm_bf16_split (pool, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f,
          c2, n);
      if (tt_bf16_hw_dot ()) {
        CHECK (memcmp (c1, c2, sizeof *c1 * (size_t) m * n) == 0,
            "%c%c %dx%dx%d: two threads give the one thread's bits",
            ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k);
      } else {
        double worst = 0;
        for (size_t i = 0; i < (size_t) m * n; i++) {
          const double d = fabs ((double) c1[i] - c2[i]);
          worst = d > worst || isnan (d) ? d : worst;
        }
        CHECK (worst <= 1e-4, "%c%c %dx%dx%d: two threads %.3g from one",
            ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, worst);
      }
      free (a), free (b), free (c1), free (c2);
    }
  tt_threads_free (pool);
}

int
main (void)
{
  TT_TEST_RUN (test_conversions);
  TT_TEST_RUN (test_gemm);
  TT_TEST_RUN (test_gemm_split);
  return tt_test_summary ();
}
