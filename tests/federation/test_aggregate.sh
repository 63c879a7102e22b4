#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor-trainer aggregate against a real mosquitto (127.0.0.1, a free
# port, a configuration written here, killed at the end), its devices
# played by fed_tool (no GStreamer: this test runs under the sanitizers
# too). First, with a libmosquitto that cannot be loaded, a clear error.
# Then 3 clients, quorum 2, a 4 s round timeout:
#   round 1: a and b send updates, a sends its again (refused as a
#            replay), h one 1000 times too large (rejected: it moved far
#            more than the others); the round closes with the quorum
#            after the timeout
#   round 2: the same with c and a
#   round 4: the broker is restarted (no persistence) while the
#            aggregator waits: it connects again, publishes the global
#            model of round 3 again (the broker lost the retained one) and
#            closes round 4 with the updates sent after the restart
#   then the aggregator is killed (SIGKILL) after publishing round 2,
#   round 3's updates are sent while it is down (the broker keeps them
#   for its persistent session), and a restarted aggregator resumes at
#   round 2 done, takes them and closes round 3
# check_rounds.py then checks every round's global model against the
# sample-weighted average of the updates it took, bit for bit.
#
# Usage: test_aggregate.sh TENSOR_TRAINER FED_TOOL SRCDIR
set -uo pipefail
tt=$1 fed_tool=$2 src=$3
. "$(dirname "$0")/broker_lib.sh"
fed_test_setup aggregate

fed_plain_broker

model=$src/tests/federation/tiny.ini
# every update is encoded before the aggregator starts: its rounds time
# out after 4 s, and encoding is the slow part of a send (seconds under
# the sanitizers on a loaded machine)
encode () {     # ROUND SAMPLES ID SEED [huge]
  "$fed_tool" encode "$model" "$1" "$2" "$3" "$work/u-$1-$3-$4.msg" \
    "${5:-}" "$4" || fail "fed_tool encode: round $1 $3"
}
send () {       # ROUND SAMPLES ID SEED [huge]
  [ -f "$work/u-$1-$3-$4.msg" ] || fail "not encoded: $*"
  "$fed_tool" publish "$broker" tt/update/"$3" "$work/u-$1-$3-$4.msg" ||
    fail "fed_tool: round $1 $3"
}
encode 1 100 a 1
encode 1 300 b 2
encode 1 100 a 3
encode 1 200 h 8 huge
encode 2 50 c 4
encode 2 70 a 5
encode 3 10 b 6
encode 3 20 c 7
encode 4 40 a 9
encode 4 60 b 10

aggregate () {  # ROUNDS LOG
  "$tt" aggregate "$model" --broker "$broker" --topic tt --clients 3 \
    --quorum 2 --round-timeout 4 --rounds "$1" --save "$work/global.ttb" \
    --archive "$work/archive" > "$work/$2" 2>&1 &
  agg=$!
  pids+=($agg)
}

# libmosquitto is opened when needed: a missing one is said, not a crash
TT_FED_LIBMOSQUITTO=libmosquitto-missing.so.1 "$tt" aggregate "$model" \
  --broker "$broker" --clients 1 --rounds 1 > "$work/nolib.log" 2>&1 &&
  fail "the aggregator ran without libmosquitto"
grep -q "cannot load libmosquitto-missing.so.1 (Debian: libmosquitto1)" \
  "$work/nolib.log" || fail "no clear error without libmosquitto: $(cat "$work/nolib.log")"
echo "without libmosquitto: $(cat "$work/nolib.log")"

aggregate 2 aggregate1.log
wait_for "round 0: global model published" "$work/aggregate1.log"
send 1 100 a 1
send 1 300 b 2
send 1 100 a 3
send 1 200 h 8 huge
wait_for "round 1: global model published" "$work/aggregate1.log"
send 2 50 c 4
send 2 70 a 5
wait $agg || fail "the aggregator failed"
for want in "round 1: refused tt/update/a: client a: a second update in round 1" \
    "round 1: rejected the update of h: moved .* more than 10 times the round's median" \
    "round 1: closed after .* with 2 of 3 updates (quorum 2)" \
    "round 2: closed after .* with 2 of 3 updates (quorum 2)" \
    "^done: 2 rounds"; do
  grep -q "$want" "$work/aggregate1.log" || fail "no '$want'"
done

# killed and restarted
aggregate 3 aggregate2.log
wait_for "round 2: global model published" "$work/aggregate2.log"
grep -q "resumed from .*global.ttb.state: round 2 done" \
  "$work/aggregate2.log" || fail "no resume at round 2"
kill -KILL $agg
wait $agg 2>/dev/null
send 3 10 b 6
send 3 20 c 7
aggregate 3 aggregate3.log
wait $agg || fail "the restarted aggregator failed"
grep -q "resumed from .*global.ttb.state: round 2 done" \
  "$work/aggregate3.log" || fail "no resume at round 2 after the kill"
grep -q "^done: 3 rounds" "$work/aggregate3.log" || fail "round 3 not done"

# the broker restarted (no persistence: sessions and the retained global
# model lost) while the aggregator waits for round 4
aggregate 4 aggregate4.log
wait_for "round 3: global model published" "$work/aggregate4.log"
kill $broker_pid
wait $broker_pid 2>/dev/null
sleep 0.5
fed_start_broker
wait_for "round 4: connected again to .*: global model of round 3 published again" \
  "$work/aggregate4.log"
send 4 40 a 9
send 4 60 b 10
wait $agg || fail "the aggregator failed after the broker's restart"
grep -q "^done: 4 rounds" "$work/aggregate4.log" || fail "round 4 not done"
cat "$work"/aggregate*.log
python3 "$src/tests/federation/check_rounds.py" "$tt" "$work/archive" 4 2 \
  "$work/global.ttb" || fail "check_rounds.py"
echo "PASS: quorum after the timeout, a replay and an outlier refused, a killed aggregator resumed without losing the updates sent while it was down, a broker restart survived"
