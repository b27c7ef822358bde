/* nccl.c — the NCCL communication backend (engine/comm.h) for CUDA memory,
 * built into build/libember_nccl.so when the toolkit has nccl.h, and opened
 * by engine/distributed.c for init_process_group({backend = "nccl"}) after the
 * MPI backend, which bootstraps it: rank 0's ncclUniqueId travels to every
 * rank over MPI's broadcast (host->bootstrap), then each rank joins with
 * ncclCommInitRank on its local rank's GPU.
 *
 * Streams: NCCL runs on a communication stream of its own, so collectives
 * can overlap the kernels of the compute stream (the CUDA backend's one
 * stream per device, the backend table's `stream`, handed over by the
 * engine as host->compute_stream). Before each collective the comm stream waits on
 * an event recorded on the compute stream (the data is ready); after a
 * blocking one the compute stream waits on an event recorded on the comm
 * stream (later kernels see the result). An async request is such an event:
 * wait() makes the compute stream wait on it without blocking the host
 * (PyTorch's semantics for NCCL work), test() queries it.
 *
 * The watchdog (the engine's thread, engine/dist_board.c, as PyTorch's
 * ProcessGroupNCCL has one): every transfer ends in a mark, an event on
 * the comm stream handed to the engine (host->queued), which polls it with
 * cudaEventQuery and ncclCommGetAsyncError from its thread; on a timeout
 * or an asynchronous error it cancels: ncclCommAbort on every communicator
 * (so stuck kernels quit) and every later call fails naming why. Marks come
 * from a pool of events; a request is a mark too (counted twice: the
 * request and the watchdog), so a transfer costs one event record, as
 * before, and no event is created per transfer once the pool is warm.
 *
 * The runtime: this library links the toolkit's shared libcudart, while
 * libember_cuda.so links cudart statically; both act on the device's primary
 * context through the driver, so pointers, streams and events are shared. */
#include "../engine/comm.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const em_comm_host *host;
static ncclComm_t comm;
static int device = -1;
static cudaStream_t comm_stream, compute;
static cudaEvent_t ready;             /* reused: a wait captures the event's state when queued */
static float *one_float;              /* the barrier's all_reduce */

/* Where a transfer ends on the comm stream, and the communicator it ran
 * on (whose asynchronous error says why it may never end). */
typedef struct mark {
    cudaEvent_t ev;
    ncclComm_t comm;
    atomic_int refs;                  /* the watchdog's, and a request's */
    struct mark *next;                /* in the pool */
} mark;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static mark *pool;

/* Cancelled: the communicators were aborted (by the watchdog, or the job's
 * abort); every call fails with the reason. NCCL calls of the program's
 * thread hold call_lock, so an abort from the watchdog's does not free a
 * communicator under one (it waits a second at most: an enqueue that
 * blocks must not keep the job alive). */
static atomic_bool cancelled;
static char cancel_reason[1024];
static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER, cancel_lock = PTHREAD_MUTEX_INITIALIZER;
static ncclComm_t *subcomms;          /* from split, for cancel */
static int nsubcomms, subcomm_cap;

static int cuda_fail(const char *what, cudaError_t e)
{
    cudaGetLastError();
    return host->set_error("%s: CUDA error: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static int nccl_fail(const char *what, ncclResult_t r)
{
    const char *last = comm ? ncclGetLastError(comm) : NULL;
    return host->set_error("%s: NCCL error: %s%s%s", what, ncclGetErrorString(r), last && *last ? ": " : "",
                           last ? last : "");
}

static ncclDataType_t nccl_type(em_dtype d)
{
    switch (d) {
    case EM_FLOAT32: return ncclFloat32;
    case EM_FLOAT64: return ncclFloat64;
    case EM_INT64: return ncclInt64;
    case EM_INT32: return ncclInt32;
    case EM_INT8: return ncclInt8;
    case EM_UINT8: case EM_BOOL: return ncclUint8;
    /* NCCL has no int16: its bits travel as float16's, and reductions widen
     * (reduces) */
    case EM_FLOAT16: case EM_INT16: return ncclFloat16;
    case EM_BFLOAT16: return ncclBfloat16;
    default: return ncclUint8;
    }
}

/* float16/bfloat16 are reduced in float32 by the engine, as over MPI, so a
 * sum is rounded once and both backends give the same values */
static bool reduces(em_dtype d) { return d != EM_FLOAT16 && d != EM_BFLOAT16 && d != EM_INT16; }

static ncclRedOp_t nccl_op(em_comm_op op)
{
    switch (op) {
    case EM_COMM_MAX: return ncclMax;
    case EM_COMM_MIN: return ncclMin;
    case EM_COMM_PRODUCT: return ncclProd;
    default: return ncclSum;
    }
}

/* LOCAL_RANK (torchrun) or OMPI_COMM_WORLD_LOCAL_RANK (mpirun), else the
 * global rank: one GPU per process on this machine */
static int local_rank(int rank)
{
    const char *names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return atoi(v);
    }
    return rank;
}

/* ---- marks ---------------------------------------------------------------- */

static mark *mark_get(void)
{
    pthread_mutex_lock(&pool_lock);
    mark *m = pool;
    if (m) pool = m->next;
    pthread_mutex_unlock(&pool_lock);
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m) return NULL;
        if (cudaEventCreateWithFlags(&m->ev, cudaEventDisableTiming) != cudaSuccess) {
            free(m);
            return NULL;
        }
    }
    atomic_store(&m->refs, 1);
    return m;
}

