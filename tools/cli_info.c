/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer info: what a model is once opened (inputs, output,
 * memory, plan), and for a bundle the time it took to load.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>

int
cli_info (const cli_options * o)
{
  double seconds;
  tt_open_info opened;
  tt_model *m = cli_open_model (o, &opened, &seconds);
  if (!m)
    return 1;
  if (opened.kind == TT_MODEL_FILE_BUNDLE)
    printf ("bundle=%s mode=%s%s load_seconds=%.6f\n", o->model,
        o->mode ? o->mode : "read", o->trust ? " trusted" : "", seconds);
  tt_memory_info mem;
  tt_model_memory_info (m, &mem);
  tt_shape out = tt_model_output_shape (m);
  printf ("model=%s batch=%u inputs=%u mode=%s\n", o->model,
      tt_model_batch_size (m), tt_model_num_inputs (m),
      tt_model_is_inference (m) ? "inference" : "training");
  for (uint32_t i = 0; i < tt_model_num_inputs (m); i++) {
    tt_shape s;
    tt_model_input_shape (m, i, &s);
    printf ("input%u=%u:%u:%u\n", i, s.channel, s.height, s.width);
  }
  printf ("output=%u:%u:%u\n", out.channel, out.height, out.width);
  printf ("weight_bytes=%zu pool_bytes=%zu tensors=%zu\n", mem.weight_bytes,
      mem.pool_bytes, mem.tensor_count);
  uint64_t fwd, bwd;
  tt_model_multiply_adds (m, &fwd, &bwd);
  printf ("forward_multiply_adds=%" PRIu64 " backward_multiply_adds=%" PRIu64
      " (per sample)\n", fwd, bwd);
  tt_plan_info p;
  tt_model_plan_info (m, &p);
  cli_print_plan (&p);
  /* mixed precision: the activations held from forward into backward */
  if (!tt_model_is_inference (m)) {
    const uint64_t held = tt_model_held_activation_bytes (m);
    printf ("held_activation_bytes=%" PRIu64 " of_pool=%.4f (from forward "
        "into backward)\n", held, mem.pool_bytes ?
        (double) held / (double) mem.pool_bytes : 0.0);
  }
  /* what the pool holds at its busiest step */
  tt_pool_peak peak;
  tt_model_pool_peak (m, &peak);
  printf ("peak_live_bytes=%" PRIu64 " step=%d activations=%" PRIu64
      " stashed=%" PRIu64 " derivatives=%" PRIu64 " scratch=%" PRIu64
      " weights=%" PRIu64 " gradients=%" PRIu64 " optimizer=%" PRIu64
      " inputs=%" PRIu64 "\n", peak.live_bytes, peak.step, peak.activations,
      peak.stashed, peak.derivatives, peak.scratch, peak.weights,
      peak.gradients, peak.optimizer, peak.inputs);
  tt_model_free (m);
  return 0;
}
