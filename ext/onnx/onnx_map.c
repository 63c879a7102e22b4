/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Operators onto the engine's layers: one table, operator type -> mapping
 * function. Each function checks its node (inputs that must be
 * activations or constants, attributes, shapes), adds its layer with its
 * keys and its weights in the layer's BIN layout, and gives its outputs
 * their layer and per-sample shape; or it makes its output an alias of
 * its input (Identity, an evaluation-mode Dropout, a Flatten or Reshape
 * that changes nothing, a final Softmax or Sigmoid absorbed by the loss).
 * Two patterns span two nodes: MatMul + Add (a Linear without Gemm) and
 * x * HardSigmoid (x) (HardSwish before opset 14); a constant Pad before
 * an AveragePool becomes the pooling's padding.
 */
#include "onnx_internal.h"
#include "onnx_map_rnn.h"
#include "onnx_map_ops.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LABEL(n) onnx_node_label (im, (n), label, sizeof label)

const Onnx__AttributeProto *
onnx_attr (const Onnx__NodeProto * n, const char *name)
{
  for (size_t k = 0; k < n->n_attribute; k++)
    if (n->attribute[k]->name && !strcmp (n->attribute[k]->name, name))
      return n->attribute[k];
  return NULL;
}

int64_t
onnx_attr_int (const Onnx__NodeProto * n, const char *name, int64_t def)
{
  const Onnx__AttributeProto *a = onnx_attr (n, name);
  return a && a->has_i ? a->i : def;
}

float
onnx_attr_float (const Onnx__NodeProto * n, const char *name, float def)
{
  const Onnx__AttributeProto *a = onnx_attr (n, name);
  return a && a->has_f ? a->f : def;
}

static const char *
attr_string (const Onnx__NodeProto * n, const char *name, const char *def,
    char *buf, size_t cap)
{
  const Onnx__AttributeProto *a = onnx_attr (n, name);
  if (!a || !a->has_s)
    return def;
  size_t len = a->s.len < cap - 1 ? a->s.len : cap - 1;
  memcpy (buf, a->s.data, len);
  buf[len] = '\0';
  return buf;
}

bool
onnx_attr_ints (const Onnx__NodeProto * n, const char *name, size_t count,
    int64_t def, int64_t * out)
{
  const Onnx__AttributeProto *a = onnx_attr (n, name);
  for (size_t k = 0; k < count; k++)
    out[k] = def;
  if (!a)
    return true;
  if (a->n_ints != count)
    return false;
  for (size_t k = 0; k < count; k++)
    out[k] = a->ints[k];
  return true;
}

/* ---- layers --------------------------------------------------------- */

static bool
name_taken (const onnx_import * im, const char *name)
{
  static const char *const reserved[] = { "model", "optimizer",
    "learningratescheduler", "dataset", "train_set", "valid_set", "test_set",
    "traindata", "validdata", "testdata", "labeldata", "plan"
  };
  for (size_t k = 0; k < sizeof reserved / sizeof reserved[0]; k++)
    if (!strcasecmp (name, reserved[k]))
      return true;
  for (size_t k = 0; k < im->n_layers; k++)
    if (!strcasecmp (im->layers[k].name, name))
      return true;
  return false;
}

int
onnx_layer_add (onnx_import * im, const char *base, const char *type,
    tt_error * err)
{
  if (im->n_layers == im->cap_layers) {
    size_t cap = im->cap_layers ? im->cap_layers * 2 : 32;
    onnx_layer *l = realloc (im->layers, cap * sizeof *l);
    if (!l) {
      onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
      return -1;
    }
    im->layers = l;
    im->cap_layers = cap;
  }
  onnx_layer *l = &im->layers[im->n_layers];
  memset (l, 0, sizeof *l);
  snprintf (l->type, sizeof l->type, "%s", type);
  /* the node's name, letters, digits and '_' only */
  char clean[48];
  size_t k = 0;
  for (const char *p = base ? base : ""; *p && k < 40; p++) {
    char c = isalnum ((unsigned char) *p) ? *p : '_';
    if (c == '_' && (k == 0 || clean[k - 1] == '_'))
      continue;
    clean[k++] = c;
  }
  while (k && clean[k - 1] == '_')
    k--;
  clean[k] = '\0';
  if (!k)
    snprintf (l->name, sizeof l->name, "%s", type);
  else if (isdigit ((unsigned char) clean[0]))
    snprintf (l->name, sizeof l->name, "n_%s", clean);
  else
    snprintf (l->name, sizeof l->name, "%s", clean);
  snprintf (clean, sizeof clean, "%.40s", l->name);
  for (unsigned s = 1; name_taken (im, l->name); s++)
    snprintf (l->name, sizeof l->name, "%.40s_%u", clean, s);
  return (int) im->n_layers++;
}

void
onnx_layer_key (onnx_layer * l, const char *fmt, ...)
{
  size_t len = strlen (l->keys);
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (l->keys + len, sizeof l->keys - len, fmt, ap);
  va_end (ap);
  len = strlen (l->keys);
  if (len + 1 < sizeof l->keys)
    strcat (l->keys, "\n");
}

/* ---- inputs and outputs of a node ------------------------------------ */

