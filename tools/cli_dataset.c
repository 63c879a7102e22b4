/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer train and eval's data: a data set's IDX files (images
 * and labels) opened, checked against the model and read a batch at a
 * time (cli_dataset).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int
cli_load_dataset (const char *images, const char *labels, tt_model * m,
    uint32_t limit, const char *limit_option, cli_dataset * d)
{
  char err[1024];
  tt_idx_file lf;
  memset (d, 0, sizeof *d);
  tt_idx_file_init (&d->images);
  if (tt_idx_file_open (images, &d->images, err, sizeof err) != 0 ||
      tt_idx_file_open (labels, &lf, err, sizeof err) != 0)
    return cli_fail ("%s", err);
  if (tt_idx_file_check_pair (&d->images, &lf, err, sizeof err) != 0) {
    tt_idx_file_close (&lf);
    return cli_fail ("%s and %s: %s", images, labels, err);
  }
  d->labels = malloc (lf.count ? lf.count : 1);
  if (!d->labels) {
    tt_idx_file_close (&lf);
    return cli_fail ("out of memory");
  }
  int rc = tt_idx_file_read (&lf, 0, lf.count, d->labels, err, sizeof err);
  tt_idx_file_close (&lf);
  if (rc != 0)
    return cli_fail ("%s", err);
  tt_shape in;
  tt_model_input_shape (m, 0, &in);
  const size_t per = (size_t) in.channel * in.height * in.width;
  if (d->images.type == TT_IDX_UINT8)
    d->type = TT_DTYPE_UINT8;
  else if (d->images.type == TT_IDX_FLOAT32)
    d->type = TT_DTYPE_FLOAT32;
  else
    return cli_fail ("%s: only uint8 and float32 images are supported", images);
  size_t elem = d->type == TT_DTYPE_UINT8 ? 1 : 4;
  if (d->images.item_bytes != per * elem)
    return cli_fail ("%s: a sample holds %zu values but the model %s takes "
        "%u:%u:%u = %zu", images, d->images.item_bytes / elem,
        tt_model_path (m), in.channel, in.height, in.width, per);
  d->sample_bytes = d->images.item_bytes;
  d->count = (uint32_t) d->images.count;
  /* asking for more samples than there are is a mistake worth hearing
   * about, not a request to train on fewer */
  if (limit > d->count)
    return cli_fail ("%s %u: %s holds only %u samples", limit_option, limit,
        images, d->count);
  if (limit)
    d->count = limit;
  tt_shape ls = tt_model_label_shape (m);
  const size_t classes = (size_t) ls.channel * ls.height * ls.width;
  for (uint32_t i = 0; i < d->count; i++)
    if (d->labels[i] >= classes)
      return cli_fail ("%s: label %u of sample %u is out of range for %zu "
          "classes", labels, d->labels[i], i, classes);
  d->batch = malloc ((size_t) tt_model_batch_size (m) * d->sample_bytes);
  if (!d->batch)
    return cli_fail ("out of memory");
  return 0;
}

void
cli_free_dataset (cli_dataset * d)
{
  tt_idx_file_close (&d->images);
  free (d->labels);
  free (d->batch);
  d->labels = d->batch = NULL;
}
