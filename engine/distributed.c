/* distributed.c — process groups and collectives on tensors over a
 * communication backend (engine/comm.h) opened on first use. A collective
 * here is: check the tensors, make the buffers the backend can carry
 * (contiguous, float32 for float16/bfloat16 reductions), start the transfer,
 * and on completion copy the buffers back into the user's tensors. A work
 * object records what completion has to do, so the blocking and the async
 * form share one path. */
#include "distributed.h"
#include "dist_board.h"
#include "internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* comm: MPI, the host backend, always loaded by init (it launches and
 * bootstraps the job and carries CPU tensors); gpu_comm: NCCL, loaded for
 * backend "nccl" (CUDA tensors), NULL in a group over "mpi" only. */
static const em_comm_backend *comm, *gpu_comm, *nccl_lib;
static bool initialized, debug_checks;
static int my_rank, world_size;
static int *world_members;     /* 0..world_size-1: the default group's members */
static double timeout_s;       /* init_process_group's timeout */
static int64_t epoch;          /* init_process_group calls so far */
static void device_queued(void *mark);
static const em_comm_host comm_host = {.set_error = em_set_error, .last_error = em_error};
static em_comm_host nccl_host = {.set_error = em_set_error, .last_error = em_error, .queued = device_queued};

/* A process group: the default one (id 0, every rank, init's communicators)
 * or one from new_group. Every rank makes the same groups in the same order
 * (new_group is collective over the world), so ids agree across ranks; they
 * are never reused, so a destroyed group's id stays an error. */
typedef struct group {
    int id;
    int rank, size;     /* this process's rank in the group; -1: not a member */
    int *ranks;         /* the members' global ranks, ascending; NULL: 0..size-1 */
    void *h, *gh;       /* MPI's and NCCL's communicators (NULL: init's) */
    bool gpu;           /* CUDA tensors go over NCCL (backend "nccl") */
    int64_t seq;        /* collectives started in the group so far */
} group;
static group world;
static group **subgroups;
static int nsubgroups, subgroup_cap, next_group_id = 1;

/* Opens build/<file> (or $<env>) and calls its <symbol>; what names the
 * backend in errors, hint says what a failed dlopen usually means. */
static const em_comm_backend *load_backend(const char *file, const char *env_name, const char *symbol,
                                           const em_comm_host *host, const char *what, const char *hint)
{
    char local[4096];
    em_lib_beside_engine(local, sizeof local, file);
    const char *env = getenv(env_name);
    const char *path = env ? env : local[0] && access(local, F_OK) == 0 ? local : file;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        em_set_error("init_process_group: cannot load the %s backend (%s): %s", what, dlerror(), hint);
        return NULL;
    }
    em_comm_backend_init_fn init;
    *(void **)&init = dlsym(h, symbol);
    char why[512] = "";
    const em_comm_backend *be = init ? init(host, why, sizeof why) : NULL;
    if (!be) em_set_error("init_process_group: the %s backend (%s) cannot start: %s", what, path,
                          init ? why : "the library has no entry point");
    return be;
}

static const em_comm_backend *load_mpi(void)
{
    if (!comm)
        comm = load_backend("libember_mpi.so", "EMBER_MPI_LIB", "em_mpi_backend_init", &comm_host, "MPI",
                            "ember was built without MPI (it needs libopenmpi-dev: Debian's OpenMPI), or "
                            "OpenMPI's libraries are missing");
    return comm;
}

/* After load_mpi. The GPU is checked first: without one, say so rather
 * than fail inside NCCL. */
static const em_comm_backend *load_nccl(void)
{
    if (nccl_lib) return nccl_lib;
    em_cuda_stream_fn stream_fn = em_cuda_stream_getter();
    if (!stream_fn) {
        char why[512];
        snprintf(why, sizeof why, "%s", em_error());
        em_set_error("init_process_group: backend 'nccl' carries CUDA tensors and needs a GPU: %s", why);
        return NULL;
    }
    nccl_host.bootstrap = comm;
    nccl_host.compute_stream = stream_fn;
    /* the emulated device has its own NCCL (a world of one), built into
     * libember_cuda_emu.so, which libember_nccl_emu.so links */
    const char *mode = getenv("EMBER_CUDA");
    bool emu = mode && strcmp(mode, "emu") == 0;
    nccl_lib = load_backend(emu ? "libember_nccl_emu.so" : "libember_nccl.so", "EMBER_NCCL_LIB",
                            "em_nccl_backend_init", &nccl_host, "NCCL",
                            "ember was built without NCCL (the CUDA toolkit's nccl.h and libnccl.so), "
                            "or libnccl.so cannot be found");
    return nccl_lib;
}

/* init failed after the backends joined */
static void em_dist_destroy_backends(void)
{
    if (gpu_comm) gpu_comm->destroy();
    if (gpu_comm) em_watch_device(NULL);
    gpu_comm = NULL;
    comm->destroy();
}

static int env_int(const char *name, int otherwise)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : otherwise;
}

/* Under a plain mpirun with every rank on this machine, a job board made
 * now (the launcher's is there from the start): rank 0 makes the file, its
 * name travels over MPI, and it is unlinked once every rank has it open. */
static int make_board(void)
{
    const char *off = getenv("EMBER_JOB_BOARD");
    if (em_board_present() || world_size < 2 || env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 0) != world_size ||
        (off && strcmp(off, "off") == 0))
        return 0;
    char path[256] = "";
    if (my_rank == 0 && em_board_create(path, sizeof path, world_size)) path[0] = 0;
    if (comm->broadcast(NULL, path, sizeof path, EM_UINT8, 0, NULL)) return -1;
    path[sizeof path - 1] = 0;
    if (path[0] && em_board_open(path, my_rank)) return -1;
    if (comm->barrier(NULL, NULL)) return -1;
    if (my_rank == 0 && path[0]) unlink(path);
    return 0;
}

