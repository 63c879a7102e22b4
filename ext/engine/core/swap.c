/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The swap file of a model trained under a memory limit with [Model]
 * memory_swap = true (plan/remat.c): the activations the plan swaps are
 * written after their writers' forward and read back, into their second
 * instances, before the backward layer that first needs them. One file
 * per model in memory_swap_path, unlinked from the start (O_TMPFILE, or
 * mkstemp then unlink), so nothing is left behind; each swapped tensor
 * has its fixed place in it. Under a half activation type (bf16, fp16),
 * a group the model would otherwise stash has its root written at 2
 * bytes an element, rounded as the stash rounds (stash.c), and widened
 * when read back: the values backward reads are the stash's, and the
 * file holds half the bytes. A failed write fails the step before any
 * update; a failed read leaves a step whose later layers were updated,
 * so the model then refuses to train or be saved (swap_failed).
 */
#include "tt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *
swap_dir (const tt_model * m)
{
  return m->memory_swap_path ? m->memory_swap_path : ".";
}

tt_status
tt_swap_open (tt_model * m, tt_error * err)
{
  if (!m->plan.swapped || m->swap_fd >= 0)
    return TT_OK;
  const char *dir = swap_dir (m);
  int fd = -1;
#ifdef O_TMPFILE
  fd = open (dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  if (fd < 0) {
    char path[4200];
    snprintf (path, sizeof path, "%s/tensor-trainer-swap-XXXXXX", dir);
    fd = mkstemp (path);
    if (fd >= 0)
      unlink (path);
  }
  if (fd < 0)
    return tt_fail (err, TT_ERR_IO, "%s: [Model] memory_swap_path %s: "
        "cannot create the swap file: %s", m->path, dir, strerror (errno));
  m->swap_fd = fd;
  return TT_OK;
}

/* bytes of data to or from the file at offset at, for tensor id */
static tt_status
swap_io (tt_model * m, bool write, int id, uint64_t at, void *data,
    size_t bytes, tt_error * err)
{
  char *p = data;
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = write ?
        pwrite (m->swap_fd, p + done, bytes - done, (off_t) (at + done)) :
        pread (m->swap_fd, p + done, bytes - done, (off_t) (at + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      const char *why = n < 0 ? strerror (errno) : "the file is shorter "
          "than what was written";
      if (!write)
        m->swap_failed = true;
      return tt_fail (err, TT_ERR_IO, "%s: swap file in %s: %s %zu bytes of "
          "%s at offset %llu: %s%s", m->path, swap_dir (m), write ?
          "writing" : "reading back", bytes, m->tensors[id].name,
          (unsigned long long) (at + done), why, write ? "; this batch "
          "was not applied" : "; the layers after it in backward were "
          "updated already, so the model refuses to train or save: "
          "reload it");
    }
    done += (size_t) n;
  }
  return TT_OK;
}

/* The root of g at 2 bytes an element: narrowed through its staging
 * tensor a part at a time, each part written at its place. */
static tt_status
swap_write_half (tt_model * m, const tt_remat * g, uint64_t at, tt_error * err)
{
  const int id = g->tensors[0];
  const float *x = m->tensors[id].data;
  const size_t n = m->tensors[id].count, part = tt_swap_staging_elems (n);
  uint16_t *staging = (uint16_t *) (void *) m->tensors[g->staging].data;
  for (size_t b = 0; b < n; b += part) {
    const size_t e = n - b < part ? n : b + part;
    tt_stash_narrow (m, x + b, staging, e - b);
    tt_status st = swap_io (m, true, id, at + 2 * b, staging, 2 * (e - b),
        err);
    if (st)
      return st;
  }
  return TT_OK;
}

/* Each tensor of group g with a second instance, in turn, at its place
 * (tt_remat_swap_bytes): written, those whose forward layer owner
 * completes; read back, all. A half-width root is read into the start
 * of its second instance and widened there, so reading needs no
 * staging. */
static tt_status
swap_group (tt_model * m, const tt_remat * g, bool write, int owner,
    tt_error * err)
{
  uint64_t at = g->swap_offset;
  for (uint32_t k = 0; k < g->n_tensors; k++) {
    if (g->twins[k] < 0)
      continue;
    const int id = g->tensors[k];
    const bool half = k == 0 && g->staging >= 0;
    const uint64_t bytes = tt_remat_swap_bytes (m, g, k);
    tt_status st = TT_OK;
    if (write && owner == g->owner[k])
      st = half ? swap_write_half (m, g, at, err) :
          swap_io (m, true, id, at, m->tensors[id].data, bytes, err);
    else if (!write) {
      float *twin = m->tensors[g->twins[k]].data;
      st = swap_io (m, false, id, at, twin, bytes, err);
      if (!st && half)
        tt_stash_widen_in_place (m, twin, m->tensors[id].count);
    }
    if (st)
      return st;
    at += bytes;
  }
  return TT_OK;
}

tt_status
tt_swap_out (tt_model * m, int layer, tt_error * err)
{
  for (uint32_t g = 0; g < m->n_remat; g++) {
    const tt_remat *G = &m->remat[g];
    if (G->mode != TT_REMAT_SWAP)
      continue;
    tt_status st = swap_group (m, G, true, layer, err);
    if (st)
      return st;
  }
  return TT_OK;
}

tt_status
tt_swap_in (tt_model * m, const tt_remat * g, tt_error * err)
{
  return swap_group (m, g, false, -1, err);
}
