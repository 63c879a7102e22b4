#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyTorch reference timing for the model zoo (tests/models/zoo_*.ini).

The PyTorch side of tests/bench/zoo_speed.sh. The model is built from the
same INI, layer by layer (the layer types the zoo uses: input, conv2d,
depthwiseconv2d, batch_normalization, addition, pooling2d global_average,
flatten, dropout, fully_connected and the activations relu, relu6,
softmax), so both sides train the same network: convolutions with
TensorFlow's "same" padding (the extra pixel of an odd total at the
bottom/right) as the engine pads, batch normalization with the INI's
epsilon and momentum (PyTorch's momentum = 1 - nntrainer's), Adam with
the INI's learning rate. Trained on synthetic float32 samples (uniform
inputs, random classes) made before the clock starts, as
tests/bench/seq_speed.c trains the engine; PyTorch's best setting is
searched on the warm-up batches: foreach Adam or the loop
(torch_fmnist.fastest_adam), channels-last memory format or not.

The last line is machine-readable, e.g.
  torch model=zoo_ds_cnn batch=32 threads=1 samples=2048 epochs=2 \
channels_last=0 foreach=1 seconds=1.234 samples_per_s=1659.3 \
peak_rss_kb=312345
"""

import argparse
import configparser
import copy
import resource
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_fmnist import backends_line, positive, train_epoch

WARMUP_BATCHES = 3


def pair(text):
    v = [int(x) for x in text.split(",")]
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


class SamePad(nn.Module):
    """TensorFlow's "same": output = ceil(input / stride); an odd total
    puts the extra pixel at the bottom/right (F.pad's order: left, right,
    top, bottom)."""

    def __init__(self, kernel, stride):
        super().__init__()
        self.kernel, self.stride = kernel, stride

    def forward(self, x):
        pads = []
        for size, k, s in ((x.shape[3], self.kernel[1], self.stride[1]),
                           (x.shape[2], self.kernel[0], self.stride[0])):
            out = -(-size // s)
            total = max((out - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
        return F.pad(x, pads) if any(pads) else x


class Act(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.fn = {"relu": F.relu, "relu6": F.relu6}[name]

    def forward(self, x):
        return self.fn(x)


class IniNet(nn.Module):
    """The INI's layers in file order; input_layers name the producers, a
    layer without them reads the previous one. A final softmax is left to
    the loss (CrossEntropyLoss applies log-softmax, as the engine fuses
    softmax with its cross loss)."""

    def __init__(self, path):
        super().__init__()
        ini = configparser.ConfigParser()
        ini.read(path)
        self.lr = float(ini["Optimizer"].get("learning_rate", "0.001"))
        self.steps = []            # (output name, module name, input names)
        self.mods = nn.ModuleDict()
        shapes = {}
        prev = None
        for name in ini.sections():
            if name in ("Model", "Optimizer"):
                continue
            s = ini[name]
            t = s["type"]
            ins = [x.strip() for x in s["input_layers"].split(",")] \
                if "input_layers" in s else ([prev] if prev else [])
            if t == "input":
                self.input_name = name
                shapes[name] = tuple(int(x) for x in s["input_shape"].split(":"))
                prev = name
                continue
            c, h, w = shapes[ins[0]]
            if t in ("conv2d", "depthwiseconv2d"):
                f = int(s["filters"])
                k = pair(s["kernel_size"])
                st = pair(s.get("stride", "1"))
                groups = c if t == "depthwiseconv2d" else int(s.get("groups", "1"))
                layers = []
                pad = s.get("padding", "valid")
                if pad == "same":
                    layers.append(SamePad(k, st))
                    ho, wo = -(-h // st[0]), -(-w // st[1])
                else:
                    p = 0 if pad == "valid" else int(pad)
                    ho = (h + 2 * p - k[0]) // st[0] + 1
                    wo = (w + 2 * p - k[1]) // st[1] + 1
                    if p:
                        layers.append(nn.ZeroPad2d(p))
                conv = nn.Conv2d(c, f, k, st, groups=groups,
                                 bias=s.get("disable_bias", "false") != "true")
                layers.append(conv)
                mod = nn.Sequential(*layers)
                out = (f, ho, wo)
            elif t == "batch_normalization":
                mod = nn.BatchNorm2d(c, eps=float(s.get("epsilon", "0.001")),
                                     momentum=1 - float(s.get("momentum", "0.99")))
                if h == 1 and c == 1:
                    mod = nn.BatchNorm1d(w, eps=mod.eps, momentum=mod.momentum)
                out = (c, h, w)
            elif t == "addition":
                mod = None
                out = (c, h, w)
            elif t == "pooling2d":
                assert s["pooling"] == "global_average", path
                mod = nn.AdaptiveAvgPool2d(1)
                out = (c, 1, 1)
            elif t == "flatten":
                mod = nn.Flatten()
                out = (1, 1, c * h * w)
            elif t == "dropout":
                mod = nn.Dropout(float(s["dropout_rate"]))
                out = (c, h, w)
            elif t == "fully_connected":
                mod = nn.Linear(w, int(s["unit"]))
                out = (c, h, int(s["unit"]))
            else:
                raise SystemExit(f"{path}: [{name}] type {t}: not in the zoo")
            if mod is not None:
                self.mods[name] = mod
            self.steps.append((name, name if mod is not None else None, ins))
            act = s.get("activation", "none")
            if act not in ("none", "softmax"):
                # the layer's name then means its activation's output, as
                # input_layers read it
                self.mods[name + "_act"] = Act(act)
                self.steps.append((name, name + "_act", [name]))
            shapes[name] = out
            prev = name
        self.output = prev
        self.input_shape = shapes[self.input_name]
        self.classes = shapes[prev][2]

    def forward(self, x):
        values = {self.input_name: x}
        for name, mod_name, ins in self.steps:
            if mod_name is None:
                y = values[ins[0]]
                for other in ins[1:]:
                    y = y + values[other]
            else:
                y = values[ins[0]]
                mod = self.mods[mod_name]
                if isinstance(mod, (nn.BatchNorm1d, nn.Linear)) and y.dim() > 2:
                    y = y.flatten(1)
                y = mod(y)
            values[name] = y
        return values[self.output]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ini")
    ap.add_argument("--batch", type=positive, required=True)
    ap.add_argument("--threads", type=positive, required=True)
    ap.add_argument("--samples", type=positive, default=1024)
    ap.add_argument("--epochs", type=positive, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = IniNet(args.ini)
    n = args.samples // args.batch
    g = torch.Generator().manual_seed(1)
    batches = [(torch.rand((args.batch,) + model.input_shape, generator=g),
                torch.randint(0, model.classes, (args.batch,), generator=g))
               for _ in range(n)]
    loss_fn = nn.CrossEntropyLoss()
    print(backends_line())

    def make(m, foreach):
        return torch.optim.Adam(m.parameters(), lr=model.lr, foreach=foreach)

    # the best setting, on copies, over the warm-up batches
    best = None
    for channels_last in (False, True):
        for foreach in (False, True):
            trial = copy.deepcopy(model)
            fmt = torch.channels_last if channels_last else torch.contiguous_format
            trial = trial.to(memory_format=fmt)
            warm = [(x.contiguous(memory_format=fmt), y)
                    for x, y in batches[:WARMUP_BATCHES]]
            opt = make(trial, foreach)
            trial.train()
            train_epoch(trial, opt, loss_fn, warm[:1])
            t0 = time.perf_counter()
            train_epoch(trial, opt, loss_fn, warm)
            seconds = time.perf_counter() - t0
            if best is None or seconds < best[0]:
                best = (seconds, channels_last, foreach)
    _, channels_last, foreach = best
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    batches = [(x.contiguous(memory_format=fmt), y) for x, y in batches]
    model.train()
    opt = make(model, foreach)
    seconds = 0.0
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        train_epoch(model, opt, loss_fn, batches)
        seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    used = n * args.batch
    print(f"torch model={args.ini.rsplit('/', 1)[-1].removesuffix('.ini')} "
          f"batch={args.batch} threads={args.threads} samples={used} "
          f"epochs={args.epochs} channels_last={int(channels_last)} "
          f"foreach={int(foreach)} seconds={seconds:.3f} "
          f"samples_per_s={used / seconds:.1f} peak_rss_kb={peak}")


if __name__ == "__main__":
    main()
