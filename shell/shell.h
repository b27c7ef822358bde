/* shell.h — what the files of the `ember` executable share.
 *
 *   main.c     command line (lua.c's options), the arg table, scripts
 *   run.c      protected calls: tracebacks, error reports, Ctrl-C
 *   repl.c     the read-eval-print loop (readline on a terminal, plain
 *              lines from a pipe)
 *   history.c  the readline history file
 *   rl.c       GNU Readline, opened on first use (rl.h)
 *   commands.c the REPL's ":" commands (":time", ":mem", ":break", ...)
 *   print.c    the REPL's value printer (tables indented, cycles, tensors)
 *   complete.c tab completion (globals, fields, methods, keywords, files)
 *   debug.c    breakpoints, stepping, the (dbg) prompt, post-mortem
 *   debug_attach.c, attach_client.c  ember --listen / ember --attach PID
 *   kernel*.c  the Jupyter kernel (--kernel) and its kernelspec (--install-kernel)
 */
#ifndef EMBER_SHELL_H
#define EMBER_SHELL_H

#include <lua.h>
#include <lauxlib.h>
#include <stdbool.h>
#include <stdio.h>

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

/* ---- run.c: the thread user code runs on ---------------------------------
 * Every entry, script and -e chunk runs in a fresh coroutine (so that after
 * an error its stack is still there for post-mortem). The threads that are
 * running, innermost last, are tracked (coroutine.resume and coroutine.wrap
 * are wrapped) so that Ctrl-C reaches the one actually executing. */

/* An error object (its address, as a light userdata) for an error already
 * dealt with: emsh_report prints nothing for it (a post-mortem was shown,
 * or the user quit the debugger). */
extern const char emsh_silent_error;

/* Replaces coroutine.resume and coroutine.wrap by the tracked versions. */
void emsh_run_open(lua_State *L);
/* The dead thread of the last error (NULL if none or already inspected),
 * with its error message in *msg. */
lua_State *emsh_last_error_thread(lua_State *L, const char **msg);
/* What Ctrl-C does while code runs: raise "interrupted!" (default) or stop
 * in the debugger at the current line. */
void emsh_set_pause_on_interrupt(bool on);
bool emsh_pause_on_interrupt(void);
/* Open the debugger automatically on an uncaught error. */
void emsh_set_auto_postmortem(bool on);
/* Installs handler for sig with SA_RESTART (code blocked in io.read keeps
 * reading after the signal); the previous action into *saved when not NULL. */
struct sigaction;
void emsh_set_signal(int sig, void (*handler)(int), struct sigaction *saved);

/* ---- repl.c / commands.c --------------------------------------------------- */

/* Reads one line (without its newline) after showing prompt: GNU Readline
 * on a terminal (Ctrl-C there clears the line and prompts again), plain lines
 * from a pipe (no prompt shown). NULL when input ends. The caller frees it
 * and adds it to whatever history it keeps. */
char *emsh_read_line(const char *prompt);

/* Set by ":quit": the REPL ends after the current entry. */
extern bool emsh_quit_requested;
/* Remembers the globals that exist before the user types anything (for
 * ":vars"). */
void emsh_commands_open(lua_State *L);

/* Names of the ":" commands, NULL-terminated, for completion. */
extern const char *const emsh_command_names[];
/* Runs a ":" command line (without the colon); false if the name is unknown. */
bool emsh_run_command(lua_State *L, const char *line);
/* Colours are used when stdout is a terminal and NO_COLOR is not set. */
bool emsh_use_color(void);

/* The REPL's rules for a whole entry given at once (the Jupyter kernel's
 * cells). ':' and '?' entries: runs them (output on stdout/stderr) and
 * returns true; false for anything else. */
bool emsh_special_entry(lua_State *L, const char *text);
/* Compiles text as the REPL does: "return text" if that compiles (an
 * expression; a trailing ';' sets *quiet), else as a statement. Pushes the
 * function, or the error message and returns its status. */
int emsh_compile_entry(lua_State *L, const char *text, const char *chunkname, bool *quiet);
typedef enum { EMSH_ENTRY_COMPLETE, EMSH_ENTRY_INCOMPLETE, EMSH_ENTRY_INVALID } emsh_entry_state;
/* Whether text is a whole entry, the start of one (the compiler stopped at
 * <eof>: the REPL would read another line) or a syntax error. */
emsh_entry_state emsh_check_entry(lua_State *L, const char *text);
/* The values 1..n on the stack become _ (the first) and _1.._n. */
void emsh_keep_results(lua_State *L, int n);

