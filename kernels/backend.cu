/* backend.cu — the CUDA backend's table (engine/backend.h), its entry point
 * em_cuda_backend_init, and the per-device state every family uses: one
 * non-blocking stream per device (all of a device's work runs on it, in
 * order, which is what makes freeing memory right after queuing work safe),
 * the launch check, the error word for bad indices found on the device,
 * copies between host and device, synchronisation, events and flags. */
#include "kc.h"

#include <nvtx3/nvToolsExt.h>
#include <sched.h>
#include <time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KC_MAX_DEVICES 64

const em_host_api *kc_host;
int kc_sync_debug;
int kc_allow_tf32;
int kc_deterministic;
int kc_cudnn_tf32 = 1;
int kc_cudnn_deterministic;

typedef struct kc_device {
    bool ready;
    cudaStream_t stream;
    int sm_count;
    kc_error_word *word;        /* mapped host memory: host pointer == device pointer (UVA) */
} kc_device;

static kc_device devs[KC_MAX_DEVICES];
static int ndev;
static int current = -1;

int kc_cuda_error(const char *op, cudaError_t e)
{
    cudaGetLastError();         /* clear a non-sticky error so the next op starts clean */
    if (current >= 0) kc_abort_capture(current);     /* a failed op leaves no step worth replaying */
    return kc_error("%s: CUDA error: %s (%s)", op, cudaGetErrorString(e), cudaGetErrorName(e));
}

static int setup_device(int device)
{
    kc_device *d = &devs[device];
    cudaError_t e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&d->sm_count, cudaDevAttrMultiProcessorCount, device);
    if (e == cudaSuccess) e = cudaHostAlloc((void **)&d->word, sizeof *d->word, cudaHostAllocMapped);
    if (e != cudaSuccess) return kc_cuda_error("cuda", e);
    memset(d->word, 0, sizeof *d->word);
    d->ready = true;
    return 0;
}

cudaStream_t kc_stream(int device)
{
    if (device < 0 || device >= ndev) {
        kc_error("cuda:%d: no such device (%d CUDA device%s)", device, ndev, ndev == 1 ? "" : "s");
        return NULL;
    }
    if (device != current) {
        cudaError_t e = cudaSetDevice(device);
        if (e != cudaSuccess) { kc_cuda_error("cuda", e); return NULL; }
        current = device;
    }
    if (!devs[device].ready && setup_device(device)) return NULL;
    return devs[device].stream;
}

int kc_sm_count(int device) { return devs[device].ready ? devs[device].sm_count : 1; }

int kc_grid(int64_t n, int device)
{
    int64_t blocks = (n + KC_THREADS - 1) / KC_THREADS;
    int64_t cap = (int64_t)kc_sm_count(device) * 8;
    if (blocks > cap) blocks = cap;
    return blocks < 1 ? 1 : (int)blocks;
}

kc_error_word *kc_error_word_of(int device)
{
    if (!kc_stream(device)) return NULL;
    return devs[device].word;
}

static const char *const err_op_names[KC_NERR_OPS] = {
    "index_select", "gather", "scatter", "scatter_add", "index_add", "cross_entropy",
};

int kc_check_error_word(int device)
{
    if (device < 0 || device >= ndev || !devs[device].ready) return 0;
    volatile kc_error_word *w = devs[device].word;
    if (!w->flag) return 0;
    int op = w->op;
    long long value = w->value, pos = w->position, limit = w->limit;
    memset((void *)w, 0, sizeof *w);
    const char *name = op >= 0 && op < KC_NERR_OPS ? err_op_names[op] : "index";
    const char *when = kc_sync_debug ? "" : " (found on the GPU after the op was queued; EMBER_CUDA_SYNC=1 stops at the op)";
    if (op == KC_ERR_CROSS_ENTROPY)
        return kc_error("cross_entropy: target %lld at position %lld is out of range for %lld classes "
                        "(class indices are 1-based, 1..%lld)%s", value, pos + 1, limit, limit, when);
    return kc_error("%s: index %lld at position %lld is out of range (valid: 1..%lld)%s", name, value, pos + 1,
                    limit, when);
}

int kc_launched(const char *op, int device)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return kc_cuda_error(op, e);
    if (!kc_sync_debug || kc_capturing(device)) return 0;
    e = kc_synchronize(devs[device].stream);
    if (e != cudaSuccess) return kc_cuda_error(op, e);
    return kc_check_error_word(device);
}

cudaError_t kc_synchronize(cudaStream_t s)
{
    cudaError_t e = cudaStreamSynchronize(s);
    if (kc_host->hold_if_ending) kc_host->hold_if_ending();
    return e;
}

/* ---- tensors -------------------------------------------------------------- */

const char *kc_dtype_name(em_dtype d)
{
    static const char *const names[EM_NDTYPES] = {"float32", "float64", "int64",    "int32", "uint8",
                                                  "bool",    "float16", "bfloat16", "int8",  "int16"};
    return d >= 0 && d < EM_NDTYPES ? names[d] : "?";
}

