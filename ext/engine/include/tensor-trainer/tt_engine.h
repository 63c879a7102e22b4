/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer engine: trains a neural network described by an nntrainer
 * INI file, with every tensor of a training step in one memory pool.
 * (tt_bundle.h: models in one file; tt_version.h: the version.)
 *
 * Life of a model:
 *   tt_model_open()          an INI file or a bundle by path, compiled,
 *                            with its weights: the steps below in one call
 *   or, step by step:
 *   tt_model_load_ini()      parse and validate the description
 *   tt_model_set_batch_size() optional, before compile
 *   tt_model_compile()       build the graph, infer shapes, lay out and
 *                            allocate the pool (the only large allocation)
 *   tt_model_init_weights() / tt_model_load_bin()
 *   then:
 *   tt_model_train_batch() / tt_model_eval_batch()   no heap allocation
 *                            (tt_model_set_profiling: their time, layer
 *                            by layer)
 *   tt_model_save_bin()      atomic (write, fsync, rename)
 *   tt_model_save()          a bundle (tt_bundle.h) or, for .bin, a BIN
 *                            (tt_model_check_save_path() before training;
 *                            tt_model_save_with_fallback() at its end)
 *   tt_model_save_best()     after each validation pass: [Model]
 *                            save_best_path, nntrainer's rule
 *   tt_model_free()
 *
 * Every function that can fail returns a tt_status and, when err is not
 * NULL, fills it with a message naming the file, section and key (or
 * tensor) at fault. Nothing here exits or aborts on bad input.
 *
 * Threads. A model belongs to one thread at a time: calls on one model
 * are not synchronized (training and evaluation write its pool, counters
 * and random state), so a program that shares a model between threads
 * locks around every call. Different models are independent and may be
 * loaded, compiled, trained and saved at the same time in different
 * threads (the GStreamer elements do: INI files are parsed without
 * iniparser's process-wide error callback, and the engine keeps no other
 * global state). The exception is tt_set_num_threads(): the default
 * engine thread count is one setting for the whole process; set it
 * before models are compiled. A model's own threads (tt_model_set_threads)
 * work only inside its calls: they sleep between them. tt_status_name() and
 * tt_version() may be called from any thread.
 *
 * Pointers. The engine copies what it is given (paths, names, options,
 * the samples of a batch) and keeps none of the caller's pointers, except
 * a bundle used in place (tt_bundle.h: the mapped file, or the blob given
 * to tt_bundle_load_memory, must stay as it is until tt_model_free). What
 * it returns:
 *   tt_model_output()        points into the model's pool: valid until
 *                            tt_model_free(), overwritten by the next
 *                            train or eval batch (read it before); NULL
 *                            before compile
 *   tt_model_path()          the model's own copy of its path (or name):
 *                            valid until tt_model_free()
 *   tt_layer_profile.name, .type   the model's: valid until tt_model_free()
 *   tt_error.message         the caller's buffer, written only when a call
 *                            fails (read it only then)
 *   tt_status_name(), tt_version()   static strings
 *   tt_plan_ini_text()       malloc'd: the caller frees it
 */
#ifndef TT_ENGINE_H
#define TT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tt_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TT_OK = 0,
  TT_ERR_IO,          /* a file could not be read or written */
  TT_ERR_PARSE,       /* malformed INI, BIN or value */
  TT_ERR_INVALID,     /* well-formed but inconsistent model or argument */
  TT_ERR_NOMEM,
  TT_ERR_STATE,       /* call made in the wrong phase */
  TT_ERR_NUMERIC,     /* NaN or Inf appeared */
} tt_status;

typedef struct {
  tt_status status;
  char message[1024];
} tt_error;

typedef enum {
  TT_DTYPE_FLOAT32 = 0,
  TT_DTYPE_UINT8,
} tt_dtype;

/* Number formats of mixed precision (docs/precision.md): fp32, IEEE
 * half (fp16) and bfloat16 (bf16) */
typedef enum {
  TT_PRECISION_FP32 = 0,
  TT_PRECISION_FP16,
  TT_PRECISION_BF16,
} tt_precision;

/* Per-sample shape, nntrainer's channel:height:width. */
typedef struct {
  uint32_t channel, height, width;
} tt_shape;

typedef struct tt_model tt_model;

