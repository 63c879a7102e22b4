/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Engine internals shared by the model, graph, plan, optimizer and I/O
 * files: the model and what works on it. What layers see is tt_layer.h.
 */
#ifndef TT_INTERNAL_H
#define TT_INTERNAL_H

#include "tt_layer.h"
#include "tt_test_hooks.h"
#include "plan_offsets.h"

#include <stdarg.h>

#define TT_MAX_STEPS 64         /* entries of a step learning-rate schedule */

/* ---- tensor uses ----------------------------------------------------- */

typedef struct {
  int tensor;                   /* a root: views are resolved when recorded */
  int layer;                    /* index in tt_model.layers */
  tt_phase phase;
} tt_use;

/* ---- INI text, keys, the model parser -------------------------------- */

/* The keys of s must be in one of the lists a, b, c (NULL lists are
 * empty); tt_section_check_keys is the one-list form. */
tt_status tt_section_check_key_lists (const tt_section * s,
    const char *const *a, const char *const *b, const char *const *c,
    tt_error * err);
/* One unsigned integer from [p, end), blanks trimmed; saturates at
 * UINT64_MAX so that range checks report a huge value as out of range. */
bool tt_ini_parse_uint (const char *p, const char *end, uint64_t * out);
tt_status tt_section_check_keys (const tt_section * s,
    const char *const *allowed, tt_error * err);
tt_status tt_ini_parse_model (tt_model * m, tt_error * err);
tt_status tt_ini_parse_model_text (tt_model * m, const char *text,
    size_t len, tt_error * err);
/* ini_text.c: INI text in memory to an iniparser dictionary, with
 * iniparser's rules; NULL and a message naming name and line on error */
void *tt_ini_text_parse (const char *text, size_t len, const char *name,
    tt_error * err);
/* A line's blanks trimmed (in place) and its letters lowered, as
 * iniparser does to names and values */
char *tt_ini_text_strip (char *s);
void tt_ini_text_lower (char *s);
/* ini_strict.c: what a model text must not hold although iniparser's rules
 * let it through (a key or section written twice, "[]", binary data, a
 * damaged bundle); *skip gets the bytes of a UTF-8 byte-order mark to
 * leave out (0 or 3). */
tt_status tt_ini_strict_check (const char *text, size_t len,
    const char *name, size_t *skip, tt_error * err);

/* ---- mixed precision ------------------------------------------------ */

/* the parts of a half activation type that apply (tt_half_only_read) */
typedef enum {
  TT_HALF_BOTH, TT_HALF_GEMM_ONLY, TT_HALF_STASH_ONLY
} tt_half_only;

/* ---- optimizer ------------------------------------------------------- */

typedef enum { TT_OPT_SGD, TT_OPT_ADAM, TT_OPT_ADAMW } tt_optimizer_type;
/* Adam's two forms (nntrainer's [Optimizer] torch_ref): nntrainer's,
 * epsilon added to sqrt(v) with the step scaled by sqrt(1 - b2^t) (the
 * default, as in nntrainer: torch_ref = false), and PyTorch's, epsilon
 * added to sqrt(v) / sqrt(1 - b2^t) (torch_ref = true) */
typedef enum { TT_ADAM_TORCH, TT_ADAM_NNTRAINER } tt_adam_form;
typedef enum {
  TT_LR_CONSTANT, TT_LR_EXPONENTIAL, TT_LR_STEP, TT_LR_COSINE, TT_LR_LINEAR
} tt_lr_type;

typedef struct {
  tt_optimizer_type type;
  tt_adam_form adam_form;
  float learning_rate, beta1, beta2, epsilon, weight_decay, momentum;
  tt_lr_type lr_type;
  float decay_rate, max_lr, min_lr;
  uint32_t decay_steps;
  uint32_t n_steps;
  float step_lr[TT_MAX_STEPS + 1];
  uint32_t step_iter[TT_MAX_STEPS];
} tt_optimizer;

tt_status tt_optimizer_parse (tt_optimizer * o, const tt_section * opt,
    const tt_section * sched, tt_error * err);
/* nntrainer's older form: optimizer, learning_rate, beta1, beta2,
 * epsilon, decay_rate and decay_steps in [Model] */
tt_status tt_optimizer_parse_legacy (tt_optimizer * o,
    const tt_section * model, const tt_section * sched, tt_error * err);
