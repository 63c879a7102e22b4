/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The swap file of a model trained under a memory limit with [Model]
 * memory_swap = true (plan/remat.c): the activations the plan swaps are
 * written after their writers' forward and read back, into their second
 * instances, before the backward layer that first needs them. One file
 * per model in memory_swap_path, unlinked from the start (O_TMPFILE, or
 * mkstemp then unlink), so nothing is left behind; each swapped tensor
 * has its fixed place in it. A failed write fails the step before any
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

static tt_status
swap_io (tt_model * m, bool write, int id, uint64_t at, float *data,
    tt_error * err)
{
  const size_t bytes = m->tensors[id].count * sizeof (float);
  char *p = (char *) data;
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

/* Each tensor of group g with a second instance, in turn; owner: only
 * those written by that layer's forward (-1: all). */
static tt_status
swap_group (tt_model * m, const tt_remat * g, bool write, int owner,
    tt_error * err)
{
  uint64_t at = g->swap_offset;
  for (uint32_t k = 0; k < g->n_tensors; k++) {
    if (g->twins[k] < 0)
      continue;
    const int id = g->tensors[k];
    if (owner < 0 || g->owner[k] == owner) {
      tt_status st = swap_io (m, write, id, at, write ? m->tensors[id].data :
          m->tensors[g->twins[k]].data, err);
      if (st)
        return st;
    }
    at += m->tensors[id].count * sizeof (float);
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
    bool writer = false;
    for (uint32_t w = 0; w < G->n_writers; w++)
      writer |= G->writers[w] == layer;
    tt_status st;
    if (writer && (st = swap_group (m, G, true, layer, err)))
      return st;
  }
  return TT_OK;
}

tt_status
tt_swap_in (tt_model * m, const tt_remat * g, tt_error * err)
{
  return swap_group (m, g, false, -1, err);
}
