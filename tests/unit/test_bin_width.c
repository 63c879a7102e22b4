/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The BIN's weights at the model's weight type ([Model] model_tensor_type,
 * io/bin_width.c, docs/formats.md):
 *   a. FP16 and BF16: a save writes each weight as 2 bytes (the rounding
 *      of kernels/bf16.c, to nearest even), in the same order as FP32;
 *      the counters follow; a load gives back the rounded values as fp32
 *      master copies; the same from memory;
 *   b. Adam: the moments stay float32 after the 2-byte weights and "adam";
 *      they load back bit for bit;
 *   c. a BIN of the other width is refused, naming both sizes; an FP32
 *      model refuses a 2-byte BIN the same way;
 *   d. a weight beyond FP16's range is not saved (the old file stays),
 *      BF16 takes it; infinities and NaNs in a 2-byte BIN are refused,
 *      naming the tensor;
 *   e. bundles keep fp32 weights (no rounding) and unpack to the 2-byte
 *      BIN; packing that BIN and unpacking gives back its bytes;
 *   f. the FP16 models for recording nntrainer (tests/interop/nntrainer/
 *      models/fp16/) load here: FP16 weights, a BIN of 2 bytes per weight
 *      after initialize (SGD: + counters; Adam: + "adam" + float32 moments
 *      + counters: what a save_path BIN holds).
 *
 * argv[1]: the source root.
 */
#include "tt_engine.h"
#include "tt_bundle.h"
#include "tt_internal.h"
#include "tt_test.h"

#include <math.h>
#include <stdint.h>

#define BW_MODEL(type, opt) "[Model]\ntype = NeuralNetwork\nbatch_size = 2\n" \
  "loss = mse\nmodel_tensor_type = " type "\n" \
  "[Optimizer]\ntype = " opt "\nlearning_rate = 0.01\n" \
  "[in]\ntype = input\ninput_shape = 1:1:4\n" \
  "[fc1]\ntype = fully_connected\nunit = 3\nactivation = relu\n" \
  "[fc2]\ntype = fully_connected\nunit = 2\n"
/* 12 + 3 + 6 + 2 weights */
#define BW_N 23

static tt_model *
bw_model (const char *name, const char *text)
{
  tt_error err;
  tt_model *m = tt_model_load_ini (tt_test_write_text (name, text), &err);
  if (!m || tt_model_compile (m, &err) || tt_model_init_weights (m, &err)) {
    printf ("cannot build %s: %s\n", name, err.message);
    exit (2);
  }
  return m;
}

/* The weights in BIN order into w (BW_N floats); with set, from w */
static void
bw_weights (tt_model * m, float *w, bool set)
{
  uint32_t n;
  int *ids = tt_bin_regions (m, false, &n);
  size_t k = 0;
  for (uint32_t i = 0; ids && i < n; i++) {
    tt_tensor *t = &m->tensors[ids[i]];
    for (size_t j = 0; j < t->count && k < BW_N; j++, k++)
      if (set)
        t->data[j] = w[k];
      else
        w[k] = t->data[j];
  }
  CHECK (k == BW_N, "%zu weights", k);
  free (ids);
}

/* Values that 2 bytes cannot hold exactly, some halfway cases */
static void
bw_values (float *w)
{
  for (int i = 0; i < BW_N; i++)
    w[i] = (float) sin (1.7 * i + 0.3) * (1.0f + (float) i / 7.0f);
  w[0] = 1.0f + 1.0f / 2048.0f; /* FP16 tie: rounds to even, 1.0 */
  w[1] = 1.0f + 3.0f / 2048.0f; /* FP16 tie: rounds up to 1 + 2^-9 */
  w[2] = 1.0f + 1.0f / 256.0f;  /* BF16 tie: rounds to even, 1.0 */
  w[3] = 1e-6f;                 /* an FP16 subnormal */
  w[4] = 1000.3f;
}

static void
bw_round (tt_precision p, const float *x, float *y, size_t n)
{
  uint16_t h[BW_N];
  if (p == TT_PRECISION_FP16) {
    tt_f32_to_f16 (x, h, n);
    tt_f16_to_f32 (h, y, n);
  } else {
    tt_f32_to_bf16 (x, h, n);
    tt_bf16_to_f32 (h, y, n);
  }
}

