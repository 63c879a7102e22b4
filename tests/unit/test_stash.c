/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mixed precision's stash (core/stash.c, plan/remat.c): with a bf16 or
 * fp16 activation type, the activations kept from forward to backward
 * live in the pool at 2 bytes an element between their last forward use
 * and the backward layer that first needs them. Checked here:
 * - pools of fmnist_cnn, zoo_mobilenet_v2 and zoo_transformer at batch
 *   32, fp32 against bf16: the activation bytes held at the turn from
 *   forward to backward at most 0.6 of fp32's, and a smaller pool;
 * - training: per-step losses within 0.1% of fp32's, on one thread and
 *   on two (the conversions split);
 * - bit for bit: a model whose kept activations are small integers
 *   (exact in bf16 and fp16) gives fp32's loss and gradients exactly,
 *   and the same model on non-integer inputs does not (the stash rounds);
 * - attention's held scratch (multi_head_attention's projections and
 *   heads' output at half width): a step's loss and gradients the bits
 *   of holding them in fp32 (tt_mha_force_fp32_scratch) for the MHA and
 *   transformer models in bf16 and fp16, on two threads; fp32 models
 *   unchanged; the held tensors half the bytes, zoo_transformer's pool
 *   smaller at batch 32; its probabilities at half width: the same
 *   forward, one SGD step's change within the format's unit roundoff;
 *   the plan stored and loaded;
 * - the stored plan: loads without replanning (same pool, same offsets)
 *   and trains the same; at fp32 it is replanned; a stash on a tensor
 *   that is not a candidate, an overlapping stash, a bad [Plan]
 *   activations and a stash in an fp32 plan are refused naming them; the
 *   validator refuses a stash too small;
 * - swap (core/swap.c): a group swapped under a memory limit goes to the
 *   file at 2 bytes an element, rounded as the stash rounds: a model
 *   whose every stashed group is swapped trains bit for bit as the
 *   stashed model, in bf16 and fp16; the file is as long as the plan
 *   says, its roots half their fp32 bytes; the widening in place equals
 *   the conversion out of place; a stored plan reloads, and one without
 *   the staging tensors (made when the file held fp32) is refused.
 *
 * Usage: test_stash SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "tt_test_hooks.h"
#include "train_steps.h"
#include "model_tensors.h"
#include "plan_validate.h"
#include "kernels.h"

#include <inttypes.h>
#include <math.h>
#include <sys/stat.h>

static char root[1024];

