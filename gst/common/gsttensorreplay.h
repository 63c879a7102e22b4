/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A replay buffer: up to capacity past samples, each the same tensors of
 * fixed byte sizes back to back, kept by reservoir sampling (every sample
 * offered so far equally likely to be held), with distinct random picks
 * for a batch and a small file format of its own (docs/personalize.md,
 * "Replay"). Everything is allocated by gst_tensor_replay_init: offering
 * and picking allocate nothing. */
#ifndef __GST_TENSOR_REPLAY_H__
#define __GST_TENSOR_REPLAY_H__

#include <glib.h>

G_BEGIN_DECLS

#define GST_TENSOR_REPLAY_MAX_TENSORS 16  /* GST_TENSOR_MAX_TENSORS */
#define GST_TENSOR_REPLAY_MAGIC "TTREPLAY"
#define GST_TENSOR_REPLAY_VERSION 1

typedef struct
{
  guint n_tensors;
  gsize bytes[GST_TENSOR_REPLAY_MAX_TENSORS];   /* per sample, each tensor */
  gsize sample_bytes;           /* their sum */
  guint capacity;               /* samples at most */
  guint count;                  /* samples held */
  guint64 seen;                 /* samples offered so far, loaded ones
                                 * included (the file keeps the count) */
  guint64 rng;                  /* splitmix64 state */
  gsize header_bytes;
  guint8 *block;                /* header | capacity samples | CRC */
  guint32 *order;               /* a permutation for distinct picks */
} GstTensorReplay;

/* Bytes that init allocates for this buffer. */
gsize gst_tensor_replay_footprint (guint n_tensors, const gsize * bytes,
    guint capacity);
/* FALSE when the memory cannot be had (nothing is then held). */
gboolean gst_tensor_replay_init (GstTensorReplay * r, guint n_tensors,
    const gsize * bytes, guint capacity, guint64 seed);
void gst_tensor_replay_clear (GstTensorReplay * r);

/* One more sample seen: where to write it (its tensors back to back),
 * or NULL when the reservoir does not keep it. */
guint8 *gst_tensor_replay_offer (GstTensorReplay * r);
const guint8 *gst_tensor_replay_sample (const GstTensorReplay * r, guint i);
/* k distinct indices of held samples into out (k <= count). */
void gst_tensor_replay_pick (GstTensorReplay * r, guint k, guint * out);

/* Fills the buffer from path (FALSE and a message naming path, for a
 * file that cannot be read, is not a replay file, or holds tensors of
 * other sizes; a shorter last tensor, the label of a classifier grown
 * since, is padded with zeros). A file holding more samples than
 * capacity gives its first capacity ones. */
gboolean gst_tensor_replay_load (GstTensorReplay * r, const gchar * path,
    gchar ** why);
/* Writes the buffer to path atomically (a temporary file renamed). */
gboolean gst_tensor_replay_save (GstTensorReplay * r, const gchar * path,
    gchar ** why);

G_END_DECLS

#endif /* __GST_TENSOR_REPLAY_H__ */
