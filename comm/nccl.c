/* nccl.c — the NCCL communication backend (engine/comm.h) for CUDA memory,
 * built into build/libember_nccl.so when the toolkit has nccl.h, and opened
 * by engine/distributed.c for init_process_group({backend = "nccl"}) after the
 * MPI backend, which bootstraps it: rank 0's ncclUniqueId travels to every
 * rank over MPI's broadcast (host->bootstrap), then each rank joins with
 * ncclCommInitRank on its local rank's GPU.
 *
 * Streams: NCCL runs on a communication stream of its own, so collectives
 * can overlap the kernels of the compute stream (the CUDA backend's one
 * stream per device, from em_cuda_stream in libember_cuda.so, handed over
 * as host->compute_stream). Before each collective the comm stream waits on
 * an event recorded on the compute stream (the data is ready); after a
 * blocking one the compute stream waits on an event recorded on the comm
 * stream (later kernels see the result). An async request is such an event:
 * wait() makes the compute stream wait on it without blocking the host
 * (PyTorch's semantics for NCCL work), test() queries it.
 *
 * The runtime: this library links the toolkit's shared libcudart, while
 * libember_cuda.so links cudart statically; both act on the device's primary
 * context through the driver, so pointers, streams and events are shared. */
#include "../engine/comm.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const em_comm_host *host;
static ncclComm_t comm;
static int device = -1;
static cudaStream_t comm_stream, compute;
static cudaEvent_t ready, done;       /* reused: a wait captures the event's state when queued */
static float *one_float;              /* the barrier's all_reduce */

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
    case EM_UINT8: case EM_BOOL: return ncclUint8;
    case EM_FLOAT16: return ncclFloat16;
    case EM_BFLOAT16: return ncclBfloat16;
    default: return ncclUint8;
    }
}

/* float16/bfloat16 are reduced in float32 by the engine, as over MPI, so a
 * sum is rounded once and both backends give the same values */
static bool reduces(em_dtype d) { return d != EM_FLOAT16 && d != EM_BFLOAT16; }

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

static int release(void)
{
    if (one_float) cudaFree(one_float);
    if (ready) cudaEventDestroy(ready);
    if (done) cudaEventDestroy(done);
    if (comm_stream) cudaStreamDestroy(comm_stream);
    one_float = NULL;
    ready = done = NULL;
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
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
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
    ncclResult_t r = ncclCommInitRank(&comm, *size, id, *rank);
    if (r != ncclSuccess) {
        comm = NULL;
        nccl_fail("init_process_group: ncclCommInitRank", r);
        return release();
    }
    return 0;
}

static int destroy(void)
{
    if (!comm) return 0;
    cudaStreamSynchronize(comm_stream);
    ncclResult_t r = ncclCommDestroy(comm);
    comm = NULL;
    release();
    return r == ncclSuccess ? 0 : nccl_fail("destroy_process_group", r);
}

/* the communicator only: the engine then ends the job through MPI */
static void abort_comm(int code)
{
    (void)code;
    if (comm) ncclCommAbort(comm);
    comm = NULL;
}

/* the subgroup's communicator (an ncclComm_t from split), or init's */
static ncclComm_t on(void *g) { return g ? (ncclComm_t)g : comm; }

/* ncclCommSplit (NCCL 2.18) is collective over init's communicator, as
 * the engine's new_group is over the world; key: the rank's position in
 * the sorted list, so the subgroup numbers its members in that order. */
static int split(const int *ranks, int n, bool member, void **group)
{
    *group = NULL;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
    int rank = 0, key = 0;
    ncclResult_t r = ncclCommUserRank(comm, &rank);
    for (int i = 0; r == ncclSuccess && i < n; i++)
        if (ranks[i] == rank) key = i;
    ncclComm_t sub = NULL;
    if (r == ncclSuccess) r = ncclCommSplit(comm, member ? 0 : NCCL_SPLIT_NOCOLOR, key, &sub, NULL);
    if (r != ncclSuccess) return nccl_fail("new_group: ncclCommSplit", r);
    *group = sub;
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
    ncclResult_t r = ncclCommDestroy((ncclComm_t)group);
    return r == ncclSuccess ? 0 : nccl_fail("destroy_process_group", r);
}

/* the comm stream waits for the compute stream's work so far */
static int begin(const char *what)
{
    cudaError_t e = cudaEventRecord(ready, compute);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(comm_stream, ready, 0);
    return e == cudaSuccess ? 0 : cuda_fail(what, e);
}

