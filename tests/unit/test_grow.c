/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer grow (tools/cli_grow.c, io/grow.c): a trained
 * classifier's output layer grown from 3 to 5 units gives, on the same
 * inputs, the original outputs bit for bit in its first 3 and its new
 * bias entries are 0; the BIN written loads and saves back byte for byte;
 * the same seed grows the same weights, another seed others; the grown
 * model trains on the new classes; and grow refuses a layer that is not
 * there or not fully_connected, units that do not grow, a later layer
 * whose weights depend on the units and an optimized INI, naming them.
 *
 * usage: test_grow TENSOR_TRAINER
 */
#include "tt_engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
      fprintf (stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); } } while (0)

static const char *cli;
static char dir[64];

/* mse on the raw outputs: tt_model_output holds the logits */
static const char *ini_text =
    "[Model]\n"
    "type = NeuralNetwork\n"
    "batch_size = 8\n"
    "loss = mse\n"
    "[Optimizer]\n"
    "type = adam\n"
    "learning_rate = 0.02\n"
    "[input]\n"
    "type = input\n"
    "input_shape = 1:1:6\n"
    "[hidden]\n"
    "type = fully_connected\n"
    "unit = 16\n"
    "activation = relu\n" "[Out]\n" "type = fully_connected\n" "Unit = 3\n";

static char *
path (const char *name)
{
  static char buf[8][256];
  static int k;
  char *p = buf[k++ % 8];
  snprintf (p, 256, "%s/%s", dir, name);
  return p;
}

static void
write_file (const char *p, const char *text)
{
  FILE *f = fopen (p, "w");
  fputs (text, f);
  fclose (f);
}

static char *
read_file (const char *p, size_t *len)
{
  FILE *f = fopen (p, "rb");
  char *d;
  long n;
  if (!f)
    return NULL;
  fseek (f, 0, SEEK_END);
  n = ftell (f);
  fseek (f, 0, SEEK_SET);
  d = malloc ((size_t) n + 1);
  if (fread (d, 1, (size_t) n, f) != (size_t) n)
    n = 0;
  d[n] = 0;
  fclose (f);
  *len = (size_t) n;
  return d;
}

/* runs the CLI with args; its status, its stderr in err (g_free-less) */
static int
run (const char *args, char *err, size_t size)
{
  char cmd[2048];
  snprintf (cmd, sizeof cmd, "%s %s >%s 2>%s", cli, args, path ("out.txt"),
      path ("err.txt"));
  int st = system (cmd);
  size_t n;
  char *e = read_file (path ("err.txt"), &n);
  snprintf (err, size, "%s", e ? e : "");
  free (e);
  return WIFEXITED (st) ? WEXITSTATUS (st) : -1;
}

/* sample k of class c (0..4): a bump at input c, noise elsewhere */
static void
make_batch (uint32_t seed, const int *classes, int n_classes, int units,
    float *x, float *y)
{
  for (int s = 0; s < 8; s++) {
    const int c = classes[(seed + s) % n_classes];
    for (int i = 0; i < 6; i++) {
      seed = seed * 1664525u + 1013904223u;
      x[s * 6 + i] = (float) (seed >> 8) / (1 << 24) * 0.2f;
    }
    x[s * 6 + c] += 1.0f;
    for (int u = 0; u < units; u++)
      y[s * units + u] = u == c;
  }
}

static tt_model *
open_model (const char *ini, const char *bin)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (ini, &err);
  CHECK (m, "%s", err.message);
  if (!m)
    exit (1);
  CHECK (tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  if (bin)
    CHECK (tt_model_load_weights (m, bin, &err) == TT_OK, "%s", err.message);
  else {
    tt_model_set_seed (m, 1);
    CHECK (tt_model_init_weights (m, &err) == TT_OK, "%s", err.message);
  }
  return m;
}

