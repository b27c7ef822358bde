/* kernel_capture.c — what a cell writes to stdout and stderr, as Jupyter
 * stream messages, while it runs.
 *
 * File descriptors 1 and 2 are pointed at pipes for the length of a cell
 * (dup2), so that everything reaches the notebook: Lua's print and
 * io.write, the shell's ':' commands and value printer, C code's printf and
 * whatever child processes write. A thread drains the pipes as they fill
 * and hands the text on (so a training loop's prints arrive while it runs,
 * and a chatty cell never blocks on a full pipe). At the end of a cell the
 * descriptors are put back and the thread is asked to empty the pipes
 * before the cell's result is sent, which keeps streams and results in
 * order: every byte the cell wrote is in a pipe by then. */
#include "shell.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OUT, ERR, NSTREAMS };
static const char *const stream_names[NSTREAMS] = {"stdout", "stderr"};

static struct {
    int pipe_r[NSTREAMS], pipe_w[NSTREAMS];
    int saved[NSTREAMS];       /* the real stdout and stderr */
    int wake_r, wake_w;        /* 'f': empty the pipes now; 'q': quit */
    ekc_emit_fn emit;
    void *ud;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t drained;
    unsigned long flushes_asked, flushes_done;
    char held[NSTREAMS][4];    /* a UTF-8 character cut by a read */
    size_t nheld[NSTREAMS];
    bool started;
} cap = {.pipe_r = {-1, -1}, .pipe_w = {-1, -1}, .saved = {-1, -1}, .wake_r = -1, .wake_w = -1,
         .lock = PTHREAD_MUTEX_INITIALIZER, .drained = PTHREAD_COND_INITIALIZER};

/* Reads what stream s holds now and emits it; false at end of file. */
static bool drain_once(int s)
{
    char buf[65536 + 4];
    memcpy(buf, cap.held[s], cap.nheld[s]);
    ssize_t n = read(cap.pipe_r[s], buf + cap.nheld[s], 65536);
    if (n <= 0) return n < 0 && (errno == EAGAIN || errno == EINTR);
    size_t total = cap.nheld[s] + (size_t)n, used = 0;
    char *text = ekw_utf8_clean(buf, total, &used);
    cap.nheld[s] = total - used;   /* at most 3 bytes: a character's start */
    memcpy(cap.held[s], buf + used, cap.nheld[s]);
    if (text && text[0]) cap.emit(stream_names[s], text, cap.ud);
    free(text);
    return true;
}

static void drain_all(void)
{
    for (int s = 0; s < NSTREAMS; s++) {
        for (int k = 0; k < 1024; k++) {   /* bounded: a child may keep writing */
            struct pollfd p = {.fd = cap.pipe_r[s], .events = POLLIN};
            if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) break;
            if (!drain_once(s)) break;
        }
    }
}

static void *drain_thread(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p[3] = {
            {.fd = cap.pipe_r[OUT], .events = POLLIN},
            {.fd = cap.pipe_r[ERR], .events = POLLIN},
            {.fd = cap.wake_r, .events = POLLIN},
        };
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int s = 0; s < NSTREAMS; s++)
            if (p[s].revents & POLLIN) drain_once(s);
        if (p[2].revents & POLLIN) {
            char c = 0;
            if (read(cap.wake_r, &c, 1) != 1) continue;
            drain_all();
            pthread_mutex_lock(&cap.lock);
            cap.flushes_done++;
            pthread_cond_broadcast(&cap.drained);
            pthread_mutex_unlock(&cap.lock);
            if (c == 'q') break;
        }
    }
    return NULL;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static void close_all(void)
{
    for (int s = 0; s < NSTREAMS; s++) {
        close_fd(&cap.pipe_r[s]);
        close_fd(&cap.pipe_w[s]);
        close_fd(&cap.saved[s]);
    }
    close_fd(&cap.wake_r);
    close_fd(&cap.wake_w);
}

int ekc_start(ekc_emit_fn emit, void *ud)
{
    cap.emit = emit;
    cap.ud = ud;
    int w[2];
    if (pipe2(w, O_CLOEXEC) != 0) return -1;
    cap.wake_r = w[0];
    cap.wake_w = w[1];
    for (int s = 0; s < NSTREAMS; s++) {
        int p[2];
        /* the write end is inherited by what the cell starts (through fds
         * 1 and 2), not this copy of it */
        if (pipe2(p, O_CLOEXEC) != 0) goto fail;
        cap.pipe_r[s] = p[0];
        cap.pipe_w[s] = p[1];
        fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
        cap.saved[s] = fcntl(s == OUT ? STDOUT_FILENO : STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        if (cap.saved[s] < 0) goto fail;
    }
    /* stdout through a pipe is fully buffered by default: lines go out as
     * they are printed instead */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (pthread_create(&cap.thread, NULL, drain_thread, NULL) != 0) goto fail;
    cap.started = true;
    return 0;
fail:
    close_all();
    return -1;
}

/* Flushes stdio's buffers to where descriptors 1 and 2 point now, then
 * points them at fd[OUT] and fd[ERR] (the pipes, or the saved real ones). */
static void redirect_std(const int fd[NSTREAMS])
{
    fflush(stdout);
    fflush(stderr);
    dup2(fd[OUT], STDOUT_FILENO);
    dup2(fd[ERR], STDERR_FILENO);
}

void ekc_begin(void)
{
    if (!cap.started) return;
    redirect_std(cap.pipe_w);
}

/* Asks the thread to empty the pipes (c: 'f', or 'q' to end) and waits. */
static void request(char c)
{
    pthread_mutex_lock(&cap.lock);
    unsigned long want = ++cap.flushes_asked;
    pthread_mutex_unlock(&cap.lock);
    ssize_t r;
    do r = write(cap.wake_w, &c, 1);
    while (r < 0 && errno == EINTR);
    pthread_mutex_lock(&cap.lock);
    while (r == 1 && cap.flushes_done < want) pthread_cond_wait(&cap.drained, &cap.lock);
    pthread_mutex_unlock(&cap.lock);
}

void ekc_flush(void)
{
    if (!cap.started) return;
    fflush(stdout);
    fflush(stderr);
    request('f');
}

void ekc_end(void)
{
    if (!cap.started) return;
    redirect_std(cap.saved);
    request('f');
}

void ekc_stop(void)
{
    if (!cap.started) return;
    ekc_end();
    request('q');
    pthread_join(cap.thread, NULL);
    cap.started = false;
    close_all();
}
