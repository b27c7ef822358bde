/* dist_board.c — the job board (shared memory between the ranks of a job on
 * one machine) and the watchdog thread; dist_board.h says what each gives.
 *
 * A slot is written by its own rank only (the thread that runs the
 * program; the watchdog only ever marks it exited or acknowledging), read by
 * every rank. The descriptions are read under a sequence lock: the writer
 * makes `version` odd while it writes, a reader retries until it sees the
 * same even version before and after its copy. */
#include "dist_board.h"
#include "comm.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BOARD_MAGIC 0x31302d6472626d65ull   /* "embrd-01" */
#define BOARD_GROUPS 64                      /* group ids tracked modulo this */
#define BOARD_RING 16                        /* the collectives a rank entered last, kept for slower peers */

enum { S_NONE = 0, S_RUNNING, S_EXITED };

typedef struct slot {
    _Atomic int32_t pid;
    _Atomic int32_t state;
    _Atomic int32_t status;          /* exit status, once exited */
    _Atomic int32_t initialized;     /* in a process group now */
    _Atomic int32_t ever_initialized;
    _Atomic int32_t acked;           /* has seen the job's failure and is ending */
    _Atomic int32_t lingering;       /* exited, still waiting for the job's outcome */
    _Atomic int64_t epoch;           /* init_process_group calls so far */
    _Atomic uint32_t version;        /* the sequence lock over cur and act */
    em_op_desc cur;                  /* the collective entered last */
    em_op_desc act;                  /* what it does now (code EM_OP_NONE: computing) */
    /* the last BOARD_RING collectives entered (cur among them): a peer that
     * compares after this rank has gone on (even past an error that made it
     * skip the collective's MPI call) still finds what it passed */
    int64_t entered;
    em_op_desc ring[BOARD_RING];
    _Atomic int64_t group_seq[BOARD_GROUPS];   /* the last collective entered, per group, this epoch */
} slot;

typedef struct board {
    uint64_t magic;
    int32_t nranks;
    _Atomic int32_t failed;          /* 0; -1 while the reason is written; 1 + the rank that failed first */
    char reason[1024];
    slot slots[];
} board;

static board *B;
static int me = -1;                  /* this rank's slot */
static int watch_rank = -1;          /* the rank named in the watchdog's messages */
static atomic_bool self_failing;     /* this rank failed the job, or is ending with its own error */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- descriptions ------------------------------------------------------------ */

const char *em_op_name(int64_t code)
{
    static const char *const names[EM_NOPS] = {"(none)", "all_reduce", "broadcast", "reduce", "all_gather",
                                               "reduce_scatter", "barrier", "new_group", "send", "recv",
                                               "init_process_group"};
    return code >= 0 && code < EM_NOPS ? names[code] : "(unknown)";
}

static const char *redop_name(int64_t op)
{
    static const char *const names[EM_NCOMM_OPS] = {"sum", "avg", "max", "min", "product"};
    return op >= 0 && op < EM_NCOMM_OPS ? names[op] : "?";
}

const char *em_desc_text(const em_op_desc *d, char *buf, size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "%s(", em_op_name(d->code));
    const char *sep = "";
    if (d->dtype >= 0 && at < n) {
        at += (size_t)snprintf(buf + at, n - at, "%s [", em_dtype_name((em_dtype)d->dtype));
        int shown = d->ndim < EM_DESC_DIMS ? (int)d->ndim : EM_DESC_DIMS;
        for (int i = 0; i < shown && at < n; i++)
            at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? ", " : "", (long long)d->sizes[i]);
        if (d->ndim > EM_DESC_DIMS && at < n) at += (size_t)snprintf(buf + at, n - at, ", ...");
        if (at < n) at += (size_t)snprintf(buf + at, n - at, "]");
        sep = ", ";
    }
    if (d->redop >= 0 && at < n) {
        at += (size_t)snprintf(buf + at, n - at, "%s%s", sep, redop_name(d->redop));
        sep = ", ";
    }
    if (d->root >= 0 && at < n) {
        const char *what = d->code == EM_OP_BROADCAST ? "src" : d->code == EM_OP_REDUCE ? "dst"
                         : d->code == EM_OP_RECV ? "from" : "to";
        at += (size_t)snprintf(buf + at, n - at, "%s%s %lld", sep, what, (long long)d->root);
        sep = ", ";
    }
    if (d->code == EM_OP_NEW_GROUP && at < n)
        at += (size_t)snprintf(buf + at, n - at, "%smembers #%llx", sep, (unsigned long long)d->extra);
    if ((d->code == EM_OP_SEND || d->code == EM_OP_RECV) && at < n)
        at += (size_t)snprintf(buf + at, n - at, "%stag %lld", sep, (long long)d->extra);
    if (at < n) snprintf(buf + at, n - at, ")");
    return buf;
}

