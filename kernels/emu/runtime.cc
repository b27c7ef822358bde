/*
 * runtime.cc — the CUDA runtime API on the emulated device: errors, the
 * device's properties (an H100's), memory calls, streams, events, stream
 * capture into graphs and their replay.
 *
 * Streams are in-order queues of host functions. Work runs when something
 * waits for it (a stream, event or device synchronisation, a blocking copy,
 * cudaFree), a slice of it at each query (cudaErrorNotReady while some is
 * left), and the oldest when a queue is full; always on the thread that waits, in each stream's order; a wait for an event recorded on
 * another stream first runs that stream up to the event. So work queued but
 * not waited for has not run yet, as on a busy GPU: a host read of pinned
 * memory before the synchronisation sees the old bytes.
 *
 * A pending command (emu::submit_pending: an NCCL kernel waiting for a peer)
 * holds its stream until it says it is done: a query answers
 * cudaErrorNotReady, a synchronisation waits with the API lock released, so
 * that another host thread (NCCL's watchdog) can query, and abort, meanwhile.
 *
 * Errors follow CUDA's two kinds. A bad call or launch configuration sets
 * the thread's last error (cudaGetLastError reads and clears it). A fault in
 * device work (a kernel's barrier error, an access outside device memory)
 * makes the context's error sticky: every later call returns it, and queued
 * work is dropped, as after a fault on a GPU.
 *
 * Capture (cudaStreamBeginCapture .. EndCapture) records a stream's work
 * into a graph instead of queueing it; replays run the recorded functions.
 * As in CUDA, synchronising with a capturing stream, or with the device
 * while a capture runs, fails and invalidates the capture, and cudaMalloc is
 * refused unless the thread's capture mode is relaxed.
 */
#include "runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

struct emu_cmd {
    uint64_t seq;
    const char *what;
    std::function<void()> fn;
    std::function<bool()> pending;      /* set: runs (fn) only once this says false */
};

struct CUgraph_st {
    std::vector<emu_cmd> nodes;
};

struct CUgraphExec_st {
    std::vector<emu_cmd> nodes;
};

struct CUstream_st {
    unsigned flags = cudaStreamDefault;
    std::deque<emu_cmd> queue;
    uint64_t next_seq = 1, done_seq = 0;
    CUgraph_st *capture = NULL;         /* the graph being captured */
    bool capture_invalid = false;
    cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
    bool busy = false;                  /* a command of it runs now (on some thread) */
};

struct CUevent_st {
    unsigned flags = cudaEventDefault;
    CUstream_st *stream = NULL;         /* where it was last recorded */
    uint64_t seq = 0;                   /* the recording's place in that stream */
    bool recorded = false, done = false;
    double ms = 0;                      /* when the recording ran */
};

