/* repl.c — the read-eval-print loop.
 *
 * Each entry is first compiled as "return <line>;" so that an expression
 * prints its values; if that fails it is compiled as a statement, and a
 * syntax error at "<eof>" means the statement is unfinished: another line is
 * read ("... " prompt) and the lot compiled again (lua.c's method).
 *
 * On a terminal lines come from GNU Readline, with history; from a pipe they
 * are read plainly, without prompts, but values are still printed so that
 * `printf '1+1\n' | ember` prints 2. Ctrl-C at the prompt drops the entry
 * being typed; Ctrl-C while code runs raises "interrupted!" (run.c); Ctrl-D
 * on an empty line ends the session. */
#include "shell.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/readline.h>

#define PROMPT "> "
#define PROMPT2 "... "
#define EOFMARK "<eof>"

typedef enum { LINE_OK, LINE_EOF, LINE_INTERRUPTED } line_status;

/* ---- reading a line ------------------------------------------------------ */

static bool interactive;                    /* stdin is a terminal */
static volatile sig_atomic_t interrupted;   /* Ctrl-C at the prompt */

static void on_sigint_at_prompt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Readline's own SIGINT handling (on by default) echoes ^C, cleans up and
 * passes the signal on to on_sigint_at_prompt, then goes back to reading.
 * This getc ends the read instead: when the interrupted read returns, a
 * newline is handed to readline, which returns the line; the caller then
 * throws it away. */
static int getc_interruptible(FILE *in)
{
    for (;;) {
        /* A Ctrl-C that came while readline was busy (not blocked in read)
         * is only recorded by readline's handler: act on it before blocking,
         * or the session would wait for the next key. */
        rl_check_signals();
        if (interrupted) return '\n';
        unsigned char c;
        ssize_t n = read(fileno(in), &c, 1);
        if (n == 1) return c;
        if (n == 0) return EOF;
        if (errno != EINTR) return RL_ISSTATE(RL_STATE_READCMD) ? READERR : EOF;
        rl_check_signals();
        if (interrupted) return '\n';
    }
}

/* Pushes the prompt and returns it. Like lua.c, the globals _PROMPT and
 * _PROMPT2 override the defaults. */
static const char *push_prompt(lua_State *L, bool first)
{
    if (lua_getglobal(L, first ? "_PROMPT" : "_PROMPT2") == LUA_TNIL) {
        lua_pop(L, 1);
        return lua_pushstring(L, first ? PROMPT : PROMPT2);
    }
    const char *p = luaL_tolstring(L, -1, NULL);
    lua_remove(L, -2);
    return p;
}

static char *read_terminal_line(const char *prompt, line_status *st)
{
    struct sigaction sa, saved;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint_at_prompt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &saved);
    interrupted = 0;
    char *line = readline(prompt);
    sigaction(SIGINT, &saved, NULL);
    if (interrupted) {
        free(line);
        *st = LINE_INTERRUPTED;
        return NULL;
    }
    *st = line ? LINE_OK : LINE_EOF;
    return line;
}

static char *read_piped_line(line_status *st)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        *st = LINE_EOF;
        return NULL;
    }
    if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
    if (n > 0 && line[n - 1] == '\r') line[--n] = '\0';
    *st = LINE_OK;
    return line;
}

/* Pushes the next line (without its newline). */
static line_status push_line(lua_State *L, bool first)
{
    line_status st;
    char *line;
    if (interactive) {
        const char *prompt = push_prompt(L, first);
        line = read_terminal_line(prompt, &st);
        lua_pop(L, 1);   /* the prompt */
    } else {
        line = read_piped_line(&st);
    }
    if (st != LINE_OK) return st;
    /* "=expr" is Lua 5.1's spelling of "return expr"; lua.c still takes it */
    if (first && line[0] == '=') lua_pushfstring(L, "return %s", line + 1);
    else lua_pushstring(L, line);
    free(line);
    return LINE_OK;
}

/* ---- compiling an entry -------------------------------------------------- */