bool em_desc_same(const em_op_desc *a, const em_op_desc *b)
{
    if (a->code != b->code || a->group != b->group || a->dtype != b->dtype || a->ndim != b->ndim ||
        a->root != b->root || a->redop != b->redop || a->extra != b->extra)
        return false;
    int shown = a->ndim < EM_DESC_DIMS ? (int)a->ndim : EM_DESC_DIMS;
    for (int i = 0; i < shown; i++)
        if (a->sizes[i] != b->sizes[i]) return false;
    return true;
}

/* ---- slots -------------------------------------------------------------------- */

static void slot_write(slot *s, const em_op_desc *cur, const em_op_desc *act)
{
    uint32_t v = atomic_load_explicit(&s->version, memory_order_relaxed);
    atomic_store_explicit(&s->version, v + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    if (cur) {
        memcpy(&s->cur, cur, sizeof *cur);
        memcpy(&s->ring[s->entered % BOARD_RING], cur, sizeof *cur);
        s->entered++;
    }
    if (act) memcpy(&s->act, act, sizeof *act);
    atomic_store_explicit(&s->version, v + 2, memory_order_release);
}

/* What the slot's rank passed to collective (epoch, group, seq), if it is
 * still in its ring. */
static bool slot_find(slot *s, const em_op_desc *d, em_op_desc *out)
{
    for (int tries = 0; tries < 100000; tries++) {
        uint32_t v = atomic_load_explicit(&s->version, memory_order_acquire);
        if (v & 1) continue;
        bool found = false;
        for (int i = 0; i < BOARD_RING && !found; i++) {
            const em_op_desc *e = &s->ring[i];
            if (e->seq == d->seq && e->group == d->group && e->epoch == d->epoch && e->code != EM_OP_NONE) {
                memcpy(out, e, sizeof *out);
                found = true;
            }
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->version, memory_order_relaxed) == v) return found;
    }
    return false;
}

/* A consistent copy; a writer that died half-way is read as it is. */
static void slot_read(slot *s, em_op_desc *cur, em_op_desc *act)
{
    for (int tries = 0;; tries++) {
        uint32_t v = atomic_load_explicit(&s->version, memory_order_acquire);
        memcpy(cur, &s->cur, sizeof *cur);
        memcpy(act, &s->act, sizeof *act);
        atomic_thread_fence(memory_order_acquire);
        if ((!(v & 1) && atomic_load_explicit(&s->version, memory_order_relaxed) == v) || tries > 100000) return;
    }
}

/* whether process pid is gone (a rank killed before it could say so) */
static bool pid_gone(int32_t pid) { return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH; }

static bool slot_exited(slot *s)
{
    return atomic_load(&s->state) == S_EXITED || pid_gone(atomic_load(&s->pid));
}

/* "is in broadcast #3", "exited (status 0) without calling init_process_group", ... */
static void describe_rank(int r, const em_op_desc *mine, char *buf, size_t n)
{
    slot *s = &B->slots[r];
    em_op_desc cur, act;
    slot_read(s, &cur, &act);
    char last[256] = "";
    if (cur.code != EM_OP_NONE && cur.epoch == mine->epoch) {
        char t[200];
        snprintf(last, sizeof last, "its last collective was %s #%lld%s", em_desc_text(&cur, t, sizeof t),
                 (long long)cur.seq, cur.group != mine->group ? " in another group" : "");
    }
    bool ever = atomic_load(&s->ever_initialized);
    if (atomic_load(&s->pid) == 0) {
        snprintf(buf, n, "it has not started");
    } else if (slot_exited(s)) {
        if (atomic_load(&s->state) == S_EXITED)
            snprintf(buf, n, "it exited (status %d)%s%s", atomic_load(&s->status), ever ? "" : " without calling "
                     "init_process_group", last[0] ? "; " : "");
        else
            snprintf(buf, n, "died (its process ended without exiting: killed by a signal, or crashed)%s",
                     last[0] ? "; " : "");
        strncat(buf, last, n - strlen(buf) - 1);
    } else if (act.code == EM_OP_INIT) {
        snprintf(buf, n, "it is in init_process_group");
    } else if (!atomic_load(&s->initialized)) {
        snprintf(buf, n, "it has not called init_process_group");
    } else if (act.code == EM_OP_SEND || act.code == EM_OP_RECV) {
        char t[200];
        snprintf(buf, n, "it is in %s", em_desc_text(&act, t, sizeof t));
    } else if (act.code != EM_OP_NONE) {
        char t[200];
        snprintf(buf, n, "it is %s %s #%lld%s", act.extra == -2 ? "waiting for" : "in", em_desc_text(&act, t, sizeof t),
                 (long long)act.seq, act.group != mine->group ? " of another group" : "");
    } else {
        snprintf(buf, n, "it is not in a distributed call%s%s", last[0] ? "; " : "", last);
    }
}

