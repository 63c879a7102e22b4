#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Write the model zoo's INIs (tests/models/zoo_*.ini) in nntrainer's dialect.

The zoo is the standard on-device models, written down layer by layer as
their reference implementations build them (torchvision's MobileNetV2,
MLPerf Tiny's DS-CNN, visual-wake-words MobileNetV1 and ResNet-8, and its
anomaly-detection autoencoder). The INIs are generated because they are
long and regular; they are committed so that a reader sees the model.

usage: scripts/gen-zoo.py [--check]   (from the repository root)
  --check: write nothing; exit 1 if a committed INI differs from what this
  script writes.
"""
import os
import sys


class Ini:
    def __init__(self, comment, batch, loss, lr, epochs=None):
        self.lines = ["# " + l if l else "#" for l in comment.strip().split("\n")]
        self.lines += ["# Written by scripts/gen-zoo.py: edit the script, not this file.",
                       "[Model]", "type = NeuralNetwork", "batch_size = %d" % batch]
        if epochs:
            self.lines.append("epochs = %d" % epochs)
        self.lines += ["loss = %s" % loss, "", "[Optimizer]", "type = adam",
                       "learning_rate = %g" % lr, ""]
        self.last = None

    def layer(self, name, type_, **keys):
        self.lines.append("[%s]" % name)
        self.lines.append("type = %s" % type_)
        for k, v in keys.items():
            self.lines.append("%s = %s" % (k, v))
        self.lines.append("")
        self.last = name
        return name

    def conv_bn(self, name, filters, kernel, stride=1, padding="same",
                act="relu", depthwise=False, input_layers=None):
        keys = {}
        if input_layers:
            keys["input_layers"] = input_layers
        keys["filters"] = filters
        keys["kernel_size"] = "%d,%d" % kernel
        if stride != 1:
            keys["stride"] = "%d,%d" % (stride, stride)
        keys["padding"] = padding
        keys["disable_bias"] = "true"
        self.layer(name, "depthwiseconv2d" if depthwise else "conv2d", **keys)
        bn = {"epsilon": "1e-5", "momentum": "0.9"}
        if act:
            bn["activation"] = act
        return self.layer(name + "_bn", "batch_normalization", **bn)

    def text(self):
        return "\n".join(self.lines).rstrip("\n") + "\n"


def make_divisible(v, divisor=8):
    # torchvision's rounding of channel counts under a width multiplier
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def mobilenet_v2(width=0.35, size=96, classes=10):
    ini = Ini("""MobileNetV2, width 0.35, on 96x96 RGB images, 10 classes: torchvision's
mobilenet_v2(width_mult=0.35) layer by layer (channels rounded to multiples
of 8 as torchvision rounds them; every convolution without bias, followed
by batch normalization; ReLU6; the last 1x1 convolution keeps 1280
channels; dropout 0.2 before the classifier).""", 8, "cross", 0.001)
    ini.layer("input", "input", input_shape="3:%d:%d" % (size, size))
    ch = make_divisible(32 * width)
    prev = ini.conv_bn("stem", ch, (3, 3), 2, "same", "relu6")
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    block = 0
    for t, c, n, s in settings:
        out = make_divisible(c * width)
        for i in range(n):
            stride = s if i == 0 else 1
            name = "b%d" % block
            block_in = prev
            hidden = int(round(ch * t))
            if t != 1:
                prev = ini.conv_bn(name + "_expand", hidden, (1, 1), 1, "0", "relu6")
            prev = ini.conv_bn(name + "_dw", hidden, (3, 3), stride, "same",
                               "relu6", depthwise=True)
            prev = ini.conv_bn(name + "_project", out, (1, 1), 1, "0", None)
            if stride == 1 and ch == out:
                prev = ini.layer(name + "_add", "addition",
                                 input_layers="%s, %s" % (block_in, prev))
            ch = out
            block += 1
    ini.conv_bn("head", 1280, (1, 1), 1, "0", "relu6")
    ini.layer("pool", "pooling2d", pooling="global_average")
    ini.layer("flat", "flatten")
    ini.layer("drop", "dropout", dropout_rate="0.2")
    ini.layer("classifier", "fully_connected", unit=classes, activation="softmax")
    return ini.text()


def ds_cnn(classes=12):
    ini = Ini("""MLPerf Tiny's keyword spotter, DS-CNN (small): 49x10 MFCC features in,
