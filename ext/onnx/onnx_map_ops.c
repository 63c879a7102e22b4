/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Operators on activations beyond onnx_map.c's: ConvTranspose onto
 * conv2dtranspose (its weight's first two axes swapped), Concat onto
 * concat, Slice onto slice (step 1), Unsqueeze onto reshape (or nothing
 * when our layout stays), Resize and Upsample onto upsample2d (nearest
 * with integer scales; linear with half_pixel, the layer's bilinear),
 * Mul and a broadcasting Add of two activations onto multiply and add,
 * Split into equal parts onto split (an identity reading each output).
 *
 * Our layout of an activation: [N, C, H, W] is C:H:W, [N, C, L] is C:1:L
 * (a recurrent sequence [N, T, F], `seq`, is 1:T:F), [N, F] is 1:1:F.
 */
#include "onnx_map_ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define LABEL(n) onnx_node_label (im, (n), label, sizeof label)

/* input k, an activation a layer gives, batch-major, not a pending Pad */
static onnx_value *
act (onnx_import * im, const Onnx__NodeProto * n, size_t k, tt_error * err)
{
  char label[256];
  onnx_value *v = onnx_node_input (im, n, k);
  if (!v || v->is_const || v->layer < 0 || v->batch_axis != 0 || v->padded) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: input %zu ('%.200s') must be "
        "an activation a layer gives (not a constant, a recurrent layer's "
        "time-major output or a Pad)", LABEL (n), k, v ? v->name : "");
    return NULL;
  }
  return v;
}

/* an integer constant's values (any count when 0); NULL when absent */
static const onnx_value *
int_const (onnx_import * im, const Onnx__NodeProto * n, size_t k,
    const char *what, tt_error * err, bool *bad)
{
  char label[256];
  const onnx_value *v = onnx_node_input (im, n, k);
  *bad = false;
  if (v && (!v->is_const || !v->is_int || v->rank > 1)) {
    *bad = true;
    onnx_fail (im, err, TT_ERR_INVALID, "%s: its %s ('%.200s') must fold "
        "to a constant list of integers", LABEL (n), what, v->name);
  }
  return v;
}

/* our channel, height, width of v into o[1..3] */
static void
our_dims (const onnx_value * v, int64_t o[4])
{
  o[0] = ONNX_BATCH;
  if (v->rank == 4) {
    o[1] = v->dims[1];
    o[2] = v->dims[2];
    o[3] = v->dims[3];
  } else if (v->rank == 3) {
    o[1] = v->seq ? 1 : v->dims[1];
    o[2] = v->seq ? v->dims[1] : 1;
    o[3] = v->dims[2];
  } else {
    o[1] = o[2] = 1;
    o[3] = v->rank == 2 ? v->dims[1] : 1;
  }
}

/* ONNX axis a (1 .. rank - 1) of v: our axis (1 channel, 2 height, 3
 * width) */
static int
our_axis (const onnx_value * v, int64_t a)
{
  if (v->rank == 4)
    return (int) a;
  if (v->rank == 3)
    return v->seq ? (int) a + 1 : a == 1 ? 1 : 3;
  return 3;
}

static int
add_layer (onnx_import * im, const Onnx__NodeProto * n, const char *type,
    const onnx_value * x, tt_error * err)
{
  int l = onnx_layer_add (im, n->name, type, err);
  if (l < 0)
    return -1;
  im->layers[l].inputs[0] = x->layer;
  im->layers[l].n_inputs = 1;
  return l;
}

static void
give (onnx_import * im, const Onnx__NodeProto * n, int layer, int rank,
    const int64_t * dims, bool seq)
{
  onnx_value *o = onnx_node_output (im, n, 0);
  if (!o)
    return;
  o->layer = layer;
  o->rank = rank;
  o->seq = seq;
  o->dims[0] = ONNX_BATCH;
  for (int d = 1; d < rank; d++)
    o->dims[d] = dims[d];
}

