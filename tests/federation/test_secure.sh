#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A federation behind TLS, per-device passwords and an ACL (issue 20 item
# 3), against a real mosquitto started here on 127.0.0.1 at a free port:
# a CA, the broker's certificate (for IP 127.0.0.1), a password file
# (mosquitto_passwd) and an ACL (a device writes only PREFIX/update/<its
# user> and reads PREFIX/global; the aggregator reads the updates and
# writes the global model) all generated here. Checked:
#   - a device without credentials, one with a wrong password, and one
#     that does not trust the broker's certificate (another CA) are
#     refused
#   - dev1 publishing on dev0's update topic is dropped by the broker (the
#     aggregator never sees it)
#   - dev0 and dev1, each with its own password, complete a round with the
#     aggregator over mqtts://, checked bit for bit by check_rounds.py
#   - a second listener requires a client certificate signed by the CA
#     (require_certificate true): a device without one, and one whose
#     certificate another CA signed, are refused; dev1 sends its update
#     of the round through it with its certificate
#   - with GST_PLUGIN_DIR: tensor_trainer with a wrong
#     federation-credentials fails at start with the broker's refusal;
#     one with dev1's client certificate (federation-cert, -key) receives
#     the global model and publishes its update through the listener
#     that requires it
#
# Usage: test_secure.sh TENSOR_TRAINER FED_TOOL SRCDIR [GST_PLUGIN_DIR]
set -uo pipefail
tt=$(realpath "$1") fed_tool=$(realpath "$2") src=$(realpath "$3")
plugin_dir=${4:-}
. "$(dirname "$0")/broker_lib.sh"
fed_test_setup secure
for c in mosquitto_passwd openssl; do
  command -v $c >/dev/null || { echo "SKIP: no $c"; exit 77; }
done

cd "$work" || exit 1

# certificates: a CA and the broker's, for 127.0.0.1
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt \
  -subj /CN=tt-test-ca -days 2 2> openssl.log &&
openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key \
  -out other-ca.crt -subj /CN=another-ca -days 2 2>> openssl.log &&
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
  -subj /CN=127.0.0.1 2>> openssl.log &&
printf 'subjectAltName=IP:127.0.0.1\n' > server.ext &&
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -out server.crt -days 2 -extfile server.ext 2>> openssl.log ||
  fail "openssl"
# client certificates: dev1's signed by the CA, a rogue one by another CA
client_cert () {        # NAME CA
  openssl req -newkey rsa:2048 -nodes -keyout $1.key -out $1.csr \
    -subj /CN=$1 2>> openssl.log &&
  openssl x509 -req -in $1.csr -CA $2.crt -CAkey $2.key -CAcreateserial \
    -out $1.crt -days 2 2>> openssl.log
}
client_cert dev1 ca && client_cert rogue other-ca || fail "openssl (clients)"
cert_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# passwords and the ACL
touch passwd && chmod 600 passwd
for u in aggregator dev0 dev1; do
  mosquitto_passwd -b passwd $u "pw-$u" || fail "mosquitto_passwd"
  printf '%s:pw-%s\n' $u $u > $u.cred
done
printf 'dev0:wrong\n' > wrong.cred
cat > acl <<'ACL'
user aggregator
topic read tt/update/+
topic readwrite tt/global
topic readwrite tt/end

pattern write tt/update/%u
pattern read tt/global
pattern read tt/end
ACL
chmod 600 acl

# (user: mosquitto started as root would read the files below as user
# mosquitto, which cannot enter this folder)
cat > mosquitto.conf <<CONF
user $(id -un)
per_listener_settings false
allow_anonymous false
password_file $work/passwd
acl_file $work/acl
persistence false
listener $port 127.0.0.1
cafile $work/ca.crt
certfile $work/server.crt
keyfile $work/server.key

listener $cert_port 127.0.0.1
cafile $work/ca.crt
certfile $work/server.crt
keyfile $work/server.key
require_certificate true
CONF
"$mosquitto" -c mosquitto.conf > mosquitto.log 2>&1 &
pids+=($!)
broker=mqtts://127.0.0.1:$port
cert_broker=mqtts://127.0.0.1:$cert_port
sleep 0.5

model=$src/tests/federation/tiny.ini
"$tt" aggregate "$model" --broker "$broker" \
  --topic tt --ca ca.crt --credentials aggregator.cred --clients 2 \
  --rounds 1 --save global.ttb --archive archive > aggregate.log 2>&1 &
agg=$!
pids+=($agg)
wait_for "round 0: global model published" aggregate.log

"$fed_tool" encode "$model" 1 100 dev0 dev0.msg "" 1 &&
"$fed_tool" encode "$model" 1 300 dev1 dev1.msg "" 2 ||
  fail "fed_tool encode"

refused () {    # WHAT EXPECTED-MESSAGE ENV...
  local what=$1 want=$2
  shift 2
  env "$@" "$fed_tool" publish "${url:-$broker}" tt/update/dev0 dev0.msg \
    > refused.log 2>&1 && fail "$what was not refused"
  grep -q "$want" refused.log || fail "$what: no '$want' in: $(cat refused.log)"
  echo "refused as expected: $what: $(cat refused.log)"
}
refused "no credentials" "not authori" FED_TOOL_ID=dev0 FED_TOOL_CA=ca.crt
refused "a wrong password" "not authori" FED_TOOL_ID=dev0 \
  FED_TOOL_CA=ca.crt FED_TOOL_CREDENTIALS=wrong.cred