12 classes out. A 10x4 convolution of stride 2, four depthwise-separable
blocks of 64 channels (3x3 depthwise, 1x1 pointwise, each with batch
normalization and ReLU), dropout 0.4, average pooling over the whole
25x5 map, and the classifier.""", 32, "cross", 0.001)
    ini.layer("input", "input", input_shape="1:49:10")
    ini.conv_bn("conv1", 64, (10, 4), 2, "same", "relu")
    ini.layer("drop1", "dropout", dropout_rate="0.2")
    for i in range(4):
        ini.conv_bn("dw%d" % (i + 1), 64, (3, 3), 1, "same", "relu", depthwise=True)
        ini.conv_bn("pw%d" % (i + 1), 64, (1, 1), 1, "0", "relu")
    ini.layer("drop2", "dropout", dropout_rate="0.4")
    ini.layer("pool", "pooling2d", pooling="global_average")
    ini.layer("flat", "flatten")
    ini.layer("classifier", "fully_connected", unit=classes, activation="softmax")
    return ini.text()


def vww_mobilenet_v1(width=0.25, size=96, classes=2):
    ini = Ini("""MLPerf Tiny's visual wake words model: MobileNetV1, width 0.25, on 96x96
RGB images, 2 classes (person, no person). A 3x3 convolution of stride 2,
thirteen depthwise-separable blocks (3x3 depthwise and 1x1 pointwise, each
with batch normalization and ReLU), global average pooling and the
classifier.""", 16, "cross", 0.001)
    ini.layer("input", "input", input_shape="3:%d:%d" % (size, size))
    ini.conv_bn("stem", int(32 * width), (3, 3), 2, "same", "relu")
    ch = int(32 * width)
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + \
        [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for i, (c, s) in enumerate(blocks):
        ini.conv_bn("dw%d" % (i + 1), ch, (3, 3), s, "same", "relu", depthwise=True)
        ch = int(c * width)
        ini.conv_bn("pw%d" % (i + 1), ch, (1, 1), 1, "0", "relu")
    ini.layer("pool", "pooling2d", pooling="global_average")
    ini.layer("flat", "flatten")
    ini.layer("classifier", "fully_connected", unit=classes, activation="softmax")
    return ini.text()


def resnet8(classes=10):
    ini = Ini("""MLPerf Tiny's image classifier, ResNet-8, on 32x32 RGB images (CIFAR-10),
10 classes: a 3x3 convolution of 16 channels, three residual stacks of
16, 32 and 64 channels (the second and third of stride 2, with a 1x1
convolution of stride 2 on the shortcut), average pooling over the 8x8
map and the classifier.""", 32, "cross", 0.001)
    ini.layer("input", "input", input_shape="3:32:32")
    prev = ini.conv_bn("conv1", 16, (3, 3), 1, "same", "relu")
    for stack, (c, s) in enumerate([(16, 1), (32, 2), (64, 2)], start=1):
        n = "s%d" % stack
        a = ini.conv_bn(n + "_a", c, (3, 3), s, "same", "relu", input_layers=prev)
        b = ini.conv_bn(n + "_b", c, (3, 3), 1, "same", None, input_layers=a)
        shortcut = prev
        if s != 1:
            ini.layer(n + "_short", "conv2d", input_layers=prev, filters=c,
                      kernel_size="1,1", stride="%d,%d" % (s, s), padding="0")
            shortcut = n + "_short"
        prev = ini.layer(n + "_add", "addition", input_layers="%s, %s" % (shortcut, b),
                         activation="relu")
    ini.layer("pool", "pooling2d", pooling="global_average")
    ini.layer("flat", "flatten")
    ini.layer("classifier", "fully_connected", unit=classes, activation="softmax")
    return ini.text()


def resnet18(classes=10):
    ini = Ini("""ResNet-18 with the CIFAR stem, on 32x32 RGB images, 10 classes: a 3x3
