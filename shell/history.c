/* history.c — the REPL's readline history, kept in ~/.ember_history (or
 * $EMBER_HISTORY), at most HISTORY_MAX lines.
 *
 * Each entry is appended to the file as soon as it is entered, so that a
 * session that ends abruptly (os.exit, a crash, a closed terminal) loses
 * nothing; the file is cut back to HISTORY_MAX lines when the REPL ends.
 * Entries carry timestamps, which is how readline keeps a multi-line entry
 * (a function typed over several lines) as one entry in the file. */
#include "shell.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rl.h"   /* last: it names readline's functions and variables */

#define HISTORY_MAX 1000

static char *history_path;   /* NULL: no history file */

static char *default_path(void)
{
    const char *env = getenv("EMBER_HISTORY");
    if (env && env[0]) return strdup(env);
    const char *home = getenv("HOME");
    if (!home || !home[0]) return NULL;
    size_t n = strlen(home) + sizeof "/.ember_history";
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/.ember_history", home);
    return p;
}

void emsh_history_open(void)
{
    using_history();
    stifle_history(HISTORY_MAX);
    history_comment_char = '#';      /* timestamps are "#<seconds>" lines */
    history_write_timestamps = 1;
    history_multiline_entries = 1;
    history_path = default_path();
    if (!history_path) return;
    /* append_history does not create the file */
    int fd = open(history_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0) {
        free(history_path);
        history_path = NULL;
        return;
    }
    close(fd);
    read_history(history_path);
}

void emsh_history_add(const char *entry)
{
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (last && strcmp(last->line, entry) == 0) return;   /* no runs of repeats */
    add_history(entry);
    if (history_path) append_history(1, history_path);
}

void emsh_history_close(void)
{
    if (history_path) history_truncate_file(history_path, HISTORY_MAX);
    free(history_path);
    history_path = NULL;
}
