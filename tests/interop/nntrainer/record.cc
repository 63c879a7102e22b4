// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * record.cc - records what a real nntrainer produces for one model, so that
 * tensor-trainer can be checked against it without building nntrainer.
 *
 * Built and run by record.sh against an installed nntrainer (libnntrainer +
 * ccapi). Never built by the project's meson: CI only reads the recordings.
 *
 * One process does one stage for one model. nntrainer draws its initial
 * weights from a std::mt19937 seeded with 0 once per process (utils/
 * util_func.h), so a fresh process per stage makes every file a function of
 * (model INI, nntrainer commit, compiler/libstdc++) only.
 *
 *   record init  INI OUTDIR NAME
 *       loadFromConfig, compile(TRAIN), initialize(TRAIN), save(BIN)
 *       -> NAME.init.bin, NAME.order.txt (weight order of that BIN)
 *   record infer INI OUTDIR NAME BIN TAG BATCH...
 *       loadFromConfig, compile(TRAIN), initialize(TRAIN), load(BIN) and
 *       inference on the fixed inputs for each BATCH
 *       -> NAME.input.f32 (the largest batch; a smaller batch is its first
 *          samples), NAME.TAG.out.bN.f32; also checks that an INFERENCE-mode
 *          model loading the same BIN gives the same outputs
 *   record train INI OUTDIR NAME BIN
 *       as infer, but batch_size=4, epochs=2, save_path=NAME.savepath.bin,
 *       load(BIN), train on a generator dataset (4 batches of 4 fixed samples
 *       per epoch, no shuffling for generators), then save(BIN)
 *       -> NAME.train.in.f32, NAME.train.label.f32, NAME.trained.bin,
 *          NAME.savepath.bin (what nntrainer writes during training)
 *   record best INI OUTDIR NAME
 *       loadFromConfig (the INI names save_best_path, a relative path),
 *       compile(TRAIN), initialize(TRAIN), save(BIN) as NAME.best_init.bin,
 *       then train() with batch_size=4, epochs=BEST_EPOCHS on the training
 *       generator and a validation generator (2 batches of 4 samples of
 *       stream 0x3C5, label of sample k: (3k + 2) mod classes); after each
 *       epoch, whether the save_best_path file changed, with the epoch's
 *       validation accuracy and loss
 *       -> NAME.best_init.bin, NAME.valid.in.f32, NAME.valid.label.f32,
 *          NAME.best.txt (per epoch: accuracy, loss, saved or not, the
 *          counters in the file), NAME.best.bin (the file at the end), and
 *          where the relative path landed (working directory or the INI's
 *          folder)
 *
 * The data: sample k of stream s is drawn from xorshift32 with the state
 * (0x9E3779B9u * (k + 1)) ^ s, one draw per float in NCHW order:
 * x = (float)(draw >> 8) / 16777216 * 2 - 1, in [-1, 1). Streams:
 * 0x1F0 inference inputs, 0x7A1 training inputs. Training label of sample k:
 * one-hot of class (3 * k + 1) % classes. All files are raw little-endian
 * float32, batch outermost.
 *
 * A model whose input is token indices (embedding) says so in the INI's
 * first line, `# record.cc: indices N`: every input float x of every
 * stream then becomes the integer floor((x + 1) / 2 * N), in [0, N).
 */

#include <dataset.h>
#include <layer.h>
#include <layer_context.h>
#include <model.h>
#include <tensor.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr uint32_t STREAM_INFER = 0x1F0u;
constexpr uint32_t STREAM_TRAIN = 0x7A1u;
constexpr uint32_t STREAM_VALID = 0x3C5u;
constexpr unsigned VALID_BATCHES = 2;
constexpr unsigned BEST_EPOCHS = 6;
constexpr unsigned TRAIN_BATCH = 4;
constexpr unsigned TRAIN_BATCHES = 4;
constexpr unsigned TRAIN_EPOCHS = 2;

/* > 0: the inputs are indices in [0, index_range) (the INI's first line) */
unsigned index_range = 0;

uint32_t xorshift32(uint32_t &s) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return s;
}

