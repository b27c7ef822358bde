/* dist_board.h — the job board and the watchdog of a distributed job
 * (internal to engine/distributed.c and the shell's start-up).
 *
 * The board is a small shared-memory file, one slot per rank, that the
 * processes of a job on one machine read and write without MPI: what each
 * rank is doing (computing, in init_process_group, in collective #k of a
 * group with which arguments, in a recv from rank r, waiting for work,
 * exited with status s), and whether the job has failed and why. It gives:
 *  - the check that every member of a collective passed the same op, dtype,
 *    shape, root and reduce op, before any of them enters MPI (a rank that
 *    arrives first waits on the board for the others, as it would in MPI);
 *  - names in errors: which ranks did not arrive, and what they do instead;
 *  - a rank that exits (even with status 0, even one that never called
 *    init_process_group) is seen at once by the ranks that wait for it.
 * `ember --nproc N` makes the board before the ranks start (EMBER_JOB_BOARD);
 * under a plain mpirun with every rank on one machine, init_process_group
 * makes one. Ranks on several machines have none: timeouts still end the
 * job, without naming the ranks.
 *
 * The watchdog is one thread per rank: it ends the process (message, exit
 * status 1) when a call that cannot return an error (a blocking MPI call)
 * runs past its deadline or waits for a rank that has exited, and when
 * another rank has failed the job. */
#ifndef EMBER_DIST_BOARD_H
#define EMBER_DIST_BOARD_H

#include <stdbool.h>
#include <stdint.h>

#include "comm.h"
#include "ember.h"

/* the collectives (and what else a rank can be doing) as the board names them */
enum {
    EM_OP_NONE = 0,
    EM_OP_ALL_REDUCE,
    EM_OP_BROADCAST,
    EM_OP_REDUCE,
    EM_OP_ALL_GATHER,
    EM_OP_REDUCE_SCATTER,
    EM_OP_BARRIER,
    EM_OP_NEW_GROUP,
    EM_OP_SEND,       /* the rest are not collectives: no sequence number */
    EM_OP_RECV,
    EM_OP_INIT,
    EM_NOPS
};

/* What a rank passed to a collective (or is doing): compared across ranks,
 * shown in errors. Plain integers, so it can live in shared memory and
 * travel in an all_gather. */
#define EM_DESC_DIMS 8
typedef struct em_op_desc {
    int64_t code;          /* EM_OP_* */
    int64_t group;         /* group id (0: the default group) */
    int64_t epoch;         /* how many init_process_group calls this process made */
    int64_t seq;           /* the collective's number in its group, from 1 */
    int64_t dtype;         /* -1: no tensor */
    int64_t ndim;          /* > EM_DESC_DIMS: only the first dims kept */
    int64_t sizes[EM_DESC_DIMS];
    int64_t root;          /* global rank (broadcast src, reduce dst, p2p peer); -1 */
    int64_t redop;         /* em_comm_op; -1 */
    int64_t extra;         /* new_group: a checksum of the members; p2p: the tag */
} em_op_desc;

/* "all_reduce(float32 [3], sum)" into buf */
const char *em_desc_text(const em_op_desc *d, char *buf, size_t n);
/* "all_reduce #2 (float32 [3], sum)": with its number in the group */
const char *em_op_title(const em_op_desc *d, char *buf, size_t n);
const char *em_op_name(int64_t code);
/* whether two ranks' descriptions of one collective agree */
bool em_desc_same(const em_op_desc *a, const em_op_desc *b);
/* 0 when every member's description (theirs[i] from members[i]) is d's;
 * else -1 with the error naming what each rank passed */
int em_desc_mismatch(const em_op_desc *d, const int *members, int n, const em_op_desc *theirs);

/* ---- the board ---------------------------------------------------------- */

/* Opens the board named by EMBER_JOB_BOARD (the launcher's) for this rank
 * (OMPI_COMM_WORLD_RANK) and starts the watchdog; 0 when there is none or
 * it is already open, -1 with the error set. Called at start-up by the
 * shell and again by init_process_group. */
int em_board_attach_env(void);
/* A new board file for n ranks: its path in path[n]. */
int em_board_create(char *path, size_t pathn, int nranks);
/* Opens a board file as rank `rank` (init_process_group's own board). */
int em_board_open(const char *path, int rank);
bool em_board_present(void);

/* This rank's state, as the others see it. */
void em_board_set_initialized(bool on, int64_t epoch);
/* Enters collective d (its seq set): publishes it, then waits until every
 * member (global ranks, n of them) has arrived, comparing what each passed.
 * 0: all agree (or no board); -1 with the error set on a mismatch (every
 * member sees it, so the job can go on), on a rank that exited, on the
 * timeout, or when another rank failed the job (the job is failed then). */
int em_board_rendezvous(const em_op_desc *d, const int *members, int n, double timeout);
/* What this rank does now (p2p, init, waiting; EM_OP_NONE: computing),
 * for the others' messages. */
void em_board_activity(const em_op_desc *d);

/* ---- the job's failure ----------------------------------------------------- */

/* Marks the job failed by this rank (the first failure wins; the others'
 * watchdogs end their processes naming it). */
void em_board_fail(const char *reason);
/* Before ending the job: waits (a short while) for the other ranks to see
 * the failure and end themselves, so each prints its own line. */
void em_board_wait_others(double seconds);
/* Whether another rank failed the job: its message in why. */
bool em_board_failed(char *why, size_t n);

/* ---- the watchdog ---------------------------------------------------------- */

/* Starts the watchdog thread (once). */
void em_watch_start(void);
/* the rank its messages name when there is no board */
void em_watch_set_rank(int rank);
/* A blocking call begins: members (NULL, n 0: the peers are unknown) are
 * the ranks it waits for; after timeout seconds, or as soon as one of them
 * has exited without arriving, the watchdog ends the process with a
 * message naming d. End with em_watch_end. Not nested. */
void em_watch_begin(const em_op_desc *d, const int *members, int n, double timeout);
void em_watch_end(void);
/* Returns at once unless the watchdog is ending the process; then never:
 * its abort of the device backend lets the stuck work finish just before
 * the exit, and the program's thread, back from waiting on that work, must
 * not run on with what it computed (em_watch_end and the CUDA backend's
 * waits call it). */
void em_hold_if_ending(void);
/* ---- device work (NCCL's), which the host does not wait for ------------------ */

/* The device backend whose marks the watchdog polls (NULL: none; every
 * mark still held is dropped, after the backend has synchronised). */
void em_watch_device(const em_comm_backend *be);
/* Work d, queued on the device, ends at mark (the backend's, handed over);
 * members (n of them; NULL for a send or receive: d's peer) are what it
 * waits for, an array that lives while the work can be pending. The
 * watchdog polls the oldest: when it runs past timeout seconds after being
 * queued, when NCCL reports an asynchronous error, or when a member it
 * waits for has exited, it cancels the backend (ncclCommAbort) and ends the
 * process naming d, as PyTorch's ProcessGroupNCCL does; with
 * EMBER_NCCL_ASYNC_ERROR_HANDLING=2 it only cancels and says so (later
 * calls and waits then fail naming why). */
void em_watch_device_add(const em_op_desc *d, void *mark, const int *members, int n, double timeout);

/* Registers the exit handler that marks this rank exited (and waits for
 * the others' verdict) before the ones registered earlier run (MPI's). */
void em_board_hook_exit(void);

#endif