static void mark_put(mark *m)
{
    if (atomic_fetch_sub(&m->refs, 1) != 1) return;
    pthread_mutex_lock(&pool_lock);
    m->next = pool;
    pool = m;
    pthread_mutex_unlock(&pool_lock);
}

/* the pool's events (marks the watchdog still holds come back to it later:
 * events outlive communicators) */
static void pool_free(void)
{
    pthread_mutex_lock(&pool_lock);
    while (pool) {
        mark *m = pool;
        pool = m->next;
        cudaEventDestroy(m->ev);
        free(m);
    }
    pthread_mutex_unlock(&pool_lock);
}

static int release(void)
{
    if (one_float) cudaFree(one_float);
    if (ready) cudaEventDestroy(ready);
    pool_free();
    if (comm_stream) cudaStreamDestroy(comm_stream);
    one_float = NULL;
    ready = NULL;
    comm_stream = NULL;
    device = -1;
    return -1;
}

/* This rank's GPU, the comm stream, events and the barrier's word; rank 0
 * also makes the unique id. */
static int setup(int rank, ncclUniqueId *id)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0)
        return host->set_error("init_process_group: backend 'nccl' needs a CUDA device, and this machine has none%s%s",
                               e != cudaSuccess ? ": " : "", e != cudaSuccess ? cudaGetErrorString(e) : "");
    int local = local_rank(rank);
    if (local < 0 || local >= ndev)
        return host->set_error("init_process_group: rank %d has local rank %d, but this machine has %d CUDA "
                               "device%s: backend 'nccl' takes one GPU per process (start at most %d processes "
                               "per machine)", rank, local, ndev, ndev == 1 ? "" : "s", ndev);
    compute = host->compute_stream(local);      /* also makes `local` the CUDA backend's device */
    if (!compute) return -1;
    e = cudaSetDevice(local);
    if (e != cudaSuccess) return cuda_fail("init_process_group (nccl)", e);
    device = local;
    e = cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaMalloc((void **)&one_float, sizeof *one_float);
    if (e != cudaSuccess) return cuda_fail("init_process_group (nccl)", e);
    ncclResult_t r = rank == 0 ? ncclGetUniqueId(id) : ncclSuccess;
    return r == ncclSuccess ? 0 : nccl_fail("init_process_group: ncclGetUniqueId", r);
}

/* rank and size come in from the bootstrap backend (already joined). Every
 * rank first tells the others whether its setup worked, so that one rank's
 * failure is an error everywhere instead of the others waiting for an id
 * that never comes. */
static int init(int *rank, int *size)
{
    ncclUniqueId id = {0};
    int32_t ok = setup(*rank, &id) == 0;
    char why[512] = "";
    if (!ok) snprintf(why, sizeof why, "%s", host->last_error());
    if (host->bootstrap->all_reduce(NULL, &ok, 1, EM_INT32, EM_COMM_MIN, NULL)) return release();
    if (!ok) {
        release();
        if (why[0]) return host->set_error("%s", why);
        return host->set_error("init_process_group: another rank could not set up its GPU for backend 'nccl' "
                               "(its error names it)");
    }
    if (host->bootstrap->broadcast(NULL, &id, sizeof id, EM_UINT8, 0, NULL)) return release();
    atomic_store(&cancelled, false);
    nsubcomms = 0;
    ncclResult_t r = ncclCommInitRank(&comm, *size, id, *rank);
    if (r != ncclSuccess) {
        comm = NULL;
        nccl_fail("init_process_group: ncclCommInitRank", r);
        return release();
    }
    return 0;
}

