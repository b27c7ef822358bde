/*
 * fiber.cc — kernels on the emulated device: a launch's blocks run one after
 * another on the thread that drains the stream, and a block's threads are
 * fibers (fiber_x86_64.S switches between them without a system call).
 *
 * A fiber runs until it reaches __syncthreads, a warp operation or its end;
 * the block's scheduler then runs the next runnable fiber. So code between
 * two barriers runs without interruption, which makes atomics trivially
 * atomic, and a kernel with no barrier runs its threads one after another.
 *
 * What a GPU would not tell (compute-sanitizer's synccheck does, on a GPU
 * only): a __syncthreads that some threads of the block never reach (they
 * exited, or wait at another __syncthreads), a warp operation whose mask
 * names a lane that exited, does not exist, or never arrives, lanes of one
 * operation disagreeing on the mask. Each is reported with the kernel's
 * name and the source line, the launch ends, and the context keeps
 * cudaErrorLaunchFailure, as a faulting kernel leaves it on a GPU.
 *
 * The order of blocks and of the threads within a block is shuffled by
 * EMBER_CUDA_EMU_SEED (reproducibly; 0 keeps the natural order), so a
 * result that depends on scheduling shows up as a difference between seeds.
 *
 * Shared memory: every KC_SHARED declaration gets its own area of the
 * block's shared memory at its first use (16-byte aligned, filled with 0xff
 * bytes so a read before any write gives NaN or -1, not a plausible zero),
 * after the dynamic area; the total is held to the kernel's limit.
 */
#include "runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/mman.h>

#include <mutex>
#include <unordered_map>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

extern "C" void emu_fiber_switch(void **save, void *to);
extern "C" void emu_fiber_start();

