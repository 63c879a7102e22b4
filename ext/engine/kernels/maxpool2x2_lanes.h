/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vector body of maxpool2x2.c, PV outputs at a time, included once per
 * vector width: PV (4 or 8) and PV_NAME(f) (the function's name at that
 * width) are defined by the includer. One source for both widths because
 * GNU vectors wider than the machine's registers are lowered lane by lane:
 * 8-float shuffles became scalar code on NEON and SSE2, so each machine
 * gets the width of its registers.
 */

typedef float PV_NAME (pvec) __attribute__ ((vector_size (4 * PV)));
typedef int32_t PV_NAME (pivec) __attribute__ ((vector_size (4 * PV)));
typedef uint8_t PV_NAME (pbvec) __attribute__ ((vector_size (4 * PV)));
#define pvec PV_NAME (pvec)
#define pivec PV_NAME (pivec)
#define pbvec PV_NAME (pbvec)

/* PV_BYTES_LOW: the low byte of each lane first, then any bytes;
 * PV_BYTES_WIDE: byte k of the first operand as lane k's low byte, the
 * others from the second (zero) */
#if PV == 4
#define PV_LANES_EVEN 0, 2, 4, 6
#define PV_LANES_ODD 1, 3, 5, 7
#define PV_LANES_LO 0, 4, 1, 5
#define PV_LANES_HI 2, 6, 3, 7
#define PV_BYTES_LOW 0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define PV_BYTES_WIDE 0, 16, 16, 16, 1, 16, 16, 16, 2, 16, 16, 16, 3, 16, \
    16, 16
#else
#define PV_LANES_EVEN 0, 2, 4, 6, 8, 10, 12, 14
#define PV_LANES_ODD 1, 3, 5, 7, 9, 11, 13, 15
#define PV_LANES_LO 0, 8, 1, 9, 2, 10, 3, 11
#define PV_LANES_HI 4, 12, 5, 13, 6, 14, 7, 15
#define PV_BYTES_LOW 0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0, \
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define PV_BYTES_WIDE 0, 32, 32, 32, 1, 32, 32, 32, 2, 32, 32, 32, 3, 32, \
    32, 32, 4, 32, 32, 32, 5, 32, 32, 32, 6, 32, 32, 32, 7, 32, 32, 32
#endif

#if defined(__clang__)
#define PV_SHUFFLE(a, b, lanes) __builtin_shufflevector (a, b, lanes)
#define PV_SHUFFLE_BYTES(a, b, ...) __builtin_shufflevector (a, b, __VA_ARGS__)
#else
#define PV_SHUFFLE(a, b, lanes) __builtin_shuffle (a, b, (pivec) { lanes })
#define PV_SHUFFLE_BYTES(a, b, ...) \
  __builtin_shuffle (a, b, (pbvec) { __VA_ARGS__ })
#endif

/* PV taps (0 to 3, one a lane) stored as PV bytes, and loaded back into
 * lanes. GCC lowers __builtin_convertvector between these lane by lane,
 * and shuffles of bytes too on SSE2, so x86 takes its packs and unpacks;
 * elsewhere a shuffle (one TBL on NEON). */
TT_ALWAYS_INLINE void
PV_NAME (pool_store_taps) (uint8_t * ar, pivec t)
{
#if defined(__x86_64__) && PV == 4
  const __m128i h = _mm_packs_epi32 ((__m128i) t, (__m128i) t);
  const int32_t b = _mm_cvtsi128_si32 (_mm_packus_epi16 (h, h));
  memcpy (ar, &b, sizeof b);
#elif defined(__x86_64__) && PV == 8
  /* AVX2 packs work within 128-bit halves: taps 0-3 and 4-7 end up
   * at the start of each */
  const __m256i h = _mm256_packs_epi32 ((__m256i) t, (__m256i) t);
  const __m256i b = _mm256_packus_epi16 (h, h);
  _mm_storel_epi64 ((__m128i *) ar,
      _mm_unpacklo_epi32 (_mm256_castsi256_si128 (b),
          _mm256_extracti128_si256 (b, 1)));
#else
  const pbvec b = PV_SHUFFLE_BYTES ((pbvec) t, (pbvec) t, PV_BYTES_LOW);
  memcpy (ar, &b, PV);
#endif
}

