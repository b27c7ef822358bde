/* mpi.c — the MPI communication backend (engine/comm.h), built into
 * build/libember_mpi.so and opened by engine/distributed.c on the first
 * init_process_group. CPU buffers only. Every collective runs on a
 * communicator duplicated from MPI_COMM_WORLD, with MPI_ERRORS_RETURN so that
 * a failure comes back as a message instead of ending the process. */
#include "../engine/comm.h"

#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const em_comm_host *host;
static MPI_Comm comm = MPI_COMM_NULL;
static int world_rank;   /* this process's rank in comm */

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
    case EM_INT16: return MPI_INT16_T;
    case EM_INT8: return MPI_INT8_T;
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

static bool threaded;   /* MPI gave MPI_THREAD_SERIALIZED: async collectives on a thread */
static bool comm_thread_idle(void);
static void stop_thread(void);

static void finalize_at_exit(void)
{
    /* a collective still running on the communication thread (a peer gone)
     * would hold MPI_Finalize, and so the exit, for ever: leave MPI as it
     * is, and mpirun ends the job of a process that exits unfinalised */
    if (!comm_thread_idle()) return;
    stop_thread();
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
}

static int init(int *rank, int *size)
{
    int inited = 0;
    MPI_Initialized(&inited);
    int provided = MPI_THREAD_SINGLE;
    if (!inited) {
        /* EMBER_MPI_THREADS=single: no communication thread, so OpenMPI
         * takes none of its locks (0.12 us a call at 1 KB in one A/B of a
         * plain C loop), and an async collective runs at the call (DDP's
         * buckets then reduce inside backward's hooks, without overlap) */
        const char *mode = getenv("EMBER_MPI_THREADS");
        int want = mode && strcmp(mode, "single") == 0 ? MPI_THREAD_SINGLE : MPI_THREAD_SERIALIZED;
        int rc = MPI_Init_thread(NULL, NULL, want, &provided);
        if (rc != MPI_SUCCESS) return host->set_error("MPI_Init failed (code %d)", rc);
        atexit(finalize_at_exit);
        /* a failure in the world communicator too comes back as a value */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    } else {
        MPI_Query_thread(&provided);
    }
    threaded = provided >= MPI_THREAD_SERIALIZED;
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (rc != MPI_SUCCESS) return fail("MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, rank);
    MPI_Comm_size(comm, size);
    world_rank = *rank;
    return 0;
}

static int destroy(void)
{
    if (comm == MPI_COMM_NULL) return 0;
    stop_thread();   /* after the queued collectives */
    int rc = MPI_Comm_free(&comm);
    comm = MPI_COMM_NULL;
    return rc == MPI_SUCCESS ? 0 : fail("MPI_Comm_free", rc);
}

static void abort_job(int code)
{
    MPI_Abort(comm != MPI_COMM_NULL ? comm : MPI_COMM_WORLD, code);
}

/* ---- asynchronous collectives: a communication thread ----------------------
 *
 * OpenMPI's nonblocking collectives (libnbc) advance only inside MPI calls
 * and use slower algorithms than the blocking ones (an all_reduce of 1 MB
 * started and waited for took 2.0 ms where MPI_Allreduce took 0.8 ms), so a
 * gradient bucket started during backward would neither overlap nor be
 * quick. As PyTorch's ProcessGroupMPI does, an async collective is queued to
 * one communication thread that runs the blocking call; the queue keeps the
 * program's order, which every rank shares. A blocking collective runs on
 * the calling thread once the queue is empty, so the order holds and the
 * common call pays no hand-over. MPI is initialised MPI_THREAD_SERIALIZED:
 * the thread holds `mpi_lock` for each call it makes, and so does the
 * caller for point-to-point calls while the thread may be working. The
 * thread sleeps on a condition variable when the queue is empty. */

enum kind { K_ALL_REDUCE, K_BROADCAST, K_ALL_GATHER, K_REDUCE_SCATTER, K_REDUCE, K_BARRIER, K_P2P };

typedef struct request {
    enum kind kind;
    const char *what;
    const void *send;          /* all_gather, reduce_scatter, reduce (MPI_IN_PLACE at the root) */
    void *buf;                 /* what is written (all_reduce and broadcast in place) */
    int count;
    MPI_Datatype type;
    MPI_Op op;
    int root;
    MPI_Comm comm;             /* the world's (init's) or a subgroup's */
    MPI_Request mpi;           /* K_P2P: MPI's own request */
    int *source;               /* K_P2P receive: where the sender's rank goes */
    bool done;                 /* queued collectives: set by the thread under queue_lock */
    char error[MPI_MAX_ERROR_STRING + 64];
    struct request *next;
} request;

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;    /* one thread in MPI at a time */
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cv = PTHREAD_COND_INITIALIZER;      /* work queued, or stop */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;       /* a job finished */
static request *queue_head, *queue_tail;
static request *running;       /* the collective being run, by the thread or a waiting caller */
static int pending;            /* queued or running collectives (queue_lock) */
static bool thread_started, thread_stop;
static pthread_t comm_thread;

static int run_collective(const request *q)
{
    switch (q->kind) {
    case K_ALL_REDUCE: return MPI_Allreduce(MPI_IN_PLACE, q->buf, q->count, q->type, q->op, q->comm);
    case K_BROADCAST: return MPI_Bcast(q->buf, q->count, q->type, q->root, q->comm);
    case K_ALL_GATHER: return MPI_Allgather(q->send, q->count, q->type, q->buf, q->count, q->type, q->comm);
    case K_REDUCE_SCATTER: return MPI_Reduce_scatter_block(q->send, q->buf, q->count, q->type, q->op, q->comm);
    case K_REDUCE: return MPI_Reduce(q->send, q->buf, q->count, q->type, q->op, q->root, q->comm);
    case K_BARRIER: return MPI_Barrier(q->comm);
    default: return MPI_ERR_OTHER;
    }
}

/* The message of a failed call, made on the thread that saw it (the
 * engine's error is per thread: the caller raises it at wait). */
static void note_error(request *q, int code)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", code);
    snprintf(q->error, sizeof q->error, "%s: %s", q->what, msg);
}