uint32_t tt_optimizer_state_count (const tt_optimizer * o);
float tt_optimizer_learning_rate (const tt_optimizer * o, uint32_t iteration);
void tt_optimizer_apply (const tt_optimizer * o, uint32_t iteration,
    float *restrict w, float *restrict g, float *restrict s0,
    float *restrict s1, size_t n);
/* The coefficients of every update at an iteration (the learning rate,
 * Adam's bias corrections), for tt_optimizer_apply_step: a step updates
 * its weights in many calls (a chunk of a gradient at a time, each split
 * over the threads: the MLP at batch 32, 24 calls a step on one thread,
 * 79 on two), and computing them in each call put pow () at about 1% of a
 * 2-thread run's samples. */
typedef struct {
  tt_optimizer_type type;
  float lr, wd, momentum;
  float beta1, beta2, epsilon, step, inv_bc2, l2, decoupled;    /* adam(w) */
} tt_optimizer_step;
void tt_optimizer_step_at (const tt_optimizer * o, uint32_t iteration,
    tt_optimizer_step * s);
/* tt_optimizer_apply with s's coefficients, the same bit for bit */
void tt_optimizer_apply_step (const tt_optimizer_step * s,
    float *restrict w, float *restrict g, float *restrict s0,
    float *restrict s1, size_t n);

/* ---- training under a memory limit (plan/remat.c) -------------------- */

#define TT_REMAT_WRITERS 8
#define TT_REMAT_TENSORS 12
#define TT_REMAT_INPUTS TT_MAX_IO

/* TT_REMAT_STASH (mixed precision, core/stash.c): kept in the pool at
 * half width (m->activation_type) from the last forward use to the
 * trigger, widened there into the second instance */
typedef enum { TT_REMAT_KEEP = 0, TT_REMAT_RECOMPUTE, TT_REMAT_SWAP,
  TT_REMAT_STASH
} tt_remat_mode;

/* An activation root and what writes it in forward: its layer and the
 * in-place layers after it (writers, in execution order), with the scratch
 * their forward touches (tensors[0] is the root). Dropped (mode not KEEP),
 * every tensor of the group has a first instance that lives over the
 * forward uses only and a second one (twins[k], "<name>:recomputed" or
 * ":swapped") from the trigger (before the backward phases of layer
 * trigger) to its last backward use; the runner points the tensor and its
 * views at the second instance and rebuilds it there: writers' forward
 * again from the inputs (recompute), or read back from the swap file. */
typedef struct {
  int root;
  uint32_t n_writers, n_tensors, n_inputs;
  int writers[TT_REMAT_WRITERS];
  int tensors[TT_REMAT_TENSORS];
  int inputs[TT_REMAT_INPUTS];  /* roots the writers read, not their own */
  const char *not_recomputable; /* why, or NULL */
  bool swappable;
  bool unstashed;               /* kept fp32: its stash raised the pool */
  bool backward_use;            /* some tensor is read in backward */
  bool tried;                   /* planning: already tried keeping again */
  uint64_t cost;                /* forward work of the writers (estimate) */
  tt_remat_mode mode;
  int trigger, trigger_step;    /* layer index and its first backward step */
  int twins[TT_REMAT_TENSORS];  /* -1: none (swap: forward-only scratch) */
  int owner[TT_REMAT_TENSORS];  /* the writer whose forward completes it */
  /* rerun: the first writer's forward runs again before its own backward
   * phases, so the scratch its backward reads (im2col ...) is rebuilt
   * there (late_twins, "<name>:rerun") instead of living from forward or
   * from the trigger; the root and other tensors it writes then get a
   * scrap instance for that step. Independent of mode. */
  bool late, late_ok, tried_late;
  int late_twins[TT_REMAT_TENSORS];
  uint32_t rerun_keep;          /* bit k: late_twins[k] is read afterwards */
  uint64_t cost_first;          /* forward work of the first writer */
  uint64_t swap_offset;         /* in the swap file, of each twin in turn */
  /* stash (mode TT_REMAT_STASH): stash[k], "<name>:stashed", holds
   * tensor k's twin at 2 bytes an element (tt_stash_floats floats); only
   * the root has one (k 0: scratch may hold indices and keeps its whole
   * life), narrowed after the forward of layer stash_layer (its last
   * forward use), widened at the trigger; -1: none */
  int stash[TT_REMAT_TENSORS];
  int stash_layer;
  /* swapped under a half activation type, a group that could be stashed
   * writes its root to the swap file at 2 bytes an element, narrowed
   * in parts through this tensor ("<name>:staging", the floats of
   * tt_swap_staging_elems halves), which lives at the forward step of
   * owner[0] only; -1: none (the file holds fp32) */
  int staging;
  bool root_backward;           /* backward reads the root itself */
} tt_remat;

