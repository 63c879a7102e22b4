/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine's thread pool (tt_threads.h says how kernels use it).
 *
 * One word, state, holds the job's generation (32 bits), its number of
 * parts n and the next part to claim k (16 bits each); a thread claims
 * part k of generation g by a compare-and-swap of (g, n, k) to
 * (g, n, k + 1) when k < n, so a thread that woke late, after its job
 * ended and the next began, can never claim a part of the wrong job: the
 * swap fails on the generation. n is in the word, not beside it: a late
 * thread that read the next job's part count while its fields were being
 * written would otherwise claim part n of an ended job (seen under
 * ThreadSanitizer's scheduling: a part run twice). The job's fn and arg
 * are written before the generation is published and rewritten only
 * after every part of the previous job is done, so a successful claim
 * always pairs with the fields it read; they are atomics because a late
 * thread may read them while they change (it then fails its claim and
 * discards them). A job of up to 32 parts is affine: its next-part
 * field holds THREADS_AFFINE, its parts are claimed by bits in
 * owned_claims, and thread t takes those of its own block first. An
 * owned job (tt_threads_run_owned) marks its
 * next-part field THREADS_OWNED; worker i claims its part i in
 * owned_claims, a bit per part beside the job's generation, and the
 * caller, done with part 0, claims and runs those no worker has started
 * (a worker that lost its core to another process).
 *
 * Sleeping: a worker spins about TT_THREADS_SPIN_NS for the next job,
 * then waits on wake; the caller, having no part left, spins as long for
 * the workers' parts, then waits on done_cv. Each side signals only when
 * the other announced it sleeps (sleepers, caller_sleeping): both flags
 * and the words they guard are sequentially consistent, so of "I sleep"
 * and "there is news" one side always sees the other's store (no lost
 * wake-up), and a job whose workers are spinning costs no system call.
 */
#include "tt_threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Long enough to bridge the gap between two layers' jobs (a few
 * microseconds of serial work), short enough that a pool between steps
 * or batches gives its cores back at once. */
#define TT_THREADS_SPIN_NS 50000
/* Inside a step (tt_threads_begin .. tt_threads_end) workers spin this
 * long after their last part before sleeping: a step's jobs come
 * microseconds apart (the MLP at batch 32: 41 jobs a step, most under
 * 16 us), and on the 2-core virtual machine waking a sleeper on a
 * condition variable took 8 us (median; 16 us at p90, 84 at p99, under
 * load) against 0.5 us for a spinning one. Bounded so that a step with
 * long serial stretches still gives the core back. */
#define TT_THREADS_STEP_SPIN_NS 2000000

/* Choosing, step by step, between the workers and the caller alone.
 * When another process takes a core, a worker loses it for whole time
 * slices (milliseconds) while it holds a part, and the caller, done with
 * its own, waits: on the 2-core machine with a CPU hog two threads
 * trained at 0.55-0.88 of one thread's speed; and this virtual machine
 * has stretches in which two threads gain nothing whatever they do. So
 * the pool times whole steps (tt_threads_begin .. _end), what the user
 * waits for, each kind of step apart. It holds a choice (split or
 * inline) for a number of steps, then tries the other way for a few
 * (after one it does not time: the first step after a change pays for
 * moving data between the cores' caches, an owned weight's rows that the
 * caller updated inline), and keeps the way whose steps took less on
 * average. Averages, not medians: a worker that shares its core with a
 * hog runs for a few milliseconds and then waits as long, so split steps
 * are fast or slow in turns, and only the mean over several turns says
 * what splitting gives; each side is therefore timed over at least
 * TT_THREADS_PHASE_NS (or TT_THREADS_PHASE_MAX steps) and
 * TT_THREADS_PHASE_MIN steps. Split wins only when it takes under
 * TT_THREADS_SPLIT_GAIN of inline (spinning workers cost a pipeline's
 * other threads a core: a tie goes to the caller alone). The first
 * hold splits, as long as a trial. Then a choice holds for
 * TT_THREADS_HOLD_MIN steps and at least TT_THREADS_HOLD_PHASES
 * trials' worth of time (a trial then costs at most a fifth of the time
 * at first), four times longer each time a trial confirms it, up to
 * TT_THREADS_HOLD_MAX_NS of steps, so that trials take a few percent of
 * the time once settled. A trial whose timed steps (at least
 * TT_THREADS_GIVE_UP_STEPS) already average over TT_THREADS_GIVE_UP times
 * the held way's mean step ends there, as lost, whatever its next steps
 * would do: with a CPU hog on the worker's core a split step took
 * several inline ones, and a trial of the CNN at batch 32 ran 8-10 of
 * them an epoch (3 now), each keeping a worker busy on the core that
 * the hog, or a pipeline's other threads, wanted. Inline runs the same
 * parts in order, so results do not depend on the choice. */
