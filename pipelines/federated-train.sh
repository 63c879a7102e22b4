#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Many devices, one model (issue 20): federated training of the
# Fashion-MNIST MLP (tests/models/fmnist_mlp.ini) by three devices, each a
#
#   gst-launch-1.0 tensor_datasrc ! tensor_trainer federation-broker=... !
#   fakesink
#
# on its own disjoint, class-skewed third of the 60,000 training images
# (device 0 sees mostly classes 0-3, device 1 mostly 4-7, device 2 mostly
# 8, 9, 0, 1: 80 % of each class goes to the devices that "own" it, the
# rest to the others), with `tensor-trainer aggregate` averaging their
# updates (weighted by samples) into one global model after every local
# epoch, through a mosquitto broker started here on 127.0.0.1 (a free
# port, a configuration written here, stopped at the end). No device's
# images leave it: only weights travel.
#
# Prints one line per round with the global model's validation accuracy
# on the 10,000 test images (tensor-trainer eval), then the same model
# trained centrally on all 60,000 images for as many epochs (the
# comparison), and ends with
#   final: global val_accuracy=X after R rounds (3 clients)
#
# Usage: pipelines/federated-train.sh   (no arguments)
# Env: ROUNDS (default 10), QUICK=1 (2 rounds of 1,000 images per device,
#   no centralized run), TT_BUILD_DIR (a built build folder to use instead
#   of building build/)
# Needs: the project's packages (scripts/ensure-deps.sh: GStreamer,
#   mosquitto, dataset-fashion-mnist), python3.
# Writes here: federated/ (the devices' data, logs, the archive of every
#   update and global model, federated/global.ttb: the last global model).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/pipelines/common.sh"
tt_setup
tt_need fakesink:libgstreamer1.0-0 tensor_datasrc:project \
  tensor_trainer:project
tt_need_command mosquitto:mosquitto python3:python3
tt=$build/tools/tensor-trainer
data=/usr/share/datasets/fashion-mnist
model=$top/tests/models/fmnist_mlp.ini
rounds=${ROUNDS:-10}
per_device=0                    # all of its third
if [ "${QUICK:-0}" = 1 ]; then
  rounds=${ROUNDS:-2}
  per_device=1000
fi

out=$PWD/federated
rm -rf "$out"
mkdir -p "$out"
pids=()
cleanup () {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# the three devices' data: IDX files, class-skewed, disjoint
python3 - "$data" "$out" "$per_device" <<'PY'
import gzip, random, struct, sys
data, out, per = sys.argv[1], sys.argv[2], int(sys.argv[3])
with gzip.open(f"{data}/train-images-idx3-ubyte.gz") as f:
    img = f.read()
with gzip.open(f"{data}/train-labels-idx1-ubyte.gz") as f:
    lab = f.read()
n, rows, cols = struct.unpack(">III", img[4:16])
size = rows * cols
owners = {c: [d for d, s in enumerate([(0, 1, 2, 3), (4, 5, 6, 7),
                                       (8, 9, 0, 1)]) if c in s]
          for c in range(10)}
rng = random.Random(20)
parts = [[], [], []]
turn = [0] * 10
for i in range(n):
    c = lab[8 + i]
    if rng.random() < 0.8:
        d = owners[c][turn[c] % len(owners[c])]
        turn[c] += 1
    else:
        d = rng.choice([d for d in range(3) if d not in owners[c]])
    parts[d].append(i)
for d, idx in enumerate(parts):
    if per:
        idx = idx[:per]
    with open(f"{out}/device{d}-images.idx", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, len(idx), rows, cols))
        for i in idx:
            f.write(img[16 + i * size:16 + (i + 1) * size])
    with open(f"{out}/device{d}-labels.idx", "wb") as f:
        f.write(struct.pack(">II", 0x801, len(idx)))
        f.write(bytes(lab[8 + i] for i in idx))
    counts = [0] * 10
    for i in idx:
        counts[lab[8 + i]] += 1
    main = sum(sorted(counts)[-4:]) / len(idx)
    print(f"device {d}: {len(idx)} images, per class {counts} "
          f"({main:.0%} in its 4 main classes)")
    with open(f"{out}/device{d}.count", "w") as f:
        f.write(f"{len(idx)}\n")
PY

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$out/mosquitto.conf" <<CONF
user $(id -un)
listener $port 127.0.0.1
allow_anonymous true
persistence false
CONF
mosquitto -c "$out/mosquitto.conf" > "$out/mosquitto.log" 2>&1 &
pids+=($!)
broker=mqtt://127.0.0.1:$port
sleep 0.5

"$tt" aggregate "$model" --broker "$broker" --topic fmnist --clients 3 \
  --rounds "$rounds" --round-timeout 600 --save "$out/global.ttb" \
  --archive "$out/archive" > "$out/aggregate.log" 2>&1 &
agg=$!
pids+=($agg)
for _ in $(seq 100); do
  grep -q "round 0: global model published" "$out/aggregate.log" && break
  sleep 0.1
done

start=$SECONDS
devices=()
for d in 0 1 2; do
  n=$(cat "$out/device$d.count")
  gst-launch-1.0 -m \
    tensor_datasrc location="$out/device$d-images.idx" \
      label-location="$out/device$d-labels.idx" num-samples="$n" \
      shuffle=true seed=$d epochs="$rounds" ! \
    tensor_trainer model-config="$model" num-training-samples="$n" \
      epochs="$rounds" model-save-path="$out/device$d.ttb" \
      federation-broker="$broker" federation-topic=fmnist \
      federation-client-id=device$d federation-wait=600 ! \
    fakesink > "$out/device$d.log" 2>&1 &
  devices+=($!)
  pids+=($!)
done

# each global model, as it comes, on the 10,000 test images
acc=
for r in $(seq 1 "$rounds"); do
  msg=$out/archive/global-$(printf %06d "$r").msg
  while [ ! -f "$msg" ]; do
    kill -0 $agg 2>/dev/null || { echo "error: the aggregator stopped:" >&2; tail -n 20 "$out/aggregate.log" >&2; exit 1; }
    sleep 0.2
  done
  tail -c +129 "$msg" > "$out/round.ttb"
  line=$("$tt" eval "$out/round.ttb" --data "$data/t10k-images-idx3-ubyte.gz" \
    --labels "$data/t10k-labels-idx1-ubyte.gz" | grep '^eval ')
  acc=$(sed 's/.*accuracy=\([0-9.]*\).*/\1/' <<< "$line")
  echo "round $r: global val_accuracy=$acc ($((SECONDS - start)) s)"
done
for p in "${devices[@]}"; do
  wait "$p" || { echo "error: a device failed" >&2; exit 1; }
done
wait $agg || { echo "error: the aggregator failed" >&2; exit 1; }
fed_seconds=$((SECONDS - start))

if [ "${QUICK:-0}" != 1 ]; then
  echo "centralized: the same MLP on all 60,000 images, $rounds epochs"
  start=$SECONDS
  central=$("$tt" train "$model" --data "$data/train-images-idx3-ubyte.gz" \
    --labels "$data/train-labels-idx1-ubyte.gz" \
    --valid-data "$data/t10k-images-idx3-ubyte.gz" \
    --valid-labels "$data/t10k-labels-idx1-ubyte.gz" --epochs "$rounds" |
    grep '^epoch=' | tail -n 1 | sed 's/.*val_accuracy=\([0-9.]*\).*/\1/')
  echo "centralized: val_accuracy=$central after $rounds epochs ($((SECONDS - start)) s); federated: $acc ($fed_seconds s)"
fi
echo "final: global val_accuracy=$acc after $rounds rounds (3 clients)"
