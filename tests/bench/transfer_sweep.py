#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Which backbone transfers from Fashion-MNIST's classes 0-4 to 5-9?

A quick PyTorch sweep behind docs/personalize.md's "Pretrained against
scratch: what was tried": a model pretrained on the training images of
classes 0-4 (Adam 0.001, batch 32, PRETRAIN_EPOCHS epochs), then taught
classes 5-9 from the first 20 training images of each (batch 32,
FT_EPOCHS epochs, Adam at each learning rate of the grid), per method:
  everything   every parameter trains, from the pretrained weights
  last1        the classifier only, from the pretrained weights
  scratch      every parameter trains, fresh weights
Each is scored on the tuning split of pipelines/personalize.sh TUNE=1 (the
last 10,000 training images: new = accuracy over classes 5-9, old over
0-4, argmax over the 10 outputs), never on the test images; each figure
is the mean over SEEDS (data order and fresh initialization).
Architectures, each for 28x28 grey images:
  transformer  tests/models/zoo_transformer.ini (7x7 patches of stride 7,
               sinusoidal positions, two post-norm encoder layers)
  cnn          tests/models/fmnist_cnn.ini (two conv/max-pool stages,
               dense 128, classifier)
  resbn        tests/models/resnet_bn.ini (stride-2 stem, two residual
               blocks with batch normalization, global average pooling)
One thread (torch.set_num_threads(1)).

Usage: tests/bench/transfer_sweep.py ARCH PRETRAIN_EPOCHS FT_EPOCHS SEEDS [GRID]
  SEEDS: comma-separated (1,2); GRID: JSON {"method": [lr, ...]} (default
  everything and scratch 0.001, 0.003, 0.01; last1 0.01, 0.03, 0.1)
Prints one line a method and learning rate:
  cnn pre=3 ft=15 scratch lr=0.003 new=0.8503 old=0.0000 per_seed=[...]
"""
import gzip, sys, time, math, json
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(1)
D = '/usr/share/datasets/fashion-mnist'
def idx(p):
    b = gzip.open(p).read()
    nd = b[3]; dims = [int.from_bytes(b[4+4*i:8+4*i], 'big') for i in range(nd)]
    return np.frombuffer(b, np.uint8, offset=4+4*nd).reshape(dims)
X = torch.tensor(idx(f'{D}/train-images-idx3-ubyte.gz'), dtype=torch.float32).div(255).unsqueeze(1)
Y = torch.tensor(idx(f'{D}/train-labels-idx1-ubyte.gz').astype(np.int64))
tuneX, tuneY = X[-10000:], Y[-10000:]

class PE(nn.Module):
    def __init__(s, T, d):
        super().__init__()
        pos = torch.arange(T).unsqueeze(1); i = torch.arange(0, d, 2)
        pe = torch.zeros(T, d); div = torch.exp(-math.log(10000.0) * i / d)
        pe[:, 0::2] = torch.sin(pos * div); pe[:, 1::2] = torch.cos(pos * div)
        s.register_buffer('pe', pe)
    def forward(s, x): return x + s.pe
class Transformer(nn.Module):
    def __init__(s):
        super().__init__()
        s.patches = nn.Conv2d(1, 64, 7, 7); s.pe = PE(16, 64)
        s.enc = nn.ModuleList([nn.TransformerEncoderLayer(64, 4, 128, 0.0, 'gelu', batch_first=True) for _ in range(2)])
        s.classifier = nn.Linear(64, 10)
    def forward(s, x):
        t = s.patches(x).flatten(2).transpose(1, 2); t = s.pe(t)
        for e in s.enc: t = e(t)
        return s.classifier(t.mean(1))
class CNN(nn.Module):  # tests/models/fmnist_cnn.ini
    def __init__(s):
        super().__init__()
        s.f = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU())
        s.classifier = nn.Linear(128, 10)
    def forward(s, x): return s.classifier(s.f(x))
class ResBN(nn.Module):  # tests/models/resnet_bn.ini
    def __init__(s):
        super().__init__()
        c = lambda: nn.Conv2d(16, 16, 3, padding=1)
        s.stem = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
        s.b = nn.ModuleList([nn.ModuleList([c(), nn.BatchNorm2d(16), c(), nn.BatchNorm2d(16)]) for _ in range(2)])
        s.classifier = nn.Linear(16, 10)
    def forward(s, x):
        h = s.stem(x)
        for c1, b1, c2, b2 in s.b: h = F.relu(b2(c2(F.relu(b1(c1(h))))) + h)
        return s.classifier(h.mean((2, 3)))
ARCH = {'transformer': Transformer, 'cnn': CNN, 'resbn': ResBN}

def train(m, x, y, epochs, lr, params, seed, bs=32):
    opt = torch.optim.Adam(params, lr=lr); g = torch.Generator().manual_seed(seed)
    m.train()
    for e in range(epochs):
        p = torch.randperm(len(x), generator=g)
        for i in range(0, len(x), bs):
            j = p[i:i+bs]; opt.zero_grad(); F.cross_entropy(m(x[j]), y[j]).backward(); opt.step()
def evaluate(m):
    m.eval()
    with torch.no_grad():
        pr = torch.cat([m(tuneX[i:i+1000]).argmax(1) for i in range(0, 10000, 1000)])
    new = tuneY >= 5
    return (pr[new] == tuneY[new]).float().mean().item(), (pr[~new] == tuneY[~new]).float().mean().item()

if len(sys.argv) not in (5, 6) or sys.argv[1] not in ARCH:
    sys.exit('usage: transfer_sweep.py ARCH PRETRAIN_EPOCHS FT_EPOCHS SEEDS [GRID]'
             ' (ARCH: ' + ', '.join(ARCH) + ')')
arch = sys.argv[1]; pre_epochs = int(sys.argv[2]); ft_epochs = int(sys.argv[3]); seeds = [int(s) for s in sys.argv[4].split(',')]
torch.manual_seed(0)
bb = ARCH[arch]()
old = Y < 5
t0 = time.time(); train(bb, X[old], Y[old], pre_epochs, 1e-3, bb.parameters(), 1)
state = {k: v.clone() for k, v in bb.state_dict().items()}
print(f'# {arch} pretrained {pre_epochs} epochs in {time.time()-t0:.0f}s: tune old={evaluate(bb)[1]:.4f}', flush=True)
# shots: first 20 of each class 5-9
shots = torch.cat([torch.nonzero(Y == c)[:20, 0] for c in range(5, 10)])
sx, sy = X[shots], Y[shots]
grid = {'everything': [0.001, 0.003, 0.01], 'last1': [0.01, 0.03, 0.1], 'scratch': [0.001, 0.003, 0.01]}
if len(sys.argv) > 5: grid = json.loads(sys.argv[5])
for meth, lrs in grid.items():
    for lr in lrs:
        res = []
        for sd in seeds:
            torch.manual_seed(100 + sd)
            m = ARCH[arch]()
            if meth != 'scratch': m.load_state_dict(state)
            ps = m.classifier.parameters() if meth == 'last1' else m.parameters()
            train(m, sx, sy, ft_epochs, lr, list(ps), sd)
            res.append(evaluate(m))
        nw = np.mean([r[0] for r in res]); od = np.mean([r[1] for r in res])
        print(f'{arch} pre={pre_epochs} ft={ft_epochs} {meth} lr={lr} new={nw:.4f} old={od:.4f} per_seed={[round(r[0],3) for r in res]}', flush=True)
