# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the personalization scripts (pretrain-backbone.sh,
# personalize.sh) after common.sh's tt_setup ($build set):
#
#   pz_count LABELS.gz LO HI PER   how many samples tensor_datasrc pushes
#       from a labels file with classes=LO-HI per-class=PER (0: all)
#   pz_have_command NAME   tensor-trainer has the subcommand NAME (its
#       --help lists "tensor-trainer NAME")
#   pz_have_property ELEMENT PROPERTY   the element has the property
#   pz_field NAME   (awk) a field of a gst-launch -m message line
#   pz_epochs LOG   the tensor-trainer-epoch messages of a gst-launch -m
#       log as "epoch=E/N loss=L accuracy=A val_loss=VL val_accuracy=VA
#       seconds=S" lines
#   pz_plan_pool LOG   the pool bytes of its tensor-trainer-plan message
#   pz_weights_only MODEL.ini BIN OUT.bin   the weights of BIN (they come
#       first), without the optimizer state and counters saved after them
#   pz_accuracy EVAL_OUTPUT LO HI   the accuracy over the classes LO to HI
#       of `tensor-trainer eval --per-class` output

# shellcheck disable=SC2154  # $build: set by tt_setup
pz_count () {
  zcat -f "$1" | tail -c +9 | od -An -v -tu1 -w1 | awk -v lo="$2" \
    -v hi="$3" -v per="$4" '
    { c = $1 + 0 }
    c >= lo && c <= hi && (per == 0 || n[c] < per) { n[c]++; total++ }
    END { print total + 0 }'
}

# (the whole output first: under pipefail, grep -q leaving early would
# fail the writer with SIGPIPE, and so the test, now and then)
pz_have_command () {
  local help
  help=$("$build/tools/tensor-trainer" --help 2>/dev/null)
  grep -q "^  tensor-trainer $1 " <<< "$help"
}

pz_have_property () {
  local props
  props=$(gst-inspect-1.0 "$1" 2>/dev/null)
  grep -Eq "^  $2 +:" <<< "$props"
}

# shellcheck disable=SC2016  # awk's $0, not the shell's
pz_field='function field(name,   re, v) {
    re = "[ ,]" name "=\\([a-z0-9]+\\)[^,;]*"
    if (!match($0, re)) return ""
    v = substr($0, RSTART, RLENGTH); sub(/^[^)]*\)/, "", v); return v
  }'

pz_epochs () {
  awk "$pz_field"'
    /tensor-trainer-epoch/ {
      printf "epoch=%s/%s loss=%.6f accuracy=%.4f val_loss=%.6f val_accuracy=%.4f seconds=%.3f\n",
        field("epoch"), field("epochs"), field("loss"), field("accuracy"),
        field("validation-loss"), field("validation-accuracy"), field("seconds")
    }' "$1"
}

pz_plan_pool () {
  awk "$pz_field"'/tensor-trainer-plan/ { print field("pool-bytes"); exit }' "$1"
}

pz_accuracy () {
  awk -v lo="$2" -v hi="$3" '
    /^class=/ {
      split($1, c, "="); split($2, s, "="); split($3, k, "=")
      if (c[2] >= lo && c[2] <= hi) { n += s[2]; ok += k[2] }
    }
    END { if (n) printf "%.4f\n", ok / n; else print "nan" }' <<< "$1"
}

pz_weights_only () {
  local bytes
  bytes=$("$build/tools/tensor-trainer" info "$1" |
    sed -n 's/^weight_bytes=\([0-9]*\) .*/\1/p')
  [ -n "$bytes" ] || return 1
  head -c "$bytes" "$2" > "$3.tmp" && mv "$3.tmp" "$3"
}