static const char *
attr_str (const Onnx__NodeProto * n, const char *name, const char *def,
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

/* ---- ConvTranspose --------------------------------------------------- */

tt_status
onnx_map_convtranspose (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256], buf[32];
  (void) node;
  onnx_value *x = act (im, n, 0, err);
  if (!x)
    return err->status;
  const onnx_value *w = onnx_node_input (im, n, 1), *b =
      onnx_node_input (im, n, 2);
  if (x->rank != 4)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: input of rank %d; "
        "supported is [N, C, H, W] (conv2dtranspose)", LABEL (n), x->rank);
  if (!w || !w->is_const || w->is_int || w->rank != 4)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its weight must be a "
        "float initializer [C, F/group, kH, kW]", LABEL (n));
  const int64_t c = x->dims[1], g = onnx_attr_int (n, "group", 1);
  if (g < 1 || g > 65536 || c % g || w->dims[0] != c)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: group %lld with %lld "
        "input channels and a weight [%lld, ...]: the channels must divide "
        "by the group and be the weight's first dimension", LABEL (n),
        (long long) g, (long long) c, (long long) w->dims[0]);
  const int64_t f = w->dims[1] * g, k[2] = { w->dims[2], w->dims[3] };
  if (b && (!b->is_const || b->is_int || b->count != (size_t) f))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its bias must be a float "
        "initializer of %lld values", LABEL (n), (long long) f);
  if (onnx_attr (n, "output_shape"))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: attribute output_shape "
        "is not supported (give pads and output_padding)", LABEL (n));
  const char *ap = attr_str (n, "auto_pad", "NOTSET", buf, sizeof buf);
  if (strcmp (ap, "NOTSET") && strcmp (ap, "VALID"))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: auto_pad '%s' is not "
        "supported (NOTSET, VALID)", LABEL (n), ap);
  int64_t s[2], d[2], p[4], op[2], ks[2];
  if (!onnx_attr_ints (n, "strides", 2, 1, s) ||
      !onnx_attr_ints (n, "dilations", 2, 1, d) ||
      !onnx_attr_ints (n, "pads", 4, 0, p) ||
      !onnx_attr_ints (n, "output_padding", 2, 0, op) ||
      !onnx_attr_ints (n, "kernel_shape", 2, 0, ks))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: strides, dilations, "
        "output_padding, kernel_shape need 2 values, pads 4", LABEL (n));
  if (!strcmp (ap, "VALID"))
    p[0] = p[1] = p[2] = p[3] = 0;
  int64_t dims[4] = { ONNX_BATCH, f, 0, 0 };
  for (int a = 0; a < 2; a++) {
    if ((ks[a] && ks[a] != k[a]) || k[a] < 1 || s[a] < 1 || d[a] < 1 ||
        p[a] < 0 || p[a + 2] < 0 || s[a] > 65536 || d[a] > 65536 ||
        p[a] > 65536 || p[a + 2] > 65536 || op[a] < 0)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: kernel_shape, strides, "
          "dilations, pads or output_padding out of range", LABEL (n));
    /* output_padding rows are the full output's next ones: cut fewer at
     * the end; beyond the full output they cannot be expressed */
    if (op[a] > p[a + 2])
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: output_padding %lld "
          "beyond the end padding %lld is not supported (conv2dtranspose "
          "has no output_padding; supported: output_padding up to the end "
          "pads)", LABEL (n), (long long) op[a], (long long) p[a + 2]);
    p[a + 2] -= op[a];
    const int64_t full = (x->dims[2 + a] - 1) * s[a] + (k[a] - 1) * d[a] + 1;
    dims[2 + a] = full - p[a] - p[a + 2];
    if (dims[2 + a] < 1)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: pads %lld and %lld "
          "leave nothing of an output of %lld", LABEL (n),
          (long long) p[a], (long long) p[a + 2], (long long) full);
  }
  int l = add_layer (im, n, "conv2dtranspose", x, err);
  if (l < 0)
    return err->status;
  onnx_layer *L = &im->layers[l];
  onnx_layer_key (L, "filters = %lld", (long long) f);
  onnx_layer_key (L, "kernel_size = %lld,%lld", (long long) k[0],
      (long long) k[1]);
  onnx_layer_key (L, "stride = %lld,%lld", (long long) s[0], (long long) s[1]);
  onnx_layer_key (L, "dilation = %lld,%lld", (long long) d[0],
      (long long) d[1]);
  /* ONNX: top, left, bottom, right; ours: top, bottom, left, right */
  onnx_layer_key (L, "padding = %lld,%lld,%lld,%lld", (long long) p[0],
      (long long) p[2], (long long) p[1], (long long) p[3]);
  if (g > 1)
    onnx_layer_key (L, "groups = %lld", (long long) g);
  if (!b)
    onnx_layer_key (L, "disable_bias = true");
  /* [C][F/g][kh][kw] into ours [F/g][C][kh][kw] */
  if (!onnx_weight_swapped (im, L, w, c, w->dims[1], k[0] * k[1], err) ||
      (b && !onnx_weight_from (im, L, b, 0, 0, 1.0f, err)))
    return err->status;
  give (im, n, l, 4, dims, false);
  return TT_OK;
}

