/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Profiling: the model's counters per layer (tt_model_set_profiling,
 * the tt_model_*profile readers), and the clocks the steps read into
 * them: a public step's time, a layer's stretch with the pool's share.
 */
#include "tt_internal.h"

#include <stdlib.h>
#include <string.h>

/* Zeroes the counters; once the graph is built (the layer count final),
 * allocates them first: compile calls it when profiling was asked for
 * before, so no step ever allocates. */
tt_status
tt_model_profile_reset (tt_model * m, tt_error * err)
{
  m->profile_steps = m->profile_step_ns = 0;
  if (!m->profile && !(m->profile = calloc (m->n_layers, sizeof *m->profile)))
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory for the profile "
        "of %u layers", m->path, m->n_layers);
  memset (m->profile, 0, m->n_layers * sizeof *m->profile);
  return TT_OK;
}

tt_status
tt_model_set_profiling (tt_model * m, bool on, tt_error * err)
{
  if (on && m->compiled) {
    tt_status st = tt_model_profile_reset (m, err);
    if (st)
      return st;
  } else if (on) {
    m->profile_steps = m->profile_step_ns = 0;
  }
  m->profiling = on;
  tt_threads_set_timing (m->thread_pool, on);
  return TT_OK;
}

/* the counters exist: compiled, and profiling turned on since */
static tt_status
model_profile_readable (const tt_model * m)
{
  if (!m->compiled)
    return TT_ERR_INVALID;
  return m->profile ? TT_OK : TT_ERR_STATE;
}

/* The index-th layer's counters (execution order), or NULL and why. */
static const tt_layer_time *
model_layer_time (const tt_model * m, uint32_t index, tt_status * st)
{
  *st = model_profile_readable (m);
  if (!*st && index >= m->n_layers)
    *st = TT_ERR_INVALID;
  return *st ? NULL : &m->profile[m->exec[index]];
}

tt_status
tt_model_layer_profile (const tt_model * m, uint32_t index,
    tt_layer_profile * out)
{
  memset (out, 0, sizeof *out);
  tt_status st;
  const tt_layer_time *t = model_layer_time (m, index, &st);
  if (!t)
    return st;
  const tt_layer *l = &m->layers[m->exec[index]];
  out->name = l->name;
  out->type = l->ops->type;
  out->calls = t->calls;
  out->forward_ns = t->forward_ns;
  out->backward_ns = t->backward_ns;
  out->update_ns = t->update_ns;
  return TT_OK;
}

tt_status
tt_model_layer_threads_profile (const tt_model * m, uint32_t index,
    tt_layer_threads_profile * out)
{
  memset (out, 0, sizeof *out);
  tt_status st;
  const tt_layer_time *t = model_layer_time (m, index, &st);
  if (!t)
    return st;
  out->wait_ns = t->wait_ns;
  out->workers_ns = t->workers_ns;
  return TT_OK;
}

tt_status
tt_model_profile (const tt_model * m, tt_profile * out)
{
  memset (out, 0, sizeof *out);
  tt_status st = model_profile_readable (m);
  if (st)
    return st;
  out->steps = m->profile_steps;
  out->step_ns = m->profile_step_ns;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer_time *t = &m->profile[i];
    out->layer_ns += t->forward_ns + t->backward_ns + t->update_ns;
  }
  /* the layers' times lie inside the steps', but each is read off the
   * clock apart: never let rounding make the rest negative */
  out->other_ns = out->step_ns > out->layer_ns ?
      out->step_ns - out->layer_ns : 0;
  return TT_OK;
}

tt_model_profile_mark
tt_model_profile_begin (const tt_model * m)
{
  tt_model_profile_mark k = { 0, m->profile_steps };
  if (m->profiling)
    k.t0 = tt_threads_now_ns ();
  return k;
}

void
tt_model_profile_end (tt_model * m, tt_model_profile_mark k)
{
  if (m->profiling && m->profile_steps != k.steps)
    m->profile_step_ns += tt_threads_now_ns () - k.t0;
}

tt_model_timer
tt_model_timer_start (const tt_model * m)
{
  tt_model_timer k;
  tt_threads_times (m->thread_pool, &k.wait_ns, &k.workers_ns);
  k.t0 = tt_threads_now_ns ();
  return k;
}

/* The stretch's time; the pool's share of it added to t. */
uint64_t
tt_model_timer_stop (const tt_model * m, tt_model_timer k, tt_layer_time * t)
{
  const uint64_t ns = tt_threads_now_ns () - k.t0;
  uint64_t wait, workers;
  tt_threads_times (m->thread_pool, &wait, &workers);
  t->wait_ns += wait - k.wait_ns;
  t->workers_ns += workers - k.workers_ns;
  return ns;
}

void
tt_model_forward_timed (tt_model * m, tt_layer * l, tt_layer_time * t)
{
  const tt_model_timer k = tt_model_timer_start (m);
  l->ops->forward (&m->run, l);
  t->forward_ns += tt_model_timer_stop (m, k, t);
}
