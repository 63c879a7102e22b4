/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nnstreamer tensor_filter sub-plugin "tensor-trainer": inference with
 * this project's engine in nnstreamer's own tensor_filter.
 *
 *   tensor_filter framework=tensor-trainer model=model.ttb
 *   tensor_filter framework=tensor-trainer model=model.ini,model.bin
 *
 * model is a bundle (tensor-trainer pack, or a save to a name that is not
 * .bin), or an INI file followed by its weights (a BIN in nntrainer's
 * layout, or a bundle); an INI alone is refused, as it has no trained
 * weights. The model is compiled for inference at batch 1: one buffer
 * in, one out. Its inputs are float32 (uint8 is accepted too when the
 * caps say so: the engine widens it), one tensor per input layer, of the
 * input layer's shape; the output is the model's last layer, float32.
 * nnstreamer writes dimensions innermost first: a model whose input is
 * 1:28:28 (channel:height:width) takes 28:28:1:1. With is-updatable=true,
 * a new model= while the pipeline runs is loaded in place of the current
 * one when its shapes are the same (RELOAD_MODEL), e.g. the BIN a
 * tensor_trainer has just saved.
 */
#define G_LOG_DOMAIN "tensor-trainer"

#include <nnstreamer_plugin_api_filter.h>
#include <errno.h>
#include <string.h>

#include "nns_tensors.h"
#include "tt_bundle.h"

#define TT_NNS_FRAMEWORK "tensor-trainer"

typedef struct
{
  GMutex lock;
  tt_model *model;
  gchar *path;                  /* for messages */
  guint n_inputs;
  tt_shape in_shape[NNS_TENSOR_MEMORY_MAX];
  gsize in_count[NNS_TENSOR_MEMORY_MAX];
  tt_shape out_shape;
  gsize out_count;
} TtNnsFilter;

static void
tt_nns_filter_free (TtNnsFilter * f)
{
  if (!f)
    return;
  tt_model_free (f->model);
  g_free (f->path);
  g_mutex_clear (&f->lock);
  g_free (f);
}

/* Opens model_files as the model: a bundle alone, or a model and its
 * weights. NULL, having said why, on failure. */
static TtNnsFilter *
tt_nns_filter_open_model (const char **model_files, int num_models)
{
  TtNnsFilter *f;
  tt_open_options opts = { 0 };
  tt_open_info opened;
  tt_error err;
  tt_model *model;

  if (num_models < 1 || num_models > 2 || !model_files || !model_files[0]) {
    g_warning (TT_NNS_FRAMEWORK ": model= takes a bundle (model.ttb) or an "
        "INI file and its weights (model.ini,model.bin); %d file(s) given.",
        num_models);
    return NULL;
  }
  /* batch 1 (a buffer is a sample), inference only: the smaller pool */
  opts.batch_size = 1;
  opts.inference = TRUE;
  if (num_models == 2)
    opts.weights = model_files[1];
  else
    opts.kind = TT_MODEL_FILE_BUNDLE;
  model = tt_model_open (model_files[0], &opts, &opened, &err);
  if (!model) {
    if (opened.failed_step == TT_OPEN_KIND)
      g_warning (TT_NNS_FRAMEWORK ": %s is not a bundle: an INI file needs "
          "its weights, model=%s,WEIGHTS.bin", model_files[0], model_files[0]);
    else
      g_warning (TT_NNS_FRAMEWORK ": %s%s", opened.failed_step ==
          TT_OPEN_WEIGHTS ? "the weights: " : "", err.message);
    return NULL;
  }
  if (tt_model_num_inputs (model) > NNS_TENSOR_MEMORY_MAX) {
    g_warning (TT_NNS_FRAMEWORK ": the model %s has %u inputs; at most %u are "
        "supported.", model_files[0], tt_model_num_inputs (model),
        NNS_TENSOR_MEMORY_MAX);
    tt_model_free (model);
    return NULL;
  }

  f = g_new0 (TtNnsFilter, 1);
  g_mutex_init (&f->lock);
  f->model = model;
  f->path = g_strdup (model_files[0]);
  f->n_inputs = tt_model_num_inputs (model);
  for (guint i = 0; i < f->n_inputs; i++) {
    tt_model_input_shape (model, i, &f->in_shape[i]);
    f->in_count[i] = (gsize) f->in_shape[i].channel * f->in_shape[i].height *
        f->in_shape[i].width;
  }
  f->out_shape = tt_model_output_shape (model);
  f->out_count = (gsize) f->out_shape.channel * f->out_shape.height *
      f->out_shape.width;
  return f;
}

static int
tt_nns_filter_open (const GstTensorFilterProperties * prop, void **private_data)
{
  TtNnsFilter *f;

  if (*private_data) {
    tt_nns_filter_free (*private_data);
    *private_data = NULL;
  }
  f = tt_nns_filter_open_model (prop->model_files, prop->num_models);
  if (!f)
    return -1;
  *private_data = f;
  return 0;
}