/* input k, an activation (not a pending Pad unless pad_ok) */
static onnx_value *
act_input (onnx_import * im, const Onnx__NodeProto * n, size_t k,
    bool pad_ok, tt_error * err)
{
  char label[256];
  onnx_value *v = onnx_node_input (im, n, k);
  if (!v) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: input %zu is missing", LABEL (n),
        k);
    return NULL;
  }
  if (v->is_const) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: input %zu ('%.200s') must be "
        "an activation, not a constant", LABEL (n), k, v->name);
    return NULL;
  }
  if (v->layer < 0) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: input %zu ('%.200s') is an "
        "output no layer gives (a second output, or one of a node mapped "
        "with another)", LABEL (n), k, v->name);
    return NULL;
  }
  if (v->batch_axis != 0) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: input %zu ('%.200s') is a "
        "recurrent layer's time-major output: supported are its Squeeze, "
        "Transpose and Gather", LABEL (n), k, v->name);
    return NULL;
  }
  if (v->padded && !pad_ok) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: its input comes from a Pad, "
        "which is supported only before an AveragePool", LABEL (n));
    return NULL;
  }
  return v;
}

/* input k, a float constant of count elements (any count when 0) */
static onnx_value *
const_input (onnx_import * im, const Onnx__NodeProto * n, size_t k,
    const char *what, size_t count, tt_error * err)
{
  char label[256];
  onnx_value *v = onnx_node_input (im, n, k);
  if (!v) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: its %s (input %zu) is missing",
        LABEL (n), what, k);
    return NULL;
  }
  if (!v->is_const || v->is_int) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: its %s ('%.200s') must be a "
        "float initializer or constant%s", LABEL (n), what, v->name,
        v->is_const ? "" : " (a computed weight is not supported)");
    return NULL;
  }
  if (count && v->count != count) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: its %s ('%.200s') has %zu "
        "elements, expected %zu", LABEL (n), what, v->name, v->count, count);
    return NULL;
  }
  return v;
}

/* output k becomes layer's, of the given shape */
static void
set_output (onnx_import * im, const Onnx__NodeProto * n, size_t k, int layer,
    int rank, const int64_t * dims)
{
  onnx_value *o = onnx_node_output (im, n, k);
  if (!o)
    return;
  o->layer = layer;
  o->rank = rank;
  o->dims[0] = ONNX_BATCH;
  for (int d = 1; d < rank; d++)
    o->dims[d] = dims[d];
}

static void
alias_output (onnx_import * im, const Onnx__NodeProto * n, const onnx_value * x)
{
  set_output (im, n, 0, x->layer, x->rank, x->dims);
}

/* a layer reading activation x */
static int
new_layer (onnx_import * im, const Onnx__NodeProto * n, const char *type,
    const onnx_value * x, tt_error * err)
{
  int l = onnx_layer_add (im, n->name, type, err);
  if (l < 0)
    return -1;
  im->layers[l].inputs[0] = x->layer;
  im->layers[l].n_inputs = 1;
  return l;
}

/* other consumers of output k than the live nodes the map absorbs */
static bool
output_unused (const onnx_import * im, const Onnx__NodeProto * n, size_t k)
{
  const onnx_value *o = onnx_node_output (im, n, k);
  return !o || o->consumers == 0;
}

/* the one live node reading value v, or -1 */
static int
sole_consumer (const onnx_import * im, const onnx_value * v)
{
  if (v->consumers != 1)
    return -1;
  for (size_t k = 0; k < im->n_order; k++) {
    const Onnx__NodeProto *c = im->proto->graph->node[im->order[k]];
    for (size_t i = 0; i < c->n_input; i++)
      if (c->input[i] && !strcmp (c->input[i], v->name))
        return im->order[k];
  }
  return -1;
}

static bool
is_final (const onnx_import * im, const Onnx__NodeProto * n)
{
  const onnx_value *o = onnx_node_output (im, n, 0);
  return o && o == &im->values[im->output];
}

/* ---- the mappings ---------------------------------------------------- */

typedef tt_status (*map_fn) (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);

static tt_status
map_fc (onnx_import * im, const Onnx__NodeProto * n, const onnx_value * x,
    const onnx_value * b, bool trans_b, float alpha, const onnx_value * c,
    float beta, tt_error * err)
{
  char label[256];
  /* over the last axis: our width (C:1:L, C:H:W), as MatMul's */
  if (x->rank < 2 || x->rank > 4)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its input has rank %d; "
        "supported are 2 to 4 (over the last axis)", LABEL (n), x->rank);
  if (b->rank != 2)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its weight '%.200s' has "
        "rank %d, expected 2", LABEL (n), b->name, b->rank);
  const int64_t in = x->dims[x->rank - 1];
  const int64_t kb = trans_b ? b->dims[1] : b->dims[0];
  const int64_t out = trans_b ? b->dims[0] : b->dims[1];
  if (kb != in)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its weight '%.200s' is "
        "[%lld, %lld]%s for an input of %lld features", LABEL (n), b->name,
        (long long) b->dims[0], (long long) b->dims[1], trans_b ?
        " (transB)" : "", (long long) in);
  if (c && c->count != (size_t) out)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its bias '%.200s' has "
        "%zu elements for %lld outputs (no other broadcast is supported)",
        LABEL (n), c->name, c->count, (long long) out);
  int l = new_layer (im, n, "fully_connected", x, err);
  if (l < 0)
    return err->status;
  onnx_layer *L = &im->layers[l];
  onnx_layer_key (L, "unit = %lld", (long long) out);
  if (!c)
    onnx_layer_key (L, "disable_bias = true");
  /* ours is [in][out] (docs/formats.md, fully_connected): transB's
   * [out][in] transposed (onnx_weights.c) */
  if (!onnx_weight_from (im, L, b, trans_b ? out : 0, in, alpha, err))
    return err->status;
  if (c && !onnx_weight_from (im, L, c, 0, 0, beta, err))
    return err->status;
  int64_t dims[4] = { ONNX_BATCH, x->dims[1], x->dims[2], x->dims[3] };
  dims[x->rank - 1] = out;
  return (set_output (im, n, 0, l, x->rank, dims), TT_OK);
}

