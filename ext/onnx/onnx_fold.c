/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Constant folding of shape arithmetic, what torch.onnx.export writes
 * around a Reshape (x.view (x.size (0), -1)) and as the parameters of
 * Clip, Pad and Dropout: Constant, Shape (of an activation: its per-sample
 * dimensions after ONNX_BATCH, the batch), Gather, Unsqueeze, Squeeze,
 * Concat, Cast, ConstantOfShape and Identity on constants. A folded node
 * gives a constant value; no layer.
 */
#include "onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* output 0 of node as a fresh constant of count elements */
static onnx_value *
fold_out (onnx_import * im, const Onnx__NodeProto * n, bool is_int, int rank,
    const int64_t * dims, size_t count, tt_error * err)
{
  char label[256];
  if (n->n_output < 1 || !n->output[0] || !*n->output[0]) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s has no output",
        onnx_node_label (im, n, label, sizeof label));
    return NULL;
  }
  if (count > ONNX_MAX_ELEMENTS || rank > ONNX_MAX_RANK || rank < 0) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: its constant output would "
        "have %zu elements in %d dimensions (at most %zu in %d)",
        onnx_node_label (im, n, label, sizeof label), count, rank,
        ONNX_MAX_ELEMENTS, ONNX_MAX_RANK);
    return NULL;
  }
  onnx_value *v = &im->values[onnx_value_find (im, n->output[0])];
  v->is_const = true;
  v->is_int = is_int;
  v->rank = rank;
  for (int k = 0; k < rank; k++)
    v->dims[k] = dims[k];
  v->count = count;
  if (is_int)
    v->i = calloc (count ? count : 1, sizeof *v->i);
  else
    v->f = calloc (count ? count : 1, sizeof *v->f);
  if (is_int ? !v->i : !v->f) {
    onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
    return NULL;
  }
  return v;
}

static bool
fold_all_const (const onnx_import * im, const Onnx__NodeProto * n)
{
  for (size_t k = 0; k < n->n_input; k++) {
    const onnx_value *v = onnx_node_input (im, n, k);
    if (v && !v->is_const)
      return false;
  }
  return true;
}

/* axes from an attribute (older opsets) or input 1 */
static tt_status
fold_axes (onnx_import * im, const Onnx__NodeProto * n, int rank,
    bool *mark, tt_error * err)
{
  char label[256];
  const onnx_value *ax = onnx_node_input (im, n, 1);
  const Onnx__AttributeProto *a = onnx_attr (n, "axes");
  size_t count = ax ? ax->count : a ? a->n_ints : 0;
  if (!count || (ax && !ax->is_int))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: no integer axes",
        onnx_node_label (im, n, label, sizeof label));
  for (size_t k = 0; k < count; k++) {
    int64_t x = ax ? ax->i[k] : a->ints[k];
    if (x < 0)
      x += rank;
    if (x < 0 || x >= rank || mark[x])
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld out of "
          "range or repeated for rank %d", onnx_node_label (im, n, label,
              sizeof label), (long long) (ax ? ax->i[k] : a->ints[k]), rank);
    mark[x] = true;
  }
  return TT_OK;
}

/* a float as an integer, saturated (a float outside int64's range, or
 * NaN, is UB to convert) */
static int64_t
fold_float_int (float f)
{
  if (f >= 9.2e18f)
    return INT64_MAX;
  if (!(f > -9.2e18f))
    return INT64_MIN;
  return (int64_t) f;
}

static void
fold_copy (onnx_value * dst, const onnx_value * src, size_t d, size_t s)
{
  if (dst->is_int)
    dst->i[d] = src->is_int ? src->i[s] : fold_float_int (src->f[s]);
  else
    dst->f[d] = src->is_int ? (float) src->i[s] : src->f[s];
}