/* "rank 1 did not arrive (it is ...)" or "ranks 1, 3 did not arrive (rank 1: ...; rank 3: ...)";
 * verb NULL: "rank 1 exited (status 0); rank 3 ..." */
static void name_missing(const int *ranks, int k, const em_op_desc *mine, const char *verb, char *buf, size_t n)
{
    size_t at = 0;
    if (!verb) {
        buf[0] = 0;
        for (int i = 0; i < k && at < n; i++) {
            char d[512];
            describe_rank(ranks[i], mine, d, sizeof d);
            at += (size_t)snprintf(buf + at, n - at, "%srank %d %s", i ? "; " : "", ranks[i],
                                   strncmp(d, "it ", 3) == 0 ? d + 3 : d);
        }
        return;
    }
    at += (size_t)snprintf(buf, n, "rank%s ", k > 1 ? "s" : "");
    for (int i = 0; i < k && at < n; i++) at += (size_t)snprintf(buf + at, n - at, "%s%d", i ? ", " : "", ranks[i]);
    if (at < n) at += (size_t)snprintf(buf + at, n - at, " %s (", verb);
    for (int i = 0; i < k && at < n; i++) {
        char d[512];
        describe_rank(ranks[i], mine, d, sizeof d);
        if (k > 1) at += (size_t)snprintf(buf + at, n - at, "%srank %d: %s", i ? "; " : "", ranks[i], d);
        else at += (size_t)snprintf(buf + at, n - at, "%s", d);
    }
    if (at < n) snprintf(buf + at, n - at, ")");
}

/* ---- the board file -------------------------------------------------------- */

static size_t board_size(int nranks) { return sizeof(board) + (size_t)nranks * sizeof(slot); }

static void on_exit_handler(int status, void *arg);
static bool exit_hooked;

int em_board_create(char *path, size_t pathn, int nranks)
{
    const char *dirs[] = {"/dev/shm", getenv("TMPDIR"), "/tmp"};
    for (int i = 0; i < 3; i++) {
        if (!dirs[i] || !*dirs[i]) continue;
        snprintf(path, pathn, "%s/ember-job-XXXXXX", dirs[i]);
        int fd = mkstemp(path);
        if (fd < 0) continue;
        size_t size = board_size(nranks);
        board *b = ftruncate(fd, (off_t)size) == 0 ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                                    : MAP_FAILED;
        close(fd);
        if (b == MAP_FAILED) {
            unlink(path);
            continue;
        }
        b->nranks = nranks;
        b->magic = BOARD_MAGIC;
        munmap(b, size);
        return 0;
    }
    return em_set_error("distributed: cannot make the job board (a shared-memory file in /dev/shm or /tmp): %s",
                        strerror(errno));
}

int em_board_open(const char *path, int rank)
{
    if (B) return 0;
    int fd = open(path, O_RDWR);
    if (fd < 0) return em_set_error("distributed: cannot open the job board %s: %s", path, strerror(errno));
    struct stat st;
    board *b = fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(board)
             ? mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (b == MAP_FAILED) return em_set_error("distributed: cannot map the job board %s", path);
    if (b->magic != BOARD_MAGIC || rank < 0 || rank >= b->nranks || (size_t)st.st_size < board_size(b->nranks)) {
        munmap(b, (size_t)st.st_size);
        return em_set_error("distributed: the job board %s is not one for rank %d", path, rank);
    }
    B = b;
    me = rank;
    watch_rank = rank;
    slot *s = &B->slots[me];
    atomic_store(&s->pid, (int32_t)getpid());
    atomic_store(&s->state, S_RUNNING);
    em_watch_start();
    em_board_hook_exit();
    return 0;
}

int em_board_attach_env(void)
{
    const char *path = getenv("EMBER_JOB_BOARD");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = getenv("PMIX_RANK");
    if (B || !path || !*path || strcmp(path, "off") == 0 || !rank) return 0;
    return em_board_open(path, atoi(rank));
}

bool em_board_present(void) { return B != NULL; }

void em_board_set_initialized(bool on, int64_t epoch)
{
    if (!B) return;
    slot *s = &B->slots[me];
    if (on) {
        for (int i = 0; i < BOARD_GROUPS; i++) atomic_store(&s->group_seq[i], 0);
        atomic_store(&s->epoch, epoch);
        atomic_store(&s->ever_initialized, 1);
    }
    atomic_store(&s->initialized, on);
}

void em_board_activity(const em_op_desc *d)
{
    if (!B) return;
    em_op_desc none = {.code = EM_OP_NONE, .dtype = -1, .root = -1, .redop = -1};
    slot_write(&B->slots[me], NULL, d ? d : &none);
}

/* ---- failure --------------------------------------------------------------- */

