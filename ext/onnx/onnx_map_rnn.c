/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Recurrent and embedding graphs as torch.onnx.export writes them for
 * nn.LSTM / nn.GRU (batch_first, one layer, one direction) and
 * nn.Embedding: the operators onto the engine's lstm, gru, embedding,
 * slice, reshape and flatten layers, and the constant folding their
 * weights need.
 *
 * PyTorch writes a batch_first LSTM as Transpose (x, [1, 0, 2]) -> LSTM
 * (time-major: Y [T, dirs, N, H], Y_h [dirs, N, H]) -> Squeeze (Y, 1) ->
 * Transpose ([1, 0, 2]) -> Gather (axis 1, -1) for out[:, -1], or a
 * Gather / Squeeze of Y_h for h_n. Those tensors are views here: the
 * layer's data stays batch-major (our 1:T:H), and onnx_value.batch_axis
 * says where the ONNX tensor has its batch. Its weights arrive through
 * Slice and Concat of the initializers (the gate reordering), folded
 * here, and its zero initial states through an Expand of a zero.
 */
#include "onnx_map_rnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL(n) onnx_node_label (im, (n), label, sizeof label)

/* an activation input (any view) */
static onnx_value *
rnn_act (onnx_import * im, const Onnx__NodeProto * n, size_t k, tt_error * err)
{
  char label[256];
  onnx_value *v = onnx_node_input (im, n, k);
  if (!v || v->is_const || v->layer < 0 || v->padded) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s: input %zu must be the output "
        "of a layer", LABEL (n), k);
    return NULL;
  }
  if (strcmp (n->op_type, "LSTM") && strcmp (n->op_type, "GRU") &&
      strcmp (n->op_type, "RNN") && !onnx_node_output (im, n, 0)) {
    onnx_fail (im, err, TT_ERR_INVALID, "%s has no output", LABEL (n));
    return NULL;
  }
  return v;
}

/* output k: layer's, the ONNX shape dims (the batch at batch_axis) */
static onnx_value *
rnn_set (onnx_import * im, const Onnx__NodeProto * n, size_t k, int layer,
    int rank, const int64_t * dims, int batch_axis, bool seq)
{
  onnx_value *o = onnx_node_output (im, n, k);
  if (!o)
    return NULL;
  o->layer = layer;
  o->rank = rank;
  for (int d = 0; d < rank; d++)
    o->dims[d] = dims[d];
  o->dims[batch_axis] = ONNX_BATCH;
  o->batch_axis = batch_axis;
  o->seq = seq;
  o->sole_seq = false;
  return o;
}

/* the engine's C:H:W of a batch-major activation value */
static void
engine_shape (const onnx_value * v, int64_t s[3])
{
  s[0] = v->rank == 4 ? v->dims[1] : v->rank == 3 && !v->seq ? v->dims[1] : 1;
  s[1] = v->rank == 4 ? v->dims[2] : v->rank == 3 && v->seq ? v->dims[1] : 1;
  s[2] = v->dims[v->rank - 1];
}

/* a scalar integer constant */
static bool
const_index (const onnx_value * v, int64_t * out)
{
  if (!v || !v->is_const || !v->is_int || v->count != 1 || v->rank > 1)
    return false;
  *out = v->i[0];
  return true;
}

/* ---- folding: Slice, Concat (any rank), Expand of a uniform constant */

static onnx_value *
fold_to (onnx_import * im, const Onnx__NodeProto * n, bool is_int, int rank,
    const int64_t * dims, size_t count, tt_error * err)
{
  onnx_value *o = onnx_node_output (im, n, 0);
  if (!o) {
    char label[256];
    onnx_fail (im, err, TT_ERR_INVALID, "%s has no output", LABEL (n));
    return NULL;
  }
  if (count > ONNX_MAX_ELEMENTS) {
    char label[256];
    onnx_fail (im, err, TT_ERR_INVALID, "%s: its constant output would have "
        "%zu elements (at most %zu)", LABEL (n), count, ONNX_MAX_ELEMENTS);
    return NULL;
  }
  o->is_const = true;
  o->is_int = is_int;
  o->rank = rank;
  for (int d = 0; d < rank; d++)
    o->dims[d] = dims[d];
  o->count = count;
  if (is_int)
    o->i = calloc (count ? count : 1, sizeof *o->i);
  else
    o->f = calloc (count ? count : 1, sizeof *o->f);
  if (is_int ? !o->i : !o->f) {
    onnx_fail (im, err, TT_ERR_NOMEM, "out of memory");
    return NULL;
  }
  return o;
}

