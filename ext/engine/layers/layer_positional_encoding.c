/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * positional_encoding: y = x + pe[h][w] for every sample and channel, the
 * sinusoids of "Attention is all you need" as nntrainer writes them:
 * pe[i][j] = sin (i / 10000^(2 floor (j / 2) / W)) for even j, cos for
 * odd j, i the row (timestep, at most max_timestep), W the width (model
 * dimension). No weights; backward passes the derivative through.
 *
 * The table, h x w floats, is computed once into a scratch tensor the
 * plan keeps for the whole step (TT_PHASE_ALWAYS: nothing else shares its
 * bytes, so it holds from one step to the next) and again only when the
 * pool moved (its address changed); in double, then rounded (nntrainer
 * computes in float: within a few ulp of these for small i).
 */
#include "tt_layer.h"
#include "tt_split.h"

#include <math.h>
#include <string.h>

static const char *const pe_keys[] = { "max_timestep", NULL };

static tt_status
pe_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  if (!tt_section_has (s, "max_timestep"))
    return tt_section_error (s, "max_timestep", err, TT_ERR_INVALID,
        "missing key (the most timesteps, rows of the input)");
  return tt_section_uint (s, "max_timestep", 1, 1u << 24,
      &l->p.pe.max_timestep, err);
}

static tt_status
pe_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  const tt_dims d = l->in_dims[0];
  if (d.h > l->p.pe.max_timestep)
    return tt_fail (err, TT_ERR_INVALID, "%s: [%s] max_timestep: %u is "
        "less than the input's %u timesteps (input %u:%u:%u)", c->path,
        l->section, l->p.pe.max_timestep, d.h, d.c, d.h, d.w);
  l->out_dims[0] = d;
  return TT_OK;
}

static void
pe_declare (tt_init_ctx * c, tt_layer * l)
{
  const tt_dims d = l->in_dims[0];
  l->p.pe.table = tt_init_scratch (c, "table", (size_t) d.h * d.w);
  tt_init_use (c, l->p.pe.table, TT_PHASE_ALWAYS);
  l->p.pe.table_at = NULL;
}

static void
pe_table (float *pe, uint32_t h, uint32_t w)
{
  for (uint32_t i = 0; i < h; i++)
    for (uint32_t j = 0; j < w; j++) {
      const double a = i / pow (10000.0, (double) (j & ~1u) / w);
      pe[(size_t) i * w + j] = (float) (j & 1 ? cos (a) : sin (a));
    }
}

typedef struct
{
  const float *x, *pe;
  float *y;
  size_t plane;
} pe_job;

static TT_VECTOR_CLONES void
pe_add_planes (void *arg, size_t begin, size_t end)
{
  const pe_job *j = arg;
  const size_t n = j->plane;
  for (size_t p = begin / n; p < end / n; p++) {
    const float *x = j->x + p * n;
    float *y = j->y + p * n;
    const float *pe = j->pe;
    for (size_t i = 0; i < n; i++)
      y[i] = x[i] + pe[i];
  }
}

static void
pe_forward (const tt_run_ctx * c, tt_layer * l)
{
  const tt_dims d = l->in_dims[0];
  float *pe = tt_run_data (c, l->p.pe.table);
  if (l->p.pe.table_at != pe) {
    pe_table (pe, d.h, d.w);
    l->p.pe.table_at = pe;
  }
  pe_job j = { tt_run_data (c, l->in[0]), pe, tt_run_data (c, l->out[0]),
    (size_t) d.h * d.w
  };
  tt_split (c->threads, (size_t) c->batch * tt_dims_count (d), j.plane,
      16384, pe_add_planes, &j);
}

static void
pe_copy (void *arg, size_t begin, size_t end)
{
  const pe_job *j = arg;
  memcpy (j->y + begin, j->x + begin, (end - begin) * sizeof *j->y);
}

static void
pe_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  const float *dy = tt_run_data (c, l->out_deriv[0]);
  float *dx = tt_run_data (c, l->in_deriv[0]);
  if (dx == dy)
    return;
  pe_job j = { dy, NULL, dx, 0 };
  tt_split (c->threads, (size_t) c->batch * tt_dims_count (l->in_dims[0]),
      64, 16384, pe_copy, &j);
}

static bool
pe_can_run_in_place (const tt_layer * l)
{
  (void) l;
  return true;
}

const tt_layer_ops tt_positional_encoding_layer_ops = {
  .type = "positional_encoding",
  .role = TT_ROLE_COMPUTE,
  .max_inputs = 1,
  .keys = pe_keys,
  .parse = pe_parse,
  .infer = pe_infer,
  .declare = pe_declare,
  .forward = pe_forward,
  .calc_derivative = pe_calc_derivative,
  .can_run_in_place = pe_can_run_in_place,
};
