/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Element-wise work split over the engine's threads (core/split.c) gives
 * the serial result bit for bit, for 1 to 4 threads: every activation
 * forward and backward (softmax by whole rows), the optimizers' update
 * split by fixed ranges as model_update.c splits it, sizes on both sides
 * of the split threshold and ragged against the split quantum, and the
 * feeding of a batch (tt_feed) by ranges and by thread blocks, with its
 * refusal of non-finite inputs. Then training:
 * the MLP and the sensor LSTM and GRU (widened so that their kernels do
 * split), a model of large activations, addition, concat and dropout and
 * the three losses over wide outputs, on 2 to 4 threads, stay within a
 * tight tolerance of one thread, trained with SGD (plain_sgd): GEMMs
 * split by rows or columns may round differently with OpenBLAS, and a
 * fully connected layer split by its weight's rows adds its threads'
 * partial products.
 *
 * Usage: test_split SOURCE_ROOT
 */
#include "tt_internal.h"
#include "tt_split.h"
#include "tt_test.h"

#include <math.h>

static char root[1024];

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static float
rnd (void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (float) ((rng * 0x2545F4914F6CDD1Dull) >> 40) / (float) (1 << 23)
      - 1.0f;
}

static float *
rnd_array (size_t n, float scale)
{
  float *p = malloc (n * sizeof *p);
  if (!p)
    exit (2);
  for (size_t i = 0; i < n; i++)
    p[i] = scale * rnd ();
  return p;
}

static void
test_activations (void)
{
  /* below the threshold, just above it ragged, and well above */
  static const size_t shapes[][2] = { {10, 100}, {167, 99}, {700, 64} };
  for (int fn = TT_ACT_NONE; fn <= TT_ACT_LAST; fn++)
    for (size_t s = 0; s < 3; s++) {
      const size_t rows = shapes[s][0], width = shapes[s][1];
      const size_t n = rows * width;
      float *x = rnd_array (n, 4.0f), *dy = rnd_array (n, 1.0f);
      float *y1 = malloc (n * 4), *dx1 = malloc (n * 4);
      float *y = malloc (n * 4), *dx = malloc (n * 4);
      tt_activation_forward ((tt_activation) fn, rows, width, x, y1);
      tt_activation_backward ((tt_activation) fn, rows, width, x, y1, dy, dx1);
      for (unsigned t = 1; t <= 4; t++) {
        tt_threads *pool = NULL;
        CHECK (tt_threads_new (t, &pool) == 0, "pool of %u", t);
        memset (y, 0xff, n * 4);
        memset (dx, 0xff, n * 4);
        tt_activation_forward_split (pool, (tt_activation) fn, rows, width,
            x, y);
        tt_activation_backward_split (pool, (tt_activation) fn, rows, width,
            x, y, dy, dx);
        CHECK (!memcmp (y, y1, n * 4) && !memcmp (dx, dx1, n * 4),
            "activation %s, %zu x %zu, %u threads: forward %s, backward %s",
            tt_activation_names[fn], rows, width, t,
            memcmp (y, y1, n * 4) ? "differs" : "identical",
            memcmp (dx, dx1, n * 4) ? "differs" : "identical");
        tt_threads_free (pool);
      }
      free (x);
      free (dy);
      free (y1);
      free (dx1);
      free (y);
      free (dx);
    }
}

/* Layer normalization on 1-4 threads against one, bit for bit: rows
 * (inner 1) and strided groups, below and above the split threshold */