/* Figures of one batch. */
typedef struct {
  double loss;            /* mean over the batch, regularization included */
  uint32_t samples;
  uint32_t correct;       /* argmax(output) == argmax(label) */
  /* loss scaling (docs/precision.md): 1 when this training step's
   * gradients overflowed, so that it updated nothing (weights, optimizer
   * state and iteration counter as before it); else 0 */
  uint32_t skipped;
} tt_batch_result;

/* How the pool was laid out. */
typedef enum {
  TT_PLAN_AUTO = 0,   /* use the INI's stored plan (validated), else plan */
  TT_PLAN_REPLAN,     /* ignore a stored plan and plan afresh */
  TT_PLAN_NAIVE,      /* no reuse, no in-place: every tensor its own bytes */
} tt_plan_mode;

/* Figures of the memory plan, in bytes. */
typedef struct {
  uint64_t pool_bytes;        /* the pool allocated */
  uint64_t lower_bound;       /* peak live bytes of the chosen order */
  uint64_t naive_bytes;       /* every tensor its own region */
  uint64_t dfs_pool_bytes;    /* pool for nntrainer's depth-first order */
  uint64_t dfs_lower_bound;
  uint32_t tensors;           /* tensors with memory of their own */
  uint32_t in_place_layers;
  double plan_seconds;        /* planning, or validating a stored plan */
  bool order_exact;           /* the order search was exhaustive */
  bool from_stored_plan;      /* loaded from an optimized INI */
  /* 2: laid out for two threads, each tensor written by samples sharing
   * bytes only with tensors whose halves meet at the same address
   * (docs/architecture.md, "Threads"); 1: for any count */
  uint32_t laid_out_threads;
  uint64_t one_thread_pool_bytes;  /* the pool laid out for any count */
  /* training under a memory limit (tt_model_set_memory_limit) */
  uint64_t memory_limit;      /* 0: none */
  uint64_t unlimited_pool_bytes;  /* the pool the plan would have without
                                   * dropping anything (0: not planned) */
  uint64_t min_pool_bytes;    /* the smallest pool the planner can reach
                               * by dropping activations (0: not searched) */
  uint32_t recomputed;        /* activations recomputed during backward */
  uint32_t swapped;           /* activations spilled to the swap file */
  uint64_t recomputed_bytes;  /* their bytes (with their layers' scratch) */
  uint64_t swapped_bytes;     /* written and read back each step */
  /* mixed precision: activations stashed at half width until backward
   * (docs/precision.md), and their stashes' bytes */
  uint32_t stashed;
  uint64_t stashed_bytes;
} tt_plan_info;

/* Memory figures of a compiled model, in bytes. */
typedef struct {
  size_t pool_bytes;
  size_t weight_bytes;    /* model weights as stored in a BIN */
  size_t tensor_count;
} tt_memory_info;

TT_API const char *tt_status_name (tt_status status);

/* ---- opening a model by path ---------------------------------------- */

/* How a bundle's weights are read (tt_bundle.h). */
typedef enum {
  TT_BUNDLE_READ = 0,   /* read the file: weights go straight into the pool */
  TT_BUNDLE_MMAP,       /* map it, copy the weights into the pool, unmap */
  TT_BUNDLE_IN_PLACE,   /* map it and keep it: weights are used where they
                         * lie (uncompressed only); evaluation only */
} tt_bundle_mode;

/* What a model file is: a bundle (tt_bundle.h) starts with the bundle
 * magic; any other file is read as an INI description. */
typedef enum {
  TT_MODEL_FILE_ANY = 0,        /* options: either will do; info: not known
                                 * (the file could not be opened) */
  TT_MODEL_FILE_INI,
  TT_MODEL_FILE_BUNDLE,
} tt_model_file_kind;

/* How to open a model. Zero-initialized means the defaults: either kind,
 * the file's batch size, a stored plan when it serves, training, no
 * weights file. */