/* ---- model ----------------------------------------------------------- */

/* One layer's counters while profiling (tt_model_set_profiling): what
 * tt_layer_profile and tt_layer_threads_profile report */
typedef struct {
  uint64_t calls, forward_ns, backward_ns, update_ns;
  uint64_t wait_ns, workers_ns;
} tt_layer_time;

typedef enum { TT_LOSS_NONE, TT_LOSS_MSE, TT_LOSS_CROSS,
  TT_LOSS_CROSS_SOFTMAX, TT_LOSS_CROSS_SIGMOID,
  TT_LOSS_KLD
} tt_loss_type;

struct tt_model {
  char path[4096];
  char dir[4096];
  void *dict;
  char *ini_text;               /* the file as read, for the optimized INI */
  size_t ini_len;
  bool stored_plan;             /* the INI has [Plan] sections */
  tt_plan_mode plan_mode;
  bool plan_thorough;           /* tt_model_set_plan_thorough */
  /* plan for two threads' halves (plan_halves.h): set by compile */
  bool plan_halves;
  uint64_t align;
  tt_plan_info plan;
  uint64_t fingerprint;

  uint32_t batch_size, epochs;
  tt_loss_type loss;
  bool force_input_derivative;
  /* what trains (tt_model_set_train, or a stored plan's [Plan] train):
   * NULL, everything the INI leaves trainable */
  char *train_spec;
  /* inference only (tt_model_set_inference): no gradients, derivatives or
   * optimizer state; forward lifetimes only; train_batch refused */
  bool inference;
  uint64_t seed;
  tt_rng rng;
  tt_optimizer opt;
  /* opt's coefficients for this step's updates (model_backward) */
  tt_optimizer_step opt_step;
  /* [Model] clip_grad_by_norm (0: off): after the backward pass, every
   * gradient scaled by max / (global norm + 1e-6) when that sum exceeds
   * max; gradients then live until the end of the step */
  float clip_grad_norm;
  /* mixed precision (docs/precision.md): [Model] model_tensor_type's
   * weight type (the BIN's width; weights train as fp32 master copies)
   * and activation type (activations kept for backward, the GEMMs'
   * inputs); loss_scale: [Model] loss_scale, 0 when loss scaling is off,
   * else the current scale of dynamic loss scaling */
  tt_precision weight_type, activation_type;
  /* a bench's ablation of a half activation type (tt_half_only_read):
   * which of its two parts apply, the GEMMs' rounded inputs and the
   * stash; both unless TT_HALF_ONLY names one */
  tt_half_only half_only;
  float loss_scale;
  /* dynamic loss scaling (core/loss_scale.c): good steps in a row since
   * the scale last changed, how many double it (2000, nntrainer's; a test
   * hook sets another), the training steps whose update was skipped
   * because a gradient overflowed */
  uint32_t loss_scale_good, loss_scale_interval;
  uint64_t skipped_steps;
  /* update as you go (graph_tensors.c): large gradients of layers that
   * can (tt_layer_ops.chunked_gradient) are computed in chunks, each
   * applied at once, so the gradient is never whole. Decided by the plan
   * (off with clip_grad_by_norm, with tt_model_keep_gradients or
   * tt_model_set_whole_gradients, and for a stored plan without [Plan]
   * update_as_you_go) */
  bool update_as_you_go;
  bool keep_gradients;          /* tt_model_keep_gradients */
  bool whole_gradients;         /* tt_model_set_whole_gradients */
  /* [Model] save_best_path as written, or NULL (tt_model_save_best_path) */
  char *save_best_path;
  /* tt_model_save_best's record: the best validation accuracy and the
   * loss that came with it; none yet: nntrainer's start, 0 and FLT_MAX */
  bool has_best;
  double best_accuracy, best_loss;
  /* the parsed backbone INIs (backbone = X.ini), kept as the model's own */
  void **backbone_dicts;
  uint32_t n_backbone_dicts;

  tt_layer *layers;             /* topological order after compile */
  uint32_t n_layers, cap_layers;
  int loss_layer;
  uint32_t n_inputs;
  int input_layers[TT_MAX_IO];

  int *exec;                    /* layer indices in execution order */