static void
tt_nns_filter_close (const GstTensorFilterProperties * prop,
    void **private_data)
{
  (void) prop;
  tt_nns_filter_free (*private_data);
  *private_data = NULL;
}

static void
tt_nns_filter_output_info (TtNnsFilter * f, GstTensorsInfo * out_info)
{
  out_info->num_tensors = 1;
  tt_nns_info_set_shape (&out_info->info[0], f->out_shape);
}

/* Inputs as caps describe them (SET_INPUT_INFO): the model's shapes, at
 * batch 1, float32 or uint8. */
static gboolean
tt_nns_filter_check_inputs (TtNnsFilter * f, const GstTensorsInfo * in_info)
{
  if (in_info->num_tensors != f->n_inputs) {
    g_warning (TT_NNS_FRAMEWORK ": %u input tensor(s); the model %s takes %u.",
        in_info->num_tensors, f->path, f->n_inputs);
    return FALSE;
  }
  for (guint i = 0; i < f->n_inputs; i++) {
    const GstTensorInfo *info = &in_info->info[i];
    const tt_shape s = f->in_shape[i];
    gchar dims[64];

    if (info->type != _NNS_FLOAT32 && info->type != _NNS_UINT8) {
      g_warning (TT_NNS_FRAMEWORK ": input %u is %s; the engine takes float32 "
          "or uint8.", i, tt_nns_type_name (info->type));
      return FALSE;
    }
    if (!tt_nns_info_is_shape (info, s)) {
      g_warning (TT_NNS_FRAMEWORK ": input %u is %s; the model %s takes "
          "%u:%u:%u:1 (width:height:channel:batch, batch 1).", i,
          tt_nns_dims_string (info, dims, sizeof dims), f->path, s.width,
          s.height, s.channel);
      return FALSE;
    }
  }
  return TRUE;
}

static int
tt_nns_filter_get_model_info (const GstTensorFilterFramework * self,
    const GstTensorFilterProperties * prop, void *private_data,
    model_info_ops ops, GstTensorsInfo * in_info, GstTensorsInfo * out_info)
{
  TtNnsFilter *f = private_data;

  (void) self;
  (void) prop;
  if (!f || !in_info || !out_info)
    return -EINVAL;
  switch (ops) {
    case GET_IN_OUT_INFO:
      in_info->num_tensors = f->n_inputs;
      for (guint i = 0; i < f->n_inputs; i++)
        tt_nns_info_set_shape (&in_info->info[i], f->in_shape[i]);
      tt_nns_filter_output_info (f, out_info);
      return 0;
    case SET_INPUT_INFO:
      if (!tt_nns_filter_check_inputs (f, in_info))
        return -EINVAL;
      tt_nns_filter_output_info (f, out_info);
      return 0;
    default:
      return -ENOENT;
  }
}

static int
tt_nns_filter_invoke (const GstTensorFilterFramework * self,
    GstTensorFilterProperties * prop, void *private_data,
    const GstTensorMemory * input, GstTensorMemory * output)
{
  TtNnsFilter *f = private_data;
  const void *inputs[NNS_TENSOR_MEMORY_MAX];
  tt_dtype types[NNS_TENSOR_MEMORY_MAX];
  tt_error err;
  int ret = -EINVAL;

  (void) self;
  if (!f || !prop || !input || !output)
    return -EINVAL;
  /* (a reload swaps the model and its path under this lock) */
  g_mutex_lock (&f->lock);
  for (guint i = 0; i < f->n_inputs; i++) {
    const tensor_type type = i < prop->input_meta.num_tensors ?
        prop->input_meta.info[i].type : _NNS_FLOAT32;
    const gsize esize = type == _NNS_UINT8 ? 1 : 4;
    if (type != _NNS_FLOAT32 && type != _NNS_UINT8) {
      g_warning (TT_NNS_FRAMEWORK ": input %u is %s; the engine takes float32 "
          "or uint8.", i, tt_nns_type_name (type));
      goto out;
    }
    if (!input[i].data || input[i].size != f->in_count[i] * esize) {
      g_warning (TT_NNS_FRAMEWORK ": input %u has %" G_GSIZE_FORMAT " bytes; "
          "the model %s takes %" G_GSIZE_FORMAT ".", i, input[i].size,
          f->path, f->in_count[i] * esize);
      goto out;
    }
    inputs[i] = input[i].data;
    types[i] = type == _NNS_UINT8 ? TT_DTYPE_UINT8 : TT_DTYPE_FLOAT32;
  }
  if (!output[0].data || output[0].size != f->out_count * sizeof (gfloat)) {
    g_warning (TT_NNS_FRAMEWORK ": the output buffer has %" G_GSIZE_FORMAT
        " bytes; the model %s gives %" G_GSIZE_FORMAT ".", output[0].size,
        f->path, f->out_count * sizeof (gfloat));
    goto out;
  }
  /* the model's pool holds the output until the next pass */
  if (tt_model_eval_batch (f->model, 1, inputs, types, NULL, NULL,
          &err) == TT_OK) {
    memcpy (output[0].data, tt_model_output (f->model), output[0].size);
    ret = 0;
  } else {
    g_warning (TT_NNS_FRAMEWORK ": %s", err.message);
  }
out:
  g_mutex_unlock (&f->lock);
  return ret;
}

