#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor-trainer train --replay-size (tools/cli_replay.c, io/replay.c):
# the batches' mix (replayed= on each epoch line: the first batch all new,
# then batch - K new and K replayed), the file written at the end (its
# header, and every sample kept one of the data set's, as float32 inputs
# and a one-hot label), a second run that loads it and replays from its
# first batch, a classifier grown since (labels padded), and the
# refusals (K of a whole batch or over the size, a file without a size,
# a memory limit, eval).
#
# usage: test_cli_replay.sh TENSOR_TRAINER
set -uo pipefail
cli=$1
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-cli-replay-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")

ok () { passed=$((passed + 1)); }
bad () { failed=$((failed + 1)); echo "FAIL: $*"; }

# 64 samples of 4 uint8 values, 3 classes: class c lights value c
python3 - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
n = 64
imgs, labs = bytearray(), bytearray()
for k in range(n):
    c = k % 3
    v = [(k * 37 + i * 11) % 50 for i in range(4)]
    v[c] += 200
    imgs += bytes(v)
    labs.append(c)
open(d + "/x.idx", "wb").write(struct.pack(">IIII", 0x803, n, 1, 4) + imgs)
open(d + "/y.idx", "wb").write(struct.pack(">II", 0x801, n) + labs)
PY
cat > "$tmp/cls.ini" <<'INI'
[Model]
type = NeuralNetwork
batch_size = 8
loss = cross
[Optimizer]
type = sgd
learning_rate = 0.01
[input]
type = input
input_shape = 1:1:4
[out]
type = fully_connected
unit = 3
activation = softmax
INI
# the classifier grown to 4 classes
sed 's/unit = 3/unit = 4/' "$tmp/cls.ini" > "$tmp/grown.ini"

train () { "$cli" train "$tmp/cls.ini" --data "$tmp/x.idx" --labels "$tmp/y.idx" "$@"; }

# batch 8, K 4 (half): epoch 1 has one batch of 8 new, then 14 of 4 + 4;
# epoch 2 16 of 4 + 4
out=$(train --epochs 2 --replay-size 16 --replay-file "$tmp/r.replay" --seed 5 2>&1)
echo "$out" | grep -q '^epoch=1/2 .* replayed=56$' && ok || bad "epoch 1: $out"
echo "$out" | grep -q '^epoch=2/2 .* replayed=64$' && ok || bad "epoch 2: $out"
echo "$out" | grep -q "^# replay: 16 samples (of 128 seen) saved to $tmp/r.replay" \
  && ok || bad "saved: $out"

# the file: header, and each sample one of the data set's
python3 - "$tmp" <<'PY' && ok || bad "file contents"
import struct, sys, zlib
d = sys.argv[1]
b = open(d + "/r.replay", "rb").read()
assert b[:8] == b"TTREPLAY", b[:8]
ver, t, seen, count, zero = struct.unpack("<IIQII", b[8:32])
assert (ver, t, seen, count, zero) == (1, 2, 128, 16, 0), (ver, t, seen, count)
sizes = struct.unpack("<QQ", b[32:48])
assert sizes == (16, 12), sizes
assert len(b) == 48 + 16 * 28 + 4
assert struct.unpack("<I", b[-4:])[0] == zlib.crc32(b[:-4])
imgs = open(d + "/x.idx", "rb").read()[16:]
labs = open(d + "/y.idx", "rb").read()[8:]
data = {(tuple(imgs[4 * k:4 * k + 4]), labs[k]) for k in range(64)}
kept = set()
for s in range(16):
    x = struct.unpack("<4f", b[48 + 28 * s:48 + 28 * s + 16])
    y = struct.unpack("<3f", b[64 + 28 * s:64 + 28 * s + 12])
    assert sorted(y) == [0, 0, 1], y
    key = (tuple(int(v) for v in x), y.index(1))
    assert key in data, key
    kept.add(key)
# (two epochs offer each sample twice: the buffer may hold one twice)
assert len(kept) > 1, kept
PY

# the same seed keeps the same samples
cp "$tmp/r.replay" "$tmp/first.replay"
rm "$tmp/r.replay"
train --epochs 2 --replay-size 16 --replay-file "$tmp/r.replay" --seed 5 >/dev/null 2>&1
cmp -s "$tmp/r.replay" "$tmp/first.replay" && ok || bad "seed 5 twice differs"

# a second run loads it: every batch 4 + 4 from the start
out=$(train --epochs 1 --replay-size 16 --replay-file "$tmp/r.replay" 2>&1)
echo "$out" | grep -q "^# replay: 16 samples (of 128 seen) from" && ok || bad "load: $out"
echo "$out" | grep -q '^epoch=1/1 .* replayed=64$' && ok || bad "loaded: $out"
echo "$out" | grep -q "(of 192 seen) saved" && ok || bad "seen: $out"

# into a classifier grown since: the labels padded with a zero
out=$("$cli" train "$tmp/grown.ini" --data "$tmp/x.idx" --labels "$tmp/y.idx" \
  --replay-size 16 --replay-file "$tmp/r.replay" 2>&1)
echo "$out" | grep -q '^epoch=1/1 .* replayed=64$' && ok || bad "grown: $out"
python3 - "$tmp" <<'PY' && ok || bad "grown file"
import struct, sys
b = open(sys.argv[1] + "/r.replay", "rb").read()
assert struct.unpack("<QQ", b[32:48]) == (16, 16)
for s in range(16):
    y = struct.unpack("<4f", b[64 + 32 * s:64 + 32 * s + 16])
    assert sorted(y) == [0, 0, 0, 1], y
PY

# --replay-per-batch 0: no replay, the buffer filled all the same
out=$(train --epochs 1 --replay-size 16 --replay-per-batch 0 2>&1)
echo "$out" | grep -q '^epoch=1/1 .* replayed=0$' && ok || bad "K 0: $out"

expect_fail () {    # expect_fail TEXT COMMAND...: status 1 and TEXT on stderr
  local want=$1; shift
  local err
  err=$("$@" 2>&1 >/dev/null)
  local st=$?
  [ $st -eq 1 ] && grep -qF -- "$want" <<<"$err" && ok || bad "$* -> $st: $err"
}
expect_fail "--replay-per-batch 8: a batch of 8 holds at least one new sample, so it is 0 to 7" \
  train --replay-size 16 --replay-per-batch 8
expect_fail "--replay-per-batch 4 is over --replay-size 2" train --replay-size 2
expect_fail "--replay-file and --replay-per-batch need --replay-size M" \
  train --replay-file "$tmp/r.replay"
expect_fail "--replay-size 1000000 needs 32000052 bytes beside the memory pool's" \
  train --replay-size 1000000 --memory-limit 1M
expect_fail "apply to train" "$cli" eval "$tmp/cls.ini" --weights "$tmp/x.bin" \
  --data "$tmp/x.idx" --labels "$tmp/y.idx" --replay-size 4

echo "cli_replay: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
