/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The public model API: load, compile, train and evaluate batches.
 * After compile, a training step touches only the pool: no allocation.
 */
#include "tt_internal.h"
#include "tt_split.h"

#include <iniparser/iniparser.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  free (m->save_best_path);
  free (m->memory_swap_path);
  free (m->remat);
  free (m->profile);
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

/* Which weights n threads split by rows (tt_weight.owned): those with
 * rows (fully connected), at least a GEMM row tile a thread, whose
 * products at the planned batch are worth splitting; and the scratch
 * each worker then needs: its partial product in forward, its gradient
 * chunk in backward, and what layers split by samples need
 * (tt_layer_ops.worker_floats). Returns the floats a worker needs. */
static size_t
model_own_weights (tt_model * m, unsigned n)
{
  size_t need = 0;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_weights; k++) {
      tt_weight *w = &l->weights[k];
      w->owned = false;
      if (n < 2 || w->rows == 0)
        continue;
      const size_t cols = w->count / w->rows;
      /* rows of the product: samples times the input's rows per sample */
      const size_t out = (size_t) m->batch_size * l->in_dims[0].c *
          l->in_dims[0].h;
      if (w->rows < n * TT_GRAD_CHUNK_QUANTUM
          || (double) out * w->count < TT_GEMM_SPLIT_MIN)
        continue;
      w->owned = true;
      const size_t floats = cols * (out > w->chunk_rows ? out : w->chunk_rows);
      need = floats > need ? floats : need;
    }
    if (n >= 2 && l->ops->worker_floats) {
      const size_t floats = l->ops->worker_floats (l, m->batch_size);
      need = floats > need ? floats : need;
    }
  }
  return need;
}

/* tt_layer.out_thread_blocks and in_thread_blocks: on each dense layer
 * whose owned weight (split with scratch for its parts) reads a model
 * input, through views that nothing else reads, and on that input, unless
 * it needs a derivative or standardizes by samples. */
static void
model_thread_blocks (tt_model * m)
{
  for (uint32_t i = 0; i < m->n_layers; i++) {
    m->layers[i].out_thread_blocks = 0;
    m->layers[i].in_thread_blocks = false;
  }
  if (!tt_threads_scratch_floats (m->thread_pool))
    return;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    if (!l->n_weights || !l->weights[0].owned || l->n_inputs != 1 ||
        l->needs_derivative)
      continue;
    const tt_link *in = &l->inputs[0];
    tt_layer *p = &m->layers[in->layer];
    while (in->index == 0 && p->consumers[0] == 1 && p->n_inputs == 1 &&
        p->ops->output_is_view && p->ops->role != TT_ROLE_MULTIOUT) {
      in = &p->inputs[0];
      p = &m->layers[in->layer];
    }
    if (in->index != 0 || p->consumers[0] != 1 ||
        p->ops->role != TT_ROLE_INPUT || p->p.input.standardization ||
        tt_dims_count (p->out_dims[0]) % l->weights[0].rows)
      continue;
    p->out_thread_blocks = l->weights[0].rows;
    l->in_thread_blocks = true;
  }
}

/* Each of the have - 1 workers' scratch, per floats (none when 0) */
static tt_status
model_worker_scratch (tt_model * m, unsigned have, size_t per, tt_error * err)
{
  tt_threads_set_scratch (m->thread_pool, NULL, 0);
  free (m->worker_scratch);
  m->worker_scratch = NULL;
  if (!per || have < 2)
    return TT_OK;
  if (posix_memalign ((void **) &m->worker_scratch, 64,
          (have - 1) * per * sizeof (float)))
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory for the "
        "threads' scratch (%zu bytes)", m->path, (have - 1) * per *
        sizeof (float));
  tt_threads_set_scratch (m->thread_pool, m->worker_scratch, per);
  return TT_OK;
}

/* (Re)makes the pool for the count asked (one thread: none) and the
 * workers' scratch. */
