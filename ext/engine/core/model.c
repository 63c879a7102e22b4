/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A model's life: loaded from its INI (file or text), the choices made
 * before compiling (batch size, seed, inference only, memory limit,
 * plan mode, alignment), compiled (graph, plan, pool, swap file,
 * layouts, threads) and freed. After compile, a training step touches
 * only the pool: no allocation (model_step.c).
 */
#include "tt_internal.h"

#include <iniparser/iniparser.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define TT_DEFAULT_SEED 0x5eedULL

static tt_model *
model_new (const char *path, tt_error * err)
{
  if (!path)
    return tt_fail (err, TT_ERR_INVALID, "no model path given"), NULL;
  tt_model *m = calloc (1, sizeof *m);
  if (!m)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", path), NULL;
  if (snprintf (m->path, sizeof m->path, "%s", path) >= (int) sizeof m->path) {
    tt_fail (err, TT_ERR_INVALID, "%.64s...: path too long", path);
    free (m);
    return NULL;
  }
  char dir[sizeof m->path];
  snprintf (dir, sizeof dir, "%s", path);
  snprintf (m->dir, sizeof m->dir, "%s", dirname (dir));
  m->batch_size = 1;
  m->epochs = 1;
  m->seed = TT_DEFAULT_SEED;
  m->loss_layer = -1;
  m->align = 64;
  m->swap_fd = -1;
  return m;
}

tt_model *
tt_model_load_ini (const char *path, tt_error * err)
{
  tt_model *m = model_new (path, err);
  if (m && tt_ini_parse_model (m, err) != TT_OK) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

tt_model *
tt_model_load_ini_text (const char *text, size_t len, const char *name,
    tt_error * err)
{
  if (!text)
    return tt_fail (err, TT_ERR_INVALID, "no model text given"), NULL;
  tt_model *m = model_new (name ? name : "<memory>", err);
  if (m && tt_ini_parse_model_text (m, text, len, err) != TT_OK) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

void
tt_model_free (tt_model * m)
{
  if (!m)
    return;
  if (m->dict)
    iniparser_freedict (m->dict);
  free (m->layers);
  free (m->exec);
  free (m->tensors);
  free (m->uses);
  free (m->ini_text);
  free (m->train_spec);
  free (m->save_best_path);
  free (m->memory_swap_path);
  free (m->remat);
  free (m->profile);
  tt_fcache_free (m);
  if (m->swap_fd >= 0)
    close (m->swap_fd);
  for (uint32_t i = 0; i < m->n_backbone_dicts; i++)
    iniparser_freedict (m->backbone_dicts[i]);
  free (m->backbone_dicts);
  free (m->canonical);
  tt_threads_free (m->thread_pool);
  free (m->worker_scratch);
  free (m->loss_tail_dy);
  tt_layout_free (m);
  free (m->pool);
  if (m->map)
    munmap (m->map, m->map_len);
  free (m);
}

tt_status
tt_model_set_batch_size (tt_model * m, uint32_t batch, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: the batch size is fixed once the model is compiled", m->path);
  if (batch < 1 || batch > (1u << 16))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: batch size %u is out of range [1, 65536]", m->path, batch);
  m->batch_size = batch;
  return TT_OK;
}

void
tt_model_set_seed (tt_model * m, uint64_t seed)
{
  m->seed = seed;
  tt_rng_seed (&m->rng, seed);
}

tt_status
tt_model_request_input_derivative (tt_model * m, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: request input derivatives before compiling", m->path);
  m->force_input_derivative = true;
  return TT_OK;
}

tt_status
tt_model_keep_gradients (tt_model * m, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: ask for whole gradients before compiling", m->path);
  m->keep_gradients = true;
  return TT_OK;
}

tt_status
tt_model_set_whole_gradients (tt_model * m, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: ask for whole gradients before compiling", m->path);
  m->whole_gradients = true;
  return TT_OK;
}

tt_status
tt_model_set_inference (tt_model * m, bool inference, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: choose inference-only before compiling", m->path);
  m->inference = inference;
  return TT_OK;
}

tt_status
tt_model_set_memory_limit (tt_model * m, uint64_t bytes, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: set the memory limit before compiling", m->path);
  m->memory_limit = bytes;
  return TT_OK;
}

bool
tt_model_is_inference (const tt_model * m)
{
  return m->inference;
}

tt_status
tt_model_set_plan_mode (tt_model * m, tt_plan_mode mode, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: choose the plan mode before compiling", m->path);
  if (mode != TT_PLAN_AUTO && mode != TT_PLAN_REPLAN && mode != TT_PLAN_NAIVE)
    return tt_fail (err, TT_ERR_INVALID, "%s: unknown plan mode %d",
        m->path, (int) mode);
  m->plan_mode = mode;
  return TT_OK;
}

tt_status
tt_model_set_plan_thorough (tt_model * m, bool thorough, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: choose the plan search before compiling", m->path);
  m->plan_thorough = thorough;
  return TT_OK;
}

tt_status
tt_model_set_alignment (tt_model * m, uint32_t alignment, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: choose the alignment before compiling", m->path);
  if (alignment < 4 || alignment > 4096 || (alignment & (alignment - 1)))
    return tt_fail (err, TT_ERR_INVALID,
        "%s: alignment %u is not a power of two in [4, 4096]", m->path,
        alignment);
  m->align = alignment;
  return TT_OK;
}

bool
tt_model_has_stored_plan (const tt_model * m)
{
  return m->stored_plan;
}

static int
model_by_creation (const void *a, const void *b, void *layers)
{
  const tt_layer *l = layers;
  return l[*(const int *) a].creation - l[*(const int *) b].creation;
}

tt_status
tt_model_compile (tt_model * m, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: already compiled", m->path);
  tt_blas_threads_default ();
  tt_status st = tt_half_only_read (m, err);
  if (st || (st = tt_graph_build (m, err)))
    return st;
  m->canonical = malloc (m->n_layers * sizeof *m->canonical);
  m->exec = malloc (m->n_layers * sizeof *m->exec);
  if (!m->canonical || !m->exec)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  for (uint32_t i = 0; i < m->n_layers; i++)
    m->canonical[i] = (int) i;
  qsort_r (m->canonical, m->n_layers, sizeof *m->canonical,
      model_by_creation, m->layers);
  m->fingerprint = tt_plan_fingerprint (m);
  tt_loss_scale_compile (m);
  /* laid out by halves for two threads (plan_halves.h), when the layers
   * split by samples (a batch of one splits otherwise); under a memory
   * limit the pool must be the smallest */
  m->plan_halves = tt_model_threads (m) == 2 && m->batch_size >= 2 &&
      !m->memory_limit;
  st = tt_plan_ini_serves (m) ? tt_plan_ini_use (m, err) :
      tt_plan_build (m, err);
  if (st || (st = tt_tensors_bind (m, err)) || (st = tt_swap_open (m, err))
      || (st = tt_layout_prepare (m, err)) || (st = tt_model_make_threads (m,
              err)))
    return st;
  if (m->profiling && (st = tt_model_profile_reset (m, err)))
    return st;
  tt_rng_seed (&m->rng, m->seed);
  tt_fcache_free (m);
  m->compiled = true;
  /* a bundle loader fills the weights itself (or points them into its
   * blob): initializing them first would be wasted time */
  return m->defer_init ? TT_OK : tt_model_init_weights (m, err);
}
