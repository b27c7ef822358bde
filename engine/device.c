/* device.c — finding the backend for a device. The CUDA backend is a shared
 * object opened on first use, so a CPU session never loads a CUDA library. */
#include "ember.h"
#include "backend.h"
#include "debug.h"
#include "dist_board.h"
#include "internal.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const em_backend *cuda_backend;
/* [CPU, CUDA][flag]; the CUDA row is handed to the backend when it loads */
static int flags[2][EM_NFLAGS] = {
    {[EM_FLAG_CUDNN_TF32] = 1, [EM_FLAG_FILL_UNINITIALIZED] = 1},
    {[EM_FLAG_CUDNN_TF32] = 1, [EM_FLAG_FILL_UNINITIALIZED] = 1},
};
static const em_host_api host_api = {.set_error = em_set_error, .interrupted = em_interrupt_requested,
                                     .hold_if_ending = em_hold_if_ending};
static char cuda_failure[512];

/* A library (libember_cuda.so, libember_mpi.so) beside the binary that
 * holds the engine (the ember executable or ember.so, both in the build
 * folder); "" when that cannot be found (then the loader's path is used). */
void em_lib_beside_engine(char *buf, size_t n, const char *name)
{
    Dl_info info;
    buf[0] = 0;
    if (!dladdr((void *)em_backend_for, &info) || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    snprintf(buf, n, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, name);
}

static const em_backend *load_cuda(void)
{
    if (cuda_backend) return cuda_backend;
    if (cuda_failure[0]) return NULL;
    char local[4096];
    /* EMBER_CUDA=emu: the emulated device (kernels/emu/), the same kernels
     * compiled for the host, in place of the GPU's library */
    const char *mode = getenv("EMBER_CUDA");
    bool emu = mode && strcmp(mode, "emu") == 0;
    if (mode && *mode && !emu) {
        snprintf(cuda_failure, sizeof cuda_failure, "EMBER_CUDA=%s: expected emu (the emulated device) or unset", mode);
        return NULL;
    }
    const char *lib = emu ? "libember_cuda_emu.so" : "libember_cuda.so";
    em_lib_beside_engine(local, sizeof local, lib);
    const char *env = getenv("EMBER_CUDA_LIB");
    const char *names[] = {env, local[0] ? local : NULL, lib};
    const char *why = emu ? "libember_cuda_emu.so not found (the emulated device was not built: it needs the CUDA "
                            "toolkit's headers)"
                          : "libember_cuda.so not found (the CUDA backend was not built: it needs the CUDA toolkit)";
    char firstwhy[512] = "";
    /* the emulated cuSOLVER links OpenBLAS: open it the engine's way first
     * (engine/cpu/blas.c: single-threaded, its kernels chosen from the CPU),
     * so that the device's dlopen finds it loaded instead of starting it
     * with OpenBLAS's own defaults */
    if (emu) (void)em_cpu_blas_core();
    for (int i = 0; i < 3; i++) {
        if (!names[i]) continue;
        if (i == 1 && access(names[i], F_OK) != 0) continue;
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            /* keep the first real failure (a missing cuBLAS beats "not found") */
            if (!firstwhy[0]) snprintf(firstwhy, sizeof firstwhy, "%s", dlerror());
            why = firstwhy;
            continue;
        }
        em_backend_init_fn init;
        *(void **)&init = dlsym(h, "em_cuda_backend_init");
        if (!init) { why = "the CUDA library has no em_cuda_backend_init"; dlclose(h); continue; }
        cuda_backend = init(&host_api, cuda_failure, sizeof cuda_failure);
        if (cuda_backend) {   /* the library stays open for the process's life */
            const char *sync = getenv("EMBER_CUDA_SYNC");
            if (sync && atoi(sync)) flags[1][EM_FLAG_SYNC_DEBUG] = 1;
            for (int f = 0; f < EM_NFLAGS; f++) cuda_backend->set_flag((em_backend_flag)f, flags[1][f]);
            return cuda_backend;
        }
        why = cuda_failure;
        break;
    }
    if (why != cuda_failure) snprintf(cuda_failure, sizeof cuda_failure, "%s", why);
    return NULL;
}

const em_backend *em_backend_for(em_device dev)
{
    if (dev.type == EM_CPU) return &em_cpu_backend;
    const em_backend *be = load_cuda();
    if (!be) {
        em_set_error("no CUDA device: %s", cuda_failure);
        return NULL;
    }
    return be;
}

int em_synchronize(em_device dev)
{
    const em_backend *be = em_backend_for(dev);
    if (!be) return -1;
    return be->synchronize(dev.index);
}

/* ---- CUDA devices, statistics, flags, events ------------------------------ */

static void (*oom_handler)(void *ctx);
static void *oom_ctx;

void em_set_oom_handler(void (*fn)(void *ctx), void *ctx)
{
    oom_handler = fn;
    oom_ctx = ctx;
}