namespace emu {

thread_local thread_ctx *cur;

namespace {

#if EMU_ASAN
const size_t STACK_SIZE = 1 << 20;      /* ASan's frames are larger */
#else
const size_t STACK_SIZE = 256 << 10;
#endif
const size_t PAGE = 4096;
const size_t SHARED_ARENA = 512 << 10;  /* 227 KB of opt-in shared memory plus redzones */
const size_t SHARED_STATIC_LIMIT = 48 << 10;
const size_t SHARED_OPTIN_LIMIT = 227 << 10;

enum fiber_state { RUNNABLE, AT_BARRIER, AT_WARP, FINISHED };

struct fiber {
    void *sp;
    char *stack;
    thread_ctx ctx;
    fiber_state state;
    const char *file;           /* where it waits */
    int line;
    /* its part of a warp operation */
    warp_kind wkind;
    unsigned wmask;
    uint64_t wbits, wresult;
    int wparam, wwidth;
    void *asan_fake;
};

struct shared_var {
    const void *key;
    char *ptr;
    size_t bytes;
    const char *name;
};

/* Who touched a byte of shared memory in the current barrier interval:
 * epoch names the interval (a new one at each block start and each
 * __syncthreads), writer and reader are linear thread indices, -1 none,
 * MANY for more than one reader. */
struct shadow_byte {
    uint32_t epoch;
    int16_t writer, reader;
    int16_t reader_warp;                /* the readers' warp, or MIXED */
    uint32_t wgen, rgen;                /* their warp's sync count at the access */
};
const int16_t MANY = -2, MIXED = -3;

/* The launch being run on this thread. */
struct run_state {
    const launch_cfg *cfg;
    const std::function<void()> *body;
    std::vector<fiber> fibers;          /* one per thread of the block, by linear index */
    int nthreads;
    fiber *running;
    void *sched_sp;
    const void *sched_stack_bottom;
    size_t sched_stack_size;
    void *sched_fake;
    bool aborted;
    /* shared memory of the block */
    char *smem;
    size_t dyn, used, phys, limit;
    std::vector<shared_var> vars;
    uint64_t rng;
    uint32_t epoch;
    /* completed warp operations per warp: lanes of one warp are ordered by
     * __syncwarp and the shuffles, as compute-sanitizer's racecheck has it */
    std::vector<uint32_t> wsync;
};

uint32_t epochs;                        /* the last interval handed out (all threads) */

thread_local run_state *run;

/* Stacks and shared memory, kept for the next launch on this thread. */
struct thread_pool {
    std::vector<char *> stacks;
    char *smem = NULL;
    std::vector<shadow_byte> shadow;    /* one per byte of smem */
};
thread_local thread_pool pool;

std::mutex attr_lock;
std::unordered_map<const void *, int> dyn_limits;

uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void shuffle(std::vector<int64_t> &v, uint64_t *rng)
{
    for (size_t i = v.size(); i > 1; i--) {
        size_t j = splitmix(rng) % i;
        std::swap(v[i - 1], v[j]);
    }
}

char *stack_for(int i)
{
    while ((int)pool.stacks.size() <= i) {
        /* a guard page below each stack turns an overflow into a fault at once */
        char *m = (char *)mmap(NULL, STACK_SIZE + PAGE, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (m == MAP_FAILED) {
            fprintf(stderr, "ember (emulated CUDA): cannot map a fiber stack\n");
            abort();
        }
        mprotect(m, PAGE, PROT_NONE);
        pool.stacks.push_back(m + PAGE);
    }
    return pool.stacks[i];
}

const char *short_file(const char *f)
{
    const char *k = strstr(f, "kernels/");
    return k ? k : f;
}

/* ---- switching ---------------------------------------------------------------- */

void to_fiber(fiber *f)
{
    run->running = f;
    cur = &f->ctx;
#if EMU_ASAN
    __sanitizer_start_switch_fiber(&run->sched_fake, f->stack, STACK_SIZE);
#endif
    emu_fiber_switch(&run->sched_sp, f->sp);
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(run->sched_fake, NULL, NULL);
#endif
    run->running = NULL;
    cur = NULL;
}

/* From a fiber back to the block's scheduler; returns when resumed. */
void to_scheduler(bool for_good)
{
    fiber *f = run->running;
#if EMU_ASAN
    __sanitizer_start_switch_fiber(for_good ? NULL : &f->asan_fake, run->sched_stack_bottom, run->sched_stack_size);
#endif
    emu_fiber_switch(&f->sp, run->sched_sp);
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(f->asan_fake, NULL, NULL);
#endif
    (void)for_good;
    cur = &f->ctx;
}

extern "C" void emu_fiber_main(fiber *f)
{
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &run->sched_stack_bottom, &run->sched_stack_size);
#endif
    (*run->body)();
    f->state = FINISHED;
    to_scheduler(true);
    abort();    /* a finished fiber is never resumed */
}

void start_fiber(fiber *f, char *stack)
{
    f->stack = stack;
    uintptr_t top = ((uintptr_t)stack + STACK_SIZE) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 64 - 16);
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    sp[0] = (uint64_t)mxcsr | ((uint64_t)fpucw << 32);
    sp[1] = sp[2] = sp[3] = 0;                  /* r15, r14, r13 */
    sp[4] = (uint64_t)(void *)emu_fiber_main;   /* r12: the function */
    sp[5] = (uint64_t)f;                        /* rbx: its argument */
    sp[6] = 0;                                  /* rbp */
    sp[7] = (uint64_t)(void *)emu_fiber_start;  /* where the switch returns to */
    f->sp = sp;
    f->state = RUNNABLE;
    f->asan_fake = NULL;
}

/* ---- reports ------------------------------------------------------------------ */

void describe_thread(char *buf, size_t n, const fiber *f)
{
    snprintf(buf, n, "thread (%u,%u,%u) of block (%u,%u,%u)", f->ctx.tid.x, f->ctx.tid.y, f->ctx.tid.z,
             f->ctx.bid.x, f->ctx.bid.y, f->ctx.bid.z);
}

/* A fault in the running block: reported, the launch ends. */
void block_fault(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void block_fault(const char *fmt, ...)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix, "kernel %s: ", run->cfg->name);
    va_list ap;
    va_start(ap, fmt);
    vfault(cudaErrorLaunchFailure, prefix, fmt, ap);
    va_end(ap);
    run->aborted = true;
}