/* ---- Concat ---------------------------------------------------------- */

tt_status
onnx_map_concat (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  if (n->n_input < 1 || n->n_input > 8)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: %zu inputs; supported "
        "are 1 to 8 activations", LABEL (n), n->n_input);
  onnx_value *v[8];
  for (size_t k = 0; k < n->n_input; k++)
    if (!(v[k] = act (im, n, k, err)))
      return err->status;
  const int r = v[0]->rank;
  int64_t a = onnx_attr_int (n, "axis", 1);
  if (a < 0)
    a += r;
  if (a < 1 || a >= r)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld of a rank-%d "
        "input; supported are 1 to %d (not the batch)", LABEL (n),
        (long long) onnx_attr_int (n, "axis", 1), r, r - 1);
  int64_t dims[4] = { ONNX_BATCH, 0, 0, 0 };
  for (int d = 1; d < r; d++)
    dims[d] = v[0]->dims[d];
  dims[a] = 0;
  for (size_t k = 0; k < n->n_input; k++) {
    bool fits = v[k]->rank == r && v[k]->seq == v[0]->seq;
    for (int d = 1; fits && d < r; d++)
      fits = d == a || v[k]->dims[d] == v[0]->dims[d];
    if (!fits)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: input %zu ('%.200s') "
          "does not fit input 0 ('%.200s'): ranks and every dimension but "
          "axis %lld must agree", LABEL (n), k, v[k]->name, v[0]->name,
          (long long) a);
    dims[a] += v[k]->dims[a];
  }
  if (n->n_input == 1) {
    give (im, n, v[0]->layer, r, v[0]->dims, v[0]->seq);
    return TT_OK;
  }
  int l = add_layer (im, n, "concat", v[0], err);
  if (l < 0)
    return err->status;
  for (size_t k = 1; k < n->n_input; k++)
    im->layers[l].inputs[k] = v[k]->layer;
  im->layers[l].n_inputs = (int) n->n_input;
  onnx_layer_key (&im->layers[l], "axis = %d", our_axis (v[0], a));
  give (im, n, l, r, dims, v[0]->seq);
  return TT_OK;
}

/* ---- Split ----------------------------------------------------------- */