/* sample k of stream s: n floats in [-1, 1) */
void sample(uint32_t stream, unsigned k, float *out, size_t n) {
  uint32_t s = (0x9E3779B9u * (k + 1u)) ^ stream;
  if (s == 0)
    s = 1;
  for (size_t i = 0; i < n; ++i)
    out[i] = (float)(xorshift32(s) >> 8) / 16777216.0f * 2.0f - 1.0f;
  for (size_t i = 0; i < n && index_range; ++i) {
    float v = std::floor((out[i] + 1.0f) * 0.5f * (float)index_range);
    out[i] = v < (float)index_range ? v : (float)(index_range - 1);
  }
}

/* the INI's first line: `# record.cc: indices N` */
void read_index_range(const std::string &ini) {
  std::ifstream f(ini);
  std::string line;
  const std::string mark = "# record.cc: indices ";
  if (std::getline(f, line) && line.rfind(mark, 0) == 0)
    index_range = (unsigned)std::stoul(line.substr(mark.size()));
}

void write_f32(const std::string &path, const float *p, size_t n) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(p), n * sizeof(float));
  if (!f)
    throw std::runtime_error("cannot write " + path);
}

/* one manifest line per file written: record.sh adds size and sha256 */
void manifest(const std::string &file, const std::string &model,
              const std::string &shape, const std::string &meaning) {
  std::cout << "FILE\t" << file << '\t' << model << '\t' << shape << '\t'
            << meaning << '\n';
}

std::string dim_str(const ml::train::TensorDim &d) {
  std::ostringstream s;
  s << d.batch() << ':' << d.channel() << ':' << d.height() << ':'
    << d.width();
  return s.str();
}

/* "N:c:h:w" for batch N */
std::string shape_str(unsigned n, const ml::train::TensorDim &d) {
  std::ostringstream s;
  s << n << ':' << d.channel() << ':' << d.height() << ':' << d.width();
  return s.str();
}

size_t feature_len(const ml::train::TensorDim &d) {
  return (size_t)d.channel() * d.height() * d.width();
}

std::unique_ptr<ml::train::Model> make_model(const std::string &ini,
                                             const std::vector<std::string> &props) {
  auto model = ml::train::createModel(ml::train::ModelType::NEURAL_NET);
  int rc = model->loadFromConfig(ini);
  if (rc != 0)
    throw std::runtime_error("loadFromConfig failed: " + std::to_string(rc));
  if (!props.empty())
    model->setProperty(props);
  return model;
}

void prepare(ml::train::Model &m, ml::train::ExecutionMode mode) {
  int rc = m.compile(mode);
  if (rc != 0)
    throw std::runtime_error("compile failed: " + std::to_string(rc));
  rc = m.initialize(mode);
  if (rc != 0)
    throw std::runtime_error("initialize failed: " + std::to_string(rc));
}

/* Writes, for each layer in the order NeuralNetwork::save visits them
 * (model_graph.cbegin()..cend(), i.e. the sorted graph), its weights and
 * their byte offset in the BIN. */
void write_order(ml::train::Model &m, const std::string &path,
                 size_t &weights_bytes) {
  std::ofstream f(path, std::ios::trunc);
  struct Acc {
    std::ofstream *f;
    size_t offset;
    unsigned idx;
  } acc{&f, 0, 0};
  f << "# layers in nntrainer's sorted graph order (the order "
       "NeuralNetwork::save writes them);\n"
       "# per weight: name, dim b:c:h:w, bytes, byte offset in the BIN, "
       "saved (shared weights are saved once)\n";
  m.forEachLayer(
    [](ml::train::Layer &l, nntrainer::RunLayerContext &rc, void *ud) {
      auto *a = static_cast<Acc *>(ud);
      *a->f << "layer " << a->idx++ << ' ' << l.getName() << ' ' << l.getType()
            << " trainable=" << (rc.getTrainable() ? "true" : "false")
            << " weights=" << rc.getNumWeights() << '\n';
      for (unsigned i = 0; i < rc.getNumWeights(); ++i) {
        auto &w = rc.getWeight(i);
        bool saved = rc.isGradientFirstAccess(i);
        size_t bytes = w.bytes();
        *a->f << "  weight " << i << ' ' << rc.getWeightName(i)
              << " dim=" << dim_str(w.getDim()) << " bytes=" << bytes
              << " offset=" << (saved ? std::to_string(a->offset) : "-")
              << " saved=" << (saved ? "yes" : "no") << '\n';
        if (saved)
          a->offset += bytes;
      }
    },
    &acc);
  f << "weights_bytes " << acc.offset << '\n';
  weights_bytes = acc.offset;
}