refused "another CA (the broker's certificate not trusted)" \
  "TLS handshake failed" FED_TOOL_ID=dev0 FED_TOOL_CREDENTIALS=dev0.cred \
  FED_TOOL_CA=other-ca.crt

# (the broker closes such a connection after the TLS handshake: what the
# client sees is a connection that never gets the broker's answer, 2 s
# here where an accepted one takes milliseconds)
url=$cert_broker refused "no client certificate where one is required" \
  "require a client certificate" FED_TOOL_WAIT_MS=2000 FED_TOOL_ID=dev0 FED_TOOL_CA=ca.crt \
  FED_TOOL_CREDENTIALS=dev0.cred
url=$cert_broker refused "a client certificate of another CA" \
  "require a client certificate" FED_TOOL_WAIT_MS=2000 FED_TOOL_ID=dev0 FED_TOOL_CA=ca.crt \
  FED_TOOL_CREDENTIALS=dev0.cred FED_TOOL_CERT=rogue.crt \
  FED_TOOL_KEY=rogue.key
grep -q "round 1: \(update\|refused\)" aggregate.log &&
  fail "an update got through a refused connection"

# dev1 on dev0's topic: the broker drops it
FED_TOOL_ID=dev1 FED_TOOL_CA=ca.crt FED_TOOL_CREDENTIALS=dev1.cred \
  "$fed_tool" publish "$broker" tt/update/dev0 dev1.msg ||
  fail "dev1's publication"
sleep 1
grep -q "round 1: \(update\|refused\)" aggregate.log &&
  fail "the aggregator got dev1's update on dev0's topic"

FED_TOOL_ID=dev0 FED_TOOL_CA=ca.crt FED_TOOL_CREDENTIALS=dev0.cred \
  "$fed_tool" publish "$broker" tt/update/dev0 dev0.msg || fail "dev0"
# dev1 through the listener that requires a client certificate
FED_TOOL_ID=dev1 FED_TOOL_CA=ca.crt FED_TOOL_CREDENTIALS=dev1.cred \
  FED_TOOL_CERT=dev1.crt FED_TOOL_KEY=dev1.key \
  "$fed_tool" publish "$cert_broker" tt/update/dev1 dev1.msg ||
  fail "dev1 with its client certificate"
echo "dev1's update went through the listener requiring a client certificate"
wait $agg || fail "the aggregator failed"
cat aggregate.log
grep -q "^done: 1 rounds" aggregate.log || fail "not done"
python3 "$src/tests/federation/check_rounds.py" "$tt" archive 1 2 \
  global.ttb || fail "check_rounds.py"

data=/usr/share/datasets/fashion-mnist
if [ -n "$plugin_dir" ] && command -v gst-launch-1.0 >/dev/null &&
    [ -f $data/t10k-images-idx3-ubyte.gz ]; then
  GST_PLUGIN_PATH=$plugin_dir gst-launch-1.0 \
    tensor_datasrc location=$data/t10k-images-idx3-ubyte.gz \
      label-location=$data/t10k-labels-idx1-ubyte.gz num-samples=64 \
      epochs=1 ! \
    tensor_trainer model-config="$model" \
      num-training-samples=64 \
      epochs=1 federation-broker="$broker" federation-topic=tt \
      federation-client-id=dev0 federation-ca="$work/ca.crt" \
      federation-credentials="$work/wrong.cred" ! fakesink \
    > gst.log 2>&1 && fail "tensor_trainer with a wrong password ran"
  grep -q "refused this device.*not authori" gst.log ||
    fail "tensor_trainer: no refusal in $(cat gst.log)"
  echo "refused as expected: tensor_trainer: $(grep -o 'The federation broker.*' gst.log | head -n 1)"
  # with dev1's client certificate through the listener that requires
  # one: connected, it gets the retained global model of the run (of the
  # tiny model: refused by this MLP, which shows it came) and publishes
  # its update
  GST_PLUGIN_PATH=$plugin_dir timeout 60 gst-launch-1.0 -m \
    tensor_datasrc location=$data/t10k-images-idx3-ubyte.gz \
      label-location=$data/t10k-labels-idx1-ubyte.gz num-samples=64 \
      epochs=1 ! \
    tensor_trainer model-config="$src/tests/models/fmnist_mlp.ini" \
      num-training-samples=64 epochs=1 federation-broker="$cert_broker" \
      federation-topic=tt federation-client-id=dev1 \
      federation-ca="$work/ca.crt" federation-cert="$work/dev1.crt" \
      federation-key="$work/dev1.key" \
      federation-credentials="$work/dev1.cred" federation-wait=1 ! \
    fakesink > gst-cert.log 2>&1 || fail "tensor_trainer with its certificate"
  grep -q "Refused a global model of the federation: tt/global" gst-cert.log &&
    grep -q "event=(string)published, client-id=(string)dev1, round=(gint64)1," \
      gst-cert.log || fail "tensor_trainer with its certificate got nothing"
  echo "tensor_trainer with its client certificate received the global model and published its update"
fi
echo "PASS: TLS, passwords and the ACL hold; 2 devices completed a round over mqtts://"
