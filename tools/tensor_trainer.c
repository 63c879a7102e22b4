/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer: the engine without GStreamer, to train, evaluate and
 * inspect models from the command line and to benchmark the engine.
 *
 *   tensor-trainer train MODEL.ini --data IMAGES --labels LABELS
 *       [--valid-data IMAGES --valid-labels LABELS] [--epochs N]
 *       [--batch N] [--samples N] [--load FILE.bin] [--save FILE.bin]
 *       [--seed S] [--threads T]
 *   tensor-trainer eval MODEL.ini --weights FILE.bin --data IMAGES
 *       --labels LABELS [--batch N] [--samples N]
 *   tensor-trainer info MODEL.ini [--batch N]
 *   tensor-trainer plan MODEL.ini -o OUT.opt.ini [--batch N] [--align N]
 *   tensor-trainer check MODEL.opt.ini
 *
 * Data are MNIST-format IDX files, gzipped or not. Every epoch prints one
 * line of key=value pairs so scripts can read it.
 */
#include "tt_engine.h"
#include "tt_idx.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  const char *command, *model;
  const char *data, *labels, *valid_data, *valid_labels;
  const char *load, *save, *weights, *output;
  uint32_t epochs, batch, samples, valid_samples, align;
  bool replan, naive;
  uint64_t seed;
  bool has_seed;
  int threads;
} cli_options;

typedef struct {
  tt_idx images, labels;
  tt_dtype type;
  size_t sample_bytes;
  uint32_t count;
} cli_dataset;

static void
cli_usage (FILE *out)
{
  fputs ("usage:\n"
      "  tensor-trainer train MODEL.ini --data IMAGES --labels LABELS\n"
      "      [--valid-data IMAGES --valid-labels LABELS] [--epochs N]\n"
      "      [--batch N] [--samples N] [--valid-samples N]\n"
      "      [--load FILE.bin] [--save FILE.bin] [--seed S] [--threads T]\n"
      "  tensor-trainer eval MODEL.ini --weights FILE.bin --data IMAGES\n"
      "      --labels LABELS [--batch N] [--samples N]\n"
      "  tensor-trainer info MODEL.ini [--batch N]\n"
      "  tensor-trainer plan MODEL.ini -o OUT.opt.ini [--batch N] "
      "[--align N]\n"
      "  tensor-trainer check MODEL.opt.ini\n"
      "train, eval and info take --replan (ignore a stored plan) and --naive\n"
      "(no memory reuse).\n"
      "IMAGES and LABELS are IDX files (MNIST format), gzipped or not.\n",
      out);
}

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

static bool
cli_uint (const char *s, uint64_t max, uint64_t *out)
{
  char *end;
  errno = 0;
  if (!s || *s == '-' || *s == '\0')
    return false;
  unsigned long long v = strtoull (s, &end, 10);
  if (errno || *end || v > max)
    return false;
  *out = v;
  return true;
}

static int
cli_parse (int argc, char **argv, cli_options *o)
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
    else if (!strcmp (a, "--align"))
      num = &o->align;
    else if (!strcmp (a, "--replan") || !strcmp (a, "--naive")) {
      if (a[2] == 'r')
        o->replan = true;
      else
        o->naive = true;
      continue;
    }
    else if (!strcmp (a, "--epochs"))
      num = &o->epochs;
    else if (!strcmp (a, "--batch"))
      num = &o->batch;
    else if (!strcmp (a, "--samples"))
      num = &o->samples;
    else if (!strcmp (a, "--valid-samples"))
      num = &o->valid_samples;
    else if (!strcmp (a, "--seed")) {
      if (!cli_uint (v, UINT64_MAX, &o->seed))
        return cli_fail ("--seed needs a non-negative integer"), -2;
      o->has_seed = true;
      i++;
      continue;
    } else if (!strcmp (a, "--threads")) {
      if (!cli_uint (v, 1024, &n) || n == 0)
        return cli_fail ("--threads needs an integer in [1, 1024]"), -2;
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
    else if (!cli_uint (v, UINT32_MAX, &n) || n == 0)
      return cli_fail ("%s needs a positive integer, got '%s'", a, v), -2;
    else
      *num = (uint32_t) n;
    i++;
  }
  return 0;
}