/* What follows the weights in a BIN nntrainer wrote: decoded by size, as
 * NeuralNetwork::save writes it (weights, then for adam the tag "adam" and
 * the optimizer variables it has, then in TRAIN mode epoch and iteration
 * as 32-bit unsigned ints). */
std::string describe_bin(const std::string &path, size_t wb) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  size_t size = (size_t)f.tellg();
  std::ostringstream s;
  s << "size=" << size << " weights_bytes=" << wb;
  if (size < wb)
    return s.str() + " SHORT";
  std::vector<char> tail(size - wb);
  f.seekg((std::streamoff)wb);
  f.read(tail.data(), (std::streamsize)tail.size());
  size_t rest = tail.size(), at = 0;
  if (rest >= 4 && std::memcmp(tail.data(), "adam", 4) == 0) {
    s << " +'adam'";
    at = 4;
    rest -= 4;
  }
  if (rest >= 8) {
    size_t opt = rest - 8;
    uint32_t epoch, iter;
    std::memcpy(&epoch, tail.data() + at + opt, 4);
    std::memcpy(&iter, tail.data() + at + opt + 4, 4);
    s << " +optimizer_variables_bytes=" << opt << " +epoch_u32=" << epoch
      << " +iteration_u32=" << iter;
  } else if (rest) {
    s << " +" << rest << "_unexplained_bytes";
  }
  return s.str();
}

size_t weights_bytes(ml::train::Model &m) {
  size_t total = 0;
  m.forEachLayer(
    [](ml::train::Layer &, nntrainer::RunLayerContext &rc, void *ud) {
      for (unsigned i = 0; i < rc.getNumWeights(); ++i)
        if (rc.isGradientFirstAccess(i))
          *static_cast<size_t *>(ud) += rc.getWeight(i).bytes();
    },
    &total);
  return total;
}

std::string bin_base(const std::string &path) {
  size_t p = path.find_last_of('/');
  return p == std::string::npos ? path : path.substr(p + 1);
}

std::vector<float> make_inputs(const ml::train::TensorDim &in, unsigned batch) {
  size_t n = feature_len(in);
  std::vector<float> x(n * batch);
  for (unsigned k = 0; k < batch; ++k)
    sample(STREAM_INFER, k, x.data() + k * n, n);
  return x;
}

/* nntrainer's inference maps the caller's buffer and its input layer may
 * normalize in place: always hand it a copy. */
/* out_len: floats per sample of the model's one output (an INFERENCE-
 * compiled model has no label layer, so it cannot tell its output dims) */
