/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Streaming access to IDX files: the header is read and checked at open,
 * the samples are read from the file when they are needed (pread of one
 * sample or of a run of them), so a data set costs no memory to hold.
 *
 * A plain file is read in place. A gzipped file is decompressed once, at
 * open, into a temporary file of its data (in $TMPDIR, else /tmp) that
 * has no name: it is created with O_TMPFILE, or created and unlinked at
 * once where the file system lacks O_TMPFILE, so nothing is left behind
 * when the file is closed or the process dies. The whole file is checked
 * as tt_idx_load checks it (length, trailing bytes, gzip trailer), with
 * the same messages.
 *
 * pread, not mmap: bytes read through the page cache do not count in the
 * process's RSS, the pages of a mapping it touches do.
 */
#ifndef TT_IDX_FILE_H
#define TT_IDX_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tt_idx.h"            /* the type codes, TT_IDX_MAX_BYTES */

/*
 * An open file. Invariants after a successful open: as tt_idx (1 <= ndims
 * <= 4, non-zero dims, count == dims[0], item_bytes the bytes of one
 * sample), fd open for reading with count * item_bytes data bytes from
 * data_offset; path a copy of the name given.
 */
typedef struct
{
  uint8_t type;
  int ndims;
  uint32_t dims[4];
  size_t count;
  size_t item_bytes;
  int fd;
  uint64_t data_offset;
  bool decompressed;            /* gzipped: fd is the unnamed temporary */
  char *path;
} tt_idx_file;

/*
 * Opens path (gzipped or plain) into *f (need not be initialised). Returns
 * 0, or -1 with *f cleared (fd -1) and err holding a message that starts
 * with the path. err may be NULL.
 */
int tt_idx_file_open (const char *path, tt_idx_file * f, char *err,
    size_t err_len);

/*
 * Reads samples first .. first + n - 1 into dst (n * item_bytes bytes), in
 * host byte order. Returns 0, or -1 with a message naming the path when
 * they are outside the file or the file cannot be read (truncated under
 * us: the message says so).
 */
int tt_idx_file_read (const tt_idx_file * f, size_t first, size_t n,
    void *dst, char *err, size_t err_len);

/* Closes the file (the temporary goes with it) and clears the struct;
 * safe on a cleared struct. */
void tt_idx_file_close (tt_idx_file * f);

/* A cleared struct (fd -1), for code that closes without opening. */
void tt_idx_file_init (tt_idx_file * f);

/*
 * As tt_idx_check_pair: labels a 1-D uint8 file of as many samples as
 * images, with its messages.
 */
int tt_idx_file_check_pair (const tt_idx_file * images,
    const tt_idx_file * labels, char *err, size_t err_len);

/*
 * Reads len bytes at offset of fd, named path in messages: 0, or -1 with
 * "PATH: cannot read N bytes at byte B: ..." (an I/O error, or the file
 * ending before them: truncated or replaced since it was opened).
 */
int tt_data_read_at (int fd, const char *path, uint64_t offset, void *dst,
    size_t len, char *err, size_t err_len);

/*
 * An unnamed temporary file open for reading and writing in $TMPDIR (else
 * /tmp): its fd, or -1 with a message naming the directory. Nothing of it
 * remains once the fd is closed (or the process dies).
 */
int tt_data_tmpfile (char *err, size_t err_len);

#endif /* TT_IDX_FILE_H */
