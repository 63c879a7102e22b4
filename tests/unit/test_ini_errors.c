/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A corpus of malformed INI models. Each must be refused by
 * tt_model_load_ini() or tt_model_compile() (never crash, never leak) with
 * a message that names the file and, where one applies, the [section] and
 * key at fault. A few valid variants of nntrainer's dialect must load,
 * compile and train one batch.
 */
#include "tt_engine.h"
#include "tt_test.h"

#include <stdint.h>

#define IE_MAX_EXPECT 4

typedef enum
{ IE_LOAD, IE_COMPILE } ie_stage;

typedef struct
{
  const char *name;
  const char *ini;              /* NULL: the file is not created */
  ie_stage stage;               /* where the failure must be reported */
  /* substrings of the message; "!text": text must not be in it */
  const char *expect[IE_MAX_EXPECT];
} ie_case;

/* building blocks */
#define MODEL_MSE "[Model]\ntype = NeuralNetwork\nbatch_size = 2\n" \
  "loss = mse\n"
#define MODEL_CROSS "[Model]\ntype = NeuralNetwork\nbatch_size = 2\n" \
  "loss = cross\n"
#define ADAM "[Optimizer]\ntype = adam\nlearning_rate = 0.01\n"
#define SGD "[Optimizer]\ntype = sgd\nlearning_rate = 0.01\n"
#define INPUT4 "[in]\ntype = input\ninput_shape = 1:1:4\n"
#define INPUT_IMG "[in]\ntype = input\ninput_shape = 1:6:6\n"
#define INPUT_SEQ "[in]\ntype = input\ninput_shape = 2:1:8\n"
#define INPUT_STEPS "[in]\ntype = input\ninput_shape = 1:4:3\n"
#define LSTM(name, unit) "[" name "]\ntype = lstm\nunit = " #unit "\n"
#define GRU(name, unit) "[" name "]\ntype = gru\nunit = " #unit "\n"
#define NAME_50 "n123456789n123456789n123456789n123456789n123456789"
#define NAME_200 NAME_50 NAME_50 NAME_50 NAME_50
#define FC(name, unit) "[" name "]\ntype = fully_connected\nunit = " #unit "\n"