static tt_status
map_gemm (onnx_import * im, int node, const Onnx__NodeProto * n, tt_error * err)
{
  char label[256];
  (void) node;
  if (onnx_attr_int (n, "transA", 0))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: transA = 1 is not "
        "supported (the activation must be A)", LABEL (n));
  onnx_value *x = act_input (im, n, 0, false, err);
  onnx_value *b = x ? const_input (im, n, 1, "B", 0, err) : NULL;
  if (!b)
    return err->status;
  onnx_value *c = NULL;
  if (onnx_node_input (im, n, 2) && !(c = const_input (im, n, 2, "C", 0, err)))
    return err->status;
  return map_fc (im, n, x, b, onnx_attr_int (n, "transB", 0) != 0,
      onnx_attr_float (n, "alpha", 1.0f), c, onnx_attr_float (n, "beta",
          1.0f), err);
}

/* MatMul (x, W), and an Add (., b) reading only it: one fully_connected */
static tt_status
map_matmul (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  onnx_value *b = x ? const_input (im, n, 1, "weight", 0, err) : NULL;
  if (!b)
    return err->status;
  const onnx_value *y = onnx_node_output (im, n, 0);
  int add = y ? sole_consumer (im, y) : -1;
  const onnx_value *c = NULL;
  const Onnx__NodeProto *an = add >= 0 ? im->proto->graph->node[add] : NULL;
  if (an && !strcmp (an->op_type, "Add") && an->n_input == 2) {
    const onnx_value *other = onnx_node_input (im, an,
        !strcmp (an->input[0], y->name) ? 1 : 0);
    if (other && other->is_const && !other->is_int && b->rank == 2 &&
        other->count == (size_t) b->dims[1] && other->rank <= 2) {
      c = other;
      im->absorbed[add] = true;
    }
  }
  tt_status st = map_fc (im, n, x, b, false, 1.0f, c, 1.0f, err);
  if (!st && c) {
    const onnx_value *o = onnx_node_output (im, n, 0);
    set_output (im, an, 0, o->layer, o->rank, o->dims);
  }
  return st;
}

static tt_status
map_add (onnx_import * im, int node, const Onnx__NodeProto * n, tt_error * err)
{
  char label[256];
  if (n->n_input != 2)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: expected 2 inputs",
        LABEL (n));
  const onnx_value *a = onnx_node_input (im, n, 0), *b =
      onnx_node_input (im, n, 1);
  if (!a || !b || a->is_const || b->is_const)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: an Add of a constant is "
        "supported only as the bias after a MatMul (a Linear); here both "
        "inputs must be activations (a residual connection)", LABEL (n));
  if (!(a = act_input (im, n, 0, false, err)) ||
      !(b = act_input (im, n, 1, false, err)))
    return err->status;
  bool same = a->rank == b->rank;
  for (int d = 1; same && d < a->rank; d++)
    same = a->dims[d] == b->dims[d];
  if (!same)                    /* broadcasting: `add` (onnx_map_ops.c) */
    return onnx_map_binary (im, node, n, err);
  int l = new_layer (im, n, "addition", a, err);
  if (l < 0)
    return err->status;
  im->layers[l].inputs[1] = b->layer;
  im->layers[l].n_inputs = 2;
  set_output (im, n, 0, l, a->rank, a->dims);
  return TT_OK;
}

