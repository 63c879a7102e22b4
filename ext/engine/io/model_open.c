/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Opening a model by path (tt_model_open): a bundle or an INI file, told
 * apart by the file's first bytes, compiled with the caller's options and
 * given its weights. The elements and the CLI each made this choice
 * themselves before; here it is made once, with the same calls in the same
 * order, so every caller gets the same messages.
 */
#include "tt_internal.h"
#include "tt_bundle.h"

#include <stdio.h>

/* TT_MODEL_FILE_ANY when the file cannot be opened: the loader chosen
 * then says why in its own words */
static tt_model_file_kind
model_open_kind (const char *path)
{
  FILE *f = path ? fopen (path, "rb") : NULL;
  if (!f)
    return TT_MODEL_FILE_ANY;
  fclose (f);
  return tt_bundle_is_bundle (path) ? TT_MODEL_FILE_BUNDLE : TT_MODEL_FILE_INI;
}

static const char *
model_open_kind_name (tt_model_file_kind kind)
{
  return kind == TT_MODEL_FILE_BUNDLE ? "a bundle" : "an INI file";
}

/* The kind asked for, and options that only one kind can honour. */
static tt_status
model_open_check_kind (const char *path, tt_model_file_kind kind,
    const tt_open_options * o, tt_error * err)
{
  if (kind == TT_MODEL_FILE_ANY)
    return TT_OK;
  if (o->kind != TT_MODEL_FILE_ANY && o->kind != kind)
    return tt_fail (err, TT_ERR_INVALID, "%s is %s, not %s", path,
        model_open_kind_name (kind), model_open_kind_name (o->kind));
  if (kind == TT_MODEL_FILE_BUNDLE && o->train && *o->train)
    return tt_fail (err, TT_ERR_INVALID, "%s is a bundle: it trains what "
        "it was planned to train (choose what trains when planning the "
        "INI file, then pack it)", path);
  if (kind == TT_MODEL_FILE_BUNDLE && o->precision && *o->precision)
    return tt_fail (err, TT_ERR_INVALID, "%s is a bundle: it trains at "
        "the precision it was planned for (choose the precision when "
        "planning the INI file, then pack it)", path);
  if (kind == TT_MODEL_FILE_BUNDLE && o->memory_limit)
    return tt_fail (err, TT_ERR_INVALID, "%s is a bundle: its plan brings "
        "its pool (a memory limit applies to a model planned from an INI "
        "file; plan it under the limit, then pack it)", path);
  if (kind == TT_MODEL_FILE_BUNDLE && o->alignment)
    return tt_fail (err, TT_ERR_INVALID, "%s is a bundle: its plan brings "
        "its alignment (an alignment applies to a model planned from an "
        "INI file)", path);
  if (kind == TT_MODEL_FILE_INI && (o->mode != TT_BUNDLE_READ || o->trust))
    return tt_fail (err, TT_ERR_INVALID, "%s is not a bundle: a bundle "
        "load mode and trust apply to bundles only", path);
  return TT_OK;
}

static tt_model *
model_open_bundle (const char *path, const tt_open_options * o, tt_error * err)
{
  tt_bundle_load_options lo = { 0 };
  lo.mode = o->mode;
  lo.batch_size = o->batch_size;
  lo.plan_mode = o->plan_mode;
  lo.inference = o->inference;
  lo.has_seed = o->has_seed;
  lo.seed = o->seed;
  lo.trust = o->trust;
  return tt_bundle_load (path, &lo, err);
}