static tt_model *
open_at (const char *path, const char *text, uint32_t batch,
    tt_precision act, unsigned threads, bool fusion, tt_error * err)
{
  tt_model *m = text ? tt_model_load_ini_text (text, strlen (text), path,
      err) : tt_model_load_ini (path, err);
  if (!m)
    return NULL;
  tt_model_set_relu_fusion (m, fusion);
  if ((batch && tt_model_set_batch_size (m, batch, err)) ||
      tt_model_set_threads (m, threads, err) ||
      tt_model_set_precision (m, tt_precision_name (act), err)
      || tt_model_compile (m, err)) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

/* a model of tests/models, or a path of the test's own files (with a
 * slash) */
static void
model_path (char *path, size_t len, const char *name)
{
  if (strchr (name, '/'))
    snprintf (path, len, "%s", name);
  else
    snprintf (path, len, "%s/tests/models/%s", root, name);
}

/* an attention with dropout (its multipliers applied to P in backward),
 * written by attention_dropout_model */
static const char attention_dropout_ini[] =
    "[Model]\ntype = NeuralNetwork\nbatch_size = 6\nloss = cross\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
    "[input]\ntype = input\ninput_shape = 1:8:12\n"
    "[embed]\ntype = fully_connected\nunit = 16\n"
    "[attn]\ntype = multi_head_attention\n"
    "input_layers = embed, embed, embed\nnum_heads = 2\ndropout_rate = 0.3\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 5\nactivation = softmax\n";

static const char *
attention_dropout_model (void)
{
  /* (tt_test_write_file's path is overwritten by its next call) */
  static char path[2048];
  snprintf (path, sizeof path, "%s", tt_test_write_file ("mha_dropout.ini",
          attention_dropout_ini, strlen (attention_dropout_ini)));
  return path;
}

static void
test_pools (void)
{
  static const char *const models[] = {
    "fmnist_cnn.ini", "zoo_resnet8.ini", "zoo_mobilenet_v2.ini",
    "zoo_transformer.ini", NULL
  };
  for (int i = 0; models[i]; i++) {
    char path[2048];
    tt_error err;
    model_path (path, sizeof path, models[i]);
    tt_model *a = open_at (path, NULL, 32, TT_PRECISION_FP32, 1, true, &err);
    CHECK (a != NULL, "%s fp32: %s", models[i], a ? "" : err.message);
    tt_model *b = open_at (path, NULL, 32, TT_PRECISION_BF16, 1, true, &err);
    CHECK (b != NULL, "%s bf16: %s", models[i], b ? "" : err.message);
    if (a && b) {
      tt_plan_info pa, pb;
      tt_model_plan_info (a, &pa);
      tt_model_plan_info (b, &pb);
      const uint64_t ha = tt_model_held_activation_bytes (a),
          hb = tt_model_held_activation_bytes (b);
      printf ("%-22s batch 32  pool fp32 %10" PRIu64 "  bf16 %10" PRIu64
          " (%.2f)  held at the turn fp32 %10" PRIu64 "  bf16 %10" PRIu64
          " (%.2f)  stashed %u (%" PRIu64 " bytes)\n", models[i],
          pa.pool_bytes, pb.pool_bytes,
          (double) pb.pool_bytes / (double) pa.pool_bytes, ha, hb,
          (double) hb / (double) ha, pb.stashed, pb.stashed_bytes);
      /* the CNN's busiest step is its second convolution's backward,
       * where its one stash would be widened: it keeps that activation
       * fp32 (remat.c, remat_unstash_peaks), and its pool is fp32's */
      const bool cnn = i == 0;
      CHECK (pa.stashed == 0 && (cnn || pb.stashed > 0), "%s: stashed %u "
          "at fp32, %u at bf16", models[i], pa.stashed, pb.stashed);
      CHECK (cnn || hb * 10 <= ha * 6, "%s: held %" PRIu64 " at bf16 "
          "against %" PRIu64 " at fp32: not about halved", models[i], hb, ha);
      CHECK (cnn ? pb.pool_bytes <= pa.pool_bytes : pb.pool_bytes <
          pa.pool_bytes, "%s: pool %" PRIu64 " at bf16, %" PRIu64 " at fp32",
          models[i], pb.pool_bytes, pa.pool_bytes);
    }
    tt_model_free (a);
    tt_model_free (b);
  }
}

/* steps of training on fixed data; the losses in loss[] */
static void
train_losses (tt_model * m, int steps, double *loss)
{
  const uint32_t batch = tt_model_batch_size (m);
  tt_shape in, lb = tt_model_label_shape (m);
  tt_model_input_shape (m, 0, &in);
  const size_t nx = (size_t) batch * in.channel * in.height * in.width;
  const size_t nl = (size_t) lb.channel * lb.height * lb.width;
  float *x = malloc (nx * sizeof *x), *t = calloc (batch * nl, sizeof *t);
  for (size_t j = 0; j < nx; j++)
    x[j] = (float) ((j * 7919) % 255) / 255.0f;
  for (uint32_t b = 0; b < batch; b++)
    t[b * nl + (b * 7u) % nl] = 1;
  const void *inputs[1] = { x };
  for (int s = 0; s < steps; s++) {
    tt_error err;
    tt_batch_result r = { 0 };
    CHECK (tt_model_train_batch (m, batch, inputs, NULL, t, &r, &err) ==
        TT_OK, "%s", err.message);
    loss[s] = r.loss;
  }
  free (x);
  free (t);
}

static void
compare_losses (const char *name, unsigned threads, uint32_t batch)
{
  char path[2048];
  tt_error err;
  model_path (path, sizeof path, "fmnist_cnn.ini");
  tt_model *a = open_at (path, NULL, batch, TT_PRECISION_FP32, threads,
      true, &err);
  CHECK (a != NULL, "%s: %s", name, a ? "" : err.message);
  tt_model *b = open_at (path, NULL, batch, TT_PRECISION_BF16, threads,
      true, &err);
  CHECK (b != NULL, "%s: %s", name, b ? "" : err.message);
  if (a && b) {
    enum
    { STEPS = 6 };
    double la[STEPS], lb[STEPS];
    train_losses (a, STEPS, la);
    train_losses (b, STEPS, lb);
    for (int s = 0; s < STEPS; s++) {
      printf ("%s step %d: loss fp32 %.6f  bf16 stash %.6f\n", name, s,
          la[s], lb[s]);
      CHECK (isfinite (lb[s]) && fabs (lb[s] - la[s]) <= 1e-3 * fabs (la[s]),
          "%s step %d: %.6f against %.6f", name, s, lb[s], la[s]);
    }
    tt_plan_info pb;
    tt_model_plan_info (b, &pb);
    CHECK (pb.stashed > 0, "%s: nothing stashed", name);
  }
  tt_model_free (a);
  tt_model_free (b);
}

static void
test_losses (void)
{
  compare_losses ("fmnist_cnn 1 thread", 1, 8);
  /* the conversions split over two threads (every step): at batch 16
   * pool1's output, 86528 elements, is converted in parts */
  setenv ("TT_THREADS_STEPS", "split", 1);
  compare_losses ("fmnist_cnn 2 threads", 2, 16);
  unsetenv ("TT_THREADS_STEPS");
}

/* kept activations: fc1's output through relu, fc2's output (what the
 * loss reads in backward) */
static const char exact_model[] =
    "[Model]\nbatch_size = 4\nloss = mse\n"
    "[Optimizer]\ntype = sgd\nlearning_rate = 0.01\n"
    "[input]\ntype = input\ninput_shape = 1:1:8\n"
    "[fc1]\ntype = fully_connected\nunit = 8\nactivation = relu\n"
    "[fc2]\ntype = fully_connected\nunit = 4\n";

/* fc1's weights integers in [-2, 2], fc2's in [-1, 1], biases 0; inputs
 * in [-2, 2] (over divisor): fc1's sums are integers of at most 32, fc2's
 * at most 256, exact in bf16 (8 significant bits) and fp16 */
static tt_model *
exact_run (tt_precision act, float divisor, double *loss)
{
  tt_error err;
  tt_model *m = tt_model_load_ini_text (exact_model, strlen (exact_model),
      "exact.ini", &err);
  CHECK (m != NULL, "%s", m ? "" : err.message);
  if (!m)
    return NULL;
  tt_model_set_relu_fusion (m, false);
  if (tt_model_keep_gradients (m, &err) ||
      tt_model_set_precision (m, tt_precision_name (act), &err) ||
      tt_model_compile (m, &err)) {
    CHECK (false, "%s", err.message);
    tt_model_free (m);
    return NULL;
  }
  for (int l = 1; l <= 2; l++) {
    const tt_layer *L = &m->layers[tt_model_find_layer (m, l == 1 ? "fc1" :
            "fc2")];
    for (uint32_t k = 0; k < L->n_weights; k++) {
      float *w = tt_data (m, L->weights[k].value);
      for (size_t i = 0; i < L->weights[k].count; i++)
        w[i] = k ? 0.0f : l == 1 ? (float) ((int) ((i * 7) % 5) - 2) :
            (float) ((int) ((i * 5) % 3) - 1);
    }
  }
  float x[4 * 8], t[4 * 4];
  for (int i = 0; i < 32; i++)
    x[i] = (float) ((i * 3) % 5 - 2) / divisor;
  for (int i = 0; i < 16; i++)
    t[i] = (float) (i % 3);
  const void *in[1] = { x };
  CHECK (tt_model_gradients (m, 4, in, NULL, t, true, loss, &err) == TT_OK,
      "%s", err.message);
  return m;
}

/* every weight's gradient of a and b the same bit for bit */
static bool
same_gradients (const tt_model * a, const tt_model * b)
{
  bool same = true;
  for (uint32_t l = 0; l < a->n_layers; l++)
    for (uint32_t k = 0; k < a->layers[l].n_weights; k++) {
      const tt_weight *wa = &a->layers[l].weights[k];
      const tt_weight *wb = &b->layers[l].weights[k];
      same &= wa->grad >= 0 && wb->grad >= 0 &&
          !memcmp (tt_data (a, wa->grad), tt_data (b, wb->grad),
          wa->count * sizeof (float));
    }
  return same;
}

static void
test_exact (void)
{
  static const tt_precision half[2] = { TT_PRECISION_BF16,
    TT_PRECISION_FP16
  };
  for (int h = 0; h < 2; h++) {
    const char *name = h ? "fp16" : "bf16";
    double la, lb, lc, ld;
    tt_model *a = exact_run (TT_PRECISION_FP32, 1.0f, &la);
    tt_model *b = exact_run (half[h], 1.0f, &lb);
    if (a && b) {
      tt_plan_info pb;
      tt_model_plan_info (b, &pb);
      CHECK (pb.stashed >= 2, "%s: stashed %u (fc1's and fc2's outputs)",
          name, pb.stashed);
      CHECK (la == lb && la > 0, "%s: loss %.9g against fp32's %.9g", name,
          lb, la);
      CHECK (same_gradients (a, b), "%s: integer activations: the gradients "
          "differ from fp32's", name);
    }
    tt_model_free (a);
    tt_model_free (b);
    /* inputs in thirds: the kept activations round, so the stash shows */
    tt_model *c = exact_run (TT_PRECISION_FP32, 3.0f, &lc);
    tt_model *d = exact_run (half[h], 3.0f, &ld);
    if (c && d)
      CHECK (!same_gradients (c, d), "%s: activations in thirds: the "
          "gradients are fp32's, so nothing was rounded", name);
    printf ("exact %s: integer activations loss %.9g = %.9g; in thirds "
        "%.9g against %.9g\n", name, la, lb, ld, lc);
    tt_model_free (c);
    tt_model_free (d);
  }
}

/* model name at act on two threads, its attentions' scratch held in
 * fp32 or not (the probabilities in fp32 either way); 3 training steps on fixed data (the last one sample
 * short); NULL on failure */
static tt_model *
attention_steps (const char *name, tt_precision act, bool fp32_scratch)
{
  char path[2048];
  tt_error err;
  model_path (path, sizeof path, name);
  tt_mha_force_fp32_scratch (fp32_scratch);
  tt_mha_force_fp32_probs (true);
  tt_model *m = open_at (path, NULL, 0, act, 2, true, &err);
  tt_mha_force_fp32_scratch (false);
  tt_mha_force_fp32_probs (false);
  CHECK (m != NULL, "%s: %s", name, m ? "" : err.message);
  if (m)
    tt_test_train_steps (m, name, 3, 255.0f);
  return m;
}

/* the bytes of m's multi_head_attention projections (tensors named
 * LAYER:proj_query and so on) */
static uint64_t
projection_bytes (const tt_model * m)
{
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < m->n_tensors; i++)
    if (strstr (m->tensors[i].name, ":proj_") &&
        !strstr (m->tensors[i].name, ":deriv") &&
        !strstr (m->tensors[i].name, ":fp32"))
      bytes += (uint64_t) m->tensors[i].count * sizeof (float);
  return bytes;
}

