/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_gemm: single-precision matrix product, row-major.
 *
 * With TT_HAVE_CBLAS this is a thin wrapper over cblas_sgemm. Otherwise it
 * is a GotoBLAS-style blocked loop: op(A) is packed into MC x KC blocks that
 * stay in L2, op(B) into KC x NR micro-panels that stay in L1, and a
 * register-blocked MR x NR micro-kernel does the arithmetic. Packing turns
 * all four transpose combinations into the same contiguous access pattern
 * and zero-pads ragged edges, so the micro-kernel never branches.
 */
#include "kernels.h"

#ifdef TT_HAVE_CBLAS

#include <cblas.h>

void
tt_gemm (bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    const float *a, int lda, const float *b, int ldb, float beta, float *c,
    int ldc)
{
  if (m <= 0 || n <= 0)
    return;
  cblas_sgemm (CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
      trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
      beta, c, ldc);
}

#else /* !TT_HAVE_CBLAS */

#include <string.h>

/*
 * Register tile. The accumulators (MR rows of NR floats) must fit in the
 * vector register file with room for one B row and a broadcast of A,
 * otherwise the compiler spills them and the kernel runs at cache speed.
 * The ISA macros only pick sizes; the code is the same everywhere. 512-bit
 * vectors measured slower than 256-bit ones (Zen 4 splits them), so
 * AVX-512 only buys a taller tile from its 32 registers.
 */
#if defined(__AVX512F__)
#define GEMM_VEC_FLOATS 8
#define GEMM_MR 8
#elif defined(__AVX__)
#define GEMM_VEC_FLOATS 8
#define GEMM_MR 6
#else
#define GEMM_VEC_FLOATS 4
#define GEMM_MR 6
#endif
#define GEMM_NR (2 * GEMM_VEC_FLOATS)

/* Blocking. A KC x NR micro-panel of B (4-8 KiB) stays in L1 while the
 * micro-kernel sweeps the MC rows of the packed A block (MC x KC, 36-48
 * KiB, L2 resident); B is packed NC columns at a time so each source row
 * is read as one contiguous run. The buffers live on the stack because
 * the interface forbids heap use: ~85 KiB in all, inside any thread stack
 * (musl's default is 128 KiB). MC >= 72 covers the usual conv GEMMs
 * (m = filters) in one block, so their large B is packed once per K
 * block. */
#define GEMM_KC 128
#define GEMM_MC (GEMM_MR * 12)
#define GEMM_NC 64

#if defined(__GNUC__)
/* GNU vector extensions (GCC and Clang) pin the accumulators in registers
 * at -O2; plain loops leave them in memory because -O2 does not fully
 * unroll the row loop. */
typedef float gemm_vec __attribute__ ((vector_size (4 * GEMM_VEC_FLOATS)));
#define GEMM_ALIGN _Alignas (4 * GEMM_VEC_FLOATS)
#else
#define GEMM_ALIGN _Alignas (16)
#endif

static inline int
gemm_min (int x, int y)
{
  return x < y ? x : y;
}

/* Packs rows [i0, i0+mc) and columns [p0, p0+kc) of op(A) into MR-row
 * micro-panels: panel r holds, for each p, the MR values op(A)[r*MR+.][p].
 * Rows past mc are zero so partial panels need no special kernel. */
static void
gemm_pack_a (bool trans_a, const float *a, int lda, int i0, int mc, int p0,
    int kc, float *restrict ap)
{
  for (int ir = 0; ir < mc; ir += GEMM_MR) {
    int mr = gemm_min (GEMM_MR, mc - ir);
    float *dst = ap + (size_t) ir * kc;

    if (trans_a) {
      /* op(A)[i][p] = a[p][i]: the MR values of one p are contiguous. */
      const float *src = a + (size_t) p0 * lda + i0 + ir;
      for (int p = 0; p < kc; p++) {
        const float *s = src + (size_t) p * lda;
        int r = 0;
        for (; r < mr; r++)
          dst[p * GEMM_MR + r] = s[r];
        for (; r < GEMM_MR; r++)
          dst[p * GEMM_MR + r] = 0.0f;
      }
    } else {
      /* Walk each source row sequentially; the strided writes land in
       * the small destination panel, which is in L1. */
      int r = 0;
      for (; r < mr; r++) {
        const float *s = a + (size_t) (i0 + ir + r) * lda + p0;
        for (int p = 0; p < kc; p++)
          dst[p * GEMM_MR + r] = s[p];
      }
      for (; r < GEMM_MR; r++)
        for (int p = 0; p < kc; p++)
          dst[p * GEMM_MR + r] = 0.0f;
    }
  }
}

