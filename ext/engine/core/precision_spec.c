/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The precision override (tt_model_set_precision, docs/precision.md):
 * its spellings, the model's precision as model_tensor_type writes it,
 * and the note of what a precision does on this CPU.
 */
#include "tt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const precision_names[] = { "FP32", "FP16", "BF16" };

const char *
tt_precision_name (tt_precision p)
{
  return (unsigned) p < 3 ? precision_names[p] : "?";
}

static bool
precision_word (const char *s, size_t n, tt_precision * p)
{
  for (int i = 0; i < 3; i++)
    if (n == 4 && !strncasecmp (s, precision_names[i], 4)) {
      *p = (tt_precision) i;
      return true;
    }
  return false;
}

bool
tt_precision_parse (const char *spec, int *weight, tt_precision * act)
{
  /* nntrainer's aliases of its four fp16/fp32 pairs */
  static const struct
  {
    const char *name;
    tt_precision w, a;
  } aliases[] = {
    {"W16A16", TT_PRECISION_FP16, TT_PRECISION_FP16},
    {"W16A32", TT_PRECISION_FP16, TT_PRECISION_FP32},
    {"W32A16", TT_PRECISION_FP32, TT_PRECISION_FP16},
    {"W32A32", TT_PRECISION_FP32, TT_PRECISION_FP32},
  };
  if (!spec)
    return false;
  const size_t n = strlen (spec);
  if (precision_word (spec, n, act)) {
    *weight = -1;
    return true;
  }
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (!strcasecmp (spec, aliases[i].name)) {
      *weight = (int) aliases[i].w;
      *act = aliases[i].a;
      return true;
    }
  tt_precision w;
  if (n == 9 && spec[4] == '-' && precision_word (spec, 4, &w) &&
      precision_word (spec + 5, 4, act)) {
    *weight = (int) w;
    return true;
  }
  return false;
}

tt_status
tt_model_set_precision (tt_model * m, const char *spec, tt_error * err)
{
  if (m->compiled)
    return tt_fail (err, TT_ERR_STATE,
        "%s: choose the precision before compiling", m->path);
  int weight;
  tt_precision act;
  if (!tt_precision_parse (spec, &weight, &act))
    return tt_fail (err, TT_ERR_INVALID, "%s: precision: '%s' is not a "
        "precision: use " TT_PRECISION_CHOICES, m->path, spec ? spec : "");
  m->activation_type = act;
  if (weight >= 0)
    m->weight_type = (tt_precision) weight;
  return TT_OK;
}

tt_status
tt_half_only_read (tt_model * m, tt_error * err)
{
  const char *v = getenv ("TT_HALF_ONLY");
  m->half_only = TT_HALF_BOTH;
  if (!v || !*v)
    return TT_OK;
  if (!strcmp (v, "gemm"))
    m->half_only = TT_HALF_GEMM_ONLY;
  else if (!strcmp (v, "stash"))
    m->half_only = TT_HALF_STASH_ONLY;
  else
    return tt_fail (err, TT_ERR_INVALID, "%s: TT_HALF_ONLY='%s' in the "
        "environment: use gemm (the stash in fp32) or stash (the GEMMs' "
        "inputs in fp32), or leave it unset", m->path, v);
  return TT_OK;
}

tt_precision
tt_model_gemm_inputs (const tt_model * m)
{
  return m->half_only == TT_HALF_STASH_ONLY ? TT_PRECISION_FP32 :
      m->activation_type;
}

const char *
tt_model_precision (const tt_model * m, char *buf, size_t size)
{
  snprintf (buf, size, "%s-%s", tt_precision_name (m->weight_type),
      tt_precision_name (m->activation_type));
  return buf;
}

tt_precision
tt_model_activation_type (const tt_model * m)
{
  return m->activation_type;
}

const char *
tt_precision_note (tt_precision p)
{
  switch (p) {
#ifdef __aarch64__
    case TT_PRECISION_BF16:
      return tt_bf16_hw_dot ()? "bf16: ARMv8.6 BF16 (BFDOT)" :
          "bf16: portable path, this CPU has no ARMv8.6 BF16: slower than "
          "fp32";
    case TT_PRECISION_FP16:
      return tt_f16_hw_fmlal ()? "fp16: ARMv8.2 FHM (FMLAL, fp16 products "
          "summed in fp32), NEON conversions" : tt_f16_hw_arith ()?
          "fp16: NEON conversions, GEMMs widened to fp32 (ARMv8.2 fp16 "
          "arithmetic, no FHM)" : "fp16: NEON conversions, GEMMs widened "
          "to fp32 (this CPU has no ARMv8.2 fp16 arithmetic)";
#else
    case TT_PRECISION_BF16:
      return tt_bf16_hw_dot ()? "bf16: AVX-512 BF16 (vdpbf16ps, "
          "vcvtne2ps2bf16)" : "bf16: portable path, this CPU has no "
          "AVX-512 BF16: slower than fp32";
    case TT_PRECISION_FP16:
      return tt_f16_hw_convert ()? "fp16: the CPU's own fp16 conversions "
          "(F16C or NEON)" : "fp16: portable conversions, this CPU has "
          "neither F16C nor NEON: slower than fp32";
#endif
    case TT_PRECISION_FP32:
      return "fp32: float32 throughout";
  }
  return "unknown precision";
}