void em_board_fail(const char *reason)
{
    atomic_store(&self_failing, true);
    if (!B) return;
    int32_t zero = 0;
    if (atomic_compare_exchange_strong(&B->failed, &zero, -1)) {
        snprintf(B->reason, sizeof B->reason, "%s", reason);
        atomic_store(&B->failed, me + 1);
    }
    atomic_store(&B->slots[me].acked, 1);
}

bool em_board_failed(char *why, size_t n)
{
    if (!B) return false;
    int32_t f = atomic_load(&B->failed);
    if (f <= 0 || f - 1 == me) return false;
    snprintf(why, n, "rank %d failed: %s", f - 1, B->reason);
    return true;
}

void em_board_wait_others(double seconds)
{
    if (!B) return;
    double end = now() + seconds;
    struct timespec nap = {0, 5000000};
    while (now() < end) {
        bool all = true;
        for (int r = 0; r < B->nranks && all; r++) {
            if (r == me) continue;
            slot *s = &B->slots[r];
            all = atomic_load(&s->pid) == 0 || atomic_load(&s->acked) || pid_gone(atomic_load(&s->pid)) ||
                  (atomic_load(&s->state) == S_EXITED && !atomic_load(&s->lingering));
        }
        if (all) return;
        nanosleep(&nap, NULL);
    }
}

/* ---- the rendezvous ------------------------------------------------------- */

/* Waits politely: spinning first (a peer usually arrives within
 * microseconds), then yielding, then sleeping. */
static void backoff(long *spins)
{
    long k = (*spins)++;
    if (k < 200) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else if (k < 2000) {
        sched_yield();
    } else {
        struct timespec nap = {0, 50000};
        nanosleep(&nap, NULL);
    }
}

/* "all_reduce #2 (float32 [3], sum)" */
static const char *op_title(const em_op_desc *d, char *buf, size_t n);
const char *em_op_title(const em_op_desc *d, char *buf, size_t n) { return op_title(d, buf, n); }
static const char *op_title(const em_op_desc *d, char *buf, size_t n)
{
    char t[256];
    em_desc_text(d, t, sizeof t);
    const char *args = strchr(t, '(');
    if (d->code == EM_OP_INIT) snprintf(buf, n, "init_process_group");
    else if (d->code == EM_OP_SEND || d->code == EM_OP_RECV || d->seq <= 0) snprintf(buf, n, "%s", t);
    else if (args && strcmp(args, "()") != 0) snprintf(buf, n, "%s #%lld %s", em_op_name(d->code), (long long)d->seq, args);
    else snprintf(buf, n, "%s #%lld", em_op_name(d->code), (long long)d->seq);
    return buf;
}

/* the message of a mismatch: every distinct description with the ranks that passed it */
static int mismatch_error(const em_op_desc *d, const int *members, int n, const em_op_desc *theirs,
                          const char *state)
{
    char msg[2048];
    size_t at = (size_t)snprintf(msg, sizeof msg, "%s #%lld: ranks disagree: ", em_op_name(d->code), (long long)d->seq);
    char *seen = calloc((size_t)n, 1);
    for (int i = 0; i < n && at < sizeof msg && seen; i++) {
        if (seen[i] || state[i] != 1) continue;
        int count = 0;
        for (int j = i; j < n; j++)
            if (!seen[j] && state[j] == 1 && em_desc_same(&theirs[i], &theirs[j])) count++;
        at += (size_t)snprintf(msg + at, sizeof msg - at, "%srank%s ", at > 0 && msg[at - 2] != ':' ? "; " : "",
                               count > 1 ? "s" : "");
        int k = 0;
        for (int j = i; j < n && at < sizeof msg; j++) {
            if (seen[j] || state[j] != 1 || !em_desc_same(&theirs[i], &theirs[j])) continue;
            seen[j] = 1;
            at += (size_t)snprintf(msg + at, sizeof msg - at, "%s%d", k++ ? ", " : "", members[j]);
        }
        char t[256];
        if (at < sizeof msg) at += (size_t)snprintf(msg + at, sizeof msg - at, " passed %s", em_desc_text(&theirs[i], t, sizeof t));
    }
    free(seen);
    return em_set_error("%s", msg);
}

int em_desc_mismatch(const em_op_desc *d, const int *members, int n, const em_op_desc *theirs)
{
    bool differ = false;
    for (int i = 0; i < n && !differ; i++) differ = !em_desc_same(d, &theirs[i]);
    if (!differ) return 0;
    char *state = malloc((size_t)n);
    if (!state) return em_set_error("%s: out of memory", em_op_name(d->code));
    memset(state, 1, (size_t)n);
    int rc = mismatch_error(d, members, n, theirs, state);
    free(state);
    return rc;
}