static void
test_layernorm (void)
{
  static const size_t shapes[][3] = {
    {10, 100, 1}, {333, 77, 1}, {40, 16, 30}, {7, 5, 700}
  };
  for (size_t s = 0; s < 4; s++) {
    const size_t outer = shapes[s][0], n = shapes[s][1], inner = shapes[s][2];
    const size_t total = outer * n * inner, groups = outer * inner;
    float *x = rnd_array (total, 3.0f), *dy = rnd_array (total, 1.0f);
    float *gamma = rnd_array (n, 1.0f), *beta = rnd_array (n, 1.0f);
    float *ref = malloc ((2 * total + 2 * groups + 2 * n) * 4);
    float *got = malloc ((2 * total + 2 * groups + 2 * n) * 4);
    for (unsigned t = 0; t <= 4; t++) {
      tt_threads *pool = NULL;
      if (t)
        CHECK (tt_threads_new (t, &pool) == 0, "pool of %u", t);
      float *o = t ? got : ref;
      memset (o, 0xff, (2 * total + 2 * groups + 2 * n) * 4);
      float *y = o, *dx = o + total, *mean = dx + total, *rstd = mean + groups;
      float *dg = rstd + groups, *db = dg + n;
      tt_layernorm_forward (pool, outer, n, inner, x, y, gamma, beta, 1e-3f,
          mean, rstd);
      tt_layernorm_backward (pool, outer, n, inner, x, dy, gamma, mean, rstd,
          dx, NULL, NULL);
      tt_layernorm_backward (pool, outer, n, inner, x, dy, gamma, mean, rstd,
          NULL, dg, db);
      if (t)
        CHECK (!memcmp (got, ref, (2 * total + 2 * groups + 2 * n) * 4),
            "layernorm %zu x %zu x %zu, %u threads differs from one", outer,
            n, inner, t);
      tt_threads_free (pool);
    }
    free (x);
    free (dy);
    free (gamma);
    free (beta);
    free (ref);
    free (got);
  }
}

/* The operation layers' kernels (elementwise_ops.c): binary operations
 * broadcasting each way, unary functions and reductions over each axis,
 * above the split threshold, on 1 to 4 threads as on none */
static bool
ops_same (const float *a, const float *b, size_t n)
{
  return !memcmp (a, b, n * sizeof *a);
}

