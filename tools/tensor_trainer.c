/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer: the engine without GStreamer, to train, evaluate and
 * inspect models from the command line and to benchmark the engine.
 *
 *   tensor-trainer train MODEL --data IMAGES --labels LABELS
 *       [--valid-data IMAGES --valid-labels LABELS] [--epochs N]
 *       [--batch N] [--samples N] [--valid-samples N] [--load WEIGHTS]
 *       [--save FILE] [--compress] [--seed S] [--checkpoint FILE]
 *       [--resume] [--threads T] [--profile]
 *   tensor-trainer eval MODEL [--weights WEIGHTS] --data IMAGES
 *       --labels LABELS [--batch N] [--samples N] [--mode M] [--inference]
 *       [--profile]
 *   tensor-trainer info MODEL [--batch N] [--mode M] [--inference]
 *   tensor-trainer plan MODEL.ini -o OUT.opt.ini [--batch N] [--align N]
 *       [--inference] [--memory-limit BYTES] [--threads T]
 *   tensor-trainer check MODEL.opt.ini|MODEL.ttb [--inference]
 *   tensor-trainer pack MODEL.ini [WEIGHTS.bin] -o OUT.ttb [--compress]
 *       [--align N] [--batch N] [--seed S]
 *   tensor-trainer unpack MODEL.ttb -o DIR
 *   tensor-trainer strip MODEL.opt.ini|MODEL.ttb -o MODEL.ini
 *       [--weights MODEL.bin]
 *   tensor-trainer inspect MODEL.ttb
 *   tensor-trainer export MODEL.ttb --c-out DIR [--section NAME]
 *       [--align N] [--format asm|c] [--symbol NAME]
 *
 * MODEL is an INI file or a bundle (recognized by its magic, whatever its
 * name); WEIGHTS a BIN or a bundle. --save and --checkpoint write a bundle
 * unless the path ends in .bin (tt_model_save). Data are MNIST-format IDX
 * files, gzipped or not. Every epoch prints one line of key=value pairs so
 * scripts can read it; --profile adds a table of the time each layer took
 * on standard error, leaving standard output as it is.
 */
