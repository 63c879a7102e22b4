/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The graph: values by name (a hash table over the proto's strings), every
 * node's outputs registered once, every input known (an initializer, a
 * graph input or another node's output), the nodes put in a topological
 * order (Kahn's, whatever the file's order; what is left is a cycle,
 * named), and only the nodes the graph's output depends on kept.
 */
#include "onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t
onnx_hash (const char *s)
{
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (uint8_t) * s) * 1099511628211ull;
  return h;
}

int
onnx_value_find (const onnx_import * im, const char *name)
{
  if (!im->table_cap || !name)
    return -1;
  size_t mask = im->table_cap - 1;
  for (size_t h = onnx_hash (name) & mask;; h = (h + 1) & mask) {
    int e = im->table[h];
    if (!e)
      return -1;
    if (!strcmp (im->values[e - 1].name, name))
      return e - 1;
  }
}

static bool
onnx_table_grow (onnx_import * im)
{
  size_t cap = im->table_cap ? im->table_cap * 2 : 256;
  int *t = calloc (cap, sizeof *t);
  if (!t)
    return false;
  for (size_t k = 0; k < im->n_values; k++) {
    size_t h = onnx_hash (im->values[k].name) & (cap - 1);
    while (t[h])
      h = (h + 1) & (cap - 1);
    t[h] = (int) k + 1;
  }
  free (im->table);
  im->table = t;
  im->table_cap = cap;
  return true;
}

int
onnx_value_add (onnx_import * im, const char *name, tt_error * err)
{
  if (im->n_values == im->cap_values) {
    size_t cap = im->cap_values ? im->cap_values * 2 : 64;
    onnx_value *v = realloc (im->values, cap * sizeof *v);
    if (!v) {
      onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
      return -1;
    }
    im->values = v;
    im->cap_values = cap;
  }
  if ((im->n_values + 1) * 2 > im->table_cap && !onnx_table_grow (im)) {
    onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
    return -1;
  }
  onnx_value *v = &im->values[im->n_values];
  memset (v, 0, sizeof *v);
  v->name = name;
  v->producer = -1;
  v->layer = -1;
  size_t mask = im->table_cap - 1;
  size_t h = onnx_hash (name) & mask;
  while (im->table[h])
    h = (h + 1) & mask;
  im->table[h] = (int) im->n_values + 1;
  return (int) im->n_values++;
}