tt_status
onnx_fold_node (onnx_import * im, int node, bool *done, tt_error * err)
{
  const Onnx__NodeProto *n = im->proto->graph->node[node];
  const char *op = n->op_type;
  char label[256];
  onnx_value *o;
  *done = false;
  if (!strcmp (op, "Constant")) {
    const Onnx__AttributeProto *a;
    *done = true;
    if ((a = onnx_attr (n, "value")) && a->t) {
      onnx_value tmp;
      memset (&tmp, 0, sizeof tmp);
      tt_status st = onnx_tensor_decode (im, a->t, "Constant", &tmp, err);
      if (st) {
        free (tmp.f);
        free (tmp.i);
        return st;
      }
      if (!(o = fold_out (im, n, tmp.is_int, tmp.rank, tmp.dims, 0, err))) {
        free (tmp.f);
        free (tmp.i);
        return err ? err->status : TT_ERR_NOMEM;
      }
      free (o->f);
      free (o->i);
      o->f = tmp.f;
      o->i = tmp.i;
      o->count = tmp.count;
      return TT_OK;
    }
    if ((a = onnx_attr (n, "value_float")) || (a = onnx_attr (n, "value_int"))) {
      bool is_int = !strcmp (a->name, "value_int");
      if (!(o = fold_out (im, n, is_int, 0, NULL, 1, err)))
        return err ? err->status : TT_ERR_NOMEM;
      if (is_int)
        o->i[0] = a->i;
      else
        o->f[0] = a->f;
      return TT_OK;
    }
    if ((a = onnx_attr (n, "value_floats"))
        || (a = onnx_attr (n, "value_ints"))) {
      bool is_int = !strcmp (a->name, "value_ints");
      int64_t d = (int64_t) (is_int ? a->n_ints : a->n_floats);
      if (!(o = fold_out (im, n, is_int, 1, &d, (size_t) d, err)))
        return err ? err->status : TT_ERR_NOMEM;
      for (int64_t k = 0; k < d; k++)
        if (is_int)
          o->i[k] = a->ints[k];
        else
          o->f[k] = a->floats[k];
      return TT_OK;
    }
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: only value, value_float"
        "(s) and value_int(s) constants are supported",
        onnx_node_label (im, n, label, sizeof label));
  }
  if (!strcmp (op, "Shape")) {
    const onnx_value *x = onnx_node_input (im, n, 0);
    if (!x)
      return TT_OK;
    *done = true;
    int64_t r = x->rank, s = onnx_attr_int (n, "start", 0),
        e = onnx_attr_int (n, "end", r);
    if (s < 0)
      s += r;
    if (e < 0)
      e += r;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    int64_t d = e > s ? e - s : 0;
    if (!(o = fold_out (im, n, true, 1, &d, (size_t) d, err)))
      return err ? err->status : TT_ERR_NOMEM;
    for (int64_t k = 0; k < d; k++)
      o->i[k] = x->dims[s + k];
    return TT_OK;
  }
  /* integer arithmetic of known sizes (torch.chunk's Slice bounds:
   * Gather of a Shape, Add, Div, Mul); the batch stays unfolded */
  if (!strcmp (op, "Add") || !strcmp (op, "Sub") || !strcmp (op, "Mul") ||
      !strcmp (op, "Div")) {
    const onnx_value *a = onnx_node_input (im, n, 0), *b =
        onnx_node_input (im, n, 1);
    if (n->n_input != 2 || !a || !b || !a->is_const || !b->is_const
        || !a->is_int || !b->is_int || a->count < 1 || b->count < 1
        || (a->count != b->count && a->count != 1 && b->count != 1))
      return TT_OK;
    const onnx_value *big = a->count >= b->count ? a : b;
    for (size_t k = 0; k < big->count; k++) {
      const int64_t x = a->i[a->count == 1 ? 0 : k],
          y = b->i[b->count == 1 ? 0 : k];
      if (x == ONNX_BATCH || y == ONNX_BATCH || x < -(1 << 30) ||
          x > (1 << 30) || y < -(1 << 30) || y > (1 << 30) ||
          (op[0] == 'D' && y == 0))
        return TT_OK;
    }
    *done = true;
    if (!(o = fold_out (im, n, true, big->rank, big->dims, big->count, err)))
      return err ? err->status : TT_ERR_NOMEM;
    for (size_t k = 0; k < big->count; k++) {
      const int64_t x = a->i[a->count == 1 ? 0 : k],
          y = b->i[b->count == 1 ? 0 : k];
      o->i[k] = op[0] == 'A' ? x + y : op[0] == 'S' ? x - y : op[0] == 'M' ?
          x * y : x / y;
    }
    return TT_OK;
  }
  static const char *const folded[] = { "Gather", "Unsqueeze", "Squeeze",
    "Concat", "Cast", "ConstantOfShape", "Identity"
  };
  bool known = false;
  for (size_t k = 0; k < sizeof folded / sizeof folded[0]; k++)
    known |= !strcmp (op, folded[k]);
  if (!known || !fold_all_const (im, n) || !onnx_node_input (im, n, 0))
    return TT_OK;
  *done = true;
  const onnx_value *x = onnx_node_input (im, n, 0);
  if (!strcmp (op, "Identity")) {
    if (!(o = fold_out (im, n, x->is_int, x->rank, x->dims, x->count, err)))
      return err ? err->status : TT_ERR_NOMEM;
    for (size_t k = 0; k < x->count; k++)
      fold_copy (o, x, k, k);
    return TT_OK;
  }
  if (!strcmp (op, "Cast")) {
    int64_t to = onnx_attr_int (n, "to", 0);
    bool is_int = to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
        to == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
        to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    if (!is_int && to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
        to != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: a cast to type %lld "
          "(supported: float, double, int32, int64, bool)",
          onnx_node_label (im, n, label, sizeof label), (long long) to);
    if (!(o = fold_out (im, n, is_int, x->rank, x->dims, x->count, err)))
      return err ? err->status : TT_ERR_NOMEM;
    for (size_t k = 0; k < x->count; k++)
      fold_copy (o, x, k, k);
    return TT_OK;
  }
  if (!strcmp (op, "ConstantOfShape")) {
    if (!x->is_int || x->rank != 1)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: the shape must be a "
          "1-D integer tensor", onnx_node_label (im, n, label, sizeof label));
    size_t count = 1;
    for (size_t k = 0; k < x->count; k++) {
      if (x->i[k] < 0 || (uint64_t) x->i[k] > ONNX_MAX_ELEMENTS ||
          (x->i[k] && count > ONNX_MAX_ELEMENTS / (size_t) x->i[k]))
        return onnx_fail (im, err, TT_ERR_INVALID, "%s: shape dimension "
            "%lld (the batch, or too large)", onnx_node_label (im, n, label,
                sizeof label), (long long) x->i[k]);
      count *= (size_t) x->i[k];
    }
    onnx_value val;
    memset (&val, 0, sizeof val);
    const Onnx__AttributeProto *a = onnx_attr (n, "value");
    if (a && a->t) {
      tt_status st = onnx_tensor_decode (im, a->t, "ConstantOfShape value",
          &val, err);
      if (!st && val.count != 1)
        st = onnx_fail (im, err, TT_ERR_INVALID, "%s: value must hold one "
            "element", onnx_node_label (im, n, label, sizeof label));
      if (st) {
        free (val.f);
        free (val.i);
        return st;
      }
    }
    o = fold_out (im, n, val.is_int, (int) x->count, x->i, count, err);
    for (size_t k = 0; o && k < count; k++)
      if (val.is_int)
        o->i[k] = val.i[0];
      else
        o->f[k] = val.f ? val.f[0] : 0.0f;
    free (val.f);
    free (val.i);
    return o ? TT_OK : (err ? err->status : TT_ERR_NOMEM);
  }
  if (!strcmp (op, "Unsqueeze") || !strcmp (op, "Squeeze")) {
    bool unsq = op[0] == 'U';
    bool mark[ONNX_MAX_RANK] = { false };
    int rank = unsq ? x->rank + (int) (onnx_node_input (im, n, 1) ?
        onnx_node_input (im, n, 1)->count : onnx_attr (n, "axes") ?
        onnx_attr (n, "axes")->n_ints : 0) : x->rank;
    if (rank > ONNX_MAX_RANK)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: rank %d (at most %d)",
          onnx_node_label (im, n, label, sizeof label), rank, ONNX_MAX_RANK);
    if (!unsq && !onnx_node_input (im, n, 1) && !onnx_attr (n, "axes")) {
      for (int k = 0; k < x->rank; k++)
        mark[k] = x->dims[k] == 1;
    } else {
      tt_status st = fold_axes (im, n, rank, mark, err);
      if (st)
        return st;
    }
    int64_t dims[ONNX_MAX_RANK];
    int r = 0;
    for (int k = 0, s = 0; k < rank; k++) {
      if (unsq) {
        dims[r++] = mark[k] ? 1 : x->dims[s++];
      } else if (mark[k]) {
        if (x->dims[k] != 1)
          return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %d has size "
              "%lld, not 1", onnx_node_label (im, n, label, sizeof label), k,
              (long long) x->dims[k]);
      } else
        dims[r++] = x->dims[k];
    }
    if (!(o = fold_out (im, n, x->is_int, r, dims, x->count, err)))
      return err ? err->status : TT_ERR_NOMEM;
    for (size_t k = 0; k < x->count; k++)
      fold_copy (o, x, k, k);
    return TT_OK;
  }
  if (!strcmp (op, "Gather")) {
    const onnx_value *idx = onnx_node_input (im, n, 1);
    int64_t axis = onnx_attr_int (n, "axis", 0);
    if (!idx || !idx->is_int || x->rank != 1 || (axis != 0 && axis != -1) ||
        idx->rank > 1)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: only a gather from a "
          "1-D constant by integer indices (a scalar or a list) is "
          "supported", onnx_node_label (im, n, label, sizeof label));
    if (!(o = fold_out (im, n, x->is_int, idx->rank, idx->dims, idx->count,
                err)))
      return err ? err->status : TT_ERR_NOMEM;
    for (size_t k = 0; k < idx->count; k++) {
      int64_t j = idx->i[k] < 0 ? idx->i[k] + (int64_t) x->count : idx->i[k];
      if (j < 0 || j >= (int64_t) x->count)
        return onnx_fail (im, err, TT_ERR_INVALID, "%s: index %lld out of "
            "range for %zu elements", onnx_node_label (im, n, label,
                sizeof label), (long long) idx->i[k], x->count);
      fold_copy (o, x, k, (size_t) j);
    }
    return TT_OK;
  }
  /* Concat of 1-D constants */
  size_t total = 0;
  bool is_int = x->is_int;
  for (size_t k = 0; k < n->n_input; k++) {
    const onnx_value *v = onnx_node_input (im, n, k);
    if (!v || v->rank != 1 || v->is_int != is_int)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: only a concatenation "
          "of 1-D constants of one type is supported",
          onnx_node_label (im, n, label, sizeof label));
    total += v->count;
  }
  int64_t d = (int64_t) total;
  if (!(o = fold_out (im, n, is_int, 1, &d, total, err)))
    return err ? err->status : TT_ERR_NOMEM;
  size_t at = 0;
  for (size_t k = 0; k < n->n_input; k++) {
    const onnx_value *v = onnx_node_input (im, n, k);
    for (size_t e = 0; e < v->count; e++)
      fold_copy (o, v, at++, e);
  }
  return TT_OK;
}