/* Packs columns [j0, j0+nc) and rows [p0, p0+kc) of op(B) into NR-column
 * micro-panels: panel q holds, for each p, the NR values op(B)[p][q*NR+.],
 * zero past nc. */
static void
gemm_pack_b (bool trans_b, const float *b, int ldb, int j0, int nc, int p0,
    int kc, float *restrict bp)
{
  const int panels = (nc + GEMM_NR - 1) / GEMM_NR;

  if (trans_b) {
    /* op(B)[p][j] = b[j][p]: read each source row sequentially. */
    for (int j = 0; j < panels * GEMM_NR; j++) {
      float *d = bp + (size_t) (j / GEMM_NR) * kc * GEMM_NR + j % GEMM_NR;
      if (j < nc) {
        const float *s = b + (size_t) (j0 + j) * ldb + p0;
        for (int p = 0; p < kc; p++)
          d[p * GEMM_NR] = s[p];
      } else {
        for (int p = 0; p < kc; p++)
          d[p * GEMM_NR] = 0.0f;
      }
    }
  } else {
    /* Each source row is read as one contiguous run of nc floats: a
     * micro-panel at a time would touch a new cache line per row and
     * stall on every one (B is usually a freshly written im2col matrix
     * that no longer fits in cache). */
    for (int p = 0; p < kc; p++) {
      const float *s = b + (size_t) (p0 + p) * ldb + j0;
      for (int q = 0; q < panels; q++) {
        float *d = bp + ((size_t) q * kc + p) * GEMM_NR;
        const int w = gemm_min (GEMM_NR, nc - q * GEMM_NR);
        if (w == GEMM_NR) {
          memcpy (d, s + q * GEMM_NR, sizeof (float) * GEMM_NR);
        } else {
          int j = 0;
          for (; j < w; j++)
            d[j] = s[q * GEMM_NR + j];
          for (; j < GEMM_NR; j++)
            d[j] = 0.0f;
        }
      }
    }
  }
}

/* acc = sum over p of ap[p][:] (outer) bp[p][:]; MR x NR, row-major. */
static void
gemm_micro (int kc, const float *restrict ap, const float *restrict bp,
    float *restrict acc)
{
#if defined(__GNUC__)
  gemm_vec c0[GEMM_MR], c1[GEMM_MR];

  for (int r = 0; r < GEMM_MR; r++) {
    c0[r] = (gemm_vec) { 0 };
    c1[r] = (gemm_vec) { 0 };
  }
  for (int p = 0; p < kc; p++) {
    gemm_vec b0, b1;
    /* memcpy keeps the load free of alignment and aliasing assumptions;
     * it compiles to a single vector load. */
    memcpy (&b0, bp + p * GEMM_NR, sizeof b0);
    memcpy (&b1, bp + p * GEMM_NR + GEMM_VEC_FLOATS, sizeof b1);
    const float *ar = ap + p * GEMM_MR;
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; r++) {
      c0[r] += ar[r] * b0;
      c1[r] += ar[r] * b1;
    }
  }
  for (int r = 0; r < GEMM_MR; r++) {
    memcpy (acc + r * GEMM_NR, &c0[r], sizeof c0[r]);
    memcpy (acc + r * GEMM_NR + GEMM_VEC_FLOATS, &c1[r], sizeof c1[r]);
  }
#else
  for (int i = 0; i < GEMM_MR * GEMM_NR; i++)
    acc[i] = 0.0f;
  for (int p = 0; p < kc; p++)
    for (int r = 0; r < GEMM_MR; r++) {
      float av = ap[p * GEMM_MR + r];
      for (int j = 0; j < GEMM_NR; j++)
        acc[r * GEMM_NR + j] += av * bp[p * GEMM_NR + j];
    }
#endif
}