static tt_status
model_make_threads (tt_model * m, tt_error * err)
{
  const unsigned n = tt_model_threads (m);
  if (tt_threads_count (m->thread_pool) != n) {
    tt_threads_free (m->thread_pool);
    m->thread_pool = m->run.threads = NULL;
    if (tt_threads_new (n, &m->thread_pool))
      return tt_fail (err, TT_ERR_NOMEM, "%s: could not start %u threads",
          m->path, n - 1);
    m->run.threads = m->thread_pool;
    tt_threads_set_timing (m->thread_pool, m->profiling);
  }
  const unsigned have = tt_threads_count (m->thread_pool);
  const size_t floats = model_own_weights (m, have);
  /* whole cache lines a worker: no line shared between two */
  const size_t per = (floats + 15) / 16 * 16;
  tt_status st = model_worker_scratch (m, have, per, err);
  if (st)
    return st;
  model_thread_blocks (m);
  tt_relu_fuse (m);
  /* the derivative copies (which need the fusions decided) after */
  const size_t copies = tt_deriv_copies (m, per);
  if (copies && (st = model_worker_scratch (m, have, per + copies, err)))
    return st;
  return tt_loss_tail (m, err);
}

tt_status
tt_model_set_threads (tt_model * m, unsigned n, tt_error * err)
{
  if (n > TT_THREADS_MAX)
    return tt_fail (err, TT_ERR_INVALID, "%s: %u threads asked; the engine "
        "runs 1 to %u (0: the default)", m->path, n, TT_THREADS_MAX);
  m->threads = n;
  return m->compiled ? model_make_threads (m, err) : TT_OK;
}

unsigned
tt_model_threads (const tt_model * m)
{
  return m->threads ? m->threads : tt_engine_threads_default ();
}

void
tt_model_thread_steps (const tt_model * m, uint64_t * split,
    uint64_t * inline_steps)
{
  tt_threads_step_counts (m->thread_pool, split, inline_steps);
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

/* ---- profiling -------------------------------------------------------- */

/* Zeroes the counters; once the graph is built (the layer count final),
 * allocates them first: compile calls it when profiling was asked for
 * before, so no step ever allocates. */
static tt_status
model_profile_reset (tt_model * m, tt_error * err)
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
    tt_status st = model_profile_reset (m, err);
    if (st)
      return st;
  } else if (on) {
    m->profile_steps = m->profile_step_ns = 0;
  }
  m->profiling = on;
  tt_threads_set_timing (m->thread_pool, on);
  return TT_OK;
}

uint32_t
tt_model_num_layers (const tt_model * m)
{
  return m->compiled ? m->n_layers : 0;
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

/* A public step's start: its time counts when its forward pass began
 * (model_profile_end), so the steps and the layers' calls agree. */
typedef struct
{
  uint64_t t0, steps;
} model_profile_mark;

static model_profile_mark
model_profile_begin (const tt_model * m)
{
  model_profile_mark k = { 0, m->profile_steps };
  if (m->profiling)
    k.t0 = tt_threads_now_ns ();
  return k;
}

static void
model_profile_end (tt_model * m, model_profile_mark k)
{
  if (m->profiling && m->profile_steps != k.steps)
    m->profile_step_ns += tt_threads_now_ns () - k.t0;
}

/* A profiled stretch of a layer (its forward, backward or update): its
 * start on the clock and the pool's sums (tt_threads_times). */
typedef struct
{
  uint64_t t0, wait_ns, workers_ns;
} model_timer;

static model_timer
model_timer_start (const tt_model * m)
{
  model_timer k;
  tt_threads_times (m->thread_pool, &k.wait_ns, &k.workers_ns);
  k.t0 = tt_threads_now_ns ();
  return k;
}

/* The stretch's time; the pool's share of it added to t. */
static uint64_t
model_timer_stop (const tt_model * m, model_timer k, tt_layer_time * t)
{
  const uint64_t ns = tt_threads_now_ns () - k.t0;
  uint64_t wait, workers;
  tt_threads_times (m->thread_pool, &wait, &workers);
  t->wait_ns += wait - k.wait_ns;
  t->workers_ns += workers - k.workers_ns;
  return ns;
}

static void
model_forward_timed (tt_model * m, tt_layer * l, tt_layer_time * t)
{
  const model_timer k = model_timer_start (m);
  l->ops->forward (&m->run, l);
  t->forward_ns += model_timer_stop (m, k, t);
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
  tt_status st = tt_graph_build (m, err);
  if (st)
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
  /* laid out by halves for two threads (plan_halves.h), when the layers
   * split by samples (a batch of one splits otherwise); under a memory
   * limit the pool must be the smallest */
  m->plan_halves = tt_model_threads (m) == 2 && m->batch_size >= 2 &&
      !m->memory_limit;
  st = tt_plan_ini_serves (m) ? tt_plan_ini_use (m, err) :
      tt_plan_build (m, err);
  if (st || (st = tt_tensors_bind (m, err)) || (st = tt_swap_open (m, err))
      || (st = tt_layout_prepare (m, err)) || (st = model_make_threads (m,
              err)))
    return st;
  if (m->profiling && (st = model_profile_reset (m, err)))
    return st;
  tt_rng_seed (&m->rng, m->seed);
  m->compiled = true;
  /* a bundle loader fills the weights itself (or points them into its
   * blob): initializing them first would be wasted time */
  return m->defer_init ? TT_OK : tt_model_init_weights (m, err);
}

tt_status
tt_model_init_weights (tt_model * m, tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile before initializing",
        m->path);
  if (m->weights_external)
    return tt_model_refuse_external (m, "initialize weights", err);
  /* its own stream, so weights do not depend on how much dropout ran */
  tt_rng rng;
  tt_rng_seed (&rng, m->seed ^ 0x1a1e5eedULL);
  for (uint32_t c = 0; c < m->n_layers; c++) {
    tt_layer *l = &m->layers[m->canonical[c]];
    for (uint32_t i = 0; i < l->n_weights; i++) {
      tt_weight *w = &l->weights[i];
      tt_initializer_fill (&rng, w->init, tt_data (m, w->value), w->count,
          w->fan_in, w->fan_out);
      for (int s = 0; s < 2; s++)
        if (w->opt[s] >= 0)
          memset (tt_data (m, w->opt[s]), 0, w->count * sizeof (float));
    }
  }
  m->epoch = m->iteration = 0;
  return TT_OK;
}

