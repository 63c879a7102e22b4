/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a model tells of itself: its batch size, inputs' and output's
 * shapes, layer count, memory, output, path, epoch and iteration
 * counters (and the end of an epoch).
 */
#include "tt_internal.h"

#include <string.h>

uint32_t
tt_model_batch_size (const tt_model * m)
{
  return m->batch_size;
}

uint32_t
tt_model_num_inputs (const tt_model * m)
{
  return m->n_inputs;
}

uint32_t
tt_model_num_layers (const tt_model * m)
{
  return m->compiled ? m->n_layers : 0;
}

static tt_shape
model_shape (tt_dims d)
{
  return (tt_shape) {
  d.c, d.h, d.w};
}

tt_status
tt_model_input_shape (const tt_model * m, uint32_t index, tt_shape * shape)
{
  if (!m->compiled || index >= m->n_inputs)
    return TT_ERR_INVALID;
  *shape = model_shape (m->layers[m->input_layers[index]].out_dims[0]);
  return TT_OK;
}

tt_shape
tt_model_label_shape (const tt_model * m)
{
  if (!m->compiled)
    return (tt_shape) {
    0, 0, 0};
  return model_shape (m->layers[m->loss_layer].out_dims[0]);
}

tt_shape
tt_model_output_shape (const tt_model * m)
{
  return tt_model_label_shape (m);
}

uint32_t
tt_model_epochs (const tt_model * m)
{
  return m->epochs;
}

const char *
tt_model_path (const tt_model * m)
{
  return m->path;
}

const char *
tt_model_save_best_path (const tt_model * m)
{
  return m->save_best_path;
}

void
tt_model_memory_info (const tt_model * m, tt_memory_info * info)
{
  memset (info, 0, sizeof *info);
  if (!m->compiled)
    return;
  info->pool_bytes = (size_t) m->pool_bytes;
  info->weight_bytes = tt_bin_weight_bytes (m);
  info->tensor_count = m->n_tensors;
}

void
tt_model_multiply_adds (const tt_model * m, uint64_t * forward,
    uint64_t * backward)
{
  *forward = *backward = 0;
  if (!m->compiled)
    return;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    uint64_t weighted = 0, between = 0;
    if (!l->ops->multiply_adds)
      continue;
    l->ops->multiply_adds (l, &weighted, &between);
    *forward += weighted + between;
    if (m->inference)
      continue;
    /* the weight gradient where the weight trains; the input derivative
     * where a derivative flows below */
    const bool weight_grad = l->n_weights > 0 && l->weights[0].grad >= 0;
    *backward += (weight_grad ? weighted : 0) +
        (l->needs_derivative ? weighted + 2 * between : 0);
  }
}

const float *
tt_model_output (const tt_model * m)
{
  if (!m->compiled)
    return NULL;
  return tt_data (m, m->layers[m->loss_layer].out[0]);
}

uint32_t
tt_model_epoch (const tt_model * m)
{
  return m->epoch;
}

uint32_t
tt_model_iteration (const tt_model * m)
{
  return m->iteration;
}

void
tt_model_finish_epoch (tt_model * m)
{
  /* a wrapped counter would restart a resumed run from epoch 0 */
  if (m->epoch < UINT32_MAX)
    m->epoch++;
}