/* The scheduler found no fiber that can run: say who waits where. */
void report_stall()
{
    char who[128], msg[900];
    int nbar = 0, nwarp = 0, ndone = 0;
    const fiber *bar = NULL, *warp = NULL, *done = NULL;
    for (const fiber &f : run->fibers) {
        if (f.state == AT_BARRIER) { nbar++; if (!bar) bar = &f; }
        if (f.state == AT_WARP) { nwarp++; if (!warp) warp = &f; }
        if (f.state == FINISHED) { ndone++; if (!done) done = &f; }
    }
    if (nwarp) {
        describe_thread(who, sizeof who, warp);
        snprintf(msg, sizeof msg, "a warp operation at %s:%d (mask 0x%08x) waits for lanes that never arrive: %s "
                 "waits there, %d thread(s) wait at __syncthreads, %d exited", short_file(warp->file), warp->line,
                 warp->wmask, who, nbar, ndone);
    } else {
        describe_thread(who, sizeof who, done);
        snprintf(msg, sizeof msg, "__syncthreads at %s:%d is reached by %d of the block's %d threads: the others "
                 "exited (%s, ...), so on a GPU the block would hang or misbehave", short_file(bar->file), bar->line,
                 nbar, run->nthreads, who);
    }
    block_fault("%s", msg);
}

/* All live threads wait at a barrier: the same one, or a fault. */
bool release_barrier()
{
    const fiber *first = NULL;
    for (const fiber &f : run->fibers) {
        if (f.state != AT_BARRIER) continue;
        if (!first) { first = &f; continue; }
        if (f.file != first->file || f.line != first->line) {
            char a[128], b[128];
            describe_thread(a, sizeof a, first);
            describe_thread(b, sizeof b, &f);
            block_fault("threads wait at different __syncthreads: %s at %s:%d, %s at %s:%d", a,
                        short_file(first->file), first->line, b, short_file(f.file), f.line);
            return false;
        }
    }
    for (fiber &f : run->fibers)
        if (f.state == AT_BARRIER) f.state = RUNNABLE;
    run->epoch = __atomic_add_fetch(&epochs, 1, __ATOMIC_RELAXED);
    return true;
}

void run_block(const launch_cfg &c, uint3 bid, const std::vector<int64_t> &order)
{
    int n = run->nthreads;
    for (int i = 0; i < n; i++) {
        fiber &f = run->fibers[i];
        f.ctx.bid = bid;
        f.ctx.bdim = c.block;
        f.ctx.gdim = c.grid;
        f.ctx.linear = i;
        f.ctx.tid = uint3{(unsigned)(i % c.block.x), (unsigned)(i / c.block.x % c.block.y),
                          (unsigned)(i / (c.block.x * c.block.y))};
        f.ctx.lane = i % 32;
        f.ctx.warp = i / 32;
        start_fiber(&f, stack_for(i));
    }
    /* shared memory: the dynamic area first, then the declarations */
    run->vars.clear();
    run->used = run->phys = (run->dyn + 15) & ~(size_t)15;
#if EMU_ASAN
    __asan_poison_memory_region(run->smem, SHARED_ARENA);
    __asan_unpoison_memory_region(run->smem, run->dyn);
#endif
    memset(run->smem, 0xff, run->dyn);
    run->epoch = __atomic_add_fetch(&epochs, 1, __ATOMIC_RELAXED);
    for (;;) {
        bool ran = false;
        for (int64_t k : order) {
            fiber *f = &run->fibers[k];
            if (f->state != RUNNABLE) continue;
            to_fiber(f);
            ran = true;
            if (run->aborted) return;
        }
        int nbar = 0, nlive = 0;
        for (const fiber &f : run->fibers) {
            if (f.state != FINISHED) nlive++;
            if (f.state == AT_BARRIER) nbar++;
        }
        if (nlive == 0) return;
        if (nbar == n) {
            if (!release_barrier()) return;
            continue;
        }
        if (!ran) {
            report_stall();
            return;
        }
    }
}

} // namespace

/* ---- what device code calls ---------------------------------------------------- */

bool in_kernel() { return run != NULL && run->running != NULL; }

void abort_kernel()
{
    run->aborted = true;
    run->running->state = FINISHED;
    to_scheduler(true);
    abort();
}

void syncthreads(const char *file, int line)
{
    fiber *f = run->running;
    f->state = AT_BARRIER;
    f->file = file;
    f->line = line;
    to_scheduler(false);
}

