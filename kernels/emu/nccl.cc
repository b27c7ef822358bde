/*
 * nccl.cc — NCCL on the emulated device, for a world of one: the
 * communicator has one rank, so every collective hands the rank's own data
 * back (a sum, minimum, maximum or product over one contribution is that
 * contribution; an average divides by 1), written from NCCL's documented
 * semantics, in stream order. Send and receive to oneself pair up inside a
 * group (ncclGroupStart/End), as NCCL requires. ncclCommSplit gives another
 * world of one (or no communicator for NCCL_SPLIT_NOCOLOR). A communicator
 * of more ranks is refused: the emulator has one device and no peers.
 *
 * Faults, for tests of what a real job meets (a peer that never comes, a
 * broken connection): EMBER_CUDA_EMU_NCCL_HANG=N makes the Nth operation
 * (collective, send or receive; 1 the first) never finish: its work holds
 * the stream as a kernel waiting for a peer does, until the communicator is
 * aborted (ncclCommAbort, from any thread, lets it go, as NCCL's kernels
 * quit). EMBER_CUDA_EMU_NCCL_ERROR=N does the same, and when the stream
 * reaches the operation the communicator's asynchronous error becomes
 * ncclSystemError, as NCCL's proxy thread reports a failed connection.
 * ncclCommGetAsyncError and ncclCommAbort may be called from another
 * thread than the one that queues work, as a watchdog does.
 */
#include "emu.h"

#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <set>

/* what a stuck operation's queued work still sees after the communicator is gone */
struct comm_state {
    std::atomic<bool> aborted{false};
    std::atomic<int> async{ncclSuccess};
};

struct ncclComm {
    int rank = 0;
    std::shared_ptr<comm_state> state = std::make_shared<comm_state>();
};

