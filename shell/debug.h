/* debug.h — what the debugger's files share (not used outside debug*.c).
 *
 *   debug.c         the public entry points (shell.h), breakpoint(), stops
 *   debug_hook.c    the hook: breakpoint lines, step/next/finish, threads
 *   debug_break.c   the breakpoint table: parsing, resolving lines, listing
 *   debug_prompt.c  the (dbg) prompt: frames, source, locals, evaluation
 *   debug_attach.c  ember --listen: the prompt over a Unix socket, for
 *                   ember --attach PID (attach_client.c)
 *
 * Cost model: with no breakpoint and no stepping no hook is installed.
 * Otherwise a C hook runs on calls and returns only, and decides for the
 * function about to execute whether line events are needed there (it holds
 * a breakpoint, or a step is under way in its frame); only then is
 * LUA_MASKLINE added for that thread. */
#ifndef EMBER_SHELL_DEBUG_H
#define EMBER_SHELL_DEBUG_H

#include "shell.h"

#include <stddef.h>

/* ---- breakpoints (debug_break.c) ------------------------------------------ */

/* Where a breakpoint lands in one chunk: the function (by its line range)
 * and the line that has code. One per chunk source the file matched. */
typedef struct dbg_place {
    char *source;          /* the chunk's source ("@path", or the code) */
    size_t srclen;
    int linedefined, lastlinedefined;   /* 0, 0 for a main chunk */
    int line;              /* 0: no code at or after the line here */
    struct dbg_place *next;
} dbg_place;

typedef struct {
    int id;
    char *file;            /* as typed, without a leading "./" */
    char *abs;             /* its real path when it existed when set */
    int line;              /* as typed */
    int at;                /* where it landed when the file was read at set time (0: not read) */
    char *cond;            /* NULL: none */
    long hits_wanted;      /* stop from this hit on (0, 1: every hit) */
    long hits;             /* times reached with the condition true */
    bool enabled;
    bool temporary;        /* tbreak: deleted at its first stop */
    bool announced;        /* its move to another line was reported */
    dbg_place *places;
} dbg_break;

/* The table; changes bump dbg_generation (function caches check it). */
extern dbg_break **dbg_breaks;
extern int dbg_nbreaks;
extern unsigned dbg_generation;
/* How many breakpoints are enabled (the hook is needed when > 0). */
int dbg_enabled_count(void);

/* Runs break/tbreak/breaks/delete/disable/enable/condition with its
 * arguments; default_file is the file of the selected frame (or NULL).
 * false: not one of those commands. Errors are printed. */
bool dbg_break_command(lua_State *L, const char *cmd, const char *args, const char *default_file);
dbg_break *dbg_find_break(int id);
void dbg_delete_break(int id);

/* Does the chunk source match the breakpoint's file? */
bool dbg_source_matches(const dbg_break *b, const char *source, size_t srclen);
/* The breakpoint's place in the chunk with this source (resolved on first
 * use, by compiling the chunk's text again and reading the line ranges of
 * every function in it). ar (at the function being entered) is the fallback
 * when the text cannot be had: its own active lines. NULL if none here. */
const dbg_place *dbg_place_for(lua_State *L, dbg_break *b, lua_Debug *ar);

/* ---- the hook (debug_hook.c) ---------------------------------------------- */

typedef enum { STEP_NONE, STEP_INTO, STEP_OVER, STEP_OUT } dbg_step_mode;

void dbg_open_hooks(lua_State *L);
/* Arms a step on thread L (NULL: any thread): depth is the stack depth of
 * the frame it is relative to (next: stop at a line at this depth or less;
 * finish: stop when the frame at this depth returns). */
void dbg_arm(lua_State *L, dbg_step_mode mode, int depth);
/* Puts the hook on L (and the threads that resumed it) as the state needs,
 * or takes it off everywhere when nothing needs it; level is the frame of
 * L that runs next (1 when stopped at a return). */
