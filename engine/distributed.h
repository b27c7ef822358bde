/* distributed.h — process groups and collectives on tensors (the engine half
 * of ember.distributed). The communication library is opened by the first
 * em_dist_init (engine/comm.h says how); nothing here loads it before.
 *
 * Ranks are 0-based, as in PyTorch. Every collective writes its result into
 * the tensors given (any dtype, any strides: non-contiguous tensors go
 * through contiguous copies; float16/bfloat16 reductions run on float32
 * working copies, so a sum is rounded once, at the end). With work == NULL
 * the call returns when done; otherwise it returns at once and *work is a
 * handle that em_work_wait completes (the tensors must not be touched until
 * then). CPU tensors go over MPI; CUDA tensors, in a group made with backend
 * "nccl", over NCCL (on this rank's GPU, ordered with its compute stream:
 * a blocking call returns once queued, em_work_wait orders the stream). */
#ifndef EMBER_DISTRIBUTED_H
#define EMBER_DISTRIBUTED_H

#include "comm.h"

typedef struct em_work em_work;

/* backend: "mpi", or "nccl" (MPI too, for the bootstrap and CPU tensors;
 * an error without a GPU or libember_nccl.so). Every collective is numbered
 * in its group (#1, #2, ...) and, where the ranks share a job board
 * (engine/dist_board.h: one machine), first checked against what every
 * other member passed (op, dtype, shape, root, reduce op): a mismatch is an
 * error on every member instead of a hang or wrong values. debug
 * (EMBER_DISTRIBUTED_DEBUG=DETAIL): the same check over MPI too (one small
 * all_gather per collective), for ranks on several machines. timeout
 * (seconds): a call that waits longer for other ranks ends the job with an
 * error naming the op, its number and the ranks that did not arrive; a rank
 * that exits while others wait for it is named at once. */
int em_dist_init(const char *backend, bool debug, double timeout);
bool em_dist_is_initialized(void);
/* A rank of an `ember --nproc` job (EMBER_JOB_BOARD set) joins the job board
 * at start-up, before any init_process_group, so that the others see it
 * even if it exits without calling it; 0 when there is no board. */
int em_dist_join_board(void);
/* The launcher's side: a board file for n ranks, its path in path[pathn]. */
int em_dist_make_board(char *path, size_t pathn, int n);
int em_dist_rank(void);
int em_dist_world_size(void);
const char *em_dist_backend(void);
int em_dist_destroy(void);
/* Ends every process of the job with this exit code (when initialised). */
void em_dist_abort(int code);
/* Parses "sum", "avg", "max", "min", "product" (also upper case). */
int em_comm_op_parse(const char *s, em_comm_op *out);

/* Process groups: group 0 is the default one (every rank); em_dist_new_group
 * makes another, collectively over the world (every rank calls it, in the
 * same order, members or not). ranks: global ranks in any order (n == 0:
 * every rank); backend: "mpi", "nccl" or NULL (the default group's). Every
 * collective takes a group id: src/dst/peer ranks stay global, lists hold
 * group-size tensors, avg divides by the group size, and a rank outside the
 * group does nothing (returns 0 with *work = NULL), as in PyTorch. */
int em_dist_new_group(const int *ranks, int n, const char *backend, int *id);
/* destroying group 0 destroys every group (em_dist_destroy) */
int em_dist_destroy_group(int id);
/* rank: this process's in the group, -1 when not a member; ranks: the
 * members' global ranks ascending, NULL for group 0 (0..size-1). An error
 * for a destroyed group. */
int em_dist_group_info(int id, int *rank, int *size, const int **ranks);

int em_dist_all_reduce(em_tensor *t, em_comm_op op, int group, em_work **work);
int em_dist_broadcast(em_tensor *t, int src, int group, em_work **work);
int em_dist_reduce(em_tensor *t, int dst, em_comm_op op, int group, em_work **work);
/* outs: group-size tensors shaped like t */
int em_dist_all_gather(em_tensor *const *outs, int n, const em_tensor *t, int group, em_work **work);
/* out: [size * d1, d2, ...] (t's blocks along dim 0) or [size, d1, ...] */
int em_dist_all_gather_into_tensor(em_tensor *out, const em_tensor *t, int group, em_work **work);
/* ins: group-size tensors shaped like out; out gets the reduction of every
 * rank's ins[rank] */
int em_dist_reduce_scatter(em_tensor *out, em_tensor *const *ins, int n, em_comm_op op, int group,
                           em_work **work);
/* in: [size * d1, ...] or [size, d1, ...] for out [d1, ...] */
int em_dist_reduce_scatter_tensor(em_tensor *out, const em_tensor *in, em_comm_op op, int group, em_work **work);
int em_dist_barrier(int group, em_work **work);
int em_dist_send(const em_tensor *t, int dst, int tag, int group, em_work **work);
/* src EM_COMM_ANY_SOURCE (-1): from any rank (CPU tensors only). A blocking
 * receive sets *source to the sender's global rank (-1 on a non-member);
 * an async one tells it through em_work_source once completed. */
int em_dist_recv(em_tensor *t, int src, int tag, int group, int *source, em_work **work);
/* the sender of a completed recv's work (global rank); an error for other work */
int em_work_source(em_work *w, int *rank);
int em_work_wait(em_work *w);                  /* idempotent */
int em_work_test(em_work *w, bool *done);      /* done: completed (results written) */
/* Waits if still running (the buffers are in use), then frees. */
void em_work_free(em_work *w);

#endif
