/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Transformer encoders as torch.onnx.export writes nn.TransformerEncoderLayer
 * (batch_first): the self-attention block of nn.MultiheadAttention, from
 * its Transpose to [T, N, D] to the Transpose back, becomes one
 * multi_head_attention between two reshape views (the block's 4-D head
 * split mixes the batch into its shapes: no generic mapping expresses it);
 * LayerNormalization (opset 17) and its decomposed form (ReduceMean, Sub,
 * Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) become layer_normalization;
 * GELU's Erf form (Div, Erf, Add, Mul, Mul) activation gelu; ReduceMean
 * over the tokens reduce_mean; a Transpose of a constant is folded.
 *
 * Our [N, T, D] is T:1:D (the importer's C:1:L for rank 3): fully_connected
 * and layer_normalization work on the width, reduce_mean over the tokens
 * is axis 1; multi_head_attention reads 1:T:D, hence the two views.
 */
#include "onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL(n) onnx_node_label (im, (n), label, sizeof label)
#define TF_MAX_BLOCK 512

/* ---- small helpers (the importer's own are private to onnx_map.c) --- */

static onnx_value *
tf_val (const onnx_import * im, const char *name)
{
  int k = name && *name ? onnx_value_find (im, name) : -1;
  return k < 0 ? NULL : &im->values[k];
}

static const Onnx__NodeProto *
tf_node (const onnx_import * im, int k)
{
  return k < 0 ? NULL : im->proto->graph->node[k];
}

static const char *
tf_out (const Onnx__NodeProto * n, size_t k)
{
  return k < n->n_output && n->output[k] && *n->output[k] ? n->output[k] : "";
}

static const char *
tf_in (const Onnx__NodeProto * n, size_t k)
{
  return k < n->n_input && n->input[k] && *n->input[k] ? n->input[k] : "";
}

/* the live nodes reading value name, at most max of them; their count */
static int
tf_consumers (const onnx_import * im, const char *name, int *out, int max)
{
  int c = 0;
  if (!*name)
    return 0;
  for (size_t k = 0; k < im->n_order; k++) {
    const Onnx__NodeProto *n = tf_node (im, im->order[k]);
    for (size_t i = 0; i < n->n_input; i++)
      if (n->input[i] && !strcmp (n->input[i], name)) {
        if (c < max)
          out[c] = im->order[k];
        c++;
        break;
      }
  }
  return c;
}

/* the one live node reading name, when it is an op node; else -1 */
static int
tf_sole (const onnx_import * im, const char *name, const char *op)
{
  int c;
  if (tf_consumers (im, name, &c, 1) != 1)
    return -1;
  return strcmp (tf_node (im, c)->op_type, op) ? -1 : c;
}

/* value name as a constant, folding the Constant or Identity giving it
 * now if it is not yet (the node is then absorbed); NULL if it is none */
static const onnx_value *
tf_const (onnx_import * im, const char *name, tt_error * err)
{
  onnx_value *v = tf_val (im, name);
  if (!v)
    return NULL;
  for (int depth = 0; !v->is_const && v->producer >= 0 && depth < 8; depth++) {
    const Onnx__NodeProto *p = tf_node (im, v->producer);
    if (strcmp (p->op_type, "Constant") && strcmp (p->op_type, "Identity"))
      return NULL;
    if (!strcmp (p->op_type, "Identity") && !tf_const (im, tf_in (p, 0), err))
      return NULL;
    bool done = false;
    if (onnx_fold_node (im, v->producer, &done, err) || !done)
      return NULL;
    im->absorbed[v->producer] = true;
  }
  return v->is_const ? v : NULL;
}

static bool
tf_scalar (onnx_import * im, const char *name, float *f, tt_error * err)
{
  const onnx_value *v = tf_const (im, name, err);
  if (!v || v->count != 1)
    return false;
  *f = v->is_int ? (float) v->i[0] : v->f[0];
  return true;
}

/* the other input of a two-input node than value name; NULL if neither */
static const char *
tf_other (const Onnx__NodeProto * n, const char *name)
{
  if (n->n_input != 2)
    return NULL;
  if (!strcmp (tf_in (n, 0), name))
    return tf_in (n, 1);
  if (!strcmp (tf_in (n, 1), name))
    return tf_in (n, 0);
  return NULL;
}

static bool
tf_perm_is (const Onnx__NodeProto * n, int count, const int64_t * p)
{
  const Onnx__AttributeProto *a = onnx_attr (n, "perm");
  if (!a || a->n_ints != (size_t) count)
    return false;
  for (int k = 0; k < count; k++)
    if (a->ints[k] != p[k])
      return false;
  return true;
}

/* a layer of type reading layer `in`; -1 on failure */
static int
tf_layer (onnx_import * im, const char *base, const char *type, int in,
    tt_error * err)
{
  int l = onnx_layer_add (im, base, type, err);
  if (l < 0)
    return -1;
  im->layers[l].inputs[0] = in;
  im->layers[l].n_inputs = 1;
  return l;
}

static void
tf_set (onnx_import * im, const char *name, int layer, int rank,
    const int64_t * dims)
{
  onnx_value *o = tf_val (im, name);
  if (!o)
    return;
  o->layer = layer;
  o->rank = rank;
  o->dims[0] = ONNX_BATCH;
  for (int d = 1; d < rank; d++)
    o->dims[d] = dims[d];
}

static onnx_value *
tf_act (onnx_import * im, const Onnx__NodeProto * n, tt_error * err)
{
  char label[256];
  onnx_value *x = tf_val (im, tf_in (n, 0));
  if (!x || x->is_const || x->layer < 0 || x->padded) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: its input 0 must be an "
        "activation a layer gives", LABEL (n));
    return NULL;
  }
  if (x->rank < 2 || x->rank > 4) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: input of rank %d; supported "
        "are 2 to 4", LABEL (n), x->rank);
    return NULL;
  }
  return x;
}

