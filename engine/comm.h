/* comm.h — the communication backend interface: what a collective library
 * (MPI for CPU memory, NCCL for GPU memory) gives the engine. Like the
 * CUDA backend, an implementation lives in its own shared object
 * (build/libember_mpi.so from comm/mpi.c, build/libember_nccl.so from
 * comm/nccl.c) that engine/distributed.c opens
 * with dlopen when a program first asks for a process group, so a session
 * that never does loads no MPI library.
 *
 * The table deals in contiguous buffers of `count` elements of a dtype the
 * implementation can carry, in the memory it serves: host memory for MPI,
 * the rank's GPU for NCCL (engine/distributed.c turns tensors into such
 * buffers: contiguous copies, float32 working copies of float16/bfloat16
 * for reductions, bool as uint8). Ranks are 0-based. Every transfer takes a
 * `req` pointer: NULL runs it to completion (the blocking call, which for
 * MPI is the faster collective algorithm), non-NULL starts it and stores a
 * request that wait/test complete and free. Every transfer also takes the
 * communicator it runs on: NULL for the one init made over every process,
 * or a handle from split (a subgroup; ranks, roots and peers are then the
 * subgroup's). Errors are values: -1 after host->set_error(message). */
#ifndef EMBER_COMM_H
#define EMBER_COMM_H

#include <stdbool.h>
#include <stddef.h>

#include "ember.h"

typedef enum em_comm_op {
    EM_COMM_SUM = 0,
    EM_COMM_AVG,       /* the engine sums and divides: no backend sees it */
    EM_COMM_MAX,
    EM_COMM_MIN,
    EM_COMM_PRODUCT,
    EM_NCOMM_OPS
} em_comm_op;

typedef struct em_comm_backend em_comm_backend;

enum { EM_COMM_ANY_SOURCE = -1 };

typedef struct em_comm_host {
    int (*set_error)(const char *fmt, ...);
    const char *(*last_error)(void);
    /* For a device backend (NCCL) only: the host backend, already joined,
     * that carries its bootstrap (the unique id, from rank 0), and the CUDA
     * backend's compute stream of a device (a cudaStream_t; NULL with the
     * error set when the device cannot start). */
    const em_comm_backend *bootstrap;
    void *(*compute_stream)(int device);
    /* For a device backend: each transfer it queues (the host does not wait
     * for it) leaves a mark where it ends on the backend's stream, handed
     * to the engine's watchdog here, which polls it (poll below) and gives
     * it back (drop_mark). Called on the thread that queued the transfer,
     * before the backend call returns. */
    void (*queued)(void *mark);
} em_comm_host;

struct em_comm_backend {
    const char *name;
    /* Joins the job (the first call starts the library) and makes a fresh
     * communicator over every process; rank and size of this process. A
     * device backend is given them instead (the bootstrap's) and joins with
     * them, on the GPU of its local rank. */
    int (*init)(int *rank, int *size);
    /* Frees the communicator; the library itself stays up until exit, so
     * a later init can make a new one (MPI cannot start twice). */
    int (*destroy)(void);
    /* Ends the whole job at once (every process), with this exit code. */
    void (*abort)(int code);
    /* Whether the backend carries this dtype in reductions / as plain data. */
    bool (*reduces)(em_dtype d);
    /* The CUDA device a device backend serves (after init); NULL for a host
     * backend. */
    int (*device)(void);

    /* Collective over every process (init's communicator): the n ranks
     * (ascending) make a new communicator, numbered in that order; a member
     * gets its handle in *group, the others NULL. */
    int (*split)(const int *ranks, int n, bool member, void **group);
    int (*free_group)(void *group);

    int (*all_reduce)(void *g, void *buf, size_t count, em_dtype d, em_comm_op op, void **req);
    int (*broadcast)(void *g, void *buf, size_t count, em_dtype d, int root, void **req);
    /* recv holds size * count elements, rank r's at r * count */
    int (*all_gather)(void *g, const void *send, void *recv, size_t count, em_dtype d, void **req);
    /* send holds size * count elements; recv gets this rank's reduced block */
    int (*reduce_scatter)(void *g, const void *send, void *recv, size_t count, em_dtype d, em_comm_op op,
                          void **req);
    /* the result lands in buf on root only */
    int (*reduce)(void *g, void *buf, size_t count, em_dtype d, em_comm_op op, int root, void **req);
    int (*barrier)(void *g, void **req);
    int (*send)(void *g, const void *buf, size_t count, em_dtype d, int peer, int tag, void **req);
    /* peer EM_COMM_ANY_SOURCE (a host backend only) takes the first message
     * from any rank; *source gets the sender's rank when the receive
     * completes (at return when blocking, in wait/test otherwise) */
    int (*recv)(void *g, void *buf, size_t count, em_dtype d, int peer, int tag, int *source, void **req);

    /* completes and frees the request; a device backend orders the compute
     * stream after the transfer instead of blocking the host */
    int (*wait)(void *req);
    int (*test)(void *req, bool *done);     /* done: completed and freed */

    /* A device backend's work as the watchdog (another thread) sees it;
     * NULL in a host backend. poll: whether the work up to a mark has
     * completed (1), not yet (0), or cannot (-1, why filled: the library's
     * asynchronous error; -2: the communicators were cancelled, why: the
     * reason given to cancel). cancel
     * aborts every communicator at once (NCCL's ncclCommAbort), so stuck
     * work ends; every later call then fails naming why. Any thread. */
    int (*poll)(void *mark, char *why, size_t n);
    void (*drop_mark)(void *mark);
    void (*cancel)(const char *why);
};

/* The one symbol a backend library exports. NULL with why[] filled when the
 * library cannot start. */
typedef const em_comm_backend *(*em_comm_backend_init_fn)(const em_comm_host *host, char *why, size_t n);

#endif