namespace {

std::recursive_mutex lock;             /* over comms and last_error: a watchdog thread calls in */
#define NCCL_LOCK std::lock_guard<std::recursive_mutex> nccl_guard(lock)
std::set<ncclComm *> comms;
int group_depth;
unsigned long long operations;         /* started so far, for the faults */

unsigned long long env_number(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : 0;
}

struct pending_send {
    const void *buf;
    size_t bytes;
    cudaStream_t stream;
};
std::deque<pending_send> sends;                 /* to oneself, inside the current group */
char last_error[256];

size_t type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

ncclResult_t usage(const char *fmt, const char *what)
{
    snprintf(last_error, sizeof last_error, fmt, what);
    return ncclInvalidUsage;
}

ncclResult_t check(ncclComm_t comm, ncclDataType_t t, ncclRedOp_t op, const char *what)
{
    NCCL_LOCK;     /* only here: work is queued without it, so an abort is never held up */
    if (!comms.count(comm)) {
        snprintf(last_error, sizeof last_error, "%s: invalid communicator", what);
        return ncclInvalidArgument;
    }
    if (!type_size(t)) {
        snprintf(last_error, sizeof last_error, "%s: invalid data type %d", what, (int)t);
        return ncclInvalidArgument;
    }
    if ((int)op < 0 || (int)op > (int)ncclAvg) {
        snprintf(last_error, sizeof last_error, "%s: invalid reduction %d", what, (int)op);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

/* The injected faults: the Nth operation never finishes (until aborted),
 * and with an error sets the asynchronous error when the stream reaches it.
 * Whether this operation is that one: its work is queued here then. */
bool stuck(ncclComm_t comm, cudaStream_t s, const char *what, ncclResult_t *r)
{
    static const unsigned long long hang = env_number("EMBER_CUDA_EMU_NCCL_HANG");
    static const unsigned long long error = env_number("EMBER_CUDA_EMU_NCCL_ERROR");
    unsigned long long n = ++operations;
    if (n != hang && n != error) return false;
    std::shared_ptr<comm_state> st;
    {
        NCCL_LOCK;
        if (comms.count(comm)) st = comm->state;
    }
    if (!st) {
        *r = ncclInvalidArgument;
        return true;
    }
    bool fails = n == error;
    cudaError_t e = emu::submit_pending(s, what, [st, fails]() {
        if (fails) st->async = ncclSystemError;
        return !st->aborted;
    });
    if (fails) snprintf(last_error, sizeof last_error, "%s: a connection to a peer failed (injected by "
                        "EMBER_CUDA_EMU_NCCL_ERROR)", what);
    *r = e == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
    return true;
}

/* The one rank's result: its own data, copied where NCCL puts it. */
ncclResult_t copy(ncclComm_t comm, const void *src, void *dst, size_t bytes, cudaStream_t s, const char *what)
{
    ncclResult_t r;
    if (stuck(comm, s, what, &r)) return r;
    if (!bytes) return ncclSuccess;
    if (!emu::is_device_pointer(src) || !emu::is_device_pointer(dst)) {
        snprintf(last_error, sizeof last_error, "%s: buffers must be device memory", what);
        return ncclInvalidArgument;
    }
    cudaError_t e = emu::submit(s, what, [src, dst, bytes, what]() {
        if (emu::device_range(src, bytes, what) && emu::device_range(dst, bytes, what)) memmove(dst, src, bytes);
    });
    return e == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

} // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *version)
{
    if (!version) return ncclInvalidArgument;
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    if (!id) return ncclInvalidArgument;
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "ember-emulated-nccl");
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    NCCL_LOCK;
    (void)id;
    if (!comm) return ncclInvalidArgument;
    if (nranks != 1 || rank != 0) {
        snprintf(last_error, sizeof last_error, "ncclCommInitRank: the emulated device runs a world of one "
                 "(asked for rank %d of %d)", rank, nranks);
        return ncclInvalidArgument;
    }
    ncclComm *c = new ncclComm();
    comms.insert(c);
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    NCCL_LOCK;
    (void)key;
    (void)config;
    if (!comms.count(comm) || !newcomm) return ncclInvalidArgument;
    if (color == NCCL_SPLIT_NOCOLOR) {
        *newcomm = NULL;
        return ncclSuccess;
    }
    if (color < 0) return ncclInvalidArgument;
    ncclComm *c = new ncclComm();
    comms.insert(c);
    *newcomm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    NCCL_LOCK;
    if (!comm) return ncclSuccess;
    if (!comms.erase(comm)) return ncclInvalidArgument;
    delete comm;
    return ncclSuccess;
}

/* Frees the communicator at once, without waiting for its work: a stuck
 * operation's work ends (unfinished) */
ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    NCCL_LOCK;
    if (!comm) return ncclSuccess;
    if (!comms.erase(comm)) return ncclInvalidArgument;
    comm->state->aborted = true;
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    NCCL_LOCK;
    if (!comms.count(comm) || !rank) return ncclInvalidArgument;
    *rank = comm->rank;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    NCCL_LOCK;
    if (!comms.count(comm) || !count) return ncclInvalidArgument;
    *count = 1;
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *e)
{
    NCCL_LOCK;
    if (!comms.count(comm) || !e) return ncclInvalidArgument;
    *e = emu::sticky_error_for_nccl() ? ncclUnhandledCudaError : (ncclResult_t)comm->state->async.load();
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t comm)
{
    NCCL_LOCK;
    (void)comm;
    return last_error;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, op, "ncclAllReduce");
    return r != ncclSuccess ? r : copy(comm, sendbuff, recvbuff, count * type_size(t), s, "ncclAllReduce");
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t t, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, op, "ncclReduce");
    if (r != ncclSuccess) return r;
    if (root != 0) return usage("%s: root must be 0 in a world of one", "ncclReduce");
    return copy(comm, sendbuff, recvbuff, count * type_size(t), s, "ncclReduce");
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t t, int root,
                           ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, ncclSum, "ncclBroadcast");
    if (r != ncclSuccess) return r;
    if (root != 0) return usage("%s: root must be 0 in a world of one", "ncclBroadcast");
    return copy(comm, sendbuff, recvbuff, count * type_size(t), s, "ncclBroadcast");
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t t,
                           ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, ncclSum, "ncclAllGather");
    return r != ncclSuccess ? r : copy(comm, sendbuff, recvbuff, sendcount * type_size(t), s, "ncclAllGather");
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, op, "ncclReduceScatter");
    return r != ncclSuccess ? r : copy(comm, sendbuff, recvbuff, recvcount * type_size(t), s, "ncclReduceScatter");
}

ncclResult_t ncclGroupStart()
{
    NCCL_LOCK;
    group_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd()
{
    NCCL_LOCK;
    if (group_depth == 0) return usage("%s: no group was started", "ncclGroupEnd");
    if (--group_depth == 0 && !sends.empty()) {
        sends.clear();
        return usage("%s: a send to oneself had no matching receive in the group", "ncclGroupEnd");
    }
    return ncclSuccess;
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t s)
{
    ncclResult_t r = check(comm, t, ncclSum, "ncclSend");
    if (r != ncclSuccess) return r;
    if (peer != 0) return usage("%s: peer must be 0 in a world of one", "ncclSend");
    if (group_depth == 0)
        return usage("%s: a send to oneself outside ncclGroupStart/End would wait forever", "ncclSend");
    sends.push_back(pending_send{sendbuff, count * type_size(t), s});
    return ncclSuccess;
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, ncclSum, "ncclRecv");
    if (r != ncclSuccess) return r;
    if (peer != 0) return usage("%s: peer must be 0 in a world of one", "ncclRecv");
    if (sends.empty())
        return usage("%s: a receive from oneself needs a send before it in the same group", "ncclRecv");
    pending_send p = sends.front();
    sends.pop_front();
    if (p.bytes != count * type_size(t)) return usage("%s: the send and the receive differ in size", "ncclRecv");
    return copy(comm, p.buf, recvbuff, p.bytes, s, "ncclRecv");
}

} // extern "C"