static const accl_hw tt_nns_filter_hw[] = { ACCL_CPU };

static int
tt_nns_filter_get_framework_info (const GstTensorFilterFramework * self,
    const GstTensorFilterProperties * prop, void *private_data,
    GstTensorFilterFrameworkInfo * fw_info)
{
  (void) self;
  (void) prop;
  (void) private_data;
  fw_info->name = TT_NNS_FRAMEWORK;
  fw_info->allow_in_place = 0;
  fw_info->allocate_in_invoke = 0;
  fw_info->run_without_model = 0;
  /* open() says which file is wrong and why, in the engine's words */
  fw_info->verify_model_path = 0;
  fw_info->hw_list = tt_nns_filter_hw;
  fw_info->num_hw = G_N_ELEMENTS (tt_nns_filter_hw);
  fw_info->accl_auto = ACCL_CPU;
  fw_info->accl_default = ACCL_CPU;
  fw_info->statistics = NULL;
  return 0;
}

/* Do a and b take and give tensors of the same shapes? */
static gboolean
tt_nns_filter_same_shapes (const TtNnsFilter * a, const TtNnsFilter * b)
{
  if (a->n_inputs != b->n_inputs
      || memcmp (&a->out_shape, &b->out_shape, sizeof a->out_shape))
    return FALSE;
  for (guint i = 0; i < a->n_inputs; i++)
    if (memcmp (&a->in_shape[i], &b->in_shape[i], sizeof a->in_shape[i]))
      return FALSE;
  return TRUE;
}

/* RELOAD_MODEL (tensor_filter is-updatable=true, a new model= while it
 * runs): the new files are opened beside the model in use, which serves
 * until they have loaded; a model of other shapes is refused, as the
 * negotiated caps could not carry it. */
static int
tt_nns_filter_reload (TtNnsFilter * f,
    const GstTensorFilterFrameworkEventData * data)
{
  TtNnsFilter *fresh;
  tt_model *old_model;
  gchar *old_path;

  if (!f || !data)
    return -EINVAL;
  fresh = tt_nns_filter_open_model (data->model_files, data->num_models);
  if (!fresh)
    return -EINVAL;
  if (!tt_nns_filter_same_shapes (f, fresh)) {
    g_warning (TT_NNS_FRAMEWORK ": cannot reload %s in place of %s: its "
        "inputs or output have other shapes.", fresh->path, f->path);
    tt_nns_filter_free (fresh);
    return -EINVAL;
  }
  g_mutex_lock (&f->lock);
  old_model = f->model;
  old_path = f->path;
  f->model = fresh->model;
  f->path = fresh->path;
  g_mutex_unlock (&f->lock);
  fresh->model = old_model;
  fresh->path = old_path;
  tt_nns_filter_free (fresh);
  return 0;
}

static int
tt_nns_filter_event_handler (const GstTensorFilterFramework * self,
    const GstTensorFilterProperties * prop, void *private_data, event_ops ops,
    GstTensorFilterFrameworkEventData * data)
{
  (void) self;
  (void) prop;
  if (ops == RELOAD_MODEL)
    return tt_nns_filter_reload (private_data, data);
  return -ENOENT;
}

static GstTensorFilterFramework tt_nns_filter_framework = {
  .version = GST_TENSOR_FILTER_FRAMEWORK_V1,
  .open = tt_nns_filter_open,
  .close = tt_nns_filter_close,
};

/* nnstreamer opens this file by the framework's name; loading it
 * registers the sub-plugin */
static void tt_nns_filter_register (void) __attribute__((constructor));
static void tt_nns_filter_unregister (void) __attribute__((destructor));

static void
tt_nns_filter_register (void)
{
  tt_nns_filter_framework.invoke = tt_nns_filter_invoke;
  tt_nns_filter_framework.getFrameworkInfo = tt_nns_filter_get_framework_info;
  tt_nns_filter_framework.getModelInfo = tt_nns_filter_get_model_info;
  tt_nns_filter_framework.eventHandler = tt_nns_filter_event_handler;
  nnstreamer_filter_probe (&tt_nns_filter_framework);
}

static void
tt_nns_filter_unregister (void)
{
  nnstreamer_filter_exit (TT_NNS_FRAMEWORK);
}
