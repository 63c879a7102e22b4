/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pool laid out for two threads' halves (ext/engine/plan/plan_halves.h).
 *
 * - The planner on random sets: a valid layout (no two tensors live at
 *   once share a byte, aligned, within the naive size), each tensor
 *   written by halves sharing bytes only with such tensors centred on the
 *   same address, and with others only below its middle; deterministic;
 *   invalid input refused; an input past the work budget given up.
 * - Models: compiled for two threads, training and inference at batch 16
 *   are laid out so (at most half again the bytes), one thread, a batch
 *   of one and a memory limit are not; the optimized INI says so and loads again; a bad
 *   [Plan] threads is refused by name; training on two threads in that
 *   layout gives the weights of the same training in the layout for any
 *   count, bit for bit (the layout moves bytes, not arithmetic).
 * - The second layout (core/layout_switch.c): a model laid out by halves
 *   keeps one for one thread, for its inline steps; training always in
 *   one, always in the other, and switching at every step give the same
 *   weights, optimizer state and moving statistics bit for bit, and the
 *   optimized INI still gives the halves after steps in the other; one
 *   thread and a memory limit have no second layout.
 *
 * usage: test_plan_halves SOURCE_ROOT
 */
#include "tt_internal.h"
#include "plan_halves.h"
#include "tt_test_hooks.h"
#include "tt_test.h"
#include "train_steps.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static char root[1024];

#define ALIGN 64u