static void
test_ops (void)
{
  const size_t batch = 24;
  static const uint32_t shapes[][2][3] = {
    {{8, 12, 12}, {8, 12, 12}}, {{8, 12, 12}, {8, 1, 1}},
    {{8, 1, 1}, {8, 12, 12}}, {{1, 12, 12}, {8, 12, 1}},
    {{8, 12, 12}, {1, 1, 12}},
  };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int op = TT_BINOP_ADD; op <= TT_BINOP_DIV; op++) {
      tt_bcast g;
      uint32_t yd[3];
      CHECK (tt_bcast_init (&g, shapes[s][0], shapes[s][1], yd), "bcast");
      const size_t na = batch * g.a_count, nb = batch * g.b_count,
          ny = batch * g.y_count;
      float *a = rnd_array (na, 1.0f), *b = rnd_array (nb, 1.0f);
      for (size_t i = 0; i < nb; i++)
        b[i] += b[i] < 0 ? -0.5f : 0.5f;        /* away from 0: divide */
      float *dy = rnd_array (ny, 1.0f);
      float *y1 = malloc (ny * 4), *da1 = malloc (na * 4),
          *db1 = malloc (nb * 4), *y = malloc (ny * 4),
          *da = malloc (na * 4), *db = malloc (nb * 4);
      tt_binop_forward (NULL, (tt_binop) op, &g, batch, a, b, y1);
      tt_binop_backward (NULL, (tt_binop) op, &g, batch, a, b, dy, da1, db1);
      for (unsigned t = 1; t <= 4; t++) {
        tt_threads *pool = NULL;
        CHECK (tt_threads_new (t, &pool) == 0, "pool of %u", t);
        memset (y, 0xff, ny * 4);
        memset (da, 0xff, na * 4);
        memset (db, 0xff, nb * 4);
        tt_binop_forward (pool, (tt_binop) op, &g, batch, a, b, y);
        tt_binop_backward (pool, (tt_binop) op, &g, batch, a, b, dy, da, db);
        CHECK (ops_same (y, y1, ny) && ops_same (da, da1, na) &&
            ops_same (db, db1, nb), "binop %d, shapes %zu, %u threads", op,
            s, t);
        tt_threads_free (pool);
      }
      free (a);
      free (b);
      free (dy);
      free (y1);
      free (da1);
      free (db1);
      free (y);
      free (da);
      free (db);
    }
  const size_t n = 40000;
  float *x = rnd_array (n, 1.0f), *dy = rnd_array (n, 1.0f);
  float *y1 = malloc (n * 4), *dx1 = malloc (n * 4), *y = malloc (n * 4),
      *dx = malloc (n * 4);
  for (size_t i = 0; i < n; i++)
    x[i] = fabsf (x[i]) + 0.1f;
  for (int fn = TT_UNARY_NEGATIVE; fn <= TT_UNARY_POW; fn++) {
    tt_unary_forward (NULL, (tt_unary) fn, 1.5f, n, x, y1);
    tt_unary_backward (NULL, (tt_unary) fn, 1.5f, n, x, y1, dy, dx1);
    for (unsigned t = 1; t <= 4; t++) {
      tt_threads *pool = NULL;
      CHECK (tt_threads_new (t, &pool) == 0, "pool of %u", t);
      tt_unary_forward (pool, (tt_unary) fn, 1.5f, n, x, y);
      tt_unary_backward (pool, (tt_unary) fn, 1.5f, n, x, y, dy, dx);
      CHECK (ops_same (y, y1, n) && ops_same (dx, dx1, n),
          "unary %d, %u threads", fn, t);
      tt_threads_free (pool);
    }
  }
  /* [outer][r][inner] of 40000: channel-, height-, width-like and all */
  static const size_t red[][3] = {
    {1000, 40, 1}, {100, 20, 20}, {10, 4000, 1}, {50, 8, 100}
  };
  for (size_t k = 0; k < 4; k++) {
    const size_t o = red[k][0], r = red[k][1], in = red[k][2];
    tt_reduce_forward (NULL, o, r, in, 0.5f, x, y1);
    tt_reduce_backward (NULL, o, r, in, 0.5f, dy, dx1);
    for (unsigned t = 1; t <= 4; t++) {
      tt_threads *pool = NULL;
      CHECK (tt_threads_new (t, &pool) == 0, "pool of %u", t);
      tt_reduce_forward (pool, o, r, in, 0.5f, x, y);
      tt_reduce_backward (pool, o, r, in, 0.5f, dy, dx);
      CHECK (ops_same (y, y1, o * in) && ops_same (dx, dx1, n),
          "reduce %zu, %u threads", k, t);
      tt_threads_free (pool);
    }
  }
  free (x);
  free (dy);
  free (y1);
  free (dx1);
  free (y);
  free (dx);
}

/* Where tt_feed puts element (r, c) of rows of width: by thread blocks
 * on threads threads when blocked, else row-major */
static size_t
feed_at (size_t rows, size_t width, bool blocked, unsigned threads,
    size_t r, size_t c)
{
  if (!blocked)
    return r * width + c;
  unsigned t = 0;
  while (c >= tt_weight_owned_start (width, t + 1, threads))
    t++;
  const size_t c0 = tt_weight_owned_start (width, t, threads);
  const size_t c1 = tt_weight_owned_start (width, t + 1, threads);
  return rows * c0 + r * (c1 - c0) + (c - c0);
}

/* tt_feed: each kind, by ranges and by thread blocks, on 1 to 4 threads,
 * converts every value as the serial loop does, to its place; and finds
 * the first non-finite float in row-major order wherever it lies */
