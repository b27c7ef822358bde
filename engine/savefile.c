/* savefile.c — resolving the file a save writes, and writing it atomically
 * (see savefile.h for what callers get).
 *
 * Leftover temporary files. A writer killed between naming its temporary
 * file and renaming it (or, where the file is named from the start, at any
 * time before the rename) leaves "<target>.tmp.XXXXXX" behind; the next save
 * of the same target removes it. Which leftovers may go: only those whose
 * writer is gone, since two processes may save the same path at once (the
 * later rename wins; neither may break the other's save). The writer holds
 * an flock on its temporary file from creation to rename, and the kernel
 * drops the lock when the process dies, however it dies; a cleaner removes a
 * file only when it can take that lock itself (without waiting). A pid in
 * the name was the alternative, but a pid says nothing across pid namespaces
 * (containers) or hosts sharing a file system, and pids are reused; a lock
 * answers exactly "is someone still writing this", and Linux NFS carries
 * flock to the server.
 *
 * Two races are closed:
 *  - a cleaner can lock a named file a writer has just created and not yet
 *    locked: it removes it, so the writer, once it holds its lock, checks
 *    that its file still has a name (st_nlink > 0) and makes a new one if
 *    not (an O_TMPFILE file is locked before it has a name, so never seen
 *    unlocked);
 *  - a cleaner may open a file by name just before its writer renames it
 *    away and exits: after taking the lock it checks that the name still
 *    leads to the file it locked before removing anything.
 * Where the file system has no locks (flock fails with anything but "would
 * block"), the writer goes on unlocked and cleaners remove nothing there. */
#include "savefile.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* as many links as the kernel follows in one path (MAXSYMLINKS) */
#define MAX_LINKS 40
#define TEMP_TAG ".tmp."
#define TEMP_LETTERS 6

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* The folder part of path ("." when there is none), malloc'd. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return dup_str(".");
    size_t len = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(len + 1);
    if (!d) return NULL;
    memcpy(d, path, len);
    d[len] = '\0';
    return d;
}

/* The file the link at `link` points to: its text, taken relative to the
 * link's folder unless absolute. malloc'd; NULL with errno set. */
static char *follow(const char *link)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(link, buf, sizeof buf);
    if (n < 0) return NULL;
    if ((size_t)n >= sizeof buf) { errno = ENAMETOOLONG; return NULL; }
    buf[n] = '\0';
    const char *slash = strrchr(link, '/');
    if (buf[0] == '/' || !slash) return dup_str(buf);
    size_t dlen = (size_t)(slash - link) + 1;
    char *out = malloc(dlen + (size_t)n + 1);
    if (!out) return NULL;
    memcpy(out, link, dlen);
    memcpy(out + dlen, buf, (size_t)n + 1);
    return out;
}

char *em_save_target(const char *op, const char *path, em_target_kind *kind)
{
    if (!path || !path[0]) return em_set_error("%s: empty file name", op), NULL;
    char *cur = dup_str(path);
    if (!cur) return em_set_error("%s: %s: out of memory", op, path), NULL;
    struct stat st;
    for (int hops = 0;; hops++) {
        if (lstat(cur, &st) != 0) {
            if (errno == ENOENT) {   /* a new file (or a dangling link's target) */
                *kind = EM_TARGET_NEW;
                return cur;
            }
            em_set_error("%s: %s: %s", op, path, strerror(errno));
            free(cur);
            return NULL;
        }
        if (!S_ISLNK(st.st_mode)) break;
        char *next = hops < MAX_LINKS ? follow(cur) : (errno = ELOOP, NULL);
        if (!next) {
            em_set_error("%s: %s: following the link %s: %s", op, path, cur, strerror(errno));
            free(cur);
            return NULL;
        }
        free(cur);
        cur = next;
    }
    if (S_ISREG(st.st_mode)) {
        *kind = EM_TARGET_REGULAR;
        return cur;
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
        *kind = EM_TARGET_STREAM;
        return cur;
    }
    const char *what = S_ISDIR(st.st_mode) ? "is a directory"
                                           : "is not a regular file, a character device or a FIFO";
    if (strcmp(cur, path) == 0) em_set_error("%s: %s: %s", op, path, what);
    else em_set_error("%s: %s: a link to %s, which %s", op, path, cur, what);
    free(cur);
    return NULL;
}

/* ---- temporary files -------------------------------------------------------- */

