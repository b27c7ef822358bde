/* graph.cu — CUDA graphs: capture of a device's stream into a graph and its
 * replay with one launch (the backend's graph_* entries, engine/backend.h).
 *
 * A capture records, it does not run: an op that needs a result on the host
 * during it (a copy to the host, a synchronisation, a read of the bad-index
 * word) would wait for work that never executes, and CUDA refuses most such
 * calls by invalidating the capture. So every such path asks kc_capturing
 * first and refuses with kc_refuse_capture, which also ends and discards the
 * capture: the stream runs work again and the session goes on.
 *
 * Capture mode is thread-local: other threads may use CUDA as they like.
 * One capture per device at a time (the allocator routes the device's
 * allocations to the capture's private pool, see allocator.cu).
 *
 * Random numbers (PyTorch's graph-safe Philox): each graph owns two device
 * words {seed, base}; its captured random kernels read them at run time and
 * add their own offset within the graph (engine/random.c hands those out),
 * and every replay first writes the generator's current state there. */
#include "kc.h"

#include <stdarg.h>
#include <stdio.h>

#define KC_GRAPH_DEVICES 64
#define RNG_STATE_BYTES (2 * sizeof(uint64_t))

enum graph_state { CAPTURING, READY, DISCARDED };

struct kc_graph {
    int device;
    kc_mempool *pool;
    uint64_t *rng_state;        /* device {seed, base} for the random kernels it captured */
    cudaGraphExec_t exec;
    graph_state state;
    char why[400];              /* why a discarded capture was discarded */
};

static kc_graph *active[KC_GRAPH_DEVICES];

bool kc_capturing(int device)
{
    return device >= 0 && device < KC_GRAPH_DEVICES && active[device] != NULL;
}

/* Ends the capture without keeping its graph and stops routing allocations
 * to its pool (blocks allocated during it stay the pool's). */
