#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyTorch reference timing for the model zoo (tests/models/zoo_*.ini).

The PyTorch side of tests/bench/zoo_speed.sh. The model is built from the
same INI, layer by layer (the layer types the zoo uses: input, conv2d,
depthwiseconv2d, batch_normalization, addition, pooling2d global_average
(and, for tests/models/fmnist_cnn.ini, max or average over pool_size
windows without padding), flatten, dropout, fully_connected and the activations relu, relu6,
softmax; for the transformer encoder reshape, permute, positional_encoding,
multi_head_attention (query, key, value; PyTorch's packed in_proj_weight
is [q; k; v], the transposes of the BIN's query_fc_weight, key_fc_weight,
value_fc_weight), layer_normalization over the width, reduce_mean, gelu
(erf), and the input's batch-wide min-max normalization), so both sides
train the same network (for zoo_transformer checked: the same weights
written as a BIN give the engine's evaluation loss to 6 digits); a dense
layer maps each row's width as the engine does: convolutions with
TensorFlow's "same" padding (the extra pixel of an odd total at the
bottom/right) as the engine pads, batch normalization with the INI's
epsilon and momentum (PyTorch's momentum = 1 - nntrainer's), Adam with
the INI's learning rate. Trained on synthetic float32 samples (uniform
inputs, random classes) made before the clock starts, as
tests/bench/seq_speed.c trains the engine; PyTorch's best setting is
searched on the warm-up batches: foreach Adam or the loop
(torch_fmnist.fastest_adam), channels-last memory format or not, and
attention through nn.MultiheadAttention or by hand (class Mha). glibc's
malloc keeps freed memory for the next step (--malloc kept, the default:
torch_fmnist.keep_freed_memory); with its defaults (--malloc glibc) this
script's fmnist_cnn faulted in fresh pages every step and trained 2-4x
slower (tests/bench/torch_malloc_side.sh).

--precision bf16 trains with PyTorch's CPU mixed precision:
torch.autocast("cpu", dtype=torch.bfloat16) around the forward pass and
the loss (its ops list runs convolutions, linear layers and matrix
products in bf16 and keeps the rest fp32), fp32 master weights and an
fp32 Adam; bf16 has fp32's exponent range, so no GradScaler. The search
above runs under autocast too. --search-batches sets how many warm-up
batches time each setting (default 3; fewer for the big models at large
batches, whose steps take seconds).

The last line is machine-readable, e.g.
  torch model=zoo_ds_cnn batch=32 threads=1 samples=2048 epochs=2 \
