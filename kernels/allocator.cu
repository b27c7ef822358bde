/* allocator.cu — the caching allocator for device memory.
 *
 * cudaMalloc and cudaFree are slow (cudaFree synchronises the device), so a
 * training loop must stop calling them after its first step. Memory is
 * taken from the driver in segments and cut into blocks:
 *  - requests up to 1 MiB are rounded to 512 bytes and served from 2 MiB
 *    segments (the small pool), so the many small tensors of a step share a
 *    few segments;
 *  - larger requests are rounded to 512 bytes and served from segments of
 *    20 MiB (requests under 10 MiB) or the request rounded up to 2 MiB;
 *  - a free block big enough is found best-fit (smallest size, then lowest
 *    address), split when the rest is worth keeping, and merged with free
 *    neighbours of its segment when freed.
 * The pools are per device. A device's work all runs on its one stream, so a
 * block freed while kernels that use it are still queued can be handed out
 * again at once: the next user's kernels run after them (this is the
 * per-stream rule of PyTorch's allocator with one stream).
 * A failed cudaMalloc returns NULL with the figures; the engine then runs
 * the collector, calls kc_empty_cache (segments with no block in use go
 * back to the driver) and retries once.
 *
 * CUDA graphs (graph.cu): while a capture runs on a device, its allocations
 * come from the capture's private pool (kc_mempool: its own segments and
 * free lists), because a replay writes the addresses the capture saw. A
 * block of the device's cache freed during a capture is held by the pool
 * (not reused) for the same reason. Private blocks freed later go back to
 * the private lists, for the next capture sharing the pool. When the last
 * graph and handle of a pool let go, its segments and held blocks join the
 * device's cache. */
#include "kc.h"

#include <set>
#include <unordered_map>
#include <vector>

#include <stdio.h>

#define SMALL_MAX ((size_t)1 << 20)
#define SMALL_SEGMENT ((size_t)2 << 20)
#define LARGE_SEGMENT ((size_t)20 << 20)
#define MIN_LARGE_SPLIT ((size_t)1 << 20)
#define ROUND 512

struct kc_mempool;

struct kc_block {
    char *ptr;
    size_t size;
    bool small, used;
    kc_block *prev, *next;      /* neighbours in the same segment */
    kc_mempool *owner;          /* a graph's private pool; NULL: the device's cache */
};