static tt_status
fold_slice (onnx_import * im, const Onnx__NodeProto * n, tt_error * err)
{
  char label[256];
  const onnx_value *x = onnx_node_input (im, n, 0), *st =
      onnx_node_input (im, n, 1), *en = onnx_node_input (im, n, 2), *ax =
      onnx_node_input (im, n, 3), *sp = onnx_node_input (im, n, 4);
  if (!st || !en || !st->is_int || !en->is_int || st->count != en->count || (ax
          && (!ax->is_int || ax->count != st->count)) || (sp && (!sp->is_int
              || sp->count != st->count)) || x->rank < 1)
    return onnx_fail (im, err, TT_ERR_INVALID,
        "%s: starts, ends (and axes, "
        "steps) must be integer constants of one length (opset 10 or " "later)",
        LABEL (n));
  int64_t lo[ONNX_MAX_RANK], step[ONNX_MAX_RANK], dims[ONNX_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    lo[d] = 0;
    step[d] = 1;
    dims[d] = x->dims[d];
  }
  for (size_t k = 0; k < st->count; k++) {
    int64_t a = ax ? ax->i[k] : (int64_t) k;
    if (a < 0)
      a += x->rank;
    int64_t s = sp ? sp->i[k] : 1;
    if (a < 0 || a >= x->rank || s != 1)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld, step "
          "%lld: supported are axes of the input and step 1", LABEL (n),
          (long long) a, (long long) s);
    const int64_t len = x->dims[a];
    int64_t b = st->i[k], e = en->i[k];
    b = b < 0 ? b + len : b;
    e = e < 0 ? e + len : e;
    b = b < 0 ? 0 : b > len ? len : b;
    e = e < b ? b : e > len ? len : e;
    lo[a] = b;
    dims[a] = e - b;
  }
  size_t count = 1;
  for (int d = 0; d < x->rank; d++)
    count *= (size_t) dims[d];
  onnx_value *o = fold_to (im, n, x->is_int, x->rank, dims, count, err);
  if (!o)
    return err->status;
  (void) step;
  for (size_t k = 0; k < count; k++) {
    size_t r = k, src = 0, stride = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
      size_t i = r % (size_t) dims[d];
      r /= (size_t) dims[d];
      src += (i + (size_t) lo[d]) * stride;
      stride *= (size_t) x->dims[d];
    }
    if (x->is_int)
      o->i[k] = x->i[src];
    else
      o->f[k] = x->f[src];
  }
  return TT_OK;
}

static tt_status
fold_concat (onnx_import * im, const Onnx__NodeProto * n, tt_error * err)
{
  char label[256];
  const onnx_value *x = onnx_node_input (im, n, 0);
  int64_t axis = onnx_attr_int (n, "axis", 0);
  if (axis < 0)
    axis += x->rank;
  if (axis < 0 || axis >= x->rank)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld for rank %d",
        LABEL (n), (long long) onnx_attr_int (n, "axis", 0), x->rank);
  int64_t dims[ONNX_MAX_RANK];
  for (int d = 0; d < x->rank; d++)
    dims[d] = x->dims[d];
  dims[axis] = 0;
  for (size_t k = 0; k < n->n_input; k++) {
    const onnx_value *v = onnx_node_input (im, n, k);
    bool ok = v && v->rank == x->rank && v->is_int == x->is_int;
    for (int d = 0; ok && d < x->rank; d++)
      ok = d == axis || v->dims[d] == x->dims[d];
    if (!ok)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: its constant inputs "
          "differ in type, rank or shape off the axis", LABEL (n));
    dims[axis] += v->dims[axis];
  }
  size_t outer = 1, count = 1;
  for (int d = 0; d < axis; d++)
    outer *= (size_t) dims[d];
  for (int d = 0; d < x->rank; d++)
    count *= (size_t) dims[d];
  onnx_value *o = fold_to (im, n, x->is_int, x->rank, dims, count, err);
  if (!o)
    return err->status;
  size_t at = 0;
  for (size_t r = 0; r < outer; r++)
    for (size_t k = 0; k < n->n_input; k++) {
      const onnx_value *v = onnx_node_input (im, n, k);
      const size_t block = outer ? v->count / outer : 0;
      for (size_t e = 0; e < block; e++, at++)
        if (x->is_int)
          o->i[at] = v->i[r * block + e];
        else
          o->f[at] = v->f[r * block + e];
    }
  return TT_OK;
}