/* ---- layer normalization --------------------------------------------- */

/* layer_normalization over the last axis (our width) of x; gamma and
 * beta of D values each (NULL: ones, zeros); output value out */
static tt_status
tf_emit_layernorm (onnx_import * im, const char *base, const onnx_value * x,
    const onnx_value * gamma, const onnx_value * beta, float eps,
    const char *out, tt_error * err)
{
  const size_t d = (size_t) x->dims[x->rank - 1];
  int l = tf_layer (im, base, "layer_normalization", x->layer, err);
  if (l < 0)
    return err->status;
  onnx_layer_key (&im->layers[l], "axis = 3");
  onnx_layer_key (&im->layers[l], "epsilon = %.9g", eps);
  float *g = onnx_weight_new (im, &im->layers[l], d, err), *b =
      g ? onnx_weight_new (im, &im->layers[l], d, err) : NULL;
  if (!b)
    return err->status;
  for (size_t k = 0; k < d; k++) {
    g[k] = gamma ? gamma->f[k] : 1.0f;
    b[k] = beta ? beta->f[k] : 0.0f;
  }
  tf_set (im, out, l, x->rank, x->dims);
  return TT_OK;
}

static bool
tf_float_count (const onnx_value * v, size_t count)
{
  return v && !v->is_int && v->count == count;
}