int em_dist_init(const char *backend, bool debug, double timeout)
{
    if (initialized)
        return em_set_error("init_process_group: the default process group is already initialised "
                            "(rank %d of %d over %s); call destroy_process_group first", my_rank, world_size,
                            em_dist_backend());
    bool nccl = strcmp(backend, "nccl") == 0;
    if (!nccl && strcmp(backend, "mpi") != 0)
        return em_set_error("init_process_group: unknown backend '%s' (expected 'mpi' or 'nccl')", backend);
    if (!(timeout > 0))
        return em_set_error("init_process_group: timeout must be a positive number of seconds, got %g", timeout);
    if (!load_mpi() || (nccl && !load_nccl())) return -1;
    if (em_board_attach_env()) return -1;
    /* MPI_Init waits for every rank: watched, so that one that never comes
     * (or has exited) ends the job instead of hanging it */
    int expected = env_int("OMPI_COMM_WORLD_SIZE", 1);
    int *all = malloc((size_t)(expected > 0 ? expected : 1) * sizeof *all);
    if (!all) return em_set_error("init_process_group: out of memory");
    for (int i = 0; i < expected; i++) all[i] = i;
    em_op_desc joining = {.code = EM_OP_INIT, .epoch = epoch + 1, .dtype = -1, .root = -1, .redop = -1};
    em_watch_set_rank(env_int("OMPI_COMM_WORLD_RANK", 0));
    em_board_activity(&joining);
    em_watch_begin(&joining, all, expected, timeout);
    em_watch_start();
    int rc = comm->init(&my_rank, &world_size);
    em_watch_end();
    em_board_activity(NULL);
    free(all);
    if (rc) return -1;
    if (nccl && nccl_lib->init(&my_rank, &world_size)) {
        char why[1024];
        snprintf(why, sizeof why, "%s", em_error());
        comm->destroy();
        return em_set_error("%s", why);
    }
    gpu_comm = nccl ? nccl_lib : NULL;
    if (gpu_comm) em_watch_device(gpu_comm);
    int *members = realloc(world_members, (size_t)world_size * sizeof *members);
    if (!members) {
        em_dist_destroy_backends();
        return em_set_error("init_process_group: out of memory");
    }
    world_members = members;
    for (int i = 0; i < world_size; i++) world_members[i] = i;
    if (make_board()) {
        char why[1024];
        snprintf(why, sizeof why, "%s", em_error());
        em_dist_destroy_backends();
        return em_set_error("%s", why);
    }
    world = (group){.id = 0, .rank = my_rank, .size = world_size, .gpu = nccl};
    initialized = true;
    debug_checks = debug;
    timeout_s = timeout;
    epoch++;
    em_board_set_initialized(true, epoch);
    /* after MPI's own exit handler, so it runs first: a rank that ends
     * says so before MPI_Finalize waits for the others */
    em_board_hook_exit();
    return 0;
}

bool em_dist_is_initialized(void) { return initialized; }
int em_dist_join_board(void) { return em_board_attach_env(); }
int em_dist_make_board(char *path, size_t pathn, int n) { return em_board_create(path, pathn, n); }
int em_dist_rank(void) { return initialized ? my_rank : -1; }
int em_dist_world_size(void) { return initialized ? world_size : -1; }
const char *em_dist_backend(void) { return initialized ? gpu_comm ? gpu_comm->name : comm->name : NULL; }

static int free_subgroup(group *g)
{
    int rc = g->gh ? gpu_comm->free_group(g->gh) : 0;
    em_hold_if_ending();        /* it waited for the device */
    if (g->h && comm->free_group(g->h)) rc = -1;
    free(g->ranks);
    free(g);
    return rc;
}

int em_dist_destroy(void)
{
    if (!initialized) return em_set_error("destroy_process_group: the default process group is not initialised");
    int rc = 0;
    for (int i = nsubgroups - 1; i >= 0; i--)
        if (free_subgroup(subgroups[i])) rc = -1;
    nsubgroups = 0;
    initialized = false;
    em_board_set_initialized(false, epoch);
    /* the backend synchronises first, watched: work that never ends ends the process */
    if (gpu_comm && gpu_comm->destroy()) rc = -1;
    em_hold_if_ending();
    if (gpu_comm) em_watch_device(NULL);
    gpu_comm = NULL;
    return comm->destroy() || rc ? -1 : 0;
}

void em_dist_abort(int code)
{
    /* the others stop too, each saying why, before MPI ends them */
    em_board_fail("it stopped with an error (its message says which)");
    em_board_wait_others(2.0);
    if (!initialized) return;
    if (gpu_comm) gpu_comm->abort(code);
    comm->abort(code);
}

int em_comm_op_parse(const char *s, em_comm_op *out)
{
    static const char *const names[EM_NCOMM_OPS] = {"sum", "avg", "max", "min", "product"};
    for (int i = 0; i < EM_NCOMM_OPS; i++) {
        if (strcasecmp(s, names[i]) == 0) {
            *out = (em_comm_op)i;
            return 0;
        }
    }
    return em_set_error("ReduceOp: unknown op '%s' (expected sum, avg, max, min or product)", s);
}

/* ---- work objects --------------------------------------------------------- */

/* the collective begun last on this thread: work_new keeps it for wait's messages */
static em_op_desc current;
static int end_collective(int rc);
static group *find_group(int id);

/* The device backend queued the transfer of `current`: the watchdog polls
 * it from now on (members: what it waits for; a send's or receive's peer
 * is in the description). */
static void device_queued(void *mark)
{
    const group *g = current.code == EM_OP_SEND || current.code == EM_OP_RECV ? NULL : find_group((int)current.group);
    const int *members = g ? g->ranks ? g->ranks : world_members : NULL;
    em_watch_device_add(&current, mark, members, g ? g->size : 0, timeout_s);
}

struct em_work {
    const em_comm_backend *be;  /* the backend that runs it */
    void *req;              /* the backend's request while running */
    bool done, failed;
    em_tensor *recv, *send; /* the buffers the backend uses (kept alive) */
    em_tensor *divide;      /* avg: recv is divided by the group size first */
    int ncopy;              /* then dst[i] <- src[i] (views of recv) */
    em_tensor **dst, **src;
    bool is_recv;
    int source;             /* a recv's sender, in its group (set by the backend) */
    int *source_ranks;      /* that group's global ranks (a copy; NULL: the world's) */
    em_op_desc desc;        /* what it is, for the watchdog's message while waited for */
    char error[1024];
};

