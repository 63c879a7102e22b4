#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The data path of MobileNetV2's accuracy bench (docs/precision.md,
# "Accuracy"): tests/bench/fmnist_rgb96.py turns gzipped 28x28 IDX images
# into 3x96x96 ones: the header's shape, the three channels equal, the
# labels kept, the upscale PyTorch's bilinear one (F.interpolate,
# align_corners=False) within one grey level when torch is there; the CLI
# trains the zoo's MobileNetV2 on them; a bad COUNT is refused. Skipped
# (77) without /usr/bin/python3 and numpy.
#
# usage: test_fmnist_rgb96.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
py=/usr/bin/python3
"$py" -c 'import numpy' 2> /dev/null || { echo "no numpy: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/tt-fmnist-rgb96-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")
conv=$src/tests/bench/fmnist_rgb96.py
random_mnist_idx "$tmp" 24
gzip "$tmp/images.idx" "$tmp/labels.idx"

"$py" "$conv" "$tmp/images.idx.gz" "$tmp/labels.idx.gz" 16 "$tmp/rgb" \
  2> "$tmp/conv.err"
check "converts" test $? -eq 0
check "no temporary file left" sh -c "! ls '$tmp' | grep -q '\\.tmp$'"
check "the images, the labels and the upscale" "$py" - "$tmp" <<'PY'
import gzip, struct, sys
import numpy as np
tmp = sys.argv[1]
raw = open(tmp + "/rgb-images.idx", "rb").read()
assert struct.unpack(">I", raw[:4])[0] == 0x0804, "magic: uint8, 4 dims"
assert struct.unpack(">4I", raw[4:20]) == (16, 3, 96, 96), "shape"
big = np.frombuffer(raw[20:], np.uint8)
assert big.size == 16 * 3 * 96 * 96, "size"
big = big.reshape(16, 3, 96, 96)
assert (big[:, 0] == big[:, 1]).all() and (big[:, 0] == big[:, 2]).all()
src = np.frombuffer(gzip.open(tmp + "/images.idx.gz").read()[16:],
                    np.uint8)[:16 * 784].reshape(16, 1, 28, 28)
lab = open(tmp + "/rgb-labels.idx", "rb").read()
assert struct.unpack(">2I", lab[:8]) == (0x0801, 16), "labels header"
assert lab[8:] == gzip.open(tmp + "/labels.idx.gz").read()[8:24], "labels"
# the corners of a bilinear upscale with clamped edges are the source's
assert (big[:, 0, 0, 0] == src[:, 0, 0, 0]).all()
assert (big[:, 0, 95, 95] == src[:, 0, 27, 27]).all()
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(0)
ref = F.interpolate(torch.tensor(src, dtype=torch.float32), size=(96, 96),
                    mode="bilinear", align_corners=False)
ref = ref.round().clamp(0, 255).numpy()[:, 0]
diff = np.abs(ref - big[:, 0].astype(np.float32)).max()
assert diff <= 1, "differs from torch's bilinear upscale by %g" % diff
PY

model=$src/tests/models/zoo_mobilenet_v2.ini
"$cli" train "$model" --data "$tmp/rgb-images.idx" \
  --labels "$tmp/rgb-labels.idx" --valid-data "$tmp/rgb-images.idx" \
  --valid-labels "$tmp/rgb-labels.idx" --epochs 1 --seed 1 \
  --precision bf16 > "$tmp/train.txt" 2> "$tmp/train.err"
check "MobileNetV2 trains on them" test $? -eq 0
check "an epoch with a validation accuracy" grep -Eq \
  '^epoch=1/1 loss=[0-9.]+ .*val_accuracy=[0-9.]+ ' "$tmp/train.txt"

check "a bad COUNT is refused" sh -c "! '$py' '$conv' '$tmp/images.idx.gz' \
  '$tmp/labels.idx.gz' 0 '$tmp/bad' 2> '$tmp/bad.err'"
check "naming COUNT" grep -q "COUNT must be a positive integer, not 0" \
  "$tmp/bad.err"
check "more than the file holds is refused" sh -c "! '$py' '$conv' \
  '$tmp/images.idx.gz' '$tmp/labels.idx.gz' 25 '$tmp/bad' 2> '$tmp/bad.err'"
check "saying how many it holds" grep -q \
  "COUNT 25 but the file holds only 24 samples" "$tmp/bad.err"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