  tt_tensor *tensors;
  uint32_t n_tensors, cap_tensors;
  /* memory limit (plan/remat.c): 0 none; [Model] memory_swap and
   * memory_swap_path (nntrainer's keys); the groups of droppable
   * activations (empty without a limit and without stored decisions),
   * in execution order of their first writer; tensors from n_base_tensors
   * on are second instances */
  uint64_t memory_limit;
  bool memory_swap;
  char *memory_swap_path;
  tt_remat *remat;
  uint32_t n_remat, n_dropped, n_base_tensors;
  int swap_fd;                  /* the unlinked swap file, or -1 */
  bool swap_failed;             /* a read failed mid-step (swap.c) */
  tt_use *uses;
  uint32_t n_uses, cap_uses;
  void *pool;
  uint64_t pool_bytes;
  /* two layouts of the pool (layout_switch.c): every tensor's offset by
   * halves, as planned, and for one thread; NULL when the model has one;
   * laid_inline: the second is in use; layout_force (tests): 0 the
   * pool's choice, 1 the second always, 2 the first always */
  uint64_t *layout_offsets[2];
  bool laid_inline;
  int layout_force;
  uint64_t layout_switches;

  bool tensor_oom;              /* a declaration failed: compile fails */
  int *canonical;               /* layer indices in INI order: BIN layout */

  bool compiled;
  /* bundle_load.c, bundle_write.c: compile leaves the weights to the loader
   * that follows */
  bool defer_init;
  /* bundle_load.c: weights (and moments, when the bundle has them) point into
   * a read-only blob instead of the pool: evaluation only. The pool's
   * weight, optimizer, gradient and derivative regions are left untouched
   * (never zeroed, so never committed). moments_missing: the blob had no
   * moments, so none are saved. */
  bool weights_external;
  bool moments_missing;
  void *map;                    /* a file mapping the model owns, or NULL */
  size_t map_len;
  /* what the layers are given during a step: the batch being processed
   * (run.batch samples), whether labels came with it, ... (model_feed) */
  tt_run_ctx run;
  /* tt_model_set_threads: the threads asked for (0: the process default,
   * tt_set_num_threads) and the pool compile made for them (NULL: one;
   * run.threads points to it) */
  unsigned threads;
  tt_threads *thread_pool;
  float *worker_scratch;        /* the pool's (tt_threads_set_scratch) */
  float *loss_tail_dy;          /* tt_layer.tail_dy (core/loss_tail.c) */
  bool no_fusion;               /* tests: tt_model_set_relu_fusion */
  bool no_loss_tail;            /* tests: tt_model_set_loss_tail */
  double loss_value;            /* the loss layer's forward writes it */
  uint32_t epoch, iteration;
  /* tt_model_set_profiling: profile holds a counter set per layer (by
   * index in layers), made when profiling is turned on after compile or
   * at compile when it was turned on before, and kept when it is turned
   * off (the counters stay readable); while profiling, compiled implies
   * profile != NULL. profile_steps counts the steps whose forward pass
   * began, profile_step_ns their time from call to return. */
  bool profiling;
  tt_layer_time *profile;
  uint64_t profile_steps, profile_step_ns;
  /* feature cache (feature_cache.c): the frozen prefix and its boundary,
   * made by tt_model_feature_boundary, dropped by compile; NULL: none */
  struct tt_fcache *fcache;
};

/* Before compiling: plan whole gradients (no update as you go), each
 * living to the end of the step, so that every weight's gradient is
 * readable after tt_model_gradients (or a training step). A stored plan
 * is not used: it lets later tensors reuse a gradient's bytes. */
tt_status tt_model_keep_gradients (tt_model * m, tt_error * err);
/* Rows of a chunk of a weight gradient of rows x cols floats (update as
 * you go): a multiple of TT_GRAD_CHUNK_QUANTUM (tt_layer.h) near
 * TT_GRAD_CHUNK_FLOATS floats, or 0 (whole) when the chunk would hold
 * every row. */
#define TT_GRAD_CHUNK_FLOATS 12288
uint32_t tt_grad_chunk_rows (uint32_t rows, size_t cols);
/* model_step.c: a training-mode forward (and, when backward, the
 * gradients and derivatives) without any update; for gradient checks and
 * golden tests. loss excludes regularization. */
tt_status tt_model_gradients (tt_model * m, uint32_t n,
    const void *const *inputs, const tt_dtype * types, const float *labels,
    bool backward, double *loss, tt_error * err);

