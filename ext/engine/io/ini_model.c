/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reads nntrainer's INI dialect into the model: [Model], [Optimizer],
 * [LearningRateScheduler], [Dataset], [train_set], [valid_set],
 * [test_set] and one section per layer.
 *
 * iniparser lower-cases section names and keys and strips inline comments;
 * values stay as written, so enum values are compared case-insensitively.
 * Unlike nntrainer, an unknown key is an error, never silently ignored:
 * a typo in "learning_rate" must not train with the default.
 */
#include "tt_internal.h"

#include <ctype.h>
#include <errno.h>
#include <iniparser/iniparser.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define INI_MAX_BYTES (64 << 20)

static const char *const ini_universal_keys[] = {
  "type", "input_layers", "input_shape", "trainable", "flatten",
  "activation", "name",
  /* activation = clip's bounds (layers/layer_activation.c) */
  "clip_min", "clip_max",
  /* the recurrent family: nntrainer's time_dist */
  "distribute", NULL
};

/* weight_decay_lambda: nntrainer's older name of
 * weight_regularizer_constant (with weight_decay = l2norm) */
static const char *const ini_weight_keys[] = {
  "weight_initializer", "bias_initializer", "weight_regularizer",
  "weight_regularizer_constant", "weight_decay", "bias_decay",
  "disable_bias", "weight_decay_lambda", NULL
};

/* model_tensor_type (mixed precision), tensor_format and tensor_type (ignored
 * from an INI, as nntrainer does), save_best_path (tt_model_save_best),
 * clip_grad_by_norm, loss_scale (1 or more), fsu (false only), fsu_path and
 * fsu_lookahead (used only with fsu): nntrainer's [Model] keys of issue
 * 16 */
static const char *const ini_model_keys[] = {
  "type", "epochs", "batch_size", "loss", "save_path",
  "memory_optimization", "continue_train", "model_tensor_type",
  "tensor_format", "save_best_path", "clip_grad_by_norm", "loss_scale",
  "tensor_type", "fsu", "fsu_path", "fsu_lookahead", "memory_swap",
  "memory_swap_path", "memory_swap_lookahead", NULL
};

/* nntrainer's older form keeps the optimizer in [Model] (its application
 * INIs still do) */
static const char *const ini_model_optimizer_keys[] = {
  "optimizer", "learning_rate", "beta1", "beta2", "epsilon", "decay_rate",
  "decay_steps", NULL
};

/* [train_set], [valid_set], [test_set]: nntrainer's data files (type =
 * file, path, buffer_size); accepted, unused like [DataSet] */
static const char *const ini_data_set_keys[] = {
  "type", "path", "buffer_size", NULL
};

/* nntrainer reads TrainData, ValidData, TestData, LabelData and BufferSize
 * (or buffer_size); iniparser lower-cases them */
static const char *const ini_dataset_keys[] = {
  "traindata", "validdata", "testdata", "labeldata", "buffersize",
  "train_data", "valid_data", "test_data", "label_data", "buffer_size",
  NULL
};

/* ---- sections -------------------------------------------------------- */

/* [Model] keys nntrainer accepts that change nothing here or only one
 * thing: see each */
