#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks an aggregator's archive (tensor-trainer aggregate --archive DIR)
without the project's federation code: each message's envelope is read
here (ext/federation/tt_fed.h's layout), its bundle unpacked by
`tensor-trainer unpack` into a BIN whose first floats are the weights.

  check_rounds.py TENSOR_TRAINER DIR ROUNDS CLIENTS [MODEL.ttb...]

For every round 1..ROUNDS: CLIENTS updates of that round were kept, and the
global model equals, bit for bit, sum(samples_i * w_i) / sum(samples_i)
computed in double in the order of the client ids and rounded to float32;
its sample count is their sum. Every MODEL.ttb given (the aggregator's
--save, the devices' saved models) holds the last global model's weights.
"""
import glob
import os
import struct
import subprocess
import sys
import tempfile
from array import array


def envelope(data, path):
    if len(data) < 128 or data[:8] != b"TTFEDMSG":
        sys.exit(f"{path}: not a federation message")
    kind, rnd, samples, _sig, n, blen = struct.unpack_from("<IIQQQQ", data, 16)
    cid = data[56:120].rstrip(b"\0").decode()
    if blen != len(data) - 128:
        sys.exit(f"{path}: bundle length {blen}, message {len(data)}")
    return kind, rnd, samples, n, cid


def bundle_weights(tt, bundle_bytes, n, tmp, name):
    ttb = os.path.join(tmp, name + ".ttb")
    with open(ttb, "wb") as f:
        f.write(bundle_bytes)
    return file_weights(tt, ttb, n, tmp, name)


def file_weights(tt, ttb, n, tmp, name):
    out = os.path.join(tmp, name)
    subprocess.run([tt, "unpack", ttb, "-o", out], check=True,
                   stdout=subprocess.DEVNULL)
    w = array("f")
    with open(os.path.join(out, "model.bin"), "rb") as f:
        w.frombytes(f.read(4 * n))
    if sys.byteorder != "little":
        w.byteswap()
    return w


def message(tt, path, tmp):
    with open(path, "rb") as f:
        data = f.read()
    kind, rnd, samples, n, cid = envelope(data, path)
    name = os.path.basename(path).replace(".msg", "")
    return kind, rnd, samples, cid, bundle_weights(tt, data[128:], n, tmp,
                                                   name)


def main():
    tt, folder, rounds, clients = sys.argv[1], sys.argv[2], int(
        sys.argv[3]), int(sys.argv[4])
    models = sys.argv[5:]
    failed = 0
    last = None
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(1, rounds + 1):
            ups = []
            for p in sorted(glob.glob(os.path.join(folder,
                                                   f"update-{r:06d}-*.msg"))):
                kind, rnd, samples, cid, w = message(tt, p, tmp)
                assert kind == 1 and rnd == r, p
                ups.append((cid, samples, w))
            ups.sort(key=lambda u: u[0].encode())
            kind, rnd, gsamples, _cid, g = message(
                tt, os.path.join(folder, f"global-{r:06d}.msg"), tmp)
            total = sum(u[1] for u in ups)
            n = len(g)
            avg = array("f", [0.0]) * n
            for k in range(n):
                s = 0.0
                for _cid, samples, w in ups:
                    s += w[k] * samples
                avg[k] = s / total  # stored as float32: rounded to nearest
            diff = sum(1 for k in range(n) if avg[k] != g[k])
            ok = kind == 2 and rnd == r and len(ups) == clients and \
                gsamples == total and diff == 0
            print(f"round {r}: {len(ups)} updates "
                  f"({', '.join(f'{u[0]}:{u[1]}' for u in ups)}), "
                  f"{total} samples; global: {gsamples} samples, "
                  f"{diff} of {n} weights differ from the weighted average"
                  f" {'ok' if ok else 'FAIL'}")
            failed += not ok
            last = g
        for m in models:
            w = file_weights(tt, m, len(last), tmp,
                             "model-" + os.path.basename(m))
            same = w == last
            print(f"{m}: {'holds' if same else 'FAIL: does not hold'} "
                  f"round {rounds}'s global weights")
            failed += not same
    sys.exit(1 if failed else 0)


main()