static uint64_t finish_warp_op(fiber *base, int nlanes, const fiber *self)
{
    unsigned mask = self->wmask;
    for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1)) continue;
        fiber *g = &base[l];
        if (g->wkind != self->wkind || g->wmask != mask) {
            char a[128], b[128];
            describe_thread(a, sizeof a, self);
            describe_thread(b, sizeof b, g);
            block_fault("lanes of one warp operation disagree: %s at %s:%d (mask 0x%08x), %s at %s:%d (mask 0x%08x)",
                        a, short_file(self->file), self->line, mask, b, short_file(g->file), g->line, g->wmask);
            abort_kernel();
        }
    }
    (void)nlanes;
    for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1)) continue;
        fiber *g = &base[l];
        uint64_t r = 0;
        int w = g->wwidth, seg = l / w * w, src = l;
        switch (g->wkind) {
        case W_SHFL_IDX: src = seg + ((g->wparam % w) + w) % w; break;
        case W_SHFL_UP: src = l - seg >= g->wparam ? l - g->wparam : l; break;
        case W_SHFL_DOWN: src = l - seg + g->wparam < w ? l + g->wparam : l; break;
        case W_SHFL_XOR: src = l ^ g->wparam; if (src / w != l / w || src > 31) src = l; break;
        default: break;
        }
        switch (g->wkind) {
        case W_SHFL_IDX: case W_SHFL_UP: case W_SHFL_DOWN: case W_SHFL_XOR:
            if (!(mask >> src & 1)) {
                char a[128];
                describe_thread(a, sizeof a, g);
                block_fault("%s at %s:%d reads lane %d, which is not in the mask 0x%08x (its value is undefined)",
                            a, short_file(g->file), g->line, src, mask);
                abort_kernel();
            }
            r = base[src].wbits;
            break;
        case W_BALLOT:
            for (int k = 0; k < 32; k++)
                if ((mask >> k & 1) && base[k].wbits) r |= 1ull << k;
            break;
        case W_ANY:
            for (int k = 0; k < 32; k++)
                if ((mask >> k & 1) && base[k].wbits) r = 1;
            break;
        case W_ALL:
            r = 1;
            for (int k = 0; k < 32; k++)
                if ((mask >> k & 1) && !base[k].wbits) r = 0;
            break;
        case W_SYNC:
            break;
        }
        g->wresult = r;
    }
    for (int l = 0; l < 32; l++)
        if (mask >> l & 1) base[l].state = RUNNABLE;
    run->wsync[self->ctx.warp]++;
    return self->wresult;
}

uint64_t warp_op(warp_kind kind, unsigned mask, uint64_t bits, int param, int width, const char *file, int line)
{
    fiber *f = run->running;
    int lane = f->ctx.lane;
    fiber *base = f - lane;
    int nlanes = run->nthreads - f->ctx.warp * 32;
    if (nlanes > 32) nlanes = 32;
    char who[128] = "";
    if (!(mask >> lane & 1) || (nlanes < 32 && (mask >> nlanes))) describe_thread(who, sizeof who, f);
    if (!(mask >> lane & 1)) {
        block_fault("%s calls a warp operation at %s:%d with mask 0x%08x, which does not name its own lane %d", who,
                    short_file(file), line, mask, lane);
        abort_kernel();
    }
    if (kind != W_SYNC && (width < 1 || width > 32 || (width & (width - 1)))) {
        describe_thread(who, sizeof who, f);
        block_fault("%s: warp shuffle at %s:%d with width %d (a power of 2 up to 32)", who, short_file(file), line,
                    width);
        abort_kernel();
    }
    f->wkind = kind;
    f->wmask = mask;
    f->wbits = bits;
    f->wparam = param;
    f->wwidth = width;
    f->file = file;
    f->line = line;
    f->state = AT_WARP;
    bool all = true;
    for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1)) continue;
        if (l >= nlanes) {
            block_fault("%s: warp operation at %s:%d names lane %d in mask 0x%08x, but its warp has only %d threads "
                        "(block of %d)", who, short_file(file), line, l, mask, nlanes, run->nthreads);
            abort_kernel();
        }
        if (base[l].state == FINISHED) {
            describe_thread(who, sizeof who, f);
            block_fault("%s: warp operation at %s:%d names lane %d in mask 0x%08x, which has exited", who,
                        short_file(file), line, l, mask);
            abort_kernel();
        }
        if (base[l].state != AT_WARP) all = false;
    }
    if (all) return finish_warp_op(base, nlanes, f);
    to_scheduler(false);
    return f->wresult;
}

void syncwarp(const char *file, int line, unsigned mask)
{
    warp_op(W_SYNC, mask, 0, 0, 32, file, line);
}

void *dynamic_shared()
{
    return run->smem;
}