static tt_status
ini_parse_model_nntrainer_keys (tt_model * m, const tt_section * s,
    tt_error * err)
{
  /* nntrainer drops tensor_format from an INI (model_loader.cpp): NHWC is
   * accepted and, as there, the model stays NCHW */
  static const char *const formats[] = { "NCHW", "NHWC", NULL };
  tt_status st;
  int ignored = 0, weight = 0;
  /* weight and activation data types (docs/precision.md): nntrainer's
   * W-A strings, its enum's W..A.. names, and ours with BF16; the same
   * spellings as the precision override, a whole W-A only */
  tt_precision act = TT_PRECISION_FP32;
  const char *tt = tt_section_string (s, "model_tensor_type");
  if (tt && (!tt_precision_parse (tt, &weight, &act) || weight < 0))
    return tt_section_error (s, "model_tensor_type", err, TT_ERR_INVALID,
        "'%s' is not supported (nntrainer's quantized types are not): "
        "expected W-A, W and A each FP32, FP16 or BF16 (nntrainer's "
        "FP32-FP32, FP16-FP16, FP16-FP32, FP32-FP16, or W32A32, W16A16, "
        "W16A32, W32A16; BF16 is ours)", tt);
  if (tt) {
    m->weight_type = (tt_precision) weight;
    m->activation_type = act;
  }
  if ((st = tt_section_enum (s, "tensor_format", formats, &ignored, err)))
    return st;
  /* tensor_type: nntrainer's INI loader drops it unread
   * (model_loader.cpp:129-132), whatever it says; so here */
  /* fsu: nntrainer's flash storage utilization swaps weights to files in
   * fsu_path, loading fsu_lookahead layers ahead (neuralnet.cpp:176-190,
   * 350-362); without it every tensor stays in memory, as here */
  bool fsu = false;
  uint32_t lookahead = 0;
  if ((st = tt_section_bool (s, "fsu", &fsu, err)) ||
      (st = tt_section_uint (s, "fsu_lookahead", 0, UINT32_MAX, &lookahead,
              err)))
    return st;
  if (fsu)
    return tt_section_error (s, "fsu", err, TT_ERR_INVALID, "true is not "
        "supported: nntrainer's fsu swaps weights to files in fsu_path "
        "during the run; tensor-trainer keeps every tensor in its memory "
        "pool (fsu = false, fsu_path and fsu_lookahead are accepted and "
        "change nothing)");
  /* memory_swap (default false), memory_swap_path (default ".") and
   * memory_swap_lookahead: nntrainer's keys before they became fsu
   * (nntrainer 9c6723f2c, nntrainer/models/model_common_properties.h:
   * 133-180). Here swapping serves a memory limit only (plan/remat.c):
   * activations go to a file in memory_swap_path when recomputing them
   * cannot meet the limit; they are read back exactly when backward needs
   * them, so the lookahead is accepted and changes nothing */
  const char *swap_path = tt_section_string (s, "memory_swap_path");
  if ((st = tt_section_bool (s, "memory_swap", &m->memory_swap, err)) ||
      (st = tt_section_uint (s, "memory_swap_lookahead", 0, UINT32_MAX,
              &lookahead, err)))
    return st;
  if (swap_path) {
    if (!*swap_path)
      return tt_section_error (s, "memory_swap_path", err, TT_ERR_INVALID,
          "empty path");
    free (m->memory_swap_path);
    if (!(m->memory_swap_path = strdup (swap_path)))
      return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", s->file);
  }
  const char *best = tt_section_string (s, "save_best_path");
  if (best) {
    if (!*best)
      return tt_section_error (s, "save_best_path", err, TT_ERR_INVALID,
          "empty path");
    free (m->save_best_path);
    m->save_best_path = strdup (best);
    if (!m->save_best_path)
      return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", s->file);
  }
  float clip = 0.0f;
  if ((st = tt_section_float (s, "clip_grad_by_norm", &clip, err)))
    return st;
  if (clip < 0)
    return tt_section_error (s, "clip_grad_by_norm", err, TT_ERR_INVALID,
        "must not be negative (0: no clipping)");
  m->clip_grad_norm = clip;
  /* loss_scale (docs/precision.md): the initial scale of dynamic loss
   * scaling (core/loss_scale.c). nntrainer refuses 0 and, with
   * half-precision activations, scales from 1 without the key; in fp32
   * it multiplies only mse's derivative by the scale and never divides
   * it out. Here a scale above 1 turns dynamic loss scaling on in any
   * precision, divided out before the update (exactly for a power of
   * two), and 1 leaves it off (derivatives are fp32 at every
   * precision). */
  float scale = 1.0f;
  if ((st = tt_section_float (s, "loss_scale", &scale, err)))
    return st;
  if (!(scale >= 1.0f))
    return tt_section_error (s, "loss_scale", err, TT_ERR_INVALID,
        "%g is out of range: the initial scale of dynamic loss scaling is "
        "at least 1 (a power of two, such as 65536, divides out exactly; "
        "1 or none: no scaling)", (double) scale);
  m->loss_scale = scale > 1.0f ? scale : 0.0f;
  return TT_OK;
}

static tt_status
ini_parse_model_section (tt_model * m, const tt_section * s, tt_error * err)
{
  static const char *const loss_names[] = {
    "none", "mse", "cross", "cross_softmax", "cross_sigmoid", "kld", NULL
  };
  tt_status st;
  const char *type = tt_section_string (s, "type");
  if (type && strcasecmp (type, "NeuralNetwork"))
    return tt_section_error (s, "type", err, TT_ERR_INVALID,
        "unknown model type '%s' (expected NeuralNetwork)", type);
  st = tt_section_check_key_lists (s, ini_model_keys,
      ini_model_optimizer_keys, NULL, err);
  if (st)
    return st;
  int loss = (int) m->loss;
  if ((st = tt_section_uint (s, "epochs", 1, 1u << 30, &m->epochs, err)) ||
      (st = tt_section_uint (s, "batch_size", 1, 1u << 16, &m->batch_size,
              err)) ||
      (st = tt_section_enum (s, "loss", loss_names, &loss, err)))
    return st;
  m->loss = (tt_loss_type) loss;
  bool ignored;
  if ((st = tt_section_bool (s, "memory_optimization", &ignored, err)) ||
      (st = tt_section_bool (s, "continue_train", &ignored, err)))
    return st;
  return ini_parse_model_nntrainer_keys (m, s, err);
}

/* The first of [Model]'s optimizer keys it has, or NULL. */
static const char *
ini_model_optimizer_key (const tt_section * s)
{
  for (int i = 0; ini_model_optimizer_keys[i]; i++)
    if (tt_section_has (s, ini_model_optimizer_keys[i]))
      return ini_model_optimizer_keys[i];
  return NULL;
}