tt_status
onnx_map_tf_layernorm (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = tf_act (im, n, err);
  if (!x)
    return err->status;
  int64_t axis = onnx_attr_int (n, "axis", -1);
  if (axis < 0)
    axis += x->rank;
  if (axis != x->rank - 1)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld; supported is "
        "the last axis (-1)", LABEL (n), (long long) onnx_attr_int (n, "axis",
            -1));
  const size_t d = (size_t) x->dims[x->rank - 1];
  const onnx_value *g = tf_const (im, tf_in (n, 1), err);
  const onnx_value *b = *tf_in (n, 2) ? tf_const (im, tf_in (n, 2), err) : NULL;
  if (!tf_float_count (g, d) || (*tf_in (n, 2) && !tf_float_count (b, d)))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: scale and bias must be "
        "float constants of %zu values (the last axis)", LABEL (n), d);
  for (size_t o = 1; o < n->n_output; o++) {
    int c;
    if (tf_consumers (im, tf_out (n, o), &c, 1))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: its mean or inverse "
          "deviation output is read: not supported", LABEL (n));
  }
  return tf_emit_layernorm (im, n->name, x, g, b, onnx_attr_float (n,
          "epsilon", 1e-5f), tf_out (n, 0), err);
}

/* the reduced axes of a ReduceMean: true when they are exactly {axis} */
static bool
tf_reduces (onnx_import * im, const Onnx__NodeProto * n, int rank, int axis,
    tt_error * err)
{
  const Onnx__AttributeProto *a = onnx_attr (n, "axes");
  const onnx_value *ax = *tf_in (n, 1) ? tf_const (im, tf_in (n, 1), err) :
      NULL;
  int64_t v;
  if (a && a->n_ints == 1)
    v = a->ints[0];
  else if (ax && ax->is_int && ax->count == 1)
    v = ax->i[0];
  else
    return false;
  return (v < 0 ? v + rank : v) == axis;
}

/* ReduceMean (x) -> Sub (x, .) -> Pow (., 2) -> ReduceMean -> Add (., eps)
 * -> Sqrt -> Div (sub, .) [-> Mul (., gamma) [-> Add (., beta)]]: the
 * nodes absorbed in k[], their count; 0 when it is not that */
static int
tf_decomposed_ln (onnx_import * im, const Onnx__NodeProto * n,
    const onnx_value * x, int *k, const onnx_value ** gamma,
    const onnx_value ** beta, float *eps, const char **out, tt_error * err)
{
  const int last = x->rank - 1;
  const size_t d = (size_t) x->dims[last];
  int c[4], m = 0;
  if (!tf_reduces (im, n, x->rank, last, err) ||
      !onnx_attr_int (n, "keepdims", 1))
    return 0;
  int sub = tf_sole (im, tf_out (n, 0), "Sub");
  if (sub < 0 || strcmp (tf_in (tf_node (im, sub), 0), x->name))
    return 0;
  k[m++] = sub;
  const char *s = tf_out (tf_node (im, sub), 0);
  if (tf_consumers (im, s, c, 4) != 2)
    return 0;
  int pw = !strcmp (tf_node (im, c[0])->op_type, "Pow") ? c[0] : c[1];
  int dv = pw == c[0] ? c[1] : c[0];
  float two, e;
  const Onnx__NodeProto *p = tf_node (im, pw), *q = tf_node (im, dv);
  if (strcmp (p->op_type, "Pow") || strcmp (tf_in (p, 0), s) ||
      !tf_scalar (im, tf_in (p, 1), &two, err) || two != 2.0f ||
      strcmp (q->op_type, "Div") || strcmp (tf_in (q, 0), s))
    return 0;
  k[m++] = pw;
  int r2 = tf_sole (im, tf_out (p, 0), "ReduceMean");
  if (r2 < 0 || !tf_reduces (im, tf_node (im, r2), x->rank, last, err) ||
      !onnx_attr_int (tf_node (im, r2), "keepdims", 1))
    return 0;
  k[m++] = r2;
  int ad = tf_sole (im, tf_out (tf_node (im, r2), 0), "Add");
  const char *eo = ad < 0 ? NULL : tf_other (tf_node (im, ad),
      tf_out (tf_node (im, r2), 0));
  if (!eo || !tf_scalar (im, eo, &e, err) || !(e > 0))
    return 0;
  k[m++] = ad;
  int sq = tf_sole (im, tf_out (tf_node (im, ad), 0), "Sqrt");
  if (sq < 0 || tf_sole (im, tf_out (tf_node (im, sq), 0), "Div") != dv ||
      strcmp (tf_in (q, 1), tf_out (tf_node (im, sq), 0)))
    return 0;
  k[m++] = sq;
  k[m++] = dv;
  *eps = e;
  *gamma = *beta = NULL;
  *out = tf_out (q, 0);
  int mu = tf_sole (im, *out, "Mul");
  const char *go = mu < 0 ? NULL : tf_other (tf_node (im, mu), *out);
  const onnx_value *g = go ? tf_const (im, go, err) : NULL;
  if (!tf_float_count (g, d))
    return m;
  k[m++] = mu;
  *gamma = g;
  *out = tf_out (tf_node (im, mu), 0);
  int ab = tf_sole (im, *out, "Add");
  const char *bo = ab < 0 ? NULL : tf_other (tf_node (im, ab), *out);
  const onnx_value *b = bo ? tf_const (im, bo, err) : NULL;
  if (!tf_float_count (b, d))
    return m;
  k[m++] = ab;
  *beta = b;
  *out = tf_out (tf_node (im, ab), 0);
  return m;
}

