/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Learning test: the MLP of tests/models/fmnist_mlp.ini trained for one
 * epoch on the 60,000 Fashion-MNIST training images must reach at least
 * 82% accuracy on the 10,000 test images.
 *
 * usage: test_fmnist SOURCE_ROOT [DATASET_DIR]
 */
#include "tt_engine.h"
#include "tt_idx.h"
#include "tt_test.h"

static void
fmnist_pass (tt_model * m, const tt_idx * img, const tt_idx * lbl, bool train,
    double *accuracy, double *loss)
{
  const uint32_t batch = tt_model_batch_size (m);
  float onehot[10 * 1024];
  uint64_t correct = 0;
  double loss_sum = 0;
  tt_dtype type = TT_DTYPE_UINT8;
  tt_error err;
  for (size_t at = 0; at < img->count; at += batch) {
    uint32_t n = img->count - at < batch ? (uint32_t) (img->count - at) : batch;
    memset (onehot, 0, sizeof onehot);
    for (uint32_t i = 0; i < n; i++)
      onehot[i * 10 + lbl->data[at + i]] = 1.0f;
    const void *in[1] = { img->data + at * img->item_bytes };
    tt_batch_result r;
    tt_status st = train ?
        tt_model_train_batch (m, n, in, &type, onehot, &r, &err) :
        tt_model_eval_batch (m, n, in, &type, onehot, &r, &err);
    if (st) {
      CHECK (st == TT_OK, "%s", err.message);
      return;
    }
    correct += r.correct;
    loss_sum += r.loss * n;
  }
  *accuracy = (double) correct / img->count;
  *loss = loss_sum / img->count;
}

static const char *fmnist_root, *fmnist_data;

static void
test_mlp_learns (void)
{
  char path[4][1024], ini[1024], err_s[1024];
  const char *names[4] = {
    "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
  };
  tt_idx sets[4];
  memset (sets, 0, sizeof sets);
  for (int i = 0; i < 4; i++) {
    snprintf (path[i], sizeof path[i], "%s/%s", fmnist_data, names[i]);
    int rc = tt_idx_load (path[i], &sets[i], err_s, sizeof err_s);
    CHECK (rc == 0, "%s (install dataset-fashion-mnist)", err_s);
    if (rc)
      return;
  }
  snprintf (ini, sizeof ini, "%s/tests/models/fmnist_mlp.ini", fmnist_root);
  tt_error err;
  tt_model *m = tt_model_load_ini (ini, &err);
  CHECK (m && tt_model_compile (m, &err) == TT_OK, "%s", err.message);
  if (!m)
    return;
  double acc, loss, test_acc, test_loss;
  fmnist_pass (m, &sets[0], &sets[1], true, &acc, &loss);
  fmnist_pass (m, &sets[2], &sets[3], false, &test_acc, &test_loss);
  printf ("train loss %.4f accuracy %.4f; test loss %.4f accuracy %.4f\n",
      loss, acc, test_loss, test_acc);
  CHECK (test_acc >= 0.82, "test accuracy %.4f < 0.82", test_acc);
  CHECK (test_loss < 0.6, "test loss %.4f", test_loss);
  tt_model_free (m);
  for (int i = 0; i < 4; i++)
    tt_idx_clear (&sets[i]);
}

int
main (int argc, char **argv)
{
  fmnist_root = argc > 1 ? argv[1] : ".";
  fmnist_data = argc > 2 ? argv[2] : "/usr/share/datasets/fashion-mnist";
  TT_TEST_RUN (test_mlp_learns);
  return tt_test_summary ();
}