/* a plan of m, whose attentions hold their scratch in fp32 (as the
 * layers planned before they held it at half width), loaded at act:
 * refused, naming the fp32 scratch of forward the plan lacks */
static void
attention_fp32_plan_refused (tt_model * m, tt_precision act)
{
  tt_error err;
  char *text;
  size_t len;
  CHECK (tt_plan_ini_text (m, &text, &len, &err) == TT_OK, "%s", err.message);
  /* (the text is not NUL-terminated) */
  char *z = malloc (len + 1);
  memcpy (z, text, len);
  z[len] = '\0';
  free (text);
  tt_model *b = open_at ("fp32_held.ini", z, 0, act, 2, true, &err);
  free (z);
  CHECK (b == NULL && strstr (err.message, "enc1_attn:proj:fp32"),
      "a plan holding attention's scratch in fp32 at %s: %s",
      tt_precision_name (act), b ? "loaded" : err.message);
  if (!b)
    printf ("a plan holding attention's scratch in fp32: refused: %s\n",
        err.message);
  tt_model_free (b);
}

/* m's plan stored and loaded at act: the plan as stored (the half
 * scratch's sizes recomputed by the layers and checked at load) */
static void
attention_stored (tt_model * m, tt_precision act)
{
  tt_error err;
  char *text;
  size_t len;
  CHECK (tt_plan_ini_text (m, &text, &len, &err) == TT_OK, "%s", err.message);
  const char *stored = tt_test_write_file ("attention.ini", text, len);
  free (text);
  tt_model *b = open_at (stored, NULL, 0, act, 2, true, &err);
  CHECK (b != NULL, "stored attention plan: %s", b ? "" : err.message);
  if (!b)
    return;
  tt_plan_info pa, pb;
  tt_model_plan_info (m, &pa);
  tt_model_plan_info (b, &pb);
  bool same = m->n_tensors == b->n_tensors;
  for (uint32_t i = 0; same && i < m->n_tensors; i++)
    same = m->tensors[i].offset == b->tensors[i].offset &&
        m->tensors[i].count == b->tensors[i].count &&
        !strcmp (m->tensors[i].name, b->tensors[i].name);
  printf ("stored attention plan %s: from the plan %d, pool %" PRIu64
      " against %" PRIu64 "\n", tt_precision_name (act),
      pb.from_stored_plan, pb.pool_bytes, pa.pool_bytes);
  CHECK (pb.from_stored_plan && pb.pool_bytes == pa.pool_bytes && same,
      "stored attention plan %s: from the plan %d, pool %" PRIu64
      " against %" PRIu64 ", tensors the same %d", tt_precision_name (act),
      pb.from_stored_plan, pb.pool_bytes, pa.pool_bytes, same);
  tt_model_free (b);
}

static void
test_attention_scratch (void)
{
  const char *const models[] = {
    "mha_self.ini", "mha_cross_mask.ini", "mha_weights.ini",
    "transformer_encoder.ini", "zoo_transformer.ini",
    attention_dropout_model (), NULL
  };
  static const tt_precision acts[3] = { TT_PRECISION_BF16,
    TT_PRECISION_FP16, TT_PRECISION_FP32
  };
  for (int i = 0; models[i]; i++)
    for (int h = 0; h < 3; h++) {
      const char *an = tt_precision_name (acts[h]);
      tt_model *a = attention_steps (models[i], acts[h], true);
      tt_model *b = attention_steps (models[i], acts[h], false);
      if (a && b) {
        tt_plan_info pa, pb;
        tt_model_plan_info (a, &pa);
        tt_model_plan_info (b, &pb);
        const uint64_t ba = projection_bytes (a), bb = projection_bytes (b);
        printf ("%s %s: projections %" PRIu64 " bytes (held in fp32 %"
            PRIu64 "), pool %" PRIu64 " (%" PRIu64 ")\n", models[i], an, bb,
            ba, pb.pool_bytes, pa.pool_bytes);
        CHECK (tt_test_same_state (a, b, models[i]), "%s %s: 3 steps' "
            "weights and Adam state differ from those of the scratch held "
            "in fp32", models[i], an);
        if (acts[h] == TT_PRECISION_FP32)
          CHECK (ba == bb && pa.pool_bytes == pb.pool_bytes, "%s fp32: "
              "projections %" PRIu64 " against %" PRIu64 ", pool %" PRIu64
              " against %" PRIu64, models[i], bb, ba, pb.pool_bytes,
              pa.pool_bytes);
        else
          CHECK (ba > 0 && bb * 2 <= ba + 16, "%s %s: projections %" PRIu64
              " bytes, %" PRIu64 " in fp32", models[i], an, bb, ba);
        if (acts[h] != TT_PRECISION_FP32 && !strcmp (models[i],
                "zoo_transformer.ini")) {
          CHECK (pb.pool_bytes < pa.pool_bytes, "%s %s: pool %" PRIu64
              " against %" PRIu64 " held in fp32", models[i], an,
              pb.pool_bytes, pa.pool_bytes);
          attention_fp32_plan_refused (a, acts[h]);
        }
      }
      tt_model_free (a);
      tt_model_free (b);
    }
  /* the portable paths (no AVX-512 BF16 kernels, the softmax's rows
   * every CPU runs): the same bits held either way */
  tt_bf16_force_portable (true);
  tt_attention_force_portable (true);
  for (int h = 0; h < 2; h++) {
    tt_model *a = attention_steps ("transformer_encoder.ini", acts[h], true);
    tt_model *b = attention_steps ("transformer_encoder.ini", acts[h], false);
    if (a && b)
      CHECK (tt_test_same_state (a, b, "portable"), "transformer_encoder "
          "%s, portable paths: the state differs from that of the scratch "
          "held in fp32", tt_precision_name (acts[h]));
    tt_model_free (a);
    tt_model_free (b);
  }
  tt_bf16_force_portable (false);
  tt_attention_force_portable (false);
}