void *block_shared(const void *key, size_t bytes, const char *name)
{
    for (const shared_var &v : run->vars)
        if (v.key == key) return v.ptr;
    size_t at = (run->phys + 15) & ~(size_t)15;
    if (run->used + bytes > run->limit || at + bytes + 32 > SHARED_ARENA) {
        block_fault("shared memory: '%s' (%zu bytes) takes the block's use to %zu bytes, over the limit of %zu "
                    "(%zu of them dynamic)", name, bytes, run->used + bytes, run->limit, run->dyn);
        abort_kernel();
    }
    char *p = run->smem + at;
#if EMU_ASAN
    __asan_unpoison_memory_region(p, bytes);
#endif
    memset(p, 0xff, bytes);
    run->used += (bytes + 15) & ~(size_t)15;
    run->phys = at + bytes + 32;        /* a redzone after each, poisoned under ASan */
    run->vars.push_back(shared_var{key, p, bytes, name});
    return p;
}

void check_atomic(const void *p, size_t n, const char *op)
{
    const char *c = (const char *)p;
    if (c >= run->smem && c + n <= run->smem + run->phys) return;
    if (is_pinned(p, n)) return;
    char what[64];
    snprintf(what, sizeof what, "%s in kernel %s", op, run->cfg->name);
    if (!device_range(p, n, what)) abort_kernel();
}

int max_dynamic_shared(const void *fn)
{
    std::lock_guard<std::mutex> g(attr_lock);
    auto it = dyn_limits.find(fn);
    return it == dyn_limits.end() ? (int)SHARED_STATIC_LIMIT : it->second;
}

cudaError_t set_max_dynamic_shared(const void *fn, int bytes)
{
    if (bytes < 0 || (size_t)bytes > SHARED_OPTIN_LIMIT) return cudaErrorInvalidValue;
    std::lock_guard<std::mutex> g(attr_lock);
    dyn_limits[fn] = bytes;
    return cudaSuccess;
}

/* ---- launches ------------------------------------------------------------------- */

static void run_grid(const launch_cfg &c, const std::function<void()> &body)
{
    run_state rs;
    run_state *outer = run;
    run = &rs;
    rs.cfg = &c;
    rs.body = &body;
    rs.nthreads = (int)(c.block.x * c.block.y * c.block.z);
    rs.fibers.resize(rs.nthreads);
    rs.wsync.assign((rs.nthreads + 31) / 32, 0);
    rs.running = NULL;
    rs.aborted = false;
    if (!pool.smem) {
        pool.smem = (char *)mmap(NULL, SHARED_ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (pool.smem == MAP_FAILED) {
            fprintf(stderr, "ember (emulated CUDA): cannot map shared memory\n");
            abort();
        }
    }
    rs.smem = pool.smem;
    if (pool.shadow.empty()) pool.shadow.resize(SHARED_ARENA);
    rs.dyn = c.smem;
    size_t optin = (size_t)max_dynamic_shared(c.fn);
    rs.limit = optin > SHARED_STATIC_LIMIT ? optin : SHARED_STATIC_LIMIT;
    rs.rng = config().seed;
    static std::atomic<uint64_t> launches{0};
    uint64_t salt = launches++;
    rs.rng ^= salt * 0x9e3779b97f4a7c15ull;

    int64_t nblocks = (int64_t)c.grid.x * c.grid.y * c.grid.z;
    std::vector<int64_t> blocks(nblocks), threads(rs.nthreads);
    for (int64_t i = 0; i < nblocks; i++) blocks[i] = i;
    for (int i = 0; i < rs.nthreads; i++) threads[i] = i;
    bool shuffled = config().seed != 0;
    if (shuffled) shuffle(blocks, &rs.rng);
    for (int64_t b : blocks) {
        if (shuffled) shuffle(threads, &rs.rng);
        uint3 bid{(unsigned)(b % c.grid.x), (unsigned)(b / c.grid.x % c.grid.y),
                  (unsigned)(b / ((int64_t)c.grid.x * c.grid.y))};
        run_block(c, bid, threads);
        if (rs.aborted) break;
    }
#if EMU_ASAN
    /* stacks left by an abandoned block may hold its frames' poison */
    if (rs.aborted)
        for (int i = 0; i < rs.nthreads; i++) __asan_unpoison_memory_region(pool.stacks[i], STACK_SIZE);
    __asan_unpoison_memory_region(pool.smem, SHARED_ARENA);
#endif
    run = outer;
}

void launch(const launch_cfg &c, std::function<void()> body)
{
    const cudaDeviceProp &p = props();
    uint64_t threads = (uint64_t)c.block.x * c.block.y * c.block.z;
    if (!c.block.x || !c.block.y || !c.block.z || !c.grid.x || !c.grid.y || !c.grid.z ||
        c.block.x > (unsigned)p.maxThreadsDim[0] || c.block.y > (unsigned)p.maxThreadsDim[1] ||
        c.block.z > (unsigned)p.maxThreadsDim[2] || threads > (uint64_t)p.maxThreadsPerBlock ||
        c.grid.x > (unsigned)p.maxGridSize[0] || c.grid.y > (unsigned)p.maxGridSize[1] ||
        c.grid.z > (unsigned)p.maxGridSize[2]) {
        set_error(cudaErrorInvalidConfiguration);
        return;
    }
    if (c.smem > (size_t)max_dynamic_shared(c.fn)) {
        set_error(cudaErrorInvalidValue);
        return;
    }
    launch_cfg copy = c;
    static std::atomic<uint64_t> launched{0};
    uint64_t number = ++launched;
    cudaError_t e;
    if (number == config().fault_launch)
        e = submit(c.stream, c.name, [copy, number]() {
            fault(cudaErrorIllegalAddress, "kernel %s: the fault EMBER_CUDA_EMU_FAULT=%llu asked for", copy.name,
                  (unsigned long long)number);
        });
    else
        e = submit(c.stream, c.name, [copy, body]() { run_grid(copy, body); });
    if (e != cudaSuccess) set_error(e);
}

} // namespace emu