#define TT_THREADS_PHASE_MIN 4u
#define TT_THREADS_PHASE_MAX 64u
#define TT_THREADS_PHASE_NS 30000000u
#define TT_THREADS_SPLIT_GAIN 0.97
#define TT_THREADS_HOLD_MIN 16u
#define TT_THREADS_HOLD_PHASES 4u
#define TT_THREADS_HOLD_MAX_NS 2000000000u
#define TT_THREADS_GIVE_UP_STEPS 2u
#define TT_THREADS_GIVE_UP 2.0
/* The same for a trial of inline steps while splitting holds, sooner:
 * inline steps run on the caller alone, with nobody to wait for, so
 * their time is steady and two of them tell. On the 2-core machine in
 * its fast state the CNN at batch 32 ran inline steps 1.8 times as long
 * as split ones, under TT_THREADS_GIVE_UP, so each trial of them ran its
 * 30 ms: 15 inline steps of each 200-step epoch at first, 7% of the
 * epoch's time (1.75-1.85x one thread, against 1.93x with every step
 * split). */
#define TT_THREADS_GIVE_UP_INLINE 1.5
/* A trial of splitting needs cores to split on. When the CPUs the pool
 * may use were idle, over a hold of inline steps, for less than
 * TT_THREADS_FREE_CORE of a core per worker (their kernel's own count,
 * tt_threads_set_idle_source), another process or a pipeline's other
 * threads had them, and the hold goes on without a trial, as long again:
 * with a CPU hog on the other core of the 2-core machine, the CNN at
 * batch 32 split 1-8 steps of each 200-step epoch in trials (a worker
 * that has slept gets its core back at once, so a trial's first steps
 * often passed, and a lucky one began a hold of split steps), and ran
 * at 0.97 of one thread's speed, against 0.99 with every step inline
 * (medians of 6 alternating rounds). The pool's CPUs are those it may
 * run on, the caller's included: its own inline steps keep one busy. */
#define TT_THREADS_FREE_CORE 0.5

/* one kind of step's choice */
typedef struct
{
  bool split;                   /* the choice held */
  bool trial;                   /* a trial (of !split) runs */
  bool changed;                 /* the next step is the first of a way */
  bool decided;                 /* a trial has decided once */
  unsigned hold;                /* the choice's length; 0: none made yet */
  unsigned ran;                 /* steps run of the hold or the trial */
  unsigned timed;               /* of which timed */
  uint64_t timed_ns;            /* their time */
  double held_mean_ns;          /* the hold's mean step, for its trial */
  /* at an inline hold's start: the CPUs' idle time, when known, and the
   * clock */
  bool idle_known;
  uint64_t idle_ns, idle_at_ns;
} threads_choice;

/* a worker's time in parts (tt_threads_set_timing), a cache line each */
typedef struct
{
  atomic_uint_least64_t ns;
  char line[56];                /* the rest of a 64-byte line */
} threads_part_time;
_Static_assert (sizeof (threads_part_time) == 64, "a line each");

struct tt_threads;
/* what a worker is started with: its pool and its index (1 .. n - 1; the
 * caller is 0), the part it runs of a tt_threads_run_owned job */
typedef struct
{
  struct tt_threads *pool;
  unsigned index;
} threads_worker_arg;

