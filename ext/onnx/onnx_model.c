/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The ONNX file: its bytes parsed by protobuf-c under an allocation budget
 * (a few times the file's size, so a file cannot ask for more than it
 * could hold), the model's checks (IR version, the default domain's
 * opset), initializers decoded into float or integer constants (raw_data
 * little-endian, or the typed fields; external data refused, naming the
 * file it points to) and the graph inputs as activations with their
 * per-sample shapes.
 */
#include "onnx_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* IR 3 brought opset imports; 9 is ONNX 1.14's */
#define ONNX_IR_MIN 3
#define ONNX_IR_MAX 10
#define ONNX_OPSET_MIN 9
#define ONNX_OPSET_MAX 18

tt_status
onnx_fail (onnx_import * im, tt_error * err, tt_status st, const char *fmt, ...)
{
  if (!err)
    return st;
  va_list ap;
  va_start (ap, fmt);
  int k = snprintf (err->message, sizeof err->message, "%s: ",
      im && im->path ? im->path : "ONNX model");
  if (k < 0 || (size_t) k >= sizeof err->message)
    k = 0;
  vsnprintf (err->message + k, sizeof err->message - (size_t) k, fmt, ap);
  va_end (ap);
  err->status = st;
  return st;
}

const char *
onnx_node_label (const onnx_import * im, const Onnx__NodeProto * n,
    char *buf, size_t cap)
{
  snprintf (buf, cap, "node '%.100s' (%.60s, opset %lld)",
      n->name && *n->name ? n->name : "(unnamed)",
      n->op_type ? n->op_type : "?", (long long) im->opset);
  return buf;
}

/* protobuf-c's allocator: every block carries its size, counted against
 * the budget */
static void *
onnx_alloc (void *data, size_t size)
{
  onnx_import *im = data;
  if (size > im->alloc_budget || size > SIZE_MAX - 16)
    return NULL;
  size_t *p = malloc (size + 16);
  if (!p)
    return NULL;
  im->alloc_budget -= size;
  p[0] = size;
  return (char *) p + 16;
}

static void
onnx_free (void *data, void *ptr)
{
  onnx_import *im = data;
  if (!ptr)
    return;
  size_t *p = (size_t *) ((char *) ptr - 16);
  im->alloc_budget += p[0];
  free (p);
}

static size_t
onnx_elem_size (int32_t type)
{
  switch (type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
      return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
      return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
      return 1;
    default:
      return 0;
  }
}

static uint64_t
onnx_le (const uint8_t * p, size_t n)
{
  uint64_t v = 0;
  for (size_t k = 0; k < n; k++)
    v |= (uint64_t) p[k] << (8 * k);
  return v;
}

