#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""ONNX fixtures of the importer (tensor-trainer import): small PyTorch
models exported with torch.onnx.export (do_constant_folding=False) at
opsets 13 and 17, in eval or training mode, each beside PyTorch's golden
data: NAME.onnx and NAME.golden (text: the batch, the input, one-hot
labels, the logits of the initial weights in eval mode, and the mean
cross-entropy losses of 5 full-batch SGD steps and of 5 Adam steps from
those weights; "-" instead of losses where PyTorch's training cannot be
matched: dropout draws other masks).

Run from the repository root: /usr/bin/python3 tests/onnx/make_fixtures.py
(tests/unit/test_onnx_import.c reads the files; commit them). Needs
Debian's python3-torch (1.13), python3-onnx and, for the torchvision
models, python3-torchvision (0.14); the tests need none of them.
"make_fixtures.py zoo", "rnn" or "ops" writes only those.
"""
import copy
import io
import os
import sys
import warnings
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 4
SGD_LR = 0.1
ADAM_LR = 0.01
STEPS = 5


class MLP(nn.Module):
    """Gemm (Linear), ReLU, Tanh, Sigmoid, and a MatMul + Add Linear."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.fc2 = nn.Linear(16, 8)
        self.w = nn.Parameter(torch.randn(8, 5) * 0.3)
        self.b = nn.Parameter(torch.randn(5) * 0.1)
        self.fc3 = nn.Linear(5, 4)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        x = torch.sigmoid(x @ self.w + self.b)
        return self.fc3(x)


class MLPSoftmax(nn.Module):
    """Ends in a Softmax: --loss cross_softmax absorbs it (the golden
    losses are the cross entropy of the logits before it)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=1)


class MLPDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.drop = nn.Dropout(0.25)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


class CNN(nn.Module):
    """conv + bn + relu + maxpool + conv + avgpool(ceil) + flatten + fc."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.c2 = nn.Conv2d(4, 6, 3, stride=1, padding=(1, 0), bias=False)
        self.fc = nn.Linear(6 * 2 * 1, 3)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.bn(self.c1(x))), 2)
        x = F.avg_pool2d(self.c2(x), 2, ceil_mode=True,
                         count_include_pad=False)
        return self.fc(torch.flatten(x, 1))


class Residual(nn.Module):
    """A residual block (Add of two activations), global average pooling,
    x.view(x.size(0), -1) with a dynamic batch (Shape, Gather, Unsqueeze,
    Concat, Reshape)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.c1 = nn.Conv2d(4, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 4, 3, padding=1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = self.c2(torch.relu(self.c1(x)))
        x = torch.relu(x + y)
        x = F.adaptive_avg_pool2d(x, 1)
        return self.fc(x.view(x.size(0), -1))


class ResidualDown(nn.Module):
    """Weighted parallel branches (a strided block and a 1x1 convolution
    on the shortcut) joined by Add: the BIN's layer order is nntrainer's
    (parallel branches in reverse section order), not the file's."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(2, 4, 3, padding=1)
        self.c1 = nn.Conv2d(4, 6, 3, stride=2, padding=1)
        self.c2 = nn.Conv2d(6, 6, 3, padding=1)
        self.short = nn.Conv2d(4, 6, 1, stride=2)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = self.c2(torch.relu(self.c1(x)))
        x = torch.relu(y + self.short(x))
        x = F.adaptive_max_pool2d(x, 1)
        return self.fc(torch.flatten(x, 1))