convolution of 64 channels (no max pooling), four stages of two basic
blocks of 64, 128, 256 and 512 channels (the last three starting at
stride 2, with a 1x1 convolution of stride 2 and batch normalization on
the shortcut), global average pooling and the classifier.""", 32,
              "cross", 0.001)
    ini.layer("input", "input", input_shape="3:32:32")
    prev = ini.conv_bn("conv1", 64, (3, 3), 1, "same", "relu")
    ch = 64
    for stage, c in enumerate([64, 128, 256, 512], start=1):
        for block in range(2):
            s = 2 if stage > 1 and block == 0 else 1
            n = "l%d_%d" % (stage, block)
            a = ini.conv_bn(n + "_a", c, (3, 3), s, "same", "relu", input_layers=prev)
            b = ini.conv_bn(n + "_b", c, (3, 3), 1, "same", None, input_layers=a)
            shortcut = prev
            if s != 1 or ch != c:
                shortcut = ini.conv_bn(n + "_short", c, (1, 1), s, "0", None,
                                       input_layers=prev)
            prev = ini.layer(n + "_add", "addition",
                             input_layers="%s, %s" % (shortcut, b), activation="relu")
            ch = c
    ini.layer("pool", "pooling2d", pooling="global_average")
    ini.layer("flat", "flatten")
    ini.layer("classifier", "fully_connected", unit=classes, activation="softmax")
    return ini.text()


def transformer_fmnist(dim=64, heads=4, blocks=2, ffn=128, classes=10):
    ini = Ini("""A transformer encoder classifier for 28x28 grey images (Fashion-MNIST):
patch embedding (a 7x7 convolution of stride 7: 16 patches of 64
features, turned into 16 tokens by reshape and permute), sinusoidal
positional encoding, two post-norm encoder blocks (4-head self-attention,
residual, layer normalization; a feed-forward of 128 with GELU and back to
64, residual, layer normalization: PyTorch's nn.TransformerEncoderLayer
with norm_first=False), the mean over the tokens and the classifier.
8 epochs on the 60,000 training images: about 87% on the 10,000 test
images (pipelines/train-fashion-mnist.sh tests/models/zoo_transformer.ini).""",
              32, "cross", 0.001, epochs=8)
    ini.layer("input", "input", input_shape="1:28:28", normalization="true")
    ini.layer("patches", "conv2d", filters=dim, kernel_size="7,7", stride="7,7")
    ini.layer("rows", "reshape", target_shape="%d:1:16" % dim)
    ini.layer("tokens", "permute", direction="2,3,1")
    prev = ini.layer("pe", "positional_encoding", max_timestep=16)
    for b in range(1, blocks + 1):
        n = "enc%d" % b
        ini.layer(n + "_attn", "multi_head_attention",
                  input_layers="%s, %s, %s" % (prev, prev, prev), num_heads=heads)
        ini.layer(n + "_res1", "addition", input_layers="%s, %s_attn" % (prev, n))
        ini.layer(n + "_norm1", "layer_normalization", axis=3, epsilon="1e-5")
        ini.layer(n + "_ff1", "fully_connected", unit=ffn, activation="gelu")
        ini.layer(n + "_ff2", "fully_connected", unit=dim)
        ini.layer(n + "_res2", "addition", input_layers="%s_norm1, %s_ff2" % (n, n))
        prev = ini.layer(n + "_norm2", "layer_normalization", axis=3, epsilon="1e-5")
    ini.layer("pool", "reduce_mean", axis=2)
    ini.layer("classifier", "fully_connected", unit=classes, activation="softmax")
    return ini.text()


def autoencoder():
    ini = Ini("""MLPerf Tiny's anomaly detector: a dense autoencoder over 640 values (5
frames of 128 log-mel energies). Four layers of 128 units, a bottleneck
of 8, four of 128, each with batch normalization and ReLU, and a linear
output of 640, trained to reproduce its input (mean squared error).""",
              32, "mse", 0.001)
    ini.layer("input", "input", input_shape="1:1:640")
    units = [128] * 4 + [8] + [128] * 4
    for i, u in enumerate(units):
        ini.layer("dense%d" % (i + 1), "fully_connected", unit=u)
        ini.layer("dense%d_bn" % (i + 1), "batch_normalization",
                  epsilon="1e-3", momentum="0.99", activation="relu")
    ini.layer("output", "fully_connected", unit=640)
    return ini.text()


ZOO = {
    "zoo_mobilenet_v2.ini": mobilenet_v2,
    "zoo_ds_cnn.ini": ds_cnn,
    "zoo_vww_mobilenet_v1.ini": vww_mobilenet_v1,
    "zoo_resnet8.ini": resnet8,
    "zoo_resnet18.ini": resnet18,
    "zoo_autoencoder.ini": autoencoder,
    "zoo_transformer.ini": transformer_fmnist,
}


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, make in ZOO.items():
        path = os.path.join("tests", "models", name)
        text = make()
        if check:
            try:
                with open(path) as f:
                    if f.read() != text:
                        stale.append(path)
            except FileNotFoundError:
                stale.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
    if stale:
        print("gen-zoo.py: differs from the script: " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