void *em_device_alloc(const em_backend *be, size_t nbytes, int index)
{
    void *p = be->alloc(nbytes, index);
    if (p || be->type == EM_CPU) return p;
    /* out of device memory: let the owner free what only its collector
     * still holds, give the cache back, and try once more */
    char first[512];
    snprintf(first, sizeof first, "%s", em_error());
    if (oom_handler) oom_handler(oom_ctx);
    be->empty_cache(index);
    p = be->alloc(nbytes, index);
    if (!p) em_set_error("%s", first[0] ? first : em_error());
    return p;
}

bool em_cuda_is_initialized(void) { return cuda_backend != NULL; }

em_cuda_stream_fn em_cuda_stream_getter(void)
{
    const em_backend *be = em_backend_for((em_device){EM_CUDA, 0});
    return be ? be->stream : NULL;
}

int em_cuda_device_count(void)
{
    const em_backend *be = em_backend_for((em_device){EM_CUDA, 0});
    return be ? be->device_count() : -1;
}

int em_cuda_check_device(int index)
{
    int n = em_cuda_device_count();
    if (n < 0) return -1;
    if (index < 0 || index >= n)
        return em_set_error("cuda:%d: no such device (this machine has %d CUDA device%s: cuda:0..cuda:%d)", index, n,
                            n == 1 ? "" : "s", n - 1);
    return 0;
}

int em_cuda_device_name(int index, char *buf, size_t n)
{
    if (em_cuda_check_device(index)) return -1;
    return em_backend_for((em_device){EM_CUDA, index})->device_name(index, buf, n);
}

static const em_backend *stats_backend(em_device dev, const char *op)
{
    if (dev.type == EM_CUDA && em_cuda_check_device(dev.index)) return NULL;
    const em_backend *be = em_backend_for(dev);
    if (be && !be->memory_stats) return em_set_error("%s: not available for the %s backend", op, be->name), NULL;
    return be;
}

int em_get_memory_stats(em_device dev, em_memory_stats *out)
{
    const em_backend *be = stats_backend(dev, "memory_stats");
    return be ? be->memory_stats(dev.index, out) : -1;
}

int em_reset_peak_memory_stats(em_device dev)
{
    const em_backend *be = stats_backend(dev, "reset_peak_memory_stats");
    return be ? be->reset_peak_stats(dev.index) : -1;
}

int em_empty_cache(em_device dev)
{
    if (dev.type == EM_CUDA && em_cuda_check_device(dev.index)) return -1;
    if (em_check_not_capturing(dev, "empty_cache", "give cached memory back (cudaFree waits for the GPU)")) return -1;
    const em_backend *be = em_backend_for(dev);
    if (!be) return -1;
    be->empty_cache(dev.index);
    return 0;
}

int em_set_backend_flag(em_device_type type, int flag, int value)
{
    if (flag < 0 || flag >= EM_NFLAGS) return em_set_error("set_backend_flag: no flag %d", flag);
    flags[type == EM_CUDA][flag] = value;
    /* a backend not loaded yet gets the flags when it loads */
    if (type == EM_CUDA && cuda_backend) cuda_backend->set_flag((em_backend_flag)flag, value);
    return 0;
}

int em_get_backend_flag(em_device_type type, int flag)
{
    return flag >= 0 && flag < EM_NFLAGS ? flags[type == EM_CUDA][flag] : 0;
}

struct em_event {
    const em_backend *be;
    void *ev;
};

em_event *em_event_create(em_device dev)
{
    if (dev.type != EM_CUDA) return em_set_error("Event: events exist on CUDA devices only, got the CPU"), NULL;
    if (em_cuda_check_device(dev.index)) return NULL;
    const em_backend *be = em_backend_for(dev);
    em_event *e = malloc(sizeof *e);
    if (!e) return em_set_error("Event: out of memory"), NULL;
    e->be = be;
    e->ev = be->event_create(dev.index);
    if (!e->ev) { free(e); return NULL; }
    return e;
}

int em_event_record(em_event *e) { return e->be->event_record(e->ev); }

void em_range_push(const char *name)
{
    if (cuda_backend && cuda_backend->range_push) cuda_backend->range_push(name);
}

void em_range_pop(void)
{
    if (cuda_backend && cuda_backend->range_pop) cuda_backend->range_pop();
}
int em_event_synchronize(em_event *e) { return e->be->event_synchronize(e->ev); }
int em_event_elapsed_ms(em_event *start, em_event *end, float *ms)
{
    return start->be->event_elapsed_ms(start->ev, end->ev, ms);
}

void em_event_destroy(em_event *e)
{
    if (!e) return;
    e->be->event_destroy(e->ev);
    free(e);
}

/* GPU monitoring: two device queries of the backend table */
int em_cuda_mem_get_info(int index, size_t *free_bytes, size_t *total_bytes)
{
    if (em_cuda_check_device(index)) return -1;
    return em_backend_for((em_device){EM_CUDA, index})->mem_get_info(index, free_bytes, total_bytes);
}

int em_cuda_pci_bus_id(int index, char *buf, size_t n)
{
    if (em_cuda_check_device(index)) return -1;
    return em_backend_for((em_device){EM_CUDA, index})->pci_bus_id(index, buf, n);
}