typedef struct {
  tt_model_file_kind kind;      /* the kind the file must be; else refused
                                 * (TT_OPEN_KIND) before it is read */
  uint32_t batch_size;          /* 0: the INI's [Model] batch_size, or the
                                 * batch a bundle was saved for */
  bool inference;               /* tt_model_set_inference */
  tt_plan_mode plan_mode;
  uint32_t alignment;           /* INI only (a bundle's plan brings its
                                 * own): tt_model_set_alignment; 0: 64 */
  uint64_t memory_limit;        /* INI only: tt_model_set_memory_limit;
                                 * 0: none */
  bool has_seed;                /* else the engine's default seed */
  uint64_t seed;
  tt_bundle_mode mode;          /* bundle only (an INI refuses another
                                 * than TT_BUNDLE_READ) */
  bool trust;                   /* bundle only: tt_bundle_load_options */
  const char *weights;          /* then loaded from this BIN or bundle
                                 * (tt_model_load_weights); NULL or "":
                                 * none (a bundle has its own, an INI's are
                                 * initialized) */
  unsigned threads;             /* tt_model_set_threads, before an INI is
                                 * compiled: its pool is then laid out for
                                 * that count; 0: the process default */
  bool plan_thorough;           /* INI only: tt_model_set_plan_thorough */
  const char *train;            /* INI only: tt_model_set_train; NULL or
                                 * "": the stored plan's, else everything */
  /* mixed precision: INI only: tt_model_set_precision; NULL or "": the
   * INI's [Model] model_tensor_type */
  const char *precision;
} tt_open_options;

/* The steps of tt_model_open in order: where it stopped. */
typedef enum {
  TT_OPEN_OK = 0,
  TT_OPEN_KIND,         /* the file is not of options->kind, or an option
                         * does not apply to its kind */
  TT_OPEN_READ,         /* reading and parsing; for a bundle the whole
                         * opening (tt_bundle_load: checked, compiled,
                         * filled) */
  TT_OPEN_SETTINGS,     /* an INI: batch size, seed, plan mode, inference,
                         * alignment refused */
  TT_OPEN_COMPILE,      /* an INI: tt_model_compile */
  TT_OPEN_WEIGHTS,      /* options->weights */
} tt_open_step;

typedef struct {
  tt_model_file_kind kind;      /* what path is (TT_MODEL_FILE_ANY: it
                                 * could not be opened) */
  tt_open_step failed_step;     /* TT_OPEN_OK when a model is returned */
} tt_open_info;

/* Opens the model at path, an INI file or a bundle (told apart by the
 * file's first bytes, whatever its name), as a compiled model with its
 * weights: a bundle's own, else those of options->weights, else
 * initialized. options and info may be NULL. On failure NULL, err says
 * why in the words of the step that failed (the same messages as the
 * calls it makes: tt_model_load_ini, tt_model_compile, tt_bundle_load,
 * tt_model_load_bin, ...) and info->failed_step which step it was. */
TT_API tt_model *tt_model_open (const char *path,
    const tt_open_options * options, tt_open_info * info, tt_error * err);

/* The same for INI text in memory (an imported ONNX model, a linked
 * blob): options as for an INI file (a bundle's refused), name standing
 * for the file in messages. */
TT_API tt_model *tt_model_open_ini_text (const char *text, size_t len,
    const char *name, const tt_open_options * options, tt_open_info * info,
    tt_error * err);

/* Loads weights into a compiled model from a BIN or a bundle, told apart
 * by the file's first bytes (tt_model_load_bin, tt_bundle_load_weights):
 * checked first, so a bad file leaves the model as it was. */
TT_API tt_status tt_model_load_weights (tt_model * model, const char *path,
    tt_error * err);

TT_API tt_model *tt_model_load_ini (const char *path, tt_error * err);
/* The same from INI text in memory (a bundle, a linked blob): no file
 * system needed. name stands for the file in messages. */
TT_API tt_model *tt_model_load_ini_text (const char *text, size_t len,
    const char *name, tt_error * err);
TT_API void tt_model_free (tt_model * model);

/* Overrides [Model] batch_size; only before tt_model_compile(). */
TT_API tt_status tt_model_set_batch_size (tt_model * model, uint32_t batch_size,
    tt_error * err);
/* Seeds weight initialization, dropout masks and anything else random. */
TT_API void tt_model_set_seed (tt_model * model, uint64_t seed);

/* The threads the model's kernels run on, the caller's included: n in
 * [1, 64], or 0 for the process default (tt_set_num_threads, else 1).
 * Before or after compile (the pool is made, or remade, then; its
 * threads sleep between steps). Results are deterministic for a given
 * count; across counts they agree within rounding (docs/architecture.md,
 * "Threads"). */
TT_API tt_status tt_model_set_threads (tt_model * model, unsigned n,
    tt_error * err);