static tt_status
map_conv (onnx_import * im, int node, const Onnx__NodeProto * n, tt_error * err)
{
  char label[256], buf[32];
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  onnx_value *w = x ? const_input (im, n, 1, "weight", 0, err) : NULL;
  if (!w)
    return err->status;
  const int r = x->rank;
  if (r != 3 && r != 4)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: input of rank %d; "
        "supported are [N, C, L] (conv1d) and [N, C, H, W] (conv2d)",
        LABEL (n), r);
  if (w->rank != r)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: weight '%.200s' of rank "
        "%d for an input of rank %d", LABEL (n), w->name, w->rank, r);
  const int sp = r - 2;         /* spatial axes */
  const int64_t c = x->dims[1], f = w->dims[0];
  const int64_t g = onnx_attr_int (n, "group", 1);
  if (g < 1 || c % g || f % g || w->dims[1] != c / g)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: group %lld with %lld "
        "input channels, weight [%lld, %lld, ...]: channels and filters "
        "must divide by the group, the weight's second dimension be "
        "channels / group", LABEL (n), (long long) g, (long long) c,
        (long long) w->dims[0], (long long) w->dims[1]);
  int64_t k[2], s[2], d[2], p[4], ks[2];
  if (!onnx_attr_ints (n, "strides", (size_t) sp, 1, s) ||
      !onnx_attr_ints (n, "dilations", (size_t) sp, 1, d) ||
      !onnx_attr_ints (n, "pads", (size_t) (2 * sp), 0, p) ||
      !onnx_attr_ints (n, "kernel_shape", (size_t) sp, 0, ks))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: strides, dilations, "
        "kernel_shape need %d values, pads %d", LABEL (n), sp, 2 * sp);
  for (int a = 0; a < sp; a++) {
    k[a] = w->dims[2 + a];
    if ((ks[a] && ks[a] != k[a]) || s[a] < 1 || d[a] < 1 || p[a] < 0 ||
        p[a + sp] < 0 || s[a] > 65536 || d[a] > 65536 || p[a] > 65536 ||
        p[a + sp] > 65536)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: kernel_shape, strides, "
          "dilations or pads out of range", LABEL (n));
  }
  const char *ap = attr_string (n, "auto_pad", "NOTSET", buf, sizeof buf);
  for (int a = 0; a < sp; a++) {
    const int64_t in = x->dims[2 + a], ext = (k[a] - 1) * d[a] + 1;
    if (!strcmp (ap, "SAME_UPPER") || !strcmp (ap, "SAME_LOWER")) {
      int64_t o = (in + s[a] - 1) / s[a];
      int64_t tot = (o - 1) * s[a] + ext - in;
      tot = tot < 0 ? 0 : tot;
      p[a] = ap[5] == 'U' ? tot / 2 : tot - tot / 2;
      p[a + sp] = tot - p[a];
    } else if (!strcmp (ap, "VALID"))
      p[a] = p[a + sp] = 0;
    else if (strcmp (ap, "NOTSET"))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: auto_pad '%s' (NOTSET, "
          "VALID, SAME_UPPER, SAME_LOWER)", LABEL (n), ap);
  }
  int64_t dims[4] = { ONNX_BATCH, f, 1, 1 };
  for (int a = 0; a < sp; a++) {
    const int64_t in = x->dims[2 + a], ext = (k[a] - 1) * d[a] + 1;
    if (in + p[a] + p[a + sp] < ext)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: a window of %lld does "
          "not fit an input of %lld padded by %lld and %lld", LABEL (n),
          (long long) ext, (long long) in, (long long) p[a],
          (long long) p[a + sp]);
    dims[2 + a] = (in + p[a] + p[a + sp] - ext) / s[a] + 1;
  }
  onnx_value *bias = NULL;
  if (onnx_node_input (im, n, 2) &&
      !(bias = const_input (im, n, 2, "bias", (size_t) f, err)))
    return err->status;
  int l = new_layer (im, n, sp == 2 ? "conv2d" : "conv1d", x, err);
  if (l < 0)
    return err->status;
  onnx_layer *L = &im->layers[l];
  onnx_layer_key (L, "filters = %lld", (long long) f);
  if (sp == 2) {
    onnx_layer_key (L, "kernel_size = %lld,%lld", (long long) k[0],
        (long long) k[1]);
    onnx_layer_key (L, "stride = %lld,%lld", (long long) s[0],
        (long long) s[1]);
    onnx_layer_key (L, "dilation = %lld,%lld", (long long) d[0],
        (long long) d[1]);
    /* ONNX: top, left, bottom, right; ours: top, bottom, left, right */
    onnx_layer_key (L, "padding = %lld,%lld,%lld,%lld", (long long) p[0],
        (long long) p[2], (long long) p[1], (long long) p[3]);
  } else {
    onnx_layer_key (L, "kernel_size = %lld", (long long) k[0]);
    onnx_layer_key (L, "stride = %lld", (long long) s[0]);
    onnx_layer_key (L, "dilation = %lld", (long long) d[0]);
    onnx_layer_key (L, "padding = %lld,%lld", (long long) p[0],
        (long long) p[1]);
  }
  if (g > 1)
    onnx_layer_key (L, "groups = %lld", (long long) g);
  if (!bias)
    onnx_layer_key (L, "disable_bias = true");
  /* PyTorch's OIHW is ours ([filters][channels/groups][kh][kw]; conv1d
   * [filters][channels/groups][1][k]) */
  if (!onnx_weight_from (im, L, w, 0, 0, 1.0f, err) ||
      (bias && !onnx_weight_from (im, L, bias, 0, 0, 1.0f, err)))
    return err->status;
  set_output (im, n, 0, l, r, dims);
  return TT_OK;
}

static tt_status
map_batchnorm (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  const size_t c = (size_t) x->dims[1];
  const onnx_value *p[4];
  static const char *const what[4] = { "scale", "B", "mean", "var" };
  for (int k = 0; k < 4; k++)
    if (!(p[k] = const_input (im, n, (size_t) k + 1, what[k], c, err)))
      return err->status;
  for (size_t o = 1; o < n->n_output; o++)
    if (!output_unused (im, n, o))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: its output %zu (the "
          "running statistics) is read by another node: not supported",
          LABEL (n), o);
  if (onnx_attr_int (n, "training_mode", 0) || n->n_output > 1)
    im->training_export = true;
  const float eps = onnx_attr_float (n, "epsilon", 1e-5f);
  const float mom = onnx_attr_float (n, "momentum", 0.9f);
  if (!(eps > 0) || !(mom >= 0 && mom <= 1))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: epsilon %g (> 0), "
        "momentum %g ([0, 1])", LABEL (n), eps, mom);
  int l = new_layer (im, n, "batch_normalization", x, err);
  if (l < 0)
    return err->status;
  onnx_layer *L = &im->layers[l];
  onnx_layer_key (L, "epsilon = %.9g", eps);
  /* ONNX's momentum is ours: running = momentum * running + (1 -
   * momentum) * batch (PyTorch's 0.1 is ONNX's 0.9) */
  onnx_layer_key (L, "momentum = %.9g", mom);
  onnx_layer_key (L, "axis = %d", x->rank == 2 ? 3 : 1);
  /* ours: moving_mean, moving_variance, gamma, beta */
  static const int order[4] = { 2, 3, 0, 1 };
  for (int k = 0; k < 4; k++)
    if (!onnx_weight_from (im, L, p[order[k]], 0, 0, 1.0f, err))
      return err->status;
  set_output (im, n, 0, l, x->rank, x->dims);
  return TT_OK;
}