namespace emu {

namespace {

/* One lock over the API; a thread that waits for a pending command lets
 * go of all its levels (api_depth) while it sleeps. */
std::recursive_mutex api;
thread_local int api_depth;
struct api_lock {
    api_lock() { api.lock(); api_depth++; }
    ~api_lock() { api_depth--; api.unlock(); }
};
#define API_LOCK api_lock api_guard

cudaError_t sticky_error = cudaSuccess;
thread_local cudaError_t last_error = cudaSuccess;
thread_local cudaStreamCaptureMode thread_mode = cudaStreamCaptureModeGlobal;

CUstream_st legacy_stream;
std::set<CUstream_st *> streams{&legacy_stream};
std::set<CUevent_st *> events;
std::set<CUgraph_st *> graphs;
std::set<CUgraphExec_st *> execs;
int captures;                           /* streams capturing now */

const size_t QUEUE_LIMIT = 512;

double now_ms()
{
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

CUstream_st *stream_of(cudaStream_t s)
{
    if (s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread) return &legacy_stream;
    return streams.count(s) ? s : NULL;
}

/* Runs s's queued work up to `upto` for at most slice_ms (one command at
 * least); whether it got there. A query polls with a slice, so that a
 * waiting host (backend.cu's wait_idle) sees NotReady and can be interrupted. */
bool drain_for(CUstream_st *s, uint64_t upto, double slice_ms);

thread_local bool querying;            /* inside drain_for: a pending command stops the drain */

/* Whether s cannot go on now: its next command is pending, or one of its
 * commands runs (on another thread, or below this one). */
bool stalled(CUstream_st *s)
{
    if (s->busy) return true;
    emu_cmd &c = s->queue.front();
    return c.pending && sticky_error == cudaSuccess && c.pending();
}

/* A host thread waits for a stalled stream: the lock released (every
 * level), a millisecond's sleep, the lock taken again. */
void wait_released()
{
    int depth = api_depth;
    device_leave();
    for (int i = 0; i < depth; i++) api.unlock();
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    for (int i = 0; i < depth; i++) api.lock();
    device_enter();
}

/* Runs s's queued work up to and including `upto` (a query's: while it can). */
void drain(CUstream_st *s, uint64_t upto)
{
    if (s->queue.empty() || s->queue.front().seq > upto) return;
    device_enter();
    while (!s->queue.empty() && s->queue.front().seq <= upto) {
        if (stalled(s)) {
            if (querying) break;
            wait_released();
            if (!streams.count(s)) break;      /* destroyed meanwhile */
            continue;
        }
        emu_cmd c = std::move(s->queue.front());
        s->queue.pop_front();
        s->busy = true;
        if (sticky_error == cudaSuccess) c.fn();
        s->busy = false;
        s->done_seq = c.seq;
    }
    device_leave();
}

void drain_all(CUstream_st *s) { drain(s, UINT64_MAX); }

bool drain_for(CUstream_st *s, uint64_t upto, double slice_ms)
{
    double end = now_ms() + slice_ms;
    bool outer = !querying;
    querying = true;
    while (!s->queue.empty() && s->queue.front().seq <= upto) {
        if (stalled(s)) break;
        drain(s, s->queue.front().seq);
        if (now_ms() >= end) break;
    }
    if (outer) querying = false;
    return s->queue.empty() || s->queue.front().seq > upto;
}

const double QUERY_SLICE_MS = 20;

void drain_device()
{
    bool more = true;
    while (more) {
        more = false;
        for (CUstream_st *s : streams)
            if (!s->queue.empty()) {
                drain_all(s);
                more = true;
            }
    }
}

/* A synchronising call while captures run: CUDA invalidates the capture of
 * the stream concerned (or every capture, for a device-wide wait). */
bool refuse_if_capturing(CUstream_st *s)
{
    if (s) {
        if (!s->capture) return false;
        s->capture_invalid = true;
        return true;
    }
    if (!captures) return false;
    for (CUstream_st *t : streams)
        if (t->capture) t->capture_invalid = true;
    return true;
}

cudaError_t fail(cudaError_t e)
{
    last_error = e;
    return e;
}

#define STICKY_CHECK \
    do { if (sticky_error != cudaSuccess) return sticky_error; } while (0)

/* cudaStreamCreateWithFlags and cudaEventCreateWithFlags: a new T with
 * these flags, made live in `live`, into *out. */
template <typename T>
cudaError_t create_with_flags(T **out, unsigned flags, std::set<T *> &live)
{
    API_LOCK;
    if (!out) return fail(cudaErrorInvalidValue);
    STICKY_CHECK;
    T *n = new T();
    n->flags = flags;
    live.insert(n);
    *out = n;
    return cudaSuccess;
}

/* Runs s's work up to `upto` for a synchronisation, or for a query a slice
 * of time, answering cudaErrorNotReady while some remains (as a busy GPU's);
 * then the sticky error. */
cudaError_t run_until(CUstream_st *s, uint64_t upto, bool query)
{
    if (query) {
        bool done = drain_for(s, upto, QUERY_SLICE_MS);
        if (sticky_error != cudaSuccess) return sticky_error;
        return done ? cudaSuccess : cudaErrorNotReady;
    }
    drain(s, upto);
    return sticky_error;
}

cudaDeviceProp make_props()
{
    cudaDeviceProp p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "ember emulated CUDA device (H100 properties)");
    p.totalGlobalMem = config().memory;
    p.sharedMemPerBlock = 48 << 10;
    p.sharedMemPerBlockOptin = 227 << 10;
    p.sharedMemPerMultiprocessor = 228 << 10;
    p.regsPerBlock = 65536;
    p.regsPerMultiprocessor = 65536;
    p.warpSize = 32;
    p.memPitch = 2147483647;
    p.maxThreadsPerBlock = 1024;
    p.maxThreadsDim[0] = 1024;
    p.maxThreadsDim[1] = 1024;
    p.maxThreadsDim[2] = 64;
    p.maxGridSize[0] = 2147483647;
    p.maxGridSize[1] = 65535;
    p.maxGridSize[2] = 65535;
    p.totalConstMem = 65536;
    p.major = 9;
    p.minor = 0;
    p.textureAlignment = 512;
    p.multiProcessorCount = 132;
    p.integrated = 0;
    p.canMapHostMemory = 1;
    p.concurrentKernels = 1;
    p.pciBusID = 0xe1;
    p.pciDeviceID = 0;
    p.pciDomainID = 0;
    p.asyncEngineCount = 2;
    p.unifiedAddressing = 1;
    p.memoryBusWidth = 5120;
    p.l2CacheSize = 50 << 20;
    p.maxThreadsPerMultiProcessor = 2048;
    p.maxBlocksPerMultiProcessor = 32;
    p.managedMemory = 1;
    p.computePreemptionSupported = 1;
    p.cooperativeLaunch = 1;
    return p;
}

} // namespace

const settings &config()
{
    static settings s = [] {
        settings r{(size_t)1 << 30, 1, 0};
        const char *m = getenv("EMBER_CUDA_EMU_MEMORY");
        if (m && *m) {
            char *end;
            double v = strtod(m, &end);
            double mult = 1;
            if (*end == 'K' || *end == 'k') mult = 1024;
            else if (*end == 'M' || *end == 'm') mult = 1048576;
            else if (*end == 'G' || *end == 'g') mult = 1073741824;
            if (v > 0 && v * mult >= 1048576 && v * mult < 1e15) r.memory = (size_t)(v * mult);
            else fprintf(stderr, "ember (emulated CUDA): EMBER_CUDA_EMU_MEMORY=%s ignored (expected bytes with an "
                                 "optional K, M or G, at least 1M)\n", m);
        }
        const char *sd = getenv("EMBER_CUDA_EMU_SEED");
        if (sd && *sd) r.seed = strtoull(sd, NULL, 0);
        const char *fl = getenv("EMBER_CUDA_EMU_FAULT");
        if (fl && *fl) r.fault_launch = strtoull(fl, NULL, 0);
        return r;
    }();
    return s;
}

const cudaDeviceProp &props()
{
    static cudaDeviceProp p = make_props();
    return p;
}

cudaError_t set_error(cudaError_t e)
{
    if (e != cudaSuccess) last_error = e;
    return e;
}

cudaError_t sticky() { return sticky_error; }

bool sticky_error_for_nccl() { return sticky_error != cudaSuccess; }

void vfault(cudaError_t e, const char *prefix, const char *fmt, va_list ap)
{
    char msg[1200];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "ember (emulated CUDA): %s%s\n", prefix, msg);
    if (sticky_error == cudaSuccess) sticky_error = e;
}

