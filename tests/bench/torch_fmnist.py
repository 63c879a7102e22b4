#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyTorch reference timing for the Fashion-MNIST models in tests/models.

Gives the training engine a baseline on the same machine: same data, same
preprocessing, same architectures, optimizer and batching as
tests/models/fmnist_{mlp,cnn}.ini. Runs with Debian's python3-torch and
numpy only (no torchvision, no pip), so it works on a stock system.
glibc's malloc keeps freed memory between steps (--malloc kept, the
default; keep_freed_memory says why).

The last line is machine-readable, e.g.
  torch model=mlp batch=32 threads=1 samples=60000 epochs=1 seconds=12.345 \
samples_per_s=4860.1 loss=0.4567 accuracy=0.8345
"""

import argparse
import copy
import ctypes
import ctypes.util
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn

DATA_DIR = "/usr/share/datasets/fashion-mnist"
TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
WARMUP_SAMPLES = 2000


# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MALLOC_CHOICES = ("kept", "glibc")


def keep_freed_memory():
    """Makes glibc's malloc keep freed memory for the next training step.

    PyTorch allocates every activation, gradient and workspace of a step
    with malloc and frees it by the next. glibc's defaults serve blocks of
    128 KiB and more (the threshold rises, up to 32 MiB, with the blocks
    freed) with mmap and give freed memory at the top of the heap back to
    the kernel, so a step can start on fresh pages: a page fault each 4 KiB
    written, several times the step's arithmetic for the small CNN
    (docs/benchmarks.md, "PyTorch and glibc's malloc"). PyTorch's CPU
    tuning guide swaps the allocator (jemalloc, tcmalloc) for this; these
    two settings do it with glibc's own: blocks up to 1 GiB from the heap,
    and the heap never trimmed (mallopt takes an int: 2 GiB - 1). Returns
    whether glibc took both."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    if not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)) and \
        bool(libc.mallopt(M_TRIM_THRESHOLD, 2 ** 31 - 1))


def set_malloc(choice):
    """--malloc: "kept" (keep_freed_memory, PyTorch's best here) or
    "glibc" (its defaults, to measure the difference); a line says which
    took effect."""
    kept = choice == "kept" and keep_freed_memory()
    print(f"# malloc={'kept' if kept else 'glibc'}", flush=True)


def read_idx_u8(path):
    """Reads a uint8 IDX file (gzipped) into a numpy array.

    Validated because a silently misparsed file would still train, just
    to a meaningless number."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        sys.exit(f"{path}: not an IDX file (bad magic)")
    if raw[2] != 0x08:
        sys.exit(f"{path}: element type 0x{raw[2]:02x}, expected uint8")
    ndims = raw[3]
    header = 4 + 4 * ndims
    if ndims < 1 or len(raw) < header:
        sys.exit(f"{path}: bad or truncated IDX header")
    dims = struct.unpack(f">{ndims}I", raw[4:header])
    expected = int(np.prod(dims))
    if len(raw) - header != expected:
        sys.exit(f"{path}: header promises {expected} data bytes, "
                 f"file has {len(raw) - header}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load_data(n):
    images = read_idx_u8(os.path.join(DATA_DIR, TRAIN_IMAGES))
    labels = read_idx_u8(os.path.join(DATA_DIR, TRAIN_LABELS))
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        sys.exit("train images/labels: shapes do not match")
    if n > len(images):
        sys.exit(f"--samples {n}: the training set has only {len(images)}")
    x = images[:n].reshape(n, -1).astype(np.float32)
    # Per-sample min-max, what the INI's "normalization = true" input layer
    # does; a constant image would divide by zero, so it maps to all zeros.
    lo = x.min(axis=1, keepdims=True)
    span = x.max(axis=1, keepdims=True) - lo
    span[span == 0] = 1.0
    x = (x - lo) / span
    x = x.reshape(n, 1, images.shape[1], images.shape[2])
    return torch.from_numpy(x), torch.from_numpy(labels[:n].astype(np.int64))


def build_model(name):
    """Architectures and initializers of tests/models/fmnist_*.ini.

    The INI output layers have softmax; here they emit logits because
    CrossEntropyLoss applies log-softmax itself (nntrainer fuses softmax
    with the cross loss the same way). Initializers follow the INI files so
    the loss curves are comparable, not torch's defaults: he_uniform
    (= kaiming_uniform for relu, bound sqrt(6/fan_in)) where given,
    otherwise nntrainer's default xavier_uniform; biases start at zero as
    nntrainer's do."""
    if name == "mlp":
        model = nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 10),
        )
        he = [model[1], model[3]]
    else:
        model = nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, 3), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(64 * 5 * 5, 128), nn.ReLU(),
            nn.Linear(128, 10),
        )
        he = []
    for m in model:
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            if any(m is h for h in he):
                nn.init.kaiming_uniform_(m.weight, nonlinearity="relu")
            else:
                nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def make_optimizer(model, foreach=None):
    return torch.optim.Adam(model.parameters(), lr=0.001,
                            betas=(0.9, 0.999), eps=1e-7, foreach=foreach)


