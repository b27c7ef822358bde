/* bind_plot.c — the C half of ember.plot (lua/ember/plot.lua), as the private
 * table ember._plot:
 *
 *   spawn(argv)             a child process (gnuplot) on three pipes
 *   write_data(path, cols)  float64 tensors as one binary file of records
 *   decimate(x, y, buckets) a dense line cut to what a picture can show
 *   terminal_size()         the columns and rows of the terminal on stdout
 *   mkdtemp(template)       a private folder for a figure's data files
 *
 * Why C: Lua's io.popen gives one direction only, so Lua Torch's gnuplot
 * could not read gnuplot's error messages back, and writing a million numbers
 * from Lua as text is slow. Here the parent holds the child's stdin, stdout
 * and stderr; every wait polls all three (so neither side can block on a full
 * pipe), has a deadline, notices the child's death (EOF, EPIPE) and Ctrl-C
 * (em_interrupt_requested), and so never hangs.
 *
 * A process handle (metatable "ember.plot.Process"):
 *   p:send(text, timeout_ms)        -> true | nil, why
 *   p:wait_for(marker, timeout_ms)  -> out, err | nil, why, out, err
 *       reads until `marker` has appeared on both stdout and stderr and
 *       returns what came before it on each
 *   p:alive() -> boolean, p:pid(), p:kill([signal]), p:close() (also __gc)
 * `why` is "timeout", "interrupted" or how the child ended ("exited with
 * status 1", "killed by signal 9 (Killed)").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* pipe2, memmem, strsignal */
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "binding.h"

#define PROCESS_MT "ember.plot.Process"

extern char **environ;

typedef struct outbuf {
    char *data;
    size_t len, cap;
} outbuf;

typedef struct process {
    pid_t pid;
    int in, out, err;       /* our ends of the child's stdin, stdout, stderr; -1 once closed */
    bool reaped;
    int status;             /* waitpid's status once reaped */
    outbuf got[2];          /* read from stdout, stderr and not yet handed out */
} process;

/* ---- small helpers ----------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static bool buf_append(outbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) return false;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

/* Reaps the child if it has ended (wait: block until it has). */
static bool reap(process *p, bool wait)
{
    if (p->reaped) return true;
    int status;
    pid_t r;
    do r = waitpid(p->pid, &status, wait ? 0 : WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == p->pid || (r < 0 && errno == ECHILD)) {
        p->reaped = true;
        p->status = r == p->pid ? status : 0;
    }
    return p->reaped;
}

/* How the child ended, once reaped: "exited with status 1", "killed by signal 9 (Killed)". */
static void push_ending(lua_State *L, process *p)
{
    if (!p->reaped) lua_pushstring(L, "closed its output");
    else if (WIFSIGNALED(p->status))
        lua_pushfstring(L, "killed by signal %d (%s)", WTERMSIG(p->status), strsignal(WTERMSIG(p->status)));
    else
        lua_pushfstring(L, "exited with status %d", WEXITSTATUS(p->status));
}

/* After EOF on a pipe the child is going; give it a moment to be reaped, so
 * the message can say how it ended. */
