/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a trained model goes. A run can take hours; finding out only at
 * the end that the folder does not exist, or that the name is one
 * tt_model_save refuses, loses all of it. So the destination is checked
 * before training (tt_model_check_save_path), and a final save that still
 * fails (disk full, folder gone) writes the model somewhere else and says
 * where (tt_model_save_with_fallback).
 */
#include "tt_internal.h"
#include "tt_bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SAVE_PATH_MAX 4000      /* leaves room for the temporary's suffix */

/* The last component of path and its extension (NULL when none). */
static const char *
save_path_base (const char *path, const char **ext)
{
  const char *slash = strrchr (path, '/');
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr (base, '.');
  *ext = dot && dot != base ? dot : NULL;
  return base;
}

/* The folder part of path into dir ("." when there is none). */
static void
save_path_dir (const char *path, char *dir, size_t cap)
{
  const char *slash = strrchr (path, '/');
  if (!slash)
    snprintf (dir, cap, ".");
  else if (slash == path)
    snprintf (dir, cap, "/");
  else
    snprintf (dir, cap, "%.*s", (int) (slash - path), path);
}

tt_status
tt_model_check_save_path (const char *path, tt_error * err)
{
  if (!path || !*path)
    return tt_fail (err, TT_ERR_INVALID, "no path to save to");
  if (strlen (path) > SAVE_PATH_MAX)
    return tt_fail (err, TT_ERR_INVALID, "%s: path longer than %d bytes",
        path, SAVE_PATH_MAX);
  const char *ext;
  const char *base = save_path_base (path, &ext);
  if (!*base || !strcmp (base, ".") || !strcmp (base, ".."))
    return tt_fail (err, TT_ERR_INVALID, "%s: names a folder, not a file to "
        "save the model in", path);
  if (ext && !strcasecmp (ext, ".ini"))
    return tt_fail (err, TT_ERR_INVALID, "%s: a model saves as a bundle "
        "(.ttb, .bundle) or as BIN weights (.bin); the INI is its "
        "description (tt_model_save_plan_ini writes it with its plan)", path);
  struct stat sb;
  if (stat (path, &sb) == 0 && S_ISDIR (sb.st_mode))
    return tt_fail (err, TT_ERR_INVALID, "%s: is a folder; name a file in "
        "it to save the model", path);
  char dir[SAVE_PATH_MAX + 2];
  save_path_dir (path, dir, sizeof dir);
  if (stat (dir, &sb) != 0)
    return tt_fail (err, TT_ERR_IO, "%s: cannot save there: folder %s: %s",
        path, dir, strerror (errno));
  if (!S_ISDIR (sb.st_mode))
    return tt_fail (err, TT_ERR_IO, "%s: cannot save there: %s is not a "
        "folder", path, dir);
  /* access () would not see read-only mounts, quotas or ACLs: try it. The
   * name is an atomic save's temporary, so a kill right here leaves a file
   * the next save of path sweeps away (atomic_file.c). */
  char probe[SAVE_PATH_MAX + 64];
  snprintf (probe, sizeof probe, "%s.tmp-%ld-XXXXXX", path, (long) getpid ());
  int fd = mkstemp (probe);
  if (fd < 0)
    return tt_fail (err, TT_ERR_IO, "%s: cannot save there: creating a file "
        "in %s failed: %s", path, dir, strerror (errno));
  close (fd);
  unlink (probe);
  return TT_OK;
}

/* Saves m to dir/NAME.rescued-STAMP-PID.EXT; on success out holds the
 * path. */