/* The threads the compiled model runs on (before compile: those it will). */
TT_API unsigned tt_model_threads (const tt_model * model);
/* Steps (batches trained, evaluated or differentiated) the model's pool
 * ran split over its threads and on the calling thread alone so far: the
 * pool times steps both ways now and then and keeps the faster
 * (docs/architecture.md, "Split or inline"). 0 and 0 on one thread. */
TT_API void tt_model_thread_steps (const tt_model * model, uint64_t * split,
    uint64_t * inline_steps);

/* Before compile: inference only. The model then keeps no gradients,
 * derivatives or optimizer state, tensors live only as long as the
 * forward pass needs them (a much smaller pool), and train_batch fails.
 * Weights load from the same BIN files and bundles as for training (the
 * optimizer state in them is skipped). A stored plan made for the other
 * mode is not used: the model is planned afresh. */
TT_API tt_status tt_model_set_inference (tt_model * model, bool inference,
    tt_error * err);
TT_API bool tt_model_is_inference (const tt_model * model);

/* Before compile: what trains, without editing the model
 * (docs/personalize.md): "everything" (or NULL: what the INI leaves
 * trainable; a stored plan's [Plan] train when it has one), "biases"
 * (every bias and the gamma and beta of batch and layer normalization),
 * "last:N" (the last N layers with trainable weights, INI order),
 * "layers:A,B" (those layers). The others' weights are frozen: no
 * gradient, no optimizer state, and the plan keeps nothing for a backward
 * pass they do not need. A spelling that is none of these fails here;
 * layer names and N are checked at compile, naming the layers that have
 * trainable weights. */
TT_API tt_status tt_model_set_train (tt_model * model, const char *choice,
    tt_error * err);

/* Before compile: how to lay out the pool, and its alignment (a power of
 * two, default 64; a stored plan brings its own). */
TT_API tt_status tt_model_set_plan_mode (tt_model * model, tt_plan_mode mode,
    tt_error * err);
TT_API tt_status tt_model_set_alignment (tt_model * model, uint32_t alignment,
    tt_error * err);
/* Before compile: when the model is planned (not a stored plan), search
 * longer for offsets that meet the lower bound: up to about a second on
 * a model of a thousand tensors instead of about 10 ms. For plans made
 * once and stored (tensor-trainer plan, tensor_planner). */
TT_API tt_status tt_model_set_plan_thorough (tt_model * model, bool thorough,
    tt_error * err);
/* true when the INI holds a stored plan ([Plan] sections). */
TT_API bool tt_model_has_stored_plan (const tt_model * model);

/* Before compile: the most bytes the pool may take (0, the default: no
 * limit). When the plan exceeds it, activations are dropped after their
 * last forward use and rebuilt during backward, by running their layers'
 * forward again (recomputation) or, with [Model] memory_swap = true, by
 * reading them back from a file in memory_swap_path; training stays bit
 * for bit what it is without the limit. Compiling fails, naming the
 * smallest feasible limit, when no schedule the planner builds fits. A
 * stored plan serves only when its pool fits the limit. */
TT_API tt_status tt_model_set_memory_limit (tt_model * model, uint64_t bytes,
    tt_error * err);
/* The index-th activation the plan rebuilds during backward (0 ..
 * recomputed + swapped - 1, in execution order): its tensor's name, and in
 * *how (may be NULL) the decision as the optimized INI stores it:
 * "recompute", "swap", either followed by ", rerun" (its first layer's
 * forward also runs again before its own backward, to rebuild the scratch
 * that backward reads), or "keep, rerun" (only that); NULL past the end. */
TT_API const char *tt_model_plan_dropped (const tt_model * model,
    uint32_t index, const char **how);

TT_API tt_status tt_model_compile (tt_model * model, tt_error * err);
TT_API void tt_model_plan_info (const tt_model * model, tt_plan_info * info);
/* Writes the model's INI text with its plan appended (the "optimized
 * INI"), atomically. Loading it skips planning and validates the plan. */
TT_API tt_status tt_model_save_plan_ini (tt_model * model, const char *path,
    tt_error * err);
/* The same text in memory (what tt_model_save_plan_ini writes, byte for
 * byte): *text is malloc'd, not NUL-terminated, *len its bytes; the caller
 * frees it. */
