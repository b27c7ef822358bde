/* debug_attach.c — `ember --listen` (or EMBER_LISTEN=1): the debugger for a
 * client that attaches later, `ember --attach PID` (attach_client.c), over
 * a Unix socket of this user's (mode 0600 in a 0700 directory).
 *
 * Nothing touches the running Lua code until a client comes: a listener
 * thread waits in accept(2). For a client it takes (the same user, checked
 * with SO_PEERCRED; one at a time) it sends the main thread SIGURG, whose
 * handler does what lua.c's SIGINT handler does: lua_sethook on the running
 * threads (run.c). That is the one Lua call allowed asynchronously (ldebug.c:
 * "async safe", it only sets fields of the thread), and it is made on the
 * thread that owns the state, never from the listener. At the next
 * instruction the hook opens the (dbg) prompt with this file's console (the
 * socket) and goes again, so the job runs at full speed before and after.
 *
 * Who reads the socket: the main thread while the prompt is open; the
 * listener while the job runs after `continue` (a pause byte for Ctrl-C in
 * the client, or EOF when the client is gone, each reaching the main thread
 * as an attach does). The state, under the mutex, says which. Writes never
 * raise SIGPIPE: a client that vanished must not kill the job. */
#include "debug.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* NO_CLIENT -> PENDING (accepted; the hook is coming) -> AT_PROMPT <-> RUNNING
 * (-> GONE when the client leaves while the job runs) -> NO_CLIENT */
enum { NO_CLIENT, PENDING, AT_PROMPT, RUNNING, GONE };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int state = NO_CLIENT;
static int client_fd = -1;      /* accepted, not yet taken by the main thread */
static bool client_color;
static long client_pid;

static int listen_fd = -1;
static int wake_pipe[2] = {-1, -1};   /* the listener polls again */
static pthread_t main_thread;
static pid_t owner;             /* the process that listens (not a forked child) */
static char sock_path[sizeof ((struct sockaddr_un *)0)->sun_path];

/* the session, main thread only */
static int session_fd = -1;
static FILE *session_out;
static int first_session_break;
static dbg_console remote;

static void wake(void)
{
    char c = 0;
    ssize_t r = write(wake_pipe[1], &c, 1);
    (void)r;
}

/* ---- the socket's place ---------------------------------------------------- */

bool emsh_attach_dir(int i, char *buf, size_t size)
{
    int n = -1;
    if (i == 0) {
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        if (!xdg || xdg[0] != '/') return false;
        n = snprintf(buf, size, "%s/ember", xdg);
    } else if (i == 1) {
        n = snprintf(buf, size, "/tmp/ember-%u", (unsigned)getuid());
    }
    return n > 0 && (size_t)n < size;
}

bool emsh_attach_dir_ok(const char *dir, char *why, size_t size)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        snprintf(why, size, "%s: %s", dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, size, "%s is not a directory (a symbolic link?): not used", dir);
    else if (st.st_uid != getuid())
        snprintf(why, size, "%s belongs to uid %u, not to you: not used", dir, (unsigned)st.st_uid);
    else if (st.st_mode & 077)
        snprintf(why, size, "%s is open to other users (mode %03o, wanted 700): not used", dir,
                 (unsigned)(st.st_mode & 0777));
    else
        return true;
    return false;
}

/* ---- the listener thread ----------------------------------------------------- */

static void send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void refuse(int fd, const char *why)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "%cjob %ld %s\n", EMSH_ATTACH_REFUSED, (long)owner, why);
    send_all(fd, msg, (size_t)n);
    close(fd);
}

/* The client's hello ("ember-attach 1 color=1"), given 2 s: whether it
 * shows colours. */
static bool read_hello(int fd)
{
    char line[128];
    size_t n = 0;
    while (n + 1 < sizeof line) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 2000) <= 0 || recv(fd, line + n, 1, 0) != 1 || line[n] == '\n') break;
        n++;
    }
    line[n] = '\0';
    return strncmp(line, "ember-attach ", 13) == 0 && strstr(line, " color=1") != NULL;
}

static void accept_client(void)
{
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) return;
    bool color = read_hello(fd);   /* first, so that a refusal is read, not met with EPIPE */
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
        refuse(fd, "belongs to another user: only its owner may attach");
        return;
    }
    pthread_mutex_lock(&lock);
    /* GONE: the last client left while the job ran; the main thread ends that
     * session when it takes this one */
    bool busy = state != NO_CLIENT && state != GONE;
    pthread_mutex_unlock(&lock);
    if (busy) {
        refuse(fd, "already has a debugger attached");
        return;
    }
    char msg[160];
    int n = snprintf(msg, sizeof msg, "attached to job %ld: it stops at the next line of Lua it runs\n",
                     (long)owner);
    send_all(fd, msg, (size_t)n);
    pthread_mutex_lock(&lock);
    client_fd = fd;
    client_color = color;
    client_pid = cred.pid;
    state = PENDING;
    pthread_mutex_unlock(&lock);
    pthread_kill(main_thread, SIGURG);
}

