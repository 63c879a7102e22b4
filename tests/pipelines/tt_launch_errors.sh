#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tt-launch's failure modes, with GStreamer's own elements only: a
# description that does not parse and a pipeline that stalls must end the
# process with a non-zero status and a message saying what and where, in
# seconds, never leave it waiting.
#
# Usage: tt_launch_errors.sh TT_LAUNCH CASE
#   unknown-element  an element that is not installed: exit 2 at once,
#                    the element named
#   bad-link         a link that cannot be made: exit 2, the link named
#   no-preroll       appsrc that never gets data (--stall-timeout 2): exit 1
#                    within 5 s, naming the sink waiting for preroll and the
#                    source nothing came out of
#   dropped          every buffer dropped by a valve, so the sink never
#                    prerolls although data flows: exit 1 within 5 s,
#                    naming the valve
#   stuck            a streaming thread stuck in an element after PLAYING
#                    (identity sleeping 60 s on a buffer): exit 1 within
#                    8 s (1 s limit, 3 s bound on the teardown), naming it
#   ok               a pipeline that ends: exit 0 and "eos"; the watchdog
#                    must not get in the way
#   late-branch      a branch that ends in an element which is not a sink
#                    (tee) is still working when the pipeline's EOS comes
#                    (3 buffers, 0.4 s each): tt-launch must wait for its
#                    EOS (at least 1.2 s) before it prints "eos" and exits
#                    0, as it must for tensor_predictor's summary in
#                    camera-personalize.sh
set -uo pipefail
tt_launch=$1 case=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail () {
  echo "FAIL $case: $*"
  echo "--- standard output"; cat "$tmp/out"
  echo "--- standard error"; cat "$tmp/err"
  exit 1
}

# run LIMIT EXPECTED_STATUS ARGS...: the status and the time it took
run () {
  local limit=$1 want=$2 start rc
  shift 2
  start=$EPOCHREALTIME
  timeout -k 2 30 "$tt_launch" "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
  rc=$?
  seconds=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "hung: killed after 30 s"
  [ "$rc" -eq "$want" ] || fail "exit status $rc, not $want"
  awk -v s="$seconds" -v l="$limit" 'BEGIN { exit !(s <= l) }' ||
    fail "took $seconds s, more than $limit s"
}

# the standard error has a line matching the extended regex
says () {
  grep -Eq "$1" "$tmp/err" || fail "its error does not say /$1/"
}

# the first run of a fresh registry scans every plugin of the system (some
# seconds, more when other tests scan at the same time): not what the time
# limits are about
"$tt_launch" fakesrc num-buffers=1 ! fakesink > /dev/null ||
  { echo "FAIL $case: tt-launch cannot run a one-buffer pipeline"; exit 1; }

case "$case" in
  unknown-element)
    run 3 2 fakesrc num-buffers=1 ! tt_no_such_element ! fakesink
    says 'does not parse: no element "tt_no_such_element"'
    says 'no element "tt_no_such_element" is installed' ;;
  bad-link)
    # fakesink has no src pad: nothing to link to the second fakesink
    run 3 2 fakesrc num-buffers=1 ! fakesink name=first ! fakesink name=second
    says 'does not parse: .*first.*second' ;;
  no-preroll)
    run 5 1 --stall-timeout 2 appsrc name=silent ! fakesink name=out
    says '^tt-launch: error: the pipeline stalled: no state change for [0-9.]+ s .*it cannot preroll'
    says 'waiting for preroll \(a first buffer\): out$'
    says 'no buffer came out of silent' ;;
  dropped)
    run 5 1 --stall-timeout 2 fakesrc ! valve name=gate drop=true ! fakesink name=out
    says 'the pipeline stalled: no state change'
    says 'waiting for preroll \(a first buffer\): out$'
    says 'no buffer flowed past gate: [0-9]+ buffer\(s\) went in, none came out of gate:src' ;;
  stuck)
    # the first step (at buffer 0) leaves the identity alone; the second
    # (at buffer 10, long after PLAYING) makes it sleep 60 s on a buffer
    run 8 1 --stall-timeout 1 --every 10 --at slow --step slow.sleep-time=0 \
      --step slow.sleep-time=60000000 \
      fakesrc num-buffers=100 sizetype=fixed sizemax=16 filltype=zero \
        datarate=1000 sync=true is-live=true ! \
      identity name=slow ! fakesink sync=false
    says 'no buffer or event went through any pad for [0-9.]+ s in PLAYING'
    says 'a streaming thread is inside slow' ;;
  ok)
    run 5 0 --stall-timeout 1 fakesrc num-buffers=50 ! identity ! fakesink
    grep -qx eos "$tmp/out" || fail "no eos line"
    [ ! -s "$tmp/err" ] || fail "it wrote errors" ;;
  late-branch)
    run 5 0 --stall-timeout 2 fakesrc num-buffers=3 ! tee name=t ! queue ! \
      fakesink t. ! queue ! identity sleep-time=400000 ! \
      tee allow-not-linked=true
    [ "$(tail -n 1 "$tmp/out")" = eos ] || fail "eos is not its last line"
    awk -v s="$seconds" 'BEGIN { exit !(s >= 1.2) }' ||
      fail "ended after $seconds s, before the late branch had its EOS" ;;
  *) echo "tt_launch_errors.sh: no case $case" >&2; exit 2 ;;
esac
echo "ok $case in $seconds s:"
cat "$tmp/err"