static void
test_feed (void)
{
  /* the MLP's input at batch 128 and 3 (below the split threshold), and
   * rows narrower than two row tiles */
  static const size_t shapes[][2] = { {128, 784}, {3, 784}, {200, 90} };
  for (size_t s = 0; s < 3; s++)
    for (int kind = TT_FEED_FLOATS; kind <= TT_FEED_BYTES_NORMALIZED; kind++)
      for (unsigned t = 1; t <= 4; t++)
        for (int blocked = 0; blocked < 2; blocked++) {
          const size_t rows = shapes[s][0], width = shapes[s][1];
          const size_t n = rows * width;
          uint8_t *bytes = malloc (n);
          float *floats = malloc (n * 4), *ref = malloc (n * 4);
          float *got = malloc (n * 4);
          for (size_t i = 0; i < n; i++) {
            bytes[i] = (uint8_t) (7 + (i * 2654435761u >> 7) % 200);
            floats[i] = rnd ();
          }
          bytes[n / 3] = 7;     /* the range the reference divides by */
          bytes[n / 2] = 206;
          for (size_t i = 0; i < n; i++)
            ref[i] = kind == TT_FEED_FLOATS ? floats[i] : kind ==
                TT_FEED_BYTES ? (float) bytes[i] : ((float) bytes[i] -
                7.0f) / 199.0f;
          tt_threads *pool = NULL;
          CHECK (tt_threads_new (t, &pool) == 0, "pool of %u", t);
          const unsigned threads = tt_threads_count (pool);
          memset (got, 0xff, n * 4);
          const size_t bad = tt_feed (pool, (tt_feed_kind) kind,
              kind == TT_FEED_FLOATS ? (const void *) floats : bytes, n,
              blocked ? width : 0, got);
          size_t wrong = 0;
          for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < width; c++)
              wrong += memcmp (&got[feed_at (rows, width, blocked &&
                          threads > 1, threads, r, c)], &ref[r * width + c],
                  4) != 0;
          CHECK (bad == n && !wrong, "feed kind %d, %zu x %zu, %u threads, "
              "%s: %zu of %zu values not the serial conversion in place "
              "(non-finite reported at %zu)", kind, rows, width, t,
              blocked ? "by blocks" : "by ranges", wrong, n, bad);
          if (kind == TT_FEED_FLOATS) {
            /* a later row in the first block, an earlier one in the last */
            floats[(rows - 1) * width + 1] = NAN;
            floats[(rows / 2) * width + width - 1] = INFINITY;
            const size_t first = tt_feed (pool, TT_FEED_FLOATS, floats, n,
                blocked ? width : 0, got);
            CHECK (first == (rows / 2) * width + width - 1, "feed %zu x %zu, "
                "%u threads, %s: first non-finite at %zu, reported %zu",
                rows, width, t, blocked ? "by blocks" : "by ranges",
                (rows / 2) * width + width - 1, first);
          }
          tt_threads_free (pool);
          free (bytes);
          free (floats);
          free (ref);
          free (got);
        }
}

typedef struct
{
  const tt_optimizer *o;
  float *w, *g, *s0, *s1;
} opt_job;

static void
opt_range (void *arg, size_t begin, size_t end)
{
  const opt_job *j = arg;
  tt_optimizer_apply (j->o, 7, j->w + begin, j->g + begin, j->s0 ? j->s0 +
      begin : NULL, j->s1 ? j->s1 + begin : NULL, end - begin);
}

