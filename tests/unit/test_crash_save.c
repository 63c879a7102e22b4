/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Crash-safe saves: a child process saves two different models (weights A,
 * then B, then A, ...) to one path as fast as it can, and the parent kills
 * it with SIGKILL at a random point, many times. After every kill the file
 * at the path must be byte-identical to A or to B: never truncated, never
 * a mix. The same for the optimized INI writer.
 *
 * The kill point is set in saves, not in wall-clock time, so that a busy
 * machine (where one save with its fsync may take longer than any fixed
 * delay) still sees kills land inside saves: the child reports each
 * finished save on a pipe; the parent waits for 1 to 3 of them, then
 * kills after a random fraction of one save's measured duration.
 *
 * usage: test_crash_save SOURCE_ROOT [KILLS]   (default 200)
 */
#include "tt_engine.h"
#include "tt_test.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static tt_model *
crash_model (const char *ini, uint64_t seed)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (ini, &err);
  if (!m)
    return NULL;
  tt_model_set_seed (m, seed);
  if (tt_model_compile (m, &err)) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

static void
crash_save (tt_model * m, const char *path, bool plan)
{
  tt_error err;
  if (plan)
    tt_model_save_plan_ini (m, path, &err);
  else
    tt_model_save_bin (m, path, &err);
}

static double
crash_now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Saves b and a alternately to path until killed, one byte on done after
 * each save. */
static void
crash_child (tt_model * a, tt_model * b, const char *path, bool plan, int done)
{
  for (unsigned i = 0;; i++) {
    crash_save (i % 2 ? a : b, path, plan);
    if (write (done, "s", 1) != 1)
      _exit (1);
  }
}

static void
crash_run (const char *what, tt_model * a, tt_model * b, const char *dir,
    int kills, bool plan)
{
  char path[1024], pa[1024], pb[1024];
  tt_error err;
  snprintf (path, sizeof path, "%s/model.%s", dir, plan ? "ini" : "bin");
  snprintf (pa, sizeof pa, "%s/a.%s", dir, plan ? "ini" : "bin");
  snprintf (pb, sizeof pb, "%s/b.%s", dir, plan ? "ini" : "bin");
  if (plan) {
    tt_model_save_plan_ini (a, pa, &err);
    tt_model_save_plan_ini (b, pb, &err);
    tt_model_save_plan_ini (a, path, &err);
  } else {
    tt_model_save_bin (a, pa, &err);
    tt_model_save_bin (b, pb, &err);
    tt_model_save_bin (a, path, &err);
  }
  size_t na = 0, nb = 0;        /* tt_test_read_file sets them on success */
  char *ca = tt_test_read_file (pa, &na), *cb = tt_test_read_file (pb, &nb);
  CHECK (ca && cb && (na != nb || memcmp (ca, cb, na)),
      "%s: the two models must differ", what);
  /* one save's duration, fsync included, as this machine does it now */
  double t0 = crash_now ();
  for (int i = 0; i < 4; i++)
    crash_save (i % 2 ? b : a, path, plan);
  const double save_seconds = (crash_now () - t0) / 4;
  crash_save (a, path, plan);
  int bad = 0, saw_a = 0, saw_b = 0;
  srand (1234);
  for (int k = 0; k < kills; k++) {
    int done[2];
    if (pipe (done) != 0) {
      perror ("pipe");
      exit (2);
    }
    pid_t pid = fork ();
    if (pid == 0) {
      close (done[0]);
      crash_child (a, b, path, plan, done[1]);
      _exit (0);
    }
    close (done[1]);
    /* 1 to 3 finished saves (B, A, B: the file may hold either), then a
     * kill anywhere in the next one, or just after it */
    char got;
    for (int s = rand () % 3; s >= 0; s--)
      if (read (done[0], &got, 1) != 1)
        break;
    const double f = (rand () % 1000) / 1000.0 * 1.2;
    const long ns = (long) (f * save_seconds * 1e9);
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    nanosleep (&ts, NULL);
    kill (pid, SIGKILL);
    waitpid (pid, NULL, 0);
    close (done[0]);
    size_t n;
    char *c = tt_test_read_file (path, &n);
    bool is_a = c && n == na && !memcmp (c, ca, n);
    bool is_b = c && n == nb && !memcmp (c, cb, n);
    saw_a += is_a;
    saw_b += is_b;
    if (!is_a && !is_b) {
      if (bad < 3)
        printf ("  %s kill %d: the file is neither model (%zu bytes)\n",
            what, k, c ? n : 0);
      bad++;
    }
    free (c);
  }
  CHECK (bad == 0, "%s: %d of %d kills left a damaged file", what, bad, kills);
  /* both outcomes happened, so kills did land in the middle of saving */
  CHECK (saw_a > 0 && saw_b > 0, "%s: only one model ever seen (%d, %d)",
      what, saw_a, saw_b);
  printf ("%s: %d kills, file was the old model %d times, the new %d "
      "times, damaged %d times\n", what, kills, saw_a, saw_b, bad);
  free (ca);
  free (cb);
}

