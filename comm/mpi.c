/* mpi.c — the MPI communication backend (engine/comm.h), built into
 * build/libember_mpi.so and opened by engine/distributed.c on the first
 * init_process_group. CPU buffers only. Every collective runs on a
 * communicator duplicated from MPI_COMM_WORLD, with MPI_ERRORS_RETURN so that
 * a failure comes back as a message instead of ending the process. */
#include "../engine/comm.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const em_comm_host *host;
static MPI_Comm comm = MPI_COMM_NULL;

static int fail(const char *what, int code)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", code);
    return host->set_error("%s: %s", what, msg);
}

static MPI_Datatype mpi_type(em_dtype d)
{
    switch (d) {
    case EM_FLOAT32: return MPI_FLOAT;
    case EM_FLOAT64: return MPI_DOUBLE;
    case EM_INT64: return MPI_INT64_T;
    case EM_INT32: return MPI_INT32_T;
    case EM_UINT8: case EM_BOOL: return MPI_UINT8_T;
    /* carried as bits; MPI has no half types to reduce */
    case EM_FLOAT16: case EM_BFLOAT16: return MPI_UINT16_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static bool reduces(em_dtype d) { return d != EM_FLOAT16 && d != EM_BFLOAT16; }

static MPI_Op mpi_op(em_comm_op op)
{
    switch (op) {
    case EM_COMM_MAX: return MPI_MAX;
    case EM_COMM_MIN: return MPI_MIN;
    case EM_COMM_PRODUCT: return MPI_PROD;
    default: return MPI_SUM;
    }
}

/* MPI counts are int: refuse what does not fit rather than wrap */
static int check_count(const char *what, size_t count)
{
    if (count > (size_t)INT32_MAX)
        return host->set_error("%s: %zu elements in one transfer; MPI takes at most %d", what, count, INT32_MAX);
    return 0;
}

static void finalize_at_exit(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
}

static int init(int *rank, int *size)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int rc = MPI_Init(NULL, NULL);
        if (rc != MPI_SUCCESS) return host->set_error("MPI_Init failed (code %d)", rc);
        atexit(finalize_at_exit);
        /* a failure in the world communicator too comes back as a value */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    }
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (rc != MPI_SUCCESS) return fail("MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, rank);
    MPI_Comm_size(comm, size);
    return 0;
}

static int destroy(void)
{
    if (comm == MPI_COMM_NULL) return 0;
    int rc = MPI_Comm_free(&comm);
    comm = MPI_COMM_NULL;
    return rc == MPI_SUCCESS ? 0 : fail("MPI_Comm_free", rc);
}

static void abort_job(int code)
{
    MPI_Abort(comm != MPI_COMM_NULL ? comm : MPI_COMM_WORLD, code);
}

/* A started transfer's request lives on the heap until wait/test free it;
 * a receive also says where the sender's rank goes. */
typedef struct mreq {
    MPI_Request r;
    int *source;
} mreq;

static int finish(const char *what, int rc, mreq *r, void **req)
{
    if (rc != MPI_SUCCESS) {
        free(r);
        return fail(what, rc);
    }
    if (req) *req = r;
    return 0;
}

static mreq *new_request(void **req)
{
    if (!req) return NULL;
    mreq *r = calloc(1, sizeof *r);
    if (!r) host->set_error("distributed: out of memory for a request");
    return r;
}

/* the subgroup's communicator, or init's */
static MPI_Comm on(void *g) { return g ? *(MPI_Comm *)g : comm; }

static int split(const int *ranks, int n, bool member, void **group)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    int key = 0;
    for (int i = 0; i < n; i++)
        if (ranks[i] == rank) key = i;
    MPI_Comm sub = MPI_COMM_NULL;
    *group = NULL;
    int rc = MPI_Comm_split(comm, member ? 0 : MPI_UNDEFINED, key, &sub);
    if (rc != MPI_SUCCESS) return fail("new_group: MPI_Comm_split", rc);
    if (!member) return 0;
    MPI_Comm *h = malloc(sizeof *h);
    if (!h) {
        MPI_Comm_free(&sub);
        return host->set_error("new_group: out of memory");
    }
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    *h = sub;
    *group = h;
    return 0;
}

static int free_group(void *group)
{
    MPI_Comm *h = group;
    if (!h) return 0;
    int rc = MPI_Comm_free(h);
    free(h);
    return rc == MPI_SUCCESS ? 0 : fail("destroy_process_group: MPI_Comm_free", rc);
}

static int all_reduce(void *g, void *buf, size_t count, em_dtype d, em_comm_op op, void **req)
{
    if (check_count("all_reduce", count)) return -1;
    mreq *r = new_request(req);
    if (req && !r) return -1;
    int rc = r ? MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, mpi_type(d), mpi_op(op), on(g), &r->r)
               : MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, mpi_type(d), mpi_op(op), on(g));
    return finish("all_reduce", rc, r, req);
}