/* Expand (c, shape) of a constant c whose elements are all one value:
 * that value, the batch (a symbolic dimension of shape) kept as 1 (only
 * the recurrent operators read it, as an initial state) */
static tt_status
fold_expand (onnx_import * im, const Onnx__NodeProto * n, tt_error * err)
{
  char label[256];
  const onnx_value *x = onnx_node_input (im, n, 0), *sh =
      onnx_node_input (im, n, 1);
  bool uniform = x->count > 0;
  for (size_t k = 1; uniform && k < x->count; k++)
    uniform = x->is_int ? x->i[k] == x->i[0] : x->f[k] == x->f[0];
  if (!sh || !sh->is_int || sh->rank != 1 || sh->count > ONNX_MAX_RANK ||
      !uniform)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: supported is an Expand "
        "of a constant of one repeated value to a constant shape", LABEL (n));
  int64_t dims[ONNX_MAX_RANK] = { 0 };
  size_t count = 1;
  for (size_t k = 0; k < sh->count; k++) {
    dims[k] = sh->i[k] == ONNX_BATCH ? 1 : sh->i[k];
    if (dims[k] < 0 || dims[k] > (1 << 24))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: shape dimension %lld",
          LABEL (n), (long long) sh->i[k]);
    count *= (size_t) dims[k];
    if (count > ONNX_MAX_ELEMENTS)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: too many elements",
          LABEL (n));
  }
  onnx_value *o = fold_to (im, n, x->is_int, (int) sh->count, dims, count,
      err);
  if (!o)
    return err->status;
  for (size_t k = 0; k < count; k++)
    if (x->is_int)
      o->i[k] = x->i[0];
    else
      o->f[k] = x->f[0];
  return TT_OK;
}

tt_status
onnx_fold_rnn (onnx_import * im, int node, bool *done, tt_error * err)
{
  const Onnx__NodeProto *n = im->proto->graph->node[node];
  *done = false;
  const bool slice = !strcmp (n->op_type, "Slice"),
      concat = !strcmp (n->op_type, "Concat"),
      expand = !strcmp (n->op_type, "Expand");
  if (!slice && !concat && !expand)
    return TT_OK;
  bool higher = false;
  for (size_t k = 0; k < n->n_input; k++) {
    const onnx_value *v = onnx_node_input (im, n, k);
    if (v && !v->is_const)
      return TT_OK;
    higher |= v && v->rank != 1;
  }
  if (!onnx_node_input (im, n, 0) || (concat && !higher))
    return TT_OK;               /* 1-D concatenations: onnx_fold.c */
  *done = true;
  return slice ? fold_slice (im, n, err) : concat ? fold_concat (im, n, err)
      : fold_expand (im, n, err);
}

/* ---- the recurrent operators ----------------------------------------- */

/* an initial state: absent, or a constant of zeros */
static bool
zero_state (const onnx_value * v)
{
  if (!v)
    return true;
  if (!v->is_const || v->is_int)
    return false;
  for (size_t k = 0; k < v->count; k++)
    if (v->f[k] != 0.0f)
      return false;
  return true;
}

