#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tensor-trainer import: an ONNX fixture (tests/onnx/) imported from the
# command line, then trained with `train OUT.ini --load OUT.bin` on a small
# IDX data set, planned at the bound; its options (--loss, --optimizer,
# --learning-rate, --batch) in the INI; --freeze's layers keep their
# weights; -o OUT.ttb writes a bundle of the same weights; refusals (an
# unsupported operator, an -o that is not .ini, a bad option value, a
# --freeze name that matches nothing or part of a layer) print one
# message, exit 1 and write nothing.
#
# usage: test_cli_import.sh TENSOR_TRAINER SOURCE_ROOT
set -uo pipefail
cli=$1 src=$2
passed=0 failed=0
tmp=$(mktemp -d /tmp/tt-cli-import-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")

# 12 random 8x8 images, labels 0..2 in turn (the CNN fixture's shapes)
{ printf '\x00\x00\x08\x03'; be32 12; be32 8; be32 8
  head -c $((12 * 64)) /dev/urandom; } > "$tmp/images.idx"
{ printf '\x00\x00\x08\x01'; be32 12
  for i in $(seq 0 11); do printf "\\x$(printf %02x $((i % 3)))"; done
} > "$tmp/labels.idx"

check "import" $cli import "$src/tests/onnx/cnn_train_op13.onnx" \
  -o "$tmp/cnn.ini" --optimizer adam --learning-rate 0.01 --batch 4
check "the BIN beside the INI" test -s "$tmp/cnn.bin"
check "options in the INI" grep -q "^type = adam$" "$tmp/cnn.ini"
check "learning rate" grep -q "^learning_rate = 0.01$" "$tmp/cnn.ini"
check "batch" grep -q "^batch_size = 4$" "$tmp/cnn.ini"
check "loss (nntrainer's form)" grep -q "^loss = cross$" "$tmp/cnn.ini"
check "final softmax layer" grep -q "^activation = softmax$" "$tmp/cnn.ini"
$cli train "$tmp/cnn.ini" --load "$tmp/cnn.bin" --data "$tmp/images.idx" \
  --labels "$tmp/labels.idx" --epochs 2 > "$tmp/train.out" 2>&1
check "train from the imported weights" test $? -eq 0
check "two epochs" test "$(grep -c 'loss=' "$tmp/train.out")" -eq 2
$cli plan "$tmp/cnn.ini" -o "$tmp/cnn.opt.ini" > "$tmp/plan.out" 2>&1
check "plan" test $? -eq 0
$cli import "$src/tests/onnx/residual_op17.onnx" -o "$tmp/res.ini" \
  > /dev/null 2>&1
$cli plan "$tmp/res.ini" -o "$tmp/res.opt.ini" > "$tmp/plan.out" 2>&1
check "residual planned at the bound" grep -q "1.0000 x bound" \
  "$tmp/plan.out"
# transformer encoders (onnx_map_tf.c): two layers, planned at the bound
$cli import "$src/tests/onnx/tf_two_gelu_op13.onnx" -o "$tmp/tf.ini" \
  > /dev/null 2>&1
$cli plan "$tmp/tf.ini" -o "$tmp/tf.opt.ini" > "$tmp/plan.out" 2>&1
check "transformer planned at the bound" grep -q "1.0000 x bound" \
  "$tmp/plan.out"
# recurrent and embedding (onnxrnn): an Embedding + LSTM text classifier
$cli import "$src/tests/onnx/embed_lstm_op13.onnx" -o "$tmp/emb.ini" \
  > /dev/null 2>&1
$cli plan "$tmp/emb.ini" -o "$tmp/emb.opt.ini" > "$tmp/plan.out" 2>&1
check "embedding + lstm planned at the bound" grep -q "1.0000 x bound" \
  "$tmp/plan.out"

# --freeze: layers named by module path (c1: c1.weight, c1.bias) or by
# section (bn_BatchNormalization) get trainable = false and keep their
# weights bit for bit while the rest trains. BIN order: c1 filter (36
# floats) and bias (4), bn moving mean, variance, gamma, beta (4 each),
# c2 filter (216), fc weight (36) and bias (3).
check "import --freeze" $cli import "$src/tests/onnx/cnn_train_op17.onnx" \
  -o "$tmp/frz.ini" --freeze c1,bn_BatchNormalization --batch 4
check "frozen layers in the INI" test "$(grep -c '^trainable = false$' \
  "$tmp/frz.ini")" -eq 2
check "c1 frozen" awk '/^\[c1_Conv\]/{s=1} s&&/^trainable = false/{f=1}
  s&&/^$/{exit} END{exit !f}' "$tmp/frz.ini"
$cli train "$tmp/frz.ini" --load "$tmp/frz.bin" --data "$tmp/images.idx" \
  --labels "$tmp/labels.idx" --epochs 2 --save "$tmp/frz_trained.bin" \
  > "$tmp/train.out" 2>&1
check "train the frozen import" test $? -eq 0
check "c1 unchanged" cmp -s -n 160 "$tmp/frz.bin" "$tmp/frz_trained.bin"
check "bn gamma and beta unchanged" cmp -s -i 192:192 -n 32 "$tmp/frz.bin" \
  "$tmp/frz_trained.bin"
check "fc trained" bash -c "! cmp -s -i 1120:1120 '$tmp/frz.bin' \
  '$tmp/frz_trained.bin'"
# -o OUT.ttb: a bundle (INI, plan for --batch, the same weights)
check "import to a bundle" $cli import "$src/tests/onnx/cnn_train_op17.onnx" \
  -o "$tmp/cnn.ttb" --batch 4
check "the bundle checks" $cli check "$tmp/cnn.ttb"
check "unpack" $cli unpack "$tmp/cnn.ttb" -o "$tmp/unpacked"
check "import to INI and BIN" $cli import \
  "$src/tests/onnx/cnn_train_op17.onnx" -o "$tmp/cnn17.ini" --batch 4
# (unpack's BIN ends with the bundle's training counters, 8 bytes more)
check "bundle's weights are the BIN's" cmp -n "$(stat -c %s \
  "$tmp/cnn17.bin")" "$tmp/unpacked/model.bin" "$tmp/cnn17.bin"
$cli train "$tmp/cnn.ttb" --data "$tmp/images.idx" --labels \
  "$tmp/labels.idx" --epochs 1 > "$tmp/train.out" 2>&1
check "train the bundle" test $? -eq 0

# the imported INIs nntrainer was given (tests/interop/nntrainer/models/
# families/onnx_*.ini, recorded against a real nntrainer) are what import
# writes today, so the recordings still speak for the importer
fam=$src/tests/interop/nntrainer/models/families
for ini in "$fam"/onnx_*.ini; do
  name=$(basename "$ini" .ini)
  $cli import "$src/tests/onnx/${name#onnx_}.onnx" -o "$tmp/$name.ini" \
    --batch 4 --learning-rate 0.1 > /dev/null 2>&1
  check "$name: import writes the recorded INI" cmp -s \
    <(grep -v '^# record.cc:' "$ini") "$tmp/$name.ini"
done

# refusals: exit 1, one line, nothing written
refuse () {     # refuse WHAT PATTERN ARGS...
  local what=$1 pattern=$2; shift 2
  rm -f "$tmp/out.ini" "$tmp/out.bin"
  $cli "$@" > "$tmp/err.out" 2>&1
  check "$what: exit 1" test $? -eq 1
  check "$what: message" grep -q "$pattern" "$tmp/err.out"
  check "$what: one line" test "$(wc -l < "$tmp/err.out")" -eq 1
  check "$what: nothing written" test ! -e "$tmp/out.ini" -a ! -e "$tmp/out.bin"
}
refuse "unsupported operator" "operator Exp is not supported" import \
  "$src/tests/onnx/bad/unsupported_op.onnx" -o "$tmp/out.ini"
refuse "not .ini" "must end in .ini" import \
  "$src/tests/onnx/mlp_op13.onnx" -o "$tmp/out.txt"
refuse "loss" "allowed are cross_softmax, cross_sigmoid, mse" import \
  "$src/tests/onnx/mlp_op13.onnx" -o "$tmp/out.ini" --loss kld
refuse "learning rate" "learning-rate needs a number above 0" import \
  "$src/tests/onnx/mlp_op13.onnx" -o "$tmp/out.ini" --learning-rate -1
refuse "no -o" "import needs -o OUT.ini" import \
  "$src/tests/onnx/mlp_op13.onnx"
refuse "freeze part of a layer" "would freeze only some of its weights" \
  import "$src/tests/onnx/cnn_train_op17.onnx" -o "$tmp/out.ini" \
  --freeze c1.weight
refuse "freeze an unknown name" "no layer and no initializer" import \
  "$src/tests/onnx/cnn_train_op17.onnx" -o "$tmp/out.ini" --freeze nope
refuse "freeze a layer without weights" "has no weights to freeze" import \
  "$src/tests/onnx/cnn_train_op17.onnx" -o "$tmp/out.ini" --freeze Relu
refuse "freeze an empty name" "an empty name" import \
  "$src/tests/onnx/cnn_train_op17.onnx" -o "$tmp/out.ini" --freeze c1,,bn

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