/* The settings in the order the programs applied them before compiling. */
static tt_status
model_open_settings (tt_model * m, const tt_open_options * o, tt_error * err)
{
  tt_status st;
  if (o->batch_size && (st = tt_model_set_batch_size (m, o->batch_size, err)))
    return st;
  if (o->has_seed)
    tt_model_set_seed (m, o->seed);
  if ((st = tt_model_set_plan_mode (m, o->plan_mode, err)) ||
      (st = tt_model_set_plan_thorough (m, o->plan_thorough, err)) ||
      (st = tt_model_set_inference (m, o->inference, err)))
    return st;
  if (o->alignment && (st = tt_model_set_alignment (m, o->alignment, err)))
    return st;
  if (o->memory_limit &&
      (st = tt_model_set_memory_limit (m, o->memory_limit, err)))
    return st;
  if (o->threads && (st = tt_model_set_threads (m, o->threads, err)))
    return st;
  if (o->train && *o->train && (st = tt_model_set_train (m, o->train, err)))
    return st;
  /* mixed precision */
  if (o->precision && *o->precision &&
      (st = tt_model_set_precision (m, o->precision, err)))
    return st;
  return TT_OK;
}

/* The weights file, if any, into an opened model (freed on failure) */
static tt_model *
model_open_weights (tt_model * m, const tt_open_options * o,
    tt_open_info * info, tt_error * err)
{
  if (o->weights && *o->weights) {
    info->failed_step = TT_OPEN_WEIGHTS;
    if (tt_model_load_weights (m, o->weights, err)) {
      tt_model_free (m);
      return NULL;
    }
  }
  info->failed_step = TT_OPEN_OK;
  return m;
}

/* A loaded INI model: the options, compile, the weights (freed on
 * failure; NULL in, NULL out) */
static tt_model *
model_open_ini_loaded (tt_model * m, const tt_open_options * o,
    tt_open_info * info, tt_error * err)
{
  if (!m)
    return NULL;
  info->failed_step = TT_OPEN_SETTINGS;
  if (!model_open_settings (m, o, err)) {
    info->failed_step = TT_OPEN_COMPILE;
    if (!tt_model_compile (m, err))
      return model_open_weights (m, o, info, err);
  }
  tt_model_free (m);
  return NULL;
}

tt_model *
tt_model_open (const char *path, const tt_open_options * options,
    tt_open_info * info, tt_error * err)
{
  static const tt_open_options defaults = { 0 };
  const tt_open_options *o = options ? options : &defaults;
  tt_open_info scratch;
  if (!info)
    info = &scratch;
  info->kind = model_open_kind (path);
  info->failed_step = TT_OPEN_KIND;
  if (model_open_check_kind (path, info->kind, o, err))
    return NULL;

  info->failed_step = TT_OPEN_READ;
  /* a file that cannot be opened goes to the loader of the kind asked
   * for (an INI's when either would do), which says why */
  if (info->kind == TT_MODEL_FILE_BUNDLE || (info->kind == TT_MODEL_FILE_ANY
          && o->kind == TT_MODEL_FILE_BUNDLE)) {
    tt_model *m = model_open_bundle (path, o, err);
    if (!m)
      return NULL;
    info->failed_step = TT_OPEN_SETTINGS;
    if (o->threads && tt_model_set_threads (m, o->threads, err)) {
      tt_model_free (m);
      return NULL;
    }
    return model_open_weights (m, o, info, err);
  }
  return model_open_ini_loaded (tt_model_load_ini (path, err), o, info, err);
}

tt_model *
tt_model_open_ini_text (const char *text, size_t len, const char *name,
    const tt_open_options * options, tt_open_info * info, tt_error * err)
{
  static const tt_open_options defaults = { 0 };
  const tt_open_options *o = options ? options : &defaults;
  tt_open_info scratch;
  if (!info)
    info = &scratch;
  info->kind = TT_MODEL_FILE_INI;
  info->failed_step = TT_OPEN_KIND;
  if (model_open_check_kind (name, TT_MODEL_FILE_INI, o, err))
    return NULL;
  info->failed_step = TT_OPEN_READ;
  return model_open_ini_loaded (tt_model_load_ini_text (text, len, name,
          err), o, info, err);
}

tt_status
tt_model_load_weights (tt_model * m, const char *path, tt_error * err)
{
  if (!path)
    return tt_fail (err, TT_ERR_INVALID, "%s: no weights path given",
        tt_model_path (m));
  return tt_bundle_is_bundle (path) ? tt_bundle_load_weights (m, path, err) :
      tt_model_load_bin (m, path, err);
}