tt_status
onnx_graph_order (onnx_import * im, tt_error * err)
{
  const Onnx__GraphProto *g = im->proto->graph;
  const size_t n = g->n_node;
  char label[256];
  tt_status st = TT_OK;
  for (size_t k = 0; k < n; k++) {
    const Onnx__NodeProto *nd = g->node[k];
    if (!nd->op_type || !*nd->op_type)
      return onnx_fail (im, err, TT_ERR_INVALID, "node %zu has no operator "
          "type", k);
    if (nd->domain && *nd->domain && strcmp (nd->domain, "ai.onnx"))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s is in domain "
          "'%.100s': only the default ONNX domain is supported",
          onnx_node_label (im, nd, label, sizeof label), nd->domain);
    for (size_t o = 0; o < nd->n_output; o++) {
      if (!nd->output[o] || !*nd->output[o])
        continue;
      if (onnx_value_find (im, nd->output[o]) >= 0)
        return onnx_fail (im, err, TT_ERR_INVALID, "%s: its output "
            "'%.200s' is already defined (by another node, an initializer "
            "or a graph input)", onnx_node_label (im, nd, label,
                sizeof label), nd->output[o]);
      int v = onnx_value_add (im, nd->output[o], err);
      if (v < 0)
        return err ? err->status : TT_ERR_NOMEM;
      im->values[v].producer = (int) k;
    }
  }
  /* the edges producer -> consumer (CSR by producer) */
  size_t edges = 0;
  for (size_t k = 0; k < n; k++) {
    const Onnx__NodeProto *nd = g->node[k];
    for (size_t i = 0; i < nd->n_input; i++) {
      if (!nd->input[i] || !*nd->input[i])
        continue;               /* an optional input left out */
      int v = onnx_value_find (im, nd->input[i]);
      if (v < 0)
        return onnx_fail (im, err, TT_ERR_INVALID, "%s: input '%.200s' is "
            "not produced by any node, initializer or graph input",
            onnx_node_label (im, nd, label, sizeof label), nd->input[i]);
      if (im->values[v].producer >= 0)
        edges++;
    }
  }
  int *start = calloc (n + 2, sizeof *start);
  int *adj = malloc ((edges + 1) * sizeof *adj);
  int *indeg = calloc (n + 1, sizeof *indeg);
  int *queue = malloc ((n + 1) * sizeof *queue);
  bool *live = calloc (n + 1, sizeof *live);
  im->order = malloc ((n + 1) * sizeof *im->order);
  im->absorbed = calloc (n + 1, sizeof *im->absorbed);
  if (!start || !adj || !indeg || !queue || !live || !im->order ||
      !im->absorbed) {
    st = onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (size_t k = 0; k < n; k++) {
    const Onnx__NodeProto *nd = g->node[k];
    for (size_t i = 0; i < nd->n_input; i++) {
      if (!nd->input[i] || !*nd->input[i])
        continue;
      int p = im->values[onnx_value_find (im, nd->input[i])].producer;
      if (p >= 0) {
        start[p + 1]++;
        indeg[k]++;
      }
    }
  }
  for (size_t k = 0; k < n; k++)
    start[k + 1] += start[k];
  {
    int *fill = queue;          /* borrowed before the search */
    memcpy (fill, start, n * sizeof *fill);
    for (size_t k = 0; k < n; k++) {
      const Onnx__NodeProto *nd = g->node[k];
      for (size_t i = 0; i < nd->n_input; i++) {
        if (!nd->input[i] || !*nd->input[i])
          continue;
        int p = im->values[onnx_value_find (im, nd->input[i])].producer;
        if (p >= 0)
          adj[fill[p]++] = (int) k;
      }
    }
  }
  size_t head = 0, tail = 0, sorted = 0;
  for (size_t k = 0; k < n; k++)
    if (!indeg[k])
      queue[tail++] = (int) k;
  int *topo = im->order;
  while (head < tail) {
    int k = queue[head++];
    topo[sorted++] = k;
    for (int e = start[k]; e < start[k + 1]; e++)
      if (--indeg[adj[e]] == 0)
        queue[tail++] = adj[e];
  }
  if (sorted < n) {
    char names[600] = "";
    size_t shown = 0, len = 0;
    for (size_t k = 0; k < n && shown < 4; k++)
      if (indeg[k]) {
        const Onnx__NodeProto *nd = g->node[k];
        int w = snprintf (names + len, sizeof names - len, "%s'%.100s' (%s)",
            shown ? ", " : "", nd->name && *nd->name ? nd->name :
            "(unnamed)", nd->op_type);
        if (w > 0 && len + (size_t) w < sizeof names)
          len += (size_t) w;
        shown++;
      }
    st = onnx_fail (im, err, TT_ERR_INVALID, "the graph has a cycle: %zu "
        "nodes are on it or wait for it, among them %s", n - sorted, names);
    goto done;
  }
  /* what the output depends on */
  const char *out = g->output[0]->name;
  im->output = onnx_value_find (im, out);
  if (im->output < 0) {
    st = onnx_fail (im, err, TT_ERR_INVALID, "the graph's output '%.200s' "
        "is not produced by any node or graph input", out ? out : "");
    goto done;
  }
  if (im->values[im->output].is_const) {
    st = onnx_fail (im, err, TT_ERR_INVALID, "the graph's output '%.200s' "
        "is a constant", out);
    goto done;
  }
  head = tail = 0;
  if (im->values[im->output].producer >= 0) {
    queue[tail++] = im->values[im->output].producer;
    live[queue[0]] = true;
  }
  while (head < tail) {
    const Onnx__NodeProto *nd = g->node[queue[head++]];
    for (size_t i = 0; i < nd->n_input; i++) {
      if (!nd->input[i] || !*nd->input[i])
        continue;
      int p = im->values[onnx_value_find (im, nd->input[i])].producer;
      if (p >= 0 && !live[p]) {
        live[p] = true;
        queue[tail++] = p;
      }
    }
  }
  im->n_order = 0;
  for (size_t k = 0; k < n; k++)
    if (live[topo[k]])
      im->order[im->n_order++] = topo[k];
  for (size_t k = 0; k < im->n_order; k++) {
    const Onnx__NodeProto *nd = g->node[im->order[k]];
    for (size_t i = 0; i < nd->n_input; i++)
      if (nd->input[i] && *nd->input[i])
        im->values[onnx_value_find (im, nd->input[i])].consumers++;
  }
  im->values[im->output].consumers++;   /* the loss reads it */
done:
  free (start);
  free (adj);
  free (indeg);
  free (queue);
  free (live);
  return st;
}

onnx_value *
onnx_node_input (const onnx_import * im, const Onnx__NodeProto * n, size_t k)
{
  if (k >= n->n_input || !n->input[k] || !*n->input[k])
    return NULL;
  return &im->values[onnx_value_find (im, n->input[k])];
}

onnx_value *
onnx_node_output (const onnx_import * im, const Onnx__NodeProto * n, size_t k)
{
  if (k >= n->n_output || !n->output[k] || !*n->output[k])
    return NULL;
  return &im->values[onnx_value_find (im, n->output[k])];
}
