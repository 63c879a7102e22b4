#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# x86-64 against arm64: the same model, seed and Fashion-MNIST samples
# through two builds of the portable kernels (tests/run.sh passes the
# host's and, through qemu, the arm64 build's tensor-trainer).
#
# Bit for bit they differ: the engine contracts multiply-adds into fused
# ones (FMA) where the machine has them, and x86-64's baseline code does
# not. What must hold:
#  - initial weights from one seed are the same bytes;
#  - one set of weights evaluates to the same loss (6 printed digits) and
#    accuracy on both;
#  - 4 SGD steps end with weights within 1e-3 relative L2 distance of
#    each other (measured: 1e-4 for the CNN; ReLU and max-pool decisions
#    near ties route a few gradients differently, so no per-value bound;
#    Adam, which divides by the gradients' own scale, would amplify those
#    into visible steps, hence SGD).
#
# usage: cross_arch.sh HOST_TENSOR_TRAINER "TARGET_RUNNER TARGET_TENSOR_TRAINER"
#        SOURCE_ROOT  (the second argument is word-split)
set -uo pipefail
host=$1 target=$2 src=$3
data=/usr/share/datasets/fashion-mnist
passed=0 failed=0
check () {      # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok: $what"; else
    failed=$((failed + 1)); echo "FAIL: $what"; fi
}
tmp=$(mktemp -d /tmp/tt-cross-arch-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
samples=(--data "$data/t10k-images-idx3-ubyte.gz"
  --labels "$data/t10k-labels-idx1-ubyte.gz" --batch 32 --threads 1)

# relative_l2 A B BYTES: ||a - b|| / ||a|| over the first BYTES of two
# float32 files
relative_l2 () {
  paste <(od -An -v -tf4 -w4 -N "$3" "$1") <(od -An -v -tf4 -w4 -N "$3" "$2") |
    awk '{ d = $1 - $2; s += d * d; t += $1 * $1 }
      END { printf "%.3g\n", (t > 0 ? sqrt (s / t) : 0) }'
}
eval_line () { sed -n 's/^eval samples=\([0-9]*\) loss=\([^ ]*\) accuracy=\([^ ]*\).*/\1 \2 \3/p' "$1"; }

for name in fmnist_mlp fmnist_cnn; do
  ini=$tmp/$name-sgd.ini
  # (Adam's keys go with it: sgd refuses torch_ref)
  sed 's/^type = adam/type = sgd/; s/^learning_rate = .*/learning_rate = 0.05/
    /^torch_ref *=/d' "$src/tests/models/$name.ini" > "$ini"
  weight_bytes=$("$host" info "$ini" | sed -n 's/^weight_bytes=\([0-9]*\).*/\1/p')
  check "$name: the SGD variant loads (weight_bytes=${weight_bytes:-none})" \
    test -n "$weight_bytes"
  for side in host target; do
    run=${!side}
    # shellcheck disable=SC2086
    $run pack "$ini" -o "$tmp/$name-init-$side.ttb" --seed 7 > /dev/null
    # shellcheck disable=SC2086
    $run train "$ini" "${samples[@]}" --samples 128 --epochs 1 --seed 7 \
      --save "$tmp/$name-trained-$side.bin" > "$tmp/$name-train-$side.log"
  done
  check "$name: initial weights are the same bytes" \
    cmp -s "$tmp/$name-init-host.ttb" "$tmp/$name-init-target.ttb"
  for side in host target; do
    run=${!side}
    # shellcheck disable=SC2086
    $run eval "$ini" --weights "$tmp/$name-trained-host.bin" "${samples[@]}" \
      --samples 256 > "$tmp/$name-eval-$side.log"
  done
  a=$(eval_line "$tmp/$name-eval-host.log") b=$(eval_line "$tmp/$name-eval-target.log")
  echo "$name: evaluation on x86-64: $a; on arm64: $b (samples loss accuracy)"
  check "$name: one set of weights evaluates the same" test -n "$a" -a "$a" = "$b"
  d=$(relative_l2 "$tmp/$name-trained-host.bin" "$tmp/$name-trained-target.bin" \
    "$weight_bytes")
  echo "$name: after 4 SGD steps, weights differ by $d (relative L2)"
  # (both runs must have saved their weights: two missing files "agree")
  check "$name: trained weights within 1e-3" awk -v d="$d" \
    -v a="$tmp/$name-trained-host.bin" -v b="$tmp/$name-trained-target.bin" \
    'BEGIN { exit !(d != "" && d + 0 <= 1e-3 &&
      system("test -s " a " && test -s " b) == 0) }'
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