TT_API tt_status tt_plan_ini_text (tt_model * model, char **text, size_t *len,
    tt_error * err);
/* The plain INI of an optimized INI's text (issue 16: what nntrainer
 * reads): the plan's marker line and its [Plan], [Plan.Layers] and
 * [Plan.Tensors] sections taken out, a [Model] batch_size the plan changed
 * put back as it was (its "(was: ...)" comment), the rest kept as
 * written. *out is malloc'd and NUL-terminated, *out_len (may be NULL) its
 * bytes; the caller frees it. */
TT_API tt_status tt_ini_strip_plan (const char *text, size_t len, char **out,
    size_t *out_len, tt_error * err);
/* Writes the plain INI of the optimized INI or bundle at path to ini_path
 * and, for a bundle with bin_path not NULL, its weights to bin_path as a
 * BIN (tt_model_save_bin), each atomically. Refuses to write over path,
 * bin_path for an INI (it holds no weights) and text that does not load as
 * a model once stripped. */
TT_API tt_status tt_model_strip (const char *path, const char *ini_path,
    const char *bin_path, tt_error * err);
TT_API tt_status tt_model_init_weights (tt_model * model, tt_error * err);

/* BIN in nntrainer's layout: weights, then for Adam the tag "adam" and the
 * moments, then the epoch and iteration counters. Loading accepts exactly
 * the sizes such a file can have for this model. */
TT_API tt_status tt_model_load_bin (tt_model * model, const char *path,
    tt_error * err);
TT_API tt_status tt_model_save_bin (tt_model * model, const char *path,
    tt_error * err);
/* The same from a BIN in memory (no file system; data needs no alignment):
 * the same exact sizes, the same checks, the model untouched on failure.
 * name stands for the file in messages. */
TT_API tt_status tt_model_load_bin_memory (tt_model * model, const void *data,
    size_t len, const char *name, tt_error * err);

/* Saves the model where path says, by its extension: ".bin" (any case)
 * writes a BIN (tt_model_save_bin); ".ini" is refused (that is the
 * description: see tt_model_save_plan_ini); anything else, ".ttb" and
 * ".bundle" included, writes a bundle (tt_bundle.h: INI text with its
 * plan, weights, optimizer state, counters in one file). Atomic. */
TT_API tt_status tt_model_save (tt_model * model, const char *path,
    tt_error * err);

/* Before a long run: can tt_model_save (path) write there? Refuses a name
 * it would refuse (".ini", a folder, an empty last component) and a folder
 * that does not exist or where no file can be created (one is created and
 * removed: read-only mounts, permissions, quotas). Needs no model. */
TT_API tt_status tt_model_check_save_path (const char *path, tt_error * err);

/* [Model] save_best_path as the INI wrote it, or NULL. nntrainer uses it
 * as given: a relative path is relative to the working directory, not to
 * the INI's folder. */
TT_API const char *tt_model_save_best_path (const tt_model * model);

/* nntrainer's save_best_path: call once after each validation pass, with
 * that pass's mean loss and its accuracy as a fraction of the samples in
 * [0, 1], after tt_model_finish_epoch for the epoch it followed (the BIN's
 * counters are then nntrainer's: that epoch, 1-based, and the iterations
 * so far). Never call it without validation data. The result is the best
 * so far when its accuracy is higher than the best one's, or equal with
 * a lower loss (the first pass is compared with accuracy 0 and the
 * largest float loss); then the model is saved as a BIN (weights, Adam's
 * moments, counters, whatever the name's extension) to save_best_path,
 * atomically, and *saved (when not NULL) says so. Without save_best_path
 * it only keeps the record. The record lives as long as the model; a
 * failed save leaves it as it was. Refuses an accuracy outside [0, 1] or
 * NaN, and a NaN loss. */
TT_API tt_status tt_model_save_best (tt_model * model, double loss,
    double accuracy, bool *saved, tt_error * err);

TT_API uint32_t tt_model_batch_size (const tt_model * model);
TT_API uint32_t tt_model_num_inputs (const tt_model * model);
TT_API tt_status tt_model_input_shape (const tt_model * model, uint32_t index,
    tt_shape * shape);
TT_API tt_shape tt_model_label_shape (const tt_model * model);
TT_API tt_shape tt_model_output_shape (const tt_model * model);
TT_API uint32_t tt_model_epochs (const tt_model * model);   /* [Model] epochs */
TT_API const char *tt_model_path (const tt_model * model);
TT_API void tt_model_memory_info (const tt_model * model,
    tt_memory_info * info);