static bool temp_name_of(const char *name, const char *base, size_t blen)
{
    size_t tlen = sizeof TEMP_TAG - 1;
    if (strlen(name) != blen + tlen + TEMP_LETTERS) return false;
    if (memcmp(name, base, blen) != 0 || memcmp(name + blen, TEMP_TAG, tlen) != 0) return false;
    for (const char *p = name + blen + tlen; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return false;
    return true;
}

/* Removes the temporary files of earlier saves of target whose writers are
 * gone (see the top of this file). Best effort: a folder that cannot be read
 * or a file that cannot be removed is left as it is, and the save goes on. */
static void remove_stale_temps(const char *target)
{
    char *dir = dir_of(target);
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    size_t blen = strlen(base);
    DIR *d = dir && blen ? opendir(dir) : NULL;
    free(dir);
    if (!d) return;
    int dfd = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!temp_name_of(e->d_name, base, blen)) continue;
        int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat held, named;
        if (fstat(fd, &held) == 0 && S_ISREG(held.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            fstatat(dfd, e->d_name, &named, AT_SYMLINK_NOFOLLOW) == 0 && named.st_dev == held.st_dev &&
            named.st_ino == held.st_ino)
            unlinkat(dfd, e->d_name, 0);
        close(fd);   /* drops the lock */
    }
    closedir(d);
}

static int lock(int fd)
{
    int rc;
    while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {}
    return rc;
}

/* A named, locked temporary file beside target (mkstemp's letters); its
 * name in tmp (strlen(target) + sizeof TEMP_TAG + TEMP_LETTERS bytes).
 * Returns the descriptor, or -1 with errno set. */
static int create_named(const char *target, char *tmp)
{
    size_t tlen = strlen(target);
    for (int attempt = 0; attempt < 100; attempt++) {
        memcpy(tmp, target, tlen);
        memcpy(tmp + tlen, TEMP_TAG "XXXXXX", sizeof TEMP_TAG + TEMP_LETTERS);
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) return -1;
        lock(fd);
        struct stat st;
        if (fstat(fd, &st) != 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            errno = e;
            return -1;
        }
        /* mkstemp makes the file 0600; give it the mode a plain fopen would */
        mode_t mask = umask(0);
        umask(mask);
        if (st.st_nlink > 0 && fchmod(fd, 0666 & ~mask) == 0) return fd;   /* locked and still named */
        int e = errno;
        if (st.st_nlink > 0) unlink(tmp);
        close(fd);
        if (st.st_nlink > 0) { errno = e; return -1; }
        /* a cleaner took it before we locked it: again */
    }
    errno = EAGAIN;
    return -1;
}

/* An unnamed (O_TMPFILE), locked file in target's folder, or -1 with errno
 * set (EOPNOTSUPP and the like where the file system has none). Only where
 * it can be given a name later: through /proc/self/fd. */
static int create_unnamed(const char *target)
{
    if (access("/proc/self/fd", X_OK) != 0) { errno = EOPNOTSUPP; return -1; }
    char *dir = dir_of(target);
    if (!dir) { errno = ENOMEM; return -1; }
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);   /* the umask applies */
    int e = errno;
    free(dir);
    if (fd >= 0) lock(fd);
    errno = e;
    return fd;
}

/* Gives the unnamed file at fd the name "<target>.tmp.<6 letters>" (in tmp). */
static int name_unnamed(int fd, const char *target, char *tmp)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t tlen = strlen(target);
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char r[TEMP_LETTERS];
        if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            unsigned long long x = (unsigned long long)ts.tv_nsec * 2654435761u ^ (unsigned long long)getpid() ^
                                   (unsigned long long)attempt << 40;
            for (int i = 0; i < TEMP_LETTERS; i++) r[i] = (unsigned char)(x >> (8 * i));
        }
        memcpy(tmp, target, tlen);
        memcpy(tmp + tlen, TEMP_TAG, sizeof TEMP_TAG - 1);
        for (int i = 0; i < TEMP_LETTERS; i++) tmp[tlen + sizeof TEMP_TAG - 1 + i] = letters[r[i] % 62];
        tmp[tlen + sizeof TEMP_TAG - 1 + TEMP_LETTERS] = '\0';
        if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) return 0;
        if (errno != EEXIST) return -1;
    }
    errno = EEXIST;
    return -1;
}

/* Opens a character device or FIFO for writing. A FIFO waits for its reader,
 * as torch.save's open(path, "wb") does, but in steps of 10 ms so that Ctrl-C
 * (em_interrupt_requested) ends the wait: the shell's SIGINT handler
 * restarts system calls, and a blocking open would never return. */