/* mean loss of steps training steps on classes */
static double
train (tt_model * m, const int *classes, int n_classes, int units, int steps)
{
  float x[48], y[40];
  const void *in[1] = { x };
  tt_dtype types[1] = { TT_DTYPE_FLOAT32 };
  tt_batch_result r;
  tt_error err;
  double sum = 0;
  for (int s = 0; s < steps; s++) {
    make_batch ((uint32_t) s * 77u, classes, n_classes, units, x, y);
    CHECK (tt_model_train_batch (m, 8, in, types, y, &r, &err) == TT_OK,
        "%s", err.message);
    sum += r.loss;
  }
  return sum / steps;
}

static void
outputs (tt_model * m, uint32_t seed, float *out, int units)
{
  static const int all[5] = { 0, 1, 2, 3, 4 };
  float x[48], y[40];
  const void *in[1] = { x };
  tt_dtype types[1] = { TT_DTYPE_FLOAT32 };
  tt_error err;
  make_batch (seed, all, 5, 5, x, y);
  CHECK (tt_model_eval_batch (m, 8, in, types, NULL, NULL, &err) == TT_OK,
      "%s", err.message);
  memcpy (out, tt_model_output (m), 8 * units * sizeof (float));
}

int
main (int argc, char **argv)
{
  static const int old_classes[3] = { 0, 1, 2 }, new_classes[2] = { 3, 4 };
  char err[4096], args[1024];
  tt_error e;
  size_t la, lb;

  if (argc < 2)
    return 2;
  cli = argv[1];
  snprintf (dir, sizeof dir, "/tmp/tt-grow-XXXXXX");
  if (!mkdtemp (dir))
    return 2;
  write_file (path ("cls.ini"), ini_text);

  /* a classifier of classes 0-2, trained */
  tt_model *old = open_model (path ("cls.ini"), NULL);
  train (old, old_classes, 3, 3, 60);
  CHECK (tt_model_save (old, path ("cls.bin"), &e) == TT_OK, "%s", e.message);

  snprintf (args, sizeof args, "grow %s --weights %s --layer out --units 5 "
      "-o %s --seed 3", path ("cls.ini"), path ("cls.bin"), path ("g.ini"));
  CHECK (run (args, err, sizeof err) == 0, "grow failed: %s", err);
  tt_model *grown = open_model (path ("g.ini"), path ("g.bin"));

  /* the old outputs, bit for bit */
  for (uint32_t seed = 1; seed < 6; seed++) {
    float a[8 * 3], b[8 * 5];
    outputs (old, seed, a, 3);
    outputs (grown, seed, b, 5);
    for (int s = 0; s < 8; s++)
      CHECK (memcmp (a + 3 * s, b + 5 * s, 3 * sizeof (float)) == 0,
          "sample %d: outputs %g %g %g, grown %g %g %g", s, a[3 * s],
          a[3 * s + 1], a[3 * s + 2], b[5 * s], b[5 * s + 1], b[5 * s + 2]);
  }
  /* the new bias entries are 0, the new columns drawn (not 0) */
  {
    size_t n = tt_model_weight_floats (grown);
    float *w = malloc (n * sizeof *w);
    CHECK (tt_model_export_weights (grown, w, n, &e) == TT_OK, "%s", e.message);
    /* hidden: 6*16 + 16, out weight 16*5, out bias 5 */
    const float *ow = w + 6 * 16 + 16, *ob = ow + 16 * 5;
    CHECK (n == 6 * 16 + 16 + 16 * 5 + 5, "%zu weights", n);
    CHECK (ob[3] == 0 && ob[4] == 0, "new biases %g %g", ob[3], ob[4]);
    int nonzero = 0;
    for (int r = 0; r < 16; r++)
      nonzero += ow[r * 5 + 3] != 0 && ow[r * 5 + 4] != 0;
    CHECK (nonzero == 16, "%d of 16 rows with new columns drawn", nonzero);
    free (w);
  }
  /* the BIN round trip */
  CHECK (tt_model_save (grown, path ("g2.bin"), &e) == TT_OK, "%s", e.message);
  {
    char *a = read_file (path ("g.bin"), &la), *b = read_file (path ("g2.bin"),
        &lb);
    CHECK (a && b && la == lb && !memcmp (a, b, la), "g.bin saved again "
        "differs (%zu, %zu bytes)", la, lb);
    free (a);
    free (b);
  }
  /* the seed: the same gives the same BIN, another another */
  snprintf (args, sizeof args, "grow %s --weights %s --layer OUT --units 5 "
      "-o %s --seed 3", path ("cls.ini"), path ("cls.bin"), path ("h.ini"));
  CHECK (run (args, err, sizeof err) == 0, "grow failed: %s", err);
  {
    char *a = read_file (path ("g.bin"), &la), *b = read_file (path ("h.bin"),
        &lb);
    CHECK (a && b && la == lb && !memcmp (a, b, la), "seed 3 twice differs");
    free (a);
    free (b);
  }
  snprintf (args, sizeof args, "grow %s --weights %s --layer out --units 5 "
      "-o %s --seed 4", path ("cls.ini"), path ("cls.bin"), path ("h.ini"));
  CHECK (run (args, err, sizeof err) == 0, "grow failed: %s", err);
  {
    char *a = read_file (path ("g.bin"), &la), *b = read_file (path ("h.bin"),
        &lb);
    CHECK (a && b && la == lb && memcmp (a, b, la), "seeds 3 and 4 agree");
    free (a);
    free (b);
  }

  /* training on the new classes: the loss falls */
  {
    const double first = train (grown, new_classes, 2, 5, 5);
    train (grown, new_classes, 2, 5, 100);
    const double last = train (grown, new_classes, 2, 5, 5);
    CHECK (isfinite (last) && last < first * 0.5, "new classes: loss %g -> "
        "%g", first, last);
  }

  /* refusals */
  struct
  {
    const char *layer, *units, *want1, *want2;
  } bad[] = {
    {"nope", "5", "--layer nope: no layer of that name",
        "fully_connected layers are: hidden, out"},
    {"input", "5", "--layer input is of type input, not fully_connected",
        "hidden, out"},
    {"out", "3", "--units 3: [out] has 3 units already", "--units 4"},
    {"hidden", "20", "cls.ini: growing hidden changes out:weight (48 "
          "values, 60 grown)", "the last fully_connected"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf (args, sizeof args, "grow %s --weights %s --layer %s --units %s "
        "-o %s", path ("cls.ini"), path ("cls.bin"), bad[i].layer,
        bad[i].units, path ("bad.ini"));
    CHECK (run (args, err, sizeof err) == 1 && strstr (err, bad[i].want1)
        && strstr (err, bad[i].want2), "--layer %s --units %s: %s",
        bad[i].layer, bad[i].units, err);
    CHECK (access (path ("bad.ini"), F_OK) != 0, "bad.ini written");
  }
  snprintf (args, sizeof args, "plan %s -o %s", path ("cls.ini"),
      path ("cls.opt.ini"));
  CHECK (run (args, err, sizeof err) == 0, "plan: %s", err);
  snprintf (args, sizeof args, "grow %s --weights %s --layer out --units 5 "
      "-o %s", path ("cls.opt.ini"), path ("cls.bin"), path ("bad.ini"));
  CHECK (run (args, err, sizeof err) == 1 && strstr (err, "optimized INI"),
      "optimized INI: %s", err);

  tt_model_free (old);
  tt_model_free (grown);
  snprintf (args, sizeof args, "rm -rf %s", dir);
  if (system (args) != 0)
    fprintf (stderr, "could not remove %s\n", dir);
  printf ("%s\n", failures ? "FAILED" : "grow: all checks passed");
  return failures != 0;
}