/* The next queued collective, now the caller's to run; NULL while one is
 * running (one at a time keeps the program's order) or none is queued.
 * Under queue_lock. */
static request *take_job(void)
{
    if (running || !queue_head) return NULL;
    request *q = queue_head;
    queue_head = q->next;
    if (!queue_head) queue_tail = NULL;
    running = q;
    return q;
}

/* Runs a job taken with take_job; called and returning with queue_lock held. */
static void run_job(request *q)
{
    pthread_mutex_unlock(&queue_lock);
    pthread_mutex_lock(&mpi_lock);
    int rc = run_collective(q);
    pthread_mutex_unlock(&mpi_lock);
    if (rc != MPI_SUCCESS) note_error(q, rc);
    pthread_mutex_lock(&queue_lock);
    q->done = true;
    running = NULL;
    pending--;
    pthread_cond_broadcast(&done_cv);
    pthread_cond_signal(&queue_cv);   /* the next one may be the thread's */
}

static void *comm_main(void *arg)
{
    (void)arg;
    /* signals (the shell's Ctrl-C) belong to the thread running Lua */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&queue_lock);
    for (;;) {
        request *q = take_job();
        if (q) {
            run_job(q);
            continue;
        }
        if (thread_stop && !queue_head && !running) break;
        pthread_cond_wait(&queue_cv, &queue_lock);
    }
    pthread_mutex_unlock(&queue_lock);
    return NULL;
}

/* Until `until` has run, or with NULL every queued collective. A caller
 * that would only sleep runs the next queued collective itself when the
 * thread has not started it: on a busy machine the thread may not get a
 * core for a while, and the caller has nothing else to do. Under
 * queue_lock. */
static void help_until(request *until)
{
    while (until ? !until->done : pending > 0) {
        request *q = take_job();
        if (q) run_job(q);
        else pthread_cond_wait(&done_cv, &queue_lock);
    }
}

/* Until every queued collective has run (the caller's next MPI call comes
 * after them, in program order). */
static void drain(void)
{
    pthread_mutex_lock(&queue_lock);
    help_until(NULL);
    pthread_mutex_unlock(&queue_lock);
}

static bool comm_thread_idle(void)
{
    pthread_mutex_lock(&queue_lock);
    bool idle = pending == 0;
    pthread_mutex_unlock(&queue_lock);
    return idle;
}

/* After the queued collectives: the thread ends when its queue is empty. */
static void stop_thread(void)
{
    if (!thread_started) return;
    pthread_mutex_lock(&queue_lock);
    thread_stop = true;
    pthread_cond_signal(&queue_cv);
    pthread_mutex_unlock(&queue_lock);
    pthread_join(comm_thread, NULL);
    thread_started = thread_stop = false;
}

/* Runs the collective described by q: blocking (req NULL) on this thread
 * after the queued ones; async on the communication thread, the request a
 * heap copy of q that wait/test complete and free. */