/* the models (same architecture: a and b; another: c), the folder and the
 * number of kills the cases share */
static tt_model *crash_a, *crash_b, *crash_c;
static char crash_dir[256] = "/tmp/tt-crash-XXXXXX";
static int crash_kills;

/* same architecture, different weights */
static void
test_bin_kills (void)
{
  crash_run ("bin", crash_a, crash_b, crash_dir, crash_kills, false);
}

/* two plans differ only with two architectures */
static void
test_optimized_ini_kills (void)
{
  crash_run ("optimized ini", crash_a, crash_c, crash_dir, crash_kills / 2,
      true);
}

int
main (int argc, char **argv)
{
  const char *root = argc > 1 ? argv[1] : ".";
  crash_kills = argc > 2 ? atoi (argv[2]) : 200;
  char ini[1024];
  snprintf (ini, sizeof ini, "%s/tests/models/fmnist_mlp.ini", root);
  if (!mkdtemp (crash_dir)) {
    perror ("mkdtemp");
    return 2;
  }
  char ini2[1024];
  snprintf (ini2, sizeof ini2, "%s/tests/models/fmnist_cnn.ini", root);
  crash_a = crash_model (ini, 1);
  crash_b = crash_model (ini, 2);
  crash_c = crash_model (ini2, 1);
  CHECK (crash_a && crash_b && crash_c, "cannot load %s or %s", ini, ini2);
  if (crash_a && crash_b && crash_c) {
    TT_TEST_RUN (test_bin_kills);
    TT_TEST_RUN (test_optimized_ini_kills);
  }
  const int cases = tt_test_cases_run;  /* as TT_TEST_CASE chose */
  tt_model_free (crash_a);
  tt_model_free (crash_b);
  tt_model_free (crash_c);
  /* leftover temporary files are harmless to correctness but are litter:
   * only the models of the cases that ran may remain */
  char cmd[512];
  snprintf (cmd, sizeof cmd, "ls -A '%s' | wc -l", crash_dir);
  FILE *p = popen (cmd, "r");
  int files = 0;
  if (p && fscanf (p, "%d", &files) != 1)
    files = -1;
  if (p)
    pclose (p);
  printf ("%d files in the folder after the kills\n", files);
  /* per case run: model, a and b (.bin, or .ini), and at most one
   * temporary for its saved path: the last killed save's, which the next
   * save of that path sweeps away (both cases: 6 to 8 files) */
  CHECK (files >= 3 * cases && files <= 4 * cases,
      "%d files: killed saves left litter", files);
  snprintf (cmd, sizeof cmd, "rm -rf '%s'", crash_dir);
  if (system (cmd) != 0)
    printf ("could not remove %s\n", crash_dir);
  return tt_test_summary ();
}