/* ---- copies and synchronisation -------------------------------------------- */

/* Waits until the stream has finished its work, giving up when the host
 * asks (Ctrl-C in the shell): a blocking cudaStreamSynchronize cannot be
 * interrupted, so this polls. The first polls only yield the CPU, so that a
 * short wait keeps its latency; later ones sleep 50 us between queries. */
static int wait_idle(cudaStream_t s, const char *op)
{
    for (long i = 0;; i++) {
        cudaError_t e = cudaStreamQuery(s);
        if (e != cudaErrorNotReady && kc_host->hold_if_ending) kc_host->hold_if_ending();
        if (e == cudaSuccess) return 0;
        if (e != cudaErrorNotReady) return kc_cuda_error(op, e);
        if (kc_host->interrupted && kc_host->interrupted())
            return kc_error("%s: interrupted (the work already queued on the GPU goes on)", op);
        if (i < 2000) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
}

/* Host memory is pageable: the copy is complete when these return, so the
 * caller may free or reuse its buffer at once. The stream is drained first
 * (interruptibly), so that an interrupted wait never leaves a copy queued
 * that would touch the caller's buffer later. */
static int memcpy_h2d(void *dst, const void *src, size_t n, int device)
{
    cudaStream_t s = kc_stream(device);
    if (!s) return -1;
    if (!n) return 0;
    if (kc_capturing(device)) return kc_refuse_capture(device, "copy to the GPU: cannot copy from host memory");
    if (wait_idle(s, "copy to the GPU")) return -1;
    cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess) e = kc_synchronize(s);
    return e == cudaSuccess ? 0 : kc_cuda_error("copy to the GPU", e);
}

static int memcpy_d2h(void *dst, const void *src, size_t n, int device)
{
    cudaStream_t s = kc_stream(device);
    if (!s) return -1;
    if (kc_capturing(device)) return kc_refuse_capture(device, "copy from the GPU: cannot copy to the host");
    if (wait_idle(s, "copy from the GPU")) return -1;
    cudaError_t e = n ? cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s) : cudaSuccess;
    if (e == cudaSuccess) e = kc_synchronize(s);
    if (e != cudaSuccess) return kc_cuda_error("copy from the GPU", e);
    return kc_check_error_word(device);
}

static void *host_alloc(size_t n)
{
    void *p = NULL;
    cudaError_t e = cudaHostAlloc(&p, n ? n : 1, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        kc_cuda_error("pin_memory (cudaHostAlloc)", e);
        return NULL;
    }
    return p;
}

static void host_free(void *p, size_t n)
{
    (void)n;
    cudaFreeHost(p);
}

static int synchronize(int device)
{
    cudaStream_t s = kc_stream(device);
    if (!s) return -1;
    if (kc_capturing(device)) return kc_refuse_capture(device, "synchronize: cannot wait for the GPU");
    if (wait_idle(s, "synchronize")) return -1;
    return kc_check_error_word(device);
}

/* ---- devices, flags, events ---------------------------------------------------- */

static int device_count(void) { return ndev; }

static int device_name(int device, char *buf, size_t n)
{
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess) return kc_cuda_error("get_device_name", e);
    snprintf(buf, n, "%s", p.name);
    return 0;
}

static void set_flag(em_backend_flag flag, int value)
{
    switch (flag) {
    case EM_FLAG_ALLOW_TF32: kc_allow_tf32 = value; break;
    case EM_FLAG_SYNC_DEBUG: kc_sync_debug = value; break;
    case EM_FLAG_DETERMINISTIC: kc_deterministic = value; break;
    case EM_FLAG_CUDNN_TF32: kc_cudnn_tf32 = value; break;
    case EM_FLAG_CUDNN_DETERMINISTIC: kc_cudnn_deterministic = value; break;
    default: break;   /* CUDNN_BENCHMARK: kept, not acted on; FILL_UNINITIALIZED: the Lua factories' */
    }
}

typedef struct kc_event {
    cudaEvent_t ev;
    int device;
} kc_event;

static void *event_create(int device)
{
    if (!kc_stream(device)) return NULL;
    kc_event *e = (kc_event *)malloc(sizeof *e);
    if (!e) { kc_error("Event: out of memory"); return NULL; }
    cudaError_t r = cudaEventCreate(&e->ev);
    if (r != cudaSuccess) { free(e); kc_cuda_error("Event", r); return NULL; }
    e->device = device;
    return e;
}

static int event_record(void *p)
{
    kc_event *e = (kc_event *)p;
    cudaStream_t s = kc_stream(e->device);
    if (!s) return -1;
    if (kc_capturing(e->device)) return kc_refuse_capture(e->device, "Event:record: cannot record an event");
    cudaError_t r = cudaEventRecord(e->ev, s);
    return r == cudaSuccess ? 0 : kc_cuda_error("Event:record", r);
}