tt_status
onnx_map_tf_reducemean (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = tf_act (im, n, err);
  if (!x)
    return err->status;
  int k[10];
  const onnx_value *g, *b;
  float eps;
  const char *out;
  int m = tf_decomposed_ln (im, n, x, k, &g, &b, &eps, &out, err);
  if (m) {
    tt_status st = tf_emit_layernorm (im, n->name, x, g, b, eps, out, err);
    for (int a = 0; !st && a < m; a++)
      im->absorbed[k[a]] = true;
    return st;
  }
  /* the mean over the tokens of [N, T, D] (our T:1:D): axis 1 */
  if (x->rank != 3 || !tf_reduces (im, n, 3, 1, err))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: supported are the mean "
        "over axis 1 of [N, T, D] (the tokens) and LayerNorm's decomposed "
        "form (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add "
        "over the last axis)", LABEL (n));
  int l = tf_layer (im, n->name, "reduce_mean", x->layer, err);
  if (l < 0)
    return err->status;
  onnx_layer_key (&im->layers[l], "axis = 1");
  int64_t dims[3] = { ONNX_BATCH, 1, x->dims[2] };
  if (onnx_attr_int (n, "keepdims", 1))
    tf_set (im, tf_out (n, 0), l, 3, dims);
  else {
    dims[1] = x->dims[2];
    tf_set (im, tf_out (n, 0), l, 2, dims);
  }
  return TT_OK;
}

/* ---- GELU: Div (x, sqrt 2) -> Erf -> Add (., 1) -> Mul (x, .) ->
 * Mul (., 0.5) ------------------------------------------------------- */

tt_status
onnx_map_tf_div (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = tf_act (im, n, err);
  if (!x)
    return err->status;
  float c, one, half;
  int erf = tf_sole (im, tf_out (n, 0), "Erf");
  int add = erf < 0 ? -1 : tf_sole (im, tf_out (tf_node (im, erf), 0), "Add");
  const char *o1 = add < 0 ? NULL : tf_other (tf_node (im, add),
      tf_out (tf_node (im, erf), 0));
  int mul = add < 0 ? -1 : tf_sole (im, tf_out (tf_node (im, add), 0), "Mul");
  const char *o2 = mul < 0 ? NULL : tf_other (tf_node (im, mul),
      tf_out (tf_node (im, add), 0));
  int half_mul = mul < 0 ? -1 : tf_sole (im, tf_out (tf_node (im, mul), 0),
      "Mul");
  const char *o3 = half_mul < 0 ? NULL : tf_other (tf_node (im, half_mul),
      tf_out (tf_node (im, mul), 0));
  if (!tf_scalar (im, tf_in (n, 1), &c, err) || fabsf (c - sqrtf (2.0f)) >
      1e-5f || !o1 || !tf_scalar (im, o1, &one, err) || one != 1.0f ||
      !o2 || strcmp (o2, x->name) || !o3 || !tf_scalar (im, o3, &half, err)
      || half != 0.5f)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: Div is supported only "
        "as the start of GELU's Erf form, Div (x, sqrt 2) -> Erf -> Add 1 -> "
        "Mul x -> Mul 0.5 (and inside a self-attention block)", LABEL (n));
  int l = tf_layer (im, n->name, "activation", x->layer, err);
  if (l < 0)
    return err->status;
  onnx_layer_key (&im->layers[l], "activation = gelu");
  im->absorbed[erf] = im->absorbed[add] = im->absorbed[mul] =
      im->absorbed[half_mul] = true;
  tf_set (im, tf_out (tf_node (im, half_mul), 0), l, x->rank, x->dims);
  return TT_OK;
}