/* ---- queries --------------------------------------------------------- */

uint32_t
tt_model_batch_size (const tt_model * m)
{
  return m->batch_size;
}

uint32_t
tt_model_num_inputs (const tt_model * m)
{
  return m->n_inputs;
}

static tt_shape
model_shape (tt_dims d)
{
  return (tt_shape) {
  d.c, d.h, d.w};
}

tt_status
tt_model_input_shape (const tt_model * m, uint32_t index, tt_shape * shape)
{
  if (!m->compiled || index >= m->n_inputs)
    return TT_ERR_INVALID;
  *shape = model_shape (m->layers[m->input_layers[index]].out_dims[0]);
  return TT_OK;
}

tt_shape
tt_model_label_shape (const tt_model * m)
{
  if (!m->compiled)
    return (tt_shape) {
    0, 0, 0};
  return model_shape (m->layers[m->loss_layer].in_dims[0]);
}

tt_shape
tt_model_output_shape (const tt_model * m)
{
  return tt_model_label_shape (m);
}

uint32_t
tt_model_epochs (const tt_model * m)
{
  return m->epochs;
}

const char *
tt_model_path (const tt_model * m)
{
  return m->path;
}

void
tt_model_memory_info (const tt_model * m, tt_memory_info * info)
{
  memset (info, 0, sizeof *info);
  if (!m->compiled)
    return;
  info->pool_bytes = (size_t) m->pool_bytes;
  info->weight_bytes = tt_bin_weight_bytes (m);
  info->tensor_count = m->n_tensors;
}

const float *
tt_model_output (const tt_model * m)
{
  if (!m->compiled)
    return NULL;
  return tt_data (m, m->layers[m->loss_layer].out[0]);
}

uint32_t
tt_model_epoch (const tt_model * m)
{
  return m->epoch;
}

uint32_t
tt_model_iteration (const tt_model * m)
{
  return m->iteration;
}

void
tt_model_finish_epoch (tt_model * m)
{
  /* a wrapped counter would restart a resumed run from epoch 0 */
  if (m->epoch < UINT32_MAX)
    m->epoch++;
}

/* ---- steps ----------------------------------------------------------- */