/* one allocation: the struct, then the dst and src arrays */
static em_work *work_new(const em_comm_backend *be, int ncopy)
{
    size_t n = ncopy ? (size_t)ncopy : 1;
    em_work *w = calloc(1, sizeof *w + 2 * n * sizeof(em_tensor *));
    if (!w) {
        em_set_error("distributed: out of memory");
        return NULL;
    }
    w->be = be;
    w->desc = current;
    w->dst = (em_tensor **)(w + 1);
    w->src = w->dst + n;
    return w;
}

static void work_release(em_work *w)
{
    for (int i = 0; i < w->ncopy; i++) {
        em_release(w->dst[i]);
        em_release(w->src[i]);
    }
    w->ncopy = 0;
    em_release(w->recv);
    em_release(w->send);
    em_release(w->divide);
    w->recv = w->send = w->divide = NULL;
}

/* After the transfer: the average's division, then the copies back. */
static int work_complete(em_work *w)
{
    int rc = 0;
    if (w->divide && em_binary_(EM_DIV, w->recv, w->divide)) rc = -1;
    for (int i = 0; rc == 0 && i < w->ncopy; i++) {
        if (w->dst[i] == w->src[i] || em_data_ptr(w->dst[i]) == em_data_ptr(w->src[i])) {
            em_bump_version(w->dst[i]);   /* written in place by the backend */
            continue;
        }
        if (em_copy_(w->dst[i], w->src[i])) rc = -1;
    }
    w->done = true;
    if (rc) {
        w->failed = true;
        snprintf(w->error, sizeof w->error, "%s", em_error());
    }
    work_release(w);
    return rc;
}


/* A wait may block on peers: watched as the collective it completes. */
static int wait_watched(em_work *w, void *req)
{
    em_op_desc waiting = w->desc;
    waiting.extra = -2;     /* shown as "waiting for" */
    group *g = initialized ? find_group((int)w->desc.group) : NULL;
    const int *members = NULL;
    int n = 0, peer = (int)w->desc.root;
    if (w->desc.code == EM_OP_SEND || w->desc.code == EM_OP_RECV) {
        if (peer >= 0) members = &peer, n = 1;
        else if (g) members = g->ranks ? g->ranks : world_members, n = g->size;
    } else if (g) {
        members = g->ranks ? g->ranks : world_members;
        n = g->size;
    }
    em_board_activity(&waiting);
    em_watch_begin(&w->desc, members, n, timeout_s);
    int rc = w->be->wait(req);
    return end_collective(rc);
}

/* A device backend's work that failed (an asynchronous error seen here
 * first, or its communicators already aborted): the error names the op,
 * and the backend is cancelled with it, as the watchdog would (whoever
 * sees it first), so no later call waits on a broken communicator. */
static void work_failed(em_work *w)
{
    if (w->be->cancel) {
        char title[300];
        snprintf(w->error, sizeof w->error, "%s: %s", em_op_title(&w->desc, title, sizeof title), em_error());
        w->be->cancel(w->error);
    } else {
        snprintf(w->error, sizeof w->error, "%s", em_error());
    }
    em_set_error("%s", w->error);
}

int em_work_wait(em_work *w)
{
    if (w->done) return w->failed ? em_set_error("%s", w->error) : 0;
    void *req = w->req;
    w->req = NULL;
    if (req && wait_watched(w, req)) {
        w->done = w->failed = true;
        work_failed(w);
        work_release(w);
        return -1;
    }
    return work_complete(w);
}

int em_work_test(em_work *w, bool *done)
{
    if (!w->done && w->req) {
        bool finished = false;
        int rc = w->be->test(w->req, &finished);
        if (finished) w->req = NULL;
        if (rc) {
            w->done = w->failed = true;
            work_failed(w);
            work_release(w);
        } else if (finished && work_complete(w)) {
            *done = true;
            return -1;
        }
    }
    *done = w->done;
    return w->failed ? em_set_error("%s", w->error) : 0;
}

static void work_drop(em_work *w)
{
    work_release(w);
    free(w->source_ranks);
    free(w);
}

int em_work_source(em_work *w, int *rank)
{
    if (!w->is_recv)
        return em_set_error("Work._source_rank: this Work is not a receive's (only recv/irecv know a sender)");
    if (!w->done)
        return em_set_error("Work._source_rank: the receive has not completed: call wait() first");
    if (w->failed) return em_set_error("%s", w->error);
    *rank = w->source_ranks ? w->source_ranks[w->source] : w->source;
    return 0;
}

/* rc: the backend call that started the transfer in w. Blocking (work ==
 * NULL): completes and frees w; async: hands w to the caller. */
static int work_finish(em_work *w, int rc, em_work **work)
{
    if (rc == 0 && work) {
        *work = w;
        return 0;
    }
    if (rc == 0) rc = work_complete(w);
    work_drop(w);
    return rc;
}

void em_work_free(em_work *w)
{
    if (!w) return;
    if (!w->done) em_work_wait(w);
    work_drop(w);
}

/* dst <- src on completion (both retained) */
static void add_copy(em_work *w, em_tensor *dst, em_tensor *src)
{
    w->dst[w->ncopy] = em_retain(dst);
    w->src[w->ncopy] = em_retain(src);
    w->ncopy++;
}

/* ---- process groups ------------------------------------------------------- */

static int check_ready(const char *op)
{
    if (!initialized)
        return em_set_error("%s: the default process group is not initialised: call "
                            "ember.distributed.init_process_group first", op);
    return 0;
}

static group *find_group(int id)
{
    if (id == 0) return &world;
    for (int i = 0; i < nsubgroups; i++)
        if (subgroups[i]->id == id) return subgroups[i];
    return NULL;
}

