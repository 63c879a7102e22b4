/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a layer sees: its ops table, the layer struct, its contexts (init:
 * while the graph is built; run: during a step), tensors, the INI section
 * readers, the shared layer helpers and the kernels layers call. Not the
 * model: layers (layers/) include this header, never tt_internal.h, and
 * the layer_context test checks that they do not name tt_model.
 */
#ifndef TT_LAYER_H
#define TT_LAYER_H

#include "tt_engine.h"
#include "kernels.h"

#define TT_NAME_MAX 96
#define TT_LAYER_NAME_MAX 63    /* leaves room for realized-layer suffixes */
#define TT_TENSOR_NAME_MAX 160
#define TT_MAX_IO 16            /* inputs or outputs of one layer */
#define TT_MAX_WEIGHTS 16        /* multi_head_attention's 8 and its
                                 * LoRA adapters' 8 */
#define TT_MAX_SCRATCH 2

/* Element-wise hot loops are compiled for x86-64-v3 (AVX2 and FMA) and
 * x86-64-v4 (AVX-512) too and the best version is picked at load time by
 * the CPU's features, so one portable binary still uses the wide
 * registers and fused multiply-adds of the machine it runs on. (Clones
 * named "avx2" and "avx512f" got no FMA: AVX2 does not imply it.) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
    && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define TT_VECTOR_CLONES __attribute__ ((target_clones ("default", \
            "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define TT_VECTOR_CLONES
#endif

/* For helpers of hot loops that must be inlined for the loop to
 * vectorize (a macro, which indent reads as one word) */
#define TT_ALWAYS_INLINE static inline __attribute__ ((always_inline))

/* ---- errors ---------------------------------------------------------- */