/* After a cancel the communicators are gone (aborted), and the stream's
 * stuck work has ended. */
static int destroy(void)
{
    if (!comm) return 0;
    cudaStreamSynchronize(comm_stream);
    ncclResult_t r = atomic_load(&cancelled) ? ncclSuccess : ncclCommDestroy(comm);
    comm = NULL;
    release();
    return r == ncclSuccess ? 0 : nccl_fail("destroy_process_group", r);
}

/* Aborts every communicator once (subgroups first), remembering why. */
static void cancel(const char *why)
{
    pthread_mutex_lock(&cancel_lock);
    if (atomic_load(&cancelled) || !comm) {
        pthread_mutex_unlock(&cancel_lock);
        return;
    }
    snprintf(cancel_reason, sizeof cancel_reason, "%s", why);
    atomic_store(&cancelled, true);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    bool held = pthread_mutex_timedlock(&call_lock, &until) == 0;
    for (int i = nsubcomms - 1; i >= 0; i--) ncclCommAbort(subcomms[i]);
    ncclCommAbort(comm);
    if (held) pthread_mutex_unlock(&call_lock);
    pthread_mutex_unlock(&cancel_lock);
}

/* the communicators only: the engine then ends the job through MPI */
static void abort_comm(int code)
{
    (void)code;
    cancel("the job was aborted");
}

/* Every call on a cancelled backend fails naming why. */
static int check_cancelled(const char *what)
{
    if (!atomic_load(&cancelled)) return 0;
    return host->set_error("%s: the NCCL communicator was aborted: %s", what, cancel_reason);
}

/* the subgroup's communicator (an ncclComm_t from split), or init's */
static ncclComm_t on(void *g) { return g ? (ncclComm_t)g : comm; }

/* ncclCommSplit (NCCL 2.18) is collective over init's communicator, as
 * the engine's new_group is over the world; key: the rank's position in
 * the sorted list, so the subgroup numbers its members in that order. */
static int split(const int *ranks, int n, bool member, void **group)
{
    *group = NULL;
    if (check_cancelled("new_group")) return -1;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
    if (nsubcomms == subcomm_cap) {
        int cap = subcomm_cap ? 2 * subcomm_cap : 8;
        ncclComm_t *more = realloc(subcomms, (size_t)cap * sizeof *more);
        if (!more) return host->set_error("new_group: out of memory");
        subcomms = more;
        subcomm_cap = cap;
    }
    int rank = 0, key = 0;
    ncclResult_t r = ncclCommUserRank(comm, &rank);
    for (int i = 0; r == ncclSuccess && i < n; i++)
        if (ranks[i] == rank) key = i;
    ncclComm_t sub = NULL;
    if (r == ncclSuccess) r = ncclCommSplit(comm, member ? 0 : NCCL_SPLIT_NOCOLOR, key, &sub, NULL);
    if (r != ncclSuccess) return nccl_fail("new_group: ncclCommSplit", r);
    *group = sub;
    if (sub) {
        pthread_mutex_lock(&cancel_lock);
        subcomms[nsubcomms++] = sub;
        pthread_mutex_unlock(&cancel_lock);
    }
    return 0;
#else
    (void)ranks;
    (void)n;
    (void)member;
    return host->set_error("new_group: backend 'nccl' needs NCCL 2.18 or later for subgroups (ncclCommSplit); "
                           "this build has NCCL %d.%d", NCCL_MAJOR, NCCL_MINOR);
#endif
}

static int free_group(void *group)
{
    if (!group) return 0;
    cudaStreamSynchronize(comm_stream);
    pthread_mutex_lock(&cancel_lock);
    for (int i = 0; i < nsubcomms; i++) {
        if (subcomms[i] != group) continue;
        subcomms[i] = subcomms[--nsubcomms];
        break;
    }
    pthread_mutex_unlock(&cancel_lock);
    ncclResult_t r = atomic_load(&cancelled) ? ncclSuccess : ncclCommDestroy((ncclComm_t)group);
    return r == ncclSuccess ? 0 : nccl_fail("destroy_process_group", r);
}

/* The comm stream waits for the compute stream's work so far. Holds
 * call_lock until end. */
static int begin(const char *what)
{
    pthread_mutex_lock(&call_lock);
    if (check_cancelled(what)) {
        pthread_mutex_unlock(&call_lock);
        return -1;
    }
    cudaError_t e = cudaEventRecord(ready, compute);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(comm_stream, ready, 0);
    if (e == cudaSuccess) return 0;
    pthread_mutex_unlock(&call_lock);
    return cuda_fail(what, e);
}

