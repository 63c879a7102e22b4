/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * OpenBLAS's thread count after a model is compiled (blas_threads.c):
 *   test_blas_threads default   no thread variable set: one thread
 *   test_blas_threads env N     OPENBLAS_NUM_THREADS=N set: left at N
 *   test_blas_threads call N    tt_set_num_threads (N) first: one thread
 *                               (N is the models' engine threads now)
 * One mode per process: OpenBLAS reads the environment when it loads, and
 * the engine decides once per process. Exits 77 (skipped) without
 * OpenBLAS.
 */
#include "tt_engine.h"
#include "tt_test.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef TT_HAVE_OPENBLAS
extern int openblas_get_num_threads (void);

static const char model[] =
    "[Model]\ntype=NeuralNetwork\nbatch_size=4\nloss=mse\n"
    "[Optimizer]\ntype=sgd\nlearning_rate=0.1\n"
    "[in]\ntype=input\ninput_shape=1:1:8\n"
    "[fc]\ntype=fully_connected\nunit=3\n";

static unsigned want_engine = 1;

static void
compile_one (void)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (tt_test_write_text ("threads.ini", model),
      &err);
  CHECK (m != NULL, "%s", err.message);
  if (m)
    CHECK (tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  if (m)
    CHECK (tt_model_threads (m) == want_engine, "engine threads %u, "
        "expected %u", tt_model_threads (m), want_engine);
  tt_model_free (m);
}

static const char *mode;
static int want;

/* what each mode checks after its preparation */
static void
check_threads (void)
{
  compile_one ();
  compile_one ();               /* a second model changes nothing */
  CHECK (openblas_get_num_threads () == want,
      "%s: OpenBLAS runs %d threads after compiling, expected %d", mode,
      openblas_get_num_threads (), want);
}

/* no thread variable set */
static void
test_default (void)
{
  check_threads ();
}

static void
test_env (void)
{
  const char *v = getenv ("OPENBLAS_NUM_THREADS");
  CHECK (v && atoi (v) == want, "OPENBLAS_NUM_THREADS is not %d", want);
  check_threads ();
}

static void
test_call (void)
{
  tt_set_num_threads (want);
  want_engine = (unsigned) want;
  want = 1;
  check_threads ();
}
#endif

int
main (int argc, char **argv)
{
#ifndef TT_HAVE_OPENBLAS
  (void) argc;
  (void) argv;
  printf ("SKIP: built without OpenBLAS\n");
  return 77;
#else
  mode = argc > 1 ? argv[1] : "default";
  want = argc > 2 ? atoi (argv[2]) : 1;
  static const char *const vars[] = {
    "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"
  };
  if (strcmp (mode, "env")) {
    /* the cases without a variable: run again without them, so that
     * OpenBLAS starts without them too */
    bool set = false;
    for (size_t i = 0; i < 3; i++)
      if (getenv (vars[i])) {
        unsetenv (vars[i]);
        set = true;
      }
    if (set) {
      execv ("/proc/self/exe", argv);
      perror ("execv");
      return 1;
    }
  }
  /* one case per process: the mode's (TT_TEST_CASE can still skip it) */
  if (!strcmp (mode, "default")) {
    TT_TEST_RUN (test_default);
  } else if (!strcmp (mode, "env")) {
    TT_TEST_RUN (test_env);
  } else if (!strcmp (mode, "call")) {
    TT_TEST_RUN (test_call);
  } else {
    fprintf (stderr, "usage: %s default | env N | call N\n", argv[0]);
    return 2;
  }
  return tt_test_summary ();
#endif
}