void fault(cudaError_t e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfault(e, "", fmt, ap);
    va_end(ap);
}

static cudaError_t submit_seq(CUstream_st *s, const char *what, std::function<void()> fn, uint64_t *seq)
{
    if (s->capture) {
        if (s->capture_invalid) return cudaErrorStreamCaptureInvalidated;
        s->capture->nodes.push_back(emu_cmd{0, what, std::move(fn), {}});
        if (seq) *seq = 0;
        return cudaSuccess;
    }
    uint64_t q = s->next_seq++;
    s->queue.push_back(emu_cmd{q, what, std::move(fn), {}});
    if (seq) *seq = q;
    /* a full queue makes the launch wait for the oldest work, as a GPU's does;
     * one command at a time, so the host gets control back often */
    if (s->queue.size() > QUEUE_LIMIT) drain(s, s->queue.front().seq);
    return cudaSuccess;
}

cudaError_t submit(cudaStream_t st, const char *what, std::function<void()> fn)
{
    API_LOCK;
    STICKY_CHECK;
    CUstream_st *s = stream_of(st);
    if (!s) return cudaErrorInvalidResourceHandle;
    return submit_seq(s, what, std::move(fn), NULL);
}

cudaError_t submit_pending(cudaStream_t st, const char *what, std::function<bool()> pending)
{
    API_LOCK;
    STICKY_CHECK;
    CUstream_st *s = stream_of(st);
    if (!s) return cudaErrorInvalidResourceHandle;
    if (s->capture) return cudaErrorStreamCaptureUnsupported;
    s->queue.push_back(emu_cmd{s->next_seq++, what, []() {}, std::move(pending)});
    return cudaSuccess;
}