static int event_synchronize(void *p)
{
    kc_event *e = (kc_event *)p;
    if (kc_capturing(e->device)) return kc_refuse_capture(e->device, "Event:synchronize: cannot wait for an event");
    cudaError_t r = cudaEventSynchronize(e->ev);
    if (kc_host->hold_if_ending) kc_host->hold_if_ending();
    if (r != cudaSuccess) return kc_cuda_error("Event:synchronize", r);
    return kc_check_error_word(e->device);
}

static int event_elapsed_ms(void *a, void *b, float *ms)
{
    cudaError_t r = cudaEventElapsedTime(ms, ((kc_event *)a)->ev, ((kc_event *)b)->ev);
    return r == cudaSuccess ? 0 : kc_cuda_error("Event:elapsed_time", r);
}

static void event_destroy(void *p)
{
    kc_event *e = (kc_event *)p;
    if (!e) return;
    cudaEventDestroy(e->ev);
    free(e);
}

static void *stream_of(int device) { return (void *)kc_stream(device); }

static int mem_get_info(int device, size_t *free_b, size_t *total_b)
{
    if (!kc_stream(device)) return -1;      /* makes it the current device */
    cudaError_t e = cudaMemGetInfo(free_b, total_b);
    return e == cudaSuccess ? 0 : kc_cuda_error("mem_get_info", e);
}

static int pci_bus_id(int device, char *buf, size_t n)
{
    cudaError_t e = cudaDeviceGetPCIBusId(buf, (int)n, device);
    return e == cudaSuccess ? 0 : kc_cuda_error("pci_bus_id", e);
}

static void range_push(const char *name) { nvtxRangePushA(name); }
static void range_pop(void) { nvtxRangePop(); }

/* allocator.cu */
extern "C" {
void *kc_backend_alloc(size_t n, int device);
void kc_backend_free(void *p, size_t n, int device);
void kc_empty_cache(int device);
int kc_memory_stats(int device, em_memory_stats *out);
int kc_reset_peak_stats(int device);
}

/* solver.cu (linear algebra) */
extern "C" int kc_linalg(em_linalg_op op, em_tensor *a, em_tensor *b, em_tensor *c, em_tensor *d,
                         const em_linalg_params *p, int *info);

static em_backend make_backend(void)
{
    em_backend b;
    memset(&b, 0, sizeof b);
    b.name = "cuda";
    b.type = EM_CUDA;
    b.alloc = kc_backend_alloc;
    b.free = kc_backend_free;
    b.empty_cache = kc_empty_cache;
    b.memcpy_h2d = memcpy_h2d;
    b.memcpy_d2h = memcpy_d2h;
    b.host_alloc = host_alloc;
    b.host_free = host_free;
    b.synchronize = synchronize;
    b.fill = kc_fill;
    b.arange = kc_arange;
    b.random = kc_random;
    b.cast = kc_cast;
    b.unary = kc_unary;
    b.binary = kc_binary;
    b.ternary = kc_ternary;
    b.clamp = kc_clamp;
    b.reduce = kc_reduce;
    b.scan = kc_scan;
    b.softmax = kc_softmax;
    b.cross_entropy = kc_cross_entropy;
    b.cross_entropy_backward = kc_cross_entropy_backward;
    b.index = kc_index;
    b.nonzero = kc_nonzero;
    b.sort = kc_sort;
    b.gemm = kc_gemm;
    b.conv = kc_conv;
    b.pool = kc_pooling;
    b.pool_backward = kc_pooling_backward;
    b.norm = kc_norm;
    b.norm_backward = kc_norm_backward;
    b.attention = kc_attention;
    b.attention_backward = kc_attention_backward;
    b.linalg = kc_linalg;
    b.linear = kc_linear;
    b.gemm_half = true;
    b.optim = kc_optim;
    b.optim_multi = kc_optim_multi;
    b.device_count = device_count;
    b.device_name = device_name;
    b.memory_stats = kc_memory_stats;
    b.reset_peak_stats = kc_reset_peak_stats;
    b.mem_get_info = mem_get_info;
    b.pci_bus_id = pci_bus_id;
    b.stream = stream_of;
    b.set_flag = set_flag;
    b.event_create = event_create;
    b.event_record = event_record;
    b.event_synchronize = event_synchronize;
    b.event_elapsed_ms = event_elapsed_ms;
    b.event_destroy = event_destroy;
    b.range_push = range_push;
    b.range_pop = range_pop;
    kc_graph_entries(&b);
    return b;
}

static em_backend kc_backend;

extern "C" __attribute__((visibility("default"))) const em_backend *
em_cuda_backend_init(const em_host_api *host, char *why, size_t nwhy)
{
    kc_host = host;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, nwhy, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        return NULL;
    }
    if (n == 0) {
        snprintf(why, nwhy, "the CUDA driver reports no GPU");
        return NULL;
    }
    ndev = n < KC_MAX_DEVICES ? n : KC_MAX_DEVICES;
    kc_backend = make_backend();
    return &kc_backend;
}