/* ---- print.c --------------------------------------------------------------- */

/* Prints the n values on top of the stack (popped), tab separated, as the
 * REPL shows results: tables indented with a depth limit and cycles marked,
 * tensors summarised, strings at the top level unquoted. Never raises. */
void emsh_print_values(lua_State *L, int n, bool color);
/* The same, written to out. */
void emsh_print_values_to(lua_State *L, int n, bool color, FILE *out);
/* Prints prefix, then one line about the value at idx (for ":vars"): as
 * inside a table, but a plain table as its number of fields, a long string
 * cut short, a module or class as its name and its public names, an object
 * (an nn module, an optimizer) as its __tostring squeezed onto the line. */
void emsh_print_summary(lua_State *L, int idx, const char *prefix, bool color);
/* Writes prefix, then the value at idx as the debugger lists locals, to out:
 * plain data as emsh_print_values shows it, modules, classes and objects on
 * one line as emsh_print_summary does. */
void emsh_print_brief(lua_State *L, int idx, const char *prefix, bool color, FILE *out);

/* ---- complete.c ------------------------------------------------------------ */

/* Sets readline up to complete with L (word breaks, the completion function). */
void emsh_complete_install(lua_State *L);
/* Prints, one per line and sorted, what Tab would offer at the end of line
 * (used by ":complete" and the tests). */
void emsh_complete_print(lua_State *L, const char *line);
/* What Tab would offer for the word ending at byte end of line (one line),
 * sorted: returns their number, *out the malloc'd array of malloc'd strings
 * (the caller frees both), *start the byte where the word begins. */
size_t emsh_complete_candidates(lua_State *L, const char *line, int end, int *start, char ***out);

/* ---- debug.c --------------------------------------------------------------- */

/* Registers the global breakpoint() (also ember.breakpoint is not touched). */
void emsh_debug_open(lua_State *L);
/* Runs a debugger command given at the REPL (":break", ":breaks", ":delete",
 * ":disable", ":enable", ":condition"); false if cmd is not one of them. */
bool emsh_debug_command(lua_State *L, const char *cmd, const char *args);
/* Arms a stop at the next line of Lua code that runs (ember -d script). */
void emsh_debug_step_in(lua_State *L);
/* Opens the (dbg) prompt on the stack of co, a thread that died with msg;
 * returns when the user leaves it. */
void emsh_debug_postmortem(lua_State *L, lua_State *co, const char *msg);
/* Called from a hook (Ctrl-C in pause mode): opens the (dbg) prompt at the
 * line the thread L is executing; returns when the user continues. */
void emsh_debug_pause(lua_State *L, lua_Debug *ar);
/* Gives thread co the debugger's hook state before it is resumed from L
 * (coroutines created before a breakpoint was set have no hook). */
void emsh_debug_thread_resumed(lua_State *L, lua_State *co);
/* Puts the debugger's own hook (or none) back on thread L, after the
 * interrupt hook of run.c has replaced it. */
void emsh_debug_restore_hook(lua_State *L);
/* Did thread co die of the (dbg) prompt's "quit"? (then nothing is reported) */
bool emsh_debug_quitting(lua_State *co);

/* ---- attaching the debugger to a running job --------------------------------
 * debug_attach.c (the job: `ember --listen`, EMBER_LISTEN=1) and
 * attach_client.c (`ember --attach PID`). They talk over a Unix socket,
 * $XDG_RUNTIME_DIR/ember/PID.sock or /tmp/ember-UID/PID.sock: the client
 * sends a hello line, then lines typed at prompts (and a pause byte for
 * Ctrl-C while the job runs); the job sends text, and these bytes, each
 * starting a line that ends with '\n': */
enum {
    EMSH_ATTACH_PROMPT = 1,    /* the rest of the line is a prompt: send a line */
    EMSH_ATTACH_REFUSED = 2,   /* the rest is why the attach is refused; then EOF */
    EMSH_ATTACH_PAUSE = 3,     /* client to job: pause the running job (Ctrl-C) */
    EMSH_ATTACH_BYE = 4,       /* the rest says the session ended; then EOF */
};
/* Opens the job's socket and its listener thread (no hook is set until a
 * client attaches). false, with the reason printed, when it cannot. */
bool emsh_listen(void);
/* Called by run.c's hook on the thread that runs Lua code, when an attach
 * or a pause asked by the attached client is pending: opens the (dbg)
 * prompt on the client's socket. */
void emsh_attach_stop(lua_State *L);
/* run.c, safe in a signal handler: the running Lua code calls
 * emsh_attach_stop at its next instruction. */