static void
test_width (const char *type, tt_precision p)
{
  char text[1024];
  snprintf (text, sizeof text, BW_MODEL ("%s", "sgd"), type);
  tt_model *m = bw_model ("bw.ini", text);
  CHECK (m->weight_type == p, "%s: weight type %d", type, (int) m->weight_type);
  float w[BW_N], want[BW_N], got[BW_N];
  bw_values (w);
  bw_weights (m, w, true);
  m->epoch = 3;
  m->iteration = 17;
  const char *path = tt_test_write_text ("bw.bin", "");
  char bin[512];
  snprintf (bin, sizeof bin, "%s", path);
  tt_error err;
  tt_status st = tt_model_save_bin (m, bin, &err);
  CHECK (st == TT_OK, "%s: save: %s", type, err.message);
  size_t len = 0;
  unsigned char *bytes = (unsigned char *) tt_test_read_file (bin, &len);
  CHECK (len == BW_N * 2 + 8, "%s: %zu bytes, want %d", type, len,
      BW_N * 2 + 8);
  uint16_t h[BW_N];
  if (p == TT_PRECISION_FP16)
    tt_f32_to_f16 (w, h, BW_N);
  else
    tt_f32_to_bf16 (w, h, BW_N);
  CHECK (bytes && len >= sizeof h && !memcmp (bytes, h, sizeof h),
      "%s: the weights' bytes are the rounding of kernels/bf16.c", type);
  uint32_t cnt[2] = { 0, 0 };
  if (bytes && len == BW_N * 2 + 8)
    memcpy (cnt, bytes + BW_N * 2, sizeof cnt);
  CHECK (cnt[0] == 3 && cnt[1] == 17, "%s: counters %u %u", type, cnt[0],
      cnt[1]);
  /* the ties: FP16 to even, BF16 to even */
  if (p == TT_PRECISION_FP16)
    CHECK (h[0] == 0x3c00 && h[1] == 0x3c02 && h[3] == 0x0011,
        "FP16 ties and subnormal: %04x %04x %04x", h[0], h[1], h[3]);
  else
    CHECK (h[2] == 0x3f80, "BF16 tie: %04x", h[2]);

  tt_model *b = bw_model ("bw.ini", text);
  st = tt_model_load_bin (b, bin, &err);
  CHECK (st == TT_OK, "%s: load: %s", type, err.message);
  bw_weights (b, got, false);
  bw_round (p, w, want, BW_N);
  CHECK (!memcmp (got, want, sizeof got), "%s: loaded = rounded weights", type);
  CHECK (b->epoch == 3 && b->iteration == 17, "%s: counters loaded", type);
  /* from memory: the same */
  tt_model *c = bw_model ("bw.ini", text);
  st = tt_model_load_bin_memory (c, bytes + 1, 0, "empty", &err);
  CHECK (st != TT_OK, "%s: empty blob refused", type);
  unsigned char *odd = malloc (len + 1);        /* misaligned on purpose */
  memcpy (odd + 1, bytes, len);
  st = tt_model_load_bin_memory (c, odd + 1, len, "mem.bin", &err);
  CHECK (st == TT_OK, "%s: memory load: %s", type, err.message);
  bw_weights (c, got, false);
  CHECK (!memcmp (got, want, sizeof got), "%s: memory = file", type);
  free (odd);
  /* a save of the loaded model writes the same bytes */
  char again[600];
  snprintf (again, sizeof again, "%s2", bin);
  st = tt_model_save_bin (b, again, &err);
  size_t len2 = 0;
  char *bytes2 = tt_test_read_file (again, &len2);
  CHECK (st == TT_OK && bytes2 && len2 == len && !memcmp (bytes, bytes2,
          len), "%s: save(load(file)) = file", type);
  free (bytes2);
  free (bytes);
  tt_model_free (m);
  tt_model_free (b);
  tt_model_free (c);
}

static void
test_fp16 (void)
{
  test_width ("FP16-FP16", TT_PRECISION_FP16);
  test_width ("W16A32", TT_PRECISION_FP16);
}

static void
test_bf16 (void)
{
  test_width ("BF16-BF16", TT_PRECISION_BF16);
}