/* While the job runs: the client's Ctrl-C (a pause byte), or its end. */
static void watch_client(int fd)
{
    pthread_mutex_lock(&lock);
    if (state == RUNNING && fd == session_fd) {
        char buf[256];
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            state = GONE;
            pthread_kill(main_thread, SIGURG);
        } else if (n > 0 && memchr(buf, EMSH_ATTACH_PAUSE, (size_t)n)) {
            pthread_kill(main_thread, SIGURG);
        }
    }
    pthread_mutex_unlock(&lock);
}

static void *listener(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p[3] = {{listen_fd, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}, {-1, POLLIN, 0}};
        pthread_mutex_lock(&lock);
        if (state == RUNNING) p[2].fd = session_fd;
        pthread_mutex_unlock(&lock);
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR) continue;
            return NULL;
        }
        if (p[1].revents) {
            char buf[64];
            ssize_t r = read(wake_pipe[0], buf, sizeof buf);
            (void)r;
        }
        if (p[2].revents) watch_client(p[2].fd);
        if (p[0].revents & POLLIN) accept_client();
    }
}

/* ---- the session (main thread) --------------------------------------------- */

static ssize_t socket_write(void *cookie, const char *buf, size_t n)
{
    /* a client that is gone: what it misses is lost, the prompt's read sees the end */
    send_all((int)(intptr_t)cookie, buf, n);
    return (ssize_t)n;
}

static int socket_close(void *cookie) { return close((int)(intptr_t)cookie); }

/* The client's answer to a prompt; NULL when it has gone. */
static char *read_client_line(const char *prompt)
{
    pthread_mutex_lock(&lock);
    if (state == RUNNING) state = AT_PROMPT;   /* a breakpoint: the socket is ours again */
    pthread_mutex_unlock(&lock);
    fprintf(session_out, "%c%s\n", EMSH_ATTACH_PROMPT, prompt);
    fflush(session_out);
    size_t n = 0, cap = 128;
    char *line = malloc(cap);
    while (line) {
        char c;
        ssize_t r = recv(session_fd, &c, 1, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            free(line);
            return NULL;
        }
        if (c == '\n') {
            line[n] = '\0';
            return line;
        }
        if (c == EMSH_ATTACH_PAUSE || c == '\r') continue;   /* a Ctrl-C that came late */
        if (n + 1 == cap) {
            char *t = realloc(line, cap *= 2);
            if (!t) free(line);
            line = t;
        }
        if (line) line[n++] = c;
    }
    return NULL;
}

static void client_resumed(bool continuing)
{
    if (continuing) dbg_printf("running (Ctrl-C here pauses it)\n");
    pthread_mutex_lock(&lock);
    if (state == AT_PROMPT) state = RUNNING;
    pthread_mutex_unlock(&lock);
    wake();
}

static bool begin_session(void)
{
    pthread_mutex_lock(&lock);
    session_fd = client_fd;
    client_fd = -1;
    state = AT_PROMPT;
    bool color = client_color;
    long pid = client_pid;
    pthread_mutex_unlock(&lock);
    cookie_io_functions_t io = {.write = socket_write, .close = socket_close};
    session_out = fopencookie((void *)(intptr_t)session_fd, "w", io);
    if (!session_out) {
        close(session_fd);
        pthread_mutex_lock(&lock);
        session_fd = -1;
        state = NO_CLIENT;
        pthread_mutex_unlock(&lock);
        return false;
    }
    remote = (dbg_console){session_out, read_client_line, client_resumed, color};
    first_session_break = dbg_next_break_id();
    dbg_set_console(&remote);
    char msg[96];
    snprintf(msg, sizeof msg, "a debugger attached (process %ld): paused", pid);
    emsh_message(emsh_progname, msg);   /* for the job's log */
    return true;
}

/* Ends the session; true when another client is waiting already. */
static bool end_session(lua_State *L, bool client_there)
{
    if (!session_out) return false;
    int deleted = 0;
    for (int i = dbg_nbreaks - 1; i >= 0; i--) {
        if (dbg_breaks[i]->id < first_session_break) continue;
        dbg_delete_break(dbg_breaks[i]->id);
        deleted++;
    }
    if (deleted) dbg_breaks_changed(L);
    if (client_there)
        fprintf(session_out, "%cdetached from job %ld%s: it runs on\n", EMSH_ATTACH_BYE, (long)owner,
                deleted ? " (its breakpoints from this session deleted)" : "");
    fclose(session_out);   /* closes session_fd */
    session_out = NULL;
    dbg_set_console(NULL);
    pthread_mutex_lock(&lock);
    session_fd = -1;
    bool next = state == PENDING;   /* another client came meanwhile */
    if (!next) state = NO_CLIENT;
    pthread_mutex_unlock(&lock);
    wake();
    emsh_message(emsh_progname, "the debugger detached: running on");
    return next;
}

