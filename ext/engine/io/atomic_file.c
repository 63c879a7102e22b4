/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Crash-safe file replacement: write a temporary file in the target's
 * folder, fsync it, rename it over the target, fsync the folder. A reader
 * (or a process restarted after a crash) sees the old file or the new one,
 * never a mix.
 */
#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A process killed while saving leaves its temporary behind. The name
 * carries the writer's pid ("<file>.tmp-<pid>-XXXXXX"), so the next save of
 * the same file removes those whose writer is gone; a live writer's file
 * (another process saving the same path right now) is left alone. */
static void
atomic_file_sweep (const char *path)
{
  char dir_buf[4096], base_buf[4096];
  snprintf (dir_buf, sizeof dir_buf, "%s", path);
  snprintf (base_buf, sizeof base_buf, "%s", path);
  const char *dir = dirname (dir_buf), *base = basename (base_buf);
  char prefix[4200];
  int plen = snprintf (prefix, sizeof prefix, "%s.tmp-", base);
  if (plen <= 0 || (size_t) plen >= sizeof prefix)
    return;
  DIR *d = opendir (dir);
  if (!d)
    return;
  for (struct dirent * e; (e = readdir (d)) != NULL;) {
    if (strncmp (e->d_name, prefix, (size_t) plen))
      continue;
    char *end;
    long pid = strtol (e->d_name + plen, &end, 10);
    if (pid <= 0 || *end != '-' || strlen (end) != 7)
      continue;
    if (kill ((pid_t) pid, 0) == 0 || errno != ESRCH)
      continue;
    char victim[8400];
    if (snprintf (victim, sizeof victim, "%s/%s", dir, e->d_name) <
        (int) sizeof victim)
      unlink (victim);
  }
  closedir (d);
}

tt_status
tt_atomic_file_open (tt_atomic_file * f, const char *path, tt_error * err)
{
  memset (f, 0, sizeof *f);
  f->fd = -1;
  if (snprintf (f->path, sizeof f->path, "%s", path) >= (int) sizeof f->path
      || snprintf (f->tmp, sizeof f->tmp, "%s.tmp-%ld-XXXXXX", path,
          (long) getpid ()) >= (int) sizeof f->tmp)
    return tt_fail (err, TT_ERR_IO, "%s: path too long", path);
  atomic_file_sweep (path);
  f->fd = mkstemp (f->tmp);
  if (f->fd < 0)
    return tt_fail (err, TT_ERR_IO, "%s: cannot create a temporary file: %s",
        path, strerror (errno));
  return TT_OK;
}

tt_status
tt_atomic_file_write (tt_atomic_file * f, const void *data, size_t len,
    tt_error * err)
{
  const char *p = data;
  while (len > 0 && !f->failed) {
    ssize_t n = write (f->fd, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      f->failed = true;
      return tt_fail (err, TT_ERR_IO, "%s: write failed: %s", f->path,
          n < 0 ? strerror (errno) : "no progress");
    }
    p += n;
    len -= (size_t) n;
  }
  return f->failed ? tt_fail (err, TT_ERR_IO, "%s: write failed", f->path) :
      TT_OK;
}

tt_status
tt_atomic_file_pwrite (tt_atomic_file * f, uint64_t offset, const void *data,
    size_t len, tt_error * err)
{
  const char *p = data;
  while (len > 0 && !f->failed) {
    ssize_t n = pwrite (f->fd, p, len, (off_t) offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      f->failed = true;
      return tt_fail (err, TT_ERR_IO, "%s: write failed: %s", f->path,
          n < 0 ? strerror (errno) : "no progress");
    }
    p += n;
    offset += (uint64_t) n;
    len -= (size_t) n;
  }
  return f->failed ? tt_fail (err, TT_ERR_IO, "%s: write failed", f->path) :
      TT_OK;
}

void
tt_atomic_file_abort (tt_atomic_file * f)
{
  if (f->fd >= 0) {
    close (f->fd);
    unlink (f->tmp);
    f->fd = -1;
  }
}

tt_status
tt_atomic_file_commit (tt_atomic_file * f, tt_error * err)
{
  if (f->failed) {
    tt_atomic_file_abort (f);
    return tt_fail (err, TT_ERR_IO, "%s: not saved after a write error",
        f->path);
  }
  /* mkstemp creates 0600; a model file is as readable as any other */
  mode_t mask = umask (0);
  umask (mask);
  if (fchmod (f->fd, 0666 & ~mask) != 0 || fsync (f->fd) != 0) {
    int e = errno;
    tt_atomic_file_abort (f);
    return tt_fail (err, TT_ERR_IO, "%s: cannot flush to disk: %s", f->path,
        strerror (e));
  }
  if (close (f->fd) != 0) {
    int e = errno;
    f->fd = -1;
    unlink (f->tmp);
    return tt_fail (err, TT_ERR_IO, "%s: close failed: %s", f->path,
        strerror (e));
  }
  f->fd = -1;
  if (rename (f->tmp, f->path) != 0) {
    int e = errno;
    unlink (f->tmp);
    return tt_fail (err, TT_ERR_IO, "%s: cannot replace: %s", f->path,
        strerror (e));
  }
  /* the rename itself must reach the disk too */
  char dir[sizeof f->path];
  snprintf (dir, sizeof dir, "%s", f->path);
  int dfd = open (dirname (dir), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    fsync (dfd);
    close (dfd);
  }
  return TT_OK;
}
