/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two small models fuzz_bin.c and fuzz_bundle.c load weights into (the
 * bundle seeds are bundles of them): a conv2d + batch_normalization +
 * fully_connected model with Adam (weights, the "adam" tag and moments,
 * counters) and a fully_connected model with SGD and momentum.
 */
#ifndef FUZZ_MODELS_H
#define FUZZ_MODELS_H

static const char *const fuzz_models[2] = {
  "[Model]\ntype = NeuralNetwork\nbatch_size = 2\nloss = cross\n"
      "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
      "[input]\ntype = input\ninput_shape = 1:4:4\n"
      "[conv]\ntype = conv2d\nfilters = 2\nkernel_size = 3,3\n"
      "padding = same\n"
      "[bn]\ntype = batch_normalization\nactivation = relu\n"
      "[flat]\ntype = flatten\n"
      "[out]\ntype = fully_connected\nunit = 3\nactivation = softmax\n",
  "[Model]\ntype = NeuralNetwork\nbatch_size = 2\nloss = mse\n"
      "[Optimizer]\ntype = sgd\nlearning_rate = 0.1\nmomentum = 0.9\n"
      "[input]\ntype = input\ninput_shape = 1:1:5\n"
      "[hidden]\ntype = fully_connected\nunit = 4\nactivation = tanh\n"
      "[out]\ntype = fully_connected\nunit = 2\n",
};

#endif