struct tt_threads
{
  unsigned n;                   /* threads, the caller included */
  unsigned started;             /* workers running */
  pthread_t workers[TT_THREADS_MAX];
  threads_worker_arg worker_args[TT_THREADS_MAX];
  pthread_mutex_t lock;
  pthread_cond_t wake;          /* workers: a new job or quit */
  pthread_cond_t done_cv;       /* caller: the last part is done */
  _Atomic uint64_t state;       /* generation << 32 | parts << 16 | next */
  /* an owned job's: generation << 32 | a bit per part claimed */
  _Atomic uint64_t owned_claims;
  _Atomic tt_threads_fn fn;
  void *_Atomic arg;
  atomic_uint done;             /* parts of this generation finished */
  atomic_uint sleepers;         /* workers waiting on wake */
  atomic_int caller_sleeping;
  atomic_int busy;              /* a job is running: nested runs inline */
  atomic_int quit;
  atomic_int in_step;           /* between tt_threads_begin and _end */
  /* each worker's scratch (tt_threads_set_scratch), the owner's memory */
  float *scratch;
  size_t scratch_floats;
  /* where the workers run (threads_place): the CPUs the pool may use,
   * the caller's CPU last seen and each worker's (-1: not pinned) */
  int cpus[TT_THREADS_MAX];
  unsigned n_cpus;
  int caller_cpu;
  int worker_cpu[TT_THREADS_MAX];
  /* the caller's alone: the choice of each kind of step, the step that
   * runs (its kind, its start, whether it splits) */
  threads_choice choice[TT_THREADS_STEP_KINDS];
  /* where the CPUs' idle time comes from (tt_threads_set_idle_source) */
  tt_threads_idle_fn idle_fn;
  void *idle_ctx;
  /* the clock of steps (tt_threads_set_clock; NULL: the monotonic one) */
  tt_threads_clock_fn clock_fn;
  void *clock_ctx;
  int forced;                   /* TT_THREADS_STEPS: 1 split, -1 inline */
  unsigned step_kind;
  uint64_t step_start;
  bool step_inline;             /* jobs run on the caller alone */
  bool step_had_job;            /* the last split step ran a split job */
  atomic_uint step_seq;         /* a split step began: workers wake */
  uint64_t steps_split, steps_inline;   /* steps begun each way */
  /* this step's waits for workers' parts that outlasted the caller's
   * spin (threads_job): the whole wait of each */
  uint64_t step_slept_ns;
  /* tt_threads_set_timing: the caller's waits (its own), each worker's
   * time in parts (written by it alone, read once a job is done; a line
   * each, not to slow the others' writes) */
  atomic_bool timing;
  uint64_t wait_ns;
  threads_part_time part_ns[TT_THREADS_MAX];
};

static inline void
threads_pause (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#elif defined(__aarch64__)
  __asm__ __volatile__ ("yield");
#endif
}

uint64_t
tt_threads_now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* The time, in ns, by the clock that times the pool's steps. */
static uint64_t
threads_clock (const tt_threads * p)
{
  return p->clock_fn ? p->clock_fn (p->clock_ctx) : tt_threads_now_ns ();
}

/* A part counted done, the caller woken if it waits for the last. */
static void
threads_part_done (tt_threads * p, unsigned n)
{
  if (atomic_fetch_add (&p->done, 1) + 1 == n &&
      atomic_load (&p->caller_sleeping)) {
    pthread_mutex_lock (&p->lock);
    pthread_cond_signal (&p->done_cv);
    pthread_mutex_unlock (&p->lock);
  }
}

/* Part k of fn on thread t: a worker's time in it counted when
 * timing. */
static inline void
threads_run_part (tt_threads * p, unsigned t, tt_threads_fn fn, void *arg,
    unsigned k, unsigned n)
{
  if (!t || !atomic_load_explicit (&p->timing, memory_order_relaxed)) {
    fn (arg, k, n);
    return;
  }
  const uint64_t t0 = tt_threads_now_ns ();
  fn (arg, k, n);
  atomic_fetch_add_explicit (&p->part_ns[t].ns, tt_threads_now_ns () - t0,
      memory_order_relaxed);
}

/* Claims and runs parts of the job state s belongs to, on thread t,
 * until none is left (or the job is another one's). */
static void
threads_work (tt_threads * p, uint64_t s, unsigned t)
{
  for (;;) {
    const unsigned k = (unsigned) (s & 0xffff), n = (unsigned) (s >> 16 &
        0xffff);
    if (k >= n)
      return;
    tt_threads_fn fn = atomic_load_explicit (&p->fn, memory_order_relaxed);
    void *arg = atomic_load_explicit (&p->arg, memory_order_relaxed);
    if (!atomic_compare_exchange_weak_explicit (&p->state, &s, s + 1,
            memory_order_acq_rel, memory_order_acquire))
      continue;                 /* s now holds the current state */
    threads_run_part (p, t, fn, arg, k, n);
    threads_part_done (p, n);
    s = atomic_load_explicit (&p->state, memory_order_acquire);
  }
}

/* The next part of an owned job (tt_threads_run_owned): beyond every
 * part, so that nobody claims one (a dynamic job has at most
 * TT_THREADS_MAX_PARTS, two less), and the mark of such a job in the
 * state word, which a worker reads with the generation: a worker late
 * from a dynamic job can never take the next, owned one for its own. */
#define THREADS_OWNED 0xffffu
/* the mark of an affine job: parts claimed by bits as an owned job's,
 * thread t first taking those of its own block (threads_block), then any
 * left, from the last */
#define THREADS_AFFINE 0xfffeu
/* parts of a job claimed by bits (the low 32 bits of owned_claims): of
 * an owned job, threads of the pool; of an affine job, parts */
#define THREADS_OWNED_MAX 32

/* Claims part index of the owned job of state s, unless it was claimed
 * or the job is over (another generation's claims). */