static tt_status
model_feed (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile the model first", m->path);
  if (n < 1 || n > m->batch_size)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: %u samples given; a batch holds 1 to %u", m->path, n,
        m->batch_size);
  if (!inputs)
    return tt_fail (err, TT_ERR_INVALID, "%s: no input data", m->path);
  for (uint32_t i = 0; i < m->n_inputs; i++) {
    tt_layer *l = &m->layers[m->input_layers[i]];
    const size_t count = n * tt_dims_count (l->out_dims[0]);
    float *dst = tt_data (m, l->out[0]);
    tt_dtype type = types ? types[i] : TT_DTYPE_FLOAT32;
    if (!inputs[i])
      return tt_fail (err, TT_ERR_INVALID, "%s: input %u (%s) has no data",
          m->path, i, l->name);
    l->p.input.normalized_at_feed = type == TT_DTYPE_UINT8 &&
        l->p.input.normalization;
    if (type != TT_DTYPE_UINT8 && type != TT_DTYPE_FLOAT32)
      return tt_fail (err, TT_ERR_INVALID, "%s: input %u: unknown data type "
          "%d", m->path, i, (int) type);
    const tt_feed_kind kind = type == TT_DTYPE_FLOAT32 ? TT_FEED_FLOATS :
        l->p.input.normalized_at_feed ? TT_FEED_BYTES_NORMALIZED :
        TT_FEED_BYTES;
    const size_t bad = tt_feed (m->thread_pool, kind, inputs[i], count,
        l->out_thread_blocks, dst);
    if (bad < count) {
      const size_t per = tt_dims_count (l->out_dims[0]);
      return tt_fail (err, TT_ERR_NUMERIC,
          "%s: input %u (%s), sample %zu holds %g at element %zu; this "
          "batch was not applied", m->path, i, l->name, bad / per,
          (double) ((const float *) inputs[i])[bad], bad % per);
    }
  }
  if (labels) {
    tt_layer *loss = &m->layers[m->loss_layer];
    memcpy (tt_data (m, loss->p.loss.label), labels,
        n * tt_dims_count (loss->in_dims[0]) * sizeof *labels);
  }
  /* what the layers see of this batch (model_forward sets training) */
  m->run.tensors = m->tensors;
  m->run.batch = n;
  m->run.batch_size = m->batch_size;
  m->run.have_labels = labels != NULL;
  m->run.rng = &m->rng;
  m->run.loss = &m->loss_value;
  return TT_OK;
}

/* training: the swapped activations (plan/remat.c) go to the swap file
 * as their writers complete them */
static tt_status
model_forward (tt_model * m, bool training, tt_error * err)
{
  m->run.training = training;
  const tt_run_ctx *c = &m->run;
  const bool swap = training && m->plan.swapped;
  tt_layer_time *const prof = m->profiling ? m->profile : NULL;
  if (prof)
    m->profile_steps++;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[m->exec[i]];
    if (prof) {
      model_forward_timed (m, l, &prof[m->exec[i]]);
      prof[m->exec[i]].calls++;
    } else {
      l->ops->forward (c, l);
    }
    tt_status st;
    if (swap && (st = tt_swap_out (m, m->exec[i], err)))
      return st;
  }
  return TT_OK;
}

static double
model_regularization (const tt_model * m)
{
  double sum = 0;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_weights; k++) {
      const tt_weight *w = &l->weights[k];
      if (w->l2 <= 0)
        continue;
      const float *v = tt_data (m, w->value);
      double sq = 0;
      for (size_t j = 0; j < w->count; j++)
        sq += (double) v[j] * v[j];
      sum += 0.5 * w->l2 * sq;
    }
  }
  return sum;
}

static void
model_score (const tt_model * m, tt_batch_result * r)
{
  if (!r)
    return;
  r->samples = m->run.batch;
  r->correct = 0;
  r->loss = m->run.have_labels ? m->loss_value + model_regularization (m) : NAN;
  if (!m->run.have_labels)
    return;
  const tt_layer *loss = &m->layers[m->loss_layer];
  const size_t k = tt_dims_count (loss->in_dims[0]);
  const float *y = tt_data (m, loss->out[0]);
  const float *t = tt_data (m, loss->p.loss.label);
  /* the maxima in registers: indexing by the best index so far made
   * each comparison wait for a load (5 us of the MLP's step at batch 128) */
  for (uint32_t b = 0; b < m->run.batch; b++, y += k, t += k) {
    size_t py = 0, pt = 0;
    float my = y[0], mt = t[0];
    for (size_t i = 1; i < k; i++) {
      if (y[i] > my) {
        my = y[i];
        py = i;
      }
      if (t[i] > mt) {
        mt = t[i];
        pt = i;
      }
    }
    r->correct += py == pt;
  }
}

/* Below this many elements an update runs on the calling thread alone:
 * waking the pool costs more than it saves (measured: see TT_SPLIT_*) */
#define MODEL_APPLY_SPLIT_MIN 8192

typedef struct
{
  tt_model *m;
  const tt_weight *w;
  size_t at;
  float *grad;                  /* elements [at, ...) of the gradient */
} model_apply_job;

/* elements [at + begin, at + end) of the job's weight; element-wise, so
 * any split gives the serial update bit for bit */