/* ---- self-attention -------------------------------------------------- */

/* a [rows][cols] constant, or a Transpose (perm 1,0) of one: *trans */
static const onnx_value *
tf_matrix (onnx_import * im, const char *name, bool *trans, tt_error * err)
{
  const onnx_value *v = tf_const (im, name, err);
  *trans = false;
  if (!v) {
    const onnx_value *t = tf_val (im, name);
    const Onnx__NodeProto *p = t ? tf_node (im, t->producer) : NULL;
    static const int64_t p10[2] = { 1, 0 };
    if (!p || strcmp (p->op_type, "Transpose") || !tf_perm_is (p, 2, p10))
      return NULL;
    v = tf_const (im, tf_in (p, 0), err);
    *trans = true;
  }
  return v && !v->is_int && v->rank == 2 ? v : NULL;
}

/* element [i][o] of the matrix as x @ M reads it */
static float
tf_at (const onnx_value * m, bool trans, int64_t i, int64_t o)
{
  return trans ? m->f[o * m->dims[1] + i] : m->f[i * m->dims[1] + o];
}

typedef struct
{
  const onnx_value *w, *b, *ow, *ob;    /* in_proj, out_proj */
  bool wt, owt;                 /* as stored: [out][in] */
  int heads;
  float dropout;
  int end;                      /* the last node (Transpose back) */
} tf_attention;

/* the nodes of the block: from the first Transpose's output forward,
 * stopping at the end; false when it reaches the graph's output, an
 * operator foreign to the block, or too many nodes */
static bool
tf_block (onnx_import * im, int start, int end, int *k, int *m)
{
  static const char *const ops[] = { "MatMul", "Add", "Shape", "Gather",
    "Div", "Mul", "Slice", "Reshape", "Transpose", "Softmax", "Dropout",
    "Gemm", "Unsqueeze", "Squeeze", "Concat", "Cast", "Sub", "Identity",
    "Split", "Floor", "Sqrt"
  };
  *m = 0;
  k[(*m)++] = start;
  for (int at = 0; at < *m; at++) {
    if (k[at] == end)
      continue;
    const Onnx__NodeProto *n = tf_node (im, k[at]);
    for (size_t o = 0; o < n->n_output; o++) {
      int c[16], nc = tf_consumers (im, tf_out (n, o), c, 16);
      const onnx_value *v = tf_val (im, tf_out (n, o));
      if (nc > 16 || (v && v == &im->values[im->output]))
        return false;
      for (int j = 0; j < nc; j++) {
        bool seen = false, known = false;
        for (int s = 0; s < *m && !seen; s++)
          seen = k[s] == c[j];
        if (seen)
          continue;
        for (size_t s = 0; s < sizeof ops / sizeof ops[0]; s++)
          known |= !strcmp (tf_node (im, c[j])->op_type, ops[s]);
        if (!known || *m == TF_MAX_BLOCK)
          return false;
        k[(*m)++] = c[j];
      }
    }
  }
  for (int s = 0; s < *m; s++)
    if (k[s] == end)
      return true;
  return false;
}