static int open_stream(const char *target)
{
    for (;;) {
        int fd = open(target, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0) {
            int fl = fcntl(fd, F_GETFL);
            if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
                int e = errno;
                close(fd);
                errno = e;
                return -1;
            }
            return fd;
        }
        if (errno == ENXIO) {   /* a FIFO with no reader yet, or a device node with no device */
            struct stat st;
            bool fifo = stat(target, &st) == 0 && S_ISFIFO(st.st_mode);
            errno = ENXIO;
            if (!fifo) return -1;
        } else if (errno != EINTR) {
            return -1;
        }
        if (em_interrupt_requested()) { errno = EINTR; return -1; }
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
}

static void release(em_savefile *f)
{
    if (f->fd >= 0) close(f->fd);
    if (f->lockfd >= 0) close(f->lockfd);
    free(f->path);
    free(f->target);
    free(f->tmp);
    f->fd = f->lockfd = -1;
    f->path = f->target = f->tmp = NULL;
}

int em_savefile_open(em_savefile *f, const char *op, const char *path, int flags)
{
    *f = (em_savefile){.fd = -1, .lockfd = -1, .op = op};
    em_target_kind kind;
    f->target = em_save_target(op, path, &kind);
    if (!f->target) return -1;
    f->path = dup_str(path);
    if (!f->path) goto oom;
    if (kind == EM_TARGET_STREAM) {
        f->stream = true;
        f->write_path = f->target;
        if (flags & EM_SAVEFILE_NAMED) return 0;   /* the other program opens it */
        f->fd = open_stream(f->target);
        if (f->fd >= 0) return 0;
        em_set_error("%s: %s: %s", op, path, strerror(errno));
        release(f);
        return -1;
    }
    remove_stale_temps(f->target);
    f->tmp = malloc(strlen(f->target) + sizeof TEMP_TAG + TEMP_LETTERS);
    if (!f->tmp) goto oom;
    if (!(flags & EM_SAVEFILE_NAMED)) {
        f->fd = create_unnamed(f->target);
        f->unnamed = f->fd >= 0;
    }
    if (f->fd < 0) f->fd = create_named(f->target, f->tmp);
    if (f->fd < 0) {
        em_set_error("%s: %s: cannot create a temporary file beside it: %s", op, path, strerror(errno));
        release(f);
        return -1;
    }
    f->write_path = f->unnamed ? NULL : f->tmp;
    return 0;
oom:
    em_set_error("%s: %s: out of memory", op, path);
    release(f);
    return -1;
}

int em_savefile_write(em_savefile *f, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        /* stay below the 2 GB a single write() transfers on Linux */
        size_t chunk = n < ((size_t)1 << 30) ? n : ((size_t)1 << 30);
        ssize_t w = write(f->fd, c, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            return em_set_error("%s: %s: write failed: %s", f->op, f->path, strerror(errno));
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

void em_savefile_abort(em_savefile *f)
{
    /* removed while still locked, so no cleaner races this */
    if (f->tmp && !f->unnamed) unlink(f->tmp);
    release(f);
}

int em_savefile_commit(em_savefile *f)
{
    const char *what;
    if (f->stream) {
        int fd = f->fd;
        f->fd = -1;
        if (fd >= 0 && close(fd) != 0) { what = "close"; goto fail; }
        release(f);
        return 0;
    }
    if (fsync(f->fd) != 0) { what = "fsync"; goto fail; }
    /* the lock lives as long as any descriptor of this open file: lockfd
     * keeps it while fd is closed (close reports late write errors, as on
     * NFS) and until the rename is done */
    f->lockfd = dup(f->fd);
    if (f->lockfd < 0) { what = "dup"; goto fail; }
    int fd = f->fd;
    f->fd = -1;
    if (close(fd) != 0) { what = "close"; goto fail; }
    if (f->unnamed) {
        if (name_unnamed(f->lockfd, f->target, f->tmp) != 0) { what = "naming the temporary file"; goto fail; }
        f->unnamed = false;   /* from here it has a name to remove on failure */
    }
    if (rename(f->tmp, f->target) != 0) { what = "rename"; goto fail; }
    free(f->tmp);
    f->tmp = NULL;

    /* the rename itself is durable only once the folder is synced */
    char *dir = dir_of(f->target);
    int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    int rc = 0;
    if (dfd >= 0) {
        rc = fsync(dfd);
        int e = errno;
        close(dfd);
        /* some file systems cannot sync a folder (EINVAL): nothing to do there */
        if (rc != 0 && e != EINVAL && e != ENOTSUP)
            rc = em_set_error("%s: %s: fsync of folder %s: %s", f->op, f->path, dir, strerror(e));
        else
            rc = 0;
    }
    free(dir);
    release(f);
    return rc;
fail:
    em_set_error("%s: %s: %s failed: %s", f->op, f->path, what, strerror(errno));
    em_savefile_abort(f);
    return -1;
}