/* The model's own files (core/model*.c), each calling only those below
 * it: model.c (life, compile) calls model_threads.c, model_profile.c and
 * model_weights.c;
 * model_step.c (the steps) calls model_update.c, model_remat.c and
 * model_profile.c; model_remat.c calls model_profile.c. */

/* model_threads.c: (re)makes the pool for the count asked (one thread:
 * none), which weights its threads own, the workers' scratch and the
 * fusions decided with the pool */
tt_status tt_model_make_threads (tt_model * m, tt_error * err);

/* model_profile.c: the counters zeroed, allocated first once the graph is
 * built (compile, or profiling turned on after it): no step allocates */
tt_status tt_model_profile_reset (tt_model * m, tt_error * err);
/* A public step's start: its time counts when its forward pass began
 * (tt_model_profile_end), so the steps and the layers' calls agree. */
typedef struct
{
  uint64_t t0, steps;
} tt_model_profile_mark;
tt_model_profile_mark tt_model_profile_begin (const tt_model * m);
void tt_model_profile_end (tt_model * m, tt_model_profile_mark k);
/* A profiled stretch of a layer (its forward, backward or update): its
 * start on the clock and the pool's sums (tt_threads_times). */
typedef struct
{
  uint64_t t0, wait_ns, workers_ns;
} tt_model_timer;
tt_model_timer tt_model_timer_start (const tt_model * m);
/* The stretch's time; the pool's share of it added to t. */
uint64_t tt_model_timer_stop (const tt_model * m, tt_model_timer k,
    tt_layer_time * t);
/* l's forward, its time added to t */
void tt_model_forward_timed (tt_model * m, tt_layer * l, tt_layer_time * t);

/* model_update.c: the update of l's weights from their gradients
 * (consumed; chunked ones were updated in calc_gradient); the update of
 * a chunk, as tt_run_ctx.apply_chunk (owner: the model); the gradients
 * scaled for clip_grad_by_norm, their loss scale divided out (unscale:
 * 1 / the scale, 1 without loss scaling) */
void tt_model_apply_layer (tt_model * m, tt_layer * l);
void tt_model_apply_chunk (const void *owner, const tt_weight * w,
    size_t at, size_t n, float *grad);
void tt_model_clip_gradients (tt_model * m, float unscale);

/* model_remat.c: before the backward phases of layer, the dropped groups
 * it needs rebuilt (and the reruns it writes first); after backward, the
 * dropped activations back at their first instances */
tt_status tt_model_rebuild (tt_model * m, int layer, tt_error * err);
void tt_model_unbind_dropped (tt_model * m);

/* graph.c */
tt_status tt_graph_build (tt_model * m, tt_error * err);
/* core/train_choice.c: the model's train choice (train_spec, else the
 * INI's [Plan] train) turned into per-weight trainable flags, after the
 * layers' shapes and weights are known and before gradients flow */
tt_status tt_train_choice_apply (tt_model * m, tt_error * err);
/* the choice in effect, as written back to [Plan] train; NULL: everything */
const char *tt_train_choice (const tt_model * m);
tt_layer *tt_model_add_layer (tt_model * m, const char *name,
    const char *section, const tt_layer_ops * ops, tt_error * err);
int tt_model_find_layer (const tt_model * m, const char *name);
/* the one layer reading output 0 of layer index, when that is its only
 * input; else (other readers, other inputs) NULL */
tt_layer *tt_model_sole_consumer (tt_model * m, int index);

/* graph_tensors.c: declares tensors and their uses (after shapes) */
void tt_graph_declare_tensors (tt_model * m);

/* inplace.c */
bool tt_inplace_eligible (const tt_model * m, const tt_layer * l,
    const char **why);
void tt_inplace_decide (tt_model * m);

/* remat.c */
/* The groups of m (m->remat) for the order in m->exec, all kept. */
tt_status tt_remat_groups (tt_model * m, tt_error * err);
/* Declares the second instances of the dropped groups (after their
 * modes are set); lifetimes then follow the decisions. */
tt_status tt_remat_materialize (tt_model * m, tt_error * err);
/* Lifetimes of the tensors under the decisions (tt_lifetimes_compute). */
void tt_remat_lifetimes (tt_model * m);
/* After planning: drops activations until the pool fits m->memory_limit;
 * an error naming the smallest feasible limit when none does. */
tt_status tt_remat_plan (tt_model * m, tt_error * err);
/* The group whose root is tensor id, or -1. */
int tt_remat_find (const tt_model * m, int id);
/* whether g may be stashed (mixed precision): swap could take it and
 * backward reads its root (the stash holds the root only: its layers'
 * scratch may hold indices) */