/* splitmix64: the same sets on every platform */
static uint64_t
rnd (uint64_t * s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t
aligned (uint64_t size)
{
  return (size + ALIGN - 1) & ~(uint64_t) (ALIGN - 1);
}

static bool
in_columns (const tt_interval * t)
{
  return tt_plan_halves_in_column (t, ALIGN);
}

/* A training step's shapes: weights live throughout, activations from
 * their forward step to their backward one, derivatives and scratch
 * briefly; about half written by halves, sizes from 0 to 2 MB. */
static void
random_set (uint64_t * s, tt_interval * t, size_t n)
{
  const int32_t steps = (int32_t) (2 * n + 2);
  for (size_t i = 0; i < n; i++) {
    const uint64_t kind = rnd (s) % 4;
    t[i].size = kind == 0 ? rnd (s) % 4096 : rnd (s) % (2u << 20);
    if (kind == 0) {
      t[i].first = 0;
      t[i].last = steps - 1;
    } else {
      t[i].first = (int32_t) (rnd (s) % (uint64_t) steps);
      const int32_t span = kind == 1 ? steps - t[i].first :
          (int32_t) (rnd (s) % 4) + 1;
      t[i].last = t[i].first + (int32_t) (rnd (s) % (uint64_t) span);
      if (t[i].last >= steps)
        t[i].last = steps - 1;
    }
    t[i].halves = kind != 0 && rnd (s) % 2;
    t[i].offset = 0;
  }
}

static bool
live_together (const tt_interval * a, const tt_interval * b)
{
  return a->first <= b->last && b->first <= a->last;
}

/* The layout's promises, pair by pair. Returns false at the first broken
 * one (with a CHECK naming it). */
static bool
check_layout (const char *what, const tt_interval * t, size_t n, uint64_t pool)
{
  uint64_t naive = 0, end = 0;
  for (size_t i = 0; i < n; i++) {
    naive += aligned (t[i].size);
    if (t[i].size && t[i].offset + aligned (t[i].size) > end)
      end = t[i].offset + aligned (t[i].size);
    if (t[i].offset % ALIGN) {
      CHECK (false, "%s: tensor %zu at %" PRIu64 " is not aligned", what, i,
          t[i].offset);
      return false;
    }
  }
  CHECK (pool == end, "%s: pool %" PRIu64 ", the last byte used %" PRIu64,
      what, pool, end);
  CHECK (pool <= naive, "%s: pool %" PRIu64 " over the naive %" PRIu64,
      what, pool, naive);
  for (size_t i = 0; i < n; i++) {
    const tt_interval *a = &t[i];
    if (!a->size)
      continue;
    const uint64_t a0 = a->offset, a1 = a0 + aligned (a->size);
    for (size_t j = i + 1; j < n; j++) {
      const tt_interval *b = &t[j];
      if (!b->size)
        continue;
      const uint64_t b0 = b->offset, b1 = b0 + aligned (b->size);
      if (a1 <= b0 || b1 <= a0)
        continue;
      if (live_together (a, b)) {
        CHECK (false, "%s: tensors %zu and %zu are live together and share "
            "bytes", what, i, j);
        return false;
      }
      /* centres in half bytes: exact for odd aligned sizes too */
      const uint64_t ca = 2 * a0 + aligned (a->size);
      const uint64_t cb = 2 * b0 + aligned (b->size);
      if (in_columns (a) && in_columns (b) &&
          (ca > cb ? ca - cb : cb - ca) >= 2 * ALIGN) {
        CHECK (false, "%s: tensors %zu and %zu, written by halves, share "
            "bytes with centres %" PRIu64 " and %" PRIu64 " half bytes apart",
            what, i, j, ca, cb);
        return false;
      }
      const tt_interval *h = in_columns (a) ? a : b, *o = h == a ? b : a;
      const uint64_t o1 = o->offset + aligned (o->size);
      if (in_columns (h) && !in_columns (o) &&
          2 * o1 > 2 * h->offset + aligned (h->size) + 2 * ALIGN) {
        CHECK (false, "%s: a caller's tensor (%zu) reaches past the middle "
            "of a tensor written by halves (%zu)", what,
            (size_t) (o - t), (size_t) (h - t));
        return false;
      }
    }
  }
  return true;
}

static void
test_random_sets (void)
{
  uint64_t s = 19;
  for (int set = 0; set < 60; set++) {
    const size_t n = 1 + (size_t) (rnd (&s) % 120);
    tt_interval t[120], u[120];
    random_set (&s, t, n);
    memcpy (u, t, sizeof t);
    char what[64];
    snprintf (what, sizeof what, "set %d (%zu tensors)", set, n);
    const uint64_t pool = tt_plan_assign_offsets_halves (t, n, ALIGN);
    CHECK (pool != UINT64_MAX, "%s: no layout", what);
    if (pool == UINT64_MAX || !check_layout (what, t, n, pool))
      continue;
    CHECK (tt_plan_assign_offsets_halves (u, n, ALIGN) == pool, "%s: a "
        "second run gave another pool", what);
    bool same = true;
    for (size_t i = 0; i < n; i++)
      same &= u[i].offset == t[i].offset;
    CHECK (same, "%s: a second run gave other offsets", what);
  }
}

/* Two activations of one size in turn share a column at one offset; a
 * caller's tensor live with them both goes above; one live with neither
 * into the lower half. */
static void
test_hand_made (void)
{
  tt_interval t[4] = {
    {1 << 20, 0, 1, 0, true},
    {1 << 20, 5, 6, 0, true},
    {4096, 0, 6, 0, false},
    {256 << 10, 2, 4, 0, false},
  };
  const uint64_t pool = tt_plan_assign_offsets_halves (t, 4, ALIGN);
  CHECK (pool == (1 << 20) + 4096, "pool %" PRIu64, pool);
  CHECK (t[0].offset == 0 && t[1].offset == 0, "the two activations at %"
      PRIu64 " and %" PRIu64, t[0].offset, t[1].offset);
  CHECK (t[2].offset == 1 << 20, "the long-lived tensor at %" PRIu64,
      t[2].offset);
  CHECK (t[3].offset == 0, "the short one at %" PRIu64, t[3].offset);
  check_layout ("hand-made", t, 4, pool);
}

static void
test_refusals (void)
{
  tt_interval t[2] = { {100, 0, 1, 0, true}, {100, 3, 2, 0, false} };
  CHECK (tt_plan_assign_offsets_halves (t, 2, ALIGN) == UINT64_MAX,
      "first > last accepted");
  t[1].first = 1;
  CHECK (tt_plan_assign_offsets_halves (t, 2, 48) == UINT64_MAX,
      "an alignment of 48 accepted");
  CHECK (tt_plan_assign_offsets_halves (t, 2, ALIGN) != UINT64_MAX,
      "a valid pair refused");
  CHECK (tt_plan_assign_offsets_halves (t, 0, ALIGN) == 0, "no tensors: a "
      "pool of bytes");
  /* thousands of tensors live at once: the quadratic passes give up */
  const size_t big = 12000;
  tt_interval *many = calloc (big, sizeof *many);
  for (size_t i = 0; many && i < big; i++)
    many[i] = (tt_interval) {
    64 + (i % 7) * 64, 0, 1, 0, false};
  CHECK (many && tt_plan_assign_offsets_halves (many, big, ALIGN) ==
      UINT64_MAX, "%zu tensors laid out within the work budget", big);
  free (many);
}

/* ---- models ---------------------------------------------------------- */

static tt_model *
open_model (const char *path, const char *text, unsigned threads,
    bool inference, uint64_t limit, tt_error * err)
{
  tt_model *m = text ? tt_model_load_ini_text (text, strlen (text), path,
      err) : tt_model_load_ini (path, err);
  if (!m)
    return NULL;
  if (tt_model_set_batch_size (m, 16, err) ||
      tt_model_set_threads (m, threads, err) ||
      tt_model_set_inference (m, inference, err) ||
      (limit && tt_model_set_memory_limit (m, limit, err)) ||
      tt_model_compile (m, err)) {
    tt_model_free (m);
    return NULL;
  }
  return m;
}

/* inference on two threads at the given batch */
static tt_model *
open_inference (const char *path, uint32_t batch, tt_error * err)
{
  tt_model *m = tt_model_load_ini (path, err);
  if (m && (tt_model_set_batch_size (m, batch, err) ||
          tt_model_set_threads (m, 2, err) ||
          tt_model_set_inference (m, true, err) || tt_model_compile (m, err))) {
    tt_model_free (m);
    m = NULL;
  }
  return m;
}

static void
test_models (void)
{
  static const char *names[] = {
    "fmnist_cnn.ini", "fmnist_mlp.ini", "resnet_bn.ini", "inception.ini",
    "sensor_lstm.ini", NULL
  };
  for (int k = 0; names[k]; k++) {
    char path[1200];
    snprintf (path, sizeof path, "%s/tests/models/%s", root, names[k]);
    tt_error err;
    tt_model *one = open_model (path, NULL, 1, false, 0, &err);
    tt_model *two = open_model (path, NULL, 2, false, 0, &err);
    CHECK (one && two, "%s: %s", names[k], err.message);
    if (!one || !two) {
      tt_model_free (one);
      tt_model_free (two);
      continue;
    }
    tt_plan_info p1, p2;
    tt_model_plan_info (one, &p1);
    tt_model_plan_info (two, &p2);
    printf ("%-16s batch 16: pool %9" PRIu64 " on one thread, %9" PRIu64
        " on two (%s)\n", names[k], p1.pool_bytes, p2.pool_bytes,
        p2.laid_out_threads == 2 ? "by halves" : "for any count");
    CHECK (p1.laid_out_threads == 1 && p1.one_thread_pool_bytes ==
        p1.pool_bytes, "%s: one thread laid out for %u", names[k],
        p1.laid_out_threads);
    CHECK (p2.one_thread_pool_bytes == p1.pool_bytes, "%s: two threads' "
        "pool for any count %" PRIu64 ", one thread's %" PRIu64, names[k],
        p2.one_thread_pool_bytes, p1.pool_bytes);
    if (p2.laid_out_threads == 2)
      CHECK (p2.pool_bytes >= p1.pool_bytes && p2.pool_bytes - p1.pool_bytes
          <= p1.pool_bytes / 2, "%s: by halves %" PRIu64 " against %"
          PRIu64, names[k], p2.pool_bytes, p1.pool_bytes);
    else
      CHECK (p2.pool_bytes == p1.pool_bytes, "%s", names[k]);
    if (!strcmp (names[k], "fmnist_cnn.ini"))
      CHECK (p2.laid_out_threads == 2 && p2.pool_bytes > p1.pool_bytes,
          "the CNN is not laid out by halves on two threads");
    tt_model_free (one);
    tt_model_free (two);

    /* inference by halves too (the CNN's at batch 16), but not at batch
     * 1 (not split by samples) */
    for (uint32_t batch = 1; batch <= 16; batch += 15) {
      tt_model *inf = open_inference (path, batch, &err);
      CHECK (inf != NULL, "%s inference: %s", names[k], inf ? "" : err.message);
      if (!inf)
        continue;
      tt_plan_info pi;
      tt_model_plan_info (inf, &pi);
      if (batch == 1)
        CHECK (pi.laid_out_threads == 1, "%s: inference at batch 1 laid out "
            "by halves", names[k]);
      else if (pi.laid_out_threads == 2)
        CHECK (pi.pool_bytes - pi.one_thread_pool_bytes <=
            pi.one_thread_pool_bytes / 2, "%s: inference by halves %" PRIu64
            " against %" PRIu64, names[k], pi.pool_bytes,
            pi.one_thread_pool_bytes);
      if (!strcmp (names[k], "fmnist_cnn.ini"))
        CHECK ((pi.laid_out_threads == 2) == (batch > 1), "the CNN's "
            "inference at batch %u laid out for %u", batch,
            pi.laid_out_threads);
      tt_model_free (inf);
    }
    tt_model *lim = open_model (path, NULL, 2, false, p1.pool_bytes, &err);
    CHECK (lim != NULL, "%s limited: %s", names[k], lim ? "" : err.message);
    if (lim) {
      tt_model_plan_info (lim, &p2);
      CHECK (p2.laid_out_threads == 1, "%s: laid out by halves under a "
          "memory limit", names[k]);
    }
    tt_model_free (lim);
  }
}

/* The optimized INI's text, NUL-terminated (NULL: a CHECK failed) */
static char *
plan_text (tt_model * m)
{
  char *text = NULL, *z = NULL;
  size_t len = 0;
  tt_error err;
  CHECK (tt_plan_ini_text (m, &text, &len, &err) == TT_OK, "%s", err.message);
  if (text && (z = malloc (len + 1))) {
    memcpy (z, text, len);
    z[len] = '\0';
  }
  free (text);
  return z;
}

static void
test_stored_and_trained (void)
{
  char path[1200];
  snprintf (path, sizeof path, "%s/tests/models/fmnist_cnn.ini", root);
  tt_error err;
  tt_model *two = open_model (path, NULL, 2, false, 0, &err);
  tt_model *one = open_model (path, NULL, 1, false, 0, &err);
  CHECK (two && one, "%s", err.message);
  if (!two || !one) {
    tt_model_free (two);
    tt_model_free (one);
    return;
  }
  char *halves_text = plan_text (two), *any_text = plan_text (one);
  tt_model_free (two);
  tt_model_free (one);
  if (!halves_text || !any_text) {
    free (halves_text);
    free (any_text);
    return;
  }
  CHECK (strstr (halves_text, "\nthreads = 2\none_thread_pool = ") != NULL,
      "the optimized INI does not say it is laid out for two threads");
  CHECK (strstr (any_text, "\nthreads = ") == NULL, "a plan for any count "
      "names threads");

  /* both stored plans, trained on two threads: the same weights */
  tt_model *a = open_model (path, halves_text, 2, false, 0, &err);
  tt_model *b = open_model (path, any_text, 2, false, 0, &err);
  CHECK (a && b, "stored plans: %s", err.message);
  if (a && b) {
    tt_plan_info pa, pb;
    tt_model_plan_info (a, &pa);
    tt_model_plan_info (b, &pb);
    CHECK (pa.from_stored_plan && pb.from_stored_plan, "a stored plan was "
        "not used");
    CHECK (pa.laid_out_threads == 2 && pb.laid_out_threads == 1 &&
        pa.one_thread_pool_bytes == pb.pool_bytes, "stored: laid out for "
        "%u and %u", pa.laid_out_threads, pb.laid_out_threads);
    CHECK (pa.pool_bytes != pb.pool_bytes, "the two layouts are one");
    tt_test_train_steps (a, "by halves", 4, 255.0f);
    tt_test_train_steps (b, "for any count", 4, 255.0f);
    CHECK (tt_test_same_state (a, b, "by halves"),
        "two threads trained other weights by halves than for any count");
  }
  tt_model_free (a);
  tt_model_free (b);

  /* [Plan] threads: 1 or 2, else refused by name */
  char *bad = malloc (strlen (halves_text) + 8);
  if (bad) {
    char *at = strstr (halves_text, "\nthreads = 2\n");
    const size_t head = (size_t) (at - halves_text);
    memcpy (bad, halves_text, head);
    strcpy (bad + head, "\nthreads = 3\n");
    strcat (bad, at + strlen ("\nthreads = 2\n"));
    tt_model *c = open_model (path, bad, 2, false, 0, &err);
    CHECK (c == NULL && strstr (err.message, "[Plan] threads"), "threads "
        "= 3: %s", c ? "accepted" : err.message);
    tt_model_free (c);
    free (bad);
  }
  free (halves_text);
  free (any_text);
}

/* m trained 4 single steps, the layout forced to force[s] before step s
 * (0: the pool's choice) */
static void
train_forced (tt_model * m, const char *name, const int force[4])
{
  bool two;
  for (int s = 0; s < 4; s++) {
    tt_model_force_layout (m, force[s], &two);
    tt_test_train_steps (m, name, 1, 255.0f);
  }
}

static void
test_layout_switch (void)
{
  static const char *names[] = { "fmnist_cnn.ini", "resnet_bn.ini", NULL };
  static const int halves[4] = { 2, 2, 2, 2 }, single[4] = { 1, 1, 1, 1 },
      flip[4] = { 1, 2, 1, 2 };
  for (int k = 0; names[k]; k++) {
    char path[1200];
    snprintf (path, sizeof path, "%s/tests/models/%s", root, names[k]);
    tt_error err;
    tt_model *a = open_model (path, NULL, 2, false, 0, &err);
    tt_model *b = open_model (path, NULL, 2, false, 0, &err);
    tt_model *c = open_model (path, NULL, 2, false, 0, &err);
    tt_model *fresh = open_model (path, NULL, 2, false, 0, &err);
    CHECK (a && b && c && fresh, "%s: %s", names[k], err.message);
    if (!a || !b || !c || !fresh)
      goto next;
    bool two;
    tt_model_force_layout (a, 0, &two);
    tt_plan_info p;
    tt_model_plan_info (a, &p);
    printf ("%-16s two layouts: %s\n", names[k], two ? "yes" : "no");
    CHECK (two == (p.laid_out_threads == 2), "%s: a second layout %s a "
        "pool laid out for %u", names[k], two ? "with" : "without",
        p.laid_out_threads);
    if (!strcmp (names[k], "fmnist_cnn.ini"))
      CHECK (two, "the CNN on two threads has no second layout");
    if (!two)
      goto next;
    train_forced (a, "halves", halves);
    train_forced (b, "one thread's", single);
    train_forced (c, "switching", flip);
    CHECK (tt_model_force_layout (a, 0, &two) == 0, "%s: forced to the "
        "halves, the layout changed", names[k]);
    CHECK (tt_model_force_layout (b, 0, &two) == 1, "%s: forced to one "
        "thread's layout, it changed other than once", names[k]);
    CHECK (tt_model_force_layout (c, 0, &two) == 4, "%s: switched %" PRIu64
        " times in 4 steps", names[k], tt_model_force_layout (c, 0, &two));
    CHECK (tt_test_same_state (a, b, names[k]), "%s: other state in one "
        "thread's layout than by halves", names[k]);
    CHECK (tt_test_same_state (a, c, names[k]), "%s: other state switching "
        "layouts at every step", names[k]);
    /* b ended in one thread's layout: its plan is still the halves' */
    char *tb = plan_text (b), *tf = plan_text (fresh);
    CHECK (tb && tf && !strcmp (tb, tf), "%s: the optimized INI after steps "
        "in one thread's layout is not the plan by halves", names[k]);
    free (tb);
    free (tf);
  next:
    tt_model_free (a);
    tt_model_free (b);
    tt_model_free (c);
    tt_model_free (fresh);
  }
  char path[1200];
  snprintf (path, sizeof path, "%s/tests/models/fmnist_cnn.ini", root);
  tt_error err;
  tt_model *one = open_model (path, NULL, 1, false, 0, &err);
  CHECK (one != NULL, "%s", err.message);
  if (one) {
    bool two = true;
    tt_model_force_layout (one, 0, &two);
    CHECK (!two, "one thread has a second layout");
    tt_plan_info p;
    tt_model_plan_info (one, &p);
    tt_model *lim = open_model (path, NULL, 2, false, p.pool_bytes, &err);
    CHECK (lim != NULL, "limited: %s", lim ? "" : err.message);
    if (lim) {
      tt_model_force_layout (lim, 0, &two);
      CHECK (!two, "a memory limit has a second layout");
    }
    tt_model_free (lim);
  }
  tt_model_free (one);
}

int
main (int argc, char **argv)
{
  snprintf (root, sizeof root, "%s", argc > 1 ? argv[1] : ".");
  TT_TEST_RUN (test_random_sets);
  TT_TEST_RUN (test_hand_made);
  TT_TEST_RUN (test_refusals);
  TT_TEST_RUN (test_models);
  TT_TEST_RUN (test_stored_and_trained);
  TT_TEST_RUN (test_layout_switch);
  return tt_test_summary ();
}