/* recognizes the block after Transpose n of x; a message in why if not */
static bool
tf_attention_find (onnx_import * im, const Onnx__NodeProto * t0,
    const onnx_value * x, tf_attention * a, const char **why, tt_error * err)
{
  static const int64_t p102[3] = { 1, 0, 2 };
  const int64_t dm = x->dims[2];
  memset (a, 0, sizeof *a);
  *why = "its input projection (MatMul by in_proj_weight, Add of "
      "in_proj_bias) is not there";
  int mm = tf_sole (im, tf_out (t0, 0), "MatMul");
  if (mm < 0 || strcmp (tf_in (tf_node (im, mm), 0), tf_out (t0, 0)))
    return false;
  a->w = tf_matrix (im, tf_in (tf_node (im, mm), 1), &a->wt, err);
  int ad = tf_sole (im, tf_out (tf_node (im, mm), 0), "Add");
  const char *bo = ad < 0 ? NULL : tf_other (tf_node (im, ad),
      tf_out (tf_node (im, mm), 0));
  a->b = bo ? tf_const (im, bo, err) : NULL;
  if (!a->w || (a->wt ? a->w->dims[1] : a->w->dims[0]) != dm ||
      (a->wt ? a->w->dims[0] : a->w->dims[1]) != 3 * dm ||
      !tf_float_count (a->b, (size_t) (3 * dm)))
    return false;
  /* the one Softmax reached before any other */
  int k[TF_MAX_BLOCK], m = 0, soft = -1;
  k[m++] = ad;
  for (int at = 0; at < m && soft < 0; at++) {
    const Onnx__NodeProto *n = tf_node (im, k[at]);
    int c[16], nc = tf_consumers (im, tf_out (n, 0), c, 16);
    for (int j = 0; j < nc && j < 16 && m < TF_MAX_BLOCK; j++) {
      if (!strcmp (tf_node (im, c[j])->op_type, "Softmax"))
        soft = c[j];
      k[m++] = c[j];
    }
  }
  *why = "no Softmax of the scores follows its projection";
  if (soft < 0)
    return false;
  const Onnx__NodeProto *sn = tf_node (im, soft);
  int64_t sax = onnx_attr_int (sn, "axis", -1);
  const onnx_value *sc = tf_val (im, tf_in (sn, 0));
  const Onnx__NodeProto *qk = sc ? tf_node (im, sc->producer) : NULL;
  *why = "the Softmax does not read the product of the scaled queries and "
      "the keys directly (an attention mask is not supported)";
  if (!qk || strcmp (qk->op_type, "MatMul") || (sax != -1 && sax != 2))
    return false;
  const onnx_value *qs = tf_val (im, tf_in (qk, 0));
  const Onnx__NodeProto *sq = qs ? tf_node (im, qs->producer) : NULL;
  float scale;
  *why = "the queries are not scaled by a constant (Div or Mul)";
  if (!sq || (strcmp (sq->op_type, "Div") && strcmp (sq->op_type, "Mul")) ||
      !tf_scalar (im, tf_in (sq, 1), &scale, err) || !(scale > 0))
    return false;
  double kd = sq->op_type[0] == 'D' ? (double) scale * scale :
      1.0 / ((double) scale * scale);
  int64_t d = (int64_t) llround (kd);
  *why = "its scale is not 1/sqrt of a head width dividing the model's";
  if (d < 1 || d > dm || dm % d || fabs (kd - (double) d) > 1e-3 * (double) d)
    return false;
  a->heads = (int) (dm / d);
  /* Softmax [-> Dropout] -> MatMul (., v) -> Transpose -> Reshape ->
   * Gemm (out_proj) -> Reshape -> Transpose */
  const char *cur = tf_out (sn, 0);
  int c;
  *why = "the attention weights are not multiplied by the values";
  if (tf_consumers (im, cur, &c, 1) == 1 &&
      !strcmp (tf_node (im, c)->op_type, "Dropout")) {
    const Onnx__NodeProto *dn = tf_node (im, c);
    float ratio = onnx_attr_float (dn, "ratio", 0.5f), train = 0;
    if (*tf_in (dn, 1) && !tf_scalar (im, tf_in (dn, 1), &ratio, err))
      return false;
    if (*tf_in (dn, 2) && !tf_scalar (im, tf_in (dn, 2), &train, err))
      return false;
    int mc;
    if (tf_consumers (im, tf_out (dn, 1), &mc, 1) || !(ratio >= 0) ||
        !(ratio < 1))
      return false;
    a->dropout = train != 0 ? ratio : 0;
    cur = tf_out (dn, 0);
  }
  int av = tf_sole (im, cur, "MatMul");
  if (av < 0 || strcmp (tf_in (tf_node (im, av), 0), cur))
    return false;
  *why = "the heads are not joined and projected by out_proj (Transpose, "
      "Reshape, Gemm, Reshape, Transpose)";
  int tr = tf_sole (im, tf_out (tf_node (im, av), 0), "Transpose");
  int r1 = tr < 0 ? -1 : tf_sole (im, tf_out (tf_node (im, tr), 0),
      "Reshape");
  int gm = r1 < 0 ? -1 : tf_sole (im, tf_out (tf_node (im, r1), 0), "Gemm");
  int r2 = gm < 0 ? -1 : tf_sole (im, tf_out (tf_node (im, gm), 0),
      "Reshape");
  int end = r2 < 0 ? -1 : tf_sole (im, tf_out (tf_node (im, r2), 0),
      "Transpose");
  if (end < 0 || !tf_perm_is (tf_node (im, tr), 3, p102) ||
      !tf_perm_is (tf_node (im, end), 3, p102))
    return false;
  const Onnx__NodeProto *g = tf_node (im, gm);
  if (onnx_attr_int (g, "transA", 0) || onnx_attr_float (g, "alpha", 1) != 1
      || onnx_attr_float (g, "beta", 1) != 1)
    return false;
  a->ow = tf_const (im, tf_in (g, 1), err);
  a->owt = onnx_attr_int (g, "transB", 0) != 0;
  a->ob = *tf_in (g, 2) ? tf_const (im, tf_in (g, 2), err) : NULL;
  if (!a->ow || a->ow->is_int || a->ow->rank != 2 || a->ow->dims[0] != dm ||
      a->ow->dims[1] != dm || !tf_float_count (a->ob, (size_t) dm))
    return false;
  a->end = end;
  return true;
}