/* ---- every load and store of kernel code ---------------------------------------------
 * The emulator's build compiles the kernels/ sources with GCC's thread-sanitizer
 * instrumentation (-fsanitize=thread) but links none of ThreadSanitizer:
 * the calls it inserts before each load and store land here. Outside a
 * kernel they return at once. Inside one:
 *  - device memory: the bytes must be in use (emu::usable), else the access
 *    is reported as an illegal address, naming the kernel and the thread;
 *  - shared memory: the bytes must belong to a declaration or the dynamic
 *    area, and two threads of the block touching the same byte between two
 *    __syncthreads, one of them writing, is a race: reported with the
 *    kernel, the byte, the variable and both threads.
 * (Under make asan the kernels are built with AddressSanitizer instead,
 * which checks every access against the same marks; races are this
 * build's.) */
namespace emu {
namespace {

const char *where(void *ret, char *buf, size_t n)
{
    Dl_info info;
    if (dladdr(ret, &info) && info.dli_sname) {
        int status = 0;
        char *d = abi::__cxa_demangle(info.dli_sname, NULL, NULL, &status);
        snprintf(buf, n, "%.300s+0x%lx", d && status == 0 ? d : info.dli_sname,
                 (unsigned long)((char *)ret - (char *)info.dli_saddr));
        free(d);
    } else {
        snprintf(buf, n, "%p", ret);
    }
    return buf;
}

const shared_var *var_at(const char *p)
{
    for (const shared_var &v : run->vars)
        if (p >= v.ptr && p < v.ptr + v.bytes) return &v;
    return NULL;
}

void describe_linear(char *buf, size_t n, int linear)
{
    describe_thread(buf, n, &run->fibers[linear]);
}

[[noreturn]] void shared_race(const char *p, int other, bool other_wrote, bool writing, void *ret)
{
    char a[128], b[128], w[400], v[200];
    describe_linear(a, sizeof a, other);
    describe_thread(b, sizeof b, run->running);
    const shared_var *var = var_at(p);
    if (var) snprintf(v, sizeof v, "'%s' byte %zu", var->name, (size_t)(p - var->ptr));
    else snprintf(v, sizeof v, "dynamic shared memory byte %zu", (size_t)(p - run->smem));
    block_fault("shared-memory race on %s: %s %s it and %s %s it with no __syncthreads between (the second "
                "access in %s)", v, a, other_wrote ? "wrote" : "read", b, writing ? "writes" : "reads",
                where(ret, w, sizeof w));
    abort_kernel();
}

void access(void *addr, size_t n, bool writing, void *ret)
{
    if (!run || !run->running) return;
    char *p = (char *)addr;
    if (p >= run->smem && p < run->smem + SHARED_ARENA) {
        bool inside = p + n <= run->smem + run->dyn;
        for (size_t i = 0; !inside && i < run->vars.size(); i++)
            inside = p >= run->vars[i].ptr && p + n <= run->vars[i].ptr + run->vars[i].bytes;
        if (!inside) {
            char b[128], w[400];
            describe_thread(b, sizeof b, run->running);
            block_fault("%s %s %zu bytes of shared memory at offset %zu, outside every shared declaration (%zu "
                        "bytes dynamic) (in %s)", b, writing ? "writes" : "reads", n, (size_t)(p - run->smem),
                        run->dyn, where(ret, w, sizeof w));
            abort_kernel();
        }
        int16_t me = (int16_t)run->running->ctx.linear, warp = (int16_t)run->running->ctx.warp;
        uint32_t gen = run->wsync[warp];
        for (size_t i = 0; i < n; i++) {
            shadow_byte &s = pool.shadow[(size_t)(p - run->smem) + i];
            if (s.epoch != run->epoch) s = shadow_byte{run->epoch, -1, -1, -1, 0, 0};
            /* an earlier access by a lane of this warp, before a warp
             * operation the warp has completed since, is ordered before this one */
            if (s.writer >= 0 && s.writer / 32 == warp && s.wgen != gen) s.writer = -1;
            if (s.reader != -1 && s.reader_warp == warp && s.rgen != gen) s.reader = -1;
            if (s.writer >= 0 && s.writer != me) shared_race(p + i, s.writer, true, writing, ret);
            if (writing) {
                if (s.reader == MANY) {
                    for (const fiber &f : run->fibers)         /* name one of the readers */
                        if (f.ctx.linear != me) shared_race(p + i, f.ctx.linear, false, true, ret);
                }
                if (s.reader >= 0 && s.reader != me) shared_race(p + i, s.reader, false, true, ret);
                s.writer = me;
                s.wgen = gen;
            } else if (s.reader == -1) {
                s.reader = me;
                s.reader_warp = warp;
                s.rgen = gen;
            } else if (s.reader != me) {
                s.reader = MANY;
                if (s.reader_warp != warp || s.rgen != gen) s.reader_warp = MIXED;
            }
        }
        return;
    }
    if (is_device_pointer(p) && !usable(p, n)) {
        char b[128], w[400], what[900];
        describe_thread(b, sizeof b, run->running);
        snprintf(what, sizeof what, "kernel %s, %s, %s (in %s)", run->cfg->name, b, writing ? "a store" : "a load",
                 where(ret, w, sizeof w));
        device_range(p, n, what);
        run->aborted = true;
        abort_kernel();
    }
}

} // namespace
} // namespace emu