tt_status
onnx_map_split (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act (im, n, 0, err);
  if (!x)
    return err->status;
  const int r = x->rank;
  int64_t a = onnx_attr_int (n, "axis", 0);
  if (a < 0)
    a += r;
  const size_t parts = n->n_output;
  if (a < 1 || a >= r)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld of a rank-%d "
        "input; supported are 1 to %d (not the batch)", LABEL (n),
        (long long) onnx_attr_int (n, "axis", 0), r, r - 1);
  const int64_t size = x->dims[a];
  if (parts < 1 || parts > 16 || size % (int64_t) parts)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: %zu outputs of an axis "
        "of %lld; supported are 1 to 16 equal parts (the split layer's "
        "split_number)", LABEL (n), parts, (long long) size);
  /* the sizes: input 1 (opset 13), the attribute before; all equal */
  const int64_t part = size / (int64_t) parts;
  const onnx_value *sv = im->opset >= 13 ? onnx_node_input (im, n, 1) : NULL;
  const Onnx__AttributeProto *sa = im->opset < 13 ? onnx_attr (n, "split") :
      NULL;
  if (sv && (!sv->is_const || !sv->is_int || sv->count != parts))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its split sizes must "
        "fold to a constant of %zu integers", LABEL (n), parts);
  if (sa && sa->n_ints != parts)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its split attribute "
        "needs %zu values", LABEL (n), parts);
  for (size_t k = 0; k < parts; k++) {
    const int64_t want = sv ? sv->i[k] : sa ? sa->ints[k] : part;
    if (want != part)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: split sizes of "
          "different lengths (part %zu is %lld); supported are equal parts "
          "(%lld each)", LABEL (n), k, (long long) want, (long long) part);
    const onnx_value *o = onnx_node_output (im, n, k);
    if (!o || o->consumers == 0)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: output %zu is not "
          "read; supported is a Split whose every output is read (the "
          "split layer's rule)", LABEL (n), k);
  }
  int64_t dims[4] = { ONNX_BATCH, 1, 1, 1 };
  for (int d = 1; d < r; d++)
    dims[d] = x->dims[d];
  dims[a] = part;
  if (parts == 1) {
    give (im, n, x->layer, r, dims, x->seq);
    return TT_OK;
  }
  int l = add_layer (im, n, "split", x, err);
  if (l < 0)
    return err->status;
  onnx_layer_key (&im->layers[l], "axis = %d", our_axis (x, a));
  onnx_layer_key (&im->layers[l], "split_number = %zu", parts);
  /* each output an identity (a view) reading NAME(k) */
  for (size_t k = 0; k < parts; k++) {
    int id = onnx_layer_add (im, n->output[k], "identity", err);
    if (id < 0)
      return err->status;
    im->layers[id].inputs[0] = l;
    im->layers[id].n_inputs = 1;
    im->layers[id].in_port = (int) k;
    onnx_value *o = onnx_node_output (im, n, k);
    o->layer = id;
    o->rank = r;
    o->seq = x->seq;
    for (int d = 0; d < r; d++)
      o->dims[d] = dims[d];
  }
  return TT_OK;
}

/* ---- Slice ----------------------------------------------------------- */

