/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tensortrainer plugin: elements that train neural networks on
 * nnstreamer tensors streaming through a pipeline.
 */
#include <gst/gst.h>

/* GST_PLUGIN_DEFINE reads PACKAGE */
#define PACKAGE "tensor-trainer"

#include "gsttensordatasrc.h"
#include "gsttensorlabeler.h"
#include "gsttensorplanner.h"
#include "gsttensorpredictor.h"
#include "gsttensortrainer.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ok = FALSE;
  ok |= GST_ELEMENT_REGISTER (tensor_trainer, plugin);
  ok |= GST_ELEMENT_REGISTER (tensor_datasrc, plugin);
  ok |= GST_ELEMENT_REGISTER (tensor_planner, plugin);
  ok |= GST_ELEMENT_REGISTER (tensor_labeler, plugin);
  ok |= GST_ELEMENT_REGISTER (tensor_predictor, plugin);
  /* nnstreamer's plugin registers a tensor_trainer too, and a registry
   * keeps one element per name: this one names this plugin's trainer
   * whichever of the two holds "tensor_trainer" (README: "Beside
   * nnstreamer") */
  if (GST_ELEMENT_REGISTER (tensor_trainer, plugin))
    ok |= gst_element_register (plugin, "tt_tensor_trainer", GST_RANK_NONE,
        GST_TYPE_TENSOR_TRAINER);
  return ok;
}

/* GST_PLUGIN_DEFINE leaves the descriptor's padding to zero-initialization,
 * which -Wextra reports */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, tensortrainer,
    "Train neural networks on tensors streaming through a pipeline",
    plugin_init, TT_VERSION, "LGPL", "tensor-trainer", "tensor-trainer")
