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
#   - with GST_PLUGIN_DIR: tensor_trainer with a wrong
#     federation-credentials fails at start with the broker's refusal
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

pattern write tt/update/%u
pattern read tt/global
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
CONF
"$mosquitto" -c mosquitto.conf > mosquitto.log 2>&1 &
pids+=($!)
broker=mqtts://127.0.0.1:$port
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
  env "$@" "$fed_tool" publish "$broker" tt/update/dev0 dev0.msg \
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

# dev1 on dev0's topic: the broker drops it
FED_TOOL_ID=dev1 FED_TOOL_CA=ca.crt FED_TOOL_CREDENTIALS=dev1.cred \
  "$fed_tool" publish "$broker" tt/update/dev0 dev1.msg ||
  fail "dev1's publication"
sleep 1
grep -q "round 1: \(update\|refused\)" aggregate.log &&
  fail "the aggregator got dev1's update on dev0's topic"

for d in dev0 dev1; do
  FED_TOOL_ID=$d FED_TOOL_CA=ca.crt FED_TOOL_CREDENTIALS=$d.cred \
    "$fed_tool" publish "$broker" tt/update/$d $d.msg || fail "$d"
done
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
    tensor_trainer model-config="$src/tests/models/fmnist_mlp.ini" \
      num-training-samples=64 \
      epochs=1 federation-broker="$broker" federation-topic=tt \
      federation-client-id=dev0 federation-ca="$work/ca.crt" \
      federation-credentials="$work/wrong.cred" ! fakesink \
    > gst.log 2>&1 && fail "tensor_trainer with a wrong password ran"
  grep -q "refused this device.*not authori" gst.log ||
    fail "tensor_trainer: no refusal in $(cat gst.log)"
  echo "refused as expected: tensor_trainer: $(grep -o 'The federation broker.*' gst.log | head -n 1)"
fi
echo "PASS: TLS, passwords and the ACL hold; 2 devices completed a round over mqtts://"