static tt_status
tf_attention_emit (onnx_import * im, const Onnx__NodeProto * t0,
    const onnx_value * x, const tf_attention * a, tt_error * err)
{
  const int64_t T = x->dims[1], D = x->dims[2];
  char base[80];
  snprintf (base, sizeof base, "%s_in", t0->name ? t0->name : "attention");
  int rin = tf_layer (im, base, "reshape", x->layer, err);
  if (rin < 0)
    return err->status;
  onnx_layer_key (&im->layers[rin], "target_shape = 1:%lld:%lld", (long long) T,
      (long long) D);
  const Onnx__NodeProto *e = tf_node (im, a->end);
  snprintf (base, sizeof base, "%s_mha", t0->name ? t0->name : "attention");
  int l = tf_layer (im, base, "multi_head_attention", rin, err);
  if (l < 0)
    return err->status;
  onnx_layer *L = &im->layers[l];
  L->inputs[1] = L->inputs[2] = rin;
  L->n_inputs = 3;
  onnx_layer_key (L, "num_heads = %d", a->heads);
  if (a->dropout > 0)
    onnx_layer_key (L, "dropout_rate = %.9g", a->dropout);
  /* query, key, value: in_proj's row blocks q, k, v ([3D][D] as PyTorch
   * stores it), each ours [D][D] (in by out); then out_proj */
  for (int p = 0; p < 3; p++) {
    float *w = onnx_weight_new (im, &im->layers[l], (size_t) (D * D), err);
    float *b = w ? onnx_weight_new (im, &im->layers[l], (size_t) D, err) : NULL;
    if (!b)
      return err->status;
    for (int64_t i = 0; i < D; i++)
      for (int64_t o = 0; o < D; o++)
        w[i * D + o] = tf_at (a->w, a->wt, i, p * D + o);
    for (int64_t o = 0; o < D; o++)
      b[o] = a->b->f[p * D + o];
  }
  float *w = onnx_weight_new (im, &im->layers[l], (size_t) (D * D), err);
  float *b = w ? onnx_weight_new (im, &im->layers[l], (size_t) D, err) : NULL;
  if (!b)
    return err->status;
  for (int64_t i = 0; i < D; i++)
    for (int64_t o = 0; o < D; o++)
      w[i * D + o] = tf_at (a->ow, a->owt, i, o);
  for (int64_t o = 0; o < D; o++)
    b[o] = a->ob->f[o];
  snprintf (base, sizeof base, "%s_out", t0->name ? t0->name : "attention");
  int rout = tf_layer (im, base, "reshape", l, err);
  if (rout < 0)
    return err->status;
  onnx_layer_key (&im->layers[rout], "target_shape = %lld:1:%lld",
      (long long) T, (long long) D);
  tf_set (im, tf_out (e, 0), rout, 3, x->dims);
  return TT_OK;
}