def fastest_adam(model, loss_fn, batches, warmup, make=None):
    """PyTorch's best Adam here: its multi-tensor (foreach) form or the
    per-tensor loop, whichever trains the warm-up batches faster on a copy.
    On PyTorch 1.13's CPU build the default is the loop, and for the MLP
    at batch 32 the foreach form measured 1.2 ms a step against 8 ms, so
    leaving the default would understate PyTorch several times over."""
    b = batches[0][0].shape[0]
    n = max(1, min(warmup, len(batches) * b) // b)
    best, best_seconds = None, None
    for foreach in (False, True):
        trial = copy.deepcopy(model)
        trial.train()
        opt = (make or make_optimizer)(trial, foreach)
        train_epoch(trial, opt, loss_fn, batches[:n])  # allocations primed
        t0 = time.perf_counter()
        train_epoch(trial, opt, loss_fn, batches[:n])
        seconds = time.perf_counter() - t0
        if best_seconds is None or seconds < best_seconds:
            best, best_seconds = foreach, seconds
    return best


def train_epoch(model, opt, loss_fn, batches, outputs=None):
    for xb, yb in batches:
        opt.zero_grad(set_to_none=True)
        logits = model(xb)
        loss = loss_fn(logits, yb)
        loss.backward()
        opt.step()
        # Statistics are computed after the clock stops; only keep the
        # tensors here so the timed loop is just the training step.
        if outputs is not None:
            outputs.append((loss.detach(), logits.detach()))


def timed_training(model, make_opt, loss_fn, batches, epochs, warmup):
    """Trains model for epochs epochs of batches after a warm-up of about
    warmup samples on a copy (allocator and kernel selection primed, the
    timed run still starting from the initial weights, like the engine's
    run of the same INI). Returns per epoch (seconds of its training steps,
    mean loss, correct predictions); statistics are computed after the
    clock stops."""
    b = batches[0][0].shape[0]
    warm_model = copy.deepcopy(model)
    warm_model.train()
    warm_n = max(1, min(warmup, len(batches) * b) // b)
    train_epoch(warm_model, make_opt(warm_model), loss_fn, batches[:warm_n])
    del warm_model

    model.train()
    opt = make_opt(model)
    figures = []
    for _ in range(epochs):
        outputs = []
        t0 = time.perf_counter()
        train_epoch(model, opt, loss_fn, batches, outputs)
        seconds = time.perf_counter() - t0
        with torch.no_grad():
            loss = torch.stack([o[0] for o in outputs]).mean().item()
            correct = sum((o[1].argmax(dim=1) == yb).sum().item()
                          for o, (_, yb) in zip(outputs, batches))
        figures.append((seconds, loss, correct))
    return figures


def backends_line():
    mk = torch.backends.mkldnn
    return ("# torch {} mkldnn={} (available={}) mkl={} openmp={} "
            "threads={} interop_threads={}").format(
        torch.__version__,
        "on" if (mk.is_available() and mk.enabled) else "off",
        "yes" if mk.is_available() else "no",
        "on" if torch.backends.mkl.is_available() else "off",
        "on" if torch.backends.openmp.is_available() else "off",
        torch.get_num_threads(), torch.get_num_interop_threads())


def positive(s):
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{s} is not a positive integer")
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("mlp", "cnn"), required=True)
    ap.add_argument("--batch", type=positive, required=True)
    ap.add_argument("--threads", type=positive, required=True)
    ap.add_argument("--samples", type=positive, default=60000)
    ap.add_argument("--epochs", type=positive, default=1)
    ap.add_argument("--infer", action="store_true",
                    help="time inference (forward + softmax, no grad) "
                    "instead of training; the weights are the initial ones")
    ap.add_argument("--malloc", choices=MALLOC_CHOICES, default="kept",
                    help="kept: glibc keeps freed memory for the next step "
                    "(default, PyTorch's faster setting); glibc: its "
                    "defaults")
    args = ap.parse_args()
    if args.batch > args.samples:
        ap.error(f"--batch {args.batch} exceeds --samples {args.samples}: "
                 "no full batch to train on")

    torch.set_num_threads(args.threads)
    # denormals take a slow path in the CPU's arithmetic; flushing them is
    # PyTorch's own switch for speed (6.6 against 8.0 ms an MLP step here)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    print(backends_line(), flush=True)
    set_malloc(args.malloc)

    x, y = load_data(args.samples)
    n_batches = args.samples // args.batch  # partial last batch dropped
    b = args.batch
    batches = [(x[i * b:(i + 1) * b].contiguous(), y[i * b:(i + 1) * b])
               for i in range(n_batches)]

    model = build_model(args.model)
    loss_fn = nn.CrossEntropyLoss()

    if args.infer:
        # what tensor_predictor does per buffer: a forward pass in
        # evaluation mode with the output's probabilities, nothing kept
        model.eval()
        with torch.inference_mode():
            for xb, _ in batches[:max(1, WARMUP_SAMPLES // b)]:
                torch.softmax(model(xb), dim=1)
            t0 = time.perf_counter()
            for epoch in range(args.epochs):
                for xb, _ in batches:
                    torch.softmax(model(xb), dim=1)
            seconds = time.perf_counter() - t0
        done = n_batches * b * args.epochs
        print(f"torch model={args.model} batch={b} threads={args.threads} "
              f"samples={args.samples} epochs={args.epochs} mode=inference "
              f"seconds={seconds:.3f} samples_per_s={done / seconds:.1f}")
        return

    foreach = fastest_adam(model, loss_fn, batches, WARMUP_SAMPLES)
    print(f"# adam foreach={foreach} (the faster of the two forms here)",
          flush=True)
    epochs = timed_training(model,
                            lambda m: make_optimizer(m, foreach), loss_fn,
                            batches, args.epochs, WARMUP_SAMPLES)
    seconds, loss, correct = epochs[-1]
    trained = n_batches * b
    accuracy = correct / trained

    print(f"torch model={args.model} batch={b} threads={args.threads} "
          f"samples={args.samples} epochs={args.epochs} "
          f"seconds={seconds:.3f} samples_per_s={trained / seconds:.1f} "
          f"loss={loss:.4f} accuracy={accuracy:.4f}")


if __name__ == "__main__":
    main()