static tt_status
activation (onnx_import * im, const Onnx__NodeProto * n, const char *fn,
    const onnx_value * x, tt_error * err)
{
  int l = new_layer (im, n, "activation", x, err);
  if (l < 0)
    return err->status;
  onnx_layer_key (&im->layers[l], "activation = %s", fn);
  set_output (im, n, 0, l, x->rank, x->dims);
  return TT_OK;
}

static tt_status
map_unary (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  const char *op = n->op_type;
  if (!strcmp (op, "Sigmoid") && is_final (im, n) &&
      !strcmp (im->loss, "cross_sigmoid")) {
    snprintf (im->absorbed_note, sizeof im->absorbed_note, "the final "
        "Sigmoid ('%.60s') is that layer", n->name);
    alias_output (im, n, x);
    return TT_OK;
  }
  return activation (im, n, !strcmp (op, "Relu") ? "relu" :
      !strcmp (op, "Sigmoid") ? "sigmoid" : !strcmp (op, "Tanh") ? "tanh" :
      "hard_swish", x, err);
}

static tt_status
map_softmax (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  int64_t axis = onnx_attr_int (n, "axis", im->opset >= 13 ? -1 : 1);
  if (axis < 0)
    axis += x->rank;
  if (axis != x->rank - 1)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: softmax over axis %lld "
        "of a rank-%d tensor; supported is the last axis", LABEL (n),
        (long long) onnx_attr_int (n, "axis", 0), x->rank);
  if (is_final (im, n) && !strcmp (im->loss, "cross_softmax")) {
    snprintf (im->absorbed_note, sizeof im->absorbed_note, "the final "
        "Softmax ('%.60s') is that layer", n->name);
    alias_output (im, n, x);
    return TT_OK;
  }
  return activation (im, n, "softmax", x, err);
}

static tt_status
map_clip (onnx_import * im, int node, const Onnx__NodeProto * n, tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  float lo = -INFINITY, hi = INFINITY;
  if (im->opset < 11) {
    lo = onnx_attr_float (n, "min", lo);
    hi = onnx_attr_float (n, "max", hi);
  } else {
    for (size_t k = 1; k <= 2; k++) {
      const onnx_value *v = onnx_node_input (im, n, k);
      if (!v)
        continue;
      if (!v->is_const || v->count != 1)
        return onnx_fail (im, err, TT_ERR_INVALID, "%s: its %s must be a "
            "constant scalar", LABEL (n), k == 1 ? "min" : "max");
      float b = v->is_int ? (float) v->i[0] : v->f[0];
      if (k == 1)
        lo = b;
      else
        hi = b;
    }
  }
  if (lo == 0 && hi == 6)
    return activation (im, n, "relu6", x, err);
  if (lo == 0 && hi == INFINITY)
    return activation (im, n, "relu", x, err);
  if (!isfinite (lo) || !isfinite (hi) || !(lo < hi))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: clip to [%g, %g]: "
        "supported are finite bounds min < max, or min 0 alone (relu)",
        LABEL (n), lo, hi);
  tt_status st = activation (im, n, "clip", x, err);
  if (!st) {
    onnx_layer_key (&im->layers[im->n_layers - 1], "clip_min = %.9g", lo);
    onnx_layer_key (&im->layers[im->n_layers - 1], "clip_max = %.9g", hi);
  }
  return st;
}

/* HardSigmoid; with the Mul (x, HardSigmoid (x)) after it, HardSwish */
static tt_status
map_hardsigmoid (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  const float alpha = onnx_attr_float (n, "alpha", 0.2f),
      beta = onnx_attr_float (n, "beta", 0.5f);
  if (fabsf (alpha - 1.0f / 6) > 1e-6f || fabsf (beta - 0.5f) > 1e-6f)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: alpha %g, beta %g: "
        "supported is PyTorch's Hardsigmoid (alpha 1/6, beta 0.5)",
        LABEL (n), alpha, beta);
  const onnx_value *y = onnx_node_output (im, n, 0);
  int mul = y ? sole_consumer (im, y) : -1;
  const Onnx__NodeProto *mn = mul >= 0 ? im->proto->graph->node[mul] : NULL;
  if (mn && !strcmp (mn->op_type, "Mul") && mn->n_input == 2) {
    const onnx_value *a = onnx_node_input (im, mn, 0), *b =
        onnx_node_input (im, mn, 1);
    if ((a == x && b == y) || (a == y && b == x)) {
      tt_status st = activation (im, n, "hard_swish", x, err);
      if (!st) {
        im->absorbed[mul] = true;
        set_output (im, mn, 0, (int) im->n_layers - 1, x->rank, x->dims);
      }
      return st;
    }
  }
  return activation (im, n, "hard_sigmoid", x, err);
}