static tt_status
ini_split_input_layers (tt_layer * l, const tt_section * s, tt_error * err)
{
  const char *v = tt_section_string (s, "input_layers");
  if (!v)
    return TT_OK;
  const char *p = v;
  for (;;) {
    const char *comma = strchr (p, ',');
    const char *end = comma ? comma : p + strlen (p);
    while (p < end && isspace ((unsigned char) *p))
      p++;
    while (end > p && isspace ((unsigned char) end[-1]))
      end--;
    if (p == end)
      return tt_section_error (s, "input_layers", err, TT_ERR_PARSE,
          "empty layer name in '%s'", v);
    if (l->n_inputs == TT_MAX_IO)
      return tt_section_error (s, "input_layers", err, TT_ERR_INVALID,
          "more than %d inputs", TT_MAX_IO);
    tt_link *link = &l->inputs[l->n_inputs++];
    const char *paren = memchr (p, '(', (size_t) (end - p));
    const char *name_end = paren ? paren : end;
    if ((size_t) (name_end - p) >= TT_NAME_MAX)
      return tt_section_error (s, "input_layers", err, TT_ERR_INVALID,
          "layer name too long in '%s'", v);
    for (size_t i = 0; p + i < name_end; i++)
      link->name[i] = (char) tolower ((unsigned char) p[i]);
    link->name[name_end - p] = '\0';
    link->index = 0;
    if (paren) {
      uint64_t idx;
      if (end[-1] != ')' || !tt_ini_parse_uint (paren + 1, end - 1, &idx)
          || idx >= TT_MAX_IO)
        return tt_section_error (s, "input_layers", err, TT_ERR_PARSE,
            "'%.*s' is not name or name(index) with index < %d",
            (int) (end - p), p, TT_MAX_IO);
      link->index = (uint32_t) idx;
    }
    link->layer = -1;
    if (!comma)
      break;
    p = comma + 1;
  }
  return TT_OK;
}

/* An initializer's name; nntrainer's "none" leaves the memory as its
 * pool gives it (undefined): here it is zeros, so that it is
 * deterministic. */
static tt_status
ini_initializer (const tt_section * s, const char *key, int *out,
    tt_error * err)
{
  const char *v = tt_section_string (s, key);
  if (v && !strcasecmp (v, "none")) {
    *out = TT_INIT_ZEROS;
    return TT_OK;
  }
  return tt_section_enum (s, key, tt_initializer_names, out, err);
}

/* distribute = true: nntrainer's time_dist, the layer applied to each
 * time step alone; a layer that acts on each row of its input alone
 * (tt_layer_ops.distributes) already does that, others are refused */
static tt_status
ini_distribute (const tt_layer_ops * ops, const tt_section * s, tt_error * err)
{
  bool distribute = false;
  tt_status st = tt_section_bool (s, "distribute", &distribute, err);
  if (st || !distribute || ops->distributes)
    return st;
  char allowed[256] = "";
  size_t n = 0;
  for (uint32_t i = 0; tt_layer_ops_at (i); i++)
    if (tt_layer_ops_at (i)->distributes && n < sizeof allowed)
      n += (size_t) snprintf (allowed + n, sizeof allowed - n, "%s%s",
          n ? ", " : "", tt_layer_ops_at (i)->type);
  return tt_section_error (s, "distribute", err, TT_ERR_INVALID,
      "true (time_dist) is not supported on %s: only on layers acting on "
      "each time step alone (%s); false is allowed", ops->type, allowed);
}

static tt_status
ini_parse_weight_keys (tt_layer * l, const tt_section * s, tt_error * err)
{
  static const char *const regularizers[] = { "none", "l2norm", NULL };
  tt_status st;
  int init = -1, binit = -1, reg = 0;
  /* nntrainer's older form named the regularizer weight_decay (now a
   * decoupled decay rate) and its constant weight_decay_lambda */
  const char *decay = tt_section_string (s, "weight_decay");
  const bool legacy = decay && (!strcasecmp (decay, "l2norm") ||
      !strcasecmp (decay, "none"));
  const char *reg_key = legacy ? "weight_decay" : "weight_regularizer";
  const char *constant_key = "weight_regularizer_constant";
  if (legacy && tt_section_has (s, "weight_regularizer"))
    return tt_section_error (s, "weight_decay", err, TT_ERR_INVALID,
        "'%s' is nntrainer's older name of weight_regularizer, which is "
        "set too", decay);
  if (tt_section_has (s, "weight_decay_lambda")) {
    if (tt_section_has (s, constant_key))
      return tt_section_error (s, "weight_decay_lambda", err,
          TT_ERR_INVALID, "nntrainer's older name of %s, which is set too",
          constant_key);
    constant_key = "weight_decay_lambda";
  }
  if ((st = ini_initializer (s, "weight_initializer", &init, err)) ||
      (st = ini_initializer (s, "bias_initializer", &binit, err)) ||
      (st = tt_section_enum (s, reg_key, regularizers, &reg, err)) ||
      (st = tt_section_float (s, constant_key, &l->l2_constant, err)) ||
      (!legacy && (st = tt_section_float (s, "weight_decay",
                  &l->weight_decay, err))) ||
      (st = tt_section_float (s, "bias_decay", &l->bias_decay, err)) ||
      (st = tt_section_bool (s, "disable_bias", &l->disable_bias, err)))
    return st;
  if (init >= 0) {
    l->weight_init = (tt_initializer) init;
    l->weight_init_set = true;
  }
  if (binit >= 0) {
    l->bias_init = (tt_initializer) binit;
    l->bias_init_set = true;
  }
  /* nntrainer's default constant for l2norm */
  if (reg == 1 && !tt_section_has (s, constant_key))
    l->l2_constant = 1.0f;
  if (reg == 0)
    l->l2_constant = 0.0f;
  if (l->l2_constant < 0 || l->weight_decay < 0 || l->bias_decay < 0)
    return tt_section_error (s, NULL, err, TT_ERR_INVALID,
        "regularizer constants and decays must not be negative");
  return TT_OK;
}

/* Why a backbone run by another framework (nntrainer's backbone_tflite,
 * backbone_nnstreamer, backbone = FILE.tflite or another non-INI file)
 * is refused, and what to do instead */