/* IEEE half (binary16) bits to float */
float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f,
           m = h & 0x3ff, u;
  if (e == 0x1f)
    u = sign | 0x7f800000u | (m << 13);
  else if (e != 0)
    u = sign | ((e + 112) << 23) | (m << 13);
  else if (m == 0)
    u = sign;
  else {
    /* subnormal: m * 2^-24 */
    float f = std::ldexp((float)m, -24);
    std::memcpy(&u, &f, 4);
    u |= sign;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/* The data type of the tensor inference() returns: the first output of the
 * last layer in sorted order (the graph's output). The ccapi hands that
 * tensor's data out as float * whatever its type; at model_tensor_type
 * FP16-FP16 the output of a cross_softmax loss layer (and of every
 * INFERENCE-compiled model's last layer) is FP16, an mse layer's FP32. */
ml::train::TensorDim::DataType output_type(ml::train::Model &m) {
  struct P {
    ml::train::TensorDim::DataType t;
  } p{ml::train::TensorDim::DataType::FP32};
  m.forEachLayer(
    [](ml::train::Layer &l, nntrainer::RunLayerContext &rc, void *ud) {
      if (rc.getNumOutputs() > 0)
        static_cast<P *>(ud)->t = rc.getOutput(0).getDataType();
    },
    &p);
  return p.t;
}

std::vector<float> run_inference(ml::train::Model &m, const std::vector<float> &x,
                                 unsigned batch, size_t out_len) {
  std::vector<float> copy(x.begin(), x.end());
  auto out = m.inference(batch, {copy.data()});
  if (out.size() != 1)
    throw std::runtime_error("expected one output");
  auto t = output_type(m);
  if (t == ml::train::TensorDim::DataType::FP16) {
    const uint16_t *h = reinterpret_cast<const uint16_t *>(out[0]);
    std::vector<float> y(out_len * batch);
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = half_to_float(h[i]);
    return y;
  }
  if (t != ml::train::TensorDim::DataType::FP32)
    throw std::runtime_error("output of a data type other than FP32/FP16");
  return std::vector<float>(out[0], out[0] + out_len * batch);
}

/* Prints the first two floats of the first Adam moment of the first weight
 * that has optimizer variables: load() reads moments whenever the optimizer
 * is adam, whether the file has them or not. */
void probe_moments(ml::train::Model &m, const std::string &name,
                   const std::string &when) {
  struct P {
    bool done;
    std::string what;
  } p{false, ""};
  m.forEachLayer(
    [](ml::train::Layer &l, nntrainer::RunLayerContext &rc, void *ud) {
      auto *p = static_cast<P *>(ud);
      for (unsigned i = 0; i < rc.getNumWeights() && !p->done; ++i) {
        if (rc.getNumWeightOptVar(i) == 0)
          continue;
        auto &t = rc.getWeightOptVar(i, 0);
        if (t.empty() || t.size() < 2)
          continue;
        const float *d = t.getData<float>();
        uint32_t u0, u1;
        std::memcpy(&u0, &d[0], 4);
        std::memcpy(&u1, &d[1], 4);
        std::ostringstream s;
        s << rc.getWeightName(i) << " moment0[0..1] = " << d[0] << ", "
          << d[1] << " (as u32: " << u0 << ", " << u1 << ")";
        p->what = s.str();
        p->done = true;
      }
    },
    &p);
  std::cout << "probe " << name << ' ' << when << ": "
            << (p.done ? p.what : std::string("no optimizer variables"))
            << '\n';
}

int stage_init(const std::string &ini, const std::string &dir,
               const std::string &name) {
  auto m = make_model(ini, {});
  prepare(*m, ml::train::ExecutionMode::TRAIN);
  std::string bin = dir + "/" + name + ".init.bin";
  m->save(bin, ml::train::ModelFormat::MODEL_FORMAT_BIN);
  size_t wb = 0;
  write_order(*m, dir + "/" + name + ".order.txt", wb);
  auto in = m->getInputDimension();
  auto out = m->getOutputDimension();
  std::cout << "init " << name << " input=" << dim_str(in[0])
            << " output=" << dim_str(out[0]) << " weights_bytes=" << wb
            << '\n';
  manifest(name + ".init.bin", name, "BIN",
           "save(BIN) right after initialize(TRAIN): " + describe_bin(bin, wb));
  manifest(name + ".order.txt", name, "text",
           "weight order of the BIN (forEachLayer = sorted graph order)");
  return 0;
}

int stage_infer(const std::string &ini, const std::string &dir,
                const std::string &name, const std::string &bin,
                const std::string &tag, const std::vector<unsigned> &batches) {
  unsigned maxb = 0;
  for (unsigned b : batches)
    maxb = b > maxb ? b : maxb;

  auto m = make_model(ini, {});
  prepare(*m, ml::train::ExecutionMode::TRAIN);
  m->load(bin, ml::train::ModelFormat::MODEL_FORMAT_BIN);
  probe_moments(*m, name, "after load(" + bin_base(bin) + ")");
  auto in = m->getInputDimension();
  auto x = make_inputs(in[0], maxb);
  size_t out_len = feature_len(m->getOutputDimension()[0]);
  write_f32(dir + "/" + name + ".input.f32", x.data(), x.size());
  manifest(name + ".input.f32", name,
           shape_str(maxb, in[0]),
           "fixed inference inputs (stream 0x1F0); batch N uses the first N");

  std::vector<std::vector<float>> outs;
  for (unsigned b : batches) {
    auto y = run_inference(*m, x, b, out_len);
    std::string f = name + "." + tag + ".out.b" + std::to_string(b) + ".f32";
    write_f32(dir + "/" + f, y.data(), y.size());
    manifest(f, name,
             shape_str(b, m->getOutputDimension()[0]),
             "inference(batch " + std::to_string(b) + ") with " + bin_base(bin) +
               " loaded into a TRAIN-compiled model");
    outs.push_back(y);
  }

  /* the same BIN through an INFERENCE-mode model (no loss layer, mmap load) */
  auto mi = make_model(ini, {});
  prepare(*mi, ml::train::ExecutionMode::INFERENCE);
  mi->load(bin, ml::train::ModelFormat::MODEL_FORMAT_BIN);
  for (size_t i = 0; i < batches.size(); ++i) {
    auto y = run_inference(*mi, x, batches[i], out_len);
    float md = 0;
    for (size_t j = 0; j < y.size(); ++j)
      md = std::fmax(md, std::fabs(y[j] - outs[i][j]));
    std::cout << "infer " << name << ' ' << tag << " b" << batches[i]
              << " inference-mode max|diff|=" << md << '\n';
  }
  return 0;
}

struct TrainData {
  unsigned in_len, classes, next;
};

int train_gen(float **input, float **label, bool *last, void *ud) {
  auto *d = static_cast<TrainData *>(ud);
  if (d->next == TRAIN_BATCH * TRAIN_BATCHES) {
    d->next = 0;
    *last = true;
    return 0;
  }
  unsigned k = d->next++;
  sample(STREAM_TRAIN, k, input[0], d->in_len);
  for (unsigned c = 0; c < d->classes; ++c)
    label[0][c] = 0.0f;
  label[0][(3 * k + 1) % d->classes] = 1.0f;
  *last = false;
  return 0;
}

int stage_train(const std::string &ini, const std::string &dir,
                const std::string &name, const std::string &bin) {
  std::string savepath = dir + "/" + name + ".savepath.bin";
  auto m = make_model(ini, {"batch_size=" + std::to_string(TRAIN_BATCH),
                            "epochs=" + std::to_string(TRAIN_EPOCHS),
                            "save_path=" + savepath});
  prepare(*m, ml::train::ExecutionMode::TRAIN);
  m->load(bin, ml::train::ModelFormat::MODEL_FORMAT_BIN);
  probe_moments(*m, name, "after load(" + bin_base(bin) + ")");

  auto in = m->getInputDimension();
  auto out = m->getOutputDimension();
  TrainData td{(unsigned)feature_len(in[0]), (unsigned)feature_len(out[0]), 0};

  /* the exact data, for replaying the training elsewhere */
  const unsigned n = TRAIN_BATCH * TRAIN_BATCHES;
  std::vector<float> xi(td.in_len * n), yl(td.classes * n, 0.0f);
  for (unsigned k = 0; k < n; ++k) {
    sample(STREAM_TRAIN, k, xi.data() + k * td.in_len, td.in_len);
    yl[k * td.classes + (3 * k + 1) % td.classes] = 1.0f;
  }
  write_f32(dir + "/" + name + ".train.in.f32", xi.data(), xi.size());
  write_f32(dir + "/" + name + ".train.label.f32", yl.data(), yl.size());
  manifest(name + ".train.in.f32", name,
           shape_str(n, in[0]),
           "training inputs (stream 0x7A1), in the order nntrainer got them "
           "each epoch");
  manifest(name + ".train.label.f32", name,
           shape_str(n, out[0]),
           "training labels: one-hot of (3k+1) mod classes");

  auto ds = ml::train::createDataset(ml::train::DatasetType::GENERATOR,
                                     train_gen, &td);
  int rc = m->setDataset(ml::train::DatasetModeType::MODE_TRAIN, std::move(ds));
  if (rc != 0)
    throw std::runtime_error("setDataset failed: " + std::to_string(rc));
  rc = m->train();
  std::cout << '\n';
  if (rc != 0)
    throw std::runtime_error("train failed: " + std::to_string(rc));
  std::string trained = dir + "/" + name + ".trained.bin";
  m->save(trained, ml::train::ModelFormat::MODEL_FORMAT_BIN);
  size_t wb = weights_bytes(*m);
  manifest(name + ".trained.bin", name, "BIN",
           "save(BIN) after train() (" + bin_base(bin) + " loaded, batch 4, 2 "
           "epochs of 4 batches): " + describe_bin(trained, wb));
  manifest(name + ".savepath.bin", name, "BIN",
           "written by train() itself through save_path at the end of epoch 2: " +
             describe_bin(savepath, wb));
  std::cout << "train " << name << " epochs=" << m->getCurrentEpoch()
            << " last_training_loss=" << m->getTrainingLoss() << '\n';
  return 0;
}

struct ValidData {
  unsigned in_len, classes, next;
};

int valid_gen(float **input, float **label, bool *last, void *ud) {
  auto *d = static_cast<ValidData *>(ud);
  if (d->next == TRAIN_BATCH * VALID_BATCHES) {
    d->next = 0;
    *last = true;
    return 0;
  }
  unsigned k = d->next++;
  sample(STREAM_VALID, k, input[0], d->in_len);
  for (unsigned c = 0; c < d->classes; ++c)
    label[0][c] = 0.0f;
  label[0][(3 * k + 2) % d->classes] = 1.0f;
  *last = false;
  return 0;
}

std::vector<char> read_all(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return {};
  return std::vector<char>((std::istreambuf_iterator<char>(f)),
                           std::istreambuf_iterator<char>());
}

struct BestWatch {
  ml::train::Model *m;
  std::string file, log;
  std::vector<char> last;
  unsigned epoch;
};

/* after each epoch: did train() rewrite the save_best_path file? */
void best_epoch_done(void *ud) {
  auto *w = static_cast<BestWatch *>(ud);
  w->epoch++;
  auto now = read_all(w->file);
  bool saved = !now.empty() && now != w->last;
  auto vs = w->m->getValidStats();
  std::ostringstream s;
  s.precision(9);
  s << "epoch " << w->epoch << " accuracy " << vs.accuracy << " loss "
    << vs.loss << " saved " << (saved ? "yes" : "no");
  if (saved && now.size() >= 8) {
    uint32_t c[2];
    std::memcpy(c, now.data() + now.size() - 8, 8);
    s << " bytes " << now.size() << " counters " << c[0] << ' ' << c[1];
  }
  w->log += s.str() + "\n";
  w->last = now;
}

int stage_best(const std::string &ini, const std::string &dir,
               const std::string &name) {
  auto m = make_model(ini, {"batch_size=" + std::to_string(TRAIN_BATCH),
                            "epochs=" + std::to_string(BEST_EPOCHS)});
  prepare(*m, ml::train::ExecutionMode::TRAIN);
  std::string init = dir + "/" + name + ".best_init.bin";
  m->save(init, ml::train::ModelFormat::MODEL_FORMAT_BIN);
  size_t wb = weights_bytes(*m);
  manifest(name + ".best_init.bin", name, "BIN",
           "save(BIN) after initialize(TRAIN), the start of the save_best_path "
           "run: " + describe_bin(init, wb));

  auto in = m->getInputDimension();
  auto out = m->getOutputDimension();
  TrainData td{(unsigned)feature_len(in[0]), (unsigned)feature_len(out[0]), 0};
  ValidData vd{td.in_len, td.classes, 0};
  const unsigned nv = TRAIN_BATCH * VALID_BATCHES;
  std::vector<float> xv(vd.in_len * nv), yv(vd.classes * nv, 0.0f);
  for (unsigned k = 0; k < nv; ++k) {
    sample(STREAM_VALID, k, xv.data() + k * vd.in_len, vd.in_len);
    yv[k * vd.classes + (3 * k + 2) % vd.classes] = 1.0f;
  }
  write_f32(dir + "/" + name + ".valid.in.f32", xv.data(), xv.size());
  write_f32(dir + "/" + name + ".valid.label.f32", yv.data(), yv.size());
  manifest(name + ".valid.in.f32", name, shape_str(nv, in[0]),
           "validation inputs (stream 0x3C5), 2 batches of 4, every epoch");
  manifest(name + ".valid.label.f32", name, shape_str(nv, out[0]),
           "validation labels: one-hot of (3k+2) mod classes");

  int rc = m->setDataset(ml::train::DatasetModeType::MODE_TRAIN,
                         ml::train::createDataset(
                           ml::train::DatasetType::GENERATOR, train_gen, &td));
  if (rc == 0)
    rc = m->setDataset(ml::train::DatasetModeType::MODE_VALID,
                       ml::train::createDataset(
                         ml::train::DatasetType::GENERATOR, valid_gen, &vd));
  if (rc != 0)
    throw std::runtime_error("setDataset failed: " + std::to_string(rc));

  /* the INI's save_best_path is relative: where does it land? */
  std::ifstream cfg(ini);
  std::string line, best;
  while (std::getline(cfg, line))
    if (line.rfind("save_best_path", 0) == 0)
      best = line.substr(line.find('=') + 1);
  best.erase(0, best.find_first_not_of(" \t"));
  if (best.empty() || best[0] == '/')
    throw std::runtime_error("the INI needs a relative save_best_path");
  std::string ini_dir = ini.substr(0, ini.find_last_of('/') + 1);
  BestWatch w{m.get(), best, "", {}, 0};
  rc = m->train({}, [](void *) { return false; }, nullptr, best_epoch_done, &w);
  std::cout << '\n';
  if (rc != 0)
    throw std::runtime_error("train failed: " + std::to_string(rc));
  bool in_cwd = !read_all(best).empty();
  bool in_ini_dir = !read_all(ini_dir + best).empty();
  w.log += std::string("save_best_path ") + best + ": written relative to the "
           "working directory: " + (in_cwd ? "yes" : "no") +
           "; relative to the INI's folder: " + (in_ini_dir ? "yes" : "no") +
           "\n";
  std::ofstream(dir + "/" + name + ".best.txt") << w.log;
  manifest(name + ".best.txt", name, "text",
           "per epoch: validation accuracy (%) and loss, whether train() "
           "rewrote the save_best_path file, its counters; where it landed");
  auto bytes = read_all(best);
  std::ofstream(dir + "/" + name + ".best.bin", std::ios::binary)
    .write(bytes.data(), (std::streamsize)bytes.size());
  manifest(name + ".best.bin", name, "BIN",
           "the save_best_path file at the end of the run: " +
             describe_bin(dir + "/" + name + ".best.bin", wb));
  std::cout << "best " << name << ":\n" << w.log;
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 5) {
    std::cerr << "usage: record init|infer|train|best INI OUTDIR NAME [BIN [TAG "
                 "BATCH...]]\n";
    return 2;
  }
  std::string stage = argv[1], ini = argv[2], dir = argv[3], name = argv[4];
  try {
    read_index_range(ini);
    if (stage == "init")
      return stage_init(ini, dir, name);
    if (stage == "infer" && argc >= 8) {
      std::vector<unsigned> batches;
      for (int i = 7; i < argc; ++i)
        batches.push_back((unsigned)std::stoul(argv[i]));
      return stage_infer(ini, dir, name, argv[5], argv[6], batches);
    }
    if (stage == "train" && argc == 6)
      return stage_train(ini, dir, name, argv[5]);
    if (stage == "best")
      return stage_best(ini, dir, name);
  } catch (std::exception &e) {
    std::cerr << "record " << stage << ' ' << name << ": " << e.what() << '\n';
    return 1;
  }
  std::cerr << "record: bad arguments\n";
  return 2;
}
