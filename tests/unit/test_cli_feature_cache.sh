#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor-trainer train --feature-cache BYTES | --feature-cache-file FILE:
# the same weights, byte for byte, as without the cache (whole, partly
# in memory, in a file), the number of samples from the cache, the file
# removed at the end, the INI's trainable = false with a dropout after
# the prefix, and the refusals (no frozen prefix, batch
# normalization in it, a file that is not a cache, both options, eval,
# several threads, a budget too small for a batch).
#
# usage: test_cli_feature_cache.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-cli-fcache-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")
model=$src/tests/models/fmnist_cnn.ini
random_mnist_idx "$tmp" 100
# batch 8: 12 full batches and one of 4
run=(train "$model" --data "$tmp/images.idx" --labels "$tmp/labels.idx"
  --batch 8 --epochs 3 --seed 3 --train last:2)

"$cli" "${run[@]}" --save "$tmp/plain.bin" > "$tmp/plain.out" 2>&1
check "train without the cache" test -s "$tmp/plain.bin"

# last:2 trains dense and output: the prefix ends at flat, a record is
# its 64 x 5 x 5 floats, 6,400 bytes (two batches: 102,400 bytes)
"$cli" "${run[@]}" --feature-cache 1M --save "$tmp/mem.bin" \
  > "$tmp/mem.out" 2>&1
check "--feature-cache 1M: the same weights" cmp -s "$tmp/plain.bin" \
  "$tmp/mem.bin"
check "... every sample cached" grep -q \
  '^# feature cache: 100 of 100 samples (6400 bytes each, 640000 bytes) in memory' \
  "$tmp/mem.out"
check "... two epochs from the cache" grep -q \
  '^# feature cache: 200 sample steps of 300 came from the cache$' \
  "$tmp/mem.out"
check "... the same epoch lines" bash -c "diff <(grep ^epoch '$tmp/plain.out' \
  | sed 's/ samples_per_s.*//') <(grep ^epoch '$tmp/mem.out' | \
  sed 's/ samples_per_s.*//')"

"$cli" "${run[@]}" --feature-cache 120000 --save "$tmp/part.bin" \
  > "$tmp/part.out" 2>&1
check "--feature-cache 120000: the same weights" cmp -s "$tmp/plain.bin" \
  "$tmp/part.bin"
check "... 16 samples (two batches) cached, the rest computed" grep -q \
  "^# feature cache: 16 of 100 samples .*; the others' prefix runs every epoch$" \
  "$tmp/part.out"
check "... 32 sample steps from it" grep -q \
  '^# feature cache: 32 sample steps of 300 came from the cache$' \
  "$tmp/part.out"

"$cli" "${run[@]}" --feature-cache-file "$tmp/fc.cache" \
  --save "$tmp/file.bin" > "$tmp/file.out" 2>&1
check "--feature-cache-file: the same weights" cmp -s "$tmp/plain.bin" \
  "$tmp/file.bin"
check "... two epochs from the file" grep -q \
  '^# feature cache: 200 sample steps of 300 came from the cache$' \
  "$tmp/file.out"
check "... the file removed at the end" test ! -e "$tmp/fc.cache"
check "... no temporary left" sh -c "! ls '$tmp' | grep -q 'fc.cache'"

# the INI's trainable = false (conv1, conv2), a dropout after the prefix:
# its draws are the same with the cache (the prefix draws none)
frozen=(train "$src/tests/models/transfer_frozen.ini" --data "$tmp/images.idx"
  --labels "$tmp/labels.idx" --batch 8 --epochs 3 --seed 5)
"$cli" "${frozen[@]}" --save "$tmp/tf.bin" > /dev/null 2>&1
"$cli" "${frozen[@]}" --feature-cache 1M --save "$tmp/tf_cached.bin" \
  > "$tmp/tf.out" 2>&1
check "trainable = false in the INI, dropout after: the same weights" \
  cmp -s "$tmp/tf.bin" "$tmp/tf_cached.bin"
check "... from the cache" grep -q \
  '^# feature cache: 200 sample steps of 300 came from the cache$' \
  "$tmp/tf.out"

# refusals: one message, status 1 (2 for a malformed option)
refused () {
  local what=$1 text=$2 want=1; shift 2
  case $text in *"byte count"*) want=2;; esac   # a bad option: usage status
  "$cli" "$@" > "$tmp/r.out" 2> "$tmp/r.err"
  local rc=$?
  check "$what: status $want" test "$rc" -eq "$want"
  check "$what: says '$text'" grep -q -F -- "$text" "$tmp/r.err"
}
refused "no frozen prefix" "feature cache: no frozen prefix" train "$model" \
  --data "$tmp/images.idx" --labels "$tmp/labels.idx" --batch 8 \
  --epochs 1 --feature-cache 1M
sed 's/^\[conv2\]$/[bn]\ntype = batch_normalization\n[conv2]/' "$model" \
  > "$tmp/bn.ini"
refused "batch normalization in the prefix" \
  "layer bn (batch_normalization) is in the frozen prefix" train \
  "$tmp/bn.ini" --data "$tmp/images.idx" --labels "$tmp/labels.idx" \
  --batch 8 --epochs 1 --train last:2 --feature-cache 1M
echo "not a cache" > "$tmp/other"
refused "a file that is not a cache" "exists and is not a feature cache" \
  "${run[@]}" --feature-cache-file "$tmp/other"
check "... left as it was" grep -q "not a cache" "$tmp/other"
refused "both" "one of them" "${run[@]}" --feature-cache 1M \
  --feature-cache-file "$tmp/x"
refused "eval" "apply to train" eval "$model" --weights "$tmp/plain.bin" \
  --data "$tmp/images.idx" --labels "$tmp/labels.idx" --feature-cache 1M
refused "two threads" "runs on one thread (2 asked)" "${run[@]}" \
  --threads 2 --feature-cache 1M
refused "too small" "the cache would hold none" "${run[@]}" \
  --feature-cache 10000
refused "not a byte count" "--feature-cache needs a positive byte count" \
  "${run[@]}" --feature-cache lots
check "--help names --feature-cache" sh -c "'$cli' --help | grep -q -- \
  '--feature-cache-file FILE'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
