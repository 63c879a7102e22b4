/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine's thread pool: one per model, made when the model is
 * compiled (tt_model_set_threads), used by the kernels through
 * tt_run_ctx.threads.
 *
 * A pool of n threads is n - 1 workers plus the caller. A job is
 * fn (arg, part, n_parts) for every part in [0, n_parts): the caller and
 * the workers claim parts one at a time, and tt_threads_run returns when
 * every part is done. Up to 32 parts, thread t first takes the parts of
 * its own block (the t-th of n contiguous blocks, as tt_threads_range
 * cuts them), then, done with those, the ones nobody has started, from
 * the last: consecutive jobs split the same way keep each block's data
 * in one core's cache, and a thread that lost its core leaves its parts
 * to the others. Beyond 32, whoever is free takes the next part. Which thread runs a
 * part is left to timing, so a part must depend on nothing but its
 * number: results are deterministic when n_parts and each part's range
 * are functions of the problem and the thread count (tt_threads_parts,
 * tt_threads_range), never of timing. Parts write disjoint outputs; a
 * reduction gives each part its own partial and combines them in part
 * order after the run.
 *
 * An owned job (tt_threads_run_owned) instead runs part i on thread i, so
 * that data a thread wrote in one job is still in its core's cache in the
 * next: on the 2-core machine a core reading 800 KB that the other had
 * just written made a split product no faster than one thread.
 *
 * A NULL pool (or one thread, or n_parts 1) runs every part inline on the
 * caller, in order, with no synchronization at all: kernels take the
 * pool as an argument and need no serial twin.
 *
 * Cost: nothing is allocated and no thread is created per job. Between
 * jobs workers spin (up to 2 ms inside a step, tt_threads_begin, else a
 * few microseconds) and then sleep on a condition variable, so an idle
 * pool takes no core from a pipeline's other threads; the caller likewise
 * sleeps when it has no part left and a worker is still busy.
 *
 * Rules for kernels:
 *  - run jobs only from the thread that owns the model (a pool runs one
 *    job at a time); a part that calls a kernel passes it NULL, and a
 *    nested tt_threads_run on a busy pool runs inline anyway;
 *  - parts must not allocate or take locks of their own;
 *  - a GEMM inside a part runs on OpenBLAS's threads, which the engine
 *    keeps at one (core/blas_threads.c): the engine's pool, not the BLAS
 *    library, splits the work.
 */
#ifndef TT_THREADS_H
#define TT_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TT_THREADS_MAX 64
/* parts of one job (more run inline, on the caller alone) */
#define TT_THREADS_MAX_PARTS 65533

typedef struct tt_threads tt_threads;
typedef void (*tt_threads_fn) (void *arg, unsigned part, unsigned n_parts);

/* A pool of n threads (the caller and n - 1 workers); *out = NULL for
 * n <= 1 (run inline). Returns 0, or -1 when a thread could not be
 * started (nothing is left running then). */
int tt_threads_new (unsigned n, tt_threads ** out);
void tt_threads_free (tt_threads * pool);
/* Threads of the pool: 1 for NULL. */
unsigned tt_threads_count (const tt_threads * pool);
/* fn (arg, part, n_parts) for each part; returns when all are done. */
void tt_threads_run (tt_threads * pool, tt_threads_fn fn, void *arg,
    unsigned n_parts);
/* fn (arg, i, n) for each of the pool's n threads, part i on thread i
 * (the caller is 0); returns when all are done. For work whose data
 * should stay in one core's caches from job to job: a weight's rows that
 * one thread updates and then reads in the next step's forward (part i
 * of every such job touches the same rows). The caller, done with part
 * 0, runs the parts no worker has started yet (one that lost its core
 * to another process). Inline, in order, like any job, when the pool is
 * busy or in a step run inline (tt_threads_begin); pools of over 32 threads run it as any job. */
void tt_threads_run_owned (tt_threads * pool, tt_threads_fn fn, void *arg);
/* Kinds of steps (tt_threads_begin): a kind's steps are timed apart. */
#define TT_THREADS_STEP_KINDS 4
/* a step that always uses the workers, never timed (probes, tests) */
#define TT_THREADS_ALWAYS_SPLIT 0
/* A step (a batch's forward and backward) of the given kind (1 ..
 * TT_THREADS_STEP_KINDS - 1, one per sort of step the owner runs, as
 * training and evaluation; TT_THREADS_ALWAYS_SPLIT) begins or ends.
 * Steps of a kind are timed: the pool tries them split and inline in
 * turn from time to time, and splits the next ones only when that was
 * faster (a core lost to another process, a machine where two threads
 * gain nothing): the workers then sleep, and every job of the step runs
 * inline, with the same results. Inside a split step, idle workers spin
 * up to TT_THREADS_STEP_SPIN_NS for the next job rather than sleeping
 * after a few microseconds; begin wakes sleeping workers when the last
 * split step had a job for them (not for steps with no split job, as
 * inference at batch 1). Begin also pins the workers to other CPUs than
 * the caller's when it moved (Linux; a pool of no more threads than
 * CPUs), as a kernel may otherwise run them on one. Outside a step, jobs
 * are split and workers sleep once they found no job for a few
 * microseconds. NULL: nothing. The environment variable
 * TT_THREADS_STEPS, read when the pool is made, overrides the choice:
 * "split" splits every step (the tests of split results, benchmarks of
 * what splitting gives), "inline" none. */