static void
model_apply_range (void *arg, size_t begin, size_t end)
{
  const model_apply_job *j = arg;
  tt_model *m = j->m;
  const tt_weight *w = j->w;
  const size_t n = end - begin, at = j->at + begin;
  float *v = tt_data (m, w->value) + at, *g = j->grad + begin;
  const float decay = w->l2 + w->decay;
  if (decay != 0.0f)
    for (size_t k = 0; k < n; k++)
      g[k] += decay * v[k];
  float *s0 = tt_data (m, w->opt[0]), *s1 = tt_data (m, w->opt[1]);
  tt_optimizer_apply_step (&m->opt_step, v, g, s0 ? s0 + at : NULL,
      s1 ? s1 + at : NULL, n);
}

/* The update of elements [at, at + n) of w from grad, which holds those
 * elements (consumed), split over the model's threads by fixed ranges
 * (whole cache lines); inline when called from a part of a job (the
 * pool is busy then). */
static void
model_apply_weight (tt_model * m, const tt_weight * w, size_t at, size_t n,
    float *grad)
{
  model_apply_job j = { m, w, at, grad };
  tt_split (m->run.threads, n, 16, MODEL_APPLY_SPLIT_MIN, model_apply_range,
      &j);
}

/* update as you go: a layer's calc_gradient hands each chunk here */
static void
model_apply_chunk (const void *owner, const tt_weight * w, size_t at, size_t n,
    float *grad)
{
  model_apply_weight ((tt_model *) owner, w, at, n, grad);
}

/* An owned weight's update: each thread its own rows. */
static void
model_apply_owned_part (void *arg, unsigned part, unsigned n_parts)
{
  const model_apply_job *j = arg;
  size_t r0, r1;
  tt_weight_owned_rows (j->w, part, n_parts, &r0, &r1);
  const size_t cols = j->w->count / j->w->rows;
  if (r0 < r1)
    model_apply_range ((void *) arg, r0 * cols, r1 * cols);
}

/* The update of l's weights from their gradients (consumed); chunked
 * ones were updated chunk by chunk in calc_gradient. */
static void
model_apply_layer (tt_model * m, tt_layer * l)
{
  for (uint32_t k = 0; k < l->n_weights; k++) {
    tt_weight *w = &l->weights[k];
    if (w->grad < 0 || w->chunk_rows)
      continue;
    if (w->owned) {
      model_apply_job j = { m, w, 0, tt_data (m, w->grad) };
      tt_threads_run_owned (m->run.threads, model_apply_owned_part, &j);
    } else {
      model_apply_weight (m, w, 0, w->count, tt_data (m, w->grad));
    }
  }
}

/* clip_grad_by_norm, as nntrainer (network_graph.cpp, weight.h): the
 * global norm is the L2 norm of the gradients' L2 norms (before
 * regularization and decay are added); every gradient is scaled by
 * max / (norm + 1e-6) when norm + 1e-6 > max. */
static void
model_clip_gradients (tt_model * m)
{
  const float eps = 1e-6f, max = m->clip_grad_norm;
  double sum = 0;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_weights; k++) {
      const tt_weight *w = &l->weights[k];
      if (w->grad < 0)
        continue;
      const float *g = tt_data (m, w->grad);
      double sq = 0;
      for (size_t j = 0; j < w->count; j++)
        sq += (double) g[j] * g[j];
      const double norm = (float) sqrt (sq);
      sum += norm * norm;
    }
  }
  const float total = (float) sqrt (sum) + eps;
  if (!(total > max))
    return;
  const float scale = max / total;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_weights; k++) {
      const tt_weight *w = &l->weights[k];
      if (w->grad < 0)
        continue;
      float *g = tt_data (m, w->grad);
      for (size_t j = 0; j < w->count; j++)
        g[j] *= scale;
    }
  }
}

/* Points a root and its views at data. */
static void
model_bind_root (tt_model * m, int root, float *data)
{
  for (uint32_t i = 0; i < m->n_tensors; i++) {
    int r = (int) i;
    while (m->tensors[r].alias_of >= 0)
      r = m->tensors[r].alias_of;
    if (r == root)
      m->tensors[i].data = data;
  }
}

/* The data a group's tensor k is read from now: its second instance
 * once rebuilt (after), else its first. */
static float *
model_instance (tt_model * m, const tt_remat * g, uint32_t k, bool after)
{
  const int t = after && g->twins[k] >= 0 ? g->twins[k] : g->tensors[k];
  return after && g->twins[k] >= 0 ? m->tensors[t].data :
      (float *) ((char *) m->pool + m->tensors[t].offset);
}