bool tt_remat_stashable (const tt_remat * g);
/* g's decision as [Plan.Memory] stores it ("recompute, rerun", ...) */
const char *tt_remat_decision (const tt_remat * g);
/* the bytes tensor k of g takes in the swap file when g is swapped: 2
 * an element for the root of a group the model would stash (the
 * stash's rounding), else 4 */
uint64_t tt_remat_swap_bytes (const tt_model * m, const tt_remat * g,
    uint32_t k);

/* stash.c: the stashed groups (mixed precision, docs/precision.md) */
/* whether m stashes its kept activations: a half activation type and
 * training */
bool tt_stash_on (const tt_model * m);
/* the floats of a stash of count 2-byte elements */
static inline size_t
tt_stash_floats (size_t count)
{
  return (count + 1) / 2;
}
/* after layer's forward: the stashed groups it ends the forward uses of,
 * narrowed into their stashes */
void tt_stash_out (tt_model * m, int layer);
/* group g widened from its stash into its second instances */
void tt_stash_in (tt_model * m, const tt_remat * g);
/* n values narrowed to the activation type into y, as the stash does */
void tt_stash_narrow (tt_model * m, const float *x, uint16_t * y, size_t n);
/* x holds n values of the activation type in its first 2 n bytes:
 * widened in place to n floats, as the stash widens them */
void tt_stash_widen_in_place (tt_model * m, float *x, size_t n);

/* the halves a swap staging tensor holds at most: a root of more
 * elements is narrowed and written in parts of this many */
#define TT_SWAP_STAGING_ELEMS 65536
static inline size_t
tt_swap_staging_elems (size_t count)
{
  return count < TT_SWAP_STAGING_ELEMS ? count : TT_SWAP_STAGING_ELEMS;
}

/* swap.c: the swap file of the swapped groups */
tt_status tt_swap_open (tt_model * m, tt_error * err);
/* after layer's forward: what it completed of the swapped groups */
tt_status tt_swap_out (tt_model * m, int layer, tt_error * err);
/* group g back into its second instances */
tt_status tt_swap_in (tt_model * m, const tt_remat * g, tt_error * err);

/* lifetime.c */
int tt_step_of (const tt_model * m, int layer, tt_phase phase);
int tt_phase_rank (const tt_model * m, int layer, tt_phase phase);
void tt_order_apply (tt_model * m, const int *exec);
void tt_lifetimes_compute (tt_model * m);
uint64_t tt_tensor_aligned_bytes (const tt_tensor * t, uint64_t align);

/* plan.c: the search (order, in-place, offsets); plan_ini.c: a plan
 * stored in the INI. The model picks one (model.c), so that neither
 * depends on the other's caller. */
tt_status tt_plan_build (tt_model * m, tt_error * err);
tt_status tt_plan_check_chunks (const tt_model * m, tt_error * err);
void tt_plan_reset (tt_model * m);
double tt_plan_now (void);
uint64_t tt_plan_fingerprint (const tt_model * m);
/* the model holds a stored plan made for its mode, and may use one */
bool tt_plan_ini_serves (const tt_model * m);
/* plans the model from its stored plan, validating it */
tt_status tt_plan_ini_use (tt_model * m, tt_error * err);
tt_status tt_plan_ini_apply (tt_model * m, tt_error * err);
/* the stored plan was made for an inference-only model ([Plan] mode) */
bool tt_plan_ini_inference (const tt_model * m);
/* root tensors as offset-planner intervals; map[i] is interval i's tensor */
tt_interval *tt_plan_intervals (const tt_model * m, uint32_t ** map,
    size_t * n);

bool tt_plan_section_name (const char *section);
/* Fails when model text follows a stored plan in the INI text. */
tt_status tt_plan_text_check (tt_model * m, tt_error * err);

/* tensors.c */
/* Behind a layer's tt_init_ctx: the model whose tensors it declares, and
 * its index for the uses it records */
struct tt_init_owner {
  tt_model *model;
  int layer;
};
int tt_tensor_declare (tt_model * m, const char *layer, const char *suffix,
    tt_tensor_kind kind, size_t count);
/* The root tensor id's view chain ends at (id itself for a root; -1 for
 * -1) */
int tt_tensor_root (const tt_model * m, int id);
int tt_tensor_view (tt_model * m, const char *layer, const char *suffix,
    int root);
