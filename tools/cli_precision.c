/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mixed precision on the command line (docs/precision.md): train, eval,
 * info and plan --precision P (tt_open_options.precision), the note of
 * what the precision does on this CPU, and the per-epoch loss scaling
 * figures.
 */
#include "cli.h"

#include <inttypes.h>

/* once, on stderr, when --precision is given or the model's activations
 * are not fp32: "# precision FP32-BF16: bf16: ..." */
void
cli_precision_note (const cli_options * o, const tt_model * m)
{
  const tt_precision a = tt_model_activation_type (m);
  if (!(o->precision && *o->precision) && a == TT_PRECISION_FP32)
    return;
  char buf[16];
  fprintf (stderr, "# precision %s: %s\n", tt_model_precision (m, buf,
          sizeof buf), tt_precision_note (a));
}

/* with loss scaling on: " loss_scale=S skipped_steps=N" (the steps of
 * this epoch skipped; *skipped_before: the count before it, updated) */
void
cli_print_loss_scaling (const tt_model * m, uint64_t * skipped_before)
{
  const uint64_t now = tt_model_skipped_steps (m);
  if (tt_model_loss_scale (m) > 0)
    printf (" loss_scale=%g skipped_steps=%" PRIu64,
        (double) tt_model_loss_scale (m), now - *skipped_before);
  *skipped_before = now;
}