static void reap_soon(process *p)
{
    for (int i = 0; i < 100 && !reap(p, false); i++) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* write() with SIGPIPE kept away from the process: a child that died makes
 * write fail with EPIPE instead of killing ember. The signal is blocked
 * around the call and a SIGPIPE raised by it is consumed before unblocking. */
static ssize_t write_nosigpipe(int fd, const char *s, size_t n)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t w = write(fd, s, n);
    int saved = errno;
    if (w < 0 && saved == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {}
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return w;
}

/* Where `marker` starts in b, or NULL (the output may hold any bytes). */
static char *find_marker(const outbuf *b, const char *marker)
{
    return b->data ? memmem(b->data, b->len, marker, strlen(marker)) : NULL;
}

enum { PUMP_OK, PUMP_TIMEOUT, PUMP_INTERRUPTED, PUMP_DEAD, PUMP_NOMEM };

/* One round of waiting: polls the child's stdin for writing (when `data`
 * still has bytes) and its stdout and stderr for reading, for at most
 * `slice_ms`; moves what it can. */
static int pump_once(process *p, const char **data, size_t *left, int slice_ms)
{
    struct pollfd fds[3];
    int n = 0, in_at = -1, at[2] = {-1, -1};
    if (data && *left > 0 && p->in >= 0) { in_at = n; fds[n++] = (struct pollfd){p->in, POLLOUT, 0}; }
    if (p->out >= 0) { at[0] = n; fds[n++] = (struct pollfd){p->out, POLLIN, 0}; }
    if (p->err >= 0) { at[1] = n; fds[n++] = (struct pollfd){p->err, POLLIN, 0}; }
    if (n == 0) return PUMP_DEAD;
    int r = poll(fds, (nfds_t)n, slice_ms);
    if (r < 0) return errno == EINTR ? PUMP_OK : PUMP_DEAD;
    for (int k = 0; k < 2; k++) {
        if (at[k] < 0 || !(fds[at[k]].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char chunk[65536];
        ssize_t got = read(fds[at[k]].fd, chunk, sizeof chunk);
        if (got > 0) {
            if (!buf_append(&p->got[k], chunk, (size_t)got)) return PUMP_NOMEM;
        } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
            close_fd(k == 0 ? &p->out : &p->err);
        }
    }
    if (in_at >= 0 && (fds[in_at].revents & (POLLOUT | POLLERR | POLLHUP))) {
        ssize_t w = write_nosigpipe(p->in, *data, *left);
        if (w > 0) {
            *data += w;
            *left -= (size_t)w;
        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
            close_fd(&p->in);
            return PUMP_DEAD;
        }
    }
    return PUMP_OK;
}

/* Polls in slices of 50 ms so that Ctrl-C and the deadline are noticed. */
static int pump_until(process *p, const char *data, size_t len, const char *marker, double deadline)
{
    for (;;) {
        bool written = len == 0;
        bool seen = !marker || (find_marker(&p->got[0], marker) && find_marker(&p->got[1], marker));
        if (written && seen) return PUMP_OK;
        if (em_interrupt_requested()) return PUMP_INTERRUPTED;
        double left_ms = deadline - now_ms();
        if (left_ms <= 0) return PUMP_TIMEOUT;
        if (!written && p->in < 0) return PUMP_DEAD;
        if (p->out < 0 && p->err < 0) return PUMP_DEAD;
        if (marker && written && (p->out < 0 || p->err < 0)) {
            /* one side closed before its marker came: the child is ending */
            if (!find_marker(&p->got[p->out < 0 ? 0 : 1], marker)) return PUMP_DEAD;
        }
        int r = pump_once(p, written ? NULL : &data, &len, left_ms < 50 ? (int)left_ms + 1 : 50);
        if (r != PUMP_OK) return r;
    }
}

/* Pushes nil, why for a failed pump. */
static int push_failure(lua_State *L, process *p, int r)
{
    lua_pushnil(L);
    switch (r) {
    case PUMP_TIMEOUT: lua_pushliteral(L, "timeout"); break;
    case PUMP_INTERRUPTED: lua_pushliteral(L, "interrupted"); break;
    case PUMP_NOMEM: lua_pushliteral(L, "out of memory reading its output"); break;
    default:
        reap_soon(p);
        push_ending(L, p);
    }
    return 2;
}

/* Pushes the part of buffer k before `marker` and drops it and the marker's
 * line from the buffer. Without the marker, pushes (and drops) everything. */
static void push_until_marker(lua_State *L, outbuf *b, const char *marker)
{
    if (!b->data) { lua_pushliteral(L, ""); return; }
    char *m = marker ? find_marker(b, marker) : NULL;
    size_t cut = m ? (size_t)(m - b->data) : b->len;
    lua_pushlstring(L, b->data, cut);
    size_t drop = cut;
    if (m) {
        drop += strlen(marker);
        if (drop < b->len && b->data[drop] == '\n') drop++;
    }
    memmove(b->data, b->data + drop, b->len - drop + 1);
    b->len -= drop;
}

/* ---- the process handle ------------------------------------------------------------ */

static process *check_process(lua_State *L)
{
    process *p = luaL_checkudata(L, 1, PROCESS_MT);
    if (p->pid <= 0) luaL_error(L, "plot: the gnuplot process was closed");
    return p;
}

static double check_deadline(lua_State *L, int idx)
{
    double ms = luaL_optnumber(L, idx, 30000);
    return now_ms() + (ms < 0 ? 0 : ms);
}

static int p_send(lua_State *L)
{
    process *p = check_process(L);
    size_t len;
    const char *text = luaL_checklstring(L, 2, &len);
    double deadline = check_deadline(L, 3);
    if (p->in < 0) return push_failure(L, p, PUMP_DEAD);
    int r = pump_until(p, text, len, NULL, deadline);
    if (r != PUMP_OK) return push_failure(L, p, r);
    lua_pushboolean(L, 1);
    return 1;
}

static int p_wait_for(lua_State *L)
{
    process *p = check_process(L);
    const char *marker = luaL_checkstring(L, 2);
    double deadline = check_deadline(L, 3);
    int r = pump_until(p, NULL, 0, marker, deadline);
    if (r != PUMP_OK) {
        push_failure(L, p, r);
        push_until_marker(L, &p->got[0], NULL);
        push_until_marker(L, &p->got[1], NULL);
        return 4;
    }
    push_until_marker(L, &p->got[0], marker);
    push_until_marker(L, &p->got[1], marker);
    return 2;
}

static int p_alive(lua_State *L)
{
    process *p = luaL_checkudata(L, 1, PROCESS_MT);
    lua_pushboolean(L, p->pid > 0 && !reap(p, false));
    return 1;
}

static int p_pid(lua_State *L)
{
    process *p = luaL_checkudata(L, 1, PROCESS_MT);
    lua_pushinteger(L, p->pid);
    return 1;
}

static int p_kill(lua_State *L)
{
    process *p = check_process(L);
    int sig = (int)luaL_optinteger(L, 2, SIGTERM);
    if (!reap(p, false) && kill(p->pid, sig) != 0)
        return luaL_error(L, "plot: kill(%d, %d): %s", (int)p->pid, sig, strerror(errno));
    return 0;
}

/* Closing stdin ends gnuplot; one that is stuck gets SIGKILL after 300 ms. */
static int p_close(lua_State *L)
{
    process *p = luaL_checkudata(L, 1, PROCESS_MT);
    if (p->pid <= 0) return 0;
    close_fd(&p->in);
    close_fd(&p->out);
    close_fd(&p->err);
    double deadline = now_ms() + 300;
    while (!reap(p, false) && now_ms() < deadline) {
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!p->reaped) {
        kill(p->pid, SIGKILL);
        reap(p, true);
    }
    for (int k = 0; k < 2; k++) {
        free(p->got[k].data);
        p->got[k] = (outbuf){0};
    }
    p->pid = 0;
    return 0;
}

static int p_tostring(lua_State *L)
{
    process *p = luaL_checkudata(L, 1, PROCESS_MT);
    if (p->pid > 0) lua_pushfstring(L, "gnuplot process %d", (int)p->pid);
    else lua_pushliteral(L, "gnuplot process (closed)");
    return 1;
}

/* spawn({"gnuplot", ...}) -> process | nil, message. The child gets its own
 * process group, so the terminal's Ctrl-C reaches ember, not gnuplot. */
static int m_spawn(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int argc = (int)luaL_len(L, 1);
    luaL_argcheck(L, argc >= 1 && argc < 64, 1, "expected a list of 1 to 63 strings");
    const char *argv[64];
    for (int i = 0; i < argc; i++) {
        lua_geti(L, 1, i + 1);
        argv[i] = luaL_checkstring(L, -1);   /* kept alive by the table */
        lua_pop(L, 1);
    }
    argv[argc] = NULL;

    process *p = lua_newuserdatauv(L, sizeof *p, 0);
    *p = (process){.pid = 0, .in = -1, .out = -1, .err = -1};
    luaL_setmetatable(L, PROCESS_MT);

    int fds[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    for (int k = 0; k < 3; k++) {
        if (pipe2(fds[k], O_CLOEXEC) != 0) {
            int e = errno;
            for (int j = 0; j < k; j++) { close(fds[j][0]); close(fds[j][1]); }
            lua_pushnil(L);
            lua_pushfstring(L, "pipe: %s", strerror(e));
            return 2;
        }
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0][0], 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1][1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[2][1], 2);
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &attr, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(fds[0][0]);
    close(fds[1][1]);
    close(fds[2][1]);
    if (rc != 0) {
        close(fds[0][1]);
        close(fds[1][0]);
        close(fds[2][0]);
        lua_pushnil(L);
        lua_pushfstring(L, "%s: %s", argv[0], strerror(rc));
        lua_pushinteger(L, rc);
        return 3;
    }
    p->pid = pid;
    p->in = fds[0][1];
    p->out = fds[1][0];
    p->err = fds[2][0];
    for (int k = 0; k < 3; k++) {
        int fd = k == 0 ? p->in : k == 1 ? p->out : p->err;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    return 1;
}

/* ---- data files -------------------------------------------------------------------- */

/* write_data(path, {t1, t2, ...}): the tensors (CPU, float64, contiguous,
 * the same number of elements n) as n records of k float64 values each,
 * native byte order: gnuplot reads them with
 * binary record=(n) format="%float64..." (or array=(w,h) for one column). */
static int m_write_data(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    int k = (int)luaL_len(L, 2);
    luaL_argcheck(L, k >= 1 && k <= 8, 2, "expected 1 to 8 columns");
    const double *col[8];
    int64_t n = -1;
    for (int j = 0; j < k; j++) {
        lua_geti(L, 2, j + 1);
        em_tensor *t = emlua_check(L, -1, "plot.write_data");
        if (t->dtype != EM_FLOAT64 || t->storage->device.type != EM_CPU || !em_is_contiguous(t))
            return luaL_error(L, "plot.write_data: column %d: expected a contiguous float64 CPU tensor", j + 1);
        if (n >= 0 && em_numel(t) != n)
            return luaL_error(L, "plot.write_data: column %d has %d values, column 1 has %d", j + 1,
                              (int)em_numel(t), (int)n);
        n = em_numel(t);
        col[j] = em_data_ptr(t);
        lua_pop(L, 1);   /* the table keeps the tensor alive */
    }
    enum { ROWS = 8192 };
    double *buf = k > 1 ? malloc(sizeof(double) * ROWS * (size_t)k) : NULL;
    if (k > 1 && !buf) return luaL_error(L, "plot.write_data: out of memory");
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(buf);
        return luaL_error(L, "plot: cannot write %s: %s", path, strerror(errno));
    }
    bool ok = true;
    for (int64_t start = 0; ok && start < n; start += ROWS) {
        int64_t rows = n - start < ROWS ? n - start : ROWS;
        if (k == 1) {
            ok = fwrite(col[0] + start, sizeof(double), (size_t)rows, f) == (size_t)rows;
            continue;
        }
        for (int64_t r = 0; r < rows; r++)
            for (int j = 0; j < k; j++) buf[r * k + j] = col[j][start + r];
        ok = fwrite(buf, sizeof(double) * (size_t)k, (size_t)rows, f) == (size_t)rows;
    }
    int e = errno;
    free(buf);
    if (fclose(f) != 0 && ok) { ok = false; e = errno; }
    if (!ok) return luaL_error(L, "plot: cannot write %s: %s", path, strerror(e));
    return 0;
}

/* decimate(x, y, buckets) -> x2, y2, or nil when x is not sorted.
 *
 * A line of many more points than the picture has pixel columns looks the
 * same drawn from, in each of `buckets` equal slices of x's range, its
 * first, lowest, highest and last points (M4 aggregation: Jugel et al.,
 * VLDB 2014); gnuplot then draws at most 4 * buckets points instead of
 * millions. x must be non-decreasing (a step count, a time). A NaN in y is
 * a gap in the line: it is kept, between the slices around it.
 * x, y: contiguous float64 CPU tensors of the same length. */
typedef struct m4_slice {
    int64_t first, last, lo, hi;   /* indices into x and y; first < 0: empty */
} m4_slice;

static void m4_flush(m4_slice *s, int64_t *keep, int64_t *nkeep)
{
    if (s->first < 0) return;
    int64_t idx[4] = {s->first, s->lo, s->hi, s->last};
    /* in index order, each once */
    for (int i = 1; i < 4; i++)
        for (int j = i; j > 0 && idx[j] < idx[j - 1]; j--) {
            int64_t t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t;
        }
    for (int i = 0; i < 4; i++)
        if (i == 0 || idx[i] != idx[i - 1]) keep[(*nkeep)++] = idx[i];
    s->first = -1;
}

static int m_decimate(lua_State *L)
{
    em_tensor *tx = emlua_check(L, 1, "plot.decimate");
    em_tensor *ty = emlua_check(L, 2, "plot.decimate");
    lua_Integer buckets = luaL_checkinteger(L, 3);
    luaL_argcheck(L, buckets >= 1, 3, "expected at least one bucket");
    const em_tensor *cols[2] = {tx, ty};
    for (int j = 0; j < 2; j++)
        if (cols[j]->dtype != EM_FLOAT64 || cols[j]->storage->device.type != EM_CPU ||
            !em_is_contiguous(cols[j]) || em_numel(cols[j]) != em_numel(tx))
            return luaL_error(L, "plot.decimate: expected two contiguous float64 CPU tensors of one length");
    int64_t n = em_numel(tx);
    const double *x = em_data_ptr(tx), *y = em_data_ptr(ty);
    for (int64_t i = 1; i < n; i++)
        if (!(x[i] >= x[i - 1])) { lua_pushnil(L); return 1; }   /* unsorted, or a NaN */
    double lo = n ? x[0] : 0, hi = n ? x[n - 1] : 0;
    int64_t *keep = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!keep) return luaL_error(L, "plot.decimate: out of memory");
    int64_t nkeep = 0, cur = -1;
    m4_slice s = {-1, -1, -1, -1};
    double scale = hi > lo ? (double)buckets / (hi - lo) : 0;
    for (int64_t i = 0; i < n; i++) {
        if (y[i] != y[i]) {               /* NaN: a gap, kept as it is */
            m4_flush(&s, keep, &nkeep);
            keep[nkeep++] = i;
            continue;
        }
        int64_t b = (int64_t)((x[i] - lo) * scale);
        if (b >= buckets) b = buckets - 1;
        if (b != cur) { m4_flush(&s, keep, &nkeep); cur = b; }
        if (s.first < 0) { s = (m4_slice){i, i, i, i}; continue; }
        s.last = i;
        if (y[i] < y[s.lo]) s.lo = i;
        if (y[i] > y[s.hi]) s.hi = i;
    }
    m4_flush(&s, keep, &nkeep);
    int64_t size = nkeep;
    em_tensor *ox = em_empty(&size, 1, EM_FLOAT64, tx->storage->device);
    em_tensor *oy = ox ? em_empty(&size, 1, EM_FLOAT64, tx->storage->device) : NULL;
    if (!ox || !oy) {
        free(keep);
        if (ox) em_release(ox);
        return emlua_fail(L);
    }
    double *px = em_data_ptr(ox), *py = em_data_ptr(oy);
    for (int64_t k = 0; k < nkeep; k++) {
        px[k] = x[keep[k]];
        py[k] = y[keep[k]];
    }
    free(keep);
    emlua_push(L, ox);
    emlua_push(L, oy);
    return 2;
}

/* terminal_size() -> columns, rows of the terminal on stdout (or stderr), or nil. */
static int m_terminal_size(lua_State *L)
{
    struct winsize ws;
    for (int fd = 1; fd <= 2; fd++) {
        if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
            lua_pushinteger(L, ws.ws_col);
            lua_pushinteger(L, ws.ws_row);
            return 2;
        }
    }
    return 0;
}

/* mkdtemp(template) -> the created folder (mode 0700) */
static int m_mkdtemp(lua_State *L)
{
    size_t len;
    char *path = emlua_string_copy(L, 1, &len);
    if (!mkdtemp(path)) return luaL_error(L, "plot: cannot create a folder %s: %s", lua_tostring(L, 1), strerror(errno));
    lua_pushstring(L, path);
    return 1;
}

void emlua_open_plot(lua_State *L)
{
    static const luaL_Reg process_methods[] = {
        {"send", p_send},   {"wait_for", p_wait_for}, {"alive", p_alive}, {"pid", p_pid},
        {"kill", p_kill},   {"close", p_close},       {NULL, NULL},
    };
    emlua_new_class(L, PROCESS_MT, process_methods, p_close, p_close, p_tostring);

    static const luaL_Reg functions[] = {
        {"spawn", m_spawn},
        {"write_data", m_write_data},
        {"decimate", m_decimate},
        {"terminal_size", m_terminal_size},
        {"mkdtemp", m_mkdtemp},
        {NULL, NULL},
    };
    luaL_newlib(L, functions);
    lua_setfield(L, -2, "_plot");
}
