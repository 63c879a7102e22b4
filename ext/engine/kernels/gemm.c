/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_gemm: single-precision matrix product, row-major.
 *
 * With TT_HAVE_CBLAS this is a thin wrapper over cblas_sgemm. Otherwise it
 * is a blocked loop in the GotoBLAS mould: op(B) is packed, KC x NC at a
 * time, into NR-column micro-panels (contiguous, zero-padded, the same
 * layout for either transpose), and a register-blocked MR x NR
 * micro-kernel multiplies an MR-row tile of op(A) into each. op(A) is read
 * in place through a (row, column) stride pair, which covers both
 * transposes; only its last ragged tile is copied, into a zero-padded
 * panel, so the micro-kernel never sees a short tile.
 */
#include "kernels.h"

#ifdef TT_HAVE_CBLAS

#include <cblas.h>

void
tt_gemm (bool trans_a, bool trans_b, int m, int n, int k, float alpha,
    const float *a, int lda, const float *b, int ldb, float beta, float *c,
    int ldc)
{
  if (m <= 0 || n <= 0 || tt_gemm_avx512 (trans_a, trans_b, m, n, k, alpha,
          a, lda, b, ldb, beta, c, ldc))
    return;
  cblas_sgemm (CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
      trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
      beta, c, ldc);
}

#else /* !TT_HAVE_CBLAS */

#include <stddef.h>
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

/* Blocking: B is packed KC x NC at a time (32 KiB, L1/L2 resident), each
 * source row read as one contiguous run; A streams past it in MR-row
 * tiles (MR x KC, 3-4 KiB, L1 resident across the block's panels). The
 * buffers live on the stack, the interface forbidding heap use: ~40 KiB
 * in all, comfortably inside any thread stack. */
#define GEMM_KC 128
#define GEMM_NC 64

#if defined(__GNUC__)
/* GNU vector extensions (GCC and Clang) pin the accumulators in registers
 * at -O2; plain loops leave them in memory because -O2 does not fully
 * unroll the row loop. */
typedef float gemm_vec __attribute__((vector_size (4 * GEMM_VEC_FLOATS)));
#define GEMM_ALIGN _Alignas (4 * GEMM_VEC_FLOATS)
#else
#define GEMM_ALIGN _Alignas (16)
#endif

static inline int
gemm_min (int x, int y)
{
  return x < y ? x : y;
}

/* Packs the last, ragged rows [i0, m) x columns [p0, p0+kc) of op(A),
 * with op(A)[i][p] = a[i*rs + p*ps], into one MR-row panel laid out
 * ap[p*MR + r], zero past m, so the micro-kernel never sees a short tile.
 * Full tiles need no packing: the micro-kernel reads A in place. */
static void
gemm_pack_a_tail (const float *a, ptrdiff_t rs, ptrdiff_t ps, int i0, int m,
    int p0, int kc, float *restrict ap)
{
  for (int r = 0; r < GEMM_MR; r++) {
    if (i0 + r < m) {
      const float *s = a + (i0 + r) * rs + p0 * ps;
      for (int p = 0; p < kc; p++)
        ap[p * GEMM_MR + r] = s[p * ps];
    } else {
      for (int p = 0; p < kc; p++)
        ap[p * GEMM_MR + r] = 0.0f;
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

/* acc (MR x NR, row-major) = sum over p of A[:, p] (outer) bp[p][:], with
 * A[r][p] = a[r*rs + p*ps]: in place for full tiles (rs, ps = lda, 1 or
 * 1, lda), or the packed tail (1, MR). A is only ever broadcast one
 * scalar at a time, so reading it in place costs nothing over packing,
 * and it saves a copy of A for every call, which for the chunked conv
 * GEMMs measured ~15% of the runtime. */
static void
gemm_micro (int kc, const float *a, ptrdiff_t rs, ptrdiff_t ps,
    const float *restrict bp, float *restrict acc)
{
#if defined(__GNUC__)
  gemm_vec c0[GEMM_MR], c1[GEMM_MR];

  for (int r = 0; r < GEMM_MR; r++) {
    c0[r] = (gemm_vec) {
    0};
    c1[r] = (gemm_vec) {
    0};
  }
  for (int p = 0; p < kc; p++) {
    const float *ap = a + p * ps;
    gemm_vec b0, b1;
    /* memcpy keeps the load free of alignment and aliasing assumptions;
     * it compiles to a single vector load. */
    memcpy (&b0, bp + p * GEMM_NR, sizeof b0);
    memcpy (&b1, bp + p * GEMM_NR + GEMM_VEC_FLOATS, sizeof b1);
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; r++) {
      c0[r] += ap[r * rs] * b0;
      c1[r] += ap[r * rs] * b1;
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
      const float av = a[r * rs + p * ps];
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
  GEMM_ALIGN float bp[GEMM_KC * GEMM_NC];
  GEMM_ALIGN float ap[GEMM_MR * GEMM_KC];
  GEMM_ALIGN float acc[GEMM_MR * GEMM_NR];
  /* op(A)[i][p] = a[i * ars + p * aps] */
  const ptrdiff_t ars = trans_a ? 1 : lda, aps = trans_a ? lda : 1;

  if (m <= 0 || n <= 0)
    return;
  if (k <= 0 || alpha == 0.0f) {
    gemm_scale (m, n, beta, c, ldc);
    return;
  }

  for (int p0 = 0; p0 < k; p0 += GEMM_KC) {
    const int kc = gemm_min (GEMM_KC, k - p0);
    const bool first = p0 == 0;
    bool tail_packed = false;

    /* Each B block is packed exactly once; all of A then streams past
     * it, one MR-row tile at a time, each tile reused across the block's
     * NR-column panels while it sits in L1. */
    for (int j0 = 0; j0 < n; j0 += GEMM_NC) {
      const int nc = gemm_min (GEMM_NC, n - j0);

      gemm_pack_b (trans_b, b, ldb, j0, nc, p0, kc, bp);
      for (int i0 = 0; i0 < m; i0 += GEMM_MR) {
        const int mr = gemm_min (GEMM_MR, m - i0);
        const float *at = a + i0 * ars + p0 * aps;
        ptrdiff_t rs = ars, ps = aps;

        if (mr < GEMM_MR) {
          if (!tail_packed)
            gemm_pack_a_tail (a, ars, aps, i0, m, p0, kc, ap);
          tail_packed = true;
          at = ap;
          rs = 1;
          ps = GEMM_MR;
        }
        for (int jr = 0; jr < nc; jr += GEMM_NR) {
          const int nr = gemm_min (GEMM_NR, nc - jr);

          gemm_micro (kc, at, rs, ps,
              bp + (size_t) (jr / GEMM_NR) * kc * GEMM_NR, acc);
          gemm_store (mr, nr, acc, alpha, beta, first,
              c + (size_t) i0 * ldc + j0 + jr, ldc);
        }
      }
    }
  }
}

#endif /* TT_HAVE_CBLAS */

/* (both builds') */
void
tt_gemm_relu_masked (bool trans_a, bool trans_b, int m, int n, int k,
    float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *c, int ldc, const float *keep, int ldk)
{
  if (m <= 0 || n <= 0)
    return;
  if (!keep) {
    tt_gemm (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#ifdef TT_HAVE_CBLAS
  if (tt_gemm_avx512_relu_masked (trans_a, trans_b, m, n, k, alpha, a, lda,
          b, ldb, beta, c, ldc, keep, ldk))
    return;
#endif
  tt_gemm (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  tt_relu_mask ((size_t) m, (size_t) n, keep, (size_t) ldk, c, (size_t) ldc);
}
