/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef TT_ATOMIC_FILE_H
#define TT_ATOMIC_FILE_H

#include "tt_internal.h"

typedef struct {
  char path[4096];
  char tmp[4140];
  int fd;
  bool failed;
} tt_atomic_file;

tt_status tt_atomic_file_open (tt_atomic_file * f, const char *path,
    tt_error * err);
tt_status tt_atomic_file_write (tt_atomic_file * f, const void *data,
    size_t len, tt_error * err);
/* Overwrites bytes already written (a header filled in last). */
tt_status tt_atomic_file_pwrite (tt_atomic_file * f, uint64_t offset,
    const void *data, size_t len, tt_error * err);
tt_status tt_atomic_file_commit (tt_atomic_file * f, tt_error * err);
void tt_atomic_file_abort (tt_atomic_file * f);

#endif
