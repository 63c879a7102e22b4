/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Training under a memory limit (issue 18, item 3; plan/remat.c): a plan
 * over the limit drops activations and rebuilds them during backward.
 * Checked here, for CNNs with batch normalization (resnet_bn, inception,
 * fmnist_cnn) and one with dropout, at small batches:
 * - the pool fits the limit and something was dropped;
 * - training is bit-identical to the unlimited plan's (same build, same
 *   thread count, same kernels on the same shapes): weights, moving
 *   statistics and optimizer state after a few steps compared with memcmp;
 * - the stored plan (optimized INI) loads, is validated and trains the
 *   same; tampered decisions are refused naming [Plan.Memory] or the
 *   tensor; an infeasible limit is refused naming the smallest feasible,
 *   which then compiles; a limit the plan already fits changes nothing.
 *
 * Usage: test_memory_limit SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_test.h"
#include "train_steps.h"

#include <fcntl.h>
#include <inttypes.h>

static char root[1024];
static unsigned threads;        /* the models' own threads (0: default) */

/* three blocks of conv, batch norm, relu and dropout in place on the
 * relu, pooling, dropout, fc: at its smallest limit it swaps a dropout's
 * output, which cannot be recomputed (with two blocks, since no
 * convolution keeps its columns, recomputing alone reaches it) */
static const char dropout_cnn[] =
    "[Model]\nbatch_size = 4\nloss = cross\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.001\n"
    "[input]\ntype = input\ninput_shape = 1:12:12\n"
    "[conv1]\ntype = conv2d\nfilters = 6\nkernel_size = 3,3\npadding = same\n"
    "[bn1]\ntype = batch_normalization\nactivation = relu\n"
    "[drop1]\ntype = dropout\ndropout_rate = 0.3\n"
    "[conv2]\ntype = conv2d\nfilters = 8\nkernel_size = 3,3\npadding = same\n"
    "[bn2]\ntype = batch_normalization\nactivation = relu\n"
    "[drop3]\ntype = dropout\ndropout_rate = 0.3\n"
    "[conv3]\ntype = conv2d\nfilters = 8\nkernel_size = 3,3\npadding = same\n"
    "[bn3]\ntype = batch_normalization\nactivation = relu\n"
    "[drop4]\ntype = dropout\ndropout_rate = 0.3\n"
    "[pool]\ntype = pooling2d\npooling = max\npool_size = 2,2\nstride = 2,2\n"
    "[drop2]\ntype = dropout\ndropout_rate = 0.2\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

/* tensor-manipulation layers: permute, slice, a weight layer and
 * matmul, split into two parts multiplied together, cast */
static const char tensorops_chain[] =
    "[Model]\nbatch_size = 8\nloss = cross\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.001\n"
    "[input]\ntype = input\ninput_shape = 4:12:12\n"
    "[conv]\ntype = conv2d\nfilters = 8\nkernel_size = 3,3\npadding = same\n"
    "activation = tanh\n"
    "[perm]\ntype = permute\ndirection = 1,3,2\n"
    "[sl]\ntype = slice\naxis = 3\nstart_index = 2\nend_index = 12\n"
    "[w]\ntype = weight\ndim = 8:10:12\ninput_layers = input\n"
    "[mm]\ntype = matmul\ninput_layers = sl, w\n"
    "[parts]\ntype = split\naxis = 1\nsplit_number = 2\n"
    "[mm2]\ntype = matmul\ninput_layers = parts(0), parts(1)\n"
    "[same]\ntype = cast\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