/* The group a collective runs on; NULL with the error set. */
static group *use_group(const char *op, int id)
{
    if (check_ready(op)) return NULL;
    group *g = find_group(id);
    if (!g)
        em_set_error("%s: the process group was destroyed (destroy_process_group), or made before the default "
                     "group was last initialised", op);
    return g;
}

static int global_rank(const group *g, int r) { return g->ranks ? g->ranks[r] : r; }

/* g's rank of a global rank; -1 when not a member */
static int group_rank(const group *g, int global)
{
    if (!g->ranks) return global >= 0 && global < g->size ? global : -1;
    for (int i = 0; i < g->size; i++)
        if (g->ranks[i] == global) return i;
    return -1;
}

/* "0, 2, 3" (shortened past a few dozen) into a static buffer */
static const char *ranks_text(const group *g)
{
    static char buf[256];
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < g->size && at + 16 < sizeof buf; i++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%d", i ? ", " : "", global_rank(g, i));
    if (at + 16 >= sizeof buf) snprintf(buf + at, sizeof buf - at, ", ...");
    return buf;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int em_dist_group_info(int id, int *rank, int *size, const int **ranks)
{
    group *g = use_group("process group", id);
    if (!g) return -1;
    *rank = g->rank;
    *size = g->size;
    *ranks = g->ranks;
    return 0;
}

static int begin_collective(const group *g, int code, const em_tensor *t, int root, int redop, int64_t extra);
static int end_collective(int rc);

static int add_subgroup(group *g)
{
    if (nsubgroups == subgroup_cap) {
        int cap = subgroup_cap ? 2 * subgroup_cap : 8;
        group **more = realloc(subgroups, (size_t)cap * sizeof *more);
        if (!more) return em_set_error("new_group: out of memory");
        subgroups = more;
        subgroup_cap = cap;
    }
    subgroups[nsubgroups++] = g;
    return 0;
}

/* sorted, in range, no duplicates; n == 0: every rank, as PyTorch's [] */
static int *sorted_ranks(const int *ranks, int *n)
{
    int m = *n ? *n : world_size;
    int *s = malloc((size_t)m * sizeof *s);
    if (!s) {
        em_set_error("new_group: out of memory");
        return NULL;
    }
    for (int i = 0; i < m; i++) s[i] = *n ? ranks[i] : i;
    qsort(s, (size_t)m, sizeof *s, cmp_int);
    for (int i = 0; i < m; i++) {
        if (s[i] < 0 || s[i] >= world_size) {
            em_set_error("new_group: rank %d out of range: ranks are 0-based, 0..%d for world size %d", s[i],
                         world_size - 1, world_size);
        } else if (i > 0 && s[i] == s[i - 1]) {
            em_set_error("new_group: rank %d is listed twice: a group's ranks are distinct", s[i]);
        } else {
            continue;
        }
        free(s);
        return NULL;
    }
    *n = m;
    return s;
}

int em_dist_new_group(const int *ranks, int n, const char *backend, int *id)
{
    if (check_ready("new_group")) return -1;
    bool gpu = gpu_comm != NULL;
    if (backend && strcmp(backend, "mpi") == 0) gpu = false;
    else if (backend && strcmp(backend, "nccl") == 0) gpu = true;
    else if (backend) return em_set_error("new_group: unknown backend '%s' (expected 'mpi' or 'nccl')", backend);
    if (gpu && !gpu_comm)
        return em_set_error("new_group: backend 'nccl' needs a default group made with backend 'nccl' "
                            "(this one is over '%s')", comm->name);
    group *g = calloc(1, sizeof *g);
    if (!g) return em_set_error("new_group: out of memory");
    g->ranks = sorted_ranks(ranks, &n);
    if (!g->ranks) {
        free(g);
        return -1;
    }
    g->id = next_group_id;
    g->size = n;
    g->gpu = gpu;
    g->rank = group_rank(g, my_rank);
    /* the debug check compares a checksum of the members and the id */
    uint64_t sum = 0;   /* unsigned: wraps instead of overflowing */
    for (int i = 0; i < n; i++) sum = sum * 31 + (uint64_t)g->ranks[i] + 1;
    int rc = begin_collective(&world, EM_OP_NEW_GROUP, NULL, -1, -1, (int64_t)(sum % 1000000007u) * 64 + g->id);
    if (rc == 0) rc = comm->split(g->ranks, n, g->rank >= 0, &g->h);
    if (rc == 0 && gpu) rc = gpu_comm->split(g->ranks, n, g->rank >= 0, &g->gh);
    end_collective(0);
    if (rc == 0) rc = add_subgroup(g);
    if (rc) {
        char why[512];
        snprintf(why, sizeof why, "%s", em_error());
        free_subgroup(g);
        return em_set_error("%s", why);
    }
    next_group_id++;
    *id = g->id;
    return 0;
}

int em_dist_destroy_group(int id)
{
    if (check_ready("destroy_process_group")) return -1;
    if (id == 0) return em_dist_destroy();
    for (int i = 0; i < nsubgroups; i++) {
        if (subgroups[i]->id != id) continue;
        group *g = subgroups[i];
        memmove(subgroups + i, subgroups + i + 1, (size_t)(nsubgroups - i - 1) * sizeof *subgroups);
        nsubgroups--;
        return free_subgroup(g);
    }
    return em_set_error("destroy_process_group: the process group was already destroyed");
}

/* ---- checks ----------------------------------------------------------------- */

/* CPU tensors go over MPI in every group (PyTorch's nccl group refuses
 * them; ember's carries them over its bootstrap), CUDA tensors over NCCL,
 * on this rank's GPU only. */
static int check_tensor(const char *op, const group *g, const em_tensor *t)
{
    em_device dev = em_dev(t);
    if (dev.type == EM_CPU) return 0;
    if (!g->gpu)
        return em_set_error("%s: a %s tensor on cuda:%d: the process group's backend 'mpi' carries CPU tensors; "
                            "%s carries CUDA tensors (or use t:cpu())", op, em_dtype_name(t->dtype), dev.index,
                            g->id ? "a group from new_group(ranks, {backend = \"nccl\"}) in an nccl job"
                                  : "init_process_group({backend = \"nccl\"})");
    int mine = gpu_comm->device();
    if (dev.index != mine)
        return em_set_error("%s: a %s tensor on cuda:%d, but this rank's GPU is cuda:%d (backend 'nccl' uses one "
                            "GPU per process, chosen by its local rank): move it with t:to(\"cuda:%d\")", op,
                            em_dtype_name(t->dtype), dev.index, mine, mine);
    return 0;
}

static const em_comm_backend *backend_of(const em_tensor *t) { return em_dev(t).type == EM_CPU ? comm : gpu_comm; }

/* the communicator of g in backend be */
static void *handle(const group *g, const em_comm_backend *be) { return be == comm ? g->h : g->gh; }

/* every tensor of a collective is in the memory of one backend */
static int check_device(const char *op, const group *g, const char *what, const em_tensor *a, const em_tensor *like)
{
    if (em_dev(a).type != em_dev(like).type)
        return em_set_error("%s: %s is a %s tensor and the input a %s tensor: one collective runs on one device",
                            op, what, em_dev(a).type == EM_CPU ? "CPU" : "CUDA",
                            em_dev(like).type == EM_CPU ? "CPU" : "CUDA");
    return check_tensor(op, g, a);
}

/* A global rank (src, dst, peer) as g's rank: *out. */
static int check_rank(const char *op, const group *g, const char *what, int r, int *out)
{
    if (r < 0 || r >= world_size)
        return em_set_error("%s: %s rank %d out of range: ranks are 0-based, 0..%d for world size %d", op, what, r,
                            world_size - 1, world_size);
    *out = group_rank(g, r);
    if (*out < 0)
        return em_set_error("%s: %s rank %d is not in the process group (its ranks: %s); %s is a global rank, as "
                            "in PyTorch", op, what, r, ranks_text(g), what);
    return 0;
}

/* The op the backend runs: avg sums (the engine divides), bool sums are
 * logical or and products logical and, as in PyTorch. */
static int backend_op(const char *op, em_dtype d, em_comm_op rop, em_comm_op *out)
{
    if ((unsigned)rop >= EM_NCOMM_OPS) return em_set_error("%s: unknown reduce op %d", op, (int)rop);
    bool floating = d == EM_FLOAT32 || d == EM_FLOAT64 || d == EM_FLOAT16 || d == EM_BFLOAT16;
    if (rop == EM_COMM_AVG && !floating)
        return em_set_error("%s: ReduceOp.AVG needs a floating-point tensor, got %s (use SUM and divide)", op,
                            em_dtype_name(d));
    *out = rop == EM_COMM_AVG ? EM_COMM_SUM : rop;
    if (d == EM_BOOL && rop == EM_COMM_SUM) *out = EM_COMM_MAX;
    if (d == EM_BOOL && rop == EM_COMM_PRODUCT) *out = EM_COMM_MIN;
    return 0;
}

static int check_like(const char *op, const group *g, const char *what, const em_tensor *a, const em_tensor *like)
{
    bool same = a->ndim == like->ndim && a->dtype == like->dtype;
    for (int i = 0; same && i < a->ndim; i++) same = a->sizes[i] == like->sizes[i];
    if (!same)
        return em_set_error("%s: %s is %s %s, expected %s %s like the input", op, what, em_dtype_name(a->dtype),
                            em_shape_tmp(a), em_dtype_name(like->dtype), em_shape_tmp(like));
    return check_device(op, g, what, a, like);
}

/* big holds group-size blocks shaped like small: [size * d1, d2, ...] or
 * [size, d1, d2, ...] */
static int check_blocks(const char *op, const group *g, const char *what, const em_tensor *big,
                        const em_tensor *small)
{
    int n = g->size;
    bool ok = big->dtype == small->dtype && big->ndim >= 1;
    if (ok && big->ndim == small->ndim && small->ndim > 0) {
        ok = big->sizes[0] == n * small->sizes[0];
        for (int i = 1; ok && i < big->ndim; i++) ok = big->sizes[i] == small->sizes[i];
    } else if (ok && big->ndim == small->ndim + 1) {
        ok = big->sizes[0] == n;
        for (int i = 1; ok && i < big->ndim; i++) ok = big->sizes[i] == small->sizes[i - 1];
    } else {
        ok = false;
    }
    if (!ok)
        return em_set_error("%s: %s is %s %s; with %s size %d and %s %s per rank it must be %s with "
                            "dim 1 of size %d times the per-rank size (or one more leading dim of size %d)", op,
                            what, em_dtype_name(big->dtype), em_shape_tmp(big), g->id ? "group" : "world", n,
                            em_dtype_name(small->dtype), em_shape_tmp(small), em_dtype_name(small->dtype), n, n);
    return check_device(op, g, what, big, small);
}

static const int *members_of(const group *g) { return g->ranks ? g->ranks : world_members; }


/* EMBER_DISTRIBUTED_DEBUG=DETAIL: every member's description of the
 * collective, gathered over MPI (so it works with ranks on several machines,
 * where there is no board), compared, each rank's named on a mismatch. Every
 * member sees the same, so every member raises the same error and the job
 * can go on. */
static int debug_compare(const group *g, const em_op_desc *d)
{
    em_op_desc *all = malloc((size_t)g->size * sizeof *all);
    if (!all) return em_set_error("%s: out of memory", em_op_name(d->code));
    if (comm->all_gather(g->h, d, all, sizeof *d / sizeof(int64_t), EM_INT64, NULL)) {
        free(all);
        return -1;
    }
    int rc = em_desc_mismatch(d, members_of(g), g->size, all);
    free(all);
    return rc;
}

/* Every collective starts here, after its own arguments are checked: its
 * number in the group, then the check that every member passed the same
 * (on the job board, always; over MPI too with the debug checks), then the
 * watchdog is armed for the blocking part (end_collective disarms). */
static int begin_collective(const group *cg, int code, const em_tensor *t, int root, int redop, int64_t extra)
{
    group *g = (group *)cg;
    em_op_desc *d = &current;
    *d = (em_op_desc){.code = code, .group = g->id, .epoch = epoch, .seq = ++g->seq, .dtype = t ? (int64_t)t->dtype : -1,
                      .ndim = t ? t->ndim : 0, .root = root, .redop = redop, .extra = extra};
    for (int i = 0; t && i < t->ndim && i < EM_DESC_DIMS; i++) d->sizes[i] = t->sizes[i];
    if (em_board_rendezvous(d, members_of(g), g->size, timeout_s)) return -1;
    if (debug_checks && debug_compare(g, d)) return -1;
    em_watch_begin(d, members_of(g), g->size, timeout_s);
    return 0;
}

/* A send or receive: what the watchdog waits for (src -1: any member). */
static void begin_p2p(const group *g, int code, const em_tensor *t, int peer, int tag)
{
    em_op_desc *d = &current;
    *d = (em_op_desc){.code = code, .group = g->id, .epoch = epoch, .dtype = t->dtype, .ndim = t->ndim, .root = peer,
                      .redop = -1, .extra = tag};
    for (int i = 0; i < t->ndim && i < EM_DESC_DIMS; i++) d->sizes[i] = t->sizes[i];
    em_board_activity(d);
    if (peer >= 0) em_watch_begin(d, &peer, 1, timeout_s);
    else em_watch_begin(d, members_of(g), g->size, timeout_s);
}

/* rc through; the watchdog disarmed and the board told this rank computes */
static int end_collective(int rc)
{
    em_watch_end();
    em_board_activity(NULL);
    return rc;
}

/* A rank outside the group takes no part, as in PyTorch (which warns):
 * nothing runs and there is no Work. */
static int not_member(em_work **work)
{
    if (work) *work = NULL;
    return 0;
}

/* ---- buffers ------------------------------------------------------------------ */

/* The dtype a reduction of d travels in: d where the backend reduces it, else
 * float32 for the half types (rounded once, on every backend alike) and int32
 * for the integers (NCCL has no int16): sums, products, max and min of int32
 * keep the low 16 bits exact, so the result wraps as int16's own would. */
static em_dtype carried_dtype(const em_comm_backend *be, em_dtype d)
{
    if (be->reduces(d)) return d;
    return em_dtype_is_int(d) ? EM_INT32 : EM_FLOAT32;
}

/* What the backend reads and writes for t: t itself when contiguous and
 * carried as it is, else a contiguous copy (in carried_dtype for a reduction
 * of a dtype the backend cannot reduce). */
static em_tensor *carry(const em_tensor *t, bool reducing)
{
    if (!reducing || backend_of(t)->reduces(t->dtype)) return em_contiguous(t);
    em_tensor *f = em_to_dtype(t, carried_dtype(backend_of(t), t->dtype));
    if (!f) return NULL;
    em_tensor *c = em_contiguous(f);
    em_release(f);
    return c;
}

static em_tensor *flat_buffer(int64_t n, em_dtype d, em_device dev)
{
    return em_empty(&n, 1, d, dev);
}

/* Block i of a flat buffer, viewed with like's shape. */
static em_tensor *block(em_tensor *flat, int64_t i, const em_tensor *like)
{
    int64_t n = em_numel(like);
    em_tensor *part = em_narrow(flat, 0, i * n, n);
    if (!part) return NULL;
    em_tensor *v = em_view(part, like->sizes, like->ndim);
    em_release(part);
    return v;
}

static size_t count(const em_tensor *t) { return (size_t)em_numel(t); }

/* ---- collectives ---------------------------------------------------------- */

static int reduce_common(const char *op, int code, em_tensor *t, int root, em_comm_op rop, int gid,
                         em_work **work)
{
    em_comm_op bop;
    group *g = use_group(op, gid);
    if (!g || check_tensor(op, g, t) || backend_op(op, t->dtype, rop, &bop)) return -1;
    int groot = 0;
    if (code == EM_OP_REDUCE && check_rank(op, g, "dst", root, &groot)) return -1;
    if (g->rank < 0) return not_member(work);
    if (em_check_writable(op, t) || begin_collective(g, code, t, code == EM_OP_REDUCE ? root : -1, rop, 0)) return -1;
    const em_comm_backend *be = backend_of(t);
    void *h = handle(g, be);
    if (!work && code == EM_OP_ALL_REDUCE && rop != EM_COMM_AVG && em_is_contiguous(t) && be->reduces(t->dtype)) {
        /* the common case straight through, no buffers: small sizes are all overhead */
        if (be->all_reduce(h, em_data_ptr(t), count(t), t->dtype, bop, NULL)) return -1;
        em_bump_version(t);
        return 0;
    }
    em_work *w = work_new(be, 1);
    if (!w) return -1;
    w->recv = carry(t, true);
    if (!w->recv) return work_finish(w, -1, NULL);
    bool lands = code == EM_OP_ALL_REDUCE || g->rank == groot;
    if (lands) add_copy(w, t, w->recv);
    if (lands && rop == EM_COMM_AVG) {
        w->divide = em_scalar(g->size, w->recv->dtype, em_dev(w->recv));
        if (!w->divide) return work_finish(w, -1, NULL);
    }
    void **req = work ? &w->req : NULL;
    int rc = code == EM_OP_ALL_REDUCE ? be->all_reduce(h, em_data_ptr(w->recv), count(t), w->recv->dtype, bop, req)
                                  : be->reduce(h, em_data_ptr(w->recv), count(t), w->recv->dtype, bop, groot, req);
    return work_finish(w, rc, work);
}

static int do_all_reduce(em_tensor *t, em_comm_op op, int group, em_work **work)
{
    return reduce_common("all_reduce", EM_OP_ALL_REDUCE, t, 0, op, group, work);
}

static int do_reduce(em_tensor *t, int dst, em_comm_op op, int group, em_work **work)
{
    return reduce_common("reduce", EM_OP_REDUCE, t, dst, op, group, work);
}

static int do_broadcast(em_tensor *t, int src, int gid, em_work **work)
{
    const char *op = "broadcast";
    group *g = use_group(op, gid);
    int gsrc;
    if (!g || check_tensor(op, g, t) || check_rank(op, g, "src", src, &gsrc)) return -1;
    if (g->rank < 0) return not_member(work);
    if (em_check_writable(op, t) || begin_collective(g, EM_OP_BROADCAST, t, src, -1, 0)) return -1;
    em_work *w = work_new(backend_of(t), 1);
    if (!w) return -1;
    w->recv = carry(t, false);
    if (!w->recv) return work_finish(w, -1, NULL);
    if (g->rank != gsrc) add_copy(w, t, w->recv);
    int rc = w->be->broadcast(handle(g, w->be), em_data_ptr(w->recv), count(t), t->dtype, gsrc,
                              work ? &w->req : NULL);
    return work_finish(w, rc, work);
}

/* gathers t into a flat buffer of group-size blocks; out (if given) gets
 * the buffer's blocks viewed as its shape, else outs[i] block i */
static int gather_common(const group *g, em_tensor *out, em_tensor *const *outs, const em_tensor *t,
                         em_work **work)
{
    em_work *w = work_new(backend_of(t), out ? 1 : g->size);
    if (!w) return -1;
    w->send = carry(t, false);
    w->recv = out ? carry(out, false) : flat_buffer((int64_t)g->size * em_numel(t), t->dtype, em_dev(t));
    if (!w->send || !w->recv) return work_finish(w, -1, NULL);
    if (out) add_copy(w, out, w->recv);
    for (int i = 0; !out && i < g->size; i++) {
        em_tensor *b = block(w->recv, i, t);
        if (!b) return work_finish(w, -1, NULL);
        add_copy(w, outs[i], b);
        em_release(b);
    }
    int rc = w->be->all_gather(handle(g, w->be), em_data_ptr(w->send), em_data_ptr(w->recv), count(t), t->dtype,
                               work ? &w->req : NULL);
    return work_finish(w, rc, work);
}

/* the list length of all_gather / reduce_scatter: one tensor per member */
static int check_list_size(const char *op, const group *g, const char *what, int n)
{
    if (n != g->size)
        return em_set_error("%s: the %s list has %d tensors, expected %d (the %s size)", op, what, n, g->size,
                            g->id ? "group" : "world");
    return 0;
}

static int do_all_gather(em_tensor *const *outs, int n, const em_tensor *t, int gid, em_work **work)
{
    const char *op = "all_gather";
    group *g = use_group(op, gid);
    if (!g || check_tensor(op, g, t)) return -1;
    if (g->rank < 0) return not_member(work);
    if (check_list_size(op, g, "output", n)) return -1;
    for (int i = 0; i < n; i++)
        if (check_like(op, g, "an output tensor", outs[i], t) || em_check_writable(op, outs[i])) return -1;
    if (begin_collective(g, EM_OP_ALL_GATHER, t, -1, -1, 0)) return -1;
    return gather_common(g, NULL, outs, t, work);
}

static int do_all_gather_into_tensor(em_tensor *out, const em_tensor *t, int gid, em_work **work)
{
    const char *op = "all_gather_into_tensor";
    group *g = use_group(op, gid);
    if (!g || check_tensor(op, g, t)) return -1;
    if (g->rank < 0) return not_member(work);
    if (check_blocks(op, g, "the output", out, t)) return -1;
    if (em_check_writable(op, out) || begin_collective(g, EM_OP_ALL_GATHER, t, -1, -1, 0)) return -1;
    return gather_common(g, out, NULL, t, work);
}

/* reduces group-size blocks shaped like out (the flat send buffer w->send,
 * already filled) and scatters block r to rank r's out */
static int scatter_common(const group *g, em_work *w, em_tensor *out, em_comm_op bop, em_comm_op rop,
                          em_work **work)
{
    w->recv = carry(out, true);
    if (!w->recv) return work_finish(w, -1, NULL);
    add_copy(w, out, w->recv);
    if (rop == EM_COMM_AVG) {
        w->divide = em_scalar(g->size, w->recv->dtype, em_dev(w->recv));
        if (!w->divide) return work_finish(w, -1, NULL);
    }
    int rc = w->be->reduce_scatter(handle(g, w->be), em_data_ptr(w->send), em_data_ptr(w->recv), count(out),
                                   w->recv->dtype, bop, work ? &w->req : NULL);
    return work_finish(w, rc, work);
}

static int do_reduce_scatter(em_tensor *out, em_tensor *const *ins, int n, em_comm_op rop, int gid, em_work **work)
{
    const char *op = "reduce_scatter";
    em_comm_op bop;
    group *g = use_group(op, gid);
    if (!g || check_tensor(op, g, out) || backend_op(op, out->dtype, rop, &bop)) return -1;
    if (g->rank < 0) return not_member(work);
    if (check_list_size(op, g, "input", n)) return -1;
    for (int i = 0; i < n; i++)
        if (check_like(op, g, "an input tensor", ins[i], out)) return -1;
    if (em_check_writable(op, out) || begin_collective(g, EM_OP_REDUCE_SCATTER, out, -1, rop, 0)) return -1;
    em_work *w = work_new(backend_of(out), 1);
    if (!w) return -1;
    em_dtype carried = carried_dtype(w->be, out->dtype);
    w->send = flat_buffer((int64_t)n * em_numel(out), carried, em_dev(out));
    if (!w->send) return work_finish(w, -1, NULL);
    for (int i = 0; i < n; i++) {
        em_tensor *b = block(w->send, i, out);
        int rc = b ? em_copy_(b, ins[i]) : -1;
        em_release(b);
        if (rc) return work_finish(w, -1, NULL);
    }
    return scatter_common(g, w, out, bop, rop, work);
}

static int do_reduce_scatter_tensor(em_tensor *out, const em_tensor *in, em_comm_op rop, int gid, em_work **work)
{
    const char *op = "reduce_scatter_tensor";
    em_comm_op bop;
    group *g = use_group(op, gid);
    if (!g || check_tensor(op, g, out) || backend_op(op, out->dtype, rop, &bop)) return -1;
    if (g->rank < 0) return not_member(work);
    if (check_blocks(op, g, "the input", in, out)) return -1;
    if (em_check_writable(op, out) || begin_collective(g, EM_OP_REDUCE_SCATTER, out, -1, rop, 0)) return -1;
    em_work *w = work_new(backend_of(out), 1);
    if (!w) return -1;
    w->send = carry(in, true);
    if (!w->send) return work_finish(w, -1, NULL);
    return scatter_common(g, w, out, bop, rop, work);
}

static int do_barrier(int gid, em_work **work)
{
    group *g = use_group("barrier", gid);
    if (!g) return -1;
    if (g->rank < 0) return not_member(work);
    if (begin_collective(g, EM_OP_BARRIER, NULL, -1, -1, 0)) return -1;
    /* in an nccl group the barrier also orders the GPU's work */
    em_work *w = work_new(g->gpu ? gpu_comm : comm, 0);
    if (!w) return -1;
    return work_finish(w, w->be->barrier(handle(g, w->be), work ? &w->req : NULL), work);
}

static int check_peer(const char *op, const group *g, const char *what, int peer, int *out)
{
    if (check_rank(op, g, what, peer, out)) return -1;
    if (peer == my_rank) return em_set_error("%s: %s rank %d is this rank: a rank cannot %s itself", op, what, peer, op);
    return 0;
}

static int do_send(const em_tensor *t, int dst, int tag, int gid, em_work **work)
{
    const char *op = "send";
    group *g = use_group(op, gid);
    int gdst;
    if (!g || check_tensor(op, g, t) || check_peer(op, g, "dst", dst, &gdst)) return -1;
    if (g->rank < 0) return not_member(work);
    em_work *w = work_new(backend_of(t), 0);
    if (!w) return -1;
    w->send = carry(t, false);
    if (!w->send) return work_finish(w, -1, NULL);
    begin_p2p(g, EM_OP_SEND, t, dst, tag);
    return work_finish(w, w->be->send(handle(g, w->be), em_data_ptr(w->send), count(t), t->dtype, gdst, tag,
                                      work ? &w->req : NULL), work);
}

static int do_recv(em_tensor *t, int src, int tag, int gid, int *source, em_work **work)
{
    const char *op = "recv";
    group *g = use_group(op, gid);
    int gsrc = EM_COMM_ANY_SOURCE;
    if (!g || check_tensor(op, g, t)) return -1;
    if (src != EM_COMM_ANY_SOURCE && check_peer(op, g, "src", src, &gsrc)) return -1;
    if (src == EM_COMM_ANY_SOURCE && em_dev(t).type != EM_CPU)
        return em_set_error("recv: receiving from any source (src = nil) into a CUDA tensor: NCCL has no "
                            "any-source receive; give the sender's rank, or receive into a CPU tensor (MPI)");
    *source = -1;
    if (g->rank < 0) return not_member(work);
    if (em_check_writable(op, t)) return -1;
    em_work *w = work_new(backend_of(t), 1);
    if (!w) return -1;
    w->is_recv = true;
    w->source = gsrc;
    if (g->ranks) {
        w->source_ranks = malloc((size_t)g->size * sizeof *w->source_ranks);
        if (!w->source_ranks) {
            em_set_error("recv: out of memory");
            return work_finish(w, -1, NULL);
        }
        memcpy(w->source_ranks, g->ranks, (size_t)g->size * sizeof *w->source_ranks);
    }
    w->recv = carry(t, false);
    if (!w->recv) return work_finish(w, -1, NULL);
    add_copy(w, t, w->recv);
    begin_p2p(g, EM_OP_RECV, t, src, tag);
    int rc = w->be->recv(handle(g, w->be), em_data_ptr(w->recv), count(t), t->dtype, gsrc, tag, &w->source,
                         work ? &w->req : NULL);
    if (rc == 0 && !work) *source = global_rank(g, w->source);
    return work_finish(w, rc, work);
}

/* ---- the public calls: the watchdog disarmed whatever the path out ------------- */

int em_dist_all_reduce(em_tensor *t, em_comm_op op, int group, em_work **work)
{
    return end_collective(do_all_reduce(t, op, group, work));
}

int em_dist_reduce(em_tensor *t, int dst, em_comm_op op, int group, em_work **work)
{
    return end_collective(do_reduce(t, dst, op, group, work));
}

int em_dist_broadcast(em_tensor *t, int src, int gid, em_work **work)
{
    return end_collective(do_broadcast(t, src, gid, work));
}

int em_dist_all_gather(em_tensor *const *outs, int n, const em_tensor *t, int gid, em_work **work)
{
    return end_collective(do_all_gather(outs, n, t, gid, work));
}

int em_dist_all_gather_into_tensor(em_tensor *out, const em_tensor *t, int gid, em_work **work)
{
    return end_collective(do_all_gather_into_tensor(out, t, gid, work));
}

int em_dist_reduce_scatter(em_tensor *out, em_tensor *const *ins, int n, em_comm_op rop, int gid, em_work **work)
{
    return end_collective(do_reduce_scatter(out, ins, n, rop, gid, work));
}

int em_dist_reduce_scatter_tensor(em_tensor *out, const em_tensor *in, em_comm_op rop, int gid, em_work **work)
{
    return end_collective(do_reduce_scatter_tensor(out, in, rop, gid, work));
}

int em_dist_barrier(int gid, em_work **work)
{
    return end_collective(do_barrier(gid, work));
}

int em_dist_send(const em_tensor *t, int dst, int tag, int gid, em_work **work)
{
    return end_collective(do_send(t, dst, tag, gid, work));
}

int em_dist_recv(em_tensor *t, int src, int tag, int gid, int *source, em_work **work)
{
    return end_collective(do_recv(t, src, tag, gid, source, work));
}