static int
cli_load_dataset (const char *images, const char *labels, tt_model *m,
    uint32_t limit, cli_dataset *d)
{
  char err[1024];
  memset (d, 0, sizeof *d);
  if (tt_idx_load (images, &d->images, err, sizeof err) != 0 ||
      tt_idx_load (labels, &d->labels, err, sizeof err) != 0)
    return cli_fail ("%s", err);
  if (tt_idx_check_pair (&d->images, &d->labels, err, sizeof err) != 0)
    return cli_fail ("%s and %s: %s", images, labels, err);
  tt_shape in;
  tt_model_input_shape (m, 0, &in);
  const size_t per = (size_t) in.channel * in.height * in.width;
  if (d->images.type == TT_IDX_UINT8)
    d->type = TT_DTYPE_UINT8;
  else if (d->images.type == TT_IDX_FLOAT32)
    d->type = TT_DTYPE_FLOAT32;
  else
    return cli_fail ("%s: only uint8 and float32 images are supported",
        images);
  size_t elem = d->type == TT_DTYPE_UINT8 ? 1 : 4;
  if (d->images.item_bytes != per * elem)
    return cli_fail ("%s: a sample holds %zu values but the model %s takes "
        "%u:%u:%u = %zu", images, d->images.item_bytes / elem,
        tt_model_path (m), in.channel, in.height, in.width, per);
  d->sample_bytes = d->images.item_bytes;
  d->count = (uint32_t) d->images.count;
  if (limit && limit < d->count)
    d->count = limit;
  tt_shape ls = tt_model_label_shape (m);
  const size_t classes = (size_t) ls.channel * ls.height * ls.width;
  for (uint32_t i = 0; i < d->count; i++)
    if (d->labels.data[i] >= classes)
      return cli_fail ("%s: label %u of sample %u is out of range for %zu "
          "classes", labels, d->labels.data[i], i, classes);
  return 0;
}

static void
cli_free_dataset (cli_dataset *d)
{
  tt_idx_clear (&d->images);
  tt_idx_clear (&d->labels);
}

