# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the federation tests: fed_test_setup NAME finds mosquitto
# (exit 77, a skip, when it or python3 is missing), makes the work folder
# /tmp/tt-NAME-XXXXXX, kills what was started (pids) and removes the
# folder at exit, picks a free port on 127.0.0.1 (port), and defines
# fail (prints every log of the folder) and wait_for PATTERN FILE;
# fed_need_gst_data skips without gst-launch-1.0 or Fashion-MNIST ($data),
# fed_plain_broker starts an anonymous broker (broker, broker_pid) and
# fed_start_broker starts mosquitto.conf's broker (again).

fed_test_setup () {
  mosquitto=$(command -v mosquitto || echo /usr/sbin/mosquitto)
  [ -x "$mosquitto" ] ||
    { echo "SKIP: mosquitto is not installed (Debian: mosquitto)"; exit 77; }
  command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
  work=$(mktemp -d "/tmp/tt-$1-XXXXXX")
  pids=()
  trap fed_test_cleanup EXIT
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
}

fed_test_cleanup () {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}

fail () {
  echo "FAIL: $*"
  for f in "$work"/*.log; do echo "--- $f"; tail -n 30 "$f"; done
  exit 1
}

wait_for () {   # PATTERN FILE: up to 30 s
  for _ in $(seq 300); do
    grep -q "$1" "$2" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "no '$1' in $2"
}

fed_need_gst_data () {
  command -v gst-launch-1.0 >/dev/null ||
    { echo "SKIP: no gst-launch-1.0 (gstreamer1.0-tools)"; exit 77; }
  [ -f "$data/train-images-idx3-ubyte.gz" ] ||
    { echo "SKIP: no $data (dataset-fashion-mnist)"; exit 77; }
}

# An anonymous broker on 127.0.0.1:$port, no persistence, accepting
# connections when this returns ("user" keeps a root test root: mosquitto
# would otherwise switch to its own user)
fed_plain_broker () {
  cat > "$work/mosquitto.conf" <<CONF
user $(id -un)
listener $port 127.0.0.1
allow_anonymous true
persistence false
CONF
  fed_start_broker
  broker=mqtt://127.0.0.1:$port
  for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" \
      2>/dev/null && return 0
    sleep 0.1
  done
  fail "the broker does not accept connections on port $port"
}

# $work/mosquitto.conf's broker, its log appended to mosquitto.log (a
# restart does not wait: the clients' reconnecting is what is tested)
fed_start_broker () {
  "$mosquitto" -c "$work/mosquitto.conf" >> "$work/mosquitto.log" 2>&1 &
  broker_pid=$!
  pids+=($broker_pid)
}