tt_status
onnx_map_recurrent (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  const bool lstm = !strcmp (n->op_type, "LSTM");
  /* RNN (tanh): one gate, the engine's rnn */
  const bool plain = !strcmp (n->op_type, "RNN");
  const int gates = lstm ? 4 : plain ? 1 : 3;
  const int64_t H = onnx_attr_int (n, "hidden_size", 0);
  const Onnx__AttributeProto *dir = onnx_attr (n, "direction");
  if (dir && dir->has_s && !(dir->s.len == 7 &&
          !memcmp (dir->s.data, "forward", 7)))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: direction '%.*s': "
        "supported is forward (a bidirectional or reverse %s is not)",
        LABEL (n), (int) (dir->s.len < 20 ? dir->s.len : 20),
        (const char *) dir->s.data, n->op_type);
  if (plain) {
    const Onnx__AttributeProto *a = onnx_attr (n, "activations");
    if (a && (a->n_strings != 1 || a->strings[0].len != 4 ||
            memcmp (a->strings[0].data, "Tanh", 4)))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: activations '%.*s'%s: "
          "supported is Tanh (PyTorch's nn.RNN default; the rnn layer's "
          "hidden_state_activation)", LABEL (n), a->n_strings ?
          (int) (a->strings[0].len < 20 ? a->strings[0].len : 20) : 0,
          a->n_strings ? (const char *) a->strings[0].data : "",
          a->n_strings > 1 ? ", ..." : "");
  }
  if ((!plain && onnx_attr (n, "activations")) || onnx_attr (n, "clip") ||
      onnx_attr_int (n, "input_forget", 0) || onnx_attr_int (n, "layout", 0))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: activations, clip, "
        "input_forget and layout = 1 are not supported (PyTorch's %s is "
        "the defaults)", LABEL (n), n->op_type);
  const int64_t lbr = onnx_attr_int (n, "linear_before_reset", 0);
  onnx_value *x = rnn_act (im, n, 0, err);
  if (!x)
    return err->status;
  if (x->rank != 3 || x->batch_axis != 1)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its input must be a "
        "time-major sequence [T, N, F] (a batch_first [N, T, F] transposed "
        "by [1, 0, 2], as PyTorch writes it)", LABEL (n));
  const int64_t T = x->dims[0], F = x->dims[2];
  const onnx_value *W = onnx_node_input (im, n, 1), *R =
      onnx_node_input (im, n, 2), *B = onnx_node_input (im, n, 3);
  if (!W || !R || !W->is_const || !R->is_const || W->is_int || R->is_int
      || H < 1 || H > (1 << 20) || W->count != (size_t) (gates * H * F)
      || R->count != (size_t) (gates * H * H))
    return onnx_fail (im, err, TT_ERR_INVALID,
        "%s: W [1, %d*%lld, %lld] "
        "and R [1, %d*%lld, %lld] must be float constants (hidden_size "
        "%lld)", LABEL (n), gates, (long long) H, (long long) F, gates,
        (long long) H, (long long) H, (long long) H);
  if (!B || !B->is_const || B->is_int || B->count != (size_t) (2 * gates * H))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its bias B must be a "
        "float constant of %lld values (a %s without bias is not "
        "supported: the engine's has one)", LABEL (n),
        (long long) (2 * gates * H), n->op_type);
  if (onnx_node_input (im, n, 4))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: sequence_lens is given: "
        "not supported (every sequence has the input's length)", LABEL (n));
  if (!zero_state (onnx_node_input (im, n, 5)) || (lstm &&
          !zero_state (onnx_node_input (im, n, 6))))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: initial states given "
        "as inputs are not supported (only zeros)", LABEL (n));
  if (lstm && onnx_node_input (im, n, 7))
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: peephole weights P "
        "are not supported", LABEL (n));
  const onnx_value *Y = onnx_node_output (im, n, 0), *Yh =
      onnx_node_output (im, n, 1), *Yc = onnx_node_output (im, n, 2);
  const bool seq = Y && Y->consumers > 0;
  if (lstm && Yc && Yc->consumers > 0)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its cell state Y_c is "
        "read: not supported", LABEL (n));
  if (seq && Yh && Yh->consumers > 0)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: both its sequence Y "
        "and its final state Y_h are read: not supported (read one)",
        LABEL (n));
  /* our lstm / gru read 1:T:F */
  int in_layer = x->layer;
  if (!x->seq) {
    in_layer = onnx_layer_add (im, n->name, "reshape", err);
    if (in_layer < 0)
      return err->status;
    onnx_layer *r = &im->layers[in_layer];
    r->inputs[0] = x->layer;
    r->n_inputs = 1;
    onnx_layer_key (r, "target_shape = 1:%lld:%lld", (long long) T,
        (long long) F);
  }
  int l = onnx_layer_add (im, n->name, lstm ? "lstm" : plain ? "rnn" :
      "gru", err);
  if (l < 0)
    return err->status;
  im->layers[l].inputs[0] = in_layer;
  im->layers[l].n_inputs = 1;
  onnx_layer_key (&im->layers[l], "unit = %lld", (long long) H);
  if (seq)
    onnx_layer_key (&im->layers[l], "return_sequences = true");
  if (!lstm && !plain)
    onnx_layer_key (&im->layers[l], "reset_after = %s", lbr ? "true" : "false");
  /* ours: weight_ih [F][g*H], weight_hh [H][g*H], bias_ih, bias_hh [g*H],
   * gates i, f, g, o (lstm) or z, r, g (gru); ONNX's rows are gates
   * i, o, f, c (LSTM) or z, r, h (GRU) */
  static const int lstm_gate[4] = { 0, 2, 3, 1 }, gru_gate[3] = { 0, 1, 2 };
  /* (rnn: one gate, gru_gate's first) */
  const int *src = lstm ? lstm_gate : gru_gate;
  const size_t G = (size_t) (gates * H);
  float *wih = onnx_weight_new (im, &im->layers[l], (size_t) F * G, err);
  float *whh =
      wih ? onnx_weight_new (im, &im->layers[l], (size_t) H * G, err) : NULL;
  float *bih = whh ? onnx_weight_new (im, &im->layers[l], G, err) : NULL;
  float *bhh = bih ? onnx_weight_new (im, &im->layers[l], G, err) : NULL;
  if (!bhh)
    return err->status;
  for (int q = 0; q < gates; q++)
    for (int64_t h = 0; h < H; h++) {
      const size_t row = (size_t) (src[q] * H + h), col = (size_t) (q * H + h);
      for (int64_t f = 0; f < F; f++)
        wih[(size_t) f * G + col] = W->f[row * (size_t) F + (size_t) f];
      for (int64_t j = 0; j < H; j++)
        whh[(size_t) j * G + col] = R->f[row * (size_t) H + (size_t) j];
      bih[col] = B->f[row];
      bhh[col] = B->f[G + row];
    }
  if (seq) {
    const int64_t dims[4] = { T, 1, ONNX_BATCH, H };
    onnx_value *y = rnn_set (im, n, 0, l, 4, dims, 2, true);
    y->sole_seq = y->consumers == 1;
  } else {
    const int64_t dims[3] = { 1, ONNX_BATCH, H };
    rnn_set (im, n, 1, l, 3, dims, 1, false);
  }
  return TT_OK;
}