/* b. Adam: weights 2 bytes, "adam", moments float32, counters */
static void
test_adam_moments (void)
{
  tt_model *m = bw_model ("bwa.ini", BW_MODEL ("FP16-FP16", "adam"));
  const float x[8] = { 0.1f, 0.5f, -0.3f, 0.9f, 1, 0, 0.2f, -0.4f };
  const float y[4] = { 1, 0, 0, 1 };
  const void *in[1] = { x };
  const tt_dtype t[1] = { TT_DTYPE_FLOAT32 };
  tt_error err;
  tt_status st = tt_model_train_batch (m, 2, in, t, y, NULL, &err);
  CHECK (st == TT_OK, "train: %s", err.message);
  char bin[512];
  snprintf (bin, sizeof bin, "%s", tt_test_write_text ("bwa.bin", ""));
  st = tt_model_save_bin (m, bin, &err);
  CHECK (st == TT_OK, "save: %s", err.message);
  size_t len = 0;
  unsigned char *bytes = (unsigned char *) tt_test_read_file (bin, &len);
  const size_t want = BW_N * 2 + 4 + 2 * BW_N * 4 + 8;
  CHECK (len == want, "adam FP16 BIN: %zu bytes, want %zu", len, want);
  CHECK (bytes && len == want && !memcmp (bytes + BW_N * 2, "adam", 4),
      "the tag after the 2-byte weights");
  /* the first moments of fc1's weight (first in the file), float32 */
  uint32_t n;
  int *ids = tt_bin_regions (m, true, &n);
  CHECK (ids && n == 12, "%u regions", n);
  if (bytes && len == want && ids && n == 12)
    CHECK (!memcmp (bytes + BW_N * 2 + 4, m->tensors[ids[4]].data,
            m->tensors[ids[4]].count * sizeof (float)),
        "moments written as float32");
  tt_model *b = bw_model ("bwa.ini", BW_MODEL ("FP16-FP16", "adam"));
  st = tt_model_load_bin (b, bin, &err);
  CHECK (st == TT_OK, "load: %s", err.message);
  uint32_t nb;
  int *idb = tt_bin_regions (b, true, &nb);
  for (uint32_t i = 4; ids && idb && i < n && i < nb; i++)
    CHECK (!memcmp (m->tensors[ids[i]].data, b->tensors[idb[i]].data,
            m->tensors[ids[i]].count * sizeof (float)),
        "region %u (moments) loaded bit for bit", i);
  free (ids);
  free (idb);
  free (bytes);
  tt_model_free (m);
  tt_model_free (b);
}

/* c. the other width */
static void
test_wrong_width (void)
{
  tt_model *f32 = bw_model ("bw32.ini", BW_MODEL ("FP32-FP32", "sgd"));
  tt_model *f16 = bw_model ("bw16.ini", BW_MODEL ("FP16-FP16", "sgd"));
  char b32[512], b16[512];
  snprintf (b32, sizeof b32, "%s", tt_test_write_text ("w32.bin", ""));
  snprintf (b16, sizeof b16, "%s", tt_test_write_text ("w16.bin", ""));
  tt_error err;
  CHECK (!tt_model_save_bin (f32, b32, &err), "save fp32: %s", err.message);
  CHECK (!tt_model_save_bin (f16, b16, &err), "save fp16: %s", err.message);
  float before[BW_N], after[BW_N];
  bw_weights (f16, before, false);
  tt_status st = tt_model_load_bin (f16, b32, &err);
  CHECK (st == TT_ERR_INVALID, "an FP32 BIN for an FP16 model refused");
  CHECK (strstr (err.message, "w32.bin: is 100 bytes: FP16 weights") &&
      strstr (err.message, "need 46 bytes") &&
      strstr (err.message, "92 bytes of weights is the FP32 size") &&
      strstr (err.message, "bw16.ini"), "message: %s", err.message);
  bw_weights (f16, after, false);
  CHECK (!memcmp (before, after, sizeof before), "model left as it was");
  st = tt_model_load_bin (f32, b16, &err);
  CHECK (st == TT_ERR_INVALID && strstr (err.message, "is 54 bytes: FP32 "
          "weights") && strstr (err.message, "need 92 bytes") &&
      strstr (err.message, "FP16 (or BF16) size"), "message: %s", err.message);
  /* from memory too */
  size_t len = 0;
  char *bytes = tt_test_read_file (b32, &len);
  st = tt_model_load_bin_memory (f16, bytes, len, "blob", &err);
  CHECK (st == TT_ERR_INVALID && strstr (err.message, "blob: is 100 bytes"),
      "memory: %s", err.message);
  free (bytes);
  /* a size of neither width: the usual list */
  char *junk = calloc (1, 61);
  st = tt_model_load_bin_memory (f16, junk, 61, "junk", &err);
  CHECK (st == TT_ERR_INVALID && strstr (err.message, "expected 46"),
      "neither width: %s", err.message);
  free (junk);
  tt_model_free (f32);
  tt_model_free (f16);
}

