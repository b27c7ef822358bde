/* pool.c — the CPU backend's threads: the parallel parts of kernels run on
 * a small pool of worker threads, with the calling thread taking part.
 *
 * ember runs beside other work (another ember, a compiler, a training run),
 * which is why this is not OpenMP. An OpenMP team ends every parallel loop
 * at a barrier: when one of its threads is descheduled because the core is
 * busy, every other thread waits for it, then spins for milliseconds
 * before sleeping, on cores the other work needs. Small-op training went
 * 20x slower beside one busy process per core. Here:
 *   - A job is split into more chunks than threads. Threads claim chunks
 *     one at a time, so a worker that is late or descheduled before
 *     claiming one costs nothing: the others, the caller included, take
 *     its share. The caller waits only for chunks already claimed.
 *   - An idle worker spins for a few microseconds (consecutive ops then
 *     start at once), then sleeps on a futex. No thread burns a busy core.
 *   - The team adapts. When the caller had to wait at the end of a job for
 *     a worker that claimed a chunk and then lost its core, the team is
 *     halved. While jobs run clean it grows by one every 20 ms, and from a
 *     team of one it tries two again after a back-off that doubles while
 *     the machine stays busy (20 ms to 1 s).
 * How the work is split never depends on the team, only on cpu_threads()
 * (the configured count), so results are the same under any load.
 *
 * One job runs at a time: ops are submitted by one thread (the engine's).
 * The job is described by globals that workers read; a claim word holds the
 * job's sequence number and its next chunk, so a worker that read a stale
 * description cannot claim a chunk of a newer job (its compare-and-swap
 * fails), and the caller returns only when every chunk of its job is done. */
#include "cpu.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 1024
#define CLOSED 0xffffffffu      /* the claim index of a job not open (yet or any more) */
/* How long an idle worker looks for the next job before it sleeps: long
 * enough to bridge the Lua code between two ops of a training step while
 * the machine is free, short once the team has shrunk (others want the
 * cores). */
#define SPIN_FREE_NS 100000
#define SPIN_BUSY_NS 5000
#define CHUNKS_PER_THREAD 4

/* ---- futexes --------------------------------------------------------------- */

static void futex_wait(_Atomic uint32_t *word, uint32_t seen)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the job ----------------------------------------------------------------- */

static _Atomic uint64_t claim;            /* (sequence << 32) | next chunk, or CLOSED */
static _Atomic(cpu_range_fn) job_fn;
static _Atomic(void *) job_ctx;
static _Atomic int64_t job_n, job_size, job_chunks;
static _Atomic int64_t job_done;          /* chunks finished */
static uint32_t job_seq;                  /* the caller's only */

/* Set while a thread runs chunks: a kernel that starts a job from inside a
 * chunk (nothing does today) gets it run serially, not a corrupted job. */
static _Thread_local bool in_job;

/* Claims and runs chunks of the current job until none is left; returns
 * how many it ran. */
static int64_t run_chunks(void)
{
    int64_t ran = 0;
    in_job = true;
    for (;;) {
        uint64_t c = atomic_load(&claim);
        uint32_t k = (uint32_t)c;
        if (k == CLOSED) break;
        cpu_range_fn fn = atomic_load(&job_fn);
        void *ctx = atomic_load(&job_ctx);
        int64_t n = atomic_load(&job_n), size = atomic_load(&job_size), chunks = atomic_load(&job_chunks);
        if ((int64_t)k >= chunks) break;
        /* the job may have changed since c was read: then the exchange fails */
        if (!atomic_compare_exchange_weak(&claim, &c, c + 1)) continue;
        int64_t lo = (int64_t)k * size, hi = lo + size < n ? lo + size : n;
        fn(lo, hi, ctx);
        atomic_fetch_add(&job_done, 1);
        ran++;
    }
    in_job = false;
    return ran;
}

/* ---- workers ----------------------------------------------------------------- */

/* Each worker has its own wake word, so the caller wakes exactly the ones it
 * invites; padded so that they do not share cache lines. */
typedef struct worker {
    _Alignas(64) _Atomic uint32_t go;     /* bumped to invite the worker to a job */
    _Atomic int sleeping;
    pthread_t thread;
} worker;

static _Atomic int spin_ns = SPIN_FREE_NS;   /* set by the caller from the team's state */
static worker *workers;                   /* workers[1..started-1]; 0 is the caller */
static int started = 1;                   /* threads that exist, the caller included */
static int configured;                    /* cpu_threads(); 0 until first asked */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker_main(void *arg)
{
    worker *w = arg;
    uint32_t seen = atomic_load(&w->go);
    for (;;) {
        double spin_until = now() + atomic_load_explicit(&spin_ns, memory_order_relaxed) * 1e-9;
        uint32_t g;
        int polls = 0;
        while ((g = atomic_load_explicit(&w->go, memory_order_acquire)) == seen) {
            cpu_relax();
            if ((++polls & 63) == 0 && now() > spin_until) {
                /* sleep; the caller sees `sleeping` and wakes us (Dekker's
                 * order: both sides write, then read the other's word) */
                atomic_store(&w->sleeping, 1);
                if (atomic_load(&w->go) == seen) futex_wait(&w->go, seen);
                atomic_store(&w->sleeping, 0);
                spin_until = now() + atomic_load_explicit(&spin_ns, memory_order_relaxed) * 1e-9;
            }
        }
        seen = g;
        (void)run_chunks();
    }
    return NULL;
}