static const char *
ini_external_backbone (bool tflite)
{
  return tflite ? "a TensorFlow Lite model needs TensorFlow Lite at run "
      "time (nntrainer's backbone_tflite), which tensor-trainer does not "
      "link; write its layers as sections of the INI, or convert the model "
      "to ONNX for import" : "nntrainer runs such a model through "
      "nnstreamer's tensor_filter (backbone_nnstreamer), which needs "
      "nnstreamer at run time inside the engine; write its layers as "
      "sections of the INI, or convert the model to ONNX for import";
}

static tt_status
ini_parse_layer_section (tt_model * m, const tt_section * s, tt_error * err)
{
  tt_status st;
  /* first: keys of a longer name would not fit section_lookup's buffer */
  if (strlen (s->name) > TT_LAYER_NAME_MAX)
    return tt_section_error (s, NULL, err, TT_ERR_INVALID,
        "layer name longer than %d characters", TT_LAYER_NAME_MAX);
  /* the optimized INI lists layers and tensors as keys, so a name must
   * read back as one: not a comment, no '=' */
  if (s->name[0] == '#' || s->name[0] == ';' || strchr (s->name, '='))
    return tt_section_error (s, NULL, err, TT_ERR_INVALID,
        "a layer name cannot start with '#' or ';' or hold '='");
  const char *type = tt_section_string (s, "type");
  if (!type)
    return tt_section_error (s, "type", err, TT_ERR_INVALID,
        "missing key (every layer section needs a type)");
  const tt_layer_ops *ops = tt_layer_ops_find (type);
  if (!ops && (!strcasecmp (type, "backbone_tflite") ||
          !strcasecmp (type, "backbone_nnstreamer")))
    return tt_section_error (s, "type", err, TT_ERR_INVALID,
        "%s is not supported: %s", type, ini_external_backbone (!strcasecmp
            (type, "backbone_tflite")));
  if (!ops && !strcasecmp (type, "time_dist"))
    return tt_section_error (s, "type", err, TT_ERR_INVALID,
        "time_dist wraps another layer: write distribute = true in that "
        "layer's section instead");
  if (!ops)
    return tt_section_error (s, "type", err, TT_ERR_INVALID,
        "unknown layer type '%s'", type);
  if (tt_model_find_layer (m, s->name) >= 0)
    return tt_section_error (s, NULL, err, TT_ERR_INVALID,
        "duplicate layer name");

  /* before the values: a misspelt key ("units") is named as such, not
   * reported as the key it was meant to be missing */
  if ((st = tt_section_check_key_lists (s, ini_universal_keys,
              ops->has_weights ? ini_weight_keys : NULL, ops->keys, err)))
    return st;
  tt_layer *l = tt_model_add_layer (m, s->name, s->name, ops, err);
  if (!l)
    return err ? err->status : TT_ERR_NOMEM;
  l->trainable = true;
  l->weight_init = TT_INIT_XAVIER_UNIFORM;
  l->bias_init = TT_INIT_ZEROS;

  if ((st = ini_split_input_layers (l, s, err)) ||
      (st = tt_section_dims (s, "input_shape", &l->input_shape, err)) ||
      (st = tt_section_bool (s, "trainable", &l->trainable, err)) ||
      (st = tt_section_bool (s, "flatten", &l->post_flatten, err)) ||
      (st = ini_distribute (ops, s, err)))
    return st;
  l->has_input_shape = tt_section_has (s, "input_shape");
  /* an activation layer reads activation= as its function (its parse) */
  if (ops->role != TT_ROLE_ACTIVATION) {
    int act = TT_ACT_NONE;
    if ((st = tt_section_enum (s, "activation", tt_activation_names, &act,
                err)))
      return st;
    l->post_activation = (tt_activation) act;
    l->post_clip[0] = TT_CLIP_DEFAULT_MIN;
    l->post_clip[1] = TT_CLIP_DEFAULT_MAX;
    if ((st = tt_clip_parse (s, l->post_activation, l->post_clip, err)))
      return st;
  }
  if (ops->has_weights && (st = ini_parse_weight_keys (l, s, err)))
    return st;
  if (ops->parse && (st = ops->parse (l, s, err)))
    return st;
  return TT_OK;
}

/* [train_set], [valid_set], [test_set]: nntrainer's data files. The data
 * comes from the stream or the command line here: checked as nntrainer
 * does (type file), otherwise unused. */
static tt_status
ini_parse_data_set (const tt_section * s, tt_error * err)
{
  tt_status st = tt_section_check_key_lists (s, ini_data_set_keys, NULL,
      NULL, err);
  if (st)
    return st;
  const char *type = tt_section_string (s, "type");
  if (!type)
    return tt_section_error (s, "type", err, TT_ERR_INVALID,
        "missing key (a data set section needs type = file)");
  if (strcasecmp (type, "file"))
    return tt_section_error (s, "type", err, TT_ERR_INVALID,
        "unknown data set type '%s' (only file, as in nntrainer)", type);
  uint32_t size = 0;
  return tt_section_uint (s, "buffer_size", 1, UINT32_MAX, &size, err);
}

/* Sections that are never layers (nntrainer's ini_interpreter.cpp). */
static bool
ini_not_layer (const char *name)
{
  static const char *const names[] = {
    "model", "optimizer", "learningratescheduler", "dataset", "train_set",
    "valid_set", "test_set", NULL
  };
  for (int i = 0; names[i]; i++)
    if (!strcmp (name, names[i]))
      return true;
  return false;
}

