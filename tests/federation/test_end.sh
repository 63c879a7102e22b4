#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The end of a federation's run (docs/federation.md, "End of the run"),
# against a mosquitto started here on 127.0.0.1 at a free port:
#   - `tensor-trainer aggregate` for 2 clients and 2 rounds; 2 gst-launch-1.0
#     tensor_trainer devices asked for 50 epochs of 400 images (one round
#     each). After round 2 the aggregator publishes its end-of-run marker
#     (retained on PREFIX/end): both devices end at once, cleanly (EOS, exit
#     0, no "EOS after N of M samples" warning), each saving round 2's
#     global model (checked bit for bit with check_rounds.py)
#   - a device that joins after the end gets the retained global model and
#     marker and ends at its first batch with that model
#   - a new run on the same topic (a fresh --save) clears the old marker
#     before its first global model: a device then trains its round and
#     is not stopped by the previous run's end
#
# Usage: test_end.sh TENSOR_TRAINER GST_PLUGIN_DIR SRCDIR
set -uo pipefail
tt=$1 plugin_dir=$2 src=$3
data=/usr/share/datasets/fashion-mnist
. "$(dirname "$0")/broker_lib.sh"
fed_test_setup end
fed_need_gst_data

fed_plain_broker

model=$src/tests/models/fmnist_mlp.ini
device () {     # ID START EPOCHS
  GST_PLUGIN_PATH=$plugin_dir gst-launch-1.0 -m \
    tensor_datasrc location="$data/train-images-idx3-ubyte.gz" \
      label-location="$data/train-labels-idx1-ubyte.gz" \
      start-sample=$2 num-samples=400 epochs=$3 ! \
    tensor_trainer model-config="$model" num-training-samples=400 \
      epochs=$3 model-save-path="$work/$1.ttb" \
      federation-broker="$broker" federation-topic=end \
      federation-client-id=$1 federation-wait=20 ! \
    fakesink > "$work/$1.log" 2>&1
}
ended () {      # ID: it ended with the run, cleanly
  grep -q "event=(string)ended, client-id=(string)$1, round=(gint64)2," \
    "$work/$1.log" || fail "$1: no ended event"
  grep -q "Got EOS from element" "$work/$1.log" || fail "$1: no EOS"
  grep -q "EOS after" "$work/$1.log" && fail "$1: warned of an early EOS"
  return 0
}

"$tt" aggregate "$model" --broker "$broker" --topic end --clients 2 \
  --rounds 2 --save "$work/global.ttb" --archive "$work/archive" \
  > "$work/aggregate.log" 2>&1 &
agg=$!
pids+=($agg)
wait_for "round 0: global model published" "$work/aggregate.log"
start=$(date +%s)
device dev0 0 50 & d0=$!
device dev1 400 50 & d1=$!
pids+=($d0 $d1)
wait $d0 || fail "dev0 failed"
wait $d1 || fail "dev1 failed"
wait $agg || fail "the aggregator failed"
echo "2 devices asked for 50 epochs ended with the run after $(( $(date +%s) - start )) s"
grep -q "round 2: end of the run published on end/end" "$work/aggregate.log" ||
  fail "no end of the run published"
ended dev0
ended dev1

# joining after the end: the retained global model and marker
device late 800 50 || fail "the late device failed"
ended late
grep -q "event=(string)applied, client-id=(string)late, round=(gint64)2," \
  "$work/late.log" || fail "the late device did not take round 2"
grep -q "event=(string)published" "$work/late.log" &&
  fail "the late device published an update after the end"
python3 "$src/tests/federation/check_rounds.py" "$tt" "$work/archive" 2 2 \
  "$work/global.ttb" "$work/dev0.ttb" "$work/dev1.ttb" "$work/late.ttb" ||
  fail "check_rounds.py"

# a new run on the same topic is not ended by the old marker
"$tt" aggregate "$model" --broker "$broker" --topic end --clients 1 \
  --rounds 1 --save "$work/global2.ttb" > "$work/aggregate2.log" 2>&1 &
agg=$!
pids+=($agg)
wait_for "round 0: global model published" "$work/aggregate2.log"
device next 1200 1 || fail "the next run's device failed"
wait $agg || fail "the second aggregator failed"
grep -q "event=(string)ended, client-id=(string)next, round=(gint64)2," \
  "$work/next.log" && fail "the previous run's marker ended the next run's device"
grep -q "event=(string)published, client-id=(string)next, round=(gint64)1," \
  "$work/next.log" || fail "the next run's device did not publish round 1"
grep -q "event=(string)applied, client-id=(string)next, round=(gint64)1," \
  "$work/next.log" || fail "the next run's device did not take round 1"
grep -q "^done: 1 rounds" "$work/aggregate2.log" || fail "second run not done"
cat "$work/aggregate.log"
echo "PASS: the end-of-run marker ends the devices cleanly with the last global model, late ones too; a new run clears it"