#define EMU_TSAN_HOOKS(N)                                                                                       \
    extern "C" void __tsan_read##N(void *p) { emu::access(p, N, false, __builtin_return_address(0)); }          \
    extern "C" void __tsan_write##N(void *p) { emu::access(p, N, true, __builtin_return_address(0)); }          \
    extern "C" void __tsan_unaligned_read##N(void *p) { emu::access(p, N, false, __builtin_return_address(0)); } \
    extern "C" void __tsan_unaligned_write##N(void *p) { emu::access(p, N, true, __builtin_return_address(0)); } \
    extern "C" void __tsan_volatile_read##N(void *p) { emu::access(p, N, false, __builtin_return_address(0)); }  \
    extern "C" void __tsan_volatile_write##N(void *p) { emu::access(p, N, true, __builtin_return_address(0)); }
EMU_TSAN_HOOKS(1)
EMU_TSAN_HOOKS(2)
EMU_TSAN_HOOKS(4)
EMU_TSAN_HOOKS(8)
EMU_TSAN_HOOKS(16)

extern "C" void __tsan_read_range(void *p, unsigned long n) { emu::access(p, n, false, __builtin_return_address(0)); }
extern "C" void __tsan_write_range(void *p, unsigned long n) { emu::access(p, n, true, __builtin_return_address(0)); }
// Host code among the kernels' sources uses atomics (NVTX's one-time set-up, inlined from
// its header into backend.cu), which the instrumentation turns into these calls: they do
// what the plain builtins do (this file is not instrumented).
extern "C" int __tsan_atomic32_compare_exchange_strong(volatile int *a, int *expected, int desired, int, int)
{
    return __atomic_compare_exchange_n(a, expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}
extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void *) {}
extern "C" void __tsan_func_exit() {}
