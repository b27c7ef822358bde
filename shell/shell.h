/* shell.h — what the files of the `ember` executable share.
 *
 *   main.c     command line (lua.c's options), the arg table, scripts
 *   run.c      protected calls: tracebacks, error reports, Ctrl-C
 *   repl.c     the read-eval-print loop (readline on a terminal, plain
 *              lines from a pipe)
 *   history.c  the readline history file
 */
#ifndef EMBER_SHELL_H
#define EMBER_SHELL_H

#include <lua.h>
#include <lauxlib.h>
#include <stdbool.h>

#define EMBER_VERSION "0.1.0"

/* The name error messages start with ("ember", or argv[0]). */
extern const char *emsh_progname;

/* Prints "progname: msg" on stderr (no prefix when progname is NULL). */
void emsh_message(const char *progname, const char *msg);
/* Reports the error on top of the stack if status is not LUA_OK; pops it. */
int emsh_report(lua_State *L, int status);
/* lua_pcall of the function below narg arguments, with a traceback added to
 * errors and Ctrl-C turned into the error "interrupted!" while it runs. */
int emsh_docall(lua_State *L, int narg, int nres);
/* Prints "ember 0.1.0 (Lua 5.4.x)". */
void emsh_print_version(void);

/* The read-eval-print loop on stdin; returns when input ends. */
void emsh_repl(lua_State *L);

/* History file: its path ($EMBER_HISTORY or ~/.ember_history). */
void emsh_history_open(void);
void emsh_history_add(const char *entry);
void emsh_history_close(void);

#endif