/* Profiled, a rerun is its layer's forward time (it is forward work,
 * whatever phase asks for it), not a call: calls count steps. */
static void
model_rerun_forward (tt_model * m, const tt_remat * g, uint32_t writers)
{
  tt_layer_time *const prof = m->profiling ? m->profile : NULL;
  m->run.recompute = true;
  for (uint32_t w = 0; w < writers; w++) {
    tt_layer *l = &m->layers[g->writers[w]];
    if (prof)
      model_forward_timed (m, l, &prof[g->writers[w]]);
    else
      l->ops->forward (&m->run, l);
  }
  m->run.recompute = false;
}

/* Before the backward phases of layer (plan/remat.c), in execution order
 * of the groups: the dropped groups it is the trigger of rebuilt in
 * their second instances (their writers' forward again, or read back
 * from the swap file), which they and their views point at from then on;
 * and the groups whose first writer it is and reruns: its forward again
 * into the rerun instances, the scratch its backward reads kept there. */
static tt_status
model_rebuild (tt_model * m, int layer, tt_error * err)
{
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    if (G->mode != TT_REMAT_KEEP && G->trigger == layer) {
      for (uint32_t k = 0; k < G->n_tensors; k++)
        if (G->twins[k] >= 0)
          model_bind_root (m, G->tensors[k], m->tensors[G->twins[k]].data);
      tt_status st;
      if (G->mode == TT_REMAT_SWAP && (st = tt_swap_in (m, G, err)))
        return st;
      if (G->mode == TT_REMAT_RECOMPUTE)
        model_rerun_forward (m, G, G->n_writers);
    }
    if (G->late && G->writers[0] == layer) {
      for (uint32_t k = 0; k < G->n_tensors; k++)
        if (G->late_twins[k] >= 0)
          model_bind_root (m, G->tensors[k], m->tensors[G->late_twins[k]].data);
      model_rerun_forward (m, G, 1);
      for (uint32_t k = 0; k < G->n_tensors; k++)
        if (G->late_twins[k] >= 0 && !(G->rerun_keep & (1u << k)))
          model_bind_root (m, G->tensors[k], model_instance (m, G, k,
                  G->mode != TT_REMAT_KEEP));
    }
  }
  return TT_OK;
}

/* After backward: the dropped activations back at their first instances,
 * where the next forward writes them. */
static void
model_unbind_dropped (tt_model * m)
{
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    for (uint32_t k = 0; k < G->n_tensors; k++)
      if (G->twins[k] >= 0 || G->late_twins[k] >= 0)
        model_bind_root (m, G->tensors[k], model_instance (m, G, k, false));
  }
}

/* l's backward phases in nntrainer's order (calc_gradient, then
 * calc_derivative), but with update as you go calc_derivative first: it
 * reads the weights, which that calc_gradient updates */
static void
model_layer_backward (const tt_run_ctx * c, tt_layer * l)
{
  bool trainable = false;
  for (uint32_t k = 0; k < l->n_weights; k++)
    trainable |= l->weights[k].grad >= 0;
  const bool derive = l->needs_derivative && l->ops->calc_derivative;
  if (derive && l->update_in_gradient)
    l->ops->calc_derivative (c, l);
  if (trainable && l->ops->calc_gradient)
    l->ops->calc_gradient (c, l);
  if (derive && !l->update_in_gradient)
    l->ops->calc_derivative (c, l);
}

/* A layer with nothing to update (no weights, frozen, or every gradient
 * applied chunk by chunk in calc_gradient) reads no clock: its update
 * time stays 0 rather than the clock's own cost. */
static void
model_apply_layer_timed (tt_model * m, tt_layer * l, tt_layer_time * t)
{
  bool any = false;
  for (uint32_t k = 0; k < l->n_weights; k++)
    any |= l->weights[k].grad >= 0 && !l->weights[k].chunk_rows;
  if (!any)
    return;
  const model_timer k = model_timer_start (m);
  model_apply_layer (m, l);
  t->update_ns += model_timer_stop (m, k, t);
}

static void
model_layer_backward_timed (tt_model * m, tt_layer * l, bool update,
    tt_layer_time * t)
{
  const model_timer k = model_timer_start (m);
  model_layer_backward (&m->run, l);
  t->backward_ns += model_timer_stop (m, k, t);
  if (update)
    model_apply_layer_timed (m, l, t);
}