static bool
threads_claim_owned (tt_threads * p, uint64_t s, unsigned index)
{
  const uint64_t gen = s >> 32, bit = (uint64_t) 1 << index;
  uint64_t c = atomic_load_explicit (&p->owned_claims, memory_order_acquire);
  for (;;) {
    if (c >> 32 != gen || (c & bit))
      return false;
    if (atomic_compare_exchange_weak_explicit (&p->owned_claims, &c, c | bit,
            memory_order_acq_rel, memory_order_acquire))
      return true;
  }
}

/* Part k of the job of state s (fn, arg, n parts), if thread t claims
 * it. */
static void
threads_run_claimed (tt_threads * p, uint64_t s, unsigned t, unsigned k,
    tt_threads_fn fn, void *arg, unsigned n)
{
  if (threads_claim_owned (p, s, k)) {
    threads_run_part (p, t, fn, arg, k, n);
    threads_part_done (p, n);
  }
}

/* Thread t's block of an affine job's n parts, [*lo, *hi): contiguous,
 * in thread order, as tt_threads_range splits them. */
static void
threads_block (unsigned t, unsigned threads, unsigned n, unsigned *lo,
    unsigned *hi)
{
  size_t b, e;
  tt_threads_range (n, 1, t, threads, &b, &e);
  *lo = (unsigned) b;
  *hi = (unsigned) e;
}

/* The parts of the affine job of state s that thread t claims: those of
 * its block in order, then, when it is done, those of the others' that
 * nobody has started, from the last (the one its owner reaches last).
 * The caller of an owned job (n parts for n threads) runs it too: its
 * part 0, then those no worker has started. */
static void
threads_work_affine (tt_threads * p, uint64_t s, unsigned t)
{
  const unsigned n = (unsigned) (s >> 16 & 0xffff);
  unsigned lo, hi;
  threads_block (t, p->n, n, &lo, &hi);
  tt_threads_fn fn = atomic_load_explicit (&p->fn, memory_order_relaxed);
  void *arg = atomic_load_explicit (&p->arg, memory_order_relaxed);
  for (unsigned k = lo; k < hi; k++)
    threads_run_claimed (p, s, t, k, fn, arg, n);
  for (unsigned k = n; k-- > 0;)
    if (k < lo || k >= hi)
      threads_run_claimed (p, s, t, k, fn, arg, n);
}

/* Part index of the owned job of state s, when this thread claims it:
 * fn and arg are those of s's generation, as they are rewritten only
 * once its every part is done. */
static void
threads_work_owned (tt_threads * p, uint64_t s, unsigned index)
{
  const unsigned n = (unsigned) (s >> 16 & 0xffff);
  if (index < n)
    threads_run_claimed (p, s, index, index, atomic_load_explicit (&p->fn,
            memory_order_relaxed), atomic_load_explicit (&p->arg,
            memory_order_relaxed), n);
}

static void *
threads_worker (void *arg)
{
  const threads_worker_arg *self = arg;
  tt_threads *p = self->pool;
  uint32_t seen = 0;            /* the generation last worked on */
  for (;;) {
    const unsigned step_seq = atomic_load (&p->step_seq);
    uint64_t s = atomic_load_explicit (&p->state, memory_order_acquire);
    const uint64_t t0 = tt_threads_now_ns ();
    for (unsigned i = 1; (uint32_t) (s >> 32) == seen &&
        !atomic_load_explicit (&p->quit, memory_order_relaxed); i++) {
      threads_pause ();
      if (i % 64 == 0) {
        const uint64_t spin = atomic_load_explicit (&p->in_step,
            memory_order_relaxed) ? TT_THREADS_STEP_SPIN_NS :
            TT_THREADS_SPIN_NS;
        if (tt_threads_now_ns () - t0 > spin)
          break;
      }
      s = atomic_load_explicit (&p->state, memory_order_acquire);
    }
    if ((uint32_t) (s >> 32) == seen) {
      pthread_mutex_lock (&p->lock);
      atomic_fetch_add (&p->sleepers, 1);
      while ((uint32_t) ((s = atomic_load (&p->state)) >> 32) == seen &&
          !atomic_load (&p->quit) && atomic_load (&p->step_seq) == step_seq)
        pthread_cond_wait (&p->wake, &p->lock);
      atomic_fetch_sub (&p->sleepers, 1);
      pthread_mutex_unlock (&p->lock);
      /* woken by a step's start: spin for its first job */
      if ((uint32_t) (s >> 32) == seen && !atomic_load (&p->quit))
        continue;
    }
    if (atomic_load (&p->quit))
      return NULL;
    seen = (uint32_t) (s >> 32);
    if ((s & 0xffff) == THREADS_OWNED)
      threads_work_owned (p, s, self->index);
    else if ((s & 0xffff) == THREADS_AFFINE)
      threads_work_affine (p, s, self->index);
    else
      threads_work (p, s, self->index);
  }
}