/* C tile (mr x nr) = alpha * acc + beta' * C, where beta' is the caller's
 * beta on the first K block and 1 afterwards. beta == 0 must not read C,
 * so NaN or uninitialised memory there is overwritten, as BLAS does. */
static void
gemm_store (int mr, int nr, const float *restrict acc, float alpha,
    float beta, bool first, float *restrict c, int ldc)
{
  if (nr == GEMM_NR) {
    /* Full-width rows: constant trip counts, so -O2 vectorizes these
     * (its cost model refuses loops that would need a scalar tail). This
     * matters when K is small, e.g. a first conv layer with K = 9. */
    for (int r = 0; r < mr; r++) {
      const float *s = acc + r * GEMM_NR;
      float *d = c + (size_t) r * ldc;
      if (!first || beta == 1.0f) {
        for (int j = 0; j < GEMM_NR; j++)
          d[j] += alpha * s[j];
      } else if (beta == 0.0f) {
        for (int j = 0; j < GEMM_NR; j++)
          d[j] = alpha * s[j];
      } else {
        for (int j = 0; j < GEMM_NR; j++)
          d[j] = alpha * s[j] + beta * d[j];
      }
    }
    return;
  }
  for (int r = 0; r < mr; r++) {
    const float *s = acc + r * GEMM_NR;
    float *d = c + (size_t) r * ldc;
    if (!first || beta == 1.0f) {
      for (int j = 0; j < nr; j++)
        d[j] += alpha * s[j];
    } else if (beta == 0.0f) {
      for (int j = 0; j < nr; j++)
        d[j] = alpha * s[j];
    } else {
      for (int j = 0; j < nr; j++)
        d[j] = alpha * s[j] + beta * d[j];
    }
  }
}

/* C = beta * C, used when the product term vanishes (k == 0, alpha == 0). */
static void
gemm_scale (int m, int n, float beta, float *c, int ldc)
{
  if (beta == 1.0f)
    return;
  for (int i = 0; i < m; i++) {
    float *d = c + (size_t) i * ldc;
    if (beta == 0.0f)
      memset (d, 0, sizeof (float) * n);
    else
      for (int j = 0; j < n; j++)
        d[j] *= beta;
  }
}

void
tt_gemm (bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    const float *a, int lda, const float *b, int ldb, float beta, float *c,
    int ldc)
{
  GEMM_ALIGN float ap[GEMM_MC * GEMM_KC];
  GEMM_ALIGN float bp[GEMM_KC * GEMM_NC];
  GEMM_ALIGN float acc[GEMM_MR * GEMM_NR];

  if (m <= 0 || n <= 0)
    return;
  if (k <= 0 || alpha == 0.0f) {
    gemm_scale (m, n, beta, c, ldc);
    return;
  }

  for (int p0 = 0; p0 < k; p0 += GEMM_KC) {
    const int kc = gemm_min (GEMM_KC, k - p0);
    const bool first = p0 == 0;

    for (int i0 = 0; i0 < m; i0 += GEMM_MC) {
      const int mc = gemm_min (GEMM_MC, m - i0);

      gemm_pack_a (trans_a, a, lda, i0, mc, p0, kc, ap);
      /* B blocks are repacked once per A block: for m <= MC (most conv
       * GEMMs) that is once, otherwise a cost of 1/MC of the arithmetic,
       * which keeps the stack footprint small. */
      for (int j0 = 0; j0 < n; j0 += GEMM_NC) {
        const int nc = gemm_min (GEMM_NC, n - j0);

        gemm_pack_b (trans_b, b, ldb, j0, nc, p0, kc, bp);
        for (int jr = 0; jr < nc; jr += GEMM_NR) {
          const int nr = gemm_min (GEMM_NR, nc - jr);
          const float *bq = bp + (size_t) (jr / GEMM_NR) * kc * GEMM_NR;

          for (int ir = 0; ir < mc; ir += GEMM_MR) {
            const int mr = gemm_min (GEMM_MR, mc - ir);

            gemm_micro (kc, ap + (size_t) ir * kc, bq, acc);
            gemm_store (mr, nr, acc, alpha, beta, first,
                c + (size_t) (i0 + ir) * ldc + j0 + jr, ldc);
          }
        }
      }
    }
  }
}

#endif /* TT_HAVE_CBLAS */