class Folded(nn.Module):
    """Exported with do_constant_folding=True (torch's default): the
    view's shape is an initializer [batch, -1]; Clip with other bounds
    than ReLU6's; GlobalMaxPool-like max pooling over the whole map."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(1, 3, 3, padding=1, stride=2)
        self.fc = nn.Linear(3 * 3 * 3, 3)

    def forward(self, x):
        x = F.hardtanh(self.c(x), -0.5, 0.75)
        return self.fc(x.view(x.size(0), -1))


class DWSep(nn.Module):
    """Depthwise-separable: grouped conv, ReLU6 (Clip), 1x1 conv,
    HardSwish (opset 13: HardSigmoid and Mul), HardSigmoid, average
    pooling (count_include_pad), Flatten."""

    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(3, 6, 3, padding=1, groups=3)
        self.pw = nn.Conv2d(6, 4, 1)
        self.fc = nn.Linear(4 * 3 * 3, 3)

    def forward(self, x):
        x = F.relu6(self.dw(x))
        x = F.hardswish(self.pw(x))
        x = F.avg_pool2d(x, 3, stride=2, padding=1)
        x = F.hardsigmoid(x)
        return self.fc(x.flatten(1))


class Conv1D(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv1d(2, 4, 3, stride=2, padding=1)
        self.fc = nn.Linear(4 * 5, 3)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.c(x)), 1))


class Conv1DPool(nn.Module):
    """1-D pooling: max (ceil mode) and padded average over [N, C, L],
    then global average."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(2, 4, 3, padding=1)
        self.c2 = nn.Conv1d(4, 5, 3, padding=1)
        self.fc = nn.Linear(5, 3)

    def forward(self, x):
        x = F.max_pool1d(torch.relu(self.c1(x)), 3, stride=2, ceil_mode=True)
        x = F.avg_pool1d(self.c2(x), 2, padding=1, count_include_pad=False)
        x = F.adaptive_avg_pool1d(torch.tanh(x), 1)
        return self.fc(torch.flatten(x, 1))