/* Keeps the workers off the caller's CPU. A kernel may run two busy
 * threads on one CPU and leave the other idle: on the 2-core virtual
 * machine (whose kernel packs tasks, sched_vcpu_pack) a pool's worker
 * shared the caller's CPU in about one run of six, for the whole run,
 * and two threads then took as long as one (a split product: 271 us a
 * job against 129 on two CPUs). So at each step the caller looks where
 * it runs and, when it moved, pins worker i to the i-th allowed CPU
 * after its own: a system call only when the caller changed CPU. Not
 * when the pool has more threads than CPUs, nor off Linux. */
static void
threads_place (tt_threads * p)
{
#ifdef __linux__
  if (p->n_cpus < p->n)
    return;
  const int cpu = sched_getcpu ();
  if (cpu < 0 || cpu == p->caller_cpu)
    return;
  p->caller_cpu = cpu;
  unsigned at = 0;
  while (at < p->n_cpus && p->cpus[at] != cpu)
    at++;
  if (at == p->n_cpus)
    return;                     /* the caller runs outside the pool's set */
  for (unsigned i = 1; i < p->n; i++) {
    const int want = p->cpus[(at + i) % p->n_cpus];
    if (p->worker_cpu[i] == want)
      continue;
    cpu_set_t set;
    CPU_ZERO (&set);
    CPU_SET (want, &set);
    p->worker_cpu[i] = pthread_setaffinity_np (p->workers[i - 1], sizeof set,
        &set) ? -1 : want;
  }
#else
  (void) p;
#endif
}

/* Whether this step of choice c splits: the choice held, or the other
 * way during a trial. */
static bool
threads_choose (threads_choice * c)
{
  if (!c->hold) {
    c->split = c->changed = true;
    c->hold = TT_THREADS_HOLD_MIN;
  }
  return c->trial ? !c->split : c->split;
}

/* Whether the steps timed so far of a trial (times 1) or a hold (times
 * TT_THREADS_HOLD_PHASES) are enough. */
static bool
threads_phase_timed (const threads_choice * c, unsigned times)
{
  return c->timed >= times * TT_THREADS_PHASE_MIN &&
      (c->timed_ns >= (uint64_t) times * TT_THREADS_PHASE_NS ||
      c->timed >= times * TT_THREADS_PHASE_MAX);
}

/* An inline hold of c begins: the pool's CPUs' idle time so far. */
static void
threads_idle_mark (const tt_threads * p, threads_choice * c)
{
  c->idle_known = p->idle_fn && p->n_cpus > 0 && p->n_cpus < TT_THREADS_MAX &&
      p->idle_fn (p->idle_ctx, p->cpus, p->n_cpus, &c->idle_ns) == 0;
  c->idle_at_ns = threads_clock (p);
}

/* Whether, over the inline hold of c now ending, the pool's CPUs were
 * idle for less than TT_THREADS_FREE_CORE of a core per worker: no core
 * to split on. False when unknown (no count, none to compare with, a
 * count that went back). */
static bool
threads_cores_taken (const tt_threads * p, const threads_choice * c)
{
  uint64_t idle_ns;
  if (!c->idle_known || p->idle_fn (p->idle_ctx, p->cpus, p->n_cpus,
          &idle_ns) != 0 || idle_ns < c->idle_ns)
    return false;
  const uint64_t wall_ns = threads_clock (p) - c->idle_at_ns;
  return (double) (idle_ns - c->idle_ns) <
      TT_THREADS_FREE_CORE * (p->n - 1) * (double) wall_ns;
}

/* A step of choice c took ns: the hold ends, or the trial decides.
 * stalled: the step split and its caller spent most of it waiting for
 * a worker's part (threads_job), the sign of a worker that lost its
 * core to another process mid-part: a trial of splitting is lost at
 * once, without the steps a mean needs (with a CPU hog on the worker's
 * core, split steps took 1.3-1.7 times an inline one on average, under
 * the give-up ratio, so each trial ran its 30 ms, and the trials cost
 * the CNN 3-4% of its inline speed). Not a split hold: one stalled step
 * there may be a hiccup of the host, and the hold's end weighs it. */