/* d. range */
static void
test_range (void)
{
  tt_model *m = bw_model ("bwr.ini", BW_MODEL ("FP16-FP16", "sgd"));
  char bin[512];
  snprintf (bin, sizeof bin, "%s", tt_test_write_text ("bwr.bin", "old"));
  float w[BW_N];
  bw_weights (m, w, false);
  w[14] = 65519.0f;             /* rounds to 65504 */
  bw_weights (m, w, true);
  tt_error err;
  CHECK (tt_model_save_bin (m, bin, &err) == TT_OK, "65519 saved: %s",
      err.message);
  char *keep = tt_test_read_file (bin, NULL);
  w[14] = 65520.0f;             /* rounds to infinity */
  bw_weights (m, w, true);
  tt_status st = tt_model_save_bin (m, bin, &err);
  CHECK (st == TT_ERR_NUMERIC && strstr (err.message, "65520") &&
      strstr (err.message, "beyond the range of FP16 (largest 65504)") &&
      strstr (err.message, "fc1") && strstr (err.message, "element 2"),
      "message: %s", err.message);
  size_t len = 0;
  char *now = tt_test_read_file (bin, &len);
  CHECK (now && keep && len == BW_N * 2 + 8 && !memcmp (now, keep, len),
      "the old file stays");
  free (now);
  /* infinity and NaN in a file: refused, naming the tensor */
  unsigned char *bad = (unsigned char *) keep;
  const uint16_t inf = 0x7c00, nan = 0x7e00;
  memcpy (bad + 2 * 5, &inf, 2);
  st = tt_model_load_bin_memory (m, bad, BW_N * 2 + 8, "inf.bin", &err);
  CHECK (st == TT_ERR_PARSE && strstr (err.message, "inf.bin: tensor fc1")
      && strstr (err.message, "element 5 (byte 10)"), "inf: %s", err.message);
  memcpy (bad + 2 * 13, &nan, 2);
  const char *p = tt_test_write_file ("nan.bin", bad, BW_N * 2 + 8);
  st = tt_model_load_bin (m, p, &err);
  CHECK (st == TT_ERR_PARSE && strstr (err.message, "element 5"),
      "file: %s", err.message);
  free (keep);
  tt_model_free (m);
  /* BF16 holds it */
  m = bw_model ("bwr2.ini", BW_MODEL ("BF16-FP32", "sgd"));
  bw_weights (m, w, true);
  CHECK (tt_model_save_bin (m, bin, &err) == TT_OK, "BF16 saves 65520: %s",
      err.message);
  tt_model_free (m);
}