/* Does the compile error on top of the stack say the input ended too soon? */
static bool incomplete(lua_State *L, int status)
{
    if (status != LUA_ERRSYNTAX) return false;
    size_t len;
    const char *msg = lua_tolstring(L, -1, &len);
    size_t mark = sizeof EOFMARK - 1;
    if (len >= mark && strcmp(msg + len - mark, EOFMARK) == 0) {
        lua_pop(L, 1);
        return true;
    }
    return false;
}

static void save_entry(const char *entry)
{
    if (interactive && entry[0] != '\0') emsh_history_add(entry);
}

/* The line on top as "return <line>;": on success the line is replaced by
 * the compiled function. */
static int try_as_expression(lua_State *L)
{
    const char *line = lua_tostring(L, -1);
    const char *ret = lua_pushfstring(L, "return %s;", line);
    int status = luaL_loadbuffer(L, ret, strlen(ret), "=stdin");
    if (status == LUA_OK) {
        save_entry(line);
        lua_remove(L, -2);   /* "return ..." */
        lua_remove(L, -2);   /* the line */
    } else {
        lua_pop(L, 2);       /* the error and "return ..." */
    }
    return status;
}

/* The line on top as a statement, reading more lines while it is
 * unfinished. Replaces the text by the function or the error message. */
static int compile_statement(lua_State *L, line_status *st)
{
    for (;;) {
        size_t len;
        const char *text = lua_tolstring(L, -1, &len);
        int status = luaL_loadbuffer(L, text, len, "=stdin");
        if (!incomplete(L, status)) {
            save_entry(text);
            lua_remove(L, -2);
            return status;
        }
        *st = push_line(L, false);
        if (*st == LINE_EOF) {
            /* input ended inside a statement: report the compiler's error */
            *st = LINE_OK;
            status = luaL_loadbuffer(L, text, len, "=stdin");
            save_entry(text);
            lua_remove(L, -2);
            return status;
        }
        if (*st == LINE_INTERRUPTED) {
            lua_pop(L, 1);   /* drop the whole entry */
            return LUA_OK;
        }
        lua_pushliteral(L, "\n");
        lua_insert(L, -2);
        lua_concat(L, 3);
    }
}

/* Reads and compiles one entry. Returns its status with the function or the
 * error message pushed, or sets *st to LINE_EOF / LINE_INTERRUPTED (nothing
 * pushed). */
static int load_entry(lua_State *L, line_status *st)
{
    *st = push_line(L, true);
    if (*st != LINE_OK) return LUA_OK;
    if (try_as_expression(L) == LUA_OK) return LUA_OK;
    return compile_statement(L, st);
}

/* ---- the loop ------------------------------------------------------------ */

/* Prints the values left on the stack with the global print, so that
 * tensors come out through their __tostring. */
static void print_results(lua_State *L)
{
    int n = lua_gettop(L);
    if (n == 0) return;
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    lua_getglobal(L, "print");
    lua_insert(L, 1);
    if (lua_pcall(L, n, 0, 0) != LUA_OK)
        emsh_message(emsh_progname,
                     lua_pushfstring(L, "error calling 'print' (%s)", lua_tostring(L, -1)));
}

void emsh_repl(lua_State *L)
{
    const char *saved_progname = emsh_progname;
    emsh_progname = NULL;   /* in the REPL an error is not the program's */
    interactive = isatty(STDIN_FILENO);
    if (interactive) {
        rl_readline_name = "ember";
        rl_getc_function = getc_interruptible;
        emsh_history_open();
    }
    for (;;) {
        line_status st;
        lua_settop(L, 0);
        int status = load_entry(L, &st);
        if (st == LINE_EOF) break;
        if (st == LINE_INTERRUPTED) continue;
        if (status == LUA_OK) status = emsh_docall(L, 0, LUA_MULTRET);
        if (status == LUA_OK) print_results(L);
        else emsh_report(L, status);
    }
    lua_settop(L, 0);
    if (interactive) {
        emsh_history_close();
        fputs("\n", stdout);
        fflush(stdout);
    }
    emsh_progname = saved_progname;
}