/* After the NCCL call (on communicator c): a mark on the comm stream goes
 * to the watchdog; blocking, the compute stream waits for it; async, it is
 * the request too. */
static int end(const char *what, ncclComm_t c, ncclResult_t r, void **req)
{
    pthread_mutex_unlock(&call_lock);
    if (r != ncclSuccess) return nccl_fail(what, r);
    mark *m = mark_get();
    if (!m) return host->set_error("%s: cannot make a CUDA event (out of memory?)", what);
    m->comm = c;
    cudaError_t e = cudaEventRecord(m->ev, comm_stream);
    if (e == cudaSuccess && !req) e = cudaStreamWaitEvent(compute, m->ev, 0);
    if (e != cudaSuccess) {
        mark_put(m);
        return cuda_fail(what, e);
    }
    if (req) {
        atomic_fetch_add(&m->refs, 1);
        *req = m;
    }
    host->queued(m);
    return 0;
}

static int all_reduce(void *g, void *buf, size_t count, em_dtype d, em_comm_op op, void **req)
{
    if (begin("all_reduce")) return -1;
    return end("all_reduce", on(g), ncclAllReduce(buf, buf, count, nccl_type(d), nccl_op(op), on(g), comm_stream),
               req);
}

static int broadcast(void *g, void *buf, size_t count, em_dtype d, int root, void **req)
{
    if (begin("broadcast")) return -1;
    return end("broadcast", on(g), ncclBroadcast(buf, buf, count, nccl_type(d), root, on(g), comm_stream), req);
}

static int all_gather(void *g, const void *send, void *recv, size_t count, em_dtype d, void **req)
{
    if (begin("all_gather")) return -1;
    return end("all_gather", on(g), ncclAllGather(send, recv, count, nccl_type(d), on(g), comm_stream), req);
}

static int reduce_scatter(void *g, const void *send, void *recv, size_t count, em_dtype d, em_comm_op op,
                          void **req)
{
    if (begin("reduce_scatter")) return -1;
    return end("reduce_scatter", on(g),
               ncclReduceScatter(send, recv, count, nccl_type(d), nccl_op(op), on(g), comm_stream), req);
}

static int reduce(void *g, void *buf, size_t count, em_dtype d, em_comm_op op, int root, void **req)
{
    if (begin("reduce")) return -1;
    return end("reduce", on(g), ncclReduce(buf, buf, count, nccl_type(d), nccl_op(op), root, on(g), comm_stream),
               req);
}

/* A blocking barrier holds the host too (every rank has reached it and the
 * GPU work before it is done), as PyTorch's does. */
static int barrier(void *g, void **req)
{
    if (begin("barrier")) return -1;
    ncclResult_t r = ncclAllReduce(one_float, one_float, 1, ncclFloat32, ncclSum, on(g), comm_stream);
    if (end("barrier", on(g), r, req)) return -1;
    if (req) return 0;
    cudaError_t e = cudaStreamSynchronize(comm_stream);
    if (e != cudaSuccess) return cuda_fail("barrier", e);
    return check_cancelled("barrier");      /* the abort ended it, not the other ranks */
}

static int check_tag(const char *what, int tag)
{
    if (tag != 0)
        return host->set_error("%s: tag %d: the nccl backend has no message tags (NCCL matches sends and receives "
                               "by order); use tag 0", what, tag);
    return 0;
}

static int send(void *g, const void *buf, size_t count, em_dtype d, int peer, int tag, void **req)
{
    if (check_tag("send", tag) || begin("send")) return -1;
    return end("send", on(g), ncclSend(buf, count, nccl_type(d), peer, on(g), comm_stream), req);
}

static int recv(void *g, void *buf, size_t count, em_dtype d, int peer, int tag, int *source, void **req)
{
    if (check_tag("recv", tag) || begin("recv")) return -1;
    /* the engine refuses EM_COMM_ANY_SOURCE for CUDA tensors: NCCL has no
     * wildcard receive */
    if (source) *source = peer;
    return end("recv", on(g), ncclRecv(buf, count, nccl_type(d), peer, on(g), comm_stream), req);
}

/* Orders, does not block: the compute stream waits for the collective. */
static int wait(void *req)
{
    mark *m = req;
    if (check_cancelled("wait")) {
        mark_put(m);
        return -1;
    }
    cudaError_t e = cudaStreamWaitEvent(compute, m->ev, 0);
    mark_put(m);
    return e == cudaSuccess ? 0 : cuda_fail("wait", e);
}

