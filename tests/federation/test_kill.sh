#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A device killed mid-round and the aggregator killed while devices run
# (issue 20 item 4), with real gst-launch-1.0 tensor_trainer devices
# against a mosquitto started here on 127.0.0.1 at a free port.
# `tensor-trainer aggregate` for 3 clients, quorum 2, a 3 s round timeout,
# 2 rounds; dev0 and dev1 train 500 and 700 Fashion-MNIST images a round,
# dev2 1000 behind an identity that sleeps 10 ms a sample (it cannot end
# its round in 10 s: it is surely mid-round when killed).
#   round 1: once dev0's and dev1's updates are in, dev2 is killed
#            (SIGKILL): the round closes with the quorum after the timeout
#   round 2: as soon as round 1's global model is out (the devices are
#            training round 2) the aggregator is killed (SIGKILL) and
#            started again 1 s later with the same command: it resumes
#            from its saved global model and round (round 1 done), takes
#            the round-2 updates sent while it was down (its persistent
#            session kept them; the devices also resend them) and closes
#            round 2 with the quorum; dev0 and dev1 apply it and end.
# check_rounds.py then checks both global models bit for bit against the
# weighted averages of the updates taken, and that the devices' saved
# models hold round 2's.
#
# Usage: test_kill.sh TENSOR_TRAINER GST_PLUGIN_DIR SRCDIR
set -uo pipefail
tt=$1 plugin_dir=$2 src=$3
data=/usr/share/datasets/fashion-mnist
. "$(dirname "$0")/broker_lib.sh"
fed_test_setup kill
fed_need_gst_data

fed_plain_broker

model=$src/tests/models/fmnist_mlp.ini
aggregate () {  # LOG
  "$tt" aggregate "$model" --broker "$broker" --topic kill --clients 3 \
    --quorum 2 --round-timeout 3 --rounds 2 --save "$work/global.ttb" \
    --archive "$work/archive" > "$work/$1" 2>&1 &
  agg=$!
  pids+=($agg)
}
aggregate aggregate1.log
wait_for "round 0: global model published" "$work/aggregate1.log"

start=(0 500 1200) count=(500 700 1000) slow=("" "" "identity sleep-time=10000 !")
devices=()
for i in 0 1 2; do
  GST_PLUGIN_PATH=$plugin_dir gst-launch-1.0 -m \
    tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
      label-location="$data/train-labels-idx1-ubyte.gz" \
      start-sample=${start[$i]} num-samples=${count[$i]} epochs=2 ! \
    ${slow[$i]} \
    tensor_trainer model-config="$model" num-training-samples=${count[$i]} \
      epochs=2 model-save-path="$work/dev$i.ttb" \
      federation-broker="$broker" federation-topic=kill \
      federation-client-id=dev$i federation-wait=20 ! \
    fakesink > "$work/dev$i.log" 2>&1 &
  devices+=($!)
  pids+=($!)
done

wait_for "round 1: update from dev0" "$work/aggregate1.log"
wait_for "round 1: update from dev1" "$work/aggregate1.log"
grep -q "update from dev2" "$work/aggregate1.log" &&
  fail "dev2 ended its round before it was killed"
kill -KILL "${devices[2]}"
wait "${devices[2]}" 2>/dev/null
echo "dev2 killed mid-round 1"
wait_for "round 1: global model published" "$work/aggregate1.log"
kill -KILL $agg
wait $agg 2>/dev/null
echo "the aggregator killed after round 1's global model; started again in 1 s"
sleep 1
aggregate aggregate2.log
for i in 0 1; do
  wait "${devices[$i]}" || fail "device dev$i failed"
done
wait $agg || fail "the restarted aggregator failed"
cat "$work"/aggregate*.log
grep -q "round 1: closed after .* with 2 of 3 updates (quorum 2)" \
  "$work/aggregate1.log" || fail "round 1 did not close with the quorum"
grep -q "resumed from .*global.ttb.state: round 1 done" \
  "$work/aggregate2.log" || fail "the restarted aggregator did not resume"
grep -q "round 2: closed after .* with 2 of 3 updates (quorum 2)" \
  "$work/aggregate2.log" || fail "round 2 did not close with the quorum"
grep -q "^done: 2 rounds" "$work/aggregate2.log" || fail "not done"
for i in 0 1; do
  for r in 1 2; do
    grep -q "event=(string)applied, client-id=(string)dev$i, round=(gint64)$r," \
      "$work/dev$i.log" || fail "dev$i did not apply round $r"
  done
done
python3 "$src/tests/federation/check_rounds.py" "$tt" "$work/archive" 2 2 \
  "$work/global.ttb" "$work/dev0.ttb" "$work/dev1.ttb" ||
  fail "check_rounds.py"
echo "PASS: a device killed mid-round (the round closed with the quorum) and the aggregator killed and restarted (resumed at round 1, round 2 done) with real devices"