tt_status
onnx_tensor_decode (onnx_import * im, const Onnx__TensorProto * t,
    const char *what, onnx_value * v, tt_error * err)
{
  const char *name = t->name && *t->name ? t->name : "(unnamed)";
  if (t->has_data_location &&
      t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    const char *loc = NULL;
    for (size_t k = 0; k < t->n_external_data; k++)
      if (t->external_data[k]->key &&
          !strcmp (t->external_data[k]->key, "location"))
        loc = t->external_data[k]->value;
    return onnx_fail (im, err, TT_ERR_INVALID, "%s '%.200s' keeps its data "
        "in an external file ('%.300s'): external data is not supported; "
        "save the model with its data inside (onnx.save (model, path, "
        "save_as_external_data=False), up to 2 GB)", what, name,
        loc ? loc : "no location given");
  }
  if (t->segment)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s '%.200s' is segmented: "
        "not supported", what, name);
  const int32_t type = t->has_data_type ? t->data_type : 0;
  const size_t es = onnx_elem_size (type);
  if (!es)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s '%.200s' has data type "
        "%d: supported are float (1), double (11), int64 (7), int32 (6), "
        "int8 (3), uint8 (2), bool (9)", what, name, (int) type);
  if (t->n_dims > ONNX_MAX_RANK)
    return onnx_fail (im, err, TT_ERR_INVALID, "%s '%.200s' has %zu "
        "dimensions (at most %d)", what, name, t->n_dims, ONNX_MAX_RANK);
  size_t count = 1;
  for (size_t k = 0; k < t->n_dims; k++) {
    if (t->dims[k] < 0 || (uint64_t) t->dims[k] > ONNX_MAX_ELEMENTS ||
        (t->dims[k] && count > ONNX_MAX_ELEMENTS / (size_t) t->dims[k]))
      return onnx_fail (im, err, TT_ERR_INVALID, "%s '%.200s': dimension "
          "%zu is %lld (at most %zu elements in all)", what, name, k,
          (long long) t->dims[k], ONNX_MAX_ELEMENTS);
    count *= (size_t) t->dims[k];
    v->dims[k] = t->dims[k];
  }
  v->rank = (int) t->n_dims;
  v->count = count;
  v->is_const = true;
  const bool is_float = type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
      type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
  v->is_int = !is_float;
  size_t have;
  if (t->has_raw_data)
    have = t->raw_data.len / es;
  else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
    have = t->n_float_data;
  else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
    have = t->n_double_data;
  else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
    have = t->n_int64_data;
  else
    have = t->n_int32_data;
  if (have != count || (t->has_raw_data && t->raw_data.len != count * es))
    return onnx_fail (im, err, TT_ERR_PARSE, "%s '%.200s' holds %zu "
        "values for its %zu elements", what, name, t->has_raw_data ?
        t->raw_data.len / es : have, count);
  if (is_float)
    v->f = malloc ((count ? count : 1) * sizeof *v->f);
  else
    v->i = malloc ((count ? count : 1) * sizeof *v->i);
  if (is_float ? !v->f : !v->i)
    return onnx_fail (im, err, TT_ERR_NOMEM, "out of memory for %s "
        "'%.200s'", what, name);
  for (size_t k = 0; k < count; k++) {
    if (t->has_raw_data) {
      const uint8_t *p = t->raw_data.data + k * es;
      uint64_t bits = onnx_le (p, es);
      if (type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        uint32_t b32 = (uint32_t) bits;
        memcpy (&v->f[k], &b32, 4);
      } else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
        double d;
        memcpy (&d, &bits, 8);
        v->f[k] = (float) d;
      } else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
        v->i[k] = (int64_t) bits;
      else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32)
        v->i[k] = (int32_t) (uint32_t) bits;
      else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__INT8)
        v->i[k] = (int8_t) (uint8_t) bits;
      else
        v->i[k] = (int64_t) bits;
    } else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
      v->f[k] = t->float_data[k];
    else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
      v->f[k] = (float) t->double_data[k];
    else if (type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
      v->i[k] = t->int64_data[k];
    else
      v->i[k] = t->int32_data[k];
  }
  return TT_OK;
}

/* a graph input: an activation, its first dimension the batch */
static tt_status
onnx_input_value (onnx_import * im, const Onnx__ValueInfoProto * in,
    onnx_value * v, tt_error * err)
{
  const char *name = in->name;
  const Onnx__TypeProto *tp = in->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
      !tp->tensor_type || !tp->tensor_type->shape)
    return onnx_fail (im, err, TT_ERR_INVALID, "graph input '%.200s' is not "
        "a tensor of known rank", name);
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  /* integer inputs: token indices [N, W] of an embedding (onnxrnn),
   * fed as floats */
  const bool tokens = tt->has_elem_type && tt->shape->n_dim == 2 &&
      (tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
      tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32);
  if (!tokens && (!tt->has_elem_type
          || tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT))
    return onnx_fail (im, err, TT_ERR_INVALID,
        "graph input '%.200s' has "
        "element type %d: only float (1) inputs are supported (and int64 "
        "or int32 token indices [N, W] for an embedding)", name,
        tt->has_elem_type ? (int) tt->elem_type : 0);
  v->is_int = tokens;
  const size_t rank = tt->shape->n_dim;
  if (rank < 2 || rank > 4)
    return onnx_fail (im, err, TT_ERR_INVALID, "graph input '%.200s' has "
        "rank %zu: supported are [N, F], [N, C, L] and [N, C, H, W]", name,
        rank);
  v->rank = (int) rank;
  v->dims[0] = ONNX_BATCH;
  for (size_t k = 0; k < rank; k++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
    bool known = d->value_case ==
        ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    if (k == 0) {
      if (known && d->dim_value > 0 && d->dim_value <= 65536)
        im->export_batch = d->dim_value;
      continue;
    }
    if (!known || d->dim_value < 1 || d->dim_value > (1 << 24))
      return onnx_fail (im, err, TT_ERR_INVALID, "graph input '%.200s': "
          "dimension %zu must be a number from 1 to 2^24 (only the batch "
          "may be symbolic)", name, k);
    v->dims[k] = d->dim_value;
  }
  return TT_OK;
}