static tt_status
map_pool (onnx_import * im, int node, const Onnx__NodeProto * n, tt_error * err)
{
  char label[256], buf[32];
  (void) node;
  const bool avg = !strcmp (n->op_type, "AveragePool");
  onnx_value *x = act_input (im, n, 0, avg, err);
  if (!x)
    return err->status;
  if (x->rank != 4 && x->rank != 3)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: input of rank %d; "
        "supported are [N, C, H, W] and [N, C, L]", LABEL (n), x->rank);
  for (size_t o = 1; o < n->n_output; o++)
    if (!output_unused (im, n, o))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: its indices output is "
          "read: not supported", LABEL (n));
  /* [N, C, L] is our C:1:L: a window of height 1 */
  const int sp = x->rank - 2;
  int64_t k[2] = { 1, 1 }, s[2] = { 1, 1 }, d[2] = { 1, 1 }, p[4] = { 0 };
  if (!onnx_attr (n, "kernel_shape") ||
      !onnx_attr_ints (n, "kernel_shape", (size_t) sp, 1, k + 2 - sp) ||
      !onnx_attr_ints (n, "strides", (size_t) sp, 1, s + 2 - sp) ||
      !onnx_attr_ints (n, "dilations", (size_t) sp, 1, d + 2 - sp))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: kernel_shape (required), "
        "strides, dilations need %d values, pads %d", LABEL (n), sp, 2 * sp);
  if (sp == 2 && !onnx_attr_ints (n, "pads", 4, 0, p))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: pads need 4 values",
        LABEL (n));
  int64_t p1[2];
  if (sp == 1) {
    if (!onnx_attr_ints (n, "pads", 2, 0, p1))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: pads need 2 values",
          LABEL (n));
    p[1] = p1[0];               /* left */
    p[3] = p1[1];               /* right */
  }
  const int64_t in_hw[2] = { sp == 2 ? x->dims[2] : 1, x->dims[x->rank - 1] };
  const char *ap = attr_string (n, "auto_pad", "NOTSET", buf, sizeof buf);
  if (strcmp (ap, "NOTSET") && strcmp (ap, "VALID"))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: auto_pad '%s': supported "
        "are NOTSET and VALID", LABEL (n), ap);
  if (d[0] != 1 || d[1] != 1 || onnx_attr_int (n, "storage_order", 0))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: dilations and "
        "storage_order are not supported", LABEL (n));
  bool cip = avg && onnx_attr_int (n, "count_include_pad", 0);
  if (x->padded) {
    if (p[0] || p[1] || p[2] || p[3])
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: pads of its own after "
          "a Pad: not supported", LABEL (n));
    for (int a = 0; a < 4; a++)
      p[a] = x->pads[a];
    cip = true;                 /* the Pad's zeros are counted */
  }
  const bool ceil_mode = onnx_attr_int (n, "ceil_mode", 0) != 0;
  int64_t dims[4] = { ONNX_BATCH, x->dims[1], 0, 0 };
  for (int a = 0; a < 2; a++) {
    const int64_t in = in_hw[a], lo = p[a], hi = p[a + 2];
    if (k[a] < 1 || s[a] < 1 || lo < 0 || hi < 0 || k[a] > 65536 ||
        s[a] > 65536 || lo > 65536 || hi > 65536 || in + lo + hi < k[a])
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: a window of %lld, "
          "stride %lld, does not fit an input of %lld padded by %lld and "
          "%lld", LABEL (n), (long long) k[a], (long long) s[a],
          (long long) in, (long long) lo, (long long) hi);
    int64_t span = in + lo + hi - k[a];
    int64_t o = (ceil_mode ? (span + s[a] - 1) / s[a] : span / s[a]) + 1;
    if (ceil_mode && (o - 1) * s[a] >= in + lo)
      o--;
    dims[2 + a] = o;
  }
  int l = new_layer (im, n, "pooling2d", x, err);
  if (l < 0)
    return err->status;
  onnx_layer *L = &im->layers[l];
  onnx_layer_key (L, "pooling = %s", avg ? "average" : "max");
  onnx_layer_key (L, "pool_size = %lld,%lld", (long long) k[0],
      (long long) k[1]);
  onnx_layer_key (L, "stride = %lld,%lld", (long long) s[0], (long long) s[1]);
  onnx_layer_key (L, "padding = %lld,%lld,%lld,%lld", (long long) p[0],
      (long long) p[2], (long long) p[1], (long long) p[3]);
  if (ceil_mode)
    onnx_layer_key (L, "ceil_mode = true");
  if (cip)
    onnx_layer_key (L, "count_include_pad = true");
  if (sp == 1)
    dims[2] = dims[3];          /* [N, C, L'] */
  set_output (im, n, 0, l, x->rank, dims);
  return TT_OK;
}

static tt_status
map_global_pool (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  if (x->rank != 4 && x->rank != 3)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: input of rank %d; "
        "supported are [N, C, H, W] and [N, C, L]", LABEL (n), x->rank);
  int l = new_layer (im, n, "pooling2d", x, err);
  if (l < 0)
    return err->status;
  onnx_layer_key (&im->layers[l], "pooling = %s", n->op_type[6] == 'A' ?
      "global_average" : "global_max");
  int64_t dims[4] = { ONNX_BATCH, x->dims[1], 1, 1 };
  set_output (im, n, 0, l, x->rank, dims);
  return TT_OK;
}

/* x as [N, features]: nothing for a rank-2 x, else a flatten layer */
static tt_status
flatten_to_2d (onnx_import * im, const Onnx__NodeProto * n, onnx_value * x,
    tt_error * err)
{
  int64_t feat = 1;
  for (int d = 1; d < x->rank; d++)
    feat *= x->dims[d];
  int64_t dims[2] = { ONNX_BATCH, feat };
  if (x->rank == 2) {
    set_output (im, n, 0, x->layer, 2, dims);
    return TT_OK;
  }
  int l = new_layer (im, n, "flatten", x, err);
  if (l < 0)
    return err->status;
  set_output (im, n, 0, l, 2, dims);
  return TT_OK;
}

static tt_status
map_flatten (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  int64_t axis = onnx_attr_int (n, "axis", 1);
  if (axis < 0)
    axis += x->rank;
  if (axis != 1)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld; supported is "
        "1 (keep the batch, flatten the rest)", LABEL (n),
        (long long) onnx_attr_int (n, "axis", 1));
  return flatten_to_2d (im, n, x, err);
}