tt_status
onnx_map_slice (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act (im, n, 0, err);
  if (!x)
    return err->status;
  const int r = x->rank;
  int64_t st[ONNX_MAX_RANK], en[ONNX_MAX_RANK], ax[ONNX_MAX_RANK],
      sp[ONNX_MAX_RANK];
  size_t cnt;
  if (im->opset < 10) {
    const Onnx__AttributeProto *as = onnx_attr (n, "starts");
    cnt = as ? as->n_ints : 0;
    if (!cnt || cnt > (size_t) r || !onnx_attr_ints (n, "starts", cnt, 0, st) ||
        !onnx_attr_ints (n, "ends", cnt, 0, en) || !onnx_attr (n, "ends"))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: starts and ends need "
          "1 to %d values each", LABEL (n), r);
    for (size_t k = 0; k < cnt; k++) {
      ax[k] = (int64_t) k;
      sp[k] = 1;
    }
    if (onnx_attr (n, "axes") && !onnx_attr_ints (n, "axes", cnt, 0, ax))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: axes need %zu values",
          LABEL (n), cnt);
  } else {
    bool bad;
    const onnx_value *vs = int_const (im, n, 1, "starts", err, &bad);
    if (bad)
      return err->status;
    const onnx_value *ve = int_const (im, n, 2, "ends", err, &bad);
    if (bad)
      return err->status;
    const onnx_value *va = int_const (im, n, 3, "axes", err, &bad);
    if (bad)
      return err->status;
    const onnx_value *vp = int_const (im, n, 4, "steps", err, &bad);
    if (bad)
      return err->status;
    cnt = vs ? vs->count : 0;
    if (!vs || !ve || !cnt || cnt > (size_t) r || ve->count != cnt ||
        (va && va->count != cnt) || (vp && vp->count != cnt))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: starts, ends (and "
          "axes, steps) need the same count, 1 to %d", LABEL (n), r);
    for (size_t k = 0; k < cnt; k++) {
      st[k] = vs->i[k];
      en[k] = ve->i[k];
      ax[k] = va ? va->i[k] : (int64_t) k;
      sp[k] = vp ? vp->i[k] : 1;
    }
  }
  int64_t dims[4] = { ONNX_BATCH, 1, 1, 1 };
  for (int d = 1; d < r; d++)
    dims[d] = x->dims[d];
  int layer = x->layer;
  for (size_t k = 0; k < cnt; k++) {
    int64_t a = ax[k] < 0 ? ax[k] + r : ax[k];
    if (sp[k] != 1)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: step %lld; supported "
          "is 1 (the slice layer takes a contiguous range)", LABEL (n),
          (long long) sp[k]);
    if (a < 0 || a >= r)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld of a rank-%d "
          "input", LABEL (n), (long long) ax[k], r);
    if (a == 0) {
      /* the batch: only its whole (0 to the end, or to the export's
       * batch) */
      if (st[k] == 0 && (en[k] >= INT32_MAX ||
              (im->export_batch > 0 && en[k] >= im->export_batch)))
        continue;
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: a slice of the batch "
          "axis is not supported", LABEL (n));
    }
    const int64_t size = dims[a];
    int64_t s = st[k] < 0 ? st[k] + size : st[k];
    int64_t e = en[k] < 0 ? en[k] + size : en[k];
    s = s < 0 ? 0 : s > size ? size : s;
    e = e < 0 ? 0 : e > size ? size : e;
    if (e <= s)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld: the range "
          "%lld to %lld of %lld is empty", LABEL (n), (long long) a,
          (long long) st[k], (long long) en[k], (long long) size);
    if (s == 0 && e == size)
      continue;
    int l = onnx_layer_add (im, n->name, "slice", err);
    if (l < 0)
      return err->status;
    onnx_layer *L = &im->layers[l];
    L->inputs[0] = layer;
    L->n_inputs = 1;
    /* 1-based, the end excluded (formats.md, slice) */
    onnx_layer_key (L, "axis = %d", our_axis (x, a));
    onnx_layer_key (L, "start_index = %lld", (long long) s + 1);
    onnx_layer_key (L, "end_index = %lld", (long long) e + 1);
    dims[a] = e - s;
    layer = l;
  }
  give (im, n, layer, r, dims, x->seq);
  return TT_OK;
}

/* ---- Unsqueeze ------------------------------------------------------- */