/* Multiply-adds of one sample's training step after compile: forward, and
 * backward (weight gradients where weights train, input derivatives where
 * they flow); products only (dense, convolution, recurrent, attention
 * layers), element-wise work is not counted. 0 before compile; backward
 * is 0 for an inference-only model. */
TT_API void tt_model_multiply_adds (const tt_model * model,
    uint64_t * forward, uint64_t * backward);

/* One optimization step on n samples (1 <= n <= batch size; a smaller last
 * batch is trained as a smaller batch). inputs[i] holds n samples of input
 * i in dtype types[i] (NCHW, batch outermost); labels holds n samples of the
 * label shape. result may be NULL. */
TT_API tt_status tt_model_train_batch (tt_model * model, uint32_t n,
    const void *const *inputs, const tt_dtype * types, const float *labels,
    tt_batch_result * result, tt_error * err);
/* Forward pass in evaluation mode (moving statistics, no dropout); labels
 * may be NULL, then result only counts samples. */
TT_API tt_status tt_model_eval_batch (tt_model * model, uint32_t n,
    const void *const *inputs, const tt_dtype * types, const float *labels,
    tt_batch_result * result, tt_error * err);
/* Output of the last forward pass: batch x output shape floats. */
TT_API const float *tt_model_output (const tt_model * model);

/* The weights as one flat float array in BIN order (no optimizer state),
 * to hand them from one model to another compiled from the same
 * description (a trainer to a predictor, whatever their plans and batch
 * sizes). The signature hashes the weight tensors' names and sizes: equal
 * signatures mean export from one fits import into the other. Import
 * checks the size; it does not check finiteness. */
TT_API size_t tt_model_weight_floats (const tt_model * model);
TT_API uint64_t tt_model_weight_signature (const tt_model * model);
TT_API tt_status tt_model_export_weights (tt_model * model, float *dst,
    size_t floats, tt_error * err);
TT_API tt_status tt_model_import_weights (tt_model * model, const float *src,
    size_t floats, tt_error * err);

/* ---- profiling: where the time of a step goes ------------------------ */

/* A layer's share of the steps (tt_model_train_batch, tt_model_eval_batch)
 * run since profiling was last turned on: wall time on the calling
 * thread, CLOCK_MONOTONIC, in nanoseconds; with threads
 * (tt_model_set_threads) a layer's time is that of its whole split work,
 * waiting for the slowest thread included. */
typedef struct {
  const char *name;             /* the layer's name: its INI section, or
                                 * for a layer the graph added, its
                                 * parent's with a suffix ("conv1/
                                 * activation", "output/loss") */
  const char *type;             /* its INI type ("conv2d", "activation") */
  uint64_t calls;               /* steps whose forward pass ran it */
  uint64_t forward_ns;          /* its forward, and its forward run again
                                 * during backward to rebuild a dropped
                                 * activation (tt_model_set_memory_limit) */
  uint64_t backward_ns;         /* calc_derivative and calc_gradient; a
                                 * gradient updated chunk by chunk as it is
                                 * computed (update as you go,
                                 * docs/architecture.md) has its update
                                 * here */
  uint64_t update_ns;           /* the optimizer's update of its weights
                                 * (0 for a layer with none to update) */
} tt_layer_profile;

/* The steps as a whole, over the same span. */
typedef struct {
  uint64_t steps;               /* train and eval batches whose forward
                                 * pass began */
  uint64_t step_ns;             /* their time, from call to return */
  uint64_t layer_ns;            /* the layers' forward, backward and update
                                 * times summed */
  uint64_t other_ns;            /* step_ns - layer_ns: feeding the batch,
                                 * scoring it, regularization, gradient
                                 * clipping, swap file reads and writes,
                                 * waking the model's threads */
} tt_profile;

/* Turns profiling on or off, before or after compile. Turning it on
 * resets every counter to zero (and after compile allocates them, one
 * set a layer: the only allocation; steps allocate nothing either way);
 * turning it off stops counting and keeps the counters readable. Off (the
 * default), a step reads no clock: it costs one branch a layer. */
TT_API tt_status tt_model_set_profiling (tt_model * model, bool on,
    tt_error * err);