static int collective(const request *q, void **req)
{
    if (q->count < 0) return -1;
    if (!req) {
        /* pending is only raised by this thread: 0 here stays 0 */
        if (thread_started) drain();
        int rc = run_collective(q);
        return rc == MPI_SUCCESS ? 0 : fail(q->what, rc);
    }
    if (!threaded) {
        /* no thread (EMBER_MPI_THREADS=single): the blocking call now, and a
         * request already complete. Never MPI's nonblocking collectives: a
         * nonblocking collective does not match a blocking one (MPI-3), so a
         * rank waiting in MPI_Allreduce would hang beside a peer's
         * MPI_Iallreduce of the same step */
        int rc = run_collective(q);
        if (rc != MPI_SUCCESS) return fail(q->what, rc);
        request *r = malloc(sizeof *r);
        if (!r) return host->set_error("%s: out of memory for a request", q->what);
        *r = *q;
        r->done = true;
        r->error[0] = '\0';
        *req = r;
        return 0;
    }
    request *r = malloc(sizeof *r);
    if (!r) return host->set_error("%s: out of memory for a request", q->what);
    *r = *q;
    r->done = false;
    r->error[0] = '\0';
    r->next = NULL;
    pthread_mutex_lock(&queue_lock);
    if (!thread_started) {
        if (pthread_create(&comm_thread, NULL, comm_main, NULL) != 0) {
            pthread_mutex_unlock(&queue_lock);
            free(r);
            return host->set_error("%s: cannot start the communication thread", q->what);
        }
        thread_started = true;
    }
    if (queue_tail) queue_tail->next = r;
    else queue_head = r;
    queue_tail = r;
    pending++;
    pthread_cond_signal(&queue_cv);
    pthread_mutex_unlock(&queue_lock);
    *req = r;
    return 0;
}

/* MPI counts are int: refuse what does not fit rather than wrap */
static int to_count(const char *what, size_t count)
{
    if (count > (size_t)INT32_MAX)
        return host->set_error("%s: %zu elements in one transfer; MPI takes at most %d", what, count, INT32_MAX);
    return (int)count;
}

/* A subgroup: its communicator and this process's rank in it, read once
 * (asking MPI while the communication thread is inside a collective would
 * break MPI_THREAD_SERIALIZED). */
typedef struct subgroup {
    MPI_Comm comm;
    int rank;
} subgroup;

/* the subgroup's communicator, or init's */
static MPI_Comm on(void *g) { return g ? ((subgroup *)g)->comm : comm; }
static int rank_in(void *g) { return g ? ((subgroup *)g)->rank : world_rank; }

/* Collective over the world, so after the queued collectives (which may
 * also use the communicator being freed). */
static int split(const int *ranks, int n, bool member, void **group)
{
    if (thread_started) drain();
    int rank = world_rank;
    int key = 0;
    for (int i = 0; i < n; i++)
        if (ranks[i] == rank) key = i;
    MPI_Comm sub = MPI_COMM_NULL;
    *group = NULL;
    int rc = MPI_Comm_split(comm, member ? 0 : MPI_UNDEFINED, key, &sub);
    if (rc != MPI_SUCCESS) return fail("new_group: MPI_Comm_split", rc);
    if (!member) return 0;
    subgroup *h = malloc(sizeof *h);
    if (!h) {
        MPI_Comm_free(&sub);
        return host->set_error("new_group: out of memory");
    }
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    h->comm = sub;
    MPI_Comm_rank(sub, &h->rank);
    *group = h;
    return 0;
}

static int free_group(void *group)
{
    subgroup *h = group;
    if (!h) return 0;
    if (thread_started) drain();
    int rc = MPI_Comm_free(&h->comm);
    free(h);
    return rc == MPI_SUCCESS ? 0 : fail("destroy_process_group: MPI_Comm_free", rc);
}

static int all_reduce(void *g, void *buf, size_t count, em_dtype d, em_comm_op op, void **req)
{
    request q = {.kind = K_ALL_REDUCE, .what = "all_reduce", .comm = on(g), .buf = buf, .count = to_count("all_reduce", count),
                 .type = mpi_type(d), .op = mpi_op(op)};
    return collective(&q, req);
}

static int broadcast(void *g, void *buf, size_t count, em_dtype d, int root, void **req)
{
    request q = {.kind = K_BROADCAST, .what = "broadcast", .comm = on(g), .buf = buf, .count = to_count("broadcast", count),
                 .type = mpi_type(d), .root = root};
    return collective(&q, req);
}

static int all_gather(void *g, const void *send, void *recv, size_t count, em_dtype d, void **req)
{
    request q = {.kind = K_ALL_GATHER, .what = "all_gather", .comm = on(g), .send = send, .buf = recv,
                 .count = to_count("all_gather", count), .type = mpi_type(d)};
    return collective(&q, req);
}

static int reduce_scatter(void *g, const void *send, void *recv, size_t count, em_dtype d, em_comm_op op,
                          void **req)
{
    request q = {.kind = K_REDUCE_SCATTER, .what = "reduce_scatter", .comm = on(g), .send = send, .buf = recv,
                 .count = to_count("reduce_scatter", count), .type = mpi_type(d), .op = mpi_op(op)};
    return collective(&q, req);
}