/* CUDA's math library function that libm lacks: the inverse error function.
 * CUDA documents it within a few ulp over the full range, so the stand-in
 * must be as good: an initial guess (Giles' single-precision approximation)
 * refined by Newton steps, on erf(x) = y for |y| < 0.5, and for |y| >= 0.5 on
 * log erfc(|x|) = log(1 - |y|), since there erf is flat (its slope
 * 2/sqrt(pi) exp(-x^2) is tiny) and an ulp of y is many ulps of x; 1 - |y|
 * is exact for |y| >= 0.5. */
} // namespace emu

double erfinv(double y)
{
    if (isnan(y) || y < -1 || y > 1) return NAN;
    if (y == 1) return INFINITY;
    if (y == -1) return -INFINITY;
    if (y == 0) return y;
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 5) {    /* Giles' single-precision approximation as the start */
        w -= 2.5;
        double p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w; p = 1.50140941 + p * w;
        x = p * y;
    } else {
        w = sqrt(w) - 3;
        double p = -0.000200214257;
        p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w; p = 2.83297682 + p * w;
        x = p * y;
    }
    if (fabs(y) < 0.5) {
        for (int i = 0; i < 3; i++) {
            double err = erf(x) - y;
            x -= err / (1.1283791670955126 * exp(-x * x));
        }
        return x;
    }
    /* d/dx log erfc(x) = -2/sqrt(pi) exp(-x^2) / erfc(x) */
    double ax = fabs(x), lq = log(1.0 - fabs(y));
    for (int i = 0; i < 16; i++) {
        double e = erfc(ax);
        double step = (log(e) - lq) * e / (-1.1283791670955126 * exp(-ax * ax));
        ax -= step;
        if (fabs(step) <= 1e-17 * ax) break;
    }
    return copysign(ax, y);
}

using namespace emu;

/* ---- errors ----------------------------------------------------------------------- */

extern "C" {

cudaError_t cudaGetLastError(void)
{
    if (sticky_error != cudaSuccess) return sticky_error;
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return sticky_error != cudaSuccess ? sticky_error : last_error;
}

const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorCapturedEvent: return "cudaErrorCapturedEvent";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unrecognized error code";
    }
}