static void
test_optimizer (void)
{
  static const size_t sizes[] = { 1000, 8192 + 37, 100003 };
  for (int type = TT_OPT_SGD; type <= TT_OPT_ADAMW; type++)
    for (size_t s = 0; s < 3; s++) {
      const size_t n = sizes[s];
      tt_optimizer o = { 0 };
      o.type = (tt_optimizer_type) type;
      o.adam_form = TT_ADAM_TORCH;
      o.learning_rate = 1e-3f;
      o.beta1 = 0.9f;
      o.beta2 = 0.999f;
      o.epsilon = 1e-7f;
      o.weight_decay = type == TT_OPT_ADAMW ? 0.01f : 0.0f;
      o.momentum = type == TT_OPT_SGD ? 0.9f : 0.0f;
      float *w0 = rnd_array (n, 1), *g0 = rnd_array (n, 0.1f);
      float *m0 = rnd_array (n, 0.01f), *v0 = rnd_array (n, 0.01f);
      for (size_t i = 0; i < n; i++)
        v0[i] = fabsf (v0[i]);
      float *ref[4], *got[4];
      for (int a = 0; a < 4; a++) {
        ref[a] = malloc (n * 4);
        got[a] = malloc (n * 4);
      }
      const float *init[4] = { w0, g0, m0, v0 };
      for (int a = 0; a < 4; a++)
        memcpy (ref[a], init[a], n * 4);
      opt_job j = { &o, ref[0], ref[1], ref[2], type == TT_OPT_SGD ? NULL :
            ref[3]
      };
      opt_range (&j, 0, n);
      for (unsigned t = 1; t <= 4; t++) {
        tt_threads *pool = NULL;
        CHECK (tt_threads_new (t, &pool) == 0, "pool of %u", t);
        for (int a = 0; a < 4; a++)
          memcpy (got[a], init[a], n * 4);
        opt_job k = { &o, got[0], got[1], got[2], type == TT_OPT_SGD ? NULL :
              got[3]
        };
        tt_split (pool, n, 16, 8192, opt_range, &k);
        bool same = true;
        for (int a = 0; a < 4; a++)
          same &= !memcmp (got[a], ref[a], n * 4);
        CHECK (same, "optimizer %d over %zu weights, %u threads: not the "
            "serial update bit for bit", type, n, t);
        tt_threads_free (pool);
      }
      for (int a = 0; a < 4; a++) {
        free (ref[a]);
        free (got[a]);
      }
      free (w0);
      free (g0);
      free (m0);
      free (v0);
    }
}

/* weights after steps training steps of model text at batch, on threads */
static float *
train (const char *name, const char *text, uint32_t batch, unsigned threads,
    int steps, size_t *n_weights)
{
  tt_error err;
  tt_model *m = tt_model_load_ini_text (text, strlen (text), name, &err);
  if (!m || tt_model_set_batch_size (m, batch, &err) ||
      tt_model_set_threads (m, threads, &err) || tt_model_compile (m, &err)) {
    printf ("FAIL %s: %s\n", name, err.message);
    tt_test_failed++;
    tt_model_free (m);
    return NULL;
  }
  tt_shape in, lb = tt_model_label_shape (m);
  tt_model_input_shape (m, 0, &in);
  const size_t nx = (size_t) batch * in.channel * in.height * in.width;
  const size_t nl = (size_t) lb.channel * lb.height * lb.width;
  float *x = malloc (nx * 4), *labels = calloc ((size_t) batch * nl, 4);
  uint64_t keep = rng;
  rng = 12345;
  for (int s = 0; s < steps; s++) {
    for (size_t i = 0; i < nx; i++)
      x[i] = rnd ();
    memset (labels, 0, (size_t) batch * nl * 4);
    for (uint32_t b = 0; b < batch; b++)
      labels[b * nl + (size_t) (b * 7 + s) % nl] = 1.0f;
    const void *inputs[1] = { x };
    tt_batch_result r;
    if (tt_model_train_batch (m, batch, inputs, NULL, labels, &r, &err)) {
      printf ("FAIL %s: %s\n", name, err.message);
      tt_test_failed++;
      break;
    }
  }
  rng = keep;
  *n_weights = tt_model_weight_floats (m);
  float *w = malloc (*n_weights * 4);
  tt_model_export_weights (m, w, *n_weights, &err);
  free (x);
  free (labels);
  tt_model_free (m);
  return w;
}