#include "aggregate.h"
#include "cli_number.h"
#include "tt_engine.h"
#include "tt_bundle.h"
#include "tt_idx_file.h"
#include "atomic_file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct
{
  const char *command, *model, *positional;
  const char *data, *labels, *valid_data, *valid_labels;
  const char *load, *save, *weights, *output, *checkpoint;
  const char *c_out, *section, *format, *symbol, *mode;
  uint32_t epochs, batch, samples, valid_samples, align;
  bool replan, naive, compress, trust, resume, inference, profile;
  uint64_t seed, memory_limit;
  bool has_seed;
  int threads;
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

static void
cli_usage (FILE * out)
{
  fputs ("usage:\n"
      "  tensor-trainer train MODEL --data IMAGES --labels LABELS\n"
      "      [--valid-data IMAGES --valid-labels LABELS] [--epochs N]\n"
      "      [--batch N] [--samples N] [--valid-samples N]\n"
      "      [--load WEIGHTS] [--save FILE] [--compress] [--seed S]\n"
      "      [--checkpoint FILE] [--resume]\n"
      "      [--threads T] [--memory-limit BYTES] [--profile]\n"
      "  tensor-trainer eval MODEL [--weights WEIGHTS] --data IMAGES\n"
      "      --labels LABELS [--batch N] [--samples N] [--mode M] "
      "[--inference]\n"
      "      [--profile]\n"
      "  tensor-trainer info MODEL [--batch N] [--mode M] [--inference]\n"
      "  tensor-trainer plan MODEL.ini -o OUT.opt.ini [--batch N] "
      "[--align N] [--inference]\n"
      "      [--memory-limit BYTES] [--threads T]\n"
      "  tensor-trainer check MODEL.opt.ini|MODEL.ttb [--inference]\n"
      "  tensor-trainer pack MODEL.ini [WEIGHTS.bin] -o OUT.ttb [--compress]\n"
      "      [--align N] [--batch N] [--seed S]\n"
      "  tensor-trainer unpack MODEL.ttb -o DIR\n"
      "  tensor-trainer strip MODEL.opt.ini|MODEL.ttb -o MODEL.ini "
      "[--weights MODEL.bin]\n"
      "  tensor-trainer inspect MODEL.ttb\n"
      "  tensor-trainer export MODEL.ttb --c-out DIR [--section NAME]\n"
      "      [--align N] [--format asm|c] [--symbol NAME]\n"
      "  tensor-trainer aggregate MODEL --broker URL --clients N --rounds R"
      " ...\n      (federated averaging over MQTT: aggregate --help)\n"
      "MODEL is an INI file or a bundle; WEIGHTS a BIN or a bundle. --save\n"
      "writes a bundle (INI, plan, weights, optimizer state, counters) unless\n"
      "the path ends in .bin. --checkpoint FILE saves the model the same way\n"
      "after every epoch (atomically: a killed run leaves the last one);\n"
      "--resume with --load FILE continues from such a checkpoint: its\n"
      "weights, optimizer state and counters, training the epochs after the\n"
      "one it was saved at, up to --epochs (or the INI's).\n"
      "With --valid-data, the INI's [Model] save_best_path gets the weights\n"
      "(a BIN) after each epoch whose validation accuracy is the best so\n"
      "far, or ties it with a lower loss (nntrainer's rule).\n"
      "--mode read|mmap|inplace says how a bundle model is opened (default\n"
      "read; inplace: weights used where they lie in the mapped file,\n"
      "evaluation only); --trust skips its weight checksum and finiteness\n"
      "check. pack's --align aligns every tensor in the bundle (default 64;\n"
      "4096 for pages), export's the blob.\n"
      "train, eval and info take --replan (ignore a stored plan) and --naive\n"
      "(no memory reuse). --inference compiles the model for inference only\n"
      "(forward lifetimes, no gradients or optimizer state: a smaller pool);\n"
      "plan --inference stores such a plan, which tensor_predictor loads.\n"
      "train and eval --profile print, after the run, the time each layer\n"
      "took (forward, backward, weight update, in execution order) and the\n"
      "time a step took to standard error.\n"
      "strip writes the plain INI nntrainer reads (no [Plan] sections, the\n"
      "INI's own batch_size) from an optimized INI or a bundle, and with\n"
      "--weights a bundle's weights as a BIN; it never writes over its input.\n"
      "IMAGES and LABELS are IDX files (MNIST format), gzipped or not.\n", out);
}

static void cli_print_memory (const tt_model * m, const tt_plan_info * p);

static int
cli_fail (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fputs ("tensor-trainer: ", stderr);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
  return 1;
}

static int
cli_parse (int argc, char **argv, cli_options * o)
{
  memset (o, 0, sizeof *o);
  if (argc < 3)
    return -1;
  o->command = argv[1];
  o->model = argv[2];
  for (int i = 3; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t n;
    const char **str = NULL;
    uint32_t *num = NULL;
    if (!strcmp (a, "--data"))
      str = &o->data;
    else if (!strcmp (a, "--labels"))
      str = &o->labels;
    else if (!strcmp (a, "--valid-data"))
      str = &o->valid_data;
    else if (!strcmp (a, "--valid-labels"))
      str = &o->valid_labels;
    else if (!strcmp (a, "--load"))
      str = &o->load;
    else if (!strcmp (a, "--save"))
      str = &o->save;
    else if (!strcmp (a, "--weights"))
      str = &o->weights;
    else if (!strcmp (a, "-o") || !strcmp (a, "--output"))
      str = &o->output;
    else if (!strcmp (a, "--c-out"))
      str = &o->c_out;
    else if (!strcmp (a, "--section"))
      str = &o->section;
    else if (!strcmp (a, "--format"))
      str = &o->format;
    else if (!strcmp (a, "--symbol"))
      str = &o->symbol;
    else if (!strcmp (a, "--mode"))
      str = &o->mode;
    else if (!strcmp (a, "--compress")) {
      o->compress = true;
      continue;
    } else if (!strcmp (a, "--trust")) {
      o->trust = true;
      continue;
    } else if (a[0] != '-' && !o->positional && !strcmp (o->command, "pack")) {
      o->positional = a;
      continue;
    } else if (!strcmp (a, "--align"))
      num = &o->align;
    else if (!strcmp (a, "--replan") || !strcmp (a, "--naive")) {
      if (a[2] == 'r')
        o->replan = true;
      else
        o->naive = true;
      continue;
    } else if (!strcmp (a, "--resume")) {
      o->resume = true;
      continue;
    } else if (!strcmp (a, "--inference")) {
      o->inference = true;
      continue;
    } else if (!strcmp (a, "--profile")) {
      o->profile = true;
      continue;
    } else if (!strcmp (a, "--checkpoint"))
      str = &o->checkpoint;
    else if (!strcmp (a, "--epochs"))
      num = &o->epochs;
    else if (!strcmp (a, "--batch"))
      num = &o->batch;
    else if (!strcmp (a, "--samples"))
      num = &o->samples;
    else if (!strcmp (a, "--valid-samples"))
      num = &o->valid_samples;
    else if (!strcmp (a, "--seed")) {
      if (!tt_cli_uint (v, UINT64_MAX, &o->seed))
        return cli_fail ("--seed needs a non-negative integer"), -2;
      o->has_seed = true;
      i++;
      continue;
    } else if (!strcmp (a, "--memory-limit")) {
      if (!tt_cli_bytes (v, UINT64_MAX, &o->memory_limit) || !o->memory_limit)
        return cli_fail ("--memory-limit needs a positive byte count (K, M "
            "or G: times 1024, 1024^2, 1024^3), got '%s'", v ? v : ""), -2;
      i++;
      continue;
    } else if (!strcmp (a, "--threads")) {
      if (!tt_cli_uint (v, 64, &n) || n == 0)
        return cli_fail ("--threads needs an integer in [1, 64]"), -2;
      o->threads = (int) n;
      i++;
      continue;
    } else {
      return cli_fail ("unknown option '%s'", a), -2;
    }
    if (!v)
      return cli_fail ("%s needs a value", a), -2;
    if (str)
      *str = v;
    else if (!tt_cli_uint (v, UINT32_MAX, &n) || n == 0)
      return cli_fail ("%s needs a positive integer, got '%s'", a, v), -2;
    else
      *num = (uint32_t) n;
    i++;
  }
  return 0;
}

static int
cli_load_dataset (const char *images, const char *labels, tt_model * m,
    uint32_t limit, const char *limit_option, cli_dataset * d)
{
  char err[1024];
  tt_idx_file lf;
  memset (d, 0, sizeof *d);
  tt_idx_file_init (&d->images);
  if (tt_idx_file_open (images, &d->images, err, sizeof err) != 0 ||
      tt_idx_file_open (labels, &lf, err, sizeof err) != 0)
    return cli_fail ("%s", err);
  if (tt_idx_file_check_pair (&d->images, &lf, err, sizeof err) != 0) {
    tt_idx_file_close (&lf);
    return cli_fail ("%s and %s: %s", images, labels, err);
  }
  d->labels = malloc (lf.count ? lf.count : 1);
  if (!d->labels) {
    tt_idx_file_close (&lf);
    return cli_fail ("out of memory");
  }
  int rc = tt_idx_file_read (&lf, 0, lf.count, d->labels, err, sizeof err);
  tt_idx_file_close (&lf);
  if (rc != 0)
    return cli_fail ("%s", err);
  tt_shape in;
  tt_model_input_shape (m, 0, &in);
  const size_t per = (size_t) in.channel * in.height * in.width;
  if (d->images.type == TT_IDX_UINT8)
    d->type = TT_DTYPE_UINT8;
  else if (d->images.type == TT_IDX_FLOAT32)
    d->type = TT_DTYPE_FLOAT32;
  else
    return cli_fail ("%s: only uint8 and float32 images are supported", images);
  size_t elem = d->type == TT_DTYPE_UINT8 ? 1 : 4;
  if (d->images.item_bytes != per * elem)
    return cli_fail ("%s: a sample holds %zu values but the model %s takes "
        "%u:%u:%u = %zu", images, d->images.item_bytes / elem,
        tt_model_path (m), in.channel, in.height, in.width, per);
  d->sample_bytes = d->images.item_bytes;
  d->count = (uint32_t) d->images.count;
  /* asking for more samples than there are is a mistake worth hearing
   * about, not a request to train on fewer */
  if (limit > d->count)
    return cli_fail ("%s %u: %s holds only %u samples", limit_option, limit,
        images, d->count);
  if (limit)
    d->count = limit;
  tt_shape ls = tt_model_label_shape (m);
  const size_t classes = (size_t) ls.channel * ls.height * ls.width;
  for (uint32_t i = 0; i < d->count; i++)
    if (d->labels[i] >= classes)
      return cli_fail ("%s: label %u of sample %u is out of range for %zu "
          "classes", labels, d->labels[i], i, classes);
  d->batch = malloc ((size_t) tt_model_batch_size (m) * d->sample_bytes);
  if (!d->batch)
    return cli_fail ("out of memory");
  return 0;
}

static void
cli_free_dataset (cli_dataset * d)
{
  tt_idx_file_close (&d->images);
  free (d->labels);
  free (d->batch);
  d->labels = d->batch = NULL;
}

static double
cli_now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* With threads: the steps split and run on one thread since the last
 * call ("split_steps=S inline_steps=I": the pool keeps whichever way is
 * faster at the time). */
static void
cli_print_thread_steps (const tt_model * m, uint64_t * split_seen,
    uint64_t * inline_seen)
{
  uint64_t split, inline_steps;
  if (tt_model_threads (m) < 2)
    return;
  tt_model_thread_steps (m, &split, &inline_steps);
  printf (" split_steps=%" PRIu64 " inline_steps=%" PRIu64,
      split - *split_seen, inline_steps - *inline_seen);
  *split_seen = split;
  *inline_seen = inline_steps;
}

/* --profile: a line a layer in execution order, its times over the whole
 * run and its share of the steps' time; then the steps' time outside the
 * layers (feeding, scoring, waking threads) and the totals. On several
 * threads two columns more: the calling thread's wait for the others'
 * parts (inside total_ms) and the other threads' time in the layer's
 * parts. To stderr: stdout's lines are what scripts read. */
static void
cli_print_profile (const tt_model * m)
{
  tt_profile p;
  tt_layer_profile l;
  if (tt_model_profile (m, &p) != TT_OK)
    return;
  const uint32_t n = tt_model_num_layers (m);
  int name_w = (int) strlen ("layer"), type_w = (int) strlen ("type");
  for (uint32_t i = 0; i < n && !tt_model_layer_profile (m, i, &l); i++) {
    name_w = (int) strlen (l.name) > name_w ? (int) strlen (l.name) : name_w;
    type_w = (int) strlen (l.type) > type_w ? (int) strlen (l.type) : type_w;
  }
  const double all = p.step_ns ? (double) p.step_ns : 1;
  const bool threads = tt_model_threads (m) > 1;
  /* stdout's lines first, where both go to one terminal or file */
  fflush (stdout);
  fprintf (stderr, "profile: %" PRIu64 " steps, %.3f ms a step\n", p.steps,
      p.steps ? p.step_ns / 1e6 / p.steps : 0.0);
  fprintf (stderr, "%-*s  %-*s %11s %11s %11s %11s %7s", name_w, "layer",
      type_w, "type", "forward_ms", "backward_ms", "update_ms", "total_ms",
      "share%");
  fprintf (stderr, threads ? " %11s %11s\n" : "\n", "wait_ms", "workers_ms");
  uint64_t f = 0, b = 0, u = 0, wait = 0, workers = 0;
  for (uint32_t i = 0; i < n && !tt_model_layer_profile (m, i, &l); i++) {
    const uint64_t t = l.forward_ns + l.backward_ns + l.update_ns;
    fprintf (stderr, "%-*s  %-*s %11.3f %11.3f %11.3f %11.3f %7.1f",
        name_w, l.name, type_w, l.type, l.forward_ns / 1e6,
        l.backward_ns / 1e6, l.update_ns / 1e6, t / 1e6, 100 * t / all);
    tt_layer_threads_profile lt;
    if (threads && !tt_model_layer_threads_profile (m, i, &lt)) {
      fprintf (stderr, " %11.3f %11.3f", lt.wait_ns / 1e6, lt.workers_ns / 1e6);
      wait += lt.wait_ns;
      workers += lt.workers_ns;
    }
    fputc ('\n', stderr);
    f += l.forward_ns;
    b += l.backward_ns;
    u += l.update_ns;
  }
  fprintf (stderr, "%-*s  %-*s %11s %11s %11s %11.3f %7.1f\n", name_w,
      "(other)", type_w, "", "", "", "", p.other_ns / 1e6,
      100 * p.other_ns / all);
  fprintf (stderr, "%-*s  %-*s %11.3f %11.3f %11.3f %11.3f %7.1f", name_w,
      "total", type_w, "", f / 1e6, b / 1e6, u / 1e6, p.step_ns / 1e6,
      p.step_ns ? 100.0 : 0.0);
  if (threads)
    fprintf (stderr, " %11.3f %11.3f", wait / 1e6, workers / 1e6);
  fputc ('\n', stderr);
}

/* Runs one pass over d; trains when train, else evaluates. */
static int
cli_pass (tt_model * m, cli_dataset * d, bool train, float *onehot,
    double *loss, double *accuracy, double *seconds)
{
  const uint32_t batch = tt_model_batch_size (m);
  tt_shape ls = tt_model_label_shape (m);
  const size_t classes = (size_t) ls.channel * ls.height * ls.width;
  double loss_sum = 0, t0 = cli_now ();
  uint64_t correct = 0;
  tt_error err;
  for (uint32_t at = 0; at < d->count; at += batch) {
    uint32_t n = d->count - at < batch ? d->count - at : batch;
    memset (onehot, 0, (size_t) n * classes * sizeof *onehot);
    for (uint32_t i = 0; i < n; i++)
      onehot[i * classes + d->labels[at + i]] = 1.0f;
    char rerr[1024];
    if (tt_idx_file_read (&d->images, at, n, d->batch, rerr, sizeof rerr))
      return cli_fail ("%s", rerr);
    const void *inputs[1] = { d->batch };
    tt_batch_result r;
    tt_status st = train ?
        tt_model_train_batch (m, n, inputs, &d->type, onehot, &r, &err) :
        tt_model_eval_batch (m, n, inputs, &d->type, onehot, &r, &err);
    if (st)
      return cli_fail ("%s", err.message);
    loss_sum += r.loss * n;
    correct += r.correct;
  }
  *seconds = cli_now () - t0;
  *loss = d->count ? loss_sum / d->count : NAN;
  *accuracy = d->count ? (double) correct / d->count : NAN;
  return 0;
}

static bool
cli_bundle_mode (const char *name, tt_bundle_mode * mode)
{
  if (!name || !strcmp (name, "read"))
    *mode = TT_BUNDLE_READ;
  else if (!strcmp (name, "mmap"))
    *mode = TT_BUNDLE_MMAP;
  else if (!strcmp (name, "inplace"))
    *mode = TT_BUNDLE_IN_PLACE;
  else
    return false;
  return true;
}

/* A model that failed to open: the message, and when a stored plan was
 * refused (made for another batch, say) the option that plans afresh. */
static void
cli_fail_open (const cli_options * o, const tt_error * err)
{
  if (!o->replan && !o->naive && strstr (err->message, "stored plan "
          "rejected"))
    cli_fail ("%s\n(pass --replan to plan the model afresh%s)", err->message,
        o->batch ? " for this --batch" : "");
  else
    cli_fail ("%s", err->message);
}

/* Opens MODEL, an INI file or a bundle, compiled; info (if not NULL) gets
 * what it is, *seconds (if not NULL) the time it took. */
static tt_model *
cli_open_model (const cli_options * o, tt_open_info * info, double *seconds)
{
  tt_error err;
  tt_open_info scratch;
  tt_open_options oo = { 0 };
  if (!info)
    info = &scratch;
  if (!cli_bundle_mode (o->mode, &oo.mode)) {
    cli_fail ("--mode is read, mmap or inplace, not '%s'", o->mode);
    return NULL;
  }
  /* --mode and --trust say the model is a bundle; --align, that it is
   * not (tt_model_open refuses the other kind before reading it) */
  oo.kind = o->mode || o->trust ? TT_MODEL_FILE_BUNDLE : TT_MODEL_FILE_ANY;
  oo.alignment = o->align;
  oo.batch_size = o->batch;
  oo.plan_mode = o->naive ? TT_PLAN_NAIVE : o->replan ? TT_PLAN_REPLAN :
      TT_PLAN_AUTO;
  oo.inference = o->inference;
  oo.memory_limit = o->memory_limit;
  oo.has_seed = o->has_seed;
  oo.seed = o->seed;
  oo.trust = o->trust;
  oo.threads = (unsigned) o->threads;
  const double t0 = cli_now ();
  tt_model *m = tt_model_open (o->model, &oo, info, &err);
  if (!m) {
    if (info->failed_step == TT_OPEN_KIND && info->kind == TT_MODEL_FILE_BUNDLE)
      cli_fail ("--align sets the alignment of a plan made from an INI "
          "file; %s is a bundle", o->model);
    else if (info->failed_step == TT_OPEN_KIND)
      cli_fail ("--mode and --trust apply to bundle models; %s is not one",
          o->model);
    else if (info->failed_step == TT_OPEN_READ &&
        info->kind != TT_MODEL_FILE_BUNDLE)
      cli_fail ("%s", err.message);
    else
      cli_fail_open (o, &err);
    return NULL;
  }
  if (seconds)
    *seconds = cli_now () - t0;
  return m;
}

/* the path names a BIN (tt_model_save's rule) */
static bool
cli_is_bin_path (const char *path)
{
  const char *slash = strrchr (path, '/');
  const char *dot = strrchr (slash ? slash + 1 : path, '.');
  return dot && !strcasecmp (dot, ".bin");
}

static int
cli_train (const cli_options * o, bool train)
{
  if (!o->data || !o->labels)
    return cli_fail ("%s needs --data and --labels", o->command);
  if (o->compress && (!train || !o->save || cli_is_bin_path (o->save)))
    return cli_fail ("--compress applies to a bundle saved by train --save");
  if (!o->valid_data != !o->valid_labels)
    return cli_fail ("--valid-data and --valid-labels go together");
  if (o->resume && (!train || !o->load))
    return cli_fail ("--resume continues from the counters and moments of "
        "the model given by --load FILE (a --checkpoint); %s", train ?
        "give --load" : "it applies to train");
  /* a run is not started when its result could not be saved */
  tt_error perr;
  if (train && ((o->save && tt_model_check_save_path (o->save, &perr)) ||
          (o->checkpoint && tt_model_check_save_path (o->checkpoint, &perr))))
    return cli_fail ("%s", perr.message);
  /* the engine's threads (the GEMM library stays on one) */
  if (o->threads)
    tt_set_num_threads (o->threads);
  tt_open_info opened;
  tt_model *m = cli_open_model (o, &opened, NULL);
  if (!m)
    return 1;
  if (o->memory_limit) {
    tt_plan_info p;
    tt_model_plan_info (m, &p);
    printf ("%-22s %14" PRIu64 "\n", "pool", p.pool_bytes);
    cli_print_memory (m, &p);
  }
  tt_error err;
  cli_dataset train_set = { 0 }, valid_set = { 0 };
  tt_idx_file_init (&train_set.images);
  tt_idx_file_init (&valid_set.images);
  float *onehot = NULL;
  uint64_t steps_split = 0, steps_inline = 0;
  int rc = 1;
  if (!train && !o->weights && opened.kind != TT_MODEL_FILE_BUNDLE) {
    cli_fail ("eval needs --weights FILE.bin (or a bundle as model)");
    goto out;
  }
  const char *weights = train ? o->load : o->weights;
  if (weights && tt_model_load_weights (m, weights, &err)) {
    cli_fail ("%s", err.message);
    goto out;
  }
  if (cli_load_dataset (o->data, o->labels, m, o->samples, "--samples",
          &train_set))
    goto out;
  if (o->valid_data && cli_load_dataset (o->valid_data, o->valid_labels, m,
          o->valid_samples, "--valid-samples", &valid_set))
    goto out;
  tt_shape ls = tt_model_label_shape (m);
  onehot = calloc ((size_t) tt_model_batch_size (m) * ls.channel * ls.height
      * ls.width, sizeof *onehot);
  if (!onehot) {
    cli_fail ("out of memory");
    goto out;
  }
  /* turned on here, so that the profile holds the passes and nothing
   * before them */
  if (o->profile && tt_model_set_profiling (m, true, &err)) {
    cli_fail ("%s", err.message);
    goto out;
  }

  if (!train) {
    double loss, acc, sec;
    if (cli_pass (m, &train_set, false, onehot, &loss, &acc, &sec))
      goto out;
    printf ("eval samples=%u loss=%.6f accuracy=%.4f samples_per_s=%.1f",
        train_set.count, loss, acc, train_set.count / sec);
    cli_print_thread_steps (m, &steps_split, &steps_inline);
    printf ("\n");
    if (o->profile)
      cli_print_profile (m);
    rc = 0;
    goto out;
  }

  /* [Model] save_best_path, as nntrainer: only with validation data, the
   * path as written (relative to the working directory) */
  const char *best = tt_model_save_best_path (m);
  if (best && !o->valid_data)
    fprintf (stderr, "# [Model] save_best_path = %s is not used: it follows "
        "validation results (--valid-data)\n", best);
  if (best && o->valid_data && tt_model_check_save_path (best, &err)) {
    cli_fail ("[Model] save_best_path: %s", err.message);
    goto out;
  }
  tt_memory_info mem;
  tt_model_memory_info (m, &mem);
  printf ("# model=%s batch=%u samples=%u pool_bytes=%zu weight_bytes=%zu "
      "tensors=%zu\n", o->model, tt_model_batch_size (m), train_set.count,
      mem.pool_bytes, mem.weight_bytes, mem.tensor_count);
  const uint32_t epochs = o->epochs ? o->epochs : tt_model_epochs (m);
  /* --resume continues a run killed after a checkpoint: the weights,
   * moments and counters came from --load, the epochs from its counter */
  const uint32_t first = o->resume ? tt_model_epoch (m) : 0;
  if (o->resume)
    printf ("# resuming after epoch %u (iteration %u)\n", first,
        tt_model_iteration (m));
  for (uint32_t e = first; e < epochs; e++) {
    double loss, acc, sec, vloss = NAN, vacc = NAN, vsec;
    if (cli_pass (m, &train_set, true, onehot, &loss, &acc, &sec))
      goto out;
    if (o->valid_data && cli_pass (m, &valid_set, false, onehot, &vloss,
            &vacc, &vsec))
      goto out;
    tt_model_finish_epoch (m);
    printf ("epoch=%u/%u loss=%.6f accuracy=%.4f val_loss=%.6f "
        "val_accuracy=%.4f samples_per_s=%.1f seconds=%.3f", e + 1, epochs,
        loss, acc, vloss, vacc, train_set.count / sec, sec);
    cli_print_thread_steps (m, &steps_split, &steps_inline);
    printf ("\n");
    bool saved = false;
    if (o->valid_data && tt_model_save_best (m, vloss, vacc, &saved, &err)) {
      cli_fail ("%s", err.message);
      goto out;
    }
    if (saved)
      printf ("# best so far: saved %s\n", best);
    fflush (stdout);
    if (o->checkpoint && tt_model_save (m, o->checkpoint, &err)) {
      cli_fail ("%s", err.message);
      goto out;
    }
  }
  if (o->profile)
    cli_print_profile (m);
  if (o->save) {
    tt_bundle_options bo = { 0 };
    bo.compress = o->compress;
    char rescued[PATH_MAX];
    if (tt_model_save_with_fallback (m, o->save, o->compress ? &bo : NULL,
            rescued, sizeof rescued, &err)) {
      cli_fail ("%s", err.message);
      goto out;
    }
    printf ("# saved %s\n", o->save);
  }
  rc = 0;
out:
  free (onehot);
  cli_free_dataset (&train_set);
  cli_free_dataset (&valid_set);
  tt_model_free (m);
  return rc;
}

/* Under a memory limit: the limit, what the pool would be without it,
 * and the activations dropped, each rebuilt during backward. */
static void
cli_print_memory (const tt_model * m, const tt_plan_info * p)
{
  if (!p->memory_limit)
    return;
  printf ("%-22s %14" PRIu64 "\n", "memory limit", p->memory_limit);
  if (p->unlimited_pool_bytes)
    printf ("%-22s %14" PRIu64 "\n", "pool without limit",
        p->unlimited_pool_bytes);
  printf ("recomputed=%u (%" PRIu64 " bytes) swapped=%u (%" PRIu64
      " bytes)\n", p->recomputed, p->recomputed_bytes, p->swapped,
      p->swapped_bytes);
  const char *name, *how;
  for (uint32_t i = 0; (name = tt_model_plan_dropped (m, i, &how)); i++)
    printf ("  %-16s %s\n", how, name);
}

static void
cli_print_plan (const tt_plan_info * p)
{
  printf ("%-22s %14s\n", "", "bytes");
  printf ("%-22s %14" PRIu64 "\n", "naive (no reuse)", p->naive_bytes);
  printf ("%-22s %14" PRIu64 "\n", "depth-first order", p->dfs_pool_bytes);
  printf ("%-22s %14" PRIu64 "  (%.4f x bound)\n", "planned pool",
      p->pool_bytes, p->lower_bound ? (double) p->pool_bytes /
      (double) p->lower_bound : 1.0);
  printf ("%-22s %14" PRIu64 "\n", "lower bound", p->lower_bound);
  printf ("tensors=%u in_place_layers=%u order_search=%s %s=%.3f ms\n",
      p->tensors, p->in_place_layers, p->order_exact ? "exact" : "greedy",
      p->from_stored_plan ? "validation" : "planning", p->plan_seconds * 1e3);
  if (p->laid_out_threads == 2)
    printf ("laid out for 2 threads' halves (for any count: %" PRIu64
        " bytes)\n", p->one_thread_pool_bytes);
}

static int
cli_plan (const cli_options * o)
{
  if (!o->output)
    return cli_fail ("plan needs -o OUT.opt.ini (or OUT.ttb for a bundle)");
  /* the extension says the form, as for train --save: the optimized INI,
   * or a bundle (with the model's initialized weights); BIN weights hold
   * no plan */
  const char *slash = strrchr (o->output, '/');
  const char *dot = strrchr (slash ? slash + 1 : o->output, '.');
  const bool ini = dot && !strcasecmp (dot, ".ini");
  tt_error err;
  if (dot && !strcasecmp (dot, ".bin"))
    return cli_fail ("%s: plan writes the optimized INI (.ini) or a bundle "
        "(.ttb); BIN weights cannot hold a plan", o->output);
  if (!ini && tt_model_check_save_path (o->output, &err))
    return cli_fail ("%s", err.message);
  cli_options copy = *o;
  copy.replan = true;
  tt_model *m = cli_open_model (&copy, NULL, NULL);
  if (!m)
    return 1;
  tt_plan_info p;
  tt_model_plan_info (m, &p);
  int rc = 0;
  if (ini ? tt_model_save_plan_ini (m, o->output, &err) :
      tt_bundle_save (m, o->output, NULL, &err)) {
    rc = cli_fail ("%s", err.message);
  } else {
    printf ("model=%s batch=%u -> %s%s\n", o->model, tt_model_batch_size (m),
        o->output, ini ? "" : " (bundle, initialized weights)");
    cli_print_plan (&p);
    cli_print_memory (m, &p);
  }
  tt_model_free (m);
  return rc;
}

static int
cli_check (const cli_options * o)
{
  tt_error err;
  /* opened whole, a bundle's header, checksums and weights too; a stored
   * plan is validated as the model is compiled */
  tt_open_options oo = { 0 };
  oo.inference = o->inference;
  tt_model *m = tt_model_open (o->model, &oo, NULL, &err);
  if (!m)
    return cli_fail ("%s", err.message);
  int rc = 0;
  tt_plan_info p;
  if (!tt_model_has_stored_plan (m))
    rc = cli_fail ("%s: no stored plan ([Plan] section); make one with "
        "tensor-trainer plan", o->model);
  else if (tt_model_plan_info (m, &p), !p.from_stored_plan)
    rc = cli_fail ("%s: the stored plan is for %s; check it %s --inference",
        o->model, o->inference ? "training" : "inference only",
        o->inference ? "without" : "with");
  else {
    printf ("%s: plan valid\n", o->model);
    cli_print_plan (&p);
    cli_print_memory (m, &p);
  }
  tt_model_free (m);
  return rc;
}

static int
cli_info (const cli_options * o)
{
  double seconds;
  tt_open_info opened;
  tt_model *m = cli_open_model (o, &opened, &seconds);
  if (!m)
    return 1;
  if (opened.kind == TT_MODEL_FILE_BUNDLE)
    printf ("bundle=%s mode=%s%s load_seconds=%.6f\n", o->model,
        o->mode ? o->mode : "read", o->trust ? " trusted" : "", seconds);
  tt_memory_info mem;
  tt_model_memory_info (m, &mem);
  tt_shape out = tt_model_output_shape (m);
  printf ("model=%s batch=%u inputs=%u mode=%s\n", o->model,
      tt_model_batch_size (m), tt_model_num_inputs (m),
      tt_model_is_inference (m) ? "inference" : "training");
  for (uint32_t i = 0; i < tt_model_num_inputs (m); i++) {
    tt_shape s;
    tt_model_input_shape (m, i, &s);
    printf ("input%u=%u:%u:%u\n", i, s.channel, s.height, s.width);
  }
  printf ("output=%u:%u:%u\n", out.channel, out.height, out.width);
  printf ("weight_bytes=%zu pool_bytes=%zu tensors=%zu\n", mem.weight_bytes,
      mem.pool_bytes, mem.tensor_count);
  tt_plan_info p;
  tt_model_plan_info (m, &p);
  cli_print_plan (&p);
  tt_model_free (m);
  return 0;
}

/* ---- bundles ---------------------------------------------------------- */

static uint64_t
cli_file_size (const char *path)
{
  struct stat sb;
  return stat (path, &sb) == 0 ? (uint64_t) sb.st_size : 0;
}

static int
cli_pack (const cli_options * o)
{
  if (!o->output)
    return cli_fail ("pack needs -o OUT.ttb");
  tt_bundle_options bo = { 0 };
  bo.alignment = o->align;
  bo.compress = o->compress;
  tt_error err;
  if (o->positional) {
    if (tt_bundle_pack (o->model, o->positional, o->output, o->batch, &bo,
            &err))
      return cli_fail ("%s", err.message);
  } else {
    /* no weights: the model's own initialization (--seed), saved as a
     * model is, plan included */
    cli_options copy = *o;
    copy.align = 0;
    tt_model *m = cli_open_model (&copy, NULL, NULL);
    if (!m)
      return 1;
    tt_status st = tt_bundle_save (m, o->output, &bo, &err);
    tt_model_free (m);
    if (st)
      return cli_fail ("%s", err.message);
  }
  printf ("packed %s%s%s -> %s (%" PRIu64 " bytes%s)\n", o->model,
      o->positional ? " + " : " (initialized weights)",
      o->positional ? o->positional : "", o->output,
      cli_file_size (o->output), o->compress ? ", weights compressed" : "");
  return 0;
}

static int
cli_unpack (const cli_options * o)
{
  if (!o->output)
    return cli_fail ("unpack needs -o DIR");
  if (mkdir (o->output, 0777) != 0 && errno != EEXIST)
    return cli_fail ("%s: cannot create: %s", o->output, strerror (errno));
  char ini[PATH_MAX], bin[PATH_MAX];
  if (snprintf (ini, sizeof ini, "%s/model.ini", o->output) >=
      (int) sizeof ini ||
      snprintf (bin, sizeof bin, "%s/model.bin", o->output) >= (int) sizeof bin)
    return cli_fail ("%s: path too long", o->output);
  tt_error err;
  if (tt_bundle_unpack (o->model, ini, bin, &err))
    return cli_fail ("%s", err.message);
  printf ("unpacked %s -> %s (%" PRIu64 " bytes) + %s (%" PRIu64
      " bytes)\n", o->model, ini, cli_file_size (ini), bin,
      cli_file_size (bin));
  return 0;
}

static int
cli_strip (const cli_options * o)
{
  if (!o->output)
    return cli_fail ("strip needs -o MODEL.ini");
  tt_error err;
  if (tt_model_strip (o->model, o->output, o->weights, &err))
    return cli_fail ("%s", err.message);
  printf ("stripped %s -> %s (%" PRIu64 " bytes)", o->model, o->output,
      cli_file_size (o->output));
  if (o->weights)
    printf (" + %s (%" PRIu64 " bytes)", o->weights,
        cli_file_size (o->weights));
  printf ("\n");
  return 0;
}

static const char *
cli_kind_name (uint32_t kind)
{
  return kind == 0 ? "weight" : kind == 1 ? "adam_m" : "adam_v";
}

static int
cli_inspect (const cli_options * o)
{
  tt_bundle_info info;
  tt_error err;
  if (tt_bundle_inspect (o->model, &info, &err))
    return cli_fail ("%s", err.message);
  printf ("bundle=%s version=%u size=%" PRIu64 " header_bytes=%u "
      "alignment=%u batch_size=%u\n", o->model, info.version, info.file_size,
      info.header_bytes, info.alignment, info.batch_size);
  printf ("moments=%s counters=%s epoch=%u iteration=%u tensors=%u\n",
      info.has_moments ? "yes" : "no", info.has_counters ? "yes" : "no",
      info.epoch, info.iteration, info.n_tensors);
  printf ("%-8s %4s %12s %12s %12s %5s %8s  %s\n", "section", "type",
      "offset", "length", "raw_length", "flags", "crc32", "checksum");
  for (uint32_t i = 0; i < info.n_sections; i++) {
    const tt_bundle_section_info *sc = &info.sections[i];
    char status[64];
    if (sc->checksum_ok)
      snprintf (status, sizeof status, "ok");
    else
      snprintf (status, sizeof status, "MISMATCH (computed %08x)",
          sc->crc32_computed);
    printf ("%-8s %4u %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %5s %08x  "
        "%s\n", sc->name, sc->type, sc->offset, sc->length, sc->raw_length,
        sc->flags & TT_BUNDLE_SECTION_ZLIB ? "zlib" : "-", sc->crc32_stored,
        status);
  }
  printf ("%-40s %-7s %14s %14s\n", "tensor", "kind", "offset", "bytes");
  const tt_bundle_section_info *w = &info.sections[2];
  for (uint32_t i = 0; i < info.n_sections; i++)
    if (info.sections[i].type == TT_BUNDLE_SECTION_WEIGHTS)
      w = &info.sections[i];
  for (uint32_t i = 0; i < info.n_tensors; i++) {
    const tt_bundle_tensor_info *t = &info.tensors[i];
    printf ("%-40s %-7s %14" PRIu64 " %14" PRIu64 "\n", t->name,
        cli_kind_name (t->kind), t->offset, t->bytes);
  }
  printf ("weights_in_file_at=%" PRIu64 " (%s)\nchecksums=%s\n", w->offset,
      w->flags & TT_BUNDLE_SECTION_ZLIB ? "compressed: loads by "
      "decompressing into the pool" : "uncompressed: can be mapped and used "
      "in place", info.checksums_ok ? "ok" : "MISMATCH");
  int rc = info.checksums_ok ? 0 : 1;
  tt_bundle_info_clear (&info);
  return rc;
}

/* ---- export: the bundle as a linkable blob ------------------------------ */

static bool
cli_identifier (const char *s)
{
  if (!s || !(isalpha ((unsigned char) s[0]) || s[0] == '_') ||
      strlen (s) > 200)
    return false;
  for (const char *p = s; *p; p++)
    if (!isalnum ((unsigned char) *p) && *p != '_')
      return false;
  return true;
}

static bool
cli_section_ok (const char *s)
{
  if (!s || !*s || strlen (s) > 200)
    return false;
  for (const char *p = s; *p; p++)
    if (!isalnum ((unsigned char) *p) && !strchr ("._$-", *p))
      return false;
  return true;
}

/* MODEL.ttb -> MODEL, made a C identifier */
static void
cli_default_symbol (const char *path, char *out, size_t cap)
{
  char copy[PATH_MAX];
  snprintf (copy, sizeof copy, "%s", path);
  char *base = basename (copy);
  char *dot = strrchr (base, '.');
  if (dot && dot != base)
    *dot = '\0';
  size_t k = 0;
  if (isdigit ((unsigned char) base[0]))
    k = (size_t) snprintf (out, cap, "bundle_");
  for (const char *p = base; *p && k + 1 < cap && k < 200; p++)
    out[k++] = isalnum ((unsigned char) *p) ? *p : '_';
  out[k] = '\0';
  if (!k)
    snprintf (out, cap, "bundle");
}

static int
cli_write_text (const char *path, const char *text, size_t len)
{
  tt_atomic_file f;
  tt_error err;
  if (tt_atomic_file_open (&f, path, &err))
    return cli_fail ("%s", err.message);
  if (tt_atomic_file_write (&f, text, len, &err)) {
    tt_atomic_file_abort (&f);
    return cli_fail ("%s", err.message);
  }
  if (tt_atomic_file_commit (&f, &err))
    return cli_fail ("%s", err.message);
  return 0;
}

/* dst becomes a copy of src: a hard link when the file system allows (a
 * snapshot at no cost: bundles are only ever replaced, never rewritten),
 * else an in-kernel copy, else read and write; atomic either way. */
static int
cli_copy_file (const char *src, const char *dst)
{
  char rs[PATH_MAX], rd[PATH_MAX];
  if (realpath (src, rs) && realpath (dst, rd) && !strcmp (rs, rd))
    return 0;
  char tmp[PATH_MAX + 400];
  if (snprintf (tmp, sizeof tmp, "%s.tmp-link-%ld", dst, (long) getpid ())
      >= (int) sizeof tmp)
    return cli_fail ("%s: path too long", dst);
  unlink (tmp);
  if (link (src, tmp) == 0) {
    int rc = rename (tmp, dst);
    unlink (tmp);               /* left over when dst was already src */
    if (rc == 0)
      return 0;
  }
  int in = open (src, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return cli_fail ("%s: cannot open: %s", src, strerror (errno));
  tt_atomic_file f;
  tt_error err;
  if (tt_atomic_file_open (&f, dst, &err)) {
    close (in);
    return cli_fail ("%s", err.message);
  }
  bool fallback = false;
  for (;;) {
    ssize_t n = copy_file_range (in, NULL, f.fd, NULL, 1u << 30, 0);
    if (n == 0)
      break;
    if (n < 0) {
      fallback = true;
      break;
    }
  }
  if (fallback) {
    static char buf[1 << 20];
    if (lseek (in, 0, SEEK_SET) != 0 || ftruncate (f.fd, 0) != 0 ||
        lseek (f.fd, 0, SEEK_SET) != 0) {
      close (in);
      tt_atomic_file_abort (&f);
      return cli_fail ("%s: cannot copy to %s: %s", src, dst, strerror (errno));
    }
    ssize_t n;
    while ((n = read (in, buf, sizeof buf)) > 0)
      if (tt_atomic_file_write (&f, buf, (size_t) n, &err)) {
        close (in);
        tt_atomic_file_abort (&f);
        return cli_fail ("%s", err.message);
      }
    if (n < 0) {
      close (in);
      tt_atomic_file_abort (&f);
      return cli_fail ("%s: read failed: %s", src, strerror (errno));
    }
  }
  close (in);
  if (tt_atomic_file_commit (&f, &err))
    return cli_fail ("%s", err.message);
  return 0;
}

/* The bundle as a C array: decimal bytes, 24 to a line. */
static int
cli_write_c_array (const char *src, uint64_t size, tt_atomic_file * f)
{
  static char digits[256][5];
  static unsigned char lens[256];
  for (int v = 0; v < 256; v++)
    lens[v] = (unsigned char) snprintf (digits[v], sizeof digits[v], "%d,", v);
  FILE *in = fopen (src, "rb");
  if (!in)
    return cli_fail ("%s: cannot open: %s", src, strerror (errno));
  enum
  { CHUNK = 1 << 20 };
  unsigned char *bytes = malloc (CHUNK);
  char *text = malloc ((size_t) CHUNK * 4 + CHUNK / 24 + 16);
  tt_error err;
  int rc = 0;
  uint64_t done = 0;
  size_t n;
  while (bytes && text && (n = fread (bytes, 1, CHUNK, in)) > 0) {
    char *t = text;
    for (size_t i = 0; i < n; i++) {
      memcpy (t, digits[bytes[i]], 4);
      t += lens[bytes[i]];
      if ((done + i) % 24 == 23)
        *t++ = '\n';
    }
    done += n;
    if (tt_atomic_file_write (f, text, (size_t) (t - text), &err)) {
      rc = cli_fail ("%s", err.message);
      break;
    }
  }
  if (!bytes || !text)
    rc = cli_fail ("out of memory");
  else if (!rc && (ferror (in) || done != size))
    rc = cli_fail ("%s: read failed or the file changed", src);
  fclose (in);
  free (bytes);
  free (text);
  return rc;
}

static int
cli_export (const cli_options * o)
{
  if (!o->c_out)
    return cli_fail ("export needs --c-out DIR");
  const char *format = o->format ? o->format : "asm";
  if (strcmp (format, "asm") && strcmp (format, "c"))
    return cli_fail ("--format is asm or c, not '%s'", format);
  char sym[256];
  if (o->symbol)
    snprintf (sym, sizeof sym, "%s", o->symbol);
  else
    cli_default_symbol (o->model, sym, sizeof sym);
  if (!cli_identifier (sym))
    return cli_fail ("--symbol '%s' is not a C identifier (letters, digits "
        "and _, at most 200)", sym);
  char section[256];
  if (o->section)
    snprintf (section, sizeof section, "%s", o->section);
  else
    snprintf (section, sizeof section, ".rodata.%s", sym);
  if (!cli_section_ok (section))
    return cli_fail ("--section '%s': use letters, digits and . _ $ - (at "
        "most 200)", section);

  /* a damaged bundle is not worth embedding */
  const double t0 = cli_now ();
  tt_bundle_info info;
  tt_error err;
  if (tt_bundle_inspect (o->model, &info, &err))
    return cli_fail ("%s", err.message);
  const uint64_t size = info.file_size;
  const uint32_t bundle_align = info.alignment;
  const bool ok = info.checksums_ok;
  tt_bundle_info_clear (&info);
  if (!ok)
    return cli_fail ("%s: a section's checksum does not match: not "
        "exported (see tensor-trainer inspect)", o->model);
  const uint64_t align = o->align ? o->align : bundle_align > 64 ?
      bundle_align : 64;
  if (align & (align - 1) || align > TT_BUNDLE_MAX_ALIGNMENT)
    return cli_fail ("--align %" PRIu64 " is not a power of two in [1, %d]",
        align, TT_BUNDLE_MAX_ALIGNMENT);
  const uint64_t in_place = bundle_align < 64 ? bundle_align : 64;
  if (align < in_place)
    fprintf (stderr, "tensor-trainer: note: --align %" PRIu64 " is below "
        "the %" PRIu64 " bytes using the weights in place needs; copy modes "
        "still work\n", align, in_place);

  if (mkdir (o->c_out, 0777) != 0 && errno != EEXIST)
    return cli_fail ("%s: cannot create: %s", o->c_out, strerror (errno));
  char dir[PATH_MAX];
  if (!realpath (o->c_out, dir))
    return cli_fail ("%s: %s", o->c_out, strerror (errno));
  char upper[256];
  size_t k;
  for (k = 0; sym[k]; k++)
    upper[k] = (char) toupper ((unsigned char) sym[k]);
  upper[k] = '\0';
  char path[PATH_MAX + 300];

  /* the header */
  char *text = NULL;
  size_t len = 0;
  FILE *t = open_memstream (&text, &len);
  if (!t)
    return cli_fail ("out of memory");
  fprintf (t, "/* Generated by tensor-trainer export from %s: do not edit.\n"
      " *\n"
      " * %s is the bundle (%" PRIu64 " bytes), aligned to %" PRIu64
      " bytes in section %s.\n"
      " * Open it without a file system:\n"
      " *   tt_bundle_load_options opt = { .mode = TT_BUNDLE_IN_PLACE };\n"
      " *   tt_model *m = tt_bundle_load_memory (%s, %s_size, \"%s\", &opt,"
      " &err);\n"
      " * TT_BUNDLE_IN_PLACE evaluates with the weights where they lie "
      "(read-only);\n"
      " * TT_BUNDLE_READ copies them into the pool (training allowed). */\n"
      "#ifndef TT_EXPORT_%s_H\n#define TT_EXPORT_%s_H\n\n"
      "#include <stddef.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
      "#define %s_SIZE ((size_t) %" PRIu64 "u)\n#define %s_ALIGNMENT %"
      PRIu64 "\n\nextern const unsigned char %s[];\n"
      "extern const size_t %s_size;\n\n#ifdef __cplusplus\n}\n#endif\n"
      "#endif\n", o->model, sym, size, align, section, sym, sym, sym, upper,
      upper, upper, size, upper, align, sym, sym);
  fclose (t);
  snprintf (path, sizeof path, "%s/%s.h", dir, sym);
  int rc = text ? cli_write_text (path, text, len) : cli_fail ("out of "
      "memory");
  free (text);
  if (rc)
    return rc;

  if (!strcmp (format, "asm")) {
    char blob[PATH_MAX + 300];
    snprintf (blob, sizeof blob, "%s/%s.ttb", dir, sym);
    if (strpbrk (blob, "\"\\\n"))
      return cli_fail ("%s: a path with quotes, backslashes or newlines "
          "cannot go into .incbin; use --format c", blob);
    if (cli_copy_file (o->model, blob))
      return 1;
    text = NULL;
    t = open_memstream (&text, &len);
    if (!t)
      return cli_fail ("out of memory");
    fprintf (t, "/* Generated by tensor-trainer export from %s: do not "
        "edit.\n"
        " * .incbin pulls the bundle in as it is, so this file assembles in "
        "the\n"
        " * same time whatever the model's size. GNU assembler syntax, ELF "
        "targets\n"
        " * (gcc -c %s.S, clang -c %s.S); elsewhere export with --format c.\n"
        " * The bundle is read from %s_PATH: define it to move the file,\n"
        " * e.g. -D%s_PATH='\"some/dir/%s.ttb\"'. */\n"
        "#ifndef %s_PATH\n#define %s_PATH \"%s\"\n#endif\n"
        "#ifndef __ELF__\n#error \"%s.S is for ELF targets: export with "
        "--format c\"\n#endif\n\n"
        "\t.section %s,\"a\",%%progbits\n\t.balign %" PRIu64 "\n"
        "\t.globl %s\n\t.type %s, %%object\n%s:\n\t.incbin %s_PATH\n"
        ".L%s_end:\n\t.size %s, .L%s_end - %s\n\n"
        "\t.section .rodata\n\t.balign 8\n\t.globl %s_size\n"
        "\t.type %s_size, %%object\n\t.size %s_size, __SIZEOF_SIZE_T__\n"
        "%s_size:\n#if __SIZEOF_SIZE_T__ == 8\n\t.quad .L%s_end - %s\n"
        "#else\n\t.long .L%s_end - %s\n#endif\n\n"
        "\t.section .note.GNU-stack,\"\",%%progbits\n", o->model, sym, sym,
        upper, upper, sym, upper, upper, blob, sym, section, align, sym, sym,
        sym, upper, sym, sym, sym, sym, sym, sym, sym, sym, sym, sym, sym, sym);
    fclose (t);
    snprintf (path, sizeof path, "%s/%s.S", dir, sym);
    rc = text ? cli_write_text (path, text, len) : cli_fail ("out of "
        "memory");
    free (text);
  } else {
    snprintf (path, sizeof path, "%s/%s.c", dir, sym);
    tt_atomic_file f;
    if (tt_atomic_file_open (&f, path, &err))
      return cli_fail ("%s", err.message);
    char head[2048];
    int n = snprintf (head, sizeof head, "/* Generated by tensor-trainer "
        "export from %s: do not edit.\n"
        " * The portable route: a C array of the bundle's %" PRIu64
        " bytes. Large\n"
        " * models compile slowly this way; the .incbin route (--format asm)"
        " does not. */\n"
        "#include \"%s.h\"\n\n"
        "#if defined(__GNUC__) || defined(__clang__)\n"
        "__attribute__ ((section (\"%s\"), aligned (%" PRIu64 ")))\n"
        "#else\n_Alignas (%" PRIu64 ")      /* section: GNU C only */\n"
        "#endif\nconst unsigned char %s[%" PRIu64 "] = {\n", o->model, size,
        sym, section, align, align, sym, size);
    rc = tt_atomic_file_write (&f, head, (size_t) n, &err) ?
        cli_fail ("%s", err.message) : cli_write_c_array (o->model, size, &f);
    if (!rc) {
      n = snprintf (head, sizeof head, "};\n\nconst size_t %s_size = %"
          PRIu64 "u;\n", sym, size);
      if (tt_atomic_file_write (&f, head, (size_t) n, &err))
        rc = cli_fail ("%s", err.message);
    }
    if (rc)
      tt_atomic_file_abort (&f);
    else if (tt_atomic_file_commit (&f, &err))
      rc = cli_fail ("%s", err.message);
  }
  if (!rc)
    printf ("exported %s (%" PRIu64 " bytes) -> %s/%s.h + %s/%s.%s symbol=%s "
        "section=%s align=%" PRIu64 " seconds=%.3f\n", o->model, size, dir,
        sym, dir, sym, strcmp (format, "asm") ? "c" : "S", sym, section,
        align, cli_now () - t0);
  return rc;
}

int
main (int argc, char **argv)
{
  cli_options o;
  if (argc >= 2 && !strcmp (argv[1], "aggregate"))
    return tt_cli_aggregate (argc - 1, argv + 1);       /* aggregate.c */
  if (argc >= 2 && (!strcmp (argv[1], "-h") || !strcmp (argv[1], "--help"))) {
    cli_usage (stdout);
    return 0;
  }
  int p = cli_parse (argc, argv, &o);
  if (p == -1) {
    cli_usage (stderr);
    return 2;
  }
  if (p)
    return 2;
  if (!strcmp (o.command, "train"))
    return cli_train (&o, true);
  if (!strcmp (o.command, "eval"))
    return cli_train (&o, false);
  if (!strcmp (o.command, "info"))
    return cli_info (&o);
  if (!strcmp (o.command, "plan"))
    return cli_plan (&o);
  if (!strcmp (o.command, "check"))
    return cli_check (&o);
  if (!strcmp (o.command, "pack"))
    return cli_pack (&o);
  if (!strcmp (o.command, "unpack"))
    return cli_unpack (&o);
  if (!strcmp (o.command, "strip"))
    return cli_strip (&o);
  if (!strcmp (o.command, "inspect"))
    return cli_inspect (&o);
  if (!strcmp (o.command, "export"))
    return cli_export (&o);
  cli_fail ("unknown command '%s'", o.command);
  cli_usage (stderr);
  return 2;
}