/* ---- the device ----------------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *n)
{
    if (!n) return fail(cudaErrorInvalidValue);
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
    return d == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDevice(int *d)
{
    if (!d) return fail(cudaErrorInvalidValue);
    *d = 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d)
{
    if (!p) return fail(cudaErrorInvalidValue);
    if (d != 0) return fail(cudaErrorInvalidDevice);
    *p = props();
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d)
{
    if (!v) return fail(cudaErrorInvalidValue);
    if (d != 0) return fail(cudaErrorInvalidDevice);
    const cudaDeviceProp &p = props();
    switch (a) {
    case cudaDevAttrMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *v = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *v = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *v = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *v = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *v = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *v = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrWarpSize: *v = p.warpSize; break;
    case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *v = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = p.minor; break;
    case cudaDevAttrMaxRegistersPerBlock: *v = p.regsPerBlock; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrL2CacheSize: *v = p.l2CacheSize; break;
    case cudaDevAttrPciBusId: *v = p.pciBusID; break;
    case cudaDevAttrPciDeviceId: *v = p.pciDeviceID; break;
    case cudaDevAttrPciDomainId: *v = p.pciDomainID; break;
    case cudaDevAttrUnifiedAddressing: *v = 1; break;
    case cudaDevAttrCanMapHostMemory: *v = 1; break;
    case cudaDevAttrConcurrentKernels: *v = 1; break;
    default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int d)
{
    if (!buf || len <= 0) return fail(cudaErrorInvalidValue);
    if (d != 0) return fail(cudaErrorInvalidDevice);
    const cudaDeviceProp &p = props();
    snprintf(buf, (size_t)len, "%08X:%02X:%02X.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    if (!v) return fail(cudaErrorInvalidValue);
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    if (!v) return fail(cudaErrorInvalidValue);
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    API_LOCK;
    STICKY_CHECK;
    if (thread_mode != cudaStreamCaptureModeRelaxed && refuse_if_capturing(NULL))
        return fail(cudaErrorStreamCaptureUnsupported);
    drain_device();
    return sticky_error;
}

cudaError_t cudaFuncSetAttribute(const void *fn, cudaFuncAttribute attr, int value)
{
    if (!fn) return fail(cudaErrorInvalidDeviceFunction);
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        cudaError_t e = set_max_dynamic_shared(fn, value);
        return e == cudaSuccess ? e : fail(e);
    }
    if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
    return fail(cudaErrorInvalidValue);
}

/* ---- memory ------------------------------------------------------------------------ */

/* cudaMalloc is "potentially unsafe" during a capture: refused unless the
 * calling thread's mode is relaxed (CUDA's rule for global/thread-local). */
static bool unsafe_during_capture()
{
    if (!captures || thread_mode == cudaStreamCaptureModeRelaxed) return false;
    refuse_if_capturing(NULL);
    return true;
}

cudaError_t cudaMalloc(void **p, size_t n)
{
    API_LOCK;
    if (!p) return fail(cudaErrorInvalidValue);
    STICKY_CHECK;
    if (unsafe_during_capture()) return fail(cudaErrorStreamCaptureUnsupported);
    *p = NULL;
    if (n == 0) return cudaSuccess;
    void *m = device_alloc(n);
    if (!m) return fail(cudaErrorMemoryAllocation);
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    API_LOCK;
    STICKY_CHECK;
    if (!p) return cudaSuccess;
    if (unsafe_during_capture()) return fail(cudaErrorStreamCaptureUnsupported);
    drain_device();     /* cudaFree waits for the device: queued work may still use p */
    if (!device_free(p)) return fail(cudaErrorInvalidValue);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
    API_LOCK;
    STICKY_CHECK;
    if (!free_b || !total) return fail(cudaErrorInvalidValue);
    *total = config().memory;
    size_t used = device_in_use();
    *free_b = used < *total ? *total - used : 0;
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags)
{
    API_LOCK;
    (void)flags;
    if (!p) return fail(cudaErrorInvalidValue);
    STICKY_CHECK;
    *p = pinned_alloc(n);
    return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaMallocHost(void **p, size_t n) { return cudaHostAlloc(p, n, cudaHostAllocDefault); }

cudaError_t cudaFreeHost(void *p)
{
    API_LOCK;
    if (!p) return cudaSuccess;
    drain_device();
    return pinned_free(p) ? cudaSuccess : fail(cudaErrorInvalidValue);
}

cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned flags)
{
    (void)flags;
    if (!d || !is_pinned(h, 1)) return fail(cudaErrorInvalidValue);
    *d = h;     /* unified addressing: the same address on both sides */
    return cudaSuccess;
}

/* Where each side of a copy is, checked at the call (CUDA checks the kind
 * against the pointers' memory types under unified addressing). */
