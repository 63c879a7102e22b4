/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The committed PyTorch golden data of tests/golden/ (its README names
 * the files): reading a case's arrays and meta.txt, the tolerance every
 * comparison with it uses, and the model's weights in BIN order, the
 * order of init.bin and grads.f32. Set golden_root to the source root
 * first. Include after tt_internal.h and tt_test.h.
 */
#ifndef TT_GOLDEN_DATA_H
#define TT_GOLDEN_DATA_H

#include <math.h>

typedef struct
{
  float *data;
  size_t count;
} golden_array;

static char golden_root[1024];

/* a file of float32s, whole */
static inline golden_array
golden_read_file (const char *path)
{
  golden_array a = { NULL, 0 };
  FILE *f = fopen (path, "rb");
  if (!f) {
    printf ("cannot open %s\n", path);
    return a;
  }
  fseek (f, 0, SEEK_END);
  long size = ftell (f);
  fseek (f, 0, SEEK_SET);
  a.data = malloc ((size_t) size + 4);
  a.count = (size_t) size / 4;
  if (fread (a.data, 1, (size_t) size, f) != (size_t) size)
    a.count = 0;
  fclose (f);
  return a;
}

/* file name of a golden case's directory */
static inline golden_array
golden_read (const char *dir, const char *name)
{
  char path[2048];
  snprintf (path, sizeof path, "%s/tests/golden/%s/%s", golden_root, dir, name);
  return golden_read_file (path);
}

static inline bool
golden_meta (const char *dir, const char *key, char *out, size_t len)
{
  char path[2048], line[1024];
  snprintf (path, sizeof path, "%s/tests/golden/%s/meta.txt", golden_root, dir);
  FILE *f = fopen (path, "r");
  bool found = false;
  if (!f)
    return false;
  while (!found && fgets (line, sizeof line, f)) {
    char k[128], v[900];
    if (sscanf (line, " %127[^= ] = %899s", k, v) == 2 && !strcmp (k, key)) {
      snprintf (out, len, "%.*s", (int) (len ? len - 1 : 0), v);
      found = true;
    }
  }
  fclose (f);
  return found;
}

/* |a - b| <= 1e-4 |b| + 1e-5 scale, scale at least max|b|; counts and
 * reports violations. A larger scale is the case's largest gradient when
 * one weight of it is compared alone: a weight whose true gradient is 0
 * (a key projection's bias) holds rounding noise of the others' size. */
static inline int
golden_compare_scaled (const char *what, const float *got, const float *want,
    size_t n, const bool *skip, float scale)
{
  /* (a float maximum: GCC 12 for aarch64 crashes at -O3 vectorizing an
   * fmax reduction into a double over floats) */
  float maxabs = scale;
  for (size_t i = 0; i < n; i++) {
    float a = fabsf (want[i]);
    maxabs = a > maxabs ? a : maxabs;
  }
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    if (skip && skip[i])
      continue;
    double tol = 1e-4 * fabs (want[i]) + 1e-5 * maxabs;
    double d = fabs ((double) got[i] - want[i]);
    worst = fmax (worst, d / tol);
    if (!(d <= tol)) {
      if (bad < 3)
        printf ("  %s[%zu]: engine %.9g, torch %.9g\n", what, i, got[i],
            want[i]);
      bad++;
    }
  }
  printf ("  %s: %zu values, worst |diff|/tolerance %.3f\n", what, n, worst);
  return bad;
}

static inline int
golden_compare (const char *what, const float *got, const float *want,
    size_t n, const bool *skip)
{
  return golden_compare_scaled (what, got, want, n, skip, 0.0f);
}

/* The model's weights in BIN order (nntrainer's: io/bin.c), which is not
 * the INI order where branches run in parallel (branchy_bn). malloc'd. */
static inline tt_weight **
golden_bin_weights (tt_model * m, uint32_t * n)
{
  int *ids = tt_bin_regions (m, false, n);
  tt_weight **w = calloc (*n + 1, sizeof *w);
  for (uint32_t i = 0; ids && w && i < *n; i++)
    for (uint32_t c = 0; c < m->n_layers; c++)
      for (uint32_t k = 0; k < m->layers[c].n_weights; k++)
        if (m->layers[c].weights[k].value == ids[i])
          w[i] = &m->layers[c].weights[k];
  free (ids);
  return w;
}

#endif