static char *
read_model (const char *file)
{
  char path[1200];
  snprintf (path, sizeof path, "%s/tests/models/%s", root, file);
  FILE *f = fopen (path, "rb");
  if (!f) {
    perror (path);
    exit (2);
  }
  static char buf[65536];
  size_t len = fread (buf, 1, sizeof buf - 1, f);
  fclose (f);
  buf[len] = '\0';
  return strdup (buf);
}

/* text (consumed) with every "from" replaced by "to" */
static char *
replace (char *text, const char *from, const char *to)
{
  char *at = strstr (text, from);
  if (!at)
    return text;
  size_t len = strlen (text) + strlen (to) + 1;
  char *out = malloc (len);
  snprintf (out, len, "%.*s%s%s", (int) (at - text), text, to,
      at + strlen (from));
  free (text);
  return replace (out, from, to);
}

static const char elementwise_ini[] =
    "[Model]\nbatch_size = 16\nloss = cross\n"
    "[Optimizer]\ntype = adam\n"
    "[in]\ntype = input\ninput_shape = 1:64:64\n"
    "[a]\ntype = activation\nactivation = tanh\ninput_layers = in\n"
    "[b]\ntype = activation\nactivation = sigmoid\ninput_layers = in\n"
    "[sum]\ntype = addition\ninput_layers = a, b\n"
    "[cat]\ntype = concat\ninput_layers = sum, b\n"
    "[drop]\ntype = dropout\ndropout_rate = 0.25\n"
    "[flat]\ntype = flatten\n"
    "[out]\ntype = fully_connected\nunit = 4\nactivation = softmax\n";

/* losses over 16 x 2048 values (split), with %s the loss and %s the
 * output's activation */
static const char wide_loss_ini[] =
    "[Model]\nbatch_size = 16\nloss = %s\n"
    "[Optimizer]\ntype = adam\n"
    "[in]\ntype = input\ninput_shape = 1:1:64\n"
    "[out]\ntype = fully_connected\nunit = 2048\nactivation = %s\n";

/* text's [Optimizer] section (to the next section) made plain SGD. A
 * fully connected layer split over threads adds its threads' partial
 * products (layer_fc.c), so its outputs round differently from one
 * thread's; Adam's first steps are about lr * sign (g), which turns such a
 * difference in a gradient near 0 into a whole step, where SGD keeps it
 * as small as it was. (The optimizers' split itself is compared bit for
 * bit above.) */
static char *
plain_sgd (char *text)
{
  char *at = strstr (text, "[Optimizer]");
  if (!at)
    return text;
  char *end = strstr (at + 1, "\n[");
  const char sgd[] = "[Optimizer]\ntype = sgd\nlearning_rate = 0.01";
  size_t len = strlen (text) + sizeof sgd;
  char *out = malloc (len);
  snprintf (out, len, "%.*s%s%s", (int) (at - text), text, sgd,
      end ? end : "\n");
  free (text);
  return out;
}

static void
test_training (const char *file, const char *from1, const char *to1,
    const char *from2, const char *to2, uint32_t batch)
{
  char *text = NULL;
  if (file && strstr (file, ".ini"))
    text = read_model (file);
  else if (file) {
    /* "LOSS ACTIVATION" */
    char loss[32], act[32];
    if (sscanf (file, "%31s %31s", loss, act) != 2)
      exit (2);
    size_t len = sizeof wide_loss_ini + 64;
    text = malloc (len);
    snprintf (text, len, wide_loss_ini, loss, act);
  } else {
    text = strdup (elementwise_ini);
    file = "element-wise model";
  }
  if (from1)
    text = replace (text, from1, to1);
  if (from2)
    text = replace (text, from2, to2);
  text = plain_sgd (text);
  size_t n1 = 0, n = 0;
  float *w1 = train (file, text, batch, 1, 3, &n1);
  for (unsigned t = 2; w1 && t <= 4; t++) {
    float *w = train (file, text, batch, t, 3, &n);
    if (!w)
      break;
    double worst = 0;
    size_t differ = 0;
    for (size_t i = 0; i < n && n == n1; i++) {
      const double d = fabs ((double) w[i] - w1[i]);
      differ += d != 0;
      const double rel = d / (1e-6 + 1e-5 * fabs (w1[i]));
      worst = rel > worst ? rel : worst;
    }
    CHECK (n == n1 && worst <= 1.0, "%s%s%s at batch %u, %u threads: "
        "weights after 3 steps within 1e-6 + 1e-5 relative of one "
        "thread's (worst %.3g of that, %zu of %zu differ at all)", file,
        from1 ? " with " : "", from1 ? to1 : "", batch, t, worst, differ, n);
    printf ("%s%s: %u threads, %zu of %zu weights differ from one "
        "thread's\n", file, from1 ? " (widened)" : "", t, differ, n);
    free (w);
  }
  free (w1);
  free (text);
}