/* One pass over the members still waited for (state 0): a peer that has
 * posted this collective is compared (state 1), one that has gone past it
 * without posting is passed over (state 2). Returns how many are left. */
static int look_for_peers(const em_op_desc *d, const int *members, int n, em_op_desc *theirs, char *state,
                          int left, bool *differ)
{
    for (int i = 0; i < n; i++) {
        if (state[i]) continue;
        slot *s = &B->slots[members[i]];
        em_op_desc cur;
        int64_t epoch = atomic_load_explicit(&s->epoch, memory_order_acquire);
        if (slot_find(s, d, &cur)) {
            theirs[i] = cur;
            state[i] = 1;
            left--;
            if (!em_desc_same(&cur, d)) *differ = true;
        } else if (epoch > d->epoch ||
                   (epoch == d->epoch && atomic_load(&s->group_seq[d->group % BOARD_GROUPS]) >= d->seq)) {
            state[i] = 2;
            left--;
        }
    }
    return left;
}

/* The members still waited for, into missing[*k]; whether one of them is gone. */
static bool missing_peers(const int *members, int n, const char *state, int *missing, int *k)
{
    bool gone = false;
    *k = 0;
    for (int i = 0; i < n; i++) {
        if (state[i]) continue;
        missing[(*k)++] = members[i];
        if (slot_exited(&B->slots[members[i]])) gone = true;
    }
    return gone;
}

int em_board_rendezvous(const em_op_desc *d, const int *members, int n, double timeout)
{
    if (!B) return 0;
    slot *mine = &B->slots[me];
    slot_write(mine, d, d);
    atomic_store_explicit(&mine->group_seq[d->group % BOARD_GROUPS], d->seq, memory_order_release);
    /* small groups on the stack: this runs before every collective */
    enum { SMALL = 16 };
    em_op_desc theirs_s[SMALL];
    char state_s[SMALL];
    int missing_s[SMALL];
    bool big = n > SMALL;
    em_op_desc *theirs = big ? malloc((size_t)n * sizeof *theirs) : theirs_s;
    char *state = big ? malloc((size_t)n) : state_s;   /* 0 waiting, 1 compared, 2 passed it (not compared) */
    int *missing = big ? malloc((size_t)n * sizeof *missing) : missing_s;
    if (!theirs || !state || !missing) {
        if (big) free(theirs), free(state), free(missing);
        return em_set_error("%s: out of memory", em_op_name(d->code));
    }
    memset(state, 0, (size_t)n);
    int left = 0, rc = 0;
    bool differ = false;
    for (int i = 0; i < n; i++) {
        if (members[i] == me) {
            theirs[i] = *d;
            state[i] = 1;
        } else {
            left++;
        }
    }
    double deadline = now() + timeout;
    long spins = 0;
    while ((left = look_for_peers(d, members, n, theirs, state, left, &differ)) > 0) {
        char why[1200];
        int k;
        bool failed = em_board_failed(why, sizeof why);
        bool gone = missing_peers(members, n, state, missing, &k);
        if (!gone && !failed && now() <= deadline) {
            backoff(&spins);
            continue;
        }
        /* A peer may have posted its call, found the mismatch and failed the
         * job (or exited) after the look above: one more look, made after
         * seeing that, compares what it passed instead of calling it missing. */
        if ((left = look_for_peers(d, members, n, theirs, state, left, &differ)) == 0) break;
        gone = missing_peers(members, n, state, missing, &k);
        if (gone || now() > deadline) {
            char title[300], names[1500], reason[2048];
            op_title(d, title, sizeof title);
            name_missing(missing, k, d, gone ? NULL : "did not arrive", names, sizeof names);
            if (gone) snprintf(reason, sizeof reason, "%s cannot complete: %s", title, names);
            else snprintf(reason, sizeof reason, "%s timed out after %g s: %s", title, timeout, names);
            em_board_fail(reason);
            rc = em_set_error("%s", reason);
            break;
        }
        if (failed) {
            rc = em_set_error("%s #%lld: stopped: %s", em_op_name(d->code), (long long)d->seq, why);
            atomic_store(&self_failing, true);
            break;
        }
    }
    if (rc == 0 && differ) rc = mismatch_error(d, members, n, theirs, state);
    if (big) free(theirs), free(state), free(missing);
    return rc;
}

/* ---- the watchdog ------------------------------------------------------------ */

static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool on;
    em_op_desc d;
    int *members;
    int n, cap;
    double deadline, timeout;
} W;
static bool watch_started;

void em_watch_set_rank(int rank)
{
    if (watch_rank < 0) watch_rank = rank;
}

