#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The broker restarted mid-run, with real devices (issue 20 item 4): a
# mosquitto started here on 127.0.0.1 at a free port (no persistence: a
# restart loses sessions, queued messages and the retained global model),
# `tensor-trainer aggregate` for 2 clients and 2 rounds, 2 gst-launch-1.0
# tensor_datasrc ! tensor_trainer devices (3,000 Fashion-MNIST images
# each, 4 epochs, one per round). As soon as round 1's global model is
# out, the broker is killed and started again 3 s later. Whatever the
# devices were doing then (publishing, training offline, done), round 2
# must complete with both devices, counted once each (a device sends its
# update again when the global model does not come; the aggregator keeps
# the first copy), its global model bit for bit the weighted average of
# the two updates, and both devices apply it. (The devices train 4 epochs
# for the aggregator's 2 rounds: an outage can merge two rounds of a
# device into one update; a device waits federation-wait=5 s for a global
# model that no longer comes after round 2.)
#
# Usage: test_faults.sh TENSOR_TRAINER GST_PLUGIN_DIR SRCDIR
set -uo pipefail
tt=$1 plugin_dir=$2 src=$3
data=/usr/share/datasets/fashion-mnist
. "$(dirname "$0")/broker_lib.sh"
fed_test_setup faults
fed_need_gst_data

fed_plain_broker

model=$src/tests/models/fmnist_mlp.ini
"$tt" aggregate "$model" --broker "$broker" --topic faults --clients 2 \
  --rounds 2 --round-timeout 60 --save "$work/global.ttb" \
  --archive "$work/archive" > "$work/aggregate.log" 2>&1 &
agg=$!
pids+=($agg)
sleep 1
devices=()
for i in 0 1; do
  GST_PLUGIN_PATH=$plugin_dir gst-launch-1.0 -m \
    tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
      label-location="$data/train-labels-idx1-ubyte.gz" \
      start-sample=$((i * 3000)) num-samples=3000 epochs=4 ! \
    tensor_trainer model-config="$model" num-training-samples=3000 \
      epochs=4 model-save-path="$work/dev$i.ttb" \
      federation-broker="$broker" federation-topic=faults \
      federation-client-id=dev$i federation-wait=5 ! \
    fakesink > "$work/dev$i.log" 2>&1 &
  devices+=($!)
  pids+=($!)
done
for _ in $(seq 600); do
  grep -q "round 1: global model published" "$work/aggregate.log" && break
  sleep 0.05
done
kill $broker_pid
wait $broker_pid 2>/dev/null
echo "broker killed after round 1's global model; started again in 3 s"
sleep 3
fed_start_broker
for i in 0 1; do
  wait "${devices[$i]}" || fail "device dev$i failed"
done
wait $agg || fail "the aggregator failed"
cat "$work/aggregate.log"
grep -ho "event=(string)[a-z]*, client-id=(string)dev[01], round=(gint64)[0-9]*" \
  "$work/dev0.log" "$work/dev1.log"
grep -q "^done: 2 rounds" "$work/aggregate.log" || fail "round 2 not done"
for i in 0 1; do
  grep -q "event=(string)applied, client-id=(string)dev$i, round=(gint64)2," \
    "$work/dev$i.log" || fail "dev$i did not apply round 2"
done
python3 "$src/tests/federation/check_rounds.py" "$tt" "$work/archive" 2 2 \
  "$work/global.ttb" || fail "check_rounds.py"
echo "PASS: the broker restarted mid-run; round 2 completed with both devices counted once"