tt_status
onnx_map_unsqueeze (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = act (im, n, 0, err);
  if (!x)
    return err->status;
  int64_t axes[ONNX_MAX_RANK];
  size_t cnt;
  if (im->opset < 13) {
    const Onnx__AttributeProto *a = onnx_attr (n, "axes");
    cnt = a ? a->n_ints : 0;
    if (cnt && cnt <= ONNX_MAX_RANK)
      onnx_attr_ints (n, "axes", cnt, 0, axes);
  } else {
    bool bad;
    const onnx_value *va = int_const (im, n, 1, "axes", err, &bad);
    if (bad)
      return err->status;
    cnt = va ? va->count : 0;
    for (size_t k = 0; k < cnt && k < ONNX_MAX_RANK; k++)
      axes[k] = va->i[k];
  }
  const int r = x->rank + (int) cnt;
  if (!cnt || r > 4 || x->seq)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: %zu axes on an input of "
        "rank %d; supported is an output of rank at most 4 (not a "
        "recurrent sequence)", LABEL (n), cnt, x->rank);
  bool is_new[4] = { false };
  for (size_t k = 0; k < cnt; k++) {
    int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
    if (a < 1 || a >= r || is_new[a])
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld; supported "
          "are 1 to %d, each once (not the batch)", LABEL (n),
          (long long) axes[k], r - 1);
    is_new[a] = true;
  }
  onnx_value y = { 0 };
  y.rank = r;
  for (int d = 1, s = 1; d < r; d++)
    y.dims[d] = is_new[d] ? 1 : x->dims[s++];
  int64_t xo[4], yo[4];
  our_dims (x, xo);
  our_dims (&y, yo);
  if (xo[1] == yo[1] && xo[2] == yo[2] && xo[3] == yo[3]) {
    give (im, n, x->layer, r, y.dims, false);
    return TT_OK;
  }
  int l = add_layer (im, n, "reshape", x, err);
  if (l < 0)
    return err->status;
  onnx_layer_key (&im->layers[l], "target_shape = %lld:%lld:%lld",
      (long long) yo[1], (long long) yo[2], (long long) yo[3]);
  give (im, n, l, r, y.dims, false);
  return TT_OK;
}

/* ---- Resize, Upsample ------------------------------------------------ */

tt_status
onnx_map_resize (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256], mbuf[32], cbuf[32], nbuf[32];
  (void) node;
  onnx_value *x = act (im, n, 0, err);
  if (!x)
    return err->status;
  const bool upsample = !strcmp (n->op_type, "Upsample");
  const char *mode = attr_str (n, "mode", "nearest", mbuf, sizeof mbuf);
  const char *ctm = upsample ? "asymmetric" : attr_str (n,
      "coordinate_transformation_mode", "half_pixel", cbuf, sizeof cbuf);
  const char *nm = attr_str (n, "nearest_mode", "round_prefer_floor", nbuf,
      sizeof nbuf);
  if (x->rank != 4)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: input of rank %d; "
        "supported is [N, C, H, W] (upsample2d)", LABEL (n), x->rank);
  /* the scales: Upsample's input 1 (opset 9), Resize's input 2, or its
   * sizes (input 3) as integer multiples */
  const onnx_value *sc = onnx_node_input (im, n, upsample ? 1 : 2);
  const onnx_value *sz = upsample ? NULL : onnx_node_input (im, n, 3);
  if (sc && sc->count == 0)
    sc = NULL;
  double f[4] = { 1, 1, 1, 1 };
  if (sc && sc->is_const && !sc->is_int && sc->count == 4)
    for (int a = 0; a < 4; a++)
      f[a] = sc->f[a];
  else if (!sc && sz && sz->is_const && sz->is_int && sz->count == 4)
    for (int a = 1; a < 4; a++)
      f[a] = x->dims[a] > 0 && sz->i[a] % x->dims[a] == 0 ?
          (double) (sz->i[a] / x->dims[a]) : 0.5;
  else
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its scales (or sizes) "
        "must fold to a constant of 4 values", LABEL (n));
  /* in range before the conversion (a float outside int64's is UB) */
  const bool in_range = f[2] >= 1 && f[2] <= 65536 && f[3] >= 1 &&
      f[3] <= 65536;
  int64_t kh = in_range ? (int64_t) f[2] : 0;
  int64_t kw = in_range ? (int64_t) f[3] : 0;
  if (!in_range || f[1] != 1 || f[2] != (double) kh || f[3] != (double) kw)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: scales %g, %g, %g, %g; "
        "supported are 1, 1 and integer factors of height and width "
        "(upsample2d)", LABEL (n), f[0], f[1], f[2], f[3]);
  const char *type;
  if (!strcmp (mode, "nearest")) {
    /* output o reads input floor (o / K): asymmetric and floor */
    if (strcmp (ctm, "asymmetric") || (!upsample && strcmp (nm, "floor")))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: mode nearest with "
          "coordinate_transformation_mode '%s', nearest_mode '%s'; "
          "supported is asymmetric with floor (PyTorch's nearest)",
          LABEL (n), ctm, upsample ? "floor" : nm);
    type = "nearest";
  } else if (!strcmp (mode, "linear") || !strcmp (mode, "bilinear")) {
    /* the layer's bilinear reads (o + 0.5) / K - 0.5: half_pixel
     * (pytorch_half_pixel is the same for outputs longer than 1) */
    if (upsample || (strcmp (ctm, "half_pixel") &&
            strcmp (ctm, "pytorch_half_pixel")))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: mode %s with "
          "coordinate_transformation_mode '%s'; supported is half_pixel "
          "(PyTorch's align_corners=False), not align_corners, asymmetric "
          "or the others", LABEL (n), mode, ctm);
    type = "bilinear";
  } else
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: mode '%s'; supported "
        "are nearest and linear", LABEL (n), mode);
  if (onnx_attr_int (n, "antialias", 0))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: antialias = 1 is not "
        "supported", LABEL (n));
  int l = add_layer (im, n, "upsample2d", x, err);
  if (l < 0)
    return err->status;
  onnx_layer_key (&im->layers[l], "upsample = %s", type);
  onnx_layer_key (&im->layers[l], "kernel_size = %lld,%lld", (long long) kh,
      (long long) kw);
  int64_t dims[4] = { ONNX_BATCH, x->dims[1], x->dims[2] * kh,
    x->dims[3] * kw
  };
  give (im, n, l, 4, dims, false);
  return TT_OK;
}