/* NCCL's asynchronous error of communicator c, or ncclSuccess */
static ncclResult_t async_error(ncclComm_t c)
{
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(c, &async) != ncclSuccess) return ncclSuccess;
    return async == ncclInProgress ? ncclSuccess : async;
}

/* An abort (the watchdog's, on another thread) also ends stuck work: an
 * event that finishes while the query runs says nothing of the result if
 * the communicators were aborted meanwhile, so cancelled is read again after
 * it. The asynchronous error is read under call_lock, which an abort takes,
 * so the communicator is not freed under the query. */
static int test(void *req, bool *finished)
{
    mark *m = req;
    *finished = true;
    int rc = check_cancelled("is_completed");
    if (!rc) {
        cudaError_t e = cudaEventQuery(m->ev);
        if (e == cudaErrorNotReady) {
            /* a peer that died leaves the event pending forever: NCCL says so */
            pthread_mutex_lock(&call_lock);
            ncclResult_t async = atomic_load(&cancelled) ? ncclSuccess : async_error(m->comm);
            if (async != ncclSuccess) rc = nccl_fail("is_completed", async);
            pthread_mutex_unlock(&call_lock);
            if (!rc) rc = check_cancelled("is_completed");
            if (!rc) {
                *finished = false;
                return 0;
            }
        } else {
            rc = check_cancelled("is_completed");
            if (!rc && e != cudaSuccess) rc = cuda_fail("is_completed", e);
        }
    }
    mark_put(m);
    return rc;
}

/* The watchdog's thread: the device made current there once. */
static int poll(void *mk, char *why, size_t n)
{
    static _Thread_local int bound = -1;
    mark *m = mk;
    if (atomic_load(&cancelled)) {
        snprintf(why, n, "%s", cancel_reason);
        return -2;
    }
    if (bound != device && device >= 0 && cudaSetDevice(device) == cudaSuccess) bound = device;
    cudaError_t e = cudaEventQuery(m->ev);
    if (e == cudaSuccess) return 1;
    if (e != cudaErrorNotReady) {
        cudaGetLastError();
        snprintf(why, n, "CUDA error: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        return -1;
    }
    /* under call_lock: an abort from the program's thread (a failed work it
     * saw first) takes it before it frees the communicator. Tried, never
     * waited for: an enqueue that blocks holds it, and the watchdog must
     * still see the timeout. */
    if (pthread_mutex_trylock(&call_lock) != 0) return 0;
    ncclResult_t async = atomic_load(&cancelled) ? ncclSuccess : async_error(m->comm);
    if (async != ncclSuccess) {
        const char *last = ncclGetLastError(m->comm);
        snprintf(why, n, "NCCL error: %s%s%s", ncclGetErrorString(async), last && *last ? ": " : "",
                 last ? last : "");
    }
    pthread_mutex_unlock(&call_lock);
    return async == ncclSuccess ? 0 : -1;
}

static void drop_mark(void *m) { mark_put(m); }

static int rank_device(void) { return device; }

static const em_comm_backend nccl_backend = {
    .name = "nccl",
    .init = init,
    .destroy = destroy,
    .abort = abort_comm,
    .reduces = reduces,
    .split = split,
    .free_group = free_group,
    .device = rank_device,
    .all_reduce = all_reduce,
    .broadcast = broadcast,
    .all_gather = all_gather,
    .reduce_scatter = reduce_scatter,
    .reduce = reduce,
    .barrier = barrier,
    .send = send,
    .recv = recv,
    .wait = wait,
    .test = test,
    .poll = poll,
    .drop_mark = drop_mark,
    .cancel = cancel,
};

const em_comm_backend *em_nccl_backend_init(const em_comm_host *h, char *why, size_t n)
{
    int version = 0;
    if (ncclGetVersion(&version) != ncclSuccess || version < 21300) {
        /* ncclBfloat16 needs 2.10, ncclGetLastError 2.13 */
        snprintf(why, n, "NCCL %d.%d is too old: ember needs NCCL 2.13 or later", version / 10000,
                 version / 100 % 100);
        return NULL;
    }
    if (!h->bootstrap || !h->compute_stream || !h->queued) {
        snprintf(why, n, "the engine gave no bootstrap backend or compute stream");
        return NULL;
    }
    host = h;
    return &nccl_backend;
}
