/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Ours against a real nntrainer (issue 16): the recordings of
 * tests/interop/nntrainer/recordings (nntrainer 65dccdec, README.md there)
 * for every model whose BINs were committed:
 *
 *   a. nntrainer's init.bin and trained.bin load (weights + 'adam' + 2
 *      counters, or SGD's weights + 8) and give nntrainer's outputs at
 *      batch 4 and 1 (init) and 4 (trained);
 *   b. ours, from init.bin, trained on the recorded data (the same 4
 *      batches of 4, 2 epochs, the INI's optimizer) ends at trained.bin's
 *      weights (not for models with dropout: their masks are random),
 *      each weight tensor to TRAIN_TOL but where Adam and batch
 *      normalization make float32 noise count (interop_bn_bounds);
 *   c. what ours saves after loading init.bin holds nntrainer's weights
 *      byte for byte, and a save_path BIN (weights, moments, counters)
 *      loaded and saved again is nntrainer's file byte for byte;
 *   d. a bundle of an earlier tensor-trainer, which lists branchy_bn's
 *      tensors in INI order (tests/unit/data/branchy_bn-ini-order.ttb,
 *      packed from nntrainer's init.bin by the engine of commit cc30d0e),
 *      loads and unpacks to nntrainer's weights;
 *   e. save_path's rule and file against nntrainer's run (mlp_best);
 *   f. AdamW BINs as nntrainer's, and the tagged form still loads;
 *   g. one model per layer family (models/ of the interop folder): a. to
 *      c. and the mean loss of the second epoch; where nntrainer trains
 *      wrongly (FINDINGS.md), its outputs agree with ours, its trained
 *      weights differ from ours, and ours, not its, agree with 8 SGD
 *      steps on finite-difference gradients.
 *
 * argv[1]: the source root. Prints per model what was compared and the
 * largest difference.
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "tt_bundle.h"
#include "interop_tools.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* outputs are probabilities (softmax) or small regression values; the
 * recordings were made without FMA on x86-64, ours may use it */
#define OUT_TOL 1e-5
/* 8 training steps from the same weights and data: float32 rounding
 * (summation order, FMA). Adam runs in nntrainer's default form, ours by
 * default too (the INIs that say torch_ref = true for tests/golden are
 * read without it, as nntrainer was given them: drops.txt) */
#define TRAIN_TOL 2e-5

static char root[1024];
static char rec[1200];

static float *
interop_read (const char *model, const char *what, size_t *n)
{
  char path[1400];
  snprintf (path, sizeof path, "%s/%s.%s", rec, model, what);
  size_t len = 0;
  char *data = tt_test_read_file (path, &len);
  *n = len / sizeof (float);
  return (float *) data;
}

static char *
interop_path (const char *model, const char *what)
{
  static char path[1400];
  snprintf (path, sizeof path, "%s/%s.%s", rec, model, what);
  return path;
}

/* The model's INI: tests/models/ or the interop folder's models/ or
 * models/families/. With nntrainer_adam, as nntrainer was given it:
 * without a torch_ref line (drops.txt: the INIs of tests/golden say
 * torch_ref = true for PyTorch's golden data, the recordings were made in
 * nntrainer's default form, ours by default too). */
static bool nntrainer_form;     /* the last interop_open_form got it */

static tt_model *
interop_open_form (const char *model, uint32_t batch, bool nntrainer_adam,
    tt_error * err)
{
  static const char *const dirs[] = { "tests/models",
    "tests/interop/nntrainer/models",
    "tests/interop/nntrainer/models/families"
  };
  char ini[1400];
  for (int i = 0; i < 3; i++) {
    snprintf (ini, sizeof ini, "%s/%s/%s.ini", root, dirs[i], model);
    FILE *f = fopen (ini, "r");
    if (f) {
      fclose (f);
      break;
    }
  }
  tt_model *m;
  size_t len;
  char *text = tt_test_read_file (ini, &len);
  char *line = text && nntrainer_adam ? strstr (text, "\ntorch_ref = ") : NULL;
  if (line) {
    char *end = strchr (line + 1, '\n');
    const size_t cut = end ? (size_t) (end - line) : strlen (line);
    memmove (line, line + cut, len - (size_t) (line - text) - cut + 1);
    len -= cut;
  }
  m = text ? tt_model_load_ini_text (text, len, ini, err) :
      tt_model_load_ini (ini, err);
  free (text);
  nntrainer_form = m && m->opt.adam_form == TT_ADAM_NNTRAINER;
  if (m && (tt_model_set_batch_size (m, batch, err) ||
          tt_model_compile (m, err))) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static tt_model *
interop_open (const char *model, uint32_t batch, tt_error * err)
{
  return interop_open_form (model, batch, false, err);
}

static double
interop_maxdiff (const float *a, const float *b, size_t n)
{
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs ((double) a[i] - (double) b[i]);
    if (!(d <= worst))
      worst = d;
  }
  return worst;
}

static size_t
interop_sample_floats (const tt_model * m)
{
  tt_shape s;
  tt_model_input_shape (m, 0, &s);
  return (size_t) s.channel * s.height * s.width;
}

/* The model's input normalization takes each sample's own min and max
 * (before issue 16 item 6): its batch-4 output for sample 0 is its output
 * for sample 0 alone. m holds the batch-4 output of x. */
static bool
interop_per_sample (tt_model * m, const float *x)
{
  bool normalizes = false;
  for (uint32_t i = 0; i < m->n_layers; i++)
    normalizes |= m->layers[i].ops->role == TT_ROLE_INPUT &&
        m->layers[i].p.input.normalization;
  if (!normalizes)
    return false;
  /* (batch 1 and 4 may round differently) */
  tt_shape o = tt_model_output_shape (m);
  const size_t n = (size_t) o.channel * o.height * o.width;
  float first[64];
  if (n > 64)
    return false;
  memcpy (first, tt_model_output (m), n * sizeof *first);
  const void *inputs[1] = { x };
  tt_error err;
  if (tt_model_eval_batch (m, 1, inputs, NULL, NULL, NULL, &err))
    return false;
  return interop_maxdiff (first, tt_model_output (m), n) <= 1e-6;
}

/* The model standardizes its input: before issue 16 item 6 this engine
 * divided by the standard deviation, nntrainer by ||x - mean|| / N. */
static bool
interop_standardizes (const tt_model * m)
{
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (m->layers[i].ops->role == TT_ROLE_INPUT &&
        m->layers[i].p.input.standardization)
      return true;
  return false;
}

/* a: outputs from a nntrainer BIN at batch size batch */
static void
interop_outputs (const char *model, const char *bin, const char *out,
    uint32_t batch)
{
  tt_error err;
  tt_model *m = interop_open (model, batch, &err);
  CHECK (m != NULL, "%s: %s", model, err.message);
  if (!m)
    return;
  tt_status st = tt_model_load_bin (m, interop_path (model, bin), &err);
  CHECK (st == TT_OK, "%s: %s", model, err.message);
  size_t nx, ny;
  float *x = interop_read (model, "input.f32", &nx);
  float *y = interop_read (model, out, &ny);
  CHECK (x && y, "%s: recordings missing", model);
  if (st == TT_OK && x && y) {
    const void *inputs[1] = { x };
    st = tt_model_eval_batch (m, batch, inputs, NULL, NULL, NULL, &err);
    CHECK (st == TT_OK, "%s: %s", model, err.message);
    tt_shape o = tt_model_output_shape (m);
    const size_t n = (size_t) batch * o.channel * o.height * o.width;
    CHECK (n == ny, "%s: %zu outputs, nntrainer %zu", model, n, ny);
    if (st == TT_OK && n == ny) {
      const double d = interop_maxdiff (tt_model_output (m), y, n);
      printf ("  %-22s a. %s -> %s: %zu outputs, max |diff| %.2e\n", model,
          bin, out, n, d);
      if (d > OUT_TOL && batch > 1 && interop_per_sample (m, x)) {
        printf ("  %-22s    skipped: this engine normalizes each sample by "
            "its own min and max, nntrainer over the whole batch (issue 16 "
            "item 6)\n", model);
      } else if (d > OUT_TOL && interop_standardizes (m)) {
        printf ("  %-22s    skipped: this engine standardizes by the "
            "standard deviation, nntrainer by ||x - mean|| / N (issue 16 "
            "item 6)\n", model);
      } else {
        CHECK (d <= OUT_TOL, "%s: %s at batch %u differs from nntrainer's "
            "by %g", model, bin, batch, d);
      }
    }
  }
  free (x);
  free (y);
  tt_model_free (m);
}

static bool
interop_has_dropout (const tt_model * m)
{
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (!strcmp (m->layers[i].ops->type, "dropout"))
      return true;
  return false;
}

/* Marks (in before_bn) every layer whose output reaches a batch
 * normalization only through layers that carry a per-channel constant
 * through as a constant per feature (concat, multiout, addition, pooling:
 * max(x + b) = max(x) + b, flatten, reshape): a constant added there (its
 * bias) is taken out again by the normalization's batch mean, so the
 * bias's exact gradient is 0. */
static void
interop_mark_before_bn (const tt_model * m, int layer, bool *before_bn)
{
  static const char *const through[] = {
    "concat", "multiout", "addition", "pooling2d", "flatten", "reshape", NULL
  };
  if (layer < 0 || before_bn[layer])
    return;
  const tt_layer *l = &m->layers[layer];
  bool passes = false;
  for (int i = 0; through[i]; i++)
    passes |= !strcmp (l->ops->type, through[i]);
  if (passes) {
    for (uint32_t i = 0; i < l->n_inputs; i++)
      interop_mark_before_bn (m, l->inputs[i].layer, before_bn);
    return;
  }
  before_bn[layer] = true;
}

/* b's bound per weight tensor, for Adam with batch normalization: a bias
 * whose exact gradient is 0 (interop_mark_before_bn) holds float32 noise,
 * which Adam turns into steps of up to the learning rate in a direction
 * rounding decides: 8 steps of 2 x lr. The moving mean of that
 * normalization follows those biases: (1 - momentum^8) of their bound.
 * Everything else: TRAIN_TOL, unless the noise reaches it through the
 * forward pass of later layers, which Adam amplifies where gradients are
 * small (resnet_bn: filters and gammas of the residual blocks move by up
 * to 2.3e-4 of lr 1e-3's 8e-3); a model marked deep holds them to a tenth
 * of 8 steps, 8 x lr / 10. */
static void
interop_bn_bounds (const tt_model * m, bool deep, double *bounds,
    uint32_t n_regions, const int *ids)
{
  bool *before_bn = calloc (m->n_layers, sizeof *before_bn);
  float *momentum = calloc (m->n_layers, sizeof *momentum);
  for (uint32_t i = 0; i < m->n_layers && before_bn; i++)
    if (!strcmp (m->layers[i].ops->type, "batch_normalization")) {
      bool *mark = calloc (m->n_layers, sizeof *mark);
      interop_mark_before_bn (m, m->layers[i].inputs[0].layer, mark);
      for (uint32_t k = 0; k < m->n_layers && mark; k++)
        if (mark[k]) {
          before_bn[k] = true;
          momentum[i] = m->layers[i].p.bn.momentum;
        }
      free (mark);
    }
  const double lr = m->opt.learning_rate;
  for (uint32_t r = 0; r < n_regions; r++) {
    bounds[r] = deep ? 8 * lr / 10 : TRAIN_TOL;
    for (uint32_t c = 0; c < m->n_layers && before_bn; c++)
      for (uint32_t i = 0; i < m->layers[c].n_weights; i++) {
        const tt_weight *w = &m->layers[c].weights[i];
        if (w->value != ids[r])
          continue;
        if (before_bn[c] && !strcmp (w->suffix, "bias"))
          bounds[r] = 8 * 2 * lr;
        else if (momentum[c] > 0 && !strcmp (w->suffix, "moving_mean"))
          bounds[r] = (1 - pow (momentum[c], 8)) * 8 * 2 * lr;
      }
  }
  free (before_bn);
  free (momentum);
}

/* b: 2 epochs of the recorded 4 batches from init.bin, against
 * trained.bin */
static void
interop_training (const char *model)
{
  tt_error err;
  tt_model *m = interop_open_form (model, 4, true, &err);
  CHECK (m != NULL, "%s: %s", model, err.message);
  if (!m)
    return;
  if (interop_has_dropout (m)) {
    printf ("  %-22s b. skipped: dropout draws its own masks, so training "
        "cannot follow nntrainer's\n", model);
    tt_model_free (m);
    return;
  }
  tt_status st = tt_model_load_bin (m, interop_path (model, "init.bin"),
      &err);
  CHECK (st == TT_OK, "%s: %s", model, err.message);
  size_t nx, nt, nw;
  float *x = interop_read (model, "train.in.f32", &nx);
  float *t = interop_read (model, "train.label.f32", &nt);
  float *want = interop_read (model, "trained.bin", &nw);
  const size_t sx = interop_sample_floats (m);
  tt_shape ls = tt_model_label_shape (m);
  const size_t sl = (size_t) ls.channel * ls.height * ls.width;
  CHECK (x && t && want && nx == 16 * sx && nt == 16 * sl,
      "%s: training recordings missing or of another shape", model);
  if (st || !x || !t || !want || nx != 16 * sx || nt != 16 * sl)
    goto out;
  const void *first[1] = { x };
  if (tt_model_eval_batch (m, 4, first, NULL, NULL, NULL, &err) == TT_OK &&
      interop_per_sample (m, x)) {
    printf ("  %-22s b. skipped: this engine normalizes each sample by its "
        "own min and max, nntrainer over the whole batch (issue 16 item "
        "6)\n", model);
    goto out;
  }
  for (int epoch = 0; epoch < 2 && !st; epoch++)
    for (int b = 0; b < 4 && !st; b++) {
      const void *inputs[1] = { x + (size_t) b * 4 * sx };
      st = tt_model_train_batch (m, 4, inputs, NULL, t + (size_t) b * 4 * sl,
          NULL, &err);
      CHECK (st == TT_OK, "%s: train: %s", model, err.message);
    }
  const size_t w = tt_model_weight_floats (m);
  float *ours = malloc ((w + 1) * sizeof *ours);
  if (!st && ours && nw >= w &&
      tt_model_export_weights (m, ours, w, &err) == TT_OK) {
    const double d = interop_maxdiff (ours, want, w);
    /* Adam divides by sqrt(v): a gradient that is 0 in exact arithmetic
     * (the bias of a layer that batch normalization follows) holds
     * float32 noise, which it turns into steps of up to the learning
     * rate in a direction rounding decides, and batch normalization
     * carries that on (moving means, later layers). With both, the
     * weights are held to the bound of 8 steps alone; else to TRAIN_TOL. */
    size_t off = 0;
    for (size_t i = 0; i < w; i++)
      off += !(fabs ((double) ours[i] - (double) want[i]) <= TRAIN_TOL);
    bool bn = false;
    for (uint32_t i = 0; i < m->n_layers; i++)
      bn |= !strcmp (m->layers[i].ops->type, "batch_normalization");
    const bool adam = m->opt.type != TT_OPT_SGD;
    const bool noisy = adam && (bn || !nntrainer_form);
    const double bound = 8 * 2 * (double) m->opt.learning_rate;
    printf ("  %-22s b. 8 training steps from init.bin against trained.bin:"
        " %zu weights, max |diff| %.2e, %zu above %.0e\n", model, w, d, off,
        TRAIN_TOL);
    if (noisy && bn && nntrainer_form) {
      uint32_t nr = 0;
      int *ids = tt_bin_regions (m, false, &nr);
      double *bounds = ids ? calloc (nr, sizeof *bounds) : NULL;
      const bool deep = !strcmp (model, "resnet_bn");
      if (bounds)
        interop_bn_bounds (m, deep, bounds, nr, ids);
      size_t at = 0;
      int loose = 0;
      const double rest = deep ? 8 * (double) m->opt.learning_rate / 10 :
          TRAIN_TOL;
      for (uint32_t r = 0; r < nr && bounds; r++) {
        const tt_tensor *tn = &m->tensors[ids[r]];
        const double dr = interop_maxdiff (ours + at, want + at, tn->count);
        loose += bounds[r] != rest;
        if (bounds[r] != rest)
          printf ("  %-22s    %-24s max |diff| %.2e, held to %.2g\n", model,
              tn->name, dr, bounds[r]);
        CHECK (dr <= bounds[r], "%s: %s differs from nntrainer's by %g, "
            "beyond %g", model, tn->name, dr, bounds[r]);
        at += tn->count;
      }
      printf ("  %-22s    (Adam + batch normalization: the other %d "
          "tensors held to %.2g)\n", model, (int) nr - loose, rest);
      CHECK (bounds && at == w, "%s: weights not compared per tensor", model);
      free (bounds);
      free (ids);
    } else if (noisy) {
      printf ("  %-22s    (Adam in PyTorch's form; held to 8 steps of 2 x "
          "lr = %.2g)\n", model, bound);
      CHECK (d <= bound, "%s: trained weights differ from nntrainer's by "
          "%g, beyond 8 Adam steps", model, d);
    } else if (d > TRAIN_TOL && interop_standardizes (m)) {
      printf ("  %-22s    skipped: this engine standardizes by the standard "
          "deviation, nntrainer by ||x - mean|| / N (issue 16 item 6)\n",
          model);
    } else {
      CHECK (d <= TRAIN_TOL, "%s: trained weights differ from nntrainer's "
          "by %g", model, d);
    }
  } else {
    CHECK (false, "%s: trained weights not compared", model);
  }
  free (ours);
out:
  free (x);
  free (t);
  free (want);
  tt_model_free (m);
}

static bool
interop_exists (const char *path)
{
  FILE *f = fopen (path, "rb");
  if (f)
    fclose (f);
  return f != NULL;
}

/* c: ours saves nntrainer's weights as nntrainer wrote them */
static void
interop_saves (const char *model)
{
  tt_error err;
  tt_model *m = interop_open (model, 4, &err);
  CHECK (m != NULL, "%s: %s", model, err.message);
  if (!m)
    return;
  const char *bins[3] = { "init.bin", "trained.bin", "savepath.bin" };
  for (int i = 0; i < 3; i++) {
    char src[1400];
    snprintf (src, sizeof src, "%s", interop_path (model, bins[i]));
    if (!interop_exists (src)) {
      printf ("  %-22s c. no %s recorded\n", model, bins[i]);
      continue;
    }
    tt_status st = tt_model_load_bin (m, src, &err);
    CHECK (st == TT_OK, "%s: %s", model, err.message);
    char dst[512];
    snprintf (dst, sizeof dst, "%s", tt_test_write_file ("saved.bin", "", 0));
    if (!st)
      st = tt_model_save_bin (m, dst, &err);
    CHECK (st == TT_OK, "%s: %s", model, err.message);
    size_t na = 0, nb = 0;
    char *a = tt_test_read_file (src, &na);
    char *b = tt_test_read_file (dst, &nb);
    const size_t w = tt_bin_weight_bytes (m);
    if (st == TT_OK && a && b && na >= w + 8 && nb >= w + 8) {
      const bool same_w = !memcmp (a, b, w);
      const bool same_counters = !memcmp (a + na - 8, b + nb - 8, 8);
      /* a save_path BIN has the moments: ours writes that form */
      const bool whole = i == 2 || na == nb;
      uint32_t c[2];
      memcpy (c, a + na - 8, 8);
      printf ("  %-22s c. %s (%zu bytes, counters %u %u) loaded and saved "
          "(%zu bytes): weights %s, counters %s%s\n", model, bins[i], na,
          c[0], c[1], nb, same_w ? "identical" : "DIFFER",
          same_counters ? "kept" : "DIFFER", whole ? (na == nb &&
              !memcmp (a, b, na) ? ", whole file identical" :
              ", whole file DIFFERS") : "");
      CHECK (same_w, "%s: %s: the saved weights differ", model, bins[i]);
      CHECK (same_counters, "%s: %s: the counters differ", model, bins[i]);
      if (whole)
        CHECK (na == nb && !memcmp (a, b, na), "%s: %s: saved again, the "
            "file differs", model, bins[i]);
    } else {
      CHECK (false, "%s: %s not compared", model, bins[i]);
    }
    free (a);
    free (b);
  }
  tt_model_free (m);
}

static void
interop_model (const char *model)
{
  interop_outputs (model, "init.bin", "init.out.b4.f32", 4);
  interop_outputs (model, "init.bin", "init.out.b1.f32", 1);
  interop_outputs (model, "trained.bin", "trained.out.b4.f32", 4);
  interop_training (model);
  interop_saves (model);
}

/* ---- g. one model per layer family (models/ of the interop folder) ---- */

static double
interop_recorded_loss (const char *model)
{
  return interop_recorded_loss_in (rec, model);
}

static bool
interop_fd_sgd (tt_model * m, float *w, size_t nw, const float *x,
    size_t sx, const float *t, size_t sl, const bool *trains)
{
  return interop_fd_sgd_h (m, w, nw, x, sx, t, sl, trains, 4e-3);
}

/* Where nntrainer (65dccdec) trains wrongly (what: its fault, as in
 * FINDINGS.md): its forward pass agrees with ours (a. with init.bin and
 * trained.bin), its trained weights differ from ours by more than
 * TRAIN_TOL, and ours agree with 8 SGD steps taken with finite-difference
 * gradients of the loss (the mathematics) to FD_TOL, nntrainer's do not. */
#define FD_TOL 1e-4
static void
interop_nntrainer_wrong (const char *model, const char *what)
{
  interop_outputs (model, "init.bin", "init.out.b4.f32", 4);
  interop_outputs (model, "init.bin", "init.out.b1.f32", 1);
  interop_outputs (model, "trained.bin", "trained.out.b4.f32", 4);
  tt_error err;
  tt_model *m = interop_open (model, 4, &err);
  CHECK (m != NULL, "%s: %s", model, err.message);
  if (!m)
    return;
  CHECK (m->opt.type == TT_OPT_SGD, "%s: the comparison assumes SGD", model);
  tt_status st = tt_model_load_bin (m, interop_path (model, "init.bin"),
      &err);
  CHECK (st == TT_OK, "%s: %s", model, err.message);
  size_t nx, nt, nw;
  float *x = interop_read (model, "train.in.f32", &nx);
  float *t = interop_read (model, "train.label.f32", &nt);
  float *want = interop_read (model, "trained.bin", &nw);
  const size_t sx = interop_sample_floats (m);
  tt_shape ls = tt_model_label_shape (m);
  const size_t sl = (size_t) ls.channel * ls.height * ls.width;
  const size_t w = tt_model_weight_floats (m);
  float *init = malloc (w * sizeof *init), *ours = malloc (w * sizeof *ours);
  CHECK (x && t && want && init && ours && nx == 16 * sx && nt == 16 * sl &&
      nw >= w, "%s: recordings missing or of another shape", model);
  if (st || !x || !t || !want || !init || !ours || nx != 16 * sx ||
      nt != 16 * sl || nw < w ||
      tt_model_export_weights (m, init, w, &err) != TT_OK)
    goto out;
  double loss = 0;
  for (int epoch = 0; epoch < 2 && !st; epoch++)
    for (int b = 0; b < 4 && !st; b++) {
      const void *inputs[1] = { x + (size_t) b * 4 * sx };
      tt_batch_result r;
      st = tt_model_train_batch (m, 4, inputs, NULL, t + (size_t) b * 4 * sl,
          &r, &err);
      CHECK (st == TT_OK, "%s: train: %s", model, err.message);
      loss += epoch == 1 ? r.loss / 4 : 0;
    }
  if (st || tt_model_export_weights (m, ours, w, &err) != TT_OK)
    goto out;
  const double d_nn = interop_maxdiff (ours, want, w);
  /* init becomes the finite-difference trajectory's end */
  CHECK (interop_fd_sgd (m, init, w, x, sx, t, sl, NULL), "%s: the finite "
      "differences failed", model);
  const double d_ours = interop_maxdiff (ours, init, w);
  const double d_theirs = interop_maxdiff (want, init, w);
  printf ("  %-22s g. nntrainer %s: 8 steps from init.bin: ours against "
      "trained.bin max |diff| %.2e; against 8 finite-difference SGD steps: "
      "ours %.2e, nntrainer's %.2e; loss of epoch 2 ours %.6g, nntrainer "
      "%.6g\n", model, what, d_nn, d_ours, d_theirs, loss,
      interop_recorded_loss (model));
  CHECK (d_nn > TRAIN_TOL, "%s: nntrainer's training (%s) now agrees with "
      "ours (%g): update FINDINGS.md and the test", model, what, d_nn);
  CHECK (d_ours <= FD_TOL, "%s: our 8 steps differ from the finite-"
      "difference steps by %g", model, d_ours);
  CHECK (d_theirs > FD_TOL, "%s: nntrainer's 8 steps agree with the "
      "finite-difference steps (%g)", model, d_theirs);
out:
  free (x);
  free (t);
  free (want);
  free (init);
  free (ours);
  tt_model_free (m);
}

/* the mean loss of the second epoch against nntrainer's */
static void
interop_family_loss (const char *model)
{
  tt_error err;
  tt_model *m = interop_open (model, 4, &err);
  CHECK (m != NULL, "%s: %s", model, err.message);
  if (!m)
    return;
  size_t nx, nt;
  float *x = interop_read (model, "train.in.f32", &nx);
  float *t = interop_read (model, "train.label.f32", &nt);
  const size_t sx = interop_sample_floats (m);
  tt_shape ls = tt_model_label_shape (m);
  const size_t sl = (size_t) ls.channel * ls.height * ls.width;
  tt_status st = tt_model_load_bin (m, interop_path (model, "init.bin"),
      &err);
  double loss = 0;
  for (int epoch = 0; epoch < 2 && !st && x && t && nx == 16 * sx &&
      nt == 16 * sl; epoch++)
    for (int b = 0; b < 4 && !st; b++) {
      const void *inputs[1] = { x + (size_t) b * 4 * sx };
      tt_batch_result r;
      st = tt_model_train_batch (m, 4, inputs, NULL, t + (size_t) b * 4 * sl,
          &r, &err);
      loss += epoch == 1 ? r.loss / 4 : 0;
    }
  const double want = interop_recorded_loss (model);
  printf ("  %-22s   loss of epoch 2: ours %.6g, nntrainer %.6g\n", model,
      loss, want);
  CHECK (!st && fabs (loss - want) <= 1e-5 + 1e-5 * fabs (want),
      "%s: loss of epoch 2 %.7g, nntrainer's %.7g", model, loss, want);
  free (x);
  free (t);
  tt_model_free (m);
}

/* a. to c. for a family model nntrainer trains as the mathematics, and
 * the mean loss of the second epoch against nntrainer's */
static void
interop_family (const char *model)
{
  interop_model (model);
  interop_family_loss (model);
}

/* The model's status line in MANIFEST.txt (record.sh): 1 all stages
 * recorded, 0 no line (recorded by an earlier record.sh, or not yet), -1
 * nntrainer refused or crashed (printed) */
static int
interop_status (const char *model)
{
  char path[1400], key[160];
  snprintf (path, sizeof path, "%s/MANIFEST.txt", rec);
  snprintf (key, sizeof key, "\nstatus | %s | ", model);
  size_t len = 0;
  char *text = tt_test_read_file (path, &len);
  const char *at = text ? strstr (text, key) : NULL;
  if (text && !strncmp (text, key + 1, strlen (key + 1)))
    at = text - 1;              /* the first line */
  int st = 0;
  if (at) {
    at += strlen (key);
    st = !strncmp (at, "recorded:", 9) ? 1 : -1;
    if (st < 0)
      printf ("  %-22s %.*s\n", model, (int) strcspn (at, "\n"), at);
  } else {
    printf ("  %-22s not recorded yet (no status line in MANIFEST.txt)\n",
        model);
  }
  free (text);
  return st;
}

/* ours at batch n over x (n samples), into a fresh array; NULL on
 * failure */
static float *
interop_eval (const char *model, const char *bin, uint32_t n, const float *x,
    size_t *count)
{
  tt_error err;
  tt_model *m = interop_open (model, n, &err);
  CHECK (m != NULL, "%s: %s", model, m ? "" : err.message);
  if (!m)
    return NULL;
  float *out = NULL;
  const void *inputs[1] = { x };
  if (tt_model_load_bin (m, interop_path (model, bin), &err) == TT_OK &&
      tt_model_eval_batch (m, n, inputs, NULL, NULL, NULL, &err) == TT_OK) {
    tt_shape o = tt_model_output_shape (m);
    *count = (size_t) n *o.channel * o.height * o.width;
    out = malloc (*count * sizeof *out);
    if (out)
      memcpy (out, tt_model_output (m), *count * sizeof *out);
  } else {
    CHECK (false, "%s: %s", model, err.message);
  }
  tt_model_free (m);
  return out;
}

/* nntrainer's conv2dtranspose forward bounds its input rows and columns
 * by the kernel's size and reads past a sample (FINDINGS.md 8): at batch
 * 1 its outputs are ours, at batch 4 they are not, while ours at batch 4
 * are each sample's own batch-1 outputs. */
static void
interop_nntrainer_mixes_samples (const char *model)
{
  interop_outputs (model, "init.bin", "init.out.b1.f32", 1);
  size_t nx, ny, n4 = 0, n1 = 0;
  float *x = interop_read (model, "input.f32", &nx);
  float *y = interop_read (model, "init.out.b4.f32", &ny);
  float *ours = x ? interop_eval (model, "init.bin", 4, x, &n4) : NULL;
  CHECK (x && y && ours && n4 == ny, "%s: recordings missing", model);
  if (x && y && ours && n4 == ny) {
    const double d = interop_maxdiff (ours, y, ny);
    printf ("  %-22s a. batch 4: nntrainer's outputs %.2e from ours (it "
        "mixes samples)\n", model, d);
    CHECK (d > OUT_TOL, "%s: nntrainer's batch-4 outputs are ours now: "
        "the fault is gone", model);
    double worst = 0;
    for (uint32_t k = 0; k < 4; k++) {
      float *one = interop_eval (model, "init.bin", 1, x + k * (nx / 4), &n1);
      if (!one || n1 * 4 != n4) {
        worst = INFINITY;
        free (one);
        break;
      }
      const double dk = interop_maxdiff (one, ours + k * n1, n1);
      worst = dk > worst ? dk : worst;
      free (one);
    }
    printf ("  %-22s a. batch 4: ours against each sample alone, max "
        "|diff| %.2e\n", model, worst);
    CHECK (worst <= OUT_TOL, "%s: our batch-4 outputs differ from each "
        "sample's own by %g", model, worst);
  }
  free (x);
  free (y);
  free (ours);
}

/* the recurrent family's last cells: zoneout_full (zoneout rates 1,
 * both states kept in training) trains in nntrainer as ours (b., c. and
 * the loss), but nntrainer's inference does no zoneout and leaves the
 * cell state unwritten, where ours takes the expectation (here the
 * previous states, docs/formats.md): a. differs */
static void
interop_zoneout_inference_differs (const char *model)
{
  interop_training (model);
  interop_saves (model);
  interop_family_loss (model);
  size_t nx, ny, n4 = 0;
  float *x = interop_read (model, "input.f32", &nx);
  float *y = interop_read (model, "init.out.b4.f32", &ny);
  float *ours = x ? interop_eval (model, "init.bin", 4, x, &n4) : NULL;
  CHECK (x && y && ours && n4 == ny, "%s: recordings missing", model);
  if (x && y && ours && n4 == ny) {
    const double d = interop_maxdiff (ours, y, ny);
    printf ("  %-22s a. inference: nntrainer's outputs %.2e from ours (it "
        "does no zoneout at inference)\n", model, d);
    CHECK (d > OUT_TOL, "%s: nntrainer's inference outputs are ours now",
        model);
  }
  free (x);
  free (y);
  free (ours);
}

/* LoRA adapters: nntrainer (65dccdec) requests the base weight and bias
 * of a fully_connected with lora_rank as trainable and never writes their
 * gradients, so its optimizer moves the weight by whatever its gradient
 * buffer holds (FINDINGS.md 9): its trained base weight is not its
 * initial one. Ours keeps them frozen. Checked: the forward with
 * nntrainer's BINs (a.), adapters trained, A from nntrainer's zeros, and
 * with SGD ours agree with 8 finite-difference SGD steps on the adapters
 * alone, the base bit for bit as loaded; nntrainer's base moved. */
static void
interop_lora (const char *model)
{
  interop_outputs (model, "init.bin", "init.out.b4.f32", 4);
  interop_outputs (model, "init.bin", "init.out.b1.f32", 1);
  interop_outputs (model, "trained.bin", "trained.out.b4.f32", 4);
  tt_error err;
  tt_model *m = interop_open (model, 4, &err);
  CHECK (m != NULL, "%s: %s", model, err.message);
  if (!m)
    return;
  tt_status st = tt_model_load_bin (m, interop_path (model, "init.bin"),
      &err);
  CHECK (st == TT_OK, "%s: %s", model, err.message);
  size_t nx, nt, nw;
  float *x = interop_read (model, "train.in.f32", &nx);
  float *t = interop_read (model, "train.label.f32", &nt);
  float *want = interop_read (model, "trained.bin", &nw);
  const size_t sx = interop_sample_floats (m);
  tt_shape ls = tt_model_label_shape (m);
  const size_t sl = (size_t) ls.channel * ls.height * ls.width;
  const size_t w = tt_model_weight_floats (m);
  float *init = malloc (w * sizeof *init), *ours = malloc (w * sizeof *ours);
  bool *trains = calloc (w, sizeof *trains);
  uint32_t nr = 0;
  int *regions = tt_bin_regions (m, false, &nr);
  size_t at = 0;
  for (uint32_t r = 0; regions && r < nr; r++)
    for (uint32_t i = 0; i < m->n_layers; i++)
      for (uint32_t k = 0; k < m->layers[i].n_weights; k++) {
        const tt_weight *wt = &m->layers[i].weights[k];
        if (wt->value != regions[r])
          continue;
        for (size_t j = 0; j < wt->count && at + j < w; j++)
          trains[at + j] = wt->trainable;
        at += wt->count;
      }
  CHECK (x && t && want && init && ours && trains && at == w &&
      nx == 16 * sx && nt == 16 * sl && nw >= w, "%s: recordings missing or "
      "of another shape", model);
  if (st || !x || !t || !want || !init || !ours || !trains || at != w ||
      nx != 16 * sx || nt != 16 * sl || nw < w ||
      tt_model_export_weights (m, init, w, &err) != TT_OK)
    goto out;
  for (int epoch = 0; epoch < 2 && !st; epoch++)
    for (int b = 0; b < 4 && !st; b++) {
      const void *inputs[1] = { x + (size_t) b * 4 * sx };
      tt_batch_result r;
      st = tt_model_train_batch (m, 4, inputs, NULL, t + (size_t) b * 4 * sl,
          &r, &err);
      CHECK (st == TT_OK, "%s: train: %s", model, err.message);
    }
  if (st || tt_model_export_weights (m, ours, w, &err) != TT_OK)
    goto out;
  size_t base_kept = 0, base = 0, adapters_moved = 0, theirs_moved = 0;
  for (size_t i = 0; i < w; i++) {
    if (trains[i]) {
      adapters_moved += ours[i] != init[i];
      continue;
    }
    base++;
    base_kept += !memcmp (&ours[i], &init[i], sizeof (float));
    theirs_moved += fabsf (want[i] - init[i]) > TRAIN_TOL;
  }
  printf ("  %-22s   LoRA: base %zu floats, ours kept %zu, nntrainer "
      "moved %zu; adapters moved %zu\n", model, base, base_kept,
      theirs_moved, adapters_moved);
  CHECK (base > 0 && base_kept == base, "%s: our frozen base moved", model);
  CHECK (adapters_moved > 0, "%s: our adapters did not train", model);
  CHECK (theirs_moved > 0, "%s: nntrainer's base no longer moves: update "
      "FINDINGS.md 9 and the test", model);
  /* with Adam, its save_path BIN holds moments for the base too, the
   * INI's trainable weights: ours has the same layout (the frozen base's
   * moments zero, docs/formats.md), so it loads, and ours saves its size */
  if (m->opt.type == TT_OPT_ADAM) {
    const char *theirs = interop_path (model, "savepath.bin");
    const tt_status sp = tt_model_load_bin (m, theirs, &err);
    printf ("  %-22s   LoRA: nntrainer's save_path BIN with the base's "
        "moments: %s\n", model, sp ? err.message : "loaded");
    CHECK (sp == TT_OK, "%s: nntrainer's save_path BIN (moments of the base "
        "too): %s", model, err.message);
    struct stat st_theirs, st_ours;
    const char *mine = tt_test_write_text ("lora_adam.bin", "");
    CHECK (stat (theirs, &st_theirs) == 0 &&
        tt_model_save_bin (m, mine, &err) == TT_OK &&
        stat (mine, &st_ours) == 0 && st_ours.st_size == st_theirs.st_size,
        "%s: our Adam BIN is not the size of nntrainer's", model);
  }
  if (m->opt.type == TT_OPT_SGD) {
    CHECK (interop_fd_sgd (m, init, w, x, sx, t, sl, trains), "%s: the "
        "finite differences failed", model);
    const double d = interop_maxdiff (ours, init, w);
    printf ("  %-22s   LoRA: 8 SGD steps, ours against finite differences "
        "on the adapters: max |diff| %.2e\n", model, d);
    CHECK (d <= FD_TOL, "%s: our 8 steps differ from the finite-difference "
        "steps by %g", model, d);
  }
out:
  free (regions);
  free (x);
  free (t);
  free (want);
  free (init);
  free (ours);
  free (trains);
  tt_model_free (m);
}

static void
test_families (void)
{
  /* nntrainer computes these as the mathematics does */
  static const char *const agree[] = {
    "conv1d_valid", "conv1d_same", "conv1d_causal", "conv1d_int",
    "conv1d_lr", "emb_lstm", "emb_gru", "upsample_nearest",
    "upsample_bilinear", "posenc", "chshuffle", "pool_avg_pad",
    "flatten_dims", "bn_decay", "lstm_drop0", "gru_drop0",
    "act_gelu_nomemopt", "act_swish_nomemopt", "rnn", "lstm_bidir",
    "permute",
    /* ln_ops' layers one at a time: these agree, and so do multiply and
     * divide without nntrainer's memory optimization */
    "ops_pow2", "ops_rmean",
    "ops_rsum_h", "ops_identity", "ops_add", "ops_subtract",
    "ops_multiply_nomemopt", "ops_divide_nomemopt", NULL
  };
  /* nntrainer's training is wrong there (FINDINGS.md, docs/formats.md) */
  static const char *const wrong[][2] = {
    {"act_softplus", "takes softplus' derivative at the output"},
    {"act_selu", "takes selu's derivative at the output"},
    {"act_mish", "takes mish's derivative at the output"},
    {"act_elu", "takes elu's derivative at the output"},
    {"act_tanh_gelu", "has no tanh_gelu backward"},
    {"act_sigmoid_gelu", "has no sigmoid_gelu backward"},
    {"act_gelu", "reads the wrong tensor in gelu's backward"},
    {"act_swish", "reads the wrong tensor in swish's backward"},
    {"ops_sqrt", "drops sqrt's 0.5"},
    {"ops_cos", "drops cos' minus sign and the incoming derivative"},
    {"attention", "trains attention away from its finite-difference "
          "gradients (where in its backward: not isolated)"},
    {"ln_ops", "multiplies layer_normalization's input derivative by "
          "gamma after its means, and reads the wrong tensors in multiply's "
          "and divide's backward under its memory optimization"},
    {"ln_ops_nomemopt", "multiplies layer_normalization's input derivative "
          "by gamma after its means"},
    {"ops_ln_rows", "multiplies layer_normalization's input derivative by "
          "gamma after its means (exact only while gamma is uniform)"},
    {"ops_sin", "drops sin's incoming derivative (its product goes to a "
          "temporary it drops): cos(x) alone"},
    {"ops_sin_nomemopt", "drops sin's incoming derivative, memory "
          "optimization or not"},
    {"ops_negative", "drops negative's minus sign (its product goes to a "
          "temporary it drops)"},
    {"ops_negative_nomemopt", "drops negative's minus sign, memory "
          "optimization or not"},
    {"ops_ln", "multiplies layer_normalization's input derivative by gamma "
          "after its means"},
    {"ops_ln_nomemopt", "multiplies layer_normalization's input derivative "
          "by gamma after its means, memory optimization or not"},
    {"ops_multiply", "reads the wrong tensor in multiply's backward under "
          "its memory optimization"},
    {"ops_divide", "reads the wrong tensor in divide's backward under its "
          "memory optimization"},
    {"pool_avg_asym", "bounds average pooling's backward windows by the "
          "top/left padding"},
    {NULL, NULL}
  };
  for (int i = 0; agree[i]; i++)
    if (interop_status (agree[i]) > 0)
      interop_family (agree[i]);
  for (int i = 0; wrong[i][0]; i++)
    if (interop_status (wrong[i][0]) > 0)
      interop_nntrainer_wrong (wrong[i][0], wrong[i][1]);
  /* conv2dtranspose: its forward already (stride 1 and 2) */
  static const char *const mixes[] = { "convt_s1", "convt_s2", NULL };
  for (int i = 0; mixes[i]; i++)
    if (interop_status (mixes[i]) > 0)
      interop_nntrainer_mixes_samples (mixes[i]);
  /* the recurrent family's last cells: grucell as the others;
   * zoneout_lstmcell (rates 0): nntrainer leaves its masks undrawn;
   * zoneout_full (rates 1): only inference differs */
  if (interop_status ("grucell") > 0)
    interop_family ("grucell");
  if (interop_status ("zoneout_lstmcell") > 0)
    interop_nntrainer_wrong ("zoneout_lstmcell", "leaves the zoneout masks "
        "undrawn at rate 0: its training forward zeroes the new states, its "
        "backward gives their whole derivative to the previous ones");
  if (interop_status ("zoneout_full") > 0)
    interop_zoneout_inference_differs ("zoneout_full");
  /* tensor-trainer import's INIs (onnx_*: fixtures of tests/onnx/
   * imported with --batch 4 --learning-rate 0.1; test_cli_import.sh
   * checks that import still writes them): nntrainer reads these and
   * computes and trains them as ours */
  static const char *const imported[] = {
    "onnx_mlp_op13", "onnx_residual_op13", "onnx_conv1d_op13",
    "onnx_audio1d_train_op13", "onnx_lstm_last_op13", "onnx_gru_last_op13",
    "onnx_embed_lstm_op13", NULL
  };
  for (int i = 0; imported[i]; i++)
    if (interop_status (imported[i]) > 0)
      interop_family (imported[i]);
  /* and refuses these (keys of ours: ceil_mode, groups, count_include_pad,
   * the clip activation), or fails in its own inference
   * (multi_head_attention: "Requested tensor not found") */
  static const char *const imported_refused[] = {
    "onnx_cnn_train_op13", "onnx_conv1d_pool_op17", "onnx_dscnn_train_op13",
    "onnx_dwsep_op13", "onnx_folded_op14", "onnx_tf_post_relu_op17",
    "onnx_tf_pre_gelu_op13", NULL
  };
  for (int i = 0; imported_refused[i]; i++)
    CHECK (interop_status (imported_refused[i]) < 0, "%s: nntrainer's "
        "refusal is no longer recorded", imported_refused[i]);
  /* LoRA adapters: nntrainer moves the frozen base */
  static const char *const lora[] = { "lora_fc", "lora_fc_adam", NULL };
  for (int i = 0; lora[i]; i++)
    if (interop_status (lora[i]) > 0)
      interop_lora (lora[i]);
}

static void
test_bundle_of_earlier_versions (void)
{
  char ttb[1400], dir[600];
  snprintf (ttb, sizeof ttb, "%s/tests/unit/data/branchy_bn-ini-order.ttb",
      root);
  size_t nw;
  char *want = tt_test_read_file (interop_path ("branchy_bn", "init.bin"),
      &nw);
  tt_error err;
  tt_model *m = tt_bundle_load (ttb, NULL, &err);
  CHECK (m != NULL && want, "%s: %s", ttb, m ? "" : err.message);
  if (!m || !want) {
    free (want);
    return;
  }
  const size_t w = tt_bin_weight_bytes (m);
  snprintf (dir, sizeof dir, "%s", tt_test_write_file ("loaded.bin", "", 0));
  tt_status st = tt_model_save_bin (m, dir, &err);
  CHECK (st == TT_OK, "%s", err.message);
  size_t n;
  char *got = tt_test_read_file (dir, &n);
  CHECK (got && n >= w && !memcmp (got, want, w), "%s: loaded, its weights "
      "are not nntrainer's", ttb);
  free (got);
  char bin[600];
  snprintf (bin, sizeof bin, "%s", tt_test_write_file ("unpacked.bin", "", 0));
  st = tt_bundle_unpack (ttb, NULL, bin, &err);
  CHECK (st == TT_OK, "%s", err.message);
  got = tt_test_read_file (bin, &n);
  CHECK (got && n == w && !memcmp (got, want, w), "%s: unpacked, its BIN is "
      "not nntrainer's", ttb);
  printf ("  %-22s d. a bundle in INI order (earlier versions): loaded and "
      "unpacked, %zu weight bytes, nntrainer's %s\n", "branchy_bn", w,
      got && n == w && !memcmp (got, want, w) ? "byte for byte" : "NOT");
  free (got);
  free (want);
  tt_model_free (m);
}

/* e: save_best_path against nntrainer's own run (record.sh's best stage,
 * mlp_best.best.txt): ours, from the same initial BIN, trained on the same
 * batches (the training generator is mlp_adam's: same stream, same
 * shapes, so mlp_adam.train.*.f32) and validated on the same 2 batches
 * after each of 6 epochs, saves after the same epochs, and the file at
 * the end is nntrainer's: same size and counters, weights and moments to
 * TRAIN_TOL. The INI's path is relative: it lands in the working
 * directory, as nntrainer's did. */
static void
test_save_best_path (void)
{
  tt_error err;
  tt_model *m = interop_open_form ("mlp_best", 4, true, &err);
  CHECK (m != NULL, "mlp_best: %s", m ? "" : err.message);
  if (!m)
    return;
  size_t nx, nt, nvx, nvt, nlog = 0, nwant = 0;
  float *x = interop_read ("mlp_adam", "train.in.f32", &nx);
  float *t = interop_read ("mlp_adam", "train.label.f32", &nt);
  float *vx = interop_read ("mlp_best", "valid.in.f32", &nvx);
  float *vt = interop_read ("mlp_best", "valid.label.f32", &nvt);
  char *log = tt_test_read_file (interop_path ("mlp_best", "best.txt"),
      &nlog);
  char *want = tt_test_read_file (interop_path ("mlp_best", "best.bin"),
      &nwant);
  char cwd[1024], dir[600];
  const bool have_cwd = getcwd (cwd, sizeof cwd) != NULL;
  snprintf (dir, sizeof dir, "%s", tt_test_write_file ("best_marker", "", 0));
  *strrchr (dir, '/') = '\0';
  tt_status st = tt_model_load_bin (m, interop_path ("mlp_best",
          "best_init.bin"), &err);
  CHECK (st == TT_OK, "mlp_best: %s", err.message);
  CHECK (x && t && vx && vt && log && want && nx == 16 * 12 && nt == 16 * 5
      && nvx == 8 * 12 && nvt == 8 * 5, "mlp_best: recordings missing");
  CHECK (have_cwd && chdir (dir) == 0, "cannot enter %s", dir);
  const char *line = log;
  for (int epoch = 1; epoch <= 6 && !st && x && t && vx && vt && log; epoch++) {
    for (int b = 0; b < 4 && !st; b++) {
      const void *in[1] = { x + (size_t) b * 4 * 12 };
      st = tt_model_train_batch (m, 4, in, NULL, t + (size_t) b * 4 * 5, NULL,
          &err);
    }
    tt_model_finish_epoch (m);
    double loss = 0;
    uint32_t correct = 0;
    for (int b = 0; b < 2 && !st; b++) {
      const void *in[1] = { vx + (size_t) b * 4 * 12 };
      tt_batch_result r;
      st = tt_model_eval_batch (m, 4, in, NULL, vt + (size_t) b * 4 * 5, &r,
          &err);
      loss += r.loss / 2;
      correct += r.correct;
    }
    bool saved = false;
    if (!st)
      st = tt_model_save_best (m, loss, correct / 8.0, &saved, &err);
    CHECK (st == TT_OK, "mlp_best epoch %d: %s", epoch, err.message);
    int e = 0;
    double nn_acc = -1, nn_loss = -1;
    char nn_saved[8] = "";
    line = line ? strstr (line, "epoch ") : NULL;
    CHECK (line && sscanf (line, "epoch %d accuracy %lf loss %lf saved %7s",
            &e, &nn_acc, &nn_loss, nn_saved) == 4 && e == epoch,
        "mlp_best.best.txt: no line for epoch %d", epoch);
    if (line)
      line++;
    printf ("  %-22s e. epoch %d: accuracy %.1f%% (nntrainer %.1f%%), loss "
        "%.6f (nntrainer %.6f), saved %s (nntrainer %s)\n", "mlp_best",
        epoch, correct / 8.0 * 100, nn_acc, loss, nn_loss,
        saved ? "yes" : "no", nn_saved);
    CHECK (fabs (correct / 8.0 * 100 - nn_acc) < 1e-3 &&
        fabs (loss - nn_loss) <= 1e-4, "mlp_best epoch %d: validation "
        "differs from nntrainer's", epoch);
    CHECK (saved == !strcmp (nn_saved, "yes"), "mlp_best epoch %d: saved %d, "
        "nntrainer %s", epoch, saved, nn_saved);
  }
  size_t ngot = 0;
  char *got = tt_test_read_file ("mlp_best.saved.bin", &ngot);
  CHECK (got != NULL, "mlp_best: mlp_best.saved.bin not in the working "
      "directory");
  if (got && want) {
    const size_t w = tt_bin_weight_bytes (m);
    double d = 0;
    for (size_t i = 0; i + 4 <= ngot - 8 && ngot == nwant; i += 4) {
      if (i >= w && i < w + 4)
        continue;               /* the tag */
      float a, b;
      memcpy (&a, got + i, 4);
      memcpy (&b, want + i, 4);
      d = fmax (d, fabs ((double) a - (double) b));
    }
    printf ("  %-22s e. the save_best_path file: %zu bytes (nntrainer %zu), "
        "weights and moments max |diff| %.2e, counters %s\n", "mlp_best",
        ngot, nwant, d, ngot == nwant && !memcmp (got + ngot - 8,
            want + nwant - 8, 8) ? "equal" : "DIFFER");
    CHECK (ngot == nwant && !memcmp (got + w, want + w, 4) &&
        !memcmp (got + ngot - 8, want + nwant - 8, 8) && d <= TRAIN_TOL,
        "mlp_best: the save_best_path file is not nntrainer's");
  }
  remove ("mlp_best.saved.bin");
  if (have_cwd && chdir (cwd) != 0)
    CHECK (false, "cannot return to %s", cwd);
  free (got);
  free (x);
  free (t);
  free (vx);
  free (vt);
  free (log);
  free (want);
  tt_model_free (m);
}

/* f: AdamW BINs are nntrainer's (weights and counters: its save() writes
 * the tag and moments for "adam" only), and the form with the tag and
 * the moments, which earlier versions of ours wrote, still loads: here
 * mlp_adam's save_path BIN (the same layers) into the AdamW model; saved
 * again it is weights + counters, the moments kept in the model */
static void
test_adamw_tagged_bin_loads (void)
{
  tt_error err;
  tt_model *m = interop_open ("mlp_adamw", 4, &err);
  CHECK (m != NULL, "mlp_adamw: %s", m ? "" : err.message);
  if (!m)
    return;
  const char *src = interop_path ("mlp_adam", "savepath.bin");
  size_t n = 0;
  char *file = tt_test_read_file (src, &n);
  tt_status st = tt_model_load_bin (m, src, &err);
  CHECK (st == TT_OK, "mlp_adamw: the tagged form: %s", err.message);
  const size_t w = tt_bin_weight_bytes (m);
  /* the first trainable weight's first moment, right after the tag */
  bool moments = false;
  for (uint32_t c = 0; c < m->n_layers && !moments && file; c++)
    for (uint32_t i = 0; i < m->layers[c].n_weights && !moments; i++) {
      const tt_weight *wt = &m->layers[c].weights[i];
      if (!wt->trainable || wt->opt[0] < 0
          || !strstr (m->tensors[wt->opt[0]].name, "fc1"))
        continue;
      moments = n > w + 4 + wt->count * 4 && !memcmp (file + w + 4,
          m->tensors[wt->opt[0]].data, 16);
    }
  CHECK (moments, "mlp_adamw: the moments of the tagged file were loaded");
  const char *dst = tt_test_write_file ("adamw.bin", "", 0);
  st = st ? st : tt_model_save_bin (m, dst, &err);
  size_t nb = 0;
  char *saved = tt_test_read_file (dst, &nb);
  CHECK (st == TT_OK && saved && nb == w + 8 && file && !memcmp (saved, file,
          w) && !memcmp (saved + w, file + n - 8, 8), "mlp_adamw: saved "
      "again: %zu bytes, want weights + counters (%zu)", nb, w + 8);
  printf ("  %-22s f. mlp_adam.savepath.bin (%zu bytes, 'adam' + moments) "
      "loaded by the AdamW model, saved as %zu bytes (weights + counters)\n",
      "mlp_adamw", n, nb);
  free (saved);
  free (file);
  tt_model_free (m);
}

#define INTEROP_CASE(name) \
  static void test_##name (void) { interop_model (#name); }
INTEROP_CASE (branch3_fc)
    INTEROP_CASE (branchy_bn)
    INTEROP_CASE (inception)
    INTEROP_CASE (input_normalization)
    INTEROP_CASE (input_standardization)
    INTEROP_CASE (mlp_adam)
    INTEROP_CASE (mlp_adamw)
    INTEROP_CASE (mlp_sgd)
    INTEROP_CASE (resnet_bn)
    INTEROP_CASE (sensor_conv1d)
    INTEROP_CASE (sensor_gru)
    INTEROP_CASE (sensor_lstm)
    INTEROP_CASE (transfer_frozen)
     int main (int argc, char **argv)
{
  snprintf (root, sizeof root, "%s", argc > 1 ? argv[1] : ".");
  snprintf (rec, sizeof rec, "%s/tests/interop/nntrainer/recordings", root);
  TT_TEST_RUN (test_branch3_fc);
  TT_TEST_RUN (test_branchy_bn);
  TT_TEST_RUN (test_inception);
  TT_TEST_RUN (test_input_normalization);
  TT_TEST_RUN (test_input_standardization);
  TT_TEST_RUN (test_mlp_adam);
  TT_TEST_RUN (test_mlp_adamw);
  TT_TEST_RUN (test_mlp_sgd);
  TT_TEST_RUN (test_resnet_bn);
  TT_TEST_RUN (test_sensor_conv1d);
  TT_TEST_RUN (test_sensor_gru);
  TT_TEST_RUN (test_sensor_lstm);
  TT_TEST_RUN (test_transfer_frozen);
  TT_TEST_RUN (test_bundle_of_earlier_versions);
  TT_TEST_RUN (test_save_best_path);
  TT_TEST_RUN (test_adamw_tagged_bin_loads);
  /* one model per layer family */
  TT_TEST_RUN (test_families);
  return tt_test_summary ();
}
