#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The aggregator under 50 devices (issue 20): a mosquitto started here on
# 127.0.0.1 at a free port, `tensor-trainer aggregate` for CLIENTS clients
# and ROUNDS + 1 rounds of the Fashion-MNIST MLP (235,146 weights, 0.94 MB
# an update), and fed-swarm (tests/bench/fed_swarm.c): CLIENTS MQTT
# connections in one process that publish their updates all at once as
# soon as a round opens. Prints each round's time from the first
# publication to the global model, updates a second, and the aggregator's
# peak RSS (VmHWM of /proc/PID/status, read after the last round, before
# it is stopped) against its RSS before the first update came. The
# swarm, the broker and the aggregator share the machine's cores: the
# figures are the whole federation's on one machine, not the aggregator's
# alone.
#
# Usage: tests/bench/federation_aggregate.sh
# Env:   BUILD_DIR (build), CLIENTS (50), ROUNDS (5), AGGREGATOR (the
#        tensor-trainer to run the aggregator of: another build to compare),
#        MODEL (tests/models/fmnist_mlp.ini)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$top/build}
clients=${CLIENTS:-50} rounds=${ROUNDS:-5}
model=${MODEL:-$top/tests/models/fmnist_mlp.ini}
tt=${AGGREGATOR:-$build/tools/tensor-trainer} swarm=$build/tests/federation/fed-swarm
for f in "$tt" "$swarm"; do
  [ -x "$f" ] || { echo "no $f: build with the federation (libmosquitto-dev)"; exit 1; }
done
mosquitto=$(command -v mosquitto || echo /usr/sbin/mosquitto)
[ -x "$mosquitto" ] || { echo "no mosquitto (Debian: mosquitto)"; exit 1; }
work=$(mktemp -d /tmp/tt-fedbench-XXXXXX)
pids=()
cleanup () {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$work/mosquitto.conf" <<CONF
user $(id -un)
listener $port 127.0.0.1
allow_anonymous true
persistence false
max_queued_messages 0
CONF
"$mosquitto" -c "$work/mosquitto.conf" > "$work/mosquitto.log" 2>&1 &
pids+=($!)
broker=mqtt://127.0.0.1:$port
for _ in $(seq 50); do
  grep -q running "$work/mosquitto.log" && break
  sleep 0.1
done

OPENBLAS_NUM_THREADS=1 "$tt" aggregate "$model" --broker "$broker" \
  --topic bench --clients "$clients" --rounds $((rounds + 1)) \
  --save "$work/global.ttb" > "$work/aggregate.log" 2>&1 &
agg=$!
pids+=($agg)
for _ in $(seq 100); do
  grep -q "round 0: global model published" "$work/aggregate.log" && break
  sleep 0.1
done
idle=$(awk '/VmRSS/ {print $2}' /proc/$agg/status)
"$build/tests/federation/fed-swarm" "$broker" bench "$model" "$clients" \
  "$rounds" | tee "$work/swarm.log"
peak=$(awk '/VmHWM/ {print $2}' /proc/$agg/status)
grep -c "update from" "$work/aggregate.log" > "$work/taken"
echo "aggregator: $(cat "$work/taken") updates taken; RSS $idle KiB before the first update, peak $peak KiB after $rounds rounds of $clients (the update: $(( $(stat -c %s "$work/global.ttb.state") / 1024 )) KiB)"