/* the weights' change in one SGD step of learning rate 1 (minus the
 * gradients) of model name at act on two threads, its attentions'
 * probabilities held in fp32 or at half width; the step's loss, the
 * model (its pool and tensors) for the caller to free */
static float *
attention_sgd_step (const char *name, tt_precision act, bool fp32_probs,
    size_t *nw, double *loss, tt_model ** out)
{
  char path[2048];
  tt_error err;
  model_path (path, sizeof path, name);
  char *text = tt_test_read_file (path, NULL);
  const char *opt = text ? strstr (text, "[Optimizer]") : NULL;
  const char *next = opt ? strstr (opt + 1, "\n[") : NULL;
  CHECK (next != NULL, "%s: no [Optimizer] section", name);
  if (!next) {
    free (text);
    return NULL;
  }
  static const char sgd[] = "[Optimizer]\ntype = sgd\nlearning_rate = 1\n";
  char *sgd_text = malloc (strlen (text) + sizeof sgd);
  sprintf (sgd_text, "%.*s%s%s", (int) (opt - text), text, sgd, next);
  free (text);
  tt_mha_force_fp32_probs (fp32_probs);
  tt_model *m = open_at (name, sgd_text, 0, act, 2, true, &err);
  tt_mha_force_fp32_probs (false);
  free (sgd_text);
  CHECK (m != NULL, "%s: %s", name, m ? "" : err.message);
  *out = m;
  if (!m)
    return NULL;
  const uint32_t batch = tt_model_batch_size (m);
  tt_shape in, lb = tt_model_label_shape (m);
  tt_model_input_shape (m, 0, &in);
  const size_t nx = (size_t) batch * in.channel * in.height * in.width;
  const size_t nl = (size_t) lb.channel * lb.height * lb.width;
  float *x = malloc (nx * sizeof *x), *t = calloc (batch * nl, sizeof *t);
  for (size_t j = 0; j < nx; j++)
    x[j] = (float) ((j * 7919) % 255) / 255.0f;
  for (uint32_t b = 0; b < batch; b++)
    t[b * nl + (b * 7u) % nl] = 1;
  const void *inputs[1] = { x };
  *nw = tt_model_weight_floats (m);
  float *before = malloc (*nw * sizeof *before);
  float *delta = malloc (*nw * sizeof *delta);
  tt_batch_result r = { 0 };
  tt_model_export_weights (m, before, *nw, &err);
  CHECK (tt_model_train_batch (m, batch, inputs, NULL, t, &r, &err) == TT_OK,
      "%s: %s", name, err.message);
  tt_model_export_weights (m, delta, *nw, &err);
  for (size_t i = 0; i < *nw; i++)
    delta[i] -= before[i];
  *loss = r.loss;
  free (before);
  free (x);
  free (t);
  return delta;
}

/* the L2 norm of a - b over that of b */
static double
relative_l2 (const float *a, const float *b, size_t n)
{
  double d = 0, s = 0;
  for (size_t i = 0; i < n; i++) {
    d += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
    s += (double) b[i] * b[i];
  }
  return s > 0 ? sqrt (d / s) : INFINITY;
}

/* The probabilities held at half width: the softmax's derivative reads
 * them rounded, so the gradients change. Forward does not (the same
 * loss); one SGD step's weight change moves, relative in L2, by at most
 * the format's unit roundoff (each P moves by at most that, relative,
 * and dS is linear in P; measured 0.2 to 0.55 of it), and not by
 * nothing (it is in the path). Printed beside what the half format moves
 * the step from fp32's already (the products' and the stash's rounding):
 * 0.06 to 0.23 of that. The plan stored and loaded as it was made. */
static void
test_attention_probs (void)
{
  /* the last on the portable paths (the softmax's rows every CPU runs,
   * no AVX-512 BF16 kernels) */
  const char *const models[] = {
    "transformer_encoder.ini", "zoo_transformer.ini",
    attention_dropout_model (), "transformer_encoder.ini", NULL
  };
  static const tt_precision acts[2] = { TT_PRECISION_BF16,
    TT_PRECISION_FP16
  };
  /* bf16's and fp16's unit roundoff: the most rounding moves a P */
  static const double unit[2] = { 1.0 / 512, 1.0 / 4096 };
  for (int i = 0; models[i]; i++) {
    size_t nw = 0;
    double lf = 0;
    tt_model *mf;
    const bool portable = !models[i + 1];
    tt_bf16_force_portable (portable);
    tt_attention_force_portable (portable);
    float *gf = attention_sgd_step (models[i], TT_PRECISION_FP32, true, &nw,
        &lf, &mf);
    tt_model_free (mf);
    for (int h = 0; h < 2 && gf; h++) {
      const char *an = tt_precision_name (acts[h]);
      double la = 0, lb = 0;
      tt_model *a, *b;
      float *ga = attention_sgd_step (models[i], acts[h], true, &nw, &la, &a);
      float *gb = attention_sgd_step (models[i], acts[h], false, &nw, &lb,
          &b);
      if (ga && gb) {
        const double half = relative_l2 (ga, gf, nw),
            probs = relative_l2 (gb, ga, nw);
        printf ("%s %s%s: one SGD step, L2 from fp32's %.3g; probabilities "
            "at half width move it %.3g more (%.2f of that); loss %.9g, "
            "%.9g with fp32 probabilities\n", models[i], an, portable ?
            " (portable)" : "", half, probs, probs / half, lb, la);
        CHECK (la == lb, "%s %s: loss %.9g with half probabilities, %.9g "
            "without: forward changed", models[i], an, lb, la);
        CHECK (probs > 0 && probs <= unit[h], "%s %s: half probabilities "
            "move the step %.3g (the format's unit roundoff %.3g)",
            models[i], an, probs, unit[h]);
        if (!strcmp (models[i], "zoo_transformer.ini"))
          attention_stored (b, acts[h]);
      }
      free (ga);
      free (gb);
      tt_model_free (a);
      tt_model_free (b);
    }
    free (gf);
  }
  tt_bf16_force_portable (false);
  tt_attention_force_portable (false);
}

