/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer train and eval (cli_train): passes over a data set,
 * an epoch's line of key=value pairs, checkpoints, the best model and
 * the final save; --profile's table of the layers' times.
 */
#include "cli.h"
#include "tt_bundle.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* eval --per-class: the last batch's n samples counted by their class
 * (labels) and whether the output's argmax (the first maximum, as the
 * engine scores) is that class. */
static void
cli_count_classes (const tt_model * m, const uint8_t * labels, uint32_t n,
    size_t classes, uint64_t * seen, uint64_t * correct)
{
  const float *y = tt_model_output (m);
  for (uint32_t b = 0; b < n; b++, y += classes) {
    size_t best = 0;
    for (size_t i = 1; i < classes; i++)
      if (y[i] > y[best])
        best = i;
    seen[labels[b]]++;
    correct[labels[b]] += best == labels[b];
  }
}

/* Runs one pass over d; trains when train, else evaluates (and with
 * class_seen, counts the samples and the correct ones by class). */
static int
cli_pass (tt_model * m, cli_dataset * d, bool train, float *onehot,
    cli_fcache * fc, double *loss, double *accuracy, double *seconds,
    uint64_t * class_seen, uint64_t * class_correct)
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
    tt_batch_result r;
    if (train && fc && fc->record) {
      /* the feature cache: from it, or kept for it (no image read then) */
      fc->trained += n;
      if (cli_fcache_has (fc, at, n)) {
        if (cli_fcache_step (fc, m, at, n, onehot, &r))
          return 1;
        loss_sum += r.loss * n;
        correct += r.correct;
        continue;
      }
    }
    char rerr[1024];
    if (tt_idx_file_read (&d->images, at, n, d->batch, rerr, sizeof rerr))
      return cli_fail ("%s", rerr);
    const void *inputs[1] = { d->batch };
    if (train && fc && fc->record && !fc->filled) {
      if (cli_fcache_keep_step (fc, m, at, n, inputs, &d->type, onehot, &r))
        return 1;
      loss_sum += r.loss * n;
      correct += r.correct;
      continue;
    }
    tt_status st = train ?
        tt_model_train_batch (m, n, inputs, &d->type, onehot, &r, &err) :
        tt_model_eval_batch (m, n, inputs, &d->type, onehot, &r, &err);
    if (st)
      return cli_fail ("%s", err.message);
    loss_sum += r.loss * n;
    correct += r.correct;
    if (class_seen)
      cli_count_classes (m, d->labels + at, n, classes, class_seen,
          class_correct);
  }
  if (train && fc && cli_fcache_pass_done (fc))
    return 1;
  *seconds = cli_now () - t0;
  *loss = d->count ? loss_sum / d->count : NAN;
  *accuracy = d->count ? (double) correct / d->count : NAN;
  return 0;
}

/* the path names a BIN (tt_model_save's rule) */
static bool
cli_is_bin_path (const char *path)
{
  const char *slash = strrchr (path, '/');
  const char *dot = strrchr (slash ? slash + 1 : path, '.');
  return dot && !strcasecmp (dot, ".bin");
}