void tt_tensor_use (tt_model * m, int id, int layer, tt_phase phase);
/* Allocates the pool of m->pool_bytes and binds every tensor at its
 * offset (views at their root's). */
tt_status tt_tensors_bind (tt_model * m, tt_error * err);

/* The model's kinds of steps (tt_threads_begin): the pool times each
 * kind apart, comparing its split and inline runs among themselves */
enum
{
  TT_MODEL_STEP_TRAIN = 1,
  TT_MODEL_STEP_EVAL,
  TT_MODEL_STEP_GRADIENTS,
};

/* layout_switch.c: after the plan, the second layout of a pool laid out
 * by halves; at a step's start, the layout that fits how it runs; the
 * planned (by halves) offset of tensor i, for the optimized INI */
tt_status tt_layout_prepare (tt_model * m, tt_error * err);
void tt_layout_fit (tt_model * m, unsigned kind);
uint64_t tt_layout_planned_offset (const tt_model * m, uint32_t i);
void tt_layout_free (tt_model * m);

/* relu_fusion.c: with the pool, which relus their dense neighbours do
 * (tt_layer.relu_in_sum, relu_mask_in, relu_fused); none without
 * scratch for the threads, or when activations are dropped or swapped. */
void tt_relu_fuse (tt_model * m);

/* deriv_copies.c: with the pool, after tt_relu_fuse, which small dense
 * layers' input derivatives every thread makes for the owned dense layer
 * reading them (tt_layer.in_deriv_copies, out_deriv_copies), each copy
 * at deriv_copy_at floats into the workers' scratch, from at on; returns
 * the floats the copies need after at (0: none). */
size_t tt_deriv_copies (tt_model * m, size_t at);

/* loss_tail.c: after tt_deriv_copies, which dense layer does the softmax
 * cross-entropy loss after it (tt_layer.loss_tail, loss_in_tail), with
 * the buffer for the loss's derivative (tt_model.loss_tail_dy). */
tt_status tt_loss_tail (tt_model * m, tt_error * err);

static inline float *
tt_data (const tt_model * m, int id)
{
  return id < 0 ? NULL : m->tensors[id].data;
}

/* blas_threads.c: OpenBLAS on one thread unless the environment chose;
 * the engine threads of a model not told its own (tt_set_num_threads) */
void tt_blas_threads_default (void);
int tt_blas_thread_count (void);
/* OpenBLAS's threads, process-wide (tests: a threaded GEMM's plans) */
void tt_blas_set_threads (int threads);
unsigned tt_engine_threads_default (void);

/* init.c */
void tt_initializer_fill (tt_rng * rng, tt_initializer init, float *w,
    size_t n, uint32_t fan_in, uint32_t fan_out);

/* bin.c */
size_t tt_bin_weight_bytes (const tt_model * m);
/* true for optimizers with moments (adam, adamw): a BIN may carry them
 * (ours saves them for adam only, as nntrainer), a bundle does */
bool tt_bin_has_moments (const tt_model * m);
/* the moments a save writes (none for in-place or inference-only models) */
bool tt_bin_saves_moments (const tt_model * m);
/* The tensor ids of a BIN's float regions in file order: the weights, then
 * with moments each trainable weight's two moments. malloc'd; NULL when
 * out of memory (*n = 0 for none). */
int *tt_bin_regions (tt_model * m, bool moments, uint32_t * n);
/* Their names ("layer:suffix", moments "layer:suffix:m" and ":v"), from
 * the layers alone: after tt_graph_build, before any tensor exists. One
 * malloc'd block; NULL when out of memory (*n = 0). */
char **tt_bin_region_names (const tt_model * m, bool moments, uint32_t * n);
/* Which parts a BIN of size bytes holds for this model; an error naming
 * name and the sizes expected when no BIN of this model has that size. */
tt_status tt_bin_layout (tt_model * m, size_t size, const char *name,
    bool *moments, bool *counters, tt_error * err);
/* The message of the refusal to write weights used in place. */
tt_status tt_model_refuse_external (tt_model * m, const char *what,
    tt_error * err);

/* state_check.c: what stored weights, moments and counters may hold. The
 * kinds number as a bundle's index does. */
typedef enum {
  TT_STATE_WEIGHT = 0,
  TT_STATE_ADAM_M = 1,          /* finite, |m| < 2^64 (m * m finite) */
  TT_STATE_ADAM_V = 2,          /* finite, not negative */
} tt_state_kind;
#define TT_STATE_COUNTER_MAX 2147483647u
/* Index of the first of n float32 values (any alignment) a model cannot
 * hold as kind, or n. */
