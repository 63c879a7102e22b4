#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fashion-MNIST as 96x96 RGB images, for models that take 3:96:96
(tests/models/zoo_mobilenet_v2.ini; docs/precision.md "Accuracy").

Reads the first COUNT images and labels of a gzipped IDX pair, upscales
each 28x28 image to 96x96 bilinearly (half-pixel centres, the edges
clamped: PyTorch's F.interpolate(mode="bilinear", align_corners=False)),
rounds to uint8, replicates it to 3 identical channels (channel-major,
the engine's C:H:W) and writes OUT-images.idx (uint8, COUNT x 3 x 96 x 96)
and OUT-labels.idx (uint8, COUNT), uncompressed, each written to a
temporary name and renamed. numpy only.

Usage: fmnist_rgb96.py IMAGES.gz LABELS.gz COUNT OUT
"""

import gzip
import os
import struct
import sys

import numpy as np

SIZE = 96
CHANNELS = 3


def read_idx(path, count):
    with gzip.open(path, "rb") as f:
        magic = struct.unpack(">I", f.read(4))[0]
        if magic >> 8 != 0x08:
            sys.exit(f"{path}: not a uint8 IDX file (magic {magic:#x})")
        ndims = magic & 0xFF
        dims = struct.unpack(">" + "I" * ndims, f.read(4 * ndims))
        if count > dims[0]:
            sys.exit(f"{path}: COUNT {count} but the file holds only "
                     f"{dims[0]} samples")
        per = int(np.prod(dims[1:], dtype=np.int64))
        data = np.frombuffer(f.read(count * per), dtype=np.uint8)
    return data.reshape((count,) + tuple(dims[1:]))


def bilinear_weights(src, dst):
    """Source indices and weights of each output row (or column)."""
    x = (np.arange(dst) + 0.5) * (src / dst) - 0.5
    x = np.clip(x, 0, src - 1)
    lo = np.floor(x).astype(np.int64)
    hi = np.minimum(lo + 1, src - 1)
    return lo, hi, (x - lo).astype(np.float32)


def upscale(images):
    n, h, w = images.shape
    y0, y1, wy = bilinear_weights(h, SIZE)
    x0, x1, wx = bilinear_weights(w, SIZE)
    img = images.astype(np.float32)
    rows = img[:, y0, :] * (1 - wy)[None, :, None] + \
        img[:, y1, :] * wy[None, :, None]
    out = rows[:, :, x0] * (1 - wx)[None, None, :] + \
        rows[:, :, x1] * wx[None, None, :]
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def write_idx(path, array):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack(">I", 0x0800 | array.ndim))
        f.write(struct.pack(">" + "I" * array.ndim, *array.shape))
        f.write(np.ascontiguousarray(array).tobytes())
    os.replace(tmp, path)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip().splitlines()[-1])
    images_path, labels_path, count, out = sys.argv[1:]
    try:
        count = int(count)
    except ValueError:
        count = -1
    if count <= 0:
        sys.exit(f"COUNT must be a positive integer, not {sys.argv[3]}")
    images = read_idx(images_path, count)
    labels = read_idx(labels_path, count)
    if images.ndim != 3 or labels.ndim != 1:
        sys.exit(f"{images_path}, {labels_path}: expected N x H x W images "
                 "and N labels")
    big = np.empty((count, CHANNELS, SIZE, SIZE), dtype=np.uint8)
    for at in range(0, count, 1000):  # a thousand at a time: bounded memory
        up = upscale(images[at:at + 1000])
        big[at:at + 1000] = up[:, None, :, :]
    write_idx(out + "-images.idx", big)
    write_idx(out + "-labels.idx", labels)


if __name__ == "__main__":
    main()
