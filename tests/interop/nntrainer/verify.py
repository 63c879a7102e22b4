#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Re-derives some recordings from first principles, in plain Python (no
numpy), to show what they mean (FINDINGS.md):

- input normalization: min and max over the whole batch;
- input standardization: per sample, divided by ||x - mean|| / N;
- branch3_fc: the BIN holds the parallel branches in the order c, b, a;
- mlp_sgd: 8 SGD steps (MSE derivative 2 (y - t) / (batch * outputs))
  from init.bin on the recorded data give trained.bin;
- mlp_adam: 8 Adam steps (softmax cross entropy, derivative (p - t) / batch,
  lr_t = lr sqrt(1 - b2^t) / (1 - b1^t), eps outside the sqrt) give
  trained.bin, and savepath.bin holds m then v of each weight in BIN order.

Run by hand: python3 verify.py [RECORDINGS_DIR]. Not part of CI.
"""
import math
import os
import struct
import sys

D = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "recordings")


def f32(name, start=0, end=None):
    with open(os.path.join(D, name), "rb") as f:
        data = f.read()[start:end]
    return list(struct.unpack("<%df" % (len(data) // 4), data))


def rows(v, n):
    return [v[i * n:(i + 1) * n] for i in range(len(v) // n)]


def fc(x, w, b, nin, nout):
    """fully_connected, weight stored [in][out]"""
    return [sum(x[i] * w[i * nout + j] for i in range(nin)) + b[j]
            for j in range(nout)]


def softmax(z):
    m = max(z)
    e = [math.exp(t - m) for t in z]
    s = sum(e)
    return [t / s for t in e]


def maxdiff(a, b):
    return max(abs(p - q) for p, q in zip(a, b))


results = []


def check(what, err, tol):
    results.append((what, err, err <= tol))
    print("%-68s %.2e %s" % (what, err, "ok" if err <= tol else "FAIL"))


def normalization():
    b = f32("input_normalization.init.bin")
    w, bias = b[:72], b[72:76]
    x = rows(f32("input_normalization.input.f32"), 18)
    for n in (4, 1):
        y = rows(f32("input_normalization.init.out.b%d.f32" % n), 4)
        lo = min(min(r) for r in x[:n])
        hi = max(max(r) for r in x[:n])
        err = max(maxdiff(softmax(fc([(t - lo) / (hi - lo) for t in r],
                                     w, bias, 18, 4)), o)
                  for r, o in zip(x[:n], y))
        check("normalization, batch %d, min/max over the batch" % n, err, 1e-6)


def standardization():
    b = f32("input_standardization.init.bin")
    w, bias = b[:36], b[36:39]
    x = rows(f32("input_standardization.input.f32"), 12)
    for n in (4, 1):
        y = rows(f32("input_standardization.init.out.b%d.f32" % n), 3)
        err = 0.0
        for r, o in zip(x[:n], y):
            m = sum(r) / 12
            c = [t - m for t in r]
            s = math.sqrt(sum(t * t for t in c)) / 12
            err = max(err, maxdiff(softmax(fc([t / s for t in c], w, bias,
                                              12, 3)), o))
        check("standardization, batch %d, / (||x - mean|| / N)" % n, err,
              1e-6)


def branch3():
    for tag, n in (("init", 4), ("init", 1), ("trained", 4)):
        b = f32("branch3_fc.%s.bin" % tag)
        x = rows(f32("branch3_fc.input.f32"), 6)[:n]
        y = rows(f32("branch3_fc.%s.out.b%d.f32" % (tag, n)), 3)
        p, o = {}, 0
        for name in "cba":              # the BIN order
            p[name] = (b[o:o + 24], b[o + 24:o + 28])
            o += 28
        wo, bo = b[o:o + 36], b[o + 36:o + 39]
        err = 0.0
        for r, out in zip(x, y):
            h = sum((fc(r, p[k][0], p[k][1], 6, 4) for k in "abc"), [])
            err = max(err, maxdiff(softmax(fc(h, wo, bo, 12, 3)), out))
        check("branch3_fc %s batch %d, BIN read as c, b, a, out" % (tag, n),
              err, 1e-6)


def mlp_sgd():
    b = f32("mlp_sgd.init.bin")
    w1, b1, w2, b2 = b[:80], b[80:88], b[88:112], b[112:115]
    x = rows(f32("mlp_sgd.train.in.f32"), 10)
    lab = rows(f32("mlp_sgd.train.label.f32"), 3)
    lr = 0.1
    for _ in range(2):
        for bt in range(4):
            g = [[0.0] * 80, [0.0] * 8, [0.0] * 24, [0.0] * 3]
            for xi, li in zip(x[bt * 4:bt * 4 + 4], lab[bt * 4:bt * 4 + 4]):
                h = [1 / (1 + math.exp(-t)) for t in fc(xi, w1, b1, 10, 8)]
                y = fc(h, w2, b2, 8, 3)
                dy = [2 * (y[j] - li[j]) / (4 * 3) for j in range(3)]
                for i in range(8):
                    for j in range(3):
                        g[2][i * 3 + j] += h[i] * dy[j]
                for j in range(3):
                    g[3][j] += dy[j]
                dz = [sum(w2[i * 3 + j] * dy[j] for j in range(3)) *
                      h[i] * (1 - h[i]) for i in range(8)]
                for i in range(10):
                    for j in range(8):
                        g[0][i * 8 + j] += xi[i] * dz[j]
                for j in range(8):
                    g[1][j] += dz[j]
            w1 = [w - lr * d for w, d in zip(w1, g[0])]
            b1 = [w - lr * d for w, d in zip(b1, g[1])]
            w2 = [w - lr * d for w, d in zip(w2, g[2])]
            b2 = [w - lr * d for w, d in zip(b2, g[3])]
    check("mlp_sgd: 8 SGD steps from init.bin against trained.bin",
          maxdiff(w1 + b1 + w2 + b2, f32("mlp_sgd.trained.bin")[:115]), 1e-6)


def mlp_adam():
    b = f32("mlp_adam.init.bin")
    p = [b[:192], b[192:208], b[208:288], b[288:293]]
    x = rows(f32("mlp_adam.train.in.f32"), 12)
    lab = rows(f32("mlp_adam.train.label.f32"), 5)
    lr, beta1, beta2, eps = 0.01, 0.9, 0.999, 1e-7
    m = [[0.0] * len(t) for t in p]
    v = [[0.0] * len(t) for t in p]
    it = 0
    for _ in range(2):
        for bt in range(4):
            w1, b1, w2, b2 = p
            g = [[0.0] * len(t) for t in p]
            for xi, li in zip(x[bt * 4:bt * 4 + 4], lab[bt * 4:bt * 4 + 4]):
                z = fc(xi, w1, b1, 12, 16)
                h = [max(0.0, t) for t in z]
                prob = softmax(fc(h, w2, b2, 16, 5))
                dy = [(prob[j] - li[j]) / 4 for j in range(5)]
                for i in range(16):
                    for j in range(5):
                        g[2][i * 5 + j] += h[i] * dy[j]
                for j in range(5):
                    g[3][j] += dy[j]
                dz = [sum(w2[i * 5 + j] * dy[j] for j in range(5)) *
                      (1.0 if z[i] > 0 else 0.0) for i in range(16)]
                for i in range(12):
                    for j in range(16):
                        g[0][i * 16 + j] += xi[i] * dz[j]
                for j in range(16):
                    g[1][j] += dz[j]
            a = lr * math.sqrt(1 - beta2 ** (it + 1)) / (1 - beta1 ** (it + 1))
            for k in range(4):
                for q in range(len(p[k])):
                    d = g[k][q]
                    m[k][q] = beta1 * m[k][q] + (1 - beta1) * d
                    v[k][q] = beta2 * v[k][q] + (1 - beta2) * d * d
                    p[k][q] -= a * m[k][q] / (math.sqrt(v[k][q]) + eps)
            it += 1
    check("mlp_adam: 8 Adam steps from init.bin against trained.bin",
          maxdiff(sum(p, []), f32("mlp_adam.trained.bin")[:293]), 5e-6)
    with open(os.path.join(D, "mlp_adam.savepath.bin"), "rb") as f:
        sp = f.read()
    ok = sp[1172:1176] == b"adam" and struct.unpack("<2I", sp[-8:]) == (2, 8)
    check("mlp_adam: savepath.bin = weights, 'adam', counters 2, 8",
          0.0 if ok else 1.0, 0.0)
    moments = sum((m[k] + v[k] for k in range(4)), [])
    check("mlp_adam: savepath.bin moments = m, v of each weight in BIN order",
          maxdiff(moments, f32("mlp_adam.savepath.bin", 1176, -8)), 1e-6)


normalization()
standardization()
branch3()
mlp_sgd()
mlp_adam()
failed = sum(1 for r in results if not r[2])
print("%d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed else 0)