/* text with the first occurrence of from replaced by to; NULL: absent */
static char *
replace (const char *text, const char *from, const char *to)
{
  const char *at = strstr (text, from);
  if (!at)
    return NULL;
  char *out = malloc (strlen (text) - strlen (from) + strlen (to) + 1);
  const size_t head = (size_t) (at - text);
  memcpy (out, text, head);
  strcpy (out + head, to);
  strcat (out, at + strlen (from));
  return out;
}

static void
expect_refused (const char *name, const char *text, tt_precision act,
    const char *words)
{
  tt_error err;
  tt_model *m = text ? open_at ("tampered.ini", text, 0, act, 1, true,
      &err) : NULL;
  CHECK (text && m == NULL, "%s: a tampered plan loaded", name);
  if (text && !m) {
    CHECK (strstr (err.message, words) != NULL, "%s: '%s' not in: %s",
        name, words, err.message);
    printf ("%s: refused: %s\n", name, err.message);
  }
  tt_model_free (m);
}

/* the value of "key = value" in text, as a string (NULL: absent) */
static char *
value_of (const char *text, const char *key)
{
  char line[512];
  snprintf (line, sizeof line, "\n%s = ", key);
  const char *at = strstr (text, line);
  if (!at)
    return NULL;
  at += strlen (line);
  size_t n = strcspn (at, " \n");
  char *v = malloc (n + 1);
  memcpy (v, at, n);
  v[n] = '\0';
  return v;
}

static void
test_stored (void)
{
  char path[2048];
  tt_error err;
  model_path (path, sizeof path, "fmnist_cnn.ini");
  tt_model *a = open_at (path, NULL, 8, TT_PRECISION_BF16, 1, true, &err);
  CHECK (a != NULL, "%s", a ? "" : err.message);
  if (!a)
    return;
  char *text;
  size_t len;
  CHECK (tt_plan_ini_text (a, &text, &len, &err) == TT_OK, "%s", err.message);
  char *z = malloc (len + 1);
  memcpy (z, text, len);
  z[len] = '\0';
  free (text);
  CHECK (strstr (z, "\nactivations = bf16\n") && strstr (z, " = stash   # ")
      && strstr (z, ":stashed = "), "the stored plan has no stash");
  const char *stored = tt_test_write_file ("stash.ini", z, len);

  /* loaded at bf16: the plan as stored, trained the same */
  tt_model *b = open_at (stored, NULL, 0, TT_PRECISION_BF16, 1, true, &err);
  CHECK (b != NULL, "stored: %s", b ? "" : err.message);
  if (b) {
    tt_plan_info pa, pb;
    tt_model_plan_info (a, &pa);
    tt_model_plan_info (b, &pb);
    CHECK (pb.from_stored_plan && pb.pool_bytes == pa.pool_bytes &&
        pb.stashed == pa.stashed && pb.stashed_bytes == pa.stashed_bytes,
        "stored: from the plan %d, pool %" PRIu64 " against %" PRIu64
        ", stashed %u against %u", pb.from_stored_plan, pb.pool_bytes,
        pa.pool_bytes, pb.stashed, pa.stashed);
    bool same = a->n_tensors == b->n_tensors;
    for (uint32_t i = 0; same && i < a->n_tensors; i++)
      same = a->tensors[i].offset == b->tensors[i].offset &&
          !strcmp (a->tensors[i].name, b->tensors[i].name);
    CHECK (same, "stored: the tensors or their offsets differ");
    tt_test_train_steps (a, "planned", 3, 255.0f);
    tt_test_train_steps (b, "stored", 3, 255.0f);
    CHECK (tt_test_same_state (a, b, "stored"), "stored: trains otherwise");
  }
  tt_model_free (b);

  /* loaded at fp32: made for bf16, so planned afresh, without a stash */
  b = open_at (stored, NULL, 0, TT_PRECISION_FP32, 1, true, &err);
  CHECK (b != NULL, "stored at fp32: %s", b ? "" : err.message);
  if (b) {
    tt_plan_info pb;
    tt_model_plan_info (b, &pb);
    CHECK (!pb.from_stored_plan && pb.stashed == 0, "stored at fp32: from "
        "the plan %d, stashed %u", pb.from_stored_plan, pb.stashed);
  }
  tt_model_free (b);

  /* a stash on the loss's output: not a candidate */
  const char *loss_out = a->tensors[a->layers[a->loss_layer].out[0]].name;
  char line[512];
  snprintf (line, sizeof line, "%s = stash\n", loss_out);
  char *t = malloc (strlen (z) + strlen (line) + 1);
  sprintf (t, "%s%s", z, line);
  expect_refused ("stash on the loss's output", t, TT_PRECISION_BF16, loss_out);
  free (t);

  /* a stash overlapping its second instance (both live at the trigger) */
  const tt_remat *G = NULL;
  for (uint32_t g = 0; g < a->n_remat && !G; g++)
    if (a->remat[g].mode == TT_REMAT_STASH)
      G = &a->remat[g];
  CHECK (G != NULL, "no stashed group");
  if (G) {
    const char *stash = a->tensors[G->stash[0]].name;
    const char *wide = a->tensors[G->twins[0]].name;
    char *so = value_of (z, stash), *wo = value_of (z, wide);
    CHECK (so && wo, "no offsets of %s and %s", stash, wide);
    if (so && wo) {
      char from[600], to[600];
      snprintf (from, sizeof from, "\n%s = %s ", stash, so);
      snprintf (to, sizeof to, "\n%s = %s ", stash, wo);
      t = replace (z, from, to);
      expect_refused ("an overlapping stash", t, TT_PRECISION_BF16, stash);
      free (t);
    }
    free (so);
    free (wo);
  }

  /* [Plan] activations not a format */
  t = replace (z, "\nactivations = bf16\n", "\nactivations = fp8\n");
  expect_refused ("activations = fp8", t, TT_PRECISION_BF16,
      "[Plan] activations");
  free (t);
  /* the key gone: an fp32 plan, whose stashes are refused at fp32 */
  t = replace (z, "\nactivations = bf16\n", "\n");
  expect_refused ("a stash in an fp32 plan", t, TT_PRECISION_FP32,
      "activations are fp32");
  free (t);

  /* the validator: 101 values need 202 bytes */
  char why[256] = "";
  CHECK (tt_plan_validate_stash (101, 200, "x:stashed", why, sizeof why) ==
      -1 && strstr (why, "x:stashed"), "a stash too small passed: %s", why);
  CHECK (tt_plan_validate_stash (101, 204, "x:stashed", why, sizeof why) == 0,
      "a stash large enough refused: %s", why);
  free (z);
  tt_model_free (a);
}

