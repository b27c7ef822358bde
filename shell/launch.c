/* launch.c — `ember --nproc N script.lua args`: ember starts the N processes
 * of a distributed job itself, by running again under mpirun (which gives
 * each its rank, OMPI_COMM_WORLD_*). The option is taken out before lua.c's
 * option scan ever sees it; everything else is passed on unchanged. The
 * launcher stays as mpirun's parent: it makes the job board first (a
 * shared-memory file named by EMBER_JOB_BOARD, engine/dist_board.h), on
 * which every rank says what it does from its start, and removes it when
 * mpirun ends. mpirun runs quiet (-q): the ranks' own messages say what
 * went wrong, without OpenMPI's banners. And the other end of a job: a rank
 * whose script fails ends every rank (the collectives of the others would
 * wait for it forever). */
#include "shell.h"
#include "../engine/distributed.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The value of --nproc N / --nproc=N at argv[i] (NULL when argv[i] is
 * something else); *used gets the number of argv entries it takes. */
static const char *nproc_value(char **argv, int i, int *used)
{
    const char *a = argv[i];
    if (strncmp(a, "--nproc=", 8) == 0) {
        *used = 1;
        return a + 8;
    }
    if (strcmp(a, "--nproc") != 0) return NULL;
    *used = 2;
    return argv[i + 1] ? argv[i + 1] : "";
}

static void launch_fail(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: --nproc: ", emsh_progname);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(EXIT_FAILURE);
}

void emsh_launch(int argc, char **argv)
{
    int at = 0, used = 0;
    const char *value = NULL;
    /* options end at the script, "--" or "-"; -e and -l take the next entry */
    for (int i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if ((value = nproc_value(argv, i, &used))) {
            at = i;
            break;
        }
        if ((argv[i][1] == 'e' || argv[i][1] == 'l') && argv[i][2] == '\0') i++;
    }
    if (!value) return;
    char *end;
    long n = strtol(value, &end, 10);
    if (*value == '\0' || *end != '\0' || n < 1 || n > 4096)
        launch_fail("expected a number of processes (1 or more), got '%s'", value);
    if (getenv("OMPI_COMM_WORLD_SIZE"))
        launch_fail("%s", "this process is already a rank of an mpirun job; give --nproc or mpirun, not both");

    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) launch_fail("cannot find the ember executable (/proc/self/exe: %s)", strerror(errno));
    self[len] = '\0';
    char count[32];
    snprintf(count, sizeof count, "%ld", n);
    const char *mpirun = getenv("EMBER_MPIRUN");
    if (!mpirun || !*mpirun) mpirun = "mpirun";

    char **args = calloc((size_t)argc + 8, sizeof *args);
    if (!args) launch_fail("%s", "out of memory");
    int k = 0;
    args[k++] = (char *)mpirun;
    args[k++] = "-q";
    /* OpenMPI counts a slot per core and refuses more ranks than slots */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 0 && n > cores) args[k++] = "--oversubscribe";
    args[k++] = "-n";
    args[k++] = count;
    args[k++] = self;
    for (int i = 1; i < argc; i++) {
        if (i == at) {
            i += used - 1;
            continue;
        }
        args[k++] = argv[i];
    }
    args[k] = NULL;
    /* OpenMPI refuses to run as root unless told twice that it is wanted */
    if (geteuid() == 0) {
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
    /* EMBER_JOB_BOARD=off: none (no cross-rank checks or names; timeouts still end the job) */
    char board[4096];
    const char *off = getenv("EMBER_JOB_BOARD");
    bool have_board = !(off && strcmp(off, "off") == 0) && em_dist_make_board(board, sizeof board, (int)n) == 0;
    if (have_board) setenv("EMBER_JOB_BOARD", board, 1);
    else if (!off) fprintf(stderr, "%s: --nproc: %s; the ranks run without it\n", emsh_progname, em_error());
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
        execvp(mpirun, args);
        fprintf(stderr, "%s: --nproc: cannot run %s: %s (it comes with OpenMPI; Debian: apt install openmpi-bin)\n",
                emsh_progname, mpirun, strerror(errno));
        _exit(EXIT_FAILURE);
    }
    if (child < 0) {
        if (have_board) unlink(board);
        launch_fail("cannot start mpirun: %s", strerror(errno));
    }
    /* Ctrl-C reaches mpirun and the ranks from the terminal; a SIGTERM or
     * SIGHUP sent to the launcher alone is passed on */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    sigset_t fwd, old;
    sigemptyset(&fwd);
    sigaddset(&fwd, SIGTERM);
    sigaddset(&fwd, SIGHUP);
    sigprocmask(SIG_BLOCK, &fwd, &old);
    int status = 0;
    for (;;) {
        int sig = 0;
        pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child) break;
        if (done < 0 && errno != EINTR) break;
        struct timespec tick = {0, 50000000};
        siginfo_t info;
        sig = sigtimedwait(&fwd, &info, &tick);
        if (sig > 0) kill(child, sig);
    }
    if (have_board) unlink(board);
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        raise(WTERMSIG(status));
    }
    exit(WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_FAILURE);
}

void emsh_join_job(void)
{
    if (em_dist_join_board()) emsh_message(emsh_progname, em_error());
}

void emsh_end_job_on_error(void)
{
    em_dist_abort(1);
}
