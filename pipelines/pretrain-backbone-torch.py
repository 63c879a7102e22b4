#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Personalization's backbone from PyTorch: a transformer classifier trained
in PyTorch on Fashion-MNIST's classes 0 to 4 (as pretrain-backbone.sh
trains the zoo's with this engine), exported with torch.onnx.export,
brought in with `tensor-trainer import` and evaluated with
`tensor-trainer eval --per-class` on the test images of classes 0-4; the
two accuracies printed side by side must agree (within 0.5 %).

The model is the zoo transformer's class in the form the importer covers
(docs/onnx.md, transformer encoders): the image's 28 rows as 28 tokens of
28 pixels, a Linear input projection to 64, two post-norm
nn.TransformerEncoderLayer (4 heads, feed-forward 128, GELU, dropout 0),
the mean over the tokens and a Linear classifier of 10. It differs from
tests/models/zoo_transformer.ini in its tokens (rows, not 7x7 patches from
a convolution) and has no positional encoding: the importer maps neither
the convolution-to-tokens transpose nor a constant added to activations.
The pixels are scaled by 1/255 in PyTorch; the export folds that into the
input projection, so the imported model takes the IDX file's bytes as
they are.

Usage: pipelines/pretrain-backbone-torch.py [EPOCHS]    (default 3)
Env: OUT (./personalize-out), QUICK=1 (1 epoch of 40 images of each
  class, 200 test images), TT_BUILD_DIR (the build folder with
  tools/tensor-trainer; default build/).
Writes OUT/torch-backbone.onnx, OUT/torch-backbone.ini and .bin.
Ends with "final: torch_accuracy=A tensor_trainer_accuracy=B classes=0-4
  test_images=N" (or "skipped: torch not available ..." without torch).
"""
import gzip
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
except ImportError as e:
    print("skipped: torch not available in %s (%s)" % (sys.executable, e))
    sys.exit(0)

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "/usr/share/datasets/fashion-mnist"


def idx(path):
    with gzip.open(path) as f:
        raw = f.read()
    ndims = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big")
            for i in range(ndims)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndims).reshape(dims)


def pick(images, labels, per):
    """classes 0-4, the first `per` of each in file order (0: all), as
    tensor_datasrc classes=0-4 per-class=per"""
    keep, taken = [], [0] * 10
    for i, c in enumerate(labels):
        if c <= 4 and (per == 0 or taken[c] < per):
            taken[c] += 1
            keep.append(i)
    return images[keep], labels[keep]


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(28, 64)
        self.enc = nn.ModuleList([nn.TransformerEncoderLayer(
            64, 4, 128, 0.0, activation="gelu", batch_first=True)
            for _ in range(2)])
        self.classifier = nn.Linear(64, 10)

    def forward(self, x):
        t = self.embed(x)
        for layer in self.enc:
            t = layer(t)
        return self.classifier(t.mean(dim=1))


def main():
    quick = os.environ.get("QUICK") == "1"
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else (1 if quick else 3)
    out = os.environ.get("OUT", "personalize-out")
    build = os.environ.get("TT_BUILD_DIR", os.path.join(TOP, "build"))
    tt = os.path.join(build, "tools", "tensor-trainer")
    if not os.access(tt, os.X_OK):
        sys.exit("error: no %s: build the project (scripts/build.sh) or set "
                 "TT_BUILD_DIR" % tt)
    os.makedirs(out, exist_ok=True)
    per = 40 if quick else 0
    xs, ys = pick(idx(DATA + "/train-images-idx3-ubyte.gz"),
                  idx(DATA + "/train-labels-idx1-ubyte.gz"), per)
    ntest = 200 if quick else 10000
    tx = idx(DATA + "/t10k-images-idx3-ubyte.gz")[:ntest]
    tl = idx(DATA + "/t10k-labels-idx1-ubyte.gz")[:ntest]

    torch.manual_seed(1)
    torch.set_num_threads(1)
    model = Backbone()
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    x = torch.from_numpy(xs.astype(np.float32) / 255)
    y = torch.from_numpy(ys.astype(np.int64))
    print("# PyTorch: training on classes 0-4: %d images, %d epoch(s)"
          % (len(x), epochs), flush=True)
    for e in range(epochs):
        model.train()
        order = torch.randperm(len(x))
        total, correct = 0.0, 0
        for at in range(0, len(x), 32):
            b = order[at:at + 32]
            logits = model(x[b])
            loss = nn.functional.cross_entropy(logits, y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(b)
            correct += (logits.argmax(1) == y[b]).sum().item()
        print("epoch=%d/%d loss=%.6f accuracy=%.4f" % (
            e + 1, epochs, total / len(x), correct / len(x)), flush=True)

    model.eval()
    old = tl <= 4
    with torch.no_grad():
        pred = model(torch.from_numpy(tx[old].astype(np.float32) / 255))
    torch_acc = (pred.argmax(1).numpy() == tl[old]).mean()
    # the 1/255 into the input projection: the import takes raw bytes
    with torch.no_grad():
        model.embed.weight /= 255
    onnx_path = os.path.join(out, "torch-backbone.onnx")
    torch.onnx.export(model, torch.zeros(32, 28, 28), onnx_path,
                      opset_version=17, input_names=["image"],
                      output_names=["logits"])
    ini = os.path.join(out, "torch-backbone.ini")
    subprocess.run([tt, "import", onnx_path, "-o", ini, "--optimizer",
                    "adam"], check=True)
    ev = subprocess.run([tt, "eval", ini, "--weights", ini[:-4] + ".bin",
                         "--data", DATA + "/t10k-images-idx3-ubyte.gz",
                         "--labels", DATA + "/t10k-labels-idx1-ubyte.gz",
                         "--samples", str(ntest), "--per-class"],
                        check=True, capture_output=True, text=True).stdout
    n = ok = 0
    for line in ev.splitlines():
        if line.startswith("class="):
            f = dict(kv.split("=") for kv in line.split())
            if int(f["class"]) <= 4:
                n += int(f["samples"])
                ok += int(f["correct"])
    tt_acc = ok / n
    print("final: torch_accuracy=%.4f tensor_trainer_accuracy=%.4f "
          "classes=0-4 test_images=%d" % (torch_acc, tt_acc, n))
    if abs(torch_acc - tt_acc) > 0.005:
        sys.exit("error: the imported model's accuracy differs from "
                 "PyTorch's by more than 0.5 %")


if __name__ == "__main__":
    main()