/* under a memory limit: the search starts from the stashes; the pool
 * fits and training stays near the unlimited stash's */
static tt_model *
open_limited (const char *path, uint64_t limit, tt_error * err)
{
  tt_model *b = tt_model_load_ini (path, err);
  tt_status st = b ? TT_OK : TT_ERR_INVALID;
  if (b && ((st = tt_model_set_batch_size (b, 8, err)) ||
          (st = tt_model_set_threads (b, 1, err)) ||
          (st = tt_model_set_precision (b, "bf16", err)) ||
          (st = tt_model_set_memory_limit (b, limit, err)) ||
          (st = tt_model_compile (b, err)))) {
    tt_model_free (b);
    return NULL;
  }
  return b;
}

static void
test_limit (void)
{
  char path[2048];
  tt_error err;
  model_path (path, sizeof path, "resnet_bn.ini");
  tt_model *a = open_at (path, NULL, 8, TT_PRECISION_BF16, 1, true, &err);
  CHECK (a != NULL, "%s", a ? "" : err.message);
  if (!a)
    return;
  tt_plan_info pa;
  tt_model_plan_info (a, &pa);
  /* the smallest feasible limit, as the refusal of 4096 bytes names it */
  tt_model *b = open_limited (path, 4096, &err);
  CHECK (b == NULL, "4096 bytes met");
  tt_model_free (b);
  const char *p = strstr (err.message, "smallest feasible limit is ");
  CHECK (p != NULL, "no smallest feasible limit in: %s", err.message);
  const uint64_t smallest = p ? strtoull (p + strlen ("smallest feasible "
          "limit is "), NULL, 10) : 0;
  CHECK (smallest < pa.pool_bytes, "the smallest feasible limit %" PRIu64
      " is the stashed pool's %" PRIu64, smallest, pa.pool_bytes);
  const uint64_t limit = smallest + (pa.pool_bytes - smallest) / 4;
  b = open_limited (path, limit, &err);
  CHECK (b != NULL, "limit %" PRIu64 ": %s", limit, b ? "" : err.message);
  if (b) {
    tt_plan_info pb;
    tt_model_plan_info (b, &pb);
    /* what the search did beyond the stashes */
    uint32_t other = 0;
    const char *how;
    for (uint32_t i = 0; tt_model_plan_dropped (b, i, &how); i++)
      other += strcmp (how, "stash") != 0;
    printf ("resnet_bn bf16 batch 8: pool %" PRIu64 ", under a limit of %"
        PRIu64 " (smallest feasible %" PRIu64 "): %" PRIu64 " (stashed %u, "
        "recomputed %u, other decisions %u)\n", pa.pool_bytes, limit,
        smallest, pb.pool_bytes, pb.stashed, pb.recomputed, other);
    CHECK (pb.pool_bytes <= limit && other > 0 && pb.stashed > 0,
        "pool %" PRIu64 " limit %" PRIu64 " other decisions %u stashed %u",
        pb.pool_bytes, limit, other, pb.stashed);
    enum
    { STEPS = 3 };
    double la[STEPS], lb[STEPS];
    train_losses (a, STEPS, la);
    train_losses (b, STEPS, lb);
    /* a recomputed group is fp32 again: near, not the same */
    for (int s = 0; s < STEPS; s++)
      CHECK (isfinite (lb[s]) && fabs (lb[s] - la[s]) <= 1e-3 * fabs (la[s]),
          "step %d: %.9g under the limit, %.9g without", s, lb[s], la[s]);
  }
  tt_model_free (a);
  tt_model_free (b);
}


/* The widening of a half-width swap, in place in the second instance,
 * against tt_bf16_to_f32 / tt_f16_to_f32 out of place: sizes around the
 * parts' boundaries, and a large one split over two threads. */
static void
test_widen_in_place (void)
{
  static const tt_precision half[2] = { TT_PRECISION_BF16,
    TT_PRECISION_FP16
  };
  for (int h = 0; h < 2; h++) {
    tt_error err;
    tt_model *m = tt_model_load_ini_text (exact_model, strlen (exact_model),
        "exact.ini", &err);
    if (m && (tt_model_set_threads (m, 2, &err) ||
            tt_model_set_precision (m, tt_precision_name (half[h]), &err) ||
            tt_model_compile (m, &err))) {
      tt_model_free (m);
      m = NULL;
    }
    CHECK (m != NULL, "%s", m ? "" : err.message);
    if (!m)
      continue;
    setenv ("TT_THREADS_STEPS", "split", 1);
    static const size_t large[] = { 131072, 200003 };
    uint32_t bad = 0, sizes = 0;
    for (size_t i = 0; i < 260 + 2; i++) {
      const size_t n = i < 260 ? i : large[i - 260];
      float *x = malloc ((n + 1) * sizeof *x), *want = malloc ((n + 1) *
          sizeof *want);
      uint16_t *y = malloc ((n + 1) * sizeof *y);
      for (size_t j = 0; j < n; j++)
        x[j] = (float) ((j * 7919) % 1009) / 7.0f - 60.0f;
      tt_stash_narrow (m, x, y, n);
      if (h)
        tt_f16_to_f32 (y, want, n);
      else
        tt_bf16_to_f32 (y, want, n);
      memset (x, 0xff, n * sizeof *x);
      memcpy (x, y, n * sizeof *y);
      tt_stash_widen_in_place (m, x, n);
      bad += memcmp (x, want, n * sizeof *x) != 0;
      sizes++;
      free (x);
      free (want);
      free (y);
    }
    unsetenv ("TT_THREADS_STEPS");
    CHECK (bad == 0, "%s: widened in place otherwise in %u of %u sizes",
        tt_precision_name (half[h]), bad, sizes);
    printf ("%s: widened in place as out of place in %u sizes\n",
        tt_precision_name (half[h]), sizes);
    tt_model_free (m);
  }
}

