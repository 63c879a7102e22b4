/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer's command line: the usage text, the options every
 * subcommand reads (cli_parse fills cli_options) and the one way a
 * subcommand fails (cli_fail: "tensor-trainer: " and a message on
 * standard error).
 */
#include "cli.h"
#include "cli_number.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
cli_usage (FILE * out)
{
  fputs ("usage:\n"
      "  tensor-trainer train MODEL --data IMAGES --labels LABELS\n"
      "      [--valid-data IMAGES --valid-labels LABELS] [--epochs N]\n"
      "      [--batch N] [--samples N] [--valid-samples N]\n"
      "      [--load WEIGHTS] [--save FILE] [--compress] [--seed S]\n"
      "      [--checkpoint FILE] [--resume]\n"
      "      [--threads T] [--memory-limit BYTES] [--profile] [--train WHAT]\n"
      "      [--feature-cache BYTES | --feature-cache-file FILE]\n"
      "  tensor-trainer eval MODEL [--weights WEIGHTS] --data IMAGES\n"
      "      --labels LABELS [--batch N] [--samples N] [--mode M] "
      "[--inference]\n"
      "      [--profile]\n"
      "  tensor-trainer info MODEL [--batch N] [--mode M] [--inference] "
      "[--train WHAT]\n"
      "  tensor-trainer plan MODEL.ini -o OUT.opt.ini [--batch N] "
      "[--align N] [--inference]\n"
      "      [--memory-limit BYTES] [--threads T] [--train WHAT] [--quick]\n"
      "  tensor-trainer check MODEL.opt.ini|MODEL.ttb [--inference]\n"
      "  tensor-trainer pack MODEL.ini [WEIGHTS.bin] -o OUT.ttb [--compress]\n"
      "      [--align N] [--batch N] [--seed S]\n"
      "  tensor-trainer unpack MODEL.ttb -o DIR\n"
      "  tensor-trainer strip MODEL.opt.ini|MODEL.ttb -o MODEL.ini "
      "[--weights MODEL.bin]\n"
      "  tensor-trainer inspect MODEL.ttb\n"
      "  tensor-trainer export MODEL.ttb --c-out DIR [--section NAME]\n"
      "      [--align N] [--format asm|c] [--symbol NAME]\n"
      "  tensor-trainer import MODEL.onnx -o OUT.ini|OUT.ttb [--loss L] "
      "[--optimizer O]\n      [--learning-rate R] [--batch N] "
      "[--freeze NAME,...]\n"
      "  tensor-trainer export-onnx MODEL.onnx --weights WEIGHTS -o OUT.onnx\n"
      "  tensor-trainer lora MODEL.ini --weights BASE.bin --rank R "
      "[--alpha A]\n      [--layers A,B] [--seed S] -o OUT.ini\n"
      "  tensor-trainer lora MODEL.ini --weights W.bin --merge -o OUT.ini\n"
      "  tensor-trainer lora MODEL.ini --weights W.bin --adapters "
      "-o ADAPTERS.bin\n"
      "  tensor-trainer lora MODEL.ini --weights BASE.bin --apply "
      "ADAPTERS.bin [--merge]\n      -o OUT.ini\n"
      "  tensor-trainer aggregate MODEL --broker URL --clients N --rounds R"
      " ...\n      (federated averaging over MQTT: aggregate --help)\n"
      "  tensor-trainer grow MODEL.ini --weights W --layer NAME --units N\n"
      "      -o OUT.ini [--seed S]\n"
      "  (train also takes --replay-size M [--replay-file F]\n"
      "      [--replay-per-batch K])\n"
      "MODEL is an INI file or a bundle; WEIGHTS a BIN or a bundle. --save\n"
      "writes a bundle (INI, plan, weights, optimizer state, counters) unless\n"
      "the path ends in .bin. --checkpoint FILE saves the model the same way\n"
      "after every epoch (atomically: a killed run leaves the last one);\n"
      "--resume with --load FILE continues from such a checkpoint: its\n"
      "weights, optimizer state and counters, training the epochs after the\n"
      "one it was saved at, up to --epochs (or the INI's).\n"
      "With --valid-data, the INI's [Model] save_best_path gets the weights\n"
      "(a BIN) after each epoch whose validation accuracy is the best so\n"
      "far, or ties it with a lower loss (nntrainer's rule).\n"
      "--mode read|mmap|inplace says how a bundle model is opened (default\n"
      "read; inplace: weights used where they lie in the mapped file,\n"
      "evaluation only); --trust skips its weight checksum and finiteness\n"
      "check. pack's --align aligns every tensor in the bundle (default 64;\n"
      "4096 for pages), export's the blob.\n"
      "train, eval and info take --replan (ignore a stored plan) and --naive\n"
      "(no memory reuse). --inference compiles the model for inference only\n"
      "(forward lifetimes, no gradients or optimizer state: a smaller pool);\n"
      "plan --inference stores such a plan, which tensor_predictor loads.\n"
      "plan --quick keeps the quick offset search a model without a stored\n"
      "plan gets when it compiles (milliseconds; the pool may sit a fraction\n"
      "of a percent above its bound) instead of the longer one (seconds on\n"
      "large models) that closes it.\n"
      "train and eval --profile print, after the run, the time each layer\n"
      "took (forward, backward, weight update, in execution order) and the\n"
      "time a step took to standard error.\n"
      "strip writes the plain INI nntrainer reads (no [Plan] sections, the\n"
      "INI's own batch_size) from an optimized INI or a bundle, and with\n"
      "--weights a bundle's weights as a BIN; it never writes over its input.\n"
      "import writes an ONNX model (torch.onnx.export) as OUT.ini and its\n"
      "weights as OUT.bin (train OUT.ini --load OUT.bin), or as a bundle\n"
      "(-o OUT.ttb: INI, plan for --batch, weights);\n"
      "--loss cross_softmax (default: the output taken as logits, a final\n"
      "Softmax absorbed), cross_sigmoid or mse; --optimizer sgd (default),\n"
      "adam or adamw; --learning-rate (default 0.001); --batch (default the\n"
      "ONNX input's fixed batch, else 32); --freeze NAME,... makes layers\n"
      "trainable = false, named by INI section, initializer or module path\n"
      "(features: every layer whose weights are features.*).\n"
      "export-onnx writes MODEL.onnx again with the initializers that became\n"
      "weights replaced by WEIGHTS (a BIN or bundle of the model import made\n"
      "of it: trained), the import's layout changes undone.\n"
      "--train WHAT (train, info, plan) chooses what trains without editing\n"
      "the model: everything (default), biases (every bias and the gamma\n"
      "and beta of batch and layer normalization), last:N (the last N layers\n"
      "with weights) or layers:A,B (those layers); the rest is frozen and\n"
      "planned so (no gradients, no optimizer state, no activations kept for\n"
      "it). plan stores the choice in the optimized INI ([Plan] train).\n"
      "train --feature-cache BYTES keeps, during the first epoch, the\n"
      "outputs of the frozen prefix (the layers before the first that trains)\n"
      "for the first samples that fit in BYTES, and trains the later epochs\n"
      "from them without running the prefix (the same weights, bit for bit);\n"
      "--feature-cache-file FILE keeps every sample's in FILE instead,\n"
      "removed at the end. Refused without a frozen prefix, with batch\n"
      "normalization or random layers in it, on several threads and under\n"
      "--memory-limit.\n"
      "eval --per-class prints, after its line, one line a class:\n"
      "class=C samples=N correct=K accuracy=A (a class without samples\n"
      "has accuracy=nan).\n"
      "grow writes OUT.ini, MODEL.ini with the fully_connected layer NAME's\n"
      "unit raised to N, and OUT.bin beside it: W's weights, NAME's old\n"
      "outputs kept bit for bit, the new ones drawn by its initializer with\n"
      "--seed (new biases 0).\n"
      "train --replay-size M keeps M past training samples (reservoir\n"
      "sampling, --seed) and, once it holds K, mixes K of them (default half\n"
      "the batch, --replay-per-batch) into every training batch; --replay-file\n"
      "F loads the buffer at the start when F exists and saves it at the end\n"
      "(the format tensor_trainer's replay-file writes).\n"
      "IMAGES and LABELS are IDX files (MNIST format), gzipped or not.\n"
      "lora (LoRA adapters, docs/personalize.md) writes OUT.ini and OUT.bin\n"
      "beside it: with --rank, lora_rank (and --alpha's lora_alpha) on every\n"
      "fully_connected, multi_head_attention and 1x1 conv2d layer or on\n"
      "--layers, the weights with fresh adapters (--seed); --merge, the INI\n"
      "without them and each adapted weight W + s A B (an attention's four\n"
      "projections, a 1x1 conv2d's filter);\n"
      "--adapters, only the adapters (loraA, loraB of each adapted layer in\n"
      "BIN order, float32, no header) as -o's file; --apply, the base\n"
      "weights with those adapters (merged with --merge).\n"
      /* mixed precision */
      "train, eval, info and plan take --precision P (docs/precision.md):\n"
      "fp32, bf16 or fp16 (the activations' type; the weights' stays the\n"
      "INI's), or W-A as [Model] model_tensor_type takes it (FP32-BF16,\n"
      "W16A16, ...); what it does on this CPU is said once on stderr. plan\n"
      "stores it as [Model] model_tensor_type. With loss scaling ([Model]\n"
      "loss_scale, or activations in bf16 or fp16) train's epoch lines end\n"
      "with loss_scale=S skipped_steps=N (the steps of the epoch whose\n"
      "gradients overflowed: nothing updated, the scale halved).\n", out);
}

