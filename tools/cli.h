/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tensor-trainer command's internal header: the options as parsed,
 * the pieces its subcommands share (failing, opening a model, a data set,
 * printing a plan) and the subcommands, one entry each, that main
 * (tensor_trainer.c) dispatches to. Each returns the exit code.
 */
#ifndef TT_CLI_H
#define TT_CLI_H

#include "tt_engine.h"
#include "tt_idx_file.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef struct
{
  const char *command, *model, *positional;
  const char *data, *labels, *valid_data, *valid_labels;
  const char *load, *save, *weights, *output, *checkpoint;
  const char *c_out, *section, *format, *symbol, *mode;
  const char *loss, *optimizer, *learning_rate, *freeze;     /* import */
  uint32_t epochs, batch, samples, valid_samples, align;
  bool replan, naive, compress, trust, resume, inference, profile;
  bool plan_thorough;           /* plan: the longer offset search */
  bool plan_quick;              /* plan --quick: the compile's search */
  uint64_t seed, memory_limit;
  bool has_seed;
  int threads;
  const char *train;            /* train, info, plan: what trains */
  /* train --feature-cache BYTES, --feature-cache-file FILE */
  uint64_t feature_cache;
  const char *feature_cache_file;
  /* personalization: eval --per-class */
  bool per_class;
  /* grow: a fully_connected layer's units raised */
  const char *layer;
  uint32_t units;
  /* train: replay of past samples (cli_replay.c) */
  const char *replay_file;
  uint32_t replay_size, replay_per_batch;
  bool has_replay_per_batch;
  /* lora (cli_lora.c): --rank, --alpha, --layers, --apply, --merge,
   * --adapters */
  uint32_t lora_rank, lora_alpha;
  const char *lora_layers, *lora_apply;
  bool lora_merge, lora_adapters;
  /* mixed precision: train, eval, info, plan --precision P */
  const char *precision;
} cli_options;

/* A data set streamed from its IDX files: the images are read a batch at
 * a time into batch (a gzipped file from its unnamed decompressed
 * temporary), the labels (a byte a sample) are held. */
typedef struct
{
  tt_idx_file images;
  uint8_t *labels, *batch;
  tt_dtype type;
  size_t sample_bytes;
  uint32_t count;
} cli_dataset;

/* cli_options.c: the usage text; "tensor-trainer: " and the message on
 * stderr, returning 1; argv into o: 0, -1 when too few arguments, -2
 * (after a message) for a bad option */
void cli_usage (FILE * out);
int cli_fail (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
int cli_parse (int argc, char **argv, cli_options * o);

/* cli_model.c: MODEL opened as the options say (NULL after a message);
 * a plan's sizes, and what a memory limit changed in it */
tt_model *cli_open_model (const cli_options * o, tt_open_info * info,
    double *seconds);
void cli_print_plan (const tt_plan_info * p);
void cli_print_memory (const tt_model * m, const tt_plan_info * p);

/* cli_dataset.c: IMAGES and LABELS opened for m, at most limit samples
 * (0: all; limit_option names it in messages); 1 after a message */
int cli_load_dataset (const char *images, const char *labels, tt_model * m,
    uint32_t limit, const char *limit_option, cli_dataset * d);
void cli_free_dataset (cli_dataset * d);

/* a monotonic clock, in seconds */
static inline double
cli_now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the subcommands: cli_train.c (train, and eval when !train), cli_info.c,
 * cli_plan.c (plan, check), cli_pack.c (pack, unpack, strip),
 * cli_inspect.c, cli_export.c, cli_import.c */
/* cli_feature_cache.c: train's feature cache (--feature-cache BYTES, or
 * --feature-cache-file FILE): the frozen prefix's records of the samples
 * [0, capacity), kept in the first training pass (cli_fcache_keep_step,
 * then cli_fcache_pass_done), used after it (cli_fcache_has,
 * cli_fcache_step); record == 0: no cache. close prints how many
 * samples came from it and removes the file. */
typedef struct
{
  tt_feature_boundary boundary;
  size_t record;                /* bytes a sample */
  uint32_t batch, samples, capacity;
  float *mem, *buf;
  float **keep;
  const float **from;
  const char *path;
  void *writer;                 /* the file during the first pass */
  int fd;                       /* the file after it */
  bool filled, written;
  uint64_t from_cache, trained;
} cli_fcache;
int cli_fcache_open (cli_fcache * c, const cli_options * o, tt_model * m,
    uint32_t samples);
bool cli_fcache_has (const cli_fcache * c, uint32_t at, uint32_t n);
int cli_fcache_step (cli_fcache * c, tt_model * m, uint32_t at, uint32_t n,
    const float *labels, tt_batch_result * r);
int cli_fcache_keep_step (cli_fcache * c, tt_model * m, uint32_t at,
    uint32_t n, const void *const *inputs, const tt_dtype * types,
    const float *labels, tt_batch_result * r);
int cli_fcache_pass_done (cli_fcache * c);
void cli_fcache_close (cli_fcache * c);

int cli_train (const cli_options * o, bool train);
int cli_info (const cli_options * o);
int cli_plan (const cli_options * o);
int cli_check (const cli_options * o);
int cli_pack (const cli_options * o);
int cli_unpack (const cli_options * o);
int cli_strip (const cli_options * o);
int cli_inspect (const cli_options * o);
int cli_export (const cli_options * o);
int cli_import (const cli_options * o);
int cli_export_onnx (const cli_options * o);
/* cli_grow.c: a classifier grown */
int cli_grow (const cli_options * o);

/* cli_replay.c: train's passes with replay of past samples (off, on =
 * false, without --replay-size); each 1 after a message */
#include "replay.h"
typedef struct
{
  tt_replay buf;
  uint32_t k;                   /* replayed samples a batch */
  size_t in_count, classes;
  float *inputs;                /* a batch of the input, float32 */
  bool on, dirty;
} cli_replay;
int cli_replay_open (const cli_options * o, tt_model * m, cli_replay * r);
int cli_replay_pass (tt_model * m, cli_dataset * d, cli_replay * r,
    float *onehot, double *loss, double *accuracy, double *seconds,
    uint64_t * replayed);
int cli_replay_save (const cli_options * o, cli_replay * r);
void cli_replay_close (cli_replay * r);
/* LoRA adapters as files (cli_lora.c) */
int cli_lora (const cli_options * o);
/* cli_precision.c: mixed precision: the note of what the model's
 * precision does on this CPU (stderr, once), the per-epoch loss scaling
 * figures */
void cli_precision_note (const cli_options * o, const tt_model * m);
void cli_print_loss_scaling (const tt_model * m, uint64_t * skipped_before);

#endif /* TT_CLI_H */