static cudaError_t copy_kind(void *dst, const void *src, cudaMemcpyKind *kind)
{
    bool dd = is_device_pointer(dst), sd = is_device_pointer(src);
    cudaMemcpyKind k = *kind;
    if (k == cudaMemcpyDefault) {
        k = dd ? (sd ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
               : (sd ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    } else if ((k == cudaMemcpyHostToDevice && (!dd || sd)) || (k == cudaMemcpyDeviceToHost && (dd || !sd)) ||
               (k == cudaMemcpyDeviceToDevice && (!dd || !sd)) || (k == cudaMemcpyHostToHost && (dd || sd))) {
        return cudaErrorInvalidMemcpyDirection;
    } else if (k != cudaMemcpyHostToDevice && k != cudaMemcpyDeviceToHost && k != cudaMemcpyDeviceToDevice &&
               k != cudaMemcpyHostToHost) {
        return cudaErrorInvalidMemcpyDirection;
    }
    *kind = k;
    return cudaSuccess;
}

static cudaError_t copy_async(void *dst, const void *src, size_t n, cudaMemcpyKind kind, CUstream_st *s, bool sync)
{
    cudaError_t e = copy_kind(dst, src, &kind);
    if (e != cudaSuccess) return fail(e);
    if (n == 0) return cudaSuccess;
    bool host_src = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost;
    bool host_dst = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost;
    bool pinned_src = host_src && is_pinned(src, n), pinned_dst = host_dst && is_pinned(dst, n);
    if (s->capture && ((host_src && !pinned_src) || (host_dst && !pinned_dst))) {
        /* a graph cannot hold a copy of pageable host memory */
        s->capture_invalid = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    if (host_src && !pinned_src) {
        /* from pageable memory CUDA stages the bytes before returning, so the
         * caller may reuse its buffer at once */
        std::shared_ptr<std::vector<char>> staged = std::make_shared<std::vector<char>>((const char *)src,
                                                                                       (const char *)src + n);
        e = submit_seq(s, "cudaMemcpyAsync", [dst, staged, n, kind]() {
            if (kind == cudaMemcpyHostToDevice && !device_range(dst, n, "cudaMemcpy to the device")) return;
            memcpy(dst, staged->data(), n);
        }, NULL);
    } else {
        e = submit_seq(s, "cudaMemcpyAsync", [dst, src, n, kind]() {
            bool dev_src = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
            bool dev_dst = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
            if (dev_src && !device_range(src, n, "cudaMemcpy from the device")) return;
            if (dev_dst && !device_range(dst, n, "cudaMemcpy to the device")) return;
            memmove(dst, src, n);
        }, NULL);
    }
    if (e != cudaSuccess) return fail(e);
    /* to pageable memory the copy is complete when the call returns */
    if (sync || (host_dst && !pinned_dst)) {
        if (s->capture) return cudaSuccess;
        drain_all(s);
        return sticky_error;
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t st)
{
    API_LOCK;
    STICKY_CHECK;
    CUstream_st *s = stream_of(st);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    return copy_async(dst, src, n, kind, s, false);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind)
{
    API_LOCK;
    STICKY_CHECK;
    if (refuse_if_capturing(NULL) && thread_mode != cudaStreamCaptureModeRelaxed)
        return fail(cudaErrorStreamCaptureUnsupported);
    /* the legacy stream waits for the other blocking streams */
    for (CUstream_st *s : streams)
        if (!(s->flags & cudaStreamNonBlocking)) drain_all(s);
    return copy_async(dst, src, n, kind, &legacy_stream, true);
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t st)
{
    API_LOCK;
    STICKY_CHECK;
    CUstream_st *s = stream_of(st);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    if (!is_device_pointer(p)) return fail(cudaErrorInvalidValue);
    if (n == 0) return cudaSuccess;
    cudaError_t e = submit_seq(s, "cudaMemsetAsync", [p, value, n]() {
        if (device_range(p, n, "cudaMemset")) memset(p, value, n);
    }, NULL);
    return e == cudaSuccess ? e : fail(e);
}

cudaError_t cudaMemset(void *p, int value, size_t n)
{
    API_LOCK;
    cudaError_t e = cudaMemsetAsync(p, value, n, NULL);
    if (e != cudaSuccess) return e;
    drain_all(&legacy_stream);
    return sticky_error;
}

/* ---- streams ------------------------------------------------------------------------ */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) { return create_with_flags(s, flags, streams); }

cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t st)
{
    API_LOCK;
    CUstream_st *s = stream_of(st);
    if (!s || s == &legacy_stream) return fail(cudaErrorInvalidResourceHandle);
    drain_all(s);       /* its queued work still runs, as on a GPU */
    if (s->capture) {
        captures--;
        delete s->capture;
    }
    for (CUevent_st *e : events)
        if (e->stream == s) e->stream = NULL;
    streams.erase(s);
    delete s;
    return sticky_error;
}

/* cudaStreamSynchronize and cudaStreamQuery: all of st's work (run_until). */
static cudaError_t stream_wait(cudaStream_t st, bool query)
{
    API_LOCK;
    STICKY_CHECK;
    CUstream_st *s = stream_of(st);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    if (refuse_if_capturing(s)) return fail(cudaErrorStreamCaptureUnsupported);
    return run_until(s, UINT64_MAX, query);
}

cudaError_t cudaStreamSynchronize(cudaStream_t st) { return stream_wait(st, false); }

/* A query runs the stream's work for a slice of time and says whether it
 * is all done: cudaErrorNotReady while work remains, as a busy GPU's. */
cudaError_t cudaStreamQuery(cudaStream_t st) { return stream_wait(st, true); }

cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t ev, unsigned flags)
{
    API_LOCK;
    STICKY_CHECK;
    (void)flags;
    CUstream_st *s = stream_of(st);
    if (!s || !events.count(ev)) return fail(cudaErrorInvalidResourceHandle);
    if (!ev->recorded || !ev->stream || ev->stream == s) return cudaSuccess;
    if (s->capture) return cudaSuccess;         /* a graph's work replays in order anyway */
    CUstream_st *other = ev->stream;
    uint64_t seq = ev->seq;
    /* pending while the other stream has not got there: a query of this
     * one runs that one as far as it can, a synchronisation to the end */
    s->queue.push_back(emu_cmd{s->next_seq++, "cudaStreamWaitEvent", []() {}, [other, seq]() {
        if (!streams.count(other)) return false;
        drain(other, seq);
        return streams.count(other) && other->done_seq < seq;
    }});
    if (s->queue.size() > QUEUE_LIMIT) drain(s, s->queue.front().seq);
    return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode *mode)
{
    if (!mode) return fail(cudaErrorInvalidValue);
    cudaStreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t st, cudaStreamCaptureMode mode)
{
    API_LOCK;
    STICKY_CHECK;
    CUstream_st *s = stream_of(st);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    if (s == &legacy_stream) return fail(cudaErrorStreamCaptureUnsupported);
    if (s->capture) return fail(cudaErrorIllegalState);
    s->capture = new CUgraph_st();
    s->capture_invalid = false;
    s->capture_mode = mode;
    captures++;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t st, cudaGraph_t *g)
{
    API_LOCK;
    CUstream_st *s = stream_of(st);
    if (!s || !g) return fail(cudaErrorInvalidValue);
    if (!s->capture) return fail(cudaErrorIllegalState);
    CUgraph_st *graph = s->capture;
    bool invalid = s->capture_invalid;
    s->capture = NULL;
    s->capture_invalid = false;
    captures--;
    if (invalid) {
        delete graph;
        *g = NULL;
        return fail(cudaErrorStreamCaptureInvalidated);
    }
    graphs.insert(graph);
    *g = graph;
    return sticky_error;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t st, cudaStreamCaptureStatus *status)
{
    API_LOCK;
    CUstream_st *s = stream_of(st);
    if (!s || !status) return fail(cudaErrorInvalidValue);
    *status = !s->capture ? cudaStreamCaptureStatusNone
                          : (s->capture_invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive);
    return cudaSuccess;
}

/* ---- graphs --------------------------------------------------------------------------- */

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags)
{
    API_LOCK;
    (void)flags;
    if (!exec || !graphs.count(g)) return fail(cudaErrorInvalidValue);
    CUgraphExec_st *x = new CUgraphExec_st();
    x->nodes = g->nodes;
    execs.insert(x);
    *exec = x;
    return cudaSuccess;
}

cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t st)
{
    API_LOCK;
    STICKY_CHECK;
    if (!execs.count(exec) || !stream_of(st)) return fail(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t st)
{
    API_LOCK;
    STICKY_CHECK;
    CUstream_st *s = stream_of(st);
    if (!s || !execs.count(exec)) return fail(cudaErrorInvalidResourceHandle);
    /* the nodes as they are now: a later destroy of the exec leaves this replay whole */
    std::shared_ptr<std::vector<emu_cmd>> nodes = std::make_shared<std::vector<emu_cmd>>(exec->nodes);
    cudaError_t e = submit_seq(s, "cudaGraphLaunch", [nodes]() {
        for (emu_cmd &c : *nodes)
            if (sticky_error == cudaSuccess) c.fn();
    }, NULL);
    return e == cudaSuccess ? e : fail(e);
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    API_LOCK;
    if (!graphs.erase(g)) return fail(cudaErrorInvalidValue);
    delete g;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
    API_LOCK;
    if (!execs.erase(x)) return fail(cudaErrorInvalidValue);
    delete x;
    return cudaSuccess;
}

/* ---- events ------------------------------------------------------------------------------ */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) { return create_with_flags(e, flags, events); }

cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    API_LOCK;
    if (!events.erase(e)) return fail(cudaErrorInvalidResourceHandle);
    /* a recording still queued refers to it: let it run first */
    if (e->recorded && !e->done && e->stream) drain(e->stream, e->seq);
    delete e;
    return cudaSuccess;
}

