/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the importer's files share: the values of the graph (initializers,
 * folded constants, activations with their per-sample shapes), the layers
 * being built, the one failure function.
 */
#ifndef TT_ONNX_INTERNAL_H
#define TT_ONNX_INTERNAL_H

#include "tt_onnx.h"
#include "onnx.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ONNX_MAX_RANK 8
/* a dimension standing for the batch (Shape of an activation) */
#define ONNX_BATCH INT64_MIN
/* bounds on what a file may hold */
#define ONNX_MAX_FILE ((size_t) 1 << 30)
#define ONNX_MAX_NODES 100000
#define ONNX_MAX_ELEMENTS ((size_t) 1 << 28)
#define ONNX_MAX_LAYER_WEIGHTS 8

typedef struct {
  const char *name;             /* the ONNX value's name (in the proto) */
  bool is_const, is_int;
  int rank;                     /* activations: dims[0] is the batch */
  int64_t dims[ONNX_MAX_RANK];
  size_t count;                 /* constants: elements */
  float *f;                     /* constants: float data (owned) */
  int64_t *i;                   /* constants: integer data (owned) */
  int layer;                    /* activations: the layer giving it */
  bool padded;                  /* activations: a pending constant Pad */
  int64_t pads[4];              /* its top, left, bottom, right */
  int producer;                 /* node index; -1 initializer or input */
  int consumers;                /* live nodes reading it */
  /* recurrent graphs (onnx_map_rnn.c): the ONNX tensor's batch axis
   * (1 in [T, N, F], 2 in an LSTM's Y [T, 1, N, H]; the layer's data
   * stays batch-major), a rank-3 activation laid out 1:T:F rather than
   * C:1:L, a recurrent layer's sequence read by this chain alone */
  int batch_axis;
  bool seq, sole_seq;
} onnx_value;

/* where a layer's weight comes from (onnx_weights.c) */
typedef struct {
  const char *value;            /* the initializer's name; NULL: none */
  int64_t rows, cols;           /* > 0: transposed from [rows][cols] */
  float scale;                  /* multiplied by */
  int64_t block;                /* > 1: [rows][cols] of blocks this long */
} onnx_weight_src;

typedef struct {
  char name[64], type[32];
  char keys[512];               /* "key = value\n" lines */
  int inputs[8], n_inputs;      /* layer indices */
  int in_port;                  /* input 0 read as NAME(in_port): an
                                 * output of a split (onnx_map_ops.c) */
  float *w[ONNX_MAX_LAYER_WEIGHTS];     /* in the layer's BIN order, owned */
  size_t wn[ONNX_MAX_LAYER_WEIGHTS];
  int n_w;
  onnx_weight_src src[ONNX_MAX_LAYER_WEIGHTS];  /* export-onnx's record */
} onnx_layer;

typedef struct {
  const char *path;             /* for messages */
  Onnx__ModelProto *proto;
  int64_t opset, ir_version;
  onnx_value *values;
  size_t n_values, cap_values;
  int *table;                   /* hash of values by name: index + 1 */
  size_t table_cap;
  int *order;                   /* the live nodes, in a topological order */
  size_t n_order;
  bool *absorbed;               /* per node: handled with another one */
  onnx_layer *layers;
  size_t n_layers, cap_layers;
  int output;                   /* the graph output's value */
  int64_t export_batch;         /* the input's fixed batch, 0: symbolic */
  tt_onnx_options opt;
  const char *loss, *optimizer;
  bool training_export;         /* a BatchNormalization or Dropout says so */
  char absorbed_note[128];      /* what the loss absorbed, for the INI */
  size_t alloc_budget;          /* protobuf-c's allocations left */
} onnx_import;

tt_status onnx_fail (onnx_import * im, tt_error * err, tt_status st,
    const char *fmt, ...) __attribute__ ((format (printf, 4, 5)));
/* "node 'NAME' (TYPE, opset N)" for messages */
const char *onnx_node_label (const onnx_import * im, const Onnx__NodeProto * n,
    char *buf, size_t cap);

/* onnx_model.c: the bytes into the proto, checked; initializers and
 * graph inputs as values */
tt_status onnx_model_read (onnx_import * im, const void *data, size_t len,
    tt_error * err);
tt_status onnx_tensor_decode (onnx_import * im, const Onnx__TensorProto * t,
    const char *what, onnx_value * v, tt_error * err);
void onnx_import_free (onnx_import * im);