/* A non-finite input in the worker's block of the MLP's input (fed by
 * thread blocks on 2 threads) is refused, named by its sample and
 * element. */
static void
test_feed_refusal (void)
{
  char *text = read_model ("fmnist_mlp.ini");
  tt_error err;
  tt_model *m = tt_model_load_ini_text (text, strlen (text), "mlp", &err);
  CHECK (m && !tt_model_set_batch_size (m, 4, &err) &&
      !tt_model_set_threads (m, 2, &err) && !tt_model_compile (m, &err),
      "%s", err.message);
  float *x = calloc (4 * 784, 4), labels[40] = { 0 };
  x[3 * 784 + 10] = NAN;
  x[2 * 784 + 500] = -INFINITY;
  const void *inputs[1] = { x };
  tt_batch_result r;
  CHECK (m && tt_model_train_batch (m, 4, inputs, NULL, labels, &r, &err) ==
      TT_ERR_NUMERIC && strstr (err.message, "sample 2 holds -inf at "
          "element 500"), "%s", m ? err.message : "no model");
  free (x);
  free (text);
  tt_model_free (m);
}

int
main (int argc, char **argv)
{
  if (argc < 2) {
    fprintf (stderr, "usage: %s SOURCE_ROOT\n", argv[0]);
    return 2;
  }
  snprintf (root, sizeof root, "%s", argv[1]);
  /* every step split, however fast it is on this machine now */
  setenv ("TT_THREADS_STEPS", "split", 1);
  TT_TEST_RUN (test_activations);
  TT_TEST_RUN (test_optimizer);
  TT_TEST_RUN (test_feed);
  TT_TEST_RUN (test_feed_refusal);
  TT_TEST_RUN (test_layernorm);
  TT_TEST_RUN (test_ops);
  test_training ("fmnist_mlp.ini", NULL, NULL, NULL, NULL, 32);
  test_training ("sensor_lstm.ini", NULL, NULL, NULL, NULL, 8);
  test_training ("sensor_gru.ini", NULL, NULL, NULL, NULL, 8);
  /* addition, concat, dropout and activations large enough to split (16 x
   * 4096 elements), with nothing else but element-wise work and the FC */
  test_training (NULL, NULL, NULL, NULL, NULL, 16);
  test_training ("mse none", NULL, NULL, NULL, NULL, 16);
  test_training ("cross sigmoid", NULL, NULL, NULL, NULL, 16);
  test_training ("cross softmax", NULL, NULL, NULL, NULL, 16);
  /* wide enough for the cells, activations and updates to split */
  test_training ("sensor_lstm.ini", "unit = 12", "unit = 96", "unit = 8",
      "unit = 64", 64);
  test_training ("sensor_gru.ini", "unit = 12", "unit = 96", "unit = 8",
      "unit = 64", 64);
  /* attention: 24 tokens, enough for the heads to split by (sample, head) */
  test_training ("transformer_encoder.ini", "input_shape = 1:6:4",
      "input_shape = 1:24:4", "max_timestep = 6", "max_timestep = 24", 16);
  return tt_test_summary ();
}
