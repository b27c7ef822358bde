/* repl.c — the read-eval-print loop.
 *
 * Each entry is first compiled as "return <line>;" so that an expression
 * prints its values; if that fails it is compiled as a statement, and a
 * syntax error at "<eof>" means the statement is unfinished: another line is
 * read ("... " prompt) and the lot compiled again (lua.c's method). Any
 * other syntax error is reported at once.
 *
 * An entry starting with ':' is a shell command (commands.c); one starting
 * with '?' asks for help ("?ember.zeros", "?t:sum", "?" alone). A trailing
 * ';' keeps an expression's values from being printed. The values of the
 * last entry that had any are kept in the globals _ (the first) and _1, _2,
 * ... (each of them: Lua's answer to PyTorch's tuples).
 *
 * On a terminal lines come from GNU Readline, with history, completion and
 * bracketed paste (a pasted block arrives as one entry); without Readline
 * (not installed, or EMBER_BASIC_REPL set) a terminal still gets prompts but
 * no editing beyond its own; from a pipe lines
 * are read plainly, without prompts, but values are still printed so that
 * `printf '1+1\n' | ember` prints 2. Ctrl-C at the prompt drops the entry
 * being typed; Ctrl-C while code runs stops it (run.c); Ctrl-D on an empty
 * line ends the session. */
#include "shell.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rl.h"   /* last: it names readline's functions and variables */

#define PROMPT "> "
#define PROMPT2 "... "
#define EOFMARK "<eof>"

typedef enum { LINE_OK, LINE_EOF, LINE_INTERRUPTED } line_status;

bool emsh_quit_requested;

/* Colours on a terminal that can show them (TERM set and not "dumb", the
 * convention git and ls follow), unless NO_COLOR is set (no-color.org). */
bool emsh_use_color(void)
{
    const char *no = getenv("NO_COLOR");
    const char *term = getenv("TERM");
    return isatty(STDOUT_FILENO) && !(no && no[0]) && term && term[0] && strcmp(term, "dumb") != 0;
}

/* ---- reading a line ------------------------------------------------------ */

static bool interactive;                    /* stdin is a terminal */
static volatile sig_atomic_t interrupted;   /* Ctrl-C at the prompt */