/* Transpose: the batch and time axes of a sequence swapped */
tt_status
onnx_map_transpose (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = rnn_act (im, n, 0, err);
  if (!x)
    return err->status;
  const Onnx__AttributeProto *p = onnx_attr (n, "perm");
  if (x->rank != 3 || x->batch_axis > 1 || !p || p->n_ints != 3 ||
      p->ints[0] != 1 || p->ints[1] != 0 || p->ints[2] != 2)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: supported is perm "
        "[1, 0, 2] of a rank-3 tensor with the batch first or second (the "
        "batch and time axes of a sequence around an LSTM or GRU)", LABEL (n));
  const int64_t dims[3] = { x->dims[1], x->dims[0], x->dims[2] };
  onnx_value *o = rnn_set (im, n, 0, x->layer, 3, dims, 1 - x->batch_axis,
      x->seq);
  o->sole_seq = x->sole_seq && o->consumers == 1;
  return TT_OK;
}

/* a batch-major activation x re-viewed as rank r dims: nothing when the
 * engine's shape stays, else a flatten (rank 2) or a reshape */
static tt_status
relabel (onnx_import * im, const Onnx__NodeProto * n, onnx_value * x, int r,
    const int64_t * dims, bool seq, tt_error * err)
{
  onnx_value probe = { 0 };
  probe.rank = r;
  probe.seq = seq;
  for (int d = 0; d < r; d++)
    probe.dims[d] = dims[d];
  int64_t a[3], b[3];
  engine_shape (x, a);
  engine_shape (&probe, b);
  if (a[0] == b[0] && a[1] == b[1] && a[2] == b[2]) {
    rnn_set (im, n, 0, x->layer, r, dims, 0, seq)->sole_seq = x->sole_seq;
    return TT_OK;
  }
  int l = onnx_layer_add (im, n->name, r == 2 ? "flatten" : "reshape", err);
  if (l < 0)
    return err->status;
  im->layers[l].inputs[0] = x->layer;
  im->layers[l].n_inputs = 1;
  if (r != 2)
    onnx_layer_key (&im->layers[l], "target_shape = %lld:%lld:%lld",
        (long long) b[0], (long long) b[1], (long long) b[2]);
  rnn_set (im, n, 0, l, r, dims, 0, seq);
  return TT_OK;
}

