#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor-trainer train|eval --profile: after the run, a table on standard
# error with a line per layer (every section of the INI among them, the
# layers the graph added too), forward, backward and update times, each
# layer's share, the time outside the layers and the totals, and the
# steps with their mean time; standard output as without --profile.
#
# usage: test_cli_profile.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-cli-profile-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")
model=$src/tests/models/fmnist_cnn.ini
random_mnist_idx "$tmp" 64
data=(--data "$tmp/images.idx" --labels "$tmp/labels.idx" --batch 8)

# standard output without the figures that vary from run to run
stable () {
  sed 's/ samples_per_s=.*//; /^# saved /d' "$1"
}
same_stdout () {
  [ -s "$2" ] && [ "$(stable "$1")" = "$(stable "$2")" ]
}
# every layer line: name, type, four times in ms, a share in percent
layer_lines_ok () {
  [ -s "$1" ] && ! grep -v -E \
    '^[^ ]+ +[a-z_0-9]+( +[0-9]+\.[0-9]{3}){4} +[0-9]+\.[0-9]$' "$1"
}

"$cli" train "$model" "${data[@]}" --epochs 1 --seed 3 \
  --save "$tmp/m.bin" > "$tmp/plain.out" 2> "$tmp/plain.err"
check "train --profile" sh -c "'$cli' train '$model' ${data[*]} --epochs 1 \
  --seed 3 --profile > '$tmp/prof.out' 2> '$tmp/prof.err'"
check "... the same standard output as without it" same_stdout \
  "$tmp/plain.out" "$tmp/prof.out"
check "... no table without it" sh -c "! grep -q '^profile:' \
  '$tmp/plain.err'"
check "... the steps and their time" grep -q \
  '^profile: 8 steps, [0-9.]* ms a step$' "$tmp/prof.err"
# the table: from the header line to the total line
sed -n '/^layer  *type  *forward_ms  *backward_ms  *update_ms  *total_ms  *share%$/,/^total /p' \
  "$tmp/prof.err" > "$tmp/table"
check "... a header and a total line" sh -c "head -1 '$tmp/table' | \
  grep -q '^layer ' && tail -1 '$tmp/table' | grep -q '^total '"
for section in $(sed -n 's/^\[\(.*\)\]$/\1/p' "$model" | \
    grep -v -i -x -e model -e optimizer); do
  check "... a line for $section" grep -q "^$section  *[a-z_0-9]* " \
    "$tmp/table"
done
sed '1d;$d' "$tmp/table" | grep -v '^(other) ' > "$tmp/layers"
check "... every layer line holds its type, times and share" \
  layer_lines_ok "$tmp/layers"
check "... the layers the graph added: conv1's activation" grep -q \
  '^conv1/[^ ]*  *activation ' "$tmp/layers"
check "... the loss" grep -q '^output/loss  *cross_softmax ' "$tmp/layers"
check "... the time outside the layers" grep -q \
  '^(other)  *[0-9]*\.[0-9]\{3\}  *[0-9]*\.[0-9]$' "$tmp/table"
check "... the total is 100%" sh -c "tail -1 '$tmp/table' | \
  grep -q ' 100\.0$'"
check "... conv2 trains: backward time" awk \
  '$1 == "conv2" && $4 > 0 { ok = 1 } END { exit !ok }' "$tmp/layers"

check "eval --profile" sh -c "'$cli' eval '$model' --weights '$tmp/m.bin' \
  ${data[*]} --profile > '$tmp/eval.out' 2> '$tmp/eval.err'"
check "... its line on standard output, no table there" sh -c "grep -q \
  '^eval samples=64 ' '$tmp/eval.out' && ! grep -q '^profile' \
  '$tmp/eval.out'"
check "... the steps" grep -q '^profile: 8 steps, ' "$tmp/eval.err"
check "... forward only" sh -c "sed -n '/^layer /,/^(other) /p' \
  '$tmp/eval.err' | sed '1d;\$d' | awk '{ n++ } \$4 != \"0.000\" || \
  \$5 != \"0.000\" { bad = 1 } END { exit bad || n < 8 }'"

# on two threads (every step split), two columns more: the caller's
# wait for the other thread's parts and that thread's time in them. On a
# loaded machine the worker may not be scheduled before the caller has
# claimed every part of a short run's jobs: up to 5 runs until conv2's
# parts ran on it (a worker that never runs them still fails below)
for attempt in 1 2 3 4 5; do
  TT_THREADS_STEPS=split "$cli" train "$model" "${data[@]}" --epochs 1 \
    --seed 3 --threads 2 --profile > "$tmp/t2.out" 2> "$tmp/t2.err"
  t2_status=$?
  sed -n '/^layer  *type .* share%  *wait_ms  *workers_ms$/,/^total /p' \
    "$tmp/t2.err" > "$tmp/t2table"
  [ "$t2_status" -ne 0 ] && break
  awk '$1 == "conv2" && $9 > 0 { ok = 1 } END { exit !ok }' \
    "$tmp/t2table" && break
done
check "train --threads 2 --profile" test "$t2_status" -eq 0
check "... a header with wait_ms and workers_ms, and a total line" sh -c \
  "head -1 '$tmp/t2table' | grep -q '^layer ' && tail -1 '$tmp/t2table' | \
  grep -q '^total '"
sed '1d;$d' "$tmp/t2table" | grep -v '^(other) ' > "$tmp/t2layers"
check "... every layer line holds its times, share, wait and workers' time" \
  sh -c "[ -s '$tmp/t2layers' ] && ! grep -v -E \
  '^[^ ]+ +[a-z_0-9]+( +[0-9]+\.[0-9]{3}){4} +[0-9]+\.[0-9]( +[0-9]+\.[0-9]{3}){2}$' \
  '$tmp/t2layers'"
check "... conv2's parts ran on the other thread too" awk \
  '$1 == "conv2" && $9 > 0 { ok = 1 } END { exit !ok }' "$tmp/t2layers"
check "... one thread: no such columns" sh -c "grep -q \
  '^layer  *type .* share%$' '$tmp/prof.err'"

check "--help names --profile" sh -c "'$cli' --help | grep -q -- '--profile'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