TT_ALWAYS_INLINE pivec
PV_NAME (pool_load_taps) (const uint8_t * ar)
{
#if defined(__x86_64__) && PV == 4
  int32_t b;
  memcpy (&b, ar, sizeof b);
  const __m128i z = _mm_setzero_si128 ();
  const __m128i w = _mm_unpacklo_epi8 (_mm_cvtsi32_si128 (b), z);
  return (pivec) _mm_unpacklo_epi16 (w, z);
#elif defined(__x86_64__) && PV == 8
  return (pivec) _mm256_cvtepu8_epi32 (_mm_loadl_epi64 ((const __m128i *)
          ar));
#else
  pbvec b = { 0 };
  memcpy (&b, ar, PV);
  return (pivec) PV_SHUFFLE_BYTES (b, (pbvec) { 0 }, PV_BYTES_WIDE);
#endif
}

/* All ones where v replaces best: v is greater, or v is the window's
 * first NaN (pooling_take in pooling.c: a NaN always wins and is never
 * replaced). */
#define PV_TAKE(v, best) (~((v) <= (best)) & ((best) == (best)))

/* m ? a : b lane by lane, m all ones or all zeros (a vector comparison) */
#define PV_SELECT(m, a, b) ((pvec) (((pivec) (a) & (m)) | ((pivec) (b) & ~(m))))
#define PI_SELECT(m, a, b) (((a) & (m)) | ((b) & ~(m)))

/* Outputs [ox, ox + PV) of one output row; r0 and r1 are the two input
 * rows. The first maximum wins, in reading order (a, b, c, d: taps 0 to
 * 3), and so does the first NaN, exactly as in pooling.c. */
TT_ALWAYS_INLINE void
PV_NAME (pool2x2_block) (const float *r0, const float *r1, int ox, float *yr,
    uint8_t * ar)
{
  pvec p0, p1, q0, q1;
  memcpy (&p0, r0 + 2 * ox, sizeof p0);
  memcpy (&p1, r0 + 2 * ox + PV, sizeof p1);
  memcpy (&q0, r1 + 2 * ox, sizeof q0);
  memcpy (&q1, r1 + 2 * ox + PV, sizeof q1);
  const pvec a = PV_SHUFFLE (p0, p1, PV_LANES_EVEN);
  const pvec b = PV_SHUFFLE (p0, p1, PV_LANES_ODD);
  const pvec c = PV_SHUFFLE (q0, q1, PV_LANES_EVEN);
  const pvec d = PV_SHUFFLE (q0, q1, PV_LANES_ODD);
  const pivec ab = PV_TAKE (b, a), cd = PV_TAKE (d, c);
  const pvec top = PV_SELECT (ab, b, a), bottom = PV_SELECT (cd, d, c);
  const pivec itop = -ab, ibottom = 2 - cd;     /* true is -1 */
  const pivec down = PV_TAKE (bottom, top);
  const pvec v = PV_SELECT (down, bottom, top);
  memcpy (yr + ox, &v, sizeof v);
  PV_NAME (pool_store_taps) (ar + ox, PI_SELECT (down, ibottom, itop));
}

/* One output row of at least PV outputs: whole vectors, then one ending
 * at the row's end (it recomputes a few outputs, with the same result). */
TT_ALWAYS_INLINE void
PV_NAME (pool2x2_row) (const float *xp, int r0, int iw, int ow, float *yr,
    uint8_t * ar)
{
  int ox = 0;
  for (; ox + PV <= ow; ox += PV)
    PV_NAME (pool2x2_block) (xp + r0, xp + r0 + iw, ox, yr, ar);
  if (ox < ow)
    PV_NAME (pool2x2_block) (xp + r0, xp + r0 + iw, ow - PV, yr, ar);
}

/* The four inputs of windows [ox, ox + PV) of one output row: dy at the
 * argmax, 0 elsewhere, interleaved back into the two input rows. */
TT_ALWAYS_INLINE void
PV_NAME (unpool2x2_block) (const float *dr, const uint8_t * ar, int ox,
    float *d0, float *d1)
{
  pvec v;
  memcpy (&v, dr + ox, sizeof v);
  const pivec tap = PV_NAME (pool_load_taps) (ar + ox);
  const pivec vi = (pivec) v;
  const pvec a = (pvec) (vi & (tap == 0)), b = (pvec) (vi & (tap == 1));
  const pvec c = (pvec) (vi & (tap == 2)), d = (pvec) (vi & (tap == 3));
  const pvec top0 = PV_SHUFFLE (a, b, PV_LANES_LO);
  const pvec top1 = PV_SHUFFLE (a, b, PV_LANES_HI);
  const pvec bot0 = PV_SHUFFLE (c, d, PV_LANES_LO);
  const pvec bot1 = PV_SHUFFLE (c, d, PV_LANES_HI);
  memcpy (d0 + 2 * ox, &top0, sizeof top0);
  memcpy (d0 + 2 * ox + PV, &top1, sizeof top1);
  memcpy (d1 + 2 * ox, &bot0, sizeof bot0);
  memcpy (d1 + 2 * ox + PV, &bot1, sizeof bot1);
}

