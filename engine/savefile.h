/*
 * savefile.h — where a save writes, and how: the one piece of code behind
 * every file ember writes for the user (ember.save and save_checkpoint, plot
 * files, TensorBoard event files).
 *
 * The path is resolved first (em_save_target): a symbolic link is followed,
 * link after link, to the file it names, so saving onto a link writes its
 * target (a checkpoint folder on another disk) and the link stays a link.
 * What the resolved path is decides how it is written, as torch.save would:
 *  - nothing yet, or a regular file: a temporary file beside the target
 *    ("<target>.tmp.XXXXXX"), fsynced and renamed over it, then the folder
 *    fsynced, so the old file stays whole until the new one is;
 *  - a character device or a FIFO (/dev/null, a pipe to a compressor):
 *    written through in place; the node itself is never replaced;
 *  - a directory, a socket, a block device: refused with an error.
 *
 * Temporary files and kills. Where the file system can (O_TMPFILE: ext4,
 * xfs, btrfs, tmpfs, ...) the temporary file has no name while it is
 * written: a process killed then, even by SIGKILL, leaves nothing. It gets
 * its name only once written and fsynced, one system call before the
 * rename, so only a kill between those two calls leaves a (complete)
 * "<target>.tmp.XXXXXX". Elsewhere, or when another program must write the
 * temporary file by name (gnuplot), it is named from the start. Either way
 * the next save of the same target removes such leftovers: only files named
 * exactly so, and only when no live process writes them (writers hold an
 * flock on their temporary file; see savefile.c).
 *
 * Errors are "<op>: <path>: ..." with the path as the caller gave it.
 */
#ifndef EMBER_SAVEFILE_H
#define EMBER_SAVEFILE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum em_target_kind {
    EM_TARGET_NEW,        /* nothing there yet */
    EM_TARGET_REGULAR,    /* a regular file, replaced whole */
    EM_TARGET_STREAM,     /* a character device or FIFO, written through */
} em_target_kind;

/* The file a save of path writes (symbolic links followed), malloc'd, and
 * its kind; NULL with an error for a directory, anything else that is not a
 * regular file, character device or FIFO, a loop of links, or a path that
 * cannot be looked at. */
char *em_save_target(const char *op, const char *path, em_target_kind *kind);

typedef struct em_savefile {
    int fd;              /* write here (-1 in named mode for a stream: write_path) */
    const char *write_path;  /* the file another process may write by name
                                (EM_SAVEFILE_NAMED): the temporary file or the stream */
    /* private */
    const char *op;
    char *path;          /* as given, for messages */
    char *target;        /* resolved */
    char *tmp;           /* the temporary file's name (once it has one) */
    int lockfd;
    bool stream, unnamed;
} em_savefile;

/* The temporary file must have a name from the start, for another program
 * to write (write_path). */
#define EM_SAVEFILE_NAMED 1

/* Opens a save of path: resolves it, removes leftovers of killed saves of
 * the same target, creates the temporary file (or opens the stream).
 * 0, or -1 with an error (nothing left behind). */
int em_savefile_open(em_savefile *f, const char *op, const char *path, int flags);
/* Writes all n bytes to f->fd; 0, or -1 with "<op>: <path>: write failed: ...". */
int em_savefile_write(em_savefile *f, const void *p, size_t n);
/* Finishes the save (fsync, name, rename, fsync of the folder; a stream is
 * closed) and frees f. 0, or -1 with an error: then the target is as it was
 * and no temporary file is left. */
int em_savefile_commit(em_savefile *f);
/* Gives the save up: the temporary file removed, f freed; keeps em_error(). */
void em_savefile_abort(em_savefile *f);

#endif
