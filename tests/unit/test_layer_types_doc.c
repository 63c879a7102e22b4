/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * docs/layer-types.md's table is the registry's: one row per
 * registered type (layers/layers.c), in its order, naming the keys the
 * type accepts beyond the universal ones and whether it takes the weight
 * keys. The rows sit between two marker lines; --print writes them, so
 * that after adding a layer the table is regenerated, not typed:
 *
 *   build/tests/test_layer_types_doc --print
 *
 *   test_layer_types_doc SOURCE_ROOT     checks docs/layer-types.md
 */
#include "tt_layer.h"
#include "tt_test.h"

#define MARK_BEGIN "<!-- layer types: build/tests/test_layer_types_doc --print -->"
#define MARK_END "<!-- end of layer types -->"

/* The row of one type into buf */
static void
row_of (const tt_layer_ops * ops, char *buf, size_t size)
{
  size_t n = (size_t) snprintf (buf, size, "| `%s` | ", ops->type);
  bool any = false;
  for (const char *const *k = ops->keys; k && *k && n < size; k++) {
    n += (size_t) snprintf (buf + n, size - n, "%s`%s`", any ? ", " : "", *k);
    any = true;
  }
  if (n < size)
    snprintf (buf + n, size - n, "%s | %s |", any ? "" : "none",
        ops->has_weights ? "yes" : "no");
}

int
main (int argc, char **argv)
{
  char row[4096];
  if (argc == 2 && !strcmp (argv[1], "--print")) {
    printf ("%s\n| type | its own keys | weight keys |\n|---|---|---|\n",
        MARK_BEGIN);
    for (uint32_t i = 0; i < TT_LAYER_TYPES; i++) {
      row_of (tt_layer_ops_at (i), row, sizeof row);
      printf ("%s\n", row);
    }
    printf ("%s\n", MARK_END);
    return 0;
  }
  if (argc != 2) {
    fprintf (stderr, "usage: test_layer_types_doc SOURCE_ROOT | --print\n");
    return 2;
  }
  char path[2048];
  snprintf (path, sizeof path, "%s/docs/layer-types.md", argv[1]);
  size_t len = 0;
  char *text = tt_test_read_file (path, &len);
  CHECK (text != NULL, "%s: not readable", path);
  if (!text)
    return tt_test_summary ();
  const char *begin = strstr (text, MARK_BEGIN);
  const char *end = begin ? strstr (begin, MARK_END) : NULL;
  CHECK (begin && end, "docs/layer-types.md: no table between '%s' and '%s'",
      MARK_BEGIN, MARK_END);
  if (begin && end) {
    const size_t span = (size_t) (end - begin);
    uint32_t rows = 0;
    for (const char *p = begin; p && p < end; p = strstr (p + 1, "\n| `"))
      rows += p != begin;
    CHECK (rows == TT_LAYER_TYPES, "docs/layer-types.md: %u layer rows, "
        "%d registered types (regenerate with --print)", rows, TT_LAYER_TYPES);
    for (uint32_t i = 0; i < TT_LAYER_TYPES; i++) {
      const tt_layer_ops *ops = tt_layer_ops_at (i);
      row_of (ops, row, sizeof row);
      const char *at = strstr (begin, row);
      const bool inside = at && (size_t) (at - begin) < span;
      CHECK (inside, "docs/layer-types.md: no row '%s' (regenerate with "
          "--print)", row);
    }
  }
  free (text);
  return tt_test_summary ();
}