/* Squeeze of an activation: axes of size 1 (not the batch) dropped */
tt_status
onnx_map_squeeze (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  onnx_value *x = rnn_act (im, n, 0, err);
  if (!x)
    return err->status;
  bool mark[ONNX_MAX_RANK] = { false };
  const onnx_value *ax = onnx_node_input (im, n, 1);
  const Onnx__AttributeProto *a = onnx_attr (n, "axes");
  size_t count = ax ? ax->count : a ? a->n_ints : 0;
  if ((ax && (!ax->is_const || !ax->is_int)) || !count)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: its axes must be "
        "integer constants (a Squeeze of every size-1 axis is not "
        "supported: the batch could be one)", LABEL (n));
  for (size_t k = 0; k < count; k++) {
    int64_t d = ax ? ax->i[k] : a->ints[k];
    if (d < 0)
      d += x->rank;
    if (d < 0 || d >= x->rank || d == x->batch_axis || x->dims[d] != 1)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: axis %lld is not an "
          "axis of size 1 other than the batch", LABEL (n),
          (long long) (ax ? ax->i[k] : a->ints[k]));
    mark[d] = true;
  }
  int64_t dims[ONNX_MAX_RANK];
  int r = 0, batch = 0;
  for (int d = 0; d < x->rank; d++)
    if (!mark[d]) {
      if (d == x->batch_axis)
        batch = r;
      dims[r++] = x->dims[d];
    }
  if (r < 2 || r > 4)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: a result of rank %d",
        LABEL (n), r);
  if (x->batch_axis != 0 || batch != 0) {
    /* a view of a recurrent layer's output: the data does not move */
    rnn_set (im, n, 0, x->layer, r, dims, batch, x->seq)->sole_seq =
        x->sole_seq && onnx_node_output (im, n, 0)->consumers == 1;
    return TT_OK;
  }
  return relabel (im, n, x, r, dims, x->seq && r == 3, err);
}

/* the last step of a recurrent layer's sequence: the layer without
 * return_sequences, when nothing else reads the sequence */
static bool
drop_sequences (onnx_import * im, const onnx_value * x)
{
  onnx_layer *l = &im->layers[x->layer];
  char *at = strstr (l->keys, "return_sequences = true\n");
  if (!x->sole_seq || !at || (strcmp (l->type, "lstm") &&
          strcmp (l->type, "gru") && strcmp (l->type, "rnn")))
    return false;
  memmove (at, at + strlen ("return_sequences = true\n"),
      strlen (at + strlen ("return_sequences = true\n")) + 1);
  return true;
}