/* apply: update the weights, each layer's right after its gradients
 * (their memory may then serve later layers), a chunked gradient's chunk
 * by chunk as calc_gradient computes them (update as you go, after
 * calc_derivative, which reads the old weights: lifetime.c numbers the
 * steps the same way), or, with clip_grad_by_norm, all at the end (the
 * gradients then live until it, graph_tensors.c) */
static tt_status
model_backward (tt_model * m, bool apply, tt_error * err)
{
  tt_run_ctx *c = &m->run;
  const bool defer = m->clip_grad_norm > 0;
  tt_layer_time *const prof = m->profiling ? m->profile : NULL;
  c->apply_chunk = apply ? model_apply_chunk : NULL;
  c->apply_owner = m;
  if (apply)
    tt_optimizer_step_at (&m->opt, m->iteration, &m->opt_step);
  for (uint32_t i = m->n_layers; i-- > 0;) {
    tt_layer *l = &m->layers[m->exec[i]];
    if (m->n_dropped) {
      tt_status st = model_rebuild (m, m->exec[i], err);
      if (st) {
        c->apply_chunk = NULL;
        model_unbind_dropped (m);
        return st;
      }
    }
    if (prof) {
      model_layer_backward_timed (m, l, apply && !defer, &prof[m->exec[i]]);
    } else {
      model_layer_backward (c, l);
      if (apply && !defer)
        model_apply_layer (m, l);
    }
  }
  c->apply_chunk = NULL;
  if (m->n_dropped)
    model_unbind_dropped (m);
  if (!apply || !defer)
    return TT_OK;
  model_clip_gradients (m);
  for (uint32_t i = m->n_layers; i-- > 0;) {
    tt_layer *l = &m->layers[m->exec[i]];
    if (prof)
      model_apply_layer_timed (m, l, &prof[m->exec[i]]);
    else
      model_apply_layer (m, l);
  }
  return TT_OK;
}

static tt_status
model_train_batch (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, tt_batch_result * result,
    tt_error * err)
{
  if (m->weights_external)
    return tt_model_refuse_external (m, "train", err);
  if (m->inference)
    return tt_fail (err, TT_ERR_STATE, "%s: cannot train: the model was "
        "compiled for inference only (no gradients, no optimizer state)",
        m->path);
  if (!labels)
    return tt_fail (err, TT_ERR_INVALID, "%s: training needs labels", m->path);
  if (m->swap_failed)
    return tt_fail (err, TT_ERR_STATE, "%s: a read from the swap file failed "
        "during a step, after part of its update: reload the model", m->path);
  /* wrapping would restart adam's bias correction and the schedule */
  if (m->iteration == UINT32_MAX)
    return tt_fail (err, TT_ERR_STATE, "%s: the iteration counter is at "
        "%u, its limit: another step would overflow it", m->path, m->iteration);
  tt_status st = model_feed (m, n, inputs, types, labels, err);
  if (st || (st = model_forward (m, true, err)))
    return st;
  tt_batch_result r;
  model_score (m, &r);
  if (!isfinite (r.loss))
    return tt_fail (err, TT_ERR_NUMERIC,
        "%s: the loss became %g at iteration %u (epoch %u); this batch was "
        "not applied", m->path, r.loss, m->iteration, m->epoch);
  if ((st = model_backward (m, true, err)))
    return st;
  m->iteration++;
  if (result)
    *result = r;
  return TT_OK;
}

_Static_assert (TT_MODEL_STEP_GRADIENTS < TT_THREADS_STEP_KINDS,
    "a kind of step the pool does not time");

/* A step of kind begins: the pool chooses split or inline, then the
 * model takes the layout that fits (layout_switch.c). */
static void
model_step_begin (tt_model * m, unsigned kind)
{
  tt_threads_begin (m->thread_pool, kind);
  tt_layout_fit (m, kind);
}

/* A step: the pool's workers stay awake between its jobs. */
tt_status
tt_model_train_batch (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, tt_batch_result * result,
    tt_error * err)
{
  const model_profile_mark k = model_profile_begin (m);
  model_step_begin (m, TT_MODEL_STEP_TRAIN);
  const tt_status st =
      model_train_batch (m, n, inputs, types, labels, result, err);
  tt_threads_end (m->thread_pool);
  model_profile_end (m, k);
  return st;
}