#define BACKBONE_DEPTH 8

/* The files being inlined, outermost first: for cycles and the depth. */
typedef struct
{
  char paths[BACKBONE_DEPTH + 1][PATH_MAX];
  int depth;
} ini_backbone_stack;

static tt_status ini_backbone (tt_model * m, const tt_section * s,
    ini_backbone_stack * stack, tt_error * err);
static char *ini_read_file (const char *path, size_t *len_out, tt_error * err);

/* The layer sections of the backbone INI at path, in order, into the
 * model (its [Model], [Optimizer]... skipped), each trainable as the
 * including section says. The dictionary is kept with the model. */
static tt_status
ini_backbone_layers (tt_model * m, const char *path, bool trainable,
    ini_backbone_stack * stack, tt_error * err)
{
  size_t len, skip;
  char *text = ini_read_file (path, &len, err);
  if (!text)
    return err ? err->status : TT_ERR_IO;
  tt_status st = tt_ini_strict_check (text, len, path, &skip, err);
  dictionary *d = st ? NULL : tt_ini_text_parse (text + skip, len - skip,
      path, err);
  free (text);
  if (st)
    return st;
  if (!d)
    return err ? err->status : TT_ERR_PARSE;
  void **grown = realloc (m->backbone_dicts,
      (m->n_backbone_dicts + 1) * sizeof *grown);
  if (!grown) {
    iniparser_freedict (d);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", path);
  }
  m->backbone_dicts = grown;
  m->backbone_dicts[m->n_backbone_dicts++] = d;
  int nsec = iniparser_getnsec (d);
  for (int i = 0; i < nsec && !st; i++) {
    tt_section s = { path, iniparser_getsecname (d, i), d };
    if (!s.name || !*s.name)
      return tt_fail (err, TT_ERR_PARSE, "%s: section with an empty name",
          path);
    if (tt_plan_section_name (s.name))
      return tt_section_error (&s, NULL, err, TT_ERR_INVALID, "a backbone "
          "cannot hold a plan (use the plain INI it was made from)");
    if (ini_not_layer (s.name))
      continue;
    if (tt_section_has (&s, "backbone")) {
      st = ini_backbone (m, &s, stack, err);
      continue;
    }
    uint32_t before = m->n_layers;
    st = ini_parse_layer_section (m, &s, err);
    if (!st && m->n_layers == before + 1)
      m->layers[before].trainable = trainable;
  }
  return st;
}

/* A section made of another model file (nntrainer's backbone = FILE):
 * an INI's layer sections are inlined in its place, the path relative to
 * the folder of the file that names it; the section's other keys but
 * trainable are not read (as nntrainer: input_layers there has no
 * effect, the backbone's layers carry their own). */
static tt_status
ini_backbone (tt_model * m, const tt_section * s, ini_backbone_stack * stack,
    tt_error * err)
{
  static const char *const keys[] = {
    "backbone", "trainable", "input_layers", NULL
  };
  /* the file first: a TensorFlow Lite backbone's own keys (Input_Shape,
   * Output_Shape) would otherwise be refused as unknown, hiding why */
  const char *file = tt_section_string (s, "backbone");
  size_t len = strlen (file);
  if (len < 4 || strcasecmp (file + len - 4, ".ini"))
    return tt_section_error (s, "backbone", err, TT_ERR_INVALID,
        "backbone %s: only INI backbones are supported: %s", file,
        ini_external_backbone (len >= 7
            && !strcasecmp (file + len - 7, ".tflite")));
  tt_status st = tt_section_check_keys (s, keys, err);
  if (st)
    return st;
  bool trainable = true;
  if ((st = tt_section_bool (s, "trainable", &trainable, err)))
    return st;
  char path[4096], dir[4096];
  snprintf (dir, sizeof dir, "%s", s->file);
  char *slash = strrchr (dir, '/');
  if (file[0] == '/' || !slash)
    snprintf (path, sizeof path, "%s", file);
  else if (snprintf (path, sizeof path, "%.*s/%s", (int) (slash - dir), dir,
          file) >= (int) sizeof path)
    return tt_section_error (s, "backbone", err, TT_ERR_INVALID,
        "path too long");
  if (stack->depth > BACKBONE_DEPTH)
    return tt_section_error (s, "backbone", err, TT_ERR_INVALID,
        "backbone %s: more than %d nested backbones", path, BACKBONE_DEPTH);
  char *real = stack->paths[stack->depth];
  if (!realpath (path, real))
    return tt_section_error (s, "backbone", err, TT_ERR_IO,
        "backbone %s: cannot open: %s", path, strerror (errno));
  for (int i = 0; i < stack->depth; i++)
    if (!strcmp (stack->paths[i], real))
      return tt_section_error (s, "backbone", err, TT_ERR_INVALID,
          "backbone %s includes itself (a cycle of %d file(s))", path,
          stack->depth - i);
  stack->depth++;
  st = ini_backbone_layers (m, path, trainable, stack, err);
  stack->depth--;
  return st;
}

static tt_status ini_parse_dict (tt_model * m, tt_error * err);

/* A last line ending in '\\' continues onto a line that never comes: both
 * parsers drop it silently, but a plan saved after the text would become
 * its continuation and the saved file would not load (found by fuzz_plan).
 * Refused, naming the line. */