void em_watch_begin(const em_op_desc *d, const int *members, int n, double timeout)
{
    pthread_mutex_lock(&wlock);
    if (n > W.cap) {
        int *more = realloc(W.members, (size_t)n * sizeof *more);
        if (more) {
            W.members = more;
            W.cap = n;
        } else {
            n = 0;
        }
    }
    if (n > 0) memcpy(W.members, members, (size_t)n * sizeof *members);
    W.n = n;
    W.d = *d;
    W.timeout = timeout;
    W.deadline = now() + timeout;
    W.on = true;
    pthread_mutex_unlock(&wlock);
}

void em_watch_end(void)
{
    pthread_mutex_lock(&wlock);
    W.on = false;
    pthread_mutex_unlock(&wlock);
    em_hold_if_ending();
}

static atomic_bool ending;

void em_hold_if_ending(void)
{
    if (!atomic_load(&ending)) return;
    for (;;) pause();       /* until the watchdog's _exit */
}

/* Ends this process from the watchdog: the message, this rank marked
 * exited, stdout flushed if the program's thread does not hold it, then
 * the backend cancelled if it waits for that (be; else NULL). The abort
 * lets the program's thread go from its wait, so `ending` is set first:
 * that thread then stops in em_hold_if_ending instead of printing or
 * saving what it computed from the aborted work (print flushes). */
static void end_process(const char *msg, const em_comm_backend *be)
{
    if (ftrylockfile(stdout) == 0) {
        fflush(stdout);
        funlockfile(stdout);
    }
    if (watch_rank >= 0) fprintf(stderr, "ember: rank %d: %s\n", watch_rank, msg);
    else fprintf(stderr, "ember: %s\n", msg);
    if (B) {
        slot *s = &B->slots[me];
        atomic_store(&s->acked, 1);
        atomic_store(&s->status, 1);
        atomic_store(&s->state, S_EXITED);
    }
    atomic_store(&ending, true);
    if (be) be->cancel(msg);
    _exit(1);
}

/* Whether the rank of slot s has entered collective d (or one after it in
 * d's group): one that exited then took its part before it went (a rank
 * can leave an all_reduce as soon as it has the result, while another still
 * finishes), so its exit is no reason to stop. Not for sends, receives and
 * init, whose peers are named by what they do now. */
static bool entered(slot *s, const em_op_desc *d)
{
    if (d->code == EM_OP_INIT || d->code == EM_OP_SEND || d->code == EM_OP_RECV) return false;
    int64_t epoch = atomic_load_explicit(&s->epoch, memory_order_acquire);
    return epoch > d->epoch ||
           (epoch == d->epoch && atomic_load(&s->group_seq[d->group % BOARD_GROUPS]) >= d->seq);
}

/* What the watched call waits for: a message when it has to end now. */
static bool watched_verdict(char *msg, size_t n)
{
    pthread_mutex_lock(&wlock);
    bool over = false;
    if (W.on) {
        char title[300], names[1500] = "";
        op_title(&W.d, title, sizeof title);
        int *gone = malloc((size_t)(W.n > 0 ? W.n : 1) * sizeof *gone), k = 0;
        bool late = now() > W.deadline;
        for (int i = 0; B && gone && i < W.n; i++) {
            if (W.members[i] == me) continue;
            slot *s = &B->slots[W.members[i]];
            if (slot_exited(s) && !entered(s, &W.d)) gone[k++] = W.members[i];
        }
        if (k > 0) {
            name_missing(gone, k, &W.d, NULL, names, sizeof names);
            snprintf(msg, n, "%s cannot complete: %s", title, names);
            over = true;
        } else if (late) {
            /* the ranks it waits for that are elsewhere */
            for (int i = 0; B && gone && i < W.n; i++) {
                if (W.members[i] == me) continue;
                slot *s = &B->slots[W.members[i]];
                em_op_desc cur, act;
                slot_read(s, &cur, &act);
                bool there = W.d.code == EM_OP_INIT ? act.code == EM_OP_INIT || atomic_load(&s->initialized)
                           : W.d.code == EM_OP_RECV ? act.code == EM_OP_SEND && act.root == me
                           : W.d.code == EM_OP_SEND ? act.code == EM_OP_RECV && act.root == me
                           : act.code == W.d.code && act.group == W.d.group && act.seq == W.d.seq;
                if (!there) gone[k++] = W.members[i];
            }
            if (!B) snprintf(names, sizeof names, "the ranks it waits for are not known (no job board: the ranks are "
                             "on several machines)");
            else if (k > 0) name_missing(gone, k, &W.d, W.d.code == EM_OP_RECV ? "did not send" : "did not arrive",
                                         names, sizeof names);
            else snprintf(names, sizeof names, "every rank it waits for is in it");
            snprintf(msg, n, "%s timed out after %g s: %s", title, W.timeout, names);
            over = true;
        }
        free(gone);
    }
    pthread_mutex_unlock(&wlock);
    return over;
}

/* ---- device work --------------------------------------------------------------- */