tt_status
onnx_model_read (onnx_import * im, const void *data, size_t len, tt_error * err)
{
  if (len > ONNX_MAX_FILE)
    return onnx_fail (im, err, TT_ERR_INVALID, "%zu bytes: larger than the "
        "%zu an ONNX model may have here", len, ONNX_MAX_FILE);
  if (len == 0)
    return onnx_fail (im, err, TT_ERR_PARSE, "empty file: not an ONNX "
        "model");
  im->alloc_budget = 8 * len + ((size_t) 16 << 20);
  ProtobufCAllocator a = { onnx_alloc, onnx_free, im };
  im->proto = onnx__model_proto__unpack (&a, len, data);
  if (!im->proto)
    return onnx_fail (im, err, TT_ERR_PARSE, "not an ONNX model (its bytes "
        "are not an ONNX ModelProto: truncated, or another kind of file)");
  const Onnx__ModelProto *m = im->proto;
  if (!m->graph || !m->has_ir_version)
    return onnx_fail (im, err, TT_ERR_PARSE, "not an ONNX model (no %s): "
        "truncated, or another kind of file", !m->graph ? "graph" :
        "IR version");
  im->ir_version = m->ir_version;
  if (m->ir_version < ONNX_IR_MIN || m->ir_version > ONNX_IR_MAX)
    return onnx_fail (im, err, TT_ERR_INVALID, "IR version %lld: supported "
        "are %d to %d", (long long) m->ir_version, ONNX_IR_MIN, ONNX_IR_MAX);
  im->opset = -1;
  for (size_t k = 0; k < m->n_opset_import; k++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[k];
    if (!o->domain || !*o->domain || !strcmp (o->domain, "ai.onnx"))
      im->opset = o->has_version ? o->version : 1;
  }
  if (im->opset < 0)
    return onnx_fail (im, err, TT_ERR_PARSE, "no opset for the default ONNX "
        "domain: truncated, or not an ONNX model");
  if (im->opset < ONNX_OPSET_MIN || im->opset > ONNX_OPSET_MAX)
    return onnx_fail (im, err, TT_ERR_INVALID, "opset %lld of the default "
        "domain: supported are %d to %d (torch.onnx.export (..., "
        "opset_version=13 to 17))", (long long) im->opset, ONNX_OPSET_MIN,
        ONNX_OPSET_MAX);
  const Onnx__GraphProto *g = m->graph;
  if (g->n_node > ONNX_MAX_NODES)
    return onnx_fail (im, err, TT_ERR_INVALID, "%zu nodes (at most %d)",
        g->n_node, ONNX_MAX_NODES);
  if (g->n_sparse_initializer)
    return onnx_fail (im, err, TT_ERR_INVALID, "sparse initializers are not "
        "supported");
  for (size_t k = 0; k < g->n_initializer; k++) {
    const Onnx__TensorProto *t = g->initializer[k];
    if (!t->name || !*t->name)
      return onnx_fail (im, err, TT_ERR_INVALID, "initializer %zu has no "
          "name", k);
    if (onnx_value_find (im, t->name) >= 0)
      return onnx_fail (im, err, TT_ERR_INVALID, "initializer '%.200s' is "
          "defined twice", t->name);
    int v = onnx_value_add (im, t->name, err);
    if (v < 0)
      return err ? err->status : TT_ERR_NOMEM;
    tt_status st = onnx_tensor_decode (im, t, "initializer", &im->values[v],
        err);
    if (st)
      return st;
  }
  size_t inputs = 0;
  for (size_t k = 0; k < g->n_input; k++) {
    const Onnx__ValueInfoProto *in = g->input[k];
    if (!in->name || !*in->name)
      return onnx_fail (im, err, TT_ERR_INVALID, "graph input %zu has no "
          "name", k);
    if (onnx_value_find (im, in->name) >= 0)
      continue;                 /* an initializer listed as an input */
    int v = onnx_value_add (im, in->name, err);
    if (v < 0)
      return err ? err->status : TT_ERR_NOMEM;
    tt_status st = onnx_input_value (im, in, &im->values[v], err);
    if (st)
      return st;
    inputs++;
  }
  if (!inputs)
    return onnx_fail (im, err, TT_ERR_INVALID, "the graph has no input "
        "besides its initializers");
  if (g->n_output != 1)
    return onnx_fail (im, err, TT_ERR_INVALID, "the graph has %zu outputs: "
        "exactly one is supported (the logits)", g->n_output);
  return TT_OK;
}

void
onnx_import_free (onnx_import * im)
{
  for (size_t k = 0; k < im->n_values; k++) {
    free (im->values[k].f);
    free (im->values[k].i);
  }
  free (im->values);
  free (im->table);
  free (im->order);
  free (im->absorbed);
  for (size_t k = 0; k < im->n_layers; k++)
    for (int w = 0; w < im->layers[k].n_w; w++)
      free (im->layers[k].w[w]);
  free (im->layers);
  if (im->proto) {
    ProtobufCAllocator a = { onnx_alloc, onnx_free, im };
    onnx__model_proto__free_unpacked (im->proto, &a);
  }
  memset (im, 0, sizeof *im);
}
