/* attach_client.c — `ember --attach PID`: this terminal gets the (dbg)
 * prompt of a running job started with `ember --listen` (its side is
 * debug_attach.c). Everything is checked here first, so that each refusal
 * says what is wrong: no such process, another user's, not listening, a
 * socket left by a job that has ended (removed). The job itself refuses a
 * second client, and any peer of another user (SO_PEERCRED).
 *
 * Then a relay: the job's text to stdout; its prompts read with readline
 * (a line each, Ctrl-D sends detach); Ctrl-C while the job runs sends it
 * the pause byte. No Lua state is made. */
#include "shell.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "rl.h"   /* last: it names readline's functions and variables */

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emsh_message(emsh_progname, msg);
    return EXIT_FAILURE;
}

/* The owner of process pid; -1: no such process; -2: there is one, owner unknown. */
static long process_uid(long pid)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%ld", pid);
    if (stat(path, &st) == 0) return (long)st.st_uid;
    if (kill((pid_t)pid, 0) == 0 || errno == EPERM) return -2;
    return -1;
}

/* The socket of job pid in one of the places it may be (lstat'ed into st);
 * false when there is none: path and dir are then the first place. */
static bool find_socket(long pid, char *path, size_t size, char *dir, size_t dsize, struct stat *st)
{
    bool first = true;
    char d[256];
    for (int i = 0; i < 2; i++) {
        if (!emsh_attach_dir(i, d, sizeof d)) continue;
        char p[512];
        int n = snprintf(p, sizeof p, "%s/%ld.sock", d, pid);
        if (n <= 0 || (size_t)n >= size || strlen(d) >= dsize) continue;
        bool found = lstat(p, st) == 0;
        if (found || first) {
            memcpy(path, p, (size_t)n + 1);
            memcpy(dir, d, strlen(d) + 1);
        }
        if (found) return true;
        first = false;
    }
    return false;
}

static bool send_line(int fd, const char *s)
{
    size_t n = strlen(s) + 1;
    char *buf = malloc(n);
    if (!buf) return false;
    memcpy(buf, s, n - 1);
    buf[n - 1] = '\n';
    const char *p = buf;
    bool ok = true;
    while (n > 0 && ok) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        ok = w > 0;
        if (ok) {
            p += w;
            n -= (size_t)w;
        }
    }
    free(buf);
    return ok;
}

static volatile sig_atomic_t pause_wanted;

static void on_sigint(int sig)
{
    (void)sig;
    pause_wanted = 1;
}

/* Answers one prompt of the job: the line typed (Ctrl-D: detach). */
static bool answer_prompt(int fd, const char *prompt)
{
    char *line = emsh_read_line(prompt);
    if (line && line[strspn(line, " \t")] && emsh_rl_open()) add_history(line);
    if (!line && isatty(STDIN_FILENO)) printf("detach\n");
    bool ok = send_line(fd, line ? line : "detach");
    free(line);
    return ok;
}

static int relay(int fd, long pid)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;   /* no SA_RESTART: the read below returns */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    if (emsh_rl_open()) rl_bind_key('\t', rl_insert);   /* nothing to complete against here */
    char buf[4096], held[1024];
    size_t nheld = 0;
    int kind = 0;   /* the control line being read: a prompt, a refusal, a farewell */
    for (;;) {
        if (pause_wanted) {
            pause_wanted = 0;
            char c = EMSH_ATTACH_PAUSE;
            if (send(fd, &c, 1, MSG_NOSIGNAL) < 0) break;
        }
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; i++) {
            char c = buf[i];
            if (kind == 0) {
                if (c == EMSH_ATTACH_PROMPT || c == EMSH_ATTACH_REFUSED || c == EMSH_ATTACH_BYE) {
                    kind = c;
                    nheld = 0;
                } else {
                    putchar(c);
                }
                continue;
            }
            if (c != '\n') {
                if (nheld + 1 < sizeof held) held[nheld++] = c;
                continue;
            }
            held[nheld] = '\0';
            int k = kind;
            kind = 0;
            fflush(stdout);
            if (k == EMSH_ATTACH_REFUSED) return fail("%s", held);
            if (k == EMSH_ATTACH_BYE) {
                printf("%s\n", held);
                return EXIT_SUCCESS;
            }
            if (!answer_prompt(fd, held)) break;
        }
        fflush(stdout);
    }
    fflush(stdout);
    emsh_message(emsh_progname, "the job has ended (its connection closed)");
    (void)pid;
    return EXIT_SUCCESS;
}

int emsh_attach_client(int argc, char **argv)
{
    char *end = NULL;
    long pid = argc == 1 ? strtol(argv[0], &end, 10) : 0;
    if (argc != 1 || !end || *end != '\0' || pid <= 0) {
        fprintf(stderr, "usage: %s --attach PID  (a job started with %s --listen)\n", emsh_progname,
                emsh_progname);
        return EXIT_FAILURE;
    }
    char path[sizeof ((struct sockaddr_un *)0)->sun_path] = "", dir[256] = "", why[400];
    struct stat st;
    bool have = find_socket(pid, path, sizeof path, dir, sizeof dir, &st);
    long uid = process_uid(pid);
    bool ours = have && S_ISSOCK(st.st_mode) && st.st_uid == getuid();
    if (uid == -1) {
        if (!ours) return fail("no process %ld", pid);
        unlink(path);
        return fail("job %ld has ended; removed the socket it left behind (%s)", pid, path);
    }
    if (uid >= 0 && uid != (long)getuid())
        return fail("process %ld belongs to another user (uid %ld): you can attach only to your own jobs",
                    pid, uid);
    if (!have)
        return fail("process %ld is not an ember started with --listen (no socket %s)", pid, path);
    if (!emsh_attach_dir_ok(dir, why, sizeof why)) return fail("%s", why);
    if (!ours) return fail("%s is not a socket of yours: not used", path);

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail("socket: %s", strerror(errno));
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, path, strlen(path) + 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        int e = errno;
        close(fd);
        if (e != ECONNREFUSED) return fail("cannot connect to %s: %s", path, strerror(e));
        unlink(path);
        return fail("process %ld is not listening: %s was left by an earlier job with that process "
                    "id; removed it", pid, path);
    }
    char hello[64];
    snprintf(hello, sizeof hello, "ember-attach 1 color=%d", emsh_use_color() ? 1 : 0);
    send_line(fd, hello);   /* a job that refuses at once: its reason is still to be read */
    int rc = relay(fd, pid);
    close(fd);
    return rc;
}