/* The layers of the compiled model, those the graph added (implicit
 * activations, flattens, multiouts, the loss) included; 0 before
 * compile. */
TT_API uint32_t tt_model_num_layers (const tt_model * model);
/* The index-th layer in execution order (0 is the layer whose forward
 * runs first, the order of tt_model_num_layers' count): TT_ERR_INVALID before compile or past
 * the end, TT_ERR_STATE when profiling was never turned on since compile
 * (no counters); then *out is all zeros (name and type NULL). */
TT_API tt_status tt_model_layer_profile (const tt_model * model,
    uint32_t index, tt_layer_profile * out);
/* The totals, failing as tt_model_layer_profile does (index aside). */
TT_API tt_status tt_model_profile (const tt_model * model, tt_profile * out);

/* The same layer's split jobs on a model of several threads (over the
 * same span; zeros on one thread and in steps the pool ran inline, as
 * docs/architecture.md says): where a layer split over 2 threads takes
 * more than half its one-thread time, a large wait_ns says the threads'
 * parts were uneven (or a thread lost its core), a workers_ns near the
 * layer's own time with little wait that each part ran slower than on
 * its own. */
typedef struct {
  uint64_t wait_ns;             /* the calling thread's time, inside the
                                 * layer's forward_ns, backward_ns and
                                 * update_ns, waiting for the other
                                 * threads' parts once its own were done */
  uint64_t workers_ns;          /* the other threads' time running the
                                 * layer's parts, all of them added */
} tt_layer_threads_profile;

/* The index-th layer's (as tt_model_layer_profile), failing as it does. */
TT_API tt_status tt_model_layer_threads_profile (const tt_model * model,
    uint32_t index, tt_layer_threads_profile * out);

/* Counters stored in the BIN. */
TT_API uint32_t tt_model_epoch (const tt_model * model);
TT_API uint32_t tt_model_iteration (const tt_model * model);
TT_API void tt_model_finish_epoch (tt_model * model);

/* The engine threads of every model compiled after this call that was
 * not given its own (tt_model_set_threads); process-wide, default 1.
 * The GEMM library stays on one thread (the engine splits the work
 * itself) unless OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or
 * OMP_NUM_THREADS is set (blas_threads.c says why). Before this release
 * it set the GEMM library's threads. */
TT_API void tt_set_num_threads (int threads);

/* ---- feature cache: a frozen prefix's outputs kept across epochs ---- */

/* The frozen prefix: the layers none of whose weights trains (the INI's
 * trainable = false, tt_model_set_train) and that are fed by such layers
 * only, from the inputs. Its boundary: the tensors it writes that the
 * rest reads. A sample's record is its boundary values, the tensors one
 * after the other (floats_per_sample floats). fingerprint hashes the
 * boundary's sizes and the prefix's weight values. */
typedef struct {
  uint32_t tensors;             /* boundary tensors */
  uint32_t prefix_layers;       /* layers the cache replaces (no inputs) */
  size_t floats_per_sample;     /* one sample's record */
  uint64_t fingerprint;
} tt_feature_boundary;
/* After compile (and after loading the weights, for the fingerprint).
 * Refused (TT_ERR_INVALID) without a frozen prefix, or when a prefix
 * layer's training forward is not a function of the sample alone (batch
 * normalization's batch statistics, dropout and other random draws),
 * naming the layer; (TT_ERR_STATE) for an inference-only model, under a
 * memory limit, and on more than one thread. */
TT_API tt_status tt_model_feature_boundary (tt_model * model,
    tt_feature_boundary * boundary, tt_error * err);
/* tt_model_train_batch that also writes each sample's record to
 * features[i] (n pointers; a NULL one is not written). */
TT_API tt_status tt_model_train_batch_keep (tt_model * model, uint32_t n,
    const void *const *inputs, const tt_dtype * types, const float *labels,
    float *const *features, tt_batch_result * result, tt_error * err);
/* A training step whose prefix does not run: sample i's boundary values
 * come from features[i], a record tt_model_train_batch_keep wrote with
 * the same prefix weights. The same weights come out, bit for bit, as
 * from tt_model_train_batch on the samples. */
TT_API tt_status tt_model_train_batch_cached (tt_model * model, uint32_t n,
    const float *const *features, const float *labels,
    tt_batch_result * result, tt_error * err);