def train_losses(model, x, target, make_opt, probs=False):
    m = copy.deepcopy(model)
    m.train()
    opt = make_opt(m.parameters())
    out = []
    for _ in range(STEPS):
        opt.zero_grad()
        y = m(x)
        loss = (F.nll_loss(torch.log(y), target) if probs
                else F.cross_entropy(y, target))
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def write(name, model, shape, opset, training, dynamic=False, losses=True,
          fold=False, probs=False, tokens=0):
    torch.manual_seed(zlib.crc32(name.encode()) % 1000)
    x = (torch.randint(0, tokens, (BATCH, *shape)) if tokens
         else torch.randn(BATCH, *shape))
    mode = (torch.onnx.TrainingMode.TRAINING if training
            else torch.onnx.TrainingMode.EVAL)
    buf = io.BytesIO()
    export = copy.deepcopy(model)
    export.train(training)
    kw = {}
    if dynamic:
        kw["dynamic_axes"] = {"x": {0: "batch"}, "y": {0: "batch"}}
    torch.onnx.export(export, x, buf, opset_version=opset, training=mode,
                      do_constant_folding=fold, input_names=["x"],
                      output_names=["y"], **kw)
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(buf.getvalue())
    # exporting in training mode runs one training forward: batch
    # normalization's running statistics move, and the file holds the
    # moved ones; the reference is the model as exported
    model = copy.deepcopy(export)
    model.eval()
    with torch.no_grad():
        logits = model(x)
    classes = logits.shape[1]
    target = torch.arange(BATCH) % classes

    def fmt(values):
        return " ".join("%.9g" % v for v in values)

    lines = ["batch %d" % BATCH,
             "input %d %s" % (x.numel(), fmt(x.flatten().tolist())),
             "labels %d %s" % (BATCH * classes,
                               fmt(F.one_hot(target, classes).flatten()
                                   .float().tolist())),
             "logits %d %s" % (logits.numel(),
                               fmt(logits.flatten().tolist()))]
    if losses:
        sgd = train_losses(model, x, target,
                           lambda p: torch.optim.SGD(p, lr=SGD_LR), probs)
        adam = train_losses(model, x, target,
                            lambda p: torch.optim.Adam(p, lr=ADAM_LR), probs)
        lines.append("sgd %g %d %s" % (SGD_LR, STEPS, fmt(sgd)))
        lines.append("adam %g %d %s" % (ADAM_LR, STEPS, fmt(adam)))
    else:
        lines.append("sgd -")
        lines.append("adam -")
    with open(os.path.join(HERE, name + ".golden"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(name, len(buf.getvalue()), "bytes")


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(torch.exp(x))


def write_bad():
    """Files the importer must refuse (tests/unit/test_onnx_import.c): an
    unsupported operator, a graph input nobody defines, a cycle, an
    initializer whose data is in a missing external file."""
    import onnx
    from onnx import TensorProto, helper
    bad = os.path.join(HERE, "bad")
    os.makedirs(bad, exist_ok=True)
    buf = io.BytesIO()
    torch.onnx.export(Unsupported(), torch.randn(2, 4), buf,
                      opset_version=13, do_constant_folding=False,
                      input_names=["x"], output_names=["y"])
    with open(os.path.join(bad, "unsupported_op.onnx"), "wb") as f:
        f.write(buf.getvalue())
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])

    def save(name, nodes, inits=()):
        g = helper.make_graph(nodes, name, [x], [y], list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        with open(os.path.join(bad, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())

    save("unknown_input", [helper.make_node("Relu", ["nowhere"], ["y"],
                                            name="relu_a")])
    save("cycle", [helper.make_node("Add", ["x", "b"], ["a"], name="add_a"),
                   helper.make_node("Relu", ["a"], ["b"], name="relu_b"),
                   helper.make_node("Relu", ["b"], ["y"], name="relu_y")])
    w = TensorProto()
    w.name, w.data_type = "w", TensorProto.FLOAT
    w.dims.extend([4, 4])
    w.data_location = TensorProto.EXTERNAL
    e = w.external_data.add()
    e.key, e.value = "location", "missing_weights.bin"
    save("external_data", [helper.make_node("MatMul", ["x", "w"], ["y"],
                                            name="mm")], [w])
    print("bad fixtures written")


# ---- transformer encoders (ext/onnx/onnx_map_tf.c) ----------------------
class TinyTransformer(nn.Module):
    """A [N, T, F] input projected to d_model, 1 or 2
    nn.TransformerEncoderLayer (batch_first), the mean over the tokens and
    a Linear head: self-attention, LayerNorm (decomposed before opset 17),
    ReLU or GELU (Erf form)."""

    def __init__(self, norm_first, activation, layers=1, dropout=0.0,
                 features=6, d_model=8, heads=2, ff=16, classes=3):
        super().__init__()
        self.proj = nn.Linear(features, d_model)
        self.enc = nn.ModuleList([nn.TransformerEncoderLayer(
            d_model, heads, ff, dropout, activation=activation,
            batch_first=True, norm_first=norm_first) for _ in range(layers)])
        self.head = nn.Linear(d_model, classes)
        with torch.no_grad():   # LayerNorms away from ones and zeros
            for e in self.enc:
                for ln in (e.norm1, e.norm2):
                    ln.weight.uniform_(0.5, 1.5)
                    ln.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        x = self.proj(x)
        for e in self.enc:
            x = e(x)
        return self.head(x.mean(dim=1))


def write_transformers():
    """Post-norm ReLU and pre-norm GELU encoders at opsets 13 (LayerNorm
    and GELU decomposed) and 17 (LayerNormalization), in training and eval
    mode, one with two layers; one with dropout 0.1 (imports only)."""
    torch.manual_seed(7)
    post_relu = TinyTransformer(False, "relu")
    pre_gelu = TinyTransformer(True, "gelu")
    two = TinyTransformer(False, "gelu", layers=2)
    drop = TinyTransformer(True, "relu", dropout=0.1)
    write("tf_post_relu_train_op13", post_relu, (5, 6), 13, True)
    write("tf_post_relu_op17", post_relu, (5, 6), 17, False)
    write("tf_pre_gelu_op13", pre_gelu, (5, 6), 13, False)
    write("tf_pre_gelu_train_op17", pre_gelu, (5, 6), 17, True)
    write("tf_two_gelu_op13", two, (5, 6), 13, False)
    write("tf_dropout_train_op17", drop, (5, 6), 17, True, losses=False)
    write_transformers_bad()


class MaskedEncoder(nn.Module):
    """A causal attention mask: refused (Add before the Softmax)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoderLayer(8, 2, 16, 0.0,
                                              batch_first=True)
        self.register_buffer("mask", torch.triu(
            torch.full((5, 5), float("-inf")), diagonal=1))

    def forward(self, x):
        return self.enc(x, src_mask=self.mask).mean(dim=1)


class LayerNorm2D(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm([5, 8])
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(self.ln(x).mean(dim=1))


class TransposeLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 3)

    def forward(self, x):
        return self.fc(x.transpose(1, 2)).mean(dim=1)


class DivThree(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x.mean(dim=1) / 3.0)


def write_transformers_bad():
    """Transformer parts the importer refuses (test_onnx_import.c)."""
    bad = os.path.join(HERE, "bad")
    os.makedirs(bad, exist_ok=True)
    torch.manual_seed(3)
    for name, model, opset in (("tf_mask", MaskedEncoder(), 13),
                               ("tf_layernorm_2d", LayerNorm2D(), 17),
                               ("tf_transpose", TransposeLinear(), 13),
                               ("tf_div", DivThree(), 13)):
        buf = io.BytesIO()
        model.eval()
        torch.onnx.export(model, torch.randn(2, 5, 8), buf,
                          opset_version=opset, do_constant_folding=False,
                          input_names=["x"], output_names=["y"])
        with open(os.path.join(bad, name + ".onnx"), "wb") as f:
            f.write(buf.getvalue())
    print("bad transformer fixtures written")


# ---- torchvision CNNs, the zoo's keyword spotter and 1-D audio net,
# ---- recurrent and embedding classifiers (onnxrnn)

def zoo_models():
    """torchvision's MobileNetV2 and ResNet-18 (and its CIFAR variant),
    narrowed to keep the fixtures small: MobileNetV2 at width_mult 0.35
    with the first three stages of its inverted-residual setting and a
    32-channel last convolution (torchvision's is 1280), the classifier's
    dropout at 0 (PyTorch's masks cannot be matched); ResNet-18 with
    torchvision's ResNet and BasicBlock at 1/32 of its widths (2 to 16
    channels). Input 16x16, 10 classes."""
    import torchvision
    from torchvision.models.mobilenetv2 import MobileNetV2
    from torchvision.models.resnet import BasicBlock, ResNet
    from torchvision.ops.misc import Conv2dNormActivation

    mnv2 = MobileNetV2(num_classes=10, width_mult=0.35,
                       inverted_residual_setting=[[1, 16, 1, 1],
                                                  [6, 24, 2, 2],
                                                  [6, 32, 2, 2]])
    last_in = mnv2.features[-1][0].in_channels
    mnv2.features[-1] = Conv2dNormActivation(last_in, 32, kernel_size=1,
                                             activation_layer=nn.ReLU6)
    mnv2.classifier = nn.Sequential(nn.Dropout(0.0), nn.Linear(32, 10))

    class NarrowResNet(ResNet):
        def _make_layer(self, block, planes, blocks, stride=1,
                        dilate=False):
            if planes == 64:
                self.inplanes = 2
            return super()._make_layer(block, planes // 32, blocks, stride,
                                       dilate)

    def resnet18(cifar):
        m = NarrowResNet(BasicBlock, [2, 2, 2, 2], num_classes=10)
        m.conv1 = (nn.Conv2d(3, 2, 3, 1, 1, bias=False) if cifar else
                   nn.Conv2d(3, 2, 7, 2, 3, bias=False))
        m.bn1 = nn.BatchNorm2d(2)
        if cifar:
            m.maxpool = nn.Identity()
        m.fc = nn.Linear(16, 10)
        return m

    _ = torchvision
    return mnv2, resnet18(False), resnet18(True)


class DSCNN(nn.Module):
    """The keyword spotter of the zoo (Hello Edge's DS-CNN), narrow: a
    10x4 stride-2 conv, depthwise-separable blocks, average pooling over
    what is left, a Linear; input 1x49x10."""

    def __init__(self, width=16, blocks=2, classes=12):
        super().__init__()
        layers = [nn.Conv2d(1, width, (10, 4), 2, (5, 1), bias=False),
                  nn.BatchNorm2d(width), nn.ReLU()]
        for _ in range(blocks):
            layers += [nn.Conv2d(width, width, 3, 1, 1, groups=width,
                                 bias=False),
                       nn.BatchNorm2d(width), nn.ReLU(),
                       nn.Conv2d(width, width, 1, bias=False),
                       nn.BatchNorm2d(width), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.pool = nn.AvgPool2d((25, 5))
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


class AudioConv1D(nn.Module):
    """A 1-D conv net on raw audio frames: Conv1d, BN, ReLU, MaxPool1d,
    AdaptiveAvgPool1d (1), Linear."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 8, 9, stride=4, padding=4), nn.BatchNorm1d(8),
            nn.ReLU(), nn.MaxPool1d(4),
            nn.Conv1d(8, 16, 3, padding=1), nn.BatchNorm1d(16), nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Conv1d(16, 16, 3, padding=1), nn.BatchNorm1d(16), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1))
        self.fc = nn.Linear(16, 6)

    def forward(self, x):
        return self.fc(self.net(x).squeeze(-1))


def write_zoo():
    torch.manual_seed(44)
    mnv2, rn18, rn18c = zoo_models()
    dscnn, audio = DSCNN(), AudioConv1D()
    for opset in (13, 17):
        write("mobilenet_v2_train_op%d" % opset, mnv2, (3, 16, 16), opset,
              True)
        write("dscnn_train_op%d" % opset, dscnn, (1, 49, 10), opset, True)
        write("audio1d_train_op%d" % opset, audio, (1, 256), opset, True)
    write("resnet18_train_op13", rn18, (3, 16, 16), 13, True)
    write("resnet18_cifar_train_op17", rn18c, (3, 16, 16), 17, True)
    # evaluation mode: batch normalization folded into the convolutions, so
    # training trains another model than PyTorch's: logits only
    write("mobilenet_v2_op13", mnv2, (3, 16, 16), 13, False, losses=False)


class LSTMLast(nn.Module):
    """nn.LSTM (batch_first) on [N, T, F], its last step's output into a
    Linear (out[:, -1, :])."""

    def __init__(self, features=6, hidden=8, classes=4, bidirectional=False,
                 layers=1):
        super().__init__()
        self.rnn = nn.LSTM(features, hidden, batch_first=True,
                           bidirectional=bidirectional, num_layers=layers)
        self.fc = nn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1, :])