/* Queued NCCL work in the order it was queued: one comm stream runs it in
 * that order, so only the oldest is polled (when it is done, so is
 * everything before the next). The program's thread appends (under
 * dlock); the watchdog's polls and pops, holding plock while a mark is in
 * its hands, so em_watch_device(NULL) can wait for it. */
typedef struct dwork {
    em_op_desc d;
    void *mark;
    const int *members;
    int n;
    double queued, timeout;
} dwork;
static pthread_mutex_t dlock = PTHREAD_MUTEX_INITIALIZER, plock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const em_comm_backend *be;
    dwork *q;
    size_t head, count, cap;    /* a ring */
    double gone_since;          /* when a member of the oldest was first seen exited */
} D;

static void device_clear_locked(void)
{
    for (size_t i = 0; i < D.count; i++) D.be->drop_mark(D.q[(D.head + i) % D.cap].mark);
    D.head = D.count = 0;
    D.gone_since = 0;
}

void em_watch_device(const em_comm_backend *be)
{
    pthread_mutex_lock(&plock);
    pthread_mutex_lock(&dlock);
    if (D.be) device_clear_locked();
    D.be = be;
    pthread_mutex_unlock(&dlock);
    pthread_mutex_unlock(&plock);
}

void em_watch_device_add(const em_op_desc *d, void *mark, const int *members, int n, double timeout)
{
    pthread_mutex_lock(&dlock);
    if (D.count == D.cap) {
        size_t cap = D.cap ? 2 * D.cap : 64;
        dwork *more = malloc(cap * sizeof *more);
        if (!more) {
            /* unwatched rather than unrun */
            pthread_mutex_unlock(&dlock);
            if (D.be) D.be->drop_mark(mark);
            return;
        }
        for (size_t i = 0; i < D.count; i++) more[i] = D.q[(D.head + i) % D.cap];
        free(D.q);
        D.q = more;
        D.head = 0;
        D.cap = cap;
    }
    dwork *w = &D.q[(D.head + D.count) % D.cap];
    w->d = *d;
    w->mark = mark;
    w->members = members;
    w->n = n;
    w->queued = now();
    w->timeout = timeout;
    D.count++;
    pthread_mutex_unlock(&dlock);
}

/* EMBER_NCCL_ASYNC_ERROR_HANDLING (PyTorch's TORCH_NCCL_ASYNC_ERROR_HANDLING):
 * 1 (the default) aborts and ends the process, 2 only aborts */
static bool device_cleanup_only(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *v = getenv("EMBER_NCCL_ASYNC_ERROR_HANDLING");
        mode = v && atoi(v) == 2 ? 2 : 1;
    }
    return mode == 2;
}

/* the ranks of w that have exited, into gone; how many */
static int device_gone(const dwork *w, int *gone, int cap)
{
    int k = 0;
    if (!B) return 0;
    if (!w->members) {
        int peer = (int)w->d.root;
        if (peer >= 0 && peer < B->nranks && peer != me && slot_exited(&B->slots[peer])) gone[k++] = peer;
        return k;
    }
    for (int i = 0; i < w->n && k < cap; i++)
        if (w->members[i] != me && w->members[i] < B->nranks && slot_exited(&B->slots[w->members[i]]))
            gone[k++] = w->members[i];
    return k;
}

/* The oldest queued device work, polled; a message in msg when it cannot
 * finish. The backend is cancelled then where the program goes on
 * (EMBER_NCCL_ASYNC_ERROR_HANDLING=2); otherwise *cancel is set and the
 * watchdog cancels it just before it ends the process: an abort lets the
 * stuck work finish, and the program's thread, waiting on it, must not run
 * on with the results meanwhile. */