size_t tt_state_find_bad (tt_state_kind kind, const void *data, size_t n);
/* Why the float32 at value is refused, for messages. */
const char *tt_state_why (tt_state_kind kind, const void *value);
/* "FILE: tensor T holds <why> (v) at element i", TT_ERR_PARSE. */
tt_status tt_state_fail (tt_error * err, const char *file,
    const char *tensor, tt_state_kind kind, const void *data, size_t index);
/* Counters read from file: refused above TT_STATE_COUNTER_MAX. */
tt_status tt_state_check_counters (uint32_t epoch, uint32_t iteration,
    const char *file, tt_error * err);
/* Before a save to path: every region it would write can be loaded back;
 * else TT_ERR_NUMERIC naming the tensor. */
tt_status tt_state_check_saveable (tt_model * m, const char *path,
    tt_error * err);

/* feature_cache.c, feature_cache_copy.c: the frozen prefix's boundary
 * tensors. The forward
 * pass of a step with a cache mode (tt_model_train_batch_keep, _cached)
 * calls take after each layer (keep: the boundary values it wrote, to
 * the caller's records) or, for a prefix layer, put instead of its
 * forward (cached: the caller's records into the tensors it writes). */
typedef enum {
  TT_FCACHE_OFF,
  TT_FCACHE_KEEP,
  TT_FCACHE_FROM,
} tt_fcache_mode;
typedef struct tt_fcache {
  bool *prefix;                 /* per layer index */
  uint32_t n_prefix;            /* prefix layers other than inputs */
  uint32_t n;                   /* boundary tensors */
  int *tensor, *producer;       /* each's id and the layer writing it */
  size_t *floats, *at;          /* a sample's floats, offset in a record */
  size_t record;                /* a sample's record: all of them */
  uint64_t fingerprint;
  tt_fcache_mode mode;
  float *const *keep;           /* keep: n records (NULL: not kept) */
  const float *const *from;     /* cached: n records */
} tt_fcache;
void tt_fcache_take (tt_model * m, int layer);
void tt_fcache_put (tt_model * m, int layer);
void tt_fcache_free (tt_model * m);

/* loss_scale.c: dynamic loss scaling (docs/precision.md). At compile,
 * before planning: a model whose activations are half precision scales
 * its loss from 1 when the INI named no scale. tt_model_gradients_whole:
 * every gradient waits, whole, for the end of the step (clip_grad_by_norm
 * or loss scaling). In a training step: the loss's derivative (its input
 * derivatives) multiplied by the scale after the loss's backward; after
 * backward, whether every gradient is finite; then the scale's update
 * (halved, not below 1, and the step counted as skipped on overflow;
 * doubled after loss_scale_interval good steps in a row). */
void tt_loss_scale_compile (tt_model * m);
bool tt_model_gradients_whole (const tt_model * m);
void tt_loss_scale_seed (tt_model * m);
bool tt_loss_scale_finite (tt_model * m);
void tt_loss_scale_update (tt_model * m, bool finite);
/* the gradients multiplied by s, split over the model's threads */
void tt_model_scale_gradients (tt_model * m, float s);
/* precision_spec.c: "fp32", "bf16", "fp16" (the activation type alone)
 * or a full W-A as [Model] model_tensor_type takes it; false when spec is
 * neither. *weight is -1 for the short form. */
bool tt_precision_parse (const char *spec, int *weight, tt_precision * act);
const char *tt_precision_name (tt_precision p);
/* precision_spec.c, for a bench only (docs/precision.md, "MobileNetV2 on
 * upscaled Fashion-MNIST"): TT_HALF_ONLY in the environment, read at
 * compile into m->half_only: "gemm" keeps a half activation type's
 * rounding of the GEMMs' inputs and the stash in fp32, "stash" the
 * stash and the GEMMs in fp32; unset or empty, both. Anything else
 * fails, naming the variable. */
tt_status tt_half_only_read (tt_model * m, tt_error * err);
/* the GEMMs' input format of m (activation_type, unless TT_HALF_ONLY
 * keeps them fp32) */
tt_precision tt_model_gemm_inputs (const tt_model * m);
#define TT_PRECISION_CHOICES "fp32, bf16, fp16, or W-A with W and A each " \
    "FP32, FP16 or BF16 (FP16-FP16, FP32-BF16, ...; nntrainer's W16A16, " \
    "W16A32, W32A16, W32A32)"

#endif