static tt_status
ini_check_last_line (const tt_model * m, tt_error * err)
{
  const char *t = m->ini_text;
  size_t end = m->ini_len;
  if (!t)
    return TT_OK;
  if (end > 0 && t[end - 1] == '\n')
    end--;
  size_t start = end;
  while (start > 0 && t[start - 1] != '\n')
    start--;
  while (end > start && isspace ((unsigned char) t[end - 1]))
    end--;
  if (end == start || t[end - 1] != '\\')
    return TT_OK;
  int line = 1;
  for (size_t i = 0; i < start; i++)
    line += t[i] == '\n';
  return tt_fail (err, TT_ERR_PARSE, "%s: line %d, the last, ends with '\\' "
      "(a line continuation) but no line follows", m->path, line);
}

/* The whole file, NUL-terminated (malloc'd), or NULL and an error. */
static char *
ini_read_file (const char *path, size_t *len_out, tt_error * err)
{
  FILE *fp = fopen (path, "rb");
  if (!fp)
    return tt_fail (err, TT_ERR_IO, "%s: cannot open: %s", path,
        strerror (errno)), NULL;
  size_t cap = 4096, len = 0;
  char *text = malloc (cap);
  for (size_t got = 1; text && got > 0;) {
    if (len + 1 == cap) {
      char *grown = cap < INI_MAX_BYTES ? realloc (text, cap * 2) : NULL;
      if (!grown) {
        free (text);
        fclose (fp);
        return tt_fail (err, TT_ERR_INVALID, "%s: larger than %d MiB or out "
            "of memory", path, INI_MAX_BYTES >> 20), NULL;
      }
      text = grown;
      cap *= 2;
    }
    got = fread (text + len, 1, cap - 1 - len, fp);
    len += got;
  }
  bool read_error = ferror (fp);
  fclose (fp);
  if (!text || read_error) {
    free (text);
    return tt_fail (err, TT_ERR_IO, "%s: cannot read", path), NULL;
  }
  text[len] = '\0';
  *len_out = len;
  return text;
}

/* ---- backbones inlined in the text ----------------------------------- */

/* A growing string. */
typedef struct
{
  char *p;
  size_t len, cap;
  bool oom;
} ini_buf;