static bool device_verdict(char *msg, size_t n, const em_comm_backend **cancel)
{
    bool over = false;
    pthread_mutex_lock(&plock);
    for (int polled = 0; polled < 100000; polled++) {
        pthread_mutex_lock(&dlock);
        if (!D.be || D.count == 0) {
            pthread_mutex_unlock(&dlock);
            break;
        }
        dwork w = D.q[D.head];
        const em_comm_backend *be = D.be;
        pthread_mutex_unlock(&dlock);
        char why[1200] = "";
        int r = be->poll(w.mark, why, sizeof why);
        if (r == -2) {
            /* cancelled by whoever saw the failure first (the program's
             * thread, with an error it raises; the job's abort): theirs to say */
            pthread_mutex_lock(&dlock);
            device_clear_locked();
            pthread_mutex_unlock(&dlock);
            break;
        }
        if (r == 1) {
            pthread_mutex_lock(&dlock);
            D.head = (D.head + 1) % D.cap;
            D.count--;
            D.gone_since = 0;
            pthread_mutex_unlock(&dlock);
            be->drop_mark(w.mark);
            continue;
        }
        int gone[64], k = r == 0 ? device_gone(&w, gone, 64) : 0;
        double t = now();
        if (k > 0 && D.gone_since == 0) D.gone_since = t;
        /* a peer that finished its part and exited: this rank's GPU is a
         * moment behind, so an exit counts once it has lasted a little */
        bool gone_long = k > 0 && t - D.gone_since > 0.25;
        bool late = t - w.queued > w.timeout;
        if (r == 0 && !late && !gone_long) break;
        char title[300], names[1500] = "";
        op_title(&w.d, title, sizeof title);
        if (r < 0) {
            snprintf(msg, n, "%s failed on the GPU: %s; the NCCL communicator was aborted", title, why);
        } else if (gone_long) {
            name_missing(gone, k, &w.d, NULL, names, sizeof names);
            snprintf(msg, n, "%s cannot complete on the GPU: %s; the NCCL communicator was aborted", title, names);
        } else {
            if (B && w.n > 1) snprintf(names, sizeof names, "every rank it waits for entered it");
            else if (w.n > 1 || !w.members) snprintf(names, sizeof names, "the ranks it waits for are not known "
                                                     "(no job board: the ranks are on several machines)");
            else snprintf(names, sizeof names, "a world of one: it waits for no other rank");
            snprintf(msg, n, "%s timed out after %g s: NCCL has not finished it on the GPU (%s); the NCCL "
                     "communicator was aborted", title, w.timeout, names);
        }
        if (device_cleanup_only()) be->cancel(msg);
        else *cancel = be;
        pthread_mutex_lock(&dlock);
        device_clear_locked();
        pthread_mutex_unlock(&dlock);
        over = true;
        break;
    }
    pthread_mutex_unlock(&plock);
    return over;
}

static void *watch_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct timespec tick = {0, 10000000};
    int grace = 0;
    for (;;) {
        nanosleep(&tick, NULL);
        char msg[3000], why[1200];
        if (watched_verdict(msg, sizeof msg)) {
            em_board_fail(msg);
            em_board_wait_others(1.0);
            end_process(msg, NULL);
        }
        const em_comm_backend *cancel = NULL;
        if (device_verdict(msg, sizeof msg, &cancel)) {
            if (device_cleanup_only()) {
                fprintf(stderr, "ember: rank %d: %s (EMBER_NCCL_ASYNC_ERROR_HANDLING=2: the program goes on; "
                        "its next NCCL call fails)\n", watch_rank, msg);
            } else {
                em_board_fail(msg);
                em_board_wait_others(1.0);
                end_process(msg, cancel);
            }
        }
        if (!atomic_load(&self_failing) && em_board_failed(why, sizeof why)) {
            /* in a watched call it cannot return; otherwise the program may
             * be raising its own error: a second to say it itself */
            pthread_mutex_lock(&wlock);
            bool blocked = W.on;
            pthread_mutex_unlock(&wlock);
            if (blocked || ++grace > 100) {
                snprintf(msg, sizeof msg, "stopped: %s", why);
                end_process(msg, NULL);
            }
        }
    }
    return NULL;
}

void em_watch_start(void)
{
    pthread_mutex_lock(&wlock);
    if (!watch_started) {
        pthread_t t;
        if (pthread_create(&t, NULL, watch_main, NULL) == 0) {
            pthread_detach(t);
            watch_started = true;
        }
    }
    pthread_mutex_unlock(&wlock);
}

/* ---- exit ---------------------------------------------------------------------- */

/* A rank that ends marks itself exited at once (a rank waiting for it then
 * fails naming it), then waits for the job's outcome: when every other rank
 * has ended too, it goes on to exit (and to MPI_Finalize); when the job
 * fails meanwhile, it ends with status 1 as well. */
static void on_exit_handler(int status, void *arg)
{
    (void)arg;
    static bool done;
    if (done || !B) return;
    done = true;
    slot *s = &B->slots[me];
    em_board_activity(NULL);
    atomic_store(&s->lingering, 1);
    atomic_store(&s->status, status);
    atomic_store(&s->state, S_EXITED);
    struct timespec nap = {0, 5000000};
    for (;;) {
        char why[1200];
        if (!atomic_load(&self_failing) && em_board_failed(why, sizeof why)) {
            char msg[1300];
            snprintf(msg, sizeof msg, "stopped: %s", why);
            end_process(msg, NULL);
        }
        bool all = true;
        for (int r = 0; r < B->nranks && all; r++)
            if (r != me) all = slot_exited(&B->slots[r]) || atomic_load(&B->slots[r].pid) == 0;
        if (all || atomic_load(&self_failing)) {
            atomic_store(&s->lingering, 0);
            return;
        }
        nanosleep(&nap, NULL);
    }
}

void em_board_hook_exit(void)
{
    if (!B) return;
    on_exit(on_exit_handler, NULL);
    exit_hooked = true;
}