static void on_sigint_at_prompt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Bytes read from the terminal but not yet handed to readline. Readline
 * reads a byte per read(2), and asks select(2) before each byte whether
 * another is waiting: two system calls a byte, 25 s for a 10 MB paste.
 * Inside a bracketed paste (and the other places readline waits for "more
 * input": a quoted insert, a character search) the bytes up to the paste's
 * end are readline's anyway, so they are read up to 64 KiB at a time.
 * Anywhere else a byte at a time, as readline does: typed-ahead lines after
 * the one being edited stay in the terminal for whatever reads them next
 * (io.read in the entry, a program it starts). */
static struct {
    unsigned char buf[1 << 16];
    size_t at, n;
} ahead;

/* Readline's typeahead test (rl_input_available_hook): the bytes read
 * ahead count, else the terminal is polled for readline's timeout. */
static int input_available(void)
{
    if (ahead.at < ahead.n) return 1;
    int timeout_us = rl_set_keyboard_input_timeout(-1);   /* -1: read it, change nothing */
    struct pollfd p = {fileno(rl_instream ? rl_instream : stdin), POLLIN, 0};
    return poll(&p, 1, timeout_us > 0 ? (timeout_us + 999) / 1000 : 0) > 0;
}

/* Readline's own SIGINT handling (on by default) echoes ^C, cleans up and
 * passes the signal on to on_sigint_at_prompt, then goes back to reading.
 * This getc ends the read instead: when the interrupted read returns, a
 * newline is handed to readline, which returns the line; the caller then
 * throws it away, with what was read ahead (as the terminal drops its
 * queued input on ^C). */
static int getc_interruptible(FILE *in)
{
    for (;;) {
        /* A Ctrl-C that came while readline was busy (not blocked in read)
         * is only recorded by readline's handler: act on it before blocking,
         * or the session would wait for the next key. */
        rl_check_signals();
        if (interrupted) {
            ahead.at = ahead.n = 0;
            return '\n';
        }
        if (ahead.at < ahead.n) return ahead.buf[ahead.at++];
        size_t want = RL_ISSTATE(RL_STATE_MOREINPUT) ? sizeof ahead.buf : 1;
        ssize_t n = read(fileno(in), ahead.buf, want);
        if (n > 0) {
            ahead.at = 0;
            ahead.n = (size_t)n;
            continue;
        }
        if (n == 0) return EOF;
        if (errno != EINTR) return RL_ISSTATE(RL_STATE_READCMD) ? READERR : EOF;
    }
}

static char *read_terminal_line(const char *prompt, line_status *st)
{
    struct sigaction sa, saved;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint_at_prompt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &saved);
    interrupted = 0;
    rl_getc_function = getc_interruptible;
    rl_input_available_hook = input_available;
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

/* A terminal without GNU Readline (a machine without the library, or
 * EMBER_BASIC_REPL set): the prompt is still shown and Ctrl-C still drops
 * the entry; editing is the terminal's own. */
static char *read_basic_terminal_line(const char *prompt, line_status *st)
{
    struct sigaction sa, saved;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint_at_prompt;   /* no SA_RESTART: the read ends with EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &saved);
    interrupted = 0;
    fputs(prompt, stdout);
    fflush(stdout);
    char *line = read_piped_line(st);
    sigaction(SIGINT, &saved, NULL);
    if (interrupted) {
        free(line);
        clearerr(stdin);
        fputc('\n', stdout);
        *st = LINE_INTERRUPTED;
        return NULL;
    }
    return line;
}

static char *read_line(const char *prompt, line_status *st)
{
    if (!isatty(STDIN_FILENO)) return read_piped_line(st);
    return emsh_rl_open() ? read_terminal_line(prompt, st) : read_basic_terminal_line(prompt, st);
}

char *emsh_read_line(const char *prompt)
{
    line_status st;
    char *line;
    do   /* Ctrl-C clears the line: prompt again */
        line = read_line(prompt, &st);
    while (st == LINE_INTERRUPTED);
    return line;
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

/* Pushes the next line (without its newline). */
static line_status push_line(lua_State *L, bool first)
{
    line_status st;
    const char *prompt = push_prompt(L, first);
    char *line = read_line(prompt, &st);
    lua_pop(L, 1);   /* the prompt */
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

/* Length of s without trailing blanks. */
static size_t trimmed_len(const char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    return n;
}

/* The line on top as "return <line>;": on success the line is replaced by
 * the compiled function. A trailing ';' is allowed (and asks for silence). */
static int try_as_expression(lua_State *L, bool *quiet, const char *chunkname)
{
    const char *line = lua_tostring(L, -1);
    size_t n = trimmed_len(line);
    *quiet = n > 0 && line[n - 1] == ';';
    if (*quiet) n--;
    const char *ret = lua_pushfstring(L, "return %s;", lua_pushlstring(L, line, n));
    lua_remove(L, -2);
    int status = luaL_loadbuffer(L, ret, strlen(ret), chunkname);
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

/* ---- commands and help --------------------------------------------------- */

static const char *skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

/* "?name": ember.help("name"), run like any entry so errors are reported. */
static void ask_help(lua_State *L, const char *what)
{
    what = skip_blanks(what);
    size_t n = trimmed_len(what);
    lua_getglobal(L, "ember");
    if (lua_type(L, -1) != LUA_TTABLE) {
        lua_pop(L, 1);
        emsh_message(NULL, "help: the global 'ember' is gone");
        return;
    }
    lua_getfield(L, -1, "help");
    lua_remove(L, -2);
    int narg = 0;
    if (n > 0) {
        lua_pushlstring(L, what, n);
        narg = 1;
    }
    emsh_report(L, emsh_docall(L, narg, 0));
}

/* Handles ':' and '?' entries; true if the line was one. */
bool emsh_special_entry(lua_State *L, const char *line)
{
    const char *s = skip_blanks(line);
    if (s[0] == ':' && s[1] != ':') {   /* "::label::" is Lua */
        save_entry(line);
        if (!emsh_run_command(L, s + 1)) {
            const char *name = skip_blanks(s + 1);
            size_t len = strcspn(name, " \t");
            emsh_message(NULL, lua_pushfstring(L, "unknown command ':%s' (:help lists the commands)",
                                               lua_pushlstring(L, name, len)));
        }
        return true;
    }
    if (s[0] == '?') {
        save_entry(line);
        ask_help(L, s + 1);
        return true;
    }
    return false;
}

/* Reads and compiles one entry. Returns its status with the function or the
 * error message pushed, or sets *st to LINE_EOF / LINE_INTERRUPTED (nothing
 * pushed; also for ':' and '?' entries, already handled). */
static int load_entry(lua_State *L, line_status *st, bool *quiet)
{
    *quiet = false;
    *st = push_line(L, true);
    if (*st != LINE_OK) return LUA_OK;
    if (emsh_special_entry(L, lua_tostring(L, -1))) {
        lua_pop(L, 1);
        *st = LINE_INTERRUPTED;
        return LUA_OK;
    }
    if (try_as_expression(L, quiet, "=stdin") == LUA_OK) return LUA_OK;
    *quiet = false;
    return compile_statement(L, st);
}

/* ---- whole entries (the Jupyter kernel's cells) --------------------------- */

int emsh_compile_entry(lua_State *L, const char *text, const char *chunkname, bool *quiet)
{
    lua_pushstring(L, text);
    if (try_as_expression(L, quiet, chunkname) == LUA_OK) return LUA_OK;
    *quiet = false;
    size_t len;
    text = lua_tolstring(L, -1, &len);
    int status = luaL_loadbuffer(L, text, len, chunkname);
    lua_remove(L, -2);
    return status;
}

emsh_entry_state emsh_check_entry(lua_State *L, const char *text)
{
    const char *s = skip_blanks(text);
    if ((s[0] == ':' && s[1] != ':') || s[0] == '?') return EMSH_ENTRY_COMPLETE;
    int top = lua_gettop(L);
    bool quiet;
    lua_pushstring(L, text);
    emsh_entry_state st = EMSH_ENTRY_COMPLETE;
    if (try_as_expression(L, &quiet, "=check") != LUA_OK) {
        size_t len;
        text = lua_tolstring(L, -1, &len);
        int status = luaL_loadbuffer(L, text, len, "=check");
        if (incomplete(L, status)) st = EMSH_ENTRY_INCOMPLETE;
        else if (status != LUA_OK) st = EMSH_ENTRY_INVALID;
    }
    lua_settop(L, top);
    return st;
}

/* ---- the loop ------------------------------------------------------------ */

/* _ = the first value, _1.._n = each value; older _k beyond n are cleared. */
static int last_count;

void emsh_keep_results(lua_State *L, int n)
{
    lua_pushvalue(L, 1);
    lua_setglobal(L, "_");
    for (int i = 1; i <= n || i <= last_count; i++) {
        char name[24];
        snprintf(name, sizeof name, "_%d", i);
        if (i <= n) lua_pushvalue(L, i);
        else lua_pushnil(L);
        lua_setglobal(L, name);
    }
    last_count = n;
}

void emsh_repl(lua_State *L)
{
    const char *saved_progname = emsh_progname;
    emsh_progname = NULL;   /* in the REPL an error is not the program's */
    interactive = isatty(STDIN_FILENO) && emsh_rl_open();
    if (interactive) {
        rl_readline_name = "ember";
        emsh_history_open();
        emsh_complete_install(L);
    }
    emsh_commands_open(L);
    emsh_quit_requested = false;
    while (!emsh_quit_requested) {
        line_status st;
        bool quiet;
        lua_settop(L, 0);
        int status = load_entry(L, &st, &quiet);
        if (st == LINE_EOF) break;
        if (st == LINE_INTERRUPTED) continue;
        if (status == LUA_OK) status = emsh_docall(L, 0, LUA_MULTRET);
        if (status == LUA_OK) {
            int n = lua_gettop(L);
            if (n > 0) emsh_keep_results(L, n);
            if (n > 0 && !quiet) emsh_print_values(L, n, emsh_use_color());
        } else {
            emsh_report(L, status);
        }
    }
    lua_settop(L, 0);
    if (interactive) {
        emsh_history_close();
        if (!emsh_quit_requested) fputs("\n", stdout);
        fflush(stdout);
    }
    emsh_progname = saved_progname;
}
