#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyTorch reference timing for the sequence models in tests/models.

The PyTorch side of tests/bench/seq_speed.sh: tests/models/sensor_conv1d.ini,
tests/models/sensor_lstm.ini and tests/models/sensor_gru.ini built by hand
with the same shapes,
activations, optimizer and batching, trained on synthetic float32 samples
of the same shapes (uniform inputs, random one-hot classes) the way
tests/bench/seq_speed.c trains the engine: partial last batch dropped, the
data made before the clock starts, only the training steps of each epoch
timed (the script reads the last epoch's figure). Runs with Debian's
python3-torch and numpy only.

The last line is machine-readable, e.g.
  torch model=lstm batch=16 threads=1 samples=16384 epochs=2 seconds=1.234 \
samples_per_s=13277.1 loss=1.3863 accuracy=0.2512
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# the timed step, the backends line and argument checks: as for Fashion-MNIST
from torch_fmnist import (backends_line, fastest_adam, positive,
                          timed_training)

WARMUP_SAMPLES = 2000

# per-sample input shape (nntrainer's channel:height:width) and classes
SHAPES = {
    "conv1d": ((3, 1, 64), 6),
    "lstm": ((1, 16, 6), 4),
    "gru": ((1, 16, 6), 4),
}


class SensorConv1d(nn.Module):
    """tests/models/sensor_conv1d.ini. Input 3:1:64 is [B][3][1][64]:
    3 channels of width 64, which torch's Conv1d takes as [B][3][64].
    conv1: 16 filters, kernel 5, "same" padding (2 at stride 1), relu;
    pool1: max 1x2, stride 1x2 over the width (64 -> 32);
    conv2: 32 filters, kernel 3, stride 2, no padding (32 -> 15), tanh;
    gap: global average (32 x 15 -> 32); output: fully connected to 6
    (softmax is in the loss). nntrainer's conv1d is a conv2d with a 1 x k
    window over a height-1 input: the same function as Conv1d."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 16, 5, padding=2)
        self.conv2 = nn.Conv1d(16, 32, 3, stride=2)
        self.output = nn.Linear(32, 6)
        # nntrainer's defaults: xavier_uniform weights, zero biases
        for m in (self.conv1, self.conv2, self.output):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)

    def forward(self, x):
        x = x.squeeze(2)                             # [B][3][64]
        x = F.relu(self.conv1(x))                    # [B][16][64]
        x = F.max_pool1d(x, 2, 2)                    # [B][16][32]
        x = torch.tanh(self.conv2(x))                # [B][32][15]
        x = x.mean(dim=2)                            # [B][32]
        return self.output(x)                        # [B][6] logits


class SensorLstm(nn.Module):
    """tests/models/sensor_lstm.ini. Input 1:16:6 is [B][1][16][6]: 16
    timesteps of 6 features, [B][16][6] batch first.
    lstm1: 12 units, return_sequences = true (every step's hidden state
    into lstm2), nntrainer's two biases (bias_ih, bias_hh) as torch's;
    lstm2: 8 units, last step only, integrate_bias = true: one bias, so
    torch's bias_hh is held at zero and not trained (bias_ih plays bias_h);
    output: fully connected to 4 (softmax is in the loss). Gates i, f, g, o
    with sigmoid / tanh, zero initial state, as torch's."""

    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTM(6, 12, batch_first=True)
        self.lstm2 = nn.LSTM(12, 8, batch_first=True)
        self.output = nn.Linear(8, 4)
        # nntrainer's defaults: xavier_uniform weights (recurrent ones
        # included), zero biases
        for lstm in (self.lstm1, self.lstm2):
            nn.init.xavier_uniform_(lstm.weight_ih_l0)
            nn.init.xavier_uniform_(lstm.weight_hh_l0)
            nn.init.zeros_(lstm.bias_ih_l0)
            nn.init.zeros_(lstm.bias_hh_l0)
        self.lstm2.bias_hh_l0.requires_grad_(False)
        nn.init.xavier_uniform_(self.output.weight)
        nn.init.zeros_(self.output.bias)

    def forward(self, x):
        x = x.squeeze(1)                             # [B][16][6]
        x, _ = self.lstm1(x)                         # [B][16][12]
        x, _ = self.lstm2(x)                         # [B][16][8]
        return self.output(x[:, -1])                 # [B][4] logits


class SensorGru(nn.Module):
    """tests/models/sensor_gru.ini. Input 1:16:6 is [B][1][16][6]: 16
    timesteps of 6 features, [B][16][6] batch first.
    gru1: 12 units, return_sequences = true (every step's hidden state
    into gru2), nntrainer's two biases (bias_ih, bias_hh) as torch's;
    gru2: 8 units, last step only, integrate_bias = true: one bias, so
    torch's bias_hh is held at zero and not trained (bias_ih plays bias_h:
    nntrainer adds its candidate part outside r * (h W_hg), as torch adds
    b_in); output: fully connected to 4 (softmax is in the loss).
    nntrainer's default reset_after = true is torch's form (r applied to
    h W_hn + b_hn); its gates z, r, g are torch's z, r, n in another
    order, which changes nothing here: sigmoid / tanh, zero initial state,
    h = z * h_prev + (1 - z) * g as torch's."""

    def __init__(self):
        super().__init__()
        self.gru1 = nn.GRU(6, 12, batch_first=True)
        self.gru2 = nn.GRU(12, 8, batch_first=True)
        self.output = nn.Linear(8, 4)
        # nntrainer's defaults: xavier_uniform weights (recurrent ones
        # included; [3U][F] has the fans of nntrainer's [F][3U]), zero
        # biases
        for gru in (self.gru1, self.gru2):
            nn.init.xavier_uniform_(gru.weight_ih_l0)
            nn.init.xavier_uniform_(gru.weight_hh_l0)
            nn.init.zeros_(gru.bias_ih_l0)
            nn.init.zeros_(gru.bias_hh_l0)
        self.gru2.bias_hh_l0.requires_grad_(False)
        nn.init.xavier_uniform_(self.output.weight)
        nn.init.zeros_(self.output.bias)

    def forward(self, x):
        x = x.squeeze(1)                             # [B][16][6]
        x, _ = self.gru1(x)                          # [B][16][12]
        x, _ = self.gru2(x)                          # [B][16][8]
        return self.output(x[:, -1])                 # [B][4] logits


def build_model(name):
    return {"conv1d": SensorConv1d, "lstm": SensorLstm,
            "gru": SensorGru}[name]()


def make_optimizer(model, foreach=None):
    # the INI's Adam: learning_rate 0.001, nntrainer's betas and epsilon
    return torch.optim.Adam([p for p in model.parameters() if p.requires_grad],
                            lr=0.001, betas=(0.9, 0.999), eps=1e-7,
                            foreach=foreach)


def make_data(name, n, seed):
    """n synthetic samples: uniform inputs, min-max normalized per sample
    (what the INI's "normalization = true" input layer does), and random
    class indices (one-hot labels for the engine; F.cross_entropy takes the
    index)."""
    (c, h, w), classes = SHAPES[name]
    rng = np.random.default_rng(seed)
    x = rng.random((n, c * h * w), dtype=np.float32)
    lo = x.min(axis=1, keepdims=True)
    span = x.max(axis=1, keepdims=True) - lo
    span[span == 0] = 1.0
    x = ((x - lo) / span).reshape(n, c, h, w)
    y = rng.integers(0, classes, n)
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=tuple(SHAPES), required=True)
    ap.add_argument("--batch", type=positive, required=True)
    ap.add_argument("--threads", type=positive, required=True)
    ap.add_argument("--samples", type=positive, default=16384)
    ap.add_argument("--epochs", type=positive, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.batch > args.samples:
        ap.error(f"--batch {args.batch} exceeds --samples {args.samples}: "
                 "no full batch to train on")

    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as torch_fmnist.py: its faster setting
    torch.manual_seed(args.seed)
    print(backends_line(), flush=True)

    b = args.batch
    n_batches = args.samples // b  # partial last batch dropped
    x, y = make_data(args.model, n_batches * b, args.seed)
    batches = [(x[i * b:(i + 1) * b].contiguous(), y[i * b:(i + 1) * b])
               for i in range(n_batches)]

    model = build_model(args.model)

    # softmax + cross entropy, fused as nntrainer fuses them
    loss_fn = nn.CrossEntropyLoss()
    trained = n_batches * b
    foreach = fastest_adam(model, loss_fn, batches, WARMUP_SAMPLES,
                           make_optimizer)
    print(f"# adam foreach={foreach} (the faster of the two forms here)",
          flush=True)
    figures = timed_training(model, lambda m: make_optimizer(m, foreach),
                             loss_fn, batches, args.epochs, WARMUP_SAMPLES)
    for epoch, (seconds, loss, correct) in enumerate(figures):
        print(f"torch model={args.model} batch={b} threads={args.threads} "
              f"samples={trained} epoch={epoch + 1}/{args.epochs} "
              f"seconds={seconds:.3f} "
              f"samples_per_s={trained / seconds:.1f} "
              f"loss={loss:.4f} accuracy={correct / trained:.4f}",
              flush=True)

if __name__ == "__main__":
    main()