/* One output row of at least PV windows: each window's four inputs are
 * written, the last block slid back (it rewrites the same values). */
TT_ALWAYS_INLINE void
PV_NAME (unpool2x2_row) (const float *dr, const uint8_t * ar, int ow,
    float *d0, float *d1)
{
  int ox = 0;
  for (; ox + PV <= ow; ox += PV)
    PV_NAME (unpool2x2_block) (dr, ar, ox, d0, d1);
  if (ox < ow)
    PV_NAME (unpool2x2_block) (dr, ar, ow - PV, d0, d1);
}

static void
PV_NAME (maxpool2x2_forward) (const tt_window_geom * g, int batch,
    const float *x, float *y, uint8_t * argmax)
{
  const int iw = g->in_w, oh = g->out_h, ow = g->out_w;
  const size_t in_plane = (size_t) g->in_h * iw, out_plane = (size_t) oh * ow;
  const size_t planes = (size_t) batch * g->channels;
  for (size_t p = 0; p < planes; p++) {
    const float *xp = x + p * in_plane;
    float *yp = y + p * out_plane;
    uint8_t *ap = argmax + p * out_plane;
    for (int oy = 0; oy < oh; oy++) {
      const int r0 = 2 * oy * iw, r1 = r0 + iw;
      float *yr = yp + (size_t) oy * ow;
      uint8_t *ar = ap + (size_t) oy * ow;
      if (ow >= PV) {
        PV_NAME (pool2x2_row) (xp, r0, iw, ow, yr, ar);
        continue;
      }
      for (int ox = 0; ox < ow; ox++) {
        const int i0 = r0 + 2 * ox, i2 = r1 + 2 * ox;
        const float a = xp[i0], b = xp[i0 + 1], c = xp[i2], d = xp[i2 + 1];
        const uint32_t ab = pool_take (b, a), cd = pool_take (d, c);
        const float top = pool_select (ab, b, a);
        const float bottom = pool_select (cd, d, c);
        const uint32_t itop = ab & 1u, ibottom = 2u + (cd & 1u);
        const uint32_t down = pool_take (bottom, top);
        yr[ox] = pool_select (down, bottom, top);
        ar[ox] = (uint8_t) ((ibottom & down) | (itop & ~down));
      }
    }
  }
}


/* Rows of at least one vector of windows: each window's four inputs are
 * written (dy at the argmax, 0 elsewhere), so the plane needs no zeroing
 * first; only an odd last row or column that no window covers is cleared.
 * Narrower rows: zero the plane and scatter. */
static void
PV_NAME (maxpool2x2_backward) (const tt_window_geom * g, int batch,
    const float *dy, const uint8_t * argmax, float *dx)
{
  const int ih = g->in_h, iw = g->in_w, oh = g->out_h, ow = g->out_w;
  const size_t in_plane = (size_t) ih * iw, out_plane = (size_t) oh * ow;
  const size_t planes = (size_t) batch * g->channels;
  for (size_t p = 0; p < planes; p++) {
    float *dxp = dx + p * in_plane;
    const float *dyp = dy + p * out_plane;
    const uint8_t *ap = argmax + p * out_plane;
    if (ow < PV) {
      memset (dxp, 0, sizeof (float) * in_plane);
      for (int oy = 0, o = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++, o++)
          dxp[(2 * oy + (ap[o] >> 1)) * iw + 2 * ox + (ap[o] & 1)] += dyp[o];
      continue;
    }
    for (int oy = 0; oy < oh; oy++) {
      const int r0 = 2 * oy * iw;
      float *d0 = dxp + r0, *d1 = d0 + iw;
      PV_NAME (unpool2x2_row) (dyp + (size_t) oy * ow, ap + (size_t) oy * ow,
          ow, d0, d1);
      if (iw > 2 * ow) {
        d0[2 * ow] = 0.0f;
        d1[2 * ow] = 0.0f;
      }
    }
    if (ih > 2 * oh)
      memset (dxp + (size_t) 2 * oh * iw, 0, sizeof (float) * iw);
  }
}

#undef pvec
#undef pivec
#undef pbvec
#undef PV_LANES_EVEN
#undef PV_LANES_ODD
#undef PV_LANES_LO
#undef PV_LANES_HI
#undef PV_SHUFFLE
#undef PV_SHUFFLE_BYTES
#undef PV_BYTES_LOW
#undef PV_BYTES_WIDE
#undef PV_TAKE
#undef PV_SELECT
#undef PI_SELECT