/* Every group the stash takes is a dropout's output (not recomputable:
 * the dropout writes it) through tanh, in place, so that under the
 * smallest feasible limit they are swapped; tanh's backward reads its
 * output element by element, so that a swap at fp32 would give other
 * derivatives than the stash's rounded values (the dense layers' GEMMs
 * round their inputs anyway, so they alone would not tell). fc1's
 * output, 81,920 elements, is narrowed in two parts through its staging
 * (TT_SWAP_STAGING_ELEMS). */
static const char swap_model[] =
    "[Model]\nbatch_size = 128\nloss = mse\nmemory_swap = true\n"
    "memory_swap_path = %s\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
    "[input]\ntype = input\ninput_shape = 1:1:16\n"
    "[fc1]\ntype = fully_connected\nunit = 640\n"
    "[drop1]\ntype = dropout\ndropout_rate = 0.25\n"
    "[act1]\ntype = activation\nactivation = tanh\n"
    "[fc2]\ntype = fully_connected\nunit = 64\n"
    "[drop2]\ntype = dropout\ndropout_rate = 0.25\n"
    "[act2]\ntype = activation\nactivation = tanh\n"
    "[fc3]\ntype = fully_connected\nunit = 64\n"
    "[drop3]\ntype = dropout\ndropout_rate = 0.25\n"
    "[act3]\ntype = activation\nactivation = tanh\n"
    "[fc4]\ntype = fully_connected\nunit = 64\n"
    "[drop4]\ntype = dropout\ndropout_rate = 0.25\n"
    "[act4]\ntype = activation\nactivation = tanh\n"
    "[fc5]\ntype = fully_connected\nunit = 10\n"
    "[drop5]\ntype = dropout\ndropout_rate = 0.1\n";

