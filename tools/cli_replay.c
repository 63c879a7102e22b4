/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer train --replay-size M [--replay-file F]
 * [--replay-per-batch K]: the training passes with replay, as
 * tensor_trainer's replay-size (the buffer and its file: io/replay.c;
 * docs/personalize.md, "Replay"). Once the buffer holds K samples, each
 * batch takes batch - K samples of the data set and K distinct ones of
 * the buffer; every sample of the data set is offered to the buffer after
 * its batch has picked. The buffer is read from F at the start when F
 * exists, and written there after the last epoch.
 */
#include "cli.h"
#include "replay.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
cli_replay_open (const cli_options * o, tt_model * m, cli_replay * r)
{
  tt_error err;
  const uint32_t batch = tt_model_batch_size (m);
  tt_shape in, ls = tt_model_label_shape (m);

  memset (r, 0, sizeof *r);
  if (!o->replay_size) {
    if (o->replay_file || o->has_replay_per_batch)
      return cli_fail ("--replay-file and --replay-per-batch need "
          "--replay-size M (the samples the buffer keeps)");
    return 0;
  }
  if (tt_model_num_inputs (m) != 1)
    return cli_fail ("%s: --replay-size: the command line trains models of "
        "one input; this one has %u", o->model, tt_model_num_inputs (m));
  r->k = o->has_replay_per_batch ? o->replay_per_batch : batch / 2;
  if (r->k >= batch)
    return cli_fail ("--replay-per-batch %u: a batch of %u holds at least one "
        "new sample, so it is 0 to %u", r->k, batch, batch - 1);
  if (r->k > o->replay_size)
    return cli_fail ("--replay-per-batch %u is over --replay-size %u (0 to "
        "%u)", r->k, o->replay_size, o->replay_size);
  tt_model_input_shape (m, 0, &in);
  r->in_count = (size_t) in.channel * in.height * in.width;
  r->classes = (size_t) ls.channel * ls.height * ls.width;
  const size_t bytes[2] = { r->in_count * sizeof (float),
    r->classes * sizeof (float)
  };
  const size_t footprint = tt_replay_footprint (2, bytes, o->replay_size);
  if (o->memory_limit) {
    tt_plan_info p;
    tt_model_plan_info (m, &p);
    if (!footprint || footprint > o->memory_limit
        || p.pool_bytes > o->memory_limit - footprint)
      return cli_fail ("--replay-size %u needs %zu bytes beside the memory "
          "pool's %" PRIu64 " bytes: %" PRIu64 " in all, over --memory-limit "
          "%" PRIu64, o->replay_size, footprint, (uint64_t) p.pool_bytes,
          (uint64_t) p.pool_bytes + footprint, o->memory_limit);
  }
  if (tt_replay_init (&r->buf, 2, bytes, o->replay_size, o->has_seed ?
          o->seed : 0, &err))
    return cli_fail ("--replay-size %u: %s", o->replay_size, err.message);
  r->inputs = malloc ((size_t) batch * r->in_count * sizeof (float));
  if (!r->inputs) {
    cli_replay_close (r);
    return cli_fail ("out of memory");
  }
  r->on = true;
  if (o->replay_file && access (o->replay_file, F_OK) == 0) {
    if (tt_replay_load (&r->buf, o->replay_file, &err)) {
      cli_replay_close (r);
      return cli_fail ("--replay-file %s", err.message);
    }
    printf ("# replay: %u samples (of %" PRIu64 " seen) from %s\n",
        r->buf.count, r->buf.seen, o->replay_file);
  }
  return 0;
}

int
cli_replay_pass (tt_model * m, cli_dataset * d, cli_replay * r,
    float *onehot, double *loss, double *accuracy, double *seconds,
    uint64_t * replayed)
{
  const uint32_t batch = tt_model_batch_size (m);
  const size_t in = r->in_count, classes = r->classes;
  const tt_dtype f32 = TT_DTYPE_FLOAT32;
  double loss_sum = 0, t0 = cli_now ();
  uint64_t correct = 0, all = 0;
  uint32_t picks[64];
  tt_error err;
  char rerr[1024];

  *replayed = 0;
  for (uint32_t at = 0; at < d->count;) {
    const uint32_t k = r->buf.count >= r->k ? r->k : 0;
    const uint32_t room = batch - k;
    const uint32_t n = d->count - at < room ? d->count - at : room;
    if (tt_idx_file_read (&d->images, at, n, d->batch, rerr, sizeof rerr))
      return cli_fail ("%s", rerr);
    /* the new samples as float32 (as the buffer keeps them) */
    for (size_t e = 0; e < (size_t) n * in; e++)
      r->inputs[e] = d->type == TT_DTYPE_UINT8 ? d->batch[e] :
          ((const float *) d->batch)[e];
    memset (onehot, 0, (size_t) (n + k) * classes * sizeof *onehot);
    for (uint32_t i = 0; i < n; i++)
      onehot[i * classes + d->labels[at + i]] = 1.0f;
    /* k distinct samples of the buffer after them */
    for (uint32_t done = 0; done < k;) {
      const uint32_t part = k - done < 64 ? k - done : 64;
      tt_replay_pick (&r->buf, part, picks);
      for (uint32_t j = 0; j < part; j++) {
        const uint8_t *src = tt_replay_sample (&r->buf, picks[j]);
        const uint32_t slot = n + done + j;
        memcpy (r->inputs + slot * in, src, in * sizeof (float));
        memcpy (onehot + slot * classes, src + in * sizeof (float),
            classes * sizeof (float));
      }
      done += part;
    }
    /* then the new ones offered to it */
    for (uint32_t i = 0; i < n; i++) {
      uint8_t *dst = tt_replay_offer (&r->buf);
      if (!dst)
        continue;
      memcpy (dst, r->inputs + (size_t) i * in, in * sizeof (float));
      memcpy (dst + in * sizeof (float), onehot + (size_t) i * classes,
          classes * sizeof (float));
    }
    r->dirty = true;
    const void *inputs[1] = { r->inputs };
    tt_batch_result res;
    if (tt_model_train_batch (m, n + k, inputs, &f32, onehot, &res, &err))
      return cli_fail ("%s", err.message);
    loss_sum += res.loss * (n + k);
    correct += res.correct;
    all += n + k;
    *replayed += k;
    at += n;
  }
  *seconds = cli_now () - t0;
  *loss = all ? loss_sum / all : NAN;
  *accuracy = all ? (double) correct / all : NAN;
  return 0;
}

int
cli_replay_save (const cli_options * o, cli_replay * r)
{
  tt_error err;
  if (!r->on || !o->replay_file || !r->dirty)
    return 0;
  if (tt_replay_save (&r->buf, o->replay_file, &err))
    return cli_fail ("--replay-file: %s", err.message);
  printf ("# replay: %u samples (of %" PRIu64 " seen) saved to %s\n",
      r->buf.count, r->buf.seen, o->replay_file);
  r->dirty = false;
  return 0;
}

void
cli_replay_close (cli_replay * r)
{
  tt_replay_clear (&r->buf);
  free (r->inputs);
  r->inputs = NULL;
  r->on = false;
}