static void
ini_buf_add (ini_buf * b, const char *s, size_t n)
{
  if (b->oom)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->len + n + 1) * 2;
    char *grown = realloc (b->p, cap);
    if (!grown) {
      b->oom = true;
      return;
    }
    b->p = grown;
    b->cap = cap;
  }
  memcpy (b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

/* The line at *at (without its '\n') and the position after it. */
static const char *
ini_line (const char *text, size_t len, size_t *at, size_t *n)
{
  const char *line = text + *at;
  const char *nl = memchr (line, '\n', len - *at);
  *n = nl ? (size_t) (nl - line) : len - *at;
  *at += *n + (nl ? 1 : 0);
  return line;
}

/* The section name of a header line ("[name]"), else false. */
static bool
ini_header (const char *line, size_t n, const char **name, size_t *name_len)
{
  while (n && (*line == ' ' || *line == '\t')) {
    line++;
    n--;
  }
  if (!n || *line != '[')
    return false;
  const char *close = memchr (line, ']', n);
  if (!close)
    return false;
  *name = line + 1;
  *name_len = (size_t) (close - line - 1);
  return true;
}

/* When the line is "key = value" for key (any case), the value, trimmed. */
static bool
ini_key_value (const char *line, size_t n, const char *key, const char **val,
    size_t *val_len)
{
  while (n && (*line == ' ' || *line == '\t')) {
    line++;
    n--;
  }
  const size_t k = strlen (key);
  if (n <= k || strncasecmp (line, key, k))
    return false;
  size_t i = k;
  while (i < n && (line[i] == ' ' || line[i] == '\t'))
    i++;
  if (i >= n || line[i] != '=')
    return false;
  i++;
  while (i < n && (line[i] == ' ' || line[i] == '\t'))
    i++;
  size_t end = n;
  while (end > i && (line[end - 1] == ' ' || line[end - 1] == '\t' ||
          line[end - 1] == '\r'))
    end--;
  *val = line + i;
  *val_len = end - i;
  return true;
}

static tt_status ini_inline_text (ini_buf * out, const char *text, size_t len,
    const char *file, const char *trainable, size_t trainable_len, int depth,
    tt_error * err);

/* The layer sections of the backbone INI named in file's section, with
 * trainable as that section says, in place of the section. */
static tt_status
ini_inline_backbone (ini_buf * out, const char *file, const char *name,
    size_t name_len, const char *backbone, size_t backbone_len,
    const char *trainable, size_t trainable_len, int depth, tt_error * err)
{
  if (depth > BACKBONE_DEPTH)
    return tt_fail (err, TT_ERR_INVALID, "%s: more than %d nested "
        "backbones", file, BACKBONE_DEPTH);
  char path[4096];
  const char *slash = strrchr (file, '/');
  if (backbone[0] == '/' || !slash)
    snprintf (path, sizeof path, "%.*s", (int) backbone_len, backbone);
  else
    snprintf (path, sizeof path, "%.*s/%.*s", (int) (slash - file), file,
        (int) backbone_len, backbone);
  size_t len, skip;
  char *text = ini_read_file (path, &len, err);
  if (!text)
    return err ? err->status : TT_ERR_IO;
  tt_status st = tt_ini_strict_check (text, len, path, &skip, err);
  char note[512];
  int n = snprintf (note, sizeof note, "# [%.*s]: the layer sections of "
      "the backbone %.*s, inlined\n", (int) name_len, name,
      (int) backbone_len, backbone);
  ini_buf_add (out, note, (size_t) n < sizeof note ? (size_t) n :
      sizeof note - 1);
  if (!st)
    st = ini_inline_text (out, text + skip, len - skip, path,
        trainable ? trainable : "true", trainable ? trainable_len : 4,
        depth + 1, err);
  free (text);
  return st;
}

/* text (of file) into out, each section naming a backbone INI replaced by
 * that INI's layer sections. trainable NULL: the model's own file, copied
 * as it is; else a backbone's: its non-layer sections left out and every
 * layer given trainable = that value (nntrainer's rule, ini_backbone). */
static tt_status
ini_inline_text (ini_buf * out, const char *text, size_t len,
    const char *file, const char *trainable, size_t trainable_len, int depth,
    tt_error * err)
{
  size_t at = 0;
  bool first = true;
  while (at < len) {
    /* one section: from its header (or the start) to the next header */
    const size_t start = at;
    const char *name = NULL;
    size_t name_len = 0, n;
    const char *line = ini_line (text, len, &at, &n);
    bool header = ini_header (line, n, &name, &name_len);
    if (!header && !first)
      return tt_fail (err, TT_ERR_PARSE, "%s: cannot inline", file);
    size_t end = header ? at : start;
    if (!header)
      at = start;
    first = false;
    const char *bb = NULL, *tr = NULL, *v;
    size_t bb_len = 0, tr_len = 0, vl;
    while (end < len) {
      size_t next = end;
      line = ini_line (text, len, &next, &n);
      const char *nm;
      size_t nl;
      if (ini_header (line, n, &nm, &nl))
        break;
      if (header && ini_key_value (line, n, "backbone", &v, &vl)) {
        bb = v;
        bb_len = vl;
      } else if (header && ini_key_value (line, n, "trainable", &v, &vl)) {
        tr = v;
        tr_len = vl;
      }
      end = next;
    }
    at = end;
    tt_status st;
    if (bb && (st = ini_inline_backbone (out, file, name, name_len, bb,
                bb_len, tr, tr_len, depth, err)))
      return st;
    if (bb)
      continue;
    if (!trainable) {
      ini_buf_add (out, text + start, end - start);
      continue;
    }
    char lower[64];
    size_t k = 0;
    for (; header && k < name_len && k < sizeof lower - 1; k++)
      lower[k] = (char) tolower ((unsigned char) name[k]);
    lower[k] = '\0';
    if (!header || ini_not_layer (lower))
      continue;
    /* the layer without its own trainable, then the backbone's */
    size_t p = start;
    while (p < end) {
      size_t q = p;
      line = ini_line (text, end, &q, &n);
      if (!ini_key_value (line, n, "trainable", &v, &vl))
        ini_buf_add (out, line, q - p);
      p = q;
    }
    if (out->len && out->p[out->len - 1] != '\n')
      ini_buf_add (out, "\n", 1);
    ini_buf_add (out, "trainable = ", 12);
    ini_buf_add (out, trainable, trainable_len);
    ini_buf_add (out, "\n\n", 2);
  }
  return out->oom ? tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", file) :
      TT_OK;
}

/* After a load that inlined backbones: the model's text becomes the
 * inlined one, so that what is saved from it (a bundle, an optimized
 * INI) describes the model without the backbone files. */
static tt_status
ini_inline_model_text (tt_model * m, tt_error * err)
{
  if (!m->n_backbone_dicts)
    return TT_OK;
  ini_buf out = { 0 };
  tt_status st = ini_inline_text (&out, m->ini_text, m->ini_len, m->path,
      NULL, 0, 0, err);
  if (st) {
    free (out.p);
    return st;
  }
  free (m->ini_text);
  m->ini_text = out.p;
  m->ini_len = out.len;
  return TT_OK;
}

tt_status
tt_ini_parse_model (tt_model * m, tt_error * err)
{
  /* the text is kept: an optimized INI is this text plus the plan */
  size_t len;
  char *text = ini_read_file (m->path, &len, err);
  if (!text)
    return err ? err->status : TT_ERR_IO;
  m->ini_text = text;
  m->ini_len = len;
  size_t skip;
  tt_status st = tt_ini_strict_check (text, len, m->path, &skip, err);
  if (st)
    return st;
  /* a byte-order mark is not part of the text a plan is saved after */
  memmove (text, text + skip, len - skip + 1);
  m->ini_len = len -= skip;
  /* the text parser, not iniparser_load (): the file's bytes are already
   * here, and iniparser reports errors through one process-wide callback
   * that two models loading at once in different threads would share */
  m->dict = tt_ini_text_parse (text, len, m->path, err);
  if (!m->dict)
    return err ? err->status : TT_ERR_PARSE;
  tt_status st2 = ini_parse_dict (m, err);
  return st2 ? st2 : ini_inline_model_text (m, err);
}

tt_status
tt_ini_parse_model_text (tt_model * m, const char *text, size_t len,
    tt_error * err)
{
  if (len > INI_MAX_BYTES)
    return tt_fail (err, TT_ERR_INVALID, "%s: larger than %d MiB", m->path,
        INI_MAX_BYTES >> 20);
  size_t skip;
  tt_status st = tt_ini_strict_check (text, len, m->path, &skip, err);
  if (st)
    return st;
  text += skip;
  len -= skip;
  m->ini_text = malloc (len + 1);
  if (!m->ini_text)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
  memcpy (m->ini_text, text, len);
  m->ini_text[len] = '\0';
  m->ini_len = len;
  m->dict = tt_ini_text_parse (text, len, m->path, err);
  if (!m->dict)
    return err ? err->status : TT_ERR_PARSE;
  tt_status st2 = ini_parse_dict (m, err);
  return st2 ? st2 : ini_inline_model_text (m, err);
}

/* Sections of a parsed dictionary into the model. */
static tt_status
ini_parse_dict (tt_model * m, tt_error * err)
{
  dictionary *d = m->dict;

  /* a key before the first section has no section to belong to */
  for (int i = 0; i < d->size; i++)
    if (d->key[i] && d->key[i][0] == ':')
      return tt_fail (err, TT_ERR_PARSE,
          "%s: key '%s' appears before any [section]", m->path, d->key[i] + 1);
  /* iniparser joins section and key with ':', so it does not count
   * [plan:x] as a section (its entry reads as key x of [plan], its keys
   * as keys "x:..."): the layer would vanish, or a saved plan would not
   * load back. Sections are the entries without a value. */
  for (int i = 0; i < d->size; i++)
    if (d->key[i] && !d->val[i] && strchr (d->key[i], ':'))
      return tt_fail (err, TT_ERR_PARSE, "%s: [%s]: a section name cannot "
          "contain ':' (it separates section and key)", m->path, d->key[i]);
  tt_status st0 = ini_check_last_line (m, err);
  if (st0)
    return st0;
  /* a plan saved from this model keeps the text up to the stored one */
  st0 = tt_plan_text_check (m, err);
  if (st0)
    return st0;

  int nsec = iniparser_getnsec (d);
  if (nsec <= 0)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: empty model: no [Model] section and no layer sections", m->path);

  const tt_section *opt = NULL, *sched = NULL;
  tt_section opt_s, sched_s, model_s = { m->path, NULL, d };
  /* (large: PATH_MAX per level, so static only when needed) */
  ini_backbone_stack *stack = NULL;
  bool have_model = false;
  for (int i = 0; i < nsec; i++) {
    tt_section s = { m->path, iniparser_getsecname (d, i), d };
    tt_status st = TT_OK;
    if (!s.name || !*s.name) {
      free (stack);
      return tt_fail (err, TT_ERR_PARSE, "%s: section with an empty name",
          m->path);
    }
    if (tt_plan_section_name (s.name)) {
      /* checked against the rebuilt graph at compile (plan_ini.c) */
      m->stored_plan = true;
    } else if (!strcmp (s.name, "model")) {
      have_model = true;
      model_s = s;
      st = ini_parse_model_section (m, &s, err);
    } else if (!strcmp (s.name, "optimizer")) {
      opt_s = s;
      opt = &opt_s;
    } else if (!strcmp (s.name, "learningratescheduler")) {
      sched_s = s;
      sched = &sched_s;
    } else if (!strcmp (s.name, "train_set") || !strcmp (s.name, "valid_set")
        || !strcmp (s.name, "test_set")) {
      st = ini_parse_data_set (&s, err);
    } else if (tt_section_has (&s, "backbone")) {
      if (!stack && !(stack = calloc (1, sizeof *stack)))
        return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", m->path);
      /* the model's own file first: a backbone naming it is a cycle */
      if (stack->depth == 0 && realpath (m->path, stack->paths[0]))
        stack->depth = 1;
      st = ini_backbone (m, &s, stack, err);
    } else if (!strcmp (s.name, "dataset")) {
      /* data comes from the stream or the command line; the keys are
       * accepted so nntrainer's files load, and otherwise unused */
      st = tt_section_check_key_lists (&s, ini_dataset_keys, NULL, NULL, err);
    } else {
      st = ini_parse_layer_section (m, &s, err);
    }
    if (st) {
      free (stack);
      return st;
    }
  }
  free (stack);
  if (!have_model)
    return tt_fail (err, TT_ERR_INVALID, "%s: missing [Model] section",
        m->path);
  /* with an [Optimizer] section, [Model]'s learning_rate, beta1... are
   * ignored (nntrainer's model_loader.cpp filters them out); its
   * optimizer = is refused, as there */
  const char *legacy = ini_model_optimizer_key (&model_s);
  if (opt && tt_section_has (&model_s, "optimizer"))
    return tt_section_error (&model_s, "optimizer", err, TT_ERR_INVALID,
        "optimizers specified twice: here and in [Optimizer] (keep one)");
  if (opt)
    legacy = NULL;
  if (sched && !opt && !legacy)
    return tt_fail (err, TT_ERR_INVALID,
        "%s: [LearningRateScheduler] needs an [Optimizer] section", m->path);
  if (m->n_layers == 0)
    return tt_fail (err, TT_ERR_INVALID, "%s: the model has no layers",
        m->path);
  if (legacy)
    return tt_optimizer_parse_legacy (&m->opt, &model_s, sched, err);
  return tt_optimizer_parse (&m->opt, opt, sched, err);
}