/* e. bundles: fp32 weights; unpack narrows, pack + unpack is exact */
static void
test_bundle (void)
{
  tt_model *m = bw_model ("bwb.ini", BW_MODEL ("FP16-FP16", "sgd"));
  float w[BW_N], got[BW_N], want[BW_N];
  bw_values (w);
  bw_weights (m, w, true);
  char ttb[512], bin[512], bin2[512], ttb2[512], ini[512];
  snprintf (ttb, sizeof ttb, "%s", tt_test_write_text ("bwb.ttb", ""));
  snprintf (bin, sizeof bin, "%s", tt_test_write_text ("bwb.bin", ""));
  snprintf (bin2, sizeof bin2, "%s", tt_test_write_text ("bwb2.bin", ""));
  snprintf (ttb2, sizeof ttb2, "%s", tt_test_write_text ("bwb2.ttb", ""));
  snprintf (ini, sizeof ini, "%s", tt_test_write_text ("bwb_un.ini", ""));
  tt_error err;
  tt_status st = tt_model_save (m, ttb, &err);
  CHECK (st == TT_OK, "bundle save: %s", err.message);
  tt_model *b = tt_bundle_load (ttb, NULL, &err);
  CHECK (b != NULL, "bundle load: %s", b ? "" : err.message);
  if (b) {
    CHECK (b->weight_type == TT_PRECISION_FP16, "the bundle's INI keeps "
        "model_tensor_type");
    bw_weights (b, got, false);
    CHECK (!memcmp (got, w, sizeof got), "bundle weights are fp32, exact");
    tt_model_free (b);
  }
  st = tt_bundle_unpack (ttb, ini, bin, &err);
  CHECK (st == TT_OK, "unpack: %s", err.message);
  size_t len = 0;
  char *bytes = tt_test_read_file (bin, &len);
  uint16_t h[BW_N];
  tt_f32_to_f16 (w, h, BW_N);
  CHECK (bytes && len == BW_N * 2 + 8 && !memcmp (bytes, h, sizeof h),
      "unpacked BIN: FP16 weights (%zu bytes)", len);
  tt_model *c = bw_model ("bwc.ini", BW_MODEL ("FP16-FP16", "sgd"));
  st = tt_model_load_bin (c, bin, &err);
  CHECK (st == TT_OK, "unpacked BIN loads: %s", err.message);
  bw_weights (c, got, false);
  bw_round (TT_PRECISION_FP16, w, want, BW_N);
  CHECK (!memcmp (got, want, sizeof got), "rounded weights");
  st = tt_bundle_pack (ini, bin, ttb2, 0, NULL, &err);
  CHECK (st == TT_OK, "pack: %s", err.message);
  st = tt_bundle_unpack (ttb2, NULL, bin2, &err);
  size_t len2 = 0;
  char *bytes2 = tt_test_read_file (bin2, &len2);
  CHECK (st == TT_OK && bytes && bytes2 && len2 == len &&
      !memcmp (bytes, bytes2, len), "pack + unpack gives the BIN back");
  free (bytes2);
  free (bytes);
  /* a weight FP16 cannot hold: the bundle takes it, the unpack refuses */
  w[7] = 1e6f;
  bw_weights (m, w, true);
  CHECK (tt_model_save (m, ttb, &err) == TT_OK, "bundle of 1e6: %s",
      err.message);
  st = tt_bundle_unpack (ttb, NULL, bin, &err);
  CHECK (st == TT_ERR_NUMERIC && strstr (err.message, "cannot unpack") &&
      strstr (err.message, "fc1") && strstr (err.message, "FP16"),
      "unpack refuses: %s", err.message);
  tt_model_free (c);
  tt_model_free (m);
}

static const char *source_root = ".";

static void
test_interop_models (void)
{
  static const struct
  {
    const char *name;
    size_t weights;
    bool adam;
  } models[] = {
    {"mlp_fp16", 10 * 8 + 8 + 8 * 3 + 3, false},
    {"cnn_fp16", 2 * 9 + 2 + 18 * 3 + 3, true},
    {"cnn_sgd_fp16", 2 * 9 + 2 + 18 * 3 + 3, false},
  };
  for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
    char path[1200], bin[600];
    snprintf (path, sizeof path, "%s/tests/interop/nntrainer/models/fp16/"
        "%s.ini", source_root, models[i].name);
    tt_error err;
    tt_model *m = tt_model_load_ini (path, &err);
    CHECK (m != NULL, "%s: %s", path, m ? "" : err.message);
    if (!m)
      continue;
    tt_status st = tt_model_compile (m, &err);
    if (!st)
      st = tt_model_init_weights (m, &err);
    CHECK (st == TT_OK, "%s: %s", models[i].name, err.message);
    CHECK (m->weight_type == TT_PRECISION_FP16 &&
        m->activation_type == TT_PRECISION_FP16, "%s: FP16-FP16",
        models[i].name);
    snprintf (bin, sizeof bin, "%s", tt_test_write_text ("interop.bin", ""));
    if (!st)
      st = tt_model_save_bin (m, bin, &err);
    CHECK (st == TT_OK, "%s: save: %s", models[i].name, err.message);
    size_t len = 0;
    free (tt_test_read_file (bin, &len));
    const size_t n = models[i].weights;
    const size_t want = n * 2 + (models[i].adam ? 4 + 2 * n * 4 : 0) + 8;
    CHECK (len == want, "%s: BIN %zu bytes, want %zu", models[i].name, len,
        want);
    tt_model_free (m);
  }
}

int
main (int argc, char **argv)
{
  if (argc > 1)
    source_root = argv[1];
  TT_TEST_RUN (test_fp16);
  TT_TEST_RUN (test_bf16);
  TT_TEST_RUN (test_adam_moments);
  TT_TEST_RUN (test_wrong_width);
  TT_TEST_RUN (test_range);
  TT_TEST_RUN (test_bundle);
  TT_TEST_RUN (test_interop_models);
  return tt_test_summary ();
}