static tt_model *
open_swap (const char *text, tt_precision act, uint64_t limit, tt_error * err)
{
  tt_model *m = tt_model_load_ini_text (text, strlen (text), "swap.ini",
      err);
  if (m && (tt_model_set_threads (m, 1, err) ||
          tt_model_set_precision (m, tt_precision_name (act), err) ||
          tt_model_set_memory_limit (m, limit, err) ||
          tt_model_compile (m, err))) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

/* the stored plan of b: reloaded, it swaps the same file and trains as
 * the model stashed; without its staging tensors (as a plan made when
 * the file held fp32) it is refused naming one */
static void
swap_stored (const char *name, const char *model, tt_model * b, uint64_t limit)
{
  tt_error err;
  tt_model *a = open_swap (model, b->activation_type, 0, &err);
  CHECK (a != NULL, "%s: %s", name, a ? "" : err.message);
  char *text;
  size_t len;
  CHECK (tt_plan_ini_text (b, &text, &len, &err) == TT_OK, "%s", err.message);
  char *z = malloc (len + 1);
  memcpy (z, text, len);
  z[len] = '\0';
  free (text);
  tt_model *c = open_swap (z, b->activation_type, limit, &err);
  CHECK (c != NULL, "%s stored: %s", name, c ? "" : err.message);
  if (c) {
    tt_plan_info pb, pc;
    tt_model_plan_info (b, &pb);
    tt_model_plan_info (c, &pc);
    CHECK (pc.from_stored_plan && pc.swapped == pb.swapped &&
        pc.swapped_bytes == pb.swapped_bytes && pc.pool_bytes ==
        pb.pool_bytes, "%s stored: from the plan %d, swapped %u (%" PRIu64
        " bytes) against %u (%" PRIu64 ")", name, pc.from_stored_plan,
        pc.swapped, pc.swapped_bytes, pb.swapped, pb.swapped_bytes);
    tt_test_train_steps (c, "stored", 3, 255.0f);
    if (a)
      tt_test_train_steps (a, "stash", 3, 255.0f);
    CHECK (a && tt_test_same_state (a, c, name), "%s stored: trains "
        "otherwise than the stash", name);
  }
  tt_model_free (a);
  tt_model_free (c);
  /* every ":staging = ..." line taken out */
  char *t = z;
  for (char *at; (at = strstr (t, ":staging = "));) {
    char *bol = at;
    while (bol > z && bol[-1] != '\n')
      bol--;
    char *eol = strchr (at, '\n');
    memmove (bol, eol + 1, strlen (eol + 1) + 1);
    t = bol;
  }
  CHECK (t != z, "%s: no staging tensor in the stored plan", name);
  c = open_swap (z, b->activation_type, limit, &err);
  CHECK (c == NULL, "%s: a plan without staging tensors loaded", name);
  if (!c) {
    CHECK (strstr (err.message, ":staging: missing tensor") &&
        strstr (err.message, "re-plan"), "%s: %s", name, err.message);
    printf ("%s without staging: refused: %s\n", name, err.message);
  }
  tt_model_free (c);
  free (z);
}

static void
test_swap (void)
{
  static const tt_precision half[2] = { TT_PRECISION_BF16,
    TT_PRECISION_FP16
  };
  char dir[512];
  snprintf (dir, sizeof dir, "%s", tt_test_write_text ("swap", ""));
  *strrchr (dir, '/') = '\0';
  char text[2048];
  snprintf (text, sizeof text, swap_model, dir);
  /* the stash the swap stands for: every group stashed without a limit */
  tt_remat_keep_every_stash (true);
  for (int h = 0; h < 2; h++) {
    const char *name = tt_precision_name (half[h]);
    tt_error err;
    tt_model *a = open_swap (text, half[h], 0, &err);
    CHECK (a != NULL, "%s: %s", name, a ? "" : err.message);
    tt_model *b = open_swap (text, half[h], 4096, &err);
    CHECK (b == NULL, "%s: 4096 bytes met", name);
    const char *p = b ? NULL : strstr (err.message, "smallest feasible "
        "limit is ");
    const uint64_t limit = p ? strtoull (p + strlen ("smallest feasible "
            "limit is "), NULL, 10) : 0;
    tt_model_free (b);
    b = limit ? open_swap (text, half[h], limit, &err) : NULL;
    CHECK (b != NULL, "%s: limit %" PRIu64 ": %s", name, limit, b ? "" :
        err.message);
    if (!a || !b) {
      tt_model_free (a);
      tt_model_free (b);
      continue;
    }
    tt_plan_info pa, pb;
    tt_model_plan_info (a, &pa);
    tt_model_plan_info (b, &pb);
    /* the file's layout: each swapped root at 2 bytes an element, the
     * dropouts' masks at 4 */
    uint64_t roots = 0, rest = 0, staged = 0;
    for (uint32_t g = 0; g < b->n_remat; g++) {
      const tt_remat *G = &b->remat[g];
      if (G->mode != TT_REMAT_SWAP)
        continue;
      staged += G->staging >= 0;
      for (uint32_t k = 0; k < G->n_tensors; k++)
        if (G->twins[k] >= 0)
          *(k ? &rest : &roots) += b->tensors[G->tensors[k]].count;
    }
    /* each group stashed or swapped, both rounding once: the same
     * values in backward */
    CHECK (pa.stashed > 0 && pb.swapped > 0 && pb.recomputed == 0 &&
        pb.stashed + pb.swapped == pa.stashed && staged == pb.swapped,
        "%s: stashed %u "
        "without a limit; under %" PRIu64 ": stashed %u recomputed %u "
        "swapped %u (%" PRIu64 " staged)", name, pa.stashed, limit,
        pb.stashed, pb.recomputed, pb.swapped, staged);
    const int fc1_layer = tt_model_find_layer (b, "fc1");
    const int fc1 = tt_remat_find (b, b->layers[fc1_layer].out[0]);
    CHECK (fc1 >= 0 && b->remat[fc1].mode == TT_REMAT_SWAP &&
        b->tensors[b->remat[fc1].root].count > TT_SWAP_STAGING_ELEMS,
        "%s: fc1's output not swapped in parts", name);
    CHECK (pb.swapped_bytes == 2 * roots + 4 * rest, "%s: swapped_bytes %"
        PRIu64 ", the roots' %" PRIu64 " elements at 2 bytes and the rest's %"
        PRIu64 " at 4 make %" PRIu64, name, pb.swapped_bytes, roots, rest,
        2 * roots + 4 * rest);
    enum
    { STEPS = 4 };
    double la[STEPS], lb[STEPS];
    train_losses (a, STEPS, la);
    train_losses (b, STEPS, lb);
    bool same = true;
    for (int s = 0; s < STEPS; s++)
      same &= la[s] == lb[s];
    CHECK (same, "%s: losses under the limit (swapped) differ from the "
        "stash's: %.9g against %.9g at the last step", name, lb[STEPS - 1],
        la[STEPS - 1]);
    tt_test_train_steps (a, "stash", 2, 3.0f);
    tt_test_train_steps (b, "swap", 2, 3.0f);
    CHECK (tt_test_same_state (a, b, name), "%s: swapped trains otherwise "
        "than stashed", name);
    struct stat st;
    CHECK (fstat (b->swap_fd, &st) == 0 && (uint64_t) st.st_size ==
        pb.swapped_bytes, "%s: the swap file has %lld bytes, the plan %"
        PRIu64, name, (long long) st.st_size, pb.swapped_bytes);
    printf ("%s: limit %" PRIu64 " (pool %" PRIu64 " stashed): swapped %u, "
        "file %lld bytes (fp32: %" PRIu64 "; roots %" PRIu64 " of %" PRIu64
        "), losses as stashed: %.9g ... %.9g\n", name, limit, pa.pool_bytes,
        pb.swapped, (long long) st.st_size, 4 * (roots + rest), 2 * roots,
        4 * roots, lb[0], lb[STEPS - 1]);
    const char *how;
    for (uint32_t i = 0; tt_model_plan_dropped (b, i, &how); i++)
      printf ("  %-8s %s\n", how, tt_model_plan_dropped (b, i, NULL));
    swap_stored (name, text, b, limit);
    tt_model_free (a);
    tt_model_free (b);
  }
  tt_remat_keep_every_stash (false);
}

/* A model input that backward reads is stashed like an activation (the
 * CNN's, read by its first convolution's weight gradient), unless its
 * stash would raise the pool: an MLP narrows its input right after its
 * first layer's forward, where its weights and Adam's state already make
 * the busiest step, and keeps it fp32 (remat_unstash_peaks), so its bf16
 * pool is no larger than its fp32 one. */
static void
test_input_stash (void)
{
  char path[2048];
  tt_error err;
  model_path (path, sizeof path, "fmnist_cnn.ini");
  tt_model *cnn = open_at (path, NULL, 32, TT_PRECISION_BF16, 1, true, &err);
  CHECK (cnn != NULL, "fmnist_cnn: %s", cnn ? "" : err.message);
  if (cnn) {
    const tt_tensor *s = tt_test_find_tensor (cnn, "input:out:stashed");
    CHECK (s != NULL && s->count * 2 <= 32 * 784 + 1, "fmnist_cnn: its "
        "input stashed at half width");
    tt_model_free (cnn);
  }
  static const char mlp[] =
      "[Model]\nbatch_size = 64\nloss = cross\n"
      "[Optimizer]\ntype = adam\nlearning_rate = 0.001\n"
      "[input]\ntype = input\ninput_shape = 1:1:784\n"
      "[fc1]\ntype = fully_connected\nunit = 64\nactivation = tanh\n"
      "[fc2]\ntype = fully_connected\nunit = 64\nactivation = tanh\n"
      "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";
  tt_model *a = open_at ("mlp.ini", mlp, 0, TT_PRECISION_FP32, 1, true, &err);
  CHECK (a != NULL, "mlp fp32: %s", a ? "" : err.message);
  tt_model *b = open_at ("mlp.ini", mlp, 0, TT_PRECISION_BF16, 1, true, &err);
  CHECK (b != NULL, "mlp bf16: %s", b ? "" : err.message);
  if (a && b) {
    tt_plan_info pa, pb;
    tt_model_plan_info (a, &pa);
    tt_model_plan_info (b, &pb);
    CHECK (tt_test_find_tensor (b, "input:out:stashed") == NULL
        && pb.stashed > 0
        && pb.pool_bytes <= pa.pool_bytes,
        "mlp: input stashed %d, %u " "stashes, pool %" PRIu64
        " at bf16 against %" PRIu64 " at fp32", tt_test_find_tensor (b,
            "input:out:stashed") != NULL, pb.stashed, pb.pool_bytes,
        pa.pool_bytes);
    printf ("mlp: pool %" PRIu64 " fp32, %" PRIu64 " bf16 (%u stashed, "
        "the input kept fp32)\n", pa.pool_bytes, pb.pool_bytes, pb.stashed);
  }
  tt_model_free (a);
  tt_model_free (b);
}

int
main (int argc, char **argv)
{
  snprintf (root, sizeof root, "%s", argc > 1 ? argv[1] : ".");
  TT_TEST_RUN (test_pools);
  TT_TEST_RUN (test_input_stash);
  TT_TEST_RUN (test_losses);
  TT_TEST_RUN (test_exact);
  TT_TEST_RUN (test_attention_scratch);
  TT_TEST_RUN (test_attention_probs);
  TT_TEST_RUN (test_stored);
  TT_TEST_RUN (test_limit);
  TT_TEST_RUN (test_widen_in_place);
  TT_TEST_RUN (test_swap);
  return tt_test_summary ();
}