/* ---- Mul, broadcasting Add ------------------------------------------- */

tt_status
onnx_map_binary (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  const bool mul = !strcmp (n->op_type, "Mul");
  const onnx_value *a0 = onnx_node_input (im, n, 0), *b0 =
      onnx_node_input (im, n, 1);
  if (n->n_input != 2 || !a0 || !b0)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: expected 2 inputs",
        LABEL (n));
  if (a0->is_const || b0->is_const)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: a %s by a constant "
        "('%.200s') is not supported: no layer %s a constant (supported: "
        "two activations, broadcasting as numpy's%s)", LABEL (n),
        mul ? "Mul" : "Add", a0->is_const ? a0->name : b0->name,
        mul ? "multiplies by" : "adds", mul ? "" : "; a constant Add only "
        "as a MatMul's bias");
  onnx_value *a = act (im, n, 0, err), *b = a ? act (im, n, 1, err) : NULL;
  if (!b)
    return err->status;
  int64_t ao[4], bo[4];
  our_dims (a, ao);
  our_dims (b, bo);
  bool fits = a->rank == b->rank && a->seq == b->seq;
  for (int d = 1; fits && d < 4; d++) {
    fits = ao[d] == bo[d] || ao[d] == 1 || bo[d] == 1;
  }
  if (!fits)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: inputs '%.200s' and "
        "'%.200s' do not broadcast: supported are inputs of one rank whose "
        "dimensions (not the batch) are equal or 1 in one of them",
        LABEL (n), a->name, b->name);
  int l = add_layer (im, n, mul ? "multiply" : "add", a, err);
  if (l < 0)
    return err->status;
  im->layers[l].inputs[1] = b->layer;
  im->layers[l].n_inputs = 2;
  int64_t dims[4] = { ONNX_BATCH, 1, 1, 1 };
  for (int d = 1; d < a->rank; d++)
    dims[d] = a->dims[d] > b->dims[d] ? a->dims[d] : b->dims[d];
  give (im, n, l, a->rank, dims, a->seq);
  return TT_OK;
}
