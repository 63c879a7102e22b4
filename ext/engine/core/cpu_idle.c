/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How long CPUs have been idle, from the kernel's own count (Linux's
 * /proc/stat): the thread pool (threads.c) asks it whether the cores its
 * workers would use were free while it ran its steps on the caller
 * alone, before it spends steps trying them.
 *
 * Read with open and read into a buffer on the stack: no allocation,
 * as the pool may ask in the middle of a training run.
 */
#include "tt_threads.h"

#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <fcntl.h>
#include <unistd.h>
#endif

/* Room for the per-CPU lines of 64 CPUs (about 70 bytes each) and the
 * total line before them: a listed CPU past the buffer is unknown. */
#define CPU_IDLE_BUFFER 8192

#ifdef __linux__
/* Idle and iowait ticks of the "cpuN ..." line at line, the line's CPU
 * in *cpu; false when line is no such line. */
static bool
cpu_idle_parse_line (const char *line, const char *end, int *cpu,
    unsigned long long *ticks)
{
  if (end - line < 4 || memcmp (line, "cpu", 3) || line[3] < '0' ||
      line[3] > '9')
    return false;
  char *next;
  const long n = strtol (line + 3, &next, 10);
  /* user nice system idle iowait: the fourth and fifth numbers */
  unsigned long long field[5];
  for (int i = 0; i < 5; i++) {
    const char *at = next;
    if (at >= end)
      return false;
    field[i] = strtoull (at, &next, 10);
    if (next == at || next > end)
      return false;
  }
  *cpu = (int) n;
  *ticks = field[3] + field[4];
  return true;
}
#endif

int
tt_cpu_idle_ns (void *ctx, const int *cpus, unsigned n, uint64_t * idle_ns)
{
  (void) ctx;
  *idle_ns = 0;
#ifdef __linux__
  char buf[CPU_IDLE_BUFFER];
  const int fd = open ("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t len = 0;
  for (;;) {
    const ssize_t got = read (fd, buf + len, sizeof buf - 1 - len);
    if (got <= 0)
      break;
    len += (size_t) got;
    if (len == sizeof buf - 1)
      break;
  }
  close (fd);
  buf[len] = '\0';
  const long hz = sysconf (_SC_CLK_TCK);
  if (hz <= 0)
    return -1;
  unsigned found = 0;
  unsigned long long ticks_sum = 0;
  for (const char *line = buf; line < buf + len;) {
    const char *end = memchr (line, '\n', (size_t) (buf + len - line));
    if (!end)
      break;                    /* a line cut by the buffer's end */
    int cpu;
    unsigned long long ticks;
    if (cpu_idle_parse_line (line, end, &cpu, &ticks))
      for (unsigned i = 0; i < n; i++)
        if (cpus[i] == cpu) {
          found++;
          ticks_sum += ticks;
          break;
        }
    line = end + 1;
  }
  if (found != n)
    return -1;
  const uint64_t ns_per_tick = 1000000000u / (uint64_t) hz;
  *idle_ns = ticks_sum * ns_per_tick;
  return 0;
#else
  (void) cpus;
  (void) n;
  return -1;
#endif
}