void dbg_update_hooks(lua_State *L, int level);
/* Breakpoints changed: function decisions must be made again. */
void dbg_breaks_changed(lua_State *L);
/* While the prompt is open nothing stops and resumed threads get no hook. */
void dbg_set_in_prompt(bool on);
bool dbg_in_prompt(void);
/* Number of frames on L's stack. */
int dbg_stack_depth(lua_State *L);
/* The thread that resumed L, when known (NULL otherwise). */
lua_State *dbg_resumer(lua_State *L);
/* The chain of resumes, saved around the prompt (evaluated code may resume
 * coroutines); restore frees it. */
void *dbg_save_chain(void);
void dbg_restore_chain(void *saved);
void dbg_thread_resumed(lua_State *L, lua_State *co);
void dbg_restore_hook(lua_State *L);
/* Raises "quit" out of the stopped code on L (and keeps raising it in the
 * threads that resumed L until they have unwound). */
void dbg_quit(lua_State *L) __attribute__((noreturn));
/* Did L die of a quit? */
bool dbg_quitting(lua_State *L);

/* ---- stops and the prompt (debug.c, debug_prompt.c) ----------------------- */

typedef enum { ACT_CONTINUE, ACT_STEP, ACT_NEXT, ACT_FINISH, ACT_QUIT, ACT_DETACH } dbg_action;

typedef struct {
    lua_State *L;          /* the thread whose stack is shown */
    int base;              /* stack level shown as frame 0 */
    int nframes;           /* frames from base on */
    int sel;               /* selected frame, relative to base */
    bool postmortem;       /* the thread is dead: stepping just leaves */
} dbg_stop;

/* Shows the stop (header printed by the caller) and runs the (dbg) prompt;
 * returns what the user asked for. For ACT_NEXT/ACT_FINISH, *depth is the
 * stack depth of the selected frame. */
dbg_action dbg_prompt(dbg_stop *s, int *depth);
/* Prints "stopped at file:line (in ...)" and the source line of frame 0. */
void dbg_print_location(dbg_stop *s, const char *prefix);
/* Evaluates the code as in frame level of thread L1 (locals, upvalues,
 * globals); the values are left on the evaluation thread, returned in *E.
 * Returns the number of values, or -1 with the error message printed
 * prefixed by what (or, when errmsg is given, returned in it, malloc'd). */
int dbg_eval(lua_State *L1, int level, const char *code, lua_State **E, char **errmsg);
/* The thread evaluations run on (created once, without a hook). */
lua_State *dbg_eval_thread(lua_State *L);

/* Stops at the frame at level base of L for reason (NULL: a step), runs
 * the prompt, then arms what it asked for. */
void dbg_stop_here(lua_State *L, const char *reason, int base);
/* The displays, evaluated in the selected frame. */
void dbg_show_displays(const dbg_stop *s);
/* Evaluates breakpoint b's condition at level 0 of L (an error counts as
 * true, and is printed). */
bool dbg_condition_true(lua_State *L, dbg_break *b);
/* "function 'f'", "method 'step'", "main chunk", "function <t.lua:12>"
 * for ar with "Sn" filled in. */
void dbg_function_name(lua_State *L, lua_Debug *ar, char *buf, size_t size);

/* Output helpers: to the console, flushed (errors: on stderr at the
 * terminal, with the rest on an attached client's socket). */
void dbg_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dbg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- where the debugger talks (debug_prompt.c) ----------------------------
 * The terminal by default (stdout, stderr, readline on stdin); while a
 * client is attached (debug_attach.c), its socket. The program's own output
 * (print in evaluated code included) keeps going where it went. */
typedef struct {
    FILE *out;                                /* everything the debugger writes */
    char *(*read_line)(const char *prompt);   /* malloc'd; NULL: the client is gone */
    void (*resumed)(bool continuing);         /* the program runs again */
    bool color;
} dbg_console;
/* NULL: back to the terminal. */
void dbg_set_console(const dbg_console *c);
/* An attached client is the console (quit then detaches). */
bool dbg_remote(void);
FILE *dbg_out(void);
bool dbg_color(void);
/* The prompt gave control back to the program (continuing: not a step). */
void dbg_resumed(bool continuing);
/* The prompt was left with detach (or the client went away): ends the
 * attached session (debug_attach.c). */
void dbg_attach_end(lua_State *L, bool client_there);
/* The id the next breakpoint gets. */
int dbg_next_break_id(void);

#endif