int
cli_train (const cli_options * o, bool train)
{
  if (!o->data || !o->labels)
    return cli_fail ("%s needs --data and --labels", o->command);
  if (o->compress && (!train || !o->save || cli_is_bin_path (o->save)))
    return cli_fail ("--compress applies to a bundle saved by train --save");
  if (!o->valid_data != !o->valid_labels)
    return cli_fail ("--valid-data and --valid-labels go together");
  if ((o->feature_cache || o->feature_cache_file) && !train)
    return cli_fail ("--feature-cache and --feature-cache-file apply to "
        "train");
  if (o->feature_cache && o->feature_cache_file)
    return cli_fail ("--feature-cache BYTES (memory) or "
        "--feature-cache-file FILE: one of them");
  if (o->per_class && train)
    return cli_fail ("--per-class applies to eval");
  if (!train && (o->replay_size || o->replay_file || o->has_replay_per_batch))
    return cli_fail ("--replay-size, --replay-file and --replay-per-batch "
        "apply to train");
  if ((o->feature_cache || o->feature_cache_file) && o->replay_size)
    return cli_fail ("--feature-cache and --replay-size: one or the other "
        "(replayed batches mix samples the cache does not key)");
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
  cli_fcache fcache = { 0 };
  fcache.fd = -1;
  uint64_t *class_seen = NULL, *class_correct = NULL;
  uint64_t steps_split = 0, steps_inline = 0;
  cli_replay replay = { 0 };
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
    const size_t classes = (size_t) ls.channel * ls.height * ls.width;
    if (o->per_class) {
      class_seen = calloc (classes, sizeof *class_seen);
      class_correct = calloc (classes, sizeof *class_correct);
      if (!class_seen || !class_correct) {
        cli_fail ("out of memory");
        goto out;
      }
    }
    if (cli_pass (m, &train_set, false, onehot, NULL, &loss, &acc, &sec,
            class_seen, class_correct))
      goto out;
    printf ("eval samples=%u loss=%.6f accuracy=%.4f samples_per_s=%.1f",
        train_set.count, loss, acc, train_set.count / sec);
    cli_print_thread_steps (m, &steps_split, &steps_inline);
    printf ("\n");
    for (size_t c = 0; o->per_class && c < classes; c++)
      printf ("class=%zu samples=%" PRIu64 " correct=%" PRIu64
          " accuracy=%.4f\n", c, class_seen[c], class_correct[c],
          class_seen[c] ? (double) class_correct[c] / class_seen[c] : NAN);
    if (o->profile)
      cli_print_profile (m);
    rc = 0;
    goto out;
  }

  if (cli_replay_open (o, m, &replay))
    goto out;
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
  if (cli_fcache_open (&fcache, o, m, train_set.count))
    goto out;
  const uint32_t epochs = o->epochs ? o->epochs : tt_model_epochs (m);
  /* --resume continues a run killed after a checkpoint: the weights,
   * moments and counters came from --load, the epochs from its counter */
  const uint32_t first = o->resume ? tt_model_epoch (m) : 0;
  if (o->resume)
    printf ("# resuming after epoch %u (iteration %u)\n", first,
        tt_model_iteration (m));
  uint64_t skipped_before = tt_model_skipped_steps (m);
  for (uint32_t e = first; e < epochs; e++) {
    double loss, acc, sec, vloss = NAN, vacc = NAN, vsec;
    uint64_t replayed = 0;
    if (replay.on ? cli_replay_pass (m, &train_set, &replay, onehot, &loss,
            &acc, &sec, &replayed) : cli_pass (m, &train_set, true, onehot,
            &fcache, &loss, &acc, &sec, NULL, NULL))
      goto out;
    if (o->valid_data && cli_pass (m, &valid_set, false, onehot, NULL, &vloss,
            &vacc, &vsec, NULL, NULL))
      goto out;
    tt_model_finish_epoch (m);
    printf ("epoch=%u/%u loss=%.6f accuracy=%.4f val_loss=%.6f "
        "val_accuracy=%.4f samples_per_s=%.1f seconds=%.3f", e + 1, epochs,
        loss, acc, vloss, vacc, train_set.count / sec, sec);
    cli_print_thread_steps (m, &steps_split, &steps_inline);
    if (replay.on)
      printf (" replayed=%" PRIu64, replayed);
    cli_print_loss_scaling (m, &skipped_before);
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
  cli_fcache_close (&fcache);
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
  if (cli_replay_save (o, &replay))
    goto out;
  rc = 0;
out:
  cli_fcache_close (&fcache);
  free (class_seen);
  free (class_correct);
  cli_replay_close (&replay);
  free (onehot);
  cli_free_dataset (&train_set);
  cli_free_dataset (&valid_set);
  tt_model_free (m);
  return rc;
}