class GRUHidden(nn.Module):
    """nn.GRU (batch_first) on [N, T, F], its final hidden state h_n into a
    Linear."""

    def __init__(self, features=6, hidden=8, classes=4):
        super().__init__()
        self.rnn = nn.GRU(features, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        _, h = self.rnn(x)
        return self.fc(h[0])


class GRULast(GRUHidden):
    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(torch.relu(out[:, -1]))


class GRUStep(GRUHidden):
    """A middle step of the sequence (out[:, 2]): the engine's slice."""

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, 2])


class LSTMCell(LSTMLast):
    def forward(self, x):
        _, (_, c) = self.rnn(x)
        return self.fc(c[0])


class GRUState(GRUHidden):
    def forward(self, x, h):
        out, _ = self.rnn(x, h)
        return self.fc(out[:, -1])


class LSTMHidden(LSTMLast):
    def forward(self, x):
        _, (h, _) = self.rnn(x)
        return self.fc(h.squeeze(0))


class EmbedLSTM(nn.Module):
    """A text classifier: nn.Embedding on int64 token indices [N, W], an
    LSTM, its last step into a Linear."""

    def __init__(self, vocab=20, dim=6, hidden=8, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.LSTM(dim, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.rnn(self.emb(x))
        return self.fc(out[:, -1, :])


def write_rnn():
    torch.manual_seed(45)
    lstm, gruh, grul, lstmh = LSTMLast(), GRUHidden(), GRULast(), LSTMHidden()
    emb = EmbedLSTM()
    for opset in (13, 17):
        write("lstm_last_op%d" % opset, lstm, (5, 6), opset, False)
        write("gru_hidden_op%d" % opset, gruh, (5, 6), opset, False)
    write("gru_last_op13", grul, (5, 6), 13, False)
    write("lstm_hidden_op17", lstmh, (5, 6), 17, False)
    write("embed_lstm_op13", emb, (7,), 13, False, tokens=20)
    write("embed_lstm_op17", emb, (7,), 17, False, tokens=20)
    write("lstm2_last_op13", LSTMLast(layers=2), (5, 6), 13, False)
    write("gru_step_op17", GRUStep(), (5, 6), 17, False)
    # refused: a bidirectional LSTM, its cell state read, an initial state
    # given as an input
    bad = os.path.join(HERE, "bad")
    x = torch.randn(2, 5, 6)
    for name, m, args in (("lstm_bidirectional", LSTMLast(bidirectional=True),
                           (x,)),
                          ("lstm_cell_state", LSTMCell(), (x,)),
                          ("gru_initial_state", GRUState(),
                           (x, torch.zeros(1, 2, 8)))):
        buf = io.BytesIO()
        torch.onnx.export(m.eval(), args, buf, opset_version=13,
                          do_constant_folding=False,
                          input_names=["x", "h0"][:len(args)],
                          output_names=["y"])
        with open(os.path.join(bad, name + ".onnx"), "wb") as f:
            f.write(buf.getvalue())


# ---- more operators on activations (ext/onnx/onnx_map_ops.c) -----------
class Deconv(nn.Module):
    """ConvTranspose: grouped, stride 2 with output_padding; dilated,
    without bias."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(1, 4, 3, stride=2, padding=1)
        self.d1 = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1,
                                     output_padding=1, groups=2)
        self.d2 = nn.ConvTranspose2d(4, 2, 2, dilation=2, bias=False)
        self.fc = nn.Linear(2 * 10 * 10, 3)

    def forward(self, x):
        x = torch.relu(self.c(x))
        x = torch.relu(self.d1(x))
        return self.fc(torch.flatten(self.d2(x), 1))


class ConcatUp(nn.Module):
    """Concat over channels and height, nearest and bilinear
    (align_corners=False) upsampling by 2, a Slice of rows."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(2, 3, 3, padding=1)
        self.b = nn.Conv2d(2, 2, 1)
        self.c = nn.Conv2d(5, 3, 3)
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        x = torch.cat([torch.relu(self.a(x)), torch.tanh(self.b(x))], 1)
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        x = self.c(x)
        x = F.interpolate(x, scale_factor=2, mode="bilinear",
                          align_corners=False)
        x = torch.cat([x, x[:, :, 1:4]], 2)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class SqueezeExcite(nn.Module):
    """x * sigmoid(fc(pool(x))) (Mul broadcasting [N, C, 1, 1]), an Add
    broadcasting the gate back, an Unsqueeze of [N, F] and a Concat over
    the width."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 4, 3, padding=1)
        self.f1 = nn.Conv2d(4, 2, 1)
        self.f2 = nn.Conv2d(2, 4, 1)
        self.fc = nn.Linear(10, 3)
        self.side = nn.Linear(4, 5)

    def forward(self, x):
        x = torch.relu(self.c(x))
        g = torch.sigmoid(self.f2(torch.relu(self.f1(
            F.adaptive_avg_pool2d(x, 1)))))
        x = x * g + g
        p = F.adaptive_avg_pool2d(x, 1).flatten(1)
        s = torch.tanh(self.side(p)).unsqueeze(1)
        t = torch.relu(self.side(p)).unsqueeze(1)
        return self.fc(torch.cat([s, t], 2).flatten(1))


class RNNLast(nn.Module):
    """nn.RNN (tanh, batch_first): out[:, -1] or h_n[0] into a Linear."""

    def __init__(self, hidden=False, nonlinearity="tanh"):
        super().__init__()
        self.hidden = hidden
        self.rnn = nn.RNN(6, 8, batch_first=True, nonlinearity=nonlinearity)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        out, h = self.rnn(x)
        return self.fc(h[0] if self.hidden else out[:, -1])


class SplitGate(nn.Module):
    """Split (torch.split into equal parts) gating one half by the other,
    torch.chunk (Slices whose bounds are Shape arithmetic), an Unsqueeze
    of [N, F] to [N, F, 1] (a reshape) before a Conv1d."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(2, 4, 3, padding=1)
        self.c1 = nn.Conv1d(2, 3, 1)
        self.fc = nn.Linear(7, 3)

    def forward(self, x):
        a, b = torch.split(torch.relu(self.c(x)), 2, 1)
        p = F.adaptive_avg_pool2d(a * torch.sigmoid(b), 1).flatten(1)
        q = torch.tanh(self.c1(p.unsqueeze(2))).flatten(1)
        top, bottom = torch.chunk(x, 2, 2)
        r = F.adaptive_avg_pool2d(top * bottom, 1).flatten(1)
        return self.fc(torch.cat([q, p, r], 1))


def write_ops():
    torch.manual_seed(46)
    dec, cu, se = Deconv(), ConcatUp(), SqueezeExcite()
    for opset in (13, 17):
        write("deconv_op%d" % opset, dec, (1, 8, 8), opset, False)
        write("concat_up_op%d" % opset, cu, (2, 5, 5), opset, False)
        write("se_op%d" % opset, se, (3, 6, 6), opset, False)
    write("rnn_last_op13", RNNLast(), (5, 6), 13, False)
    write("rnn_hidden_op17", RNNLast(hidden=True), (5, 6), 17, False)
    write("split_op13", SplitGate(), (2, 4, 4), 13, False)
    write("split_op17", SplitGate(), (2, 4, 4), 17, False)
    write_ops_bad()


class OpsBad(nn.Module):
    """One operator with an attribute value the importer refuses."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.d = nn.ConvTranspose2d(2, 2, 3, stride=2, output_padding=1)

    def forward(self, x):
        if self.kind == "deconv_output_padding":
            return self.d(x)
        if self.kind == "resize_align_corners":
            return F.interpolate(x, scale_factor=2, mode="bilinear",
                                 align_corners=True)
        if self.kind == "resize_fraction":
            return F.interpolate(x, scale_factor=1.5, mode="nearest")
        if self.kind == "slice_step":
            return x[:, :, ::2]
        if self.kind == "split_unequal":
            a, b = torch.split(x, [1, 3], 2)
            return torch.cat([b, a], 2)
        return x * 2.0          # mul_constant


def write_ops_bad():
    torch.manual_seed(47)
    bad = os.path.join(HERE, "bad")
    for kind in ("deconv_output_padding", "resize_align_corners",
                 "resize_fraction", "slice_step", "mul_constant",
                 "split_unequal"):
        buf = io.BytesIO()
        torch.onnx.export(OpsBad(kind).eval(), torch.randn(2, 2, 4, 4), buf,
                          opset_version=13, do_constant_folding=False,
                          input_names=["x"], output_names=["y"])
        with open(os.path.join(bad, "ops_%s.onnx" % kind), "wb") as f:
            f.write(buf.getvalue())
    buf = io.BytesIO()
    torch.onnx.export(RNNLast(nonlinearity="relu").eval(),
                      torch.randn(2, 5, 6), buf, opset_version=13,
                      do_constant_folding=False, input_names=["x"],
                      output_names=["y"])
    with open(os.path.join(bad, "ops_rnn_relu.onnx"), "wb") as f:
        f.write(buf.getvalue())


def main():
    # "zoo": only those fixtures (onnxrnn)
    if sys.argv[1:] == ["zoo"]:
        return write_zoo()
    if sys.argv[1:] == ["rnn"]:
        return write_rnn()
    if sys.argv[1:] == ["ops"]:
        return write_ops()
    torch.manual_seed(1)
    mlp, cnn, res, dws, c1d, mlpd = (MLP(), CNN(), Residual(), DWSep(),
                                     Conv1D(), MLPDropout())
    # a BN whose moving statistics are not the initial ones
    with torch.no_grad():
        cnn.bn.running_mean.uniform_(-0.2, 0.2)
        cnn.bn.running_var.uniform_(0.5, 1.5)
        cnn.bn.weight.uniform_(0.5, 1.5)
        cnn.bn.bias.uniform_(-0.2, 0.2)
    resd = ResidualDown()
    folded = Folded()
    mlps = MLPSoftmax()
    c1dp = Conv1DPool()
    for opset in (13, 17):
        write("mlp_op%d" % opset, mlp, (12,), opset, False)
        write("cnn_train_op%d" % opset, cnn, (1, 8, 8), opset, True)
        write("residual_op%d" % opset, res, (3, 6, 6), opset, False,
              dynamic=True)
        write("dwsep_op%d" % opset, dws, (3, 6, 6), opset, False)
    write("conv1d_op13", c1d, (2, 10), 13, False)
    write("residual_down_op15", resd, (2, 6, 6), 15, False)
    write("folded_op14", folded, (1, 6, 6), 14, False, fold=True)
    write("mlp_softmax_op13", mlps, (6,), 13, False, probs=True)
    write("conv1d_pool_op17", c1dp, (2, 11), 17, False)
    write("mlp_dropout_train_op13", mlpd, (12,), 13, True, losses=False)
    write_bad()
    write_transformers()
    write_zoo()
    write_rnn()
    write_ops()


if __name__ == "__main__":
    sys.exit(main())