/* onnx_graph.c: values by name, the node order */
int onnx_value_find (const onnx_import * im, const char *name);
/* node n's input (output) k, NULL when it has none or it is empty */
onnx_value *onnx_node_input (const onnx_import * im, const Onnx__NodeProto * n,
    size_t k);
onnx_value *onnx_node_output (const onnx_import * im,
    const Onnx__NodeProto * n, size_t k);
int onnx_value_add (onnx_import * im, const char *name, tt_error * err);
tt_status onnx_graph_order (onnx_import * im, tt_error * err);

/* onnx_fold.c: a node computed at import time when its inputs are
 * constants (shape arithmetic); *done false when it is not such a node */
tt_status onnx_fold_node (onnx_import * im, int node, bool *done,
    tt_error * err);

/* onnx_map.c: a node onto layers */
tt_status onnx_map_node (onnx_import * im, int node, tt_error * err);
const char *onnx_supported_list (void);
int onnx_layer_add (onnx_import * im, const char *base, const char *type,
    tt_error * err);

/* attribute helpers (onnx_map.c) */
const Onnx__AttributeProto *onnx_attr (const Onnx__NodeProto * n,
    const char *name);
/* ints of an attribute into out[count] (def when absent); false when
 * present with another count */
bool onnx_attr_ints (const Onnx__NodeProto * n, const char *name,
    size_t count, int64_t def, int64_t * out);
int64_t onnx_attr_int (const Onnx__NodeProto * n, const char *name,
    int64_t def);
float onnx_attr_float (const Onnx__NodeProto * n, const char *name,
    float def);

/* onnx_write.c: the INI text and the BIN's bytes, checked by the engine */
tt_status onnx_write_text (onnx_import * im, char **ini, size_t *ini_len,
    unsigned char **bin, size_t *bin_len, tt_error * err);

/* onnx_import.c: a file's bytes, its size bounded (malloc'd) */
tt_status onnx_file_read (const char *path, unsigned char **data,
    size_t *len, tt_error * err);

/* onnx_weights.c: a layer's next weight from the constant v (an
 * initializer), times scale, transposed from [rows][cols] when rows > 0;
 * the source recorded for export-onnx. onnx_weight_back: the inverse,
 * the weight's count values into the initializer's layout in out. */
float *onnx_weight_from (onnx_import * im, onnx_layer * L,
    const onnx_value * v, int64_t rows, int64_t cols, float scale,
    tt_error * err);
void onnx_weight_back (const onnx_weight_src * s, const float *w,
    size_t count, float *out);
/* onnx_weights.c: a layer's next weight, count zeros, filled by a mapping
 * from several initializers (no single source: export-onnx refuses it) */
float *onnx_weight_new (onnx_import * im, onnx_layer * L, size_t count,
    tt_error * err);
/* onnx_map.c: appends a "key = value" line to a layer's INI keys */
void onnx_layer_key (onnx_layer * l, const char *fmt, ...)
    __attribute__((format (printf, 2, 3)));
/* onnx_write.c: the layers in the BIN's order (malloc'd, n_layers) */
int *onnx_layer_order (const onnx_import * im);
/* onnx_import.c: the conversion, im kept for the caller (freed with
 * onnx_import_free); im->path is name */
tt_status onnx_convert_keep (onnx_import * im, const void *data, size_t len,
    const char *name, const tt_onnx_options * opt, char **ini,
    size_t *ini_len, unsigned char **bin, size_t *bin_len, tt_error * err);
/* onnx_map_tf.c: transformer encoders (self-attention onto
 * multi_head_attention, LayerNormalization and its decomposed form,
 * GELU's Erf form, ReduceMean over tokens, Transpose of a constant) */
tt_status onnx_map_tf_transpose (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
tt_status onnx_map_tf_layernorm (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
tt_status onnx_map_tf_reducemean (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);
tt_status onnx_map_tf_div (onnx_import * im, int node,
    const Onnx__NodeProto * n, tt_error * err);

/* onnx_weights.c: a layer's next weight from v, [rows][cols][block]
 * with its first two axes swapped ([cols][rows][block]: ConvTranspose's
 * [C][F/g][kh][kw] into conv2dtranspose's [F/g][C][kh][kw]) */
float *onnx_weight_swapped (onnx_import * im, onnx_layer * L,
    const onnx_value * v, int64_t rows, int64_t cols, int64_t block,
    tt_error * err);

/* onnx_freeze.c: --freeze's layers given `trainable = false` */
tt_status onnx_freeze_apply (onnx_import * im, tt_error * err);

#endif /* TT_ONNX_INTERNAL_H */