void emsh_request_attach_stop(void);
/* Where sockets are looked for: i = 0 $XDG_RUNTIME_DIR/ember (false when
 * XDG_RUNTIME_DIR is not set), 1 /tmp/ember-UID. */
bool emsh_attach_dir(int i, char *buf, size_t size);
/* Is dir a real directory (not a symlink) of this user that no one else
 * may enter? If not, why (in why). */
bool emsh_attach_dir_ok(const char *dir, char *why, size_t size);
/* `ember --attach PID` (its arguments after the option): the exit status. */
int emsh_attach_client(int argc, char **argv);

/* ---- launch.c: distributed jobs ---------------------------------------- */

/* `--nproc N` among the options: runs the same command line under
 * `mpirun -n N` instead (does not return); otherwise returns at once. */
void emsh_launch(int argc, char **argv);
/* After an uncaught error in a script of a distributed job (a process group
 * is initialised): ends every rank (MPI_Abort); otherwise nothing. */
void emsh_end_job_on_error(void);
/* a rank of an `ember --nproc` job: on the job board from the start */
void emsh_join_job(void);

/* ---- kernel*.c: the Jupyter kernel --------------------------------------- */

/* kernel.c: serves the Jupyter messaging protocol on the sockets the
 * connection file names, with L set up as for the REPL, until a
 * shutdown_request. 0 after a clean shutdown, -1 if it could not start. */
int emsh_kernel_run(lua_State *L, const char *connection_file);
/* kernel_spec.c: `--install-kernel [--user] [--prefix P]` (its arguments
 * after the option); the exit status. */
int emsh_install_kernel(int argc, char **argv);

/* kernel_wire.c: the wire protocol. The sockets, in the connection file's
 * order of ports. */
enum { EKW_SHELL, EKW_CONTROL, EKW_IOPUB, EKW_STDIN, EKW_HB, EKW_NSOCKETS };
typedef struct {
    char endpoint[EKW_NSOCKETS][300];
    char *key;                 /* "" when messages are not signed */
    size_t key_len;
    const struct evp_md_st *digest;
} ekw_connection;
struct cJSON;
/* A received message: its routing identities (zmq_msg_t), and the parsed
 * frames, every string in them valid UTF-8 (what was not is cleaned as
 * ekw_utf8_clean does). The content is {} with bad_content saying why when
 * it was not a JSON object or held a NUL character. */
typedef struct {
    struct zmq_msg_t *idents;
    int nidents;
    struct cJSON *header, *parent, *metadata, *content;
    const char *msg_type;      /* in header */
    const char *bad_content;   /* NULL, or why the content was not taken */
} ekw_msg;
int ekw_read_connection(const char *path, ekw_connection *c);
void ekw_free_connection(ekw_connection *c);
/* Receives one message: 0, -1 when it was dropped (bad signature, no
 * header, a NUL in the header: logged), -2 when the context is ending. */
int ekw_recv(void *sock, const ekw_connection *c, ekw_msg *m);
void ekw_msg_free(ekw_msg *m);
/* Sends a signed message: to parent's identities, or with topic as its
 * first frame (iopub); the parent header is parent's (none: {}). */
int ekw_send(void *sock, const ekw_connection *c, const char *session, const ekw_msg *parent,
             const char *topic, const char *msg_type, struct cJSON *content);
void ekw_uuid(char out[37]);
/* "ember kernel: " + fmt with one %s, on stderr; a detail past 200 bytes
 * (a client's msg_type, say) is cut there. */
void ekw_log(const char *fmt, const char *detail);
/* s[0..n) as valid UTF-8 (bad bytes become U+FFFD), malloc'd. With used:
 * a character cut by the end is left out and *used says how far it got. */
char *ekw_utf8_clean(const char *s, size_t n, size_t *used);
/* Byte offset of character number chars in s, and back. */
size_t ekw_utf8_offset(const char *s, long chars);
long ekw_utf8_chars(const char *s, size_t bytes);

/* kernel_capture.c: stdout and stderr of a cell as stream messages,
 * emit(name "stdout"/"stderr", UTF-8 text, ud) called from its thread. */
typedef void (*ekc_emit_fn)(const char *name, const char *text, void *ud);
int ekc_start(ekc_emit_fn emit, void *ud);
void ekc_begin(void);   /* fds 1 and 2 into the pipes */
void ekc_flush(void);   /* what was written so far is emitted */
void ekc_end(void);     /* fds back, and everything written emitted */
void ekc_stop(void);

#endif
