#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyTorch's peak training memory for a choice of what trains.

The PyTorch side of tests/bench/personalize_memory.sh: the model built
from the INI by torch_zoo.IniNet, parameters outside the choice set to
requires_grad = False and left out of Adam, as tensor-trainer's --train:
  everything    all parameters
  biases        every *bias of a convolution or dense layer and the
                weight and bias of batch and layer normalization (the
                attention's projection biases stay frozen, as the engine's)
  last:N        the parameters of the last N INI layers that have any
  layers:A,B    those INI layers' parameters
Peak memory: the process's peak resident set (getrusage ru_maxrss) minus
its resident set just before the first training step (model, optimizer and
data made), after --steps steps on synthetic batches; one choice per
process, since the peak only grows. The last line is machine-readable:
  torch choice=biases peak_train_kb=1234
"""

import argparse
import resource
import sys

import torch
import torch.nn as nn

from torch_zoo import IniNet, Mha


def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def choose(model, choice):
    names = list(model.mods.keys())
    owners = {}
    for name in names:
        for p in model.mods[name].parameters():
            owners.setdefault(id(p), name)
    keep = set()
    if choice == "everything":
        return
    if choice == "biases":
        for mod in model.modules():
            if isinstance(mod, Mha):
                continue
            norm = isinstance(mod, (nn.BatchNorm2d, nn.LayerNorm))
            for pname, p in mod.named_parameters(recurse=False):
                if norm or pname == "bias":
                    keep.add(id(p))
        # an Mha's own submodules' biases stay frozen
        for mod in model.modules():
            if isinstance(mod, Mha):
                for p in mod.parameters():
                    keep.discard(id(p))
    elif choice.startswith("last:"):
        n = int(choice[5:])
        weighted = [x for x in names if any(True for _ in
                                             model.mods[x].parameters())]
        for x in weighted[-n:]:
            keep.update(id(p) for p in model.mods[x].parameters())
    elif choice.startswith("layers:"):
        for x in choice[7:].split(","):
            keep.update(id(p) for p in model.mods[x].parameters())
    else:
        sys.exit(f"unknown choice {choice}")
    for p in model.parameters():
        p.requires_grad_(id(p) in keep)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ini")
    ap.add_argument("--train", default="everything")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = IniNet(args.ini)
    choose(model, args.train)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=model.lr)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.rand((args.batch,) + model.input_shape, generator=g),
                torch.randint(0, model.classes, (args.batch,), generator=g))
               for _ in range(args.steps)]
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    base = rss_kb()
    for xb, yb in batches:
        opt.zero_grad(set_to_none=True)
        loss_fn(model(xb), yb).backward()
        opt.step()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"torch choice={args.train} peak_train_kb={peak - base}")


if __name__ == "__main__":
    main()