static tt_status
map_reshape (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  const onnx_value *sh = onnx_node_input (im, n, 1);
  if (!sh || !sh->is_const || !sh->is_int || sh->rank != 1 ||
      sh->count < 2 || sh->count > 4)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its shape must fold to "
        "a constant of 2 to 4 integers (batch first)", LABEL (n));
  const bool allowzero = onnx_attr_int (n, "allowzero", 0) != 0;
  int64_t per = 1;
  for (int d = 1; d < x->rank; d++)
    per *= x->dims[d];
  const int64_t t0 = sh->i[0];
  if (!(t0 == ONNX_BATCH || (t0 == 0 && !allowzero) ||
          (im->export_batch > 0 && t0 == im->export_batch)))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: the target shape must "
        "keep the batch as its first dimension (x.size (0), 0 or the "
        "exported batch), found %lld", LABEL (n), (long long) t0);
  int64_t dims[4] = { ONNX_BATCH, 1, 1, 1 }, known = 1;
  int infer = -1;
  const int r = (int) sh->count;
  for (int d = 1; d < r; d++) {
    int64_t t = sh->i[d];
    if (t == 0 && !allowzero && d < x->rank)
      t = x->dims[d];
    if (t == -1 && infer < 0) {
      infer = d;
      continue;
    }
    if (t < 1 || t > (1 << 24))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: target dimension %d "
          "is %lld", LABEL (n), d, (long long) sh->i[d]);
    dims[d] = t;
    known *= t;
  }
  if (infer > 0) {
    if (per % known)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: %lld features do not "
          "divide by %lld", LABEL (n), (long long) per, (long long) known);
    dims[infer] = per / known;
    known = per;
  }
  if (known != per)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: %lld features into a "
        "shape of %lld", LABEL (n), (long long) per, (long long) known);
  if (r == 2)
    return flatten_to_2d (im, n, x, err);
  bool same = r == x->rank;
  for (int d = 1; same && d < r; d++)
    same = dims[d] == x->dims[d];
  if (same) {
    alias_output (im, n, x);
    return TT_OK;
  }
  int l = new_layer (im, n, "reshape", x, err);
  if (l < 0)
    return err->status;
  if (r == 3)
    onnx_layer_key (&im->layers[l], "target_shape = %lld:1:%lld",
        (long long) dims[1], (long long) dims[2]);
  else
    onnx_layer_key (&im->layers[l], "target_shape = %lld:%lld:%lld",
        (long long) dims[1], (long long) dims[2], (long long) dims[3]);
  set_output (im, n, 0, l, r, dims);
  return TT_OK;
}

static tt_status
map_dropout (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  if (!output_unused (im, n, 1))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its mask output is read: "
        "not supported", LABEL (n));
  float ratio = onnx_attr_float (n, "ratio", 0.5f);
  bool training = false;
  if (im->opset >= 12) {
    const onnx_value *r = onnx_node_input (im, n, 1), *t =
        onnx_node_input (im, n, 2);
    if ((r && (!r->is_const || r->count != 1)) || (t && (!t->is_const
                || t->count != 1)))
      return onnx_fail (im, err, TT_ERR_INVALID,
          "%s: ratio and " "training_mode must be constant scalars", LABEL (n));
    if (r)
      ratio = r->is_int ? (float) r->i[0] : r->f[0];
    if (t)
      training = t->is_int ? t->i[0] != 0 : t->f[0] != 0;
  } else
    training = n->n_output > 1 && im->training_export;
  if (!training) {
    alias_output (im, n, x);    /* evaluation: the identity */
    return TT_OK;
  }
  im->training_export = true;
  if (!(ratio >= 0 && ratio < 1))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: ratio %g (supported: "
        "[0, 1))", LABEL (n), ratio);
  int l = new_layer (im, n, "dropout", x, err);
  if (l < 0)
    return err->status;
  onnx_layer_key (&im->layers[l], "dropout_rate = %.9g", ratio);
  set_output (im, n, 0, l, x->rank, x->dims);
  return TT_OK;
}

/* a constant Pad, read only by an AveragePool: its padding */
static tt_status
map_pad (onnx_import * im, int node, const Onnx__NodeProto * n, tt_error * err)
{
  char label[256], buf[32];
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  const char *mode = attr_string (n, "mode", "constant", buf, sizeof buf);
  const onnx_value *pads = onnx_node_input (im, n, 1), *val =
      onnx_node_input (im, n, 2);
  const onnx_value *y = onnx_node_output (im, n, 0);
  int c = y ? sole_consumer (im, y) : -1;
  bool ok = !strcmp (mode, "constant") && x->rank == 4 && pads &&
      pads->is_const && pads->is_int && pads->count == 8 &&
      onnx_node_input (im, n, 3) == NULL && c >= 0 &&
      !strcmp (im->proto->graph->node[c]->op_type, "AveragePool");
  if (ok && val)
    ok = val->is_const && val->count == 1 &&
        (val->is_int ? val->i[0] == 0 : val->f[0] == 0);
  if (ok)
    for (int a = 0; a < 8; a++)
      ok &= pads->i[a] >= 0 && pads->i[a] <= 65536 &&
          (a % 4 >= 2 || pads->i[a] == 0);
  if (!ok)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: supported is a Pad with "
        "zeros (mode constant, constant pads on height and width only, "
        "opset 11 or later) read only by an AveragePool", LABEL (n));
  set_output (im, n, 0, x->layer, x->rank, x->dims);
  y = onnx_node_output (im, n, 0);
  onnx_value *yy = (onnx_value *) y;
  yy->padded = true;
  yy->pads[0] = pads->i[2];     /* top */
  yy->pads[1] = pads->i[3];     /* left */
  yy->pads[2] = pads->i[6];     /* bottom */
  yy->pads[3] = pads->i[7];     /* right */
  for (int d = 2; d < 4; d++)
    yy->dims[d] = x->dims[d];
  return TT_OK;
}