static void
threads_step_timed (const tt_threads * p, threads_choice * c, uint64_t ns,
    bool stalled)
{
  c->ran++;
  if (c->changed)
    c->changed = false;         /* caches refill: not timed */
  else {
    c->timed++;
    c->timed_ns += ns;
  }
  const double mean = c->timed ? (double) c->timed_ns / c->timed : 0;
  if (!c->trial) {
    /* the first hold, split before anything is known, is as short as a
     * trial: a short run (an evaluation pass) should not spend its
     * time split where splitting does not pay */
    if (c->ran < c->hold || !threads_phase_timed (c, c->decided ?
            TT_THREADS_HOLD_PHASES : 1))
      return;
    if (!c->split && threads_cores_taken (p, c)) {
      c->ran = c->timed = 0;    /* hold on, no trial */
      c->timed_ns = 0;
      threads_idle_mark (p, c);
      return;
    }
    c->held_mean_ns = mean;
    c->trial = c->changed = true;
  } else {
    const bool stalled_trial = stalled && !c->split;
    const double give_up = c->split ? TT_THREADS_GIVE_UP_INLINE :
        TT_THREADS_GIVE_UP;
    const bool lost = stalled_trial || (c->timed >= TT_THREADS_GIVE_UP_STEPS
        && mean > give_up * c->held_mean_ns);
    if (!lost && !threads_phase_timed (c, 1))
      return;
    const double split_ns = c->split ? c->held_mean_ns : mean;
    const double inline_ns = c->split ? mean : c->held_mean_ns;
    const bool split = stalled_trial ? false :
        split_ns < TT_THREADS_SPLIT_GAIN * inline_ns;
    if (split == c->split) {
      /* four times longer, up to TT_THREADS_HOLD_MAX_NS of its steps */
      const double most = TT_THREADS_HOLD_MAX_NS / (c->held_mean_ns > 1 ?
          c->held_mean_ns : 1);
      c->hold = (double) c->hold * 4 < most ? c->hold * 4 :
          most > TT_THREADS_HOLD_MIN ? (unsigned) most : TT_THREADS_HOLD_MIN;
    } else {
      c->hold = TT_THREADS_HOLD_MIN;
    }
    c->split = split;
    c->trial = false;
    c->changed = c->decided = true;
  }
  c->ran = c->timed = 0;
  c->timed_ns = 0;
  if (!c->trial && !c->split)
    threads_idle_mark (p, c);
}

void
tt_threads_begin (tt_threads * p, unsigned kind)
{
  if (!p)
    return;
  p->step_start = threads_clock (p);
  p->step_kind = kind < TT_THREADS_STEP_KINDS ? kind : TT_THREADS_ALWAYS_SPLIT;
  bool split;
  if (p->step_kind == TT_THREADS_ALWAYS_SPLIT || p->forced > 0)
    split = true;
  else if (p->forced < 0)
    split = false;
  else
    split = threads_choose (&p->choice[p->step_kind]);
  p->step_inline = !split;
  if (p->step_inline) {
    p->steps_inline++;
    return;                     /* the workers sleep: nothing to wake */
  }
  p->steps_split++;
  p->step_slept_ns = 0;
  threads_place (p);
  atomic_store (&p->in_step, 1);
  /* sleeping workers start spinning now, while the caller does the
   * step's serial start, so that its first job does not wait for the
   * wake-up (8 us here); not when the last split step had no job for
   * them (inference at batch 1) */
  if (p->step_had_job) {
    atomic_fetch_add (&p->step_seq, 1);
    if (atomic_load (&p->sleepers)) {
      pthread_mutex_lock (&p->lock);
      pthread_cond_broadcast (&p->wake);
      pthread_mutex_unlock (&p->lock);
    }
  }
  p->step_had_job = false;
}

void
tt_threads_step_counts (const tt_threads * p, uint64_t * split,
    uint64_t * inline_steps)
{
  *split = p ? p->steps_split : 0;
  *inline_steps = p ? p->steps_inline : 0;
}

void
tt_threads_end (tt_threads * p)
{
  if (!p)
    return;
  const uint64_t end = threads_clock (p);
  atomic_store (&p->in_step, 0);
  threads_choice *c = &p->choice[p->step_kind];
  if (p->step_kind != TT_THREADS_ALWAYS_SPLIT && !p->forced)
    threads_step_timed (p, c, end - p->step_start, !p->step_inline &&
        p->step_slept_ns * 2 > end - p->step_start);
  p->step_inline = false;
}