static tt_model *
open_model (const char *path, const char *text, uint32_t batch,
    uint64_t limit, tt_error * err)
{
  tt_model *m = text ? tt_model_load_ini_text (text, strlen (text), path,
      err) : tt_model_load_ini (path, err);
  if (!m)
    return NULL;
  if ((batch && tt_model_set_batch_size (m, batch, err)) ||
      tt_model_set_threads (m, threads, err) ||
      tt_model_set_memory_limit (m, limit, err) || tt_model_compile (m, err)) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static void
train_steps (tt_model * m, const char *name, int steps)
{
  tt_test_train_steps (m, name, steps, 255.0f);
}

/* The smallest feasible limit named by an infeasible one's message. */
static uint64_t
smallest_feasible (const char *path, const char *text, uint32_t batch)
{
  tt_error err;
  tt_model *m = open_model (path, text, batch, 4096, &err);
  CHECK (m == NULL, "%s: a 4096-byte limit was met", path);
  tt_model_free (m);
  const char *p = strstr (err.message, "smallest feasible limit is ");
  CHECK (p != NULL, "%s: the refusal does not name the smallest feasible "
      "limit: %s", path, err.message);
  return p ? strtoull (p + strlen ("smallest feasible limit is "), NULL,
      10) : 0;
}

/* Unlimited against limited (a fraction of the unlimited pool, or the
 * smallest feasible when that is higher), then the stored plan. */
static void
compare (const char *name, const char *path, const char *text,
    uint32_t batch, double fraction, bool expect_swap)
{
  tt_error err;
  tt_model *a = open_model (path, text, batch, 0, &err);
  CHECK (a != NULL, "%s: %s", name, a ? "" : err.message);
  if (!a)
    return;
  tt_plan_info pa, pb;
  tt_model_plan_info (a, &pa);
  const uint64_t smallest = smallest_feasible (path, text, batch);
  /* on two threads the pool without a limit is laid out by halves
   * (plan_halves.h), one under a limit for any count: the limits and the
   * unlimited pool are that layout's */
  const uint64_t unlimited = pa.one_thread_pool_bytes;
  CHECK (unlimited && unlimited <= pa.pool_bytes, "%s: pool %" PRIu64
      ", for any count %" PRIu64, name, pa.pool_bytes, unlimited);
  uint64_t limit = (uint64_t) ((double) unlimited * fraction);
  if (limit < smallest)
    limit = smallest;
  tt_model *b = open_model (path, text, batch, limit, &err);
  CHECK (b != NULL, "%s: limit %" PRIu64 " (smallest feasible %" PRIu64
      "): %s", name, limit, smallest, b ? "" : err.message);
  if (!b) {
    tt_model_free (a);
    return;
  }
  tt_model_plan_info (b, &pb);
  printf ("%-16s batch %2u  pool %10" PRIu64 " -> %10" PRIu64 " (limit %10"
      PRIu64 ", smallest %10" PRIu64 ")  recomputed %u swapped %u\n", name,
      tt_model_batch_size (b), pa.pool_bytes, pb.pool_bytes, limit, smallest,
      pb.recomputed, pb.swapped);
  CHECK (pb.pool_bytes <= limit, "%s: pool %" PRIu64 " over the limit %"
      PRIu64, name, pb.pool_bytes, limit);
  /* fmnist_cnn at batch 32 peaks in pool1's backward on derivatives,
   * which nothing rebuilds: its smallest feasible pool is its own */
  if (smallest < unlimited)
    CHECK (pb.recomputed + pb.swapped > 0, "%s: nothing dropped", name);
  else
    printf ("%s: nothing to drop at batch %u: the peak is not made of "
        "activations\n", name, tt_model_batch_size (b));
  CHECK (pb.unlimited_pool_bytes == unlimited, "%s: unlimited pool %"
      PRIu64 ", planned without a limit %" PRIu64, name,
      pb.unlimited_pool_bytes, unlimited);
  CHECK (pb.memory_limit == limit, "%s: limit %" PRIu64, name, pb.memory_limit);
  if (expect_swap)
    CHECK (pb.swapped > 0 && b->swap_fd >= 0, "%s: nothing swapped", name);

  /* the stored plan, loaded without a limit: validated, the same */
  char *opt = NULL;
  size_t len = 0;
  CHECK (tt_plan_ini_text (b, &opt, &len, &err) == TT_OK, "%s: %s", name,
      err.message);
  char *z = malloc (len + 1);
  memcpy (z, opt, len);
  z[len] = '\0';
  tt_model *c = open_model (path, z, 0, 0, &err);
  CHECK (c != NULL, "%s: stored plan: %s", name, c ? "" : err.message);
  if (c) {
    tt_plan_info pc;
    tt_model_plan_info (c, &pc);
    CHECK (pc.from_stored_plan && pc.pool_bytes == pb.pool_bytes &&
        pc.recomputed == pb.recomputed && pc.swapped == pb.swapped,
        "%s: stored plan: pool %" PRIu64 " recomputed %u", name,
        pc.pool_bytes, pc.recomputed);
  }

  train_steps (a, name, 3);
  train_steps (b, name, 3);
  CHECK (tt_test_same_state (a, b, name),
      "%s: training under the limit differs from training without it", name);
  if (c) {
    train_steps (c, name, 3);
    CHECK (tt_test_same_state (a, c, name), "%s: the stored plan trains "
        "differently", name);
    /* evaluation after training runs on the first instances */
    tt_batch_result ra, rc;
    const void *in[1];
    tt_shape s;
    tt_model_input_shape (a, 0, &s);
    float *x = calloc ((size_t) tt_model_batch_size (a) * s.channel *
        s.height * s.width, sizeof *x);
    in[0] = x;
    tt_model_eval_batch (a, 1, in, NULL, NULL, &ra, &err);
    tt_model_eval_batch (c, 1, in, NULL, NULL, &rc, &err);
    tt_shape o = tt_model_output_shape (a);
    CHECK (!memcmp (tt_model_output (a), tt_model_output (c), (size_t)
            o.channel * o.height * o.width * sizeof (float)),
        "%s: evaluation differs", name);
    free (x);
  }
  free (z);
  free (opt);
  tt_model_free (a);
  tt_model_free (b);
  tt_model_free (c);
}

/* attention: multi_head_attention with dropout on its attention weights
 * (the mask kept, not redrawn, when the layer runs again), and wide
 * dense layers after it, whose activations make the peak */
static const char mha_dropout[] =
    "[Model]\nbatch_size = 8\nloss = cross\n"
    "[Optimizer]\ntype = adam\nlearning_rate = 0.001\n"
    "[input]\ntype = input\ninput_shape = 1:8:6\n"
    "[embed]\ntype = fully_connected\nunit = 16\n"
    "[attn]\ntype = multi_head_attention\nnum_heads = 4\n"
    "dropout_rate = 0.2\ninput_layers = embed, embed, embed\n"
    "[act]\ntype = activation\nactivation = tanh\n"
    "[causal]\ntype = attention\ninput_layers = act, embed\n"
    "causal_mask = true\n"
    "[wide1]\ntype = fully_connected\nunit = 128\nactivation = tanh\n"
    "[wide2]\ntype = fully_connected\nunit = 128\nactivation = tanh\n"
    "[wide3]\ntype = fully_connected\nunit = 16\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 10\nactivation = softmax\n";

static void
test_attention (void)
{
  char path[2048];
  snprintf (path, sizeof path, "%s/tests/models/mha_self.ini", root);
  compare ("mha_self", path, NULL, 16, 0.5, false);
  snprintf (path, sizeof path, "%s/tests/models/transformer_encoder.ini", root);
  compare ("transformer_encoder", path, NULL, 16, 0.6, false);
  compare ("mha_dropout", "mha_dropout.ini", mha_dropout, 0, 0.6, false);
}

static void
test_bit_identical (void)
{
  /* fmnist_cnn's dense weights make its pool at small batches */
  static const char *const models[] = { "resnet_bn.ini", "inception.ini",
    "fmnist_cnn.ini", "branchy_bn.ini", "sensor_conv1d.ini",
    "sensor_lstm.ini", "sensor_gru.ini",
    /* the rest of nntrainer's set: clip and kld, centroid_knn */
    "clip_kld.ini", "centroid_knn.ini",
    /* transposed convolution and the preprocessing layers */
    "conv_transpose.ini", "preprocess.ini",
    /* the recurrent family */
    "sensor_rnn.ini", "sensor_bilstm.ini", "cells.ini",
    /* dropout in recurrent layers: a rebuilt step draws its masks again */
    "sensor_recurrent_dropout.ini",
    /* the recurrent family's last cells: grucell, zoneout_lstmcell (its
     * masks drawn again in a rebuilt step) */
    "cells2.ini", "cells2_zoneout.ini",
    /* attention weights, grouped transposed convolution, mol_attention */
    "mha_weights.ini", "conv_transpose_groups.ini", "mol_attention.ini", NULL
  };
  static const uint32_t batches[] = { 4, 4, 32, 8, 16, 16, 16, 64, 64,
    /* transposed convolution and the preprocessing layers */
    8, 8,
    /* the recurrent family */
    8, 8, 8,
    /* dropout in recurrent layers */
    16,
    /* the recurrent family's last cells */
    8, 16,
    /* attention weights, grouped transposed convolution, mol_attention */
    8, 8, 8
  };
  for (int i = 0; models[i]; i++) {
    char path[2048];
    snprintf (path, sizeof path, "%s/tests/models/%s", root, models[i]);
    compare (models[i], path, NULL, batches[i], 0.75, false);
    compare (models[i], path, NULL, batches[i], 0.5, false);
  }
  /* the kernels split over two threads (every step), both plans alike */
  setenv ("TT_THREADS_STEPS", "split", 1);
  threads = 2;
  char path[2048];
  snprintf (path, sizeof path, "%s/tests/models/resnet_bn.ini", root);
  compare ("resnet_bn 2 threads", path, NULL, 8, 0.6, false);
  snprintf (path, sizeof path, "%s/tests/models/inception.ini", root);
  compare ("inception 2 threads", path, NULL, 8, 0.6, false);
  threads = 0;
  compare ("dropout_cnn", "dropout_cnn.ini", dropout_cnn, 0, 0.7, false);
  compare ("dropout_cnn", "dropout_cnn.ini", dropout_cnn, 0, 0.3, false);
  /* tensor-manipulation layers */
  compare ("tensorops_chain", "tensorops_chain.ini", tensorops_chain, 0, 0.7,
      false);
  compare ("tensorops_chain", "tensorops_chain.ini", tensorops_chain, 0, 0.4,
      false);
}

/* text with [Model] memory_swap = true and memory_swap_path = dir */
static char *
with_swap (const char *text, const char *dir)
{
  const char *at = strstr (text, "[Model]\n");
  if (!at)
    return NULL;
  at += strlen ("[Model]\n");
  char *out = malloc (strlen (text) + strlen (dir) + 100);
  sprintf (out, "%.*smemory_swap = true\nmemory_swap_path = %s\n%s",
      (int) (at - text), text, dir, at);
  return out;
}

static char swap_dir[512];

/* Swap: below what recomputation reaches, bit-identical too. */
static void
test_swap (void)
{
  char path[2048];
  snprintf (path, sizeof path, "%s/tests/models/resnet_bn.ini", root);
  char *resnet = tt_test_read_file (path, NULL);
  snprintf (swap_dir, sizeof swap_dir, "%s", tt_test_write_text ("x", ""));
  *strrchr (swap_dir, '/') = '\0';
  char *text = resnet ? with_swap (resnet, swap_dir) : NULL;
  char *drop = with_swap (dropout_cnn, swap_dir);
  CHECK (text && drop, "no [Model] in the models");
  if (text && drop) {
    compare ("resnet_bn swap", "resnet_swap.ini", text, 4, 0.0, true);
    compare ("dropout_cnn swap", "dropout_swap.ini", drop, 0, 0.0, true);
  }
  free (resnet);
  free (text);
  free (drop);
}

/* I/O errors: clear, and never a half-applied step taken for a whole */
static void
test_swap_errors (void)
{
  char *text = with_swap (dropout_cnn, "/nonexistent/swap/dir");
  tt_error err;
  const uint64_t smallest = smallest_feasible ("dropout_swap.ini", text, 0);
  tt_model *m = open_model ("dropout_swap.ini", text, 0, smallest, &err);
  CHECK (m == NULL && strstr (err.message, "/nonexistent/swap/dir") &&
      strstr (err.message, "memory_swap_path"), "an unusable swap folder: "
      "%s", m ? "accepted" : err.message);
  tt_model_free (m);
  free (text);

  text = with_swap (dropout_cnn, swap_dir);
  m = open_model ("dropout_swap.ini", text, 0, smallest, &err);
  CHECK (m != NULL && m->plan.swapped > 0, "%s", m ? "nothing swapped" :
      err.message);
  if (m) {
    /* writes fail: the step fails before any update (batch norm's moving
     * statistics aside, as for a loss that is not finite) */
    const tt_layer *out = &m->layers[tt_model_find_layer (m, "out")];
    const tt_tensor *w = &m->tensors[out->weights[0].value];
    const size_t nw = w->count;
    float *before = malloc (nw * sizeof *before);
    float *after = malloc (nw * sizeof *after);
    memcpy (before, w->data, nw * sizeof *before);
    const int fd = m->swap_fd;
    m->swap_fd = open ("/dev/null", O_RDONLY);
    tt_shape s;
    tt_model_input_shape (m, 0, &s);
    const uint32_t batch = tt_model_batch_size (m);
    float *x = calloc ((size_t) batch * s.channel * s.height * s.width,
        sizeof *x);
    float *t = calloc ((size_t) batch * 10, sizeof *t);
    const void *in[1] = { x };
    tt_batch_result r;
    CHECK (tt_model_train_batch (m, batch, in, NULL, t, &r, &err) ==
        TT_ERR_IO && strstr (err.message, "writing") &&
        strstr (err.message, "not applied"), "a failed write: %s", err.message);
    memcpy (after, w->data, nw * sizeof *after);
    CHECK (!memcmp (before, after, nw * sizeof *after), "a failed write "
        "changed the weights");
    close (m->swap_fd);
    /* reads fail: the model refuses to go on or be saved */
    char tmp[600];
    snprintf (tmp, sizeof tmp, "%s/wo", swap_dir);
    m->swap_fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK (tt_model_train_batch (m, batch, in, NULL, t, &r, &err) ==
        TT_ERR_IO && strstr (err.message, "reading back"), "a failed read: "
        "%s", err.message);
    CHECK (tt_model_train_batch (m, batch, in, NULL, t, &r, &err) ==
        TT_ERR_STATE, "trained on after a failed read");
    snprintf (tmp, sizeof tmp, "%s/after.bin", swap_dir);
    CHECK (tt_model_save_bin (m, tmp, &err) != TT_OK && access (tmp, F_OK),
        "saved after a failed read");
    close (m->swap_fd);
    m->swap_fd = fd;
    snprintf (tmp, sizeof tmp, "%s/wo", swap_dir);
    unlink (tmp);
    free (x);
    free (t);
    free (before);
    free (after);
  }
  tt_model_free (m);
  free (text);
}

/* A limit the plan fits: the same plan as without one. */
static void
test_fitting_limit (void)
{
  char path[2048];
  snprintf (path, sizeof path, "%s/tests/models/resnet_bn.ini", root);
  tt_error err;
  tt_model *a = open_model (path, NULL, 4, 0, &err);
  CHECK (a != NULL, "%s", a ? "" : err.message);
  if (!a)
    return;
  tt_model *b = open_model (path, NULL, 4, a->pool_bytes, &err);
  CHECK (b != NULL, "%s", b ? "" : err.message);
  if (b) {
    bool same = a->n_tensors == b->n_tensors && a->pool_bytes ==
        b->pool_bytes && b->n_dropped == 0;
    for (uint32_t i = 0; same && i < a->n_tensors; i++)
      same = a->tensors[i].offset == b->tensors[i].offset;
    CHECK (same, "a limit equal to the pool changed the plan");
  }
  tt_model_free (a);
  tt_model_free (b);
}

/* text with the first occurrence of from replaced by to */
static char *
replace (const char *text, const char *from, const char *to)
{
  const char *at = strstr (text, from);
  if (!at)
    return NULL;
  size_t n = strlen (text) - strlen (from) + strlen (to);
  char *out = malloc (n + 1);
  size_t head = (size_t) (at - text);
  memcpy (out, text, head);
  strcpy (out + head, to);
  strcat (out, at + strlen (from));
  return out;
}

static void
expect_refused (const char *name, const char *text, const char *words)
{
  tt_error err;
  tt_model *m = text ? open_model ("tampered.ini", text, 0, 0, &err) : NULL;
  CHECK (text && m == NULL, "%s: a tampered plan loaded", name);
  if (text && !m)
    CHECK (strstr (err.message, words) != NULL, "%s: '%s' not in: %s", name,
        words, err.message);
  tt_model_free (m);
}

static void
test_tampered (void)
{
  tt_error err;
  tt_model *b = open_model ("dropout_cnn.ini", dropout_cnn, 0, 1, &err);
  CHECK (b == NULL, "a 1-byte limit was met");
  tt_model_free (b);
  const uint64_t smallest = smallest_feasible ("dropout_cnn.ini",
      dropout_cnn, 0);
  b = open_model ("dropout_cnn.ini", dropout_cnn, 0, smallest, &err);
  CHECK (b != NULL, "the smallest feasible limit %" PRIu64 ": %s", smallest,
      b ? "" : err.message);
  if (!b)
    return;
  CHECK (b->pool_bytes <= smallest, "pool %" PRIu64, b->pool_bytes);
  char *opt;
  size_t len;
  CHECK (tt_plan_ini_text (b, &opt, &len, &err) == TT_OK, "%s", err.message);
  char *z = malloc (len + 1);
  memcpy (z, opt, len);
  z[len] = '\0';
  const char *d = strstr (z, "[Plan.Memory]");
  CHECK (d != NULL, "no [Plan.Memory] in the stored plan");
  /* the first decision: "name = recompute" */
  char first[256] = "";
  if (d) {
    const char *line = strchr (d, '\n') + 1;
    while (*line == '#')
      line = strchr (line, '\n') + 1;
    sscanf (line, "%255s", first);
  }
  char from[300], to[300];
  snprintf (from, sizeof from, "%s = recompute", first);
  snprintf (to, sizeof to, "%s = swap", first);
  char *t = replace (z, from, to);
  expect_refused ("swap without memory_swap", t, "[Plan.Memory]");
  free (t);
  snprintf (to, sizeof to, "%s = maybe", first);
  t = replace (z, from, to);
  expect_refused ("unknown decision", t, "neither recompute nor swap");
  free (t);
  snprintf (to, sizeof to, "conv1:filter = recompute");
  t = replace (z, from, to);
  expect_refused ("a weight", t, "[Plan.Memory] conv1:filter");
  free (t);
  /* a decision left out: its second instance has no tensor any more */
  t = replace (z, from, "");
  expect_refused ("a decision removed", t, ":recomputed");
  free (t);
  /* dropout's output (drop1 runs in place on bn1's relu) */
  t = replace (z, from, "bn1:out = recompute");
  if (t && !strstr (z, "bn1:out = "))
    expect_refused ("dropout recomputed", t, "random");
  free (t);
  t = replace (z, "memory_limit = ", "memory_limit = 1 # ");
  expect_refused ("a limit the pool exceeds", t, "memory_limit");
  free (t);
  free (z);
  free (opt);
  tt_model_free (b);
}

/* rerun decisions (branchy_bn at batch 4, at its smallest feasible
 * limit, reruns a layer to rebuild the scratch its backward reads, a
 * batch normalization's statistics): tampered, refused */
static void
test_rerun_tampered (void)
{
  char path[2048];
  snprintf (path, sizeof path, "%s/tests/models/branchy_bn.ini", root);
  const uint64_t smallest = smallest_feasible (path, NULL, 4);
  tt_error err;
  tt_model *b = open_model (path, NULL, 4, smallest, &err);
  CHECK (b != NULL, "%s", b ? "" : err.message);
  if (!b)
    return;
  char *opt, *z;
  size_t len;
  CHECK (tt_plan_ini_text (b, &opt, &len, &err) == TT_OK, "%s", err.message);
  z = malloc (len + 1);
  memcpy (z, opt, len);
  z[len] = '\0';
  tt_model_free (b);
  free (opt);
  CHECK (strstr (z, ", rerun   #") != NULL, "branchy_bn: no rerun chosen "
      "at %" PRIu64 " bytes", smallest);
  if (!strstr (z, ", rerun   #")) {
    free (z);
    return;
  }
  char *t = replace (z, ", rerun   #", ", rerun twice   #");
  expect_refused ("rerun misspelt", t, "neither recompute nor swap");
  free (t);
  t = replace (z, "= keep, rerun", "= keep");
  if (t)
    expect_refused ("keep alone", t, "neither recompute nor swap");
  free (t);
  /* a rerun dropped: its instances have no tensor any more */
  t = replace (z, ", rerun   #", "   #");
  expect_refused ("rerun removed", t, "[Plan.");
  free (t);
  /* batch norm's scratch is read by its backward; the loss's is not */
  t = replace (z, "[Plan.Memory]\n", "[Plan.Memory]\noutput/loss:out = "
      "keep, rerun\n");
  expect_refused ("rerun of nothing", t, "[Plan.Memory] output");
  free (t);
  free (z);
}

int
main (int argc, char **argv)
{
  snprintf (root, sizeof root, "%s", argc > 1 ? argv[1] : ".");
  TT_TEST_RUN (test_bit_identical);
  TT_TEST_RUN (test_fitting_limit);
  TT_TEST_RUN (test_swap);
  TT_TEST_RUN (test_swap_errors);
  TT_TEST_RUN (test_tampered);
  TT_TEST_RUN (test_rerun_tampered);
  TT_TEST_RUN (test_attention);
  return tt_test_summary ();
}