tt_status
onnx_map_tf_transpose (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  static const int64_t p10[2] = { 1, 0 }, p102[3] = { 1, 0, 2 };
  const onnx_value *c = tf_const (im, tf_in (n, 0), err);
  if (c) {
    /* a constant matrix (a Linear's weight): folded */
    if (c->rank != 2 || c->is_int || (onnx_attr (n, "perm") &&
            !tf_perm_is (n, 2, p10)))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: a Transpose of a "
          "constant is supported for a float matrix only", LABEL (n));
    onnx_value *o = tf_val (im, tf_out (n, 0));
    if (!o)
      return TT_OK;
    const int64_t r = c->dims[0], k = c->dims[1];
    float *f = malloc ((size_t) (r * k > 0 ? r * k : 1) * sizeof *f);
    if (!f)
      return onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < r; i++)
      for (int64_t j = 0; j < k; j++)
        f[j * r + i] = c->f[i * k + j];
    free (o->f);
    free (o->i);
    o->i = NULL;
    o->f = f;
    o->is_const = true;
    o->is_int = false;
    o->rank = 2;
    o->dims[0] = k;
    o->dims[1] = r;
    o->count = (size_t) (r * k);
    return TT_OK;
  }
  onnx_value *x = tf_act (im, n, err);
  if (!x)
    return err->status;
  tf_attention a;
  const char *why = "its perm is not 1,0,2 on [N, T, D]";
  int k[TF_MAX_BLOCK], m;
  if (x->rank == 3 && tf_perm_is (n, 3, p102) &&
      tf_attention_find (im, n, x, &a, &why, err)) {
    why = "its nodes reach other than the block's operators (or the "
        "graph's output) before the Transpose back to [N, T, D]";
    if (tf_block (im, node, a.end, k, &m)) {
      tt_status st = tf_attention_emit (im, n, x, &a, err);
      for (int s = 0; !st && s < m; s++)
        im->absorbed[k[s]] = true;
      return st;
    }
  }
  return onnx_fail (im, err, TT_ERR_INVALID, "%s: a Transpose of an "
      "activation is supported only as the start of a self-attention block "
      "(nn.MultiheadAttention, batch_first, as torch.onnx.export writes it: "
      "perm 1,0,2 on [N, T, D]); here %s", LABEL (n), why);
}