/* The work a recording queues (or a capture records): ev is done, now,
 * unless it was destroyed meanwhile. */
static void stamp_event(cudaEvent_t ev)
{
    if (!events.count(ev)) return;
    ev->done = true;
    ev->ms = now_ms();
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t st)
{
    API_LOCK;
    STICKY_CHECK;
    CUstream_st *s = stream_of(st);
    if (!s || !events.count(ev)) return fail(cudaErrorInvalidResourceHandle);
    if (s->capture) {
        /* recorded into the graph: each replay stamps it */
        if (s->capture_invalid) return fail(cudaErrorStreamCaptureInvalidated);
        ev->recorded = true;
        ev->done = false;
        ev->stream = NULL;
        s->capture->nodes.push_back(emu_cmd{0, "cudaEventRecord", [ev]() { stamp_event(ev); }, {}});
        return cudaSuccess;
    }
    ev->recorded = true;
    ev->done = false;
    ev->stream = s;
    uint64_t seq = 0;
    cudaError_t e = submit_seq(s, "cudaEventRecord", [ev]() { stamp_event(ev); }, &seq);
    ev->seq = seq;
    return e == cudaSuccess ? e : fail(e);
}

static cudaError_t event_wait(cudaEvent_t ev, bool query)
{
    if (!events.count(ev)) return fail(cudaErrorInvalidResourceHandle);
    if (!ev->recorded || ev->done) return sticky_error;
    if (!ev->stream) return fail(cudaErrorCapturedEvent);
    if (ev->stream->capture) {
        ev->stream->capture_invalid = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    return run_until(ev->stream, ev->seq, query);
}

cudaError_t cudaEventQuery(cudaEvent_t ev)
{
    API_LOCK;
    STICKY_CHECK;
    return event_wait(ev, true);
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
    API_LOCK;
    STICKY_CHECK;
    return event_wait(ev, false);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    API_LOCK;
    STICKY_CHECK;
    if (!ms) return fail(cudaErrorInvalidValue);
    if (!events.count(a) || !events.count(b)) return fail(cudaErrorInvalidResourceHandle);
    if ((a->flags & cudaEventDisableTiming) || (b->flags & cudaEventDisableTiming))
        return fail(cudaErrorInvalidResourceHandle);
    if (!a->recorded || !b->recorded) return fail(cudaErrorInvalidResourceHandle);
    if (!a->done || !b->done) return fail(cudaErrorNotReady);
    *ms = (float)(b->ms - a->ms);
    return cudaSuccess;
}

} // extern "C"