static tt_status
map_identity (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  (void) node;
  onnx_value *x = act_input (im, n, 0, false, err);
  if (!x)
    return err->status;
  alias_output (im, n, x);
  return TT_OK;
}

/* Transpose: the batch and time swap around a recurrent layer
 * (onnx_map_rnn.c) when it reads or feeds one, else a constant's or a
 * self-attention block's (onnx_map_tf.c) */
static tt_status
map_transpose (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  const onnx_value *x = onnx_node_input (im, n, 0), *y =
      onnx_node_output (im, n, 0);
  bool recurrent = x && !x->is_const && (x->seq || x->batch_axis);
  /* or a recurrent layer reads it (beside the shape arithmetic of its
   * initial state) */
  for (size_t k = 0; y && !recurrent && k < im->n_order; k++) {
    const Onnx__NodeProto *c = im->proto->graph->node[im->order[k]];
    if (strcmp (c->op_type, "LSTM") && strcmp (c->op_type, "GRU") &&
        strcmp (c->op_type, "RNN"))
      continue;
    for (size_t i = 0; i < c->n_input && !recurrent; i++)
      recurrent = c->input[i] && !strcmp (c->input[i], y->name);
  }
  return recurrent ? onnx_map_transpose (im, node, n, err) :
      onnx_map_tf_transpose (im, node, n, err);
}

static const struct
{
  const char *op;
  map_fn fn;
} onnx_map_table[] = {
  {"Gemm", map_gemm},
  {"MatMul", map_matmul},
  {"Add", map_add},
  {"Conv", map_conv},
  {"BatchNormalization", map_batchnorm},
  {"Relu", map_unary},
  {"Sigmoid", map_unary},
  {"Tanh", map_unary},
  {"HardSwish", map_unary},
  {"HardSigmoid", map_hardsigmoid},
  {"Clip", map_clip},
  {"Softmax", map_softmax},
  {"MaxPool", map_pool},
  {"AveragePool", map_pool},
  {"GlobalAveragePool", map_global_pool},
  {"GlobalMaxPool", map_global_pool},
  {"Flatten", map_flatten},
  {"Reshape", map_reshape},
  {"Dropout", map_dropout},
  {"Pad", map_pad},
  {"Identity", map_identity},
  /* transformer encoders (onnx_map_tf.c); Transpose: map_transpose */
  {"Transpose", map_transpose},
  {"LayerNormalization", onnx_map_tf_layernorm},
  {"ReduceMean", onnx_map_tf_reducemean},
  {"Div", onnx_map_tf_div},
  /* recurrent and embedding graphs (onnx_map_rnn.c) */
  {"LSTM", onnx_map_recurrent},
  {"GRU", onnx_map_recurrent},
  {"Squeeze", onnx_map_squeeze},
  {"Gather", onnx_map_gather},
  /* more operators on activations (onnx_map_ops.c) */
  {"ConvTranspose", onnx_map_convtranspose},
  {"Concat", onnx_map_concat},
  {"Slice", onnx_map_slice},
  {"Unsqueeze", onnx_map_unsqueeze},
  {"Resize", onnx_map_resize},
  {"Upsample", onnx_map_resize},
  {"Mul", onnx_map_binary},
  {"RNN", onnx_map_recurrent},
  {"Split", onnx_map_split},
};

const char *
onnx_supported_list (void)
{
  return "Gemm, MatMul (+ Add: a Linear), Add (of two activations), Conv "
      "(1-D, 2-D, grouped), BatchNormalization, Relu, Sigmoid, Tanh, "
      "HardSigmoid, HardSwish (or HardSigmoid + Mul), Clip, Softmax (last "
      "axis), MaxPool, AveragePool (+ a zero Pad), GlobalAveragePool, "
      "GlobalMaxPool, Flatten, Reshape, Dropout, Identity, "
      "LayerNormalization (last axis), a self-attention block of "
      "nn.MultiheadAttention (from its Transpose), ReduceMean (over tokens, "
      "or LayerNorm's decomposed form), Div (GELU's Erf form), Transpose "
      "(of a constant); on constants: "
      "Constant, Shape, Gather, Unsqueeze, Squeeze, Concat, Cast, "
      "ConstantOfShape"
      /* recurrent and embedding graphs (onnx_map_rnn.c) */
      "; LSTM, GRU (one layer, forward), Gather (an embedding lookup; a "
      "step of a sequence), Squeeze, Transpose (around an LSTM or GRU); "
      "on constants: Slice, Concat, Expand"
      /* more operators on activations (onnx_map_ops.c) */
      "; ConvTranspose (2-D), Concat, Slice (step 1), Unsqueeze, Resize "
      "and Upsample (nearest, integer scales; linear, half_pixel), Mul "
      "and Add of two activations (broadcasting), RNN (tanh, as LSTM), Split (equal parts)";
}

tt_status
onnx_map_node (onnx_import * im, int node, tt_error * err)
{
  const Onnx__NodeProto *n = im->proto->graph->node[node];
  char label[256];
  if (im->absorbed[node])
    return TT_OK;
  for (size_t k = 0; k < sizeof onnx_map_table / sizeof onnx_map_table[0]; k++)
    if (!strcmp (n->op_type, onnx_map_table[k].op))
      return onnx_map_table[k].fn (im, node, n, err);
  return onnx_fail (im, err, TT_ERR_INVALID, "%s: operator %.60s is not "
      "supported (with these inputs); supported: %s", LABEL (n), n->op_type,
      onnx_supported_list ());
}