static int broadcast(void *g, void *buf, size_t count, em_dtype d, int root, void **req)
{
    if (check_count("broadcast", count)) return -1;
    mreq *r = new_request(req);
    if (req && !r) return -1;
    int rc = r ? MPI_Ibcast(buf, (int)count, mpi_type(d), root, on(g), &r->r)
               : MPI_Bcast(buf, (int)count, mpi_type(d), root, on(g));
    return finish("broadcast", rc, r, req);
}

static int all_gather(void *g, const void *send, void *recv, size_t count, em_dtype d, void **req)
{
    if (check_count("all_gather", count)) return -1;
    mreq *r = new_request(req);
    if (req && !r) return -1;
    MPI_Datatype t = mpi_type(d);
    int rc = r ? MPI_Iallgather(send, (int)count, t, recv, (int)count, t, on(g), &r->r)
               : MPI_Allgather(send, (int)count, t, recv, (int)count, t, on(g));
    return finish("all_gather", rc, r, req);
}

static int reduce_scatter(void *g, const void *send, void *recv, size_t count, em_dtype d, em_comm_op op,
                          void **req)
{
    if (check_count("reduce_scatter", count)) return -1;
    mreq *r = new_request(req);
    if (req && !r) return -1;
    int rc = r ? MPI_Ireduce_scatter_block(send, recv, (int)count, mpi_type(d), mpi_op(op), on(g), &r->r)
               : MPI_Reduce_scatter_block(send, recv, (int)count, mpi_type(d), mpi_op(op), on(g));
    return finish("reduce_scatter", rc, r, req);
}

static int reduce(void *g, void *buf, size_t count, em_dtype d, em_comm_op op, int root, void **req)
{
    if (check_count("reduce", count)) return -1;
    int rank;
    MPI_Comm_rank(on(g), &rank);
    /* MPI_IN_PLACE is the root's send buffer only; the others send buf */
    const void *send = rank == root ? MPI_IN_PLACE : buf;
    void *recv = rank == root ? buf : NULL;
    mreq *r = new_request(req);
    if (req && !r) return -1;
    int rc = r ? MPI_Ireduce(send, recv, (int)count, mpi_type(d), mpi_op(op), root, on(g), &r->r)
               : MPI_Reduce(send, recv, (int)count, mpi_type(d), mpi_op(op), root, on(g));
    return finish("reduce", rc, r, req);
}

static int barrier(void *g, void **req)
{
    mreq *r = new_request(req);
    if (req && !r) return -1;
    int rc = r ? MPI_Ibarrier(on(g), &r->r) : MPI_Barrier(on(g));
    return finish("barrier", rc, r, req);
}

static int send(void *g, const void *buf, size_t count, em_dtype d, int peer, int tag, void **req)
{
    if (check_count("send", count)) return -1;
    mreq *r = new_request(req);
    if (req && !r) return -1;
    int rc = r ? MPI_Isend(buf, (int)count, mpi_type(d), peer, tag, on(g), &r->r)
               : MPI_Send(buf, (int)count, mpi_type(d), peer, tag, on(g));
    return finish("send", rc, r, req);
}

static int recv(void *g, void *buf, size_t count, em_dtype d, int peer, int tag, int *source, void **req)
{
    if (check_count("recv", count)) return -1;
    mreq *r = new_request(req);
    if (req && !r) return -1;
    if (peer == EM_COMM_ANY_SOURCE) peer = MPI_ANY_SOURCE;
    MPI_Status st;
    int rc;
    if (r) {
        r->source = source;
        rc = MPI_Irecv(buf, (int)count, mpi_type(d), peer, tag, on(g), &r->r);
    } else {
        rc = MPI_Recv(buf, (int)count, mpi_type(d), peer, tag, on(g), &st);
        if (rc == MPI_SUCCESS && source) *source = st.MPI_SOURCE;
    }
    return finish("recv", rc, r, req);
}

static int wait(void *req)
{
    mreq *r = req;
    MPI_Status st;
    int rc = MPI_Wait(&r->r, &st);
    if (rc == MPI_SUCCESS && r->source) *r->source = st.MPI_SOURCE;
    free(r);
    return rc == MPI_SUCCESS ? 0 : fail("wait", rc);
}

static int test(void *req, bool *done)
{
    mreq *r = req;
    MPI_Status st;
    int flag = 0;
    int rc = MPI_Test(&r->r, &flag, &st);
    *done = flag != 0 || rc != MPI_SUCCESS;
    if (flag && rc == MPI_SUCCESS && r->source) *r->source = st.MPI_SOURCE;
    if (*done) free(r);
    return rc == MPI_SUCCESS ? 0 : fail("is_completed", rc);
}

static const em_comm_backend mpi_backend = {
    .name = "mpi",
    .init = init,
    .destroy = destroy,
    .abort = abort_job,
    .reduces = reduces,
    .split = split,
    .free_group = free_group,
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

const em_comm_backend *em_mpi_backend_init(const em_comm_host *h, char *why, size_t n)
{
    (void)why;
    (void)n;
    host = h;
    return &mpi_backend;
}