static tt_status
save_rescue_in (tt_model * m, const char *path, const char *dir,
    const tt_bundle_options * o, char *out, size_t cap, tt_error * err)
{
  const char *ext;
  const char *base = save_path_base (path, &ext);
  const int stem = (int) (ext ? (size_t) (ext - base) : strlen (base));
  char stamp[32];
  time_t now = time (NULL);
  struct tm tm;
  strftime (stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime_r (&now, &tm));
  char rescue[SAVE_PATH_MAX + 128];
  /* the extension is kept: it says which form tt_model_save writes */
  if (snprintf (rescue, sizeof rescue, "%s/%.*s.rescued-%s-%ld%s", dir,
          stem, base, stamp, (long) getpid (), ext ? ext : ".ttb")
      >= (int) sizeof rescue || strlen (rescue) >= cap)
    return tt_fail (err, TT_ERR_IO, "%s: path too long", dir);
  const bool bin = ext && !strcasecmp (ext, ".bin");
  tt_status st = bin || !o ? tt_model_save (m, rescue, err) :
      tt_bundle_save (m, rescue, o, err);
  if (st == TT_OK)
    snprintf (out, cap, "%s", rescue);
  return st;
}

tt_status
tt_model_save_with_fallback (tt_model * m, const char *path,
    const tt_bundle_options * options, char *saved_to, size_t cap,
    tt_error * err)
{
  if (saved_to && cap)
    saved_to[0] = '\0';
  tt_status st = options ? tt_bundle_save (m, path, options, err) :
      tt_model_save (m, path, err);
  if (st != TT_ERR_IO || !saved_to || !cap)
    return st;
  /* only a failure of the medium is worth a second place: a refusal
   * (non-finite weights, a wrong name) would fail there too */
  char first[sizeof err->message];
  snprintf (first, sizeof first, "%s", err ? err->message : "save failed");
  const char *ext;
  save_path_base (path, &ext);
  if (ext && !strcasecmp (ext, ".ini"))
    return st;
  const char *tmpdir = getenv ("TMPDIR");
  char beside[SAVE_PATH_MAX + 2];
  save_path_dir (path, beside, sizeof beside);
  const char *dirs[] = { beside, tmpdir && *tmpdir ? tmpdir : "/tmp",
    "/tmp"
  };
  char tried[768] = "";
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    if (i == 2 && !strcmp (dirs[1], "/tmp"))
      break;
    tt_error e2;
    if (save_rescue_in (m, path, dirs[i], options, saved_to, cap, &e2) == TT_OK)
      return tt_fail (err, st, "%s; the model was saved to %s instead",
          first, saved_to);
    size_t len = strlen (tried);
    snprintf (tried + len, sizeof tried - len, "%s%.240s", len ? "; " : "",
        e2.message);
  }
  saved_to[0] = '\0';
  return tt_fail (err, st, "%s; no fallback could be written either (%s)",
      first, tried);
}

/* nntrainer's eval_epoch_end (neuralnet.cpp:1437-1466): best when the
 * accuracy beats the best one, or ties it with a lower loss; its record
 * starts at accuracy 0 and loss FLT_MAX, and it saves with save(), a BIN
 * whatever the name (tests/interop/nntrainer/FINDINGS.md). */
tt_status
tt_model_save_best (tt_model * m, double loss, double accuracy, bool *saved,
    tt_error * err)
{
  if (saved)
    *saved = false;
  if (!(accuracy >= 0.0 && accuracy <= 1.0))
    return tt_fail (err, TT_ERR_INVALID, "%s: save_best_path: the "
        "validation accuracy %g is not a fraction in [0, 1]", m->path,
        accuracy);
  if (isnan (loss))
    return tt_fail (err, TT_ERR_INVALID, "%s: save_best_path: the "
        "validation loss is NaN", m->path);
  const double best_accuracy = m->has_best ? m->best_accuracy : 0.0;
  const double best_loss = m->has_best ? m->best_loss : FLT_MAX;
  if (!(accuracy > best_accuracy || (accuracy == best_accuracy &&
              loss < best_loss)))
    return TT_OK;
  if (m->save_best_path) {
    tt_error e;
    if (tt_model_save_bin (m, m->save_best_path, &e))
      return tt_fail (err, e.status, "%s: [Model] save_best_path: %s",
          m->path, e.message);
    if (saved)
      *saved = true;
  }
  m->has_best = true;
  m->best_accuracy = accuracy;
  m->best_loss = loss;
  return TT_OK;
}
