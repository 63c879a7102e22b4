#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Federated training against a real broker (issue 20): a mosquitto started
# here on 127.0.0.1 at a free port (its configuration written here, killed
# at the end), `tensor-trainer aggregate` for 3 clients and 3 rounds, and 3
# gst-launch-1.0 tensor_datasrc ! tensor_trainer devices on disjoint slices
# of Fashion-MNIST (800, 1000, 1200 images), one epoch per round. Before
# the devices come, round 1 gets an update of another model (wrong weight
# signature), one with a NaN weight (every checksum right), a stale one
# (round 0) and one whose id is not its topic's: all refused, the round
# completes with the 3 devices. Two poisoned tensor_trainer devices come
# before the honest ones, through real gst-launch-1.0 pipelines: "huge"
# (the same model with Adam's learning rate 1 instead of 0.001: every
# weight it trains moves about 1 a step, its update far outside the
# others') and "wrongshape" (a 64-unit hidden layer: another weight
# signature). The aggregator refuses wrongshape's at once and counts
# huge's until the round would close: the norm rule then rejects it
# (huge's is in first, so the check runs with it and 2 honest updates),
# and the round waits for the third honest device. Then check_rounds.py checks, from the
# archived messages and with the project's bundle tools only, that each
# round's global model is bit for bit the sample-weighted average of the
# updates it took, and that the aggregator's --save and every device's
# saved model hold the last global model (the devices continued from it).
# Last, a restarted aggregator resumes from its --save: round 3 done.
#
# Usage: test_federation.sh TENSOR_TRAINER FED_TOOL GST_PLUGIN_DIR SRCDIR
# Exit 77 (skipped) when mosquitto, gst-launch-1.0 or the data set is
# missing (scripts/ensure-deps.sh installs them).
set -uo pipefail
tt=$1 fed_tool=$2 plugin_dir=$3 src=$4
data=/usr/share/datasets/fashion-mnist
. "$(dirname "$0")/broker_lib.sh"
fed_test_setup federation
fed_need_gst_data

fed_plain_broker

model=$src/tests/models/fmnist_mlp.ini
topic=tt-test
rounds=3
"$tt" aggregate "$model" --broker "$broker" --topic $topic --clients 3 \
  --rounds $rounds --round-timeout 40 --save "$work/global.ttb" \
  --archive "$work/archive" > "$work/aggregate.log" 2>&1 &
agg=$!
pids+=($agg)
for _ in $(seq 100); do
  grep -q "round 0: global model published" "$work/aggregate.log" && break
  sleep 0.1
done
grep -q "round 0: global model published" "$work/aggregate.log" ||
  fail "the aggregator did not publish round 0"

# poisoned updates for round 1, before any device's
sed 's/unit = 128/unit = 64/' "$model" > "$work/other.ini"
"$fed_tool" encode "$work/other.ini" 1 500 intruder "$work/other.msg" &&
"$fed_tool" encode "$model" 1 500 poisoned "$work/nan.msg" nan &&
"$fed_tool" encode "$model" 0 500 late "$work/stale.msg" &&
"$fed_tool" encode "$model" 1 500 dev0 "$work/spoof.msg" ||
  fail "fed_tool encode"
"$fed_tool" publish "$broker" $topic/update/intruder "$work/other.msg" &&
"$fed_tool" publish "$broker" $topic/update/poisoned "$work/nan.msg" &&
"$fed_tool" publish "$broker" $topic/update/late "$work/stale.msg" &&
"$fed_tool" publish "$broker" $topic/update/mallory "$work/spoof.msg" ||
  fail "fed_tool publish"

# the poisoned devices, one after the other before the honest ones: huge
# is in the round before any honest update (deterministic: the norm rule
# must reject it)
sed 's/learning_rate = 0.001/learning_rate = 1/' "$model" > "$work/huge.ini"
grep -q "learning_rate = 1$" "$work/huge.ini" || fail "huge.ini: no learning rate"
poisoned_device () {    # ID INI
  GST_PLUGIN_PATH=$plugin_dir gst-launch-1.0 -m \
    tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
      label-location="$data/train-labels-idx1-ubyte.gz" \
      start-sample=5000 num-samples=256 epochs=1 ! \
    tensor_trainer model-config="$2" num-training-samples=256 epochs=1 \
      federation-broker="$broker" federation-topic=$topic \
      federation-client-id=$1 federation-wait=1 ! \
    fakesink > "$work/$1.log" 2>&1 || fail "device $1 failed"
}
poisoned_device wrongshape "$work/other.ini"
wait_for "round 1: refused $topic/update/wrongshape: .*signature" \
  "$work/aggregate.log"
poisoned_device huge "$work/huge.ini"
wait_for "round 1: update from huge" "$work/aggregate.log"

start=(0 800 1800)
count=(800 1000 1200)
devices=()
for i in 0 1 2; do
  GST_PLUGIN_PATH=$plugin_dir gst-launch-1.0 -m \
    tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
      label-location="$data/train-labels-idx1-ubyte.gz" \
      start-sample=${start[$i]} num-samples=${count[$i]} shuffle=true \
      seed=$i epochs=$rounds ! \
    tensor_trainer model-config="$model" \
      num-training-samples=${count[$i]} epochs=$rounds \
      model-save-path="$work/dev$i.ttb" federation-broker="$broker" \
      federation-topic=$topic federation-client-id=dev$i \
      federation-wait=40 ! \
    fakesink > "$work/dev$i.log" 2>&1 &
  devices+=($!)
  pids+=($!)
done
for i in 0 1 2; do
  wait "${devices[$i]}" || fail "device dev$i failed"
done
wait $agg || fail "the aggregator failed"
cat "$work/aggregate.log"

for why in "intruder.*signature" "poisoned.*non-finite" "late.*stale" \
    "mallory.*says client dev0"; do
  grep -q "round 1: refused .*$why" "$work/aggregate.log" ||
    fail "no refusal matching '$why'"
done
grep -q "round 1: rejected the update of huge: moved .* more than 10 times the round's median" \
  "$work/aggregate.log" || fail "huge's update was not rejected"
[ -f "$work/archive/rejected-000001-huge.msg" ] ||
  fail "huge's update not archived as rejected"
grep -q "^done: $rounds rounds" "$work/aggregate.log" || fail "not done"
for i in 0 1 2; do
  for r in $(seq 0 $rounds); do
    grep -q "event=(string)applied, client-id=(string)dev$i, round=(gint64)$r," \
      "$work/dev$i.log" || fail "dev$i did not apply round $r"
  done
  for r in $(seq 1 $rounds); do
    grep -q "event=(string)published, client-id=(string)dev$i, round=(gint64)$r," \
      "$work/dev$i.log" || fail "dev$i did not publish round $r"
  done
done

python3 "$src/tests/federation/check_rounds.py" "$tt" "$work/archive" \
  $rounds 3 "$work/global.ttb" "$work/dev0.ttb" "$work/dev1.ttb" \
  "$work/dev2.ttb" || fail "check_rounds.py"

# a restarted aggregator resumes at its last saved round
"$tt" aggregate "$model" --broker "$broker" --topic $topic --clients 3 \
  --rounds $rounds --save "$work/global.ttb" > "$work/restart.log" 2>&1 ||
  fail "the restarted aggregator failed"
grep -q "resumed from .*global.ttb.state: round $rounds done" \
  "$work/restart.log" || fail "the restarted aggregator did not resume"
echo "PASS: 3 devices, $rounds rounds, 4 poisoned messages and 2 poisoned tensor_trainer devices refused"
