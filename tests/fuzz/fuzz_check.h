/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The invariant check of every fuzz target (engine and GStreamer ones):
 * prints what failed, then aborts, which libFuzzer reports as a crash.
 */
#ifndef TT_FUZZ_CHECK_H
#define TT_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

/* helpers a target may not use */
#define FUZZ_HELPER static __attribute__ ((unused))

#define FUZZ_CHECK(cond, ...)                                             \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf (stderr, "fuzz invariant failed at %s:%d: %s: ", __FILE__,  \
          __LINE__, #cond);                                               \
      fprintf (stderr, __VA_ARGS__);                                      \
      fprintf (stderr, "\n");                                             \
      abort ();                                                           \
    }                                                                     \
  } while (0)

#endif