void tt_threads_begin (tt_threads * pool, unsigned kind);
/* Where the pool learns how long CPUs were idle: fn (ctx, cpus, n,
 * &idle_ns) sets idle_ns to the idle time so far of the n CPUs listed,
 * summed, in nanoseconds, and returns 0, or -1 when it cannot tell.
 * Before it tries splitting after a hold of inline steps, the pool asks
 * whether the CPUs it may use were idle, over the hold, for at least
 * half a core per worker; when they were not (a CPU hog, a pipeline's
 * other threads), it holds on without trying (core/threads.c). The
 * default, tt_cpu_idle_ns, reads Linux's /proc/stat (-1 elsewhere);
 * tests set their own; NULL fn: never known, every trial runs. */
typedef int (*tt_threads_idle_fn) (void *ctx, const int *cpus, unsigned n,
    uint64_t * idle_ns);
void tt_threads_set_idle_source (tt_threads * pool, tt_threads_idle_fn fn,
    void *ctx);
/* Where the pool reads the time of its steps (tt_threads_begin .. _end)
 * and of its holds, for tests that play steps of given lengths whatever
 * the machine's load: fn (ctx) in nanoseconds. NULL fn: the monotonic
 * clock (tt_threads_now_ns), the default. */
typedef uint64_t (*tt_threads_clock_fn) (void *ctx);
void tt_threads_set_clock (tt_threads * pool, tt_threads_clock_fn fn,
    void *ctx);
/* The default idle source (core/cpu_idle.c). */
int tt_cpu_idle_ns (void *ctx, const int *cpus, unsigned n,
    uint64_t * idle_ns);
/* Whether the jobs of the step under way run inline, in part order on
 * the caller (an inline step; NULL or one thread): the parts may then
 * share scratch that each rewrites before reading it, and stay in one
 * core's caches; what they add up (partials) stays apart, so that the
 * results are a split step's. */
bool tt_threads_step_inline (const tt_threads * pool);
/* Steps begun split and inline so far (0 and 0 for NULL). */
void tt_threads_step_counts (const tt_threads * pool, uint64_t * split,
    uint64_t * inline_steps);
void tt_threads_end (tt_threads * pool);
/* Time accounting, for profiles: while on, the caller's time waiting,
 * its own parts done, for the workers' parts of split jobs, and the
 * workers' time running parts, each summed from the pool's start (a
 * clock read around each worker's part, and one at each job's end). Off
 * by default. NULL: nothing. */
void tt_threads_set_timing (tt_threads * pool, bool on);
/* The sums so far (0 for NULL or one thread); read by the caller between
 * jobs. */
void tt_threads_times (const tt_threads * pool, uint64_t * caller_wait_ns,
    uint64_t * workers_ns);
/* Each worker's own scratch, for the parts of owned jobs that need more
 * than their stack (a dense layer's partial product or gradient chunk):
 * worker i >= 1 has floats floats at base + (i - 1) *
 * floats (whole cache lines when floats is a multiple of 16); the
 * owner (the model, core/model_threads.c) allocates and frees it. NULL
 * base: none. */
void tt_threads_set_scratch (tt_threads * pool, float *base, size_t floats);
/* Part's scratch in an owned job (part >= 1, its worker's); NULL for
 * part 0 (the caller uses the layer's own memory), no pool or none set. */
float *tt_threads_scratch (const tt_threads * pool, unsigned part);
/* floats of each worker's scratch: 0 without */
size_t tt_threads_scratch_floats (const tt_threads * pool);
/* A reduction by parts: an owned job whose part i >= 1 keeps its partial
 * in its worker's scratch (floats of it), part 0 in the caller's own
 * memory. Runs on the pool's threads when the workers have that much
 * scratch, else as fn (arg, 0, 1) on the caller (a pool of one thread,
 * one made outside a model). Returns the parts run. */
unsigned tt_threads_run_partials (tt_threads * pool, size_t floats,
    tt_threads_fn fn, void *arg);
/* dst[i] += the partial at offset in the scratch of parts 1 .. parts - 1,
 * for i < count, in part order (deterministic for a thread count). */
void tt_threads_add_partials (const tt_threads * pool, unsigned parts,
    size_t offset, float *dst, size_t count);
/* The monotonic clock in nanoseconds (the pool's timing of steps, the
 * model's profile). */
uint64_t tt_threads_now_ns (void);
/* Parts to split units of work into: min (units, threads * per_thread),
 * at least 1. per_thread > 1 lets a free thread take over parts of one
 * that lost its core (a pipeline's other elements, a CPU hog); 1 when
 * each part costs a reduction partial or a GEMM's efficiency. */
unsigned tt_threads_parts (const tt_threads * pool, size_t units,
    unsigned per_thread);
/* Part's range [*begin, *end) of [0, total): contiguous, in part order,
 * boundaries at multiples of quantum (a SIMD width, a tile, a block of
 * samples) but for total itself, sizes differing by at most one
 * quantum. */
void tt_threads_range (size_t total, size_t quantum, unsigned part,
    unsigned n_parts, size_t * begin, size_t * end);

#endif
