# SPDX-License-Identifier: LGPL-2.1-or-later
# Turns tt-launch's key=value message lines from a live-training pipeline
# (camera-train.sh, audio-train.sh) into one line per epoch and a final
# line. Variables: out (the model's path), unit (what a sample is, for
# the rate: frames, windows).
function field(name,   re, v) {
  re = " " name "=[^ ]*"
  if (!match($0, re)) return ""
  v = substr($0, RSTART + 1, RLENGTH - 1); sub(/^[^=]*=/, "", v); return v
}
/^tensor-trainer-plan/ {
  printf "plan: %s, pool %s bytes (lower bound %s)\n",
    field("plan-loaded") == "true" ? "stored plan" : "planned",
    field("pool-bytes"), field("lower-bound"); fflush(); next }
/^tensor-trainer-epoch/ {
  printf "epoch=%s/%s loss=%.4f accuracy=%.4f val_loss=%.4f val_accuracy=%.4f %s_per_s=%.0f\n",
    field("epoch"), field("epochs"), field("loss"), field("accuracy"),
    field("validation-loss"), field("validation-accuracy"), unit,
    field("samples-per-second"); last = field("validation-accuracy")
  fflush(); next }
/^eos/ { printf "final: val_accuracy=%.4f; model saved to %s\n", last, out; next }
{ print; fflush() }