tt_status
onnx_map_gather (onnx_import * im, int node, const Onnx__NodeProto * n,
    tt_error * err)
{
  char label[256];
  (void) node;
  const onnx_value *data = onnx_node_input (im, n, 0), *idx =
      onnx_node_input (im, n, 1);
  int64_t axis = onnx_attr_int (n, "axis", 0);
  if (!data || !idx)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: two inputs expected",
        LABEL (n));
  if (data->is_const && !data->is_int && !idx->is_const && idx->is_int &&
      data->rank == 2 && axis == 0) {
    /* nn.Embedding: a table [V, D] indexed by tokens [N, W] */
    onnx_value *x = rnn_act (im, n, 1, err);
    if (!x)
      return err->status;
    if (x->rank != 2 || x->batch_axis != 0)
      return onnx_fail (im, err, TT_ERR_INVALID, "%s: the indices must be "
          "[N, W] (a batch of token sequences)", LABEL (n));
    int l = onnx_layer_add (im, n->name, "embedding", err);
    if (l < 0)
      return err->status;
    im->layers[l].inputs[0] = x->layer;
    im->layers[l].n_inputs = 1;
    const int64_t V = data->dims[0], D = data->dims[1];
    onnx_layer_key (&im->layers[l], "in_dim = %lld", (long long) V);
    onnx_layer_key (&im->layers[l], "out_dim = %lld", (long long) D);
    float *w = onnx_weight_new (im, &im->layers[l], data->count, err);
    if (!w)
      return err->status;
    memcpy (w, data->f, data->count * sizeof *w);       /* ours [V][D] */
    const int64_t dims[3] = { ONNX_BATCH, x->dims[1], D };
    rnn_set (im, n, 0, l, 3, dims, 0, true);
    return TT_OK;
  }
  onnx_value *x = rnn_act (im, n, 0, err);
  if (!x)
    return err->status;
  int64_t i;
  if (axis < 0)
    axis += x->rank;
  if (!const_index (idx, &i) || idx->rank != 0 || axis < 0 ||
      axis >= x->rank || axis == x->batch_axis)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: supported are a lookup "
        "of an embedding table by token indices, and one constant scalar "
        "index along an axis other than the batch (out[:, -1], h_n[0])",
        LABEL (n));
  const int64_t len = x->dims[axis];
  if (i < 0)
    i += len;
  if (i < 0 || i >= len)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: index %lld out of range "
        "for %lld", LABEL (n), (long long) idx->i[0], (long long) len);
  int64_t dims[ONNX_MAX_RANK];
  int r = 0, batch = 0;
  for (int d = 0; d < x->rank; d++)
    if (d != axis) {
      if (d == x->batch_axis)
        batch = r;
      dims[r++] = x->dims[d];
    }
  if (len == 1 && (x->batch_axis != 0 || batch != 0)) {
    rnn_set (im, n, 0, x->layer, r, dims, batch, x->seq);
    return TT_OK;               /* h_n[0] of one direction */
  }
  if (len == 1)
    return relabel (im, n, x, r, dims, x->seq && r == 3, err);
  if (x->batch_axis != 0 || x->rank != 3 || axis != 1 || !x->seq)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s: a step of a sequence "
        "[N, T, H] along T (axis 1) is supported, not axis %lld of this "
        "rank-%d tensor", LABEL (n), (long long) axis, x->rank);
  if (i == len - 1 && drop_sequences (im, x)) {
    rnn_set (im, n, 0, x->layer, 2, dims, 0, false);
    return TT_OK;
  }
  /* step i of 1:T:H: our slice along the height (1-based, end excluded) */
  int l = onnx_layer_add (im, n->name, "slice", err);
  if (l < 0)
    return err->status;
  im->layers[l].inputs[0] = x->layer;
  im->layers[l].n_inputs = 1;
  onnx_layer_key (&im->layers[l], "axis = 2");
  onnx_layer_key (&im->layers[l], "start_index = %lld", (long long) (i + 1));
  onnx_layer_key (&im->layers[l], "end_index = %lld", (long long) (i + 2));
  rnn_set (im, n, 0, l, 2, dims, 0, false);
  return TT_OK;
}