/* After the NCCL call: blocking, the compute stream waits for it; async, a
 * fresh event on the comm stream becomes the request. */
static int end(const char *what, ncclResult_t r, void **req)
{
    if (r != ncclSuccess) return nccl_fail(what, r);
    cudaError_t e;
    if (!req) {
        e = cudaEventRecord(done, comm_stream);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(compute, done, 0);
        return e == cudaSuccess ? 0 : cuda_fail(what, e);
    }
    cudaEvent_t ev;
    e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(ev, comm_stream);
    if (e != cudaSuccess) return cuda_fail(what, e);
    *req = ev;
    return 0;
}

static int all_reduce(void *g, void *buf, size_t count, em_dtype d, em_comm_op op, void **req)
{
    if (begin("all_reduce")) return -1;
    return end("all_reduce", ncclAllReduce(buf, buf, count, nccl_type(d), nccl_op(op), on(g), comm_stream), req);
}

static int broadcast(void *g, void *buf, size_t count, em_dtype d, int root, void **req)
{
    if (begin("broadcast")) return -1;
    return end("broadcast", ncclBroadcast(buf, buf, count, nccl_type(d), root, on(g), comm_stream), req);
}

static int all_gather(void *g, const void *send, void *recv, size_t count, em_dtype d, void **req)
{
    if (begin("all_gather")) return -1;
    return end("all_gather", ncclAllGather(send, recv, count, nccl_type(d), on(g), comm_stream), req);
}

static int reduce_scatter(void *g, const void *send, void *recv, size_t count, em_dtype d, em_comm_op op,
                          void **req)
{
    if (begin("reduce_scatter")) return -1;
    return end("reduce_scatter",
               ncclReduceScatter(send, recv, count, nccl_type(d), nccl_op(op), on(g), comm_stream), req);
}

static int reduce(void *g, void *buf, size_t count, em_dtype d, em_comm_op op, int root, void **req)
{
    if (begin("reduce")) return -1;
    return end("reduce", ncclReduce(buf, buf, count, nccl_type(d), nccl_op(op), root, on(g), comm_stream), req);
}

/* A blocking barrier holds the host too (every rank has reached it and the
 * GPU work before it is done), as PyTorch's does. */
static int barrier(void *g, void **req)
{
    if (begin("barrier")) return -1;
    ncclResult_t r = ncclAllReduce(one_float, one_float, 1, ncclFloat32, ncclSum, on(g), comm_stream);
    if (end("barrier", r, req)) return -1;
    if (req) return 0;
    cudaError_t e = cudaStreamSynchronize(comm_stream);
    return e == cudaSuccess ? 0 : cuda_fail("barrier", e);
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
    return end("send", ncclSend(buf, count, nccl_type(d), peer, on(g), comm_stream), req);
}

static int recv(void *g, void *buf, size_t count, em_dtype d, int peer, int tag, int *source, void **req)
{
    if (check_tag("recv", tag) || begin("recv")) return -1;
    /* the engine refuses EM_COMM_ANY_SOURCE for CUDA tensors: NCCL has no
     * wildcard receive */
    if (source) *source = peer;
    return end("recv", ncclRecv(buf, count, nccl_type(d), peer, on(g), comm_stream), req);
}

/* Orders, does not block: the compute stream waits for the collective. */
static int wait(void *req)
{
    cudaEvent_t ev = req;
    cudaError_t e = cudaStreamWaitEvent(compute, ev, 0);
    cudaEventDestroy(ev);
    return e == cudaSuccess ? 0 : cuda_fail("wait", e);
}

static int test(void *req, bool *finished)
{
    cudaEvent_t ev = req;
    cudaError_t e = cudaEventQuery(ev);
    *finished = e != cudaErrorNotReady;
    if (!*finished) {
        /* a peer that died leaves the event pending forever: NCCL says so */
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm, &async);
        if (async == ncclSuccess || async == ncclInProgress) return 0;
        *finished = true;
        cudaEventDestroy(ev);
        return nccl_fail("is_completed", async);
    }
    cudaEventDestroy(ev);
    return e == cudaSuccess ? 0 : cuda_fail("is_completed", e);
}

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
    if (!h->bootstrap || !h->compute_stream) {
        snprintf(why, n, "the engine gave no bootstrap backend or compute stream");
        return NULL;
    }
    host = h;
    return &nccl_backend;
}