static int reduce(void *g, void *buf, size_t count, em_dtype d, em_comm_op op, int root, void **req)
{
    int rank = rank_in(g);
    /* MPI_IN_PLACE is the root's send buffer only; the others send buf */
    request q = {.kind = K_REDUCE, .what = "reduce", .comm = on(g), .send = rank == root ? MPI_IN_PLACE : buf,
                 .buf = rank == root ? buf : NULL, .count = to_count("reduce", count), .type = mpi_type(d),
                 .op = mpi_op(op), .root = root};
    return collective(&q, req);
}

static int barrier(void *g, void **req)
{
    request q = {.kind = K_BARRIER, .what = "barrier", .comm = on(g)};
    return collective(&q, req);
}

/* Point-to-point: blocking after the queued collectives; async as MPI's own
 * Isend/Irecv (they do not wait on the peer), under mpi_lock while the
 * communication thread may be in MPI. */
static int point_to_point(void *g, bool is_send, const void *buf, size_t count, em_dtype d, int peer, int tag,
                          int *source, void **req)
{
    const char *what = is_send ? "send" : "recv";
    int n = to_count(what, count);
    if (n < 0) return -1;
    if (peer == EM_COMM_ANY_SOURCE) peer = MPI_ANY_SOURCE;
    int rc;
    if (!req) {
        if (thread_started) drain();
        MPI_Status st;
        rc = is_send ? MPI_Send(buf, n, mpi_type(d), peer, tag, on(g))
                     : MPI_Recv((void *)buf, n, mpi_type(d), peer, tag, on(g), &st);
        if (rc == MPI_SUCCESS && !is_send && source) *source = st.MPI_SOURCE;
        return rc == MPI_SUCCESS ? 0 : fail(what, rc);
    }
    request *r = calloc(1, sizeof *r);
    if (!r) return host->set_error("%s: out of memory for a request", what);
    r->kind = K_P2P;
    r->what = what;
    r->source = source;
    pthread_mutex_lock(&mpi_lock);
    rc = is_send ? MPI_Isend(buf, n, mpi_type(d), peer, tag, on(g), &r->mpi)
                 : MPI_Irecv((void *)buf, n, mpi_type(d), peer, tag, on(g), &r->mpi);
    pthread_mutex_unlock(&mpi_lock);
    if (rc != MPI_SUCCESS) {
        free(r);
        return fail(what, rc);
    }
    *req = r;
    return 0;
}

static int send(void *g, const void *buf, size_t count, em_dtype d, int peer, int tag, void **req)
{
    return point_to_point(g, true, buf, count, d, peer, tag, NULL, req);
}

static int recv(void *g, void *buf, size_t count, em_dtype d, int peer, int tag, int *source, void **req)
{
    return point_to_point(g, false, buf, count, d, peer, tag, source, req);
}

/* One look at a point-to-point request; true when it has completed (or
 * failed: the message in r->error). */
static bool p2p_test(request *r)
{
    int flag = 0;
    MPI_Status st;
    pthread_mutex_lock(&mpi_lock);
    int rc = MPI_Test(&r->mpi, &flag, &st);
    pthread_mutex_unlock(&mpi_lock);
    if (rc != MPI_SUCCESS) {
        note_error(r, rc);
        return true;
    }
    if (flag && r->source) *r->source = st.MPI_SOURCE;
    return flag != 0;
}

static int finish_request(request *r)
{
    int rc = r->error[0] ? host->set_error("%s", r->error) : 0;
    free(r);
    return rc;
}

static int wait(void *req)
{
    request *r = req;
    if (r->kind == K_P2P) {
        if (!thread_started) {
            MPI_Status st;
            int rc = MPI_Wait(&r->mpi, &st);
            if (rc != MPI_SUCCESS) note_error(r, rc);
            else if (r->source) *r->source = st.MPI_SOURCE;
        } else {
            /* MPI_Wait would hold mpi_lock while the peer's send may wait on
             * a collective this rank's thread has still to run: look, then
             * sleep a little, lock released */
            struct timespec nap = {0, 20000};
            while (!p2p_test(r)) nanosleep(&nap, NULL);
        }
        return finish_request(r);
    }
    pthread_mutex_lock(&queue_lock);
    help_until(r);
    pthread_mutex_unlock(&queue_lock);
    return finish_request(r);
}

static int test(void *req, bool *done)
{
    request *r = req;
    if (r->kind == K_P2P) {
        *done = p2p_test(r);
    } else {
        pthread_mutex_lock(&queue_lock);
        *done = r->done;
        pthread_mutex_unlock(&queue_lock);
    }
    return *done ? finish_request(r) : 0;
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