channels_last=0 foreach=1 attention=- seconds=1.234 samples_per_s=1659.3 \
peak_rss_kb=312345 precision=fp32
"""

import argparse
import configparser
import contextlib
import copy
import resource
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_fmnist import MALLOC_CHOICES, backends_line, positive, set_malloc

WARMUP_BATCHES = 3
SEARCH_SECONDS = 0.3


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
        self.fn = {"relu": F.relu, "relu6": F.relu6, "gelu": F.gelu}[name]

    def forward(self, x):
        # PyTorch 1.13 has no bf16 backward of relu6 (hardtanh) on the
        # CPU; clamp computes the same in bf16 under autocast
        if self.fn is F.relu6 and x.dtype == torch.bfloat16:
            return x.clamp(0, 6)
        return self.fn(x)


class Reshape(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.shape = shape

    def forward(self, x):
        return x.reshape((x.shape[0],) + self.shape)


class Permute(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return x.permute(self.dims)


class Mean(nn.Module):
    def __init__(self, axis):
        super().__init__()
        self.axis = axis

    def forward(self, x):
        return x.mean(dim=self.axis, keepdim=True)


class PositionalEncoding(nn.Module):
    """nntrainer's table over height (timestep i) and width (j of w):
    sin(i / 10000^(2 floor(j/2) / w)) for even j, cos for odd j."""

    def __init__(self, h, w):
        super().__init__()
        i = torch.arange(h, dtype=torch.float64).unsqueeze(1)
        j = torch.arange(w)
        a = i / torch.pow(torch.tensor(10000.0, dtype=torch.float64),
                          (j - j % 2).to(torch.float64) / w)
        pe = torch.where(j % 2 == 1, torch.cos(a), torch.sin(a))
        self.register_buffer("pe", pe.to(torch.float32))

    def forward(self, x):
        return x + self.pe


class Mha(nn.Module):
    """multi_head_attention on [B][1][L][D] (inputs query, key, value),
    with PyTorch's packed parameters (in_proj_weight [q; k; v], out_proj)
    and two ways to compute it, the faster chosen on the warm-up batches:
    "module", F.multi_head_attention_forward as nn.MultiheadAttention
    (batch_first) runs it in training (one packed projection GEMM for
    self-attention; its fast path is inference only), or "manual": the
    projections as one F.linear, the heads by bmm and softmax."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.impl = "module"

    def forward(self, q, k, v):
        b, _, lq, d = q.shape
        q3 = q.reshape(b, lq, d)
        a = self.attn
        if self.impl == "module":
            k3 = q3 if k is q else k.reshape(b, k.shape[2], d)
            v3 = k3 if v is k else v.reshape(b, v.shape[2], d)
            y, _ = a(q3, k3, v3, need_weights=False)
            return y.reshape(b, 1, lq, -1)
        h = self.heads
        dh = d // h
        if q is k and k is v:
            qp, kp, vp = F.linear(q3, a.in_proj_weight,
                                  a.in_proj_bias).chunk(3, dim=-1)
        else:
            w = a.in_proj_weight.chunk(3)
            bias = a.in_proj_bias.chunk(3)
            qp = F.linear(q3, w[0], bias[0])
            kp = F.linear(k.reshape(b, -1, d), w[1], bias[1])
            vp = F.linear(v.reshape(b, -1, d), w[2], bias[2])
        qh = qp.reshape(b, lq, h, dh).transpose(1, 2)
        kh = kp.reshape(b, -1, h, dh).transpose(1, 2)
        vh = vp.reshape(b, -1, h, dh).transpose(1, 2)
        s = torch.matmul(qh, kh.transpose(2, 3)) * (dh ** -0.5)
        o = torch.matmul(torch.softmax(s, dim=-1), vh)
        o = o.transpose(1, 2).reshape(b, lq, d)
        return a.out_proj(o).reshape(b, 1, lq, -1)


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
                # nntrainer's min-max rescaling over the whole batch
                self.normalize = s.get("normalization", "false") == "true"
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
            elif t == "pooling2d" and s["pooling"] == "global_average":
                mod = nn.AdaptiveAvgPool2d(1)
                out = (c, 1, 1)
            elif t == "pooling2d" and s["pooling"] in ("max", "average"):
                # windows of pool_size, the engine's default stride 1, no
                # padding (nor ceil_mode) here
                if s.get("padding", "valid") not in ("valid", "0") or \
                        s.get("ceil_mode", "false") != "false":
                    raise SystemExit(f"{path}: [{name}] {t}: only padding "
                                     "= valid, no ceil_mode")
                k = pair(s["pool_size"])
                st = pair(s.get("stride", "1"))
                mod = (nn.MaxPool2d if s["pooling"] == "max"
                       else nn.AvgPool2d)(k, st)
                out = (c, (h - k[0]) // st[0] + 1, (w - k[1]) // st[1] + 1)
            elif t == "flatten":
                mod = nn.Flatten()
                out = (1, 1, c * h * w)
            elif t == "dropout":
                mod = nn.Dropout(float(s["dropout_rate"]))
                out = (c, h, w)
            elif t == "fully_connected":
                mod = nn.Linear(w, int(s["unit"]))
                out = (c, h, int(s["unit"]))
            # the transformer encoder's types
            elif t == "reshape":
                out = tuple(int(x) for x in s["target_shape"].split(":"))
                mod = Reshape(out)
            elif t == "permute":
                # nntrainer's 1-based channel:height:width order
                order = [int(x) for x in s["direction"].split(",")]
                mod = Permute([0] + order)
                out = tuple((c, h, w)[i - 1] for i in order)
            elif t == "positional_encoding":
                mod = PositionalEncoding(h, w)
                out = (c, h, w)
            elif t == "multi_head_attention":
                heads = int(s.get("num_heads", "1"))
                if len(ins) != 3 or c != 1 or any(
                        shapes[i][2] != w for i in ins) or w % heads or any(
                        k in s for k in ("projected_key_dim", "output_shape",
                                         "projected_value_dim")):
                    raise SystemExit(f"{path}: [{name}] {t}: only query, "
                                     "key, value of one width, default "
                                     "projections")
                mod = Mha(w, heads)
                out = (c, h, w)
            elif t == "layer_normalization":
                assert s.get("axis", "3") == "3", path
                mod = nn.LayerNorm(w, eps=float(s.get("epsilon", "0.001")))
                out = (c, h, w)
            elif t == "reduce_mean":
                axis = int(s["axis"])
                mod = Mean(axis)
                out = tuple(1 if i == axis else n
                            for i, n in enumerate((c, h, w), 1))
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
        if self.normalize:
            lo, hi = x.min(), x.max()
            x = (x - lo) / (hi - lo) if hi > lo else torch.zeros_like(x)
        values = {self.input_name: x}
        for name, mod_name, ins in self.steps:
            if mod_name is None:
                y = values[ins[0]]
                for other in ins[1:]:
                    y = y + values[other]
            else:
                y = values[ins[0]]
                mod = self.mods[mod_name]
                if isinstance(mod, Mha):
                    y = mod(*(values[i] for i in ins))
                else:
                    # a dense layer on [B][1][1][W] as on [B][W]; on more
                    # rows ([B][C][H][W]) it maps each row's W features
                    if isinstance(mod, (nn.BatchNorm1d, nn.Linear)) \
                            and y.dim() > 2 and y.shape[1] * y.shape[2] == 1:
                        y = y.flatten(1)
                    y = mod(y)
            values[name] = y
        return values[self.output].flatten(1)


def train_epoch(model, opt, loss_fn, batches, precision="fp32"):
    """torch_fmnist.train_epoch's step, with the forward pass and the loss
    under bf16 autocast for precision bf16 (backward and the optimizer
    step outside it, as PyTorch's recipe has them)."""
    for xb, yb in batches:
        opt.zero_grad(set_to_none=True)
        with (torch.autocast("cpu", dtype=torch.bfloat16)
              if precision == "bf16" else contextlib.nullcontext()):
            loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()


def set_mha(model, impl):
    for m in model.modules():
        if isinstance(m, Mha):
            m.impl = impl


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ini")
    ap.add_argument("--batch", type=positive, required=True)
    ap.add_argument("--threads", type=positive, required=True)
    ap.add_argument("--samples", type=positive, default=1024)
    ap.add_argument("--epochs", type=positive, default=2)
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                    help="bf16: CPU autocast to bfloat16 (fp32 master "
                    "weights and Adam)")
    ap.add_argument("--search-batches", type=positive,
                    default=WARMUP_BATCHES,
                    help="warm-up batches timing each setting in the search")
    ap.add_argument("--malloc", choices=MALLOC_CHOICES, default="kept",
                    help="kept: glibc keeps freed memory for the next step "
                    "(default, PyTorch's faster setting); glibc: its "
                    "defaults")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    # denormals take a slow path in the CPU's arithmetic; flushing them is
    # PyTorch's own switch for speed (as torch_fmnist.py sets it)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    set_malloc(args.malloc)
    model = IniNet(args.ini)
    n = args.samples // args.batch
    if n < 1:
        ap.error(f"--samples {args.samples} is less than --batch "
                 f"{args.batch}: no full batch to train on")
    g = torch.Generator().manual_seed(1)
    batches = [(torch.rand((args.batch,) + model.input_shape, generator=g),
                torch.randint(0, model.classes, (args.batch,), generator=g))
               for _ in range(n)]
    loss_fn = nn.CrossEntropyLoss()
    print(backends_line())

    def make(m, foreach):
        return torch.optim.Adam(m.parameters(), lr=model.lr, foreach=foreach)

    # the best setting, on copies, over the warm-up batches
    # (and, with attention, its module or manual form)
    has_mha = any(isinstance(m, Mha) for m in model.modules())
    best = None
    for channels_last in (False, True):
        for foreach in (False, True):
            for impl in ("module", "manual") if has_mha else ("-",):
                trial = copy.deepcopy(model)
                set_mha(trial, impl)
                fmt = torch.channels_last if channels_last else torch.contiguous_format
                trial = trial.to(memory_format=fmt)
                warm = [(x.contiguous(memory_format=fmt), y)
                        for x, y in batches[:args.search_batches]]
                opt = make(trial, foreach)
                trial.train()
                train_epoch(trial, opt, loss_fn, warm[:1], args.precision)
                # the best of a few passes while they are short (small
                # models: one pass is a few milliseconds, noisy)
                seconds, spent = None, 0.0
                while seconds is None or spent < SEARCH_SECONDS:
                    t0 = time.perf_counter()
                    train_epoch(trial, opt, loss_fn, warm, args.precision)
                    took = time.perf_counter() - t0
                    spent += took
                    seconds = took if seconds is None else min(seconds, took)
                if best is None or seconds < best[0]:
                    best = (seconds, channels_last, foreach, impl)
    _, channels_last, foreach, impl = best
    set_mha(model, impl)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    batches = [(x.contiguous(memory_format=fmt), y) for x, y in batches]
    model.train()
    opt = make(model, foreach)
    seconds = 0.0
    for epoch in range(args.epochs):
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        train_epoch(model, opt, loss_fn, batches, args.precision)
        seconds = time.perf_counter() - t0
    # fresh pages a step: the cost --malloc kept removes
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    print(f"# page faults a step (timed epoch): {faults / n:.0f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    used = n * args.batch
    print(f"torch model={args.ini.rsplit('/', 1)[-1].removesuffix('.ini')} "
          f"batch={args.batch} threads={args.threads} samples={used} "
          f"epochs={args.epochs} channels_last={int(channels_last)} "
          f"foreach={int(foreach)} attention={impl} seconds={seconds:.3f} "
          f"samples_per_s={used / seconds:.1f} peak_rss_kb={peak} "
          f"precision={args.precision}")


if __name__ == "__main__":
    main()