int
tt_threads_new (unsigned n, tt_threads ** out)
{
  *out = NULL;
  if (n <= 1)
    return 0;
  if (n > TT_THREADS_MAX)
    n = TT_THREADS_MAX;
  tt_threads *p = calloc (1, sizeof *p);
  if (!p)
    return -1;
  p->n = n;
  p->caller_cpu = -1;
  p->idle_fn = tt_cpu_idle_ns;
  const char *steps = getenv ("TT_THREADS_STEPS");
  p->forced = !steps ? 0 : !strcmp (steps, "split") ? 1 :
      !strcmp (steps, "inline") ? -1 : 0;
  for (unsigned i = 0; i < TT_THREADS_MAX; i++)
    p->worker_cpu[i] = -1;
#ifdef __linux__
  cpu_set_t allowed;
  if (sched_getaffinity (0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE && p->n_cpus < TT_THREADS_MAX; c++)
      if (CPU_ISSET (c, &allowed))
        p->cpus[p->n_cpus++] = c;
#endif
  pthread_mutex_init (&p->lock, NULL);
  pthread_cond_init (&p->wake, NULL);
  pthread_cond_init (&p->done_cv, NULL);
  for (unsigned i = 0; i + 1 < n; i++) {
    p->worker_args[i] = (threads_worker_arg) {
    p, i + 1};
    if (pthread_create (&p->workers[i], NULL, threads_worker,
            &p->worker_args[i])) {
      tt_threads_free (p);
      return -1;
    }
    p->started++;
  }
  *out = p;
  return 0;
}

void
tt_threads_free (tt_threads * p)
{
  if (!p)
    return;
  pthread_mutex_lock (&p->lock);
  atomic_store (&p->quit, 1);
  pthread_cond_broadcast (&p->wake);
  pthread_mutex_unlock (&p->lock);
  for (unsigned i = 0; i < p->started; i++)
    pthread_join (p->workers[i], NULL);
  pthread_cond_destroy (&p->done_cv);
  pthread_cond_destroy (&p->wake);
  pthread_mutex_destroy (&p->lock);
  free (p);
}

unsigned
tt_threads_count (const tt_threads * p)
{
  return p ? p->n : 1;
}

/* How a job's parts go to threads */
typedef enum
{
  THREADS_JOB_DYNAMIC,          /* claimed in order by whoever is free */
  THREADS_JOB_AFFINE,           /* each thread its block first */
  THREADS_JOB_OWNED,            /* part i on thread i, or the caller */
} threads_job_kind;

/* Runs a job of n_parts on the pool; owned: part i on thread i (n_parts
 * is then the thread count). */
static void
threads_job (tt_threads * p, tt_threads_fn fn, void *arg, unsigned n_parts,
    threads_job_kind kind)
{
  if (!p || n_parts <= 1 || n_parts > TT_THREADS_MAX_PARTS ||
      atomic_exchange (&p->busy, 1)) {
    for (unsigned k = 0; k < n_parts; k++)
      fn (arg, k, n_parts);
    return;
  }
  if (p->step_inline) {
    for (unsigned k = 0; k < n_parts; k++)
      fn (arg, k, n_parts);
    atomic_store (&p->busy, 0);
    return;
  }
  p->step_had_job = true;
  atomic_store_explicit (&p->fn, fn, memory_order_relaxed);
  atomic_store_explicit (&p->arg, arg, memory_order_relaxed);
  atomic_store_explicit (&p->done, 0, memory_order_relaxed);
  const uint64_t gen = (atomic_load_explicit (&p->state,
          memory_order_relaxed) >> 32) + 1;
  const unsigned mark = kind == THREADS_JOB_OWNED ? THREADS_OWNED :
      kind == THREADS_JOB_AFFINE ? THREADS_AFFINE : 0;
  const uint64_t s = (gen & 0xffffffffu) << 32 | (uint64_t) n_parts << 16 |
      mark;
  if (kind != THREADS_JOB_DYNAMIC)
    atomic_store (&p->owned_claims, (gen & 0xffffffffu) << 32);
  atomic_store (&p->state, s);
  if (atomic_load (&p->sleepers)) {
    pthread_mutex_lock (&p->lock);
    pthread_cond_broadcast (&p->wake);
    pthread_mutex_unlock (&p->lock);
  }
  if (kind == THREADS_JOB_DYNAMIC)
    threads_work (p, s, 0);
  else
    threads_work_affine (p, s, 0);
  const uint64_t t0 = tt_threads_now_ns ();
  for (unsigned i = 1; atomic_load_explicit (&p->done,
          memory_order_acquire) != n_parts; i++) {
    threads_pause ();
    if (i % 64 == 0 && tt_threads_now_ns () - t0 > TT_THREADS_SPIN_NS) {
      pthread_mutex_lock (&p->lock);
      atomic_store (&p->caller_sleeping, 1);
      while (atomic_load (&p->done) != n_parts)
        pthread_cond_wait (&p->done_cv, &p->lock);
      atomic_store (&p->caller_sleeping, 0);
      pthread_mutex_unlock (&p->lock);
      p->step_slept_ns += tt_threads_now_ns () - t0;
      break;
    }
  }
  if (atomic_load_explicit (&p->timing, memory_order_relaxed))
    p->wait_ns += tt_threads_now_ns () - t0;
  atomic_store (&p->busy, 0);
}

void
tt_threads_run (tt_threads * p, tt_threads_fn fn, void *arg, unsigned n_parts)
{
  /* by blocks when a bit a part fits: a layer's consecutive jobs split
   * the same way (its samples, its planes) then keep each block's data on
   * one core; on the 2-core machine in its slow state the CNN at batch 32
   * trained 2-13% faster on 2 threads (each of 8 alternating rounds) */
  threads_job (p, fn, arg, n_parts, n_parts <= THREADS_OWNED_MAX ?
      THREADS_JOB_AFFINE : THREADS_JOB_DYNAMIC);
}

void
tt_threads_run_owned (tt_threads * p, tt_threads_fn fn, void *arg)
{
  /* a claim bit a part (owned_claims): beyond, parts are claimed by
   * whoever is free, as in any job */
  const unsigned n = tt_threads_count (p);
  threads_job (p, fn, arg, n, n <= THREADS_OWNED_MAX ? THREADS_JOB_OWNED :
      THREADS_JOB_DYNAMIC);
}

void
tt_threads_set_idle_source (tt_threads * p, tt_threads_idle_fn fn, void *ctx)
{
  if (!p)
    return;
  p->idle_fn = fn;
  p->idle_ctx = ctx;
  for (unsigned k = 0; k < TT_THREADS_STEP_KINDS; k++)
    p->choice[k].idle_known = false;
}

void
tt_threads_set_clock (tt_threads * p, tt_threads_clock_fn fn, void *ctx)
{
  if (!p)
    return;
  p->clock_fn = fn;
  p->clock_ctx = ctx;
}

void
tt_threads_set_timing (tt_threads * p, bool on)
{
  if (p)
    atomic_store (&p->timing, on);
}

void
tt_threads_times (const tt_threads * p, uint64_t * caller_wait_ns,
    uint64_t * workers_ns)
{
  *caller_wait_ns = *workers_ns = 0;
  if (!p)
    return;
  *caller_wait_ns = p->wait_ns;
  for (unsigned i = 1; i < p->n; i++)
    *workers_ns += atomic_load_explicit (&p->part_ns[i].ns,
        memory_order_relaxed);
}

bool
tt_threads_step_inline (const tt_threads * p)
{
  return !p || p->n < 2 || p->step_inline;
}

void
tt_threads_set_scratch (tt_threads * p, float *base, size_t floats)
{
  if (!p)
    return;
  p->scratch = floats ? base : NULL;
  p->scratch_floats = base ? floats : 0;
}

float *
tt_threads_scratch (const tt_threads * p, unsigned part)
{
  if (!p || !p->scratch || part == 0 || part >= p->n)
    return NULL;
  return p->scratch + (size_t) (part - 1) * p->scratch_floats;
}

size_t
tt_threads_scratch_floats (const tt_threads * p)
{
  return p ? p->scratch_floats : 0;
}

unsigned
tt_threads_run_partials (tt_threads * p, size_t floats, tt_threads_fn fn,
    void *arg)
{
  const unsigned n = tt_threads_count (p);
  if (n < 2 || tt_threads_scratch_floats (p) < floats) {
    fn (arg, 0, 1);
    return 1;
  }
  tt_threads_run_owned (p, fn, arg);
  return n;
}

void
tt_threads_add_partials (const tt_threads * p, unsigned parts, size_t offset,
    float *dst, size_t count)
{
  for (unsigned part = 1; part < parts; part++) {
    const float *q = tt_threads_scratch (p, part) + offset;
    for (size_t i = 0; i < count; i++)
      dst[i] += q[i];
  }
}

unsigned
tt_threads_parts (const tt_threads * p, size_t units, unsigned per_thread)
{
  const size_t want = (size_t) tt_threads_count (p) *
      (per_thread ? per_thread : 1);
  const size_t parts = units < want ? units : want;
  return parts ? (unsigned) parts : 1;
}

void
tt_threads_range (size_t total, size_t quantum, unsigned part,
    unsigned n_parts, size_t *begin, size_t *end)
{
  if (!quantum)
    quantum = 1;
  if (!n_parts)
    n_parts = 1;
  const size_t units = (total + quantum - 1) / quantum;
  const size_t per = units / n_parts, rem = units % n_parts;
  const size_t b = part * per + (part < rem ? part : rem);
  const size_t e = b + per + (part < rem);
  *begin = b * quantum < total ? b * quantum : total;
  *end = e * quantum < total ? e * quantum : total;
}