void dbg_attach_end(lua_State *L, bool client_there)
{
    /* its signal came while the prompt was open, and that hook is gone */
    if (end_session(L, client_there)) emsh_request_attach_stop();
}

void emsh_attach_stop(lua_State *L)
{
    if (dbg_in_prompt()) return;   /* code evaluated at a prompt that is already open */
    pthread_mutex_lock(&lock);
    int st = state;
    if (st == RUNNING) state = AT_PROMPT;
    pthread_mutex_unlock(&lock);
    const char *reason;
    if (st == PENDING) {
        end_session(L, false);   /* the last client left while the job ran */
        if (!begin_session()) return;
        reason = "attached";
    } else if (st == RUNNING) {
        reason = "paused";
    } else {
        if (st == GONE) dbg_attach_end(L, false);
        return;
    }
    dbg_stop_here(L, reason, 0);
}

/* ---- listening ------------------------------------------------------------- */

static void remove_socket(void)
{
    if (getpid() == owner) unlink(sock_path);
}

static void on_attach_signal(int sig)
{
    (void)sig;
    /* ours come to the main thread; a SIGURG sent to the process may land
     * on a worker thread (OpenBLAS), which must not touch the Lua state */
    if (pthread_equal(pthread_self(), main_thread)) emsh_request_attach_stop();
}

/* SIGTERM & co. would end the process without atexit: the socket goes
 * first. Only where the signal still has its default action (nohup's
 * ignored SIGHUP stays ignored). */
static void on_fatal_signal(int sig)
{
    remove_socket();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void remove_on_signal(int sig)
{
    struct sigaction old, sa;
    if (sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL) return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static bool listen_fail(const char *why)
{
    char msg[512];
    snprintf(msg, sizeof msg, "--listen: %s; the job runs without it", why);
    emsh_message(emsh_progname, msg);
    if (listen_fd >= 0) close(listen_fd);
    listen_fd = -1;
    return false;
}

bool emsh_listen(void)
{
    char dir[256], why[400] = "no directory for the socket";
    int i;
    for (i = 0; i < 2; i++) {
        if (!emsh_attach_dir(i, dir, sizeof dir)) continue;
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            snprintf(why, sizeof why, "cannot make %s: %s", dir, strerror(errno));
            continue;
        }
        if (emsh_attach_dir_ok(dir, why, sizeof why)) break;
    }
    if (i == 2) return listen_fail(why);
    owner = getpid();
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int n = snprintf(sock_path, sizeof sock_path, "%s/%ld.sock", dir, (long)owner);
    if (n <= 0 || (size_t)n >= sizeof sock_path) {
        sock_path[0] = '\0';
        return listen_fail("the socket's path is too long (XDG_RUNTIME_DIR)");
    }
    memcpy(addr.sun_path, sock_path, (size_t)n + 1);
    unlink(sock_path);   /* an earlier process with this pid left it */
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0) return listen_fail(strerror(errno));
    mode_t mask = umask(077);   /* no moment when the socket is open to others */
    int rc = bind(listen_fd, (struct sockaddr *)&addr, sizeof addr);
    umask(mask);
    if (rc != 0 || chmod(sock_path, 0600) != 0 || listen(listen_fd, 8) != 0 ||
        pipe2(wake_pipe, O_CLOEXEC) != 0) {
        snprintf(why, sizeof why, "%s: %s", sock_path, strerror(errno));
        if (rc == 0) unlink(sock_path);
        return listen_fail(why);
    }
    main_thread = pthread_self();
    atexit(remove_socket);
    remove_on_signal(SIGTERM);
    remove_on_signal(SIGHUP);
    remove_on_signal(SIGINT);   /* run.c's own handler runs while code does */
    emsh_set_signal(SIGURG, on_attach_signal, NULL);
    /* the listener takes no signals: they all go to the thread that runs Lua */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_t t;
    rc = pthread_create(&t, NULL, listener, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        unlink(sock_path);
        return listen_fail(strerror(rc));
    }
    pthread_detach(t);
    snprintf(why, sizeof why, "listening for a debugger: ember --attach %ld (%s)", (long)owner, sock_path);
    emsh_message(emsh_progname, why);
    return true;
}
