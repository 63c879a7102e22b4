/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fp32 multiply-add rate one core reaches at best, measured: 16
 * independent chains of vector fused multiply-adds (enough to cover the
 * latency of two FMA pipes), in the widest vectors the CPU runs (AVX-512,
 * AVX2 + FMA, else the compiler's generic vectors), for about half a
 * second after a warm-up. tests/bench/zoo_speed.sh divides a training
 * run's multiply-adds per second by it.
 *
 *   fma-peak        prints e.g. "fma_peak_gmacs=105.3 width=16 isa=avx512"
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define CHAINS 16

static double
now (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* One kernel per width: the same loop over vectors of W floats (x86:
 * contracted into FMA instructions, which ISO C mode otherwise forbids). The
 * multiplier is just below 1 and the addend small so the values stay
 * finite and normal however long it runs. */
#define FMA_KERNEL(NAME, W, ATTR)                                         \
  typedef float NAME##_vec __attribute__ ((vector_size (W * 4)));         \
  ATTR static float                                                       \
  NAME (uint64_t iters)                                                   \
  {                                                                       \
    NAME##_vec acc[CHAINS], mul, add;                                     \
    for (int k = 0; k < W; k++) {                                         \
      mul[k] = 0.999999f;                                                 \
      add[k] = 1e-7f;                                                     \
    }                                                                     \
    for (int c = 0; c < CHAINS; c++)                                      \
      for (int k = 0; k < W; k++)                                         \
        acc[c][k] = (float) (c + k);                                      \
    for (uint64_t i = 0; i < iters; i++) {                                \
      for (int c = 0; c < CHAINS; c++)                                    \
        acc[c] = acc[c] * mul + add;                                      \
    }                                                                     \
    float s = 0;                                                          \
    for (int c = 0; c < CHAINS; c++)                                      \
      for (int k = 0; k < W; k++)                                         \
        s += acc[c][k];                                                   \
    return s;                                                             \
  }

/* gcc in ISO C mode contracts nothing unless told so per function;
 * clang contracts within an expression already (and has no optimize) */
#if defined(__clang__)
#define FMA_CONTRACT
#else
#define FMA_CONTRACT optimize ("fp-contract=fast")
#endif

/* *INDENT-OFF* */
#if defined(__x86_64__) && defined(__GNUC__)
FMA_KERNEL (fma_avx512, 16,
    __attribute__ ((target ("avx512f,fma"), FMA_CONTRACT)))
FMA_KERNEL (fma_avx2, 8, __attribute__ ((target ("avx2,fma"), FMA_CONTRACT)))
#endif
FMA_KERNEL (fma_generic, 4,)
/* *INDENT-ON* */

typedef float (*fma_fn) (uint64_t);

/* multiply-adds per second of fn, its best of five half-second runs */
static double
measure (fma_fn fn, int width)
{
  uint64_t iters = 1u << 16;
  double best = 0, sink = 0;
  for (;;) {                    /* calibrate to ~0.1 s */
    double t0 = now ();
    sink += fn (iters);
    if (now () - t0 > 0.1)
      break;
    iters *= 2;
  }
  for (int r = 0; r < 5; r++) {
    double t0 = now ();
    sink += fn (iters * 5);
    double rate = (double) iters * 5 * CHAINS * width / (now () - t0);
    if (rate > best)
      best = rate;
  }
  if (sink == 12345.0)          /* keeps the work */
    printf ("#\n");
  return best;
}

int
main (void)
{
  fma_fn fn = fma_generic;
  int width = 4;
  const char *isa = "generic";
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("avx512f")) {
    fn = fma_avx512;
    width = 16;
    isa = "avx512";
  } else if (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma")) {
    fn = fma_avx2;
    width = 8;
    isa = "avx2";
  }
#endif
  printf ("fma_peak_gmacs=%.1f width=%d isa=%s\n", measure (fn, width) / 1e9,
      width, isa);
  return 0;
}
