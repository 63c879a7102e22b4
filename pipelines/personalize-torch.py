#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The jobs of pipelines/personalize.sh in PyTorch, for their peak memory:
per method, a fresh process builds the zoo transformer's architecture
(tests/models/zoo_transformer.ini: a 7x7 convolution of stride 7 from 1
to 64 channels as patch embedding, the 16 patches as tokens, sinusoidal
positional encoding as nntrainer computes it, two post-norm
nn.TransformerEncoderLayer of 4 heads, feed-forward 128, GELU, dropout 0,
the mean over the tokens, a Linear of 10), trains it on the same images
(SHOTS first training images of each of classes 5 to 9, in file order, as
tensor_datasrc classes=5-9 per-class=SHOTS), with the same epochs, batch,
Adam learning rate and method, and prints the process's peak RSS
(getrusage(RUSAGE_SELF).ru_maxrss, KiB on Linux) and its seconds.

Methods, as personalize.sh's (requires_grad=False outside the part that
trains; the optimizer gets only what trains):
  everything  every parameter
  last1       the classifier
  biases      the biases of the convolution and the dense layers and the
              layer norms' weight and bias (the attention's projection
              biases stay frozen, as under tensor_trainer train=biases)
  lora        low-rank adapters by hand (y = x W + b + alpha/r (x A) B,
              A zeros) on the dense layers of LORA_LAYERS; they and the
              classifier train (personalize.sh's
              train=layers:LORA_LAYERS,classifier)
  replay      REPLAY_TRAIN (everything or last:1, as tensor_trainer's
              train); each batch mixes REPLAY_PER_BATCH samples drawn
              from a buffer of REPLAY_SIZE old-class images (the first
              REPLAY_SIZE/5 training images of each of classes 0-4)
  scratch     everything (its weights start fresh in personalize.sh; here
              every method starts from a fresh initialization: the
              weights' values do not change the memory)

The images are read from the IDX files in chunks (the 47 MB of training
images are never in memory at once), as tensor_datasrc streams them.
Nothing is evaluated: the accuracies are personalize.sh's.

Usage: pipelines/personalize-torch.py [SHOTS]    (default 20)
Env (personalize.sh's defaults): EPOCHS (15), LR (0.003), BATCH (32),
  METHODS (everything last1 biases lora replay scratch), REPLAY_SIZE
  (500), REPLAY_PER_BATCH (24), REPLAY_TRAIN (last:1), LORA_RANK (16),
  LORA_ALPHA (32), LORA_LAYERS (enc2_ff1,enc2_ff2: names of
  zoo_transformer.ini's dense layers), THREADS (1), QUICK=1 (SHOTS 4, 1
  epoch).
Prints one line a method (import_rss_kb: the process's RSS once torch is
imported, before the model exists; seconds: from then to the end):
  torch: method=M shots=K peak_rss_kb=R import_rss_kb=I seconds=S
(or "skipped: torch not available ..." without torch).
"""
import gzip
import importlib.util
import math
import os
import resource
import subprocess
import sys
import time

DATA = "/usr/share/datasets/fashion-mnist"
METHODS = ("everything", "last1", "biases", "lora", "replay", "scratch")
DENSE = ("enc1_ff1", "enc1_ff2", "enc2_ff1", "enc2_ff2", "classifier")


def env_int(name, default, low):
    raw = os.environ.get(name, str(default))
    try:
        v = int(raw)
    except ValueError:
        v = low - 1
    if v < low:
        sys.exit("error: %s must be an integer >= %d, not '%s'"
                 % (name, low, raw))
    return v


def env_float(name, default):
    raw = os.environ.get(name, str(default))
    try:
        v = float(raw)
    except ValueError:
        v = -1.0
    if not v > 0 or math.isinf(v):
        sys.exit("error: %s must be a positive number, not '%s'"
                 % (name, raw))
    return v


def pick(lo, hi, per):
    """indices of the first `per` training images of each class lo..hi"""
    with gzip.open(DATA + "/train-labels-idx1-ubyte.gz") as f:
        labels = f.read()[8:]
    taken, keep = {}, []
    for i, c in enumerate(labels):
        if lo <= c <= hi and taken.get(c, 0) < per:
            taken[c] = taken.get(c, 0) + 1
            keep.append((i, c))
    return keep


def images(keep):
    """the images of `keep` (index, label), read 1000 at a time"""
    import numpy as np
    want = dict(keep)
    out, labels = [], []
    with gzip.open(DATA + "/train-images-idx3-ubyte.gz") as f:
        f.read(16)
        at = 0
        last = max(want) if want else -1
        while at <= last:
            chunk = f.read(784 * 1000)
            n = len(chunk) // 784
            if n == 0:
                break
            for j in range(n):
                if at + j in want:
                    out.append(np.frombuffer(chunk[784 * j:784 * (j + 1)],
                                             np.uint8).copy())
                    labels.append(want[at + j])
            at += n
    return np.stack(out), np.array(labels)


def one(method, shots):
    try:
        import torch
        import torch.nn as nn
    except ImportError as e:
        print("skipped: torch not available in %s (%s)" % (sys.executable, e))
        return
    quick = os.environ.get("QUICK") == "1"
    epochs = env_int("EPOCHS", 1 if quick else 15, 1)
    lr = env_float("LR", 0.003)
    batch = env_int("BATCH", 32, 1)
    replay_size = env_int("REPLAY_SIZE", 500, 5)
    replay_k = env_int("REPLAY_PER_BATCH", 24, 0)
    rank = env_int("LORA_RANK", 16, 1)
    alpha = env_float("LORA_ALPHA", 32)
    lora_layers = os.environ.get("LORA_LAYERS",
                                 "enc2_ff1,enc2_ff2").split(",")
    replay_train = os.environ.get("REPLAY_TRAIN", "last:1")
    if replay_train not in ("everything", "last:1"):
        sys.exit("error: REPLAY_TRAIN must be everything or last:1, not '%s'"
                 % replay_train)
    for name in lora_layers:
        if name not in DENSE:
            sys.exit("error: LORA_LAYERS: no dense layer '%s': use %s"
                     % (name, ", ".join(DENSE)))
    if method == "replay" and replay_k >= batch:
        sys.exit("error: REPLAY_PER_BATCH=%d: a batch of %d holds at least "
                 "one new sample" % (replay_k, batch))
    with open("/proc/self/statm") as f:
        base_kb = int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    torch.manual_seed(1)
    torch.set_num_threads(env_int("THREADS", 1, 1))
    start = time.monotonic()

    class LoRA(nn.Module):
        def __init__(self, base):
            super().__init__()
            self.base = base
            self.a = nn.Parameter(torch.zeros(base.in_features, rank))
            self.b = nn.Parameter(torch.randn(rank, base.out_features) * 0.1)
            self.scale = alpha / rank

        def forward(self, x):
            return self.base(x) + self.scale * ((x @ self.a) @ self.b)

    class Zoo(nn.Module):
        def __init__(self):
            super().__init__()
            self.patches = nn.Conv2d(1, 64, 7, stride=7)
            pe = torch.zeros(16, 64)
            for i in range(16):
                for j in range(64):
                    v = i / 10000.0 ** ((j >> 1 << 1) / 64.0)
                    pe[i, j] = math.cos(v) if j & 1 else math.sin(v)
            self.register_buffer("pe", pe)
            self.enc = nn.ModuleList([nn.TransformerEncoderLayer(
                64, 4, 128, 0.0, activation="gelu", batch_first=True)
                for _ in range(2)])
            self.classifier = nn.Linear(64, 10)

        def forward(self, x):
            t = self.patches(x).flatten(2).transpose(1, 2) + self.pe
            for layer in self.enc:
                t = layer(t)
            return self.classifier(t.mean(dim=1))

    model = Zoo()
    dense = {"enc1_ff1": (model.enc[0], "linear1"),
             "enc1_ff2": (model.enc[0], "linear2"),
             "enc2_ff1": (model.enc[1], "linear1"),
             "enc2_ff2": (model.enc[1], "linear2"),
             "classifier": (model, "classifier")}
    for p in model.parameters():
        p.requires_grad = method in ("everything", "scratch") or (
            method == "replay" and replay_train == "everything")
    if method == "last1" or method == "lora" or (
            method == "replay" and replay_train == "last:1"):
        for p in model.classifier.parameters():
            p.requires_grad = True
    elif method == "biases":
        for name, p in model.named_parameters():
            if "self_attn" not in name and (name.endswith("bias") or
                                            ".norm" in name):
                p.requires_grad = True
    if method == "lora":
        for name in lora_layers:
            owner, attr = dense[name]
            base = getattr(owner, attr)
            for p in base.parameters():
                p.requires_grad = False
            setattr(owner, attr, LoRA(base))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)

    keep = pick(5, 9, shots)
    xs, ys = images(keep)
    x = torch.from_numpy(xs).float().div_(255).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(ys.astype("int64"))
    if method == "replay":
        rx, ry = images(pick(0, 4, replay_size // 5))
        rx = torch.from_numpy(rx).float().div_(255).reshape(-1, 1, 28, 28)
        ry = torch.from_numpy(ry.astype("int64"))
    else:
        replay_k = 0
    new = batch - replay_k
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(x))
        for at in range(0, len(x), new):
            b = order[at:at + new]
            bx, by = x[b], y[b]
            if replay_k:
                r = torch.randperm(len(rx))[:replay_k]
                bx, by = torch.cat([bx, rx[r]]), torch.cat([by, ry[r]])
            loss = nn.functional.cross_entropy(model(bx), by)
            opt.zero_grad()
            loss.backward()
            opt.step()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("torch: method=%s shots=%d peak_rss_kb=%d import_rss_kb=%d "
          "seconds=%.2f" % (method, shots, rss, base_kb,
                            time.monotonic() - start), flush=True)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        method, shots = sys.argv[2].split(":")
        one(method, int(shots))
        return
    if importlib.util.find_spec("torch") is None:
        print("skipped: torch not available in %s (no module named 'torch')"
              % sys.executable)
        return
    quick = os.environ.get("QUICK") == "1"
    shots = sys.argv[1] if len(sys.argv) > 1 else ("4" if quick else "20")
    if not shots.isdigit() or int(shots) == 0:
        sys.exit("error: SHOTS must be a positive integer, not '%s'" % shots)
    methods = os.environ.get("METHODS", " ".join(METHODS)).split()
    for m in methods:
        if m not in METHODS:
            sys.exit("error: unknown method '%s' in METHODS: use %s"
                     % (m, ", ".join(METHODS)))
    for m in methods:
        # a fresh process each: ru_maxrss is the process's peak
        r = subprocess.run([sys.executable, os.path.abspath(__file__),
                            "--one", "%s:%s" % (m, shots)])
        if r.returncode != 0:
            sys.exit("error: %s: the PyTorch run failed (%d)"
                     % (m, r.returncode))


if __name__ == "__main__":
    main()