static tt_status
model_eval_batch (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, tt_batch_result * result,
    tt_error * err)
{
  tt_status st = model_feed (m, n, inputs, types, labels, err);
  if (st || (st = model_forward (m, false, err)))
    return st;
  model_score (m, result);
  return TT_OK;
}

tt_status
tt_model_eval_batch (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, tt_batch_result * result,
    tt_error * err)
{
  const model_profile_mark k = model_profile_begin (m);
  model_step_begin (m, TT_MODEL_STEP_EVAL);
  const tt_status st =
      model_eval_batch (m, n, inputs, types, labels, result, err);
  tt_threads_end (m->thread_pool);
  model_profile_end (m, k);
  return st;
}

static tt_status
model_gradients (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, bool backward, double *loss,
    tt_error * err)
{
  /* a training-mode forward updates batch-normalization statistics */
  if (m->weights_external)
    return tt_model_refuse_external (m, "run a training pass", err);
  if (m->inference)
    return tt_fail (err, TT_ERR_STATE, "%s: cannot run a training pass: the "
        "model was compiled for inference only", m->path);
  for (uint32_t i = 0; backward && i < m->n_layers; i++)
    if (m->layers[i].update_in_gradient)
      return tt_fail (err, TT_ERR_STATE, "%s: the gradient of layer %s is "
          "planned in chunks, each applied as computed (update as you go): "
          "call tt_model_keep_gradients before compiling to read it whole",
          m->path, m->layers[i].name);
  tt_status st = model_feed (m, n, inputs, types, labels, err);
  if (st || (st = model_forward (m, true, err)))
    return st;
  *loss = m->loss_value;
  if (backward)
    return model_backward (m, false, err);
  return TT_OK;
}

tt_status
tt_model_gradients (tt_model * m, uint32_t n, const void *const *inputs,
    const tt_dtype * types, const float *labels, bool backward, double *loss,
    tt_error * err)
{
  const model_profile_mark k = model_profile_begin (m);
  model_step_begin (m, TT_MODEL_STEP_GRADIENTS);
  const tt_status st =
      model_gradients (m, n, inputs, types, labels, backward, loss, err);
  tt_threads_end (m->thread_pool);
  model_profile_end (m, k);
  return st;
}

const char *
tt_model_save_best_path (const tt_model * m)
{
  return m->save_best_path;
}

/* ---- weights as one flat array (hand-off between models) ------------- */

size_t
tt_model_weight_floats (const tt_model * m)
{
  return m->compiled ? tt_bin_weight_bytes (m) / sizeof (float) : 0;
}

uint64_t
tt_model_weight_signature (const tt_model * m)
{
  uint64_t h = 0xcbf29ce484222325ull;
  uint32_t n = 0;
  int *ids = m->compiled ? tt_bin_regions ((tt_model *) m, false, &n) : NULL;
  for (uint32_t i = 0; ids && i < n; i++) {
    const tt_tensor *t = &m->tensors[ids[i]];
    for (const char *c = t->name; *c; c++)
      h = (h ^ (unsigned char) *c) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
    for (int k = 0; k < 8; k++)
      h = (h ^ ((uint64_t) t->count >> (8 * k) & 0xff)) * 0x100000001b3ull;
  }
  free (ids);
  return h;
}

/* Copies between the model's weight tensors and dst/src in BIN order. */
static tt_status
model_weights_copy (tt_model * m, float *out, const float *in, size_t floats,
    tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile the model first", m->path);
  if (in && m->weights_external)
    return tt_model_refuse_external (m, "load weights", err);
  const size_t want = tt_model_weight_floats (m);
  if (floats != want)
    return tt_fail (err, TT_ERR_INVALID, "%s: %zu weight floats given, the "
        "model has %zu", m->path, floats, want);
  uint32_t n;
  int *ids = tt_bin_regions (m, false, &n);
  if (!ids)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  size_t at = 0;
  for (uint32_t i = 0; i < n; i++) {
    tt_tensor *t = &m->tensors[ids[i]];
    if (in)
      memcpy (t->data, in + at, t->count * sizeof (float));
    else
      memcpy (out + at, t->data, t->count * sizeof (float));
    at += t->count;
  }
  free (ids);
  return TT_OK;
}

tt_status
tt_model_export_weights (tt_model * m, float *dst, size_t floats,
    tt_error * err)
{
  return model_weights_copy (m, dst, NULL, floats, err);
}

tt_status
tt_model_import_weights (tt_model * m, const float *src, size_t floats,
    tt_error * err)
{
  return model_weights_copy (m, NULL, src, floats, err);
}