static const ie_case ie_cases[] = {
  /* ---- unknown keys and values ---------------------------------------- */
  {"unknown_layer_key", MODEL_MSE ADAM INPUT4 FC ("fc", 3) "units = 3\n",
      IE_LOAD, {"[fc] units", "unknown key"}},
  {"unknown_model_key", MODEL_MSE "epoch = 3\n" ADAM INPUT4 FC ("fc", 3),
      IE_LOAD, {"[model] epoch", "unknown key"}},
  {"unknown_optimizer_key", MODEL_MSE ADAM "learning_rat = 0.1\n" INPUT4
        FC ("fc", 3), IE_LOAD, {"[optimizer] learning_rat", "unknown key"}},
  {"unknown_dataset_key", MODEL_MSE ADAM "[Dataset]\ntraindata = a.dat\n"
        "batch = 3\n" INPUT4 FC ("fc", 3), IE_LOAD,
      {"[dataset] batch", "unknown key"}},
  {"last_line_continues", MODEL_MSE ADAM INPUT4 FC ("fc", 3) "\n\\\\\\",
      IE_LOAD, {"line 15, the last", "continuation", "no line follows"}},
  {"colon_in_section_name", MODEL_MSE ADAM INPUT4 FC ("plan:mode", 3),
      IE_LOAD, {"[plan:mode]", "cannot contain ':'"}},
  {"unknown_layer_type", MODEL_MSE ADAM INPUT4
        "[fc]\ntype = fully_conected\nunit = 3\n", IE_LOAD,
      {"[fc] type", "unknown layer type 'fully_conected'"}},
  {"missing_layer_type", MODEL_MSE ADAM INPUT4 "[fc]\nunit = 3\n", IE_LOAD,
      {"[fc] type", "missing key"}},
  {"unknown_model_type", "[Model]\ntype = Sequential\nloss = mse\n" ADAM
        INPUT4 FC ("fc", 3), IE_LOAD, {"[model] type", "Sequential"}},
  {"unknown_optimizer_type", MODEL_MSE "[Optimizer]\ntype = rmsprop\n"
        INPUT4 FC ("fc", 3), IE_LOAD, {"[optimizer] type", "rmsprop"}},

  /* ---- numbers --------------------------------------------------------- */
  {"unit_not_numeric", MODEL_MSE ADAM INPUT4 "[fc]\ntype = fully_connected\n"
        "unit = abc\n", IE_LOAD, {"[fc] unit", "'abc'"}},
  {"unit_negative", MODEL_MSE ADAM INPUT4 "[fc]\ntype = fully_connected\n"
        "unit = -3\n", IE_LOAD, {"[fc] unit", "'-3'"}},
  {"unit_overflow", MODEL_MSE ADAM INPUT4 "[fc]\ntype = fully_connected\n"
        "unit = 99999999999999999999\n", IE_LOAD,
      {"[fc] unit", "99999999999999999999", "out of range"}},
  {"unit_too_large", MODEL_MSE ADAM INPUT4 "[fc]\ntype = fully_connected\n"
        "unit = 4294967296\n", IE_LOAD, {"[fc] unit", "out of range"}},
  {"unit_zero", MODEL_MSE ADAM INPUT4 "[fc]\ntype = fully_connected\n"
        "unit = 0\n", IE_LOAD, {"[fc] unit", "out of range"}},
  {"unit_trailing_junk", MODEL_MSE ADAM INPUT4
        "[fc]\ntype = fully_connected\nunit = 10x\n", IE_LOAD,
      {"[fc] unit", "'10x'"}},
  {"unit_missing", MODEL_MSE ADAM INPUT4 "[fc]\ntype = fully_connected\n",
      IE_LOAD, {"[fc] unit", "missing key"}},
  {"filters_zero", MODEL_MSE ADAM INPUT_IMG "[conv]\ntype = conv2d\n"
        "filters = 0\nkernel_size = 3,3\n", IE_LOAD,
      {"[conv] filters", "out of range"}},
  {"batch_size_zero", "[Model]\ntype = NeuralNetwork\nbatch_size = 0\n"
        "loss = mse\n" ADAM INPUT4 FC ("fc", 3), IE_LOAD,
      {"[model] batch_size", "out of range"}},
  {"epochs_fraction", "[Model]\ntype = NeuralNetwork\nepochs = 1.5\n"
        "loss = mse\n" ADAM INPUT4 FC ("fc", 3), IE_LOAD,
      {"[model] epochs", "'1.5'"}},
  {"learning_rate_zero", MODEL_MSE "[Optimizer]\ntype = adam\n"
        "learning_rate = 0\n" INPUT4 FC ("fc", 3), IE_LOAD,
      {"[optimizer] learning_rate", "positive"}},
  {"learning_rate_negative", MODEL_MSE "[Optimizer]\ntype = sgd\n"
        "learning_rate = -0.1\n" INPUT4 FC ("fc", 3), IE_LOAD,
      {"[optimizer] learning_rate", "positive"}},
  {"learning_rate_not_numeric", MODEL_MSE "[Optimizer]\ntype = sgd\n"
        "learning_rate = fast\n" INPUT4 FC ("fc", 3), IE_LOAD,
      {"[optimizer] learning_rate", "'fast'"}},
  {"learning_rate_infinite", MODEL_MSE "[Optimizer]\ntype = sgd\n"
        "learning_rate = 1e999\n" INPUT4 FC ("fc", 3), IE_LOAD,
      {"[optimizer] learning_rate", "finite"}},
  {"beta1_one", MODEL_MSE "[Optimizer]\ntype = adam\nbeta1 = 1\n" INPUT4
        FC ("fc", 3), IE_LOAD, {"[optimizer] beta1", "[0, 1)"}},
  {"momentum_with_adam", MODEL_MSE "[Optimizer]\ntype = adam\n"
        "momentum = 0.9\n" INPUT4 FC ("fc", 3), IE_LOAD,
      {"[optimizer] momentum", "sgd"}},
  /* (an [Optimizer] without type is adam, as in nntrainer:
   * test_nntrainer_dialect.c) */

  /* ---- booleans and enums --------------------------------------------- */
  {"bad_boolean", MODEL_MSE ADAM INPUT4 FC ("fc", 3) "trainable = maybe\n",
      IE_LOAD, {"[fc] trainable", "'maybe'", "boolean"}},
  {"bad_activation", MODEL_MSE ADAM INPUT4 FC ("fc", 3) "activation = foo\n",
      IE_LOAD, {"[fc] activation", "'foo'", "relu"}},
  {"bad_activation_layer", MODEL_MSE ADAM INPUT4
        "[act]\ntype = activation\nactivation = foo\n", IE_LOAD,
      {"[act] activation", "'foo'"}},
  {"bad_pooling", MODEL_MSE ADAM INPUT_IMG "[pool]\ntype = pooling2d\n"
        "pooling = mean\npool_size = 2,2\n", IE_LOAD,
      {"[pool] pooling", "'mean'", "average"}},
  {"bad_initializer", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "weight_initializer = glorot\n", IE_LOAD,
      {"[fc] weight_initializer", "'glorot'"}},
  {"regularizer_l1", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "weight_regularizer = l1\n", IE_LOAD,
      {"[fc] weight_regularizer", "'l1'", "l2norm"}},
  {"bad_loss", "[Model]\ntype = NeuralNetwork\nloss = hinge\n" ADAM INPUT4
        FC ("fc", 3), IE_LOAD, {"[model] loss", "'hinge'"}},

  /* ---- shapes ---------------------------------------------------------- */
  {"input_shape_5d", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 1:1:1:4:4\n" FC ("fc", 3), IE_LOAD,
      {"[in] input_shape", "more than 4"}},
  {"input_shape_zero", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 1:0:4\n" FC ("fc", 3), IE_LOAD,
      {"[in] input_shape", "out of range"}},
  {"input_shape_batch", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 8:1:1:4\n" FC ("fc", 3), IE_LOAD,
      {"[in] input_shape", "batch_size"}},
  {"input_shape_junk", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 1x28x28\n" FC ("fc", 3), IE_LOAD,
      {"[in] input_shape", "'1x28x28'"}},
  {"missing_first_input_shape", MODEL_MSE ADAM FC ("fc", 3), IE_COMPILE,
      {"[fc] input_shape", "missing key"}},
  {"input_without_shape", MODEL_MSE ADAM "[in]\ntype = input\n" FC ("fc", 3),
      IE_COMPILE, {"[in] input_shape", "missing key"}},
  {"kernel_larger_than_input", MODEL_MSE ADAM INPUT_IMG
        "[conv]\ntype = conv2d\nfilters = 2\nkernel_size = 7,7\n",
      IE_COMPILE, {"[conv] kernel_size", "7x7", "1:6:6"}},
  {"pool_larger_than_input", MODEL_MSE ADAM INPUT_IMG
        "[pool]\ntype = pooling2d\npooling = max\npool_size = 8,8\n",
      IE_COMPILE, {"[pool] pool_size", "8x8", "1:6:6"}},
  {"padding_3_values", MODEL_MSE ADAM INPUT_IMG "[conv]\ntype = conv2d\n"
        "filters = 2\nkernel_size = 3,3\npadding = 1,1,1\n", IE_LOAD,
      {"[conv] padding", "3 values"}},
  {"padding_junk", MODEL_MSE ADAM INPUT_IMG "[conv]\ntype = conv2d\n"
        "filters = 2\nkernel_size = 3,3\npadding = full\n", IE_LOAD,
      {"[conv] padding", "'full'"}},
  {"kernel_3_values", MODEL_MSE ADAM INPUT_IMG "[conv]\ntype = conv2d\n"
        "filters = 2\nkernel_size = 3,3,3\n", IE_LOAD,
      {"[conv] kernel_size", "'3,3,3'"}},
  /* ---- nntrainer's older form --------------------------------------- */
  {"legacy_optimizer_and_section", "[Model]\ntype = NeuralNetwork\n"
        "batch_size = 2\nloss = mse\noptimizer = adam\n" ADAM INPUT4
        FC ("fc", 3), IE_LOAD,
      {"[model] optimizer", "optimizers specified twice", "[Optimizer]"}},
  {"legacy_optimizer_type", "[Model]\ntype = NeuralNetwork\n"
        "batch_size = 2\nloss = mse\noptimizer = rmsprop\n" INPUT4
        FC ("fc", 3), IE_LOAD, {"[model] optimizer", "rmsprop"}},
  {"legacy_decay_alone", "[Model]\ntype = NeuralNetwork\n"
        "batch_size = 2\nloss = mse\nlearning_rate = 0.1\n"
        "decay_rate = 0.9\n" INPUT4 FC ("fc", 3), IE_LOAD,
      {"[model]", "decay_rate and decay_steps go together"}},
  {"legacy_model_key_typo", "[Model]\ntype = NeuralNetwork\n"
        "batch_size = 2\nloss = mse\nlearning_rate = 0.1\n"
        "decay_step = 100\n" INPUT4 FC ("fc", 3), IE_LOAD,
      {"[model] decay_step", "unknown key"}},
  {"legacy_weight_decay_twice", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "weight_decay = l2norm\nweight_regularizer = l2norm\n", IE_LOAD,
      {"[fc] weight_decay", "older name of weight_regularizer"}},
  {"legacy_lambda_twice", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "weight_regularizer = l2norm\nweight_decay_lambda = 0.1\n"
        "weight_regularizer_constant = 0.1\n", IE_LOAD,
      {"[fc] weight_decay_lambda", "set too"}},
  {"legacy_weight_decay_word", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "weight_decay = l1norm\n", IE_LOAD,
      {"[fc] weight_decay", "'l1norm'"}},
  {"conv1d_height", MODEL_MSE ADAM INPUT_IMG "[conv]\ntype = conv1d\n"
        "filters = 2\nkernel_size = 3\n", IE_COMPILE,
      {"[conv]", "height 1 (channel:1:width)", "1:6:6"}},
  {"conv1d_kernel_pair", MODEL_MSE ADAM INPUT_SEQ "[conv]\ntype = conv1d\n"
        "filters = 2\nkernel_size = 3,3\n", IE_LOAD,
      {"[conv] kernel_size", "'3,3'"}},
  {"conv1d_missing_kernel", MODEL_MSE ADAM INPUT_SEQ "[conv]\n"
        "type = conv1d\nfilters = 2\n", IE_LOAD,
      {"[conv] kernel_size", "missing key"}},
  {"conv1d_kernel_too_wide", MODEL_MSE ADAM INPUT_SEQ "[conv]\n"
        "type = conv1d\nfilters = 2\nkernel_size = 9\n", IE_COMPILE,
      {"[conv] kernel_size", "1x9", "2:1:8"}},
  {"lstm_bidirectional", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "bidirectional = true\ndropout_rate = 0.2\n", IE_LOAD,
      {"[l] dropout_rate", "bidirectional", "allowed: 0"}},
  {"lstm_dropout", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "dropout_rate = 1\n", IE_LOAD, {"[l] dropout_rate",
          "below 1", "[0, 1)"}},
  {"lstm_dropout_negative", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "dropout_rate = -0.5\n", IE_LOAD,
      {"[l] dropout_rate", "negative"}},
  {"lstm_dropout_key", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
      "dropout = 0.2\n", IE_LOAD, {"[l] dropout", "unknown key"}},
  {"lstm_hidden_softmax", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "hidden_state_activation = softmax\n", IE_LOAD,
      {"[l] hidden_state_activation", "'softmax'", "not supported"}},
  {"lstm_recurrent_gelu", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "recurrent_activation = gelu\n", IE_LOAD,
      {"[l] recurrent_activation", "'gelu'", "not supported"}},
  {"lstm_recurrent_unknown", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "recurrent_activation = hard_sigmoid\n", IE_LOAD,
      {"[l] recurrent_activation", "'hard_sigmoid'"}},
  {"lstm_unit_missing", MODEL_MSE ADAM INPUT_STEPS "[l]\ntype = lstm\n"
        "return_sequences = true\n", IE_LOAD, {"[l] unit", "missing key"}},
  {"lstm_return_sequences_word", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "return_sequences = yes\n", IE_LOAD,
      {"[l] return_sequences", "'yes'"}},
  {"lstm_channels", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 2:4:3\n" LSTM ("l", 3), IE_COMPILE,
      {"[l]", "one channel", "2:4:3"}},
  {"lstm_max_timestep", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "max_timestep = 8\n", IE_COMPILE,
      {"[l] max_timestep", "8", "4 timesteps"}},
  {"lstm_max_timestep_zero", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
      "max_timestep = 0\n", IE_LOAD, {"[l] max_timestep", "out of range"}},
  {"gru_dropout", MODEL_MSE ADAM INPUT_STEPS GRU ("l", 3)
        "dropout_rate = 1\n", IE_LOAD, {"[l] dropout_rate",
          "below 1", "[0, 1)"}},
  {"gru_dropout_negative", MODEL_MSE ADAM INPUT_STEPS GRU ("l", 3)
        "dropout_rate = -0.5\n", IE_LOAD,
      {"[l] dropout_rate", "negative"}},
  {"gru_hidden_softmax", MODEL_MSE ADAM INPUT_STEPS GRU ("l", 3)
        "hidden_state_activation = softmax\n", IE_LOAD,
        {"[l] hidden_state_activation", "'softmax'", "not supported",
          "gru"}},
  {"gru_recurrent_swish", MODEL_MSE ADAM INPUT_STEPS GRU ("l", 3)
        "recurrent_activation = swish\n", IE_LOAD,
      {"[l] recurrent_activation", "'swish'", "not supported"}},
  {"gru_recurrent_unknown", MODEL_MSE ADAM INPUT_STEPS GRU ("l", 3)
        "recurrent_activation = hard_sigmoid\n", IE_LOAD,
      {"[l] recurrent_activation", "'hard_sigmoid'"}},
  {"gru_unit_missing", MODEL_MSE ADAM INPUT_STEPS "[l]\ntype = gru\n"
        "return_sequences = true\n", IE_LOAD, {"[l] unit", "missing key"}},
  {"gru_unit_zero", MODEL_MSE ADAM INPUT_STEPS GRU ("l", 0), IE_LOAD,
      {"[l] unit", "out of range"}},
  {"gru_reset_after_word", MODEL_MSE ADAM INPUT_STEPS GRU ("l", 3)
      "reset_after = maybe\n", IE_LOAD, {"[l] reset_after", "'maybe'"}},
  {"gru_integrate_bias_word", MODEL_MSE ADAM INPUT_STEPS GRU ("l", 3)
      "integrate_bias = 2\n", IE_LOAD, {"[l] integrate_bias", "'2'"}},
  /* nntrainer's gru has neither key (its lstm has both) */
  {"gru_bidirectional", MODEL_MSE ADAM INPUT_STEPS GRU ("l", 3)
        "bidirectional = false\n", IE_LOAD,
      {"[l] bidirectional", "unknown key"}},
  {"gru_max_timestep", MODEL_MSE ADAM INPUT_STEPS GRU ("l", 3)
      "max_timestep = 4\n", IE_LOAD, {"[l] max_timestep", "unknown key"}},
  {"gru_channels", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 2:4:3\n" GRU ("l", 3), IE_COMPILE,
      {"[l]", "one channel", "2:4:3"}},
  {"addition_shapes", MODEL_MSE ADAM INPUT4
        "[a]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[b]\ntype = fully_connected\nunit = 5\ninput_layers = in\n"
        "[sum]\ntype = addition\ninput_layers = a, b\n", IE_COMPILE,
      {"[sum] input_layers", "1:1:3", "1:1:5"}},
  {"concat_mismatch", MODEL_MSE ADAM INPUT_IMG
        "[a]\ntype = conv2d\nfilters = 2\nkernel_size = 3,3\n"
        "input_layers = in\n"
        "[b]\ntype = conv2d\nfilters = 2\nkernel_size = 1,1\n"
        "input_layers = in\n"
        "[cat]\ntype = concat\naxis = 1\ninput_layers = a, b\n", IE_COMPILE,
      {"[cat] input_layers", "2:4:4", "2:6:6"}},
  {"reshape_count", MODEL_MSE ADAM INPUT4
        "[r]\ntype = reshape\ntarget_shape = 1:2:3\n", IE_COMPILE,
      {"[r] target_shape", "6 elements", "4"}},

  /* ---- graph ----------------------------------------------------------- */
  {"cycle", MODEL_MSE ADAM INPUT4
        "[a]\ntype = fully_connected\nunit = 4\ninput_layers = b\n"
        "[b]\ntype = fully_connected\nunit = 4\ninput_layers = a\n"
        "[out]\ntype = fully_connected\nunit = 2\ninput_layers = in\n",
      IE_COMPILE, {"input_layers", "cycle through", "![out]"}},
  /* [x] comes first but only hangs below the cycle: name a or b */
  {"cycle_downstream", MODEL_MSE ADAM INPUT4
        "[x]\ntype = fully_connected\nunit = 2\ninput_layers = a\n"
        "[a]\ntype = concat\ninput_layers = in, b\n"
        "[b]\ntype = fully_connected\nunit = 4\ninput_layers = a\n",
      IE_COMPILE, {"input_layers", "cycle through", "![x]"}},
  {"self_cycle", MODEL_MSE ADAM INPUT4
        "[a]\ntype = fully_connected\nunit = 4\ninput_layers = a, in\n",
      IE_COMPILE, {"[a] input_layers", "cycle"}},
  {"dangling_input", MODEL_MSE ADAM INPUT4
        "[fc]\ntype = fully_connected\nunit = 3\ninput_layers = nowhere\n",
      IE_COMPILE, {"[fc] input_layers", "'nowhere'"}},
  {"bad_index", MODEL_MSE ADAM INPUT4
        "[fc]\ntype = fully_connected\nunit = 3\ninput_layers = in(x)\n",
      IE_LOAD, {"[fc] input_layers", "in(x)"}},
  {"index_out_of_range", MODEL_MSE ADAM INPUT4
        "[fc]\ntype = fully_connected\nunit = 3\ninput_layers = in(1)\n",
      IE_COMPILE, {"[fc] input_layers", "in(1)", "[in]"}},
  {"empty_input_name", MODEL_MSE ADAM INPUT4
        "[fc]\ntype = fully_connected\nunit = 3\ninput_layers = in,,in\n",
      IE_LOAD, {"[fc] input_layers", "empty"}},
  {"input_with_inputs", MODEL_MSE ADAM INPUT4
        "[in2]\ntype = input\ninput_shape = 1:1:4\ninput_layers = in\n",
      IE_COMPILE, {"[in2] input_layers"}},
  {"two_sinks", MODEL_MSE ADAM INPUT4
        "[a]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[b]\ntype = fully_connected\nunit = 3\ninput_layers = in\n",
      IE_COMPILE, {"[a]", "[b]", "one output"}},
  {"name_too_long", MODEL_MSE ADAM INPUT4
        "[l234567890123456789012345678901234567890123456789012345678901234]\n"
        "type = fully_connected\nunit = 3\n", IE_LOAD,
        {"[l234567890123456789012345678901234567890123456789012345678901234]",
          "longer than 63"}},
  {"name_much_too_long", MODEL_MSE ADAM INPUT4
        "[l234567890123456789012345678901234567890123456789012345678901234"
        "5678901234567890123456789012345678901234567890123456789012345678"
        "9012345678901234567890]\ntype = fully_connected\nunit = 3\n",
      IE_LOAD, {"longer than 63"}},
  {"name_longer_than_lookup_buffer", MODEL_MSE ADAM INPUT4 "[" NAME_200 "]\n"
        "type = fully_connected\nunit = 3\n", IE_LOAD,
      {"[" NAME_200 "]", "longer than 63"}},
  /* Duplicate layer names cannot be expressed: iniparser merges a repeated
   * [section] (and a repeated key) into one entry, later values winning,
   * so the engine never sees two sections of one name. */
  {"name_collides_with_implicit", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "activation = relu\n"
        "[fc/activation_realized]\ntype = fully_connected\nunit = 2\n",
      IE_COMPILE, {"fc/activation_realized", "twice"}},

  /* ---- loss ------------------------------------------------------------ */
  {"missing_loss", "[Model]\ntype = NeuralNetwork\nbatch_size = 2\n" ADAM
        INPUT4 FC ("fc", 3), IE_COMPILE, {"[Model] loss", "missing key"}},
  {"cross_without_softmax", MODEL_CROSS ADAM INPUT4 FC ("fc", 3),
      IE_COMPILE, {"[Model] loss", "softmax or sigmoid", "[fc]"}},
  {"cross_with_relu", MODEL_CROSS ADAM INPUT4 FC ("fc", 3)
        "activation = relu\n", IE_COMPILE,
      {"[Model] loss", "softmax or sigmoid", "[fc]"}},
  {"loss_layer_in_the_middle", "[Model]\ntype = NeuralNetwork\n" ADAM
        INPUT4 FC ("fc", 3) "[l]\ntype = mse\n" FC ("fc2", 2), IE_COMPILE,
      {"[l]", "must end the model"}},
  {"loss_layer_two_inputs", "[Model]\ntype = NeuralNetwork\n" ADAM INPUT4
        "[a]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[b]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[l]\ntype = mse\ninput_layers = a, b\n", IE_COMPILE,
      {"[l] input_layers", "one input"}},
  {"two_losses", MODEL_MSE ADAM INPUT4 FC ("fc", 3) "[l]\ntype = mse\n",
      IE_COMPILE, {"[Model] loss", "[l]"}},

  /* ---- file structure -------------------------------------------------- */
  {"syntax_open_bracket", MODEL_MSE ADAM INPUT4 "[broken\nunit = 3\n",
      IE_LOAD, {"not a valid INI", "[broken"}},
  {"syntax_no_key", MODEL_MSE ADAM INPUT4 FC ("fc", 3) "=novalue\n",
      IE_LOAD, {"not a valid INI", "=novalue"}},
  {"syntax_no_equals", MODEL_MSE ADAM INPUT4 FC ("fc", 3) "unit 3\n",
      IE_LOAD, {"not a valid INI", "unit 3"}},
  {"empty_file", "", IE_LOAD, {"empty model"}},
  {"only_comments", "# a model\n; nothing else\n\n   # indented\n", IE_LOAD,
      {"empty model"}},
  {"missing_file", NULL, IE_LOAD, {"cannot open"}},
  {"missing_model", ADAM INPUT4 FC ("fc", 3), IE_LOAD,
      {"missing [Model]"}},
  {"no_layers", MODEL_MSE ADAM, IE_LOAD, {"no layers"}},
  {"key_before_section", "loss = mse\n" MODEL_MSE ADAM INPUT4 FC ("fc", 3),
      IE_LOAD, {"'loss'", "before any [section]"}},
  {"scheduler_without_optimizer", MODEL_MSE
        "[LearningRateScheduler]\ntype = constant\nlearning_rate = 0.1\n"
        INPUT4 FC ("fc", 3), IE_LOAD,
      {"[LearningRateScheduler]", "[Optimizer]"}},
  {"step_schedule_lengths", MODEL_MSE ADAM
        "[LearningRateScheduler]\ntype = step\n"
        "learning_rate = 0.1, 0.01\niteration = 10, 20\n" INPUT4
        FC ("fc", 3), IE_LOAD,
      {"[learningratescheduler] iteration", "2 iterations", "got 2"}},
  {"step_schedule_not_increasing", MODEL_MSE ADAM
        "[LearningRateScheduler]\ntype = step\n"
        "learning_rate = 0.1, 0.01, 0.001\niteration = 20, 10\n" INPUT4
        FC ("fc", 3), IE_LOAD,
      {"[learningratescheduler] iteration", "increase"}},
  {"scheduler_unknown_key", MODEL_MSE ADAM
        "[LearningRateScheduler]\ntype = constant\nlearning_rat = 0.1\n"
        INPUT4 FC ("fc", 3), IE_LOAD,
      {"[learningratescheduler] learning_rat", "unknown key"}},
  /* ---- convolutions ----------------------------------------- */
  {"conv1d_padding_four", MODEL_MSE ADAM INPUT_SEQ "[conv]\n"
        "type = conv1d\nfilters = 2\nkernel_size = 3\n"
        "padding = 0,0,2,1\n", IE_LOAD,
      {"[conv] padding", "'0,0,2,1'", "valid, same, causal", "LEFT,RIGHT"}},
  {"conv1d_padding_junk", MODEL_MSE ADAM INPUT_SEQ "[conv]\n"
        "type = conv1d\nfilters = 2\nkernel_size = 3\npadding = full\n",
      IE_LOAD, {"[conv] padding", "'full'", "causal", "P (both sides)"}},
  {"conv1d_padding_negative", MODEL_MSE ADAM INPUT_SEQ "[conv]\n"
        "type = conv1d\nfilters = 2\nkernel_size = 3\npadding = -1,2\n",
      IE_LOAD, {"[conv] padding", "'-1,2'", "non-negative"}},
  {"groups_zero", MODEL_MSE ADAM INPUT_IMG "[conv]\ntype = conv2d\n"
        "filters = 2\nkernel_size = 3,3\ngroups = 0\n", IE_LOAD,
      {"[conv] groups", "out of range"}},
  {"groups_filters", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 4:6:6\n[conv]\ntype = conv2d\nfilters = 3\n"
        "kernel_size = 3,3\ngroups = 2\n", IE_COMPILE,
      {"[conv] groups", "filters (3)", "channels (4)", "groups (2)"}},
  {"groups_channels", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 3:1:8\n[conv]\ntype = conv1d\nfilters = 4\n"
        "kernel_size = 3\ngroups = 2\n", IE_COMPILE,
      {"[conv] groups", "filters (4)", "channels (3)", "groups (2)"}},
  {"depthwise_multiplier", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 4:6:6\n[dw]\ntype = depthwiseconv2d\nfilters = 6\n"
        "kernel_size = 3,3\n", IE_COMPILE,
      {"[dw] filters", "6 is not a multiple", "4 channels"}},
  {"depthwise_groups_key", MODEL_MSE ADAM INPUT_IMG "[dw]\n"
        "type = depthwiseconv2d\nkernel_size = 3,3\ngroups = 1\n", IE_LOAD,
      {"[dw] groups", "unknown key"}},
  {"depthwise_missing_kernel", MODEL_MSE ADAM INPUT_IMG "[dw]\n"
        "type = depthwiseconv2d\n", IE_LOAD,
      {"[dw] kernel_size", "missing key"}},
  {"layer_norm_axis_missing", MODEL_MSE ADAM INPUT_STEPS
        "[ln]\ntype = layer_normalization\n", IE_LOAD,
      {"[ln] axis", "missing key", "1,2,3"}},
  {"layer_norm_axis_zero", MODEL_MSE ADAM INPUT_STEPS
        "[ln]\ntype = layer_normalization\naxis = 0\n", IE_LOAD,
      {"[ln] axis", "out of range [1, 3]"}},
  {"layer_norm_axis_apart", MODEL_MSE ADAM INPUT_STEPS
        "[ln]\ntype = layer_normalization\naxis = 1,3\n", IE_LOAD,
      {"[ln] axis", "'1,3'", "adjacent", "1,2,3"}},
  {"layer_norm_epsilon", MODEL_MSE ADAM INPUT_STEPS
        "[ln]\ntype = layer_normalization\naxis = 3\nepsilon = 0\n",
      IE_LOAD, {"[ln] epsilon", "positive"}},
  {"layer_norm_gamma_init", MODEL_MSE ADAM INPUT_STEPS
        "[ln]\ntype = layer_normalization\naxis = 3\n"
        "gamma_initializer = twos\n", IE_LOAD,
      {"[ln] gamma_initializer", "'twos'", "he_uniform"}},
  {"layer_norm_weight_initializer", MODEL_MSE ADAM INPUT_STEPS
        "[ln]\ntype = layer_normalization\naxis = 3\n"
        "weight_initializer = ones\n", IE_LOAD,
      {"[ln] weight_initializer", "unknown key"}},
  {"layer_norm_decay", MODEL_MSE ADAM INPUT_STEPS
        "[ln]\ntype = layer_normalization\naxis = 3\nbias_decay = -1\n",
      IE_LOAD, {"[ln] bias_decay", "negative"}},
  {"embedding_in_dim_missing", MODEL_MSE ADAM INPUT4
        "[e]\ntype = embedding\nout_dim = 3\n", IE_LOAD,
      {"[e] in_dim", "missing key"}},
  {"embedding_out_dim_zero", MODEL_MSE ADAM INPUT4
        "[e]\ntype = embedding\nin_dim = 5\nout_dim = 0\n", IE_LOAD,
      {"[e] out_dim", "out of range"}},
  {"embedding_shape", MODEL_MSE ADAM INPUT_STEPS
        "[e]\ntype = embedding\nin_dim = 5\nout_dim = 3\n", IE_COMPILE,
      {"[e]", "1:1:W indices", "1:4:3"}},
  {"embedding_key", MODEL_MSE ADAM INPUT4
        "[e]\ntype = embedding\nin_dim = 5\nout_dim = 3\n"
        "zero_idx_mask = 0\n", IE_LOAD, {"[e] zero_idx_mask", "unknown key"}},
  {"positional_encoding_missing", MODEL_MSE ADAM INPUT_STEPS
        "[pe]\ntype = positional_encoding\n", IE_LOAD,
      {"[pe] max_timestep", "missing key"}},
  {"positional_encoding_short", MODEL_MSE ADAM INPUT_STEPS
        "[pe]\ntype = positional_encoding\nmax_timestep = 3\n", IE_COMPILE,
      {"[pe] max_timestep", "3", "4 timesteps", "1:4:3"}},
  {"positional_encoding_zero", MODEL_MSE ADAM INPUT_STEPS
        "[pe]\ntype = positional_encoding\nmax_timestep = 0\n", IE_LOAD,
      {"[pe] max_timestep", "out of range"}},
  /* the newer activations: the names listed, no parameters (nntrainer's
   * softplus beta, selu and elu alpha are constants), not in recurrent
   * gates */
  {"bad_activation_lists_new", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "activation = hardswish\n", IE_LOAD,
      {"[fc] activation", "'hardswish'", "hard_swish", "hard_sigmoid"}},
  {"activation_selu_alpha", MODEL_MSE ADAM INPUT4
        "[act]\ntype = activation\nactivation = selu\nalpha = 1.5\n",
      IE_LOAD, {"[act] alpha", "unknown key"}},
  {"lstm_hidden_mish", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "hidden_state_activation = mish\n", IE_LOAD,
      {"[l] hidden_state_activation", "'mish'", "not supported"}},
  /* nntrainer's operation layers */
  {"op_no_broadcast", MODEL_MSE ADAM INPUT4
        "[a]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[b]\ntype = fully_connected\nunit = 5\ninput_layers = in\n"
        "[m]\ntype = multiply\ninput_layers = a, b\n", IE_COMPILE,
      {"[m] input_layers", "1:1:3", "1:1:5", "do not broadcast"}},
  {"op_no_broadcast_channels", MODEL_MSE ADAM INPUT_IMG
        "[a]\ntype = conv2d\nfilters = 2\nkernel_size = 1,1\n"
        "input_layers = in\n"
        "[b]\ntype = conv2d\nfilters = 3\nkernel_size = 6,6\n"
        "input_layers = in\n"
        "[d]\ntype = divide\ninput_layers = a, b\n", IE_COMPILE,
      {"[d] input_layers", "2:6:6", "3:1:1", "do not broadcast"}},
  {"op_one_input", MODEL_MSE ADAM INPUT4 FC ("fc", 4)
        "[s]\ntype = subtract\n", IE_COMPILE,
      {"[s] input_layers", "subtract takes two inputs", "not 1"}},
  {"op_three_inputs", MODEL_MSE ADAM INPUT4 FC ("fc", 4)
        "[s]\ntype = add\ninput_layers = in, fc, in\n", IE_COMPILE,
      {"[s] input_layers", "two inputs", "not 3"}},
  {"op_reduce_axis_zero", MODEL_MSE ADAM INPUT4
        "[r]\ntype = reduce_mean\naxis = 0\n", IE_LOAD,
      {"[r] axis", "out of range"}},
  {"op_reduce_axis_four", MODEL_MSE ADAM INPUT4
        "[r]\ntype = reduce_sum\naxis = 4\n", IE_LOAD,
      {"[r] axis", "out of range"}},
  {"op_pow_exponent_word", MODEL_MSE ADAM INPUT4
        "[p]\ntype = pow\nexponent = two\n", IE_LOAD,
      {"[p] exponent", "'two'"}},
  {"op_pow_exponent_inf", MODEL_MSE ADAM INPUT4
        "[p]\ntype = pow\nexponent = inf\n", IE_LOAD,
      {"[p] exponent", "finite"}},
  {"op_inplace_direction", MODEL_MSE ADAM INPUT4 FC ("fc", 4)
        "[a]\ntype = add\ninput_layers = in, fc\n"
        "inplace_direction = up\n", IE_LOAD,
      {"[a] inplace_direction", "'up'", "left", "right"}},
  {"op_inplace_word", MODEL_MSE ADAM INPUT4
        "[n]\ntype = negative\ninplace = maybe\n", IE_LOAD,
      {"[n] inplace", "'maybe'"}},
  {"op_sqrt_exponent", MODEL_MSE ADAM INPUT4
        "[q]\ntype = sqrt\nexponent = 2\n", IE_LOAD,
      {"[q] exponent", "unknown key"}},
  {"op_identity_key", MODEL_MSE ADAM INPUT4
        "[i]\ntype = identity\ninplace = true\n", IE_LOAD,
      {"[i] inplace", "unknown key"}},
  /* upsample2d, channel_shuffle, flatten's dimensions */
  {"upsample_mode_missing", MODEL_MSE ADAM INPUT_IMG
        "[u]\ntype = upsample2d\nkernel_size = 2,2\n", IE_LOAD,
      {"[u] upsample", "missing key", "nearest", "bilinear"}},
  {"upsample_mode_unknown", MODEL_MSE ADAM INPUT_IMG
        "[u]\ntype = upsample2d\nupsample = bicubic\nkernel_size = 2\n",
      IE_LOAD, {"[u] upsample", "'bicubic'", "nearest, bilinear"}},
  {"upsample_kernel_missing", MODEL_MSE ADAM INPUT_IMG
        "[u]\ntype = upsample2d\nupsample = nearest\n", IE_LOAD,
      {"[u] kernel_size", "missing key"}},
  {"upsample_kernel_zero", MODEL_MSE ADAM INPUT_IMG
        "[u]\ntype = upsample2d\nupsample = nearest\nkernel_size = 2,0\n",
      IE_LOAD, {"[u] kernel_size", "out of range [1, 65536]"}},
  {"upsample_too_big", MODEL_MSE ADAM INPUT_IMG
        "[u]\ntype = upsample2d\nupsample = bilinear\n"
        "kernel_size = 65536,1\n[v]\ntype = upsample2d\n"
        "upsample = nearest\nkernel_size = 65536,1\n", IE_COMPILE,
      {"[v] kernel_size", "65536,1", "6:6", "at most 16777216"}},
  {"upsample_key", MODEL_MSE ADAM INPUT_IMG
        "[u]\ntype = upsample2d\nupsample = nearest\nkernel_size = 2\n"
        "scale = 2\n", IE_LOAD, {"[u] scale", "unknown key"}},
  {"shuffle_split_one", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = channel_shuffle\nsplit_number = 1\n", IE_LOAD,
      {"[s] split_number", "out of range [2,"}},
  {"shuffle_split_not_divisor", MODEL_MSE ADAM INPUT_IMG
        "[c]\ntype = conv2d\nfilters = 6\nkernel_size = 1,1\n"
        "[s]\ntype = channel_shuffle\nsplit_number = 4\n", IE_COMPILE,
      {"[s] split_number", "4", "6:6:6", "divisor of its 6 channels"}},
  {"shuffle_split_all_channels", MODEL_MSE ADAM INPUT_IMG
        "[c]\ntype = conv2d\nfilters = 6\nkernel_size = 1,1\n"
        "[s]\ntype = channel_shuffle\nsplit_number = 6\n", IE_COMPILE,
      {"[s] split_number", "6 does not fit", "below 6"}},
  {"shuffle_prime_channels", MODEL_MSE ADAM INPUT_IMG
        "[c]\ntype = conv2d\nfilters = 5\nkernel_size = 1,1\n"
        "[s]\ntype = channel_shuffle\n", IE_COMPILE,
      {"[s] split_number", "not set", "5:6:6", "5 channels"}},
  {"flatten_start_zero", MODEL_MSE ADAM INPUT_IMG
        "[f]\ntype = flatten\nstart_dimension = 0\n", IE_LOAD,
      {"[f] start_dimension", "out of range [1, 3]"}},
  {"flatten_end_four", MODEL_MSE ADAM INPUT_IMG
        "[f]\ntype = flatten\nend_dimension = 4\n", IE_LOAD,
      {"[f] end_dimension", "out of range [1, 3]"}},
  {"flatten_start_after_end", MODEL_MSE ADAM INPUT_IMG
        "[f]\ntype = flatten\nstart_dimension = 3\nend_dimension = 2\n",
      IE_LOAD, {"[f] start_dimension", "3 is after end_dimension 2"}},
  {"flatten_target_shape", MODEL_MSE ADAM INPUT_IMG
        "[f]\ntype = flatten\ntarget_shape = 36\n", IE_LOAD,
      {"[f] target_shape", "unknown key"}},
  /* batch_normalization's decays, the recurrent layers' dropout and
   * bidirectional */
  {"bn_weight_decay_negative", MODEL_MSE ADAM INPUT4
        "[bn]\ntype = batch_normalization\nweight_decay = -0.1\n", IE_LOAD,
      {"[bn] weight_decay", "negative"}},
  {"bn_bias_decay_word", MODEL_MSE ADAM INPUT4
        "[bn]\ntype = batch_normalization\nbias_decay = some\n", IE_LOAD,
      {"[bn] bias_decay", "'some'"}},
  /* ---- pooling2d: ceil_mode, count_include_pad ------------------------ */
  {"pool_ceil_mode_word", MODEL_MSE ADAM INPUT_IMG
        "[pool]\ntype = pooling2d\npooling = max\npool_size = 2,2\n"
        "ceil_mode = yes\n", IE_LOAD,
      {"[pool] ceil_mode", "'yes'", "true or false"}},
  {"pool_include_pad_word", MODEL_MSE ADAM INPUT_IMG
        "[pool]\ntype = pooling2d\npooling = average\npool_size = 2,2\n"
        "count_include_pad = 1\n", IE_LOAD,
      {"[pool] count_include_pad", "'1'", "true or false"}},
  {"pool_include_pad_max", MODEL_MSE ADAM INPUT_IMG
        "[pool]\ntype = pooling2d\npooling = max\npool_size = 2,2\n"
        "count_include_pad = true\n", IE_LOAD,
      {"[pool] count_include_pad", "pooling = average", "true or false"}},
  {"pool_ceil_mode_global", MODEL_MSE ADAM INPUT_IMG
        "[pool]\ntype = pooling2d\npooling = global_average\n"
        "ceil_mode = true\n", IE_LOAD,
      {"[pool] ceil_mode", "max or average"}},
  /* ---- tensor-manipulation layers ------------------------------------ */
  {"matmul_one_input", MODEL_MSE ADAM INPUT_IMG
        "[m]\ntype = matmul\n", IE_COMPILE,
      {"[m] input_layers", "two inputs", "not 1"}},
  {"matmul_inner_mismatch", MODEL_MSE ADAM INPUT_IMG
        "[a]\ntype = fully_connected\nunit = 5\ninput_layers = in\n"
        "[m]\ntype = matmul\ninput_layers = a, in\n", IE_COMPILE,
      {"[m] input_layers", "1:6:5", "1:6:6", "C:M:K and C:K:N"}},
  {"matmul_channels", MODEL_MSE ADAM INPUT_IMG
        "[c]\ntype = conv2d\nfilters = 2\nkernel_size = 1,1\n"
        "input_layers = in\n[m]\ntype = matmul\ninput_layers = c, in\n",
      IE_COMPILE, {"[m] input_layers", "2:6:6", "1:6:6", "same channels"}},
  {"matmul_inplace_word", MODEL_MSE ADAM INPUT_IMG
        "[m]\ntype = matmul\ninput_layers = in, in\ninplace = maybe\n",
      IE_LOAD, {"[m] inplace", "'maybe'", "true or false"}},
  {"permute_missing", MODEL_MSE ADAM INPUT_IMG "[p]\ntype = permute\n",
      IE_LOAD, {"[p] direction", "missing key", "1,3,2"}},
  {"permute_repeat", MODEL_MSE ADAM INPUT_IMG
        "[p]\ntype = permute\ndirection = 1,1,2\n", IE_LOAD,
      {"[p] direction", "'1,1,2'", "not a permutation of 1, 2 and 3"}},
  {"permute_four", MODEL_MSE ADAM INPUT_IMG
        "[p]\ntype = permute\ndirection = 1,2,4\n", IE_LOAD,
      {"[p] direction", "out of range [1, 3]"}},
  {"permute_two", MODEL_MSE ADAM INPUT_IMG
        "[p]\ntype = permute\ndirection = 2,1\n", IE_LOAD,
      {"[p] direction", "'2,1'", "not a permutation"}},
  {"slice_axis_missing", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = slice\nstart_index = 1\nend_index = 2\n", IE_LOAD,
      {"[s] axis", "missing key", "1 channel, 2 height or 3 width"}},
  {"slice_axis_batch", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = slice\naxis = 0\nstart_index = 1\nend_index = 2\n",
      IE_LOAD, {"[s] axis", "out of range [1, 3]"}},
  {"slice_start_zero", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = slice\naxis = 2\nstart_index = 0\nend_index = 2\n",
      IE_LOAD, {"[s] start_index", "out of range [1,"}},
  {"slice_empty", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = slice\naxis = 2\nstart_index = 3\nend_index = 3\n",
      IE_LOAD, {"[s] end_index", "3 is not after start_index 3"}},
  {"slice_past_end", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = slice\naxis = 3\nstart_index = 2\nend_index = 8\n",
      IE_COMPILE, {"[s] end_index", "8", "1:6:6", "end_index <= 7"}},
  {"split_axis_missing", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = split\nsplit_number = 2\n", IE_LOAD,
      {"[s] axis", "missing key"}},
  {"split_not_divisor", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = split\naxis = 2\nsplit_number = 4\n"
        "[a]\ntype = addition\ninput_layers = s(0), s(1), s(2), s(3)\n",
        IE_COMPILE, {"[s] split_number", "4 does not divide", "1:6:6",
          "a divisor of 6"}},
  {"split_outputs_unused", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = split\naxis = 3\nsplit_number = 3\n"
        "[a]\ntype = addition\ninput_layers = s(0), s(1)\n", IE_COMPILE,
      {"[s] split_number", "3 part(s)", "use 2", "s(0) ... s(2)"}},
  {"split_default_too_many", MODEL_MSE ADAM
        "[in]\ntype = input\ninput_shape = 1:1:20\n"
        "[s]\ntype = split\naxis = 3\n", IE_COMPILE,
      {"[s] split_number", "not set", "1:1:20", "up to 16"}},
  {"split_index_past", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = split\naxis = 1\n"
        "[a]\ntype = addition\ninput_layers = s(0), s(1)\n", IE_COMPILE,
      {"[s] split_number", "1 part(s)", "use 2"}},
  {"split_activation", MODEL_MSE ADAM INPUT_IMG
        "[s]\ntype = split\naxis = 1\nactivation = relu\n",
      IE_LOAD, {"[s] activation", "'relu'", "several outputs", "none"}},
  {"cast_fp16", MODEL_MSE ADAM INPUT_IMG
        "[c]\ntype = cast\ntensor_dtype = FP16\n", IE_LOAD,
      {"[c] tensor_dtype", "FP16 is not supported", "FP32"}},
  {"cast_unknown", MODEL_MSE ADAM INPUT_IMG
        "[c]\ntype = cast\ntensor_dtype = fp64\n", IE_LOAD,
      {"[c] tensor_dtype", "'fp64'", "FP32"}},
  {"gather_axis_missing", MODEL_MSE ADAM INPUT_IMG
        "[g]\ntype = gather\ninput_layers = in, in\n", IE_LOAD,
      {"[g] axis", "missing key"}},
  {"gather_one_input", MODEL_MSE ADAM INPUT_IMG
        "[g]\ntype = gather\naxis = 3\n", IE_COMPILE,
      {"[g] input_layers", "two inputs", "x, indices"}},
  {"gather_index_shape", MODEL_MSE ADAM INPUT_IMG
        "[i]\ntype = fully_connected\nunit = 2\ninput_layers = in\n"
        "[p]\ntype = permute\ndirection = 3,2,1\n"
        "[g]\ntype = gather\naxis = 3\ninput_layers = in, p\n", IE_COMPILE,
      {"[g] input_layers", "1:6:6", "2:6:1", "along axis 3"}},
  {"weight_dim_missing", MODEL_MSE ADAM INPUT_IMG "[w]\ntype = weight\n",
      IE_LOAD, {"[w] dim", "missing key"}},
  {"weight_dim_zero", MODEL_MSE ADAM INPUT_IMG
        "[w]\ntype = weight\ndim = 2:0:3\n", IE_LOAD,
      {"[w] dim", "out of range"}},
  {"weight_dtype", MODEL_MSE ADAM INPUT_IMG
        "[w]\ntype = weight\ndim = 2:2:3\ntensor_dtype = QINT8\n", IE_LOAD,
      {"[w] tensor_dtype", "'QINT8' is not supported", "FP32"}},
  /* ---- the rest of nntrainer's set: kld, constant_derivative, clip,
   * external backbones, centroid_knn ---------------------------------- */
  {"model_loss_unknown_lists_kld", "[Model]\ntype = NeuralNetwork\n"
        "batch_size = 2\nloss = kl\n" ADAM INPUT4 FC ("fc", 3), IE_LOAD,
      {"[model] loss", "'kl'", "kld"}},
  {"kld_twice", "[Model]\ntype = NeuralNetwork\nbatch_size = 2\n"
        "loss = kld\n" ADAM INPUT4 FC ("fc", 3) "[l]\ntype = kld\n",
      IE_COMPILE, {"[Model] loss is set", "[l] is a loss layer"}},
  {"kld_key", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "[l]\ntype = kld\nreduction = sum\n", IE_LOAD,
      {"[l] reduction", "unknown key"}},
  {"constant_derivative_key", "[Model]\ntype = NeuralNetwork\n"
        "batch_size = 2\n" ADAM INPUT4 FC ("fc", 3)
        "[l]\ntype = constant_derivative\nvalue = 2\n", IE_LOAD,
      {"[l] value", "unknown key"}},
  {"clip_min_without_clip", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "activation = relu\nclip_min = 0\n", IE_LOAD,
      {"[fc] clip_min", "only with activation = clip", "not relu"}},
  {"clip_max_on_activation_layer", MODEL_MSE ADAM INPUT4
        "[a]\ntype = activation\nactivation = tanh\nclip_max = 2\n",
      IE_LOAD, {"[a] clip_max", "only with activation = clip"}},
  {"clip_unordered", MODEL_MSE ADAM INPUT4
        "[a]\ntype = activation\nactivation = clip\nclip_min = 2\n"
        "clip_max = 2\n", IE_LOAD,
      {"[a] clip_max", "clip_min (2) must be below clip_max (2)"}},
  {"clip_min_above_default", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "activation = clip\nclip_min = 1.5\n", IE_LOAD,
      {"[fc] clip_min", "clip_min (1.5) must be below clip_max (1)"}},
  {"clip_max_word", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "activation = clip\nclip_max = six\n", IE_LOAD,
      {"[fc] clip_max", "'six'"}},
  {"clip_in_lstm", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "hidden_state_activation = clip\n", IE_LOAD,
      {"[l] hidden_state_activation", "'clip' is not supported in an lstm"}},
  {"backbone_tflite_file", MODEL_MSE ADAM INPUT4
        "[bb]\nbackbone = mobilenet.tflite\n" FC ("fc", 3), IE_LOAD,
        {"[bb] backbone", "mobilenet.tflite", "TensorFlow Lite at run time",
          "write its layers as sections of the INI"}},
  /* nntrainer's TensorFlow Lite backbone sections carry keys of their
   * own (Input_Shape): the reason comes first */
  {"backbone_tflite_keys", MODEL_MSE ADAM INPUT4
        "[bb]\nbackbone = mobilenet.tflite\nInput_Shape = 3:32:32\n"
        FC ("fc", 3), IE_LOAD,
      {"[bb] backbone", "mobilenet.tflite", "TensorFlow Lite at run time"}},
  {"backbone_other_file", MODEL_MSE ADAM INPUT4
        "[bb]\nbackbone = model.pb\n" FC ("fc", 3), IE_LOAD,
      {"[bb] backbone", "model.pb", "nnstreamer", "ONNX"}},
  {"backbone_tflite_type", MODEL_MSE ADAM INPUT4
        "[bb]\ntype = backbone_tflite\nmodel_path = m.tflite\n"
        FC ("fc", 3), IE_LOAD,
        {"[bb] type", "backbone_tflite is not supported",
          "TensorFlow Lite at run time", "ONNX"}},
  {"backbone_nnstreamer_type", MODEL_MSE ADAM INPUT4
        "[bb]\ntype = Backbone_NNStreamer\n" FC ("fc", 3), IE_LOAD,
        {"[bb] type", "Backbone_NNStreamer is not supported", "nnstreamer",
          "sections of the INI"}},
  {"knn_no_num_class", "[Model]\ntype = NeuralNetwork\nbatch_size = 2\n"
        ADAM INPUT4 "[knn]\ntype = centroid_knn\n", IE_LOAD,
      {"[knn] num_class", "missing key"}},
  {"knn_num_class_zero", "[Model]\ntype = NeuralNetwork\n"
        "batch_size = 2\n" ADAM INPUT4 "[knn]\ntype = centroid_knn\n"
        "num_class = 0\n", IE_LOAD, {"[knn] num_class", "0"}},
  {"knn_key", "[Model]\ntype = NeuralNetwork\nbatch_size = 2\n" ADAM
        INPUT4 "[knn]\ntype = centroid_knn\nnum_class = 3\nunit = 3\n",
      IE_LOAD, {"[knn] unit", "unknown key"}},
  {"knn_after_trainable", "[Model]\ntype = NeuralNetwork\n"
        "batch_size = 2\n" ADAM INPUT4 FC ("fc", 3)
        "[knn]\ntype = centroid_knn\nnum_class = 3\n", IE_COMPILE,
        {"[knn]", "passes no derivative back",
          "set trainable = false on the layers before it"}},
  {"knn_and_model_loss", MODEL_MSE ADAM INPUT4
        "[knn]\ntype = centroid_knn\nnum_class = 3\n", IE_COMPILE,
      {"[Model] loss is set", "[knn] is a loss layer"}},
  /* transposed convolution and the preprocessing layers */
  {"convt_missing_filters", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = conv2dtranspose\nkernel_size = 3\n", IE_LOAD,
      {"[t] filters", "missing key"}},
  {"convt_missing_kernel", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = conv2dtranspose\nfilters = 2\n", IE_LOAD,
      {"[t] kernel_size", "missing key"}},
  {"convt_stride_zero", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = conv2dtranspose\nfilters = 2\nkernel_size = 3\n"
        "stride = 0\n", IE_LOAD, {"[t] stride", "out of range [1, 65536]"}},
  {"convt_padding_word", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = conv2dtranspose\nfilters = 2\nkernel_size = 3\n"
        "padding = full\n", IE_LOAD, {"[t] padding", "'full'", "valid, same"}},
  {"convt_padding_too_big", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = conv2dtranspose\nfilters = 2\nkernel_size = 3\n"
        "padding = 5\n", IE_COMPILE,
      {"[t] padding", "5,5,5,5", "8x8", "1:6:6"}},
  {"convt_groups", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = conv2dtranspose\nfilters = 2\nkernel_size = 3\n"
        "groups = two\n", IE_LOAD, {"[t] groups", "two"}},
  {"convt_too_large", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = conv2dtranspose\nfilters = 65536\n"
        "kernel_size = 65536\n", IE_COMPILE,
      {"[t] filters, kernel_size", "too large", "1:6:6"}},
  {"flip_direction_unknown", MODEL_MSE ADAM INPUT_IMG
        "[f]\ntype = preprocess_flip\nflip_direction = diagonal\n", IE_LOAD,
        {"[f] flip_direction", "'diagonal'",
          "horizontal, vertical, horizontal_and_vertical"}},
  {"flip_key", MODEL_MSE ADAM INPUT_IMG
        "[f]\ntype = preprocess_flip\nrandom_translate = 0.1\n", IE_LOAD,
      {"[f] random_translate", "unknown key"}},
  {"translate_missing", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = preprocess_translate\n", IE_LOAD,
      {"[t] random_translate", "missing key"}},
  {"translate_word", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = preprocess_translate\nrandom_translate = far\n",
      IE_LOAD, {"[t] random_translate", "'far'"}},
  {"translate_huge", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = preprocess_translate\nrandom_translate = -1e9\n",
      IE_LOAD, {"[t] random_translate", "at most 65536"}},
  {"l2norm_epsilon_zero", MODEL_MSE ADAM INPUT4
        "[n]\ntype = preprocess_l2norm\nepsilon = 0\n", IE_LOAD,
      {"[n] epsilon", "positive"}},
  {"l2norm_epsilon_word", MODEL_MSE ADAM INPUT4
        "[n]\ntype = preprocess_l2norm\nepsilon = tiny\n", IE_LOAD,
      {"[n] epsilon", "'tiny'"}},
  /* attention: attention, multi_head_attention */
#define IE_MHA(keys, inputs) "[a]\ntype = multi_head_attention\n" keys \
  "input_layers = " inputs "\n"
  {"mha_heads_not_dividing", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("num_heads = 2\n", "in, in, in"), IE_COMPILE,
        {"[a] num_heads", "2 does not divide", "width 3",
          "projected_key_dim"}},
  {"mha_heads_zero", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("num_heads = 0\n", "in, in, in"), IE_LOAD,
      {"[a] num_heads", "out of range [1,"}},
  {"mha_two_inputs", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("", "in, in"), IE_COMPILE,
        {"[a] input_layers", "3 or 4 inputs", "query, key, value[, mask]",
          "not 2"}},
  {"mha_key_value_lengths", MODEL_MSE ADAM INPUT_STEPS
        "[r]\ntype = reshape\ninput_layers = in\ntarget_shape = 1:2:6\n"
        IE_MHA ("num_heads = 3\n", "in, in, r"), IE_COMPILE,
        {"[a] input_layers", "key 'in' gives 1:4:3", "value 'r' 1:2:6",
          "same length"}},
  {"mha_channel", MODEL_MSE ADAM INPUT_SEQ
        IE_MHA ("", "in, in, in"), IE_COMPILE,
      {"[a] input_layers", "query 'in' gives 2:1:8", "channel must be 1"}},
  {"mha_mask_shape", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("num_heads = 3\n", "in, in, in, in"), IE_COMPILE,
        {"[a] input_layers", "mask 'in' gives 1:4:3",
          "num_heads:query length:key length = 3:4:4"}},
  {"mha_return_weight", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("num_heads = 3\n", "in, in, in")
        "[o]\ntype = fully_connected\nunit = 2\ninput_layers = a(1)\n",
      IE_COMPILE, {"[o] input_layers", "'a(1)'", "[a] has 1 output(s)"}},
  {"mha_return_unknown", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("return_attention_weight = maybe\n", "in, in, in"), IE_LOAD,
      {"[a] return_attention_weight", "maybe", "none, before, after"}},
  {"mha_dropout_one", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("dropout_rate = 1\n", "in, in, in"), IE_LOAD,
      {"[a] dropout_rate", "[0, 1)"}},
  {"mha_unknown_key", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("causal_mask = true\n", "in, in, in"), IE_LOAD,
      {"[a] causal_mask", "unknown key"}},
  {"attention_one_input", MODEL_MSE ADAM INPUT_STEPS
        "[a]\ntype = attention\ninput_layers = in\n", IE_COMPILE,
        {"[a] input_layers", "2 or 3 inputs", "query, value[, key]",
          "not 1"}},
  {"attention_widths", MODEL_MSE ADAM INPUT_STEPS FC ("v", 5)
        "input_layers = in\n[a]\ntype = attention\ninput_layers = in, v\n",
        IE_COMPILE, {"[a] input_layers", "query 'in' gives 1:4:3",
          "value 'v' 1:4:5", "widths must match"}},
  {"attention_key_shape", MODEL_MSE ADAM INPUT_STEPS
        "[r]\ntype = reshape\ninput_layers = in\ntarget_shape = 1:2:6\n"
        "[k]\ntype = reshape\ninput_layers = in\ntarget_shape = 1:6:2\n"
        FC ("v", 3) "input_layers = r\n"
        "[a]\ntype = attention\ninput_layers = in, v, k\n", IE_COMPILE,
        {"[a] input_layers", "key 'k' gives 1:6:2", "value 'v' 1:2:3",
          "same shape"}},
  {"attention_causal_bool", MODEL_MSE ADAM INPUT_STEPS
        "[a]\ntype = attention\ninput_layers = in, in\n"
        "causal_mask = maybe\n", IE_LOAD, {"[a] causal_mask", "maybe"}},
  /* the recurrent family */
  {"rnn_unit_missing", MODEL_MSE ADAM INPUT_STEPS "[l]\ntype = rnn\n",
      IE_LOAD, {"[l] unit", "missing key"}},
  {"rnn_recurrent_activation", MODEL_MSE ADAM INPUT_STEPS "[l]\n"
        "type = rnn\nunit = 3\nrecurrent_activation = sigmoid\n", IE_LOAD,
      {"[l] recurrent_activation", "unknown key"}},
  {"rnn_hidden_softmax", MODEL_MSE ADAM INPUT_STEPS "[l]\ntype = rnn\n"
        "unit = 3\nhidden_state_activation = softmax\n", IE_LOAD,
      {"[l] hidden_state_activation", "'softmax'", "not supported", "tanh"}},
  {"rnn_dropout", MODEL_MSE ADAM INPUT_STEPS "[l]\ntype = rnn\nunit = 3\n"
        "dropout_rate = 1.5\n", IE_LOAD,
      {"[l] dropout_rate", "below 1", "[0, 1)"}},
  {"rnn_channels", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 2:4:3\n[l]\ntype = rnn\nunit = 3\n", IE_COMPILE,
      {"[l]", "one channel", "2:4:3"}},
  {"rnncell_one_input", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 1:1:4\n[l]\ntype = rnncell\nunit = 3\n", IE_COMPILE,
      {"[l] input_layers", "rnncell takes 2 inputs", "got 1"}},
  {"rnncell_steps", MODEL_MSE ADAM INPUT_STEPS "[h]\n"
        "type = fully_connected\nunit = 3\ninput_layers = in\n[l]\n"
        "type = rnncell\nunit = 3\ninput_layers = in, h\n", IE_COMPILE,
      {"[l]", "1:1:features", "1:4:3"}},
  {"lstmcell_state_shape", MODEL_MSE ADAM INPUT4 "[h]\n"
        "type = fully_connected\nunit = 3\ninput_layers = in\n[c]\n"
        "type = fully_connected\nunit = 2\ninput_layers = in\n[l]\n"
        "type = lstmcell\nunit = 3\ninput_layers = in, h, c\n", IE_COMPILE,
      {"[l]", "input 2 (the cell state)", "1:1:3", "1:1:2"}},
  {"lstmcell_output_index", MODEL_MSE ADAM INPUT4 "[h]\n"
        "type = fully_connected\nunit = 3\ninput_layers = in\n[l]\n"
        "type = lstmcell\nunit = 3\ninput_layers = in, h, h\n[s]\n"
        "type = addition\ninput_layers = l(0), l(2)\n", IE_COMPILE,
      {"[s] input_layers", "'l(2)'", "2 output(s)"}},
  {"lstmcell_return_sequences", MODEL_MSE ADAM INPUT4 "[l]\n"
        "type = lstmcell\nunit = 3\nreturn_sequences = true\n", IE_LOAD,
      {"[l] return_sequences", "unknown key"}},
  {"time_dist_type", MODEL_MSE ADAM INPUT_STEPS "[l]\ntype = time_dist\n",
      IE_LOAD, {"[l] type", "time_dist", "distribute = true"}},
  {"distribute_lstm", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "distribute = true\n", IE_LOAD,
        {"[l] distribute", "not supported on lstm", "fully_connected",
          "activation"}},
  {"distribute_word", MODEL_MSE ADAM INPUT_STEPS FC ("l", 3)
      "distribute = maybe\n", IE_LOAD, {"[l] distribute", "'maybe'"}},
  {"lstm_bidirectional_word", MODEL_MSE ADAM INPUT_STEPS LSTM ("l", 3)
        "bidirectional = both\n", IE_LOAD,
      {"[l] bidirectional", "'both'", "true or false"}},
  /* the recurrent family's last cells: grucell, zoneout_lstmcell */
  {"grucell_three_inputs",
        MODEL_MSE ADAM INPUT4
        "[h]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[l]\ntype = grucell\nunit = 3\ninput_layers = in, h, h\n",
      IE_COMPILE, {"[l] input_layers", "grucell takes 2 inputs", "got 3"}},
  {"grucell_state_shape", MODEL_MSE ADAM INPUT4 "[h]\n"
        "type = fully_connected\nunit = 2\ninput_layers = in\n[l]\n"
        "type = grucell\nunit = 3\ninput_layers = in, h\n", IE_COMPILE,
      {"[l]", "input 1 (the hidden state)", "1:1:3", "1:1:2"}},
  {"grucell_steps",
        MODEL_MSE ADAM INPUT_STEPS
        "[h]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[l]\ntype = grucell\nunit = 3\ninput_layers = in, h\n",
      IE_COMPILE, {"[l]", "1:1:features", "1:4:3"}},
  {"grucell_reset_after_word", MODEL_MSE ADAM INPUT4 "[l]\n"
        "type = grucell\nunit = 3\nreset_after = maybe\n", IE_LOAD,
      {"[l] reset_after", "maybe"}},
  {"grucell_return_sequences", MODEL_MSE ADAM INPUT4 "[l]\n"
        "type = grucell\nunit = 3\nreturn_sequences = true\n", IE_LOAD,
      {"[l] return_sequences", "unknown key"}},
  {"grucell_hidden_softmax", MODEL_MSE ADAM INPUT4 "[l]\n"
        "type = grucell\nunit = 3\nhidden_state_activation = softmax\n",
        IE_LOAD, {"[l] hidden_state_activation", "'softmax'", "grucell",
          "tanh"}},
  {"grucell_unit_missing", MODEL_MSE ADAM INPUT4 "[l]\ntype = grucell\n",
      IE_LOAD, {"[l] unit", "missing"}},
  {"zoneout_rate_above_one",
        MODEL_MSE ADAM INPUT4 "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 1\ntimestep = 0\nhidden_state_zoneout_rate = 1.5\n",
      IE_LOAD, {"[l] hidden_state_zoneout_rate", "[0, 1]"}},
  {"zoneout_rate_negative",
        MODEL_MSE ADAM INPUT4 "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 1\ntimestep = 0\ncell_state_zoneout_rate = -0.1\n",
      IE_LOAD, {"[l] cell_state_zoneout_rate", "[0, 1]"}},
  {"zoneout_rate_word",
        MODEL_MSE ADAM INPUT4 "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 1\ntimestep = 0\ncell_state_zoneout_rate = half\n",
      IE_LOAD, {"[l] cell_state_zoneout_rate", "half"}},
  {"zoneout_max_timestep_missing",
      MODEL_MSE ADAM INPUT4 "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "timestep = 0\n", IE_LOAD, {"[l] max_timestep", "missing"}},
  {"zoneout_timestep_missing",
      MODEL_MSE ADAM INPUT4 "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 2\n", IE_LOAD, {"[l] timestep", "missing"}},
  {"zoneout_max_timestep_zero",
        MODEL_MSE ADAM INPUT4 "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 0\ntimestep = 0\n", IE_LOAD,
      {"[l] max_timestep"}},
  {"zoneout_timestep_range",
        MODEL_MSE ADAM INPUT4 "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 2\ntimestep = 2\n", IE_LOAD,
      {"[l] timestep", "not below max_timestep = 2", "0 to 1"}},
  {"zoneout_test_word",
        MODEL_MSE ADAM INPUT4 "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 1\ntimestep = 0\ntest = sometimes\n", IE_LOAD,
      {"[l] test", "sometimes"}},
  {"zoneout_dropout",
        MODEL_MSE ADAM INPUT4 "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 1\ntimestep = 0\ndropout_rate = 0.1\n", IE_LOAD,
      {"[l] dropout_rate", "unknown key"}},
  {"zoneout_two_inputs",
        MODEL_MSE ADAM INPUT4
        "[h]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 1\ntimestep = 0\ninput_layers = in, h\n",
        IE_COMPILE, {"[l] input_layers", "zoneout_lstmcell takes 3 inputs",
          "got 2"}},
  {"zoneout_cell_shape",
        MODEL_MSE ADAM INPUT4
        "[h]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[c]\ntype = fully_connected\nunit = 2\ninput_layers = in\n"
        "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 1\ntimestep = 0\n" "input_layers = in, h, c\n",
        IE_COMPILE,
      {"[l]", "input 2 (the cell state)", "1:1:3", "1:1:2"}},
  {"zoneout_output_index",
        MODEL_MSE ADAM INPUT4
        "[h]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[c]\ntype = fully_connected\nunit = 3\ninput_layers = in\n"
        "[l]\ntype = zoneout_lstmcell\nunit = 3\n"
        "max_timestep = 1\ntimestep = 0\n" "input_layers = in, h, c\n" "[s]\n"
        "type = addition\ninput_layers = l(0), l(2)\n", IE_COMPILE,
      {"[s] input_layers", "'l(2)'", "2 output(s)"}},
  /* multi_head_attention's attention weights */
  {"mha_weights_output_index", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("num_heads = 3\nreturn_attention_weight = before\n",
            "in, in, in")
        "[o]\ntype = addition\ninput_layers = a(0), a(2)\n", IE_COMPILE,
      {"[o] input_layers", "'a(2)'", "[a] has 2 output(s)"}},
  {"mha_weights_average_word", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("return_attention_weight = after\n"
            "average_attention_weight = heads\n", "in, in, in"), IE_LOAD,
      {"[a] average_attention_weight", "'heads'", "true or false"}},
  /* conv2dtranspose's groups */
  {"convt_groups_channels", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = conv2dtranspose\nfilters = 4\nkernel_size = 3,3\n"
        "groups = 2\n", IE_COMPILE,
        {"[t] groups", "filters (4)", "the input's channels (1)",
          "divide by groups (2)"}},
  {"convt_groups_filters", MODEL_MSE ADAM
        "[in]\ntype = input\ninput_shape = 4:3:3\n"
        "[t]\ntype = conv2dtranspose\nfilters = 6\nkernel_size = 2,2\n"
        "groups = 4\n", IE_COMPILE,
      {"[t] groups", "filters (6)", "channels (4)", "groups (4)"}},
  {"convt_groups_zero", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = conv2dtranspose\nfilters = 4\nkernel_size = 3,3\n"
        "groups = 0\n", IE_LOAD, {"[t] groups", "out of range [1,"}},
  /* mixture-of-logistics attention */
#define IE_MOL_IN "[q]\ntype = fully_connected\nunit = 3\n" \
  "input_layers = in\n[s]\ntype = fully_connected\nunit = 2\n" \
  "input_layers = in\n"
#define IE_MOL(keys, inputs) "[m]\ntype = mol_attention\n" keys \
  "input_layers = " inputs "\n"
  {"mol_no_unit", MODEL_MSE ADAM INPUT_STEPS IE_MOL_IN
        IE_MOL ("mol_k = 2\n", "q, in, s"), IE_LOAD,
      {"[m] unit", "missing key"}},
  {"mol_no_k", MODEL_MSE ADAM INPUT_STEPS IE_MOL_IN
        IE_MOL ("unit = 4\n", "q, in, s"), IE_LOAD,
      {"[m] mol_k", "missing key"}},
  {"mol_k_zero", MODEL_MSE ADAM INPUT_STEPS IE_MOL_IN
        IE_MOL ("unit = 4\nmol_k = 0\n", "q, in, s"), IE_LOAD,
      {"[m] mol_k", "out of range [1,"}},
  {"mol_unknown_key", MODEL_MSE ADAM INPUT_STEPS IE_MOL_IN
        IE_MOL ("unit = 4\nmol_k = 2\nnum_heads = 2\n", "q, in, s"),
      IE_LOAD, {"[m] num_heads", "unknown key"}},
  {"mol_disable_bias", MODEL_MSE ADAM INPUT_STEPS IE_MOL_IN
        IE_MOL ("unit = 4\nmol_k = 2\ndisable_bias = true\n", "q, in, s"),
      IE_LOAD, {"[m] disable_bias", "fc_bias", "allowed: false"}},
  {"mol_two_inputs", MODEL_MSE ADAM INPUT_STEPS IE_MOL_IN
        IE_MOL ("unit = 4\nmol_k = 2\n", "q, s"), IE_COMPILE,
        {"[m] input_layers", "3 or 4 inputs",
          "query, value, state[, length]", "not 2"}},
  {"mol_query_shape", MODEL_MSE ADAM INPUT_STEPS IE_MOL_IN
        IE_MOL ("unit = 4\nmol_k = 2\n", "in, q, s"), IE_COMPILE,
      {"[m] input_layers", "query 'in' gives 1:4:3", "not 1:1:features"}},
  {"mol_value_width", MODEL_MSE ADAM INPUT4 IE_MOL_IN
        IE_MOL ("unit = 4\nmol_k = 2\n", "q, in, s"), IE_COMPILE,
        {"[m] input_layers", "value 'in' gives 1:1:4",
          "1:length:3 (the query's width)"}},
  {"mol_state_width", MODEL_MSE ADAM INPUT4 IE_MOL_IN
        IE_MOL ("unit = 4\nmol_k = 3\n", "q, q, s"), IE_COMPILE,
      {"[m] input_layers", "state 's' gives 1:1:2", "1:1:3 (1:1:mol_k)"}},
  {"mol_length_shape", MODEL_MSE ADAM INPUT4 IE_MOL_IN
        IE_MOL ("unit = 4\nmol_k = 2\n", "q, q, s, s"), IE_COMPILE,
      {"[m] input_layers", "length 's' gives 1:1:2", "not 1:1:1"}},
  {"mol_output_index", MODEL_MSE ADAM INPUT_STEPS IE_MOL_IN
        IE_MOL ("unit = 4\nmol_k = 2\n", "q, in, s")
        "[o]\ntype = addition\ninput_layers = m(2)\n", IE_COMPILE,
      {"[o] input_layers", "'m(2)'", "[m] has 2 output(s)"}},
  /* LoRA adapters */
  {"lora_rank_negative", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "lora_rank = -1\n", IE_LOAD,
      {"[fc] lora_rank", "'-1' is not a non-negative integer"}},
  {"lora_rank_fraction", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
      "lora_rank = 1.5\n", IE_LOAD, {"[fc] lora_rank", "'1.5'"}},
  {"lora_rank_above_unit", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
      "lora_rank = 4\n", IE_LOAD, {"[fc] lora_rank", "out of range [0, 3]"}},
  {"lora_rank_above_input", MODEL_MSE ADAM INPUT4 FC ("fc", 8)
        "lora_rank = 5\n", IE_COMPILE,
      {"[fc] lora_rank", "5 is above min (input width 4, unit 8) = 4"}},
  {"lora_alpha_rank_zero", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "lora_rank = 0\nlora_alpha = 4\n", IE_LOAD,
      {"[fc] lora_alpha", "needs lora_rank >= 1"}},
  {"lora_alpha_alone", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
      "lora_alpha = 4\n", IE_LOAD, {"[fc] lora_alpha", "needs lora_rank"}},
  {"lora_alpha_zero", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "lora_rank = 2\nlora_alpha = 0\n", IE_LOAD,
      {"[fc] lora_alpha", "out of range [1, "}},
  {"lora_alpha_fraction", MODEL_MSE ADAM INPUT4 FC ("fc", 3)
        "lora_rank = 2\nlora_alpha = 0.5\n", IE_LOAD,
      {"[fc] lora_alpha", "'0.5' is not a non-negative integer"}},
  {"lora_on_conv", MODEL_MSE ADAM INPUT_IMG "[c]\ntype = conv2d\n"
        "filters = 2\nkernel_size = 3,3\nlora_rank = 1\n", IE_COMPILE,
      {"[c] lora_rank", "kernel_size 1,1 only"}},
  /* LoRA beyond fully_connected: multi_head_attention, 1x1 conv2d */
  {"lora_mha_rank_above_query", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("num_heads = 1\nlora_rank = 4\n", "in, in, in"), IE_COMPILE,
      {"[a] lora_rank", "4 is above min (in 3, out 3) = 3 of the query "
              "projection"}},
  {"lora_mha_rank_above_value", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("num_heads = 1\nprojected_value_dim = 1\nlora_rank = 2\n",
            "in, in, in"), IE_COMPILE,
      {"[a] lora_rank", "2 is above min (in 3, out 1) = 1 of the value "
              "projection"}},
  {"lora_mha_alpha_alone", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("num_heads = 1\nlora_alpha = 2\n", "in, in, in"), IE_LOAD,
      {"[a] lora_alpha", "needs lora_rank >= 1"}},
  {"lora_mha_rank_negative", MODEL_MSE ADAM INPUT_STEPS
        IE_MHA ("num_heads = 1\nlora_rank = -2\n", "in, in, in"), IE_LOAD,
      {"[a] lora_rank", "'-2' is not a non-negative integer"}},
  {"lora_conv_groups", MODEL_MSE ADAM
        "[in]\ntype = input\ninput_shape = 2:4:4\n[c]\ntype = conv2d\n"
        "filters = 2\nkernel_size = 1,1\ngroups = 2\nlora_rank = 1\n",
      IE_COMPILE, {"[c] lora_rank", "groups 1 only"}},
  {"lora_conv_stride", MODEL_MSE ADAM INPUT_IMG "[c]\ntype = conv2d\n"
        "filters = 2\nkernel_size = 1,1\nstride = 2,2\nlora_rank = 1\n",
      IE_COMPILE, {"[c] lora_rank", "stride 1,1 only"}},
  {"lora_conv_padding", MODEL_MSE ADAM INPUT_IMG "[c]\ntype = conv2d\n"
        "filters = 2\nkernel_size = 1,1\npadding = 1,1\nlora_rank = 1\n",
      IE_COMPILE, {"[c] lora_rank", "without padding only"}},
  {"lora_conv_rank_above", MODEL_MSE ADAM INPUT_IMG "[c]\ntype = conv2d\n"
        "filters = 4\nkernel_size = 1,1\nlora_rank = 2\n", IE_COMPILE,
      {"[c] lora_rank", "2 is above min (input channels 1, filters 4) = " "1"}},
  {"lora_conv_alpha_alone", MODEL_MSE ADAM INPUT_IMG "[c]\ntype = conv2d\n"
        "filters = 2\nkernel_size = 1,1\nlora_alpha = 2\n", IE_LOAD,
      {"[c] lora_alpha", "needs lora_rank >= 1"}},
  {"lora_on_conv1d", MODEL_MSE ADAM INPUT_STEPS "[c]\ntype = conv1d\n"
        "filters = 2\nkernel_size = 1\nlora_rank = 1\n", IE_LOAD,
      {"[c] lora_rank", "unknown key"}},
};

/* Valid models: must load, compile and train one batch. */
typedef struct
{
  const char *name;
  const char *ini;
} ie_valid;

static const ie_valid ie_valids[] = {
  {"mixed_case_values", "[Model]\nType = NeuralNetwork\nBatch_Size = 2\n"
        "Loss = MSE\n[Optimizer]\nType = Adam\nLearning_Rate = 0.01\n"
        "[In]\nType = Input\nInput_Shape = 1:1:4\n"
        "[FC]\nType = Fully_Connected\nUnit = 3\nActivation = ReLU\n"
        "Weight_Initializer = He_Uniform\nTrainable = TRUE\n"},
  /* iniparser 4.1 takes no comment after a [section] header: not tested */
  {"inline_comments", MODEL_MSE "[Optimizer]\n"
        "type = sgd ; plain\nlearning_rate = 0.1 # ten percent\n"
        INPUT4 "[fc]\ntype = fully_connected\nunit = 10 # ten\n"
        "activation = tanh ; squash\n"},
  {"cross_with_sigmoid", MODEL_CROSS ADAM INPUT4 FC ("fc", 3)
      "activation = sigmoid\n"},
  {"cross_with_softmax_layer", MODEL_CROSS ADAM INPUT4 FC ("fc", 3)
      "[act]\ntype = activation\nactivation = Softmax\n"},
  {"dataset_section", MODEL_CROSS ADAM
        "[Dataset]\nBufferSize = 100\nTrainData = \"trainingSet.dat\"\n"
        "ValidData = \"valSet.dat\"\nTestData = \"testSet.dat\"\n"
        "LabelData = \"label.dat\"\n" INPUT4 FC ("fc", 3)
      "activation = softmax\n"},
  /* max_timestep at or below the input's timesteps changes nothing in
   * nntrainer (it unrolls max(timesteps, max_timestep) steps) */
  {"lstm_keys", MODEL_CROSS ADAM INPUT_STEPS LSTM ("l1", 5)
      "return_sequences = true\nintegrate_bias = false\n"
        "hidden_state_activation = tanh\nrecurrent_activation = sigmoid\n"
        "bidirectional = false\ndropout_rate = 0\nmax_timestep = 4\n"
        "weight_initializer = lecun_uniform\nbias_initializer = ones\n"
        "weight_regularizer = l2norm\nweight_regularizer_constant = 0.01\n"
        LSTM ("l2", 3) "integrate_bias = true\nmax_timestep = 2\n"
        "activation = softmax\n"},
  /* a frozen first lstm runs forward only (one step of scratch) */
  {"lstm_frozen_first", MODEL_MSE SGD INPUT_STEPS LSTM ("l", 4)
      "trainable = false\n" FC ("fc", 2)},
  {"gru_keys", MODEL_CROSS ADAM INPUT_STEPS GRU ("g1", 5)
      "return_sequences = true\nintegrate_bias = false\n"
        "reset_after = false\nhidden_state_activation = tanh\n"
        "recurrent_activation = sigmoid\ndropout_rate = 0\n"
        "weight_initializer = lecun_uniform\nbias_initializer = ones\n"
        "weight_regularizer = l2norm\nweight_regularizer_constant = 0.01\n"
        "weight_decay = 0.001\nbias_decay = 0.001\n"
        GRU ("g2", 3) "integrate_bias = true\nreset_after = true\n"
        "hidden_state_activation = leaky_relu\n"
        "recurrent_activation = none\nactivation = softmax\n"},
  /* a frozen first gru runs forward only */
  {"gru_frozen_first", MODEL_MSE SGD INPUT_STEPS GRU ("l", 4)
      "trainable = false\ndisable_bias = true\n" FC ("fc", 2)},
  /* nntrainer's older form, as its application INIs still write it */
  {"legacy_model_optimizer", "[Model]\nType = NeuralNetwork\n"
        "Learning_rate = 0.0001\nDecay_rate = 0.96\nDecay_steps = 1000\n"
        "Optimizer = adam\nloss = cross\nbatch_size = 2\n"
        "save_path = \"model.bin\"\nbeta1 = 0.9\nbeta2 = 0.9999\n"
        "epsilon = 1e-7\n[DataSet]\nBufferSize=10\n"
        "TrainData=\"trainingSet.dat\"\nLabelData=\"label.dat\"\n"
        "[inputlayer]\nType = input\nInput_Shape = 1:1:8\n"
        "Normalization = true\n[outputlayer]\nType = fully_connected\n"
        "Unit = 2\nbias_initializer = zeros\nActivation = sigmoid\n"
        "Weight_Decay = l2norm\nweight_Decay_Lambda = 0.005\n"},
  {"legacy_output_layer", "[Model]\nType = NeuralNetwork\nOptimizer = adam\n"
        "Learning_rate = 1e-4\nLoss = cross\nbatch_size = 2\n"
        "[inputlayer]\nType = input\nInput_Shape = 2:4:4\n"
        "[bn]\nType = batch_normalization\nActivation = relu\n"
        "moving_mean_initializer = zeros\nmoving_variance_initializer = ones\n"
        "[out0]\nType = output\ninput_layers = bn\n"
        "[res]\nType = conv2d\ninput_layers = out0\nkernel_size = 3,3\n"
        "filters = 2\npadding = 1,1\n"
        "[add]\nType = addition\ninput_layers = res, out0\n"
        "[flat]\nType = flatten\n[fc]\nType = fully_connected\nUnit = 3\n"
        "[act]\nType = Activation\nActivation = softmax\n"},
  {"dataset_section_buffer_size", MODEL_MSE ADAM
        "[DataSet]\nbuffer_size = 32\ntrain_data = train.dat\n" INPUT4
        FC ("fc", 3)},
  {"explicit_multiout", MODEL_MSE ADAM INPUT4
        "[mo]\ntype = multiout\n"
        "[a]\ntype = fully_connected\nunit = 3\ninput_layers = mo(0)\n"
        "[b]\ntype = fully_connected\nunit = 3\ninput_layers = MO(1)\n"
        "[sum]\ntype = addition\ninput_layers = a, b\n"},
  {"explicit_multiout_three", MODEL_MSE ADAM INPUT4
        "[mo]\ntype = multiout\ninput_layers = in\n"
        "[a]\ntype = fully_connected\nunit = 4\ninput_layers = mo(2)\n"
        "[b]\ntype = fully_connected\nunit = 4\ninput_layers = mo(0)\n"
        "[sum]\ntype = addition\ninput_layers = a, b, mo(1)\n"},
  {"first_layer_input_shape", MODEL_MSE SGD
        "[fc]\ntype = fully_connected\ninput_shape = 1:1:4\nunit = 3\n"},
  {"step_schedule", MODEL_MSE ADAM
        "[LearningRateScheduler]\ntype = step\n"
        "learning_rate = 0.1, 0.01, 0.001\niteration = 10, 20\n" INPUT4
        FC ("fc", 3)},
  {"sgd_momentum", MODEL_MSE "[Optimizer]\ntype = sgd\nmomentum = 0.9\n"
        "learning_rate = 0.1\n" INPUT4 FC ("fc", 3)
      "weight_regularizer = l2norm\n"},
  /* convolutions */
  {"depthwise_grouped", MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 4:6:6\n[dw]\ntype = depthwiseconv2d\n"
        "kernel_size = 3\nstride = 2\npadding = same\n"
        "[dw2]\ntype = DepthwiseConv2D\nfilters = 8\nkernel_size = 3,3\n"
        "dilation = 1\n[g]\ntype = conv2d\nfilters = 4\nkernel_size = 1,1\n"
        "groups = 4\n"},
  /* tensor-manipulation layers with nntrainer's other keys */
  {"tensorops_keys", MODEL_MSE ADAM INPUT_IMG
        "[w]\ntype = weight\ndim = 1:6:6\ntensor_dtype = fp32\n"
        "weight_name = w0\nweight_initializer = he_uniform\n"
        "input_layers = in\n[m]\ntype = matmul\ninput_layers = in, w\n"
        "inplace = false\nprint = false\n[c]\ntype = cast\n"
        "tensor_dtype = FP32\nprint = true\n[s]\ntype = slice\naxis = 2\n"
        "start_index = 1\nend_index = 3\nprint = false\n[p]\n"
        "type = permute\ndirection = 3,2,1\n"},
  /* the rest of nntrainer's set */
  {"kld_clip", "[Model]\ntype = NeuralNetwork\nbatch_size = 2\n"
        "loss = KLD\n" ADAM INPUT4 FC ("fc", 3) "activation = clip\n"
        "clip_min = -2.5\nclip_max = 4\n[s]\ntype = activation\n"
        "activation = softmax\n"},
  {"constant_derivative_layer", "[Model]\ntype = NeuralNetwork\n"
        "batch_size = 2\n" ADAM INPUT4 FC ("fc", 3)
      "[l]\ntype = constant_derivative\n"},
  {"centroid_knn_frozen", "[Model]\ntype = NeuralNetwork\n"
        "batch_size = 2\n" ADAM INPUT4 FC ("fc", 3) "trainable = false\n"
        "[knn]\ntype = centroid_knn\nnum_class = 4\n"},
  /* transposed convolution and the preprocessing layers */
  {"conv2dtranspose_keys", MODEL_MSE ADAM INPUT_IMG
        "[t]\ntype = Conv2DTranspose\nfilters = 3\nkernel_size = 3,2\n"
        "stride = 2\npadding = 1,0,0,1\ndilation = 1,2\n"
        "weight_initializer = he_uniform\nbias_initializer = ones\n"
        "disable_bias = false\nweight_decay = 0.001\n"
        "[u]\ntype = conv2dtranspose\nfilters = 1\nkernel_size = 2\n"
        "padding = same\ndisable_bias = true\ntrainable = false\n"},
  {"preprocess_keys", MODEL_MSE ADAM INPUT_IMG
        "[f]\ntype = Preprocess_Flip\nflip_direction = Vertical\n"
        "[t]\ntype = preprocess_translate\nrandom_translate = -0.2\n"
        "[n]\ntype = preprocess_l2norm\nepsilon = 1e-6\n" FC ("fc", 3)},
};

/* convolutions: conv1d's padding forms (nntrainer's Padding1D)
 * and the output widths they give, input width 10, kernel 4, stride 3 */
static void
test_conv1d_widths (void)
{
  static const struct
  {
    const char *padding;
    uint32_t width;
  } forms[] = {
    {"valid", 3},               /* (10 - 4) / 3 + 1 */
    {"same", 4},                /* ceil (10 / 3); total 3: 1 left, 2 right */
    {"causal", 4},              /* the same total, all on the left */
    {"2", 4},                   /* (14 - 4) / 3 + 1 */
    {"0,2", 3},                 /* (12 - 4) / 3 + 1 */
    {"5,0", 4},                 /* (15 - 4) / 3 + 1 */
    {"Same", 4},
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    char ini[512];
    snprintf (ini, sizeof ini, MODEL_MSE ADAM "[in]\ntype = input\n"
        "input_shape = 2:1:10\n[conv]\ntype = conv1d\nfilters = 3\n"
        "kernel_size = 4\nstride = 3\npadding = %s\n", forms[i].padding);
    tt_error err;
    tt_model *m = tt_model_load_ini (tt_test_write_text ("widths.ini", ini),
        &err);
    CHECK (m && tt_model_compile (m, &err) == TT_OK, "padding %s: %s",
        forms[i].padding, err.message);
    if (m) {
      tt_shape s = tt_model_output_shape (m);
      CHECK (s.channel == 3 && s.height == 1 && s.width == forms[i].width,
          "padding %s: output %u:%u:%u, expected 3:1:%u", forms[i].padding,
          s.channel, s.height, s.width, forms[i].width);
      tt_model_free (m);
    }
  }
}

static int ie_fail_count;
static char ie_dir[512];        /* the private temporary folder */

static bool
ie_contains (const char *msg, const char *want)
{
  if (want && want[0] == '!')
    return strstr (msg, want + 1) == NULL;
  return want == NULL || strstr (msg, want) != NULL;
}

static void
ie_run_case (const ie_case * c)
{
  char fname[128], path[768];
  tt_error err;
  memset (&err, 0, sizeof err);
  snprintf (fname, sizeof fname, "%s.ini", c->name);
  if (c->ini)
    snprintf (path, sizeof path, "%s", tt_test_write_text (fname, c->ini));
  else                          /* never written */
    snprintf (path, sizeof path, "%s/%s", ie_dir, fname);

  ie_stage failed_at = IE_LOAD;
  tt_status st;
  tt_model *m = tt_model_load_ini (path, &err);
  if (m) {
    failed_at = IE_COMPILE;
    st = tt_model_compile (m, &err);
    CHECK (st != TT_OK, "%s: compiled, but should have failed", c->name);
    tt_model_free (m);
    if (st == TT_OK) {
      ie_fail_count++;
      unlink (path);
      return;
    }
  } else {
    st = err.status;
  }
  int before = tt_test_failed;
  CHECK (st != TT_OK && err.status == st, "%s: status %d, err.status %d",
      c->name, (int) st, (int) err.status);
  CHECK (failed_at == c->stage, "%s: failed in %s, expected in %s: %s",
      c->name, failed_at == IE_LOAD ? "load" : "compile",
      c->stage == IE_LOAD ? "load" : "compile", err.message);
  CHECK (strstr (err.message, path) != NULL,
      "%s: message does not name the file: %s", c->name, err.message);
  for (int i = 0; i < IE_MAX_EXPECT; i++)
    CHECK (ie_contains (err.message, c->expect[i]),
        "%s: message lacks \"%s\": %s", c->name, c->expect[i], err.message);
  if (tt_test_failed != before)
    ie_fail_count++;
  else if (getenv ("TT_TEST_VERBOSE"))
    printf ("ok %-32s %s\n", c->name, err.message);
  unlink (path);
}

static void
ie_run_valid (const ie_valid * v)
{
  char fname[128];
  tt_error err;
  snprintf (fname, sizeof fname, "valid_%s.ini", v->name);
  const char *path = tt_test_write_text (fname, v->ini);
  tt_model *m = tt_model_load_ini (path, &err);
  unlink (path);
  CHECK (m != NULL, "%s: load failed: %s", v->name, err.message);
  if (!m)
    return;
  tt_status st = tt_model_compile (m, &err);
  CHECK (st == TT_OK, "%s: compile failed: %s", v->name, err.message);
  if (st == TT_OK) {
    tt_shape in, out;
    CHECK (tt_model_num_inputs (m) == 1, "%s: %u inputs", v->name,
        tt_model_num_inputs (m));
    tt_model_input_shape (m, 0, &in);
    out = tt_model_label_shape (m);
    uint32_t batch = tt_model_batch_size (m);
    size_t nx = (size_t) batch * in.channel * in.height * in.width;
    size_t nt = (size_t) batch * out.channel * out.height * out.width;
    float *x = calloc (nx, sizeof *x), *t = calloc (nt, sizeof *t);
    for (size_t i = 0; i < nx; i++)
      x[i] = (float) (i % 7) * 0.25f - 0.5f;
    for (size_t i = 0; i < nt; i += out.width)
      t[i] = 1.0f;
    const void *inputs[1] = { x };
    tt_batch_result r;
    st = tt_model_train_batch (m, batch, inputs, NULL, t, &r, &err);
    CHECK (st == TT_OK, "%s: train failed: %s", v->name, err.message);
    CHECK (tt_model_iteration (m) == 1, "%s: iteration %u", v->name,
        tt_model_iteration (m));
    free (x);
    free (t);
  }
  tt_model_free (m);
}

/* An explicit multiout must train exactly like the implicit one the
 * graph inserts when a layer's output feeds several layers (a trainable
 * layer above it makes the derivatives of both outputs count). */
static void
test_multiout_equivalence (void)
{
  static const char *const ini[2] = {
    MODEL_MSE ADAM INPUT4 FC ("pre", 4) "[mo]\ntype = multiout\n"
        "[a]\ntype = fully_connected\nunit = 3\ninput_layers = mo(1)\n"
        "[b]\ntype = fully_connected\nunit = 3\ninput_layers = mo(0)\n"
        "[sum]\ntype = addition\ninput_layers = a, b\n",
    MODEL_MSE ADAM INPUT4 FC ("pre", 4)
        "[a]\ntype = fully_connected\nunit = 3\ninput_layers = pre\n"
        "[b]\ntype = fully_connected\nunit = 3\ninput_layers = pre\n"
        "[sum]\ntype = addition\ninput_layers = a, b\n",
  };
  const float x[8] = { 0.5f, -1.0f, 0.25f, 2.0f, -0.5f, 1.5f, 0.0f, -2.0f };
  const float t[6] = { 1.0f, 0.0f, -1.0f, 0.5f, 0.5f, 0.0f };
  const void *inputs[1] = { x };
  float out[2][6];
  double loss[2][3];
  for (int v = 0; v < 2; v++) {
    tt_error err;
    const char *path = tt_test_write_text (v ? "mo_implicit.ini" :
        "mo_explicit.ini", ini[v]);
    tt_model *m = tt_model_load_ini (path, &err);
    unlink (path);
    tt_status st = m ? tt_model_compile (m, &err) : TT_ERR_INVALID;
    CHECK (st == TT_OK, "multiout variant %d: %s", v, err.message);
    for (int step = 0; step < 3 && st == TT_OK; step++) {
      tt_batch_result r;
      st = tt_model_train_batch (m, 2, inputs, NULL, t, &r, &err);
      loss[v][step] = r.loss;
    }
    if (st == TT_OK)
      st = tt_model_eval_batch (m, 2, inputs, NULL, NULL, NULL, &err);
    CHECK (st == TT_OK, "multiout variant %d: %s", v, err.message);
    if (st == TT_OK)
      memcpy (out[v], tt_model_output (m), sizeof out[v]);
    tt_model_free (m);
    if (st)
      return;
  }
  for (int step = 0; step < 3; step++)
    CHECK (loss[0][step] == loss[1][step],
        "multiout step %d: explicit loss %.9g, implicit %.9g", step,
        loss[0][step], loss[1][step]);
  CHECK (memcmp (out[0], out[1], sizeof out[0]) == 0,
      "explicit and implicit multiout differ after training");
}

static void
test_malformed (void)
{
  size_t n = sizeof ie_cases / sizeof ie_cases[0];
  for (size_t i = 0; i < n; i++)
    ie_run_case (&ie_cases[i]);
  printf ("%zu malformed models, %d with a wrong or missing error\n", n,
      ie_fail_count);
}

static void
test_valid (void)
{
  size_t nv = sizeof ie_valids / sizeof ie_valids[0];
  for (size_t i = 0; i < nv; i++)
    ie_run_valid (&ie_valids[i]);
  printf ("%zu valid models\n", nv);
}

int
main (void)
{
  const char *any = tt_test_write_text ("placeholder", "");
  snprintf (ie_dir, sizeof ie_dir, "%.*s", (int) (strrchr (any, '/') - any),
      any);
  unlink (any);
  TT_TEST_RUN (test_malformed);
  TT_TEST_RUN (test_valid);
  TT_TEST_RUN (test_multiout_equivalence);
  TT_TEST_RUN (test_conv1d_widths);
  rmdir (ie_dir);
  return tt_test_summary ();
}