static void discard(kc_graph *g, const char *why)
{
    cudaStream_t s = kc_stream(g->device);
    cudaGraph_t graph = NULL;
    if (s && cudaStreamEndCapture(s, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    cudaGetLastError();         /* an invalidated capture's error is the one being reported */
    active[g->device] = NULL;
    kc_mempool_capture(g->device, NULL);
    g->state = DISCARDED;
    snprintf(g->why, sizeof g->why, "%s", why);
}

void kc_abort_capture(int device)
{
    if (kc_capturing(device)) discard(active[device], "a CUDA error during the capture");
}

int kc_refuse_capture(int device, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (kc_capturing(device)) discard(active[device], msg);
    return kc_error("%s while a CUDA graph is being captured on cuda:%d (a capture records work without "
                    "running it, so nothing can be waited for or read back until a replay has run; the "
                    "capture was ended and discarded)", msg, device);
}

static const uint64_t *graph_rng_state(void *p) { return ((kc_graph *)p)->rng_state; }

static int graph_refuse(int device, const char *why) { return kc_refuse_capture(device, "%s", why); }

static bool graph_capturing(int device) { return kc_capturing(device); }

static void *graph_pool(int device, void *share)
{
    if (share) {
        kc_mempool_retain((kc_mempool *)share);
        return share;
    }
    if (!kc_stream(device)) return NULL;
    return kc_mempool_new(device);
}

static void graph_pool_release(void *pool) { kc_mempool_release((kc_mempool *)pool); }

static void *graph_begin(int device, void *pool)
{
    cudaStream_t s = kc_stream(device);
    if (!s) return NULL;
    if (kc_capturing(device)) {
        kc_error("capture_begin: a CUDA graph is already being captured on cuda:%d (one capture per device "
                 "at a time: end it with capture_end first)", device);
        return NULL;
    }
    kc_mempool *m = (kc_mempool *)pool;
    if (m && kc_mempool_device(m) != device) {
        kc_error("capture_begin: the pool belongs to cuda:%d, the capture is on cuda:%d", kc_mempool_device(m),
                 device);
        return NULL;
    }
    /* earlier work finishes first, so that its errors (and bad indices) are
     * reported now rather than by the replays */
    cudaError_t e = kc_synchronize(s);
    if (e != cudaSuccess) { kc_cuda_error("capture_begin", e); return NULL; }
    if (kc_check_error_word(device)) return NULL;
    kc_graph *g = new kc_graph();
    g->device = device;
    g->pool = m ? m : kc_mempool_new(device);
    if (!g->pool) { delete g; return NULL; }
    if (m) kc_mempool_retain(m);
    kc_mempool_capture(device, g->pool);
    /* from the private pool, before the capture: the replays own it */
    g->rng_state = (uint64_t *)kc_alloc(RNG_STATE_BYTES, device);
    e = g->rng_state ? cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) : cudaSuccess;
    if (!g->rng_state || e != cudaSuccess) {
        kc_mempool_capture(device, NULL);
        if (g->rng_state) kc_free(g->rng_state, RNG_STATE_BYTES, device);
        kc_mempool_release(g->pool);
        delete g;
        if (e != cudaSuccess) kc_cuda_error("capture_begin", e);
        return NULL;
    }
    g->state = CAPTURING;
    active[device] = g;
    return g;
}

static int graph_end(void *p)
{
    kc_graph *g = (kc_graph *)p;
    if (g->state == DISCARDED)
        return kc_error("capture_end: the capture was discarded: %s", g->why);
    if (g->state != CAPTURING) return kc_error("capture_end: no capture under way (capture_begin starts one)");
    cudaStream_t s = kc_stream(g->device);
    if (!s) return -1;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(s, &graph);
    active[g->device] = NULL;
    kc_mempool_capture(g->device, NULL);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&g->exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (e == cudaSuccess) e = cudaGraphUpload(g->exec, s);
    if (e != cudaSuccess) {
        g->state = DISCARDED;
        snprintf(g->why, sizeof g->why, "CUDA error %s at capture_end", cudaGetErrorName(e));
        return kc_cuda_error("capture_end (an operation that cannot be captured ran during the capture: "
                             "a synchronisation, a host copy, or a library call not warmed up before it)", e);
    }
    g->state = READY;
    return 0;
}

/* One thread: the replay's kernel arguments are copied at launch, so no
 * host memory has to outlive this call. */
static __global__ void set_rng_state(uint64_t *dst, uint64_t seed, uint64_t base)
{
    dst[0] = seed;
    dst[1] = base;
}

static int graph_replay(void *p, const uint64_t *rng_state)
{
    kc_graph *g = (kc_graph *)p;
    if (g->state != READY)
        return kc_error("replay: the graph is %s", g->state == CAPTURING ? "still being captured (capture_end first)"
                                                                         : "not captured (its capture was discarded)");
    if (kc_capturing(g->device))
        return kc_refuse_capture(g->device, "replay: cannot replay a graph");
    cudaStream_t s = kc_stream(g->device);
    if (!s) return -1;
    if (rng_state) {
        KC_LAUNCH(1, 1, 0, s, set_rng_state)(g->rng_state, rng_state[0], rng_state[1]);
        cudaError_t le = cudaGetLastError();
        if (le != cudaSuccess) return kc_cuda_error("replay (writing the generator's state)", le);
    }
    cudaError_t e = cudaGraphLaunch(g->exec, s);
    if (e != cudaSuccess) return kc_cuda_error("replay", e);
    return kc_launched("replay", g->device);
}

/* An executable graph still running is freed by CUDA when it completes. */
static void graph_destroy(void *p)
{
    kc_graph *g = (kc_graph *)p;
    if (!g) return;
    if (g->state == CAPTURING) discard(g, "the graph was reset");
    if (g->exec) cudaGraphExecDestroy(g->exec);
    kc_free(g->rng_state, RNG_STATE_BYTES, g->device);
    kc_mempool_release(g->pool);
    delete g;
}

void kc_graph_entries(em_backend *b)
{
    b->graph_pool = graph_pool;
    b->graph_pool_release = graph_pool_release;
    b->graph_begin = graph_begin;
    b->graph_end = graph_end;
    b->graph_replay = graph_replay;
    b->graph_rng_state = graph_rng_state;
    b->graph_destroy = graph_destroy;
    b->graph_capturing = graph_capturing;
    b->graph_refuse = graph_refuse;
}