/* The configured thread count: EMBER_NUM_THREADS, else OMP_NUM_THREADS (the
 * usual knob), else the CPUs this process may run on. */
static int default_threads(void)
{
    const char *env = getenv("EMBER_NUM_THREADS");
    if (!env || !*env) env = getenv("OMP_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (end != env && v >= 1) return v > MAX_THREADS ? MAX_THREADS : (int)v;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n >= 1) return n > MAX_THREADS ? MAX_THREADS : n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (n > MAX_THREADS ? MAX_THREADS : (int)n) : 1;
}

int cpu_threads(void)
{
    if (!configured) configured = default_threads();
    return configured;
}

void cpu_set_threads(int n)
{
    configured = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

/* Starts workers up to `want` threads in all; returns how many exist. */
static int ensure_started(int want)
{
    if (want <= started) return started;
    pthread_mutex_lock(&start_lock);
    if (!workers) workers = calloc(MAX_THREADS, sizeof *workers);
    if (workers) {
        /* workers take no signals: Ctrl-C and the like belong to the caller */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        while (started < want) {
            worker *w = &workers[started];
            atomic_store(&w->go, 0);
            atomic_store(&w->sleeping, 0);
            if (pthread_create(&w->thread, NULL, worker_main, w) != 0) break;
            pthread_detach(w->thread);
            started++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_mutex_unlock(&start_lock);
    return started;
}

/* ---- the adaptive team ------------------------------------------------------- */

static int team_limit;          /* 0: not yet set (then the configured count) */
static double grow_at;          /* when the limit may grow by one */
static double probe_wait = 0.02;

static int team_size(double t)
{
    int max = cpu_threads();
    if (team_limit <= 0 || team_limit > max) team_limit = max;
    if (team_limit < max && t >= grow_at) {
        team_limit++;
        grow_at = t + 0.02;
    }
    atomic_store_explicit(&spin_ns, team_limit == max ? SPIN_FREE_NS : SPIN_BUSY_NS, memory_order_relaxed);
    return team_limit;
}

/* After a job run by `team` threads: the caller's time claiming and running
 * chunks, its wait for chunks others had claimed, and whether it ran every
 * chunk itself. */
static void team_feedback(int team, double busy, double wait, bool alone, double t)
{
    /* Signs that the workers do not get cores: one lost its core mid-chunk
     * (the wait is long against the work, and long in itself: a scheduler
     * time slice is milliseconds; on a free machine it is at most about one
     * chunk), or none of them ran at all during a job long enough for a
     * worker with a core to join (they spin between jobs while the team is
     * whole). Two such jobs in a row count: one can be a passing hiccup (an
     * interrupt, a page fault). */
    static int strikes;
    bool contended = (wait > 250e-6 && wait > 0.5 * busy) || (alone && busy > 200e-6);
    strikes = contended ? strikes + 1 : 0;
    if (strikes >= 2) {
        strikes = 0;
        team_limit = team / 2 > 1 ? team / 2 : 1;
        if (team == 2) probe_wait = probe_wait * 2 < 1.0 ? probe_wait * 2 : 1.0;   /* still busy */
        grow_at = t + (team_limit == 1 ? probe_wait : 0.02);
    } else if (team == 2) {
        probe_wait = 0.02;
    }
}

/* ---- the entry point ----------------------------------------------------------- */

void cpu_parallel_for(int64_t n, int64_t work, int64_t align, cpu_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    int max = cpu_threads();
    if (n == 1 || work < CPU_PARALLEL_MIN || max <= 1 || in_job) {
        fn(0, n, ctx);
        return;
    }
    double t0 = now();
    int team = team_size(t0);
    if (team > 1) team = ensure_started(team);
    if (team <= 1) {
        fn(0, n, ctx);
        return;
    }
    if (align < 1) align = 1;
    int64_t chunks = (int64_t)team * CHUNKS_PER_THREAD;
    int64_t size = (n + chunks - 1) / chunks;
    size = (size + align - 1) / align * align;
    chunks = (n + size - 1) / size;

    uint64_t seq = (uint64_t)++job_seq << 32;
    atomic_store(&claim, seq | CLOSED);
    atomic_store(&job_fn, fn);
    atomic_store(&job_ctx, ctx);
    atomic_store(&job_n, n);
    atomic_store(&job_size, size);
    atomic_store(&job_chunks, chunks);
    atomic_store(&job_done, 0);
    atomic_store(&claim, seq);            /* open: chunk 0 is next */
    int invite = team - 1 < chunks - 1 ? team - 1 : (int)(chunks - 1);
    for (int i = 1; i <= invite; i++) {
        worker *w = &workers[i];
        atomic_fetch_add(&w->go, 1);
        if (atomic_load(&w->sleeping)) futex_wake(&w->go);
    }
    int64_t mine = run_chunks();
    double t1 = now();
    for (int spins = 0; atomic_load(&job_done) < chunks; spins++) {
        if (spins < 4096) cpu_relax();
        else sched_yield();               /* a descheduled worker holds a chunk: let it run */
    }
    atomic_store(&claim, seq | CLOSED);
    double t2 = now();
    team_feedback(team, t1 - t0, t2 - t1, mine == chunks, t2);
}