static double
cli_now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs one pass over d; trains when train, else evaluates. */
static int
cli_pass (tt_model *m, cli_dataset *d, bool train, float *onehot,
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
      onehot[i * classes + d->labels.data[at + i]] = 1.0f;
    const void *inputs[1] = { d->images.data + (size_t) at * d->sample_bytes };
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

static tt_model *
cli_open_model (const cli_options *o)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (o->model, &err);
  if (!m) {
    cli_fail ("%s", err.message);
    return NULL;
  }
  tt_plan_mode mode = o->naive ? TT_PLAN_NAIVE : o->replan ? TT_PLAN_REPLAN :
      TT_PLAN_AUTO;
  if ((o->batch && tt_model_set_batch_size (m, o->batch, &err)) ||
      (o->has_seed && (tt_model_set_seed (m, o->seed), false)) ||
      tt_model_set_plan_mode (m, mode, &err) ||
      (o->align && tt_model_set_alignment (m, o->align, &err)) ||
      tt_model_compile (m, &err)) {
    cli_fail ("%s", err.message);
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static int
cli_train (const cli_options *o, bool train)
{
  if (!o->data || !o->labels)
    return cli_fail ("%s needs --data and --labels", o->command);
  if (!train && !o->weights)
    return cli_fail ("eval needs --weights FILE.bin");
  if (!o->valid_data != !o->valid_labels)
    return cli_fail ("--valid-data and --valid-labels go together");
  if (o->threads)
    tt_set_num_threads (o->threads);
  tt_model *m = cli_open_model (o);
  if (!m)
    return 1;
  tt_error err;
  cli_dataset train_set = { 0 }, valid_set = { 0 };
  float *onehot = NULL;
  int rc = 1;
  const char *weights = train ? o->load : o->weights;
  if (weights && tt_model_load_bin (m, weights, &err)) {
    cli_fail ("%s", err.message);
    goto out;
  }
  if (cli_load_dataset (o->data, o->labels, m, o->samples, &train_set))
    goto out;
  if (o->valid_data && cli_load_dataset (o->valid_data, o->valid_labels, m,
          o->valid_samples, &valid_set))
    goto out;
  tt_shape ls = tt_model_label_shape (m);
  onehot = calloc ((size_t) tt_model_batch_size (m) * ls.channel * ls.height
      * ls.width, sizeof *onehot);
  if (!onehot) {
    cli_fail ("out of memory");
    goto out;
  }

  if (!train) {
    double loss, acc, sec;
    if (cli_pass (m, &train_set, false, onehot, &loss, &acc, &sec))
      goto out;
    printf ("eval samples=%u loss=%.6f accuracy=%.4f samples_per_s=%.1f\n",
        train_set.count, loss, acc, train_set.count / sec);
    rc = 0;
    goto out;
  }

  tt_memory_info mem;
  tt_model_memory_info (m, &mem);
  printf ("# model=%s batch=%u samples=%u pool_bytes=%zu weight_bytes=%zu "
      "tensors=%zu\n", o->model, tt_model_batch_size (m), train_set.count,
      mem.pool_bytes, mem.weight_bytes, mem.tensor_count);
  const uint32_t epochs = o->epochs ? o->epochs : tt_model_epochs (m);
  for (uint32_t e = 0; e < epochs; e++) {
    double loss, acc, sec, vloss = NAN, vacc = NAN, vsec;
    if (cli_pass (m, &train_set, true, onehot, &loss, &acc, &sec))
      goto out;
    if (o->valid_data && cli_pass (m, &valid_set, false, onehot, &vloss,
            &vacc, &vsec))
      goto out;
    tt_model_finish_epoch (m);
    printf ("epoch=%u/%u loss=%.6f accuracy=%.4f val_loss=%.6f "
        "val_accuracy=%.4f samples_per_s=%.1f seconds=%.3f\n", e + 1, epochs,
        loss, acc, vloss, vacc, train_set.count / sec, sec);
    fflush (stdout);
  }
  if (o->save) {
    if (tt_model_save_bin (m, o->save, &err)) {
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

static void
cli_print_plan (const tt_plan_info *p)
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
      p->from_stored_plan ? "validation" : "planning",
      p->plan_seconds * 1e3);
}

static int
cli_plan (const cli_options *o)
{
  if (!o->output)
    return cli_fail ("plan needs -o OUT.opt.ini");
  cli_options copy = *o;
  copy.replan = true;
  tt_model *m = cli_open_model (&copy);
  if (!m)
    return 1;
  tt_error err;
  tt_plan_info p;
  tt_model_plan_info (m, &p);
  int rc = 0;
  if (tt_model_save_plan_ini (m, o->output, &err)) {
    rc = cli_fail ("%s", err.message);
  } else {
    printf ("model=%s batch=%u -> %s\n", o->model, tt_model_batch_size (m),
        o->output);
    cli_print_plan (&p);
  }
  tt_model_free (m);
  return rc;
}

static int
cli_check (const cli_options *o)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (o->model, &err);
  if (!m)
    return cli_fail ("%s", err.message);
  int rc = 0;
  if (!tt_model_has_stored_plan (m))
    rc = cli_fail ("%s: no stored plan ([Plan] section); make one with "
        "tensor-trainer plan", o->model);
  else if (tt_model_compile (m, &err))
    rc = cli_fail ("%s", err.message);
  else {
    tt_plan_info p;
    tt_model_plan_info (m, &p);
    printf ("%s: plan valid\n", o->model);
    cli_print_plan (&p);
  }
  tt_model_free (m);
  return rc;
}

static int
cli_info (const cli_options *o)
{
  tt_model *m = cli_open_model (o);
  if (!m)
    return 1;
  tt_memory_info mem;
  tt_model_memory_info (m, &mem);
  tt_shape out = tt_model_output_shape (m);
  printf ("model=%s batch=%u inputs=%u\n", o->model, tt_model_batch_size (m),
      tt_model_num_inputs (m));
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

int
main (int argc, char **argv)
{
  cli_options o;
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
  cli_fail ("unknown command '%s'", o.command);
  cli_usage (stderr);
  return 2;
}