/* LoRA adapters as files (io/lora_file.c; tensor-trainer lora,
 * docs/personalize.md). Each writes its outputs atomically, refuses to
 * write over an input, and fails with err naming the file, layer or
 * size at fault. OUT.bin is out_ini with .ini replaced by .bin.
 *
 * tt_lora_add: out_ini is ini with lora_rank = rank (and lora_alpha =
 * alpha unless 0) on every fully_connected layer, or on the comma list
 * layers; OUT.bin the weights of ini (weights: a BIN or bundle, NULL:
 * initialized from seed) with fresh adapters drawn from seed.
 * tt_lora_merge: out_ini without the lora keys, OUT.bin with each
 * adapted weight W + s A B (biases as they were).
 * tt_lora_save_adapters: out_bin holds only the adapters, loraA then
 * loraB of each layer with lora_rank in BIN order, float32, no header.
 * tt_lora_apply: OUT.bin is ini's model (it has the lora keys) with the
 * base weights of weights (a BIN of the model without the lora keys, or
 * of ini's model itself) and the adapters of the file adapters; with
 * merge, out_ini and OUT.bin are tt_lora_merge's of that. */
TT_API tt_status tt_lora_add (const char *ini, const char *weights,
    uint32_t rank, uint32_t alpha, const char *layers, uint64_t seed,
    const char *out_ini, tt_error * err);
TT_API tt_status tt_lora_merge (const char *ini, const char *weights,
    const char *out_ini, tt_error * err);
TT_API tt_status tt_lora_save_adapters (const char *ini,
    const char *weights, const char *out_bin, tt_error * err);
TT_API tt_status tt_lora_apply (const char *ini, const char *weights,
    const char *adapters, bool merge, const char *out_ini, tt_error * err);

/* Mixed precision (docs/precision.md). Before compile: the precision to
 * train at over the INI's [Model] model_tensor_type: "fp32", "bf16" or
 * "fp16" set the activation type (the weight type, the BIN's width,
 * stays the INI's), a full "W-A" as model_tensor_type takes it
 * ("FP32-BF16", "W16A16", ...) sets both. Anything else fails naming the
 * allowed values. */
TT_API tt_status tt_model_set_precision (tt_model * model, const char *spec,
    tt_error * err);
/* The model's weight and activation types (after the INI and any
 * override), as model_tensor_type writes them ("FP32-BF16"); buf of at
 * least 10 bytes. */
TT_API const char *tt_model_precision (const tt_model * model, char *buf,
    size_t size);
/* The activation type alone (what tt_precision_note speaks of). */
TT_API tt_precision tt_model_activation_type (const tt_model * model);
/* One sentence on what activation precision p does on this CPU ("bf16:
 * AVX-512 BF16 (vdpbf16ps)", or that a portable path is slower than
 * fp32), for a tool to print once. */
TT_API const char *tt_precision_note (tt_precision p);
/* Dynamic loss scaling: the current scale (0: off), and the training
 * steps skipped so far because their gradients overflowed. */
TT_API float tt_model_loss_scale (const tt_model * model);
TT_API uint64_t tt_model_skipped_steps (const tt_model * model);

/* The activations' bytes a training step holds from forward into backward
 * (their own memory, aligned, live at the last forward step; with a bf16
 * or fp16 activation type, their stashes): the part of the pool the
 * stash halves. 0 for an inference-only or uncompiled model. */
TT_API uint64_t tt_model_held_activation_bytes (const tt_model * model);

/* The pool at its busiest step: the most bytes live at one step of the
 * plan (tensors with memory of their own, aligned as laid out; the pool
 * is at least this, more where lifetimes leave holes), that step, and
 * those bytes by kind. */
typedef struct
{
  uint64_t live_bytes;
  int32_t step;                 /* -1: an uncompiled model */
  uint64_t inputs;              /* inputs and labels */
  uint64_t activations;         /* fp32 (a stash's widened instance too) */
  uint64_t stashed;             /* at half width: stashes, swap staging */
  uint64_t derivatives;
  uint64_t weights;
  uint64_t gradients;
  uint64_t optimizer;           /* its state */
  uint64_t scratch;             /* layers' own: im2col columns, ... */
} tt_pool_peak;
TT_API void tt_model_pool_peak (const tt_model * model, tt_pool_peak * out);

#ifdef __cplusplus
}
#endif
#endif
