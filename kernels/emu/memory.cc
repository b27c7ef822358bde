/*
 * memory.cc — the emulated device's memory.
 *
 * Device memory is one arena reserved at the first allocation (the size
 * EMBER_CUDA_EMU_MEMORY gives, default 1 GiB, so out-of-memory paths are
 * reachable in tests). cudaMalloc hands out page-aligned ranges of it.
 *
 * Three checks a GPU gives only under compute-sanitizer:
 *  - The arena is inaccessible (PROT_NONE) while no device work runs, so
 *    host code that dereferences a device pointer faults at once; the fault
 *    handler names device memory in its message before the usual crash.
 *  - A shadow byte per 8 bytes says which bytes are in use (the exact size
 *    of a cudaMalloc, and within the caching allocator's segments the exact
 *    size of each block handed out: allocator.cu reports them through
 *    kc_emu_mark); the library stand-ins, copies, memsets and atomics check
 *    their ranges against it (emu::device_range).
 *  - Under AddressSanitizer (make asan) the same marks poison and unpoison
 *    ASan's shadow, so every load and store of kernel code is checked too:
 *    a block the caching allocator keeps after a free is poisoned.
 */
#include "runtime.h"

#include <execinfo.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <mutex>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

namespace emu {

namespace {

const size_t PAGE = 4096;
const uint8_t UNUSABLE = 0xff;

std::recursive_mutex lock;
char *arena;                    /* reserved on first use */
size_t arena_size;
uint8_t *shadow;                /* arena_size / 8 bytes: 0 usable, 1..7 the first k bytes, 0xff none */
std::map<size_t, size_t> free_ranges;   /* offset -> length, page multiples */
std::map<char *, size_t> live;          /* cudaMalloc's allocations: start -> exact size */
size_t in_use;
int depth;                      /* device work under way (nesting) */

std::map<char *, size_t> pinned;

bool reserve()
{
    if (arena) return true;
    arena_size = (config().memory + PAGE - 1) / PAGE * PAGE;
    void *a = mmap(NULL, arena_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *s = mmap(NULL, arena_size / 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED || s == MAP_FAILED) {
        fprintf(stderr, "ember (emulated CUDA): cannot reserve %zu bytes of device memory\n", arena_size);
        return false;
    }
    arena = (char *)a;
    shadow = (uint8_t *)s;
    memset(shadow, UNUSABLE, arena_size / 8);
    free_ranges[0] = arena_size;
#if EMU_ASAN
    __asan_poison_memory_region(arena, arena_size);
#endif
    install_fault_handler();
    return true;
}

void set_shadow(const char *p, size_t n, bool usable)
{
    size_t off = (size_t)(p - arena);
    size_t g = off / 8, end = (off + n + 7) / 8;
    if (!usable) {
        memset(shadow + g, UNUSABLE, end - g);
        return;
    }
    /* blocks start 8-aligned: whole granules, then the tail's count */
    memset(shadow + g, 0, n / 8);
    if (n % 8) shadow[g + n / 8] = (uint8_t)(n % 8);
}

/* First byte of [p, p+n) that is not usable, or NULL. */
const char *first_unusable(const char *p, size_t n)
{
    size_t off = (size_t)(p - arena);
    for (size_t i = 0; i < n;) {
        size_t o = off + i;
        uint8_t s = shadow[o / 8];
        if (s == 0) {
            i += 8 - o % 8;
            continue;
        }
        if (s == UNUSABLE || o % 8 >= s) return p + i;
        i++;
    }
    return NULL;
}

struct sigaction old_segv, old_bus;

void on_fault(int sig, siginfo_t *si, void *uc)
{
    char *a = (char *)si->si_addr;
    if (arena && a >= arena && a < arena + arena_size) {
        char msg[512];
        int n = snprintf(msg, sizeof msg,
                         "\nember (emulated CUDA): host code accessed device memory at %p (offset %zu of the "
                         "emulated GPU's memory): device memory can be used only by kernels and copies "
                         "(cudaMemcpy); the host's stack:\n",
                         (void *)a, (size_t)(a - arena));
        if (write(2, msg, (size_t)n) < 0) { /* nothing more to do */ }
        void *frames[48];
        int k = backtrace(frames, 48);
        backtrace_symbols_fd(frames, k, 2);
    }
    /* let the handler that was there (ASan's, or the default) report the crash */
    sigaction(sig, sig == SIGSEGV ? &old_segv : &old_bus, NULL);
    (void)uc;
}

} // namespace

void install_fault_handler()
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
}

void *device_alloc(size_t n)
{
    std::lock_guard<std::recursive_mutex> g(lock);
    if (!reserve()) return NULL;
    size_t len = (n + PAGE - 1) / PAGE * PAGE;
    for (auto it = free_ranges.begin(); it != free_ranges.end(); ++it) {
        if (it->second < len) continue;
        size_t off = it->first, rest = it->second - len;
        free_ranges.erase(it);
        if (rest) free_ranges[off + len] = rest;
        char *p = arena + off;
        live[p] = n;
        in_use += len;
        mark_usable(p, n, true);
        /* never zeros that a kernel could mistake for initialised memory */
        if (depth == 0) mprotect(p, len, PROT_READ | PROT_WRITE);
        memset(p, 0xa5, n);
        if (depth == 0) mprotect(p, len, PROT_NONE);
        return p;
    }
    return NULL;
}

bool device_free(void *v)
{
    std::lock_guard<std::recursive_mutex> g(lock);
    char *p = (char *)v;
    auto it = live.find(p);
    if (it == live.end()) return false;
    size_t len = (it->second + PAGE - 1) / PAGE * PAGE;
    mark_usable(p, len, false);
    live.erase(it);
    in_use -= len;
    size_t off = (size_t)(p - arena);
    /* give the pages back and merge with free neighbours */
    madvise(p, len, MADV_DONTNEED);
    auto next = free_ranges.lower_bound(off);
    if (next != free_ranges.end() && next->first == off + len) {
        len += next->second;
        free_ranges.erase(next);
    }
    auto prev = free_ranges.lower_bound(off);
    if (prev != free_ranges.begin()) {
        --prev;
        if (prev->first + prev->second == off) {
            off = prev->first;
            len += prev->second;
            free_ranges.erase(prev);
        }
    }
    free_ranges[off] = len;
    return true;
}

size_t device_in_use()
{
    std::lock_guard<std::recursive_mutex> g(lock);
    return in_use;
}

bool is_device_pointer(const void *p)
{
    return arena && (const char *)p >= arena && (const char *)p < arena + arena_size;
}

void mark_usable(const void *p, size_t n, bool usable)
{
    if (!is_device_pointer(p) || !n) return;
    set_shadow((const char *)p, n, usable);
#if EMU_ASAN
    if (usable) __asan_unpoison_memory_region(p, n);
    else __asan_poison_memory_region(p, n);
#endif
}

bool usable(const void *p, size_t n)
{
    return first_unusable((const char *)p, n) == NULL;
}

bool device_range(const void *p, size_t n, const char *what)
{
    const char *c = (const char *)p;
    if (!is_device_pointer(c) || (n && !is_device_pointer(c + n - 1))) {
        if (is_pinned(p, n)) return true;
        fault(cudaErrorIllegalAddress, "%s: %zu bytes at %p are not device memory", what, n, p);
        return false;
    }
    const char *bad = first_unusable(c, n);
    if (!bad) return true;
    /* the allocation it belongs to, for the message */
    std::lock_guard<std::recursive_mutex> g(lock);
    auto it = live.upper_bound((char *)bad);
    if (it != live.begin()) {
        --it;
        if (bad < it->first + it->second + 4096)
            fault(cudaErrorIllegalAddress,
                  "%s: %zu bytes at %p reach byte %zu of a %zu-byte device allocation at %p, which is not in use "
                  "(out of bounds, or freed)", what, n, p, (size_t)(bad - it->first), it->second, (void *)it->first);
        else
            fault(cudaErrorIllegalAddress, "%s: %zu bytes at %p reach %p, which is in no device allocation", what, n,
                  p, (const void *)bad);
    } else {
        fault(cudaErrorIllegalAddress, "%s: %zu bytes at %p reach %p, which is in no device allocation", what, n, p,
              (const void *)bad);
    }
    return false;
}

void device_enter()
{
    std::lock_guard<std::recursive_mutex> g(lock);
    if (depth++ == 0 && arena) mprotect(arena, arena_size, PROT_READ | PROT_WRITE);
}

void device_leave()
{
    std::lock_guard<std::recursive_mutex> g(lock);
    if (--depth == 0 && arena) mprotect(arena, arena_size, PROT_NONE);
}

void *pinned_alloc(size_t n)
{
    std::lock_guard<std::recursive_mutex> g(lock);
    char *p = (char *)malloc(n ? n : 1);
    if (p) pinned[p] = n;
    return p;
}

bool pinned_free(void *v)
{
    std::lock_guard<std::recursive_mutex> g(lock);
    auto it = pinned.find((char *)v);
    if (it == pinned.end()) return false;
    pinned.erase(it);
    free(v);
    return true;
}

bool is_pinned(const void *v, size_t n)
{
    std::lock_guard<std::recursive_mutex> g(lock);
    const char *p = (const char *)v;
    auto it = pinned.upper_bound((char *)p);
    if (it == pinned.begin()) return false;
    --it;
    return p >= it->first && p + n <= it->first + it->second;
}

} // namespace emu

/* The caching allocator's marks (allocator.cu, through kc.h's KC_EMU_MARK): a
 * block handed out is usable for exactly the bytes asked for; a block freed
 * into the cache is not, although its memory stays allocated. They take
 * effect in stream order, as the allocator's own reasoning does: a block
 * freed while queued kernels still use it stays usable until they have run. */
extern "C" void kc_emu_mark(cudaStream_t s, const void *p, size_t n, int usable)
{
    emu::submit(s, usable ? "allocation" : "free", [p, n, usable]() { emu::mark_usable(p, n, usable != 0); });
}
