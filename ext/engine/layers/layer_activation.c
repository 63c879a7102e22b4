/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* activation layer: a section of type activation, or activation= realized
 * after a layer. */
#include "tt_layer.h"

/* the activation= values (tt_activation order), for every layer that
 * reads one */
const char *const tt_activation_names[] = {
  "none", "relu", "leaky_relu", "sigmoid", "tanh", "softmax", "swish",
  "gelu", "elu",
  "tanh_gelu", "sigmoid_gelu", "softplus", "selu", "mish", "relu6",
  "hard_swish", "hard_sigmoid",
  "clip",
  NULL
};

static const char *const activation_keys[] = { "activation", NULL };

static tt_status
activation_parse (tt_layer * l, const tt_section * s, tt_error * err)
{
  int fn = TT_ACT_NONE;
  tt_status st = tt_section_enum (s, "activation", tt_activation_names, &fn,
      err);
  if (st)
    return st;
  if (!tt_section_has (s, "activation"))
    return tt_section_error (s, "activation", err, TT_ERR_INVALID,
        "missing key (relu, sigmoid, softmax, ...)");
  l->p.act.fn = (tt_activation) fn;
  l->p.act.clip_min = TT_CLIP_DEFAULT_MIN;
  l->p.act.clip_max = TT_CLIP_DEFAULT_MAX;
  float bounds[2] = { TT_CLIP_DEFAULT_MIN, TT_CLIP_DEFAULT_MAX };
  if ((st = tt_clip_parse (s, l->p.act.fn, bounds, err)))
    return st;
  l->p.act.clip_min = bounds[0];
  l->p.act.clip_max = bounds[1];
  return TT_OK;
}

/* clip_min and clip_max: the bounds of activation = clip, on an
 * activation layer or on any layer whose activation= it is (no such keys
 * in nntrainer, which has no clip: named as PyTorch's clamp's min, max) */
tt_status
tt_clip_parse (const tt_section * s, tt_activation fn, float bounds[2],
    tt_error * err)
{
  static const char *const keys[] = { "clip_min", "clip_max" };
  tt_status st;
  for (int k = 0; k < 2; k++) {
    if (!tt_section_has (s, keys[k]))
      continue;
    if (fn != TT_ACT_CLIP)
      return tt_section_error (s, keys[k], err, TT_ERR_INVALID,
          "only with activation = clip (not %s)", tt_activation_names[fn]);
    if ((st = tt_section_float (s, keys[k], &bounds[k], err)))
      return st;
  }
  if (fn == TT_ACT_CLIP && !(bounds[0] < bounds[1]))
    return tt_section_error (s, tt_section_has (s, "clip_max") ? "clip_max" :
        "clip_min", err, TT_ERR_INVALID, "clip_min (%g) must be below "
        "clip_max (%g)", (double) bounds[0], (double) bounds[1]);
  return TT_OK;
}

static tt_status
activation_infer (const tt_init_ctx * c, tt_layer * l, tt_error * err)
{
  (void) c;
  (void) err;
  l->out_dims[0] = l->in_dims[0];
  return TT_OK;
}

static void
activation_forward (const tt_run_ctx * c, tt_layer * l)
{
  if (l->relu_fused & TT_FUSED_FORWARD)
    return;
  const tt_dims d = l->in_dims[0];
  if (l->p.act.fn == TT_ACT_CLIP) {
    tt_clip_forward_split (c->threads, l->p.act.clip_min, l->p.act.clip_max,
        (size_t) c->batch * tt_dims_count (d), tt_run_data (c, l->in[0]),
        tt_run_data (c, l->out[0]));
    return;
  }
  tt_activation_forward_split (c->threads, l->p.act.fn, (size_t) c->batch *
      d.c * d.h, d.w, tt_run_data (c, l->in[0]), tt_run_data (c, l->out[0]));
}

static void
activation_calc_derivative (const tt_run_ctx * c, tt_layer * l)
{
  if (l->relu_fused & TT_FUSED_BACKWARD)
    return;
  const tt_dims d = l->in_dims[0];
  if (l->p.act.fn == TT_ACT_CLIP) {
    tt_clip_backward_split (c->threads, l->p.act.clip_min,
        l->p.act.clip_max, (size_t) c->batch * tt_dims_count (d),
        tt_run_data (c, l->out[0]), tt_run_data (c, l->out_deriv[0]),
        tt_run_data (c, l->in_deriv[0]));
    return;
  }
  tt_activation_backward_split (c->threads, l->p.act.fn,
      (size_t) c->batch * d.c * d.h, d.w, tt_run_data (c, l->in[0]),
      tt_run_data (c, l->out[0]), tt_run_data (c, l->out_deriv[0]),
      tt_run_data (c, l->in_deriv[0]));
}

/* swish, the gelus, mish and hard_swish differentiate from x (not
 * monotonic, or no closed form from y); the others from y = f(x) */
static bool
activation_needs_input (tt_activation fn)
{
  switch (fn) {
    case TT_ACT_SWISH:
    case TT_ACT_GELU:
    case TT_ACT_TANH_GELU:
    case TT_ACT_SIGMOID_GELU:
    case TT_ACT_MISH:
    case TT_ACT_HARD_SWISH:
      return true;
    default:
      return false;
  }
}

static unsigned
activation_backward_reads (const tt_layer * l)
{
  if (l->p.act.fn == TT_ACT_NONE)
    return 0;
  return activation_needs_input (l->p.act.fn) ? TT_READS_INPUT :
      TT_READS_OUTPUT;
}

static bool
activation_can_run_in_place (const tt_layer * l)
{
  return !activation_needs_input (l->p.act.fn);
}

const tt_layer_ops tt_activation_layer_ops = {
  .type = "activation",
  .role = TT_ROLE_ACTIVATION,
  .max_inputs = 1,
  .keys = activation_keys,
  .parse = activation_parse,
  .infer = activation_infer,
  .forward = activation_forward,
  .calc_derivative = activation_calc_derivative,
  .backward_reads = activation_backward_reads,
  .can_run_in_place = activation_can_run_in_place,
  .distributes = true,
};