tt_status tt_fail (tt_error * err, tt_status status, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

/* ---- random numbers: deterministic given the seed -------------------- */

typedef struct {
  uint64_t s[4];
} tt_rng;

void tt_rng_seed (tt_rng * rng, uint64_t seed);
uint64_t tt_rng_next (tt_rng * rng);
float tt_rng_uniform (tt_rng * rng);    /* [0, 1) */
float tt_rng_normal (tt_rng * rng);
/* mask[i] = 0 where the i-th draw of tt_rng_uniform is below rate, else
 * keep: a dropout mask, the same draws as n calls of tt_rng_uniform */
void tt_rng_mask (tt_rng * rng, float *mask, size_t n, float rate,
    float keep);
/* The same draws and rule as tt_rng_mask, kept as one byte an element:
 * mask[i] = 0 where tt_rng_mask writes 0, else 1 (a dropout multiplies
 * by keep where it is 1: tt_dropout_apply) */
void tt_rng_mask_bytes (tt_rng * rng, uint8_t * mask, size_t n, float rate);

/* ---- tensors --------------------------------------------------------- */

typedef enum {
  TT_TENSOR_INPUT,
  TT_TENSOR_LABEL,
  TT_TENSOR_ACTIVATION,
  TT_TENSOR_DERIVATIVE,
  TT_TENSOR_WEIGHT,
  TT_TENSOR_GRADIENT,
  TT_TENSOR_OPTIMIZER,
  TT_TENSOR_SCRATCH,
} tt_tensor_kind;

/* One named region of the pool. Every element is 4 bytes (float or int32).
 * A view (alias_of >= 0) owns no memory and shares its root's data.
 * Lifetime [first_use, last_use] is in execution orders (see graph.c). */
typedef struct {
  char name[TT_TENSOR_NAME_MAX];
  tt_tensor_kind kind;
  /* laid out sample after sample and, on several threads, written by
   * contiguous blocks of samples: inputs, labels, activations, their
   * derivatives, and scratch declared so (tt_init_scratch_by_samples);
   * the pool's layout for two threads keeps such tensors' halves apart
   * (plan_halves.h) */
  bool by_samples;
  size_t count;
  int alias_of;
  int first_use, last_use;
  size_t offset;
  float *data;
} tt_tensor;

/* When a tensor is touched, relative to the layer that touches it. The
 * execution order turns (layer, phase) into a step number (lifetime.c);
 * keeping uses order-free lets the order search evaluate any order. */
typedef enum {
  TT_PHASE_FORWARD = 0,
  TT_PHASE_GRADIENT,
  TT_PHASE_DERIVATIVE,
  TT_PHASE_APPLY,
  TT_PHASE_BEGIN,               /* written before the step: inputs, labels */
  TT_PHASE_ALWAYS,              /* every step: weights, optimizer state */
  TT_PHASE_END,                 /* read after the step: the model output */
} tt_phase;

/* What a layer's backward pass reads besides its output derivative. */
#define TT_READS_INPUT 1u
#define TT_READS_OUTPUT 2u

/* A relu's passes that its dense neighbours make (tt_layer.relu_fused) */
#define TT_FUSED_FORWARD 1u
#define TT_FUSED_BACKWARD 2u

/* ---- layers ---------------------------------------------------------- */

typedef enum {
  TT_ACT_NONE = 0,
  TT_ACT_RELU,
  TT_ACT_LEAKY_RELU,
  TT_ACT_SIGMOID,
  TT_ACT_TANH,
  TT_ACT_SOFTMAX,
  TT_ACT_SWISH,
  TT_ACT_GELU,
  TT_ACT_ELU,
  /* nntrainer's other five, then PyTorch's mobile ones */
  TT_ACT_TANH_GELU,
  TT_ACT_SIGMOID_GELU,
  TT_ACT_SOFTPLUS,
  TT_ACT_SELU,
  TT_ACT_MISH,
  TT_ACT_RELU6,
  TT_ACT_HARD_SWISH,
  TT_ACT_HARD_SIGMOID,
  /* clip to [clip_min, clip_max] (the layer's keys; kernels/clip.c);
   * without them, and in tt_activation_forward, Hardtanh's [-1, 1] */
  TT_ACT_CLIP,
} tt_activation;

/* the last tt_activation */
#define TT_ACT_LAST TT_ACT_CLIP
/* clip's bounds when the keys are not given (nn.Hardtanh's defaults) */
#define TT_CLIP_DEFAULT_MIN -1.0f
#define TT_CLIP_DEFAULT_MAX 1.0f

typedef enum {
  TT_INIT_ZEROS,
  TT_INIT_ONES,
  TT_INIT_LECUN_NORMAL,
  TT_INIT_LECUN_UNIFORM,
  TT_INIT_XAVIER_NORMAL,
  TT_INIT_XAVIER_UNIFORM,
  TT_INIT_HE_NORMAL,
  TT_INIT_HE_UNIFORM,
} tt_initializer;

typedef struct {
  uint32_t c, h, w;
} tt_dims;

static inline size_t
tt_dims_count (tt_dims d)
{
  return (size_t) d.c * d.h * d.w;
}

/* A trainable or stored parameter of a layer. */
typedef struct {
  const char *suffix;           /* "weight", "bias", "moving_mean", ... */
  size_t count;
  tt_initializer init;
  uint32_t fan_in, fan_out;
  bool trainable;               /* has a gradient and optimizer state */
  /* its Adam moments have a place in a BIN: trainable as the INI says,
   * whatever a --train choice froze since (io/bin.c), so that one BIN
   * serves every choice */
  bool file_moments;
  float decay;                  /* per-weight L2 decay (weight_decay key) */
  float l2;                     /* l2norm regularizer constant */
  int value, grad, opt[2];      /* tensor ids, -1 when absent */
  /* update as you go (graph_tensors.c): a layer whose ops say
   * chunked_gradient sets rows (its gradient is rows x count / rows, row
   * major, each row a function of the batch alone); when the plan chunks
   * it, chunk_rows > 0 and the gradient tensor holds chunk_rows rows:
   * calc_gradient computes the rows a chunk at a time and hands each to
   * tt_run_apply_chunk, which updates those elements of the weight */
  uint32_t rows, chunk_rows;
  /* split by rows over the model's threads (set with its pool,
   * core/model_threads.c, for a weight with rows whose products are big
   * enough): thread i computes, applies and reads in forward only its
   * own rows, tt_weight_owned_rows, so that a weight and its optimizer
   * state never leave the core that updates them; on the 2-core machine
   * a product whose weight another core had just written ran no faster
   * on two threads than on one (436 against 323 us), and 2.0 times
   * faster when each thread read only rows it had written itself */
  bool owned;
} tt_weight;

/* Rows of a weight's gradient chunk start on multiples of this (update as
 * you go): OpenBLAS's sgemm kernels tile M by 8, 16 or 24, so a chunk's
 * elements are those of the whole product. */
#define TT_GRAD_CHUNK_QUANTUM 48

/* Where thread parts' rows of an owned weight begin: on multiples of
 * this. Not of TT_GRAD_CHUNK_QUANTUM: the MLP's second layer (256 rows)
 * then split 144 / 112, and its backward took 47.9-51.2 ms of 600 steps
 * at batch 128 on 2 threads against 45.5-48.1 by 128 / 128 (slow; fast:
 * 36.0-37.7 against 31.6-32.5); by 24s, 120 / 136, 50.5-52.8. The
 * products kernels/gemm_avx512.c takes give the same elements whatever
 * their rows; OpenBLAS's Haswell kernels tile rows by 24 (a 256-row
 * product split at 128 rounds some elements otherwise, at 24, 48 or 120
 * not), so there a part's gradient rows may differ from one thread's in
 * rounding, as its forward does anyway (partial sums). */
#define TT_OWNED_ROW_QUANTUM 16

/* Where thread part's rows of an owned weight of rows rows begin among n
 * threads: part * rows / n rounded to the nearest TT_OWNED_ROW_QUANTUM,
 * a tie down (rows itself for part n). Rounded to the nearest, not by
 * whole tiles a part with the first parts taking the extra one: the
 * MLP's first layer split 432 / 352 so, and the caller, doing the bigger
 * part of every owned job, took 1.2-1.3 times the worker's time on each
 * (384 / 400 now; a tie, as the caller's parts take longer than the
 * workers' alike ones). Not tt_threads_range's rule changed for every
 * job: its callers may rely on the empty parts being the last ones (the
 * Winograd layer adds the partials of the first parts that had chunks);
 * rows of at least n * TT_GRAD_CHUNK_QUANTUM (model_threads.c) leave no
 * part empty. */
static inline size_t
tt_weight_owned_start (size_t rows, unsigned part, unsigned n)
{
  if (part >= n)
    return rows;
  const size_t q = TT_OWNED_ROW_QUANTUM;
  const size_t tiles = (rows * part + (size_t) n * q / 2 - 1) /
      ((size_t) n * q);
  return tiles * q < rows ? tiles * q : rows;
}

/* The rows [*r0, *r1) of w that thread part of n owns (tt_weight.owned):
 * contiguous, starting on GEMM row tiles (TT_OWNED_ROW_QUANTUM). */
static inline void
tt_weight_owned_rows (const tt_weight * w, unsigned part, unsigned n,
    size_t *r0, size_t *r1)
{
  *r0 = tt_weight_owned_start (w->rows, part, n);
  *r1 = tt_weight_owned_start (w->rows, part + 1, n);
}

struct tt_layer;
struct tt_section;
struct tt_init_owner;

/* ---- contexts: what a layer's functions are given -------------------- */

/* While the graph is built, one layer at a time: infer (shapes, weights)
 * and declare (scratch tensors and the phases that use them). */
typedef struct {
  const char *path;             /* the model file, for messages */
  uint32_t batch_size;          /* samples per batch the pool is planned for */
  struct tt_init_owner *owner;  /* the model's side (core/tensors.c) */
} tt_init_ctx;

/* declare: a scratch tensor "<layer>:<suffix>" of count floats; its id */
int tt_init_scratch (tt_init_ctx * c, const char *suffix, size_t count);
/* Scratch laid out sample after sample, which the layer's kernels write
 * by contiguous blocks of samples on several threads (tt_tensor.by_samples) */
int tt_init_scratch_by_samples (tt_init_ctx * c, const char *suffix,
    size_t count);
/* Scratch of count elements of 2 bytes (bf16 or fp16: a GEMM's operand
 * in its planned format, tt_init_gemm_inputs), (count + 1) / 2 floats of
 * the pool; read it with tt_run_half. _by_samples: as above. */
int tt_init_scratch_half (tt_init_ctx * c, const char *suffix, size_t count);
int tt_init_scratch_half_by_samples (tt_init_ctx * c, const char *suffix,
    size_t count);
/* Scratch of bytes single bytes (a dropout's mask), rounded up to whole
 * floats of the pool; read it with tt_run_bytes. _by_samples: as above. */
int tt_init_scratch_bytes (tt_init_ctx * c, const char *suffix, size_t bytes);
int tt_init_scratch_bytes_by_samples (tt_init_ctx * c, const char *suffix,
    size_t bytes);
/* declare: the layer touches tensor id in that phase (its lifetime) */
void tt_init_use (tt_init_ctx * c, int id, tt_phase phase);

/* During a step: forward, calc_gradient, calc_derivative. The model fills
 * it once per batch (core/model_step.c); layers read it and keep nothing. */
typedef struct {
  const tt_tensor *tensors;     /* bound to the pool: tt_run_data */
  uint32_t batch;               /* samples in this batch, <= batch_size */
  uint32_t batch_size;          /* samples the pool holds (scratch layout) */
  bool training;                /* forward: batch statistics, dropout */
  /* forward runs again during backward to rebuild a dropped activation
   * (plan/remat.c): same outputs bit for bit, no side effects (batch
   * norm leaves its moving statistics alone) */
  bool recompute;
  bool have_labels;             /* the loss's label tensor holds the batch's */
  tt_rng *rng;                  /* the model's stream (dropout masks) */
  double *loss;                 /* a loss's forward writes the batch's loss */
  /* update as you go: applies the optimizer to elements [offset, offset +
   * n) of w from grad, which holds just those (the gradient tensor, or a
   * thread's own scratch); set by the model (core/model_step.c), NULL when the
   * step does not update; callable from any thread of the pool, for
   * disjoint elements */
  void (*apply_chunk) (const void *owner, const tt_weight * w, size_t offset,
      size_t n, float *grad);
  const void *apply_owner;
  /* the model's thread pool (tt_threads.h), NULL for one thread: kernels
   * split their work over it */
  tt_threads *threads;
  /* mixed precision (docs/precision.md): the format the GEMMs of layers
   * round their inputs to, sums in fp32; TT_PRECISION_FP32 computes as
   * always */
  tt_precision gemm_inputs;
} tt_run_ctx;

/* Hands a computed gradient chunk of w, held in grad, to the optimizer. */
static inline void
tt_run_apply_chunk (const tt_run_ctx * c, const tt_weight * w, size_t offset,
    size_t n, float *grad)
{
  if (c->apply_chunk)
    c->apply_chunk (c->apply_owner, w, offset, n, grad);
}


/* A tensor's data (NULL for id -1, an absent tensor). */
static inline float *
tt_run_data (const tt_run_ctx * c, int id)
{
  return id < 0 ? NULL : c->tensors[id].data;
}

/* A half-width scratch tensor's data (tt_init_scratch_half; NULL for
 * id -1). */
static inline uint16_t *
tt_run_half (const tt_run_ctx * c, int id)
{
  return (uint16_t *) tt_run_data (c, id);
}

/* A byte scratch tensor's data (tt_init_scratch_bytes; NULL for id
 * -1). */
static inline uint8_t *
tt_run_bytes (const tt_run_ctx * c, int id)
{
  return (uint8_t *) tt_run_data (c, id);
}

/* What a layer type is to the code around it (graph, tensors, in-place
 * choices, plan): shared code asks the role, never which ops a layer
 * has. 0 is no role: test_gradcheck's test_layer_traits, which checks
 * every registered type's traits, refuses it. */
typedef enum {
  TT_ROLE_UNSET = 0,
  TT_ROLE_COMPUTE,              /* every other type */
  TT_ROLE_INPUT,                /* a model input: the caller writes its
                                 * output; it takes no input layers */
  TT_ROLE_LOSS,                 /* ends the model: reads the labels, its
                                 * output is the prediction */
  TT_ROLE_MULTIOUT,             /* one tensor read by several layers: an
                                 * output per consumer, their derivatives
                                 * summed into its input's */
  TT_ROLE_ACTIVATION,           /* y = p.act.fn (x), element-wise; its
                                 * activation= key is that function, on
                                 * every other type it adds an activation
                                 * layer after it */
} tt_layer_role;

struct tt_lora_pair;             /* LoRA adapter pairs (below) */
typedef struct tt_layer_ops {
  const char *type;
  tt_layer_role role;
  /* input layers it reads: 0 (input), 1, or TT_MAX_IO (addition,
   * concat); a layer that reads only input 0 must not take more, or the
   * others would never get their derivative */
  uint32_t max_inputs;
  /* a loss's own final function (cross_softmax: softmax, cross_sigmoid:
   * sigmoid): the graph folds a last activation layer of that function
   * into the loss. TT_ACT_NONE for the rest. */
  tt_activation fused_activation;
  /* keys this type accepts beyond the universal ones, NULL-terminated */
  const char *const *keys;
  bool has_weights;             /* accepts the weight keys */
  tt_status (*parse) (struct tt_layer * l, const struct tt_section * s,
      tt_error * err);
  /* output dims from input dims; adds weights (tt_layer_add_weight) */
  tt_status (*infer) (const tt_init_ctx * c, struct tt_layer * l,
      tt_error * err);
  /* declares scratch tensors once activations exist; those put in
   * l->scratch live from forward to calcDerivative, others record their
   * own uses (tt_init_use) */
  void (*declare) (tt_init_ctx * c, struct tt_layer * l);
  void (*forward) (const tt_run_ctx * c, struct tt_layer * l);
  void (*calc_gradient) (const tt_run_ctx * c, struct tt_layer * l);
  void (*calc_derivative) (const tt_run_ctx * c, struct tt_layer * l);
  /* outputs that are views of input 0 (flatten, reshape, multiout, mse) */
  bool output_is_view;
  /* relu (f (x)) = f (relu (x)), and the gradients agree: a ReLU whose
   * only consumer is this layer may run after it instead, on fewer values
   * (max pooling); NULL: never */
  bool (*commutes_with_relu) (const struct tt_layer * l);
  /* TT_READS_* of its backward pass; NULL: neither */
  unsigned (*backward_reads) (const struct tt_layer * l);
  /* may write its output over its input (element-wise, and backward
   * needs no input); NULL: never */
  bool (*can_run_in_place) (const struct tt_layer * l);
  /* calc_gradient honours tt_weight.chunk_rows (update as you go): the
   * gradient of a weight with rows > 0 is computed chunk_rows rows at a
   * time, each chunk by the same arithmetic as in the whole product, and
   * applied (tt_run_apply_chunk) before the next; its calc_derivative
   * then runs before calc_gradient (it reads the weights' old values) */
  bool chunked_gradient;
  /* its outputs are those its consumers name, NAME(idx), as an explicit
   * multiout's: the graph gives it the largest idx named plus one
   * (split, whose infer checks the count) */
  bool outputs_by_reference;
  /* forward draws from the model's random stream (dropout): it is never
   * run twice in a step, so its output is never recomputed (plan/remat.c) */
  bool draws_random;
  /* floats each worker of a pool of threads (>= 2) needs in its scratch
   * (tt_threads_scratch) for the layer's passes at batch_size; NULL: none */
  size_t (*worker_floats) (const struct tt_layer * l, uint32_t batch_size);
  /* The thread fusions (core/relu_fusion.c, deriv_copies.c,
   * loss_tail.c) move work between neighbouring layers' passes; each
   * needs the layers on both sides to do their part, so they ask these,
   * never which type a layer is. */
  /* a product by its weight's rows (y = x W) that does a relu next to it
   * in its own passes: its forward takes the relu of its sum of the
   * threads' partial products when its weight is owned
   * (tt_layer.relu_in_sum), its calc_derivative zeroes its input
   * derivative where its input is not positive (relu_mask_in), the
   * relu's two passes, in data those passes write anyway */
  bool fuses_relu;
  /* multiply-adds of the one product that makes its input derivative
   * (dy W^T) at batch samples: below TT_GEMM_SPLIT_MIN tt_gemm_split
   * leaves it on the caller, where a relu mask runs in its stores
   * (core/relu_fusion.c); NULL: no such product */
  double (*derivative_product) (const struct tt_layer * l, uint32_t batch);
  /* its calc_derivative can make its input derivative on every worker
   * too, each into its own scratch (tt_layer.in_deriv_copies), and, with
   * an owned weight, its parts read their worker's copy of its output
   * derivative (out_deriv_copies): no core then reads what another has
   * just written (core/deriv_copies.c) */
  bool copies_derivative;
  /* with its derivative copies, it can do the loss after it in its own
   * jobs (tt_layer.loss_tail, layers/fc_loss_tail.c) when that loss
   * fits_loss_tail */
  bool runs_loss_tail;
  /* a loss whose work is what a layer that runs_loss_tail does for it:
   * softmax cross-entropy by rows (tt_cross_softmax_loss_rows, its label
   * tensor p.loss.label), and whose own passes do nothing when it is
   * tt_layer.loss_in_tail */
  bool fits_loss_tail;
  /* Multiply-adds of one sample's forward pass (tt_model_multiply_adds):
   * *weighted, of products with the layer's weights, which backward
   * repeats for the weight gradient and for the input derivative;
   * *between, of products of two activations (attention's), which
   * backward repeats for each operand's derivative. Element-wise work is
   * not counted. NULL: none. */
  void (*multiply_adds) (const struct tt_layer * l, uint64_t * weighted,
      uint64_t * between);
  /* the distinct outputs of a compute layer (lstmcell: the hidden and
   * the cell state), 0: one. Input layers name them name(idx); an
   * output after the first that no layer reads is dropped (its
   * derivative is absent: zero), not a second end of the model. A
   * layer's parse may lower tt_layer.n_outputs (multi_head_attention
   * without return_attention_weight has one). */
  uint32_t outputs;
  /* distribute = true (nntrainer's time_dist wrapper: the layer applied
   * to each time step, a height-1 slice, alone) is the layer itself: it
   * acts on each row (c, h) of its input alone (fully_connected,
   * activation); false: the key is refused */
  bool distributes;
  /* feature cache (core/feature_cache.c): why its training forward is
   * not a function of each sample alone (batch statistics, random draws
   * other than draws_random's, state learnt in forward), NULL: it is */
  const char *(*training_varies) (const struct tt_layer * l);
  /* LoRA (layers/lora_proj.c, io/lora_file.c): why this layer cannot
   * take lora_rank (NULL: it can; no hook: a type LoRA does not adapt),
   * and its adapter pairs once it has them (their count, into out,
   * at most TT_LORA_MAX_PAIRS) */
  const char *(*lora_refuses) (const struct tt_layer * l);
  uint32_t (*lora_pairs) (const struct tt_layer * l,
      struct tt_lora_pair * out);
} tt_layer_ops;

typedef struct {
  char name[TT_NAME_MAX];       /* as written, lower-cased */
  uint32_t index;               /* name(idx) */
  int layer;                    /* resolved producer */
} tt_link;

/* Keys of the recurrent layers (lstm, gru) that they share. */
typedef struct {
  uint32_t unit;
  bool return_sequences, integrate_bias;
  tt_activation act, recurrent;
  float dropout;                /* dropout_rate on each step's hidden state */
  tt_rng drop_rng;              /* the generator as the step's mask was
                                 * drawn: a rerun draws it again */
} tt_recurrent;

typedef struct tt_layer {
  char name[TT_NAME_MAX];
  char section[TT_NAME_MAX];    /* INI section it came from */
  const tt_layer_ops *ops;
  int creation;                 /* canonical (INI) order: BIN layout */

  uint32_t n_inputs;
  tt_link inputs[TT_MAX_IO];
  uint32_t n_outputs;
  uint32_t consumers[TT_MAX_IO];        /* per output, during graph build */

  tt_dims in_dims[TT_MAX_IO];
  tt_dims out_dims[TT_MAX_IO];

  bool trainable;
  bool grad_flows;              /* some trainable weight lies at or above */
  bool needs_derivative;        /* calc_derivative must run */
  bool in_place;                /* output (and input derivative) share the
                                 * input's (output derivative's) memory */
  int order;                    /* position in the execution order */
  bool update_in_gradient;      /* a weight's gradient is chunked: the
                                 * update happens inside calc_gradient,
                                 * which runs after calc_derivative */
  /* Set with the pool (core/model_threads.c) on a model input read (through
   * views) by a dense layer alone whose weight the threads own by rows
   * (tt_weight.owned), and on that layer: the input tensor then holds,
   * instead of rows of out_thread_blocks values, each thread's columns
   * (its rows of the weight, tt_weight_owned_start) as a block of its
   * own, rows x its columns at rows x its first column, in thread
   * order; each thread feeds its block (tt_feed) and the dense layer's
   * parts read them, so that no core writes what another reads. */
  uint32_t out_thread_blocks;
  bool in_thread_blocks;
  /* Set with the pool (core/relu_fusion.c): a relu that runs in place
   * next to dense layers whose weights the threads own by rows is done
   * by them, in passes they make anyway over its data, on the cores
   * that hold it: relu_in_sum, on the owned dense layer before, takes
   * relu of its sum of the threads' partial products (the relu's
   * forward); relu_mask_in, on the dense layer after (owned, or whose
   * input derivative is one product on the caller), zeroes the input
   * derivative it wrote where its input is not positive (the relu's
   * backward). relu_fused, on the relu, says which of its passes its
   * neighbours make (TT_FUSED_FORWARD, TT_FUSED_BACKWARD). The same
   * arithmetic, bit for bit. */
  bool relu_in_sum, relu_mask_in;
  unsigned relu_fused;
  /* Set with the pool (core/deriv_copies.c): in_deriv_copies on a dense
   * layer whose input derivative is one product on the caller and is
   * read whole by an owned dense layer's parts (out_deriv_copies, its
   * output derivative): in split steps each worker makes that product
   * too, into its scratch at deriv_copy_at floats, and the owned layer's
   * parts read their worker's copy. The same values, bit for bit. */
  bool in_deriv_copies, out_deriv_copies;
  size_t deriv_copy_at;
  /* Set with the pool (core/loss_tail.c): loss_tail on such a dense
   * layer (in_deriv_copies) whose output a softmax cross-entropy loss
   * alone reads, loss_in_tail on that loss. The dense layer then does
   * the loss's work in its own jobs, by rows of the batch on every
   * thread (layers/fc_loss_tail.c): its product, the softmax, the loss
   * and the loss's derivative in forward, into tail_dy (rows x unit
   * floats the model holds, outside the pool, where each thread reads it
   * whole in backward), and its gradients with its derivative copies in
   * backward; the loss's own passes do nothing. tail_prob and
   * tail_label are the loss's output and label tensors. */
  bool loss_tail, loss_in_tail;
  int tail_prob, tail_label;
  float *tail_dy;

  /* tensor ids */
  int in[TT_MAX_IO], out[TT_MAX_IO];
  int in_deriv[TT_MAX_IO], out_deriv[TT_MAX_IO];
  int scratch[TT_MAX_SCRATCH];

  uint32_t n_weights;
  tt_weight weights[TT_MAX_WEIGHTS];

  /* universal keys, as parsed */
  bool has_input_shape;
  tt_dims input_shape;
  tt_activation post_activation;        /* activation= on a non-activation layer */
  float post_clip[2];           /* its clip_min, clip_max (activation=clip) */
  bool post_flatten;

  /* weight keys */
  tt_initializer weight_init, bias_init;
  bool weight_init_set, bias_init_set;
  float l2_constant;
  float weight_decay, bias_decay;
  bool disable_bias;

  union {
    struct {
      bool normalization, standardization;
      /* this batch's normalization was done by model_feed, converting
       * bytes (tt_feed_bytes_normalized): the layer's forward skips it */
      bool normalized_at_feed;
    } input;
    struct {
      uint32_t unit;
      /* LoRA (layers/fc_lora.c): lora_rank (0: none), lora_alpha (0:
       * not given), the scaling alpha / rank (1 without alpha) */
      uint32_t lora_rank, lora_alpha;
      float lora_scale;
      int lora_h, lora_dh;      /* scratch ids: x A and its derivative */
    } fc;
    struct {
      uint32_t filters, kernel[2], stride[2], dilation[2];
      int padding_mode;         /* 0 valid, 1 same, 2 explicit, 3 causal */
      uint32_t pad[4];          /* top, bottom, left, right */
      tt_window_geom geom;
      int col, gemm_out, dy_grouped;    /* scratch tensor ids */
      int col_back;             /* the weight gradient's columns */
      int col_grad;             /* the input derivative's column gradient */
      /* groups > 1 (grouped, depthwise): the direct grouped kernel
       * (kernels/conv_grouped.c), no scratch; 0 until infer for
       * depthwiseconv2d (its input channels) */
      uint32_t groups;
      /* LoRA on a 1x1 conv2d (layers/conv_lora.c): as p.fc's */
      uint32_t lora_rank, lora_alpha;
      float lora_scale;
      int lora_h, lora_dh;
    } conv;
    struct {
      int kind;                 /* 0 max, 1 average, 2 global max, 3 global avg */
      uint32_t size[2], stride[2];
      int padding_mode;
      uint32_t pad[4];
      tt_window_geom geom;
      /* average: divide by the window's padding too (PyTorch's default;
       * false: the cells inside the input, nntrainer's); ceil_mode:
       * PyTorch's output size rounded up */
      bool count_include_pad, ceil_mode;
    } pool;
    struct {
      tt_dims target;
    } reshape;
    struct {
      tt_activation fn;
      float clip_min, clip_max; /* clip's bounds */
    } act;
    struct {
      float epsilon, momentum;
      int axis;                 /* 1 channel, 2 height, 3 width, 0 auto */
      uint32_t outer, features, inner;  /* per sample */
      tt_initializer init[4];
    } bn;
    struct {
      float rate;
    } dropout;
    struct {
      int axis;                 /* 1 channel, 2 height, 3 width */
    } concat;
    struct {
      int label;                /* label tensor id */
    } loss;
    struct {
      tt_recurrent rec;         /* act: hidden state; recurrent: i f o */
      uint32_t max_timestep;    /* 0: not set; else <= the input's height */
      int carry;                /* scratch tensor id, -1 absent */
      int mask;                 /* dropout mask [B][T][U], -1 absent */
      /* per direction (the reverse one's with bidirectional): scratch
       * tensor ids, -1 absent */
      int gates_d[2], cell_d[2], hidden_d[2];
      bool bidirectional;
      /* zoneout_lstmcell: hidden_state_zoneout_rate, then
       * cell_state_zoneout_rate; test (the masks are weights), timestep
       * (max_timestep above); scratch ids, -1 absent: the masks [2][B][U]
       * drawn in training, the masked state derivatives [2][B][U] */
      float zoneout[2];
      bool zoneout_test;
      uint32_t timestep;
      int zoneout_mask, zoneout_d;
    } lstm;
    struct {
      tt_recurrent rec;         /* act: candidate g; recurrent: z r */
      bool reset_after;
      int gates, hidden, carry;         /* scratch tensor ids, -1 absent */
      int mask;                 /* dropout mask [B][T][U], -1 absent */
    } gru;
    struct {
      float epsilon;
      uint32_t axes;            /* bit a: axis a (1 channel ... 3 width) */
      tt_initializer init[2];   /* gamma, beta */
      uint32_t outer, n, inner; /* per sample: [outer][n][inner] */
    } ln;
    struct {
      uint32_t in_dim, out_dim;
    } emb;
    struct {
      uint32_t max_timestep;
      int table;                /* scratch id: the sinusoids, [h][w] */
      const float *table_at;    /* where they were last computed */
    } pe;
    struct {
      tt_binop op;
      tt_bcast g;               /* the two inputs' broadcast */
    } binop;
    struct {
      tt_unary fn;
      float exponent;           /* pow */
    } unary;
    struct {
      uint32_t axis;            /* 1 channel, 2 height, 3 width, 0 all three */
      bool mean;
      uint32_t outer, r, inner; /* per sample: [outer][r][inner] */
    } reduce;
    /* upsample2d, channel_shuffle, flatten's dimensions */
    struct {
      bool bilinear;            /* else nearest */
      uint32_t scale[2];        /* kernel_size: height, width factors */
    } upsample;
    struct {
      uint32_t groups;          /* split_number; 0 until infer if unset */
    } shuffle;
    struct {
      uint32_t start, end;      /* 1 channel ... 3 width; 0: 1 and 3 */
    } flatten;
    /* tensor-manipulation layers */
    struct {
      tt_dims dim;              /* weight: its dim */
    } weight;
    struct {
      uint32_t perm[3];         /* permute: output axis a is input axis
                                 * perm[a] (0 channel, 1 height, 2 width) */
    } permute;
    struct {
      /* slice and split: axis 1 channel ... 3 width; slice's 0-based
       * [start, end), split's number of parts (0 until infer if unset) */
      uint32_t axis, start, end, number;
    } slice;
    struct {
      uint32_t axis;            /* 1 channel ... 3 width */
      tt_gather_shape g;
    } gather;
    /* centroid_knn (its label tensor first, as the other losses') */
    struct {
      int label;
      uint32_t classes;         /* num_class */
    } knn;
    /* transposed convolution and the preprocessing layers */
    struct {
      uint32_t filters, kernel[2], stride[2], dilation[2];
      int padding_mode;         /* 0 valid, 1 same, 2 explicit */
      uint32_t pad[4];          /* top, bottom, left, right */
      /* the conv2d whose input derivative the forward is: its input is
       * this layer's output (tt_conv_transpose_forward) */
      tt_window_geom geom;
      /* scratch ids: the permuted filter and one sample's columns, of
       * forward and of backward */
      int fwd, bwd;
      uint32_t groups;          /* conv2dtranspose's groups (PyTorch's) */
    } convt;
    struct {
      int direction;            /* flip: 0 horizontal, 1 vertical, 2 both */
      float translate;          /* random_translate: a fraction of the size */
      float epsilon;            /* l2norm */
    } prep;
    /* attention, multi_head_attention */
    struct {
      uint32_t heads, key_dim, value_dim, out_dim;      /* 0 until infer */
      float dropout;
      bool scaled, causal, has_mask;
      uint32_t lq, lk;          /* query and key (value) lengths */
      /* scratch tensor ids, -1 absent: projections [B][L][heads * dim],
       * probs and the dropout's [B][heads][lq][lk], the heads' output
       * (before the output projection) and the derivatives */
      int proj[3], probs, drop, dropped, heads_out;
      int dproj[3], dscores;
      /* personalization: the heads' output derivative apart from the
       * heads' output when no weight gradient reads them (-1: written
       * over heads_out) */
      int dheads;
      /* mixed precision: the format the projections (and, with weight
       * gradients and no LoRA, the heads' output) are held in from
       * forward to backward, TT_GEMM_FP32 or the half format of the
       * planned GEMM inputs (only ever the products' operands); when
       * half, the fp32 scratch of forward alone that the projections'
       * GEMMs write before they are narrowed (proj_wide), and the heads'
       * fp32 output (heads_wide, -1 when the heads are held in fp32);
       * the softmax's fp32 output, probs held at half width after it
       * (probs_wide, -1: probs held in fp32) */
      tt_gemm_inputs held;
      int proj_wide, heads_wide, probs_wide;
      /* the model's generator before the step's dropout draw: a rerun
       * (tt_run_ctx.recompute) draws the same mask into its instance */
      tt_rng drop_rng;
      /* multi_head_attention's return_attention_weight (0 none, 1
       * before, 2 after the dropout) and average_attention_weight */
      int ret_weights;
      bool avg_weights;
      /* LoRA on the four projections (layers/mha_lora.c): rank (0:
       * none), alpha, scale; scratch ids of x A and its derivative, per
       * projection (query, key, value, output) */
      uint32_t lora_rank, lora_alpha;
      float lora_scale;
      int lora_h[4], lora_dh[4];
    } attn;
    /* mol_attention: unit, mol_k, the value's length and width; scratch
     * ids: tanh of the first product [B][unit], kappa | beta | alpha
     * [B][3K], the new state [B][K], the scores [B][T], the derivatives
     * of the sources [B][3K] and of the first product [B][unit] */
    struct {
      uint32_t unit, k, t, d;
      int hidden, proj, m, scores, dproj, dhidden;
    } mol;
    /* the recurrent family: rnn */
    struct {
      tt_recurrent rec;         /* act: hidden state */
      int act, hidden, carry;   /* scratch tensor ids, -1 absent */
      int mask;                 /* dropout mask [B][T][U], -1 absent */
    } rnn;
  } p;
} tt_layer;

/* The function an activation layer (TT_ROLE_ACTIVATION) applies to its
 * input, y = f (x); TT_ACT_NONE for every other layer, whose activation=
 * key made a layer of its own. Code that does an activation's work
 * elsewhere (core/relu_fusion.c) asks this, not the layer's parameters. */
static inline tt_activation
tt_layer_activation (const tt_layer * l)
{
  return l->ops->role == TT_ROLE_ACTIVATION ? l->p.act.fn : TT_ACT_NONE;
}

/* ---- INI sections (io/ini_section.c) --------------------------------- */

typedef struct tt_section {
  const char *file;
  const char *name;             /* lower-cased by iniparser */
  void *dict;                   /* iniparser dictionary */
} tt_section;

/* Value readers: each reports "<file>: [<section>] <key>: ..." on error.
 * They return TT_OK and leave *out untouched when the key is absent. */
bool tt_section_has (const tt_section * s, const char *key);
const char *tt_section_string (const tt_section * s, const char *key);
tt_status tt_section_uint (const tt_section * s, const char *key,
    uint32_t min, uint32_t max, uint32_t * out, tt_error * err);
tt_status tt_section_float (const tt_section * s, const char *key,
    float *out, tt_error * err);
tt_status tt_section_bool (const tt_section * s, const char *key,
    bool *out, tt_error * err);
/* Comma-separated unsigned list; n_out gets the number of items read. */
tt_status tt_section_uint_list (const tt_section * s, const char *key,
    uint32_t min, uint32_t max, uint32_t * out, uint32_t max_items,
    uint32_t * n_out, tt_error * err);
tt_status tt_section_enum (const tt_section * s, const char *key,
    const char *const *names, int *out, tt_error * err);
tt_status tt_section_error (const tt_section * s, const char *key,
    tt_error * err, tt_status status, const char *fmt, ...)
    __attribute__ ((format (printf, 5, 6)));

extern const char *const tt_activation_names[];
/* clip_min and clip_max (activation = clip): into bounds (left as they
 * are when absent); refused on another function, or unordered */
tt_status tt_clip_parse (const tt_section * s, tt_activation fn,
    float bounds[2], tt_error * err);
extern const char *const tt_initializer_names[];
tt_status tt_section_dims (const tt_section * s, const char *key,
    tt_dims * out, tt_error * err);

/* Adds a weight to l; count elements, fans for the initializer. */
tt_weight *tt_layer_add_weight (tt_layer * l, const char *suffix,
    size_t count, tt_initializer init, uint32_t fan_in, uint32_t fan_out,
    bool trainable);

/* window_props.c: keys and geometry shared by conv2d, conv1d and
 * pooling2d */
tt_status tt_window_pair (const tt_section * s, const char *key,
    uint32_t min, uint32_t out[2], tt_error * err);
tt_status tt_window_padding (const tt_section * s, int *mode,
    uint32_t pad[4], tt_error * err);
/* conv1d's padding, nntrainer's Padding1D: valid, same, causal (the
 * whole of same's total on the left), P (both sides) or LEFT,RIGHT;
 * mode 0, 1, 3 or 2 with pad[2], pad[3] set */
tt_status tt_window_padding1d (const tt_section * s, int *mode,
    uint32_t pad[4], tt_error * err);
tt_status tt_window_setup (const tt_init_ctx * c, const tt_layer * l,
    tt_window_geom * g, const uint32_t kernel[2], const uint32_t stride[2],
    const uint32_t dilation[2], int mode, const uint32_t pad[4],
    tt_error * err);

/* recurrent.c: the keys and weights the recurrent layers share; type
 * names the layer in messages, gates is 4 (lstm) or 3 (gru) */
tt_status tt_recurrent_parse (const tt_section * s, const char *type,
    tt_recurrent * r, tt_error * err);
void tt_recurrent_copy_bias_grad (const tt_run_ctx * c, const tt_weight * w,
    uint32_t n_weights);
void tt_recurrent_multiply_adds (const tt_layer * l, uint64_t * weighted,
    uint64_t * between);
tt_status tt_recurrent_infer (const tt_init_ctx * c, tt_layer * l,
    const char *type, const tt_recurrent * r, uint32_t gates, tt_error * err);
/* Where the kernels keep h_t of sample b: hidden + b * h_ld + t * h_step,
 * the output with return_sequences, the hidden_id scratch when backward
 * needs every step, else the output's one row per sample (h_step 0). */
void tt_recurrent_hidden (const tt_run_ctx * c, const tt_layer * l,
    const tt_recurrent * r, int hidden_id, float **hidden, int *h_ld,
    int *h_step);
/* With the hidden_id scratch: its last step into the output. */
void tt_recurrent_last_step (const tt_run_ctx * c, const tt_layer * l,
    const tt_recurrent * r, int hidden_id, int batch);
/* dropout_rate: the mask scratch [B][T][U] (-1 without dropout), and in
 * a step the mask to apply (NULL outside training); a forward that is
 * not a recompute draws it from the model's stream first */
int tt_recurrent_declare_mask (tt_init_ctx * c, const tt_layer * l,
    const tt_recurrent * r, bool backward, tt_phase bptt);
const uint8_t *tt_recurrent_mask (const tt_run_ctx * c, int mask_id);
/* what a kept element of the mask multiplies by, 1 / (1 - dropout_rate) */
float tt_recurrent_keep (const tt_recurrent * r);
/* forward: draws the step's mask (a rerun draws the same one again) */
void tt_recurrent_draw_mask (const tt_run_ctx * c, const tt_layer * l,
    tt_recurrent * r, int mask_id);
/* feature cache: a recurrent layer with dropout_rate draws its masks in
 * training (the training_varies trait's reason), NULL without */
const char *tt_recurrent_varies (const tt_recurrent * r);
/* the recurrent cells: n inputs, the input 1:1:features then the
 * states 1:1:unit (nntrainer's order) */
tt_status tt_cell_check_inputs (const tt_init_ctx * c, const tt_layer * l,
    uint32_t n, uint32_t unit, tt_error * err);

/* layer registry (layers.c): TT_LAYER_TYPES types, whose ops are
 * declared here; a new type adds its ops here and to layers.c's table,
 * whose size is checked against this count when it compiles */
#define TT_LAYER_TYPES 59
const tt_layer_ops *tt_layer_ops_find (const char *type);
/* the i-th registered type, NULL from TT_LAYER_TYPES on */
const tt_layer_ops *tt_layer_ops_at (uint32_t i);
/* How model_feed converts an input layer's batch (layers/input_feed.c) */
typedef enum {
  TT_FEED_FLOATS,               /* copied, non-finite values found */
  TT_FEED_BYTES,                /* bytes to floats */
  /* bytes to floats in [0, 1], the batch's minimum to 0 and maximum to
   * 1, as the layer's forward would normalize their float values */
  TT_FEED_BYTES_NORMALIZED,
} tt_feed_kind;

/* n values of src converted into dst, split over pool's threads (NULL:
 * the caller alone); with blocks_width (tt_layer.out_thread_blocks), as
 * each thread's block of the columns of rows of that width. Returns the
 * (row-major) index of the first non-finite float, or n. */
size_t tt_feed (tt_threads * pool, tt_feed_kind kind, const void *src,
    size_t n, size_t blocks_width, float *dst);

extern const tt_layer_ops tt_input_layer_ops, tt_fc_layer_ops,
    tt_conv2d_layer_ops, tt_conv1d_layer_ops, tt_pooling2d_layer_ops,
    tt_flatten_layer_ops,
    tt_reshape_layer_ops, tt_activation_layer_ops, tt_batchnorm_layer_ops,
    tt_dropout_layer_ops, tt_addition_layer_ops, tt_concat_layer_ops,
    tt_multiout_layer_ops, tt_mse_layer_ops, tt_cross_softmax_layer_ops,
    tt_cross_sigmoid_layer_ops, tt_lstm_layer_ops, tt_gru_layer_ops;
/* convolutions (layer_conv2d.c) */
extern const tt_layer_ops tt_depthwiseconv2d_layer_ops;
extern const tt_layer_ops tt_layer_normalization_layer_ops,
    tt_embedding_layer_ops, tt_positional_encoding_layer_ops;
/* nntrainer's operation layers (layer_binary_ops.c, layer_unary_ops.c,
 * layer_reduce.c) */
extern const tt_layer_ops tt_add_layer_ops, tt_subtract_layer_ops,
    tt_multiply_layer_ops, tt_divide_layer_ops, tt_pow_layer_ops,
    tt_sqrt_layer_ops, tt_sin_layer_ops, tt_cos_layer_ops, tt_tan_layer_ops,
    tt_negative_layer_ops, tt_identity_layer_ops, tt_reduce_mean_layer_ops,
    tt_reduce_sum_layer_ops;
/* layer_resample.c */
extern const tt_layer_ops tt_upsample2d_layer_ops,
    tt_channel_shuffle_layer_ops;
/* tensor-manipulation layers (layer_weight.c, layer_matmul.c,
 * layer_cast.c, layer_gather.c, layer_slice.c: slice and split,
 * layer_permute.c) */
extern const tt_layer_ops tt_weight_layer_ops, tt_matmul_layer_ops,
    tt_cast_layer_ops, tt_gather_layer_ops, tt_slice_layer_ops,
    tt_split_layer_ops, tt_permute_layer_ops;
/* the rest of nntrainer's set (layer_kld.c, layer_constant_derivative.c,
 * layer_centroid_knn.c) */
extern const tt_layer_ops tt_kld_layer_ops,
    tt_constant_derivative_layer_ops, tt_centroid_knn_layer_ops;
/* transposed convolution and the preprocessing layers
 * (layer_conv2d_transpose.c, layer_preprocess_*.c) */
extern const tt_layer_ops tt_conv2d_transpose_layer_ops,
    tt_preprocess_flip_layer_ops, tt_preprocess_translate_layer_ops,
    tt_preprocess_l2norm_layer_ops;
/* attention: layer_attention.c, layer_multi_head_attention.c */
extern const tt_layer_ops tt_attention_layer_ops,
    tt_multi_head_attention_layer_ops;
/* the recurrent family (layer_rnn.c, layer_rnncell.c, layer_lstmcell.c) */
extern const tt_layer_ops tt_rnn_layer_ops, tt_rnncell_layer_ops,
    tt_lstmcell_layer_ops;
/* the recurrent family's last cells (layer_grucell.c,
 * layer_zoneout_lstmcell.c) */
extern const tt_layer_ops tt_grucell_layer_ops,
    tt_zoneout_lstmcell_layer_ops;
/* mixture-of-logistics attention (layer_mol_attention.c) */
extern const tt_layer_ops tt_mol_attention_layer_ops;
/* LoRA adapters (fc_lora.c): lora_rank and lora_alpha read into p.fc
 * (max: the largest rank); a fully_connected with a rank takes
 * tt_fc_lora_layer_ops (layer_fc.c, not in the registry), whose infer
 * calls tt_lora_fc_weights (the base weight and bias frozen, loraA
 * [in][rank] and loraB [rank][unit] after them) and whose passes are
 * these */
tt_status tt_lora_parse (tt_layer * l, const tt_section * s, uint32_t max,
    tt_error * err);
tt_status tt_lora_fc_weights (const tt_init_ctx * c, tt_layer * l,
    tt_error * err);
void tt_lora_fc_declare (tt_init_ctx * c, tt_layer * l);
void tt_lora_fc_forward (const tt_run_ctx * c, tt_layer * l);
void tt_lora_fc_gradient (const tt_run_ctx * c, tt_layer * l);
void tt_lora_fc_derivative (const tt_run_ctx * c, tt_layer * l);
unsigned tt_lora_fc_backward_reads (const tt_layer * l);
void tt_lora_fc_multiply_adds (const tt_layer * l, uint64_t * weighted,
    uint64_t * between);
extern const tt_layer_ops tt_fc_lora_layer_ops;
/* LoRA beyond fully_connected (lora_proj.c, mha_lora.c, conv_lora.c):
 * an adapter pair of a layer: weight indices of the base weight, of A
 * [k][rank] and of B [rank][n]; the base is [k][n] (x W), or [n][k]
 * when transposed (a 1x1 conv2d's filter [F][C]); merged it is
 * W + scale A B (or its transpose) */
#define TT_LORA_MAX_PAIRS 4
typedef struct tt_lora_pair {
  uint32_t base, a, b;
  uint32_t k, n, rank;
  float scale;
  bool transposed;
} tt_lora_pair;
/* lora_rank (0 .. max) and lora_alpha of section s, and the scale */
tt_status tt_lora_keys (const tt_section * s, uint32_t max, uint32_t * rank,
    uint32_t * alpha, float *scale, tt_error * err);
/* adapters A [k][rank] (zeros) and B [rank][n] (lecun normal) added to
 * l, named a_name and b_name (static strings: the weights keep them) */
void tt_lora_add_pair (tt_layer * l, const char *a_name, const char *b_name,
    uint32_t k, uint32_t n, uint32_t rank);
/* rows x k by k x n products of one adapted projection (arrays in,
 * arrays out): forward y += s (x A) B keeping h = x A; backward dh =
 * s dy B^T, dB = s h^T dy and dA = x^T dh (either NULL: skipped), and
 * dx += dh A^T */
void tt_lora_proj_forward (tt_threads * pool, int rows, int k, int n, int r,
    float s, const float *x, const float *a, const float *b, float *h,
    float *y);
void tt_lora_proj_dh (tt_threads * pool, int rows, int n, int r, float s,
    const float *dy, const float *b, float *dh);
void tt_lora_proj_grads (tt_threads * pool, int rows, int k, int n, int r,
    float s, const float *x, const float *dy, const float *h,
    const float *dh, float *da, float *db);
void tt_lora_proj_input (tt_threads * pool, int rows, int k, int r,
    const float *dh, const float *a, float *dx);
/* fully_connected's pairs and refusal (fc_lora.c) */
const char *tt_lora_fc_refuses (const tt_layer * l);
uint32_t tt_lora_fc_pairs (const tt_layer * l, tt_lora_pair * out);
/* multi_head_attention's adapters (mha_lora.c): its keys' parse, the
 * adapters after its weights (infer), their scratch (declare) */
tt_status tt_mha_lora_parse (tt_layer * l, const tt_section * s,
    tt_error * err);
tt_status tt_mha_lora_weights (const tt_init_ctx * c, tt_layer * l,
    tt_error * err);
uint32_t tt_mha_lora_pairs (const tt_layer * l, tt_lora_pair * out);
const char *tt_mha_lora_refuses (const tt_layer * l);
/* conv2d 1x1's adapters (conv_lora.c): parse (after conv's), infer
 * (after conv's: refuses other kernels), and the passes added to conv's */
tt_status tt_conv_lora_parse (tt_layer * l, const tt_section * s,
    tt_error * err);
tt_status tt_conv_lora_weights (const tt_init_ctx * c, tt_layer * l,
    tt_error * err);
void tt_conv_lora_declare (tt_init_ctx * c, tt_layer * l);
void tt_conv_lora_forward (const tt_run_ctx * c, tt_layer * l);
void tt_conv_lora_gradient (const tt_run_ctx * c, tt_layer * l);
void tt_conv_lora_derivative (const tt_run_ctx * c, tt_layer * l);
uint32_t tt_conv_lora_pairs (const tt_layer * l, tt_lora_pair * out);
const char *tt_conv_lora_refuses (const tt_layer * l);

/* layer_loss.c: softmax cross-entropy over rows of width values, from
 * the logits x and their softmax p: the sum over rows of -sum t log p,
 * and its derivative dx = scale * (p sum (t) - t) */
double tt_cross_softmax_loss_rows (const float *x, const float *p,
    const float *t, size_t rows, size_t width);
void tt_cross_softmax_derivative_rows (const float *p, const float *t,
    float *dx, size_t rows, size_t width, float scale);

/* fc_loss_tail.c: a dense layer's forward and backward with its loss
 * (tt_layer.loss_tail) */
void tt_fc_loss_tail_forward (const tt_run_ctx * c, const tt_layer * l);
void tt_fc_loss_tail_backward (const tt_run_ctx * c, const tt_layer * l);

/* activation.c */
#define TT_LEAKY_RELU_SLOPE 0.01f
void tt_activation_forward (tt_activation fn, size_t rows, size_t width,
    const float *x, float *y);
/* dx = f'(x) * dy, given x and y = f(x); dx may equal dy. */
void tt_activation_backward (tt_activation fn, size_t rows, size_t width,
    const float *x, const float *y, const float *dy, float *dx);
/* The same, split over pool's threads (NULL: inline) when large enough
 * to pay (TT_ACTIVATION_SPLIT_MIN elements): results are the serial
 * ones bit for bit (element-wise, softmax by whole rows). */
#define TT_ACTIVATION_SPLIT_MIN 16384
void tt_activation_forward_split (tt_threads * pool, tt_activation fn,
    size_t rows, size_t width, const float *x, float *y);
void tt_activation_backward_split (tt_threads * pool, tt_activation fn,
    size_t rows, size_t width, const float *x, const float *y,
    const float *dy, float *dx);

/* lstm.c: nntrainer's LSTM over a batch-major sequence x [B][T][F].
 * Gates are laid out i, f, g, o along 4U; w_ih is [F][4U], w_hh [U][4U];
 * gates [B][T][4U] and cells [B][T][U] hold every step. The hidden state
 * h_t of sample b lives at hidden + b * h_ld + t * h_step (h_step 0: one
 * row per sample, overwritten each step). */
typedef struct {
  int batch, steps, features, unit;
  tt_activation act, recurrent;
  const float *w_ih, *w_hh;
  const float *bias[2];         /* added to every step's gates; NULL: none */
  float *gates, *cell, *hidden;
  int h_ld, h_step;
  /* dropout_rate: h_t = (the cell's h_t) * (mask_t ? mask_keep : 0.0f),
   * a byte mask [B][T][U] (tt_dropout_apply), fed to the next step and
   * the output alike; NULL: none */
  const uint8_t *mask;
  float mask_keep;
  /* the model's pool: GEMMs split by tt_gemm_split, each step's cells by
   * samples (bit-identical; NULL: one thread) */
  tt_threads *threads;
  /* a bidirectional lstm's second direction: the steps from T - 1 down
   * to 0 (state positions unchanged); dy_width: the floats of one
   * position of dy ([B][T][dy_width] or [B][dy_width], both directions'
   * derivatives side by side), 0: unit */
  bool reverse;
  int dy_width;
  /* lstmcell: the initial states [B][U] (NULL: zeros) and the last cell
   * state's derivative [B][U] (NULL: zeros) */
  const float *h0, *c0, *dc_last;
} tt_lstm;

void tt_lstm_forward (const tt_lstm * s, const float *x);
/* Backpropagation through time: writes d loss / d (gate pre-activation)
 * over the kept gates. dy: [B][T][U] (sequences) or [B][U] (last step
 * only); carry: 2 * B * U floats. */
void tt_lstm_bptt (const tt_lstm * s, const float *dy, bool sequences,
    float *carry);
/* After tt_lstm_bptt: the weight gradients (written, not added); db: the
 * bias gradient [4U] or NULL. */
void tt_lstm_weight_grads (const tt_lstm * s, const float *x, float *dw_ih,
    float *dw_hh, float *db);
/* After tt_lstm_bptt: dx [B][T][F] (add: added to dx). */
void tt_lstm_input_grad (const tt_lstm * s, float *dx, bool add);
/* After tt_lstm_bptt, with h0: dh0 [B][U] (dc0 is the carry's second
 * half, carry + B * U). */
void tt_lstm_state_grad (const tt_lstm * s, float *dh0);

/* gru.c: nntrainer's GRU over a batch-major sequence x [B][T][F], with
 * gates z (update), r (reset), g (candidate) along 3U: w_ih is [F][3U],
 * w_hh [U][3U]. bias_ih [3U] (or integrate_bias's bias_h) and bias_hh [3U]
 * (NULL: none). gates [B][T][4U] holds every step, four slots of U:
 * z, r, then with reset_after hn = h_{t-1} W_hg + b_hg and g, without it
 * g and r * h_{t-1}. The hidden state h_t of sample b lives at hidden +
 * b * h_ld + t * h_step (h_step 0: one row per sample, overwritten each
 * step; backward needs every step's). */
typedef struct {
  int batch, steps, features, unit;
  tt_activation act, recurrent;
  bool reset_after;
  const float *w_ih, *w_hh;
  const float *bias_ih, *bias_hh;
  float *gates, *hidden;
  int h_ld, h_step;
  const uint8_t *mask;          /* as tt_lstm's */
  float mask_keep;
  tt_threads *threads;          /* as tt_lstm's */
  /* grucell: the initial state [B][U] (NULL: zeros) */
  const float *h0;
} tt_gru;

void tt_gru_forward (const tt_gru * s, const float *x);
/* Backpropagation through time: writes d loss / d (pre-activation) over
 * the z, r and g slots (and d loss / d hn over hn). dy: [B][T][U]
 * (sequences) or [B][U] (last step only); carry: 2 * B * U floats. */
void tt_gru_bptt (const tt_gru * s, const float *dy, bool sequences,
    float *carry);
/* After tt_gru_bptt: the weight gradients (written, not added); db_ih,
 * db_hh: [3U] each or NULL (integrate_bias: db_ih only). */
void tt_gru_weight_grads (const tt_gru * s, const float *x, float *dw_ih,
    float *dw_hh, float *db_ih, float *db_hh);
/* After tt_gru_bptt: dx [B][T][F]. */
void tt_gru_input_grad (const tt_gru * s, float *dx);
/* After tt_gru_bptt, with h0: dh0 [B][U] from the carry tt_gru_bptt
 * left. */
void tt_gru_state_grad (const tt_gru * s, const float *carry, float *dh0);
/* layer_lstmcell.c: what zoneout_lstmcell shares with lstmcell (p.lstm):
 * its infer (type names it in messages), scratch, forward, and backward
 * passes from the derivatives of the new hidden and cell states (dc
 * NULL: zeros) */
tt_status tt_lstmcell_infer (const tt_init_ctx * c, tt_layer * l,
    const char *type, tt_error * err);
void tt_lstmcell_declare (tt_init_ctx * c, tt_layer * l);
void tt_lstmcell_forward (const tt_run_ctx * c, tt_layer * l);
void tt_lstmcell_gradient (const tt_run_ctx * c, tt_layer * l,
    const float *dh, const float *dc);
void tt_lstmcell_derivative (const tt_run_ctx * c, tt_layer * l,
    const float *dh, const float *dc);

/* maxpool2x2.c: the 2x2, stride 2, unpadded case of tt_maxpool_forward */
bool tt_maxpool2x2_applies (const tt_window_geom * g);
void tt_maxpool2x2_forward (const tt_window_geom * g, int batch,
    const float *x, float *y, uint8_t * argmax);

/* the recurrent family. rnn.c: nntrainer's rnn over a batch-major
 * sequence x [B][T][F]: w_ih [F][U], w_hh [U][U]; act_out [B][T][U]
 * holds every step's activated values (before the mask); the hidden
 * state h_t of sample b lives at hidden + b * h_ld + t * h_step as
 * tt_lstm's. */
typedef struct {
  int batch, steps, features, unit;
  tt_activation act;
  const float *w_ih, *w_hh;
  const float *bias[2];         /* added to every step; NULL: none */
  float *act_out, *hidden;
  int h_ld, h_step;
  const uint8_t *mask;          /* as tt_lstm's */
  float mask_keep;
  tt_threads *threads;          /* as tt_lstm's */
  const float *h0;              /* [B][U] initial state; NULL: zeros */
} tt_rnn;

/* The kernel arguments a recurrent family's layers share (weights,
 * gates, mask, threads) for steps steps; each layer then sets where its
 * hidden states go (layer_rnn.c, layer_gru.c, layer_lstm.c: direction d's
 * nw weights from w0) */
tt_rnn tt_rnn_layer_args (const tt_run_ctx * c, const tt_layer * l,
    int steps);
tt_gru tt_gru_layer_args (const tt_run_ctx * c, const tt_layer * l,
    int steps);
tt_lstm tt_lstm_layer_args (const tt_run_ctx * c, const tt_layer * l,
    int steps, int d, uint32_t w0, uint32_t nw);

void tt_rnn_forward (const tt_rnn * s, const float *x);
/* Backpropagation through time: the pre-activation derivatives over
 * act_out. dy: [B][T][U] (sequences) or [B][U]; carry: B * U floats. */
void tt_rnn_bptt (const tt_rnn * s, const float *dy, bool sequences,
    float *carry);
/* After tt_rnn_bptt: the weight gradients (written); db [U] or NULL. */
void tt_rnn_weight_grads (const tt_rnn * s, const float *x, float *dw_ih,
    float *dw_hh, float *db);
/* After tt_rnn_bptt: dx [B][T][F]. */
void tt_rnn_input_grad (const tt_rnn * s, float *dx);
/* After tt_rnn_bptt, with h0: its derivative dh0 [B][U]. */
void tt_rnn_state_grad (const tt_rnn * s, float *dh0);

/* mixed precision (docs/precision.md): the GEMMs' input format of an
 * activation type (TT_PRECISION_BF16 and FP16 round A and B to bf16 or
 * fp16 while they are packed and sum in fp32: tt_gemm_as), and that of
 * this run, c->gemm_inputs; tt_run_gemm: one thread; tt_run_gemm_split:
 * split over pool as tt_gemm_split, NULL for one thread */
static inline tt_gemm_inputs
tt_gemm_inputs_of (tt_precision p)
{
  switch (p) {
    case TT_PRECISION_BF16:
      return TT_GEMM_BF16;
    case TT_PRECISION_FP16:
      return TT_GEMM_FP16;
    case TT_PRECISION_FP32:
    default:
      return TT_GEMM_FP32;
  }
}

static inline tt_gemm_inputs
tt_run_gemm_inputs (const tt_run_ctx * c)
{
  return tt_gemm_inputs_of (c->gemm_inputs);
}

static inline void
tt_run_gemm (const tt_run_ctx * c, bool trans_a, bool trans_b, int m, int n,
    int k, float alpha, const float *a, int lda, const float *b, int ldb,
    float beta, float *y, int ldy)
{
  tt_gemm_as (tt_run_gemm_inputs (c), trans_a, trans_b, m, n, k, alpha, a,
      lda, b, ldb, beta, y, ldy);
}

static inline void
tt_run_gemm_split (const tt_run_ctx * c, tt_threads * pool, bool trans_a,
    bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *y, int ldy)
{
  tt_gemm_as_split (tt_run_gemm_inputs (c), pool, trans_a, trans_b, m, n, k,
      alpha, a, lda, b, ldb, beta, y, ldy);
}

/* the format of the GEMMs' inputs the model is planned for (its
 * activation type, as tt_run_ctx.gemm_inputs will be), so that a
 * convolution's infer and declare choose an algorithm and size its
 * scratch for it (core/init_precision.c) */
tt_precision tt_init_gemm_inputs (const tt_init_ctx * c);

#endif