int
cli_fail (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fputs ("tensor-trainer: ", stderr);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
  return 1;
}

int
cli_parse (int argc, char **argv, cli_options * o)
{
  memset (o, 0, sizeof *o);
  if (argc < 3)
    return -1;
  o->command = argv[1];
  o->model = argv[2];
  for (int i = 3; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t n;
    const char **str = NULL;
    uint32_t *num = NULL;
    if (!strcmp (a, "--data"))
      str = &o->data;
    else if (!strcmp (a, "--labels"))
      str = &o->labels;
    else if (!strcmp (a, "--valid-data"))
      str = &o->valid_data;
    else if (!strcmp (a, "--valid-labels"))
      str = &o->valid_labels;
    else if (!strcmp (a, "--load"))
      str = &o->load;
    else if (!strcmp (a, "--save"))
      str = &o->save;
    else if (!strcmp (a, "--weights"))
      str = &o->weights;
    else if (!strcmp (a, "-o") || !strcmp (a, "--output"))
      str = &o->output;
    else if (!strcmp (a, "--c-out"))
      str = &o->c_out;
    else if (!strcmp (a, "--section"))
      str = &o->section;
    else if (!strcmp (a, "--format"))
      str = &o->format;
    else if (!strcmp (a, "--symbol"))
      str = &o->symbol;
    else if (!strcmp (a, "--mode"))
      str = &o->mode;
    else if (!strcmp (a, "--loss"))
      str = &o->loss;
    else if (!strcmp (a, "--optimizer"))
      str = &o->optimizer;
    else if (!strcmp (a, "--learning-rate"))
      str = &o->learning_rate;
    else if (!strcmp (a, "--freeze"))
      str = &o->freeze;
    else if (!strcmp (a, "--train"))
      str = &o->train;
    else if (!strcmp (a, "--compress")) {
      o->compress = true;
      continue;
    } else if (!strcmp (a, "--trust")) {
      o->trust = true;
      continue;
    } else if (a[0] != '-' && !o->positional && !strcmp (o->command, "pack")) {
      o->positional = a;
      continue;
    } else if (!strcmp (a, "--align"))
      num = &o->align;
    else if (!strcmp (a, "--replan") || !strcmp (a, "--naive")) {
      if (a[2] == 'r')
        o->replan = true;
      else
        o->naive = true;
      continue;
    } else if (!strcmp (a, "--resume")) {
      o->resume = true;
      continue;
    } else if (!strcmp (a, "--inference")) {
      o->inference = true;
      continue;
    } else if (!strcmp (a, "--quick")) {
      o->plan_quick = true;
      continue;
    } else if (!strcmp (a, "--profile")) {
      o->profile = true;
      continue;
    } else if (!strcmp (a, "--per-class")) {
      /* personalization: eval --per-class */
      o->per_class = true;
      continue;
    } else if (!strcmp (a, "--checkpoint"))
      str = &o->checkpoint;
    else if (!strcmp (a, "--epochs"))
      num = &o->epochs;
    else if (!strcmp (a, "--batch"))
      num = &o->batch;
    else if (!strcmp (a, "--samples"))
      num = &o->samples;
    else if (!strcmp (a, "--valid-samples"))
      num = &o->valid_samples;
    else if (!strcmp (a, "--seed")) {
      if (!tt_cli_uint (v, UINT64_MAX, &o->seed))
        return cli_fail ("--seed needs a non-negative integer"), -2;
      o->has_seed = true;
      i++;
      continue;
    } else if (!strcmp (a, "--memory-limit")) {
      if (!tt_cli_bytes (v, UINT64_MAX, &o->memory_limit) || !o->memory_limit)
        return cli_fail ("--memory-limit needs a positive byte count (K, M "
            "or G: times 1024, 1024^2, 1024^3), got '%s'", v ? v : ""), -2;
      i++;
      continue;
    } else if (!strcmp (a, "--threads")) {
      if (!tt_cli_uint (v, 64, &n) || n == 0)
        return cli_fail ("--threads needs an integer in [1, 64]"), -2;
      o->threads = (int) n;
      i++;
      continue;
    } else if (!strcmp (a, "--feature-cache")) {
      /* feature cache: memory for the frozen prefix's outputs */
      if (!tt_cli_bytes (v, UINT64_MAX, &o->feature_cache) || !o->feature_cache)
        return cli_fail ("--feature-cache needs a positive byte count (K, M "
            "or G: times 1024, 1024^2, 1024^3), got '%s'", v ? v : ""), -2;
      i++;
      continue;
    } else if (!strcmp (a, "--feature-cache-file")) {
      str = &o->feature_cache_file;
    } else if (!strcmp (a, "--layer"))  /* grow */
      str = &o->layer;
    else if (!strcmp (a, "--units"))
      num = &o->units;
    else if (!strcmp (a, "--replay-file"))      /* replay */
      str = &o->replay_file;
    else if (!strcmp (a, "--replay-size"))
      num = &o->replay_size;
    else if (!strcmp (a, "--replay-per-batch")) {
      if (!tt_cli_uint (v, UINT32_MAX, &n))
        return cli_fail ("--replay-per-batch needs a non-negative integer"), -2;
      o->replay_per_batch = (uint32_t) n;
      o->has_replay_per_batch = true;
      i++;
      continue;
    } else if (!strcmp (a, "--rank"))   /* lora */
      num = &o->lora_rank;
    else if (!strcmp (a, "--alpha"))
      num = &o->lora_alpha;
    else if (!strcmp (a, "--layers"))
      str = &o->lora_layers;
    else if (!strcmp (a, "--apply"))
      str = &o->lora_apply;
    else if (!strcmp (a, "--merge") || !strcmp (a, "--adapters")) {
      if (a[2] == 'm')
        o->lora_merge = true;
      else
        o->lora_adapters = true;
      continue;
    } else if (!strcmp (a, "--precision")) {    /* mixed precision */
      str = &o->precision;
    } else {
      return cli_fail ("unknown option '%s'", a), -2;
    }
    if (!v)
      return cli_fail ("%s needs a value", a), -2;
    if (str)
      *str = v;
    else if (!tt_cli_uint (v, UINT32_MAX, &n) || n == 0)
      return cli_fail ("%s needs a positive integer, got '%s'", a, v), -2;
    else
      *num = (uint32_t) n;
    i++;
  }
  return 0;
}
