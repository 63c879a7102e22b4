/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the Winograd convolution (conv2d_winograd.c: the layout, the
 * gathers and scatters, the passes, F(2x2, 3x3)'s transforms) shares with
 * the transforms of F(4x4, 3x3) (conv2d_winograd4.c). Engine-internal.
 */
#ifndef TT_CONV2D_WINOGRAD_H
#define TT_CONV2D_WINOGRAD_H

#include "tt_layer.h"

#include <stdbool.h>
#include <stddef.h>

/* Samples per vector of the transforms. */
#define WB 8

/* The lane loops write (or read) the rows of one matrix at run-time
 * distances: the compiler cannot prove that they do not overlap and would
 * not vectorize them. They never do (the distance is at least WB). */
#if defined(__GNUC__) && !defined(__clang__)
#define WINO_IVDEP _Pragma ("GCC ivdep")
#else
/* (clang's assume_safety warns where it cannot vectorize; clang builds
 * are the fuzzing ones, where speed does not matter) */
#define WINO_IVDEP
#endif

/* for (int l = 0; l < WB; l++) with WINO_IVDEP before it (a macro, as
 * indent cannot place a pragma spelled as a macro before a loop) */
#define WINO_FOR_LANES(l) WINO_IVDEP for (int l = 0; l < WB; l++)

/* A vector of WB samples' values of one tile element. */
typedef float wvec __attribute__ ((vector_size (4 * WB)));

typedef struct {
  int m;                        /* output tile side: 2 or 4 */
  int lg;                       /* log2 (m) */
  int n;                        /* input tile side, m + 2 */
  int xn;                       /* transformed tile elements (and GEMMs of
                                 * a pass), n * n: 16 or 36 */
  int th, tw;                   /* tile positions, down and across */
  int ph, pw;                   /* padded plane: m * th + 2 by m * tw + 2 */
  int pos;                      /* th * tw */
  int blocks;                   /* blocks of WB samples */
  int chunk;                    /* blocks per chunk of GEMMs */
  size_t bcols;                 /* columns of a block: pos * WB */
} wino_shape;

/* F(4x4, 3x3)'s transforms (conv2d_winograd4.c), each the counterpart of
 * an F(2x2, 3x3) one in conv2d_winograd.c, on the same layout (there):
 * element xi of a transformed matrix sits xs floats after element 0, tile
 * position p at p * WB, sample l at l. */

/* r = G g G^T, r[xi] for xi < 36, lane by lane (filter pairs); g is
 * [3][3] */
void tt_wino4_filter_lanes (const wvec g[9], wvec r[36]);
/* r = G^T d G */
void tt_wino4_filter_gradient_lanes (const wvec d[36], wvec r[9]);
/* v = B^T d B for every tile of a block's padded plane [ph][pw][WB] */
void tt_wino4_input_transform (const wino_shape * s, const float *pad,
    float *v, size_t xs);
/* pad += B dV B^T for every tile of a block */
void tt_wino4_input_gradient (const wino_shape * s, const float *dv,
    size_t xs, float *pad);
/* tile[p][4 * i + j][l] = (A^T M A)[i][j] + bias for every tile position */
void tt_wino4_output_tiles (const wino_shape * s, const float *m, size_t xs,
    float bias, float *tile);
/* dm = A dY A^T for every tile position, dY from tile as above */
void tt_wino4_output_gradient_tiles (const wino_shape * s,
    const float *tile, float *dm, size_t xs);

#endif
