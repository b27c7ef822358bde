/*
 * nccl.cc — NCCL on the emulated device, for a world of one: the
 * communicator has one rank, so every collective hands the rank's own data
 * back (a sum, minimum, maximum or product over one contribution is that
 * contribution; an average divides by 1), written from NCCL's documented
 * semantics, in stream order. Send and receive to oneself pair up inside a
 * group (ncclGroupStart/End), as NCCL requires. ncclCommSplit gives another
 * world of one (or no communicator for NCCL_SPLIT_NOCOLOR). A communicator
 * of more ranks is refused: the emulator has one device and no peers.
 */
#include "emu.h"

#include <nccl.h>
#include <stdio.h>
#include <string.h>

#include <deque>
#include <set>

struct ncclComm {
    int rank = 0;
    ncclResult_t async = ncclSuccess;
};

namespace {

std::set<ncclComm *> comms;
int group_depth;

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

/* The one rank's result: its own data, copied where NCCL puts it. */
ncclResult_t copy(const void *src, void *dst, size_t bytes, cudaStream_t s, const char *what)
{
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
    if (!comm) return ncclSuccess;
    if (!comms.erase(comm)) return ncclInvalidArgument;
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comms.count(comm) || !rank) return ncclInvalidArgument;
    *rank = comm->rank;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comms.count(comm) || !count) return ncclInvalidArgument;
    *count = 1;
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *e)
{
    if (!comms.count(comm) || !e) return ncclInvalidArgument;
    *e = emu::sticky_error_for_nccl() ? ncclUnhandledCudaError : comm->async;
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
    (void)comm;
    return last_error;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, op, "ncclAllReduce");
    return r != ncclSuccess ? r : copy(sendbuff, recvbuff, count * type_size(t), s, "ncclAllReduce");
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t t, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, op, "ncclReduce");
    if (r != ncclSuccess) return r;
    if (root != 0) return usage("%s: root must be 0 in a world of one", "ncclReduce");
    return copy(sendbuff, recvbuff, count * type_size(t), s, "ncclReduce");
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t t, int root,
                           ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, ncclSum, "ncclBroadcast");
    if (r != ncclSuccess) return r;
    if (root != 0) return usage("%s: root must be 0 in a world of one", "ncclBroadcast");
    return copy(sendbuff, recvbuff, count * type_size(t), s, "ncclBroadcast");
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t t,
                           ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, ncclSum, "ncclAllGather");
    return r != ncclSuccess ? r : copy(sendbuff, recvbuff, sendcount * type_size(t), s, "ncclAllGather");
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = check(comm, t, op, "ncclReduceScatter");
    return r != ncclSuccess ? r : copy(sendbuff, recvbuff, recvcount * type_size(t), s, "ncclReduceScatter");
}

ncclResult_t ncclGroupStart()
{
    group_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd()
{
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
    return copy(p.buf, recvbuff, p.bytes, s, "ncclRecv");
}

} // extern "C"