struct block_order {
    bool operator()(const kc_block *a, const kc_block *b) const
    {
        return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
};

struct kc_free_lists {
    std::set<kc_block *, block_order> small, large;
};

struct kc_mempool {
    int device;
    int refs;
    kc_free_lists lists;
    std::vector<kc_block *> segments;   /* the first block of each of its segments */
    std::vector<kc_block *> held;       /* cache blocks freed during its capture */
};

struct kc_pool {
    kc_free_lists lists;
    std::unordered_map<char *, kc_block *> used;
    em_memory_stats stats;
    kc_mempool *capturing;              /* the pool of the capture under way, if any */
};

static kc_pool *pools[64];

static kc_pool *pool_of(int device)
{
    if (device < 0 || device >= 64) { kc_error("cuda:%d: no such device", device); return NULL; }
    if (!pools[device]) pools[device] = new kc_pool();
    return pools[device];
}

static size_t round_size(size_t n) { return n < ROUND ? ROUND : (n + ROUND - 1) / ROUND * ROUND; }

static size_t segment_size(size_t size)
{
    if (size <= SMALL_MAX) return SMALL_SEGMENT;
    if (size < ((size_t)10 << 20)) return LARGE_SEGMENT;
    return (size + SMALL_SEGMENT - 1) / SMALL_SEGMENT * SMALL_SEGMENT;
}

static void peak(em_memory_stats *s)
{
    if (s->allocated > s->peak_allocated) s->peak_allocated = s->allocated;
    if (s->reserved > s->peak_reserved) s->peak_reserved = s->reserved;
}

static kc_block *new_segment(kc_pool *p, size_t size, bool small, int device)
{
    size_t seg = segment_size(size);
    void *mem = NULL;
    /* cudaMalloc is not stream-ordered, so it is safe during a capture; the
     * thread's capture mode would still refuse it as "potentially unsafe" */
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (p->capturing) cudaThreadExchangeStreamCaptureMode(&mode);
    cudaError_t e = cudaMalloc(&mem, seg);
    if (p->capturing) cudaThreadExchangeStreamCaptureMode(&mode);
    if (e != cudaSuccess) {
        cudaGetLastError();
        p->stats.num_ooms++;
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        kc_error("CUDA out of memory on cuda:%d: tried to allocate %.2f MiB (a %.2f MiB segment); "
                 "%.2f MiB allocated by tensors, %.2f MiB reserved by ember's cache, %.2f MiB free of %.2f MiB",
                 device, size / 1048576.0, seg / 1048576.0, p->stats.allocated / 1048576.0,
                 p->stats.reserved / 1048576.0, free_b / 1048576.0, total_b / 1048576.0);
        return NULL;
    }
    kc_block *b = new kc_block{(char *)mem, seg, small, false, NULL, NULL, NULL};
    KC_EMU_MARK(kc_stream(device), mem, seg, 0);        /* usable only as blocks are handed out */
    p->stats.reserved += seg;
    p->stats.device_mallocs++;
    peak(&p->stats);
    return b;
}

static std::set<kc_block *, block_order> &lists_of(kc_pool *p, kc_mempool *owner, bool small)
{
    kc_free_lists &l = owner ? owner->lists : p->lists;
    return small ? l.small : l.large;
}

extern "C" void *kc_backend_alloc(size_t n, int device)
{
    kc_pool *p = pool_of(device);
    if (!p || !kc_stream(device)) return NULL;
    size_t size = round_size(n);
    bool small = size <= SMALL_MAX;
    kc_mempool *owner = p->capturing;
    auto &free_set = lists_of(p, owner, small);
    kc_block key{NULL, size, small, false, NULL, NULL, NULL};
    auto it = free_set.lower_bound(&key);
    kc_block *b;
    if (it != free_set.end()) {
        b = *it;
        free_set.erase(it);
    } else {
        b = new_segment(p, size, small, device);
        if (!b) return NULL;
        b->owner = owner;
        if (owner) owner->segments.push_back(b);
    }
    size_t rest = b->size - size;
    if (rest >= (small ? (size_t)ROUND : MIN_LARGE_SPLIT)) {     /* split off the rest as a free block */
        kc_block *r = new kc_block{b->ptr + size, rest, small, false, b, b->next, b->owner};
        if (b->next) b->next->prev = r;
        b->next = r;
        b->size = size;
        free_set.insert(r);
    }
    b->used = true;
    /* in use up to the next 4 bytes: the 1- and 2-byte atomics (scatter_add on
     * int8, uint8, int16, bool) compare-and-swap the aligned 32-bit word that
     * holds their element, which reaches up to 3 bytes past a tensor's end,
     * inside its 512-byte block */
    KC_EMU_MARK(kc_stream(device), b->ptr, (n + 3) & ~(size_t)3, 1);
    p->used[b->ptr] = b;
    p->stats.allocated += b->size;
    p->stats.alloc_calls++;
    peak(&p->stats);
    return b->ptr;
}

static void release_block(kc_pool *p, kc_block *b);

extern "C" void kc_backend_free(void *ptr, size_t n, int device)
{
    (void)n;
    kc_pool *p = pool_of(device);
    if (!p || !ptr) return;
    auto it = p->used.find((char *)ptr);
    if (it == p->used.end()) return;        /* not ours: never happens; ignoring beats corrupting */
    kc_block *b = it->second;
    KC_EMU_MARK(kc_stream(device), b->ptr, b->size, 0);
    p->used.erase(it);
    p->stats.allocated -= b->size;
    p->stats.free_calls++;
    if (p->capturing && !b->owner) {
        /* the capture may have used it before this free: replays will too */
        p->capturing->held.push_back(b);
        return;
    }
    release_block(p, b);
}

/* Folds a's successor into a (a grows over its bytes) and deletes it; neither
 * may be in a free list then, whose order depends on the size. */
static void absorb_next(kc_block *a)
{
    kc_block *c = a->next;
    a->size += c->size;
    a->next = c->next;
    if (c->next) c->next->prev = a;
    delete c;
}

/* b (no longer in use) goes back to its owner's free lists, merged with free
 * neighbours of its segment (all of a segment's blocks share one owner) */
static void release_block(kc_pool *p, kc_block *b)
{
    b->used = false;
    auto &free_set = lists_of(p, b->owner, b->small);
    /* merge with free neighbours */
    if (b->prev && !b->prev->used) {
        kc_block *a = b->prev;
        free_set.erase(a);
        absorb_next(a);
        b = a;
    }
    if (b->next && !b->next->used) {
        free_set.erase(b->next);
        absorb_next(b);
    }
    free_set.insert(b);
}

static void release_free_segments(kc_pool *p, std::set<kc_block *, block_order> &free_set)
{
    for (auto it = free_set.begin(); it != free_set.end();) {
        kc_block *b = *it;
        if (!b->prev && !b->next) {         /* the whole segment is one free block */
            cudaFree(b->ptr);
            p->stats.reserved -= b->size;
            p->stats.device_frees++;
            delete b;
            it = free_set.erase(it);
        } else {
            ++it;
        }
    }
}

extern "C" void kc_empty_cache(int device)
{
    kc_pool *p = pool_of(device);
    if (!p || p->capturing || !kc_stream(device)) return;     /* a capture cannot wait for the device */
    /* cudaFree waits for the device; queued kernels may still use blocks that
     * are free on the host side, so finish them first */
    kc_synchronize(kc_stream(device));
    release_free_segments(p, p->lists.small);
    release_free_segments(p, p->lists.large);
}

/* ---- private pools of CUDA graphs ------------------------------------------- */

kc_mempool *kc_mempool_new(int device)
{
    if (!pool_of(device)) return NULL;
    kc_mempool *m = new kc_mempool();
    m->device = device;
    m->refs = 1;
    return m;
}

void kc_mempool_retain(kc_mempool *m) { m->refs++; }

int kc_mempool_device(const kc_mempool *m) { return m->device; }

/* The last reference: no graph can replay into this memory any more, so its
 * segments join the device's cache (the work queued on the device's one
 * stream orders any later user after the last replay). */
void kc_mempool_release(kc_mempool *m)
{
    if (!m || --m->refs > 0) return;
    kc_pool *p = pool_of(m->device);
    for (kc_block *head : m->segments)
        for (kc_block *b = head; b; b = b->next) b->owner = NULL;
    p->lists.small.insert(m->lists.small.begin(), m->lists.small.end());
    p->lists.large.insert(m->lists.large.begin(), m->lists.large.end());
    for (kc_block *b : m->held) release_block(p, b);
    delete m;
}

/* Routes the device's allocations to m's pool (NULL: back to the cache). */
void kc_mempool_capture(int device, kc_mempool *m)
{
    kc_pool *p = pool_of(device);
    if (p) p->capturing = m;
}

extern "C" int kc_memory_stats(int device, em_memory_stats *out)
{
    kc_pool *p = pool_of(device);
    if (!p) return kc_error("memory_stats: no device cuda:%d", device);
    *out = p->stats;
    return 0;
}

extern "C" int kc_reset_peak_stats(int device)
{
    kc_pool *p = pool_of(device);
    if (!p) return kc_error("reset_peak_memory_stats: no device cuda:%d", device);
    p->stats.peak_allocated = p->stats.allocated;
    p->stats.peak_reserved = p->stats.reserved;
    return 0;
}

/* scratch memory for kernels */
void *kc_alloc(size_t n, int device) { return kc_backend_alloc(n ? n : 1, device); }
void kc_free(void *ptr, size_t n, int device) { kc_backend_free(ptr, n, device); }
